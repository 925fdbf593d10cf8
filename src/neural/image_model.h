// Image-to-image ONNX models run on a finished frame (post-processing: denoise, enhance, stylise), as the
// WebGPU splatting platform's U-Net step: RGB in [0, 1] as a float32 [1, 3, H, W] (NCHW) tensor in, the
// same out; alpha is kept. Run on the CPU executor, through a runner (a Vulkan executor after readback), or
// in the Vulkan frame itself through a GPU path (an image pass between the raster and the readback).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/image.h"
#include "neural/cpu_executor.h"
#include "render/cpu_renderer.h"

namespace sf::nn {

// An image model run inside the Vulkan frame (neural/gpu_image_model.h): prepare() plans it for a frame
// size (before the frame is recorded), then the frame records it as an ImagePass.
class ImageGpuPath : public ImagePass {
 public:
  virtual void prepare(uint32_t width, uint32_t height) = 0;
};

class ImageModel {
 public:
  // Loads and checks a model: one float input of shape [1, 3, H, W] (H, W fixed or symbolic) and a float
  // output of shape [1, 3, H, W]. Throws sf::Error naming the model's inputs and outputs otherwise.
  explicit ImageModel(const std::string& path);
  explicit ImageModel(Graph graph);

  const std::string& path() const { return executor_.graph().path; }
  // Runs the model on `image`'s RGB; the result has the input's alpha. Throws when the model's fixed size
  // differs from the image's.
  ImageRGBA apply(const ImageRGBA& image, std::vector<NodeTime>* times = nullptr) const;
  // Runs the model through `runner` from now on (nullptr: the CPU executor again).
  void setRunner(GraphRunner runner) { runner_ = std::move(runner); }
  bool hasRunner() const { return runner_ != nullptr; }
  // Runs the model in the Vulkan frame from now on (nullptr: after readback again, by apply()).
  void setGpuPath(std::shared_ptr<ImageGpuPath> path) { gpu_path_ = std::move(path); }
  ImageGpuPath* gpuPath() const { return gpu_path_.get(); }
  const std::string& inputName() const { return input_; }
  const std::string& outputName() const { return output_; }
  // Throws, as apply() does, when the model's fixed size differs from width x height.
  void checkSize(int64_t width, int64_t height) const;
  const Graph& graph() const { return executor_.graph(); }

 private:
  CpuExecutor executor_;
  GraphRunner runner_;
  std::shared_ptr<ImageGpuPath> gpu_path_;
  std::string input_, output_;
};

}  // namespace sf::nn
