// Bank-conflict analysis against hand-computed cases.
#include <gtest/gtest.h>

#include "tile/banks.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

Layout L(const char* s) { return parse_layout(s).layout; }

TEST(Banks, ColumnOfRowMajorFloatTileIs32Way) {
  // word of (t, 0) is 32t: every thread in bank 0, 32 distinct words
  const BankReport r = analyze_banks(L("(32,32):(32,1)"), 4, scalar_col_read(32, 32, 4));
  ASSERT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.wavefronts, 32);
  EXPECT_EQ(r.ideal_wavefronts, 1);
  EXPECT_EQ(r.bank_degree[0], 32);
  EXPECT_EQ(r.max_conflict, 32);
  for (int b = 1; b < 32; ++b) EXPECT_EQ(r.bank_degree[b], 0);
}

TEST(Banks, OneFloatOfPaddingPerRowIsConflictFree) {
  // word of (t, 0) is 33t: bank t
  const BankReport r = analyze_banks(L("(32,32):(33,1)"), 4, scalar_col_read(32, 32, 4));
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.wavefronts, 1);
  EXPECT_EQ(r.ideal_wavefronts, 1);
  for (int b = 0; b < 32; ++b) EXPECT_EQ(r.bank_degree[b], 1);
}

TEST(Banks, RowOfRowMajorFloatTileIsConflictFree) {
  const BankReport r = analyze_banks(L("(32,32):(32,1)"), 4, scalar_row_read(32, 32, 4));
  EXPECT_EQ(r.wavefronts, 1);
  EXPECT_EQ(r.max_conflict, 1);
}

TEST(Banks, SixteenBytesDownEightRowsOf128BytesIs8WayUnswizzled) {
  // rows of 128 bytes: (t, 0) starts at byte 128t, banks 0-3 for every thread, one phase of 8 threads
  const AccessPattern p = vector_col_copy(8, 64, 2, 8);
  const BankReport plain = analyze_banks(smem_layout(SmemSwizzle::none, 2, 8, 64), 2, p);
  ASSERT_TRUE(plain.ok);
  EXPECT_EQ(plain.phases.size(), 1u);
  EXPECT_EQ(plain.wavefronts, 8);
  EXPECT_EQ(plain.ideal_wavefronts, 1);
  for (int b = 0; b < 4; ++b) EXPECT_EQ(plain.bank_degree[b], 8);
  // 128B swizzle: row t's chunk 0 moves to chunk t, banks 4t..4t+3
  const BankReport sw = analyze_banks(smem_layout(SmemSwizzle::b128, 2, 8, 64), 2, p);
  ASSERT_TRUE(sw.ok);
  EXPECT_EQ(sw.wavefronts, 1);
  EXPECT_EQ(sw.ideal_wavefronts, 1);
  for (int t = 0; t < 8; ++t) EXPECT_EQ(sw.accesses[t].first_bank, 4 * t);
  // the same layout from a SPEC-like composition
  const BankReport sw2 = analyze_banks(composition(Swizzle<3, 3, 3>{}, L("(8,64):(64,1)")), 2, p);
  EXPECT_EQ(sw2.wavefronts, 1);
}

TEST(Banks, SameWordIsBroadcast) {
  AccessPattern p;
  p.vector_bytes = 4;
  for (int t = 0; t < 32; ++t) p.accesses.push_back({t, 0, 0});
  const BankReport r = analyze_banks(L("(32,32):(32,1)"), 4, p);
  EXPECT_EQ(r.wavefronts, 1);
  // two halves of one word (2-byte elements) are one word too
  const BankReport h = analyze_banks(L("(32,64):(64,1)"), 2, scalar_row_read(32, 64, 2));
  EXPECT_EQ(h.wavefronts, 1);
  EXPECT_EQ(h.ideal_wavefronts, 1);
}

