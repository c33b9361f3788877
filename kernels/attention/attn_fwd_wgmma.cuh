// attn.fwd.wgmma: FlashAttention-3-style forward for Hopper — TMA, mbarrier K/V rings, warp specialization, wgmma,
// softmax overlapped with the GEMMs (inside a warpgroup, and across two or three warpgroups by ping-pong).
//
// Same problem as attn.fwd.mma (attn_fwd_mma.cuh): O = softmax(Q K^T / sqrt(D)) V and LSE per query row, Q [total_q,
// heads, D], K [total_k, heads_kv, D], V [total_k, heads_kv, DV], O [total_q, heads, DV] packed by cu_seqlens (dense
// batches: [batch, seq, heads, D]; DV = D but for d_qk != d_v, DeepSeek's MLA prefill as MHA: 192 / 128),
// LSE [batch, heads, seq_q] or [heads, total_q] (VARLEN), GQA kv head = h / (heads / heads_kv), causal masks
// aligned to the bottom-right corner, rows without keys get O = 0 and LSE = -inf.
//
// Work tiles: (query block of BM rows, head, sequence), m_blocks * heads * batch of them (m_blocks for the longest
// sequence; blocks past a shorter one are skipped), numbered query block fastest (reversed when causal: most keys
// first), then head, then sequence; causal with section > 0: heaviest query blocks first across groups of
// `section` (sequence, head) pairs (tile/work_order.hpp). CTA i takes tiles i, i + gridDim.x, ...: one per CTA (a grid of all of them)
// or persistent (a grid of min_blocks CTAs per SM, config min_blocks), where the producer loads the next tile's Q,
// K and V while the consumers still finish the current one and store it. The K/V rings and the barrier phases run on across work tiles.
// DYNAMIC (config schedule): after tile i, a CTA's producer takes the next tile in that order from a counter in
// global memory (`tile_counter`, the launch's own: two launches in flight never share one) whenever it starts one, and passes its number to the consumers through a two-slot ring in shared memory, so CTAs
// that drew light (causal) tiles take more of them: longest-first list scheduling instead of static striding.
// Threads: 1 + C warpgroups (C = BM / 64 consumers: 1, 2, or 3 at BM 192, FlashAttention-3's d 64 tile, where the
// softmax's exp2 per FLOP is double d 128's and a third warpgroup's softmax has two others' GEMMs to hide behind).
//   Warpgroup 0, the producer, gives its registers away (setmaxnreg 24, 40 in the probe build, 32 there beside three
//   consumers); its first warp waits on the rings' empty
//   barriers and its lane 0 issues the TMA loads: Q once per work tile (when all consumers are done with the
//   Q that last used its buffer: the previous work tile's, or with two buffers the one before), then per K/V tile K(it) followed by V(it - 1), the order
//   the consumers use them in. Tiles are walked from the last (the masked ones: sequence edge, causal diagonal)
//   to the first, so only the first iterations pay for masks.
//   Consumer warpgroup c (setmaxnreg 240, 232 in the probe build; 160 of three, in both) owns query rows [c*64, c*64 + 64) of the block; warp w of it rows
//   16w + lane/4 (+8), as the wgmma accumulator lays them out. Per K/V tile (iteration it):
//       wait K(it) and V(it-1) full; [ping-pong: wait our turn]
//       issue S = Q K(it)^T      wgmma SS m64nBNk16 x D/16 (A = Q, B = K, both K-major in smem)
//       issue O += P(it-1) V(it-1)   wgmma RS m64nDVk16 x BN/16 (A = P in registers, B = V N-major: the
//                                    transposed-B descriptor)
//       [ping-pong: hand the tensor cores to the next warpgroup]
//       wait S (wgmma_wait<1>), release K(it); mask (edge tiles only); online softmax on S in place
//       (exp2 with log2(e)/sqrt(D) folded in, row max and sum in registers, quad shuffles; config softmax: a row's
//       max and sum as chains or trees, O's rescale every tile or only once a warp's maximum grew by 2^8)
//       wait P V (wgmma_wait<0>), release V(it-1); rescale O by exp2(m_old - m_new); S -> P (16-bit, registers:
//       the accumulator layout of two n8 column groups is the A-fragment layout of one k16 step)
//   so the softmax of tile it runs while P(it-1) V(it-1) is on the tensor cores (intra-warpgroup overlap), and
//   with PINGPONG the other warpgroups' GEMMs fill the tensor cores during this one's softmax: named barriers
//   1 + c order the GEMM issues of the warpgroups in a fixed cycle 0, 1[, 2], 0, ... (warpgroup 0 first).
//   The epilogue divides O by the row sum and (EPI, config `epilogue`) stores it straight from the accumulators
//   (direct: rows past the sequence are not stored), or stages each warpgroup's 64 rows in shared memory and
//   writes whole rows with 16-byte stores (smem), or stages them and has one thread issue TMA stores of the two
//   64-column halves (tma), which run on while the warpgroup starts its next work tile; the next epilogue first
//   waits until they have read the staging tile. Varlen blocks that reach past their sequence store from the
//   staging tile as `smem` does (a 3-D map would write their extra rows into the next sequence); dense maps clip
//   rows past the sequence. LSE = (m + log2 l) * ln 2.
// Variants (TileLang's attention_sink examples, gpt-oss): SINKS adds a per-head logit sinks[h] (f32) to every row's
// softmax denominator only, l += exp(sink - m) (O is scaled by exp(lse) / (exp(lse) + exp(sink)); LSE includes it);
// WINDOW (causal only) lets row r see keys (r + diag - window, r + diag], and its work tiles start at the tile of
// the block's first visible key: the tiles before the band are never loaded, not masked.
//
// Shared memory (dynamic, 1024-byte aligned: the 128B swizzle atom is 8 rows x 128 bytes; attn_fwd_wgmma_plan.hpp
// lays it out):
//   Q                 QS buffers (config q_stages) x D/64 column halves x [BM rows x 128 B]: with 2, the next work
//                     tile's Q loads while this one's still feeds S = Q K^T
//   K ring            STAGES x D/64 halves x [BN rows x 128 B]
//   V ring            STAGES x DV/64 halves x [BN rows x 128 B]
//   O staging         epilogue smem/tma only: C x DV/64 halves x [64 rows x 128 B], swizzled as Q (the TMA store's
//                     box)
//   mbarriers         q_full[QS], q_empty[QS], k_full[STAGES], k_empty[STAGES], v_full[STAGES], v_empty[STAGES]
// Every half is one TMA box of 64 columns (128 bytes, the SWIZZLE_128B limit) x rows: 16-byte chunk j of row r
// sits at chunk j ^ (r % 8). Q and K feed wgmma as K-major operands (descriptor: SBO = 1024 between 8-row groups,
// k16 step = +32 bytes inside the row, +rows*128 bytes to the next half); V feeds it N-major (LBO = BN*128 between
// the 64-column halves, SBO = 1024 between 8-key groups, k16 step = +2048 bytes).
// Barriers: *_full count 1 (the producer's arrive.expect_tx, completed by the TMA bytes); *_empty count C (one
// elected thread per consumer warpgroup, after its wgmma reading the stage has completed; Q after the work tile's
// last S). The g-th K/V tile of the CTA uses stage g % STAGES with phase parity (g / STAGES) & 1, the r-th Q buffer
// r % QS with parity (r / QS) & 1; the producer waits on the opposite parity of the empty barrier (a fresh barrier counts as having completed
// the phase before phase 0).
// TMA: dense tensors are 4-D maps (dim, heads, seq, batch), so rows past a sequence are zero-filled; varlen ones
// 3-D (dim, heads, total), so rows past a sequence belong to the next one (or are zero past the tensor): such
// keys are masked to -inf (their P is exactly 0 and V's rows are finite, so they add nothing), such query rows
// are computed and never stored.
#pragma once

