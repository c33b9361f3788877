// attn.fwd.mma: FlashAttention-2-style forward — cp.async K/V pipeline, ldmatrix, mma.sync m16n8k16, online softmax.
//
// O = softmax(Q K^T / sqrt(D)) V per (sequence, head), and LSE = log(sum_j exp(q·k_j / sqrt(D))) per query row.
// Sequence b's queries are the rows [cu_seqlens_q[b], cu_seqlens_q[b+1]) of Q and O: [total_q, heads, D], its keys
// the rows [cu_seqlens_k[b], cu_seqlens_k[b+1]) of K, V: [total_k, heads_kv, D] (16-bit, rows of D contiguous).
// Dense batches are the case cu_seqlens = b * seq, i.e. [batch, seq, heads, D]. LSE is float [batch, heads, seq_q]
// (dense) or [heads, total_q] (VARLEN). GQA: query head h reads kv head h / (heads / heads_kv). Causal masking is
// aligned to the bottom-right corner (row r of a sequence sees keys c <= r + len_k - len_q), as FlashAttention
// does; for len_q == len_k it is the usual lower triangle. Lengths are predicated (any length, 0 included: a row
// with no key gets O = 0 and LSE = -inf).
//
// Grid: (ceil(seq_q / BM), heads, batch), seq_q the longest query length; blocks past their sequence's end return
// at once. Causal grids walk the query blocks from the last (most keys) to the first, so the longest start first. Threads: WARPS warps stacked along M; warp w owns query rows
// [w*WTM, (w+1)*WTM) of the block, WTM = BM / WARPS = 16*MT, as MT m16 tiles. Every warp sees the whole K/V tile.
//
// Per K/V tile of BN keys, each warp computes S = Q K^T (m16n8k16, Q and K through ldmatrix), masks the edges,
// updates its rows' running max m and sum l in registers (exp2 with the log2(e)-scaled softmax scale; the four
// lanes of a quad share a row and reduce with shuffles), rescales its O accumulators, turns S's fp32 C fragments
// into P's 16-bit A fragments in registers (the C layout of two n8 tiles is the A layout of one k16 step), and adds
// P V (V through ldmatrix.trans). At the end O is divided by l and stored; LSE = (m + log2 l) * ln 2.
//
// Shared memory (dynamic; attn_fwd_mma_plan.hpp lays it out): [Q tile BM x D] then STAGES x ([K tile BN x D][V tile
// BN x D]), 16-bit elements, rows of D*2 bytes = D/8 chunks of 16 bytes, chunk c of row r stored at chunk c ^ (r % 8),
// so the cp.async writes and the ldmatrix reads of 8 rows at one chunk touch 8 different bank groups. K/V tiles are a cp.async pipeline of STAGES buffers, STAGES - 1 tiles in flight ahead of the one computed (2 =
// double buffering); out-of-range rows are zero-filled (never NaN: P is 0 there, and 0 * V must stay 0).
#pragma once

#include "attention/attn_fwd_mma_plan.hpp"
#include "tile/config.hpp"
#include "tile/convert.cuh"
#include "tile/cp_async.cuh"
#include "tile/ldmatrix.cuh"
#include "tile/mma_sync.cuh"
#include "tile/probe.hpp"
#include "tile/reduce.hpp"
#include "tile/smem.cuh"

