// Device toolkit: cp.async (sm_80), the asynchronous global -> shared copies of Ampere-style pipelines.
#pragma once

#include "tile/config.hpp"

namespace tl {

// 16-byte copy, bypassing L1 (.cg); src_bytes < 16 zero-fills the rest (0: a pure zero fill, used at the edges,
// where `src` need only be a valid address).
TL_DEVICE_INLINE void cp_async_16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
// As cp_async_16, allocating in the L1 (.ca): copies of bytes that other CTAs of the SM copy too can hit there.
TL_DEVICE_INLINE void cp_async_16_ca(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
// As cp_async_16, with the L2 asked to fetch the 256-byte block around src (.L2::256B), for copies whose neighbours
// come next.
TL_DEVICE_INLINE void cp_async_16_l2_256(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
// As cp_async_16_l2_256, with an L2 cache policy (tma.cuh's l2_policy_evict_first / _last) for the lines it loads.
TL_DEVICE_INLINE void cp_async_16_l2_256_hint(unsigned dst, const void* src, int src_bytes, unsigned long long policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::256B [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes), "l"(policy)
               : "memory");
}
// 4-byte copy through L1 (.ca: the only caching .cg does not take below 16 bytes); small tables such as scales.
TL_DEVICE_INLINE void cp_async_4(unsigned dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
// Closes the group of copies issued since the last commit.
TL_DEVICE_INLINE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N committed groups are still in flight (this thread's copies; a barrier publishes them).
template <int N>
TL_DEVICE_INLINE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Has the mbarrier `bar` (shared::cta address) receive one arrival once every cp.async this thread issued before has
// landed (.noinc: that arrival counts against the barrier's expected count, which must include it). A pipeline
// stage filled by cp.async is then waited on like one filled by TMA.
TL_DEVICE_INLINE void cp_async_mbar_arrive(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

}  // namespace tl
