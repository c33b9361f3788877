// mla.sparse_decode: DeepSeek Sparse Attention decoding over an FP8 paged KV cache (FlashMLA's sparse decode) —
// gathered and dequantized in the kernel, bf16 wgmma, split-KV with the merge in the launch.
//
// Per query token (b, s) of `batch` x `seq_q` (a request of the split-KV schedule: r = b * seq_q + s), its `heads`
// query rows (Q [batch, seq_q, heads, 576] bf16) attend to the cache tokens listed in indices[b, s, 0 .. len), len =
// min(topk_length[b], topk) (topk without topk_length): entry i names row (i / block_size) * block_rows +
// i % block_size of the cache (blocks of block_size tokens, block_rows >= block_size rows apart), each token a
// 656-byte row in FlashMLA's V3.2 FP8 format (512 e4m3 values times their 128-value group's f32 scale, then 64 bf16
// values). An index < 0 or >= num_tokens is invalid and attends nothing. S = Q K^T / sqrt(576) over the 576
// dequantized columns, O = softmax(S) V over the first 512; a row with no valid index gets O = 0 and LSE = +inf
// (FlashMLA's convention). With `sink` (f32 per head, or null), O is scaled by exp(LSE) / (exp(LSE) + exp(sink[h])),
// LSE unchanged. Outputs: O [batch, seq_q, heads, 512] bf16, LSE [batch, heads, seq_q] f32 (natural log).
//
// Split-KV as mla.decode's (mla/mla_schedule.hpp over each request's blocks of 64 index entries; the host passes
// `parts` and `num_splits`; grid (num_parts, m_tiles), m_tiles = ceil(heads / 64)); the consumer warpgroups are
// mla.decode's own code (mla_consumer.cuh: Q K^T, online softmax, P V, the merge of split requests by the CTA that
// finishes last), on mla.decode's shared-memory tiles (mla_decode_plan.hpp). Only the producer differs; it gathers
// as C.gather says: by cp.async copies into the stage (`copies`, described first), or into registers (`regs`, after
// it; the spec's default with one Q K^T warpgroup), or `paired` (registers in a crossover pair, copies elsewhere).
//
// Threads: 3 warpgroups. Warpgroup 0, the producer, fills the 2-stage ring of 64-token bf16 KV tiles; warp w owns
// rows 16w .. 16w + 15 of each block. Lanes 0..15 hold the warp's 16 index entries of the block, read a block ahead;
// the warp records which are valid in the stage's mask, waits for the stage to be free and issues each valid token's
// 656 bytes as 41 cp.async chunks into the token's own row of the stage (the plan's raw_col: chunk j at column 8j),
// so the loads need no registers and all 16 rows are in flight at once. Then, C.dequant_rows rows at a time as their
// copies land: the warp reads the rows' chunks (lane l: the 16 e4m3 values of chunk l, its group's scale, 2 RoPE
// values; one shared-memory latency for the batch), and after a __syncwarp writes each row's 576 bf16 values over
// them (e4m3x4_to_bf16x4_scaled, times scale * 2^120 in bf16: exact for power-of-two scales up to 2^7; an invalid
// token becomes a zero row, so P V sees 0, never a stale value). fence.proxy.async and one arrival of each of the 128
// threads on the stage's full barrier publish the tile to the consumers' wgmma. Lane 0 of warp 0 also loads the
// request's Q tile by TMA (after issuing its first block's copies), as mla.decode's producer does. Registers (the
// plan's): consumers 224 each (mla.decode's code fits; 216 spills), the producer the 56 left. Measured on the GPU
// (docs/perf.md): the consumers alone would run V3.2's shape 2.7x as fast; the producer bounds the kernel, and
// neither its copies nor its arithmetic alone (each ablated: 1-3%): the suspect is its chain of shared-memory round
// trips per row while the consumers' wgmma load shared memory, hence the batched reads. An L2 prefetch of the next
// block's rows measured 7% slower and was removed.
//
// Crossover (C.crossover with an even number of 64-head tiles; FlashMLA's technique for h_q 128): the two CTAs of a
// head-tile pair (x, 2j), (x, 2j + 1) run as a 2-CTA cluster and walk the same blocks, so each gathers and
// dequantizes half of every block (warp w: rows 16w + 8 rank .. + 7) and writes its rows into its own stage and, by
// st.async, into the peer's, whose per-stage remote barrier the writes complete (armed each block by the owner with
// the half's bytes). Consumers wait on the full and the remote barrier, and release a stage on both CTAs' empty
// barriers (4 arrivals), since the peer writes into it. Every CTA computes the whole valid mask itself. Measured
// 1.36-1.39x at the 128-head shapes on an H200 (docs/perf.md); C.rope_direct (the plan's comment) 1.04-1.07x at 64
// heads, 0.93x with crossover, hence its default `unpaired`: only a CTA without a peer copies RoPE straight.
// C.peer_copy=bulk (the spec's auto where the CTAs pair): a CTA's producer stores its rows into its own stage only, and
// at the publish (after each lane's fence.proxy.async and a __syncwarp) one lane a warp copies the warp's 8 rows into
// the peer's stage by cp.async.bulk, one 1 KiB copy per 64-column panel (the plan's peer_copy_offset), completing the
// same remote barrier with the same bytes: 24 st.async a lane and block less (each issued with the lane's 16 bytes),
// 9 copies of one lane instead (about 12 SASS instructions each: the addresses go to uniform registers). Measured
// 1.21-1.23x st.async at V3.2 b 64 / 128 h 128 on an H100 (docs/perf.md), though the peer's half now starts after the
// warp's last store. bulk_half: the first 4 rows' 512-byte copies as soon as they are stored (a fence and __syncwarp
// more), the rest at the publish: 1.09-1.10x st.async, slower than bulk. (Each row's stores touch every panel, so no
// panel is complete before the piece's last row: a per-panel copy would need another store order.)
//
// Lookahead (C.lookahead, off): block it + 1's copies go into the other stage as soon as the consumers release it,
// polled (mbarrier.test_wait) between block it's row batches, at the latest right after block it is published, so
// their latency overlaps this block's dequantization. Measured 0.81-0.86x on an H200 (docs/perf.md): issuing a
// block's gathers costs the warp about 0.9 us of its own time wherever it goes, and it then sits inside the dequant
// (timeline: dequant 4.4 us per block and warp with the issue in it, against about 3.8 us per block before), so the
// latency it hides is less than the issue it moves onto the dequant's path; its build also spills 20 bytes.
//
// Gather regs (C.gather): each warp keeps a ring of 8 of its rows in registers (lane l: the row's NoPE bytes 16l ..
// 16l + 15, its group's scale, RoPE values 2l, 2l + 1: six registers), loaded by ld.global.nc (L2 256-byte hint)
// a block before they are converted; once the stage is free the ring's rows are converted and stored (the same
// conversion and bank-conflict-free stores as copies, and st.async into the crossover peer), then the ring reloads
// with the next 8 rows (with crossover, the next block's, so the loads' latency overlaps the publish and the next
// empty-barrier wait; 64 heads: the block's other 8 rows, then the next block's). The raw bytes never pass through
// shared memory. Registers: the producer 128, consumer 0 208, consumer 1 (P V only) 168, each set in its own
// branch. Measured 1.00-1.21x copies on an H100 (docs/perf.md, with what ptxas does to loads kept in flight); the
// spec's default (`auto`) with one Q K^T warpgroup. What decides its speed is where ptxas puts the moves of reloaded
// values into the ring's registers (a move waits for its load where it is placed): at the crossover block loop's end,
// before the publish (fence and full-barrier arrival), each holds the block back by a load latency. Which registers
// ptxas picks depends on the whole kernel's pressure: consumer 0 (at 208) held a 64-bit epilogue row offset that
// the compiler hoisted out of the request loop; with C.opaque_rows (on; regs and paired only) the consumers recompute
// it per request, and then the crossover loop has no such move (SASS: stores, loads, publish) and runs 1.07-1.11x at
// the 128-head shapes (1.01x at 64; docs/perf.md). C.late_reload (off): the ring loads the next block's rows after
// this block is published, not before; with opaque_rows it builds without spills (without, it spills 24 bytes in
// consumer 0) and adds 0.5-2% at 128 heads, 0.99-1.00x at 64, so it stays off. C.hybrid (the spec's auto at heads
// <= 64; only in a CTA without a crossover peer): the ring holds each warp's first 8 rows of a block; its last 8 are
// cp.async copies into their rows' raw chunks, issued right after the empty-barrier wait (the copies gather's
// copy_rows), converted from shared memory after the ring's rows (convert_rows), so their latency overlaps the ring
// rows' conversion instead of the block waiting for a reload of its own rows; the ring then reloads with the next
// block's first 8 rows. Measured 1.04-1.09x the ring alone at the three 64-head anchors on an H100 (docs/perf.md);
// with that reload issued before the copied rows (mid-block), ptxas moved one reloaded value into its ring register
// ahead of the rolled conversion loop, the block waited for that load there, and it ran 0.92-0.96x.
// C.c1_rows (2 or 4, off; with hybrid, in a CTA without a crossover peer): consumer 1, which runs only P V and waits
// for P most of a block at 64 heads, converts the last c1_rows rows of each producer warp's 16 (ConsumerOneRows: its
// copies of block it + 1's rows issued at the top of its block it, converted after its P V of block it is issued, or
// with C.c1_early right away, before it waits for P, during consumer 0's softmax); the producer's copies take rows 8 ..
// 15 - c1_rows, the full barriers count 256 there. Both share RowCodec (the producer's copies, reads, conversion and
// stores). Registers 208 / 176 / 120. Measured on an H100 (docs/perf.md, sparse18): 2 rows early 1.002-1.026x the
// default at the 64-head peak case, 1.003-1.037x at V3.2 b 128 h 64, 0.99-1.02x at b 64 h 64 (two rounds, the
// default's own spread between them 1.5%); 2 rows after P V 0.985-1.015x; 4 rows early 0.94x at V3.2 b 128 h 64. The
// spec's auto: 2 rows early at <= 64 heads with hybrid (18 of 21 median comparisons won over three calls).
// C.prmt_cvt (the spec's auto where hybrid runs at <= 64 heads): each row's conversion (RowCodec::write_row, the producer's and consumer 1's) a bf16 pair at a time
// as prmt(a, b, sel) with the lane's selector register (prmt_cvt_selector: the pair's two bytes at the top of the
// halves, the low one's sign replicated into the byte between them, taken from the lane's chunk of columns 16l +
// 8 * first, so the permute also does the chunk order), a signed shift right by 4 and one mask: 4 SASS instructions a
// pair with its HMUL2 instead of 6 (PRMT with a zero byte, SHF, two LOP3, HMUL2, SEL), the same bits; the 64-head
// block loop 1182 -> 1020 static instructions, 224 fewer a producer warp and block (nvdisasm), 1459 -> 1233 warp
// instructions a block under ncu at the peak h 64 case. Measured on an H100 (docs/perf.md, sparse20): 1.096-1.113x at
// the 64-head peak case, 1.034-1.089x at V3.2 b 128 / 64 h 64 (now 1.08-1.11x FlashMLA there), but 0.927-0.929x at
// V3.2 b 128 h 128, where the CTAs pair (the crossover loop's SASS has the same loads, stores and publish order; the
// cause is not established), so it is off there.
//
// Shared memory: mla.decode's plan (Q, two KV stages, P, exchanges, barriers, flag), then the stages' 8-byte valid
// masks and the crossover's remote barriers (mla_sparse_decode_plan.hpp). The full barriers count 128 producer
// arrivals; the empty ones 2 (consumers; crossover: 4).
#pragma once

