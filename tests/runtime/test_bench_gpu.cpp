// GPU: run_instance passes every library kernel at its defaults; test.oob is a fault, test.spin a timeout, and the
// same WorkerClient runs a passing kernel afterwards.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "library/library.hpp"
#include "runtime/measure/bench.hpp"
#include "runtime/worker/client.hpp"
#include "runtime/worker/cupti_library.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/tilelab_exe.hpp"

namespace tl {
namespace {

using namespace std::chrono_literals;

WorkerOptions worker_options() {
  WorkerOptions o;
  o.executable = test::tilelab_exe();
  o.timeout = 60000ms;
  return o;
}

const Jit& jit() {
  static Jit j(kernel_sources().value());
  return j;
}

PreparedKernel prepare(const std::string& name, std::map<std::string, std::string> problem = {}) {
  auto p = prepare_kernel(library_registry(), jit(), name, problem, {}, limits_for_device(query_device(0).value()));
  EXPECT_TRUE(p.ok()) << name << ": " << p.status().message();
  return p.ok() ? *p : PreparedKernel{};
}

TEST(BenchGpu, EveryLibraryKernelPassesAtItsDefaults) {
  TL_REQUIRE_GPU();
  WorkerClient worker(worker_options());
  RunOptions ro;
  ro.timing.repeat = 5;
  ro.timing.warmup = 1;
  for (const KernelSpec* spec : library_registry().list(false)) {
    SCOPED_TRACE(spec->name);
    PreparedKernel k = prepare(spec->name);
    ASSERT_NE(k.instance.spec, nullptr);
    RunRecord r = run_instance(worker, k, ro);
    EXPECT_TRUE(r.passed()) << r.failure_text() << "\n" << nlohmann::json(r).dump(2);
    EXPECT_FALSE(r.outputs.empty());
    EXPECT_EQ(r.unwritten(), 0u);
    for (const auto& o : r.outputs) EXPECT_GT(o.comparison.checked, 0u) << o.name;
    EXPECT_EQ(r.time_ms.count, 5u);
    EXPECT_GT(r.time_ms.median, 0);
    EXPECT_LE(r.time_ms.min, r.time_ms.median);
    EXPECT_LE(r.time_ms.median, r.time_ms.max);
    // The rates are the spec's counts over the median, nothing else.
    EXPECT_NEAR(r.gbps, r.min_bytes / (r.time_ms.median * 1e-3) * 1e-9, 1e-6 * r.gbps);
    EXPECT_NEAR(r.tflops, r.flops / (r.time_ms.median * 1e-3) * 1e-12, 1e-6 * r.tflops + 1e-12);
    EXPECT_FALSE(r.device.empty());
    EXPECT_GT(r.attributes.registers, 0);
  }
}

// cuBLAS on the same buffers computes the same GEMM: the two outputs agree to 16-bit rounding, each timed.
TEST(BenchGpu, WgmmaVsCublasInTheSameWorker) {
  TL_REQUIRE_GPU();
  if (query_device(0).value().cc_major < 9) GTEST_SKIP() << "gemm.wgmma needs sm_90";
  WorkerClient worker(worker_options());
  RunOptions ro;
  ro.timing.repeat = 5;
  ro.timing.warmup = 1;
  ro.vs = "cublas";
  PreparedKernel k = prepare("gemm.wgmma", {{"M", "1024"}, {"N", "1024"}, {"K", "1024"}});
  ASSERT_NE(k.instance.spec, nullptr);
  RunRecord r = run_instance(worker, k, ro);
  ASSERT_TRUE(r.passed()) << r.failure_text();
  ASSERT_TRUE(r.baseline.has_value());
  ASSERT_TRUE(r.baseline->error.empty()) << r.baseline->error;
  EXPECT_EQ(r.baseline->name, "cublas");
  EXPECT_LT(r.baseline->rel_vs_kernel, 1e-2);
  EXPECT_EQ(r.baseline->time_ms.count, 5u);
  EXPECT_GT(r.baseline->time_ms.median, 0);
  nlohmann::json j = r;
  EXPECT_GT(j["baseline"]["tflops"].get<double>(), 0);
}

// cuDNN's SDPA on the same Q, K, V computes the same attention (GQA, causal with seq_q < seq_k: bottom-right), each
// timed, and the same gradients from the same O, dO and LSE; varlen sequences too. Skips where no libcudnn can be
// opened.
TEST(BenchGpu, AttentionVsCudnnInTheSameWorker) {
  TL_REQUIRE_GPU();
  WorkerClient worker(worker_options());
  RunOptions ro;
  ro.timing.repeat = 5;
  ro.timing.warmup = 1;
  ro.vs = "cudnn";
  for (const char* kernel : {"attn.fwd.mma", "attn.fwd.wgmma"}) {
    SCOPED_TRACE(kernel);
    if (std::string(kernel) == "attn.fwd.wgmma" && query_device(0).value().cc_major < 9) continue;
    PreparedKernel k = prepare(kernel, {{"batch", "2"}, {"seq_q", "384"}, {"seq_k", "512"}, {"heads", "8"},
                                        {"heads_kv", "2"}, {"dim", "128"}, {"causal", "true"}});
    ASSERT_NE(k.instance.spec, nullptr);
    RunRecord r = run_instance(worker, k, ro);
    ASSERT_TRUE(r.passed()) << r.failure_text();
    ASSERT_TRUE(r.baseline.has_value());
    if (r.baseline->error.rfind("cudnn not found", 0) == 0) GTEST_SKIP() << r.baseline->error;
    ASSERT_TRUE(r.baseline->error.empty()) << r.baseline->error;
    EXPECT_EQ(r.baseline->name, "cudnn");
    EXPECT_LT(r.baseline->rel_vs_kernel, 2e-2);  // two bf16 roundings of a weighted mean of V in [-1, 1]
    EXPECT_EQ(r.baseline->time_ms.count, 5u);
    EXPECT_GT(r.baseline->time_ms.median, 0);
  }
  // The backward: cuDNN's dQ from our Q, K, V, O, dO and LSE (GQA, causal bottom-right).
  PreparedKernel bwd = prepare("attn.bwd.mma", {{"batch", "2"}, {"seq_q", "384"}, {"seq_k", "512"}, {"heads", "8"},
                                                {"heads_kv", "2"}, {"dim", "128"}, {"causal", "true"}});
  RunRecord rb = run_instance(worker, bwd, ro);
  ASSERT_TRUE(rb.passed()) << rb.failure_text();
  ASSERT_TRUE(rb.baseline.has_value());
  EXPECT_TRUE(rb.baseline->error.empty()) << rb.baseline->error;
  EXPECT_LT(rb.baseline->rel_vs_kernel, 2e-2);
  EXPECT_EQ(rb.baseline->time_ms.count, 5u);
  // Varlen: cuDNN's padding mask and ragged offsets over our packed sequences (causal: every sequence has keys);
  // not causal, the second of three sequences has none, which cuDNN's forward cannot compare (refused, named).
  PreparedKernel v = prepare("attn.fwd.mma", {{"batch", "3"}, {"seq_q", "256"}, {"varlen", "true"}, {"causal", "true"}});
  RunRecord rv = run_instance(worker, v, ro);
  ASSERT_TRUE(rv.passed()) << rv.failure_text();
  ASSERT_TRUE(rv.baseline.has_value());
  EXPECT_TRUE(rv.baseline->error.empty()) << rv.baseline->error;
  EXPECT_LT(rv.baseline->rel_vs_kernel, 2e-2);
  PreparedKernel e = prepare("attn.fwd.mma", {{"batch", "3"}, {"seq_q", "256"}, {"varlen", "true"}});
  RunRecord re = run_instance(worker, e, ro);
  EXPECT_TRUE(re.passed()) << re.failure_text();
  ASSERT_TRUE(re.baseline.has_value());
  EXPECT_EQ(re.baseline->error.rfind("cudnn cannot run this: sequence 1 has no keys", 0), 0u) << re.baseline->error;
}

TEST(BenchGpu, FaultThenTimeoutThenAPassingRunInTheSameClient) {
  TL_REQUIRE_GPU();
  WorkerClient worker(worker_options());
  RunOptions ro;
  ro.timing.repeat = 0;

  RunRecord oob = run_instance(worker, prepare("test.oob"), ro);
  ASSERT_TRUE(oob.failure.has_value()) << "test.oob wrote out of bounds and nothing was reported";
  EXPECT_EQ(oob.failure->code, ErrorCode::fault) << oob.failure->message;
  EXPECT_FALSE(oob.passed());

  RunOptions spin_options = ro;
  spin_options.timeout = 3000ms;
  const auto t0 = std::chrono::steady_clock::now();
  RunRecord spin = run_instance(worker, prepare("test.spin"), spin_options);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(spin.failure.has_value()) << "test.spin never returns, yet the run finished";
  EXPECT_EQ(spin.failure->code, ErrorCode::timeout) << spin.failure->message;
  EXPECT_LT(waited, 30.0) << "the watchdog took far longer than its 3 s limit";

  RunRecord ok = run_instance(worker, prepare("copy", {{"n", "100003"}}), ro);
  EXPECT_TRUE(ok.passed()) << ok.failure_text();
  EXPECT_GE(worker.starts(), 2) << "a worker that faulted or hung must have been replaced";
}

}  // namespace
}  // namespace tl

