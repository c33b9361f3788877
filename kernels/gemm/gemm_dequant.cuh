// gemm.dequant: bf16 activations times 4-bit weights (int4 or fp4 e2m1, group-wise scales) on Hopper, the weights
// dequantized in registers into wgmma's register-sourced A operand.
//
// C[M,N] = A[M,K] · dequant(W)^T, A bf16 row-major, W [N, K] packed 4-bit (two codes per byte, the even k in the low
// nibble; tile/dequant4.hpp), scales [N, ceil(K/group)] bf16 or f32: dequant(W)[n, k] = bf16(code(n, k) *
// scale[n, k / group]). C bf16 row-major, f32 accumulation.
//
// The operands are swapped: the kernel computes C^T = dequant(W) · A^T, so the weights are wgmma's A (64 weight rows
// per consumer warpgroup, m64nNk16) and the activations its shared-memory B with N = block_M activation rows (16 for
// decode's few rows, up to 256 for prefill). A consumer turns the packed bytes of its rows into the A fragment in
// registers: no bf16 copy of the weights is ever written to shared memory.
//
// Threads: (consumers + 1) warpgroups of 128. Warpgroup 0 is the producer: one thread issues the TMA loads of each
// k block (block_K): the weights' block_N x block_K/2 bytes (no swizzle) and block_K/64 activation boxes of
// block_M x 64 bf16 (128B swizzle, what wgmma reads), into the next free stage. A consumer owns 64 weight rows of the
// tile (its row group). Grid: (N tiles, M tiles), one tile per CTA.
//
// Scales. smem_scales (the spec's scale_feed=smem; auto's choice but for split decode tiles with one group a stage): the
// producer warpgroup's 128 threads also stage each k block's scales (block_N rows x its groups) in shared memory as
// the consumers multiply by them (a bf16 scale in both halves of a pair, fp4's fold applied, or an f32), so a consumer
// reads a row's scales for the stage with one shared load (prefill at group 32 on the H100: 0.88x -> 0.96x of bf16
// gemm.wgmma). Else each consumer thread loads its two rows' scales from global memory into a ring of registers,
// stages ahead (at group 32 eight loads a stage, each with its own 64-bit address arithmetic), which keeps the
// producer's issue path free of load latency (split decode tiles at group 128: 7% faster with fp4).
//
// k_split > 1 (decode: one warpgroup per SM could not keep enough weight bytes moving): k_split consumer warpgroups
// per 64 weight rows take the stages in turn (lane kl the stages kl, kl + k_split, ...), and at the end the other
// lanes hand their f32 partial sums to lane 0 through shared memory.
//
// Per 64 k of a stage a consumer thread reads, for each of its two weight rows (the fragment's row and row + 8),
// the row's 32 bytes from shared memory (two 16-byte loads; the four threads of a quad read the same bytes), picks
// its byte q (q = its column / 2 in the fragment) of each 4-byte word with one byte permute that also spreads the
// byte's two nibbles into a bf16 pair's halves, converts the pair (int4: dequant4::codes_to_bf16x2; fp4:
// dequant4::spread_up and fp4_bits, six instructions a pair with the scale where spread and codes_to_bf16x2 took
// eight: fp4 prefill at group 128 went from 0.92x to 0.97x of bf16 gemm.wgmma on the H100) and multiplies it by its
// row's scale. Then four wgmma k16 from those registers. The fragment registers are double-buffered per 64 k so
// that the next chunk's conversion runs while the tensor cores work on this one (wgmma reads A's registers
// asynchronously: they must stay untouched until its group completes).
//
// Shared memory (dynamic, from a base aligned to 1024 B; the plan's offsets):
//   [num_stages x (block_K/64 activation boxes: smem_A, block_M rows x 128 B, TMA SWIZZLE_128B)]
//   [num_stages x weights: smem_W, block_N rows x block_K/2 bytes]
//   [num_stages x scales (smem_scales): block_N rows x stage_groups() 4-byte words]
//   [num_stages full barriers][num_stages empty barriers]
#pragma once

#include "gemm/gemm_dequant_gemv.cuh"  // path=gemv: the decode kernel, compiled from this source too
#include "gemm/gemm_dequant_plan.hpp"
#include "tile/barrier.cuh"
#include "tile/config.hpp"
#include "tile/convert.cuh"
#include "tile/dequant4.hpp"
#include "tile/mbarrier.cuh"
#include "tile/probe.hpp"
#include "tile/setmaxnreg.cuh"
#include "tile/smem.cuh"
#include "tile/table.hpp"
#include "tile/tma.cuh"
#include "tile/wgmma_ops.cuh"

