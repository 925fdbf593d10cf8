// The UV lift's CPU reference (see lift.h).
#include "character/lift.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/parallel.h"

namespace sf::character {
namespace {

bool finite(Vec3 v) {
  return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z);
}

Vec3 texelPosition(std::span<const float> g, size_t plane, size_t k) {
  return {g[k], g[plane + k], g[2 * plane + k]};
}

std::string checkSize(const char* what, size_t got, size_t want) {
  if (got == want) return {};
  return std::string(what) + " holds " + std::to_string(got) + " values, the layout needs " +
         std::to_string(want);
}

}  // namespace

std::string LiftTuning::validate() const {
  auto positive = [](float v) { return std::isfinite(v) && v > 0; };
  if (!positive(scale_mult)) return "scale_mult must be a positive number";
  if (!std::isfinite(thickness) || thickness < 0) return "thickness must be a number >= 0";
  if (!positive(min_scale) || !positive(max_scale) || min_scale > max_scale)
    return "min_scale and max_scale must be positive with min_scale <= max_scale";
  if (!positive(triangle_scale)) return "triangle_scale must be a positive number";
  if (!positive(max_triangle_distance)) return "max_triangle_distance must be a positive number";
  if (!std::isfinite(default_opacity_logit)) return "default_opacity_logit must be a number";
  return {};
}

std::vector<uint32_t> rasterizeUvLayout(std::span<const std::array<float, 2>> uvs,
                                        std::span<const uint32_t> indices, int width, int height) {
  if (width <= 0 || height <= 0) throw Error("UV layout: resolution must be positive");
  std::vector<uint32_t> out(static_cast<size_t>(width) * static_cast<size_t>(height), 0);
  const size_t triangles = indices.size() / 3;
  for (size_t t = 0; t < triangles; ++t) {
    const uint32_t i0 = indices[3 * t], i1 = indices[3 * t + 1], i2 = indices[3 * t + 2];
    if (i0 >= uvs.size() || i1 >= uvs.size() || i2 >= uvs.size())
      throw Error("UV layout: triangle " + std::to_string(t) + " indexes past the vertices");
    // Pixel-space corners; texel centres at (j + 0.5, i + 0.5).
    const double wd = width, hd = height;
    const double ax = uvs[i0][0] * wd, ay = uvs[i0][1] * hd;
    const double bx = uvs[i1][0] * wd, by = uvs[i1][1] * hd;
    const double cx = uvs[i2][0] * wd, cy = uvs[i2][1] * hd;
    const double area = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
    if (!(std::fabs(area) > 1e-12)) continue;
    const int j0 = std::max(0, static_cast<int>(std::floor(std::min({ax, bx, cx}) - 0.5)));
    const int j1 = std::min(width - 1, static_cast<int>(std::ceil(std::max({ax, bx, cx}) - 0.5)));
    const int r0 = std::max(0, static_cast<int>(std::floor(std::min({ay, by, cy}) - 0.5)));
    const int r1 = std::min(height - 1, static_cast<int>(std::ceil(std::max({ay, by, cy}) - 0.5)));
    constexpr double kEdge = -1e-9;  // a centre on a shared edge belongs to the first triangle that claims it
    for (int i = r0; i <= r1; ++i)
      for (int j = j0; j <= j1; ++j) {
        const double px = j + 0.5, py = i + 0.5;
        const double w0 = ((bx - px) * (cy - py) - (by - py) * (cx - px)) / area;
        const double w1 = ((cx - px) * (ay - py) - (cy - py) * (ax - px)) / area;
        const double w2 = 1.0 - w0 - w1;
        if (w0 < kEdge || w1 < kEdge || w2 < kEdge) continue;
        uint32_t& slot = out[static_cast<size_t>(i) * static_cast<size_t>(width) + static_cast<size_t>(j)];
        if (slot == 0) slot = static_cast<uint32_t>(t + 1);
      }
  }
  return out;
}

