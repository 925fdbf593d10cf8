// A live splat hull's pass on the GPU (shaders/hull_effects.comp; CPU reference hull::evaluateHull): one
// dispatch per hull per frame, a pass the hull adds to the Vulkan frame (render/frame_passes.h), writing the
// hull's slots straight into the object's range of the frame's sink. The rest records are uploaded once; the
// slots and bodies only when the destruction state changed (Destruction::revision), by a copy recorded before
// the dispatch; the parameters every frame (a few hundred bytes, host-visible).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "gpu/gpu.h"
#include "hull/effects.h"

namespace sf::hull {

// The pipeline, shared by every hull on one device.
class HullPass {
 public:
  explicit HullPass(gpu::Context& ctx);
  gpu::Context& context() const { return ctx_; }
  void record(VkCommandBuffer cmd, const hull_layout::HullPush& push) const;

 private:
  gpu::Context& ctx_;
  gpu::ComputePipeline pipeline_;
};

class VulkanHullPath : public HullGpuPath {
 public:
  // `lod_rank`: each rest record's importance rank (HullInstance::lodRanks), uploaded once with the rest
  // records; without it a frame with runtime LOD on (SF_HULL_FX_LOD) is refused.
  VulkanHullPath(std::shared_ptr<const HullPass> pass, const Destruction& destruction,
                 std::span<const uint32_t> lod_rank = {});
  ~VulkanHullPath() override;

  void setFrame(const HullParams& params, const Destruction& destruction, uint64_t revision) override;
  // The frame's passes (render/frame_passes.h): the slots' and bodies' upload when the destruction state
  // changed, then the effects into the hull's slots.
  void addPasses(FramePasses& frame, const GpuSplatTargets& targets) const override;
  // While a wound is open (the frame's parameters give shape classes) the pass writes shape words.
  bool writesShapes() const override { return shaped_; }

 private:
  std::shared_ptr<const HullPass> pass_;
  gpu::Buffer rest_, slots_, bodies_, staging_, params_, ranks_;
  size_t slot_count_ = 0, body_capacity_ = 0;
  uint64_t uploaded_revision_ = ~uint64_t{0};
  mutable bool copy_pending_ = false;
  size_t staged_body_bytes_ = 0;
  bool shaped_ = false;
  uint64_t serial_ = 0;  // this path's number, in its resource's name
};

// Gives `instance` a GPU path on `ctx` (the renderer's device), sharing one pipeline per device among the
// paths made through `pass` (make one HullPass per device and pass it to every hull).
void attachHullGpu(const std::shared_ptr<const HullPass>& pass, HullInstance& instance);

}  // namespace sf::hull
