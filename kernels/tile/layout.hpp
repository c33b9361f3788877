// Layout algebra with CuTe's semantics (hierarchical Shape:Stride), constexpr, on the host and in kernels.
#pragma once

#include "tile/config.hpp"

// API overview ---------------------------------------------------------------------------------------
//   IntTuple        a hierarchical tuple of ints: a leaf `8` or a tuple `(8,(4,2))`. Built with
//                   make_shape / make_stride / make_coord (ints convert to leaves).
//   Layout          (shape, stride), congruent IntTuples. L(i) evaluates a linear index (colexicographic,
//                   the last leaf is not reduced, as in CuTe), L(i, j, ...) one coordinate per top-level
//                   mode, L(IntTuple coord) a hierarchical coordinate. size, cosize, rank, depth,
//                   mode(i) / get<I>(L), ok() / error().
//   makers          make_layout(shape[, stride]) (compact column-major), make_layout_row_major(shape),
//                   make_ordered_layout(shape, order), make_layout(L0, L1, ...) (concatenate modes),
//                   parse_layout("(8,(4,2)):(4,(1,32))").
//   algebra         coalesce, coalesce_modes, flatten, filter, composition, complement, right_inverse,
//                   left_inverse, logical_divide / zipped_divide / tiled_divide / flat_divide,
//                   logical_product / zipped_product / tiled_product / blocked_product / raked_product.
//                   A Tiler (make_tile(L0, L1, ...), ints meaning n:1) applies an operation mode by mode.
//
// Representation: leaves in flat arrays (at most IntTuple::kMaxLeaves) plus the nesting as a token
// string ('(' leaf ')'), so every object is a plain literal type: usable in constant expressions, as a
// constexpr local inside a kernel (`constexpr auto L = ...; int off = L(i, j);` folds), and as a C++20
// class-type template argument. Values are `int`: these are tile layouts, not whole-tensor ones.
//
// Errors do not throw (kernels can't): an operation whose preconditions fail returns a layout with
// ok() == false and error() naming the reason. During constant evaluation the same failure stops the
// compilation at a call to a non-constexpr function named tl_layout_error_<reason>.

namespace tl {

enum class LayoutError : unsigned char {
  none = 0,
  capacity,       // more than IntTuple::kMaxLeaves leaves or kMaxTokens tokens
  not_congruent,  // shape and stride have different nesting
  bad_shape,      // a shape leaf <= 0
  bad_mode,       // mode index out of range
  rank_mismatch,  // coordinate rank differs from the layout's, or a tiler has more modes than the layout
  not_divisible,  // composition/complement divisibility condition fails (CuTe's stride-divisibility)
  negative_stride,
};

TL_HOST_DEVICE constexpr const char* layout_error_message(LayoutError e) {
  switch (e) {
    case LayoutError::none: return "ok";
    case LayoutError::capacity: return "layout exceeds the fixed capacity (16 leaves, 48 nesting tokens)";
    case LayoutError::not_congruent: return "shape and stride are not congruent (different nesting)";
    case LayoutError::bad_shape: return "shape entries must be positive";
    case LayoutError::bad_mode: return "mode index out of range";
    case LayoutError::rank_mismatch: return "rank mismatch";
    case LayoutError::not_divisible:
      return "divisibility condition violated (shape/stride of the right operand do not divide the left's)";
    case LayoutError::negative_stride: return "negative strides are not supported by this operation";
  }
  return "unknown layout error";
}

namespace detail {

// Deliberately not constexpr: reaching one during constant evaluation makes the compiler reject the
// expression and name the function, which names the failed precondition.
TL_HOST_DEVICE inline void tl_layout_error_capacity() {}
TL_HOST_DEVICE inline void tl_layout_error_not_congruent() {}
TL_HOST_DEVICE inline void tl_layout_error_bad_shape() {}
TL_HOST_DEVICE inline void tl_layout_error_bad_mode() {}
TL_HOST_DEVICE inline void tl_layout_error_rank_mismatch() {}
TL_HOST_DEVICE inline void tl_layout_error_not_divisible() {}
TL_HOST_DEVICE inline void tl_layout_error_negative_stride() {}

TL_HOST_DEVICE constexpr void raise(LayoutError e) {
  if (__builtin_is_constant_evaluated()) {
    switch (e) {
      case LayoutError::none: break;
      case LayoutError::capacity: tl_layout_error_capacity(); break;
      case LayoutError::not_congruent: tl_layout_error_not_congruent(); break;
      case LayoutError::bad_shape: tl_layout_error_bad_shape(); break;
      case LayoutError::bad_mode: tl_layout_error_bad_mode(); break;
      case LayoutError::rank_mismatch: tl_layout_error_rank_mismatch(); break;
      case LayoutError::not_divisible: tl_layout_error_not_divisible(); break;
      case LayoutError::negative_stride: tl_layout_error_negative_stride(); break;
    }
  }
}

TL_HOST_DEVICE constexpr int imin(int a, int b) { return a < b ? a : b; }
TL_HOST_DEVICE constexpr int imax(int a, int b) { return a < b ? b : a; }
TL_HOST_DEVICE constexpr int iabs(int a) { return a < 0 ? -a : a; }
TL_HOST_DEVICE constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
// CuTe's shape_div: a / b when b divides a, 1 when a divides b (callers check one of the two holds).
TL_HOST_DEVICE constexpr int shape_div(int a, int b) { return a / b != 0 ? a / b : 1; }

}  // namespace detail

// A hierarchical tuple of ints. Leaves live in m_leaf in order; m_tok spells the nesting with one token
// per leaf and one per parenthesis. A leaf tuple is the single token kLeaf; `()` is the empty tuple.
// Members are public (and so the type is structural, usable as a template argument); treat them as
// internal and use the methods.
struct IntTuple {
  // Enumerators, not static constexpr members: NVRTC emits those as device globals in every kernel that includes
  // this header.
  enum : int { kMaxLeaves = 16, kMaxTokens = 48 };
  enum : signed char { kLeaf = 0, kOpen = 1, kClose = 2 };

  int m_leaf[kMaxLeaves]{};
  signed char m_tok[kMaxTokens]{};
  int m_num_leaves = 0;
  int m_num_tokens = 0;
  bool m_overflow = false;

