// Spherical harmonics: basis values at a direction computed by hand from the standard real-SH constants
// (INRIA 3DGS), orthonormality over the sphere, and the colour mapping max(sh + 0.5, 0).
#include "core/sh.h"

#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace sf
