// The consumer side of the MLA kernels (mla.decode, mla.sparse_decode, mla.sparse_prefill): the split-KV walk, Q K^T,
// the online softmax, P V and the epilogue with the in-kernel merge of split requests, over the tiles of
// mla_decode_plan.hpp (mla.sparse_prefill is sparse decoding whose requests are never split, and also writes each
// row's max_logits: MAX_LOGITS).
//
// Both kernels keep Q and a 2-stage ring of 64-token KV tiles (bf16/f16, 64 x 576, SW128) in shared memory, filled by
// their producer warpgroup: mla.decode's by TMA from a paged cache, mla.sparse_decode's by a gather that
// dequantizes FP8 cache rows. The two consumer warpgroups do the rest, the same way for both (the threads, registers
// and shared memory are described in mla_decode.cuh). What differs is a template switch, SPARSE: a request's length
// (its cache length, or its topk), which keys a row sees (a causal limit and the cache tail, or the producer's
// per-stage mask of valid indices; the sparse producer writes invalid tokens as zero rows, so no V tail is cleared),
// where a row's LSE goes, and the attention sink that scales the sparse output.
#pragma once

#include "tile/barrier.cuh"
#include "tile/cluster.cuh"
#include "tile/config.hpp"
#include "tile/convert.cuh"
#include "tile/global.cuh"
#include "tile/ldmatrix.cuh"
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

// The CTA's row tile, the number of row tiles and its SM part: the grid is (parts, row tiles), or with C.tile_fast
// (row tiles, parts), a part's tiles consecutive CTAs (the spec's tile_order).
template <MlaDecodeConfig C>
TL_DEVICE_INLINE unsigned cta_tile() { return C.tile_fast ? blockIdx.x : blockIdx.y; }
template <MlaDecodeConfig C>
TL_DEVICE_INLINE unsigned cta_tiles() { return C.tile_fast ? gridDim.x : gridDim.y; }
template <MlaDecodeConfig C>
TL_DEVICE_INLINE unsigned cta_part() { return C.tile_fast ? blockIdx.y : blockIdx.x; }

// C.rope_regs: Q's RoPE columns (kMlaDimV .. kMlaDimQK - 1, the tile's last panel) as this thread's wgmma A fragments
// of Q K^T's last kRopeSteps k16 steps, 4 registers a step (rows 16 warp + lane / 4 and + 8, columns 2 (lane % 4) and
// + 8 of the step: the m64k16 A layout), by one ldmatrix.x4 a step from the Q tile: lane l gives the row
// 16 warp + l % 8 + 8 (l / 8 % 2), columns + 8 (l / 16), so matrices 0-3 are (rows, columns) + (0, 0), (8, 0), (0, 8),
// (8, 8), the order of the fragment's registers. The swizzle moves whole 16-byte chunks, so each row address is the
// tile layout's. Called once the request's Q is in (its full barrier waited), before the wgmma fence of Q K^T.
enum : int { kRopeStep0 = kMlaDimV / 16, kRopeSteps = (kMlaDimQK - kMlaDimV) / 16, kRopeRegs = 4 * kRopeSteps };
template <MlaDecodeConfig C>
TL_DEVICE_INLINE void load_rope_regs(unsigned* qr, unsigned q_base, int tid) {
  static constexpr MlaDecodePlan P = make_plan(C);
  const int lane = tid % 32, row = 16 * (tid / 32) + lane % 8 + 8 * (lane / 8 % 2), col = kMlaDimV + 8 * (lane / 16);
#pragma unroll
  for (int t = 0; t < kRopeSteps; ++t)
    ldmatrix_x4(q_base + 2u * static_cast<unsigned>(P.tile(row, col + 16 * t)), qr[4 * t], qr[4 * t + 1],
                qr[4 * t + 2], qr[4 * t + 3]);
}

