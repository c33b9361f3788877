// mla.sparse_prefill without a GPU: its plan's gather puts every bf16 value of a KV row where the tile's SW128 layout
// has it (the kernel's per-copy address is the tile's), it compiles for sm_90a without spills and refuses other
// archs, its indices / topk_length / sinks are what the problem asks, the tokens are dealt out whole and in order,
// FLOPs and bytes count as FlashMLA's benchmark does, and the float64 reference (O, LSE, max_logits) agrees with a
// direct computation, FlashMLA's conventions for a token without a valid index included.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "library/library.hpp"
#include "mla/mla_sparse_prefill_plan.hpp"
#include "runtime/core/numeric.hpp"
#include "tests/support/kernel_args.hpp"
#include "tests/support/scratch_jit.hpp"

namespace tl {
namespace {
using test::arg;
using test::data_of;
using test::inputs_of;
using KV = std::map<std::string, std::string>;

const KernelSpec& prefill() { return *library_registry().find("mla.sparse_prefill").value(); }

KernelInstance make(const KV& p, const KV& c = {}) { return test::sm90a_instance("mla.sparse_prefill", p, c); }

// The gather fragment covers each (row, column) of the 64 x 576 tile once; a copy's 8 values are 8 consecutive
// columns of one row, 16-byte aligned in the tile's bytes; the 8 lanes of a row copy one whole 128-byte panel row (a
// full L2 line, every bank once), and the kernel's address of copy (i, p) (the thread's row offset plus the panel's
// offset in row 0) is the tile's own.
TEST(MlaSparsePrefillPlan, GatherCopiesLandWhereTheTileHasThem) {
  const MlaSparsePrefillPlan p = make_plan(MlaSparsePrefillConfig{});
  const SwizzledLayout& tile = p.mma.tile;
  EXPECT_EQ(p.gather.num_threads(), 128);
  EXPECT_EQ(p.copies * 8 * 128, p.mma.rows * kMlaDimQK);
  EXPECT_EQ(p.full_arrivals, 128 + p.producer_warps);
  std::set<std::pair<int, int>> seen;
  for (int t = 0; t < 128; ++t) {
    const TileCoord first = p.gather(t, 0);
    for (int i = 0; i < p.row_groups; ++i) {
      const int row = p.gather(t, 8 * p.mma.panels * i).row;
      EXPECT_EQ(row / p.rows_per_warp, t / 32) << "warp w copies rows 16 w .. 16 w + 15";
      for (int q = 0; q < p.mma.panels; ++q) {
        const int m = q + p.mma.panels * i;
        const TileCoord c = p.gather(t, 8 * m);
        const int at = 2 * tile(c.row, c.col);
        const int row_at = 2 * tile(first.row + p.gather(0, 8 * p.mma.panels * i).row, first.col);
        ASSERT_EQ(at, row_at + 2 * tile(0, p.gather(0, 8 * q).col)) << t << "," << i << "," << q;
        EXPECT_EQ(c.row, row);
        EXPECT_EQ(at % 16, 0);
        // the row's 8 lanes (t with the same t / 8) cover its 128-byte panel row
        EXPECT_EQ(at / 128, 2 * tile(c.row, q * p.mma.panel_cols) / 128);
        for (int e = 0; e < 8; ++e) {
          const TileCoord v = p.gather(t, 8 * m + e);
          ASSERT_EQ(v.row, c.row);
          ASSERT_EQ(v.col, c.col + e);
          ASSERT_EQ(2 * tile(v.row, v.col), at + 2 * e);
          EXPECT_TRUE(seen.insert({v.row, v.col}).second) << "twice: " << v.row << "," << v.col;
        }
      }
    }
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(p.mma.rows * kMlaDimQK));
  // One copy instruction of a warp: 4 rows, each 8 lanes with 8 different 16-byte chunks of the row's 128 bytes.
  for (int i = 0; i < p.row_groups; ++i) {
    std::map<int, std::set<int>> chunks;  // row -> chunk positions (bank groups)
    for (int l = 0; l < 32; ++l) {
      const TileCoord c = p.gather(l, 8 * p.mma.panels * i);
      chunks[c.row].insert(2 * tile(c.row, c.col) % 128 / 16);
    }
    EXPECT_EQ(chunks.size(), 4u);
    for (const auto& [row, set] : chunks) EXPECT_EQ(set.size(), 8u) << row;
  }
  EXPECT_LE(p.smem_bytes, 232448u) << "the H100's opt-in shared memory per block";
  EXPECT_LE(128 * (p.producer_regs + 2 * p.consumer_regs), 65536);
}

TEST(MlaSparsePrefill, CompilesForHopperWithoutSpilling) {
  const KV p = {{"seq_q", "300"}, {"seq_kv", "4096"}, {"topk", "2048"}};
  for (bool probes : {false, true})
    for (const KV& c : {KV{}, KV{{"qk_warpgroups", "2"}}, KV{{"vec_store", "false"}}, KV{{"l2_prefetch", "false"}},
                        KV{{"chain", "false"}}, KV{{"kv_evict_last", "true"}}, KV{{"head_order", "cluster"}},
                        KV{{"schedule", "dynamic"}}, KV{{"rope_regs", "false"}}}) {
      const KernelInstance inst = make(p, c);
      SCOPED_TRACE(inst.name_expression + (probes ? " (probes)" : ""));
      JitOptions opt;
      opt.arch = "sm_90a";
      if (probes) opt.defines.push_back("TL_TIMELINE=1");
      auto k = test::scratch_jit().compile(compile_request(inst, opt));
      ASSERT_TRUE(k.ok()) << k.status().message();
      // Known gap, as mla.sparse_decode's: the probe build spills (the marks' state beside the consumers' code).
      EXPECT_LE(k->resources.spill_store_bytes, probes ? 256 : 0);
      EXPECT_LE(k->resources.registers * 384, 65536);
    }
}

// chain: consumer 0 writes its P into its stage's RoPE panel and consumer 1's P V reads it there with the P tile's
// descriptors, so that panel must have the P tile's layout, byte for byte; the halves split the stage at V's middle
// (consumer 0's V columns on one side, the RoPE panel on the other); qk_warpgroups 2 runs unchained (mla.decode's
// register split), and kv_evict_last without the 256-byte fetch is refused by name.
TEST(MlaSparsePrefillPlan, ChainPanelsAndHalves) {
  const MlaSparsePrefillPlan sp = make_plan(MlaSparsePrefillConfig{});
  ASSERT_TRUE(chained(MlaSparsePrefillConfig{}));
  const MlaDecodePlan& p = sp.mma;
  const int panel0 = p.tile(0, kMlaDimV);
  EXPECT_EQ(panel0 % 512, 0) << "the panel starts on a 1024-byte swizzle atom";
  for (int r = 0; r < kMlaBlock; ++r)
    for (int c = 0; c < kMlaBlock; ++c) ASSERT_EQ(p.tile(r, kMlaDimV + c) - panel0, p.p(r, c)) << r << "," << c;
  EXPECT_EQ(sp.half_panels * p.panel_cols, kMlaDimV / 2);
  EXPECT_EQ(sp.consumer_regs, 216);
  EXPECT_EQ(sp.producer_regs, 72);
  EXPECT_GE(sp.off_half_bar, sp.off_valid + 16u);
  EXPECT_LE(sp.empty_hi(1) + 8u, sp.smem_used);
  EXPECT_LE(sp.smem_bytes, 232448u);
  EXPECT_FALSE(chained(MlaSparsePrefillConfig{.qk_warpgroups = 2}));
  EXPECT_EQ(make_plan(MlaSparsePrefillConfig{.qk_warpgroups = 2}).consumer_regs, 224);
  EXPECT_EQ(make_plan(MlaSparsePrefillConfig{.chain = false}).smem_used, sp.smem_used - 32u);
  auto refused = instantiate(prefill(), {}, {{"kv_evict_last", "true"}, {"l2_prefetch", "false"}},
                             limits_for_arch("sm_90a"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("l2_prefetch=true"), std::string::npos) << refused.status().message();
}

TEST(MlaSparsePrefill, RefusesWithoutHopper) {
  auto inst = instantiate(prefill(), {}, {}, limits_for_arch("sm_80"));
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(inst.status().code(), ErrorCode::unsupported);
  EXPECT_NE(inst.status().message().find("9.0"), std::string::npos) << inst.status().message();
  auto plain = instantiate(prefill(), {}, {}, limits_for_arch("sm_90"));
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("sm_90a"), std::string::npos) << plain.status().message();
}

// Indices: distinct rows of [0, s_kv) per token, invalid padding past s_kv (FlashMLA's test fills it so), invalid
// kinds and all-invalid tokens where asked; topk_length with a 0 and a full token; sinks with +-inf.
TEST(MlaSparsePrefill, IndicesLengthsAndSinks) {
  const KernelInstance k = make({{"seq_q", "40"}, {"heads", "64"}, {"seq_kv", "300"}, {"topk", "384"},
                                 {"topk_length", "true"}, {"sink", "true"}});
  const auto idx = data_of<std::int32_t>(k, "indices");
  const auto tl = data_of<std::int32_t>(k, "topk_length");
  const auto sink = data_of<float>(k, "sink");
  ASSERT_EQ(idx.size(), 40u * 384);
  EXPECT_EQ(arg(k, "indices").shape, (std::vector<std::int64_t>{40, 1, 384}));
  for (int r = 0; r < 40; ++r) {
    std::set<std::int32_t> seen;
    for (int j = 0; j < 384; ++j) {
      const std::int32_t e = idx[static_cast<std::size_t>(r * 384 + j)];
      if (j < 300) {
        EXPECT_TRUE(e >= 0 && e < 300 && seen.insert(e).second) << r << "," << j << ": " << e;
      } else {
        EXPECT_TRUE(e < 0 || e >= 300) << "padding past s_kv is invalid: " << e;
      }
    }
  }
  EXPECT_EQ(tl[0], 0);
  EXPECT_EQ(tl[1], 384);
  int pinf = 0, minf = 0, finite = 0;
  for (float s : sink) (std::isinf(s) ? (s > 0 ? pinf : minf) : finite)++;
  EXPECT_GT(pinf, 0);
  EXPECT_GT(minf, 0);
  EXPECT_GT(finite, 0);

  const KernelInstance bad = make({{"seq_q", "16"}, {"heads", "64"}, {"seq_kv", "700"}, {"topk", "256"},
                                   {"invalid", "true"}, {"all_invalid", "true"}});
  const auto bi = data_of<std::int32_t>(bad, "indices");
  std::set<int> kinds;
  int all_bad_rows = 0;
  for (int r = 0; r < 16; ++r) {
    int valid = 0;
    for (int j = 0; j < 256; ++j) {
      const std::int32_t e = bi[static_cast<std::size_t>(r * 256 + j)];
      if (e >= 0 && e < 700) ++valid;
      else kinds.insert(e < 0 ? -1 : 1);
    }
    all_bad_rows += valid == 0;
  }
  EXPECT_EQ(kinds.size(), 2u) << "negative and past-s_kv indices";
  EXPECT_GT(all_bad_rows, 0);
  EXPECT_LT(all_bad_rows, 16);
}

// The parts (persistent CTAs, one per SM and head tile) hold consecutive whole tokens, every token once, in order;
// no part holds more than about its share of the blocks; every token is one split.
TEST(MlaSparsePrefill, TokensAreDealtOutWhole) {
  for (const KV& p : {KV{{"seq_q", "4096"}, {"heads", "128"}, {"seq_kv", "8192"}, {"topk", "2048"}},
                      KV{{"seq_q", "1000"}, {"heads", "64"}, {"seq_kv", "3000"}, {"topk", "1000"}, {"topk_length", "true"}},
                      KV{{"seq_q", "5"}, {"heads", "64"}, {"seq_kv", "300"}, {"topk", "100"}}}) {
    const KernelInstance k = make(p, {{"head_order", "apart"}});
    SCOPED_TRACE(k.problem.to_string());
    const int sq = static_cast<int>(k.problem.integer("seq_q")), h = static_cast<int>(k.problem.integer("heads"));
    const auto parts = data_of<std::int32_t>(k, "sched_parts");
    const auto splits = data_of<std::int32_t>(k, "num_splits");
    const auto tl = data_of<std::int32_t>(k, "topk_length");
    const std::uint32_t n = k.launch.grid.x;
    EXPECT_EQ(n, 132u / static_cast<std::uint32_t>((h + 63) / 64));
    EXPECT_EQ(k.launch.grid.y, static_cast<std::uint32_t>((h + 63) / 64));
    ASSERT_EQ(parts.size(), 5u * n);
    const auto blocks = [&](int r) { return (tl[static_cast<std::size_t>(r)] + 63) / 64; };
    double total = 0;
    for (int r = 0; r < sq; ++r) total += blocks(r) + 1;
    int next = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::int32_t* q = parts.data() + 5 * i;
      EXPECT_EQ(q[0], next);
      EXPECT_EQ(q[1], 0);
      EXPECT_EQ(q[4], 0);
      double cost = 0;
      for (int r = q[0]; r <= q[2]; ++r) cost += blocks(r) + 1;
      if (q[2] >= q[0]) {
        EXPECT_EQ(q[3], blocks(q[2]));
      }
      EXPECT_LE(cost, total / n + 65) << "part " << i;
      next = q[2] + 1;
    }
    EXPECT_EQ(next, sq);
    ASSERT_EQ(splits.size(), static_cast<std::size_t>(sq) + 1);
    for (int r = 0; r < sq; ++r) EXPECT_EQ(splits[static_cast<std::size_t>(r) + 1] - splits[static_cast<std::size_t>(r)], 1);
  }
}

TEST(MlaSparsePrefill, FlopsAndBytesCountAsFlashMla) {
  const KernelInstance k = make({{"seq_q", "8"}, {"heads", "64"}, {"seq_kv", "300"}, {"topk", "100"}});
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 64 * (576 + 512) * 8 * 100);
  EXPECT_DOUBLE_EQ(k.min_bytes, 2.0 * 8 * 100 * 576 + 2.0 * 8 * 64 * (576 + 512));
  const KernelInstance t = make({{"seq_q", "8"}, {"heads", "64"}, {"seq_kv", "50"}, {"topk", "100"},
                                 {"topk_length", "true"}});
  const auto tl = data_of<std::int32_t>(t, "topk_length");
  double attended = 0, valid = 0;
  for (auto v : tl) attended += v, valid += std::min(v, 50);  // entries past s_kv = 50 are padding
  EXPECT_DOUBLE_EQ(t.flops, 2.0 * 64 * (576 + 512) * attended);
  EXPECT_DOUBLE_EQ(t.min_bytes, 2.0 * valid * 576 + 2.0 * 8 * 64 * (576 + 512));
}

