// Elementwise out = a * x + b * y in float arithmetic, stored in the tensors' type.
#pragma once

#include "memory/memory_plan.hpp"
#include "tile/float16.hpp"

namespace tl {

// Thread t of block b owns VEC consecutive elements starting at (b * THREADS + t) * VEC (one vector load of x,
// one of y, one vector store); the tail of the tensor is done element by element. No shared memory.
template <FlatConfig C>
__global__ void __launch_bounds__(C.threads) elementwise(const elem_t<C.dtype>* __restrict__ x,
                                                         const elem_t<C.dtype>* __restrict__ y,
                                                         elem_t<C.dtype>* __restrict__ out, float a, float b, long long n) {
  using T = elem_t<C.dtype>;
  constexpr int VEC = C.vec, THREADS = C.threads;
  long long i = (static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x) * VEC;
  if (i + VEC <= n) {
    Vec<T, VEC> vx = *reinterpret_cast<const Vec<T, VEC>*>(x + i);
    Vec<T, VEC> vy = *reinterpret_cast<const Vec<T, VEC>*>(y + i);
    Vec<T, VEC> vo;
#pragma unroll
    for (int k = 0; k < VEC; ++k) vo.v[k] = from_float<T>(a * to_float(vx.v[k]) + b * to_float(vy.v[k]));
    *reinterpret_cast<Vec<T, VEC>*>(out + i) = vo;
  } else {
    for (long long j = i; j < n; ++j) out[j] = from_float<T>(a * to_float(x[j]) + b * to_float(y[j]));
  }
}

}  // namespace tl
