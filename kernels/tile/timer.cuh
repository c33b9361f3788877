// Device toolkit: timers and ids (SM cycle counter, global nanosecond timer, SM id, lane id).
#pragma once

#include "tile/config.hpp"

namespace tl {

// The timer reads are volatile asm with a memory clobber: the compiler may not move loads, stores or other
// volatile asm (TMA issue, mbarrier waits, wgmma) across them, so they bracket the work they time.
TL_DEVICE_INLINE unsigned long long read_clock64() {
  unsigned long long c;
  asm volatile("mov.u64 %0, %%clock64;\n" : "=l"(c)::"memory");
  return c;
}
TL_DEVICE_INLINE unsigned long long read_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t)::"memory");
  return t;
}
TL_DEVICE_INLINE unsigned read_smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(s));
  return s;
}
TL_DEVICE_INLINE unsigned read_laneid() {
  unsigned l;
  asm volatile("mov.u32 %0, %%laneid;\n" : "=r"(l));
  return l;
}

}  // namespace tl
