// The Hopper GEMMs' epilogue (gemm.wgmma, gemm.fp8, gemm.grouped): a consumer warpgroup's f32 accumulator stored to C.
#pragma once

#include "gemm/gemm_common.cuh"
#include "gemm/gemm_wgmma_plan.hpp"
#include "tile/barrier.cuh"
#include "tile/config.hpp"
#include "tile/convert.cuh"
#include "tile/smem.cuh"
#include "tile/tma.cuh"

namespace tl {
namespace gemm_detail {

// Consumer `c`'s accumulator, whose register v holds element P.acc(tid, v) of its 64 x W tile (W = P.acc.cols(): block_N,
// or the consumer's half of a 192 x 192 tile), goes to rows [row0, row0 + 64) and columns [col0, col0 + W) of the
// row-major M x N matrix C of CFG.out_dtype. P is the
// kernel's plan (make_plan(CFG), a GemmAccStorePlan): the thread's register 0 is at P.acc(tid, 0) and register v
// AT.at[v] further. The loops go over column blocks j and row halves h; registers v, v + 1 are a column pair.

// Staged: the tile is staged in P.smem_C at shared address `staging` (the consumer's own) and written with bulk tensor
// stores through `tma_c` (CFG.tma_store) that overlap the next tile's main loop (they need 16-byte rows of C: N % 8 == 0
// for a 16-bit C, N % 4 == 0 for f32; they clip at the map's rows and columns). With acc_store_parts(CFG) > 1 the
// buffer holds one part of the tile's columns (whole sub-tiles), staged and stored one part after another.
template <auto CFG>
TL_DEVICE_INLINE void store_acc_tile_staged(const float* acc, const TmaDescriptor* tma_c, unsigned staging, int c,
                                            int tid, int row0, int col0) {
  constexpr GemmAccStorePlan P = make_plan(CFG);
  constexpr GemmWgmmaAccTable AT = acc_table(P);
  constexpr int NV = P.acc.num_values(), PAIR = P.acc_pair, BLOCK = P.acc_block;
  constexpr OutType C_TYPE = CFG.out_dtype;
  constexpr int PARTS = acc_store_parts(CFG);
  constexpr int BOX_C = P.box_C.inner;
  constexpr int COLS = P.acc.cols();  // the consumer's columns: block_N, or its half of a 192 x 192 tile
  constexpr int PART_COLS = COLS / PARTS;
  // Elements from one part's columns to the next's: whole sub-tiles.
  constexpr int PART_AT = PARTS > 1 ? P.smem_C(0, PART_COLS) : 0;
  static_assert(COLS % PARTS == 0 && PART_COLS % BOX_C == 0, "a part is whole sub-tiles");
  const TileCoord e0 = P.acc(tid, 0);
  // Staging tile P.smem_C: 16-byte chunks XOR-swizzled by row % 8 exactly as the tensor map's SWIZZLE_128B
  // expects (SWIZZLE_64B: by row / 2 % 4 in rows of 64 bytes, two rows a 128-byte line; the same 8 different
  // chunk positions over the 8 rows). 16-bit C: the 8 rows a warp writes at once land in 8 different chunks (conflict free); f32 C: 8
  // bytes per lane, 8 rows x 2 chunks over the 8 chunk positions, two wavefronts for 256 bytes (the minimum).
  // A register's offset is the thread's joined with the register's: block j's columns are chunk bits the
  // thread's own chunk leaves free (or whole sub-tiles), and a row half lies whole swizzle periods (8 rows)
  // further, so it adds as is.
  static_assert(AT.staging[PAIR] % P.smem_C.period() == 0, "a row half moves by whole swizzle periods");
#pragma unroll
  for (int part = 0; part < PARTS; ++part) {
    if (tid == 0) tma_store_wait_read();  // the previous part's (tile's) stores have left the staging buffer
    named_barrier_sync(1 + c, 128);
    const int thread_at = P.smem_C(e0.row, e0.col);
#pragma unroll
    for (int j = part * (NV / BLOCK / PARTS); j < (part + 1) * (NV / BLOCK / PARTS); ++j) {
      const int block_at = P.smem_C.join_disjoint(thread_at, AT.staging[BLOCK * j]) - part * PART_AT;
#pragma unroll
      for (int h = 0; h < BLOCK / PAIR; ++h) {
        const int v = BLOCK * j + PAIR * h;
        const unsigned addr = staging + P.c_bytes * (block_at + AT.staging[PAIR * h]);
        if constexpr (C_TYPE == kOutF32) {
          st_shared_v2_f32(addr, acc[v], acc[v + 1]);
        } else {
          st_shared_b32(addr, pack2<C_TYPE == kOutBf16>(acc[v], acc[v + 1]));
        }
      }
    }
    fence_proxy_async_smem();  // make the generic-proxy writes visible to the TMA engine
    named_barrier_sync(1 + c, 128);
    if (tid == 0) {
      // One TMA box per staging sub-tile of 128-byte (64-byte) rows; sub-tiles follow each other.
      constexpr unsigned SUB_BYTES = P.c_bytes * P.smem_C(0, BOX_C);
      const int part_col0 = col0 + part * PART_COLS;
#pragma unroll
      for (int q = 0; q < PART_COLS / BOX_C; ++q) tma_store(tma_c, staging + q * SUB_BYTES, part_col0 + q * BOX_C, row0);
      tma_store_commit();
    }
  }
}

// Staged plain (P.c_swizzle == 0: block_N columns that are not whole 128-byte rows, e.g. 152): the tile is staged
// row-major, rows of block_N elements (the plan's note: conflict free at 152 16-bit columns), and written by one
// unswizzled TMA box of block_N x 64 (16-byte rows: block_N * c_bytes a multiple of 16). Like the swizzled path it
// first waits until the previous tile's stores have read the buffer.
template <auto CFG>
TL_DEVICE_INLINE void store_acc_tile_plain(const float* acc, const TmaDescriptor* tma_c, unsigned staging, int c,
                                           int tid, int row0, int col0) {
  constexpr GemmAccStorePlan P = make_plan(CFG);
  constexpr GemmWgmmaAccTable AT = acc_table(P);
  constexpr int PAIR = P.acc_pair;
  constexpr OutType C_TYPE = CFG.out_dtype;
  constexpr int BLOCK = P.acc_block, PARTS = acc_store_parts(CFG), W = P.c_cols;  // W: a part's columns
  static_assert(P.c_swizzle == 0 && (W * P.c_bytes) % 16 == 0, "plain staging: 16-byte rows");
  constexpr int COLS = P.acc.cols();  // the consumer's columns
  static_assert(W % 8 == 0 && PARTS * W >= COLS && (PARTS == 1 || PARTS == 2), "one or two 8-column-block parts");
  const TileCoord e0 = P.acc(tid, 0);
  const unsigned thread_addr = staging + P.c_bytes * (e0.row * W + e0.col);
#pragma unroll
  for (int part = 0; part < PARTS; ++part) {
    // Part 0 holds columns [0, W), part 1 [block_N - W, block_N): 8-column blocks j of the accumulator.
    constexpr int LAST = COLS - W;
    const int start = part == 0 ? 0 : LAST;
    if (tid == 0) tma_store_wait_read();  // the previous part's (chain's, tile's) stores have left the buffer
    named_barrier_sync(1 + c, 128);
#pragma unroll
    for (int j = start / 8; j < (start + W) / 8; ++j)
#pragma unroll
      for (int h = 0; h < BLOCK; h += PAIR) {
        const int v = BLOCK * j + h;
        const unsigned addr = thread_addr + P.c_bytes * (AT.at[v].row * W + AT.at[v].col - start);
        if constexpr (C_TYPE == kOutF32) {
          st_shared_v2_f32(addr, acc[v], acc[v + 1]);
        } else {
          st_shared_b32(addr, pack2<C_TYPE == kOutBf16>(acc[v], acc[v + 1]));
        }
      }
    fence_proxy_async_smem();
    named_barrier_sync(1 + c, 128);
    if (tid == 0) {
      tma_store(tma_c, staging, col0 + start, row0);
      tma_store_commit();
    }
  }
}

// Direct: each thread stores its pairs (any N), dropping what lies past M or N.
template <auto CFG>
TL_DEVICE_INLINE void store_acc_tile_direct(const float* acc, void* C, int tid, int row0, int col0, int M, int N) {
  constexpr GemmAccStorePlan P = make_plan(CFG);
  constexpr GemmWgmmaAccTable AT = acc_table(P);
  constexpr int NV = P.acc.num_values(), PAIR = P.acc_pair, BLOCK = P.acc_block;
  const TileCoord e0 = P.acc(tid, 0);
  const int row = row0 + e0.row, col = col0 + e0.col;
#pragma unroll
  for (int j = 0; j < NV / BLOCK; ++j) {
    const int col_j = col + AT.at[BLOCK * j].col;
#pragma unroll
    for (int h = 0; h < BLOCK / PAIR; ++h) {
      const int v = BLOCK * j + PAIR * h;
      store_acc_pair<CFG.out_dtype>(C, row + AT.at[v].row, col_j, M, N, acc[v], acc[v + 1]);
    }
  }
}

// The epilogue CFG.tma_store chooses.
template <auto CFG>
TL_DEVICE_INLINE void store_acc_tile(const float* acc, const TmaDescriptor* tma_c, void* C, unsigned staging, int c,
                                     int tid, int row0, int col0, int M, int N) {
  if constexpr (CFG.tma_store && make_plan(CFG).c_swizzle == 0) {
    store_acc_tile_plain<CFG>(acc, tma_c, staging, c, tid, row0, col0);
  } else if constexpr (CFG.tma_store) {
    store_acc_tile_staged<CFG>(acc, tma_c, staging, c, tid, row0, col0);
  } else {
    store_acc_tile_direct<CFG>(acc, C, tid, row0, col0, M, N);
  }
}

}  // namespace gemm_detail
}  // namespace tl
