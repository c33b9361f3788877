// Bit-exact numerics shared by host and device: counter-based RNG, fill values, f16/bf16/fp8 rounding.
#pragma once

// Both the device fill kernel (nvcc) and the host (g++) compile this file, so the inputs a kernel sees can be
// regenerated on the host bit for bit to compute the float64 reference, without shipping them over the pipe.
// Everything here is integer arithmetic or single IEEE operations whose result does not depend on contraction.

#include <stdint.h>

#include "tile/config.hpp"
#include "tile/float16.hpp"

#if !TL_DEVICE_CODE
#include <cstring>
#endif

namespace tl::num {

TL_HOST_DEVICE inline uint32_t float_bits(float f) { return detail::f32_bits(f); }
TL_HOST_DEVICE inline float bits_float(uint32_t u) { return detail::bits_f32(u); }

// splitmix64's finaliser: a bijection on 64 bits with full avalanche.
TL_HOST_DEVICE inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Counter-based: element i of stream `seed` is independent of every other element and of the launch shape.
TL_HOST_DEVICE inline uint64_t hash64(uint64_t seed, uint64_t index) {
  return mix64(mix64(seed + 0x9E3779B97F4A7C15ull) + index * 0x9E3779B97F4A7C15ull);
}

// 24 random bits as a double in [0, 1): exact in float and double.
TL_HOST_DEVICE inline double uniform01(uint64_t seed, uint64_t index) {
  return static_cast<double>(hash64(seed, index) >> 40) * (1.0 / 16777216.0);
}

// lo + (hi - lo) * u with explicitly rounded operations, so nvcc cannot contract it differently from the host.
TL_HOST_DEVICE inline double uniform_value(uint64_t seed, uint64_t index, double lo, double hi) {
  double u = uniform01(seed, index);
#if TL_DEVICE_CODE
  return __dadd_rn(lo, __dmul_rn(__dadd_rn(hi, -lo), u));
#else
  volatile double span = hi - lo;  // volatile: keep each operation separately rounded whatever the flags
  volatile double scaled = span * u;
  return lo + scaled;
#endif
}

// Round a float to a small binary float format (EB exponent bits, MB mantissa bits, bias), ties to even (the fp8s).
// `ieee` formats have inf and NaN at the top exponent (f16, e5m2); e4m3 has NaN only at S.1111.111.
// With `saturate`, finite overflow and inf clamp to the largest finite value (PTX cvt .satfinite).
TL_HOST_DEVICE inline uint32_t round_to_small_float(float f, int EB, int MB, int bias, bool ieee, bool saturate) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 31) << (EB + MB);
  uint32_t ax = x & 0x7FFFFFFFu;
  uint32_t top = (1u << EB) - 1;  // all-ones exponent field
  uint32_t max_finite = ieee ? (((top - 1) << MB) | ((1u << MB) - 1)) : ((top << MB) | ((1u << MB) - 2));
  uint32_t nan = ieee ? ((top << MB) | (1u << (MB - 1))) : ((top << MB) | ((1u << MB) - 1));
  uint32_t inf = ieee ? (top << MB) : nan;
  if (ax > 0x7F800000u) return sign | nan;
  if (ax == 0x7F800000u) return sign | (saturate ? max_finite : inf);
  int exp_field = static_cast<int>(ax >> 23);
  uint32_t m = ax & 0x7FFFFFu;
  int e = exp_field - 127;
  if (exp_field == 0) {
    e = -126;  // float subnormal: no implicit bit
  } else {
    m |= 0x800000u;
  }
  int emin = 1 - bias;
  int shift = 23 - MB + (e < emin ? emin - e : 0);
  uint32_t q = 0;
  if (shift <= 25) {
    q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
  }
  uint32_t enc;
  if (e >= emin) {
    // q in [2^MB, 2^(MB+1)]; a carry out of the mantissa correctly bumps the exponent.
    enc = (static_cast<uint32_t>(e + bias) << MB) + q - (1u << MB);
    if (e + bias > static_cast<int>(top)) enc = 0xFFFFFFFFu;  // far out of range
  } else {
    enc = q;  // subnormal; q == 2^MB encodes the smallest normal
  }
  if (enc > max_finite) return sign | (saturate ? max_finite : inf);
  return sign | enc;
}

