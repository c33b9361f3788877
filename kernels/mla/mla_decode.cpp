// Host spec of mla.decode: MLA decoding over a paged KV cache (FlashMLA's dense decode), split-KV with in-kernel combine.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "mla/mla_decode_plan.hpp"
#include "mla/mla_host.hpp"
#include "mla/mla_schedule.hpp"
#include "runtime/core/numeric.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

constexpr std::int64_t kDQK = kMlaDimQK, kDV = kMlaDimV, kBlock = kMlaBlock;

// rope_regs=auto: on where a request has more than two 64-row tiles (seq_q x heads > 128, where uniform_desc's auto
// is on too) with the unchained schedule, unless uniform_desc=false (docs/perf.md, mladec8: 1.006-1.011x at CB 4096
// / 8192 on the H100, even at MB 4096, L32 not shown); true: also with chain, whose consumer 0 then holds it.
bool rope_regs(const Values& p, const Values& c) {
  if (c.integer("qk_warpgroups") != 1) return false;
  const std::string& v = c.text("rope_regs");
  return v == "true" || (v == "auto" && !c.boolean("chain") && c.text("uniform_desc") != "false" &&
                         p.integer("seq_q") * p.integer("heads") > 2 * kBlock);
}

// tile_order: 0 apart (grid (parts, row tiles)), 1 adjacent (grid (row tiles, parts): a part's tiles, which read the
// same KV blocks, consecutive CTAs, as FlashMLA's grid), 2 cluster (adjacent, a part's tiles one cluster: one GPC).
// auto: adjacent where a request has two or more row tiles (seq_q x heads > 64) without chain (docs/perf.md, mladec9:
// 1.045-1.19x apart at s_q 1, h_q 128, 32k, whose apart runs took 0.506-0.572 ms launch to launch, 1.036-1.046x at
// s_q 2, h_q 128, 4096 / 8192 on the H100); with one tile the grid is the same either way (even at s_q 1, h_q 64),
// so apart; with chain apart (not timed there).
int tile_order(const Values& p, const Values& c) {
  const std::string& o = c.text("tile_order");
  if (o == "auto") return p.integer("seq_q") * p.integer("heads") > kBlock && !c.boolean("chain") ? 1 : 0;
  return o == "cluster" ? 2 : o == "adjacent" ? 1 : 0;
}

// lean_softmax=auto: on where a request has more than two row tiles (seq_q x heads > 128, where rope_regs' and
// uniform_desc's autos are on too) with one Q K^T warpgroup, unchained (docs/perf.md, mladec10: 1.003-1.006x at s_q 2,
// h_q 128, 4096 / 8192 in both A B B A rounds on the H100, medians and minima, 1.002-1.013x at 2048; s_q 1, h_q 128,
// 32k 1.003x then 0.993x: off there; s_q 1, h_q 64: 1.001-1.005x, off there); true / false force it (qk_warpgroups
// 1, unchained only: the chained consumer and the two-warpgroup softmax have their own code).
bool lean_softmax(const Values& p, const Values& c) {
  if (c.integer("qk_warpgroups") != 1 || c.boolean("chain")) return false;
  const std::string& v = c.text("lean_softmax");
  return v == "true" || (v == "auto" && p.integer("seq_q") * p.integer("heads") > 2 * kBlock);
}

// The kernel's template argument for a validated problem and config.
MlaDecodeConfig mla_config(const Values& p, const Values& c) {
  return {.causal = p.boolean("causal"),
          .bf16 = p.dtype() == DType::bf16,
          .qk_warpgroups = static_cast<int>(c.integer("qk_warpgroups")),
          .vec_store = c.boolean("vec_store"),
          .evict_first = c.text("evict_first") == "on" ||
                         (c.text("evict_first") == "auto" && p.integer("seq_q") * p.integer("heads") <= kBlock),
          .uniform_desc = c.integer("qk_warpgroups") == 1 && !c.boolean("chain") &&
                          (c.text("uniform_desc") == "true" || rope_regs(p, c) ||
                           (c.text("uniform_desc") == "auto" && p.integer("seq_q") * p.integer("heads") > 2 * kBlock)),
          .chain = c.boolean("chain") && c.integer("qk_warpgroups") == 1,
          .rope_regs = rope_regs(p, c),
          .tile_fast = tile_order(p, c) != 0,
          .lean_softmax = lean_softmax(p, c)};
}

