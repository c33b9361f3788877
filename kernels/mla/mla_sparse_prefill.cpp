// Host spec of mla.sparse_prefill: DeepSeek Sparse Attention prefill over a bf16 KV (FlashMLA's sparse prefill).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

#include "mla/mla_schedule.hpp"
#include "mla/mla_host.hpp"
#include "mla/mla_sparse_prefill_plan.hpp"
#include "runtime/core/numeric.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

constexpr std::int64_t kDQK = kMlaDimQK, kDV = kMlaDimV, kEntries = kMlaBlock;

// The chained consumer schedule from the raw config (chained(prefill_config) is the same test on the built config,
// which the auto rules below are part of).
bool chain_params(const Values& c) { return c.boolean("chain") && c.integer("qk_warpgroups") == 1; }

// head_order in the config struct's numbering (mla_sparse_prefill_plan.hpp). auto: adjacent where a token has two
// head tiles (h_q > 64) and the consumers are chained (1.02-1.03x apart at h_q 128 on an H100, docs/perf.md), apart
// otherwise (at h_q 64 the grid is (num_parts, 1) either way: 0.99-1.00x there).
int head_order(const Values& p, const Values& c) {
  const std::string o = c.text("head_order");
  if (o == "auto")
    return p.integer("heads") > 64 && chain_params(c) ? 1 : 0;
  return o == "cluster" ? 2 : o == "adjacent" ? 1 : 0;
}

// schedule=auto's query tokens a CTA below which tokens of differing lengths (topk_length) run static: with a few
// tokens a CTA the queue's last claims decide the kernel's end, and with lengths that differ the CTAs' ends scatter
// (s_q 300, h_q 128, 4.5 tokens a CTA: dynamic 0.93-0.94x static by the medians on an H100, docs/perf.md sprefill9),
// where the host's runs deal the tokens out by cost; tokens of one length gain from the queue at every count measured
// (s_q 64-4096, 0.5-62 tokens a CTA: 1.01-1.06x).
constexpr std::int64_t kDynamicMinTokens = 8;
// The SMs the auto rule counts when `sms` is 0: the kernel's name is built without the device's limits (the H100's
// and the H200's 132).
constexpr std::int64_t kAutoSms = 132;

// schedule: dynamic (a token queue per head tile) or static (the host's runs of tokens). auto: dynamic when the
// consumers are chained (1.025-1.038x static at the three anchors by the minima on an H100, docs/perf.md: the static
// runs' SMs idled 4% of the kernel waiting for the busiest), but static for tokens of differing lengths under
// kDynamicMinTokens a CTA; static otherwise (the unchained consumers have no queue).
bool dynamic_schedule(const Values& p, const Values& c) {
  const std::string s = c.text("schedule");
  if (s != "auto") return s == "dynamic";
  if (!chain_params(c)) return false;
  if (!p.boolean("topk_length")) return true;
  const std::int64_t sms = c.integer("sms") > 0 ? c.integer("sms") : kAutoSms;
  const std::int64_t parts = std::max<std::int64_t>(1, sms / ((p.integer("heads") + 63) / 64));
  return p.integer("seq_q") >= kDynamicMinTokens * parts;
}

// rope_regs: chained only (consumer 0's registers; the unchained consumers are mla.decode's, whose rope_regs needs
// uniform_desc). auto: on when chained (1.012-1.032x the default at the three anchors on an H100 in both A B B A
// rounds, medians and minima, docs/perf.md sprefill8), off unchained (not refused).
bool rope_regs(const Values&, const Values& c) {
  return c.text("rope_regs") != "false" && chain_params(c);
}

MlaSparsePrefillConfig prefill_config(const Values& p, const Values& c) {
  return {.qk_warpgroups = static_cast<int>(c.integer("qk_warpgroups")), .vec_store = c.boolean("vec_store"),
          .l2_prefetch = c.boolean("l2_prefetch"), .chain = c.boolean("chain"),
          .kv_evict_last = c.boolean("kv_evict_last"), .head_order = head_order(p, c),
          .dynamic = dynamic_schedule(p, c), .rope_regs = rope_regs(p, c)};
}

