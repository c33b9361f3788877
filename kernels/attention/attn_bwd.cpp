// Host specs of the attention backward kernels attn.bwd.mma (FlashAttention-2 style, mma.sync) and attn.bwd.wgmma
// (FlashAttention-3 style, TMA + wgmma): dQ, dK, dV from Q, K, V, O, dO and the forward's LSE, checked against float64
// gradients on sampled rows; they share problem, arguments, reference, tests and baseline.
#include <algorithm>
#include <cmath>
#include <map>

#include "attention/attn_bwd_mma_plan.hpp"
#include "attention/attn_bwd_wgmma_plan.hpp"
#include "runtime/core/numeric.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

// Dense: Q, O, dO, dQ [batch, seq_q, heads, dim]; K, V, dK, dV [batch, seq_k, heads_kv, dim]; LSE f32 [batch, heads,
// seq_q]. Varlen: the sequences packed (Q-like [total_q, heads, dim], K-like [total_k, heads_kv, dim], LSE [heads,
// total_q]), sequence b at rows cu_seqlens[b] .. cu_seqlens[b+1]. Causal masks are bottom-right aligned. Unset, seq_q
// and seq_k follow each other and heads_kv follows heads, so setting one never leaves another's default unrunnable.
Schema bwd_problem() {
  const ParamSpec seq_q = ParamSpec::integer("seq_q", 2048, 1, 1 << 20,
                                             "query length (rows of Q, O, dO and dQ per sequence and head; unset: seq_k)");
  const ParamSpec seq_k = ParamSpec::integer("seq_k", 2048, 1, 1 << 20, "key/value length (unset: seq_q)");
  const ParamSpec heads = ParamSpec::integer("heads", 16, 1, 1 << 10, "query heads");
  return {{ParamSpec::integer("batch", 4, 1, 1 << 16, "sequences in the batch"), seq_q.follows(seq_k),
           seq_k.follows(seq_q), heads,
           ParamSpec::integer("heads_kv", 0, 1, 1 << 10,
                              "key/value heads (GQA: divides heads, dK and dV summed over each group; unset: heads)")
               .follows(heads),
           ParamSpec::one_of("dim", 128, {64, 128, 192}, "head dimension of Q and K (and of V, O unless dim_v)"),
           ParamSpec::one_of("dim_v", 0, {0, 64, 128},
                             "head dimension of V, O, dO and dV; 0: dim, or 128 for dim 192 (DeepSeek's MLA prefill "
                             "as MHA)"),
           ParamSpec::boolean("causal", false, "query row r sees keys c <= r + seq_k - seq_q (bottom-right aligned)"),
           ParamSpec::boolean("varlen", false,
                              "packed sequences of their own lengths (cu_seqlens): the last has seq_q/seq_k, the others "
                              "fewer; not causal, the second has no key"),
           ParamSpec::enumeration("dtype", "bf16", {"bf16", "f16"}, "type of Q, K, V, O, dO and the gradients (LSE f32)")}};
}

Status refuse(std::string why) { return make_error(ErrorCode::unsupported, std::move(why)); }

double dbl(std::int64_t v) { return static_cast<double>(v); }

// The problem's sizes and each sequence's offsets (dense: sequence b at b * seq).
struct BwdDims {
  std::int64_t batch, seq_q, seq_k, heads, heads_kv, dim_qk, dim_v;
  bool causal, varlen;
  std::vector<std::int32_t> cu_q, cu_k;

  explicit BwdDims(const Values& p)
      : batch(p.integer("batch")), seq_q(p.integer("seq_q")), seq_k(p.integer("seq_k")), heads(p.integer("heads")),
        heads_kv(p.integer("heads_kv")), dim_qk(p.integer("dim")),
        dim_v(p.integer("dim_v") > 0 ? p.integer("dim_v") : p.integer("dim") == 192 ? 128 : p.integer("dim")),
        causal(p.boolean("causal")), varlen(p.boolean("varlen")) {
    cu_q = {0};
    cu_k = {0};
    for (std::int64_t b = 0; b < batch; ++b) {
      std::int64_t lq = seq_q, lk = seq_k;
      if (varlen && b + 1 < batch) {
        // Between half and all of the longest, from a hash of the index: the same lengths on every machine.
        lq = seq_q / 2 + static_cast<std::int64_t>(num::hash64(0xB3D1, static_cast<std::uint64_t>(b)) %
                                                   static_cast<std::uint64_t>(seq_q - seq_q / 2 + 1));
        lk = seq_k / 2 + static_cast<std::int64_t>(num::hash64(0xB3D2, static_cast<std::uint64_t>(b)) %
                                                   static_cast<std::uint64_t>(seq_k - seq_k / 2 + 1));
        if (causal) lq = std::min(lq, lk);  // every row keeps a key under the bottom-right mask
        if (!causal && b == 1) lk = 0;      // a sequence without keys: its dQ is zero
        lq = std::max<std::int64_t>(lq, 1);
      }
      cu_q.push_back(static_cast<std::int32_t>(cu_q.back() + lq));
      cu_k.push_back(static_cast<std::int32_t>(cu_k.back() + lk));
    }
  }
  std::int64_t total_q() const { return cu_q.back(); }
  std::int64_t total_k() const { return cu_k.back(); }
  std::int64_t q0(std::int64_t b) const { return cu_q[static_cast<std::size_t>(b)]; }
  std::int64_t k0(std::int64_t b) const { return cu_k[static_cast<std::size_t>(b)]; }
  std::int64_t len_q(std::int64_t b) const { return q0(b + 1) - q0(b); }
  std::int64_t len_k(std::int64_t b) const { return k0(b + 1) - k0(b); }
  std::int64_t group() const { return heads / heads_kv; }
  // Whether query row s of sequence b sees key j.
  bool sees(std::int64_t b, std::int64_t s, std::int64_t j) const {
    return !causal || j <= s + len_k(b) - len_q(b);
  }
  // The sequence holding packed row `token` of the offsets `cu`.
  static std::int64_t sequence_of(const std::vector<std::int32_t>& cu, std::int64_t token) {
    return static_cast<std::int64_t>(std::upper_bound(cu.begin(), cu.end(), token) - cu.begin()) - 1;
  }
  // The forward's LSE is a constant: ln(seq_k) + sigma^2 / 2 makes the P of a long row sum to about 1 for scores of
  // standard deviation sigma = 4/3 (Q, K uniform in [-2, 2]), at least 6 sigma so P stays in (0, 1] for short rows.
  double lse_value() const { return std::max(std::log(dbl(seq_k)) + 8.0 / 9.0, 8.0); }
};