  // The empty tuple ().
  TL_HOST_DEVICE constexpr IntTuple() : m_num_tokens(2) {
    m_tok[0] = kOpen;
    m_tok[1] = kClose;
  }
  // A leaf. Implicit so that ints can be written wherever a tuple is expected.
  TL_HOST_DEVICE constexpr IntTuple(int v) : m_num_leaves(1), m_num_tokens(1) {  // NOLINT
    m_leaf[0] = v;
    m_tok[0] = kLeaf;
  }

  TL_HOST_DEVICE static constexpr IntTuple raw() {
    IntTuple t;
    t.m_num_tokens = 0;
    t.m_tok[0] = 0;
    t.m_tok[1] = 0;
    return t;
  }

  TL_HOST_DEVICE constexpr bool ok() const { return !m_overflow; }
  TL_HOST_DEVICE constexpr bool is_leaf() const { return m_num_tokens == 1; }
  TL_HOST_DEVICE constexpr int num_leaves() const { return m_num_leaves; }
  TL_HOST_DEVICE constexpr int leaf(int i) const { return m_leaf[i]; }
  // The value of a leaf tuple (the first leaf otherwise).
  TL_HOST_DEVICE constexpr int value() const { return m_leaf[0]; }

  TL_HOST_DEVICE constexpr void push_token(signed char t) {
    if (m_num_tokens >= kMaxTokens) {
      m_overflow = true;
      detail::raise(LayoutError::capacity);
      return;
    }
    m_tok[m_num_tokens++] = t;
  }
  TL_HOST_DEVICE constexpr void push_open() { push_token(kOpen); }
  TL_HOST_DEVICE constexpr void push_close() { push_token(kClose); }
  TL_HOST_DEVICE constexpr void push_leaf(int v) {
    if (m_num_leaves >= kMaxLeaves) {
      m_overflow = true;
      detail::raise(LayoutError::capacity);
      return;
    }
    m_leaf[m_num_leaves++] = v;
    push_token(kLeaf);
  }
  // Appends the tokens and leaves of t (as one element when inside an open tuple).
  TL_HOST_DEVICE constexpr void push_all(const IntTuple& t) {
    m_overflow = m_overflow || t.m_overflow;
    int leaf = 0;
    for (int p = 0; p < t.m_num_tokens; ++p) {
      if (t.m_tok[p] == kLeaf) {
        push_leaf(t.m_leaf[leaf++]);
      } else {
        push_token(t.m_tok[p]);
      }
    }
  }

  // Top-level children: a leaf has rank 1 (it is its own only child), () has rank 0.
  TL_HOST_DEVICE constexpr int rank() const {
    if (is_leaf()) return 1;
    int depth = 0, n = 0;
    for (int p = 0; p < m_num_tokens; ++p) {
      const signed char t = m_tok[p];
      if (t == kOpen) {
        if (depth == 1) ++n;
        ++depth;
      } else if (t == kClose) {
        --depth;
      } else if (depth == 1) {
        ++n;
      }
    }
    return n;
  }

  TL_HOST_DEVICE constexpr int depth() const {
    int depth = 0, best = 0;
    for (int p = 0; p < m_num_tokens; ++p) {
      if (m_tok[p] == kOpen) best = detail::imax(best, ++depth);
      if (m_tok[p] == kClose) --depth;
    }
    return best;
  }

  TL_HOST_DEVICE constexpr int product() const {
    int r = 1;
    for (int i = 0; i < m_num_leaves; ++i) r *= m_leaf[i];
    return r;
  }

  // Token range [tb, te) and first leaf index of top-level child i; false when i is out of range.
  TL_HOST_DEVICE constexpr bool child_range(int i, int& tb, int& te, int& lb) const {
    if (is_leaf()) {
      tb = 0;
      te = 1;
      lb = 0;
      return i == 0;
    }
    int depth = 0, child = -1, leaves = 0;
    for (int p = 0; p < m_num_tokens; ++p) {
      const signed char t = m_tok[p];
      if (t == kOpen) {
        ++depth;
        if (depth == 2 && ++child == i) {
          tb = p;
          lb = leaves;
        }
      } else if (t == kClose) {
        if (depth == 2 && child == i) {
          te = p + 1;
          return true;
        }
        --depth;
      } else {
        if (depth == 1 && ++child == i) {
          tb = p;
          te = p + 1;
          lb = leaves;
          return true;
        }
        ++leaves;
      }
    }
    return false;
  }

  // First leaf and one past the last leaf of top-level child i.
  TL_HOST_DEVICE constexpr void child_leaves(int i, int& lb, int& le) const {
    int tb = 0, te = 0;
    lb = 0;
    le = 0;
    if (!child_range(i, tb, te, lb)) return;
    le = lb;
    for (int p = tb; p < te; ++p) le += m_tok[p] == kLeaf ? 1 : 0;
  }

  TL_HOST_DEVICE constexpr IntTuple child(int i) const {
    int tb = 0, te = 0, lb = 0;
    IntTuple r = raw();
    if (!child_range(i, tb, te, lb)) {
      detail::raise(LayoutError::bad_mode);
      r.m_overflow = true;
      r.push_leaf(0);
      return r;
    }
    int leaf = lb;
    for (int p = tb; p < te; ++p) {
      if (m_tok[p] == kLeaf) {
        r.m_leaf[r.m_num_leaves++] = m_leaf[leaf++];
      }
      r.m_tok[r.m_num_tokens++] = m_tok[p];
    }
    return r;
  }

  TL_HOST_DEVICE constexpr bool same_structure(const IntTuple& o) const {
    if (m_num_tokens != o.m_num_tokens) return false;
    for (int p = 0; p < m_num_tokens; ++p)
      if (m_tok[p] != o.m_tok[p]) return false;
    return true;
  }