// The problem, in FlashMLA's names: q [s_q, h_q, 576], kv [s_kv, 1, 576] bf16, indices [s_q, 1, topk],
// topk_length [s_q], attn_sink [h_q]; out [s_q, h_q, 512], max_logits and lse [s_q, h_q].
Schema prefill_problem() {
  return {{ParamSpec::integer("seq_q", 4096, 1, 1 << 20, "query tokens (s_q), each with its own indices"),
           ParamSpec::integer("heads", 128, 1, 128, "query heads (h_q), all sharing the one KV head"),
           ParamSpec::integer("seq_kv", 8192, 1, 1 << 22, "KV rows (s_kv), which the indices pick from"),
           ParamSpec::integer("topk", 2048, 1, 1 << 16,
                              "index entries per query token (past s_kv: invalid padding, as FlashMLA's test)"),
           ParamSpec::boolean("invalid", false,
                              "about one entry in 8 replaced by an invalid index (negatives, >= s_kv)"),
           ParamSpec::boolean("all_invalid", false,
                              "about one query token in 4 gets only invalid indices (FlashMLA's is_all_indices_invalid)"),
           ParamSpec::boolean("topk_length", false,
                              "per-token topk_length uniform in [0, topk] (token 0: 0, token 1: topk); entries past "
                              "it are ignored"),
           ParamSpec::boolean("sink", false, "attn_sink per head: uniform in [0, 12], a quarter -inf, a quarter +inf")}};
}

double d(std::int64_t v) { return static_cast<double>(v); }
std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }

// Everything the problem determines: the indices, topk_length, the sink and the tokens' lengths.
struct Dims {
  std::int64_t sq, h, skv, topk, m_tiles;
  std::vector<std::int32_t> indices;   // [sq, topk]
  std::vector<std::int32_t> topk_len;  // [sq]: topk without the option
  std::vector<float> sink;             // [h]: -inf (no effect) without the option
  std::vector<std::int32_t> lens;      // per token: the entries it attends to

  explicit Dims(const Values& p)
      : sq(p.integer("seq_q")), h(p.integer("heads")), skv(p.integer("seq_kv")), topk(p.integer("topk")) {
    m_tiles = (h + 63) / 64;
    const bool invalid = p.boolean("invalid"), all_invalid = p.boolean("all_invalid");
    indices.assign(u(sq * topk), -1);
    // min(s_kv, topk) distinct rows per token by a partial Fisher-Yates on hashes over one permutation that every
    // token keeps shuffling (any permutation gives distinct rows); past s_kv, invalid padding of every kind.
    std::vector<std::int32_t> perm(u(skv));
    std::iota(perm.begin(), perm.end(), 0);
    const std::int64_t take = std::min(skv, topk);
    for (std::int64_t r = 0; r < sq; ++r) {
      std::int32_t* row = indices.data() + r * topk;
      for (std::int64_t k = 0; k < take; ++k) {
        const std::int64_t j = k + static_cast<std::int64_t>(num::hash64(0x5E01 + u(r), u(k)) % u(skv - k));
        std::swap(perm[u(k)], perm[u(j)]);
        row[k] = perm[u(k)];
      }
      for (std::int64_t k = take; k < topk; ++k) row[k] = mla::invalid_index(num::hash64(0x5E02, u(r * topk + k)), skv);
      for (std::int64_t k = 0; k < topk; ++k)
        if (invalid && num::hash64(0x5E03, u(r * topk + k)) % 8 == 0)
          row[k] = mla::invalid_index(num::hash64(0x5E04, u(r * topk + k)), skv);
      if (all_invalid && num::hash64(0x5E05, u(r)) % 4 == 0)
        std::fill(row, row + topk, mla::invalid_index(num::hash64(0x5E06, u(r)), skv));
    }
    topk_len.assign(u(sq), static_cast<std::int32_t>(topk));
    if (p.boolean("topk_length"))
      for (std::int64_t r = 0; r < sq; ++r)
        topk_len[u(r)] = r == 0 ? 0 : r == 1 ? static_cast<std::int32_t>(topk)
                                             : static_cast<std::int32_t>(num::hash64(0x5E07, u(r)) % u(topk + 1));
    sink = mla::sparse_sinks(h, p.boolean("sink"));
    lens = topk_len;
    for (std::int64_t r = 0; r < sq; ++r)
      for (std::int64_t j = 0; j < lens[u(r)]; ++j) valid_entries += valid(indices[u(r * topk + j)]);
  }
  std::int64_t valid_entries = 0;  // valid indices among the attended entries
  bool valid(std::int32_t idx) const { return idx >= 0 && idx < skv; }
  std::size_t host_bytes() const { return 4 * (indices.size() + topk_len.size() + sink.size() + lens.size()); }
  double attended() const { return std::accumulate(lens.begin(), lens.end(), 0.0); }
};

