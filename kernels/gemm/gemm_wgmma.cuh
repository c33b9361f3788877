// gemm.wgmma: the Hopper GEMM — TMA into 128B-swizzled smem, mbarrier pipeline, warp-specialized wgmma.
//
// C[M,N] = A[M,K] · op(B), A row-major (K-major), 16-bit inputs, fp32 accumulation, C row-major in out_dtype (bf16,
// f16 or f32). trans_B: B is stored N x K (K-major, C = A·B^T); otherwise K x N row-major (N-major), loaded as such
// by TMA and read by wgmma with its transpose-B flag (imm-trans-b = 1). The one template parameter is the config
// (gemm_wgmma_plan.hpp); the plan made from it holds every layout, offset and byte count the kernel uses.
//
// Threads: (consumers + 1) warpgroups of 128 threads. Warpgroup 0 is the producer: one elected thread
// issues the TMA loads of each K-step into the next free pipeline stage. Warpgroups 1..consumers are the
// consumers: consumer c owns rows [c*64, c*64+64) of the block_M = 64*consumers row tile and all block_N columns,
// and issues wgmma m64nNk16 (N = block_N) from shared memory, block_K/16 of them per stage. A 256-row tile
// (block_M = 256, block_N <= 152: cuBLAS's arrangement at 3000 x 5000 x 4096) keeps two consumers and gives each
// 128 rows, [c*128, c*128+128), as two accumulator chains of 64 rows (CFG.chains() = 2) that read each k16's B
// descriptor in turn: 2 x block_N / 2 accumulator registers a thread (152 at block_N = 152), which the consumers'
// setmaxnreg 232 holds; its epilogue stores the chains one after the other through the consumer's one staging tile.
// A 192 x 192 tile (block_M = 192: cuBLAS's arrangement at 6144^3) splits the columns instead: consumer c owns
// columns [c*96, c*96+96) of all 192 rows as three m64n96 chains (CFG.split_cols(), CFG.wgmma_n() = 96) that read
// the same B descriptor of its columns on each k16 and each its own 64 rows of A: 3 x 48 = 144 accumulator registers
// a thread; its 64 x 96 staging tile (three 32-column SWIZZLE_64B sub-tiles) stores the chains in turn.
// Ping-pong (CFG.pingpong, schedule=pingpong; auto at 4-16 k-steps): the two consumers work on different tiles,
// consumer c on the CTA's tiles c, c + 2, ..., each a whole block_M x block_N tile as block_M / 64 chains (128 x 128:
// two m64n128; 64 x 256: one m64n256). The producer is unchanged (the ring in tile order); a consumer steps its ring
// position over the other's tiles, each stage is freed by its one consumer, and the main loops take turns (named
// barriers), so that one consumer's epilogue runs under the other's wgmma.
// The grid is persistent (one CTA per SM); CTAs walk output tiles in a grouped ("panel") raster order so
// that consecutive tiles reuse the same A rows (raster m) or B columns (raster n) from L2.
//
// Clusters (cluster_M x cluster_N = 2x1 or 1x2; 1x1 = none): the two CTAs of a cluster (ranks 0 and 1, consecutive
// blockIdx.x) compute the two tiles of one cluster tile, (2 BM) x BN for 2x1 or BM x (2 BN) for 1x2, and walk the
// same sequence of cluster tiles, so their pipelines advance in step. The operand they share (B for 2x1, A for 1x2)
// is loaded half by each: CTA r loads half r of the tile (rows of the K-major box; for an N-major B, half of its
// 64-column boxes) and multicasts it into the same stage offset of both CTAs, signalling both CTAs' full barrier of
// the stage; its own operand it loads alone. So each full barrier still expects the bytes of a whole stage. A stage
// of CTA X is written by both producers, so it is free only when the consumers of both CTAs have released it: every
// consumer arrives on the empty barrier of both CTAs (count 2 x consumers; the peer's through mapa). Barrier inits are
// made visible to the peer by a cluster barrier before any load, and a cluster barrier before exit keeps a CTA's
// shared memory alive while its peer may still arrive on it. When the tile count along the cluster's direction is
// odd, the last cluster tile's rank-1 tile lies past the matrix: that CTA still runs the pipeline (it multicasts its
// half of the shared operand to rank 0; its own operand is loaded from the last real tile), and stores nothing. A
// half of the shared operand that starts past M (N) is not loaded by either CTA nor counted in the expected bytes.
//
// Stream-K (CFG.stream_k, entry gemm_wgmma_stream_k; no clusters): the work is tile/work_order.hpp's GemmStreamK,
// computed by every CTA from the grid it runs in (with split_always 0, as schedule=auto launches it, no split where
// gemm_stream_k_pays says it costs more than it saves on this grid). Producer and consumers walk the same pieces
// (k-steps [k0, k1) of a tile): the CTA's whole tiles, then its range of the split tiles, the later tile's head
// first (the producer loads a whole tile of the range from the k-step GemmStreamKWalk gives it: the consumers only
// count stages). A piece that ends before the tile's last k-step ends in a partial: consumer c writes its
// accumulator to its slot of the workspace (P.partial: register order, 16-byte chunks) and, after a barrier of its
// warpgroup and a fence, thread 0 raises the flag of (CTA, consumer). The finisher of a split tile (its last
// k-step's piece, the last its CTA walks) waits for each earlier CTA's flag, nearest first (thread 0's acquire load,
// then the warpgroup's barrier: CUTLASS's semaphore pattern), adds that partial, lowers the flag for the next launch
// and stores the tile as a whole one. Every flag is lowered by the launch that raised it, so the scratch starts at
// zero.
//
// Shared memory (dynamic, from a base aligned to one 128B swizzle atom, 1024 B; the plan's offsets):
//   [num_stages x A tile: smem_A, block_M rows x block_K cols, K-major, 128 B per row, TMA SWIZZLE_128B]
//   [num_stages x B tile: smem_B, K-major like A, or N-major: block_N/64 blocks of block_K k-rows x 64 n (128 B per
//    row), one TMA box each, TMA SWIZZLE_128B: CuTe's MN-major SW128 layout]
//   [tma_store: consumers x C staging tile smem_C, 64 rows x block_N, as sub-tiles of 64 rows x 128 B (64 16-bit or
//    32 f32 columns), one TMA box each, SWIZZLE_128B]
//   [num_stages full barriers][num_stages empty barriers]
// The wgmma descriptors' start addresses are the plan's layouts at (row, k) = (64 c, 16 kk): rows that start a
// swizzle atom, where the offset is the unswizzled one the descriptor wants; their leading and stride byte offsets
// are read off the same layouts (make_plan).
#pragma once

