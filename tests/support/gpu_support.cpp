#include "support/gpu_support.h"

#include <memory>

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

}  // namespace sf::test
