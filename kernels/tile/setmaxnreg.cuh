// Device toolkit: setmaxnreg (sm_90a), moving registers between the warpgroups of a warp-specialized kernel.
#pragma once

#include "tile/config.hpp"

namespace tl {

// Every thread of the warpgroup executes it (.sync.aligned); REGS a multiple of 8 in 24..256. The producer gives
// registers back (dec) so the consumers can take them (inc); the block's total must fit what it launched with.
template <int REGS>
TL_DEVICE_INLINE void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
TL_DEVICE_INLINE void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

}  // namespace tl
