// attn.fwd.mma without a GPU: configs compile (NVRTC, sm_90a and sm_80) without spills, can_implement refuses with
// reasons, the float64 reference agrees with a direct computation, FLOPs/bytes, and row-wise output sampling.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "library.hpp"
#include "runtime/cache.hpp"

namespace tl {
namespace {
namespace fs = std::filesystem;
using KV = std::map<std::string, std::string>;

const KernelSpec& attn() { return *library_registry().find("attn.fwd.mma").value(); }

Jit& jit() {
  static const std::string dir = (fs::temp_directory_path() / ("tl_test_attention_" + std::to_string(::getpid()))).string();
  static KernelCache cache(dir);
  static Jit j(kernel_sources().value(), &cache);
  static struct Cleanup {
    ~Cleanup() { fs::remove_all(dir); }
  } cleanup;
  return j;
}

TEST(Attention, ConfigsCompileForHopperAndAmpereWithoutSpilling) {
  const std::vector<std::pair<KV, KV>> cases = {
      {{}, {}},
      {{{"causal", "true"}, {"dtype", "f16"}}, {}},
      {{{"dim", "64"}, {"heads_kv", "2"}}, {{"block_M", "128"}, {"block_N", "64"}, {"warps", "4"}}},
      {{{"dim", "128"}, {"causal", "true"}}, {{"block_M", "128"}, {"block_N", "128"}, {"warps", "8"}, {"num_stages", "3"}}},
      {{{"dim", "64"}, {"causal", "true"}, {"dtype", "f16"}}, {{"block_N", "32"}, {"warps", "2"}, {"num_stages", "4"}}},
  };
  for (const std::string arch : {"sm_90a", "sm_80"}) {
    for (const auto& [problem, config] : cases) {
      auto inst = instantiate(attn(), problem, config, limits_for_arch(arch));
      if (arch == "sm_80" && !inst.ok()) continue;  // 3 stages of 128-row tiles exceed sm_80's shared memory
      ASSERT_TRUE(inst.ok()) << inst.status().message();
      SCOPED_TRACE(arch + " " + inst->name_expression);
      JitOptions opt;
      opt.arch = arch;
      auto k = jit().compile(compile_request(*inst, opt));
      ASSERT_TRUE(k.ok()) << k.status().message();
      EXPECT_GT(k->resources.registers, 0);
      EXPECT_EQ(k->resources.spill_store_bytes, 0);
      EXPECT_LE(k->resources.registers * static_cast<int>(inst->launch.block.x), limits_for_arch(arch).regs_per_block);
    }
  }
}

void expect_refused(const KV& problem, const KV& config, const std::string& arch, const std::vector<std::string>& words) {
  auto inst = instantiate(attn(), problem, config, limits_for_arch(arch));
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(inst.status().code(), ErrorCode::unsupported) << inst.status().message();
  for (const auto& w : words) EXPECT_NE(inst.status().message().find(w), std::string::npos) << inst.status().message();
}

TEST(Attention, CanImplementRefusesWithReasons) {
  expect_refused({{"heads", "16"}, {"heads_kv", "3"}}, {}, "sm_90a", {"heads_kv=3", "heads=16", "divisor"});
  expect_refused({{"causal", "true"}, {"seq_q", "300"}, {"seq_k", "200"}}, {}, "sm_90a", {"seq_q=300", "seq_k=200"});
  expect_refused({}, {{"block_M", "64"}, {"warps", "8"}}, "sm_90a", {"multiple of 16 * warps"});
  // 32 rows per warp: 2 * (64 + 32) = 192 accumulators
  expect_refused({}, {{"block_M", "128"}, {"block_N", "64"}, {"warps", "4"}}, "sm_90a", {"192", "spills"});
  // (128 + 2*3*128) * 128 * 2 = 229376 bytes: fits sm_90a's 232448, not sm_80's 166912
  const KV big = {{"block_M", "128"}, {"block_N", "128"}, {"warps", "8"}, {"num_stages", "3"}};
  EXPECT_TRUE(instantiate(attn(), {}, big, limits_for_arch("sm_90a")).ok());
  expect_refused({}, big, "sm_80", {"229376", "shared memory", "num_stages"});
}

TEST(Attention, GeometryFlopsAndBytes) {
  const KV p = {{"batch", "3"}, {"seq_q", "1000"}, {"seq_k", "1500"}, {"heads", "8"}, {"heads_kv", "2"}, {"dim", "64"}};
  auto k = instantiate(attn(), p, {{"block_M", "128"}, {"warps", "8"}}, limits_for_arch("sm_90a")).value();
  EXPECT_EQ(k.launch.grid.x, 8u);  // ceil(1000 / 128)
  EXPECT_EQ(k.launch.grid.y, 8u);
  EXPECT_EQ(k.launch.grid.z, 3u);
  EXPECT_EQ(k.launch.block.x, 256u);
  EXPECT_DOUBLE_EQ(k.flops, 4.0 * 3 * 8 * 1000 * 1500 * 64);
  EXPECT_DOUBLE_EQ(k.min_bytes, 2.0 * 3 * 64 * (2 * 1000 * 8 + 2 * 1500 * 2) + 4.0 * 3 * 8 * 1000);
  KV pc = p;
  pc["causal"] = "true";
  EXPECT_DOUBLE_EQ(instantiate(attn(), pc, {}, limits_for_arch("sm_90a")).value().flops, k.flops / 2);
  EXPECT_EQ(k.args.at(1).shape, (std::vector<std::int64_t>{3, 1500, 2, 64}));  // K
  EXPECT_EQ(k.args.at(4).shape, (std::vector<std::int64_t>{3, 8, 1000}));      // LSE
  EXPECT_EQ(k.args.at(4).dtype, DType::f32);
}

ReferenceInputs inputs_of(const KernelInstance& k) {
  ReferenceInputs in;
  for (const auto& a : k.args) {
    if (a.kind == ArgSpec::Kind::scalar) in.scalars[a.name] = a.value;
    else if (a.role != ArgRole::out) in.tensors[a.name] = make_host_tensor(a);
  }
  return in;
}

// A tiny GQA problem computed here the textbook way (scores, masked softmax, weighted sum), independently of the
// spec's row cache and index arithmetic.
TEST(Attention, ReferenceMatchesADirectComputation) {
  const int B = 2, SQ = 3, SK = 5, H = 4, HKV = 2, D = 64;
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    const KV p = {{"batch", "2"}, {"seq_q", "3"}, {"seq_k", "5"}, {"heads", "4"}, {"heads_kv", "2"}, {"dim", "64"},
                  {"causal", causal ? "true" : "false"}};
    auto k = instantiate(attn(), p, {}, limits_for_arch("sm_90a")).value();
    auto in = inputs_of(k);
    const auto &Q = in.tensor("Q"), &K = in.tensor("K"), &V = in.tensor("V");
    std::vector<std::int64_t> all_o(B * SQ * H * D), all_l(B * H * SQ);
    for (std::size_t i = 0; i < all_o.size(); ++i) all_o[i] = static_cast<std::int64_t>(i);
    for (std::size_t i = 0; i < all_l.size(); ++i) all_l[i] = static_cast<std::int64_t>(i);
    auto O = k.spec->reference(k.problem, in, "O", all_o).value();
    auto L = k.spec->reference(k.problem, in, "LSE", all_l).value();
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int s = 0; s < SQ; ++s) {
          const int hk = h / 2;
          double score[SK], z = 0;
          int seen = 0;
          for (int j = 0; j < SK; ++j) {
            if (causal && j > s + SK - SQ) continue;  // bottom-right: row s sees keys 0 .. s + 2
            double dot = 0;
            for (int c = 0; c < D; ++c) dot += Q.at(((b * SQ + s) * H + h) * D + c) * K.at(((b * SK + j) * HKV + hk) * D + c);
            score[seen++] = dot / 8.0;  // 1 / sqrt(64)
          }
          EXPECT_EQ(seen, causal ? s + 3 : SK);
          for (int j = 0; j < seen; ++j) z += std::exp(score[j]);
          EXPECT_NEAR(L[(b * H + h) * SQ + s], std::log(z), 1e-12);
          for (int c = 0; c < D; ++c) {
            double o = 0;
            for (int j = 0; j < seen; ++j) o += std::exp(score[j]) / z * V.at(((b * SK + j) * HKV + hk) * D + c);
            EXPECT_NEAR(O[((b * SQ + s) * H + h) * D + c], o, 1e-12);
          }
        }
  }
  EXPECT_FALSE(attn().reference(instantiate(attn(), {{"batch", "1"}, {"seq_q", "2"}, {"seq_k", "2"}}, {}, limits_for_arch("sm_90a")).value().problem,
                                {}, "X", {}).ok());
}

