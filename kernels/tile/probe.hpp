// Timeline probes: the probe buffer's format (host and device) and the TL_PROBE_* marks kernels record with.
#pragma once

// Buffer layout (little-endian, every part 16-byte aligned), written by the kernel and decoded on the host
// (runtime/trace/timeline.hpp):
//   ProbeHeader                                    64 bytes, filled by the host before the launch
//   ProbeBlock  [num_blocks]                       48 bytes each: globaltimer + clock64 anchors, %smid
//   segments    [num_blocks * warps_per_block]     one per warp: ProbeSegment (16 bytes) + capacity ProbeRecords
// Block b's warp w owns segment b * warps_per_block + w. Only that warp writes its segment, so nothing
// is shared between writers and no atomics are needed; the count lives in a register until TL_PROBE_FLUSH.
// A warp that marks more than `capacity` times keeps counting: count - capacity marks were dropped, and the
// decoder reports them (overflow is counted, never silent).
//
// Marks compile to nothing unless the source is compiled with -DTL_TIMELINE=1, so a kernel with probes and the
// same kernel without them are the same code.

#include "tile/config.hpp"

namespace tl::probe {

using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using u64 = unsigned long long;

// Enumerators rather than constexpr variables: NVRTC emits namespace-scope constants as device globals, and a
// kernel compiled without probes must not change at all.
enum : u32 {
  kMagic = 0x4C544C54u,    // "TLTL"
  kVersion = 1,
  kDefaultCapacity = 8192  // marks per warp segment
};
enum : u8 { kNoStage = 0xFF };

enum Kind : u8 { kBegin = 0, kEnd = 1, kInstant = 2 };

struct ProbeHeader {
  u32 magic;
  u32 version;
  u32 num_blocks;
  u32 warps_per_block;
  u32 capacity;
  u32 flags;
  u64 clock_hz;  // the SM clock the host expects (a fallback when a block has no end anchor)
  u64 reserved[4];
};

enum BlockFlags : u32 { kBlockBegun = 1, kBlockEnded = 2 };

// Both anchors are a globaltimer (ns) and a clock64 read back to back: the pair ties the SM's cycle counter to
// the global clock. The end pair (optional) lets the decoder measure the SM clock rate over the block's life.
struct ProbeBlock {
  u64 gt_begin, clk_begin;
  u64 gt_end, clk_end;
  u32 smid;
  u32 flags;
  u64 reserved;
};

struct ProbeSegment {
  u32 count;  // marks attempted (those past capacity were dropped)
  u32 flags;  // 1: the warp flushed its segment
  u64 reserved;
};

struct ProbeRecord {
  u64 clock;   // clock64 at the mark
  u16 region;  // index into the kernel's probe names (KernelSpec::probes)
  u8 kind;     // Kind
  u8 stage;    // pipeline stage, kNoStage when none
  u32 aux;     // free for the kernel: the k-step, the tile, the pipeline iteration
};

static_assert(sizeof(ProbeHeader) == 64, "probe header layout");
static_assert(sizeof(ProbeBlock) == 48, "probe block layout");
static_assert(sizeof(ProbeSegment) == 16, "probe segment layout");
static_assert(sizeof(ProbeRecord) == 16, "probe record layout");
#ifndef __CUDACC_RTC__  // NVRTC has no offsetof; the host and nvcc builds check the layout
static_assert(__builtin_offsetof(ProbeRecord, region) == 8 && __builtin_offsetof(ProbeRecord, kind) == 10 &&
                  __builtin_offsetof(ProbeRecord, stage) == 11 && __builtin_offsetof(ProbeRecord, aux) == 12,
              "Warp::record packs region, kind and stage into bytes 8..11");
#endif

TL_HOST_DEVICE constexpr u64 segment_bytes(u32 capacity) {
  return sizeof(ProbeSegment) + static_cast<u64>(capacity) * sizeof(ProbeRecord);
}
TL_HOST_DEVICE constexpr u64 block_table_offset() { return sizeof(ProbeHeader); }
TL_HOST_DEVICE constexpr u64 segments_offset(u32 num_blocks) {
  return sizeof(ProbeHeader) + static_cast<u64>(num_blocks) * sizeof(ProbeBlock);
}
TL_HOST_DEVICE constexpr u64 segment_offset(u32 num_blocks, u32 warps_per_block, u32 capacity, u32 block, u32 warp) {
  return segments_offset(num_blocks) + (static_cast<u64>(block) * warps_per_block + warp) * segment_bytes(capacity);
}
TL_HOST_DEVICE constexpr u64 buffer_bytes(u32 num_blocks, u32 warps_per_block, u32 capacity) {
  return segments_offset(num_blocks) + static_cast<u64>(num_blocks) * warps_per_block * segment_bytes(capacity);
}

}  // namespace tl::probe

