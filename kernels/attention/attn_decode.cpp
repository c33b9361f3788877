// Host spec of attn.decode: split-KV decoding over a KV cache for GQA (TileLang's flash_decoding), one launch.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "attention/attn_decode_plan.hpp"
#include "attention/attn_reference.hpp"
#include "runtime/core/numeric.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

Status refuse(std::string why) { return make_error(ErrorCode::unsupported, std::move(why)); }
double d(std::int64_t v) { return static_cast<double>(v); }
int as_int(std::int64_t v) { return static_cast<int>(v); }

// q [batch, seq_q, heads, dim]; the cache k, v [batch, seq_k, heads_kv, dim] (seq_k its capacity); per-request
// cache_seqlens; out [batch, seq_q, heads, dim]; lse [batch, heads, seq_q] f32.
Schema decode_problem() {
  const ParamSpec heads = ParamSpec::integer("heads", 32, 1, 1 << 10, "query heads (h_q)");
  return {{ParamSpec::integer("batch", 8, 1, 1 << 16, "requests (b)"),
           ParamSpec::integer("seq_q", 1, 1, 4, "query tokens per request (s_q; > 1 for speculative decoding)"),
           ParamSpec::integer("seq_k", 4096, 1, 1 << 20,
                              "cache capacity per request (s_k); every request's length unless varlen/zero_lengths"),
           heads,
           ParamSpec::integer("heads_kv", 0, 1, 1 << 10,
                              "key/value heads (h_kv, divides heads: GQA; 1: MQA; unset: heads, MHA)")
               .follows(heads),
           ParamSpec::one_of("dim", 128, {64, 128}, "head dimension of q, k, v and out"),
           ParamSpec::boolean("causal", true,
                              "query i of seq_q sees keys j < len - seq_q + i + 1 (aligned to the cache's end, as "
                              "FlashAttention's KV-cache decoding); s_q = 1 sees every key either way"),
           ParamSpec::boolean("varlen", false,
                              "per-request cache lengths drawn uniformly from [1, seq_k] (the last request gets "
                              "seq_k)"),
           ParamSpec::boolean("zero_lengths", false,
                              "every odd request gets an empty cache (len 0: out 0, lse -inf, as attn.fwd's empty "
                              "rows)"),
           ParamSpec::enumeration("dtype", "bf16", {"bf16", "f16"}, "type of q, the cache and out (lse is f32)")}};
}

// The problem's sizes and each request's cache length.
struct Dims {
  std::int64_t b, sq, sk, h, hkv, dim;
  bool causal;
  std::vector<std::int32_t> lens;
  explicit Dims(const Values& p)
      : b(p.integer("batch")), sq(p.integer("seq_q")), sk(p.integer("seq_k")), h(p.integer("heads")),
        hkv(p.integer("heads_kv")), dim(p.integer("dim")), causal(p.boolean("causal")) {
    for (std::int64_t i = 0; i < b; ++i) {
      std::int64_t len = sk;
      if (p.boolean("varlen") && i + 1 < b)
        len = 1 + static_cast<std::int64_t>(num::hash64(0xDEC0, static_cast<std::uint64_t>(i)) %
                                            static_cast<std::uint64_t>(sk));
      if (p.boolean("zero_lengths") && i % 2 == 1) len = 0;
      lens.push_back(static_cast<std::int32_t>(len));
    }
  }
  std::int64_t group() const { return h / hkv; }
  std::int64_t rows() const { return sq * group(); }  // one kv head's query rows
  // The reference's view: dense q/out rows, request i's keys at rows i * seq_k of the cache.
  AttnRows attn_rows() const {
    AttnRows r;
    r.b = b, r.sq = sq, r.h = h, r.hkv = hkv, r.dim = r.dim_v = dim, r.causal = causal;
    for (std::int64_t i = 0; i <= b; ++i) r.cu_q.push_back(static_cast<std::int32_t>(i * sq));
    for (std::int64_t i = 0; i < b; ++i) {
      r.k_start.push_back(i * sk);
      r.k_len.push_back(lens[static_cast<std::size_t>(i)]);
    }
    return r;
  }
};

