// Device toolkit: thread-block clusters (sm_90): rank, cluster-wide barrier, addresses in a peer CTA's shared memory.
#pragma once

#include "tile/config.hpp"

namespace tl {

TL_DEVICE_INLINE unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// All threads of all CTAs of the cluster; release/acquire at cluster scope (mbarrier inits seen by the peer, and a
// CTA's shared memory kept alive while a peer may still write or arrive on it).
TL_DEVICE_INLINE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// The shared::cluster address of the variable at shared::cta address `addr` in the CTA of rank `rank`.
TL_DEVICE_INLINE unsigned map_shared_rank(unsigned addr, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}

}  // namespace tl
