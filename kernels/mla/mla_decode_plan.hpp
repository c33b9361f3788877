// The plan of mla.decode: its typed config, probe regions, shared-memory layouts, fragments and byte counts.
#pragma once

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

// The kernel's one template parameter. causal and bf16 come from the problem, the rest from the config schema
// (mla_decode.cpp), in the schema's names.
struct MlaDecodeConfig {
  bool causal = false;
  bool bf16 = true;        // q, the cache and out in bf16 (else f16)
  int qk_warpgroups = 1;   // consumer warpgroups computing Q K^T: 1 or 2
  bool vec_store = true;   // 16-bit partials and outputs as 16-byte vectors after a quad transpose
  bool evict_first = false;   // KV loads with an L2 evict_first policy
  bool uniform_desc = false;  // the consumers' wgmma descriptors from warp-uniform values (mla_consumer.cuh)
  // The two consumers chained over pairs of KV blocks (mla_consumer.cuh's chained_consumer, mla.sparse_prefill's
  // schedule), the stages loaded and freed in halves; with qk_warpgroups 1 only (chained()).
  bool chain = false;
  // Q's RoPE panel (columns 512 .. 575) held in the Q K^T warpgroups' registers as wgmma A fragments, loaded once per
  // request: Q K^T's last four k16 steps read only K from shared memory (mla_consumer.cuh's load_rope_regs).
  bool rope_regs = false;
  // O's rescale by exp2(m_old - m_new) skipped in a warp whose rows' factors are all exactly 1 (no row maximum
  // moved): a vote per warp (mla_consumer.cuh's rescale_o); mla.sparse_decode's lazy_rescale.
  bool lazy_rescale = false;
  // The grid is (row tiles, SM parts) instead of (SM parts, row tiles): a part's row tiles, which read the same KV
  // blocks, are consecutive CTAs (FlashMLA's grid order; mla.sparse_prefill's head_order). cta_tile / cta_part in
  // mla_consumer.cuh read the two from blockIdx.
  bool tile_fast = false;
  // The unchained consumers' softmax with fewer instructions (mla_consumer.cuh): P into the P tile by stmatrix (4 x4
  // stores a thread and block instead of 16 32-bit ones at qk_warpgroups 1), each row's max and sum chains started
  // from the first pair of values instead of -inf and 0; mla.sparse_decode's lean_softmax.
  bool lean_softmax = false;
};

// mla.decode's chained schedule: each consumer computes Q K^T of a whole block, so qk_warpgroups 2 leaves it off.
TL_HOST_DEVICE constexpr bool chained(const MlaDecodeConfig& c) { return c.chain && c.qk_warpgroups == 1; }

// Timeline regions, in region-id order (KernelSpec::probes lists the same names). Stage = KV stage, aux = KV block
// index (combine: the request).
#define TL_MLA_DECODE_PROBES(X) X(load_wait) X(load_issue) X(wait_kv) X(qk) X(softmax) X(pv) X(combine)
namespace mla_probe {
#define TL_MLA_PROBE_ID(name) name,
enum : unsigned { TL_MLA_DECODE_PROBES(TL_MLA_PROBE_ID) };
#undef TL_MLA_PROBE_ID
}  // namespace mla_probe

// The problem's fixed sizes (FlashMLA's): 576-wide Q and cache rows whose first 512 columns are V, 64-token KV
// blocks. Enumerators, not constexpr variables: NVRTC would emit namespace-scope constants as device globals.
enum : int { kMlaDimQK = 576, kMlaDimV = 512, kMlaBlock = 64 };

// What kernel and host agree on. Shared memory (dynamic, 1024-aligned, byte offsets from the aligned base):
//   [Q tile][KV stage 0][KV stage 1][P][row max / rescale exchange][row sum exchange][barriers][flag]
// Each 64 x 576 tile is what 9 TMA boxes of 64 rows x 64 columns write with SWIZZLE_128B, one 8 KiB panel after the
// other; P is one such panel. Layouts map (row, column) to an element offset (2-byte elements; the exchanges: f32).
struct MlaDecodePlan {
  int threads;     // 3 warpgroups: the producer, consumers 0 and 1
  int rows;        // query rows of a tile = tokens of a KV block
  int panel_cols;  // columns of one TMA box / swizzle span (128 bytes)
  int panels;      // panels of a 576-column tile
  int s_cols;      // tokens of S one Q K^T warpgroup computes (64, or 32 with two)
  SmemSwizzle swizzle;  // of the TMA boxes (the tensor maps) and of the wgmma descriptors
  SwizzledLayout tile;  // the Q tile and each KV stage: (64, 576), SW128, K-major, panel after panel
  SwizzledLayout p;     // P: (64, 64) tokens, SW128, K-major (the A operand of P V)
  Layout row_max;       // (row, slot) f32: slot = consumer (qk_warpgroups 2: maxima) or block parity (1: rescale)
  Layout row_sum;       // (row, slot, request parity) f32: slot = consumer (2) or sum / max (1)
  Fragment acc_s;       // S of a Q K^T warpgroup: wgmma m64n{s_cols}k16 D
  Fragment acc_o;       // O_c of a consumer: wgmma m64n256k16 D (V columns 256c .. 256c + 255)
  // The 16-byte vectors a consumer stores after the quad transpose (vec_store): the quad's four lanes together hold
  // columns 8j .. 8j + 7 of a row in acc_o; afterwards each lane holds 8 consecutive columns (value e + 8h + 16g:
  // column e of vector 4g + its quad position, row h). No hardware atom: a rearrangement by shuffles.
  Fragment out_vec;
  unsigned tile_bytes;                      // one tile: what a Q or KV load's transaction count expects
  unsigned off_q, off_kv, off_p, off_max, off_sum, off_bar, off_flag;
  // chained(): a stage's second half (panels [half_panels, 9): V columns 256 .. 511 and the RoPE panel) has a full
  // and an empty barrier of its own (full_hi, empty_hi), the first half (V columns 0 .. 255) the ring's.
  int half_panels;
  unsigned off_half_bar;
  unsigned smem_used, smem_bytes;           // smem_bytes: with the 1024-byte alignment slack (what the host asks)
  // wgmma descriptors (PTX ISA "Matrix Descriptor Format", SW128): stride byte offset = one 8-row atom of a K-major
  // tile; for V read N-major the leading byte offset = the next 64 columns (the next panel).
  unsigned desc_sbo, desc_v_lbo;

