// Row softmax y = exp(x - max) / sum(exp(x - max)), float arithmetic, online max/sum in one read pass.
#pragma once

#include "tile/float16.hpp"
#include "tile/reduce.hpp"

namespace tl {

// Same thread/row mapping as rmsnorm: ROWS rows per block, TPR = THREADS / ROWS threads (whole warps) per row,
// thread j visits the row's vectors j, j + TPR, ... Pass 1 keeps a running (max, sum of exp) per thread, rescaling
// the sum when the max grows; the row's max is reduced first, then each thread's sum is rescaled to it and summed.
// Pass 2 re-reads x and writes y. Shared memory: ROWS x WARPS_PER_ROW floats, reused for both reductions.
template <class T, int VEC, int THREADS, int ROWS>
__global__ void __launch_bounds__(THREADS) softmax(const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
  constexpr int TPR = THREADS / ROWS;
  constexpr int WARPS_PER_ROW = TPR / 32;
  __shared__ float scratch[ROWS][WARPS_PER_ROW];
  const int r_local = threadIdx.x / TPR;
  const int j = threadIdx.x % TPR;
  const int row = blockIdx.x * ROWS + r_local;
  const bool active = row < rows;
  const T* xr = x + static_cast<long long>(active ? row : 0) * cols;
  T* yr = y + static_cast<long long>(active ? row : 0) * cols;

  float m = -__int_as_float(0x7f800000);  // -inf
  float s = 0.f;
  if (active) {
    for (int c = j * VEC; c < cols; c += TPR * VEC) {
      Vec<T, VEC> v = *reinterpret_cast<const Vec<T, VEC>*>(xr + c);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        float f = to_float(v.v[k]);
        if (f > m) {
          s *= expf(m - f);
          m = f;
        }
        s += expf(f - m);
      }
    }
  }
  const float row_max = group_allreduce<WARPS_PER_ROW>(m, MaxOp{}, scratch[r_local], j / 32, threadIdx.x % 32);
  const float scaled = (s == 0.f) ? 0.f : s * expf(m - row_max);
  const float row_sum = group_allreduce<WARPS_PER_ROW>(scaled, SumOp{}, scratch[r_local], j / 32, threadIdx.x % 32);
  if (!active) return;
  const float inv = 1.f / row_sum;
  for (int c = j * VEC; c < cols; c += TPR * VEC) {
    Vec<T, VEC> v = *reinterpret_cast<const Vec<T, VEC>*>(xr + c);
    Vec<T, VEC> o;
#pragma unroll
    for (int k = 0; k < VEC; ++k) o.v[k] = from_float<T>(expf(to_float(v.v[k]) - row_max) * inv);
    *reinterpret_cast<Vec<T, VEC>*>(yr + c) = o;
  }
}

}  // namespace tl
