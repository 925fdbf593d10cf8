// Real spherical harmonics up to degree 3, with the constants and sign conventions of the INRIA 3DGS
// implementation (Kerbl et al., "3D Gaussian Splatting for Real-Time Radiance Field Rendering", 2023).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/math.h"

namespace sf {

// Number of SH basis functions for a degree is (degree + 1)^2; see shCoeffCount in gaussian_cloud.h.

// Evaluates the first (degree + 1)^2 real SH basis functions at unit direction `dir` into `basis`.
// basis must hold 16 floats.
void shBasis(int degree, Vec3 dir, float* basis);

// Sum over basis functions of coeffs[k][rgb] * basis_k(dir), for a unit direction.
// coeffs holds (degree + 1)^2 * 3 floats laid out [coeff][rgb]. Returns the raw sum, without the +0.5
// offset or clamping the renderer applies.
Vec3 evalSh(int degree, const float* coeffs, Vec3 dir);

// The colour of a raw evalSh sum: max(sum + 0.5, 0) per channel.
Vec3 shSumToColor(Vec3 sum);

// Colour of a splat seen along `dir` (from the camera towards the splat, normalised here):
// shSumToColor(evalSh(...)).
Vec3 shToColor(int degree, const float* coeffs, Vec3 dir);

// Coefficients of one splat at the highest degree (3): 16 basis functions, rgb each.
constexpr size_t kMaxShFloats = 48;

// The frame's half-precision SH (RenderSettings::half_sh): a splat's DC colour stays 3 floats, its higher
// bands (coefficients 3..) are stored as IEEE half floats, two a 32-bit word (word 3 + m holds coefficients
// 3 + 2m in its low and 4 + 2m in its high 16 bits), the words padded to a multiple of 4 (16-byte loads).
// SH 3: 28 words (112 bytes) a splat instead of 48 floats (192). Each stored value is shHalf(c).
size_t halfShWords(size_t floats);  // words a splat of `floats` coefficients takes (floats >= 3)
// A coefficient as the half layout keeps it: rounded to the nearest half (ties to even); finite values
// beyond the half range saturate to +-65504 (a splat drawn at full precision is never dropped for it),
// half subnormals become signed zero (every device reads the same value), infinities and NaN stay.
float shHalf(float c);
uint16_t shHalfBits(float c);
// One splat's `floats` coefficients in the half layout (halfShWords(floats) words).
void packHalfSh(const float* coeffs, size_t floats, uint32_t* words);
// The coefficients the half layout draws with: the DC as given, every higher one shHalf'd (the CPU
// renderer's path to the same colours as the GPU's).
void roundHalfSh(const float* coeffs, size_t floats, float* out);

}  // namespace sf