#include "gemm/gemm_store.cuh"
#include "gemm/gemm_wgmma_plan.hpp"
#include "tile/barrier.cuh"
#include "tile/cluster.cuh"
#include "tile/config.hpp"
#include "tile/global.cuh"
#include "tile/mbarrier.cuh"
#include "tile/probe.hpp"
#include "tile/setmaxnreg.cuh"
#include "tile/smem.cuh"
#include "tile/tma.cuh"
#include "tile/wgmma_ops.cuh"
#include "tile/work_order.hpp"

namespace tl {

// Timeline regions (TL_PROBE marks; compiled in only with -DTL_TIMELINE=1): GemmWgmmaProbe, the spec's `probes`.
// Stage = pipeline stage, aux = pipeline iteration (epilogue: the tile). Warp 0 (the producer warp, whose lane 0
// issues the TMA loads) marks its empty-barrier waits and TMA issues; the first warp of each consumer warpgroup its
// full-barrier waits, its k-tile of wgmma (issue through wgmma_wait<1>), its empty-barrier arrives (release) and
// its epilogues, for the whole warpgroup. Marks are warp-collective (tile/probe.hpp).
//
// tma_store: the epilogue stages each consumer's 64 x BN tile in 128B-swizzled shared memory and writes it
// with bulk tensor stores that overlap the next tile's main loop (needs 16-byte rows of C for the tensor map:
// N % 8 == 0 for a 16-bit C, N % 4 == 0 for f32); otherwise each thread stores its accumulator pairs directly
// (any N).
template <GemmWgmmaConfig CFG>
TL_DEVICE_INLINE void gemm_wgmma_body(const TmaDescriptor& tma_a, const TmaDescriptor& tma_b,
                                      const TmaDescriptor& tma_c, void* __restrict__ C, int M, int N, int K,
                                      float4* __restrict__ workspace, int* __restrict__ flags, bool split_always) {
  using namespace wgmma_ops;
  using namespace gemm_detail;
  using Probe = GemmWgmmaProbe;
  constexpr GemmWgmmaPlan P = make_plan(CFG);
  constexpr int BM = CFG.block_M, BN = CFG.block_N, BK = CFG.block_K, STAGES = CFG.num_stages, CONSUMERS = CFG.consumers();
  constexpr int CHAINS = CFG.chains();  // 64-row accumulator chains a consumer
  constexpr bool SPLIT_COLS = CFG.split_cols();  // consumers own column halves (192 x 192), else row ranges
  constexpr int WN = CFG.wgmma_n();              // a consumer's columns
  constexpr bool PINGPONG = CFG.pingpong;        // consumers on alternate tiles, each all of its tile's chains
  constexpr int CLUSTER_M = CFG.cluster_M, CLUSTER_N = CFG.cluster_N, CLUSTER = CFG.cluster();
  constexpr bool TRANS_B = CFG.trans_B, TMA_STORE = CFG.tma_store;
  constexpr int WG_M = P.acc.rows();  // rows of one consumer (the wgmma M)
  constexpr int WG_K = 16;            // k of one wgmma (m64nNk16)
  static_assert(BM * BN == WG_M * WN * (PINGPONG ? 1 : CONSUMERS) * CHAINS,
                "each consumer warpgroup owns 64 rows x WN per chain (pingpong: of its own tiles)");
  static_assert(!PINGPONG || (CONSUMERS == 2 && !SPLIT_COLS && !CFG.stream_k && CFG.cluster() == 1),
                "pingpong: two consumers on whole tiles of their own, data-parallel single CTAs");
  static_assert(!SPLIT_COLS || (TRANS_B && WN % 8 == 0), "column halves of a K-major B start at whole 8-row atoms");
  static_assert(CHAINS == 1 || (!CFG.stream_k && (CFG.cluster() == 1 || SPLIT_COLS)),
                "chains: data-parallel; no clusters but for the 192 x 192 tile's");
  static_assert(BK * P.in_bytes == swizzle_bytes(SmemSwizzle::b128), "one 128-byte swizzle row per tile row");
  static_assert(BN % 8 == 0 && BN <= 256, "wgmma N");
  static_assert(TRANS_B || BN % P.box_B.inner == 0, "an N-major B tile is whole 64-column TMA boxes");
  static_assert((CLUSTER_M == 1 || CLUSTER_M == 2) && (CLUSTER_N == 1 || CLUSTER_N == 2) && CLUSTER <= 2,
                "clusters of 1 or 2 CTAs");
  static_assert(CLUSTER_M == 1 || TRANS_B || P.b_boxes % 2 == 0, "2x1: each CTA multicasts half of B's boxes");
  static_assert(!CFG.stream_k || CLUSTER == 1, "stream-K runs without clusters");
  constexpr unsigned A_BYTES = P.a_stage_bytes;
  constexpr unsigned B_BYTES = P.b_stage_bytes;
  // The half of a shared operand's tile that rank r loads starts at row r * (box rows): a whole number of atoms.
  constexpr unsigned A_HALF = P.in_bytes * P.smem_A(P.box_A.outer, 0);
  constexpr unsigned B_HALF = P.in_bytes * P.smem_B(P.box_B.outer, 0);
  constexpr unsigned B_BLOCK = P.in_bytes * P.smem_B(P.box_B.inner, 0);  // N-major B: the next 64-column box
  // Consumer c's rows of A start at row 64 c, and wgmma's k16 step moves 16 columns, of rows that start a swizzle
  // atom: there the layouts are linear (the plan tests check smem_A(64 c, 16 kk) = c A_WG + kk A_K16 and likewise
  // for B), so the descriptors' start addresses step by these strides.
  constexpr unsigned A_WG = P.in_bytes * P.smem_A(WG_M, 0);
  constexpr unsigned A_K16 = P.in_bytes * P.smem_A(0, WG_K);
  constexpr unsigned B_K16 = P.in_bytes * P.smem_B(0, WG_K);
  constexpr unsigned B_WG = SPLIT_COLS ? P.in_bytes * P.smem_B(WN, 0) : 0;  // consumer c's columns of B: c B_WG on
  constexpr unsigned short PAIR_MASK = 0x3;  // both CTAs of the cluster

  extern __shared__ unsigned char smem_raw[];
  const unsigned base = smem_align<P.align>(smem_raw);
  const unsigned a_base = base + P.a_offset;
  const unsigned b_base = base + P.b_offset;
  const unsigned c_base = base + P.c_offset;  // tma_store: CONSUMERS x (64 x BN) staging tiles
  auto full_bar = [&](int s) { return base + P.full_bar_offset + 8u * s; };
  auto empty_bar = [&](int s) { return base + P.empty_bar_offset + 8u * s; };

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar(s), 1);
      // The consumers of every CTA that writes into this stage (pingpong: the one consumer whose tile it holds).
      mbar_init(empty_bar(s), (PINGPONG ? 1 : CONSUMERS) * CLUSTER);
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
  // The pieces of work this CTA walks, in order: fn(work tile, first k-step, end k-step, k-step the loads start at).
  auto for_each_piece = [&](auto&& fn) {
    if constexpr (!CFG.stream_k) {
      for (int t = blockIdx.x / CLUSTER; t < tiles; t += gridDim.x / CLUSTER) fn(t, 0, k_steps, 0);
    } else {
      // The whole tiles in data-parallel's own loop (bounds and k range the compiler keeps in uniform registers),
      // then the split pieces.
      const GemmStreamK sk = gemm_stream_k(tiles, k_steps, gridDim.x, !split_always);
      for (int t = blockIdx.x; t < sk.whole_tiles(); t += gridDim.x) fn(t, 0, k_steps, 0);
      GemmStreamKWalk walk(sk, blockIdx.x);
      GemmWorkPiece w;
      while (walk.next(sk, w)) fn(w.tile, w.k0, w.k1, w.k_first);
    }
  };

