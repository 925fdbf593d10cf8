// The deform layer's GPU passes, recorded into a caller's command buffer (the caller orders them with
// barriers; the Vulkan frame declares them in its frame graph):
// - SkinPass, the one GPU skinner (shaders/skin.comp: morph targets, then LBS or DQS with up to 8
//   influences). GpuSkinner, GpuSkinnedCrowd and the Vulkan frame (drawn meshes and the meshes under bound
//   splats) all dispatch it; the packers below put the inputs in the layout it reads. CPU reference:
//   SkinSource::run (anim::MorphJob + anim::SkinningJob).
// - SplatDeformPass (shaders/deform_splats.comp): bound splats' centres and covariances from the deformed
//   mesh or their joints, into an object's slot range. CPU reference: character::DeformJob.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "anim/skinning.h"
#include "core/math.h"
#include "deform/deform_shared.h"
#include "gpu/gpu.h"

namespace sf {

class SkinPass {
 public:
  explicit SkinPass(gpu::Context& ctx);
  // One dispatch over p.vertex_count vertices for `instances` instances (instance i reads palette entries
  // [i * p.joint_count, ...) and writes its own output range). The caller orders it with barriers.
  void record(VkCommandBuffer cmd, const deform_layout::SkinPush& p, uint32_t instances = 1) const;

 private:
  gpu::ComputePipeline pipeline_;
};

class SplatDeformPass {
 public:
  explicit SplatDeformPass(gpu::Context& ctx);
  // One dispatch over p.count bound splats.
  void record(VkCommandBuffer cmd, const deform_layout::GpuDeformPush& p) const;

 private:
  gpu::ComputePipeline pipeline_;
};

// Influences as SF_SKIN_INFLUENCES (joint, weight) slots per vertex: set 0 in slots 0..3, set 1 (optional)
// in 4..7; unused slots weigh 0.
void packSkinInfluences(std::span<const std::array<uint16_t, 4>> joints0,
                        std::span<const std::array<float, 4>> weights0,
                        std::span<const std::array<uint16_t, 4>> joints1,
                        std::span<const std::array<float, 4>> weights1, std::vector<uint32_t>& joints,
                        std::vector<float>& weights);
// Rows 0..2 of each palette matrix (LBS), appended to `out`.
void packSkinPalette(std::span<const Mat4> palette, std::vector<float>& out);
// The palette as SF_SKIN_DQ_FLOATS per joint (DQS: anim::DualQuatPaletteJob, then real, dual, stretch),
// appended to `out`.
void packSkinDualQuats(std::span<const Mat4> palette, std::vector<float>& out);
void packSkinDualQuats(std::span<const anim::DualQuatJoint> palette, std::vector<float>& out);

}  // namespace sf