// The problem, in FlashMLA's names: q [batch, seq_q, heads, 576]; a paged cache [num_blocks, 64, 1, 576] whose
// first 512 columns are V; per-request cache_seqlens; out [batch, seq_q, heads, 512], lse [batch, heads, seq_q].
Schema mla_problem() {
  return {{ParamSpec::integer("batch", 128, 1, 1 << 14, "requests (b)"),
           ParamSpec::integer("seq_q", 1, 1, 64, "query tokens per request (s_q; > 1 for speculative decoding)"),
           ParamSpec::integer("heads", 64, 1, 1024, "query heads (h_q), all sharing the one KV head"),
           ParamSpec::integer("seq_k", 4096, 0, 1 << 20,
                              "cached tokens per request (s_k); with varlen the mean the lengths are drawn around"),
           ParamSpec::boolean("varlen", false,
                              "per-request lengths max(N(seq_k, seq_k/2), seq_q), as FlashMLA's test draws them"),
           ParamSpec::boolean("causal", false, "query token s sees cache tokens j < len - seq_q + s + 1"),
           ParamSpec::boolean("zero_lengths", false,
                              "about half the requests get an empty cache (FlashMLA's have_zero_seqlen_k)"),
           ParamSpec::enumeration("dtype", "bf16", {"bf16", "f16"}, "type of q, the cache and out (lse is f32)")}};
}

Status refuse(std::string why) { return make_error(ErrorCode::unsupported, std::move(why)); }
double d(std::int64_t v) { return static_cast<double>(v); }

}  // namespace

