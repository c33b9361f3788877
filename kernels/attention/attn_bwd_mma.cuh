// attn.bwd.mma: the FlashAttention-2-style backward pass — cp.async, ldmatrix, mma.sync m16n8k16 — in one launch.
//
// From Q, K, V, O, dO and the forward's LSE: P = exp(scale S - LSE) with S = Q K^T, dV = P^T dO, dP = dO V^T,
// D = rowsum(dO * O), dS = P * (dP - D), dQ = scale dS K, dK = scale dS^T Q. Layouts as the forward's: dense Q, O, dO,
// dQ [batch, seq_q, heads, dim], K, V, dK, dV [batch, seq_k, heads_kv, dim], LSE [batch, heads, seq_q]; varlen packs
// the sequences (rows cu_seqlens[b] .. cu_seqlens[b+1]) and LSE is [heads, total_q]. Dense inputs come with
// cu_seqlens too (b * seq), so one indexing serves both.
//
// Work: CTA (key block n, kv head, sequence) owns block_N keys and their dK, dV, accumulated in registers over every
// query tile of every query head of its GQA group (so dK/dV of a group are summed without atomics, in a fixed order).
// Per query tile (block_M rows of one head), in order: D = rowsum(dO * O) into shared memory; S = Q K^T, P straight
// to shared memory (16-bit, 0 where masked); dP = dO V^T, dS = P (dP - D) to shared memory (P read back as rounded);
// dV += P^T dO; dK += dS^T Q; dQ_part = dS K, added by atomics into an f32 accumulator in global memory (scratch).
// A counter per (sequence, head, query tile) counts the key blocks that have added their part; the CTA that completes
// it converts the tile to 16-bit dQ (times scale), and leaves accumulator and counter zero for the next launch. With
// `deterministic`, a CTA adds its part only once the counter says every lower key block has (a turnstile): the sum
// runs in key-block order. Lower key blocks never wait on higher ones, and key blocks are blockIdx.x, so a waited-for
// CTA has a lower block index: it is resident or done as long as the GPU starts CTAs in block-index order (as
// FlashAttention-3's deterministic backward also assumes).
//
// Pipeline: K and V are loaded once. Q and dO of the next tile load into the other of num_stages = 2 buffers while
// this tile computes (num_stages = 1: after it); O has one buffer, refilled once every thread has read it for D.
// Barriers per tile: the loads landed; D written and O read (after S); P and dS written; the dQ counter's broadcast.
//
// Shared memory: [K][V][Q, dO per stage][O][P][dS][D f32][flag], each 16-bit tile 128-byte swizzled (the plan's
// attn_bwd_tile). Warps: each GEMM's output splits into warp tiles of 32 rows (two m16 tiles) by n8 columns, warp w
// at (w % warps_m, w / warps_m) of the plan's tiling; every operand comes from shared memory by ldmatrix, .trans where
// it is stored with its M/N index contiguous (P^T, dS^T as A; dO, Q, K as the B of dV, dK, dQ). Thread t holds the
// accumulators the plan's fragments give it (mma.m16n8k16 C, repeated); the copies and the D sums are the plan's
// attn_bwd_copy / attn_bwd_dot fragments (8 threads per 128-byte row segment; threads / block_M threads per row).
#pragma once

#include "attention/attn_bwd_mma_plan.hpp"
#include "tile/config.hpp"
#include "tile/convert.cuh"
#include "tile/cp_async.cuh"
#include "tile/global.cuh"
#include "tile/ldmatrix.cuh"
#include "tile/mma_sync.cuh"
#include "tile/probe.hpp"
#include "tile/reduce.hpp"
#include "tile/smem.cuh"

