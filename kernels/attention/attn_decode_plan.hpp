// attn.decode's plan: its typed config, probe regions, the warp grid, shared-memory tiles (attn.fwd.mma's) and bytes.
#pragma once

#include "attention/attn_fwd_mma_plan.hpp"
#include "tile/config.hpp"
#include "tile/config_name.hpp"
#include "tile/layout.hpp"

#if !TL_DEVICE_CODE
#include <string>
#include <vector>
#endif

namespace tl {

// The kernel's one template parameter: the config schema's values (TileLang's names) and the problem's flags it is
// specialised on. block_M is derived from the problem: the rows of one kv head's query group (heads / heads_kv
// query heads x seq_q positions) rounded up to whole m16 tiles, at most 16 per warp.
struct AttnDecodeConfig {
  int dim = 128;         // head dimension (64 or 128)
  int block_M = 16;      // query rows per CTA: 16 per warp of the row grid
  int block_N = 64;      // keys per K/V tile (one cp.async stage)
  int warps = 4;         // warps: block_M / 16 along the rows, the rest split each tile's keys
  int num_stages = 3;    // K/V tiles in the cp.async pipeline
  bool causal = true;    // query i of seq_q sees keys < len - seq_q + i + 1
  bool bf16 = true;      // dtype of q, the cache and out: bf16, else f16
};

// Timeline regions (TL_PROBE marks), in the order of the spec's `probes`: stage = pipeline stage, aux = K/V tile.
#define TL_ATTN_DECODE_PROBES(X) X(load_issue) X(wait_tile) X(qk) X(softmax) X(pv) X(combine) X(merge)

struct AttnDecodeProbe {
#define TL_ATTN_DECODE_PROBE_ENUM(name) name,
  enum Region : unsigned { TL_ATTN_DECODE_PROBES(TL_ATTN_DECODE_PROBE_ENUM) };
#undef TL_ATTN_DECODE_PROBE_ENUM
};

// Shared memory (dynamic): during the key loop it is attn.fwd.mma's, [Q tile block_M x dim][num_stages x ([K tile
// block_N x dim][V tile block_N x dim])], 16-bit, the same swizzled tiles and ldmatrix/mma.sync fragments (`tile`).
// After the loop the same bytes hold each key warp's partial O (o_part: (warps_N * block_M) x dim f32, rows padded
// by 8 floats so the quads' 8-byte stores of 8 rows spread over the banks) and its rows' running max and sum (ml:
// 2 x warps_N x block_M f32), for the CTA's own combine; then, in the CTA that merges the splits, each split's
// weight per row (merge_w: max_splits x block_M f32, from offset 0 again); `flag` (4 bytes) says whether it merges.
struct AttnDecodePlan {
  AttnFwdMmaPlan tile;  // smem_Q/K/V, stage offsets, mma and ldmatrix fragments
  int warps_M = 1;      // warps along the rows (16 each)
  int warps_N = 4;      // warps along each tile's keys
  int warp_keys = 16;   // keys of a tile per warp (block_N / warps_N)
  Layout o_part;        // (warps_N * block_M, dim) -> f32 offset
  int ml_offset = 0;    // bytes: [max | sum][warps_N][block_M] f32
  int max_splits = 128; // splits a (request, kv head, row tile) may have: the merge's weights fit shared memory
  int flag_offset = 0;  // bytes
  int bytes = 0;        // the dynamic shared memory
};

TL_HOST_DEVICE constexpr AttnDecodePlan make_plan(const AttnDecodeConfig& c) {
  AttnDecodePlan p;
  p.tile = make_plan(AttnFwdMmaConfig{.dim = c.dim, .block_M = c.block_M, .block_N = c.block_N, .warps = c.warps,
                                      .num_stages = c.num_stages, .causal = c.causal, .bf16 = c.bf16});
  p.warps_M = c.block_M / 16;
  p.warps_N = p.warps_M > 0 ? c.warps / p.warps_M : 1;
  p.warp_keys = p.warps_N > 0 ? c.block_N / p.warps_N : c.block_N;
  p.o_part = Layout(make_shape(p.warps_N * c.block_M, c.dim), make_stride(c.dim + 8, 1));
  p.ml_offset = 4 * p.o_part.cosize();
  int end = p.ml_offset + 4 * 2 * p.warps_N * c.block_M;
  if (end < 4 * p.max_splits * c.block_M) end = 4 * p.max_splits * c.block_M;
  p.flag_offset = end > p.tile.bytes ? end : p.tile.bytes;
  p.bytes = p.flag_offset + 16;
  return p;
}

#if !TL_DEVICE_CODE
inline std::string name_expression(const AttnDecodeConfig& c) {
  return ConfigName("attn_decode", "AttnDecodeConfig")
      .field("dim", c.dim)
      .field("block_M", c.block_M)
      .field("block_N", c.block_N)
      .field("warps", c.warps)
      .field("num_stages", c.num_stages)
      .field("causal", c.causal)
      .field("bf16", c.bf16)
      .str();
}

inline std::vector<std::string> attn_decode_probe_names() { return TL_PROBE_NAMES(TL_ATTN_DECODE_PROBES); }
#endif

}  // namespace tl
