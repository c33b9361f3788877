// gemm.wgmma's plan against what TMA, wgmma and the spec need: tiles as SWIZZLE_128B writes them, canonical wgmma
// descriptors, the accumulator atom, the epilogue's offsets, disjoint shared-memory regions, a name per config.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "gemm/gemm_wgmma_plan.hpp"
#include "library/library.hpp"
#include "tests/kernels/gemm_plan_checks.hpp"
#include "tests/support/scratch_jit.hpp"
#include "tile/atom_registry.hpp"
#include "tile/layout_spec.hpp"
#include "tile/work_order.hpp"

namespace tl {
namespace {

using gemm_detail::kOutBf16;
using gemm_detail::kOutF16;
using gemm_detail::kOutF32;
using test::expect_bijective_chunks;
using test::Region;
using test::tma_sw128;

// Every shape the spec accepts (num_stages only moves offsets: 3 here, the bytes test varies it).
std::vector<GemmWgmmaConfig> all_configs() {
  std::vector<GemmWgmmaConfig> out;
  for (int bm : {64, 128})
    for (int bn : {128, 192, 256})
      for (bool trans_b : {true, false})
        for (auto dt : {kOutBf16, kOutF16, kOutF32})
          for (auto [cm, cn] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{1, 2}})
            for (bool tma_store : {true, false})
              // A 2x1 pair multicasts half of an N-major B's 64-column boxes each: 192 is 3 (refused).
              if (bn != 192 || cm == 1 || trans_b)
                out.push_back({.block_M = bm, .block_N = bn, .tma_store = tma_store, .cluster_M = cm, .cluster_N = cn,
                               .trans_B = trans_b, .out_dtype = dt});
  return out;
}

std::string describe(const GemmWgmmaConfig& c) { return name_expression(c); }

// [SECTION] shared-memory tiles

// A, and a K-major B: TMA boxes of (64 k, rows) at the tile's start, or for the operand a cluster pair shares, rank
// r's half at r times the half's bytes from it (where the kernel puts it); element (row, k) of a box lands at
// row * 128 + 2 k, swizzled.
void expect_k_major_box_writes(const SwizzledLayout& tile, int rows, const GemmWgmmaPlan::Box& box, int in_bytes) {
  const int half_bytes = in_bytes * tile(box.outer % rows, 0);  // where the kernel puts rank 1's half (0: no halves)
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < 64; ++k) {
      const int part = r / box.outer;
      const int in_box = tma_sw128((r % box.outer) * 128 + in_bytes * k);
      ASSERT_EQ(in_bytes * tile(r, k), part * half_bytes + in_box) << "row " << r << " k " << k;
    }
}

TEST(GemmWgmmaPlan, TilesAreWhatTmaSwizzle128BWrites) {
  for (const GemmWgmmaConfig& c : all_configs()) {
    SCOPED_TRACE(describe(c));
    const GemmWgmmaPlan p = make_plan(c);
    ASSERT_TRUE(p.smem_A.ok() && p.smem_B.ok() && p.smem_C.ok());
    EXPECT_EQ(p.smem_A.swizzle(), smem_swizzle(SmemSwizzle::b128, 2));
    expect_k_major_box_writes(p.smem_A, c.block_M, p.box_A, p.in_bytes);
    if (c.trans_B) {
      expect_k_major_box_writes(p.smem_B, c.block_N, p.box_B, p.in_bytes);
    } else {
      // B K x N: box q (64 n, 64 k) at q times the kernel's box stride; (n, k) of it at k * 128 + 2 (n % 64).
      const int box_stride = p.in_bytes * p.smem_B(p.box_B.inner, 0);
      for (int n = 0; n < c.block_N; ++n)
        for (int k = 0; k < c.block_K; ++k)
          ASSERT_EQ(p.in_bytes * p.smem_B(n, k), (n / 64) * box_stride + tma_sw128(k * 128 + p.in_bytes * (n % 64)))
              << "n " << n << " k " << k;
    }
    test::expect_staging_tile_is_tma_store_boxes(p, c.block_N);
  }
}

TEST(GemmWgmmaPlan, TilesAreBijectionsOfWhole16ByteChunks) {
  for (const GemmWgmmaConfig& c : all_configs()) {
    SCOPED_TRACE(describe(c));
    const GemmWgmmaPlan p = make_plan(c);
    expect_bijective_chunks(p.smem_A, c.block_M, c.block_K, p.in_bytes, false);
    expect_bijective_chunks(p.smem_B, c.block_N, c.block_K, p.in_bytes, !c.trans_B);
    expect_bijective_chunks(p.smem_C, 64, c.block_N, p.c_bytes, false);
  }
}

// PTX ISA, "Shared memory matrix layout" / "Matrix Descriptor Format", 128-byte swizzle: a K-major operand is rows of
// 128 bytes, 8-row core-matrix groups 1024 bytes apart (the stride byte offset); an MN-major one is k-rows of 64 MN
// elements, 8 k-rows per 1024 bytes (stride byte offset), the next 64 MN elements one block further (leading byte
// offset: here a TMA box of 64 x 64 16-bit elements, 8192 bytes). wgmma k16 starts 32 bytes (K-major) or 16 k-rows,
// 2048 bytes (MN-major) further, and a descriptor starts at a swizzle atom's first row.
TEST(GemmWgmmaPlan, DescriptorsAreTheCanonicalSwizzle128Layouts) {
  for (const GemmWgmmaConfig& c : all_configs()) {
    SCOPED_TRACE(describe(c));
    const GemmWgmmaPlan p = make_plan(c);
    EXPECT_EQ(p.a_sbo, 1024);
    EXPECT_EQ(p.b_sbo, 1024);
    EXPECT_EQ(p.a_lbo, 16);
    EXPECT_EQ(p.b_lbo, c.trans_B ? 16 : 8192);
    // The kernel's start addresses: consumer c's rows and step kk by strides read off the layouts (gemm_wgmma.cuh).
    const int a_wg = p.in_bytes * p.smem_A(64, 0), a_k16 = p.in_bytes * p.smem_A(0, 16);
    const int b_k16 = p.in_bytes * p.smem_B(0, 16);
    EXPECT_EQ(a_k16, 32);
    EXPECT_EQ(b_k16, c.trans_B ? 32 : 2048);
    for (int kk = 0; kk < c.block_K / 16; ++kk) {
      for (int wg = 0; wg < c.consumers(); ++wg) {
        EXPECT_EQ(p.in_bytes * p.smem_A(64 * wg, 16 * kk), wg * a_wg + kk * a_k16);
        EXPECT_EQ(p.smem_A(64 * wg, 16 * kk), p.smem_A.layout()(64 * wg, 16 * kk)) << "not an atom's first row";
      }
      EXPECT_EQ(p.in_bytes * p.smem_B(0, 16 * kk), kk * b_k16);
      EXPECT_EQ(p.smem_B(0, 16 * kk), p.smem_B.layout()(0, 16 * kk)) << "not an atom's first row";
    }
  }
}

// [SECTION] the accumulator and the epilogue

TEST(GemmWgmmaPlan, AccumulatorIsTheWgmmaAtom) {
  for (int bn : {128, 192, 256}) {
    const GemmWgmmaPlan p = make_plan({.block_N = bn});
    const std::string atom = "wgmma.m64n" + std::to_string(bn) + "k16.f32.C";
    EXPECT_EQ(fragment_spec(p.acc, atom).value_or("none"), atom);
    EXPECT_EQ(p.acc.num_threads(), 128);
    EXPECT_EQ(p.acc.num_values(), bn / 2);
    EXPECT_EQ(p.acc_pair, 2);
    EXPECT_EQ(p.acc_block, 4);
  }
}

// The kernel's epilogue computes register v's place and staging offset from the thread's register 0 and the table
// (gemm_wgmma.cuh): they must be the fragment's and the staging layout's, for every thread and register, and the
// registers' pairs must cover the tile once.
TEST(GemmWgmmaPlan, EpilogueOffsetsAreTheLayouts) {
  for (int bn : {128, 192, 256})
    for (auto dt : {kOutBf16, kOutF32}) {
      const GemmWgmmaPlan p = make_plan({.block_N = bn, .out_dtype = dt});
      SCOPED_TRACE("block_N " + std::to_string(bn) + " c_bytes " + std::to_string(p.c_bytes));
      const GemmWgmmaAccTable at = acc_table(p);
      const int pair = p.acc_pair, block = p.acc_block;
      EXPECT_EQ(at.staging[pair] % p.smem_C.period(), 0);  // the kernel adds a row half's offset as is
      std::vector<int> covered(static_cast<size_t>(64 * bn), 0);
      for (int t = 0; t < 128; ++t) {
        const TileCoord e0 = p.acc(t, 0);
        const int thread_at = p.smem_C(e0.row, e0.col);
        for (int j = 0; j < p.acc.num_values() / block; ++j) {
          const int block_at = p.smem_C.join_disjoint(thread_at, at.staging[block * j]);
          for (int h = 0; h < block / pair; ++h) {
            const int v = block * j + pair * h;
            const TileCoord e = p.acc(t, v), next = p.acc(t, v + 1);
            ASSERT_EQ(e, (TileCoord{e0.row + at.at[v].row, e0.col + at.at[block * j].col})) << "t " << t << " v " << v;
            ASSERT_EQ(next, (TileCoord{e.row, e.col + 1})) << "t " << t << " v " << v;
            const int staged = block_at + at.staging[pair * h];
            ASSERT_EQ(staged, p.smem_C(e.row, e.col)) << "t " << t << " v " << v;
            ++covered[static_cast<size_t>(staged)];
            ++covered[static_cast<size_t>(p.smem_C(next.row, next.col))];
          }
        }
      }
      EXPECT_EQ(std::count(covered.begin(), covered.end(), 1), 64 * bn);
    }
}

