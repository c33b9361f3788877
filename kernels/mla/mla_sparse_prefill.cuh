// mla.sparse_prefill: DeepSeek Sparse Attention prefill over a bf16 KV (FlashMLA's sparse prefill) — each query token
// attends to the KV rows its topk indices name, gathered by cp.async, bf16 wgmma.
//
// Per query token r of `seq_q`, its `heads` query rows (Q [seq_q, heads, 576] bf16) attend to the KV rows listed in
// indices[r, 0 .. len), len = min(topk_length[r], topk) (topk without topk_length); KV [num_kv, 576] bf16, V its
// first 512 columns. An index < 0 or >= num_kv is invalid and attends nothing. S = Q K^T / sqrt(576), O = softmax(S)
// V; a row with no valid index gets O = 0, LSE = +inf and max_logits = -inf (FlashMLA's convention). With `sink` (f32
// per head, or null), O is scaled by exp(LSE) / (exp(LSE) + exp(sink[h])), LSE and max_logits unchanged. Outputs: O
// [seq_q, heads, 512] bf16, max_logits and LSE [seq_q, heads] f32 (natural log; max_logits = the largest q.k / 24).
//
// This is mla.sparse_decode with every query token a request of its own and a cache that needs no dequantization, on
// mla.decode's tiles, with sparse decode's block walk (BlockCursor). The consumers (C.chain, the default) are chained
// over pairs of blocks as FlashMLA's (mla_consumer.cuh's chained_consumer); unchained (chain=false, or qk_warpgroups 2) they are
// mla.decode's code (mla_consumer.cuh, SPARSE with MAX_LOGITS: Q K^T, online softmax, P V, the epilogue). A prefill has
// enough query tokens to fill the GPU, so no request is split: the host deals whole tokens out to the parts (grid
// (num_parts, m_tiles), m_tiles = ceil(heads / 64), each part a persistent CTA over its tokens per head tile; with
// C.head_order (chained only) the grid is (m_tiles, num_parts), so a part's head tiles are consecutive CTAs, as in
// FlashMLA's heads-fastest grid, and with head_order 2 one cluster), and the merge never runs (every num_splits step
// is 1). With C.dynamic (chained only; the default there) the host's runs only fix the grid: CTA `part` runs token
// `part` first and then whichever token its head tile's counter in global memory (token_counter) gives it next, so
// that the CTAs end together (the static runs left the SMs idle 4% of the kernel waiting for the busiest on an H100).
// With C.rope_regs (chained only) consumer 0 holds Q's RoPE panel in registers as the A operand of its Q K^T's last
// four k16 steps (mla.decode's rope_regs), with 224 registers against consumer 1's 216 and the producer's 64.
//
// Producer (warpgroup 0): warp w owns rows 16w .. 16w + 15 of each 64-entry block; lanes 0..15 read the warp's 16
// index entries a block ahead, and each lane takes the entries of its 4 rows from them by shuffles. Lane l copies
// chunk l % 8 of its rows' 9 panel rows (the plan's `gather`: a copy instruction moves 4 whole 128-byte panel rows):
// 36 cp.async straight from the KV rows into the swizzled stage, zero-filled for an invalid index (so P V reads 0,
// never a stale NaN). Each thread's copies then arrive on the stage's full barrier by themselves when they land
// (cp.async.mbarrier.arrive.noinc), and lane 0 of each warp arrives after writing its 16 bits of the stage's valid
// mask (132 arrivals): the producer never waits for its copies, only for a free stage, so it runs a stage ahead of
// the consumers (chained: a stage is filled in two halves, in the order the chain frees them). As FlashMLA's sparse
// prefill, the consumers' wgmma read the cp.async writes after the barrier with no proxy fence. Lane 0 of warp 0
// loads each token's Q tile by TMA after its first block's copies. C.l2_prefetch (default) asks the L2 for 256 bytes
// around each copy, as FlashMLA's gather does; C.kv_evict_last adds its evict_last policy.
//
// Measured on an H100 beside FlashMLA (docs/perf.md): unchained 0.81-0.98x at s_q 4096, h_q 128, topk 2048, s_kv
// 8192 (its one Q K^T warpgroup runs Q K^T, the softmax and P V of a block one after another, so the tensor cores
// idle during the softmax); chained 1.00-1.16x the unchained schedule at the three shapes, 0.92-0.99x FlashMLA at
// s_kv 8192, 0.94-1.02x at 32768, 1.08-1.10x at 64 heads; a token's head tiles as consecutive CTAs (head_order,
// auto at 128 heads) 1.02-1.03x the grid with them 66 CTAs apart, by the minima (0.96x FlashMLA at s_kv 8192); the
// dynamic token queue 1.025-1.038x the static runs at the three anchors (0.99x FlashMLA at s_kv 8192 by the minima,
// 1.05x at 32768 and at 64 heads).
//
// Shared memory: mla.decode's plan, then the stages' 8-byte valid masks and (chained) the halves' barriers
// (mla_sparse_prefill_plan.hpp). The full barriers count the plan's full_arrivals; the empty ones 2 (unchained: both
// consumers) or 128 (chained: every thread of the one warpgroup that frees the half).
#pragma once

