// Tiled SIMT GEMM C = A * B (A row-major M x K, B row-major K x N, C row-major M x N float), fp32 accumulate.
#pragma once

#include "tile/float16.hpp"

namespace tl {

// Block (bx, by) computes the BLOCK_M x BLOCK_N tile of C at rows by * BLOCK_M, columns bx * BLOCK_N, stepping
// through K by BLOCK_K. Its THREADS = (BLOCK_M / THREAD_M) * (BLOCK_N / THREAD_N) threads are a grid of
// (BLOCK_M / THREAD_M) rows by (BLOCK_N / THREAD_N) columns; thread (ty, tx) owns the THREAD_M x THREAD_N
// sub-tile at rows ty * THREAD_M, columns tx * THREAD_N of the block tile, accumulated in registers.
//
// Shared memory (dynamic, floats): As[BLOCK_K][BLOCK_M] holds the A tile transposed (k-major) so a thread's
// THREAD_M values for one k are contiguous, then Bs[BLOCK_K][BLOCK_N]. Loads convert to float once. Every thread
// loads elements tid, tid + THREADS, ... of each tile in row-major order of the global tile (consecutive threads
// read consecutive addresses along K for A and along N for B); elements past M, N or K load as 0, and only
// in-range elements of C are stored, so any M, N, K works.
template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int THREAD_M, int THREAD_N, class TIn>
__global__ void __launch_bounds__((BLOCK_M / THREAD_M) * (BLOCK_N / THREAD_N))
    gemm_simt(const TIn* __restrict__ A, const TIn* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  constexpr int TX = BLOCK_N / THREAD_N;
  constexpr int THREADS = (BLOCK_M / THREAD_M) * TX;
  extern __shared__ __align__(16) float smem[];
  float* As = smem;                      // [BLOCK_K][BLOCK_M]
  float* Bs = smem + BLOCK_K * BLOCK_M;  // [BLOCK_K][BLOCK_N]

  const int tid = threadIdx.x;
  const int tx = tid % TX, ty = tid / TX;
  const int row0 = blockIdx.y * BLOCK_M, col0 = blockIdx.x * BLOCK_N;

  float acc[THREAD_M][THREAD_N];
#pragma unroll
  for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
    for (int j = 0; j < THREAD_N; ++j) acc[i][j] = 0.f;

  for (int k0 = 0; k0 < K; k0 += BLOCK_K) {
    for (int e = tid; e < BLOCK_M * BLOCK_K; e += THREADS) {
      const int r = e / BLOCK_K, k = e % BLOCK_K;
      const int gr = row0 + r, gk = k0 + k;
      As[k * BLOCK_M + r] = (gr < M && gk < K) ? to_float(A[static_cast<long long>(gr) * K + gk]) : 0.f;
    }
    for (int e = tid; e < BLOCK_K * BLOCK_N; e += THREADS) {
      const int k = e / BLOCK_N, c = e % BLOCK_N;
      const int gk = k0 + k, gc = col0 + c;
      Bs[k * BLOCK_N + c] = (gk < K && gc < N) ? to_float(B[static_cast<long long>(gk) * N + gc]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BLOCK_K; ++k) {
      float a[THREAD_M], b[THREAD_N];
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i) a[i] = As[k * BLOCK_M + ty * THREAD_M + i];
#pragma unroll
      for (int j = 0; j < THREAD_N; ++j) b[j] = Bs[k * BLOCK_N + tx * THREAD_N + j];
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // the next iteration overwrites the tiles
  }

#pragma unroll
  for (int i = 0; i < THREAD_M; ++i) {
    const int gr = row0 + ty * THREAD_M + i;
    if (gr >= M) continue;
#pragma unroll
    for (int j = 0; j < THREAD_N; ++j) {
      const int gc = col0 + tx * THREAD_N + j;
      if (gc < N) C[static_cast<long long>(gr) * N + gc] = acc[i][j];
    }
  }
}

}  // namespace tl
