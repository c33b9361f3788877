// Device toolkit: global-memory accesses with explicit ordering or caching (acquire/relaxed loads, prefetches).
#pragma once

#include "tile/config.hpp"

namespace tl {

// Loads that order against other CTAs' writes at GPU scope (a counter that says partial results are published).
TL_DEVICE_INLINE int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
TL_DEVICE_INLINE int ld_relaxed_gpu(const int* p) {
  int v;
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// An atomic add at GPU scope with release semantics, returning the old value: the thread's earlier memory accesses
// (PTX memory model: those before it in program order, and through a proxy fence its completed async-proxy writes)
// are visible to a thread whose acquire pattern (an acquire load or RMW, or a strong read then a fence) reads this add
// or a later one of the same counter (a release sequence). No fence.sc.gpu (__threadfence) before it.
TL_DEVICE_INLINE int atom_add_release_gpu(int* p, int v) {
  int old;
  asm volatile("atom.release.gpu.global.add.s32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

// Two floats in one 8-byte store (p 8-byte aligned).
TL_DEVICE_INLINE void st_global_v2_f32(float* p, float lo, float hi) {
  asm volatile("st.global.v2.f32 [%0], {%1, %2};\n" ::"l"(p), "f"(lo), "f"(hi) : "memory");
}

// A 16-byte load of data read once (streamed weights), not kept in L1; L2_256: the L2 also fetches the 256 bytes
// around it (later loads of the same row then hit the L2).
template <bool L2_256 = false>
TL_DEVICE_INLINE uint4 ld_global_stream_v4(const void* p) {
  uint4 v;
  if constexpr (L2_256)
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  else
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  return v;
}

// Hints: bring the line holding p into L1 / L2; neither waits nor holds a register.
TL_DEVICE_INLINE void prefetch_l1(const void* p) { asm volatile("prefetch.global.L1 [%0];\n" ::"l"(p) : "memory"); }
TL_DEVICE_INLINE void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p) : "memory"); }
// A bulk prefetch of `bytes` (a multiple of 16, 16-byte aligned) into L2 by the copy engine (sm_90).
TL_DEVICE_INLINE void bulk_prefetch_l2(const void* p, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes) : "memory");
}

}  // namespace tl
