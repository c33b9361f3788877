// Host spec of mla.sparse_decode: DeepSeek Sparse Attention decoding over FlashMLA's V3.2 FP8 paged KV cache.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

#include "mla/mla_schedule.hpp"
#include "mla/mla_sparse_decode_plan.hpp"
#include "mla/mla_host.hpp"
#include "runtime/core/numeric.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

constexpr std::int64_t kDQK = kMlaDimQK, kDV = kMlaDimV, kRow = kMlaFp8RowBytes, kEntries = kMlaBlock;
static_assert(int{kMlaFp8RowBytes} == int{num::kKvFp8RowBytes} && int{kMlaFp8Nope} == int{num::kKvFp8Nope} &&
                  int{kMlaFp8Group} == int{num::kKvFp8Group},
              "the kernel's cache rows are the fill's");

// Whether the CTAs run in crossover pairs (the launch's 2-CTA clusters; the kernel pairs under the same condition):
// crossover with an even number of 64-head tiles. heads 0: no problem at hand, no pairs.
bool crossover_pairs(bool crossover, std::int64_t heads) {
  return crossover && heads > 0 && (heads + 63) / 64 % 2 == 0;
}

// heads: the problem's, for peer_copy=auto (0: no problem at hand, auto taken as store: the plan does not depend on it).
MlaSparseDecodeConfig sparse_config(const Values& c, std::int64_t heads = 0) {
  const std::string rope = c.text("rope_direct");
  // auto: bulk where the CTAs pair (crossover with an even number of 64-head tiles, as the launch's cluster), where
  // it measured 1.21-1.23x store at 128 heads on an H100; store elsewhere, where the peer half does not exist and the
  // kernel is the store build (the bulk build measured 0.98-0.99x there, docs/perf.md).
  const std::string peer = c.text("peer_copy") != "auto" ? c.text("peer_copy")
                           : crossover_pairs(c.boolean("crossover"), heads) ? "bulk"
                                                                            : "store";
  // auto: registers wherever consumer 1 is free to run P V alone (one Q K^T warpgroup).
  const std::string gather = c.text("gather") != "auto" ? c.text("gather")
                             : c.integer("qk_warpgroups") == 1 ? "regs"
                                                               : "copies";
  // hybrid=auto: on with registers at one 64-head tile (heads <= 64: no CTA has a crossover peer), where it measured
  // 1.04-1.09x the register ring alone on an H100 at all three 64-head anchors (docs/perf.md); off elsewhere, so the
  // 128-head kernels are unchanged.
  const bool one_tile = heads > 0 && heads <= 64;
  const bool hybrid = c.text("hybrid") == "true" || (c.text("hybrid") == "auto" && gather != "copies" && one_tile);
  // c1_rows=-1 (auto): 2 where hybrid runs the register gather at 64 heads or fewer (one head tile, no peer): on the
  // H100 it won 18 of 21 median comparisons beside c1_rows=0 over three calls at the peak h 64 case and V3.2 b 64 / 128
  // h 64 (+0.2-2.9%; the three losses, 1.4-1.5% and 0.8%, each a sweep problem's first point; docs/perf.md); 0
  // elsewhere. c1_early=auto: with c1_rows.
  const int c1 = c.integer("c1_rows") >= 0 ? static_cast<int>(c.integer("c1_rows"))
                 : gather == "regs" && hybrid && one_tile ? 2
                                                          : 0;
  // prmt_cvt=auto: where hybrid runs at one head tile (64 heads or fewer, no crossover peer), where it won every A B B A
  // round on the H100 by medians and minima: 1.096-1.113x at the peak h 64 case, 1.034-1.089x at V3.2 b 128 h 64,
  // 1.059-1.073x at b 64 h 64; off elsewhere: at V3.2 b 128 h 128 (crossover pairs) it ran 0.927-0.929x (docs/perf.md).
  const bool prmt_cvt = c.text("prmt_cvt") == "true" || (c.text("prmt_cvt") == "auto" && hybrid && one_tile);
  return {.qk_warpgroups = static_cast<int>(c.integer("qk_warpgroups")), .vec_store = c.boolean("vec_store"),
          .dequant_rows = static_cast<int>(c.integer("dequant_rows")), .crossover = c.boolean("crossover"),
          .rope_direct = rope == "on" ? MlaRopeDirect::on : rope == "off" ? MlaRopeDirect::off : MlaRopeDirect::unpaired,
          .lookahead = c.boolean("lookahead"),
          .gather = gather == "regs"     ? MlaSparseGather::regs
                    : gather == "paired" ? MlaSparseGather::paired
                                         : MlaSparseGather::copies,
          .late_reload = c.boolean("late_reload"),
          .hybrid = hybrid,
          .opaque_rows = c.boolean("opaque_rows"),
          .lazy_rescale = c.boolean("lazy_rescale"),
          .uniform_desc = c.boolean("uniform_desc"),
          .lean_softmax = c.boolean("lean_softmax"),
          .peer_copy = peer == "bulk"        ? MlaPeerCopy::bulk
                       : peer == "bulk_half" ? MlaPeerCopy::bulk_half
                                             : MlaPeerCopy::store,
          .c1_rows = c1,
          .c1_early = c1 > 0 && c.text("c1_early") != "false",
          .prmt_cvt = prmt_cvt};
}

