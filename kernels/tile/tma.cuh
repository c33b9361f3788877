// Device toolkit: TMA (sm_90) — bulk tensor copies between global and shared memory through a tensor map, 1-5 D.
#pragma once

#include "tile/config.hpp"

namespace tl {

// The 128-byte CUtensorMap, encoded on the host (cuTensorMapEncodeTiled; an ArgSpec::tensor_map of the spec) and
// passed to the kernel by value as a __grid_constant__ parameter.
struct alignas(64) TmaDescriptor {
  unsigned long long opaque[16];
};

// Inline asm takes only literal strings, so the coordinate list of each dimension count is spelled out once here:
// loads put the coordinates after dst, map and barrier (%3...), stores after map and source (%2...).
#define TL_TMA_LD_C1 "{%3}"
#define TL_TMA_LD_C2 "{%3, %4}"
#define TL_TMA_LD_C3 "{%3, %4, %5}"
#define TL_TMA_LD_C4 "{%3, %4, %5, %6}"
#define TL_TMA_LD_C5 "{%3, %4, %5, %6, %7}"
#define TL_TMA_MASK1 "%4"
#define TL_TMA_MASK2 "%5"
#define TL_TMA_MASK3 "%6"
#define TL_TMA_MASK4 "%7"
#define TL_TMA_MASK5 "%8"
#define TL_TMA_ST_C1 "{%2}"
#define TL_TMA_ST_C2 "{%2, %3}"
#define TL_TMA_ST_C3 "{%2, %3, %4}"
#define TL_TMA_ST_C4 "{%2, %3, %4, %5}"
#define TL_TMA_ST_C5 "{%2, %3, %4, %5, %6}"
#define TL_TMA_IN1 "r"(x[0])
#define TL_TMA_IN2 TL_TMA_IN1, "r"(x[1])
#define TL_TMA_IN3 TL_TMA_IN2, "r"(x[2])
#define TL_TMA_IN4 TL_TMA_IN3, "r"(x[3])
#define TL_TMA_IN5 TL_TMA_IN4, "r"(x[4])
#define TL_TMA_LOAD(D)                                                                                                 \
  asm volatile("cp.async.bulk.tensor." #D "d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, "         \
               TL_TMA_LD_C##D "], [%2];\n" ::"r"(dst),                                                                 \
               "l"(m), "r"(bar), TL_TMA_IN##D                                                                          \
               : "memory")
#define TL_TMA_LOAD_MC(D)                                                                                              \
  asm volatile("cp.async.bulk.tensor." #D "d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "  \
               "[%0], [%1, " TL_TMA_LD_C##D "], [%2], " TL_TMA_MASK##D ";\n" ::"r"(dst),                               \
               "l"(m), "r"(bar), TL_TMA_IN##D, "h"(cta_mask)                                                           \
               : "memory")
#define TL_TMA_STORE(D)                                                                                                \
  asm volatile("cp.async.bulk.tensor." #D "d.global.shared::cta.bulk_group [%0, " TL_TMA_ST_C##D "], [%1];\n" ::"l"(m), \
               "r"(src), TL_TMA_IN##D                                                                                  \
               : "memory")

// Loads the box at coordinates c... (innermost first, one per dimension of the map) into shared memory at `dst`,
// completing its bytes on the mbarrier `bar` (which expects them: mbar_expect_tx).
template <class... C>
TL_DEVICE_INLINE void tma_load(unsigned dst, const TmaDescriptor* map, unsigned bar, C... c) {
  constexpr int D = sizeof...(C);
  static_assert(D >= 1 && D <= 5, "a tensor map has 1 to 5 dimensions");
  const int x[] = {static_cast<int>(c)...};
  const auto m = reinterpret_cast<unsigned long long>(map);
  if constexpr (D == 1) TL_TMA_LOAD(1);
  else if constexpr (D == 2) TL_TMA_LOAD(2);
  else if constexpr (D == 3) TL_TMA_LOAD(3);
  else if constexpr (D == 4) TL_TMA_LOAD(4);
  else TL_TMA_LOAD(5);
}

// An L2 eviction policy for cp.async.bulk's .L2::cache_hint: lines it loads go first when L2 needs room (data
// read once or by a few CTAs close together; PTX ISA: createpolicy).
TL_DEVICE_INLINE unsigned long long l2_policy_evict_first() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}

// The opposite policy: lines it loads stay while others can go (data many CTAs read again, such as a KV that many
// query tokens gather from).
TL_DEVICE_INLINE unsigned long long l2_policy_evict_last() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}

