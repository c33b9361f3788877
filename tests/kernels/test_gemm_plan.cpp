// The plans of gemm.mma and gemm.simt, checked against PTX-ISA facts (TMA's 128B swizzle, ldmatrix, mma.sync) over
// every config their specs accept, and against the specs that read them (bytes, names, cache keys, probes).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "gemm/gemm_mma_plan.hpp"
#include "gemm/gemm_simt_plan.hpp"
#include "library/library.hpp"
#include "tests/support/scratch_jit.hpp"
#include "tile/atom_registry.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

using KV = std::map<std::string, std::string>;

const KernelSpec& spec(const std::string& name) { return *library_registry().find(name).value(); }

// One gemm.mma config as the spec's key=value maps and as the kernel's config (the scheduling switches at their
// defaults: they change no layout).
struct MmaCase {
  KV problem, config;
  GemmMmaConfig cfg;
};

std::vector<MmaCase> accepted_mma_cases() {
  std::vector<MmaCase> out;
  const DeviceLimits limits = limits_for_arch("sm_90a");
  for (int bm : {32, 64, 128, 256})
    for (int bn : {32, 64, 128, 256})
      for (int wm : {1, 2, 4, 8})
        for (int wn : {1, 2, 4, 8})
          for (bool swizzle : {true, false})
            for (bool trans_b : {true, false}) {
              MmaCase c;
              c.problem = {{"trans_B", trans_b ? "true" : "false"}};
              c.config = {{"block_M", std::to_string(bm)}, {"block_N", std::to_string(bn)},
                          {"warps_M", std::to_string(wm)}, {"warps_N", std::to_string(wn)},
                          {"swizzle", swizzle ? "true" : "false"}, {"num_stages", "2"}};
              if (!instantiate(spec("gemm.mma"), c.problem, c.config, limits).ok()) continue;
              c.cfg = {.block_M = bm, .block_N = bn, .warps_M = wm, .warps_N = wn, .num_stages = 2, .swizzle = swizzle,
                       .panel = 16, .min_blocks = 1, .unroll_k = true, .early_sync = true, .serpentine = true,
                       .frag_buffers = 2, .bf16 = true, .trans_B = trans_b, .out_dtype = gemm_detail::kOutBf16};
              out.push_back(c);
            }
  return out;
}

std::string what(const MmaCase& c) {
  std::string s;
  for (const auto& [k, v] : c.config) s += k + "=" + v + " ";
  return s + "trans_B=" + c.problem.at("trans_B");
}

// The tile as cp.async (and TMA) write it: a bijection onto [0, size), every 16-byte chunk (8 elements along the
// contiguous index: k when K-major, the row index when MN-major) contiguous, 16-byte aligned and inside one
// 128-byte row.
void expect_chunked_bijection(const SwizzledLayout& l, int rows, int cols, bool rows_contiguous, const std::string& w) {
  ASSERT_TRUE(l.ok()) << w;
  ASSERT_EQ(l.size(), rows * cols) << w;
  std::set<int> seen;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const int o = l(r, c);
      ASSERT_TRUE(o >= 0 && o < rows * cols) << w;
      seen.insert(o);
    }
  ASSERT_EQ(static_cast<int>(seen.size()), rows * cols) << w;
  for (int r = 0; r < rows; r += rows_contiguous ? 8 : 1)
    for (int c = 0; c < cols; c += rows_contiguous ? 1 : 8) {
      const int first = l(r, c);
      ASSERT_EQ(first % 8, 0) << w << " chunk at (" << r << "," << c << ")";
      for (int e = 1; e < 8; ++e)
        ASSERT_EQ(rows_contiguous ? l(r + e, c) : l(r, c + e), first + e) << w << " chunk at (" << r << "," << c << ")";
      ASSERT_EQ(first / 64, (first + 7) / 64) << w;
    }
}