// The problem's Dims, built once per problem (mla::problem_data): every hook below and each reference thread ask.
std::shared_ptr<const Dims> dims_of(const Values& p) { return mla::problem_data<Dims>("mla.sparse_prefill", p); }

// No split: the tokens are dealt out whole over num_parts parts (persistent CTAs), each part a run of consecutive
// tokens whose cost (blocks of 64 entries plus one for the token's epilogue) is about total / num_parts, in the
// schedule's part format (begin_req, begin_block, end_req, end_block, first_split) with one split per token.
struct WholeTokens {
  int num_parts = 1, most_blocks = 0, most_tokens = 0;
  std::vector<std::int32_t> parts, num_splits;
};

WholeTokens whole_tokens(const Dims& x, const Values& c, const DeviceLimits& l) {
  const std::int64_t sms = c.integer("sms") > 0 ? c.integer("sms") : std::max(l.sm_count, 1);
  WholeTokens w;
  w.num_parts = static_cast<int>(std::max<std::int64_t>(1, sms / x.m_tiles));
  const auto cost = [&](std::int64_t r) { return mla::kv_blocks(x.lens[u(r)], static_cast<int>(kEntries)) + 1; };
  double total = 0;
  for (std::int64_t r = 0; r < x.sq; ++r) total += cost(r);
  std::int64_t r = 0;
  double done = 0;
  for (int p = 0; p < w.num_parts; ++p) {
    const std::int64_t first = r;
    int blocks = 0;
    // Up to this part's share of the running total (rounded to the nearer token boundary).
    const double end = total * (p + 1) / w.num_parts;
    while (r < x.sq && (p == w.num_parts - 1 || done + cost(r) / 2.0 <= end)) {
      done += cost(r);
      blocks += cost(r) - 1;
      ++r;
    }
    const std::int64_t last = r - 1;
    const int end_block = last >= first ? mla::kv_blocks(x.lens[u(last)], static_cast<int>(kEntries)) : 0;
    w.parts.insert(w.parts.end(), {static_cast<std::int32_t>(first), 0, static_cast<std::int32_t>(last), end_block, 0});
    w.most_blocks = std::max(w.most_blocks, blocks);
    w.most_tokens = std::max(w.most_tokens, static_cast<int>(last - first + 1));
  }
  w.num_splits.resize(u(x.sq + 1));
  std::iota(w.num_splits.begin(), w.num_splits.end(), 0);
  return w;
}

mla::RefToken gather_token(const Dims& x, const HostTensor& KV, const HostTensor& idx, const HostTensor& tl,
                           std::int64_t r) {
  mla::RefToken t;
  const std::int64_t len = std::min<std::int64_t>(static_cast<std::int64_t>(tl.at(r)), x.topk);
  for (std::int64_t k = 0; k < len; ++k) {
    const auto e = static_cast<std::int32_t>(idx.at(r * x.topk + k));
    if (!x.valid(e)) continue;
    for (std::int64_t c = 0; c < kDQK; ++c) t.k.push_back(KV.at(e * kDQK + c));
    ++t.n;
  }
  return t;
}

Result<std::vector<double>> prefill_reference(const Values& p, const ReferenceInputs& in, const std::string& output,
                                              const std::vector<std::int64_t>& idx) {
  if (output != "O" && output != "LSE" && output != "max_logits")
    return make_error(ErrorCode::invalid_argument, "mla.sparse_prefill has outputs O, max_logits and LSE, not " + output);
  const auto dims = dims_of(p);
  const Dims& x = *dims;
  const HostTensor &Q = in.tensor("Q"), &KV = in.tensor("KV"), &ind = in.tensor("indices"),
                   &tlen = in.tensor("topk_length"), &sink = in.tensor("sink");
  // Query row r * h + head of each sampled position (O [s_q, h, 512]; LSE and max_logits [s_q, h]).
  const auto row_of = [&](std::int64_t i) { return output == "O" ? i / kDV : i; };
  return mla::reference_at(
      idx, x.h, Q, sink, row_of, [&](std::int64_t r) { return gather_token(x, KV, ind, tlen, r); },
      [&](const mla::RefRow& rr, std::int64_t i) {
        return output == "LSE" ? rr.lse : output == "max_logits" ? rr.max_logit : rr.o[u(i % kDV)];
      });
}

