// mla.sparse_decode without a GPU: it compiles for sm_90a without spills, refuses other archs, its cache is FlashMLA's
// V3.2 FP8 format quantized by FlashMLA's rule, its indices / topk_length / sink are what the problem asks, FLOPs
// count as FlashMLA's benchmark does, and the float64 reference agrees with a direct computation over a cache
// dequantized by the format's definition.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <algorithm>
#include <atomic>
#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>

#include "library/library.hpp"
#include "mla/mla_host.hpp"
#include "mla/mla_schedule.hpp"
#include "runtime/core/numeric.hpp"
#include "runtime/measure/bench.hpp"
#include "tests/support/kernel_args.hpp"
#include "tests/support/scratch_jit.hpp"

namespace tl {
namespace {
using test::arg;
using test::data_of;
using test::inputs_of;
using KV = std::map<std::string, std::string>;

const KernelSpec& sparse() { return *library_registry().find("mla.sparse_decode").value(); }

KernelInstance make(const KV& p, const KV& c = {}) { return test::sm90a_instance("mla.sparse_decode", p, c); }

TEST(MlaSparseDecode, CompilesForHopperWithoutSpilling) {
  const std::vector<std::pair<KV, KV>> cases = {
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {}},
      {{{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"qk_warpgroups", "2"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"gather", "copies"}, {"vec_store", "false"}, {"dequant_rows", "1"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"crossover", "false"}}},
      {{{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"gather", "copies"}, {"rope_direct", "off"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"gather", "copies"}, {"rope_direct", "on"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"gather", "copies"}}},
      {{{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"gather", "regs"}, {"rope_direct", "off"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"lazy_rescale", "false"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"qk_warpgroups", "2"}, {"lazy_rescale", "false"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"uniform_desc", "true"}}},
      {{{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"uniform_desc", "true"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"lean_softmax", "true"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"lean_softmax", "true"}, {"uniform_desc", "true"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"peer_copy", "store"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"peer_copy", "bulk"}, {"gather", "copies"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"peer_copy", "bulk_half"}}},
      {{{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"hybrid", "true"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"hybrid", "true"}, {"crossover", "false"}}},
      {{{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"c1_rows", "2"}}},
      {{{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"c1_rows", "4"}, {"c1_early", "true"}}},
      {{{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"prmt_cvt", "false"}}},
      {{{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"prmt_cvt", "true"}}}};
  for (bool probes : {false, true})
    for (const auto& [p, c] : cases) {
      const KernelInstance inst = make(p, c);
      SCOPED_TRACE(inst.name_expression + (probes ? " (probes)" : ""));
      JitOptions opt;
      opt.arch = "sm_90a";
      if (probes) opt.defines.push_back("TL_TIMELINE=1");
      auto k = test::scratch_jit().compile(compile_request(inst, opt));
      ASSERT_TRUE(k.ok()) << k.status().message();
      // Known gap: the probe build spills (the producer's registers and the consumers' hold the marks' state too,
      // gather=regs's ring of rows beside them).
      const bool regs = inst.name_expression.find("MlaSparseGather::copies") == std::string::npos;
      EXPECT_LE(k->resources.spill_store_bytes, probes ? (regs ? 320 : 256) : 0);
      EXPECT_LE(k->resources.registers * 384, 65536);
    }
}

// Crossover: with 128 heads the launch pairs the two head tiles of a part as a 2-CTA cluster along y and the PTX has
// the peer stores and the cluster barriers (the default); with 64 heads (one head tile) it launches no cluster, and
// with the switch off the code has no cluster instruction at all.
TEST(MlaSparseDecode, CrossoverPairsHeadTilesAsAClusterOfTwo) {
  const KV p128 = {{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}};
  const KV p64 = {{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}};
  const KernelInstance pair = make(p128, {{"crossover", "true"}, {"peer_copy", "store"}});
  EXPECT_EQ(pair.launch.grid.y, 2u);
  EXPECT_EQ(pair.launch.cluster.y, 2u);
  EXPECT_EQ(pair.launch.cluster.volume(), 2u);
  EXPECT_EQ(make(p64, {{"crossover", "true"}}).launch.cluster.volume(), 1u);
  EXPECT_EQ(make(p128).launch.cluster.volume(), 2u);  // on by default
  const KernelInstance single = make(p128, {{"crossover", "false"}});
  EXPECT_EQ(single.launch.cluster.volume(), 1u);
  const std::vector<std::string> words = {"st.async.shared::cluster.mbarrier::complete_tx::bytes",
                                          "mapa.shared::cluster", "barrier.cluster.arrive", "%cluster_ctarank"};
  for (bool on : {false, true}) {
    JitOptions opt;
    opt.arch = "sm_90a";
    auto k = test::scratch_jit().compile(compile_request(on ? pair : single, opt));
    ASSERT_TRUE(k.ok()) << k.status().message();
    for (const auto& w : words) EXPECT_EQ(k->ptx.find(w) != std::string::npos, on) << w;
  }
}

// hybrid: auto takes it with registers at one 64-head tile (no crossover peer) only; the 128-head kernels keep the
// register ring alone, and with copies (qk_warpgroups=2) it is off. Its build copies the last 8 rows by cp.async.
TEST(MlaSparseDecode, HybridGatherAutoAt64HeadsOnly) {
  const KV p128 = {{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}};
  const KV p64 = {{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}};
  const KV p32 = {{"batch", "4"}, {"heads", "32"}, {"seq_k", "4096"}, {"topk", "512"}};
  const auto hybrid = [](const KernelInstance& i) { return i.name_expression.find(".hybrid = true") != std::string::npos; };
  EXPECT_TRUE(hybrid(make(p64)));
  EXPECT_TRUE(hybrid(make(p32)));
  EXPECT_FALSE(hybrid(make(p128)));
  EXPECT_FALSE(hybrid(make(p128, {{"crossover", "false"}})));
  EXPECT_FALSE(hybrid(make(p64, {{"qk_warpgroups", "2"}})));
  EXPECT_FALSE(hybrid(make(p64, {{"hybrid", "false"}})));
  EXPECT_TRUE(hybrid(make(p128, {{"hybrid", "true"}, {"crossover", "false"}})));
  for (bool on : {false, true}) {
    const KernelInstance inst = make(p64, {{"hybrid", on ? "true" : "false"}});
    SCOPED_TRACE(inst.name_expression);
    JitOptions opt;
    opt.arch = "sm_90a";
    auto k = test::scratch_jit().compile(compile_request(inst, opt));
    ASSERT_TRUE(k.ok()) << k.status().message();
    EXPECT_EQ(k->ptx.find("cp.async.cg.shared.global") != std::string::npos, on);
  }
}

// prmt_cvt: auto takes it where hybrid runs at one head tile (64 heads or fewer), not at 128 heads (crossover pairs:
// 0.93x there), nor with the copies gather or hybrid off; true / false as given.
TEST(MlaSparseDecode, PrmtCvtAutoWhereHybridRuns) {
  const KV p128 = {{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}};
  const KV p64 = {{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}};
  const KV p32 = {{"batch", "4"}, {"heads", "32"}, {"seq_k", "4096"}, {"topk", "512"}};
  const auto on = [](const KernelInstance& i) { return i.name_expression.find(".prmt_cvt = true") != std::string::npos; };
  EXPECT_TRUE(on(make(p64)));
  EXPECT_TRUE(on(make(p32)));
  EXPECT_FALSE(on(make(p128)));
  EXPECT_FALSE(on(make(p128, {{"crossover", "false"}})));
  EXPECT_FALSE(on(make(p64, {{"qk_warpgroups", "2"}})));
  EXPECT_FALSE(on(make(p64, {{"hybrid", "false"}})));
  EXPECT_FALSE(on(make(p64, {{"prmt_cvt", "false"}})));
  EXPECT_TRUE(on(make(p128, {{"prmt_cvt", "true"}})));
  EXPECT_TRUE(on(make(p64, {{"qk_warpgroups", "2"}, {"prmt_cvt", "true"}})));
}

// c1_rows: consumer 1 converts beside the hybrid register producer only (refused where hybrid is off: 128 heads at
// auto, copies); its name fields.
TEST(MlaSparseDecode, ConsumerOneRowsNeedsHybrid) {
  const KV p128 = {{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}};
  const KV p64 = {{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}};
  const DeviceLimits lim = limits_for_arch("sm_90a");
  for (const KV& c : {KV{{"c1_rows", "2"}}, KV{{"c1_rows", "4"}, {"hybrid", "false"}},
                      KV{{"c1_rows", "2"}, {"qk_warpgroups", "2"}}}) {
    auto r = instantiate(sparse(), c.count("hybrid") || c.count("qk_warpgroups") ? p64 : p128, c, lim);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("c1_rows needs gather=regs with hybrid"), std::string::npos) << r.status().message();
  }
  EXPECT_TRUE(instantiate(sparse(), p128, {{"c1_rows", "2"}, {"hybrid", "true"}, {"crossover", "false"}}, lim).ok());
  const KernelInstance inst = make(p64, {{"c1_rows", "4"}, {"c1_early", "true"}});
  EXPECT_NE(inst.name_expression.find(".c1_rows = 4"), std::string::npos) << inst.name_expression;
  EXPECT_NE(inst.name_expression.find(".c1_early = true"), std::string::npos) << inst.name_expression;
  // auto (the default): 2 rows early where hybrid runs the register gather at 64 heads, none at 128 heads (nor with
  // hybrid off or the copies gather); c1_early=false and c1_rows=0 as given.
  const auto fields = [&](const KV& p, const KV& c, const char* rows, const char* early) {
    const std::string n = make(p, c).name_expression;
    EXPECT_NE(n.find(std::string(".c1_rows = ") + rows + ","), std::string::npos) << n;
    EXPECT_NE(n.find(std::string(".c1_early = ") + early), std::string::npos) << n;
  };
  fields(p64, {}, "2", "true");
  fields(p128, {}, "0", "false");
  fields(p64, {{"hybrid", "false"}}, "0", "false");
  fields(p64, {{"gather", "copies"}}, "0", "false");
  fields(p64, {{"c1_early", "false"}}, "2", "false");
  fields(p64, {{"c1_rows", "0"}}, "0", "false");
}