TEST(GemmMmaPlan, TilesAreTmaSwizzle128BTilesOfSixteenByteChunks) {
  const auto cases = accepted_mma_cases();
  ASSERT_GT(cases.size(), 100u);
  for (const MmaCase& c : cases) {
    const GemmMmaPlan p = make_plan(c.cfg);
    const Major b_major = c.cfg.trans_B ? Major::K : Major::MN;
    const SwizzledLayout tma_a = smem_layout(SmemSwizzle::b128, 2, c.cfg.block_M, 64);
    const SwizzledLayout tma_b = smem_layout(SmemSwizzle::b128, 2, c.cfg.block_N, 64, b_major);
    // Swizzled: what a TMA box with CU_TENSOR_MAP_SWIZZLE_128B writes; plain: the same element order.
    EXPECT_TRUE(p.smem_A.layout() == tma_a.layout()) << what(c);
    EXPECT_TRUE(p.smem_B.layout() == tma_b.layout()) << what(c);
    EXPECT_TRUE(p.smem_A.swizzle() == (c.cfg.swizzle ? tma_a.swizzle() : BitSwizzle())) << what(c);
    EXPECT_TRUE(p.smem_B.swizzle() == (c.cfg.swizzle ? tma_b.swizzle() : BitSwizzle())) << what(c);
    expect_chunked_bijection(p.smem_A, c.cfg.block_M, 64, false, what(c));
    expect_chunked_bijection(p.smem_B, c.cfg.block_N, 64, !c.cfg.trans_B, what(c));
    // 16-bit tiles of 64 k: stage bytes and the launch's dynamic shared memory.
    EXPECT_EQ(p.stage_bytes, (c.cfg.block_M + c.cfg.block_N) * 64 * 2) << what(c);
    EXPECT_EQ(p.smem_bytes, c.cfg.num_stages * p.stage_bytes) << what(c);
    EXPECT_EQ(p.stage_bytes, p.a_bytes + p.b_bytes) << what(c);
    const auto inst = instantiate(spec("gemm.mma"), c.problem, c.config, limits_for_arch("sm_90a")).value();
    EXPECT_EQ(inst.launch.dynamic_smem, static_cast<std::uint32_t>(p.smem_bytes)) << what(c);
    EXPECT_EQ(inst.launch.block.x, static_cast<std::uint32_t>(p.threads)) << what(c);
  }
}

TEST(GemmMmaPlan, DefaultsFitTheOptInSharedMemory) {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    const auto inst = instantiate(spec("gemm.mma"), {}, {}, limits_for_arch(arch)).value();
    EXPECT_LE(static_cast<std::int64_t>(inst.launch.dynamic_smem), limits_for_arch(arch).smem_per_block_optin) << arch;
  }
}

TEST(GemmMmaPlan, FragmentsAreTheRegisteredAtoms) {
  for (bool trans_b : {true, false}) {
    const GemmMmaPlan p = make_plan({.block_M = 128, .block_N = 256, .warps_M = 2, .warps_N = 4, .num_stages = 3,
                                     .swizzle = true, .panel = 16, .min_blocks = 1, .unroll_k = true,
                                     .early_sync = true, .serpentine = true, .frag_buffers = 2, .bf16 = true,
                                     .trans_B = trans_b, .out_dtype = gemm_detail::kOutBf16});
    EXPECT_EQ(fragment_spec(p.mma_A, "mma.m16n8k16.bf16.A"), "mma.m16n8k16.bf16.A");
    EXPECT_EQ(fragment_spec(p.mma_B, "mma.m16n8k16.bf16.B"), "mma.m16n8k16.bf16.B");
    EXPECT_EQ(fragment_spec(p.mma_C, "mma.m16n8k16.f32.C"), "mma.m16n8k16.f32.C");
    EXPECT_EQ(fragment_spec(p.ldmatrix_A, "ldmatrix.x4"), "ldmatrix.x4");
    EXPECT_EQ(fragment_spec(p.ldmatrix_A_src, "ldmatrix.x4.rows"), "ldmatrix.x4.rows");
    // An N-major B is read with ldmatrix.x4.trans of its k-rows as the atom has it; a K-major one in the order of
    // the mma's registers, which no atom has.
    EXPECT_EQ(fragment_spec(p.ldmatrix_B, "ldmatrix.x4.trans").has_value(), !trans_b);
    EXPECT_EQ(fragment_spec(p.ldmatrix_B_src, "ldmatrix.x4.rows").has_value(), !trans_b);
  }
}