  if (wg == 0) {
    // Producer warpgroup: give registers to the consumers; its first warp waits on the empty barriers and one
    // elected lane issues the TMA loads (a whole warp, so the warp-collective probe marks can record it).
    setmaxnreg_dec<40>();
    if (tid < 32) {
      TL_PROBE_WARP_INIT();
      int it = 0;
      for_each_piece([&](int t, int k0, int k1, int k_first) {
        const GemmTile tile = gemm_cluster_tile(t, tiles_m, tiles_n, CFG.panel, CFG.raster_n, CLUSTER_M, CLUSTER_N, rank);
        int tm = tile.m, tn = tile.n;
        // A tile past the matrix (rank 1 of an odd pair) loads its own operand from the last real tile.
        if constexpr (CLUSTER_M > 1) tm = min(tm, tiles_m - 1);
        if constexpr (CLUSTER_N > 1) tn = min(tn, tiles_n - 1);
        for (int i = k0; i < k1; ++i, ++it) {
          // Stream-K: k-steps from k_first to k1, then from k0 (the consumers sum them in the order they come).
          int k = i;
          if constexpr (CFG.stream_k) k = i + k_first - k0 < k1 ? i + k_first - k0 : i + k_first - k1;
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
            // A K-major tile from row0 into `dst`; `shared`: half r of it (`half_rows` rows, `half_bytes` into the
            // tile) from rank r.
            auto load_k_major = [&](bool shared, bool half1, unsigned dst, unsigned half_bytes, const TmaDescriptor* map,
                                    int row0, int half_rows) {
              if (shared) {
                if (rank == 0 || half1)
                  tma_load_multicast(dst + rank * half_bytes, map, full_bar(s), PAIR_MASK, k * BK,
                                     row0 + rank * half_rows);
              } else {
                tma_load(dst, map, full_bar(s), k * BK, row0);
              }
            };
            const bool a_half1 = CLUSTER_N == 1 || tm * BM + P.box_A.outer < M;
            const unsigned a_bytes = a_half1 ? A_BYTES : A_HALF;
            auto load_a = [&]() {
              load_k_major(CLUSTER_N > 1, a_half1, a_base + s * A_BYTES, A_HALF, &tma_a, tm * BM, P.box_A.outer);
            };
            if constexpr (TRANS_B) {
              // B: shared by a 2x1 pair (same tn), half r of its rows from rank r.
              const bool b_half1 = CLUSTER_M == 1 || tn * BN + P.box_B.outer < N;
              mbar_expect_tx(full_bar(s), a_bytes + (b_half1 ? B_BYTES : B_HALF));
              load_a();
              load_k_major(CLUSTER_M > 1, b_half1, b_base + s * B_BYTES, B_HALF, &tma_b, tn * BN, P.box_B.outer);
            } else {
              // Box (64 n, BK k) of the K x N matrix per 64-column block; coordinates innermost (n) first. Blocks
              // wholly past N are not loaded: their stale columns only reach accumulator columns >= N, never stored.
              // A 2x1 pair shares tn, so both CTAs count the same boxes; rank r multicasts boxes [r NB, (r+1) NB).
              constexpr int BOX_N = P.box_B.inner;
              const int boxes = min(P.b_boxes, (N - tn * BN + BOX_N - 1) / BOX_N);
              mbar_expect_tx(full_bar(s), a_bytes + boxes * B_BLOCK);
              load_a();
              constexpr int NB = P.b_boxes / CLUSTER_M;  // boxes this CTA issues
              const int q0 = CLUSTER_M > 1 ? rank * NB : 0;
#pragma unroll
              for (int i = 0; i < NB; ++i) {
                const int q = q0 + i;
                if (q < boxes) {
                  if constexpr (CLUSTER_M > 1) {
                    tma_load_multicast(b_base + s * B_BYTES + q * B_BLOCK, &tma_b, full_bar(s), PAIR_MASK,
                                       tn * BN + q * BOX_N, k * BK);
                  } else {
                    tma_load(b_base + s * B_BYTES + q * B_BLOCK, &tma_b, full_bar(s), tn * BN + q * BOX_N, k * BK);
                  }
                }
              }
            }
          }
          TL_PROBE_STAMP(t_issued);
          // Recorded after the issue: the bookkeeping stays off the release -> TMA critical path.
          TL_PROBE_BEGIN_AT(Probe::wait_empty, s, it, t_wait);
          TL_PROBE_END_AT(Probe::wait_empty, s, it, t_issue);
          TL_PROBE_BEGIN_AT(Probe::tma_issue, s, it, t_issue);
          TL_PROBE_END_AT(Probe::tma_issue, s, it, t_issued);
        }
      });
      TL_PROBE_FLUSH();
    }
  } else {
    setmaxnreg_inc<232>();
    const int c = wg - 1;
    // The four warps of a warpgroup wait on the same barriers and issue the same wgmma together: the first one
    // records for all (per-warp records cost 4x the probe traffic and showed nothing more).
    TL_PROBE_WARP_INIT_IF(tid < 32);
    constexpr int NV1 = P.acc.num_values();  // accumulator registers per thread and chain
    constexpr int NV = NV1 * CHAINS;
    float acc[NV];  // chain h at acc + h NV1
    // Frees a stage: in every CTA of the cluster that writes into it (CLUSTER > 1: this one and the peer).
    auto release = [&](int stage) {
      if constexpr (CLUSTER > 1) {
#pragma unroll
        for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(map_shared_rank(empty_bar(stage), r));
      } else {
        mbar_arrive(empty_bar(stage));
      }
    };
    // pingpong: consumer c takes the CTA's tiles c, c + 2, ... The producer fills the ring in tile order, so a
    // consumer steps its ring position over the other's tiles (their k-steps) and waits only on its own tiles'
    // stages. Their main loops also take turns (named barrier TURN + c, completed by the other consumer's arrival
    // once it has issued its tile's last wgmma): one consumer's wgmma run while the other finishes and stores its
    // tile. Consumer 0 takes the first turn; the last arrival is left unmatched at exit.
    constexpr int TURN = 1 + CONSUMERS;  // after the epilogue's barriers 1 + c (gemm_store.cuh)
    if constexpr (PINGPONG) {
      if (c == 1) named_barrier_arrive(TURN, 2 * 128);
    }
    int it = 0, own = 0;  // own: the CTA's tiles seen (pingpong)
    for_each_piece([&](int t, int k0, int k1, int) {
      if constexpr (PINGPONG) {
        if ((own++ & 1) != c) {
          it += k1 - k0;
          return;
        }
        named_barrier_sync(TURN + c, 2 * 128);
      }
      const GemmTile tile = gemm_cluster_tile(t, tiles_m, tiles_n, CFG.panel, CFG.raster_n, CLUSTER_M, CLUSTER_N, rank);
      const int tm = tile.m, tn = tile.n;
      // The first of this consumer's 64-row chains in the tile (pingpong: the consumer has all of them).
      constexpr int SPLIT_ROWS = !SPLIT_COLS && !PINGPONG;
#pragma unroll
      for (int i = 0; i < NV; ++i) acc[i] = 0.f;
      int prev_stage = -1;
      // Not unrolled: one K-step's wgmma per iteration (measured as fast; the compiler's own choice varies with the
      // size of what follows the loop).
#pragma unroll 1
      for (int k = k0; k < k1; ++k, ++it) {
        const int s = it % STAGES;
        TL_PROBE_STAMP(t_wait);
        mbar_wait(full_bar(s), (it / STAGES) & 1);
        TL_PROBE_STAMP(t_mma);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / WG_K; ++kk) {
#pragma unroll
          for (int h = 0; h < CHAINS; ++h) {
            // Consumer c's rows of A (chain h: its h-th 64 rows; split columns: the tile's h-th 64 rows) and the B
            // tile at k = 16 kk (the chains' same one; split columns: the consumer's WN columns of it).
            const unsigned a_at = (SPLIT_ROWS * c * CHAINS + h) * A_WG + kk * A_K16;
            const unsigned b_at = c * B_WG + kk * B_K16;
            const unsigned long long da = smem_desc_sw128(a_base + s * A_BYTES + a_at, P.a_lbo, P.a_sbo);
            const unsigned long long db = smem_desc_sw128(b_base + s * B_BYTES + b_at, P.b_lbo, P.b_sbo);
            WgmmaSS<WN, CFG.bf16, TRANS_B ? 0 : 1>::run(acc + h * NV1, da, db);  // always accumulates (acc zeroed above)
          }
        }
        wgmma_commit();
        // Keep one K-step of wgmma in flight; the one before it is done, so its stage can be refilled.
        wgmma_wait<1>();
        TL_PROBE_STAMP(t_done);  // stamped before the arrive (the stage is still held), recorded after it
        if (prev_stage >= 0 && tid == 0) release(prev_stage);
        // Marks are recorded here, after the arrive. Recorded between wgmma_commit and wgmma_wait, while the wgmma
        // runs, they cost 3x more (+27% against +7% at 8192^3, measured on the H100).
        TL_PROBE_BEGIN_AT(Probe::wait_full, s, it, t_wait);
        TL_PROBE_END_AT(Probe::wait_full, s, it, t_mma);
        TL_PROBE_BEGIN_AT(Probe::wgmma, s, it, t_mma);
        TL_PROBE_END_AT(Probe::wgmma, s, it, t_done);
        if (prev_stage >= 0) TL_PROBE_INSTANT_AT(Probe::release, prev_stage, it - 1, t_done);
        prev_stage = s;
      }
      if constexpr (PINGPONG) named_barrier_arrive(TURN + 1 - c, 2 * 128);  // every wgmma of the tile issued
      wgmma_wait<0>();
      if (prev_stage >= 0) {
        TL_PROBE_INSTANT(Probe::release, prev_stage, it - 1);
        if (tid == 0) release(prev_stage);
      }
      // The rank-1 tile of an odd pair lies past the matrix: nothing to store (uniform over the warpgroup).
      if (CLUSTER > 1 && (tm >= tiles_m || tn >= tiles_n)) return;
      TL_PROBE_BEGIN(Probe::epilogue, probe::kNoStage, t);
      if constexpr (CFG.stream_k) {
        // This consumer's flag and workspace slot of CTA q: 128 threads x NV / 4 chunks of 4 registers.
        auto slot = [&](int q) { return workspace + static_cast<long long>(q) * (P.partial_floats / 4); };
        auto flag = [&](int q) { return flags + q * CONSUMERS + c; };
        if (k1 < k_steps) {
          // An earlier piece of a split tile: publish the partial for the tile's finisher.
#pragma unroll
          for (int j = 0; j < NV / 4; ++j)
            slot(blockIdx.x)[P.partial(tid, j, c)] = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
          named_barrier_sync(1 + c, 128);  // every thread's partial is written before the flag says so
          if (tid == 0) {
            __threadfence();
            atomicExch(flag(blockIdx.x), 1);
          }
          TL_PROBE_END(Probe::epilogue, probe::kNoStage, t);
          return;
        }
        if (k0 > 0) {
          // The finisher: the earlier pieces, nearest CTA first.
          const GemmStreamK sk = gemm_stream_k(tiles, k_steps, gridDim.x, !split_always);
          for (int q = static_cast<int>(blockIdx.x) - 1; gemm_stream_k_contributor(sk, t, q); --q) {
            if (tid == 0)
              while (ld_acquire_gpu(flag(q)) == 0) {
              }
            named_barrier_sync(1 + c, 128);
#pragma unroll
            for (int j = 0; j < NV / 4; ++j) {
              const float4 v = __ldcg(slot(q) + P.partial(tid, j, c));
              acc[4 * j] += v.x;
              acc[4 * j + 1] += v.y;
              acc[4 * j + 2] += v.z;
              acc[4 * j + 3] += v.w;
            }
            if (tid == 0) *flag(q) = 0;  // for the next launch: no one else touches it in this one
          }
        }
      }
      // Epilogue: rows [tm BM + 64 (c CHAINS + h), + 64) and columns [tn BN, + BN) of C per chain h (split columns:
      // rows [tm BM + 64 h, + 64) and columns [tn BN + c WN, + WN); gemm_store.cuh; a staged chain waits until the
      // one before it has left the staging tile).
#pragma unroll
      for (int h = 0; h < CHAINS; ++h)
        store_acc_tile<CFG>(acc + h * NV1, &tma_c, C, c_base + c * P.c_tile_bytes, c, tid,
                            tm * BM + (SPLIT_ROWS * c * CHAINS + h) * WG_M, tn * BN + (SPLIT_COLS ? c * WN : 0), M,
                            N);
      TL_PROBE_END(Probe::epilogue, probe::kNoStage, t);
    });
    if constexpr (TMA_STORE) {
      if (tid == 0) tma_store_wait_all();
    }
    TL_PROBE_FLUSH();
    if (c == 0 && tid == 0) TL_PROBE_BLOCK_END();
  }
  // No CTA leaves while its peer may still arrive on its empty barriers (the peer's last releases).
  if constexpr (CLUSTER > 1) cluster_sync();
}

