// attn.decode without a GPU: configs compile (NVRTC, sm_90a and sm_80) without spills, can_implement refuses with
// reasons, the split covers every cache and fills the GPU once, the plan's warp grid and combine area, the float64
// reference against a textbook computation over the cache layout, FLOPs/bytes, and the layouts it exposes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "attention/attn_decode_plan.hpp"
#include "library/library.hpp"
#include "tests/support/scratch_jit.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {
using KV = std::map<std::string, std::string>;

const KernelSpec& decode() { return *library_registry().find("attn.decode").value(); }
const DeviceLimits& hopper() {
  static const DeviceLimits l = limits_for_arch("sm_90a");
  return l;
}

TEST(AttnDecode, ConfigsCompileForHopperAndAmpereWithoutSpilling) {
  const std::vector<std::pair<KV, KV>> cases = {
      {{}, {}},
      {{{"seq_q", "4"}, {"heads", "64"}, {"heads_kv", "8"}, {"dtype", "f16"}}, {}},              // 32 rows
      {{{"seq_q", "4"}, {"heads", "16"}, {"heads_kv", "1"}, {"dim", "64"}}, {{"block_N", "128"}}},  // 64 rows
      {{{"heads_kv", "32"}, {"causal", "false"}}, {{"block_N", "128"}, {"warps", "8"}, {"num_stages", "2"}}},
  };
  for (const std::string arch : {"sm_90a", "sm_80"})
    for (const auto& [problem, config] : cases) {
      auto inst = instantiate(decode(), problem, config, limits_for_arch(arch));
      ASSERT_TRUE(inst.ok()) << inst.status().message();
      SCOPED_TRACE(arch + " " + inst->name_expression);
      JitOptions opt;
      opt.arch = arch;
      auto k = test::scratch_jit().compile(compile_request(*inst, opt));
      ASSERT_TRUE(k.ok()) << k.status().message();
      EXPECT_EQ(k->resources.spill_store_bytes, 0);
      EXPECT_LE(k->resources.registers * static_cast<int>(inst->launch.block.x), limits_for_arch(arch).regs_per_block);
    }
}

void expect_refused(const KV& problem, const KV& config, const std::vector<std::string>& words) {
  auto inst = instantiate(decode(), problem, config, hopper());
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(inst.status().code(), ErrorCode::unsupported) << inst.status().message();
  for (const auto& w : words) EXPECT_NE(inst.status().message().find(w), std::string::npos) << inst.status().message();
}

TEST(AttnDecode, CanImplementRefusesWithReasons) {
  for (const char* dim : {"96", "192"}) {  // the schema's one_of: refused before any plan, naming what it takes
    auto inst = instantiate(decode(), {{"dim", dim}}, {}, hopper());
    ASSERT_FALSE(inst.ok());
    EXPECT_EQ(inst.status().code(), ErrorCode::invalid_argument);
    EXPECT_NE(inst.status().message().find(std::string("dim=") + dim), std::string::npos) << inst.status().message();
    EXPECT_NE(inst.status().message().find("one of 64, 128"), std::string::npos) << inst.status().message();
  }
  expect_refused({{"heads", "32"}, {"heads_kv", "5"}}, {}, {"heads_kv=5", "heads=32", "divisor"});
  // 4 query rows: one row warp, so 4 warps split 32 keys into 8 each.
  expect_refused({}, {{"block_N", "32"}}, {"block_N=32", "fewer than 16 keys", "raise block_N"});
  // 64 rows (16 heads per kv head x 4 positions): four row warps, so 32 keys per tile is 32 per warp and runs.
  EXPECT_TRUE(instantiate(decode(), {{"seq_q", "4"}, {"heads", "16"}, {"heads_kv", "1"}}, {{"block_N", "32"}}, hopper()).ok());
  // Q (16 x 128) + 4 stages of 128-key K and V tiles + the 16-byte flag: 4096 + 4 * 65536 + 16 bytes.
  expect_refused({}, {{"block_N", "128"}, {"num_stages", "4"}}, {"266256", "shared memory", "num_stages"});
  auto long_q = instantiate(decode(), {{"seq_q", "5"}}, {}, hopper());  // the schema's range: 1 to 4
  ASSERT_FALSE(long_q.ok());
  EXPECT_NE(long_q.status().message().find("seq_q=5: out of range 1..4"), std::string::npos) << long_q.status().message();
}