// Tiny problems the textbook way (FlashMLA's ref.py): invalid and past-topk_length entries dropped, scores q.k / 24
// over 576 columns, max_logits their maximum, LSE = log sum exp, O over the first 512 columns scaled by the sink's
// factor; a token without a valid index: O = 0, LSE = +inf, max_logits = -inf.
TEST(MlaSparsePrefill, ReferenceMatchesADirectComputation) {
  for (const KV& p : {KV{{"seq_q", "6"}, {"heads", "3"}, {"seq_kv", "90"}, {"topk", "70"}, {"invalid", "true"},
                         {"topk_length", "true"}, {"sink", "true"}},
                      KV{{"seq_q", "8"}, {"heads", "2"}, {"seq_kv", "40"}, {"topk", "64"}, {"all_invalid", "true"}}}) {
    const KernelInstance k = make(p);
    SCOPED_TRACE(k.problem.to_string());
    const ReferenceInputs in = inputs_of(k);
    const auto &Q = in.tensor("Q"), &C = in.tensor("KV");
    const auto idx = data_of<std::int32_t>(k, "indices");
    const auto tl = data_of<std::int32_t>(k, "topk_length");
    const auto sink = data_of<float>(k, "sink");
    const int S = static_cast<int>(k.problem.integer("seq_q")), H = static_cast<int>(k.problem.integer("heads")),
              topk = static_cast<int>(k.problem.integer("topk")), skv = static_cast<int>(k.problem.integer("seq_kv"));
    std::vector<std::int64_t> all_o(static_cast<std::size_t>(S * H * 512)), all_l(static_cast<std::size_t>(S * H));
    for (std::size_t i = 0; i < all_o.size(); ++i) all_o[i] = static_cast<std::int64_t>(i);
    for (std::size_t i = 0; i < all_l.size(); ++i) all_l[i] = static_cast<std::int64_t>(i);
    const auto O = k.spec->reference(k.problem, in, "O", all_o).value();
    const auto L = k.spec->reference(k.problem, in, "LSE", all_l).value();
    const auto M = k.spec->reference(k.problem, in, "max_logits", all_l).value();
    int empty_rows = 0, scaled = 0;
    for (int s = 0; s < S; ++s) {
      std::vector<int> keys;
      for (int j = 0; j < std::min(tl[static_cast<std::size_t>(s)], topk); ++j) {
        const std::int32_t e = idx[static_cast<std::size_t>(s * topk + j)];
        if (e >= 0 && e < skv) keys.push_back(e);
      }
      for (int h = 0; h < H; ++h) {
        std::vector<double> score;
        double mx = -std::numeric_limits<double>::infinity();
        for (int e : keys) {
          double dot = 0;
          for (int c = 0; c < 576; ++c) dot += Q.at((s * H + h) * 576 + c) * C.at(e * 576 + c);
          score.push_back(dot / 24.0);
          mx = std::max(mx, dot / 24.0);
        }
        double z = 0;
        for (double v : score) z += std::exp(v);
        const std::size_t at = static_cast<std::size_t>(s * H + h);
        const double f = keys.empty() ? 0 : 1.0 / (1.0 + std::exp(sink[static_cast<std::size_t>(h)] - std::log(z)));
        if (keys.empty()) {
          ++empty_rows;
          EXPECT_EQ(L[at], std::numeric_limits<double>::infinity());
          EXPECT_EQ(M[at], -std::numeric_limits<double>::infinity());
        } else {
          EXPECT_NEAR(L[at], std::log(z), 1e-11);
          EXPECT_NEAR(M[at], mx, 1e-12);
        }
        scaled += f > 0 && f < 1;
        for (int c = 0; c < 512; c += 29) {
          double o = 0;
          for (std::size_t j = 0; j < keys.size(); ++j) o += std::exp(score[j]) / z * C.at(keys[j] * 576 + c);
          EXPECT_NEAR(O[at * 512 + static_cast<std::size_t>(c)], o * f, 1e-11);
        }
      }
    }
    if (k.problem.boolean("all_invalid") || k.problem.boolean("topk_length")) {
      EXPECT_GT(empty_rows, 0);
    }
    if (k.problem.boolean("sink")) {
      EXPECT_GT(scaled, 0);
    }
  }
}

