// Measurement on the host: narrow-float rounding, seeded fills, poison, sampling, comparison and statistics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/core/check.hpp"
#include "runtime/core/numeric.hpp"

namespace tl {
namespace {

TEST(Numeric, F16KnownValues) {
  EXPECT_EQ(num::float_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(num::float_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(num::float_to_f16(65504.0f), 0x7BFF);  // largest finite half
  EXPECT_EQ(num::float_to_f16(65519.0f), 0x7BFF);  // below the midpoint to 2^16
  EXPECT_EQ(num::float_to_f16(65520.0f), 0x7C00);  // the midpoint rounds to even: infinity
  EXPECT_EQ(num::float_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(num::float_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and 2^-24: even is 0
  EXPECT_EQ(num::float_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(num::float_to_f16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(num::float_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie: stays on even 1.0
  EXPECT_EQ(num::float_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie: goes up to even
  EXPECT_EQ(num::float_to_f16(INFINITY), 0x7C00);
  EXPECT_TRUE(std::isnan(num::f16_to_float(num::float_to_f16(NAN))));
  EXPECT_EQ(num::f16_to_float(0x3555), 0.333251953125f);
}

TEST(Numeric, NarrowFormatsRoundTripEveryPattern) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    float v = num::f16_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(v)) continue;
    ASSERT_EQ(num::float_to_f16(v), h) << std::hex << h;
    float b = num::bf16_to_float(static_cast<std::uint16_t>(h));
    if (!std::isnan(b)) {
      ASSERT_EQ(num::float_to_bf16(b), h) << std::hex << h;
    }
  }
  for (std::uint32_t e = 0; e < 0x100; ++e) {
    float v = num::e4m3_to_float(static_cast<std::uint8_t>(e));
    if (!std::isnan(v)) {
      ASSERT_EQ(num::float_to_e4m3(v), e) << std::hex << e;
    }
    float w = num::e5m2_to_float(static_cast<std::uint8_t>(e));
    if (!std::isnan(w) && !std::isinf(w)) {
      ASSERT_EQ(num::float_to_e5m2(w), e) << std::hex << e;
    }
  }
}

TEST(Numeric, Fp8KnownValues) {
  EXPECT_EQ(num::float_to_e4m3(1.0f), 0x38);
  EXPECT_EQ(num::e4m3_to_float(0x7E), 448.0f);  // e4m3 max
  EXPECT_EQ(num::float_to_e4m3(1000.0f), 0x7E);  // satfinite
  EXPECT_EQ(num::float_to_e4m3(-INFINITY), 0xFE);
  EXPECT_EQ(num::float_to_e4m3(NAN) & 0x7F, 0x7F);
  EXPECT_EQ(num::e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(num::float_to_e5m2(1.0f), 0x3C);
  EXPECT_EQ(num::e5m2_to_float(0x7B), 57344.0f);
  EXPECT_EQ(num::float_to_e5m2(1e6f), 0x7B);
}

// Rounding picks the nearest representable value (ties to even), checked against the neighbours.
TEST(Numeric, RoundingIsNearest) {
  for (std::uint64_t i = 0; i < 200000; ++i) {
    float x = static_cast<float>((num::uniform01(3, i) - 0.5) * std::ldexp(1.0, static_cast<int>(i % 40) - 26));
    std::uint16_t h = num::float_to_f16(x);
    double err = std::fabs(num::f16_to_float(h) - static_cast<double>(x));
    for (int d : {-1, 1}) {
      auto n = static_cast<std::uint16_t>(h + d);
      float nv = num::f16_to_float(n);
      if ((n & 0x7FFF) >= 0x7C00 || ((n ^ h) & 0x8000)) continue;  // not a finite neighbour of the same sign
      ASSERT_LE(err, std::fabs(nv - static_cast<double>(x))) << x;
    }
    std::uint16_t b = num::float_to_bf16(x);
    double berr = std::fabs(num::bf16_to_float(b) - static_cast<double>(x));
    for (int d : {-1, 1}) {
      auto n = static_cast<std::uint16_t>(b + d);
      if ((n ^ b) & 0x8000) continue;
      ASSERT_LE(berr, std::fabs(num::bf16_to_float(n) - static_cast<double>(x))) << x;
    }
  }
}

TEST(Fill, SeededReproducibleAndNeverZero) {
  Fill fill;
  fill.seed = 42;
  auto a = make_filled(DType::f32, 100000, fill);
  auto b = make_filled(DType::f32, 100000, fill);
  EXPECT_EQ(a, b);
  fill.seed = 43;
  auto c = make_filled(DType::f32, 100000, fill);
  EXPECT_NE(a, c);
  double sum = 0, lo = 1, hi = -1;
  std::size_t zeros = 0;
  for (std::uint64_t i = 0; i < 100000; ++i) {
    double v = load_element(a.data(), DType::f32, i);
    sum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    zeros += v == 0;
  }
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_LT(lo, -0.99);
  EXPECT_GT(hi, 0.99);
  EXPECT_NEAR(sum / 100000, 0.0, 0.01);  // uniform on [-1, 1): mean 0, sd of the mean ~0.002
  EXPECT_LT(zeros, 5u);
}

TEST(Fill, ElementDependsOnlyOnSeedAndIndex) {
  Fill fill;
  fill.seed = 9;
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::e4m3, DType::f64, DType::i32}) {
    auto small = make_filled(t, 100, fill);
    auto big = make_filled(t, 1000, fill);
    EXPECT_EQ(0, std::memcmp(small.data(), big.data(), small.size())) << dtype_name(t);
  }
}

TEST(Fill, ParallelFillIsBitIdenticalToSerial) {
  // An odd count over an odd number of threads: chunk edges fall mid-way through cache lines and words.
  const std::uint64_t count = (std::uint64_t{1} << 20) + 12345;
  Fill uniform;
  uniform.seed = 77;
  uniform.lo = -2;
  uniform.hi = 3;
  Fill constant;
  constant.kind = Fill::Kind::constant;
  constant.value = 1.5;
  for (const Fill& fill : {uniform, constant})
    for (DType t : {DType::f32, DType::f16, DType::bf16, DType::e4m3, DType::f64, DType::i32}) {
      std::vector<std::uint8_t> serial(count * dtype_size(t), 0xEE), parallel(count * dtype_size(t), 0x11);
      fill_host(serial.data(), t, count, fill, 1);
      fill_host(parallel.data(), t, count, fill, 7);
      EXPECT_EQ(serial, parallel) << dtype_name(t) << " " << fill_kind_name(fill.kind);
    }
  // The default (every hardware thread) agrees too, and so does make_filled.
  std::vector<std::uint8_t> serial(count * 2), all(count * 2);
  fill_host(serial.data(), DType::bf16, count, uniform, 1);
  fill_host(all.data(), DType::bf16, count, uniform);
  EXPECT_EQ(serial, all);
  EXPECT_EQ(make_filled(DType::bf16, count, uniform), serial);
}

// A tiled fill holds the plain fill's values, each tile's rows one after another, tiles in row-major order, padding
// zero; it survives the pipe's JSON, and a malformed one is refused by name.
TEST(Fill, TiledFillIsThePlainMatrixInTiles) {
  Fill plain;
  plain.seed = 9;
  plain.lo = -3;
  plain.hi = 5;
  Fill tiled = plain;
  tiled.tiles = {5, 7, 2, 4};  // a 5 x 7 matrix in 2 x 4 tiles: 3 x 2 tiles, 48 elements
  const auto want = make_filled(DType::f32, 35, plain), got = make_filled(DType::f32, 48, tiled);
  std::vector<int> hits(35, 0);
  for (std::uint64_t i = 0; i < 48; ++i) {
    const std::uint64_t tile = i / 8, r = tile / 2 * 2 + i % 8 / 4, c = tile % 2 * 4 + i % 4;
    const double v = load_element(got.data(), DType::f32, i);
    if (r >= 5 || c >= 7) {
      EXPECT_EQ(v, 0.0) << i;
      continue;
    }
    ++hits[r * 7 + c];
    EXPECT_EQ(v, load_element(want.data(), DType::f32, r * 7 + c)) << i;
  }
  EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), 35);
  Fill back;
  ASSERT_TRUE(fill_from_json(nlohmann::json(tiled), back).ok());
  EXPECT_EQ(make_filled(DType::f32, 48, back), got);
  nlohmann::json bad = nlohmann::json(tiled);
  bad["tiles"] = {5, 7, 0, 4};
  const Status s = fill_from_json(bad, back);
  EXPECT_NE(s.message().find("four positive integers"), std::string::npos) << s.message();
  bad["tiles"] = {5, 7, std::int64_t{1} << 40, std::int64_t{1} << 40};  // their product would overflow the index math
  EXPECT_FALSE(fill_from_json(bad, back).ok());
}

TEST(Fill, NarrowTypesAreTheRoundedFloat) {
  Fill fill;
  fill.seed = 5;
  auto f32 = make_filled(DType::f32, 1000, fill);
  auto bf = make_filled(DType::bf16, 1000, fill);
  for (std::uint64_t i = 0; i < 1000; ++i) {
    float x = static_cast<float>(load_element(f32.data(), DType::f32, i));
    std::uint16_t bits;
    std::memcpy(&bits, bf.data() + 2 * i, 2);
    EXPECT_EQ(bits, num::float_to_bf16(x));
  }
}

TEST(Fill, IntegersCoverTheRange) {
  Fill fill;
  fill.lo = -3;
  fill.hi = 4;
  auto v = make_filled(DType::i32, 10000, fill);
  std::set<double> seen;
  for (std::uint64_t i = 0; i < 10000; ++i) seen.insert(load_element(v.data(), DType::i32, i));
  EXPECT_EQ(seen, (std::set<double>{-3, -2, -1, 0, 1, 2, 3}));
}

TEST(Poison, FloatsPoisonAsNaNAndUnwrittenAreCounted) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::e4m3, DType::e5m2}) {
    std::vector<std::uint8_t> buf(100 * dtype_size(t));
    poison_host(buf.data(), t, 100);
    EXPECT_TRUE(std::isnan(load_element(buf.data(), t, 0))) << dtype_name(t);
    EXPECT_EQ(count_unwritten(buf.data(), t, 100).count, 100u);
    for (std::uint64_t i = 0; i < 100; ++i)
      if (i != 17 && i != 58) store_element(buf.data(), t, i, 0.25 * (i % 3));
    auto u = count_unwritten(buf.data(), t, 100);
    EXPECT_EQ(u.count, 2u) << dtype_name(t);
    EXPECT_EQ(u.first, 17u);
  }
}

TEST(Sampling, AllWhenSmallDistinctSortedWhenLarge) {
  auto all = sample_positions(10, 100, 1);
  ASSERT_EQ(all.size(), 10u);
  for (std::uint64_t i = 0; i < 10; ++i) EXPECT_EQ(all[i], i);
  EXPECT_EQ(sample_positions(1000, 0, 1).size(), 1000u);
  auto s = sample_positions(1u << 30, 5000, 7);
  ASSERT_EQ(s.size(), 5000u);
  EXPECT_EQ(s.front(), 0u);
  EXPECT_EQ(s.back(), (1u << 30) - 1);
  for (std::size_t i = 1; i < s.size(); ++i) ASSERT_LT(s[i - 1], s[i]);
  EXPECT_EQ(s, sample_positions(1u << 30, 5000, 7));
  EXPECT_NE(s, sample_positions(1u << 30, 5000, 8));
  // Not clustered: both halves get samples.
  auto upper = std::count_if(s.begin(), s.end(), [](std::uint64_t p) { return p >= (1u << 29); });
  EXPECT_GT(upper, 2000);
  EXPECT_LT(upper, 3000);
}

TEST(Tolerance, PerPrecision) {
  EXPECT_DOUBLE_EQ(tolerance_for(DType::f32).rel, 1e-5);
  EXPECT_DOUBLE_EQ(tolerance_for("tf32")->rel, 5e-4);
  EXPECT_DOUBLE_EQ(tolerance_for(DType::bf16).rel, 1e-2);
  EXPECT_DOUBLE_EQ(tolerance_for(DType::f16).rel, 1e-2);
  EXPECT_DOUBLE_EQ(tolerance_for(DType::i32).rel, 0.0);
  EXPECT_LT(tolerance_for(DType::f64).rel, 1e-10);
  auto bad = tolerance_for("f17");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::invalid_argument);
}

