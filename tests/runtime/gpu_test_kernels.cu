// Kernels for the GPU tests of the launch path: correct, partial, faulting, spinning, big-smem, cluster, tensor map.
#include <cuda.h>

#include "runtime/core/numeric.hpp"

// One thread per element; the tail block's extra threads do nothing.
extern "C" __global__ void test_axpy(const float* x, const float* y, float* out, float a, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

// Writes only even elements: the poison check must find the odd ones.
extern "C" __global__ void test_even_only(float* out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && i % 2 == 0) out[i] = 1.0f;
}

// Grid-stride byte copy: shows the device fill's bytes to the host unchanged.
extern "C" __global__ void test_copy_bytes(const unsigned char* in, unsigned char* out, unsigned long long n) {
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = in[i];
}

// bf16 in and out, doubled (exact in bf16 unless it overflows).
extern "C" __global__ void test_scale_bf16(const unsigned short* x, unsigned short* out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tl::num::float_to_bf16(2.0f * tl::num::bf16_to_float(x[i]));
}

// A store 256 GiB past the buffer: an illegal address.
extern "C" __global__ void test_oob(float* p) {
  if (threadIdx.x == 0) *(volatile float*)(p + (1ull << 36)) = 1.0f;
}

extern "C" __global__ void test_trap(float* p) {
  if (threadIdx.x == 0) __trap();
  p[threadIdx.x] = 0.0f;
}

// Spins until *flag becomes non-zero, which nobody does: the watchdog has to end it.
extern "C" __global__ void test_spin(const int* flag) {
  while (*(volatile const int*)flag == 0) {
  }
}

// One block; `words` floats of dynamic shared memory written, then read back in reverse order.
extern "C" __global__ void test_big_smem(float* out, unsigned words) {
  extern __shared__ float s[];
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) s[i] = static_cast<float>(i);
  __syncthreads();
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) out[i] = s[words - 1 - i];
}

// Each block writes its rank within its cluster (sm_90+).
extern "C" __global__ void test_cluster_rank(unsigned* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  if (threadIdx.x == 0) out[blockIdx.x] = r;
#else
  if (threadIdx.x == 0) out[blockIdx.x] = 0xFFFFFFFFu;
#endif
}

// Copies the 128-byte descriptor it was given, to show it arrived as a __grid_constant__ parameter.
extern "C" __global__ void test_tensor_map_bytes(const __grid_constant__ CUtensorMap map, unsigned* out) {
  if (threadIdx.x < 32) out[threadIdx.x] = reinterpret_cast<const unsigned*>(&map)[threadIdx.x];
}
