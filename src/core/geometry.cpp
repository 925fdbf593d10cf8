#include "core/geometry.h"

#include <algorithm>
#include <utility>

namespace sf {

namespace {

Vec3 closestOnSegment(Vec3 p, Vec3 a, Vec3 b) {
  const Vec3 ab = b - a;
  const float len2 = dot(ab, ab);
  if (!(len2 > 0)) return a;
  return a + ab * std::clamp(dot(p - a, ab) / len2, 0.0f, 1.0f);
}

Vec3 closestOnDegenerate(Vec3 p, Vec3 a, Vec3 b, Vec3 c) {
  Vec3 best = closestOnSegment(p, a, b);
  float best_d2 = dot(p - best, p - best);
  for (const auto& [u, v] : {std::pair{b, c}, std::pair{c, a}}) {
    const Vec3 q = closestOnSegment(p, u, v);
    const float d2 = dot(p - q, p - q);
    if (d2 < best_d2) best = q, best_d2 = d2;
  }
  return best;
}

}  // namespace

Vec3 closestPointOnTriangle(Vec3 p, Vec3 a, Vec3 b, Vec3 c) {
  const Vec3 ab = b - a, ac = c - a;
  const Vec3 n = cross(ab, ac);
  if (dot(n, n) == 0) return closestOnDegenerate(p, a, b, c);
  const Vec3 ap = p - a;
  const float d1 = dot(ab, ap), d2 = dot(ac, ap);
  if (d1 <= 0 && d2 <= 0) return a;
  const Vec3 bp = p - b;
  const float d3 = dot(ab, bp), d4 = dot(ac, bp);
  if (d3 >= 0 && d4 <= d3) return b;
  const float vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    const float den = d1 - d3;
    return a + ab * (den > 0 ? std::min(d1 / den, 1.0f) : 0.0f);
  }
  const Vec3 cp = p - c;
  const float d5 = dot(ab, cp), d6 = dot(ac, cp);
  if (d6 >= 0 && d5 <= d6) return c;
  const float vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    const float den = d2 - d6;
    return a + ac * (den > 0 ? std::min(d2 / den, 1.0f) : 0.0f);
  }
  const float va = d3 * d6 - d5 * d4;
  if (va <= 0 && d4 - d3 >= 0 && d5 - d6 >= 0) {
    const float den = (d4 - d3) + (d5 - d6);
    return b + (c - b) * (den > 0 ? std::min((d4 - d3) / den, 1.0f) : 0.0f);
  }
  const float sum = va + vb + vc;
  if (!(sum > 0)) return closestOnDegenerate(p, a, b, c);
  const float v = vb / sum, w = vc / sum;
  return a + ab * v + ac * w;
}

}  // namespace sf