// Decode a small float's bits (same parameters as above) to float; exact.
TL_HOST_DEVICE inline float small_float_value(uint32_t b, int EB, int MB, int bias, bool ieee) {
  uint32_t top = (1u << EB) - 1;
  bool negative = (b >> (EB + MB)) & 1u;
  uint32_t exp_field = (b >> MB) & top;
  uint32_t m = b & ((1u << MB) - 1);
  float v;
  if (ieee && exp_field == top) {
    v = m ? bits_float(0x7FC00000u) : bits_float(0x7F800000u);
  } else if (!ieee && exp_field == top && m == (1u << MB) - 1) {
    v = bits_float(0x7FC00000u);
  } else {
    int e = exp_field == 0 ? 1 - bias - MB : static_cast<int>(exp_field) - bias - MB;
    uint32_t mant = exp_field == 0 ? m : (m | (1u << MB));
    // 2^e as float bits: every e reached here (>= -24 - 10) is a normal float exponent.
    v = static_cast<float>(mant) * bits_float(static_cast<uint32_t>(e + 127) << 23);
  }
  return negative ? -v : v;
}

// f16 and bf16 are the kernels' own conversions (tile/float16.hpp), so host, fill kernel and NVRTC kernels agree.
TL_HOST_DEVICE inline uint16_t float_to_f16(float f) { return detail::f32_to_f16_bits(f); }
TL_HOST_DEVICE inline float f16_to_float(uint16_t h) { return detail::f16_bits_to_f32(h); }
TL_HOST_DEVICE inline uint16_t float_to_bf16(float f) { return detail::f32_to_bf16_bits(f); }
TL_HOST_DEVICE inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// OCP FP8 as PTX converts it (cvt.rn.satfinite): e4m3 max 448, e5m2 max 57344.
TL_HOST_DEVICE inline uint8_t float_to_e4m3(float f) {
  return static_cast<uint8_t>(round_to_small_float(f, 4, 3, 7, false, true));
}
TL_HOST_DEVICE inline float e4m3_to_float(uint8_t b) { return small_float_value(b, 4, 3, 7, false); }
TL_HOST_DEVICE inline uint8_t float_to_e5m2(float f) {
  return static_cast<uint8_t>(round_to_small_float(f, 5, 2, 15, true, true));
}
TL_HOST_DEVICE inline float e5m2_to_float(uint8_t b) { return small_float_value(b, 5, 2, 15, true); }

// Storage type codes shared by host and device (values of tl::DType).
enum DTypeCode : int { f32 = 0, f16, bf16, f64, i32, u32, i8, u8, e4m3, e5m2, i64, u64 };

// A [rows, cols] matrix stored in tiles of tile_rows x tile_cols (tiles in row-major order, a tile's elements
// row-major, the matrix padded to whole tiles): the matrix index (r cols + c) that storage element `index` holds, or
// -1 for padding. A kernel reading the matrix in tiles (gemm.dequant's permuted weights) gets each tile as one
// contiguous run, while the fill's values stay those of the plain matrix (the reference reads those).
TL_HOST_DEVICE inline int64_t tiled_source(uint64_t index, int64_t rows, int64_t cols, int64_t tile_rows,
                                           int64_t tile_cols) {
  const uint64_t tile_elems = static_cast<uint64_t>(tile_rows * tile_cols);
  const uint64_t tiles_per_row = static_cast<uint64_t>((cols + tile_cols - 1) / tile_cols);
  const uint64_t tile = index / tile_elems, at = index % tile_elems;
  const int64_t r = static_cast<int64_t>(tile / tiles_per_row) * tile_rows + static_cast<int64_t>(at) / tile_cols;
  const int64_t c = static_cast<int64_t>(tile % tiles_per_row) * tile_cols + static_cast<int64_t>(at) % tile_cols;
  return r < rows && c < cols ? r * cols + c : -1;
}

