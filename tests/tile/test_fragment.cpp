// Fragments and hardware atoms: bijections onto their tiles, checked against the PTX ISA's formulas.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <utility>
#include <vector>

#include "tile/atom_registry.hpp"
#include "tile/atoms.hpp"
#include "tile/fragment.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

using Formula = std::function<std::pair<int, int>(int lane, int i)>;

// The PTX ISA's per-fragment formulas, written out independently of the layouts in atoms.hpp.
int group(int lane) { return lane >> 2; }
int tig(int lane) { return lane % 4; }

void expect_matches(const Fragment& f, int threads, int values, int rows, int cols, const Formula& ptx, const char* what) {
  ASSERT_TRUE(f.ok()) << what;
  ASSERT_EQ(f.num_threads(), threads) << what;
  ASSERT_EQ(f.num_values(), values) << what;
  ASSERT_EQ(f.rows(), rows) << what;
  ASSERT_EQ(f.cols(), cols) << what;
  for (int t = 0; t < threads; ++t)
    for (int i = 0; i < values; ++i) {
      const auto [r, c] = ptx(t, i);
      const TileCoord got = f(t, i);
      ASSERT_EQ(got.row, r) << what << " thread " << t << " value " << i;
      ASSERT_EQ(got.col, c) << what << " thread " << t << " value " << i;
    }
}

// Every (thread, value) lands on a distinct tile element and every element is reached; the inverse inverts.
void expect_bijection(const Fragment& f, const std::string& what) {
  ASSERT_TRUE(f.ok()) << what;
  ASSERT_EQ(f.num_threads() * f.num_values(), f.rows() * f.cols() * f.replication()) << what;
  std::set<std::pair<int, int>> seen;
  for (int t = 0; t < f.num_threads(); ++t)
    for (int v = 0; v < f.num_values(); ++v) {
      const TileCoord c = f(t, v);
      ASSERT_TRUE(c.row >= 0 && c.row < f.rows() && c.col >= 0 && c.col < f.cols()) << what;
      seen.insert({c.row, c.col});
    }
  ASSERT_EQ(static_cast<int>(seen.size()), f.rows() * f.cols()) << what;
  ASSERT_TRUE(f.covers_tile()) << what;
  for (int r = 0; r < f.rows(); ++r)
    for (int c = 0; c < f.cols(); ++c) {
      const ThreadValue o = f.owner(r, c);
      ASSERT_EQ(f(o.thread, o.value), (TileCoord{r, c})) << what << " at (" << r << "," << c << ")";
    }
}

TEST(Atoms, MmaM16n8k8MatchesPtx) {
  expect_matches(mma_m16n8k8_a_f16(), 32, 4, 16, 8,
                 [](int l, int i) { return std::pair{i < 2 ? group(l) : group(l) + 8, tig(l) * 2 + (i & 1)}; }, "k8 A");
  expect_matches(mma_m16n8k8_b_f16(), 32, 2, 8, 8, [](int l, int i) { return std::pair{tig(l) * 2 + i, group(l)}; },
                 "k8 B");
  expect_matches(mma_m16n8k8_c(), 32, 4, 16, 8,
                 [](int l, int i) { return std::pair{i < 2 ? group(l) : group(l) + 8, tig(l) * 2 + (i & 1)}; }, "k8 C");
  expect_matches(mma_m16n8k8_a_tf32(), 32, 4, 16, 8,
                 [](int l, int i) {
                   return std::pair{(i == 0 || i == 2) ? group(l) : group(l) + 8, i < 2 ? tig(l) : tig(l) + 4};
                 },
                 "tf32 A");
  expect_matches(mma_m16n8k8_b_tf32(), 32, 2, 8, 8,
                 [](int l, int i) { return std::pair{i == 0 ? tig(l) : tig(l) + 4, group(l)}; }, "tf32 B");
}

TEST(Atoms, MmaM16n8k16MatchesPtx) {
  expect_matches(mma_m16n8k16_a_f16(), 32, 8, 16, 16,
                 [](int l, int i) {
                   const int row = (i < 2 || (i >= 4 && i < 6)) ? group(l) : group(l) + 8;
                   const int col = tig(l) * 2 + (i & 1) + (i >= 4 ? 8 : 0);
                   return std::pair{row, col};
                 },
                 "k16 A");
  expect_matches(mma_m16n8k16_b_f16(), 32, 4, 16, 8,
                 [](int l, int i) { return std::pair{tig(l) * 2 + (i & 1) + (i >= 2 ? 8 : 0), group(l)}; }, "k16 B");
  expect_matches(mma_m16n8k16_c(), 32, 4, 16, 8,
                 [](int l, int i) { return std::pair{i < 2 ? group(l) : group(l) + 8, tig(l) * 2 + (i & 1)}; }, "k16 C");
}

