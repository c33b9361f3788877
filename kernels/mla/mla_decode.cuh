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
// shortens middle-split parts (mla_schedule.hpp).
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
// H100 (docs/perf.md); so did leaving out the experiments this kernel no longer has (an L2 prefetch of KV blocks ahead, the next block's
// Q K^T issued behind P V, f32 partials, a deferred split count, a rotated part order, the two-pass merge: see git
// history and docs/perf.md).
//
// Shared memory, fragments and descriptor strides come from the plan (mla/mla_decode_plan.hpp): every 64-row x
// 576-column tile is 9 panels of 64 rows x 64 columns (128-byte rows, 8 KiB) as TMA SWIZZLE_128B writes them,
//   [Q tile 72 KiB][KV stage 0 72 KiB][KV stage 1 72 KiB][P 64 x 64, 8 KiB, same swizzle]
//   [row max (QK_WG 2) / rescale (QK_WG 1) exchange 2 x 64 f32][row sum exchange 2 x 2 x 64 f32]
//   [barriers: full[2], empty[2], q_full, q_empty][flag: the last-split flag, 16 bytes of which 4 are used]
// and every address below is a plan layout evaluated at a (row, column). wgmma descriptors: Q and K are K-major
// (stride byte offset = one 8-row atom, a k16 step = column + 16, i.e. +32 bytes inside a panel); V is N-major for
// P V: leading byte offset = the next panel, stride byte offset = the next 8 tokens, a k16 step = 16 tokens.
#pragma once

#include "tile/barrier.cuh"
#include "tile/config.hpp"
#include "tile/convert.cuh"
#include "tile/global.cuh"
#include "tile/mbarrier.cuh"
#include "tile/probe.hpp"
#include "tile/reduce.hpp"
#include "tile/setmaxnreg.cuh"
#include "tile/smem.cuh"
#include "tile/table.hpp"
#include "tile/tma.cuh"
#include "tile/wgmma_ops.cuh"
#include "mla/mla_decode_plan.hpp"

