// fp16/bf16 host conversions: exhaustive round trips and values fixed by IEEE 754 binary16 and bfloat16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "runtime/core/dtype.hpp"
#include "tile/float16.hpp"

namespace tl {
namespace {

float bits_to_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Float16, EveryHalfRoundTripsThroughFloat) {
  for (unsigned b = 0; b < 0x10000; ++b) {
    half_t h{static_cast<unsigned short>(b)};
    float f = to_float(h);
    if (std::isnan(f)) {
      EXPECT_EQ((b & 0x7c00u), 0x7c00u);
      EXPECT_TRUE(std::isnan(to_float(from_float<half_t>(f))));
      continue;
    }
    EXPECT_EQ(from_float<half_t>(f).bits, b) << std::hex << b;
  }
}

TEST(Float16, KnownValues) {
  EXPECT_EQ(from_float<half_t>(1.0f).bits, 0x3c00);
  EXPECT_EQ(from_float<half_t>(-2.0f).bits, 0xc000);
  EXPECT_EQ(from_float<half_t>(65504.0f).bits, 0x7bff);              // largest finite
  EXPECT_EQ(from_float<half_t>(65520.0f).bits, 0x7c00);              // halfway to 2^16 rounds to infinity
  EXPECT_EQ(from_float<half_t>(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(from_float<half_t>(std::ldexp(1.0f, -26)).bits, 0x0000);  // below half of it: zero
  EXPECT_EQ(from_float<half_t>(std::ldexp(1.0f, -14)).bits, 0x0400);  // smallest normal
  EXPECT_EQ(to_float(half_t{0x3555}), 0.333251953125f);
  // Ties go to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(from_float<half_t>(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);
  EXPECT_EQ(from_float<half_t>(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);
}

TEST(BFloat16, KnownValuesAndRounding) {
  EXPECT_EQ(from_float<bfloat16_t>(1.0f).bits, 0x3f80);
  EXPECT_EQ(to_float(bfloat16_t{0x4049}), 3.140625f);
  EXPECT_EQ(from_float<bfloat16_t>(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);      // tie -> even
  EXPECT_EQ(from_float<bfloat16_t>(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);  // tie -> even (up)
  EXPECT_TRUE(std::isnan(to_float(from_float<bfloat16_t>(bits_to_float(0x7f800001u)))));  // NaN stays NaN
  for (unsigned b = 0; b < 0x10000; ++b) {
    float f = to_float(bfloat16_t{static_cast<unsigned short>(b)});
    if (!std::isnan(f)) {
      EXPECT_EQ(from_float<bfloat16_t>(f).bits, b);
    }
  }
}

TEST(DType, LoadStoreAndNames) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64}) {
    auto parsed = parse_dtype(dtype_name(t));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, t);
    unsigned char buf[16] = {};
    store_element(buf, t, 1, -3.0);
    EXPECT_EQ(load_element(buf, t, 1), -3.0);
    EXPECT_EQ(load_element(buf, t, 0), 0.0);
  }
  EXPECT_EQ(*parse_dtype("half"), DType::f16);
  EXPECT_FALSE(parse_dtype("f8").ok());
}

}  // namespace
}  // namespace tl
