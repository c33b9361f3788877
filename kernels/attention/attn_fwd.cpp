// Host spec of the attention forward kernels: attn.fwd.mma (FlashAttention-2 style, mma.sync) — O and LSE.
#include <cmath>
#include <limits>
#include <map>

#include "library.hpp"

namespace tl {
namespace {

// O = softmax(Q K^T / sqrt(dim)) V and LSE per query row. Q, O: [batch, seq_q, heads, dim]; K, V: [batch, seq_k,
// heads_kv, dim]; LSE: float32 [batch, heads, seq_q]. Causal masks are aligned to the bottom-right corner.
Schema attn_problem() {
  return {{ParamSpec::integer("batch", 4, 1, 1 << 16, "sequences in the batch"),
           ParamSpec::integer("seq_q", 2048, 1, 1 << 20, "query length (rows of Q and O per sequence and head)"),
           ParamSpec::integer("seq_k", 2048, 1, 1 << 20, "key/value length"),
           ParamSpec::integer("heads", 16, 1, 1 << 10, "query heads"),
           ParamSpec::integer("heads_kv", 16, 1, 1 << 10, "key/value heads (GQA: divides heads; = heads is MHA)"),
           ParamSpec::one_of("dim", 128, {64, 128}, "head dimension"),
           ParamSpec::boolean("causal", false, "mask keys after the query (bottom-right aligned when seq_q != seq_k)"),
           ParamSpec::enumeration("dtype", "bf16", {"bf16", "f16"}, "type of Q, K, V and O (LSE is f32)")}};
}

Status refuse(std::string why) { return make_error(ErrorCode::unsupported, std::move(why)); }

Status check_problem(const Values& p) {
  if (p.integer("heads") % p.integer("heads_kv") != 0)
    return refuse("heads_kv=" + p.text("heads_kv") + " does not divide heads=" + p.text("heads") +
                  ": GQA shares each kv head among heads/heads_kv query heads; pick a divisor");
  if (p.boolean("causal") && p.integer("seq_q") > p.integer("seq_k"))
    return refuse("causal with seq_q=" + p.text("seq_q") + " > seq_k=" + p.text("seq_k") +
                  ": the mask is bottom-right aligned, so the first seq_q - seq_k query rows would see no key; "
                  "use seq_q <= seq_k or causal=false");
  return Status::success();
}

double d(std::int64_t v) { return static_cast<double>(v); }

struct Dims {
  std::int64_t b, sq, sk, h, hkv, dim;
  bool causal;
  explicit Dims(const Values& p)
      : b(p.integer("batch")), sq(p.integer("seq_q")), sk(p.integer("seq_k")), h(p.integer("heads")),
        hkv(p.integer("heads_kv")), dim(p.integer("dim")), causal(p.boolean("causal")) {}
};

// One query row of the float64 reference: the unnormalized weights exp(s_j - max) of every key it sees,
// their sum and the max, with s_j = q·k_j / sqrt(dim).
struct RefRow {
  std::vector<double> w;
  double max = 0, sum = 0;
};

RefRow reference_row(const Dims& x, const HostTensor& Q, const HostTensor& K, std::int64_t b, std::int64_t h,
                     std::int64_t s) {
  const std::int64_t hk = h / (x.h / x.hkv);
  const std::int64_t keys = x.causal ? std::min(x.sk, s + x.sk - x.sq + 1) : x.sk;
  std::vector<double> q(static_cast<std::size_t>(x.dim));
  const std::int64_t q0 = ((b * x.sq + s) * x.h + h) * x.dim;
  for (std::int64_t c = 0; c < x.dim; ++c) q[static_cast<std::size_t>(c)] = Q.at(q0 + c);
  const double scale = 1.0 / std::sqrt(d(x.dim));
  RefRow r;
  r.w.resize(static_cast<std::size_t>(std::max<std::int64_t>(keys, 0)));
  r.max = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < keys; ++j) {
    const std::int64_t k0 = ((b * x.sk + j) * x.hkv + hk) * x.dim;
    double dot = 0;
    for (std::int64_t c = 0; c < x.dim; ++c) dot += q[static_cast<std::size_t>(c)] * K.at(k0 + c);
    r.w[static_cast<std::size_t>(j)] = dot * scale;
    r.max = std::max(r.max, dot * scale);
  }
  for (double& w : r.w) r.sum += (w = std::exp(w - r.max));
  return r;
}

Result<std::vector<double>> attn_reference(const Values& p, const ReferenceInputs& in, const std::string& output,
                                           const std::vector<std::int64_t>& idx) {
  if (output != "O" && output != "LSE")
    return make_error(ErrorCode::invalid_argument, "attention has outputs O and LSE, not " + output);
  const Dims x(p);
  const HostTensor &Q = in.tensor("Q"), &K = in.tensor("K"), &V = in.tensor("V");
  std::map<std::int64_t, RefRow> rows;  // by (b, h, s) linear index: sampled positions come in whole rows
  auto row = [&](std::int64_t b, std::int64_t h, std::int64_t s) -> const RefRow& {
    const std::int64_t key = (b * x.h + h) * x.sq + s;
    auto it = rows.find(key);
    if (it == rows.end()) it = rows.emplace(key, reference_row(x, Q, K, b, h, s)).first;
    return it->second;
  };
  std::vector<double> out;
  out.reserve(idx.size());
  for (std::int64_t i : idx) {
    if (output == "LSE") {  // [b, h, s]
      const RefRow& r = row(i / (x.h * x.sq), (i / x.sq) % x.h, i % x.sq);
      out.push_back(r.max + std::log(r.sum));
    } else {  // O: [b, s, h, dim]
      const std::int64_t c = i % x.dim, h = (i / x.dim) % x.h, s = (i / (x.dim * x.h)) % x.sq, b = i / (x.dim * x.h * x.sq);
      const RefRow& r = row(b, h, s);
      const std::int64_t hk = h / (x.h / x.hkv);
      double acc = 0;
      for (std::size_t j = 0; j < r.w.size(); ++j)
        acc += r.w[j] * V.at(((b * x.sk + static_cast<std::int64_t>(j)) * x.hkv + hk) * x.dim + c);
      out.push_back(acc / r.sum);
    }
  }
  return out;
}

// Problems of the correctness matrix: lengths that are not multiples of any block, GQA ratios 1, 4 and 8, both
// head dims, causal on and off (causal with seq_q < seq_k checks the bottom-right alignment).
std::vector<std::map<std::string, std::string>> attn_test_problems(bool full) {
  using KV = std::map<std::string, std::string>;
  std::vector<KV> s = {
      {{"batch", "2"}, {"seq_q", "200"}, {"seq_k", "333"}, {"heads", "4"}, {"heads_kv", "4"}, {"dim", "128"}, {"causal", "false"}},
      {{"batch", "2"}, {"seq_q", "257"}, {"seq_k", "257"}, {"heads", "8"}, {"heads_kv", "2"}, {"dim", "128"}, {"causal", "true"}},
      {{"batch", "1"}, {"seq_q", "77"}, {"seq_k", "301"}, {"heads", "8"}, {"heads_kv", "1"}, {"dim", "64"}, {"causal", "true"}},
      {{"batch", "3"}, {"seq_q", "129"}, {"seq_k", "65"}, {"heads", "16"}, {"heads_kv", "2"}, {"dim", "64"}, {"causal", "false"}},
  };
  if (full)
    s.insert(s.end(), {
        {{"batch", "1"}, {"seq_q", "1"}, {"seq_k", "1"}, {"heads", "1"}, {"heads_kv", "1"}, {"dim", "64"}, {"causal", "true"}},
        {{"batch", "1"}, {"seq_q", "1"}, {"seq_k", "1000"}, {"heads", "8"}, {"heads_kv", "8"}, {"dim", "128"}, {"causal", "true"}},
        {{"batch", "2"}, {"seq_q", "1024"}, {"seq_k", "1024"}, {"heads", "4"}, {"heads_kv", "1"}, {"dim", "128"}, {"causal", "true"}},
        {{"batch", "2"}, {"seq_q", "1000"}, {"seq_k", "1500"}, {"heads", "8"}, {"heads_kv", "2"}, {"dim", "64"}, {"causal", "false"}},
    });
  return s;
}

// [SECTION] attn.fwd.mma

std::int64_t mma_smem(const Values& p, const Values& c) {
  return (c.integer("block_M") + 2 * c.integer("num_stages") * c.integer("block_N")) * p.integer("dim") * 2;
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
  const auto smem = mma_smem(p, c);
  if (smem > limits.smem_per_block_optin)
    return refuse("the Q tile and " + c.text("num_stages") + " stages of K and V tiles need " + std::to_string(smem) +
                  " bytes of shared memory, over " + limits.arch + "'s " + std::to_string(limits.smem_per_block_optin) +
                  " per block: lower num_stages, block_N or block_M");
  return Status::success();
}

KernelSpec attn_fwd_mma_spec() {
  KernelSpec k;
  k.name = "attn.fwd.mma";
  k.family = "attention";
  k.summary = "FlashAttention-2-style forward: cp.async K/V pipeline, ldmatrix, mma.sync, online softmax (O and LSE)";
  k.source = "attention/attn_fwd_mma.cuh";
  k.problem = attn_problem();
  k.config = {{ParamSpec::one_of("block_M", 64, {64, 128}, "query rows per block"),
               ParamSpec::one_of("block_N", 64, {32, 64, 128}, "keys per K/V tile (one pipeline stage)"),
               ParamSpec::one_of("warps", 4, {2, 4, 8}, "warps, stacked along the query rows (block_M/warps rows each)"),
               ParamSpec::integer("num_stages", 2, 2, 4, "K/V tiles in the cp.async pipeline (2 = double buffering)")}};
  k.can_implement = check_mma;
  k.name_expression = [](const Values& p, const Values& c) {
    return "tl::attn_fwd_mma<" + p.text("dim") + "," + c.text("block_M") + "," + c.text("block_N") + "," +
           c.text("warps") + "," + c.text("num_stages") + "," + p.text("causal") + "," +
           (p.dtype() == DType::bf16 ? "true" : "false") + ">";
  };
  k.launch = [](const Values& p, const Values& c) {
    LaunchGeometry g;
    g.grid.x = static_cast<std::uint32_t>((p.integer("seq_q") + c.integer("block_M") - 1) / c.integer("block_M"));
    g.grid.y = static_cast<std::uint32_t>(p.integer("heads"));
    g.grid.z = static_cast<std::uint32_t>(p.integer("batch"));
    g.block.x = static_cast<std::uint32_t>(c.integer("warps") * 32);
    g.dynamic_smem = static_cast<std::uint32_t>(mma_smem(p, c));
    return g;
  };
  k.args = [](const Values& p, const Values&) {
    const Dims x(p);
    const DType t = p.dtype();
    return std::vector<ArgSpec>{
        // Scores q·k/sqrt(dim) with spread ~1.3: softmax rows neither flat nor one-hot.
        ArgSpec::tensor("Q", t, {x.b, x.sq, x.h, x.dim}, ArgRole::in, {.lo = -2, .hi = 2, .seed = 1}),
        ArgSpec::tensor("K", t, {x.b, x.sk, x.hkv, x.dim}, ArgRole::in, {.lo = -2, .hi = 2, .seed = 2}),
        ArgSpec::tensor("V", t, {x.b, x.sk, x.hkv, x.dim}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 3}),
        ArgSpec::tensor("O", t, {x.b, x.sq, x.h, x.dim}, ArgRole::out),
        ArgSpec::tensor("LSE", DType::f32, {x.b, x.h, x.sq}, ArgRole::out),
        ArgSpec::scalar("seq_q", DType::i32, d(x.sq)),
        ArgSpec::scalar("seq_k", DType::i32, d(x.sk)),
        ArgSpec::scalar("heads", DType::i32, d(x.h)),
        ArgSpec::scalar("heads_kv", DType::i32, d(x.hkv))};
  };
  // 2 GEMMs of 2·sq·sk·dim each per head; causal counts half (the convention of FlashAttention's benchmarks).
  k.flops = [](const Values& p) {
    const Dims x(p);
    return 4.0 * d(x.b) * d(x.h) * d(x.sq) * d(x.sk) * d(x.dim) * (x.causal ? 0.5 : 1.0);
  };
  k.min_bytes = [](const Values& p) {
    const Dims x(p);
    const double e = static_cast<double>(dtype_size(p.dtype()));
    return e * d(x.b) * d(x.dim) * (2 * d(x.sq) * d(x.h) + 2 * d(x.sk) * d(x.hkv)) + 4.0 * d(x.b) * d(x.h) * d(x.sq);
  };
  k.reference = attn_reference;
  // O is rounded to 16 bits (and P to 16 bits before P·V); its entries are weighted means of V in [-1, 1].
  // LSE is fp32 arithmetic on exact products: only accumulation order and ex2.approx.
  k.tolerance = [](const Values&, DType t) {
    if (t == DType::f32) return Tolerance{1e-4, 2e-3};
    return t == DType::bf16 ? Tolerance{1e-2, 2e-2} : Tolerance{5e-3, 5e-3};
  };
  // Each sampled O row (dim values) and LSE entry costs the reference a whole softmax row (seq_k · dim).
  k.sampling = [](const Values& p, const std::string& output) {
    return output == "O" ? OutputSampling{static_cast<std::uint64_t>(p.integer("dim")),
                                          static_cast<std::uint64_t>(192 * p.integer("dim"))}
                         : OutputSampling{1, 256};
  };
  k.test_problems = attn_test_problems;
  k.probes = {"load_issue", "wait_tile", "qk", "softmax", "pv", "epilogue"};
  // Per warp and K/V tile: five regions (begin + end each), plus the prologue's issues and the epilogue.
  k.probe_capacity = [](const Values& p, const Values& c) {
    const auto tiles = (p.integer("seq_k") + c.integer("block_N") - 1) / c.integer("block_N");
    return static_cast<std::uint32_t>(10 * tiles + 2 * c.integer("num_stages") + 64);
  };
  k.layouts = [](const Values& p, const Values& c) {
    const std::string dim = p.text("dim");
    // Chunk c of row r at c ^ (r % 8): XOR of element-offset bits [3,6) with the row's low 3 bits, which sit at
    // bit 6 (64-element rows) or 7 (128-element rows).
    const std::string sw = p.integer("dim") == 64 ? "swizzle<3,3,3> o " : "swizzle<3,3,4> o ";
    return std::vector<LayoutInfo>{{"smem_Q", sw + "(" + c.text("block_M") + "," + dim + "):(" + dim + ",1)"},
                                   {"smem_K", sw + "(" + c.text("block_N") + "," + dim + "):(" + dim + ",1)"},
                                   {"smem_V", sw + "(" + c.text("block_N") + "," + dim + "):(" + dim + ",1)"},
                                   {"mma_A (Q, P)", "mma.m16n8k16.f16.A"},
                                   {"mma_B (K, V)", "mma.m16n8k16.f16.B"},
                                   {"mma_C (S, O)", "mma.m16n8k16.f32.C"},
                                   {"ldmatrix (Q, K)", "ldmatrix.x4"},
                                   {"ldmatrix.trans (V)", "ldmatrix.x4.trans"}};
  };
  return k;
}

}  // namespace

std::vector<KernelSpec> attention_kernels() { return {attn_fwd_mma_spec()}; }

}  // namespace tl
