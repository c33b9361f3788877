// gemm.mma: the Ampere-style GEMM — cp.async multi-stage pipeline, ldmatrix from swizzled smem, mma.sync m16n8k16.
//
// C[M,N] = A[M,K] · op(B), A row-major (K-major), 16-bit inputs, fp32 accumulation, C row-major in out_dtype
// (bf16, f16 or f32). trans_B: B is stored N x K (K-major, C = A·B^T); otherwise K x N row-major (N-major,
// C = A·B). Requires K % 8 == 0 (16-byte cp.async rows of A and of a K-major B) and, for an N-major B, N % 8 == 0;
// M and N are predicated. The config (GemmMmaConfig) is the one template parameter; gemm_mma_plan.hpp holds the
// layouts and fragments below, which the host shows and checks.
//
// Threads: warps_M x warps_N warps. Warp (wm, wn) owns the warp_M x warp_N sub-tile at (wm*warp_M, wn*warp_N) of the
// block tile; it is covered by m16n8 mma tiles, MT = warp_M/16 along M, NT = warp_N/8 along N; acc[i][j] is the mma
// C fragment of tile (i, j). Block t maps to an output tile through panel rasterization (panel tile-rows walked
// column-wise).
//
// Shared memory (dynamic): num_stages x [A tile][B tile] (the plan's smem_A, smem_B), 16-bit elements in 128-byte
// rows of 8 chunks of 16 bytes. A: block_M rows (m) x 64 k. B, K-major: block_N rows (n) x 64 k. B, N-major:
// block_N/64 column blocks, each 64 rows (k) x 64 n (TMA's MN-major 128B layout). With swizzle, chunk c of row r
// is stored at chunk c ^ (r % 8) (the 128B swizzle), so the cp.async writes and the ldmatrix reads of 8 consecutive
// rows at one chunk hit 8 different bank groups; without it ldmatrix is 8-way conflicted. A K-major B is read with
// ldmatrix, an N-major one with ldmatrix.trans (each 8x8 matrix arrives transposed, as the mma's B fragment wants).
// Run-time offsets are evaluated with fixed<>() (tile/fixed.hpp): arithmetic built from the plan's constants.
#pragma once

#include "gemm/gemm_common.cuh"
#include "gemm/gemm_mma_plan.hpp"
#include "tile/config.hpp"
#include "tile/cp_async.cuh"
#include "tile/fixed.hpp"
#include "tile/ldmatrix.cuh"
#include "tile/mma_sync.cuh"
#include "tile/probe.hpp"
#include "tile/smem.cuh"

