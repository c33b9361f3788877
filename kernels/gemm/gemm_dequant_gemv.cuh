// gemm.dequant's decode path (path=gemv, M <= 16): each lane loads its own 16-byte pieces of packed weights into
// registers, dequantizes them there and feeds them to mma.sync; a split over K with the partial sums combined in the
// same launch.
//
// C[M,N] = A[M,K] · dequant(W)^T as gemm_dequant.cuh (same formats and rounding: dequant(W)[n,k] = bf16(code·scale)).
// At decode the weights' bytes are the whole cost, so nothing but the weights should wait on anything: no shared-
// memory copy of them, no barrier per step. Lanes own weight rows: lane (group g, t) of a warp loads, per 128-k step,
// 16 bytes (32 codes, k 32t .. 32t+31 of the step) of each of its rows g + 8h + 16rb (h = 0, 1; rb < warp_rows / 16),
// `prefetch` steps ahead into registers (several independent 16-byte loads in flight per lane). With CFG.batch a
// lane loads its `prefetch` steps together once it has used them all: a row's two 64-byte halves of a 128-byte line
// are then asked for at once, not a step apart, which the H100's memory serves faster (1.16-1.24x at the large decode
// shapes, docs/perf.md) although fewer bytes stay in flight. The k permutation of
// the plan (gemv_code) makes the lane's own bytes exactly its mma.sync A fragment (word pairs 2j, 2j+1 for mma j), so
// the bytes go from the load to the tensor cores through a shift, the dequant4 conversion and the scale (about four
// instructions per byte), with no exchange between lanes; the activations (mma.sync's B, M rows padded to 8 or 16)
// follow the same permutation: each lane reads 64 bytes of its activation row per step from shared memory (four
// 16-byte pieces at one base address and immediate offsets, the plan's layout), staged in pair order. (A TMA ring
// per warp in shared memory instead of the registers, to lift the bytes in flight, measured 0.82-1.04x of this feed
// on an H100 and was removed: docs/perf.md.) The tensor cores (not CUDA-core FMAs) do the multiply-adds: at M = 16 a
// weight byte takes 32 of them, more than the SM could issue as FFMA at HBM speed, and the mma's own reduction over
// the quad's k replaces the warp shuffles. Instructions per weight byte: a lane's loads go through one pointer per row
// (split schedule), moved on a step a load, so consecutive loads differ by immediate offsets; int4 takes a single
// LOP3 a pair and fp4 a folded scale. A step's 1 KiB per warp takes 160-207 warp instructions (main loop, SASS); with
// CFG.group_sum (int4, group 128: the bias and the scale applied once a step to the mma sums) 107, which measured no
// faster on an H100 (docs/perf.md), so it is opt-in; CFG.step_scale keeps the bias subtraction and applies only the
// scale once a step to the sums (any weight type with groups of whole steps), with CFG.scale_smem those scales read
// from shared memory, copied with the activations (no scale registers in the loop: int4 at two row tiles a CTA
// 1.01-1.03x on an H100, docs/perf.md, gemv16). With CFG.permuted the weights come pre-permuted (the plan's
// gemv_permuted_at: 16-row by 64-byte tiles, a row block's steps one after another), so the same lanes' loads are
// each one contiguous 512-byte run and a warp's steps one contiguous stream; the kernel only moves its pointers
// differently. With CFG.stage_async (on the permuted copy, which is the kernel's own) each 4-byte word of the weights
// holds its 8 codes in nibble-pair order (gemv_pair_code with nibble_pairs: the same shift and conversion then meet
// consecutive k), so the activations need no pair order and are staged as they are by cp.async (through the L1:
// 1.03-1.05x at M 8 and 16, 28672 x 8192, 0.99x at M 1 on an H100; bypassing it 0.78-0.98x: docs/perf.md, gemv10);
// with group_sum each thread then reads its copied chunks back from shared memory for the step sums. With
// CFG.stage_tma (the same weights) one thread copies each step's activations as one TMA box (rows past M and k past K
// zero-filled) into a 64-byte-swizzled step tile, each step with its own mbarrier that the step's first mma waits
// on: no thread issues the other chunks, no cp.async waits on the CTA's whole staging, and the copies do not queue
// in the L1 behind the weights' loads; with CFG.act_multicast the row tiles' CTAs of one k split form a cluster and
// each step is copied once a cluster (TMA multicast). (On an H100 1.02-1.05x where a CTA holds one int4 row tile of a
// deep M 9-16 grid, or fp4, where auto takes them; 0.90-0.95x where it holds two int4 tiles: docs/perf.md, gemv14.)
//
// Grid, schedule split (the default): (ceil(N / rows), splits); CTA (x, y) takes row tile x (weight rows [x rows, (x+1)
// rows)) over k steps [y split_steps, (y+1) split_steps); with CFG.tile_loop CTA (x, y) takes row tiles x, x +
// gridDim.x, ... over that k range, its activations staged once for all of them, each tile's sums going out while the
// next tile's first weights load (the spec's tile_rounds: two tiles a CTA measured 1.03-1.07x on an H100 at 28672 x
// 8192, M 12 and 16, where auto takes them; 0.50-0.94x at the other decode shapes and M, and three or four tiles a
// CTA slower everywhere timed: docs/perf.md, gemv9); at the CTA's end its tiles' arrivals are counted together, one
// atomic a warp after one fence and barrier (CFG.sums_once, auto for int4: one tile after another cost a second round
// trip, 1.05-1.06x at M 9-16 there; fp4 0.97x: docs/perf.md, gemv13). Schedule stream (CFG.stream): a persistent grid
// of gridDim.x CTAs (one wave, or whole waves where a CTA's share would not fit its shared memory) over the whole
// problem cut into chunks (a row tile's `prefetch` steps with batch, else one step) in tile-major order, each CTA a
// contiguous run of chunks: every CTA the same work (no wave of CTAs that fills only part of the SMs, no second launch
// wave), a row tile's steps in one or a few CTAs, and a CTA that ends one tile goes on to the next one's loads, already
// in flight, while it writes the first one's sums (0.79-0.89x the split grid at the int4 decode shapes on an H100:
// opt-in; docs/perf.md). Either way a CTA stages its steps' activations once into shared memory (plan.smem_act per
// step, zero past K: a zero code times a stale NaN would be NaN; rows past M are not staged). A row tile held by one
// CTA writes C; else each holder writes its f32 partials (partials[part][m][n], part = its rank among the tile's CTAs
// in k order), and the one that finishes last (a counter per tile, left at zero for the next launch) adds them in part
// order (deterministic) and writes C. With CFG.cluster_reduce, where the launch makes a row tile's split CTAs one
// cluster, each CTA instead adds a share of the tile's sums from every CTA's shared memory in rank order
// (deterministic), with no global partials (faster at splits of 4, slower at 8 and 16 on an H100, where each CTA waits
// for the cluster's slowest: docs/perf.md).
#pragma once