  TL_HOST_DEVICE constexpr bool operator==(const IntTuple& o) const {
    if (!same_structure(o) || m_num_leaves != o.m_num_leaves) return false;
    for (int i = 0; i < m_num_leaves; ++i)
      if (m_leaf[i] != o.m_leaf[i]) return false;
    return true;
  }
  TL_HOST_DEVICE constexpr bool operator!=(const IntTuple& o) const { return !(*this == o); }
};

// Builds the tuple (xs...); ints become leaves.
template <class... Ts>
TL_HOST_DEVICE constexpr IntTuple make_int_tuple(const Ts&... xs) {
  IntTuple t = IntTuple::raw();
  t.push_open();
  (t.push_all(IntTuple(xs)), ...);
  t.push_close();
  return t;
}
template <class... Ts>
TL_HOST_DEVICE constexpr IntTuple make_shape(const Ts&... xs) {
  return make_int_tuple(xs...);
}
template <class... Ts>
TL_HOST_DEVICE constexpr IntTuple make_stride(const Ts&... xs) {
  return make_int_tuple(xs...);
}
template <class... Ts>
TL_HOST_DEVICE constexpr IntTuple make_coord(const Ts&... xs) {
  return make_int_tuple(xs...);
}

// (t..., x): appends x as a new top-level element; a leaf t becomes (t, x).
TL_HOST_DEVICE constexpr IntTuple append(const IntTuple& t, const IntTuple& x) {
  if (t.is_leaf()) return make_int_tuple(t, x);
  IntTuple r = IntTuple::raw();
  for (int p = 0; p < t.m_num_tokens - 1; ++p) r.m_tok[r.m_num_tokens++] = t.m_tok[p];
  for (int i = 0; i < t.m_num_leaves; ++i) r.m_leaf[r.m_num_leaves++] = t.m_leaf[i];
  r.m_overflow = t.m_overflow;
  r.push_all(x);
  r.push_close();
  return r;
}

// All leaves as one flat tuple (a leaf stays a leaf).
TL_HOST_DEVICE constexpr IntTuple flatten(const IntTuple& t) {
  if (t.is_leaf()) return t;
  IntTuple r = IntTuple::raw();
  r.push_open();
  for (int i = 0; i < t.m_num_leaves; ++i) r.push_leaf(t.m_leaf[i]);
  r.push_close();
  r.m_overflow = r.m_overflow || t.m_overflow;
  return r;
}

// Same nesting as t, leaves replaced by vals (used to rebuild a tuple after per-leaf arithmetic).
TL_HOST_DEVICE constexpr IntTuple with_leaves(const IntTuple& t, const int* vals) {
  IntTuple r = t;
  for (int i = 0; i < t.m_num_leaves; ++i) r.m_leaf[i] = vals[i];
  return r;
}

class Layout;
TL_HOST_DEVICE constexpr Layout make_layout_from_lists(const int* shapes, const int* strides, int n);

class Layout {
 public:
  IntTuple m_shape;
  IntTuple m_stride;
  LayoutError m_error = LayoutError::none;
  // One past the last leaf of each top-level mode (cached so that evaluation needs no token scan).
  int m_mode_end[IntTuple::kMaxLeaves]{};

  TL_HOST_DEVICE constexpr void cache_modes() {
    const int r = m_shape.rank();
    for (int i = 0; i < r && i < IntTuple::kMaxLeaves; ++i) {
      int lb = 0, le = 0;
      m_shape.child_leaves(i, lb, le);
      m_mode_end[i] = le;
    }
  }

  // 1:0, CuTe's default layout.
  TL_HOST_DEVICE constexpr Layout() : m_shape(1), m_stride(0) { m_mode_end[0] = 1; }

  TL_HOST_DEVICE constexpr Layout(const IntTuple& shape, const IntTuple& stride) : m_shape(shape), m_stride(stride) {
    if (!shape.ok() || !stride.ok()) {
      set_error(LayoutError::capacity);
    } else if (!shape.same_structure(stride)) {
      set_error(LayoutError::not_congruent);
    } else {
      for (int i = 0; i < shape.m_num_leaves; ++i)
        if (shape.m_leaf[i] <= 0) set_error(LayoutError::bad_shape);
    }
    cache_modes();
  }

  // Compact column-major (CuTe's LayoutLeft): strides are the exclusive prefix products of the leaves.
  TL_HOST_DEVICE explicit constexpr Layout(const IntTuple& shape) : m_shape(shape), m_stride(shape) {
    int s = 1;
    for (int i = 0; i < shape.m_num_leaves; ++i) {
      m_stride.m_leaf[i] = s;
      s *= shape.m_leaf[i];
      if (shape.m_leaf[i] <= 0) set_error(LayoutError::bad_shape);
    }
    if (!shape.ok()) set_error(LayoutError::capacity);
    cache_modes();
  }

  TL_HOST_DEVICE constexpr void set_error(LayoutError e) {
    if (m_error == LayoutError::none) m_error = e;
    detail::raise(e);
  }
  TL_HOST_DEVICE constexpr bool ok() const { return m_error == LayoutError::none; }
  TL_HOST_DEVICE constexpr LayoutError error() const { return m_error; }

  TL_HOST_DEVICE constexpr const IntTuple& shape() const { return m_shape; }
  TL_HOST_DEVICE constexpr const IntTuple& stride() const { return m_stride; }
  TL_HOST_DEVICE constexpr int rank() const { return m_shape.rank(); }
  TL_HOST_DEVICE constexpr int depth() const { return m_shape.depth(); }
  TL_HOST_DEVICE constexpr bool is_leaf() const { return m_shape.is_leaf(); }
  TL_HOST_DEVICE constexpr int num_leaves() const { return m_shape.m_num_leaves; }
  TL_HOST_DEVICE constexpr int size() const { return m_shape.product(); }
  // One past the largest offset (negative strides count by magnitude).
  TL_HOST_DEVICE constexpr int cosize() const {
    int hi = 0;
    for (int i = 0; i < m_shape.m_num_leaves; ++i) hi += (m_shape.m_leaf[i] - 1) * detail::iabs(m_stride.m_leaf[i]);
    return hi + 1;
  }

  TL_HOST_DEVICE constexpr Layout mode(int i) const {
    Layout r(m_shape.child(i), m_stride.child(i));
    if (!ok()) r.m_error = m_error;
    if (i < 0 || i >= rank()) r.set_error(LayoutError::bad_mode);
    return r;
  }

  // Offset of a linear index into the leaves [lb, le): colexicographic, the last leaf unreduced. The loop
  // runs over the fixed capacity so that, for a constexpr layout, the compiler unrolls it and folds every
  // shape and stride into immediates.
  TL_HOST_DEVICE constexpr int eval_leaves(int idx, int lb, int le) const {
    int off = 0;
    for (int k = 0; k < IntTuple::kMaxLeaves; ++k) {
      if (k >= lb && k < le) {
        if (k + 1 < le) {
          const int s = m_shape.m_leaf[k];
          off += (idx % s) * m_stride.m_leaf[k];
          idx /= s;
        } else {
          off += idx * m_stride.m_leaf[k];
        }
      }
    }
    return off;
  }

