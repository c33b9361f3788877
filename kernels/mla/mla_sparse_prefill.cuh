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
// over pairs of blocks as FlashMLA's (chained_consumer below); unchained (chain=false, or qk_warpgroups 2) they are
// mla.decode's code (mla_consumer.cuh, SPARSE with MAX_LOGITS: Q K^T, online softmax, P V, the epilogue). A prefill has
// enough query tokens to fill the GPU, so no request is split: the host deals whole tokens out to the parts (grid
// (num_parts, m_tiles), m_tiles = ceil(heads / 64), each part a persistent CTA over its tokens per head tile; with
// C.head_order (chained only) the grid is (m_tiles, num_parts), so a part's head tiles are consecutive CTAs, as in
// FlashMLA's heads-fastest grid, and with head_order 2 one cluster), and the merge never runs (every num_splits step
// is 1).
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
// auto at 128 heads) 1.02-1.03x the grid with them 66 CTAs apart, by the minima (0.96x FlashMLA at s_kv 8192).
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

// chained(C): the two consumer warpgroups chained over a pair of blocks as FlashMLA's sparse prefill for Hopper.
// Block A (the pair's first) sits in stage 0, block B in stage 1 (an odd request's last pair gets a B of invalid
// entries from the producer: zero rows, an empty mask, so no branch guards a wgmma). Warpgroup c computes S of its
// own block (c 0: A, c 1: B) and owns O's V columns 256c .. 256c + 255:
//   c 0: S_A = Q K_A^T (half L first); the softmax at its running max m, m0 = max(m, rowmax S_A) to slot 0 of the
//        row maxima, barrier kMax0; O += P_A V_A[L] with P_A from registers; A's half L freed. Barrier kMax1: the
//        pair's max m1 (slot 1); P_A and O rescaled by exp2(m0 - m1), P_A into A's RoPE panel (read by A's Q K^T
//        alone, complete), barrier kPA. Barrier kPB: O += P_B V_B[L] (B's P tile) issued, left in flight while the
//        next pair's Q K^T of half L is issued; B's half L freed once it completes.
//   c 1: S_B = Q K_B^T (half R first); barrier kMax0: m1 = max(m0, rowmax S_B) (m0 already holds the previous
//        pair's m1), O rescaled to it, P_B, m1 to slot 1, barrier kMax1; O += P_B V_B[R] from registers; P_B into
//        the P tile, barrier kPB; barrier kPA: O += P_A V_A[R]; B's half R freed after the first P V, A's after the
//        second.
// So A's half L frees after one P V and B's half R half-way through the pair: the producer gathers the next pair's
// first halves while this pair runs, with only the two stages. Row sums are each warpgroup's own at m1, added at
// the end.
template <MlaSparsePrefillConfig C, int CONSUMER>
TL_DEVICE_INLINE void chained_consumer(const mla_detail::ConsumerArgs& a) {
  using namespace wgmma_ops;
  using namespace mla_detail;
  static constexpr MlaSparsePrefillPlan SP = make_plan(C);
  static constexpr MlaDecodeConfig CC = consumer_config(C);
  static constexpr MlaDecodePlan P = SP.mma;
  static_assert(P.s_cols == kBlock, "each warpgroup's S covers its whole block");
  static constexpr auto s_vals = tabulate<P.acc_s.num_values()>([](int v) { return P.acc_s(0, v); });
  static constexpr auto o_vals = tabulate<P.acc_o.num_values()>([](int v) { return P.acc_o(0, v); });
  // S's accumulator pairs are P's register A fragments (wgmma m64k16: register k of step k / 4 holds rows +8 for odd
  // k % 4, columns +8 for k % 4 >= 2).
  static_assert(
      [] {
        for (int k = 0; k < P.acc_s.num_values() / 2; ++k)
          if (s_vals[2 * k].row != 8 * (k % 2) || s_vals[2 * k].col != 16 * (k / 4) + 8 * (k % 4 / 2) ||
              s_vals[2 * k + 1].col != s_vals[2 * k].col + 1)
            return false;
        return true;
      }(),
      "S pairs in P's A-fragment order");
  static constexpr auto qk_steps = tabulate<kMlaDimQK / 16>([](int i) { return 2u * P.tile(0, 16 * i); });
  static constexpr int half_steps = SP.half_panels * P.panel_cols / 16;
  static constexpr auto p_steps = tabulate<kBlock / 16>([](int i) { return 2u * P.p(0, 16 * i); });
  static constexpr auto v_steps =
      tabulate<kBlock / 16>([](int i) { return 2u * P.tile(16 * i, CONSUMER * P.acc_o.cols()); });
  static constexpr unsigned p_panel = 2u * P.tile(0, kDV);  // A's RoPE panel (the P tile's layout: the plan test)
  enum : int { kMax0 = 1, kMax1 = 2, kPA = 3, kPB = 4, kSums = 5 };  // named barriers of the 256 consumer threads
  constexpr int c = CONSUMER;
  const float kInf = __int_as_float(0x7f800000);
  constexpr float kScaleLog2 = 1.4426950408889634f / 24.0f;  // 1/sqrt(576) times log2(e)
  const unsigned base = a.base, q_base = base + P.off_q, p_tile = base + P.off_p;
  const unsigned st_a = base + P.kv_stage(0), st_b = base + P.kv_stage(1), own = c == 0 ? st_a : st_b;
  const unsigned q_full = base + P.q_full_bar(), q_empty = base + P.q_empty_bar();
  // Stage s's half h (0: panels [0, half_panels), 1: the rest).
  const auto full = [&](int s, int h) { return base + (h ? SP.full_hi(s) : P.full_bar(s)); };
  const auto empty = [&](int s, int h) { return base + (h ? SP.empty_hi(s) : P.empty_bar(s)); };
  const int heads = a.heads, m0 = cta_head_tile<C>() * P.rows, tid = threadIdx.x % 128;
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
  unsigned pr[P.acc_s.num_values() / 2];
  int pn = 0, qn = 0;
  const PartWalk walk(a.parts, cta_part<C>(), a.batch);
  for (int k = 0; k < walk.count; ++k) {
    const int r = walk.first + k;
    const int L = sparse_length(a.topk_length, a.topk, 1, r);
    int b0, b1, split;
    walk.range<false>(r, L, 1, heads, m0, heads, b0, b1, split);
    const int pairs = (b1 - b0 + 1) / 2;
    float row_m[2] = {-kInf, -kInf}, row_l[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < P.acc_o.num_values(); ++i) o[i] = 0.f;
    mbar_wait(q_full, qn & 1);
    // S = Q K^T of the own block of pair (fill parity ph), over the half the producer fills first, then the other;
    // with the previous pair's last P V in flight (consumer 0), B's half L is freed once that completes.
    const auto qk = [&](unsigned ph, bool pv_in_flight) {
#pragma unroll
      for (int v = 0; v < P.acc_s.num_values(); ++v) sacc[v] = 0.f;
#pragma unroll
      for (int g = 0; g < 2; ++g) {
        const int h = g ^ c;  // c 0: half L first; c 1: half R first
        mbar_wait(full(c, h), ph);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < qk_steps.size(); ++j) {
          if ((j >= half_steps) != (h == 1)) continue;
          WgmmaSS<P.s_cols, CC.bf16, 0>::run(sacc, smem_desc_sw128(q_base + qk_steps[j], 16, P.desc_sbo),
                                             smem_desc_sw128(own + qk_steps[j], 16, P.desc_sbo));
        }
        wgmma_commit();
        if (g == 0 && pv_in_flight) {
          wgmma_wait<1>();
          mbar_arrive(empty(1, 0));
        }
      }
      wgmma_wait<0>();
    };
    // Consumer 0 issues a pair's Q K^T behind the previous pair's last P V, in the same iteration (a group in flight
    // across the loop's back edge makes ptxas serialize every wgmma); the request's first here.
    if (c == 0 && pairs > 0) {
      TL_PROBE_BEGIN(mla_probe::qk, c, b0);
      qk(pn & 1, false);
      if (pairs == 1 && tid == 0) mbar_arrive(q_empty);
      TL_PROBE_END(mla_probe::qk, c, b0);
    }
    for (int i = 0; i < pairs; ++i, ++pn) {
      const int blk = b0 + 2 * i + c;
      if constexpr (c == 1) {
        TL_PROBE_BEGIN(mla_probe::qk, c, blk);
        qk(pn & 1, false);
        if (i == pairs - 1 && tid == 0) mbar_arrive(q_empty);
        TL_PROBE_END(mla_probe::qk, c, blk);
      }
      TL_PROBE_BEGIN(mla_probe::softmax, c, blk);
      // The tokens whose index the producer found invalid (only blocks with one pay for it).
      const unsigned long long vm = ld_shared_b64(a.valid_base + 8u * static_cast<unsigned>(c));
      if (~vm != 0) {
        const unsigned long long vt = vm >> s_at.col;  // bit j: this thread's column s_at.col + j
#pragma unroll
        for (int v = 0; v < P.acc_s.num_values(); ++v)
          if (!((vt >> s_vals[v].col) & 1ull)) sacc[v] = -kInf;
      }
      float mx[2], m_use[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float v = -kInf;
#pragma unroll
        for (int j = 0; j < kBlock / 8; ++j) v = fmaxf(v, fmaxf(sacc[4 * j + 2 * h], sacc[4 * j + 2 * h + 1]));
        mx[h] = quad_max(v) * kScaleLog2;
      }
      if constexpr (c == 1) {
        named_barrier_sync(kMax0, 256);
#pragma unroll
        for (int h = 0; h < 2; ++h) mx[h] = fmaxf(mx[h], ld_shared_f32(base + P.off_max + 4 * P.row_max(rl[h], 0)));
      }
      float sum[2] = {0.f, 0.f};
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float m_new = fmaxf(row_m[h], mx[h]);
        m_use[h] = m_new == -kInf ? 0.f : m_new;  // every key masked so far: exp2 gives 0, not NaN
        const float alpha = exp2_approx(row_m[h] - m_use[h]);
        row_m[h] = m_new;
#pragma unroll
        for (int j = 0; j < kBlock / 8; ++j) {
          sacc[4 * j + 2 * h] = exp2_approx(fmaf(sacc[4 * j + 2 * h], kScaleLog2, -m_use[h]));
          sacc[4 * j + 2 * h + 1] = exp2_approx(fmaf(sacc[4 * j + 2 * h + 1], kScaleLog2, -m_use[h]));
          sum[h] += sacc[4 * j + 2 * h] + sacc[4 * j + 2 * h + 1];
        }
        row_l[h] = row_l[h] * alpha + sum[h];
#pragma unroll
        for (int j = 0; j < 32; ++j) o[4 * j + 2 * h] *= alpha, o[4 * j + 2 * h + 1] *= alpha;
        if (row_first) st_shared_f32(base + P.off_max + 4 * P.row_max(rl[h], c), m_new);
      }
      named_barrier_arrive(c == 0 ? kMax0 : kMax1, 256);
#pragma unroll
      for (int j = 0; j < P.acc_s.num_values() / 2; ++j) pr[j] = pack2<CC.bf16>(sacc[2 * j], sacc[2 * j + 1]);
      TL_PROBE_END(mla_probe::softmax, c, blk);
      TL_PROBE_BEGIN(mla_probe::pv, c, blk);
      // O += P V of the own block, P from registers.
      wgmma_fence();
#pragma unroll
      for (int j = 0; j < kBlock / 16; ++j)
        WgmmaRS<P.acc_o.cols(), CC.bf16, 1>::run(o, &pr[4 * j],
                                                 smem_desc_sw128(own + v_steps[j], P.desc_v_lbo, P.desc_sbo), 1);
      wgmma_commit();
      if constexpr (c == 0) {
        wgmma_wait<0>();
        mbar_arrive(empty(0, 0));
        // The pair's maxima: P_A and O to them, P_A into A's RoPE panel for consumer 1.
        named_barrier_sync(kMax1, 256);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float m1 = ld_shared_f32(base + P.off_max + 4 * P.row_max(rl[h], 1));
          const float f = row_m[h] == -kInf ? 0.f : exp2_approx(m_use[h] - m1);  // m1 >= m0, finite when m0 is
          row_m[h] = m1;
          row_l[h] *= f;
#pragma unroll
          for (int j = 0; j < 32; ++j) o[4 * j + 2 * h] *= f, o[4 * j + 2 * h + 1] *= f;
#pragma unroll
          for (int j = 0; j < kBlock / 8; ++j)
            st_shared_b32(st_a + p_panel + p_row + (p_vals[4 * j + 2 * h] ^ p_term),
                          pack2<CC.bf16>(sacc[4 * j + 2 * h] * f, sacc[4 * j + 2 * h + 1] * f));
        }
        fence_proxy_async_smem();
        named_barrier_arrive(kPA, 256);
        named_barrier_sync(kPB, 256);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < kBlock / 16; ++j)
          WgmmaSS<P.acc_o.cols(), CC.bf16, 1>::run(o, smem_desc_sw128(p_tile + p_steps[j], 16, P.desc_sbo),
                                                   smem_desc_sw128(st_b + v_steps[j], P.desc_v_lbo, P.desc_sbo));
        wgmma_commit();
        TL_PROBE_END(mla_probe::pv, c, blk);
        if (i + 1 < pairs) {
          TL_PROBE_BEGIN(mla_probe::qk, c, blk + 2);
          qk((pn + 1) & 1, true);
          if (i + 2 == pairs && tid == 0) mbar_arrive(q_empty);
          TL_PROBE_END(mla_probe::qk, c, blk + 2);
        } else {
          wgmma_wait<0>();
          mbar_arrive(empty(1, 0));
        }
      } else {
#pragma unroll
        for (int j = 0; j < kBlock / 8; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) st_shared_b32(p_tile + p_row + (p_vals[4 * j + 2 * h] ^ p_term), pr[2 * j + h]);
        fence_proxy_async_smem();
        named_barrier_arrive(kPB, 256);
        named_barrier_sync(kPA, 256);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < kBlock / 16; ++j)
          WgmmaSS<P.acc_o.cols(), CC.bf16, 1>::run(o, smem_desc_sw128(st_a + p_panel + p_steps[j], 16, P.desc_sbo),
                                                   smem_desc_sw128(st_a + v_steps[j], P.desc_v_lbo, P.desc_sbo));
        wgmma_commit();
        wgmma_wait<1>();
        mbar_arrive(empty(1, 1));
        wgmma_wait<0>();
        mbar_arrive(empty(0, 1));
        TL_PROBE_END(mla_probe::pv, c, blk);
      }
    }
    if (pairs == 0 && tid == 0) mbar_arrive(q_empty);

    // Row sums of both warpgroups (a buffer per request parity, as mla_consumer's).
    const unsigned sum_buf = base + P.off_sum + 4 * P.row_sum(0, 0, qn & 1);
    float l_tot[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l_tot[h] = quad_sum(row_l[h]);
      if (row_first) st_shared_f32(sum_buf + 4 * P.row_sum(rl[h], c, 0), l_tot[h]);
    }
    named_barrier_sync(kSums, 256);
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

  static_assert(C.head_order == 0 || chained(C), "mla_consumer (unchained) reads the grid as (parts, head tiles)");
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
  } else {
    setmaxnreg_inc<SP.consumer_regs>();
    ConsumerArgs args{base, O, LSE, nullptr, parts, num_splits, nullptr, nullptr, nullptr, seq_q, 1, heads,
                      topk_length, sink, topk, 1, base + SP.valid_mask(0)};
    args.max_logits = max_logits;
    if constexpr (chained(C)) {
      if (wg == 1) mla_prefill_detail::chained_consumer<C, 0>(args);
      else mla_prefill_detail::chained_consumer<C, 1>(args);
    } else if (wg == 1) {
      mla_consumer<CC, 0, true, true>(args);
    } else {
      mla_consumer<CC, 1, true, true>(args);
    }
  }
}

}  // namespace tl