#include "attention/attn_fwd_wgmma_plan.hpp"
#include "tile/barrier.cuh"
#include "tile/config.hpp"
#include "tile/convert.cuh"
#include "tile/mbarrier.cuh"
#include "tile/probe.hpp"
#include "tile/reduce.hpp"
#include "tile/setmaxnreg.cuh"
#include "tile/smem.cuh"
#include "tile/tma.cuh"
#include "tile/wgmma_ops.cuh"
#include "tile/work_order.hpp"

namespace tl {
namespace attn_wgmma_detail {

// One work tile of the grid-stride loop: query block m_block of head h of sequence b, and the K/V tiles it needs.
// Order (tile/work_order.hpp): query block fastest, then head, then sequence, so CTAs running at the same time
// share a head's K and V in L2; causal grids take the query blocks with the most keys first, and with section > 0
// go heaviest-first across `section` (sequence, head) pairs at a time, which evens out the CTAs' work.
struct AttnWork {
  // K/V tiles [top - n_tiles, top) are visited, from the last: with a sliding window the ones before it are skipped.
  int m_block, h, b, hk, m0, q_start, k_start, seq_q, seq_k, diag, top, n_tiles;
};

// pv_fence: the SM's clock, read as a scheduling fence (volatile, memory clobber), and its value joined to x as an
// exact +0: the low 23 bits as a float are zero or a denormal, and times 0 that is +0 (inside asm, so neither the
// compiler nor ptxas drops the read).
TL_DEVICE_INLINE unsigned pv_fence_clock() {
  unsigned c;
  asm volatile("mov.u32 %0, %%clock;\n" : "=r"(c)::"memory");
  return c;
}
TL_DEVICE_INLINE float pv_fence_join(float x, unsigned clock) {
  float r;
  asm("{\n.reg .b32 z;\nand.b32 z, %2, 0x007fffff;\nfma.rn.f32 %0, z, 0f00000000, %1;\n}\n" : "=f"(r) : "f"(x), "r"(clock));
  return r;
}

template <int BM, int BN, bool CAUSAL, bool WINDOW>
TL_DEVICE_INLINE AttnWork attn_work(int t, int m_blocks, int heads, int heads_kv, int batch, int section, int window,
                                    const int* cu_seqlens_q, const int* cu_seqlens_k) {
  AttnWork w;
  const WorkCoord wc = CAUSAL && section > 0 ? work_sections(t, m_blocks, heads * batch, section)
                                             : work_m_fastest(t, m_blocks);
  w.m_block = CAUSAL ? m_blocks - 1 - wc.m : wc.m;
  w.h = wc.pair % heads;
  w.b = wc.pair / heads;
  w.hk = w.h / (heads / heads_kv);
  w.m0 = w.m_block * BM;
  w.q_start = cu_seqlens_q[w.b];
  w.k_start = cu_seqlens_k[w.b];
  w.seq_q = cu_seqlens_q[w.b + 1] - w.q_start;
  w.seq_k = cu_seqlens_k[w.b + 1] - w.k_start;
  w.diag = w.seq_k - w.seq_q;  // causal: row r sees keys <= r + diag
  const AttnKvTiles kv = attn_kv_tiles(w.m0, BM, BN, w.seq_q, w.seq_k, CAUSAL, WINDOW, window);
  w.top = kv.top;
  w.n_tiles = kv.n;
  return w;
}

}  // namespace attn_wgmma_detail

// Timeline regions (AttnFwdWgmmaProbe): the producer warp marks its empty waits and TMA issues (stage, tile); the
// first warp of each consumer warpgroup its full waits (K, then V: wait_v), its turn waits (ping-pong), its GEMM
// issues, the wait for S (wait_s: the tensor cores' queue, the other warpgroups' GEMMs, plus our S), the softmax, the
// wait for P V, the O rescale and P conversion (rescale_p), and the epilogue.
template <AttnFwdWgmmaConfig CFG>
__global__ void __launch_bounds__((CFG.block_M / 64 + 1) * 128, CFG.min_blocks)
    attn_fwd_wgmma(const __grid_constant__ TmaDescriptor tma_q, const __grid_constant__ TmaDescriptor tma_k,
                   const __grid_constant__ TmaDescriptor tma_v, const __grid_constant__ TmaDescriptor tma_o,
                   unsigned short* __restrict__ O, float* __restrict__ LSE,
                   const int* __restrict__ cu_seqlens_q, const int* __restrict__ cu_seqlens_k, int heads, int heads_kv,
                   int m_blocks, int batch, int section, const float* __restrict__ sinks, int window,
                   int* __restrict__ tile_counter) {
  using namespace attn_wgmma_detail;
  using namespace wgmma_ops;
  using Probe = AttnFwdWgmmaProbe;
  static constexpr AttnFwdWgmmaPlan P = make_plan(CFG);  // static: its tables fold at compile time
  constexpr int D = CFG.dim, DV = CFG.dim_v, BM = CFG.block_M, BN = CFG.block_N, STAGES = CFG.num_stages, QS = CFG.q_stages;
  constexpr bool PINGPONG = CFG.ping_pong, CAUSAL = CFG.causal, BF16 = CFG.bf16, VARLEN = CFG.varlen;
  constexpr bool WINDOW = CFG.window, SINKS = CFG.sinks, DYNAMIC = CFG.dynamic, UDESC = CFG.uniform_desc;
  constexpr bool PV_FENCE = CFG.pv_fence;
  // SOFTMAX (config softmax): TREE reduces a row half's values as binary trees; LAZY also leaves O and the row sums
  // relative to an older row maximum until some row of the warp grows past it by more than kLazyLog2.
  constexpr bool TREE = CFG.softmax != AttnSoftmax::chain, LAZY = CFG.softmax == AttnSoftmax::lazy;
  constexpr float kLazyLog2 = 8.f;
  static_assert(!WINDOW || CAUSAL, "the sliding window is causal's band");
  // O: 0 = direct stores from the accumulators, 1 = staged in smem + 16-byte stores, 2 = staged + TMA stores.
  constexpr int EPI = static_cast<int>(CFG.epilogue);
  constexpr int C = BM / 64;           // consumer warpgroups
  constexpr int NH = D / P.box_cols;   // TMA boxes of 64 columns (128 bytes) in a row of Q or K
  constexpr int NHV = DV / P.box_cols; // ... of V or O
  constexpr int KS = D / 16;           // k16 steps of S = Q K^T
  constexpr int PS = BN / 16;          // k16 steps of O += P V
  const float kNegInf = -__int_as_float(0x7f800000);
  constexpr float kScaleLog2 = P.scale_log2;
  static_assert(D % 64 == 0 && D <= 256 && DV % 64 == 0 && DV <= 256, "head dims of whole 64-column TMA boxes, to 256");
  static_assert(BM == 64 || BM == 128 || BM == 192, "one to three consumer warpgroups of 64 rows");
  static_assert(BN % 16 == 0 && BN <= 256, "BN: whole k16 steps of P V and a wgmma N");
  static_assert(!PINGPONG || C >= 2, "ping-pong needs two or three consumer warpgroups");
  static_assert(EPI >= 0 && EPI <= 2, "epilogue: 0 direct, 1 smem, 2 tma");
  static_assert(QS == 1 || QS == 2, "one or two Q buffers");
  static_assert(KS <= P.kMaxSteps && PS <= P.kMaxSteps && DV / 8 <= P.kMaxSteps, "the plan's step tables");
  static_assert(P.s_values.ok && P.o_values.ok, "a thread's accumulator values lie in two rows");
  // Registers per thread after setmaxnreg: 128 * 24 + 256 * 240 = 64512 = 384 * 168, the whole file at launch; with
  // three consumers 128 * 24 + 384 * 160 = 64512 of 512 * 128. The probe build's marks need more in the producer
  // (spills at 24) and leave the consumers 232; three consumers keep 160 (a producer of 32: 128 * 32 + 384 * 160 is
  // the whole file).
#if defined(TL_TIMELINE) && TL_TIMELINE
  constexpr int kProducerRegs = C == 3 ? 32 : 40, kOneBlockRegs = C == 3 ? 160 : 232;
#else
  constexpr int kProducerRegs = 24, kOneBlockRegs = C == 3 ? 160 : 240;
#endif
  // MIN_BLOCKS > 1 CTAs per SM (config min_blocks) share its file: the consumers get what the producer gives up of
  // their CTA's launch share (the plan's attn_shared_consumer_regs, which the spec refuses configs by).
  constexpr int MIN_BLOCKS = CFG.min_blocks;
  constexpr int kConsumerRegs =
      MIN_BLOCKS == 1 ? kOneBlockRegs : attn_shared_consumer_regs(65536, BM, MIN_BLOCKS, kProducerRegs);
  static_assert(MIN_BLOCKS == 1 || (kConsumerRegs >= 65536 / (MIN_BLOCKS * (C + 1) * 128) / 8 * 8 &&
                                    kConsumerRegs <= 240),
                "setmaxnreg raises the consumers from their launch share, to at most 240");
  // Named barriers: 0 is __syncthreads, 1 + c warpgroup c's turn (ping-pong), kBarEpilogue + c its epilogue's.
  constexpr int kBarEpilogue = 1 + (C > 2 ? C : 2);

  extern __shared__ unsigned char smem_raw[];
  const unsigned base = smem_align<1024>(smem_raw);
  auto q_smem = [&](int r) { return base + P.q_offset + (r % QS) * P.q_bytes; };  // the r-th work tile's Q
  const unsigned k_smem = base + P.k_offset;
  const unsigned v_smem = base + P.v_offset;
  const unsigned o_smem = base + P.o_offset;  // EPI != 0: C warpgroup tiles of smem_O
  // 8-byte mbarriers: the r-th Q buffer's, stage s's.
  auto q_full = [&](int r) { return base + P.bar_q_full + 8u * (r % QS); };
  auto q_empty = [&](int r) { return base + P.bar_q_empty + 8u * (r % QS); };
  auto k_full = [&](int s) { return base + P.bar_k_full + 8u * s; };
  auto k_empty = [&](int s) { return base + P.bar_k_empty + 8u * s; };
  auto v_full = [&](int s) { return base + P.bar_v_full + 8u * s; };
  auto v_empty = [&](int s) { return base + P.bar_v_empty + 8u * s; };
  // DYNAMIC: the r-th work tile number's slot and barriers (two slots).
  auto tile_full = [&](int r) { return base + P.bar_tile_full + 8u * (r % 2); };
  auto tile_empty = [&](int r) { return base + P.bar_tile_empty + 8u * (r % 2); };
  auto tile_slot = [&](int r) { return base + P.tile_slots + 4u * (r % 2); };

  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int r = 0; r < QS; ++r) {
      mbar_init(q_full(r), 1);
      mbar_init(q_empty(r), C);
    }
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(k_full(s), 1);
      mbar_init(k_empty(s), C);
      mbar_init(v_full(s), 1);
      mbar_init(v_empty(s), C);
    }
    if constexpr (DYNAMIC)
      for (int r = 0; r < 2; ++r) {
        mbar_init(tile_full(r), 1);
        mbar_init(tile_empty(r), 128 * C);  // every consumer thread, once it has read the slot
      }
    fence_mbarrier_init();
    TL_PROBE_BLOCK_BEGIN();
  }
  __syncthreads();

  const int work_tiles = m_blocks * heads * batch;
  if (wg == 0) {
    // [SECTION] producer
    setmaxnreg_dec<kProducerRegs>();
    if (tid >= 32) return;
    TL_PROBE_WARP_INIT();
    int kv_it = 0, q_round = 0;  // K/V tiles and Q tiles loaded so far: ring positions and barrier phases
    // DYNAMIC: after its first tile (blockIdx.x) a CTA takes gridDim.x + the counter's next value, until that is past
    // the tiles, and hands each number (the last one too: the consumers' stop) to the consumers. Every CTA ends on
    // exactly one number past the tiles, so the grid's last fetch (value max(0, T - G) + G - 1) knows all are done
    // and sets the counter back to 0 for the next launch (it is zero at launch: a scratch tensor, zeroed when made).
    int tile_round = 0;
    auto publish = [&](int t) {
      const int r = tile_round++;
      mbar_wait(tile_empty(r), ((r / 2) & 1) ^ 1);
      if (tid == 0) {
        st_shared_b32(tile_slot(r), static_cast<unsigned>(t));
        mbar_arrive(tile_full(r));
      }
    };
    auto fetch = [&]() {
      const int grid = static_cast<int>(gridDim.x);
      int v = 0;
      if constexpr (DYNAMIC) {  // (static schedules get a null tile_counter)
        if (tid == 0) {
          v = atomicAdd(tile_counter, 1);
          if (v == max(0, work_tiles - grid) + grid - 1) atomicExch(tile_counter, 0);
        }
      }
      return grid + __shfl_sync(0xffffffffu, v, 0);
    };
    auto first = [&]() {
      int t = blockIdx.x;
      if constexpr (DYNAMIC) {
        if (t >= work_tiles) t = fetch();
        publish(t);
      }
      return t;
    };
    auto advance = [&](int& t) {
      if constexpr (DYNAMIC) {
        t = fetch();
        publish(t);
      } else {
        t += gridDim.x;
      }
    };
    for (int t = first(); t < work_tiles; advance(t)) {
      const AttnWork w = attn_work<BM, BN, CAUSAL, WINDOW>(t, m_blocks, heads, heads_kv, batch, section, window,
                                                          cu_seqlens_q, cu_seqlens_k);
      if (w.m0 >= w.seq_q || w.n_tiles == 0) continue;
      // One tile (BM or BN rows from `row` of the sequence) of a tensor: boxes of 64 columns, box_bytes apart.
      auto load = [&](const TmaDescriptor* map, int boxes, unsigned dst, unsigned box_bytes, unsigned bar, int head,
                      int start, int row) {
#pragma unroll
        for (int half = 0; half < boxes; ++half) {
          if constexpr (VARLEN)
            tma_load(dst + half * box_bytes, map, bar, half * P.box_cols, head, start + row);
          else
            tma_load(dst + half * box_bytes, map, bar, half * P.box_cols, head, row, w.b);
        }
      };
      // Q, once all consumers have finished the previous work tile's last S = Q K^T.
      mbar_wait(q_empty(q_round), ((q_round / QS) & 1) ^ 1);
      if (tid == 0) {
        mbar_expect_tx(q_full(q_round), P.q_bytes);
        load(&tma_q, NH, q_smem(q_round), P.q_box, q_full(q_round), w.h, w.q_start, w.m0);
      }
      ++q_round;
      // The g-th K (or V) tile of the CTA, sequence tile `tile`, into its ring (stage 0's smem and barriers given):
      // wait until all consumers have released the stage, then one TMA transaction of `bytes` (`boxes` boxes).
      auto load_kv = [&](const TmaDescriptor* map, int boxes, unsigned bytes, unsigned ring, unsigned full0,
                         unsigned empty0, int g, int tile) {
        const int s = g % STAGES;
        TL_PROBE_BEGIN(Probe::wait_empty, s, tile);
        mbar_wait(empty0 + 8u * s, ((g / STAGES) & 1) ^ 1);
        TL_PROBE_END(Probe::wait_empty, s, tile);
        TL_PROBE_BEGIN(Probe::tma_issue, s, tile);
        if (tid == 0) {
          mbar_expect_tx(full0 + 8u * s, bytes);
          load(map, boxes, ring + s * bytes, P.kv_box, full0 + 8u * s, w.hk, w.k_start, tile * BN);
        }
        TL_PROBE_END(Probe::tma_issue, s, tile);
      };
      // K of tile top - 1 - it, then V of the previous iteration's tile: the order the consumers use them in.
      for (int it = 0; it <= w.n_tiles; ++it) {
        if (it < w.n_tiles) load_kv(&tma_k, NH, P.k_bytes, k_smem, k_full(0), k_empty(0), kv_it + it, w.top - 1 - it);
        if (it > 0) load_kv(&tma_v, NHV, P.v_bytes, v_smem, v_full(0), v_empty(0), kv_it + it - 1, w.top - it);
      }
      kv_it += w.n_tiles;
    }
    TL_PROBE_FLUSH();
    return;
  }

  // [SECTION] consumers
  setmaxnreg_inc<kConsumerRegs>();
  const int c = wg - 1;
  // This thread's (row, col) in its warpgroup's 64-row accumulators (S and O), value 0; value v at + at[v].
  const TileCoord lc = P.acc_S(tid, 0);
  TL_PROBE_WARP_INIT_IF(tid / 32 == 0);
  // Ping-pong: warpgroup c issues its GEMMs after barrier 1 + c, then hands the turn to the next one, c + 1 (the
  // last to 0), so the warpgroups issue in a fixed cycle (256 threads each: one warpgroup syncs, the one before it
  // arrives). A warpgroup cannot take its next turn before every other has taken one, so each barrier has at most
  // one arrival pending.
  auto wait_turn = [&]() {
    if constexpr (PINGPONG) named_barrier_sync(1 + c, 256);
  };
  auto pass_turn = [&]() {
    // (1 - c for two: the same instructions as before three existed)
    if constexpr (PINGPONG) named_barrier_arrive(1 + (C == 2 ? 1 - c : (c + 1) % C), 256);
  };
  if (PINGPONG && c == C - 1) pass_turn();  // warpgroup 0 goes first

  constexpr int WG_Q = P.byte(P.smem_Q, 64, 0);  // a consumer warpgroup's 64 rows: whole 8-row swizzle groups
  float o[DV / 2];
  float s[BN / 2];
  unsigned p[BN / 4];
  unsigned q_wg = 0;  // this warpgroup's 64 rows of the work tile's Q buffer
  // UDESC (config uniform_desc): the descriptors are built from values ptxas can prove warp-uniform, the results of
  // redux.sync (warp_uniform): this warpgroup's Q address and the descriptors' high word once per work tile, the K/V
  // ring counter once per K/V tile. ptxas then keeps them in uniform registers and builds each k16 step's descriptor
  // there (a uniform add of a constant; the tile's base once per tile), where the default computes every descriptor
  // from its address per thread and moves both words over by R2UR before each wgmma (d 128: 139 -> 56 instructions
  // from the consumer's WARPGROUP.ARRIVE to its turn's hand-over, 706 -> 624 in the K/V loop; docs/perf.md).
  // The words are wgmma_ops.cuh's sw128_desc_lo / kSw128DescHi (leading byte offset 16 bytes for K-major Q and K, one
  // 64-column box for N-major V).
  unsigned q_lo = 0, hi_u = kSw128DescHi;  // UDESC: Q's low word at k16 step 0; the high word, warp-uniform
  auto uniform_if = [](int x) { return UDESC ? static_cast<int>(warp_uniform(static_cast<unsigned>(x))) : x; };
  auto issue_qk = [&](int stage) {
    const unsigned k_tile = k_smem + stage * P.k_bytes;
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      if constexpr (UDESC) {
        const unsigned k_lo = sw128_desc_lo(k_tile, 16);
        WgmmaSS<BN, BF16, 0>::run(s, desc_of(q_lo + (P.q_k16[kk] >> 4), hi_u), desc_of(k_lo + (P.k_k16[kk] >> 4), hi_u),
                                  kk > 0);
      } else {
        const unsigned long long da = smem_desc_sw128(q_wg + P.q_k16[kk]);
        const unsigned long long db = smem_desc_sw128(k_tile + P.k_k16[kk]);
        WgmmaSS<BN, BF16, 0>::run(s, da, db, kk > 0);  // B = K, K-major
      }
    }
  };
  // The work tile's first P V overwrites O (first = true) instead of adding to it: O needs no zeroing, so no
  // register copies (which would make ptxas fence and serialize the wgmma) where the control paths meet.
  auto issue_pv = [&](int stage, bool first) {
    const unsigned v_tile = v_smem + stage * P.v_bytes;
#pragma unroll
    for (int kt = 0; kt < PS; ++kt) {
      if constexpr (UDESC)
        WgmmaRS<DV, BF16, 1>::run(o, &p[4 * kt], desc_of(sw128_desc_lo(v_tile, P.v_lbo) + (P.v_k16[kt] >> 4), hi_u),
                                  kt > 0 || !first);
      else
        WgmmaRS<DV, BF16, 1>::run(o, &p[4 * kt], smem_desc_sw128_mn(v_tile + P.v_k16[kt], P.v_lbo), kt > 0 || !first);
    }
  };
  // P = S in registers (a pair of columns per 32-bit register): S's accumulator layout is P's A-fragment layout.
  auto to_p = [&]() {
#pragma unroll
    for (int v = 0; v < BN / 2; v += 2) p[P.p_reg[v]] = pack2<BF16>(s[v], s[v + 1]);
  };

  int kv_it = 0, q_round = 0, tile_round = 0;
  // DYNAMIC: the producer's r-th work tile number (every thread reads it, then releases the slot).
  auto take = [&]() {
    const int r = tile_round++;
    mbar_wait(tile_full(r), (r / 2) & 1);
    const int t = static_cast<int>(ld_shared_b32(tile_slot(r)));
    mbar_arrive(tile_empty(r));
    return t;
  };
  auto first = [&]() {
    if constexpr (DYNAMIC) return take();
    else return static_cast<int>(blockIdx.x);
  };
  auto advance = [&](int& t) {
    if constexpr (DYNAMIC) t = take();
    else t += gridDim.x;
  };
  for (int t = first(); t < work_tiles; advance(t)) {
    const AttnWork w = attn_work<BM, BN, CAUSAL, WINDOW>(t, m_blocks, heads, heads_kv, batch, section, window,
                                                        cu_seqlens_q, cu_seqlens_k);
    if (w.m0 >= w.seq_q) continue;
    const int row_base = w.m0 + c * 64 + lc.row;  // the thread's first row in the sequence
    const int n_tiles = w.n_tiles, top = w.top;
    float row_max[2] = {kNegInf, kNegInf}, row_sum[2] = {0.f, 0.f};

    // Keys past the sequence, causal past the diagonal, and with a window at or before row + diag - window get
    // -inf; only tiles that reach them pay for the mask (the window's lower edge: its first tiles of the block).
    auto mask = [&](int tile) {
      const int n0 = tile * BN, wg_row0 = w.m0 + c * 64;
      const bool edge = n0 + BN > w.seq_k || (CAUSAL && n0 + BN - 1 > wg_row0 + w.diag) ||
                        (WINDOW && n0 <= wg_row0 + 63 + w.diag - window);
      if (!edge) return;
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) {
        const int col = n0 + lc.col + P.s_values.at[i].col;
        const int row = row_base + P.s_values.at[i].row;
        if (col >= w.seq_k || (CAUSAL && col > row + w.diag) || (WINDOW && col <= row + w.diag - window)) s[i] = kNegInf;
      }
    };
    // TREE (config softmax tree / lazy): the online softmax below with a row half's BN / 4 values reduced as binary
    // trees, both halves side by side: the maximum (depth log2(BN / 8) + 1, where the chain's BN / 8 + 1 FMNMX stand in
    // source order ahead of the first exp2) and the sum (as many FADD, no chain). LAZY: the row maxima move only when
    // one of the warp's rows grew by more than kLazyLog2 (a warp vote); otherwise alpha is 1 and the tile's exp2 values
    // are at most 2^kLazyLog2 (bf16 P and f32 O and sums hold that), and the caller skips O's rescale.
    auto softmax_tree = [&](float (&alpha)[2]) {
      constexpr int NP = BN / 8;  // pairs of a row half's values
      float r[2][NP];
#pragma unroll
      for (int j = 0; j < NP; ++j)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh)
          r[hh][j] = fmaxf(s[P.s_values.row_value[hh][2 * j]], s[P.s_values.row_value[hh][2 * j + 1]]);
