// gemm.fp8's plan, host and device: its typed config, its probe regions, and the shared-memory layouts, fragments,
// offsets and bytes the kernel indexes with and the host spec launches, checks and plots with.
#pragma once

#include "gemm/gemm_types.hpp"
#include "gemm/gemm_wgmma_plan.hpp"
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
namespace gemm_detail {

// How A and B are scaled (C = (scale_A A)(scale_B B)^T; the spec's `scaling`):
//   tensor: one f32 scale per operand (scale_A [1], scale_B [1]), applied in the epilogue;
//   row:    scale_A [M] per row of A, scale_B [N] per row of B (a column of C), applied in the epilogue;
//   block:  DeepSeek-V3's: scale_A [M, ceil(K/128)] per row and 128-wide k block, scale_B [ceil(N/128),
//           ceil(K/128)] per 128 x 128 block of B, applied as each k block's partial sums are promoted;
//   none:   no scales (gemm.grouped's bf16 inputs).
enum Fp8Scaling : int { kScaleTensor = 0, kScaleRow = 1, kScaleBlock = 2, kScaleNone = 3 };

#if !TL_DEVICE_CODE
inline const char* fp8_scaling_source(Fp8Scaling s) {
  switch (s) {
    case kScaleBlock: return "tl::gemm_detail::kScaleBlock";
    case kScaleRow: return "tl::gemm_detail::kScaleRow";
    case kScaleNone: return "tl::gemm_detail::kScaleNone";
    default: return "tl::gemm_detail::kScaleTensor";
  }
}
#endif

}  // namespace gemm_detail

// The kernel's one template parameter (a C++20 structural type): the spec's config in TileLang's names, then what
// the kernel is specialised on from the problem.
struct GemmFp8Config {
  int block_M = 128;   // rows of C per tile: 64 per consumer warpgroup
  int block_N = 256;   // columns of C per tile
  int block_K = 128;   // one 128-byte swizzle row of e4m3 per tile row, and one k block of the block scales
  int wgmma_N = 128;   // columns of one chain of wgmma (the partial sums promoted at once): block_N or a part of it
  int num_stages = 3;  // TMA pipeline depth
  int panel = 16;      // grouped raster: tile rows (columns) walked together
  bool raster_n = false;
  bool tma_store = true;    // the epilogue stages C in shared memory and stores it with TMA
  bool fast_accum = false;  // wgmma accumulates all of K itself: no promotion (cuBLASLt's FAST_ACCUM)
  gemm_detail::Fp8Scaling scaling = gemm_detail::kScaleTensor;
  gemm_detail::OutType out_dtype = gemm_detail::kOutBf16;
  bool overlap = false;  // two chains in flight: chain j + 1's wgmma runs while chain j is promoted
  bool a_regs = false;   // A's k block in registers (ldmatrix), so that the chains' wgmma read only B from smem
  int c_split = 1;       // tma_store: C staged in this many column parts through one part's buffer (frees smem)
  bool ping_pong = false;  // the two consumers issue their wgmma chains in turns (named barriers)
  // Block scales by TMA: the stage's scale slot takes a box of 4 k blocks of scale_A (block_M rows) and of scale_B
  // (its sf_b_blocks rows), loaded by the producer's elected lane beside A and B, instead of the producer warp's
  // 4-byte cp.async of one k block (needs ceil(K/128) a multiple of 4: 16-byte rows of the scale tensors).
  bool scale_tma = false;
  // Block scales' scale_A stored M-major, [ceil(K/128), M] (the problem's scale_a_layout=mn): each k block's scales
  // of all rows contiguous, so a stage's are one run of block_M floats (scale_tma: one box (block_M, 1), where M is a
  // multiple of 4: 16-byte rows).
  bool scale_a_mn = false;
  // Row scaling: each consumer copies the tile's block_N scale_B and its 64 rows' scale_A into a shared slot (one a
  // tile parity) with cp.async at the tile's start, so the epilogue reads them from shared memory instead of waiting
  // on 130 global loads a thread after the last promotion.
  bool scale_stage = false;
  // The consumers' wgmma descriptors built from warp-uniform values (redux.sync): ptxas keeps them in uniform
  // registers and steps each k32's from the stage's by a uniform add, instead of building every descriptor per thread
  // and moving it over by R2UR before each wgmma.
  bool uniform_desc = false;
  // Tensor scaling: each consumer thread loads scale_A[0] and scale_B[0] at the kernel's start (before the barriers'
  // init) into one register, instead of the epilogue's two global loads after the last k block, which waited on HBM
  // (the L2 flushed) once per tile.
  bool scale_early = false;
  // The tensor maps' descriptors prefetched by thread 0 (the producer's elected lane) at the kernel's start, before
  // it initializes the barriers: A's, B's (and the block scales' with scale_tma) and, with tma_store, C's, instead of
  // A's and B's after the __syncthreads and C's fetched by the first bulk store, after the last k block.
  bool prefetch_maps = false;
  // Tensor and row scales (gemm.fp8's grid tiles): the producer's elected thread issues the TMA loads of its first
  // tile's first min(num_stages, k blocks) stages right after the barriers' init, before the __syncthreads and the
  // warpgroups' register hand-over, instead of from the producer loop after them.
  bool early_loads = false;

