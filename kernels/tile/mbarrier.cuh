// Device toolkit: mbarriers (sm_90), the arrival/transaction-count barriers that pipeline stages wait on.
#pragma once

#include "tile/config.hpp"

namespace tl {

// `bar` is the shared::cta address of an 8-byte aligned 64-bit barrier; `count` arrivals complete a phase.
TL_DEVICE_INLINE void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}

// Makes the inits visible to the async proxy (TMA) and to the other CTAs of the cluster; once, after the inits,
// before the barrier that lets other threads use them.
TL_DEVICE_INLINE void fence_mbarrier_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

// One arrival that also expects `bytes` more transaction bytes (completed by TMA loads that name this barrier).
TL_DEVICE_INLINE void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

TL_DEVICE_INLINE void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Arrive on an mbarrier of any CTA of the cluster (a shared::cluster address from map_shared_rank), with the
// instruction's default semantics (release at CTA scope), as mbar_arrive. Meant for "my reads of this stage are
// done" signals: nothing written before it is read by the peer, so nothing needs releasing at cluster scope
// (`.release.cluster` costs a MEMBAR.ALL.GPU per arrive; docs/perf.md measured 2-CTA clusters at half speed with it).
TL_DEVICE_INLINE void mbar_arrive_cluster(unsigned cluster_bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_bar) : "memory");
}

// Blocks until the phase with the given parity has completed. A fresh barrier counts as having completed the
// phase before phase 0, so a producer's first wait on an "empty" barrier passes with parity 1.
TL_DEVICE_INLINE void mbar_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// mbar_wait with a suspend-time hint (ns, at most 10 ms here): each try_wait may suspend the thread until the phase
// completes or the hint runs out, instead of the hardware's own short limit after which the loop polls again (ptxas:
// a NANOSLEEP.SYNCS beside the wait). For threads that wait long and often (a pipeline's side warps): fewer polls.
template <unsigned HINT_NS = 10000000u>
TL_DEVICE_INLINE void mbar_wait_sleep(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, %2;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity), "n"(HINT_NS)
      : "memory");
}

// Whether the phase with the given parity has completed, without waiting: for a thread that has other work to do
// until it has (test_wait never suspends the thread, as try_wait may).
TL_DEVICE_INLINE bool mbar_test_wait(unsigned bar, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}

}  // namespace tl
