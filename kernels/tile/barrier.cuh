// Device toolkit: named barriers (bar.sync / bar.arrive), proxy fences, and compiler fences on registers.
#pragma once

#include "tile/config.hpp"

namespace tl {

// Barrier `id` (1..15; 0 is __syncthreads) over `threads` threads (a multiple of 32): sync waits, arrive does not.
TL_DEVICE_INLINE void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
TL_DEVICE_INLINE void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Generic-proxy writes to shared memory (st.shared) made visible to the async proxy (TMA stores, wgmma reads).
TL_DEVICE_INLINE void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Async-proxy writes to global memory (bulk reduces, TMA stores), completed, ordered before this thread's generic
// accesses (an atomic that publishes them to other CTAs).
TL_DEVICE_INLINE void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;\n" ::: "memory"); }

// Pins registers at this point of the program: the compiler must neither read accumulators of an in-flight wgmma
// nor move their updates across the wait that completes it (the asm of the wait names no registers).
template <int N>
TL_DEVICE_INLINE void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
TL_DEVICE_INLINE void fence_regs(unsigned (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

// x, which the caller knows to be equal in all 32 lanes (all of them active), as a value ptxas can prove warp-uniform:
// redux.sync writes a uniform register, so what is computed from it alone (descriptors, ring stages) can stay in the
// uniform datapath (UIADD3 / ULOP3 beside the vector pipes) instead of being computed per thread and moved over by
// R2UR before each instruction that takes a uniform operand (wgmma's descriptors).
TL_DEVICE_INLINE unsigned warp_uniform(unsigned x) {
  unsigned r;
  asm("redux.sync.or.b32 %0, %1, 0xffffffff;\n" : "=r"(r) : "r"(x));
  return r;
}

}  // namespace tl