// [SECTION] shared memory, boxes, bytes

TEST(GemmWgmmaPlan, RegionsAreDisjointAlignedAndBoxesFillTheStages) {
  for (GemmWgmmaConfig c : all_configs())
    for (int stages : {2, 3, 5}) {
      c.num_stages = stages;
      SCOPED_TRACE(describe(c));
      const GemmWgmmaPlan p = make_plan(c);
      EXPECT_EQ(p.align, 1024);  // the 128B swizzle repeats every 8 rows of 128 bytes
      EXPECT_EQ(p.a_stage_bytes, c.block_M * c.block_K * p.in_bytes);
      EXPECT_EQ(p.b_stage_bytes, c.block_N * c.block_K * p.in_bytes);
      std::vector<Region> tiles;
      for (int s = 0; s < stages; ++s) {
        tiles.push_back({p.a_offset + s * p.a_stage_bytes, p.a_offset + (s + 1) * p.a_stage_bytes});
        tiles.push_back({p.b_offset + s * p.b_stage_bytes, p.b_offset + (s + 1) * p.b_stage_bytes});
      }
      for (int wg = 0; wg < c.consumers() && c.tma_store; ++wg)
        tiles.push_back({p.c_offset + wg * p.c_tile_bytes, p.c_offset + (wg + 1) * p.c_tile_bytes});
      EXPECT_EQ(p.full_bar_offset % 8, 0);
      test::expect_disjoint_regions(tiles,
                                    {{p.full_bar_offset, p.full_bar_offset + 8 * stages},
                                     {p.empty_bar_offset, p.empty_bar_offset + 8 * stages}},
                                    p.align, p.bytes);
      EXPECT_EQ(p.c_tile_bytes, c.tma_store ? 64 * c.block_N * p.c_bytes : 0);

      // What one stage's full barrier expects: the boxes of A and B (the shared operand's halves from both CTAs).
      const int a_box = p.box_A.inner * p.box_A.outer * p.in_bytes, b_box = p.box_B.inner * p.box_B.outer * p.in_bytes;
      EXPECT_EQ(a_box * c.cluster_N, p.a_stage_bytes);
      EXPECT_EQ(b_box * (c.trans_B ? c.cluster_M : p.b_boxes), p.b_stage_bytes);
      EXPECT_EQ(p.box_A.inner * p.in_bytes, 128);
      EXPECT_EQ(p.box_B.inner * p.in_bytes, 128);
      EXPECT_EQ(p.box_C.inner * p.c_bytes, 128);
      EXPECT_EQ(p.box_C.outer, 64);
      EXPECT_EQ(p.box_A.outer % 8, 0);  // a half starts a swizzle atom
    }
}

TEST(GemmWgmmaPlan, DefaultsFitTheH100) {
  const int optin = limits_for_arch("sm_90a").smem_per_block_optin;
  EXPECT_LE(make_plan(GemmWgmmaConfig{}).bytes, optin);
  EXPECT_LE(make_plan({.block_N = 128, .tma_store = true, .out_dtype = kOutF32}).bytes, optin);
  // 3 stages of 128 x 64 + 256 x 64 bf16 tiles and a 128 x 256 f32 staging tile do not (the spec refuses it).
  EXPECT_GT(make_plan({.tma_store = true, .out_dtype = kOutF32}).bytes, optin);
}

// [SECTION] the config as the kernel's name, and the spec reading the plan

const KernelSpec& wgmma_spec() { return *library_registry().find("gemm.wgmma").value(); }

KernelInstance instance(const std::map<std::string, std::string>& problem, const std::map<std::string, std::string>& config) {
  auto inst = instantiate(wgmma_spec(), problem, config, limits_for_arch("sm_90a"));
  EXPECT_TRUE(inst.ok()) << inst.status().message();
  return inst.value();
}
std::map<std::string, std::string> with_key(std::map<std::string, std::string> m, const std::string& key,
                                            const std::string& value) {
  m[key] = value;
  return m;
}

TEST(GemmWgmmaPlan, EveryFieldReachesTheNameAndTheCacheKey) {
  using KV = std::map<std::string, std::string>;
  // One change per config field (and per problem flag the kernel is specialised on).
  const std::vector<std::pair<KV, KV>> variants = {
      {{}, {}},
      {{}, {{"block_M", "64"}}},
      {{}, {{"block_N", "128"}}},
      {{}, {{"block_N", "192"}}},
      {{}, {{"num_stages", "2"}}},
      {{}, {{"panel", "8"}}},
      {{}, {{"raster", "n"}}},
      {{}, {{"tma_store", "false"}}},
      {{}, {{"cluster_M", "2"}}},
      {{}, {{"cluster_N", "2"}}},
      {{{"dtype", "f16"}}, {}},
      {{{"trans_B", "false"}}, {}},
      {{{"out_dtype", "f16"}}, {}},
      {{{"out_dtype", "f32"}}, {{"tma_store", "true"}, {"block_N", "128"}}},
      {{}, {{"schedule", "stream_k"}}},
      {{}, {{"schedule", "pingpong"}, {"block_M", "64"}, {"num_stages", "4"}}},
      {{}, {{"block_M", "64"}, {"num_stages", "4"}}}};
  test::expect_distinct_names_and_keys(wgmma_spec(), variants);
  EXPECT_EQ(instance({}, {{"schedule", "data_parallel"}}).name_expression,
            "tl::gemm_wgmma<tl::GemmWgmmaConfig{.block_M = 128, .block_N = 256, .block_K = 64, .num_stages = 3, "
            ".panel = 4, .raster_n = false, .tma_store = true, .cluster_M = 1, .cluster_N = 1, .bf16 = true, "
            ".trans_B = true, .out_dtype = tl::gemm_detail::kOutBf16, .stream_k = false}>");
  // auto at the default problem (4096^3: stream-K would not pay) is data-parallel, the same kernel; stream_k has its
  // own entry.
  EXPECT_EQ(instance({}, {}).name_expression, instance({}, {{"schedule", "data_parallel"}}).name_expression);
  EXPECT_EQ(instance({}, {{"schedule", "stream_k"}}).name_expression.rfind("tl::gemm_wgmma_stream_k<", 0), 0u);
  JitOptions opt;
  opt.arch = "sm_90a";
  // The designated initializers compile (NVRTC checks every field name and their order); test_library compiles the
  // defaults, this a non-default name.
  const auto compiled = test::scratch_jit().compile(compile_request(instance({{"trans_B", "false"}}, {{"block_M", "64"}}), opt));
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_NE(compiled->lowered_name.find("GemmWgmmaConfig"), std::string::npos);
}