namespace tl {

template <GemmDequantConfig CFG>
__global__ void __launch_bounds__(CFG.threads(), CFG.ctas_per_sm)
    gemm_dequant(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_w,
                 const void* __restrict__ scales, unsigned short* __restrict__ C, int M, int N, int K) {
  using namespace wgmma_ops;
  using Probe = GemmDequantProbe;
  static constexpr GemmDequantPlan P = make_plan(CFG);
  constexpr int BN = CFG.block_N, BM = CFG.block_M, BK = CFG.block_K, STAGES = CFG.num_stages;
  constexpr int CONSUMERS = CFG.consumers(), RG = CFG.row_groups(), KS = CFG.k_split;
  constexpr int CHUNKS = CFG.chunks(), G = CFG.group;
  constexpr int NG = CFG.stage_groups();
  constexpr int NV = P.acc.num_values();
  constexpr unsigned A_BOX = P.a_box_bytes, A_STAGE = P.a_stage_bytes, W_STAGE = P.w_stage_bytes;
  constexpr unsigned S_STAGE = P.s_stage_bytes, S_ROW = P.s_row_bytes;
  constexpr bool SMEM_SCALES = CFG.smem_scales;
  // A stage is full once the TMA bytes have landed (thread 0's arrive.expect_tx) and, with staged scales, each producer
  // thread has stored its scales (its own arrive, which releases them).
  constexpr unsigned FULL_ARRIVALS = SMEM_SCALES ? 1 + 128 : 1;
  // Scale entries per producer thread a stage (the producer warpgroup's 128 threads share them).
  constexpr int S_PER_THREAD = (BN * NG + 127) / 128;
  // Chunks alternate between two fragment buffers; with an even count per stage the alternation carries over the
  // stage boundary and one chunk's wgmma stays in flight across it.
  constexpr bool OVERLAP = CHUNKS % 2 == 0;
  static_assert(BN == 64 * RG && BK % 64 == 0, "64 weight rows per row group, 64-k activation boxes");
  static_assert(STAGES % KS == 0 && STAGES >= 2 * KS,
                "a stage slot is always consumed by the same k lane, and each lane has two (it frees one a stage late)");
  static_assert(P.red_bytes <= STAGES * A_STAGE, "the k lanes' partial sums fit over the activation stages");
  // setmaxnreg moves registers from the producer to the consumers of one CTA per SM, within the SM's 64 K.
  constexpr bool REG_SHIFT = CFG.ctas_per_sm == 1 && CONSUMERS <= 2;
  // fp4: the pairs from dequant4::spread_up and fp4_bits (value * 2^-126); with bf16 scales the 2^126 is folded into
  // the scales (dequant4::fp4_fold_scale) and the sums come out 2^-kFp4ScaleShift too small.
  constexpr bool FP4 = CFG.wtype == dequant4::kFp4, FOLD = FP4 && !CFG.scale_f32;

  extern __shared__ unsigned char smem_raw[];
  const unsigned base = smem_align<P.align>(smem_raw);
  auto full_bar = [&](int s) { return base + P.full_bar_offset + 8u * s; };
  auto empty_bar = [&](int s) { return base + P.empty_bar_offset + 8u * s; };

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  const int n0 = blockIdx.x * BN, m0 = blockIdx.y * BM;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar(s), FULL_ARRIVALS);
      mbar_init(empty_bar(s), RG);  // the row groups of the stage's k lane
    }
    fence_mbarrier_init();
    TL_PROBE_BLOCK_BEGIN();
  }
  __syncthreads();
  const int k_steps = (K + BK - 1) / BK;
  const int k_groups = (K + G - 1) / G;

  if (wg == 0) {
    // One CTA per SM and at most two consumers: they take the producer's registers. Else as compiled.
    if constexpr (REG_SHIFT) setmaxnreg_dec<40>();
    // Warp 0 issues the TMA loads; with staged scales the whole warpgroup loads and stores them.
    if (SMEM_SCALES || tid < 32) {
      TL_PROBE_WARP_INIT_IF(tid < 32);
      if (tid == 0) {
        prefetch_tensormap(&tma_a);
        prefetch_tensormap(&tma_w);
      }
      for (int k = 0; k < k_steps; ++k) {
        const int s = k % STAGES;
        TL_PROBE_STAMP(t_wait);
        mbar_wait(empty_bar(s), ((k / STAGES) & 1) ^ 1);
        TL_PROBE_STAMP(t_issue);
        if (tid == 0) {
          // Boxes past M, N or K are zero-filled by TMA (zero codes and zero activations add nothing) and still count
          // their whole bytes.
          mbar_expect_tx(full_bar(s), A_STAGE + W_STAGE);
          tma_load(base + P.w_offset + s * W_STAGE, &tma_w, full_bar(s), k * (BK / 2), n0);
#pragma unroll
          for (int ch = 0; ch < CHUNKS; ++ch)
            tma_load(base + P.a_offset + s * A_STAGE + ch * A_BOX, &tma_a, full_bar(s), k * BK + 64 * ch, m0);
        }
        // smem_scales: the stage's scales. Entry e is row e / NG, group e % NG of the stage, at 4 e bytes; thread tid
        // takes entries tid, tid + 128, ... (its loads all in flight before its first store). Rows past N and groups
        // past K are clamped into the array (their codes are zero: any scale will do).
        if constexpr (SMEM_SCALES) {
          const int g0 = k * BK / G;
          const unsigned s_stage = base + P.s_offset + s * S_STAGE;
          unsigned raw[S_PER_THREAD] = {};
#pragma unroll
          for (int i = 0; i < S_PER_THREAD; ++i) {
            const int e = tid + 128 * i;
            const long long at =
                static_cast<long long>(min(n0 + e / NG, N - 1)) * k_groups + min(g0 + e % NG, k_groups - 1);
            if (e < BN * NG)
              raw[i] = CFG.scale_f32 ? __float_as_uint(__ldg(static_cast<const float*>(scales) + at))
                                     : __ldg(static_cast<const unsigned short*>(scales) + at);
          }
#pragma unroll
          for (int i = 0; i < S_PER_THREAD; ++i) {
            unsigned v = raw[i];
            if constexpr (!CFG.scale_f32) v = FOLD ? dequant4::fp4_fold_scale(v | (v << 16)) : v | (v << 16);
            if (tid + 128 * i < BN * NG) st_shared_b32(s_stage + 4u * (tid + 128 * i), v);
          }
          mbar_arrive(full_bar(s));
        }
        TL_PROBE_STAMP(t_issued);
        TL_PROBE_BEGIN_AT(Probe::wait_empty, s, k, t_wait);
        TL_PROBE_END_AT(Probe::wait_empty, s, k, t_issue);
        TL_PROBE_BEGIN_AT(Probe::tma_issue, s, k, t_issue);
        TL_PROBE_END_AT(Probe::tma_issue, s, k, t_issued);
      }
      TL_PROBE_FLUSH();
    }
  } else {
    if constexpr (REG_SHIFT) setmaxnreg_inc<232>();
    // Consumer c: row group rg (weight rows [64 rg, 64 rg + 64) of the tile) and k lane kl (stages kl, kl + KS, ...).
    const int c = wg - 1, rg = c % RG, kl = c / RG;
    TL_PROBE_WARP_INIT_IF(tid < 32);
    // The fragment: register j of a k16 step holds (row, col) = e0 + FT[2 j] of the consumer's 64 x 16 slice,
    // col even, so its two codes are the two nibbles of byte col / 2 of the row's 8 bytes for that step.
    static constexpr auto FT = tabulate<8>([](int v) { return P.frag_W(0, v); });
    const TileCoord e0 = P.frag_W(tid, 0);
    const unsigned sel = dequant4::spread_selector((e0.col / 2) % 4);
    // The thread's two weight rows (fragment rows e0.row and e0.row + 8) and, for the register ring, their scale rows
    // (clamped into N: rows past N hold zero codes, so any scale will do).
    const int rows[2] = {rg * 64 + e0.row, rg * 64 + e0.row + FT[2].row};
    const long long srow[2] = {static_cast<long long>(min(n0 + rows[0], N - 1)) * k_groups,
                               static_cast<long long>(min(n0 + rows[1], N - 1)) * k_groups};
    float acc[NV];
#pragma unroll
    for (int i = 0; i < NV; ++i) acc[i] = 0.f;
    unsigned frag[2][4][4];  // [buffer][k16 step][register]
    int prev_stage = -1;
    // The scales of a stage, as bf16 pairs (the scale in both halves) or f32, per row (row, row + 8) and group.
    // smem_scales: read from the stage's shared memory after its full barrier. Else loaded SCALE_AHEAD of this lane's
    // stages before their use into a ring of registers (the k loop is unrolled by the ring's size so that each slot is
    // a fixed register), which keeps their latency off the stage's path.
    struct StageScales {
      unsigned h[2][NG];
      float f[2][NG];
    };
    constexpr int SCALE_AHEAD = SMEM_SCALES ? 1 : NG <= 2 ? 8 : NG <= 4 ? 4 : 2;
    StageScales ring[SCALE_AHEAD];
    auto load_scales = [&](StageScales& r, int k) {
      if constexpr (!SMEM_SCALES) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int g = 0; g < NG; ++g) {
            // Past the last stage the index is clamped: a load nobody uses, kept in bounds.
            const long long at = srow[h] + min(k * BK / G + g, k_groups - 1);
            if constexpr (CFG.scale_f32) {
              r.f[h][g] = __ldg(static_cast<const float*>(scales) + at);
            } else {
              const unsigned b = __ldg(static_cast<const unsigned short*>(scales) + at);
              r.h[h][g] = FOLD ? dequant4::fp4_fold_scale(b | (b << 16)) : b | (b << 16);
            }
          }
      }
    };
    auto run_stage = [&](int k, StageScales& sc) {
      const int s = k % STAGES;
      TL_PROBE_STAMP(t_wait);
      mbar_wait(full_bar(s), (k / STAGES) & 1);
      TL_PROBE_STAMP(t_mma);
      const unsigned w_stage = base + P.w_offset + s * W_STAGE;
      const unsigned a_stage = base + P.a_offset + s * A_STAGE;
      // smem_scales: the stage's first activation descriptor; the others add their byte offset / 16 to its start
      // address field (shared memory ends below 2^18 bytes: the 14-bit field never carries) instead of each being built
      // again (measured with the staged scales only; the register ring keeps a descriptor per wgmma: docs/perf.md).
      const unsigned long long a_desc = smem_desc_sw128(a_stage, 16, P.a_sbo);
      if constexpr (SMEM_SCALES) {
        // The two rows' words for the stage's groups (the quad's four threads read the same words: a broadcast).
        unsigned w[2][NG];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const unsigned at = base + P.s_offset + s * S_STAGE + rows[h] * S_ROW;
          if constexpr (NG == 4) {
            const uint4 v = ld_shared_v4_b32(at);
            w[h][0] = v.x, w[h][1] = v.y, w[h][2] = v.z, w[h][3] = v.w;
          } else if constexpr (NG == 2) {
            const unsigned long long v = ld_shared_b64(at);
            w[h][0] = static_cast<unsigned>(v), w[h][1] = static_cast<unsigned>(v >> 32);
          } else {
#pragma unroll
            for (int g = 0; g < NG; ++g) w[h][g] = ld_shared_b32(at + 4u * g);
          }
#pragma unroll
          for (int g = 0; g < NG; ++g) {
            if constexpr (CFG.scale_f32) sc.f[h][g] = __uint_as_float(w[h][g]);
            else sc.h[h][g] = w[h][g];
          }
        }
      }
