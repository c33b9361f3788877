// The K-major Hopper GEMM main loop that gemm.fp8 and gemm.grouped run: A and B through TMA into 128B-swizzled smem,
// mbarrier pipeline, warp-specialized wgmma, f32 accumulation (promoted per k block for e4m3), scales per tensor, row
// or 128-block, over the work tiles a tile source hands out.
//
// C = (scale_A A) · (scale_B B)^T per work tile: A row-major (K-major), B stored N x K (K-major, what FP8 wgmma and
// cuBLASLt's FP8 GEMM require), C row-major bf16 or f32. A and B are e4m3 (wgmma m64nNk32) or bf16 (m64nNk16:
// CFG.in_bytes() 2, gemm.grouped's bf16 inputs, no scales and no promotion). The config CFG has gemm.fp8's fields
// (gemm_fp8_plan.hpp); the plan made from it (make_kmajor_plan) holds every layout, offset and byte count the body
// uses.
//
// Work tiles: `Tiles` (the kernel's tile source) says how many (count()) and where tile t lies (at(t), a KMajorTile:
// its rows of A and C, the end of the rows it may store, its rows of B, its columns of C, its group). gemm.fp8's are
// the M x N grid's tiles in panel raster order; gemm.grouped's the tiles of every group. prepare(base) runs once on
// every thread before the pipeline starts (gemm.grouped builds its group table in shared memory there).
//
// Threads: (consumers + 1) warpgroups of 128 threads. Warpgroup 0 is the producer: one elected thread issues the
// TMA loads of each k block (block_K: one 128-byte swizzle row per tile row) into the next free stage.
// Warpgroups 1..consumers are the consumers: consumer c owns rows [64 c, 64 c + 64) of the tile and all block_N
// columns. The grid is persistent (one CTA per SM); CTAs take work tiles t = blockIdx.x, + gridDim.x, ...
//
// gemm.fp8's `early_loads` (its grid tiles only): the elected thread issues its first tile's first stages right after
// the barriers' init, before the __syncthreads and the register hand-over (tensor and row scales).
//
// Two-level accumulation (DeepSeek-V3 / DeepGEMM), e4m3 only: the tensor cores add e4m3 products in limited
// precision, so a consumer lets wgmma sum one k block only (4 x k32) into `part` (scale_d = 0 on the first, a fresh
// sum), waits for it, and adds it into its f32 accumulator `acc` with plain FMAs — times the block scales
// scale_A[row, kb] * scale_B[n block, kb] in block scaling, as they change from k block to k block. Per k block it
// runs block_N / wgmma_N such chains one after another, each over wgmma_N columns: part holds wgmma_N / 2 registers,
// not block_N / 2 (256-column tiles fit the register budget with 128-column chains). While one consumer promotes, the
// other's chain keeps the tensor cores busy. gemm.fp8's `overlap` keeps two partial sums, so that a consumer's next
// chain runs during its own promotion (with a_regs within each k block only); its `a_regs` loads the consumer's A
// rows of the k block into registers once (ldmatrix), so that its chains' wgmma read only B from shared memory (each
// chain reads A again otherwise); its `ping_pong` has the two consumers issue their chains in turns (named barriers
// 1 + consumers + c), so that their promotions do not fall together.
// fast_accum (and bf16): no promotion; wgmma accumulates all of K into acc
// (one k block of wgmma in flight, as gemm.wgmma). Tensor and row scales multiply acc in the epilogue (they do not
// change with k).
//
// Shared memory (dynamic, from a base aligned to one 128B swizzle atom, 1024 B; the plan's offsets):
//   [num_stages x A tile: smem_A, block_M rows x block_K, 128 B per row, TMA SWIZZLE_128B]
//   [num_stages x B tile: smem_B, block_N rows x block_K, likewise]
//   [tma_store: consumers x C staging tile smem_C, 64 rows x block_N (gemm_store.cuh)]
//   [block scaling: num_stages x scale slot, block_M f32 of scale_A, then 1 or 2 f32 of scale_B, 16-byte padded]
//   [num_stages full barriers][num_stages empty barriers]
//   [what the tile source keeps (gemm.grouped: its group table)]
// The wgmma descriptors start at the plan's layouts at (row, k) = (64 c, WG_K kk) for A and (wgmma_N j, WG_K kk) for
// chain j of B: rows that start a swizzle atom, where the offset is the unswizzled one the descriptor wants.
//
// Block scales travel with their k block: the producer warp's 32 lanes copy the tile's block_M scale_A and its one or
// two scale_B of the stage's k block into the stage's scale slot with 4-byte cp.async, each lane then
// arriving on the stage's full barrier once its copies have landed (cp.async.mbarrier.arrive), so the consumers wait
// for one barrier and read their scales from shared memory. (Read by the consumers from global memory instead, one
// k block ahead, they cost block scaling 15% against row scaling on the H100: a load in flight holds up the next
// wgmma's fence.) Rows past the tile's rows_end and blocks past N take the last valid ones (their results are never
// stored). gemm.fp8's `scale_tma` loads them with TMA instead: the producer's elected lane loads, beside A and B, the
// box of 4 k blocks (16 bytes a row, TMA's smallest inner box) of scale_A's block_M rows and of scale_B's blocks that
// holds the stage's k block into the stage's slot, and the full barrier counts TMA bytes only; a consumer reads k
// block kb at kb % 4 of each row (boxes past M, N or the blocks are zero-filled: only results never stored use them).
// Each stage loads its own box (the 3 other k blocks' 3 x 4 bytes a row ride along): a box kept over 4 stages would
// tie the ring's stages to the k blocks' groups of 4. gemm.fp8's scale_a_mn (scale_A M-major, [k_steps, M]): the
// stage's scale_A is one contiguous run of block_M floats, one box (block_M, 1) with scale_tma (no k blocks riding
// along) or 32 lanes' coalesced cp.async; the slot holds that k block only.
#pragma once

