// attn.bwd.wgmma: FlashAttention-3-style backward for Hopper — a pre-pass summing D = rowsum(dO * O), TMA, an mbarrier
// ring of Q/dO tiles fed by a producer warp, row warps staging D and the LSE once per tile, two consumer warpgroups
// with setmaxnreg, wgmma with P^T and dS^T kept in registers.
//
// Same problem and arguments as attn.bwd.mma (attn_bwd_mma.cuh): dQ, dK, dV from Q, K, V, O, dO and the forward's
// LSE; dense tensors [batch, seq, heads, dim] reached through 3-D tensor maps (dim, heads, rows) over the packed rows
// (varlen packs the sequences by cu_seqlens; dense sequence b starts at row b * seq), so rows past a sequence belong
// to the next one or lie past the tensor (zero-filled): such keys get P = 0 by the mask, such query rows by an LSE
// of +inf, so they add nothing and are never stored.
//
// With d_pass (the default) a launch of its own before the main one sums D of every query row into d_rows
// (attn_bwd_row_dots: reading O and dO once, instead of O once per key block).
//
// Work: CTA (key block kb of block_N = 128 keys, kv head, sequence) in grid order (causal with `section`: longest
// walks first across groups of pairs), 3 warpgroups. Warpgroup 0 (setmaxnreg 40), the producer: its warp 0 (lane 0
// issuing) loads K and V once, then for each query tile of the walk (every tile from the causal first
// one, of each query head of the GQA group in turn) Q and dO (without d_pass also O) into the next of num_stages
// buffers once both consumers and the row warps have released it (mbarriers full/empty, count 1 / 2 + 64). Its warps
// 2 and 3, the row warps, put D (d_pass's, loaded with the LSE before the stage is free; else summed from the stage's
// O and dO) and LSE * log2(e) of each stage's rows once into the stage's row values (mbarrier rows_full, count 64),
// which both consumer warpgroups read: summing all rows themselves, each read O and dO once more per tile beside its
// GEMMs (about a fifth of a tile's time in the timeline, docs/perf.md). Consumer warpgroup w
// (setmaxnreg 232) owns keys 64 w .. 64 w + 63 and their dK, dV, accumulated in registers over the whole walk. Per
// query tile:
//   issue S^T = K_w Q^T and dP^T = V_w dO^T (wgmma SS, keys x queries, K-major operands as TMA wrote them);
//   P^T = exp2(S^T scale log2(e) - LSE) (0 where masked), dS^T = P^T (dP^T - D), each packed to 16-bit A registers
//   (the accumulator of two n8 column groups is one k16 step's A fragment), dS also stored query-contiguous to
//   shared memory;
//   issue dV += P^T dO and dK += dS^T Q (wgmma RS; dO and Q as N-major B: their (dim, rows) view);
//   once both warpgroups' dS is in shared memory (named barrier 1), dQ_part = dS K for the warpgroup's half of the
//   tile (wgmma SS, A M-major: imm-trans-a), staged f32 in shared memory (once the dQ writer has taken the last
//   tile's: mbarrier dq_empty; then dq_full); the stage is released.
// The dQ writer, warp 1 of warpgroup 0, adds each staged tile into dq_accum with one bulk reduce (cp.reduce.async.bulk
// .add.f32: the copy engine does the f32 adds, no atomics from the consumers), the tile stored contiguously in the
// staging order (plan dq_chunk). A counter per (sequence, head, query tile) counts the key blocks that have added
// their part (after their reduce completed); the key block that completes a tile converts it to 16-bit dQ (times
// scale) and leaves accumulator and counter zero for the next launch, as attn.bwd.mma's last key block does. The
// writer lists such tiles (dq_defer, up to defer_tiles: a block that finishes a head's walk last can complete all of
// its walk's) and the consumers convert them after their walk, each thread its own chunks; a tile past the list, or
// every tile without dq_defer, the writer converts at once from the staging buffer (one bulk copy of the f32 tile),
// the consumers waiting for that buffer meanwhile (docs/perf.md: 11-23 us per tile on one warp). The epilogue stores
// dK (times scale) and dV straight from the accumulators.
//
// With dq_alt the warpgroups take turns instead (cuDNN's schedule): once its dV, dK GEMMs are done, warpgroup it % 2
// computes tile it's whole dQ over all 128 keys and stages it, while the other goes on to the next tile; dS has two
// buffers (tile it % 2), the dS-written barrier alternates between ids 1 and 4 by tile, and each warpgroup waits for
// the staging buffer on its own mbarrier (dq_empty, dq_empty1), which the writer arrives on for the next tile's.
//
// p_mask split tests P's mask per value only in the tiles it can cut, there without a branch (the masked values'
// exponent -inf: ex2 gives 0, the bounds compared against the unrolled loop's constants), the other tiles with no mask
// code (branch: P = 0 or the ex2 per value in every tile, which ptxas compiles where causal to a branch around each
// pair's ex2: convergence barriers, predicates and about 250 instructions a thread and tile for 32 exponentials).
//
// dkv_stage writes dK and dV through shared memory (the warpgroup's rows of V, free after its walk) as whole rows in
// 16-byte stores instead of 4-byte stores straight from the accumulators (a warp's store then covers eight rows 16
// bytes each: half sectors).
//
// kv_blocks > 1: a CTA takes key blocks kv_blocks x .. in sequence (the grid 1 / kv_blocks as wide). Every role walks
// the blocks' tiles on one tile counter (the stage ring's phases, the row values, the dQ staging and dq_alt's turns
// run on across blocks); the producer issues a block's first Q, dO as soon as the last block's tiles free the stage,
// then waits on mbarrier kv_empty and loads the block's K, V. Every consumer thread arrives there once its GEMMs of
// the last block are done, before its epilogue, where dkv_stage stages dK, dV in the warpgroup's own dS buffer
// (dq_alt: plan dkv_in_ds; both warpgroups then meet at named barrier 3 before the next block's dS) or does not
// stage; after it where the staging takes V's rows (the lockstep dQ's one dS buffer is too small). The consumers'
// deferred list holds the tile counter and is converted after the last block. What it saves per block past the first:
// the CTA's start, its barrier setup, the first Q, dO loads' latency (and with dq_alt the K, V loads', under the
// epilogue), and the wait for the writer's last reduce before the deferred conversions.
//
// dq_lag: the dQ writer counts a tile (the proxy and gpu fences, the counter's atomic, the list if it completed the
// tile) one tile behind, while the next tile's bulk reduce reads the staging buffer, instead of after its own reduce
// has completed and before the next one is issued: the writer's time a tile about the longer of the two, not their
// sum (under ncu the writer had been busy ~95% of the kernel, the dQ turns' staging waiting for it, docs/perf.md);
// only where the deferred list holds every tile the CTA's walk can complete (no conversion needs the buffer).
// dq_release: the writer's count publishes the tile's part by atom.release.gpu (SASS: MEMBAR.ALL.GPU, no
// MEMBAR.SC.GPU and no L1 invalidation) instead of __threadfence() (fence.sc.gpu) and a relaxed add. Sufficient by the
// PTX memory model: the reduce's writes are complete once its bulk group is waited for and ordered before the
// thread's generic accesses by the proxy fence; the release add then makes them visible to any thread that acquires
// through the counter (the adds on it form a release sequence); the block that completes the tile reads the counter
// by its own add (a strong read) and fences before reading the parts (an acquire pattern), and its consumers read them
// after a barrier with the writer.
//
// ds_stsm stores dS by stmatrix (4 instructions a thread and tile at dim 128 instead of 16 32-bit stores); rows_v4
// lays the row values out so that a consumer thread reads four queries' D (LSE) in one 16-byte load (plan).
//
// Shared memory and the GEMMs' operands: attn_bwd_wgmma_plan.hpp. Named barriers: 1 = both consumer warpgroups
// (256 threads, dS written), 4 = both (dS free: the last tile's dQ GEMMs are done), 2 = both and the writer (its list
// of completed tiles written), 5 + w = consumer warpgroup w alone (dkv_stage), 3 = both (kv_blocks with dkv_in_ds:
// the staging in the dS buffers done).
#pragma once

