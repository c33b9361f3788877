// Compile-time tables: a plan's layouts and fragments evaluated at the constant coordinates of a kernel's unrolled loop.
#pragma once

#include "tile/config.hpp"

// A layout evaluated inside an unrolled loop folds to an immediate, but in a large kernel each such evaluation costs
// the device compiler tens of milliseconds (the layout's evaluation loop is unrolled and folded again at every site;
// mla.decode compiled 7x slower). A table built in a constant expression costs the front end microseconds and each
// entry read at an unrolled index is one constant: kernels write
//   static constexpr auto steps = tabulate<36>([](int i) { return 2 * P.tile(0, 16 * i); });
//   #pragma unroll
//   for (int i = 0; i < 36; ++i) ... steps[i] ...
// (P a `static constexpr` plan: a plan that is a plain constexpr local lives in a stack copy, and folding its loads
// costs the compiler again.)

namespace tl {

template <class T, int N>
struct Table {
  T m_v[N];
  TL_HOST_DEVICE constexpr const T& operator[](int i) const { return m_v[i]; }
  TL_HOST_DEVICE static constexpr int size() { return N; }
};

// {f(0), f(1), ..., f(N - 1)}.
template <int N, class F>
TL_HOST_DEVICE constexpr auto tabulate(F f) -> Table<decltype(f(0)), N> {
  Table<decltype(f(0)), N> t{};
  for (int i = 0; i < N; ++i) t.m_v[i] = f(i);
  return t;
}

}  // namespace tl