#pragma unroll
      for (int d = 1; d < NP; d *= 2)
#pragma unroll
        for (int j = 0; j + d < NP; j += 2 * d)
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) r[hh][j] = fmaxf(r[hh][j], r[hh][j + d]);
      float mx[2], m_use[2];
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) mx[hh] = fmaxf(row_max[hh], quad_max(r[hh][0]) * kScaleLog2);
      bool moved = true;
      if constexpr (LAZY)
        moved = __any_sync(0xffffffffu, mx[0] > row_max[0] + kLazyLog2 || mx[1] > row_max[1] + kLazyLog2);
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const float m = moved ? mx[hh] : row_max[hh];
        m_use[hh] = m == kNegInf ? 0.f : m;  // (as below: a row with no key yet)
        alpha[hh] = moved ? exp2_approx(row_max[hh] - m_use[hh]) : 1.f;
        row_max[hh] = m;
      }
#pragma unroll
      for (int j = 0; j < NP; ++j)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int v0 = P.s_values.row_value[hh][2 * j], v1 = P.s_values.row_value[hh][2 * j + 1];
          s[v0] = exp2_approx(fmaf(s[v0], kScaleLog2, -m_use[hh]));
          s[v1] = exp2_approx(fmaf(s[v1], kScaleLog2, -m_use[hh]));
          r[hh][j] = s[v0] + s[v1];
        }
