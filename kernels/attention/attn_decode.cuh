// attn.decode: split-KV decoding over a KV cache for GQA/MQA/MHA (FlashDecoding), the combine in the same launch.
//
// Per request b with L = cache_seqlens[b] cached tokens, the seq_q query tokens of q [batch, seq_q, heads, D] attend
// to rows [0, L) of its cache k, v [batch, seq_k, heads_kv, D] (seq_k is the capacity). Query head h reads kv head
// h / G, G = heads / heads_kv; the G query heads of a kv head and the seq_q positions are the rows of one tile, row
// m = s * G + g (head hk * G + g, position s), so each K/V byte is read once per kv head, not once per query head.
// Causal: position s sees keys j < L - seq_q + s + 1 (aligned to the cache's end, FlashAttention's KV-cache decoding).
// Scale 1/sqrt(D). Outputs: O [batch, seq_q, heads, D] 16-bit, LSE f32 [batch, heads, seq_q] (natural log); a row
// that sees no key (L = 0, or causal with L < seq_q) gets O = 0 and LSE = -inf, as attn.fwd writes it.
//
// Grid: (num_splits, heads_kv * m_tiles, batch), m_tiles = ceil(seq_q * G / block_M). CTA (split, hk * m_tiles + mt,
// b) computes rows [mt * BM, mt * BM + BM) over the keys [split * chunk, min(L, split * chunk + chunk)); a request
// of L keys has nspl = max(1, ceil(L / chunk)) splits and the CTAs of the splits past them return at once. One split:
// the CTA writes O and LSE itself. Several: each writes its normalized partial O (f32) and its log2-domain LSE to the
// workspace o_acc [batch, heads_kv, m_tiles, num_splits, BM, D] / lse_acc [.., BM], counts itself on the atomic of
// its (b, hk, mt) in `counters`, and the CTA whose increment completes the count merges every split's partial,
// O = sum_i 2^(lse_i - lse) O_i with lse = log2 sum_i 2^lse_i (mla.decode's in-launch merge, here in f32: a warp per
// row turns the splits' LSEs into weights in shared memory, then each thread folds (row, 4 columns) items of the
// partials in batches of independent loads), writes O and LSE, and sets the counter back to zero for the next launch.
//
// Threads: WARPS warps as a WM x WN grid, WM = BM / 16. Warp (wm, wn) owns rows [16 wm, 16 wm + 16) of the tile
// and keys [wn * KW, wn * KW + KW) of every K/V tile, KW = BN / WN, with its own running max, sum and O (the mma C
// layout: a lane holds two rows, 16-column groups of D as n8 pairs), so the warps along the keys split each tile
// (FlashDecoding inside the CTA). Q's A fragments are loaded from shared memory once and stay in registers. Per
// tile a warp computes S = Q K^T (m16n8k16, K by ldmatrix), masks the edges, runs the online softmax (exp2 of the
// log2(e)-scaled scores, quad shuffles), packs P into A fragments in registers and adds P V (V by ldmatrix.trans).
// After the loop the WN warps of a row combine through shared memory (o_part, ml of the plan) and each thread
// writes (row, 4 columns) items of the result.
//
// Shared memory (attn_decode_plan.hpp): attn.fwd.mma's tiles, [Q BM x D][STAGES x ([K BN x D][V BN x D])], 16-bit,
// 16-byte chunk c of row r at chunk c ^ (r % 8); after the loop the same bytes hold o_part and ml. K/V tiles are a
// cp.async pipeline, STAGES - 1 tiles in flight; rows past the split's end are zero-filled (P is 0 there).
#pragma once

#include "attention/attn_decode_plan.hpp"
#include "attention/attn_fwd_mma.cuh"
#include "tile/global.cuh"