  // Linear index (the whole domain, colexicographic).
  TL_HOST_DEVICE constexpr int operator()(int idx) const { return eval_leaves(idx, 0, m_shape.m_num_leaves); }

  // One int coordinate per top-level mode (each a linear index into its mode).
  template <class... Is>
  TL_HOST_DEVICE constexpr int operator()(int c0, int c1, Is... cs) const {
    const int c[] = {c0, c1, static_cast<int>(cs)...};
    constexpr int n = 2 + static_cast<int>(sizeof...(Is));
    int off = 0;
    for (int i = 0; i < n; ++i) off += eval_leaves(c[i], i == 0 ? 0 : m_mode_end[i - 1], m_mode_end[i]);
    return off;
  }

  // Hierarchical coordinate: congruent with the shape, or an int where the shape has a tuple.
  TL_HOST_DEVICE constexpr int operator()(const IntTuple& coord) const { return eval_coord(coord, m_shape, m_stride); }

  TL_HOST_DEVICE static constexpr int eval_coord(const IntTuple& c, const IntTuple& shape, const IntTuple& stride) {
    if (c.is_leaf()) {
      Layout sub(shape, stride);
      return sub.eval_leaves(c.value(), 0, shape.m_num_leaves);
    }
    if (shape.is_leaf()) return 0;  // rank mismatch; callers validate with coord_fits
    int off = 0;
    const int r = c.rank();
    for (int i = 0; i < r; ++i) off += eval_coord(c.child(i), shape.child(i), stride.child(i));
    return off;
  }