// [SECTION] device marks -----------------------------------------------------------------------------------------

#if TL_DEVICE_CODE && defined(TL_TIMELINE) && TL_TIMELINE

#include "tile/timer.cuh"

// The buffer of a timeline launch; the worker points it at a zeroed buffer (cudaLibraryGetGlobal) before the launch.
// Null: marks are skipped (a timeline build launched without a buffer still runs correctly).
extern "C" __device__ unsigned char* tl_timeline_buffer;
__device__ unsigned char* tl_timeline_buffer = nullptr;

namespace tl::probe {

__device__ __forceinline__ u32 linear_block() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}
__device__ __forceinline__ u32 linear_warp() {
  return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32;
}

__device__ __forceinline__ ProbeBlock* block_entry() {
  const ProbeHeader* h = reinterpret_cast<const ProbeHeader*>(tl_timeline_buffer);
  const u32 b = linear_block();
  if (b >= h->num_blocks) return nullptr;
  return reinterpret_cast<ProbeBlock*>(tl_timeline_buffer + block_table_offset()) + b;
}

// One thread per block: the start anchor pair and the SM id.
__device__ __forceinline__ void block_begin() {
  if (!tl_timeline_buffer) return;
  ProbeBlock* e = block_entry();
  if (!e) return;
  const u64 gt = read_globaltimer();
  const u64 clk = read_clock64();
  e->gt_begin = gt;
  e->clk_begin = clk;
  e->smid = read_smid();
  e->flags |= kBlockBegun;
}

// Any one thread, late in the block: the end anchor pair (the decoder measures the SM clock between the two).
__device__ __forceinline__ void block_end() {
  if (!tl_timeline_buffer) return;
  ProbeBlock* e = block_entry();
  if (!e) return;
  const u64 gt = read_globaltimer();
  const u64 clk = read_clock64();
  e->gt_end = gt;
  e->clk_end = clk;
  e->flags |= kBlockEnded;
}

// A warp's writer. Marks are warp-collective: all 32 lanes call them (warp-uniform control flow). Lanes 1..31 each
// hold, in four registers, one pending mark; every 31st mark the warp writes the 31 pending marks with one coalesced
// 496-byte store. Lone 16-byte stores from one lane, one per mark, cost gemm.wgmma about 30% at 8192^3 (measured on
// the H100). Lane 0 never stores a mark: kernels give lane 0 the barrier arrives and TMA issues, and an
// mbarrier.arrive is a release, which would wait for that lane's earlier global stores to complete.
struct Warp {
  ProbeRecord* records = nullptr;
  ProbeSegment* segment = nullptr;  // null: this warp records nothing (no buffer, or outside the header's grid)
  u32 count = 0;
  u32 capacity = 0;
  u32 lane = 0;
  u32 slot = 1;                     // the lane that keeps the next mark, 1..31
  u32 pending[4] = {0, 0, 0, 0};    // this lane's mark: clock lo, clock hi, region|kind|stage, aux
  static constexpr u32 kBatch = 31;

