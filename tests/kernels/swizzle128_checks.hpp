// Test helpers for the Hopper GEMM plans (gemm.wgmma, gemm.fp8): TMA's 128-byte swizzle as the driver documents it,
// and the property every shared-memory tile of theirs must have.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tile/swizzle.hpp"

namespace tl::test {

// CU_TENSOR_MAP_SWIZZLE_128B: in every 1024-byte block, the 16-byte chunk index (address bits 4-6) is XORed with
// the 128-byte row index (bits 7-9). `linear` is where the element would be without the swizzle, from an aligned base.
inline int tma_sw128(int linear) { return linear ^ (((linear >> 7) & 7) << 4); }

// Each tile fills [0, cosize) once, and a 16-byte chunk along the contiguous dimension (what one TMA row segment,
// one st.shared.v2 pair or one wgmma core-matrix row moves) stays 16 contiguous bytes.
inline void expect_bijective_chunks(const SwizzledLayout& l, int rows, int cols, int elem_bytes, bool rows_contiguous) {
  std::vector<int> seen(static_cast<size_t>(l.cosize()), 0);
  ASSERT_EQ(l.cosize(), rows * cols);
  const int chunk = 16 / elem_bytes;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const int off = l(r, c);
      ASSERT_GE(off, 0);
      ASSERT_LT(off, rows * cols);
      ++seen[static_cast<size_t>(off)];
      const int along = rows_contiguous ? r : c;
      if (along % chunk != 0) {
        const int prev = rows_contiguous ? l(r - 1, c) : l(r, c - 1);
        EXPECT_EQ(off, prev + 1) << "(" << r << ", " << c << ") leaves its 16-byte chunk";
      }
    }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), rows * cols);
}

}  // namespace tl::test