TEST(Attention, OutputsAreSampledInWholeRows) {
  const KV p = {{"batch", "2"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "16"}, {"dim", "128"}};
  auto k = instantiate(attn(), p, {}, limits_for_arch("sm_90a")).value();
  const OutputSampling s = k.spec->sampling(k.problem, "O");
  EXPECT_EQ(s.unit, 128u);
  const std::uint64_t count = 2ull * 4096 * 16 * 128;
  auto pos = sample_positions(count, s.max_samples, 0x5EED, s.unit);
  ASSERT_EQ(pos.size() % 128, 0u);
  EXPECT_LE(pos.size(), s.max_samples);
  std::set<std::uint64_t> rows;
  for (std::size_t i = 0; i < pos.size(); i += 128) {
    EXPECT_EQ(pos[i] % 128, 0u);
    for (std::size_t e = 0; e < 128; ++e) EXPECT_EQ(pos[i + e], pos[i] + e);
    rows.insert(pos[i] / 128);
  }
  EXPECT_EQ(rows.size(), pos.size() / 128);  // distinct rows
  EXPECT_TRUE(rows.count(0) && rows.count(count / 128 - 1));  // the first and last rows, as for single elements
  // Small outputs are checked whole, unit or not.
  EXPECT_EQ(sample_positions(256, 1024, 1, 128).size(), 256u);
}

}  // namespace
}  // namespace tl
