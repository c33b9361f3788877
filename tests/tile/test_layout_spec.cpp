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

// PTX ISA, mma.m16n8k16 .f16 A (16x16): a_i of lane l at row groupID (+8 for i = 2, 3, 6, 7), col
// 2*threadID_in_group + (i & 1) (+8 for i >= 4), groupID = l / 4, threadID_in_group = l % 4.
TileCoord ptx_mma_a(int lane, int i) {
  return {lane / 4 + ((i / 2) % 2) * 8, 2 * (lane % 4) + (i & 1) + (i >= 4 ? 8 : 0)};
}

// TileLang's plot_layout example: base.repeat([2, 1], repeat_on_thread=True).replicate(2), then
// .repeat([4, 2], repeat_on_thread=False, lower_dim_first=False).
TEST(LayoutSpec, RepeatAndReplicateGrowAnAtomAsTileLangDoes) {
  const LayoutSpec warp = ok("mma.m16n8k16.f16.A.repeat(2,1,thread).replicate(2)");
  EXPECT_TRUE(warp.is_fragment());
  EXPECT_EQ(warp.atom_name, "mma.m16n8k16.f16.A.repeat(2,1,thread,rows).replicate(2)");
  EXPECT_EQ(warp.elem_bytes, 2);
  EXPECT_EQ(warp.rows, 32);
  EXPECT_EQ(warp.cols, 16);
  EXPECT_EQ(warp.fragment.num_threads(), 128);
  EXPECT_EQ(warp.fragment.num_values(), 8);
  EXPECT_EQ(warp.fragment.replication(), 2);
  EXPECT_TRUE(warp.fragment.covers_tile());
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < 8; ++i) {
      const TileCoord want = ptx_mma_a(t % 32, i);
      EXPECT_EQ(warp.fragment(t, i), (TileCoord{want.row + 16 * ((t % 64) / 32), want.col})) << t << " " << i;
    }
  const LayoutSpec block = ok(" mma.m16n8k16.f16.A .repeat( 2 , 1 , threads ).replicate(2).repeat(4,2,rows,value) ");
  EXPECT_EQ(block.rows, 128);
  EXPECT_EQ(block.cols, 32);
  EXPECT_EQ(block.fragment.num_threads(), 128);
  EXPECT_EQ(block.fragment.num_values(), 64);
  EXPECT_TRUE(block.fragment.covers_tile());
  for (int t = 0; t < 128; ++t)
    for (int v = 0; v < 64; ++v) {
      const TileCoord w = warp.fragment(t, v % 8);
      const int k = v / 8;  // copies numbered down the rows first
      EXPECT_EQ(block.fragment(t, v), (TileCoord{w.row + 32 * (k % 4), w.col + 16 * (k / 4)})) << t << " " << v;
    }
  // TileLang's default order (lower_dim_first=True) numbers the copies across the columns first; the default place
  // for the copies is new values.
  const LayoutSpec cols = ok("mma.m16n8k16.f16.A.repeat(2,2,cols)");
  EXPECT_EQ(cols.fragment.num_threads(), 32);
  EXPECT_EQ(cols.fragment(0, 8), (TileCoord{0, 16}));
  EXPECT_EQ(cols.fragment(0, 16), (TileCoord{16, 0}));
  EXPECT_EQ(ok("mma.m16n8k16.f16.A.repeat(2,2)").fragment(0, 8), (TileCoord{16, 0}));
  // long chains stay within the layout's fixed capacity
  EXPECT_TRUE(ok("ldmatrix.x4.replicate(2).repeat(2,2,thread).replicate(3).repeat(3,3,cols).repeat(2,1,thread)")
                  .fragment.covers_tile());
  EXPECT_EQ(repeat_suffix(4, 2, false, true), ".repeat(4,2,value,rows)");
  EXPECT_EQ(replicate_suffix(2), ".replicate(2)");
}

TEST(LayoutSpec, RepeatErrorsNameTheColumn) {
  bad("mma.m16n8k16.f16.A.repeat(0,1)", 26, "at least 1");
  bad("mma.m16n8k16.f16.A.repeat(2)", 27, "column copies C");
  bad("mma.m16n8k16.f16.A.repeat(2,1,sideways)", 30, "thread or value");
  bad("mma.m16n8k16.f16.A.repeat(2,1,thread,value)", 37, "once");
  bad("mma.m16n8k16.f16.A.repeat(2,1", 29, "')'");
  bad("mma.m16n8k16.f16.A.replicate(2,2)", 30, "')'");
  bad("mma.m16n8k16.f16.A.tile(2)", 19, "unknown fragment operation 'tile'");
  bad("mma.m16n8k16.f16.A.repeat(2,1) x", 31, "unexpected text");
  bad("mma.m16n8k16.f16.A.repeat(99999999,1)", 26, "too large");
  bad("mma.m16n8k16.f16.A.repeat(4096,4096)", 18, "2^24");
  bad("mma.m16n8k16.f16.Z.repeat(2,1)", 0, "unknown atom 'mma.m16n8k16.f16.Z'");
  bad("(8,8):(1,8).repeat(2,1)", 11, "register fragments");
  bad("mma.m16n8k16.f16.Y", 0, "repeat(R,C");  // the unknown-atom message names the operations
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
  // a warp tile of several atoms is named by the atom and its repeat
  const Fragment two = repeat(mma_m16n8k16_a_f16(), 2, 1, true);
  EXPECT_FALSE(fragment_spec(two, "mma.m16n8k16.bf16.A").has_value());
  EXPECT_EQ(fragment_spec(two, "mma.m16n8k16.bf16.A" + repeat_suffix(2, 1, true, true)),
            "mma.m16n8k16.bf16.A" + repeat_suffix(2, 1, true, true));
}

}  // namespace
}  // namespace tl