// peer_copy=bulk: the crossover's peer half goes by bulk shared::cta -> shared::cluster copies completing the remote
// barrier, and no st.async is left; store has st.async and no such copy. auto (the default): bulk where the CTAs
// pair (128 heads), store with 64 heads or without crossover.
TEST(MlaSparseDecode, PeerCopyBulkReplacesTheStAsyncStores) {
  const KV p128 = {{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}};
  const KV p64 = {{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}};
  const KV p96 = {{"batch", "4"}, {"heads", "96"}, {"seq_k", "4096"}, {"topk", "512"}};
  const auto peer = [](const KernelInstance& i) {
    return i.name_expression.find("MlaPeerCopy::bulk") != std::string::npos ? "bulk" : "store";
  };
  EXPECT_STREQ(peer(make(p128)), "bulk");
  EXPECT_STREQ(peer(make(p96)), "bulk");  // two head tiles: a pair
  EXPECT_STREQ(peer(make(p64)), "store");
  EXPECT_STREQ(peer(make(p128, {{"crossover", "false"}})), "store");
  EXPECT_STREQ(peer(make(p128, {{"peer_copy", "store"}})), "store");
  EXPECT_FALSE(instantiate(sparse(), p64, {{"peer_copy", "bulk"}}, limits_for_arch("sm_90a")).ok());  // no pair
  const std::string bulk = "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes";
  const std::string st = "st.async.shared::cluster.mbarrier::complete_tx::bytes";
  for (const KV& c : {KV{}, KV{{"gather", "copies"}}})
    for (const char* mode : {"store", "bulk", "bulk_half"}) {
      const bool on = std::string(mode) != "store";
      KV cc = c;
      cc["peer_copy"] = mode;
      const KernelInstance inst = make(p128, cc);
      SCOPED_TRACE(inst.name_expression);
      JitOptions opt;
      opt.arch = "sm_90a";
      auto k = test::scratch_jit().compile(compile_request(inst, opt));
      ASSERT_TRUE(k.ok()) << k.status().message();
      EXPECT_EQ(k->ptx.find(bulk) != std::string::npos, on);
      EXPECT_EQ(k->ptx.find(st) != std::string::npos, !on);
    }
}