// 256 x 152 tiles (cuBLAS's at 3000 x 5000 x 4096): two consumer warpgroups of two 64-row m64n152 chains each (152
// accumulators a thread after setmaxnreg), a plain row-major 64 x 152 staging tile per consumer stored by one
// unswizzled TMA box; what they cannot do is refused with the way out.
TEST(GemmWgmmaPlan, TwoChainsAConsumerPlainStagingCompileAndRefuseWhatTheyCannot) {
  constexpr GemmWgmmaConfig cfg{.block_M = 256, .block_N = 152};
  static_assert(cfg.consumers() == 2 && cfg.chains() == 2 && cfg.threads() == 384);
  static_assert(GemmWgmmaConfig{}.chains() == 1 && GemmWgmmaConfig{.block_M = 64}.consumers() == 1);
  for (auto dt : {kOutBf16, kOutF16, kOutF32}) {
    const GemmWgmmaPlan p = make_plan({.block_M = 256, .block_N = 152, .out_dtype = dt});
    SCOPED_TRACE("c_bytes " + std::to_string(p.c_bytes));
    EXPECT_EQ(p.c_swizzle, 0);
    EXPECT_EQ(p.acc.num_values(), 76);
    EXPECT_EQ(p.c_tile_bytes, 64 * 152 * p.c_bytes);
    EXPECT_EQ(p.box_C.inner, 152);
    EXPECT_EQ(p.box_C.outer, 64);
    EXPECT_EQ(p.box_C.inner * p.c_bytes % 16, 0);  // the tensor map's 16-byte rows
    EXPECT_EQ(p.c_offset % 128, 0);
    EXPECT_EQ(p.c_tile_bytes % 128, 0);  // the second consumer's tile starts aligned too
    EXPECT_EQ(p.b_stage_bytes % 1024, 0);  // every B stage starts a swizzle atom
    // The plain staging offsets: register v of thread t at (row, col) of the row-major tile, every element once.
    const GemmWgmmaAccTable at = acc_table(p);
    std::vector<int> covered(64 * 152, 0);
    for (int t = 0; t < 128; ++t) {
      const TileCoord e0 = p.acc(t, 0);
      for (int v = 0; v < p.acc.num_values(); ++v) {
        const TileCoord e = p.acc(t, v);
        ASSERT_EQ(e, (TileCoord{e0.row + at.at[v].row, e0.col + at.at[v].col})) << "t " << t << " v " << v;
        ASSERT_EQ(e0.row * 152 + e0.col + at.staging[v], e.row * 152 + e.col);
        ++covered[static_cast<size_t>(e.row * 152 + e.col)];
      }
    }
    EXPECT_EQ(std::count(covered.begin(), covered.end(), 1), 64 * 152);
    if (p.c_bytes == 2) {
      // A warp's 4-byte pair stores of one register pair: 32 lanes in 32 different banks.
      for (int w = 0; w < 4; ++w)
        for (int v = 0; v < p.acc.num_values(); v += p.acc_pair) {
          std::set<int> banks;
          for (int l = 0; l < 32; ++l) {
            const TileCoord e = p.acc(32 * w + l, v);
            banks.insert((e.row * 152 + e.col) * 2 / 4 % 32);
          }
          ASSERT_EQ(banks.size(), 32u) << "warp " << w << " v " << v;
        }
    }
  }
  // Three stages and two 64 x 152 bf16 staging tiles fit; four stages do not.
  const int optin = limits_for_arch("sm_90a").smem_per_block_optin;
  EXPECT_LE(make_plan(cfg).bytes, optin);
  EXPECT_GT(make_plan({.block_M = 256, .block_N = 152, .num_stages = 4}).bytes, optin);

  const KernelInstance k = instance({{"M", "3000"}, {"N", "5000"}}, {{"block_M", "256"}, {"block_N", "152"}});
  EXPECT_NE(k.name_expression.find(".block_M = 256, .block_N = 152"), std::string::npos) << k.name_expression;
  EXPECT_NE(k.name_expression.find(".tma_store = true"), std::string::npos) << k.name_expression;
  EXPECT_EQ(k.name_expression.rfind("tl::gemm_wgmma<", 0), 0u) << "schedule=auto never splits 256-row tiles";
  EXPECT_EQ(k.launch.block.x, 384u);
  for (const ArgSpec& a : k.args)
    if (a.kind == ArgSpec::Kind::tensor_map && a.name == "tma_C") {
      EXPECT_EQ(a.box, (std::vector<std::int64_t>{152, 64}));
      EXPECT_EQ(a.swizzle_bytes, 0);
    }
  JitOptions opt;
  opt.arch = "sm_90a";
  for (const char* store : {"true", "false"}) {
    const KernelInstance ks = instance({{"M", "3000"}, {"N", "5000"}},
                                       {{"block_M", "256"}, {"block_N", "152"}, {"tma_store", store}});
    const auto compiled = test::scratch_jit().compile(compile_request(ks, opt));
    ASSERT_TRUE(compiled.ok()) << compiled.status().message();
    EXPECT_EQ(compiled->resources.spill_store_bytes, 0) << "tma_store=" << store << ": 152 accumulators under 232";
  }
  const auto refused = [](const std::map<std::string, std::string>& problem,
                          const std::map<std::string, std::string>& config, const std::string& why) {
    const auto r = instantiate(wgmma_spec(), problem, config, limits_for_arch("sm_90a"));
    ASSERT_FALSE(r.ok()) << why;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  };
  refused({}, {{"block_M", "256"}}, "use block_N=128 or 152");
  refused({}, {{"block_M", "256"}, {"block_N", "152"}, {"schedule", "stream_k"}}, "data-parallel single CTAs");
  refused({}, {{"block_M", "256"}, {"block_N", "128"}, {"cluster_M", "2"}}, "data-parallel single CTAs");
  refused({{"trans_B", "false"}}, {{"block_N", "152"}}, "trans_B=true");
  refused({}, {{"block_N", "152"}, {"cluster_N", "2"}}, "trans_B=true");
  refused({}, {{"block_M", "256"}, {"block_N", "152"}, {"num_stages", "4"}}, "shared memory");

  // c_split=2: two overlapping parts of 80 columns (the second from column 72) through one 64 x 80 buffer a
  // consumer, so that a fourth stage fits.
  const GemmWgmmaPlan split = make_plan({.block_M = 256, .block_N = 152, .num_stages = 4, .c_split = 2});
  EXPECT_EQ(split.c_cols, 80);
  EXPECT_EQ(split.c_tile_bytes, 64 * 80 * 2);
  EXPECT_EQ(split.box_C.inner, 80);
  EXPECT_LE(split.bytes, optin);
  const KernelInstance k4 = instance({{"M", "3000"}, {"N", "5000"}},
                                     {{"block_M", "256"}, {"block_N", "152"}, {"num_stages", "4"}, {"c_split", "2"}});
  EXPECT_NE(k4.name_expression.find(".c_split = 2"), std::string::npos) << k4.name_expression;
  const auto compiled4 = test::scratch_jit().compile(compile_request(k4, opt));
  ASSERT_TRUE(compiled4.ok()) << compiled4.status().message();
  EXPECT_EQ(compiled4->resources.spill_store_bytes, 0);
  // The swizzled tile splits in whole 64-column sub-tiles (128 x 256: 4 stages), and the default's name is unchanged.
  EXPECT_LE(make_plan({.num_stages = 4, .c_split = 2}).bytes, optin);
  EXPECT_EQ(name_expression(GemmWgmmaConfig{}).find("c_split"), std::string::npos);
  refused({}, {{"block_N", "192"}, {"c_split", "2"}}, "whole 64-column staging sub-tiles");
  refused({}, {{"c_split", "2"}, {"tma_store", "false"}}, "set c_split=1");
}