namespace tl {
namespace attn_bwd_detail {

// A compile-time loop: f(Int<B>{}), ..., f(Int<E - 1>{}). Inside f the index is a constant expression, so the plan's
// fragments and layouts are evaluated at it by the compiler: a thread evaluates each object once, at its own origin
// (value 0, its first row), and adds the constant rest (the tests check that these splits equal the objects).
template <int I>
struct Int {
  static constexpr int value = I;
};
template <int B, int E, class F>
TL_DEVICE_INLINE void static_for(F&& f) {
  if constexpr (B < E) {
    f(Int<B>{});
    static_for<B + 1, E>(f);
  }
}

// Issues the cp.async copies of tile T ((rows, cols) of 16-bit elements) whose row r starts at src + r * row_stride;
// rows at or past `valid` are zero-filled (their source is never read).
template <AttnBwdMmaConfig C, AttnBwdTile T>
TL_DEVICE_INLINE void load_tile(unsigned dst, const unsigned short* src, long long row_stride, int valid, int tid) {
  constexpr SwizzledLayout L = attn_bwd_tile(C, T);
  constexpr Fragment copy = attn_bwd_copy(C, T);
  const TileCoord t0 = copy(tid, 0);
  const int e0 = L(t0.row, 8 * t0.col);
  const unsigned short* s0 = src + t0.row * row_stride + 8 * t0.col;
  static_for<0, copy.num_values()>([&](auto V) {
    constexpr TileCoord cv = copy(0, decltype(V)::value);
    constexpr int ev = L(cv.row, 8 * cv.col);
    const int bytes = t0.row + cv.row < valid ? 16 : 0;
    cp_async_16(dst + 2u * static_cast<unsigned>(L.join_disjoint(e0, ev)), bytes ? s0 + cv.row * row_stride + 8 * cv.col : src,
                bytes);
  });
}

// Element offsets of an operand's ldmatrix addresses in tile T: the lane's part and the constant block part, joined
// by the tile's join_disjoint.
template <AttnBwdMmaConfig C, AttnBwdTile T, bool A, bool TRANS>
TL_DEVICE_INLINE int lane_offset(int mn0, int lane) {
  constexpr SwizzledLayout L = attn_bwd_tile(C, T);
  return attn_bwd_ldm_lane_offset<A, TRANS>(L, mn0, lane);
}
template <AttnBwdMmaConfig C, AttnBwdTile T, bool TRANS>
TL_HOST_DEVICE constexpr int block_offset(int mn, int k) {
  return attn_bwd_ldm_block_offset(attn_bwd_tile(C, T), TRANS, mn, k);
}
// The shared address of element offset join_disjoint(lane, block) of tile T at `base`.
template <AttnBwdMmaConfig C, AttnBwdTile T>
TL_DEVICE_INLINE unsigned at(unsigned base, int lane, int block) {
  constexpr SwizzledLayout L = attn_bwd_tile(C, T);
  return base + 2u * static_cast<unsigned>(L.join_disjoint(lane, block));
}

template <bool TRANS>
TL_DEVICE_INLINE void ldm_x4(unsigned addr, unsigned* r) {
  if constexpr (TRANS) ldmatrix_x4_trans(addr, r[0], r[1], r[2], r[3]);
  else ldmatrix_x4(addr, r[0], r[1], r[2], r[3]);
}

// The per-thread parts of GEMM G's operand addresses: A's at this warp's origin a0 (along M), and B's at b0 (along
// N) or, where the warp's columns straddle a 64-column panel (attn_bwd_b_lane_per_pair), at each of its 16-column
// pairs from b0.
template <AttnBwdMmaConfig C, AttnBwdGemm G>
TL_DEVICE_INLINE int a_lane_offset(int a0, int lane) {
  constexpr AttnBwdOperands op = attn_bwd_operands(C, G);
  return lane_offset<C, op.a, true, op.a_trans>(a0, lane);
}
template <AttnBwdMmaConfig C, AttnBwdGemm G>
TL_DEVICE_INLINE constexpr int b_lanes() {
  return attn_bwd_b_lane_per_pair(C, G) ? attn_bwd_tiling(C, G).n8 / 2 : 1;
}
template <AttnBwdMmaConfig C, AttnBwdGemm G, int N>
TL_DEVICE_INLINE void b_lane_offsets(int b0, int lane, int (&out)[N]) {
  constexpr AttnBwdOperands op = attn_bwd_operands(C, G);
  static_for<0, N>([&](auto J) {
    out[decltype(J)::value] = lane_offset<C, op.b, false, op.b_trans>(b0 + 16 * decltype(J)::value, lane);
  });
}

// acc[2][NT][4] += A B for GEMM G (operands and k16 steps from attn_bwd_operands): this warp's 32 rows of A and NT
// n8 columns of B. a_base / b_base: the operand tiles' shared addresses; a_lane / b_lane: their per-thread parts.
// Each ldmatrix.x4 lands in the registers of one A fragment or of two n8 B fragments, in order.
template <AttnBwdMmaConfig C, AttnBwdGemm G, int NT>
TL_DEVICE_INLINE void warp_mma(float (&acc)[2][NT][4], unsigned a_base, int a_lane, unsigned b_base,
                               const int (&b_lane)[b_lanes<C, G>()]) {
  constexpr AttnBwdOperands op = attn_bwd_operands(C, G);
  constexpr bool PER_PAIR = attn_bwd_b_lane_per_pair(C, G);
  static_for<0, op.k16>([&](auto KK) {
    constexpr int kk = decltype(KK)::value;
    unsigned a[2][4], b[NT][2];
    static_for<0, 2>([&](auto I) {
      constexpr int blk = block_offset<C, op.a, op.a_trans>(16 * decltype(I)::value, 16 * kk);
      ldm_x4<op.a_trans>(at<C, op.a>(a_base, a_lane, blk), a[decltype(I)::value]);
    });
    static_for<0, NT / 2>([&](auto J) {
      constexpr int jj = decltype(J)::value;
      constexpr int blk = block_offset<C, op.b, op.b_trans>(PER_PAIR ? 0 : 16 * jj, 16 * kk);
      ldm_x4<op.b_trans>(at<C, op.b>(b_base, b_lane[PER_PAIR ? jj : 0], blk), b[2 * jj]);
    });
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) mma_16816<C.bf16>(acc[i][j], a[i], b[j]);
  });
}

template <int NT>
TL_DEVICE_INLINE void zero(float (&acc)[2][NT][4]) {
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;
}

// f(I, J, H, c): for each accumulator pair of GEMM G's tile (m16 tile i, n8 tile j, row half h: accumulators 2h and
// 2h + 1), with c the pair's (row, first column) in the block tile, from this thread's origin t0 = acc(tid, 0).
template <AttnBwdMmaConfig C, AttnBwdGemm G, class F>
TL_DEVICE_INLINE void for_pairs(TileCoord t0, F&& f) {
  constexpr Fragment acc = attn_bwd_tiling(C, G).acc;
  constexpr int NT = attn_bwd_tiling(C, G).n8;
  static_for<0, 2 * NT * 2>([&](auto X) {
    constexpr int x = decltype(X)::value, h = x % 2, j = (x / 2) % NT, i = x / (2 * NT);
    constexpr TileCoord cv = acc(0, 2 * h + 4 * (j + NT * i));
    f(Int<i>{}, Int<j>{}, Int<h>{}, TileCoord{t0.row + cv.row, t0.col + cv.col});
  });
}

// Stores GEMM G's accumulator (times `scale`) as 16-bit pairs: the tile's row r goes to dst + r * row_stride; rows at
// or past `valid` are not stored.
template <AttnBwdMmaConfig C, AttnBwdGemm G, int NT>
TL_DEVICE_INLINE void store_acc(unsigned short* dst, long long row_stride, int valid, const float (&acc)[2][NT][4],
                                float scale, int tid) {
  constexpr Fragment frag = attn_bwd_tiling(C, G).acc;
  for_pairs<C, G>(frag(tid, 0), [&](auto I, auto J, auto H, TileCoord c) {
    constexpr int i = decltype(I)::value, j = decltype(J)::value, h = decltype(H)::value;
    if (c.row < valid)
      *reinterpret_cast<unsigned*>(dst + c.row * row_stride + c.col) =
          pack2<C.bf16>(scale * acc[i][j][2 * h], scale * acc[i][j][2 * h + 1]);
  });
}

}  // namespace attn_bwd_detail