// The row grid: one kv head's rows rounded up to m16 tiles, the row warps a power of two up to `warps`.
std::int64_t block_m(const Values& p, const Values& c) {
  const Dims x(p);
  std::int64_t wm = 1;
  while (wm < c.integer("warps") && 16 * wm < x.rows()) wm *= 2;
  return 16 * wm;
}

AttnDecodeConfig decode_config(const Values& p, const Values& c) {
  return {.dim = as_int(p.integer("dim")),
          .block_M = as_int(block_m(p, c)),
          .block_N = as_int(c.integer("block_N")),
          .warps = as_int(c.integer("warps")),
          .num_stages = as_int(c.integer("num_stages")),
          .causal = p.boolean("causal"),
          .bf16 = p.dtype() == DType::bf16};
}

// The split of the cache: `splits` CTAs per (request, kv head, row tile) over `chunk` keys each (a multiple of
// block_N), sized for the longest cache (seq_k).
struct Splits {
  std::int64_t m_tiles = 1, splits = 1, chunk = 0;
};

// num_splits = 0 (auto): as many splits as fill every SM's resident CTAs once, (SMs x CTAs per SM) / (batch x
// heads_kv x row tiles), at least one; the resident CTAs per SM from the shared memory (at most 4). Fewer CTAs than
// slots leaves HBM bandwidth unused; more than one wave of equal CTAs leaves a tail, so the count rounds down. At
// most 16: measured on the H200 (docs/perf.md, 2026-11-26), b = 1 with 8 kv heads ran 2-9% faster at 16 splits (128
// CTAs) than at 32 (256, two per SM), s_k 4096 to 65536. The merging CTA reads splits x rows x dim f32 partials
// alone, so the splits are also held to seq_k / (8 x rows): the partials at most a quarter of the K/V bytes they
// summarize (b = 1, 32 rows, s_k 4096: 16 splits 23.8 us, 32 splits 29.8 us).
Splits decode_splits(const Values& p, const Values& c, const DeviceLimits& l) {
  const Dims x(p);
  const AttnDecodeConfig cfg = decode_config(p, c);
  Splits s;
  s.m_tiles = (x.rows() + cfg.block_M - 1) / cfg.block_M;
  const std::int64_t tiles = (x.sk + cfg.block_N - 1) / cfg.block_N;
  std::int64_t want = c.integer("num_splits");
  if (want == 0) {
    const std::int64_t per_sm =
        std::clamp<std::int64_t>((l.smem_per_block_optin + 1024) / (make_plan(cfg).bytes + 1024), 1, 4);
    want = std::max<std::int64_t>(1, std::max(l.sm_count, 1) * per_sm / (x.b * x.hkv * s.m_tiles));
    const std::int64_t rows = std::min<std::int64_t>(x.rows(), cfg.block_M);
    want = std::min<std::int64_t>({want, 16, std::max<std::int64_t>(1, x.sk / (8 * rows))});
  }
  want = std::clamp<std::int64_t>(want, 1, std::min<std::int64_t>(tiles, make_plan(cfg).max_splits));
  s.chunk = (tiles + want - 1) / want * cfg.block_N;
  s.splits = (x.sk + s.chunk - 1) / s.chunk;
  return s;
}

Status check_decode(const Values& p, const Values& c, const DeviceLimits& limits) {
  const Dims x(p);
  if (x.h % x.hkv != 0)
    return refuse("heads_kv=" + p.text("heads_kv") + " does not divide heads=" + p.text("heads") +
                  ": GQA shares each kv head among heads/heads_kv query heads; pick a divisor");
  const AttnDecodeConfig cfg = decode_config(p, c);
  const AttnDecodePlan plan = make_plan(cfg);
  if (plan.warp_keys < 16)
    return refuse("block_N=" + c.text("block_N") + " over the " + std::to_string(plan.warps_N) +
                  " warps that split each tile's keys (warps=" + c.text("warps") + ", " +
                  std::to_string(plan.warps_M) + " along the " + std::to_string(x.rows()) +
                  " query rows) leaves fewer than 16 keys per warp: raise block_N or lower warps");
  if (plan.bytes > limits.smem_per_block_optin)
    return refuse("the Q tile and " + c.text("num_stages") + " stages of K and V tiles (block_N=" + c.text("block_N") +
                  ", dim=" + p.text("dim") + ") need " + std::to_string(plan.bytes) + " bytes of shared memory, over " +
                  limits.arch + "'s " + std::to_string(limits.smem_per_block_optin) +
                  " per block: lower num_stages or block_N");
  return Status::success();
}