  TL_HOST_DEVICE constexpr unsigned kv_stage(int s) const { return off_kv + tile_bytes * static_cast<unsigned>(s); }
  // mbarriers: full[2] and empty[2] of the KV ring, then Q's full and empty.
  TL_HOST_DEVICE constexpr unsigned full_bar(int s) const { return off_bar + 8u * static_cast<unsigned>(s); }
  TL_HOST_DEVICE constexpr unsigned empty_bar(int s) const { return off_bar + 16u + 8u * static_cast<unsigned>(s); }
  TL_HOST_DEVICE constexpr unsigned q_full_bar() const { return off_bar + 32u; }
  TL_HOST_DEVICE constexpr unsigned q_empty_bar() const { return off_bar + 40u; }
  TL_HOST_DEVICE constexpr unsigned full_hi(int s) const { return off_half_bar + 8u * static_cast<unsigned>(s); }
  TL_HOST_DEVICE constexpr unsigned empty_hi(int s) const { return off_half_bar + 16u + 8u * static_cast<unsigned>(s); }
};

TL_HOST_DEVICE constexpr MlaDecodePlan make_plan(const MlaDecodeConfig& c) {
  MlaDecodePlan p{};
  p.threads = 3 * 128;
  p.rows = kMlaBlock;
  p.swizzle = SmemSwizzle::b128;
  p.panel_cols = swizzle_bytes(p.swizzle) / 2;
  p.panels = kMlaDimQK / p.panel_cols;
  p.s_cols = c.qk_warpgroups == 1 ? kMlaBlock : kMlaBlock / 2;
  p.tile = smem_layout(p.swizzle, 2, p.rows, kMlaDimQK);
  p.p = smem_layout(p.swizzle, 2, p.rows, kMlaBlock);
  p.row_max = make_layout(make_shape(p.rows, 2));
  p.row_sum = make_layout(make_shape(p.rows, 2, 2));
  p.acc_s = wgmma_m64nNk16_d(p.s_cols);
  p.acc_o = wgmma_m64nNk16_d(kMlaDimV / 2);
  p.out_vec = Fragment(make_layout(Layout(make_shape(4, 8, 4), make_stride(8 * 64, 1, 16)),
                                   Layout(make_shape(8, 2, 8), make_stride(64, 8, 32 * 64))),
                       64, kMlaDimV / 2);
  p.tile_bytes = 2u * static_cast<unsigned>(p.tile.cosize());
  p.off_q = 0;
  p.off_kv = p.off_q + p.tile_bytes;
  p.off_p = p.kv_stage(2);
  p.off_max = p.off_p + 2u * static_cast<unsigned>(p.p.cosize());
  p.off_sum = p.off_max + 4u * static_cast<unsigned>(p.row_max.cosize());
  p.off_bar = p.off_sum + 4u * static_cast<unsigned>(p.row_sum.cosize());
  p.off_flag = p.off_bar + 6u * 8u;
  p.half_panels = kMlaDimV / 2 / p.panel_cols;
  p.off_half_bar = p.off_flag + 16u;  // the last-split flag: 4 bytes used
  p.smem_used = p.off_half_bar + (chained(c) ? 32u : 0u);
  p.smem_bytes = p.smem_used + 1024u;
  p.desc_sbo = 2u * static_cast<unsigned>(p.tile.layout()(8, 0));
  p.desc_v_lbo = 2u * static_cast<unsigned>(p.tile.layout()(0, p.panel_cols));
  return p;
}

#if !TL_DEVICE_CODE
inline std::string name_expression(const MlaDecodeConfig& c) {
  ConfigName n("mla_decode", "MlaDecodeConfig");
  n.field("causal", c.causal)
      .field("bf16", c.bf16)
      .field("qk_warpgroups", c.qk_warpgroups)
      .field("vec_store", c.vec_store)
      .field("evict_first", c.evict_first)
      .field("uniform_desc", c.uniform_desc);
  if (c.chain) n.field("chain", true);  // named only when on: the unchained kernels keep their names
  if (c.rope_regs) n.field("rope_regs", true);  // the same
  if (c.lazy_rescale) n.field("lazy_rescale", true);  // the same
  if (c.tile_fast) n.field("tile_fast", true);  // the same
  if (c.lean_softmax) n.field("lean_softmax", true);  // the same
  return n.str();
}

inline std::vector<std::string> mla_decode_probe_names() {
  return TL_PROBE_NAMES(TL_MLA_DECODE_PROBES);
}
#endif

}  // namespace tl