// block_M=192, block_N=192 (cuBLAS's 6144^3 tile): two consumers of 96 columns of all 192 rows, three m64n96 chains
// each on one B descriptor of their columns; each consumer's 64 x 96 staging tile as three 32-column SWIZZLE_64B
// sub-tiles (a 16-bit C) stored chain by chain; 4 stages of 48 KB fit beside them.
TEST(GemmWgmmaPlan, ColumnHalvesOf192x192TilesStageSwizzle64AndCompile) {
  constexpr GemmWgmmaConfig cfg{.block_M = 192, .block_N = 192, .num_stages = 4};
  static_assert(cfg.split_cols() && cfg.consumers() == 2 && cfg.chains() == 3 && cfg.wgmma_n() == 96 &&
                cfg.threads() == 384);
  static_assert(GemmWgmmaConfig{}.wgmma_n() == 256 && !GemmWgmmaConfig{.block_M = 256, .block_N = 152}.split_cols());
  const int optin = limits_for_arch("sm_90a").smem_per_block_optin;
  const GemmWgmmaPlan p = make_plan(cfg);
  EXPECT_EQ(p.acc.num_values(), 48);  // x 3 chains = 144 accumulator registers a thread
  EXPECT_EQ(p.acc.cols(), 96);
  EXPECT_EQ(p.a_stage_bytes + p.b_stage_bytes, 48 * 1024);
  EXPECT_EQ(p.in_bytes * p.smem_B(96, 0) % 1024, 0);  // consumer 1's B columns start a swizzle atom
  EXPECT_EQ(p.in_bytes * p.smem_B(96, 0), 96 * 128);
  EXPECT_EQ(p.c_swizzle, 64);
  EXPECT_EQ(p.box_C.inner, 32);
  EXPECT_EQ(p.box_C.outer, 64);
  EXPECT_EQ(p.c_tile_bytes, 64 * 96 * 2);
  EXPECT_EQ(p.c_offset % 1024, 0);
  EXPECT_EQ(p.c_tile_bytes % 1024, 0);  // the second consumer's tile starts aligned too
  EXPECT_LE(p.bytes, optin);
  // The staging tile is what TMA's SWIZZLE_64B writes for three (32, 64) boxes, sub-tile q at q x 4 KB.
  auto sw64 = [](int linear) { return linear ^ (((linear >> 7) & 3) << 4); };
  for (int r = 0; r < 64; ++r)
    for (int col = 0; col < 96; ++col)
      ASSERT_EQ(2 * p.smem_C(r, col), (col / 32) * 4096 + sw64(r * 64 + 2 * (col % 32))) << r << " " << col;
  // Every register's staging offset is the layout's (the kernel's joins), every element once, and a warp's pair
  // stores of one register pair fall in 32 different banks.
  const GemmWgmmaAccTable at = acc_table(p);
  EXPECT_EQ(at.staging[p.acc_pair] % p.smem_C.period(), 0);
  std::vector<int> covered(64 * 96, 0);
  for (int t = 0; t < 128; ++t) {
    const TileCoord e0 = p.acc(t, 0);
    const int thread_at = p.smem_C(e0.row, e0.col);
    for (int j = 0; j < p.acc.num_values() / p.acc_block; ++j) {
      const int block_at = p.smem_C.join_disjoint(thread_at, at.staging[p.acc_block * j]);
      for (int h = 0; h < p.acc_block / p.acc_pair; ++h) {
        const int v = p.acc_block * j + p.acc_pair * h;
        const TileCoord e = p.acc(t, v);
        ASSERT_EQ(block_at + at.staging[p.acc_pair * h], p.smem_C(e.row, e.col)) << "t " << t << " v " << v;
        ++covered[static_cast<size_t>(p.smem_C(e.row, e.col))];
        ++covered[static_cast<size_t>(p.smem_C(e.row, e.col + 1))];
      }
    }
  }
  EXPECT_EQ(std::count(covered.begin(), covered.end(), 1), 64 * 96);
  for (int w = 0; w < 4; ++w)
    for (int v = 0; v < p.acc.num_values(); v += p.acc_pair) {
      std::set<int> banks;
      for (int l = 0; l < 32; ++l) {
        const TileCoord e = p.acc(32 * w + l, v);
        banks.insert(p.smem_C(e.row, e.col) * 2 / 4 % 32);
      }
      ASSERT_EQ(banks.size(), 32u) << "warp " << w << " v " << v;
    }
  // An f32 C: 96 columns are three 128-byte sub-tiles; its two 24 KB staging tiles fit beside 3 stages.
  const GemmWgmmaPlan f32 = make_plan({.block_M = 192, .block_N = 192, .out_dtype = kOutF32});
  EXPECT_EQ(f32.c_swizzle, 128);
  EXPECT_EQ(f32.box_C.inner, 32);
  EXPECT_LE(f32.bytes, optin);

  const KernelInstance k = instance({{"M", "6144"}, {"N", "6144"}, {"K", "6144"}},
                                    {{"block_M", "192"}, {"block_N", "192"}, {"num_stages", "4"}});
  EXPECT_NE(k.name_expression.find(".block_M = 192, .block_N = 192"), std::string::npos) << k.name_expression;
  EXPECT_EQ(k.name_expression.rfind("tl::gemm_wgmma<", 0), 0u) << "schedule=auto never splits 192 x 192 tiles";
  EXPECT_EQ(k.launch.block.x, 384u);
  for (const ArgSpec& a : k.args)
    if (a.kind == ArgSpec::Kind::tensor_map && a.name == "tma_C") {
      EXPECT_EQ(a.box, (std::vector<std::int64_t>{32, 64}));
      EXPECT_EQ(a.swizzle_bytes, 64);
    }
  JitOptions opt;
  opt.arch = "sm_90a";
  for (const char* store : {"true", "false"}) {
    const KernelInstance ks = instance({{"M", "6144"}, {"N", "6144"}, {"K", "6144"}},
                                       {{"block_M", "192"}, {"block_N", "192"}, {"num_stages", "4"}, {"tma_store", store}});
    const auto compiled = test::scratch_jit().compile(compile_request(ks, opt));
    ASSERT_TRUE(compiled.ok()) << compiled.status().message();
    EXPECT_EQ(compiled->resources.spill_store_bytes, 0) << "tma_store=" << store << ": 144 accumulators under 232";
  }
  const auto refused = [](const std::map<std::string, std::string>& problem,
                          const std::map<std::string, std::string>& config, const std::string& why) {
    const auto r = instantiate(wgmma_spec(), problem, config, limits_for_arch("sm_90a"));
    ASSERT_FALSE(r.ok()) << why;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  };
  refused({}, {{"block_M", "192"}}, "it needs block_N=192");
  refused({{"trans_B", "false"}}, {{"block_M", "192"}, {"block_N", "192"}}, "it needs block_N=192");
  // Pairs (cuBLAS runs this tile in 2-CTA clusters): each CTA multicasts 96 rows of the shared operand, whole atoms.
  for (auto [cm, cn] : {std::pair{2, 1}, std::pair{1, 2}}) {
    const GemmWgmmaPlan pair = make_plan({.block_M = 192, .block_N = 192, .num_stages = 4, .cluster_M = cm, .cluster_N = cn});
    EXPECT_EQ((cm == 2 ? pair.box_B : pair.box_A).outer, 96);
    EXPECT_EQ((cm == 2 ? pair.in_bytes * pair.smem_B(96, 0) : pair.in_bytes * pair.smem_A(96, 0)) % 1024, 0);
    const KernelInstance kc = instance({{"M", "6144"}, {"N", "6144"}, {"K", "6144"}},
                                       {{"block_M", "192"}, {"block_N", "192"}, {"num_stages", "4"},
                                        {"cluster_M", std::to_string(cm)}, {"cluster_N", std::to_string(cn)}});
    EXPECT_EQ(kc.launch.cluster.x, 2u);
    const auto compiled = test::scratch_jit().compile(compile_request(kc, opt));
    ASSERT_TRUE(compiled.ok()) << compiled.status().message();
    EXPECT_EQ(compiled->resources.spill_store_bytes, 0);
  }
  refused({}, {{"block_M", "192"}, {"block_N", "192"}, {"schedule", "stream_k"}}, "it needs block_N=192");
  refused({}, {{"block_M", "192"}, {"block_N", "192"}, {"c_split", "2"}}, "staging sub-tiles");
  refused({}, {{"block_M", "192"}, {"block_N", "192"}, {"num_stages", "5"}}, "shared memory");
}

// schedule=pingpong: the two consumers on alternate tiles of their own, each a whole tile as block_M / 64 chains;
// block_M=0 gives 128 x 128 (two m64n128 chains), and the default depth the deepest ring that fits; the default's
// name has no `pingpong`; clusters, stream-K's entry and tiles over 128 accumulator registers a thread are refused.
TEST(GemmWgmmaPlan, PingpongTilesAConsumerCompileAndRefuseWhatTheyCannot) {
  constexpr GemmWgmmaConfig sq{.block_M = 128, .block_N = 128, .num_stages = 6, .pingpong = true};
  static_assert(sq.consumers() == 2 && sq.chains() == 2 && sq.wgmma_n() == 128 && sq.threads() == 384);
  constexpr GemmWgmmaConfig wide{.block_M = 64, .block_N = 256, .num_stages = 4, .pingpong = true};
  static_assert(wide.consumers() == 2 && wide.chains() == 1 && wide.wgmma_n() == 256);
  const int optin = limits_for_arch("sm_90a").smem_per_block_optin;
  EXPECT_LE(make_plan(sq).bytes, optin);
  EXPECT_GT(make_plan({.block_M = 128, .block_N = 128, .num_stages = 7, .pingpong = true}).bytes, optin);
  EXPECT_LE(make_plan(wide).bytes, optin);
  EXPECT_EQ(make_plan(sq).c_tile_bytes, 64 * 128 * 2);  // a consumer's chains staged in turn through 64 x 128
  EXPECT_EQ(name_expression(GemmWgmmaConfig{}).find("pingpong"), std::string::npos);
  auto has = [](const KernelInstance& k, const std::string& s) { return k.name_expression.find(s) != std::string::npos; };
  const std::map<std::string, std::string> big = {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}};
  const KernelInstance k = instance(big, {{"schedule", "pingpong"}});
  EXPECT_TRUE(has(k, ".block_M = 128, .block_N = 128, .block_K = 64, .num_stages = 6,")) << k.name_expression;
  EXPECT_TRUE(has(k, ".stream_k = false, .pingpong = true}")) << k.name_expression;
  EXPECT_EQ(k.name_expression.rfind("tl::gemm_wgmma<", 0), 0u);
  EXPECT_EQ(k.launch.block.x, 384u);
  EXPECT_EQ(k.launch.grid.x, 132u);
  const KernelInstance k64 = instance(big, {{"schedule", "pingpong"}, {"block_M", "64"}});
  EXPECT_TRUE(has(k64, ".block_M = 64, .block_N = 256, .block_K = 64, .num_stages = 4,")) << k64.name_expression;
  EXPECT_TRUE(has(instance(big, {{"schedule", "pingpong"}, {"tma_store", "false"}}), ".num_stages = 7,"));
  EXPECT_TRUE(has(instance(big, {{"schedule", "pingpong"}, {"num_stages", "4"}}), ".num_stages = 4,"));
  JitOptions opt;
  opt.arch = "sm_90a";
  for (const KernelInstance& ki : {k, k64, instance({{"trans_B", "false"}}, {{"schedule", "pingpong"}})}) {
    const auto compiled = test::scratch_jit().compile(compile_request(ki, opt));
    ASSERT_TRUE(compiled.ok()) << compiled.status().message();
    EXPECT_EQ(compiled->resources.spill_store_bytes, 0) << ki.name_expression;
  }
  const auto refused = [](const std::map<std::string, std::string>& config, const std::string& why) {
    const auto r = instantiate(wgmma_spec(), {}, config, limits_for_arch("sm_90a"));
    ASSERT_FALSE(r.ok()) << why;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  };
  refused({{"schedule", "pingpong"}, {"cluster_M", "2"}}, "set cluster_M=1");
  refused({{"schedule", "pingpong"}, {"block_M", "256"}, {"block_N", "128"}}, "use block_M=128 (with block_N=128) or 64");
  refused({{"schedule", "pingpong"}, {"block_M", "128"}}, "256 accumulator registers");
  refused({{"schedule", "pingpong"}, {"block_N", "192"}}, "192 accumulator registers");
}