namespace tl {
namespace attn_detail {

// Copies rows [row0, row0 + ROWS) of a [*, rows, stride] 16-bit tensor slice (`src` points at row 0's first
// element; consecutive rows are `stride` elements apart) into the smem tile TILE (ROWS x D) at `dst`; rows >= `rows`
// are zero-filled. Thread tid moves chunk tid % CH of rows tid / CH + i * (THREADS / CH). When THREADS / CH is a
// multiple of 8 the row's swizzle phase (row % 8) is the same for every i, so the destinations are one offset plus
// immediates and the sources one pointer plus a per-call step: the issue loop is cp.async and a compare per chunk,
// no index math.
template <SwizzledLayout TILE, int THREADS>
TL_DEVICE_INLINE void load_rows(unsigned dst, const unsigned short* src, int row0, int rows, long long stride, int tid) {
  constexpr int ROWS = TILE.layout().mode(0).size(), D = TILE.layout().mode(1).size();
  constexpr int CH = D / 8;
  if constexpr (THREADS % CH == 0 && (THREADS / CH) % 8 == 0 && ROWS % (THREADS / CH) == 0) {
    constexpr int RSTEP = THREADS / CH;
    const int row = tid / CH, chunk = tid % CH;
    const unsigned short* p = src + (static_cast<long long>(row0) + row) * stride + chunk * 8;
    const long long step = RSTEP * stride;
    const unsigned d = dst + AttnFwdMmaPlan::byte(TILE, row, 8 * chunk);
    constexpr int STEP = AttnFwdMmaPlan::byte(TILE, RSTEP, 0);  // whole 8-row groups: the swizzle phase stays
    const int left = rows - row0 - row;  // chunk i is in bounds when i * RSTEP < left
#pragma unroll
    for (int i = 0; i < ROWS / RSTEP; ++i) {
      const bool in = i * RSTEP < left;
      cp_async_16(d + i * STEP, in ? p + i * step : src, in ? 16 : 0);
    }
  } else {
#pragma unroll
    for (int i = 0; i < (ROWS * CH + THREADS - 1) / THREADS; ++i) {
      const int idx = tid + i * THREADS;
      if ((ROWS * CH) % THREADS != 0 && idx >= ROWS * CH) break;
      const int row = idx / CH, chunk = idx % CH;
      const int gr = row0 + row;
      const bool in = gr < rows;
      cp_async_16(dst + AttnFwdMmaPlan::byte(TILE, row, 8 * chunk), src + (in ? gr * stride + chunk * 8 : 0), in ? 16 : 0);
    }
  }
}

}  // namespace attn_detail

template <AttnFwdMmaConfig CFG>
__global__ void __launch_bounds__(CFG.warps * 32)
    attn_fwd_mma(const unsigned short* __restrict__ Q, const unsigned short* __restrict__ K,
                 const unsigned short* __restrict__ V, unsigned short* __restrict__ O, float* __restrict__ LSE,
                 const int* __restrict__ cu_seqlens_q, const int* __restrict__ cu_seqlens_k, int heads, int heads_kv) {
  using namespace attn_detail;
  using Probe = AttnFwdMmaProbe;
  static constexpr AttnFwdMmaPlan P = make_plan(CFG);  // static: the tables fold at compile time
  constexpr int D = CFG.dim, BM = CFG.block_M, BN = CFG.block_N, WARPS = CFG.warps, STAGES = CFG.num_stages;
  constexpr bool CAUSAL = CFG.causal, BF16 = CFG.bf16, VARLEN = CFG.varlen;
  constexpr int THREADS = WARPS * 32;
  constexpr int WTM = BM / WARPS, MT = WTM / 16;  // rows per warp, m16 tiles per warp
  constexpr int NT = BN / 8;                      // n8 tiles of S per KV tile
  constexpr int DT = D / 8;                       // n8 tiles of O
  static_assert(WTM % 16 == 0, "each warp owns whole m16 tiles");
  static_assert(BN % 16 == 0 && D % 16 == 0, "BN and D must be multiples of 16");
  static_assert(P.c_values.ok && P.c_values.per_row == 2, "a lane holds a pair of columns in each of two rows");
  // softmax scale 1/sqrt(D) times log2(e): scores go straight into exp2.
  constexpr float kScaleLog2 = 1.4426950408889634f / (D == 64 ? 8.0f : D == 128 ? 11.313708498984761f : 16.0f);
  static_assert(D == 64 || D == 128 || D == 256, "head dim 64, 128 or 256");

  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned q_smem = smem_u32(smem);
  const unsigned kv_smem = q_smem + P.kv_offset;

  const int m_block = CAUSAL ? static_cast<int>(gridDim.x - 1 - blockIdx.x) : static_cast<int>(blockIdx.x);
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (heads / heads_kv);
  const int m0 = m_block * BM;
  const int q_start = cu_seqlens_q[b], k_start = cu_seqlens_k[b];
  const int seq_q = cu_seqlens_q[b + 1] - q_start, seq_k = cu_seqlens_k[b + 1] - k_start;
  if (m0 >= seq_q) return;  // the whole block: no barrier has been reached
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int diag = seq_k - seq_q;  // causal: row r sees keys <= r + diag

  const long long q_stride = static_cast<long long>(heads) * D, kv_stride = static_cast<long long>(heads_kv) * D;
  const unsigned short* q_src = Q + (static_cast<long long>(q_start) * heads + h) * D;
  const unsigned short* k_src = K + (static_cast<long long>(k_start) * heads_kv + hk) * D;
  const unsigned short* v_src = V + (static_cast<long long>(k_start) * heads_kv + hk) * D;

  // Keys this block needs: all, or up to the diagonal of its last row.
  int kv_end = seq_k;
  if constexpr (CAUSAL) kv_end = max(0, min(seq_k, m0 + BM + diag));
  const int n_tiles = kv_end > 0 ? (kv_end + BN - 1) / BN : 0;

  // Per-lane swizzled ldmatrix offsets at k-step / column pair 0: the row and 16-byte column block each lane
  // addresses (Q and V in ldmatrix.x4's order, K in the B fragments'). The swizzle XORs offset bits with the row's
  // low 3 bits, so a later step's column block (its bits miss the lane's own, and row 0 is not swizzled) XORs in
  // as an immediate, and whole groups of 8 rows add: no index math in the loops.
  const TileCoord qa = P.rows_A(lane, 0), ka = P.rows_K(lane, 0);
  const unsigned q_off = P.byte(P.smem_Q, warp * WTM + qa.row, 8 * qa.col);
  const unsigned k_off = P.byte(P.smem_K, ka.row, 8 * ka.col);
  const unsigned v_off = P.byte(P.smem_V, qa.row, 8 * qa.col);
  constexpr int Q_K16 = P.byte(P.smem_Q, 0, 16), Q_M16 = P.byte(P.smem_Q, 16, 0);
  constexpr int K_K16 = P.byte(P.smem_K, 0, 16), K_N8 = P.byte(P.smem_K, 8, 0);
  constexpr int V_N16 = P.byte(P.smem_V, 0, 16), V_K16 = P.byte(P.smem_V, 16, 0);

  if (tid == 0) TL_PROBE_BLOCK_BEGIN();
  TL_PROBE_WARP_INIT();

  auto load_kv = [&](int tile) {
    const unsigned dst = kv_smem + (tile % STAGES) * P.stage_bytes;
    TL_PROBE_BEGIN(Probe::load_issue, tile % STAGES, tile);
    load_rows<P.smem_K, THREADS>(dst, k_src, tile * BN, seq_k, kv_stride, tid);
    load_rows<P.smem_V, THREADS>(dst + P.v_offset, v_src, tile * BN, seq_k, kv_stride, tid);
    TL_PROBE_END(Probe::load_issue, tile % STAGES, tile);
  };

  // Prologue: Q with the first tile (one group), then the rest of the STAGES - 1 tiles ahead.
  load_rows<P.smem_Q, THREADS>(q_smem, q_src, m0, seq_q, q_stride, tid);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < n_tiles) load_kv(s);
    cp_async_commit();
  }

  float o[MT][DT][4];
  float row_max[MT][2], row_sum[MT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i) {
#pragma unroll
    for (int j = 0; j < DT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) o[i][j][r] = 0.f;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) row_max[i][hh] = -__int_as_float(0x7f800000), row_sum[i][hh] = 0.f;
  }

  for (int t = 0; t < n_tiles; ++t) {
    TL_PROBE_BEGIN(Probe::wait_tile, t % STAGES, t);
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile t (and Q) visible to all; the buffer of tile t - 1 is free to refill
    TL_PROBE_END(Probe::wait_tile, t % STAGES, t);
    if (t + STAGES - 1 < n_tiles) load_kv(t + STAGES - 1);
    cp_async_commit();

    const unsigned k_tile = kv_smem + (t % STAGES) * P.stage_bytes, v_tile = k_tile + P.v_offset;
    const int n0 = t * BN;

    // S = Q K^T for this warp's rows.
    TL_PROBE_BEGIN(Probe::qk, t % STAGES, t);
    float s[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) s[i][j][r] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      unsigned a[MT][4];
#pragma unroll
      for (int i = 0; i < MT; ++i)
        ldmatrix_x4(q_smem + (q_off ^ (kk * Q_K16)) + i * Q_M16, a[i][0], a[i][1], a[i][2], a[i][3]);
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        unsigned kb0[2], kb1[2];  // n8 tiles j and j + 1
        ldmatrix_x4(k_tile + (k_off ^ (kk * K_K16)) + j * K_N8, kb0[0], kb0[1], kb1[0], kb1[1]);
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          mma_16816<BF16>(s[i][j], a[i], kb0);
          mma_16816<BF16>(s[i][j + 1], a[i], kb1);
        }
      }
    }
    TL_PROBE_END(Probe::qk, t % STAGES, t);

    // Mask the keys past seq_k and, causal, past the diagonal; only the tiles that reach them pay for it.
    TL_PROBE_BEGIN(Probe::softmax, t % STAGES, t);
    const bool edge = n0 + BN > seq_k || (CAUSAL && n0 + BN - 1 > m0 + diag);
    if (edge) {
      const TileCoord lc = P.mma_C(lane, 0);  // this lane's value 0 of an m16n8 tile; value r at + c_values.at[r]
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            const int row = m0 + warp * WTM + i * 16 + lc.row + P.c_values.at[r].row;
            const int col = n0 + j * 8 + lc.col + P.c_values.at[r].col;
            if (col >= seq_k || (CAUSAL && col > row + diag)) s[i][j][r] = -__int_as_float(0x7f800000);
          }
    }

    // Online softmax: new running max, rescale of l and O, P = exp2(S * scale - m) packed to 16 bits as soon as it
    // is computed (S's registers die as P's are born).
    unsigned p[MT][BN / 16][4];
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      float m_use[2], alpha[2], sum[2] = {0.f, 0.f};
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        float mx = row_max[i][hh];
#pragma unroll
        for (int j = 0; j < NT; ++j)
          mx = fmaxf(mx, fmaxf(s[i][j][P.c_values.row_value[hh][0]], s[i][j][P.c_values.row_value[hh][1]]) * kScaleLog2);
        mx = quad_max(mx);
        // A row with every key masked so far keeps m = -inf; subtract 0 then so exp2 gives 0, not NaN.
        m_use[hh] = mx == -__int_as_float(0x7f800000) ? 0.f : mx;
        alpha[hh] = exp2_approx(row_max[i][hh] - m_use[hh]);
        row_max[i][hh] = mx;
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        float e[2][2];  // [row half][column of the pair]
#pragma unroll
        for (int hh = 0; hh < 2; ++hh)
