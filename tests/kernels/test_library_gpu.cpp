// GPU: every library kernel, compiled through the JIT and run from its spec in the worker (run_instance, the path
// of `tilelab bench`), matches its float64 reference at every output position, at sizes that are not multiples of
// its tiles.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "library/library.hpp"
#include "runtime/measure/bench.hpp"
#include "runtime/worker/client.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/tilelab_exe.hpp"

namespace tl {
namespace {

using namespace std::chrono_literals;

struct Case {
  std::string kernel;
  std::map<std::string, std::string> problem, config;
};

// repeat > 1: that many timed launches after the check (sampled outputs then: the whole-output check of a large
// problem is slow on the CPU).
void run_case(const Case& c, int repeat = 1) {
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
  ro.timing.repeat = repeat;
  if (repeat == 1) ro.max_samples = 0;  // every output position against the reference
  const RunRecord r = run_instance(worker, *prepared, ro);
  EXPECT_TRUE(r.passed()) << r.failure_text() << "\n" << nlohmann::json(r).dump(2);
  EXPECT_EQ(r.unwritten(), 0u);
  for (const OutputCheck& o : r.outputs) {
    if (repeat > 1) break;
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

// Each problem once, the kernel's configs taken in turn; a config a problem refuses (can_implement: e.g. block_N=176
// spills under the causal mask at dim 128) gives way to the next one.
void run_attention(const std::string& kernel, const std::vector<std::map<std::string, std::string>>& configs) {
  const KernelSpec* spec = library_registry().find(kernel).value();
  const DeviceLimits limits = limits_for_device(query_device(0).value());
  std::size_t n = 0;
  for (const auto& p : attention_problems()) {
    bool ran = false;
    for (std::size_t tries = 0; tries < configs.size() && !ran; ++tries) {
      const auto& config = configs[n++ % configs.size()];
      if (!instantiate(*spec, p, config, limits).ok()) continue;
      run_case({kernel, p, config});
      ran = true;
    }
    EXPECT_TRUE(ran) << kernel << ": every config refused a test problem";
  }
}

// mla.sparse_prefill's dynamic token queue over many launches of one problem whose token 0 has no entries
// (topk_length): a consumer warp that read the token slot after the producer had moved it on split its warpgroup over
// two tokens and hung the kernel within 100 launches on an H100 (session 39; mla_consumer.cuh frees an empty
// request's Q only after the consumers' row-sum barrier). schedule=dynamic by name: schedule=auto runs this problem
// (tokens of differing lengths, 4.5 a CTA) static since sprefill9.
TEST(LibraryGpu, SparsePrefillTokenQueueSurvivesRepeatedLaunches) {
  TL_REQUIRE_GPU();
  if (query_device(0).value().cc_major < 9) GTEST_SKIP() << "mla.sparse_prefill needs sm_90";
  run_case({"mla.sparse_prefill",
            {{"seq_q", "300"}, {"heads", "128"}, {"seq_kv", "4096"}, {"topk", "2048"}, {"topk_length", "true"}},
            {{"schedule", "dynamic"}}},
           100);
}

TEST(LibraryGpu, AttentionMatchesItsReference) {
  TL_REQUIRE_GPU();
  run_attention("attn.fwd.mma", {{}, {{"block_M", "128"}, {"block_N", "128"}, {"warps", "8"}, {"num_stages", "3"}},
                                 {{"block_M", "128"}, {"block_N", "32"}, {"warps", "8"}, {"num_stages", "4"}}});
}

TEST(LibraryGpu, AttentionWgmmaMatchesItsReference) {
  TL_REQUIRE_GPU();
  if (query_device(0).value().cc_major < 9) GTEST_SKIP() << "attn.fwd.wgmma needs sm_90";
  run_attention("attn.fwd.wgmma", {{}, {{"block_N", "176"}, {"epilogue", "direct"}, {"q_stages", "1"}},
                                   {{"block_M", "64"}, {"ping_pong", "false"}, {"num_stages", "3"}, {"q_stages", "1"}},
                                   {{"block_N", "64"}, {"num_stages", "3"}}, {{"ping_pong", "false"}}, {{"persistent", "false"}},
                                   {{"epilogue", "direct"}, {"section", "0"}}, {{"epilogue", "smem"}},
                                   {{"epilogue", "tma"}, {"block_M", "64"}, {"ping_pong", "false"}}, {{"q_stages", "1"}}});
}

}  // namespace
}  // namespace tl