// schedule=auto takes pingpong's 128 x 128 tiles (6 stages) at 4-16 k-steps where they are 4+ a CTA (gemmbf7's
// measurements: 4096 x 4096 x 512 and 8192 x 8192 x 1024 of issue 21's eight shapes), for the auto tile with a 16-bit C
// through the TMA store and a K-major B only; never with stream-K.
TEST(GemmWgmmaPlan, ScheduleAutoTakesPingpongAtShortTiles) {
  auto shape = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return std::map<std::string, std::string>{{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}};
  };
  auto has = [](const KernelInstance& k, const std::string& s) { return k.name_expression.find(s) != std::string::npos; };
  const std::string pp = ".block_M = 128, .block_N = 128, .block_K = 64, .num_stages = 6,";
  for (const auto& p : {shape(4096, 4096, 512), shape(8192, 8192, 1024), shape(4096, 4096, 256), shape(8192, 4096, 768),
                        with_key(shape(4096, 4096, 512), "dtype", "f16"), with_key(shape(4096, 4096, 512), "out_dtype", "f16")}) {
    const KernelInstance k = instance(p, {});
    EXPECT_TRUE(has(k, pp)) << k.name_expression;
    EXPECT_TRUE(has(k, ".pingpong = true}")) << k.name_expression;
    EXPECT_EQ(k.name_expression.rfind("tl::gemm_wgmma<", 0), 0u) << k.name_expression;
  }
  // Not at 1-3 or 17+ k-steps, under 4 tiles a CTA, for an f32 C, an N-major B, a config's own tile, depth, split,
  // cluster, epilogue or schedule; not at the other six issue-21 shapes.
  for (const auto& p : {shape(4096, 4096, 128), shape(4096, 4096, 1088), shape(2048, 4096, 1024), shape(4096, 4096, 4096),
                        shape(8192, 8192, 8192), shape(6144, 6144, 6144), shape(3000, 5000, 4096), shape(2048, 8192, 8192),
                        shape(16384, 16384, 4096), with_key(shape(4096, 4096, 512), "out_dtype", "f32"),
                        with_key(shape(4096, 4096, 512), "trans_B", "false")})
    EXPECT_FALSE(has(instance(p, {}), ".pingpong")) << instance(p, {}).name_expression;
  for (const auto& config : std::vector<std::map<std::string, std::string>>{
           {{"block_M", "128"}}, {{"block_N", "128"}}, {{"num_stages", "2"}}, {{"c_split", "2"}}, {{"cluster_M", "2"}},
           {{"tma_store", "false"}}, {{"schedule", "data_parallel"}}, {{"schedule", "stream_k"}}})
    EXPECT_FALSE(has(instance(shape(4096, 4096, 512), config), ".pingpong")) << instance(shape(4096, 4096, 512), config).name_expression;
}

// block_M=0 (auto): 256 x 152 tiles with 4 stages and c_split=2 where their waves fill the SMs better than 128 x 256
// tiles' (under 0.95 of them, K >= 2048): of issue 21's eight shapes only 3000 x 5000 x 4096; else 128 rows.
TEST(GemmWgmmaPlan, TileAutoTakes256x152WhereItsWavesFillBetter) {
  auto shape = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return std::map<std::string, std::string>{{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}};
  };
  const std::string tall = ".block_M = 256, .block_N = 152, .block_K = 64, .num_stages = 4,";
  const std::string wide = ".block_M = 128, .block_N = 256, .block_K = 64, .num_stages = 3,";
  const KernelInstance k = instance(shape(3000, 5000, 4096), {});
  EXPECT_NE(k.name_expression.find(tall), std::string::npos) << k.name_expression;
  EXPECT_NE(k.name_expression.find(".c_split = 2"), std::string::npos) << k.name_expression;
  EXPECT_EQ(k.launch.block.x, 384u);
  EXPECT_EQ(k.launch.dynamic_smem,
            static_cast<std::uint32_t>(make_plan({.block_M = 256, .block_N = 152, .num_stages = 4, .c_split = 2}).bytes));
  for (const auto& p : {shape(8192, 8192, 8192), shape(4096, 4096, 4096), shape(8192, 8192, 1024), shape(4096, 4096, 512),
                        shape(6144, 6144, 6144), shape(2048, 8192, 8192), shape(16384, 16384, 4096)}) {
    const KernelInstance d = instance(p, {});
    EXPECT_EQ(d.name_expression.find(".block_M = 256"), std::string::npos) << d.name_expression;
    EXPECT_EQ(d.name_expression.find(".block_M = 128"), d.name_expression.find("{") + 1) << d.name_expression;
  }
  // Not where it would need what 256 x 152 cannot do, short K, or a tile, depth or split the config gives.
  auto with = [&](std::map<std::string, std::string> p, const std::string& key, const std::string& value) {
    p[key] = value;
    return p;
  };
  for (const auto& [problem, config] :
       std::vector<std::pair<std::map<std::string, std::string>, std::map<std::string, std::string>>>{
           {shape(3000, 5000, 1024), {}},
           {with(shape(3000, 5000, 4096), "trans_B", "false"), {}},
           {with(shape(3000, 5000, 4096), "out_dtype", "f32"), {}},
           {shape(3000, 5000, 4096), {{"block_M", "128"}}},
           {shape(3000, 5000, 4096), {{"block_N", "128"}}},
           {shape(3000, 5000, 4096), {{"num_stages", "2"}}},
           {shape(3000, 5000, 4096), {{"cluster_N", "2"}}},
           {shape(3000, 5000, 4096), {{"schedule", "stream_k"}}},
           {shape(3000, 5000, 4096), {{"tma_store", "false"}}}}) {
    const KernelInstance d = instance(problem, config);
    EXPECT_EQ(d.name_expression.find(".block_M = 256"), std::string::npos) << d.name_expression;
  }
  EXPECT_NE(instance(shape(3000, 5000, 4096), {{"block_M", "128"}}).name_expression.find(wide), std::string::npos);
}

