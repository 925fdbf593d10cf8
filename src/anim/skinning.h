// CPU vertex deformation: morph targets, then skinning by linear blending of matrices (LBS) or by dual
// quaternions (DQS). These are the reference implementations for the GPU passes.
//
// Order (glTF 2.0, "Morph Targets" and "Skins"): morph targets are applied to the bind-pose attributes
// first, then the morphed vertices are skinned.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "core/math.h"

namespace sf::anim {

using JointIndices4 = std::array<uint16_t, 4>;
using JointWeights4 = std::array<float, 4>;

// One morph target's per-vertex deltas; an empty span means the target does not move that attribute.
struct MorphTargetView {
  std::span<const Vec3> positions;
  std::span<const Vec3> normals;
};

// out = base + sum_t weight[t] * delta_t, for positions and (when given) normals. Normals are not
// renormalised here (skinning does it).
struct MorphJob {
  std::span<const Vec3> positions;           // base positions
  std::span<const Vec3> normals;             // base normals, or empty
  std::span<const MorphTargetView> targets;  // each span empty or positions.size() long
  std::span<const float> weights;            // one per target
  std::span<Vec3> out_positions;             // positions.size(); may alias nothing else
  std::span<Vec3> out_normals;               // normals.size() (empty when normals is empty)

  std::string validate() const;
  void run() const;  // validates first; throws sf::Error with the reason when invalid
};

// A palette matrix split for dual-quaternion skinning: matrix = [rotation | translation] * stretch, where
// stretch holds scale and shear (upper triangular, from a QR decomposition of the linear part).
struct DualQuatJoint {
  Quat real;  // rotation
  Quat dual;  // 0.5 * (0, translation) * real
  Mat3 stretch;
};

// Converts a joint palette (affine matrices) for dual-quaternion skinning.
struct DualQuatPaletteJob {
  std::span<const Mat4> palette;
  std::span<DualQuatJoint> output;  // palette.size()

  std::string validate() const;
  void run() const;
};

enum class SkinningMethod { kLinearBlend, kDualQuaternion };

// Skins positions and normals with 4 influences per vertex (8 with the second joint/weight set). Weights
// are renormalised to sum to 1; a vertex whose weights sum to 0 is copied unchanged. Normals use the
// inverse transpose of the blended linear part and are normalised.
//   LBS: p' = (sum_i w_i M_i) p.
//   DQS (Kavan et al. 2008, "Geometric skinning with approximate dual quaternion blending"): stretch
//   matrices are blended linearly and applied first, then the sign-aligned weighted sum of the joints'
//   dual quaternions, normalised. Keeps volume where LBS collapses (twists near 180 degrees).
struct SkinningJob {
  SkinningMethod method = SkinningMethod::kLinearBlend;
  std::span<const Mat4> palette;              // LBS: joint palette
  std::span<const DualQuatJoint> dq_palette;  // DQS: DualQuatPaletteJob output
  std::span<const Vec3> positions;
  std::span<const Vec3> normals;  // or empty
  std::span<const JointIndices4> joints0;
  std::span<const JointWeights4> weights0;
  std::span<const JointIndices4> joints1;  // optional second set (empty, or positions.size())
  std::span<const JointWeights4> weights1;
  std::span<Vec3> out_positions;  // positions.size()
  std::span<Vec3> out_normals;    // normals.size()

  // Checks sizes and that every joint index lies inside the palette (one pass over the influences).
  std::string validate() const;
  void run() const;  // validates first; throws sf::Error with the reason when invalid
};

}  // namespace sf::anim
