// Device helpers the GEMM kernels share: shared-memory addresses, 16-bit packing, the predicated C store.
#pragma once

#include "tile/config.hpp"

#ifndef TL_DEVICE_INLINE
#define TL_DEVICE_INLINE __device__ __forceinline__
#endif

namespace tl {
namespace gemm_detail {

TL_DEVICE_INLINE unsigned smem_u32(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// Two fp32 values -> packed 16-bit pair, `lo` in the low half (the lower column).
template <bool BF16>
TL_DEVICE_INLINE unsigned pack2(float lo, float hi) {
  unsigned r;
  if constexpr (BF16) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  }
  return r;
}

// Stores the packed pair `v` at C[row, col..col+1] of a row-major M x N matrix, dropping what is out of
// bounds; one 4-byte store when the pair is whole and aligned (N even), else element by element.
TL_DEVICE_INLINE void store_pair(unsigned short* C, int row, int col, int M, int N, unsigned v) {
  if (row >= M || col >= N) return;
  unsigned short* dst = C + static_cast<long long>(row) * N + col;
  if (col + 1 < N && (N % 2) == 0) {
    *reinterpret_cast<unsigned*>(dst) = v;
  } else {
    dst[0] = static_cast<unsigned short>(v & 0xFFFFu);
    if (col + 1 < N) dst[1] = static_cast<unsigned short>(v >> 16);
  }
}

}  // namespace gemm_detail
}  // namespace tl
