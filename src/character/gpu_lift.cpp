// A decoder character's passes on the Vulkan device (see gpu_lift.h).
#include "character/gpu_lift.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "character/lift_shared.h"
#include "core/error.h"
#include "gpu/gpu.h"
#include "neural/vulkan_executor.h"
#include "render/frame_passes.h"

namespace sf::character {
namespace {

const uint32_t kRaysShader[] = {
#include "lift_rays.inc"
};
const uint32_t kPass1Shader[] = {
#include "lift_pass1.inc"
};
const uint32_t kPass2Shader[] = {
#include "lift_pass2.inc"
};

using lift_layout::LiftPass1Push;
using lift_layout::LiftPass2Push;
using lift_layout::LiftRaysPush;

template <typename Push>
void dispatch(VkCommandBuffer cmd, const gpu::ComputePipeline& pl, const Push& p, uint64_t items) {
  const uint64_t groups = (items + SF_LIFT_WG - 1) / SF_LIFT_WG;
  const uint32_t x = static_cast<uint32_t>(std::min<uint64_t>(groups, 65535)),
                 y = static_cast<uint32_t>((groups + 65534) / 65535);
  if (!groups) return;
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl.pipeline());
  vkCmdPushConstants(cmd, pl.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Push), &p);
  vkCmdDispatch(cmd, x, y, 1);
}

gpu::Buffer uploadWords(gpu::Context& ctx, std::span<const uint32_t> words, const std::string& name) {
  gpu::Buffer b = ctx.createBuffer(std::max<size_t>(4, words.size_bytes()), true, name);
  if (!words.empty()) std::memcpy(b.mapped, words.data(), words.size_bytes());
  return b;
}

bool takes(const nn::Graph& g, const char* name) {
  for (const nn::ValueInfo& v : g.inputs)
    if (v.name == name) return true;
  return false;
}

bool outputs(const nn::Graph& g, const char* name) {
  for (const nn::ValueInfo& v : g.outputs)
    if (v.name == name) return true;
  return false;
}

// A UV map output [1, 3 or 4, R, R] in float; returns its channels.
uint32_t mapChannels(const nn::VulkanExecutor& e, const char* name, int res) {
  const nn::Shape& s = e.outputShape(name);
  if (!nn::isFloatType(e.outputType(name)) || s.size() != 4 || s[0] != 1 || (s[1] != 3 && s[1] != 4) ||
      s[2] != res || s[3] != res)
    throw Error(e.graph().path + ": output " + name + " is " + nn::dtypeName(e.outputType(name)) + " " +
                nn::shapeString(s) + "; the branch needs float [1, 3 or 4, " + std::to_string(res) + ", " +
                std::to_string(res) + "]");
  return static_cast<uint32_t>(s[1]);
}

// The passes read a decoder's outputs from its arena: an output the plan folded into a constant has none.
void requireComputed(const nn::VulkanExecutor& e, const std::string& name) {
  if (e.staticOutput(name))
    throw Error(e.graph().path + ": output " + name +
                " is a constant of the model; the GPU path reads decoder outputs computed on the device");
}

}  // namespace

struct VulkanBundlePath::Pipelines {
  gpu::ComputePipeline rays, pass1, pass2;
  explicit Pipelines(gpu::Context& ctx)
      : rays(ctx, kRaysShader, sizeof(LiftRaysPush), SF_LIFT_WG, "lift_rays"),
        pass1(ctx, kPass1Shader, sizeof(LiftPass1Push), SF_LIFT_WG, "lift_pass1"),
        pass2(ctx, kPass2Shader, sizeof(LiftPass2Push), SF_LIFT_WG, "lift_pass2") {}
};

struct VulkanBundlePath::Branch {
  BundleBranch spec;
  size_t first = 0, texels = 0, vertex_count = 0;
  gpu::Buffer texel_triangle, indices, vertices, frame, triim, bounds;
  std::unique_ptr<nn::VulkanExecutor> trunk, geom, appr;
  std::string trunk_output;  // the trunk's code output
  bool geom_code_in = false, geom_code_out = false, appr_code_in = false;
  uint32_t geometry_channels = 3, color_channels = 3;
  Vec3 eye{0, 0, 0};
};