#include "gemm/gemm_fp8_plan.hpp"
#include "gemm/gemm_store.cuh"
#include "tile/barrier.cuh"
#include "tile/config.hpp"
#include "tile/cp_async.cuh"
#include "tile/ldmatrix.cuh"
#include "tile/mbarrier.cuh"
#include "tile/probe.hpp"
#include "tile/setmaxnreg.cuh"
#include "tile/smem.cuh"
#include "tile/tma.cuh"
#include "tile/wgmma_ops.cuh"

namespace tl {

// Where a work tile lies. Scale rows of B: row scaling reads scale_B[group N + col], block scaling block row
// group ceil(N / 128) + col / 128.
struct KMajorTile {
  int a_row;     // its first row of A and of C
  int rows_end;  // rows of A and C at or past it are no output of this tile (another group's, or past M)
  int b_row;     // its first row of B (gemm.grouped: of the groups' B stacked, [G N, K])
  int col0;      // its first column of C
  int group;     // its group (gemm.fp8: 0)
};

// One wgmma of a chain, of the inputs' type; SCALE_D 0 starts a fresh sum.
template <auto CFG, int SCALE_D>
TL_DEVICE_INLINE void kmajor_wgmma(float* d, unsigned long long da, unsigned long long db) {
  if constexpr (CFG.in_bytes() == 1) {
    wgmma_ops::WgmmaSSE4M3<CFG.wgmma_N>::template run<SCALE_D>(d, da, db);
  } else {
    wgmma_ops::WgmmaSS<CFG.wgmma_N, true, 0>::template run<SCALE_D>(d, da, db);
  }
}

// Timeline regions (TL_PROBE marks; compiled in only with -DTL_TIMELINE=1): GemmFp8Probe, the specs' `probes`.
// Stage = pipeline stage, aux = pipeline iteration (epilogue: the tile). Warp 0 (the producer warp) marks its
// empty-barrier waits and TMA issues (with the scale copies); the first warp of each consumer warpgroup, for the
// whole warpgroup, its full-barrier waits, its k block of wgmma (from the full barrier to the last chain's
// completion, the promotions of the chains before it included), the promotion of the last chain, its release of
// the stage, and its epilogues; every recording warp its prologue (kernel entry to the __syncthreads' end), and each
// consumer its exit (the last epilogue's end to the CTA's last wait on its bulk stores, lane 0's).
template <auto CFG, class Tiles>
TL_DEVICE_INLINE void gemm_kmajor_body(Tiles& tiles, const TmaDescriptor& tma_a, const TmaDescriptor& tma_b,
                                       const TmaDescriptor& tma_c, const float* __restrict__ scale_A,
                                       const float* __restrict__ scale_B, void* __restrict__ C, int N, int K,
                                       const TmaDescriptor* tma_sa = nullptr, const TmaDescriptor* tma_sb = nullptr) {
  using namespace wgmma_ops;
  using namespace gemm_detail;
  using Probe = GemmFp8Probe;
  TL_PROBE_STAMP(t_entry);  // probe build: the prologue region's start (before the block's anchor)
  constexpr auto P = make_plan(CFG);
  constexpr int BM = CFG.block_M, BN = CFG.block_N, BK = CFG.block_K, STAGES = CFG.num_stages;
  constexpr int CONSUMERS = CFG.consumers(), WN = CFG.wgmma_N, CHUNKS = CFG.chunks();
  constexpr bool E4M3 = CFG.in_bytes() == 1;
  constexpr bool PROMOTE = E4M3 && !CFG.fast_accum;
  constexpr bool OVERLAP = PROMOTE && kmajor_part_buffers(CFG) == 2;
  constexpr bool A_REGS = PROMOTE && kmajor_a_regs(CFG);
  constexpr bool PING_PONG = PROMOTE && !OVERLAP && kmajor_ping_pong(CFG);
  constexpr Fp8Scaling SCALING = CFG.scaling;
  constexpr bool SCALE_TMA = SCALING == kScaleBlock && kmajor_scale_tma(CFG);  // tma_sa and tma_sb are valid maps
  constexpr int SF_K = P.sf_k;  // k blocks per scale_B block in a slot (SCALE_TMA: 4)
  constexpr bool SA_MN = SCALING == kScaleBlock && kmajor_scale_a_mn(CFG);  // scale_A [k_steps, M]
  constexpr int SF_A_K = P.sf_a_k;  // k blocks per scale_A row in a slot (SCALE_TMA with scale_A K-major: 4)
  static_assert(SF_K == (SCALE_TMA ? 4 : 1), "the scale slots hold the TMA boxes of 4 k blocks");
  static_assert(SF_A_K == (SCALE_TMA && !SA_MN ? 4 : 1), "scale_A's slot: a box of 4 k blocks, or the stage's only");
  constexpr bool SCALE_STAGE = kmajor_scale_stage(CFG);  // row scales in the consumer's shared slot (scale_stage)
  constexpr bool UDESC = kmajor_uniform_desc(CFG);  // descriptors from warp-uniform values (uniform_desc)
  constexpr bool SCALE_EARLY = kmajor_scale_early(CFG);  // tensor scales loaded at the start (scale_early)
  constexpr bool PREFETCH_MAPS = kmajor_prefetch_maps(CFG);  // the maps' descriptors prefetched first (prefetch_maps)
  constexpr bool EARLY_LOADS = kmajor_early_loads(CFG);  // the first stages loaded before the __syncthreads
  static_assert(!EARLY_LOADS || !Tiles::clip_rows(),
                "early_loads reads the first tile before the __syncthreads: gemm.fp8's grid tiles only");
  constexpr int WG_M = P.acc.rows();  // rows of one consumer (the wgmma M)
  constexpr int WG_K = E4M3 ? 32 : 16;  // k of one wgmma (m64nNk32 e4m3, m64nNk16 bf16): 32 bytes
  constexpr int NV = P.acc.num_values(), NP = P.chunk.num_values();
  static_assert(BM == WG_M * CONSUMERS, "each consumer warpgroup owns 64 rows");
  static_assert(BK * P.in_bytes == swizzle_bytes(SmemSwizzle::b128), "one 128-byte swizzle row per tile row");
  static_assert(SCALING != kScaleBlock || BK == P.scale_block, "a stage is one k block of the block scales");
  static_assert(BN % WN == 0 && NP * CHUNKS == NV, "the chains split the tile's columns");
  static_assert(SCALING != kScaleBlock || PROMOTE, "block scales change per k block: they need the promotion");
  static_assert(SCALING != kScaleBlock || BN % P.scale_block == 0 || P.scale_block % BN == 0 ||
                    (BN % (P.scale_block / 2) == 0 && P.sf_b_blocks == 2 && BN < 2 * P.scale_block),
                "a tile starts at column 0 or 64 of a 128-column block of B and meets at most two");
  static_assert(!PING_PONG || CONSUMERS == 2, "ping_pong: two consumers take turns");
  static_assert(!OVERLAP || CHUNKS % 2 == 0, "overlap: chain j of every k block takes partial-sum buffer j % 2");
  constexpr unsigned A_BYTES = P.a_stage_bytes;
  constexpr unsigned B_BYTES = P.b_stage_bytes;
  // Consumer c's rows of A start at row 64 c, chain j's rows of B at row WN j, and wgmma's k step moves WG_K
  // columns, of rows that start a swizzle atom: there the layouts are linear (the plan tests check it), so the
  // descriptors' start addresses step by these strides.
  constexpr unsigned A_WG = P.in_bytes * P.smem_A(WG_M, 0);
  constexpr unsigned A_KSTEP = P.in_bytes * P.smem_A(0, WG_K);
  constexpr unsigned B_CHAIN = P.in_bytes * P.smem_B(WN, 0);
  constexpr unsigned B_KSTEP = P.in_bytes * P.smem_B(0, WG_K);
  static_assert(!UDESC || (P.a_lbo == 16 && P.b_lbo == 16 && P.a_sbo == 1024 && P.b_sbo == 1024),
                "uniform_desc: K-major SW128 operands, whose high word is kSw128DescHi");
  static_assert(A_WG % 16 == 0 && A_KSTEP % 16 == 0 && B_CHAIN % 16 == 0 && B_KSTEP % 16 == 0 &&
                    A_BYTES % 16 == 0 && B_BYTES % 16 == 0,
                "the descriptors' steps are whole 16-byte units (the low word's address field)");

  extern __shared__ unsigned char smem_raw[];
  const unsigned base = smem_align<P.align>(smem_raw);
  const unsigned a_base = base + P.a_offset;
  const unsigned b_base = base + P.b_offset;
  const unsigned sf_base = base + P.sf_offset;  // block scaling: the stages' scale slots
  const unsigned c_base = base + P.c_offset;  // tma_store: CONSUMERS x (64 x BN) staging tiles
  auto full_bar = [&](int s) { return base + P.full_bar_offset + 8u * s; };
  auto empty_bar = [&](int s) { return base + P.empty_bar_offset + 8u * s; };

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  // scale_early (tensor scaling): the consumers' threads load the two tensor scales first thing, so that the loads
  // (from HBM: nothing of them is in the L2 at a kernel's start) run beside the barriers' init, the producer's first
  // TMA loads and the first k block's wait, and the epilogue finds them in a register; the consumers multiply them
  // before their first wait (a load still in flight would hold up the first wgmma fence).
  [[maybe_unused]] float early_sa = 1.f, early_sb = 1.f;
  if constexpr (SCALE_EARLY) {
    if (wg != 0) {
      early_sa = __ldg(scale_A);
      early_sb = __ldg(scale_B);
    }
  }
  // prefetch_maps: thread 0, which issues the TMA loads, starts its descriptors' fetches before the barriers' init
  // (C's too, whose first bulk store would otherwise fetch it after the last k block).
  if constexpr (PREFETCH_MAPS) {
    if (threadIdx.x == 0) {
      prefetch_tensormap(&tma_a);
      prefetch_tensormap(&tma_b);
      if constexpr (SCALE_TMA) {
        prefetch_tensormap(tma_sa);
        prefetch_tensormap(tma_sb);
      }
      if constexpr (CFG.tma_store) prefetch_tensormap(&tma_c);
    }
  }
  tiles.prepare(base);
  // early_loads: the first tile's stages the elected thread loads before the __syncthreads (the producer loop skips
  // them); 0 without it or without a tile.
  auto early_stages = [&] {
    return EARLY_LOADS && static_cast<int>(blockIdx.x) < tiles.count() ? min(STAGES, (K + BK - 1) / BK) : 0;
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar(s), SCALING == kScaleBlock && !SCALE_TMA ? 1 + 32 : 1);  // + each producer lane's scale copies
      mbar_init(empty_bar(s), CONSUMERS);
    }
    fence_mbarrier_init();
    if constexpr (EARLY_LOADS) {
      // Stage k = iteration k of the producer loop (its empty barriers pass at once in the first round).
      const int early_n = early_stages();
      if (early_n > 0) {
        const KMajorTile tile = tiles.at(blockIdx.x);
        for (int k = 0; k < early_n; ++k) {
          mbar_expect_tx(full_bar(k), A_BYTES + B_BYTES);
          tma_load(a_base + k * A_BYTES, &tma_a, full_bar(k), k * BK, tile.a_row);
          tma_load(b_base + k * B_BYTES, &tma_b, full_bar(k), k * BK, tile.b_row);
        }
      }
    }
    TL_PROBE_BLOCK_BEGIN();
  }
  __syncthreads();
  TL_PROBE_STAMP(t_synced);  // probe build: the prologue region's end

  const int count = tiles.count();
  const int k_steps = (K + BK - 1) / BK;  // = the k blocks of the block scales
  const int n_blocks = (N + P.scale_block - 1) / P.scale_block;

  if (wg == 0) {
    // Producer warpgroup: give registers to the consumers; its first warp waits on the empty barriers, one elected
    // lane issues the TMA loads and, with block scales, all 32 lanes copy the stage's scales (a whole warp also so
    // that the warp-collective probe marks can record it).
    setmaxnreg_dec<40>();
    if (tid < 32) {
      TL_PROBE_WARP_INIT();
      TL_PROBE_BEGIN_AT(Probe::prologue, probe::kNoStage, 0, t_entry);
      TL_PROBE_END_AT(Probe::prologue, probe::kNoStage, 0, t_synced);
      if (!PREFETCH_MAPS && tid == 0) {
        prefetch_tensormap(&tma_a);
        prefetch_tensormap(&tma_b);
        if constexpr (SCALE_TMA) {
          prefetch_tensormap(tma_sa);
          prefetch_tensormap(tma_sb);
        }
      }
      int it = 0;
      [[maybe_unused]] const int early_n = early_stages();
      for (int t = blockIdx.x; t < count; t += gridDim.x) {
        const KMajorTile tile = tiles.at(t);
        for (int k = 0; k < k_steps; ++k, ++it) {
          if (EARLY_LOADS && it < early_n) continue;  // loaded before the __syncthreads
          const int s = it % STAGES;
          TL_PROBE_STAMP(t_wait);
          mbar_wait(empty_bar(s), ((it / STAGES) & 1) ^ 1);
          TL_PROBE_STAMP(t_issue);
          if (tid == 0) {
            // Boxes past M, N or K are zero-filled by TMA and still count their whole bytes.
            mbar_expect_tx(full_bar(s), A_BYTES + B_BYTES + P.sf_tma_bytes);
            tma_load(a_base + s * A_BYTES, &tma_a, full_bar(s), k * BK, tile.a_row);
            tma_load(b_base + s * B_BYTES, &tma_b, full_bar(s), k * BK, tile.b_row);
            if constexpr (SCALE_TMA) {
              // The boxes of 4 k blocks that hold k: scale_A [rows, k_steps] at the tile's rows (M-major, [k_steps,
              // M]: k's run of the tile's rows), scale_B [groups x n_blocks, k_steps] at its first 128-column block.
              const unsigned slot = sf_base + s * P.sf_stage_bytes;
              const int k4 = k / SF_K * SF_K;
              if constexpr (SA_MN) {
                tma_load(slot, tma_sa, full_bar(s), tile.a_row, k);
              } else {
                tma_load(slot, tma_sa, full_bar(s), k4, tile.a_row);
              }
              tma_load(slot + P.sf_b_offset, tma_sb, full_bar(s), k4, tile.group * n_blocks + tile.col0 / P.scale_block);
            }
          }
          if constexpr (SCALING == kScaleBlock && !SCALE_TMA) {
            // scale_A [rows, k_steps] of the tile's rows (M-major, [k_steps, M]: consecutive lanes, consecutive
            // floats), scale_B [groups x n_blocks, k_steps] of its 128-column blocks in its group's.
            const unsigned slot = sf_base + s * P.sf_stage_bytes;
            for (int r = tid; r < BM; r += 32) {
              const long long row = min(tile.a_row + r, tile.rows_end - 1);
              if constexpr (SA_MN) {
                cp_async_4(slot + 4 * r, scale_A + static_cast<long long>(k) * tiles.M + row);  // gemm.fp8's tiles
              } else {
                cp_async_4(slot + 4 * r, scale_A + row * k_steps + k);
              }
            }
            if (tid < P.sf_b_blocks) {
              const int nb = tile.group * n_blocks + min(tile.col0 / P.scale_block + tid, n_blocks - 1);
              cp_async_4(slot + P.sf_b_offset + 4 * tid, scale_B + static_cast<long long>(nb) * k_steps + k);
            }
            cp_async_mbar_arrive(full_bar(s));
          }
          TL_PROBE_STAMP(t_issued);
          TL_PROBE_BEGIN_AT(Probe::wait_empty, s, it, t_wait);
          TL_PROBE_END_AT(Probe::wait_empty, s, it, t_issue);
          TL_PROBE_BEGIN_AT(Probe::tma_issue, s, it, t_issue);
          TL_PROBE_END_AT(Probe::tma_issue, s, it, t_issued);
        }
      }
      TL_PROBE_FLUSH();
    }
  } else {
    setmaxnreg_inc<232>();
    const int c = wg - 1;
    TL_PROBE_WARP_INIT_IF(tid < 32);
    TL_PROBE_BEGIN_AT(Probe::prologue, probe::kNoStage, 0, t_entry);
    TL_PROBE_END_AT(Probe::prologue, probe::kNoStage, 0, t_synced);
    // Register v holds element P.acc(tid, v) of the consumer's 64 x BN tile: the thread's register 0 plus AT.at[v]
    // (row half AT.at[v].row / 8, column AT.at[v].col). Chain j's part[i] is acc[NP j + i].
    constexpr GemmWgmmaAccTable AT = acc_table(P);
    constexpr int ROW_HALF = AT.at[P.acc_pair].row;  // the second row a thread holds, 8 below its first
    const TileCoord e0 = P.acc(tid, 0);
    float acc[NV];
    float part[PROMOTE ? NP : 1];
    float parts[OVERLAP ? 2 : 1][OVERLAP ? NP : 1];  // overlap: chain j's partial sums in parts[j % 2]
    // a_regs: the k block's A fragments of this thread, per wgmma k step: rows 16 warp + lane / 4 (+ 8) of the
    // consumer's 64, k bytes 4 (lane % 4) .. + 3 (+ 16): what ldmatrix.x4 gives lane L from the four 8 x 16-byte
    // matrices whose row addresses lanes 8i .. 8i + 7 pass (matrix i: rows + 8 (i % 2), bytes + 16 (i / 2)).
    unsigned a_frag[A_REGS ? BK / WG_K : 1][4];
    const int a_row = c * WG_M + (tid / 32) * 16 + (tid % 8) + ((tid / 8) % 2) * 8;
    const int a_col = ((tid % 32) / 16) * 16;
    // Block scales: which of the tile's 128-column blocks of B (the stage's scale_B slots) register v is in. A
    // 192-column tile starts at column 0 or 64 of a block (tile n at 192 n): its columns [0, 64) lie in slot 0 and
    // [128, 192) in slot 1 either way, the middle ones in the slot `mid` says, chosen once per k block.
    constexpr int NB_TILE = P.sf_b_blocks;
    constexpr bool SPLIT_BLOCKS = SCALING == kScaleBlock && BN % P.scale_block != 0 && P.scale_block % BN != 0;
    auto block_of = [&](int v) { return AT.at[v].col / P.scale_block; };
    auto block_of_shifted = [&](int v) { return (AT.at[v].col + BN % P.scale_block) / P.scale_block; };
    // ping_pong: consumer c issues a chain only on its turn (named barrier TURN + c, which the other consumer's
    // arrival after its own issue completes), so the two consumers' chains reach the tensor cores one after the
    // other and one consumer's promotion runs beside the other's chain, rather than both promoting at once while the
    // tensor cores idle. Consumer 0 takes the first turn; consumer 1's last arrival is left unmatched at exit.
    constexpr int TURN = 1 + CONSUMERS;  // after the epilogue's barriers 1 + c (gemm_store.cuh)
    auto take_turn = [&] {
      if constexpr (PING_PONG) named_barrier_sync(TURN + c, 2 * 128);
    };
    auto pass_turn = [&] {
      if constexpr (PING_PONG) named_barrier_arrive(TURN + 1 - c, 2 * 128);
    };
    if (c == 1) pass_turn();
    // UDESC (config uniform_desc): the descriptors are built from values ptxas can prove warp-uniform, the results of
    // redux.sync (warp_uniform): this consumer's first low word of A (its rows of stage 0) and the high word, once.
    // Stage s's low words are those plus s stages' bytes >> 4 (the loop counter is uniform), and each chain's and
    // k32 step's a uniform add of a constant (shared memory ends below 2^18 bytes: the 14-bit address field never
    // carries into the leading byte offset), so ptxas can keep them in uniform registers, where the default builds
    // every descriptor per thread from its address and moves both words over by R2UR before each wgmma.
    [[maybe_unused]] const unsigned hi_u = UDESC ? warp_uniform(kSw128DescHi) : kSw128DescHi;
    [[maybe_unused]] const unsigned a_lo0 = UDESC ? warp_uniform(sw128_desc_lo(a_base + c * A_WG, P.a_lbo)) : 0u;
    [[maybe_unused]] const unsigned b_lo0 = UDESC ? warp_uniform(sw128_desc_lo(b_base, P.b_lbo)) : 0u;
    // UDESC: stage s's low words of A's and B's descriptors.
    auto a_lo_of = [&](int s) { return UDESC ? a_lo0 + s * (A_BYTES >> 4) : 0u; };
    auto b_lo_of = [&](int s) { return UDESC ? b_lo0 + s * (B_BYTES >> 4) : 0u; };
    // The descriptors of k32 step kk of the stage at a_at / b_at (B's of chain j); UDESC: from its low words a_lo / b_lo.
    auto desc_a = [&](unsigned a_at, unsigned a_lo, int kk) {
      return UDESC ? desc_of(a_lo + kk * (A_KSTEP >> 4), hi_u) : smem_desc_sw128(a_at + kk * A_KSTEP, P.a_lbo, P.a_sbo);
    };
    auto desc_b = [&](unsigned b_at, unsigned b_lo, int j, int kk) {
      return UDESC ? desc_of(b_lo + (j * B_CHAIN + kk * B_KSTEP) / 16, hi_u)
                   : smem_desc_sw128(b_at + j * B_CHAIN + kk * B_KSTEP, P.b_lbo, P.b_sbo);
    };
    [[maybe_unused]] const float scale_t = early_sa * early_sb;  // scale_early: the tensor scales' product
    int it = 0;
    // scale_stage: the slot of this tile's parity. Tile t + 1's copies go to the other slot, whose last readers (tile
    // t - 1's epilogue) all passed the barrier before tile t's epilogue, so no barrier guards the copies.
    [[maybe_unused]] int parity = 0;
    for (int t = blockIdx.x; t < count; t += gridDim.x) {
      const KMajorTile tile = tiles.at(t);
      const int row0 = tile.a_row + c * WG_M, col0 = tile.col0;
      [[maybe_unused]] const unsigned rs_slot = base + P.rs_offset + (2 * c + parity) * P.rs_slot_bytes;
      if constexpr (SCALE_STAGE && SCALING == kScaleTensor) {
        // Tensor scales: each thread copies the two into its own 8 bytes of the slot (no barrier to publish them).
        cp_async_4(rs_slot + 8 * tid, scale_A);
        cp_async_4(rs_slot + 8 * tid + 4, scale_B);
        cp_async_commit();
      } else if constexpr (SCALE_STAGE) {
        // scale_B [group N + col] of the tile's block_N columns, then scale_A of the consumer's 64 rows, 4-byte
        // cp.async each, clamped to the last column and row as the epilogue's loads are (what lies past N or
        // rows_end scales nothing that is stored). They land while the k loop runs.
        const float* sb = scale_B + static_cast<long long>(tile.group) * N;
#pragma unroll
        for (int i = 0; i < (BN + 127) / 128; ++i)
          if (BN % 128 == 0 || tid + 128 * i < BN)
            cp_async_4(rs_slot + 4 * (tid + 128 * i), sb + min(col0 + tid + 128 * i, N - 1));
        if (tid < WG_M) cp_async_4(rs_slot + 4 * (BN + tid), scale_A + min(row0 + tid, tile.rows_end - 1));
        cp_async_commit();
      }
#pragma unroll
      for (int i = 0; i < NV; ++i) acc[i] = 0.f;
      int prev_stage = -1;
#pragma unroll 1
      for (int k = 0; k < k_steps; ++k, ++it) {
        const int s = it % STAGES;
        TL_PROBE_STAMP(t_wait);
        mbar_wait(full_bar(s), (it / STAGES) & 1);
        TL_PROBE_STAMP(t_mma);
        const unsigned a_at = a_base + s * A_BYTES + c * A_WG;
        const unsigned b_at = b_base + s * B_BYTES;
        [[maybe_unused]] const unsigned a_lo = a_lo_of(s), b_lo = b_lo_of(s);  // UDESC: the stage's low words
        if constexpr (PROMOTE) {
          // This k block's scale products per row half and block of B, from the stage's scale slot.
          float scale[2][NB_TILE], mid[2];
          if constexpr (SCALING == kScaleBlock) {
            // Row r's scale of this k block at r SF_A_K + k % SF_A_K, block b's at sf_b_offset + b SF_K + k % SF_K.
            const unsigned slot = sf_base + s * P.sf_stage_bytes + 4 * (k % SF_K);
            const unsigned slot_a = SA_MN ? slot - 4 * (k % SF_K) : slot;  // SF_A_K is SF_K or 1
            const float sa[2] = {ld_shared_f32(slot_a + 4 * SF_A_K * (c * WG_M + e0.row)),
                                 ld_shared_f32(slot_a + 4 * SF_A_K * (c * WG_M + e0.row + ROW_HALF))};
#pragma unroll
            for (int b = 0; b < NB_TILE; ++b) {
              const float sb = ld_shared_f32(slot + P.sf_b_offset + 4 * SF_K * b);
              scale[0][b] = sa[0] * sb;
              scale[1][b] = sa[1] * sb;
            }
            if constexpr (SPLIT_BLOCKS) {
              const bool shifted = col0 % P.scale_block != 0;
              mid[0] = shifted ? scale[0][1] : scale[0][0];
              mid[1] = shifted ? scale[1][1] : scale[1][0];
            }
          }
          if constexpr (A_REGS) {
            const unsigned a_stage = a_base + s * A_BYTES;
#pragma unroll
            for (int kk = 0; kk < BK / WG_K; ++kk)
              ldmatrix_x4(a_stage + P.in_bytes * P.smem_A(a_row, kk * WG_K + a_col), a_frag[kk][0], a_frag[kk][1],
                          a_frag[kk][2], a_frag[kk][3]);
          }
          // Chain j of the stage at a_at / b_at: a fresh partial sum in d of the k block's 4 x k32 over columns
          // [WN j, WN j + WN), committed as one group.
          // UDESC: from the stage's low words a_lo / b_lo instead.
          auto issue = [&](float(&d)[NP], int j, unsigned a_at, unsigned b_at, unsigned a_lo, unsigned b_lo) {
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / WG_K; ++kk) {
              const unsigned long long da = desc_a(a_at, a_lo, kk), db = desc_b(b_at, b_lo, j, kk);
              if constexpr (A_REGS) {
                if (kk == 0) {
                  WgmmaRSE4M3<WN>::template run<0>(d, a_frag[kk], db);
                } else {
                  WgmmaRSE4M3<WN>::template run<1>(d, a_frag[kk], db);
                }
              } else if (kk == 0) {
                kmajor_wgmma<CFG, 0>(d, da, db);
              } else {
                kmajor_wgmma<CFG, 1>(d, da, db);
              }
            }
            wgmma_commit();
          };
          // Chain j's partial sums d, complete, added into its columns of acc.
          auto promote = [&](const float(&d)[NP], int j) {
#pragma unroll
            for (int i = 0; i < NP; ++i) {
              const int v = NP * j + i;
              if constexpr (SCALING == kScaleBlock) {
                const int h = AT.at[v].row / ROW_HALF;
                if (SPLIT_BLOCKS && block_of(v) != block_of_shifted(v)) {
                  acc[v] = fmaf(d[i], mid[h], acc[v]);
                } else {
                  acc[v] = fmaf(d[i], scale[h][block_of(v)], acc[v]);
                }
              } else {
                acc[v] += d[i];
              }
            }
          };
          if constexpr (OVERLAP) {
            // Two chains in flight: chain j + 1 (or the next k block's chain 0, once its stage is full) is issued
            // before chain j is waited for and promoted, so the tensor cores run it during the promotion. A tile's
            // first chain is issued here; a k block's other first chains by the k block before it. With a_regs
            // every k block issues its own first chain and waits for its last one: its A fragments are loaded at its
            // start, and a chain left in flight across the loop's back edge, whose partial sums the next k block
            // promotes, makes ptxas wait for every wgmma there (C7517) or serialize them all (C7514).
            if (A_REGS || k == 0) issue(parts[0], 0, a_at, b_at, a_lo, b_lo);
#pragma unroll
            for (int j = 0; j < CHUNKS - 1; ++j) {
              issue(parts[(j + 1) % 2], j + 1, a_at, b_at, a_lo, b_lo);
              wgmma_wait<1>();
              fence_regs(parts[j % 2]);  // the promotion reads chain j's sums only after the wait
              promote(parts[j % 2], j);
            }
            if (!A_REGS && k + 1 < k_steps) {
              const int s_next = (it + 1) % STAGES;
              mbar_wait(full_bar(s_next), ((it + 1) / STAGES) & 1);
              issue(parts[0], 0, a_base + s_next * A_BYTES + c * A_WG, b_base + s_next * B_BYTES,
                    a_lo_of(s_next), b_lo_of(s_next));
              wgmma_wait<1>();
            } else {
              wgmma_wait<0>();
            }
            fence_regs(parts[1]);
          } else {
            // One chain at a time: issued, waited for, promoted; the other consumer's chain keeps the tensor cores
            // busy meanwhile.
#pragma unroll
            for (int j = 0; j < CHUNKS - 1; ++j) {
              take_turn();
              issue(part, j, a_at, b_at, a_lo, b_lo);
              pass_turn();
              wgmma_wait<0>();
              fence_regs(part);  // the promotion reads part only after the wait
              promote(part, j);
            }
            take_turn();
            issue(part, CHUNKS - 1, a_at, b_at, a_lo, b_lo);
            pass_turn();
            wgmma_wait<0>();
            fence_regs(part);
          }
          TL_PROBE_STAMP(t_chained);
          if (tid == 0) mbar_arrive(empty_bar(s));  // every chain has read the stage
          if constexpr (OVERLAP) {
            promote(parts[1], CHUNKS - 1);
          } else {
            promote(part, CHUNKS - 1);
          }
          TL_PROBE_STAMP(t_done);
          TL_PROBE_BEGIN_AT(Probe::wait_full, s, it, t_wait);
          TL_PROBE_END_AT(Probe::wait_full, s, it, t_mma);
          TL_PROBE_BEGIN_AT(Probe::wgmma, s, it, t_mma);
          TL_PROBE_END_AT(Probe::wgmma, s, it, t_chained);
          TL_PROBE_INSTANT_AT(Probe::release, s, it, t_chained);
          TL_PROBE_BEGIN_AT(Probe::promote, s, it, t_chained);
          TL_PROBE_END_AT(Probe::promote, s, it, t_done);
        } else {
          // Fast accumulation: every chain adds into its columns of acc; one k block of wgmma stays in flight.
          wgmma_fence();
#pragma unroll
          for (int j = 0; j < CHUNKS; ++j)
#pragma unroll
            for (int kk = 0; kk < BK / WG_K; ++kk) {
              const unsigned long long da = desc_a(a_at, a_lo, kk), db = desc_b(b_at, b_lo, j, kk);
              kmajor_wgmma<CFG, 1>(acc + NP * j, da, db);
            }
          wgmma_commit();
          wgmma_wait<1>();  // the k block before this one is done: its stage can be refilled
          TL_PROBE_STAMP(t_done);
          if (prev_stage >= 0 && tid == 0) mbar_arrive(empty_bar(prev_stage));
          TL_PROBE_BEGIN_AT(Probe::wait_full, s, it, t_wait);
          TL_PROBE_END_AT(Probe::wait_full, s, it, t_mma);
          TL_PROBE_BEGIN_AT(Probe::wgmma, s, it, t_mma);
          TL_PROBE_END_AT(Probe::wgmma, s, it, t_done);
          if (prev_stage >= 0) TL_PROBE_INSTANT_AT(Probe::release, prev_stage, it - 1, t_done);
          prev_stage = s;
        }
      }
      if constexpr (!PROMOTE) {
        wgmma_wait<0>();
        fence_regs(acc);
        if (prev_stage >= 0) {
          TL_PROBE_INSTANT(Probe::release, prev_stage, it - 1);
          if (tid == 0) mbar_arrive(empty_bar(prev_stage));
        }
      }
      TL_PROBE_BEGIN(Probe::epilogue, probe::kNoStage, t);
      // Tensor and row scales: C = acc * scale_A[row] * scale_B[col] (one of each for tensor).
      if constexpr (SCALING == kScaleTensor) {
        float f;
        if constexpr (SCALE_STAGE) {  // this thread's own copies (scale_stage)
          cp_async_wait<0>();
          f = ld_shared_f32(rs_slot + 8 * tid) * ld_shared_f32(rs_slot + 8 * tid + 4);
          parity ^= 1;
        } else {
          f = SCALE_EARLY ? scale_t : __ldg(scale_A) * __ldg(scale_B);
        }
#pragma unroll
        for (int v = 0; v < NV; ++v) acc[v] *= f;
      } else if constexpr (SCALE_STAGE) {
        // The slot's copies landed (this thread's), and the warpgroup's barrier (the epilogue's 1 + c) publishes
        // everyone's.
        cp_async_wait<0>();
        named_barrier_sync(1 + c, 128);
        const float sa[2] = {ld_shared_f32(rs_slot + 4 * (BN + e0.row)),
                             ld_shared_f32(rs_slot + 4 * (BN + e0.row + ROW_HALF))};
#pragma unroll
        for (int v = 0; v < NV; v += P.acc_pair) {
          const unsigned long long sb = ld_shared_b64(rs_slot + 4 * (e0.col + AT.at[v].col));  // columns col, col + 1
          acc[v] *= sa[AT.at[v].row / ROW_HALF] * __uint_as_float(static_cast<unsigned>(sb));
          acc[v + 1] *= sa[AT.at[v].row / ROW_HALF] * __uint_as_float(static_cast<unsigned>(sb >> 32));
        }
        parity ^= 1;
      } else if constexpr (SCALING == kScaleRow) {
        const float sa[2] = {__ldg(scale_A + min(row0 + e0.row, tile.rows_end - 1)),
                             __ldg(scale_A + min(row0 + e0.row + ROW_HALF, tile.rows_end - 1))};
#pragma unroll
        for (int v = 0; v < NV; v += P.acc_pair) {
          const int col = col0 + e0.col + AT.at[v].col;
          const float* sb = scale_B + static_cast<long long>(tile.group) * N;
          const float sb0 = __ldg(sb + min(col, N - 1)), sb1 = __ldg(sb + min(col + 1, N - 1));
          acc[v] *= sa[AT.at[v].row / ROW_HALF] * sb0;
          acc[v + 1] *= sa[AT.at[v].row / ROW_HALF] * sb1;
        }
      }
      // Rows [row0, row0 + 64) and columns [col0, col0 + BN) of C (gemm_store.cuh), those at or past rows_end
      // dropped: by the tensor map's bounds, or where they are another group's (Tiles::clip_rows()) by direct stores.
      if constexpr (CFG.tma_store) {
        // Whether the consumer's 64 rows lie wholly in the tile's rows: the same in all its lanes. UDESC with clipped
        // rows (gemm.grouped): from redux.sync, so that ptxas sees the branch warp-uniform — a branch it cannot prove
        // so inside the tile loop puts the k loop's descriptors back into vector registers (R2UR before each wgmma).
        bool whole = !Tiles::clip_rows() || row0 + WG_M <= tile.rows_end;
        if constexpr (UDESC && Tiles::clip_rows()) whole = warp_uniform(whole) != 0;
        if (whole) {
          // The TMA-store epilogue store_acc_tile picks: staged swizzled, or plain where C's rows are no whole 64-byte
          // swizzle rows (gemm.fp8's 112 16-bit columns).
          store_acc_tile<CFG>(acc, &tma_c, C, c_base + c * P.c_tile_bytes, c, tid, row0, col0, tile.rows_end, N);
        } else {
          store_acc_tile_direct<CFG>(acc, C, tid, row0, col0, tile.rows_end, N);
        }
      } else {
        store_acc_tile_direct<CFG>(acc, C, tid, row0, col0, tile.rows_end, N);
      }
      TL_PROBE_END(Probe::epilogue, probe::kNoStage, t);
    }
    TL_PROBE_STAMP(t_exit);
    if constexpr (CFG.tma_store) {
      if (tid == 0) tma_store_wait_all();
    }
#if TL_DEVICE_CODE && defined(TL_TIMELINE) && TL_TIMELINE
    const probe::u64 t_exited = __shfl_sync(0xffffffffu, read_clock64(), 0);  // lane 0's clock, after its wait
#endif
    TL_PROBE_BEGIN_AT(Probe::exit, probe::kNoStage, 0, t_exit);
    TL_PROBE_END_AT(Probe::exit, probe::kNoStage, 0, t_exited);
    TL_PROBE_FLUSH();
    if (c == 0 && tid == 0) TL_PROBE_BLOCK_END();
  }
}

}  // namespace tl