#pragma unroll
      for (int ch = 0; ch < CHUNKS; ++ch) {
        unsigned(&fr)[4][4] = frag[ch % 2];
        // The two rows' 32 bytes of this chunk: words[h][i] is bytes 4i..4i+3, k 8i..8i+7.
        unsigned words[2][8];
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const uint4 v = ld_shared_v4_b32(w_stage + P.smem_W(rows[h], 32 * ch + 16 * half));
            words[h][4 * half] = v.x;
            words[h][4 * half + 1] = v.y;
            words[h][4 * half + 2] = v.z;
            words[h][4 * half + 3] = v.w;
          }
#pragma unroll
        for (int st = 0; st < 4; ++st) {
          const int g = (64 * ch + 16 * st) / G;  // the step's scale group in the stage (G >= 32: one per step)
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int h = FT[2 * j].row / 8;           // row or row + 8
            const int w = 2 * st + FT[2 * j].col / 8;  // k 8w.. of the chunk: the word with the step's byte
            unsigned v;
            if constexpr (FP4) {
              v = dequant4::fp4_bits(dequant4::spread_up(words[h][w], sel));
              if constexpr (!FOLD) v = dequant4::mul_bf16x2(v, dequant4::kPow2_126);
            } else {
              v = dequant4::codes_to_bf16x2<CFG.wtype>(dequant4::spread(words[h][w], sel));
            }
            if constexpr (CFG.scale_f32) {
              const float2 f = unpack2<true>(v);
              fr[st][j] = pack2<true>(f.x * sc.f[h][g], f.y * sc.f[h][g]);
            } else {
              fr[st][j] = dequant4::mul_bf16x2(v, sc.h[h][g]);
            }
          }
        }
        wgmma_fence();