// FlashMLA's sparse prefill test matrix, cut to what a CPU reference affords: (s_kv, topk) regular, irregular and
// with topk past s_kv (invalid padding), s_q 1, 62, 213, h_q 64/128, invalid entries, all-invalid tokens,
// topk_length with a 0, sinks with +-inf; `sms` stays the device's.
std::vector<std::map<std::string, std::string>> prefill_test_problems(bool full) {
  using KV = std::map<std::string, std::string>;
  std::vector<KV> s = {
      {{"seq_q", "62"}, {"heads", "128"}, {"seq_kv", "592"}, {"topk", "128"}},
      {{"seq_q", "213"}, {"heads", "64"}, {"seq_kv", "1840"}, {"topk", "256"}, {"sink", "true"},
       {"topk_length", "true"}},
      {{"seq_q", "62"}, {"heads", "128"}, {"seq_kv", "153"}, {"topk", "256"}, {"invalid", "true"},
       {"all_invalid", "true"}, {"sink", "true"}},
      {{"seq_q", "1"}, {"heads", "64"}, {"seq_kv", "95"}, {"topk", "128"}},
      {{"seq_q", "300"}, {"heads", "128"}, {"seq_kv", "4096"}, {"topk", "2048"}, {"topk_length", "true"}},
  };
  if (full)
    s.insert(s.end(), {
        {{"seq_q", "213"}, {"heads", "128"}, {"seq_kv", "1521"}, {"topk", "512"}, {"invalid", "true"},
         {"topk_length", "true"}, {"sink", "true"}},
        {{"seq_q", "62"}, {"heads", "64"}, {"seq_kv", "114"}, {"topk", "384"}, {"all_invalid", "true"}},
        {{"seq_q", "1024"}, {"heads", "64"}, {"seq_kv", "64"}, {"topk", "2048"}, {"sink", "true"},
         {"topk_length", "true"}},
        {{"seq_q", "4096"}, {"heads", "128"}, {"seq_kv", "8192"}, {"topk", "2048"}},
        {{"seq_q", "7"}, {"heads", "32"}, {"seq_kv", "300"}, {"topk", "100"}, {"sink", "true"}},
    });
  return s;
}

}  // namespace

