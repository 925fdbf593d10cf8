#include "core/gaussian_cloud.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/covariance.h"
#include "core/error.h"
#include "core/sh.h"

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
  if (scales.size() != n)
    return "scales has " + std::to_string(scales.size()) + " entries, expected " + std::to_string(n);
  if (rotations.size() != n) return "rotations size mismatch";
  if (opacities.size() != n) return "opacities size mismatch";
  if (sh.size() != n * static_cast<size_t>(shStride())) return "sh size mismatch";
  if (!normals.empty() && normals.size() != n) return "normals size mismatch";
  if (!ids.empty() && ids.size() != n) return "ids size mismatch";
  if (!(screen_filter >= 0.0f && screen_filter <= 16.0f))
    return "screen_filter " + std::to_string(screen_filter) + " outside [0, 16] pixels^2";
  for (const ExtraChannel& e : extras)
    if (e.values.size() != n) return "extra channel '" + e.name + "' size mismatch";
  return {};
}

NonFiniteReport findNonFinite(const GaussianCloud& cloud) {
  NonFiniteReport r;
  const size_t n = cloud.size();
  const size_t stride = static_cast<size_t>(cloud.shStride());
  auto finite3 = [](Vec3 v) { return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z); };
  // The first field of row i holding a non-finite value, or empty.
  auto badField = [&](size_t i) -> std::string {
    const Quat& q = cloud.rotations[i];
    if (!finite3(cloud.positions[i])) return "position";
    if (!finite3(cloud.scales[i])) return "scale";
    if (!(std::isfinite(q.w) && std::isfinite(q.x) && std::isfinite(q.y) && std::isfinite(q.z)))
      return "rotation";
    if (!std::isfinite(cloud.opacities[i])) return "opacity";
    if (!cloud.normals.empty() && !finite3(cloud.normals[i])) return "normal";
    for (size_t k = 0; k < stride; ++k)
      if (!std::isfinite(cloud.sh[i * stride + k]))
        return "sh[" + std::to_string(k / 3) + "] (colour " + std::to_string(k % 3) + ")";
    for (const ExtraChannel& e : cloud.extras)
      if (!std::isfinite(e.values[i])) return "extra " + e.name;
    return {};
  };
  for (size_t i = 0; i < n; ++i) {
    std::string field = badField(i);
    if (field.empty()) continue;
    if (r.rows == 0) {
      r.first_row = i;
      r.first_field = std::move(field);
      r.bad.assign(n, 0);
    }
    r.bad[i] = 1;
    ++r.rows;
  }
  return r;
}

std::string NonFiniteReport::describe(size_t total) const {
  return std::to_string(rows) + " of " + std::to_string(total) +
         " gaussians hold non-finite values (NaN or infinity; first: row " + std::to_string(first_row) +
         ", " + first_field + ")";
}

void eraseRows(GaussianCloud& cloud, std::span<const uint8_t> drop) {
  const size_t n = cloud.size();
  assert(drop.size() == n);
  const size_t stride = static_cast<size_t>(cloud.shStride());
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (drop[i]) continue;
    if (out != i) {
      cloud.positions[out] = cloud.positions[i];
      cloud.scales[out] = cloud.scales[i];
      cloud.rotations[out] = cloud.rotations[i];
      cloud.opacities[out] = cloud.opacities[i];
      std::copy_n(cloud.sh.begin() + static_cast<std::ptrdiff_t>(i * stride), stride,
                  cloud.sh.begin() + static_cast<std::ptrdiff_t>(out * stride));
      if (!cloud.normals.empty()) cloud.normals[out] = cloud.normals[i];
      if (!cloud.ids.empty()) cloud.ids[out] = cloud.ids[i];
      for (ExtraChannel& e : cloud.extras) e.values[out] = e.values[i];
    }
    ++out;
  }
  cloud.positions.resize(out);
  cloud.scales.resize(out);
  cloud.rotations.resize(out);
  cloud.opacities.resize(out);
  cloud.sh.resize(out * stride);
  if (!cloud.normals.empty()) cloud.normals.resize(out);
  if (!cloud.ids.empty()) cloud.ids.resize(out);
  for (ExtraChannel& e : cloud.extras) e.values.resize(out);
}

size_t GaussianCloud::memoryBytes() const {
  size_t bytes = positions.size() * sizeof(Vec3) + scales.size() * sizeof(Vec3) +
                 rotations.size() * sizeof(Quat) + opacities.size() * sizeof(float) +
                 sh.size() * sizeof(float) + normals.size() * sizeof(Vec3) + ids.size() * sizeof(int32_t);
  for (const ExtraChannel& e : extras) bytes += e.values.size() * sizeof(double);
  return bytes;
}

