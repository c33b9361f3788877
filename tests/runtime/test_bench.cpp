// CPU checks of the bench bridge: ArgSpec -> LaunchSpec mapping, roofline choice, .npy round trip, no-GPU runs.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "attention/attn_bwd_wgmma_plan.hpp"
#include "library/library.hpp"
#include "runtime/core/npy.hpp"
#include "runtime/measure/bench.hpp"
#include "runtime/worker/client.hpp"
#include "runtime/worker/cudnn_library.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/tilelab_exe.hpp"

namespace tl {
namespace {

CompiledKernel fake_compiled() {
  CompiledKernel k;
  k.lowered_name = "_Z4fakev";
  k.cubin = {'\x7f', 'E', 'L', 'F'};
  return k;
}

TEST(Bench, LaunchSpecMirrorsEveryLibraryKernelsArgs) {
  for (const KernelSpec* spec : library_registry().list(true)) {
    SCOPED_TRACE(spec->name);
    auto inst = instantiate(*spec, {}, {}, limits_for_arch("sm_90a"));
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    TimingOptions t;
    t.repeat = 7;
    auto ls = to_launch_spec(*inst, fake_compiled(), t);
    ASSERT_TRUE(ls.ok()) << ls.status().message();
    EXPECT_EQ(ls->kernel, "_Z4fakev");
    EXPECT_EQ(ls->image.size(), 4u);
    EXPECT_EQ(ls->timing.repeat, 7);
    EXPECT_EQ(ls->geometry.grid.volume(), inst->launch.grid.volume());
    EXPECT_EQ(ls->geometry.block.x, inst->launch.block.x);
    EXPECT_EQ(ls->geometry.dynamic_smem, inst->launch.dynamic_smem);
    // Every tensor has a buffer; the kernel parameters are the args that are parameters, in order.
    std::vector<const ArgSpec*> params;
    for (const ArgSpec& a : inst->args)
      if (a.kind != ArgSpec::Kind::tensor || a.is_param) params.push_back(&a);
    ASSERT_EQ(ls->args.size(), params.size());
    auto buffer_named = [&](const std::string& name) -> const BufferSpec* {
      for (const auto& b : ls->buffers)
        if (b.name == name) return &b;
      return nullptr;
    };
    std::size_t tensors = 0;
    for (const ArgSpec& a : inst->args) {
      if (a.kind != ArgSpec::Kind::tensor) continue;
      ++tensors;
      const BufferSpec* b = buffer_named(a.name);
      ASSERT_NE(b, nullptr) << a.name;
      EXPECT_EQ(b->dtype, a.dtype);
      EXPECT_EQ(b->count, static_cast<std::uint64_t>(a.numel()));
      EXPECT_EQ(b->role == BufferRole::input, a.role == ArgRole::in);
      EXPECT_EQ(b->role == BufferRole::output, a.role == ArgRole::out);
      EXPECT_EQ(b->fill.kind, a.fill.kind);
      EXPECT_EQ(b->fill.seed, a.fill.seed);
      EXPECT_EQ(b->fill.lo, a.fill.lo);
      EXPECT_EQ(b->fill.value, a.fill.value);
      // The host rebuild of an input is the very bytes the worker's fill writes.
      if (a.role == ArgRole::in && a.numel() < (1 << 22)) {
        HostTensor h = make_host_tensor(a);
        Blob w = host_input(*b);
        ASSERT_EQ(h.data.size(), w.size());
        EXPECT_EQ(std::memcmp(h.data.data(), w.data(), w.size()), 0);
      }
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      const ArgSpec& a = *params[i];
      const KernelArg& k = ls->args[i];
      if (a.kind == ArgSpec::Kind::tensor) {
        ASSERT_EQ(k.kind, KernelArg::Kind::buffer);
        EXPECT_EQ(ls->buffers.at(static_cast<std::size_t>(k.buffer)).name, a.name);
      } else if (a.kind == ArgSpec::Kind::tensor_map) {
        ASSERT_EQ(k.kind, KernelArg::Kind::tensor_map);
        const BufferSpec& b = ls->buffers.at(static_cast<std::size_t>(k.tensor_map.buffer));
        EXPECT_EQ(b.name, a.tensor_of);
        EXPECT_EQ(k.tensor_map.box.size(), a.box.size());
        EXPECT_EQ(k.tensor_map.dims.size(), k.tensor_map.strides_bytes.size() + 1);
        std::uint64_t elems = 1;
        for (auto d : k.tensor_map.dims) elems *= d;
        EXPECT_EQ(elems, b.count);  // dimensions cover the whole tensor
        EXPECT_EQ(k.tensor_map.swizzle_bytes, a.swizzle_bytes);
      } else {
        switch (a.dtype) {
          case DType::f32: EXPECT_EQ(k.kind, KernelArg::Kind::f32); EXPECT_EQ(k.f, static_cast<float>(a.value)); break;
          case DType::i32: EXPECT_EQ(k.kind, KernelArg::Kind::i32); EXPECT_EQ(k.i, static_cast<std::int64_t>(a.value)); break;
          case DType::i64: EXPECT_EQ(k.kind, KernelArg::Kind::i64); EXPECT_EQ(k.i, static_cast<std::int64_t>(a.value)); break;
          // A pointer-sized value (attn.fwd.wgmma's null `sinks` pointer without sinks).
          case DType::u64: EXPECT_EQ(k.kind, KernelArg::Kind::u64); EXPECT_EQ(static_cast<std::uint64_t>(k.i), static_cast<std::uint64_t>(a.value)); break;
          default: ADD_FAILURE() << "scalar of type " << dtype_name(a.dtype);
        }
      }
    }
    EXPECT_EQ(ls->buffers.size(), tensors);
  }
}

TEST(Bench, PtxImageIsNulTerminated) {
  auto inst = instantiate(*library_registry().find("copy").value(), {}, {}, limits_for_arch("sm_80"));
  ASSERT_TRUE(inst.ok());
  CompiledKernel k;
  k.lowered_name = "x";
  k.ptx = ".version 8.0";
  auto ls = to_launch_spec(*inst, k);
  ASSERT_TRUE(ls.ok());
  ASSERT_EQ(ls->image.size(), k.ptx.size() + 1);
  EXPECT_EQ(ls->image.back(), 0);
}

// The kernel's PTX parameter list is checked against the launch's arguments on the host, before the worker.
TEST(Bench, LaunchArgsMustMatchThePtxParameters) {
  KernelInstance inst;
  inst.args = {ArgSpec::tensor("x", DType::f32, {16}, ArgRole::in), ArgSpec::scalar("n", DType::i32, 16)};
  CompiledKernel k = fake_compiled();
  k.ptx = ".visible .entry _Z4fakev(\n\t.param .u64 .ptr .align 1 _Z4fakev_param_0,\n\t.param .u32 _Z4fakev_param_1\n)\n{\n}\n";
  EXPECT_TRUE(to_launch_spec(inst, k).ok());
  inst.args.push_back(ArgSpec::scalar("alpha", DType::f32, 1.0));
  auto more = to_launch_spec(inst, k);
  ASSERT_FALSE(more.ok());
  EXPECT_NE(more.status().message().find("takes 2 parameters, the launch passes 3"), std::string::npos)
      << more.status().message();
  inst.args = {ArgSpec::tensor("x", DType::f32, {16}, ArgRole::in), ArgSpec::scalar("n", DType::i64, 16)};
  auto wide = to_launch_spec(inst, k);
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("parameter 1 is 4 bytes, but the launch passes 8"), std::string::npos)
      << wide.status().message();
}

TEST(Bench, HalfScalarIsRefused) {
  KernelInstance inst;
  inst.args = {ArgSpec::scalar("alpha", DType::f16, 1.0)};
  auto ls = to_launch_spec(inst, fake_compiled());
  ASSERT_FALSE(ls.ok());
  EXPECT_EQ(ls.status().code(), ErrorCode::unsupported);
  EXPECT_NE(ls.status().message().find("alpha"), std::string::npos);
}

Ceilings h100_like() {
  Ceilings c;
  c.hbm_bytes_per_s = 3.0e12;
  c.fp32_flops = 50e12;
  c.bf16_tc_flops = 700e12;
  c.fp16_tc_flops = 710e12;
  return c;
}

TEST(Bench, RooflinePicksTheBindingCeiling) {
  const Ceilings c = h100_like();
  // A copy of 1 GB in 0.5 ms moves 2 TB/s: memory-bound, 2/3 of HBM.
  Efficiency copy = roofline_efficiency(false, DType::f32, 0, 1e9, 0.5e-3, c);
  EXPECT_EQ(copy.bound, "memory");
  EXPECT_EQ(copy.ceiling, "hbm_copy");
  EXPECT_NEAR(copy.value, 2.0 / 3.0, 1e-12);
  // A 4096^3 bf16 GEMM: intensity ~1365 flop/byte, above the tensor ridge (~233): compute-bound on bf16 tensor.
  const double n = 4096, flops = 2 * n * n * n, bytes = 2 * n * n * 2 + n * n * 4;
  Efficiency g = roofline_efficiency(true, DType::bf16, flops, bytes, flops / 350e12, c);
  EXPECT_EQ(g.bound, "compute");
  EXPECT_EQ(g.ceiling, "bf16_tensor");
  EXPECT_NEAR(g.value, 0.5, 1e-9);
  // The same GEMM on f32 inputs compares with the FP32 FMA rate; on f16 with the f16 tensor rate.
  EXPECT_EQ(roofline_efficiency(true, DType::f32, flops, bytes, 1, c).ceiling, "fp32_fma");
  EXPECT_EQ(roofline_efficiency(true, DType::f16, flops, bytes, 1, c).ceiling, "fp16_tensor");
  // A kernel whose math is not on the tensor cores (gemm.simt, an elementwise kernel) is held to FP32 on 16-bit inputs.
  EXPECT_EQ(roofline_efficiency(false, DType::bf16, flops, bytes, 1, c).ceiling, "fp32_fma");
  // A skinny GEMM (M=N=16, K huge): intensity ~8 flop/byte, below the ridge: memory-bound.
  Efficiency s = roofline_efficiency(true, DType::bf16, 2.0 * 16 * 16 * 1e6, 2.0 * 2 * 16 * 1e6, 1e-3, c);
  EXPECT_EQ(s.bound, "memory");
  // No ceilings measured: unknown, not zero efficiency against a made-up number.
  EXPECT_EQ(roofline_efficiency(false, DType::f32, 0, 1e9, 1e-3, Ceilings{}).bound, "");
}

TEST(Bench, FailedRecordCarriesTheReason) {
  RunRecord r = failed_record("gemm.simt", {{"M", "7"}}, {{"block_M", "16"}},
                              make_error(ErrorCode::unsupported, "16 threads is not a multiple of 32"));
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.failure_text(), "unsupported: 16 threads is not a multiple of 32");
  nlohmann::json j = r;
  EXPECT_EQ(j["failure"]["code"], "unsupported");
  EXPECT_EQ(j["passed"], false);
}