#include "gemm/gemm_dequant_gemv_plan.hpp"
#include "tile/cluster.cuh"
#include "tile/config.hpp"
#include "tile/convert.cuh"
#include "tile/cp_async.cuh"
#include "tile/dequant4.hpp"
#include "tile/global.cuh"
#include "tile/mbarrier.cuh"
#include "tile/mma_sync.cuh"
#include "tile/probe.hpp"
#include "tile/smem.cuh"
#include "tile/table.hpp"
#include "tile/tma.cuh"

namespace tl {

namespace gemv_detail {
template <bool B>
struct Flag {
  static constexpr bool value = B;
};
TL_DEVICE_INLINE unsigned word(const uint4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }
// gemv_int4_biased as one LOP3: given the magic as an immediate ptxas emits an AND and an XOR (a LOP3 takes one
// immediate), so the magic comes in a register.
TL_DEVICE_INLINE unsigned int4_biased(unsigned s, unsigned magic) {
  unsigned r;
  asm("lop3.b32 %0, %1, 0x000F000F, %2, 0x6A;" : "=r"(r) : "r"(s), "r"(magic));  // (a & b) ^ c
  return r;
}
// The CTAs of this CTA's cluster (1 when launched without one).
TL_DEVICE_INLINE unsigned cluster_ctas() {
  unsigned n;
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}
// A float in a cluster peer's shared memory (`addr` from map_shared_rank).
TL_DEVICE_INLINE float ld_cluster_f32(unsigned addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
// The scales' element type: bf16 bits or f32.
template <bool F32>
struct ScaleOf {
  using type = unsigned short;
};
template <>
struct ScaleOf<true> {
  using type = float;
};
// The last kernel parameter: with stage_tma the activations' tensor map, else an unused int.
template <bool TMA>
struct ActMapOf {
  using type = int;
};
template <>
struct ActMapOf<true> {
  using type = TmaDescriptor;
};
}  // namespace gemv_detail

template <GemmDequantGemvConfig CFG>
__global__ void __launch_bounds__(CFG.threads(), CFG.min_blocks)
    gemm_dequant_gemv(const unsigned short* __restrict__ A, const unsigned char* __restrict__ W,
                      const void* __restrict__ scales, unsigned short* __restrict__ C, float* __restrict__ partials,
                      int* __restrict__ counters, int M, int N, int K, int split_steps,
                      const __grid_constant__ typename gemv_detail::ActMapOf<CFG.stage_tma>::type act_map) {
  using gemv_detail::word;
  static constexpr GemmDequantGemvPlan P = make_plan(CFG);
  constexpr int RB = CFG.row_blocks(), NT = CFG.n_tiles, D = CFG.prefetch, G = CFG.group;
  // Lane 0's fragment coordinates; every lane's are its own (group, 2t) plus these.
  static constexpr auto FA = tabulate<8>([](int v) { return P.mma_A(0, v); });
  static constexpr auto FB = tabulate<4>([](int v) { return P.mma_B(0, v); });
  static constexpr auto FC = tabulate<4>([](int v) { return P.mma_C(0, v); });
  static_assert(G % kGemvLaneCodes == 0, "a lane's 32 codes share one scale");
  // group_sum: a step's 128 k (all four lanes of a quad, which one mma.sync sums) share one scale.
  constexpr bool GROUP_SUM = CFG.group_sum && CFG.wtype == dequant4::kInt4;
  static_assert(!GROUP_SUM || G % kGemvStepK == 0, "group_sum takes groups of whole steps");
  // step_scale (and group_sum): a step's 128 k share one scale, applied to the step's mma.sync sums (FFMA) instead
  // of to each converted pair (HMUL2): per KiB of weights 32 HMUL2 a lane fewer, NT x 4 FFMA a row block and step more.
  constexpr bool STEP_SCALE = GROUP_SUM || CFG.step_scale;
  static_assert(!STEP_SCALE || G % kGemvStepK == 0, "step_scale takes groups of whole steps");
  // scale_smem: a step's scales are needed only by its closing FFMAs, so they are staged once with the activations
  // (as they are: a row's split_steps scales one run, 16-byte cp.async chunks, which the spec's alignment rule allows)
  // and read there from shared memory, not loaded with the step's weights `prefetch` steps ahead and held in
  // registers: no scale pointers nor scale registers in the loop (at 64 registers the default's two-tile build spills
  // a step scale right after its load, its warp waiting there for that load).
  constexpr bool SCALE_SMEM = CFG.scale_smem > 0;
  static_assert(!SCALE_SMEM || (STEP_SCALE && !CFG.stream && G == kGemvStepK),
                "scale_smem: step_scale on the split schedule, group 128");

  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ int last_split;
  // stage_tma: the swizzled steps from a 1024-byte boundary (the plan's align), each step's mbarrier after them all.
  static_assert(!CFG.stage_tma || (CFG.stage_async && !CFG.stream && !CFG.cluster_reduce && !CFG.group_sum),
                "stage_tma: the split schedule's nibble-pair weights, global sums, no group_sum");
  static_assert(CFG.act_multicast == 1 || (CFG.stage_tma && CFG.act_multicast <= 4), "act_multicast: stage_tma's");
  // unroll: every CTA's split is U steps (the launch's split_steps, known here: the host's gemv_split_for).
  constexpr int U = CFG.unroll;
  static_assert(U == 0 || (!CFG.stream && U % CFG.prefetch == 0), "unroll: the split schedule, whole prefetch rounds");
  // unroll_by: the unrolled loop over a tile's U steps rolled into iterations of RU steps (0: all U unrolled).
  constexpr int RU = CFG.unroll_by > 0 && CFG.unroll_by < U ? CFG.unroll_by : U;
  static_assert(U == 0 || (RU % CFG.prefetch == 0 && U % RU == 0), "unroll_by: whole prefetch rounds dividing the split");
  const int steps_c = U > 0 ? U : split_steps;
  const unsigned act = CFG.stage_tma ? (smem_u32(smem_raw) + 1023u) & ~1023u : smem_u32(smem_raw);
  const unsigned bars = act + steps_c * P.step_bytes;
  // scale_smem (group 128: a scale a step; a row's scales a whole number of 16-byte chunks, the spec's rule): the scale
  // of row r of the CTA's tile w at slot s at scl + (w rows + r) srow + sofs + s sizeof(Scale), the row's chunks from
  // the one holding its first slot's scale (sofs bytes into it); scl 16-byte aligned (the plan's scales(), past the
  // barriers).
  constexpr unsigned ES = P.scale_elem;  // (0 without scale_smem)
  const unsigned scl = act + P.scales(steps_c), srow = P.scale_row(steps_c);
  const unsigned sofs = static_cast<unsigned>(blockIdx.y) * steps_c * ES % 16;

  using Probe = GemmDequantGemvProbe;
  if (threadIdx.x == 0) TL_PROBE_BLOCK_BEGIN();
  TL_PROBE_WARP_INIT();
  TL_PROBE_BEGIN(Probe::gemv_stage, probe::kNoStage, blockIdx.y);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const TileCoord a0 = P.mma_A(lane, 0);
  const int g = a0.row, t = a0.col / 2;
  const int k_steps = (K + kGemvStepK - 1) / kGemvStepK;
  const int k_groups = (K + G - 1) / G;
  const long long row_bytes = K / 2;
  // Byte b of weight row n, and how far a row's next step is (CFG.permuted: the plan's tiled layout).
  const auto w_at = [&](long long n, long long b) {
    return CFG.permuted ? gemv_permuted_at(n, b, k_steps) : n * row_bytes + b;
  };
  constexpr int W_STEP = CFG.permuted ? kGemvTileBytes : kGemvRowStepBytes;
  const int lane_row = warp * CFG.warp_rows + g;  // the lane's row in a tile at block rb, half h: + 16 rb + 8 h

  // The CTA's slots j = 0 .. slots - 1, each one k step of one row tile, in order; slot j's activations at j.
  // split: tile blockIdx.x, steps s0 .. s0 + slots - 1. stream: chunks c0 .. of the tile-major order (tile x, chunk q
  // < kc: steps q UNIT .. q UNIT + UNIT - 1; past k_steps they load nothing), the chunks dealt evenly over the CTAs.
  constexpr int UNIT = CFG.stream && CFG.batch ? D : 1;
  const int kc = (k_steps + UNIT - 1) / UNIT, tile_steps = kc * UNIT;
  const long long chunks = static_cast<long long>((N + CFG.rows() - 1) / CFG.rows()) * kc;
  int tile0, step0, slots;
  if constexpr (CFG.stream) {
    const long long c0 = blockIdx.x * chunks / gridDim.x;
    slots = static_cast<int>((blockIdx.x + 1) * chunks / gridDim.x - c0) * UNIT;
    tile0 = static_cast<int>(c0 / kc);
    step0 = static_cast<int>(c0 % kc) * UNIT;
  } else {
    tile0 = blockIdx.x;
    step0 = blockIdx.y * steps_c;
    slots = U > 0 ? U : min(split_steps, k_steps - step0);  // (unroll: k_steps a multiple of U)
  }
  // CFG.tile_loop: the CTA's row tiles tile0, tile0 + gridDim.x, ... (all over the same k split and the same staged
  // activations), `tiles_mine` of them: `total` steps in all, slot j of a tile at j % slots.
  static_assert(!CFG.tile_loop || (!CFG.stream && !CFG.cluster_reduce), "tile_loop is the split schedule's");
  const int row_tiles = (N + CFG.rows() - 1) / CFG.rows();
  const int tiles_mine = CFG.tile_loop ? (row_tiles - 1 - tile0) / static_cast<int>(gridDim.x) + 1 : 1;
  const int total = tiles_mine * slots;

  // One step's weights of the lane: rows (rb, h), its 16 bytes and their scale (bf16 in both halves, or f32).
  struct Step {
    uint4 w[RB][2];
    unsigned s2[RB][2];
    float sf[RB][2];
  };
  // The loads' position: slot j, k step `step` of row tile `tile` (consecutive steps within a tile).
  struct Cursor {
    int j, tile, step;
  };
  auto advance = [&](Cursor& at) {
    ++at.j;
    if (++at.step == tile_steps) {
      at.step = 0;
      ++at.tile;
    }
  };
  using Scale = typename gemv_detail::ScaleOf<CFG.scale_f32>::type;
  // A loaded scale into its step slot: f32 as it is, bf16 as an f32 (step_scale) or as a bf16 pair.
  const auto put_scale = [](Step& st, int rb, int h, Scale x) {
    if constexpr (CFG.scale_f32)
      st.sf[rb][h] = x;
    else if constexpr (STEP_SCALE)
      st.sf[rb][h] = __uint_as_float(static_cast<unsigned>(x) << 16);
    else
      st.s2[rb][h] = x | (static_cast<unsigned>(x) << 16);
  };
  // A row's piece and scale into st (zero where not asked for: zero codes and a zero scale add nothing). With
  // group_sum the scale multiplies the whole quad's sums of a step, so it is loaded where the step starts inside K,
  // the lane's own k aside.
  const auto fetch = [&](Step& st, int rb, int h, const unsigned char* w, const Scale* sc, bool in_w, bool in_s) {
    st.w[rb][h] = make_uint4(0, 0, 0, 0);
    st.s2[rb][h] = 0;
    st.sf[rb][h] = 0.f;
    if (in_w) st.w[rb][h] = ld_global_stream_v4<CFG.l2_prefetch>(w);
    if (in_s) put_scale(st, rb, h, __ldg(sc));
  };
  // The lane's k in its step (the scale's: the step's own with step_scale).
  constexpr int SCALE_K = STEP_SCALE ? 0 : 1;
  // split: the lane's rows' pointers at its next step, one step (64 bytes, 128 / G scales) on per load: consecutive
  // loads share one pointer with immediate offsets. Rows past N read row N - 1 (never stored: a C row is its
  // weight row's alone); the lane's weights are asked for in its first lim_w slots (k inside K), the scales in lim_s.
  const unsigned char* wp[RB][2];
  const Scale* sp[RB][2];
  int lim_w = 0, lim_s = 0;
  // The pointers at row tile `tile`'s first step of the split.
  const auto aim = [&](int tile) {
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long n = min(tile * CFG.rows() + lane_row + 16 * rb + 8 * h, N - 1);
        if (U > 0 && CFG.permuted) {
          // unroll: one pointer a row block (row g + 8 is 512 bytes on in its 16-row tile), the block clamped to
          // the last one (W_tiles holds whole 16-row tiles; rows past N are never stored).
          const int blk = min(tile * CFG.rows() + warp * CFG.warp_rows + 16 * rb, (N - 1) / kGemvTileRows * kGemvTileRows);
          wp[rb][h] = W + w_at(blk + g, (step0 * kGemvStepK + kGemvLaneCodes * t) / 2) + h * 8 * kGemvRowStepBytes;
        } else {
          wp[rb][h] = W + w_at(n, (step0 * kGemvStepK + kGemvLaneCodes * t) / 2);
        }
        sp[rb][h] = static_cast<const Scale*>(scales) + n * k_groups +
                    (step0 * kGemvStepK + SCALE_K * kGemvLaneCodes * t) / G;
      }
  };
  if constexpr (!CFG.stream) {
    lim_w = min(slots, (K - kGemvLaneCodes * t + kGemvStepK - 1) / kGemvStepK - step0);
    lim_s = STEP_SCALE ? slots : lim_w;
    aim(tile0);
  }
  // The cursor's step (none past the CTA's slots or past K), then the next.
  auto load = [&](Step& st, Cursor& at) {
    if constexpr (!CFG.stream) {
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          fetch(st, rb, h, wp[rb][h], sp[rb][h], at.j < lim_w, !SCALE_SMEM && at.j < lim_s);
          wp[rb][h] += W_STEP;
          sp[rb][h] += kGemvStepK / G;
        }
      ++at.j;
      if constexpr (CFG.tile_loop) {
        // The tile's last slot loaded: on to the CTA's next tile (none left: nothing more is asked for).
        if (at.j == slots) {
          at.j = 0;
          at.tile += gridDim.x;
          if (at.tile < row_tiles)
            aim(at.tile);
          else
            lim_w = lim_s = 0;
        }
      }
      return;
    }
    const int k = at.step * kGemvStepK + kGemvLaneCodes * t;
    const int k_scale = at.step * kGemvStepK + SCALE_K * kGemvLaneCodes * t;
    const bool in_k = at.j < slots && k < K, in_scale = at.j < slots && k_scale < K;
    const int row0 = at.tile * CFG.rows() + lane_row;
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int n = row0 + 16 * rb + 8 * h;
        fetch(st, rb, h, W + w_at(n, k / 2),
              static_cast<const Scale*>(scales) + static_cast<long long>(n) * k_groups + k_scale / G, in_k && n < N,
              in_scale && n < N);
      }
    advance(at);
  };
  // unroll: step r of the tile the pointers aim at (r a constant once unrolled: immediate offsets), every load
  // inside K and the CTA's slots (the host's rule).
  const auto ld_step = [&](Step& st, int r) {
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const unsigned char* w = CFG.permuted ? wp[rb][0] + (h * 8 * kGemvRowStepBytes + r * W_STEP) : wp[rb][h] + r * W_STEP;
        st.w[rb][h] = ld_global_stream_v4<CFG.l2_prefetch>(w);
        if constexpr (!SCALE_SMEM) put_scale(st, rb, h, __ldg(sp[rb][h] + r * (kGemvStepK / G)));
      }
  };
  Step ring[D];
  Cursor next{0, tile0, step0};
  const auto load_ring = [&] {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      if constexpr (U > 0)
        ld_step(ring[d], d);
      else
        load(ring[d], next);
    }
  };

  // The slots' activations into shared memory while the first weights are on their way: 16-byte chunks of 8 k,
  // k 32 tc + 8 qc of row m; a warp's 32 chunks are a row pair's (tc: bits 0-1, m % 2: bit 2, qc: bits 3-4), so a
  // quarter warp's stores cover the 8 bank groups as the reads do. Only the row pairs that hold rows of A are staged:
  // an activation row past M (a column of mma.sync's B) meets only its own column of the sums, which is never stored,
  // so whatever its shared memory holds adds nothing (at M 1 a CTA stages an eighth of the chunks, in fewer rounds).
  // CFG.stage_rounds rounds of the threads' chunks have their loads in flight together (one after another, each round
  // would wait a memory latency before the CTA's first step); at M 16 a second round's registers cost spills.
  // CFG.act_first: the first round's loads go out before the first weights' (else after them). At launch every CTA asks
  // for its first `prefetch` steps of weights at once, a quarter of the bytes at 8192 x 8192, and activations asked
  // for after them wait behind that burst (docs/perf.md, gemv7's timeline), and so do the CTA's first steps. (Every
  // chunk copied by cp.async at once, before the first weights, and reordered in place measured 0.77-0.95x on an
  // H100, its staging longer, and was removed: docs/perf.md, gemv8.)
  constexpr int ROUNDS = CFG.stage_rounds;
  // Row pairs staged, chunks per step. (At two n tiles all 8: a count known at compile time, where the divisions by
  // it below cost M 16 up to 8% on the H100.)
  const int pairs = NT == 1 ? min((M + 1) / 2, 4) : 4 * NT, chunks_per_step = 32 * pairs;
  const int staged = slots * chunks_per_step;
  struct Chunk {
    int s, m, kq, k;
  };
  const auto chunk_at = [&](int i) {
    const int pair_row = i / 32, s = pair_row / pairs, kq = kGemvLaneCodes * (i % 4) + 8 * ((i / 8) % 4);
    return Chunk{s, 2 * (pair_row % pairs) + (i / 4) % 2, kq, (step0 + s) % tile_steps * kGemvStepK + kq};
  };
  uint4 v[ROUNDS];
  const auto stage_loads = [&](int i0) {
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
      const int i = i0 + r * CFG.threads();
      const Chunk c = chunk_at(i);
      v[r] = make_uint4(0, 0, 0, 0);
      if (i < staged && c.m < M && c.k < K)
        v[r] = __ldg(reinterpret_cast<const uint4*>(A + static_cast<long long>(c.m) * K + c.k));
    }
  };
  // CFG.stage_async: the weights hold their codes in nibble-pair order (gemv_pair_code), so a chunk is stored as it
  // is loaded: every chunk of the thread goes by cp.async straight to its place (zero-filled past M and K), all in
  // flight at once, with no registers held and no pass over shared memory (the first round's place as act_first's).
  // Through the L1 (.ca) as the register loads' __ldg: the CTAs of an SM that share a k split copy the same chunks.
  // At two n tiles (M 9-16) on the split schedule, where a step's chunks are the threads' count: thread x's chunks
  // x + r threads() are all of one row m and one k offset kq, a step apart each (a split's steps lie inside K's: no
  // wrap), so the first one's places are stepped on instead of each one's recomputed from its index (at int4 M 16 of
  // 28672 x 8192 the per-chunk divisions and the plan's layout were 84 SASS a chunk, 15% of the kernel's instructions;
  // stepped, int4 M 9-16 there 1.01-1.05x on an H100, but M 8 (one n tile, its copies before the weights) 0.98-1.00x:
  // docs/perf.md, gemv18).
  const auto copy_chunks = [&] {
    if (NT == 2 && !CFG.stream && CFG.threads() % chunks_per_step == 0) {
      const Chunk c = chunk_at(threadIdx.x);
      const int ds = CFG.threads() / chunks_per_step;
      unsigned to = act + c.s * P.step_bytes + 2u * P.smem_act(c.m, c.kq);
      const unsigned short* from = A + static_cast<long long>(c.m) * K + c.k;
      int k = c.k;
      for (int s = c.s; s < slots; s += ds) {
        const bool in = c.m < M && k < K;
        cp_async_16_ca(to, in ? from : A, in ? 16 : 0);
        to += ds * P.step_bytes;
        from += ds * kGemvStepK;
        k += ds * kGemvStepK;
      }
    } else {
      for (int i = threadIdx.x; i < staged; i += CFG.threads()) {
        const Chunk c = chunk_at(i);
        const bool in = c.m < M && c.k < K;
        cp_async_16_ca(act + c.s * P.step_bytes + 2u * P.smem_act(c.m, c.kq),
                       A + (in ? static_cast<long long>(c.m) * K + c.k : 0), in ? 16 : 0);
      }
    }
    cp_async_commit();
  };
  // group_sum: the step's sum of row m (chunk c holding 8 of its k, in any order): the 16 lanes of the warp with its
  // bit 2 hold its 16 chunks, added in a fixed tree (deterministic), stored as -bias x the sum after the step's
  // activations. Called by whole warps.
  const auto put_sum = [&](const unsigned (&in)[4], const Chunk& c) {
    float sum = 0.f;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 f = unpack2<true>(in[e]);
      sum += f.x + f.y;
    }
