// gemm.dequant's decode path (path=gemv), host and device: its typed config, the activations' shared-memory layout,
// the mma.sync fragments, and the k permutation that lets each lane feed its own 16 bytes of weights to the tensor
// cores.
#pragma once

#include "tile/atoms.hpp"
#include "tile/config.hpp"
#include "tile/config_name.hpp"
#include "tile/dequant4.hpp"
#include "tile/fragment.hpp"
#include "tile/layout.hpp"
#include "tile/swizzle.hpp"

#if !TL_DEVICE_CODE
#include <string>
#endif

namespace tl {

// The kernel's one template parameter. A warp owns warp_rows weight rows (16-row blocks, mma.sync's M) over the
// CTA's k range; the activations' M <= 16 rows are mma.sync's N (n_tiles blocks of 8).
struct GemmDequantGemvConfig {
  int warps = 8;        // warps per CTA
  int warp_rows = 16;   // weight rows per warp: 16 or 32 (each activation fragment read from shared memory serves all)
  int n_tiles = 2;      // activation rows / 8, rounded up: 1 for M <= 8, 2 for M <= 16
  int prefetch = 2;     // k steps of weights a lane has loaded ahead (registers)
  int min_blocks = 4;   // CTAs per SM the registers are capped for (__launch_bounds__)
  bool l2_prefetch = false;  // weight loads ask the L2 for the 256 bytes around them
  // Each lane issues its `prefetch` steps' loads together once it has used them all (a row's prefetch x 64
  // contiguous bytes requested at once), instead of one step's loads after each step.
  bool batch = false;
  // Schedule: false = a split grid (row tiles x splits over K); true = a persistent grid dealing the whole problem's
  // (row tile, k chunk) pairs evenly over at most one wave of CTAs (the kernel's header).
  bool stream = false;
  bool int4_lop3 = false;  // int4: a pair's mask and bias in one LOP3 (the bias in a register)
  bool fp4_fold = false;   // fp4 with bf16 scales: the wgmma path's conversion, 2^126 folded into the scales
  // int4 with a group of whole steps: codes converted with their bias left in, each step's mma.sync sums started at
  // -bias x the step's activation sums and scaled once per group (the kernel's header).
  bool group_sum = false;
  // A group of whole steps (group % 128 == 0): the codes converted without the scale, each step's mma.sync sums
  // (started at zero) scaled once per step and added to the accumulators by an FFMA (group_sum implies it).
  bool step_scale = false;
  // step_scale on the split schedule: 0 = each step's scales loaded with its weights, `prefetch` steps ahead; T > 0 =
  // the CTA's scales (as they are, its steps of up to T row tiles) copied into shared memory with the activations,
  // each read just before the step's closing FFMAs (the spec's scale_copy=smem, T its tile_rounds).
  int scale_smem = 0;
  // split schedule: a row tile's split CTAs are one thread-block cluster (splits <= kGemvMaxCluster) whose partial
  // sums are added through distributed shared memory, not global memory (the kernel's header).
  bool cluster_reduce = false;
  int stage_rounds = 2;  // rounds of activation chunks each thread has in flight while staging
  bool act_first = false;  // the first staging round's loads issued before the first weights' (else after)
  bool permuted = false;   // the weights in the permuted layout (gemv_permuted_at), not row-major [N, K/2]
  // The weights' codes in nibble-pair order (each 4-byte word's consecutive codes 2p, 2p + 1 at nibbles p and p + 4:
  // gemv_nibble_code), so the activations are staged as they are, by cp.async (needs `permuted`: the kernel's own
  // copy of W).
  bool stage_async = false;
  // With stage_async's weights: each step's activations (8 n_tiles rows x 128 k) copied by one TMA box (rows past M
  // and k past K zero-filled) into the 64-byte-swizzled row-major step tile (smem_act below), one mbarrier a step,
  // issued by one thread before the first weights; a step's first mma waits on its own barrier (not on the CTA's
  // whole staging), and no thread issues the CTA's other copies (the spec's stage_copy=tma).
  bool stage_tma = false;
  // stage_tma: the row tiles' CTAs of one k split in clusters of act_multicast along x (1: none); the CTA of rank r
  // copies the steps s with s % act_multicast == r into every CTA of its cluster (TMA multicast): each step's
  // activations leave the L2 once a cluster.
  int act_multicast = 1;
  // split schedule: a CTA takes row tiles blockIdx.x, blockIdx.x + gridDim.x, ... over its k split, its activations
  // staged once for all of them (the spec's tile_rounds > 1: a grid of ceil(row tiles / tile_rounds) columns).
  bool tile_loop = false;
  // tile_loop: at the CTA's end its row tiles' arrivals are counted together (one fence and barrier, warp w's lane 0
  // counting tile w), and the tiles it finishes last are added together (else one tile after another).
  bool sums_once = false;
  // split schedule (the spec's step_loop=unrolled): 0 = the main loop indexes its steps at run time; S > 0 = every
  // CTA's k split is S steps (split_steps == S, K a multiple of 128, S a multiple of prefetch), known here, so the loop
  // over a row tile's steps is unrolled: each step's shared-memory addresses (activations, barrier, scales) and its
  // weight and scale loads' offsets are immediates off one base a tile, no step counter, slot or bound is kept, and
  // the next tile's pointers are set once, before its first loads.
  int unroll = 0;
  // unroll > 0 (the spec's step_unroll): the unrolled loop over a tile's steps rolled into a loop of unroll_by steps
  // an iteration (a multiple of prefetch dividing unroll; 0 = all of them unrolled): the same immediate offsets within
  // an iteration and no per-step bounds, but a loop body of unroll_by steps' code instead of the whole split's.
  int unroll_by = 0;
  int wtype = dequant4::kInt4;
  int group = 128;
  bool scale_f32 = false;