namespace tl {
namespace mma_detail {

// Byte offset in the smem tile TILE ((row, col) -> element offset) of (row, col) + i * (DR, DC), i a constant once
// unrolled, `first` that of (row, col). R steps make a whole number of swizzle periods, over which every chunk keeps
// its place in its 128-byte row: step i is step i % R plus an immediate, so a thread keeps R offsets live (1 but
// with a single warp), not one per step.
template <SwizzledLayout TILE, int DR, int DC>
TL_DEVICE_INLINE unsigned stepped_offset(unsigned first, int row, int col, int i) {
  constexpr int R = [] {
    int r = 1;
    while (TILE.layout()(r * DR, r * DC) % TILE.period() != 0) ++r;
    return r;
  }();
  constexpr auto tile = fixed<TILE>();
  const unsigned lane = R == 1 ? first : 2 * tile(row + i % R * DR, col + i % R * DC);
  return lane + 2 * tile(i / R * R * DR, i / R * R * DC);
}

// Copies rows [row0, row0 + ROWS) x columns [k0, k0 + 64) of a K-major matrix (`rows` rows, K columns) into the smem
// tile TILE ((row, k) -> element offset) at `dst`; each thread moves ROWS * 8 / THREADS 16-byte chunks,
// out-of-bounds ones zero-filled. Thread tid always moves chunk tid % 8 of rows tid / 8 + i * THREADS / 8, so its
// source is one pointer plus a multiple of a row stride: few live registers, which the 64 x 64 warp tiles need for
// their accumulators.
template <int ROWS, int THREADS, SwizzledLayout TILE>
TL_DEVICE_INLINE void load_tile(unsigned dst, const unsigned short* src, int row0, int rows, int k0, int K, int tid) {
  constexpr int ROW_STEP = THREADS / 8;
  const int row = tid / 8, chunk = tid % 8, gk = k0 + chunk * 8;
  const int kbytes = (K - gk) >= 8 ? 16 : (K - gk > 0 ? (K - gk) * 2 : 0);
  const unsigned short* p = src + static_cast<long long>(row0 + row) * K + gk;
  const long long step = static_cast<long long>(ROW_STEP) * K;
  const unsigned first = 2 * fixed<TILE>()(row, chunk * 8);
#pragma unroll
  for (int i = 0; i < ROWS / ROW_STEP; ++i) {
    const int bytes = row0 + row + i * ROW_STEP < rows ? kbytes : 0;
    cp_async_16(dst + stepped_offset<TILE, ROW_STEP, 0>(first, row, chunk * 8, i), bytes ? p + i * step : src, bytes);
  }
}

// Copies k-rows [k0, k0 + 64) x columns [n0, n0 + BN) of the row-major K x N matrix B (N-major) into the MN-major
// smem tile TILE ((n, k) -> element offset). Consecutive threads take consecutive 16-byte chunks of one k-row
// (coalesced); thread tid always moves chunk tid % (BN/8) of k-rows tid / (BN/8) + i * THREADS / (BN/8).
// N % 8 == 0, so a chunk is either whole or wholly outside; outside ones (n >= N or k >= K) are zero-filled.
template <int BN, int THREADS, SwizzledLayout TILE>
TL_DEVICE_INLINE void load_tile_n_major(unsigned dst, const unsigned short* B, int n0, int N, int k0, int K, int tid) {
  constexpr int CHUNKS = BN / 8;
  constexpr int ROW_STEP = THREADS / CHUNKS;
  static_assert(THREADS % CHUNKS == 0 && 64 % ROW_STEP == 0, "the k-rows must divide among the threads");
  const int chunk = tid % CHUNKS, row = tid / CHUNKS;
  const int gn = n0 + chunk * 8;
  const bool n_in = gn < N;
  const unsigned short* p = B + static_cast<long long>(k0 + row) * N + gn;
  const long long step = static_cast<long long>(ROW_STEP) * N;
  const unsigned first = 2 * fixed<TILE>()(chunk * 8, row);
#pragma unroll
  for (int i = 0; i < 64 / ROW_STEP; ++i) {
    const int bytes = n_in && k0 + row + i * ROW_STEP < K ? 16 : 0;
    cp_async_16(dst + stepped_offset<TILE, 0, ROW_STEP>(first, chunk * 8, row, i), bytes ? p + i * step : B, bytes);
  }
}
}  // namespace mma_detail

// The config's scheduling switches (config parameters of the spec; each is measured in docs/perf.md):
//   min_blocks   blocks per SM __launch_bounds__ caps the registers for (2: 16 warps per SM from two blocks).
//   unroll_k     unroll the k loop by num_stages, so every stage's smem addresses are immediates.
//   early_sync   pass the stage barrier and ldmatrix the next stage's first fragments before the last k16 step's
//                MMAs instead of after them, so that ldmatrix latency hides behind those MMAs.
//   serpentine   walk the n8 tiles of odd m16 rows backwards, so consecutive mma.sync share a B fragment at the
//                row turns as well as the A fragment within a row.
//   frag_buffers 2: warp fragments double-buffered across k16 steps (ldmatrix of step kk + 1 before the MMAs of
//                step kk); 1: loaded right before their MMAs (fewer registers: 16 warps per SM at 128 registers
//                hide the ldmatrix latency with other warps instead). early_sync needs frag_buffers = 2.
template <GemmMmaConfig CFG>
__global__ void __launch_bounds__(CFG.warps_M* CFG.warps_N * 32, CFG.min_blocks)
    gemm_mma(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, void* __restrict__ C, int M,
             int N, int K) {
  using namespace mma_detail;
  using namespace gemm_detail;
  constexpr GemmMmaPlan P = make_plan(CFG);
  constexpr auto tile_A = fixed<P.smem_A>();
  constexpr auto tile_B = fixed<P.smem_B>();
  constexpr auto rows_A = fixed<P.smem_A.m_layout>();
  constexpr auto rows_B = fixed<P.smem_B.m_layout>();
  constexpr int BM = CFG.block_M, BN = CFG.block_N, STAGES = CFG.num_stages, PANEL = CFG.panel;
  constexpr bool TRANS_B = CFG.trans_B, UNROLL_K = CFG.unroll_k, EARLY_SYNC = CFG.early_sync;
  constexpr int FRAG_BUFS = CFG.frag_buffers;
  constexpr int BK = 64;
  constexpr int THREADS = P.threads;
  constexpr int WARPS_N = CFG.warps_N;
  constexpr int WTM = P.warp_M, WTN = P.warp_N;
  constexpr int MT = P.mma_M, NT = P.mma_N;
  static_assert(WTM % 16 == 0 && WTN % 16 == 0, "warp tile must be a multiple of 16 x 16");
  static_assert((BM * 8) % THREADS == 0 && (BN * 8) % THREADS == 0, "tile chunks must divide among threads");

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
    load_tile<BM, THREADS, P.smem_A>(smem_base + P.a_offset(stage), A, m0, M, k_step * BK, K, tid);
    if constexpr (TRANS_B) {
      load_tile<BN, THREADS, P.smem_B>(smem_base + P.b_offset(stage), B, n0, N, k_step * BK, K, tid);
    } else {
      load_tile_n_major<BN, THREADS, P.smem_B>(smem_base + P.b_offset(stage), B, n0, N, k_step * BK, K, tid);
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
      TL_PROBE_BEGIN(GemmMmaProbe::load_issue, s, s);
      load_stage(s, s);
      TL_PROBE_END(GemmMmaProbe::load_issue, s, s);
    }
    cp_async_commit();
  }