// The problem, in FlashMLA's names: q [batch, seq_q, heads, 576]; a paged FP8 cache [num_blocks, block_size, 1, 656]
// bytes; indices [batch, seq_q, topk]; topk_length [batch]; attn_sink [heads]; out [batch, seq_q, heads, 512],
// lse [batch, heads, seq_q].
Schema sparse_problem() {
  return {{ParamSpec::integer("batch", 64, 1, 1 << 14, "requests (b)"),
           ParamSpec::integer("seq_q", 2, 1, 4, "query tokens per request (s_q), each with its own indices"),
           ParamSpec::integer("heads", 128, 1, 128, "query heads (h_q), all sharing the one KV head"),
           ParamSpec::integer("seq_k", 32768, 0, 1 << 20,
                              "cached tokens per request (s_k), which the indices pick from; with varlen the mean"),
           ParamSpec::integer("topk", 2048, 1, 1 << 16, "index entries per query token"),
           ParamSpec::boolean("varlen", false, "per-request lengths max(N(seq_k, seq_k/2), seq_q), as FlashMLA's test"),
           ParamSpec::boolean("zero_lengths", false,
                              "about half the requests get an empty cache: every index of theirs is -1"),
           ParamSpec::boolean("invalid", false,
                              "about one entry in 8 replaced by an invalid index (-1, other negatives, >= the cache's "
                              "token count)"),
           ParamSpec::boolean("all_invalid", false,
                              "about one query token in 4 gets only invalid indices (FlashMLA's is_all_indices_invalid)"),
           ParamSpec::boolean("topk_length", false,
                              "per-request topk_length uniform in [0, topk] (request 0: 0, request 1: topk); entries "
                              "past it are ignored"),
           ParamSpec::boolean("sink", false, "attn_sink per head: uniform in [0, 12], a quarter -inf, a quarter +inf"),
           ParamSpec::integer("block_size", 64, 1, 1024, "tokens per cache block (indices = block * block_size + offset)"),
           ParamSpec::boolean("padded_blocks", false,
                              "each block followed by one unused row (FlashMLA's test cache): blocks (block_size + 1) "
                              "rows apart")}};
}

Status refuse(std::string why) { return make_error(ErrorCode::unsupported, std::move(why)); }
double d(std::int64_t v) { return static_cast<double>(v); }
std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }

// A switch that shapes only one gather's code, or only the CTAs with (or without) a crossover peer, set (not its
// default, auto or off value) where the problem and the rest of the config leave no CTA running that code: it was
// dropped without a word (the run record then named a config that did not run), so it is refused naming it, what the
// problem and config resolved to, and what to change. test_mla_sparse_decode sets each where it cannot apply.
Status ignored_option(const Values& p, const Values& c) {
  const std::int64_t heads = p.integer("heads");
  const MlaSparseDecodeConfig cfg = sparse_config(c, heads);
  const bool pair = crossover_pairs(cfg.crossover, heads);
  // Every CTA's producer gathers by registers (regs; paired where the CTAs pair), or none does.
  const bool regs = cfg.gather == MlaSparseGather::regs || (cfg.gather == MlaSparseGather::paired && pair);
  const bool hybrid = cfg.hybrid && cfg.gather == MlaSparseGather::regs && !pair;  // the ring's CTAs copy rows too
  const std::string peer = pair ? "every CTA has a crossover peer (heads=" + p.text("heads") + ", crossover=true)"
                           : cfg.crossover ? "no CTA has a crossover peer (heads=" + p.text("heads") + ": one 64-head tile)"
                                           : "no CTA has a crossover peer (crossover=false)";
  const std::string gather =
      c.text("gather") == "auto"
          ? std::string("gather=auto takes ") + (cfg.gather == MlaSparseGather::regs ? "regs (qk_warpgroups=1)" : "copies (qk_warpgroups=2)")
          : "gather=" + c.text("gather") + (cfg.gather == MlaSparseGather::paired ? " and " + peer : "");
  if (c.text("hybrid") == "true" && !hybrid)
    return refuse("hybrid=true splits a block between the register ring and copies in a CTA without a crossover peer; "
                  "here " + (regs ? peer : "the producers gather by copies (" + gather + ")") +
                  ": leave hybrid at auto or false" +
                  (cfg.gather == MlaSparseGather::regs ? std::string(", or set crossover=false")
                                                       : ", or set gather=regs" + std::string(pair ? " with crossover=false" : "")));
  if (regs) {
    const std::string how = "this problem's producers gather every row by registers (" + gather + ")";
    if (c.boolean("lookahead"))
      return refuse("lookahead=true issues the copies gather's next block of cp.async copies early; " + how +
                    ", which has no copies to issue: leave lookahead at false or set gather=copies");
    if (c.text("rope_direct") == "on")
      return refuse("rope_direct=on copies each row's RoPE bytes straight to the tile in the copies gather; " + how +
                    ", whose RoPE values pass through registers: leave rope_direct at unpaired (or off) or set "
                    "gather=copies");
    if (c.integer("dequant_rows") != 2 && !hybrid)
      return refuse("dequant_rows=" + c.text("dequant_rows") + " batches the rows a producer warp converts from shared "
                    "memory (the copies gather, or hybrid's copied rows); " + how + " through its ring, hybrid " +
                    (pair ? "being off where " + peer : std::string("off")) + ": leave dequant_rows at 2, or set "
                    "gather=copies" + (pair ? std::string() : " or hybrid=true"));
  } else if (c.boolean("late_reload")) {
    return refuse("late_reload=true orders the register gather's ring reloads; this problem's producers gather by "
                  "copies (" + gather + "): leave late_reload at false or set gather=regs (with qk_warpgroups=1)");
  }
  if (c.text("c1_early") == "true" && cfg.c1_rows == 0)
    return refuse("c1_early=true times consumer 1's conversion of its c1_rows rows, and c1_rows resolves to 0 here (" +
                  (c.integer("c1_rows") < 0 ? std::string("auto: 2 only where hybrid runs the register gather at heads "
                                                          "<= 64")
                                            : "c1_rows=0") +
                  "): leave c1_early at auto or false, or set c1_rows=2 or 4 with hybrid");
  if (c.text("peer_copy") == "bulk" || c.text("peer_copy") == "bulk_half") {
    if (!pair)
      return refuse("peer_copy=" + c.text("peer_copy") + " is how a crossover CTA writes its half of each block into "
                    "its peer; " + peer + ": leave peer_copy at auto or store" +
                    (cfg.crossover ? std::string() : ", or set crossover=true (at heads 65-128)"));
  }
  return Status::success();
}

