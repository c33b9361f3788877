// gemm.mma: the Ampere-style GEMM — cp.async multi-stage pipeline, ldmatrix from swizzled smem, mma.sync m16n8k16.
//
// C[M,N] = A[M,K] · B[N,K]^T, A and B K-major (row-major A, column-major B), 16-bit inputs, fp32 accumulation,
// 16-bit output. Requires K % 8 == 0 (16-byte cp.async rows); M and N are predicated.
//
// Threads: WARPS_M x WARPS_N warps. Warp (wm, wn) owns the (BM/WARPS_M) x (BN/WARPS_N) sub-tile at
// (wm*WTM, wn*WTN) of the block tile; it is covered by m16n8 mma tiles, MT = WTM/16 along M, NT = WTN/8 along N.
// Block (bx, by) maps to an output tile through panel rasterization (PANEL tile-rows walked column-wise).
//
// Shared memory (dynamic): STAGES x [A tile BM x 64][B tile BN x 64], 16-bit elements, each row 128 bytes =
// 8 chunks of 16 bytes. With SWIZZLE, chunk c of row r is stored at chunk c ^ (r % 8) (the XOR swizzle
// Swizzle<3,3,3> on element offsets), which makes both the cp.async writes and the ldmatrix reads of 8
// consecutive rows at one chunk hit 8 different bank groups; without it ldmatrix is 8-way conflicted.
#pragma once

#include "gemm/gemm_common.cuh"
#include "tile/config.hpp"
#include "tile/probe.hpp"

#ifndef TL_DEVICE_INLINE
#define TL_DEVICE_INLINE __device__ __forceinline__
#endif

