// Layout algebra: CuTe's documented examples, and the algebra's properties over many random layouts.
#include <gtest/gtest.h>

#include <set>

#include "tests/tile/random_layouts.hpp"
#include "tile/layout.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

using test::image;
using test::is_bijection_onto_range;
using test::is_injective;

Layout L(const char* text) {
  const LayoutParse p = parse_layout(text);
  EXPECT_TRUE(p.ok) << text << ": " << (p.message ? p.message : "");
  return p.layout;
}

// Same function on [0, size) and the same size.
void expect_same_function(const Layout& a, const Layout& b) {
  ASSERT_EQ(a.size(), b.size()) << to_string(a) << " vs " << to_string(b);
  for (int i = 0; i < a.size(); ++i) ASSERT_EQ(a(i), b(i)) << "at " << i << ": " << to_string(a) << " vs " << to_string(b);
}

constexpr int kTrials = 400;

// ---- constant evaluation ------------------------------------------------------------------------

constexpr Layout kTv = parse_layout("(8,(4,2)):(4,(1,32))").layout;
static_assert(kTv.size() == 64);
static_assert(kTv.cosize() == 7 * 4 + 3 + 32 + 1);
static_assert(kTv.rank() == 2 && kTv.depth() == 2);
static_assert(kTv(1, 5) == 4 + 1 + 32);  // mode 1 index 5 = (1, 1) in (4,2)
static_assert(kTv(9) == 4 * 1 + 1);      // linear 9 = (1, 1) in (8, 8)
static_assert(kTv(make_coord(1, make_coord(1, 1))) == 37);
static_assert(composition(make_layout(make_shape(6, 2), make_stride(8, 2)), make_layout(make_shape(4, 3), make_stride(3, 1))) ==
              parse_layout("((2,2),3):((24,2),8)").layout);
static_assert(get<1>(kTv) == Layout(make_shape(4, 2), make_stride(1, 32)));

TEST(Layout, EvaluatesColexicographically) {
  const Layout l = make_layout(make_shape(4, make_shape(2, 3)));  // compact column-major
  EXPECT_EQ(to_string(l), "(4,(2,3)):(1,(4,8))");
  for (int i = 0; i < l.size(); ++i) EXPECT_EQ(l(i), i);
  const Layout r = make_layout_row_major(make_shape(4, make_shape(2, 3)));
  EXPECT_EQ(to_string(r), "(4,(2,3)):(6,(3,1))");
  EXPECT_EQ(r(1, 0), 6);
  EXPECT_EQ(r(0, 1), 3);  // mode-1 index 1 = (1,0)
  EXPECT_EQ(r(0, 2), 1);  // mode-1 index 2 = (0,1)
  const Layout o = make_ordered_layout(make_shape(2, 3, 4), make_shape(2, 0, 1));
  EXPECT_EQ(to_string(o), "(2,3,4):(12,1,3)");
}

TEST(Layout, LastModeExtendsBeyondSize) {
  // CuTe reduces every leaf but the last modulo its extent.
  const Layout l = L("(4,2):(1,10)");
  EXPECT_EQ(l(9), 1 + 2 * 10);
}

TEST(Layout, HierarchicalCoordinatesAgreeWithLinearIndex) {
  std::mt19937 rng(1);
  for (int t = 0; t < kTrials; ++t) {
    const Layout l = test::random_layout(rng);
    for (int i = 0; i < l.size(); ++i) {
      const IntTuple c = idx2crd(i, l.shape());
      ASSERT_TRUE(coord_fits(c, l.shape()));
      ASSERT_EQ(l(c), l(i)) << to_string(l) << " at " << to_string(c);
    }
    if (l.rank() == 2 && !l.is_leaf()) {
      const int n0 = l.mode(0).size();
      for (int i = 0; i < l.size(); ++i) ASSERT_EQ(l(i % n0, i / n0), l(i)) << to_string(l);
    }
  }
}

// ---- coalesce -----------------------------------------------------------------------------------

TEST(Coalesce, DocumentedExample) {
  EXPECT_EQ(coalesce(L("(2,(1,6)):(1,(6,2))")), L("12:1"));
  EXPECT_EQ(coalesce(L("(2,4):(1,4)")), L("(2,4):(1,4)"));
  EXPECT_EQ(coalesce(L("(1,1):(5,7)")), L("1:0"));
  EXPECT_EQ(coalesce_modes(L("((2,3),(4,2)):((1,2),(6,24))")), L("(6,8):(1,6)"));
}