  TL_HOST_DEVICE constexpr bool operator==(const Layout& o) const {
    return m_shape == o.m_shape && m_stride == o.m_stride;
  }
  TL_HOST_DEVICE constexpr bool operator!=(const Layout& o) const { return !(*this == o); }
};

// True when coord is congruent with shape, or an int wherever shape has a (sub)tuple.
TL_HOST_DEVICE constexpr bool coord_fits(const IntTuple& coord, const IntTuple& shape) {
  if (coord.is_leaf()) return true;
  if (shape.is_leaf() || coord.rank() != shape.rank()) return false;
  for (int i = 0; i < coord.rank(); ++i)
    if (!coord_fits(coord.child(i), shape.child(i))) return false;
  return true;
}

// The hierarchical coordinate (congruent with shape) of a linear index (colexicographic).
TL_HOST_DEVICE constexpr IntTuple idx2crd(int idx, const IntTuple& shape) {
  IntTuple r = shape;
  const int n = shape.m_num_leaves;
  for (int k = 0; k < n; ++k) {
    const int s = shape.m_leaf[k];
    r.m_leaf[k] = k + 1 < n ? idx % s : idx;
    idx /= s;
  }
  return r;
}

// The coordinate in each top-level mode (as that mode's linear index) of a linear index.
TL_HOST_DEVICE constexpr int mode_coord(const IntTuple& shape, int idx, int mode) {
  const int r = shape.rank();
  for (int i = 0; i < mode; ++i) {
    int lb = 0, le = 0;
    shape.child_leaves(i, lb, le);
    int s = 1;
    for (int k = lb; k < le; ++k) s *= shape.m_leaf[k];
    idx /= s;
  }
  if (mode + 1 == r) return idx;
  int lb = 0, le = 0;
  shape.child_leaves(mode, lb, le);
  int s = 1;
  for (int k = lb; k < le; ++k) s *= shape.m_leaf[k];
  return idx % s;
}

template <int I>
TL_HOST_DEVICE constexpr Layout get(const Layout& l) {
  return l.mode(I);
}

// ---- makers -------------------------------------------------------------------------------------------

TL_HOST_DEVICE constexpr Layout make_layout(const IntTuple& shape, const IntTuple& stride) {
  return Layout(shape, stride);
}
TL_HOST_DEVICE constexpr Layout make_layout(const IntTuple& shape) { return Layout(shape); }

// Compact row-major (CuTe's LayoutRight): the last leaf has stride 1.
TL_HOST_DEVICE constexpr Layout make_layout_row_major(const IntTuple& shape) {
  IntTuple stride = shape;
  int s = 1;
  for (int i = shape.m_num_leaves - 1; i >= 0; --i) {
    stride.m_leaf[i] = s;
    s *= shape.m_leaf[i];
  }
  return Layout(shape, stride);
}

// Compact layout whose leaves get strides in increasing `order` (congruent with shape; ties by position).
TL_HOST_DEVICE constexpr Layout make_ordered_layout(const IntTuple& shape, const IntTuple& order) {
  IntTuple stride = shape;
  const int n = shape.m_num_leaves;
  Layout bad(shape);
  if (!flatten(order).same_structure(flatten(shape)) && !(n == 1 && order.m_num_leaves == 1)) {
    bad.set_error(LayoutError::not_congruent);
    return bad;
  }
  int s = 1;
  bool used[IntTuple::kMaxLeaves]{};
  for (int step = 0; step < n; ++step) {
    int best = -1;
    for (int i = 0; i < n; ++i)
      if (!used[i] && (best < 0 || order.m_leaf[i] < order.m_leaf[best])) best = i;
    used[best] = true;
    stride.m_leaf[best] = s;
    s *= shape.m_leaf[best];
  }
  return Layout(shape, stride);
}

// (l0, l1, ...): each layout becomes one top-level mode.
template <class... Ls>
TL_HOST_DEVICE constexpr Layout make_layout(const Layout& l0, const Layout& l1, const Ls&... ls) {
  const Layout* all[] = {&l0, &l1, &ls...};
  IntTuple shape = IntTuple::raw(), stride = IntTuple::raw();
  shape.push_open();
  stride.push_open();
  LayoutError err = LayoutError::none;
  for (const Layout* l : all) {
    shape.push_all(l->m_shape);
    stride.push_all(l->m_stride);
    if (!l->ok() && err == LayoutError::none) err = l->m_error;
  }
  shape.push_close();
  stride.push_close();
  Layout r(shape, stride);
  if (err != LayoutError::none) r.m_error = err;
  return r;
}
// (l0): a rank-1 tuple layout.
TL_HOST_DEVICE constexpr Layout make_layout(const Layout& l0) {
  Layout r(make_int_tuple(l0.m_shape), make_int_tuple(l0.m_stride));
  if (!l0.ok()) r.m_error = l0.m_error;
  return r;
}

// A flat layout from parallel lists: one leaf when n == 1, 1:0 when n == 0.
TL_HOST_DEVICE constexpr Layout make_layout_from_lists(const int* shapes, const int* strides, int n) {
  if (n == 0) return Layout();
  if (n == 1) return Layout(shapes[0], strides[0]);
  IntTuple shape = IntTuple::raw(), stride = IntTuple::raw();
  shape.push_open();
  stride.push_open();
  for (int i = 0; i < n; ++i) {
    shape.push_leaf(shapes[i]);
    stride.push_leaf(strides[i]);
  }
  shape.push_close();
  stride.push_close();
  return Layout(shape, stride);
}

// Appends `mode` as a new top-level mode; a leaf layout l becomes (l, mode).
TL_HOST_DEVICE constexpr Layout append(const Layout& l, const Layout& mode) {
  Layout r(append(l.m_shape, mode.m_shape), append(l.m_stride, mode.m_stride));
  if (!l.ok()) r.m_error = l.m_error;
  if (!mode.ok()) r.m_error = mode.m_error;
  return r;
}

// Pads with 1:0 modes up to rank n (a leaf counts as rank 1 and is wrapped first).
TL_HOST_DEVICE constexpr Layout append_to_rank(const Layout& l, int n) {
  Layout r = l;
  if (r.is_leaf() && n > 1) r = make_layout(l);
  while (r.rank() < n) r = append(r, Layout(1, 0));
  return r;
}

TL_HOST_DEVICE constexpr Layout flatten(const Layout& l) {
  Layout r(flatten(l.m_shape), flatten(l.m_stride));
  if (!l.ok()) r.m_error = l.m_error;
  return r;
}

// Keeps the top-level modes listed (in that order).
template <class... Is>
TL_HOST_DEVICE constexpr Layout select(const Layout& l, int i0, Is... is) {
  const int idx[] = {i0, static_cast<int>(is)...};
  IntTuple shape = IntTuple::raw(), stride = IntTuple::raw();
  shape.push_open();
  stride.push_open();
  for (int i : idx) {
    shape.push_all(l.m_shape.child(i));
    stride.push_all(l.m_stride.child(i));
  }
  shape.push_close();
  stride.push_close();
  Layout r(shape, stride);
  if (!l.ok()) r.m_error = l.m_error;
  return r;
}

namespace detail {
TL_HOST_DEVICE constexpr Layout propagate(Layout r, const Layout& a) {
  if (!a.ok() && r.ok()) r.m_error = a.m_error;
  return r;
}
TL_HOST_DEVICE constexpr Layout propagate(Layout r, const Layout& a, const Layout& b) {
  return propagate(propagate(r, a), b);
}
TL_HOST_DEVICE constexpr Layout error_layout(LayoutError e) {
  Layout r;
  r.set_error(e);
  return r;
}
}  // namespace detail

// ---- coalesce / filter ----------------------------------------------------------------------------

// Flattens and merges adjacent leaves (s0:d0, s1:d1) with d1 == s0*d0; drops size-1 leaves. The same
// function on [0, size), fewest modes. One mode comes back as a leaf, none as 1:0.
TL_HOST_DEVICE constexpr Layout coalesce(const Layout& l) {
  int rs[IntTuple::kMaxLeaves]{}, rd[IntTuple::kMaxLeaves]{};
  int n = 0;
  for (int i = 0; i < l.num_leaves(); ++i) {
    const int s = l.m_shape.m_leaf[i], d = l.m_stride.m_leaf[i];
    if (s == 1) continue;
    if (n > 0 && rd[n - 1] * rs[n - 1] == d) {
      rs[n - 1] *= s;
    } else {
      rs[n] = s;
      rd[n] = d;
      ++n;
    }
  }
  return detail::propagate(make_layout_from_lists(rs, rd, n), l);
}

// Coalesces each top-level mode separately: the rank is kept.
TL_HOST_DEVICE constexpr Layout coalesce_modes(const Layout& l) {
  if (l.is_leaf()) return coalesce(l);
  IntTuple shape = IntTuple::raw(), stride = IntTuple::raw();
  shape.push_open();
  stride.push_open();
  for (int i = 0; i < l.rank(); ++i) {
    const Layout m = coalesce(l.mode(i));
    shape.push_all(m.m_shape);
    stride.push_all(m.m_stride);
  }
  shape.push_close();
  stride.push_close();
  return detail::propagate(Layout(shape, stride), l);
}

// Stride-0 leaves become size 1 (the image is kept, the domain shrinks).
TL_HOST_DEVICE constexpr Layout filter_zeros(const Layout& l) {
  Layout r = l;
  for (int i = 0; i < l.num_leaves(); ++i)
    if (l.m_stride.m_leaf[i] == 0) r.m_shape.m_leaf[i] = 1;
  return r;
}

// coalesce(filter_zeros(l)): the layout's image with no repeated visits through stride-0 modes.
TL_HOST_DEVICE constexpr Layout filter(const Layout& l) { return coalesce(filter_zeros(l)); }

// ---- composition ----------------------------------------------------------------------------------

namespace detail {

// A ∘ (s:d) for a single leaf on the right; `a` is already coalesced.
TL_HOST_DEVICE constexpr Layout compose_leaf(const Layout& a, int s, int d) {
  if (d == 0) return Layout(s, 0);
  if (a.is_leaf()) return Layout(s, d * a.m_stride.m_leaf[0]);
  const int n = a.num_leaves();
  int rs[IntTuple::kMaxLeaves]{}, rd[IntTuple::kMaxLeaves]{};
  int m = 0;
  int rest_shape = s, rest_stride = d;
  for (int k = 0; k + 1 < n; ++k) {
    const int curr_shape = a.m_shape.m_leaf[k], curr_stride = a.m_stride.m_leaf[k];
    if (rest_stride < 0) return error_layout(LayoutError::negative_stride);
    if (curr_shape % rest_stride != 0 && rest_stride % curr_shape != 0)
      return error_layout(LayoutError::not_divisible);
    const int next_shape = shape_div(curr_shape, rest_stride);
    const int next_stride = shape_div(rest_stride, curr_shape);
    if (next_shape == 1 || rest_shape == 1) {
      rest_stride = next_stride;
      continue;
    }
    const int new_shape = imin(next_shape, rest_shape);
    if (rest_shape % new_shape != 0) return error_layout(LayoutError::not_divisible);
    rs[m] = new_shape;
    rd[m] = rest_stride * curr_stride;
    ++m;
    rest_shape /= new_shape;
    rest_stride = next_stride;
  }
  if (rest_shape != 1 || m == 0) {
    rs[m] = rest_shape;
    rd[m] = rest_stride * a.m_stride.m_leaf[n - 1];
    ++m;
  }
  return make_layout_from_lists(rs, rd, m);
}

// Distributes over b's nesting: the result has b's shape structure at the top.
TL_HOST_DEVICE constexpr Layout compose_rec(const Layout& a, const Layout& b) {
  if (b.is_leaf()) return compose_leaf(a, b.m_shape.m_leaf[0], b.m_stride.m_leaf[0]);
  IntTuple shape = IntTuple::raw(), stride = IntTuple::raw();
  shape.push_open();
  stride.push_open();
  LayoutError err = LayoutError::none;
  for (int i = 0; i < b.rank(); ++i) {
    const Layout m = compose_rec(a, b.mode(i));
    if (!m.ok() && err == LayoutError::none) err = m.m_error;
    shape.push_all(m.m_shape);
    stride.push_all(m.m_stride);
  }
  shape.push_close();
  stride.push_close();
  Layout r(shape, stride);
  if (err != LayoutError::none) r.m_error = err;
  return r;
}

}  // namespace detail

// (a ∘ b)(i) == a(b(i)) for i in [0, size(b)), with the shape structure of b.
TL_HOST_DEVICE constexpr Layout composition(const Layout& a, const Layout& b) {
  return detail::propagate(detail::compose_rec(coalesce(a), b), a, b);
}

// ---- complement -----------------------------------------------------------------------------------

// The layout of the offsets in [0, cotarget) that `a` does not reach, ordered: (a, complement(a, M)) is
// injective and its image covers [0, M) (exactly [0, size) when the sizes divide). a must be injective
// on its non-zero-stride modes with strides that divide each other (CuTe's conditions).
TL_HOST_DEVICE constexpr Layout complement(const Layout& a, int cotarget) {
  const Layout f = filter(a);
  int ss[IntTuple::kMaxLeaves]{}, sd[IntTuple::kMaxLeaves]{};
  int n = 0;
  for (int i = 0; i < f.num_leaves(); ++i) {
    const int s = f.m_shape.m_leaf[i], d = f.m_stride.m_leaf[i];
    if (s == 1 || d == 0) continue;
    if (d < 0) return detail::error_layout(LayoutError::negative_stride);
    ss[n] = s;
    sd[n] = d;
    ++n;
  }
  // insertion sort by (stride, shape)
  for (int i = 1; i < n; ++i) {
    for (int j = i; j > 0 && (sd[j] < sd[j - 1] || (sd[j] == sd[j - 1] && ss[j] < ss[j - 1])); --j) {
      const int ts = ss[j], td = sd[j];
      ss[j] = ss[j - 1];
      sd[j] = sd[j - 1];
      ss[j - 1] = ts;
      sd[j - 1] = td;
    }
  }
  int rs[IntTuple::kMaxLeaves]{}, rd[IntTuple::kMaxLeaves]{};
  int m = 0, curr = 1;
  for (int i = 0; i < n; ++i) {
    if (sd[i] % curr != 0) return detail::error_layout(LayoutError::not_divisible);
    if (m >= IntTuple::kMaxLeaves - 1) return detail::error_layout(LayoutError::capacity);
    rs[m] = sd[i] / curr;
    rd[m] = curr;
    ++m;
    curr = ss[i] * sd[i];
  }
  rs[m] = detail::imax(1, detail::ceil_div(cotarget, curr));
  rd[m] = curr;
  ++m;
  return detail::propagate(coalesce(make_layout_from_lists(rs, rd, m)), a);
}

TL_HOST_DEVICE constexpr Layout complement(const Layout& a) { return complement(a, a.cosize()); }

// ---- inverses -------------------------------------------------------------------------------------

// r with a(r(i)) == i for i in [0, size(r)): the largest such compact prefix (CuTe's right_inverse).
TL_HOST_DEVICE constexpr Layout right_inverse(const Layout& a) {
  const Layout f = coalesce(a);
  const int n = f.num_leaves();
  int prefix[IntTuple::kMaxLeaves]{};
  int p = 1;
  for (int k = 0; k < n; ++k) {
    prefix[k] = p;
    p *= f.m_shape.m_leaf[k];
  }
  int rs[IntTuple::kMaxLeaves]{}, rd[IntTuple::kMaxLeaves]{};
  int m = 0, next = 1;
  for (int step = 0; step < n; ++step) {
    int found = -1;
    for (int k = 0; k < n; ++k)
      if (f.m_stride.m_leaf[k] == next && f.m_shape.m_leaf[k] > 1) found = k;
    if (found < 0) break;
    rs[m] = f.m_shape.m_leaf[found];
    rd[m] = prefix[found];
    ++m;
    next = f.m_shape.m_leaf[found] * f.m_stride.m_leaf[found];
  }
  return detail::propagate(coalesce(make_layout_from_lists(rs, rd, m)), a);
}

// r with r(a(i)) == i for i in [0, size(a)), for injective a (CuTe's left_inverse).
TL_HOST_DEVICE constexpr Layout left_inverse(const Layout& a) { return right_inverse(make_layout(a, complement(a))); }

// ---- tilers, divides, products --------------------------------------------------------------------

// A tuple of layouts applied mode by mode (CuTe's Tile). Ints mean n:1.
struct Tiler {
  enum : int { kMaxModes = 4 };  // an enumerator: see IntTuple's
  Layout m_mode[kMaxModes]{};
  int m_rank = 0;

