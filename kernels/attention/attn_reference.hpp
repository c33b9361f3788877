// The float64 reference of the attention forwards (attn.fwd.*, attn.decode): O and LSE of sampled query rows; the
// same rows as cuDNN's varlen baseline sees them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tl {

// A family's headers are embedded as device sources, which include tile/ and their family only: the runtime's types
// the reference takes are declared here and defined in runtime/core/status.hpp and runtime/spec/kernel_spec.hpp.
template <typename T>
class Result;
struct ReferenceInputs;
struct SdpaBaseline;

// Where each sequence's rows are. Sequence b's queries are rows cu_q[b] .. cu_q[b + 1] of Q [total_q, heads, dim]
// and O [total_q, heads, dim_v]; its keys are rows k_start[b] .. k_start[b] + k_len[b] of K [*, heads_kv, dim] and
// V [*, heads_kv, dim_v] (a packed batch has k_start = the prefix sums of k_len, a KV cache b · capacity). LSE is
// [batch, heads, seq_q] (dense) or [heads, total_q] (varlen). Causal masks are bottom-right aligned: row s sees keys
// j <= s + len_k - len_q (FlashAttention's, and its KV-cache decoding's: query i of s_q sees keys < len - s_q + i + 1).
struct AttnRows {
  std::int64_t b = 0, sq = 0, h = 0, hkv = 0, dim = 0, dim_v = 0, window = 0;
  bool causal = false, varlen = false, sinks = false;
  std::vector<std::int32_t> cu_q;            // batch + 1 offsets
  std::vector<std::int64_t> k_start, k_len;  // batch each

  std::int64_t total_q() const { return cu_q.back(); }
  std::int64_t len_q(std::int64_t i) const {
    return cu_q[static_cast<std::size_t>(i) + 1] - cu_q[static_cast<std::size_t>(i)];
  }
  std::int64_t len_k(std::int64_t i) const { return k_len[static_cast<std::size_t>(i)]; }
  // The keys [lo, hi) row s of sequence i sees: up to the bottom-right diagonal (causal), from its window's start.
  std::pair<std::int64_t, std::int64_t> keys(std::int64_t i, std::int64_t s) const;
};

// O (normalized, 0 for a row without keys) or LSE (natural log, -inf for a row without keys and sink) at the linear
// indices idx of that output, with scores q·k / sqrt(dim) and, with sinks, the input `sinks` (f32 [heads]).
Result<std::vector<double>> attn_rows_reference(const AttnRows& x, const ReferenceInputs& in, const std::string& output,
                                                const std::vector<std::int64_t>& idx);

// Each sequence's lengths and first rows into cuDNN's baseline (`--vs cudnn` of a varlen problem).
void sdpa_lengths(const AttnRows& x, SdpaBaseline& s);

}  // namespace tl