#pragma unroll
    for (int x = 1; x < 32; x *= 2)
      if (x != 4) sum += __shfl_xor_sync(0xffffffffu, sum, x);
    if (c.kq == 0) st_shared_f32(act + c.s * P.step_bytes + P.sums + 4u * c.m, -static_cast<float>(kGemvInt4Bias) * sum);
  };
  static_assert(!CFG.stage_async || CFG.permuted, "stage_async: the kernel's permuted weights");
  // scale_smem: row r of the CTA's tile w (up to scale_smem) as the 16-byte chunks that hold its slots' scales, by
  // cp.async (inside the row: its scales are whole chunks), issued after the first weights and the activations'
  // copies. Rows past N read row N - 1's (never stored).
  const auto stage_scales = [&] {
    if constexpr (SCALE_SMEM) {
      // Thread x: row x % rows of each tile, its chunks x / rows, + PH, ...
      constexpr int PH = CFG.threads() / CFG.rows();
      static_assert(CFG.threads() % CFG.rows() == 0, "scale_smem: whole rows a thread");
      const int chunks = static_cast<int>((sofs + slots * ES + 15) / 16), r = threadIdx.x % CFG.rows();
      const unsigned char* base = static_cast<const unsigned char*>(scales) + (step0 * ES - sofs);
#pragma unroll
      for (int w = 0; w < CFG.scale_smem; ++w) {
        if (w >= tiles_mine) break;
        const long long n = min(static_cast<long long>(tile0 + w * static_cast<int>(gridDim.x)) * CFG.rows() + r,
                                static_cast<long long>(N) - 1);
#pragma unroll 1
        for (int c = threadIdx.x / CFG.rows(); c < chunks; c += PH)
          cp_async_16_ca(scl + (w * CFG.rows() + r) * srow + 16u * c, base + n * k_groups * ES + 16 * c, 16);
      }
      cp_async_commit();
    }
  };
  if constexpr (CFG.stage_tma) {
    // One thread: a barrier a step, then each step's box (k 128 (step0 + s) .., 32 k x 4 quarters x 8 n_tiles rows of
    // the [M, K / 32, 32] view of A), before the weights' first loads; the others wait on their step's barrier.
    // act_multicast: every CTA of the cluster arms its barriers, a cluster barrier, then rank r copies its steps
    // into all of them.
    constexpr int MC = CFG.act_multicast;
    if (threadIdx.x == 0) {
      for (int s = 0; s < slots; ++s) mbar_init(bars + 8u * s, 1);
      fence_mbarrier_init();
      for (int s = 0; s < slots; ++s) {
        mbar_expect_tx(bars + 8u * s, P.step_bytes);
        if constexpr (MC == 1) tma_load(act + s * P.step_bytes, &act_map, bars + 8u * s, 0, 4 * (step0 + s), 0);
      }
    }
    if constexpr (MC > 1) {
      cluster_sync();
      if (threadIdx.x == 0)
        for (int s = static_cast<int>(cluster_ctarank()); s < slots; s += MC)
          tma_load_multicast(act + s * P.step_bytes, &act_map, bars + 8u * s, static_cast<unsigned short>((1u << MC) - 1),
                             0, 4 * (step0 + s), 0);
    }
    load_ring();
    stage_scales();
  } else if constexpr (CFG.stage_async) {
    if constexpr (CFG.act_first) copy_chunks();
    load_ring();
    if constexpr (!CFG.act_first) copy_chunks();
    stage_scales();
    cp_async_wait<0>();
    // group_sum: each thread's own copied chunks (visible to it once its copies are waited for) read back for the
    // sums.
    if constexpr (GROUP_SUM) {
      for (int i = threadIdx.x; i < staged; i += CFG.threads()) {
        const Chunk c = chunk_at(i);
        const uint4 x = ld_shared_v4_b32(act + c.s * P.step_bytes + 2u * P.smem_act(c.m, c.kq));
        const unsigned in[4] = {x.x, x.y, x.z, x.w};
        put_sum(in, c);
      }
    }
  } else {
    if constexpr (CFG.act_first) stage_loads(threadIdx.x);
    load_ring();
    stage_scales();
    for (int i0 = threadIdx.x; i0 < staged; i0 += ROUNDS * CFG.threads()) {
      if (!CFG.act_first || i0 != static_cast<int>(threadIdx.x)) stage_loads(i0);
#pragma unroll
      for (int r = 0; r < ROUNDS; ++r) {
        const int i = i0 + r * CFG.threads();
        if (i >= staged) break;  // whole warps (staged and the threads multiples of 32)
        const Chunk c = chunk_at(i);
        const unsigned in[4] = {v[r].x, v[r].y, v[r].z, v[r].w};
        unsigned o[4];
        gemv_pair_order(in, o);
        st_shared_v4_b32(act + c.s * P.step_bytes + 2u * P.smem_act(c.m, c.kq), o[0], o[1], o[2], o[3]);
        if constexpr (GROUP_SUM) put_sum(in, c);
      }
    }
  }
  // The lane's 16-byte pieces of a step (k 32t + 8q .. of row 8 nt + g): its base plus ACT_AT[4 nt + q] (the plan's
  // layout is plain: an offset is the sum of its modes').
  static constexpr auto ACT_AT = tabulate<4 * NT>([](int i) { return 2 * P.smem_act(8 * (i / 4), 8 * (i % 4)); });
  const unsigned act_lane = act + 2u * P.smem_act(g, kGemvLaneCodes * t);
  // stage_tma: piece q at the lane's base xor PIECE_X[q], n tile nt TILE_AT[nt] on (the swizzle's terms).
  static constexpr auto PIECE_X = tabulate<4>([](int q) { return 2 * P.smem_act(0, 8 * q); });
  static constexpr auto TILE_AT = tabulate<NT>([](int nt) { return 2 * P.smem_act(8 * nt, 0); });
  if constexpr (SCALE_SMEM) cp_async_wait<0>();  // (the scales' copies)
  __syncthreads();  // (stage_tma: the barriers' init seen by every thread)
  TL_PROBE_END(Probe::gemv_stage, probe::kNoStage, blockIdx.y);
  TL_PROBE_BEGIN(Probe::gemv_first, probe::kNoStage, blockIdx.y);

  float acc[RB][NT][4];
  const auto zero_acc = [&] {
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int v = 0; v < 4; ++v) acc[rb][nt][v] = 0.f;
  };
  zero_acc();

  unsigned magic = kGemvInt4Magic;
  if constexpr (CFG.int4_lop3 || GROUP_SUM) asm volatile("mov.b32 %0, %0;" : "+r"(magic));  // kept in a register
  // fp4 with bf16 scales, CFG.fp4_fold: dequant4's wgmma-path conversion, value * 2^-126 by a mask, a multiply and a
  // mask (fp4_bits: the pair's nibbles at bits 4..7 and 20..23), the 2^126 folded into the scale (times 2^94, once a
  // step) and the last 2^32 into the stored sums: one rounding of the same product, exact for |scale| in
  // [2^-93, 2^34) (dequant4.hpp).
  constexpr bool FOLD = CFG.fp4_fold && CFG.wtype == dequant4::kFp4 && !CFG.scale_f32 && !STEP_SCALE;
  // (scale_smem: `wt` = the CTA's tile index, whose scales at `slot` are read.)
  auto compute = [&](const Step& st, int slot, int wt) {
    const unsigned step_base = slot * P.step_bytes;
    if constexpr (CFG.stage_tma) mbar_wait(bars + 8u * slot, 0);  // the step's activations have landed
    // step_scale: the step's sums, part[rb][nt][v] (as acc), started at zero or (group_sum) at -bias x the activation
    // sums of its columns.
    float part[RB][NT][4];
    float bias[NT][2];
    if constexpr (GROUP_SUM) {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const unsigned long long b = ld_shared_b64(act + step_base + P.sums + 4u * (8 * nt + 2 * t));
        bias[nt][0] = __uint_as_float(static_cast<unsigned>(b));
        bias[nt][1] = __uint_as_float(static_cast<unsigned>(b >> 32));
      }
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int v = 0; v < 4; ++v) part[rb][nt][v] = bias[nt][FC[v].col];
    } else if constexpr (STEP_SCALE) {
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int v = 0; v < 4; ++v) part[rb][nt][v] = 0.f;
    }
    unsigned folded[RB][2];
    if constexpr (FOLD) {
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int h = 0; h < 2; ++h) folded[rb][h] = dequant4::fp4_fold_scale(st.s2[rb][h]);
    }
    // Piece q of the activations serves mmas 2q and 2q + 1 (codes 8q .. 8q + 7 of the lane's 32).
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint4 b[NT];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
        b[nt] = ld_shared_v4_b32(CFG.stage_tma ? ((act_lane + step_base) ^ PIECE_X[q]) + TILE_AT[nt]
                                               : act_lane + step_base + ACT_AT[4 * nt + q]);
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        const int j = 2 * q + jj;
        // B register i holds values 2i, 2i + 1: codes gemv_code(j, row) of the lane's 32 (t = 0: lane 0's), at
        // elements gemv_slot of them: one aligned word of piece q.
        unsigned bj[NT][2];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int i = 0; i < 2; ++i)
            bj[nt][i] = word(b[nt], (gemv_slot(gemv_code(j, FB[2 * i].row, CFG.stage_async), CFG.stage_async) % 8) / 2);