namespace tl {
namespace mma_detail {

// Timeline regions (TL_PROBE marks; compiled in only with -DTL_TIMELINE=1), in the order of the spec's `probes`.
// Every warp marks its cp.async issue of a stage ahead, its wait for the current stage (cp.async.wait_group +
// __syncthreads), its k-tile of ldmatrix + mma.sync, and the epilogue. Stage = pipeline stage, aux = k-step.
enum MmaProbe : unsigned { kProbeLoadIssue, kProbeWaitStage, kProbeMma, kProbeEpilogue };

// 16-byte async copy global -> shared; src_bytes < 16 zero-fills the rest (used for the M/N/K edges).
TL_DEVICE_INLINE void cp_async_16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
TL_DEVICE_INLINE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
TL_DEVICE_INLINE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

TL_DEVICE_INLINE void ldmatrix_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

template <bool BF16>
TL_DEVICE_INLINE void mma_16816(float* d, const unsigned* a, const unsigned* b) {
  if constexpr (BF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile of 128-byte rows.
template <bool SWIZZLE>
TL_DEVICE_INLINE unsigned chunk_offset(int row, int chunk) {
  return row * 128 + ((SWIZZLE ? (chunk ^ (row % 8)) : chunk) * 16);
}

// Copies rows [row0, row0 + ROWS) x columns [k0, k0 + 64) of a K-major matrix (`rows` rows, K columns) into a
// 128-byte-row smem tile; each thread moves ROWS * 8 / THREADS 16-byte chunks, out-of-bounds ones zero-filled.
// Thread tid always moves chunk tid % 8 of rows tid / 8 + i * THREADS / 8, so its source is one pointer plus a
// multiple of a row stride: few live registers, which the 64 x 64 warp tiles need for their accumulators.
template <int ROWS, int THREADS, bool SWIZZLE>
TL_DEVICE_INLINE void load_tile(unsigned dst, const unsigned short* src, int row0, int rows, int k0, int K, int tid) {
  constexpr int ROW_STEP = THREADS / 8;
  const int row = tid / 8, chunk = tid % 8, gk = k0 + chunk * 8;
  const int kbytes = (K - gk) >= 8 ? 16 : (K - gk > 0 ? (K - gk) * 2 : 0);
  const unsigned short* p = src + static_cast<long long>(row0 + row) * K + gk;
  const long long step = static_cast<long long>(ROW_STEP) * K;
#pragma unroll
  for (int i = 0; i < ROWS / ROW_STEP; ++i) {
    const int bytes = row0 + row + i * ROW_STEP < rows ? kbytes : 0;
    cp_async_16(dst + chunk_offset<SWIZZLE>(row + i * ROW_STEP, chunk), bytes ? p + i * step : src, bytes);
  }
}
}  // namespace mma_detail

template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES>
constexpr int gemm_mma_smem_bytes() {
  return STAGES * (BM + BN) * 64 * 2;
}

// MIN_BLOCKS > 1 asks the compiler to fit that many blocks per SM (caps registers per thread).
template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, bool SWIZZLE, int PANEL, bool BF16, int MIN_BLOCKS = 1>
__global__ void __launch_bounds__(WARPS_M* WARPS_N * 32, MIN_BLOCKS)
    gemm_mma(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
             unsigned short* __restrict__ C, int M, int N, int K) {
  using namespace mma_detail;
  using namespace gemm_detail;
  constexpr int BK = 64;
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;
  constexpr int MT = WTM / 16, NT = WTN / 8;
  static_assert(WTM % 16 == 0 && WTN % 16 == 0, "warp tile must be a multiple of 16 x 16");
  static_assert((BM * 8) % THREADS == 0 && (BN * 8) % THREADS == 0, "tile chunks must divide among threads");
  constexpr unsigned A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;

  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned smem_base = smem_u32(smem);

  // Panel rasterization of the 2-D grid: blockIdx.x enumerates tiles.
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int t = blockIdx.x;
  const int per_group = PANEL * tiles_n;
  const int group = t / per_group;
  const int first_m = group * PANEL;
  const int rows = tiles_m - first_m < PANEL ? tiles_m - first_m : PANEL;
  const int tm = first_m + (t - group * per_group) % rows;
  const int tn = (t - group * per_group) / rows;
  const int m0 = tm * BM, n0 = tn * BN;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int k_steps = (K + BK - 1) / BK;
  if (tid == 0) TL_PROBE_BLOCK_BEGIN();
  TL_PROBE_WARP_INIT();

  auto load_stage = [&](int stage, int k_step) {
    const unsigned a_dst = smem_base + stage * STAGE_BYTES;
    load_tile<BM, THREADS, SWIZZLE>(a_dst, A, m0, M, k_step * BK, K, tid);
    load_tile<BN, THREADS, SWIZZLE>(a_dst + A_BYTES, B, n0, N, k_step * BK, K, tid);
  };


  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

  // Prologue: fill STAGES-1 stages.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_steps) {
      TL_PROBE_BEGIN(kProbeLoadIssue, s, s);
      load_stage(s, s);
      TL_PROBE_END(kProbeLoadIssue, s, s);
    }
    cp_async_commit();
  }

