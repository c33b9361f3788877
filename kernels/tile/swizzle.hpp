// Swizzle functors (CuTe's Swizzle<B,M,S>), swizzled layouts, and the TMA/wgmma shared-memory swizzle modes.
#pragma once

#include "tile/config.hpp"
#include "tile/layout.hpp"

// API overview ---------------------------------------------------------------------------------------
//   BitSwizzle{B,M,S}   runtime-valued swizzle: offset ^ ((offset & yyy_mask) >> S), where
//                       yyy_mask = (2^B - 1) << (M + S) and zzz_mask = (2^B - 1) << M (S >= 0; a negative S
//                       shifts left, as in CuTe). B bits of "row" select which B bits of "column" flip.
//   Swizzle<B,M,S>      the same with compile-time parameters (derives from BitSwizzle).
//   SwizzledLayout      swizzle ∘ layout: evaluated like a Layout (L(i), L(i, j), L(coord)).
//                       composition(swizzle, layout); composition(swizzled, layout) = swizzle ∘ (layout ∘ b).
//                       period(): L(c + d) = L(c) + L(d) where d moves by a multiple of it;
//                       join_disjoint(L(c), L(d)) = L(c + d) when c's and d's offsets share no bit.
//   SmemSwizzle         none / b32 / b64 / b128: the TMA (CU_TENSOR_MAP_SWIZZLE_*) and wgmma descriptor modes.
//   smem_swizzle(mode, elem_bytes)               the swizzle on element offsets.
//   smem_atom(mode, elem_bytes[, major])         the repeating unit: 8 rows x span bytes (K-major).
//   smem_layout(mode, elem_bytes, rows, cols[, major])  a (rows, cols) tile as TMA writes it.
//
// Facts used (PTX ISA, "Shared memory matrix layout" for wgmma; CUDA driver API tensor-map swizzles):
//   * The 32B/64B/128B modes XOR the 16-byte chunk index inside a span of 32/64/128 bytes with the row
//     index: byte-address bits [4, 4+B) ^= bits [7, 7+B), B = 1, 2, 3. That is Swizzle<B,4,3> on byte
//     addresses; on offsets of E-byte elements it is Swizzle<B, 4 - log2(E), 3> (16-byte chunks stay whole).
//   * The pattern repeats every 8 rows of `span` bytes (256 B, 512 B, 1024 B), so the tile must start at
//     an address aligned to that for offsets and addresses to swizzle alike.
//   * K-major: each row of the tile (one M or N index) stores `span` contiguous bytes of K; a tile wider than
//     the span is stored as column blocks of `span` bytes, each holding all rows (what several TMA boxes of
//     inner size `span` produce; CuTe's tile_to_shape of the Layout_K_SW*_Atom). MN-major transposes the roles.
//   * none: no swizzle; the tile is plain row-major (K-major) or column-major (MN-major), as TMA writes a box
//     with CU_TENSOR_MAP_SWIZZLE_NONE. (wgmma's own no-swizzle "interleave" layout of 8x16-byte core matrices
//     is a different arrangement: build it with the layout algebra when needed.)

namespace tl {

struct BitSwizzle {
  int m_bits = 0;
  int m_base = 0;
  int m_shift = 0;

  constexpr BitSwizzle() = default;
  TL_HOST_DEVICE constexpr BitSwizzle(int bits, int base, int shift) : m_bits(bits), m_base(base), m_shift(shift) {}

  TL_HOST_DEVICE constexpr int bits() const { return m_bits; }
  TL_HOST_DEVICE constexpr int base() const { return m_base; }
  TL_HOST_DEVICE constexpr int shift() const { return m_shift; }
  TL_HOST_DEVICE constexpr bool is_identity() const { return m_bits == 0 || m_shift == 0; }
  // The masks must not overlap (|S| >= B), or the function is no longer a bijection.
  TL_HOST_DEVICE constexpr bool valid() const {
    return m_bits >= 0 && m_base >= 0 && (m_bits == 0 || detail::iabs(m_shift) >= m_bits) &&
           m_bits + m_base + detail::iabs(m_shift) < 31;
  }