#include "tile/cluster.cuh"
#include "tile/cp_async.cuh"
#include "tile/global.cuh"
#include "mla/mla_consumer.cuh"
#include "mla/mla_sparse_decode_plan.hpp"

namespace tl {
namespace mla_sparse_detail {

// Copy groups: token t's copies are committed as group t / 4, so the dequant of token t waits for its group only.
enum : int { kGroupTokens = 4 };

// gather=regs: what a token without a valid index loads (zeros: a zero row in the stage). A variable template, so a
// module that does not use it (mla.sparse_prefill's) does not hold it.
template <int BYTES>
__device__ __align__(16) const unsigned char zero_row[BYTES] = {};

// The producer's two codes: alone, or one CTA of a crossover pair (ON: a compile-time switch for a generic lambda).
template <bool ON>
struct Crossover {
  static constexpr bool on = ON;
};

// Waits for copy group g of G, when E more groups were committed after the G: cp.async.wait_group takes a constant,
// and groups g + 1 .. G - 1 and the E may stay in flight.
template <int G, int E>
TL_DEVICE_INLINE void wait_copies_of_group(int g) {
  if constexpr (G > 0) {
    if (g == 0) cp_async_wait<G - 1 + E>();
    else wait_copies_of_group<G - 1, E>(g - 1);
  }
}

// An index entry names a cache row when it is in [0, num_tokens): row (idx / block_size) * block_rows +
// idx % block_size of the cache's 656-byte rows (block_rows >= block_size: blocks may be padded).
TL_DEVICE_INLINE bool entry_valid(int idx, long long num_tokens) { return idx >= 0 && idx < num_tokens; }
TL_DEVICE_INLINE unsigned cache_row(int idx, int block_size, int block_rows) {
  return static_cast<unsigned>(idx / block_size) * static_cast<unsigned>(block_rows) + static_cast<unsigned>(idx % block_size);
}

// The part's blocks in the order the producer fills them (its requests in order, each one's blocks), walked ahead of
// the block being filled: k-th request r of the part, block blk of its [blk, b1).
struct BlockCursor {
  const mla_detail::PartWalk& walk;
  int k = -1, r = 0, L = 0, blk = 0, b1 = 0;
  TL_DEVICE_INLINE BlockCursor(const mla_detail::PartWalk& w, const int* topk_length, int topk, int seq_q, int heads,
                               int m0)
      : walk(w) {
    settle(topk_length, topk, seq_q, heads, m0);
  }
  TL_DEVICE_INLINE bool done() const { return k >= walk.count; }
  // To the next request with a block, from a request whose blocks are used up.
  TL_DEVICE_INLINE void settle(const int* topk_length, int topk, int seq_q, int heads, int m0) {
    while (blk >= b1 && k < walk.count) {
      if (++k >= walk.count) return;
      r = walk.first + k;
      L = mla_detail::sparse_length(topk_length, topk, seq_q, r);
      int split;
      walk.range<false>(r, L, 1, heads, m0, heads, blk, b1, split);
    }
  }
  TL_DEVICE_INLINE void advance(const int* topk_length, int topk, int seq_q, int heads, int m0) {
    ++blk;
    settle(topk_length, topk, seq_q, heads, m0);
  }
  // Lanes 0..15: this warp's entries of the block (-1 past the request's length, or past the part).
  TL_DEVICE_INLINE int entry(const int* __restrict__ indices, int topk, int warp, int lane) const {
    const int pos = blk * kMlaBlock + 16 * warp + lane;
    return !done() && lane < 16 && pos < L ? __ldg(indices + static_cast<long long>(r) * topk + pos) : -1;
  }
};


// A warp's rows 16 warp .. 16 warp + 15 of a KV stage, as the producer (and consumer 1 with c1_rows) fill them: where a
// lane's raw chunks land and its bf16 values go (the plan's comment), a row's copies, read, conversion and stores.
// RD: rope_direct's layout of the raw chunks; PEER: crossover with peer_copy=store (each row's values also go into the
// peer's stage by st.async, + peer_delta).
template <MlaSparseDecodeConfig C, bool RD, bool PEER>
struct RowCodec {
  static constexpr MlaSparseDecodePlan SP = make_plan(C);
  static constexpr MlaDecodePlan P = SP.mma;
  const int lane;
  // A lane's columns as unswizzled byte offsets in row 0; token t of the warp's rows sits at wrow + row_off[t] and
  // xors its swizzle term into them (the plan's comment).
  static TL_DEVICE_INLINE unsigned col_off(int col) { return 2u * static_cast<unsigned>(P.tile.layout()(0, col)); }
  static TL_DEVICE_INLINE unsigned warp_rows(int warp) {
    return 2u * static_cast<unsigned>(P.tile.layout()(SP.rows_per_warp * warp, 0));
  }
  // The scale, RoPE and tail chunks' offsets are recomputed where used (a few integer operations from the lane):
  // the registers hold the rows being converted instead.
  const unsigned raw_nope;
  // The two 16-byte stores of a lane's 16 NoPE columns, in an order that alternates with lane bit 2, so the 8
  // lanes of a quarter warp (two panels) store 8 different chunk positions: no bank conflict.
  const bool first;
  // The other chunk of the pair is the neighbouring 16 bytes (chunks 2i and 2i + 1 of a panel row): out_a ^ 16.
  const unsigned out_a, out_rope;
  // The peer's copy of an address of this CTA's shared memory is at + peer_delta (one CTA's window is contiguous).
  const unsigned peer_delta;
  // prmt_cvt: the lane's permute selector of a chunk's even pairs (its odd pairs' is + 0x2222): `first` picks the
  // pair's bytes from the chunk of columns 16l + 8 (the uint4's z, w) through the permute (prmt_cvt_selector).
  const unsigned sel;
  TL_DEVICE_INLINE RowCodec(int ln, unsigned delta = 0u)
      : lane(ln),
        raw_nope(col_off(SP.raw_col(ln))),
        first((ln >> 2) & 1),
        out_a(col_off(SP.nope(ln, 0).col + 8 * first)),
        out_rope(col_off(kMlaDimV + SP.rope(ln, 0).col)),
        peer_delta(delta),
        sel(prmt_cvt_selector(first, 0)) {}
  // prmt_cvt: bf16 pair i % 2 of 32-bit word a (first: of b) of the lane's row times 2^-120 (prmt_cvt_selector), times
  // scale2.
  TL_DEVICE_INLINE unsigned cvt_pair(unsigned a, unsigned b, int i, unsigned scale2) const {
    unsigned w;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(w) : "r"(a), "r"(b), "r"(i % 2 ? sel + 0x2222u : sel));
    return mul_bf16x2(static_cast<unsigned>(static_cast<int>(w) >> 4) & kPrmtCvtMask, scale2);
  }
  // Lanes 0..8's chunk of the row's scales and RoPE; rope_direct: lane 0's scales beside the NoPE chunks, lanes
  // 1..8's RoPE chunks at the row's last 64 columns.
  TL_DEVICE_INLINE unsigned raw_tail() const {
    if constexpr (RD) return col_off(lane == 0 ? SP.raw_col(kMlaFp8ScaleChunk) : kMlaDimV + 8 * (min(lane, 8) - 1));
    else return col_off(SP.raw_col(kMlaFp8ScaleChunk + min(lane, 8)));
  }
  TL_DEVICE_INLINE unsigned raw_scale() const {
    return col_off(SP.raw_col(kMlaFp8ScaleChunk)) + 4u * static_cast<unsigned>(lane / 8);
  }
  TL_DEVICE_INLINE unsigned raw_rope() const {
    return col_off(SP.raw_col(kMlaFp8RopeChunk + lane / 4)) + 4u * static_cast<unsigned>(lane % 4);
  }
  // Token t's row offset and swizzle term (bytes), computed in rolled loops: the registers hold a batch of rows, not
  // sixteen.
  static TL_DEVICE_INLINE unsigned row_off(int t) { return 2u * static_cast<unsigned>(P.tile.layout()(t, 0)); }
  static TL_DEVICE_INLINE unsigned row_term(int t) {
    return 2u * static_cast<unsigned>(P.tile.swizzle().term(P.tile.layout()(t, 0)));
  }