  TL_HOST_DEVICE constexpr int consumers() const { return block_M / 64; }
  TL_HOST_DEVICE constexpr int threads() const { return (consumers() + 1) * 128; }  // + the producer warpgroup
  TL_HOST_DEVICE constexpr int chunks() const { return block_N / wgmma_N; }          // wgmma chains per k block
  TL_HOST_DEVICE static constexpr int in_bytes() { return 1; }                         // e4m3 A and B
};

// Timeline regions of the kernel's TL_PROBE marks, in region-id order; the spec's `probes` are these names.
// prologue: a recording warp's kernel entry to the end of the __syncthreads after the barriers' init (its start is
// stamped before the block's anchor: it may lie before the block's start); exit: a consumer's last epilogue's end
// to its CTA's last wait on the bulk stores (the whole consumer warpgroup's, by its first warp).
#define TL_GEMM_FP8_PROBES(X) \
  X(wait_empty) X(tma_issue) X(wait_full) X(wgmma) X(promote) X(release) X(epilogue) X(prologue) X(exit)

struct GemmFp8Probe {
#define TL_GEMM_FP8_PROBE_ID(name) name,
  enum : unsigned { TL_GEMM_FP8_PROBES(TL_GEMM_FP8_PROBE_ID) };
#undef TL_GEMM_FP8_PROBE_ID
};

// Everything the kernel and the host agree on: the epilogue's (GemmAccStorePlan: acc, smem_C, box_C, ...) and the
// main loop's. Shared-memory layouts map (row, col) to an element offset inside one tile (e4m3: bytes); offsets are
// bytes from the kernel's aligned base.
struct GemmFp8Plan : GemmAccStorePlan {
  // One stage of A (block_M x block_K) and of B (block_N x block_K, indexed (n, k)), both K-major as TMA writes a
  // box with SWIZZLE_128B: one 128-byte row per tile row.
  SwizzledLayout smem_A, smem_B;
  // One wgmma chain's partial sums, wgmma m64n{wgmma_N}k32 D: chain j's register i is acc's register
  // j * wgmma_N / 2 + i (the same place, wgmma_N j columns further).
  Fragment chunk;

