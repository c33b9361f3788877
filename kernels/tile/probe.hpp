// Timeline probes: the probe buffer's format (host and device) and the TL_PROBE_* marks kernels record with.
#pragma once

// Buffer layout (little-endian, every part 16-byte aligned), written by the kernel and decoded on the host
// (runtime/timeline.hpp):
//   ProbeHeader                                    64 bytes, filled by the host before the launch
//   ProbeBlock  [num_blocks]                       48 bytes each: globaltimer + clock64 anchors, %smid
//   segments    [num_blocks * warps_per_block]     one per warp: ProbeSegment (16 bytes) + capacity ProbeRecords
// Block b's warp w owns segment b * warps_per_block + w. One lane per warp writes its segment, so nothing
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

// The buffer of a timeline launch; the worker points it at a zeroed buffer (cudaLibraryGetGlobal) before the launch.
// Null: marks are skipped (a timeline build launched without a buffer still runs correctly).
extern "C" __device__ unsigned char* tl_timeline_buffer;
__device__ unsigned char* tl_timeline_buffer = nullptr;

namespace tl::probe {

// Both reads are volatile asm with a "memory" clobber: the compiler may not move loads, stores or other volatile
// asm (the bracketed work: TMA issue, mbarrier waits, wgmma) across a mark.
__device__ __forceinline__ u64 clock() {
  u64 c;
  asm volatile("mov.u64 %0, %%clock64;\n" : "=l"(c)::"memory");
  return c;
}
__device__ __forceinline__ u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t)::"memory");
  return t;
}
__device__ __forceinline__ u32 smid() {
  u32 s;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(s));
  return s;
}
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
  const u64 gt = globaltimer();
  const u64 clk = clock();
  e->gt_begin = gt;
  e->clk_begin = clk;
  e->smid = smid();
  e->flags |= kBlockBegun;
}

// Any one thread, late in the block: the end anchor pair (the decoder measures the SM clock between the two).
__device__ __forceinline__ void block_end() {
  if (!tl_timeline_buffer) return;
  ProbeBlock* e = block_entry();
  if (!e) return;
  const u64 gt = globaltimer();
  const u64 clk = clock();
  e->gt_end = gt;
  e->clk_end = clk;
  e->flags |= kBlockEnded;
}

// A warp's writer: lane 0 holds the segment pointer and the count in registers.
struct Warp {
  ProbeRecord* records = nullptr;
  ProbeSegment* segment = nullptr;
  u32 count = 0;
  u32 capacity = 0;

  __device__ __forceinline__ void init() {
    if (!tl_timeline_buffer || (threadIdx.x & 31) != 0) return;
    const ProbeHeader* h = reinterpret_cast<const ProbeHeader*>(tl_timeline_buffer);
    const u32 b = linear_block(), w = linear_warp();
    if (b >= h->num_blocks || w >= h->warps_per_block) return;
    capacity = h->capacity;
    segment = reinterpret_cast<ProbeSegment*>(tl_timeline_buffer +
                                              segment_offset(h->num_blocks, h->warps_per_block, capacity, b, w));
    records = reinterpret_cast<ProbeRecord*>(segment + 1);
  }
  __device__ __forceinline__ void mark(u32 region, u32 kind, u32 stage, u32 aux) {
    const u64 c = clock();
    if (!segment) return;
    if (count < capacity) {
      ProbeRecord r;
      r.clock = c;
      r.region = static_cast<u16>(region);
      r.kind = static_cast<u8>(kind);
      r.stage = static_cast<u8>(stage);
      r.aux = aux;
      records[count] = r;
    }
    ++count;
  }
  __device__ __forceinline__ void flush() {
    if (!segment) return;
    segment->count = count;
    segment->flags = 1;
  }
};

}  // namespace tl::probe

#define TL_PROBE_BLOCK_BEGIN() ::tl::probe::block_begin()
#define TL_PROBE_BLOCK_END() ::tl::probe::block_end()
#define TL_PROBE_WARP_INIT()    \
  ::tl::probe::Warp tl_probe_w_; \
  tl_probe_w_.init()
#define TL_PROBE_BEGIN(region, stage, aux) tl_probe_w_.mark((region), ::tl::probe::kBegin, (stage), (aux))
#define TL_PROBE_END(region, stage, aux) tl_probe_w_.mark((region), ::tl::probe::kEnd, (stage), (aux))
#define TL_PROBE_INSTANT(region, stage, aux) tl_probe_w_.mark((region), ::tl::probe::kInstant, (stage), (aux))
#define TL_PROBE_FLUSH() tl_probe_w_.flush()

#else

// Probes off (or host code): nothing at all, so the kernel compiles to the same code as without probes.
#define TL_PROBE_BLOCK_BEGIN() ((void)0)
#define TL_PROBE_BLOCK_END() ((void)0)
#define TL_PROBE_WARP_INIT() ((void)0)
#define TL_PROBE_BEGIN(region, stage, aux) ((void)0)
#define TL_PROBE_END(region, stage, aux) ((void)0)
#define TL_PROBE_INSTANT(region, stage, aux) ((void)0)
#define TL_PROBE_FLUSH() ((void)0)

#endif
