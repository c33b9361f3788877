// Row softmax y = exp(x - max) / sum(exp(x - max)), float arithmetic, online max/sum in one read pass.
#pragma once

#include "memory/memory_plan.hpp"
#include "tile/float16.hpp"
#include "tile/reduce.hpp"

namespace tl {

// Same thread/row mapping as rmsnorm: ROWS rows per block, TPR = THREADS / ROWS threads (whole warps) per row,
// thread j visits the row's vectors j, j + TPR, ... Shared memory: ROWS x WARPS_PER_ROW floats, reused for both
// reductions.
//
// CACHED > 0 (rows of at most CACHED * TPR * VEC elements; the host picks CACHED <= 16): one read. Each thread keeps its CACHED vectors in
// registers, the row's max is reduced, each element becomes exp(x - max) in place (one exp per element), the sums are
// reduced and the scaled values written. CACHED = 0 (longer rows): two reads. Pass 1 keeps a running (max, sum of
// exp) per thread, rescaling the sum when the max grows; pass 2 re-reads x and writes y.
// exp(x) is computed as exp2(x * log2 e): one multiply and the hardware ex2.
template <RowsConfig C>
__global__ void __launch_bounds__(C.threads) softmax(const elem_t<C.dtype>* __restrict__ x, elem_t<C.dtype>* __restrict__ y,
                                                     int rows, int cols) {
  using T = elem_t<C.dtype>;
  constexpr int VEC = C.vec, THREADS = C.threads, ROWS = C.rows_per_block, CACHED = C.cached;
  constexpr int TPR = THREADS / ROWS;
  constexpr int WARPS_PER_ROW = TPR / 32;
  constexpr float kLog2e = 1.4426950408889634f;
  __shared__ float scratch[ROWS][WARPS_PER_ROW];
  const int r_local = threadIdx.x / TPR;
  const int j = threadIdx.x % TPR;
  const int row = blockIdx.x * ROWS + r_local;
  const bool active = row < rows;
  const T* xr = x + static_cast<long long>(active ? row : 0) * cols;
  T* yr = y + static_cast<long long>(active ? row : 0) * cols;
  const float neg_inf = -__int_as_float(0x7f800000);

  if constexpr (CACHED > 0) {
    float v[CACHED][VEC];
    float m = neg_inf;
#pragma unroll
    for (int i = 0; i < CACHED; ++i) {
      const int c = (j + i * TPR) * VEC;
      if (active && c < cols) {
        Vec<T, VEC> in = *reinterpret_cast<const Vec<T, VEC>*>(xr + c);
#pragma unroll
        for (int k = 0; k < VEC; ++k) m = fmaxf(m, v[i][k] = to_float(in.v[k]));
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) v[i][k] = neg_inf;  // exp2(-inf) = 0: adds nothing to the sum
      }
    }
    const float row_max = group_allreduce<WARPS_PER_ROW>(m, MaxOp{}, scratch[r_local], j / 32, threadIdx.x % 32);
    const float shift = row_max == neg_inf ? 0.f : row_max * kLog2e;  // no elements: avoid -inf - (-inf) = NaN
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < CACHED; ++i)
#pragma unroll
      for (int k = 0; k < VEC; ++k) s += (v[i][k] = exp2f(fmaf(v[i][k], kLog2e, -shift)));
    const float row_sum = group_allreduce<WARPS_PER_ROW>(s, SumOp{}, scratch[r_local], j / 32, threadIdx.x % 32);
    if (!active) return;
    const float inv = 1.f / row_sum;
#pragma unroll
    for (int i = 0; i < CACHED; ++i) {
      const int c = (j + i * TPR) * VEC;
      if (c < cols) {
        Vec<T, VEC> o;
#pragma unroll
        for (int k = 0; k < VEC; ++k) o.v[k] = from_float<T>(v[i][k] * inv);
        *reinterpret_cast<Vec<T, VEC>*>(yr + c) = o;
      }
    }
  } else {
    float m = neg_inf;
    float s = 0.f;
    if (active) {
      for (int c = j * VEC; c < cols; c += TPR * VEC) {
        Vec<T, VEC> v = *reinterpret_cast<const Vec<T, VEC>*>(xr + c);
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          float f = to_float(v.v[k]);
          if (f > m) {
            s *= exp2f((m - f) * kLog2e);
            m = f;
          }
          s += exp2f((f - m) * kLog2e);
        }
      }
    }
    const float row_max = group_allreduce<WARPS_PER_ROW>(m, MaxOp{}, scratch[r_local], j / 32, threadIdx.x % 32);
    const float scaled = (s == 0.f) ? 0.f : s * exp2f((m - row_max) * kLog2e);
    const float row_sum = group_allreduce<WARPS_PER_ROW>(scaled, SumOp{}, scratch[r_local], j / 32, threadIdx.x % 32);
    if (!active) return;
    const float inv = 1.f / row_sum;
    for (int c = j * VEC; c < cols; c += TPR * VEC) {
      Vec<T, VEC> v = *reinterpret_cast<const Vec<T, VEC>*>(xr + c);
      Vec<T, VEC> o;
#pragma unroll
      for (int k = 0; k < VEC; ++k) o.v[k] = from_float<T>(exp2f((to_float(v.v[k]) - row_max) * kLog2e) * inv);
      *reinterpret_cast<Vec<T, VEC>*>(yr + c) = o;
    }
  }
}

}  // namespace tl
