// Fragments: which thread holds which element of a tile, (thread, value) <-> (row, col), with TileLang-style repeat.
#pragma once

#include "tile/config.hpp"
#include "tile/layout.hpp"

// API overview ---------------------------------------------------------------------------------------
//   Fragment(tv, rows, cols)  tv: a rank-2 Layout (thread mode, value mode) -> index of the element in the
//                             (rows, cols) tile, counted column-major (row + col*rows), as CuTe's TV layouts.
//     f(thread, value)        -> TileCoord{row, col}
//     f.linear()              row and col are each a layout of (thread, value): then f(t, v) == f(t, 0) + f(0, v)
//     f.owner(row, col)       -> ThreadValue{thread, value}: the inverse (for replicated data the lowest
//                                thread), also thread_of / value_of
//     num_threads, num_values, rows, cols, replication (threads holding each element), covers_tile
//   repeat(f, rep_rows, rep_cols, on_thread[, rows_first])
//                             tiles rep_rows x rep_cols copies of the tile; the new copies go to new threads
//                             (thread t of copy k is t + k*num_threads) or to new values of the same threads
//                             (value v of copy k is v + k*num_values). Copies are numbered down the rows first
//                             unless rows_first is false.
//   replicate(f, n)           n times the threads, thread t + k*num_threads holding what t holds.
//   transpose(f)              the same ownership in the transposed (cols, rows) tile: f(t, v) = (r, c) -> (c, r).
//   value_offsets<V>(f)       one thread's values as offsets from its value 0 and by row, for fragments in which
//                             every thread holds the same pattern shifted (shifted_alike(f)): what a kernel indexes
//                             its accumulator registers with at compile time.

namespace tl {

struct TileCoord {
  int row = 0;
  int col = 0;
  TL_HOST_DEVICE constexpr bool operator==(const TileCoord& o) const { return row == o.row && col == o.col; }
  TL_HOST_DEVICE constexpr TileCoord operator+(const TileCoord& o) const { return {row + o.row, col + o.col}; }
};

struct ThreadValue {
  int thread = 0;
  int value = 0;
  TL_HOST_DEVICE constexpr bool operator==(const ThreadValue& o) const { return thread == o.thread && value == o.value; }
};

class Fragment {
 public:
  Layout m_tv;
  Layout m_inverse;  // tile index -> thread + value*num_threads
  // When linear(): (thread, value) -> row and -> col, the TV layout with each stride split into its row and column
  // steps.
  Layout m_row_of;
  Layout m_col_of;
  bool m_linear = false;
  int m_rows = 1;
  int m_cols = 1;
  int m_threads = 1;
  int m_values = 1;

  constexpr Fragment() = default;
  TL_HOST_DEVICE constexpr Fragment(const Layout& tv, int rows, int cols) : m_tv(tv), m_rows(rows), m_cols(cols) {
    if (tv.is_leaf() || tv.rank() != 2) {
      m_tv.set_error(LayoutError::rank_mismatch);
      return;
    }
    m_threads = tv.mode(0).size();
    m_values = tv.mode(1).size();
    m_inverse = right_inverse(tv);
    // Linear when no leaf steps backwards and the row steps of all leaves together stay inside one column: then the
    // tile index never carries from row into column, and row and column add up leaf by leaf.
    int row_span = 0;
    bool forward = true;
    for (int i = 0; i < tv.num_leaves(); ++i) {
      forward = forward && tv.stride().leaf(i) >= 0;
      row_span += (tv.shape().leaf(i) - 1) * (tv.stride().leaf(i) % rows);
    }
    if (forward && row_span < rows) {
      int row_step[IntTuple::kMaxLeaves]{}, col_step[IntTuple::kMaxLeaves]{};
      for (int i = 0; i < tv.num_leaves(); ++i) {
        row_step[i] = tv.stride().leaf(i) % rows;
        col_step[i] = tv.stride().leaf(i) / rows;
      }
      m_row_of = Layout(tv.shape(), with_leaves(tv.stride(), row_step));
      m_col_of = Layout(tv.shape(), with_leaves(tv.stride(), col_step));
      m_linear = true;
    }
  }

  TL_HOST_DEVICE constexpr bool ok() const { return m_tv.ok() && m_inverse.ok() && m_rows > 0 && m_cols > 0; }
  TL_HOST_DEVICE constexpr const Layout& tv() const { return m_tv; }
  TL_HOST_DEVICE constexpr const Layout& inverse() const { return m_inverse; }
  TL_HOST_DEVICE constexpr int rows() const { return m_rows; }
  TL_HOST_DEVICE constexpr int cols() const { return m_cols; }
  TL_HOST_DEVICE constexpr int num_threads() const { return m_threads; }
  TL_HOST_DEVICE constexpr int num_values() const { return m_values; }

  // How many threads hold each element (the product of the stride-0 thread leaves).
  TL_HOST_DEVICE constexpr int replication() const {
    const Layout t = m_tv.mode(0);
    int r = 1;
    for (int i = 0; i < t.num_leaves(); ++i)
      if (t.stride().leaf(i) == 0) r *= t.shape().leaf(i);
    return r;
  }
  // Every element of the tile has an owner, and (replication aside) only one.
  TL_HOST_DEVICE constexpr bool covers_tile() const {
    return ok() && m_inverse.size() == m_rows * m_cols && m_threads * m_values == m_rows * m_cols * replication();
  }

  // Row and column are each a layout of (thread, value): f(t, v) == f(t, 0) + f(0, v), which is how a kernel
  // evaluates a fragment it indexes in an unrolled loop: the thread's coordinate once, each value's as a constant
  // (tile/table.hpp).
  TL_HOST_DEVICE constexpr bool linear() const { return m_linear; }

