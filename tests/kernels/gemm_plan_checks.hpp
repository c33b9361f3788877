// Test helpers for the Hopper GEMM plans (gemm.wgmma, gemm.fp8): TMA's 128-byte swizzle as the driver documents it,
// the property every shared-memory tile of theirs must have, their shared epilogue, and their regions.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gemm/gemm_wgmma_plan.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "tests/support/scratch_jit.hpp"
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

// The epilogue's staging tile (gemm_store.cuh): the TMA store reads sub-tile q (64 rows x 128 bytes) from q times the
// kernel's sub-tile stride, its rows as SWIZZLE_128B lays them out.
inline void expect_staging_tile_is_tma_store_boxes(const GemmAccStorePlan& p, int block_N) {
  const int cols = p.box_C.inner, sub_stride = p.c_bytes * p.smem_C(0, cols);
  for (int r = 0; r < 64; ++r)
    for (int col = 0; col < block_N; ++col)
      ASSERT_EQ(p.c_bytes * p.smem_C(r, col), (col / cols) * sub_stride + tma_sw128(r * 128 + p.c_bytes * (col % cols)))
          << "C row " << r << " col " << col;
}

// Byte ranges of a plan's shared memory. The swizzled ones (what TMA boxes with SWIZZLE_128B start at) begin
// `align`-aligned; none overlaps another; the first begins at the base; and `bytes`, what the kernel launches with,
// leaves room to align a base that dynamic shared memory gives only 16-byte aligned.
struct Region {
  int begin, end;
};
inline void expect_disjoint_regions(const std::vector<Region>& swizzled, std::vector<Region> others, int align, int bytes) {
  for (const Region& r : swizzled) EXPECT_EQ(r.begin % align, 0) << r.begin;
  others.insert(others.end(), swizzled.begin(), swizzled.end());
  std::sort(others.begin(), others.end(), [](const Region& a, const Region& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < others.size(); ++i) EXPECT_LE(others[i - 1].end, others[i].begin);
  EXPECT_EQ(others.front().begin, 0);
  EXPECT_GE(bytes, others.back().end + align - 16);
}

// Each (problem, config) of `variants` (one change per config field and per problem flag the kernel is specialised
// on) instantiates with its own name expression and its own cache key for sm_90a.
using KeyValues = std::map<std::string, std::string>;
inline void expect_distinct_names_and_keys(const KernelSpec& spec,
                                           const std::vector<std::pair<KeyValues, KeyValues>>& variants) {
  std::set<std::string> names, keys;
  JitOptions opt;
  opt.arch = "sm_90a";
  for (const auto& [problem, config] : variants) {
    auto k = instantiate(spec, problem, config, limits_for_arch("sm_90a"));
    ASSERT_TRUE(k.ok()) << k.status().message();
    names.insert(k->name_expression);
    keys.insert(scratch_jit().cache_key(compile_request(*k, opt)).value());
  }
  EXPECT_EQ(names.size(), variants.size());
  EXPECT_EQ(keys.size(), variants.size());
}

}  // namespace tl::test