namespace tl {
namespace mla_detail {

// Timeline regions: mla_probe:: in the plan. The producer warp marks its empty-barrier waits and TMA issues; the
// first warp of each consumer warpgroup marks for the warpgroup.
enum : int { kDV = kMlaDimV, kBlock = kMlaBlock };

// Keys a row tile of one request needs: all L, or (causal) up to the diagonal of its last query position.
template <bool CAUSAL>
TL_DEVICE_INLINE int tile_kv_end(int L, int seq_q, int heads, int m0, int R) {
  if constexpr (!CAUSAL) return L;
  const int s_last = min(m0 + 63, R - 1) / heads;
  return max(0, min(L, L - seq_q + s_last + 1));
}

// SM part `part`'s requests are [first, last]; range() gives request r's blocks [b0, b1), cut to what row tile m0
// needs (possibly empty: the split then yields O = 0, no keys), and the split's index within the request. Producer
// and consumers walk the same ranges.
struct PartWalk {
  int first, last, parts_end, begin_block, end_block, first_split;
  int count;  // requests in the part (0 for an empty part)
  TL_DEVICE_INLINE PartWalk(const int* __restrict__ parts, int part, int batch) {
    first = parts[5 * part];
    begin_block = parts[5 * part + 1];
    last = min(parts[5 * part + 2], batch - 1);  // the schedule never ends past the batch; cheap insurance
    parts_end = parts[5 * part + 2];
    end_block = parts[5 * part + 3];
    first_split = parts[5 * part + 4];
    count = max(0, last - first + 1);
  }
  template <bool CAUSAL>
  TL_DEVICE_INLINE void range(int r, int L, int seq_q, int heads, int m0, int R, int& b0, int& b1, int& split) const {
    b0 = r == first ? begin_block : 0;
    b1 = r == last && last == parts_end ? end_block : (L + kBlock - 1) / kBlock;
    b1 = max(b0, min(b1, (tile_kv_end<CAUSAL>(L, seq_q, heads, m0, R) + kBlock - 1) / kBlock));
    split = r == first ? first_split : 0;
  }
};

// Issues S = Q K[rows]^T for the plan's s_cols cache rows starting at k_rows, over the 576 columns in k16 steps,
// into sacc (zeroed first) as one wgmma group. A K-major SW128 descriptor starts at the step's column in row 0 of
// the 8-row atom (where the swizzle moves nothing).
template <MlaDecodeConfig C>
TL_DEVICE_INLINE void issue_qk(float* sacc, unsigned q_base, unsigned k_rows) {
  static constexpr MlaDecodePlan P = make_plan(C);
  static constexpr auto steps = tabulate<kMlaDimQK / 16>([](int i) { return 2u * P.tile(0, 16 * i); });
#pragma unroll
  for (int i = 0; i < P.acc_s.num_values(); ++i) sacc[i] = 0.f;
  using namespace wgmma_ops;
  wgmma_fence();
#pragma unroll
  for (int i = 0; i < steps.size(); ++i) {
    const unsigned at = steps[i];
    const unsigned long long da = smem_desc_sw128(q_base + at, 16, P.desc_sbo);
    const unsigned long long db = smem_desc_sw128(k_rows + at, 16, P.desc_sbo);
    WgmmaSS<P.s_cols, C.bf16, 0>::run(sacc, da, db);  // both K-major, always accumulating (sacc zeroed above)
  }
  wgmma_commit();
}

// The merge of a split request's 16-bit partials, in the wgmma accumulator layout of the consumer thread that holds
// this split's o (the plan's acc_o: rows rl[0], rl[1] of the tile, 32 column pairs of 256c .. 256c + 255), so the split
// that merges needs neither to publish its own partial nor to read it back. lse / scale are this split's (scale
// turns o into its O); on return o * scale is the merged O and lse the merged LSE (+inf for a row no split saw a key
// of). One round trip per other split: its LSEs and all 64 of its column pairs (2 columns per 4-byte load) are
// loaded in one batch with no dependence between the loads and folded in online (running max m, sum s of
// exp(lse_i - m), O rescaled when m grows), instead of one round trip per row and split (the old combine) or the
// LSEs first and each split's data after (the two-pass merge: +0.0-1.0% at MB 4096 for this one).
template <MlaDecodeConfig C>
TL_DEVICE_INLINE void merge_splits(float* o, float* lse, float* scale, const float* __restrict__ o_acc,
                                   const float* __restrict__ lse_acc, int g0, int nspl, int split, int R, int m0,
                                   const int* rl, int c, int tid) {
  static constexpr MlaDecodePlan P = make_plan(C);
  static constexpr auto cols = tabulate<P.acc_o.num_values()>([](int v) { return P.acc_o(0, v).col; });
  const float kInf = __int_as_float(0x7f800000);
  const unsigned short* acc16 = reinterpret_cast<const unsigned short*>(o_acc);
  int row[2];
  float m[2], s[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    row[h] = min(m0 + rl[h], R - 1);  // rows past R merge a duplicate and are not written
    m[h] = lse[h];
    s[h] = lse[h] > -kInf ? 1.f : 0.f;
#pragma unroll
    for (int j = 0; j < 32; ++j) o[4 * j + 2 * h] *= scale[h], o[4 * j + 2 * h + 1] *= scale[h];
  }
  for (int i = 0; i < nspl; ++i) {
    if (i == split) continue;
    float li[2];
    unsigned v[2][32];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long at = static_cast<long long>(g0 + i) * R + row[h];
      li[h] = __ldcg(lse_acc + at);
      const unsigned short* src = acc16 + at * kDV + c * P.acc_o.cols() + P.acc_o(tid, 0).col;
#pragma unroll
      for (int j = 0; j < 32; ++j) v[h][j] = __ldcg(reinterpret_cast<const unsigned*>(src + cols[4 * j]));
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float mn = fmaxf(m[h], li[h]);
      const float a = m[h] > -kInf ? __expf(m[h] - mn) : 0.f;  // mn finite whenever m is
      const float b = li[h] > -kInf ? __expf(li[h] - mn) : 0.f;
      s[h] = s[h] * a + b;
      m[h] = mn;
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        const float2 f = unpack2<C.bf16>(v[h][j]);
        o[4 * j + 2 * h] = fmaf(o[4 * j + 2 * h], a, b * f.x);
        o[4 * j + 2 * h + 1] = fmaf(o[4 * j + 2 * h + 1], a, b * f.y);
      }
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    lse[h] = m[h] > -kInf ? m[h] + __logf(s[h]) : kInf;
    scale[h] = m[h] > -kInf ? 1.f / s[h] : 0.f;
  }
}

// One row (h) of a consumer thread's 256 columns as 16 bits (o * scale), into dst (the row's first column of this
// consumer's half), at the columns the plan's acc_o gives the thread. vec_store: the quad's four lanes hold the 16
// bytes of columns 8j .. 8j + 7 between them; a 4 x 4 transpose by shuffles (two xor stages) leaves each lane the
// vectors of the plan's out_vec, each stored as one 16-byte vector: a quarter of the store instructions and L2
// write requests. Every lane must call it (the shuffles), store or not.
template <MlaDecodeConfig C>
TL_DEVICE_INLINE void store_row16(unsigned short* dst, const float* o, int h, float scale, int tid, bool store) {
  static constexpr MlaDecodePlan P = make_plan(C);
  if constexpr (!C.vec_store) {
    static constexpr auto cols = tabulate<P.acc_o.num_values()>([](int v) { return P.acc_o(0, v).col; });
    if (!store) return;
    dst += P.acc_o(tid, 0).col;
#pragma unroll
    for (int j = 0; j < 32; ++j)
      *reinterpret_cast<unsigned*>(dst + cols[4 * j]) = pack2<C.bf16>(o[4 * j + 2 * h] * scale, o[4 * j + 2 * h + 1] * scale);
  } else {
    static constexpr auto cols = tabulate<P.out_vec.num_values()>([](int v) { return P.out_vec(0, v).col; });
    const int q = tid % 4;  // the lane's place in its quad: which pairs it swaps at xor distances 2 and 1
    const bool hi = q & 2, lo = q & 1;
    unsigned short* const at = dst + P.out_vec(tid, 0).col;
#pragma unroll
    for (int g = 0; g < 8; ++g) {
      unsigned w[4];  // w[t]: this lane's pair of chunk 4g + t; after the transpose lane s's pair of chunk 4g + q
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int j = 4 * g + t;
        w[t] = pack2<C.bf16>(o[4 * j + 2 * h] * scale, o[4 * j + 2 * h + 1] * scale);
      }
      // Butterfly: across lane bit 1 swap the chunk pairs whose bit 1 differs from the lane's, then across bit 0.
      unsigned s0 = hi ? w[0] : w[2], s1 = hi ? w[1] : w[3];
      s0 = __shfl_xor_sync(0xffffffffu, s0, 2);
      s1 = __shfl_xor_sync(0xffffffffu, s1, 2);
      if (hi) w[0] = s0, w[1] = s1;
      else w[2] = s0, w[3] = s1;
      unsigned t0 = lo ? w[0] : w[1], t1 = lo ? w[2] : w[3];
      t0 = __shfl_xor_sync(0xffffffffu, t0, 1);
      t1 = __shfl_xor_sync(0xffffffffu, t1, 1);
      if (lo) w[0] = t0, w[2] = t1;
      else w[1] = t0, w[3] = t1;
      if (store) *reinterpret_cast<uint4*>(at + cols[16 * g]) = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

// This split's normalized partial O (o * scale, 16-bit) and LSE into workspace slot g, in the accumulator layout:
// each thread its two rows' 32 column pairs of consumer c's 256 columns; a row's LSE by the thread holding its
// first column.
template <MlaDecodeConfig C>
TL_DEVICE_INLINE void store_partial(const float* o, const float* lse, const float* scale, float* __restrict__ o_acc,
                                    float* __restrict__ lse_acc, int g, int R, int m0, const int* rl, int c, int tid) {
  static constexpr MlaDecodePlan P = make_plan(C);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = m0 + rl[h];
    const long long at = (static_cast<long long>(g) * R + min(row, R - 1)) * kDV + c * P.acc_o.cols();
    store_row16<C>(reinterpret_cast<unsigned short*>(o_acc) + at, o, h, scale[h], tid, row < R);
    if (row < R && c == 0 && P.acc_o(tid, 0).col == 0) lse_acc[static_cast<long long>(g) * R + row] = lse[h];
  }
}

// The merged (or only) O of a (request, row tile), o * scale as 16 bits, and its LSE, in the accumulator layout.
template <MlaDecodeConfig C>
TL_DEVICE_INLINE void store_output(const float* o, const float* lse, const float* scale, unsigned short* __restrict__ O,
                                   float* __restrict__ LSE, int r, int R, int m0, int heads, int seq_q, const int* rl, int c,
                                   int tid) {
  static constexpr MlaDecodePlan P = make_plan(C);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = m0 + rl[h];
    store_row16<C>(O + (static_cast<long long>(r) * R + min(row, R - 1)) * kDV + c * P.acc_o.cols(), o, h, scale[h], tid, row < R);
    if (row < R && c == 0 && P.acc_o(tid, 0).col == 0) LSE[(static_cast<long long>(r) * heads + row % heads) * seq_q + row / heads] = lse[h];
  }
}

// Zeroes cache rows [valid, 64) of consumer c's V columns (256c .. 256c + 255) in the KV stage at kv: thread t
// clears the 16-byte chunk of columns 8 (t % 32) .. + 7 in rows valid + t / 32, + 4, ... The swizzle only permutes
// the chunks inside a 128-byte row, so whole rows are cleared through the unswizzled layout, whose rows are one
// stride apart (a single-leaf row mode): the next row of a thread is a constant step further.
template <MlaDecodeConfig C>
TL_DEVICE_INLINE void zero_v_tail(unsigned kv, int valid, int c, int tid) {
  static constexpr MlaDecodePlan P = make_plan(C);
  static_assert(P.tile.layout().mode(0).num_leaves() == 1, "rows one stride apart");
  constexpr int chunks = P.acc_o.cols() / 8, rows = 128 / chunks;  // chunks per row, rows per step of the block
  constexpr unsigned step = 2 * P.tile.layout()(rows, 0);
  int row = valid + tid / chunks;
  for (unsigned at = kv + 2 * P.tile.layout()(row, c * P.acc_o.cols() + 8 * (tid % chunks)); row < kBlock;
       row += rows, at += step)
    st_shared_v4_fill(at, 0u);
}

// What the consumer warpgroups need of the kernel's arguments and shared-memory layout.
struct ConsumerArgs {
  unsigned base;
  unsigned short* O;
  float* LSE;
  const int* cache_seqlens;
  const int* parts;
  const int* num_splits;
  float* o_acc;
  float* lse_acc;
  int* counters;
  int batch, seq_q, heads;
};

// Consumer warpgroup CONSUMER (0 or 1, a template parameter so that each warpgroup's code has no
// warpgroup-divergent branches: ptxas serializes every wgmma of a function when it must guard registers on a
// divergent path).
template <MlaDecodeConfig C, int CONSUMER>
TL_DEVICE_INLINE void mla_consumer(const ConsumerArgs& a) {
  using namespace wgmma_ops;
  static constexpr MlaDecodePlan P = make_plan(C);
  static constexpr auto s_vals = tabulate<P.acc_s.num_values()>([](int v) { return P.acc_s(0, v); });
  static constexpr auto o_vals = tabulate<P.acc_o.num_values()>([](int v) { return P.acc_o(0, v); });
  constexpr int QK_WG = C.qk_warpgroups;
  const float kInf = __int_as_float(0x7f800000);
  // 1/sqrt(576) = 1/24, times log2(e): scores go straight into exp2.
  constexpr float kScaleLog2 = 1.4426950408889634f / 24.0f;
  const unsigned base = a.base, q_base = base + P.off_q, kv_base = base + P.off_kv, p_base = base + P.off_p;
  const unsigned q_full = base + P.q_full_bar(), q_empty = base + P.q_empty_bar(), flag_addr = base + P.off_flag;
  unsigned short* O = a.O;
  float* LSE = a.LSE;
  const int* cache_seqlens = a.cache_seqlens;
  const int* parts = a.parts;
  const int* num_splits = a.num_splits;
  float* o_acc = a.o_acc;
  float* lse_acc = a.lse_acc;
  int* counters = a.counters;
  const int batch = a.batch, seq_q = a.seq_q, heads = a.heads;
  const int R = seq_q * heads, m0 = blockIdx.y * P.rows, part = blockIdx.x;
  const int tid = threadIdx.x % 128;
  constexpr int c = CONSUMER;
  const int ctid = threadIdx.x - 128;  // thread among the 256 consumers
  TL_PROBE_WARP_INIT_IF(tid / 32 == 0);
  // This thread's rows in the tile (values 0 and 2 of its accumulators; acc_s gives it the same rows).
  const TileCoord o_at = P.acc_o(tid, 0);
  const int rl[2] = {o_at.row + o_vals[0].row, o_at.row + o_vals[2].row};
  // QK_WG == 2: consumer c computes S for tokens [32c, 32c + 32) and the two exchange row maxima; QK_WG == 1:
  // consumer 0 computes all 64 tokens (Q is read from shared memory once per block instead of twice, which is what
  // bounds Q K^T), runs the softmax alone and hands consumer 1 each row's rescale factor.
  constexpr int NS = P.s_cols;  // tokens of S per QK warpgroup
  constexpr bool does_qk = QK_WG == 2 || c == 0;
  constexpr int tok0 = QK_WG == 2 ? NS * c : 0;
  float o[P.acc_o.num_values()];
  float sacc[P.acc_s.num_values()];
  int it = 0, qn = 0;

  const PartWalk walk(parts, part, batch);
  // Whether this thread holds its rows' first column (it publishes the rows' statistics): after the walk's loads, so
  // that the code both consumers begin with (and share) is the same.
  const bool row_first = o_at.col == 0;
  // This thread's coordinate in S (acc_s), and where its S values go in the P tile (tokens tok0 + their column): the
  // offset of its coordinate (run-time) with one swizzle term, plus each value's constant offset. The swizzle splits
  // so because the thread's offset has no chunk bit, the values' none of the row bits the swizzle reads
  // (test_mla_decode_plan checks it).
  const TileCoord s_at = P.acc_s(tid, 0);
  const int p_at = P.p.layout()(s_at.row, s_at.col);
  const unsigned p_row = p_base + 2 * p_at, p_term = 2 * P.p.swizzle().term(p_at);  // in bytes
  static constexpr auto p_vals = tabulate<P.acc_s.num_values()>(
      [](int v) { return 2u * P.p.layout()(P.acc_s(0, v).row, tok0 + P.acc_s(0, v).col); });
  for (int k = 0; k < walk.count; ++k) {
    const int r = walk.first + k;
    const int L = cache_seqlens[r];
    int b0, b1, split;
    walk.range<C.causal>(r, L, seq_q, heads, m0, R, b0, b1, split);
    int lim[2];  // keys row h sees: [0, lim)
#pragma unroll
    for (int h = 0; h < 2; ++h) lim[h] = C.causal ? max(0, min(L, L - seq_q + (m0 + rl[h]) / heads + 1)) : L;
    float row_m[2] = {-kInf, -kInf}, row_l[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < 128; ++i) o[i] = 0.f;
    mbar_wait(q_full, qn & 1);

    for (int blk = b0; blk < b1; ++blk, ++it) {
      const int s = it & 1;
      const unsigned kv = kv_base + s * P.tile_bytes;
      const int valid = L - blk * kBlock;  // tokens of this block in the cache (< 64 only in the last block)
      if (does_qk) {
        TL_PROBE_BEGIN(mla_probe::wait_kv, s, blk);
        mbar_wait(base + P.full_bar(s), (it >> 1) & 1);
        TL_PROBE_END(mla_probe::wait_kv, s, blk);
        TL_PROBE_BEGIN(mla_probe::qk, s, blk);
        constexpr unsigned k_rows = 2 * P.tile(tok0, 0);
        issue_qk<C>(sacc, q_base, kv + k_rows);
      }
      if (does_qk) {
        wgmma_wait<0>();
        // Q is read by Q K^T alone: once the request's last one is complete the producer may load the next
        // request's Q, behind this block's softmax, P V and the epilogue instead of after them.
        if (blk == b1 - 1 && tid == 0) mbar_arrive(q_empty);
        TL_PROBE_END(mla_probe::qk, s, blk);

        // Mask keys past each row's limit (only the blocks that reach a limit pay for it).
        TL_PROBE_BEGIN(mla_probe::softmax, s, blk);
        const int n0 = blk * kBlock + tok0;
        if (n0 + NS > min(lim[0], lim[1])) {
#pragma unroll
          for (int j = 0; j < NS / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
              for (int e = 0; e < 2; ++e)
                if (n0 + s_at.col + s_vals[4 * j + 2 * h + e].col >= lim[h]) sacc[4 * j + 2 * h + e] = -kInf;
        }
        float mx[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float v = -kInf;
#pragma unroll
          for (int j = 0; j < NS / 8; ++j) v = fmaxf(v, fmaxf(sacc[4 * j + 2 * h], sacc[4 * j + 2 * h + 1]));
          mx[h] = quad_max(v) * kScaleLog2;
        }
        if constexpr (QK_WG == 2) {
          // Row maxima of both halves: through shared memory, one barrier of the 256 consumer threads (which also
          // tells each that the other's P V of the previous block is done with the P tile).
#pragma unroll
          for (int h = 0; h < 2; ++h)
            if (row_first) st_shared_f32(base + P.off_max + 4 * P.row_max(rl[h], c), mx[h]);
          named_barrier_sync(1, 256);
#pragma unroll
          for (int h = 0; h < 2; ++h) mx[h] = fmaxf(mx[h], ld_shared_f32(base + P.off_max + 4 * P.row_max(rl[h], 1 - c)));
        } else {
          if (it > 0) named_barrier_sync(3, 256);  // consumer 1's P V of the previous block is done with the P tile
        }
        float m_use[2], alpha[2], sum[2] = {0.f, 0.f};
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float m_new = fmaxf(row_m[h], mx[h]);
          // A row with every key masked so far keeps m = -inf; subtract 0 then so exp2 gives 0, not NaN.
          m_use[h] = m_new == -kInf ? 0.f : m_new;
          alpha[h] = exp2_approx(row_m[h] - m_use[h]);
          row_m[h] = m_new;
          if (QK_WG == 1 && row_first) st_shared_f32(base + P.off_max + 4 * P.row_max(rl[h], it & 1), alpha[h]);
        }
        // P = exp2(S scale - m) as 16 bits into the P tile: each pair of S's elements (acc_s) at its row and token.
#pragma unroll
        for (int j = 0; j < NS / 8; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float e0 = exp2_approx(fmaf(sacc[4 * j + 2 * h], kScaleLog2, -m_use[h]));
            const float e1 = exp2_approx(fmaf(sacc[4 * j + 2 * h + 1], kScaleLog2, -m_use[h]));
            sum[h] += e0 + e1;
            st_shared_b32(p_row + (p_vals[4 * j + 2 * h] ^ p_term), pack2<C.bf16>(e0, e1));
          }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          row_l[h] = row_l[h] * alpha[h] + sum[h];  // per-thread partial; quad and halves are summed at the end
#pragma unroll
          for (int j = 0; j < 32; ++j) o[4 * j + 2 * h] *= alpha[h], o[4 * j + 2 * h + 1] *= alpha[h];
        }
        // Tokens past L in the request's last block may hold anything (NaN in FlashMLA's tests): P is 0 there, but
        // 0 * NaN is NaN, so each warpgroup zeroes those rows of its V columns (panels 4c .. 4c + 3) once every
        // Q K^T read of the stage is complete (here: this warpgroup's, and with QK_WG == 2 barrier 1 for the other's).
        if (valid < kBlock) zero_v_tail<C>(kv, valid, c, tid);
        fence_proxy_async_smem();  // generic-proxy writes (P, zeroed rows) visible to wgmma
        named_barrier_sync(2, 256);
        TL_PROBE_END(mla_probe::softmax, s, blk);
      } else {
        // QK_WG == 1, consumer 1: wait for P and the rescale factors, rescale O, zero its V tail rows (consumer 0's
        // Q K^T of this block is complete: it waited before the softmax).
        TL_PROBE_BEGIN(mla_probe::softmax, s, blk);
        named_barrier_sync(2, 256);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float alpha = ld_shared_f32(base + P.off_max + 4 * P.row_max(rl[h], it & 1));
#pragma unroll
          for (int j = 0; j < 32; ++j) o[4 * j + 2 * h] *= alpha, o[4 * j + 2 * h + 1] *= alpha;
        }
        mbar_wait(base + P.full_bar(s), (it >> 1) & 1);  // long complete; makes the TMA writes visible to this warpgroup too
        if (valid < kBlock) {
          zero_v_tail<C>(kv, valid, c, tid);
          fence_proxy_async_smem();
          named_barrier_sync(4, 128);
        }
        TL_PROBE_END(mla_probe::softmax, s, blk);
      }

      // O_c += P V[:, 256c : 256c + 256]: k16 steps of 16 tokens (P's columns, V's rows; V N-major).
      TL_PROBE_BEGIN(mla_probe::pv, s, blk);
      static constexpr auto p_steps = tabulate<kBlock / 16>([](int i) { return 2u * P.p(0, 16 * i); });
      static constexpr auto v_steps =
          tabulate<kBlock / 16>([](int i) { return 2u * P.tile(16 * i, CONSUMER * P.acc_o.cols()); });
      wgmma_fence();
#pragma unroll
      for (int i = 0; i < p_steps.size(); ++i)
        WgmmaSS<P.acc_o.cols(), C.bf16, 1>::run(o, smem_desc_sw128(p_base + p_steps[i], 16, P.desc_sbo),
                                                smem_desc_sw128(kv + v_steps[i], P.desc_v_lbo, P.desc_sbo));
      wgmma_commit();
      wgmma_wait<0>();
      if (QK_WG == 1 && c == 1) named_barrier_arrive(3, 256);  // this P V is done with the P tile
      if (tid == 0) mbar_arrive(base + P.empty_bar(s));
      TL_PROBE_END(mla_probe::pv, s, blk);
    }
    if (tid == 0 && (b0 == b1 || !does_qk)) mbar_arrive(q_empty);  // those that did no Q K^T of this request

