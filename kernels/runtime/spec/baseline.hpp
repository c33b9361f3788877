// A vendor-library run of the same problem on the same device buffers as a kernel: what `bench --vs cublas` times.
#pragma once

#include <string>

#include "runtime/core/check.hpp"
#include "runtime/core/dtype.hpp"

namespace tl {

// A GEMM the worker hands to cuBLAS (cublasGemmEx, fp32 compute) over the launch's own buffers, named here.
// Every matrix is row-major as our kernels see it; `layout` says how B is stored:
//   "nt": C[M,N] = A[M,K] * B[N,K]^T   (B stored N x K, K-major: gemm.mma, gemm.wgmma)
//   "nn": C[M,N] = A[M,K] * B[K,N]     (gemm.simt)
// The result goes to a buffer of its own (dtype `out`, M*N elements) and is compared with the kernel's `c`.
struct BaselineSpec {
  std::string kind = "cublas_gemm";
  std::string layout = "nt";
  int M = 0, N = 0, K = 0;
  std::string a = "A", b = "B", c = "C";  // buffer names in the launch
  DType in = DType::bf16, out = DType::bf16;
};

// What the worker measured for the baseline; `error` set (and the rest empty) when it could not run, e.g. no
// libcublas on this machine. The kernel's own result stands either way.
struct BaselineResult {
  std::string name;  // "cublas"
  Stats time_ms;
  std::vector<double> times_ms;
  double rel_vs_kernel = 0;  // max |kernel - baseline| / max |baseline| over the whole output
  std::string error;
};

}  // namespace tl
