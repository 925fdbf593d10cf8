#include "hull/outline_pass.h"

#include "core/error.h"

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

void OutlineGpu::recordPass(VkCommandBuffer cmd, uint32_t mode, size_t index, const OutlineStyle& style,
                            uint64_t source, uint64_t target, uint32_t width, uint32_t height) const {
  if (index >= masks_.size() || static_cast<VkDeviceSize>(width) * height * sizeof(float) > mask_bytes_)
    throw Error("hull outline: mask " + std::to_string(index) + " was not reserved for a " +
                std::to_string(width) + "x" + std::to_string(height) + " frame");
  OutlinePush p{};
  p.source = source, p.target = target, p.mask = masks_[index].address;
  p.width = width, p.height = height, p.mode = mode;
  p.reach = outlineReach(style.width);
  p.red = style.color.x, p.green = style.color.y, p.blue = style.color.z, p.strength = style.strength;
  p.band_width = style.width;
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_.pipeline());
  vkCmdPushConstants(cmd, pipeline_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(OutlinePush), &p);
  vkCmdDispatch(cmd, (width + 15) / 16, (height + 15) / 16, 1);
}

void OutlineGpu::Capture::record(void* command_buffer, uint64_t source, uint64_t target, uint32_t width,
                                 uint32_t height) const {
  gpu_.recordPass(static_cast<VkCommandBuffer>(command_buffer), 0, index_, {}, source, target, width, height);
}

void OutlineGpu::Composite::record(void* command_buffer, uint64_t source, uint64_t target, uint32_t width,
                                   uint32_t height) const {
  gpu_.recordPass(static_cast<VkCommandBuffer>(command_buffer), 1, index_, style_, source, target, width,
                  height);
}

}  // namespace sf::hull