namespace tl {

template <AttnDecodeConfig CFG>
__global__ void __launch_bounds__(CFG.warps * 32)
    attn_decode(const unsigned short* __restrict__ Q, const unsigned short* __restrict__ K,
                const unsigned short* __restrict__ V, unsigned short* __restrict__ O, float* __restrict__ LSE,
                const int* __restrict__ cache_seqlens, float* __restrict__ o_acc, float* __restrict__ lse_acc,
                int* __restrict__ counters, int seq_q, int heads, int heads_kv, int seq_k, int chunk) {
  using Probe = AttnDecodeProbe;
  static constexpr AttnDecodePlan PD = make_plan(CFG);  // static: the tables fold at compile time
  static constexpr AttnFwdMmaPlan P = PD.tile;
  constexpr int D = CFG.dim, BM = CFG.block_M, BN = CFG.block_N, WARPS = CFG.warps, STAGES = CFG.num_stages;
  constexpr bool CAUSAL = CFG.causal, BF16 = CFG.bf16;
  constexpr int THREADS = WARPS * 32, WN = PD.warps_N, KW = PD.warp_keys;
  constexpr int NT = KW / 8, DT = D / 8, CH = D / 8;
  static_assert(BM % 16 == 0 && WARPS % (BM / 16) == 0, "whole m16 tiles, one per row warp");
  static_assert(KW % 16 == 0, "each key warp takes whole k16 steps of P V");
  static_assert(P.c_values.ok && P.c_values.per_row == 2, "a lane holds a pair of columns in each of two rows");
  static_assert(D == 64 || D == 128, "head dim 64 or 128");
  constexpr float kScaleLog2 = 1.4426950408889634f / (D == 64 ? 8.0f : 11.313708498984761f);
  const float kInf = __int_as_float(0x7f800000);

  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned q_smem = smem_u32(smem);
  const unsigned kv_smem = q_smem + P.kv_offset;

  const int split = blockIdx.x, b = blockIdx.z;
  const int m_tiles = gridDim.y / heads_kv, hk = blockIdx.y / m_tiles, mt = blockIdx.y % m_tiles;
  const int group = heads / heads_kv, R = seq_q * group, m0 = mt * BM;
  const int L = cache_seqlens[b];
  const int nspl = L > 0 ? (L + chunk - 1) / chunk : 1;
  if (split >= nspl) return;  // the whole CTA: no barrier has been reached
  const int k_begin = split * chunk, k_end = min(L, k_begin + chunk);
  const int n_tiles = (k_end - k_begin + BN - 1) / BN;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / WN, wn = warp % WN;

  const long long kv_stride = static_cast<long long>(heads_kv) * D;
  const unsigned short* k_src = K + (static_cast<long long>(b) * seq_k * heads_kv + hk) * D;
  const unsigned short* v_src = V + (static_cast<long long>(b) * seq_k * heads_kv + hk) * D;
  // Row m of the tile is query head hk * G + m % G at position m / G: its q row and its out row.
  auto q_row = [&](int m) { return (static_cast<long long>(b) * seq_q + m / group) * heads + hk * group + m % group; };

  if (tid == 0) TL_PROBE_BLOCK_BEGIN();
  TL_PROBE_WARP_INIT();

  auto load_kv = [&](int tile) {
    const unsigned dst = kv_smem + (tile % STAGES) * P.stage_bytes;
    TL_PROBE_BEGIN(Probe::load_issue, tile % STAGES, tile);
    attn_detail::load_rows<P.smem_K, THREADS>(dst, k_src, k_begin + tile * BN, k_end, kv_stride, tid);
    attn_detail::load_rows<P.smem_V, THREADS>(dst + P.v_offset, v_src, k_begin + tile * BN, k_end, kv_stride, tid);
    TL_PROBE_END(Probe::load_issue, tile % STAGES, tile);
  };

  // Prologue: Q (rows past R zero) with the first tile in one group, then the rest of the STAGES - 1 tiles ahead.
  for (int i = tid; i < BM * CH; i += THREADS) {
    const int m = i / CH, c = i % CH;
    const bool in = m0 + m < R;
    cp_async_16(q_smem + P.byte(P.smem_Q, m, 8 * c), in ? Q + q_row(m0 + m) * D + 8 * c : Q, in ? 16 : 0);
  }
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < n_tiles) load_kv(s);
    cp_async_commit();
  }
  cp_async_wait<STAGES - 2>();
  __syncthreads();  // Q (and tile 0) visible to all

  // Q's A fragments for every k16 step, once: the swizzled ldmatrix rows as attn.fwd.mma reads them.
  const TileCoord qa = P.rows_A(lane, 0), ka = P.rows_K(lane, 0);
  const unsigned q_off = P.byte(P.smem_Q, wm * 16 + qa.row, 8 * qa.col);
  const unsigned k_off = P.byte(P.smem_K, wn * KW + ka.row, 8 * ka.col);
  const unsigned v_off = P.byte(P.smem_V, wn * KW + qa.row, 8 * qa.col);
  constexpr int Q_K16 = P.byte(P.smem_Q, 0, 16), K_K16 = P.byte(P.smem_K, 0, 16), K_N8 = P.byte(P.smem_K, 8, 0);
  constexpr int V_N16 = P.byte(P.smem_V, 0, 16), V_K16 = P.byte(P.smem_V, 16, 0);
  unsigned a[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    ldmatrix_x4(q_smem + (q_off ^ (kk * Q_K16)), a[kk][0], a[kk][1], a[kk][2], a[kk][3]);

  // The keys this lane's two rows see end at lim (the split's end; causal, also the row's position's end).
  const TileCoord lc = P.mma_C(lane, 0);
  int lim[2];
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int row = m0 + wm * 16 + lc.row + P.c_values.at[P.c_values.row_value[hh][0]].row;
    lim[hh] = CAUSAL ? min(k_end, L - seq_q + row / group + 1) : k_end;
  }
  const int mask_from = CAUSAL ? min(k_end, L - seq_q + 1) : k_end;  // tiles reaching it need the mask

  float o[DT][4];
  float row_max[2], row_sum[2];
