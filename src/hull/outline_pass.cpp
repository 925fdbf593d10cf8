#include "hull/outline_pass.h"

#include "core/error.h"
#include "render/frame_passes.h"

namespace sf::hull {
namespace {

const uint32_t kOutlineShader[] = {
#include "hull_outline.inc"
};

struct OutlinePush {
  VkDeviceAddress source, target, mask;
  uint32_t width, height, mode;
  int32_t reach;
  float red, green, blue, strength;
  float band_width;
};

}  // namespace

OutlineGpu::OutlineGpu(gpu::Context& ctx)
    : ctx_(ctx), pipeline_(ctx, kOutlineShader, sizeof(OutlinePush), 16, "hull_outline") {}

OutlineGpu::~OutlineGpu() = default;

void OutlineGpu::reserve(size_t masks, uint32_t width, uint32_t height) {
  const VkDeviceSize bytes = static_cast<VkDeviceSize>(width) * height * sizeof(float);
  if (bytes > mask_bytes_) {
    masks_.clear();
    mask_bytes_ = bytes;
  }
  while (masks_.size() < masks)
    masks_.push_back(ctx_.createBuffer(std::max<VkDeviceSize>(mask_bytes_, 4), false, "hull outline mask"));
}

void OutlineGpu::addPass(FramePasses& frame, uint32_t mode, size_t index, const OutlineStyle& style,
                         const ImagePassTargets& t) const {
  if (index >= masks_.size() || static_cast<VkDeviceSize>(t.width) * t.height * sizeof(float) > mask_bytes_)
    throw Error("hull outline: mask " + std::to_string(index) + " was not reserved for a " +
                std::to_string(t.width) + "x" + std::to_string(t.height) + " frame");
  OutlinePush p{};
  p.source = t.source_address, p.target = t.target_address, p.mask = masks_[index].address;
  p.width = t.width, p.height = t.height, p.mode = mode;
  p.reach = outlineReach(style.width);
  p.red = style.color.x, p.green = style.color.y, p.blue = style.color.z, p.strength = style.strength;
  p.band_width = style.width;
  // The mask: written by a capture in its own (mask) frame, read by the composite in a later frame.
  const FrameResource mask = frame.resource("hull outline mask " + std::to_string(index));
  auto record = [pipe = &pipeline_, p](void* c) {
    auto cmd = static_cast<VkCommandBuffer>(c);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->pipeline());
    vkCmdPushConstants(cmd, pipe->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(OutlinePush), &p);
    vkCmdDispatch(cmd, (p.width + 15) / 16, (p.height + 15) / 16, 1);
  };
  if (mode == 0)
    frame.add("hull outline: capture", {t.source}, {t.target, mask}, record);
  else
    frame.add("hull outline: composite", {t.source, mask}, {t.target}, record);
}

void OutlineGpu::Capture::addPasses(FramePasses& frame, const ImagePassTargets& targets) const {
  gpu_.addPass(frame, 0, index_, {}, targets);
}

void OutlineGpu::Composite::addPasses(FramePasses& frame, const ImagePassTargets& targets) const {
  gpu_.addPass(frame, 1, index_, style_, targets);
}

}  // namespace sf::hull
