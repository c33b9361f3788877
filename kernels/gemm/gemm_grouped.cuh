// gemm.grouped: the grouped GEMM of a mixture of experts (DeepGEMM's layouts) on Hopper — G groups, group g computing
// C_g = (scale_A A_g) · (scale_B B_g)^T with its own B_g [N, K], in one persistent launch over every group's tiles.
//
// Layouts (rows of A and C; B is [G, N, K], its groups' rows stacked, [G N, K] for TMA):
//   contiguous: the groups' rows concatenated, A [rows, K], C [rows, N]; group g has rows [offsets[g], offsets[g+1])
//               (`group_rows` = offsets, G + 1 int32), any count >= 0 (not a tile multiple, or none).
//   masked:     A [G, M_max, K], C [G, M_max, N]; group g has rows [g M_max, g M_max + masked_m[g]) (`group_rows` =
//               masked_m, G int32, each <= M_max); the rest of C is neither computed nor written.
// A and B are bf16 (wgmma m64nNk16) or e4m3 (m64nNk32, promoted per 128-k block, scales per tensor / row / 128-block:
// scale_A over A's rows, scale_B [G, N] or [G, ceil(N/128), ceil(K/128)]). The main loop, its threads, shared memory
// and scales are gemm_kmajor.cuh's; this file is the tile source it walks.
//
// Work: the row tiles of every group (ceil(rows_g / block_M) each) and the column tiles of N form one virtual grid of
// R x tiles_n tiles, walked in panel raster order (tile/work_order.hpp) by the persistent CTAs; a row tile is a group
// and an m tile in it. Where that comes from (CFG.host_schedule):
//   device: every CTA counts each group's row tiles from group_rows into a table in shared memory (all threads load
//           the counts, warp 0 adds them up with shuffles), tile_start[g] = the first row tile of group g; row tile r
//           is then group max{g : tile_start[g] <= r} (grouped_find_group, by bisection), m tile r - tile_start[g].
//           Nothing comes from the host but the group sizes, as in a MoE layer whose router writes them on the device.
//   host:   `row_tiles` lists (group << 16 | m tile) per row tile, R of them, built by the host (the spec).
// A tile's rows of A may run past its group's (into the next group, or zero-filled past A): they are computed and
// never stored. A consumer whose 64 rows lie wholly in the group stores them with TMA (tma_store); one whose rows end
// inside the group's last tile stores its pairs directly, row by row up to the group's end, so the next group's rows
// (or masked rows) of C are never written.
#pragma once

#include "gemm/gemm_grouped_plan.hpp"
#include "gemm/gemm_kmajor.cuh"
#include "tile/config.hpp"
#include "tile/reduce.hpp"
#include "tile/smem.cuh"
#include "tile/work_order.hpp"

namespace tl {

template <GemmGroupedConfig CFG>
struct GroupedTiles {
  const int* group_rows;  // contiguous: offsets [G + 1]; masked: masked_m [G]
  const int* row_tiles;   // host schedule: the row tiles, (group << 16) | m tile
  int groups, M_max, N, host_row_tiles;
  unsigned table = 0;     // device schedule: the shared-memory group table, tile_start[0..G]

  TL_DEVICE_INLINE static constexpr bool clip_rows() { return true; }
  TL_DEVICE_INLINE int row_begin(int g) const { return CFG.masked ? g * M_max : __ldg(group_rows + g); }
  TL_DEVICE_INLINE int row_end(int g) const {
    return CFG.masked ? g * M_max + __ldg(group_rows + g) : __ldg(group_rows + g + 1);
  }
  TL_DEVICE_INLINE int tiles_n() const { return (N + CFG.block_N - 1) / CFG.block_N; }

  // Device schedule: tile_start[g + 1] = group g's row tiles, then an inclusive sum over [0..G] by warp 0 in steps of
  // 32 entries. Published by the body's __syncthreads after the barrier inits.
  TL_DEVICE_INLINE void prepare(unsigned base) {
    if constexpr (!CFG.host_schedule) {
      constexpr GemmGroupedPlan P = make_plan(CFG);
      table = base + P.table_offset;
      for (int g = threadIdx.x; g < groups; g += blockDim.x)
        st_shared_b32(table + 4 * (g + 1), (row_end(g) - row_begin(g) + CFG.block_M - 1) / CFG.block_M);
      __syncthreads();
      if (threadIdx.x < 32) {
        const int lane = threadIdx.x;
        int running = 0;
        for (int i0 = 0; i0 <= groups; i0 += 32) {
          const int i = i0 + lane;
          const int v = warp_inclusive_sum(i >= 1 && i <= groups ? static_cast<int>(ld_shared_b32(table + 4 * i)) : 0,
                                           lane);
          if (i <= groups) st_shared_b32(table + 4 * i, running + v);
          running += __shfl_sync(0xffffffffu, v, 31);
        }
      }
    }
  }
  // The group table's entry i. uniform_desc: from redux.sync (every lane reads the same entry), so that the tile loop's
  // bound and the group search's branches are warp-uniform to ptxas, which otherwise puts the k loop's descriptors
  // back into vector registers (R2UR before each wgmma).
  TL_DEVICE_INLINE int tile_start(int i) const {
    const unsigned v = ld_shared_b32(table + 4 * i);
    return static_cast<int>(CFG.uniform_desc ? warp_uniform(v) : v);
  }
  TL_DEVICE_INLINE int row_tile_count() const {
    if constexpr (CFG.host_schedule) {
      return host_row_tiles;
    } else {
      return tile_start(groups);
    }
  }
  TL_DEVICE_INLINE int count() const { return row_tile_count() * tiles_n(); }
  TL_DEVICE_INLINE KMajorTile at(int t) const {
    const GemmTile tile = gemm_raster_tile(t, row_tile_count(), tiles_n(), CFG.panel, CFG.raster_n);
    int g = 0, m = 0;
    if constexpr (CFG.host_schedule) {
      const int e = __ldg(row_tiles + tile.m);
      g = e >> 16;
      m = e & (kGroupedMaxMTiles - 1);
    } else {
      g = grouped_find_group(tile.m, groups, [&](int i) { return tile_start(i); });
      m = tile.m - tile_start(g);
    }
    const int col0 = tile.n * CFG.block_N;
    return {row_begin(g) + m * CFG.block_M, row_end(g), g * N + col0, col0, g};
  }
};

// Kernel signature: (tma_a, tma_b, tma_c, scale_A, scale_B, C, group_rows, row_tiles, groups, M_max, N, K,
// row_tile_count). M_max: masked, the rows of each group's slot (contiguous: unused); row_tile_count: the host
// schedule's R (device: unused).
template <GemmGroupedConfig CFG>
__global__ void __launch_bounds__(CFG.threads(), 1)
    gemm_grouped(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
                 const __grid_constant__ TmaDescriptor tma_c, const float* __restrict__ scale_A,
                 const float* __restrict__ scale_B, void* __restrict__ C, const int* __restrict__ group_rows,
                 const int* __restrict__ row_tiles, int groups, int M_max, int N, int K, int row_tile_count) {
  GroupedTiles<CFG> tiles{group_rows, row_tiles, groups, M_max, N, row_tile_count};
  gemm_kmajor_body<CFG>(tiles, tma_a, tma_b, tma_c, scale_A, scale_B, C, N, K);
}

}  // namespace tl