VulkanBundlePath::VulkanBundlePath(gpu::Context& ctx, const BundleCharacter& character)
    : ctx_(ctx), pipes_(std::make_unique<Pipelines>(ctx)) {
  static std::atomic<uint64_t> paths{0};  // names this path's resources in the frame graph
  serial_ = ++paths;
  slots_ = character.size();
  for (const BranchGpuInputs& in : character.gpuInputs()) {
    auto b = std::make_unique<Branch>();
    b->spec = *in.spec;
    b->first = in.first;
    b->texels = in.texels;
    b->vertex_count = in.vertices;
    const std::string tag = "lift " + in.spec->name;
    b->texel_triangle = uploadWords(ctx, in.texel_triangle, tag + " texel_triangle");
    b->indices = uploadWords(ctx, in.indices, tag + " indices");
    b->vertices = ctx.createBuffer(std::max<size_t>(12, 12 * in.vertices), true, tag + " vertices");
    b->frame = ctx.createBuffer(36 * in.texels, false, tag + " frame");
    b->triim = ctx.createBuffer(4 * in.texels, false, tag + " triim");
    b->bounds = ctx.createBuffer(8 * in.texels, false, tag + " bounds");
    if (in.trunk) {
      b->trunk = std::make_unique<nn::VulkanExecutor>(ctx, *in.trunk);
      b->trunk_output = outputs(*in.trunk, "code") ? "code" : in.trunk->outputs.at(0).name;
    }
    b->geom = std::make_unique<nn::VulkanExecutor>(ctx, *in.geom);
    b->appr = std::make_unique<nn::VulkanExecutor>(ctx, *in.appr);
    b->geom_code_in = takes(*in.geom, "code");
    b->geom_code_out = outputs(*in.geom, "code");
    b->appr_code_in = takes(*in.appr, "code");
    if (b->geom_code_in) b->geom->setDeviceWrittenInputs({"code"});
    std::set<std::string> appr_device{"view"};
    if (b->appr_code_in) appr_device.insert("code");
    b->appr->setDeviceWrittenInputs(appr_device);
    branches_.push_back(std::move(b));
  }
}

VulkanBundlePath::~VulkanBundlePath() {
  if (queries_) vkDestroyQueryPool(ctx_.device(), queries_, nullptr);
}