std::string LiftPass1Job::validate() const {
  if (width <= 0 || height <= 0) return "lift pass 1: the resolution must be positive";
  if (geometry_channels != 3 && geometry_channels != 4)
    return "lift pass 1: the position map must have 3 or 4 channels";
  const size_t n = static_cast<size_t>(width) * static_cast<size_t>(height);
  for (const std::string& e : {checkSize("lift pass 1: the position map", geometry.size(),
                                         n * static_cast<size_t>(geometry_channels)),
                               checkSize("lift pass 1: texel_triangle", texel_triangle.size(), n),
                               checkSize("lift pass 1: out_frame", out_frame.size(), n),
                               checkSize("lift pass 1: out_triim", out_triim.size(), n),
                               checkSize("lift pass 1: out_bounds", out_bounds.size(), n)})
    if (!e.empty()) return e;
  if (indices.size() % 3 != 0) return "lift pass 1: the triangle list's length is not a multiple of 3";
  const size_t triangles = indices.size() / 3;
  for (uint32_t t : texel_triangle)
    if (t > triangles)
      return "lift pass 1: a texel names triangle " + std::to_string(t - 1) + " of " +
             std::to_string(triangles);
  for (uint32_t v : indices)
    if (v >= vertices.size())
      return "lift pass 1: the triangle list indexes vertex " + std::to_string(v) + " of " +
             std::to_string(vertices.size());
  if (std::string e = tuning.validate(); !e.empty()) return "lift pass 1: " + e;
  return {};
}

void LiftPass1Job::run() const {
  if (std::string e = validate(); !e.empty()) throw Error(e);
  const size_t w = static_cast<size_t>(width), h = static_cast<size_t>(height), plane = w * h;
  auto covered = [&](size_t i, size_t j) {
    return texel_triangle[i * w + j] != 0 && finite(texelPosition(geometry, plane, i * w + j));
  };
  // Derivative along one axis: central between two covered neighbours, one-sided with one, none without.
  auto derivative = [&](size_t i, size_t j, bool along_u, Vec3& out) {
    const size_t len = along_u ? w : h, at = along_u ? j : i;
    const bool lo = at > 0 && (along_u ? covered(i, j - 1) : covered(i - 1, j));
    const bool hi = at + 1 < len && (along_u ? covered(i, j + 1) : covered(i + 1, j));
    const size_t k = i * w + j;
    const size_t k_lo = along_u ? k - 1 : k - w, k_hi = along_u ? k + 1 : k + w;
    if (lo && hi)
      out = (texelPosition(geometry, plane, k_hi) - texelPosition(geometry, plane, k_lo)) * 0.5f;
    else if (hi)
      out = texelPosition(geometry, plane, k_hi) - texelPosition(geometry, plane, k);
    else if (lo)
      out = texelPosition(geometry, plane, k) - texelPosition(geometry, plane, k_lo);
    else
      return false;
    return true;
  };
  parallelFor(h, [&](size_t i) {
    for (size_t j = 0; j < w; ++j) {
      const size_t k = i * w + j;
      out_frame[k] = {};
      out_bounds[k] = {tuning.min_scale, tuning.min_scale};
      out_triim[k] = 0;
      if (!covered(i, j)) continue;
      Vec3 du, dv;
      if (!derivative(i, j, true, du) || !derivative(i, j, false, dv)) continue;
      du = du * tuning.scale_mult;
      dv = dv * tuning.scale_mult;
      const Vec3 c = cross(du, dv);
      const float cl = length(c);
      if (!(cl > 0) || !std::isfinite(cl)) continue;
      const Vec3 n = c * (tuning.thickness * std::min(length(du), length(dv)) / cl);
      // The source triangle in the posed mesh.
      const uint32_t t = texel_triangle[k] - 1;
      const Vec3 a = vertices[indices[3 * t]], b = vertices[indices[3 * t + 1]],
                 cc = vertices[indices[3 * t + 2]];
      const float edge = std::max({length(b - a), length(cc - b), length(a - cc)});
      const Vec3 centroid = (a + b + cc) * (1.0f / 3.0f);
      const Vec3 p = texelPosition(geometry, plane, k);
      if (!(length(p - centroid) <= tuning.max_triangle_distance * edge)) continue;
      out_frame[k] = {du.x, du.y, du.z, dv.x, dv.y, dv.z, n.x, n.y, n.z};
      out_bounds[k] = {tuning.min_scale,
                       std::max(tuning.min_scale, std::min(tuning.max_scale, tuning.triangle_scale * edge))};
      out_triim[k] = t + 1;
    }
  });
}

uint8_t opacityByte(float logit) {
  const float s = 1.0f / (1.0f + std::exp(-logit));
  if (!(s >= 0)) return 0;  // a NaN logit: invisible (the GPU pass writes the same byte)
  return static_cast<uint8_t>(std::clamp(255.0f * s, 0.0f, 255.0f));
}