  TL_HOST_DEVICE constexpr int bit_mask() const { return (1 << m_bits) - 1; }
  TL_HOST_DEVICE constexpr int yyy_mask() const { return bit_mask() << (m_base + detail::imax(0, m_shift)); }
  TL_HOST_DEVICE constexpr int zzz_mask() const { return bit_mask() << (m_base - detail::imin(0, m_shift)); }

  // What the swizzle XORs into `offset`: (*this)(offset) == offset ^ term(offset). For an offset a + b where a
  // has no bit in zzz_mask(), b none in yyy_mask() and the two share no bit, (*this)(a + b) == a + (b ^ term(a)):
  // a kernel computes term(a) of its run-time part a once and adds each constant part b with one xor.
  TL_HOST_DEVICE constexpr int term(int offset) const {
    const int y = offset & yyy_mask();
    return m_shift >= 0 ? y >> m_shift : y << -m_shift;
  }
  TL_HOST_DEVICE constexpr int operator()(int offset) const { return offset ^ term(offset); }

  TL_HOST_DEVICE constexpr bool operator==(const BitSwizzle& o) const {
    return (is_identity() && o.is_identity()) ||
           (m_bits == o.m_bits && m_base == o.m_base && m_shift == o.m_shift);
  }
};

template <int B, int M, int S>
struct Swizzle : BitSwizzle {
  enum : int { kBits = B, kBase = M, kShift = S };  // enumerators: NVRTC emits static constexpr members as globals
  static_assert(B >= 0 && M >= 0 && (B == 0 || S >= B || -S >= B), "Swizzle<B,M,S>: |S| must be >= B");
  TL_HOST_DEVICE constexpr Swizzle() : BitSwizzle(B, M, S) {}
};

// swizzle ∘ layout: the layout's offsets pass through the swizzle. Evaluates like a Layout.
struct SwizzledLayout {
  BitSwizzle m_swizzle;
  Layout m_layout;

  constexpr SwizzledLayout() = default;
  TL_HOST_DEVICE constexpr SwizzledLayout(const BitSwizzle& s, const Layout& l) : m_swizzle(s), m_layout(l) {}
  // A plain layout is a swizzled layout with the identity swizzle.
  TL_HOST_DEVICE constexpr SwizzledLayout(const Layout& l) : m_layout(l) {}  // NOLINT

  TL_HOST_DEVICE constexpr const BitSwizzle& swizzle() const { return m_swizzle; }
  TL_HOST_DEVICE constexpr const Layout& layout() const { return m_layout; }
  TL_HOST_DEVICE constexpr bool ok() const { return m_layout.ok() && m_swizzle.valid(); }
  TL_HOST_DEVICE constexpr const IntTuple& shape() const { return m_layout.shape(); }
  TL_HOST_DEVICE constexpr int size() const { return m_layout.size(); }
  TL_HOST_DEVICE constexpr int rank() const { return m_layout.rank(); }
  // The swizzle permutes offsets inside aligned blocks of 2^(B+M+|S|), so the codomain rounds up to that.
  TL_HOST_DEVICE constexpr int cosize() const { return detail::ceil_div(m_layout.cosize(), period()) * period(); }

  TL_HOST_DEVICE constexpr int operator()(int idx) const { return m_swizzle(m_layout(idx)); }
  template <class... Is>
  TL_HOST_DEVICE constexpr int operator()(int c0, int c1, Is... cs) const {
    return m_swizzle(m_layout(c0, c1, cs...));
  }
  TL_HOST_DEVICE constexpr int operator()(const IntTuple& coord) const { return m_swizzle(m_layout(coord)); }

  // The swizzle acts inside aligned blocks of period() elements: where the layout moves d by a multiple of it,
  // L(c + d) = L(c) + L(d) (e.g. 8 rows of a 128B-swizzled tile of 128-byte rows). 1 without a swizzle.
  TL_HOST_DEVICE constexpr int period() const {
    return m_swizzle.is_identity() ? 1 : 1 << (m_swizzle.m_bits + m_swizzle.m_base + detail::iabs(m_swizzle.m_shift));
  }

