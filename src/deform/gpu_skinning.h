// GPU vertex deformation (compute): morph targets, then linear-blend or dual-quaternion skinning, with the
// same inputs, math and outputs as anim::MorphJob followed by anim::SkinningJob (the CPU reference).
#pragma once

#include <memory>
#include <span>

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

}  // namespace sf