TEST(Coalesce, PreservesTheFunctionOverRandomLayouts) {
  std::mt19937 rng(2);
  for (int t = 0; t < kTrials; ++t) {
    const Layout l = test::random_layout(rng);
    const Layout c = coalesce(l);
    ASSERT_TRUE(c.ok());
    expect_same_function(c, l);
    ASSERT_LE(c.depth(), 1);
    // nothing left to merge
    for (int k = 0; k + 1 < c.num_leaves(); ++k) {
      ASSERT_NE(c.stride().leaf(k + 1), c.shape().leaf(k) * c.stride().leaf(k)) << to_string(c);
      ASSERT_NE(c.shape().leaf(k), 1);
    }
    const Layout cm = coalesce_modes(l);
    ASSERT_EQ(cm.is_leaf() ? 1 : cm.rank(), l.is_leaf() ? 1 : l.rank());
    expect_same_function(cm, l);
  }
}

// ---- composition --------------------------------------------------------------------------------

TEST(Composition, DocumentedExamples) {
  EXPECT_EQ(composition(L("(6,2):(8,2)"), L("(4,3):(3,1)")), L("((2,2),3):((24,2),8)"));
  EXPECT_EQ(composition(L("20:2"), L("(5,4):(4,1)")), L("(5,4):(8,2)"));
  EXPECT_EQ(composition(L("(10,2):(16,4)"), L("(5,4):(1,5)")), L("(5,(2,2)):(16,(80,4))"));
}

TEST(Composition, AgreesPointwiseOverRandomLayouts) {
  std::mt19937 rng(3);
  int tested = 0;
  for (int t = 0; t < 20 * kTrials && tested < kTrials; ++t) {
    const Layout a = test::random_layout(rng);
    Layout b = rng() % 2 ? test::random_injective(rng, true) : test::random_layout(rng, 3);
    if (b.cosize() > a.size()) continue;  // A(B(i)) is only defined on A's domain
    const Layout c = composition(a, b);
    if (!c.ok()) {
      ASSERT_EQ(c.error(), LayoutError::not_divisible) << to_string(a) << " o " << to_string(b);
      continue;
    }
    ++tested;
    ASSERT_EQ(c.size(), b.size());
    if (!b.is_leaf()) {  // the result has b's modes
      ASSERT_EQ(c.rank(), b.rank());
      for (int m = 0; m < b.rank(); ++m) ASSERT_EQ(c.mode(m).size(), b.mode(m).size());
    }
    for (int i = 0; i < b.size(); ++i)
      ASSERT_EQ(c(i), a(b(i))) << to_string(a) << " o " << to_string(b) << " = " << to_string(c) << " at " << i;
  }
  EXPECT_GE(tested, kTrials / 2);
}

TEST(Composition, PowerOfTwoLayoutsAlwaysCompose) {
  std::mt19937 rng(4);
  for (int t = 0; t < kTrials; ++t) {
    const Layout a = test::random_injective(rng, true);
    const Layout b = test::random_bijection(rng, true, 3);
    if (b.size() > a.size()) continue;
    const Layout c = composition(a, b);
    ASSERT_TRUE(c.ok()) << to_string(a) << " o " << to_string(b);
    for (int i = 0; i < b.size(); ++i) ASSERT_EQ(c(i), a(b(i)));
  }
}

TEST(Composition, ReportsDivisibilityViolations) {
  const Layout c = composition(L("(3,4):(4,1)"), L("2:2"));
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.error(), LayoutError::not_divisible);
}

// ---- complement ---------------------------------------------------------------------------------

TEST(Complement, DocumentedExamples) {
  EXPECT_EQ(complement(L("4:1"), 24), L("6:4"));
  EXPECT_EQ(complement(L("6:4"), 24), L("4:1"));
  EXPECT_EQ(complement(L("(2,2):(1,6)"), 24), L("(3,2):(2,12)"));
  EXPECT_EQ(complement(L("(4,6):(1,4)"), 24), L("1:0"));
  EXPECT_EQ(complement(L("4:2"), 24), L("(2,3):(1,8)"));
}