  TL_HOST_DEVICE constexpr int index(int thread, int value) const { return m_tv(thread, value); }
  TL_HOST_DEVICE constexpr TileCoord operator()(int thread, int value) const {
    // Linear: two layouts, no division of the tile index (a kernel's run-time thread index stays shifts and masks).
    if (m_linear) return {m_row_of(thread, value), m_col_of(thread, value)};
    const int x = m_tv(thread, value);
    return {x % m_rows, x / m_rows};
  }
  TL_HOST_DEVICE constexpr ThreadValue owner(int row, int col) const {
    const int d = m_inverse(row + col * m_rows);
    return {d % m_threads, d / m_threads};
  }
  TL_HOST_DEVICE constexpr int thread_of(int row, int col) const { return owner(row, col).thread; }
  TL_HOST_DEVICE constexpr int value_of(int row, int col) const { return owner(row, col).value; }
};

TL_HOST_DEVICE constexpr Fragment make_fragment(const Layout& tv, int rows, int cols) { return Fragment(tv, rows, cols); }

TL_HOST_DEVICE constexpr Fragment repeat(const Fragment& f, int rep_rows, int rep_cols, bool on_thread,
                                         bool rows_first = true) {
  const int rows = f.rows() * rep_rows, cols = f.cols() * rep_cols;
  // small-tile index -> big-tile index (both column-major)
  const Layout embed(make_shape(f.rows(), f.cols()), make_stride(1, rows));
  const Layout base = composition(embed, f.tv());
  const Layout copies = rows_first ? Layout(make_shape(rep_rows, rep_cols), make_stride(f.rows(), f.cols() * rows))
                                   : Layout(make_shape(rep_cols, rep_rows), make_stride(f.cols() * rows, f.rows()));
  const Layout thr = on_thread ? make_layout(base.mode(0), copies) : base.mode(0);
  const Layout val = on_thread ? base.mode(1) : make_layout(base.mode(1), copies);
  return Fragment(make_layout(thr, val), rows, cols);
}

TL_HOST_DEVICE constexpr Fragment replicate(const Fragment& f, int n) {
  return Fragment(make_layout(make_layout(f.tv().mode(0), Layout(n, 0)), f.tv().mode(1)), f.rows(), f.cols());
}

// An operand stored the other way round (a K-major B read as N x K rows) holds the same elements in the transposed
// tile: the column-major index r + c*rows of the (rows, cols) tile becomes c + r*cols.
TL_HOST_DEVICE constexpr Fragment transpose(const Fragment& f) {
  const Layout to_transposed(make_shape(f.rows(), f.cols()), make_stride(f.cols(), 1));
  return Fragment(composition(to_transposed, f.tv()), f.cols(), f.rows());
}

// Every thread's values are thread 0's shifted by the thread's own offset: f(t, v) = f(t, 0) + f(0, v) - f(0, 0).
// True of the mma.sync and wgmma accumulators and register A operands (the thread picks a row group and a column
// pair, the value the 8-row half and the column block), so a kernel adds a compile-time offset per value to one
// run-time coordinate per thread.
TL_HOST_DEVICE constexpr bool shifted_alike(const Fragment& f) {
  const TileCoord o = f(0, 0);
  for (int t = 0; t < f.num_threads(); ++t) {
    const TileCoord b = f(t, 0);
    for (int v = 0; v < f.num_values(); ++v) {
      const TileCoord x = f(t, v), d = f(0, v);
      if (x.row != b.row + d.row - o.row || x.col != b.col + d.col - o.col) return false;
    }
  }
  return true;
}

// One thread's values of a shifted_alike fragment (capacity V values, at most 2 rows): value v sits at at[v] from
// value 0, and row_value[h][k] is the value in the thread's h-th row (in order of first appearance) and k-th column
// from the left. A plan holds it so that kernels index registers by tables, not by re-deriving the atom's formulas.
template <int V>
struct ValueOffsets {
  static constexpr int kMaxRows = 2;
  TileCoord at[V]{};
  int row_value[kMaxRows][V]{};
  int num_values = 0;
  int num_rows = 0;
  int per_row = 0;  // values in each row
  bool ok = false;  // fits the capacity, at most kMaxRows rows, the same count in each
};

template <int V>
TL_HOST_DEVICE constexpr ValueOffsets<V> value_offsets(const Fragment& f) {
  ValueOffsets<V> o;
  o.num_values = f.num_values();
  if (o.num_values > V) return o;
  const TileCoord base = f(0, 0);
  int row_of[ValueOffsets<V>::kMaxRows]{};
  int count[ValueOffsets<V>::kMaxRows]{};
  for (int v = 0; v < o.num_values; ++v) {
    const TileCoord x = f(0, v);
    o.at[v] = {x.row - base.row, x.col - base.col};
    int h = 0;
    while (h < o.num_rows && row_of[h] != o.at[v].row) ++h;
    if (h == o.num_rows) {
      if (h == ValueOffsets<V>::kMaxRows) return o;
      row_of[o.num_rows++] = o.at[v].row;
    }
    // insert by column
    int k = count[h]++;
    while (k > 0 && o.at[o.row_value[h][k - 1]].col > o.at[v].col) {
      o.row_value[h][k] = o.row_value[h][k - 1];
      --k;
    }
    o.row_value[h][k] = v;
  }
  o.per_row = count[0];
  o.ok = o.num_rows > 0 && o.per_row * o.num_rows == o.num_values && (o.num_rows == 1 || count[1] == o.per_row);
  return o;
}

}  // namespace tl