#pragma unroll
          for (int x = 0; x < 2; ++x) {
            e[hh][x] = exp2_approx(fmaf(s[i][j][P.c_values.row_value[hh][x]], kScaleLog2, -m_use[hh]));
            sum[hh] += e[hh][x];
          }
        // P = S in registers: n8 tiles 2kt, 2kt + 1 make k16 step kt of P's A fragment, a pair per 32-bit register.
#pragma unroll
        for (int hh = 0; hh < 2; ++hh)
          p[i][j / 2][P.p_reg[j % 2][P.c_values.row_value[hh][0]]] = pack2<BF16>(e[hh][0], e[hh][1]);
      }
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        row_sum[i][hh] = row_sum[i][hh] * alpha[hh] + sum[hh];  // per-thread partial; the quad is summed at the end
#pragma unroll
        for (int j = 0; j < DT; ++j)
          o[i][j][P.c_values.row_value[hh][0]] *= alpha[hh], o[i][j][P.c_values.row_value[hh][1]] *= alpha[hh];
      }
    }
    TL_PROBE_END(Probe::softmax, t % STAGES, t);

    // O += P V: V's rows are keys (the k dimension), so ldmatrix.trans gives the col-major B fragments.
    TL_PROBE_BEGIN(Probe::pv, t % STAGES, t);
