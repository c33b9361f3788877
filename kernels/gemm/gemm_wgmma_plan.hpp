// gemm.wgmma's plan, host and device: its typed config, its probe regions, and the shared-memory layouts, fragment,
// offsets and bytes the kernel indexes with and the host spec launches, checks and plots with.
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

// The kernel's one template parameter (a C++20 structural type): the spec's config in TileLang's names, then what
// the kernel is specialised on from the problem.
struct GemmWgmmaConfig {
  int block_M = 128;   // rows of C per tile: 64 per consumer warpgroup, or 256 as two consumers of two 64-row chains,
                       // or 192 (with block_N = 192) as two consumers of 96 columns each, three 64-row chains
  int block_N = 256;   // columns of C per tile: the wgmma N (192 x 192: twice it)
  int block_K = 64;    // one 128-byte swizzle row of 16-bit elements per tile row
  int num_stages = 3;  // TMA pipeline depth
  int panel = 16;      // grouped raster: tile rows (columns) walked together
  bool raster_n = false;
  bool tma_store = true;  // the epilogue stages C in shared memory and stores it with TMA
  int cluster_M = 1;
  int cluster_N = 1;
  bool bf16 = true;     // A and B are bf16 (else f16)
  bool trans_B = true;  // B stored N x K (K-major); else K x N (N-major)
  gemm_detail::OutType out_dtype = gemm_detail::kOutBf16;
  // The persistent schedule: whole tiles only (false), or the last partial wave's tiles split along K
  // (tile/work_order.hpp, GemmStreamK).
  bool stream_k = false;
  // tma_store: C staged in this many column parts through one part's buffer (frees shared memory for a stage).
  // Whole 64-column sub-tiles per part; a plain (152-column) tile: two parts of block_N / 2 rounded up to 8 columns,
  // the second ending at block_N (they overlap by the rounding and store those columns twice, with equal values).
  int c_split = 1;
  // Ping-pong: the two consumers take the CTA's tiles in turns (consumer c its tiles c, c + 2, ...), each a whole
  // block_M x block_N tile as block_M / 64 m64nN chains (128 x 128: two m64n128 chains; 64 x 256: one m64n256), and
  // their main loops in turns (named barriers), so one stores its C while the other's wgmma run. Data-parallel, no
  // clusters.
  bool pingpong = false;

  // Consumer warpgroups: one per 64 rows up to two; a 256-row tile gives each of two consumers 128 rows as two
  // m64nN accumulator chains (chains() = 2) that share each k-step's B descriptor. A 192-row tile (cuBLAS's 192 x 192
  // arrangement) splits the columns instead: each of two consumers owns block_N / 2 columns of all 192 rows as three
  // m64n(block_N / 2) chains (split_cols()) that share each k-step's B descriptor of its columns.
  TL_HOST_DEVICE constexpr bool split_cols() const { return block_M == 192; }
  // (pingpong: two consumers, each with all block_M / 64 chains of its own tiles.)
  TL_HOST_DEVICE constexpr int consumers() const {
    return pingpong || split_cols() || block_M / 64 >= 2 ? 2 : block_M / 64;
  }
  TL_HOST_DEVICE constexpr int chains() const {
    return split_cols() || pingpong ? block_M / 64 : block_M / 64 / consumers();
  }
  TL_HOST_DEVICE constexpr int wgmma_n() const { return split_cols() ? block_N / consumers() : block_N; }
  TL_HOST_DEVICE constexpr int threads() const { return (consumers() + 1) * 128; }  // + the producer warpgroup
  TL_HOST_DEVICE constexpr int cluster() const { return cluster_M * cluster_N; }
};


// Timeline regions of the kernel's TL_PROBE marks, in region-id order; the spec's `probes` are these names.
#define TL_GEMM_WGMMA_PROBES(X) X(wait_empty) X(tma_issue) X(wait_full) X(wgmma) X(release) X(epilogue)

struct GemmWgmmaProbe {
#define TL_GEMM_WGMMA_PROBE_ID(name) name,
  enum : unsigned { TL_GEMM_WGMMA_PROBES(TL_GEMM_WGMMA_PROBE_ID) };
#undef TL_GEMM_WGMMA_PROBE_ID
};

