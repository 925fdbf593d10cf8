// Spherical harmonics: basis values at a direction computed by hand from the standard real-SH constants
// (INRIA 3DGS), orthonormality over the sphere, and the colour mapping max(sh + 0.5, 0).
#include "core/sh.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/gaussian_cloud.h"

namespace sf {
namespace {

TEST(Sh, BasisMatchesHandComputedValues) {
  // Direction (1, 2, 2) / 3. Values from the closed forms, e.g. basis 6 = 0.31539157 * (2 z^2 - x^2 - y^2)
  // = 0.31539157 * 3/9 = 0.10513052.
  const float expected[16] = {0.282094792f,  -0.325735008f, 0.325735008f,  -0.162867504f,
                              0.242788540f,  -0.485577080f, 0.105130522f,  -0.242788540f,
                              -0.182091405f, 0.043706933f,  0.428238732f,  -0.372407688f,
                              -0.193498839f, -0.186203844f, -0.321179049f, 0.240388129f};
  float basis[16];
  shBasis(3, Vec3{1.0f / 3, 2.0f / 3, 2.0f / 3}, basis);
  for (int k = 0; k < 16; ++k) EXPECT_NEAR(basis[k], expected[k], 1e-6f) << "basis " << k;
}

TEST(Sh, BasisIsOrthonormalOverTheSphere) {
  // Midpoint quadrature in (cos theta, phi): integral of b_i b_j over the sphere = delta_ij.
  constexpr int kN = 256;
  double gram[16][16] = {};
  const double pi = 3.14159265358979323846;
  for (int a = 0; a < kN; ++a) {
    double z = -1.0 + (a + 0.5) * 2.0 / kN;
    double r = std::sqrt(1 - z * z);
    for (int b = 0; b < 2 * kN; ++b) {
      double phi = (b + 0.5) * pi / kN;
      float basis[16];
      shBasis(3,
              Vec3{static_cast<float>(r * std::cos(phi)), static_cast<float>(r * std::sin(phi)),
                   static_cast<float>(z)},
              basis);
      double w = (2.0 / kN) * (pi / kN);
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) gram[i][j] += w * basis[i] * basis[j];
    }
  }
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) EXPECT_NEAR(gram[i][j], i == j ? 1.0 : 0.0, 2e-3) << i << "," << j;
}

TEST(Sh, DegreeZeroIsViewIndependentDcColour) {
  float coeffs[3] = {1.0f, -0.5f, 0.0f};
  Vec3 a = shToColor(0, coeffs, Vec3{0, 0, 1}), b = shToColor(0, coeffs, Vec3{1, -3, 2});
  EXPECT_FLOAT_EQ(a.x, b.x);
  EXPECT_NEAR(a.x, 0.5f + 0.28209479f, 1e-6f);
  EXPECT_NEAR(a.y, 0.5f - 0.5f * 0.28209479f, 1e-6f);
  EXPECT_NEAR(a.z, 0.5f, 1e-6f);
  EXPECT_NEAR(shDcToColor(colorToShDc(0.3f)), 0.3f, 1e-6f);
}

TEST(Sh, ColourIsClampedAtZeroButNotAtOne) {
  float coeffs[3] = {-10.0f, 10.0f, 0.0f};
  Vec3 c = shToColor(0, coeffs, Vec3{0, 0, 1});
  EXPECT_EQ(c.x, 0.0f);
  EXPECT_GT(c.y, 1.0f);  // INRIA clamps only below
}

TEST(Sh, DegreeOneFollowsViewDirection) {
  // Only the coefficient of basis 2 (C1 z) set: colour rises when viewed along +z, falls along -z.
  float coeffs[12] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0};
  Vec3 plus = shToColor(1, coeffs, Vec3{0, 0, 5}), minus = shToColor(1, coeffs, Vec3{0, 0, -5});
  EXPECT_NEAR(plus.x, 0.5f + 0.48860251f, 1e-6f);
  EXPECT_NEAR(minus.x, 0.5f - 0.48860251f, 1e-6f);
}

// The half layout (RenderSettings::half_sh) against IEEE 754 binary16 bit patterns written out by hand.
TEST(Sh, HalfLayoutHoldsTheDcAsFloatsAndTheBandsAsIeeeHalves) {
  EXPECT_EQ(halfShWords(3), 4u);    // degree 0: the DC and one pad word
  EXPECT_EQ(halfShWords(12), 8u);   // 3 + 5 words
  EXPECT_EQ(halfShWords(27), 16u);  // 3 + 12
  EXPECT_EQ(halfShWords(48), 28u);  // 3 + 23, padded to 16 bytes
  const float inf = std::numeric_limits<float>::infinity();
  float c[12] = {0.1f, -7.25f, 1e30f,  // the DC: kept as its float bits
                 1.0f, -2.0f,  1.0f / 3.0f, 65504.0f, 1e6f, -1e6f, 1e-6f, -1e-6f, inf};
  uint32_t w[8];
  packHalfSh(c, 12, w);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(w[k], std::bit_cast<uint32_t>(c[k])) << k;
  EXPECT_EQ(w[3], 0xC0003C00u);  // 1 (0x3C00) low, -2 (0xC000) high
  EXPECT_EQ(w[4], 0x7BFF3555u);  // 1/3 rounds to 0x3555 (0.333251953125); 65504 is the largest half
  EXPECT_EQ(w[5], 0xFBFF7BFFu);  // finite values past the range saturate (never infinity)
  EXPECT_EQ(w[6], 0x80000000u);  // half subnormals become signed zero
  EXPECT_EQ(w[7], 0x00007C00u);  // infinity stays; the pad half is 0
  float r[12];
  roundHalfSh(c, 12, r);
  const float expect[12] = {0.1f,     -7.25f,   1e30f,     1.0f, -2.0f, 0.333251953125f,
                            65504.0f, 65504.0f, -65504.0f, 0.0f, -0.0f, inf};
  for (int k = 0; k < 12; ++k)
    EXPECT_EQ(std::bit_cast<uint32_t>(r[k]), std::bit_cast<uint32_t>(expect[k])) << k;
  EXPECT_TRUE(std::isnan(shHalf(std::nanf(""))));
  // Round to nearest, ties to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(shHalf(1.0f + 0x1p-11f), 1.0f);
  EXPECT_EQ(shHalf(1.0f + 0x1p-10f + 0x1p-11f), 1.0f + 0x1p-9f);
  EXPECT_EQ(shHalf(1.0f + 0x1p-11f + 0x1p-20f), 1.0f + 0x1p-10f);
}

}  // namespace
}  // namespace sf
