// One Vulkan context per test process for the neural GPU tests (null without a Vulkan device: the tests
// skip, or fail under CI=true).
#pragma once

#include <memory>

#include "gpu/gpu.h"
#include "support/test_support.h"

namespace sf::nn::optest {

inline gpu::Context* device() {
  static std::unique_ptr<gpu::Context> ctx = [] {
    return gpu::vulkanAvailable() ? std::make_unique<gpu::Context>() : std::unique_ptr<gpu::Context>();
  }();
  return ctx.get();
}

}  // namespace sf::nn::optest

#define REQUIRE_DEVICE() \
  if (!::sf::nn::optest::device()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)")