template <GemmWgmmaConfig CFG>
__global__ void __launch_bounds__(CFG.threads(), 1)
    gemm_wgmma(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
               const __grid_constant__ TmaDescriptor tma_c, void* __restrict__ C, int M, int N, int K) {
  static_assert(!CFG.stream_k, "stream-K is gemm_wgmma_stream_k");
  gemm_wgmma_body<CFG>(tma_a, tma_b, tma_c, C, M, N, K, nullptr, nullptr, false);
}

// Stream-K: `workspace` holds a partial tile per CTA of the grid (P.partial_floats f32 each), `flags` an int per CTA
// and consumer, zero at launch and left at zero. `split_always` (schedule=stream_k): split the last waves whatever
// they cost; 0 (schedule=auto): only where gemm_stream_k_pays on this grid, else every tile whole.
template <GemmWgmmaConfig CFG>
__global__ void __launch_bounds__(CFG.threads(), 1)
    gemm_wgmma_stream_k(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
                        const __grid_constant__ TmaDescriptor tma_c, void* __restrict__ C, int M, int N, int K,
                        float* __restrict__ workspace, int* __restrict__ flags, int split_always) {
  static_assert(CFG.stream_k, "data-parallel is gemm_wgmma");
  gemm_wgmma_body<CFG>(tma_a, tma_b, tma_c, C, M, N, K, reinterpret_cast<float4*>(workspace), flags, split_always != 0);
}

}  // namespace tl
