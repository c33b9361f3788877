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
// Producer (warpgroup 0): warp w owns rows 16w .. 16w + 15 of each 64-entry block; lanes 0..15 read the warp's 16
// index entries a block ahead, and each lane takes the entries of its 4 rows from them by shuffles. Lane l copies
// chunk l % 8 of its rows' 9 panel rows (the plan's `gather`: a copy instruction moves 4 whole 128-byte panel rows):
// 36 cp.async straight from the KV rows into the swizzled stage, zero-filled for an invalid index (so P V reads 0,
// never a stale NaN). Each thread's copies then arrive on the stage's full barrier by themselves when they land
// (cp.async.mbarrier.arrive.noinc), and lane 0 of each warp arrives after writing its 16 bits of the stage's valid
// mask (132 arrivals): the producer never waits for its copies, only for a free stage, so it runs a stage ahead of
// the consumers. As FlashMLA's sparse prefill, the consumers' wgmma read the cp.async writes after the barrier with
// no proxy fence. Lane 0 of warp 0 loads each token's Q tile by TMA after its first block's copies. C.l2_prefetch
// (default) asks the L2 for 256 bytes around each copy, as FlashMLA's gather does.
//
// Measured on H200s beside FlashMLA (docs/perf.md): 0.90-0.96x at s_q 4096, h_q 128, topk 2048, s_kv 8192, 1.00-1.03x
// at s_kv 32768 and at 64 heads; on an H100 0.81-0.98x, 0.92-1.01x and 0.95-0.99x over three runs. The producer
// waits for free stages (the gather keeps up); the consumers bound it: the one that computes Q K^T runs Q K^T, the
// softmax and P V of a block one after another (mla.decode's order), so the tensor cores idle during the softmax.
// C.paired_blocks (off) gives each consumer warpgroup its own block of a pair (paired_consumer below): the softmax
// halves per block, but both stages are in use through a pair, so the gather no longer overlaps the work (0.88-1.03x
// the defaults on an H100, slower in 11 of 12 runs).
//
// Shared memory: mla.decode's plan, then the stages' 8-byte valid masks (mla_sparse_prefill_plan.hpp). The full
// barriers count the plan's full_arrivals; the empty ones 2 (consumers).
#pragma once

#include "tile/cp_async.cuh"
#include "mla/mla_sparse_decode.cuh"
#include "mla/mla_sparse_prefill_plan.hpp"