TEST(Compare, RelativeAndMaxAbsError) {
  std::vector<double> ref = {3, 4}, out = {3, 4.5};
  std::vector<std::uint64_t> pos = {10, 20};
  Comparison c = compare_values(out, ref, pos, {0.2, 0});
  EXPECT_DOUBLE_EQ(c.rel_error, 0.1);  // ‖(0, 0.5)‖ / ‖(3, 4)‖
  EXPECT_DOUBLE_EQ(c.max_abs_error, 0.5);
  EXPECT_EQ(c.worst_index, 20u);
  EXPECT_TRUE(c.passed);
  Comparison tight = compare_values(out, ref, pos, {0.05, 0});
  EXPECT_FALSE(tight.passed);
  EXPECT_NE(tight.reason.find("relative error"), std::string::npos);
  Comparison abs = compare_values(out, ref, pos, {0.2, 0.1});
  EXPECT_FALSE(abs.passed);
}

TEST(Compare, NaNNeverPasses) {
  std::vector<double> ref(1000, 1.0), out(1000, 1.0);
  out[500] = NAN;
  Comparison c = compare_values(out, ref, {}, {1e9, 0});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.nonfinite, 1u);
  EXPECT_EQ(c.worst_index, 500u);
  out[500] = INFINITY;
  EXPECT_FALSE(compare_values(out, ref, {}, {1e9, 0}).passed);
}