TEST(MlaSparseDecode, RefusesWithoutHopperAndOversizedProblems) {
  auto inst = instantiate(sparse(), {}, {}, limits_for_arch("sm_80"));
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(inst.status().code(), ErrorCode::unsupported);
  EXPECT_NE(inst.status().message().find("9.0"), std::string::npos) << inst.status().message();
  auto big = instantiate(sparse(), {{"batch", "16384"}, {"seq_q", "1"}, {"heads", "1"}, {"seq_k", "1048576"}}, {},
                         limits_for_arch("sm_90a"));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("int32 indices"), std::string::npos) << big.status().message();
  // gather=regs leaves consumer 1 168 registers: enough for P V alone, not for Q K^T too.
  auto regs2 = instantiate(sparse(), {}, {{"gather", "regs"}, {"qk_warpgroups", "2"}}, limits_for_arch("sm_90a"));
  ASSERT_FALSE(regs2.ok());
  EXPECT_NE(regs2.status().message().find("qk_warpgroups=1"), std::string::npos) << regs2.status().message();
  EXPECT_TRUE(instantiate(sparse(), {}, {{"gather", "regs"}}, limits_for_arch("sm_90a")).ok());
  // The default (auto) gathers by copies there instead of refusing.
  auto auto2 = instantiate(sparse(), {}, {{"qk_warpgroups", "2"}}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(auto2.ok()) << auto2.status().message();
  EXPECT_NE(auto2->name_expression.find("MlaSparseGather::copies"), std::string::npos) << auto2->name_expression;
  EXPECT_NE(make({}).name_expression.find("MlaSparseGather::regs"), std::string::npos);
}