// AttnBwdMmaConfig from the validated problem and config.
AttnBwdMmaConfig bwd_config(const Values& p, const Values& c) {
  const BwdDims x(p);
  AttnBwdMmaConfig k;
  k.dim_qk = static_cast<int>(x.dim_qk);
  k.dim_v = static_cast<int>(x.dim_v);
  k.causal = p.boolean("causal");
  k.bf16 = p.dtype() == DType::bf16;
  k.varlen = p.boolean("varlen");
  k.block_M = static_cast<int>(c.integer("block_M"));
  k.block_N = static_cast<int>(c.integer("block_N"));
  k.warps = static_cast<int>(c.integer("warps"));
  k.num_stages = static_cast<int>(c.integer("num_stages"));
  k.deterministic = c.boolean("deterministic");
  return k;
}

// Query tiles of block_M rows in the longest sequence.
std::int64_t m_blocks(const Values& p, std::int64_t block_M) { return (p.integer("seq_q") + block_M - 1) / block_M; }

// [SECTION] the float64 reference

// Gradients of one sampled row, from exactly the given inputs: P = exp(scale q·k - LSE), dP = dO·v, D = dO·O,
// dS = P (dP - D); dQ_s = scale sum_j dS_sj k_j, dK_j = scale sum_(h,s) dS_sj q_s, dV_j = sum_(h,s) P_sj dO_s.
class BwdReference {
 public:
  BwdReference(const Values& p, const ReferenceInputs& in)
      : m_x(p), m_q(in.tensor("Q")), m_k(in.tensor("K")), m_v(in.tensor("V")), m_o(in.tensor("O")),
        m_do(in.tensor("dO")), m_lse(in.tensor("LSE")), m_scale(1.0 / std::sqrt(dbl(m_x.dim_qk))) {}

  // dQ of packed query row `token`, head h.
  std::vector<double> dq_row(std::int64_t token, std::int64_t h) {
    const std::int64_t b = BwdDims::sequence_of(m_x.cu_q, token), s = token - m_x.q0(b), hk = h / m_x.group();
    std::vector<double> out(static_cast<std::size_t>(m_x.dim_qk), 0.0);
    for (std::int64_t j = 0; j < m_x.len_k(b); ++j) {
      if (!m_x.sees(b, s, j)) continue;
      const double ds = score_grad(b, token, h, m_x.k0(b) + j, hk).second;
      add(out, m_scale * ds, m_k, key_row(m_x.k0(b) + j, hk, m_x.dim_qk));
    }
    return out;
  }

  // dK (want_dk) or dV of packed key row `token`, kv head hk: summed over the group's query heads and the rows that
  // see the key.
  std::vector<double> dkv_row(std::int64_t token, std::int64_t hk, bool want_dk) {
    const std::int64_t b = BwdDims::sequence_of(m_x.cu_k, token), j = token - m_x.k0(b);
    std::vector<double> out(static_cast<std::size_t>(want_dk ? m_x.dim_qk : m_x.dim_v), 0.0);
    for (std::int64_t h = hk * m_x.group(); h < (hk + 1) * m_x.group(); ++h)
      for (std::int64_t s = 0; s < m_x.len_q(b); ++s) {
        if (!m_x.sees(b, s, j)) continue;
        const std::int64_t qt = m_x.q0(b) + s;
        const auto [p, ds] = score_grad(b, qt, h, token, hk);
        if (want_dk) add(out, m_scale * ds, m_q, query_row(qt, h, m_x.dim_qk));
        else add(out, p, m_do, query_row(qt, h, m_x.dim_v));
      }
    return out;
  }

 private:
  std::int64_t query_row(std::int64_t token, std::int64_t h, std::int64_t dim) const { return (token * m_x.heads + h) * dim; }
  std::int64_t key_row(std::int64_t token, std::int64_t hk, std::int64_t dim) const { return (token * m_x.heads_kv + hk) * dim; }

  static double dot(const HostTensor& a, std::int64_t ia, const HostTensor& b, std::int64_t ib, std::int64_t n) {
    double s = 0;
    for (std::int64_t c = 0; c < n; ++c) s += a.at(ia + c) * b.at(ib + c);
    return s;
  }
  static void add(std::vector<double>& out, double w, const HostTensor& t, std::int64_t i0) {
    for (std::size_t c = 0; c < out.size(); ++c) out[c] += w * t.at(i0 + static_cast<std::int64_t>(c));
  }

  // (P, dS) of query row qt (head h, sequence b) and key row kt (kv head hk).
  std::pair<double, double> score_grad(std::int64_t b, std::int64_t qt, std::int64_t h, std::int64_t kt, std::int64_t hk) {
    const std::int64_t lse_at = m_x.varlen ? h * m_x.total_q() + qt : (b * m_x.heads + h) * m_x.seq_q + (qt - m_x.q0(b));
    const double p = std::exp(m_scale * dot(m_q, query_row(qt, h, m_x.dim_qk), m_k, key_row(kt, hk, m_x.dim_qk), m_x.dim_qk) -
                              m_lse.at(lse_at));
    const double dp = dot(m_do, query_row(qt, h, m_x.dim_v), m_v, key_row(kt, hk, m_x.dim_v), m_x.dim_v);
    return {p, p * (dp - row_dot(qt, h))};
  }

  // D = dO·O of a query row, computed once.
  double row_dot(std::int64_t qt, std::int64_t h) {
    const std::int64_t key = qt * m_x.heads + h;
    auto it = m_d.find(key);
    if (it == m_d.end())
      it = m_d.emplace(key, dot(m_do, query_row(qt, h, m_x.dim_v), m_o, query_row(qt, h, m_x.dim_v), m_x.dim_v)).first;
    return it->second;
  }

  BwdDims m_x;
  const HostTensor &m_q, &m_k, &m_v, &m_o, &m_do, &m_lse;
  double m_scale;
  std::map<std::int64_t, double> m_d;
};

Result<std::vector<double>> bwd_reference(const Values& p, const ReferenceInputs& in, const std::string& output,
                                          const std::vector<std::int64_t>& idx) {
  if (output != "dQ" && output != "dK" && output != "dV")
    return make_error(ErrorCode::invalid_argument, "attention backward has outputs dQ, dK and dV, not " + output);
  BwdReference ref(p, in);
  const BwdDims x(p);
  const std::int64_t dim = output == "dV" ? x.dim_v : x.dim_qk;
  const std::int64_t heads = output == "dQ" ? x.heads : x.heads_kv;
  std::map<std::int64_t, std::vector<double>> rows;  // by (token, head): sampled positions come in whole rows
  std::vector<double> out;
  out.reserve(idx.size());
  for (std::int64_t i : idx) {
    const std::int64_t row = i / dim;
    auto it = rows.find(row);
    if (it == rows.end()) {
      const std::int64_t token = row / heads, h = row % heads;
      it = rows.emplace(row, output == "dQ" ? ref.dq_row(token, h) : ref.dkv_row(token, h, output == "dK")).first;
    }
    out.push_back(it->second[static_cast<std::size_t>(i % dim)]);
  }
  return out;
}

// [SECTION] the spec