std::vector<VulkanBundlePath::BranchTimes> VulkanBundlePath::branchTimes() const {
  std::vector<BranchTimes> out(branches_.size());
  if (!queries_) return out;
  std::vector<uint64_t> ticks(4 * branches_.size());
  SF_VK_CHECK(vkGetQueryPoolResults(ctx_.device(), queries_, 0, static_cast<uint32_t>(ticks.size()),
                                    ticks.size() * 8, ticks.data(), 8,
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  const double to_ms = ctx_.timestampPeriodNs() * 1e-6;
  for (size_t b = 0; b < branches_.size(); ++b) {
    out[b].geometry_ms = static_cast<double>(ticks[4 * b + 1] - ticks[4 * b]) * to_ms;
    out[b].appearance_ms = static_cast<double>(ticks[4 * b + 3] - ticks[4 * b + 2]) * to_ms;
  }
  return out;
}

void VulkanBundlePath::prepare(const BundleFrameRequest& request) {
  if (request.geometry && request.vertices.size() != branches_.size())
    throw Error("bundle GPU path: the request has vertices for " + std::to_string(request.vertices.size()) +
                " branches");
  if (request.appearance && request.eyes.size() != branches_.size())
    throw Error("bundle GPU path: the request has eyes for " + std::to_string(request.eyes.size()) +
                " branches");
  if (request.appearance && !request.geometry && !geometry_ready_)
    throw Error("bundle GPU path: an appearance pass before the first geometry pass");
  nn::Tensor gaze(nn::DType::kFloat32, {1, 4});
  for (size_t k = 0; k < 4; ++k) gaze.f[k] = request.gaze[k];
  for (size_t bi = 0; bi < branches_.size(); ++bi) {
    Branch& b = *branches_[bi];
    const int res = b.spec.uv_resolution;
    nn::Tensor code;  // the code's shape, for planning the decoders that take it (its values come on the GPU)
    if (request.geometry) {
      const std::vector<Vec3>& v = request.vertices[bi];
      if (v.size() != b.vertex_count)
        throw Error("bundle GPU path: branch " + b.spec.name + " got " + std::to_string(v.size()) +
                    " vertices");
      std::memcpy(b.vertices.mapped, v.data(), 12 * v.size());
      nn::Tensor verts(nn::DType::kFloat32, {1, static_cast<int64_t>(v.size()), 3});
      std::memcpy(verts.f.data(), v.data(), 12 * v.size());
      if (b.trunk) {
        b.trunk->prepare(decoderInputs(b.trunk->graph(), {&verts, nullptr, &gaze, nullptr}));
        requireComputed(*b.trunk, b.trunk_output);
        code = nn::Tensor(b.trunk->outputType(b.trunk_output), b.trunk->outputShape(b.trunk_output));
      }
      b.geom->prepare(decoderInputs(b.geom->graph(), {&verts, &code, &gaze, nullptr}));
      requireComputed(*b.geom, "geom_uv");
      if (b.appr_code_in && !b.trunk) requireComputed(*b.geom, "code");
      b.geometry_channels = mapChannels(*b.geom, "geom_uv", res);
    }
    if (request.appearance) {
      b.eye = request.eyes[bi];
      if (b.appr_code_in) {
        const nn::VulkanExecutor& src = b.trunk ? *b.trunk : *b.geom;
        const std::string name = b.trunk ? b.trunk_output : "code";
        code = nn::Tensor(src.outputType(name), src.outputShape(name));
      }
      const nn::Tensor view(nn::DType::kFloat32, {1, 6, res, res});  // its values come from lift_rays
      b.appr->prepare(decoderInputs(b.appr->graph(), {nullptr, &code, &gaze, &view}));
      requireComputed(*b.appr, "color_uv");
      b.color_channels = mapChannels(*b.appr, "color_uv", res);
    }
  }
  geometry_ready_ = geometry_ready_ || request.geometry;
  pending_.geometry = pending_.geometry || request.geometry;  // not yet recorded: still owed
  pending_.appearance = pending_.appearance || request.appearance;
}

void VulkanBundlePath::addPasses(FramePasses& frame, const GpuSplatTargets& targets) const {
  if (targets.count != slots_)
    throw Error("bundle GPU path: the frame gave " + std::to_string(targets.count) + " slots for " +
                std::to_string(slots_));
  if (targets.sh_stride < 3) throw Error("bundle GPU path: the slots hold no colour");
  const bool moved = targets.positions != last_targets_.positions ||
                     targets.covariances != last_targets_.covariances ||
                     targets.opacities != last_targets_.opacities || targets.sh != last_targets_.sh ||
                     targets.sh_stride != last_targets_.sh_stride;
  const bool full = need_full_ || moved;
  recorded_ = {};
  if (!geometry_ready_) return;  // nothing to lift yet: the slots hold the cloud's invisible start
  const bool geometry = pending_.geometry || full;
  const bool appearance = pending_.appearance || geometry;
  pending_.geometry = pending_.appearance = false;
  last_targets_ = targets;
  need_full_ = false;
  recorded_ = {geometry, appearance};
  const uint32_t stamps = static_cast<uint32_t>(4 * branches_.size());
  if (timing_ && !queries_) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = stamps;
    SF_VK_CHECK(vkCreateQueryPool(ctx_.device(), &qi, nullptr, &queries_));
  }
  const VkQueryPool queries = timing_ ? queries_ : VK_NULL_HANDLE;
  // Per branch: its geometry part (decoders, pass 1) into its own maps and frames, then its appearance part
  // (rays, decoder, pass 2) from them into the character's slots. A part not run this frame reads ~0 ms.
  for (size_t bi = 0; bi < branches_.size(); ++bi) {
    const FrameResource maps = frame.resource("decoder character " + std::to_string(serial_) + ", branch " +
                                              std::to_string(bi) + ": geometry");
    if (geometry || queries)
      frame.add("decoder character: geometry", {}, {maps}, [this, bi, geometry, queries, stamps](void* c) {
        auto cmd = static_cast<VkCommandBuffer>(c);
        if (queries && bi == 0) vkCmdResetQueryPool(cmd, queries, 0, stamps);
        stampBranch(cmd, queries, bi, 0);
        if (geometry) recordGeometry(cmd, bi);
        stampBranch(cmd, queries, bi, 1);
      });
    if (appearance || queries)
      frame.add("decoder character: appearance", {maps}, {targets.slots},
                [this, bi, appearance, queries, targets](void* c) {
                  auto cmd = static_cast<VkCommandBuffer>(c);
                  stampBranch(cmd, queries, bi, 2);
                  if (appearance) recordAppearance(cmd, bi, targets);
                  stampBranch(cmd, queries, bi, 3);
                });
  }
}

void VulkanBundlePath::stampBranch(VkCommandBuffer cmd, VkQueryPool queries, size_t branch, uint32_t k) {
  if (queries)
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries,
                        static_cast<uint32_t>(4 * branch) + k);
}

void VulkanBundlePath::recordGeometry(VkCommandBuffer cmd, size_t bi) const {
  Branch& b = *branches_[bi];
  const uint32_t res = static_cast<uint32_t>(b.spec.uv_resolution);
  const VkDeviceAddress geometry_map = b.geom->outputAddress("geom_uv");
  if (b.trunk) {
    b.trunk->record(cmd);
    if (b.geom_code_in) {
      LiftRaysPush copy{};
      copy.code_src = b.trunk->outputAddress(b.trunk_output);
      copy.code_dst = b.geom->inputAddress("code");
      copy.code_words = static_cast<uint32_t>(nn::elementCount(b.trunk->outputShape(b.trunk_output)));
      dispatch(cmd, pipes_->rays, copy, copy.code_words);
      gpu::computeBarrier(cmd);
    }
  }
  b.geom->record(cmd);
  LiftPass1Push p{};
  p.geometry = geometry_map;
  p.texel_triangle = b.texel_triangle.address;
  p.vertices = b.vertices.address;
  p.indices = b.indices.address;
  p.frame = b.frame.address;
  p.triim = b.triim.address;
  p.bounds = b.bounds.address;
  p.width = p.height = res;
  const LiftTuning& t = b.spec.lift;
  p.scale_mult = t.scale_mult;
  p.thickness = t.thickness;
  p.min_scale = t.min_scale;
  p.max_scale = t.max_scale;
  p.triangle_scale = t.triangle_scale;
  p.max_triangle_distance = t.max_triangle_distance;
  dispatch(cmd, pipes_->pass1, p, b.texels);
}