// What ldmatrix.x4 delivers (PTX ISA): lane 8j + r supplies the address of row r of matrix j; register j of lane l
// holds matrix j's row l/4, elements 2(l%4), 2(l%4)+1, or with .trans its column l/4, rows 2(l%4), 2(l%4)+1.
// Returns the stored tile's (row, col) of lane l's element e of register j, given each lane's source.
TileCoord ldmatrix_delivers(const Fragment& src, bool trans, int l, int j, int e) {
  const int r = trans ? 2 * (l % 4) + e : l / 4, c = trans ? l / 4 : 2 * (l % 4) + e;
  const TileCoord row_start = src(8 * j + r, 0);  // (row, 16-byte block)
  return {row_start.row, 8 * row_start.col + c};
}

TEST(GemmMmaPlan, LdmatrixAtTheSourcesDeliversTheMmaFragments) {
  const Fragment a = find_atom("mma.m16n8k16.bf16.A")->fragment, b = find_atom("mma.m16n8k16.bf16.B")->fragment;
  for (bool trans_b : {true, false}) {
    const GemmMmaPlan p = make_plan({.block_M = 64, .block_N = 64, .warps_M = 2, .warps_N = 2, .num_stages = 2,
                                     .swizzle = true, .panel = 1, .min_blocks = 1, .unroll_k = false,
                                     .early_sync = false, .serpentine = false, .frag_buffers = 1, .bf16 = true,
                                     .trans_B = trans_b, .out_dtype = gemm_detail::kOutBf16});
    for (int l = 0; l < 32; ++l)
      for (int j = 0; j < 4; ++j)
        for (int e = 0; e < 2; ++e) {
          // A (m, k) is stored as the mma reads it: register j is a_j of the m16n8k16 A fragment.
          EXPECT_EQ(ldmatrix_delivers(p.ldmatrix_A_src, false, l, j, e), a(l, 2 * j + e)) << l << " " << j;
          // B: registers 0, 1 are b0, b1 of the first n8 tile, 2, 3 those of the second (k, n + 8). A K-major B is
          // stored (n, k) and read without .trans, an N-major one (k, n) with it.
          const TileCoord want = b(l, 2 * (j % 2) + e);
          const TileCoord got = ldmatrix_delivers(p.ldmatrix_B_src, !trans_b, l, j, e);
          const TileCoord kn = trans_b ? TileCoord{got.col, got.row} : got;
          EXPECT_EQ(kn, (TileCoord{want.row, want.col + 8 * (j / 2)})) << "trans_B " << trans_b << " lane " << l;
          EXPECT_EQ(p.mma_B_pair(l, 2 * j + e), kn);
        }
  }
}

// Byte offsets of the 8 rows one ldmatrix matrix reads fall in 8 different 16-byte groups of the 128-byte bank
// window when swizzled (no bank conflict), all in one group when not (8-way): the reason for the swizzle.
TEST(GemmMmaPlan, SwizzledLdmatrixReadsAreConflictFree) {
  for (const MmaCase& c : accepted_mma_cases()) {
    const GemmMmaPlan p = make_plan(c.cfg);
    for (int warp_row = 0; warp_row < c.cfg.block_M; warp_row += p.warp_M)
      for (int i = 0; i < p.mma_M; ++i)
        for (int kk = 0; kk < 4; ++kk)
          for (int q = 0; q < 4; ++q) {
            std::set<int> groups;
            for (int r = 0; r < 8; ++r) {
              const TileCoord s = p.ldmatrix_A_src(8 * q + r, 0);
              groups.insert(2 * p.smem_A(warp_row + 16 * i + s.row, 8 * s.col + 16 * kk) / 16 % 8);
            }
            ASSERT_EQ(static_cast<int>(groups.size()), c.cfg.swizzle ? 8 : 1) << what(c);
          }
    for (int warp_col = 0; warp_col < c.cfg.block_N; warp_col += p.warp_N)
      for (int pr = 0; pr < p.mma_N / 2; ++pr)
        for (int kk = 0; kk < 4; ++kk)
          for (int q = 0; q < 4; ++q) {
            std::set<int> groups;
            for (int r = 0; r < 8; ++r) {
              const TileCoord s = p.ldmatrix_B_src(8 * q + r, 0);  // (n, k-block) or (k, n-block)
              const int off = c.cfg.trans_B ? p.smem_B(warp_col + 16 * pr + s.row, 8 * s.col + 16 * kk)
                                            : p.smem_B(warp_col + 16 * pr + 8 * s.col, 16 * kk + s.row);
              groups.insert(2 * off / 16 % 8);
            }
            ASSERT_EQ(static_cast<int>(groups.size()), c.cfg.swizzle ? 8 : 1) << what(c);
          }
  }
}

