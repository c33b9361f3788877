// Host specs of the attention forward kernels (O and LSE): attn.fwd.mma (FlashAttention-2 style, mma.sync) and
// attn.fwd.wgmma (FlashAttention-3 style, TMA + wgmma + warp specialization); they share problem, reference and checks.
#include <algorithm>
#include <cmath>
#include <map>

#include "attention/attn_fwd_mma_plan.hpp"
#include "attention/attn_fwd_wgmma_plan.hpp"
#include "attention/attn_reference.hpp"
#include "runtime/core/numeric.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "tile/layout_spec.hpp"
#include "tile/work_order.hpp"

namespace tl {
namespace {

// O = softmax(Q K^T / sqrt(dim)) V and LSE per query row. Dense: Q [batch, seq_q, heads, dim], K [batch, seq_k,
// heads_kv, dim], V [batch, seq_k, heads_kv, dim_v], O [batch, seq_q, heads, dim_v]; LSE float32 [batch, heads, seq_q].
// Varlen: sequences packed as FlashAttention's varlen API has them, Q [total_q, heads, dim], K [total_k, heads_kv,
// dim], V [total_k, heads_kv, dim_v], O [total_q, heads, dim_v], LSE [heads, total_q], sequence b at rows
// cu_seqlens[b] .. cu_seqlens[b+1]. Causal masks are aligned to the bottom-right corner of each sequence.
// Unset, seq_q and seq_k follow each other (self-attention) and heads_kv follows heads (MHA), so setting one never
// leaves another's default unrunnable (heads=4 with 16 kv heads, a causal seq_q=4096 over 2048 keys).
// attn.fwd.mma takes dim 64 or 128 with dim_v = dim and no window or sinks: its schema leaves those out (the getters
// below read them as their defaults there), so a GUI, a sweep or a random draw offers it only what it runs.
Schema attn_problem(bool wgmma) {
  const ParamSpec seq_k = ParamSpec::integer("seq_k", 2048, 1, 1 << 20, "key/value length (unset: seq_q; both unset: 2048)");
  const ParamSpec seq_q = ParamSpec::integer("seq_q", 2048, 1, 1 << 20,
                                             "query length (rows of Q and O per sequence and head; unset: seq_k; both unset: 2048)");
  const ParamSpec heads = ParamSpec::integer("heads", 16, 1, 1 << 10, "query heads");
  const ParamSpec dim = wgmma ? ParamSpec::one_of("dim", 128, {64, 128, 192, 256},
                                                  "head dimension of Q and K (and of V and O unless dim_v)")
                              : ParamSpec::one_of("dim", 128, {64, 128},
                                                  "head dimension of Q, K, V and O (192, 256 and dim_v != dim: "
                                                  "attn.fwd.wgmma, sm_90a)");
  Schema s{{ParamSpec::integer("batch", 4, 1, 1 << 16, "sequences in the batch"), seq_q.follows(seq_k),
            seq_k.follows(seq_q), heads,
            ParamSpec::integer("heads_kv", 0, 1, 1 << 10, "key/value heads (GQA: divides heads; unset: heads, MHA)")
                .follows(heads),
            dim}};
  if (wgmma)
    s.params.insert(
        s.params.end(),
        {ParamSpec::one_of("dim_v", 128, {64, 128, 192, 256},
                           "head dimension of V and O (unset: dim; 128 with dim=192 is DeepSeek's MLA prefill as MHA)")
             .follows(dim),
         ParamSpec::boolean("causal", false, "mask keys after the query (bottom-right aligned when seq_q != seq_k)"),
         ParamSpec::integer("window", 0, 0, 1 << 20,
                            "sliding window: query row r sees keys (r - window, r] on the bottom-right aligned "
                            "diagonal (a causal band: implies causal), tiles before the band skipped; 0 = none"),
         ParamSpec::boolean("sinks", false,
                            "attention sinks: a per-head logit (input `sinks`, f32 [heads]) joins each row's softmax "
                            "denominator only, O scaled by exp(lse) / (exp(lse) + exp(sink)); LSE includes it")});
  else
    s.params.push_back(
        ParamSpec::boolean("causal", false, "mask keys after the query (bottom-right aligned when seq_q != seq_k)"));
  s.params.insert(s.params.end(),
                  {ParamSpec::boolean("varlen", false,
                                      "per-sequence lengths through cu_seqlens: seq_q/seq_k are the longest (the last "
                                      "sequence's), the others drawn from [seq/4, seq], sequence 1 without keys when not causal"),
                   ParamSpec::enumeration("dtype", "bf16", {"bf16", "f16"}, "type of Q, K, V and O (LSE is f32)")});
  if (!wgmma)
    s.elsewhere = {{"dim_v", "dim_v != dim is attn.fwd.wgmma's (sm_90a)"},
                   {"window", "sliding windows are attn.fwd.wgmma's (sm_90a)"},
                   {"sinks", "attention sinks are attn.fwd.wgmma's (sm_90a)"}};
  return s;
}

std::int64_t dim_v_of(const Values& p) { return p.has("dim_v") ? p.integer("dim_v") : p.integer("dim"); }
std::int64_t window_of(const Values& p) { return p.has("window") ? p.integer("window") : 0; }
bool sinks_of(const Values& p) { return p.has("sinks") && p.boolean("sinks"); }

Status refuse(std::string why) { return make_error(ErrorCode::unsupported, std::move(why)); }

// The causal mask: asked for, or implied by a sliding window (key j visible to row i for i - window < j <= i, the
// causal band TileLang's attention_sink examples define).
bool causal_mask(const Values& p) { return p.boolean("causal") || window_of(p) > 0; }

Status check_problem(const Values& p) {
  if (p.integer("heads") % p.integer("heads_kv") != 0)
    return refuse("heads_kv=" + p.text("heads_kv") + " does not divide heads=" + p.text("heads") +
                  ": GQA shares each kv head among heads/heads_kv query heads; pick a divisor");
  if (causal_mask(p) && p.integer("seq_q") > p.integer("seq_k"))
    return refuse((p.boolean("causal") ? std::string("causal") : "window=" + p.text("window")) + " with seq_q=" +
                  p.text("seq_q") + " > seq_k=" + p.text("seq_k") +
                  ": the mask is bottom-right aligned, so the first seq_q - seq_k query rows would see no key; "
                  "use seq_q <= seq_k" + (p.boolean("causal") ? " or causal=false" : " or window=0"));
  return Status::success();
}

double d(std::int64_t v) { return static_cast<double>(v); }

// A length in [seq/4, seq] drawn from (seed, i); the same on every machine.
std::int64_t draw_length(std::int64_t seq, std::uint64_t seed, std::int64_t i) {
  const std::int64_t lo = std::max<std::int64_t>(seq / 4, 1);
  return lo + static_cast<std::int64_t>(num::hash64(seed, static_cast<std::uint64_t>(i)) %
                                        static_cast<std::uint64_t>(seq - lo + 1));
}

// Sizes, and each sequence's offsets: dense sequences are the case cu[b] = b * seq of the packed layout.
struct Dims : AttnRows {
  std::int64_t sk;
  std::vector<std::int32_t> cu_k;  // batch + 1 offsets
  explicit Dims(const Values& p) : sk(p.integer("seq_k")) {
    b = p.integer("batch"), sq = p.integer("seq_q"), h = p.integer("heads"), hkv = p.integer("heads_kv");
    dim = p.integer("dim"), dim_v = dim_v_of(p), window = window_of(p);
    causal = causal_mask(p), varlen = p.boolean("varlen"), sinks = sinks_of(p);
    cu_q.assign(1, 0);
    cu_k.assign(1, 0);
    for (std::int64_t i = 0; i < b; ++i) {
      std::int64_t lk = sk, lq = sq;
      if (varlen && i + 1 < b) {
        lk = (i == 1 && !causal) ? 0 : draw_length(sk, 0xA77E, i);
        lq = draw_length(sq, 0xA77F, i);
        if (causal) lq = std::min(lq, lk);  // no query row without keys under the bottom-right mask
      }
      k_start.push_back(cu_k.back());
      k_len.push_back(lk);
      cu_q.push_back(static_cast<std::int32_t>(cu_q.back() + lq));
      cu_k.push_back(static_cast<std::int32_t>(cu_k.back() + lk));
    }
  }
  std::int64_t total_k() const { return cu_k.back(); }
};

Result<std::vector<double>> attn_reference(const Values& p, const ReferenceInputs& in, const std::string& output,
                                           const std::vector<std::int64_t>& idx) {
  return attn_rows_reference(Dims(p), in, output, idx);
}

// Problems of the correctness matrix: lengths that are not multiples of any block, GQA ratios 1, 4 and 8, head dims
// 64, 128 and 192 and d_qk != d_v (192 / 128), sliding windows and sinks (attn.fwd.mma's matrix leaves those out:
// its schema has none of them), causal on and off (causal with seq_q < seq_k checks the bottom-right alignment),
// varlen on and off. At head dim 64 attn.fwd.wgmma's
// defaults are its 192-row blocks (three consumer warpgroups) and the quick matrix's variation block_M=128.
std::vector<std::map<std::string, std::string>> attn_test_problems(bool full) {
  using KV = std::map<std::string, std::string>;
  std::vector<KV> s = {
      {{"batch", "2"}, {"seq_q", "200"}, {"seq_k", "333"}, {"heads", "4"}, {"heads_kv", "4"}, {"dim", "128"}, {"causal", "false"}},
      {{"batch", "2"}, {"seq_q", "257"}, {"seq_k", "257"}, {"heads", "8"}, {"heads_kv", "2"}, {"dim", "128"}, {"causal", "true"}},
      {{"batch", "1"}, {"seq_q", "77"}, {"seq_k", "301"}, {"heads", "8"}, {"heads_kv", "1"}, {"dim", "64"}, {"causal", "true"}},
      {{"batch", "3"}, {"seq_q", "129"}, {"seq_k", "65"}, {"heads", "16"}, {"heads_kv", "2"}, {"dim", "64"}, {"causal", "false"}},
      {{"batch", "6"}, {"seq_q", "300"}, {"seq_k", "500"}, {"heads", "8"}, {"heads_kv", "2"}, {"dim", "128"}, {"causal", "false"}, {"varlen", "true"}},
      {{"batch", "5"}, {"seq_q", "333"}, {"seq_k", "333"}, {"heads", "4"}, {"heads_kv", "1"}, {"dim", "64"}, {"causal", "true"}, {"varlen", "true"}},
      {{"batch", "2"}, {"seq_q", "300"}, {"seq_k", "300"}, {"heads", "4"}, {"heads_kv", "2"}, {"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}},
      {{"batch", "2"}, {"seq_q", "500"}, {"seq_k", "500"}, {"heads", "4"}, {"heads_kv", "2"}, {"dim", "128"}, {"causal", "true"}, {"window", "200"}, {"sinks", "true"}},
      {{"batch", "2"}, {"seq_q", "333"}, {"seq_k", "455"}, {"heads", "8"}, {"heads_kv", "2"}, {"dim", "64"}, {"causal", "true"}, {"window", "150"}, {"sinks", "true"}},
      {{"batch", "2"}, {"seq_q", "200"}, {"seq_k", "333"}, {"heads", "4"}, {"heads_kv", "2"}, {"dim", "256"}, {"causal", "true"}},
  };
  if (full)
    s.insert(s.end(), {
        {{"batch", "1"}, {"seq_q", "1"}, {"seq_k", "1"}, {"heads", "1"}, {"heads_kv", "1"}, {"dim", "64"}, {"causal", "true"}},
        {{"batch", "1"}, {"seq_q", "1"}, {"seq_k", "1000"}, {"heads", "8"}, {"heads_kv", "8"}, {"dim", "128"}, {"causal", "true"}},
        {{"batch", "2"}, {"seq_q", "1024"}, {"seq_k", "1024"}, {"heads", "4"}, {"heads_kv", "1"}, {"dim", "128"}, {"causal", "true"}},
        {{"batch", "2"}, {"seq_q", "1000"}, {"seq_k", "1500"}, {"heads", "8"}, {"heads_kv", "2"}, {"dim", "64"}, {"causal", "false"}},
        {{"batch", "4"}, {"seq_q", "200"}, {"seq_k", "333"}, {"heads", "4"}, {"heads_kv", "4"}, {"dim", "192"}, {"dim_v", "128"}, {"varlen", "true"}},
        {{"batch", "2"}, {"seq_q", "129"}, {"seq_k", "257"}, {"heads", "2"}, {"heads_kv", "1"}, {"dim", "192"}, {"causal", "true"}},
        {{"batch", "1"}, {"seq_q", "100"}, {"seq_k", "100"}, {"heads", "2"}, {"heads_kv", "2"}, {"dim", "128"}, {"dim_v", "64"}},
        {{"batch", "4"}, {"seq_q", "300"}, {"seq_k", "700"}, {"heads", "4"}, {"heads_kv", "1"}, {"dim", "64"}, {"causal", "true"}, {"window", "129"}, {"varlen", "true"}},
        {{"batch", "2"}, {"seq_q", "600"}, {"seq_k", "600"}, {"heads", "2"}, {"heads_kv", "2"}, {"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}, {"window", "256"}, {"sinks", "true"}},
        {{"batch", "2"}, {"seq_q", "77"}, {"seq_k", "1000"}, {"heads", "4"}, {"heads_kv", "4"}, {"dim", "64"}, {"sinks", "true"}, {"varlen", "true"}},
        {{"batch", "3"}, {"seq_q", "150"}, {"seq_k", "150"}, {"heads", "2"}, {"heads_kv", "1"}, {"dim", "256"}, {"varlen", "true"}},
        {{"batch", "1"}, {"seq_q", "190"}, {"seq_k", "190"}, {"heads", "2"}, {"heads_kv", "2"}, {"dim", "256"}, {"dim_v", "128"}, {"causal", "true"}},
    });
  return s;
}

// What both kernels share: the problem, its tensors, FLOPs and bytes, the float64 reference, tolerances, sampling
// and the correctness matrix.
KernelSpec attn_base() {
  KernelSpec k;
  k.family = "attention";
  k.tensor_cores = true;
  k.problem = attn_problem(true);
  // 2·len_q·len_k·dim (S = Q K^T) + 2·len_q·len_k·dim_v (O = P V) per sequence and head; causal counts half (the
  // convention of FlashAttention's benchmarks); a sliding window counts the (row, key) pairs it lets through.
  k.flops = [](const Values& p) {
    const Dims x(p);
    double pairs = 0;
    for (std::int64_t i = 0; i < x.b; ++i) {
      if (x.window == 0) {
        pairs += d(x.len_q(i)) * d(x.len_k(i)) * (x.causal ? 0.5 : 1.0);
        continue;
      }
      for (std::int64_t s = 0; s < x.len_q(i); ++s) {
        const auto [lo, hi] = x.keys(i, s);
        pairs += d(hi - lo);
      }
    }
    return 2.0 * d(x.h) * pairs * d(x.dim + x.dim_v);
  };
  k.min_bytes = [](const Values& p) {
    const Dims x(p);
    const double e = static_cast<double>(dtype_size(p.dtype()));
    return e * (d(x.dim + x.dim_v) * (d(x.total_q()) * d(x.h) + d(x.total_k()) * d(x.hkv))) +
           4.0 * d(x.h) * d(x.total_q()) + 8.0 * d(x.b + 1);
  };
  k.reference = attn_reference;
  // O is rounded to 16 bits (and P to 16 bits before P·V); its entries are weighted means of V in [-1, 1].
  // LSE is fp32 arithmetic on exact products: only accumulation order and ex2.approx.
  k.tolerance = [](const Values&, DType t) {
    if (t == DType::f32) return Tolerance{1e-4, 2e-3};
    return t == DType::bf16 ? Tolerance{1e-2, 2e-2} : Tolerance{5e-3, 5e-3};
  };
  // Each sampled O row (dim_v values) and LSE entry costs the reference a whole softmax row (seq_k · dim).
  k.sampling = [](const Values& p, const std::string& output) {
    return output == "O" ? OutputSampling{static_cast<std::uint64_t>(dim_v_of(p)),
                                          static_cast<std::uint64_t>(192 * dim_v_of(p))}
                         : OutputSampling{1, 256};
  };
  k.test_problems = attn_test_problems;
  // cuDNN's SDPA graph on the same Q, K, V (`--vs cudnn`), into an O of its own compared with ours.
  k.baseline = [](const Values& p, const Values&) -> std::optional<BaselineSpec> {
    const Dims x(p);
    BaselineSpec b;
    b.kind = "cudnn_sdpa";
    b.in = b.out = p.dtype();
    b.sdpa = SdpaBaseline{.batch = x.b, .heads = x.h, .heads_kv = x.hkv, .seq_q = x.sq, .seq_k = x.sk, .dim = x.dim,
                          .dim_v = x.dim_v, .causal = x.causal, .window = x.window,
                          .scale = 1.0 / std::sqrt(d(x.dim))};
    if (x.varlen) sdpa_lengths(x, b.sdpa);
    if (x.sinks) b.sdpa.sinks = "sinks";
    return b;
  };
  return k;
}

// The tensors and scalars both kernels take, in the mma kernel's parameter order: Q, K, V, O, LSE, cu_seqlens_q,
// cu_seqlens_k, heads, heads_kv.
std::vector<ArgSpec> attn_args(const Values& p) {
  const Dims x(p);
  const DType t = p.dtype();
  using Shape = std::vector<std::int64_t>;
  const Shape q = x.varlen ? Shape{x.total_q(), x.h, x.dim} : Shape{x.b, x.sq, x.h, x.dim};
  const Shape k = x.varlen ? Shape{x.total_k(), x.hkv, x.dim} : Shape{x.b, x.sk, x.hkv, x.dim};
  const Shape v = x.varlen ? Shape{x.total_k(), x.hkv, x.dim_v} : Shape{x.b, x.sk, x.hkv, x.dim_v};
  const Shape o = x.varlen ? Shape{x.total_q(), x.h, x.dim_v} : Shape{x.b, x.sq, x.h, x.dim_v};
  const Shape lse = x.varlen ? Shape{x.h, x.total_q()} : Shape{x.b, x.h, x.sq};
  return std::vector<ArgSpec>{
      // Scores q·k/sqrt(dim) with spread ~1.3: softmax rows neither flat nor one-hot.
      ArgSpec::tensor("Q", t, q, ArgRole::in, {.lo = -2, .hi = 2, .seed = 1}),
      ArgSpec::tensor("K", t, k, ArgRole::in, {.lo = -2, .hi = 2, .seed = 2}),
      ArgSpec::tensor("V", t, v, ArgRole::in, {.lo = -1, .hi = 1, .seed = 3}),
      ArgSpec::tensor("O", t, o, ArgRole::out),
      ArgSpec::tensor("LSE", DType::f32, lse, ArgRole::out),
      ArgSpec::i32_data("cu_seqlens_q", x.cu_q),
      ArgSpec::i32_data("cu_seqlens_k", x.cu_k),
      ArgSpec::scalar("heads", DType::i32, d(x.h)),
      ArgSpec::scalar("heads_kv", DType::i32, d(x.hkv))};
}

// [SECTION] attn.fwd.mma

int as_int(std::int64_t v) { return static_cast<int>(v); }

// A plan's fragment in `layouts` under the atom it is (fragment_spec); one that is no registered atom is left out.
void add_fragment(std::vector<LayoutInfo>& l, std::string name, const Fragment& f, const std::string& atom) {
  if (auto spec = fragment_spec(f, atom)) l.push_back({std::move(name), *spec});
}

AttnFwdMmaConfig mma_config(const Values& p, const Values& c) {
  return {.dim = as_int(p.integer("dim")),
          .block_M = as_int(c.integer("block_M")),
          .block_N = as_int(c.integer("block_N")),
          .warps = as_int(c.integer("warps")),
          .num_stages = as_int(c.integer("num_stages")),
          .causal = p.boolean("causal"),
          .bf16 = p.dtype() == DType::bf16,
          .varlen = p.boolean("varlen")};
}

Status check_mma(const Values& p, const Values& c, const DeviceLimits& limits) {
  TL_RETURN_IF_ERROR(check_problem(p));
  const auto bm = c.integer("block_M"), bn = c.integer("block_N"), w = c.integer("warps"), dim = p.integer("dim");
  if (bm % (16 * w) != 0)
    return refuse("block_M=" + std::to_string(bm) + " over warps=" + std::to_string(w) +
                  " is not whole m16 tiles per warp (block_M must be a multiple of 16 * warps): use fewer warps");
  // Per thread: O accumulators (rows/16 * dim/2) plus S (rows/16 * block_N/2), rows = block_M / warps.
  const auto mt = bm / (16 * w), acc = mt * (dim / 2 + bn / 2);
  // ptxas spills past 128 of them (measured for sm_80 and sm_90a: 160 spills at 255 registers, 128 does not).
  if (acc > 128)
    return refuse("a warp of " + std::to_string(bm / w) + " rows with dim=" + std::to_string(dim) + " and block_N=" +
                  std::to_string(bn) + " holds " + std::to_string(acc) +
                  " fp32 accumulators per thread (O and S); past 128 the rest of the loop does not fit in 255 registers and "
                  "spills: lower block_N or add warps");
  const std::int64_t smem = make_plan(mma_config(p, c)).bytes;
  if (smem > limits.smem_per_block_optin)
    return refuse("the Q tile and " + c.text("num_stages") + " stages of K and V tiles need " + std::to_string(smem) +
                  " bytes of shared memory, over " + limits.arch + "'s " + std::to_string(limits.smem_per_block_optin) +
                  " per block: lower num_stages, block_N or block_M");
  return Status::success();
}

KernelSpec attn_fwd_mma_spec() {
  KernelSpec k = attn_base();
  k.name = "attn.fwd.mma";
  k.problem = attn_problem(false);
  // The shared matrix less the problems its narrower schema does not take (dim 192 / 256, windows, sinks).
  k.test_problems = [problem = k.problem](bool full) {
    auto all = attn_test_problems(full);
    std::erase_if(all, [&](const auto& kv) { return !problem.resolve(kv, "problem").ok(); });
    return all;
  };
  k.summary = "FlashAttention-2-style forward: cp.async K/V pipeline, ldmatrix, mma.sync, online softmax (O and LSE)";
  k.source = "attention/attn_fwd_mma.cuh";
  k.config = {{ParamSpec::one_of("block_M", 64, {64, 128}, "query rows per block"),
               ParamSpec::one_of("block_N", 64, {32, 64, 128}, "keys per K/V tile (one pipeline stage)"),
               ParamSpec::one_of("warps", 4, {2, 4, 8}, "warps, stacked along the query rows (block_M/warps rows each)"),
               ParamSpec::integer("num_stages", 2, 2, 4, "K/V tiles in the cp.async pipeline (2 = double buffering)")}};
  k.can_implement = check_mma;
  k.name_expression = [](const Values& p, const Values& c) { return name_expression(mma_config(p, c)); };
  k.launch = [](const Values& p, const Values& c, const DeviceLimits&) {
    LaunchGeometry g;
    g.grid.x = static_cast<std::uint32_t>((p.integer("seq_q") + c.integer("block_M") - 1) / c.integer("block_M"));
    g.grid.y = static_cast<std::uint32_t>(p.integer("heads"));
    g.grid.z = static_cast<std::uint32_t>(p.integer("batch"));
    g.block.x = static_cast<std::uint32_t>(c.integer("warps") * 32);
    g.dynamic_smem = static_cast<std::uint32_t>(make_plan(mma_config(p, c)).bytes);
    return g;
  };
  k.args = [](const Values& p, const Values&, const DeviceLimits&) { return attn_args(p); };
  k.probes = attn_fwd_mma_probe_names();
  // Per warp and K/V tile: five regions (begin + end each), plus the prologue's issues and the epilogue.
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits&) {
    const auto tiles = (p.integer("seq_k") + c.integer("block_N") - 1) / c.integer("block_N");
    return static_cast<std::uint32_t>(10 * tiles + 2 * c.integer("num_stages") + 64);
  };
  k.layouts = [](const Values& p, const Values& c) {
    const AttnFwdMmaPlan plan = make_plan(mma_config(p, c));
    const std::string ty = p.text("dtype");
    std::vector<LayoutInfo> l = {{"smem_Q", memory_spec(plan.smem_Q, ty)},
                                 {"smem_K", memory_spec(plan.smem_K, ty)},
                                 {"smem_V", memory_spec(plan.smem_V, ty)}};
    add_fragment(l, "mma_A (Q, P)", plan.mma_A, "mma.m16n8k16." + ty + ".A");
    add_fragment(l, "mma_B (K, V)", plan.mma_B, "mma.m16n8k16." + ty + ".B");
    add_fragment(l, "mma_C (S, O)", plan.mma_C, "mma.m16n8k16.f32.C");
    add_fragment(l, "ldmatrix (Q, K)", plan.ldmatrix_A, "ldmatrix.x4");
    add_fragment(l, "ldmatrix.trans (V)", plan.ldmatrix_trans, "ldmatrix.x4.trans");
    add_fragment(l, "ldmatrix rows (Q, V)", plan.rows_A, "ldmatrix.x4.rows");
    return l;
  };
  return k;
}


// [SECTION] attn.fwd.wgmma

// Registers a consumer thread needs beyond S, P and O (min_blocks > 1). Measured with ptxas (sm_90a, d 64, causal
// window with sinks): block_N 64 (80 registers of S, P and O) spills 48-96 bytes in the 104 that min_blocks=2 leaves
// two consumer warpgroups, and fits in the 136 of one consumer warpgroup at min_blocks=3.
constexpr int kWgmmaRegSlack = 40;

// The registers a consumer thread gets with min_blocks > 1 CTAs per SM (the plain build's producer keeps 24), and
// about what it needs.
int wgmma_consumer_regs(const AttnFwdWgmmaConfig& cfg, const DeviceLimits& limits) {
  return attn_shared_consumer_regs(limits.regs_per_block, cfg.block_M, cfg.min_blocks, 24);
}
int wgmma_consumer_need(const AttnFwdWgmmaConfig& cfg) {
  return cfg.block_N / 2 + cfg.block_N / 4 + cfg.dim_v / 2 + kWgmmaRegSlack;
}
// The shared memory each of min_blocks CTAs on one SM may take: they share the per-block opt-in limit plus the 1 KiB
// reserved per block.
std::int64_t wgmma_smem_share(int min_blocks, const DeviceLimits& limits) {
  return (std::int64_t{limits.smem_per_block_optin} + 1024) / min_blocks - 1024;
}

// The config with its auto values (block_M=0, block_N=0, q_stages=0, epilogue=auto, ping_pong=auto, min_blocks=0)
// resolved for the problem:
//   block_N   128 at head dims up to 128; 112 at 192 (FlashAttention-3's Hopper tile there: S, O and P stay in the
//             consumers' registers, and two K/V stages beside the Q tile and the O staging tile fit shared memory);
//             80 at 256 (FlashAttention-3's there too; H100, b 4, h 16, 4k, with ping_pong off: 1.00x cuDNN, 64 keys
//             0.93x, docs/perf.md); 64 under a narrow band (below)
//   ping_pong on with two or three consumer warpgroups, but off at head dim 256 (on, 80 keys spill 44-64 bytes and
//             ran 0.91x; 64 keys 0.85x)
//   block_M   192 at head dim 64 (FlashAttention-3's tile there: the softmax's exp2 per FLOP is double d 128's, and
//             three consumer warpgroups hide more of it behind each other's GEMMs) where block_N <= 128, else 128;
//             64 under a narrow band
//   narrow    a window of at most narrow_window(head dim) keys: 64 x 64 blocks of one consumer warpgroup, three
//             CTAs per SM (min_blocks; 2 where 3 do not fit: at head dim 128, with one Q buffer). A 128-row block
//             under a 128-key window walks two 128-key tiles, half of them masked, so its fixed costs (the lone first
//             S, the last P V, the epilogue) dominate and ping-pong has little to overlap; independent 64-row CTAs
//             walk three 64-key tiles each. H100 (docs/perf.md), gpt-oss-like GQA (b 4, h 64 / kv 8, 4k, causal,
//             sinks) at head dim 64: 0.93x -> 1.28x cuDNN at window 128, 0.93x -> 1.12x at 512, 1.00x -> 1.07x at
//             1024, but 1.06x -> 1.04x at 2048 (192-row blocks stay); head dim 128 (h 32 / kv 8) at window 128:
//             0.98x -> 1.11x (the only width measured there)
//   q_stages  2 where the second Q buffer fits beside the K/V rings (and the O staging tile), else 1
//   epilogue  tma where its staging tile fits, else direct (a second Q buffer gives way first)
//   min_blocks 1 but under a narrow band
//   uniform_desc true (1.006-1.030x the per-thread descriptors at d 128, 64 and 256, H100; at 192 / 128, whose runs
//             step down with the power cap part-way through a bench, 1.016-1.046x by the full-clock minima in 11 of
//             12 alternated rounds at the three MLA anchors, 1.005-1.018x by the medians' mean: docs/perf.md)
//   pv_fence  on where ping_pong is off with two consumer warpgroups (head dim 256): nothing else issues GEMMs there
//             while a warpgroup's softmax runs, so its own P V may overlap it (H100: 1.004-1.017x off at d 256 causal
//             2k and 4k and 4k, both alternated rounds, medians and minima; docs/perf.md); off with ping-pong,
//             where the softmax then runs beside the other warpgroup's GEMM issue (d 128: 0.96x), and untried
//             under a narrow band (one warpgroup, two or three CTAs per SM)
//   softmax   tree where not causal with ping-pong at head dims to 128 (d 64's 192-row blocks, d 128): H100, the d 128
//             reference 1.004-1.007x chain in four alternated rounds of two calls (0.998-1.001x -> 1.002-1.008x cuDNN),
//             d 64 at 2k 1.017-1.040x; lazy where causal at head dim 256's tile (ping_pong off, two consumer
//             warpgroups, pv_fence on): d 256 causal 2k 1.011-1.018x chain (0.994-0.999x -> 1.008-1.014x cuDNN), 0.9996-
//             1.007x tree; chain elsewhere: at d 128 causal (GQA, b 8, h 32 / 8, 4k) tree ran 0.997x and 1.000x,
//             lazy 0.99x (also 0.99x at the d 128 reference: the warp vote makes the first exp2 wait for both row
//             halves' maxima); 192 / 128, d 256 not causal, d 64 causal and the narrow bands were not measured
//             (docs/perf.md)
//   schedule  dynamic where causal (and persistent), and where not causal at dim = dim_v = 128 or 256: there equal
//             work tiles still leave the CTAs uneven (4096 tiles on 132 SMs at the d 128 reference: 31.03 rounds),
//             and taking them in turn finished 0.6-4.5% sooner (H100: d 128 at 4k, 16k and s_q 1k / s_k 4k, d 256
//             at 4k); at d 64 (192-row blocks) it ran 0.2-0.3% slower and at 192 / 128 3-7% slower, so static there,
//             and at block_N 176 (its build spills 4 bytes with the dynamic schedule)
//             (a narrow band whose given block_N or stages fit no second CTA gets the wide band's tile instead)
std::int64_t narrow_window(std::int64_t widest) { return widest == 64 ? 1024 : widest == 128 ? 128 : 0; }
AttnFwdWgmmaConfig wgmma_config(const Values& p, const Values& c, bool narrow_allowed = true) {
  const std::int64_t dim = p.integer("dim"), dim_v = p.integer("dim_v"), bn = c.integer("block_N");
  const std::int64_t widest = std::max(dim, dim_v), window = p.integer("window");
  const bool narrow = narrow_allowed && window > 0 && window <= narrow_window(widest);
  const std::int64_t block_N = bn > 0 ? bn : narrow ? 64 : widest <= 128 ? 128 : widest <= 192 ? 112 : 80;
  const std::int64_t bm = c.integer("block_M");
  const bool tall = widest == 64 && block_N <= 128 && !narrow;  // block_M auto: 192
  const std::string epi = c.text("epilogue"), pp = c.text("ping_pong"), sched = c.text("schedule");
  const std::int64_t block_M = bm > 0 ? bm : narrow ? 64 : tall ? 192 : 128;
  AttnFwdWgmmaConfig r{.dim = as_int(dim),
                       .dim_v = as_int(dim_v),
                       .block_M = as_int(block_M),
                       .block_N = as_int(block_N),
                       .num_stages = as_int(c.integer("num_stages")),
                       .q_stages = as_int(c.integer("q_stages")),
                       .ping_pong = pp == "auto" ? block_M > 64 && widest <= 192 : pp == "true",
                       .epilogue = epi == "tma" ? AttnEpilogue::tma : epi == "smem" ? AttnEpilogue::smem
                                                                                     : AttnEpilogue::direct,
                       .causal = causal_mask(p),
                       .bf16 = p.dtype() == DType::bf16,
                       .varlen = p.boolean("varlen"),
                       .window = p.integer("window") > 0,
                       .sinks = p.boolean("sinks"),
                       .dynamic = sched == "dynamic" ||
                                  (sched == "auto" && c.boolean("persistent") &&
                                   (causal_mask(p) || (dim == dim_v && (dim == 128 || dim == 256) && block_N <= 128))),
                       .uniform_desc = c.text("uniform_desc") != "false"};
  r.pv_fence = c.text("pv_fence") == "true" || (c.text("pv_fence") == "auto" && !r.ping_pong && r.block_M == 128);
  const std::string sm = c.text("softmax");
  r.softmax = sm == "tree" ? AttnSoftmax::tree : sm == "lazy" ? AttnSoftmax::lazy : sm == "chain" ? AttnSoftmax::chain
              : r.causal && !r.ping_pong && r.block_M == 128 ? AttnSoftmax::lazy
              : !r.causal && r.ping_pong && widest <= 128     ? AttnSoftmax::tree
                                                              : AttnSoftmax::chain;
  // For each count of CTAs per SM in turn (auto: the most whose registers and shared memory fit), the first of (2 Q
  // buffers, tma), (1, tma), (2, direct), (1, direct) that fits its share of shared memory, the given ones held.
  const DeviceLimits hopper = limits_for_arch("sm_90a");
  const int given_blocks = as_int(c.integer("min_blocks"));
  const std::vector<int> blocks = given_blocks > 0                               ? std::vector<int>{given_blocks}
                                  : narrow && r.block_M == 64 && !r.ping_pong ? std::vector<int>{3, 2, 1}
                                                                                : std::vector<int>{1};
  for (int m : blocks) {
    r.min_blocks = m;
    if (m > 1 && wgmma_consumer_need(r) > wgmma_consumer_regs(r, hopper)) continue;
    for (AttnEpilogue e : {AttnEpilogue::tma, AttnEpilogue::direct})
      for (int q : {2, 1}) {
        AttnFwdWgmmaConfig t = r;
        if (epi == "auto") t.epilogue = e;
        if (c.integer("q_stages") == 0) t.q_stages = q;
        if (make_plan(t).bytes > wgmma_smem_share(m, hopper)) continue;
        if (blocks.size() > 1 && m == 1 && bm == 0) return wgmma_config(p, c, false);
        return t;
      }
  }
  r.min_blocks = blocks.front();
  if (r.q_stages == 0) r.q_stages = 1;
  return r;  // too big either way: can_implement says so
}

// O goes through the shared-memory staging tile (epilogue smem or tma).
bool staged_epilogue(const AttnFwdWgmmaConfig& c) { return c.epilogue != AttnEpilogue::direct; }

// Query blocks of the longest sequence.
std::int64_t wgmma_m_blocks(const Values& p, const Values& c) {
  const std::int64_t bm = wgmma_config(p, c).block_M;
  return (p.integer("seq_q") + bm - 1) / bm;
}

// The launch's CTAs: one per work tile, or (persistent) min_blocks per SM at most.
std::int64_t wgmma_ctas(const Values& p, const Values& c, const DeviceLimits& l) {
  const std::int64_t work = wgmma_m_blocks(p, c) * p.integer("heads") * p.integer("batch");
  const std::int64_t resident = std::int64_t{std::max(l.sm_count, 1)} * wgmma_config(p, c).min_blocks;
  return c.boolean("persistent") ? std::min<std::int64_t>(work, resident) : work;
}

// The causal work order's section (config section; -1 = auto). Measured on the H100 (docs/perf.md, 32k tokens, 16
// heads, dim 128, 128-row blocks): the best G at seq 2k/4k/8k/16k was 32 (or 4)/16/8/4, i.e. a group of G x query
// blocks = 512 work tiles (~4 rounds of 132 CTAs; at dim 128 the group's K and V, 32 MB, fit the 50 MB L2), and
// G = 8 at 2k (128 tiles) ran 20% slower than G = 4 or 32, which the static per-CTA work model does not explain.
// schedule=dynamic: no more pairs than whose K and V fill 32 MB (FlashAttention-3's rule; the same G at dim 128),
// so at head dim 256 half as many (b 4, h 16, 4k: G 8 ran 1.4% faster than 16 on the H100).
// schedule=static: where the static model (work_imbalance: a work tile costs its K/V tiles plus two for its lone first
// S and last P V and its epilogue) puts the busiest of `ctas` persistent CTAs more than 5% further above the mean at
// that G than at the best smaller one, auto takes the best: at head dim 256 (80-key tiles, b 4, h 16, 4k: 2,048
// work tiles) the model gives 1.145 at G 16, 1.259 at 8, 1.490 at 4, and the H100 ran 1.07, 1.17 and 1.39 ms there.
std::int64_t wgmma_section(const Values& p, const Values& c, std::int64_t ctas) {
  const auto g = c.integer("section");
  const std::int64_t m_blocks = wgmma_m_blocks(p, c), by_tiles = std::max<std::int64_t>(1, 512 / m_blocks);
  if (g >= 0) return g;
  if (!causal_mask(p) || !c.boolean("persistent")) return by_tiles;
  const AttnFwdWgmmaConfig cfg = wgmma_config(p, c);
  if (cfg.dynamic) {
    const std::int64_t kv_head = p.integer("seq_k") * (cfg.dim + cfg.dim_v) * 2;
    const std::int64_t group = p.integer("heads") / std::max<std::int64_t>(p.integer("heads_kv"), 1);
    return std::clamp<std::int64_t>((std::int64_t{32} << 20) * group / std::max<std::int64_t>(kv_head, 1), 1, by_tiles);
  }
  const std::int64_t seq_q = p.integer("seq_q"), seq_k = p.integer("seq_k"), window = p.integer("window");
  const int pairs = as_int(p.integer("heads") * p.integer("batch"));
  // Query block m_blocks - 1 - m (the m-th heaviest) costs the K/V tiles the kernel visits for it.
  auto cost = [&](int m) {
    const int m0 = as_int((m_blocks - 1 - m) * cfg.block_M);
    return attn_kv_tiles(m0, cfg.block_M, cfg.block_N, as_int(seq_q), as_int(seq_k), true, window > 0, as_int(window)).n +
           2.0;
  };
  auto imbalance = [&](std::int64_t section) { return work_imbalance(as_int(m_blocks), pairs, as_int(section), as_int(ctas), cost); };
  const double rule = imbalance(by_tiles);
  if (rule <= 1.05) return by_tiles;  // no G can beat it by 5% (1 is the floor): one pass of the model, not G
  std::int64_t best = by_tiles;
  double best_imbalance = rule;
  for (std::int64_t s = by_tiles - 1; s >= 1; --s)
    if (const double x = imbalance(s); x < best_imbalance) best = s, best_imbalance = x;
  return rule > 1.05 * best_imbalance ? best : by_tiles;
}

Status check_wgmma(const Values& p, const Values& c, const DeviceLimits& limits) {
  TL_RETURN_IF_ERROR(check_problem(p));
  // Work-order switches set where the work order does not use them were dropped without a word (the run record named
  // a config that did not run): refused naming them, what the problem and config are and what to change.
  if (c.integer("section") > 0 && !causal_mask(p))
    return refuse("section=" + c.text("section") + " orders causal work tiles (heaviest query blocks first across groups "
                  "of that many (sequence, head) pairs); this problem is not causal (causal=false, no window): its "
                  "tiles all cost the same and go in grid order: leave section at -1 (auto) or 0, or set causal=true");
  if (!c.boolean("persistent") && c.text("schedule") == "dynamic")
    return refuse("schedule=dynamic hands persistent CTAs their next work tile from a counter; persistent=false "
                  "launches one CTA a work tile, which takes no next one: leave schedule at auto or static, or set "
                  "persistent=true");
  if (!c.boolean("persistent") && c.integer("q_stages") == 2)
    return refuse("q_stages=2 loads the next work tile's Q into a second buffer while this one's is in use; "
                  "persistent=false launches one CTA a work tile, with no next Q to load: leave q_stages at 0 (auto) "
                  "or 1, or set persistent=true");
  const AttnFwdWgmmaConfig cfg = wgmma_config(p, c);
  if (cfg.ping_pong && cfg.block_M == 64)
    return refuse("ping_pong=true passes the tensor cores between consumer warpgroups in turn, and block_M=64 has one "
                  "(64 rows each): use block_M=128 or 192, or ping_pong=false");
  // Three consumer warpgroups get 160 registers each (attn_fwd_wgmma.cuh: the producer's 24 and 3 x 160 fill the file).
  // Measured (ptxas, sm_90a): S, P and O of block_N 128 at dim_v 64 (64 + 32 + 32) fit without spills, block_N 176
  // or dim_v 128 at block_N 128 spill 300 bytes, and d_qk 128 / 192 spills a few where d_qk 64 does not.
  if (cfg.block_M == 192 && (cfg.dim != 64 || cfg.dim_v != 64 || cfg.block_N > 128))
    return refuse("block_M=192 (three consumer warpgroups of 160 registers each) holds S, P and O in registers only at "
                  "dim=64, dim_v=64 and block_N<=128, and here dim=" + std::to_string(cfg.dim) + ", dim_v=" +
                  std::to_string(cfg.dim_v) + ", block_N=" + std::to_string(cfg.block_N) +
                  ": use block_M=128" + (cfg.dim == 64 && cfg.dim_v == 64 ? " or block_N=128" : ""));
  // Measured (ptxas, sm_90a): the causal mask's index math on top of S (88), O (64) and P (44) registers spills 12
  // bytes at block_N=176, dim=128; non-causal, or dim=64, fits.
  if (cfg.block_N == 176 && cfg.dim_v >= 128 && cfg.causal)
    return refuse("block_N=176 with dim=128 and causal=true spills registers (S, O, P and the diagonal mask do not fit "
                  "in 240 per thread): use block_N=128 for causal attention");
  const std::int64_t smem = make_plan(cfg).bytes;
  const bool staged = staged_epilogue(cfg), two_q = cfg.q_stages > 1;
  if (cfg.min_blocks > 1) {
    if (const int regs = wgmma_consumer_regs(cfg, limits), need = wgmma_consumer_need(cfg); need > regs)
      return refuse("min_blocks=" + std::to_string(cfg.min_blocks) + " leaves each consumer thread " +
                    std::to_string(regs) + " registers, but S, P and O of block_N=" + std::to_string(cfg.block_N) +
                    ", dim_v=" + std::to_string(cfg.dim_v) + " need about " + std::to_string(need) +
                    ": it would spill; use min_blocks=1, a smaller block_N or block_M=64");
    if (smem > wgmma_smem_share(cfg.min_blocks, limits))
      return refuse("min_blocks=" + std::to_string(cfg.min_blocks) + ": " + std::to_string(cfg.min_blocks) +
                    " CTAs of " + std::to_string(smem) + " bytes of shared memory do not fit one SM of " + limits.arch +
                    ": lower min_blocks or block_N" + (two_q ? std::string(", or set q_stages=1") : "") +
                    (staged ? ", or epilogue=direct" : ""));
  }
  if (smem > limits.smem_per_block_optin)
    return refuse("the Q tile" + std::string(two_q ? "s (q_stages=2)" : "") + " and " + c.text("num_stages") +
                  " stages of K and V tiles (block_N=" + std::to_string(cfg.block_N) + ", dim=" + p.text("dim") +
                  ", dim_v=" + p.text("dim_v") + ")" + (staged ? " plus the O staging tile" : "") + " need " +
                  std::to_string(smem) + " bytes of shared memory, over " + limits.arch + "'s " +
                  std::to_string(limits.smem_per_block_optin) + " per block: lower num_stages or block_N" +
                  (staged ? ", or epilogue=direct" : "") + (two_q ? ", or q_stages=1" : ""));
  return Status::success();
}

KernelSpec attn_fwd_wgmma_spec() {
  KernelSpec k = attn_base();
  k.name = "attn.fwd.wgmma";
  k.summary = "FlashAttention-3-style forward: TMA K/V rings, producer warp + consumer warpgroups, wgmma, softmax "
              "overlapped with P·V and ping-pong between warpgroups (O and LSE)";
  k.source = "attention/attn_fwd_wgmma.cuh";
  k.min_cc = 90;
  k.archs = {"sm_90a"};
  k.config = {{ParamSpec::one_of("block_M", 0, {0, 64, 128, 192},
                                 "query rows per block: 64 per consumer warpgroup; 192 (three, FlashAttention-3's "
                                 "d 64 tile) at dim=dim_v=64 and block_N<=128 only; 0 = auto: 192 where it can run "
                                 "and any window is at least 512 keys (narrower bands run faster in 128-row blocks), "
                                 "else 128"),
               ParamSpec::one_of("block_N", 0, {0, 64, 80, 112, 128, 176},
                                  "keys per K/V tile (the N of the S = Q K^T wgmma); 0 = auto: 128 at head dims to 128, "
                                  "112 at 192. S, O and P of 176 x 128 still fit the consumers' 240 registers "
                                  "without spills (not causal; the probe build spills, as it does at dim_v 192; at dim 128 "
                                  "only with a single Q buffer and epilogue=direct: the O staging tile no longer fits)"),
               ParamSpec::integer("num_stages", 2, 2, 3, "K tiles and V tiles in flight (each its own mbarrier ring)"),
               ParamSpec::enumeration("ping_pong", "auto", {"auto", "true", "false"},
                                      "the two consumer warpgroups take turns issuing GEMMs, so one's softmax overlaps "
                                      "the other's GEMMs (block_M=128; at 192 the three take turns in a cycle); auto = "
                                      "true but at block_M=64 (one warpgroup) and at head dim 256 (there O's 128 "
                                      "registers a thread leave no room for the turn's: false measured 1.08x faster)"),
               ParamSpec::one_of("min_blocks", 0, {0, 1, 2, 3, 4},
                                 "CTAs per SM: the registers are budgeted for that many (__launch_bounds__, the "
                                 "consumers' setmaxnreg share of each CTA's pool) and the persistent grid has that "
                                 "many per SM, so narrow bands, whose work tiles are a few K/V tiles each, run more "
                                 "independent tiles at once; 0 = auto: 3 (else 2) under a window of at most 1024 "
                                 "keys at head dim 64, 128 at head dim 128, where block_M is 64 (its auto there, with "
                                 "block_N 64), else 1"),
               ParamSpec::boolean("persistent", true,
                                  "min_blocks CTAs per SM walking the work tiles (the next tile's loads overlap this "
                                  "one's epilogue); false: one CTA per work tile"),
               ParamSpec::enumeration("schedule", "auto", {"auto", "static", "dynamic"},
                                      "how persistent CTAs get work tiles: static = CTA i takes tiles i, i + grid, ...; "
                                      "dynamic = after its first, each takes the next from a global counter when its "
                                      "producer is ready for one (FlashAttention-3's causal scheduler), so the CTAs' "
                                      "work evens out by itself; auto = dynamic where persistent and causal or at "
                                      "dim = dim_v = 128 or 256 with block_N <= 128, else static; dynamic is refused "
                                      "with persistent=false (one CTA a work tile)"),
               ParamSpec::integer("section", -1, -1, 256,
                                  "causal work order: 0 = query blocks of one head in turn (most keys first); G > 0 = "
                                  "heaviest query blocks first across G (sequence, head) pairs at a time, evening out "
                                  "the persistent CTAs' work (tile/work_order.hpp); -1 = auto, groups of about 512 "
                                  "work tiles (G = 512 / query blocks: the best measured on the H100 at 2k-16k), "
                                  "with schedule=dynamic no more pairs than whose K and V fill 32 MB, with static "
                                  "a smaller G where the static work model balances the CTAs 5% better; "
                                  "not causal: G > 0 refused (the tiles go in grid order)"),
               ParamSpec::one_of("q_stages", 0, {0, 1, 2},
                                 "Q buffers: 2 loads the next work tile's Q while this one's is still in use "
                                 "(block_M x dim more shared memory); 0 = auto: 2 where it fits beside the K/V tiles "
                                 "and the O staging tile, else 1; 2 is refused with persistent=false (one CTA a work "
                                 "tile)"),
               ParamSpec::enumeration("uniform_desc", "auto", {"auto", "true", "false"},
                                      "true: the consumers' wgmma descriptors are built from values ptxas can prove "
                                      "warp-uniform (redux.sync of this warpgroup's Q address per work tile and of the "
                                      "K/V ring counter per tile), so each k16 step is one uniform-register add instead "
                                      "of per-thread address math and two R2UR per wgmma; auto = true (H100: 1.006-1.030x "
                                      "false at d 128, 128 causal, 64, GQA and 256 causal; at 192 / 128, whose runs "
                                      "step down with the power cap, 1.016-1.046x by the full-clock minima; docs/perf.md)"),
               ParamSpec::enumeration("pv_fence", "auto", {"auto", "true", "false"},
                                      "true: a clock read after each tile's softmax holds the wait for that tile's P V "
                                      "behind it (ptxas otherwise places the wait before the softmax, so a warpgroup's "
                                      "softmax never overlaps its own P V); auto = true where ping_pong is off with "
                                      "two consumer warpgroups (head dim 256; H100: 1.004-1.017x false there), false "
                                      "elsewhere (with ping-pong the softmax then competes with the other warpgroup's "
                                      "GEMM issue: 0.96x at d 128; docs/perf.md)"),
               ParamSpec::enumeration("softmax", "auto", {"auto", "chain", "tree", "lazy"},
                                      "the online softmax's row reductions and O's rescale: chain = the row max and row "
                                      "sum of a thread's values as chains (ptxas keeps the max's in source order ahead of "
                                      "the first exp2); tree = both as binary trees; lazy = trees, and the row maxima "
                                      "move (and O is rescaled) only when one of a warp's rows grew by more than 8 in "
                                      "log2 units, so O's FMULs leave most tiles (exp2 values stay below 2^8; O / l and "
                                      "LSE are unchanged); auto = tree where not causal with ping-pong at head dims "
                                      "to 128, lazy where causal at head dim 256 (ping_pong off), else chain (H100: "
                                      "1.004-1.007x at the d 128 reference, 1.017-1.040x at d 64, 1.011-1.018x at d 256 "
                                      "causal; tree 0.997-1.000x at d 128 causal; docs/perf.md)"),
               ParamSpec::enumeration("epilogue", "auto", {"auto", "direct", "smem", "tma"},
                                      "how O leaves: direct = 4-byte stores straight from the accumulators; smem = "
                                      "staged in shared memory (block_M x dim_v more), whole rows with 16-byte stores; "
                                      "tma = staged, then TMA stores that overlap the next work tile; auto = tma where "
                                      "the staging tile fits (before a second Q buffer), else direct")}};
  k.can_implement = check_wgmma;
  // --full also runs one consumer warpgroup per CTA with two and three CTAs per SM (one-parameter variations of
  // min_blocks from the defaults do not fit the registers), where the test problems fit them; the last is the head dim
  // 128 narrow band's.
  k.test_configs = [] {
    return std::vector<std::map<std::string, std::string>>{
        {{"block_M", "64"}, {"ping_pong", "false"}, {"min_blocks", "2"}},
        {{"block_M", "64"}, {"block_N", "64"}, {"ping_pong", "false"}, {"min_blocks", "3"}},
        {{"block_M", "64"}, {"block_N", "64"}, {"ping_pong", "false"}, {"min_blocks", "2"}, {"q_stages", "1"}}};
  };
  k.name_expression = [](const Values& p, const Values& c) { return name_expression(wgmma_config(p, c)); };
  // Persistent: min_blocks CTAs per SM at most (the device's SM count, 132 on the H100).
  k.launch = [](const Values& p, const Values& c, const DeviceLimits& l) {
    LaunchGeometry g;
    g.grid.x = static_cast<std::uint32_t>(wgmma_ctas(p, c, l));
    g.persistent = c.boolean("persistent");  // the launcher shrinks it further if fewer CTAs fit at once
    g.block.x = static_cast<std::uint32_t>((wgmma_config(p, c).block_M / 64 + 1) * 128);
    g.dynamic_smem = static_cast<std::uint32_t>(make_plan(wgmma_config(p, c)).bytes);
    return g;
  };
  // Kernel signature: (tma_Q, tma_K, tma_V, tma_O, O, LSE, cu_seqlens_q, cu_seqlens_k, heads, heads_kv, m_blocks,
  // batch, section, sinks, window, tile_counter). Q, K and V are reached only through their tensor maps, one box = 64 columns (128 bytes) of one
  // head x block rows; O through its map (a consumer warpgroup's 64 rows; epilogue=tma) and its pointer (the rest).
  k.args = [](const Values& p, const Values& c, const DeviceLimits& l) {
    auto a = attn_args(p);
    const AttnFwdWgmmaConfig cfg = wgmma_config(p, c);
    const bool varlen = p.boolean("varlen");
    auto box = [&](std::int64_t rows) {
      return varlen ? std::vector<std::int64_t>{64, 1, rows} : std::vector<std::int64_t>{64, 1, rows, 1};
    };
    for (int i = 0; i < 3; ++i) a[static_cast<std::size_t>(i)].is_param = false;
    a.insert(a.begin() + 3, {ArgSpec::tensor_map("tma_Q", "Q", box(cfg.block_M), 128),
                             ArgSpec::tensor_map("tma_K", "K", box(cfg.block_N), 128),
                             ArgSpec::tensor_map("tma_V", "V", box(cfg.block_N), 128),
                             ArgSpec::tensor_map("tma_O", "O", box(64), 128)});
    a.push_back(ArgSpec::scalar("m_blocks", DType::i32, d(wgmma_m_blocks(p, c))));
    a.push_back(ArgSpec::scalar("batch", DType::i32, d(p.integer("batch"))));
    a.push_back(ArgSpec::scalar("section", DType::i32, d(wgmma_section(p, c, wgmma_ctas(p, c, l)))));
    // Sink logits near a row's log-sum-exp at the test sizes (log of a few hundred keys), so they matter. Without
    // sinks the kernel gets a null pointer it never reads (no tensor: callers pass Q, K, V as before).
    if (p.boolean("sinks"))
      a.push_back(ArgSpec::tensor("sinks", DType::f32, {p.integer("heads")}, ArgRole::in, {.lo = 2, .hi = 8, .seed = 4}));
    else
      a.push_back(ArgSpec::scalar("sinks", DType::u64, 0));
    a.push_back(ArgSpec::scalar("window", DType::i32, d(p.integer("window"))));
    // schedule=dynamic's work counter, one per launch (zeroed when allocated; the grid's last fetch resets it for the
    // next repetition); static schedules never read it.
    if (cfg.dynamic)
      a.push_back(ArgSpec::tensor("tile_counter", DType::i32, {1}, ArgRole::scratch));
    else
      a.push_back(ArgSpec::scalar("tile_counter", DType::u64, 0));
    return a;
  };
  k.probes = attn_fwd_wgmma_probe_names();
  // Per K/V tile: the producer warp marks 2 regions for K and 2 for V, a consumer warp 8 regions (begin + end each);
  // plus an epilogue per work tile, times the work tiles of the busiest CTA.
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const std::int64_t bn = wgmma_config(p, c).block_N;
    const auto tiles = (p.integer("seq_k") + bn - 1) / bn;
    const auto work = wgmma_m_blocks(p, c) * p.integer("heads") * p.integer("batch");
    const std::int64_t sms = std::int64_t{std::max(l.sm_count, 1)} * wgmma_config(p, c).min_blocks;
    const auto per_cta = c.boolean("persistent") ? (work + sms - 1) / sms : 1;
    return static_cast<std::uint32_t>(per_cta * (16 * tiles + 2) + 64);
  };
  k.layouts = [](const Values& p, const Values& c) {
    const AttnFwdWgmmaConfig cfg = wgmma_config(p, c);
    const AttnFwdWgmmaPlan plan = make_plan(cfg);
    const std::string ty = p.text("dtype");
    std::vector<LayoutInfo> l = {{"smem_Q", memory_spec(plan.smem_Q, ty)},
                                 {"smem_K", memory_spec(plan.smem_K, ty)},
                                 {"smem_V (N-major B)", memory_spec(plan.smem_V, ty)}};
    if (staged_epilogue(cfg)) l.push_back({"smem_O (per consumer warpgroup)", memory_spec(plan.smem_O, ty)});
    add_fragment(l, "wgmma_C (S)", plan.acc_S, "wgmma.m64n" + std::to_string(cfg.block_N) + "k16.f32.C");
    add_fragment(l, "wgmma_A (P)", plan.frag_P, "wgmma.m64k16." + ty + ".A");
    add_fragment(l, "wgmma_C (O)", plan.acc_O, "wgmma.m64n" + p.text("dim_v") + "k16.f32.C");
    return l;
  };
  return k;
}

}  // namespace

std::vector<KernelSpec> attention_kernels() { return {attn_fwd_mma_spec(), attn_fwd_wgmma_spec()}; }

}  // namespace tl