// Kernel parameters: Q, K, V, O, dO, LSE (inputs), dQ, dK, dV (outputs), dq_accum (f32 like dQ) and dq_counters
// (int per sequence, head and query tile: m_blocks per head) — scratch, zero at the launch and left zero —, the
// sequence offsets, head counts, the query tiles of the longest sequence and the softmax scale.
template <AttnBwdMmaConfig C>
__global__ void __launch_bounds__(C.warps * 32, 1)
    attn_bwd_mma(const unsigned short* __restrict__ Q, const unsigned short* __restrict__ K,
                 const unsigned short* __restrict__ V, const unsigned short* __restrict__ O,
                 const unsigned short* __restrict__ dO, const float* __restrict__ LSE, unsigned short* __restrict__ dQ,
                 unsigned short* __restrict__ dK, unsigned short* __restrict__ dV, float* __restrict__ dq_accum,
                 int* __restrict__ dq_counters, const int* __restrict__ cu_seqlens_q,
                 const int* __restrict__ cu_seqlens_k, int heads, int heads_kv, int m_blocks, float scale) {
  using namespace attn_bwd_detail;
  using namespace attn_bwd_probe;
  using T = AttnBwdTile;
  using G = AttnBwdGemm;
  constexpr AttnBwdMmaPlan P = make_plan(C);
  static_assert(P.ok(), "attn_bwd_mma: a config can_implement refuses (tiles that do not divide among the warps)");
  constexpr int BM = C.block_M, BN = C.block_N, DQK = C.dim_qk, DV = C.dim_v, STAGES = C.num_stages;
  constexpr int THREADS = P.threads, NS = P.s.n8, NDK = P.dk.n8, NDV = P.dv.n8, NDQ = P.dq.n8;
  constexpr Fragment acc_s = P.s.acc, acc_dq = P.dq.acc, acc_dk = P.dk.acc, acc_dv = P.dv.acc, dot = P.dot,
                     copy_dq = P.copy_dq;
  constexpr SwizzledLayout lay_o = P.o, lay_p = P.p;
  constexpr unsigned OFF_K = P.off_k, OFF_V = P.off_v, OFF_O = P.off_o, OFF_P = P.off_p, OFF_DS = P.off_ds,
                     OFF_D = P.off_d, OFF_FLAG = P.off_flag;
  constexpr unsigned OFF_Q0 = P.off_q(0), OFF_DO0 = P.off_do(0), STAGE_BYTES = P.stage_bytes;
  constexpr float kLog2e = 1.4426950408889634f;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  const unsigned smem = smem_align<kAttnBwdSmemAlign>(smem_raw);
  volatile unsigned* flag = reinterpret_cast<volatile unsigned*>(smem_raw + (smem - smem_u32(smem_raw)) + OFF_FLAG);

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int kb = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const int q_start = cu_seqlens_q[b], len_q = cu_seqlens_q[b + 1] - q_start;
  const int k_start = cu_seqlens_k[b], len_k = cu_seqlens_k[b + 1] - k_start;
  const int group = heads / heads_kv;
  const long long q_stride = static_cast<long long>(heads) * DQK, do_stride = static_cast<long long>(heads) * DV;
  const long long k_stride = static_cast<long long>(heads_kv) * DQK, v_stride = static_cast<long long>(heads_kv) * DV;

  if (len_k == 0) {
    // No key: dQ of the sequence is zero and no key block would complete it; the first CTA of each kv head writes it.
    if (kb == 0)
      for (long long i = tid; i < static_cast<long long>(len_q) * group * (DQK / 8); i += THREADS) {
        const long long row = i / (group * (DQK / 8)), rest = i % (group * (DQK / 8));
        *reinterpret_cast<uint4*>(dQ + (q_start + row) * q_stride + hk * group * DQK + 8 * rest) = make_uint4(0, 0, 0, 0);
      }
    return;
  }
  if (kb * BN >= len_k) return;  // past this sequence's keys

  const int keys = len_k - kb * BN < BN ? len_k - kb * BN : BN;
  const int diag = len_k - len_q;  // row r sees keys c <= r + diag (causal)
  const int m_tiles = (len_q + BM - 1) / BM;
  const int m_first = attn_bwd_first_tile(C, kb, len_q, len_k);
  const int per_head = m_tiles - m_first;
  const int tiles = group * per_head;  // this CTA's walk: query tiles m_first.. of each head of the group in turn

  if (tid == 0) TL_PROBE_BLOCK_BEGIN();
  TL_PROBE_WARP_INIT();

  // Tile `it` of the walk: head hk * group + it / per_head, query tile m_first + it % per_head.
  auto tile_head = [&](int it) { return hk * group + it / per_head; };
  auto tile_m = [&](int it) { return m_first + it % per_head; };
  auto tile_row0 = [&](int it) { return q_start + static_cast<long long>(tile_m(it)) * BM; };
  auto tile_rows = [&](int it) { return len_q - tile_m(it) * BM < BM ? len_q - tile_m(it) * BM : BM; };
  auto load_q_do = [&](int it, int stage) {
    const long long row0 = tile_row0(it);
    const int h = tile_head(it), rows = tile_rows(it);
    load_tile<C, T::q>(smem + OFF_Q0 + STAGE_BYTES * stage, Q + row0 * q_stride + h * DQK, q_stride, rows, tid);
    load_tile<C, T::dout>(smem + OFF_DO0 + STAGE_BYTES * stage, dO + row0 * do_stride + h * DV, do_stride, rows, tid);
  };
  auto load_o = [&](int it) {
    load_tile<C, T::o>(smem + OFF_O, O + tile_row0(it) * do_stride + tile_head(it) * DV, do_stride, tile_rows(it), tid);
  };

  TL_PROBE_BEGIN(load_issue, 0, 0);
  load_tile<C, T::k>(smem + OFF_K, K + (k_start + static_cast<long long>(kb) * BN) * k_stride + hk * DQK, k_stride,
                     keys, tid);
  load_tile<C, T::v>(smem + OFF_V, V + (k_start + static_cast<long long>(kb) * BN) * v_stride + hk * DV, v_stride,
                     keys, tid);
  if (tiles > 0) {
    load_q_do(0, 0);
    load_o(0);
  }
  cp_async_commit();
  TL_PROBE_END(load_issue, 0, 0);

  float dk[2][NDK][4], dv[2][NDV][4];
  zero(dk);
  zero(dv);
  // This thread's origin in each GEMM's accumulator, and each operand's per-thread address part from its warp's
  // tile origin (lane 0's first accumulator is the warp tile's corner).
  const TileCoord ts = acc_s(tid, 0), tdq = acc_dq(tid, 0);
  const TileCoord ws = acc_s(32 * warp, 0), wdq = acc_dq(32 * warp, 0), wdk = acc_dk(32 * warp, 0),
                  wdv = acc_dv(32 * warp, 0);
  const int s_a = a_lane_offset<C, G::s>(ws.row, lane), dp_a = a_lane_offset<C, G::dp>(ws.row, lane);
  const int dv_a = a_lane_offset<C, G::dv>(wdv.row, lane), dk_a = a_lane_offset<C, G::dk>(wdk.row, lane);
  const int dq_a = a_lane_offset<C, G::dq>(wdq.row, lane);
  int s_b[b_lanes<C, G::s>()], dp_b[b_lanes<C, G::dp>()], dv_b[b_lanes<C, G::dv>()],
      dk_b[b_lanes<C, G::dk>()], dq_b[b_lanes<C, G::dq>()];
  b_lane_offsets<C, G::s>(ws.col, lane, s_b);
  b_lane_offsets<C, G::dp>(ws.col, lane, dp_b);
  b_lane_offsets<C, G::dv>(wdv.col, lane, dv_b);
  b_lane_offsets<C, G::dk>(wdk.col, lane, dk_b);
  b_lane_offsets<C, G::dq>(wdq.col, lane, dq_b);
  // This thread's first P / dS pair and its D chunk, as element offsets in their tiles.
  const int p_at = lay_p(ts.row, ts.col);
  const TileCoord td = dot(tid, 0);
  const int d_at = lay_o(td.row, 8 * td.col);
  const float scale_log2 = scale * kLog2e;

  for (int it = 0; it < tiles; ++it) {
    const int stage = STAGES == 2 ? it % 2 : 0;
    const int h = tile_head(it), m = tile_m(it), rows = tile_rows(it);
    const unsigned sq = smem + OFF_Q0 + STAGE_BYTES * stage, sdo = smem + OFF_DO0 + STAGE_BYTES * stage;

    TL_PROBE_BEGIN(wait_tile, stage, it);
    cp_async_wait<0>();
    __syncthreads();  // Q, dO, O of this tile visible to all; every warp is done with the previous tile
    TL_PROBE_END(wait_tile, stage, it);
    if (STAGES == 2 && it + 1 < tiles) {
      TL_PROBE_BEGIN(load_issue, stage ^ 1, it + 1);
      load_q_do(it + 1, stage ^ 1);
      cp_async_commit();
      TL_PROBE_END(load_issue, stage ^ 1, it + 1);
    }

    // LSE of this thread's S rows (in log2 units: rows ts.row + 8 hh + 16 i); rows past the sequence get +inf, so
    // their P is 0.
    float lse[2][2];
    static_for<0, 4>([&](auto X) {
      constexpr int i = decltype(X)::value / 2, hh = decltype(X)::value % 2;
      const int r = m * BM + ts.row + acc_s(0, 2 * hh + 4 * NS * i).row;
      const long long at = C.varlen ? static_cast<long long>(h) * cu_seqlens_q[gridDim.z] + q_start + r
                                    : (static_cast<long long>(b) * heads + h) * len_q + r;
      lse[i][hh] = r < len_q ? LSE[at] * kLog2e : __int_as_float(0x7f800000);
    });

    // D = rowsum(dO * O) into shared memory: a row's threads sum their chunks, then meet by shuffles.
    TL_PROBE_BEGIN(dot_do_o, stage, it);
    {
      float part = 0.f;
      static_for<0, dot.num_values()>([&](auto V) {
        constexpr TileCoord cv = dot(0, decltype(V)::value);
        constexpr int off = lay_o(cv.row, 8 * cv.col);
        const uint4 x = ld_shared_v4_b32(at<C, T::o>(smem + OFF_O, d_at, off)), y = ld_shared_v4_b32(at<C, T::o>(sdo, d_at, off));
        const unsigned xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float2 o = unpack2<C.bf16>(xs[e]), g = unpack2<C.bf16>(ys[e]);
          part += o.x * g.x + o.y * g.y;
        }
      });
      constexpr int TPR = THREADS / BM;
#pragma unroll
      for (int o = TPR / 2; o > 0; o /= 2) part += __shfl_xor_sync(0xffffffffu, part, o);
      if (tid % TPR == 0) st_shared_f32(smem + OFF_D + 4u * static_cast<unsigned>(td.row), part);
    }
    TL_PROBE_END(dot_do_o, stage, it);

    // S = Q K^T, and P = exp2(S scale log2e - LSE log2e) (0 where masked) straight to shared memory as 16-bit
    // pairs, so S's registers are free before dP's.
    TL_PROBE_BEGIN(qk, stage, it);
    {
      float s[2][NS][4];
      zero(s);
      warp_mma<C, G::s>(s, sq, s_a, smem + OFF_K, s_b);
      const bool masked = kb * BN + BN > len_k || (C.causal && kb * BN + BN - 1 > m * BM + diag);
      for_pairs<C, G::s>(ts, [&](auto I, auto J, auto H, TileCoord c) {
        constexpr int i = decltype(I)::value, j = decltype(J)::value, hh = decltype(H)::value;
        constexpr TileCoord cv = acc_s(0, 2 * hh + 4 * (j + NS * i));
        constexpr int off = lay_p(cv.row, cv.col);
        float p[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int key = kb * BN + c.col + e;
          const bool off = masked && (key >= len_k || (C.causal && key > m * BM + c.row + diag));
          p[e] = off ? 0.f : exp2_approx(s[i][j][2 * hh + e] * scale_log2 - lse[i][hh]);
        }
        st_shared_b32(at<C, T::p>(smem + OFF_P, p_at, off), pack2<C.bf16>(p[0], p[1]));
      });
    }
    TL_PROBE_END(qk, stage, it);
    __syncthreads();  // D visible; O read by all, so its buffer can take the next tile's
    if (STAGES == 2 && it + 1 < tiles) {
      TL_PROBE_BEGIN(load_issue, stage ^ 1, it + 1);
      load_o(it + 1);
      cp_async_commit();
      TL_PROBE_END(load_issue, stage ^ 1, it + 1);
    }

    // dP = dO V^T, and dS = P (dP - D) to shared memory (P as rounded for dV, read back from this thread's own
    // pairs).
    TL_PROBE_BEGIN(dp_ds, stage, it);
    {
      float dp[2][NS][4];
      zero(dp);
      warp_mma<C, G::dp>(dp, sdo, dp_a, smem + OFF_V, dp_b);
      float d[2][2];
      static_for<0, 4>([&](auto X) {
        constexpr int i = decltype(X)::value / 2, hh = decltype(X)::value % 2;
        d[i][hh] = ld_shared_f32(smem + OFF_D + 4u * static_cast<unsigned>(ts.row + acc_s(0, 2 * hh + 4 * NS * i).row));
      });
      for_pairs<C, G::s>(ts, [&](auto I, auto J, auto H, TileCoord) {
        constexpr int i = decltype(I)::value, j = decltype(J)::value, hh = decltype(H)::value;
        constexpr TileCoord cv = acc_s(0, 2 * hh + 4 * (j + NS * i));
        constexpr int off = lay_p(cv.row, cv.col);
        const float2 p = unpack2<C.bf16>(ld_shared_b32(at<C, T::p>(smem + OFF_P, p_at, off)));
        st_shared_b32(at<C, T::ds>(smem + OFF_DS, p_at, off), pack2<C.bf16>(p.x * (dp[i][j][2 * hh] - d[i][hh]),
                                                                          p.y * (dp[i][j][2 * hh + 1] - d[i][hh])));
      });
    }
    TL_PROBE_END(dp_ds, stage, it);
    __syncthreads();  // P and dS visible

    TL_PROBE_BEGIN(dv_dk, stage, it);
    warp_mma<C, G::dv>(dv, smem + OFF_P, dv_a, sdo, dv_b);
    warp_mma<C, G::dk>(dk, smem + OFF_DS, dk_a, sq, dk_b);
    TL_PROBE_END(dv_dk, stage, it);

    TL_PROBE_BEGIN(dq, stage, it);
    float dq_part[2][NDQ][4];
    zero(dq_part);
    warp_mma<C, G::dq>(dq_part, smem + OFF_DS, dq_a, smem + OFF_K, dq_b);
    TL_PROBE_END(dq, stage, it);
    if (STAGES == 1 && it + 1 < tiles) {
      __syncthreads();  // every warp is done with Q, dO and O
      TL_PROBE_BEGIN(load_issue, 0, it + 1);
      load_q_do(it + 1, 0);
      load_o(it + 1);
      cp_async_commit();
      TL_PROBE_END(load_issue, 0, it + 1);
    }

    // Add the part into the f32 accumulator; the key block that completes the tile stores it.
    TL_PROBE_BEGIN(dq_sync, stage, it);
    int* counter = dq_counters + (static_cast<long long>(b) * heads + h) * m_blocks + m;
    float* acc_g = dq_accum + tile_row0(it) * q_stride + h * DQK;
    const int contributors = attn_bwd_tile_key_blocks(C, m, len_q, len_k);
    if constexpr (C.deterministic) {
      if (tid == 0)
        while (ld_acquire_gpu(counter) != kb) {
        }
      __syncthreads();
    }
    for_pairs<C, G::dq>(tdq, [&](auto I, auto J, auto H, TileCoord c) {
      constexpr int i = decltype(I)::value, j = decltype(J)::value, hh = decltype(H)::value;
      if (c.row < rows) {
        atomicAdd(acc_g + c.row * q_stride + c.col, dq_part[i][j][2 * hh]);
        atomicAdd(acc_g + c.row * q_stride + c.col + 1, dq_part[i][j][2 * hh + 1]);
      }
    });
    __threadfence();
    __syncthreads();
    if (tid == 0) *flag = atomicAdd(counter, 1) == contributors - 1;
    __syncthreads();
    TL_PROBE_END(dq_sync, stage, it);
    if (*flag) {
      TL_PROBE_BEGIN(dq_store, stage, it);
      __threadfence();
      const TileCoord t0 = copy_dq(tid, 0);
      float* src0 = acc_g + t0.row * q_stride + 4 * t0.col;
      unsigned short* dst0 = dQ + tile_row0(it) * q_stride + h * DQK + t0.row * q_stride + 4 * t0.col;
      static_for<0, copy_dq.num_values()>([&](auto V) {
        constexpr TileCoord cv = copy_dq(0, decltype(V)::value);
        if (t0.row + cv.row < rows) {
          float4* src = reinterpret_cast<float4*>(src0 + cv.row * q_stride + 4 * cv.col);
          const float4 x = __ldcg(src);
          *reinterpret_cast<uint2*>(dst0 + cv.row * q_stride + 4 * cv.col) =
              make_uint2(pack2<C.bf16>(scale * x.x, scale * x.y), pack2<C.bf16>(scale * x.z, scale * x.w));
          __stcg(src, make_float4(0.f, 0.f, 0.f, 0.f));
        }
      });
      if (tid == 0) *counter = 0;
      TL_PROBE_END(dq_store, stage, it);
    }
  }

  cp_async_wait<0>();  // a walk of no tile (a sequence without queries) leaves K and V in flight
  TL_PROBE_BEGIN(epilogue, probe::kNoStage, kb);
  // The key block's first row again, read anew rather than kept in registers through the loop.
  const long long k_row0 = *reinterpret_cast<const volatile int*>(cu_seqlens_k + b) + static_cast<long long>(kb) * BN;
  store_acc<C, G::dk>(dK + k_row0 * k_stride + hk * DQK, k_stride, keys, dk, scale, tid);
  store_acc<C, G::dv>(dV + k_row0 * v_stride + hk * DV, v_stride, keys, dv, 1.f, tid);
  TL_PROBE_END(epilogue, probe::kNoStage, kb);
  TL_PROBE_FLUSH();
  if (tid == 0) TL_PROBE_BLOCK_END();
}

}  // namespace tl
