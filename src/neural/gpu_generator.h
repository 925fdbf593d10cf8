// A neural generator run on the Vulkan executor inside the renderer's frame: its outputs are decoded on the
// GPU straight into the object's slot range (no readback, no upload). Attach one to a GaussianGenerator
// (setGpuPath) whose frames the Vulkan renderer draws on the same device.
#pragma once

#include <memory>

#include "neural/generator.h"
#include "neural/vulkan_executor.h"

namespace sf::gpu {
class Context;
class ComputePipeline;
}  // namespace sf::gpu

namespace sf::nn {

class VulkanGeneratorPath : public GeneratorGpuPath, public GpuSplatSource {
 public:
  // Builds the executor for the generator's graph on `ctx` (the renderer's device).
  VulkanGeneratorPath(gpu::Context& ctx, const GaussianGenerator& generator);
  ~VulkanGeneratorPath() override;

  // Plans for the inputs' shapes (the first frame) and uploads the inputs; checks the outputs' shapes
  // against the contract (the CPU decode's checks) once per plan.
  const GpuSplatSource& prepare(const TensorMap& inputs) override;
  size_t capacity() const override { return capacity_; }
  int shDegree() const override { return contract_.color_channels == 48 ? 3 : 0; }

  // The frame's passes (render/frame_passes.h): the network on the executor (its outputs on the GPU), then
  // the decode into the object's slots; `targets` must hold capacity() slots of SH degree shDegree().
  void addPasses(FramePasses& frame, const GpuSplatTargets& targets) const override;

  const VulkanExecutor& executor() const { return *executor_; }

 private:
  GeneratorContract contract_;
  std::string path_;
  std::unique_ptr<VulkanExecutor> executor_;
  std::unique_ptr<gpu::ComputePipeline> decode_;
  size_t capacity_ = 0;
  int64_t live_static_ = -1;  // num_points when it does not depend on the inputs; -1 when on the GPU
};

// Gives `generator` a GPU path on `ctx` when the Vulkan executor can run it: the path is built and planned
// now (for the frame inputs at `time` seen by a stand-in camera: plans depend on shapes only). Returns
// empty on success, else why not; the generator then stays on its CPU executor.
std::string attachGpuPath(gpu::Context& ctx, GaussianGenerator& generator, double time);

}  // namespace sf::nn
