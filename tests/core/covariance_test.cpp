// Quaternion / rotation-matrix and covariance helpers: analytic cases and random round trips.
#include "core/covariance.h"

#include <gtest/gtest.h>

#include <cmath>

#include "support/test_support.h"

namespace sf {
namespace {

constexpr float kPi = 3.14159265358979f;

TEST(Quaternion, RotationMatrixOfQuarterTurnAboutZ) {
  Mat3 r = rotationMatrix(Quat{std::cos(kPi / 4), 0, 0, std::sin(kPi / 4)});
  Vec3 x = r * Vec3{1, 0, 0};
  EXPECT_NEAR(x.x, 0, 1e-6);
  EXPECT_NEAR(x.y, 1, 1e-6);
  EXPECT_NEAR(x.z, 0, 1e-6);
}

TEST(Quaternion, MatrixRoundTripUpToSign) {
  GaussianCloud c = test::randomCloud(500, 0, 7);
  for (const Quat& q : c.rotations) {
    Quat back = quatFromRotationMatrix(rotationMatrix(q));
    float d = q.w * back.w + q.x * back.x + q.y * back.y + q.z * back.z;
    EXPECT_NEAR(std::abs(d), 1.0f, 1e-5f);
    EXPECT_GE(back.w, 0.0f);
  }
}

TEST(Quaternion, ZeroQuaternionIsIdentity) {
  Mat3 r = rotationMatrix(Quat{0, 0, 0, 0});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(r.m[i][j], i == j ? 1.0f : 0.0f);
}

TEST(Covariance, AxisAlignedScaleGivesDiagonal) {
  Cov6 c = covarianceFromScaleRotation({1, 2, 3}, Quat{});
  EXPECT_FLOAT_EQ(c[0], 1);
  EXPECT_FLOAT_EQ(c[3], 4);
  EXPECT_FLOAT_EQ(c[5], 9);
  EXPECT_FLOAT_EQ(c[1], 0);
  EXPECT_FLOAT_EQ(c[2], 0);
  EXPECT_FLOAT_EQ(c[4], 0);
}

TEST(Covariance, QuarterTurnSwapsAxes) {
  // Rotating scale (1, 2, 3) by 90 degrees about z swaps the x and y variances.
  Cov6 c = covarianceFromScaleRotation({1, 2, 3}, Quat{std::cos(kPi / 4), 0, 0, std::sin(kPi / 4)});
  EXPECT_NEAR(c[0], 4, 1e-5);
  EXPECT_NEAR(c[3], 1, 1e-5);
  EXPECT_NEAR(c[5], 9, 1e-5);
  EXPECT_NEAR(c[1], 0, 1e-5);
}

TEST(Covariance, DecomposeRoundTripsRandomGaussians) {
  GaussianCloud c = test::randomCloud(2000, 0, 11);
  for (size_t i = 0; i < c.size(); ++i) {
    Cov6 cov = covarianceFromScaleRotation(c.scales[i], c.rotations[i]);
    ScaleRotation sr = decomposeCovariance(cov);
    EXPECT_GE(sr.scale.x, sr.scale.y);
    EXPECT_GE(sr.scale.y, sr.scale.z);
    Cov6 again = covarianceFromScaleRotation(sr.scale, sr.rotation);
    float norm = std::max({std::abs(cov[0]), std::abs(cov[3]), std::abs(cov[5])});
    for (int k = 0; k < 6; ++k)
      EXPECT_NEAR(again[k], cov[k], 1e-4f * norm) << "splat " << i << " component " << k;
    // The scales are the original ones up to order.
    float orig[3] = {c.scales[i].x, c.scales[i].y, c.scales[i].z};
    std::sort(orig, orig + 3, std::greater<float>());
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(sr.scale[k], orig[k], 2e-4f * orig[0]);
  }
}

TEST(Covariance, DecomposeDegenerateFlatGaussian) {
  Cov6 cov = covarianceFromScaleRotation({0.5f, 0.25f, 0.0f}, normalize(Quat{0.3f, 0.1f, -0.7f, 0.2f}));
  ScaleRotation sr = decomposeCovariance(cov);
  EXPECT_NEAR(sr.scale.x, 0.5f, 1e-5f);
  EXPECT_NEAR(sr.scale.y, 0.25f, 1e-5f);
  EXPECT_NEAR(sr.scale.z, 0.0f, 1e-3f);
  EXPECT_NEAR(determinant(rotationMatrix(sr.rotation)), 1.0f, 1e-5f);
}

TEST(Covariance, MatrixAndUpperTriangleRoundTrip) {
  Cov6 c = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(covarianceUpper(covarianceMatrix(c)), c);
}

}  // namespace
}  // namespace sf
