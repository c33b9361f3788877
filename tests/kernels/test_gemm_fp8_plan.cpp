// gemm.fp8's plan and spec against what TMA, wgmma and the scales need: tiles as SWIZZLE_128B writes them, canonical
// wgmma descriptors, the k32 accumulator atoms and their chains, aligned disjoint regions, refusals that say what to
// fix, a name per config, and a float64 reference that a scale from the wrong row, column or block cannot pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gemm/gemm_fp8_plan.hpp"
#include "library/library.hpp"
#include "tests/kernels/gemm_plan_checks.hpp"
#include "tests/support/scratch_jit.hpp"
#include "tile/atom_registry.hpp"
#include "tile/layout_spec.hpp"
#include "tile/wgmma_ops.cuh"

namespace tl {
namespace {

using gemm_detail::kOutBf16;
using gemm_detail::kOutF32;
using gemm_detail::kScaleBlock;
using gemm_detail::kScaleRow;
using gemm_detail::kScaleTensor;
using test::expect_bijective_chunks;
using test::Region;
using test::tma_sw128;
using KV = std::map<std::string, std::string>;

// Every tile shape and chain width the spec accepts, each scaling (the block scales add their slots), both outputs, with and without the TMA-store epilogue, its staging tile whole or in
// two parts (num_stages only moves offsets: the regions test varies it).
std::vector<GemmFp8Config> all_configs() {
  std::vector<GemmFp8Config> out;
  for (int bm : {64, 128})
    for (int bn : {64, 112, 128, 192, 256})
      for (int wn : {64, 112, 128, 192, 256})
        for (auto sc : {kScaleTensor, kScaleRow, kScaleBlock})
          for (auto dt : {kOutBf16, kOutF32})
            for (bool tma_store : {true, false})
              for (int split : {1, 2, 4})
                // 112 columns (cuBLASLt's small-M tile): tensor and row scales, the staging tile whole (plain rows
                // of 224 bytes for a 16-bit C, 64-byte swizzled sub-tiles for f32).
                if (bn % wn == 0 && (split == 1 || tma_store) &&
                    (bn / split % (128 / gemm_detail::out_bytes(dt)) == 0 || (bn == 112 && split == 1)) &&
                    (bn != 112 || sc != kScaleBlock))
                  out.push_back({.block_M = bm, .block_N = bn, .wgmma_N = wn, .tma_store = tma_store, .scaling = sc,
                                 .out_dtype = dt, .c_split = split});
  // Block scales by TMA (their slots hold 4 k blocks a row), and with scale_A M-major (its slot one k block's rows),
  // by cp.async and by TMA.
  for (std::size_t i = 0, n = out.size(); i < n; ++i)
    if (out[i].scaling == kScaleBlock) {
      for (int v = 1; v < 4; ++v) {
        out.push_back(out[i]);
        out.back().scale_tma = v & 1;
        out.back().scale_a_mn = v & 2;
      }
    }
  // Row scales staged in the consumers' shared slots.
  for (std::size_t i = 0, n = out.size(); i < n; ++i)
    if (out[i].scaling == kScaleRow) {
      out.push_back(out[i]);
      out.back().scale_stage = true;
    }
  return out;
}

std::string describe(const GemmFp8Config& c) { return name_expression(c); }

// [SECTION] shared-memory tiles

// A and B: one TMA box each, (128 k, rows) of 1-byte elements at the stage's start; element (row, k) lands at
// row * 128 + k, swizzled. The C staging tile as gemm.wgmma's (the same epilogue).
TEST(GemmFp8Plan, TilesAreWhatTmaSwizzle128BWrites) {
  for (const GemmFp8Config& c : all_configs()) {
    SCOPED_TRACE(describe(c));
    const GemmFp8Plan p = make_plan(c);
    ASSERT_TRUE(p.smem_A.ok() && p.smem_B.ok() && p.smem_C.ok());
    EXPECT_EQ(p.in_bytes, 1);
    for (int r = 0; r < c.block_M; ++r)
      for (int k = 0; k < c.block_K; ++k) ASSERT_EQ(p.smem_A(r, k), tma_sw128(r * 128 + k)) << "A row " << r << " k " << k;
    for (int n = 0; n < c.block_N; ++n)
      for (int k = 0; k < c.block_K; ++k) ASSERT_EQ(p.smem_B(n, k), tma_sw128(n * 128 + k)) << "B row " << n << " k " << k;
    // The staging tile in 128-byte swizzled sub-tiles at every width but 112 (16-bit C: plain 224-byte rows, which
    // leave smem_C unused; f32: 64-byte sub-tiles, gemm.wgmma's 96-column path: test_gemm_wgmma_plan).
    EXPECT_EQ(p.c_swizzle, c.block_N != 112 ? 128 : p.c_bytes == 2 ? 0 : 64);
    if (p.c_swizzle == 128) test::expect_staging_tile_is_tma_store_boxes(p, c.block_N);
    struct Tile {
      const SwizzledLayout& layout;
      int rows, cols, elem_bytes;
    };
    for (const Tile& t : {Tile{p.smem_A, c.block_M, c.block_K, 1}, Tile{p.smem_B, c.block_N, c.block_K, 1},
                          Tile{p.smem_C, 64, c.block_N, p.c_bytes}})
      if (&t.layout != &p.smem_C || p.c_swizzle != 0) expect_bijective_chunks(t.layout, t.rows, t.cols, t.elem_bytes, false);
  }
}

// PTX ISA, "Matrix Descriptor Format", 128-byte swizzle, K-major: rows of 128 bytes, 8-row core-matrix groups 1024
// bytes apart (stride byte offset), the leading byte offset unused (16). wgmma k32 of e4m3 starts 32 bytes further;
// consumer c's A starts at row 64 c and chain j's B at row wgmma_N j, rows that start a swizzle atom (where the
// offset is the unswizzled one a descriptor wants): the kernel steps the start addresses by these strides.
TEST(GemmFp8Plan, DescriptorsAndChainStartsAreCanonical) {
  for (const GemmFp8Config& c : all_configs()) {
    SCOPED_TRACE(describe(c));
    const GemmFp8Plan p = make_plan(c);
    for (const auto& [sbo, lbo] : {std::pair{p.a_sbo, p.a_lbo}, std::pair{p.b_sbo, p.b_lbo}}) {
      EXPECT_EQ(sbo, 1024);
      EXPECT_EQ(lbo, 16);
    }
    EXPECT_EQ(p.smem_A(0, 32) + p.smem_B(0, 32), 2 * 32);
    for (int kk = 0; kk < c.block_K / 32; ++kk) {
      for (int wg = 0; wg < c.consumers(); ++wg) {
        EXPECT_EQ(p.smem_A(64 * wg, 32 * kk), wg * p.smem_A(64, 0) + 32 * kk);
        EXPECT_EQ(p.smem_A(64 * wg, 32 * kk), p.smem_A.layout()(64 * wg, 32 * kk)) << "not an atom's first row";
      }
      for (int j = 0; j < c.chunks(); ++j) {
        EXPECT_EQ(p.smem_B(c.wgmma_N * j, 32 * kk), j * p.smem_B(c.wgmma_N, 0) + 32 * kk);
        EXPECT_EQ(p.smem_B(c.wgmma_N * j, 32 * kk), p.smem_B.layout()(c.wgmma_N * j, 32 * kk)) << "not an atom's first row";
      }
    }
  }
}

// uniform_desc: the kernel builds a descriptor's low word once per consumer (its rows of stage 0), adds s stages'
// bytes >> 4 for stage s and (chain j's rows + k32 step kk's bytes) >> 4 for each wgmma, with the constant high word
// kSw128DescHi: that must be the descriptor the default builds from the address, for every stage, consumer, chain and
// step, wherever the aligned base lies in the shared memory (the address field must not carry into the next).
TEST(GemmFp8Plan, UniformDescriptorsStepAsTheAddresses) {
  using namespace wgmma_ops;
  for (const GemmFp8Config& c : all_configs()) {
    SCOPED_TRACE(describe(c));
    const GemmFp8Plan p = make_plan(c);
    const unsigned a_wg = p.smem_A(64, 0), a_k = p.smem_A(0, 32), b_chain = p.smem_B(c.wgmma_N, 0), b_k = p.smem_B(0, 32);
    // The base: the lowest and the highest 1024-byte aligned one that leaves the plan's bytes in the H100's 227 KiB
    // (a plan over it is refused before launch).
    const int top = (227 * 1024 - p.bytes) / 1024 * 1024;
    if (top < 1024) continue;
    for (const unsigned base : {1024u, static_cast<unsigned>(top)}) {
      const unsigned a_base = base + p.a_offset, b_base = base + p.b_offset;
      for (int cons = 0; cons < c.consumers(); ++cons) {
        const unsigned a_lo0 = sw128_desc_lo(a_base + cons * a_wg, p.a_lbo), b_lo0 = sw128_desc_lo(b_base, p.b_lbo);
        for (int s = 0; s < c.num_stages; ++s)
          for (int kk = 0; kk < c.block_K / 32; ++kk) {
            const unsigned a_at = a_base + s * p.a_stage_bytes + cons * a_wg + kk * a_k;
            ASSERT_EQ(desc_of(a_lo0 + s * (p.a_stage_bytes >> 4) + kk * (a_k >> 4), kSw128DescHi),
                      smem_desc_sw128(a_at, p.a_lbo, p.a_sbo))
                << "consumer " << cons << " stage " << s << " k32 " << kk;
            for (int j = 0; j < c.chunks(); ++j) {
              const unsigned b_at = b_base + s * p.b_stage_bytes + j * b_chain + kk * b_k;
              ASSERT_EQ(desc_of(b_lo0 + s * (p.b_stage_bytes >> 4) + (j * b_chain + kk * b_k) / 16, kSw128DescHi),
                        smem_desc_sw128(b_at, p.b_lbo, p.b_sbo))
                  << "chain " << j << " stage " << s << " k32 " << kk;
            }
          }
      }
    }
  }
}

// [SECTION] the accumulator, the chains, the scales' indices

// The accumulator is the wgmma m64nNk32 D atom of the tile, a chain's partial sums that of wgmma_N columns, and
// chain j's register i is the accumulator's register j * wgmma_N / 2 + i (the kernel promotes part[i] into it).
// The promotion picks a register's scales by its row half and 128-column block of B from the table of thread 0's
// registers (AT.at[v]): the same for every thread, since a thread's own offset (< 8 rows, < 8 columns) crosses
// neither.
TEST(GemmFp8Plan, ChainsAreSlicesOfTheAccumulatorAtom) {
  for (int bn : {64, 128, 256})
    for (int wn : {64, 128, 256}) {
      if (bn % wn != 0) continue;
      const GemmFp8Plan p = make_plan(GemmFp8Config{.block_N = bn, .wgmma_N = wn});
      SCOPED_TRACE("block_N " + std::to_string(bn) + " wgmma_N " + std::to_string(wn));
      const std::string acc_atom = "wgmma.m64n" + std::to_string(bn) + "k32.f32.C";
      const std::string part_atom = "wgmma.m64n" + std::to_string(wn) + "k32.f32.C";
      EXPECT_EQ(fragment_spec(p.acc, acc_atom).value_or("none"), acc_atom);
      EXPECT_EQ(fragment_spec(p.chunk, part_atom).value_or("none"), part_atom);
      const int np = p.chunk.num_values();
      ASSERT_EQ(np * (bn / wn), p.acc.num_values());
      const GemmWgmmaAccTable at = acc_table(p);
      const int row_half = at.at[p.acc_pair].row;
      EXPECT_EQ(row_half, 8);
      for (int t = 0; t < 128; ++t) {
        const TileCoord e0 = p.acc(t, 0);
        for (int j = 0; j < bn / wn; ++j)
          for (int i = 0; i < np; ++i) {
            const TileCoord part = p.chunk(t, i);
            ASSERT_EQ(p.acc(t, np * j + i), (TileCoord{part.row, part.col + wn * j})) << "t " << t << " j " << j;
          }
        for (int v = 0; v < p.acc.num_values(); ++v) {
          const TileCoord e = p.acc(t, v);
          ASSERT_EQ(e.row - e0.row, at.at[v].row) << "t " << t << " v " << v;
          ASSERT_TRUE(at.at[v].row == 0 || at.at[v].row == row_half);
          ASSERT_EQ(e.col / p.scale_block, at.at[v].col / p.scale_block) << "t " << t << " v " << v;
          ASSERT_LT(at.at[v].col / p.scale_block, p.sf_b_blocks);
        }
      }
    }
}

// [SECTION] shared memory, boxes, bytes

TEST(GemmFp8Plan, RegionsAreDisjointAlignedAndBoxesFillTheStages) {
  for (GemmFp8Config c : all_configs())
    for (int stages : {2, 3, 5}) {
      c.num_stages = stages;
      SCOPED_TRACE(describe(c));
      const GemmFp8Plan p = make_plan(c);
      EXPECT_EQ(p.align, 1024);  // the 128B swizzle repeats every 8 rows of 128 bytes
      EXPECT_EQ(p.a_stage_bytes, c.block_M * c.block_K);
      EXPECT_EQ(p.b_stage_bytes, c.block_N * c.block_K);
      EXPECT_EQ(p.c_tile_bytes, c.tma_store ? 64 * c.block_N / c.c_split * p.c_bytes : 0);
      // The 128-column blocks of B's scales a tile meets: 192 columns start at column 0 or 64 of one.
      EXPECT_EQ(p.sf_b_blocks, c.block_N == 192 ? 2 : std::max(1, c.block_N / 128));
      if (c.scaling == kScaleBlock) {
        EXPECT_EQ(p.sf_k, c.scale_tma ? 4 : 1);
        EXPECT_EQ(p.sf_a_k, c.scale_tma && !c.scale_a_mn ? 4 : 1);
        EXPECT_EQ(p.sf_b_offset, 4 * p.sf_a_k * c.block_M);  // scale_B after block_M rows of scale_A
        EXPECT_GE(p.sf_stage_bytes, p.sf_b_offset + 4 * p.sf_k * p.sf_b_blocks);
        EXPECT_EQ(p.sf_stage_bytes % 16, 0);
        // scale_tma: the slot is the two TMA boxes exactly, each 16-byte aligned (scale_B's after block_M rows).
        if (c.scale_tma) {
          // Each box's shared-memory address 128-byte aligned (TMA's tensor copies).
          EXPECT_EQ(p.sf_stage_bytes % 128, 0);
          EXPECT_EQ(p.sf_offset % 128, 0);
          EXPECT_EQ(4 * p.box_SA.inner * p.box_SA.outer % 128, 0);
          EXPECT_EQ(p.sf_stage_bytes,
                    (4 * (p.box_SA.inner * p.box_SA.outer + p.box_SB.inner * p.box_SB.outer) + 127) / 128 * 128);
          // scale_A's box: 4 k blocks (16 bytes) of block_M rows, or M-major one k block's block_M rows.
          EXPECT_EQ(p.box_SA.inner, c.scale_a_mn ? c.block_M : 4);
          EXPECT_EQ(p.box_SA.outer, c.scale_a_mn ? 1 : c.block_M);
          EXPECT_EQ(p.sf_b_offset, 4 * p.box_SA.inner * p.box_SA.outer);
          EXPECT_EQ(p.box_SB.outer, p.sf_b_blocks);
          // The full barrier's expected bytes: the two boxes, unpadded.
          EXPECT_EQ(p.sf_tma_bytes, 4 * (p.box_SA.inner * p.box_SA.outer + p.box_SB.inner * p.box_SB.outer));
        } else {
          EXPECT_EQ(p.sf_tma_bytes, 0);
        }
      } else {
        EXPECT_EQ(p.sf_stage_bytes, 0);
        EXPECT_EQ(p.sf_tma_bytes, 0);
      }
      // TMA boxes (loads and stores) with SWIZZLE_128B start 1024-byte aligned; the scale slots and barriers follow.
      std::vector<Region> tiles, others;
      for (int s = 0; s < stages; ++s) {
        tiles.push_back({p.a_offset + s * p.a_stage_bytes, p.a_offset + (s + 1) * p.a_stage_bytes});
        tiles.push_back({p.b_offset + s * p.b_stage_bytes, p.b_offset + (s + 1) * p.b_stage_bytes});
      }
      for (int wg = 0; wg < c.consumers() && c.tma_store; ++wg)
        tiles.push_back({p.c_offset + wg * p.c_tile_bytes, p.c_offset + (wg + 1) * p.c_tile_bytes});
      for (int s = 0; s < stages && c.scaling == kScaleBlock; ++s)
        others.push_back({p.sf_offset + s * p.sf_stage_bytes, p.sf_offset + (s + 1) * p.sf_stage_bytes});
      EXPECT_EQ(p.sf_offset % 16, 0);  // cp.async of 4 bytes needs 4; the slots stay 16-byte aligned
      // scale_stage: per consumer and tile parity block_N + 64 floats (the epilogue reads column pairs as 8 bytes).
      EXPECT_EQ(p.rs_slot_bytes, !c.scale_stage                ? 0
                                 : c.scaling == kScaleRow    ? 4 * (c.block_N + 64)
                                 : c.scaling == kScaleTensor ? 8 * 128
                                                             : 0);
      EXPECT_EQ(p.rs_offset % 8, 0);
      for (int slot = 0; slot < 2 * c.consumers() && p.rs_slot_bytes > 0; ++slot)
        others.push_back({p.rs_offset + slot * p.rs_slot_bytes, p.rs_offset + (slot + 1) * p.rs_slot_bytes});
      others.push_back({p.full_bar_offset, p.full_bar_offset + 8 * stages});
      others.push_back({p.empty_bar_offset, p.empty_bar_offset + 8 * stages});
      EXPECT_EQ(p.full_bar_offset % 8, 0);
      test::expect_disjoint_regions(tiles, others, p.align, p.bytes);
      // What one stage's full barrier expects: one box of A and one of B, rows of 128 bytes.
      EXPECT_EQ(p.box_A.inner * p.box_A.outer, p.a_stage_bytes);
      EXPECT_EQ(p.box_B.inner * p.box_B.outer, p.b_stage_bytes);
      EXPECT_EQ(p.box_A.inner, 128);
      // The store's box: one 128-byte (64-byte) swizzled sub-tile, or a whole plain row (112 16-bit columns).
      EXPECT_EQ(p.box_C.inner * p.c_bytes, p.c_swizzle == 0 ? c.block_N * p.c_bytes : p.c_swizzle);
    }
}

TEST(GemmFp8Plan, DefaultsFitTheH100) {
  const int optin = limits_for_arch("sm_90a").smem_per_block_optin;
  EXPECT_LE(make_plan(GemmFp8Config{}).bytes, optin);
  EXPECT_LE(make_plan(GemmFp8Config{.scaling = kScaleBlock}).bytes, optin);
  EXPECT_LE(make_plan(GemmFp8Config{.num_stages = 4, .tma_store = false, .out_dtype = kOutF32}).bytes, optin);
  // A fourth stage fits beside 128 x 256 tiles once the staging tile is stored in two parts (not with block scales'
  // slots: in four parts), and beside 128 x 192 tiles whole.
  EXPECT_LE(make_plan(GemmFp8Config{.num_stages = 4, .c_split = 2}).bytes, optin);
  EXPECT_GT(make_plan(GemmFp8Config{.num_stages = 4, .scaling = kScaleBlock, .c_split = 2}).bytes, optin);
  EXPECT_LE(make_plan(GemmFp8Config{.num_stages = 4, .scaling = kScaleBlock, .c_split = 4}).bytes, optin);
  EXPECT_GT(make_plan(GemmFp8Config{.num_stages = 4}).bytes, optin);
  EXPECT_LE(make_plan(GemmFp8Config{.block_N = 192, .wgmma_N = 192, .num_stages = 4}).bytes, optin);
  // Row scales' slots (scale_stage) beside the row defaults: 128 x 256 with 3 stages, 128 x 192 with 4.
  EXPECT_LE(make_plan(GemmFp8Config{.scaling = kScaleRow, .scale_stage = true}).bytes, optin);
  EXPECT_LE(make_plan(GemmFp8Config{.block_N = 192, .wgmma_N = 192, .num_stages = 4, .scaling = kScaleRow,
                                    .scale_stage = true}).bytes, optin);
  // 3 stages of 128 x 128 + 256 x 128 e4m3 tiles and a 128 x 256 f32 staging tile do not (the spec refuses it).
  EXPECT_GT(make_plan(GemmFp8Config{.out_dtype = kOutF32}).bytes, optin);
}

// [SECTION] the spec

const KernelSpec& fp8_spec() { return *library_registry().find("gemm.fp8").value(); }

KernelInstance instance(const KV& problem, const KV& config) {
  auto inst = instantiate(fp8_spec(), problem, config, limits_for_arch("sm_90a"));
  EXPECT_TRUE(inst.ok()) << inst.status().message();
  return inst.value();
}

void expect_refused(const KV& problem, const KV& config, const std::vector<std::string>& words) {
  auto inst = instantiate(fp8_spec(), problem, config, limits_for_arch("sm_90a"));
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(inst.status().code(), ErrorCode::unsupported);
  for (const auto& w : words) EXPECT_NE(inst.status().message().find(w), std::string::npos) << inst.status().message();
}

TEST(GemmFp8Spec, RefusalsNameWhatToFix) {
  expect_refused({{"K", "200"}}, {}, {"K=200", "multiple of 16", "pad K"});
  expect_refused({}, {{"block_N", "64"}, {"wgmma_N", "128"}}, {"wgmma_N=128", "block_N=64"});
  expect_refused({{"scaling", "block"}}, {{"fast_accum", "true"}}, {"fast_accum=true", "block scales", "scaling=tensor"});
  expect_refused({}, {{"wgmma_N", "256"}}, {"block_N=256", "wgmma_N=256", "wgmma_N=128", "fast_accum=true"});
  // Two partial-sum buffers of 64 beside 128 accumulators is 256 registers; chains alternate between the buffers.
  expect_refused({}, {{"overlap", "true"}}, {"overlap=true", "wgmma_N=128", "wgmma_N=64"});
  expect_refused({}, {{"overlap", "true"}, {"fast_accum", "true"}}, {"overlap=true", "fast_accum=true", "overlap=false"});
  expect_refused({}, {{"overlap", "true"}, {"block_N", "64"}, {"wgmma_N", "64"}}, {"overlap=true", "even", "block_N=64"});
  EXPECT_TRUE(instantiate(fp8_spec(), {}, {{"wgmma_N", "64"}, {"overlap", "true"}}, limits_for_arch("sm_90a")).ok());
  // A in registers with overlapped chains (within each k block); fast accumulation promotes nothing.
  EXPECT_TRUE(instantiate(fp8_spec(), {{"scaling", "block"}},
                          {{"a_regs", "true"}, {"wgmma_N", "64"}, {"overlap", "true"}}, limits_for_arch("sm_90a"))
                  .ok());
  expect_refused({}, {{"a_regs", "true"}, {"fast_accum", "true"}}, {"a_regs=true", "fast_accum=true", "a_regs=false"});
  // Turns between two promoting consumers: not on one consumer, beside overlap, or without promotion.
  expect_refused({}, {{"ping_pong", "true"}, {"block_M", "64"}}, {"ping_pong=true", "block_M=64", "ping_pong=false"});
  expect_refused({}, {{"ping_pong", "true"}, {"wgmma_N", "64"}, {"overlap", "true"}},
                 {"ping_pong=true", "overlap=true"});
  expect_refused({}, {{"ping_pong", "true"}, {"fast_accum", "true"}}, {"ping_pong=true", "fast_accum=true"});
  expect_refused({{"N", "130"}}, {{"tma_store", "true"}}, {"tma_store=true", "N=130", "set tma_store=false"});
  // scale_a_layout lays out block scales only: tensor and row scales run as without it.
  EXPECT_EQ(instance({{"scaling", "row"}, {"scale_a_layout", "mn"}}, {}).name_expression,
            instance({{"scaling", "row"}}, {}).name_expression);
  EXPECT_EQ(instance({{"scale_a_layout", "mn"}}, {}).name_expression, instance({}, {}).name_expression);
  expect_refused({}, {{"num_stages", "5"}}, {"5 stages", "shared memory", "lower num_stages"});
  expect_refused({{"out_dtype", "f32"}}, {{"tma_store", "true"}}, {"staging tile", "set tma_store=false"});
  // 192-column tiles: one chain of 96 partial sums beside 96 accumulators, also across two blocks of B's scales.
  EXPECT_TRUE(instantiate(fp8_spec(), {{"scaling", "block"}}, {{"block_N", "192"}, {"wgmma_N", "192"}},
                          limits_for_arch("sm_90a")).ok());
  // The staging tile in parts: only the TMA-store epilogue stages, in whole 128-byte sub-tiles.
  expect_refused({}, {{"c_split", "2"}, {"tma_store", "false"}}, {"c_split=2", "tma_store", "c_split=1"});
  expect_refused({}, {{"c_split", "2"}, {"block_N", "64"}, {"wgmma_N", "64"}}, {"c_split=2", "32", "64", "c_split=1"});
  EXPECT_TRUE(instantiate(fp8_spec(), {}, {{"c_split", "2"}, {"num_stages", "4"}}, limits_for_arch("sm_90a")).ok());
  // Auto's 192-column tiles (8192^3) split in two leave 96 columns: the refusal names the width in effect.
  expect_refused({{"M", "8192"}, {"N", "8192"}, {"K", "8192"}}, {{"c_split", "2"}},
                 {"c_split=2", "96", "block_N=192", "block_N=256"});
  // K need not be a multiple of 128: the last k block is partial (TMA zero-fills it), also with block scales.
  EXPECT_TRUE(instantiate(fp8_spec(), {{"K", "208"}, {"scaling", "block"}}, {}, limits_for_arch("sm_90a")).ok());
  // Fast accumulation keeps no partial sums: whole-tile chains fit.
  EXPECT_TRUE(instantiate(fp8_spec(), {}, {{"wgmma_N", "256"}, {"fast_accum", "true"}}, limits_for_arch("sm_90a")).ok());
}

// block_N=0 and wgmma_N=0 (auto): 128 x 192 tiles in one chain where they take fewer tile-clocks on 132 SMs (8192^3:
// 21 waves of 192-column tiles against 16 of 256; 4096^3: 6 against 4) for tensor and row scales, else 256 columns
// in 128-column chains, or one 256-column chain with fast accumulation.
TEST(GemmFp8Spec, AutoWidthsFollowTheWaves) {
  // The widths the kernel is built with, read from its name expression (designated initializers).
  auto widths = [](const KV& problem, const KV& config) {
    const std::string name = instance(problem, config).name_expression;
    auto field = [&](const std::string& f) {
      const auto at = name.find("." + f + " = ");
      return at == std::string::npos ? -1 : std::stoi(name.substr(at + f.size() + 4));
    };
    return std::pair{field("block_N"), field("wgmma_N")};
  };
  const KV big = {{"M", "8192"}, {"N", "8192"}, {"K", "8192"}};
  EXPECT_EQ(widths(big, {}), std::pair(192, 192));
  EXPECT_EQ(widths({{"M", "16384"}, {"N", "16384"}, {"K", "4096"}, {"scaling", "row"}}, {}), std::pair(192, 192));
  EXPECT_EQ(widths({}, {}), std::pair(256, 128));  // 4096^3
  EXPECT_EQ(widths({{"M", "4096"}, {"N", "7168"}, {"K", "2048"}}, {}), std::pair(256, 128));
  KV block = big;
  block["scaling"] = "block";
  EXPECT_EQ(widths(block, {}), std::pair(256, 128));  // with A from registers (a_regs=auto)
  EXPECT_EQ(widths(big, {{"a_regs", "true"}}), std::pair(256, 128));
  EXPECT_EQ(widths(big, {{"fast_accum", "true"}}), std::pair(256, 256));
  EXPECT_EQ(widths(big, {{"wgmma_N", "64"}}), std::pair(256, 64));
  EXPECT_EQ(widths(big, {{"block_M", "64"}}), std::pair(256, 128));
  EXPECT_EQ(widths(big, {{"block_N", "128"}}), std::pair(128, 128));
  EXPECT_EQ(widths(big, {{"block_N", "64"}}), std::pair(64, 64));
  // Small M (N 7168): where the wide tiles fill under one wave of 132 SMs (M = 128: 38 tiles of 128 x 192, 28 of
  // 128 x 256), the narrow width with the fewest tile-clocks: 64 (112 tiles) at one tile row, 128 (112) at two;
  // at eight tile rows (M = 1000: 224 tiles of 256 columns, two waves) the wide tiles stay.
  for (const char* scaling : {"tensor", "row", "block"}) {
    SCOPED_TRACE(scaling);
    auto small = [&](const char* m) { return KV{{"M", m}, {"N", "7168"}, {"K", "2048"}, {"scaling", scaling}}; };
    EXPECT_EQ(widths(small("128"), {}), std::pair(64, 64));
    EXPECT_EQ(widths(small("64"), {}), std::pair(64, 64));
    EXPECT_EQ(widths(small("200"), {}), std::pair(128, 128));
    EXPECT_EQ(widths(small("256"), {}), std::pair(128, 128));
    EXPECT_EQ(widths(small("512"), {}), std::pair(256, 128));  // 112 tiles of 256, 2 waves of 128
    EXPECT_EQ(widths(small("1000"), {}), std::pair(256, 128));
    EXPECT_EQ(widths(small("128"), {{"fast_accum", std::string(scaling) == "block" ? "false" : "true"}}),
              std::pair(64, 64));
  }
  // What the rule may not change: a chain width or block_M the user set keeps 256 columns.
  EXPECT_EQ(widths({{"M", "128"}, {"N", "7168"}, {"K", "2048"}}, {{"wgmma_N", "64"}}), std::pair(256, 64));
  EXPECT_EQ(widths({{"M", "128"}, {"N", "7168"}, {"K", "2048"}}, {{"block_M", "64"}}), std::pair(256, 128));
}

// ping_pong is opt-in: the defaults keep each consumer on its own chain, also at small M's 128 x 64 tiles.
TEST(GemmFp8Spec, PingPongOnlyWhenAsked) {
  auto turns = [](const KV& problem, const KV& config) {
    return instance(problem, config).name_expression.find(".ping_pong = true") != std::string::npos;
  };
  const KV small = {{"M", "128"}, {"N", "7168"}, {"K", "2048"}, {"scaling", "block"}};
  EXPECT_FALSE(turns(small, {}));
  EXPECT_TRUE(turns(small, {{"ping_pong", "true"}}));
  EXPECT_FALSE(turns({{"scaling", "block"}}, {}));  // 4096^3: 128 x 256 tiles
  EXPECT_TRUE(turns({{"scaling", "block"}}, {{"ping_pong", "true"}}));
}

// uniform_desc=auto: on for the 128 x 256 tiles of two 128-column chains with A from shared memory and the promotion
// (every scaling at 4096^3 and 4096 x 7168 x 2048, block scales at 8192^3) and the 128 x 192 tiles of one chain with
// tensor and row scales (8192^3; session 46), off on 128 x 192 block-scaled tiles, on the narrow tiles of small M, with
// fast accumulation, A from registers, overlapped chains and one consumer; true / false force it.
TEST(GemmFp8Spec, UniformDescriptorsOnTheWideTwoChainTiles) {
  auto uniform = [](const KV& problem, const KV& config) {
    return instance(problem, config).name_expression.find(".uniform_desc = true") != std::string::npos;
  };
  for (const char* scaling : {"tensor", "row", "block"}) {
    SCOPED_TRACE(scaling);
    const KV p4096 = {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}, {"scaling", scaling}};
    const KV p7168 = {{"M", "4096"}, {"N", "7168"}, {"K", "2048"}, {"scaling", scaling}};
    const KV small = {{"M", "256"}, {"N", "7168"}, {"K", "2048"}, {"scaling", scaling}};
    EXPECT_TRUE(uniform(p4096, {}));
    EXPECT_TRUE(uniform(p7168, {}));
    EXPECT_FALSE(uniform(p4096, {{"uniform_desc", "false"}}));
    EXPECT_FALSE(uniform(small, {}));  // 128 x 128 tiles
    EXPECT_TRUE(uniform(small, {{"uniform_desc", "true"}}));
    EXPECT_FALSE(uniform(p4096, {{"block_M", "64"}}));
    EXPECT_EQ(uniform(p4096, {{"block_N", "192"}}), std::string(scaling) != "block");
    EXPECT_FALSE(uniform(p4096, {{"wgmma_N", "64"}}));
    EXPECT_FALSE(uniform(p4096, {{"wgmma_N", "64"}, {"overlap", "true"}}));
    EXPECT_FALSE(uniform(p4096, {{"a_regs", "true"}}));
    if (std::string(scaling) != "block") {
      EXPECT_FALSE(uniform(p4096, {{"fast_accum", "true"}, {"wgmma_N", "128"}}));
    }
  }
  const KV p8192 = {{"M", "8192"}, {"N", "8192"}, {"K", "8192"}, {"scaling", "tensor"}};
  EXPECT_TRUE(uniform(p8192, {}));  // 128 x 192 tiles
  EXPECT_TRUE(uniform({{"M", "8192"}, {"N", "8192"}, {"K", "8192"}, {"scaling", "row"}}, {}));
  EXPECT_TRUE(uniform({{"M", "8192"}, {"N", "8192"}, {"K", "8192"}, {"scaling", "block"}}, {}));  // 128 x 256
}

// scale_early and prefetch_maps: their auto is on together only per-tensor on the 64 x 64 tiles of block_M's auto at
// M <= 64 (on an H200 1.03-1.04x there; scale_early lost 4-7% at M 128, prefetch_maps within noise elsewhere): true
// turns each on alone, scale_early only with tensor scales (true is refused for row and block scales), prefetch_maps
// with any; the kernel without them is main's.
TEST(GemmFp8Spec, EarlyScalesAndMapPrefetchOnlyWhenAsked) {
  auto has = [](const KV& problem, const KV& config, const char* field) {
    return instance(problem, config).name_expression.find(std::string(".") + field + " = true") != std::string::npos;
  };
  for (const char* m : {"1", "32", "64"}) {
    SCOPED_TRACE(m);
    const KV t = {{"M", m}, {"N", "7168"}, {"K", "2048"}, {"scaling", "tensor"}};
    EXPECT_TRUE(has(t, {}, "scale_early"));
    EXPECT_TRUE(has(t, {}, "prefetch_maps"));
    EXPECT_FALSE(has(t, {{"block_M", "128"}}, "scale_early"));
    EXPECT_FALSE(has(t, {{"block_M", "128"}}, "prefetch_maps"));
    EXPECT_FALSE(has(t, {{"scale_early", "false"}}, "scale_early"));
    EXPECT_TRUE(has(t, {{"scale_early", "false"}}, "prefetch_maps"));
    const KV r = {{"M", m}, {"N", "7168"}, {"K", "2048"}, {"scaling", "row"}};
    EXPECT_FALSE(has(r, {}, "prefetch_maps"));
  }
  for (const char* m : {"65", "128", "256", "4096"}) {
    SCOPED_TRACE(m);
    const KV t = {{"M", m}, {"N", "7168"}, {"K", "2048"}, {"scaling", "tensor"}};
    EXPECT_FALSE(has(t, {}, "scale_early"));
    EXPECT_FALSE(has(t, {}, "prefetch_maps"));
    EXPECT_TRUE(has(t, {{"scale_early", "true"}}, "scale_early"));
    EXPECT_FALSE(has(t, {{"scale_early", "true"}}, "prefetch_maps"));
    EXPECT_TRUE(has(t, {{"block_M", "64"}, {"block_N", "112"}, {"scale_early", "true"}}, "scale_early"));
    EXPECT_TRUE(has(t, {{"fast_accum", "true"}, {"scale_early", "true"}}, "scale_early"));
    EXPECT_TRUE(has(t, {{"prefetch_maps", "true"}}, "prefetch_maps"));
    EXPECT_FALSE(has(t, {{"prefetch_maps", "true"}}, "scale_early"));
    for (const char* scaling : {"row", "block"}) {
      const KV o = {{"M", m}, {"N", "7168"}, {"K", "2048"}, {"scaling", scaling}};
      EXPECT_FALSE(has(o, {}, "scale_early")) << scaling;
      EXPECT_FALSE(has(o, {{"scale_early", "false"}}, "scale_early")) << scaling;
      EXPECT_TRUE(has(o, {{"prefetch_maps", "true"}}, "prefetch_maps")) << scaling;
      expect_refused(o, {{"scale_early", "true"}},
                     {"scale_early=true", std::string("scaling=") + scaling, "scale_early at auto or false"});
    }
  }
  // Off (auto at M > 64, or false): the name (and kernel) of the config before them.
  for (const KV& off : {KV{}, KV{{"scale_early", "false"}, {"prefetch_maps", "false"}}}) {
    const std::string name = instance({}, off).name_expression;
    EXPECT_EQ(name.find("scale_early"), std::string::npos);
    EXPECT_EQ(name.find("prefetch_maps"), std::string::npos);
  }
  // The kernel's predicates: scale_early only with tensor scales, prefetch_maps with any.
  GemmFp8Config c{.scale_early = true, .prefetch_maps = true};
  EXPECT_TRUE(kmajor_scale_early(c));
  EXPECT_TRUE(kmajor_prefetch_maps(c));
  c.scaling = kScaleRow;
  EXPECT_FALSE(kmajor_scale_early(c));
  EXPECT_TRUE(kmajor_prefetch_maps(c));
  c.prefetch_maps = false;
  EXPECT_FALSE(kmajor_prefetch_maps(c));
}

// early_loads (fp8m128t): auto on for tiles of at most 128 columns where the grid is one wave (tiles <= 132: M <= 256
// at N 7168) with tensor or row scales, off at M 257 (114 tiles of 128 x 192), at 4096 x 7168 x 2048 and for block
// scales, and at M 128 with 128 x 256 tiles set by hand; true refused for block scales; the kernel's predicate; the
// two switches timed beside it and taken out (prefetch_b, exit_read) refused by name.
TEST(GemmFp8Spec, EarlyLoadsOnOneWaveGrids) {
  auto name = [](const KV& problem, const KV& config) { return instance(problem, config).name_expression; };
  for (const char* m : {"1", "64", "128", "200", "256", "257", "4096"}) {
    for (const char* scaling : {"tensor", "row", "block"}) {
      SCOPED_TRACE(std::string(m) + " " + scaling);
      const KV p = {{"M", m}, {"N", "7168"}, {"K", "2048"}, {"scaling", scaling}};
      const std::string def = name(p, {});
      const bool one_wave = std::stoi(m) <= 256 && std::string(scaling) != "block";
      EXPECT_EQ(def.find(".early_loads = true") != std::string::npos, one_wave);
      EXPECT_EQ(name(p, {{"early_loads", "false"}}).find("early_loads"), std::string::npos);
      if (!one_wave) {
        EXPECT_EQ(name(p, {{"early_loads", "false"}}), def);
      }
      if (std::string(scaling) == "block") {
        expect_refused(p, {{"early_loads", "true"}}, {"early_loads=true", "scaling=block", "early_loads=false"});
      } else {
        EXPECT_NE(name(p, {{"early_loads", "true"}}).find(".early_loads = true"), std::string::npos);
      }
    }
  }
  const KV m128 = {{"M", "128"}, {"N", "7168"}, {"K", "2048"}};
  EXPECT_EQ(name(m128, {{"block_N", "256"}}).find("early_loads"), std::string::npos);  // 28 tiles, 256 columns
  EXPECT_NE(name(m128, {{"block_N", "128"}}).find(".early_loads = true"), std::string::npos);  // 56 tiles
  EXPECT_NE(name(m128, {{"block_N", "256"}, {"early_loads", "true"}}).find(".early_loads = true"), std::string::npos);
  for (const char* removed : {"prefetch_b", "exit_read"}) {
    auto inst = instantiate(fp8_spec(), m128, {{removed, "false"}}, limits_for_arch("sm_90a"));
    ASSERT_FALSE(inst.ok()) << removed;
    EXPECT_NE(inst.status().message().find(removed), std::string::npos) << inst.status().message();
  }
  GemmFp8Config c{.early_loads = true};
  EXPECT_TRUE(kmajor_early_loads(c));
  c.scaling = kScaleBlock;
  EXPECT_FALSE(kmajor_early_loads(c));
  EXPECT_EQ(fp8_spec().probes[GemmFp8Probe::prologue], "prologue");
  EXPECT_EQ(fp8_spec().probes[GemmFp8Probe::exit], "exit");
}

// block_M=0 (auto): M <= 64 (one tile row) with tensor or row scales takes one consumer's 64 x 64 tiles (112 CTAs at
// N 7168; row scales staged), when the widths, fast_accum, overlap and a_regs are left alone; block scales, M 65 and
// more, and any of those set keep 128 rows (and the widths they had).
TEST(GemmFp8Spec, SmallMRuleTakes64x64TilesAtOneTileRow) {
  auto tile = [](const KV& problem, const KV& config) {
    const KernelInstance k = instance(problem, config);
    const auto m = k.name_expression.find(".block_M = "), n = k.name_expression.find(".block_N = ");
    return std::pair(std::stoi(k.name_expression.substr(m + 11)), std::stoi(k.name_expression.substr(n + 11)));
  };
  auto p = [](const char* m, const char* scaling) {
    return KV{{"M", m}, {"N", "7168"}, {"K", "2048"}, {"scaling", scaling}};
  };
  for (const char* scaling : {"tensor", "row"}) {
    SCOPED_TRACE(scaling);
    for (const char* m : {"1", "16", "33", "64"}) EXPECT_EQ(tile(p(m, scaling), {}), std::pair(64, 64)) << m;
    EXPECT_EQ(tile(p("65", scaling), {}), std::pair(128, 64));
    EXPECT_EQ(tile(p("128", scaling), {}), std::pair(128, 64));
    EXPECT_EQ(tile(p("4096", scaling), {}), std::pair(128, 256));
    EXPECT_EQ(tile(p("64", scaling), {{"block_M", "128"}}), std::pair(128, 64));    // set: kept
    EXPECT_EQ(tile(p("64", scaling), {{"block_M", "64"}}), std::pair(64, 256));     // as before the rule
    EXPECT_EQ(tile(p("64", scaling), {{"block_N", "112"}}), std::pair(128, 112));
    EXPECT_EQ(tile(p("64", scaling), {{"wgmma_N", "64"}}), std::pair(128, 256));
    EXPECT_EQ(tile(p("64", scaling), {{"fast_accum", "true"}}), std::pair(128, 64));
    EXPECT_EQ(tile(p("64", scaling), {{"a_regs", "true"}}), std::pair(128, 256));
    const KernelInstance k = instance(p("64", scaling), {});
    EXPECT_EQ(k.launch.grid.x, 112u);
    EXPECT_EQ(k.launch.block.x, 256u);  // the producer and one consumer
    EXPECT_NE(k.name_expression.find(".wgmma_N = 64"), std::string::npos);
    EXPECT_NE(k.name_expression.find(".num_stages = 8"), std::string::npos);
    EXPECT_EQ(k.name_expression.find(".scale_stage = true") != std::string::npos, std::string(scaling) == "row");
    // What the rule takes is the one-consumer 64 x 64 tile as set by hand (row scales: with scale_stage=true; tensor
    // scales: with scale_early and prefetch_maps, session 47's second lead call).
    KV set = {{"block_M", "64"}, {"block_N", "64"}};
    if (std::string(scaling) == "row") set["scale_stage"] = "true";
    if (std::string(scaling) == "tensor") set["scale_early"] = set["prefetch_maps"] = "true";
    EXPECT_EQ(k.name_expression, instance(p("64", scaling), set).name_expression);
  }
  EXPECT_EQ(tile(p("64", "block"), {}), std::pair(128, 64));
  // Row scales staged by the rule, not on other one-consumer tiles.
  EXPECT_EQ(instance(p("64", "row"), {{"block_M", "64"}, {"block_N", "112"}}).name_expression.find(".scale_stage = true"),
            std::string::npos);
}

// num_stages=0 (auto): as many stages as fit beside narrow tiles (up to 8), 4 beside 192 columns on grids of at
// most 32 waves, else 3.
TEST(GemmFp8Spec, AutoStagesFillTheSharedMemoryBesideNarrowTiles) {
  const int optin = limits_for_arch("sm_90a").smem_per_block_optin;
  auto stages = [](const KernelInstance& k) {
    const auto at = k.name_expression.find(".num_stages = ");
    return std::stoi(k.name_expression.substr(at + 14));
  };
  for (const char* scaling : {"tensor", "row", "block"})
    for (const char* out : {"bf16", "f32"})
      for (const char* m : {"64", "256"}) {
        SCOPED_TRACE(std::string(scaling) + " " + out + " M " + m);
        const KV p = {{"M", m}, {"N", "7168"}, {"K", "2048"}, {"scaling", scaling}, {"out_dtype", out}};
        const KernelInstance k = instance(p, {});
        const int s = stages(k);
        EXPECT_GT(s, 3);
        EXPECT_LE(static_cast<int>(k.launch.dynamic_smem), optin);
        if (s < 8) {  // one more stage would not fit: refused when asked for (with the scales' slots kept:
                      // scale_stage's auto drops them for a hand-set depth they do not fit beside)
          KV deeper = {{"num_stages", std::to_string(s + 1)}};
          if (k.name_expression.find(".scale_stage = true") != std::string::npos) {
            deeper["scale_stage"] = "true";
            // At auto, the slots give way to the depth asked for.
            const KernelInstance yielded = instance(p, {{"num_stages", std::to_string(s + 1)}});
            EXPECT_EQ(yielded.name_expression.find(".scale_stage"), std::string::npos);
            EXPECT_LE(static_cast<int>(yielded.launch.dynamic_smem), optin);
          }
          EXPECT_FALSE(instantiate(fp8_spec(), p, deeper, limits_for_arch("sm_90a")).ok());
        }
      }
  EXPECT_EQ(stages(instance({{"M", "128"}, {"N", "7168"}, {"K", "2048"}}, {})), 8);  // 128 x 64 tiles
  EXPECT_EQ(stages(instance({{"M", "8192"}, {"N", "8192"}, {"K", "8192"}}, {})), 4);       // 21 waves of 192
  EXPECT_EQ(stages(instance({{"M", "8192"}, {"N", "8192"}, {"K", "4096"}, {"scaling", "row"}}, {})), 4);
  EXPECT_EQ(stages(instance({{"M", "16384"}, {"N", "16384"}, {"K", "4096"}}, {})), 3);     // 84 waves of 192
  EXPECT_EQ(stages(instance({}, {})), 3);                                                   // 4096^3: 256 columns
  EXPECT_EQ(stages(instance({{"M", "8192"}, {"N", "8192"}, {"K", "8192"}}, {{"num_stages", "3"}})), 3);
  expect_refused({}, {{"num_stages", "1"}}, {"num_stages=1", "2-8"});
}

TEST(GemmFp8Spec, EveryFieldReachesTheNameAndTheCacheKey) {
  // One change per config field (and per problem flag the kernel is specialised on).
  const std::vector<std::pair<KV, KV>> variants = {
      {{}, {}},
      {{}, {{"block_M", "64"}}},
      {{}, {{"block_N", "128"}}},
      {{}, {{"wgmma_N", "64"}}},
      {{}, {{"num_stages", "2"}}},
      {{}, {{"panel", "8"}}},
      {{}, {{"raster", "n"}}},
      {{}, {{"tma_store", "false"}}},
      {{}, {{"fast_accum", "true"}}},
      {{}, {{"wgmma_N", "64"}, {"overlap", "true"}}},
      {{}, {{"a_regs", "true"}}},
      {{}, {{"c_split", "2"}}},
      {{}, {{"ping_pong", "true"}}},
      {{}, {{"block_N", "192"}, {"wgmma_N", "192"}}},
      {{}, {{"uniform_desc", "false"}}},  // the default's uniform_desc=auto is on here
      {{}, {{"scale_early", "true"}}},    // scale_early=auto is off
      {{}, {{"prefetch_maps", "true"}}},  // prefetch_maps=auto is off
      {{{"scaling", "row"}}, {}},
      {{{"scaling", "row"}}, {{"scale_stage", "false"}}},  // the default's scale_stage=auto is on here
      {{{"scaling", "block"}}, {}},
      {{{"scaling", "block"}}, {{"scale_tma", "false"}}},  // the default's scale_tma=auto is on here
      {{{"scaling", "block"}, {"scale_a_layout", "mn"}}, {}},
      {{{"out_dtype", "f32"}}, {}}};
  test::expect_distinct_names_and_keys(fp8_spec(), variants);
  EXPECT_EQ(instance({}, {}).name_expression,
            "tl::gemm_fp8<tl::GemmFp8Config{.block_M = 128, .block_N = 256, .block_K = 128, .wgmma_N = 128, "
            ".num_stages = 3, .panel = 16, .raster_n = false, .tma_store = true, .fast_accum = false, "
            ".scaling = tl::gemm_detail::kScaleTensor, .out_dtype = tl::gemm_detail::kOutBf16, .scale_stage = true, "
            ".uniform_desc = true}>");
  JitOptions opt;
  opt.arch = "sm_90a";
  // The designated initializers compile (NVRTC checks every field name and their order).
  const auto compiled =
      test::scratch_jit().compile(compile_request(instance({{"scaling", "block"}}, {{"block_M", "64"}}), opt));
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_NE(compiled->lowered_name.find("GemmFp8Config"), std::string::npos);
}

// block_N=112 (opt-in): cuBLASLt's 64 x 112 tile of small M (M 128, N 7168: 2 x 64 = 128 CTAs on 132 SMs, against the
// default 128 x 64's 112), one m64n112k32 chain; a 16-bit C's 224-byte rows are staged plain and stored by one
// unswizzled box of 112 x 64, an f32 C's by 64-byte swizzled sub-tiles; the other widths keep 128-byte swizzled
// sub-tiles; block scales are refused (a tile would start mid-block of B's scales).
TEST(GemmFp8Spec, SmallMTileOf112Columns) {
  const KV small = {{"M", "128"}, {"N", "7168"}, {"K", "2048"}};
  auto maps = [](const KernelInstance& k) {
    std::map<std::string, std::pair<std::vector<std::int64_t>, int>> m;
    for (const ArgSpec& a : k.args)
      if (a.kind == ArgSpec::Kind::tensor_map) m[a.name] = {a.box, a.swizzle_bytes};
    return m;
  };
  for (const char* scaling : {"tensor", "row"}) {
    KV p = small;
    p["scaling"] = scaling;
    const KernelInstance k = instance(p, {{"block_M", "64"}, {"block_N", "112"}});
    EXPECT_EQ(k.launch.grid.x, 128u) << scaling;
    EXPECT_EQ(k.launch.block.x, 256u) << scaling;
    EXPECT_NE(k.name_expression.find(".block_N = 112"), std::string::npos) << k.name_expression;
    EXPECT_NE(k.name_expression.find(".wgmma_N = 112"), std::string::npos) << k.name_expression;
    EXPECT_EQ(maps(k)["tma_C"], (std::pair<std::vector<std::int64_t>, int>{{112, 64}, 0})) << scaling;
    EXPECT_EQ(maps(k)["tma_B"].first, (std::vector<std::int64_t>{128, 112})) << scaling;
    p["out_dtype"] = "f32";
    EXPECT_EQ(maps(instance(p, {{"block_M", "64"}, {"block_N", "112"}, {"tma_store", "true"}}))["tma_C"],
              (std::pair<std::vector<std::int64_t>, int>{{16, 64}, 64}))
        << scaling;
    // Two consumers on 128 x 112 tiles run too.
    EXPECT_EQ(instance(p, {{"block_N", "112"}}).launch.block.x, 384u) << scaling;
  }
  // The default widths' staging stays in 128-byte swizzled sub-tiles.
  EXPECT_EQ(maps(instance(small, {}))["tma_C"], (std::pair<std::vector<std::int64_t>, int>{{64, 64}, 128}));
  EXPECT_EQ(maps(instance({}, {}))["tma_C"], (std::pair<std::vector<std::int64_t>, int>{{64, 64}, 128}));
  KV block = small;
  block["scaling"] = "block";
  expect_refused(block, {{"block_M", "64"}, {"block_N", "112"}}, {"block_N=112", "block_N=64 or 128", "scaling=tensor"});
  expect_refused(block, {{"block_N", "256"}, {"wgmma_N", "112"}}, {"wgmma_N=112", "scaling=tensor"});
  // Eight stages of 8 + 14 KB and the 14 KB staging tile fit the H100's opt-in shared memory (auto takes 8).
  const GemmFp8Config cfg{.block_M = 64, .block_N = 112, .wgmma_N = 112, .num_stages = 8};
  EXPECT_LE(make_plan(cfg).bytes, limits_for_arch("sm_90a").smem_per_block_optin);
  EXPECT_EQ(make_plan(cfg).c_swizzle, 0);
  EXPECT_NE(instance(small, {{"block_M", "64"}, {"block_N", "112"}}).name_expression.find(".num_stages = 8"),
            std::string::npos);
}

TEST(GemmFp8Spec, LaunchesChecksAndPlotsThePlan) {
  const KernelInstance k = instance({{"scaling", "block"}}, {{"block_N", "128"}, {"num_stages", "3"}});
  const GemmFp8Plan p = make_plan(GemmFp8Config{.block_N = 128, .scaling = kScaleBlock});
  EXPECT_EQ(k.launch.dynamic_smem, static_cast<std::uint32_t>(p.bytes));
  EXPECT_EQ(k.launch.block.x, 384u);
  EXPECT_TRUE(k.launch.persistent);
  std::map<std::string, std::vector<std::int64_t>> boxes, shapes;
  for (const ArgSpec& a : k.args) {
    if (a.kind == ArgSpec::Kind::tensor_map) boxes[a.name] = a.box;
    if (a.kind == ArgSpec::Kind::tensor) shapes[a.name] = a.shape;
  }
  EXPECT_EQ(boxes["tma_A"], (std::vector<std::int64_t>{128, 128}));
  EXPECT_EQ(boxes["tma_B"], (std::vector<std::int64_t>{128, 128}));
  EXPECT_EQ(boxes["tma_C"], (std::vector<std::int64_t>{p.box_C.inner, p.box_C.outer}));
  EXPECT_EQ(shapes["scale_A"], (std::vector<std::int64_t>{4096, 32}));  // [M, K/128]
  EXPECT_EQ(shapes["scale_B"], (std::vector<std::int64_t>{32, 32}));    // [N/128, K/128]
  std::map<std::string, std::string> by_name;
  for (const LayoutInfo& l : k.spec->layouts(k.problem, k.config)) by_name[l.name] = l.spec;
  EXPECT_EQ(by_name["wgmma_C"], "wgmma.m64n128k32.f32.C");
  EXPECT_EQ(by_name["wgmma_part"], "wgmma.m64n128k32.f32.C");
  // Each SPEC parses back to the plan's object.
  for (const auto& [name, tile] : std::map<std::string, SwizzledLayout>{
           {"smem_A", p.smem_A}, {"smem_B", p.smem_B}, {"smem_C", p.smem_C}}) {
    const LayoutSpec s = parse_spec(by_name.at(name));
    EXPECT_TRUE(s.memory.layout() == tile.layout() && s.memory.swizzle() == tile.swizzle()) << name;
  }
  EXPECT_TRUE(parse_spec(by_name["wgmma_C"]).fragment.tv() == p.acc.tv());
  // Block scales by TMA: maps over scale_A [M, K/128] and scale_B [N/128, K/128], boxes of 4 k blocks x the tile's
  // rows and blocks of B, unswizzled; where K/128 is no multiple of 4 (K 144: 2 k blocks) auto falls back to cp.async
  // (maps of A hold the places) and true is refused.
  const KernelInstance sft = instance({{"scaling", "block"}}, {{"block_N", "192"}, {"scale_tma", "true"}});
  std::map<std::string, const ArgSpec*> sft_maps;
  for (const ArgSpec& a : sft.args)
    if (a.kind == ArgSpec::Kind::tensor_map) sft_maps[a.name] = &a;
  ASSERT_TRUE(sft_maps.count("tma_SA") && sft_maps.count("tma_SB"));
  EXPECT_EQ(sft_maps["tma_SA"]->tensor_of, "scale_A");
  EXPECT_EQ(sft_maps["tma_SA"]->box, (std::vector<std::int64_t>{4, 128}));
  EXPECT_EQ(sft_maps["tma_SA"]->swizzle_bytes, 0);
  EXPECT_EQ(sft_maps["tma_SB"]->tensor_of, "scale_B");
  EXPECT_EQ(sft_maps["tma_SB"]->box, (std::vector<std::int64_t>{4, 2}));  // 192 columns meet two blocks
  EXPECT_NE(sft.name_expression.find(".scale_tma = true"), std::string::npos);
  const KernelInstance fallback = instance({{"scaling", "block"}, {"K", "144"}}, {{"block_N", "192"}});
  EXPECT_EQ(fallback.name_expression.find(".scale_tma = true"), std::string::npos);
  expect_refused({{"scaling", "block"}, {"K", "144"}}, {{"block_N", "192"}, {"scale_tma", "true"}},
                 {"scale_tma=true", "K=144 has 2 k blocks", "multiple of 512", "scale_tma at auto or false"});
  for (const ArgSpec& a : fallback.args) {
    if (a.name == "tma_SA" || a.name == "tma_SB") {
      EXPECT_EQ(a.tensor_of, "A");
    }
  }
  // scale_tma=auto: on for block scales on the wide tiles of two consumers (and A then from shared memory), off on the
  // narrow tiles of small M and where K/128 is no multiple of 4.
  const std::map<std::string, std::string> big = {{"scaling", "block"}, {"M", "4096"}, {"N", "4096"}, {"K", "4096"}};
  const std::string big_auto = instance(big, {}).name_expression;
  EXPECT_EQ(big_auto, instance(big, {{"scale_tma", "true"}, {"a_regs", "false"}}).name_expression);
  EXPECT_EQ(big_auto.find(".a_regs = true"), std::string::npos);
  EXPECT_NE(instance(big, {{"scale_tma", "false"}}).name_expression.find(".a_regs = true"), std::string::npos);
  const std::map<std::string, std::string> small = {{"scaling", "block"}, {"M", "128"}, {"N", "7168"}, {"K", "2048"}};
  EXPECT_EQ(instance(small, {}).name_expression.find(".scale_tma = true"), std::string::npos);
  EXPECT_EQ(instance({{"scaling", "block"}, {"M", "4096"}, {"N", "4096"}, {"K", "1152"}}, {}).name_expression.find(".scale_tma = true"),
            std::string::npos);  // 9 k blocks
  // scale_stage=auto: on for row scales on the tiles of two consumers, wide (128 x 256 at 4096^3, 128 x 192 at
  // 8192^3) and narrow (small M at N 7168, K 2048: 128 x 64 at M 128, 128 x 128 at M 200 and 256), off with one
  // consumer (block_M 64) and with fast accumulation; tensor and block scales: the switch changes nothing.
  for (const char* mnk : {"4096", "8192"}) {
    const std::map<std::string, std::string> rowp = {{"scaling", "row"}, {"M", mnk}, {"N", mnk}, {"K", mnk}};
    EXPECT_NE(instance(rowp, {}).name_expression.find(".scale_stage = true"), std::string::npos) << mnk;
    EXPECT_EQ(instance(rowp, {}).name_expression, instance(rowp, {{"scale_stage", "true"}}).name_expression);
  }
  for (const char* m : {"64", "128", "200", "256", "512"}) {
    const std::map<std::string, std::string> rowp = {{"scaling", "row"}, {"M", m}, {"N", "7168"}, {"K", "2048"}};
    const std::string name = instance(rowp, {}).name_expression;
    EXPECT_NE(name.find(".scale_stage = true"), std::string::npos) << m;
    EXPECT_EQ(name, instance(rowp, {{"scale_stage", "true"}}).name_expression) << m;
    EXPECT_NE(name, instance(rowp, {{"scale_stage", "false"}}).name_expression) << m;
  }
  EXPECT_NE(instance({{"scaling", "row"}, {"M", "128"}, {"N", "7168"}, {"K", "2048"}}, {}).name_expression.find(".block_N = 64,"),
            std::string::npos);  // the narrow tile
  EXPECT_EQ(instance({{"scaling", "row"}, {"M", "128"}, {"N", "7168"}, {"K", "2048"}}, {{"block_M", "64"}})
                .name_expression.find(".scale_stage"),
            std::string::npos);
  EXPECT_EQ(instance({{"scaling", "row"}}, {{"fast_accum", "true"}}).name_expression.find(".scale_stage"), std::string::npos);
  EXPECT_EQ(instance({{"scaling", "row"}}, {{"scale_stage", "false"}}).name_expression.find(".scale_stage"), std::string::npos);
  // Block scales have no row or tensor scales to stage, tensor and row scales no block scales to load by TMA: set
  // true there, each switch is refused (it was dropped without a word); false passes. Tensor scales stage too (session
  // 47: auto on the block_M=128 tiles without fast_accum), a thread's two in its own 8 bytes, and not beside
  // scale_early=true (auto yields to it; M <= 64's auto tiles take scale_early instead).
  expect_refused(big, {{"scale_stage", "true"}}, {"scale_stage=true", "scaling=block"});
  {
    const KernelInstance t = instance({}, {{"scale_stage", "true"}});
    EXPECT_NE(t.name_expression.find(".scale_stage = true"), std::string::npos);
    EXPECT_EQ(instance({}, {}).name_expression, t.name_expression);
    for (const char* m : {"128", "256", "4096"}) {
      const std::map<std::string, std::string> tp = {{"M", m}, {"N", "7168"}, {"K", "2048"}};
      EXPECT_NE(instance(tp, {}).name_expression.find(".scale_stage = true"), std::string::npos) << m;
      EXPECT_EQ(instance(tp, {{"scale_stage", "false"}}).name_expression.find(".scale_stage"), std::string::npos) << m;
      EXPECT_EQ(instance(tp, {{"scale_early", "true"}}).name_expression.find(".scale_stage"), std::string::npos) << m;
    }
    EXPECT_EQ(instance({}, {{"fast_accum", "true"}}).name_expression.find(".scale_stage"), std::string::npos);
    // Not on the 128 x 192 tiles (8192^3, 16384^2 x 4096: it lost there).
    for (const KV& big192 : {KV{{"M", "8192"}, {"N", "8192"}, {"K", "8192"}}, KV{{"M", "16384"}, {"N", "16384"}, {"K", "4096"}}}) {
      const std::string name = instance(big192, {}).name_expression;
      EXPECT_NE(name.find(".block_N = 192"), std::string::npos);
      EXPECT_EQ(name.find(".scale_stage"), std::string::npos);
    }
    // A hand-set pipeline with no room for the slots keeps the epilogue's loads (auto only).
    EXPECT_EQ(instance({}, {{"c_split", "2"}, {"num_stages", "4"}}).name_expression.find(".scale_stage"),
              std::string::npos);
    EXPECT_EQ(instance({{"M", "64"}, {"N", "7168"}, {"K", "2048"}}, {}).name_expression.find(".scale_stage"),
              std::string::npos);
    EXPECT_EQ(make_plan(GemmFp8Config{.scaling = kScaleTensor, .scale_stage = true}).rs_slot_bytes, 8 * 128);
    const std::map<std::string, std::string> m64 = {{"M", "64"}, {"N", "7168"}, {"K", "2048"}};
    const std::string staged = instance(m64, {{"scale_stage", "true"}}).name_expression;
    EXPECT_EQ(staged.find(".scale_early = true"), std::string::npos);
    EXPECT_NE(staged.find(".scale_stage = true"), std::string::npos);
    expect_refused(m64, {{"scale_stage", "true"}, {"scale_early", "true"}}, {"scale_stage=true", "scale_early=true"});
  }
  expect_refused({{"scaling", "row"}}, {{"scale_tma", "true"}}, {"scale_tma=true", "scaling=row", "set scaling=block"});
  expect_refused({}, {{"scale_tma", "true"}}, {"scale_tma=true", "scaling=tensor"});
  EXPECT_EQ(instance({}, {{"scale_stage", "false"}, {"scale_tma", "false"}}).name_expression,
            instance({}, {{"scale_stage", "false"}}).name_expression);
  EXPECT_EQ(instance(big, {{"scale_stage", "false"}}).name_expression, big_auto);
  EXPECT_EQ(instance({{"scaling", "row"}}, {{"scale_tma", "false"}}).name_expression,
            instance({{"scaling", "row"}}, {}).name_expression);
  // Row scales: one per row of A and per row of B; tensor scales: one each.
  const KernelInstance row = instance({{"scaling", "row"}, {"M", "5"}, {"N", "7"}, {"K", "32"}}, {});
  for (const ArgSpec& a : row.args) {
    if (a.name == "scale_A") {
      EXPECT_EQ(a.numel(), 5);
    }
    if (a.name == "scale_B") {
      EXPECT_EQ(a.numel(), 7);
    }
  }
  // The probe names are the kernel's enum, in order.
  ASSERT_EQ(fp8_spec().probes.size(), 9u);
  EXPECT_EQ(fp8_spec().probes[GemmFp8Probe::promote], "promote");
  EXPECT_EQ(fp8_spec().probes[GemmFp8Probe::epilogue], "epilogue");
}

// [SECTION] the reference

ReferenceInputs inputs_of(const KernelInstance& k) {
  ReferenceInputs in;
  for (const ArgSpec& a : k.args)
    if (a.kind == ArgSpec::Kind::tensor && a.role == ArgRole::in) in.tensors[a.name] = make_host_tensor(a);
  return in;
}

// The inputs are random e4m3 and random scales in [0.5, 2); the reference of a block-scaled entry by hand; and with
// the scale of a neighbouring row, column block or k block in place of the right one (what a kernel indexing the
// scales wrongly computes) most entries leave the tolerance, so such a kernel cannot pass.
TEST(GemmFp8Spec, ReferenceUsesEveryScaleAndAWrongOneFails) {
  const KernelInstance k = instance({{"M", "6"}, {"N", "260"}, {"K", "272"}, {"scaling", "block"}}, {});
  const ReferenceInputs in = inputs_of(k);
  const HostTensor &A = in.tensor("A"), &B = in.tensor("B"), &SA = in.tensor("scale_A"), &SB = in.tensor("scale_B");
  ASSERT_EQ(A.dtype, DType::e4m3);
  ASSERT_EQ(SA.shape, (std::vector<std::int64_t>{6, 3}));
  ASSERT_EQ(SB.shape, (std::vector<std::int64_t>{3, 3}));
  std::set<double> distinct;
  for (std::int64_t i = 0; i < SA.numel(); ++i) {
    EXPECT_GE(SA.at(i), 0.5);
    EXPECT_LT(SA.at(i), 2.0);
    distinct.insert(SA.at(i));
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(SA.numel()));
  const std::int64_t N = 260, K = 272, KB = 3;
  // Entry (4, 259): column block 2 of B, the last k block 16 wide.
  double by_hand = 0;
  for (std::int64_t kk = 0; kk < K; ++kk)
    by_hand += A.at(4 * K + kk) * B.at(259 * K + kk) * SA.at(4 * KB + kk / 128) * SB.at(2 * KB + kk / 128);
  const std::int64_t at = 4 * N + 259;
  EXPECT_NEAR(k.spec->reference(k.problem, in, "C", {at}).value().at(0), by_hand, 1e-9 * std::abs(by_hand) + 1e-12);

  std::vector<std::int64_t> all(6 * 260);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  const std::vector<double> right = k.spec->reference(k.problem, in, "C", all).value();
  const Tolerance tol = k.spec->tolerance(k.problem, DType::bf16);
  // Each mistake: the scales with one index shifted (rows of scale_A, blocks of scale_B, or k blocks).
  auto shifted = [&](const std::string& name, bool along_k) {
    ReferenceInputs wrong = in;
    HostTensor& s = wrong.tensors.at(name);
    const std::int64_t rows = s.shape[0], cols = s.shape[1];
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::int64_t from = along_k ? r * cols + (c + 1) % cols : ((r + 1) % rows) * cols + c;
        store_element(s.data.data(), s.dtype, static_cast<std::uint64_t>(r * cols + c), in.tensor(name).at(from));
      }
    return k.spec->reference(k.problem, wrong, "C", all).value();
  };
  for (const auto& [name, along_k] : std::vector<std::pair<std::string, bool>>{
           {"scale_A", false}, {"scale_A", true}, {"scale_B", false}, {"scale_B", true}}) {
    const std::vector<double> wrong = shifted(name, along_k);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      diff += (wrong[i] - right[i]) * (wrong[i] - right[i]);
      norm += right[i] * right[i];
    }
    EXPECT_GT(std::sqrt(diff / norm), 10 * tol.rel) << name << (along_k ? " shifted along k" : " shifted along rows");
  }
}

