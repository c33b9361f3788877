// gemm.fp8: the Hopper FP8 GEMM — e4m3 A and B through TMA into 128B-swizzled smem, mbarrier pipeline,
// warp-specialized wgmma m64nNk32 e4m3, f32 accumulation with promotion, scales per tensor, row or 128-block.
//
// C[M,N] = (scale_A A[M,K]) · (scale_B B[N,K])^T: A row-major (K-major), B stored N x K (K-major, what FP8 wgmma
// and cuBLASLt's FP8 GEMM require), C row-major bf16 or f32. The one template parameter is the config
// (gemm_fp8_plan.hpp); tma_sa and tma_sb are the block scales' tensor maps where it sets scale_tma (else unread
// placeholders); the plan made from it holds every layout, offset and byte count the kernel uses. The main
// loop, its threads, shared memory, two-level accumulation and scales are gemm_kmajor.cuh's; the work tiles are the
// M x N grid's output tiles, walked in a grouped ("panel") raster order so that consecutive tiles reuse the same A
// rows (raster m) or B columns (raster n) from L2.
#pragma once

#include "gemm/gemm_fp8_plan.hpp"
#include "gemm/gemm_kmajor.cuh"
#include "tile/config.hpp"
#include "tile/work_order.hpp"

namespace tl {

// The work tiles of one M x N GEMM (gemm_kmajor.cuh's tile source): tile t is output tile gemm_raster_tile(t).
template <auto CFG>
struct GemmGridTiles {
  int M, N;

  TL_DEVICE_INLINE static constexpr bool clip_rows() { return false; }  // the tensor maps' bounds are M and N
  TL_DEVICE_INLINE void prepare(unsigned) {}
  TL_DEVICE_INLINE int tiles_m() const { return (M + CFG.block_M - 1) / CFG.block_M; }
  TL_DEVICE_INLINE int tiles_n() const { return (N + CFG.block_N - 1) / CFG.block_N; }
  TL_DEVICE_INLINE int count() const { return tiles_m() * tiles_n(); }
  TL_DEVICE_INLINE KMajorTile at(int t) const {
    const GemmTile tile = gemm_raster_tile(t, tiles_m(), tiles_n(), CFG.panel, CFG.raster_n);
    return {tile.m * CFG.block_M, M, tile.n * CFG.block_N, tile.n * CFG.block_N, 0};
  }
};

template <GemmFp8Config CFG>
__global__ void __launch_bounds__(CFG.threads(), 1)
    gemm_fp8(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
             const __grid_constant__ TmaDescriptor tma_c, const float* __restrict__ scale_A,
             const float* __restrict__ scale_B, const __grid_constant__ TmaDescriptor tma_sa,
             const __grid_constant__ TmaDescriptor tma_sb, void* __restrict__ C, int M, int N, int K) {
  GemmGridTiles<CFG> tiles{M, N};
  gemm_kmajor_body<CFG>(tiles, tma_a, tma_b, tma_c, scale_A, scale_B, C, N, K, &tma_sa, &tma_sb);
}

}  // namespace tl