// head_order: apart is the grid (parts, head tiles); adjacent and cluster swap it, so that a token's head tiles are
// consecutive CTAs, cluster with the head tiles one cluster (none at 64 heads); the same parts either way; auto is
// adjacent at 128 heads and apart at 64 or unchained; the unchained consumers (mla_consumer, which read blockIdx as
// (part, head tile)) refuse adjacent and cluster by name.
TEST(MlaSparsePrefill, HeadOrderSwapsTheGrid) {
  for (const char* heads : {"128", "64"}) {
    const KV p = {{"seq_q", "500"}, {"heads", heads}, {"seq_kv", "1000"}, {"topk", "256"}};
    const KernelInstance apart = make(p, {{"head_order", "apart"}});
    SCOPED_TRACE(heads);
    const std::uint32_t tiles = apart.launch.grid.y;
    EXPECT_EQ(tiles, heads == std::string("128") ? 2u : 1u);
    EXPECT_EQ(apart.launch.cluster.volume(), 1u);
    for (const char* order : {"adjacent", "cluster"}) {
      const KernelInstance k = make(p, {{"head_order", order}});
      SCOPED_TRACE(order);
      EXPECT_EQ(k.launch.grid.x, tiles);
      EXPECT_EQ(k.launch.grid.y, apart.launch.grid.x);
      EXPECT_EQ(k.launch.cluster.x, order == std::string("cluster") ? tiles : 1u);
      EXPECT_EQ(k.launch.cluster.y * k.launch.cluster.z, 1u);
      EXPECT_EQ(data_of<std::int32_t>(k, "sched_parts"), data_of<std::int32_t>(apart, "sched_parts"));
      EXPECT_NE(k.name_expression, apart.name_expression);
    }
    // auto: adjacent with two head tiles, apart with one, and apart (not refused) when unchained.
    const KernelInstance automatic = make(p);
    const KernelInstance expect = make(p, {{"head_order", tiles == 2 ? "adjacent" : "apart"}});
    EXPECT_EQ(automatic.name_expression, expect.name_expression);
    EXPECT_EQ(automatic.launch.grid.x, expect.launch.grid.x);
    EXPECT_EQ(automatic.launch.grid.y, expect.launch.grid.y);
    EXPECT_EQ(automatic.launch.cluster.volume(), 1u);
    EXPECT_EQ(make(p, {{"chain", "false"}}).launch.grid.y, tiles);
  }
  for (const KV& c : {KV{{"head_order", "adjacent"}, {"chain", "false"}}, KV{{"head_order", "cluster"}, {"qk_warpgroups", "2"}}}) {
    auto refused = instantiate(prefill(), {}, c, limits_for_arch("sm_90a"));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("chained schedule"), std::string::npos) << refused.status().message();
  }
}