// The auto 128 x 256 tile takes 4 stages and c_split=2 on the data-parallel schedule at 4-8 k-steps and at 128+
// (gemmbf4's measurements): of issue 21's eight shapes 4096 x 4096 x 512 and 2048 x 8192 x 8192; 3 stages elsewhere,
// with stream-K (8192^3), with a config's own tile, depth, split, clusters or epilogue, and for an f32 C.
TEST(GemmWgmmaPlan, TileAutoTakesAFourthStageAtShortAndLongTiles) {
  auto shape = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return std::map<std::string, std::string>{{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}};
  };
  const std::string deep = ".block_M = 128, .block_N = 256, .block_K = 64, .num_stages = 4,";
  const std::string wide = ".block_M = 128, .block_N = 256, .block_K = 64, .num_stages = 3,";
  auto has = [](const KernelInstance& k, const std::string& s) { return k.name_expression.find(s) != std::string::npos; };
  for (const auto& p : {shape(4096, 4096, 512), shape(2048, 8192, 8192), shape(4096, 4096, 256), shape(4096, 4096, 8192)}) {
    // 4-16 k-steps with 4+ 128 x 128 tiles a CTA: auto's pingpong (below), the fourth stage with data_parallel.
    const KernelInstance k = instance(p, p.at("K") == "512" || p.at("K") == "256" ? std::map<std::string, std::string>{
                                                                                        {"schedule", "data_parallel"}}
                                                                                  : std::map<std::string, std::string>{});
    EXPECT_TRUE(has(k, deep)) << k.name_expression;
    EXPECT_TRUE(has(k, ".c_split = 2")) << k.name_expression;
    EXPECT_EQ(k.name_expression.rfind("tl::gemm_wgmma<", 0), 0u) << k.name_expression;
    EXPECT_EQ(k.launch.dynamic_smem, static_cast<std::uint32_t>(make_plan({.num_stages = 4, .c_split = 2}).bytes));
    EXPECT_TRUE(has(instance(p, {{"schedule", "data_parallel"}}), deep));
    EXPECT_TRUE(has(instance(with_key(p, "dtype", "f16"), {{"schedule", "data_parallel"}}), deep)) << "f16 in, 16-bit C";
  }
  EXPECT_TRUE(has(instance(with_key(shape(4096, 4096, 512), "trans_B", "false"), {}), deep));
  // Not at 1-3 or 9-127 k-steps, not with stream-K (auto's split at 8192^3, or asked for), not where 256 x 152 is taken.
  for (const auto& p : {shape(8192, 8192, 8192), shape(4096, 4096, 4096), shape(8192, 8192, 1024), shape(6144, 6144, 6144),
                        shape(16384, 16384, 4096), shape(4096, 4096, 128), shape(4096, 4096, 576)})
    EXPECT_FALSE(has(instance(p, {}), ".num_stages = 4")) << instance(p, {}).name_expression;
  EXPECT_TRUE(has(instance(shape(8192, 8192, 8192), {}), wide));
  EXPECT_EQ(instance(shape(8192, 8192, 8192), {}).name_expression.rfind("tl::gemm_wgmma_stream_k<", 0), 0u);
  EXPECT_TRUE(has(instance(shape(3000, 5000, 4096), {}), ".block_M = 256, .block_N = 152"));
  for (const auto& config : std::vector<std::map<std::string, std::string>>{
           {{"block_M", "128"}}, {{"num_stages", "2"}}, {{"block_N", "128"}}, {{"cluster_M", "2"}}, {{"cluster_N", "2"}},
           {{"tma_store", "false"}}, {{"schedule", "stream_k"}}}) {
    const KernelInstance k = instance(shape(4096, 4096, 512), config);
    EXPECT_FALSE(has(k, ".num_stages = 4")) << k.name_expression;
    EXPECT_FALSE(has(k, ".c_split = 2")) << k.name_expression;
  }
  EXPECT_FALSE(has(instance(with_key(shape(4096, 4096, 512), "out_dtype", "f32"), {{"tma_store", "true"}, {"block_N", "128"}}),
                   ".c_split = 2"));
  EXPECT_FALSE(has(instance(with_key(shape(2048, 8192, 8192), "out_dtype", "f32"), {}), ".num_stages = 4"));
  // The config's own depth and split are kept, as before.
  EXPECT_TRUE(has(instance(shape(4096, 4096, 4096), {{"num_stages", "4"}, {"c_split", "2"}}), deep));
}

// panel=0 (auto): 4 where the operand a panel walks across (B for raster m, A for raster n) fits in two thirds of a
// 50 MiB L2 (2 where that operand has 8192+ rows and schedule=auto takes the ping-pong); else 16. An explicit panel
// is kept.
TEST(GemmWgmmaPlan, PanelAutoKeepsTheWalkedOperandInL2) {
  auto panel = [](const std::map<std::string, std::string>& problem, const std::map<std::string, std::string>& config) {
    const std::string name = instance(problem, config).name_expression;
    const auto at = name.find(".panel = ");
    return at == std::string::npos ? -1 : std::stoi(name.substr(at + 9));
  };
  EXPECT_EQ(panel({}, {}), 4);                                                  // 4096^3: B 32 MiB
  EXPECT_EQ(panel({{"M", "8192"}, {"N", "8192"}, {"K", "1024"}}, {}), 2);      // B 16 MiB, 8192 rows, ping-pong
  EXPECT_EQ(panel({{"M", "8192"}, {"N", "8192"}, {"K", "1024"}}, {{"raster", "n"}}), 2);  // A: 8192 rows
  EXPECT_EQ(panel({{"M", "8192"}, {"N", "4096"}, {"K", "1024"}}, {}), 4);      // B 4096 rows
  EXPECT_EQ(panel({{"M", "4096"}, {"N", "4096"}, {"K", "512"}}, {}), 4);       // ping-pong, B 4096 rows
  // Not where the ping-pong is not auto's: data-parallel, an explicit schedule, a K past its 16 k-steps.
  EXPECT_EQ(panel({{"M", "8192"}, {"N", "8192"}, {"K", "1024"}}, {{"schedule", "data_parallel"}}), 4);
  EXPECT_EQ(panel({{"M", "8192"}, {"N", "8192"}, {"K", "1024"}}, {{"schedule", "pingpong"}}), 4);
  EXPECT_EQ(panel({{"M", "8192"}, {"N", "8192"}, {"K", "2048"}}, {}), 4);      // B 32 MiB, 32 k-steps
  EXPECT_EQ(panel({{"M", "8192"}, {"N", "8192"}, {"K", "1024"}}, {{"panel", "4"}}), 4);
  EXPECT_EQ(panel({{"M", "3000"}, {"N", "5000"}, {"K", "4096"}}, {}), 16);     // B 39 MiB: over two thirds
  EXPECT_EQ(panel({{"M", "6144"}, {"N", "6144"}, {"K", "6144"}}, {}), 16);     // B 72 MiB
  EXPECT_EQ(panel({{"M", "2048"}, {"N", "8192"}, {"K", "8192"}}, {}), 16);     // B 128 MiB
  EXPECT_EQ(panel({{"M", "2048"}, {"N", "8192"}, {"K", "8192"}}, {{"raster", "n"}}), 4);  // raster n walks A: 32 MiB
  EXPECT_EQ(panel({{"dtype", "f16"}}, {{"panel", "16"}}), 16);
  EXPECT_EQ(panel({{"M", "4096"}, {"N", "4096"}, {"K", "512"}}, {{"panel", "2"}}), 2);
}

TEST(GemmWgmmaPlan, SpecLaunchesChecksAndPlotsThePlan) {
  const KernelInstance k = instance({{"trans_B", "false"}, {"out_dtype", "f16"}}, {{"block_N", "128"}});
  const GemmWgmmaPlan p = make_plan({.block_N = 128, .trans_B = false, .out_dtype = kOutF16});
  EXPECT_EQ(k.launch.dynamic_smem, static_cast<std::uint32_t>(p.bytes));
  EXPECT_EQ(k.launch.block.x, 384u);
  std::map<std::string, std::vector<std::int64_t>> boxes;
  for (const ArgSpec& a : k.args)
    if (a.kind == ArgSpec::Kind::tensor_map) boxes[a.name] = a.box;
  EXPECT_EQ(boxes["tma_A"], (std::vector<std::int64_t>{p.box_A.inner, p.box_A.outer}));
  EXPECT_EQ(boxes["tma_B"], (std::vector<std::int64_t>{p.box_B.inner, p.box_B.outer}));
  EXPECT_EQ(boxes["tma_C"], (std::vector<std::int64_t>{p.box_C.inner, p.box_C.outer}));
  const std::vector<LayoutInfo> layouts = k.spec->layouts(k.problem, k.config);
  std::map<std::string, std::string> by_name;
  for (const LayoutInfo& l : layouts) by_name[l.name] = l.spec;
  EXPECT_EQ(by_name["smem_A"], "smem.swizzle128B.bf16.(128,64)");
  EXPECT_EQ(by_name["smem_B"], "smem.swizzle128B.bf16.(128,64).mn");
  EXPECT_EQ(by_name["wgmma_C"], "wgmma.m64n128k16.f32.C");
  EXPECT_EQ(by_name["smem_C"], "smem.swizzle128B.f16.(64,128)");
  // Each SPEC parses back to the plan's object.
  const LayoutSpec a = parse_spec(by_name["smem_A"]), b = parse_spec(by_name["smem_B"]), cs = parse_spec(by_name["smem_C"]);
  EXPECT_TRUE(a.memory.layout() == p.smem_A.layout() && a.memory.swizzle() == p.smem_A.swizzle());
  EXPECT_TRUE(b.memory.layout() == p.smem_B.layout() && b.memory.swizzle() == p.smem_B.swizzle());
  EXPECT_TRUE(cs.memory.layout() == p.smem_C.layout() && cs.memory.swizzle() == p.smem_C.swizzle());
  EXPECT_TRUE(parse_spec(by_name["wgmma_C"]).fragment.tv() == p.acc.tv());
  // Without the TMA-store epilogue there is no staging tile to show.
  for (const LayoutInfo& l : wgmma_spec().layouts(k.problem, instance({}, {{"tma_store", "false"}}).config))
    EXPECT_NE(l.name, "smem_C");
  // The probe names are the kernel's enum, in order.
  ASSERT_EQ(wgmma_spec().probes.size(), 6u);
  EXPECT_EQ(wgmma_spec().probes[GemmWgmmaProbe::wait_empty], "wait_empty");
  EXPECT_EQ(wgmma_spec().probes[GemmWgmmaProbe::epilogue], "epilogue");
}