    // Row sums: the quad's lanes, then the two halves (a buffer per request parity, so a fast warpgroup cannot
    // overwrite what the other has yet to read). With QK_WG == 1 consumer 0 alone holds the softmax state: it hands
    // consumer 1 the sums and the row maxima (the merge of a split request needs this split's LSE in both).
    const unsigned sum_buf = base + P.off_sum + 4 * P.row_sum(0, 0, qn & 1);  // this request's parity
    float l_tot[2];
    if constexpr (QK_WG == 2) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        l_tot[h] = quad_sum(row_l[h]);
        if (row_first) st_shared_f32(sum_buf + 4 * P.row_sum(rl[h], c, 0), l_tot[h]);
      }
      named_barrier_sync(1, 256);
#pragma unroll
      for (int h = 0; h < 2; ++h) l_tot[h] += ld_shared_f32(sum_buf + 4 * P.row_sum(rl[h], 1 - c, 0));
    } else {
      if constexpr (c == 0) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          l_tot[h] = quad_sum(row_l[h]);
          if (row_first) {
            st_shared_f32(sum_buf + 4 * P.row_sum(rl[h], 0, 0), l_tot[h]);
            st_shared_f32(sum_buf + 4 * P.row_sum(rl[h], 1, 0), row_m[h]);
          }
        }
      }
      named_barrier_sync(1, 256);
      if constexpr (c == 1) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          l_tot[h] = ld_shared_f32(sum_buf + 4 * P.row_sum(rl[h], 0, 0));
          row_m[h] = ld_shared_f32(sum_buf + 4 * P.row_sum(rl[h], 1, 0));
        }
      }
    }
    ++qn;

    const int nspl = num_splits[r + 1] - num_splits[r];
    const int g0 = num_splits[r];
    TL_PROBE_BEGIN(mla_probe::combine, probe::kNoStage, r);
    // This split's LSE per row and the factor that turns o into its O (1 / row sum).
    float lse[2], scale[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const bool empty = !(l_tot[h] > 0.f);
      scale[h] = empty ? 0.f : 1.f / l_tot[h];
      lse[h] = empty ? (nspl == 1 ? kInf : -kInf) : (row_m[h] + __log2f(l_tot[h])) * 0.6931471805599453f;
    }
    bool write_out = nspl == 1;
    if (nspl > 1) {
      // The split of this (request, tile) that finishes last merges them all, from its own registers and the
      // others' partials. A split first looks at the counter: when every other split has already published
      // (count nspl - 1) it is the last and publishes nothing; otherwise it writes its partial, counts itself, and
      // the one whose increment completes the count merges. Either way the counter ends at zero for the next launch.
      int* counter = counters + static_cast<long long>(r) * gridDim.y + blockIdx.y;
      if (ctid == 0) {
        const int seen = ld_acquire_gpu(counter);
        st_shared_b32(flag_addr, seen == nspl - 1 ? 1u : 0u);
      }
      named_barrier_sync(1, 256);
      unsigned last = ld_shared_b32(flag_addr);
      const bool wrote = !last;
      if (!last) {
        store_partial<C>(o, lse, scale, o_acc, lse_acc, g0 + split, R, m0, rl, c, tid);
        __threadfence();
        named_barrier_sync(1, 256);  // every thread's partial is out before the count says so
        if (ctid == 0) {
          const int done = atomicAdd(counter, 1);
          st_shared_b32(flag_addr, done == nspl - 1 ? 1u : 0u);
        }
        named_barrier_sync(1, 256);
        last = ld_shared_b32(flag_addr);
      }
      if (last) {
        // When the first look found the set complete, ctid 0's ld.acquire and barrier 1 already order the others'
        // partials before these loads (acquire, then a CTA barrier: CUTLASS's semaphore pattern); only the relaxed
        // atomicAdd path needs the fence.
        if (wrote) __threadfence();
        merge_splits<C>(o, lse, scale, o_acc, lse_acc, g0, nspl, split, R, m0, rl, c, tid);
        if (ctid == 0) *counter = 0;  // ready for the next launch
        write_out = true;
      }
    }
    if (write_out) store_output<C>(o, lse, scale, O, LSE, r, R, m0, heads, seq_q, rl, c, tid);
    TL_PROBE_END(mla_probe::combine, probe::kNoStage, r);
  }
  // QK_WG == 1: consume consumer 1's last barrier-3 arrival, so every arrive has its sync.
  if (QK_WG == 1 && c == 0 && it > 0) named_barrier_sync(3, 256);
  TL_PROBE_FLUSH();
  if (c == 0 && tid == 0) TL_PROBE_BLOCK_END();
}

}  // namespace mla_detail

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
  const unsigned q_full = base + P.q_full_bar(), q_empty = base + P.q_empty_bar();

  const int R = seq_q * heads, m0 = blockIdx.y * P.rows, part = blockIdx.x;
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
      mbar_init(base + P.empty_bar(s), 2);
    }
    mbar_init(q_full, 1);
    mbar_init(q_empty, 2);
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
        // Q waits for both consumers to be done with the previous request's Q; it is issued after this request's
        // first KV block, so that block's load overlaps the wait. A tile is one TMA box per panel: the box of
        // columns [64p, 64p + 64) lands at the tile layout's (0, 64p).
        auto load_q = [&] {
          if (qn > 0) mbar_wait(q_empty, (qn - 1) & 1);
          if (lane == 0) {
            mbar_expect_tx(q_full, P.tile_bytes);
#pragma unroll
            for (int p = 0; p < P.panels; ++p)
              tma_load(base + P.off_q + panels[p], &tma_q, q_full, p * P.panel_cols, r * R + m0);
          }
          ++qn;
        };
        if (b0 == b1) load_q();
        for (int blk = b0; blk < b1; ++blk, ++it) {
          const int s = it & 1;
          TL_PROBE_BEGIN(mla_probe::load_wait, s, blk);
          mbar_wait(base + P.empty_bar(s), ((it >> 1) & 1) ^ 1);
          TL_PROBE_END(mla_probe::load_wait, s, blk);
          TL_PROBE_BEGIN(mla_probe::load_issue, s, blk);
          if (lane == 0) {
            mbar_expect_tx(base + P.full_bar(s), P.tile_bytes);
            const int phys = __ldg(row_table + blk);
#pragma unroll
            for (int p = 0; p < P.panels; ++p)
              tma_load(base + P.kv_stage(s) + panels[p], &tma_kv, base + P.full_bar(s), p * P.panel_cols, phys * kBlock);
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
            const int* counter = counters + static_cast<long long>(r) * gridDim.y + blockIdx.y;
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
  if (wg == 1) mla_consumer<C, 0>(args);
  else mla_consumer<C, 1>(args);
}

}  // namespace tl
