// A decoder character's passes on the Vulkan device, inside the renderer's frame: per branch the trunk and
// geometry decoders and the appearance decoder on the Vulkan executor, and the lift's three shaders
// (lift_rays: view rays and the code hand-over; lift_pass1; lift_pass2 into the character's slots), with
// no CPU round trip between them. The CPU reference of every pass is character/lift.h; BundleCharacter's
// CPU path runs the same passes on the CPU executor.
//
// Per frame it records only what the request asked for: geometry (decoders, pass 1) when the rig output
// changed, appearance (rays, decoder, pass 2) when the camera moved past the threshold; nothing otherwise,
// and the slots keep the last pass's gaussians (the whole chain runs again when the frame hands it other
// slots).
#pragma once

#include <volk.h>

#include <memory>
#include <vector>

#include "character/bundle_character.h"

namespace sf::gpu {
class Context;
}

namespace sf::character {

class VulkanBundlePath final : public BundleGpuPath, public GpuSplatSource {
 public:
  // Builds the executors and static buffers of every branch of `character` on `ctx` (the renderer's
  // device). Throws sf::Error naming the decoder when the Vulkan executor cannot run it.
  VulkanBundlePath(gpu::Context& ctx, const BundleCharacter& character);
  ~VulkanBundlePath() override;

  void prepare(const BundleFrameRequest& request) override;
  const GpuSplatSource& source() const override { return *this; }
  // This frame's passes (render/frame_passes.h): per branch its geometry part and its appearance part into
  // the character's slots; `targets` must hold the character's slots (SH degree 0 or more).
  void addPasses(FramePasses& frame, const GpuSplatTargets& targets) const override;

  // Reads back a branch's pass 1 outputs (tests): frame (9 per texel), triim, bounds (2 per texel).
  void readPass1(size_t branch, std::vector<float>& frame, std::vector<uint32_t>& triim,
                 std::vector<float>& bounds) const;
  // What the last frame's passes ran (tests and benchmarks).
  struct Recorded {
    bool geometry = false, appearance = false;
  };
  Recorded lastRecorded() const { return recorded_; }
  // Timestamps around each branch's parts from now on (benchmarks). After the frame that recorded them has
  // completed, branchTimes() gives per branch the GPU ms of its geometry part (trunk and geometry decode,
  // pass 1) and its appearance part (rays, appearance decode, pass 2); a part that did not run reads ~0.
  void setTiming(bool on) { timing_ = on; }
  struct BranchTimes {
    double geometry_ms = 0, appearance_ms = 0;
  };
  std::vector<BranchTimes> branchTimes() const;

 private:
  void recordGeometry(VkCommandBuffer cmd, size_t branch) const;
  void recordAppearance(VkCommandBuffer cmd, size_t branch, const GpuSplatTargets& targets) const;
  static void stampBranch(VkCommandBuffer cmd, VkQueryPool queries, size_t branch, uint32_t k);
  struct Branch;
  gpu::Context& ctx_;
  std::vector<std::unique_ptr<Branch>> branches_;
  struct Pipelines;
  std::unique_ptr<Pipelines> pipes_;
  size_t slots_ = 0;
  uint64_t serial_ = 0;                 // this path's number, in its resources' names
  mutable BundleFrameRequest pending_;  // passes asked for and not recorded yet
  bool geometry_ready_ = false;         // a geometry pass has been prepared (its inputs are staged)
  mutable GpuSplatTargets last_targets_{};
  mutable bool need_full_ = true;  // the slots have not been written yet (or were handed over anew)
  mutable Recorded recorded_;
  bool timing_ = false;
  mutable VkQueryPool queries_ = VK_NULL_HANDLE;  // 4 per branch: geometry start, end, appearance start, end
};

// Gives `character` a GPU path on `ctx` when the Vulkan executor can run every decoder. Returns empty on
// success, else why not (the character then stays on the CPU).
std::string attachBundleGpuPath(gpu::Context& ctx, BundleCharacter& character);

}  // namespace sf::character
