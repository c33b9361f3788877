// gemm.mma: the Ampere-style GEMM — cp.async multi-stage pipeline, ldmatrix from swizzled smem, mma.sync m16n8k16.
//
// C[M,N] = A[M,K] · op(B), A row-major (K-major), 16-bit inputs, fp32 accumulation, C row-major in C_TYPE
// (bf16, f16 or f32). TRANS_B (TileLang's trans_B): B is stored N x K (K-major, C = A·B^T); otherwise K x N
// row-major (N-major, C = A·B). Requires K % 8 == 0 (16-byte cp.async rows of A and of a K-major B) and, for
// an N-major B, N % 8 == 0; M and N are predicated.
//
// Threads: WARPS_M x WARPS_N warps. Warp (wm, wn) owns the (BM/WARPS_M) x (BN/WARPS_N) sub-tile at
// (wm*WTM, wn*WTN) of the block tile; it is covered by m16n8 mma tiles, MT = WTM/16 along M, NT = WTN/8 along N.
// Block (bx, by) maps to an output tile through panel rasterization (PANEL tile-rows walked column-wise).
//
// Shared memory (dynamic): STAGES x [A tile][B tile], 16-bit elements, built from 128-byte rows of 8 chunks of
// 16 bytes. A: BM rows (m) x 64 k. B, K-major: BN rows (n) x 64 k. B, N-major: BN/64 column blocks, each 64 rows
// (k) x 64 n, block after block (CuTe/TMA's MN-major 128B layout). With SWIZZLE, chunk c of row r is stored at
// chunk c ^ (r % 8) (Swizzle<3,3,3> on element offsets), which makes both the cp.async writes and the ldmatrix
// reads of 8 consecutive rows at one chunk hit 8 different bank groups; without it ldmatrix is 8-way conflicted.
// A K-major B is read with ldmatrix, an N-major one with ldmatrix.trans (each 8x8 matrix arrives transposed,
// as the mma's B fragment wants it).
#pragma once

#include "gemm/gemm_common.cuh"
#include "tile/config.hpp"
#include "tile/cp_async.cuh"
#include "tile/ldmatrix.cuh"
#include "tile/mma_sync.cuh"
#include "tile/probe.hpp"
#include "tile/smem.cuh"

