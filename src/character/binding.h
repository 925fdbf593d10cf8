// Splat bindings: how each gaussian of a splat character follows a deforming, skinned surface
// (docs/formats/character.md, "Binding model").
//
// Triangle frame. For a triangle (v0, v1, v2) let e1 = v1 - v0, e2 = v2 - v0, c = e1 x e2 and
// n = c / sqrt(|c|): the normal scaled to the length of an edge (it grows with the square root of the
// area). The frame matrix is B = [e1 e2 n] (columns). Between rest (B) and deformed (B') the triangle's
// deformation gradient is F = B' B^-1: a rigid motion gives F = R exactly; stretching the triangle by s
// along e1 gives F = diag(s, 1, sqrt(s)) in (e1, e2, n).
//
// Triangle binding: barycentrics (b0, b1, b2) of the splat centre's projection on the triangle's plane,
// the height h along n (in units of |n|, so the offset scales with the surface) and the rest covariance
// in frame coordinates, L = B^-1 Sigma B^-T. Deformed: centre' = b0 v0' + b1 v1' + b2 v2' + h n',
// Sigma' = B' L B'^T = F Sigma F^T.
//
// Joint binding: up to 4 joints and weights of a skin; the blended matrix M = sum w_i palette_i (weights
// renormalised) gives centre' = M centre_rest and Sigma' = A Sigma_rest A^T with A = M's linear part.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/covariance.h"
#include "core/math.h"

namespace sf::character {

enum class BindingKind : uint32_t { kTriangle = 0, kJoints = 1 };

struct SplatBinding {
  BindingKind kind = BindingKind::kTriangle;
  uint32_t triangle = 0;                       // kTriangle: index into the mesh's triangle list
  std::array<uint16_t, 4> joints{0, 0, 0, 0};  // kJoints: skin joint indices
  std::array<float, 4> weights{0, 0, 0, 0};    // kJoints: weights (renormalised when applied)
  // kTriangle: b1, b2 (b0 = 1 - b1 - b2) and h. kJoints: the rest centre (x, y, z).
  std::array<float, 3> coords{0, 0, 0};
  Cov6 covariance{};  // kTriangle: L in frame coordinates; kJoints: the rest covariance
};

// Frame matrix B = [e1 e2 n] of a triangle (columns). Degenerate triangles give a singular matrix.
Mat3 triangleFrame(Vec3 v0, Vec3 v1, Vec3 v2);

// Binds a splat (rest centre and covariance, mesh space) to triangle `t` of the rest mesh. Throws
// sf::Error when the triangle is degenerate (zero area).
SplatBinding bindToTriangle(Vec3 centre, const Cov6& covariance, uint32_t t, Vec3 v0, Vec3 v1, Vec3 v2);
// Binds a splat to joints (indices into the skin's palette) with the given weights.
SplatBinding bindToJoints(Vec3 centre, const Cov6& covariance, std::array<uint16_t, 4> joints,
                          std::array<float, 4> weights);

// Finds, for every point, the triangle of a mesh whose surface is nearest (uniform-grid search), and the
// barycentrics of the nearest surface point. Triangles of zero area are never chosen. Returns the triangle
// index per point.
std::vector<uint32_t> nearestTriangles(std::span<const Vec3> points, std::span<const Vec3> vertices,
                                       std::span<const uint32_t> indices);

// Deforms bound splats (the CPU reference of the GPU deform pass): triangle bindings read the deformed
// vertices of the same triangle list they were bound to; joint bindings read `palette`. Writes mesh-space
// centres and covariances.
struct DeformJob {
  std::span<const SplatBinding> bindings;
  std::span<const Vec3> vertices;     // deformed positions of the bound mesh
  std::span<const uint32_t> indices;  // its triangle list (3 per triangle)
  std::span<const Mat4> palette;      // skin palette, for joint bindings (may be empty when there are none)
  std::span<Vec3> out_positions;      // bindings.size()
  std::span<Cov6> out_covariances;    // bindings.size()

  std::string validate() const;  // empty when fine, otherwise why
  void run() const;              // validates, then deforms (parallel); throws sf::Error with the reason
};

// Wire size of one binding record in bindings.bin (docs/formats/character.md).
constexpr size_t kBindingRecordBytes = 68;
std::vector<uint8_t> encodeBindings(std::span<const SplatBinding> bindings);
// Decodes bindings.bin; errors name `name`, the record index and byte offset.
std::vector<SplatBinding> decodeBindings(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace sf::character
