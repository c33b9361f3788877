// The launch path on a real GPU, through the worker: correctness checks, timing, faults, hangs, ceilings.
#include <gtest/gtest.h>

#include <signal.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "runtime/device/ceilings.hpp"
#include "runtime/worker/ceilings.hpp"
#include "runtime/worker/client.hpp"
#include "runtime/worker/launch.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/tilelab_exe.hpp"

extern "C" const unsigned char tl_test_kernels_fatbin[];
extern "C" const unsigned long long tl_test_kernels_fatbin_size;

namespace tl {
namespace {

using namespace std::chrono_literals;

Blob test_image() { return Blob(tl_test_kernels_fatbin, tl_test_kernels_fatbin + tl_test_kernels_fatbin_size); }

WorkerOptions options(std::chrono::milliseconds timeout = 60000ms) {
  WorkerOptions o;
  o.executable = test::tilelab_exe();
  o.timeout = timeout;
  return o;
}

DeviceInfo device() { return *query_device(0); }

LaunchSpec axpy(unsigned n, int repeat = 0) {
  LaunchSpec s;
  s.label = "test_axpy n=" + std::to_string(n);
  s.image = test_image();
  s.kernel = "test_axpy";
  s.geometry.grid = {(n + 255) / 256, 1, 1};
  s.geometry.block = {256, 1, 1};
  s.buffers.push_back(BufferSpec::make("x", DType::f32, n));
  s.buffers.push_back(BufferSpec::make("y", DType::f32, n));
  s.buffers.push_back(BufferSpec::make("out", DType::f32, n, BufferRole::output));
  s.buffers[0].fill.seed = 1;
  s.buffers[1].fill.seed = 2;
  s.args = {KernelArg::of_buffer(0), KernelArg::of_buffer(1), KernelArg::of_buffer(2), KernelArg::of_f32(1.5f),
            KernelArg::of_u32(n)};
  s.timing.repeat = repeat;
  return s;
}

// Checks an axpy result against the float64 reference built from the regenerated inputs.
void expect_axpy_correct(const LaunchSpec& s, const LaunchResult& r) {
  Blob x = host_input(s.buffers[0]), y = host_input(s.buffers[1]);
  ASSERT_EQ(r.outputs.size(), 1u);
  Comparison c = check_output(
      r.outputs[0],
      [&](std::uint64_t i) { return 1.5 * load_element(x.data(), DType::f32, i) + load_element(y.data(), DType::f32, i); },
      tolerance_for(DType::f32));
  EXPECT_TRUE(c.passed) << c.reason;
  EXPECT_GE(c.checked, 1000u);
  EXPECT_LT(c.rel_error, 1e-6);
}

TEST(LaunchGpu, AxpyIsCorrectAndTimed) {
  TL_REQUIRE_GPU();
  WorkerClient w(options());
  LaunchSpec s = axpy((1u << 20) + 3, 10);  // not a multiple of the block
  auto r = run_launch(w, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_axpy_correct(s, *r);
  EXPECT_EQ(r->outputs[0].unwritten.count, 0u);
  EXPECT_EQ(r->times_ms.size(), 10u);
  EXPECT_EQ(r->time_ms.count, 10u);
  EXPECT_GT(r->time_ms.min, 0.0);
  EXPECT_LE(r->time_ms.min, r->time_ms.median);
  EXPECT_LE(r->time_ms.median, r->time_ms.max);
  EXPECT_LT(r->time_ms.median, 50.0);  // 12 MB of traffic
  EXPECT_TRUE(r->l2_flushed);
  EXPECT_GT(r->attributes.registers, 0);
  EXPECT_EQ(r->device_name, device().name);
}

TEST(LaunchGpu, UnwrittenOutputsAreCaught) {
  TL_REQUIRE_GPU();
  WorkerClient w(options());
  LaunchSpec s;
  s.image = test_image();
  s.kernel = "test_even_only";
  s.geometry.grid = {4, 1, 1};
  s.geometry.block = {256, 1, 1};
  s.buffers.push_back(BufferSpec::make("out", DType::f32, 1000, BufferRole::output));
  s.args = {KernelArg::of_buffer(0), KernelArg::of_u32(1000)};
  auto r = run_launch(w, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->outputs[0].unwritten.count, 500u);
  EXPECT_EQ(r->outputs[0].unwritten.first, 1u);
  Comparison c = check_output(r->outputs[0], [](std::uint64_t) { return 1.0; }, tolerance_for(DType::f32));
  EXPECT_FALSE(c.passed);
}

// The device fill and the host's regeneration agree bit for bit, for every dtype.
TEST(LaunchGpu, DeviceFillMatchesHostFill) {
  TL_REQUIRE_GPU();
  WorkerClient w(options());
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::e4m3, DType::e5m2, DType::f64, DType::i32, DType::u8}) {
    SCOPED_TRACE(dtype_name(t));
    for (Fill::Kind kind : {Fill::Kind::uniform, Fill::Kind::constant}) {
      LaunchSpec s;
      s.image = test_image();
      s.kernel = "test_copy_bytes";
      s.geometry.grid = {64, 1, 1};
      s.geometry.block = {256, 1, 1};
      BufferSpec in = BufferSpec::make("in", t, 10007);
      in.fill.kind = kind;
      in.fill.seed = 11;
      in.fill.lo = dtype_is_float(t) ? -3.0 : 0.0;
      in.fill.hi = dtype_is_float(t) ? 5.0 : 200.0;
      in.fill.value = 0.3;
      BufferSpec out = BufferSpec::make("out", DType::u8, in.bytes(), BufferRole::output);
      out.return_all = true;
      s.buffers = {in, out};
      s.args = {KernelArg::of_buffer(0), KernelArg::of_buffer(1), KernelArg::of_u64(in.bytes())};
      auto r = run_launch(w, s);
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_TRUE(r->outputs[0].data == host_input(in));
    }
  }
  // DeepSeek V3.2's FP8 cache rows (a u8 tensor): 15 rows and a partial one.
  LaunchSpec s;
  s.image = test_image();
  s.kernel = "test_copy_bytes";
  s.geometry.grid = {64, 1, 1};
  s.geometry.block = {256, 1, 1};
  BufferSpec in = BufferSpec::make("in", DType::u8, 15 * 656 + 100);
  in.fill = {.kind = Fill::Kind::kv_fp8, .lo = -1, .hi = 1, .seed = 5};
  BufferSpec out = BufferSpec::make("out", DType::u8, in.bytes(), BufferRole::output);
  out.return_all = true;
  s.buffers = {in, out};
  s.args = {KernelArg::of_buffer(0), KernelArg::of_buffer(1), KernelArg::of_u64(in.bytes())};
  auto r = run_launch(w, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->outputs[0].data == host_input(in));
  // A tiled uniform fill (gemm.dequant's permuted weights): 70 x 112 bytes in 16 x 64 tiles, padded to 80 x 128.
  in = BufferSpec::make("in", DType::u8, 80 * 128);
  in.fill = {.kind = Fill::Kind::uniform, .lo = 0, .hi = 256, .tiles = {70, 112, 16, 64}, .seed = 2};
  out = BufferSpec::make("out", DType::u8, in.bytes(), BufferRole::output);
  out.return_all = true;
  s.buffers = {in, out};
  s.args = {KernelArg::of_buffer(0), KernelArg::of_buffer(1), KernelArg::of_u64(in.bytes())};
  r = run_launch(w, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->outputs[0].data == host_input(in));
}

TEST(LaunchGpu, Bf16RoundTrip) {
  TL_REQUIRE_GPU();
  WorkerClient w(options());
  LaunchSpec s;
  s.image = test_image();
  s.kernel = "test_scale_bf16";
  unsigned n = 5000;
  s.geometry.grid = {(n + 127) / 128, 1, 1};
  s.geometry.block = {128, 1, 1};
  s.buffers = {BufferSpec::make("x", DType::bf16, n), BufferSpec::make("out", DType::bf16, n, BufferRole::output)};
  s.args = {KernelArg::of_buffer(0), KernelArg::of_buffer(1), KernelArg::of_u32(n)};
  auto r = run_launch(w, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  Blob x = host_input(s.buffers[0]);
  Comparison c = check_output(
      r->outputs[0], [&](std::uint64_t i) { return 2.0 * load_element(x.data(), DType::bf16, i); },
      tolerance_for(DType::bf16));
  EXPECT_TRUE(c.passed) << c.reason;
  EXPECT_EQ(c.max_abs_error, 0.0);  // doubling is exact
}

TEST(LaunchGpu, OutOfBoundsIsAFaultAndTheNextRunWorks) {
  TL_REQUIRE_GPU();
  WorkerClient w(options());
  LaunchSpec s;
  s.image = test_image();
  s.kernel = "test_oob";
  s.geometry.block = {32, 1, 1};
  s.buffers = {BufferSpec::make("p", DType::f32, 32, BufferRole::output)};
  s.args = {KernelArg::of_buffer(0)};
  auto r = run_launch(w, s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::fault) << r.status().message();
  EXPECT_NE(r.status().message().find("illegal"), std::string::npos) << r.status().message();
  EXPECT_TRUE(w.last_error().worker_lost);
  EXPECT_EQ(w.last_error().exit_status, 3);
  LaunchSpec ok = axpy(1000);
  auto next = run_launch(w, ok);
  ASSERT_TRUE(next.ok()) << next.status().message();
  expect_axpy_correct(ok, *next);
  EXPECT_EQ(w.starts(), 2);
}

TEST(LaunchGpu, TrapIsAFault) {
  TL_REQUIRE_GPU();
  WorkerClient w(options());
  LaunchSpec s;
  s.image = test_image();
  s.kernel = "test_trap";
  s.geometry.block = {32, 1, 1};
  s.buffers = {BufferSpec::make("p", DType::f32, 32, BufferRole::output)};
  s.args = {KernelArg::of_buffer(0)};
  auto r = run_launch(w, s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::fault) << r.status().message();
  EXPECT_TRUE(run_launch(w, axpy(1000)).ok());
}

TEST(LaunchGpu, SpinningKernelTimesOutAndTheNextRunWorks) {
  TL_REQUIRE_GPU();
  WorkerClient w(options());
  LaunchSpec s;
  s.image = test_image();
  s.kernel = "test_spin";
  s.buffers = {BufferSpec::make("flag", DType::i32, 1)};
  s.buffers[0].fill.kind = Fill::Kind::zeros;
  s.args = {KernelArg::of_buffer(0)};
  auto r = run_launch(w, s, 3000ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::timeout) << r.status().message();
  EXPECT_EQ(w.last_error().signal, SIGKILL);
  LaunchSpec ok = axpy(1000);
  auto next = run_launch(w, ok);
  ASSERT_TRUE(next.ok()) << next.status().message();
  expect_axpy_correct(ok, *next);
}

TEST(LaunchGpu, MismatchedArgumentsAreRefusedBeforeRunning) {
  TL_REQUIRE_GPU();
  WorkerClient w(options());
  // The worker probes only the parameters a launch passes (a probe past the last one is an API error under
  // compute-sanitizer); a launch passing fewer than the kernel takes is refused on the host, from the PTX
  // (to_launch_spec; test_bench's Bench.LaunchArgsMustMatchThePtxParameters).
  LaunchSpec s = axpy(1000);
  s.args[4] = KernelArg::of_u64(1000);  // 8 bytes where the kernel takes 4
  auto r = run_launch(w, s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::invalid_argument) << r.status().message();
  EXPECT_FALSE(w.last_error().worker_lost);
  EXPECT_TRUE(run_launch(w, axpy(1000)).ok());
}

TEST(LaunchGpu, UnknownKernelNamesTheKnownOnes) {
  TL_REQUIRE_GPU();
  WorkerClient w(options());
  LaunchSpec s = axpy(1000);
  s.kernel = "test_nope";
  auto r = run_launch(w, s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::not_found);
  EXPECT_NE(r.status().message().find("test_axpy"), std::string::npos) << r.status().message();
}

TEST(LaunchGpu, LargeDynamicSharedMemory) {
  TL_REQUIRE_GPU();
  WorkerClient w(options());
  unsigned words = 100 * 1024 / 4;
  LaunchSpec s;
  s.image = test_image();
  s.kernel = "test_big_smem";
  s.geometry.block = {1024, 1, 1};
  s.geometry.dynamic_smem = words * 4;
  s.buffers = {BufferSpec::make("out", DType::f32, words, BufferRole::output)};
  s.args = {KernelArg::of_buffer(0), KernelArg::of_u32(words)};
  auto r = run_launch(w, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  Comparison c = check_output(r->outputs[0], [&](std::uint64_t i) { return double(words - 1 - i); }, {0, 0});
  EXPECT_TRUE(c.passed) << c.reason;
  // Over the device's limit: refused with the numbers, not launched.
  s.geometry.dynamic_smem = static_cast<std::uint32_t>(device().smem_per_block_optin) + 1024;
  auto big = run_launch(w, s);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), ErrorCode::unsupported) << big.status().message();
}

TEST(LaunchGpu, ClusterLaunch) {
  TL_REQUIRE_GPU();
  if (device().cc_major < 9) GTEST_SKIP() << "clusters need sm_90";
  WorkerClient w(options());
  LaunchSpec s;
  s.image = test_image();
  s.kernel = "test_cluster_rank";
  s.geometry.grid = {16, 1, 1};
  s.geometry.block = {32, 1, 1};
  s.geometry.cluster = {4, 1, 1};
  s.buffers = {BufferSpec::make("rank", DType::u32, 16, BufferRole::output)};
  s.args = {KernelArg::of_buffer(0)};
  auto r = run_launch(w, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  Comparison c = check_output(r->outputs[0], [](std::uint64_t i) { return double(i % 4); }, {0, 0});
  EXPECT_TRUE(c.passed) << c.reason;
}

TEST(LaunchGpu, TensorMapParameter) {
  TL_REQUIRE_GPU();
  if (device().cc_major < 9) GTEST_SKIP() << "TMA needs sm_90";
  WorkerClient w(options());
  LaunchSpec s;
  s.image = test_image();
  s.kernel = "test_tensor_map_bytes";
  s.geometry.block = {32, 1, 1};
  s.buffers = {BufferSpec::make("a", DType::f16, 128 * 128), BufferSpec::make("desc", DType::u32, 32, BufferRole::output)};
  TensorMapSpec t;
  t.buffer = 0;
  t.dims = {128, 128};
  t.strides_bytes = {128 * 2};
  t.box = {64, 64};
  t.swizzle_bytes = 128;
  s.args = {KernelArg::of_tensor_map(t), KernelArg::of_buffer(1)};
  auto r = run_launch(w, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  int nonzero = 0;
  for (std::uint64_t i = 0; i < 32; ++i) nonzero += load_element(r->outputs[0].samples.data(), DType::u32, i) != 0;
  EXPECT_GT(nonzero, 2);
  // A box the driver refuses (over 256 per dimension) is an error with advice, not a crash.
  s.args[0].tensor_map.box = {512, 64};
  auto bad = run_launch(w, s);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::invalid_argument) << bad.status().message();
}

TEST(LaunchGpu, SweepStreamsEachItem) {
  TL_REQUIRE_GPU();
  WorkerClient w(options());
  std::vector<LaunchSpec> specs = {axpy(1000, 3), axpy(2000, 3), axpy(3000, 3)};
  specs[1].kernel = "test_nope";
  std::vector<std::size_t> order;
  std::vector<bool> ok;
  Status s = run_sweep(w, specs, [&](std::size_t i, Result<LaunchResult> r) {
    order.push_back(i);
    ok.push_back(r.ok());
    if (r) expect_axpy_correct(specs[i], *r);
  });
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(ok, (std::vector<bool>{true, false, true}));
}

TEST(CeilingsGpu, Sane) {
  TL_REQUIRE_GPU();
  DeviceInfo d = device();
  WorkerClient w(options());
  std::string dir = (std::filesystem::temp_directory_path() / ("tilelab-ceilings-test-" + std::to_string(getpid()))).string();
  std::vector<std::string> streamed;
  auto c = device_ceilings(w, d, dir, true, [&](const std::string& name, double, const std::string&) {
    streamed.push_back(name);
  });
  ASSERT_TRUE(c.ok()) << c.status().message();
  std::printf("ceilings: %s\n", nlohmann::json(*c).dump(2).c_str());
  EXPECT_GE(streamed.size(), 5u);
  double dram = d.theoretical_dram_bytes_per_s();
  EXPECT_GT(c->hbm_bytes_per_s, 0.4 * dram);
  EXPECT_LT(c->hbm_bytes_per_s, 1.05 * dram);
  int lanes = (d.cc_major == 8 && d.cc_minor == 0) ? 64 : 128;  // FP32 lanes per SM
  double fp32_peak = 2.0 * lanes * d.sm_count * d.clock_khz * 1e3;
  EXPECT_GT(c->fp32_flops, 0.4 * fp32_peak);
  EXPECT_LT(c->fp32_flops, 1.1 * fp32_peak);
  EXPECT_GT(c->l2_bytes_per_s, c->hbm_bytes_per_s);
  EXPECT_GT(c->smem_bytes_per_s, c->l2_bytes_per_s);
  EXPECT_GT(c->bf16_tc_flops, 4 * c->fp32_flops);
  EXPECT_GT(c->fp16_tc_flops, 4 * c->fp32_flops);
  if (d.cc_major * 10 + d.cc_minor >= 89) {
    EXPECT_GT(c->fp8_tc_flops, c->bf16_tc_flops);
  }
  if (d.cc_major == 9 && d.cc_minor == 0) {  // wgmma: each rate comes with the SM clock it ran at
    EXPECT_GT(c->tc_clock_mhz, 500);
    EXPECT_LT(c->tc_clock_mhz, 1.05 * d.clock_khz / 1e3);
    EXPECT_GT(c->tc_sustained_clock_mhz, 500);
    EXPECT_LE(c->tc_sustained_clock_mhz, c->tc_clock_mhz * 1.02);
    EXPECT_GT(c->bf16_tc_sustained_flops, 0.5 * c->bf16_tc_flops);
    EXPECT_LE(c->bf16_tc_sustained_flops, c->bf16_tc_flops * 1.02);
    // Counted from the benchmark's cycles: at most the 4096 dense bf16 FLOP an sm_90 SM issues per clock.
    for (const char* bench : {"wgmma_bf16", "wgmma_bf16_sustained"}) {
      const double per_clock = c->details[bench].value("flop_per_sm_clock", 0.0);
      EXPECT_GT(per_clock, 2048) << bench;
      EXPECT_LE(per_clock, 4096 * 1.001) << bench;
    }
  }
  auto cached = load_ceilings(ceilings_cache_path(dir, d));
  ASSERT_TRUE(cached.ok()) << cached.status().message();
  EXPECT_EQ(cached->hbm_bytes_per_s, c->hbm_bytes_per_s);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tl