  TL_HOST_DEVICE constexpr int threads() const { return 32 * warps; }
  TL_HOST_DEVICE constexpr int row_blocks() const { return warp_rows / 16; }
  TL_HOST_DEVICE constexpr int rows() const { return warps * warp_rows; }  // weight rows per CTA
};

// k per step: the four lanes of a quad each load 16 bytes (32 codes) of the same weight row, consecutively; a row's
// step is 64 bytes.
enum : int { kGemvStepK = 128, kGemvLaneCodes = 32, kGemvRowStepBytes = kGemvStepK / 2 };
// weight_layout=permuted: W stored as the row-major [N, K/2] matrix cut into tiles of 16 rows (a warp's row block)
// by one step's 64 bytes, the tiles in row-major order (a 16-row block's steps one after another), each tile's rows
// one after another, padded to whole tiles. Lane (g, t)'s piece of rows g and g + 8 at a step is then bytes 64 g + 16 t
// and 512 + 64 g + 16 t of the step's 1 KiB tile, so each of a warp's loads is one contiguous 512-byte run (four whole
// 128-byte lines) and a warp's steps one contiguous stream, where the row-major layout spreads a load over 8 rows'
// 64-byte pieces (tests/perf/gemv_loads.cu: ~10% slower reads). Byte b of row n is at gemv_permuted_at(n, b, k_steps).
enum : int { kGemvTileRows = 16, kGemvTileBytes = kGemvTileRows * kGemvRowStepBytes };
TL_HOST_DEVICE constexpr long long gemv_permuted_at(long long n, long long b, int k_steps) {
  return (n / kGemvTileRows * k_steps + b / kGemvRowStepBytes) * kGemvTileBytes + n % kGemvTileRows * kGemvRowStepBytes +
         b % kGemvRowStepBytes;
}

// stage_copy=async's weights (the spec's W_pairs): the permuted layout with each 4-byte word's 8 codes (two a byte,
// low nibble first) in nibble-pair order, nibble n of a word holding its code gemv_nibble_code(n) = 2 (n % 4) + n / 4,
// so the word shifted right by 4p has consecutive codes 2p and 2p + 1 at nibbles 0 and 4 (a bf16 pair's halves).
// Code k of weight row n is nibble gemv_pairs_nibble_at(n, k, k_steps) of the buffer (low nibble of a byte first).
TL_HOST_DEVICE constexpr int gemv_nibble_code(int nibble) { return 2 * (nibble % 4) + nibble / 4; }
TL_HOST_DEVICE constexpr long long gemv_pairs_nibble_at(long long n, long long k, int k_steps) {
  const long long at = gemv_permuted_at(n, k / 2, k_steps);  // the byte holding the code in the permuted layout
  const int c = static_cast<int>(at % 4 * 2 + k % 2);          // the code's place among its word's 8
  return 2 * (at - at % 4) + c / 2 + 4 * (c % 2);              // the nibble gemv_nibble_code maps to c
}

// The most split CTAs cluster_reduce puts in one cluster (Hopper's non-portable cluster size; more splits add their
// partial sums through global memory).
enum : int { kGemvMaxCluster = 16 };

// int4 codes as bf16 with their bias: (pair & 0x000F000F) ^ kGemvInt4Magic is bf16(kGemvInt4Bias + code) in both
// halves (128 + the nibble with its sign bit flipped, i.e. code + 8; 128..143 are exact in bf16's 8 bits), so one
// LOP3 converts a pair and the bias comes off either by a subtraction (dequant4) or, with group_sum, once per step.
enum : unsigned { kGemvInt4Magic = 0x43084308u };
enum : int { kGemvInt4Bias = 136 };
TL_HOST_DEVICE constexpr unsigned gemv_int4_biased(unsigned pair) { return (pair & 0x000F000Fu) ^ kGemvInt4Magic; }

// The k permutation. A dot product does not care in which order k is summed, so the weights and the activations only
// have to agree on it. A lane converts each 4-byte word of its 16 loaded bytes (codes 8w .. 8w+7, nibble n = code
// 8w + n) as four bf16 pairs without any byte permute: shifted right by 4p, the word's nibbles p and p + 4 sit where
// dequant4::codes_to_bf16x2 takes a pair's low and high code. So pair P (0..15) of the lane's 32 codes is codes
// gemv_pair_code(P, 0) and gemv_pair_code(P, 1); mma j takes pairs 2j (logical columns 2t, 2t+1 of mma.sync's A and
// B fragments) and 2j + 1 (columns 2t+8, 2t+9), so logical column `col` of mma j is code gemv_code(j, col) of the
// step's 128 (lane t = (col % 8) / 2 loads codes 32t ..). The activations are staged in the same pair order (code c of
// a lane's 32 at element gemv_slot(c)), so a B register is one aligned 32-bit read. (tests/kernels checks both
// fragments against the PTX ISA's atoms.) With `nibble_pairs` (the config's stage_async) the weights' codes are stored
// in nibble-pair order instead (nibble n of a word holds its code gemv_nibble_code(n), above): pair P is then the
// consecutive codes 8 (P / 4) + 2 (P % 4) + e, and the activations need no reordering (gemv_slot(c) = c).
TL_HOST_DEVICE constexpr int gemv_pair_code(int pair, int e, bool nibble_pairs = false) {
  return nibble_pairs ? 8 * (pair / 4) + 2 * (pair % 4) + e : 8 * (pair / 4) + pair % 4 + 4 * e;
}
TL_HOST_DEVICE constexpr int gemv_code(int j, int col, bool nibble_pairs = false) {
  return kGemvLaneCodes * ((col % 8) / 2) + gemv_pair_code(2 * j + col / 8, col % 2, nibble_pairs);
}
TL_HOST_DEVICE constexpr int gemv_slot(int code, bool nibble_pairs = false) {
  return nibble_pairs ? code : 8 * (code / 8) + 2 * (code % 4) + (code % 8) / 4;
}
// Eight consecutive codes' activations (a 16-byte chunk, k0 .. k7 in words {k0,k1} {k2,k3} {k4,k5} {k6,k7}) in pair
// order: word p = {k_p, k_p+4}, i.e. element gemv_slot(c) holds code c.
TL_HOST_DEVICE inline void gemv_pair_order(const unsigned (&in)[4], unsigned (&out)[4]) {
  for (int p = 0; p < 4; ++p) out[p] = dequant4::byte_perm(in[p / 2], in[p / 2 + 2], p % 2 ? 0x7632u : 0x5410u);
}

// Timeline regions of the kernel's TL_PROBE marks (per warp): from its start to the staged activations' barrier, to
// its first step done (the first weights' wait), the other steps, and the split's sums (partials or cluster). The
// spec's `probes` are the wgmma path's names (gemm_dequant_plan.hpp) and then these, so their ids follow kLastWgmma.
#define TL_GEMM_DEQUANT_GEMV_PROBES(X) X(gemv_stage) X(gemv_first) X(gemv_stream) X(gemv_sums)
struct GemmDequantGemvProbe {
#define TL_GEMM_DEQUANT_GEMV_PROBE_ID(name) name,
  enum : unsigned { kLastWgmma = 4, TL_GEMM_DEQUANT_GEMV_PROBES(TL_GEMM_DEQUANT_GEMV_PROBE_ID) };
#undef TL_GEMM_DEQUANT_GEMV_PROBE_ID
};

struct GemmDequantGemvPlan {
  // One step's activations (8 n_tiles rows x 128 k, bf16) in shared memory, (m, k) -> element offset. Lane (group g,
  // t) of n-tile nt multiplies k 32t .. 32t+31 of row 8 nt + g, four 16-byte pieces q (k 32t + 8q ..): piece q of
  // every row and lane lies in the step's q-th quarter ((e, q, t) -> e + 64 q + 8 t; rows m % 2 at 32, m / 2 at 256,
  // n tiles at 1024), so a lane's four reads are one base address plus immediates (a plain layout: the offset of
  // (m, k) is the sum of its modes'), and a quarter warp's reads (rows 2i, 2i + 1, t 0..3) cover the 8 16-byte bank
  // groups of 128 bytes once (no conflict).
  // With stage_tma: the step's [8 n_tiles, 128] tile row-major, 64-byte swizzled as TMA writes a box of 32 k x 4
  // quarters x the rows (row m, quarter k / 32 at 64-byte row 4m + k / 32: offset 128 m + k before the swizzle); a
  // lane's piece q is then its base xor 16 q bytes, and its n tile nt 2 KiB on (no conflict either: the plan's test).
  SwizzledLayout smem_act;
  // A step's slot: its activations (step_elems bf16), then with group_sum the f32 sums -bias x sum over the step's k
  // of each activation row (8 n_tiles), at byte `sums` of the slot.
  int step_elems = 0, sums = 0, step_bytes = 0;
  // cluster_reduce: each thread's sums (f32, element-major: element e of thread x at 4 (e threads + x)), written over
  // the activations once every warp is done with them.
  int red_bytes = 0;
  // stage_tma: the activations start at the dynamic shared memory's first 1024-byte boundary (past the swizzle's
  // 512-byte period; `align` bytes reserved for it) and a step's mbarrier (8 bytes) follows all the steps' activations.
  int align = 0, bar_bytes = 0;
  // scale_smem: the scales of the CTA's rows of scale_smem row tiles, from the first 16-byte boundary after the
  // barriers (scales(steps) bytes from the activations; the chunks' cp.async needs 16, and with stage_tma an odd
  // number of 8-byte barriers ends 8 bytes past one): a row's `steps` scales (from any place in a 16-byte chunk) in
  // scale_row(steps) bytes of whole chunks.
  int scale_elem = 0;
  TL_HOST_DEVICE constexpr int scale_row(int steps) const {
    return scale_elem == 0 ? 0 : 16 * ((steps * scale_elem + 15) / 16 + 1);
  }
  // (scale_pad: 15 where a step's bytes leave the barriers' end off a 16-byte boundary, else 0: nothing rounded.)
  TL_HOST_DEVICE constexpr int scale_pad() const {
    return scale_elem != 0 && (step_bytes + bar_bytes) % 16 != 0 ? 15 : 0;
  }
  TL_HOST_DEVICE constexpr int scales(int steps) const {
    return (steps * (step_bytes + bar_bytes) + scale_pad()) & ~scale_pad();
  }
  int scale_rows = 0;
  Fragment mma_A, mma_B, mma_C;  // mma.sync m16n8k16 (weights: A, activations: B, C^T: weight rows x activation rows)