TEST(Atoms, MmaM16n8k32EightBitMatchesPtx) {
  expect_matches(mma_m16n8k32_a_8bit(), 32, 16, 16, 32,
                 [](int l, int i) {
                   const int row = (i < 4 || (i >= 8 && i < 12)) ? group(l) : group(l) + 8;
                   const int col = tig(l) * 4 + (i & 3) + (i >= 8 ? 16 : 0);
                   return std::pair{row, col};
                 },
                 "k32 A");
  expect_matches(mma_m16n8k32_b_8bit(), 32, 8, 32, 8,
                 [](int l, int i) { return std::pair{tig(l) * 4 + (i & 3) + (i >= 4 ? 16 : 0), group(l)}; }, "k32 B");
}

TEST(Atoms, WgmmaMatchesPtx) {
  for (int n = 8; n <= 256; n += 8) {
    expect_matches(wgmma_m64nNk16_d(n), 128, n / 2, 64, n,
                   [](int t, int i) {
                     const int w = t / 32, l = t % 32;
                     return std::pair{16 * w + group(l) + 8 * ((i >> 1) & 1), tig(l) * 2 + (i & 1) + 8 * (i >> 2)};
                   },
                   "wgmma D");
  }
  expect_matches(wgmma_m64k16_a_f16(), 128, 8, 64, 16,
                 [](int t, int i) {
                   const int w = t / 32, l = t % 32;
                   const int row = 16 * w + ((i < 2 || (i >= 4 && i < 6)) ? group(l) : group(l) + 8);
                   return std::pair{row, tig(l) * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
                 },
                 "wgmma A");
  EXPECT_FALSE(wgmma_m64nNk16_d(12).ok());
}

TEST(Atoms, LdmatrixMatchesPtx) {
  for (int num : {1, 2, 4}) {
    const int rows = num == 1 ? 8 : 16, cols = num == 4 ? 16 : 8;
    // matrix j sits at block (j%2, j/2); element e of register j of lane l
    expect_matches(ldmatrix(num, false), 32, 2 * num, rows, cols,
                   [](int l, int v) {
                     const int j = v / 2, e = v % 2;
                     return std::pair{8 * (j % 2) + l / 4, 8 * (j / 2) + 2 * (l % 4) + e};
                   },
                   "ldmatrix");
    expect_matches(ldmatrix(num, true), 32, 2 * num, rows, cols,
                   [](int l, int v) {
                     const int j = v / 2, e = v % 2;
                     return std::pair{8 * (j % 2) + 2 * (l % 4) + e, 8 * (j / 2) + l / 4};
                   },
                   "ldmatrix.trans");
    expect_matches(ldmatrix_rows(num), 8 * num, 1, rows, num == 4 ? 2 : 1,
                   [](int l, int) { return std::pair{8 * ((l / 8) % 2) + l % 8, l / 16}; }, "ldmatrix rows");
  }
}

TEST(Atoms, LdmatrixX4DeliversTheMmaAFragment) {
  const Fragment ld = ldmatrix(4, false), a = mma_m16n8k16_a_f16();
  for (int l = 0; l < 32; ++l)
    for (int v = 0; v < 8; ++v) EXPECT_EQ(ld(l, v), a(l, v));
}

// ldmatrix_sources inverts "lane 8j + r supplies row r of matrix j, register j receives matrix j": for the atoms'
// own arrangement it is ldmatrix_rows, and for any arrangement the row lane 8j + r points at starts matrix j's row r.
TEST(Atoms, LdmatrixSourcesPointAtTheMatricesTheRegistersReceive) {
  for (int num : {1, 2, 4})
    for (bool trans : {false, true}) EXPECT_EQ(ldmatrix_sources(ldmatrix(num, trans), num).tv(), ldmatrix_rows(num).tv());
  // Two n8 x k16 tiles of the mma's B stored as n-rows (a K-major B read without .trans): matrix j = (n8 tile j/2,
  // k half j%2).
  const Fragment stored = transpose(repeat(mma_m16n8k16_b_f16(), 1, 2, false));
  const Fragment src = ldmatrix_sources(stored, 4);
  for (int l = 0; l < 32; ++l) {
    const int j = l / 8;
    EXPECT_EQ(src(l, 0), (TileCoord{8 * (j / 2) + l % 8, j % 2})) << l;
    // register j's element of lane 0 is the first element of that row
    EXPECT_EQ(stored(0, 2 * j).row, 8 * (j / 2));
  }
  EXPECT_FALSE(ldmatrix_sources(ldmatrix(4, false), 2).ok());  // 8 values are 4 matrices, not 2
}

TEST(Fragment, TransposeSwapsRowsAndColumns) {
  for (const Fragment& f : {mma_m16n8k16_a_f16(), mma_m16n8k16_b_f16(), wgmma_m64nNk16_d(64), ldmatrix(2, true)}) {
    const Fragment t = transpose(f);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t.rows(), f.cols());
    EXPECT_EQ(t.cols(), f.rows());
    for (int th = 0; th < f.num_threads(); ++th)
      for (int v = 0; v < f.num_values(); ++v) ASSERT_EQ(t(th, v), (TileCoord{f(th, v).col, f(th, v).row}));
  }
}

