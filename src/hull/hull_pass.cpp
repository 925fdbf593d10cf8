#include "hull/hull_pass.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/error.h"
#include "render/frame_passes.h"

namespace sf::hull {
namespace {

const uint32_t kHullShader[] = {
#include "hull_effects.inc"
};

using namespace hull_layout;

}  // namespace

HullPass::HullPass(gpu::Context& ctx)
    : ctx_(ctx), pipeline_(ctx, kHullShader, sizeof(HullPush), SF_HULL_WG, "hull_effects") {}

void HullPass::record(VkCommandBuffer cmd, const HullPush& push) const {
  if (push.count == 0) return;
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_.pipeline());
  vkCmdPushConstants(cmd, pipeline_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(HullPush), &push);
  vkCmdDispatch(cmd, (push.count + SF_HULL_WG - 1) / SF_HULL_WG, 1, 1);
}

VulkanHullPath::VulkanHullPath(std::shared_ptr<const HullPass> pass, const Destruction& destruction,
                               std::span<const uint32_t> lod_rank)
    : pass_(std::move(pass)) {
  static std::atomic<uint64_t> paths{0};
  serial_ = ++paths;
  gpu::Context& ctx = pass_->context();
  const auto& rest = destruction.rest();
  slot_count_ = destruction.slots().size();
  const VkDeviceSize rest_bytes = std::max<size_t>(rest.size(), 1) * sizeof(HullRest);
  rest_ = ctx.createBuffer(rest_bytes, false, "hull rest");
  slots_ = ctx.createBuffer(std::max<size_t>(slot_count_, 1) * sizeof(HullSlot), false, "hull slots");
  params_ = ctx.createBuffer(sizeof(HullParams), true, "hull params");
  // The rest records, once, through a staging buffer that then serves the slot uploads.
  staging_ = ctx.createBuffer(
      std::max<VkDeviceSize>(rest_bytes, std::max<size_t>(slot_count_, 1) * sizeof(HullSlot)), true,
      "hull staging");
  std::memcpy(staging_.mapped, rest.data(), rest.size() * sizeof(HullRest));
  const auto lock = ctx.lock();  // the context may be another thread's too (gpu::Context::lock)
  VkCommandBuffer cmd = ctx.begin();
  VkBufferCopy region{0, 0, rest.size() * sizeof(HullRest)};
  if (region.size > 0) vkCmdCopyBuffer(cmd, staging_.buffer, rest_.buffer, 1, &region);
  ctx.submit(cmd);
  // The importance ranks (runtime LOD), once, through the same staging buffer.
  if (!lod_rank.empty()) {
    if (lod_rank.size() != rest.size())
      throw Error("hull GPU path: " + std::to_string(lod_rank.size()) + " LOD ranks for " +
                  std::to_string(rest.size()) + " rest records");
    const size_t bytes = lod_rank.size() * sizeof(uint32_t);
    ranks_ = ctx.createBuffer(bytes, false, "hull lod ranks");
    std::memcpy(staging_.mapped, lod_rank.data(), bytes);
    cmd = ctx.begin();
    VkBufferCopy rank_region{0, 0, bytes};
    vkCmdCopyBuffer(cmd, staging_.buffer, ranks_.buffer, 1, &rank_region);
    ctx.submit(cmd);
  }
}

VulkanHullPath::~VulkanHullPath() = default;

void VulkanHullPath::setFrame(const HullParams& params, const Destruction& destruction, uint64_t revision) {
  if (destruction.slots().size() != slot_count_) throw Error("hull GPU path: the slot count changed");
  if ((params.effects & SF_HULL_FX_LOD) != 0 && !ranks_.buffer)
    throw Error("hull GPU path: runtime LOD on a path made without the hull's LOD ranks");
  std::memcpy(params_.mapped, &params, sizeof(HullParams));
  shaped_ = params.shape_large > 0;
  if (revision == uploaded_revision_) return;
  // Stage the slots and bodies; the copy to the device buffers is recorded with the next dispatch. Frames
  // are synchronous, so the staging buffer is free again by the time this runs.
  const auto& bodies = destruction.bodies();
  const size_t slot_bytes = slot_count_ * sizeof(HullSlot), body_bytes = bodies.size() * sizeof(HullBody);
  gpu::Context& ctx = pass_->context();
  if (bodies.size() > body_capacity_ || !bodies_.buffer) {
    body_capacity_ = std::max<size_t>({bodies.size(), 16, body_capacity_ * 2});
    bodies_ = ctx.createBuffer(body_capacity_ * sizeof(HullBody), false, "hull bodies");
  }
  if (staging_.size < slot_bytes + body_bytes)
    staging_ = ctx.createBuffer(slot_bytes + body_bytes, true, "hull staging");
  std::memcpy(staging_.mapped, destruction.slots().data(), slot_bytes);
  if (body_bytes > 0)
    std::memcpy(static_cast<uint8_t*>(staging_.mapped) + slot_bytes, bodies.data(), body_bytes);
  staged_body_bytes_ = body_bytes;
  uploaded_revision_ = revision;
  copy_pending_ = true;
}

void VulkanHullPath::addPasses(FramePasses& frame, const GpuSplatTargets& t) const {
  if (t.count != slot_count_)
    throw Error("hull GPU path: the frame gives " + std::to_string(t.count) + " slots for a hull of " +
                std::to_string(slot_count_));
  if (shaped_ && t.shapes == 0)
    throw Error("hull GPU path: a wounded hull writes shape words, and the frame gives no buffer for them");
  // Every live hull's upload, then (after one barrier) every hull's effects: the frame interleaves them.
  const FrameResource state = frame.resource("live hull " + std::to_string(serial_) + ": slots and bodies");
  if (copy_pending_) {
    const size_t slot_bytes = slot_count_ * sizeof(HullSlot);
    frame.add("live hull: upload", {}, {state},
              [staging = staging_.buffer, slots = slots_.buffer, bodies = bodies_.buffer, slot_bytes,
               body_bytes = staged_body_bytes_](void* c) {
                auto cmd = static_cast<VkCommandBuffer>(c);
                VkBufferCopy region{0, 0, slot_bytes};
                if (slot_bytes > 0) vkCmdCopyBuffer(cmd, staging, slots, 1, &region);
                if (body_bytes > 0) {
                  VkBufferCopy body_region{slot_bytes, 0, body_bytes};
                  vkCmdCopyBuffer(cmd, staging, bodies, 1, &body_region);
                }
              });
    copy_pending_ = false;
  }
  HullPush p{};
  p.rest = rest_.address;
  p.slots = slots_.address;
  p.bodies = bodies_.address;
  p.params = params_.address;
  p.out_positions = t.positions;
  p.out_covariances = t.covariances;
  p.out_opacities = t.opacities;
  p.out_sh = t.sh;
  p.out_shapes = t.shapes;
  p.lod_rank = ranks_.address;
  p.count = t.count;
  p.sh_stride = t.sh_stride;
  frame.add("live hull: effects", {state}, {t.slots},
            [pass = pass_, p](void* cmd) { pass->record(static_cast<VkCommandBuffer>(cmd), p); });
}

void attachHullGpu(const std::shared_ptr<const HullPass>& pass, HullInstance& instance) {
  instance.setGpuPath(std::make_shared<VulkanHullPath>(pass, instance.destruction(), instance.lodRanks()));
}

}  // namespace sf::hull