#pragma unroll
        for (int st = 0; st < 4; ++st)
          WgmmaRS<BM, true, 0>::run(acc, fr[st],
                                    SMEM_SCALES ? a_desc + (ch * A_BOX + 32 * st) / 16
                                                : smem_desc_sw128(a_stage + ch * A_BOX + 32 * st, 16, P.a_sbo),
                                    1);
        wgmma_commit();
        // The chunk before this one is complete: its fragment buffer may be overwritten.
        wgmma_wait<1>();
      }
      TL_PROBE_STAMP(t_done);
      if constexpr (OVERLAP) {
        // This stage's last chunk may still be reading its activations: free the stage before it.
        if (prev_stage >= 0 && tid == 0) mbar_arrive(empty_bar(prev_stage));
        prev_stage = s;
      } else {
        wgmma_wait<0>();
        if (tid == 0) mbar_arrive(empty_bar(s));
      }
      TL_PROBE_BEGIN_AT(Probe::wait_full, s, k, t_wait);
      TL_PROBE_END_AT(Probe::wait_full, s, k, t_mma);
      TL_PROBE_BEGIN_AT(Probe::dequant_mma, s, k, t_mma);
      TL_PROBE_END_AT(Probe::dequant_mma, s, k, t_done);
    };
    // This lane's i-th stage is k = kl + KS i.
    if constexpr (SMEM_SCALES) {
#pragma unroll 1
      for (int k = kl; k < k_steps; k += KS) run_stage(k, ring[0]);
    } else {
#pragma unroll
      for (int d = 0; d < SCALE_AHEAD; ++d) load_scales(ring[d], kl + KS * d);
#pragma unroll 1
      for (int i0 = 0; kl + KS * i0 < k_steps; i0 += SCALE_AHEAD) {
#pragma unroll
        for (int d = 0; d < SCALE_AHEAD; ++d) {
          const int k = kl + KS * (i0 + d);
          if (k < k_steps) {
            run_stage(k, ring[d]);
            load_scales(ring[d], k + KS * SCALE_AHEAD);
          }
        }
      }
    }
    wgmma_wait<0>();
    fence_regs(acc);
    if constexpr (FOLD) {
#pragma unroll
      for (int i = 0; i < NV; ++i) acc[i] *= static_cast<float>(1ull << dequant4::kFp4ScaleShift);
    }
    TL_PROBE_BEGIN(Probe::epilogue, probe::kNoStage, 0);
    if constexpr (KS > 1) {
      // The k lanes' partial sums into lane 0's: lanes 1.. write theirs over the activation stages (every stage has
      // been loaded and consumed: each lane waited on all of its full barriers and its last wgmma), lane 0 adds them.
      // Register v of thread tid of slot q at ((q NV + v) 128 + tid) floats: a warp's stores are consecutive words.
      const unsigned red = base + P.a_offset;
      named_barrier_sync(1, CONSUMERS * 128);
      if (kl > 0) {
#pragma unroll
        for (int v = 0; v < NV; ++v) st_shared_f32(red + 4u * ((((kl - 1) * RG + rg) * NV + v) * 128 + tid), acc[v]);
      }
      named_barrier_sync(1, CONSUMERS * 128);
      if (kl == 0)
        for (int q = 1; q < KS; ++q)
#pragma unroll
          for (int v = 0; v < NV; ++v) acc[v] += ld_shared_f32(red + 4u * ((((q - 1) * RG + rg) * NV + v) * 128 + tid));
    }
    // acc register v is C^T (weight row, activation row) = e0 + AT[v]: C[m0 + col][n0 + 64 rg + row].
    static constexpr auto AT = tabulate<NV>([](int v) { return P.acc(0, v); });
    const TileCoord a0 = P.acc(tid, 0);
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      const int n = n0 + rg * 64 + a0.row + AT[v].row, m = m0 + a0.col + AT[v].col;
      // Lane 0 stores the tile.
      if (kl == 0 && n < N && m < M) C[static_cast<long long>(m) * N + n] = static_cast<unsigned short>(pack2<true>(acc[v], 0.f));
    }
    TL_PROBE_END(Probe::epilogue, probe::kNoStage, 0);
    TL_PROBE_FLUSH();
    if (c == 0 && tid == 0) TL_PROBE_BLOCK_END();
  }
}

}  // namespace tl