// The correctness matrix: s_q 1 to 4, lengths that are no multiple of a tile and shorter than one, GQA ratios 1 (MHA),
// 4, 8 and 16 (MQA at heads 16), head dims 64 and 128, causal on and off, varlen and empty caches; b = 1 with a long
// cache splits every request (dozens of splits merged in the launch).
std::vector<std::map<std::string, std::string>> decode_test_problems(bool full) {
  using KV = std::map<std::string, std::string>;
  std::vector<KV> s = {
      {{"batch", "2"}, {"seq_q", "1"}, {"seq_k", "1000"}, {"heads", "32"}, {"heads_kv", "8"}, {"dim", "128"}},
      {{"batch", "3"}, {"seq_q", "4"}, {"seq_k", "777"}, {"heads", "16"}, {"heads_kv", "1"}, {"dim", "64"}},
      {{"batch", "5"}, {"seq_q", "2"}, {"seq_k", "300"}, {"heads", "8"}, {"heads_kv", "8"}, {"dim", "128"},
       {"varlen", "true"}, {"zero_lengths", "true"}},
      {{"batch", "1"}, {"seq_q", "1"}, {"seq_k", "5001"}, {"heads", "64"}, {"heads_kv", "8"}, {"dim", "128"}},
  };
  if (full)
    s.insert(s.end(), {
        {{"batch", "1"}, {"seq_q", "3"}, {"seq_k", "4097"}, {"heads", "8"}, {"heads_kv", "2"}, {"dim", "128"}},
        {{"batch", "2"}, {"seq_q", "4"}, {"seq_k", "37"}, {"heads", "16"}, {"heads_kv", "4"}, {"dim", "128"}},
        {{"batch", "2"}, {"seq_q", "4"}, {"seq_k", "2"}, {"heads", "4"}, {"heads_kv", "2"}, {"dim", "64"}},
        {{"batch", "6"}, {"seq_q", "1"}, {"seq_k", "2000"}, {"heads", "32"}, {"heads_kv", "2"}, {"dim", "64"},
         {"zero_lengths", "true"}},
        {{"batch", "4"}, {"seq_q", "4"}, {"seq_k", "999"}, {"heads", "8"}, {"heads_kv", "8"}, {"dim", "64"},
         {"causal", "false"}, {"varlen", "true"}},
        {{"batch", "1"}, {"seq_q", "2"}, {"seq_k", "20000"}, {"heads", "32"}, {"heads_kv", "4"}, {"dim", "128"},
         {"causal", "false"}},
        {{"batch", "3"}, {"seq_q", "1"}, {"seq_k", "123"}, {"heads", "16"}, {"heads_kv", "16"}, {"dim", "64"},
         {"varlen", "true"}},
    });
  return s;
}

