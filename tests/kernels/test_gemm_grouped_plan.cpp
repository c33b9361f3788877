// gemm.grouped's plan and spec: the main loop is gemm.fp8's (e4m3) or the same with bf16 tiles as TMA's 128-byte
// swizzle writes them, the group table fits behind the barriers, the device schedule's group search finds every row
// tile's group past empty ones, the groups' sizes, offsets and row tiles are what the problem asks, refusals say what
// to fix, every field reaches the name, and the float64 reference reads each group's own B and leaves masked rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gemm/gemm_grouped_plan.hpp"
#include "library/library.hpp"
#include "tests/kernels/gemm_plan_checks.hpp"
#include "tests/support/scratch_jit.hpp"
#include "tile/layout_spec.hpp"
#include "tile/wgmma_ops.cuh"

namespace tl {
namespace {

using gemm_detail::kOutBf16;
using gemm_detail::kOutF32;
using gemm_detail::kScaleBlock;
using gemm_detail::kScaleNone;
using gemm_detail::kScaleRow;
using test::Region;
using test::tma_sw128;
using KV = std::map<std::string, std::string>;

// [SECTION] the plan

// Every tile shape, both input types (block_K: one 128-byte row), with and without the TMA-store epilogue.
std::vector<GemmGroupedConfig> all_configs() {
  std::vector<GemmGroupedConfig> out;
  for (bool e4m3 : {false, true})
    for (int bm : {64, 128})
      for (int bn : {64, 128, 256})
        for (bool tma_store : {true, false})
          for (bool host : {false, true})
            out.push_back({.block_M = bm, .block_N = bn, .block_K = e4m3 ? 128 : 64, .wgmma_N = bn,
                           .tma_store = tma_store, .scaling = e4m3 ? kScaleBlock : kScaleNone, .e4m3 = e4m3,
                           .host_schedule = host});
  return out;
}

// e4m3: the plan is gemm.fp8's for the same fields (the same main loop, gemm_kmajor.cuh).
TEST(GemmGroupedPlan, E4m3MainLoopIsGemmFp8s) {
  for (auto scaling : {kScaleBlock, kScaleRow, kScaleNone})
    for (int wn : {64, 128}) {
      const GemmGroupedConfig g{.block_K = 128, .wgmma_N = wn, .scaling = scaling, .e4m3 = true};
      const GemmFp8Config f{.block_K = 128, .wgmma_N = wn, .scaling = scaling};
      const GemmFp8Plan a = make_plan(g), b = make_plan(f);
      EXPECT_EQ(a.bytes, b.bytes);
      EXPECT_EQ(a.sf_stage_bytes, b.sf_stage_bytes);
      EXPECT_EQ(a.full_bar_offset, b.full_bar_offset);
      EXPECT_TRUE(a.smem_A.layout() == b.smem_A.layout() && a.smem_B.layout() == b.smem_B.layout());
      EXPECT_TRUE(a.chunk.tv() == b.chunk.tv());
    }
}

// bf16: element (row, k) of A and B at byte 2 (row * 64 + k), swizzled by TMA's SWIZZLE_128B; canonical K-major
// descriptors (8-row groups 1024 bytes apart, the leading offset unused), and wgmma's k16 step is 32 bytes, from rows
// that start a swizzle atom.
TEST(GemmGroupedPlan, Bf16TilesAreWhatTmaSwizzle128BWrites) {
  for (const GemmGroupedConfig& c : all_configs()) {
    if (c.e4m3) continue;
    SCOPED_TRACE(name_expression(c));
    const GemmGroupedPlan p = make_plan(c);
    EXPECT_EQ(p.in_bytes, 2);
    for (int r = 0; r < c.block_M; ++r)
      for (int k = 0; k < 64; ++k) ASSERT_EQ(2 * p.smem_A(r, k), tma_sw128(r * 128 + 2 * k)) << "A " << r << ", " << k;
    for (int n = 0; n < c.block_N; ++n)
      for (int k = 0; k < 64; ++k) ASSERT_EQ(2 * p.smem_B(n, k), tma_sw128(n * 128 + 2 * k)) << "B " << n << ", " << k;
    test::expect_bijective_chunks(p.smem_A, c.block_M, 64, 2, false);
    test::expect_bijective_chunks(p.smem_B, c.block_N, 64, 2, false);
    EXPECT_EQ(p.a_sbo, 1024);
    EXPECT_EQ(p.b_sbo, 1024);
    EXPECT_EQ(p.a_lbo, 16);
    for (int kk = 0; kk < 4; ++kk) {
      EXPECT_EQ(2 * p.smem_A(64, 16 * kk), 2 * p.smem_A(64, 0) + 32 * kk);
      EXPECT_EQ(p.smem_B(0, 16 * kk), p.smem_B.layout()(0, 16 * kk)) << "not an atom's first row";
    }
    EXPECT_EQ(p.box_A.inner, 64);
    EXPECT_EQ(p.box_B.outer, c.block_N);
  }
}

// uniform_desc (gemm.fp8's, the same main loop): the kernel builds a descriptor's low word once per consumer (its rows
// of stage 0), adds s stages' bytes >> 4 for stage s and (chain j's rows + k step kk's bytes) >> 4 for each wgmma (k16
// for bf16, k32 for e4m3: 32 bytes either way), with the constant high word kSw128DescHi: that must be the descriptor
// the per-thread path builds from the address, for every stage, consumer, chain and step, at the lowest and highest
// base the plan's bytes (with the most groups' table) leave in the H100's 227 KiB.
TEST(GemmGroupedPlan, UniformDescriptorsStepAsTheAddresses) {
  using namespace wgmma_ops;
  std::vector<GemmGroupedConfig> configs = all_configs();
  configs.push_back({.block_K = 128, .wgmma_N = 128, .scaling = kScaleRow, .e4m3 = true});  // the e4m3 default's chains
  configs.push_back({.block_K = 128, .wgmma_N = 64, .num_stages = 4, .scaling = kScaleBlock, .e4m3 = true});
  int checked = 0;
  for (GemmGroupedConfig c : configs) {
    c.uniform_desc = true;
    SCOPED_TRACE(name_expression(c));
    const GemmGroupedPlan p = make_plan(c);
    const int kstep = 32 / p.in_bytes;  // one wgmma's k: 32 bytes
    const unsigned a_wg = p.in_bytes * p.smem_A(64, 0), a_k = p.in_bytes * p.smem_A(0, kstep);
    const unsigned b_chain = p.in_bytes * p.smem_B(c.wgmma_N, 0), b_k = p.in_bytes * p.smem_B(0, kstep);
    EXPECT_EQ(a_k, 32u);
    EXPECT_EQ(b_k, 32u);
    const int top = (227 * 1024 - grouped_smem_bytes(c, 4096)) / 1024 * 1024;
    if (top < 1024) continue;
    ++checked;
    for (const unsigned base : {1024u, static_cast<unsigned>(top)}) {
      const unsigned a_base = base + p.a_offset, b_base = base + p.b_offset;
      for (int cons = 0; cons < c.consumers(); ++cons) {
        const unsigned a_lo0 = sw128_desc_lo(a_base + cons * a_wg, p.a_lbo), b_lo0 = sw128_desc_lo(b_base, p.b_lbo);
        for (int s = 0; s < c.num_stages; ++s)
          for (int kk = 0; kk < c.block_K / kstep; ++kk) {
            const unsigned a_at = a_base + s * p.a_stage_bytes + cons * a_wg + kk * a_k;
            ASSERT_EQ(desc_of(a_lo0 + s * (p.a_stage_bytes >> 4) + kk * (a_k >> 4), kSw128DescHi),
                      smem_desc_sw128(a_at, p.a_lbo, p.a_sbo))
                << "consumer " << cons << " stage " << s << " k step " << kk;
            for (int j = 0; j < c.chunks(); ++j) {
              const unsigned b_at = b_base + s * p.b_stage_bytes + j * b_chain + kk * b_k;
              ASSERT_EQ(desc_of(b_lo0 + s * (p.b_stage_bytes >> 4) + (j * b_chain + kk * b_k) / 16, kSw128DescHi),
                        smem_desc_sw128(b_at, p.b_lbo, p.b_sbo))
                  << "chain " << j << " stage " << s << " k step " << kk;
            }
          }
      }
    }
  }
  EXPECT_GE(checked, 40);
}

// The group table lies behind the barriers, 4-byte aligned, inside what the launch asks for; the host schedule has
// none.
TEST(GemmGroupedPlan, GroupTableFollowsTheBarriers) {
  for (const GemmGroupedConfig& c : all_configs()) {
    SCOPED_TRACE(name_expression(c));
    const GemmGroupedPlan p = make_plan(c);
    std::vector<Region> tiles, others;
    for (int s = 0; s < c.num_stages; ++s) {
      tiles.push_back({p.a_offset + s * p.a_stage_bytes, p.a_offset + (s + 1) * p.a_stage_bytes});
      tiles.push_back({p.b_offset + s * p.b_stage_bytes, p.b_offset + (s + 1) * p.b_stage_bytes});
      if (p.sf_stage_bytes > 0) others.push_back({p.sf_offset + s * p.sf_stage_bytes, p.sf_offset + (s + 1) * p.sf_stage_bytes});
    }
    for (int wg = 0; wg < c.consumers() && c.tma_store; ++wg)
      tiles.push_back({p.c_offset + wg * p.c_tile_bytes, p.c_offset + (wg + 1) * p.c_tile_bytes});
    others.push_back({p.full_bar_offset, p.full_bar_offset + 8 * c.num_stages});
    others.push_back({p.empty_bar_offset, p.empty_bar_offset + 8 * c.num_stages});
    for (int groups : {1, 64, 4096}) {
      std::vector<Region> with_table = others;
      const int table = c.host_schedule ? 0 : 4 * (groups + 1);
      if (table > 0) with_table.push_back({p.table_offset, p.table_offset + table});
      EXPECT_EQ(p.table_offset % 4, 0);
      EXPECT_EQ(grouped_smem_bytes(c, groups), p.bytes + table);
      test::expect_disjoint_regions(tiles, with_table, p.align, grouped_smem_bytes(c, groups));
    }
  }
  // The defaults fit the H100 with the most groups the spec takes, e4m3 with block scales included.
  const int optin = limits_for_arch("sm_90a").smem_per_block_optin;
  EXPECT_LE(grouped_smem_bytes(GemmGroupedConfig{}, 4096), optin);
  EXPECT_LE(grouped_smem_bytes(GemmGroupedConfig{.block_K = 128, .wgmma_N = 128, .scaling = kScaleBlock, .e4m3 = true}, 4096),
            optin);
}

// Row tiles of groups with 2, 0, 0, 3, 1, 0 tiles: tile_start 0 2 2 2 5 6 6. Every row tile is found in the group
// whose tiles it is, never in an empty one.
TEST(GemmGroupedPlan, GroupSearchSkipsEmptyGroups) {
  for (const std::vector<int>& counts : {std::vector<int>{2, 0, 0, 3, 1, 0}, std::vector<int>{0, 0, 1},
                                         std::vector<int>{5}, std::vector<int>{0, 4, 0, 0, 0, 0, 0, 1, 1, 0, 2}}) {
    std::vector<int> start = {0};
    for (int n : counts) start.push_back(start.back() + n);
    auto tile_start = [&](int g) { return start[static_cast<std::size_t>(g)]; };
    int r = 0;
    for (std::size_t g = 0; g < counts.size(); ++g)
      for (int m = 0; m < counts[g]; ++m, ++r)
        EXPECT_EQ(grouped_find_group(r, static_cast<int>(counts.size()), tile_start), static_cast<int>(g)) << "tile " << r;
  }
  EXPECT_EQ(grouped_row_tile(3, 7) >> 16, 3);
  EXPECT_EQ(grouped_row_tile(3, 7) & (kGroupedMaxMTiles - 1), 7);
}

// [SECTION] the spec

const KernelSpec& grouped_spec() { return *library_registry().find("gemm.grouped").value(); }

KernelInstance instance(const KV& problem, const KV& config = {}) {
  auto inst = instantiate(grouped_spec(), problem, config, limits_for_arch("sm_90a"));
  EXPECT_TRUE(inst.ok()) << inst.status().message();
  return inst.value();
}

const ArgSpec& arg(const KernelInstance& k, const std::string& name) {
  return *std::find_if(k.args.begin(), k.args.end(), [&](const ArgSpec& a) { return a.name == name; });
}

std::vector<std::int32_t> ints(const ArgSpec& a) {
  std::vector<std::int32_t> v(a.data.size() / 4);
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

// Contiguous, uneven, 3 of 12 groups empty: offsets rise by each group's rows, exactly `empty` groups have none, the
// others up to 2M, A and C hold their sum; the host schedule lists ceil(M_g / block_M) row tiles per group in order,
// and the grid is capped at the SMs.
TEST(GemmGroupedSpec, GroupsOffsetsAndRowTilesAreTheProblems) {
  const KernelInstance k = instance({{"G", "12"}, {"M", "700"}, {"N", "512"}, {"K", "64"}, {"uneven", "true"},
                                     {"empty", "3"}},
                                    {{"schedule", "host"}});
  const std::vector<std::int32_t> offsets = ints(arg(k, "offsets")), list = ints(arg(k, "row_tiles"));
  ASSERT_EQ(offsets.size(), 13u);
  EXPECT_EQ(offsets[0], 0);
  int empty = 0, distinct = 0;
  std::vector<std::int32_t> expect_list;
  for (int g = 0; g < 12; ++g) {
    const int rows = offsets[g + 1] - offsets[g];
    EXPECT_GE(rows, 0);
    EXPECT_LE(rows, 1400);
    empty += rows == 0;
    distinct += rows % 128 != 0;
    for (int m = 0; m < (rows + 127) / 128; ++m) expect_list.push_back((g << 16) | m);
  }
  EXPECT_EQ(empty, 3);
  EXPECT_GE(distinct, 6);  // sizes that are no tile multiple
  EXPECT_EQ(list, expect_list);
  EXPECT_EQ(arg(k, "A").shape, (std::vector<std::int64_t>{offsets.back(), 64}));
  EXPECT_EQ(arg(k, "B").shape, (std::vector<std::int64_t>{12, 512, 64}));
  EXPECT_EQ(arg(k, "C").shape, (std::vector<std::int64_t>{offsets.back(), 512}));
  EXPECT_EQ(arg(k, "C").role, ArgRole::out);
  EXPECT_EQ(arg(k, "row_tile_count").value, static_cast<double>(list.size()));
  EXPECT_EQ(arg(k, "tma_B").map_shape, (std::vector<std::int64_t>{12 * 512, 64}));
  EXPECT_EQ(k.launch.grid.x, std::min<std::uint32_t>(132, static_cast<std::uint32_t>(list.size() * 2)));
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * offsets.back() * 512 * 64);
  // Masked: a slot of M rows per group, masked_m[g] <= M valid; C inout (what the kernel must leave), A [G, M, K]
  // mapped as [G M, K]; the device schedule's launch adds the group table.
  const KernelInstance m = instance({{"G", "5"}, {"M", "96"}, {"N", "128"}, {"K", "64"}, {"layout", "masked"},
                                     {"uneven", "true"}});
  const std::vector<std::int32_t> masked_m = ints(arg(m, "masked_m"));
  ASSERT_EQ(masked_m.size(), 5u);
  for (auto v : masked_m) EXPECT_TRUE(v >= 0 && v <= 96) << v;
  EXPECT_EQ(arg(m, "A").shape, (std::vector<std::int64_t>{5, 96, 64}));
  EXPECT_EQ(arg(m, "tma_A").map_shape, (std::vector<std::int64_t>{5 * 96, 64}));
  EXPECT_EQ(arg(m, "C").role, ArgRole::inout);
  EXPECT_EQ(m.launch.dynamic_smem, static_cast<std::uint32_t>(make_plan(GemmGroupedConfig{}).bytes + 4 * 6));
  // Every row masked, or every group empty: no tiles, one CTA that finds nothing to do; contiguous, one row of no
  // group that C (inout) must keep.
  EXPECT_EQ(instance({{"G", "4"}, {"M", "64"}, {"layout", "masked"}, {"empty", "4"}}).launch.grid.x, 1u);
  const KernelInstance none = instance({{"G", "4"}, {"M", "64"}, {"empty", "4"}});
  EXPECT_EQ(none.launch.grid.x, 1u);
  EXPECT_EQ(arg(none, "C").shape, (std::vector<std::int64_t>{1, 4096}));
  EXPECT_EQ(arg(none, "C").role, ArgRole::inout);
  EXPECT_EQ(ints(arg(none, "offsets")), (std::vector<std::int32_t>{0, 0, 0, 0, 0}));
}

void expect_refused(const KV& problem, const KV& config, const std::vector<std::string>& words) {
  auto inst = instantiate(grouped_spec(), problem, config, limits_for_arch("sm_90a"));
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(inst.status().code(), ErrorCode::unsupported);
  for (const auto& w : words) EXPECT_NE(inst.status().message().find(w), std::string::npos) << inst.status().message();
}

TEST(GemmGroupedSpec, RefusalsNameWhatToFix) {
  expect_refused({{"K", "100"}}, {}, {"K=100", "multiple of 8", "pad K"});
  expect_refused({{"K", "200"}, {"dtype", "e4m3"}}, {}, {"K=200", "multiple of 16", "pad K"});
  expect_refused({{"G", "4"}, {"empty", "5"}}, {}, {"empty=5", "G=4", "empty <= G"});
  expect_refused({{"scaling", "row"}}, {}, {"scaling=row", "dtype=bf16", "scaling=none"});
  expect_refused({{"dtype", "e4m3"}}, {{"fast_accum", "true"}}, {"fast_accum=true", "block scales"});
  expect_refused({{"dtype", "e4m3"}}, {{"block_N", "64"}}, {"wgmma_N=128", "block_N=64"});
  expect_refused({{"N", "130"}}, {{"tma_store", "true"}}, {"tma_store=true", "N=130", "set tma_store=false"});
  expect_refused({}, {{"num_stages", "5"}}, {"5 stages", "64 bf16 tiles", "group table", "schedule=host"});
  // The same stages fit without the table only where it is the difference; every row masked runs (no tiles).
  EXPECT_TRUE(instantiate(grouped_spec(), {{"layout", "masked"}, {"empty", "8"}}, {}, limits_for_arch("sm_90a")).ok());
}

TEST(GemmGroupedSpec, EveryFieldReachesTheNameAndTheCacheKey) {
  const std::vector<std::pair<KV, KV>> variants = {
      {{}, {}},
      {{}, {{"block_M", "64"}}},
      {{}, {{"block_N", "128"}}},
      {{{"dtype", "e4m3"}}, {{"wgmma_N", "64"}}},
      {{}, {{"num_stages", "2"}}},
      {{}, {{"panel", "16"}}},
      {{}, {{"raster", "n"}}},
      {{}, {{"tma_store", "false"}}},
      {{{"dtype", "e4m3"}, {"scaling", "row"}}, {{"fast_accum", "true"}}},
      {{{"dtype", "e4m3"}}, {}},
      {{{"dtype", "e4m3"}, {"scaling", "row"}}, {}},
      {{{"out_dtype", "f32"}}, {}},
      {{{"layout", "masked"}}, {}},
      {{}, {{"schedule", "host"}}},
      {{}, {{"uniform_desc", "false"}}},                     // auto is on for bf16's 128 x 256 tiles
      {{{"dtype", "e4m3"}}, {{"uniform_desc", "false"}}}};  // and for e4m3's
  test::expect_distinct_names_and_keys(grouped_spec(), variants);
  EXPECT_EQ(instance({}).name_expression,
            "tl::gemm_grouped<tl::GemmGroupedConfig{.block_M = 128, .block_N = 256, .block_K = 64, .wgmma_N = 256, "
            ".num_stages = 3, .panel = 8, .raster_n = false, .tma_store = true, .fast_accum = false, "
            ".scaling = tl::gemm_detail::kScaleNone, .out_dtype = tl::gemm_detail::kOutBf16, .e4m3 = false, "
            ".masked = false, .host_schedule = false, .uniform_desc = true}>");
  EXPECT_EQ(instance({{"dtype", "e4m3"}, {"scaling", "row"}}).name_expression,
            "tl::gemm_grouped<tl::GemmGroupedConfig{.block_M = 128, .block_N = 256, .block_K = 128, .wgmma_N = 128, "
            ".num_stages = 3, .panel = 8, .raster_n = false, .tma_store = true, .fast_accum = false, "
            ".scaling = tl::gemm_detail::kScaleRow, .out_dtype = tl::gemm_detail::kOutBf16, .e4m3 = true, "
            ".masked = false, .host_schedule = false, .uniform_desc = true}>");
  JitOptions opt;
  opt.arch = "sm_90a";
  // The designated initializers compile (NVRTC checks every field name and their order).
  const auto compiled = test::scratch_jit().compile(
      compile_request(instance({{"layout", "masked"}, {"dtype", "e4m3"}}, {{"block_M", "64"}}), opt));
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_NE(compiled->lowered_name.find("GemmGroupedConfig"), std::string::npos);
}

// uniform_desc is gemm.fp8's switch, resolved by gemm.fp8's rule (one function, kmajor_uniform_desc_on): auto on for
// bf16's 128 x 256 tiles (one 256-column chain; both layouts, both schedules, either store), off on narrower bf16 tiles
// and, until timed, for every e4m3 config (gemm.fp8's auto is on at the same tiles); true / false force it, nothing is
// refused.
TEST(GemmGroupedSpec, UniformDescriptorsAutoOnBf16WideTiles) {
  auto uniform = [](const KV& problem, const KV& config) {
    return instance(problem, config).name_expression.find(".uniform_desc = true") != std::string::npos;
  };
  for (const char* layout : {"contiguous", "masked"}) {
    SCOPED_TRACE(layout);
    const KV bf16 = {{"layout", layout}};
    EXPECT_TRUE(uniform(bf16, {}));
    EXPECT_TRUE(uniform(bf16, {{"schedule", "host"}}));
    EXPECT_TRUE(uniform(bf16, {{"tma_store", "false"}, {"num_stages", "4"}}));
    EXPECT_TRUE(uniform({{"layout", layout}, {"out_dtype", "f32"}, {"N", "4000"}}, {}));
    EXPECT_FALSE(uniform(bf16, {{"uniform_desc", "false"}}));
    EXPECT_FALSE(uniform(bf16, {{"block_M", "64"}}));
    EXPECT_FALSE(uniform(bf16, {{"block_N", "128"}}));
    EXPECT_TRUE(uniform(bf16, {{"uniform_desc", "true"}, {"block_M", "64"}, {"block_N", "128"}}));
    for (const char* scaling : {"tensor", "row", "block"}) {
      SCOPED_TRACE(scaling);
      const KV e4m3 = {{"layout", layout}, {"dtype", "e4m3"}, {"scaling", scaling}};
      EXPECT_TRUE(uniform(e4m3, {}));  // session 47's merged call: 1.10-1.11x at G 8 / 32 (row, block)
      EXPECT_FALSE(uniform(e4m3, {{"block_N", "128"}}));
      EXPECT_FALSE(uniform(e4m3, {{"uniform_desc", "false"}}));
      EXPECT_TRUE(uniform(e4m3, {{"uniform_desc", "true"}}));
      EXPECT_TRUE(uniform(e4m3, {{"wgmma_N", "64"}, {"uniform_desc", "true"}}));
      if (std::string(scaling) != "block") {
        EXPECT_TRUE(uniform(e4m3, {{"fast_accum", "true"}, {"wgmma_N", "256"}, {"uniform_desc", "true"}}));
      }
    }
  }
  // The same tiles in gemm.fp8: auto on (the shared rule's e4m3 branch).
  const KernelSpec& fp8 = *library_registry().find("gemm.fp8").value();
  auto inst = instantiate(fp8, {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}, {"scaling", "row"}}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  EXPECT_NE(inst->name_expression.find(".block_N = 256, .block_K = 128, .wgmma_N = 128"), std::string::npos);
  EXPECT_NE(inst->name_expression.find(".uniform_desc = true"), std::string::npos);
}

// uniform_desc=true compiles for bf16 and e4m3 with each scaling at the default tiles and schedule, spill-free (e4m3
// row and block scales spill 8 B without it), its descriptors from redux.sync; false builds none.
TEST(GemmGroupedSpec, UniformDescriptorsCompileSpillFree) {
  JitOptions opt;
  opt.arch = "sm_90a";
  const std::vector<KV> problems = {{}, {{"dtype", "e4m3"}, {"scaling", "tensor"}}, {{"dtype", "e4m3"}, {"scaling", "row"}},
                                    {{"dtype", "e4m3"}, {"scaling", "block"}}};
  for (const KV& problem : problems) {
    SCOPED_TRACE(problem.empty() ? "bf16" : problem.at("scaling"));
    const auto compiled =
        test::scratch_jit().compile(compile_request(instance(problem, {{"uniform_desc", "true"}}), opt));
    ASSERT_TRUE(compiled.ok()) << compiled.status().message();
    EXPECT_NE(compiled->name_expression.find(".uniform_desc = true"), std::string::npos);
    EXPECT_NE(compiled->ptx.find("redux.sync"), std::string::npos);
    EXPECT_EQ(compiled->resources.spill_store_bytes, 0);
    EXPECT_EQ(compiled->resources.spill_load_bytes, 0);
  }
  const auto plain = test::scratch_jit().compile(compile_request(instance({}, {{"uniform_desc", "false"}}), opt));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->ptx.find("redux.sync"), std::string::npos);
}

TEST(GemmGroupedSpec, LayoutsAreThePlans) {
  for (const char* dtype : {"bf16", "e4m3"}) {
    const KernelInstance k = instance({{"dtype", dtype}});
    const GemmGroupedPlan p = make_plan(GemmGroupedConfig{.block_K = dtype == std::string("e4m3") ? 128 : 64,
                                                          .wgmma_N = dtype == std::string("e4m3") ? 128 : 256,
                                                          .e4m3 = dtype == std::string("e4m3")});
    std::map<std::string, std::string> by_name;
    for (const LayoutInfo& l : k.spec->layouts(k.problem, k.config)) by_name[l.name] = l.spec;
    const std::string kk = dtype == std::string("e4m3") ? "k32" : "k16";
    EXPECT_EQ(by_name["wgmma_C"], "wgmma.m64n256" + kk + ".f32.C");
    EXPECT_EQ(by_name.count("wgmma_part"), dtype == std::string("e4m3") ? 1u : 0u);
    for (const auto& [name, tile] : std::map<std::string, SwizzledLayout>{{"smem_A", p.smem_A}, {"smem_B", p.smem_B}}) {
      const LayoutSpec s = parse_spec(by_name.at(name));
      EXPECT_TRUE(s.memory.layout() == tile.layout() && s.memory.swizzle() == tile.swizzle()) << name;
    }
  }
  ASSERT_EQ(grouped_spec().probes.size(), 9u);
  EXPECT_EQ(grouped_spec().probes[GemmFp8Probe::epilogue], "epilogue");
}

// [SECTION] the reference

ReferenceInputs inputs_of(const KernelInstance& k) {
  ReferenceInputs in;
  for (const ArgSpec& a : k.args)
    if (a.kind == ArgSpec::Kind::tensor && a.role != ArgRole::out) in.tensors[a.name] = make_host_tensor(a);
  return in;
}

// Contiguous: an entry is its group's rows of A against that group's B by hand, and the reference with each B_g
// taken from the next group (what a kernel indexing B wrongly computes) leaves the tolerance. Masked: rows past
// masked_m keep C's values from before the launch, the others are computed.
TEST(GemmGroupedSpec, ReferenceUsesEachGroupsBAndLeavesMaskedRows) {
  const KernelInstance k = instance({{"G", "3"}, {"M", "40"}, {"N", "24"}, {"K", "80"}, {"uneven", "true"}});
  const ReferenceInputs in = inputs_of(k);
  const std::vector<std::int32_t> offsets = ints(arg(k, "offsets"));
  const HostTensor &A = in.tensor("A"), &B = in.tensor("B");
  const std::int64_t N = 24, K = 80, rows = offsets.back();
  std::vector<std::int64_t> all(static_cast<std::size_t>(rows * N));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  const std::vector<double> ref = k.spec->reference(k.problem, in, "C", all).value();
  for (int g = 0; g < 3; ++g)
    for (std::int64_t r = offsets[g]; r < offsets[g + 1]; ++r)
      for (std::int64_t c = 0; c < N; c += 7) {
        double s = 0;
        for (std::int64_t kk = 0; kk < K; ++kk) s += A.at(r * K + kk) * B.at((g * N + c) * K + kk);
        ASSERT_NEAR(ref[static_cast<std::size_t>(r * N + c)], s, 1e-9) << "group " << g << " row " << r;
      }
  ReferenceInputs wrong = in;
  HostTensor& b = wrong.tensors.at("B");
  for (std::int64_t i = 0; i < b.numel(); ++i)
    store_element(b.data.data(), b.dtype, static_cast<std::uint64_t>(i), B.at((i + N * K) % B.numel()));
  const std::vector<double> bad = k.spec->reference(k.problem, wrong, "C", all).value();
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    diff += (bad[i] - ref[i]) * (bad[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  EXPECT_GT(std::sqrt(diff / norm), 10 * k.tolerance.rel);

  const KernelInstance m = instance({{"G", "3"}, {"M", "40"}, {"N", "24"}, {"K", "80"}, {"layout", "masked"},
                                     {"uneven", "true"}, {"dtype", "e4m3"}, {"scaling", "row"}});
  const ReferenceInputs min = inputs_of(m);
  const std::vector<std::int32_t> masked_m = ints(arg(m, "masked_m"));
  std::vector<std::int64_t> every(3 * 40 * 24);
  for (std::size_t i = 0; i < every.size(); ++i) every[i] = static_cast<std::int64_t>(i);
  const std::vector<double> mref = m.spec->reference(m.problem, min, "C", every).value();
  const HostTensor &MA = min.tensor("A"), &MB = min.tensor("B"), &SA = min.tensor("scale_A"), &SB = min.tensor("scale_B"),
                   &C0 = min.tensor("C");
  int kept = 0;
  for (int g = 0; g < 3; ++g)
    for (std::int64_t r = g * 40; r < g * 40 + 40; ++r)
      for (std::int64_t c = 0; c < N; c += 5) {
        const std::size_t i = static_cast<std::size_t>(r * N + c);
        if (r - g * 40 >= masked_m[g]) {
          ASSERT_EQ(mref[i], C0.at(static_cast<std::int64_t>(i))) << "masked row " << r;
          ++kept;
          continue;
        }
        double s = 0;
        for (std::int64_t kk = 0; kk < K; ++kk) s += MA.at(r * K + kk) * MB.at((g * N + c) * K + kk);
        ASSERT_NEAR(mref[i], s * SA.at(r) * SB.at(g * N + c), 1e-9) << "group " << g << " row " << r;
      }
  EXPECT_GT(kept, 0);
}

}  // namespace
}  // namespace tl
