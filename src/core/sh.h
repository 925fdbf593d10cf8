// Real spherical harmonics up to degree 3, with the constants and sign conventions of the INRIA 3DGS
// implementation (Kerbl et al., "3D Gaussian Splatting for Real-Time Radiance Field Rendering", 2023).
#pragma once

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

}  // namespace sf