#include "tile/cp_async.cuh"
#include "mla/mla_sparse_decode.cuh"
#include "mla/mla_sparse_prefill_plan.hpp"

namespace tl {
namespace mla_prefill_detail {

// The CTA's part (its run of tokens) and head tile (64 query heads): grid (num_parts, m_tiles) with C.head_order 0,
// (m_tiles, num_parts) otherwise, so that a token's head tiles are consecutive CTAs (and, head_order 2, one cluster).
template <MlaSparsePrefillConfig C>
TL_DEVICE_INLINE int cta_part() {
  return C.head_order ? blockIdx.y : blockIdx.x;
}
template <MlaSparsePrefillConfig C>
TL_DEVICE_INLINE int cta_head_tile() {
  return C.head_order ? blockIdx.x : blockIdx.y;
}

}  // namespace mla_prefill_detail

template <MlaSparsePrefillConfig C>
__global__ void __launch_bounds__(make_plan(C).mma.threads, 1)
    mla_sparse_prefill(const __grid_constant__ TmaDescriptor tma_q, const unsigned short* __restrict__ kv,
                       const int* __restrict__ indices, const int* __restrict__ topk_length,
                       const float* __restrict__ sink, unsigned short* __restrict__ O, float* __restrict__ max_logits,
                       float* __restrict__ LSE, const int* __restrict__ parts, const int* __restrict__ num_splits,
                       int seq_q, int heads, int topk, long long num_kv, int* __restrict__ token_counter) {
  using namespace mla_detail;
  using namespace mla_sparse_detail;
  static constexpr MlaSparsePrefillPlan SP = make_plan(C);
  static constexpr MlaDecodePlan P = SP.mma;
  static constexpr MlaDecodeConfig CC = consumer_config(C);
  static_assert(SP.gather.linear(), "a copy's place is the thread's coordinate plus the value's (tabulated) one");

  extern __shared__ unsigned char smem_raw[];
  const unsigned base = smem_align<1024>(smem_raw);

  static_assert(C.head_order == 0 || chained(C), "mla_consumer (unchained) reads the grid as (parts, head tiles)");
  static_assert(!C.dynamic || chained(C), "the dynamic token queue is the chained consumers'");
  const int m0 = mla_prefill_detail::cta_head_tile<C>() * P.rows, part = mla_prefill_detail::cta_part<C>();
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  if (threadIdx.x == 0) {
    prefetch_tensormap(&tma_q);
    // chain: mla.decode's ring barriers for the stages' halves L, the plan's for halves R; one consumer frees each.
    init_ring_barriers<CC>(base, SP.full_arrivals, chained(C) ? 128 : 2);
    if constexpr (chained(C))
      for (int s = 0; s < 2; ++s) {
        mbar_init(base + SP.full_hi(s), SP.full_arrivals);
        mbar_init(base + SP.empty_hi(s), 128);
      }
    fence_mbarrier_init();
    TL_PROBE_BLOCK_BEGIN();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<SP.producer_regs>();
    TL_PROBE_WARP_INIT();
    // Copy (i, p) of this thread (value 8 (p + 9 i) of the gather): byte row_at[i] + panel_at[p] of a stage, from
    // element 64 p of its row i's KV row (from the thread's first column); row_at[i] is the tile's offset of the
    // row, from the warp's first row, at the thread's column. The plan's comment says why this is the tile's layout.
    static constexpr auto copy_of = [](int i, int p) { return SP.gather(0, 8 * (p + P.panels * i)); };
    static constexpr auto panel_at = tabulate<P.panels>([](int p) { return 2u * P.tile(0, copy_of(0, p).col); });
    static constexpr auto row_step = tabulate<SP.row_groups>([](int i) { return copy_of(i, 0).row; });
    const TileCoord at = SP.gather(tid, 0);
    unsigned row_at[SP.row_groups];
#pragma unroll
    for (int i = 0; i < SP.row_groups; ++i) row_at[i] = 2u * static_cast<unsigned>(P.tile(at.row + row_step[i], at.col));
    int it = 0, qn = 0;
    const unsigned long long policy = C.kv_evict_last ? l2_policy_evict_last() : 0ull;
    const PartWalk walk(parts, part, seq_q);
    // Lanes 0..15: the warp's index entries of the next block, read a block ahead.
    BlockCursor ahead(walk, topk_length, topk, 1, heads, m0);
    int next = ahead.entry(indices, topk, warp, lane);
    ahead.advance(topk_length, topk, 1, heads, m0);
    // The panels of a block into stage s (fill parity ph) from the KV rows of the entries lanes 0..15 hold (idx):
    // all 9 (h < 0) or a chain half (h 0: [0, half_panels) on the stage's barriers, h 1: the rest on the plan's
    // half-R barriers). with_mask: this load writes the stage's valid mask (the block's first); index_open: the
    // caller began the index region, which ends once the rows' addresses are known.
    const auto load_panels = [&](int idx, int s, int h, unsigned ph, bool with_mask, bool index_open, int blk) {
      const unsigned mask = __ballot_sync(0xffffffffu, entry_valid(idx, num_kv)) & 0xffffu;
      // Row i's KV row (the KV's first row when invalid: a valid address for the zero fill).
      const unsigned short* src[SP.row_groups];
      int bytes[SP.row_groups];
#pragma unroll
      for (int i = 0; i < SP.row_groups; ++i) {
        const int t = (at.row + row_step[i]) % SP.rows_per_warp;  // the row's place among the warp's 16
        const int e = __shfl_sync(0xffffffffu, idx, t);
        const bool ok = (mask >> t) & 1u;
        src[i] = kv + (ok ? static_cast<long long>(e) * kMlaDimQK : 0) + at.col;
        bytes[i] = ok ? 16 : 0;
      }
      if (index_open) TL_PROBE_END(mla_prefill_probe::index, s, blk);
      TL_PROBE_BEGIN(mla_prefill_probe::load_wait, s, blk);
      mbar_wait(base + (h == 1 ? SP.empty_hi(s) : P.empty_bar(s)), ph ^ 1);
      TL_PROBE_END(mla_prefill_probe::load_wait, s, blk);
      TL_PROBE_BEGIN(mla_prefill_probe::load_issue, s, blk);
      const unsigned stage = base + P.kv_stage(s), full = base + (h == 1 ? SP.full_hi(s) : P.full_bar(s));
#pragma unroll
      for (int i = 0; i < SP.row_groups; ++i)
#pragma unroll
        for (int p = 0; p < P.panels; ++p) {
          if (h >= 0 && (p >= SP.half_panels) != (h == 1)) continue;
          const unsigned dst = stage + panel_at[p] + row_at[i];
          const unsigned short* from = src[i] + copy_of(0, p).col;
          if constexpr (C.kv_evict_last) cp_async_16_l2_256_hint(dst, from, bytes[i], policy);
          else if constexpr (C.l2_prefetch) cp_async_16_l2_256(dst, from, bytes[i]);
          else cp_async_16(dst, from, bytes[i]);
        }
      cp_async_mbar_arrive(full);
      if (lane == 0) {
        if (with_mask)
          st_shared_b16(base + SP.valid_mask(s) + 2u * static_cast<unsigned>(warp), static_cast<unsigned short>(mask));
        mbar_arrive(full);
      }
      TL_PROBE_END(mla_prefill_probe::load_issue, s, blk);
    };
    if constexpr (C.dynamic) {
      // Token `part` first, then the claims on this head tile's counter: producer warp 0's lane 0 claims the next
      // token when it starts one (the atomic's latency behind the token's loads) and hands it to the other producer
      // warps at the token's end through a two-slot ring (a named barrier of the 128 producer threads). Every CTA
      // ends on exactly one claim past the tokens, so the grid's last claim (value max(0, s_q - G) + G - 1, G the
      // parts) knows every CTA has made its last one and sets the counter back to 0 for the next launch (it is zero
      // at the first: a scratch tensor). The consumers learn each token, and the end (a token >= s_q), from the
      // token slot, written before the token's Q load and read after its Q barrier.
      const int G = C.head_order ? gridDim.y : gridDim.x;
      int* const counter = token_counter + m0 / P.rows;
      const int last_claim = max(0, seq_q - G) + G - 1;
      const unsigned token_slot = base + SP.off_token;
      int claimed = 0, tn = 0;
      const auto claim = [&] {
        if (warp == 0 && lane == 0) claimed = atomicAdd(counter, 1);
      };
      // The claim made at the token's start, to every producer thread (slot tn & 1 of the ring).
      const auto take = [&]() -> int {
        const unsigned slot = token_slot + 8u + 4u * static_cast<unsigned>(tn++ & 1);
        if (warp == 0 && lane == 0) {
          if (claimed == last_claim) atomicExch(counter, 0);
          st_shared_b32(slot, static_cast<unsigned>(G + claimed));
        }
        named_barrier_sync(6, 128);
        return static_cast<int>(ld_shared_b32(slot));
      };
      // Token r's entries of block blk (lanes 0..15: this warp's 16; -1 past its length).
      const auto entry = [&](int r, int L, int blk) {
        const int pos = blk * kMlaBlock + 16 * warp + lane;
        return lane < 16 && pos < L ? __ldg(indices + static_cast<long long>(r) * topk + pos) : -1;
      };
      int r = part;
      if (r >= seq_q) {
        claim();
        r = take();
      }
      while (r < seq_q) {
        claim();
        const int L = sparse_length(topk_length, topk, 1, r);
        const int b0 = 0, b1 = (L + kMlaBlock - 1) / kMlaBlock;
        const auto load_q = [&] {
          if (warp == 0) {
            // The consumers have read the previous token once both released its Q.
            if (qn > 0) mbar_wait(base + P.q_empty_bar(), (qn - 1) & 1);
            if (lane == 0) st_shared_b32(token_slot, static_cast<unsigned>(r));
            load_request_q<CC>(&tma_q, base, r, heads, m0, lane, qn);
          }
        };
        if (b0 == b1) load_q();
        // As the static walk's pairs below, each pair's first block's entries read a pair ahead (the token's first
        // block's at its start).
        int nxt = entry(r, L, b0);
        for (int blk = b0; blk < b1; blk += 2, ++it) {
          const unsigned ph = it & 1;
          TL_PROBE_BEGIN(mla_prefill_probe::index, 0, blk);
          const int idx0 = nxt;
          const int idx1 = blk + 1 < b1 ? entry(r, L, blk + 1) : -1;
          nxt = blk + 2 < b1 ? entry(r, L, blk + 2) : -1;
          load_panels(idx0, 0, 0, ph, true, true, blk);
          if (blk == b0) load_q();
          load_panels(idx1, 1, 1, ph, true, false, blk + 1);
          load_panels(idx0, 0, 1, ph, false, false, blk);
          load_panels(idx1, 1, 0, ph, false, false, blk + 1);
        }
        r = take();
      }
      // The consumers' end: a token past the last, published as a Q barrier phase of its own (no copy).
      if (warp == 0) {
        if (qn > 0) mbar_wait(base + P.q_empty_bar(), (qn - 1) & 1);
        if (lane == 0) {
          st_shared_b32(token_slot, static_cast<unsigned>(r));
          mbar_arrive(base + P.q_full_bar());
        }
      }
    } else
    for (int k = 0; k < walk.count; ++k) {
      const int r = walk.first + k;
      const int L = sparse_length(topk_length, topk, 1, r);
      int b0, b1, split;
      walk.range<false>(r, L, 1, heads, m0, heads, b0, b1, split);
      auto load_q = [&] {
        if (warp == 0) load_request_q<CC>(&tma_q, base, r, heads, m0, lane, qn);
      };
      if (b0 == b1) load_q();
      if constexpr (chained(C)) {
        // A pair's halves in the order the consumers free them (chained_consumer): A's L, B's R (each with its
        // block's mask), A's R, B's L. An odd request's last pair gets a B of invalid entries (zero rows, mask 0).
        for (int blk = b0; blk < b1; blk += 2, ++it) {
          const unsigned ph = it & 1;
          TL_PROBE_BEGIN(mla_prefill_probe::index, 0, blk);
          const int idx0 = next;
          next = ahead.entry(indices, topk, warp, lane);
          ahead.advance(topk_length, topk, 1, heads, m0);
          int idx1 = -1;
          if (blk + 1 < b1) {
            idx1 = next;
            next = ahead.entry(indices, topk, warp, lane);
            ahead.advance(topk_length, topk, 1, heads, m0);
          }
          load_panels(idx0, 0, 0, ph, true, true, blk);
          if (blk == b0) load_q();
          load_panels(idx1, 1, 1, ph, true, false, blk + 1);
          load_panels(idx0, 0, 1, ph, false, false, blk);
          load_panels(idx1, 1, 0, ph, false, false, blk + 1);
        }
        continue;
      }
      for (int blk = b0; blk < b1; ++blk, ++it) {
        const int s = it & 1;
        TL_PROBE_BEGIN(mla_prefill_probe::index, s, blk);
        const int idx = next;
        next = ahead.entry(indices, topk, warp, lane);
        ahead.advance(topk_length, topk, 1, heads, m0);
        load_panels(idx, s, -1, (it >> 1) & 1, true, true, blk);
        if (blk == b0) load_q();
      }
    }
    // Every copy has landed before the CTA exits (its barrier arrivals too).
    cp_async_wait<0>();
    TL_PROBE_FLUSH();
  } else if constexpr (SP.consumer1_regs != SP.consumer_regs) {
    // rope_regs (chained): each consumer its own limit, set in its own branch, its arguments built after it (as
    // mla.sparse_decode's: built before the branch, ptxas holds them under both limits).
    const auto args = [&] {
      ConsumerArgs a{base, O, LSE, nullptr, parts, num_splits, nullptr, nullptr, nullptr, seq_q, 1, heads,
                     topk_length, sink, topk, 1, base + SP.valid_mask(0)};
      a.max_logits = max_logits;
      if constexpr (C.dynamic) a.token_slot = base + SP.off_token;
      return a;
    };
    static_assert(chained(C), "the consumers' limits differ with rope_regs, which is the chained consumers'");
    if (wg == 1) {
      setmaxnreg_inc<SP.consumer_regs>();
      chained_consumer<CC, 0, true, SP.off_half_bar, C.head_order != 0, C.dynamic>(args());
    } else {
      setmaxnreg_inc<SP.consumer1_regs>();
      chained_consumer<CC, 1, true, SP.off_half_bar, C.head_order != 0, C.dynamic>(args());
    }
  } else {
    setmaxnreg_inc<SP.consumer_regs>();
    ConsumerArgs args{base, O, LSE, nullptr, parts, num_splits, nullptr, nullptr, nullptr, seq_q, 1, heads,
                      topk_length, sink, topk, 1, base + SP.valid_mask(0)};
    args.max_logits = max_logits;
    if constexpr (chained(C)) {
      // mla_consumer.cuh's chained consumers (sparse), the halves' barriers after the valid masks.
      // dynamic: the tokens from the producer's token slot.
      if constexpr (C.dynamic) args.token_slot = base + SP.off_token;
      if (wg == 1) chained_consumer<CC, 0, true, SP.off_half_bar, C.head_order != 0, C.dynamic>(args);
      else chained_consumer<CC, 1, true, SP.off_half_bar, C.head_order != 0, C.dynamic>(args);
    } else if (wg == 1) {
      mla_consumer<CC, 0, true, true>(args);
    } else {
      mla_consumer<CC, 1, true, true>(args);
    }
  }
}

}  // namespace tl
