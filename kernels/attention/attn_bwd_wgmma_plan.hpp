// attn.bwd.wgmma's plan: its typed config, probe regions, TMA/wgmma shared-memory tiles, fragments, barriers, bytes.
#pragma once

#include "attention/attn_bwd_mma_plan.hpp"
#include "tile/atoms.hpp"
#include "tile/config.hpp"
#include "tile/fragment.hpp"
#include "tile/layout.hpp"
#include "tile/swizzle.hpp"

#if !TL_DEVICE_CODE
#include <string>
#include <vector>

#include "tile/config_name.hpp"
#endif

namespace tl {

// AttnBwdWgmmaConfig::p_mask: how P's mask is applied (config p_mask: branch, split).
enum : int { kAttnBwdPMaskBranch = 0, kAttnBwdPMaskSplit = 1 };

// The kernel's one template parameter. block_M follows the head dim (what fits the consumers' 240 registers beside
// dK and dV: 64 query rows at dim 128, 128 at dim 64), block_N is two consumer warpgroups of 64 keys.
struct AttnBwdWgmmaConfig {
  int dim = 128;        // head dim of Q, K, V, O
  int block_M = 64;     // query rows per tile (the N of S^T = K Q^T)
  int block_N = 128;    // keys per CTA: 64 per consumer warpgroup
  int num_stages = 2;   // Q, dO, O buffers (the producer fills the next while this one computes)
  bool causal = false;  // bottom-right aligned: query row r sees keys c <= r + len_k - len_q
  bool bf16 = true;     // else f16
  bool varlen = false;  // LSE as [heads, total_q] (else [batch, heads, seq_q])
  // A completed query tile's dQ is converted by the consumers once their walk is done (each thread its own chunks, up
  // to defer_tiles tiles), not by the writer while the consumers wait for the staging buffer (H100:
  // 1.00-1.17x on issue 20's anchors, docs/perf.md).
  bool dq_defer = true;
  // The deferred list's length (4 bytes a tile in shared memory). The completions bunch in the blocks that finish a
  // head's walk last, which can complete every tile of their walk (group x query tiles: 256 at 16k or GQA 4 at 4k);
  // 2048 fits beside 2 stages at both dims (H100: 1024 was 1.01-1.25x the 15 of before at issue 20's anchors, 1.31x at
  // h 32 / kv 8, causal, docs/perf.md).
  int defer_tiles = 2048;
  // Causal: CTAs take the key blocks heaviest first across groups of `section` (sequence, kv head) pairs (0: key
  // block fastest, then kv head, then sequence, as the grid lies; H100: 8 is 1.02x that at b 8, h 16, 4k, 1.05x at
  // h 32 / kv 8, docs/perf.md).
  int section = 8;
  // D = rowsum(dO * O) of every query row by a pre-pass (a launch of its own before the main one, FlashAttention-2/3's
  // preprocessing) into global memory, which the row warps copy beside the LSE: the stages hold no O (a third less
  // shared memory per stage, and no O tile written and read per query tile; H100: 1.01-1.05x computing it per tile
  // at issue 20's anchors and GQA causal, means of three pairs, docs/perf.md).
  bool d_pass = true;
  // The consumer warpgroups take turns computing a query tile's whole dQ (warpgroup it % 2 for tile it: both parts
  // over all 128 keys, staged alone), as cuDNN's backward does: the other warpgroup starts the next tile's S^T, dP^T
  // once its dV, dK are done, instead of both waiting for their dQ GEMMs and staging in lockstep. dS is double
  // buffered (no barrier for "dS free") and each warpgroup waits for the staging buffer on an mbarrier of its own.
  bool dq_alt = false;
  // The consumers' wgmma descriptors from warp-uniform values (redux.sync, tile/barrier.cuh's warp_uniform): each k16
  // step's descriptor one uniform add onto the operand's low word, kept in uniform registers, instead of built per
  // thread and moved over by R2UR before each wgmma (as attn.fwd.wgmma's uniform_desc).
  bool uniform_desc = false;
  // dS to shared memory by stmatrix (four 8x8 matrices a warp and k16 step: 4 instructions a thread and tile at
  // block_M 64 instead of 16 32-bit stores), as cuDNN's backward stores it (STSM): fewer shared-memory instructions
  // in the consumers' MIO queue beside the wgmmas' operand reads.
  bool ds_stsm = false;
  // The row values (D, LSE) of a stage in an order in which a consumer thread's four queries q, q + 1, q + 8, q + 9
  // lie together (attn_bwd_row_slot): one 16-byte load for two of S^T's value quads instead of two 8-byte loads.
  bool rows_v4 = false;
  // P's mask (causal, or a key block past the sequence's keys): kAttnBwdPMaskBranch P = 0 where masked, else the
  // exponential, in every tile (ptxas branches around each pair's ex2 where causal: convergence barriers and predicates
  // per pair); kAttnBwdPMaskSplit one uniform branch a tile: the tiles the mask can cut test it per value without a
  // branch (the masked values' exponent -inf), the others run with no mask code.
  int p_mask = 0;
  // dK and dV through shared memory (each consumer warpgroup's 64 rows of V, free after its walk), written as whole
  // rows in 16-byte stores, instead of 4-byte stores straight from the accumulators (a warp's store: eight half
  // sectors).
  bool dkv_stage = false;
  // Key blocks a CTA takes in sequence (blocks kv_blocks x .. of its kv head and sequence, x from the grid's order):
  // the ring of Q, dO stages, the row values and the dQ writer run on over the blocks, the producer loads the next
  // block's first Q, dO while the consumers finish this one, and its K, V once both consumer warpgroups have written
  // their dK, dV (mbarrier kv_empty); the deferred dQ conversions wait for the last block. 1: a CTA a key block.
  int kv_blocks = 1;
  // The dQ writer counts a tile (fences, the counter's atomic, the deferred list) while the next tile's bulk reduce
  // reads the staging buffer, one tile behind (the reduce's completion waited for then), instead of between that
  // reduce's completion and the next one's issue; only where dq_defer's list holds every tile the CTA's walk can
  // complete (else as false).
  bool dq_lag = false;
  // The dQ writer publishes a counted part by a release-ordered atomic add on the tile's counter (after the proxy
  // fence) instead of __threadfence() (fence.sc.gpu) and a relaxed add; the block that completes the tile still
  // fences (acquire) before reading the others' parts.
  bool dq_release = false;
  // The mbarrier waits by try_wait with a suspend-time hint (the thread sleeps until the phase completes, up to 10 ms)
  // instead of polling again after the hardware's own limit: 0 none, 1 the producer warpgroup's (the loads, the row
  // warps, the dQ writer: they wait most of each tile), 2 the consumers' too.
  int wait_sleep = 0;
};

// rows_v4: the slot of query row r (16a + 8b + 2t + e) among a stage's row values: 16a + 4t + 2b + e, so the rows
// q, q + 1, q + 8, q + 9 of an S^T accumulator thread (q = 16a + 2t) are 16 contiguous bytes.
TL_HOST_DEVICE constexpr int attn_bwd_row_slot(int r) {
  return (r & ~15) | ((r & 6) << 1) | ((r >> 2) & 2) | (r & 1);
}

// Timeline regions (TL_PROBE marks), in the order of the spec's `probes`.
#define TL_ATTN_BWD_WGMMA_PROBES(X) \
  X(wait_empty) X(tma_issue) X(wait_full) X(sdp_issue) X(row_dot) X(p_ds) X(dkv_issue) X(ds_wait) X(dq_gemm) \
  X(dq_stage) X(dq_add) X(dq_store) X(epilogue)
struct AttnBwdWgmmaProbe {
#define TL_ATTN_BWD_WGMMA_PROBE_ENUM(name) name,
  enum Region : unsigned { TL_ATTN_BWD_WGMMA_PROBES(TL_ATTN_BWD_WGMMA_PROBE_ENUM) };
#undef TL_ATTN_BWD_WGMMA_PROBE_ENUM
};

// Consumer warpgroups, row-warp threads (warps 2 and 3 of the producer warpgroup) and threads of the CTA.
// d_pass's pre-pass launches the kernel with kAttnBwdWgmmaPrePassThreads threads a block (how it tells itself apart).
enum : int {
  kAttnBwdWgmmaConsumers = 2,
  kAttnBwdWgmmaRowThreads = 64,
  kAttnBwdWgmmaThreads = 3 * 128,
  kAttnBwdWgmmaPrePassThreads = 256
};

// Shared memory (dynamic, 1024-byte aligned: the 128-byte swizzle atom is 8 rows x 128 bytes):
//   K, V          (block_N, dim) each, loaded once
//   stages        num_stages x [Q (block_M, dim)][dO (block_M, dim)][O (block_M, dim); not with d_pass]
//   dS            (block_M, block_N), query-contiguous (the MN-major A of dQ = dS K); two with dq_alt (tile it % 2)
//   dQ staging    the tile's dQ parts, f32 in dq_accum's tile order (dq_chunk)
//   row values    per stage: D = rowsum(dO * O) and LSE * log2(e) of its rows, block_M f32 each
//   deferred      the count and the walk indices of the tiles left to the consumers (dq_defer), 32-bit each
//   mbarriers     kv_full, full[num_stages], empty[num_stages], dq_full, dq_empty, dq_load, rows_full[num_stages],
//                 dq_empty1 (dq_alt: warpgroup 1's turn at the staging buffer; dq_empty is warpgroup 0's),
//                 kv_empty (kv_blocks > 1: K, V free for the next key block)
// Every 16-bit tile is TMA's SWIZZLE_128B: boxes of 64 columns (128 bytes) x rows one after another, 16-byte chunk j
// of row r at j ^ (r % 8). The GEMMs (per consumer warpgroup w, keys 64 w ..):
//   S^T  = K_w Q^T     SS  A = K rows (K-major)       B = Q (K-major)        M 64, N block_M, K dim
//   dP^T = V_w dO^T    SS  A = V rows (K-major)       B = dO (K-major)       M 64, N block_M, K dim
//   dV_w += P^T dO     RS  A = P^T (registers)        B = dO (N-major view)  M 64, N dim, K block_M
//   dK_w += dS^T Q     RS  A = dS^T (registers)       B = Q (N-major view)   M 64, N dim, K block_M
//   dQ_w  = dS K       SS  A = dS (M-major, smem)     B = K (N-major view)   M, N: the warpgroup's part of
//                                                                            (block_M, dim), K block_N
// dQ's part: rows 64 w .. at block_M 128 (N = dim), else columns 64 w .. (M = 64, N = dim / 2 = 64).
struct AttnBwdWgmmaPlan {
  static constexpr int kMaxSteps = 16;
  SwizzledLayout smem_Q, smem_K, smem_O;  // (rows, dim), K-major: Q, dO and O share smem_Q; V shares smem_K
  SwizzledLayout smem_Qt;                 // (dim, block_M), N-major: Q and dO as the B of dK, dV
  SwizzledLayout smem_Kt;                 // (dim, block_N), N-major: K as the B of dQ
  SwizzledLayout smem_dS;                 // (block_M, block_N), M-major: dS as the A of dQ
  int q_bytes = 0, kv_bytes = 0, ds_bytes = 0, stage_bytes = 0;
  int q_box = 0, kv_box = 0, ds_box = 0;  // bytes from one 64-column (or 64-row, M/N-major) box to the next
  int dq_bytes = 0;  // the f32 dQ tile
  int k_offset = 0, v_offset = 0, stage_offset = 0, ds_offset = 0, dq_offset = 0, rows_offset = 0;
  int rows_bytes = 0;  // one stage's row values
  int defer_offset = 0;
  int bar_kv_full = 0, bar_full = 0, bar_empty = 0, bar_dq_full = 0, bar_dq_empty = 0, bar_dq_load = 0;
  int bar_rows_full = 0, bar_dq_empty1 = 0, bar_kv_empty = 0;
  int bytes = 0;  // with the 1024-byte alignment slack
  // Descriptor starts (bytes from the tile): k16 step kk along dim of Q / dO (S^T, dP^T's B) and of K / V (their
  // A: the boxes hold block_N rows, not block_M); along the query rows of Q^T / dO^T (dK, dV's B); along the keys
  // of dS (dQ's A) and K^T (dQ's B).
  int q_k16[kMaxSteps]{}, k_k16[kMaxSteps]{}, qt_k16[kMaxSteps]{}, dq_k16_a[kMaxSteps]{}, dq_k16_b[kMaxSteps]{};
  int kv_wg = 0;                   // a consumer warpgroup's 64 rows of K / V
  // dkv_stage's staging rows: warpgroup w's at dkv_offset + w dkv_wg, boxes of 64 columns dkv_box apart. Its 64 rows
  // of V (the box's 128 rows apart), or with kv_blocks > 1 and dq_alt (dkv_in_ds) its own dS buffer (w: only its own
  // dQ GEMMs read that one), so that K and V are free for the next key block before the epilogue.
  bool dkv_in_ds = false;
  int dkv_offset = 0, dkv_wg = 0, dkv_box = 0;
  int dq_m = 0, dq_n = 0;          // dQ's part per warpgroup: rows x columns
  int dq_a_wg = 0, dq_b_wg = 0;    // its A (dS) and B (K^T) start for warpgroup 1 (0 for warpgroup 0)
  int dq_row_wg = 0, dq_col_wg = 0;  // its first (row, column) of the dQ tile for warpgroup 1
  Fragment acc_S;   // S^T, dP^T: wgmma m64n{block_M}k16 accumulator (keys x queries)
  Fragment frag_A;  // P^T, dS^T as the A of dV, dK: wgmma m64k16 A, per k16 step
  Fragment acc_KV;  // dK, dV: wgmma m64n{dim}k16 accumulator
  Fragment acc_dQ;  // dQ's part: m64n{dq_n}k16 accumulator
  ValueOffsets<64> s_values, kv_values, dq_values;
  int a_reg[64]{};  // S^T's value v is held by the same thread in A register a_reg[v] (v even: its low half)
  bool s_quads = false;  // S^T's values 4j .. 4j + 3 of a thread: queries q, q + 1 (q even) of two keys
  // rows_v4: S^T's values 8j .. 8j + 7 of a thread are queries q, q + 1 then q + 8, q + 9 (q = 16a + 2t, t < 4).
  bool s_octets = false;
  // ds_stsm: a k16 step's A register i of a warp is the 8x8 matrix (keys 8 (i & 1) .., queries 8 (i >> 1) ..) of the
  // warp's 16 keys in stmatrix's fragment order, and dS's 16-byte chunks lie so that query q + 16 kt's chunk of a key
  // is q's chunk address XOR 32 (kt % 4), plus kt / 4 boxes (q = 0 or 8): a lane's one address covers the tile.
  bool ds_stsm_ok = false;

