// Micro-benchmarks behind the device ceilings: HBM copy, L2 and shared-memory reads, FP32 FMA, mma.sync rates
// (the wgmma rates are in hopper.cu).
#pragma once

#include "tile/mma_sync.cuh"

// Each kernel keeps its result alive through a store guarded by a condition that never holds, so the compiler
// must do all the work but the benchmark writes (almost) nothing besides what it measures.

// HBM: thread t of the grid copies float4 elements t, t + G, t + 2G, ... (G = grid size), four in flight.
extern "C" __global__ void tl_bench_copy(const float4* __restrict__ src, float4* __restrict__ dst,
                                         unsigned long long n) {
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

// HBM, second pattern: thread t copies float4 element t, one grid of n threads (a plain streaming kernel; on the
// H100 it moves more than the grid-stride loop). The HBM ceiling is the better of the two patterns.
extern "C" __global__ void tl_bench_copy_flat(const float4* __restrict__ src, float4* __restrict__ dst,
                                              unsigned long long n) {
  unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}

// L2: the whole grid re-reads a working set that fits in L2, `passes` times, bypassing L1 (ld.global.cg).
extern "C" __global__ void tl_bench_l2_read(const float4* __restrict__ src, unsigned long long n, int passes,
                                            float* sink) {
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int p = 0; p < passes; ++p) {
#pragma unroll 4
    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
      float4 v = __ldcg(src + i);
      acc.x += v.x;
      acc.y += v.y;
      acc.z += v.z;
      acc.w += v.w;
    }
  }
  if (acc.x + acc.y + acc.z + acc.w == -1.2345f) sink[0] = acc.x;
}

// Shared memory: each warp reads 32 consecutive float4 (512 B, conflict-free) per load, eight loads per
// iteration at a window that moves every iteration, so no load can be hoisted. Block of 256 threads.
extern "C" __global__ void tl_bench_smem(int iters, float* sink) {
  __shared__ float4 buf[1024 + 256];
  for (int i = threadIdx.x; i < 1024 + 256; i += blockDim.x)
    buf[i] = make_float4(i * 1e-3f, i * 2e-3f, i * 3e-3f, i * 4e-3f);
  __syncthreads();
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  unsigned tid = threadIdx.x;
  for (int it = 0; it < iters; ++it) {
    unsigned base = (tid + static_cast<unsigned>(it) * 32u) & 1023u;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float4 v = buf[base + j * 32];
      acc.x += v.x;
      acc.y += v.y;
      acc.z += v.z;
      acc.w += v.w;
    }
  }
  if (acc.x + acc.y + acc.z + acc.w == -1.2345f) sink[threadIdx.x] = acc.x;
}

// FP32: eight independent FMA chains per thread.
extern "C" __global__ void tl_bench_fma(int iters, float b, float c, float* sink) {
  float x[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) x[j] = threadIdx.x * 1e-3f + j;
#pragma unroll 4
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = fmaf(x[j], b, c);
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += x[j];
  if (s == -1.2345f) sink[threadIdx.x] = s;
}

// Tensor cores through mma.sync: each warp keeps kChains independent accumulator tiles and issues one MMA to
// each per iteration. Operands are constants (2^-7 in bf16/f16, 2^-3 in e4m3) so the sums stay finite.
namespace tl::builtin {
constexpr int kChains = 8;

__device__ inline void mma_bf16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { mma_16816<true>(c, a, b); }
__device__ inline void mma_f16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { mma_16816<false>(c, a, b); }
__device__ inline void mma_e4m3(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  mma_16832_e4m3(c, a, b);
#else
  __trap();  // the host only launches this on sm_89 and newer
#endif
}

template <void (*Mma)(float (&)[4], const unsigned (&)[4], const unsigned (&)[2])>
__device__ inline void mma_chains(int iters, unsigned operand, float* sink) {
  unsigned a[4] = {operand, operand, operand, operand};
  unsigned b[2] = {operand, operand};
  float c[kChains][4];
#pragma unroll
  for (int j = 0; j < kChains; ++j) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < kChains; ++j) Mma(c[j], a, b);
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kChains; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  if (s == -1.2345f) sink[threadIdx.x] = s;
}
}  // namespace tl::builtin

extern "C" __global__ void tl_bench_mma_bf16(int iters, float* sink) {
  tl::builtin::mma_chains<tl::builtin::mma_bf16>(iters, 0x3C003C00u, sink);
}
extern "C" __global__ void tl_bench_mma_f16(int iters, float* sink) {
  tl::builtin::mma_chains<tl::builtin::mma_f16>(iters, 0x20002000u, sink);
}
extern "C" __global__ void tl_bench_mma_e4m3(int iters, float* sink) {
  tl::builtin::mma_chains<tl::builtin::mma_e4m3>(iters, 0x20202020u, sink);
}