// [SECTION] stream-K: the work split (tile/work_order.hpp) and the workspace

// Every CTA's walk, as the kernel's producer and consumers take it: its whole tiles, then its split pieces.
std::vector<std::vector<GemmWorkPiece>> walks(const GemmStreamK& s) {
  std::vector<std::vector<GemmWorkPiece>> out(static_cast<std::size_t>(s.ctas));
  for (int b = 0; b < s.ctas; ++b) {
    for (int t = b; t < s.whole_tiles(); t += s.ctas) out[static_cast<std::size_t>(b)].push_back({t, 0, s.k_steps});
    GemmStreamKWalk w(s, b);
    GemmWorkPiece p;
    while (w.next(s, p)) out[static_cast<std::size_t>(b)].push_back(p);
  }
  return out;
}

TEST(GemmStreamK, EveryKStepOfEveryTileOnceAndWholeWavesEqual) {
  for (int ctas : {1, 7, 66, 132})
    for (int tiles : {1, 5, 66, 131, 132, 133, 480, 512, 2048})
      for (int k_steps : {1, 2, 3, 8, 64, 65}) {
          const GemmStreamK s = gemm_stream_k(tiles, k_steps, ctas);
          SCOPED_TRACE(std::to_string(tiles) + " tiles x " + std::to_string(k_steps) + " k-steps on " +
                       std::to_string(ctas));
          // Beyond one wave the split takes the partial wave and the full one before it; below, the T tiles.
          ASSERT_TRUE(s.split_tiles == 0 || s.split_tiles == tiles % ctas + (tiles > ctas ? ctas : 0));
          ASSERT_LE(s.split_ctas, ctas);
          std::vector<int> seen(static_cast<std::size_t>(tiles) * k_steps, 0);
          const auto all = walks(s);
          for (int b = 0; b < ctas; ++b) {
            const auto& walk = all[static_cast<std::size_t>(b)];
            int whole = 0;
            for (const GemmWorkPiece& p : walk) {
              ASSERT_TRUE(p.tile >= 0 && p.tile < tiles && 0 <= p.k0 && p.k0 < p.k1 && p.k1 <= k_steps);
              for (int k = p.k0; k < p.k1; ++k) ++seen[static_cast<std::size_t>(p.tile) * k_steps + k];
              whole += p.k0 == 0 && p.k1 == k_steps && p.tile < s.whole_tiles();
            }
            // With a split, the whole tiles are the full waves: every CTA has as many. Without, the last partial wave
            // goes to the first CTAs.
            const int rest = s.split_tiles ? 0 : tiles % ctas;
            EXPECT_EQ(whole, (tiles - s.split_tiles) / ctas + (b < rest ? 1 : 0));
          }
          for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "tile " << i / k_steps << " k " << i % k_steps;
        }
}