// FlashMLA's quantizer on the cache rows: per 128-value group the f32 scale is 2^ceil(log2(amax / 448)) of the
// group's largest magnitude, which the fill plants at one position, so every group's largest dequantized value is its
// amax and no e4m3 byte is NaN; RoPE values are bf16 in [-1, 1).
TEST(MlaSparseDecode, CacheRowsAreFlashMlaV32Fp8) {
  const Fill f{.kind = Fill::Kind::kv_fp8, .lo = -1, .hi = 1, .seed = 7};
  const int rows = 300;
  const auto bytes = make_filled(DType::u8, static_cast<std::uint64_t>(rows) * 656, f);
  std::set<float> scales;
  for (int t = 0; t < rows; ++t) {
    const std::uint8_t* row = bytes.data() + t * 656;
    for (int g = 0; g < 4; ++g) {
      float scale;
      std::memcpy(&scale, row + 512 + 4 * g, 4);
      scales.insert(scale);
      int e = 0;
      EXPECT_EQ(std::frexp(scale, &e), 0.5f) << "a power of two";
      double amax = 0;
      for (int c = 128 * g; c < 128 * g + 128; ++c) {
        ASSERT_NE(row[c] & 0x7F, 0x7F) << "e4m3 NaN at " << t << "," << c;
        amax = std::max(amax, std::fabs(num::kv_fp8_dequantized(row, c)));
      }
      EXPECT_EQ(scale, static_cast<float>(std::exp2(std::ceil(std::log2(amax / 448.0))))) << t << "," << g;
      EXPECT_LE(amax, 1.0);
    }
    for (int c = 512; c < 576; ++c) {
      const double v = num::kv_fp8_dequantized(row, c);
      EXPECT_GE(v, -1.0);
      EXPECT_LE(v, 1.0);
    }
  }
  EXPECT_GE(scales.size(), 3u) << "groups are scaled differently";
  // Any split of the range writes the same bytes (what the worker's device fill relies on).
  std::vector<std::uint8_t> part(bytes.size());
  fill_host(part.data(), DType::u8, part.size(), f, 3);
  EXPECT_EQ(part, bytes);
}

// Indices: distinct positions of the request's own cache (through its shuffled blocks), -1 padding after a cache
// shorter than topk, and the invalid kinds where asked; topk_length with a 0 and a full request; sinks with +-inf.
TEST(MlaSparseDecode, IndicesLengthsAndSinks) {
  const KernelInstance k = make({{"batch", "6"}, {"seq_q", "3"}, {"heads", "64"}, {"seq_k", "700"}, {"topk", "576"},
                                 {"varlen", "true"}, {"block_size", "61"}, {"topk_length", "true"}, {"sink", "true"}});
  const auto idx = data_of<std::int32_t>(k, "indices");
  const auto tl = data_of<std::int32_t>(k, "topk_length");
  const auto sink = data_of<float>(k, "sink");
  const auto& kv = arg(k, "KV");
  const std::int64_t capacity = kv.shape[0] * 61;
  ASSERT_EQ(idx.size(), 6u * 3 * 576);
  int padded = 0;
  for (int r = 0; r < 18; ++r) {
    std::set<std::int32_t> seen;
    bool tail = false;
    for (int j = 0; j < 576; ++j) {
      const std::int32_t e = idx[static_cast<std::size_t>(r * 576 + j)];
      if (e == -1) {
        tail = true;
        ++padded;
        continue;
      }
      EXPECT_FALSE(tail) << "padding only after the valid entries";
      EXPECT_GE(e, 0);
      EXPECT_LT(e, capacity);
      EXPECT_TRUE(seen.insert(e).second) << "distinct";
    }
  }
  EXPECT_GT(padded, 0) << "varlen caches shorter than topk pad with -1";
  EXPECT_EQ(tl[0], 0);
  EXPECT_EQ(tl[1], 576);
  int pinf = 0, minf = 0, finite = 0;
  for (float s : sink) (std::isinf(s) ? (s > 0 ? pinf : minf) : finite)++;
  EXPECT_GT(pinf, 0);
  EXPECT_GT(minf, 0);
  EXPECT_GT(finite, 0);

  const KernelInstance bad = make({{"batch", "4"}, {"seq_q", "2"}, {"heads", "64"}, {"seq_k", "700"}, {"topk", "256"},
                                   {"invalid", "true"}, {"all_invalid", "true"}, {"zero_lengths", "true"}});
  const auto bi = data_of<std::int32_t>(bad, "indices");
  const std::int64_t cap = arg(bad, "KV").shape[0] * 64;
  std::set<std::int32_t> kinds;
  int all_bad_rows = 0;
  for (int r = 0; r < 8; ++r) {
    int valid = 0;
    for (int j = 0; j < 256; ++j) {
      const std::int32_t e = bi[static_cast<std::size_t>(r * 256 + j)];
      if (e >= 0 && e < cap) ++valid;
      else kinds.insert(e < 0 ? -1 : 1);
    }
    all_bad_rows += valid == 0;
  }
  EXPECT_EQ(kinds.size(), 2u) << "negative and past-the-cache indices";
  EXPECT_GT(all_bad_rows, 0);
  EXPECT_LT(all_bad_rows, 8);
}