Status check_bwd_problem(const Values& p) {
  if (p.integer("heads") % p.integer("heads_kv") != 0)
    return refuse("heads_kv=" + p.text("heads_kv") + " does not divide heads=" + p.text("heads") +
                  ": each kv head serves heads/heads_kv query heads; pick a divisor");
  if (p.boolean("causal") && p.integer("seq_q") > p.integer("seq_k"))
    return refuse("causal with seq_q=" + p.text("seq_q") + " > seq_k=" + p.text("seq_k") +
                  ": under the bottom-right mask the first seq_q - seq_k rows see no key; use seq_q <= seq_k");
  return Status::success();
}

Status check_bwd(const Values& p, const Values& c, const DeviceLimits& limits) {
  TL_RETURN_IF_ERROR(check_bwd_problem(p));
  const AttnBwdMmaConfig k = bwd_config(p, c);
  const AttnBwdMmaPlan plan = make_plan(k);
  const std::string w = "warps=" + c.text("warps");
  const std::string dims = "dim=" + p.text("dim") + (k.dim_v != k.dim_qk ? ", dim_v=" + std::to_string(k.dim_v) : "");
  if (!plan.s.acc.ok() || !plan.dq.acc.ok())
    return refuse("block_M=" + c.text("block_M") + " over " + w +
                  ": the query rows split into warp tiles of 32 rows, so block_M/32 must divide warps and leave each "
                  "warp a multiple of 16 columns; use more warps or a smaller block_M");
  if (!plan.dk.acc.ok() || !plan.dv.acc.ok())
    return refuse("block_N=" + c.text("block_N") + " over " + w +
                  ": dK and dV split into warp tiles of 32 keys, so block_N/32 must divide warps; use more warps");
  // Per thread, fp32: dK and dV for the whole walk, and S (then dP) of a tile beside them. Measured (ptxas, sm_80 and
  // sm_90a): 96 fit in 255 registers (64 + 32 at dim 64, block_N 128 and 64 + 16 at dim 128, block_N 64), 128 spill
  // (dim 64 with 128 x 128 tiles: 12 bytes), 160 spill 212 bytes (dim 128, block_N 128).
  const int acc = (k.block_N * (k.dim_qk + k.dim_v) + k.block_M * k.block_N) / plan.threads;
  if (acc > 96)
    return refuse("block_M=" + c.text("block_M") + ", block_N=" + c.text("block_N") + " and " + dims + " over " + w +
                  " hold " + std::to_string(acc) +
                  " fp32 accumulators per thread (dK and dV, and S or dP); past 96 the rest does not fit in 255 "
                  "registers and spills: lower block_N or block_M, or use more warps");
  if (!plan.ok())
    return refuse("block_M=" + c.text("block_M") + " and block_N=" + c.text("block_N") + " do not divide among " + w +
                  " for the tile copies");
  if (plan.smem_bytes > static_cast<unsigned>(limits.smem_per_block_optin))
    return refuse("K, V, " + c.text("num_stages") + " stage(s) of Q and dO, O, P and dS need " +
                  std::to_string(plan.smem_bytes) + " bytes of shared memory, over " + limits.arch + "'s " +
                  std::to_string(limits.smem_per_block_optin) + " per block: use num_stages=1, or a smaller block_N or block_M");
  return Status::success();
}

// dq_tiles: dq_accum as f32 tiles of block_M x dim (attn.bwd.wgmma's staging order), else rows shaped as dQ.
std::vector<ArgSpec> bwd_args(const Values& p, std::int64_t block_M, bool dq_tiles) {
  const BwdDims x(p);
  const DType t = p.dtype();
  using Shape = std::vector<std::int64_t>;
  auto rows_q = [&](std::int64_t dim) { return x.varlen ? Shape{x.total_q(), x.heads, dim} : Shape{x.batch, x.seq_q, x.heads, dim}; };
  auto rows_k = [&](std::int64_t dim) {
    return x.varlen ? Shape{x.total_k(), x.heads_kv, dim} : Shape{x.batch, x.seq_k, x.heads_kv, dim};
  };
  const Shape lse = x.varlen ? Shape{x.heads, x.total_q()} : Shape{x.batch, x.heads, x.seq_q};
  const Shape dq_accum =
      dq_tiles ? Shape{x.batch * x.heads * m_blocks(p, block_M), block_M * x.dim_qk} : rows_q(x.dim_qk);
  return {ArgSpec::tensor("Q", t, rows_q(x.dim_qk), ArgRole::in, {.lo = -2, .hi = 2, .seed = 1}),
          ArgSpec::tensor("K", t, rows_k(x.dim_qk), ArgRole::in, {.lo = -2, .hi = 2, .seed = 2}),
          ArgSpec::tensor("V", t, rows_k(x.dim_v), ArgRole::in, {.lo = -1, .hi = 1, .seed = 3}),
          // O is a softmax-weighted mean of V rows: in V's range.
          ArgSpec::tensor("O", t, rows_q(x.dim_v), ArgRole::in, {.lo = -1, .hi = 1, .seed = 4}),
          ArgSpec::tensor("dO", t, rows_q(x.dim_v), ArgRole::in, {.lo = -1, .hi = 1, .seed = 5}),
          ArgSpec::tensor("LSE", DType::f32, lse, ArgRole::in, {.kind = Fill::Kind::constant, .value = x.lse_value()}),
          ArgSpec::tensor("dQ", t, rows_q(x.dim_qk), ArgRole::out),
          ArgSpec::tensor("dK", t, rows_k(x.dim_qk), ArgRole::out),
          ArgSpec::tensor("dV", t, rows_k(x.dim_v), ArgRole::out),
          ArgSpec::tensor("dq_accum", DType::f32, dq_accum, ArgRole::scratch),
          ArgSpec::tensor("dq_counters", DType::i32, {x.batch * x.heads * m_blocks(p, block_M)}, ArgRole::scratch),
          ArgSpec::i32_data("cu_seqlens_q", x.cu_q),
          ArgSpec::i32_data("cu_seqlens_k", x.cu_k),
          ArgSpec::scalar("heads", DType::i32, dbl(x.heads)),
          ArgSpec::scalar("heads_kv", DType::i32, dbl(x.heads_kv)),
          ArgSpec::scalar("m_blocks", DType::i32, dbl(m_blocks(p, block_M))),
          ArgSpec::scalar("scale", DType::f32, 1.0 / std::sqrt(dbl(x.dim_qk)))};
}