namespace {

// ---- SH rotation -----------------------------------------------------------------------------------

// Rotation of SH coefficients: coefficients c' such that the rotated splat seen along d has the colour
// the original had along R^T d. Each degree l is invariant under rotation, so c'_l = X_l c_l for a
// (2l+1)x(2l+1) matrix; X_l is fitted by least squares over 64 directions with the engine's own basis
// (core/sh.h), so it follows its (INRIA, Condon-Shortley) conventions by construction.
class ShRotation {
 public:
  explicit ShRotation(const Mat3& r) {
    constexpr int kDirs = 64;
    float basis[kDirs][16], rotated[kDirs][16];
    const Mat3 rt = transpose(r);
    for (int i = 0; i < kDirs; ++i) {  // Fibonacci sphere
      double z = 1.0 - (2.0 * i + 1.0) / kDirs, rad = std::sqrt(1.0 - z * z);
      double phi = 2.399963229728653 * i;
      Vec3 d{static_cast<float>(rad * std::cos(phi)), static_cast<float>(rad * std::sin(phi)),
             static_cast<float>(z)};
      shBasis(3, d, basis[i]);
      shBasis(3, normalize(rt * d), rotated[i]);
    }
    for (int l = 1; l <= 3; ++l) {
      const int n = 2 * l + 1, first = l * l;
      // Normal equations (A^T A) X^T = A^T B, with A = basis and B = rotated restricted to degree l.
      double ata[7][7] = {}, atb[7][7] = {};
      for (int i = 0; i < kDirs; ++i)
        for (int j = 0; j < n; ++j)
          for (int k = 0; k < n; ++k) {
            ata[j][k] += static_cast<double>(basis[i][first + j]) * basis[i][first + k];
            atb[j][k] += static_cast<double>(basis[i][first + j]) * rotated[i][first + k];
          }
      // Gauss-Jordan with partial pivoting (A^T A is symmetric positive definite).
      for (int col = 0; col < n; ++col) {
        int pivot = col;
        for (int row = col + 1; row < n; ++row)
          if (std::abs(ata[row][col]) > std::abs(ata[pivot][col])) pivot = row;
        std::swap(ata[col], ata[pivot]);
        std::swap(atb[col], atb[pivot]);
        for (int row = 0; row < n; ++row) {
          if (row == col) continue;
          double f = ata[row][col] / ata[col][col];
          for (int k = 0; k < n; ++k) {
            ata[row][k] -= f * ata[col][k];
            atb[row][k] -= f * atb[col][k];
          }
        }
      }
      // Row j of the solution is M^T's row j: c'_j = sum_k M^T[j][k] c_k.
      for (int j = 0; j < n; ++j)
        for (int k = 0; k < n; ++k) m_[first + j][first + k] = atb[j][k] / ata[j][j];
    }
  }

  // Entries within `eps` of 0 or +-1 become exact, so that signed permutations (whose SH matrices have such
  // entries for sign flips) change values by sign only.
  void snap(double eps) {
    for (auto& row : m_)
      for (double& v : row) {
        if (std::abs(v) < eps)
          v = 0;
        else if (std::abs(std::abs(v) - 1.0) < eps)
          v = v > 0 ? 1.0 : -1.0;
      }
  }

  // When every row holds a single +-1 (a signed permutation of the coefficients, as snapped axis changes
  // give), the source coefficient and sign of each output coefficient; false otherwise.
  bool signedPermutation(int source[16], float sign[16]) const {
    source[0] = 0, sign[0] = 1;
    for (int j = 1; j < 16; ++j) {
      int nonzero = 0;
      for (int k = 0; k < 16; ++k) {
        if (m_[j][k] == 0) continue;
        if (m_[j][k] != 1.0 && m_[j][k] != -1.0) return false;
        ++nonzero, source[j] = k, sign[j] = static_cast<float>(m_[j][k]);
      }
      if (nonzero != 1) return false;
    }
    return true;
  }

  // Rotates one splat's coefficients ([coeff][rgb], degree 1..3 in place; DC is invariant).
  void apply(float* sh, int degree) const {
    float out[16][3];
    for (int l = 1; l <= degree; ++l) {
      const int n = 2 * l + 1, first = l * l;
      for (int j = 0; j < n; ++j)
        for (int c = 0; c < 3; ++c) {
          double sum = 0;
          for (int k = 0; k < n; ++k) sum += m_[first + j][first + k] * sh[3 * (first + k) + c];
          out[first + j][c] = static_cast<float>(sum);
        }
    }
    for (int k = 1; k < (degree + 1) * (degree + 1); ++k)
      for (int c = 0; c < 3; ++c) sh[3 * k + c] = out[k][c];
  }

 private:
  double m_[16][16] = {};
};

bool isIdentity(const Mat4& m) {
  const Mat4 identity;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      if (m.m[r][c] != identity.m[r][c]) return false;
  return true;
}

}  // namespace

