// Device helpers the GEMM kernels share: the predicated C stores (the output types are in gemm_types.hpp).
#pragma once

#include "gemm/gemm_types.hpp"
#include "tile/config.hpp"
#include "tile/convert.cuh"
#include "tile/global.cuh"

namespace tl {
namespace gemm_detail {

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

// Stores the fp32 accumulator pair (lo, hi) at C[row, col..col+1] of a row-major M x N matrix of C_TYPE, dropping
// what is out of bounds; `col` is even, so with N even the pair is one aligned 4- or 8-byte store.
template <int C_TYPE>
TL_DEVICE_INLINE void store_acc_pair(void* C, int row, int col, int M, int N, float lo, float hi) {
  if constexpr (C_TYPE == kOutF32) {
    if (row >= M || col >= N) return;
    float* dst = static_cast<float*>(C) + static_cast<long long>(row) * N + col;
    if (col + 1 < N && (N % 2) == 0) {
      st_global_v2_f32(dst, lo, hi);
    } else {
      dst[0] = lo;
      if (col + 1 < N) dst[1] = hi;
    }
  } else {
    store_pair(static_cast<unsigned short*>(C), row, col, M, N, pack2<C_TYPE == kOutBf16>(lo, hi));
  }
}

}  // namespace gemm_detail
}  // namespace tl