namespace tl {
namespace mma_detail {

// Timeline regions (TL_PROBE marks; compiled in only with -DTL_TIMELINE=1), in the order of the spec's `probes`.
// Every warp marks its cp.async issue of a stage ahead, its wait for the current stage (cp.async.wait_group +
// __syncthreads), its k-tile of ldmatrix + mma.sync, and the epilogue. Stage = pipeline stage, aux = k-step.
enum MmaProbe : unsigned { kProbeLoadIssue, kProbeWaitStage, kProbeMma, kProbeEpilogue };

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

// Copies k-rows [k0, k0 + 64) x columns [n0, n0 + BN) of the row-major K x N matrix B (N-major) into BN/64
// column blocks of 64 k-rows x 128 bytes. Consecutive threads take consecutive 16-byte chunks of one k-row
// (coalesced); thread tid always moves chunk tid % (BN/8) of k-rows tid / (BN/8) + i * THREADS / (BN/8).
// N % 8 == 0, so a chunk is either whole or wholly outside; outside ones (n >= N or k >= K) are zero-filled.
template <int BN, int THREADS, bool SWIZZLE>
TL_DEVICE_INLINE void load_tile_n_major(unsigned dst, const unsigned short* B, int n0, int N, int k0, int K, int tid) {
  constexpr int CHUNKS = BN / 8;
  constexpr int ROW_STEP = THREADS / CHUNKS;
  static_assert(THREADS % CHUNKS == 0 && 64 % ROW_STEP == 0, "the k-rows must divide among the threads");
  const int chunk = tid % CHUNKS, row = tid / CHUNKS;
  const int gn = n0 + chunk * 8;
  const bool n_in = gn < N;
  const unsigned short* p = B + static_cast<long long>(k0 + row) * N + gn;
  const long long step = static_cast<long long>(ROW_STEP) * N;
  const unsigned block = dst + (chunk / 8) * (64 * 128);
#pragma unroll
  for (int i = 0; i < 64 / ROW_STEP; ++i) {
    const int bytes = n_in && k0 + row + i * ROW_STEP < K ? 16 : 0;
    cp_async_16(block + chunk_offset<SWIZZLE>(row + i * ROW_STEP, chunk % 8), bytes ? p + i * step : B, bytes);
  }
}
}  // namespace mma_detail

template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES>
constexpr int gemm_mma_smem_bytes() {
  return STAGES * (BM + BN) * 64 * 2;
}

// MIN_BLOCKS > 1 asks the compiler to fit that many blocks per SM (caps registers per thread).
// Scheduling switches (config parameters of the spec; each is measured in docs/perf.md):
//   MIN_BLOCKS   blocks per SM __launch_bounds__ caps the registers for (2: 16 warps per SM from two blocks).
//   UNROLL_K     unroll the k loop by STAGES, so every stage's smem addresses are immediates.
//   EARLY_SYNC   pass the stage barrier and ldmatrix the next stage's first fragments before the last k16 step's
//                MMAs instead of after them, so that ldmatrix latency hides behind those MMAs.
//   SERPENTINE   walk the n8 tiles of odd m16 rows backwards, so consecutive mma.sync share a B fragment at the
//                row turns as well as the A fragment within a row.
//   FRAG_BUFS    2: warp fragments double-buffered across k16 steps (ldmatrix of step kk + 1 before the MMAs of
//                step kk); 1: loaded right before their MMAs (fewer registers: 16 warps per SM at 128 registers
//                hide the ldmatrix latency with other warps instead). EARLY_SYNC needs FRAG_BUFS = 2.
template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, bool SWIZZLE, int PANEL, bool BF16, bool TRANS_B = true,
          int C_TYPE = BF16 ? gemm_detail::kOutBf16 : gemm_detail::kOutF16, int MIN_BLOCKS = 1, bool UNROLL_K = false,
          bool EARLY_SYNC = false, bool SERPENTINE = false, int FRAG_BUFS = 2>
__global__ void __launch_bounds__(WARPS_M* WARPS_N * 32, MIN_BLOCKS)
    gemm_mma(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, void* __restrict__ C, int M,
             int N, int K) {
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
    if constexpr (TRANS_B) {
      load_tile<BN, THREADS, SWIZZLE>(a_dst + A_BYTES, B, n0, N, k_step * BK, K, tid);
    } else {
      load_tile_n_major<BN, THREADS, SWIZZLE>(a_dst + A_BYTES, B, n0, N, k_step * BK, K, tid);
    }
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
  static_assert(FRAG_BUFS == 1 || FRAG_BUFS == 2, "one or two fragment buffers");
  unsigned a_frag[FRAG_BUFS][MT][4], b_frag[FRAG_BUFS][NT][2];
  // Fragment addresses. A (m16 x k16 per mma tile): lane supplies row lane%16 of the tile at k-chunk 2*kk + lane/16.
  // Every row a lane supplies is its first row plus a multiple of 8, so row % 8 = lane % 8 and, with 2*kk even,
  // the swizzled chunk byte offset (chunk ^ row%8) * 16 is (first chunk ^ lane%8) * 16 ^ 32*kk: one register per
  // operand plus immediates (tile i at +2048 bytes), not one address per (tile, kk).
  const unsigned a_row = (wm * WTM + lane % 16) * 128;
  const unsigned a_col = (SWIZZLE ? ((lane / 16) ^ (lane % 8)) : lane / 16) * 16;
  // B, K-major (two n8 x k16 tiles per ldmatrix.x4): lane supplies n-row lane%8 + 8*(lane/16) at k-chunk
  // 2*kk + (lane/8)%2; the same trick as A (tile pair j at +2048 bytes).
  const unsigned b_row = (wn * WTN + lane % 8 + 8 * (lane / 16)) * 128;
  const unsigned b_col = (SWIZZLE ? (((lane / 8) % 2) ^ (lane % 8)) : (lane / 8) % 2) * 16;
  // B, N-major (ldmatrix.x4.trans, matrices q = lane/8: n8 tile j + q/2, k half q%2): lane supplies k-row
  // 16*kk + 8*(q%2) + lane%8 of n-chunk c = wn*WTN/8 + j + q/2, at block c/8, chunk c%8 ^ lane%8 (k-row % 8 =
  // lane % 8 again); k steps are +2048 bytes (16 rows). The XOR term depends on j, so each tile pair keeps its
  // own offset; when the warp's columns start on a 64-column block the pattern repeats every 4 pairs (+8192).
  // (One register XORed with an immediate per pair, as for A, measured worse here: 20 B of spills against 8.)
  constexpr int NPAIR = NT / 2;
  constexpr int NPAT = (WTN % 64 == 0 && NPAIR > 4) ? 4 : NPAIR;
  unsigned b_pair[NPAT];
#pragma unroll
  for (int pr = 0; pr < NPAT; ++pr) {
    const int q = lane / 8;
    const int c = wn * WTN / 8 + 2 * pr + q / 2;
    b_pair[pr] = (c / 8) * (64 * 128) + (8 * (q % 2) + lane % 8) * 128 + (SWIZZLE ? ((c % 8) ^ (lane % 8)) : c % 8) * 16;
  }
  auto load_frags = [&](int buf, int stage, int kk) {
    const unsigned a_tile = smem_base + stage * STAGE_BYTES;
    const unsigned b_tile = a_tile + A_BYTES;
    const unsigned a_addr = a_tile + a_row + (SWIZZLE ? (a_col ^ (32u * kk)) : a_col + 32u * kk);
#pragma unroll
    for (int i = 0; i < MT; ++i)
      ldmatrix_x4(a_addr + i * 16 * 128, a_frag[buf][i][0], a_frag[buf][i][1], a_frag[buf][i][2], a_frag[buf][i][3]);
    if constexpr (TRANS_B) {
      const unsigned b_addr = b_tile + b_row + (SWIZZLE ? (b_col ^ (32u * kk)) : b_col + 32u * kk);
#pragma unroll
      for (int j = 0; j < NT; j += 2)
        ldmatrix_x4(b_addr + j * 8 * 128, b_frag[buf][j][0], b_frag[buf][j][1], b_frag[buf][j + 1][0],
                    b_frag[buf][j + 1][1]);
    } else {
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        const unsigned addr = b_tile + b_pair[(j / 2) % NPAT] + ((j / 2) / NPAT) * (64 * 128) + kk * 2048u;
        ldmatrix_x4_trans(addr, b_frag[buf][j][0], b_frag[buf][j][1], b_frag[buf][j + 1][0], b_frag[buf][j + 1][1]);
      }
    }
  };
  static_assert((BK / 16) % 2 == 0, "the fragment buffers alternate and each stage starts on buffer 0");

