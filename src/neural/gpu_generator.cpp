#include "neural/gpu_generator.h"

#include <algorithm>

#include "core/error.h"
#include "gpu/gpu.h"
#include "render/frame_passes.h"

namespace sf::nn {
namespace {

const uint32_t kDecodeShader[] = {
#include "nn_decode.inc"
};

struct DecodePush {
  VkDeviceAddress gauss, color, count, positions, covariances, opacities, sh;
  uint32_t rows, channels, color_is_sh, sh_stride, live_static;
};

}  // namespace

VulkanGeneratorPath::VulkanGeneratorPath(gpu::Context& ctx, const GaussianGenerator& generator)
    : contract_(generator.contract()),
      path_(generator.path()),
      executor_(std::make_unique<VulkanExecutor>(ctx, generator.graph())),
      decode_(
          std::make_unique<gpu::ComputePipeline>(ctx, kDecodeShader, sizeof(DecodePush), 256, "nn_decode")) {}

VulkanGeneratorPath::~VulkanGeneratorPath() = default;

const GpuSplatSource& VulkanGeneratorPath::prepare(const TensorMap& inputs) {
  executor_->prepare(inputs);
  // The decode reads float words: the shapes and types decodeGenerated checks, checked here per plan.
  const Shape& g = executor_->outputShape(contract_.gauss_output);
  const Shape& c = executor_->outputShape(contract_.color_output);
  if (!isFloatType(executor_->outputType(contract_.gauss_output)) || g.size() != 2 || g[1] != 10)
    throw Error(path_ + ": output '" + contract_.gauss_output + "' is " +
                dtypeName(executor_->outputType(contract_.gauss_output)) + " " + shapeString(g) +
                ", expected float [N, 10]");
  const int64_t channels = c.size() == 2 ? c[1] : -1;
  if (!isFloatType(executor_->outputType(contract_.color_output)) || c.size() != 2 || c[0] != g[0] ||
      !(channels == 48 || channels == 3 || channels == 4) ||
      (contract_.color_channels == 48) != (channels == 48))
    throw Error(path_ + ": output '" + contract_.color_output + "' is " + shapeString(c) +
                ", expected float [" + std::to_string(g[0]) + ", " +
                std::to_string(contract_.color_channels) + "]");
  capacity_ = static_cast<size_t>(g[0]);
  live_static_ = static_cast<int64_t>(capacity_);
  if (!contract_.count_output.empty()) {
    // The decode reads the count as one int32 word.
    const DType ct = executor_->outputType(contract_.count_output);
    if (isFloatType(ct) || elementCount(executor_->outputShape(contract_.count_output)) != 1)
      throw Error(path_ + ": output '" + contract_.count_output + "' is " + dtypeName(ct) + " " +
                  shapeString(executor_->outputShape(contract_.count_output)) + ", expected an integer [1]");
    if (const Tensor* t = executor_->staticOutput(contract_.count_output)) {
      if (t->numel() != 1)
        throw Error(path_ + ": output '" + contract_.count_output + "' has shape " + shapeString(t->shape) +
                    ", expected [1]");
      live_static_ = std::clamp<int64_t>(t->asInt(0), 0, static_cast<int64_t>(capacity_));
    } else {
      live_static_ = -1;  // read on the GPU (clamped there to [0, N] by the row test)
    }
  }
  return *this;
}

void VulkanGeneratorPath::addPasses(FramePasses& frame, const GpuSplatTargets& targets) const {
  if (targets.count != capacity_)
    throw Error(path_ + ": the frame gave " + std::to_string(targets.count) + " slots for " +
                std::to_string(capacity_) + " generated rows");
  DecodePush p{};
  p.gauss = executor_->outputAddress(contract_.gauss_output);
  p.color = executor_->outputAddress(contract_.color_output);
  p.count = live_static_ < 0 ? executor_->outputAddress(contract_.count_output) : 0;
  p.positions = targets.positions;
  p.covariances = targets.covariances;
  p.opacities = targets.opacities;
  p.sh = targets.sh;
  p.rows = static_cast<uint32_t>(capacity_);
  p.channels = static_cast<uint32_t>(executor_->outputShape(contract_.color_output)[1]);
  p.color_is_sh = contract_.color_is_sh ? 1 : 0;
  p.sh_stride = targets.sh_stride;
  p.live_static = live_static_ < 0 ? 0 : static_cast<uint32_t>(live_static_);
  // The executor's output buffers, named by the model's file (objects of one model share the name, which
  // costs at most a barrier).
  const FrameResource outputs = frame.resource("neural generator " + path_ + ": outputs");
  frame.add("neural generator: network", {}, {outputs},
            [executor = executor_.get()](void* cmd) { executor->record(static_cast<VkCommandBuffer>(cmd)); });
  frame.add("neural generator: decode", {outputs}, {targets.slots}, [decode = decode_.get(), p](void* c) {
    auto cmd = static_cast<VkCommandBuffer>(c);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, decode->pipeline());
    vkCmdPushConstants(cmd, decode->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(DecodePush), &p);
    const uint32_t groups = (p.rows + 255) / 256, x = std::min<uint32_t>(groups, 65535),
                   y = (groups + x - 1) / x;
    if (groups) vkCmdDispatch(cmd, x, y, 1);
  });
}

std::string attachGpuPath(gpu::Context& ctx, GaussianGenerator& generator, double time) {
  Camera cam;
  cam.width = 640, cam.height = 480, cam.fx = cam.fy = 500, cam.cx = 320, cam.cy = 240;
  const TensorMap inputs = generator.frameInputs(time, cam);  // (an unset control is the caller's error)
  try {
    auto path = std::make_shared<VulkanGeneratorPath>(ctx, generator);
    path->prepare(inputs);
    generator.setGpuPath(std::move(path));
  } catch (const gpu::DeviceLost&) {
    throw;  // not a refusal of this object: the frame driver replaces the device
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace sf::nn