// schedule=dynamic: the same grid and parts as static (token `part` first), the token slot and the producers' ring
// (16 bytes) after the halves' barriers, one i32 counter per head tile as a scratch tensor (static: a null scalar), a
// name of its own; auto is dynamic when chained and static (not refused) when unchained; unchained schedules refuse
// dynamic by name.
TEST(MlaSparsePrefill, DynamicScheduleTakesTokensFromCounters) {
  const MlaSparsePrefillPlan st = make_plan(MlaSparsePrefillConfig{});
  const MlaSparsePrefillPlan dy = make_plan(MlaSparsePrefillConfig{.dynamic = true});
  EXPECT_EQ(dy.off_token, st.smem_used);
  EXPECT_EQ(dy.smem_used, st.smem_used + 16u);
  EXPECT_LE(dy.smem_bytes, 232448u);
  for (const char* heads : {"128", "64"}) {
    const KV p = {{"seq_q", "500"}, {"heads", heads}, {"seq_kv", "1000"}, {"topk", "256"}};
    SCOPED_TRACE(heads);
    const KernelInstance s = make(p, {{"schedule", "static"}}), d = make(p, {{"schedule", "dynamic"}});
    EXPECT_EQ(d.launch.grid.x, s.launch.grid.x);
    EXPECT_EQ(d.launch.grid.y, s.launch.grid.y);
    EXPECT_EQ(data_of<std::int32_t>(d, "sched_parts"), data_of<std::int32_t>(s, "sched_parts"));
    EXPECT_NE(d.name_expression, s.name_expression);
    EXPECT_EQ(make(p).name_expression, d.name_expression);
    EXPECT_EQ(arg(make(p, {{"chain", "false"}}), "token_counter").kind, ArgSpec::Kind::scalar);
    const ArgSpec& counter = arg(d, "token_counter");
    EXPECT_EQ(counter.kind, ArgSpec::Kind::tensor);
    EXPECT_EQ(counter.role, ArgRole::scratch);
    EXPECT_EQ(counter.shape, (std::vector<std::int64_t>{heads == std::string("128") ? 2 : 1}));
    EXPECT_EQ(arg(s, "token_counter").kind, ArgSpec::Kind::scalar);
  }
  for (const KV& c : {KV{{"schedule", "dynamic"}, {"chain", "false"}}, KV{{"schedule", "dynamic"}, {"qk_warpgroups", "2"}}}) {
    auto refused = instantiate(prefill(), {}, c, limits_for_arch("sm_90a"));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("schedule=dynamic needs the chained"), std::string::npos)
        << refused.status().message();
  }
}