#pragma unroll
  for (int j = 0; j < DT; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r) o[j][r] = 0.f;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) row_max[hh] = -kInf, row_sum[hh] = 0.f;

  for (int t = 0; t < n_tiles; ++t) {
    TL_PROBE_BEGIN(Probe::wait_tile, t % STAGES, t);
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile t visible to all; the buffer of tile t - 1 is free to refill
    TL_PROBE_END(Probe::wait_tile, t % STAGES, t);
    if (t + STAGES - 1 < n_tiles) load_kv(t + STAGES - 1);
    cp_async_commit();

    const unsigned k_tile = kv_smem + (t % STAGES) * P.stage_bytes, v_tile = k_tile + P.v_offset;
    const int n0 = k_begin + t * BN, nw = n0 + wn * KW;

    // S = Q K^T over this warp's KW keys.
    TL_PROBE_BEGIN(Probe::qk, t % STAGES, t);
    float s[NT][4];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) s[j][r] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        unsigned kb0[2], kb1[2];  // n8 tiles j and j + 1
        ldmatrix_x4(k_tile + (k_off ^ (kk * K_K16)) + j * K_N8, kb0[0], kb0[1], kb1[0], kb1[1]);
        mma_16816<BF16>(s[j], a[kk], kb0);
        mma_16816<BF16>(s[j + 1], a[kk], kb1);
      }
    }
    TL_PROBE_END(Probe::qk, t % STAGES, t);

    TL_PROBE_BEGIN(Probe::softmax, t % STAGES, t);
    if (n0 + BN > mask_from) {
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh)
#pragma unroll
          for (int x = 0; x < 2; ++x) {
            const int r = P.c_values.row_value[hh][x];
            if (nw + j * 8 + lc.col + P.c_values.at[r].col >= lim[hh]) s[j][r] = -kInf;
          }
    }
    // Online softmax as attn.fwd.mma's: new running max, rescale of l and O, P = exp2(S * scale - m) in 16 bits.
    unsigned p[KW / 16][4];
    float m_use[2], alpha[2], sum[2] = {0.f, 0.f};
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      float mx = row_max[hh];
#pragma unroll
      for (int j = 0; j < NT; ++j)
        mx = fmaxf(mx, fmaxf(s[j][P.c_values.row_value[hh][0]], s[j][P.c_values.row_value[hh][1]]) * kScaleLog2);
      mx = quad_max(mx);
      m_use[hh] = mx == -kInf ? 0.f : mx;  // every key masked so far: exp2 gives 0, not NaN
      alpha[hh] = exp2_approx(row_max[hh] - m_use[hh]);
      row_max[hh] = mx;
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      float e[2][2];
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
#pragma unroll
        for (int x = 0; x < 2; ++x) {
          e[hh][x] = exp2_approx(fmaf(s[j][P.c_values.row_value[hh][x]], kScaleLog2, -m_use[hh]));
          sum[hh] += e[hh][x];
        }
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
        p[j / 2][P.p_reg[j % 2][P.c_values.row_value[hh][0]]] = pack2<BF16>(e[hh][0], e[hh][1]);
    }
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      row_sum[hh] = row_sum[hh] * alpha[hh] + sum[hh];  // per-thread partial; the quad is summed at the end
#pragma unroll
      for (int j = 0; j < DT; ++j)
        o[j][P.c_values.row_value[hh][0]] *= alpha[hh], o[j][P.c_values.row_value[hh][1]] *= alpha[hh];
    }
    TL_PROBE_END(Probe::softmax, t % STAGES, t);

    // O += P V over this warp's keys (ldmatrix.trans gives V's col-major B fragments).
    TL_PROBE_BEGIN(Probe::pv, t % STAGES, t);
