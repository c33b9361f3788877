// Hardware atoms from the PTX ISA as fragments: mma.sync, ldmatrix, and wgmma register layouts.
#pragma once

#include "tile/config.hpp"
#include "tile/fragment.hpp"
#include "tile/layout.hpp"

// API overview ---------------------------------------------------------------------------------------
// Each function returns a Fragment: (thread, value) -> (row, col) of the operand tile, thread = %laneid (or
// the thread index in the warpgroup for wgmma), value = the element index i of the PTX ISA's a_i / b_i / c_i
// / d_i (registers low to high, elements low to high inside a register). Tiles are oriented as in the ISA:
// A is M x K, B is K x N, C/D is M x N.
//   mma_m16n8k8_a_f16()   mma_m16n8k8_b_f16()   mma_m16n8k8_c()        (.f16/.bf16 inputs; f32 or f16 C/D)
//   mma_m16n8k16_a_f16()  mma_m16n8k16_b_f16()  mma_m16n8k16_c()
//   mma_m16n8k8_a_tf32()  mma_m16n8k8_b_tf32()
//   mma_m16n8k32_a_8bit() mma_m16n8k32_b_8bit() mma_m16n8k32_c()        (.s8/.u8/.e4m3/.e5m2; s32 or f32 C/D)
//   ldmatrix(num, trans)          what each lane receives (b16 elements), num = 1, 2, 4 8x8 matrices
//   ldmatrix_rows(num)            which lane supplies which row address
//   ldmatrix_sources(f, num)      the row addresses that make ldmatrix .x{num} deliver fragment f
//   wgmma_m64nNk16_d(n)           accumulator D of wgmma.mma_async .m64nNk16 (n = 8..256, multiple of 8)
//   wgmma_m64k16_a_f16()          A from registers (.f16/.bf16) of wgmma.mma_async .m64nNk16
//   wgmma_m64nNk32_d(n)           accumulator D of wgmma.mma_async .m64nNk32 (.e4m3/.e5m2 inputs): m64nNk16's
//
// The layouts follow the ISA's "row = ..., col = ..." formulas with groupID = %laneid >> 2 and
// threadID_in_group = %laneid % 4 (sections "Matrix Fragments for mma.m16n8k*", "ldmatrix", and
// "Register Fragments" of wgmma). Written as TV layouts: thread mode (threadID_in_group, groupID[, warp]).