// The indices as the spec first built them: per request a fresh identity permutation of the request's whole cache
// (O(seq_k) a request), partially shuffled; the spec now puts back only the positions it moved (O(topk) a request).
// Both must give the same lists, and min_bytes the same distinct rows (the spec now counts them by a bitmap).
TEST(MlaSparseDecode, IndicesAreTheWholeCacheShufflesAndMinBytesTheirDistinctRows) {
  for (const KV& p : {KV{{"batch", "5"}, {"seq_q", "3"}, {"heads", "64"}, {"seq_k", "700"}, {"topk", "576"},
                         {"varlen", "true"}, {"block_size", "61"}, {"topk_length", "true"}},
                      KV{{"batch", "9"}, {"seq_q", "2"}, {"heads", "64"}, {"seq_k", "300"}, {"topk", "100"},
                         {"zero_lengths", "true"}, {"block_size", "2"}, {"invalid", "true"}, {"all_invalid", "true"}},
                      KV{{"batch", "4"}, {"seq_q", "1"}, {"heads", "128"}, {"seq_k", "5000"}, {"topk", "64"},
                         {"varlen", "true"}, {"padded_blocks", "true"}}}) {
    const KernelInstance k = make(p);
    const auto idx = data_of<std::int32_t>(k, "indices");
    const auto tl = data_of<std::int32_t>(k, "topk_length");
    const std::int64_t b = std::stoll(p.at("batch")), sq = std::stoll(p.at("seq_q")), topk = std::stoll(p.at("topk"));
    const std::int64_t bs = p.count("block_size") ? std::stoll(p.at("block_size")) : 64;
    const mla::PagedCache cache = mla::make_paged_cache(b, std::stoll(p.at("seq_k")), sq, p.count("varlen") > 0,
                                                        p.count("zero_lengths") > 0, bs);
    const std::int64_t capacity = cache.num_blocks * bs;
    std::vector<std::int32_t> seen;
    for (std::int64_t r = 0; r < b * sq; ++r) {
      const std::int64_t i = r / sq, n = cache.lens[static_cast<std::size_t>(i)];
      std::vector<std::int32_t> perm(static_cast<std::size_t>(n));
      std::iota(perm.begin(), perm.end(), 0);
      for (std::int64_t j = 0; j < std::min(n, topk); ++j) {
        const std::int64_t s = j + static_cast<std::int64_t>(num::hash64(0x5D01 + static_cast<std::uint64_t>(r),
                                                                         static_cast<std::uint64_t>(j)) %
                                                             static_cast<std::uint64_t>(n - j));
        std::swap(perm[static_cast<std::size_t>(j)], perm[static_cast<std::size_t>(s)]);
        const std::int64_t pos = perm[static_cast<std::size_t>(j)];
        const std::int32_t want =
            static_cast<std::int32_t>(cache.table[static_cast<std::size_t>(i * cache.table_stride + pos / bs)] * bs + pos % bs);
        const std::int32_t got = idx[static_cast<std::size_t>(r * topk + j)];
        // The invalid options overwrite some entries afterwards: those are checked by IndicesLengthsAndSinks.
        if (got >= 0 && got < capacity) {
          ASSERT_EQ(got, want) << "request " << r << " entry " << j;
        }
      }
      for (std::int64_t j = 0; j < std::min<std::int64_t>(tl[static_cast<std::size_t>(i)], topk); ++j)
        if (const std::int32_t e = idx[static_cast<std::size_t>(r * topk + j)]; e >= 0 && e < capacity) seen.push_back(e);
    }
    std::sort(seen.begin(), seen.end());
    const double distinct = static_cast<double>(std::unique(seen.begin(), seen.end()) - seen.begin());
    const double h = std::stod(p.at("heads"));
    EXPECT_DOUBLE_EQ(k.min_bytes, 2.0 * static_cast<double>(b * sq) * h * (576 + 512) + distinct * 656);
  }
}

// The problem's host data is built once and shared: by the hooks of one instantiate, a second instantiate, and the
// reference's threads, which wait for the one build; another kind or problem builds its own; a build that throws
// is not kept.
struct Counted {
  explicit Counted(const Values&) { ++builds; }
  std::size_t host_bytes() const { return 1; }
  static inline std::atomic<int> builds{0};
};

TEST(MlaSparseDecode, ProblemDataIsBuiltOncePerProblem) {
  const Values a = sparse().problem.defaults();
  Values b = a;
  b.set("batch", "3");
  const auto first = mla::problem_data<Counted>("test.counted", a);
  EXPECT_EQ(Counted::builds.load(), 1);
  EXPECT_EQ(mla::problem_data<Counted>("test.counted", a).get(), first.get());
  EXPECT_EQ(Counted::builds.load(), 1);
  EXPECT_NE(mla::problem_data<Counted>("test.counted", b).get(), first.get());
  EXPECT_NE(mla::problem_data<Counted>("test.other", a).get(), first.get());
  EXPECT_EQ(Counted::builds.load(), 3);
  Values c = a;
  c.set("batch", "7");
  std::vector<std::thread> threads;
  std::vector<const void*> got(8);
  for (std::size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] { got[t] = mla::problem_data<Counted>("test.counted", c).get(); });
  for (auto& th : threads) th.join();
  EXPECT_EQ(Counted::builds.load(), 4);
  for (const void* g : got) EXPECT_EQ(g, got[0]);
  int tries = 0;
  const auto fail = [&]() -> std::shared_ptr<const void> {
    ++tries;
    throw std::runtime_error("no");
  };
  EXPECT_THROW(mla::shared_problem_data("test.throw", a, fail, [](const void*) { return std::size_t{1}; }),
               std::runtime_error);
  EXPECT_THROW(mla::shared_problem_data("test.throw", a, fail, [](const void*) { return std::size_t{1}; }),
               std::runtime_error);
  EXPECT_EQ(tries, 2) << "a failed build is tried again";

  // The spec itself: a second instantiate of one problem (bench's check, then its run) gives the same data.
  const KV p = {{"batch", "3"}, {"seq_q", "2"}, {"seq_k", "900"}, {"topk", "256"}};
  EXPECT_EQ(data_of<std::int32_t>(make(p), "indices"), data_of<std::int32_t>(make(p), "indices"));
}

