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
// This is mla.sparse_decode with every query token a request of its own and a cache that needs no dequantization:
// the consumer warpgroups are mla.decode's code (mla_consumer.cuh, SPARSE with MAX_LOGITS: Q K^T, online softmax,
// P V, the epilogue), on mla.decode's tiles, and the block walk is sparse decode's (BlockCursor). A prefill has
// enough query tokens to fill the GPU, so no request is split: the host deals whole tokens out to the parts (grid
// (num_parts, m_tiles), m_tiles = ceil(heads / 64), each part a persistent CTA over its tokens), and the merge never
// runs (every num_splits step is 1).
//
// Producer (warpgroup 0): warp w owns rows 16w .. 16w + 15 of each 64-entry block, lane l row 16w + l % 16, whose
// index it reads itself a block ahead (lanes l and l + 16 read the same entry), and half of that row's 72 16-byte
// chunks (the plan's `gather`): 36 cp.async straight from the KV row into the swizzled stage, zero-filled for an
// invalid index (so P V reads 0, never a stale NaN). The block's copies are one group; the warp then waits for the
// previous block's group, fences the async proxy and arrives on that stage's full barrier (128 arrivals), so two
// blocks' gathers are in flight while the consumers compute. Lane 0 of warp 0 loads each token's Q tile by TMA
// after its first block's copies (and after publishing the block before it, which the consumers must see before
// they release Q).
//
// Shared memory: mla.decode's plan, then the stages' 8-byte valid masks (mla_sparse_prefill_plan.hpp). The full
// barriers count 128 producer arrivals; the empty ones 2 (consumers).
#pragma once

#include "tile/cp_async.cuh"
#include "mla/mla_sparse_decode.cuh"
#include "mla/mla_sparse_prefill_plan.hpp"