TEST(Banks, LdmatrixOnSwizzledAndUnswizzledTiles) {
  // x4 over a 16x16 bf16 block of a (64, 64) row-major tile: rows 128 bytes apart, all rows of a matrix in
  // banks 0-3 (or 4-7): 8-way per phase, 4 phases
  const BankReport plain = analyze_banks(smem_layout(SmemSwizzle::none, 2, 64, 64), 2, ldmatrix_pattern(4, false));
  ASSERT_TRUE(plain.ok);
  EXPECT_EQ(plain.phases.size(), 4u);
  EXPECT_EQ(plain.ideal_wavefronts, 4);
  EXPECT_EQ(plain.wavefronts, 32);
  const BankReport sw = analyze_banks(smem_layout(SmemSwizzle::b128, 2, 64, 64), 2, ldmatrix_pattern(4, true));
  EXPECT_EQ(sw.wavefronts, 4);
  EXPECT_EQ(sw.max_conflict, 1);
  // a row-major 16x16 tile (32-byte rows) is 2-way: 4 rows fill the 32 banks
  const BankReport narrow = analyze_banks(L("(16,16):(16,1)"), 2, ldmatrix_pattern(4, false));
  EXPECT_EQ(narrow.wavefronts, 8);
  EXPECT_EQ(narrow.max_conflict, 2);
}

TEST(Banks, VectorRowCopyOfContiguousRowsIsIdeal) {
  const BankReport r = analyze_banks(L("(64,64):(64,1)"), 2, vector_row_copy(64, 64, 2));
  EXPECT_EQ(r.phases.size(), 4u);
  EXPECT_EQ(r.wavefronts, 4);
  EXPECT_EQ(r.ideal_wavefronts, 4);
  const BankReport r64 = analyze_banks(L("(64,64):(64,1)"), 2, vector_row_copy(64, 64, 2, 32, 8));
  EXPECT_EQ(r64.phases.size(), 2u);
  EXPECT_EQ(r64.wavefronts, 2);
}

TEST(Banks, WarpgroupPatternsAddUpPerWarp) {
  const BankReport r = analyze_banks(L("(128,32):(32,1)"), 4, scalar_col_read(128, 32, 4, 128));
  EXPECT_EQ(r.phases.size(), 4u);
  EXPECT_EQ(r.wavefronts, 4 * 32);
  EXPECT_EQ(r.ideal_wavefronts, 4);
}

TEST(Banks, UserListsAndBuiltinNames) {
  AccessParse a = parse_access_list("v16: (0,0), (1,0), (2,0), (3,0), (4,0), (5,0), (6,0), (7,0)");
  ASSERT_TRUE(a.ok) << a.message;
  EXPECT_EQ(a.pattern.accesses.size(), 8u);
  EXPECT_EQ(analyze_banks(L("(8,64):(64,1)"), 2, a.pattern).wavefronts, 8);
  a = parse_access_list("v4:3=(0,1),7=(0,1)");
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.pattern.accesses[1].thread, 7);
  a = parse_access_list("v16:(0,0),(1,0");
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.position, 14);  // the end of the text
  EXPECT_FALSE(parse_access_list("v3:(0,0)").ok);
  for (const std::string& n : builtin_pattern_names()) EXPECT_TRUE(builtin_pattern(n, 64, 64, 2).has_value()) << n;
  const auto p = builtin_pattern("col.v128:8", 8, 64, 2);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->accesses.size(), 8u);
  EXPECT_FALSE(builtin_pattern("diagonal", 8, 8, 2).has_value());
  EXPECT_FALSE(analyze_banks(L("(8,8):(8,1)"), 2, AccessPattern{}).ok);
  AccessParse q = parse_access(" col.v128:8@0,8", 8, 64, 2);
  ASSERT_TRUE(q.ok) << q.message;
  EXPECT_EQ(q.pattern.accesses.size(), 8u);
  EXPECT_EQ(q.pattern.accesses[3].row, 3);
  EXPECT_EQ(q.pattern.accesses[3].col, 8);
  q = parse_access("v16:(0,0),(1,0", 8, 64, 2);
  EXPECT_FALSE(q.ok);
  q = parse_access("zigzag", 8, 64, 2);
  EXPECT_FALSE(q.ok);
  EXPECT_NE(q.message.find("ldmatrix.x4"), std::string::npos);
}

}  // namespace
}  // namespace tl
