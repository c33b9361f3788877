// Tiled SIMT GEMM C = A * B (A row-major M x K, B row-major K x N, C row-major M x N float), fp32 accumulate.
#pragma once

#include "gemm/gemm_simt_plan.hpp"
#include "tile/fixed.hpp"
#include "tile/float16.hpp"

namespace tl {
namespace simt_detail {
template <GemmSimtInput T> struct Input { using type = float; };
template <> struct Input<GemmSimtInput::f16> { using type = half_t; };
template <> struct Input<GemmSimtInput::bf16> { using type = bfloat16_t; };
}  // namespace simt_detail

// Block (bx, by) computes the block_M x block_N tile of C at rows by * block_M, columns bx * block_N, stepping
// through K by block_K. Its threads (the plan's thread_C) each own a thread_M x thread_N sub-tile, accumulated in
// registers: thread t = tx + (block_N / thread_N) * ty at rows ty * thread_M, columns tx * thread_N.
//
// Shared memory (dynamic, floats; the plan's smem_A and smem_B): the A tile transposed (k-major) so a thread's
// thread_M values for one k are contiguous, then the B tile row-major. Loads convert to float once. Every thread
// loads elements tid, tid + THREADS, ... of each tile in row-major order of the global tile (consecutive threads
// read consecutive addresses along K for A and along N for B); elements past M, N or K load as 0, and only
// in-range elements of C are stored, so any M, N, K works.
template <GemmSimtConfig CFG>
__global__ void __launch_bounds__((CFG.block_M / CFG.thread_M) * (CFG.block_N / CFG.thread_N))
    gemm_simt(const typename simt_detail::Input<CFG.dtype>::type* __restrict__ A,
              const typename simt_detail::Input<CFG.dtype>::type* __restrict__ B, float* __restrict__ C, int M, int N,
              int K) {
  constexpr GemmSimtPlan P = make_plan(CFG);
  constexpr auto tile_A = fixed<P.smem_A>();
  constexpr auto tile_B = fixed<P.smem_B>();
  constexpr int BLOCK_M = CFG.block_M, BLOCK_N = CFG.block_N, BLOCK_K = CFG.block_K;
  constexpr int THREAD_M = CFG.thread_M, THREAD_N = CFG.thread_N;
  constexpr int THREADS = P.threads;
  extern __shared__ __align__(16) float smem[];
  float* As = smem;
  float* Bs = smem + P.b_offset;

  const int tid = threadIdx.x;
  const TileCoord mine = fixed<P.thread_C>()(tid, 0);  // the thread's first element; value j + THREAD_N * i is it + (i, j)
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
      As[tile_A(r, k)] = (gr < M && gk < K) ? to_float(A[static_cast<long long>(gr) * K + gk]) : 0.f;
    }
    for (int e = tid; e < BLOCK_K * BLOCK_N; e += THREADS) {
      const int k = e / BLOCK_N, c = e % BLOCK_N;
      const int gk = k0 + k, gc = col0 + c;
      Bs[tile_B(k, c)] = (gk < K && gc < N) ? to_float(B[static_cast<long long>(gk) * N + gc]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BLOCK_K; ++k) {
      float a[THREAD_M], b[THREAD_N];
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i) a[i] = As[tile_A(mine.row + i, k)];
#pragma unroll
      for (int j = 0; j < THREAD_N; ++j) b[j] = Bs[tile_B(k, mine.col + j)];
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // the next iteration overwrites the tiles
  }

#pragma unroll
  for (int i = 0; i < THREAD_M; ++i) {
    const int gr = row0 + mine.row + i;
    if (gr >= M) continue;
#pragma unroll
    for (int j = 0; j < THREAD_N; ++j) {
      const int gc = col0 + mine.col + j;
      if (gc < N) C[static_cast<long long>(gr) * N + gc] = acc[i][j];
    }
  }
}

}  // namespace tl
