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

// cluster_sync in two halves: a CTA arrives once it no longer needs its peers (relaxed: nothing it wrote is read
// through the barrier) and waits just before it exits, so no peer leaves while its copies may still be in flight.
TL_DEVICE_INLINE void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory"); }
TL_DEVICE_INLINE void cluster_wait() { asm volatile("barrier.cluster.wait;\n" ::: "memory"); }

// The shared::cluster address of the variable at shared::cta address `addr` in the CTA of rank `rank`.
TL_DEVICE_INLINE unsigned map_shared_rank(unsigned addr, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}

// Asynchronous stores into a peer CTA's shared memory (`addr` from map_shared_rank), each completing its bytes on the
// peer's mbarrier `cluster_bar` (shared::cluster address): the peer waits on that barrier, armed by its own
// mbar_expect_tx, instead of on an arrival of the writer (PTX ISA: st.async).
TL_DEVICE_INLINE void st_async_v4_b32(unsigned addr, unsigned a, unsigned b, unsigned c, unsigned d,
                                     unsigned cluster_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];\n"
               ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d), "r"(cluster_bar)
               : "memory");
}
TL_DEVICE_INLINE void st_async_b32(unsigned addr, unsigned a, unsigned cluster_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(addr), "r"(a),
               "r"(cluster_bar)
               : "memory");
}

// A bulk copy of `bytes` (a multiple of 16; both addresses 16-byte aligned) from this CTA's shared memory (`src`,
// shared::cta) into a peer CTA's (`dst`, from map_shared_rank), by the copy engine, completing its bytes on the peer's
// mbarrier `cluster_bar` as st.async does (PTX ISA: cp.async.bulk .shared::cluster.shared::cta). It reads `src` through
// the async proxy: the threads' generic-proxy stores of it need their fence.proxy.async and a barrier with the issuing
// thread first.
TL_DEVICE_INLINE void bulk_copy_to_peer(unsigned dst, unsigned src, unsigned bytes, unsigned cluster_bar) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "r"(src), "r"(bytes), "r"(cluster_bar)
               : "memory");
}

}  // namespace tl