  // Warp fragments, double-buffered: the ldmatrix of k16 step kk + 1 is issued before the mma of step kk, and the
  // first step of the next stage right after the stage barrier, so ldmatrix latency hides behind tensor work.
  unsigned a_frag[2][MT][4], b_frag[2][NT][2];
  // Fragment addresses. A (m16 x k16 per mma tile): lane supplies row lane%16 of the tile at k-chunk 2*kk + lane/16.
  // B (two n8 x k16 tiles per ldmatrix.x4): lane supplies n-row lane%8 + 8*(lane/16) at k-chunk 2*kk + (lane/8)%2.
  // Every row a lane supplies is its first row plus a multiple of 8, so row % 8 = lane % 8 and, with 2*kk even,
  // the swizzled chunk byte offset (chunk ^ row%8) * 16 is (first chunk ^ lane%8) * 16 ^ 32*kk: one register per
  // operand plus immediates (tile i at +2048 bytes, tile pair j at +2048), not one address per (tile, kk).
  const unsigned a_row = (wm * WTM + lane % 16) * 128, b_row = (wn * WTN + lane % 8 + 8 * (lane / 16)) * 128;
  const unsigned a_col = (SWIZZLE ? ((lane / 16) ^ (lane % 8)) : lane / 16) * 16;
  const unsigned b_col = (SWIZZLE ? (((lane / 8) % 2) ^ (lane % 8)) : (lane / 8) % 2) * 16;
  auto load_frags = [&](int buf, int stage, int kk) {
    const unsigned a_tile = smem_base + stage * STAGE_BYTES;
    const unsigned b_tile = a_tile + A_BYTES;
    const unsigned a_addr = a_tile + a_row + (SWIZZLE ? (a_col ^ (32u * kk)) : a_col + 32u * kk);
    const unsigned b_addr = b_tile + b_row + (SWIZZLE ? (b_col ^ (32u * kk)) : b_col + 32u * kk);
#pragma unroll
    for (int i = 0; i < MT; ++i)
      ldmatrix_x4(a_addr + i * 16 * 128, a_frag[buf][i][0], a_frag[buf][i][1], a_frag[buf][i][2], a_frag[buf][i][3]);
#pragma unroll
    for (int j = 0; j < NT; j += 2)
      ldmatrix_x4(b_addr + j * 8 * 128, b_frag[buf][j][0], b_frag[buf][j][1], b_frag[buf][j + 1][0],
                  b_frag[buf][j + 1][1]);
  };
  static_assert((BK / 16) % 2 == 0, "the fragment buffers alternate and each stage starts on buffer 0");

  TL_PROBE_BEGIN(kProbeWaitStage, 0, 0);
  cp_async_wait<STAGES - 2>();
  __syncthreads();  // stage 0 is visible to all
  TL_PROBE_END(kProbeWaitStage, 0, 0);
  if (k_steps > 0) load_frags(0, 0, 0);
  for (int k = 0; k < k_steps; ++k) {
    const int stage = k % STAGES;
    TL_PROBE_BEGIN(kProbeMma, stage, k);
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      if (kk + 1 < BK / 16) load_frags((kk + 1) % 2, stage, kk + 1);
      if (kk == 0) {
        // Refill the stage the previous iteration consumed (every warp passed the barrier after reading it).
        const int next = k + STAGES - 1;
        if (next < k_steps) {
          TL_PROBE_BEGIN(kProbeLoadIssue, next % STAGES, next);
          load_stage(next % STAGES, next);
          TL_PROBE_END(kProbeLoadIssue, next % STAGES, next);
        }
        cp_async_commit();
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_16816<BF16>(acc[i][j], a_frag[kk % 2][i], b_frag[kk % 2][j]);
    }
    TL_PROBE_END(kProbeMma, stage, k);
    TL_PROBE_BEGIN(kProbeWaitStage, (k + 1) % STAGES, k + 1);
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // stage k + 1 is visible to all; every warp is done reading stage k
    TL_PROBE_END(kProbeWaitStage, (k + 1) % STAGES, k + 1);
    if (k + 1 < k_steps) load_frags(0, (k + 1) % STAGES, 0);
  }
  cp_async_wait<0>();
  TL_PROBE_BEGIN(kProbeEpilogue, probe::kNoStage, t);

  // Epilogue: mma C fragment — lane/4 is the row (and row+8), 2*(lane%4) the column pair of each n8 tile.
#pragma unroll
  for (int i = 0; i < MT; ++i) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int col = n0 + wn * WTN + j * 8 + 2 * (lane % 4);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm * WTM + i * 16 + lane / 4 + 8 * h;
        store_pair(C, row, col, M, N, pack2<BF16>(acc[i][j][2 * h], acc[i][j][2 * h + 1]));
      }
    }
  }
  TL_PROBE_END(kProbeEpilogue, probe::kNoStage, t);
  TL_PROBE_FLUSH();
  if (tid == 0) TL_PROBE_BLOCK_END();
}

}  // namespace tl
