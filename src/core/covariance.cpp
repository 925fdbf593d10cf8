// Covariance helpers. The eigen-decomposition is the cyclic Jacobi method (Golub & Van Loan, "Matrix
// Computations", 8.5), which is exact enough for 3x3 symmetric matrices in a handful of sweeps.
#include "core/covariance.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace sf {

Cov6 covarianceFromScaleRotation(Vec3 scale, Quat rotation) {
  Mat3 m = rotationMatrix(rotation) * Mat3::diagonal(scale);
  return covarianceUpper(m * transpose(m));
}

Mat3 covarianceMatrix(const Cov6& c) {
  Mat3 m;
  m.m[0][0] = c[0];
  m.m[0][1] = m.m[1][0] = c[1];
  m.m[0][2] = m.m[2][0] = c[2];
  m.m[1][1] = c[3];
  m.m[1][2] = m.m[2][1] = c[4];
  m.m[2][2] = c[5];
  return m;
}

Cov6 covarianceUpper(const Mat3& m) {
  return {m.m[0][0], m.m[0][1], m.m[0][2], m.m[1][1], m.m[1][2], m.m[2][2]};
}

ScaleRotation decomposeCovariance(const Cov6& c) {
  double a[3][3] = {{c[0], c[1], c[2]}, {c[1], c[3], c[4]}, {c[2], c[4], c[5]}};
  double v[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  for (int sweep = 0; sweep < 32; ++sweep) {
    double off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
    double diag = a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2];
    if (off <= 1e-30 * std::max(diag, 1e-300)) break;
    for (int p = 0; p < 2; ++p) {
      for (int q = p + 1; q < 3; ++q) {
        if (a[p][q] == 0.0) continue;
        double theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
        double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
        double cs = 1.0 / std::sqrt(t * t + 1.0), sn = t * cs;
        for (int k = 0; k < 3; ++k) {  // A <- A J
          double akp = a[k][p], akq = a[k][q];
          a[k][p] = cs * akp - sn * akq;
          a[k][q] = sn * akp + cs * akq;
        }
        for (int k = 0; k < 3; ++k) {  // A <- J^T A
          double apk = a[p][k], aqk = a[q][k];
          a[p][k] = cs * apk - sn * aqk;
          a[q][k] = sn * apk + cs * aqk;
        }
        for (int k = 0; k < 3; ++k) {  // V <- V J
          double vkp = v[k][p], vkq = v[k][q];
          v[k][p] = cs * vkp - sn * vkq;
          v[k][q] = sn * vkp + cs * vkq;
        }
      }
    }
  }
  int order[3] = {0, 1, 2};
  std::sort(order, order + 3, [&](int i, int j) { return a[i][i] > a[j][j]; });
  Mat3 r;
  Vec3 scale;
  for (int col = 0; col < 3; ++col) {
    int src = order[col];
    scale[col] = static_cast<float>(std::sqrt(std::max(a[src][src], 0.0)));
    for (int row = 0; row < 3; ++row) r.m[row][col] = static_cast<float>(v[row][src]);
  }
  if (determinant(r) < 0)
    for (int row = 0; row < 3; ++row) r.m[row][2] = -r.m[row][2];
  return {scale, quatFromRotationMatrix(r)};
}

}  // namespace sf