// The epilogue of a consumer warpgroup of the Hopper GEMMs (gemm.wgmma, gemm.fp8): its 64 x block_N f32
// accumulator, the wgmma D fragment, stored to C through a 128B-swizzled staging tile and TMA, or from registers.
struct GemmAccStorePlan {
  // A TMA box: elements along the innermost dimension (contiguous in global memory), then rows.
  struct Box {
    int inner = 0;
    int outer = 0;
  };

  // One consumer's C staging tile (TMA store), 64 x block_N of C: sub-tiles of 128-byte rows, one TMA box each.
  SwizzledLayout smem_C;
  // A consumer warpgroup's accumulator: wgmma m64nN D, (thread of the warpgroup, register) -> (row, col). Its
  // registers come in column pairs (v, v + 1: col, col + 1 of one row), acc_pair of them per 8-column block row
  // half and acc_block per block: register acc_block * j + acc_pair * h + e is column e of row half h of block j.
  Fragment acc;
  int acc_pair = 0, acc_block = 0;
  int c_bytes = 2;       // C elements
  int c_tile_bytes = 0;  // one consumer's staging tile (one part of it: acc_store_parts); 0 without tma_store
  Box box_C;             // (128 bytes of columns, 64 rows) per staging sub-tile; plain: (block_N, 64), the whole tile
  // 128: the staging tile is smem_C (128B-swizzled sub-tiles); 0 (plain: block_N columns are not whole 128-byte rows,
  // e.g. 152): a row-major 64 x block_N tile, rows of block_N * c_bytes bytes, stored by one unswizzled TMA box. At
  // 152 16-bit columns a row is 76 words, so the 8 rows of a warp's accumulator pairs start in banks 0, 12, 24, 4,
  // 16, 28, 8, 20 and their 4 words each never meet: conflict free.
  int c_swizzle = 128;  // or 64: sub-tiles of 64-byte rows (SWIZZLE_64B), when block_N's rows are not whole 128 bytes
  int c_cols = 0;  // the plain tile's row length in elements: block_N, or one part's columns (c_split)
};

// The parts a staged epilogue stores its tile in (gemm.fp8's `c_split`; else 1): the staging buffer holds
// block_N / parts columns, and each part waits until the part before it has left the buffer.
template <class Config>
TL_HOST_DEVICE constexpr int acc_store_parts(const Config& c) {
  if constexpr (requires { c.c_split; }) {
    return c.c_split;
  } else {
    return 1;
  }
}

TL_HOST_DEVICE constexpr GemmAccStorePlan make_acc_store_plan(int block_N, gemm_detail::OutType out_dtype,
                                                              bool tma_store, int plain_parts = 1) {
  GemmAccStorePlan p;
  p.c_bytes = gemm_detail::out_bytes(out_dtype);
  p.c_cols = plain_parts == 1 ? block_N : (block_N / plain_parts + 7) / 8 * 8;
  // Rows of whole 128-byte sub-tiles, else of whole 64-byte ones (96 16-bit columns: three 32-column sub-tiles with
  // SWIZZLE_64B, whose 8 rows of a warp's pair stores land in 8 different 16-byte bank groups), else plain.
  const SmemSwizzle mode = (block_N * p.c_bytes) % swizzle_bytes(SmemSwizzle::b128) == 0  ? SmemSwizzle::b128
                           : (block_N * p.c_bytes) % swizzle_bytes(SmemSwizzle::b64) == 0 ? SmemSwizzle::b64
                                                                                           : SmemSwizzle::none;
  p.c_swizzle = swizzle_bytes(mode);
  // The plain tile leaves smem_C unused; it is laid out over whole 128-byte rows so that it stays a valid layout.
  const SmemSwizzle laid = mode == SmemSwizzle::none ? SmemSwizzle::b128 : mode;
  const int atom_cols = swizzle_bytes(laid) / p.c_bytes;
  p.smem_C = smem_layout(laid, p.c_bytes, 64, (block_N + atom_cols - 1) / atom_cols * atom_cols);
  p.acc = wgmma_m64nNk16_d(block_N);
  const IntTuple values = p.acc.tv().mode(1).shape();  // (2, 2, N/8): pair, row half, column block
  p.acc_pair = values.leaf(0);
  p.acc_block = values.leaf(0) * values.leaf(1);
  if (p.c_swizzle != 0) {
    p.c_tile_bytes = tma_store ? p.smem_C.cosize() * p.c_bytes : 0;
    p.box_C = {atom_cols, 64};
  } else {
    p.c_tile_bytes = tma_store ? 64 * p.c_cols * p.c_bytes : 0;
    p.box_C = {p.c_cols, 64};
  }
  return p;
}