namespace tl {
namespace {

// A sweep's reference cache: the float64 reference is computed once per problem, configs of that problem reuse it
// and still pass (and a wrong kernel would still fail: the comparison runs on every run's own samples).
TEST(BenchGpu, ReferenceCacheComputesTheReferenceOncePerProblem) {
  TL_REQUIRE_GPU();
  KernelSpec counted = *library_registry().find("gemm.simt").value();
  counted.name = "gemm.simt.counted";
  int calls = 0;
  counted.reference_thread_safe = false;  // one call per computation (threaded, it is one call per chunk)
  ReferenceFn inner = counted.reference;
  counted.reference = [&](const Values& p, const ReferenceInputs& in, const std::string& out,
                          const std::vector<std::int64_t>& idx) {
    ++calls;
    return inner(p, in, out, idx);
  };
  Registry reg;
  ASSERT_TRUE(reg.add(counted).ok());
  const DeviceLimits limits = limits_for_device(query_device(0).value());
  WorkerClient worker(worker_options());
  ReferenceCache cache;
  RunOptions ro;
  ro.timing.repeat = 2;
  ro.timing.warmup = 1;
  ro.reference_cache = &cache;
  auto run = [&](std::map<std::string, std::string> problem, std::map<std::string, std::string> config) {
    auto k = prepare_kernel(reg, jit(), "gemm.simt.counted", problem, config, limits);
    EXPECT_TRUE(k.ok()) << k.status().message();
    return k.ok() ? run_instance(worker, *k, ro) : RunRecord{};
  };
  const std::map<std::string, std::string> p1 = {{"M", "512"}, {"N", "512"}, {"K", "256"}};
  EXPECT_TRUE(run(p1, {}).passed());
  EXPECT_TRUE(run(p1, {{"block_M", "64"}, {"block_N", "64"}}).passed());
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(run({{"M", "256"}, {"N", "512"}, {"K", "256"}}, {}).passed());
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace tl

namespace tl {
namespace {

// [SECTION] bench --timer

// The three timers on a 1 MiB copy: each run passes and says its timer. CUPTI's time is the kernel's own, which
// the events' (the launch's latency added) cannot undercut; a graph replay's share is the kernel back to back on a
// warm L2, which cannot take longer either.
TEST(BenchGpu, TheThreeTimersTimeTheSameCopy) {
  TL_REQUIRE_GPU();
  WorkerClient worker(worker_options());
  PreparedKernel k = prepare("copy", {{"n", "262144"}});
  std::map<Timer, RunRecord> r;
  for (Timer t : {Timer::events, Timer::cupti, Timer::graph}) {
    RunOptions ro;
    ro.timing.repeat = 50;
    ro.timing.warmup = 5;
    ro.timing.timer = t;
    r[t] = run_instance(worker, k, ro);
    ASSERT_TRUE(r[t].passed()) << timer_name(t) << ": " << r[t].failure_text();
    EXPECT_EQ(r[t].timer, t);
    EXPECT_EQ(r[t].time_ms.count, 50u) << timer_name(t);
    EXPECT_GT(r[t].time_ms.median, 0) << timer_name(t);
  }
  EXPECT_EQ(r[Timer::events].graph_launches, 0);
  EXPECT_GT(r[Timer::graph].graph_launches, 1) << "a microsecond kernel gets many launches per graph";
  EXPECT_LE(r[Timer::cupti].time_ms.median, r[Timer::events].time_ms.median * 1.05);
  EXPECT_LE(r[Timer::graph].time_ms.median, r[Timer::events].time_ms.median * 1.05);
  std::printf("copy 1 MiB: events %.2f us, cupti %.2f us, graph %.2f us (%d launches per graph); libcupti: %s\n",
              r[Timer::events].time_ms.median * 1e3, r[Timer::cupti].time_ms.median * 1e3,
              r[Timer::graph].time_ms.median * 1e3, r[Timer::graph].graph_launches, cupti_library().path.c_str());
}

// cuBLAS is timed by the kernel's timer: its kernels by CUPTI, its calls captured into the same graph size.
TEST(BenchGpu, TheBaselineIsTimedByTheSameTimer) {
  TL_REQUIRE_GPU();
  if (query_device(0).value().cc_major < 9) GTEST_SKIP() << "gemm.wgmma needs sm_90";
  WorkerClient worker(worker_options());
  PreparedKernel k = prepare("gemm.wgmma", {{"M", "256"}, {"N", "256"}, {"K", "256"}});
  for (Timer t : {Timer::cupti, Timer::graph}) {
    RunOptions ro;
    ro.timing.repeat = 5;
    ro.timing.warmup = 1;
    ro.timing.timer = t;
    if (t == Timer::graph) ro.timing.graph_launches = 16;
    ro.vs = "cublas";
    RunRecord r = run_instance(worker, k, ro);
    ASSERT_TRUE(r.passed()) << timer_name(t) << ": " << r.failure_text();
    EXPECT_EQ(r.graph_launches, t == Timer::graph ? 16 : 0);
    ASSERT_TRUE(r.baseline.has_value());
    EXPECT_TRUE(r.baseline->error.empty()) << timer_name(t) << ": " << r.baseline->error;
    EXPECT_EQ(r.baseline->time_ms.count, 5u) << timer_name(t);
    EXPECT_GT(r.baseline->time_ms.median, 0) << timer_name(t);
  }
}

// Without libcupti the cupti timer refuses the run naming it (the worker looks where the variable says), and the
// same worker then times with events.
TEST(BenchGpu, TheCuptiTimerWithoutLibcuptiIsRefusedNamingIt) {
  TL_REQUIRE_GPU();
  setenv(kCuptiLibraryEnv, "/nonexistent/libcupti.so.13", 1);  // in the environment of the worker started below
  WorkerClient worker(worker_options());
  PreparedKernel k = prepare("copy", {{"n", "262144"}});
  RunOptions ro;
  ro.timing.repeat = 3;
  ro.timing.timer = Timer::cupti;
  RunRecord r = run_instance(worker, k, ro);
  ro.timing.timer = Timer::events;
  RunRecord after = run_instance(worker, k, ro);
  unsetenv(kCuptiLibraryEnv);
  ASSERT_TRUE(r.failure.has_value());
  EXPECT_EQ(r.failure->code, ErrorCode::unsupported) << r.failure->message;
  EXPECT_NE(r.failure->message.find("cupti not found: TL_CUPTI_LIBRARY=/nonexistent/libcupti.so.13"), std::string::npos)
      << r.failure->message;
  EXPECT_TRUE(after.passed()) << after.failure_text();
  EXPECT_EQ(worker.starts(), 1) << "a refused timer is no reason to restart the worker";
}

}  // namespace
}  // namespace tl
