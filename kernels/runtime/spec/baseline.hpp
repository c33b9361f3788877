// A vendor-library run of the same problem on the same device buffers as a kernel: what `bench --vs cublas|cudnn`
// times.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/check.hpp"
#include "runtime/core/dtype.hpp"

namespace tl {

// The attention cuDNN's SDPA graph computes over the launch's own buffers (kind "cudnn_sdpa"). Forward: O =
// softmax(scale · Q Kᵀ, causal: bottom-right aligned) · V and its log-sum-exp per row, from Q, K, V. Backward: dQ, dK,
// dV from Q, K, V, O, dO and that log-sum-exp (LSE). Our tensors are [batch, seq, heads, dim] (Q-like: O, dO, dQ;
// K-like: V, dK, dV with seq_k, heads_kv; V-like with dim_v); cuDNN is told them as (batch, heads, seq, dim) with the
// matching strides, so no data moves.
struct SdpaBaseline {
  std::int64_t batch = 0, heads = 0, heads_kv = 0, seq_q = 0, seq_k = 0, dim = 0, dim_v = 0;
  bool causal = false;
  std::int64_t window = 0;  // causal sliding window: row i sees keys (i - window, i] (cuDNN's diagonal band left bound)
  // Sequences of their own lengths (varlen; empty: each is seq_q / seq_k long, seq_q and seq_k being the longest):
  // sequence i's len_q[i] rows start at row start_q[i] of the Q-like buffers' rows (of heads x dim), its len_k[i] keys
  // at row start_k[i] of the K-like ones: packed varlen sequences one after another, a KV cache's padded at i * seq_k.
  // cuDNN gets them as its padding mask's sequence lengths and each tensor's ragged offsets (sdpa_varlen).
  std::vector<std::int64_t> len_q = {}, len_k = {}, start_q = {}, start_k = {};
  bool backward = false;
  double scale = 0;
  // Buffer names in the launch. Forward reads q, k, v and is compared on o; backward reads q, k, v, o, d_o, lse and
  // is compared on dq (cuDNN's dK and dV go to buffers of its own).
  std::string q = "Q", k = "K", v = "V", o = "O", d_o = "dO", lse = "LSE", dq = "dQ";
  // Forward: the per-head sink logits (f32 [heads], cuDNN's sink token) joining each row's softmax denominator;
  // "" = none.
  std::string sinks = {};

  bool varlen() const { return !len_q.empty(); }
};

// A GEMM the worker hands to cuBLAS (kind "cublas_gemm": cublasGemmEx, fp32 compute; kind "cublaslt_fp8":
// cublasLtMatmul with e4m3 A and B and the scales of `scaling`) or an attention it hands to cuDNN (kind
// "cudnn_sdpa", `sdpa`), over the launch's own buffers, named here. GEMM matrices are row-major as our kernels see
// them; `layout` says how B is stored:
//   "nt": C[M,N] = A[M,K] * B[N,K]^T   (B stored N x K, K-major: gemm.mma, gemm.wgmma, gemm.fp8)
//   "nn": C[M,N] = A[M,K] * B[K,N]     (gemm.simt)
// FP8 scales (gemm.fp8's): "tensor" (scale_a, scale_b one f32 each), "row" (scale_a [M], scale_b [N]), "block"
// (scale_a [M, K/128] per row and 128 k, scale_b [N/128, K/128] per 128 x 128 block of B; both row-major; with
// `scale_a_mn`, scale_a is M-major, [K/128, M]: gemm.fp8's scale_a_layout=mn).
// The result goes to a buffer of its own (dtype `out`, as large as the kernel's) and is compared with the kernel's
// output (`compared_output()`: `c`, or the attention's O).
struct BaselineSpec {
  std::string kind = "cublas_gemm";
  std::string layout = "nt";
  int M = 0, N = 0, K = 0;
  std::string a = "A", b = "B", c = "C";  // buffer names in the launch
  DType in = DType::bf16, out = DType::bf16;
  std::string scaling = "tensor", scale_a = "scale_A", scale_b = "scale_B";  // cublaslt_fp8
  bool scale_a_mn = false;  // cublaslt_fp8 "block": scale_a stored [K/128, M]
  bool fast_accum = false;  // cublaslt_fp8: CUBLASLT_MATMUL_DESC_FAST_ACCUM (no promotion), as gemm.fp8's fast_accum
  SdpaBaseline sdpa;

  const std::string& compared_output() const {
    return kind != "cudnn_sdpa" ? c : sdpa.backward ? sdpa.dq : sdpa.o;
  }
};

// The library a baseline kind runs in, as `--vs` and the baseline's row name it: "cublas", "cudnn"; "" for an
// unknown kind.
std::string baseline_library(const std::string& kind);
// A library as text names it: "cuBLAS", "cuDNN" (an unknown one as given).
std::string library_title(const std::string& library);

// One tensor of cuDNN's SDPA graph: its dimensions (batch, heads, seq, dim) and strides in elements over our
// [batch, seq, heads, dim] buffers (varlen: [rows, heads, dim], a sequence found by its ragged offsets). Stats (the
// log-sum-exp, f32: written forward, read backward) is [batch, heads, seq_q, 1], packed, as our LSE (varlen backward:
// our [heads, total rows]). In this order: Q, K, V, O, Stats, and for the backward dO, dQ, dK, dV.
struct SdpaTensor {
  std::string name;
  std::vector<std::int64_t> dims, strides;
};
std::vector<SdpaTensor> sdpa_tensors(const SdpaBaseline& p);

// A varlen problem's index tensors for cuDNN (int32): each sequence's lengths, and per tensor of sdpa_tensors its
// ragged offsets (batch + 1 element offsets of each sequence's first row, the last one past the end; empty for a
// tensor without them: the forward's Stats, which cuDNN writes into a buffer of its own, padded).
struct SdpaVarlen {
  std::vector<std::int32_t> seq_len_q, seq_len_kv;
  std::vector<std::vector<std::int32_t>> ragged;
};
SdpaVarlen sdpa_varlen(const SdpaBaseline& p);

// Why cuDNN's SDPA cannot run this problem as TileLab asks it ("" when nothing is known against it before cuDNN
// itself is asked, which may still refuse): the row then reads "cudnn cannot run this: <reason>".
std::string sdpa_refusal(const SdpaBaseline& p);

// What the worker measured for the baseline; `error` set (and the rest empty) when it could not run, e.g. no
// libcublas on this machine, or a shape cuDNN refuses. The kernel's own result stands either way.
struct BaselineResult {
  std::string name;  // "cublas", "cudnn"
  Stats time_ms;
  std::vector<double> times_ms;
  double rel_vs_kernel = 0;  // max |kernel - baseline| / max |baseline| over the whole output
  std::string error;
};

}  // namespace tl