// Lengths that are no multiple of any block, GQA 1, 4 and 8, both dims, causal with seq_q < seq_k (the bottom-right
// alignment) and seq_q = seq_k, varlen causal and not.
std::vector<std::map<std::string, std::string>> bwd_test_problems(bool full) {
  using KV = std::map<std::string, std::string>;
  std::vector<KV> s = {
      {{"batch", "2"}, {"seq_q", "190"}, {"seq_k", "301"}, {"heads", "4"}, {"heads_kv", "4"}, {"dim", "128"}},
      {{"batch", "2"}, {"seq_q", "257"}, {"seq_k", "257"}, {"heads", "8"}, {"heads_kv", "2"}, {"dim", "128"}, {"causal", "true"}},
      {{"batch", "1"}, {"seq_q", "83"}, {"seq_k", "290"}, {"heads", "8"}, {"heads_kv", "1"}, {"dim", "64"}, {"causal", "true"}},
      {{"batch", "3"}, {"seq_q", "140"}, {"seq_k", "70"}, {"heads", "4"}, {"heads_kv", "4"}, {"dim", "64"}},
      {{"batch", "5"}, {"seq_q", "300"}, {"seq_k", "420"}, {"heads", "4"}, {"heads_kv", "2"}, {"dim", "128"}, {"varlen", "true"}},
      {{"batch", "4"}, {"seq_q", "333"}, {"seq_k", "333"}, {"heads", "2"}, {"heads_kv", "1"}, {"dim", "64"}, {"causal", "true"}, {"varlen", "true"}},
  };
  if (full)
    s.insert(s.end(), {
        {{"batch", "1"}, {"seq_q", "1"}, {"seq_k", "1"}, {"heads", "1"}, {"heads_kv", "1"}, {"dim", "64"}, {"causal", "true"}},
        {{"batch", "1"}, {"seq_q", "3"}, {"seq_k", "900"}, {"heads", "4"}, {"heads_kv", "4"}, {"dim", "128"}, {"causal", "true"}},
        {{"batch", "2"}, {"seq_q", "1024"}, {"seq_k", "1024"}, {"heads", "4"}, {"heads_kv", "1"}, {"dim", "128"}, {"causal", "true"}},
        {{"batch", "2"}, {"seq_q", "700"}, {"seq_k", "1100"}, {"heads", "8"}, {"heads_kv", "2"}, {"dim", "64"}},
        // One key block completes every query tile of its walk (66): more than attn.bwd.wgmma defers (dq_defer).
        {{"batch", "1"}, {"seq_q", "2100"}, {"seq_k", "100"}, {"heads", "4"}, {"heads_kv", "2"}, {"dim", "128"}},
        {{"batch", "2"}, {"seq_q", "300"}, {"seq_k", "377"}, {"heads", "8"}, {"heads_kv", "8"}, {"dim", "192"},
         {"dim_v", "128"}, {"causal", "true"}},
    });
  return s;
}

// What both backward kernels share: the problem, FLOPs and bytes, the float64 reference and its sampling, the test
// problems and cuDNN's backward as the baseline.
KernelSpec bwd_base() {
  KernelSpec k;
  k.family = "attention";
  k.tensor_cores = true;
  k.problem = bwd_problem();
  // 2.5 times the forward's 2 GEMMs (issue 20's convention, as FlashAttention's benchmarks count the backward);
  // causal counts half.
  k.flops = [](const Values& p) {
    const BwdDims x(p);
    double pairs = 0;
    for (std::int64_t b = 0; b < x.batch; ++b) pairs += dbl(x.len_q(b)) * dbl(x.len_k(b));
    return 2.5 * 2.0 * dbl(x.heads) * pairs * dbl(x.dim_qk + x.dim_v) * (x.causal ? 0.5 : 1.0);
  };
  // Q, O, dO read and dQ written per query row and head; K, V read and dK, dV written per key row and kv head; LSE.
  k.min_bytes = [](const Values& p) {
    const BwdDims x(p);
    const double e = static_cast<double>(dtype_size(p.dtype()));
    return e * (dbl(x.total_q()) * dbl(x.heads) * dbl(2 * x.dim_qk + 2 * x.dim_v) +
                dbl(x.total_k()) * dbl(x.heads_kv) * dbl(2 * x.dim_qk + 2 * x.dim_v)) +
           4.0 * dbl(x.heads) * dbl(x.total_q()) + 8.0 * dbl(x.batch + 1);
  };
  k.reference = bwd_reference;
  // P and dS are rounded to 16 bits before the GEMMs that take them (as FlashAttention does), about 0.1% (bf16) rms
  // each; dQ is summed in f32 and rounded once; the gradients come out rounded to 16 bits. Their magnitudes shrink
  // with the lengths, so only the relative error is checked.
  k.tolerance = [](const Values&, DType t) {
    return t == DType::bf16 ? Tolerance{1e-2, 0} : Tolerance{5e-3, 0};
  };
  // A sampled dQ row costs the reference seq_k scores and a dK/dV row seq_q x group of them: whole rows, 128 each.
  k.sampling = [](const Values& p, const std::string& output) {
    const BwdDims x(p);
    const auto dim = static_cast<std::uint64_t>(output == "dV" ? x.dim_v : x.dim_qk);
    return OutputSampling{dim, 128 * dim};
  };
  k.test_problems = bwd_test_problems;
  // cuDNN's SDPA backward on the same Q, K, V, O, dO and LSE (`--vs cudnn`), its dQ compared with ours.
  k.baseline = [](const Values& p, const Values&) -> std::optional<BaselineSpec> {
    const BwdDims x(p);
    BaselineSpec b;
    b.kind = "cudnn_sdpa";
    b.in = b.out = p.dtype();
    b.sdpa = SdpaBaseline{.batch = x.batch, .heads = x.heads, .heads_kv = x.heads_kv, .seq_q = x.seq_q,
                          .seq_k = x.seq_k, .dim = x.dim_qk, .dim_v = x.dim_v, .causal = x.causal,
                          .backward = true, .scale = 1.0 / std::sqrt(dbl(x.dim_qk))};
    for (std::size_t i = 0; x.varlen && i + 1 < x.cu_q.size(); ++i) {  // packed sequences, one after another
      b.sdpa.start_q.push_back(x.cu_q[i]);
      b.sdpa.len_q.push_back(x.cu_q[i + 1] - x.cu_q[i]);
      b.sdpa.start_k.push_back(x.cu_k[i]);
      b.sdpa.len_k.push_back(x.cu_k[i + 1] - x.cu_k[i]);
    }
    return b;
  };
  return k;
}