// tma_load of a 2-D box with an L2 cache policy (l2_policy_evict_first).
TL_DEVICE_INLINE void tma_load_2d_hint(unsigned dst, const TmaDescriptor* map, unsigned bar, int c0, int c1,
                                       unsigned long long policy) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], "
               "[%1, {%3, %4}], [%2], %5;\n" ::"r"(dst),
               "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "l"(policy)
               : "memory");
}

// The same load, written into the same shared-memory offset of each CTA of the cluster in cta_mask, completing bytes
// on the mbarrier at the same offset in each of them (PTX ISA: cp.async.bulk.tensor, .multicast::cluster).
template <class... C>
TL_DEVICE_INLINE void tma_load_multicast(unsigned dst, const TmaDescriptor* map, unsigned bar, unsigned short cta_mask,
                                         C... c) {
  constexpr int D = sizeof...(C);
  static_assert(D >= 1 && D <= 5, "a tensor map has 1 to 5 dimensions");
  const int x[] = {static_cast<int>(c)...};
  const auto m = reinterpret_cast<unsigned long long>(map);
  if constexpr (D == 1) TL_TMA_LOAD_MC(1);
  else if constexpr (D == 2) TL_TMA_LOAD_MC(2);
  else if constexpr (D == 3) TL_TMA_LOAD_MC(3);
  else if constexpr (D == 4) TL_TMA_LOAD_MC(4);
  else TL_TMA_LOAD_MC(5);
}

// Stores the box at `src` to coordinates c... of the map's tensor; elements outside the tensor are not written.
// Part of the thread's bulk group: tma_store_commit, then a wait before `src` is rewritten or the data is needed.
template <class... C>
TL_DEVICE_INLINE void tma_store(const TmaDescriptor* map, unsigned src, C... c) {
  constexpr int D = sizeof...(C);
  static_assert(D >= 1 && D <= 5, "a tensor map has 1 to 5 dimensions");
  const int x[] = {static_cast<int>(c)...};
  const auto m = reinterpret_cast<unsigned long long>(map);
  if constexpr (D == 1) TL_TMA_STORE(1);
  else if constexpr (D == 2) TL_TMA_STORE(2);
  else if constexpr (D == 3) TL_TMA_STORE(3);
  else if constexpr (D == 4) TL_TMA_STORE(4);
  else TL_TMA_STORE(5);
}

// The spelling macros are not part of the toolkit.
#undef TL_TMA_LOAD
#undef TL_TMA_LOAD_MC
#undef TL_TMA_STORE
#undef TL_TMA_LD_C1
#undef TL_TMA_MASK1
#undef TL_TMA_ST_C1
#undef TL_TMA_IN1
#undef TL_TMA_LD_C2
#undef TL_TMA_MASK2
#undef TL_TMA_ST_C2
#undef TL_TMA_IN2
#undef TL_TMA_LD_C3
#undef TL_TMA_MASK3
#undef TL_TMA_ST_C3
#undef TL_TMA_IN3
#undef TL_TMA_LD_C4
#undef TL_TMA_MASK4
#undef TL_TMA_ST_C4
#undef TL_TMA_IN4
#undef TL_TMA_LD_C5
#undef TL_TMA_MASK5
#undef TL_TMA_ST_C5
#undef TL_TMA_IN5

// Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to shared memory in one bulk copy
// (no tensor map), completing them on the mbarrier `bar` (which expects them: mbar_expect_tx).
TL_DEVICE_INLINE void bulk_load(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// Adds `bytes` (a multiple of 16; both addresses 16-byte aligned) of f32 from shared memory into global memory
// element by element, by the copy engine (PTX ISA: cp.reduce.async.bulk, .add.f32): part of the thread's bulk group,
// completed like a TMA store (tma_store_commit, then tma_store_wait_read / tma_store_wait_all).
TL_DEVICE_INLINE void bulk_reduce_add_f32(float* dst, unsigned src, unsigned bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst), "r"(src),
               "r"(bytes)
               : "memory");
}

TL_DEVICE_INLINE void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until the issued bulk stores have finished reading shared memory (the buffer may be rewritten).
TL_DEVICE_INLINE void tma_store_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// Waits until they have completed (their writes are done).
TL_DEVICE_INLINE void tma_store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Waits until at most N of this thread's committed bulk groups are still in flight: the older ones have completed
// (their writes and reductions done), so a pipeline can wait for group i while group i + N runs.
template <int N>
TL_DEVICE_INLINE void tma_store_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// Fetches the descriptor into the descriptor cache ahead of its first use.
TL_DEVICE_INLINE void prefetch_tensormap(const TmaDescriptor* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

}  // namespace tl
