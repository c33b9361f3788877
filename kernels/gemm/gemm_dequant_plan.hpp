// gemm.dequant's plan, host and device: its typed config, its probe regions, and the shared-memory layouts,
// fragments, offsets and bytes the kernel indexes with and the host spec launches, checks and plots with.
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
#include <vector>
#endif

namespace tl {

// The kernel's one template parameter (a C++20 structural type). The kernel computes C^T = dequant(W) A^T: the
// weights' rows (C's columns, n) are wgmma's M, the activations' rows (C's rows, m) its N.
struct GemmDequantConfig {
  int block_N = 128;   // weight rows (columns of C) per tile: 64 per consumer warpgroup (wgmma's M)
  int block_M = 128;   // activation rows (rows of C) per tile: wgmma's N, 16 .. 256
  int block_K = 128;   // k per pipeline stage: block_K / 64 activation boxes of one 128-byte swizzle row each
  int num_stages = 4;  // TMA pipeline depth
  int ctas_per_sm = 1;  // 2: two CTAs share an SM (no setmaxnreg; registers capped for two)
  int k_split = 1;      // consumer warpgroups per 64 weight rows, each taking every k_split-th stage
  int wtype = dequant4::kInt4;
  int group = 128;          // k per scale
  bool scale_f32 = false;   // scales f32 (else bf16)
  // Each k block's scales staged in shared memory by the producer warpgroup (else each consumer thread loads its rows'
  // into a ring of registers).
  bool smem_scales = true;

  TL_HOST_DEVICE constexpr int row_groups() const { return block_N / 64; }
  TL_HOST_DEVICE constexpr int consumers() const { return row_groups() * k_split; }
  TL_HOST_DEVICE constexpr int threads() const { return (consumers() + 1) * 128; }  // + the producer warpgroup
  TL_HOST_DEVICE constexpr int chunks() const { return block_K / 64; }              // activation boxes per stage
  // Scale groups one stage meets (a group wider than the stage: one).
  TL_HOST_DEVICE constexpr int stage_groups() const { return (block_K + group - 1) / group; }
};

// Timeline regions of the kernel's TL_PROBE marks, in region-id order; the spec's `probes` are these names.
#define TL_GEMM_DEQUANT_PROBES(X) X(wait_empty) X(tma_issue) X(wait_full) X(dequant_mma) X(epilogue)

struct GemmDequantProbe {
#define TL_GEMM_DEQUANT_PROBE_ID(name) name,
  enum : unsigned { TL_GEMM_DEQUANT_PROBES(TL_GEMM_DEQUANT_PROBE_ID) };
#undef TL_GEMM_DEQUANT_PROBE_ID
};

// Everything the kernel and the host agree on. Offsets are bytes from the kernel's aligned base.
struct GemmDequantPlan {
  struct Box {
    int inner = 0;
    int outer = 0;
  };
  // One 64-k box of activations (block_M rows x 64 bf16, K-major, TMA SWIZZLE_128B: wgmma's B operand), and the
  // stage's packed weights (block_N rows x block_K / 2 bytes, row-major as TMA writes an unswizzled box).
  SwizzledLayout smem_A, smem_W;
  // wgmma's A operand from registers (a consumer's 64 weight rows x 16 k per wgmma) and its accumulator
  // (64 weight rows x block_M activation rows: C^T).
  Fragment frag_W, acc;
  int align = 1024;  // one 128B swizzle atom
  int a_box_bytes = 0, a_stage_bytes = 0, w_stage_bytes = 0;
  // smem_scales: a stage's scales as the consumers multiply by them, staged by the producer warpgroup: [block_N rows]
  // [stage_groups] 4-byte words (a bf16 scale in both halves of a pair, fp4's 2^94 folded in, or an f32); else none.
  int s_row_bytes = 0, s_stage_bytes = 0;
  int a_offset = 0, w_offset = 0, s_offset = 0, full_bar_offset = 0, empty_bar_offset = 0;
  int bytes = 0;  // the dynamic shared memory to launch with (alignment slack included)
  // k_split > 1: the f32 partial sums the other k lanes hand to lane 0 at the end, over the (then consumed) stages.
  int red_bytes = 0;
  int a_sbo = 0;  // wgmma descriptor of the activations: bytes from one 8-row core-matrix group to the next
  Box box_A, box_W;
};

TL_HOST_DEVICE constexpr GemmDequantPlan make_plan(const GemmDequantConfig& c) {
  GemmDequantPlan p;
  p.smem_A = smem_layout(SmemSwizzle::b128, 2, c.block_M, 64);
  p.smem_W = smem_layout(SmemSwizzle::none, 1, c.block_N, c.block_K / 2);
  p.frag_W = wgmma_m64k16_a_f16();
  p.acc = wgmma_m64nNk16_d(c.block_M);
  p.a_box_bytes = p.smem_A.cosize() * 2;
  p.a_stage_bytes = c.chunks() * p.a_box_bytes;
  p.w_stage_bytes = p.smem_W.cosize();
  p.s_row_bytes = c.smem_scales ? 4 * c.stage_groups() : 0;
  p.s_stage_bytes = c.block_N * p.s_row_bytes;
  // The swizzled activation boxes first (each a whole number of 1024-byte atoms), the weights and scales after them.
  p.a_offset = 0;
  p.w_offset = c.num_stages * p.a_stage_bytes;
  p.s_offset = p.w_offset + c.num_stages * p.w_stage_bytes;
  p.full_bar_offset = p.s_offset + c.num_stages * p.s_stage_bytes;
  p.empty_bar_offset = p.full_bar_offset + 8 * c.num_stages;
  p.bytes = p.empty_bar_offset + 8 * c.num_stages + p.align;
  p.a_sbo = p.smem_A(8, 0) * 2;
  p.red_bytes = (c.k_split - 1) * c.row_groups() * p.acc.num_values() * 128 * 4;
  p.box_A = {64, c.block_M};
  p.box_W = {c.block_K / 2, c.block_N};
  return p;
}

#if !TL_DEVICE_CODE

// "tl::gemm_dequant<tl::GemmDequantConfig{.block_N = 128, ...}>": designated initializers, so the compiler checks
// every field's name and order.
inline std::string name_expression(const GemmDequantConfig& c) {
  return ConfigName("gemm_dequant", "GemmDequantConfig")
      .field("block_N", c.block_N)
      .field("block_M", c.block_M)
      .field("block_K", c.block_K)
      .field("num_stages", c.num_stages)
      .field("ctas_per_sm", c.ctas_per_sm)
      .field("k_split", c.k_split)
      .raw("wtype", c.wtype == dequant4::kFp4 ? "tl::dequant4::kFp4" : "tl::dequant4::kInt4")
      .field("group", c.group)
      .field("scale_f32", c.scale_f32)
      .field("smem_scales", c.smem_scales)
      .str();
}

inline std::vector<std::string> gemm_dequant_probe_names() { return TL_PROBE_NAMES(TL_GEMM_DEQUANT_PROBES); }

#endif  // !TL_DEVICE_CODE

}  // namespace tl