TEST(Complement, IsDisjointOrderedAndCoversOverRandomLayouts) {
  std::mt19937 rng(5);
  for (int t = 0; t < kTrials; ++t) {
    const Layout a = test::random_injective(rng);
    const int cotarget = a.cosize() * static_cast<int>(1 + rng() % 3) + static_cast<int>(rng() % 5);
    const Layout c = complement(a, cotarget);
    ASSERT_TRUE(c.ok()) << to_string(a);
    // disjoint: only offset 0 is shared
    const std::vector<int> ia = image(a), ic = image(c);
    const std::set<int> sa(ia.begin(), ia.end());
    for (int x : ic)
      if (x != 0) {
        ASSERT_EQ(sa.count(x), 0u) << to_string(a) << " complement " << to_string(c);
      }
    // ordered: strictly increasing
    for (int i = 1; i < c.size(); ++i) ASSERT_LT(c(i - 1), c(i)) << to_string(c);
    // together they cover [0, size(a)*size(c)) exactly once, and that reaches the cotarget
    const Layout both = make_layout(a, c);
    ASSERT_TRUE(is_bijection_onto_range(both)) << to_string(a) << " , " << to_string(c);
    ASSERT_GE(both.size(), cotarget);
  }
}

// ---- inverses -----------------------------------------------------------------------------------

TEST(Inverse, RightInverseInvertsBijections) {
  std::mt19937 rng(6);
  for (int t = 0; t < kTrials; ++t) {
    const Layout a = test::random_bijection(rng);
    const Layout r = right_inverse(a);
    ASSERT_EQ(r.size(), a.size()) << to_string(a) << " -> " << to_string(r);
    for (int i = 0; i < r.size(); ++i) ASSERT_EQ(a(r(i)), i) << to_string(a) << " -> " << to_string(r);
  }
}

TEST(Inverse, RightInverseOfInjectiveLayoutsIsAPrefixInverse) {
  std::mt19937 rng(7);
  for (int t = 0; t < kTrials; ++t) {
    const Layout a = test::random_injective(rng);
    const Layout r = right_inverse(a);
    for (int i = 0; i < r.size(); ++i) ASSERT_EQ(a(r(i)), i) << to_string(a) << " -> " << to_string(r);
    bool reaches_one = false;
    for (int i = 0; i < a.size(); ++i) reaches_one = reaches_one || a(i) == 1;
    if (!reaches_one) {
      ASSERT_EQ(r.size(), 1);
    }
  }
}

TEST(Inverse, LeftInverseInvertsInjectiveLayouts) {
  std::mt19937 rng(8);
  for (int t = 0; t < kTrials; ++t) {
    const Layout a = test::random_injective(rng);
    const Layout li = left_inverse(a);
    ASSERT_TRUE(li.ok());
    for (int i = 0; i < a.size(); ++i) ASSERT_EQ(li(a(i)), i) << to_string(a) << " -> " << to_string(li);
  }
  EXPECT_EQ(left_inverse(L("(4,2):(2,1)"))(L("(4,2):(2,1)")(5)), 5);
}

// ---- divide -------------------------------------------------------------------------------------

TEST(Divide, DocumentedExample) {
  EXPECT_EQ(logical_divide(L("(4,2,3):(2,1,8)"), L("4:2")), L("((2,2),(2,3)):((4,1),(2,8))"));
}

TEST(Divide, LogicalDivideIsCompositionWithTileAndComplement) {
  std::mt19937 rng(9);
  int tested = 0;
  for (int t = 0; t < 10 * kTrials && tested < kTrials; ++t) {
    const Layout a = test::random_injective(rng, true);
    const Layout b = test::random_injective(rng, true, 2);
    if (b.cosize() > a.size() || a.size() % b.cosize() != 0) continue;
    const Layout d = logical_divide(a, b);
    if (!d.ok()) continue;
    ++tested;
    const Layout bc = complement(b, a.size());
    ASSERT_EQ(d.rank(), 2);
    ASSERT_EQ(d.mode(0).size(), b.size());
    ASSERT_EQ(d.size(), b.size() * bc.size());
    ASSERT_EQ(d.size(), a.size()) << "tile sizes divide: the divide is a re-indexing of a";
    for (int i = 0; i < b.size(); ++i)
      for (int j = 0; j < bc.size(); ++j) ASSERT_EQ(d(i, j), a(b(i) + bc(j))) << to_string(a) << " / " << to_string(b);
    std::vector<int> ia = image(a), id = image(d);
    std::sort(ia.begin(), ia.end());
    std::sort(id.begin(), id.end());
    ASSERT_EQ(ia, id);
  }
  EXPECT_GE(tested, kTrials / 4);
}

