// attn.fwd.mma's plan: its typed config, probe regions, shared-memory tiles, ldmatrix/mma.sync fragments and bytes.
#pragma once

#include "tile/atoms.hpp"
#include "tile/config.hpp"
#include "tile/config_name.hpp"
#include "tile/fragment.hpp"
#include "tile/layout.hpp"
#include "tile/swizzle.hpp"

#if !TL_DEVICE_CODE
#include <string>
#include <vector>
#endif

namespace tl {

// The kernel's one template parameter: the config schema's values (TileLang's names) and the problem's flags it is
// specialised on.
struct AttnFwdMmaConfig {
  int dim = 128;         // head dimension (64 or 128)
  int block_M = 64;      // query rows per block
  int block_N = 64;      // keys per K/V tile
  int warps = 4;         // warps, stacked along the query rows
  int num_stages = 2;    // K/V tiles in the cp.async pipeline
  bool causal = false;   // bottom-right aligned causal mask
  bool bf16 = true;      // dtype of Q, K, V, O: bf16, else f16
  bool varlen = false;   // LSE laid out [heads, total_q] (packed sequences)
};

// Timeline regions (TL_PROBE marks), in the order of the spec's `probes`: stage = pipeline stage, aux = K/V tile.
#define TL_ATTN_FWD_MMA_PROBES(X) X(load_issue) X(wait_tile) X(qk) X(softmax) X(pv) X(epilogue)

struct AttnFwdMmaProbe {
#define TL_ATTN_PROBE_ENUM(name) name,
  enum Region : unsigned { TL_ATTN_FWD_MMA_PROBES(TL_ATTN_PROBE_ENUM) };
#undef TL_ATTN_PROBE_ENUM
};

// Shared memory (dynamic, 16-bit elements): [Q tile block_M x dim] then num_stages x ([K tile block_N x dim][V tile
// block_N x dim]). Rows of dim*2 bytes = dim/8 chunks of 16 bytes; chunk c of row r is stored at chunk c ^ (r % 8):
// on element offsets a Swizzle<3, 3, log2(dim) - 3> (the row's low 3 bits, at bit log2(dim), XOR offset bits [3, 6)),
// so the 16-byte cp.async writes and the ldmatrix reads of 8 rows at one chunk touch 8 different bank groups.
struct AttnFwdMmaPlan {
  SwizzledLayout smem_Q;  // (block_M, dim) -> element offset
  SwizzledLayout smem_K;  // (block_N, dim)
  SwizzledLayout smem_V;  // (block_N, dim)
  int kv_offset = 0;      // bytes: stage 0's K tile, after Q
  int v_offset = 0;       // bytes from a stage's K tile to its V tile
  int stage_bytes = 0;    // one stage: K and V tiles
  int bytes = 0;          // the dynamic shared memory

  // mma.sync m16n8k16: A = Q (from ldmatrix) and P (S's registers); B = K and V (from ldmatrix); C = S and O.
  Fragment mma_A;
  Fragment mma_B;
  Fragment mma_C;
  Fragment ldmatrix_A;      // ldmatrix.x4 (Q, K): what each lane receives
  Fragment ldmatrix_trans;  // ldmatrix.x4.trans (V)
  // The row each lane addresses, (row, 16-byte column block) of a 16 x 2-block tile: Q (the A fragment) and V (the B
  // fragments of two n8 tiles through .trans) use ldmatrix.x4's own order, matrix m at block (m % 2, m / 2).
  Fragment rows_A;
  // K (B of S = Q K^T, stored [key][dim]): matrix m is register m % 2 of n8 tile m / 2's B fragment, i.e. the block
  // (key block m / 2, column block m % 2).
  Fragment rows_K;
  // A lane's values of one n8 tile of S or O (mma_C): offsets from its value 0, by row half and column.
  ValueOffsets<4> c_values;
  // P = S in registers: S's value r of n8 tile h (0, 1) of a k16 step is held, by the same lane, in register
  // p_reg[h][r] of P's A fragment for that step (values r and r + 1, r even, as its low and high halves).
  int p_reg[2][4]{};

  // The byte offset of 16-bit element (row, col) of a tile (Q, K or V).
  TL_HOST_DEVICE constexpr static int byte(const SwizzledLayout& tile, int row, int col) { return 2 * tile(row, col); }
};

TL_HOST_DEVICE constexpr AttnFwdMmaPlan make_plan(const AttnFwdMmaConfig& c) {
  AttnFwdMmaPlan p;
  int log2_dim = 0;
  while ((1 << log2_dim) < c.dim) ++log2_dim;
  const BitSwizzle sw(3, 3, log2_dim - 3);
  p.smem_Q = composition(sw, make_layout_row_major(make_shape(c.block_M, c.dim)));
  p.smem_K = composition(sw, make_layout_row_major(make_shape(c.block_N, c.dim)));
  p.smem_V = p.smem_K;
  p.kv_offset = 2 * p.smem_Q.cosize();
  p.v_offset = 2 * p.smem_K.cosize();
  p.stage_bytes = p.v_offset + 2 * p.smem_V.cosize();
  p.bytes = p.kv_offset + c.num_stages * p.stage_bytes;
  p.mma_A = mma_m16n8k16_a_f16();
  p.mma_B = mma_m16n8k16_b_f16();
  p.mma_C = mma_m16n8k16_c();
  p.ldmatrix_A = ldmatrix(4, false);
  p.ldmatrix_trans = ldmatrix(4, true);
  p.rows_A = ldmatrix_rows(4);
  p.rows_K = Fragment(make_layout(Layout(make_shape(8, 2, 2), make_stride(1, 16, 8)), Layout(1, 0)), 16, 2);
  p.c_values = value_offsets<4>(p.mma_C);
  for (int h = 0; h < 2; ++h)
    for (int r = 0; r < 4; ++r) {
      const TileCoord x = p.mma_C(0, r);
      p.p_reg[h][r] = p.mma_A.value_of(x.row, x.col + h * p.mma_C.cols()) / 2;
    }
  return p;
}

#if !TL_DEVICE_CODE
inline std::string name_expression(const AttnFwdMmaConfig& c) {
  return ConfigName("attn_fwd_mma", "AttnFwdMmaConfig")
      .field("dim", c.dim)
      .field("block_M", c.block_M)
      .field("block_N", c.block_N)
      .field("warps", c.warps)
      .field("num_stages", c.num_stages)
      .field("causal", c.causal)
      .field("bf16", c.bf16)
      .field("varlen", c.varlen)
      .str();
}

inline std::vector<std::string> attn_fwd_mma_probe_names() {
  return TL_PROBE_NAMES(TL_ATTN_FWD_MMA_PROBES);
}
#endif

}  // namespace tl
