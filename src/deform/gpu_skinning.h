// GPU vertex deformation (compute): morph targets, then linear-blend or dual-quaternion skinning, with the
// same inputs, math and outputs as anim::MorphJob followed by anim::SkinningJob (the CPU reference).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "anim/skinning.h"

namespace sf {

namespace gpu {
class Context;
}

class GpuSkinner {
 public:
  explicit GpuSkinner(gpu::Context& ctx);
  ~GpuSkinner();
  GpuSkinner(const GpuSkinner&) = delete;
  GpuSkinner& operator=(const GpuSkinner&) = delete;

  // Morphs job.positions / job.normals by `targets` and `morph_weights` (as anim::MorphJob), skins the
  // result as `job` says, and writes job.out_positions / job.out_normals. An empty job.palette (and no
  // joints) means morph only. Validates like the CPU jobs and throws sf::Error with the reason.
  // Returns the GPU time of the deformation pass in milliseconds.
  double run(const anim::SkinningJob& job, std::span<const anim::MorphTargetView> targets = {},
             std::span<const float> morph_weights = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A skinned mesh resident on the GPU, skinned for many instances in one dispatch (crowds): positions,
// normals and influences are uploaded once; each frame uploads instances * joint_count palette matrices
// and skins every instance into a resident output buffer.
class GpuSkinnedCrowd {
 public:
  // `mesh` supplies positions, normals and influences (joints0/1, weights0/1); its palettes and outputs are
  // not used. Every joint index must be below joint_count; throws sf::Error otherwise.
  GpuSkinnedCrowd(gpu::Context& ctx, const anim::SkinningJob& mesh, size_t joint_count, size_t instances);
  ~GpuSkinnedCrowd();
  GpuSkinnedCrowd(const GpuSkinnedCrowd&) = delete;
  GpuSkinnedCrowd& operator=(const GpuSkinnedCrowd&) = delete;

  // Skins every instance; palettes holds instances * joint_count matrices, instance-major (DQS converts
  // them on the CPU first). Results stay on the GPU. Returns the GPU time in milliseconds.
  double skin(std::span<const Mat4> palettes, anim::SkinningMethod method);
  // Reads back one instance's skinned positions (slow; for tests).
  std::vector<Vec3> positions(size_t instance);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sf