// Everything the problem determines: the cache (lengths, shuffled blocks), the indices, topk_length and the sink.
struct Dims {
  std::int64_t b, sq, h, sk, topk, bs, rows_per_block, m_tiles, requests;
  mla::PagedCache cache;
  std::int64_t num_tokens = 0;          // the cache's token capacity: num_blocks * block_size
  std::vector<std::int32_t> indices;    // [b, sq, topk]
  std::vector<std::int32_t> topk_len;   // [b]: topk without the option
  std::vector<float> sink;              // [h]: -inf (no effect) without the option
  std::vector<std::int32_t> lens;       // per request (b * sq): the entries it attends to

  explicit Dims(const Values& p)
      : b(p.integer("batch")), sq(p.integer("seq_q")), h(p.integer("heads")), sk(p.integer("seq_k")),
        topk(p.integer("topk")), bs(p.integer("block_size")) {
    rows_per_block = bs + (p.boolean("padded_blocks") ? 1 : 0);
    m_tiles = (h + 63) / 64;
    requests = b * sq;
    cache = mla::make_paged_cache(b, sk, sq, p.boolean("varlen"), p.boolean("zero_lengths"), bs);
    num_tokens = cache.num_blocks * bs;
    const bool invalid = p.boolean("invalid"), all_invalid = p.boolean("all_invalid");
    indices.assign(u(requests * topk), -1);
    // perm is the identity on [0, its size) at each request's start: the positions a shuffle moved are put back
    // after it (O(topk) a request; iota over the whole cache per request took minutes at 88 GB problems).
    std::vector<std::int32_t> perm;
    std::vector<std::int64_t> moved;
    for (std::int64_t r = 0; r < requests; ++r) {
      const std::int64_t i = r / sq, n = cache.lens[u(i)];
      // min(n, topk) distinct positions of [0, n), a partial Fisher-Yates on hashes; -1 after them (FlashMLA pads so)
      if (std::int64_t have = static_cast<std::int64_t>(perm.size()); have < n) {
        perm.resize(u(n));
        std::iota(perm.begin() + have, perm.end(), static_cast<std::int32_t>(have));
      }
      const std::int64_t take = std::min(n, topk);
      std::int32_t* row = indices.data() + r * topk;
      for (std::int64_t k = 0; k < take; ++k) {
        const std::int64_t j = k + static_cast<std::int64_t>(num::hash64(0x5D01 + u(r), u(k)) % u(n - k));
        std::swap(perm[u(k)], perm[u(j)]);
        moved.push_back(j);
        const std::int64_t pos = perm[u(k)];
        row[k] = static_cast<std::int32_t>(cache.table[u(i * cache.table_stride + pos / bs)] * bs + pos % bs);
      }
      for (std::int64_t j : moved) perm[u(j)] = static_cast<std::int32_t>(j);
      for (std::int64_t k = 0; k < take; ++k) perm[u(k)] = static_cast<std::int32_t>(k);
      moved.clear();
      for (std::int64_t k = 0; k < topk; ++k)
        if (invalid && num::hash64(0x5D02, u(r * topk + k)) % 8 == 0) row[k] = mla::invalid_index(num::hash64(0x5D03, u(r * topk + k)), num_tokens);
      if (all_invalid && num::hash64(0x5D04, u(r)) % 4 == 0) std::fill(row, row + topk, mla::invalid_index(num::hash64(0x5D05, u(r)), num_tokens));
    }
    topk_len.assign(u(b), static_cast<std::int32_t>(topk));
    if (p.boolean("topk_length"))
      for (std::int64_t i = 0; i < b; ++i)
        topk_len[u(i)] = i == 0 ? 0 : i == 1 ? static_cast<std::int32_t>(topk)
                                             : static_cast<std::int32_t>(num::hash64(0x5D06, u(i)) % u(topk + 1));
    sink = mla::sparse_sinks(h, p.boolean("sink"));
    lens.resize(u(requests));
    for (std::int64_t r = 0; r < requests; ++r) lens[u(r)] = std::min<std::int32_t>(topk_len[u(r / sq)], static_cast<std::int32_t>(topk));
    // The distinct valid cache rows the attended entries name (min_bytes), by a bitmap over the cache's tokens.
    std::vector<std::uint64_t> seen(u((num_tokens + 63) / 64), 0);
    for (std::int64_t r = 0; r < requests; ++r)
      for (std::int64_t j = 0; j < lens[u(r)]; ++j)
        if (const std::int32_t e = indices[u(r * topk + j)]; valid(e)) {
          std::uint64_t& word = seen[u(e / 64)];
          const std::uint64_t bit = std::uint64_t{1} << (e % 64);
          distinct_rows += (word & bit) == 0;
          word |= bit;
        }
  }
  std::int64_t distinct_rows = 0;  // distinct valid cache rows among the attended entries
  bool valid(std::int32_t idx) const { return idx >= 0 && idx < num_tokens; }
  std::size_t host_bytes() const {
    return 4 * (indices.size() + topk_len.size() + sink.size() + lens.size() + cache.lens.size() + cache.table.size());
  }
  // Byte offset of token idx's row in the cache.
  std::int64_t row_offset(std::int32_t idx) const { return (idx / bs) * rows_per_block * kRow + (idx % bs) * kRow; }
  double attended() const { return std::accumulate(lens.begin(), lens.end(), 0.0); }
};

