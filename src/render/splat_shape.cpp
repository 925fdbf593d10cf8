#include "render/splat_shape.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "render/gpu_shared.h"

namespace sf {
namespace {

// Signed distance from (x, y), folded into the sector of one edge (x along its normal, y >= 0 along it), to
// a regular polygon's edge of apothem `apothem` and half length `half`: the edge inside its extent, its end
// vertex beyond it.
float polygonDistance(float x, float y, float apothem, float half) {
  if (y <= half) return x - apothem;
  const float ex = x - apothem, ey = y - half;
  return std::sqrt(ex * ex + ey * ey);
}

}  // namespace

uint32_t splatShapeWord(SplatShapeClass cls, uint32_t sides, uint32_t rotation) {
  const uint32_t c = static_cast<uint32_t>(cls) & 3u;
  if (c == SF_SHAPE_GAUSSIAN) return 0;
  return SF_SHAPE_WORD(c, std::clamp(sides, 5u, 7u), rotation & 255u);
}

float splatShapeCoverage(uint32_t word, float dx, float dy, float a, float b, float c) {
  constexpr float kPi = std::numbers::pi_v<float>;
  const float radius = static_cast<float>(SF_SHAPE_RADIUS);
  // u = L^T d with Q = L L^T (Cholesky of the 2x2 conic).
  const float sa = std::sqrt(a);
  const float ux = sa * dx + (b / sa) * dy, uy = std::sqrt(std::max(c - b * b / a, 0.0f)) * dy;
  const float r = std::sqrt(ux * ux + uy * uy);
  if (!(r > 0.0f)) return 1.0f;  // the centre lies inside every shape (the raster's atan(0, 0) is undefined)
  const uint32_t cls = word & 3u;
  float sd;
  if (cls == SF_SHAPE_DISC) {
    sd = r - radius;
  } else {
    const uint32_t sides = cls == SF_SHAPE_ROUNDED_HEX ? 6u : std::min(5u + ((word >> 2) & 3u), 7u);
    const float sector = 2.0f * kPi / static_cast<float>(sides);
    float t = std::atan2(uy, ux) - static_cast<float>((word >> 4) & 255u) * (2.0f * kPi / 256.0f);
    t -= sector * std::floor(t / sector) + 0.5f * sector;  // the angle from the nearest edge's normal
    const float x = r * std::cos(t), y = std::abs(r * std::sin(t));
    const float corner = cls == SF_SHAPE_ROUNDED_HEX ? static_cast<float>(SF_SHAPE_CORNER) * radius : 0.0f;
    const float apothem = radius * std::cos(0.5f * sector) - corner;
    sd = polygonDistance(x, y, apothem, apothem * std::tan(0.5f * sector)) - corner;
  }
  return std::clamp(0.5f - sd / static_cast<float>(SF_SHAPE_EDGE), 0.0f, 1.0f);
}

}  // namespace sf