KernelSpec attn_bwd_mma_spec() {
  KernelSpec k = bwd_base();
  k.name = "attn.bwd.mma";
  k.summary = "FlashAttention-2-style backward: per key block dK, dV in registers over the query tiles, cp.async, "
              "ldmatrix, mma.sync; dQ through an f32 accumulator that the last key block converts (dQ, dK, dV)";
  k.source = "attention/attn_bwd_mma.cuh";
  k.config = {{ParamSpec::one_of("block_M", 64, {64, 128}, "query rows per tile (the inner loop's step)"),
               ParamSpec::one_of("block_N", 64, {64, 128}, "keys per CTA (its dK and dV rows)"),
               ParamSpec::one_of("warps", 8, {4, 8}, "warps; each GEMM splits into warp tiles of 32 rows"),
               ParamSpec::integer("num_stages", 2, 1, 2,
                                  "Q and dO buffers: 2 loads the next query tile while this one computes"),
               ParamSpec::boolean("deterministic", false,
                                  "dQ summed in key-block order (each key block waits for the one before it on every "
                                  "query tile); false: atomics in any order")}};
  k.can_implement = check_bwd;
  k.name_expression = [](const Values& p, const Values& c) { return name_expression(bwd_config(p, c)); };
  k.launch = [](const Values& p, const Values& c, const DeviceLimits&) {
    LaunchGeometry g;
    g.grid.x = static_cast<std::uint32_t>((p.integer("seq_k") + c.integer("block_N") - 1) / c.integer("block_N"));
    g.grid.y = static_cast<std::uint32_t>(p.integer("heads_kv"));
    g.grid.z = static_cast<std::uint32_t>(p.integer("batch"));
    g.block.x = static_cast<std::uint32_t>(32 * c.integer("warps"));
    g.dynamic_smem = make_plan(bwd_config(p, c)).smem_bytes;
    return g;
  };
  k.args = [](const Values& p, const Values& c, const DeviceLimits&) { return bwd_args(p, c.integer("block_M"), false); };
  k.test_configs = [] {
    using KV = std::map<std::string, std::string>;
    return std::vector<KV>{{{"deterministic", "true"}, {"num_stages", "1"}},
                           {{"block_M", "128"}, {"block_N", "64"}, {"deterministic", "true"}},
                           {{"block_N", "128"}, {"num_stages", "1"}}};
  };
  k.probes = attn_bwd_mma_probes();
  // Per warp and query tile: 9 regions (begin + end each) and two load issues; the epilogue; the prologue's load.
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits&) {
    const auto tiles = m_blocks(p, c.integer("block_M")) * (p.integer("heads") / p.integer("heads_kv"));
    return static_cast<std::uint32_t>(24 * tiles + 64);
  };
  k.layouts = [](const Values& p, const Values& c) {
    const AttnBwdMmaPlan plan = make_plan(bwd_config(p, c));
    const std::string ty = p.text("dtype");
    std::vector<LayoutInfo> out = {{"smem_Q", memory_spec(plan.q, ty)},     {"smem_K", memory_spec(plan.k, ty)},
                                   {"smem_V", memory_spec(plan.v, ty)},     {"smem_dO (and O)", memory_spec(plan.dout, ty)},
                                   {"smem_P (and dS)", memory_spec(plan.p, ty)}};
    auto atom = [&](const std::string& name, const Fragment& f, const std::string& atom_name) {
      if (auto s = fragment_spec(f, atom_name)) out.push_back({name, *s});
    };
    atom("mma_A (Q, dO, dS; P^T, dS^T)", plan.mma_a, "mma.m16n8k16." + ty + ".A");
    atom("mma_B (K, V; dO, Q, K)", plan.mma_b, "mma.m16n8k16." + ty + ".B");
    atom("mma_C (S, dP, dV, dK, dQ)", plan.mma_c, "mma.m16n8k16.f32.C");
    atom("ldmatrix rows", plan.ldm_rows, "ldmatrix.x4.rows");
    return out;
  };
  return k;
}

// [SECTION] attn.bwd.wgmma

