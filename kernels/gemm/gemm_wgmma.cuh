// gemm.wgmma: the Hopper GEMM — TMA into 128B-swizzled smem, mbarrier pipeline, warp-specialized wgmma.
//
// C[M,N] = A[M,K] · op(B), A row-major (K-major), 16-bit inputs, fp32 accumulation, C row-major in C_TYPE (bf16,
// f16 or f32). TRANS_B (TileLang's trans_B): B is stored N x K (K-major, C = A·B^T); otherwise K x N row-major
// (N-major, C = A·B), loaded as such by TMA and read by wgmma with its transpose-B flag (imm-trans-b = 1).
//
// Threads: (CONSUMERS + 1) warpgroups of 128 threads. Warpgroup 0 is the producer: one elected thread
// issues the TMA loads of each K-step into the next free pipeline stage. Warpgroups 1..CONSUMERS are the
// consumers: consumer c owns rows [c*64, c*64+64) of the BM = 64*CONSUMERS row tile and all BN columns,
// and issues wgmma m64nBNk16 from shared memory, BK/16 of them per stage.
// The grid is persistent (one CTA per SM); CTAs walk output tiles in a grouped ("panel") raster order so
// that consecutive tiles reuse the same A rows (raster m) or B columns (raster n) from L2.
//
// Clusters (CLUSTER_M x CLUSTER_N = 2x1 or 1x2; 1x1 = none): the two CTAs of a cluster (ranks 0 and 1, consecutive
// blockIdx.x) compute the two tiles of one cluster tile, (2 BM) x BN for 2x1 or BM x (2 BN) for 1x2, and walk the
// same sequence of cluster tiles, so their pipelines advance in step. The operand they share (B for 2x1, A for 1x2)
// is loaded half by each: CTA r loads half r of the tile (rows of the K-major box; for an N-major B, half of its
// 64-column boxes) and multicasts it into the same stage offset of both CTAs, signalling both CTAs' full barrier of
// the stage; its own operand it loads alone. So each full barrier still expects the bytes of a whole stage. A stage
// of CTA X is written by both producers, so it is free only when the consumers of both CTAs have released it: every
// consumer arrives on the empty barrier of both CTAs (count 2 x CONSUMERS; the peer's through mapa). Barrier inits are
// made visible to the peer by a cluster barrier before any load, and a cluster barrier before exit keeps a CTA's
// shared memory alive while its peer may still arrive on it. When the tile count along the cluster's direction is
// odd, the last cluster tile's rank-1 tile lies past the matrix: that CTA still runs the pipeline (it multicasts its
// half of the shared operand to rank 0; its own operand is loaded from the last real tile), and stores nothing. A
// half of the shared operand that starts past M (N) is not loaded by either CTA nor counted in the expected bytes.
//
// Shared memory (dynamic, aligned to 1024 B for the 128B swizzle atom):
//   [STAGES x A tile: BM rows x BK cols, K-major, 128 B per row, TMA SWIZZLE_128B]
//   [STAGES x B tile: K-major: BN rows x BK cols, same; N-major: BN/64 blocks of BK k-rows x 64 n (128 B per row),
//    one TMA box each, TMA SWIZZLE_128B: CuTe's MN-major SW128 layout]
//   [TMA_STORE: CONSUMERS x C staging tiles of 64 rows x BN, as BN/W sub-tiles of 64 rows x 128 B, W = 64 (16-bit
//    C) or 32 (f32 C) columns, SWIZZLE_128B]
//   [STAGES full barriers][STAGES empty barriers]
// With BK = 64 16-bit elements a K-major tile row is exactly one 128-byte swizzle row; 8 rows form the 1024-byte
// atom, so the wgmma descriptor's stride byte offset is 1024 and stepping k16 inside the row is +32 bytes.
// N-major B: the 1024-byte atom is 8 k-rows x 64 n; the descriptor's stride byte offset (next 8 k-rows) is 1024,
// its leading byte offset (next 64 n) is one block, BK x 128 = 8192 bytes, and stepping k16 is +16 rows = +2048.
#pragma once

#include "gemm/gemm_common.cuh"
#include "tile/barrier.cuh"
#include "tile/cluster.cuh"
#include "tile/config.hpp"
#include "tile/mbarrier.cuh"
#include "tile/probe.hpp"
#include "tile/setmaxnreg.cuh"
#include "tile/smem.cuh"
#include "tile/tma.cuh"
#include "tile/wgmma_ops.cuh"
#include "tile/work_order.hpp"

