// Small fixed-size math for the engine: 3-vectors, quaternions (w, x, y, z), row-major 3x3 and 4x4
// matrices. Kept deliberately tiny so that every translation unit can include it cheaply.
#pragma once

#include <cmath>
#include <cstdint>

namespace sf {

struct Vec3 {
  float x = 0, y = 0, z = 0;

  constexpr Vec3() = default;
  constexpr Vec3(float x_, float y_, float z_) : x(x_), y(y_), z(z_) {}

  constexpr float operator[](int i) const { return i == 0 ? x : (i == 1 ? y : z); }
  constexpr float& operator[](int i) { return i == 0 ? x : (i == 1 ? y : z); }
};

constexpr Vec3 operator+(Vec3 a, Vec3 b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z};
}
constexpr Vec3 operator-(Vec3 a, Vec3 b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z};
}
constexpr Vec3 operator-(Vec3 a) {
  return {-a.x, -a.y, -a.z};
}
constexpr Vec3 operator*(Vec3 a, float s) {
  return {a.x * s, a.y * s, a.z * s};
}
constexpr Vec3 operator*(float s, Vec3 a) {
  return {a.x * s, a.y * s, a.z * s};
}
constexpr Vec3 operator/(Vec3 a, float s) {
  return {a.x / s, a.y / s, a.z / s};
}
constexpr Vec3 mul(Vec3 a, Vec3 b) {
  return {a.x * b.x, a.y * b.y, a.z * b.z};
}
constexpr float dot(Vec3 a, Vec3 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
constexpr Vec3 cross(Vec3 a, Vec3 b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
inline float length(Vec3 a) {
  return std::sqrt(dot(a, a));
}
inline Vec3 normalize(Vec3 a) {
  float len = length(a);
  return len > 0 ? a / len : Vec3{0, 0, 0};
}

// Unit quaternion for rotations, stored (w, x, y, z) everywhere in the engine.
struct Quat {
  float w = 1, x = 0, y = 0, z = 0;
};

inline Quat normalize(Quat q) {
  float len = std::sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
  if (!(len > 0)) return Quat{};
  return {q.w / len, q.x / len, q.y / len, q.z / len};
}

constexpr Quat operator*(Quat a, Quat b) {
  return {a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z, a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
          a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x, a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w};
}

// Row-major 3x3 matrix: m[row][col].
struct Mat3 {
  float m[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};

  static constexpr Mat3 diagonal(Vec3 d) {
    Mat3 r;
    r.m[0][0] = d.x;
    r.m[1][1] = d.y;
    r.m[2][2] = d.z;
    return r;
  }
  constexpr Vec3 row(int r) const { return {m[r][0], m[r][1], m[r][2]}; }
  constexpr Vec3 col(int c) const { return {m[0][c], m[1][c], m[2][c]}; }
};

constexpr Mat3 operator*(const Mat3& a, const Mat3& b) {
  Mat3 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      r.m[i][j] = a.m[i][0] * b.m[0][j] + a.m[i][1] * b.m[1][j] + a.m[i][2] * b.m[2][j];
  return r;
}
constexpr Vec3 operator*(const Mat3& a, Vec3 v) {
  return {dot(a.row(0), v), dot(a.row(1), v), dot(a.row(2), v)};
}
constexpr Mat3 transpose(const Mat3& a) {
  Mat3 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r.m[i][j] = a.m[j][i];
  return r;
}
constexpr float determinant(const Mat3& a) {
  return dot(a.row(0), cross(a.row(1), a.row(2)));
}

// Row-major 4x4 affine or projective matrix: m[row][col]; points are column vectors (p' = M p).
struct Mat4 {
  float m[4][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};

  constexpr Mat3 linear() const {
    Mat3 r;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) r.m[i][j] = m[i][j];
    return r;
  }
  constexpr Vec3 translation() const { return {m[0][3], m[1][3], m[2][3]}; }
  static constexpr Mat4 fromLinearTranslation(const Mat3& l, Vec3 t) {
    Mat4 r;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) r.m[i][j] = l.m[i][j];
      r.m[i][3] = t[i];
    }
    return r;
  }
};

constexpr Mat4 operator*(const Mat4& a, const Mat4& b) {
  Mat4 r;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      float s = 0;
      for (int k = 0; k < 4; ++k) s += a.m[i][k] * b.m[k][j];
      r.m[i][j] = s;
    }
  return r;
}
// Transforms a point (w = 1) by an affine matrix.
constexpr Vec3 transformPoint(const Mat4& a, Vec3 p) {
  return {a.m[0][0] * p.x + a.m[0][1] * p.y + a.m[0][2] * p.z + a.m[0][3],
          a.m[1][0] * p.x + a.m[1][1] * p.y + a.m[1][2] * p.z + a.m[1][3],
          a.m[2][0] * p.x + a.m[2][1] * p.y + a.m[2][2] * p.z + a.m[2][3]};
}

// Inverse of a general 3x3 matrix; the matrix must be invertible.
Mat3 inverse(const Mat3& a);
// Inverse of an affine 4x4 matrix (last row 0 0 0 1); the linear part must be invertible.
Mat4 inverseAffine(const Mat4& a);

// A 32-bit integer hash (a "lowbias32" mixer): well-spread bits for per-element random values that must not
// depend on thread count or order.
constexpr uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// Rotation matrix of a quaternion (normalised first; a zero quaternion gives the identity).
Mat3 rotationMatrix(Quat q);
// Quaternion of a proper rotation matrix (det +1), with w >= 0.
Quat quatFromRotationMatrix(const Mat3& r);

}  // namespace sf
