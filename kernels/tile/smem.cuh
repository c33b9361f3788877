// Device toolkit: shared-memory addresses and the explicit shared-memory loads and stores kernels order by hand.
#pragma once

#include "tile/config.hpp"

namespace tl {

// The shared::cta address (32-bit) of a generic pointer into shared memory: what every PTX shared-memory operand
// (ld/st.shared, ldmatrix, cp.async, TMA, mbarrier, wgmma descriptors) takes.
TL_DEVICE_INLINE unsigned smem_u32(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// The first address at or after `p` that is a multiple of ALIGN (the 128B swizzle atom needs 1024): dynamic shared
// memory is only 16-byte aligned, so kernels ask for ALIGN - 16 bytes more and start their tiles here.
template <unsigned ALIGN>
TL_DEVICE_INLINE unsigned smem_align(const void* p) {
  return (smem_u32(p) + (ALIGN - 1u)) & ~(ALIGN - 1u);
}

// As asm volatile with a memory clobber: the compiler keeps them in program order with the other shared-memory
// asm (mbarriers, fences, wgmma), which plain C++ accesses would not be.
TL_DEVICE_INLINE void st_shared_b32(unsigned addr, unsigned v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
TL_DEVICE_INLINE void st_shared_f32(unsigned addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
}
TL_DEVICE_INLINE void st_shared_v2_f32(unsigned addr, float lo, float hi) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(lo), "f"(hi) : "memory");
}
TL_DEVICE_INLINE void st_shared_b16(unsigned addr, unsigned short v) {
  asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(addr), "h"(v) : "memory");
}
TL_DEVICE_INLINE void st_shared_v4_b32(unsigned addr, unsigned a, unsigned b, unsigned c, unsigned d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
// 16 bytes, each of the four words = v (zeroing a row chunk).
TL_DEVICE_INLINE void st_shared_v4_fill(unsigned addr, unsigned v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};\n" ::"r"(addr), "r"(v) : "memory");
}
TL_DEVICE_INLINE unsigned ld_shared_b32(unsigned addr) {
  unsigned v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
TL_DEVICE_INLINE unsigned short ld_shared_b16(unsigned addr) {
  unsigned short v;
  asm volatile("ld.shared.b16 %0, [%1];\n" : "=h"(v) : "r"(addr) : "memory");
  return v;
}
TL_DEVICE_INLINE float ld_shared_f32(unsigned addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
TL_DEVICE_INLINE unsigned long long ld_shared_b64(unsigned addr) {
  unsigned long long v;
  asm volatile("ld.shared.b64 %0, [%1];\n" : "=l"(v) : "r"(addr) : "memory");
  return v;
}
TL_DEVICE_INLINE uint4 ld_shared_v4_b32(unsigned addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
  return v;
}

}  // namespace tl