// The kernel keeps one offset per lane and reaches the other tiles and k-steps with constants; these are the
// layout facts that makes exact, for every config: the swizzle permutes 16-byte chunks inside a 128-byte row; a
// k16 step is a chunk step in bits a lane's own chunk leaves free (an XOR when swizzled); 16 rows, a 64-column
// block and 16 k-rows are whole swizzle periods (a sum); and so are the copy loops' row steps where they use it.
TEST(GemmMmaPlan, OffsetsSplitAsTheKernelUsesThem) {
  for (const MmaCase& c : accepted_mma_cases()) {
    const GemmMmaPlan p = make_plan(c.cfg);
    const int bm = c.cfg.block_M, bn = c.cfg.block_N;
    const bool trans_b = c.cfg.trans_B;
    auto k_major_steps = [&](const SwizzledLayout& l, int rows) {
      for (int r = 0; r < rows; ++r)
        for (int col = 0; col < 16; col += 8) {
          const int base = l.layout()(r, 0), place = l(r, col) - base;
          ASSERT_TRUE(place >= 0 && place < 64) << what(c);
          for (int kk = 0; kk < 4; ++kk) ASSERT_EQ(l(r, col + 16 * kk), base + l.join_disjoint(place, l(0, 16 * kk)));
          for (int i = 1; r + 16 * i < rows; ++i) ASSERT_EQ(l(r + 16 * i, col), l(r, col) + l(16 * i, 0)) << what(c);
        }
    };
    k_major_steps(p.smem_A, bm);
    if (trans_b) {
      k_major_steps(p.smem_B, bn);
    } else {
      for (int n = 0; n < bn; ++n)
        for (int k = 0; k < 16; ++k)
          for (int m = 0; n + 64 * m < bn; ++m)
            for (int kk = 0; kk < 4; ++kk)
              ASSERT_EQ(p.smem_B(n + 64 * m, k + 16 * kk), p.smem_B(n, k) + p.smem_B(64 * m, 16 * kk)) << what(c);
    }
    // The copy loops, where a step is whole swizzle periods: rows THREADS/8 apart (K-major), k-rows
    // THREADS/(block_N/8) apart (N-major).
    const int step = p.threads / 8, step_nk = p.threads / (bn / 8);
    auto row_steps = [&](const SwizzledLayout& l, int rows) {
      if (step * 64 % l.period() != 0) return;
      for (int r = 0; r < step; ++r)
        for (int col = 0; col < 64; col += 8)
          for (int i = 1; r + i * step < rows; ++i) ASSERT_EQ(l(r + i * step, col), l(r, col) + l(i * step, 0)) << what(c);
    };
    row_steps(p.smem_A, bm);
    if (trans_b) row_steps(p.smem_B, bn);
    if (!trans_b && step_nk * 64 % p.smem_B.period() == 0) {
      for (int n = 0; n < bn; n += 8)
        for (int k = 0; k < step_nk; ++k)
          for (int i = 1; k + i * step_nk < 64; ++i)
            ASSERT_EQ(p.smem_B(n, k + i * step_nk), p.smem_B(n, k) + p.smem_B(0, i * step_nk)) << what(c);
    }
  }
}