// The bits of element `index` of a uniform fill in [lo, hi), stored as `dtype` (low bytes used).
// Floats: a double rounded to float, then to the storage type. Integers: floor, clamped into [lo, hi - 1].
TL_HOST_DEVICE inline uint64_t fill_bits(int dtype, uint64_t seed, uint64_t index, double lo, double hi) {
  double v = uniform_value(seed, index, lo, hi);
  float f = static_cast<float>(v);
  switch (dtype) {
    case f32: return float_bits(f);
    case f16: return float_to_f16(f);
    case bf16: return float_to_bf16(f);
    case e4m3: return float_to_e4m3(f);
    case e5m2: return float_to_e5m2(f);
    case f64: {
#if TL_DEVICE_CODE
      return static_cast<uint64_t>(__double_as_longlong(v));
#else
      uint64_t u;
      std::memcpy(&u, &v, 8);
      return u;
#endif
    }
    default: break;
  }
  double fl = v >= 0 ? static_cast<double>(static_cast<int64_t>(v)) : -static_cast<double>(static_cast<int64_t>(-v));
  if (fl > v) fl -= 1.0;  // floor for negatives
  if (fl < lo) fl = lo;
  if (fl > hi - 1) fl = hi - 1;
  int64_t iv = static_cast<int64_t>(fl);
  return static_cast<uint64_t>(iv);
}

// Element `index` of a uniform fill, of the plain tensor (tile_rows 0) or of a tiled one (tiled_source; 0 for padding).
TL_HOST_DEVICE inline uint64_t uniform_fill_bits(int dtype, uint64_t seed, uint64_t index, double lo, double hi, int64_t rows,
                                                 int64_t cols, int64_t tile_rows, int64_t tile_cols) {
  const int64_t at = tile_rows > 0 ? tiled_source(index, rows, cols, tile_rows, tile_cols) : static_cast<int64_t>(index);
  return at < 0 ? 0 : fill_bits(dtype, seed, static_cast<uint64_t>(at), lo, hi);
}

// [SECTION] DeepSeek V3.2's FP8 KV cache (FlashMLA's sparse-decode format), as a seeded fill

// A cache row (one token) is 656 bytes: 512 float8_e4m3 "NoPE" values, 4 float32 scales (one per 128 values:
// value = e4m3 * scale), then 64 bf16 "RoPE" values. Its unquantized values are uniform in [lo, hi) times 2^-k per
// 128-value group (k in 0..3 from the group's hash, so scales differ between groups), and one value of each group,
// at a hashed position, is set to +-m 2^-k (m = max(|lo|, |hi|)): the group's amax is then known without reading
// its other 127 values, and every byte is a function of (seed, index). The quantizer is FlashMLA's: scale =
// 2^ceil(log2(max(amax / 448, 1e-4))), value = e4m3(v / scale) rounded to nearest even.
enum : int { kKvFp8RowBytes = 656, kKvFp8Nope = 512, kKvFp8Group = 128, kKvFp8Groups = 4, kKvFp8Rope = 64,
             kKvFp8Width = 576 };

// Group g of row t's hash: bits 0-1 its k, bits 2-8 where its amax sits, bit 9 the amax's sign.
TL_HOST_DEVICE inline uint64_t kv_fp8_group_hash(uint64_t seed, uint64_t t, int g) {
  return hash64(seed ^ 0x6B76F8C0A11E5EEDull, t * kKvFp8Groups + static_cast<uint64_t>(g));
}

// max(|lo|, |hi|): the amax of a group before its 2^-k.
TL_HOST_DEVICE inline double kv_fp8_range_max(double lo, double hi) {
  const double a = lo < 0 ? -lo : lo, b = hi < 0 ? -hi : hi;
  return a > b ? a : b;
}

// The unquantized value c (0..511) of row t's NoPE part.
TL_HOST_DEVICE inline double kv_fp8_value(uint64_t seed, uint64_t t, int c, double lo, double hi) {
  const uint64_t h = kv_fp8_group_hash(seed, t, c / kKvFp8Group);
  const double shrink = 1.0 / static_cast<double>(1u << (h & 3u));  // 2^-k, exact
  if (static_cast<int>((h >> 2) & 127u) == c % kKvFp8Group) {
    const double m = kv_fp8_range_max(lo, hi);
    return ((h >> 9) & 1u) ? -m * shrink : m * shrink;
  }
  return uniform_value(seed, t * kKvFp8Width + static_cast<uint64_t>(c), lo, hi) * shrink;
}