  // Row t's 656 cache bytes at src by cp.async into its raw chunks of the warp's rows at `stage` (lane l: NoPE chunk l;
  // lanes 0..8 the scale and RoPE chunks). own: the row is this CTA's to convert (crossover with rope_direct: the
  // peer's rows get their RoPE chunks only).
  TL_DEVICE_INLINE void copy_row(unsigned stage, int t, const unsigned char* src, bool own) const {
    const unsigned row = stage + row_off(t), term = row_term(t);
    if (own) cp_async_16(row + (raw_nope ^ term), src + 16 * lane, 16);
    if (lane <= 8 && (own || lane > 0))
      cp_async_16(row + (raw_tail() ^ term), src + 16 * (kMlaFp8ScaleChunk + lane), 16);
  }
  // Token t's raw chunks into registers (lane l: NoPE chunk l, its group's scale, 2 RoPE values); zeros for a
  // token without a valid index.
  TL_DEVICE_INLINE void read_row(unsigned stage, int t, unsigned mask, uint4& v, unsigned& rope, float& sc) const {
    v = make_uint4(0u, 0u, 0u, 0u), rope = 0u, sc = 0.f;
    if ((mask >> t) & 1u) {
      const unsigned row = stage + row_off(t), term = row_term(t);
      v = ld_shared_v4_b32(row + (raw_nope ^ term));
      sc = ld_shared_f32(row + (raw_scale() ^ term));
      if constexpr (!RD) rope = ld_shared_b32(row + (raw_rope() ^ term));
    }
  }
  // Row t's 576 bf16 values from its raw chunks, over them (PEER: also into the peer's stage, completing on its
  // barrier peer_bar).
  TL_DEVICE_INLINE void write_row(unsigned stage, int t, const uint4& v, unsigned rope, float sc,
                                  unsigned peer_bar) const {
    const unsigned row = stage + row_off(t), term = row_term(t);
    const unsigned scale2 = pack2<true>(sc * 0x1p120f, sc * 0x1p120f);
    if constexpr (C.prmt_cvt) {
      // The first store's chunk (columns 16l + 8 * first) from v.x, v.y or v.z, v.w as the selector says, the
      // second's from the others: the permutes do the choosing (no selects).
      const unsigned a0 = cvt_pair(v.x, v.z, 0, scale2), a1 = cvt_pair(v.x, v.z, 1, scale2),
                     a2 = cvt_pair(v.y, v.w, 0, scale2), a3 = cvt_pair(v.y, v.w, 1, scale2);
      const unsigned b0 = cvt_pair(v.z, v.x, 0, scale2), b1 = cvt_pair(v.z, v.x, 1, scale2),
                     b2 = cvt_pair(v.w, v.y, 0, scale2), b3 = cvt_pair(v.w, v.y, 1, scale2);
      store_row(row, term, a0, a1, a2, a3, b0, b1, b2, b3, rope, peer_bar);
      return;
    }
    unsigned d[8];
    e4m3x4_to_bf16x4_scaled(v.x, d[0], d[1]);
    e4m3x4_to_bf16x4_scaled(v.y, d[2], d[3]);
    e4m3x4_to_bf16x4_scaled(v.z, d[4], d[5]);
    e4m3x4_to_bf16x4_scaled(v.w, d[6], d[7]);
#pragma unroll
    for (int i = 0; i < 8; ++i) d[i] = mul_bf16x2(d[i], scale2);
    // The first store takes the chunk of columns 16l + 8 * first (selects: a register array indexed at run time
    // would go to local memory).
    const unsigned a0 = first ? d[4] : d[0], a1 = first ? d[5] : d[1], a2 = first ? d[6] : d[2],
                   a3 = first ? d[7] : d[3];
    const unsigned b0 = first ? d[0] : d[4], b1 = first ? d[1] : d[5], b2 = first ? d[2] : d[6],
                   b3 = first ? d[3] : d[7];
    store_row(row, term, a0, a1, a2, a3, b0, b1, b2, b3, rope, peer_bar);
  }
  // A row's two 16-byte chunks (a: the lane's first store's, out_a) and its RoPE word (PEER: into the peer's stage too).
  TL_DEVICE_INLINE void store_row(unsigned row, unsigned term, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                  unsigned b0, unsigned b1, unsigned b2, unsigned b3, unsigned rope,
                                  unsigned peer_bar) const {
    st_shared_v4_b32(row + (out_a ^ term), a0, a1, a2, a3);
    st_shared_v4_b32(row + (out_a ^ 16u ^ term), b0, b1, b2, b3);
    if constexpr (!RD) st_shared_b32(row + (out_rope ^ term), rope);
    if constexpr (PEER) {
      st_async_v4_b32(row + (out_a ^ term) + peer_delta, a0, a1, a2, a3, peer_bar);
      st_async_v4_b32(row + (out_a ^ 16u ^ term) + peer_delta, b0, b1, b2, b3, peer_bar);
      if constexpr (!RD) st_async_b32(row + (out_rope ^ term) + peer_delta, rope, peer_bar);
    }
  }
  // NR rows from t0 on, copied into the warp's rows at `stage`: their reads are issued together (one shared-memory
  // latency for the batch, not one per row), a __syncwarp, then their writes over the rows' raw chunks (a row not in
  // `masks` becomes a zero row).
  template <int NR>
  TL_DEVICE_INLINE void convert_rows(unsigned stage, int t0, unsigned masks, unsigned peer_bar) const {
    __syncwarp();  // every lane's copies have landed (each waited for its own), and rows before t0 are written
    uint4 v[NR];
    unsigned rope[NR];
    float sc[NR];
#pragma unroll
    for (int j = 0; j < NR; ++j) read_row(stage, t0 + j, masks, v[j], rope[j], sc[j]);
    __syncwarp();  // the rows' chunks are all read before any lane writes over them
#pragma unroll
    for (int j = 0; j < NR; ++j) write_row(stage, t0 + j, v[j], rope[j], sc[j], peer_bar);
  }
};

// c1_rows (gather=regs with hybrid, a CTA without a crossover peer): consumer 1 converts rows T0 .. 15 of each producer
// warp's 16 (T0 = 16 - c1_rows; its warp w the rows of producer warp w), the producer the rest. As mla_consumer's
// helper: issue(it), at the top of consumer 1's block it, waits for block it + 1's stage to be free (both consumers
// released block it - 1) and issues its rows' 656 bytes as cp.async copies into the rows' raw chunks (RowCodec's
// copy_row, the producer's); finish(it) waits for them, converts the rows in place two at a time (RowCodec's
// convert_rows: invalid entries become zero rows), fences them for the async proxy and arrives on the stage's full
// barrier, which then counts 256 (the producer's 128 and these). mla_consumer calls finish once consumer 1's P V of
// block it is issued (the wgmma runs meanwhile), or with EARLY (c1_early) right before it waits for P, during consumer
// 0's softmax. The index entries are read a block before their copies are issued (lanes 0 .. c1_rows - 1); the
// producer writes the whole valid mask (its lanes hold all 16 entries).
template <MlaSparseDecodeConfig C>
struct ConsumerOneRows {
  static constexpr MlaSparseDecodePlan SP = make_plan(C);
  static constexpr MlaDecodePlan P = SP.mma;
  static constexpr int H = SP.helper_rows, T0 = SP.rows_per_warp - H;
  static constexpr bool early = C.c1_early;
  static_assert(H > 0 && H <= kGroupTokens && H % 2 == 0, "one copy group; two rows a batch");
  using Codec = RowCodec<C, false, false>;
  // Consumer 1 holds O (128 registers) beside this: the lane's offsets are recomputed where used (from threadIdx),
  // the cursor's block and the flags are what stays.
  static TL_DEVICE_INLINE int lane() { return static_cast<int>(threadIdx.x % 32); }
  static TL_DEVICE_INLINE int warp() { return static_cast<int>(threadIdx.x % 128 / 32); }
  // The codec of this lane and its warp's rows, from values ptxas cannot hoist out of the block loop (sparse16: with
  // plain ones it kept the rows' swizzled store offsets across it and spilled).
  static TL_DEVICE_INLINE Codec codec(unsigned& wrow) {
    int w = warp(), l = lane();
    asm volatile("" : "+r"(w), "+r"(l));
    wrow = Codec::warp_rows(w);
    return Codec(l);
  }
  BlockCursor ahead;  // the block whose entries are read next
  const unsigned char* kv;
  const int* indices;
  const int* topk_length;
  long long num_tokens;
  int topk, seq_q, heads, m0, block_size, block_rows;
  unsigned base;
  int entry = -1;  // lanes 0 .. H - 1: their entry of the next block to issue
  // Bits 0 .. H - 1: rows T0 + t of the block issued last that have a valid index; kHas: the next block to issue
  // exists; kPending: issue issued a block that finish has yet to convert; kOn: no crossover peer.
  enum : unsigned { kHas = 1u << 8, kPending = 1u << 9, kOn = 1u << 10 };
  unsigned flags;