  __device__ __forceinline__ void init() {
    if (!tl_timeline_buffer) return;
    const ProbeHeader* h = reinterpret_cast<const ProbeHeader*>(tl_timeline_buffer);
    const u32 b = linear_block(), w = linear_warp();
    if (b >= h->num_blocks || w >= h->warps_per_block) return;
    lane = read_laneid();
    capacity = h->capacity;
    segment = reinterpret_cast<ProbeSegment*>(tl_timeline_buffer +
                                              segment_offset(h->num_blocks, h->warps_per_block, capacity, b, w));
    records = reinterpret_cast<ProbeRecord*>(segment + 1);
  }
  __device__ __forceinline__ void mark(u32 region, u32 kind, u32 stage, u32 aux) { record(region, kind, stage, aux, read_clock64()); }
  // Records a mark stamped earlier (TL_PROBE_STAMP). Kernels stamp at the event and record after the
  // latency-critical work that follows it (a barrier arrive, a TMA issue), keeping the bookkeeping off that path.
  __device__ __forceinline__ void record(u32 region, u32 kind, u32 stage, u32 aux, u64 c) {
    if (!segment) return;
    if (slot == lane) {
      pending[0] = static_cast<u32>(c);
      pending[1] = static_cast<u32>(c >> 32);
      pending[2] = (region & 0xFFFFu) | ((kind & 0xFFu) << 16) | ((stage & 0xFFu) << 24);  // ProbeRecord bytes 8..11
      pending[3] = aux;
    }
    ++count;
    if (++slot > kBatch) {
      write_pending(count - kBatch, kBatch);
      slot = 1;
    }
  }
  // Lanes [1, n] write their pending marks to indices first + lane - 1; those past the capacity are dropped (and
  // counted: the segment's count keeps every mark attempted).
  __device__ __forceinline__ void write_pending(u32 first, u32 n) {
    if (lane >= 1 && lane <= n && first + lane - 1 < capacity)
      asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"l"(__cvta_generic_to_global(records + first + lane - 1)),
                   "r"(pending[0]), "r"(pending[1]), "r"(pending[2]), "r"(pending[3])
                   : "memory");
  }
  __device__ __forceinline__ void flush() {
    if (!segment) return;
    if (slot > 1) write_pending(count - (slot - 1), slot - 1);
    if (lane == 0) {
      segment->count = count;
      segment->flags = 1;
    }
  }
};

}  // namespace tl::probe

#define TL_PROBE_BLOCK_BEGIN() ::tl::probe::block_begin()
#define TL_PROBE_BLOCK_END() ::tl::probe::block_end()
#define TL_PROBE_WARP_INIT()    \
  ::tl::probe::Warp tl_probe_w_; \
  tl_probe_w_.init()
// Only warps for which `cond` holds record (e.g. one warp per warpgroup when its warps run in lockstep); the
// marks of the others are no-ops. `cond` must be warp-uniform.
#define TL_PROBE_WARP_INIT_IF(cond) \
  ::tl::probe::Warp tl_probe_w_;     \
  if (cond) tl_probe_w_.init()
#define TL_PROBE_BEGIN(region, stage, aux) tl_probe_w_.mark((region), ::tl::probe::kBegin, (stage), (aux))
#define TL_PROBE_END(region, stage, aux) tl_probe_w_.mark((region), ::tl::probe::kEnd, (stage), (aux))
#define TL_PROBE_INSTANT(region, stage, aux) tl_probe_w_.mark((region), ::tl::probe::kInstant, (stage), (aux))
#define TL_PROBE_FLUSH() tl_probe_w_.flush()
// Stamp now, record later: `TL_PROBE_STAMP(t)` reads the clock into a new variable t; the *_AT marks write it.
#define TL_PROBE_STAMP(var) const ::tl::probe::u64 var = ::tl::read_clock64()
#define TL_PROBE_BEGIN_AT(region, stage, aux, t) tl_probe_w_.record((region), ::tl::probe::kBegin, (stage), (aux), (t))
#define TL_PROBE_END_AT(region, stage, aux, t) tl_probe_w_.record((region), ::tl::probe::kEnd, (stage), (aux), (t))
#define TL_PROBE_INSTANT_AT(region, stage, aux, t) \
  tl_probe_w_.record((region), ::tl::probe::kInstant, (stage), (aux), (t))

#else

// Probes off (or host code): nothing at all, so the kernel compiles to the same code as without probes.
#define TL_PROBE_BLOCK_BEGIN() ((void)0)
#define TL_PROBE_BLOCK_END() ((void)0)
#define TL_PROBE_WARP_INIT() ((void)0)
#define TL_PROBE_WARP_INIT_IF(cond) ((void)0)
#define TL_PROBE_BEGIN(region, stage, aux) ((void)0)
#define TL_PROBE_END(region, stage, aux) ((void)0)
#define TL_PROBE_INSTANT(region, stage, aux) ((void)0)
#define TL_PROBE_FLUSH() ((void)0)
#define TL_PROBE_STAMP(var) ((void)0)
#define TL_PROBE_BEGIN_AT(region, stage, aux, t) ((void)0)
#define TL_PROBE_END_AT(region, stage, aux, t) ((void)0)
#define TL_PROBE_INSTANT_AT(region, stage, aux, t) ((void)0)

#endif