#include "attention/attn_bwd_wgmma_plan.hpp"
#include "tile/barrier.cuh"
#include "tile/config.hpp"
#include "tile/convert.cuh"
#include "tile/global.cuh"
#include "tile/ldmatrix.cuh"
#include "tile/mbarrier.cuh"
#include "tile/probe.hpp"
#include "tile/reduce.hpp"
#include "tile/setmaxnreg.cuh"
#include "tile/smem.cuh"
#include "tile/tma.cuh"
#include "tile/wgmma_ops.cuh"
#include "tile/work_order.hpp"

namespace tl {

// The f32 dot product of 8 16-bit values in each of x and y.
template <bool BF16>
TL_DEVICE_INLINE float dot8(uint4 x, uint4 y) {
  const unsigned xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
  float sum = 0.f;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float2 a = unpack2<BF16>(xs[e]), g = unpack2<BF16>(ys[e]);
    sum += a.x * g.x + a.y * g.y;
  }
  return sum;
}

// d_pass's pre-pass (a launch of kAttnBwdWgmmaPrePassThreads threads, grid (any, 1, batch) before the main one):
// D = rowsum(dO * O) of every query row of sequence blockIdx.z into d_rows, indexed as O's rows (token * heads + h).
// A row's D/8 16-byte chunks go to as many lanes (a warp step covers 32 / (D/8) rows), summed by shuffles; U steps'
// loads in flight at once.
template <int D, bool BF16>
TL_DEVICE_INLINE void attn_bwd_row_dots(const unsigned short* __restrict__ O, const unsigned short* __restrict__ dO,
                                        float* __restrict__ d_rows, const int* __restrict__ cu_seqlens_q, int heads) {
  constexpr int L = D / 8, RW = 32 / L, U = 8;
  const int lane = threadIdx.x % 32, sub = lane / L, c = lane % L;
  const long long r0 = static_cast<long long>(cu_seqlens_q[blockIdx.z]) * heads;
  const long long r1 = static_cast<long long>(cu_seqlens_q[blockIdx.z + 1]) * heads;
  const long long warp = threadIdx.x / 32 + static_cast<long long>(blockIdx.x) * (blockDim.x / 32);
  const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x / 32);
  for (long long g = r0 + warp * U * RW; g < r1; g += warps * U * RW) {
    uint4 o[U], d[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long row = g + u * RW + sub;
      o[u] = d[u] = make_uint4(0, 0, 0, 0);
      if (row < r1) {
        o[u] = ld_global_stream_v4(O + row * D + 8 * c);
        d[u] = ld_global_stream_v4(dO + row * D + 8 * c);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float part = dot8<BF16>(o[u], d[u]);
#pragma unroll
      for (int x = L / 2; x > 0; x /= 2) part += __shfl_xor_sync(0xffffffffu, part, x);
      const long long row = g + u * RW + sub;
      if (c == 0 && row < r1) d_rows[row] = part;
    }
  }
}