// The problem's Dims, built once per problem (mla::problem_data): every hook below and each reference thread ask.
std::shared_ptr<const Dims> dims_of(const Values& p) { return mla::problem_data<Dims>("mla.sparse_decode", p); }

mla::SplitSchedule schedule(const Dims& x, const Values& c, const DeviceLimits& l) {
  const std::int64_t sms = c.integer("sms") > 0 ? c.integer("sms") : std::max(l.sm_count, 1);
  return mla::make_split_schedule(x.lens, static_cast<int>(kEntries), static_cast<int>(x.m_tiles), static_cast<int>(sms),
                                  static_cast<int>(c.integer("overhead_blocks")), static_cast<int>(c.integer("tie_gap")),
                                  static_cast<int>(c.integer("merge_blocks")));
}

// One query token (batch entry i, position s): its valid entries' cache rows dequantized (the reference's own reading
// of the bytes: e4m3 times the group's f32 scale, bf16 RoPE); mla::reference_row does the rest.
using mla::RefRow;
using mla::RefToken;

RefToken gather_token(const Dims& x, const HostTensor& KV, const HostTensor& idx, const HostTensor& tl, std::int64_t r) {
  RefToken t;
  const std::int64_t len = std::min<std::int64_t>(static_cast<std::int64_t>(tl.at(r / x.sq)), x.topk);
  const auto* bytes = KV.data.data();
  for (std::int64_t k = 0; k < len; ++k) {
    const auto e = static_cast<std::int32_t>(idx.at(r * x.topk + k));
    if (!x.valid(e)) continue;
    const unsigned char* row = bytes + x.row_offset(e);
    for (int c = 0; c < kDQK; ++c) t.k.push_back(num::kv_fp8_dequantized(row, c));
    ++t.n;
  }
  return t;
}

Result<std::vector<double>> sparse_reference(const Values& p, const ReferenceInputs& in, const std::string& output,
                                             const std::vector<std::int64_t>& idx) {
  if (output != "O" && output != "LSE")
    return make_error(ErrorCode::invalid_argument, "mla.sparse_decode has outputs O and LSE, not " + output);
  const auto dims = dims_of(p);
  const Dims& x = *dims;
  const HostTensor &Q = in.tensor("Q"), &KV = in.tensor("KV"), &ind = in.tensor("indices"),
                   &tlen = in.tensor("topk_length"), &sink = in.tensor("sink");
  // The query row (request r = i * s_q + s, head hh) of each sampled position, as key r * h_q + hh.
  auto row_of = [&](std::int64_t i) -> std::int64_t {
    if (output == "LSE") {  // [b, h, s_q]
      const std::int64_t bi = i / (x.h * x.sq), hh = (i / x.sq) % x.h, s = i % x.sq;
      return (bi * x.sq + s) * x.h + hh;
    }
    return i / kDV;  // O [b, s_q, h, 512]
  };
  return mla::reference_at(
      idx, x.h, Q, sink, row_of, [&](std::int64_t r) { return gather_token(x, KV, ind, tlen, r); },
      [&](const RefRow& rr, std::int64_t i) { return output == "LSE" ? rr.lse : rr.o[u(i % kDV)]; });
}

// FlashMLA's sparse decode test matrix, cut to what a CPU reference affords: topk 1, 100, 576, 2048 (a cache shorter
// than topk: -1 padding), block sizes 2, 53, 61, 64, 69 (and padded blocks), s_q 1-3, h_q 64/128, invalid entries,
// all-invalid query tokens, empty caches, topk_length with a 0, sinks with +-inf; `sms` stays the device's, so small
// batches split every request.
std::vector<std::map<std::string, std::string>> sparse_test_problems(bool full) {
  using KV = std::map<std::string, std::string>;
  std::vector<KV> s = {
      {{"batch", "2"}, {"seq_q", "1"}, {"heads", "64"}, {"seq_k", "300"}, {"topk", "100"}, {"sink", "true"}},
      {{"batch", "3"}, {"seq_q", "2"}, {"heads", "128"}, {"seq_k", "1000"}, {"topk", "576"}, {"invalid", "true"},
       {"topk_length", "true"}, {"block_size", "61"}, {"padded_blocks", "true"}},
      {{"batch", "4"}, {"seq_q", "3"}, {"heads", "64"}, {"seq_k", "650"}, {"topk", "576"}, {"all_invalid", "true"},
       {"zero_lengths", "true"}, {"sink", "true"}, {"block_size", "53"}},
      {{"batch", "6"}, {"seq_q", "1"}, {"heads", "128"}, {"seq_k", "2046"}, {"topk", "2048"}, {"varlen", "true"},
       {"block_size", "2"}},
      {{"batch", "64"}, {"seq_q", "2"}, {"heads", "128"}, {"seq_k", "4096"}, {"topk", "512"}, {"invalid", "true"}},
      {{"batch", "1"}, {"seq_q", "1"}, {"heads", "64"}, {"seq_k", "20"}, {"topk", "1"}},
  };
  if (full)
    s.insert(s.end(), {
        {{"batch", "8"}, {"seq_q", "2"}, {"heads", "128"}, {"seq_k", "32768"}, {"topk", "2048"}, {"varlen", "true"}},
        {{"batch", "74"}, {"seq_q", "3"}, {"heads", "64"}, {"seq_k", "512"}, {"topk", "64"}, {"varlen", "true"},
         {"block_size", "69"}, {"sink", "true"}},
        {{"batch", "4"}, {"seq_q", "3"}, {"heads", "128"}, {"seq_k", "1024"}, {"topk", "576"}, {"sink", "true"},
         {"topk_length", "true"}, {"invalid", "true"}, {"block_size", "2"}, {"padded_blocks", "true"}},
        {{"batch", "321"}, {"seq_q", "3"}, {"heads", "64"}, {"seq_k", "650"}, {"topk", "576"}, {"all_invalid", "true"},
         {"varlen", "true"}, {"block_size", "53"}},
    });
  return s;
}

}  // namespace

