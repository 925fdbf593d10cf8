// The moment-matched merge of the level-of-detail hierarchy (lod/merge.h; Kerbl et al. 2024).
#include "lod/merge.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace sf::lod {

namespace {

// Product of the two largest of three values.
double twoLargestProduct(double a, double b, double c) {
  const double lo = std::min({a, b, c});
  if (lo == a) return b * c;
  if (lo == b) return a * c;
  return a * b;
}

}  // namespace

double leafWeight(Vec3 scale, float opacity) {
  const double w = static_cast<double>(opacity) *
                   twoLargestProduct(std::fabs(scale.x), std::fabs(scale.y), std::fabs(scale.z));
  return std::isfinite(w) ? std::max(w, kMinWeight) : kMinWeight;
}

Moments leafMoments(Vec3 position, Vec3 scale, Quat rotation, float opacity) {
  Moments m;
  m.weight = leafWeight(scale, opacity);
  m.mean = {position.x, position.y, position.z};
  // Rotation matrix of the unit quaternion, in double.
  double w = rotation.w, x = rotation.x, y = rotation.y, z = rotation.z;
  const double n = std::sqrt(w * w + x * x + y * y + z * z);
  if (n > 0) w /= n, x /= n, y /= n, z /= n;
  const double r[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
                          {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
                          {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}};
  const double s2[3] = {static_cast<double>(scale.x) * scale.x, static_cast<double>(scale.y) * scale.y,
                        static_cast<double>(scale.z) * scale.z};
  auto entry = [&](int i, int j) {
    return r[i][0] * s2[0] * r[j][0] + r[i][1] * s2[1] * r[j][1] + r[i][2] * s2[2] * r[j][2];
  };
  m.cov = {entry(0, 0), entry(0, 1), entry(0, 2), entry(1, 1), entry(1, 2), entry(2, 2)};
  return m;
}

Moments mergeMoments(std::span<const Moments> children) {
  assert(!children.empty());
  Moments out;
  for (const Moments& c : children) out.weight += c.weight;
  const double inv = 1.0 / out.weight;
  for (const Moments& c : children)
    for (int k = 0; k < 3; ++k) out.mean[k] += c.weight * c.mean[k];
  for (int k = 0; k < 3; ++k) out.mean[k] *= inv;
  static constexpr int kRow[6] = {0, 0, 0, 1, 1, 2}, kCol[6] = {0, 1, 2, 1, 2, 2};
  for (const Moments& c : children) {
    const double d[3] = {c.mean[0] - out.mean[0], c.mean[1] - out.mean[1], c.mean[2] - out.mean[2]};
    for (int e = 0; e < 6; ++e) out.cov[e] += c.weight * (c.cov[e] + d[kRow[e]] * d[kCol[e]]);
  }
  for (double& e : out.cov) e *= inv;
  return out;
}

float parentOpacity(double weight, Vec3 scale, float fallback) {
  const double area = twoLargestProduct(scale.x, scale.y, scale.z);
  if (!(area > 0)) return std::clamp(fallback, 0.0f, 1.0f);
  return static_cast<float>(std::min(1.0, weight / area));
}

}  // namespace sf::lod