// Kernel parameters: O and dO (d_pass's pre-pass reads them), the tensor maps of Q, K, V, O, dO (box: 64 columns of
// one head x block rows), LSE, dQ, dK, dV, dq_accum (f32 query tiles, (sequence, head, tile) in order, each in dq_chunk
// order), dq_counters (scratch, zero at the launch and left zero), d_rows (d_pass: D of each query row, O's row
// order), the sequence offsets, head counts, the query tiles of the longest sequence and the softmax scale.
template <AttnBwdWgmmaConfig CFG>
__global__ void __launch_bounds__(kAttnBwdWgmmaThreads, 1)
    attn_bwd_wgmma(const unsigned short* __restrict__ O, const unsigned short* __restrict__ dO,
                   const __grid_constant__ TmaDescriptor tma_q, const __grid_constant__ TmaDescriptor tma_k,
                   const __grid_constant__ TmaDescriptor tma_v, const __grid_constant__ TmaDescriptor tma_o,
                   const __grid_constant__ TmaDescriptor tma_do, const float* __restrict__ LSE,
                   unsigned short* __restrict__ dQ, unsigned short* __restrict__ dK, unsigned short* __restrict__ dV,
                   float* __restrict__ dq_accum, int* __restrict__ dq_counters, float* __restrict__ d_rows,
                   const int* __restrict__ cu_seqlens_q, const int* __restrict__ cu_seqlens_k, int heads, int heads_kv,
                   int m_blocks, float scale) {
  using namespace wgmma_ops;
  if constexpr (CFG.d_pass) {
    if (blockDim.x == kAttnBwdWgmmaPrePassThreads) {
      attn_bwd_row_dots<CFG.dim, CFG.bf16>(O, dO, d_rows, cu_seqlens_q, heads);
      return;
    }
  }
  using Probe = AttnBwdWgmmaProbe;
  static constexpr AttnBwdWgmmaPlan P = make_plan(CFG);  // static: its tables fold at compile time
  static_assert(P.ok(), "attn_bwd_wgmma: a config can_implement refuses");
  static_assert(!CFG.rows_v4 || P.s_octets, "rows_v4: S^T's value octets are not q, q + 1, q + 8, q + 9");
  static_assert(!CFG.ds_stsm || P.ds_stsm_ok, "ds_stsm: dS^T's A registers or dS's chunks do not fit stmatrix");
  static_assert(!CFG.dq_lag || CFG.dq_defer, "dq_lag: the completed tiles go to dq_defer's list");
  constexpr AttnBwdMmaConfig WALK = attn_bwd_walk(CFG);
  constexpr int D = CFG.dim, BM = CFG.block_M, BN = CFG.block_N, STAGES = CFG.num_stages, NB = CFG.kv_blocks;
  constexpr bool BF16 = CFG.bf16, UDESC = CFG.uniform_desc;
  constexpr int NH = D / 64;           // TMA boxes of 64 columns in a row
  constexpr int SV = BM / 2;           // S^T / dP^T accumulator values per thread
  constexpr int KV = D / 2;            // dK / dV accumulator values per thread
  constexpr int DQV = P.dq_n / 2;      // dQ part accumulator values per thread
  constexpr float kLog2e = 1.4426950408889634f;
  // wait_sleep: the side warps' mbarrier waits (1: the producer, row warps and dQ writer; 2: the consumers' too) with
  // try_wait's suspend-time hint, sleeping until the phase completes instead of polling again after the hardware's
  // own short limit.
  const auto side_wait = [](unsigned bar, unsigned parity) {
    if constexpr (CFG.wait_sleep >= 1) mbar_wait_sleep(bar, parity);
    else mbar_wait(bar, parity);
  };
  const auto main_wait = [](unsigned bar, unsigned parity) {
    if constexpr (CFG.wait_sleep >= 2) mbar_wait_sleep(bar, parity);
    else mbar_wait(bar, parity);
  };
  static_assert(BN == 128, "two consumer warpgroups of 64 keys");
  // setmaxnreg.inc waits until the CTA's own registers suffice: the 384 threads launched with 168 each (65536 / 384,
  // rounded down to whole allocation units); asking for more than 384 * 168 in all never returns.
#if defined(TL_TIMELINE) && TL_TIMELINE
  constexpr int kProducerRegs = 56, kConsumerRegs = 224;  // the probe marks need more in the producer
#else
  constexpr int kProducerRegs = 40, kConsumerRegs = 232;  // 128 * 40 + 256 * 232 = 64512; the dQ writer needs 40
#endif
  static_assert(128 * kProducerRegs + 256 * kConsumerRegs <= kAttnBwdWgmmaThreads * 168,
                "setmaxnreg: more registers than the block launched with");

  // Causal with sections: the key blocks with the longest walks first across `section` (sequence, kv head) pairs at a
  // time (tile/work_order.hpp; key block 0 walks the most query tiles), so the last CTAs to start are short ones.
  // The CTA's key blocks: NB bx .. NB bx + NB - 1 (kv_blocks), those inside the sequence (nb of them).
  int bx = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  if constexpr (CFG.causal && CFG.section > 0) {
    const int t = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const WorkCoord wc = work_sections(t, gridDim.x, gridDim.y * gridDim.z, CFG.section);
    bx = wc.m;
    hk = wc.pair % gridDim.y;
    b = wc.pair / gridDim.y;
  }
  const int kb0 = NB * bx;
  const int q_start = cu_seqlens_q[b], len_q = cu_seqlens_q[b + 1] - q_start;
  const int k_start = cu_seqlens_k[b], len_k = cu_seqlens_k[b + 1] - k_start;
  const int group = heads / heads_kv;
  const long long q_stride = static_cast<long long>(heads) * D, k_stride = static_cast<long long>(heads_kv) * D;
  if (len_k == 0) {
    // No key: dQ of the sequence is zero and no key block would complete it; the first CTA of each kv head writes it.
    if (kb0 == 0)
      for (long long i = threadIdx.x; i < static_cast<long long>(len_q) * group * (D / 8); i += kAttnBwdWgmmaThreads) {
        const long long row = i / (group * (D / 8)), rest = i % (group * (D / 8));
        *reinterpret_cast<uint4*>(dQ + (q_start + row) * q_stride + hk * group * D + 8 * rest) = make_uint4(0, 0, 0, 0);
      }
    return;
  }
  if (kb0 * BN >= len_k) return;  // past this sequence's keys

  const int diag = len_k - len_q;  // row r sees keys c <= r + diag (causal)
  const int m_tiles = (len_q + BM - 1) / BM;
  const int nb = NB == 1 ? 1 : min(NB, (len_k - kb0 * BN + BN - 1) / BN);
  // Key block blk of the CTA's: its index, keys, first query tile, query tiles per head and in its walk (every head of
  // the GQA group in turn); tile it of its walk is query tile tile_m(it) of head tile_head(it).
  struct KeyBlock {
    int kb, keys, m_first, per_head, tiles;
    TL_DEVICE_INLINE int tile_head(int hk, int group, int it) const { return hk * group + it / per_head; }
    TL_DEVICE_INLINE int tile_m(int it) const { return m_first + it % per_head; }
  };
  auto key_block = [&](int blk) {
    KeyBlock k;
    k.kb = kb0 + blk;
    k.keys = len_k - k.kb * BN < BN ? len_k - k.kb * BN : BN;
    k.m_first = attn_bwd_first_tile(WALK, k.kb, len_q, len_k);
    k.per_head = m_tiles - k.m_first;
    k.tiles = k.per_head > 0 ? group * k.per_head : 0;
    return k;
  };
  // The CTA's walk, the same in every role: for each of its key blocks blk (B = key_block(blk)) block(B, blk), then
  // tile(B, blk, it, g) for each tile it of the block's walk, g the tile counter over the CTA's key blocks (the stage
  // ring's phases, the row values, the dQ staging, dq_alt's turns and the deferred list run on it), then done(B, blk).
  auto walk = [&](auto&& block, auto&& tile, auto&& done) {
    int g0 = 0;  // the tiles of the CTA's earlier key blocks
    for (int blk = 0; blk < nb; ++blk) {
      const KeyBlock B = key_block(blk);
      block(B, blk);
      for (int it = 0; it < B.tiles; ++it) tile(B, blk, it, g0 + it);
      done(B, blk);
      g0 += B.tiles;
    }
  };
  const auto none = [](const KeyBlock&, int) {};

  extern __shared__ unsigned char smem_raw[];
  const unsigned base = smem_align<1024>(smem_raw);
  const unsigned k_smem = base + P.k_offset, v_smem = base + P.v_offset, ds_smem = base + P.ds_offset;
  auto full = [&](int s) { return base + P.bar_full + 8u * s; };
  auto empty = [&](int s) { return base + P.bar_empty + 8u * s; };
  auto rows_full = [&](int s) { return base + P.bar_rows_full + 8u * s; };
  auto rows_at = [&](int s) { return base + P.rows_offset + s * static_cast<unsigned>(P.rows_bytes); };
  const unsigned kv_full = base + P.bar_kv_full, dq_full = base + P.bar_dq_full, dq_empty = base + P.bar_dq_empty;
  const unsigned dq_load = base + P.bar_dq_load, kv_empty = base + P.bar_kv_empty;
  // The staging buffer's "free" mbarrier of the warpgroup that stages tile it (dq_alt: warpgroup it % 2).
  auto dq_empty_of = [&](int it) { return CFG.dq_alt && (it & 1) ? base + P.bar_dq_empty1 : dq_empty; };
  const unsigned dq_smem = base + P.dq_offset;
  // Query tile m of head h: its f32 accumulator tile and its counter.
  auto tile_index = [&](int h, int m) { return (static_cast<long long>(b) * heads + h) * m_blocks + m; };
  // The completed f32 tile of query tile m, head h, to 16-bit dQ (times scale), leaving it zero. Chunk k of consumer
  // thread t (P.dq_chunk) holds values 4k .. 4k + 3 of its dQ part accumulator: a pair of columns in a row, the same
  // pair 8 rows down; dq_accum holds the tile in the same order as the staging buffer.
  constexpr int kChunks = 2 * 128 * (DQV / 4);
  struct DqTile {
    float4* acc;          // the f32 tile in dq_accum
    unsigned short* dst;  // its first row in dQ
    int rows;             // its rows in the sequence
  };
  auto dq_tile = [&](int h, int m) {
    return DqTile{reinterpret_cast<float4*>(dq_accum + tile_index(h, m) * (BM * D)),
                  dQ + (q_start + static_cast<long long>(m) * BM) * q_stride + h * D,
                  len_q - m * BM < BM ? len_q - m * BM : BM};
  };
  auto convert_chunk = [&](const DqTile& x, int t, int k, float4 v) {
    const int part = t / 128;
    const TileCoord o = P.acc_dQ(t % 128, 0);
    const TileCoord lo = P.dq_values.at[4 * k], hi = P.dq_values.at[4 * k + 2];
    const int r0 = part * P.dq_row_wg + o.row + lo.row, r1 = part * P.dq_row_wg + o.row + hi.row;
    const int c0 = part * P.dq_col_wg + o.col + lo.col, c1 = part * P.dq_col_wg + o.col + hi.col;
    if (r0 < x.rows) *reinterpret_cast<unsigned*>(x.dst + r0 * q_stride + c0) = pack2<BF16>(scale * v.x, scale * v.y);
    if (r1 < x.rows) *reinterpret_cast<unsigned*>(x.dst + r1 * q_stride + c1) = pack2<BF16>(scale * v.z, scale * v.w);
    __stcg(x.acc + P.dq_chunk(t, k) / 16, make_float4(0.f, 0.f, 0.f, 0.f));
  };

  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    mbar_init(kv_full, 1);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), kAttnBwdWgmmaConsumers + kAttnBwdWgmmaRowThreads);
      mbar_init(rows_full(s), kAttnBwdWgmmaRowThreads);
    }
    mbar_init(dq_full, (CFG.dq_alt ? 1 : kAttnBwdWgmmaConsumers) * 128);
    mbar_init(dq_empty, 1);
    if (CFG.dq_alt) mbar_init(dq_empty_of(1), 1);
    mbar_init(dq_load, 1);
    if (NB > 1) mbar_init(kv_empty, kAttnBwdWgmmaConsumers * 128);
    fence_mbarrier_init();
    TL_PROBE_BLOCK_BEGIN();
  }
  __syncthreads();

  if (wg == 0) {
    // [SECTION] producer
    setmaxnreg_dec<kProducerRegs>();
    if (tid >= 64) {
      // [SECTION] row warps: thread r of 64 takes rows r, r + 64 ..: 16-byte chunks of O and dO, f32 sums; with
      // d_pass the pre-pass's D instead, loaded with the LSE before the stage's row values are free.
      constexpr int kRows = BM / kAttnBwdWgmmaRowThreads;
      auto lse_at = [&](int h, int q) {
        return CFG.varlen ? static_cast<long long>(h) * cu_seqlens_q[gridDim.z] + q_start + q
                          : (static_cast<long long>(b) * heads + h) * len_q + q;
      };
      // g: the tile counter over the CTA's key blocks, the stage and its phase
      walk(none, [&](const KeyBlock& B, int, int it, int g) {
        const int s = g % STAGES, h = B.tile_head(hk, group, it), m = B.tile_m(it);
        if constexpr (CFG.d_pass) {
          float lse[kRows], dot[kRows];
#pragma unroll
          for (int j = 0; j < kRows; ++j) {
            const int q = m * BM + tid - 64 + j * kAttnBwdWgmmaRowThreads;
            lse[j] = q < len_q ? LSE[lse_at(h, q)] * kLog2e : __int_as_float(0x7f800000);
            dot[j] = q < len_q ? d_rows[(q_start + static_cast<long long>(q)) * heads + h] : 0.f;
          }
          side_wait(full(s), (g / STAGES) & 1);  // the stage's row values are free
#pragma unroll
          for (int j = 0; j < kRows; ++j) {
            const int r = tid - 64 + j * kAttnBwdWgmmaRowThreads;
            const int at = CFG.rows_v4 ? attn_bwd_row_slot(r) : r;  // the row's slot among the row values
            st_shared_f32(rows_at(s) + 4u * at, dot[j]);
            st_shared_f32(rows_at(s) + 4u * (BM + at), lse[j]);
          }
        } else {
          const unsigned do_s = base + P.stage(s) + P.q_bytes, o_s = do_s + P.q_bytes;
          side_wait(full(s), (g / STAGES) & 1);
          for (int r = tid - 64; r < BM; r += kAttnBwdWgmmaRowThreads) {
            const int q = m * BM + r;
            float part = 0.f;
#pragma unroll 4
            for (int c = 0; c < D; c += 8)
              part += dot8<BF16>(ld_shared_v4_b32(o_s + P.byte(P.smem_O, r, c)),
                                 ld_shared_v4_b32(do_s + P.byte(P.smem_O, r, c)));
            const int at = CFG.rows_v4 ? attn_bwd_row_slot(r) : r;
            st_shared_f32(rows_at(s) + 4u * at, part);
            st_shared_f32(rows_at(s) + 4u * (BM + at), q < len_q ? LSE[lse_at(h, q)] * kLog2e : __int_as_float(0x7f800000));
          }
        }
        mbar_arrive(rows_full(s));
        mbar_arrive(empty(s));  // O, dO read
      }, none);
      return;
    }
    TL_PROBE_WARP_INIT();
    if (tid >= 32) {
      // [SECTION] dQ writer
      const int lane = tid - 32;
      unsigned loads = 0;  // conversions here so far: dq_load's phase
      int deferred = 0;    // completed tiles left to the consumers (dq_defer)
      // Tile (h, m)'s reduce has completed (lane 0 waited for its group): count this key block's part; true on every
      // lane for the block that completes the tile (the counter then left zero for the next launch).
      auto count = [&](int h, int m) {
        const long long tix = tile_index(h, m);
        int last = 0;
        if (lane == 0) {
          // The reduce's writes (async proxy, completed: wait_group) ordered before the count's generic accesses.
          fence_proxy_async_global();
          int before;
          if constexpr (CFG.dq_release) {
            // dq_release: the add itself releases them (why that suffices: the header); no fence.sc.gpu a tile.
            before = atom_add_release_gpu(dq_counters + tix, 1);
          } else {
            __threadfence();
            before = atomicAdd(dq_counters + tix, 1);
          }
          last = before == attn_bwd_tile_key_blocks(WALK, m, len_q, len_k) - 1;
          if (last) dq_counters[tix] = 0;  // every part is in: left zero for the next launch
        }
        return __shfl_sync(0xffffffffu, last, 0) != 0;
      };
      // Completed tile j to the list (dq_defer: its consumers convert it after their walk).
      auto defer = [&](int j) {
        if (lane == 0) st_shared_b32(base + P.defer_offset + 4u * (1 + deferred), static_cast<unsigned>(j));
        ++deferred;
      };
      // Tile j (head h, query tile m), its reduce completed: counted; the block that completes the tile converts it:
      // with dq_defer its consumers after their walk while there is room in the list, else the writer now, from the
      // staging buffer (one bulk copy of the f32 tile, one latency, instead of a round trip to L2 per chunk), holding
      // the buffer meanwhile.
      auto finish = [&](int j, int h, int m) {
        if (!count(h, m)) return;
        __threadfence();
        if (CFG.dq_defer && deferred < CFG.defer_tiles) {
          defer(j);
          return;
        }
        TL_PROBE_BEGIN(Probe::dq_store, probe::kNoStage, j);
        const DqTile x = dq_tile(h, m);
        if (lane == 0) {
          fence_proxy_async_global();  // the other blocks' reduces, seen through the counter, before the copy
          mbar_expect_tx(dq_load, P.dq_bytes);
          bulk_load(dq_smem, x.acc, P.dq_bytes, dq_load);
        }
        side_wait(dq_load, loads++ & 1);
        // Two chunks per lane at a time: their shared-memory loads in flight together.
        static_assert(kChunks % 64 == 0, "whole pairs of warp steps");
        auto f32x4 = [](uint4 u) {
          return make_float4(__uint_as_float(u.x), __uint_as_float(u.y), __uint_as_float(u.z), __uint_as_float(u.w));
        };
        for (int c0 = lane; c0 < kChunks; c0 += 64) {
          const int c1 = c0 + 32;
          const uint4 u0 = ld_shared_v4_b32(dq_smem + P.dq_chunk(c0 % 256, c0 / 256));
          const uint4 u1 = ld_shared_v4_b32(dq_smem + P.dq_chunk(c1 % 256, c1 / 256));
          convert_chunk(x, c0 % 256, c0 / 256, f32x4(u0));
          convert_chunk(x, c1 % 256, c1 / 256, f32x4(u1));
        }
        TL_PROBE_END(Probe::dq_store, probe::kNoStage, j);
      };
      if constexpr (CFG.dq_lag) {
        // dq_lag: the last tile (counter, head, query tile; pj < 0: none) counted while this one's reduce reads the
        // staging buffer, its own reduce completed by then (every bulk group but this one's). The spec allows it only
        // where the list holds every tile the CTA's walk can complete, so no conversion here needs the buffer.
        int pj = -1, ph = 0, pm = 0;
        auto settle = [&] {
          if (count(ph, pm)) {
            __threadfence();
            defer(pj);
          }
        };
        walk(none, [&](const KeyBlock& B, int, int it, int g) {
          const int h = B.tile_head(hk, group, it), m = B.tile_m(it);
          TL_PROBE_BEGIN(Probe::dq_add, probe::kNoStage, g);
          side_wait(dq_full, g & 1);
          if (lane == 0) {
            bulk_reduce_add_f32(dq_accum + tile_index(h, m) * (BM * D), dq_smem, P.dq_bytes);
            tma_store_commit();
          }
          if (pj >= 0) {
            if (lane == 0) tma_store_wait<1>();
            settle();
          }
          if (lane == 0) {
            tma_store_wait_read();
            mbar_arrive(dq_empty_of(g + 1));  // the staging buffer read: free for tile g + 1
          }
          pj = g, ph = h, pm = m;
          TL_PROBE_END(Probe::dq_add, probe::kNoStage, g);
        }, none);
        if (pj >= 0) {  // the walk's last tile
          if (lane == 0) tma_store_wait_all();
          settle();
        }
      } else {
        walk(none, [&](const KeyBlock& B, int, int it, int g) {  // g: the list holds it
          const int h = B.tile_head(hk, group, it), m = B.tile_m(it);
          // A tile completed in this step goes to the list if there is room: the staging tile is free once read.
          const bool early = CFG.dq_defer && deferred < CFG.defer_tiles;
          TL_PROBE_BEGIN(Probe::dq_add, probe::kNoStage, g);
          side_wait(dq_full, g & 1);
          if (lane == 0) {
            bulk_reduce_add_f32(dq_accum + tile_index(h, m) * (BM * D), dq_smem, P.dq_bytes);
            tma_store_commit();
            tma_store_wait_read();
            if (early) mbar_arrive(dq_empty_of(g + 1));
            tma_store_wait_all();
          }
          TL_PROBE_END(Probe::dq_add, probe::kNoStage, g);
          finish(g, h, m);
          if (!early) {
            __syncwarp();  // the staging tile read by the conversion, if any
            if (lane == 0) mbar_arrive(dq_empty_of(g + 1));
          }
        }, none);
      }
      if constexpr (CFG.dq_defer) {
        if (lane == 0) st_shared_b32(base + P.defer_offset, static_cast<unsigned>(deferred));
        named_barrier_arrive(2, 288);  // the list is written
      }
      TL_PROBE_FLUSH();
      return;
    }
    // [SECTION] loads: lane 0 issues the TMA loads. In the probe build the whole warp walks the tiles with it and
    // waits on the empty barriers (the marks are warp-collective); the plain build keeps lane 0 alone, since the
    // warp-wide walk costs the dim-64 varlen causal build 24 more bytes of spills.
#if defined(TL_TIMELINE) && TL_TIMELINE
    constexpr bool kWarpWalks = true;
#else
    constexpr bool kWarpWalks = false;
#endif
    auto load = [&](const TmaDescriptor* map, unsigned dst, unsigned box_bytes, unsigned bar, int head, int row) {
#pragma unroll
      for (int half = 0; half < NH; ++half) tma_load(dst + half * box_bytes, map, bar, half * 64, head, row);
    };
    // Key block blk's K and V; past the first, once both consumer warpgroups have written block blk - 1's dK, dV.
    auto load_kv = [&](int blk) {
      if (blk > 0) side_wait(kv_empty, (blk - 1) & 1);
      if (tid == 0) {
        mbar_expect_tx(kv_full, 2 * P.kv_bytes);
        load(&tma_k, k_smem, P.kv_box, kv_full, hk, k_start + (kb0 + blk) * BN);
        load(&tma_v, v_smem, P.kv_box, kv_full, hk, k_start + (kb0 + blk) * BN);
      }
    };
    if (kWarpWalks || tid == 0) {
      walk(
          [&](const KeyBlock& B, int blk) {
            // The first block's K, V before its Q, dO; a later block's after its first Q, dO (issued as soon as the
            // last block's tiles free the stage, while the consumers finish that block).
            if (blk == 0 || B.tiles == 0) load_kv(blk);
          },
          [&](const KeyBlock& B, int blk, int it, int g) {
            const int s = g % STAGES, h = B.tile_head(hk, group, it), row = q_start + B.tile_m(it) * BM;
            const unsigned st = base + P.stage(s);
            TL_PROBE_BEGIN(Probe::wait_empty, s, g);
            side_wait(empty(s), ((g / STAGES) & 1) ^ 1);
            TL_PROBE_END(Probe::wait_empty, s, g);
            TL_PROBE_BEGIN(Probe::tma_issue, s, g);
            if (tid == 0) {
              mbar_expect_tx(full(s), P.stage_bytes);
              load(&tma_q, st, P.q_box, full(s), h, row);
              load(&tma_do, st + P.q_bytes, P.q_box, full(s), h, row);
              if constexpr (!CFG.d_pass) load(&tma_o, st + 2 * P.q_bytes, P.q_box, full(s), h, row);
            }
            TL_PROBE_END(Probe::tma_issue, s, g);
            if (NB > 1 && blk > 0 && it == 0) load_kv(blk);
          },
          none);
    }
    TL_PROBE_FLUSH();
    return;
  }

  // [SECTION] consumers
  setmaxnreg_inc<kConsumerRegs>();
  const int w = wg - 1, ctid = threadIdx.x - 128;  // consumer warpgroup, thread among both
  TL_PROBE_WARP_INIT_IF(tid / 32 == 0);
  const TileCoord lc = P.acc_S(tid, 0);    // (key in the warpgroup's 64, query) of S^T's value 0
  const TileCoord lkv = P.acc_KV(tid, 0);  // (key, column) of dK / dV's value 0
  const unsigned k_wg = k_smem + w * P.kv_wg, v_wg = v_smem + w * P.kv_wg;
  const float scale_log2 = scale * kLog2e;

  float dk[KV], dv[KV], st[SV], dpt[SV], dq[DQV];
  unsigned pa[SV / 2], dsa[SV / 2];  // P^T and dS^T as 16-bit A registers
  // UDESC (config uniform_desc): the descriptors are built from values ptxas can prove warp-uniform, the results of
  // redux.sync (warp_uniform): the descriptors' high word and this warpgroup's K, V low words once before the walk,
  // the tile counter once per tile (its stage's Q, dO and dq_alt's dS buffer follow from it), the lockstep dQ's
  // warpgroup index before its GEMM (held over the walk instead, its two low words cost GQA causal 52 bytes of spills). Each k16 step's descriptor is then the operand's low word plus a constant (wgmma_ops.cuh's sw128_desc_lo /
  // kSw128DescHi: leading byte offset 16 bytes for the K-major operands, the TMA box for the N-major and M-major
  // ones), kept in uniform registers, where the default builds every descriptor per thread from its address and
  // moves both words over by R2UR before each wgmma (docs/perf.md).
  unsigned hi_u = kSw128DescHi, k_lo = 0, v_lo = 0;
  if constexpr (UDESC) {
    hi_u = warp_uniform(kSw128DescHi);  // (an opaque copy: as a constant, ptxas moves it again before each wgmma)
    k_lo = warp_uniform(sw128_desc_lo(k_wg, 16));
    v_lo = warp_uniform(sw128_desc_lo(v_wg, 16));
  }
  // The descriptor of the operand whose low word is lo, `bytes` further.
  auto udesc = [&](unsigned lo, int bytes) { return desc_of(lo + (static_cast<unsigned>(bytes) >> 4), hi_u); };

  // The walk as `walk` runs it, in a loop of its own: with the per-block and per-tile parts as lambdas the lockstep
  // dQ's GQA causal build spills 12 bytes (the mask's block test folded differently), the other builds' PTX unchanged.
  int g0 = 0;  // the tiles of the CTA's earlier key blocks
  for (int blk = 0; blk < nb; ++blk) {
    const KeyBlock B = key_block(blk);
    const int kb = B.kb;
#pragma unroll
    for (int i = 0; i < KV; ++i) dk[i] = dv[i] = 0.f;
    main_wait(kv_full, blk & 1);
    for (int it = 0; it < B.tiles; ++it) {
      const int g = g0 + it;  // the tile counter over the CTA's key blocks: stage, phases, turns
      const int s = g % STAGES, m = B.tile_m(it);
      // UDESC: this tile's Q, dO (and dq_alt's dS) from the warp-uniform tile counter.
      const int iu = UDESC ? static_cast<int>(warp_uniform(static_cast<unsigned>(g))) : g;
      const unsigned q_u = base + P.stage(iu % STAGES), do_u = q_u + P.q_bytes;
      const unsigned ds_u = ds_smem + (CFG.dq_alt ? (iu & 1) * P.ds_bytes : 0);
      const unsigned q_s = base + P.stage(s), do_s = q_s + P.q_bytes, rows = rows_at(s);  // rows: D[BM], LSE[BM]
      const unsigned ds_s = ds_smem + (CFG.dq_alt ? (g & 1) * P.ds_bytes : 0);           // this tile's dS
      TL_PROBE_BEGIN(Probe::wait_full, s, g);
      main_wait(full(s), (g / STAGES) & 1);
      TL_PROBE_END(Probe::wait_full, s, g);

      // One wgmma chain over D: acc = (K or V rows of this warpgroup) x (Q or dO tile)^T, then its commit group.
      // kv_lo / x_u: the uniform descriptors' bases (UDESC); kv_wg / x_s: the per-thread addresses otherwise.
      const auto issue_t = [&](auto& acc, unsigned kv_lo, unsigned kv_wg, unsigned x_u, unsigned x_s) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          if constexpr (UDESC)
            WgmmaSS<BM, BF16, 0>::run(acc, udesc(kv_lo, P.k_k16[kk]), udesc(sw128_desc_lo(x_u, 16), P.q_k16[kk]),
                                      kk > 0);
          else
            WgmmaSS<BM, BF16, 0>::run(acc, smem_desc_sw128(kv_wg + P.k_k16[kk]), smem_desc_sw128(x_s + P.q_k16[kk]),
                                      kk > 0);
        }
        wgmma_commit();
      };
      TL_PROBE_BEGIN(Probe::sdp_issue, s, g);
      wgmma_fence();
      issue_t(st, k_lo, k_wg, q_u, q_s);     // S^T = K Q^T
      issue_t(dpt, v_lo, v_wg, do_u, do_s);  // dP^T = V dO^T
      TL_PROBE_END(Probe::sdp_issue, s, g);

      // The row warps' D and LSE of the tile's rows (computed while the tensor cores run).
      TL_PROBE_BEGIN(Probe::row_dot, s, g);
      main_wait(rows_full(s), (g / STAGES) & 1);
      TL_PROBE_END(Probe::row_dot, s, g);

      TL_PROBE_BEGIN(Probe::p_ds, s, g);
      wgmma_wait<1>();
      fence_regs(st);
      // Values v .. v + 3 are queries q, q + 1 of two keys (P.s_quads): one 8-byte load of their two row values.
      auto row_pair = [&](unsigned at) {
        const unsigned long long x = ld_shared_b64(at);
        return make_float2(__uint_as_float(static_cast<unsigned>(x)), __uint_as_float(static_cast<unsigned>(x >> 32)));
      };
      // rows_v4: the row values (region 0: D, BM: LSE) of the queries of S^T's values v .. v + 7 in one 16-byte load at
      // v % 8 == 0 (quad holds them for v + 4: v is a constant of the unrolled loops), at slot s_values.at[v].col + 4 t
      // for the thread's q = 2 t (attn_bwd_row_slot); those of v .. v + 3 returned.
      uint4 quad{};
      auto row_quad = [&](int region, int v) {
        if (v % 8 == 0) quad = ld_shared_v4_b32(rows + 4u * (region + P.s_values.at[v].col + 2 * lc.col));
        return v % 8 == 0 ? make_float2(__uint_as_float(quad.x), __uint_as_float(quad.y))
                          : make_float2(__uint_as_float(quad.z), __uint_as_float(quad.w));
      };
      {
        const int key0 = kb * BN + 64 * w + lc.row;  // this thread's first key in the sequence
        const bool masked = kb * BN + BN > len_k || (CFG.causal && kb * BN + BN - 1 > m * BM + diag);
        if constexpr (CFG.p_mask == kAttnBwdPMaskBranch) {
#pragma unroll
          for (int v = 0; v < SV; v += 4) {
            const int q = lc.col + P.s_values.at[v].col;
            const float2 lse = CFG.rows_v4 ? row_quad(BM, v) : row_pair(rows + 4u * (BM + q));
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int key = key0 + P.s_values.at[v + e].row, qe = q + (e & 1);
              const bool off = masked && (key >= len_k || (CFG.causal && key > m * BM + qe + diag));
              st[v + e] = off ? 0.f : exp2_approx(st[v + e] * scale_log2 - (e & 1 ? lse.y : lse.x));
            }
          }
        } else {
          // p_mask split: the tiles the mask can cut (cut) test it per value without a branch: value (v, e) is key
          // key0 + R of query lc.col + C (R, C constants of the unrolled loop), off where R >= klim (past the keys) or
          // R - C > qlim (causal), its exponent then -inf (ex2 gives 0); the other tiles run the loop with no mask code
          // (both limits out of reach: the tests fold away). One uniform branch a tile between the two.
          auto p_values = [&](bool cut) {
            constexpr int kNever = 1 << 30;
            const int klim = cut ? len_k - key0 : kNever;
            const int qlim = cut && CFG.causal ? m * BM + diag + lc.col - key0 : kNever;
#pragma unroll
            for (int v = 0; v < SV; v += 4) {
              const int q = lc.col + P.s_values.at[v].col;
              const float2 lse = CFG.rows_v4 ? row_quad(BM, v) : row_pair(rows + 4u * (BM + q));
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                const int R = P.s_values.at[v + e].row, C = P.s_values.at[v].col + (e & 1);
                const float x = st[v + e] * scale_log2 - (e & 1 ? lse.y : lse.x);
                st[v + e] = exp2_approx(R >= klim || R - C > qlim ? __int_as_float(0xff800000) : x);
              }
            }
          };
          if (masked) p_values(true);
          else p_values(false);
        }
      }
      wgmma_wait<0>();
      fence_regs(dpt);
