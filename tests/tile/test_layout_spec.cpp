// SPEC strings: every accepted form, and errors that name the column and what was expected.
#include <gtest/gtest.h>

#include "tile/layout_spec.hpp"

namespace tl {
namespace {

LayoutSpec ok(const char* text) {
  LayoutSpec s = parse_spec(text);
  EXPECT_TRUE(s.ok) << format_spec_error(s);
  return s;
}

LayoutSpec bad(const char* text, int position, const char* needle) {
  LayoutSpec s = parse_spec(text);
  EXPECT_FALSE(s.ok) << text;
  EXPECT_EQ(s.position, position) << format_spec_error(s);
  EXPECT_NE(s.message.find(needle), std::string::npos) << format_spec_error(s);
  return s;
}

TEST(LayoutSpec, Layouts) {
  LayoutSpec s = ok("(8,(4,2)):(4,(1,32))");
  EXPECT_EQ(s.kind, SpecKind::layout);
  EXPECT_EQ(to_string(s.memory), "(8,(4,2)):(4,(1,32))");
  EXPECT_EQ(s.rows, 8);
  EXPECT_EQ(s.cols, 8);
  EXPECT_EQ(s.offset(1, 5), 37);
  s = ok("  (8,64) ");
  EXPECT_EQ(to_string(s.memory), "(8,64):(1,8)");  // compact column-major, as CuTe
  s = ok("32:1");
  EXPECT_EQ(s.rows, 32);
  EXPECT_EQ(s.cols, 1);
  EXPECT_EQ(s.offset(5, 0), 5);
}

TEST(LayoutSpec, Swizzles) {
  LayoutSpec s = ok("swizzle<3,3,3> o (8,64):(64,1)");
  EXPECT_EQ(s.kind, SpecKind::swizzled);
  EXPECT_EQ(s.memory.swizzle(), BitSwizzle(3, 3, 3));
  EXPECT_EQ(s.offset(1, 0), 64 + 8);
  EXPECT_EQ(to_string(s.memory), "swizzle<3,3,3> o (8,64):(64,1)");
  EXPECT_EQ(ok("Sw<3,4,3> o (8,128):(128,1)").memory.swizzle(), BitSwizzle(3, 4, 3));
  EXPECT_EQ(ok("swizzle<2,4,3>\xe2\x88\x98(8,32):(32,1)").memory.swizzle(), BitSwizzle(2, 4, 3));
  bad("swizzle<3,3> o (8,64):(64,1)", 11, "','");
  bad("swizzle<3,3,3> (8,64):(64,1)", 15, "'o'");
  bad("swizzle<3,3,1> o (8,64)", 13, "|S| >= B");
  bad("swizzle<3,3,3> o ", 16, "layout");
}

TEST(LayoutSpec, Atoms) {
  for (const char* n : {"mma.m16n8k16.f16.A", "mma.m16n8k16.f16.B", "mma.m16n8k16.f32.C", "ldmatrix.x4",
                        "ldmatrix.x4.trans", "wgmma.m64n128k16.f32.C"}) {
    const LayoutSpec s = ok(n);
    EXPECT_TRUE(s.is_fragment());
    EXPECT_EQ(s.atom_name, n);
    EXPECT_TRUE(s.fragment.covers_tile());
  }
  EXPECT_EQ(ok("wgmma.m64n128k16.f32.C").cols, 128);
  EXPECT_EQ(ok("mma.m16n8k32.e4m3.A").elem_bytes, 1);
  const LayoutSpec s = bad(" mma.m16n8k16.f16.Z", 1, "unknown atom");
  EXPECT_NE(s.message.find("mma.m16n8k16.f16.A"), std::string::npos) << "lists close names";
  EXPECT_NE(format_spec_error(s).find("\n ^ unknown atom"), std::string::npos);
}

TEST(LayoutSpec, SharedMemoryTiles) {
  LayoutSpec s = ok("smem.swizzle128B.bf16.(64,64)");
  EXPECT_EQ(s.kind, SpecKind::smem);
  EXPECT_EQ(s.elem_bytes, 2);
  EXPECT_EQ(s.rows, 64);
  EXPECT_EQ(s.cols, 64);
  for (int r = 0; r < 8; ++r) EXPECT_EQ(s.offset(r, 0), r * 64 + 8 * r);
  EXPECT_EQ(ok("smem.none.f32.(32,32)").offset(1, 0), 32);
  EXPECT_EQ(ok("smem.swizzle64B.f16.(32,64).mn").memory.swizzle(), BitSwizzle(2, 3, 3));
  bad("smem.swizzle96B.bf16.(64,64)", 5, "unknown swizzle mode");
  bad("smem.swizzle128B.f12.(64,64)", 17, "unknown dtype");
  bad("smem.swizzle128B.bf16.(64,32)", 22, "multiple of 64");
  bad("smem.swizzle128B.bf16.(64,64", 28, "')'");
}

TEST(LayoutSpec, LayoutErrorsNameTheColumn) {
  bad("(8,(4,2):(4,(1,32))", 8, "unbalanced");
  bad("(8,(4,2)", 8, "unbalanced");
  bad("(8,4)):(1,8)", 5, "unbalanced");
  bad("(8,(4,2)):(4,1,2)", 10, "rank mismatch");
  bad("(8,(4,2)):(4,1)", 10, "nesting");
  bad("(8,,4)", 3, "integer");
  bad("(8,0)", 3, "positive");
  bad("(8,64):(64,1) extra", 14, "end of layout");
  bad("", 0, "empty");
  bad("(4096,4096,4096)", 11, "too large");  // the leaf that passes 2^30
  bad("(65536,65536)", 7, "too large");
  bad("(4096,8192)", 0, "too large");  // 2^25 elements: more than a plot can hold
  bad("(8,8):(1,100000000)", 0, "too large");
}

TEST(LayoutSpec, PrintedLayoutsParseBack) {
  for (const std::string& e : spec_examples()) {
    const LayoutSpec s = ok(e.c_str());
    if (s.is_fragment()) continue;
    const LayoutSpec again = ok(to_string(s.memory).c_str());
    EXPECT_EQ(again.memory.layout(), s.memory.layout());
    EXPECT_EQ(again.memory.swizzle(), s.memory.swizzle());
  }
}

// A plan's shared-memory layout is shown in the smem.* form when it is that tile, and parses back to the same object.
TEST(LayoutSpec, MemorySpecOfPlanObjectsParsesBackEqual) {
  struct Case {
    SwizzledLayout l;
    const char* dtype;
    const char* want;  // nullptr: the swizzle o layout text
  };
  const Case cases[] = {
      {smem_layout(SmemSwizzle::b128, 2, 128, 64), "bf16", "smem.swizzle128B.bf16.(128,64)"},
      {smem_layout(SmemSwizzle::b128, 2, 256, 64, Major::MN), "f16", "smem.swizzle128B.f16.(256,64).mn"},
      {smem_layout(SmemSwizzle::b64, 4, 16, 32), "f32", "smem.swizzle64B.f32.(16,32)"},
      {smem_layout(SmemSwizzle::none, 2, 64, 64), "bf16", "smem.none.bf16.(64,64)"},
      // gemm.mma's unswizzled N-major B: 64-column blocks of 64 k-rows, no smem.* tile
      {SwizzledLayout(Layout(make_shape(make_shape(64, 2), 64), make_stride(make_stride(1, 4096), 64))), "bf16", nullptr},
      {SwizzledLayout(Swizzle<3, 3, 3>{}, Layout(make_shape(64, 64), make_stride(64, 1))), "s8", nullptr},
  };
  for (const Case& c : cases) {
    const std::string spec = memory_spec(c.l, c.dtype);
    SCOPED_TRACE(spec);
    if (c.want) EXPECT_EQ(spec, c.want);
    else EXPECT_EQ(spec.rfind("smem.", 0), std::string::npos);
    const LayoutSpec p = parse_spec(spec);
    ASSERT_TRUE(p.ok) << p.message;
    EXPECT_EQ(p.memory.layout(), c.l.layout());
    EXPECT_EQ(p.memory.swizzle(), c.l.swizzle());
  }
}

// A plan's fragment is shown as the atom it names only when that atom is the fragment.
TEST(LayoutSpec, FragmentSpecNamesOnlyTheEqualAtom) {
  EXPECT_EQ(fragment_spec(mma_m16n8k16_a_f16(), "mma.m16n8k16.bf16.A"), "mma.m16n8k16.bf16.A");
  EXPECT_EQ(fragment_spec(mma_m16n8k16_c(), "mma.m16n8k16.f32.C"), "mma.m16n8k16.f32.C");
  EXPECT_EQ(fragment_spec(wgmma_m64nNk16_d(128), "wgmma.m64n128k16.f32.C"), "wgmma.m64n128k16.f32.C");
  EXPECT_EQ(fragment_spec(ldmatrix(4, true), "ldmatrix.x4.trans"), "ldmatrix.x4.trans");
  EXPECT_FALSE(fragment_spec(mma_m16n8k16_b_f16(), "mma.m16n8k16.bf16.A").has_value());      // another operand
  EXPECT_FALSE(fragment_spec(wgmma_m64nNk16_d(256), "wgmma.m64n128k16.f32.C").has_value());  // another N
  EXPECT_FALSE(fragment_spec(ldmatrix(4, false), "ldmatrix.x4.trans").has_value());
  EXPECT_FALSE(fragment_spec(mma_m16n8k16_a_f16(), "mma.m16n8k16.bf16.Z").has_value());      // no such atom
  // the A fragment repeated over two m16 tiles is no registered atom
  EXPECT_FALSE(fragment_spec(repeat(mma_m16n8k16_a_f16(), 2, 1, true), "mma.m16n8k16.bf16.A").has_value());
}

}  // namespace
}  // namespace tl
