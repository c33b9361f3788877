// The baselines' host side: which library a kind runs in, and cuDNN's SDPA graph as TileLab describes it (its
// tensors over our buffers, the problems it is known to refuse), all without cuDNN or a GPU.
#include "runtime/spec/baseline.hpp"

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

std::vector<SdpaTensor> sdpa_tensors(const SdpaBaseline& p) {
  // A [batch, seq, heads, dim] buffer seen as (batch, heads, seq, dim): a head is `dim` apart, a row `heads · dim`.
  auto bshd = [](std::string name, std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) {
    return SdpaTensor{std::move(name), {b, h, s, d}, {s * h * d, d, h * d, 1}};
  };
  const std::int64_t dim_v = p.dim_v > 0 ? p.dim_v : p.dim;
  std::vector<SdpaTensor> t = {bshd("Q", p.batch, p.seq_q, p.heads, p.dim),
                               bshd("K", p.batch, p.seq_k, p.heads_kv, p.dim),
                               bshd("V", p.batch, p.seq_k, p.heads_kv, dim_v),
                               bshd("O", p.batch, p.seq_q, p.heads, dim_v),
                               SdpaTensor{"Stats", {p.batch, p.heads, p.seq_q, 1}, {p.heads * p.seq_q, p.seq_q, 1, 1}}};
  if (p.backward)
    t.insert(t.end(), {bshd("dO", p.batch, p.seq_q, p.heads, dim_v), bshd("dQ", p.batch, p.seq_q, p.heads, p.dim),
                       bshd("dK", p.batch, p.seq_k, p.heads_kv, p.dim), bshd("dV", p.batch, p.seq_k, p.heads_kv, dim_v)});
  return t;
}

std::string sdpa_refusal(const SdpaBaseline& p) {
  if (p.varlen)
    return "varlen=true (or attn.decode's zero_lengths=true) gives each sequence its own length, which cuDNN takes "
           "only as ragged tensors, not set up here; bench varlen=false (and zero_lengths=false) for the cuDNN row";
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
  return "";
}

}  // namespace tl