#pragma unroll
      for (int v = 0; v < SV; v += 4) {
        const float2 d = CFG.rows_v4 ? row_quad(0, v) : row_pair(rows + 4u * (lc.col + P.s_values.at[v].col));
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          pa[P.a_reg[v + e]] = pack2<BF16>(st[v + e], st[v + e + 1]);
          dsa[P.a_reg[v + e]] = pack2<BF16>(st[v + e] * (dpt[v + e] - d.x), st[v + e + 1] * (dpt[v + e + 1] - d.y));
        }
      }
      if constexpr (!CFG.dq_alt) named_barrier_sync(4, 256);  // both warpgroups' dQ GEMMs of the last tile read dS
      if constexpr (CFG.ds_stsm) {
        // Lane l addresses row l % 8 (a key) of matrix l / 8 of each k16 step (keys 8 (i & 1) .., queries 8 (i >> 1) ..
        // of the warp's 16 keys: A register i), step kt's by the plan's XOR of 32 (kt % 4) and kt / 4 boxes.
        const int lane = tid % 32, i = lane / 8;
        const unsigned at = ds_s + P.byte(P.smem_dS, 8 * (i >> 1), 64 * w + 16 * (tid / 32) + 8 * (i & 1) + lane % 8);
#pragma unroll
        for (int kt = 0; kt < BM / 16; ++kt)
          stmatrix_x4((at ^ (32u * (kt % 4))) + (kt / 4) * P.ds_box, dsa[4 * kt], dsa[4 * kt + 1], dsa[4 * kt + 2],
                      dsa[4 * kt + 3]);
      } else {
#pragma unroll
        for (int v = 0; v < SV; v += 2)
          st_shared_b32(ds_s + P.byte(P.smem_dS, lc.col + P.s_values.at[v].col, 64 * w + lc.row + P.s_values.at[v].row),
                        dsa[P.a_reg[v]]);
      }
      TL_PROBE_END(Probe::p_ds, s, g);

      TL_PROBE_BEGIN(Probe::dkv_issue, s, g);
      fence_regs(pa);
      fence_regs(dsa);
      fence_regs(dk);
      fence_regs(dv);
      wgmma_fence();
