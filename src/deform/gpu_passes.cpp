#include "deform/gpu_passes.h"

#include "anim/skinning.h"

namespace sf {

namespace {

const uint32_t kSkinShader[] = {
#include "skin.inc"
};
const uint32_t kDeformSplatsShader[] = {
#include "deform_splats.inc"
};

}  // namespace

using namespace deform_layout;

SkinPass::SkinPass(gpu::Context& ctx) : pipeline_(ctx, kSkinShader, sizeof(SkinPush), SF_SKIN_WG, "skin") {}

void SkinPass::record(VkCommandBuffer cmd, const SkinPush& p, uint32_t instances) const {
  if (p.vertex_count == 0 || instances == 0) return;
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_.pipeline());
  vkCmdPushConstants(cmd, pipeline_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(SkinPush), &p);
  vkCmdDispatch(cmd, (p.vertex_count + SF_SKIN_WG - 1) / SF_SKIN_WG, instances, 1);
}

SplatDeformPass::SplatDeformPass(gpu::Context& ctx)
    : pipeline_(ctx, kDeformSplatsShader, sizeof(GpuDeformPush), SF_DEFORM_WG, "deform_splats") {}

void SplatDeformPass::record(VkCommandBuffer cmd, const GpuDeformPush& p) const {
  if (p.count == 0) return;
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_.pipeline());
  vkCmdPushConstants(cmd, pipeline_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(GpuDeformPush), &p);
  vkCmdDispatch(cmd, (p.count + SF_DEFORM_WG - 1) / SF_DEFORM_WG, 1, 1);
}

void packSkinInfluences(std::span<const std::array<uint16_t, 4>> joints0,
                        std::span<const std::array<float, 4>> weights0,
                        std::span<const std::array<uint16_t, 4>> joints1,
                        std::span<const std::array<float, 4>> weights1, std::vector<uint32_t>& joints,
                        std::vector<float>& weights) {
  const size_t n = joints0.size();
  joints.assign(n * SF_SKIN_INFLUENCES, 0);
  weights.assign(n * SF_SKIN_INFLUENCES, 0.0f);
  for (size_t v = 0; v < n; ++v)
    for (size_t k = 0; k < 4; ++k) {
      joints[v * SF_SKIN_INFLUENCES + k] = joints0[v][k];
      weights[v * SF_SKIN_INFLUENCES + k] = weights0[v][k];
      if (!joints1.empty()) {
        joints[v * SF_SKIN_INFLUENCES + 4 + k] = joints1[v][k];
        weights[v * SF_SKIN_INFLUENCES + 4 + k] = weights1[v][k];
      }
    }
}

void packSkinPalette(std::span<const Mat4> palette, std::vector<float>& out) {
  out.reserve(out.size() + palette.size() * 12);
  for (const Mat4& m : palette)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) out.push_back(m.m[r][c]);
}

void packSkinDualQuats(std::span<const Mat4> palette, std::vector<float>& out) {
  std::vector<anim::DualQuatJoint> dq(palette.size());
  anim::DualQuatPaletteJob{palette, dq}.run();
  packSkinDualQuats(dq, out);
}

void packSkinDualQuats(std::span<const anim::DualQuatJoint> dq, std::vector<float>& out) {
  out.reserve(out.size() + dq.size() * SF_SKIN_DQ_FLOATS);
  for (const anim::DualQuatJoint& d : dq) {
    const float q[8] = {d.real.w, d.real.x, d.real.y, d.real.z, d.dual.w, d.dual.x, d.dual.y, d.dual.z};
    out.insert(out.end(), q, q + 8);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) out.push_back(d.stretch.m[r][c]);
    out.insert(out.end(), SF_SKIN_DQ_FLOATS - 17, 0.0f);
  }
}

}  // namespace sf