  TL_HOST_DEVICE constexpr int rank() const { return m_rank; }
  TL_HOST_DEVICE constexpr const Layout& mode(int i) const { return m_mode[i]; }
};

namespace detail {
TL_HOST_DEVICE constexpr Layout tile_mode(const Layout& l) { return l; }
TL_HOST_DEVICE constexpr Layout tile_mode(int n) { return Layout(n, 1); }
}  // namespace detail

template <class... Ts>
TL_HOST_DEVICE constexpr Tiler make_tile(const Ts&... ts) {
  static_assert(sizeof...(Ts) <= Tiler::kMaxModes, "make_tile: at most 4 modes");
  Tiler t;
  ((t.m_mode[t.m_rank++] = detail::tile_mode(ts)), ...);
  return t;
}

// a ∘ (b, complement(b, size(a))): mode 0 is the tile, mode 1 the tiles' arrangement.
TL_HOST_DEVICE constexpr Layout logical_divide(const Layout& a, const Layout& b) {
  return composition(a, make_layout(b, complement(b, a.size())));
}

namespace detail {
// Applies op to modes [0, rank(t)) of a with the tiler's modes; the rest of a is kept.
template <class Op>
TL_HOST_DEVICE constexpr Layout by_mode(const Layout& a, const Tiler& t, Op op) {
  if (t.rank() > (a.is_leaf() ? 1 : a.rank())) return error_layout(LayoutError::rank_mismatch);
  if (a.is_leaf()) return op(a, t.mode(0));
  IntTuple shape = IntTuple::raw(), stride = IntTuple::raw();
  shape.push_open();
  stride.push_open();
  LayoutError err = LayoutError::none;
  for (int i = 0; i < a.rank(); ++i) {
    const Layout m = i < t.rank() ? op(a.mode(i), t.mode(i)) : a.mode(i);
    if (!m.ok() && err == LayoutError::none) err = m.m_error;
    shape.push_all(m.m_shape);
    stride.push_all(m.m_stride);
  }
  shape.push_close();
  stride.push_close();
  Layout r(shape, stride);
  if (err != LayoutError::none) r.m_error = err;
  return propagate(r, a);
}

struct DivideOp {
  TL_HOST_DEVICE constexpr Layout operator()(const Layout& a, const Layout& b) const { return logical_divide(a, b); }
};

// ((T0,R0),(T1,R1),rest...) -> ((T0,T1,...), (R0,R1,...,rest...)) or, with flat_rest, ((T...), R..., rest...)
// and with flat_all (T..., R..., rest...).
TL_HOST_DEVICE constexpr Layout unzip(const Layout& l, int tiled, int form) {
  if (l.is_leaf()) return l;
  IntTuple shape = IntTuple::raw(), stride = IntTuple::raw();
  shape.push_open();
  stride.push_open();
  const int r = l.rank();
  // tiles
  if (form != 2) {
    shape.push_open();
    stride.push_open();
  }
  for (int i = 0; i < tiled; ++i) {
    const Layout m = l.mode(i).mode(0);
    shape.push_all(m.m_shape);
    stride.push_all(m.m_stride);
  }
  if (form != 2) {
    shape.push_close();
    stride.push_close();
  }
  // rests
  if (form == 0) {
    shape.push_open();
    stride.push_open();
  }
  for (int i = 0; i < r; ++i) {
    const Layout m = i < tiled ? l.mode(i).mode(1) : l.mode(i);
    shape.push_all(m.m_shape);
    stride.push_all(m.m_stride);
  }
  if (form == 0) {
    shape.push_close();
    stride.push_close();
  }
  shape.push_close();
  stride.push_close();
  return propagate(Layout(shape, stride), l);
}
}  // namespace detail

// Mode i of a divided by tiler mode i: ((T0,R0),(T1,R1),rest...).
TL_HOST_DEVICE constexpr Layout logical_divide(const Layout& a, const Tiler& t) {
  return detail::by_mode(a, t, detail::DivideOp{});
}
// ((T0,T1,...),(R0,R1,...,rest...)): mode 0 indexes inside a tile, mode 1 picks the tile.
TL_HOST_DEVICE constexpr Layout zipped_divide(const Layout& a, const Tiler& t) {
  if (a.is_leaf()) return logical_divide(a, t);
  return detail::unzip(logical_divide(a, t), t.rank(), 0);
}
TL_HOST_DEVICE constexpr Layout zipped_divide(const Layout& a, const Layout& b) { return logical_divide(a, b); }
// ((T0,T1,...),R0,R1,...,rest...)
TL_HOST_DEVICE constexpr Layout tiled_divide(const Layout& a, const Tiler& t) {
  if (a.is_leaf()) return logical_divide(a, t);
  return detail::unzip(logical_divide(a, t), t.rank(), 1);
}
TL_HOST_DEVICE constexpr Layout tiled_divide(const Layout& a, const Layout& b) { return logical_divide(a, b); }
// (T0,T1,...,R0,R1,...,rest...)
TL_HOST_DEVICE constexpr Layout flat_divide(const Layout& a, const Tiler& t) {
  if (a.is_leaf()) return logical_divide(a, t);
  return detail::unzip(logical_divide(a, t), t.rank(), 2);
}

// (a, complement(a, size(a)*cosize(b)) ∘ b): mode 0 is a, mode 1 repeats it as laid out by b.
TL_HOST_DEVICE constexpr Layout logical_product(const Layout& a, const Layout& b) {
  return make_layout(a, composition(complement(a, a.size() * b.cosize()), b));
}

namespace detail {
struct ProductOp {
  TL_HOST_DEVICE constexpr Layout operator()(const Layout& a, const Layout& b) const { return logical_product(a, b); }
};

// Mode i = (x_i, y_i) (blocked) or (y_i, x_i) (raked) of the logical product of rank-padded layouts.
TL_HOST_DEVICE constexpr Layout zip_product(const Layout& a, const Layout& b, bool raked) {
  const int ra = a.is_leaf() ? 1 : a.rank(), rb = b.is_leaf() ? 1 : b.rank();
  const int r = imax(ra, rb);
  const Layout ap = append_to_rank(a, r), bp = append_to_rank(b, r);
  const Layout rest = composition(complement(ap, ap.size() * bp.cosize()), bp);
  if (!rest.ok()) return propagate(rest, a, b);
  if (r == 1) return raked ? make_layout(rest, ap) : make_layout(ap, rest);
  IntTuple shape = IntTuple::raw(), stride = IntTuple::raw();
  shape.push_open();
  stride.push_open();
  for (int i = 0; i < r; ++i) {
    const Layout x = ap.mode(i), y = rest.mode(i);
    const Layout m = raked ? make_layout(y, x) : make_layout(x, y);
    shape.push_all(m.m_shape);
    stride.push_all(m.m_stride);
  }
  shape.push_close();
  stride.push_close();
  return propagate(Layout(shape, stride), a, b);
}
}  // namespace detail

// Mode i: logical_product(a_i, t_i).
TL_HOST_DEVICE constexpr Layout logical_product(const Layout& a, const Tiler& t) {
  return detail::by_mode(a, t, detail::ProductOp{});
}
// ((A0,A1,...),(B0,B1,...,rest...))
TL_HOST_DEVICE constexpr Layout zipped_product(const Layout& a, const Tiler& t) {
  if (a.is_leaf()) return logical_product(a, t);
  return detail::unzip(logical_product(a, t), t.rank(), 0);
}
// ((A0,A1,...),B0,B1,...,rest...)
TL_HOST_DEVICE constexpr Layout tiled_product(const Layout& a, const Tiler& t) {
  if (a.is_leaf()) return logical_product(a, t);
  return detail::unzip(logical_product(a, t), t.rank(), 1);
}
// Mode i = (a_i, b'_i): `a` is one block, b arranges the blocks (the block's elements stay contiguous).
TL_HOST_DEVICE constexpr Layout blocked_product(const Layout& a, const Layout& b) {
  return detail::zip_product(a, b, false);
}
// Mode i = (b'_i, a_i): the elements of `a` are interleaved with stride size(b) ("raked").
TL_HOST_DEVICE constexpr Layout raked_product(const Layout& a, const Layout& b) {
  return detail::zip_product(a, b, true);
}

// ---- parsing --------------------------------------------------------------------------------------

struct LayoutParse {
  Layout layout;
  bool ok = false;
  int position = 0;              // 0-based column of the first offending character
  const char* message = nullptr;  // what was expected there
};

namespace detail {
TL_HOST_DEVICE constexpr bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
TL_HOST_DEVICE constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }

struct TupleParser {
  const char* s;
  int n;
  int pos = 0;
  int err_pos = -1;
  const char* err = nullptr;
  int leaf_pos[IntTuple::kMaxLeaves]{};  // column of each leaf parsed so far
  int num_leaves = 0;