void VulkanBundlePath::recordAppearance(VkCommandBuffer cmd, size_t bi,
                                        const GpuSplatTargets& targets) const {
  Branch& b = *branches_[bi];
  const VkDeviceAddress geometry_map = b.geom->outputAddress("geom_uv");
  LiftRaysPush r{};
  r.geometry = geometry_map;
  r.view = b.appr->inputAddress("view");
  if (b.appr_code_in) {
    r.code_src = b.trunk ? b.trunk->outputAddress(b.trunk_output) : b.geom->outputAddress("code");
    r.code_dst = b.appr->inputAddress("code");
    r.code_words = static_cast<uint32_t>(
        nn::elementCount(b.trunk ? b.trunk->outputShape(b.trunk_output) : b.geom->outputShape("code")));
  }
  r.eye_x = b.eye.x;
  r.eye_y = b.eye.y;
  r.eye_z = b.eye.z;
  r.texels = static_cast<uint32_t>(b.texels);
  dispatch(cmd, pipes_->rays, r, std::max<uint64_t>(b.texels, r.code_words));
  gpu::computeBarrier(cmd);  // rays and pass 1 before the decoder and pass 2
  b.appr->record(cmd);
  LiftPass2Push p{};
  p.geometry = geometry_map;
  p.color = b.appr->outputAddress("color_uv");
  p.frame = b.frame.address;
  p.triim = b.triim.address;
  p.bounds = b.bounds.address;
  p.positions = targets.positions + 12 * b.first;
  p.covariances = targets.covariances + 24 * b.first;
  p.opacities = targets.opacities + 4 * b.first;
  p.sh = targets.sh + 4ull * targets.sh_stride * b.first;
  p.texels = static_cast<uint32_t>(b.texels);
  p.geometry_channels = b.geometry_channels;
  p.color_channels = b.color_channels;
  p.sh_stride = targets.sh_stride;
  p.center_x = b.spec.frame.center.x;
  p.center_y = b.spec.frame.center.y;
  p.center_z = b.spec.frame.center.z;
  p.world_scale = b.spec.frame.worldScale();
  p.default_opacity_logit = b.spec.lift.default_opacity_logit;
  dispatch(cmd, pipes_->pass2, p, b.texels);
}

void VulkanBundlePath::readPass1(size_t branch, std::vector<float>& frame, std::vector<uint32_t>& triim,
                                 std::vector<float>& bounds) const {
  const Branch& b = *branches_.at(branch);
  gpu::Buffer staging = ctx_.createBuffer(48 * b.texels, true, "lift readback");
  const auto lock = ctx_.lock();  // the context may be another thread's too (gpu::Context::lock)
  VkCommandBuffer cmd = ctx_.begin();
  const VkBufferCopy f{0, 0, 36 * b.texels}, t{0, 36 * b.texels, 4 * b.texels},
      bo{0, 40 * b.texels, 8 * b.texels};
  vkCmdCopyBuffer(cmd, b.frame.buffer, staging.buffer, 1, &f);
  vkCmdCopyBuffer(cmd, b.triim.buffer, staging.buffer, 1, &t);
  vkCmdCopyBuffer(cmd, b.bounds.buffer, staging.buffer, 1, &bo);
  ctx_.submit(cmd);
  const auto* bytes = static_cast<const uint8_t*>(staging.mapped);
  frame.resize(9 * b.texels);
  triim.resize(b.texels);
  bounds.resize(2 * b.texels);
  std::memcpy(frame.data(), bytes, 36 * b.texels);
  std::memcpy(triim.data(), bytes + 36 * b.texels, 4 * b.texels);
  std::memcpy(bounds.data(), bytes + 40 * b.texels, 8 * b.texels);
}

std::string attachBundleGpuPath(gpu::Context& ctx, BundleCharacter& character) {
  try {
    auto path = std::make_shared<VulkanBundlePath>(ctx, character);
    path->prepare(
        character.trialRequest());  // plans every decoder now: a refusal leaves the character on the CPU
    character.setGpuPath(std::move(path));
  } catch (const gpu::DeviceLost&) {
    throw;  // not a refusal of this object: the frame driver replaces the device
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace sf::character