// scale_a_layout=mn: scale_A [K/128, M], the same scales transposed — the same reference; the kernel reads it as one
// TMA box of the tile's rows (block_M, 1) where M is a multiple of 4 (16-byte rows), else by cp.async (the map of A
// holds the place); the baseline is told the layout.
TEST(GemmFp8Spec, ScaleAMnIsTheTransposedLayout) {
  const KV kp = {{"M", "6"}, {"N", "260"}, {"K", "272"}, {"scaling", "block"}};
  KV mp = kp;
  mp["scale_a_layout"] = "mn";
  const KernelInstance k = instance(kp, {}), m = instance(mp, {});
  const ReferenceInputs in = inputs_of(k);
  const HostTensor& SA = in.tensor("scale_A");
  ASSERT_EQ(SA.shape, (std::vector<std::int64_t>{6, 3}));
  ReferenceInputs in_mn = in;
  HostTensor& T = in_mn.tensors.at("scale_A");
  T.shape = {3, 6};
  for (std::int64_t r = 0; r < 6; ++r)
    for (std::int64_t kb = 0; kb < 3; ++kb)
      store_element(T.data.data(), T.dtype, static_cast<std::uint64_t>(kb * 6 + r), SA.at(r * 3 + kb));
  for (const ArgSpec& a : m.args) {
    if (a.name == "scale_A") {
      EXPECT_EQ(a.shape, (std::vector<std::int64_t>{3, 6}));
    }
  }
  std::vector<std::int64_t> all(6 * 260);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  const std::vector<double> right = k.spec->reference(k.problem, in, "C", all).value();
  EXPECT_EQ(m.spec->reference(m.problem, in_mn, "C", all).value(), right);
  // The untransposed bits read M-major are other scales: the reference tells them apart.
  const std::vector<double> misread = m.spec->reference(m.problem, in, "C", all).value();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    diff += (misread[i] - right[i]) * (misread[i] - right[i]);
    norm += right[i] * right[i];
  }
  EXPECT_GT(std::sqrt(diff / norm), 10 * k.spec->tolerance(k.problem, DType::bf16).rel);
  ASSERT_TRUE(m.spec->baseline);
  const auto bm = m.spec->baseline(m.problem, m.config), bk = k.spec->baseline(k.problem, k.config);
  EXPECT_EQ(bm->scaling, "block");
  EXPECT_TRUE(bm->scale_a_mn);
  EXPECT_EQ(bk->scaling, "block");
  EXPECT_FALSE(bk->scale_a_mn);
  EXPECT_NE(m.name_expression.find(".scale_a_mn = true"), std::string::npos);

  auto maps = [](const KernelInstance& i) {
    std::map<std::string, const ArgSpec*> out;
    for (const ArgSpec& a : i.args)
      if (a.kind == ArgSpec::Kind::tensor_map) out[a.name] = &a;
    return out;
  };
  // The wide tiles' default (scale_tma auto on): one box of the tile's 128 rows of one k block.
  const KernelInstance big = instance({{"M", "4096"}, {"N", "4096"}, {"K", "4096"}, {"scaling", "block"},
                                       {"scale_a_layout", "mn"}}, {});
  EXPECT_NE(big.name_expression.find(".scale_tma = true"), std::string::npos);
  EXPECT_EQ(maps(big)["tma_SA"]->tensor_of, "scale_A");
  EXPECT_EQ(maps(big)["tma_SA"]->box, (std::vector<std::int64_t>{128, 1}));
  EXPECT_EQ(maps(big)["tma_SB"]->box, (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(big.launch.dynamic_smem + 3 * (2176 - 640), instance({{"M", "4096"}, {"N", "4096"}, {"K", "4096"},
                                                                  {"scaling", "block"}}, {}).launch.dynamic_smem);
  // M no multiple of 4: rows of scale_A that are no 16-byte multiple; auto takes cp.async, true is refused.
  const KV odd_p = {{"M", "4097"}, {"N", "4096"}, {"K", "4096"}, {"scaling", "block"}, {"scale_a_layout", "mn"}};
  expect_refused(odd_p, {{"scale_tma", "true"}}, {"scale_tma=true", "M=4097", "scale_a_layout=k"});
  const KernelInstance odd = instance(odd_p, {});
  EXPECT_EQ(odd.name_expression.find(".scale_tma = true"), std::string::npos);
  EXPECT_EQ(maps(odd)["tma_SA"]->tensor_of, "A");
}

}  // namespace
}  // namespace tl
