// The scene's post model in the Vulkan frame: the frame's finished image written into the model's input on
// the GPU, the model recorded on the Vulkan executor, its output written back as the image that is read back
// (an ImagePass, render/cpu_renderer.h). The same result as ImageModel::apply on the read-back frame, without
// the image's round trip through the host.
#pragma once

#include <memory>
#include <string>

#include "neural/image_model.h"
#include "neural/vulkan_executor.h"

namespace sf::gpu {
class Context;
class ComputePipeline;
}  // namespace sf::gpu

namespace sf::nn {

class VulkanImagePath final : public ImageGpuPath {
 public:
  VulkanImagePath(gpu::Context& ctx, const ImageModel& model);
  ~VulkanImagePath() override;
  // Plans the model for a width x height frame (once per size; throws as ImageModel::apply does for a size
  // the model does not take).
  void prepare(uint32_t width, uint32_t height) override;
  // The frame's passes (render/frame_passes.h): the image into the model's input, the model, its output into
  // the target image.
  void addPasses(FramePasses& frame, const ImagePassTargets& targets) const override;

 private:
  const ImageModel& model_;
  std::unique_ptr<VulkanExecutor> executor_;
  std::unique_ptr<gpu::ComputePipeline> convert_;
  uint32_t width_ = 0, height_ = 0;
};

// Gives `model` its in-frame path on `ctx`; returns why it cannot run there (then it runs after readback),
// empty on success.
std::string attachImageGpuPath(gpu::Context& ctx, ImageModel& model);

}  // namespace sf::nn
