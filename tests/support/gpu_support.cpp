#include "support/gpu_support.h"

#include <memory>

#include "render/frame_passes.h"

namespace sf::test {

VulkanRenderer* gpuRenderer() {
  static std::unique_ptr<VulkanRenderer> renderer = []() -> std::unique_ptr<VulkanRenderer> {
    if (!gpu::vulkanAvailable()) return nullptr;
    gpu::ContextOptions o;
    o.validation = true;
    return std::make_unique<VulkanRenderer>(o);
  }();
  return renderer.get();
}

namespace {

template <class Add>
void recordAlone(VkCommandBuffer cmd, FrameGraph& g, const FrameResources& frame, Add add) {
  FramePasses passes(g, frame, cmd);
  passes.nextContributor();
  add(passes);
  passes.addToGraph(FramePasses::Order::kInSequence);
  g.run([cmd] { gpu::computeBarrier(cmd); });
}

}  // namespace

void recordContributed(VkCommandBuffer cmd, const GpuSplatSource& source, GpuSplatTargets targets) {
  FrameGraph g;
  FrameResources frame;
  frame.splats = g.resource("splat slots");
  targets.slots = g.part(frame.splats, "splat slots of the object");
  recordAlone(cmd, g, frame, [&](FramePasses& passes) { source.addPasses(passes, targets); });
}

void recordContributed(VkCommandBuffer cmd, const ImagePass& pass, uint64_t source, uint64_t target,
                       uint32_t width, uint32_t height) {
  FrameGraph g;
  FrameResources frame;
  frame.image = g.resource("image");
  ImagePassTargets t;
  t.source = frame.image, t.target = g.resource("target image");
  t.source_address = source, t.target_address = target, t.width = width, t.height = height;
  recordAlone(cmd, g, frame, [&](FramePasses& passes) { pass.addPasses(passes, t); });
}

}  // namespace sf::test