  int in_bytes = 1;  // A and B elements: e4m3 (gemm.grouped: also bf16, 2)
  int align = 0;     // the base's alignment: one 128B swizzle atom (8 rows of 128 bytes)
  int a_stage_bytes = 0, b_stage_bytes = 0;
  // Block scales of one stage (scaling = block; else 0 bytes): f32 scale_A of the tile's block_M rows, sf_a_k k
  // blocks per row (1; scale_tma with scale_A K-major: the 4 of the TMA box that holds the stage's k block, k block kb
  // at kb % 4), then from sf_b_offset scale_B of the tile's sf_b_blocks 128-column blocks of B, sf_k k blocks per
  // block (1; scale_tma: 4, likewise); padded to 16 bytes (scale_tma: 128).
  int sf_stage_bytes = 0;
  int sf_tma_bytes = 0;  // scale_tma: the two scale boxes' bytes a stage's full barrier expects (else 0)
  int sf_b_blocks = 1;
  int sf_k = 1;
  int sf_a_k = 1;
  int sf_b_offset = 0;  // bytes from a slot's start to its scale_B
  // scale_stage (row scaling; else 0 bytes): per consumer and tile parity a slot of block_N f32 of scale_B (the
  // tile's columns) and then 64 f32 of scale_A (the consumer's rows), at rs_offset + (2 consumer + parity)
  // rs_slot_bytes.
  int rs_slot_bytes = 0;
  int rs_offset = 0;
  int a_offset = 0, b_offset = 0, c_offset = 0, sf_offset = 0;
  int full_bar_offset = 0, empty_bar_offset = 0;  // num_stages mbarriers of 8 bytes each
  int bytes = 0;                                  // the dynamic shared memory to launch with (alignment slack included)

  // wgmma descriptors (PTX ISA "Matrix Descriptor Format"), bytes: the stride byte offset between 8-row core-matrix
  // groups; the leading byte offset of a swizzled K-major operand is unused (16).
  int a_lbo = 0, a_sbo = 0, b_lbo = 0, b_sbo = 0;
  // TMA boxes: (block_K, block_M) of A and (block_K, block_N) of B; scale_tma: (4, block_M) of scale_A ((block_M,
  // 1) where it is M-major) and (4, sf_b_blocks) of scale_B (f32; 16 bytes, TMA's smallest inner box).
  Box box_A, box_B, box_SA, box_SB;
  int scale_block = 128;  // K (and, for B, N) elements one block scale covers
};

// Whether the block scales travel by TMA (gemm.fp8's `scale_tma`; the plan and the main loop apply it to block
// scaling only).
template <class Config>
TL_HOST_DEVICE constexpr bool kmajor_scale_tma(const Config& c) {
  if constexpr (requires { c.scale_tma; }) {
    return c.scale_tma;
  } else {
    return false;
  }
}

// Whether row (or tensor) scaling's scales are staged in shared memory at the tile's start (gemm.fp8's
// `scale_stage`; tensor: each consumer thread's own copy of the two scales).
template <class Config>
TL_HOST_DEVICE constexpr bool kmajor_scale_stage(const Config& c) {
  if constexpr (requires { c.scale_stage; }) {
    return c.scale_stage && (c.scaling == gemm_detail::kScaleRow || c.scaling == gemm_detail::kScaleTensor);
  } else {
    return false;
  }
}

// Whether block scaling's scale_A is M-major, [ceil(K/128), M] (gemm.fp8's scale_a_layout=mn).
template <class Config>
TL_HOST_DEVICE constexpr bool kmajor_scale_a_mn(const Config& c) {
  if constexpr (requires { c.scale_a_mn; }) {
    return c.scale_a_mn;
  } else {
    return false;
  }
}

