// mla.decode: MLA decoding over a paged KV cache (FlashMLA's dense decode) — split-KV, wgmma, TMA, in-kernel combine.
//
// Per request r (of `batch`) with L = cache_seqlens[r] cached tokens, the R = seq_q * heads query rows (row
// m = s * heads + h: Q is [batch, seq_q, heads, 576], so a request's rows are contiguous) attend to the request's
// tokens, all sharing one KV head (MQA): S = Q K^T / sqrt(576) over the 576-wide rows, O = softmax(S) V with V the
// first 512 columns of the same cache rows. Token j of request r lives in row j % 64 of physical block
// block_table[r * table_stride + j / 64] of the cache [num_blocks, 64, 1, 576]. Causal: query position s sees tokens
// j < L - seq_q + s + 1 (bottom-right aligned). A row that sees no token gets O = 0 and LSE = +inf (FlashMLA's
// convention). Outputs: O [batch, seq_q, heads, 512] 16-bit, LSE float [batch, heads, seq_q] (natural log).
//
// Split-KV: the host runs tl::mla::schedule_split_kv (mla/mla_schedule.hpp) over the requests' 64-token blocks and
// passes each SM part's range in `parts` (5 ints: begin_req, begin_block, end_req, end_block, first_split) and the
// prefix sums of the requests' split counts in `num_splits`. Grid: (num_parts, m_tiles), m_tiles = ceil(R / 64);
// CTA (p, t) computes rows [64t, 64t + 64) of every request in part p's range over the part's blocks. A request
// with one split is written straight to O / LSE. Otherwise the CTA that finishes a (request, tile) last merges the
// splits, O = sum_i exp(lse_i - lse) O_i, lse = log sum exp lse_i, from its own registers and the partials the
// others wrote, normalized O (in the output's 16-bit type) and LSE (f32), to the workspace
// o_acc [total_splits, R, 512] / lse_acc [total_splits, R]. o_acc stays a float* in the signatures although it holds
// 16-bit values: typing it unsigned short* changed the generated PTX (address arithmetic), which this cleanup kept.
// Finishing is counted by an atomic per (request, tile) in `counters`, which must be zero before the launch and is
// reset to zero by the merging CTA; a CTA that finds every other split already counted writes no partial at all.
// The merge folds each other split in with one batch of independent loads (merge_splits): it used to walk rows and
// splits one L2 round trip at a time, about 100 us at the end of every SM part, the fixed cost docs/perf.md measured
// (2026-11-24). vec_store writes partials and outputs as 16-byte vectors (store_row16: a quad transpose by
// shuffles; the pair stores made the partial write and its fence the costliest epilogue, +1.4-2.4% at MB 4096 when
// vectorized). The block start prefetches the TMA descriptors and the first block-table entry. The host's tie_gap
// shortens middle-split parts (mla_schedule.hpp). evict_first (the spec's auto: a request's rows fit one row tile,
// so no other CTA reads a KV block) loads the cache with an L2 evict_first policy (+2.4-7.6% memory-bound).
// uniform_desc (the spec's auto: more than two row tiles a request) builds the consumers' wgmma descriptors from
// warp-uniform values (mla_consumer.cuh; +0.8-1.3% compute-bound). rope_regs (the spec's auto: the same problems,
// without chain; it takes uniform_desc with it) holds Q's RoPE panel in the Q K^T warpgroup's registers as wgmma A
// fragments, loaded once per request (mla_consumer.cuh's load_rope_regs), so Q K^T's last four k16 steps read only K
// from shared memory (+0.6-1.1% compute-bound; with chain consumer 0's, opt-in). lean_softmax (the spec's auto: the
// same problems, unchained) stores consumer 0's P by stmatrix and starts its row max / sum chains from the first values
// (mla_consumer.cuh; +0.3-0.6% compute-bound: the softmax is the exposed part of consumer 0's block).
//
// tile_fast (the spec's tile_order, auto where m_tiles > 1): the grid is (m_tiles, num_parts) instead, so a part's row
// tiles, which read the same KV blocks, are consecutive CTAs (one TPC, in lockstep; cta_tile / cta_part read the two).
//
// Threads: 3 warpgroups. Warpgroup 0 is the producer: lane 0 of its warp 0 issues the TMA loads (each KV block into
// a 2-stage ring, the request's Q tile after its first block), the rest of it idles with 40 registers (setmaxnreg). Consumer warpgroups c = 0, 1 (232 registers), per KV
// block, with QK_WG == 2: c computes S_c = Q K[32c : 32c + 32]^T (64 x 32, wgmma m64n32k16 x 36 from shared memory),
// the two exchange their row maxima through shared memory, each turns its S_c into P (exp2 of the log2(e)-scaled
// scores; running max and sum per row, O rescaled) and writes P_c as 16 bits into the shared P tile; with QK_WG == 1
// consumer 0 computes all of S (m64n64k16 x 36: Q is read once per block, not twice), runs the softmax alone and
// hands consumer 1 the rows' rescale factors. After a barrier of both, consumer c computes
// O_c += P V[:, 256c : 256c + 256] (wgmma m64n256k16 x 4, V read N-major straight from the cache block: the
// transposed-B form). Consumer thread (warp w, lane l) owns rows 16w + l/4 and 16w + l/4 + 8 of the tile (the wgmma
// accumulator layout, the plan's acc_o), O_c's 256 columns as 128 fp32 registers. QK_WG 1 measured fastest on the
// H100 (docs/perf.md); so did leaving out the experiments this kernel no longer has (an L2 prefetch of KV blocks
// ahead, the next block's Q K^T issued behind P V, f32 partials, a deferred split count, a rotated part order, the
// two-pass merge: see git history and docs/perf.md).
//
// chain (chained(C), opt-in): the consumers run mla.sparse_prefill's chained schedule instead (mla_consumer.cuh's
// chained_consumer): KV blocks in pairs, A in stage 0 and B in stage 1, each consumer Q K^T and the softmax of its own
// block (consumer 1 at consumer 0's running maximum), P V of both blocks over its 256 columns (its own P from
// registers, the partner's through shared memory), so one consumer's softmax runs beside the other's GEMMs. The
// producer loads each stage in two halves (panels 0-3 on the ring's barriers, 4-8 on the plan's full_hi / empty_hi),
// in the order the chain frees them; an odd range's last B is its last block again, masked whole.
//
// Shared memory, fragments and descriptor strides come from the plan (mla/mla_decode_plan.hpp): every 64-row x
// 576-column tile is 9 panels of 64 rows x 64 columns (128-byte rows, 8 KiB) as TMA SWIZZLE_128B writes them,
//   [Q tile 72 KiB][KV stage 0 72 KiB][KV stage 1 72 KiB][P 64 x 64, 8 KiB, same swizzle]
//   [row max (QK_WG 2) / rescale (QK_WG 1) exchange 2 x 64 f32][row sum exchange 2 x 2 x 64 f32]
//   [barriers: full[2], empty[2], q_full, q_empty][flag: the last-split flag, 16 bytes of which 4 are used]
//   [chain only: the halves' barriers full_hi[2], empty_hi[2]]
// and every address below is a plan layout evaluated at a (row, column). wgmma descriptors: Q and K are K-major
// (stride byte offset = one 8-row atom, a k16 step = column + 16, i.e. +32 bytes inside a panel); V is N-major for
// P V: leading byte offset = the next panel, stride byte offset = the next 8 tokens, a k16 step = 16 tokens.
#pragma once

