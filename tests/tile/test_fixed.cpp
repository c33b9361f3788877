// fixed<X>(): the compile-time evaluation of layouts, swizzled layouts and fragments agrees with X everywhere.
#include <gtest/gtest.h>

#include <string>

#include "tile/atom_registry.hpp"
#include "tile/atoms.hpp"
#include "tile/fixed.hpp"

namespace tl {
namespace {

template <auto X>
void expect_layout_agrees(const std::string& what) {
  constexpr auto f = fixed<X>();
  for (int i = 0; i < X.size(); ++i) ASSERT_EQ(f(i), X(i)) << what << " index " << i;
  if constexpr (X.rank() == 2) {
    const int rows = X.shape().child(0).product(), cols = X.shape().child(1).product();
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) ASSERT_EQ(f(r, c), X(r, c)) << what << " at " << r << "," << c;
  }
}

template <Fragment F>
void expect_fragment_agrees(const std::string& what, bool splits) {
  EXPECT_EQ(split_rows_cols(F).ok, splits) << what;
  constexpr auto f = fixed<F>();
  for (int t = 0; t < F.num_threads(); ++t)
    for (int v = 0; v < F.num_values(); ++v) ASSERT_EQ(f(t, v), F(t, v)) << what << " thread " << t << " value " << v;
}

TEST(Fixed, LayoutsAgreeEverywhere) {
  expect_layout_agrees<parse_layout("(8,(4,2)):(4,(1,32))").layout>("nested");
  expect_layout_agrees<parse_layout("((2,4),(3,5)):((15,1),(5,60))").layout>("two nested modes");
  expect_layout_agrees<parse_layout("(4,1,8):(0,7,1)").layout>("stride 0 and extent 1");
  expect_layout_agrees<Layout(make_shape(16, 64))>("column-major");
  expect_layout_agrees<smem_layout(SmemSwizzle::b128, 2, 64, 64)>("128B K-major bf16");
  expect_layout_agrees<smem_layout(SmemSwizzle::b128, 2, 128, 64, Major::MN)>("128B MN-major bf16, 2 blocks");
  expect_layout_agrees<smem_layout(SmemSwizzle::b64, 4, 16, 16)>("64B f32");
  expect_layout_agrees<composition(BitSwizzle(2, 0, -3), Layout(make_shape(8, 8), make_stride(1, 8)))>("shift left");
  static_assert(fixed<smem_layout(SmemSwizzle::b128, 2, 64, 64)>()(1, 0) == 72, "folds in constant expressions");
}

TEST(Fixed, FragmentsAgreeAndTheAtomsSplit) {
  expect_fragment_agrees<mma_m16n8k16_a_f16()>("mma A", true);
  expect_fragment_agrees<mma_m16n8k16_b_f16()>("mma B", true);
  expect_fragment_agrees<mma_m16n8k16_c()>("mma C", true);
  expect_fragment_agrees<ldmatrix(4, true)>("ldmatrix.x4.trans", true);
  expect_fragment_agrees<ldmatrix_rows(4)>("ldmatrix.x4.rows", true);
  expect_fragment_agrees<wgmma_m64nNk16_d(96)>("wgmma D n96", true);
  expect_fragment_agrees<repeat(mma_m16n8k16_c(), 4, 8, false, false)>("warp tile of C", true);
  expect_fragment_agrees<transpose(repeat(mma_m16n8k16_b_f16(), 1, 2, false))>("transposed B pair", true);
  // 32 threads over a 16 x 2 tile in index order: thread 16 wraps into the next column, so there is no split.
  expect_fragment_agrees<Fragment(make_layout(Layout(32, 1), Layout(1, 0)), 16, 2)>("wrapping", false);
}

// Where the split holds, it gives the fragment's own (row, col) for every registered atom.
TEST(Fixed, SplitRowsColsOfEveryAtom) {
  for (const AtomInfo& a : atom_registry()) {
    const FragmentSplit s = split_rows_cols(a.fragment);
    EXPECT_TRUE(s.ok) << a.name;
    for (int t = 0; t < a.fragment.num_threads(); ++t)
      for (int v = 0; v < a.fragment.num_values(); ++v)
        ASSERT_EQ((TileCoord{s.row(t, v), s.col(t, v)}), a.fragment(t, v)) << a.name;
  }
}

}  // namespace
}  // namespace tl