namespace tl {
namespace mla_prefill_detail {

// How many of the newest copy groups may stay in flight when the previous block is published (a compile-time
// argument of a generic lambda: cp.async.wait_group takes a constant).
template <int N>
struct Newer {
  static constexpr int value = N;
};

}  // namespace mla_prefill_detail

template <MlaSparsePrefillConfig C>
__global__ void __launch_bounds__(make_plan(C).mma.threads, 1)
    mla_sparse_prefill(const __grid_constant__ TmaDescriptor tma_q, const unsigned short* __restrict__ kv,
                       const int* __restrict__ indices, const int* __restrict__ topk_length,
                       const float* __restrict__ sink, unsigned short* __restrict__ O, float* __restrict__ max_logits,
                       float* __restrict__ LSE, const int* __restrict__ parts, const int* __restrict__ num_splits,
                       int seq_q, int heads, int topk, long long num_kv) {
  using namespace mla_detail;
  using namespace mla_sparse_detail;
  using namespace mla_prefill_detail;
  static constexpr MlaSparsePrefillPlan SP = make_plan(C);
  static constexpr MlaDecodePlan P = SP.mma;
  static constexpr MlaDecodeConfig CC = consumer_config(C);
  static constexpr auto panels = tabulate<P.panels>([](int p) { return 2u * P.tile(0, p * P.panel_cols); });
  static_assert(SP.gather.linear(), "a copy's place is the thread's coordinate plus the value's (tabulated) one");

  extern __shared__ unsigned char smem_raw[];
  const unsigned base = smem_align<1024>(smem_raw);
  const unsigned q_full = base + P.q_full_bar(), q_empty = base + P.q_empty_bar();

  const int m0 = blockIdx.y * P.rows, part = blockIdx.x;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  if (threadIdx.x == 0) {
    prefetch_tensormap(&tma_q);
    for (int s = 0; s < 2; ++s) {
      mbar_init(base + P.full_bar(s), 128);
      mbar_init(base + P.empty_bar(s), 2);
    }
    mbar_init(q_full, 1);
    mbar_init(q_empty, 2);
    fence_mbarrier_init();
    TL_PROBE_BLOCK_BEGIN();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<SP.producer_regs>();
    TL_PROBE_WARP_INIT();
    // Copy m of this thread: element src_step[m] of its KV row (from its first column) to byte panel_at[m] +
    // (row_at ^ in_panel[m]) of a stage (the plan's comment). Only 4 distinct xors: they stay in registers across
    // the block's 36 copies, the panel offsets are immediates.
    static constexpr auto col_of = [](int m) { return SP.gather(0, 8 * m).col; };
    static constexpr auto panel_at = tabulate<SP.copies>(
        [](int m) { return 2u * P.tile(0, col_of(m) / P.panel_cols * P.panel_cols); });
    static constexpr auto in_panel = tabulate<SP.copies>([](int m) { return 2u * P.tile(0, col_of(m) % P.panel_cols); });
    static constexpr auto src_step = tabulate<SP.copies>(col_of);
    const TileCoord at = SP.gather(tid, 0);
    const unsigned row_at = 2u * static_cast<unsigned>(P.tile(at.row, at.col));
    int it = 0, qn = 0;
    bool pending = false;  // block it - 1's copies are issued and its stage not yet published
    // The previous block's stage, once its copies (all but the N newest groups) have landed.
    const auto publish = [&](auto newer) {
      if (!pending) return;
      TL_PROBE_BEGIN(mla_prefill_probe::copy_wait, (it - 1) & 1, it - 1);
      cp_async_wait<decltype(newer)::value>();
      fence_proxy_async_smem();  // the copies (generic proxy) visible to the wgmma
      mbar_arrive(base + P.full_bar((it - 1) & 1));
      pending = false;
      TL_PROBE_END(mla_prefill_probe::copy_wait, (it - 1) & 1, it - 1);
    };
    const PartWalk walk(parts, part, seq_q);
    // This lane's index entry of the next block, read a block ahead.
    BlockCursor ahead(walk, topk_length, topk, 1, heads, m0);
    int next = ahead.entry(indices, topk, warp, lane % 16);
    ahead.advance(topk_length, topk, 1, heads, m0);
    for (int k = 0; k < walk.count; ++k) {
      const int r = walk.first + k;
      const int L = sparse_length(topk_length, topk, 1, r);
      int b0, b1, split;
      walk.range<false>(r, L, 1, heads, m0, heads, b0, b1, split);
      // Q waits for both consumers to be done with the previous token's Q (one TMA box per panel).
      auto load_q = [&] {
        if (warp != 0) return;
        if (qn > 0) mbar_wait(q_empty, (qn - 1) & 1);
        if (lane == 0) {
          mbar_expect_tx(q_full, P.tile_bytes);
#pragma unroll
          for (int p = 0; p < P.panels; ++p)
            tma_load(base + P.off_q + panels[p], &tma_q, q_full, p * P.panel_cols, r * heads + m0);
        }
        ++qn;
      };
      if (b0 == b1) {
        publish(Newer<0>{});
        load_q();
      }
      for (int blk = b0; blk < b1; ++blk, ++it) {
        const int s = it & 1;
        TL_PROBE_BEGIN(mla_prefill_probe::index, s, blk);
        const int idx = next;
        next = ahead.entry(indices, topk, warp, lane % 16);
        ahead.advance(topk_length, topk, 1, heads, m0);
        const bool valid = entry_valid(idx, num_kv);
        const unsigned mask = __ballot_sync(0xffffffffu, valid) & 0xffffu;
        const unsigned short* src = kv + (valid ? static_cast<long long>(idx) * kMlaDimQK : 0) + at.col;
        TL_PROBE_END(mla_prefill_probe::index, s, blk);
        TL_PROBE_BEGIN(mla_prefill_probe::load_wait, s, blk);
        mbar_wait(base + P.empty_bar(s), ((it >> 1) & 1) ^ 1);
        TL_PROBE_END(mla_prefill_probe::load_wait, s, blk);
        TL_PROBE_BEGIN(mla_prefill_probe::load_issue, s, blk);
        const unsigned stage = base + P.kv_stage(s);
#pragma unroll
        for (int m = 0; m < SP.copies; ++m) 
          cp_async_16(stage + panel_at[m] + (row_at ^ in_panel[m]), src + src_step[m], valid ? 16 : 0);
        cp_async_commit();
        if (lane == 0)
          st_shared_b16(base + SP.valid_mask(s) + 2u * static_cast<unsigned>(warp), static_cast<unsigned short>(mask));
        TL_PROBE_END(mla_prefill_probe::load_issue, s, blk);
        publish(Newer<1>{});
        pending = true;
        if (blk == b0) load_q();
      }
    }
    publish(Newer<0>{});
    TL_PROBE_FLUSH();
  } else {
    setmaxnreg_inc<SP.consumer_regs>();
    ConsumerArgs args{base, O, LSE, nullptr, parts, num_splits, nullptr, nullptr, nullptr, seq_q, 1, heads,
                      topk_length, sink, topk, 1, base + SP.valid_mask(0)};
    args.max_logits = max_logits;
    if (wg == 1) mla_consumer<CC, 0, true, true>(args);
    else mla_consumer<CC, 1, true, true>(args);
  }
}

}  // namespace tl