// The plan's warp grid covers the warps and the tile's keys, and the combine area fits the shared memory.
TEST(AttnDecode, PlanWarpGridAndCombineArea) {
  for (int bm : {16, 32, 64, 128})
    for (int warps : {4, 8})
      for (int bn : {32, 64, 128})
        for (int dim : {64, 128}) {
          if (bm / 16 > warps) continue;
          const AttnDecodePlan p = make_plan(AttnDecodeConfig{.dim = dim, .block_M = bm, .block_N = bn, .warps = warps});
          SCOPED_TRACE(std::to_string(bm) + " " + std::to_string(warps) + " " + std::to_string(bn) + " " + std::to_string(dim));
          EXPECT_EQ(p.warps_M * p.warps_N, warps);
          EXPECT_EQ(p.warp_keys * p.warps_N, bn);
          EXPECT_EQ(p.o_part.size(), p.warps_N * bm * dim);
          EXPECT_EQ(p.o_part(1, 0) % 4, 0);  // rows start 16-byte aligned: the combine reads float4
          EXPECT_GE(p.ml_offset, 4 * p.o_part.cosize());
          EXPECT_GE(p.flag_offset, p.ml_offset + 4 * 2 * p.warps_N * bm);
          EXPECT_GE(p.flag_offset, p.tile.bytes);  // the key loop's tiles are below the flag
          EXPECT_GE(p.bytes, p.flag_offset + 4);
        }
}

// The splits cover each cache exactly once in whole tiles and, in auto mode, fill the SMs' resident CTAs at most once
// (one split when the (request, kv head, row tile) pairs alone fill them).
TEST(AttnDecode, SplitsCoverTheCacheAndFillTheGpuOnce) {
  struct Case {
    KV problem, config;
  };
  const std::vector<Case> cases = {
      {{{"batch", "1"}, {"seq_k", "65536"}, {"heads_kv", "8"}}, {}},
      {{{"batch", "8"}, {"seq_k", "16384"}, {"seq_q", "4"}, {"heads", "64"}, {"heads_kv", "8"}}, {}},
      {{{"batch", "32"}, {"seq_k", "4096"}}, {}},
      {{{"batch", "32"}, {"seq_k", "4096"}, {"heads_kv", "8"}}, {}},
      {{{"batch", "1"}, {"seq_k", "37"}}, {}},
      {{{"batch", "2"}, {"seq_k", "5001"}}, {{"num_splits", "3"}}},
      {{{"batch", "2"}, {"seq_k", "100"}}, {{"num_splits", "7"}}},  // 2 tiles: at most 2 splits
  };
  for (const auto& c : cases) {
    auto k = instantiate(decode(), c.problem, c.config, hopper()).value();
    SCOPED_TRACE(k.name_expression + " grid " + std::to_string(k.launch.grid.x));
    const std::int64_t sk = k.problem.integer("seq_k"), bn = k.config.integer("block_N");
    std::int64_t chunk = -1;
    for (const auto& a : k.args)
      if (a.name == "chunk") chunk = static_cast<std::int64_t>(a.value);
    const std::int64_t splits = k.launch.grid.x;
    EXPECT_EQ(chunk % bn, 0);
    EXPECT_LT((splits - 1) * chunk, sk);
    EXPECT_GE(splits * chunk, sk);
    const std::int64_t pairs = std::int64_t{k.launch.grid.y} * k.launch.grid.z;
    EXPECT_EQ(k.launch.grid.z, static_cast<std::uint32_t>(k.problem.integer("batch")));
    if (k.config.integer("num_splits") == 0) {
      EXPECT_LE(splits * pairs, std::max<std::int64_t>(pairs, 4 * hopper().sm_count));
    } else {
      EXPECT_EQ(splits, std::min(k.config.integer("num_splits"), (sk + bn - 1) / bn));
    }
  }
  auto one = instantiate(decode(), {{"batch", "32"}, {"seq_k", "4096"}}, {}, hopper()).value();
  EXPECT_EQ(one.launch.grid.x, 1u);  // MHA: 1024 (request, kv head) pairs fill 132 SMs x 2 resident CTAs
  auto many = instantiate(decode(), {{"batch", "1"}, {"seq_k", "65536"}, {"heads_kv", "8"}}, {}, hopper()).value();
  // 8 kv heads, 2 CTAs of 102 KB per SM: 264 / 8 = 33 splits wanted, held to 16 (the auto maximum).
  EXPECT_EQ(many.launch.grid.x, 16u);
  // 32 rows of one kv head over a 4096-key cache: at most 4096 / (8 x 32) = 16 splits; over 1024 keys, 4.
  auto rows32 = instantiate(decode(), {{"batch", "1"}, {"seq_q", "4"}, {"heads", "64"}, {"heads_kv", "8"}, {"seq_k", "1024"}},
                            {}, hopper()).value();
  EXPECT_EQ(rows32.launch.grid.x, 4u);
  // Row tiles: the 4 positions x 64 / 8 heads = 32 rows of a kv head are one 32-row tile.
  auto rows = instantiate(decode(), {{"seq_q", "4"}, {"heads", "64"}, {"heads_kv", "8"}}, {}, hopper()).value();
  EXPECT_NE(rows.name_expression.find(".block_M = 32"), std::string::npos);
  EXPECT_EQ(rows.launch.grid.y, 8u);
}