  TL_HOST_DEVICE constexpr int stage(int s) const { return stage_offset + s * stage_bytes; }
  // The f32 dQ tile as the consumers stage it and dq_accum holds it (one bulk reduce moves it as it is): 16-byte
  // chunk k (values 4k .. 4k + 3 of the dQ part accumulator) of consumer thread t (0 .. 255) at (k * 256 + t) * 16,
  // so a warp's chunk stores are 512 contiguous bytes.
  TL_HOST_DEVICE constexpr static int dq_chunk(int t, int k) { return (k * 2 * 128 + t) * 16; }
  // dkv_stage: the byte (from the warpgroup's staging rows, dkv_offset + w dkv_wg) of 16-byte chunk c8 (columns
  // 8 c8 ..) of its row `row` (0 .. 63) of dK or dV: the row's 128 bytes of 64-column box c8 / 8 (boxes dkv_box
  // apart), the chunks XOR row % 8 (so a warp's 4-byte accumulator stores, eight rows of one chunk column, and its
  // 16-byte row reads are free of bank conflicts).
  TL_HOST_DEVICE constexpr int dkv_chunk(int row, int c8) const {
    return (c8 / 8) * dkv_box + row * 128 + (((c8 % 8) ^ (row % 8)) << 4);
  }
  TL_HOST_DEVICE constexpr bool ok() const {
    return smem_Q.ok() && smem_K.ok() && smem_Qt.ok() && smem_Kt.ok() && smem_dS.ok() && acc_S.ok() && acc_KV.ok() &&
           acc_dQ.ok() && s_values.ok && kv_values.ok && dq_values.ok && dq_n == 64 &&
           s_quads && bytes > 0;
  }
  TL_HOST_DEVICE constexpr static int byte(const SwizzledLayout& tile, int row, int col) { return 2 * tile(row, col); }
};

// block_M for a head dim (see AttnBwdWgmmaConfig).
TL_HOST_DEVICE constexpr int attn_bwd_wgmma_block_m(int dim) { return dim == 64 ? 128 : 64; }

// The key-block walk (first query tile, key blocks of a query tile) is attn.bwd.mma's: its config with our tiles.
TL_HOST_DEVICE constexpr AttnBwdMmaConfig attn_bwd_walk(const AttnBwdWgmmaConfig& c) {
  AttnBwdMmaConfig w{};
  w.causal = c.causal;
  w.block_M = c.block_M;
  w.block_N = c.block_N;
  return w;
}

TL_HOST_DEVICE constexpr AttnBwdWgmmaPlan make_plan(const AttnBwdWgmmaConfig& c) {
  AttnBwdWgmmaPlan p;
  const SmemSwizzle sw = SmemSwizzle::b128;
  const int box = swizzle_bytes(sw) / 2;  // 64 columns
  p.smem_Q = smem_layout(sw, 2, c.block_M, c.dim);
  p.smem_K = smem_layout(sw, 2, c.block_N, c.dim);
  p.smem_O = p.smem_Q;
  p.smem_Qt = smem_layout(sw, 2, c.dim, c.block_M, Major::MN);
  p.smem_Kt = smem_layout(sw, 2, c.dim, c.block_N, Major::MN);
  p.smem_dS = smem_layout(sw, 2, c.block_M, c.block_N, Major::MN);
  p.q_bytes = 2 * p.smem_Q.cosize();
  p.kv_bytes = 2 * p.smem_K.cosize();
  p.ds_bytes = 2 * p.smem_dS.cosize();
  p.q_box = 2 * smem_layout(sw, 2, c.block_M, box).cosize();
  p.kv_box = 2 * smem_layout(sw, 2, c.block_N, box).cosize();
  p.ds_box = 2 * smem_layout(sw, 2, box, c.block_N, Major::MN).cosize();
  p.stage_bytes = (c.d_pass ? 2 : 3) * p.q_bytes;
  p.k_offset = 0;
  p.v_offset = p.k_offset + p.kv_bytes;
  p.stage_offset = p.v_offset + p.kv_bytes;
  p.ds_offset = p.stage_offset + c.num_stages * p.stage_bytes;
  p.dq_bytes = 4 * c.block_M * c.dim;
  p.dq_offset = p.ds_offset + (c.dq_alt ? 2 : 1) * p.ds_bytes;
  p.rows_offset = p.dq_offset + p.dq_bytes;
  p.rows_bytes = 2 * 4 * c.block_M;
  p.defer_offset = p.rows_offset + c.num_stages * p.rows_bytes;
  p.bar_kv_full = p.defer_offset + (4 * (1 + (c.dq_defer ? c.defer_tiles : 0)) + 7) / 8 * 8;  // mbarriers: 8 B
  p.bar_full = p.bar_kv_full + 8;
  p.bar_empty = p.bar_full + 8 * c.num_stages;
  p.bar_dq_full = p.bar_empty + 8 * c.num_stages;
  p.bar_dq_empty = p.bar_dq_full + 8;
  p.bar_dq_load = p.bar_dq_empty + 8;
  p.bar_rows_full = p.bar_dq_load + 8;
  p.bar_dq_empty1 = p.bar_rows_full + 8 * c.num_stages;
  p.bar_kv_empty = p.bar_dq_empty1 + (c.dq_alt ? 8 : 0);
  p.bytes = p.bar_kv_empty + (c.kv_blocks > 1 ? 8 : 0) + 1024;
  for (int kk = 0; kk < AttnBwdWgmmaPlan::kMaxSteps; ++kk) {
    if (16 * kk < c.dim) {
      p.q_k16[kk] = p.byte(p.smem_Q, 0, 16 * kk);
      p.k_k16[kk] = p.byte(p.smem_K, 0, 16 * kk);
    }
    if (16 * kk < c.block_M) p.qt_k16[kk] = p.byte(p.smem_Qt, 0, 16 * kk);
    if (16 * kk < c.block_N) {
      p.dq_k16_a[kk] = p.byte(p.smem_dS, 0, 16 * kk);
      p.dq_k16_b[kk] = p.byte(p.smem_Kt, 0, 16 * kk);
    }
  }
  p.kv_wg = p.byte(p.smem_K, 64, 0);
  p.dkv_in_ds = c.kv_blocks > 1 && c.dq_alt && p.ds_bytes >= 64 * c.dim * 2;
  p.dkv_offset = p.dkv_in_ds ? p.ds_offset : p.v_offset;
  p.dkv_wg = p.dkv_in_ds ? p.ds_bytes : p.kv_wg;
  p.dkv_box = p.dkv_in_ds ? 64 * 128 : p.kv_box;
  const bool split_rows = c.block_M == 2 * 64;
  p.dq_m = split_rows ? 64 : c.block_M;
  p.dq_n = split_rows ? c.dim : c.dim / 2;
  p.dq_row_wg = split_rows ? 64 : 0;
  p.dq_col_wg = split_rows ? 0 : p.dq_n;
  p.dq_a_wg = p.byte(p.smem_dS, p.dq_row_wg, 0);
  p.dq_b_wg = p.byte(p.smem_Kt, p.dq_col_wg, 0);
  if (p.dq_m != 64) p.dq_n = 0;  // one m64 wgmma per warpgroup: ok() refuses the rest
  p.acc_S = wgmma_m64nNk16_d(c.block_M);
  p.frag_A = wgmma_m64k16_a_f16();
  p.acc_KV = wgmma_m64nNk16_d(c.dim);
  p.acc_dQ = wgmma_m64nNk16_d(p.dq_n > 0 ? p.dq_n : 8);
  p.s_values = value_offsets<64>(p.acc_S);
  p.kv_values = value_offsets<64>(p.acc_KV);
  p.dq_values = value_offsets<64>(p.acc_dQ);
  for (int v = 0; v < p.acc_S.num_values() && v < 64; ++v) {
    const TileCoord x = p.acc_S(0, v);
    const int step = x.col / p.frag_A.cols();
    p.a_reg[v] = step * (p.frag_A.num_values() / 2) + p.frag_A.value_of(x.row, x.col % p.frag_A.cols()) / 2;
  }
  p.s_quads = p.acc_S.num_values() % 4 == 0;
  for (int v = 0; v + 3 < p.acc_S.num_values() && v + 3 < 64; v += 4) {
    const TileCoord* x = &p.s_values.at[v];
    p.s_quads = p.s_quads && x[0].col % 2 == 0 && x[1].row == x[0].row && x[1].col == x[0].col + 1 &&
                x[2].col == x[0].col && x[3].row == x[2].row && x[3].col == x[0].col + 1;
  }
  p.s_octets = p.s_quads && p.acc_S.num_values() % 8 == 0;
  for (int t = 0; t < p.acc_S.num_threads(); ++t)
    p.s_octets = p.s_octets && p.acc_S(t, 0).col % 2 == 0 && p.acc_S(t, 0).col < 8;
  for (int v = 0; v + 7 < p.acc_S.num_values() && v + 7 < 64; v += 8)
    p.s_octets = p.s_octets && p.s_values.at[v].col % 16 == 0 && p.s_values.at[v + 4].col == p.s_values.at[v].col + 8;
  // (the XOR on the whole shared address: dS's tiles start at multiples of 128 bytes from the 1024-aligned base)
  p.ds_stsm_ok = p.frag_A.num_values() == 8 && p.frag_A.num_threads() == 128 && p.ds_offset % 128 == 0 &&
                 p.ds_bytes % 128 == 0;
  for (int t = 0; t < 128 && p.ds_stsm_ok; ++t)
    for (int i = 0; i < 4; ++i) {
      const TileCoord lo = p.frag_A(t, 2 * i), hi = p.frag_A(t, 2 * i + 1);
      const int row = 16 * (t / 32) + 8 * (i & 1) + (t % 32) / 4, col = 8 * (i >> 1) + 2 * (t % 4);
      p.ds_stsm_ok = p.ds_stsm_ok && lo.row == row && lo.col == col && hi.row == row && hi.col == col + 1;
    }
  for (int key = 0; key < c.block_N && p.ds_stsm_ok; ++key)
    for (int q = 0; q < c.block_M; q += q % 8 == 0 ? 7 : 1) {  // each 16-byte chunk's first and last query
      const int q0 = q % 16 < 8 ? 0 : 8, kt = q / 16;
      const int at = (p.byte(p.smem_dS, q0, key) ^ (32 * (kt % 4))) + kt / 4 * p.ds_box + 2 * (q % 8);
      p.ds_stsm_ok = p.ds_stsm_ok && p.byte(p.smem_dS, q, key) == at && p.byte(p.smem_dS, q0, key) % 16 == 0;
    }
  if (c.dim != 64 && c.dim != 128) p.bytes = 0;
  return p;
}

#if !TL_DEVICE_CODE
inline std::string name_expression(const AttnBwdWgmmaConfig& c) {
  return ConfigName("attn_bwd_wgmma", "AttnBwdWgmmaConfig")
      .field("dim", c.dim)
      .field("block_M", c.block_M)
      .field("block_N", c.block_N)
      .field("num_stages", c.num_stages)
      .field("causal", c.causal)
      .field("bf16", c.bf16)
      .field("varlen", c.varlen)
      .field("dq_defer", c.dq_defer)
      .field("defer_tiles", c.defer_tiles)
      .field("section", c.section)
      .field("d_pass", c.d_pass)
      .field("dq_alt", c.dq_alt)
      .field("uniform_desc", c.uniform_desc)
      .field("ds_stsm", c.ds_stsm)
      .field("rows_v4", c.rows_v4)
      .field("p_mask", c.p_mask)
      .field("dkv_stage", c.dkv_stage)
      .field("kv_blocks", c.kv_blocks)
      .field("dq_lag", c.dq_lag)
      .field("dq_release", c.dq_release)
      .field("wait_sleep", c.wait_sleep)
      .str();
}

inline std::vector<std::string> attn_bwd_wgmma_probes() { return TL_PROBE_NAMES(TL_ATTN_BWD_WGMMA_PROBES); }
#endif

}  // namespace tl