#pragma unroll
    for (int kt = 0; kt < BN / 16; ++kt) {
#pragma unroll
      for (int dn = 0; dn < DT; dn += 2) {
        unsigned vb0[2], vb1[2];
        ldmatrix_x4_trans(v_tile + (v_off ^ (dn / 2 * V_N16)) + kt * V_K16, vb0[0], vb0[1], vb1[0], vb1[1]);
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          mma_16816<BF16>(o[i][dn], p[i][kt], vb0);
          mma_16816<BF16>(o[i][dn + 1], p[i][kt], vb1);
        }
      }
    }
    TL_PROBE_END(Probe::pv, t % STAGES, t);
  }
  cp_async_wait<0>();

  // Epilogue: each lane stores its pair of each n8 tile of D in its two rows, the lane holding a row's column 0 its LSE.
  TL_PROBE_BEGIN(Probe::epilogue, probe::kNoStage, blockIdx.x);
  const TileCoord lc = P.mma_C(lane, 0);
#pragma unroll
  for (int i = 0; i < MT; ++i) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const TileCoord x = P.c_values.at[P.c_values.row_value[hh][0]];  // the pair's first value
      const int row = m0 + warp * WTM + i * 16 + lc.row + x.row, col = lc.col + x.col;
      const float l = quad_sum(row_sum[i][hh]);
      const float inv = l > 0.f ? 1.f / l : 0.f;
      if (row < seq_q) {
        unsigned short* dst = O + ((static_cast<long long>(q_start) + row) * heads + h) * D + col;
#pragma unroll
        for (int j = 0; j < DT; ++j)
          *reinterpret_cast<unsigned*>(dst + j * 8) =
              pack2<BF16>(o[i][j][P.c_values.row_value[hh][0]] * inv, o[i][j][P.c_values.row_value[hh][1]] * inv);
        if (col == 0)
          LSE[VARLEN ? static_cast<long long>(h) * cu_seqlens_q[gridDim.z] + q_start + row
                     : (static_cast<long long>(b) * heads + h) * seq_q + row] =
              l > 0.f ? (row_max[i][hh] + __log2f(l)) * 0.6931471805599453f : -__int_as_float(0x7f800000);
      }
    }
  }
  TL_PROBE_END(Probe::epilogue, probe::kNoStage, blockIdx.x);
  TL_PROBE_FLUSH();
  if (tid == 0) TL_PROBE_BLOCK_END();
}

}  // namespace tl
