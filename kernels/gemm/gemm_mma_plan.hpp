// gemm.mma's plan: its typed config, its probe regions, and the shared-memory tiles and fragments kernel and host share.
#pragma once

#include "gemm/gemm_types.hpp"
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

// The kernel's one template parameter: the spec's config in its names, then the problem flags it is specialised on.
// Every field is printed by name_expression, so a field added here reaches the name (and the cache key) at once.
struct GemmMmaConfig {
  int block_M;
  int block_N;
  int warps_M;
  int warps_N;
  int num_stages;
  bool swizzle;
  int panel;
  int min_blocks;
  bool unroll_k;
  bool early_sync;
  bool serpentine;
  int frag_buffers;
  bool bf16;       // A and B are bf16 (else f16)
  bool trans_B;    // B stored N x K (K-major); else K x N (N-major)
  gemm_detail::OutType out_dtype;  // element type of C
};

// Timeline regions (TL_PROBE marks; compiled in only with -DTL_TIMELINE=1), listed once for the kernel's enum and
// the spec's names. Every warp marks its cp.async issue of a stage ahead, its wait for the current stage
// (cp.async.wait_group + __syncthreads), its k-tile of ldmatrix + mma.sync, and the epilogue.
#define TL_GEMM_MMA_PROBES(X) X(load_issue) X(wait_stage) X(mma) X(epilogue)

struct GemmMmaProbe {
#define TL_GEMM_MMA_PROBE_ENUM(name) name,
  enum : unsigned { TL_GEMM_MMA_PROBES(TL_GEMM_MMA_PROBE_ENUM) };
#undef TL_GEMM_MMA_PROBE_ENUM
};

// What kernel and host agree on. Shared memory holds num_stages x [A tile][B tile] of 16-bit elements; the layouts
// map (row, col) of a tile to its element offset: smem_A (m, k) is block_M x 64, K-major; smem_B (n, k) is
// block_N x 64, K-major (trans_B) or MN-major as 64-column blocks of 64 k-rows (TMA's MN-major 128B layout). Both are
// 128-byte rows (16-byte chunks) with the 128B swizzle (chunk c of row r at c ^ r%8: cp.async writes and ldmatrix
// reads of 8 rows at one chunk hit 8 bank groups) or without it (ldmatrix then 8-way conflicted).
// Fragments are in the operand's ISA orientation (A m x k, B k x n, C m x n) unless named by how they are stored.
struct GemmMmaPlan {
  int threads;
  int warp_M, warp_N;      // a warp's sub-tile of C
  int mma_M, mma_N;        // its m16n8 mma tiles along M and N
  int chunk;               // elements per 16-byte chunk (a cp.async, an ldmatrix row)
  SwizzledLayout smem_A;   // (m, k) of one stage's A tile
  SwizzledLayout smem_B;   // (n, k) of one stage's B tile
  int a_bytes, b_bytes;    // one stage's tiles; B follows A
  int stage_bytes;         // stage s starts at s * stage_bytes
  int smem_bytes;          // the block's dynamic shared memory; no alignment slack: the kernel swizzles offsets,
                           // not addresses, so its tiles need no 1024-byte-aligned base
  Fragment mma_A, mma_B, mma_C;  // mma.sync m16n8k16 (.f16/.bf16 in, .f32 accumulators)
  Fragment ldmatrix_A;     // what ldmatrix.x4 delivers of a 16 x 16 A tile: mma_A, register by register
  Fragment ldmatrix_A_src; // (lane, 0) -> (row, 16-byte block) of the A tile its ldmatrix row address points at
  Fragment mma_B_pair;     // two n8 tiles of B (k16 x n16), as the kernel holds them: b[j], b[j + 1]
  Fragment ldmatrix_B;     // what one ldmatrix.x4 (.trans for an N-major B) delivers, as B is stored: (n, k) when
                           // K-major (ldmatrix of n-rows), (k, n) when N-major; mma_B_pair or its transpose
  Fragment ldmatrix_B_src; // (lane, 0) -> (row, 16-byte block) of the stored B tile: (n, k-block) or (k, n-block)
};

// The tile as TMA's 128B swizzle would write it, or the same element order without the swizzle.
TL_HOST_DEVICE constexpr SwizzledLayout gemm_mma_tile(bool swizzle, int rows, Major major) {
  const SwizzledLayout sw = smem_layout(SmemSwizzle::b128, 2, rows, 64, major);
  return swizzle ? sw : SwizzledLayout(sw.layout());
}

TL_HOST_DEVICE constexpr GemmMmaPlan make_plan(const GemmMmaConfig& c) {
  GemmMmaPlan p{};
  p.threads = c.warps_M * c.warps_N * 32;
  p.warp_M = c.block_M / c.warps_M;
  p.warp_N = c.block_N / c.warps_N;
  p.mma_M = p.warp_M / 16;
  p.mma_N = p.warp_N / 8;
  p.chunk = 8;
  p.smem_A = gemm_mma_tile(c.swizzle, c.block_M, Major::K);
  p.smem_B = gemm_mma_tile(c.swizzle, c.block_N, c.trans_B ? Major::K : Major::MN);
  p.a_bytes = 2 * p.smem_A.cosize();
  p.b_bytes = 2 * p.smem_B.cosize();
  p.stage_bytes = p.a_bytes + p.b_bytes;
  p.smem_bytes = c.num_stages * p.stage_bytes;
  p.mma_A = mma_m16n8k16_a_f16();
  p.mma_B = mma_m16n8k16_b_f16();
  p.mma_C = mma_m16n8k16_c();
  p.ldmatrix_A = ldmatrix(4, false);
  p.ldmatrix_A_src = ldmatrix_sources(p.ldmatrix_A, 4);
  p.mma_B_pair = repeat(p.mma_B, 1, 2, false);
  p.ldmatrix_B = c.trans_B ? transpose(p.mma_B_pair) : ldmatrix(4, true);
  p.ldmatrix_B_src = ldmatrix_sources(p.ldmatrix_B, 4);
  return p;
}

#if !TL_DEVICE_CODE
// tl::gemm_mma<tl::GemmMmaConfig{.block_M = 128, ...}>: designated initializers, so the compiler checks every name.
inline std::string name_expression(const GemmMmaConfig& c) {
  return ConfigName("gemm_mma", "GemmMmaConfig")
      .field("block_M", c.block_M)
      .field("block_N", c.block_N)
      .field("warps_M", c.warps_M)
      .field("warps_N", c.warps_N)
      .field("num_stages", c.num_stages)
      .field("swizzle", c.swizzle)
      .field("panel", c.panel)
      .field("min_blocks", c.min_blocks)
      .field("unroll_k", c.unroll_k)
      .field("early_sync", c.early_sync)
      .field("serpentine", c.serpentine)
      .field("frag_buffers", c.frag_buffers)
      .field("bf16", c.bf16)
      .field("trans_B", c.trans_B)
      .raw("out_dtype", gemm_detail::out_type_source(c.out_dtype))
      .str();
}

inline std::vector<std::string> gemm_mma_probe_names() {
  return TL_PROBE_NAMES(TL_GEMM_MMA_PROBES);
}
#endif

}  // namespace tl