TEST(Bench, RunWithoutGpuIsARecordNotAnException) {
  if (test::no_gpu_reason().empty()) GTEST_SKIP() << "this machine has a GPU; the no-device path is not reachable";
  WorkerOptions o;
  o.executable = test::tilelab_exe();
  WorkerClient worker(o);
  PreparedKernel k;
  auto inst = instantiate(*library_registry().find("copy").value(), {{"n", "1000"}}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(inst.ok());
  k.instance = *inst;
  k.compiled = fake_compiled();
  RunRecord r = run_instance(worker, k);
  ASSERT_TRUE(r.failure.has_value());
  EXPECT_EQ(r.failure->code, ErrorCode::no_device) << r.failure->message;
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.kernel, "copy");
  EXPECT_EQ(r.problem.at("n"), "1000");
}

// [SECTION] --vs cublas

// The cuBLAS call reads A, B and writes a C of the kernel's problem: names, shapes and types must line up with
// the tensors of the launch, whose buffers the worker passes to cublasGemmEx.
TEST(Baseline, EachGemmNamesItsOwnBuffersAndLayout) {
  struct Case {
    const char* kernel;
    const char* layout;
    DType in, out;
  };
  for (const Case& c : {Case{"gemm.simt", "nn", DType::f16, DType::f32}, Case{"gemm.mma", "nt", DType::f16, DType::f16},
                        Case{"gemm.wgmma", "nt", DType::bf16, DType::bf16}}) {
    SCOPED_TRACE(c.kernel);
    auto inst = instantiate(*library_registry().find(c.kernel).value(),
                            {{"M", "96"}, {"N", "80"}, {"K", "64"}, {"dtype", dtype_name(c.in)}}, {},
                            limits_for_arch("sm_90a"));
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    auto b = baseline_for(*inst, "cublas");
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(b->kind, "cublas_gemm");
    EXPECT_EQ(b->layout, c.layout);
    EXPECT_EQ(b->M, 96);
    EXPECT_EQ(b->N, 80);
    EXPECT_EQ(b->K, 64);
    EXPECT_EQ(b->in, c.in);
    EXPECT_EQ(b->out, c.out);
    auto ls = to_launch_spec(*inst, fake_compiled());
    ASSERT_TRUE(ls.ok());
    auto count_of = [&](const std::string& name) -> std::uint64_t {
      for (const auto& buf : ls->buffers)
        if (buf.name == name) return buf.count;
      return 0;
    };
    EXPECT_EQ(count_of(b->a), 96u * 64u);
    EXPECT_EQ(count_of(b->b), 80u * 64u);
    EXPECT_EQ(count_of(b->c), 96u * 80u);
  }
}