// Everything the kernel and the host agree on. Shared-memory layouts map (row, col) to an element offset inside one
// tile (times the element size: bytes); offsets are bytes from the kernel's aligned base.
struct GemmWgmmaPlan : GemmAccStorePlan {
  // One stage of A: block_M x block_K, K-major, as TMA writes a box with SWIZZLE_128B.
  SwizzledLayout smem_A;
  // One stage of B indexed (n, k): K-major (trans_B) like A, else MN-major: 64-column blocks of all block_K k-rows,
  // one TMA box each (CuTe's MN-major SW128 layout, what wgmma reads with imm-trans-b = 1).
  SwizzledLayout smem_B;

  int in_bytes = 2;  // A and B elements
  int align = 0;     // the base's alignment: one 128B swizzle atom (8 rows of 128 bytes)
  int a_stage_bytes = 0, b_stage_bytes = 0;
  int a_offset = 0, b_offset = 0, c_offset = 0;
  int full_bar_offset = 0, empty_bar_offset = 0;  // num_stages mbarriers of 8 bytes each
  int bytes = 0;                                  // the dynamic shared memory to launch with (alignment slack included)

  // wgmma descriptors (PTX ISA "Matrix Descriptor Format"), bytes: the stride byte offset between 8-row (K-major) or
  // 8-k-row (MN-major) core-matrix groups, and the leading byte offset (MN-major: between 64-element MN blocks; a
  // swizzled K-major operand does not use it and takes 16).
  int a_lbo = 0, a_sbo = 0, b_lbo = 0, b_sbo = 0;
  // TMA boxes: A and a K-major B are (block_K, rows), the operand a cluster pair shares half of its rows per CTA; an
  // MN-major B is (64 n, block_K k) per 64-column block.
  Box box_A, box_B;
  int b_boxes = 0;  // boxes per B stage (MN-major: block_N / 64; K-major: 1)
  // Stream-K: a CTA's workspace slot holds one partial tile, each consumer's accumulator in register order so that
  // its threads write and read it as whole 16-byte chunks, a warp 512 contiguous bytes: (thread, chunk of 4
  // registers, consumer) -> float4 index in the slot.
  Layout partial;
  int partial_floats = 0;  // one slot: block_M x block_N
};