namespace tl {
namespace mla_prefill_detail {

// C.paired_blocks: consumer warpgroup CONSUMER (0 or 1) of a pair of blocks (a request's blocks 2i and 2i + 1, in
// KV stages it and it + 1) computes S = Q K^T of block 2i + CONSUMER for the tile's 64 rows, so both warpgroups run
// Q K^T and the softmax, each of its own block, instead of one warpgroup running them for every block while the other
// waits (mla.decode's order). The two exchange row maxima (barrier 1; both then hold the same maxima, fmaxf of the
// same values), write their P (consumer 0: into its stage's RoPE panel, read by that block's Q K^T alone and complete
// by then; consumer 1: into mla.decode's P tile) and after barrier 2 each adds both blocks' P V for its own 256 V
// columns, its own block's first. Each keeps its own blocks' row sums, added at the end.
//
// Both stages are in use through a whole pair, so the stages fill and empty in halves (the plan's half_panels) for
// the gather to overlap the pair's work: half A (V columns 0 .. 255) is read by consumer 0's P V alone, half B (the
// rest) by consumer 1's P V and, for P in its RoPE panel, consumer 0's first. Consumer 0 releases its stage's A and B
// after its first P V, consumer 1 its stage's B after its first P V (consumer 0 at once); the second P V's release
// the other halves. The producer fills a pair in that order (block 2i's A, 2i + 1's B, 2i's B, 2i + 1's A), and each
// consumer's Q K^T reads its stage's first-filled half first. A request with an odd block count ends with a pair of
// one block: consumer 1 computes no S (its maxima -inf, its P zeros: the missing block's P V reads the present
// block's V).
template <MlaSparsePrefillConfig C, int CONSUMER>
TL_DEVICE_INLINE void paired_consumer(const mla_detail::ConsumerArgs& a) {
  using namespace wgmma_ops;
  using namespace mla_detail;
  static constexpr MlaSparsePrefillPlan SP = make_plan(C);
  static constexpr MlaDecodeConfig CC = consumer_config(C);
  static constexpr MlaDecodePlan P = SP.mma;
  static_assert(P.s_cols == kBlock, "each warpgroup's S covers its whole block");
  static constexpr auto s_vals = tabulate<P.acc_s.num_values()>([](int v) { return P.acc_s(0, v); });
  static constexpr auto o_vals = tabulate<P.acc_o.num_values()>([](int v) { return P.acc_o(0, v); });
  // Q K^T's k16 steps (4 a panel), P V's, and consumer 0's P in its stage (the P tile's layout is one panel's:
  // test_mla_sparse_prefill checks it).
  static constexpr auto qk_steps = tabulate<kMlaDimQK / 16>([](int i) { return 2u * P.tile(0, 16 * i); });
  static constexpr int half_steps = SP.half_panels * P.panel_cols / 16;
  static constexpr auto p_steps = tabulate<kBlock / 16>([](int i) { return 2u * P.p(0, 16 * i); });
  static constexpr auto v_steps =
      tabulate<kBlock / 16>([](int i) { return 2u * P.tile(16 * i, CONSUMER * P.acc_o.cols()); });
  static constexpr unsigned p_panel = 2u * P.tile(0, kDV);
  constexpr int c = CONSUMER;
  const float kInf = __int_as_float(0x7f800000);
  constexpr float kScaleLog2 = 1.4426950408889634f / 24.0f;  // 1/sqrt(576) times log2(e)
  const unsigned base = a.base, q_base = base + P.off_q;
  const unsigned q_full = base + P.q_full_bar(), q_empty = base + P.q_empty_bar();
  const auto full = [&](int s, int h) { return base + (h ? SP.full_b(s) : P.full_bar(s)); };
  const auto empty = [&](int s, int h) { return base + (h ? SP.empty_b(s) : P.empty_bar(s)); };
  const int heads = a.heads, m0 = blockIdx.y * P.rows, tid = threadIdx.x % 128;
  TL_PROBE_WARP_INIT_IF(tid / 32 == 0);
  const TileCoord o_at = P.acc_o(tid, 0);
  const int rl[2] = {o_at.row + o_vals[0].row, o_at.row + o_vals[2].row};
  const bool row_first = o_at.col == 0;
  const TileCoord s_at = P.acc_s(tid, 0);
  const int p_at = P.p.layout()(s_at.row, s_at.col);
  const unsigned p_row = 2 * p_at, p_term = 2 * P.p.swizzle().term(p_at);  // in bytes, from a P tile
  static constexpr auto p_vals =
      tabulate<P.acc_s.num_values()>([](int v) { return 2u * P.p.layout()(P.acc_s(0, v).row, P.acc_s(0, v).col); });
  float o[P.acc_o.num_values()];
  float sacc[P.acc_s.num_values()];
  int it = 0, qn = 0;
  const PartWalk walk(a.parts, blockIdx.x, a.batch);
  for (int k = 0; k < walk.count; ++k) {
    const int r = walk.first + k;
    const int L = sparse_length(a.topk_length, a.topk, 1, r);
    int b0, b1, split;
    walk.range<false>(r, L, 1, heads, m0, heads, b0, b1, split);
    float row_m[2] = {-kInf, -kInf}, row_l[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < P.acc_o.num_values(); ++i) o[i] = 0.f;
    mbar_wait(q_full, qn & 1);
    // Whether this warpgroup computes an S in the request's last pair (it hands Q back after that one).
    const bool qk_last = b1 - b0 > c && (c == 0 || (b1 - b0) % 2 == 0);
    for (int blk = b0; blk < b1; blk += 2) {
      const int n = min(2, b1 - blk);                  // blocks in this pair
      const bool mine = c < n;                         // this warpgroup's block exists
      const int s = (it + c) & 1, s0 = it & 1;         // this warpgroup's stage, block 2i's
      const unsigned ph0 = (it >> 1) & 1, ph1 = ((it + 1) >> 1) & 1, ph = c == 0 ? ph0 : ph1;  // fill parities
      const unsigned kv = base + P.kv_stage(s), kv0 = base + P.kv_stage(s0), kv1 = base + P.kv_stage(s0 ^ 1);
      if (mine) {
        TL_PROBE_BEGIN(mla_probe::wait_kv, s, blk + c);
        mbar_wait(full(s, c), ph);
        TL_PROBE_END(mla_probe::wait_kv, s, blk + c);
        TL_PROBE_BEGIN(mla_probe::qk, s, blk + c);
        // S = Q K^T over this stage's first-filled half, then (once it has landed) the other: a wgmma group each.
#pragma unroll
        for (int i = 0; i < P.acc_s.num_values(); ++i) sacc[i] = 0.f;
#pragma unroll
        for (int g = 0; g < 2; ++g) {
          const bool b_half = (g == 0) == (c == 1);  // this group's steps are half B's
          if (g == 1) mbar_wait(full(s, 1 - c), ph);
          wgmma_fence();
#pragma unroll
          for (int j = 0; j < qk_steps.size(); ++j) {
            if ((j >= half_steps) != b_half) continue;
            WgmmaSS<P.s_cols, CC.bf16, 0>::run(sacc, smem_desc_sw128(q_base + qk_steps[j], 16, P.desc_sbo),
                                               smem_desc_sw128(kv + qk_steps[j], 16, P.desc_sbo));
          }
          wgmma_commit();
        }
        wgmma_wait<0>();
        if (blk + 2 >= b1 && tid == 0) mbar_arrive(q_empty);
        TL_PROBE_END(mla_probe::qk, s, blk + c);
        TL_PROBE_BEGIN(mla_probe::softmax, s, blk + c);
        // The tokens whose index the producer found invalid (only blocks with one pay for it).
        const unsigned long long vm = ld_shared_b64(a.valid_base + 8u * static_cast<unsigned>(s));
        if (~vm != 0) {
          const unsigned long long vt = vm >> s_at.col;  // bit c: this thread's column s_at.col + c
#pragma unroll
          for (int v = 0; v < P.acc_s.num_values(); ++v)
            if (!((vt >> s_vals[v].col) & 1ull)) sacc[v] = -kInf;
        }
      } else {
        TL_PROBE_BEGIN(mla_probe::softmax, s, blk + c);
#pragma unroll
        for (int v = 0; v < P.acc_s.num_values(); ++v) sacc[v] = -kInf;
      }
      // Row maxima of both blocks (barrier 1; the other's read of the previous pair's is before its barrier 2).
      float mx[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float v = -kInf;
#pragma unroll
        for (int j = 0; j < kBlock / 8; ++j) v = fmaxf(v, fmaxf(sacc[4 * j + 2 * h], sacc[4 * j + 2 * h + 1]));
        mx[h] = quad_max(v) * kScaleLog2;
        if (row_first) st_shared_f32(base + P.off_max + 4 * P.row_max(rl[h], c), mx[h]);
      }
      named_barrier_sync(1, 256);
      float m_use[2], alpha[2], sum[2] = {0.f, 0.f};
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float other = ld_shared_f32(base + P.off_max + 4 * P.row_max(rl[h], 1 - c));
        const float m_new = fmaxf(row_m[h], fmaxf(mx[h], other));
        m_use[h] = m_new == -kInf ? 0.f : m_new;  // every key masked so far: exp2 gives 0, not NaN
        alpha[h] = exp2_approx(row_m[h] - m_use[h]);
        row_m[h] = m_new;
      }
      // P (zeros for a missing block): consumer 0's into its stage's RoPE panel, consumer 1's into the P tile (read by
      // consumer 0's second P V, complete before it reaches the next pair's barrier 1).
      const unsigned p_own = c == 0 ? kv0 + p_panel : base + P.off_p;
#pragma unroll
      for (int j = 0; j < kBlock / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float e0 = exp2_approx(fmaf(sacc[4 * j + 2 * h], kScaleLog2, -m_use[h]));
          const float e1 = exp2_approx(fmaf(sacc[4 * j + 2 * h + 1], kScaleLog2, -m_use[h]));
          sum[h] += e0 + e1;
          st_shared_b32(p_own + p_row + (p_vals[4 * j + 2 * h] ^ p_term), pack2<CC.bf16>(e0, e1));
        }
      fence_proxy_async_smem();  // P visible to both warpgroups' wgmma
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        row_l[h] = row_l[h] * alpha[h] + sum[h];
#pragma unroll
        for (int j = 0; j < 32; ++j) o[4 * j + 2 * h] *= alpha[h], o[4 * j + 2 * h + 1] *= alpha[h];
      }
      named_barrier_sync(2, 256);  // both P written
      TL_PROBE_END(mla_probe::softmax, s, blk + c);
      TL_PROBE_BEGIN(mla_probe::pv, s, blk + c);
      // The other block's half of V this warpgroup reads: its full barrier is long complete; waiting makes the copies
      // visible here too. A missing block's P V reads the present block's V (times zeros).
      const bool pair = n == 2;
      if (c == 0 && pair) mbar_wait(full(s0 ^ 1, 0), ph1);
      if (c == 1) mbar_wait(full(s0, 1), ph0);
      if (c == 0 && pair && tid == 0) mbar_arrive(empty(s0 ^ 1, 1));  // consumer 0 never reads block 2i + 1's B
      // Own block's P V first (one wgmma group), then the other's.
      const unsigned pv_p[2] = {c == 0 ? kv0 + p_panel : base + P.off_p, c == 0 ? base + P.off_p : kv0 + p_panel};
      const unsigned v1 = pair ? kv1 : kv0;
      const unsigned pv_v[2] = {c == 0 ? kv0 : v1, c == 0 ? v1 : kv0};
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        wgmma_fence();
#pragma unroll
        for (int i = 0; i < kBlock / 16; ++i)
          WgmmaSS<P.acc_o.cols(), CC.bf16, 1>::run(o, smem_desc_sw128(pv_p[b] + p_steps[i], 16, P.desc_sbo),
                                                   smem_desc_sw128(pv_v[b] + v_steps[i], P.desc_v_lbo, P.desc_sbo));
        wgmma_commit();
      }
      wgmma_wait<1>();
      if (tid == 0) {
        if (c == 0) {
          if (pair) mbar_arrive(empty(s0, 0));  // alone, its second P V reads this A too
          mbar_arrive(empty(s0, 1));
        } else if (pair) {
          mbar_arrive(empty(s0 ^ 1, 1));
        }
      }
      wgmma_wait<0>();
      if (tid == 0) mbar_arrive(c == 0 ? empty(pair ? s0 ^ 1 : s0, 0) : empty(s0, 1));
      TL_PROBE_END(mla_probe::pv, s, blk + c);
      it += n;
    }
    if (!qk_last && tid == 0) mbar_arrive(q_empty);