  // The dynamic shared memory of a CTA whose split has `steps` steps (the activations, from the kernel's base; with
  // cluster_reduce at least the sums').
  TL_HOST_DEVICE constexpr int bytes(int steps, bool cluster_reduce = false) const {
    return cluster_reduce && red_bytes > steps * step_bytes
               ? red_bytes
               : align + scales(steps) + scale_rows * scale_row(steps);
  }
};

TL_HOST_DEVICE constexpr GemmDequantGemvPlan make_plan(const GemmDequantGemvConfig& c) {
  GemmDequantGemvPlan p;
  p.smem_act = Layout(make_shape(make_shape(2, 4, c.n_tiles), make_shape(8, 4, 4)),
                      make_stride(make_stride(32, 256, 1024), make_stride(1, 64, 8)));
  if (c.stage_tma) {
    p.smem_act = composition(smem_swizzle(SmemSwizzle::b64, 2),
                             Layout(make_shape(8 * c.n_tiles, kGemvStepK), make_stride(kGemvStepK, 1)));
    p.align = 1024;
    p.bar_bytes = 8;
  }
  p.step_elems = 8 * c.n_tiles * kGemvStepK;
  p.sums = 2 * p.step_elems;
  p.step_bytes = p.sums + (c.group_sum ? 4 * 8 * c.n_tiles : 0);
  p.red_bytes = 4 * c.row_blocks() * c.n_tiles * 4 * c.threads();
  p.scale_elem = c.scale_smem > 0 ? (c.scale_f32 ? 4 : 2) : 0;
  p.scale_rows = c.rows() * c.scale_smem;
  p.mma_A = mma_m16n8k16_a_f16();
  p.mma_B = mma_m16n8k16_b_f16();
  p.mma_C = mma_m16n8k16_c();
  return p;
}

#if !TL_DEVICE_CODE
inline std::string name_expression(const GemmDequantGemvConfig& c) {
  return ConfigName("gemm_dequant_gemv", "GemmDequantGemvConfig")
      .field("warps", c.warps)
      .field("warp_rows", c.warp_rows)
      .field("n_tiles", c.n_tiles)
      .field("prefetch", c.prefetch)
      .field("min_blocks", c.min_blocks)
      .field("l2_prefetch", c.l2_prefetch)
      .field("batch", c.batch)
      .field("stream", c.stream)
      .field("int4_lop3", c.int4_lop3)
      .field("fp4_fold", c.fp4_fold)
      .field("group_sum", c.group_sum)
      .field("step_scale", c.step_scale)
      .field("scale_smem", c.scale_smem)
      .field("cluster_reduce", c.cluster_reduce)
      .field("stage_rounds", c.stage_rounds)
      .field("act_first", c.act_first)
      .field("permuted", c.permuted)
      .field("stage_async", c.stage_async)
      .field("stage_tma", c.stage_tma)
      .field("act_multicast", c.act_multicast)
      .field("tile_loop", c.tile_loop)
      .field("sums_once", c.sums_once)
      .field("unroll", c.unroll)
      .field("unroll_by", c.unroll_by)
      .raw("wtype", c.wtype == dequant4::kFp4 ? "tl::dequant4::kFp4" : "tl::dequant4::kInt4")
      .field("group", c.group)
      .field("scale_f32", c.scale_f32)
      .str();
}
#endif  // !TL_DEVICE_CODE

}  // namespace tl