namespace tl {

namespace wgmma_detail {

// Timeline regions (TL_PROBE marks; compiled in only with -DTL_TIMELINE=1), in the order of the spec's `probes`.
// Stage = pipeline stage, aux = pipeline iteration (epilogue: the tile). Warp 0 (the producer warp, whose lane 0
// issues the TMA loads) marks its empty-barrier waits and TMA issues; the first warp of each consumer warpgroup its
// full-barrier waits, its k-tile of wgmma (issue through wgmma_wait<1>), its empty-barrier arrives (release) and
// its epilogues, for the whole warpgroup. Marks are warp-collective (tile/probe.hpp).
enum WgmmaProbe : unsigned { kProbeWaitEmpty, kProbeTmaIssue, kProbeWaitFull, kProbeWgmma, kProbeRelease, kProbeEpilogue };

}  // namespace wgmma_detail

// Dynamic shared memory the kernel needs (the 1024-byte alignment slack included). An f32 C doubles the staging.
template <int BM, int BN, int BK, int STAGES, int CONSUMERS, bool TMA_STORE, int C_BYTES = 2>
constexpr int gemm_wgmma_smem_bytes() {
  return STAGES * (BM + BN) * BK * 2 + (TMA_STORE ? BM * BN * C_BYTES : 0) + 1024 + 2 * STAGES * 8;
}

// TMA_STORE: the epilogue stages each consumer's 64 x BN tile in 128B-swizzled shared memory and writes it
// with bulk tensor stores that overlap the next tile's main loop (needs 16-byte rows of C for the tensor map:
// N % 8 == 0 for a 16-bit C, N % 4 == 0 for f32); otherwise each thread stores its accumulator pairs directly
// (any N).
template <int BM, int BN, int BK, int STAGES, int CONSUMERS, int PANEL, bool BF16, bool TMA_STORE, bool TRANS_B = true,
          int C_TYPE = BF16 ? gemm_detail::kOutBf16 : gemm_detail::kOutF16, bool RASTER_N = false, int CLUSTER_M = 1,
          int CLUSTER_N = 1>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    gemm_wgmma(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
               const __grid_constant__ TmaDescriptor tma_c, void* __restrict__ C, int M, int N, int K) {
  using namespace wgmma_detail;
  using namespace wgmma_ops;
  using namespace gemm_detail;
  static_assert(BM == 64 * CONSUMERS, "each consumer warpgroup owns 64 rows");
  static_assert(BK == 64, "one 128-byte swizzle row of 16-bit elements per tile row");
  static_assert(BN % 8 == 0 && BN <= 256, "wgmma N");
  constexpr unsigned A_BYTES = BM * BK * 2;
  constexpr unsigned B_BYTES = BN * BK * 2;
  constexpr unsigned B_BLOCK = 64 * BK * 2;          // N-major B: one 64-column block of all BK k-rows
  constexpr int C_BYTES = out_bytes<C_TYPE>();
  constexpr int C_SUB = 128 / C_BYTES;               // columns of one 128-byte staging row (64 or 32)
  static_assert(TRANS_B || BN % 64 == 0, "an N-major B tile is whole 64-column TMA boxes");
  constexpr int CLUSTER = CLUSTER_M * CLUSTER_N;
  static_assert((CLUSTER_M == 1 || CLUSTER_M == 2) && (CLUSTER_N == 1 || CLUSTER_N == 2) && CLUSTER <= 2,
                "clusters of 1 or 2 CTAs");
  static_assert(CLUSTER_M == 1 || TRANS_B || (BN / 64) % 2 == 0, "2x1: each CTA multicasts half of B's boxes");
  constexpr unsigned short PAIR_MASK = 0x3;  // both CTAs of the cluster

  extern __shared__ unsigned char smem_raw[];
  const unsigned raw = smem_u32(smem_raw);
  const unsigned base = (raw + 1023u) & ~1023u;
  const unsigned a_base = base;
  const unsigned b_base = base + STAGES * A_BYTES;
  const unsigned c_base = b_base + STAGES * B_BYTES;  // TMA_STORE: CONSUMERS x (64 x BN) staging tiles
  const unsigned bar_base = c_base + (TMA_STORE ? BM * BN * C_BYTES : 0);
  auto full_bar = [&](int s) { return bar_base + 8u * s; };
  auto empty_bar = [&](int s) { return bar_base + 8u * (STAGES + s); };

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar(s), 1);
      mbar_init(empty_bar(s), CONSUMERS * CLUSTER);  // the consumers of every CTA that writes into this stage
    }
    fence_mbarrier_init();
    TL_PROBE_BLOCK_BEGIN();
  }
  if constexpr (CLUSTER > 1) {
    cluster_sync();  // the peer's barriers are initialised before any multicast or remote arrive reaches them
  } else {
    __syncthreads();
  }
  const int rank = CLUSTER > 1 ? static_cast<int>(cluster_ctarank()) : 0;

  const int tiles_m = (M + BM - 1) / BM;
  const int tiles_n = (N + BN - 1) / BN;
  // Cluster tiles: one per cluster and turn (= the tiles when CLUSTER == 1).
  const int tiles = gemm_cluster_tiles(tiles_m, tiles_n, CLUSTER_M, CLUSTER_N);
  const int k_steps = (K + BK - 1) / BK;

  if (wg == 0) {
    // Producer warpgroup: give registers to the consumers; its first warp waits on the empty barriers and one
    // elected lane issues the TMA loads (a whole warp, so the warp-collective probe marks can record it).
    setmaxnreg_dec<40>();
    if (tid < 32) {
      TL_PROBE_WARP_INIT();
      int it = 0;
      for (int t = blockIdx.x / CLUSTER; t < tiles; t += gridDim.x / CLUSTER) {
        const GemmTile tile = gemm_cluster_tile(t, tiles_m, tiles_n, PANEL, RASTER_N, CLUSTER_M, CLUSTER_N, rank);
        int tm = tile.m, tn = tile.n;
        // A tile past the matrix (rank 1 of an odd pair) loads its own operand from the last real tile.
        if constexpr (CLUSTER_M > 1) tm = min(tm, tiles_m - 1);
        if constexpr (CLUSTER_N > 1) tn = min(tn, tiles_n - 1);
        for (int k = 0; k < k_steps; ++k, ++it) {
          const int s = it % STAGES;
          TL_PROBE_STAMP(t_wait);
          mbar_wait(empty_bar(s), ((it / STAGES) & 1) ^ 1);
          TL_PROBE_STAMP(t_issue);
          if (tid == 0) {
            // The operand a pair shares is loaded half by each CTA and multicast to both. A half that starts past
            // the matrix is not loaded (a box wholly out of bounds is never issued, as for the N-major B's blocks
            // below): both CTAs see the same shared coordinate, so both leave it out of the expected bytes, and its
            // stale rows only reach accumulator rows (columns) past M (N), never stored.
            // A: shared by a 1x2 pair (same tm), half r of its rows from rank r.
            // A K-major tile of `rows` rows from row0 into `dst` (`bytes`); `shared`: half r of it from rank r.
            auto load_k_major = [&](bool shared, bool half1, unsigned dst, unsigned bytes, const TmaDescriptor* map,
                                    int row0, int rows) {
              if (shared) {
                if (rank == 0 || half1)
                  tma_load_multicast(dst + rank * (bytes / 2), map, full_bar(s), PAIR_MASK, k * BK,
                                     row0 + rank * (rows / 2));
              } else {
                tma_load(dst, map, full_bar(s), k * BK, row0);
              }
            };
            const bool a_half1 = CLUSTER_N == 1 || tm * BM + BM / 2 < M;
            const unsigned a_bytes = a_half1 ? A_BYTES : A_BYTES / 2;
            auto load_a = [&]() { load_k_major(CLUSTER_N > 1, a_half1, a_base + s * A_BYTES, A_BYTES, &tma_a, tm * BM, BM); };
            if constexpr (TRANS_B) {
              // B: shared by a 2x1 pair (same tn), half r of its rows from rank r.
              const bool b_half1 = CLUSTER_M == 1 || tn * BN + BN / 2 < N;
              mbar_expect_tx(full_bar(s), a_bytes + (b_half1 ? B_BYTES : B_BYTES / 2));
              load_a();
              load_k_major(CLUSTER_M > 1, b_half1, b_base + s * B_BYTES, B_BYTES, &tma_b, tn * BN, BN);
            } else {
              // Box (64 n, BK k) of the K x N matrix per 64-column block; coordinates innermost (n) first. Blocks
              // wholly past N are not loaded: their stale columns only reach accumulator columns >= N, never stored.
              // A 2x1 pair shares tn, so both CTAs count the same boxes; rank r multicasts boxes [r NB, (r+1) NB).
              const int boxes = min(BN / 64, (N - tn * BN + 63) / 64);
              mbar_expect_tx(full_bar(s), a_bytes + boxes * B_BLOCK);
              load_a();
              constexpr int NB = BN / 64 / CLUSTER_M;  // boxes this CTA issues
              const int q0 = CLUSTER_M > 1 ? rank * NB : 0;
#pragma unroll
              for (int i = 0; i < NB; ++i) {
                const int q = q0 + i;
                if (q < boxes) {
                  if constexpr (CLUSTER_M > 1) {
                    tma_load_multicast(b_base + s * B_BYTES + q * B_BLOCK, &tma_b, full_bar(s), PAIR_MASK,
                                       tn * BN + q * 64, k * BK);
                  } else {
                    tma_load(b_base + s * B_BYTES + q * B_BLOCK, &tma_b, full_bar(s), tn * BN + q * 64, k * BK);
                  }
                }
              }
            }
          }
          TL_PROBE_STAMP(t_issued);
          // Recorded after the issue: the bookkeeping stays off the release -> TMA critical path.
          TL_PROBE_BEGIN_AT(kProbeWaitEmpty, s, it, t_wait);
          TL_PROBE_END_AT(kProbeWaitEmpty, s, it, t_issue);
          TL_PROBE_BEGIN_AT(kProbeTmaIssue, s, it, t_issue);
          TL_PROBE_END_AT(kProbeTmaIssue, s, it, t_issued);
        }
      }
      TL_PROBE_FLUSH();
    }
  } else {
    setmaxnreg_inc<232>();
    const int c = wg - 1;
    const int warp = tid / 32, lane = tid % 32;
    // The four warps of a warpgroup wait on the same barriers and issue the same wgmma together: the first one
    // records for all (per-warp records cost 4x the probe traffic and showed nothing more).
    TL_PROBE_WARP_INIT_IF(warp == 0);
    float acc[BN / 2];
    // Frees a stage: in every CTA of the cluster that writes into it (CLUSTER > 1: this one and the peer).
    auto release = [&](int stage) {
      if constexpr (CLUSTER > 1) {
#pragma unroll
        for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(map_shared_rank(empty_bar(stage), r));
      } else {
        mbar_arrive(empty_bar(stage));
      }
    };
    int it = 0;
    for (int t = blockIdx.x / CLUSTER; t < tiles; t += gridDim.x / CLUSTER) {
      const GemmTile tile = gemm_cluster_tile(t, tiles_m, tiles_n, PANEL, RASTER_N, CLUSTER_M, CLUSTER_N, rank);
      const int tm = tile.m, tn = tile.n;
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
      int prev_stage = -1;
      for (int k = 0; k < k_steps; ++k, ++it) {
        const int s = it % STAGES;
        TL_PROBE_STAMP(t_wait);
        mbar_wait(full_bar(s), (it / STAGES) & 1);
        TL_PROBE_STAMP(t_mma);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
          const unsigned long long da = smem_desc_sw128(a_base + s * A_BYTES + c * 64 * 128 + kk * 32);
          const unsigned long long db = TRANS_B ? smem_desc_sw128(b_base + s * B_BYTES + kk * 32)
                                                : smem_desc_sw128_mn(b_base + s * B_BYTES + kk * 2048, B_BLOCK);
          WgmmaSS<BN, BF16, TRANS_B ? 0 : 1>::run(acc, da, db);  // always accumulates (acc zeroed above)
        }
        wgmma_commit();
        // Keep one K-step of wgmma in flight; the one before it is done, so its stage can be refilled.
        wgmma_wait<1>();
        TL_PROBE_STAMP(t_done);  // stamped before the arrive (the stage is still held), recorded after it
        if (prev_stage >= 0 && tid == 0) release(prev_stage);
        // Marks are recorded here, after the arrive. Recorded between wgmma_commit and wgmma_wait, while the wgmma
        // runs, they cost 3x more (+27% against +7% at 8192^3, measured on the H100).
        TL_PROBE_BEGIN_AT(kProbeWaitFull, s, it, t_wait);
        TL_PROBE_END_AT(kProbeWaitFull, s, it, t_mma);
        TL_PROBE_BEGIN_AT(kProbeWgmma, s, it, t_mma);
        TL_PROBE_END_AT(kProbeWgmma, s, it, t_done);
        if (prev_stage >= 0) TL_PROBE_INSTANT_AT(kProbeRelease, prev_stage, it - 1, t_done);
        prev_stage = s;
      }
      wgmma_wait<0>();
      if (prev_stage >= 0) {
        TL_PROBE_INSTANT(kProbeRelease, prev_stage, it - 1);
        if (tid == 0) release(prev_stage);
      }
      // The rank-1 tile of an odd pair lies past the matrix: nothing to store (uniform over the warpgroup).
      if (CLUSTER > 1 && (tm >= tiles_m || tn >= tiles_n)) continue;
      TL_PROBE_BEGIN(kProbeEpilogue, probe::kNoStage, t);

      // Epilogue. Accumulator fragment of wgmma m64nN: per warp 16 rows; lane/4 picks the row, lane%4 the
      // column pair; registers 4j..4j+3 cover columns 8j..8j+7 of rows r (4j, 4j+1) and r+8 (4j+2, 4j+3).
      if constexpr (TMA_STORE) {
        // Staging layout: BN/C_SUB sub-tiles of 64 rows x 128 B (C_SUB = 64 16-bit or 32 f32 columns), 16-byte
        // chunks XOR-swizzled by row % 8 exactly as the tensor map's SWIZZLE_128B expects. 16-bit C: the 8 rows a
        // warp writes at once land in 8 different chunks (conflict free); f32 C: 8 bytes per lane, 8 rows x 2
        // chunks over the 8 chunk positions, two wavefronts for 256 bytes (the minimum).
        const unsigned my_c = c_base + c * 64 * BN * C_BYTES;
        if (tid == 0) tma_store_wait_read();  // the previous tile's stores have left the staging buffer
        named_barrier_sync(1 + c, 128);
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int r = warp * 16 + lane / 4 + 8 * h;
            if constexpr (C_TYPE == kOutF32) {
              // columns 8j + 2*(lane%4): sub-tile j/4, chunk 2*(j%4) + (lane%4)/2, 8 bytes into it per odd lane
              const int chunk = 2 * (j % 4) + (lane % 4) / 2;
              const unsigned addr = my_c + (j / 4) * (64 * 128) + r * 128 + ((chunk ^ (r % 8)) * 16) + 8 * (lane % 2);
              st_shared_v2_f32(addr, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
            } else {
              const unsigned addr =
                  my_c + (j / 8) * (64 * 128) + r * 128 + (((j % 8) ^ (r % 8)) * 16) + 4 * (lane % 4);
              const unsigned v = pack2<C_TYPE == kOutBf16>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
              st_shared_b32(addr, v);
            }
          }
        }
        fence_proxy_async_smem();  // make the generic-proxy writes visible to the TMA engine
        named_barrier_sync(1 + c, 128);
        if (tid == 0) {
#pragma unroll
          for (int q = 0; q < BN / C_SUB; ++q)
            tma_store(&tma_c, my_c + q * 64 * 128, tn * BN + q * C_SUB, tm * BM + c * 64);
          tma_store_commit();
        }
        TL_PROBE_END(kProbeEpilogue, probe::kNoStage, t);
      } else {
        const int row0 = tm * BM + c * 64 + warp * 16 + lane / 4;
        const int col0 = tn * BN + 2 * (lane % 4);
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int col = col0 + 8 * j;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            store_acc_pair<C_TYPE>(C, row0 + 8 * h, col, M, N, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
          }
        }
        TL_PROBE_END(kProbeEpilogue, probe::kNoStage, t);
      }
    }
    if constexpr (TMA_STORE) {
      if (tid == 0) tma_store_wait_all();
    }
    TL_PROBE_FLUSH();
    if (c == 0 && tid == 0) TL_PROBE_BLOCK_END();
  }
  // No CTA leaves while its peer may still arrive on its empty barriers (the peer's last releases).
  if constexpr (CLUSTER > 1) cluster_sync();
}

}  // namespace tl