  // Warp fragments, double-buffered: the ldmatrix of k16 step kk + 1 is issued before the mma of step kk, and the
  // first step of the next stage right after the stage barrier, so ldmatrix latency hides behind tensor work.
  static_assert(FRAG_BUFS == 1 || FRAG_BUFS == 2, "one or two fragment buffers");
  unsigned a_frag[FRAG_BUFS][MT][4], b_frag[FRAG_BUFS][NT][2];
  // Fragment addresses: lane l points its ldmatrix at the row and 16-byte block P.ldmatrix_*_src gives (A: row
  // l%16, block l/16). The rows a lane supplies differ from its first by multiples of 8 (a whole swizzle period), so
  // its chunk's place inside the 128-byte row stays that of its first row, and the k16 steps move by whole chunks in
  // bits that place leaves free: each address is the start of the lane's first row plus its chunk place joined with
  // the step (XOR when swizzled), plus an immediate per tile (A tile i at smem_A(16 i, 0)). One register per
  // operand, not one address per (tile, kk); the plan tests check these sums against the layouts.
  const TileCoord a_src = fixed<P.ldmatrix_A_src>()(lane, 0);
  const unsigned a_row = 2 * rows_A(wm * WTM + a_src.row, 0);  // the swizzle permutes chunks within a row
  const unsigned a_col = 2 * tile_A(wm * WTM + a_src.row, P.chunk * a_src.col) - a_row;
  // B, K-major (two n8 x k16 tiles per ldmatrix.x4 of n-rows, matrices q = lane/8: n8 tile q/2, k half q%2): as A.
  // B, N-major (ldmatrix.x4.trans of k-rows, matrices q: n8 tile q/2, k half q%2): the lane's n-chunk moves with
  // the tile pair and the swizzle XORs it with the lane's k-row, so each pair keeps its own offset; when the warp's
  // columns start on a 64-column block the pattern repeats every 4 pairs (one smem_B(64, 0) further). k steps are
  // 16 k-rows (two swizzle periods). (One register XORed with an immediate per pair, as for A, measured worse
  // here: 20 B of spills against 8.)
  const TileCoord b_src = fixed<P.ldmatrix_B_src>()(lane, 0);  // K-major: (n, k-block); N-major: (k, n-block)
  const unsigned b_row = TRANS_B ? 2 * rows_B(wn * WTN + b_src.row, 0) : 0;
  const unsigned b_col = TRANS_B ? 2 * tile_B(wn * WTN + b_src.row, P.chunk * b_src.col) - b_row : 0;
  constexpr int NPAIR = NT / 2;
  constexpr int NPAT = (WTN % 64 == 0 && NPAIR > 4) ? 4 : NPAIR;
  unsigned b_pair[NPAT];
#pragma unroll
  for (int pr = 0; pr < NPAT; ++pr)
    b_pair[pr] = TRANS_B ? 0 : 2 * tile_B(wn * WTN + 16 * pr + P.chunk * b_src.col, b_src.row);
  auto load_frags = [&](int buf, int stage, int kk) {
    const unsigned a_tile = smem_base + P.a_offset(stage);
    const unsigned b_tile = smem_base + P.b_offset(stage);
    const unsigned a_addr = a_tile + a_row + tile_A.join_disjoint(a_col, 2 * tile_A(0, 16 * kk));
#pragma unroll
    for (int i = 0; i < MT; ++i)
      ldmatrix_x4(a_addr + 2 * tile_A(16 * i, 0), a_frag[buf][i][0], a_frag[buf][i][1], a_frag[buf][i][2],
                  a_frag[buf][i][3]);
    if constexpr (TRANS_B) {
      const unsigned b_addr = b_tile + b_row + tile_B.join_disjoint(b_col, 2 * tile_B(0, 16 * kk));
#pragma unroll
      for (int j = 0; j < NT; j += 2)
        ldmatrix_x4(b_addr + 2 * tile_B(8 * j, 0), b_frag[buf][j][0], b_frag[buf][j][1], b_frag[buf][j + 1][0],
                    b_frag[buf][j + 1][1]);
    } else {
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        const int pr = j / 2;
        const unsigned addr = b_tile + b_pair[pr % NPAT] + 2 * tile_B(16 * NPAT * (pr / NPAT), 16 * kk);
        ldmatrix_x4_trans(addr, b_frag[buf][j][0], b_frag[buf][j][1], b_frag[buf][j + 1][0], b_frag[buf][j + 1][1]);
      }
    }
  };
  static_assert((BK / 16) % 2 == 0, "the fragment buffers alternate and each stage starts on buffer 0");

  TL_PROBE_BEGIN(GemmMmaProbe::wait_stage, 0, 0);
  cp_async_wait<STAGES - 2>();
  __syncthreads();  // stage 0 is visible to all
  TL_PROBE_END(GemmMmaProbe::wait_stage, 0, 0);
  if (FRAG_BUFS == 2 && k_steps > 0) load_frags(0, 0, 0);
  // The wait for stage k + 1 (cp.async.wait_group + barrier: visible to all, and every warp is done reading
  // stage k, which the next step refills) and the first fragments of stage k + 1.
  // Stage indices follow from the unrolled loop's constant `stage`, or from k (fewer live registers than from a
  // runtime `stage`: 8 bytes of spills on sm_80 otherwise).
  auto next_stage = [&](int k, int stage) {
    const int s1 = UNROLL_K ? (stage + 1) % STAGES : (k + 1) % STAGES;
    TL_PROBE_BEGIN(GemmMmaProbe::wait_stage, s1, k + 1);
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    TL_PROBE_END(GemmMmaProbe::wait_stage, s1, k + 1);
    if (FRAG_BUFS == 2 && k + 1 < k_steps) load_frags(0, s1, 0);
  };
  // One k-step (stage = k % STAGES; a constant when the caller's loop is unrolled).
  auto k_step = [&](int k, int stage) {
    TL_PROBE_BEGIN(GemmMmaProbe::mma, stage, k);
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
          TL_PROBE_BEGIN(GemmMmaProbe::load_issue, next_s, next);
          load_stage(next_s, next);
          TL_PROBE_END(GemmMmaProbe::load_issue, next_s, next);
        }
        cp_async_commit();
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int jj = 0; jj < NT; ++jj) {
          const int j = CFG.serpentine && (i % 2) ? NT - 1 - jj : jj;
          mma_16816<CFG.bf16>(acc[i][j], a_frag[buf][i], b_frag[buf][j]);
        }
    }
    TL_PROBE_END(GemmMmaProbe::mma, stage, k);
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
  TL_PROBE_BEGIN(GemmMmaProbe::epilogue, probe::kNoStage, t);

  // Epilogue: acc[i][j] is the mma C fragment of the m16n8 tile (i, j); its values 2h, 2h + 1 are a column pair.
#pragma unroll
  for (int i = 0; i < MT; ++i) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const TileCoord e = fixed<P.mma_C>()(lane, 2 * h);
        const int row = m0 + wm * WTM + i * P.mma_C.rows() + e.row, col = n0 + wn * WTN + j * P.mma_C.cols() + e.col;
        store_acc_pair<CFG.out_dtype>(C, row, col, M, N, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
      }
    }
  }
  TL_PROBE_END(GemmMmaProbe::epilogue, probe::kNoStage, t);
  TL_PROBE_FLUSH();
  if (tid == 0) TL_PROBE_BLOCK_END();
}

}  // namespace tl