// FlashMLA's test caches, for both MLA decode specs (mla_schedule.hpp).
mla::PagedCache mla::make_paged_cache(std::int64_t b, std::int64_t sk, std::int64_t min_len, bool varlen, bool zeros,
                                      std::int64_t block) {
  PagedCache c;
  c.lens.assign(static_cast<std::size_t>(b), static_cast<std::int32_t>(sk));
  for (std::int64_t i = 0; i < b; ++i) {
    std::int64_t len = sk;
    if (varlen) {  // Box-Muller from two uniforms of (seed, i): the same lengths on every machine
      const double u1 = std::max(num::uniform01(0x31A0, static_cast<std::uint64_t>(i)), 1e-9);
      const double u2 = num::uniform01(0x31A1, static_cast<std::uint64_t>(i));
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      len = static_cast<std::int64_t>(std::max(d(sk) + z * d(sk) / 2.0, d(min_len)));
    }
    if (zeros && num::uniform01(0x31A2, static_cast<std::uint64_t>(i)) < 0.5) len = 0;
    c.lens[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(std::min<std::int64_t>(len, 1 << 24));
  }
  const std::int64_t longest = c.lens.empty() ? 0 : *std::max_element(c.lens.begin(), c.lens.end());
  c.table_stride = std::max<std::int64_t>(1, ((longest + 255) / 256 * 256 + block - 1) / block);
  std::int64_t used = 0;
  for (auto l : c.lens) used += (l + block - 1) / block;
  c.num_blocks = std::max<std::int64_t>(used, 1);
  // Physical blocks 0 .. used-1 dealt out in a shuffled order (Fisher-Yates on hashes).
  std::vector<std::int32_t> perm(static_cast<std::size_t>(used));
  std::iota(perm.begin(), perm.end(), 0);
  for (std::int64_t i = used - 1; i > 0; --i)
    std::swap(perm[static_cast<std::size_t>(i)],
              perm[static_cast<std::size_t>(num::hash64(0x31A3, static_cast<std::uint64_t>(i)) % static_cast<std::uint64_t>(i + 1))]);
  c.table.assign(static_cast<std::size_t>(b * c.table_stride), 2147480000);
  std::size_t next = 0;
  for (std::int64_t i = 0; i < b; ++i)
    for (std::int64_t j = 0; j < (c.lens[static_cast<std::size_t>(i)] + block - 1) / block; ++j)
      c.table[static_cast<std::size_t>(i * c.table_stride + j)] = perm[next++];
  return c;
}

namespace {

// Everything the problem determines: lengths, the shuffled block table, and (with the config) the schedule.
struct Dims {
  std::int64_t b, sq, h, sk, rows, m_tiles;
  bool causal, varlen, zeros;
  std::vector<std::int32_t> lens;   // cache_seqlens
  std::int64_t table_stride = 1;    // block-table columns: the longest request padded to 256 tokens, in blocks
  std::int64_t num_blocks = 1;      // physical blocks in the cache: the requests' blocks, at least one
  std::vector<std::int32_t> table;  // [b, table_stride]; entries past a request's blocks hold FlashMLA's sentinel

  explicit Dims(const Values& p)
      : b(p.integer("batch")), sq(p.integer("seq_q")), h(p.integer("heads")), sk(p.integer("seq_k")),
        causal(p.boolean("causal")), varlen(p.boolean("varlen")), zeros(p.boolean("zero_lengths")) {
    rows = sq * h;
    m_tiles = (rows + 63) / 64;
    mla::PagedCache c = mla::make_paged_cache(b, sk, sq, varlen, zeros, kBlock);
    lens = std::move(c.lens);
    table_stride = c.table_stride;
    num_blocks = c.num_blocks;
    table = std::move(c.table);
  }
  std::int64_t len(std::int64_t i) const { return lens[static_cast<std::size_t>(i)]; }
  double total_len() const { return std::accumulate(lens.begin(), lens.end(), 0.0); }
};

// The split-KV schedule for `sms` SMs (0: the device's).
mla::SplitSchedule schedule(const Dims& x, const Values& c, const DeviceLimits& l) {
  const std::int64_t sms = c.integer("sms") > 0 ? c.integer("sms") : std::max(l.sm_count, 1);
  return mla::make_split_schedule(x.lens, static_cast<int>(kBlock), static_cast<int>(x.m_tiles), static_cast<int>(sms),
                                  static_cast<int>(c.integer("overhead_blocks")), static_cast<int>(c.integer("tie_gap")),
                                  static_cast<int>(c.integer("merge_blocks")));
}

// One query row (request r, position s, head hh) in float64: scores = q·k / sqrt(576) over the whole 576 columns,
// the softmax over the tokens the row sees, its LSE (+inf without keys, FlashMLA's convention) and all 512 columns
// of O (0 without keys). O is summed token by token over whole cache rows, so the pass reads the cache in order.
struct RefRow {
  double lse = 0;
  std::vector<double> o;
};

RefRow reference_row(const Dims& x, const HostTensor& Q, const HostTensor& KV, std::int64_t r, std::int64_t s,
                     std::int64_t hh) {
  const std::int64_t L = x.len(r);
  const std::int64_t keys = x.causal ? std::max<std::int64_t>(0, std::min(L, L - x.sq + s + 1)) : L;
  auto token_row = [&](std::int64_t j) {
    return (d(x.table[static_cast<std::size_t>(r * x.table_stride + j / kBlock)]) * kBlock + j % kBlock) * kDQK;
  };
  std::vector<double> q(static_cast<std::size_t>(kDQK)), w(static_cast<std::size_t>(keys));
  const std::int64_t q0 = ((r * x.sq + s) * x.h + hh) * kDQK;
  for (std::int64_t c = 0; c < kDQK; ++c) q[static_cast<std::size_t>(c)] = Q.at(q0 + c);
  double mx = -std::numeric_limits<double>::infinity(), sum = 0;
  for (std::int64_t j = 0; j < keys; ++j) {
    const std::int64_t k0 = token_row(j);
    double dot = 0;
    for (std::int64_t c = 0; c < kDQK; ++c) dot += q[static_cast<std::size_t>(c)] * KV.at(k0 + c);
    w[static_cast<std::size_t>(j)] = dot / 24.0;
    mx = std::max(mx, dot / 24.0);
  }
  for (double& v : w) sum += (v = std::exp(v - mx));
  RefRow row;
  row.lse = sum > 0 ? mx + std::log(sum) : std::numeric_limits<double>::infinity();
  row.o.assign(static_cast<std::size_t>(kDV), 0.0);
  for (std::int64_t j = 0; j < keys; ++j) {
    const std::int64_t v0 = token_row(j);
    const double wj = w[static_cast<std::size_t>(j)];
    for (std::int64_t c = 0; c < kDV; ++c) row.o[static_cast<std::size_t>(c)] += wj * KV.at(v0 + c);
  }
  if (sum > 0)
    for (double& v : row.o) v /= sum;
  return row;
}

Result<std::vector<double>> mla_reference(const Values& p, const ReferenceInputs& in, const std::string& output,
                                          const std::vector<std::int64_t>& idx) {
  if (output != "O" && output != "LSE")
    return make_error(ErrorCode::invalid_argument, "mla.decode has outputs O and LSE, not " + output);
  const Dims x(p);
  const HostTensor &Q = in.tensor("Q"), &KV = in.tensor("KV");
  // The query row (r, s, h) of each sampled position, as key (r * s_q + s) * h_q + h; sampled O positions come in
  // whole rows, so the distinct rows are few and each costs len · 1088 products: computed on every hardware thread.
  auto row_of = [&](std::int64_t i) -> std::int64_t {
    if (output == "LSE") {  // [b, h, s_q]
      const std::int64_t r = i / (x.h * x.sq), hh = (i / x.sq) % x.h, s = i % x.sq;
      return (r * x.sq + s) * x.h + hh;
    }
    return i / kDV;  // O [b, s_q, h, 512]: the row key is the element's row
  };
  std::map<std::int64_t, RefRow> rows;
  for (std::int64_t i : idx) rows.emplace(row_of(i), RefRow{});
  // Rows one after another: compute_reference runs chunks of whole rows on every core.
  for (auto& [key, row] : rows) row = reference_row(x, Q, KV, key / (x.sq * x.h), (key / x.h) % x.sq, key % x.h);
  std::vector<double> out;
  out.reserve(idx.size());
  for (std::int64_t i : idx) {
    const RefRow& rr = rows.at(row_of(i));
    out.push_back(output == "LSE" ? rr.lse : rr.o[static_cast<std::size_t>(i % kDV)]);
  }
  return out;
}

// FlashMLA's test matrix, cut to what a CPU reference affords: b in {1, 2, 6, 64}, s_q in {1, 2, 4}, s_k in
// {20, 140, 4096}, varlen and causal on and off, empty caches; heads 16 (row tiles that span query positions),
// 64 and 128 (several row tiles); `sms` stays the device's (132 on the H100), so small batches split every request.
std::vector<std::map<std::string, std::string>> mla_test_problems(bool full) {
  using KV = std::map<std::string, std::string>;
  std::vector<KV> s = {
      {{"batch", "1"}, {"seq_q", "1"}, {"heads", "64"}, {"seq_k", "20"}},
      {{"batch", "2"}, {"seq_q", "2"}, {"heads", "16"}, {"seq_k", "140"}, {"causal", "true"}},
      {{"batch", "6"}, {"seq_q", "1"}, {"heads", "64"}, {"seq_k", "4096"}, {"varlen", "true"}},
      {{"batch", "6"}, {"seq_q", "4"}, {"heads", "16"}, {"seq_k", "140"}, {"varlen", "true"}, {"causal", "true"}, {"zero_lengths", "true"}},
      {{"batch", "2"}, {"seq_q", "2"}, {"heads", "128"}, {"seq_k", "4096"}, {"causal", "true"}},
      {{"batch", "64"}, {"seq_q", "1"}, {"heads", "16"}, {"seq_k", "140"}, {"varlen", "true"}, {"zero_lengths", "true"}},
  };
  if (full)
    s.insert(s.end(), {
        {{"batch", "64"}, {"seq_q", "2"}, {"heads", "64"}, {"seq_k", "4096"}, {"varlen", "true"}, {"causal", "true"}},
        {{"batch", "1"}, {"seq_q", "4"}, {"heads", "128"}, {"seq_k", "4096"}, {"causal", "true"}},
        {{"batch", "2"}, {"seq_q", "1"}, {"heads", "64"}, {"seq_k", "20"}, {"zero_lengths", "true"}},
        {{"batch", "6"}, {"seq_q", "2"}, {"heads", "64"}, {"seq_k", "140"}, {"causal", "false"}, {"varlen", "true"}},
    });
  return s;
}

KernelSpec mla_decode_spec() {
  KernelSpec k;
  k.name = "mla.decode";
  k.family = "attention";
  k.tensor_cores = true;
  k.summary = "MLA decoding over a paged KV cache (FlashMLA dense decode): split-KV schedule, TMA, wgmma, in-kernel combine";
  k.source = "mla/mla_decode.cuh";
  k.min_cc = 90;
  k.archs = {"sm_90a"};
  k.problem = mla_problem();
  // Defaults are the fastest measured on the H100 (docs/perf.md, 2026-11-24): 1 QK warpgroup (with the batched
  // combine, 1.22-1.27x over 2 on s_q 2 / h_q 128, equal on s_q 1 / h_q 64), overhead_blocks 2, tie_gap 3 and the
  // 16-byte stores (2.549-2.554 TB/s at MB 4096 with the rest of mla4's epilogue). The switches kept are the ones
  // whose other setting is a measured ablation; experiments measured slower on every shape they were tried on (an
  // L2 prefetch of KV blocks ahead (again as l2_ahead, a TMA tensor prefetch of block b + 1 or b + 2 into L2: 0.78-0.82x
  // at s_q 1, h_q 64, 4096-16384 on the H200, docs/perf.md, mlamb), Q K^T behind P V, f32 partials, a deferred split
  // count, a rotated part order)
  // and neutral ones (the two-pass merge, no prologue prefetches) were removed: their code is in git history.
  k.config = {{ParamSpec::one_of("qk_warpgroups", 1, {1, 2},
                                 "consumer warpgroups computing Q K^T: 2 (32 tokens each, row maxima exchanged) or 1 "
                                 "(all 64 tokens, reads Q once per block; the softmax on that warpgroup)"),
               ParamSpec::integer("sms", 0, 0, 1024,
                                  "SMs the split-KV schedule balances over (0: the device's, 132 on an H100 SXM); parts = sms / row tiles "
                                  "(H200: 264 0.87x at s_q 1, h_q 128, 32k, 0.97-0.98x at CB; 128 0.99x; docs/perf.md, mlasched)"),
               ParamSpec::integer("overhead_blocks", 2, 0, 64,
                                  "cost of one split in KV blocks when the schedule cuts requests (FlashMLA: 5; 2 measured "
                                  "+0.7-1.2% at memory-bound 4096, -0.6% compute-bound, on the H100; on the H200 1 / 3 / 5 within "
                                  "0.7% of 2 in a screen, 3 even in four alternated rounds; 0 0.99x, 8 0.97-0.99x: docs/perf.md, mlasched)"),
               ParamSpec::integer("tie_gap", 3, 0, 16,
                                  "KV blocks less for a part that holds one request's middle split, so that it does "
                                  "not end together with the part before it (two partial writes, then a merge); the "
                                  "payload grows until every request still fits. 0: off (alone -0.4..+0.7% at MB 4096, "
                                  "no win; with the rest of the mla4 epilogue +0.2-0.4% in four passes, on the H100; on the "
                                  "H200 0 and 6 not better at s_q 1, h_q 128, 32k, no change of schedule at CB)"),
               ParamSpec::integer("merge_blocks", 2, 0, 64,
                                  "cost in KV blocks of folding one split's partial into a request's merged output; "
                                  "the schedule cuts a request of B blocks into at most sqrt(B / merge_blocks) pieces "
                                  "(few, long requests use fewer SMs and merge fewer partials; 2 measured 1.5-4.7x "
                                  "faster than no bound at b 1-6, equal at b 32 and 128, on the H200). 0: no bound"),
               ParamSpec::boolean("vec_store", true,
                                  "16-bit partials and outputs stored as 16-byte vectors after a quad transpose by "
                                  "shuffles (a quarter of the store instructions) instead of 4-byte pairs (+1.4-2.4% at "
                                  "MB 4096, +3% at CB 4096 on the H100)"),
               ParamSpec::enumeration("evict_first", "auto", {"auto", "on", "off"},
                                      "KV blocks loaded with an L2 evict_first policy (FlashMLA's cache hint). auto: "
                                      "on when the problem has one row tile (seq_q x heads <= 64), whose blocks no "
                                      "other CTA reads (+2.4-7.6% at s_q 1, h_q 64 on the H100); off with several, "
                                      "which read each block from L2 after the first (on: -1.3..-1.9% at s_q 2, h_q 128)"),
               ParamSpec::enumeration("uniform_desc", "auto", {"auto", "true", "false"},
                                      "true: the consumers' wgmma descriptors are built from values ptxas can prove "
                                      "warp-uniform (redux.sync of the KV ring counter per block and of the descriptors' "
                                      "high word once), so each k16 step is one uniform-register add instead of "
                                      "per-thread address math and two R2UR per wgmma (Q K^T's issue 495 -> 216 SASS "
                                      "instructions, R2UR 104 -> 22 at CB 4096); qk_warpgroups 1 only (with 2 the build "
                                      "spills 4 B: off there). auto: on where a request has more than two row tiles "
                                      "(seq_q x heads > 128: 1.008-1.013x at FlashMLA's compute-bound s_q 2, h_q 128 on "
                                      "the H100, both rounds, medians and minima); off at fewer (s_q 1, h_q 128 at 32k: "
                                      "not shown to win, runs bimodal; s_q 1, h_q 64: 0.997-1.002x; docs/perf.md)"),
               ParamSpec::boolean("chain", false,
                                  "the two consumer warpgroups chained over pairs of KV blocks (mla.sparse_prefill's "
                                  "schedule, FlashMLA's): each computes Q K^T and the softmax of its own block at the "
                                  "partner's running maximum and P V of both, the stages loaded and freed in halves "
                                  "(qk_warpgroups 1 only; its descriptors are per thread, uniform_desc does not apply). "
                                  "Measured 0.97-0.98x the default at CB 4096, 0.996x at CB 8192, 0.91-0.93x at MB "
                                  "4096, mixed at L32 on the H100: two Q K^T at once share the shared-memory reads "
                                  "that bound them (docs/perf.md, mladec7)"),
               ParamSpec::enumeration("rope_regs", "auto", {"auto", "true", "false"},
                                      "true: Q's RoPE panel (columns 512-575) held in the Q K^T warpgroup's registers "
                                      "as wgmma A fragments (16 registers a thread, loaded by ldmatrix once per "
                                      "request, as FlashMLA's dense decode holds it), so Q K^T's last four of 36 k16 "
                                      "steps read only K from shared memory (8 of its 144 KiB of shared-memory reads "
                                      "a block less). qk_warpgroups 1 only. Unchained it takes uniform_desc with it "
                                      "(with per-thread descriptors its build spills 32-52 B); with chain, consumer "
                                      "0's Q K^T only (with consumer 1's too the build spills 48 B at CB 4096; at "
                                      "s_q 1 consumer 0's alone spills 44 B). auto: on where a request has more than "
                                      "two row tiles (seq_q x heads > 128) without chain, unless uniform_desc=false: "
                                      "1.006-1.011x at FlashMLA's compute-bound s_q 2, h_q 128 (4k and 8k) on the "
                                      "H100, four alternated rounds in two calls, medians and minima; off at s_q 1 "
                                      "(h_q 64: even; h_q 128 at 32k: bimodal runs, not shown; docs/perf.md, "
                                      "mladec8)"),
               ParamSpec::enumeration("tile_order", "auto", {"auto", "apart", "adjacent", "cluster"},
                                      "where an SM part's row tiles run, which read the same KV blocks: apart (CTAs p "
                                      "and p + num_parts of the grid (num_parts, row tiles)), adjacent (grid (row "
                                      "tiles, num_parts): consecutive CTAs, row tiles fastest as FlashMLA's grid; "
                                      "mla.sparse_prefill's head_order), or cluster (adjacent, a part's tiles one "
                                      "cluster: one GPC; at most 8 tiles). apart pairs the tiles on SMs of different TPCs, differently each "
                                      "launch, and their walks drift apart (s_q 1, h_q 128, 32k: 0.506-0.572 ms from "
                                      "launch to launch); adjacent keeps each pair on one TPC in lockstep (0.480-0.484 "
                                      "ms, 1.045-1.19x; s_q 2, h_q 128: 1.036-1.046x; cluster no better; on the H100, "
                                      "docs/perf.md, mladec9). auto: adjacent where a request has more than one row "
                                      "tile (seq_q x heads > 64) without chain, else apart (one tile: the same grid). cluster "
                                      "on the H200: 0.52x at s_q 2, h_q 128, even at s_q 1, h_q 128"),
               ParamSpec::enumeration("lean_softmax", "auto", {"auto", "true", "false"},
                                      "true: consumer 0's softmax with fewer instructions (mla.sparse_decode's "
                                      "lean_softmax; exact): P into the P tile by stmatrix.x4 (4 stores a thread and "
                                      "block instead of 16 32-bit ones), each row's max and sum chains started from the "
                                      "first pair of values instead of -inf and 0. The softmax is the exposed part of "
                                      "consumer 0's block at the compute-bound shapes (the CB 8192 timeline: 667 -> 549 "
                                      "ns a block in the probe build). qk_warpgroups 1, unchained only. auto: on where "
                                      "a request has more than two row tiles (seq_q x heads > 128): 1.003-1.006x at "
                                      "FlashMLA's compute-bound s_q 2, h_q 128 (4096 and 8192) in both A B B A rounds "
                                      "on the H100, medians and minima; off at s_q 1 (h_q 128 at 32k: 1.003x then "
                                      "0.993x; h_q 64: 1.001-1.005x; docs/perf.md, mladec10)")}};
  // --full also runs two QK warpgroups with the 4-byte pair stores, and the epilogue and schedule before mla4's
  // (pair stores, no tie gap, no bound on the pieces: small batches merge 60+ splits) with FlashMLA's split cost.
  k.test_configs = [] {
    return std::vector<std::map<std::string, std::string>>{
        {{"qk_warpgroups", "2"}, {"vec_store", "false"}},
        {{"vec_store", "false"}, {"tie_gap", "0"}, {"overhead_blocks", "5"}, {"merge_blocks", "0"}}};
  };
  k.can_implement = [](const Values& p, const Values& c, const DeviceLimits& limits) -> Status {
    if (limits.cc < 90 || limits.arch.find('a') == std::string::npos)
      return refuse("mla.decode uses TMA, wgmma and setmaxnreg: it needs sm_90a (a Hopper GPU), not " + limits.arch);
    const MlaDecodePlan plan = make_plan(mla_config(p, c));
    if (static_cast<std::int64_t>(plan.smem_bytes) > limits.smem_per_block_optin)
      return refuse("mla.decode needs " + std::to_string(plan.smem_bytes) + " bytes of shared memory per block, over " +
                    limits.arch + "'s " + std::to_string(limits.smem_per_block_optin));
    // Switches that only the one-warpgroup (and unchained) consumers have: set explicitly where they cannot apply,
    // they were dropped without a word (the run record then named a schedule that did not run).
    const bool one_wg = c.integer("qk_warpgroups") == 1;
    if (c.boolean("chain") && !one_wg)
      return refuse("chain=true chains consumer 0's Q K^T with consumer 1's: it needs qk_warpgroups=1 (set one of them)");
    for (const char* key : {"rope_regs", "uniform_desc", "lean_softmax"})
      if (c.text(key) == "true" && (!one_wg || (c.boolean("chain") && std::string(key) != "rope_regs")))
        return refuse(std::string(key) + "=true is the one Q K^T warpgroup's" +
                      (std::string(key) == "rope_regs" ? "" : ", unchained") + ": it needs qk_warpgroups=1" +
                      (std::string(key) == "rope_regs" ? "" : " and chain=false") + " (or " + key + "=auto)");
    if (tile_order(p, c) == 2 && (p.integer("seq_q") * p.integer("heads") + kBlock - 1) / kBlock > 8)
      return refuse("tile_order=cluster makes a part's row tiles one cluster, at most 8 (portable cluster size): this "
                    "problem has " + std::to_string((p.integer("seq_q") * p.integer("heads") + kBlock - 1) / kBlock));
    if (p.integer("batch") * p.integer("seq_q") * p.integer("heads") * kDQK >= (std::int64_t{1} << 31))
      return refuse("batch * seq_q * heads * 576 elements of q do not fit 32-bit row coordinates: use a smaller batch");
    // The paged cache (each request's tokens in whole 64-token blocks, 576 16-bit values a token; varlen's lengths
    // are drawn around seq_k), q and out.
    const double b = static_cast<double>(p.integer("batch")), rows = b * d(p.integer("seq_q") * p.integer("heads"));
    const double tokens = b * d((p.integer("seq_k") + kBlock - 1) / kBlock * kBlock);
    return mla::memory_refusal(2.0 * (tokens * kDQK + rows * (kDQK + kDV)), "the KV cache, q and out",
                               "batch or seq_k");
  };
  k.name_expression = [](const Values& p, const Values& c) { return name_expression(mla_config(p, c)); };
  k.launch = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const Dims x(p);
    const mla::SplitSchedule sch = schedule(x, c, l);
    const MlaDecodePlan plan = make_plan(mla_config(p, c));
    LaunchGeometry g;
    // tile_order: apart (parts, row tiles); adjacent and cluster (row tiles, parts), a part's tiles consecutive.
    const int order = tile_order(p, c);
    const auto parts = static_cast<std::uint32_t>(sch.num_parts), tiles = static_cast<std::uint32_t>(x.m_tiles);
    g.grid.x = order ? tiles : parts;
    g.grid.y = order ? parts : tiles;
    if (order == 2) g.cluster.x = tiles;
    g.block.x = static_cast<std::uint32_t>(plan.threads);
    g.dynamic_smem = plan.smem_bytes;
    return g;
  };
  k.args = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const Dims x(p);
    const mla::SplitSchedule sch = schedule(x, c, l);
    const DType t = p.dtype();
    const MlaDecodePlan plan = make_plan(mla_config(p, c));
    // The partial results of split requests (O in the output's 16-bit type, LSE f32); one element when no request
    // is split.
    const std::int64_t ws = sch.any_split ? std::int64_t{sch.total_splits} * x.rows : 1;
    ArgSpec q = ArgSpec::tensor("Q", t, {x.b, x.sq, x.h, kDQK}, ArgRole::in, {.lo = -2, .hi = 2, .seed = 1});
    ArgSpec kv = ArgSpec::tensor("KV", t, {x.num_blocks, kBlock, 1, kDQK}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 2});
    q.is_param = kv.is_param = false;
    // One TMA box per panel of the plan's tiles: 64 columns (the swizzle span) x 64 rows, innermost first.
    const std::vector<std::int64_t> box = {plan.panel_cols, plan.rows};
    ArgSpec tq = ArgSpec::tensor_map("tma_q", "Q", box, swizzle_bytes(plan.swizzle));
    tq.map_shape = {x.b * x.rows, kDQK};
    ArgSpec tkv = ArgSpec::tensor_map("tma_kv", "KV", box, swizzle_bytes(plan.swizzle));
    tkv.map_shape = {x.num_blocks * kBlock, kDQK};
    ArgSpec table = ArgSpec::i32_data("block_table", x.table);
    table.shape = {x.b, x.table_stride};
    return std::vector<ArgSpec>{
        q, kv, tq, tkv,
        ArgSpec::tensor("O", t, {x.b, x.sq, x.h, kDV}, ArgRole::out),
        ArgSpec::tensor("LSE", DType::f32, {x.b, x.h, x.sq}, ArgRole::out),
        ArgSpec::i32_data("cache_seqlens", x.lens),
        table,
        ArgSpec::i32_data("sched_parts", sch.parts),
        ArgSpec::i32_data("num_splits", sch.num_splits),
        ArgSpec::tensor("o_acc", t, {ws, kDV}, ArgRole::scratch),
        ArgSpec::tensor("lse_acc", DType::f32, {ws}, ArgRole::scratch),
        ArgSpec::tensor("counters", DType::i32, {x.b * x.m_tiles}, ArgRole::scratch),
        ArgSpec::scalar("batch", DType::i32, d(x.b)),
        ArgSpec::scalar("seq_q", DType::i32, d(x.sq)),
        ArgSpec::scalar("heads", DType::i32, d(x.h)),
        ArgSpec::scalar("table_stride", DType::i32, d(x.table_stride))};
  };
  // FlashMLA's counting: both GEMMs over every cached token, causal or not.
  k.flops = [](const Values& p) {
    const Dims x(p);
    return 2.0 * d(x.sq) * d(x.h) * d(kDQK + kDV) * x.total_len();
  };
  // q, the cache read once (its used tokens) and out, as FlashMLA's benchmark counts bytes.
  k.min_bytes = [](const Values& p) {
    const Dims x(p);
    const double e = static_cast<double>(dtype_size(p.dtype()));
    return e * (d(x.b * x.rows) * d(kDQK + kDV) + x.total_len() * d(kDQK));
  };
  k.reference = mla_reference;
  // O is rounded to 16 bits (P too, before P·V); its entries are weighted means of V in [-1, 1]. LSE is fp32
  // arithmetic on exact products plus, for split requests, the combine's exp/log.
  k.tolerance = [](const Values&, DType t) {
    return t == DType::bf16 ? Tolerance{1e-2, 2e-2} : Tolerance{5e-3, 5e-3};
  };
  // Each sampled O row (512 values) and LSE entry costs the reference a whole softmax row (len · 576 products):
  // up to 96 rows and 256 entries, fewer for long caches (about 3e8 products per output, seconds on one core).
  k.sampling = [](const Values& p, const std::string& output) {
    const std::int64_t rows = std::clamp<std::int64_t>(300000000 / (kDQK * std::max<std::int64_t>(p.integer("seq_k"), 64)), 8, 96);
    return output == "O" ? OutputSampling{static_cast<std::uint64_t>(kDV), static_cast<std::uint64_t>(rows * kDV)}
                         : OutputSampling{1, static_cast<std::uint64_t>(std::min<std::int64_t>(256, 2 * rows))};
  };
  k.test_problems = mla_test_problems;
  k.probes = mla_decode_probe_names();
  // Per warp and KV block: at most four regions (begin + end each), plus per request the epilogue.
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const Dims x(p);
    const mla::SplitSchedule sch = schedule(x, c, l);
    return static_cast<std::uint32_t>(8 * sch.payload + 4 * x.b + 64);
  };
  // The plan's objects (smem_KV: each of the 2 stages). Left out: the plan's out_vec (the vectors after the quad
  // transpose of vec_store), which no hardware atom names.
  k.layouts = [](const Values& p, const Values& c) {
    return mla::consumer_layouts(make_plan(mla_config(p, c)), p.text("dtype"));
  };
  return k;
}

}  // namespace

KernelSpec mla_sparse_decode_spec();   // mla_sparse_decode.cpp
KernelSpec mla_sparse_prefill_spec();  // mla_sparse_prefill.cpp

std::vector<KernelSpec> mla_kernels() { return {mla_decode_spec(), mla_sparse_decode_spec(), mla_sparse_prefill_spec()}; }

}  // namespace tl