// schedule=auto: dynamic for tokens of one length at any count (s_q 1 up), static for tokens of differing lengths
// (topk_length) under 8 a CTA (the parts from `sms`, else 132 SMs), dynamic from there; unchained always static.
TEST(MlaSparsePrefill, AutoScheduleIsStaticForFewTokensOfDifferingLengths) {
  const auto dynamic = [](const KV& p, const KV& c = {}) {
    const KernelInstance k = make(p, c);
    return arg(k, "token_counter").kind == ArgSpec::Kind::tensor;
  };
  for (const char* sq : {"1", "64", "300", "4096"}) {
    SCOPED_TRACE(sq);
    EXPECT_TRUE(dynamic({{"seq_q", sq}, {"heads", "128"}, {"seq_kv", "1000"}, {"topk", "256"}}));
    EXPECT_TRUE(dynamic({{"seq_q", sq}, {"heads", "64"}, {"seq_kv", "1000"}, {"topk", "256"}}));
  }
  // h_q 128: 66 parts, the threshold 528 tokens; h_q 64: 132 parts, 1056.
  const auto varying = [](const char* sq, const char* heads) {
    return KV{{"seq_q", sq}, {"heads", heads}, {"seq_kv", "1000"}, {"topk", "256"}, {"topk_length", "true"}};
  };
  EXPECT_FALSE(dynamic(varying("300", "128")));
  EXPECT_FALSE(dynamic(varying("527", "128")));
  EXPECT_TRUE(dynamic(varying("528", "128")));
  EXPECT_FALSE(dynamic(varying("1055", "64")));
  EXPECT_TRUE(dynamic(varying("1056", "64")));
  // sms=7: 3 parts at h_q 128, so 24 tokens already reach 8 a CTA.
  EXPECT_FALSE(dynamic(varying("23", "128"), {{"sms", "7"}}));
  EXPECT_TRUE(dynamic(varying("24", "128"), {{"sms", "7"}}));
  // The rule picks between the two kernels by name (auto = the static one's name at 300, the dynamic one's at 4096).
  EXPECT_EQ(make(varying("300", "128")).name_expression, make(varying("300", "128"), {{"schedule", "static"}}).name_expression);
  EXPECT_EQ(make(varying("4096", "128")).name_expression,
            make(varying("4096", "128"), {{"schedule", "dynamic"}}).name_expression);
  // Explicit schedules are taken as given; unchained is static at any count.
  EXPECT_TRUE(dynamic(varying("300", "128"), {{"schedule", "dynamic"}}));
  EXPECT_FALSE(dynamic({{"seq_q", "4096"}, {"heads", "128"}, {"seq_kv", "1000"}, {"topk", "256"}}, {{"schedule", "static"}}));
  EXPECT_FALSE(dynamic({{"seq_q", "4096"}, {"heads", "128"}, {"seq_kv", "1000"}, {"topk", "256"}}, {{"chain", "false"}}));
}