#pragma unroll
      for (int d = 1; d < NP; d *= 2)
#pragma unroll
        for (int j = 0; j + d < NP; j += 2 * d)
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) r[hh][j] += r[hh][j + d];
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) row_sum[hh] = row_sum[hh] * alpha[hh] + r[hh][0];  // the quad is summed at the end
      return moved;
    };
    // Online softmax on S in place: S becomes exp2(S * scale - m_new); returns the rescale factors of O, and whether
    // O needs them (LAZY: false when the warp's maxima stayed; else true).
    auto softmax = [&](float (&alpha)[2]) {
      if constexpr (TREE) return softmax_tree(alpha);
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        float mx = kNegInf;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
          mx = fmaxf(mx, fmaxf(s[P.s_values.row_value[hh][2 * j]], s[P.s_values.row_value[hh][2 * j + 1]]));
        mx = fmaxf(row_max[hh], quad_max(mx) * kScaleLog2);
        // A row whose keys are all masked so far keeps m = -inf: subtract 0 then, so exp2 gives 0, not NaN.
        const float m_use = mx == kNegInf ? 0.f : mx;
        alpha[hh] = exp2_approx(row_max[hh] - m_use);
        row_max[hh] = mx;
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int v0 = P.s_values.row_value[hh][2 * j], v1 = P.s_values.row_value[hh][2 * j + 1];
          s[v0] = exp2_approx(fmaf(s[v0], kScaleLog2, -m_use));
          s[v1] = exp2_approx(fmaf(s[v1], kScaleLog2, -m_use));
          sum += s[v0] + s[v1];
        }
        row_sum[hh] = row_sum[hh] * alpha[hh] + sum;  // per-thread partial; the quad is summed at the end
      }
      return true;
    };

    // Three warpgroups, causal: one whose rows all lie past the sequence (in the last query block, which causal
    // visits first with the most keys: 192 rows rarely divide the length) issues no GEMMs, so the tensor cores go to
    // the others. It still releases each Q, K and V buffer once it is full and takes its turns, one per GEMM issue
    // of the others, so the rings' counts and the turn cycle hold; its row sums stay 0, so it stages zeros, which no
    // store writes out (rows past the sequence). Measured on the H100 (docs/perf.md): 2-3% faster causal, 6-7%
    // slower not causal, so there (and with two warpgroups) the code stays as it was. (Advancing the two counters
    // once after both paths, which keeps them in uniform registers, measured 3% slower than this.)
    const bool idle = C == 3 && CAUSAL && w.m0 + c * 64 >= w.seq_q;
    if (idle && n_tiles > 0) {
      const int qr = q_round++;
      mbar_wait(q_full(qr), (qr / QS) & 1);
      if (tid == 0) mbar_arrive(q_empty(qr));
      for (int it = 0; it <= n_tiles; ++it) {
        const int g = kv_it + it;
        if (it < n_tiles) mbar_wait(k_full(g % STAGES), (g / STAGES) & 1);
        if (it > 0) mbar_wait(v_full((g - 1) % STAGES), ((g - 1) / STAGES) & 1);
        wait_turn();
        pass_turn();
        if (tid == 0 && it < n_tiles) mbar_arrive(k_empty(g % STAGES));
        if (tid == 0 && it > 0) mbar_arrive(v_empty((g - 1) % STAGES));
      }
      kv_it += n_tiles;
    }

    if (n_tiles > 0 && !idle) {
      const int qr = q_round++;
      q_wg = q_smem(qr) + c * WG_Q;
      if constexpr (UDESC) {
        q_lo = warp_uniform(sw128_desc_lo(q_wg, 16));
        hi_u = warp_uniform(kSw128DescHi);  // (an opaque copy: as a constant, ptxas moves it again before each wgmma)
      }
      mbar_wait(q_full(qr), (qr / QS) & 1);
      // Iteration 0: S of the last tile alone.
      {
        const int st = uniform_if(kv_it) % STAGES, tile = top - 1;
        TL_PROBE_BEGIN(Probe::wait_full, st, tile);
        mbar_wait(k_full(st), (kv_it / STAGES) & 1);
        TL_PROBE_END(Probe::wait_full, st, tile);
        TL_PROBE_BEGIN(Probe::wait_turn, st, tile);
        wait_turn();
        TL_PROBE_END(Probe::wait_turn, st, tile);
        TL_PROBE_BEGIN(Probe::gemm_issue, st, tile);
        wgmma_fence();
        issue_qk(st);
        wgmma_commit();
        pass_turn();
        TL_PROBE_END(Probe::gemm_issue, st, tile);
        wgmma_wait<0>();
        fence_regs(s);
        if (tid == 0) {
          mbar_arrive(k_empty(st));
          if (n_tiles == 1) mbar_arrive(q_empty(qr));  // the work tile's last S: Q may be refilled
        }
        TL_PROBE_BEGIN(Probe::softmax, st, tile);
        mask(tile);
        float alpha[2];
        softmax(alpha);  // O is still 0: nothing to rescale
        to_p();
        TL_PROBE_END(Probe::softmax, st, tile);
      }

      for (int it = 1; it < n_tiles; ++it) {
        const int g = uniform_if(kv_it + it), st = g % STAGES, sp = (g - 1) % STAGES, tile = top - 1 - it;
        TL_PROBE_BEGIN(Probe::wait_full, st, tile);
        mbar_wait(k_full(st), (g / STAGES) & 1);
        TL_PROBE_END(Probe::wait_full, st, tile);
        // V(it - 1) is waited for before the fence, not between the two GEMMs: a wait loop between wgmma_fence and
        // a wgmma reading registers makes ptxas insert its own fence on a divergent path and serialize every wgmma.
        TL_PROBE_BEGIN(Probe::wait_v, sp, tile + 1);
        mbar_wait(v_full(sp), ((g - 1) / STAGES) & 1);
        TL_PROBE_END(Probe::wait_v, sp, tile + 1);
        TL_PROBE_BEGIN(Probe::wait_turn, st, tile);
        wait_turn();
        TL_PROBE_END(Probe::wait_turn, st, tile);
        TL_PROBE_BEGIN(Probe::gemm_issue, st, tile);
        fence_regs(o);
        fence_regs(p);
        wgmma_fence();  // P and the rescaled O were written by these threads: order them before the wgmma reads
        issue_qk(st);
        wgmma_commit();
        issue_pv(sp, it == 1);
        wgmma_commit();
        pass_turn();
        TL_PROBE_END(Probe::gemm_issue, st, tile);
        TL_PROBE_BEGIN(Probe::wait_s, st, tile);
        wgmma_wait<1>();  // S is done; P V may still run
        fence_regs(s);
        TL_PROBE_END(Probe::wait_s, st, tile);
        if (tid == 0) {
          mbar_arrive(k_empty(st));
          if (it == n_tiles - 1) mbar_arrive(q_empty(qr));
        }
        TL_PROBE_BEGIN(Probe::softmax, st, tile);
        mask(tile);
        float alpha[2];
        const bool rescale = softmax(alpha);
        TL_PROBE_END(Probe::softmax, st, tile);
        TL_PROBE_BEGIN(Probe::wait_pv, sp, tile + 1);
        // PV_FENCE (config pv_fence): ptxas otherwise puts this wait at the top of the softmax's block (every
        // build; docs/perf.md), so the softmax never overlaps this warpgroup's own P V. A clock read after the
        // softmax holds the wait behind it; its value must be used, or ptxas drops it: it joins alpha as an exact
        // +0 (a denormal's bits times 0) after the wait, out of the compiler's reach (asm).
        unsigned pv_clock = 0;
        if constexpr (PV_FENCE) pv_clock = pv_fence_clock();
        wgmma_wait<0>();
        fence_regs(o);
        fence_regs(p);
        if constexpr (PV_FENCE) alpha[0] = pv_fence_join(alpha[0], pv_clock), alpha[1] = pv_fence_join(alpha[1], pv_clock);
        if (tid == 0) mbar_arrive(v_empty(sp));
        TL_PROBE_END(Probe::wait_pv, sp, tile + 1);
        TL_PROBE_BEGIN(Probe::rescale_p, sp, tile);
        // LAZY: P first, so its conversions stay beside the exp2s rather than behind the branch.
        if constexpr (LAZY) to_p();
        if (!LAZY || rescale) {
#pragma unroll
          for (int j = 0; j < DV / 8; ++j)
#pragma unroll
            for (int hh = 0; hh < 2; ++hh)
              o[P.o_values.row_value[hh][2 * j]] *= alpha[hh], o[P.o_values.row_value[hh][2 * j + 1]] *= alpha[hh];
        }
        if constexpr (!LAZY) to_p();
        TL_PROBE_END(Probe::rescale_p, sp, tile);
      }

      // The first tile's P V.
      const int gl = uniform_if(kv_it + n_tiles - 1), sl = gl % STAGES;
      mbar_wait(v_full(sl), (gl / STAGES) & 1);
      TL_PROBE_BEGIN(Probe::wait_turn, sl, top - n_tiles);
      wait_turn();
      TL_PROBE_END(Probe::wait_turn, sl, top - n_tiles);
      TL_PROBE_BEGIN(Probe::gemm_issue, sl, top - n_tiles);
      fence_regs(o);
      fence_regs(p);
      wgmma_fence();
      issue_pv(sl, n_tiles == 1);
      wgmma_commit();
      pass_turn();
      TL_PROBE_END(Probe::gemm_issue, sl, top - n_tiles);
      TL_PROBE_BEGIN(Probe::wait_pv, sl, top - n_tiles);
      wgmma_wait<0>();
      fence_regs(o);
      if (tid == 0) mbar_arrive(v_empty(sl));
      TL_PROBE_END(Probe::wait_pv, sl, top - n_tiles);
      kv_it += n_tiles;
    }

    // [SECTION] epilogue
    TL_PROBE_BEGIN(Probe::epilogue, probe::kNoStage, t);
    // This warpgroup's staging tile (smem_O): NHV boxes of [64 rows x 128 B]; 16-byte chunk j of row r in box j / 8
    // at position (j % 8) ^ (r % 8), the TMA store's 128-byte swizzle. The 8 rows a warp writes at once hit 8
    // different positions (no bank conflicts), and so do 8 threads reading one row's 8 chunks of a box.
    const unsigned o_wg = o_smem + c * P.o_bytes;
    if constexpr (EPI != 0) {
      // The staging tile is free once the previous epilogue's TMA stores have read it (tma) and every thread of
      // this warpgroup has read it (smem; also tma's varlen edge blocks).
      if constexpr (EPI == 2) {
        if (tid == 0) tma_store_wait_read();
      }
      named_barrier_sync(kBarEpilogue + c, 128);
    }
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const TileCoord x = P.o_values.at[P.o_values.row_value[hh][0]];  // the thread's first value in row half hh
      const int row = row_base + x.row;
      const float lk = quad_sum(row_sum[hh]);
      const bool keys = lk > 0.f;
      // The softmax denominator l = lk 2^m, with the sink's 2^(sink log2 e) added (SINKS): both relative to the
      // larger exponent mm, O scaled by 2^(m - mm) / l.
      float mm = row_max[hh], l = lk, inv = keys ? 1.f / lk : 0.f;
      if constexpr (SINKS) {
        const float sl = sinks[w.h] * 1.4426950408889634f;
        mm = keys ? fmaxf(row_max[hh], sl) : sl;
        const float o_scale = keys ? exp2_approx(row_max[hh] - mm) : 0.f;
        l = lk * o_scale + exp2_approx(sl - mm);
        inv = o_scale / l;
      }
      // Without keys O was never written: store zeros, not 0 times whatever the registers hold.
      // The pair of columns 8 j + x.col of the row: whole 16-byte chunks apart, each chunk's bits XORed into the
      // row's offset in the tile, the box's added.
      if constexpr (EPI != 0) {
        const unsigned o_row = P.byte(P.smem_O, lc.row + x.row, lc.col + x.col);
#pragma unroll
        for (int j = 0; j < DV / 8; ++j) {
          const int v0 = P.o_values.row_value[hh][2 * j], v1 = P.o_values.row_value[hh][2 * j + 1];
          const unsigned v = keys ? pack2<BF16>(o[v0] * inv, o[v1] * inv) : 0u;
          st_shared_b32(o_wg + (o_row ^ P.o_chunk8[j]) + P.o_box8[j], v);
        }
      } else if (row < w.seq_q) {
        unsigned short* dst = O + ((static_cast<long long>(w.q_start) + row) * heads + w.h) * DV + lc.col + x.col;
#pragma unroll
        for (int j = 0; j < DV / 8; ++j) {
          const int v0 = P.o_values.row_value[hh][2 * j], v1 = P.o_values.row_value[hh][2 * j + 1];
          *reinterpret_cast<unsigned*>(dst + 8 * j) = keys ? pack2<BF16>(o[v0] * inv, o[v1] * inv) : 0u;
        }
      }
      if (row < w.seq_q && lc.col == 0)
        LSE[VARLEN ? static_cast<long long>(w.h) * cu_seqlens_q[batch] + w.q_start + row
                   : (static_cast<long long>(w.b) * heads + w.h) * w.seq_q + row] =
            l > 0.f ? (mm + __log2f(l)) * 0.6931471805599453f : kNegInf;
    }
    if constexpr (EPI != 0) {
      const int r0 = w.m0 + c * 64;  // the warpgroup's first row in the sequence
      if constexpr (EPI == 2) fence_proxy_async_smem();  // our st.shared, seen by the TMA engine
      named_barrier_sync(kBarEpilogue + c, 128);
      if (EPI == 2 && (!VARLEN || r0 + 64 <= w.seq_q)) {
        if (tid == 0) {
#pragma unroll
          for (int half = 0; half < NHV; ++half) {
            if constexpr (VARLEN)
              tma_store(&tma_o, o_wg + half * P.o_box, half * P.box_cols, w.h, w.q_start + r0);
            else
              tma_store(&tma_o, o_wg + half * P.o_box, half * P.box_cols, w.h, r0, w.b);
          }
          tma_store_commit();
        }
      } else {
        // Whole rows out: thread tid moves chunk tid % CH of rows tid / CH + k * (128 / CH), 16 bytes each, so a
        // warp writes 512 contiguous bytes of O per store (rows past the sequence are not stored). Where CH does not
        // divide 128 (dim_v 192), or RPP rows are not whole 8-row swizzle groups (dim_v 256: 4 rows, whose step
        // would change each row's XOR), chunk i = tid + 128 k of the tile, its address from the layout each time.
        constexpr int CH = DV / 8, RPP = 128 / CH;
        auto store_chunk = [&](int r, int ch, uint4 x) {
          if (r0 + r < w.seq_q)
            *reinterpret_cast<uint4*>(O + ((static_cast<long long>(w.q_start) + r0 + r) * heads + w.h) * DV + ch * 8) = x;
        };
        if constexpr (128 % CH == 0 && RPP % 8 == 0) {
          constexpr int STEP = P.byte(P.smem_O, RPP, 0);  // RPP rows: whole 8-row swizzle groups
          const unsigned o_thread = o_wg + P.byte(P.smem_O, tid / CH, 8 * (tid % CH));
#pragma unroll
          for (int k = 0; k < 64 / RPP; ++k) store_chunk(k * RPP + tid / CH, tid % CH, ld_shared_v4_b32(o_thread + k * STEP));
        } else {
#pragma unroll
          for (int i = tid; i < 64 * CH; i += 128)
            store_chunk(i / CH, i % CH, ld_shared_v4_b32(o_wg + P.byte(P.smem_O, i / CH, 8 * (i % CH))));
        }
      }
    }
    TL_PROBE_END(Probe::epilogue, probe::kNoStage, t);
  }
  // The last warpgroup passed the turn once more than warpgroup 0 took it: take it, so no arrival is left pending.
  if (PINGPONG && c == 0) wait_turn();
  // Shared memory must outlive the TMA stores' reads of it.
  if constexpr (EPI == 2) {
    if (tid == 0) tma_store_wait_read();
  }
  TL_PROBE_FLUSH();
  if (c == 0 && tid == 0) TL_PROBE_BLOCK_END();
}

}  // namespace tl