#pragma unroll
    for (int kt = 0; kt < KW / 16; ++kt) {
#pragma unroll
      for (int dn = 0; dn < DT; dn += 2) {
        unsigned vb0[2], vb1[2];
        ldmatrix_x4_trans(v_tile + (v_off ^ (dn / 2 * V_N16)) + kt * V_K16, vb0[0], vb0[1], vb1[0], vb1[1]);
        mma_16816<BF16>(o[dn], p[kt], vb0);
        mma_16816<BF16>(o[dn + 1], p[kt], vb1);
      }
    }
    TL_PROBE_END(Probe::pv, t % STAGES, t);
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the tiles: their bytes become o_part and ml

  // The CTA's combine: each key warp's O, running max (log2 domain) and sum per row into shared memory.
  TL_PROBE_BEGIN(Probe::combine, probe::kNoStage, split);
  float* o_part = reinterpret_cast<float*>(smem);
  float* ml = reinterpret_cast<float*>(smem + PD.ml_offset);
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const TileCoord x = P.c_values.at[P.c_values.row_value[hh][0]];
    const int row = wm * 16 + lc.row + x.row;
    const float l = quad_sum(row_sum[hh]);
    if (lc.col == 0) ml[wn * BM + row] = row_max[hh], ml[(WN + wn) * BM + row] = l;
    float* dst = o_part + PD.o_part(wn * BM + row, lc.col + x.col);
