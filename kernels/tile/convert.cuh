// Device toolkit: packing fp32 pairs into 16-bit pairs (bf16x2 / f16x2) and back, the layout mma operands use; e4m3 to bf16.
#pragma once

#include "tile/config.hpp"

namespace tl {

// Two fp32 values -> packed 16-bit pair, `lo` in the low half (the lower column), rounded to nearest even.
template <bool BF16>
TL_DEVICE_INLINE unsigned pack2(float lo, float hi) {
  unsigned r;
  if constexpr (BF16) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  }
  return r;
}

// The two 16-bit values of a packed pair (pack2's layout: lo in the low half) as floats.
template <bool BF16>
TL_DEVICE_INLINE float2 unpack2(unsigned v) {
  if constexpr (BF16) {
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xFFFF0000u));
  } else {
    float lo, hi;
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\ncvt.f32.f16 %0, l;\ncvt.f32.f16 %1, h;\n}\n" : "=f"(lo), "=f"(hi) : "r"(v));
    return make_float2(lo, hi);
  }
}

// Four e4m3 values (byte i of x is value i) as two bf16 pairs (values 0, 1 in lo, 2, 3 in hi; the lower value in the
// low half), each times 2^-120: e4m3's sign, 4 exponent and 3 mantissa bits are moved into bf16's sign, the low 4
// exponent and the top 3 mantissa bits, which rebiases the exponent from 7 to 127. Exact for every e4m3 value,
// subnormals (they become bf16 subnormals) and zero included; e4m3's NaN becomes a finite value. Four integer
// operations per pair (a byte permute, a shift, two masks) instead of cvt to f16, to f32, to bf16.
TL_DEVICE_INLINE void e4m3x4_to_bf16x4_scaled(unsigned x, unsigned& lo, unsigned& hi) {
  // [b1, 0, b0, 0] and [b3, 0, b2, 0]: each byte at the top of its 16-bit half
  const unsigned w0 = __byte_perm(x, 0u, 0x1404u), w1 = __byte_perm(x, 0u, 0x3424u);
  lo = (w0 & 0x80008000u) | ((w0 >> 4) & 0x07F007F0u);
  hi = (w1 & 0x80008000u) | ((w1 >> 4) & 0x07F007F0u);
}

// a * b for two bf16 pairs, rounded to nearest even (sm_90).
TL_DEVICE_INLINE unsigned mul_bf16x2(unsigned a, unsigned b) {
  unsigned r;
  asm("mul.rn.bf16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

}  // namespace tl
