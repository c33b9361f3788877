// Swizzles: CuTe's bit definitions, and the TMA/wgmma modes against their byte-address definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "tile/layout_spec.hpp"
#include "tile/swizzle.hpp"

namespace tl {
namespace {

static_assert(Swizzle<3, 4, 3>{}.yyy_mask() == 0x380);
static_assert(Swizzle<3, 4, 3>{}.zzz_mask() == 0x70);
static_assert(Swizzle<3, 4, 3>{}(0x80) == 0x90);
static_assert(smem_layout(SmemSwizzle::b128, 2, 8, 64)(1, 0) == 64 + 8);

TEST(Swizzle, FlipsLowBitsWithHighBits) {
  const Swizzle<2, 0, 3> s;  // bits [0,2) ^= bits [3,5)
  EXPECT_EQ(s(0b01000), 0b01001);
  EXPECT_EQ(s(0b10000), 0b10010);
  EXPECT_EQ(s(0b11011), 0b11000);
  EXPECT_EQ(s(0b00111), 0b00111);  // no y bits set
  const BitSwizzle neg(2, 3, -3);  // a negative shift moves the y bits up: bits [6,8) ^= bits [3,5)
  EXPECT_EQ(neg.yyy_mask(), 0b11000);
  EXPECT_EQ(neg.zzz_mask(), 0b11000000);
  EXPECT_EQ(neg(0b01000), 0b01001000);
}

TEST(Swizzle, IsAnInvolutionAndABijectionOnItsBlock) {
  for (int b = 0; b <= 3; ++b)
    for (int m = 0; m <= 4; ++m)
      for (int s = b; s <= b + 2; ++s) {
        const BitSwizzle sw(b, m, s);
        ASSERT_TRUE(sw.valid());
        const int block = 1 << (b + m + s);
        std::vector<int> seen(block, 0);
        for (int x = 0; x < block; ++x) {
          ASSERT_EQ(sw(sw(x)), x);
          ASSERT_LT(sw(x), block);
          ++seen[sw(x)];
          ASSERT_EQ(sw(x + 5 * block), sw(x) + 5 * block) << "acts inside aligned blocks only";
        }
        ASSERT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
      }
}

// The modes by their definition on byte addresses: bits [4, 4+B) ^= bits [7, 7+B).
int byte_swizzle(int bits, int addr) { return addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4); }

TEST(SmemSwizzle, ElementOffsetsMatchTheByteAddressDefinition) {
  for (SmemSwizzle mode : {SmemSwizzle::b32, SmemSwizzle::b64, SmemSwizzle::b128}) {
    const int bits = static_cast<int>(mode);
    const int span = 16 << bits;
    for (int e : {1, 2, 4, 8}) {
      const int w = span / e;
      for (int rows : {8, 16, 64})
        for (int cols : {w, 2 * w, 4 * w}) {
          const SwizzledLayout k = smem_layout(mode, e, rows, cols, Major::K);
          ASSERT_TRUE(k.ok());
          const SwizzledLayout mn = smem_layout(mode, e, cols, rows, Major::MN);
          ASSERT_TRUE(mn.ok());
          std::vector<int> hits(rows * cols, 0);
          for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) {
              // unswizzled: column blocks of `span` bytes, each holding every row
              const int plain = (r * w + c % w + (c / w) * rows * w) * e;
              ASSERT_EQ(k(r, c) * e, byte_swizzle(bits, plain)) << "mode " << span << "B e=" << e << " (" << r << "," << c << ")";
              ASSERT_EQ(mn(c, r), k(r, c)) << "MN-major is the transpose";
              ++hits[k(r, c)];
            }
          ASSERT_TRUE(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; })) << "a bijection onto the tile";
        }
    }
  }
}

TEST(SmemSwizzle, Bf16With128BytesPermutesSixteenByteChunksByRow) {
  const SwizzledLayout l = smem_layout(SmemSwizzle::b128, 2, 8, 64);
  EXPECT_EQ(l.swizzle(), BitSwizzle(3, 3, 3));
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 64; ++c) EXPECT_EQ(l(r, c), r * 64 + ((c / 8) ^ r) * 8 + c % 8);
  EXPECT_EQ(to_string(smem_layout(SmemSwizzle::b128, 2, 64, 128).layout()), "(64,(64,2)):(64,(1,4096))");
  EXPECT_EQ(smem_swizzle(SmemSwizzle::b64, 4), BitSwizzle(2, 2, 3));
  EXPECT_EQ(smem_swizzle(SmemSwizzle::b32, 1), BitSwizzle(1, 4, 3));
}

TEST(SmemSwizzle, NoneIsPlainRowMajorAndBadShapesAreReported) {
  const SwizzledLayout n = smem_layout(SmemSwizzle::none, 4, 32, 32);
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 32; ++c) EXPECT_EQ(n(r, c), r * 32 + c);
  EXPECT_FALSE(smem_layout(SmemSwizzle::b128, 2, 8, 32).ok());   // 64 bytes per row < the 128-byte span
  EXPECT_FALSE(smem_layout(SmemSwizzle::b128, 2, 12, 64).ok());  // rows not a multiple of 8
  EXPECT_FALSE(smem_swizzle(SmemSwizzle::b64, 3).valid());       // element size not a power of two
}

// The swizzle flips bits inside blocks of period() elements: a step by whole periods adds, and steps in bits an
// offset leaves free XOR (what lets a kernel keep one offset per lane and reach the rest with constants).
TEST(SwizzledLayout, PeriodsAddAndDisjointStepsXor) {
  const SwizzledLayout tile = smem_layout(SmemSwizzle::b128, 2, 64, 64);
  EXPECT_EQ(tile.period(), 512);  // 8 rows of 128 bytes
  EXPECT_EQ(smem_layout(SmemSwizzle::b32, 4, 8, 8).period(), 64);
  EXPECT_EQ(SwizzledLayout(Layout(make_shape(4, 4), make_stride(4, 1))).period(), 1);
  for (int r = 0; r + 8 < 64; ++r)
    for (int c = 0; c < 64; ++c) ASSERT_EQ(tile(r + 8, c), tile(r, c) + tile(8, 0));
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 16; ++c)
      for (int k = 16; k < 64; k += 16) ASSERT_EQ(tile(r, c + k), tile.join_disjoint(tile(r, c), tile(0, k)));
  // A step sharing bits with the offset does not XOR: (0, 8) + (0, 8) is chunk 2, not chunk 0.
  EXPECT_NE(tile(0, 16), tile.join_disjoint(tile(0, 8), tile(0, 8)));
  const SwizzledLayout plain = smem_layout(SmemSwizzle::none, 2, 8, 64);
  EXPECT_EQ(plain.join_disjoint(plain(1, 8), plain(0, 16)), plain(1, 24));
}

TEST(SwizzledLayout, ComposesWithALayoutOnTheRight) {
  const SwizzledLayout tile = smem_layout(SmemSwizzle::b128, 2, 64, 64);
  // the second 8-row band of the tile, as a layout of its own
  const SwizzledLayout band = composition(tile, Layout(make_shape(8, 64), make_stride(1, 64)));
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 64; ++c) EXPECT_EQ(band(r, c), tile(r, c));
  EXPECT_EQ(SwizzledLayout(Layout(make_shape(4, 4), make_stride(4, 1))).cosize(), 16);
  EXPECT_EQ(tile.cosize(), 64 * 64);
}

}  // namespace
}  // namespace tl