TEST(Compare, UnwrittenFailsAndSamplesDecode) {
  std::vector<std::uint8_t> bf(4 * 2);
  std::vector<double> ref = {0.5, -1, 2, 0.125};
  for (std::uint64_t i = 0; i < 4; ++i) store_element(bf.data(), DType::bf16, i, ref[i]);
  std::vector<std::uint64_t> pos = {0, 1, 2, 3};
  EXPECT_TRUE(compare_samples(bf.data(), DType::bf16, ref, pos, tolerance_for(DType::bf16)).passed);
  Comparison c = compare_samples(bf.data(), DType::bf16, ref, pos, tolerance_for(DType::bf16), 3);
  EXPECT_FALSE(c.passed);
  EXPECT_NE(c.reason.find("never written"), std::string::npos);
  poison_host(bf.data() + 2, DType::bf16, 1);
  EXPECT_FALSE(compare_samples(bf.data(), DType::bf16, ref, pos, tolerance_for(DType::bf16)).passed);
}

TEST(Stats, KnownValues) {
  Stats s = compute_stats({4, 1, 100, 3, 2});
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.mean, 22);
  EXPECT_NEAR(s.stddev, std::sqrt(7610.0 / 4), 1e-12);
  EXPECT_DOUBLE_EQ(s.spread(), 33);
  EXPECT_DOUBLE_EQ(compute_stats({1, 2, 3, 10}).median, 2.5);
  EXPECT_EQ(compute_stats({}).count, 0u);
  EXPECT_EQ(compute_stats({5}).stddev, 0.0);
}

TEST(DTypes, NamesAndAliases) {
  EXPECT_EQ(*parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(*parse_dtype("float32"), DType::f32);
  EXPECT_EQ(*parse_dtype("e4m3"), DType::e4m3);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_FALSE(parse_dtype("f12").ok());
  for (int t = 0; t <= static_cast<int>(DType::u64); ++t)
    EXPECT_EQ(*parse_dtype(dtype_name(static_cast<DType>(t))), static_cast<DType>(t));
}

}  // namespace
}  // namespace tl