    // Row sums of both warpgroups' blocks (a buffer per request parity, as mla_consumer's).
    const unsigned sum_buf = base + P.off_sum + 4 * P.row_sum(0, 0, qn & 1);
    float l_tot[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l_tot[h] = quad_sum(row_l[h]);
      if (row_first) st_shared_f32(sum_buf + 4 * P.row_sum(rl[h], c, 0), l_tot[h]);
    }
    named_barrier_sync(1, 256);
#pragma unroll
    for (int h = 0; h < 2; ++h) l_tot[h] += ld_shared_f32(sum_buf + 4 * P.row_sum(rl[h], 1 - c, 0));
    ++qn;

    TL_PROBE_BEGIN(mla_probe::combine, probe::kNoStage, r);
    // LSE (+inf for a row without keys), O = o / sum, scaled by the sink as mla_consumer's; max_logits q.k / 24.
    float lse[2], scale[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const bool empty_row = !(l_tot[h] > 0.f);
      scale[h] = empty_row ? 0.f : 1.f / l_tot[h];
      lse[h] = empty_row ? kInf : (row_m[h] + __log2f(l_tot[h])) * 0.6931471805599453f;
      if (a.sink && lse[h] < kInf) scale[h] *= 1.f / (1.f + __expf(a.sink[min(m0 + rl[h], heads - 1)] - lse[h]));
    }
    const auto lse_index = [&](int row) { return static_cast<long long>(r) * heads + row; };
    store_output<CC>(o, lse, scale, a.O, a.LSE, r, heads, m0, rl, c, tid, lse_index);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + rl[h];
      if (row < heads && c == 0 && row_first) a.max_logits[lse_index(row)] = row_m[h] * 0.6931471805599453f;
    }
    TL_PROBE_END(mla_probe::combine, probe::kNoStage, r);
  }
  TL_PROBE_FLUSH();
  if (c == 0 && tid == 0) TL_PROBE_BLOCK_END();
}

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
  static constexpr MlaSparsePrefillPlan SP = make_plan(C);
  static constexpr MlaDecodePlan P = SP.mma;
  static constexpr MlaDecodeConfig CC = consumer_config(C);
  static_assert(SP.gather.linear(), "a copy's place is the thread's coordinate plus the value's (tabulated) one");

  extern __shared__ unsigned char smem_raw[];
  const unsigned base = smem_align<1024>(smem_raw);

  const int m0 = blockIdx.y * P.rows, part = blockIdx.x;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  if (threadIdx.x == 0) {
    prefetch_tensormap(&tma_q);
    // paired_blocks: mla.decode's ring barriers for the stages' halves A (emptied by consumer 0 alone), the plan's
    // for halves B.
    init_ring_barriers<CC>(base, SP.full_arrivals, C.paired_blocks ? 1 : 2);
    if constexpr (C.paired_blocks)
      for (int s = 0; s < 2; ++s) {
        mbar_init(base + SP.full_b(s), SP.full_arrivals);
        mbar_init(base + SP.empty_b(s), 2);
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
    const PartWalk walk(parts, part, seq_q);
    // Lanes 0..15: the warp's index entries of the next block, read a block ahead.
    BlockCursor ahead(walk, topk_length, topk, 1, heads, m0);
    int next = ahead.entry(indices, topk, warp, lane);
    ahead.advance(topk_length, topk, 1, heads, m0);
    // The panels of a block into stage s (fill parity ph) from the KV rows of the entries lanes 0..15 hold (idx):
    // all 9 (h < 0, on the stage's barriers) or a paired_blocks half (h 0: [0, half_panels) on the stage's barriers,
    // h 1: the rest on the plan's half-B barriers). with_mask: this load writes the stage's valid mask (the block's
    // first); index_open: the caller began the index region, which ends once the rows' addresses are known.
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
      mbar_wait(base + (h == 1 ? SP.empty_b(s) : P.empty_bar(s)), ph ^ 1);
      TL_PROBE_END(mla_prefill_probe::load_wait, s, blk);
      TL_PROBE_BEGIN(mla_prefill_probe::load_issue, s, blk);
      const unsigned stage = base + P.kv_stage(s), full = base + (h == 1 ? SP.full_b(s) : P.full_bar(s));
#pragma unroll
      for (int i = 0; i < SP.row_groups; ++i)
#pragma unroll
        for (int p = 0; p < P.panels; ++p) {
          if (h >= 0 && (p >= SP.half_panels) != (h == 1)) continue;
          const unsigned dst = stage + panel_at[p] + row_at[i];
          const unsigned short* from = src[i] + copy_of(0, p).col;
          if constexpr (C.l2_prefetch) cp_async_16_l2_256(dst, from, bytes[i]);
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
    for (int k = 0; k < walk.count; ++k) {
      const int r = walk.first + k;
      const int L = sparse_length(topk_length, topk, 1, r);
      int b0, b1, split;
      walk.range<false>(r, L, 1, heads, m0, heads, b0, b1, split);
      auto load_q = [&] {
        if (warp == 0) load_request_q<CC>(&tma_q, base, r, heads, m0, lane, qn);
      };
      if (b0 == b1) load_q();
      if constexpr (C.paired_blocks) {
        // A pair's halves in the order its consumers free and read them (paired_consumer); the mask with each
        // block's first half.
        for (int blk = b0; blk < b1; blk += 2) {
          const int n = min(2, b1 - blk), s0 = it & 1;
          const unsigned ph0 = (it >> 1) & 1, ph1 = ((it + 1) >> 1) & 1;
          TL_PROBE_BEGIN(mla_prefill_probe::index, s0, blk);
          const int idx0 = next;
          next = ahead.entry(indices, topk, warp, lane);
          ahead.advance(topk_length, topk, 1, heads, m0);
          int idx1 = -1;
          if (n == 2) {
            idx1 = next;
            next = ahead.entry(indices, topk, warp, lane);
            ahead.advance(topk_length, topk, 1, heads, m0);
          }
          load_panels(idx0, s0, 0, ph0, true, true, blk);
          if (blk == b0) load_q();
          if (n == 2) load_panels(idx1, s0 ^ 1, 1, ph1, true, false, blk + 1);
          load_panels(idx0, s0, 1, ph0, false, false, blk);
          if (n == 2) load_panels(idx1, s0 ^ 1, 0, ph1, false, false, blk + 1);
          it += n;
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
  } else {
    setmaxnreg_inc<SP.consumer_regs>();
    ConsumerArgs args{base, O, LSE, nullptr, parts, num_splits, nullptr, nullptr, nullptr, seq_q, 1, heads,
                      topk_length, sink, topk, 1, base + SP.valid_mask(0)};
    args.max_logits = max_logits;
    if constexpr (C.paired_blocks) {
      if (wg == 1) mla_prefill_detail::paired_consumer<C, 0>(args);
      else mla_prefill_detail::paired_consumer<C, 1>(args);
    } else if (wg == 1) {
      mla_consumer<CC, 0, true, true>(args);
    } else {
      mla_consumer<CC, 1, true, true>(args);
    }
  }
}

}  // namespace tl
