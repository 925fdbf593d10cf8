// The GPU test suites' shared renderer: one per test executable, with the Vulkan validation layer on, so that
// pipelines compile once (about a second per shader on lavapipe) and any validation error fails the test that
// caused it.
#pragma once

#include <cstdint>

#include "gpu/gpu.h"
#include "render/vulkan_renderer.h"
#include "support/test_support.h"

namespace sf::test {

// The suite's renderer, or null when there is no Vulkan device.
VulkanRenderer* gpuRenderer();

// Records the passes a module contributes to a frame (render/frame_passes.h) alone into `cmd`, in a graph of
// their own with the frame's barriers between them: a GpuSplatSource writing `targets`, or an image pass.
void recordContributed(VkCommandBuffer cmd, const GpuSplatSource& source, GpuSplatTargets targets);
void recordContributed(VkCommandBuffer cmd, const ImagePass& pass, uint64_t source, uint64_t target,
                       uint32_t width, uint32_t height);

}  // namespace sf::test

// Declares `var`, the suite's renderer; skips (fails under CI) when there is no Vulkan device.
#define SF_REQUIRE_VULKAN(var)                                                                             \
  VulkanRenderer* var = ::sf::test::gpuRenderer();                                                         \
  if (!var) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)"); \
  const uint32_t validation_before = var->context().validationErrors()

// No validation error since SF_REQUIRE_VULKAN.
#define SF_EXPECT_VALIDATION_CLEAN(var)                           \
  EXPECT_EQ(var->context().validationErrors(), validation_before) \
      << "Vulkan validation errors:\n"                            \
      << var->context().validationReport(validation_before)
