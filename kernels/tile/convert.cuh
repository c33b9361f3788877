// Device toolkit: packing fp32 pairs into 16-bit pairs (bf16x2 / f16x2) and back, the layout mma operands use.
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

}  // namespace tl