#pragma unroll
      for (int kt = 0; kt < BM / 16; ++kt) {
        if constexpr (UDESC)
          WgmmaRS<D, BF16, 1>::run(dv, &pa[4 * kt], udesc(sw128_desc_lo(do_u, P.q_box), P.qt_k16[kt]), 1);
        else
          WgmmaRS<D, BF16, 1>::run(dv, &pa[4 * kt], smem_desc_sw128_mn(do_s + P.qt_k16[kt], P.q_box), 1);
      }
#pragma unroll
      for (int kt = 0; kt < BM / 16; ++kt) {
        if constexpr (UDESC)
          WgmmaRS<D, BF16, 1>::run(dk, &dsa[4 * kt], udesc(sw128_desc_lo(q_u, P.q_box), P.qt_k16[kt]), 1);
        else
          WgmmaRS<D, BF16, 1>::run(dk, &dsa[4 * kt], smem_desc_sw128_mn(q_s + P.qt_k16[kt], P.q_box), 1);
      }
      wgmma_commit();

      // dQ's part once both warpgroups' dS is in shared memory (seen by the async proxy).
      fence_proxy_async_smem();
      TL_PROBE_END(Probe::dkv_issue, s, g);
      if constexpr (CFG.dq_alt) {
        // dV, dK done first: the P^T, dS^T registers they read are free for the next tile's S^T (or this one's dQ).
        // (In each branch: the build measured with dq_lag, docs/perf.md; ptxas keeps a wait and arrive in each.)
        auto dkv_done = [&] {
          wgmma_wait<0>();
          fence_regs(dk);
          fence_regs(dv);
          fence_regs(pa);
          fence_regs(dsa);
          if (tid == 0) mbar_arrive(empty(s));  // Q, dO read by every GEMM of this warpgroup
        };
        // Barriers 1 and 4 by turns: a warpgroup one tile ahead never arrives at the one the other still waits on.
        const int bar = g & 1 ? 4 : 1;
        if (w != (g & 1)) {
          dkv_done();
          named_barrier_arrive(bar, 256);  // the other warpgroup's turn: its dQ GEMM reads this dS
        } else {
          dkv_done();
          TL_PROBE_BEGIN(Probe::ds_wait, s, g);
          named_barrier_sync(bar, 256);
          TL_PROBE_END(Probe::ds_wait, s, g);
          TL_PROBE_BEGIN(Probe::dq_gemm, s, g);
          // The whole tile: both parts' accumulators in turn (part p as warpgroup p would hold it without dq_alt); at
          // dim 128 (parts side by side) one m64n128 GEMM holds both.
          float dqw[2 * DQV];
          wgmma_fence();  // its registers held S^T, dP^T: without the fence ptxas serializes every wgmma (C7520)
          if constexpr (P.dq_col_wg > 0) {
#pragma unroll
            for (int kk = 0; kk < BN / 16; ++kk) {
              if constexpr (UDESC)
                WgmmaSSTransA<2 * P.dq_n, BF16, 1>::run(dqw, udesc(sw128_desc_lo(ds_u, P.ds_box), P.dq_k16_a[kk]),
                                                       udesc(sw128_desc_lo(k_smem, P.kv_box), P.dq_k16_b[kk]), kk > 0);
              else
                WgmmaSSTransA<2 * P.dq_n, BF16, 1>::run(dqw, smem_desc_sw128_mn(ds_s + P.dq_k16_a[kk], P.ds_box),
                                                       smem_desc_sw128_mn(k_smem + P.dq_k16_b[kk], P.kv_box), kk > 0);
            }
          } else {
#pragma unroll
            for (int part = 0; part < 2; ++part)
#pragma unroll
              for (int kk = 0; kk < BN / 16; ++kk) {
                if constexpr (UDESC)
                  WgmmaSSTransA<P.dq_n, BF16, 1>::run(
                      dqw + part * DQV, udesc(sw128_desc_lo(ds_u + part * P.dq_a_wg, P.ds_box), P.dq_k16_a[kk]),
                      udesc(sw128_desc_lo(k_smem + part * P.dq_b_wg, P.kv_box), P.dq_k16_b[kk]), kk > 0);
                else
                  WgmmaSSTransA<P.dq_n, BF16, 1>::run(
                      dqw + part * DQV, smem_desc_sw128_mn(ds_s + part * P.dq_a_wg + P.dq_k16_a[kk], P.ds_box),
                      smem_desc_sw128_mn(k_smem + part * P.dq_b_wg + P.dq_k16_b[kk], P.kv_box), kk > 0);
              }
          }
          wgmma_commit();
          wgmma_wait<0>();
          fence_regs(dqw);
          TL_PROBE_END(Probe::dq_gemm, s, g);
          TL_PROBE_BEGIN(Probe::dq_stage, s, g);
          main_wait(dq_empty_of(g), ((g >> 1) & 1) ^ (w == 0));  // the writer has taken tile g - 1
#pragma unroll
          for (int part = 0; part < 2; ++part)
#pragma unroll
            for (int k = 0; k < DQV / 4; ++k) {
              const float* x = dqw + part * DQV + 4 * k;
              st_shared_v4_b32(dq_smem + P.dq_chunk(128 * part + tid, k), __float_as_uint(x[0]), __float_as_uint(x[1]),
                               __float_as_uint(x[2]), __float_as_uint(x[3]));
            }
          fence_proxy_async_smem();
          mbar_arrive(dq_full);
          TL_PROBE_END(Probe::dq_stage, s, g);
        }
        continue;
      }

      TL_PROBE_BEGIN(Probe::ds_wait, s, g);
      named_barrier_sync(1, 256);
      TL_PROBE_END(Probe::ds_wait, s, g);
      TL_PROBE_BEGIN(Probe::dq_gemm, s, g);
      const unsigned wu = UDESC ? warp_uniform(static_cast<unsigned>(w)) : w;  // UDESC: the warpgroup, warp-uniform
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        if constexpr (UDESC)
          WgmmaSSTransA<P.dq_n, BF16, 1>::run(dq, udesc(sw128_desc_lo(ds_smem + wu * P.dq_a_wg, P.ds_box), P.dq_k16_a[kk]),
                                              udesc(sw128_desc_lo(k_smem + wu * P.dq_b_wg, P.kv_box), P.dq_k16_b[kk]),
                                              kk > 0);
        else
          WgmmaSSTransA<P.dq_n, BF16, 1>::run(dq, smem_desc_sw128_mn(ds_smem + w * P.dq_a_wg + P.dq_k16_a[kk], P.ds_box),
                                              smem_desc_sw128_mn(k_smem + w * P.dq_b_wg + P.dq_k16_b[kk], P.kv_box),
                                              kk > 0);
      }
      wgmma_commit();
      wgmma_wait<0>();
      fence_regs(dq);
      fence_regs(dk);
      fence_regs(dv);
      fence_regs(pa);
      fence_regs(dsa);
      if (tid == 0) mbar_arrive(empty(s));  // Q, dO read by every GEMM of this warpgroup
      TL_PROBE_END(Probe::dq_gemm, s, g);

      // Stage the part for the dQ writer once it has taken the last tile's.
      TL_PROBE_BEGIN(Probe::dq_stage, s, g);
      main_wait(dq_empty, (g & 1) ^ 1);