// rope_regs: on by auto where chained (the default), off when false (that kernel keeps main's name), named only when
// on, the same shared memory (registers, not shared memory), passed to the consumers' config (consumer 0 takes it in
// chained_consumer) with consumer 0's 224 registers beside consumer 1's 216 and the producer's 64; auto is off (not
// refused) unchained, true is refused there by name.
TEST(MlaSparsePrefill, RopeRegsIsChainedAndNamedOnlyWhenOn) {
  const KV p = {{"seq_q", "500"}, {"heads", "128"}, {"seq_kv", "1000"}, {"topk", "256"}};
  const KernelInstance def = make(p), off = make(p, {{"rope_regs", "false"}}), on = make(p, {{"rope_regs", "true"}});
  EXPECT_EQ(def.name_expression, on.name_expression);
  EXPECT_EQ(off.name_expression.find("rope_regs"), std::string::npos);
  EXPECT_NE(on.name_expression.find(".dynamic = true, .rope_regs = true}"), std::string::npos) << on.name_expression;
  EXPECT_EQ(on.launch.dynamic_smem, off.launch.dynamic_smem);
  EXPECT_TRUE(consumer_config(MlaSparsePrefillConfig{.rope_regs = true}).rope_regs);
  EXPECT_FALSE(consumer_config(MlaSparsePrefillConfig{.chain = false, .rope_regs = true}).rope_regs);
  EXPECT_FALSE(consumer_config(MlaSparsePrefillConfig{}).rope_regs);
  const MlaSparsePrefillPlan with = make_plan(MlaSparsePrefillConfig{.rope_regs = true});
  const MlaSparsePrefillPlan without = make_plan(MlaSparsePrefillConfig{});
  EXPECT_EQ(with.consumer_regs, 224);
  EXPECT_EQ(with.consumer1_regs, 216);
  EXPECT_EQ(with.producer_regs, 64);
  EXPECT_EQ(without.consumer_regs, without.consumer1_regs);
  EXPECT_EQ(with.smem_bytes, without.smem_bytes);
  for (const KV& c : {KV{{"rope_regs", "true"}, {"chain", "false"}}, KV{{"rope_regs", "true"}, {"qk_warpgroups", "2"}}}) {
    auto refused = instantiate(prefill(), {}, c, limits_for_arch("sm_90a"));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("rope_regs=true needs the chained"), std::string::npos)
        << refused.status().message();
  }
  EXPECT_EQ(make(p, {{"chain", "false"}}).name_expression.find("rope_regs"), std::string::npos);
}

// The plan's objects are shown: mla.decode's tiles and accumulators and the producer's gather fragment; the probe
// regions end with the producer's.
TEST(MlaSparsePrefill, LayoutsAndProbesName) {
  const KernelInstance k = make({{"seq_q", "2"}, {"seq_kv", "100"}, {"topk", "64"}});
  std::set<std::string> names;
  for (const auto& l : k.spec->layouts(k.problem, k.config)) names.insert(l.name);
  for (const char* n : {"smem_Q", "smem_KV", "smem_P", "acc_S", "acc_O", "gather_tv"}) EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(k.spec->probes.back(), "index");
  EXPECT_EQ(k.spec->probes.front(), "load_wait");
}

}  // namespace
}  // namespace tl
