// 4-bit weights to bf16 pairs by byte permutes and bit masks (int4 and fp4 e2m1), host and device alike.
#pragma once


#include "tile/config.hpp"
#include "tile/float16.hpp"

namespace tl::dequant4 {

// Packed 4-bit codes: two per byte, the even k in the low nibble, the odd k in the high one.
//   int4: signed two's complement, -8 .. 7.
//   fp4:  OCP MX e2m1 (sign, 2 exponent bits of bias 1, 1 mantissa bit): +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}.
enum Kind : int { kInt4 = 0, kFp4 = 1 };

// prmt.b32 (default mode): byte i of the result is byte (sel >> 4i) & 7 of the 8 bytes {x, y}. The host copy lets
// the CPU tests run the exact instruction sequence the kernel runs.
TL_HOST_DEVICE inline unsigned byte_perm(unsigned x, unsigned y, unsigned sel) {
#if TL_DEVICE_CODE
  return __byte_perm(x, y, sel);
#else
  const unsigned long long bytes = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((bytes >> (8 * ((sel >> (4 * i)) & 7))) & 0xFF) << (8 * i);
  return r;
#endif
}

namespace detail {
#if !TL_DEVICE_CODE
inline float lo_f(unsigned v) { return tl::detail::bits_f32(v << 16); }
inline float hi_f(unsigned v) { return tl::detail::bits_f32(v & 0xFFFF0000u); }
inline unsigned pack(float lo, float hi) {
  return tl::detail::f32_to_bf16_bits(lo) | (static_cast<unsigned>(tl::detail::f32_to_bf16_bits(hi)) << 16);
}
#endif
}  // namespace detail

// a - b and a * b for two bf16 pairs, rounded to nearest even; subnormals kept (sm_90's bf16x2 arithmetic keeps
// them, and a float holds every bf16 value exactly, so the host's float arithmetic rounds the same).
TL_HOST_DEVICE inline unsigned sub_bf16x2(unsigned a, unsigned b) {
#if TL_DEVICE_CODE
  unsigned r;
  asm("sub.rn.bf16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  return r;
#else
  return detail::pack(detail::lo_f(a) - detail::lo_f(b), detail::hi_f(a) - detail::hi_f(b));
#endif
}
TL_HOST_DEVICE inline unsigned mul_bf16x2(unsigned a, unsigned b) {
#if TL_DEVICE_CODE
  unsigned r;
  asm("mul.rn.bf16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  return r;
#else
  return detail::pack(detail::lo_f(a) * detail::lo_f(b), detail::hi_f(a) * detail::hi_f(b));
#endif
}

// The selector that takes byte `q` (0..3) of a word into the low half and the same byte of the word shifted right
// by 4 into the high half: spread(w, sel) then holds the byte's low nibble in bits 0..3 and its high nibble in
// bits 16..19 (the other bits are left over and masked off by the conversions).
TL_HOST_DEVICE constexpr unsigned spread_selector(int q) { return static_cast<unsigned>(q) | ((4u + q) << 8); }
TL_HOST_DEVICE inline unsigned spread(unsigned word, unsigned sel) { return byte_perm(word, word >> 4, sel); }

// A spread byte's two codes as a bf16 pair, unscaled (low half: the even k).
// int4: (code ^ 8) in bf16's low mantissa bits under the exponent of 128 is the bf16 value 136 + code; subtracting
// 136 (exact: small integers) leaves the code.
// fp4: e2m1's exponent and mantissa bits go to bf16's low two exponent bits and top mantissa bit and its sign to
// bf16's sign, which is the value times 2^-126 (e = 0, the 0.5 subnormal, lands on bf16's subnormal 2^-127, also
// exact); times 2^126 gives the value.
enum : unsigned { kPow2_126 = 0x7E807E80u };  // bf16 2^126 in both halves (an enum: no device global under NVRTC)
template <int KIND>
TL_HOST_DEVICE inline unsigned codes_to_bf16x2(unsigned s) {
  if constexpr (KIND == kInt4) {
    constexpr unsigned kMagic = 0x43084308u;  // bf16 136 in both halves
    return sub_bf16x2((s & 0x000F000Fu) ^ kMagic, kMagic);
  } else {
    const unsigned bits = ((s << 6) & 0x01C001C0u) | ((s << 12) & 0x80008000u);
    return mul_bf16x2(bits, kPow2_126);
  }
}

// fp4 in the wgmma path (gemm.dequant), in fewer instructions than spread + codes_to_bf16x2 (six a pair with the scale
// against eight; ptxas turns the shifts above into two IMAD.SHL and the 2^126 into a second HMUL2):
// spread_up takes byte q of `word << 4` into the low half and byte q of `word` into the high half, so the byte's low
// nibble sits in bits 4..7 and its high nibble in bits 20..23 (the word shifted left: an IMAD.SHL, not an ALU shift).
// fp4_bits keeps those two nibbles and multiplies by 2^2 + 2^8: the copy shifted by 2 puts the exponent and mantissa
// bits at bf16's 6..8, the copy shifted by 8 puts the sign at bit 15 (and 22..24, 31 for the high nibble); the two
// copies share no bit, so the product has no carries and one mask leaves value * 2^-126, as codes_to_bf16x2's bits.
TL_HOST_DEVICE inline unsigned spread_up(unsigned word, unsigned sel) { return byte_perm(word << 4, word, sel); }
TL_HOST_DEVICE inline unsigned fp4_bits(unsigned s) { return ((s & 0x00F000F0u) * 0x104u) & 0x81C081C0u; }

// With bf16 scales the multiply by 2^126 goes into the scale, once per scale instead of once per pair: the pair
// times scale * 2^(126 - kFp4ScaleShift) is bf16(value * scale) * 2^-kFp4ScaleShift (one rounding of the same
// exact product, as long as neither the folded scale overflows nor the product leaves bf16's normal range: exact for
// |scale| in [2^-93, 2^34)), and the kernel multiplies its f32 sums by 2^kFp4ScaleShift before it stores them.
enum : int { kFp4ScaleShift = 32 };
enum : unsigned { kFp4ScaleFold = 0x6E806E80u };  // bf16 2^94 = 2^(126 - kFp4ScaleShift) in both halves
TL_HOST_DEVICE inline unsigned fp4_fold_scale(unsigned scale_pair) { return mul_bf16x2(scale_pair, kFp4ScaleFold); }

}  // namespace tl::dequant4