KernelSpec mla_sparse_decode_spec() {
  KernelSpec k;
  k.name = "mla.sparse_decode";
  k.family = "attention";
  k.tensor_cores = true;
  k.summary = "DeepSeek Sparse Attention decoding over an FP8 paged KV cache (FlashMLA sparse decode): gathered and "
              "dequantized in the kernel, wgmma, split-KV with in-kernel combine";
  k.source = "mla/mla_sparse_decode.cuh";
  k.min_cc = 90;
  k.archs = {"sm_90a"};
  k.problem = sparse_problem();
  // The consumers are mla.decode's: the same switches, and the same split-KV schedule parameters.
  k.config = {{ParamSpec::one_of("qk_warpgroups", 1, {1, 2},
                                 "consumer warpgroups computing Q K^T (as mla.decode's; 2 not with gather=regs or "
                                 "paired, and gather=auto then copies)"),
               ParamSpec::integer("sms", 0, 0, 1024, "SMs the split-KV schedule balances over (0: the device's)"),
               ParamSpec::integer("overhead_blocks", 2, 0, 64, "cost of one split in blocks of 64 index entries"),
               ParamSpec::integer("tie_gap", 3, 0, 16, "blocks less for a part holding a request's middle split"),
               ParamSpec::integer("merge_blocks", 2, 0, 64,
                                  "cost in blocks of merging one split: a request of B blocks is cut into at most "
                                  "sqrt(B / merge_blocks) pieces (mla.decode's; 0: no bound)"),
               ParamSpec::boolean("vec_store", true, "16-bit partials and outputs as 16-byte vector stores"),
               ParamSpec::one_of("dequant_rows", 2, {1, 2},
                                 "gather=copies: cache rows a producer warp reads from shared memory together "
                                 "before it writes them as bf16 (the reads' latency once per batch; 4 would not fit "
                                 "the producer's 56 registers); 1 is refused where every row goes through the register ring"),
               ParamSpec::boolean("crossover", true,
                                  "heads > 64: each pair of 64-head CTAs runs as a 2-CTA cluster, each dequantizing half "
                                  "of every block into both (FlashMLA's crossover; no effect with 64 heads; 1.36-1.39x "
                                  "at the 128-head shapes on an H200, docs/perf.md)"),
               ParamSpec::enumeration("rope_direct", "unpaired", {"off", "on", "unpaired"},
                                      "gather=copies: each cache row's RoPE bytes copied straight to their place in "
                                      "the tile (no shared-memory read and write of them): in no CTA, in every CTA, "
                                      "or in those "
                                      "without a crossover pair (64 heads or crossover off: 1.04-1.07x there on an "
                                      "H200; with a pair 0.93x, docs/perf.md); on is refused where every producer "
                                      "gathers by registers"),
               ParamSpec::boolean("lookahead", false,
                                  "gather=copies: the producer issues the next block's copies as soon as the "
                                  "consumers free its stage, while it still dequantizes this block (0.81-0.86x on an "
                                  "H200: the issue's own time lands on the dequant's path, docs/perf.md); refused where every producer "
                                  "gathers by registers"),
               ParamSpec::enumeration("gather", "auto", {"auto", "copies", "regs", "paired"},
                                      "how the producer gathers a cache row: cp.async copies of its raw bytes into the "
                                      "stage, dequantized there; or loads straight into registers, a ring of 8 rows a "
                                      "warp, stored once as bf16 (1.00-1.21x copies on an H100, docs/perf.md); or "
                                      "paired: registers where CTAs pair (crossover), copies elsewhere (regs and paired "
                                      "need qk_warpgroups=1: the consumers get 208 and 168 registers, the producer "
                                      "128); auto: regs with qk_warpgroups=1, else copies"),
               ParamSpec::boolean("late_reload", false,
                                  "gather=regs: the ring loads the next block's rows after this block is published, "
                                  "not before (with opaque_rows 1.005-1.02x at the 128-head shapes, 0.99-1.00x at 64 "
                                  "on an H100: off; without it its build spills 24 bytes; docs/perf.md); refused with the copies gather"),
               ParamSpec::enumeration("hybrid", "auto", {"auto", "true", "false"},
                                      "gather=regs (or paired) in a CTA without a crossover peer (64 heads, or "
                                      "crossover off): each producer warp's register ring takes the block's first 8 "
                                      "rows of its 16, the last 8 are cp.async copies into the stage issued as soon as "
                                      "it is free and converted from shared memory after the ring's rows, so no block "
                                      "waits for a reload of its own rows (1.04-1.09x at peak h64, V3.2 b 64 / 128 h 64 "
                                      "on an H100); auto: true at heads <= 64 with registers, else false (docs/perf.md); true is "
                                      "refused where no CTA runs gather=regs without a crossover peer"),
               ParamSpec::boolean("opaque_rows", true,
                                  "gather=regs or paired: the consumers' epilogue recomputes its 64-bit row offsets "
                                  "per request instead of holding one across the block loop: ptxas then keeps the "
                                  "producer's ring loads off the publish and late_reload builds without spills "
                                  "(1.07-1.11x at the 128-head shapes, 1.01x at 64 on an H100, docs/perf.md)"),
               ParamSpec::boolean("lazy_rescale", true,
                                  "the consumers skip O's rescale (o *= exp2(m_old - m_new)) in a warp where every "
                                  "row's factor is exactly 1 (no row maximum moved), by a vote per warp (exact; "
                                  "1.013-1.039x at V3.2 b 64 / 128 h 128 and b 128 h 64 on an H100, docs/perf.md)"),
               ParamSpec::boolean("uniform_desc", false,
                                  "qk_warpgroups=1: the consumers' wgmma descriptors built in uniform registers from "
                                  "warp-uniform values, as mla.decode's (consumer 0's Q K^T issue 487 -> 209 SASS "
                                  "instructions a block, exact; 0.995-1.010x at V3.2 b 64 / 128 h 128 and b 128 h 64 "
                                  "on an H100: off; refused with qk_warpgroups=2; docs/perf.md)"),
               ParamSpec::boolean("lean_softmax", false,
                                  "qk_warpgroups=1: consumer 0's softmax stores P into the P tile by stmatrix (4 x4 "
                                  "stores a thread and block instead of 16 32-bit ones) and starts each row's max and "
                                  "sum from its first values, not -inf and 0 (exact; 0.992-1.006x, with uniform_desc "
                                  "0.995-1.025x at the three anchors on an H100: off; refused with qk_warpgroups=2; "
                                  "docs/perf.md)"),
               ParamSpec::enumeration("peer_copy", "auto", {"auto", "store", "bulk", "bulk_half"},
                                      "crossover: how a CTA's producer writes its half of each block into the peer's "
                                      "stage: store (each lane's st.async beside its own stores, 24 of its 48 stores "
                                      "a block), bulk (its own stage only, then one lane a warp copies the warp's 8 "
                                      "rows by 9 bulk copies of 1 KiB, one a panel, completing the same remote "
                                      "barrier: 1.21-1.23x store at V3.2 b 64 / 128 h 128 on an H100) or bulk_half "
                                      "(two rounds of 512-byte copies, each after 4 rows: 1.09-1.10x); auto: bulk "
                                      "where the CTAs pair (heads 65-128 with crossover), else store (docs/perf.md); bulk and bulk_half "
                                      "are refused where the CTAs do not pair"),
               ParamSpec::one_of("c1_rows", -1, {-1, 0, 2, 4},
                                 "gather=regs with hybrid, CTAs without a crossover peer (64 heads): consumer 1 (P V "
                                 "only) converts the last c1_rows of each producer warp's 16 rows a block (cp.async "
                                 "copies issued at the top of its block for the next one, converted after its P V is "
                                 "issued), the producer's copies the rows between its ring's 8 and those (0: the "
                                 "producer all). On an H100 with c1_early: 2 rows 1.002-1.026x at the 64-head peak "
                                 "case, 1.003-1.037x at V3.2 b 128 h 64, 0.99-1.02x at b 64 h 64; without c1_early "
                                 "0.985-1.015x; 4 rows early 0.94x at V3.2 b 128 h 64; docs/perf.md). -1 = auto: 2 where hybrid runs "
                                 "the register gather at heads <= 64 (18 of 21 median comparisons beside 0 won over "
                                 "three calls at the three 64-head anchors, +0.2-2.9%), else 0"),
               ParamSpec::enumeration("c1_early", "auto", {"auto", "true", "false"},
                                      "c1_rows: consumer 1 converts its rows before it waits for P (during consumer "
                                      "0's softmax), not after its P V is issued; auto: true wherever c1_rows > 0; true is refused "
                                      "where c1_rows resolves to 0"),
               ParamSpec::enumeration("prmt_cvt", "auto", {"auto", "true", "false"},
                                      "every cache row's e4m3 -> bf16 conversion (producer and consumer 1) as one byte "
                                      "permute with a lane-dependent selector, one arithmetic shift and one mask a "
                                      "bf16 pair (bit for bit the same values): the selector also picks which of the "
                                      "lane's two 16-byte chunks a pair goes to, so no select a pair; 6 -> 4 "
                                      "instructions a pair with its scale multiply (the 64-head producer 1459 -> 1233 "
                                      "warp instructions a block under ncu). On an H100 1.096-1.113x at the 64-head "
                                      "peak case, 1.034-1.089x at V3.2 b 128 h 64, 1.059-1.073x at b 64 h 64, but "
                                      "0.927-0.929x at V3.2 b 128 h 128 (crossover pairs); auto: on where hybrid runs "
                                      "at heads <= 64, else off (docs/perf.md)")}};
  k.test_configs = [] {
    return std::vector<std::map<std::string, std::string>>{
        {{"qk_warpgroups", "2"}, {"vec_store", "false"}},
        {{"tie_gap", "0"}, {"overhead_blocks", "5"}, {"merge_blocks", "0"}},
        {{"crossover", "false"}}, {{"qk_warpgroups", "2"}, {"dequant_rows", "1"}},
        {{"gather", "copies"}, {"rope_direct", "on"}}, {{"gather", "copies"}, {"crossover", "false"}, {"rope_direct", "off"}},
        {{"gather", "copies"}, {"lookahead", "true"}, {"rope_direct", "on"}},
        {{"gather", "copies"}, {"lookahead", "true"}, {"crossover", "false"}, {"dequant_rows", "1"}},
        {{"gather", "regs"}, {"crossover", "false"}, {"vec_store", "false"}}, {{"gather", "paired"}, {"rope_direct", "off"}},
        {{"hybrid", "true"}}, {{"hybrid", "true"}, {"crossover", "false"}, {"dequant_rows", "1"}},
        {{"lazy_rescale", "false"}}, {{"lazy_rescale", "false"}, {"qk_warpgroups", "2"}},
        {{"uniform_desc", "true"}}, {{"uniform_desc", "true"}, {"crossover", "false"}},
        {{"lean_softmax", "true"}}, {{"lean_softmax", "true"}, {"uniform_desc", "true"}},
        {{"peer_copy", "store"}}, {{"peer_copy", "bulk"}, {"gather", "copies"}},
        {{"peer_copy", "bulk"}, {"gather", "copies"}, {"rope_direct", "on"}}, {{"peer_copy", "bulk_half"}},
        {{"peer_copy", "bulk_half"}, {"gather", "copies"}, {"dequant_rows", "1"}},
        {{"c1_rows", "2"}, {"hybrid", "true"}, {"crossover", "false"}, {"c1_early", "false"}},
        {{"c1_rows", "4"}, {"hybrid", "true"}, {"c1_early", "true"}}, {{"prmt_cvt", "true"}}, {{"prmt_cvt", "false"}},
        {{"prmt_cvt", "true"}, {"gather", "copies"}, {"crossover", "false"}}};
  };
  k.can_implement = [](const Values& p, const Values& c, const DeviceLimits& limits) -> Status {
    if (Status st = mla::hopper_refusal("mla.sparse_decode", make_plan(sparse_config(c)).smem_bytes, limits); !st.ok())
      return st;
    if ((c.text("gather") == "regs" || c.text("gather") == "paired") && c.integer("qk_warpgroups") != 1)
      return refuse("gather=" + c.text("gather") +
                    " needs qk_warpgroups=1 (consumer 1 then runs only P V, in 168 registers): set one of them");
    // Set with two Q K^T warpgroups they were dropped without a word (mla.decode refuses the same).
    for (const char* key : {"uniform_desc", "lean_softmax"})
      if (c.boolean(key) && c.integer("qk_warpgroups") != 1)
        return refuse(std::string(key) + "=true is the one Q K^T warpgroup's (consumer 0's): it needs qk_warpgroups=1 (or " +
                      key + "=false)");
    if (c.integer("c1_rows") > 0 &&
        (sparse_config(c, p.integer("heads")).gather != MlaSparseGather::regs || !sparse_config(c, p.integer("heads")).hybrid))
      return refuse("c1_rows needs gather=regs with hybrid (consumer 1 converts beside the hybrid producer): hybrid=true, "
                    "or auto at heads <= 64");
    if (Status st = ignored_option(p, c); !st.ok()) return st;
    const std::int64_t b = p.integer("batch"), sq = p.integer("seq_q"), h = p.integer("heads");
    if (b * sq * h * kDQK >= (std::int64_t{1} << 31))
      return refuse("batch * seq_q * heads * 576 elements of q do not fit 32-bit row coordinates: use a smaller batch");
    if (b * sq * p.integer("topk") >= (std::int64_t{1} << 31))
      return refuse("batch * seq_q * topk index entries do not fit 32 bits: use a smaller batch or topk");
    // The cache's token count bounds the int32 indices (seq_k padded to whole blocks per request).
    const std::int64_t bs = p.integer("block_size");
    const std::int64_t longest = p.boolean("varlen") ? 4 * p.integer("seq_k") + sq : p.integer("seq_k");
    if (b * ((longest + bs - 1) / bs) * (bs + 1) >= (std::int64_t{1} << 31))
      return refuse("a cache of batch * seq_k tokens does not fit int32 indices: use a smaller batch or seq_k");
    // The FP8 cache (656 bytes a token, whole blocks a request; varlen's lengths are drawn around seq_k), the
    // indices, q and out.
    const double tokens = d(b) * d((p.integer("seq_k") + bs - 1) / bs * (bs + (p.boolean("padded_blocks") ? 1 : 0)));
    const double rows = d(b * sq), bytes = tokens * kRow + rows * (4.0 * d(p.integer("topk")) + 2.0 * d(h) * (kDQK + kDV));
    return mla::memory_refusal(bytes, "the KV cache, indices, q and out", "batch, seq_k or topk");
  };
  k.name_expression = [](const Values& p, const Values& c) {
    return name_expression(sparse_config(c, p.integer("heads")));
  };
  k.launch = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const auto dims = dims_of(p);
    const Dims& x = *dims;
    const mla::SplitSchedule sch = schedule(x, c, l);
    LaunchGeometry g;
    g.grid.x = static_cast<std::uint32_t>(sch.num_parts);
    g.grid.y = static_cast<std::uint32_t>(x.m_tiles);
    if (crossover_pairs(c.boolean("crossover"), x.h)) g.cluster.y = 2;
    g.block.x = static_cast<std::uint32_t>(make_plan(sparse_config(c)).mma.threads);
    g.dynamic_smem = make_plan(sparse_config(c)).smem_bytes;
    return g;
  };
  k.args = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const auto dims = dims_of(p);
    const Dims& x = *dims;
    const mla::SplitSchedule sch = schedule(x, c, l);
    const MlaSparseDecodePlan plan = make_plan(sparse_config(c));
    const std::int64_t ws = sch.any_split ? std::int64_t{sch.total_splits} * x.h : 1;
    ArgSpec q = ArgSpec::tensor("Q", DType::bf16, {x.b, x.sq, x.h, kDQK}, ArgRole::in, {.lo = -2, .hi = 2, .seed = 1});
    q.is_param = false;
    ArgSpec tq = ArgSpec::tensor_map("tma_q", "Q", {plan.mma.panel_cols, plan.mma.rows}, swizzle_bytes(plan.mma.swizzle));
    tq.map_shape = {x.requests * x.h, kDQK};
    ArgSpec kv = ArgSpec::tensor("KV", DType::u8, {x.cache.num_blocks, x.rows_per_block, 1, kRow}, ArgRole::in,
                                 {.kind = Fill::Kind::kv_fp8, .lo = -1, .hi = 1, .seed = 2});
    ArgSpec ind = ArgSpec::i32_data("indices", x.indices);
    ind.shape = {x.b, x.sq, x.topk};
    return std::vector<ArgSpec>{
        q, tq, kv, ind,
        ArgSpec::i32_data("topk_length", x.topk_len),
        mla::sink_arg(x.sink),
        ArgSpec::tensor("O", DType::bf16, {x.b, x.sq, x.h, kDV}, ArgRole::out),
        ArgSpec::tensor("LSE", DType::f32, {x.b, x.h, x.sq}, ArgRole::out),
        ArgSpec::i32_data("sched_parts", sch.parts),
        ArgSpec::i32_data("num_splits", sch.num_splits),
        ArgSpec::tensor("o_acc", DType::bf16, {ws, kDV}, ArgRole::scratch),
        ArgSpec::tensor("lse_acc", DType::f32, {ws}, ArgRole::scratch),
        ArgSpec::tensor("counters", DType::i32, {x.requests * x.m_tiles}, ArgRole::scratch),
        ArgSpec::scalar("batch", DType::i32, d(x.b)),
        ArgSpec::scalar("seq_q", DType::i32, d(x.sq)),
        ArgSpec::scalar("heads", DType::i32, d(x.h)),
        ArgSpec::scalar("topk", DType::i32, d(x.topk)),
        ArgSpec::scalar("block_size", DType::i32, d(x.bs)),
        ArgSpec::scalar("block_rows", DType::i32, d(x.rows_per_block)),
        ArgSpec::scalar("num_tokens", DType::i64, d(x.num_tokens))};
  };
  // FlashMLA's counting: both GEMMs over every attended entry (topk, or topk_length), valid or not.
  k.flops = [](const Values& p) {
    const auto dims = dims_of(p);
    const Dims& x = *dims;
    return 2.0 * d(x.h) * d(kDQK + kDV) * x.attended();
  };
  // q and out once, and each distinct valid cache row once (656 bytes), as FlashMLA's benchmark counts.
  k.min_bytes = [](const Values& p) {
    const auto dims = dims_of(p);
    const Dims& x = *dims;
    return 2.0 * d(x.requests * x.h) * d(kDQK + kDV) + d(x.distinct_rows) * d(kRow);
  };
  k.reference = sparse_reference;
  // As mla.decode's: O is rounded to bf16 (P too, before P V); the dequantized cache is exact in bf16.
  k.tolerance = [](const Values&, DType) { return Tolerance{1e-2, 2e-2}; };
  k.sampling = [](const Values& p, const std::string& output) { return mla::sparse_sampling(p.integer("topk"), output); };
  k.test_problems = sparse_test_problems;
  k.probes = mla_sparse_decode_probe_names();
  // Per warp and block: at most 16 marks (producer: index, load_wait, load_issue, dequant and four copy_wait regions;
  // consumers: four regions), plus per request the epilogue.
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const auto dims = dims_of(p);
    const Dims& x = *dims;
    const mla::SplitSchedule sch = schedule(x, c, l);
    return static_cast<std::uint32_t>(16 * sch.payload + 4 * x.requests + 64);
  };
  // The consumers' tiles and accumulators (mla.decode's plan) and the producer's dequant fragment as its
  // (thread, value) -> tile index layout (column-major in the 64 x 576 tile; no hardware atom names it).
  k.layouts = [](const Values&, const Values& c) {
    const MlaSparseDecodePlan plan = make_plan(sparse_config(c));
    std::vector<LayoutInfo> out = mla::consumer_layouts(plan.mma);
    out.push_back({"dequant_nope_tv", to_string(plan.nope.tv())});
    out.push_back({"dequant_rope_tv", to_string(plan.rope.tv())});
    return out;
  };
  return k;
}

}  // namespace tl
