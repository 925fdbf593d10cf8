// Spherical harmonics with the INRIA 3DGS constants (sh_utils.py / forward.cu).
#include "core/sh.h"

#include <algorithm>

#include "core/gaussian_cloud.h"
#include "core/half.h"

namespace sf {

namespace {
constexpr float kC0 = kShC0;
constexpr float kC1 = 0.4886025119029199f;
constexpr float kC2[5] = {1.0925484305920792f, -1.0925484305920792f, 0.31539156525252005f,
                          -1.0925484305920792f, 0.5462742152960396f};
constexpr float kC3[7] = {-0.5900435899266435f, 2.890611442640554f, -0.4570457994644658f, 0.3731763325901154f,
                          -0.4570457994644658f, 1.445305721320277f, -0.5900435899266435f};
}  // namespace

void shBasis(int degree, Vec3 dir, float* basis) {
  basis[0] = kC0;
  if (degree < 1) return;
  float x = dir.x, y = dir.y, z = dir.z;
  basis[1] = -kC1 * y;
  basis[2] = kC1 * z;
  basis[3] = -kC1 * x;
  if (degree < 2) return;
  float xx = x * x, yy = y * y, zz = z * z, xy = x * y, yz = y * z, xz = x * z;
  basis[4] = kC2[0] * xy;
  basis[5] = kC2[1] * yz;
  basis[6] = kC2[2] * (2.0f * zz - xx - yy);
  basis[7] = kC2[3] * xz;
  basis[8] = kC2[4] * (xx - yy);
  if (degree < 3) return;
  basis[9] = kC3[0] * y * (3.0f * xx - yy);
  basis[10] = kC3[1] * xy * z;
  basis[11] = kC3[2] * y * (4.0f * zz - xx - yy);
  basis[12] = kC3[3] * z * (2.0f * zz - 3.0f * xx - 3.0f * yy);
  basis[13] = kC3[4] * x * (4.0f * zz - xx - yy);
  basis[14] = kC3[5] * z * (xx - yy);
  basis[15] = kC3[6] * x * (xx - 3.0f * yy);
}

Vec3 evalSh(int degree, const float* coeffs, Vec3 dir) {
  float basis[16];
  shBasis(degree, dir, basis);
  int n = (degree + 1) * (degree + 1);
  Vec3 sum{0, 0, 0};
  for (int k = 0; k < n; ++k) {
    sum.x += basis[k] * coeffs[3 * k + 0];
    sum.y += basis[k] * coeffs[3 * k + 1];
    sum.z += basis[k] * coeffs[3 * k + 2];
  }
  return sum;
}

Vec3 shSumToColor(Vec3 sum) {
  return {std::max(sum.x + 0.5f, 0.0f), std::max(sum.y + 0.5f, 0.0f), std::max(sum.z + 0.5f, 0.0f)};
}

Vec3 shToColor(int degree, const float* coeffs, Vec3 dir) {
  return shSumToColor(evalSh(degree, coeffs, normalize(dir)));
}

size_t halfShWords(size_t floats) {
  const size_t words = 3 + (floats - 3 + 1) / 2;
  return (words + 3) / 4 * 4;
}

// Rounded in the float's own bits (the CPU renderer rounds every coefficient of every splat each frame): ties
// to even at the half's 10 mantissa bits, the half subnormal range (below 2^-14) to signed zero, or to 2^-14
// from its rounding threshold up. The same value as rounding through floatToHalf with the subnormals flushed,
// checked for all 2^32 floats when it was written.
float shHalf(float c) {
  const uint32_t x = floatBits(c), sign = x & 0x80000000u, a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return c;                              // infinity, NaN
  if (a >= 0x477fe000u) return bitsFloat(sign | 0x477fe000u);  // saturate at 65504
  if (a < 0x38800000u) return bitsFloat(sign | (a >= 0x387fe000u ? 0x38800000u : 0u));
  return bitsFloat(sign | ((a + 0xfffu + ((a >> 13) & 1u)) & ~0x1fffu));
}

uint16_t shHalfBits(float c) {
  return floatToHalf(shHalf(c));  // exact: shHalf's values are halves
}

void packHalfSh(const float* coeffs, size_t floats, uint32_t* words) {
  const size_t n = halfShWords(floats);
  std::fill(words, words + n, 0u);
  for (size_t k = 0; k < 3; ++k) words[k] = floatBits(coeffs[k]);
  for (size_t k = 3; k < floats; ++k)
    words[3 + (k - 3) / 2] |= static_cast<uint32_t>(shHalfBits(coeffs[k])) << ((k - 3) % 2 * 16);
}

void roundHalfSh(const float* coeffs, size_t floats, float* out) {
  for (size_t k = 0; k < floats; ++k) out[k] = k < 3 ? coeffs[k] : shHalf(coeffs[k]);
}

}  // namespace sf
