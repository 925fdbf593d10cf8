// GaussianCloud: the engine's in-memory set of 3D gaussians, as a structure of arrays.
//
// Storage is *activated* (what the renderer consumes), not the logit/log space some files use:
//  - scales are linear standard deviations in the cloud's units (metres for our own scenes);
//  - opacities are in [0, 1];
//  - rotations are unit quaternions (w, x, y, z);
//  - SH coefficients are the raw spherical-harmonic coefficients (the DC term is NOT converted to a
//    colour): colour = max(eval_sh + 0.5, 0), as in the INRIA 3DGS forward pass.
// Readers of formats that store log-scales / logit-opacities convert at load; writers convert back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/math.h"

namespace sf {

// Variances (pixels^2) of the screen-space filter added to every projected covariance (GaussianCloud::
// screen_filter): INRIA's dilation (and gsplat's), and Mip-Splatting's 2D mip filter (a one-pixel box
// approximated by a gaussian).
constexpr float kScreenFilterInria = 0.3f;
constexpr float kScreenFilterMip = 0.1f;

// Number of SH coefficients per colour channel for a degree (0..3): 1, 4, 9, 16.
constexpr int shCoeffCount(int degree) {
  return (degree + 1) * (degree + 1);
}

// Whether the colours a cloud's SH evaluate to are display-encoded (sRGB, as 3DGS captures are trained
// against sRGB photographs) or linear.
enum class ColorSpace : uint8_t { kSrgb, kLinear };

// Scalar type of an extra per-splat channel, as a file stored it (so it can be written back unchanged).
enum class ScalarType : uint8_t { kInt8, kUint8, kInt16, kUint16, kInt32, kUint32, kFloat32, kFloat64 };

// A per-splat channel the engine does not interpret (e.g. an unknown PLY property), kept so that a
// PLY -> PLY conversion preserves it. Values are held as double, which represents every type exactly.
struct ExtraChannel {
  std::string name;
  ScalarType type = ScalarType::kFloat32;
  std::vector<double> values;
};

struct GaussianCloud {
  std::vector<Vec3> positions;
  std::vector<Vec3> scales;      // linear standard deviations along the local axes
  std::vector<Quat> rotations;   // unit quaternions (w, x, y, z)
  std::vector<float> opacities;  // [0, 1]
  int sh_degree = 0;             // 0..3
  std::vector<float> sh;         // size() * shCoeffCount(sh_degree) * 3, laid out [splat][coeff][rgb]

  // Optional channels: empty, or one entry per splat.
  std::vector<Vec3> normals;
  std::vector<int32_t> ids;
  std::vector<ExtraChannel> extras;

  ColorSpace color_space = ColorSpace::kSrgb;
  // The screen-space filter the cloud was trained with: its variance in pixels^2, added to each projected
  // covariance (kScreenFilterInria: INRIA's dilation, also gsplat's antialiased mode; kScreenFilterMip:
  // Mip-Splatting's 2D mip filter), and whether the opacity is compensated by the determinant ratio
  // (antialiased: gsplat's "antialiased" mode, Mip-Splatting, SPZ's antialiased flag, SOG's "antialiased"
  // model, PLY's "SplatRenderMode: mip" comment).
  bool antialiased = false;
  float screen_filter = kScreenFilterInria;

  size_t size() const { return positions.size(); }
  int shStride() const { return shCoeffCount(sh_degree) * 3; }

  // Resizes every mandatory array to n splats with SH degree `degree`; new splats are unit-scale,
  // identity-rotation, fully opaque and black. Optional channels are cleared.
  void resize(size_t n, int degree);

  // SH coefficients of splat i: shCoeffCount(sh_degree) * 3 floats, [coeff][rgb].
  std::span<float> shOf(size_t i) { return {sh.data() + i * shStride(), static_cast<size_t>(shStride())}; }
  std::span<const float> shOf(size_t i) const {
    return {sh.data() + i * shStride(), static_cast<size_t>(shStride())};
  }

  // Empty string when the arrays are consistent; otherwise what is wrong.
  std::string validate() const;

  // Bytes held by the arrays.
  size_t memoryBytes() const;
};

// Non-finite values (NaN, +-inf) in a cloud: how many rows hold one, and the first such row and field
// ("position", "scale", "rotation", "opacity", "sh[k] (colour c)", "normal", "id" never, "extra <name>").
struct NonFiniteReport {
  size_t rows = 0;
  size_t first_row = 0;
  std::string first_field;
  std::vector<uint8_t> bad;  // per row: 1 when the row holds a non-finite value (empty when rows == 0)

  // "R of TOTAL gaussians hold non-finite values (NaN or infinity; first: row N, FIELD)", for messages.
  std::string describe(size_t total) const;
};
NonFiniteReport findNonFinite(const GaussianCloud& cloud);

// Removes the rows whose `drop` entry is non-zero from every array, optional channels included.
void eraseRows(GaussianCloud& cloud, std::span<const uint8_t> drop);

// Places a cloud in the space of the affine map m, as KHR_gaussian_splatting's M C C^T M^T says:
// positions are transformed by m; when m's linear part is a rotation times a uniform scale s, rotations are
// composed with that rotation and scales multiplied by s (an identity m leaves every value bit for bit);
// otherwise (non-uniform scale or shear) each covariance M Sigma M^T is baked and decomposed again into
// scale and rotation; SH coefficients of degree >= 1 are rotated by m's rotation. Throws sf::Error when m
// mirrors (negative determinant) or collapses an axis (zero scale).
void transformCloud(GaussianCloud& cloud, const Mat4& m);

// Re-expresses a cloud in other axes: `axes` is a signed permutation matrix (each row and column holds one
// +-1) taking coordinates in the cloud's axes to coordinates in the new axes, mirrors included (RDF <-> RDB).
// Exact: positions and normals are multiplied by `axes`, scales permuted, quaternions re-expressed
// (w, det(axes) * axes * v) so that every covariance becomes axes * Sigma * axes^T, and SH coefficients
// rotated so that the colour seen along axes * d is the colour seen along d before (pure sign flips, the
// common case, change signs only). Throws sf::Error for a matrix that is not a signed permutation.
void changeAxes(GaussianCloud& cloud, const Mat3& axes);

// The parts concatenated in order, with the highest SH degree of any part (others padded with zero
// coefficients) and the first part's colour space and antialiased flag; optional channels (normals, ids,
// extras) are dropped. Callers check that the parts agree on colour space where it matters.
GaussianCloud mergeClouds(std::span<const GaussianCloud* const> parts);

// SH DC coefficient <-> colour in [0, 1] (colour = 0.5 + C0 * dc).
constexpr float kShC0 = 0.28209479177387814f;
constexpr float shDcToColor(float dc) {
  return 0.5f + kShC0 * dc;
}
constexpr float colorToShDc(float c) {
  return (c - 0.5f) / kShC0;
}

// Writers store a zero-size axis as this scale, so that log-scales stay finite.
constexpr float kMinStoredScale = 1e-30f;

// Logistic helpers for files that store opacity as a logit.
float sigmoid(float x);
// Inverse of sigmoid; p is clamped to [1e-7, 1 - 1e-7] so that the result is finite.
float logit(float p);

// Axis-aligned bounds and percentile bounds of the positions.
struct CloudBounds {
  Vec3 min, max;  // exact extent
  Vec3 p01, p99;  // 1st and 99th percentile per axis
};
// Bounds of a non-empty cloud.
CloudBounds computeBounds(const GaussianCloud& cloud);

}  // namespace sf