  TL_DEVICE_INLINE ConsumerOneRows(const mla_detail::PartWalk& walk, const unsigned char* kv_, const int* indices_,
                                   const int* topk_length_, long long num_tokens_, int topk_, int seq_q_, int heads_,
                                   int m0_, int block_size_, int block_rows_, unsigned base_, bool on)
      : ahead(walk, topk_length_, topk_, seq_q_, heads_, m0_), kv(kv_), indices(indices_), topk_length(topk_length_),
        num_tokens(num_tokens_), topk(topk_), seq_q(seq_q_), heads(heads_), m0(m0_), block_size(block_size_),
        block_rows(block_rows_), base(base_), flags(on ? kOn : 0u) {}
  TL_DEVICE_INLINE void read_entry() {
    const bool has = (flags & kOn) && !ahead.done();
    const int pos = ahead.blk * kMlaBlock + 16 * warp() + T0 + lane();
    const bool ok = has && lane() < H && pos < ahead.L;
    entry = ok ? __ldg(indices + static_cast<long long>(ahead.r) * topk + pos) : -1;
    flags = (flags & ~kHas) | (has ? kHas : 0u);
    ahead.advance(topk_length, topk, seq_q, heads, m0);
  }
  TL_DEVICE_INLINE void prologue() {
    read_entry();
    issue(-1);
    finish(-1);
  }
  TL_DEVICE_INLINE void issue(int it) {
    flags &= kOn | kHas;
    if (!(flags & kHas)) return;
    unsigned wrow;
    const Codec codec = ConsumerOneRows::codec(wrow);
    const int i = it + 1, s = i & 1;
    const unsigned stage = base + P.kv_stage(s) + wrow;
    const bool valid = entry_valid(entry, num_tokens);
    const unsigned row_of = valid ? cache_row(entry, block_size, block_rows) : 0u;
    const unsigned mask = __ballot_sync(0xffffffffu, valid) & ((1u << H) - 1u);
    flags |= mask | kPending;
    mbar_wait(base + P.empty_bar(s), static_cast<unsigned>(((i >> 1) & 1) ^ 1));
#pragma unroll
    for (int t = 0; t < H; ++t) {
      const unsigned rw = __shfl_sync(0xffffffffu, row_of, t);
      if ((mask >> t) & 1u)
        codec.copy_row(stage, T0 + t, kv + static_cast<unsigned long long>(rw) * kMlaFp8RowBytes, true);
    }
    cp_async_commit();
    read_entry();  // the block after: its latency under this block's P V
  }
  TL_DEVICE_INLINE void finish(int it) {
    if (!(flags & kPending)) return;  // issue(it) issued no block
    unsigned wrow;
    const Codec codec = ConsumerOneRows::codec(wrow);
    const unsigned stage = base + P.kv_stage((it + 1) & 1) + wrow;
    const unsigned mask = (flags & ((1u << H) - 1u)) << T0;
    cp_async_wait<0>();
#pragma unroll
    for (int t = 0; t < H; t += 2) codec.template convert_rows<2>(stage, T0 + t, mask, 0u);
    fence_proxy_async_smem();
    mbar_arrive(base + P.full_bar((it + 1) & 1));
  }
};

}  // namespace mla_sparse_detail

