// Layouts, swizzled layouts and fragments fixed at compile time: evaluation code generated from their constants.
#pragma once

#include "tile/config.hpp"
#include "tile/fragment.hpp"
#include "tile/layout.hpp"
#include "tile/swizzle.hpp"

// API overview ---------------------------------------------------------------------------------------
//   fixed<X>()            X a Layout, SwizzledLayout or Fragment known at compile time (a plan's member, a template
//                         argument): an empty object evaluated like X, L(i), L(c0, c1, ...), F(thread, value), whose
//                         code is built from X's shapes and strides while the template is instantiated: one term per
//                         leaf, divisions only by the leaves' extents, size-1 and stride-0 leaves dropped.
//   split_rows_cols(f)    a fragment's row and column as two layouts of (thread, value), where its tile index
//                         splits (every leaf moves rows inside one column, or whole columns): no division by the
//                         tile's height to evaluate it.
//
// Why: a constexpr object evaluated at run-time coordinates folds to the same arithmetic in the end, but only after
// the optimizer has unrolled the evaluation's loop over the leaf capacity; until then the kernel's own loops look
// larger than they are, and unrolling and hoisting decisions change. fixed<X>() hands the optimizer the folded form.

namespace tl {

// Row and column of a fragment's (thread, value), as layouts of the same shape as its TV layout.
struct FragmentSplit {
  Layout row;
  Layout col;
  bool ok = false;  // false: the tile index does not split; evaluate through the index
};

TL_HOST_DEVICE constexpr FragmentSplit split_rows_cols(const Fragment& f) {
  FragmentSplit s{f.tv(), f.tv(), f.ok()};
  int row_span = 0;
  for (int i = 0; i < f.tv().num_leaves(); ++i) {
    const int n = f.tv().shape().leaf(i), d = f.tv().stride().leaf(i);
    const bool whole_cols = d % f.rows() == 0;
    s.row.m_stride.m_leaf[i] = whole_cols ? 0 : d;
    s.col.m_stride.m_leaf[i] = whole_cols ? d / f.rows() : 0;
    if (d < 0) s.ok = false;
    if (!whole_cols) row_span += (n - 1) * d;
  }
  if (row_span >= f.rows()) s.ok = false;
  s.row = coalesce_modes(s.row);
  s.col = coalesce_modes(s.col);
  return s;
}

namespace detail {

// Enumerators, not constexpr variables: NVRTC emits those as device globals in every kernel's PTX.
template <class A, class B>
struct SameType {
  enum : bool { value = false };
};
template <class A>
struct SameType<A, A> {
  enum : bool { value = true };
};

// Offset of linear index idx in leaves [K, LE) of L: colexicographic, the last leaf unreduced (as Layout does).
template <Layout L, int K, int LE>
TL_HOST_DEVICE constexpr int fixed_leaves(int idx) {
  if constexpr (K >= LE) {
    return 0;
  } else if constexpr (K + 1 == LE) {
    constexpr int d = L.m_stride.m_leaf[K];
    if constexpr (d == 0) return 0;
    else return idx * d;
  } else {
    constexpr int n = L.m_shape.m_leaf[K], d = L.m_stride.m_leaf[K];
    if constexpr (n == 1) return fixed_leaves<L, K + 1, LE>(idx);
    else if constexpr (d == 0) return fixed_leaves<L, K + 1, LE>(idx / n);
    else return idx % n * d + fixed_leaves<L, K + 1, LE>(idx / n);
  }
}

// One coordinate per top-level mode, from mode I on.
template <Layout L, int I>
TL_HOST_DEVICE constexpr int fixed_modes(int c) {
  return fixed_leaves<L, I == 0 ? 0 : L.m_mode_end[I == 0 ? 0 : I - 1], L.m_mode_end[I]>(c);
}
template <Layout L, int I, class... Is>
TL_HOST_DEVICE constexpr int fixed_modes(int c, int c1, Is... cs) {
  return fixed_modes<L, I>(c) + fixed_modes<L, I + 1>(c1, cs...);
}

}  // namespace detail

template <Layout L>
struct FixedLayout {
  static_assert(L.ok(), "fixed<L>: the layout reports an error");
  TL_HOST_DEVICE constexpr int operator()(int idx) const { return detail::fixed_leaves<L, 0, L.m_shape.m_num_leaves>(idx); }
  template <class... Is>
  TL_HOST_DEVICE constexpr int operator()(int c0, int c1, Is... cs) const {
    return detail::fixed_modes<L, 0>(c0, c1, static_cast<int>(cs)...);
  }
};

template <SwizzledLayout L>
struct FixedSwizzledLayout {
  static_assert(L.ok(), "fixed<L>: the layout reports an error");
  TL_HOST_DEVICE static constexpr int swizzle(int x) {
    if constexpr (L.m_swizzle.is_identity()) {
      return x;
    } else {
      constexpr int mask = L.m_swizzle.yyy_mask(), shift = L.m_swizzle.m_shift;
      if constexpr (shift >= 0) return x ^ ((x & mask) >> shift);
      else return x ^ ((x & mask) << -shift);
    }
  }
  TL_HOST_DEVICE constexpr int operator()(int idx) const { return swizzle(FixedLayout<L.m_layout>{}(idx)); }
  template <class... Is>
  TL_HOST_DEVICE constexpr int operator()(int c0, int c1, Is... cs) const {
    return swizzle(FixedLayout<L.m_layout>{}(c0, c1, cs...));
  }
  // As SwizzledLayout::join_disjoint.
  TL_HOST_DEVICE constexpr int join_disjoint(int lc, int ld) const { return L.join_disjoint(lc, ld); }
};

template <Fragment F>
struct FixedFragment {
  static_assert(F.ok(), "fixed<F>: the fragment reports an error");
  TL_HOST_DEVICE constexpr TileCoord operator()(int thread, int value) const {
    constexpr FragmentSplit split = split_rows_cols(F);
    if constexpr (split.ok) {
      return {FixedLayout<split.row>{}(thread, value), FixedLayout<split.col>{}(thread, value)};
    } else {
      const int x = FixedLayout<F.m_tv>{}(thread, value);
      return {x % F.m_rows, x / F.m_rows};
    }
  }
};

template <auto X>
TL_HOST_DEVICE constexpr auto fixed() {
  using T = decltype(X);
  if constexpr (detail::SameType<T, const Layout>::value || detail::SameType<T, Layout>::value) return FixedLayout<X>{};
  else if constexpr (detail::SameType<T, const SwizzledLayout>::value || detail::SameType<T, SwizzledLayout>::value)
    return FixedSwizzledLayout<X>{};
  else return FixedFragment<X>{};
}

}  // namespace tl