// The float32 scale of group g of row t: 2^ceil(log2(x)) of x = max(amax / 448, 1e-4), from x's bits (no libm, so
// host and device agree).
TL_HOST_DEVICE inline float kv_fp8_scale(uint64_t seed, uint64_t t, int g, double lo, double hi) {
  const uint64_t h = kv_fp8_group_hash(seed, t, g);
  double x = kv_fp8_range_max(lo, hi) / static_cast<double>(1u << (h & 3u)) / 448.0;
  if (x < 1e-4) x = 1e-4;
  uint64_t bits;
#if TL_DEVICE_CODE
  bits = static_cast<uint64_t>(__double_as_longlong(x));
#else
  std::memcpy(&bits, &x, 8);
#endif
  const int e = static_cast<int>((bits >> 52) & 0x7FF) - 1023 + ((bits & 0xFFFFFFFFFFFFFull) != 0 ? 1 : 0);
  return bits_float(static_cast<uint32_t>(e + 127) << 23);
}

// Byte `index` of a cache of such rows (row index / 656, byte index % 656).
TL_HOST_DEVICE inline uint8_t kv_fp8_byte(uint64_t seed, uint64_t index, double lo, double hi) {
  const uint64_t t = index / kKvFp8RowBytes;
  const int p = static_cast<int>(index % kKvFp8RowBytes);
  if (p < kKvFp8Nope) {
    const double s = kv_fp8_scale(seed, t, p / kKvFp8Group, lo, hi);
    return float_to_e4m3(static_cast<float>(kv_fp8_value(seed, t, p, lo, hi) / s));
  }
  if (p < kKvFp8Nope + 4 * kKvFp8Groups) {
    const int j = p - kKvFp8Nope;
    return static_cast<uint8_t>(float_bits(kv_fp8_scale(seed, t, j / 4, lo, hi)) >> (8 * (j % 4)));
  }
  const int j = p - kKvFp8Nope - 4 * kKvFp8Groups;
  const uint16_t b = float_to_bf16(static_cast<float>(
      uniform_value(seed, t * kKvFp8Width + static_cast<uint64_t>(kKvFp8Nope + j / 2), lo, hi)));
  return static_cast<uint8_t>(b >> (8 * (j % 2)));
}

// Value c (0..575) of a row as the cache holds it, dequantized (exact): the reference's view of the cache.
TL_HOST_DEVICE inline double kv_fp8_dequantized(const uint8_t* row, int c) {
  if (c >= kKvFp8Nope) {
    const uint8_t* b = row + kKvFp8Nope + 4 * kKvFp8Groups + 2 * (c - kKvFp8Nope);
    return bf16_to_float(static_cast<uint16_t>(b[0] | (b[1] << 8)));
  }
  const uint8_t* s = row + kKvFp8Nope + 4 * (c / kKvFp8Group);
  const float scale = bits_float(static_cast<uint32_t>(s[0]) | (static_cast<uint32_t>(s[1]) << 8) |
                                 (static_cast<uint32_t>(s[2]) << 16) | (static_cast<uint32_t>(s[3]) << 24));
  return static_cast<double>(e4m3_to_float(row[c])) * static_cast<double>(scale);
}

// [SECTION] packed 4-bit weights (gemm.dequant): two codes per byte, the even k in the low nibble

// int4: signed two's complement, -8 .. 7.
TL_HOST_DEVICE inline int int4_value(uint8_t code) { return static_cast<int>(code & 7u) - static_cast<int>(code & 8u); }
// fp4 e2m1 (OCP MX): sign, 2 exponent bits of bias 1, 1 mantissa bit; exponent 0 is subnormal (0 or 0.5); no inf
// or NaN: +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}.
TL_HOST_DEVICE inline float fp4_e2m1_value(uint8_t code) {
  const unsigned e = (code >> 1) & 3u, m = code & 1u;
  const float v = e == 0 ? 0.5f * static_cast<float>(m) : static_cast<float>(1u << (e - 1)) * (1.0f + 0.5f * static_cast<float>(m));
  return (code & 8u) ? -v : v;
}
// Code k of a packed row.
TL_HOST_DEVICE inline uint8_t packed4_code(const uint8_t* row, uint64_t k) {
  return static_cast<uint8_t>((row[k / 2] >> (4 * (k % 2))) & 0xFu);
}

}  // namespace tl::num