#include "mla/mla_consumer.cuh"

namespace tl {

template <MlaDecodeConfig C>
__global__ void __launch_bounds__(make_plan(C).threads, 1)
    mla_decode(const __grid_constant__ TmaDescriptor tma_q, const __grid_constant__ TmaDescriptor tma_kv,
               unsigned short* __restrict__ O, float* __restrict__ LSE, const int* __restrict__ cache_seqlens,
               const int* __restrict__ block_table, const int* __restrict__ parts, const int* __restrict__ num_splits,
               float* __restrict__ o_acc, float* __restrict__ lse_acc, int* __restrict__ counters, int batch, int seq_q,
               int heads, int table_stride) {
  using namespace mla_detail;
  static constexpr MlaDecodePlan P = make_plan(C);
  static constexpr auto panels = tabulate<P.panels>([](int p) { return 2u * P.tile(0, p * P.panel_cols); });
  static_assert(P.acc_s.linear() && P.acc_o.linear() && P.out_vec.linear(),
                "the helpers add a thread's coordinate and a value's (tabulated) one");

  extern __shared__ unsigned char smem_raw[];
  const unsigned base = smem_align<1024>(smem_raw);

  const int R = seq_q * heads, m0 = cta_tile<C>() * P.rows, part = cta_part<C>();
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  if (threadIdx.x == 0) {
    // Fetch both TMA descriptors into the descriptor cache now, so the first Q and KV loads (after the schedule
    // reads) do not wait for them; the producer also prefetches the part's first block-table entry beside the
    // request's length instead of reading it after (one dependent global round trip less before the first TMA).
    // Alone measured neutral (-0.2..+0.4% at MB 4096), part of the measured default set (docs/perf.md, mla4).
    prefetch_tensormap(&tma_kv);
    prefetch_tensormap(&tma_q);
    for (int s = 0; s < 2; ++s) {
      mbar_init(base + P.full_bar(s), 1);
      mbar_init(base + P.empty_bar(s), chained(C) ? 128 : 2);  // chained: every thread of the warpgroup that frees it
    }
    mbar_init(base + P.q_full_bar(), 1);
    mbar_init(base + P.q_empty_bar(), 2);
    if constexpr (chained(C))
      for (int s = 0; s < 2; ++s) {
        mbar_init(base + P.full_hi(s), 1);
        mbar_init(base + P.empty_hi(s), 128);
      }
    fence_mbarrier_init();
    TL_PROBE_BLOCK_BEGIN();
  }
  __syncthreads();

  if (wg == 0) {
    // Producer: one lane issues, the warp waits (the probe marks are warp-collective).
    setmaxnreg_dec<40>();
    if (warp == 0) {
      TL_PROBE_WARP_INIT();
      int it = 0, qn = 0;
      const PartWalk walk(parts, part, batch);
      // The first block's entry into L1 beside the request's length (a prefetch holds no register of the 40; a part
      // never begins at the end of a request, so the entry is in the row).
      if (walk.count > 0 && lane == 0) {
        const int* at = block_table + static_cast<long long>(walk.first) * table_stride + walk.begin_block;
        prefetch_l1(at);
      }
      for (int k = 0; k < walk.count; ++k) {
        const int r = walk.first + k;
        int b0, b1, split;
        walk.range<C.causal>(r, cache_seqlens[r], seq_q, heads, m0, R, b0, b1, split);
        const int* row_table = block_table + static_cast<long long>(r) * table_stride;
        // Q is issued after this request's first KV block, so that block's load overlaps the wait for Q's release.
        auto load_q = [&] { load_request_q<C>(&tma_q, base, r, R, m0, lane, qn); };
        if (b0 == b1) load_q();
        if constexpr (chained(C)) {
          // Pairs of blocks, A in stage 0 and B in stage 1 (an odd range's last B: its last block again, which the
          // consumers mask whole), each stage in halves (panels [0, half_panels) on the ring's barriers, the rest on
          // the plan's _hi ones) in the order the chained consumers free them: A's L, B's R, A's R, B's L.
          const auto load_half = [&](int s, int h, int blk, unsigned ph) {
            const unsigned full = base + (h ? P.full_hi(s) : P.full_bar(s));
            TL_PROBE_BEGIN(mla_probe::load_wait, s, blk);
            mbar_wait(base + (h ? P.empty_hi(s) : P.empty_bar(s)), ph ^ 1);
            TL_PROBE_END(mla_probe::load_wait, s, blk);
            TL_PROBE_BEGIN(mla_probe::load_issue, s, blk);
            if (lane == 0) {
              const int p0 = h ? P.half_panels : 0, p1 = h ? P.panels : P.half_panels;
              mbar_expect_tx(full, static_cast<unsigned>(p1 - p0) * (P.tile_bytes / P.panels));
              const int phys = __ldg(row_table + blk);
              if constexpr (C.evict_first) {
                const unsigned long long policy = l2_policy_evict_first();
#pragma unroll
                for (int p = 0; p < P.panels; ++p)
                  if (p >= p0 && p < p1)
                    tma_load_2d_hint(base + P.kv_stage(s) + panels[p], &tma_kv, full, p * P.panel_cols,
                                     phys * kBlock, policy);
              } else {
#pragma unroll
                for (int p = 0; p < P.panels; ++p)
                  if (p >= p0 && p < p1)
                    tma_load(base + P.kv_stage(s) + panels[p], &tma_kv, full, p * P.panel_cols, phys * kBlock);
              }
            }
            __syncwarp();
            TL_PROBE_END(mla_probe::load_issue, s, blk);
          };
          for (int blk = b0; blk < b1; blk += 2, ++it) {
            const unsigned ph = it & 1;
            const int nb = min(blk + 1, b1 - 1);
            load_half(0, 0, blk, ph);
            if (blk == b0) load_q();
            load_half(1, 1, nb, ph);
            load_half(0, 1, blk, ph);
            load_half(1, 0, nb, ph);
          }
        }
        // Unchained: one whole block a stage (the condition folds to blk < b1).
        for (int blk = b0; blk < b1 && !chained(C); ++blk, ++it) {
          const int s = it & 1;
          TL_PROBE_BEGIN(mla_probe::load_wait, s, blk);
          mbar_wait(base + P.empty_bar(s), ((it >> 1) & 1) ^ 1);
          TL_PROBE_END(mla_probe::load_wait, s, blk);
          TL_PROBE_BEGIN(mla_probe::load_issue, s, blk);
          if (lane == 0) {
            mbar_expect_tx(base + P.full_bar(s), P.tile_bytes);
            const int phys = __ldg(row_table + blk);
            if constexpr (C.evict_first) {
              // auto: one row tile, so no other CTA reads the block; its lines may go before other data in L2.
              const unsigned long long policy = l2_policy_evict_first();
#pragma unroll
              for (int p = 0; p < P.panels; ++p)
                tma_load_2d_hint(base + P.kv_stage(s) + panels[p], &tma_kv, base + P.full_bar(s), p * P.panel_cols,
                                 phys * kBlock, policy);
            } else {
#pragma unroll
              for (int p = 0; p < P.panels; ++p)
                tma_load(base + P.kv_stage(s) + panels[p], &tma_kv, base + P.full_bar(s), p * P.panel_cols, phys * kBlock);
            }
          }
          __syncwarp();
          TL_PROBE_END(mla_probe::load_issue, s, blk);
          if (blk == b0) load_q();
        }
        // The part's last request is usually split (the part ends inside it) and its other splits, computed at the
        // start of the next part, are usually done by now: then this CTA will merge them (the consumers' epilogue),
        // so their partials go to L2 while the last blocks compute, and the merge's loads hit L2 instead of HBM.
        if (k == walk.count - 1 && b1 > b0 && lane == 0) {
          const int nspl = num_splits[r + 1] - num_splits[r];
          if (nspl > 1) {
            const int* counter = counters + static_cast<long long>(r) * cta_tiles<C>() + cta_tile<C>();
            const int seen = ld_relaxed_gpu(counter);
            if (seen == nspl - 1) {
              const int rows = min(P.rows, R - m0);
              for (int i = 0; i < nspl; ++i) {
                if (i == split) continue;
                const long long at = static_cast<long long>(num_splits[r] + i) * R + m0;
                bulk_prefetch_l2(reinterpret_cast<const char*>(o_acc) + at * kDV * 2, rows * kDV * 2);
                prefetch_l2(lse_acc + at);
                prefetch_l2(lse_acc + at + rows - 1);
              }
            }
          }
        }
      }
      TL_PROBE_FLUSH();
    }
    return;
  }

  setmaxnreg_inc<232>();
  const ConsumerArgs args{base, O, LSE, cache_seqlens, parts, num_splits, o_acc, lse_acc, counters, batch, seq_q, heads};
  if constexpr (chained(C)) {
    if (wg == 1) chained_consumer<C, 0, false, P.off_half_bar, C.tile_fast>(args);
    else chained_consumer<C, 1, false, P.off_half_bar, C.tile_fast>(args);
  } else if (wg == 1) {
    mla_consumer<C, 0>(args);
  } else {
    mla_consumer<C, 1>(args);
  }
}

}  // namespace tl
