// The hull outline as Vulkan image passes (render/cpu_renderer.h ImagePass; shaders/hull_outline.comp, CPU
// reference hull/outline.h): a mask frame (the outlined hulls drawn alone) records a capture pass that keeps
// its alpha in one of the pass's mask buffers on the GPU; the frame itself then records a composite pass per
// mask, each the outline of its hulls over the image. Nothing is made or recorded for a frame without an
// outlined hull.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/gpu.h"
#include "hull/outline.h"
#include "render/cpu_renderer.h"

namespace sf::hull {

class OutlineGpu {
 public:
  explicit OutlineGpu(gpu::Context& ctx);
  ~OutlineGpu();
  gpu::Context& context() const { return ctx_; }

  // Makes room for `masks` masks of width x height pixels (buffers grow, never shrink).
  void reserve(size_t masks, uint32_t width, uint32_t height);

  // Keeps the source image's alpha in mask `index` and passes the image through.
  class Capture final : public ImagePass {
   public:
    Capture(const OutlineGpu& gpu, size_t index) : gpu_(gpu), index_(index) {}
    void addPasses(FramePasses& frame, const ImagePassTargets& targets) const override;

   private:
    const OutlineGpu& gpu_;
    size_t index_;
  };
  // Composites the outline of mask `index` in `style` over the image.
  class Composite final : public ImagePass {
   public:
    Composite(const OutlineGpu& gpu, size_t index, const OutlineStyle& style)
        : gpu_(gpu), index_(index), style_(style) {}
    void addPasses(FramePasses& frame, const ImagePassTargets& targets) const override;

   private:
    const OutlineGpu& gpu_;
    size_t index_;
    OutlineStyle style_;
  };

 private:
  void addPass(FramePasses& frame, uint32_t mode, size_t index, const OutlineStyle& style,
               const ImagePassTargets& targets) const;
  gpu::Context& ctx_;
  gpu::ComputePipeline pipeline_;
  std::vector<gpu::Buffer> masks_;
  VkDeviceSize mask_bytes_ = 0;
};

}  // namespace sf::hull