// dq_alt=auto: the warpgroups' turns at dQ where every query head has its own kv head (H100, docs/perf.md: 1.01-1.05x
// the lockstep dQ at issue 20's four anchors), and at GQA dim 128 causal where dq_lag goes with them (1.10-1.19x by
// medians, 1.13-1.18x by minima at b 8, h 32 / kv 8, 4k in both rounds; the turns alone 1.04-1.07x, dq_lag with the
// lockstep dQ 1.03-1.07x; before dq_lag the turns were 0.98-1.00x there), and the second dS tile fits beside the
// stages (not with 3 at dim 128); GQA elsewhere not timed.
// uniform_desc=auto: on with the warpgroups' turns at dQ (H100, docs/perf.md: 1.008-1.036x the per-thread descriptors
// at issue 20's four anchors, both alternated rounds), but not at dim 64 causal (its consumers then spill 144 bytes,
// none without); off with the lockstep dQ (GQA: spill-free, but not timed).
// ds_stsm=auto: dS by stmatrix where it won in every alternated round by medians and minima (H100, docs/perf.md:
// 1.049-1.055x at b 16, h 16, 2k, d 64; 1.016-1.029x at b 8, h 16, 4k, d 128 causal), with dq_alt at dim 64 (not
// causal: not timed) and dim 128 causal; at dim 128 without the mask alone 0.98-1.01x at 4k, a loss by the minima in
// one of five rounds at 16k (on there with rows_v4 and p_mask split, below); off with the lockstep dQ (GQA
// causal 0.98-1.00x).
// p_mask=auto: the mask only in the tiles it can cut (split) with dq_alt at dim 128 causal (H100, docs/perf.md:
// 1.007-1.015x alone, 1.043-1.053x with dkv_stage at b 8, h 16, 4k causal); branch with the lockstep dQ (GQA causal
// 0.971-0.979x) and at dim 64 causal (its build spills 4 bytes; not timed).
// dkv_stage=auto: dK, dV through shared memory where a CTA's walk (the group's heads x query tiles) is at most 64 query
// tiles, so its epilogue is a share of its time to show (H100, docs/perf.md: 1.026-1.035x at 4k causal (walks up to
// 64), 1.007-1.012x at 4k (64), 1.013-1.029x at d 64 2k (16)); off at GQA causal (4 x 64: 1.004-1.009x in two rounds,
// 0.997-0.999x by medians in two); on at dim 128 without the mask with the turns on any walk (below).
// ds_stsm and rows_v4 there too at dim 128 without the mask (4k: beside dkv_stage 1.005-1.018x in both rounds, alone
// 1.005-1.008x).
// At dim 128 without the mask with the turns, p_mask split, ds_stsm, rows_v4 and dkv_stage on every walk, not only
// short ones (H100, docs/perf.md attnbwd16: b 2, h 16, 16k 1.033-1.044x the branch loop by medians, 1.015-1.053x by
// minima in all four pairs of two A B B A rounds, 1.02-1.03x cuDNN by medians; b 4, h 16, 8k 1.05-1.06x by medians;
// without dkv_stage 1.001-1.016x less; under ncu the branch loop ran 472 SASS a consumer warp and tile against 368,
// its exponentials 41% more stall samples a tile). Earlier single rounds at 16k were mixed (0.951 / 1.041x).
// kv_blocks=auto: two key blocks a CTA with dq_alt at dim 64 without the mask where a walk is at most 32 query tiles
// (H100, docs/perf.md: 1.029-1.059x at b 16, h 16, 2k, d 64 (walks of 16) in four rounds, 1.061-1.076x at b 8, h 16,
// 4k, d 64 (32) in two, medians and minima); one elsewhere: 4k d 128 (walks of 64) 0.994-1.027x by medians in four
// rounds, 16k 0.96-0.99x, 4k causal 0.87-0.88x (its writer spills 40 bytes), longer walks at dim 64 not timed.
// dq_lag=auto: the writer's count one tile behind with dq_alt wherever the list holds a CTA's walk (H100, docs/perf.md:
// 1.013-1.072x by medians, 1.020-1.071x by minima at issue 20's four anchors in both alternated rounds; under ncu the
// writer had been busy ~95% of its time, the turns' staging waiting for it; GQA causal with the turns, above); off with
// the lockstep dQ (GQA causal 1.03-1.07x, but the turns with it more).
// dq_release=auto: off (the release-ordered count, H100, docs/perf.md: 1.009-1.025x at 4k causal in both rounds, mixed
// at 4k and 16k (0.95-1.03x by medians), even at d 64, 0.98-1.00x at GQA causal with the turns).
// wait_sleep=auto: false (the waits with try_wait's suspend-time hint, H100, docs/perf.md: side and all at 16k and 4k d
// 128 0.99-1.01x by medians in both A B B A rounds, no fewer joules a run (0-3% more), 4k causal 0.97-1.00x; all at d
// 64 1.03-1.05x by medians in four benches of two calls but 1.00x by minima: the power cap's step later in the bench).
// p_mask=auto also split at dim 128 without the mask beside dq_lag (4k: 1.020-1.080x by medians, 1.027-1.056x by minima
// over dq_lag alone in both rounds; alone mixed at 4k: 0.98-1.04x; 16k and 8k above).
AttnBwdWgmmaConfig wgmma_config(const Values& p, const Values& c) {
  const int dim = static_cast<int>(p.integer("dim"));
  const std::string alt = c.text("dq_alt");
  AttnBwdWgmmaConfig r{.dim = dim,
                       .block_M = attn_bwd_wgmma_block_m(dim),
                       .block_N = 128,
                       .num_stages = static_cast<int>(c.integer("num_stages")),
                       .causal = p.boolean("causal"),
                       .bf16 = p.dtype() == DType::bf16,
                       .varlen = p.boolean("varlen"),
                       .dq_defer = c.boolean("dq_defer"),
                       .defer_tiles = static_cast<int>(c.integer("defer_tiles")),
                       .section = static_cast<int>(c.integer("section")),
                       .d_pass = c.boolean("d_pass"),
                       .dq_alt = alt == "true",
                       .uniform_desc = c.text("uniform_desc") == "true",
                       .ds_stsm = c.text("ds_stsm") == "true",
                       .rows_v4 = c.text("rows_v4") == "true",
                       .p_mask = c.text("p_mask") == "split" ? kAttnBwdPMaskSplit : kAttnBwdPMaskBranch,
                       .dkv_stage = c.text("dkv_stage") == "true",
                       .kv_blocks = c.text("kv_blocks") == "auto" ? 1 : std::stoi(c.text("kv_blocks")),
                       .dq_lag = c.text("dq_lag") == "true",
                       .dq_release = c.text("dq_release") == "true",
                       .wait_sleep = c.text("wait_sleep") == "all" ? 2 : c.text("wait_sleep") == "side" ? 1 : 0};
  // A CTA's longest walk in query tiles (every head of its GQA group): up to 64, the per-CTA epilogue counts.
  const std::int64_t walk =
      p.integer("heads") / p.integer("heads_kv") * ((p.integer("seq_q") + r.block_M - 1) / r.block_M);
  const bool short_walk = walk <= 64;
  // GQA at dim 128 causal: the turns with dq_lag (where the list holds the walk, as dq_lag's auto below).
  const bool gqa_turns = dim == 128 && r.causal && r.dq_defer && c.text("dq_lag") != "false" &&
                         (c.text("kv_blocks") == "auto" ? 1 : r.kv_blocks) * walk <= r.defer_tiles;
  if (alt == "auto" && (p.integer("heads") == p.integer("heads_kv") || gqa_turns)) {
    AttnBwdWgmmaConfig x = r;
    x.dq_alt = true;
    r.dq_alt = make_plan(x).bytes <= limits_for_arch("sm_90a").smem_per_block_optin;
  }
  if (c.text("uniform_desc") == "auto") r.uniform_desc = r.dq_alt && !(dim == 64 && r.causal);
  // At dim 128 without the mask with the turns, the short walks' per-tile code on every walk (p_mask, ds_stsm,
  // rows_v4, dkv_stage: 16k and 8k, docs/perf.md attnbwd16).
  const bool plain128 = r.dq_alt && dim == 128 && !r.causal;
  if (c.text("ds_stsm") == "auto") r.ds_stsm = r.dq_alt && (dim == 128 || !r.causal);
  if (c.text("rows_v4") == "auto") r.rows_v4 = plain128;
  if (c.text("kv_blocks") == "auto") r.kv_blocks = r.dq_alt && dim == 64 && !r.causal && walk <= 32 ? 2 : 1;
  // Every tile a CTA's walk can complete (its key blocks x the group's query heads x the query tiles): dq_lag needs
  // dq_defer's list to hold them.
  const std::int64_t walk_tiles = r.kv_blocks * walk;
  if (c.text("dq_lag") == "auto") r.dq_lag = r.dq_alt && r.dq_defer && walk_tiles <= r.defer_tiles;
  if (c.text("p_mask") == "auto")
    r.p_mask = r.dq_alt && dim == 128 && (r.causal || r.dq_lag) ? kAttnBwdPMaskSplit : kAttnBwdPMaskBranch;
  if (c.text("dkv_stage") == "auto") r.dkv_stage = short_walk || plain128;
  return r;
}

// attn.bwd.wgmma's `section` default: causal work order in groups of 8 (sequence, kv head) pairs.
constexpr int kSectionDefault = 8;

Status check_wgmma(const Values& p, const Values& c, const DeviceLimits& limits) {
  TL_RETURN_IF_ERROR(check_bwd_problem(p));
  // section orders the causal walk only; set (not its default, not 0) without the mask it was dropped without a word.
  if (!p.boolean("causal") && c.integer("section") != 0 && c.integer("section") != kSectionDefault)
    return refuse("section=" + c.text("section") + " orders causal key blocks (the longest walks first across groups of "
                  "that many (sequence, kv head) pairs); this problem is not causal (causal=false): every key block "
                  "walks every query tile, in grid order: leave section at " + std::to_string(kSectionDefault) +
                  " (its default) or 0, or set causal=true");
  const BwdDims x(p);
  if ((x.dim_qk != 64 && x.dim_qk != 128) || x.dim_v != x.dim_qk)
    return refuse("dim=" + p.text("dim") + (x.dim_v != x.dim_qk ? " with dim_v=" + std::to_string(x.dim_v) : "") +
                  ": attn.bwd.wgmma has head dims 64 and 128 with dim_v = dim; use attn.bwd.mma for dim 192 / dim_v 128");
  const AttnBwdWgmmaConfig w = wgmma_config(p, c);
  const AttnBwdWgmmaPlan plan = make_plan(w);
  // dq_lag: every tile a CTA's walk can complete (its key blocks x the group's query heads x the query tiles) must fit
  // dq_defer's list (the writer then never converts one from the staging buffer).
  const std::int64_t walk_tiles = w.kv_blocks * (p.integer("heads") / p.integer("heads_kv")) * m_blocks(p, w.block_M);
  if (w.dq_lag && (!w.dq_defer || walk_tiles > w.defer_tiles))  // (only dq_lag=true: auto is off there)
    return refuse("dq_lag needs dq_defer and a deferred list of every tile a CTA can complete (" +
                  std::to_string(walk_tiles) + " here, defer_tiles=" + std::to_string(w.defer_tiles) + ")");
  if (plan.bytes > limits.smem_per_block_optin)
    return refuse("K, V, " + c.text("num_stages") + " stage(s) of Q, dO" + (c.boolean("d_pass") ? "" : " and O") +
                  ", the dS tile and the dQ staging need " +
                  std::to_string(plan.bytes) + " bytes of shared memory, over " + limits.arch + "'s " +
                  std::to_string(limits.smem_per_block_optin) + " per block: lower num_stages" +
                  (c.boolean("dq_defer") ? " or defer_tiles (4 bytes a tile)" : "") +
                  (c.boolean("d_pass") ? "" : ", or set d_pass=true (no O in the stages)") +
                  (wgmma_config(p, c).dq_alt ? ", or set dq_alt=false (one dS tile)" : ""));
  return Status::success();
}

