// Random layout generators for the property tests of the layout algebra.
#pragma once

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "tile/layout.hpp"

namespace tl::test {

// Random nesting over a flat list of (shape, stride) leaves: 1-3 top-level modes, some of them tuples.
inline Layout nest_randomly(const std::vector<int>& shapes, const std::vector<int>& strides, std::mt19937& rng) {
  const int n = static_cast<int>(shapes.size());
  if (n == 1 && rng() % 2 == 0) return Layout(shapes[0], strides[0]);
  IntTuple sh = IntTuple::raw(), st = IntTuple::raw();
  sh.push_open();
  st.push_open();
  int i = 0;
  while (i < n) {
    const int take = std::min(n - i, 1 + static_cast<int>(rng() % 3));
    const bool group = take > 1 || rng() % 4 == 0;
    if (group) {
      sh.push_open();
      st.push_open();
    }
    for (int k = 0; k < take; ++k, ++i) {
      sh.push_leaf(shapes[i]);
      st.push_leaf(strides[i]);
    }
    if (group) {
      sh.push_close();
      st.push_close();
    }
  }
  sh.push_close();
  st.push_close();
  return Layout(sh, st);
}

inline int pick(std::mt19937& rng, std::initializer_list<int> xs) {
  return *(xs.begin() + rng() % xs.size());
}

// Any layout: shapes in {1,2,3,4,8}, strides in [0, 40) (not necessarily injective).
inline Layout random_layout(std::mt19937& rng, int max_leaves = 5) {
  const int n = 1 + static_cast<int>(rng() % max_leaves);
  std::vector<int> sh(n), st(n);
  for (int i = 0; i < n; ++i) {
    sh[i] = pick(rng, {1, 2, 3, 4, 8});
    st[i] = static_cast<int>(rng() % 40);
  }
  return nest_randomly(sh, st, rng);
}

// An injective layout whose sorted strides satisfy CuTe's complement condition: the leaves are visited in
// a random order and each next stride is the previous extent times a gap in {1,2,3}.
inline Layout random_injective(std::mt19937& rng, bool pow2 = false, int max_leaves = 4, bool gaps = true) {
  const int n = 1 + static_cast<int>(rng() % max_leaves);
  std::vector<int> sh(n), st(n), order(n);
  for (int i = 0; i < n; ++i) {
    sh[i] = pow2 ? pick(rng, {2, 4, 8}) : pick(rng, {2, 3, 4, 5, 8});
    order[i] = i;
  }
  std::shuffle(order.begin(), order.end(), rng);
  int extent = 1;
  for (int k = 0; k < n; ++k) {
    const int gap = gaps ? (pow2 ? pick(rng, {1, 1, 2, 4}) : pick(rng, {1, 1, 2, 3})) : 1;
    st[order[k]] = extent * gap;
    extent = st[order[k]] * sh[order[k]];
  }
  return nest_randomly(sh, st, rng);
}

// A bijection onto [0, size): a compact layout with its leaves in a random order.
inline Layout random_bijection(std::mt19937& rng, bool pow2 = false, int max_leaves = 4) {
  return random_injective(rng, pow2, max_leaves, false);
}

inline std::vector<int> image(const Layout& l) {
  std::vector<int> v(l.size());
  for (int i = 0; i < l.size(); ++i) v[i] = l(i);
  return v;
}

inline bool is_injective(const Layout& l) {
  const std::vector<int> v = image(l);
  return std::set<int>(v.begin(), v.end()).size() == v.size();
}

// True when l maps [0, size) one-to-one onto [0, size).
inline bool is_bijection_onto_range(const Layout& l) {
  std::vector<int> v = image(l);
  std::sort(v.begin(), v.end());
  for (int i = 0; i < static_cast<int>(v.size()); ++i)
    if (v[i] != i) return false;
  return true;
}

}  // namespace tl::test