#pragma unroll
        for (int rb = 0; rb < RB; ++rb) {
          unsigned a[4];
          // A register i holds values 2i, 2i + 1: row g + FA[2i].row (h), pair 2j + FA[2i].col / 8 of the lane's 16:
          // word pair / 4 shifted right by 4 (pair % 4).
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int h = FA[2 * i].row / 8, pair = 2 * j + FA[2 * i].col / 8;
            const unsigned w = word(st.w[rb][h], pair / 4);
            if constexpr (GROUP_SUM) {
              a[i] = gemv_detail::int4_biased(w >> (4 * (pair % 4)), magic);  // bias and scale come per step
              continue;
            }
            unsigned v;
            if constexpr (FOLD)
              v = dequant4::fp4_bits(pair % 4 == 0 ? w << 4 : w >> (4 * (pair % 4) - 4));
            else if constexpr (CFG.int4_lop3 && CFG.wtype == dequant4::kInt4)
              v = dequant4::sub_bf16x2(gemv_detail::int4_biased(w >> (4 * (pair % 4)), magic), magic);
            else
              v = dequant4::codes_to_bf16x2<CFG.wtype>(w >> (4 * (pair % 4)));
            if constexpr (STEP_SCALE) {
              a[i] = v;  // the scale comes per step
            } else if constexpr (CFG.scale_f32) {
              const float2 f = unpack2<true>(v);
              a[i] = pack2<true>(f.x * st.sf[rb][h], f.y * st.sf[rb][h]);
            } else {
              a[i] = dequant4::mul_bf16x2(v, FOLD ? folded[rb][h] : st.s2[rb][h]);
            }
          }
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) mma_16816<true>(STEP_SCALE ? part[rb][nt] : acc[rb][nt], a, bj[nt]);
        }
      }
    }
    if constexpr (STEP_SCALE) {
      // acc += scale x (sum over the step of code x activation; with group_sum (bias + code) x activation - bias x
      // sum of the activations).
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) {
        float sc[2];
#pragma unroll
        for (int h = 0; h < 2; ++h)
          if constexpr (SCALE_SMEM) {
            const unsigned at = scl + (wt * CFG.rows() + lane_row + 16 * rb + 8 * h) * srow + sofs + ES * slot;
            sc[h] = CFG.scale_f32 ? ld_shared_f32(at)
                                  : __uint_as_float(static_cast<unsigned>(ld_shared_b16(at)) << 16);
          } else {
            sc[h] = st.sf[rb][h];
          }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int v = 0; v < 4; ++v) acc[rb][nt][v] = fmaf(sc[FC[v].row / 8], part[rb][nt][v], acc[rb][nt][v]);
      }
    }
  };
  // acc[rb][nt][v] is C^T (weight row, activation row) = (row0 + 16 rb + FC[v].row, 8 nt + 2t + FC[v].col): f(sum,
  // its offset in C, its element index e = 4 (rb NT + nt) + v) for those inside C.
  auto each = [&](int tile, auto&& f) {
    const int row0 = tile * CFG.rows() + lane_row;
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int v = 0; v < 4; ++v) {
          const int n = row0 + 16 * rb + FC[v].row, m = 8 * nt + 2 * t + FC[v].col;
          if (n < N && m < M) f(acc[rb][nt][v], static_cast<long long>(m) * N + n, (rb * NT + nt) * 4 + v);
        }
  };
  auto store = [&](float x, long long at, int = 0) {
    if constexpr (FOLD) x *= static_cast<float>(1ull << dequant4::kFp4ScaleShift);
    C[at] = static_cast<unsigned short>(pack2<true>(x, 0.f));
  };
  // Row tile `tile`'s sums, part `part` of `parts` (the CTAs that hold its steps, in k order): a whole tile goes to C,
  // a part to its f32 partials (partials[part][m][n]) with no wait, so a stream CTA goes on with its next tile.
  auto put = [&](int tile, int part, int parts) {
    if (parts == 1)
      each(tile, store);
    else
      each(tile, [&](float x, long long at, int) { partials[part * static_cast<long long>(M) * N + at] = x; });
  };
  // The last part of row tile `tile` to arrive: its `parts` partials added in part order (deterministic), C written
  // (combine's and sums_once's).
  auto add_parts = [&](int tile, int parts) {
    const long long plane = static_cast<long long>(M) * N;
    each(tile, [&](float, long long at, int) {
      float sum = 0.f;
#pragma unroll 8
      for (int y = 0; y < parts; ++y) sum += __ldcg(partials + y * plane + at);  // (unrolled: the loads together)
      store(sum, at);
    });
  };
  // At the CTA's end (not mid-stream, where a fence would wait for the next tile's loads in flight), a shared tile's
  // arrival is counted; the last of its parts to arrive adds them in part order (deterministic) and writes C. (Thread
  // 0's acq_rel atomic after the barrier instead of every thread's fence measured 2-4% slower at 28672 x 8192 and
  // 8192 x 28672, M <= 8, on the H100: docs/perf.md.)
  auto combine = [&](int tile, int parts) {
    __threadfence();  // this thread's partials visible before the CTA's arrival is counted
    __syncthreads();  // (and the previous tile's flag read)
    if (threadIdx.x == 0) last_split = atomicAdd(counters + tile, 1) == parts - 1;
    __syncthreads();
    if (!last_split) return;
    __threadfence();
    add_parts(tile, parts);
    if (threadIdx.x == 0) counters[tile] = 0;  // ready for the next launch
  };
  // stream: the CTA holding chunk u (the last c whose first chunk, c chunks / gridDim.x rounded down, is <= u), and
  // row tile x's first and last CTA.
  auto cta_of = [&](long long u) { return static_cast<int>(((u + 1) * gridDim.x - 1) / chunks); };
  auto first_cta = [&](int x) { return cta_of(static_cast<long long>(x) * kc); };
  auto last_cta = [&](int x) { return cta_of(static_cast<long long>(x) * kc + kc - 1); };
  // stream: a row tile ends inside the CTA's slots (its sums go out while the next tile's loads are in flight).
  int tile = tile0, step = step0;
  auto tile_end = [&](int j) {
    if constexpr (CFG.stream) {
      if (++step == tile_steps || j + 1 == slots) {
        put(tile, static_cast<int>(blockIdx.x) - first_cta(tile), last_cta(tile) - first_cta(tile) + 1);
        zero_acc();
        ++tile;
        step = 0;
      }
    }
  };
  // tile_loop: the slot of the step computed next; a tile's sums go out (C or its partials, no wait) as its last
  // slot is done, while the next tile's first loads are in flight.
  int slot = 0, wt = 0;
  if constexpr (U > 0) {
    // unroll: a row tile's U steps unrolled (step s in ring[s % D]); the loads `prefetch` steps (batch: a round) ahead,
    // past the tile's last step the next tile's first ones (its pointers set just before them), none after the last.
#pragma unroll 1
    for (int w = 0; w < tiles_mine; ++w) {
      const bool more = CFG.tile_loop && w + 1 < tiles_mine;
      // RU steps a loop iteration (RU a multiple of D dividing U; RU == U: one iteration, the whole tile's steps
      // unrolled), step s0 + i in ring[i % D]; every iteration but the last loads only steps of its tile (D <= RU),
      // at s0 + an immediate; the last one is peeled, its loads past the tile the next tile's first steps at
      // immediates off the pointers aim sets.
      const auto iteration = [&](int s0, auto last) {
#pragma unroll
        for (int i = 0; i < RU; ++i) {
          compute(ring[i % D], s0 + i, w);
          if (s0 + i == 0 && w == 0) {
            TL_PROBE_END(Probe::gemv_first, probe::kNoStage, blockIdx.y);
            TL_PROBE_BEGIN(Probe::gemv_stream, probe::kNoStage, blockIdx.y);
          }
          const int first = CFG.batch ? (i % D == D - 1 ? i + 1 : -1) : i + D;  // (of the iteration's steps)
          if (first < 0) continue;
          if (decltype(last)::value && first == RU && more) aim(tile + static_cast<int>(gridDim.x));
#pragma unroll
          for (int e = 0; e < (CFG.batch ? D : 1); ++e) {
            const int r = first + e;
            if (!decltype(last)::value || r < RU)
              ld_step(ring[r % D], s0 + r);
            else if (more)
              ld_step(ring[r % D], r - RU);
          }
        }
      };
#pragma unroll 1
      for (int s0 = 0; s0 < U - RU; s0 += RU) iteration(s0, gemv_detail::Flag<false>{});
      iteration(U - RU, gemv_detail::Flag<true>{});
      if constexpr (CFG.tile_loop) {
        put(tile, blockIdx.y, gridDim.y);
        zero_acc();
        tile += gridDim.x;
      }
    }
  }