// gemm.fp8's baseline is cuBLASLt's FP8 matmul over A, B, C and the scales of its scaling, each as the launch has it.
TEST(Baseline, Fp8NamesItsScalesAsTheLaunchHasThem) {
  for (const char* scaling : {"tensor", "row", "block"}) {
    SCOPED_TRACE(scaling);
    auto inst = instantiate(*library_registry().find("gemm.fp8").value(),
                            {{"M", "200"}, {"N", "300"}, {"K", "272"}, {"scaling", scaling}, {"out_dtype", "f32"}}, {},
                            limits_for_arch("sm_90a"));
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    auto b = baseline_for(*inst, "cublas");
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(b->kind, "cublaslt_fp8");
    EXPECT_EQ(baseline_library(b->kind), "cublas");
    EXPECT_EQ(b->layout, "nt");
    EXPECT_EQ(b->in, DType::e4m3);
    EXPECT_EQ(b->out, DType::f32);
    EXPECT_EQ(b->scaling, scaling);
    auto ls = to_launch_spec(*inst, fake_compiled());
    ASSERT_TRUE(ls.ok());
    std::map<std::string, std::uint64_t> count;
    for (const auto& buf : ls->buffers) count[buf.name] = buf.count;
    // K = 272: three 128-wide k blocks, the last partial; N = 300: three 128-row blocks of B.
    const std::uint64_t sa = std::string(scaling) == "block" ? 200u * 3 : std::string(scaling) == "row" ? 200u : 1u;
    const std::uint64_t sb = std::string(scaling) == "block" ? 3u * 3 : std::string(scaling) == "row" ? 300u : 1u;
    EXPECT_EQ(count[b->scale_a], sa);
    EXPECT_EQ(count[b->scale_b], sb);
    EXPECT_EQ(count[b->c], 200u * 300u);
    ls->baseline = *b;
    const auto jb = make_launch_request(*ls).header["launch"]["baseline"];
    EXPECT_EQ(jb["kind"], "cublaslt_fp8");
    EXPECT_EQ(jb["scaling"], scaling);
    EXPECT_EQ(jb["scale_a"], "scale_A");
  }
}

// cuBLASLt accumulates as the kernel's config does: promoting, or with FAST_ACCUM where fast_accum=true, and the
// launch request tells the worker which.
TEST(Baseline, Fp8FollowsTheKernelsAccumulation) {
  for (const bool fast : {false, true}) {
    SCOPED_TRACE(fast);
    auto inst = instantiate(*library_registry().find("gemm.fp8").value(), {{"scaling", "row"}},
                            {{"fast_accum", fast ? "true" : "false"}}, limits_for_arch("sm_90a"));
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    auto b = baseline_for(*inst, "cublas");
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(b->fast_accum, fast);
    auto ls = to_launch_spec(*inst, fake_compiled());
    ASSERT_TRUE(ls.ok());
    ls->baseline = *b;
    const auto request = make_launch_request(*ls);
    EXPECT_EQ(request.header["launch"]["baseline"]["fast_accum"], fast);
  }
}