// uniform_desc and lean_softmax are consumer 0's with one Q K^T warpgroup: with two they were dropped without a word.
TEST(MlaSparseDecode, OneWarpgroupSwitchesAreRefusedWithTwo) {
  for (const char* key : {"uniform_desc", "lean_softmax"}) {
    auto r = instantiate(sparse(), {}, {{key, "true"}, {"qk_warpgroups", "2"}}, limits_for_arch("sm_90a"));
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_NE(r.status().message().find(std::string(key) + "=true is the one Q K^T warpgroup's"), std::string::npos)
        << r.status().message();
    EXPECT_TRUE(instantiate(sparse(), {}, {{key, "true"}}, limits_for_arch("sm_90a")).ok()) << key;
    EXPECT_TRUE(instantiate(sparse(), {}, {{key, "false"}, {"qk_warpgroups", "2"}}, limits_for_arch("sm_90a")).ok());
  }
}

// A switch of one gather's code, or of CTAs with (without) a crossover peer, set where no CTA runs that code was dropped
// without a word: refused naming it, what it resolved to and what to change; its default, auto and off values pass,
// and so does each where it applies.
TEST(MlaSparseDecode, SwitchesThatCannotApplyAreRefusedNamingThem) {
  const KV p128 = {{"batch", "4"}, {"seq_k", "4096"}, {"topk", "512"}};
  const KV p64 = {{"batch", "4"}, {"heads", "64"}, {"seq_k", "4096"}, {"topk", "512"}};
  const DeviceLimits lim = limits_for_arch("sm_90a");
  struct Case {
    KV p, c;
    std::string names;  // the refusal's start
    std::vector<std::string> says;  // and what else it must say
  };
  const std::vector<Case> refused = {
      // the register gather everywhere (auto at one Q K^T warpgroup; paired where the CTAs pair)
      {p128, {{"lookahead", "true"}}, "lookahead=true", {"gather=auto takes regs", "gather=copies"}},
      {p64, {{"lookahead", "true"}, {"gather", "regs"}}, "lookahead=true", {"gather=regs"}},
      {p128, {{"lookahead", "true"}, {"gather", "paired"}}, "lookahead=true", {"gather=paired", "every CTA has a crossover peer"}},
      {p128, {{"rope_direct", "on"}}, "rope_direct=on", {"registers", "rope_direct at unpaired"}},
      {p128, {{"dequant_rows", "1"}}, "dequant_rows=1", {"hybrid being off", "dequant_rows at 2"}},
      {p64, {{"dequant_rows", "1"}, {"hybrid", "false"}}, "dequant_rows=1", {"or hybrid=true"}},
      {p128, {{"dequant_rows", "1"}, {"crossover", "false"}}, "dequant_rows=1", {"hybrid off"}},
      // the copies gather everywhere
      {p128, {{"late_reload", "true"}, {"gather", "copies"}}, "late_reload=true", {"gather=copies", "gather=regs"}},
      {p128, {{"late_reload", "true"}, {"qk_warpgroups", "2"}}, "late_reload=true", {"gather=auto takes copies"}},
      {p64, {{"late_reload", "true"}, {"gather", "paired"}}, "late_reload=true", {"gather=paired and no CTA has a crossover peer"}},
      // hybrid: the register gather in CTAs without a peer
      {p128, {{"hybrid", "true"}}, "hybrid=true", {"every CTA has a crossover peer", "crossover=false"}},
      {p64, {{"hybrid", "true"}, {"gather", "copies"}}, "hybrid=true", {"gather by copies", "gather=regs"}},
      {p64, {{"hybrid", "true"}, {"gather", "paired"}}, "hybrid=true", {"gather by copies (gather=paired", "set gather=regs"}},
      {p128, {{"hybrid", "true"}, {"gather", "paired"}}, "hybrid=true", {"every CTA has a crossover peer",
                                                                         "gather=regs with crossover=false"}},
      {p128, {{"hybrid", "true"}, {"dequant_rows", "1"}}, "hybrid=true", {"crossover=false"}},  // before dequant_rows
      {p128, {{"c1_rows", "2"}, {"hybrid", "true"}}, "hybrid=true", {"crossover peer"}},
      // c1_early without consumer 1's rows
      {p128, {{"c1_early", "true"}}, "c1_early=true", {"c1_rows resolves to 0", "auto: 2 only where"}},
      {p64, {{"c1_early", "true"}, {"c1_rows", "0"}}, "c1_early=true", {"(c1_rows=0)"}},
      // peer_copy without a CTA pair
      {p64, {{"peer_copy", "bulk"}}, "peer_copy=bulk", {"heads=64: one 64-head tile", "peer_copy at auto or store"}},
      {p128, {{"peer_copy", "bulk_half"}, {"crossover", "false"}}, "peer_copy=bulk_half", {"crossover=false", "set crossover=true"}},
      {p64, {{"peer_copy", "bulk_half"}, {"gather", "copies"}}, "peer_copy=bulk_half", {"no CTA has a crossover peer"}}};
  for (const Case& k : refused) {
    auto r = instantiate(sparse(), k.p, k.c, lim);
    ASSERT_FALSE(r.ok()) << k.names << " at heads=" << k.p.at("heads");
    EXPECT_EQ(r.status().code(), ErrorCode::unsupported);
    EXPECT_EQ(r.status().message().rfind("mla.sparse_decode: " + k.names, 0), 0u) << r.status().message();
    for (const std::string& s : k.says) EXPECT_NE(r.status().message().find(s), std::string::npos) << s << ": " << r.status().message();
  }
  const std::vector<std::pair<KV, KV>> pass = {
      {p128, {{"lookahead", "false"}, {"rope_direct", "off"}, {"late_reload", "false"}, {"hybrid", "false"},
              {"c1_early", "false"}, {"peer_copy", "store"}, {"dequant_rows", "2"}}},
      {p64, {{"peer_copy", "store"}, {"hybrid", "auto"}, {"c1_early", "auto"}}},
      {p128, {{"lookahead", "true"}, {"rope_direct", "on"}, {"dequant_rows", "1"}, {"gather", "copies"}}},
      {p64, {{"lookahead", "true"}, {"rope_direct", "on"}, {"dequant_rows", "1"}, {"gather", "paired"}}},  // copies
      {p64, {{"dequant_rows", "1"}}},                                   // hybrid's copied rows
      {p128, {{"dequant_rows", "1"}, {"hybrid", "true"}, {"crossover", "false"}}},
      {p128, {{"late_reload", "true"}}},
      {p128, {{"late_reload", "true"}, {"gather", "paired"}}},          // the pair's registers
      {p64, {{"hybrid", "true"}}},
      {p64, {{"c1_early", "true"}}},                                    // c1_rows auto: 2
      {p128, {{"c1_early", "true"}, {"c1_rows", "2"}, {"hybrid", "true"}, {"crossover", "false"}}},
      {p128, {{"peer_copy", "bulk_half"}}},
      {KV{{"batch", "4"}, {"heads", "96"}, {"seq_k", "4096"}, {"topk", "512"}}, {{"peer_copy", "bulk"}}}};
  for (const auto& [p, c] : pass) {
    auto r = instantiate(sparse(), p, c, lim);
    EXPECT_TRUE(r.ok()) << r.status().message();
  }
}

