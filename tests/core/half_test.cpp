// Half-float packing: IEEE 754 binary16 bit patterns and round-to-nearest-even.
#include "core/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace sf {
namespace {

TEST(Half, KnownBitPatterns) {
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);               // largest finite half
  EXPECT_EQ(floatToHalf(0.1f), 0x2e66);                   // 0.0999755859375
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00);   // overflow to infinity
  EXPECT_EQ(floatToHalf(1e-9f), 0x0000);  // underflow to zero
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Half, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): ties go to the even mantissa (1).
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Slightly above halfway rounds up.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  // Rounding can carry into the exponent: 65519 rounds to 65504, 65520 overflows.
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
}

TEST(Half, EveryHalfRoundTripsExactly) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t bits = static_cast<uint16_t>(h);
    float f = halfToFloat(bits);
    if (std::isnan(f)) continue;
    EXPECT_EQ(floatToHalf(f), bits) << "half 0x" << std::hex << h;
  }
}

TEST(Half, RelativeErrorWithinHalfUlp) {
  for (float f = 1e-4f; f < 6e4f; f *= 1.013f) {
    float back = halfToFloat(floatToHalf(f));
    EXPECT_LE(std::abs(back - f), std::abs(f) * std::ldexp(1.0f, -11) * 1.0001f) << f;
  }
}

}  // namespace
}  // namespace sf
