// GPU: every library kernel, compiled through the JIT and launched from its spec, matches its float64 reference
// at sizes that are not multiples of its tiles (a minimal launcher of its own, independent of the worker; kernels
// that take TMA tensor maps run through the worker, which encodes them).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>

#include "library.hpp"
#include "runtime/bench.hpp"
#include "runtime/worker.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/tilelab_exe.hpp"

namespace tl {
namespace {

#define CUDA_OK(expr)                                                              \
  do {                                                                             \
    cudaError_t e_ = (expr);                                                       \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(e_);         \
  } while (0)

struct Case {
  std::string kernel;
  std::map<std::string, std::string> problem, config;
};

void run_case(const Case& c) {
  SCOPED_TRACE(c.kernel);
  static Jit jit(kernel_sources().value());
  auto prepared = prepare_kernel(library_registry(), jit, c.kernel, c.problem, c.config,
                                 limits_for_device(query_device(0).value()));
  ASSERT_TRUE(prepared.ok()) << prepared.status().message();
  const KernelInstance* inst = &prepared->instance;
  const CompiledKernel* k = &prepared->compiled;
  const KernelSpec& spec = *inst->spec;
  SCOPED_TRACE(inst->name_expression + " " + inst->problem.to_string());

  cudaLibrary_t lib = nullptr;
  CUDA_OK(cudaLibraryLoadData(&lib, k->cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  cudaKernel_t fn = nullptr;
  CUDA_OK(cudaLibraryGetKernel(&fn, lib, k->lowered_name.c_str()));
  if (inst->launch.dynamic_smem > 48 * 1024)
    CUDA_OK(cudaKernelSetAttributeForDevice(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(inst->launch.dynamic_smem), 0));

  ReferenceInputs inputs;
  std::vector<void*> device_ptrs;
  std::vector<std::vector<unsigned char>> scalar_storage;
  std::vector<void*> params;
  for (const auto& a : inst->args) {
    if (a.kind == ArgSpec::Kind::scalar) {
      inputs.scalars[a.name] = a.value;
      std::vector<unsigned char> bytes(dtype_size(a.dtype));
      if (a.dtype == DType::f32) {
        float f = static_cast<float>(a.value);
        std::memcpy(bytes.data(), &f, 4);
      } else {
        store_element(bytes.data(), a.dtype, 0, a.value);
      }
      scalar_storage.push_back(std::move(bytes));
      continue;
    }
    void* d = nullptr;
    CUDA_OK(cudaMalloc(&d, a.bytes()));
    device_ptrs.push_back(d);
    if (a.role == ArgRole::out) {
      CUDA_OK(cudaMemset(d, 0xff, a.bytes()));  // NaN poison in every float type: unwritten outputs fail the check
    } else {
      HostTensor t = make_host_tensor(a);
      CUDA_OK(cudaMemcpy(d, t.data.data(), t.data.size(), cudaMemcpyHostToDevice));
      inputs.tensors[a.name] = std::move(t);
    }
  }
  std::size_t si = 0, ti = 0;
  for (const auto& a : inst->args)
    params.push_back(a.kind == ArgSpec::Kind::scalar ? static_cast<void*>(scalar_storage[si++].data())
                                                     : static_cast<void*>(&device_ptrs[ti++]));

  cudaLaunchConfig_t cfg{};
  const auto& g = inst->launch;
  cfg.gridDim = dim3(g.grid.x, g.grid.y, g.grid.z);
  cfg.blockDim = dim3(g.block.x, g.block.y, g.block.z);
  cfg.dynamicSmemBytes = g.dynamic_smem;
  CUDA_OK(cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(fn), params.data()));
  CUDA_OK(cudaDeviceSynchronize());

  ti = 0;
  for (const auto& a : inst->args) {
    if (a.kind == ArgSpec::Kind::scalar) continue;
    void* d = device_ptrs[ti++];
    if (a.role != ArgRole::out) continue;
    HostTensor out;
    out.dtype = a.dtype;
    out.shape = a.shape;
    out.data.resize(a.bytes());
    CUDA_OK(cudaMemcpy(out.data.data(), d, a.bytes(), cudaMemcpyDeviceToHost));
    std::vector<std::int64_t> idx(static_cast<std::size_t>(a.numel()));
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::int64_t>(i);
    auto ref = spec.reference(inst->problem, inputs, a.name, idx);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    double err2 = 0, ref2 = 0, max_abs = 0;
    std::int64_t unwritten = 0;
    for (std::size_t i = 0; i < idx.size(); ++i) {
      const double o = out.at(static_cast<std::int64_t>(i)), r = (*ref)[i];
      if (!std::isfinite(r) && o == r) continue;  // an expected infinity (attention's LSE of a row without keys)
      if (std::isnan(o)) {
        ++unwritten;
        continue;
      }
      err2 += (o - r) * (o - r);
      ref2 += r * r;
      max_abs = std::max(max_abs, std::abs(o - r));
    }
    EXPECT_EQ(unwritten, 0) << a.name << ": outputs left unwritten (still NaN)";
    const double rel = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    EXPECT_LE(rel, inst->tolerance.rel) << a.name;
    if (inst->tolerance.max_abs > 0) {  // 0 = not checked
      EXPECT_LE(max_abs, inst->tolerance.max_abs) << a.name;
    }
  }
  for (void* d : device_ptrs) cudaFree(d);
  cudaLibraryUnload(lib);
}

TEST(LibraryGpu, KernelsMatchTheirReferences) {
  TL_REQUIRE_GPU();
  std::vector<Case> cases;
  for (const char* dt : {"f32", "f16", "bf16"}) {
    cases.push_back({"gemm.simt", {{"M", "257"}, {"N", "130"}, {"K", "67"}, {"dtype", dt}}, {}});
    cases.push_back({"gemm.simt", {{"M", "100"}, {"N", "300"}, {"K", "129"}, {"dtype", dt}},
                     {{"block_M", "64"}, {"block_N", "32"}, {"block_K", "16"}, {"thread_M", "4"}, {"thread_N", "4"}}});
    cases.push_back({"copy", {{"n", "1000003"}, {"dtype", dt}}, {{"vec", std::string(dt) == "f32" ? "4" : "8"}}});
    cases.push_back({"copy", {{"n", "777"}, {"dtype", dt}}, {{"vec", "1"}, {"threads", "64"}}});
    cases.push_back({"elementwise", {{"n", "123457"}, {"dtype", dt}}, {{"vec", "2"}, {"threads", "128"}}});
    cases.push_back({"rmsnorm", {{"rows", "37"}, {"cols", "1000"}, {"dtype", dt}}, {}});
    cases.push_back({"rmsnorm", {{"rows", "101"}, {"cols", "96"}, {"dtype", dt}},
                     {{"vec", "2"}, {"threads", "256"}, {"rows_per_block", "8"}}});
    cases.push_back({"softmax", {{"rows", "33"}, {"cols", "4096"}, {"dtype", dt}}, {{"threads", "512"}}});
    cases.push_back({"softmax", {{"rows", "75"}, {"cols", "100"}, {"dtype", dt}},
                     {{"vec", "4"}, {"threads", "256"}, {"rows_per_block", "8"}}});
    // Rows longer than 16 vectors per thread take the two-read path (the others are held in registers).
    cases.push_back({"softmax", {{"rows", "5"}, {"cols", "20000"}, {"dtype", dt}}, {{"vec", "2"}, {"threads", "64"}}});
  }
  cases.push_back({"gemm.simt", {{"M", "513"}, {"N", "511"}, {"K", "1000"}}, {{"block_K", "64"}, {"block_M", "256"}, {"block_N", "128"}}});
  for (const auto& c : cases) run_case(c);
}

// The attention kernels' matrix: lengths not multiples of any block, GQA ratios 1/4/8, causal on and off (causal
// with seq_q < seq_k checks the bottom-right alignment), both head dims and dtypes; seq_q == seq_k causal (the plain
// lower triangle), one query row, a single key; varlen (cu_seqlens) with one sequence without keys when not causal.
std::vector<std::map<std::string, std::string>> attention_problems() {
  std::vector<std::map<std::string, std::string>> ps;
  int n = 0;
  for (const char* dim : {"64", "128"})
    for (const char* ratio : {"1", "4", "8"})
      for (const char* causal : {"false", "true"}) {
        const int heads = 8, heads_kv = heads / std::stoi(ratio);
        const bool c = std::string(causal) == "true";
        ps.push_back({{"batch", "2"}, {"seq_q", c ? "131" : "200"}, {"seq_k", "333"}, {"heads", std::to_string(heads)},
                      {"heads_kv", std::to_string(heads_kv)}, {"dim", dim}, {"causal", causal}, {"dtype", n++ % 2 ? "f16" : "bf16"}});
      }
  ps.push_back({{"batch", "1"}, {"seq_q", "257"}, {"seq_k", "257"}, {"heads", "4"}, {"heads_kv", "1"}, {"causal", "true"}});
  ps.push_back({{"batch", "3"}, {"seq_q", "1"}, {"seq_k", "1000"}, {"heads", "2"}, {"heads_kv", "2"}, {"causal", "true"}});
  ps.push_back({{"batch", "1"}, {"seq_q", "70"}, {"seq_k", "1"}, {"heads", "2"}, {"heads_kv", "2"}, {"dim", "64"}});
  for (const char* causal : {"false", "true"})
    for (const char* ratio : {"1", "4"})
      ps.push_back({{"batch", "6"}, {"seq_q", "300"}, {"seq_k", "420"}, {"heads", "8"},
                    {"heads_kv", std::to_string(8 / std::stoi(ratio))}, {"causal", causal}, {"varlen", "true"}});
  return ps;
}

// Each problem once, the kernel's configs taken in turn.
void run_attention(const std::string& kernel, const std::vector<std::map<std::string, std::string>>& configs) {
  int n = 0;
  for (const auto& p : attention_problems()) run_case({kernel, p, configs[n++ % configs.size()]});
}

TEST(LibraryGpu, AttentionMatchesItsReference) {
  TL_REQUIRE_GPU();
  run_attention("attn.fwd.mma", {{}, {{"block_M", "128"}, {"block_N", "128"}, {"warps", "8"}, {"num_stages", "3"}},
                                 {{"block_M", "128"}, {"block_N", "32"}, {"warps", "8"}, {"num_stages", "4"}}});
}

// Through the worker (this file's launcher passes no tensor maps), every output element checked. Causal problems
// skip block_N=176 at dim 128 (refused: it spills) and take the next config.
TEST(LibraryGpu, AttentionWgmmaMatchesItsReference) {
  TL_REQUIRE_GPU();
  if (query_device(0).value().cc_major < 9) GTEST_SKIP() << "attn.fwd.wgmma needs sm_90";
  WorkerOptions wo;
  wo.executable = test::tilelab_exe();
  wo.timeout = std::chrono::milliseconds(20000);
  WorkerClient worker(wo);
  static Jit jit(kernel_sources().value());
  const std::vector<std::map<std::string, std::string>> configs = {
      {}, {{"block_N", "176"}}, {{"block_M", "64"}, {"ping_pong", "false"}, {"num_stages", "3"}},
      {{"block_N", "64"}, {"num_stages", "3"}}, {{"ping_pong", "false"}}, {{"persistent", "false"}}};
  const DeviceLimits limits = limits_for_device(query_device(0).value());
  RunOptions ro;
  ro.timing.repeat = 0;
  ro.max_samples = 0;
  std::size_t n = 0;
  for (const auto& p : attention_problems()) {
    auto prepared = prepare_kernel(library_registry(), jit, "attn.fwd.wgmma", p, configs[n++ % configs.size()], limits);
    if (!prepared.ok()) prepared = prepare_kernel(library_registry(), jit, "attn.fwd.wgmma", p, configs[n++ % configs.size()], limits);
    ASSERT_TRUE(prepared.ok()) << prepared.status().message();
    SCOPED_TRACE(prepared->instance.name_expression + " " + prepared->instance.problem.to_string());
    RunRecord r = run_instance(worker, *prepared, ro);
    EXPECT_TRUE(r.passed()) << r.failure_text();
    EXPECT_EQ(r.unwritten(), 0u);
  }
}

}  // namespace
}  // namespace tl