KernelSpec attn_bwd_wgmma_spec() {
  KernelSpec k = bwd_base();
  k.name = "attn.bwd.wgmma";
  k.summary = "FlashAttention-3-style backward: TMA Q/dO/O ring, producer warp, row warps (D once per tile) and two "
              "consumer warpgroups, wgmma with P^T and dS^T in registers, dK, dV accumulated over the walk; dQ parts "
              "bulk-reduced into an f32 accumulator by a writer warp (dQ, dK, dV)";
  k.source = "attention/attn_bwd_wgmma.cuh";
  k.min_cc = 90;
  k.archs = {"sm_90a"};
  k.config = {{ParamSpec::integer("num_stages", 2, 1, 3,
                                  "Q, dO and O buffers: the producer loads the next query tiles while this one "
                                  "computes (block_M is 64 at dim 128, 128 at dim 64; block_N 128)"),
               ParamSpec::boolean("dq_defer", true,
                                  "a key block's consumers convert the query tiles it completed to 16-bit dQ after "
                                  "their walk (false: its dQ writer converts each at once, the consumers waiting for "
                                  "the staging buffer meanwhile)"),
               ParamSpec::integer("defer_tiles", 2048, 1, 8192,
                                  "dq_defer's list: the completed query tiles a key block's consumers convert after "
                                  "their walk (4 bytes of shared memory each); the writer converts those past it"),
               ParamSpec::integer("section", kSectionDefault, 0, 64,
                                  "causal: CTAs take the key blocks with the longest walks first across groups of "
                                  "this many (sequence, kv head) pairs (0: in grid order, key block fastest); not causal: "
                                  "any other than 0 and the default 8 is refused"),
               ParamSpec::boolean("d_pass", true,
                                  "D = rowsum(dO * O) of every query row by a pre-pass (a launch of its own, timed with "
                                  "the kernel) instead of per tile in each key block: the stages hold no O (false: "
                                  "the row warps sum each stage's O and dO)"),
               ParamSpec::enumeration("dq_alt", "auto", {"auto", "true", "false"},
                                      "the consumer warpgroups take turns computing a query tile's whole dQ (cuDNN's "
                                      "schedule; the other warpgroup goes on to the next tile), dS double buffered; "
                                      "auto = where heads == heads_kv, or GQA at dim 128 causal with dq_lag, and the "
                                      "second dS tile fits (false: both compute half of each tile's dQ in lockstep)"),
               ParamSpec::enumeration("uniform_desc", "auto", {"auto", "true", "false"},
                                      "the consumers' wgmma descriptors from warp-uniform values (redux.sync), each "
                                      "k16 step's one uniform add (false: built per thread and moved to uniform "
                                      "registers before each wgmma); auto = with dq_alt, but not at dim 64 causal"),
               ParamSpec::enumeration("ds_stsm", "auto", {"auto", "true", "false"},
                                      "dS to shared memory by stmatrix (4 instructions a thread and tile at dim 128, "
                                      "8 at dim 64, instead of 16 / 32 32-bit stores; false: the 32-bit stores); "
                                      "auto = with dq_alt at dim 64 (not causal) and at dim 128"),
               ParamSpec::enumeration("rows_v4", "auto", {"auto", "true", "false"},
                                      "the row values (D, LSE) of a stage in an order that gives each consumer thread "
                                      "four queries' values in one 16-byte load (false: two 8-byte loads); auto = "
                                      "with dq_alt at dim 128 without the mask"),
               ParamSpec::enumeration("p_mask", "auto", {"auto", "branch", "split"},
                                      "P's mask (causal, keys past the sequence): split = tested per value only in "
                                      "the tiles it can cut, there without a branch (the masked values' exponent "
                                      "-inf), the others with no mask code; branch = P = 0 or the exponential per "
                                      "value in every tile (ptxas: a branch around each pair's ex2); auto = split "
                                      "with dq_alt at dim 128 causal, and without the mask beside dq_lag"),
               ParamSpec::enumeration("dkv_stage", "auto", {"auto", "true", "false"},
                                      "dK and dV written through shared memory (each consumer warpgroup's rows of V, "
                                      "free after its walk) as whole rows in 16-byte stores (false: 4-byte stores "
                                      "straight from the accumulators); auto = where a CTA's walk (the GQA group's "
                                      "heads x query tiles) is at most 64 query tiles, and with dq_alt at dim 128 "
                                      "without the mask"),
               ParamSpec::enumeration("kv_blocks", "auto", {"auto", "1", "2", "3", "4"},
                                      "key blocks a CTA takes in sequence (the grid 1 / kv_blocks as wide): the next "
                                      "block's first Q, dO loaded while the consumers finish this one, its K, V once "
                                      "they are free (with dq_alt before the dK, dV epilogue, staged in the dS "
                                      "buffers), no CTA launch between them; the completed dQ tiles of all of them "
                                      "converted after the last; auto = 2 with dq_alt at dim 64 without the mask "
                                      "where a walk is at most 32 query tiles, else 1"),
               ParamSpec::enumeration("dq_lag", "auto", {"auto", "true", "false"},
                                      "the dQ writer counts a tile (fences, the counter's atomic, the deferred list) "
                                      "one tile behind, while the next tile's bulk reduce reads the staging buffer, "
                                      "instead of between that reduce's completion and the next one's issue; needs "
                                      "dq_defer's list to hold every tile a CTA's walk can complete; auto = there "
                                      "with dq_alt"),
               ParamSpec::enumeration("dq_release", "auto", {"auto", "true", "false"},
                                      "the dQ writer publishes a tile's part by a release-ordered atomic add on its "
                                      "counter (atom.release.gpu, after the proxy fence) instead of __threadfence() "
                                      "(fence.sc.gpu) and a relaxed add; auto = false"),
               ParamSpec::enumeration("wait_sleep", "auto", {"auto", "false", "side", "all"},
                                      "mbarrier waits by try_wait with a suspend-time hint (the thread sleeps until "
                                      "the phase completes) instead of polling again after the hardware's own "
                                      "limit: side = the producer warpgroup's (loads, row warps, dQ writer), all = "
                                      "the consumers' too; auto = false")}};
  k.can_implement = check_wgmma;
  k.name_expression = [](const Values& p, const Values& c) { return name_expression(wgmma_config(p, c)); };
  k.launch = [](const Values& p, const Values& c, const DeviceLimits&) {
    const AttnBwdWgmmaConfig w = wgmma_config(p, c);
    LaunchGeometry g;
    const std::int64_t key_blocks = (p.integer("seq_k") + w.block_N - 1) / w.block_N;
    g.grid.x = static_cast<std::uint32_t>((key_blocks + w.kv_blocks - 1) / w.kv_blocks);
    g.grid.y = static_cast<std::uint32_t>(p.integer("heads_kv"));
    g.grid.z = static_cast<std::uint32_t>(p.integer("batch"));
    g.block.x = kAttnBwdWgmmaThreads;
    g.dynamic_smem = static_cast<std::uint32_t>(make_plan(w).bytes);
    return g;
  };
  // d_pass: the pre-pass, a block per SM spread over the sequences (grid z: the kernel's sequence).
  k.pre_launch = [](const Values& p, const Values& c, const DeviceLimits& limits) -> std::optional<LaunchGeometry> {
    if (!c.boolean("d_pass")) return std::nullopt;
    LaunchGeometry g;
    const std::int64_t batch = p.integer("batch");
    g.grid.x = static_cast<std::uint32_t>(std::max<std::int64_t>(1, (limits.sm_count + batch - 1) / batch));
    g.grid.z = static_cast<std::uint32_t>(batch);
    g.block.x = kAttnBwdWgmmaPrePassThreads;
    return g;
  };
  // Kernel signature: (O, dO, tma_Q, tma_K, tma_V, tma_O, tma_dO, LSE, dQ, dK, dV, dq_accum, dq_counters, d_rows,
  // cu_seqlens_q, cu_seqlens_k, heads, heads_kv, m_blocks, scale): Q, K, V only through their maps, 3-D (dim, heads,
  // rows) over the packed rows, one box = 64 columns (128 bytes) of one head x a tile's rows; O and dO also as
  // pointers (d_pass's pre-pass).
  k.args = [](const Values& p, const Values& c, const DeviceLimits&) {
    const AttnBwdWgmmaConfig w = wgmma_config(p, c);
    const BwdDims x(p);
    // dq_accum: f32 query tiles of block_M x dim in the kernel's staging order (AttnBwdWgmmaPlan::dq_chunk).
    auto a = bwd_args(p, w.block_M, true);
    for (int i = 0; i < 3; ++i) a[static_cast<std::size_t>(i)].is_param = false;
    // d_rows: D of each query row (d_pass), O's row order.
    const auto counters = std::find_if(a.begin(), a.end(), [](const ArgSpec& t) { return t.name == "dq_counters"; });
    a.insert(counters + 1, ArgSpec::tensor("d_rows", DType::f32, {x.total_q() * x.heads}, ArgRole::scratch));
    auto map = [&](const char* name, const char* of, bool q_like) {
      ArgSpec m = ArgSpec::tensor_map(name, of, {64, 1, q_like ? w.block_M : w.block_N}, 128);
      m.map_shape = q_like ? std::vector<std::int64_t>{x.total_q(), x.heads, x.dim_qk}
                           : std::vector<std::int64_t>{x.total_k(), x.heads_kv, x.dim_qk};
      return m;
    };
    a.insert(a.begin() + 5, {map("tma_Q", "Q", true), map("tma_K", "K", false), map("tma_V", "V", false),
                             map("tma_O", "O", true), map("tma_dO", "dO", true)});
    return a;
  };
  // The writer converting every completed tile itself (dq_defer off, or past a short list) beside the other switches,
  // with and without the pre-pass (and with each dQ schedule, the turns' staging waiting on it, on every problem);
  // a causal work order whose last group holds fewer pairs than the others.
  k.test_configs = [] {
    using KV = std::map<std::string, std::string>;
    return std::vector<KV>{{{"dq_defer", "false"}, {"num_stages", "1"}},
                           {{"dq_defer", "false"}, {"d_pass", "false"}},
                           {{"defer_tiles", "15"}},
                           {{"section", "3"}},
                           {{"dq_alt", "true"}, {"dq_defer", "false"}, {"num_stages", "1"}},
                           {{"dq_alt", "false"}, {"dq_defer", "false"}, {"num_stages", "1"}},
                           {{"kv_blocks", "2"}},
                           {{"kv_blocks", "3"}, {"dq_alt", "false"}, {"defer_tiles", "15"}, {"num_stages", "1"}}};
  };
  k.probes = attn_bwd_wgmma_probes();
  // Per query tile a consumer warp marks 8 regions (begin + end each), the producer and the dQ writer 2; the epilogue
  // (per key block of the CTA).
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits&) {
    const AttnBwdWgmmaConfig w = wgmma_config(p, c);
    const auto tiles = m_blocks(p, w.block_M) * (p.integer("heads") / p.integer("heads_kv"));
    return static_cast<std::uint32_t>(w.kv_blocks * (16 * tiles + 64));
  };
  k.layouts = [](const Values& p, const Values& c) {
    const AttnBwdWgmmaConfig w = wgmma_config(p, c);
    const AttnBwdWgmmaPlan plan = make_plan(w);
    const std::string ty = p.text("dtype");
    std::vector<LayoutInfo> l = {{"smem_Q (and dO, O)", memory_spec(plan.smem_Q, ty)},
                                 {"smem_K (and V)", memory_spec(plan.smem_K, ty)},
                                 {"smem_Q^T (N-major B of dK, dV)", memory_spec(plan.smem_Qt, ty)},
                                 {"smem_K^T (N-major B of dQ)", memory_spec(plan.smem_Kt, ty)},
                                 {"smem_dS (M-major A of dQ)", memory_spec(plan.smem_dS, ty)}};
    auto atom = [&](const std::string& name, const Fragment& f, const std::string& atom_name) {
      if (auto s = fragment_spec(f, atom_name)) l.push_back({name, *s});
    };
    atom("wgmma_C (S^T, dP^T)", plan.acc_S, "wgmma.m64n" + std::to_string(w.block_M) + "k16.f32.C");
    atom("wgmma_A (P^T, dS^T)", plan.frag_A, "wgmma.m64k16." + ty + ".A");
    atom("wgmma_C (dK, dV)", plan.acc_KV, "wgmma.m64n" + p.text("dim") + "k16.f32.C");
    atom("wgmma_C (dQ part)", plan.acc_dQ, "wgmma.m64n" + std::to_string(plan.dq_n) + "k16.f32.C");
    return l;
  };
  return k;
}

}  // namespace

std::vector<KernelSpec> attention_bwd_kernels() { return {attn_bwd_mma_spec(), attn_bwd_wgmma_spec()}; }

}  // namespace tl