#pragma unroll
    for (int j = 0; j < DT; ++j)
      *reinterpret_cast<float2*>(dst + j * 8) =
          make_float2(o[j][P.c_values.row_value[hh][0]], o[j][P.c_values.row_value[hh][1]]);
  }
  __syncthreads();

  // Items (row, 4 columns) of the tile's valid rows, THREADS at a time: the WN warps' results weighted by
  // 2^(m_w - max) into this split's normalized O and its LSE (log2).
  const int rows = min(BM, R - m0);
  constexpr int C4 = D / 4;
  auto split_item = [&](int row, int c4, float4& out, float& lse2) {
    float mx = -kInf;
#pragma unroll
    for (int w = 0; w < WN; ++w) mx = fmaxf(mx, ml[w * BM + row]);
    const float mu = mx == -kInf ? 0.f : mx;
    float l = 0.f;
    out = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < WN; ++w) {
      const float f = exp2_approx(ml[w * BM + row] - mu);
      l += f * ml[(WN + w) * BM + row];
      const float4 v = *reinterpret_cast<const float4*>(o_part + PD.o_part(w * BM + row, 4 * c4));
      out.x += f * v.x, out.y += f * v.y, out.z += f * v.z, out.w += f * v.w;
    }
    const float inv = l > 0.f ? 1.f / l : 0.f;
    out.x *= inv, out.y *= inv, out.z *= inv, out.w *= inv;
    lse2 = l > 0.f ? mu + __log2f(l) : -kInf;
  };
  // The result of row `row` of the tile: O as 16 bits, LSE as the natural log.
  auto write_o = [&](int row, int c4, const float4& v) {
    unsigned short* dst = O + q_row(m0 + row) * D + 4 * c4;
    *reinterpret_cast<uint2*>(dst) = make_uint2(pack2<BF16>(v.x, v.y), pack2<BF16>(v.z, v.w));
  };
  auto write_lse = [&](int row, float lse2) {
    const int gm = m0 + row;
    LSE[(static_cast<long long>(b) * heads + hk * group + gm % group) * seq_q + gm / group] =
        lse2 == -kInf ? -kInf : lse2 * 0.6931471805599453f;
  };
  if (nspl == 1) {
    for (int i = tid; i < rows * C4; i += THREADS) {
      float4 v;
      float lse2;
      split_item(i / C4, i % C4, v, lse2);
      write_o(i / C4, i % C4, v);
      if (i % C4 == 0) write_lse(i / C4, lse2);
    }
    TL_PROBE_END(Probe::combine, probe::kNoStage, split);
  } else {
    // The partial of this split, then the count; the CTA completing it merges.
    const long long tile_id = (static_cast<long long>(b) * heads_kv + hk) * m_tiles + mt;
    const long long ws = tile_id * gridDim.x;  // split 0's slot of this (b, hk, mt)
    for (int i = tid; i < rows * C4; i += THREADS) {
      float4 v;
      float lse2;
      split_item(i / C4, i % C4, v, lse2);
      __stcg(reinterpret_cast<float4*>(o_acc + ((ws + split) * BM + i / C4) * D + 4 * (i % C4)), v);
      if (i % C4 == 0) __stcg(lse_acc + (ws + split) * BM + i / C4, lse2);
    }
    __threadfence();
    __syncthreads();  // every thread's partial is out before the count says so; o_part and ml are free again
    unsigned* flag = reinterpret_cast<unsigned*>(smem + PD.flag_offset);
    if (tid == 0) *flag = atomicAdd(counters + tile_id, 1) == nspl - 1 ? 1u : 0u;
    __syncthreads();
    TL_PROBE_END(Probe::combine, probe::kNoStage, split);
    if (*flag) {
      TL_PROBE_BEGIN(Probe::merge, probe::kNoStage, split);
      __threadfence();  // the others' partials, counted before our increment, are visible to our loads
      // Each row's weights 2^(lse_i - lse) into merge_w, a warp per row: a lane loads splits lane, lane + 32, ...
      // (one round trip for all of them), the warp reduces max and sum, lane 0 writes the row's LSE.
      float* wts = reinterpret_cast<float*>(smem);
      constexpr int PER_LANE = PD.max_splits / 32;
      for (int row = warp; row < rows; row += WARPS) {
        float v[PER_LANE];
        float mx = -kInf;
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) {
          const int sp = lane + 32 * i;
          v[i] = sp < nspl ? __ldcg(lse_acc + (ws + sp) * BM + row) : -kInf;
          mx = fmaxf(mx, v[i]);
        }
        mx = warp_allreduce(mx, MaxOp{});
        const float mu = mx == -kInf ? 0.f : mx;
        float l = 0.f;
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) l += (v[i] = exp2_approx(v[i] - mu));
        l = warp_allreduce(l, SumOp{});
        const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i)
          if (lane + 32 * i < nspl) wts[(lane + 32 * i) * BM + row] = v[i] * inv;
        if (lane == 0) write_lse(row, l > 0.f ? mu + __log2f(l) : -kInf);
      }
      __syncthreads();
      // O items: the splits' partials in batches of MB independent loads (the merge is L2 round trips, not math).
      // IT items per thread at once (i, i + THREADS, ...), so IT x THREADS items (8 query rows at dim 128 for IT 2)
      // cost one round trip per MB splits, not IT. IT 2 only with 16-row tiles: at 32 rows ptxas spills on sm_80.
      constexpr int MB = 16, IT = BM == 16 ? 2 : 1;
      for (int i0 = tid; i0 < rows * C4; i0 += IT * THREADS) {
        int item[IT];
        float4 acc[IT];
#pragma unroll
        for (int k = 0; k < IT; ++k) {
          item[k] = min(i0 + k * THREADS, rows * C4 - 1);  // a missing item repeats the last one, unwritten
          acc[k] = make_float4(0.f, 0.f, 0.f, 0.f);
        }
        for (int s0 = 0; s0 < nspl; s0 += MB) {
          float4 part[IT][MB];
#pragma unroll
          for (int k = 0; k < IT; ++k)
#pragma unroll
            for (int j = 0; j < MB; ++j)
              part[k][j] = __ldcg(reinterpret_cast<const float4*>(
                  o_acc + ((ws + min(s0 + j, nspl - 1)) * BM + item[k] / C4) * D + 4 * (item[k] % C4)));
#pragma unroll
          for (int k = 0; k < IT; ++k)
#pragma unroll
            for (int j = 0; j < MB; ++j) {
              const float f = s0 + j < nspl ? wts[(s0 + j) * BM + item[k] / C4] : 0.f;
              acc[k].x += f * part[k][j].x, acc[k].y += f * part[k][j].y;
              acc[k].z += f * part[k][j].z, acc[k].w += f * part[k][j].w;
            }
        }
#pragma unroll
        for (int k = 0; k < IT; ++k)
          if (i0 + k * THREADS < rows * C4) write_o(item[k] / C4, item[k] % C4, acc[k]);
      }
      if (tid == 0) counters[tile_id] = 0;  // ready for the next launch
      TL_PROBE_END(Probe::merge, probe::kNoStage, split);
    }
  }
  TL_PROBE_FLUSH();
  if (tid == 0) TL_PROBE_BLOCK_END();
}

}  // namespace tl
