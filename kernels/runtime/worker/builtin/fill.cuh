// Device fills for the launch path: seeded uniform inputs and FP8 KV caches (bit-identical to the host's), poison.
#pragma once

#include "runtime/core/numeric.hpp"

namespace tl::builtin {

__device__ inline void store_bits(void* data, unsigned long long i, unsigned size, unsigned long long bits) {
  switch (size) {
    case 1: static_cast<unsigned char*>(data)[i] = static_cast<unsigned char>(bits); break;
    case 2: static_cast<unsigned short*>(data)[i] = static_cast<unsigned short>(bits); break;
    case 4: static_cast<unsigned int*>(data)[i] = static_cast<unsigned int>(bits); break;
    default: static_cast<unsigned long long*>(data)[i] = bits; break;
  }
}

__device__ inline unsigned dtype_bytes(int dtype) {
  switch (dtype) {
    case num::f16:
    case num::bf16: return 2;
    case num::f64:
    case num::i64:
    case num::u64: return 8;
    case num::i8:
    case num::u8:
    case num::e4m3:
    case num::e5m2: return 1;
    default: return 4;
  }
}

}  // namespace tl::builtin

// Grid-stride: thread t of the grid writes elements t, t + gridsize, ...; each value depends only on (seed, index).
// tile_rows > 0: the tensor stores a rows x cols matrix in tiles, element i the matrix's tiled_source(i) (0: padding).
extern "C" __global__ void tl_fill_uniform(void* data, unsigned long long count, int dtype, unsigned long long seed,
                                           double lo, double hi, long long rows, long long cols, long long tile_rows,
                                           long long tile_cols) {
  unsigned size = tl::builtin::dtype_bytes(dtype);
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
    tl::builtin::store_bits(data, i, size, tl::num::uniform_fill_bits(dtype, seed, i, lo, hi, rows, cols, tile_rows, tile_cols));
}

// Bytes of an FP8 KV cache in DeepSeek V3.2's row format (numeric.hpp, kv_fp8_byte), one byte per thread and step.
extern "C" __global__ void tl_fill_kv_fp8(unsigned char* data, unsigned long long count, unsigned long long seed,
                                          double lo, double hi) {
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
    data[i] = tl::num::kv_fp8_byte(seed, i, lo, hi);
}

// Every element gets the same `size`-byte pattern (poison, or a constant's bits).
extern "C" __global__ void tl_fill_pattern(void* data, unsigned long long count, unsigned size,
                                           unsigned long long bits) {
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
    tl::builtin::store_bits(data, i, size, bits);
}
