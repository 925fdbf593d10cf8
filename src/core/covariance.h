// 3D covariance of a gaussian from its scale and rotation, and back.
// Sigma = R S S^T R^T, where R is the quaternion's rotation matrix and S = diag(scale).
#pragma once

#include <array>

#include "core/math.h"

namespace sf {

// Upper triangle of a symmetric 3x3 matrix: xx, xy, xz, yy, yz, zz (the GPU layout, 6 floats).
using Cov6 = std::array<float, 6>;

Cov6 covarianceFromScaleRotation(Vec3 scale, Quat rotation);

Mat3 covarianceMatrix(const Cov6& c);
Cov6 covarianceUpper(const Mat3& m);

struct ScaleRotation {
  Vec3 scale;     // non-negative, sorted descending
  Quat rotation;  // unit, w >= 0
};

// Eigen-decomposition of a symmetric positive semi-definite covariance (Jacobi rotations in double
// precision): scale = sqrt of the eigenvalues (negatives from rounding clamp to 0), rotation = the
// eigenvectors as a proper rotation. covarianceFromScaleRotation(result) reproduces the input.
ScaleRotation decomposeCovariance(const Cov6& c);

}  // namespace sf