TEST(MlaSparseDecode, FlopsCountAsFlashMla) {
  const KernelInstance k = make({{"batch", "4"}, {"seq_q", "2"}, {"heads", "64"}, {"seq_k", "300"}, {"topk", "100"}});
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 64 * (576 + 512) * 4 * 2 * 100);
  const KernelInstance t = make({{"batch", "4"}, {"seq_q", "2"}, {"heads", "64"}, {"seq_k", "300"}, {"topk", "100"},
                                 {"topk_length", "true"}});
  const auto tl = data_of<std::int32_t>(t, "topk_length");
  double attended = 0;
  for (auto v : tl) attended += 2.0 * v;
  EXPECT_DOUBLE_EQ(t.flops, 2.0 * 64 * (576 + 512) * attended);
}

// A cache row's value c by the format's definition alone: byte c as e4m3 (sign, 4-bit exponent of bias 7, 3-bit
// mantissa, subnormals at exponent 0) times the f32 at byte 512 + 4 (c / 128); bf16 at byte 528 + 2 (c - 512).
double by_definition(const std::uint8_t* row, int c) {
  if (c >= 512) {
    std::uint32_t bits = static_cast<std::uint32_t>(row[528 + 2 * (c - 512)] | (row[529 + 2 * (c - 512)] << 8)) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  const int b = row[c], e = (b >> 3) & 15, m = b & 7;
  const double mag = e == 0 ? m / 8.0 * std::ldexp(1.0, -6) : (1 + m / 8.0) * std::ldexp(1.0, e - 7);
  float scale;
  std::memcpy(&scale, row + 512 + 4 * (c / 128), 4);
  return (b & 0x80 ? -mag : mag) * scale;
}

// Tiny problems the textbook way: every index resolved to its block and row, invalid and past-topk_length entries
// dropped, scores over 576 columns / 24, softmax, the first 512 columns, the sink's factor; +inf and 0 without keys.
TEST(MlaSparseDecode, ReferenceMatchesADirectComputation) {
  for (const KV& p : {KV{{"batch", "3"}, {"seq_q", "2"}, {"heads", "3"}, {"seq_k", "150"}, {"topk", "70"},
                         {"invalid", "true"}, {"topk_length", "true"}, {"sink", "true"}, {"block_size", "7"},
                         {"padded_blocks", "true"}},
                      KV{{"batch", "4"}, {"seq_q", "3"}, {"heads", "2"}, {"seq_k", "40"}, {"topk", "64"},
                         {"all_invalid", "true"}, {"zero_lengths", "true"}}}) {
    const KernelInstance k = make(p);
    SCOPED_TRACE(k.problem.to_string());
    const ReferenceInputs in = inputs_of(k);
    const auto &Q = in.tensor("Q"), &C = in.tensor("KV");
    const auto idx = data_of<std::int32_t>(k, "indices");
    const auto tl = data_of<std::int32_t>(k, "topk_length");
    const auto sink = data_of<float>(k, "sink");
    const int B = static_cast<int>(k.problem.integer("batch")), S = static_cast<int>(k.problem.integer("seq_q")),
              H = static_cast<int>(k.problem.integer("heads")), topk = static_cast<int>(k.problem.integer("topk")),
              bs = static_cast<int>(k.problem.integer("block_size"));
    const int rows_per_block = bs + (k.problem.boolean("padded_blocks") ? 1 : 0);
    const std::int64_t capacity = C.shape[0] * bs;
    std::vector<std::int64_t> all_o(static_cast<std::size_t>(B * S * H * 512)), all_l(static_cast<std::size_t>(B * H * S));
    for (std::size_t i = 0; i < all_o.size(); ++i) all_o[i] = static_cast<std::int64_t>(i);
    for (std::size_t i = 0; i < all_l.size(); ++i) all_l[i] = static_cast<std::int64_t>(i);
    const auto O = k.spec->reference(k.problem, in, "O", all_o).value();
    const auto L = k.spec->reference(k.problem, in, "LSE", all_l).value();
    int empty_rows = 0, scaled = 0;
    for (int b = 0; b < B; ++b)
      for (int s = 0; s < S; ++s) {
        std::vector<const std::uint8_t*> keys;
        for (int j = 0; j < std::min(tl[static_cast<std::size_t>(b)], topk); ++j) {
          const std::int32_t e = idx[static_cast<std::size_t>((b * S + s) * topk + j)];
          if (e < 0 || e >= capacity) continue;
          keys.push_back(C.data.data() + (static_cast<std::int64_t>(e / bs) * rows_per_block + e % bs) * 656);
        }
        for (int h = 0; h < H; ++h) {
          std::vector<double> score;
          for (const auto* row : keys) {
            double dot = 0;
            for (int c = 0; c < 576; ++c) dot += Q.at(((b * S + s) * H + h) * 576 + c) * by_definition(row, c);
            score.push_back(dot / 24.0);
          }
          double z = 0;
          for (double v : score) z += std::exp(v);
          const double lse = L[static_cast<std::size_t>((b * H + h) * S + s)];
          const double f = keys.empty() ? 0 : 1.0 / (1.0 + std::exp(sink[static_cast<std::size_t>(h)] - std::log(z)));
          if (keys.empty()) {
            ++empty_rows;
            EXPECT_EQ(lse, std::numeric_limits<double>::infinity());
          } else {
            EXPECT_NEAR(lse, std::log(z), 1e-11);
          }
          scaled += f > 0 && f < 1;
          for (int c = 0; c < 512; c += 29) {
            double o = 0;
            for (std::size_t j = 0; j < keys.size(); ++j) o += std::exp(score[j]) / z * by_definition(keys[j], c);
            EXPECT_NEAR(O[static_cast<std::size_t>(((b * S + s) * H + h) * 512 + c)], o * f, 1e-11);
          }
        }
      }
    if (k.problem.boolean("all_invalid")) {
      EXPECT_GT(empty_rows, 0);
    }
    if (k.problem.boolean("sink")) {
      EXPECT_GT(scaled, 0);
    }
  }
}

// The plan's objects are shown: mla.decode's tiles and accumulators and the producer's dequant fragments.
TEST(MlaSparseDecode, LayoutsName) {
  const KernelInstance k = make({{"batch", "2"}, {"seq_k", "100"}, {"topk", "64"}});
  std::set<std::string> names;
  for (const auto& l : k.spec->layouts(k.problem, k.config)) names.insert(l.name);
  for (const char* n : {"smem_Q", "smem_KV", "smem_P", "acc_S", "acc_O", "dequant_nope_tv", "dequant_rope_tv"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(k.spec->probes.back(), "copy_wait");
}

}  // namespace
}  // namespace tl