ReferenceInputs inputs_of(const KernelInstance& k) {
  ReferenceInputs in;
  for (const auto& a : k.args) {
    if (a.kind == ArgSpec::Kind::scalar) in.scalars[a.name] = a.value;
    else if (a.role == ArgRole::in) in.tensors[a.name] = make_host_tensor(a);
  }
  return in;
}

// Small GQA problems the textbook way over the cache layout the kernel gets (k, v [b, s_k, h_kv, d], lengths from
// cache_seqlens): query s of request b sees keys j < len - s_q + s + 1 (causal) or j < len; a row without keys has
// O = 0 and LSE = -inf.
TEST(AttnDecode, ReferenceMatchesADirectComputation) {
  const int B = 4, SQ = 3, SK = 9, H = 4, HKV = 2, D = 64;
  for (bool causal : {false, true})
    for (bool ragged : {false, true}) {
      SCOPED_TRACE(std::string(causal ? "causal " : "full ") + (ragged ? "varlen, empty caches" : "dense"));
      const KV p = {{"batch", "4"}, {"seq_q", "3"}, {"seq_k", "9"}, {"heads", "4"}, {"heads_kv", "2"}, {"dim", "64"},
                    {"causal", causal ? "true" : "false"}, {"varlen", ragged ? "true" : "false"},
                    {"zero_lengths", ragged ? "true" : "false"}};
      auto k = instantiate(decode(), p, {}, hopper()).value();
      auto in = inputs_of(k);
      const auto &Q = in.tensor("Q"), &K = in.tensor("K"), &V = in.tensor("V"), &lens = in.tensor("cache_seqlens");
      std::vector<std::int64_t> all_o(B * SQ * H * D), all_l(B * H * SQ);
      for (std::size_t i = 0; i < all_o.size(); ++i) all_o[i] = static_cast<std::int64_t>(i);
      for (std::size_t i = 0; i < all_l.size(); ++i) all_l[i] = static_cast<std::int64_t>(i);
      auto O = k.spec->reference(k.problem, in, "O", all_o).value();
      auto L = k.spec->reference(k.problem, in, "LSE", all_l).value();
      int empty_rows = 0, short_caches = 0;
      for (int b = 0; b < B; ++b) {
        const int len = static_cast<int>(lens.at(b));
        EXPECT_LE(len, SK);
        short_caches += len < SK;
        for (int s = 0; s < SQ; ++s)
          for (int h = 0; h < H; ++h) {
            const int hk = h / (H / HKV), end = causal ? std::max(0, len - SQ + s + 1) : len;
            std::vector<double> score;
            for (int j = 0; j < end; ++j) {
              double dot = 0;
              for (int c = 0; c < D; ++c) dot += Q.at(((b * SQ + s) * H + h) * D + c) * K.at(((b * SK + j) * HKV + hk) * D + c);
              score.push_back(dot / 8.0);
            }
            double z = 0;
            for (double v : score) z += std::exp(v);
            const double lse = L[static_cast<std::size_t>((b * H + h) * SQ + s)];
            if (score.empty()) {
              ++empty_rows;
              EXPECT_EQ(lse, -std::numeric_limits<double>::infinity());
            } else {
              EXPECT_NEAR(lse, std::log(z), 1e-12);
            }
            for (int c = 0; c < D; ++c) {
              double o = 0;
              for (std::size_t j = 0; j < score.size(); ++j)
                o += std::exp(score[j]) / z * V.at(((b * SK + static_cast<int>(j)) * HKV + hk) * D + c);
              EXPECT_NEAR(O[static_cast<std::size_t>(((b * SQ + s) * H + h) * D + c)], o, 1e-12);
            }
          }
      }
      EXPECT_EQ(short_caches > 0, ragged);
      EXPECT_EQ(empty_rows > 0, ragged);  // the odd requests' empty caches
    }
}

