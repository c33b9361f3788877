// RMSNorm y = x / sqrt(mean(x^2) + eps) * w over each row, float arithmetic.
#pragma once

#include "memory/memory_plan.hpp"
#include "tile/float16.hpp"
#include "tile/reduce.hpp"

namespace tl {

// A block of THREADS threads handles ROWS consecutive rows; row r of the block gets the THREADS / ROWS threads
// [r * TPR, (r + 1) * TPR) (whole warps). Within a row, thread j reads the VEC-element vectors j, j + TPR, ...
// (coalesced across the row's threads), once to sum squares and once to write. Shared memory: ROWS x WARPS_PER_ROW
// floats for the cross-warp sum. Requires cols % VEC == 0 (checked by can_implement).
template <RowsConfig C>
__global__ void __launch_bounds__(C.threads) rmsnorm(const elem_t<C.dtype>* __restrict__ x,
                                                     const elem_t<C.dtype>* __restrict__ w, elem_t<C.dtype>* __restrict__ y,
                                                     int rows, int cols, float eps) {
  static_assert(C.cached == 0, "rmsnorm reads its rows twice: cached must be 0");
  using T = elem_t<C.dtype>;
  constexpr int VEC = C.vec, THREADS = C.threads, ROWS = C.rows_per_block;
  constexpr int TPR = THREADS / ROWS;
  constexpr int WARPS_PER_ROW = TPR / 32;
  __shared__ float scratch[ROWS][WARPS_PER_ROW];
  const int r_local = threadIdx.x / TPR;
  const int j = threadIdx.x % TPR;
  const int row = blockIdx.x * ROWS + r_local;
  const bool active = row < rows;  // inactive threads still take part in the block's __syncthreads
  const T* xr = x + static_cast<long long>(active ? row : 0) * cols;
  T* yr = y + static_cast<long long>(active ? row : 0) * cols;

  float ss = 0.f;
  if (active) {
    for (int c = j * VEC; c < cols; c += TPR * VEC) {
      Vec<T, VEC> v = *reinterpret_cast<const Vec<T, VEC>*>(xr + c);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        float f = to_float(v.v[k]);
        ss += f * f;
      }
    }
  }
  ss = group_allreduce<WARPS_PER_ROW>(ss, SumOp{}, scratch[r_local], (j / 32), threadIdx.x % 32);
  const float inv = rsqrtf(ss / static_cast<float>(cols) + eps);
  if (!active) return;
  for (int c = j * VEC; c < cols; c += TPR * VEC) {
    Vec<T, VEC> v = *reinterpret_cast<const Vec<T, VEC>*>(xr + c);
    Vec<T, VEC> g = *reinterpret_cast<const Vec<T, VEC>*>(w + c);
    Vec<T, VEC> o;
#pragma unroll
    for (int k = 0; k < VEC; ++k) o.v[k] = from_float<T>(to_float(v.v[k]) * inv * to_float(g.v[k]));
    *reinterpret_cast<Vec<T, VEC>*>(yr + c) = o;
  }
}

}  // namespace tl