  TL_PROBE_BEGIN(kProbeWaitStage, 0, 0);
  cp_async_wait<STAGES - 2>();
  __syncthreads();  // stage 0 is visible to all
  TL_PROBE_END(kProbeWaitStage, 0, 0);
  if (FRAG_BUFS == 2 && k_steps > 0) load_frags(0, 0, 0);
  // The wait for stage k + 1 (cp.async.wait_group + barrier: visible to all, and every warp is done reading
  // stage k, which the next step refills) and the first fragments of stage k + 1.
  // Stage indices follow from the unrolled loop's constant `stage`, or from k (fewer live registers than from a
  // runtime `stage`: 8 bytes of spills on sm_80 otherwise).
  auto next_stage = [&](int k, int stage) {
    const int s1 = UNROLL_K ? (stage + 1) % STAGES : (k + 1) % STAGES;
    TL_PROBE_BEGIN(kProbeWaitStage, s1, k + 1);
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    TL_PROBE_END(kProbeWaitStage, s1, k + 1);
    if (FRAG_BUFS == 2 && k + 1 < k_steps) load_frags(0, s1, 0);
  };
  // One k-step (stage = k % STAGES; a constant when the caller's loop is unrolled).
  auto k_step = [&](int k, int stage) {
    TL_PROBE_BEGIN(kProbeMma, stage, k);
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      const int buf = FRAG_BUFS == 2 ? kk % 2 : 0;
      if constexpr (FRAG_BUFS == 1) {
        load_frags(0, stage, kk);
      } else if (kk + 1 < BK / 16) {
        load_frags((kk + 1) % 2, stage, kk + 1);
      } else if constexpr (EARLY_SYNC) {
        next_stage(k, stage);  // the last step's fragments are in buffer 1; buffer 0 is free
      }
      if (kk == 0) {
        // Refill the stage the previous iteration consumed (every warp passed the barrier after reading it).
        const int next = k + STAGES - 1;
        const int next_s = UNROLL_K ? (stage + STAGES - 1) % STAGES : next % STAGES;
        if (next < k_steps) {
          TL_PROBE_BEGIN(kProbeLoadIssue, next_s, next);
          load_stage(next_s, next);
          TL_PROBE_END(kProbeLoadIssue, next_s, next);
        }
        cp_async_commit();
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int jj = 0; jj < NT; ++jj) {
          const int j = SERPENTINE && (i % 2) ? NT - 1 - jj : jj;
          mma_16816<BF16>(acc[i][j], a_frag[buf][i], b_frag[buf][j]);
        }
    }
    TL_PROBE_END(kProbeMma, stage, k);
    if constexpr (!EARLY_SYNC || FRAG_BUFS == 1) next_stage(k, stage);
  };
  if constexpr (UNROLL_K) {
    for (int k0 = 0; k0 < k_steps; k0 += STAGES) {
#pragma unroll
      for (int s = 0; s < STAGES; ++s)
        if (k0 + s < k_steps) k_step(k0 + s, s);
    }
  } else {
    for (int k = 0; k < k_steps; ++k) k_step(k, k % STAGES);
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
        store_acc_pair<C_TYPE>(C, row, col, M, N, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
      }
    }
  }
  TL_PROBE_END(kProbeEpilogue, probe::kNoStage, t);
  TL_PROBE_FLUSH();
  if (tid == 0) TL_PROBE_BLOCK_END();
}

}  // namespace tl
