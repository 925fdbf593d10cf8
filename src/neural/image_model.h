// Image-to-image ONNX models run on a finished frame (post-processing: denoise, enhance, stylise), as the
// WebGPU splatting platform's U-Net step: RGB in [0, 1] as a float32 [1, 3, H, W] (NCHW) tensor in, the
// same out; alpha is kept. Run on the CPU executor.
#pragma once

#include <string>
#include <vector>

#include "core/image.h"
#include "neural/cpu_executor.h"

namespace sf::nn {

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
  const Graph& graph() const { return executor_.graph(); }

 private:
  CpuExecutor executor_;
  GraphRunner runner_;
  std::string input_, output_;
};

}  // namespace sf::nn
