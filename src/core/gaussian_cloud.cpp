#include "core/gaussian_cloud.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace sf {

void GaussianCloud::resize(size_t n, int degree) {
  assert(degree >= 0 && degree <= 3);
  sh_degree = degree;
  positions.resize(n);
  scales.resize(n, Vec3{1, 1, 1});
  rotations.resize(n, Quat{});
  opacities.resize(n, 1.0f);
  sh.assign(n * static_cast<size_t>(shStride()), 0.0f);
  normals.clear();
  ids.clear();
  extras.clear();
}

std::string GaussianCloud::validate() const {
  size_t n = positions.size();
  if (sh_degree < 0 || sh_degree > 3) return "sh_degree " + std::to_string(sh_degree) + " outside 0..3";
  if (scales.size() != n) return "scales has " + std::to_string(scales.size()) + " entries, expected " + std::to_string(n);
  if (rotations.size() != n) return "rotations size mismatch";
  if (opacities.size() != n) return "opacities size mismatch";
  if (sh.size() != n * static_cast<size_t>(shStride())) return "sh size mismatch";
  if (!normals.empty() && normals.size() != n) return "normals size mismatch";
  if (!ids.empty() && ids.size() != n) return "ids size mismatch";
  for (const ExtraChannel& e : extras)
    if (e.values.size() != n) return "extra channel '" + e.name + "' size mismatch";
  return {};
}

size_t GaussianCloud::memoryBytes() const {
  size_t bytes = positions.size() * sizeof(Vec3) + scales.size() * sizeof(Vec3) + rotations.size() * sizeof(Quat) +
                 opacities.size() * sizeof(float) + sh.size() * sizeof(float) + normals.size() * sizeof(Vec3) +
                 ids.size() * sizeof(int32_t);
  for (const ExtraChannel& e : extras) bytes += e.values.size() * sizeof(double);
  return bytes;
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

float logit(float p) {
  p = std::clamp(p, 1e-7f, 1.0f - 1e-7f);
  return std::log(p / (1.0f - p));
}

CloudBounds computeBounds(const GaussianCloud& cloud) {
  assert(cloud.size() > 0);
  CloudBounds b;
  std::vector<float> axis(cloud.size());
  for (int a = 0; a < 3; ++a) {
    for (size_t i = 0; i < cloud.size(); ++i) axis[i] = cloud.positions[i][a];
    auto [lo, hi] = std::minmax_element(axis.begin(), axis.end());
    b.min[a] = *lo;
    b.max[a] = *hi;
    size_t k01 = static_cast<size_t>(0.01 * static_cast<double>(axis.size() - 1));
    size_t k99 = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(axis.size() - 1)));
    std::nth_element(axis.begin(), axis.begin() + static_cast<std::ptrdiff_t>(k01), axis.end());
    b.p01[a] = axis[k01];
    std::nth_element(axis.begin(), axis.begin() + static_cast<std::ptrdiff_t>(k99), axis.end());
    b.p99[a] = axis[k99];
  }
  return b;
}

}  // namespace sf