  // L(c + d) from L(c) and L(d), where the layout maps c and d to offsets that share no bit (a lane's place in a
  // swizzle atom and a step of whole 16-byte chunks): the swizzle is linear over XOR, so that is L(c) ^ L(d), and
  // without one the plain sum. A kernel keeps one run-time offset per lane and reaches the rest with constants.
  TL_HOST_DEVICE constexpr int join_disjoint(int lc, int ld) const { return m_swizzle.is_identity() ? lc + ld : lc ^ ld; }
};

TL_HOST_DEVICE constexpr SwizzledLayout composition(const BitSwizzle& s, const Layout& l) { return {s, l}; }
TL_HOST_DEVICE constexpr SwizzledLayout composition(const SwizzledLayout& a, const Layout& b) {
  return {a.m_swizzle, composition(a.m_layout, b)};
}

// ---- TMA / wgmma shared-memory swizzle modes ------------------------------------------------------

enum class SmemSwizzle : unsigned char { none = 0, b32 = 1, b64 = 2, b128 = 3 };
// Which index of the (rows, cols) tile is contiguous in memory: cols (K-major) or rows (MN-major).
enum class Major : unsigned char { K = 0, MN = 1 };

// The span in bytes of one swizzled row (0 for none).
TL_HOST_DEVICE constexpr int swizzle_bytes(SmemSwizzle m) {
  return m == SmemSwizzle::none ? 0 : 16 << static_cast<int>(m);
}

namespace detail {
TL_HOST_DEVICE constexpr int log2_exact(int x) {
  int l = 0;
  while ((1 << l) < x) ++l;
  return (1 << l) == x ? l : -1;
}
}  // namespace detail

// The swizzle on offsets of elem_bytes-sized elements: Swizzle<B, 4 - log2(elem_bytes), 3>, B = log2(span/16).
// Identity for none. elem_bytes must be a power of two <= 16.
TL_HOST_DEVICE constexpr BitSwizzle smem_swizzle(SmemSwizzle m, int elem_bytes) {
  const int b = static_cast<int>(m);
  const int le = detail::log2_exact(elem_bytes);
  if (b == 0) return BitSwizzle();
  if (le < 0 || le > 4) {
    BitSwizzle bad(b, 0, 0);  // invalid: |S| < B
    detail::raise(LayoutError::bad_shape);
    return bad;
  }
  return BitSwizzle(b, 4 - le, 3);
}

// The (rows, cols) tile in shared memory for a swizzle mode. K-major: cols contiguous, rows a multiple of
// 8 and cols of span/elem_bytes. MN-major: rows contiguous, rows a multiple of span/elem_bytes, cols of 8.
TL_HOST_DEVICE constexpr SwizzledLayout smem_layout(SmemSwizzle m, int elem_bytes, int rows, int cols,
                                                    Major major = Major::K) {
  const bool k_major = major == Major::K;
  if (m == SmemSwizzle::none) {
    return SwizzledLayout(k_major ? make_layout_row_major(make_shape(rows, cols)) : make_layout(make_shape(rows, cols)));
  }
  const BitSwizzle sw = smem_swizzle(m, elem_bytes);
  const int w = swizzle_bytes(m) / (elem_bytes > 0 ? elem_bytes : 1);  // elements per swizzled row
  // contiguous extent (k) and strided extent (mn) of the tile
  const int k = k_major ? cols : rows;
  const int mn = k_major ? rows : cols;
  if (elem_bytes <= 0 || w <= 0 || k % w != 0 || mn % 8 != 0) {
    Layout bad;
    bad.set_error(LayoutError::not_divisible);
    return SwizzledLayout(sw, bad);
  }
  // mn index r, k index c: offset r*w + (c % w) + (c / w) * (mn*w)
  const Layout mn_mode(mn, w);
  const Layout k_mode = k == w ? Layout(w, 1) : Layout(make_shape(w, k / w), make_stride(1, mn * w));
  return SwizzledLayout(sw, k_major ? make_layout(mn_mode, k_mode) : make_layout(k_mode, mn_mode));
}

// The repeating unit of a mode: 8 rows of span bytes (K-major), or its transpose (MN-major).
TL_HOST_DEVICE constexpr SwizzledLayout smem_atom(SmemSwizzle m, int elem_bytes, Major major = Major::K) {
  const int w = m == SmemSwizzle::none ? 16 / (elem_bytes > 0 ? elem_bytes : 1) : swizzle_bytes(m) / elem_bytes;
  return major == Major::K ? smem_layout(m, elem_bytes, 8, w, major) : smem_layout(m, elem_bytes, w, 8, major);
}

}  // namespace tl