// Issues S = Q K[rows]^T for the plan's s_cols cache rows starting at k_rows, over the 576 columns in k16 steps,
// into sacc (zeroed first) as one wgmma group. A K-major SW128 descriptor starts at the step's column in row 0 of
// the 8-row atom (where the swizzle moves nothing). C.uniform_desc: q_base and k_rows are warp-uniform values
// (mla_consumer's) and hi their descriptors' high word; each step's low word is theirs plus the step's offset >> 4.
// C.rope_regs: the steps from kRopeStep0 on take Q from qr (load_rope_regs), K from shared memory.
template <MlaDecodeConfig C>
TL_DEVICE_INLINE void issue_qk(float* sacc, unsigned q_base, unsigned k_rows, unsigned hi = wgmma_ops::kSw128DescHi,
                               const unsigned* qr = nullptr) {
  static constexpr MlaDecodePlan P = make_plan(C);
  static constexpr auto steps = tabulate<kMlaDimQK / 16>([](int i) { return 2u * P.tile(0, 16 * i); });
  static_assert([] {
    for (int i = 0; i < steps.size(); ++i)
      if (steps[i] % 16 != 0) return false;
    return true;
  }(), "a step's offset is a whole number of 16-byte units (the low word's address field)");
#pragma unroll
  for (int i = 0; i < P.acc_s.num_values(); ++i) sacc[i] = 0.f;
  using namespace wgmma_ops;
  wgmma_fence();
  const unsigned q_lo = sw128_desc_lo(q_base, 16), k_lo = sw128_desc_lo(k_rows, 16);
#pragma unroll
  for (int i = 0; i < steps.size(); ++i) {
    const unsigned at = steps[i];
    if (C.rope_regs && i >= kRopeStep0) {
      if constexpr (C.uniform_desc)
        WgmmaRS<P.s_cols, C.bf16, 0>::run(sacc, qr + 4 * (i - kRopeStep0), desc_of(k_lo + (at >> 4), hi), 1);
      else
        WgmmaRS<P.s_cols, C.bf16, 0>::run(sacc, qr + 4 * (i - kRopeStep0),
                                          smem_desc_sw128(k_rows + at, 16, P.desc_sbo), 1);
    } else if constexpr (C.uniform_desc) {
      WgmmaSS<P.s_cols, C.bf16, 0>::run(sacc, desc_of(q_lo + (at >> 4), hi), desc_of(k_lo + (at >> 4), hi));
    } else {
      const unsigned long long da = smem_desc_sw128(q_base + at, 16, P.desc_sbo);
      const unsigned long long db = smem_desc_sw128(k_rows + at, 16, P.desc_sbo);
      WgmmaSS<P.s_cols, C.bf16, 0>::run(sacc, da, db);  // both K-major, always accumulating (sacc zeroed above)
    }
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
// lse_index(row): where row `row` of the request goes in LSE.
template <MlaDecodeConfig C, class LseIndex>
TL_DEVICE_INLINE void store_output(const float* o, const float* lse, const float* scale, unsigned short* __restrict__ O,
                                   float* __restrict__ LSE, int r, int R, int m0, const int* rl, int c, int tid,
                                   LseIndex lse_index) {
  static constexpr MlaDecodePlan P = make_plan(C);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = m0 + rl[h];
    store_row16<C>(O + (static_cast<long long>(r) * R + min(row, R - 1)) * kDV + c * P.acc_o.cols(), o, h, scale[h], tid, row < R);
    if (row < R && c == 0 && P.acc_o(tid, 0).col == 0) LSE[lse_index(row)] = lse[h];
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

// Thread 0 of the sparse MLA kernels: the KV ring's full barriers (full_count arrivals) and empty ones (empty_count),
// and Q's full (one: the TMA's expect_tx) and empty (one per consumer warpgroup). mla.decode writes the same four
// lines in place: called there, they renumber its PTX registers, and its PTX is kept byte-identical.
template <MlaDecodeConfig C>
TL_DEVICE_INLINE void init_ring_barriers(unsigned base, unsigned full_count, unsigned empty_count) {
  static constexpr MlaDecodePlan P = make_plan(C);
  for (int s = 0; s < 2; ++s) {
    mbar_init(base + P.full_bar(s), full_count);
    mbar_init(base + P.empty_bar(s), empty_count);
  }
  mbar_init(base + P.q_full_bar(), 1);
  mbar_init(base + P.q_empty_bar(), 2);
}

// A producer warp of the MLA kernels: request r's Q tile (64 rows of Q's 2-D tensor map from row r * rows + m0,
// rows = Q's rows a request) by TMA, one box per panel (the box of columns [64p, 64p + 64) lands at the tile layout's
// (0, 64p)), once both consumers are done with the previous request's Q (the qn-th load; lane 0 issues).
template <MlaDecodeConfig CC>
TL_DEVICE_INLINE void load_request_q(const TmaDescriptor* tma_q, unsigned base, int r, int rows, int m0, int lane,
                                     int& qn) {
  static constexpr MlaDecodePlan P = make_plan(CC);
  static constexpr auto panels = tabulate<P.panels>([](int p) { return 2u * P.tile(0, p * P.panel_cols); });
  if (qn > 0) mbar_wait(base + P.q_empty_bar(), (qn - 1) & 1);
  if (lane == 0) {
    mbar_expect_tx(base + P.q_full_bar(), P.tile_bytes);
#pragma unroll
    for (int p = 0; p < P.panels; ++p)
      tma_load(base + P.off_q + panels[p], tma_q, base + P.q_full_bar(), p * P.panel_cols, r * rows + m0);
  }
  ++qn;
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
  // SPARSE only: a request is one query token of a batch entry; batch and seq_q above are then the requests
  // (b * s_q) and 1. topk_length (per batch entry, or null: topk for all) and topk give a request's length,
  // sparse_seq_q (s_q) the entry and position of a request for the LSE [b, h_q, s_q], sink (per head, or null) the
  // attention sink, valid_base the shared address of the producer's per-stage masks (8 bytes each: bit t = token t
  // of the stage's block has a valid index).
  const int* topk_length;
  const float* sink;
  int topk, sparse_seq_q;
  unsigned valid_base;
  // SPARSE with crossover (a 2-CTA cluster; 0: none): remote_base the shared address of the per-stage barriers the
  // peer's writes of its half of a block complete (8 bytes apart), waited beside the full barrier; peer the peer's
  // rank, whose empty barrier of the stage this warpgroup also arrives on (the peer writes into this CTA's stage).
  unsigned remote_base = 0, peer = 0;
  // SPARSE with MAX_LOGITS (mla.sparse_prefill): each row's largest scaled score, q.k / 24 (-inf without a key), at
  // the LSE's index.
  float* max_logits = nullptr;
  // chained_consumer with DYNAMIC (mla.sparse_prefill's dynamic token queue): the shared address of the token slot
  // the producer writes before each token's Q load (a token >= batch: no more).
  unsigned token_slot = 0;
};

// Topk entries request r attends to: its batch entry's topk_length, at most topk (indices past it are ignored).
TL_DEVICE_INLINE int sparse_length(const int* topk_length, int topk, int sparse_seq_q, int r) {
  return topk_length ? max(0, min(topk_length[r / sparse_seq_q], topk)) : topk;
}

// A request's epilogue on both consumer warpgroups, once each row's sum (l_tot, both warpgroups' added) and maximum
// (row_m, log2 units) are known: this split's LSE and 1 / sum; a split request's partial, count and (the last split)
// merge; the output. mla_consumer's and chained_consumer's (dense) ends.
template <MlaDecodeConfig C, int CONSUMER, bool SPARSE, bool MAX_LOGITS, bool OPAQUE_ROWS>
TL_DEVICE_INLINE void finish_request(const ConsumerArgs& a, float* o, const float* row_m, const float* l_tot, int r,
                                     int split, int m0, const int* rl, int tid, bool row_first) {
  static constexpr MlaDecodePlan P = make_plan(C);
  constexpr int c = CONSUMER;
  const float kInf = __int_as_float(0x7f800000);
  const unsigned flag_addr = a.base + P.off_flag;
  unsigned short* O = a.O;
  float* LSE = a.LSE;
  const int* num_splits = a.num_splits;
  float* o_acc = a.o_acc;
  float* lse_acc = a.lse_acc;
  int* counters = a.counters;
  const int seq_q = a.seq_q, heads = a.heads, R = seq_q * heads;
  const int ctid = threadIdx.x - 128;  // thread among the 256 consumers
  const int nspl = num_splits[r + 1] - num_splits[r];
  const int g0 = num_splits[r];
  // The epilogue's rows (em0 + erl[h]; OPAQUE_ROWS: opaque from here on).
  int em0 = m0, erl[2] = {rl[0], rl[1]};
  if constexpr (OPAQUE_ROWS) asm volatile("" : "+r"(em0), "+r"(erl[0]), "+r"(erl[1]));
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
    // mla.sparse_decode with uniform_desc: the grid's row tiles from R (its heads), not gridDim, which ptxas there
    // kept from the kernel's start (its crossover test) in a vector register and spilled (4 bytes).
    const unsigned tiles = SPARSE && C.uniform_desc ? static_cast<unsigned>((R + P.rows - 1) / P.rows) : cta_tiles<C>();
    int* counter = counters + static_cast<long long>(r) * tiles + cta_tile<C>();
    if (ctid == 0) {
      const int seen = ld_acquire_gpu(counter);
      st_shared_b32(flag_addr, seen == nspl - 1 ? 1u : 0u);
    }
    named_barrier_sync(1, 256);
    unsigned last = ld_shared_b32(flag_addr);
    const bool wrote = !last;
    if (!last) {
      store_partial<C>(o, lse, scale, o_acc, lse_acc, g0 + split, R, em0, erl, c, tid);
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
      merge_splits<C>(o, lse, scale, o_acc, lse_acc, g0, nspl, split, R, em0, erl, c, tid);
      if (ctid == 0) *counter = 0;  // ready for the next launch
      write_out = true;
    }
  }
  // A row's LSE: dense requests hold rows s * heads + h of LSE [batch, heads, seq_q]; a sparse request is one query
  // token (batch entry r / s_q, position r % s_q) with rows = heads, whose output the sink scales by
  // exp(lse) / (exp(lse) + exp(sink)) (a row without keys stays 0, also for a sink of +inf).
  if (SPARSE && write_out && a.sink) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (lse[h] < kInf) scale[h] *= 1.f / (1.f + __expf(a.sink[min(em0 + erl[h], R - 1)] - lse[h]));
  }
  if (write_out) {
    if constexpr (SPARSE) {
      const int sq = a.sparse_seq_q;
      const auto lse_index = [&](int row) { return (static_cast<long long>(r / sq) * heads + row) * sq + r % sq; };
      store_output<C>(o, lse, scale, O, LSE, r, R, em0, erl, c, tid, lse_index);
      if constexpr (MAX_LOGITS) {
        // row_m is the largest score times log2(e) / 24 (-inf for a row without keys): ln 2 turns it into q.k / 24.
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = em0 + erl[h];
          if (row < R && c == 0 && row_first) a.max_logits[lse_index(row)] = row_m[h] * 0.6931471805599453f;
        }
      }
    } else {
      store_output<C>(o, lse, scale, O, LSE, r, R, em0, erl, c, tid,
                      [&](int row) { return (static_cast<long long>(r) * heads + row % heads) * seq_q + row / heads; });
    }
  }
}

