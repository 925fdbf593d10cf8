// A mesh to deform this frame: morph targets, then linear-blend or dual-quaternion skinning with up to 8
// influences. Both backends take it: the CPU runs anim::MorphJob + anim::SkinningJob (run() below, the
// reference); the Vulkan frame runs the one GPU skinner (deform/shaders/skin.comp) on it. Drawn meshes
// (RenderMesh::skin) and the meshes under bound splats (SplatDeformSource::skin) use it alike.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "core/math.h"

namespace sf {

struct SkinSource {
  // Static inputs (the Vulkan backend uploads them once and keeps them while their addresses stay the same).
  std::span<const Vec3> positions;                   // bind pose; empty: no skin source
  std::span<const Vec3> normals;                     // bind pose, or empty
  std::span<const std::array<uint16_t, 4>> joints0;  // one per vertex, or empty (morph only)
  std::span<const std::array<float, 4>> weights0;
  std::span<const std::array<uint16_t, 4>> joints1;  // optional second set (8 influences)
  std::span<const std::array<float, 4>> weights1;
  std::span<const Vec3> morph_positions;  // target-major: targets * vertices position deltas, or empty
  std::span<const Vec3> morph_normals;    // target-major normal deltas, or empty
  // This frame's inputs.
  std::span<const float> morph_weights;  // one per target (targets = morph_positions.size() / vertices)
  std::span<const Mat4> palette;         // joint matrices; empty with joints0 empty
  bool dual_quaternion = false;          // DQS instead of LBS

  bool empty() const { return positions.empty(); }
  size_t vertexCount() const { return positions.size(); }
  size_t targetCount() const { return positions.empty() ? 0 : morph_positions.size() / positions.size(); }
  bool skinned() const { return !joints0.empty(); }
  // Empty when usable; otherwise why not (sizes, joint indices outside the palette).
  std::string validate() const;
  // The CPU reference: morphs, then skins into out_positions (vertexCount()) and out_normals (normals.size(),
  // normalised). Throws sf::Error when invalid.
  void run(std::span<Vec3> out_positions, std::span<Vec3> out_normals) const;
};

}  // namespace sf
