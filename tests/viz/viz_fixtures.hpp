// Test fixtures for viz: small layouts built from independent formulas (PTX ISA fragment tables).
#pragma once

#include "viz/layout_grid.hpp"

namespace tl::viz::testing {

// mma.m16n8k* f32 accumulator C (PTX ISA "Matrix Fragments for mma.m16n8k16"): lane = groupID * 4 +
// threadID_in_group, row = groupID (+8 for c2, c3), col = threadID_in_group * 2 + (i & 1).
inline LayoutGrid mma_c_16x8() {
  LayoutGrid g = LayoutGrid::make(16, 8, "mma.m16n8k16.f32.C");
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 4; ++i) {
      int row = lane / 4 + (i >= 2 ? 8 : 0), col = (lane % 4) * 2 + (i & 1);
      g.at(row, col).thread = lane;
      g.at(row, col).value = i;
    }
  }
  return g;
}

// Four warps each owning a 16-row slab of a 64 x n tile, lanes as in mma C, values running along n (the shape
// of a wgmma m64nNk16 accumulator).
inline LayoutGrid four_warp_fragment(int n) {
  LayoutGrid g = LayoutGrid::make(64, n, "four-warp accumulator");
  for (int r = 0; r < 64; ++r) {
    for (int c = 0; c < n; ++c) {
      int warp = r / 16, rr = r % 16;
      g.at(r, c).thread = warp * 32 + (rr % 8) * 4 + (c % 8) / 2;
      g.at(r, c).value = (c % 2) + 2 * (rr / 8) + 4 * (c / 8);
    }
  }
  return g;
}

// A row-major rows x cols shared-memory tile of `elem_bytes` elements, optionally with padding per row.
inline LayoutGrid row_major_smem(int rows, int cols, int elem_bytes, int pad = 0) {
  LayoutGrid g = LayoutGrid::make(rows, cols, "smem row-major");
  g.elem_bytes = elem_bytes;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      g.at(r, c).offset = static_cast<std::int64_t>(r) * (cols + pad) + c;
      g.at(r, c).bank = bank_of(g.at(r, c).offset, elem_bytes);
    }
  }
  return g;
}

}  // namespace tl::viz::testing