// O (a consumer's 128 accumulators as mla_consumer's o: values 4j + 2h and 4j + 2h + 1 are row h's) rescaled by its
// two rows' factors. LAZY (MlaDecodeConfig::lazy_rescale): skipped when every factor of the warp's rows is exactly 1
// (no row maximum of the warp moved: exact, a multiply by 1.0f changes nothing). The vote is per warp: a warp holds
// the same 16 rows in both consumer warpgroups, so each decides alike from the same factors; no wgmma is inside it.
template <bool LAZY>
TL_DEVICE_INLINE void rescale_o(float* o, const float (&alpha)[2]) {
  if (!LAZY || __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int j = 0; j < 32; ++j) o[4 * j + 2 * h] *= alpha[h], o[4 * j + 2 * h + 1] *= alpha[h];
  }
}

// What consumer 1 (QK_WG == 1) may do for the producer in its idle time (mla.sparse_decode's c1_rows): nothing here.
// A helper's issue(it) runs at the top of consumer 1's block it, before it waits for P, and finish(it) right after its
// P V of block it is issued, while the wgmma runs (with `early`: right after issue, before it waits for P); prologue()
// before the first block. mla_consumer makes it from its part walk (MAKE_HELPER(walk)), so that the helper walks the
// part's blocks on the consumer's copy of it.
struct NoBlockHelper {
  static constexpr bool early = false;
  TL_DEVICE_INLINE void prologue() {}
  TL_DEVICE_INLINE void issue(int) {}
  TL_DEVICE_INLINE void finish(int) {}
};
struct NoHelper {
  TL_DEVICE_INLINE NoBlockHelper operator()(const PartWalk&) const { return {}; }
};

