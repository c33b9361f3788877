// Device toolkit: cp.async (sm_80), the asynchronous global -> shared copies of Ampere-style pipelines.
#pragma once

#include "tile/config.hpp"

namespace tl {

// 16-byte copy, bypassing L1 (.cg); src_bytes < 16 zero-fills the rest (0: a pure zero fill, used at the edges,
// where `src` need only be a valid address).
TL_DEVICE_INLINE void cp_async_16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
// Closes the group of copies issued since the last commit.
TL_DEVICE_INLINE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N committed groups are still in flight (this thread's copies; a barrier publishes them).
template <int N>
TL_DEVICE_INLINE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace tl