TEST(GemmStreamK, FinisherAddsTheEarlierPiecesNearestFirst) {
  for (int ctas : {7, 66, 132})
    for (int tiles : {3, 66, 133, 480, 2113})
      for (int k_steps : {2, 5, 64}) {
        const GemmStreamK s = gemm_stream_k(tiles, k_steps, ctas);
        SCOPED_TRACE(std::to_string(tiles) + " tiles x " + std::to_string(k_steps) + " k-steps on " + std::to_string(ctas));
        if (tiles % ctas == 0) {
          EXPECT_EQ(s.split_tiles, 0);
          continue;
        }
        // stream_k always splits the last partial wave, and the full wave before it where there is one.
        ASSERT_EQ(s.split_tiles, tiles % ctas + (tiles > ctas ? ctas : 0));
        // The split tiles are the last ones, after the full waves of whole tiles.
        EXPECT_EQ(s.whole_tiles(), (tiles > ctas ? tiles / ctas - 1 : 0) * ctas);
        const auto all = walks(s);
        std::vector<std::vector<std::pair<int, GemmWorkPiece>>> pieces(static_cast<std::size_t>(s.split_tiles));
        for (int b = 0; b < ctas; ++b) {
          int partials = 0, split = 0;
          for (const GemmWorkPiece& p : all[static_cast<std::size_t>(b)]) {
            if (p.tile < s.whole_tiles()) {
              EXPECT_EQ(split, 0) << "whole tiles come first";
              continue;
            }
            // The CTA's split pieces: the head of the later tile (from k-step 0), then a whole tile or the tail of
            // the earlier one.
            if (split == 0 && all[static_cast<std::size_t>(b)].back().tile != p.tile) {
              EXPECT_EQ(p.k0, 0);
            }
            if (p.k1 < k_steps) {
              // A partial is its CTA's first split piece: it waits for nothing before it is written.
              EXPECT_EQ(split, 0);
              ++partials;
            }
            ++split;
            pieces[static_cast<std::size_t>(p.tile - s.whole_tiles())].push_back({b, p});
          }
          EXPECT_LE(split, tiles > ctas ? 3 : 2);
          EXPECT_LE(partials, 1) << "one workspace slot per CTA";
        }
        for (int t = s.whole_tiles(); t < tiles; ++t) {
          auto tp = pieces[static_cast<std::size_t>(t - s.whole_tiles())];
          ASSERT_GE(tp.size(), 1u);
          // The finisher holds the last k-step, on the last CTA of the tile; the contributors it walks are exactly
          // the other pieces' CTAs, nearest first, and their k ranges precede each other down to k-step 0 (so the
          // sum is the whole K).
          std::sort(tp.begin(), tp.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
          const int finisher = tp.front().first;
          EXPECT_EQ(tp.front().second.k1, k_steps);
          std::vector<int> contributors;
          for (int q = finisher - 1; gemm_stream_k_contributor(s, t, q); --q) contributors.push_back(q);
          ASSERT_EQ(contributors.size() + 1, tp.size());
          // Beyond one wave a range is longer than a tile: no middle pieces, one partial to wait for at most.
          if (tiles > ctas) {
            EXPECT_LE(tp.size(), 2u);
          }
          int k = tp.front().second.k0;
          for (std::size_t i = 1; i < tp.size(); ++i) {
            EXPECT_EQ(tp[i].first, contributors[i - 1]);
            EXPECT_EQ(tp[i].second.k1, k);
            k = tp[i].second.k0;
          }
          EXPECT_EQ(k, 0);
          // A finisher that adds partials holds the last piece its CTA walks: the contributors' pieces (their
          // first) come before. (A tile whole in one range, walked between a head and a tail, adds none.)
          const GemmWorkPiece& last = all[static_cast<std::size_t>(finisher)].back();
          if (tp.size() > 1) {
            EXPECT_TRUE(last.tile == t && last.k1 == k_steps);
          }
        }
      }
}

// The split's CTAs stream the same k-slices together: every head starts at k-step 0 at the split's start, and every
// tail starts at the same k-step relative to the time it starts (the k-steps walked before it).
TEST(GemmStreamK, SplitCtasWalkKInStep) {
  for (int tiles : {84, 480}) {  // 3000 x 5000 x 4096 (480 tiles) and a partial wave alone, on 132 CTAs
    const GemmStreamK s = gemm_stream_k(tiles, 64, 132);
    ASSERT_EQ(s.split_ctas, 132);
    std::map<int, int> tail_start_by_time;
    for (const auto& walk : walks(s)) {
      std::vector<GemmWorkPiece> split;
      for (const GemmWorkPiece& p : walk)
        if (p.tile >= s.whole_tiles()) split.push_back(p);
      if (split.size() < 2) continue;
      EXPECT_EQ(split[0].k0, 0);
      int time = 0;
      for (std::size_t i = 0; i + 1 < split.size(); ++i) time += split[i].k1 - split[i].k0;
      tail_start_by_time[split.back().k0 - time]++;
    }
    // Ranges differ by a k-step at most (rounding): the offsets take at most two values a step apart.
    ASSERT_FALSE(tail_start_by_time.empty());
    EXPECT_LE(tail_start_by_time.size(), 2u);
    EXPECT_LE(tail_start_by_time.rbegin()->first - tail_start_by_time.begin()->first, 1);
  }
}

// The k-step each CTA of the split loads at each time (the producer's order: a piece from k_first to k1, then from
// k0): at most four k-steps at once over all CTAs (heads and whole tiles at the time's k-step, whole tiles wrapped
// one tile back, tails at one of two offsets), where whole tiles walked from k-step 0 would be at as many k-steps as
// there are head lengths.
TEST(GemmStreamK, SplitLoadsFewKSlicesAtOnce) {
  for (const auto& [tiles, k_steps] : {std::pair{512, 128}, {480, 64}, {1152, 96}, {2048, 128}}) {
    const GemmStreamK s = gemm_stream_k(tiles, k_steps, 132);
    SCOPED_TRACE(std::to_string(tiles) + " tiles x " + std::to_string(k_steps));
    const auto all = walks(s);
    std::vector<std::vector<int>> k_at(static_cast<std::size_t>(s.ctas));  // CTA -> its k-steps in load order
    for (int b = 0; b < s.ctas; ++b)
      for (const GemmWorkPiece& p : all[static_cast<std::size_t>(b)]) {
        if (p.tile < s.whole_tiles()) continue;
        ASSERT_TRUE(p.k0 <= p.k_first && p.k_first < p.k1);
        for (int k = p.k_first; k < p.k1; ++k) k_at[static_cast<std::size_t>(b)].push_back(k);
        for (int k = p.k0; k < p.k_first; ++k) k_at[static_cast<std::size_t>(b)].push_back(k);
      }
    for (std::size_t time = 0;; ++time) {
      std::set<int> ks;
      for (const auto& seq : k_at)
        if (time < seq.size()) ks.insert(seq[time]);
      if (ks.empty()) break;
      EXPECT_LE(ks.size(), 4u) << "at time " << time;
    }
  }
}

TEST(GemmStreamK, PiecesFollowTheEstimate) {
  // 3000 x 5000 x 4096 in 128 x 256 tiles on an H100's 132 SMs: 24 x 20 = 480 tiles, 3 full waves and 84 tiles: the
  // 84 and the wave before them (216 tiles) over all 132 CTAs, ranges of 216 x 64 / 132 = 104.7 k-steps.
  EXPECT_EQ(gemm_stream_k(480, 64, 132).split_tiles, 216);
  EXPECT_EQ(gemm_stream_k(480, 64, 132).split_ctas, 132);
  EXPECT_EQ(gemm_stream_k(480, 64, 132).whole_tiles(), 264);
  // Full waves: nothing to split.
  EXPECT_EQ(gemm_stream_k(264, 64, 132).split_tiles, 0);
  // Fewer tiles than CTAs: 8 tiles of 64 k-steps, 64 / n + 5 (n - 1) least at 4 pieces (16 + 15): 32 CTAs.
  const GemmStreamK few = gemm_stream_k(8, 64, 132);
  EXPECT_EQ(few.split_tiles, 8);
  EXPECT_EQ(few.split_ctas, 32);
  // 3 k-steps: 2 pieces (2 + 5) beat 3 (1 + 10).
  EXPECT_EQ(gemm_stream_k(8, 3, 132).split_ctas, 8 * 2);
}

// schedule=auto splits where a CTA saves more than the split's cost (6 + k_steps / 4 k-steps) by over 1% of its
// k-steps: (1 - (T mod G) / G) x k_steps, at the issue-21 shapes in 128 x 256 tiles on 132 SMs. The H100 run that
// the cost is fitted to (docs/perf.md) had the split faster than data-parallel at 8192^3 only.
TEST(GemmStreamK, AutoSplitsWhereItSavesMoreThanItCosts) {
  EXPECT_EQ(gemm_stream_k_split_cost(64), 22);
  EXPECT_EQ(gemm_stream_k_split_cost(128), 38);
  EXPECT_TRUE(gemm_stream_k_pays(2048, 128, 132));   // 8192^3: 68 left, saves 62 k-steps of 2048 (1.2% after 38)
  EXPECT_FALSE(gemm_stream_k_pays(8192, 64, 132));   // 16384^2 x 4096: 8 left, 60 - 22 of 4032 (0.9%)
  EXPECT_FALSE(gemm_stream_k_pays(480, 64, 132));    // 3000 x 5000 x 4096: 84 left, 23.3 - 22 of 256 (0.5%)
  EXPECT_FALSE(gemm_stream_k_pays(1152, 96, 132));   // 6144^3: 96 left, 26.2: less than it costs (30)
  EXPECT_FALSE(gemm_stream_k_pays(512, 128, 132));   // 2048 x 8192 x 8192: 116 left, 15.5
  EXPECT_FALSE(gemm_stream_k_pays(512, 64, 132));    // 4096^3: 116 left, 7.8
  EXPECT_FALSE(gemm_stream_k_pays(2048, 16, 132));   // 8192^2 x 1024: 68 left, 7.8
  EXPECT_FALSE(gemm_stream_k_pays(512, 8, 132));     // 4096^2 x 512: 116 left, 1
  // auto without the split is data-parallel's own kernel; with it, the stream-K kernel left to decide on its grid.
  EXPECT_EQ(gemm_stream_k(512, 64, 132, true).split_tiles, 0);
  EXPECT_EQ(gemm_stream_k(2048, 128, 132, true).split_tiles, 68 + 132);
}

TEST(GemmStreamK, WorkspaceChunksAreCoalescedAndFillTheSlot) {
  for (int bm : {64, 128})
    for (int bn : {128, 256}) {
      const GemmWgmmaPlan p = make_plan({.block_M = bm, .block_N = bn, .stream_k = true});
      const int chunks = p.acc.num_values() / 4, consumers = bm / 64;
      ASSERT_EQ(p.partial_floats, bm * bn);
      std::set<int> at;
      for (int c = 0; c < consumers; ++c)
        for (int j = 0; j < chunks; ++j)
          for (int t = 0; t < 128; ++t) {
            at.insert(p.partial(t, j, c));
            // A warp's 32 chunks of one register group are 512 contiguous bytes.
            if (t % 32) {
              EXPECT_EQ(p.partial(t, j, c), p.partial(t - 1, j, c) + 1);
            }
          }
      EXPECT_EQ(static_cast<int>(at.size()), p.partial_floats / 4);
      EXPECT_EQ(*at.begin(), 0);
      EXPECT_EQ(*at.rbegin(), p.partial_floats / 4 - 1);
    }
}

TEST(GemmStreamK, SpecAddsTheScratchAndRefusesClusters) {
  const KernelInstance k = instance({{"M", "3000"}, {"N", "5000"}}, {{"schedule", "stream_k"}});
  const DeviceLimits l = limits_for_arch("sm_90a");
  EXPECT_EQ(k.launch.grid.x, static_cast<std::uint32_t>(l.sm_count));
  std::map<std::string, const ArgSpec*> by_name;
  for (const ArgSpec& a : k.args) by_name[a.name] = &a;
  ASSERT_TRUE(by_name.count("workspace") && by_name.count("flags"));
  EXPECT_EQ(by_name["workspace"]->role, ArgRole::scratch);
  EXPECT_EQ(by_name["workspace"]->shape, (std::vector<std::int64_t>{l.sm_count, 128 * 256}));
  EXPECT_EQ(by_name["flags"]->shape, (std::vector<std::int64_t>{2 * l.sm_count}));
  EXPECT_EQ(instance({}, {{"schedule", "data_parallel"}}).args.size(), 9u);
  ASSERT_TRUE(by_name.count("split_always"));
  EXPECT_EQ(by_name["split_always"]->value, 1);
  // auto: the stream-K entry where the split pays on the arch's 132 SMs (8192^3), left to decide again on the
  // device's grid; data-parallel's where it does not (4096^3, 3000 x 5000 x 4096), and with clusters.
  const KernelInstance a = instance({{"M", "8192"}, {"N", "8192"}, {"K", "8192"}}, {});
  EXPECT_EQ(a.name_expression, k.name_expression);
  EXPECT_EQ(instance({{"M", "3000"}, {"N", "5000"}}, {}).name_expression.rfind("tl::gemm_wgmma<", 0), 0u);
  for (const ArgSpec& arg : a.args) {
    if (arg.name == "split_always") {
      EXPECT_EQ(arg.value, 0);
    }
  }
  EXPECT_EQ(instance({}, {}).name_expression.rfind("tl::gemm_wgmma<", 0), 0u);
  EXPECT_EQ(instance({{"M", "8192"}, {"N", "8192"}, {"K", "8192"}}, {{"cluster_M", "2"}}).name_expression.rfind(
                "tl::gemm_wgmma<", 0),
            0u);
  auto clustered = instantiate(wgmma_spec(), {}, {{"schedule", "stream_k"}, {"cluster_M", "2"}}, l);
  ASSERT_FALSE(clustered.ok());
  EXPECT_NE(clustered.status().message().find("schedule=data_parallel"), std::string::npos);
}

}  // namespace
}  // namespace tl