TL_HOST_DEVICE constexpr GemmWgmmaPlan make_plan(const GemmWgmmaConfig& c) {
  GemmWgmmaPlan p;
  // A consumer's accumulator: m64 x wgmma_n (block_N, or half of it in a 192 x 192 tile).
  static_cast<GemmAccStorePlan&>(p) = make_acc_store_plan(c.wgmma_n(), c.out_dtype, c.tma_store, c.c_split);
  if (p.c_swizzle != 0) p.c_tile_bytes /= c.c_split;  // whole sub-tiles a part (gemm.fp8's c_split)
  p.in_bytes = 2;
  p.smem_A = smem_layout(SmemSwizzle::b128, p.in_bytes, c.block_M, c.block_K);
  p.smem_B = smem_layout(SmemSwizzle::b128, p.in_bytes, c.block_N, c.block_K, c.trans_B ? Major::K : Major::MN);

  p.align = p.smem_A.period() * p.in_bytes;
  p.a_stage_bytes = p.smem_A.cosize() * p.in_bytes;
  p.b_stage_bytes = p.smem_B.cosize() * p.in_bytes;
  p.a_offset = 0;
  p.b_offset = p.a_offset + c.num_stages * p.a_stage_bytes;
  p.c_offset = p.b_offset + c.num_stages * p.b_stage_bytes;
  p.full_bar_offset = p.c_offset + c.consumers() * p.c_tile_bytes;
  p.empty_bar_offset = p.full_bar_offset + 8 * c.num_stages;
  p.bytes = p.empty_bar_offset + 8 * c.num_stages + p.align;

  // Read off the layouts: the distance from row (k-row) 0 to 8, and for MN-major from n 0 to 64.
  p.a_lbo = 16;
  p.a_sbo = p.smem_A(8, 0) * p.in_bytes;
  p.b_lbo = c.trans_B ? 16 : p.smem_B(64, 0) * p.in_bytes;
  p.b_sbo = (c.trans_B ? p.smem_B(8, 0) : p.smem_B(0, 8)) * p.in_bytes;

  const int span = swizzle_bytes(SmemSwizzle::b128);
  p.box_A = {span / p.in_bytes, c.block_M / c.cluster_N};
  p.box_B = {span / p.in_bytes, c.trans_B ? c.block_N / c.cluster_M : c.block_K};
  p.b_boxes = c.trans_B ? 1 : c.block_N / p.box_B.inner;
  p.partial = make_layout(make_shape(128, p.acc.num_values() / 4, c.consumers()));  // stream-K: one chain a consumer
  p.partial_floats = c.block_M * c.block_N;
  return p;
}

// Every accumulator register's place relative to its thread's register 0 (thread 0's place: at[v]), and that place's
// offset in the staging tile, as constants: what the kernel's unrolled epilogue loops read. Register v of thread t
// is at P.acc(t, 0) + at[v], and its staging offset is the thread's joined with these (gemm_wgmma.cuh; the plan
// tests check both for every t and v).
struct GemmWgmmaAccTable {
  TileCoord at[128];
  int staging[128];
};

TL_HOST_DEVICE constexpr GemmWgmmaAccTable acc_table(const GemmAccStorePlan& p) {
  GemmWgmmaAccTable t{};
  for (int v = 0; v < p.acc.num_values() && v < 128; ++v) {
    t.at[v] = p.acc(0, v);
    t.staging[v] = p.c_swizzle != 0 ? p.smem_C(t.at[v].row, t.at[v].col) : t.at[v].row * p.c_cols + t.at[v].col;
  }
  return t;
}

#if !TL_DEVICE_CODE

// "tl::gemm_wgmma<tl::GemmWgmmaConfig{.block_M = 128, ...}>": designated initializers, so the compiler checks every
// field's name and order.
inline std::string name_expression(const GemmWgmmaConfig& c) {
  // Stream-K has an entry of its own (two more parameters: the workspace and its flags); data-parallel keeps
  // gemm_wgmma's parameters, so its code is what it was.
  ConfigName name(c.stream_k ? "gemm_wgmma_stream_k" : "gemm_wgmma", "GemmWgmmaConfig");
  name
      .field("block_M", c.block_M)
      .field("block_N", c.block_N)
      .field("block_K", c.block_K)
      .field("num_stages", c.num_stages)
      .field("panel", c.panel)
      .field("raster_n", c.raster_n)
      .field("tma_store", c.tma_store)
      .field("cluster_M", c.cluster_M)
      .field("cluster_N", c.cluster_N)
      .field("bf16", c.bf16)
      .field("trans_B", c.trans_B)
      .raw("out_dtype", gemm_detail::out_type_source(c.out_dtype))
      .field("stream_k", c.stream_k);
  if (c.c_split != 1) name.field("c_split", c.c_split);
  if (c.pingpong) name.field("pingpong", c.pingpong);
  return name.str();
}

inline std::vector<std::string> gemm_wgmma_probe_names() {
  return TL_PROBE_NAMES(TL_GEMM_WGMMA_PROBES);
}

#endif  // !TL_DEVICE_CODE

}  // namespace tl