KernelSpec attn_decode_spec() {
  KernelSpec k;
  k.name = "attn.decode";
  k.family = "attention";
  k.tensor_cores = true;
  k.summary = "split-KV decoding for GQA/MQA/MHA over a KV cache (FlashDecoding): a kv head's query group as one "
              "mma.sync tile, the cache split over CTAs, the combine in the same launch";
  k.source = "attention/attn_decode.cuh";
  k.problem = decode_problem();
  k.config = {{ParamSpec::one_of("block_N", 64, {32, 64, 128}, "keys per K/V tile (one cp.async stage)"),
               ParamSpec::one_of("warps", 4, {4, 8},
                                 "warps per CTA: one per 16 query rows (up to all of them), the rest split each "
                                 "tile's keys (block_N / those warps keys each, at least 16)"),
               ParamSpec::integer("num_stages", 3, 2, 6,
                                  "K/V tiles in the cp.async pipeline (num_stages - 1 in flight)"),
               ParamSpec::integer("num_splits", 0, 0, 128,
                                  "CTAs each (request, kv head) cache is split over (at most one per tile); 0 = auto: "
                                  "SMs x resident CTAs per SM / (batch x heads_kv x row tiles), at least 1, at most "
                                  "16 and seq_k / (8 x query rows), so the merged partials stay small")}};
  k.test_configs = [] {
    return std::vector<std::map<std::string, std::string>>{{{"num_splits", "1"}}, {{"num_splits", "3"}},
                                                           {{"block_N", "128"}, {"warps", "8"}}};
  };
  k.can_implement = check_decode;
  k.name_expression = [](const Values& p, const Values& c) { return name_expression(decode_config(p, c)); };
  k.launch = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const Splits s = decode_splits(p, c, l);
    LaunchGeometry g;
    g.grid.x = static_cast<std::uint32_t>(s.splits);
    g.grid.y = static_cast<std::uint32_t>(p.integer("heads_kv") * s.m_tiles);
    g.grid.z = static_cast<std::uint32_t>(p.integer("batch"));
    g.block.x = static_cast<std::uint32_t>(c.integer("warps") * 32);
    g.dynamic_smem = static_cast<std::uint32_t>(make_plan(decode_config(p, c)).bytes);
    return g;
  };
  k.args = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const Dims x(p);
    const Splits s = decode_splits(p, c, l);
    const DType t = p.dtype();
    // The split partials (f32 O of block_M rows, log2 LSE); one element when nothing is split.
    const std::int64_t slots = s.splits > 1 ? x.b * x.hkv * s.m_tiles * s.splits * block_m(p, c) : 1;
    return std::vector<ArgSpec>{
        // Scores q·k/sqrt(dim) with spread ~1.3, as attn.fwd's inputs: softmax rows neither flat nor one-hot.
        ArgSpec::tensor("Q", t, {x.b, x.sq, x.h, x.dim}, ArgRole::in, {.lo = -2, .hi = 2, .seed = 1}),
        ArgSpec::tensor("K", t, {x.b, x.sk, x.hkv, x.dim}, ArgRole::in, {.lo = -2, .hi = 2, .seed = 2}),
        ArgSpec::tensor("V", t, {x.b, x.sk, x.hkv, x.dim}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 3}),
        ArgSpec::tensor("O", t, {x.b, x.sq, x.h, x.dim}, ArgRole::out),
        ArgSpec::tensor("LSE", DType::f32, {x.b, x.h, x.sq}, ArgRole::out),
        ArgSpec::i32_data("cache_seqlens", x.lens),
        ArgSpec::tensor("o_acc", DType::f32, {slots, s.splits > 1 ? x.dim : 1}, ArgRole::scratch),
        ArgSpec::tensor("lse_acc", DType::f32, {slots}, ArgRole::scratch),
        ArgSpec::tensor("counters", DType::i32, {x.b * x.hkv * s.m_tiles}, ArgRole::scratch),
        ArgSpec::scalar("seq_q", DType::i32, d(x.sq)),
        ArgSpec::scalar("heads", DType::i32, d(x.h)),
        ArgSpec::scalar("heads_kv", DType::i32, d(x.hkv)),
        ArgSpec::scalar("seq_k", DType::i32, d(x.sk)),
        ArgSpec::scalar("chunk", DType::i32, d(s.chunk))};
  };
  // 4·dim per (query row, key it sees): S = Q K^T and O = P V.
  k.flops = [](const Values& p) {
    const Dims x(p);
    const AttnRows r = x.attn_rows();
    double pairs = 0;
    for (std::int64_t i = 0; i < x.b; ++i)
      for (std::int64_t s = 0; s < x.sq; ++s) {
        const auto [lo, hi] = r.keys(i, s);
        pairs += d(hi - lo);
      }
    return 4.0 * d(x.dim) * d(x.h) * pairs;
  };
  // The used part of the cache (k and v of every cached token, once per kv head), q, out and lse.
  k.min_bytes = [](const Values& p) {
    const Dims x(p);
    const double e = static_cast<double>(dtype_size(p.dtype()));
    const double tokens = std::accumulate(x.lens.begin(), x.lens.end(), 0.0);
    return e * (2.0 * tokens * d(x.hkv * x.dim) + 2.0 * d(x.b * x.sq * x.h * x.dim)) + 4.0 * d(x.b * x.h * x.sq) +
           4.0 * d(x.b);
  };
  k.reference = [](const Values& p, const ReferenceInputs& in, const std::string& output,
                   const std::vector<std::int64_t>& idx) {
    return attn_rows_reference(Dims(p).attn_rows(), in, output, idx);
  };
  // As attn.fwd's: O rounded to 16 bits (P too, before P·V); LSE fp32 arithmetic plus the merge's exp2/log2.
  k.tolerance = [](const Values&, DType t) {
    return t == DType::bf16 ? Tolerance{1e-2, 2e-2} : Tolerance{5e-3, 5e-3};
  };
  // Each sampled O row (dim values) and LSE entry costs the reference a softmax row (len · dim products): up to 96
  // rows, fewer for long caches.
  k.sampling = [](const Values& p, const std::string& output) {
    const std::int64_t dim = p.integer("dim");
    const std::int64_t sk = std::max<std::int64_t>(p.integer("seq_k"), 64);
    const std::int64_t rows = std::clamp<std::int64_t>(200000000 / (dim * sk), 8, 96);
    return output == "O" ? OutputSampling{static_cast<std::uint64_t>(dim), static_cast<std::uint64_t>(rows * dim)}
                         : OutputSampling{1, static_cast<std::uint64_t>(std::min<std::int64_t>(256, 2 * rows))};
  };
  k.test_problems = decode_test_problems;
  // cuDNN's SDPA graph over the same q, k, v (`--vs cudnn`), the cache's end-aligned causal mask being its
  // bottom-right one; requests' own cache lengths (varlen, empty caches) its padding mask's.
  k.baseline = [](const Values& p, const Values&) -> std::optional<BaselineSpec> {
    const Dims x(p);
    BaselineSpec b;
    b.kind = "cudnn_sdpa";
    b.in = b.out = p.dtype();
    b.sdpa = SdpaBaseline{.batch = x.b, .heads = x.h, .heads_kv = x.hkv, .seq_q = x.sq, .seq_k = x.sk, .dim = x.dim,
                          .dim_v = x.dim, .causal = x.causal && x.sq > 1, .scale = 1.0 / std::sqrt(d(x.dim))};
    if (p.boolean("varlen") || p.boolean("zero_lengths")) sdpa_lengths(x.attn_rows(), b.sdpa);
    return b;
  };
  k.probes = attn_decode_probe_names();
  // Per warp and K/V tile: five regions (begin + end each), plus the prologue's issues, the combine and the merge.
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const Splits s = decode_splits(p, c, l);
    return static_cast<std::uint32_t>(10 * (s.chunk / c.integer("block_N")) + 2 * c.integer("num_stages") + 64);
  };
  k.layouts = [](const Values& p, const Values& c) {
    const AttnDecodePlan plan = make_plan(decode_config(p, c));
    const std::string ty = p.text("dtype");
    std::vector<LayoutInfo> l = {{"smem_Q", memory_spec(plan.tile.smem_Q, ty)},
                                 {"smem_K", memory_spec(plan.tile.smem_K, ty)},
                                 {"smem_V", memory_spec(plan.tile.smem_V, ty)},
                                 {"o_part (combine, f32)", to_string(plan.o_part)}};
    const std::vector<std::tuple<std::string, Fragment, std::string>> frags = {
        {"mma_A (Q, P)", plan.tile.mma_A, "mma.m16n8k16." + ty + ".A"},
        {"mma_B (K, V)", plan.tile.mma_B, "mma.m16n8k16." + ty + ".B"},
        {"mma_C (S, O)", plan.tile.mma_C, "mma.m16n8k16.f32.C"},
        {"ldmatrix (Q, K)", plan.tile.ldmatrix_A, "ldmatrix.x4"},
        {"ldmatrix.trans (V)", plan.tile.ldmatrix_trans, "ldmatrix.x4.trans"}};
    for (const auto& [name, f, atom] : frags)
      if (auto spec = fragment_spec(f, atom)) l.push_back({name, *spec});
    return l;
  };
  return k;
}

}  // namespace

std::vector<KernelSpec> attention_decode_kernels() { return {attn_decode_spec()}; }

}  // namespace tl
