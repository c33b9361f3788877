// Copy y = x: the bandwidth yardstick the other memory-bound kernels are compared with.
#pragma once

#include "memory/memory_plan.hpp"
#include "tile/float16.hpp"

namespace tl {

// Thread t of block b owns VEC consecutive elements starting at (b * THREADS + t) * VEC, moved as one vector
// access; the last partial vector of the tensor is moved element by element. No shared memory.
template <FlatConfig C>
__global__ void __launch_bounds__(C.threads) copy(const elem_t<C.dtype>* __restrict__ x, elem_t<C.dtype>* __restrict__ y,
                                                  long long n) {
  using T = elem_t<C.dtype>;
  constexpr int VEC = C.vec, THREADS = C.threads;
  long long i = (static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x) * VEC;
  if (i + VEC <= n) {
    *reinterpret_cast<Vec<T, VEC>*>(y + i) = *reinterpret_cast<const Vec<T, VEC>*>(x + i);
  } else {
    for (long long j = i; j < n; ++j) y[j] = x[j];
  }
}

}  // namespace tl
