// GPU: every library kernel, compiled through the JIT and run from its spec in the worker (run_instance, the path
// of `tilelab bench`), matches its float64 reference at every output position, at sizes that are not multiples of
// its tiles.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "library.hpp"
#include "runtime/bench.hpp"
#include "runtime/worker.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/tilelab_exe.hpp"

namespace tl {
namespace {

using namespace std::chrono_literals;

struct Case {
  std::string kernel;
  std::map<std::string, std::string> problem, config;
};

void run_case(const Case& c) {
  SCOPED_TRACE(c.kernel);
  static Jit jit(kernel_sources().value());
  static WorkerClient worker([] {
    WorkerOptions o;
    o.executable = test::tilelab_exe();
    o.timeout = 60000ms;
    return o;
  }());
  auto prepared = prepare_kernel(library_registry(), jit, c.kernel, c.problem, c.config,
                                 limits_for_device(query_device(0).value()));
  ASSERT_TRUE(prepared.ok()) << prepared.status().message();
  SCOPED_TRACE(prepared->instance.name_expression + " " + prepared->instance.problem.to_string());
  RunOptions ro;
  ro.timing.warmup = 0;
  ro.timing.repeat = 1;
  ro.max_samples = 0;  // every output position against the reference
  const RunRecord r = run_instance(worker, *prepared, ro);
  EXPECT_TRUE(r.passed()) << r.failure_text() << "\n" << nlohmann::json(r).dump(2);
  EXPECT_EQ(r.unwritten(), 0u);
  for (const OutputCheck& o : r.outputs) {
    std::uint64_t numel = 1;
    for (auto d : o.shape) numel *= static_cast<std::uint64_t>(d);
    EXPECT_EQ(o.comparison.checked, numel) << o.name << ": not every position was checked";
  }
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

// attn.fwd.mma over the matrix: lengths not multiples of any block, GQA ratios 1/4/8, causal on and off
// (causal with seq_q < seq_k checks the bottom-right alignment), both head dims and dtypes, several configs.
TEST(LibraryGpu, AttentionMatchesItsReference) {
  TL_REQUIRE_GPU();
  const std::vector<std::map<std::string, std::string>> configs = {
      {}, {{"block_M", "128"}, {"block_N", "128"}, {"warps", "8"}, {"num_stages", "3"}},
      {{"block_M", "128"}, {"block_N", "32"}, {"warps", "8"}, {"num_stages", "4"}}};
  int n = 0;
  for (const char* dim : {"64", "128"})
    for (const char* ratio : {"1", "4", "8"})
      for (const char* causal : {"false", "true"}) {
        const int heads = 8, heads_kv = heads / std::stoi(ratio);
        const bool c = std::string(causal) == "true";
        std::map<std::string, std::string> p = {{"batch", "2"}, {"seq_q", c ? "131" : "200"}, {"seq_k", "333"},
                                                {"heads", std::to_string(heads)}, {"heads_kv", std::to_string(heads_kv)},
                                                {"dim", dim}, {"causal", causal}, {"dtype", n % 2 ? "f16" : "bf16"}};
        run_case({"attn.fwd.mma", p, configs[n++ % configs.size()]});
      }
  // seq_q == seq_k causal (the plain lower triangle), one query row, and a single key.
  run_case({"attn.fwd.mma", {{"batch", "1"}, {"seq_q", "257"}, {"seq_k", "257"}, {"heads", "4"}, {"heads_kv", "1"}, {"causal", "true"}}, {}});
  run_case({"attn.fwd.mma", {{"batch", "3"}, {"seq_q", "1"}, {"seq_k", "1000"}, {"heads", "2"}, {"heads_kv", "2"}, {"causal", "true"}}, {}});
  run_case({"attn.fwd.mma", {{"batch", "1"}, {"seq_q", "70"}, {"seq_k", "1"}, {"heads", "2"}, {"heads_kv", "2"}, {"dim", "64"}}, {}});
  // varlen (cu_seqlens): lengths drawn per sequence, one sequence without keys when not causal
  for (const char* causal : {"false", "true"})
    for (const char* ratio : {"1", "4"})
      run_case({"attn.fwd.mma", {{"batch", "6"}, {"seq_q", "300"}, {"seq_k", "420"}, {"heads", "8"},
                                 {"heads_kv", std::to_string(8 / std::stoi(ratio))}, {"causal", causal}, {"varlen", "true"}},
                {{"block_M", "128"}, {"block_N", "128"}, {"warps", "8"}}});
}

}  // namespace
}  // namespace tl