TEST(Divide, ZippedTiledAndFlatRearrangeTheLogicalDivide) {
  const Layout a = L("(16,(4,6)):(24,(1,4))");
  const Tiler t = make_tile(L("4:2"), 3);
  const Layout ld = logical_divide(a, t);
  const Layout zd = zipped_divide(a, t);
  const Layout td = tiled_divide(a, t);
  const Layout fd = flat_divide(a, t);
  ASSERT_TRUE(ld.ok() && zd.ok() && td.ok() && fd.ok());
  EXPECT_EQ(ld.rank(), 2);
  EXPECT_EQ(zd.rank(), 2);
  EXPECT_EQ(td.rank(), 3);
  EXPECT_EQ(fd.rank(), 4);
  const int t0 = ld.mode(0).mode(0).size(), r0 = ld.mode(0).mode(1).size();
  const int t1 = ld.mode(1).mode(0).size(), r1 = ld.mode(1).mode(1).size();
  EXPECT_EQ(t0, 4);
  EXPECT_EQ(t1, 3);
  EXPECT_EQ(zd.mode(0).size(), 12);
  for (int a0 = 0; a0 < t0; ++a0)
    for (int b0 = 0; b0 < r0; ++b0)
      for (int a1 = 0; a1 < t1; ++a1)
        for (int b1 = 0; b1 < r1; ++b1) {
          const int want = ld(make_coord(make_coord(a0, b0), make_coord(a1, b1)));
          EXPECT_EQ(zd(make_coord(make_coord(a0, a1), make_coord(b0, b1))), want);
          EXPECT_EQ(td(make_coord(make_coord(a0, a1), b0, b1)), want);
          EXPECT_EQ(fd(make_coord(a0, a1, b0, b1)), want);
        }
  // by-mode: mode 0 of the result is mode 0 of a divided by 4:2
  EXPECT_EQ(ld.mode(0), logical_divide(a.mode(0), L("4:2")));
}

TEST(Divide, TilerWithMoreModesThanTheLayoutIsAnError) {
  EXPECT_EQ(logical_divide(L("(8,8):(1,8)"), make_tile(2, 2, 2)).error(), LayoutError::rank_mismatch);
}

// ---- product ------------------------------------------------------------------------------------

TEST(Product, DocumentedExamples) {
  EXPECT_EQ(logical_product(L("(2,2):(4,1)"), L("6:1")), L("((2,2),(2,3)):((4,1),(2,8))"));
  expect_same_function(blocked_product(L("(2,5):(5,1)"), L("(3,4):(1,3)")), L("((2,3),(5,4)):((5,10),(1,30))"));
  expect_same_function(raked_product(L("(2,5):(5,1)"), L("(3,4):(1,3)")), L("((3,2),(4,5)):((10,5),(30,1))"));
}

TEST(Product, LogicalProductPointwise) {
  std::mt19937 rng(10);
  for (int t = 0; t < kTrials; ++t) {
    const Layout a = test::random_injective(rng, false, 3);
    const Layout b = test::random_layout(rng, 2);
    const Layout p = logical_product(a, b);
    if (!p.ok()) continue;
    const Layout c = complement(a, a.size() * b.cosize());
    ASSERT_EQ(p.size(), a.size() * b.size());
    for (int i = 0; i < a.size(); ++i)
      for (int j = 0; j < b.size(); ++j) ASSERT_EQ(p(i, j), a(i) + c(b(j))) << to_string(a) << " x " << to_string(b);
  }
}