  TL_HOST_DEVICE constexpr void skip() {
    while (pos < n && is_space(s[pos])) ++pos;
  }
  TL_HOST_DEVICE constexpr bool fail(const char* what) {
    if (err == nullptr) {
      err = what;
      err_pos = pos;
    }
    return false;
  }
  TL_HOST_DEVICE constexpr bool parse_int(int& v) {
    skip();
    bool neg = false;
    if (pos < n && (s[pos] == '-' || s[pos] == '+')) {
      neg = s[pos] == '-';
      ++pos;
    }
    if (pos >= n || !is_digit(s[pos])) return fail("expected an integer or '('");
    long long x = 0;
    while (pos < n && is_digit(s[pos])) {
      x = x * 10 + (s[pos] - '0');
      if (x > 1000000000LL) return fail("integer too large");
      ++pos;
    }
    v = static_cast<int>(neg ? -x : x);
    return true;
  }
  TL_HOST_DEVICE constexpr bool parse_tuple(IntTuple& out, int depth) {
    skip();
    if (depth > 8) return fail("nesting too deep");
    if (pos < n && s[pos] == '(') {
      ++pos;
      out.push_open();
      skip();
      if (pos < n && s[pos] == ')') {
        ++pos;
        out.push_close();
        return true;
      }
      for (;;) {
        if (!parse_tuple(out, depth + 1)) return false;
        if (!out.ok()) return fail("too many entries (at most 16 leaves)");
        skip();
        if (pos < n && s[pos] == ',') {
          ++pos;
          continue;
        }
        if (pos < n && s[pos] == ')') {
          ++pos;
          out.push_close();
          return true;
        }
        return fail(pos < n ? "expected ',' or ')' (unbalanced parentheses?)" : "unbalanced parentheses: expected ')'");
      }
    }
    int v = 0;
    skip();
    const int at = pos;
    if (!parse_int(v)) return false;
    if (num_leaves < IntTuple::kMaxLeaves) leaf_pos[num_leaves++] = at;
    out.push_leaf(v);
    if (!out.ok()) return fail("too many entries (at most 16 leaves)");
    return true;
  }
};

// Overflow of a tuple being parsed must not stop constant evaluation: the parser reports it instead.
TL_HOST_DEVICE constexpr int str_len(const char* s) {
  int n = 0;
  while (s[n] != '\0') ++n;
  return n;
}
}  // namespace detail