KernelSpec mla_sparse_prefill_spec() {
  KernelSpec k;
  k.name = "mla.sparse_prefill";
  k.family = "attention";
  k.tensor_cores = true;
  k.summary = "DeepSeek Sparse Attention prefill over a bf16 KV (FlashMLA sparse prefill): topk rows gathered by "
              "cp.async per query token, wgmma, max_logits and LSE";
  k.source = "mla/mla_sparse_prefill.cuh";
  k.min_cc = 90;
  k.archs = {"sm_90a"};
  k.problem = prefill_problem();
  // chain first: the quick test matrix runs the schema's first variation (the unchained schedule) beside the defaults.
  k.config = {{ParamSpec::boolean("chain", true,
                                  "the consumer warpgroups chained over a pair of blocks as FlashMLA's (each its own "
                                  "block's Q K^T and softmax, its own P V from registers first, the stages freed in "
                                  "halves; 1.00-1.16x unchained on an H100, docs/perf.md); qk_warpgroups 2 runs "
                                  "unchained"),
               ParamSpec::one_of("qk_warpgroups", 1, {1, 2}, "consumer warpgroups computing Q K^T (as mla.decode's)"),
               ParamSpec::integer("sms", 0, 0, 1024, "SMs the query tokens are dealt out over (0: the device's)"),
               ParamSpec::boolean("vec_store", true, "outputs as 16-byte vector stores"),
               ParamSpec::boolean("l2_prefetch", true,
                                  "each 16-byte cp.async asks the L2 for the 256-byte block around it (.L2::256B, as "
                                  "FlashMLA's gather; 0.98-1.09x on an H200, docs/perf.md)"),
               ParamSpec::boolean("kv_evict_last", false,
                                  "the gather's copies under an L2 evict_last policy (FlashMLA's gather's); needs "
                                  "l2_prefetch"),
               ParamSpec::enumeration("head_order", "auto", {"auto", "apart", "adjacent", "cluster"},
                                      "where a token's two head tiles (h_q 128) run: apart (CTAs x and x + num_parts of "
                                      "the grid (num_parts, 2)), adjacent (grid (2, num_parts): consecutive CTAs, heads "
                                      "fastest as FlashMLA's grid; 1.02-1.03x apart on an H100, docs/perf.md), or "
                                      "cluster (adjacent, the two one cluster: one GPC; 1.02-1.03x); adjacent and cluster "
                                      "need the chained schedule; auto: adjacent at h_q > 64 when chained, else apart"),
               ParamSpec::enumeration("schedule", "auto", {"auto", "static", "dynamic"},
                                      "how the persistent CTAs get their query tokens: static = a run of consecutive "
                                      "tokens each, dealt out by cost on the host; dynamic = token `part` first, then "
                                      "the next of its head tile's counter in global memory whenever its producer starts "
                                      "one (the CTAs' work evens out by itself; needs the chained schedule; "
                                      "1.025-1.038x static on an H100, docs/perf.md); auto = dynamic when chained, "
                                      "but static for tokens of differing lengths (topk_length) under 8 a CTA; else "
                                      "static"),
               ParamSpec::enumeration("rope_regs", "auto", {"auto", "true", "false"},
                                      "consumer 0 holds Q's RoPE panel (columns 512-575) in registers as the wgmma A "
                                      "operand of Q K^T's last four k16 steps (mla.decode's rope_regs; needs the "
                                      "chained schedule; 1.012-1.032x without on an H100, docs/perf.md); auto = on "
                                      "when chained")}};
  k.test_configs = [] {
    return std::vector<std::map<std::string, std::string>>{{{"qk_warpgroups", "2"}}, {{"vec_store", "false"}},
                                                           {{"sms", "7"}}, {{"l2_prefetch", "false"}},
                                                           {{"head_order", "cluster"}, {"sms", "7"}},
                                                           {{"schedule", "dynamic"}, {"sms", "7"}},
                                                           {{"rope_regs", "false"}}};
  };
  k.can_implement = [](const Values& p, const Values& c, const DeviceLimits& limits) -> Status {
    if (Status st = mla::hopper_refusal("mla.sparse_prefill", make_plan(prefill_config(p, c)).smem_bytes, limits); !st.ok())
      return st;
    if (c.boolean("kv_evict_last") && !c.boolean("l2_prefetch"))
      return make_error(ErrorCode::unsupported,
                        "kv_evict_last's copies carry the 256-byte L2 fetch: leave l2_prefetch=true");
    if (c.text("head_order") != "auto" && head_order(p, c) != 0 && !chained(prefill_config(p, c)))
      return make_error(ErrorCode::unsupported,
                        "head_order=" + c.text("head_order") +
                            " needs the chained schedule (chain=true, qk_warpgroups=1): the unchained consumers read "
                            "the grid as (parts, head tiles)");
    if (c.text("schedule") == "dynamic" && !chained(prefill_config(p, c)))
      return make_error(ErrorCode::unsupported,
                        "schedule=dynamic needs the chained schedule (chain=true, qk_warpgroups=1): the token queue "
                        "is the chained consumers'");
    if (c.text("rope_regs") == "true" && !chained(prefill_config(p, c)))
      return make_error(ErrorCode::unsupported,
                        "rope_regs=true needs the chained schedule (chain=true, qk_warpgroups=1): it is consumer 0's "
                        "registers there");
    if (p.integer("seq_q") * p.integer("heads") >= (std::int64_t{1} << 31))
      return make_error(ErrorCode::unsupported, "seq_q * heads query rows do not fit Q's 32-bit TMA row coordinate: use a smaller seq_q");
    // Q and O, the KV rows and the indices.
    const double sq = d(p.integer("seq_q")), h = d(p.integer("heads"));
    return mla::memory_refusal(2.0 * (sq * h * (kDQK + kDV) + d(p.integer("seq_kv")) * kDQK) + 4.0 * sq * d(p.integer("topk")),
                               "Q, O, the KV rows and the indices", "seq_q or topk");
  };
  k.name_expression = [](const Values& p, const Values& c) { return name_expression(prefill_config(p, c)); };
  k.launch = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const auto dims = dims_of(p);
    const Dims& x = *dims;
    LaunchGeometry g;
    const auto parts = static_cast<std::uint32_t>(whole_tokens(x, c, l).num_parts);
    const auto tiles = static_cast<std::uint32_t>(x.m_tiles);
    // head_order: apart (parts, head tiles); adjacent and cluster (head tiles, parts), a token's tiles consecutive.
    const int order = head_order(p, c);
    g.grid.x = order ? tiles : parts;
    g.grid.y = order ? parts : tiles;
    if (order == 2) g.cluster.x = tiles;
    g.block.x = static_cast<std::uint32_t>(make_plan(prefill_config(p, c)).mma.threads);
    g.dynamic_smem = make_plan(prefill_config(p, c)).smem_bytes;
    return g;
  };
  k.args = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const auto dims = dims_of(p);
    const Dims& x = *dims;
    const WholeTokens w = whole_tokens(x, c, l);
    const MlaSparsePrefillPlan plan = make_plan(prefill_config(p, c));
    ArgSpec q = ArgSpec::tensor("Q", DType::bf16, {x.sq, x.h, kDQK}, ArgRole::in, {.lo = -2, .hi = 2, .seed = 1});
    q.is_param = false;
    ArgSpec tq = ArgSpec::tensor_map("tma_q", "Q", {plan.mma.panel_cols, plan.mma.rows}, swizzle_bytes(plan.mma.swizzle));
    tq.map_shape = {x.sq * x.h, kDQK};
    ArgSpec ind = ArgSpec::i32_data("indices", x.indices);
    ind.shape = {x.sq, 1, x.topk};
    return std::vector<ArgSpec>{
        q, tq,
        ArgSpec::tensor("KV", DType::bf16, {x.skv, 1, kDQK}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 2}),
        ind,
        ArgSpec::i32_data("topk_length", x.topk_len),
        mla::sink_arg(x.sink),
        ArgSpec::tensor("O", DType::bf16, {x.sq, x.h, kDV}, ArgRole::out),
        ArgSpec::tensor("max_logits", DType::f32, {x.sq, x.h}, ArgRole::out),
        ArgSpec::tensor("LSE", DType::f32, {x.sq, x.h}, ArgRole::out),
        ArgSpec::i32_data("sched_parts", w.parts),
        ArgSpec::i32_data("num_splits", w.num_splits),
        ArgSpec::scalar("seq_q", DType::i32, d(x.sq)),
        ArgSpec::scalar("heads", DType::i32, d(x.h)),
        ArgSpec::scalar("topk", DType::i32, d(x.topk)),
        ArgSpec::scalar("num_kv", DType::i64, d(x.skv)),
        // schedule=dynamic's token counters, one per head tile (zeroed when allocated; each launch's last claim sets
        // them back to 0); the static schedule never reads them.
        dynamic_schedule(p, c) ? ArgSpec::tensor("token_counter", DType::i32, {x.m_tiles}, ArgRole::scratch)
                               : ArgSpec::scalar("token_counter", DType::u64, 0)};
  };
  // FlashMLA's counting: both GEMMs over every attended entry (topk, or topk_length), valid or not.
  k.flops = [](const Values& p) {
    const auto dims = dims_of(p);
    const Dims& x = *dims;
    return 2.0 * d(x.h) * d(kDQK + kDV) * x.attended();
  };
  // FlashMLA's: each valid attended entry's KV row (576 bf16), q and out once.
  k.min_bytes = [](const Values& p) {
    const auto dims = dims_of(p);
    return 2.0 * d(dims->valid_entries) * d(kDQK) + 2.0 * d(dims->sq * dims->h) * d(kDQK + kDV);
  };
  k.reference = prefill_reference;
  // As mla.decode's: O is rounded to bf16 (P too, before P V).
  k.tolerance = [](const Values&, DType) { return Tolerance{1e-2, 2e-2}; };
  k.sampling = [](const Values& p, const std::string& output) { return mla::sparse_sampling(p.integer("topk"), output); };
  k.test_problems = prefill_test_problems;
  k.probes = mla_sparse_prefill_probe_names();
  // Per warp and block: at most 10 marks (producer: index, load_wait, load_issue, chained twice per half: 9 a block;
  // consumers: four regions), plus per token the epilogue.
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const WholeTokens w = whole_tokens(*dims_of(p), c, l);
    // dynamic: a CTA may take more than its static share (room for half as much again).
    const std::uint32_t n = static_cast<std::uint32_t>(10 * w.most_blocks + 4 * w.most_tokens + 64);
    return dynamic_schedule(p, c) ? n + n / 2 : n;
  };
  // The consumers' tiles and accumulators (mla.decode's plan) and the producer's gather fragment as its
  // (thread, value) -> tile index layout (column-major in the 64 x 576 tile; no hardware atom names it).
  k.layouts = [](const Values& p, const Values& c) {
    std::vector<LayoutInfo> out = mla::consumer_layouts(make_plan(prefill_config(p, c)).mma);
    out.push_back({"gather_tv", to_string(make_plan(prefill_config(p, c)).gather.tv())});
    return out;
  };
  return k;
}

}  // namespace tl
