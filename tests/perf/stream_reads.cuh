// What the standalone read benchmarks (gemv_loads.cu, read_ceiling.cu) share: a CUDA-call check that prints the error
// and returns 1 from main, a 16-byte streaming load that skips the L1, and the fold that keeps loaded words alive.
#pragma once
#include <cuda_runtime.h>

#include <cstdio>

#define CK(x)                                                \
  do {                                                       \
    cudaError_t e_ = (x);                                    \
    if (e_ != cudaSuccess) {                                 \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e_));  \
      return 1;                                              \
    }                                                        \
  } while (0)

__device__ __forceinline__ uint4 ld_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ unsigned fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }
