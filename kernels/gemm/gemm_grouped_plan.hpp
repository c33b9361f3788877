// gemm.grouped's plan, host and device: its typed config and the plan of its main loop (gemm_kmajor.cuh's, with
// gemm.fp8's probe regions) plus the group table its device schedule keeps in shared memory.
#pragma once

#include "gemm/gemm_fp8_plan.hpp"
#include "gemm/gemm_types.hpp"
#include "tile/config.hpp"
#include "tile/config_name.hpp"

#if !TL_DEVICE_CODE
#include <string>
#endif

namespace tl {

// The kernel's one template parameter (a C++20 structural type): the main loop's fields as gemm.fp8's config names
// them (gemm_kmajor.cuh reads them), then what the kernel is specialised on from the problem.
struct GemmGroupedConfig {
  int block_M = 128;   // rows of C per tile: 64 per consumer warpgroup
  int block_N = 256;   // columns of C per tile
  int block_K = 64;    // one 128-byte swizzle row per tile row: 64 bf16 or 128 e4m3 (also the block scales' k block)
  int wgmma_N = 256;   // columns of one wgmma chain: block_N for bf16; e4m3 may promote narrower chains
  int num_stages = 3;  // TMA pipeline depth
  int panel = 8;       // grouped raster over (row tile, column tile): row tiles (columns) walked together
  bool raster_n = false;
  bool tma_store = true;    // the epilogue stages C in shared memory and stores whole 64-row tiles with TMA
  bool fast_accum = false;  // e4m3: wgmma accumulates all of K itself (no promotion)
  gemm_detail::Fp8Scaling scaling = gemm_detail::kScaleNone;
  gemm_detail::OutType out_dtype = gemm_detail::kOutBf16;
  bool e4m3 = false;           // A and B are e4m3 (else bf16)
  bool masked = false;         // DeepGEMM's masked layout (A [G, M_max, K], masked_m[g] rows valid); else contiguous
  bool host_schedule = false;  // the row tiles listed by the host; else counted on the device from the group sizes
  // The consumers' wgmma descriptors built from warp-uniform values (redux.sync), as gemm.fp8's uniform_desc: ptxas
  // keeps them in uniform registers and steps each k step's from the stage's by a uniform add, instead of building
  // every descriptor per thread and moving it over by R2UR before each wgmma.
  bool uniform_desc = false;

  TL_HOST_DEVICE constexpr int consumers() const { return block_M / 64; }
  TL_HOST_DEVICE constexpr int threads() const { return (consumers() + 1) * 128; }  // + the producer warpgroup
  TL_HOST_DEVICE constexpr int chunks() const { return block_N / wgmma_N; }          // wgmma chains per k block
  TL_HOST_DEVICE constexpr int in_bytes() const { return e4m3 ? 1 : 2; }
};

// The main loop's plan (make_kmajor_plan: tiles, fragments, stages, scale slots, barriers, boxes) and where the
// device schedule's group table starts: after the barriers, tile_start[g] for g = 0..G (int32), the first row tile of
// group g, tile_start[G] the row tiles of all groups.
struct GemmGroupedPlan : GemmFp8Plan {
  int table_offset = 0;
};

TL_HOST_DEVICE constexpr GemmGroupedPlan make_plan(const GemmGroupedConfig& c) {
  GemmGroupedPlan p;
  static_cast<GemmFp8Plan&>(p) = make_kmajor_plan(c);
  p.table_offset = p.empty_bar_offset + 8 * c.num_stages;
  return p;
}

// The dynamic shared memory to launch with for G groups: the plan's bytes (alignment slack included) and, with the
// device schedule, the group table behind the barriers.
TL_HOST_DEVICE constexpr int grouped_smem_bytes(const GemmGroupedConfig& c, int groups) {
  return make_plan(c).bytes + (c.host_schedule ? 0 : 4 * (groups + 1));
}

// The group of row tile r from the device schedule's table (tile_start(g) for g = 0..G, nondecreasing, tile_start(0)
// = 0 <= r < tile_start(G)): the largest g with tile_start(g) <= r, by bisection. An empty group starts where the next
// one does, so the largest such g has rows.
template <class TileStart>
TL_HOST_DEVICE constexpr int grouped_find_group(int r, int groups, TileStart tile_start) {
  int lo = 0, hi = groups;  // tile_start(lo) <= r < tile_start(hi)
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (tile_start(mid) <= r) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The host schedule lists each row tile as (group << 16) | its m tile in the group.
TL_HOST_DEVICE constexpr int grouped_row_tile(int group, int m_tile) { return (group << 16) | m_tile; }
enum : int { kGroupedMaxMTiles = 1 << 16, kGroupedMaxGroups = 1 << 15 };

#if !TL_DEVICE_CODE

// "tl::gemm_grouped<tl::GemmGroupedConfig{.block_M = 128, ...}>": designated initializers, so the compiler checks
// every field's name and order.
inline std::string name_expression(const GemmGroupedConfig& c) {
  ConfigName name("gemm_grouped", "GemmGroupedConfig");
  kmajor_config_fields(name, c).field("e4m3", c.e4m3).field("masked", c.masked).field("host_schedule", c.host_schedule);
  // Left out when off: the configs without it keep their names (and their cached kernels).
  if (c.uniform_desc) name.field("uniform_desc", true);
  return name.str();
}

#endif  // !TL_DEVICE_CODE

}  // namespace tl
