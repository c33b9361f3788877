// Kernels that fail on purpose, to prove the worker reports a fault and a hang and carries on.
#pragma once

#include "test/fault_plan.hpp"

namespace tl {

// Every thread writes 1 TiB past its element of `out`, far outside any allocation: an illegal-address fault.
template <FaultConfig C>
__global__ void __launch_bounds__(C.threads) test_oob(float* out, long long n) {
  long long i = static_cast<long long>(blockIdx.x) * C.threads + threadIdx.x;
  if (i < n) out[i + (1ll << 38)] = 1.f;
}

// Spins until flag[0] becomes non-zero, which nothing ever does: a launch that never ends. The volatile read
// keeps the loop from being a side-effect-free infinite loop the compiler may delete.
template <FaultConfig C>
__global__ void __launch_bounds__(C.threads) test_spin(const int* flag, float* out) {
  long long spins = 0;
  while (*static_cast<const volatile int*>(flag) == 0) ++spins;
  out[threadIdx.x] = static_cast<float>(spins);
}

}  // namespace tl