TEST(Baseline, KernelWithoutOneIsRefusedByName) {
  auto inst = instantiate(*library_registry().find("copy").value(), {{"n", "1000"}}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(inst.ok());
  auto b = baseline_for(*inst, "cublas");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::unsupported);
  EXPECT_NE(b.status().message().find("copy has no cuBLAS equivalent"), std::string::npos) << b.status().message();
  auto gemm = instantiate(*library_registry().find("gemm.simt").value(), {}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(gemm.ok());
  EXPECT_EQ(baseline_for(*gemm, "cutlass").status().code(), ErrorCode::invalid_argument);
}

// The listing's "baseline" is the one --vs accepts at the default problem, for every kernel: the refusal's pointer
// to `tilelab kernels` then names exactly the kernels that have one.
TEST(Baseline, ListingNamesTheBaselineVsAccepts) {
  int with = 0;
  for (const KernelSpec* spec : library_registry().list(false)) {
    const std::string listed = spec_baseline_library(*spec);
    nlohmann::json j = *spec;
    EXPECT_EQ(j["baseline"].is_null(), listed.empty()) << spec->name;
    auto inst = instantiate(*spec, {}, {}, limits_for_arch("sm_90a"));
    if (!inst.ok()) continue;  // a kernel whose defaults need another arch
    for (const char* vs : {"cublas", "cudnn"}) {
      const auto b = baseline_for(*inst, vs);
      EXPECT_EQ(b.ok() || b.status().code() != ErrorCode::unsupported, listed == vs) << spec->name << " --vs " << vs;
    }
    with += !listed.empty();
  }
  EXPECT_GE(with, 8);  // gemm.simt/mma/wgmma/fp8, attn.fwd/bwd mma/wgmma
  EXPECT_EQ(spec_baseline_library(*library_registry().find("gemm.wgmma").value()), "cublas");
  EXPECT_EQ(spec_baseline_library(*library_registry().find("attn.bwd.wgmma").value()), "cudnn");
  EXPECT_EQ(spec_baseline_library(*library_registry().find("copy").value()), "");
}

// The record's JSON carries the baseline with rates derived from the spec's FLOPs and the baseline's median.
TEST(Baseline, RecordJsonHasTheBaselineRow) {
  RunRecord r;
  r.kernel = "gemm.wgmma";
  r.flops = 4e9;
  r.time_ms.count = 3;
  r.time_ms.median = 2.0;
  BaselineResult b;
  b.name = "cublas";
  b.time_ms.count = 3;
  b.time_ms.median = 4.0;
  b.rel_vs_kernel = 1e-3;
  r.baseline = b;
  nlohmann::json j = r;
  ASSERT_TRUE(j.contains("baseline"));
  EXPECT_EQ(j["baseline"]["name"], "cublas");
  EXPECT_DOUBLE_EQ(j["baseline"]["tflops"].get<double>(), 1.0);   // 4e9 flops in 4 ms
  EXPECT_DOUBLE_EQ(j["baseline"]["speedup"].get<double>(), 2.0);  // the kernel takes half as long
  EXPECT_DOUBLE_EQ(j["baseline"]["rel_vs_kernel"].get<double>(), 1e-3);
  EXPECT_EQ(j["baseline"]["time_ms"]["median"].get<double>(), 4.0);
  EXPECT_FALSE(j["baseline"].contains("error"));
  r.baseline = std::nullopt;
  EXPECT_FALSE(nlohmann::json(r).contains("baseline"));
}

// The worker gets the baseline through the launch request and sends its result back in the reply.
TEST(Baseline, TravelsInTheLaunchRequestAndReply) {
  auto inst = instantiate(*library_registry().find("gemm.mma").value(), {{"M", "128"}, {"N", "64"}, {"K", "32"}}, {},
                          limits_for_arch("sm_90a"));
  ASSERT_TRUE(inst.ok());
  auto ls = to_launch_spec(*inst, fake_compiled());
  ASSERT_TRUE(ls.ok());
  ls->baseline = baseline_for(*inst, "cublas").value();
  Message req = make_launch_request(*ls);
  const auto& jb = req.header["launch"]["baseline"];
  EXPECT_EQ(jb["layout"], "nt");
  EXPECT_EQ(jb["M"], 128);
  EXPECT_EQ(jb["N"], 64);
  EXPECT_EQ(jb["K"], 32);
  EXPECT_EQ(jb["in"], "bf16");
  EXPECT_EQ(jb["c"], "C");

  Message reply = make_reply(0);
  reply.header["result"] = {{"outputs", nlohmann::json::array()},
                            {"baseline", {{"name", "cublas"}, {"rel_vs_kernel", 0.5}, {"error", "no libcublas"}}}};
  auto parsed = parse_launch_reply(reply);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_TRUE(parsed->baseline.has_value());
  EXPECT_EQ(parsed->baseline->error, "no libcublas");
  EXPECT_DOUBLE_EQ(parsed->baseline->rel_vs_kernel, 0.5);
  // A NaN in either output makes the difference infinite, which JSON writes as null: read back as infinity.
  reply.header["result"]["baseline"]["rel_vs_kernel"] =
      nlohmann::json::parse(nlohmann::json(std::numeric_limits<double>::infinity()).dump());
  auto inf = parse_launch_reply(reply);
  ASSERT_TRUE(inf.ok()) << inf.status().message();
  EXPECT_EQ(inf->baseline->rel_vs_kernel, std::numeric_limits<double>::infinity());
  reply.header["result"].erase("baseline");
  EXPECT_FALSE(parse_launch_reply(reply).value().baseline.has_value());
}

// [SECTION] --vs cudnn

}  // namespace
namespace detail {
Status parse_launch(const nlohmann::json& j, const Message& m, LaunchSpec& s);  // the worker's side (launch.cpp)
}
namespace {

SdpaBaseline small_sdpa() {
  return SdpaBaseline{.batch = 2, .heads = 6, .heads_kv = 3, .seq_q = 5, .seq_k = 7, .dim = 8, .dim_v = 8,
                      .causal = true, .scale = 0.25};
}

// cuDNN is told our [batch, seq, heads, dim] buffers as (batch, heads, seq, dim): every element (b, h, s, d) must land
// on ((b·seq + s)·heads + h)·dim + d, so the strides cover each buffer exactly once.
TEST(CudnnBaseline, TensorsAddressOurBufferLayout) {
  SdpaBaseline p = small_sdpa();
  p.dim_v = 16;  // d_qk != d_v: V, O, dO, dV are V-wide
  EXPECT_EQ(sdpa_tensors(p).size(), 5u);
  p.backward = true;
  const std::vector<SdpaTensor> t = sdpa_tensors(p);
  ASSERT_EQ(t.size(), 9u);
  const char* names[] = {"Q", "K", "V", "O", "Stats", "dO", "dQ", "dK", "dV"};
  for (std::size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i].name, names[i]);
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i == 4) continue;
    SCOPED_TRACE(t[i].name);
    const std::vector<std::int64_t>& n = t[i].dims;
    const bool kv = t[i].name.find('K') != std::string::npos || t[i].name.find('V') != std::string::npos;
    const bool v_wide = t[i].name == "V" || t[i].name == "O" || t[i].name == "dO" || t[i].name == "dV";
    const std::int64_t heads = kv ? p.heads_kv : p.heads, seq = kv ? p.seq_k : p.seq_q, dim = v_wide ? p.dim_v : p.dim;
    EXPECT_EQ(n, (std::vector<std::int64_t>{p.batch, heads, seq, dim}));
    std::vector<int> hits(static_cast<std::size_t>(n[0] * n[1] * n[2] * n[3]), 0);
    for (std::int64_t b = 0; b < n[0]; ++b)
      for (std::int64_t h = 0; h < n[1]; ++h)
        for (std::int64_t s = 0; s < n[2]; ++s)
          for (std::int64_t d = 0; d < n[3]; ++d) {
            const std::int64_t at = b * t[i].strides[0] + h * t[i].strides[1] + s * t[i].strides[2] + d * t[i].strides[3];
            ASSERT_EQ(at, ((b * seq + s) * heads + h) * dim + d);
            ++hits[static_cast<std::size_t>(at)];
          }
    for (int h : hits) ASSERT_EQ(h, 1);
  }
  // Stats is the LSE our kernels write: [batch, heads, seq_q], packed.
  EXPECT_EQ(t[4].dims, (std::vector<std::int64_t>{2, 6, 5, 1}));
  EXPECT_EQ(t[4].strides, (std::vector<std::int64_t>{30, 5, 1, 1}));
}

// Varlen sequences reach cuDNN as ragged offsets over our packed [rows, heads, dim] buffers (or a padded cache):
// element (b, h, s, d) of sequence b, s below its length, must land on ((start_b + s)·heads + h)·dim + d, each
// element of the buffer once; the backward's Stats on our LSE [heads, rows] at h·rows + start_b + s.
TEST(CudnnBaseline, VarlenOffsetsAddressOurRows) {
  SdpaBaseline p = small_sdpa();
  p.batch = 3, p.seq_q = 5, p.seq_k = 6, p.dim_v = 16, p.backward = true, p.causal = false;
  p.len_q = {3, 5, 2}, p.start_q = {0, 3, 8};
  p.len_k = {4, 0, 6}, p.start_k = {0, 4, 4};
  ASSERT_EQ(sdpa_refusal(p), "");
  const std::vector<SdpaTensor> t = sdpa_tensors(p);
  const SdpaVarlen v = sdpa_varlen(p);
  EXPECT_EQ(v.seq_len_q, (std::vector<std::int32_t>{3, 5, 2}));
  EXPECT_EQ(v.seq_len_kv, (std::vector<std::int32_t>{4, 0, 6}));
  ASSERT_EQ(v.ragged.size(), t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    SCOPED_TRACE(t[i].name);
    const bool kv = t[i].name.find('K') != std::string::npos || t[i].name.find('V') != std::string::npos;
    const std::vector<std::int64_t>& len = kv ? p.len_k : p.len_q;
    const std::vector<std::int64_t>& start = kv ? p.start_k : p.start_q;
    const std::int64_t rows = start.back() + len.back(), heads = t[i].dims[1], width = t[i].dims[3];
    ASSERT_EQ(v.ragged[i].size(), 4u);
    EXPECT_EQ(v.ragged[i].back(), t[i].name == "Stats" ? rows : rows * heads * width);
    std::vector<int> hits(static_cast<std::size_t>(rows * heads * width), 0);
    for (std::int64_t b = 0; b < p.batch; ++b)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t s = 0; s < len[static_cast<std::size_t>(b)]; ++s)
          for (std::int64_t d = 0; d < width; ++d) {
            const std::int64_t at = v.ragged[i][static_cast<std::size_t>(b)] + h * t[i].strides[1] + s * t[i].strides[2] + d * t[i].strides[3];
            const std::int64_t row = start[static_cast<std::size_t>(b)] + s;
            ASSERT_EQ(at, t[i].name == "Stats" ? h * rows + row : (row * heads + h) * width + d);
            ++hits[static_cast<std::size_t>(at)];
          }
    for (int h : hits) ASSERT_EQ(h, 1);
  }
  // Forward: cuDNN writes Stats into a padded buffer of its own, without offsets.
  p.backward = false;
  EXPECT_TRUE(sdpa_varlen(p).ragged[4].empty());
  // A padded cache (attn.decode): request b's keys at row b · seq_k.
  p.start_k = {0, 6, 12};
  EXPECT_EQ(sdpa_varlen(p).ragged[1], (std::vector<std::int32_t>{0, 6 * 3 * 8, 12 * 3 * 8, 18 * 3 * 8}));
}

