// fp16 and bf16 storage types with round-to-nearest-even conversions, for the host and inside NVRTC (no CUDA headers).
#pragma once

#include "tile/config.hpp"

namespace tl {

// Plain 16-bit storage: arithmetic happens in float, as the memory-bound and SIMT kernels do anyway.
struct half_t {
  unsigned short bits;
};
struct bfloat16_t {
  unsigned short bits;
};

namespace detail {

TL_HOST_DEVICE TL_FORCEINLINE unsigned f32_bits(float f) {
#if TL_DEVICE_CODE
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(unsigned, f);
#endif
}

TL_HOST_DEVICE TL_FORCEINLINE float bits_f32(unsigned u) {
#if TL_DEVICE_CODE
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}

// IEEE binary32 -> binary16, round to nearest even, with subnormals, infinities and NaN.
TL_HOST_DEVICE inline unsigned short f32_to_f16_bits(float f) {
  unsigned x = f32_bits(f);
  unsigned sign = (x >> 16) & 0x8000u;
  unsigned exp = (x >> 23) & 0xffu;
  unsigned man = x & 0x7fffffu;
  if (exp == 0xffu) return static_cast<unsigned short>(sign | 0x7c00u | (man ? 0x200u : 0u));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<unsigned short>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<unsigned short>(sign);
    man |= 0x800000u;
    int shift = 14 - e;  // 24-bit significand down to the subnormal's 10 bits
    unsigned half = man >> shift;
    unsigned rem = man & ((1u << shift) - 1u);
    unsigned mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<unsigned short>(sign | half);
  }
  unsigned half = (static_cast<unsigned>(e) << 10) | (man >> 13);
  unsigned rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // a carry into the exponent is correct rounding
  return static_cast<unsigned short>(sign | half);
}

TL_HOST_DEVICE inline float f16_bits_to_f32(unsigned short h) {
  unsigned sign = (static_cast<unsigned>(h) & 0x8000u) << 16;
  unsigned exp = (h >> 10) & 0x1fu;
  unsigned man = h & 0x3ffu;
  if (exp == 0x1fu) return bits_f32(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return bits_f32(sign);
    int e = -1;
    do {  // normalise the subnormal
      man <<= 1;
      ++e;
    } while (!(man & 0x400u));
    return bits_f32(sign | (static_cast<unsigned>(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13));
  }
  return bits_f32(sign | ((exp + 127 - 15) << 23) | (man << 13));
}

TL_HOST_DEVICE inline unsigned short f32_to_bf16_bits(float f) {
  unsigned x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<unsigned short>(x >> 16);
}

}  // namespace detail

// Conversions used by kernels: on the device they are single cvt instructions.
TL_HOST_DEVICE TL_FORCEINLINE float to_float(float v) { return v; }
TL_HOST_DEVICE TL_FORCEINLINE float to_float(half_t v) {
#if TL_DEVICE_CODE
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
#else
  return detail::f16_bits_to_f32(v.bits);
#endif
}
TL_HOST_DEVICE TL_FORCEINLINE float to_float(bfloat16_t v) {
  return detail::bits_f32(static_cast<unsigned>(v.bits) << 16);
}

template <class T>
TL_HOST_DEVICE TL_FORCEINLINE T from_float(float v);

template <>
TL_HOST_DEVICE TL_FORCEINLINE float from_float<float>(float v) {
  return v;
}
template <>
TL_HOST_DEVICE TL_FORCEINLINE half_t from_float<half_t>(float v) {
#if TL_DEVICE_CODE
  half_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(v));
  return h;
#else
  return half_t{detail::f32_to_f16_bits(v)};
#endif
}
template <>
TL_HOST_DEVICE TL_FORCEINLINE bfloat16_t from_float<bfloat16_t>(float v) {
#if TL_DEVICE_CODE && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  bfloat16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(v));
  return h;
#else
  return bfloat16_t{detail::f32_to_bf16_bits(v)};
#endif
}

// The element types a kernel's typed config names: a class-type template argument holds values, not types, so the
// config holds an ElemType and the kernel takes elem_t<C.dtype>.
enum class ElemType : unsigned char { f32, f16, bf16 };

template <ElemType E>
struct ElemTypeOf {
  using type = float;
};
template <>
struct ElemTypeOf<ElemType::f16> {
  using type = half_t;
};
template <>
struct ElemTypeOf<ElemType::bf16> {
  using type = bfloat16_t;
};
template <ElemType E>
using elem_t = typename ElemTypeOf<E>::type;

// The enumerator as C++ source, for name expressions.
TL_HOST_DEVICE constexpr const char* elem_type_source(ElemType e) {
  return e == ElemType::f16 ? "tl::ElemType::f16" : (e == ElemType::bf16 ? "tl::ElemType::bf16" : "tl::ElemType::f32");
}

// N elements moved as one aligned access (ld/st.global.v2/v4 when N * sizeof(T) is 8 or 16 bytes).
template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

}  // namespace tl