// A bijection onto [0, size) with two top-level modes (its leaves in a random order).
Layout rank2_bijection(std::mt19937& rng) {
  for (;;) {
    const Layout f = flatten(test::random_bijection(rng, false, 3));
    if (f.is_leaf() || f.rank() < 2) continue;
    const int split = 1 + static_cast<int>(rng() % (f.rank() - 1));
    IntTuple sh = IntTuple::raw(), st = IntTuple::raw();
    sh.push_open();
    st.push_open();
    for (int part = 0; part < 2; ++part) {
      sh.push_open();
      st.push_open();
      for (int k = part ? split : 0; k < (part ? f.rank() : split); ++k) {
        sh.push_leaf(f.shape().leaf(k));
        st.push_leaf(f.stride().leaf(k));
      }
      sh.push_close();
      st.push_close();
    }
    sh.push_close();
    st.push_close();
    return Layout(sh, st);
  }
}

TEST(Product, BlockedAndRakedProductsOfBijectionsAreBijections) {
  std::mt19937 rng(11);
  for (int t = 0; t < kTrials; ++t) {
    const Layout a = rank2_bijection(rng);
    const Layout b = rank2_bijection(rng);
    for (bool raked : {false, true}) {
      const Layout p = raked ? raked_product(a, b) : blocked_product(a, b);
      ASSERT_TRUE(p.ok()) << to_string(a) << " x " << to_string(b);
      ASSERT_EQ(p.rank(), 2);
      ASSERT_EQ(p.mode(0).size(), a.mode(0).size() * b.mode(0).size());
      ASSERT_EQ(p.mode(1).size(), a.mode(1).size() * b.mode(1).size());
      ASSERT_TRUE(is_bijection_onto_range(p)) << to_string(p);
      // blocked: mode i is (block_i, tile_i) with the block index fastest; raked the other way round
      const Layout rest = composition(complement(a, a.size() * b.cosize()), b);
      for (int a0 = 0; a0 < a.mode(0).size(); ++a0)
        for (int a1 = 0; a1 < a.mode(1).size(); ++a1)
          for (int b0 = 0; b0 < b.mode(0).size(); ++b0)
            for (int b1 = 0; b1 < b.mode(1).size(); ++b1) {
              const IntTuple c = raked ? make_coord(make_coord(b0, a0), make_coord(b1, a1))
                                       : make_coord(make_coord(a0, b0), make_coord(a1, b1));
              ASSERT_EQ(p(c), a(a0, a1) + rest(b0, b1));
            }
    }
  }
}

// ---- errors and parsing -------------------------------------------------------------------------

TEST(Parse, RoundTripsAndReportsPositions) {
  for (const char* s : {"(8,(4,2)):(4,(1,32))", "8:1", "((2,2),3):((24,2),8)", "(4,(2,3)):(1,(4,8))", "():()"}) {
    const LayoutParse p = parse_layout(s);
    ASSERT_TRUE(p.ok) << s;
    EXPECT_EQ(to_string(p.layout), s);
  }
  EXPECT_EQ(to_string(parse_layout(" ( 8 , 64 ) ").layout), "(8,64):(1,8)");
  LayoutParse p = parse_layout("(8,(4,2):(4,(1,32))");
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.position, 8);
  p = parse_layout("(8,(4,2)):(4,1,2)");
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.position, 10);
  EXPECT_NE(std::string(p.message).find("rank"), std::string::npos);
  p = parse_layout("(8,(4,2)):(4,1)");
  EXPECT_FALSE(p.ok);
  EXPECT_NE(std::string(p.message).find("nesting"), std::string::npos);
  p = parse_layout("(8,4)):(1,8)");
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.position, 5);
  p = parse_layout("(8,x)");
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.position, 3);
  p = parse_layout("(8,0):(1,8)");
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.position, 3);
}

TEST(Layout, CapacityOverflowIsReportedNotUndefined) {
  std::string s = "(";
  for (int i = 0; i < 17; ++i) s += i ? ",2" : "2";
  s += ")";
  const LayoutParse p = parse_layout(s.c_str());
  EXPECT_FALSE(p.ok);
  Layout big = make_layout(L("(2,2,2,2,2,2,2,2)"), L("(2,2,2,2,2,2,2,2)"));
  EXPECT_TRUE(big.ok());
  big = make_layout(big, L("2:1"));
  EXPECT_FALSE(big.ok());
  EXPECT_EQ(big.error(), LayoutError::capacity);
}

}  // namespace
}  // namespace tl