// The plan of the K-major Hopper main loop (gemm_kmajor.cuh: gemm.fp8's, and gemm.grouped's for e4m3 and bf16): `c`
// is a config with gemm.fp8's fields; c.in_bytes() is the size of A's and B's elements (1: e4m3, 2: bf16), block_K of
// which fill one 128-byte swizzle row.
template <class Config>
TL_HOST_DEVICE constexpr GemmFp8Plan make_kmajor_plan(const Config& c) {
  GemmFp8Plan p;
  static_cast<GemmAccStorePlan&>(p) = make_acc_store_plan(c.block_N, c.out_dtype, c.tma_store);
  p.c_tile_bytes /= acc_store_parts(c);
  // The wgmma D fragment does not depend on k: m64nNk32's (e4m3) is m64nNk16's.
  p.acc = wgmma_m64nNk32_d(c.block_N);
  p.chunk = wgmma_m64nNk32_d(c.wgmma_N);
  p.in_bytes = c.in_bytes();
  p.smem_A = smem_layout(SmemSwizzle::b128, p.in_bytes, c.block_M, c.block_K);
  p.smem_B = smem_layout(SmemSwizzle::b128, p.in_bytes, c.block_N, c.block_K);

  p.align = p.smem_A.period() * p.in_bytes;
  p.a_stage_bytes = p.smem_A.cosize() * p.in_bytes;
  p.b_stage_bytes = p.smem_B.cosize() * p.in_bytes;
  // The 128-column blocks of B a tile meets: 192 columns start at column 0 or 64 of one and meet two.
  p.sf_b_blocks = c.block_N % p.scale_block == 0 ? c.block_N / p.scale_block
                  : p.scale_block % c.block_N == 0 ? 1
                                                   : c.block_N / p.scale_block + 1;
  p.sf_k = c.scaling == gemm_detail::kScaleBlock && kmajor_scale_tma(c) ? 4 : 1;
  p.sf_a_k = kmajor_scale_a_mn(c) ? 1 : p.sf_k;
  p.sf_b_offset = 4 * p.sf_a_k * c.block_M;
  // scale_tma: the slots 128-byte aligned (TMA's tensor copies want their shared-memory address so; the scale_B
  // box after block_M rows of 16 bytes, or block_M floats, is too).
  const int sf_align = p.sf_k == 4 ? 128 : 16;
  const int sf_bytes = c.scaling == gemm_detail::kScaleBlock ? p.sf_b_offset + 4 * p.sf_k * p.sf_b_blocks : 0;
  p.sf_tma_bytes = p.sf_k == 4 ? sf_bytes : 0;
  p.sf_stage_bytes = (sf_bytes + sf_align - 1) / sf_align * sf_align;
  // The swizzled tiles first, each a whole number of 1024-byte atoms from the aligned base (TMA's SWIZZLE_128B wants
  // its boxes 1024-byte aligned); the scale slots and barriers after them.
  p.a_offset = 0;
  p.b_offset = p.a_offset + c.num_stages * p.a_stage_bytes;
  p.c_offset = p.b_offset + c.num_stages * p.b_stage_bytes;
  p.sf_offset = p.c_offset + c.consumers() * p.c_tile_bytes;
  // scale_stage's slot per consumer and tile parity: row scales' block_N + 64 floats; tensor scales' two a thread.
  p.rs_slot_bytes = !kmajor_scale_stage(c) ? 0 : c.scaling == gemm_detail::kScaleTensor ? 8 * 128 : 4 * (c.block_N + 64);
  p.rs_offset = p.sf_offset + c.num_stages * p.sf_stage_bytes;
  p.full_bar_offset = p.rs_offset + 2 * c.consumers() * p.rs_slot_bytes;
  p.empty_bar_offset = p.full_bar_offset + 8 * c.num_stages;
  p.bytes = p.empty_bar_offset + 8 * c.num_stages + p.align;

  // Read off the layouts: the distance from row 0 to row 8.
  p.a_lbo = p.b_lbo = 16;
  p.a_sbo = p.smem_A(8, 0) * p.in_bytes;
  p.b_sbo = p.smem_B(8, 0) * p.in_bytes;

  const int span = swizzle_bytes(SmemSwizzle::b128);
  p.box_A = {span / p.in_bytes, c.block_M};
  p.box_B = {span / p.in_bytes, c.block_N};
  p.box_SA = kmajor_scale_a_mn(c) ? GemmFp8Plan::Box{c.block_M, 1} : GemmFp8Plan::Box{4, c.block_M};
  p.box_SB = {4, p.sf_b_blocks};
  return p;
}

TL_HOST_DEVICE constexpr GemmFp8Plan make_plan(const GemmFp8Config& c) { return make_kmajor_plan(c); }

// The partial-sum buffers of wgmma_N / 2 registers a promoting consumer holds: 2 where the config overlaps the
// promotion of one chain with the next chain's wgmma (gemm.fp8's `overlap`), else 1.
template <class Config>
TL_HOST_DEVICE constexpr int kmajor_part_buffers(const Config& c) {
  if constexpr (requires { c.overlap; }) {
    return c.overlap ? 2 : 1;
  } else {
    return 1;
  }
}

// Whether a promoting consumer takes A from registers (gemm.fp8's `a_regs`).
template <class Config>
TL_HOST_DEVICE constexpr bool kmajor_a_regs(const Config& c) {
  if constexpr (requires { c.a_regs; }) {
    return c.a_regs;
  } else {
    return false;
  }
}