namespace tl {

namespace detail {
TL_HOST_DEVICE constexpr Layout lane_mode(int tig_stride, int group_stride) {
  return Layout(make_shape(4, 8), make_stride(tig_stride, group_stride));
}
}  // namespace detail

// A 16x8 (f16/bf16): row = groupID + 8*(i>>1), col = 2*threadID_in_group + (i&1).
TL_HOST_DEVICE constexpr Fragment mma_m16n8k8_a_f16() {
  return Fragment(make_layout(detail::lane_mode(32, 1), Layout(make_shape(2, 2), make_stride(16, 8))), 16, 8);
}
// B 8x8 (f16/bf16): row = 2*threadID_in_group + i, col = groupID.
TL_HOST_DEVICE constexpr Fragment mma_m16n8k8_b_f16() {
  return Fragment(make_layout(detail::lane_mode(2, 8), Layout(2, 1)), 8, 8);
}
// C/D 16x8 (f32 or f16): row = groupID + 8*(i>>1), col = 2*threadID_in_group + (i&1).
TL_HOST_DEVICE constexpr Fragment mma_m16n8k8_c() { return mma_m16n8k8_a_f16(); }

// A 16x16 (f16/bf16): row = groupID + 8*((i>>1)&1), col = 2*threadID_in_group + (i&1) + 8*(i>>2).
TL_HOST_DEVICE constexpr Fragment mma_m16n8k16_a_f16() {
  return Fragment(make_layout(detail::lane_mode(32, 1), Layout(make_shape(2, 2, 2), make_stride(16, 8, 128))), 16, 16);
}
// B 16x8 (f16/bf16): row = 2*threadID_in_group + (i&1) + 8*(i>>1), col = groupID.
TL_HOST_DEVICE constexpr Fragment mma_m16n8k16_b_f16() {
  return Fragment(make_layout(detail::lane_mode(2, 16), Layout(make_shape(2, 2), make_stride(1, 8))), 16, 8);
}
// C/D 16x8: as m16n8k8.
TL_HOST_DEVICE constexpr Fragment mma_m16n8k16_c() { return mma_m16n8k8_c(); }

// A 16x8 (tf32): row = groupID + 8*(i&1), col = threadID_in_group + 4*(i>>1).
TL_HOST_DEVICE constexpr Fragment mma_m16n8k8_a_tf32() {
  return Fragment(make_layout(detail::lane_mode(16, 1), Layout(make_shape(2, 2), make_stride(8, 64))), 16, 8);
}
// B 8x8 (tf32): row = threadID_in_group + 4*i, col = groupID.
TL_HOST_DEVICE constexpr Fragment mma_m16n8k8_b_tf32() {
  return Fragment(make_layout(detail::lane_mode(1, 8), Layout(2, 4)), 8, 8);
}

// A 16x32 (8-bit): row = groupID + 8*((i>>2)&1), col = 4*threadID_in_group + (i&3) + 16*(i>>3).
TL_HOST_DEVICE constexpr Fragment mma_m16n8k32_a_8bit() {
  return Fragment(make_layout(detail::lane_mode(64, 1), Layout(make_shape(4, 2, 2), make_stride(16, 8, 256))), 16, 32);
}
// B 32x8 (8-bit): row = 4*threadID_in_group + (i&3) + 16*(i>>2), col = groupID.
TL_HOST_DEVICE constexpr Fragment mma_m16n8k32_b_8bit() {
  return Fragment(make_layout(detail::lane_mode(4, 32), Layout(make_shape(4, 2), make_stride(1, 16))), 32, 8);
}
// C/D 16x8 (s32 or f32): as m16n8k8.
TL_HOST_DEVICE constexpr Fragment mma_m16n8k32_c() { return mma_m16n8k8_c(); }

// ldmatrix .m8n8 .x{num} .b16: register j holds matrix j; lane l receives, in element e of register j,
// row l/4 and column 2*(l%4) + e of matrix j (.trans: row 2*(l%4) + e, column l/4). Matrix j is placed at the
// 8x8 block (j%2, j/2) of the tile, so .x4 covers 16x16 and matches mma.m16n8k16's A fragment register by
// register; .x2 covers 16x8, .x1 8x8. value = 2*j + e.
TL_HOST_DEVICE constexpr Fragment ldmatrix(int num, bool trans) {
  const int rows = num == 1 ? 8 : 16;
  const int cols = num == 4 ? 16 : 8;
  const Layout lanes = trans ? detail::lane_mode(2, rows) : detail::lane_mode(2 * rows, 1);
  const int elem_stride = trans ? 1 : rows;
  Layout values(2, elem_stride);
  if (num == 2) values = Layout(make_shape(2, 2), make_stride(elem_stride, 8));
  if (num == 4) values = Layout(make_shape(2, 2, 2), make_stride(elem_stride, 8, 8 * rows));
  Fragment f(make_layout(lanes, values), rows, cols);
  if (num != 1 && num != 2 && num != 4) f.m_tv.set_error(LayoutError::bad_shape);
  return f;
}

// The row addresses of ldmatrix .x{num}: lane l (l < 8*num) supplies the start of row l%8 of matrix l/8, that
// is row 8*((l/8)%2) + l%8 of the tile and its 16-byte column block l/16. Tile: (rows, num == 4 ? 2 : 1)
// counted in 16-byte blocks along the columns; one value per lane.
TL_HOST_DEVICE constexpr Fragment ldmatrix_rows(int num) {
  const int rows = num == 1 ? 8 : 16;
  Layout lanes(8, 1);
  if (num == 2) lanes = Layout(make_shape(8, 2), make_stride(1, 8));
  if (num == 4) lanes = Layout(make_shape(8, 2, 2), make_stride(1, 8, 16));
  return Fragment(make_layout(lanes, Layout(1, 0)), rows, num == 4 ? 2 : 1);
}

namespace detail {
// Index r + rows*c of a (rows, cols) tile -> index r + rows*(c/8) of its (rows, cols/8) tile of 16-byte blocks.
TL_HOST_DEVICE constexpr int block_index(int x, int rows) { return x % rows + rows * (x / rows / 8); }
}  // namespace detail

// The row addresses an ldmatrix .x{num} needs so that it delivers `received`: a fragment of the shape ldmatrix(num,
// trans) gives (register j = values 2j, 2j+1 = one 8x8 matrix), over the tile as it is stored (rows = shared-memory
// rows, whether or not .trans). Lane l supplies row l%8 of matrix l/8 and register j receives matrix j, so lane l
// points at the origin of register l/8's matrix (what lane 0's value 2*(l/8) holds) plus l%8 rows. Same form as
// ldmatrix_rows: tile (rows, cols/8) in 16-byte column blocks, one value per lane; ldmatrix_sources(ldmatrix(num,
// t), num) is ldmatrix_rows(num). The matrices' origins must step linearly with the matrix index's bits.
TL_HOST_DEVICE constexpr Fragment ldmatrix_sources(const Fragment& received, int num) {
  const int rows = received.rows();
  const int m1 = num > 1 ? detail::block_index(received.index(0, 2), rows) : 0;
  const int m2 = num > 2 ? detail::block_index(received.index(0, 4), rows) : 0;
  Layout lanes(8, 1);
  if (num == 2) lanes = Layout(make_shape(8, 2), make_stride(1, m1));
  if (num == 4) lanes = Layout(make_shape(8, 2, 2), make_stride(1, m1, m2));
  Fragment f(make_layout(lanes, Layout(1, 0)), rows, received.cols() / 8);
  const bool linear = received.index(0, 0) == 0 && (num < 4 || detail::block_index(received.index(0, 6), rows) == m1 + m2);
  if ((num != 1 && num != 2 && num != 4) || received.num_values() != 2 * num || !linear)
    f.m_tv.set_error(LayoutError::bad_shape);
  return f;
}

// wgmma .m64nNk16 accumulator D (f32; f16 D holds the same elements two per register), 128 threads:
// warp w = thread/32 owns rows 16w..16w+15; row = 16w + groupID + 8*((i>>1)&1),
// col = 2*threadID_in_group + (i&1) + 8*(i>>2), i < N/2.
TL_HOST_DEVICE constexpr Fragment wgmma_m64nNk16_d(int n) {
  const Layout threads(make_shape(4, 8, 4), make_stride(128, 1, 16));
  const Layout values = n == 8 ? Layout(make_shape(2, 2), make_stride(64, 8))
                               : Layout(make_shape(2, 2, n / 8), make_stride(64, 8, 512));
  Fragment f(make_layout(threads, values), 64, n);
  if (n < 8 || n > 256 || n % 8 != 0) f.m_tv.set_error(LayoutError::bad_shape);
  return f;
}

// wgmma .m64nNk32 accumulator D (f32; 8-bit inputs): the ISA's D fragment depends on N only, so it is m64nNk16's.
TL_HOST_DEVICE constexpr Fragment wgmma_m64nNk32_d(int n) { return wgmma_m64nNk16_d(n); }

// wgmma A from registers, 64x16 (.f16/.bf16), 128 threads: row = 16w + groupID + 8*((i>>1)&1),
// col = 2*threadID_in_group + (i&1) + 8*(i>>2), i < 8.
TL_HOST_DEVICE constexpr Fragment wgmma_m64k16_a_f16() {
  return Fragment(make_layout(Layout(make_shape(4, 8, 4), make_stride(128, 1, 16)),
                              Layout(make_shape(2, 2, 2), make_stride(64, 8, 512))),
                  64, 16);
}

}  // namespace tl
