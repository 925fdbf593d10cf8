#include "core/math.h"

namespace sf {

Mat3 inverse(const Mat3& a) {
  Vec3 r0 = a.row(0), r1 = a.row(1), r2 = a.row(2);
  Vec3 c0 = cross(r1, r2), c1 = cross(r2, r0), c2 = cross(r0, r1);
  float inv_det = 1.0f / dot(r0, c0);
  Mat3 r;
  for (int i = 0; i < 3; ++i) {
    r.m[i][0] = c0[i] * inv_det;
    r.m[i][1] = c1[i] * inv_det;
    r.m[i][2] = c2[i] * inv_det;
  }
  return r;
}

Mat4 inverseAffine(const Mat4& a) {
  Mat3 li = inverse(a.linear());
  return Mat4::fromLinearTranslation(li, -(li * a.translation()));
}

Mat3 rotationMatrix(Quat q) {
  q = normalize(q);
  float w = q.w, x = q.x, y = q.y, z = q.z;
  Mat3 r;
  r.m[0][0] = 1 - 2 * (y * y + z * z);
  r.m[0][1] = 2 * (x * y - w * z);
  r.m[0][2] = 2 * (x * z + w * y);
  r.m[1][0] = 2 * (x * y + w * z);
  r.m[1][1] = 1 - 2 * (x * x + z * z);
  r.m[1][2] = 2 * (y * z - w * x);
  r.m[2][0] = 2 * (x * z - w * y);
  r.m[2][1] = 2 * (y * z + w * x);
  r.m[2][2] = 1 - 2 * (x * x + y * y);
  return r;
}

Quat quatFromRotationMatrix(const Mat3& r) {
  // Shepperd's method: pick the largest of w, x, y, z to divide by, for stability.
  float trace = r.m[0][0] + r.m[1][1] + r.m[2][2];
  Quat q;
  if (trace > 0) {
    float s = std::sqrt(trace + 1.0f) * 2;
    q = {0.25f * s, (r.m[2][1] - r.m[1][2]) / s, (r.m[0][2] - r.m[2][0]) / s, (r.m[1][0] - r.m[0][1]) / s};
  } else if (r.m[0][0] > r.m[1][1] && r.m[0][0] > r.m[2][2]) {
    float s = std::sqrt(1.0f + r.m[0][0] - r.m[1][1] - r.m[2][2]) * 2;
    q = {(r.m[2][1] - r.m[1][2]) / s, 0.25f * s, (r.m[0][1] + r.m[1][0]) / s, (r.m[0][2] + r.m[2][0]) / s};
  } else if (r.m[1][1] > r.m[2][2]) {
    float s = std::sqrt(1.0f + r.m[1][1] - r.m[0][0] - r.m[2][2]) * 2;
    q = {(r.m[0][2] - r.m[2][0]) / s, (r.m[0][1] + r.m[1][0]) / s, 0.25f * s, (r.m[1][2] + r.m[2][1]) / s};
  } else {
    float s = std::sqrt(1.0f + r.m[2][2] - r.m[0][0] - r.m[1][1]) * 2;
    q = {(r.m[1][0] - r.m[0][1]) / s, (r.m[0][2] + r.m[2][0]) / s, (r.m[1][2] + r.m[2][1]) / s, 0.25f * s};
  }
  if (q.w < 0) q = {-q.w, -q.x, -q.y, -q.z};
  return normalize(q);
}

}  // namespace sf