// Whether the consumers build their wgmma descriptors from warp-uniform values (gemm.fp8's `uniform_desc`).
template <class Config>
TL_HOST_DEVICE constexpr bool kmajor_uniform_desc(const Config& c) {
  if constexpr (requires { c.uniform_desc; }) {
    return c.uniform_desc;
  } else {
    return false;
  }
}

// Whether tensor scales are loaded at the kernel's start (gemm.fp8's `scale_early`; tensor scaling only).
template <class Config>
TL_HOST_DEVICE constexpr bool kmajor_scale_early(const Config& c) {
  if constexpr (requires { c.scale_early; }) {
    return c.scale_early && c.scaling == gemm_detail::kScaleTensor;
  } else {
    return false;
  }
}

// Whether the tensor maps (tma_C's too) are prefetched before the barriers' init (gemm.fp8's `prefetch_maps`).
template <class Config>
TL_HOST_DEVICE constexpr bool kmajor_prefetch_maps(const Config& c) {
  if constexpr (requires { c.prefetch_maps; }) {
    return c.prefetch_maps;
  } else {
    return false;
  }
}

// Whether the first tile's first stages are loaded before the __syncthreads (gemm.fp8's `early_loads`; tensor and row
// scales: block scales' stages also take the producer warp's cp.async).
template <class Config>
TL_HOST_DEVICE constexpr bool kmajor_early_loads(const Config& c) {
  if constexpr (requires { c.early_loads; }) {
    return c.early_loads && c.scaling != gemm_detail::kScaleBlock;
  } else {
    return false;
  }
}

// Whether the two promoting consumers take turns issuing their chains (gemm.fp8's `ping_pong`).
template <class Config>
TL_HOST_DEVICE constexpr bool kmajor_ping_pong(const Config& c) {
  if constexpr (requires { c.ping_pong; }) {
    return c.ping_pong;
  } else {
    return false;
  }
}

#if !TL_DEVICE_CODE

// The fields every k-major Hopper GEMM config starts with (GemmFp8Config, GemmGroupedConfig), in their order.
template <class Config>
ConfigName& kmajor_config_fields(ConfigName& name, const Config& c) {
  return name.field("block_M", c.block_M)
      .field("block_N", c.block_N)
      .field("block_K", c.block_K)
      .field("wgmma_N", c.wgmma_N)
      .field("num_stages", c.num_stages)
      .field("panel", c.panel)
      .field("raster_n", c.raster_n)
      .field("tma_store", c.tma_store)
      .field("fast_accum", c.fast_accum)
      .raw("scaling", gemm_detail::fp8_scaling_source(c.scaling))
      .raw("out_dtype", gemm_detail::out_type_source(c.out_dtype));
}

// "tl::gemm_fp8<tl::GemmFp8Config{.block_M = 128, ...}>": designated initializers, so the compiler checks every
// field's name and order.
inline std::string name_expression(const GemmFp8Config& c) {
  ConfigName name("gemm_fp8", "GemmFp8Config");
  kmajor_config_fields(name, c);
  // Left out when off: the default configs' names stay as they were.
  if (c.overlap) name.field("overlap", true);
  if (c.a_regs) name.field("a_regs", true);
  if (c.c_split != 1) name.field("c_split", c.c_split);
  if (c.ping_pong) name.field("ping_pong", true);
  if (c.scale_tma) name.field("scale_tma", true);
  if (c.scale_a_mn) name.field("scale_a_mn", true);
  if (c.scale_stage) name.field("scale_stage", true);
  if (c.uniform_desc) name.field("uniform_desc", true);
  if (c.scale_early) name.field("scale_early", true);
  if (c.prefetch_maps) name.field("prefetch_maps", true);
  if (c.early_loads) name.field("early_loads", true);
  return name.str();
}

inline std::vector<std::string> gemm_fp8_probe_names() { return TL_PROBE_NAMES(TL_GEMM_FP8_PROBES); }

#endif  // !TL_DEVICE_CODE

}  // namespace tl