TEST(Atoms, EveryRegisteredAtomIsABijectionOntoItsTile) {
  const auto& atoms = atom_registry();
  EXPECT_GT(atoms.size(), 80u);
  std::set<std::string> names;
  for (const AtomInfo& a : atoms) {
    EXPECT_TRUE(names.insert(a.name).second) << "duplicate " << a.name;
    expect_bijection(a.fragment, a.name);
  }
  for (const char* n : {"mma.m16n8k16.f16.A", "mma.m16n8k16.f16.B", "mma.m16n8k16.f32.C", "mma.m16n8k8.tf32.A",
                        "mma.m16n8k32.s8.A", "mma.m16n8k32.e4m3.B", "ldmatrix.x4", "ldmatrix.x4.trans",
                        "wgmma.m64n128k16.f32.C", "wgmma.m64k16.bf16.A"})
    EXPECT_TRUE(find_atom(n).has_value()) << n;
  const auto alias = find_atom("wgmma.m64n256k16.f16.A");
  ASSERT_TRUE(alias.has_value());
  EXPECT_EQ(alias->fragment.rows(), 64);
  EXPECT_FALSE(find_atom("wgmma.m64n12k16.f16.A").has_value());
  EXPECT_FALSE(find_atom("mma.m16n8k16.f16.Q").has_value());
  const auto close = close_atom_names("mma.m16n8k16.f16.a");
  ASSERT_FALSE(close.empty());
  EXPECT_EQ(close.front(), "mma.m16n8k16.f16.A");
}

TEST(Fragment, RepeatOnThreadsAndOnValues) {
  const Fragment c = mma_m16n8k16_c();
  // 2x2 copies on new threads: a 32x16 tile over 128 threads, copy k = (i, j) on threads 32k..32k+31
  const Fragment t = repeat(c, 2, 2, true);
  expect_bijection(t, "repeat on threads");
  ASSERT_EQ(t.num_threads(), 128);
  ASSERT_EQ(t.num_values(), 4);
  ASSERT_EQ(t.rows(), 32);
  ASSERT_EQ(t.cols(), 16);
  for (int k = 0; k < 4; ++k)
    for (int l = 0; l < 32; ++l)
      for (int v = 0; v < 4; ++v) {
        const TileCoord base = c(l, v);
        EXPECT_EQ(t(l + 32 * k, v), (TileCoord{base.row + 16 * (k % 2), base.col + 8 * (k / 2)}));
      }
  // the same copies on new values of the same 32 lanes, numbered along the columns first
  const Fragment v = repeat(c, 2, 2, false, false);
  expect_bijection(v, "repeat on values");
  ASSERT_EQ(v.num_threads(), 32);
  ASSERT_EQ(v.num_values(), 16);
  for (int k = 0; k < 4; ++k)
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 4; ++i) {
        const TileCoord base = c(l, i);
        EXPECT_EQ(v(l, i + 4 * k), (TileCoord{base.row + 16 * (k / 2), base.col + 8 * (k % 2)}));
      }
  // a warp-level C tile (4 warps x 2 n-tiles), as a GEMM's accumulator is built
  const Fragment acc = repeat(repeat(c, 1, 2, false), 4, 1, true);
  expect_bijection(acc, "accumulator");
  EXPECT_EQ(acc.rows(), 64);
  EXPECT_EQ(acc.cols(), 16);
  EXPECT_EQ(acc.num_threads(), 128);
}

TEST(Fragment, ReplicateSharesData) {
  const Fragment c = mma_m16n8k8_c();
  const Fragment r = replicate(c, 4);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.num_threads(), 128);
  EXPECT_EQ(r.replication(), 4);
  expect_bijection(r, "replicate");
  for (int t = 0; t < 128; ++t)
    for (int v = 0; v < 4; ++v) EXPECT_EQ(r(t, v), c(t % 32, v));
  EXPECT_LT(r.owner(15, 7).thread, 32) << "the inverse names the first holder";
}

TEST(Fragment, EvaluatesInConstantExpressions) {
  constexpr Fragment a = mma_m16n8k16_a_f16();
  static_assert(a(5, 3).row == 9 && a(5, 3).col == 3);
  static_assert(a.owner(9, 3) == ThreadValue{5, 3});
  static_assert(wgmma_m64nNk16_d(256).num_values() == 128);
  EXPECT_EQ(to_string(a.tv()), "((4,8),(2,2,2)):((32,1),(16,8,128))");
}

}  // namespace
}  // namespace tl
