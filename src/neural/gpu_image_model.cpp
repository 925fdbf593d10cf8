#include "neural/gpu_image_model.h"

#include <algorithm>

#include "core/error.h"
#include "gpu/gpu.h"
#include "render/frame_passes.h"

namespace sf::nn {
namespace {

const uint32_t kImageShader[] = {
#include "nn_image.inc"
};

struct ImagePush {
  VkDeviceAddress source, target, tensor;
  uint32_t pixels, to_tensor;
  uint32_t dtype, pad;  // the input's ONNX type code (the image is rounded to it)
};

}  // namespace

VulkanImagePath::VulkanImagePath(gpu::Context& ctx, const ImageModel& model)
    : model_(model),
      executor_(std::make_unique<VulkanExecutor>(ctx, model.graph())),
      convert_(
          std::make_unique<gpu::ComputePipeline>(ctx, kImageShader, sizeof(ImagePush), 256, "nn_image")) {
  executor_->setDeviceWrittenInputs({model.inputName()});  // written from the frame's image, not uploaded
}

VulkanImagePath::~VulkanImagePath() = default;

void VulkanImagePath::prepare(uint32_t width, uint32_t height) {
  if (width == width_ && height == height_) return;
  model_.checkSize(width, height);
  width_ = height_ = 0;  // until the new plan is checked: a failed size leaves no plan claimed
  const ValueInfo& in = model_.graph().inputs[0];
  TensorMap inputs;
  inputs[model_.inputName()] =
      Tensor(in.dtype, {1, 3, static_cast<int64_t>(height), static_cast<int64_t>(width)});
  executor_->prepare(inputs);
  const Shape want{1, 3, static_cast<int64_t>(height), static_cast<int64_t>(width)};
  if (executor_->outputShape(model_.outputName()) != want ||
      !isFloatType(executor_->outputType(model_.outputName())))
    throw Error(model_.path() + ": output '" + model_.outputName() + "' has shape " +
                shapeString(executor_->outputShape(model_.outputName())) + " for a " + std::to_string(width) +
                "x" + std::to_string(height) + " frame");
  width_ = width, height_ = height;
}

void VulkanImagePath::addPasses(FramePasses& frame, const ImagePassTargets& t) const {
  if (t.width != width_ || t.height != height_)
    throw Error(model_.path() + ": prepared for " + std::to_string(width_) + "x" + std::to_string(height_) +
                ", the frame is " + std::to_string(t.width) + "x" + std::to_string(t.height));
  ImagePush p{};
  p.source = t.source_address;
  p.target = t.target_address;
  p.pixels = t.width * t.height;
  p.dtype = static_cast<uint32_t>(model_.graph().inputs[0].dtype);
  auto convert = [pipe = convert_.get(), p](VkCommandBuffer cmd, VkDeviceAddress tensor, uint32_t to_tensor) {
    ImagePush q = p;
    q.tensor = tensor;
    q.to_tensor = to_tensor;
    const uint32_t groups = (q.pixels + 255) / 256, x = std::min<uint32_t>(groups, 65535),
                   y = (groups + x - 1) / x;
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->pipeline());
    vkCmdPushConstants(cmd, pipe->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(ImagePush), &q);
    vkCmdDispatch(cmd, x, y, 1);
  };
  // The image into the model's input tensor, the model on the executor, its output tensor into the target.
  const FrameResource input = frame.resource("post model " + model_.path() + ": input"),
                      output = frame.resource("post model " + model_.path() + ": output");
  frame.add("post model: input", {t.source}, {input},
            [convert, tensor = executor_->inputAddress(model_.inputName())](void* cmd) {
              convert(static_cast<VkCommandBuffer>(cmd), tensor, 1);
            });
  frame.add("post model: network", {input}, {output},
            [executor = executor_.get()](void* cmd) { executor->record(static_cast<VkCommandBuffer>(cmd)); });
  frame.add("post model: output", {output}, {t.target},
            [convert, tensor = executor_->outputAddress(model_.outputName())](void* cmd) {
              convert(static_cast<VkCommandBuffer>(cmd), tensor, 0);
            });
}

std::string attachImageGpuPath(gpu::Context& ctx, ImageModel& model) {
  try {
    model.setGpuPath(std::make_shared<VulkanImagePath>(ctx, model));
  } catch (const gpu::DeviceLost&) {
    throw;
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace sf::nn