#pragma unroll 1
  for (int j = 0; j < (U > 0 ? 0 : total); j += D) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      if (j + d < total) {
        compute(ring[d], CFG.tile_loop ? slot : j + d, wt);
        if constexpr (CFG.tile_loop) {
          if (++slot == slots) {
            put(tile, blockIdx.y, gridDim.y);
            zero_acc();
            slot = 0;
            tile += gridDim.x;
            ++wt;
          }
        }
        if (j + d == 0) {
          TL_PROBE_END(Probe::gemv_first, probe::kNoStage, blockIdx.y);
          TL_PROBE_BEGIN(Probe::gemv_stream, probe::kNoStage, blockIdx.y);
        }
        if constexpr (!CFG.batch) load(ring[d], next);
        if constexpr (CFG.stream) {
          if constexpr (CFG.batch) {
            if (d == D - 1) {
#pragma unroll
              for (int e = 0; e < D; ++e) load(ring[e], next);
            }
          }
          tile_end(j + d);
        }
      }
    }
    if constexpr (CFG.batch && !CFG.stream) {
#pragma unroll
      for (int d = 0; d < D; ++d) load(ring[d], next);
    }
  }
  TL_PROBE_END(Probe::gemv_stream, probe::kNoStage, blockIdx.y);
  if constexpr (CFG.act_multicast > 1) cluster_arrive_relaxed();  // every step of this CTA has landed
  TL_PROBE_BEGIN(Probe::gemv_sums, probe::kNoStage, blockIdx.y);
  if constexpr (CFG.stream) {
    for (int x = tile0; x < tile; ++x)
      if (first_cta(x) != last_cta(x)) combine(x, last_cta(x) - first_cta(x) + 1);
  } else if constexpr (CFG.tile_loop && CFG.sums_once) {
    if (gridDim.y > 1) {
      // Every tile's arrival at once (warp w's lane 0 counts tile tile0 + w gridDim.x; tiles_mine <= warps, the
      // spec's tile_rounds), then the tiles this CTA finished last, their partial loads together.
      __shared__ unsigned last_tiles;
      if (threadIdx.x == 0) last_tiles = 0;
      __threadfence();  // this thread's partials visible before the CTA's arrivals are counted
      __syncthreads();
      if (lane == 0 && warp < tiles_mine) {
        const int x = tile0 + warp * static_cast<int>(gridDim.x);
        if (atomicAdd(counters + x, 1) == static_cast<int>(gridDim.y) - 1) {
          atomicOr(&last_tiles, 1u << warp);
          counters[x] = 0;  // every part has arrived: ready for the next launch
        }
      }
      __syncthreads();
      const unsigned mine = last_tiles;
      if (mine != 0) {
        __threadfence();
        for (int w = 0; w < tiles_mine; ++w)
          if (mine >> w & 1u) add_parts(tile0 + w * static_cast<int>(gridDim.x), static_cast<int>(gridDim.y));
      }
    }
  } else if constexpr (CFG.tile_loop) {
    if (gridDim.y > 1)
      for (int x = tile0; x < row_tiles; x += gridDim.x) combine(x, gridDim.y);
  } else if (CFG.cluster_reduce && gridDim.y > 1 && gemv_detail::cluster_ctas() == gridDim.y) {
    // The row tile's gridDim.y split CTAs are one cluster (rank = blockIdx.y): each writes its sums into its own
    // shared memory, and thread x of rank r adds element e of thread x of every rank, in rank order (deterministic),
    // for the e with e % gridDim.y == r, and writes C.
    constexpr int E = RB * NT * 4;
    __syncthreads();  // every warp done with the activations, whose space the sums take
    const unsigned red = act + 4u * threadIdx.x;
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int v = 0; v < 4; ++v) st_shared_f32(red + 4u * CFG.threads() * ((rb * NT + nt) * 4 + v), acc[rb][nt][v]);
    static_assert(P.red_bytes == 4 * E * CFG.threads(), "the plan's room for the sums");
    cluster_sync();
    const unsigned parts = gridDim.y, rank = blockIdx.y;
    each(blockIdx.x, [&](float, long long at, int e) {
      if (e % parts != rank) return;
      const unsigned mine = red + 4u * CFG.threads() * e;
      float x[kGemvMaxCluster];
#pragma unroll
      for (unsigned y = 0; y < kGemvMaxCluster; ++y)
        x[y] = y < parts ? gemv_detail::ld_cluster_f32(map_shared_rank(mine, y)) : 0.f;  // (the loads together)
      float sum = 0.f;
#pragma unroll
      for (unsigned y = 0; y < kGemvMaxCluster; ++y)
        if (y < parts) sum += x[y];
      store(sum, at);
    });
    cluster_sync();  // the peers done reading this CTA's sums
  } else {
    put(blockIdx.x, blockIdx.y, gridDim.y);
    if (gridDim.y > 1) combine(blockIdx.x, gridDim.y);
  }
  TL_PROBE_END(Probe::gemv_sums, probe::kNoStage, blockIdx.y);
  if constexpr (CFG.act_multicast > 1) cluster_wait();  // no peer's copies into this CTA still in flight
  TL_PROBE_FLUSH();
  if (threadIdx.x == 0) TL_PROBE_BLOCK_END();
}

}  // namespace tl