void transformCloud(GaussianCloud& cloud, const Mat4& m) {
  if (isIdentity(m)) return;
  const Mat3 l = m.linear();
  const float det = determinant(l);
  if (!(det > 0) || !std::isfinite(det))
    throw Error(std::string("world matrix ") +
                (det < 0 ? "mirrors (negative determinant)" : "collapses an axis (zero scale)"));
  for (Vec3& p : cloud.positions) p = transformPoint(m, p);

  const Vec3 s{length(l.col(0)), length(l.col(1)), length(l.col(2))};
  Mat3 rot;  // the rotation of l: its columns normalised (exact when l = R * diagonal scale)
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) rot.m[i][j] = l.m[i][j] / s[j];
  const Quat q = quatFromRotationMatrix(rot);
  const float mean = (s.x + s.y + s.z) / 3.0f;
  const float tol = 1e-5f * mean;
  const bool similarity = std::abs(s.x - mean) <= tol && std::abs(s.y - mean) <= tol &&
                          std::abs(s.z - mean) <= tol && std::abs(dot(l.col(0), l.col(1))) <= tol * mean &&
                          std::abs(dot(l.col(0), l.col(2))) <= tol * mean &&
                          std::abs(dot(l.col(1), l.col(2))) <= tol * mean;
  for (size_t i = 0; i < cloud.size(); ++i) {
    if (similarity) {
      cloud.rotations[i] = normalize(q * cloud.rotations[i]);
      cloud.scales[i] = cloud.scales[i] * mean;
    } else {
      Mat3 sigma = covarianceMatrix(covarianceFromScaleRotation(cloud.scales[i], cloud.rotations[i]));
      ScaleRotation sr = decomposeCovariance(covarianceUpper(l * sigma * transpose(l)));
      cloud.scales[i] = sr.scale;
      cloud.rotations[i] = sr.rotation;
    }
  }
  if (cloud.sh_degree > 0) {
    const ShRotation sh_rotation(rotationMatrix(q));
    for (size_t i = 0; i < cloud.size(); ++i) sh_rotation.apply(cloud.shOf(i).data(), cloud.sh_degree);
  }
}

void changeAxes(GaussianCloud& cloud, const Mat3& axes) {
  int source[3];  // source[i]: the old axis that new axis i is made of
  for (int i = 0; i < 3; ++i) {
    int ones = 0;
    for (int j = 0; j < 3; ++j) {
      const float v = axes.m[i][j];
      if (v == 1.0f || v == -1.0f)
        ones++, source[i] = j;
      else if (v != 0.0f)
        ones = 99;
    }
    if (ones != 1)
      throw Error("axis change: the matrix is not a signed permutation (row " + std::to_string(i) + ")");
  }
  if (source[0] == source[1] || source[0] == source[2] || source[1] == source[2])
    throw Error("axis change: the matrix is not a signed permutation (two rows take the same axis)");
  const float det = determinant(axes);
  for (Vec3& p : cloud.positions) p = axes * p;
  for (Vec3& n : cloud.normals) n = axes * n;
  for (Vec3& s : cloud.scales) s = Vec3{s[source[0]], s[source[1]], s[source[2]]};
  for (Quat& q : cloud.rotations) {
    const Vec3 v = axes * Vec3{q.x, q.y, q.z} * det;
    q = Quat{q.w, v.x, v.y, v.z};
  }
  if (cloud.sh_degree > 0) {
    ShRotation sh_rotation(axes);
    sh_rotation.snap(1e-5);
    int source_coeff[16];
    float sign[16];
    if (!sh_rotation.signedPermutation(source_coeff, sign)) {
      for (size_t i = 0; i < cloud.size(); ++i) sh_rotation.apply(cloud.shOf(i).data(), cloud.sh_degree);
      return;
    }
    // Coefficients move and change sign only: no arithmetic on the values.
    const int coeffs = (cloud.sh_degree + 1) * (cloud.sh_degree + 1);
    for (size_t i = 0; i < cloud.size(); ++i) {
      float* sh = cloud.shOf(i).data();
      float in[16 * 3];
      std::copy(sh, sh + 3 * coeffs, in);
      for (int j = 1; j < coeffs; ++j)
        for (int c = 0; c < 3; ++c) sh[3 * j + c] = sign[j] * in[3 * source_coeff[j] + c];
    }
  }
}

GaussianCloud mergeClouds(std::span<const GaussianCloud* const> parts) {
  GaussianCloud out;
  if (parts.empty()) return out;
  size_t total = 0;
  int degree = 0;
  for (const GaussianCloud* c : parts) total += c->size(), degree = std::max(degree, c->sh_degree);
  out.resize(total, degree);
  out.color_space = parts[0]->color_space;
  out.antialiased = parts[0]->antialiased;
  out.screen_filter = parts[0]->screen_filter;
  size_t at = 0;
  for (const GaussianCloud* c : parts) {
    const auto offset = static_cast<std::ptrdiff_t>(at);
    std::copy(c->positions.begin(), c->positions.end(), out.positions.begin() + offset);
    std::copy(c->scales.begin(), c->scales.end(), out.scales.begin() + offset);
    std::copy(c->rotations.begin(), c->rotations.end(), out.rotations.begin() + offset);
    std::copy(c->opacities.begin(), c->opacities.end(), out.opacities.begin() + offset);
    for (size_t i = 0; i < c->size(); ++i) {
      std::span<float> dst = out.shOf(at + i);
      std::fill(dst.begin(), dst.end(), 0.0f);
      std::span<const float> src = c->shOf(i);
      std::copy(src.begin(), src.end(), dst.begin());
    }
    at += c->size();
  }
  return out;
}

float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

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