TEST(CudnnBaseline, RefusalsNameWhatCudnnCannotRun) {
  EXPECT_EQ(sdpa_refusal(small_sdpa()), "");
  SdpaBaseline p = small_sdpa();
  p.len_q = {5};  // lengths of one sequence for a batch of two
  p.len_k = p.start_q = p.start_k = {0};
  EXPECT_NE(sdpa_refusal(p).find("varlen lengths for 1 sequences in a batch of 2"), std::string::npos) << sdpa_refusal(p);
  p = small_sdpa();
  p.batch = 1, p.seq_q = p.seq_k = 1 << 20, p.heads = p.heads_kv = 64, p.dim = p.dim_v = 128;
  p.len_q = p.len_k = {1 << 20};
  p.start_q = p.start_k = {0};
  EXPECT_NE(sdpa_refusal(p).find("2^31 elements"), std::string::npos) << sdpa_refusal(p);
  p.heads = p.heads_kv = 8;  // 2^30 elements: int32 offsets reach
  EXPECT_EQ(sdpa_refusal(p), "");
  // A decode batch: 64 query heads of one row each, a 2^29-element cache of 8 kv heads (each side's own count).
  p.batch = 32, p.seq_q = 1, p.seq_k = 16384, p.heads = 64, p.heads_kv = 8, p.causal = false;
  p.len_q = p.start_q = p.len_k = p.start_k = {};
  for (std::int64_t i = 0; i < 32; ++i) {
    p.len_q.push_back(1), p.start_q.push_back(i), p.len_k.push_back(16384), p.start_k.push_back(i * 16384);
  }
  EXPECT_EQ(sdpa_refusal(p), "");
  p = small_sdpa();
  p.causal = false;
  p.len_q = {5, 5}, p.start_q = {0, 5};
  p.len_k = {7, 0}, p.start_k = {0, 7};
  EXPECT_NE(sdpa_refusal(p).find("sequence 1 has no keys"), std::string::npos) << sdpa_refusal(p);
  p.backward = true;  // cuDNN's backward gives such a sequence dQ 0, as ours
  EXPECT_EQ(sdpa_refusal(p), "");
  p = small_sdpa();
  p.dim = p.dim_v = 100;
  EXPECT_NE(sdpa_refusal(p).find("head dimension 100"), std::string::npos) << sdpa_refusal(p);
  p = small_sdpa();
  p.dim_v = 512;
  EXPECT_NE(sdpa_refusal(p).find("head dimension 512"), std::string::npos) << sdpa_refusal(p);
  p = small_sdpa();
  p.heads_kv = 4;
  EXPECT_NE(sdpa_refusal(p).find("heads_kv=4 does not divide heads=6"), std::string::npos) << sdpa_refusal(p);
  p = small_sdpa();
  p.seq_q = 9;
  EXPECT_NE(sdpa_refusal(p).find("causal with seq_q > seq_k"), std::string::npos) << sdpa_refusal(p);
  p.causal = false;
  EXPECT_EQ(sdpa_refusal(p), "");
}

