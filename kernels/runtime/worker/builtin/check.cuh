// Device-side checks of a launch's outputs: count the poison left in an output and gather the sampled positions,
// so a checked run reads back a few hundred KB instead of the whole output (tens of MB for a large GEMM).
#pragma once

#include "runtime/worker/builtin/fill.cuh"

namespace tl::builtin {

__device__ inline unsigned long long load_bits(const void* data, unsigned long long i, unsigned size) {
  switch (size) {
    case 1: return static_cast<const unsigned char*>(data)[i];
    case 2: return static_cast<const unsigned short*>(data)[i];
    case 4: return static_cast<const unsigned int*>(data)[i];
    default: return static_cast<const unsigned long long*>(data)[i];
  }
}

}  // namespace tl::builtin

// Elements of `data` equal to `bits`: result[0] += how many, result[1] = min(result[1], the first one's index).
// The caller sets result to {0, ~0}. Grid-stride; one atomic pair per warp that saw any.
extern "C" __global__ void tl_count_pattern(const void* data, unsigned long long count, unsigned size,
                                            unsigned long long bits, unsigned long long* result) {
  unsigned long long found = 0, first = ~0ull;
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    if (tl::builtin::load_bits(data, i, size) == bits) {
      if (found == 0) first = i;
      ++found;
    }
  }
  for (int d = 16; d > 0; d >>= 1) {
    found += __shfl_down_sync(0xffffffffu, found, d);
    first = min(first, __shfl_down_sync(0xffffffffu, first, d));
  }
  if ((threadIdx.x & 31) == 0 && found > 0) {
    atomicAdd(&result[0], found);
    atomicMin(&result[1], first);
  }
}

// out[j] = data[positions[j]] for j < n, elements of `size` bytes.
extern "C" __global__ void tl_gather(const void* data, const unsigned long long* positions, unsigned long long n,
                                     unsigned size, void* out) {
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
    tl::builtin::store_bits(out, j, size, tl::builtin::load_bits(data, positions[j], size));
  }
}