TEST(GemmMmaPlan, EveryConfigFieldReachesTheNameAndTheCacheKey) {
  // One value other than the default per config parameter, and the problem flags the kernel is specialised on.
  const std::vector<std::pair<bool, KV>> changes = {
      {false, {{"block_M", "64"}}},     {false, {{"block_N", "128"}}},     {false, {{"warps_M", "4"}, {"warps_N", "2"}}},
      {false, {{"num_stages", "2"}}},   {false, {{"swizzle", "false"}}},   {false, {{"panel", "8"}}},
      {false, {{"min_blocks", "2"}, {"block_N", "128"}, {"frag_buffers", "1"}, {"early_sync", "false"}}},
      {false, {{"unroll_k", "false"}}}, {false, {{"early_sync", "false"}}}, {false, {{"serpentine", "false"}}},
      {false, {{"frag_buffers", "1"}, {"early_sync", "false"}}},
      {true, {{"dtype", "f16"}}},       {true, {{"trans_B", "false"}}},    {true, {{"out_dtype", "f32"}}}};
  const DeviceLimits limits = limits_for_arch("sm_90a");
  const KernelInstance base = instantiate(spec("gemm.mma"), {}, {}, limits).value();
  JitOptions opt;
  opt.arch = "sm_90a";
  const std::string base_key = test::scratch_jit().cache_key(compile_request(base, opt)).value();
  std::set<std::string> names = {base.name_expression};
  for (const auto& [problem, kv] : changes) {
    const auto inst = instantiate(spec("gemm.mma"), problem ? kv : KV{}, problem ? KV{} : kv, limits);
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    EXPECT_TRUE(names.insert(inst->name_expression).second) << inst->name_expression;
    EXPECT_NE(test::scratch_jit().cache_key(compile_request(*inst, opt)).value(), base_key) << inst->name_expression;
  }
  EXPECT_EQ(base.name_expression.rfind("tl::gemm_mma<tl::GemmMmaConfig{.block_M = 128, .block_N = 256,", 0), 0u)
      << base.name_expression;
}

TEST(GemmMmaPlan, ProbeNamesAreTheKernelsRegions) {
  EXPECT_EQ(spec("gemm.mma").probes, gemm_mma_probe_names());
  EXPECT_EQ(gemm_mma_probe_names(), (std::vector<std::string>{"load_issue", "wait_stage", "mma", "epilogue"}));
  EXPECT_EQ(static_cast<int>(GemmMmaProbe::epilogue), 3);
}

TEST(GemmMmaPlan, ExposedLayoutsParseBackToThePlansObjects) {
  for (const KV& problem : {KV{}, KV{{"trans_B", "false"}}, KV{{"dtype", "f16"}}})
    for (const KV& config : {KV{}, KV{{"swizzle", "false"}}}) {
      const auto inst = instantiate(spec("gemm.mma"), problem, config, limits_for_arch("sm_90a")).value();
      std::map<std::string, std::string> shown;
      for (const LayoutInfo& l : spec("gemm.mma").layouts(inst.problem, inst.config)) shown[l.name] = l.spec;
      const bool trans_b = inst.problem.boolean("trans_B");
      const GemmMmaConfig cfg{.block_M = 128, .block_N = 256, .warps_M = 2, .warps_N = 4, .num_stages = 3,
                              .swizzle = inst.config.boolean("swizzle"), .panel = 16, .min_blocks = 1,
                              .unroll_k = true, .early_sync = true, .serpentine = true, .frag_buffers = 2,
                              .bf16 = inst.problem.dtype() == DType::bf16, .trans_B = trans_b, .out_dtype = gemm_detail::kOutBf16};
      const GemmMmaPlan p = make_plan(cfg);
      for (const auto& [name, tile] : {std::pair{"smem_A", p.smem_A}, std::pair{"smem_B", p.smem_B}}) {
        const LayoutSpec s = parse_spec(shown.at(name));
        ASSERT_TRUE(s.ok) << shown.at(name) << ": " << s.message;
        EXPECT_TRUE(s.memory.layout() == tile.layout() && s.memory.swizzle() == tile.swizzle()) << shown.at(name);
      }
      EXPECT_EQ(shown.count("ldmatrix_B"), trans_b ? 0u : 1u);
      for (const char* f : {"mma_A", "mma_B", "mma_C", "ldmatrix_A"}) EXPECT_TRUE(parse_spec(shown.at(f)).ok) << f;
    }
}