// Both attention forward kernels hand cuDNN their own problem and buffers: GQA heads, lengths, the causal flag and
// the 1/sqrt(dim) scale of the reference.
TEST(CudnnBaseline, AttentionKernelsDescribeTheirProblem) {
  for (const char* kernel : {"attn.fwd.mma", "attn.fwd.wgmma"}) {
    SCOPED_TRACE(kernel);
    auto inst = instantiate(*library_registry().find(kernel).value(),
                            {{"batch", "3"}, {"seq_q", "100"}, {"seq_k", "300"}, {"heads", "8"}, {"heads_kv", "2"},
                             {"dim", "64"}, {"causal", "true"}, {"dtype", "f16"}},
                            {}, limits_for_arch("sm_90a"));
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    auto b = baseline_for(*inst, "cudnn");
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(b->kind, "cudnn_sdpa");
    EXPECT_EQ(b->compared_output(), "O");
    EXPECT_EQ(b->in, DType::f16);
    EXPECT_EQ(b->out, DType::f16);
    const SdpaBaseline& a = b->sdpa;
    EXPECT_EQ(std::vector<std::int64_t>({a.batch, a.heads, a.heads_kv, a.seq_q, a.seq_k, a.dim}),
              std::vector<std::int64_t>({3, 8, 2, 100, 300, 64}));
    EXPECT_TRUE(a.causal);
    EXPECT_FALSE(a.varlen());
    EXPECT_DOUBLE_EQ(a.scale, 0.125);
    EXPECT_EQ(sdpa_refusal(a), "");
    EXPECT_EQ(baseline_for(*inst, "cublas").status().code(), ErrorCode::unsupported);
    // Varlen: each sequence's lengths and first rows, as the launch's cu_seqlens have them.
    auto varlen = instantiate(*library_registry().find(kernel).value(),
                              {{"batch", "4"}, {"varlen", "true"}, {"causal", "true"}}, {}, limits_for_arch("sm_90a"));
    ASSERT_TRUE(varlen.ok());
    auto bv = baseline_for(*varlen, "cudnn");
    ASSERT_TRUE(bv.ok()) << bv.status().message();
    EXPECT_EQ(sdpa_refusal(bv->sdpa), "");
    ASSERT_EQ(bv->sdpa.len_q.size(), 4u);
    for (const ArgSpec& arg : varlen->args)
      if (arg.name == "cu_seqlens_q" || arg.name == "cu_seqlens_k") {
        const bool q = arg.name == "cu_seqlens_q";
        const std::vector<std::int64_t>& start = q ? bv->sdpa.start_q : bv->sdpa.start_k;
        const std::vector<std::int64_t>& len = q ? bv->sdpa.len_q : bv->sdpa.len_k;
        std::vector<std::int32_t> cu(5);
        ASSERT_EQ(arg.data.size(), cu.size() * sizeof(std::int32_t));
        std::memcpy(cu.data(), arg.data.data(), arg.data.size());
        for (std::size_t i = 0; i < 4; ++i) {
          EXPECT_EQ(start[i], cu[i]);
          EXPECT_EQ(start[i] + len[i], cu[i + 1]);
        }
      }
  }
  // Varlen of the backward (packed, LSE [heads, rows]) and of attn.decode (a padded cache, empty ones too): their
  // buffers hold what the offsets address.
  for (auto [kernel, problem] : {std::pair{"attn.bwd.wgmma", "varlen"}, {"attn.bwd.mma", "varlen"}, {"attn.decode", "varlen"},
                                 {"attn.decode", "zero_lengths"}}) {
    SCOPED_TRACE(std::string(kernel) + " " + problem);
    auto inst = instantiate(*library_registry().find(kernel).value(), {{"batch", "4"}, {problem, "true"}}, {},
                            limits_for_arch("sm_90a"));
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    auto bv = baseline_for(*inst, "cudnn");
    ASSERT_TRUE(bv.ok()) << bv.status().message();
    EXPECT_TRUE(bv->sdpa.varlen());
    // attn.decode's empty caches: cuDNN's forward cannot be compared there (refused, naming the sequence).
    if (std::string(problem) == "zero_lengths") EXPECT_NE(sdpa_refusal(bv->sdpa).find("sequence 1 has no keys"), std::string::npos);
    else EXPECT_EQ(sdpa_refusal(bv->sdpa), "");
  }
  // The backward: its dQ is compared, cuDNN reads our O, dO and LSE; DeepSeek's 192/128 head dims stay apart.
  auto bwd = instantiate(*library_registry().find("attn.bwd.mma").value(),
                         {{"batch", "2"}, {"seq_q", "100"}, {"seq_k", "120"}, {"heads", "4"}, {"heads_kv", "2"},
                          {"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}},
                         {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(bwd.ok()) << bwd.status().message();
  auto bb = baseline_for(*bwd, "cudnn");
  ASSERT_TRUE(bb.ok()) << bb.status().message();
  EXPECT_TRUE(bb->sdpa.backward);
  EXPECT_EQ(bb->compared_output(), "dQ");
  EXPECT_EQ(bb->sdpa.dim, 192);
  EXPECT_EQ(bb->sdpa.dim_v, 128);
  EXPECT_NEAR(bb->sdpa.scale, 1.0 / std::sqrt(192.0), 1e-15);
  EXPECT_EQ(sdpa_refusal(bb->sdpa), "");
  auto gemm = instantiate(*library_registry().find("gemm.wgmma").value(), {}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(gemm.ok());
  auto refused = baseline_for(*gemm, "cudnn");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::unsupported);
  EXPECT_NE(refused.status().message().find("gemm.wgmma has no cuDNN equivalent"), std::string::npos);
  EXPECT_EQ(baseline_library("cudnn_sdpa"), "cudnn");
  EXPECT_EQ(baseline_library("cublas_gemm"), "cublas");
  EXPECT_EQ(baseline_library("cutlass_gemm"), "");
}

// The worker reads back exactly the problem the parent described.
TEST(CudnnBaseline, TravelsInTheLaunchRequest) {
  for (const char* kernel : {"attn.fwd.mma", "attn.bwd.mma"}) {
    SCOPED_TRACE(kernel);
    auto inst = instantiate(*library_registry().find(kernel).value(),
                            {{"batch", "3"}, {"seq_q", "64"}, {"seq_k", "96"}, {"heads", "4"}, {"heads_kv", "1"},
                             {"varlen", "true"}},
                            {}, limits_for_arch("sm_90a"));
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    auto ls = to_launch_spec(*inst, fake_compiled());
    ASSERT_TRUE(ls.ok());
    ls->baseline = baseline_for(*inst, "cudnn").value();
    Message req = make_launch_request(*ls);
    LaunchSpec back;
    ASSERT_TRUE(detail::parse_launch(req.header["launch"], req, back).ok());
    ASSERT_TRUE(back.baseline.has_value());
    const SdpaBaseline &x = ls->baseline->sdpa, &y = back.baseline->sdpa;
    EXPECT_EQ(back.baseline->kind, "cudnn_sdpa");
    EXPECT_EQ(std::vector<std::int64_t>({y.batch, y.heads, y.heads_kv, y.seq_q, y.seq_k, y.dim, y.dim_v}),
              std::vector<std::int64_t>({x.batch, x.heads, x.heads_kv, x.seq_q, x.seq_k, x.dim, x.dim_v}));
    EXPECT_EQ(y.causal, x.causal);
    ASSERT_TRUE(x.varlen());
    EXPECT_EQ(y.len_q, x.len_q);
    EXPECT_EQ(y.len_k, x.len_k);
    EXPECT_EQ(y.start_q, x.start_q);
    EXPECT_EQ(y.start_k, x.start_k);
    EXPECT_EQ(y.backward, std::string(kernel) == "attn.bwd.mma");
    EXPECT_DOUBLE_EQ(y.scale, x.scale);
    EXPECT_EQ(std::vector<std::string>({y.q, y.k, y.v, y.o, y.d_o, y.lse, y.dq}),
              std::vector<std::string>({"Q", "K", "V", "O", "dO", "LSE", "dQ"}));
  }
}

// A spec's pre-launch (attn.bwd.wgmma's d_pass) reaches the worker as the spec gave it; without it there is none.
// gemm.fp8's block scales with scale_A M-major (scale_a_layout=mn): cuBLASLt is told so (it reads them as they are),
// and the worker reads the flag back; K-major ones travel without it.
TEST(Baseline, Fp8MMajorBlockScalesTravelInTheLaunchRequest) {
  for (const char* layout : {"k", "mn"}) {
    SCOPED_TRACE(layout);
    auto inst = instantiate(*library_registry().find("gemm.fp8").value(),
                            {{"M", "200"}, {"N", "300"}, {"K", "272"}, {"scaling", "block"}, {"scale_a_layout", layout}},
                            {}, limits_for_arch("sm_90a"));
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    auto ls = to_launch_spec(*inst, fake_compiled());
    ASSERT_TRUE(ls.ok());
    ls->baseline = baseline_for(*inst, "cublas").value();
    const bool mn = std::string(layout) == "mn";
    EXPECT_EQ(ls->baseline->scaling, "block");
    EXPECT_EQ(ls->baseline->scale_a_mn, mn);
    Message req = make_launch_request(*ls);
    LaunchSpec back;
    ASSERT_TRUE(detail::parse_launch(req.header["launch"], req, back).ok());
    ASSERT_TRUE(back.baseline.has_value());
    EXPECT_EQ(back.baseline->scaling, "block");
    EXPECT_EQ(back.baseline->scale_a_mn, mn);
  }
}

TEST(PreLaunch, TravelsInTheLaunchRequest) {
  const KernelSpec& spec = *library_registry().find("attn.bwd.wgmma").value();
  DeviceLimits limits = limits_for_arch("sm_90a");
  limits.sm_count = 100;
  for (const bool on : {false, true}) {
    SCOPED_TRACE(on);
    auto inst = instantiate(spec, {{"batch", "3"}}, {{"d_pass", on ? "true" : "false"}}, limits);
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    auto ls = to_launch_spec(*inst, fake_compiled());
    ASSERT_TRUE(ls.ok());
    Message req = make_launch_request(*ls);
    LaunchSpec back;
    ASSERT_TRUE(detail::parse_launch(req.header["launch"], req, back).ok());
    ASSERT_EQ(back.pre.has_value(), on);
    if (!on) continue;
    // A block per SM over the 3 sequences: 34 x 3 >= 100, each block a sequence's.
    EXPECT_EQ(back.pre->grid.x, 34u);
    EXPECT_EQ(back.pre->grid.z, 3u);
    EXPECT_EQ(back.pre->block.x, static_cast<std::uint32_t>(kAttnBwdWgmmaPrePassThreads));
    EXPECT_NE(back.pre->block.x, back.geometry.block.x);  // how the kernel tells the two apart
    EXPECT_EQ(back.pre->dynamic_smem, 0u);
  }
}

// Where libcudnn is missing the row says so, naming what was tried and what to set; a cuDNN that is there opens
// without a GPU and is version 9 or later.
TEST(CudnnBaseline, NotFoundSaysWhatToSet) {
  auto missing = open_cudnn_library("/nonexistent/libcudnn.so.9");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::not_found);
  const std::string& m = missing.status().message();
  EXPECT_EQ(m.rfind("cudnn not found: TL_CUDNN_LIBRARY=/nonexistent/libcudnn.so.9", 0), 0u) << m;
  EXPECT_NE(m.find("nvidia-cudnn-cu13"), std::string::npos) << m;
  EXPECT_NE(m.find("LD_LIBRARY_PATH"), std::string::npos) << m;
  // A directory stands for the libcudnn.so.9 inside it.
  const std::string dir = std::filesystem::temp_directory_path().string();
  auto in_dir = open_cudnn_library(dir.c_str());
  ASSERT_FALSE(in_dir.ok());
  EXPECT_NE(in_dir.status().message().find(dir + "/libcudnn.so.9"), std::string::npos) << in_dir.status().message();
  auto found = open_cudnn_library(nullptr);
  if (!found.ok()) {
    EXPECT_EQ(found.status().message().rfind("cudnn not found: ", 0), 0u) << found.status().message();
    GTEST_SKIP() << "no cuDNN on this machine: " << found.status().message();
  }
  EXPECT_GE(found->version, 90000u);
  EXPECT_FALSE(found->path.empty());
}

// The DRAM measurement is asked for in the launch request and comes back in the reply, measured or with the reason.
TEST(Dram, TravelsInTheLaunchRequestAndReply) {
  auto inst = instantiate(*library_registry().find("copy").value(), {{"n", "1000"}}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(inst.ok());
  TimingOptions timing;
  timing.measure_dram = true;
  auto ls = to_launch_spec(*inst, fake_compiled(), timing);
  ASSERT_TRUE(ls.ok());
  EXPECT_EQ(make_launch_request(*ls).header["launch"]["timing"]["measure_dram"], true);
  Message reply = make_reply(0);
  reply.header["result"] = {{"outputs", nlohmann::json::array()},
                            {"dram", {{"measured", true}, {"read_bytes", 4000.0}, {"write_bytes", 4096.0}}}};
  auto parsed = parse_launch_reply(reply);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_TRUE(parsed->dram.has_value());
  EXPECT_TRUE(parsed->dram->measured);
  EXPECT_EQ(parsed->dram->write_bytes, 4096.0);
  reply.header["result"]["dram"] = {{"measured", false}, {"reason", "CUPTI: no libcupti"}};
  EXPECT_EQ(parse_launch_reply(reply).value().dram->reason, "CUPTI: no libcupti");
  reply.header["result"].erase("dram");
  EXPECT_FALSE(parse_launch_reply(reply).value().dram.has_value());
}

std::filesystem::path temp_file(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tl_test_bench_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

TEST(Npy, RoundTripKeepsShapeTypeAndBytes) {
  std::vector<double> v = {1.5, -2.25, 3e300, 0.0, -0.0, 7};
  auto a = npy_from_doubles(v, {2, 3});
  auto path = temp_file("d.npy");
  ASSERT_TRUE(write_npy(path.string(), a).ok());
  auto b = read_npy(path.string());
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->descr, "<f8");
  EXPECT_EQ(b->shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(b->data, a.data);
  // The format's own facts: magic, version 1.0, data aligned to 64 bytes, header ends in a newline.
  std::ifstream in(path, std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(raw.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t hlen = static_cast<unsigned char>(raw[8]) | (static_cast<unsigned char>(raw[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  EXPECT_EQ(raw[10 + hlen - 1], '\n');
  EXPECT_EQ(raw.size(), 10 + hlen + v.size() * 8);
  EXPECT_NE(raw.find("'shape': (2, 3)"), std::string::npos);
}

TEST(Npy, OneDimensionalShapeHasTrailingComma) {
  auto path = temp_file("u.npy");
  ASSERT_TRUE(write_npy(path.string(), npy_from_u64({4, 5, 6})).ok());
  std::ifstream in(path, std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(raw.find("'descr': '<u8'"), std::string::npos);
  EXPECT_NE(raw.find("'shape': (3,)"), std::string::npos);
  auto b = read_npy(path.string());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->shape, (std::vector<std::int64_t>{3}));
}

TEST(Npy, Bf16IsWidenedToFloat32) {
  std::vector<std::uint8_t> raw(4);
  store_element(raw.data(), DType::bf16, 0, 1.5);
  store_element(raw.data(), DType::bf16, 1, -3.0);
  auto a = npy_from_elements(raw.data(), DType::bf16, {2});
  EXPECT_EQ(a.descr, "<f4");
  ASSERT_EQ(a.data.size(), 8u);
  EXPECT_EQ(load_element(a.data.data(), DType::f32, 0), 1.5);
  EXPECT_EQ(load_element(a.data.data(), DType::f32, 1), -3.0);
  EXPECT_EQ(npy_from_elements(raw.data(), DType::f16, {2}).descr, "<f2");
}

TEST(Npy, RejectsWhatIsNotNpy) {
  auto path = temp_file("bad.npy");
  std::ofstream(path) << "hello";
  EXPECT_EQ(read_npy(path.string()).status().code(), ErrorCode::parse);
}

// The threaded reference gives exactly the values of one call, for element-sampled (GEMM) and row-sampled
// (attention) outputs, and a spec that is not thread-safe is called once.
TEST(Reference, ThreadedEqualsOneCall) {
  for (const char* name : {"gemm.simt", "attn.fwd.mma"}) {
    SCOPED_TRACE(name);
    const KernelSpec& spec = *library_registry().find(name).value();
    auto inst = instantiate(spec, {}, {}, limits_for_arch("sm_90a")).value();
    ReferenceInputs in;
    std::string out;
    std::uint64_t count = 0;
    for (const ArgSpec& a : inst.args) {
      if (a.kind == ArgSpec::Kind::scalar) in.scalars[a.name] = a.value;
      else if (a.kind == ArgSpec::Kind::tensor && a.role == ArgRole::in) in.tensors[a.name] = make_host_tensor(a);
      else if (a.kind == ArgSpec::Kind::tensor && a.role == ArgRole::out && out.empty()) {
        out = a.name;
        count = static_cast<std::uint64_t>(a.numel());
      }
    }
    ASSERT_FALSE(out.empty());
    const std::uint64_t unit = spec.sampling ? spec.sampling(inst.problem, out).unit : 1;
    std::vector<std::int64_t> idx;
    for (std::uint64_t p : sample_positions(count, 1u << 14, 3, unit)) idx.push_back(static_cast<std::int64_t>(p));
    ASSERT_GE(idx.size(), 2048u);  // enough for two threads' chunks
    auto one = spec.reference(inst.problem, in, out, idx);
    ASSERT_TRUE(one.ok()) << one.status().message();
    auto threaded = compute_reference(inst, in, out, idx);
    ASSERT_TRUE(threaded.ok()) << threaded.status().message();
    EXPECT_EQ(*threaded, *one);

    KernelSpec serial = spec;
    int calls = 0;
    serial.reference_thread_safe = false;
    serial.reference = [&](const Values& p, const ReferenceInputs& i, const std::string& o,
                           const std::vector<std::int64_t>& x) {
      ++calls;
      return spec.reference(p, i, o, x);
    };
    inst.spec = &serial;
    auto once = compute_reference(inst, in, out, idx);
    ASSERT_TRUE(once.ok());
    EXPECT_EQ(*once, *one);
    EXPECT_EQ(calls, 1);
  }
}


// Persistent grids and the MLA split schedule follow the device's SM count (an H100 PCIe has 114 SMs), not a
// constant; compiling without a GPU sizes them for the arch's flagship (sm_90a: 132).
TEST(DeviceLimits, SmCountSizesPersistentGrids) {
  EXPECT_EQ(limits_for_arch("sm_90a").sm_count, 132);
  EXPECT_EQ(limits_for_arch("sm_80").sm_count, 108);
  DeviceInfo pcie;
  pcie.cc_major = 9;
  pcie.sm_count = 114;
  const DeviceLimits small = limits_for_device(pcie);
  EXPECT_EQ(small.sm_count, 114);
  auto grid = [&](const char* kernel, std::map<std::string, std::string> problem, std::map<std::string, std::string> config,
                  const DeviceLimits& l) {
    auto inst = instantiate(*library_registry().find(kernel).value(), problem, config, l);
    EXPECT_TRUE(inst.ok()) << inst.status().message();
    return inst.ok() ? inst->launch.grid.x : 0u;
  };
  const std::map<std::string, std::string> gemm = {{"M", "8192"}, {"N", "8192"}, {"K", "1024"}};
  EXPECT_EQ(grid("gemm.wgmma", gemm, {}, limits_for_arch("sm_90a")), 132u);
  EXPECT_EQ(grid("gemm.wgmma", gemm, {}, small), 114u);
  EXPECT_EQ(grid("gemm.wgmma", gemm, {{"cluster_N", "2"}}, small), 114u);  // 57 pairs
  const std::map<std::string, std::string> attn = {{"batch", "8"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "16"}, {"dim", "128"}};
  EXPECT_EQ(grid("attn.fwd.wgmma", attn, {}, small), 114u);
  // mla.decode: one part per SM and row tile (h_q 64 = one row tile); an explicit `sms` still wins.
  const std::map<std::string, std::string> mla = {{"batch", "128"}, {"seq_q", "1"}, {"heads", "64"}, {"seq_k", "4096"}};
  EXPECT_EQ(grid("mla.decode", mla, {}, small), 114u);
  EXPECT_EQ(grid("mla.decode", mla, {}, limits_for_arch("sm_90a")), 132u);
  EXPECT_EQ(grid("mla.decode", mla, {{"sms", "100"}}, small), 100u);
}

// The L2 size rasterization rules read: the arch's flagship without a GPU, the device's own where it reports one.
TEST(DeviceLimits, L2BytesFromTheArchOrTheDevice) {
  EXPECT_EQ(limits_for_arch("sm_80").l2_bytes, std::int64_t{40} << 20);
  EXPECT_EQ(limits_for_arch("sm_90a").l2_bytes, std::int64_t{50} << 20);
  EXPECT_EQ(limits_for_arch("sm_100a").l2_bytes, std::int64_t{126} << 20);
  DeviceInfo h200;
  h200.cc_major = 9;
  EXPECT_EQ(limits_for_device(h200).l2_bytes, std::int64_t{50} << 20);  // not reported: the arch's
  h200.l2_bytes = std::uint64_t{60} << 20;
  EXPECT_EQ(limits_for_device(h200).l2_bytes, std::int64_t{60} << 20);
}

// A timeline's stage statistics need the depth the kernel was built with: gemm.fp8's num_stages=0 (auto) resolves
// to 8 beside M = 128's narrow tiles (its name expression says so), an explicit depth is kept, and a kernel without
// the parameter has none.
TEST(Timeline, BuiltStagesResolvesAuto) {
  auto inst = [](const char* kernel, std::map<std::string, std::string> problem, std::map<std::string, std::string> config) {
    return instantiate(*library_registry().find(kernel).value(), problem, config, limits_for_arch("sm_90a")).value();
  };
  const std::map<std::string, std::string> small = {{"M", "128"}, {"N", "7168"}, {"K", "2048"}, {"scaling", "block"}};
  const KernelInstance fp8 = inst("gemm.fp8", small, {});
  ASSERT_NE(fp8.name_expression.find(".num_stages = 8"), std::string::npos) << fp8.name_expression;
  EXPECT_EQ(built_stages(fp8), 8);
  EXPECT_EQ(built_stages(inst("gemm.fp8", small, {{"num_stages", "3"}})), 3);
  EXPECT_EQ(built_stages(inst("copy", {{"n", "1000"}}, {})), 0);
}

}  // namespace

}  // namespace tl