template <MlaSparseDecodeConfig C>
__global__ void __launch_bounds__(make_plan(C).mma.threads, 1)
    mla_sparse_decode(const __grid_constant__ TmaDescriptor tma_q, const unsigned char* __restrict__ kv,
                      const int* __restrict__ indices, const int* __restrict__ topk_length, const float* __restrict__ sink,
                      unsigned short* __restrict__ O, float* __restrict__ LSE, const int* __restrict__ parts,
                      const int* __restrict__ num_splits, float* __restrict__ o_acc, float* __restrict__ lse_acc,
                      int* __restrict__ counters, int batch, int seq_q, int heads, int topk, int block_size,
                      int block_rows, long long num_tokens) {
  using namespace mla_detail;
  using namespace mla_sparse_detail;
  static constexpr MlaSparseDecodePlan SP = make_plan(C);
  static constexpr MlaDecodePlan P = SP.mma;
  static constexpr MlaDecodeConfig CC = consumer_config(C);
  static_assert(P.acc_s.linear() && P.acc_o.linear() && P.out_vec.linear() && SP.nope.linear() && SP.rope.linear(),
                "the helpers add a thread's coordinate and a value's (tabulated) one");

  extern __shared__ unsigned char smem_raw[];
  const unsigned base = smem_align<1024>(smem_raw);

  const int requests = batch * seq_q, m0 = blockIdx.y * P.rows, part = blockIdx.x;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  // Crossover: the launch made (x, 2j) and (x, 2j + 1) a cluster under this same condition.
  const bool pair = C.crossover && gridDim.y % 2 == 0;
  const unsigned rank = pair ? cluster_ctarank() : 0u;
  if (threadIdx.x == 0) {
    prefetch_tensormap(&tma_q);
    // Crossover: the peer's consumers too (its half lands here); c1_rows without a peer: consumer 1's 128 arrivals too.
    init_ring_barriers<CC>(base, SP.helper_rows > 0 && !pair ? 256 : 128, pair ? 4 : 2);
    if (pair)
      for (int s = 0; s < 2; ++s) mbar_init(base + SP.remote_bar(s), 1);
    fence_mbarrier_init();
    TL_PROBE_BLOCK_BEGIN();
  }
  if (pair) cluster_sync();  // the peer's barriers are initialized before anything of this CTA arrives on them
  else __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<SP.producer_regs>();
    TL_PROBE_WARP_INIT();
    // The producer (alone, or crossover: this CTA's warp w gathers and dequantizes rows 16w + 8 rank .. + 7 of each
    // block, the peer the other 8, each writing its rows into both CTAs' stages).
    const auto produce = [&](auto mode) {
      constexpr bool X = decltype(mode)::on;
      constexpr bool REGS = C.gather == MlaSparseGather::regs || (C.gather == MlaSparseGather::paired && X);
      // gather=regs: RoPE values pass through registers like the rest of the row.
      constexpr bool RD =
          !REGS && (C.rope_direct == MlaRopeDirect::on || (C.rope_direct == MlaRopeDirect::unpaired && !X));
      constexpr bool LA = C.lookahead;
      // Crossover, peer_copy=bulk / bulk_half: the rows go into the own stage only, and send_half copies them into
      // the peer's, in PARTS pieces of the warp's rows.
      constexpr bool BULK = X && C.peer_copy != MlaPeerCopy::store;
      constexpr int PARTS = SP.peer_copy_parts(C.peer_copy);
      // Rows of its 16 a warp fills (c1_rows without a peer: consumer 1 the last c1_rows).
      constexpr int TR = X ? SP.rows_per_warp / 2 : SP.rows_per_warp - SP.helper_rows;
      const int tb = X ? TR * static_cast<int>(rank) : 0;
      // The peer's copy of an address of this CTA's shared memory is at + peer_delta (one CTA's window is contiguous).
      const unsigned peer_delta = X ? map_shared_rank(base, rank ^ 1u) - base : 0u;
      // The warp's rows: where a lane's raw chunks land and its values go, a row's copies, read, conversion and stores
      // (consumer 1's with c1_rows too).
      using Codec = RowCodec<C, RD, X && !BULK>;
      const Codec codec(lane, peer_delta);
      const unsigned wrow = Codec::warp_rows(warp);
      const auto write_row = [&](unsigned stage, int t, const uint4& v, unsigned rope, float sc, unsigned peer_bar) {
        codec.write_row(stage, t, v, rope, sc, peer_bar);
      };

      // peer_copy=bulk / bulk_half, once piece `part` of the warp's rows of stage s is stored and each lane's stores
      // are fenced for the async proxy: one lane copies the piece into the peer's stage, a bulk copy per panel (the
      // plan's peer_copy_offset), completing on the peer's remote barrier peer_bar. The own stage is rewritten only
      // after both CTAs' consumers release it, the peer's after waiting on that barrier, so the copies have read it.
      const auto send_half = [&](int s, int part, unsigned peer_bar) {
        if constexpr (BULK) {
          __syncwarp();
          if (lane == 0) {
#pragma unroll
            for (int k = 0; k < SP.peer_copy_panels(RD); ++k) {
              const unsigned src = base + P.kv_stage(s) + SP.peer_copy_offset(warp, rank, k, part, PARTS);
              bulk_copy_to_peer(src + peer_delta, src, SP.peer_copy_bytes(PARTS), peer_bar);
            }
          }
        }
      };
      // bulk_half: after the warp's first `done` rows of stage s are stored, their piece goes unless it is the last
      // (the publish sends that one).
      const auto send_early = [&](int s, int done, unsigned peer_bar) {
        if constexpr (BULK && PARTS > 1) {
          if (done % (TR / PARTS) == 0 && done < TR) {
            fence_proxy_async_smem();
            send_half(s, done / (TR / PARTS) - 1, peer_bar);
          }
        }
      };

      // A block's copies: this warp's entries idx (lanes 0..15) into stage s (its empty barrier passed); returns the
      // block's valid mask (bit t: row t) after storing it for the consumers. Crossover with rope_direct: every row's
      // RoPE (the peer writes only NoPE values here), so all 16 rows are walked, copy groups numbered by row in both
      // CTAs. Each lane commits NG groups either way.
      constexpr bool all_rows = X && RD;
      constexpr int NG = (all_rows ? SP.rows_per_warp : TR) / kGroupTokens;
      // Rows t_begin .. t_end - 1 of the warp's (copy groups of 4 from t_begin; a row not in the mask is skipped, and
      // hybrid's mask has no row of consumer 1's) by cp.async into the stage at `stage` (the warp's rows), the cache
      // rows in lanes 0..15 (cache_row_of; read only where the mask has the row): group by group, each committed. The
      // copies gather's issue, and gather=regs with hybrid (its second ring's rows).
      const auto copy_rows = [&](unsigned stage, unsigned cache_row_of, unsigned mask, int t_begin, int t_end) {
        // A group's rows go to every lane at once (the shuffles' latencies overlap), then its copies.
#pragma unroll 1
        for (int t0 = t_begin; t0 < t_end; t0 += kGroupTokens) {
          const bool own = !all_rows || (t0 >= tb && t0 < tb + TR);
          unsigned rows[kGroupTokens];
#pragma unroll
          for (int j = 0; j < kGroupTokens; ++j) rows[j] = __shfl_sync(0xffffffffu, cache_row_of, t0 + j);
#pragma unroll
          for (int j = 0; j < kGroupTokens; ++j) {
            if ((mask >> (t0 + j)) & 1u)
              codec.copy_row(stage, t0 + j, kv + static_cast<unsigned long long>(rows[j]) * kMlaFp8RowBytes, own);
          }
          cp_async_commit();
        }
      };
      const auto issue = [&](int s, int idx) {
        const unsigned stage = base + P.kv_stage(s) + wrow;
        const bool valid = entry_valid(idx, num_tokens);
        const unsigned cache_row_of = valid ? cache_row(idx, block_size, block_rows) : 0u;
        const unsigned mask = __ballot_sync(0xffffffffu, valid) & 0xffffu;
        // Crossover: this stage's barrier for the peer's half expects its bytes (the peer's writes may land first).
        if (X && tid == 0) mbar_expect_tx(base + SP.remote_bar(s), SP.remote_bytes(RD));
        copy_rows(stage, cache_row_of, mask, all_rows ? 0 : tb, all_rows ? SP.rows_per_warp : tb + TR);
        if (lane == 0)
          st_shared_b16(base + SP.valid_mask(s) + 2u * static_cast<unsigned>(warp), static_cast<unsigned short>(mask));
        return mask;
      };
      // C.dequant_rows rows from t0 on, copied into stage `stage` (RowCodec::convert_rows).
      constexpr int NR = C.dequant_rows;
      const auto convert_rows = [&](unsigned stage, int t0, unsigned masks, unsigned peer_bar) {
        codec.template convert_rows<NR>(stage, t0, masks, peer_bar);
      };
      // KV stage s's empty barrier before block `it`'s fill.
      const auto empty_parity = [](int i) { return static_cast<unsigned>(((i >> 1) & 1) ^ 1); };

      int it = 0;
      const PartWalk walk(parts, part, requests);
      if constexpr (REGS) {
        // A ring of D rows per warp in registers: row t of the warp's TR waits in slot t % D. Once the ring's D rows
        // are stored, each slot loads the row D further on: a later row of this block (64 heads: TR = 16), or a row of
        // the next block. So the next block's rows are in flight while this block is published and the stage it goes
        // to is waited for.
        constexpr int D = SP.gather_rows;
        static_assert((C.hybrid && !X) || TR % D == 0, "whole rings per block (hybrid: one ring, then copies)");
        // hybrid (a CTA without a crossover peer): the ring holds the block's first D rows only; the others are copied
        // by cp.async into their rows' raw chunks as soon as the stage is free, and converted from shared memory after
        // the ring's rows (the copies gather's conversion), so their latency overlaps the ring rows' conversion and no
        // block waits for a reload of its own rows; the ring then reloads with the next block's first rows.
        constexpr bool HY = C.hybrid && !X;
        constexpr int RT = HY ? D : TR;  // the ring's rows of a block
        static_assert(!HY || (TR > D && (TR - D) % NR == 0), "whole batches");
        // hybrid's copied rows (RT .. TR - 1) in copy groups of 4 (c1_rows 2: the last group 2 rows; the copies never
        // touch consumer 1's rows, masked out).
        constexpr int HG = (TR - RT + kGroupTokens - 1) / kGroupTokens;
        constexpr unsigned kOwnRows = (1u << TR) - 1u;
        constexpr unsigned kNone = ~0u;  // no valid index (cache rows are < 2^31: can_implement)
        constexpr bool LR = C.late_reload;  // the next block's loads after the publish (the header's comment)
        uint4 v[D];
        unsigned rope[D];
        float sc[D];
        // Lanes 0..15: the cache row of their entry, one division each (not one per row and lane).
        const auto to_row = [&](int idx) {
          return entry_valid(idx, num_tokens) ? cache_row(idx, block_size, block_rows) : kNone;
        };
        // Row tb + t of the block whose cache rows (lanes 0..15) are `rows` into slot j; a row without a valid index
        // loads the zero row (a zero row in the stage, never a stale value). Unconditional loads on purpose: a
        // predicated one merges with the slot's old value, which ptxas resolves by loading into a temporary and moving
        // it into the slot right after the load, and the move waits for the load where it is issued.
        const auto load = [&](unsigned rows, int t, int j) {
          const unsigned row = __shfl_sync(0xffffffffu, rows, tb + t);
          const unsigned char* src =
              row != kNone ? kv + static_cast<unsigned long long>(row) * kMlaFp8RowBytes : zero_row<kMlaFp8RowBytes>;
          v[j] = ld_global_stream_v4<true>(src + 16 * lane);
          sc[j] = __ldg(reinterpret_cast<const float*>(src + kMlaFp8Nope) + lane / 8);
          rope[j] = __ldg(reinterpret_cast<const unsigned*>(src + 16 * kMlaFp8RopeChunk) + lane);
        };
        // The cache rows of the block being filled (cur) and of the next one (next_rows, whose loads this block
        // issues), and the entries of the block after that, read two blocks before their rows are computed so that
        // the read's latency is never waited for (a block of conversion hides it; one empty-barrier wait does not:
        // with the entries read one block ahead the timeline's dequant was 3.4 us a block).
        BlockCursor ahead(walk, topk_length, topk, seq_q, heads, m0);
        // Lanes 0..15: their entry of the cursor's block as the raw load and whether it is one (an unconditional load
        // from a clamped position: a conditional one merges with the old value, and ptxas's move of the merge waits
        // for the load where it is issued); -1 when it is not.
        const auto read_entry = [&](int& raw, bool& ok) {
          const int pos = ahead.blk * kMlaBlock + 16 * warp + lane;
          ok = !ahead.done() && lane < 16 && pos < ahead.L;
          raw = __ldg(indices + (ok ? static_cast<long long>(ahead.r) * topk + pos : 0));
          ahead.advance(topk_length, topk, seq_q, heads, m0);
        };
        int raw;
        bool ok;
        read_entry(raw, ok);
        unsigned cur = to_row(ok ? raw : -1);
        read_entry(raw, ok);
        unsigned next_rows = to_row(ok ? raw : -1);
        read_entry(raw, ok);
#pragma unroll
        for (int j = 0; j < D; ++j) load(cur, j, j);
        for (int r = walk.first; r <= walk.last; ++r) {
          const int L = sparse_length(topk_length, topk, seq_q, r);
          int b0, b1, split;
          walk.range<false>(r, L, 1, heads, m0, heads, b0, b1, split);
          int qn = r - walk.first;  // the part's k-th request is its k-th Q load
          if (b0 == b1 && warp == 0) load_request_q<CC>(&tma_q, base, r, heads, m0, lane, qn);
          for (int blk = b0; blk < b1; ++blk, ++it) {
            const int s = it & 1;
            const unsigned stage = base + P.kv_stage(s) + wrow;
            const unsigned mask = __ballot_sync(0xffffffffu, cur != kNone) & 0xffffu;
            TL_PROBE_BEGIN(mla_sparse_probe::load_wait, s, blk);
            mbar_wait(base + P.empty_bar(s), empty_parity(it));
            TL_PROBE_END(mla_sparse_probe::load_wait, s, blk);
            // Crossover: this stage's barrier for the peer's half expects its bytes (the peer's writes may land first).
            if (X && tid == 0) mbar_expect_tx(base + SP.remote_bar(s), SP.remote_bytes(false));
            if (lane == 0)
              st_shared_b16(base + SP.valid_mask(s) + 2u * static_cast<unsigned>(warp), static_cast<unsigned short>(mask));
            if constexpr (HY) copy_rows(stage, cur, mask & kOwnRows, RT, TR);
            if (blk == b0 && warp == 0) load_request_q<CC>(&tma_q, base, r, heads, m0, lane, qn);
            TL_PROBE_BEGIN(mla_sparse_probe::dequant, s, blk);
            const unsigned peer_bar = X ? base + SP.remote_bar(s) + peer_delta : 0u;
            // A ring's rows are all stored before any of its slots loads again: a load issued while its slot's old
            // value is still to be stored needs a second register, and ptxas's move back into the slot at the end of
            // the loop waits for the load.
#pragma unroll
            for (int t0 = 0; t0 < RT; t0 += D) {
#pragma unroll
              for (int j = 0; j < D; ++j) {
                write_row(stage, tb + t0 + j, v[j], rope[j], sc[j], peer_bar);
                send_early(s, t0 + j + 1, peer_bar);
              }
#pragma unroll
              for (int j = 0; j < D; ++j) {
                if (t0 + D < RT) load(cur, t0 + D + j, j);
                else if constexpr (!LR && !HY) load(next_rows, j, j);
              }
            }
            if constexpr (HY) {
#pragma unroll 1
              for (int t = RT; t < TR; t += NR) {
                if ((t - RT) % kGroupTokens == 0) wait_copies_of_group<HG, 0>((t - RT) / kGroupTokens);
                convert_rows(stage, t, mask, peer_bar);
              }
              // The ring's reload with the next block's rows after these (issued before them, ptxas moved one
              // reloaded value into its ring register ahead of the rolled loop: the block waited for that load there).
              if constexpr (!LR) {
#pragma unroll
                for (int j = 0; j < D; ++j) load(next_rows, j, j);
              }
            }
            // Published: the generic-proxy writes visible to the wgmma (and to send_half's copies), one arrival of
            // each thread.
            fence_proxy_async_smem();
            mbar_arrive(base + P.full_bar(s));
            send_half(s, PARTS - 1, peer_bar);
            if constexpr (LR) {
#pragma unroll
              for (int j = 0; j < D; ++j) load(next_rows, j, j);
            }
            TL_PROBE_END(mla_sparse_probe::dequant, s, blk);
            TL_PROBE_BEGIN(mla_sparse_probe::index, s, blk);
            cur = next_rows;
            next_rows = to_row(ok ? raw : -1);
            read_entry(raw, ok);
            TL_PROBE_END(mla_sparse_probe::index, s, blk);
          }
        }
        return;
      }
      // The index entries (lanes 0..15) of the next block, read a block ahead so that their latency is not on the
      // path from a free stage to a full one (lookahead: read when block it starts, used when block it + 1 is issued
      // during it).
      BlockCursor ahead(walk, topk_length, topk, seq_q, heads, m0);
      int next = ahead.entry(indices, topk, warp, lane);
      // Bits 0..15: the valid mask of the block being dequantized; lookahead: bits 16..31 that of the block issued
      // ahead (the part's first block here, then block it + 1 during block it). One register: the producer has 56.
      unsigned masks = 0u;
      if constexpr (LA) {
        if (!ahead.done()) {
          mbar_wait(base + P.empty_bar(0), empty_parity(0));
          masks = issue(0, next) << 16;
        }
      }
      ahead.advance(topk_length, topk, seq_q, heads, m0);
      for (int r = walk.first; r <= walk.last; ++r) {
        const int L = sparse_length(topk_length, topk, seq_q, r);
        int b0, b1, split;
        walk.range<false>(r, L, 1, heads, m0, heads, b0, b1, split);
        auto load_q = [&] {
          int qn = r - walk.first;  // the part's k-th request is its k-th Q load
          if (warp == 0) load_request_q<CC>(&tma_q, base, r, heads, m0, lane, qn);
        };
        if (b0 == b1) load_q();
        bool first_blk = true;
        for (int blk = b0; blk < b1; ++blk, ++it) {
          const int s = it & 1;
          const unsigned stage = base + P.kv_stage(s) + wrow;
          // Lookahead: block it + 1 (entries `next`, if has_next), issued into the other stage as soon as the
          // consumers release it, between this block's row batches, at the latest after this block is published.
          bool has_next = false, issued = false;
          TL_PROBE_BEGIN(mla_sparse_probe::index, s, blk);
          if constexpr (LA) {
            masks >>= 16, has_next = !ahead.done();
            next = ahead.entry(indices, topk, warp, lane);
            ahead.advance(topk_length, topk, seq_q, heads, m0);
            TL_PROBE_END(mla_sparse_probe::index, s, blk);
          } else {
            // Lanes 0..15: this block's 16 entries of this warp; the next block's read.
            const int idx = next;
            next = ahead.entry(indices, topk, warp, lane);
            ahead.advance(topk_length, topk, seq_q, heads, m0);
            TL_PROBE_END(mla_sparse_probe::index, s, blk);
            TL_PROBE_BEGIN(mla_sparse_probe::load_wait, s, blk);
            mbar_wait(base + P.empty_bar(s), empty_parity(it));
            TL_PROBE_END(mla_sparse_probe::load_wait, s, blk);
            TL_PROBE_BEGIN(mla_sparse_probe::load_issue, s, blk);
            masks = issue(s, idx);
            TL_PROBE_END(mla_sparse_probe::load_issue, s, blk);
          }
          if (first_blk) load_q();
          first_blk = false;

          // C.dequant_rows rows at a time (convert_rows). Past the last batch: the block is published
          // (fence.proxy.async: the generic-proxy writes, rope_direct's copies too, visible to the wgmma; one arrival
          // of each thread on the full barrier).
          TL_PROBE_BEGIN(mla_sparse_probe::dequant, s, blk);
          const unsigned peer_bar = X ? base + SP.remote_bar(s) + peer_delta : 0u;
#pragma unroll 1
          for (int t0 = tb;; t0 += NR) {
            const bool last = t0 >= tb + TR;
            if (last) {
              // The RoPE copies of the peer's rows too (and none of the next block's groups).
              if constexpr (all_rows) {
                if (issued) cp_async_wait<NG>();
                else cp_async_wait<0>();
              }
              fence_proxy_async_smem();
              mbar_arrive(base + P.full_bar(s));
              send_half(s, PARTS - 1, peer_bar);
            }
            if constexpr (LA) {
              // Every lane takes the other stage once one saw it free (a phase it saw completed stays completed
              // until this producer fills it), and waits on it for the barrier's ordering.
              const unsigned empty = base + P.empty_bar(s ^ 1);
              if (!issued && has_next && (last || __any_sync(0xffffffffu, mbar_test_wait(empty, empty_parity(it + 1))))) {
                TL_PROBE_BEGIN(mla_sparse_probe::load_wait, s ^ 1, blk);
                mbar_wait(empty, empty_parity(it + 1));
                TL_PROBE_END(mla_sparse_probe::load_wait, s ^ 1, blk);
                TL_PROBE_BEGIN(mla_sparse_probe::load_issue, s ^ 1, blk);
                masks |= issue(s ^ 1, next) << 16;
                issued = true;
                TL_PROBE_END(mla_sparse_probe::load_issue, s ^ 1, blk);
              }
            }
            if (last) break;
            if ((t0 - tb) % kGroupTokens == 0) {
              // The group's copies; the next block's NG groups, when issued, were committed after this block's.
              TL_PROBE_BEGIN(mla_sparse_probe::copy_wait, s, t0);
              const int g = all_rows ? t0 / kGroupTokens : (t0 - tb) / kGroupTokens;
              if (issued) wait_copies_of_group<NG, NG>(g);
              else wait_copies_of_group<NG, 0>(g);
              TL_PROBE_END(mla_sparse_probe::copy_wait, s, t0);
            }
            convert_rows(stage, t0, masks, peer_bar);
            send_early(s, t0 - tb + NR, peer_bar);
          }
          TL_PROBE_END(mla_sparse_probe::dequant, s, blk);
        }
      }
    };
    if (pair) produce(Crossover<true>{});
    else produce(Crossover<false>{});
    TL_PROBE_FLUSH();
  } else {
    // gather=copies: both consumers at one limit (and no opaque_rows: with it the copies build spilled 28 bytes at
    // vec_store=false, dequant_rows=1); otherwise each its own, set in its own branch (the plan's comment).
    const auto args = [&] {
      ConsumerArgs a{base, O, LSE, nullptr, parts, num_splits, o_acc, lse_acc, counters, requests, 1, heads,
                     topk_length, sink, topk, seq_q, base + SP.valid_mask(0)};
      if (pair) a.remote_base = base + SP.remote_bar(0), a.peer = rank ^ 1u;
      return a;
    };
    if constexpr (C.gather == MlaSparseGather::copies) {
      setmaxnreg_inc<SP.consumer_regs>();
      const ConsumerArgs a = args();
      if (wg == 1) mla_consumer<CC, 0, true>(a);
      else mla_consumer<CC, 1, true>(a);
    } else if (wg == 1) {
      // Each consumer its own limit, set in its own branch, and its arguments built after it (built before the
      // branch, ptxas held them across both limits: 40 bytes of spills at 160 registers).
      setmaxnreg_inc<SP.consumer_regs>();
      mla_consumer<CC, 0, true, false, C.opaque_rows>(args());
    } else {
      // From the 168 a thread starts with (c1_rows: 176, the producer's 8 freed).
      if constexpr (SP.consumer1_regs > 168) setmaxnreg_inc<SP.consumer1_regs>();
      else setmaxnreg_dec<SP.consumer1_regs>();
      if constexpr (SP.helper_rows > 0) {
        // c1_rows: consumer 1 converts the last c1_rows rows of each producer warp's 16 (ConsumerOneRows) where no
        // crossover peer shares the conversion.
        const auto help = [&](const PartWalk& walk) {
          return ConsumerOneRows<C>(walk, kv, indices, topk_length, num_tokens, topk, seq_q, heads, m0, block_size,
                                    block_rows, base, !pair);
        };
        mla_consumer<CC, 1, true, false, C.opaque_rows>(args(), help);
      } else {
        mla_consumer<CC, 1, true, false, C.opaque_rows>(args());
      }
    }
  }
  // Crossover: neither CTA leaves while its peer may still write into its stages or arrive on its barriers.
  if (pair) cluster_sync();
}

}  // namespace tl