#pragma unroll
      for (int k = 0; k < DQV / 4; ++k)
        st_shared_v4_b32(dq_smem + P.dq_chunk(ctid, k), __float_as_uint(dq[4 * k]), __float_as_uint(dq[4 * k + 1]),
                         __float_as_uint(dq[4 * k + 2]), __float_as_uint(dq[4 * k + 3]));
      fence_proxy_async_smem();
      mbar_arrive(dq_full);
      TL_PROBE_END(Probe::dq_stage, s, g);
    }

    // K, V free for the next key block once neither the epilogue (dkv_stage through V) nor a GEMM reads them: this
    // thread's reads and staging stores before the TMA writes.
    constexpr bool kKvFreeEarly = P.dkv_in_ds || !CFG.dkv_stage;
    auto kv_free = [&] {
      fence_proxy_async_smem();
      mbar_arrive(kv_empty);
    };
    if constexpr (NB > 1 && kKvFreeEarly) kv_free();
    // [SECTION] epilogue: dK (times scale) and dV of the warpgroup's keys.
    TL_PROBE_BEGIN(Probe::epilogue, probe::kNoStage, B.kb);
    const long long k_row0 = k_start + static_cast<long long>(B.kb) * BN + 64 * w;
    if constexpr (CFG.dkv_stage) {
      // Through the warpgroup's 64 rows of V (free: only its own dP^T GEMMs read them, all done) or its dS buffer
      // (dkv_in_ds), dV then dK, in the plan's dkv_chunk order, then whole rows to global memory in 16-byte stores.
      const unsigned stage_wg = base + P.dkv_offset + w * P.dkv_wg;
      auto chunk_at = [&](int row, int c8) { return stage_wg + P.dkv_chunk(row, c8); };
      auto out = [&](unsigned short* dst, const float* acc, float mul) {
#pragma unroll
        for (int v = 0; v < KV; v += 2) {
          const int key = lkv.row + P.kv_values.at[v].row, c = lkv.col + P.kv_values.at[v].col;
          st_shared_b32(chunk_at(key, c / 8) + 2u * (c % 8), pack2<BF16>(mul * acc[v], mul * acc[v + 1]));
        }
        named_barrier_sync(5 + w, 128);  // the warpgroup's rows staged
#pragma unroll
        for (int j = 0; j < 64 * (D / 8) / 128; ++j) {
          const int row = (tid + 128 * j) / (D / 8), c8 = (tid + 128 * j) % (D / 8);
          const uint4 x = ld_shared_v4_b32(chunk_at(row, c8));
          if (64 * w + row < B.keys) *reinterpret_cast<uint4*>(dst + (k_row0 + row) * k_stride + hk * D + 8 * c8) = x;
        }
      };
      out(dV, dv, 1.f);
      named_barrier_sync(5 + w, 128);  // dV's rows read: the staging rows free for dK
      out(dK, dk, scale);
    } else {
      // Straight from the accumulators: 4-byte stores, a warp's eight rows 16 bytes each.
#pragma unroll
      for (int v = 0; v < KV; v += 2) {
        const int key = lkv.row + P.kv_values.at[v].row, c = lkv.col + P.kv_values.at[v].col;
        if (64 * w + key < B.keys) {
          const long long at = (k_row0 + key) * k_stride + hk * D + c;
          *reinterpret_cast<unsigned*>(dK + at) = pack2<BF16>(scale * dk[v], scale * dk[v + 1]);
          *reinterpret_cast<unsigned*>(dV + at) = pack2<BF16>(dv[v], dv[v + 1]);
        }
      }
    }
    TL_PROBE_END(Probe::epilogue, probe::kNoStage, B.kb);
    if constexpr (NB > 1 && !kKvFreeEarly) kv_free();
    // dkv_in_ds: both warpgroups' staging done before either writes the next block's dS into the other's buffer.
    if constexpr (NB > 1 && P.dkv_in_ds && CFG.dkv_stage) named_barrier_sync(3, 256);
    g0 += B.tiles;
  }

  // [SECTION] deferred dQ conversions (dq_defer): the tiles this CTA's blocks completed, listed by the writer; each
  // thread converts its own chunks of each (as it staged them: coalesced, all of its loads in flight at once).
  if constexpr (CFG.dq_defer) {
    named_barrier_sync(2, 288);  // both consumer warpgroups and the writer's list
    const unsigned n = ld_shared_b32(base + P.defer_offset);
    TL_PROBE_BEGIN(Probe::dq_store, probe::kNoStage, static_cast<int>(n));
    for (unsigned i = 0; i < n; ++i) {
      // The list holds the tile counter: tile it of the walk of key block blk.
      int it = static_cast<int>(ld_shared_b32(base + P.defer_offset + 4u * (1 + i))), blk = 0;
      KeyBlock B = key_block(0);
      if constexpr (NB > 1)
        while (it >= B.tiles) {
          it -= B.tiles;
          B = key_block(++blk);
        }
      const DqTile x = dq_tile(B.tile_head(hk, group, it), B.tile_m(it));
      float4 v[DQV / 4];
#pragma unroll
      for (int k = 0; k < DQV / 4; ++k) v[k] = __ldcg(x.acc + P.dq_chunk(ctid, k) / 16);
#pragma unroll
      for (int k = 0; k < DQV / 4; ++k) convert_chunk(x, ctid, k, v[k]);
    }
    TL_PROBE_END(Probe::dq_store, probe::kNoStage, static_cast<int>(n));
  }
  TL_PROBE_FLUSH();
  if (ctid == 0) TL_PROBE_BLOCK_END();
}

}  // namespace tl
