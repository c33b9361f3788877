// The baselines' host side: which library a kind runs in, and cuDNN's SDPA graph as TileLab describes it (its
// tensors over our buffers, the problems it is known to refuse), all without cuDNN or a GPU.
#include "runtime/spec/baseline.hpp"

#include <algorithm>
#include <limits>

namespace tl {

std::string baseline_library(const std::string& kind) {
  if (kind == "cublas_gemm" || kind == "cublaslt_fp8") return "cublas";
  if (kind == "cudnn_sdpa") return "cudnn";
  return "";
}

std::string library_title(const std::string& library) {
  if (library == "cublas") return "cuBLAS";
  if (library == "cudnn") return "cuDNN";
  return library;
}

namespace {

// Rows (of heads x dim) the Q-like buffers hold: batch x seq_q, or for varlen sequences up to the last one's end.
std::int64_t rows_q(const SdpaBaseline& p) {
  return p.varlen() ? p.start_q.back() + p.len_q.back() : p.batch * p.seq_q;
}

}  // namespace

std::vector<SdpaTensor> sdpa_tensors(const SdpaBaseline& p) {
  // A [batch, seq, heads, dim] buffer seen as (batch, heads, seq, dim): a head is `dim` apart, a row `heads · dim`.
  // (Varlen's [rows, heads, dim] the same within a sequence; its start comes from the ragged offsets.)
  auto bshd = [](std::string name, std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) {
    return SdpaTensor{std::move(name), {b, h, s, d}, {s * h * d, d, h * d, 1}};
  };
  const std::int64_t dim_v = p.dim_v > 0 ? p.dim_v : p.dim;
  // Varlen backward reads our LSE [heads, rows]: a head is all rows apart, the sequence's start a ragged offset.
  const std::int64_t lse_head = p.varlen() && p.backward ? rows_q(p) : p.seq_q;
  std::vector<SdpaTensor> t = {bshd("Q", p.batch, p.seq_q, p.heads, p.dim),
                               bshd("K", p.batch, p.seq_k, p.heads_kv, p.dim),
                               bshd("V", p.batch, p.seq_k, p.heads_kv, dim_v),
                               bshd("O", p.batch, p.seq_q, p.heads, dim_v),
                               SdpaTensor{"Stats", {p.batch, p.heads, p.seq_q, 1},
                                          {p.heads * lse_head, lse_head, 1, 1}}};
  if (p.backward)
    t.insert(t.end(), {bshd("dO", p.batch, p.seq_q, p.heads, dim_v), bshd("dQ", p.batch, p.seq_q, p.heads, p.dim),
                       bshd("dK", p.batch, p.seq_k, p.heads_kv, p.dim), bshd("dV", p.batch, p.seq_k, p.heads_kv, dim_v)});
  return t;
}

SdpaVarlen sdpa_varlen(const SdpaBaseline& p) {
  SdpaVarlen v;
  if (!p.varlen()) return v;
  auto i32 = [](std::int64_t x) { return static_cast<std::int32_t>(x); };
  for (std::int64_t i = 0; i < p.batch; ++i) {
    v.seq_len_q.push_back(i32(p.len_q[static_cast<std::size_t>(i)]));
    v.seq_len_kv.push_back(i32(p.len_k[static_cast<std::size_t>(i)]));
  }
  // Each sequence's first row, then the end of the last one, in elements of a row of heads x dim.
  auto offsets = [&](const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& len, std::int64_t row) {
    std::vector<std::int32_t> o;
    for (std::int64_t s : start) o.push_back(i32(s * row));
    o.push_back(i32((start.back() + len.back()) * row));
    return o;
  };
  for (const SdpaTensor& t : sdpa_tensors(p)) {
    const bool k_like = t.name == "K" || t.name == "V" || t.name == "dK" || t.name == "dV";
    if (t.name == "Stats")
      v.ragged.push_back(p.backward ? offsets(p.start_q, p.len_q, 1) : std::vector<std::int32_t>{});
    else v.ragged.push_back(k_like ? offsets(p.start_k, p.len_k, t.dims[1] * t.dims[3])
                                   : offsets(p.start_q, p.len_q, t.dims[1] * t.dims[3]));
  }
  return v;
}

std::string sdpa_refusal(const SdpaBaseline& p) {
  if (p.batch < 1 || p.heads < 1 || p.heads_kv < 1 || p.seq_q < 1 || p.seq_k < 1 || p.dim < 1)
    return "an empty problem (batch, heads, heads_kv, seq_q, seq_k and dim must be at least 1)";
  if (p.heads % p.heads_kv != 0)
    return "heads_kv=" + std::to_string(p.heads_kv) + " does not divide heads=" + std::to_string(p.heads);
  const std::int64_t dim_v = p.dim_v > 0 ? p.dim_v : p.dim;
  // cuDNN's fused flash attention takes head dimensions that are multiples of 8 up to 256 (its SDPA support surface).
  for (std::int64_t d : {p.dim, dim_v})
    if (d % 8 != 0 || d > 256)
      return "head dimension " + std::to_string(d) + ": cuDNN's fused attention takes multiples of 8 up to 256";
  if (p.causal && p.seq_q > p.seq_k)
    return "causal with seq_q > seq_k: the bottom-right aligned mask leaves the first rows without keys";
  if (p.varlen()) {
    const auto b = static_cast<std::size_t>(p.batch);
    if (p.len_q.size() != b || p.len_k.size() != b || p.start_q.size() != b || p.start_k.size() != b)
      return "varlen lengths for " + std::to_string(p.len_q.size()) + " sequences in a batch of " + std::to_string(b);
    // The ragged offsets are int32 element offsets: the Q-like and K-like tensors' ends must fit.
    const std::int64_t width = std::max(p.dim, dim_v);
    const std::int64_t end = std::max(rows_q(p) * p.heads, (p.start_k.back() + p.len_k.back()) * p.heads_kv) * width;
    if (end > std::numeric_limits<std::int32_t>::max())
      return "varlen tensors of more than 2^31 elements: cuDNN's ragged offsets here are int32";
    // Measured on an H100 (cuDNN 9.19): its forward's rows for a sequence without keys are not finite (the
    // backward's dQ there is 0, as ours).
    for (std::size_t i = 0; i < b && !p.backward; ++i)
      if (p.len_k[i] == 0)
        return "sequence " + std::to_string(i) + " has no keys (varlen=true's second sequence when not causal, "
               "attn.decode's zero_lengths=true): cuDNN's forward leaves its rows not finite where ours writes O 0 and "
               "LSE -inf, so the two cannot be compared; bench with keys in every sequence (causal=true or batch=2; "
               "zero_lengths=false)";
  }
  return "";
}

}  // namespace tl