// Consumer warpgroup CONSUMER (0 or 1, a template parameter so that each warpgroup's code has no
// warpgroup-divergent branches: ptxas serializes every wgmma of a function when it must guard registers on a
// divergent path). MAX_LOGITS (SPARSE, unsplit requests only): also writes a.max_logits. OPAQUE_ROWS
// (mla.sparse_decode's opaque_rows): the epilogue's rows are taken through an empty asm once per request, so that no
// row offset derived from them (a 64-bit index) is hoisted out of the request loop and held across the block loop.
template <MlaDecodeConfig C, int CONSUMER, bool SPARSE = false, bool MAX_LOGITS = false, bool OPAQUE_ROWS = false,
          class MAKE_HELPER = NoHelper>
TL_DEVICE_INLINE void mla_consumer(const ConsumerArgs& a, const MAKE_HELPER& make_helper = MAKE_HELPER{}) {
  using namespace wgmma_ops;
  static constexpr MlaDecodePlan P = make_plan(C);
  static constexpr auto s_vals = tabulate<P.acc_s.num_values()>([](int v) { return P.acc_s(0, v); });
  static constexpr auto o_vals = tabulate<P.acc_o.num_values()>([](int v) { return P.acc_o(0, v); });
  constexpr int QK_WG = C.qk_warpgroups;
  const float kInf = __int_as_float(0x7f800000);
  // 1/sqrt(576) = 1/24, times log2(e): scores go straight into exp2.
  constexpr float kScaleLog2 = 1.4426950408889634f / 24.0f;
  const unsigned base = a.base, q_base = base + P.off_q, kv_base = base + P.off_kv, p_base = base + P.off_p;
  const unsigned q_full = base + P.q_full_bar(), q_empty = base + P.q_empty_bar();
  const int* cache_seqlens = a.cache_seqlens;
  const int* parts = a.parts;
  const int batch = a.batch, seq_q = a.seq_q, heads = a.heads;
  const int R = seq_q * heads, m0 = cta_tile<C>() * P.rows, part = cta_part<C>();
  const int tid = threadIdx.x % 128;
  constexpr int c = CONSUMER;
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
  unsigned qr[kRopeRegs];  // C.rope_regs: Q's RoPE panel as A fragments (load_rope_regs), the Q K^T warpgroups' only
  int it = 0, qn = 0;
  // C.uniform_desc: the wgmma descriptors are built from values ptxas can prove warp-uniform, the results of
  // redux.sync (warp_uniform): the KV ring counter once per block and the descriptors' high word once (as a constant,
  // ptxas moves it over again before each wgmma; uniform copies of the ring's base and P's low word made it worse:
  // ptxas held them in vector registers, 22 -> 26 R2UR). ptxas then keeps them in uniform registers and builds each k16
  // step's descriptor there (a uniform add of a constant onto the low word), where the default computes every
  // descriptor from its address per thread and moves it over by R2UR before each wgmma. The words are wgmma_ops.cuh's
  // sw128_desc_lo / kSw128DescHi (stride byte offset one 8-row atom: the plan's desc_sbo).
  static_assert(P.desc_sbo == 1024, "kSw128DescHi holds a stride byte offset of 1024");
  // SPARSE (mla.sparse_decode): the high word as the constant; as a redux.sync result ptxas allocated the producer's
  // ring differently and moved two reloaded scales right before the crossover publish (waiting for their loads there,
  // the loss of docs/perf.md's sparse9 and sparse10); with the constant the producer's loops are the default's.
  const unsigned hi_u = C.uniform_desc && !SPARSE ? warp_uniform(kSw128DescHi) : kSw128DescHi;

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
  // C.lean_softmax: P by stmatrix.x4, one per 16 tokens: S's accumulator pairs (value 4j + 2h + e at row 16 warp + lane / 4
  // + 8h, column 8j + 2 (lane % 4) + e) are matrices (h, j) of 8 rows and columns in stmatrix's register layout;
  // store g takes (0, 2g), (1, 2g), (0, 2g + 1), (1, 2g + 1), lane l giving row 16 warp + l % 8 + 8 (l / 8 % 2) of
  // columns tok0 + 16g + 8 (l / 16) (one 16-byte chunk of the swizzled tile): p_st[g].
  static_assert(!C.lean_softmax || [] {
    for (int t = 0; t < 128; ++t)
      if (!(P.acc_s(t, 0) == TileCoord{16 * (t / 32) + t % 32 / 4, 2 * (t % 4)})) return false;
    for (int j = 0; j < NS / 8; ++j)
      for (int h = 0; h < 2; ++h)
        for (int e = 0; e < 2; ++e)
          if (!(s_vals[4 * j + 2 * h + e] == TileCoord{8 * h, 8 * j + e})) return false;
    return NS % 16 == 0;
  }(), "lean_softmax: S's accumulators in stmatrix's layout");
  unsigned p_st[NS / 16];
  if constexpr (C.lean_softmax) {
    const int lane = tid % 32, row = 16 * (tid / 32) + lane % 8 + 8 * (lane / 8 % 2);
#pragma unroll
    for (int g = 0; g < NS / 16; ++g) p_st[g] = p_base + 2u * static_cast<unsigned>(P.p(row, tok0 + 16 * g + 8 * (lane / 16)));
  }
  auto help = make_helper(walk);
  if constexpr (!does_qk) help.prologue();
  for (int k = 0; k < walk.count; ++k) {
    const int r = walk.first + k;
    const int L = SPARSE ? sparse_length(a.topk_length, a.topk, a.sparse_seq_q, r) : cache_seqlens[r];
    int b0, b1, split;
    walk.range<C.causal>(r, L, seq_q, heads, m0, R, b0, b1, split);
    int lim[2];  // keys row h sees: [0, lim)
#pragma unroll
    for (int h = 0; h < 2; ++h) lim[h] = C.causal ? max(0, min(L, L - seq_q + (m0 + rl[h]) / heads + 1)) : L;
    float row_m[2] = {-kInf, -kInf}, row_l[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < 128; ++i) o[i] = 0.f;
    mbar_wait(q_full, qn & 1);
    if constexpr (C.rope_regs && does_qk) load_rope_regs<C>(qr, q_base, tid);

    for (int blk = b0; blk < b1; ++blk, ++it) {
      const int s = it & 1;
      const unsigned kv = kv_base + s * P.tile_bytes;
      // The stage's base for the descriptors (uniform_desc: from the warp-uniform ring counter).
      const unsigned kv_d =
          C.uniform_desc ? kv_base + (warp_uniform(static_cast<unsigned>(it)) & 1u) * P.tile_bytes : kv;
      const int valid = L - blk * kBlock;  // tokens of this block in the cache (< 64 only in the last block)
      if (does_qk) {
        TL_PROBE_BEGIN(mla_probe::wait_kv, s, blk);
        mbar_wait(base + P.full_bar(s), (it >> 1) & 1);
        if (SPARSE && a.remote_base) mbar_wait(a.remote_base + 8u * s, (it >> 1) & 1);
        TL_PROBE_END(mla_probe::wait_kv, s, blk);
        TL_PROBE_BEGIN(mla_probe::qk, s, blk);
        constexpr unsigned k_rows = 2 * P.tile(tok0, 0);
        issue_qk<C>(sacc, q_base, kv_d + k_rows, hi_u, qr);
      }
      if (does_qk) {
        wgmma_wait<0>();
        // Q is read by Q K^T alone: once the request's last one is complete the producer may load the next
        // request's Q, behind this block's softmax, P V and the epilogue instead of after them.
        if (blk == b1 - 1 && tid == 0) mbar_arrive(q_empty);
        TL_PROBE_END(mla_probe::qk, s, blk);

        // Mask keys past each row's limit (only the blocks that reach a limit pay for it); sparse: the tokens whose
        // index the producer found invalid (only blocks with one pay for it).
        TL_PROBE_BEGIN(mla_probe::softmax, s, blk);
        const int n0 = blk * kBlock + tok0;
        if constexpr (SPARSE) {
          const unsigned long long vm = ld_shared_b64(a.valid_base + 8u * static_cast<unsigned>(s)) >> tok0;
          if ((~vm & (NS == 64 ? ~0ull : (1ull << NS) - 1)) != 0) {
            const unsigned long long vt = vm >> s_at.col;  // bit c: this thread's column s_at.col + c
#pragma unroll
            for (int j = 0; j < NS / 8; ++j)
#pragma unroll
              for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                  if (!((vt >> s_vals[4 * j + 2 * h + e].col) & 1ull)) sacc[4 * j + 2 * h + e] = -kInf;
          }
        } else if (n0 + NS > min(lim[0], lim[1])) {
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
          // lean_softmax: from the first pair (ptxas keeps the fmax with -inf: one instruction and chain step a row).
          float v = C.lean_softmax ? fmaxf(sacc[2 * h], sacc[2 * h + 1]) : -kInf;
#pragma unroll
          for (int j = C.lean_softmax ? 1 : 0; j < NS / 8; ++j)
            v = fmaxf(v, fmaxf(sacc[4 * j + 2 * h], sacc[4 * j + 2 * h + 1]));
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
        // P = exp2(S scale - m) as 16 bits into the P tile: each pair of S's elements (acc_s) at its row and token
        // (lean_softmax: by stmatrix, p_st above).
        unsigned pw[NS / 4];
#pragma unroll
        for (int j = 0; j < NS / 8; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float e0 = exp2_approx(fmaf(sacc[4 * j + 2 * h], kScaleLog2, -m_use[h]));
            const float e1 = exp2_approx(fmaf(sacc[4 * j + 2 * h + 1], kScaleLog2, -m_use[h]));
            if (C.lean_softmax && j == 0) sum[h] = e0 + e1;  // not 0 + (e0 + e1): one FADD a row less
            else sum[h] += e0 + e1;
            if constexpr (C.lean_softmax) pw[2 * j + h] = pack2<C.bf16>(e0, e1);
            else st_shared_b32(p_row + (p_vals[4 * j + 2 * h] ^ p_term), pack2<C.bf16>(e0, e1));
          }
        if constexpr (C.lean_softmax)
#pragma unroll
          for (int g = 0; g < NS / 16; ++g) stmatrix_x4(p_st[g], pw[4 * g], pw[4 * g + 1], pw[4 * g + 2], pw[4 * g + 3]);
#pragma unroll
        for (int h = 0; h < 2; ++h) row_l[h] = row_l[h] * alpha[h] + sum[h];  // per-thread; quad, halves summed at the end
        rescale_o<C.lazy_rescale>(o, alpha);
        // Tokens past L in the request's last block may hold anything (NaN in FlashMLA's tests): P is 0 there, but
        // 0 * NaN is NaN, so each warpgroup zeroes those rows of its V columns (panels 4c .. 4c + 3) once every
        // Q K^T read of the stage is complete (here: this warpgroup's, and with QK_WG == 2 barrier 1 for the other's).
        if (!SPARSE && valid < kBlock) zero_v_tail<C>(kv, valid, c, tid);
        fence_proxy_async_smem();  // generic-proxy writes (P, zeroed rows) visible to wgmma
        named_barrier_sync(2, 256);
        TL_PROBE_END(mla_probe::softmax, s, blk);
      } else {
        // QK_WG == 1, consumer 1: wait for P and the rescale factors, rescale O, zero its V tail rows (consumer 0's
        // Q K^T of this block is complete: it waited before the softmax).
        TL_PROBE_BEGIN(mla_probe::softmax, s, blk);
        help.issue(it);
        if constexpr (decltype(help)::early) help.finish(it);
        named_barrier_sync(2, 256);
        {
          const float alpha[2] = {ld_shared_f32(base + P.off_max + 4 * P.row_max(rl[0], it & 1)),
                                  ld_shared_f32(base + P.off_max + 4 * P.row_max(rl[1], it & 1))};
          rescale_o<C.lazy_rescale>(o, alpha);
        }
        mbar_wait(base + P.full_bar(s), (it >> 1) & 1);  // long complete; makes the TMA writes visible to this warpgroup too
        if (SPARSE && a.remote_base) mbar_wait(a.remote_base + 8u * s, (it >> 1) & 1);
        if (!SPARSE && valid < kBlock) {
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
      const unsigned p_lo = sw128_desc_lo(p_base, 16), v_lo = sw128_desc_lo(kv_d, P.desc_v_lbo);
#pragma unroll
      for (int i = 0; i < p_steps.size(); ++i) {
        if constexpr (C.uniform_desc)
          WgmmaSS<P.acc_o.cols(), C.bf16, 1>::run(o, desc_of(p_lo + (p_steps[i] >> 4), hi_u),
                                                  desc_of(v_lo + (v_steps[i] >> 4), hi_u));
        else
          WgmmaSS<P.acc_o.cols(), C.bf16, 1>::run(o, smem_desc_sw128(p_base + p_steps[i], 16, P.desc_sbo),
                                                  smem_desc_sw128(kv + v_steps[i], P.desc_v_lbo, P.desc_sbo));
      }
      wgmma_commit();
      if constexpr (!does_qk && !decltype(help)::early) help.finish(it);
      wgmma_wait<0>();
      if (QK_WG == 1 && c == 1) named_barrier_arrive(3, 256);  // this P V is done with the P tile
      if (tid == 0) mbar_arrive(base + P.empty_bar(s));
      if (SPARSE && a.remote_base && tid == 0) mbar_arrive_cluster(map_shared_rank(base + P.empty_bar(s), a.peer));
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

    TL_PROBE_BEGIN(mla_probe::combine, probe::kNoStage, r);
    finish_request<C, CONSUMER, SPARSE, MAX_LOGITS, OPAQUE_ROWS>(a, o, row_m, l_tot, r, split, m0, rl, tid, row_first);
    TL_PROBE_END(mla_probe::combine, probe::kNoStage, r);
  }
  // QK_WG == 1: consume consumer 1's last barrier-3 arrival, so every arrive has its sync.
  if (QK_WG == 1 && c == 0 && it > 0) named_barrier_sync(3, 256);
  TL_PROBE_FLUSH();
  if (c == 0 && tid == 0) TL_PROBE_BLOCK_END();
}

// The two consumer warpgroups chained over a pair of blocks as FlashMLA's sparse prefill for Hopper
// (mla.sparse_prefill's chain, mla.decode's chained()). Block A (the pair's first) sits in stage 0, block B in stage 1
// (an odd request's last pair gets a B that attends nothing, so no branch guards a wgmma: SPARSE, invalid entries
// from the producer, zero rows and an empty mask; dense, the request's last block loaded again, all of S_B masked).
// Warpgroup c computes S of its own block (c 0: A, c 1: B) and owns O's V columns 256c .. 256c + 255:
//   c 0: S_A = Q K_A^T (half L first); the softmax at its running max m, m0 = max(m, rowmax S_A) to slot 0 of the
//        row maxima, barrier kMax0; O += P_A V_A[L] with P_A from registers; A's half L freed. Barrier kMax1: the
//        pair's max m1 (slot 1); P_A and O rescaled by exp2(m0 - m1), P_A into A's RoPE panel (read by A's Q K^T
//        alone, complete), barrier kPA. Barrier kPB: O += P_B V_B[L] (B's P tile) issued, left in flight while the
//        next pair's Q K^T of half L is issued; B's half L freed once it completes.
//   c 1: S_B = Q K_B^T (half R first); barrier kMax0: m1 = max(m0, rowmax S_B) (m0 already holds the previous
//        pair's m1), O rescaled to it, P_B, m1 to slot 1, barrier kMax1; O += P_B V_B[R] from registers; P_B into
//        the P tile, barrier kPB; barrier kPA: O += P_A V_A[R]; B's half R freed after the first P V, A's after the
//        second.
// So A's half L frees after one P V and B's half R half-way through the pair: the producer loads the next pair's
// first halves while this pair runs, with only the two stages. Row sums are each warpgroup's own at m1, added at
// the end. Stage s's half R has the barriers HALF_BAR + 8 s (full) and HALF_BAR + 16 + 8 s (empty), each empty
// barrier 128 arrivals (every thread of the warpgroup that frees the half). HEAD_FAST: the grid is (row tiles,
// parts) (mla.sparse_prefill's head_order), else (parts, row tiles). Dense (!SPARSE): keys past a row's causal limit
// or the request's length are masked, the warpgroup that computed a block's S zeroes the V rows past the cache's
// tokens in all 512 columns of its stage (NaN there would survive P = 0), and the epilogue is mla_consumer's
// (finish_request: split partials and the merge); SPARSE: a request is one query token, never split.
template <MlaDecodeConfig CC, int CONSUMER, bool SPARSE, unsigned HALF_BAR, bool HEAD_FAST, bool DYNAMIC = false>
TL_DEVICE_INLINE void chained_consumer(const ConsumerArgs& a) {
  static_assert(!DYNAMIC || SPARSE, "the dynamic token queue is mla.sparse_prefill's");
  using namespace wgmma_ops;
  static constexpr MlaDecodePlan P = make_plan(CC);
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
  static constexpr int half_steps = P.half_panels * P.panel_cols / 16;
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
  const auto full = [&](int s, int h) { return base + (h ? HALF_BAR + 8u * s : P.full_bar(s)); };
  const auto empty = [&](int s, int h) { return base + (h ? HALF_BAR + 16u + 8u * s : P.empty_bar(s)); };
  const int heads = a.heads, m0 = (HEAD_FAST ? blockIdx.x : blockIdx.y) * P.rows, tid = threadIdx.x % 128;
  const int seq_q = SPARSE ? 1 : a.seq_q, R = seq_q * heads;
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
  // CC.rope_regs: Q's RoPE panel as A fragments (load_rope_regs), consumer 0's only: with consumer 1's too the
  // build spills 48 B at CB 4096 (ptxas, 232 registers), with consumer 0's alone none.
  constexpr bool rope = CC.rope_regs && c == 0;
  unsigned qr[kRopeRegs];
  int pn = 0, qn = 0;
  const PartWalk walk(a.parts, HEAD_FAST ? blockIdx.y : blockIdx.x, a.batch);
  for (int k = 0; DYNAMIC || k < walk.count; ++k) {
    int r;
    if constexpr (DYNAMIC) {
      // The producer's next token, published with its Q (past the last: the end).
      mbar_wait(q_full, qn & 1);
      r = static_cast<int>(ld_shared_b32(a.token_slot));
      if (r >= a.batch) break;
    } else {
      r = walk.first + k;
    }
    const int L = SPARSE ? sparse_length(a.topk_length, a.topk, 1, r) : a.cache_seqlens[r];
    int b0, b1, split;
    if constexpr (DYNAMIC) {
      b0 = 0, b1 = (L + kBlock - 1) / kBlock, split = 0;
    } else {
      walk.range<CC.causal>(r, L, seq_q, heads, m0, R, b0, b1, split);
    }
    const int pairs = (b1 - b0 + 1) / 2;
    // Dense: keys row h sees, [0, lim). The rows go through an empty asm, so that their query positions (a
    // division) are computed here for each request rather than held across the whole walk (8 B of spills at 232).
    int lim[2], qrow[2] = {m0 + rl[0], m0 + rl[1]};
    if constexpr (!SPARSE && CC.causal) asm volatile("" : "+r"(qrow[0]), "+r"(qrow[1]));
#pragma unroll
    for (int h = 0; h < 2; ++h) lim[h] = CC.causal ? max(0, min(L, L - seq_q + qrow[h] / heads + 1)) : L;
    float row_m[2] = {-kInf, -kInf}, row_l[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < P.acc_o.num_values(); ++i) o[i] = 0.f;
    if constexpr (!DYNAMIC) mbar_wait(q_full, qn & 1);
    if constexpr (rope) load_rope_regs<CC>(qr, q_base, tid);
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
          if (rope && j >= kRopeStep0) {  // Q's RoPE steps from registers
            WgmmaRS<P.s_cols, CC.bf16, 0>::run(sacc, qr + 4 * (j - kRopeStep0),
                                               smem_desc_sw128(own + qk_steps[j], 16, P.desc_sbo), 1);
            continue;
          }
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
      if constexpr (SPARSE) {
        // The tokens whose index the producer found invalid (only blocks with one pay for it).
        const unsigned long long vm = ld_shared_b64(a.valid_base + 8u * static_cast<unsigned>(c));
        if (~vm != 0) {
          const unsigned long long vt = vm >> s_at.col;  // bit j: this thread's column s_at.col + j
#pragma unroll
          for (int v = 0; v < P.acc_s.num_values(); ++v)
            if (!((vt >> s_vals[v].col) & 1ull)) sacc[v] = -kInf;
        }
      } else {
        // Keys past each row's limit (only the blocks that reach one pay for it); every key of a B past the
        // request's blocks (the last block again: a limit of 0).
        const int n0 = blk * kBlock, l0 = blk < b1 ? lim[0] : 0, l1 = blk < b1 ? lim[1] : 0;
        if (n0 + kBlock > min(l0, l1)) {
#pragma unroll
          for (int v = 0; v < P.acc_s.num_values(); ++v)
            if (n0 + s_at.col + s_vals[v].col >= (s_vals[v].row == 0 ? l0 : l1)) sacc[v] = -kInf;
        }
        // The stage's V rows past the cache's tokens (the last block's tail may hold NaN, and 0 * NaN is NaN), all
        // 512 columns, now that this block's Q K^T is complete; the partner's P V of this stage comes after a
        // barrier this warpgroup arrives on later (kPA, kPB), its own after the fence.
        const int valid = L - min(blk, b1 - 1) * kBlock;
        if (valid < kBlock) {
          zero_v_tail<CC>(own, valid, 0, tid);
          zero_v_tail<CC>(own, valid, 1, tid);
          fence_proxy_async_smem();
        }
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
        // Dense: B's TMA writes seen by this warpgroup too (the wait is long complete; the stage's next fill needs
        // this warpgroup's release first).
        if constexpr (!SPARSE) mbar_wait(full(1, 0), pn & 1);
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
        if constexpr (!SPARSE) mbar_wait(full(0, 1), pn & 1);  // dense: A's TMA writes seen here too (as above)
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

    // Row sums of both warpgroups (a buffer per request parity, as mla_consumer's).
    const unsigned sum_buf = base + P.off_sum + 4 * P.row_sum(0, 0, qn & 1);
    float l_tot[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l_tot[h] = quad_sum(row_l[h]);
      if (row_first) st_shared_f32(sum_buf + 4 * P.row_sum(rl[h], c, 0), l_tot[h]);
    }
    named_barrier_sync(kSums, 256);
    // A request without blocks frees Q only here, once every consumer thread is past this barrier: with DYNAMIC the
    // producer writes the next token into the token slot as soon as Q is free, and a warp still to read this one
    // would take that one (its warpgroup split across two tokens: a hang). Elsewhere a wgmma of every warp comes first.
    if (pairs == 0 && tid == 0) mbar_arrive(q_empty);
#pragma unroll
    for (int h = 0; h < 2; ++h) l_tot[h] += ld_shared_f32(sum_buf + 4 * P.row_sum(rl[h], 1 - c, 0));
    ++qn;

    TL_PROBE_BEGIN(mla_probe::combine, probe::kNoStage, r);
    if constexpr (!SPARSE) {
      // Opaque rows: nothing the epilogue derives from them (the LSE index's division) is held across the walk.
      finish_request<CC, CONSUMER, false, false, true>(a, o, row_m, l_tot, r, split, m0, rl, tid, row_first);
    } else {
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
    }
    TL_PROBE_END(mla_probe::combine, probe::kNoStage, r);
  }
  TL_PROBE_FLUSH();
  if (c == 0 && tid == 0) TL_PROBE_BLOCK_END();
}

}  // namespace mla_detail
}  // namespace tl