uint8_t colorByte(float x) {
  if (!(x > 0)) return 0;  // NaN and negatives
  return static_cast<uint8_t>(std::floor(0.5f + 255.0f * std::min(x, 1.0f)));
}

std::string LiftPass2Job::validate() const {
  if (width <= 0 || height <= 0) return "lift pass 2: the resolution must be positive";
  if (geometry_channels != 3 && geometry_channels != 4)
    return "lift pass 2: the position map must have 3 or 4 channels";
  if (color_channels != 3 && color_channels != 4)
    return "lift pass 2: the colour map must have 3 or 4 channels";
  const size_t n = static_cast<size_t>(width) * static_cast<size_t>(height);
  for (const std::string& e :
       {checkSize("lift pass 2: the position map", geometry.size(),
                  n * static_cast<size_t>(geometry_channels)),
        checkSize("lift pass 2: the colour map", color.size(), n * static_cast<size_t>(color_channels)),
        checkSize("lift pass 2: frame", frame.size(), n), checkSize("lift pass 2: triim", triim.size(), n),
        checkSize("lift pass 2: bounds", bounds.size(), n),
        checkSize("lift pass 2: out_positions", out_positions.size(), n),
        checkSize("lift pass 2: out_covariances", out_covariances.size(), n),
        checkSize("lift pass 2: out_opacity", out_opacity.size(), n),
        checkSize("lift pass 2: out_rgb", out_rgb.size(), n)})
    if (!e.empty()) return e;
  if (!(decoder_frame.scale > 0) || !std::isfinite(decoder_frame.scale))
    return "lift pass 2: the decoder frame's scale must be positive";
  return {};
}

void LiftPass2Job::run() const {
  if (std::string e = validate(); !e.empty()) throw Error(e);
  const size_t n = static_cast<size_t>(width) * static_cast<size_t>(height);
  const float ws = decoder_frame.worldScale();
  parallelFor(n, [&](size_t k) {
    const Vec3 p = texelPosition(geometry, n, k);
    out_rgb[k] = {colorByte(color[k]) / 255.0f, colorByte(color[n + k]) / 255.0f,
                  colorByte(color[2 * n + k]) / 255.0f};
    if (triim[k] == 0) {
      // Culled: the slot keeps its place, invisible. A finite centre keeps it out of nobody's way.
      out_positions[k] = finite(p) ? decoder_frame.fromDecoder(p) : decoder_frame.center;
      out_covariances[k] = {1e-8f, 0, 0, 1e-8f, 0, 1e-8f};
      out_opacity[k] = 0;
      return;
    }
    const std::array<float, 9>& f = frame[k];
    // F F^T of the frame's columns.
    Mat3 cov;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) cov.m[r][c] = f[r] * f[c] + f[3 + r] * f[3 + c] + f[6 + r] * f[6 + c];
    const ScaleRotation sr = decomposeCovariance(covarianceUpper(cov));
    const auto clampScale = [&](float s) { return std::clamp(s, bounds[k][0], bounds[k][1]) * ws; };
    const Vec3 s{clampScale(sr.scale.x), clampScale(sr.scale.y), clampScale(sr.scale.z)};
    out_covariances[k] = covarianceFromScaleRotation(s, sr.rotation);
    out_positions[k] = decoder_frame.fromDecoder(p);
    const float logit = color_channels == 4      ? color[3 * n + k]
                        : geometry_channels == 4 ? geometry[3 * n + k]
                                                 : default_opacity_logit;
    out_opacity[k] = opacityByte(logit) / 255.0f;
  });
}

void plueckerRays(std::span<const float> geometry, int width, int height, Vec3 eye, std::span<float> out) {
  const size_t n = static_cast<size_t>(width) * static_cast<size_t>(height);
  if (geometry.size() < 3 * n || out.size() != 6 * n)
    throw Error("pluecker rays: the position map or the output has the wrong size");
  for (size_t k = 0; k < n; ++k) {
    const Vec3 p = texelPosition(geometry, n, k);
    Vec3 d{0, 0, 0}, m{0, 0, 0};
    const float len = length(p - eye);
    if (finite(p) && len > 0 && std::isfinite(len)) {
      d = (p - eye) * (1.0f / len);
      m = cross(eye, d);
    }
    const float v[6] = {d.x, d.y, d.z, m.x, m.y, m.z};
    for (size_t c = 0; c < 6; ++c) out[c * n + k] = v[c];
  }
}

}  // namespace sf::character