// [SECTION] gemm.simt

TEST(GemmSimtPlan, TilesAndThreadTilesCoverTheBlock) {
  for (int bm : {16, 64, 128})
    for (int bn : {16, 32, 128})
      for (int bk : {4, 8, 32})
        for (int tm : {1, 4, 8})
          for (int tn : {1, 2, 8}) {
            const GemmSimtConfig cfg{.block_M = bm, .block_N = bn, .block_K = bk, .thread_M = tm, .thread_N = tn,
                                     .dtype = GemmSimtInput::f32};
            const GemmSimtPlan p = make_plan(cfg);
            const std::string w = name_expression(cfg);
            EXPECT_EQ(p.threads, (bm / tm) * (bn / tn)) << w;
            EXPECT_EQ(p.smem_bytes, 4 * bk * (bm + bn)) << w;
            EXPECT_EQ(p.b_offset, bm * bk) << w;
            // A is stored k-major (a thread's rows of one k contiguous), B row-major; both fill their ranges.
            std::set<int> a, b;
            for (int m = 0; m < bm; ++m)
              for (int k = 0; k < bk; ++k) a.insert(p.smem_A(m, k));
            for (int k = 0; k < bk; ++k)
              for (int n = 0; n < bn; ++n) b.insert(p.smem_B(k, n));
            EXPECT_EQ(static_cast<int>(a.size()), bm * bk) << w;
            EXPECT_EQ(*a.rbegin(), bm * bk - 1) << w;
            EXPECT_EQ(static_cast<int>(b.size()), bk * bn) << w;
            EXPECT_EQ(p.smem_A(1, 0), 1) << w;
            EXPECT_EQ(p.smem_B(0, 1), 1) << w;
            // Each C element has one owner; a thread's values j + thread_N * i are its first element plus (i, j),
            // and neighbouring threads own neighbouring column strips.
            ASSERT_TRUE(p.thread_C.covers_tile()) << w;
            EXPECT_EQ(p.thread_C.replication(), 1) << w;
            for (int t = 0; t < p.threads; ++t) {
              const TileCoord first = p.thread_C(t, 0);
              EXPECT_EQ(first, (TileCoord{(t / (bn / tn)) * tm, (t % (bn / tn)) * tn})) << w << " thread " << t;
              for (int i = 0; i < tm; ++i)
                for (int j = 0; j < tn; ++j)
                  ASSERT_EQ(p.thread_C(t, j + tn * i), (TileCoord{first.row + i, first.col + j})) << w;
            }
          }
}

TEST(GemmSimtPlan, TheSpecReadsThePlan) {
  const DeviceLimits limits = limits_for_arch("sm_90a");
  for (const char* dtype : {"f32", "f16", "bf16"}) {
    const auto inst = instantiate(spec("gemm.simt"), {{"dtype", dtype}}, {{"block_K", "16"}}, limits).value();
    EXPECT_EQ(inst.launch.dynamic_smem, 4u * 16 * (128 + 128));
    EXPECT_NE(inst.name_expression.find(std::string(".dtype = tl::GemmSimtInput::") + dtype + "}>"), std::string::npos)
        << inst.name_expression;
  }
  std::set<std::string> names;
  for (const KV& kv : {KV{}, KV{{"block_M", "64"}}, KV{{"block_N", "64"}}, KV{{"block_K", "16"}}, KV{{"thread_M", "4"}},
                       KV{{"thread_N", "4"}}})
    EXPECT_TRUE(names.insert(instantiate(spec("gemm.simt"), {}, kv, limits).value().name_expression).second);
}

}  // namespace
}  // namespace tl