// Parses "SHAPE[:STRIDE]" (CuTe's print format, e.g. "(8,(4,2)):(4,(1,32))"); without a stride the layout is
// compact column-major. `len` < 0 means NUL-terminated. Errors carry the column and what was expected.
TL_HOST_DEVICE constexpr LayoutParse parse_layout(const char* text, int len = -1) {
  LayoutParse r;
  detail::TupleParser p{text, len < 0 ? detail::str_len(text) : len};
  IntTuple shape = IntTuple::raw();
  if (!p.parse_tuple(shape, 0)) {
    r.position = p.err_pos;
    r.message = p.err;
    return r;
  }
  int shape_leaf_pos[IntTuple::kMaxLeaves]{};
  for (int i = 0; i < p.num_leaves; ++i) shape_leaf_pos[i] = p.leaf_pos[i];
  p.skip();
  int stride_begin = p.pos;
  IntTuple stride = IntTuple::raw();
  bool has_stride = false;
  if (p.pos < p.n && text[p.pos] == ':') {
    ++p.pos;
    p.skip();
    stride_begin = p.pos;
    if (!p.parse_tuple(stride, 0)) {
      r.position = p.err_pos;
      r.message = p.err;
      return r;
    }
    has_stride = true;
    p.skip();
  }
  if (p.pos < p.n) {
    r.position = p.pos;
    r.message = text[p.pos] == ')' ? "unbalanced parentheses: unexpected ')'"
                                    : (has_stride ? "expected end of layout" : "expected ':' or end of layout");
    return r;
  }
  long long size = 1;
  for (int i = 0; i < shape.m_num_leaves; ++i) {
    if (shape.m_leaf[i] <= 0) {
      r.position = shape_leaf_pos[i];
      r.message = "shape entries must be positive";
      return r;
    }
    size *= shape.m_leaf[i];
    if (size > (1LL << 30)) {
      r.position = shape_leaf_pos[i];
      r.message = "layout too large: the size must stay below 2^30";
      return r;
    }
  }
  if (has_stride && !shape.same_structure(stride)) {
    r.position = stride_begin;
    r.message = shape.rank() != stride.rank() ? "rank mismatch: the stride must have as many modes as the shape"
                                              : "nesting mismatch: each stride mode must nest like its shape mode";
    return r;
  }
  r.layout = has_stride ? Layout(shape, stride) : Layout(shape);
  r.ok = true;
  return r;
}

}  // namespace tl