TEST(AttnDecode, FlopsBytesAndBaseline) {
  auto k = instantiate(decode(), {{"batch", "2"}, {"seq_q", "1"}, {"seq_k", "100"}, {"heads", "8"}, {"heads_kv", "2"},
                                  {"dim", "64"}}, {}, hopper()).value();
  EXPECT_DOUBLE_EQ(k.flops, 4.0 * 64 * 8 * 2 * 100);
  EXPECT_DOUBLE_EQ(k.min_bytes, 2.0 * (2 * 2 * 100 * 2 * 64 + 2 * 2 * 1 * 8 * 64) + 4.0 * 2 * 8 + 4.0 * 2);
  // Causal with s_q = 4: query s sees len - 3 + s keys, 4 * len - 6 in all.
  auto c = instantiate(decode(), {{"batch", "1"}, {"seq_q", "4"}, {"seq_k", "100"}, {"heads", "1"}, {"heads_kv", "1"},
                                  {"dim", "64"}}, {}, hopper()).value();
  EXPECT_DOUBLE_EQ(c.flops, 4.0 * 64 * (4 * 100 - 6));
  const auto base = c.spec->baseline(c.problem, c.config);
  ASSERT_TRUE(base.has_value());
  EXPECT_TRUE(base->sdpa.causal);  // bottom-right aligned: cuDNN's causal_mask_bottom_right
  EXPECT_EQ(base->sdpa.seq_q, 4);
  EXPECT_EQ(base->sdpa.heads_kv, 1);
  EXPECT_FALSE(base->sdpa.varlen());
  // Requests' own cache lengths: cuDNN's padding mask over the padded cache (request i's keys at row i · seq_k).
  auto z = instantiate(decode(), {{"batch", "2"}, {"seq_k", "100"}, {"zero_lengths", "true"}}, {}, hopper()).value();
  const SdpaBaseline zb = z.spec->baseline(z.problem, z.config)->sdpa;
  EXPECT_EQ(zb.len_k, (std::vector<std::int64_t>{100, 0}));
  EXPECT_EQ(zb.start_k, (std::vector<std::int64_t>{0, 100}));
  EXPECT_EQ(zb.len_q, (std::vector<std::int64_t>{zb.seq_q, zb.seq_q}));
  EXPECT_NE(sdpa_refusal(zb).find("sequence 1 has no keys"), std::string::npos);  // cuDNN's rows there: not finite
}

TEST(AttnDecode, ExposedLayoutsParse) {
  auto k = instantiate(decode(), {}, {}, hopper()).value();
  const auto layouts = k.spec->layouts(k.problem, k.config);
  EXPECT_EQ(layouts.size(), 9u);
  for (const auto& l : layouts) {
    SCOPED_TRACE(l.name + " = " + l.spec);
    const LayoutSpec s = parse_spec(l.spec);
    EXPECT_TRUE(s.ok) << format_spec_error(s);
  }
  EXPECT_EQ(k.spec->probes, (std::vector<std::string>{"load_issue", "wait_tile", "qk", "softmax", "pv", "combine", "merge"}));
}

// Every config field reaches the name expression (and so the cache key, which hashes it).
TEST(AttnDecode, EveryFieldChangesTheName) {
  std::set<std::string> names = {name_expression(AttnDecodeConfig{})};
  for (AttnDecodeConfig x : {AttnDecodeConfig{.dim = 64}, AttnDecodeConfig{.block_M = 32}, AttnDecodeConfig{.block_N = 128},
                             AttnDecodeConfig{.warps = 8}, AttnDecodeConfig{.num_stages = 4},
                             AttnDecodeConfig{.causal = false}, AttnDecodeConfig{.bf16 = false}})
    names.insert(name_expression(x));
  EXPECT_EQ(names.size(), 8u);
  EXPECT_EQ(name_expression(AttnDecodeConfig{}),
            "tl::attn_decode<tl::AttnDecodeConfig{.dim = 128, .block_M = 16, .block_N = 64, .warps = 4, "
            ".num_stages = 3, .causal = true, .bf16 = true}>");
}

}  // namespace
}  // namespace tl
