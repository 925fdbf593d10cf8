// The trainer on the Vulkan device (docs/training.md "On the GPU"): each step is one frame of the engine's
// own renderer (render/vulkan_renderer.h) with the training passes as its tail, in one submission:
//   training: activate: the parameters into the frame's slots (shaders/train_activate.comp), a pass the
//     trainer adds before preprocess (render/frame_passes.h)
//   preprocess, depth sort, keys, tile sort, ranges, raster: the frame, unchanged (its raster also keeps each
//     pixel's final transmittance and last splat)
//   tail: loss (train_loss) -> raster backward, per tile back to front (train_raster_backward) ->
//   per-gaussian
//     backward through the EWA projection and the covariance (train_gaussian_backward) -> position noise
//     (train_noise) -> Adam (train_adam)
// The CPU reference of every pass is train/raster_grad.h and train/trainer.h (the same math; tests compare
// them per gaussian). The MCMC relocation runs on the CPU between steps (relocateDead), every refine_every
// steps, on the parameters and moments read back. Gradient sums are 64-bit fixed point, so a run is
// reproducible for a seed on one device.
#pragma once

#include <span>
#include <vector>

#include "train/dataset.h"
#include "train/raster_grad.h"
#include "train/trainer.h"

namespace sf {
class VulkanRenderer;
}

namespace sf::train {

// Whether the renderer's device can run the GPU trainer (64-bit integer buffer atomics); why not otherwise.
std::string gpuTrainingUnsupported(VulkanRenderer& renderer);

// trainGaussians on the renderer's device: the same options, the same views and backgrounds step by step, the
// same log and result (validation scores are computed by the CPU forward pass on the parameters read back, so
// they compare across backends). The train
// views must share one size. Throws sf::Error when the device cannot train or an option is bad.
TrainResult trainGaussiansVulkan(VulkanRenderer& renderer, const Dataset& dataset, GaussianParams init,
                                 const TrainOptions& options);

// One forward and backward pass on the GPU, for tests: the photometric loss (alpha_weight) of the render of
// `params` from `cam` over a grey background against `target` (premultiplied RGBA per pixel) and the
// gradients of every parameter (no entropy term).
struct GpuGradients {
  ParamGrads grads;
  double loss = 0;
};
GpuGradients gpuGradients(VulkanRenderer& renderer, const GaussianParams& params, const Camera& cam,
                          float background, std::span<const float> target, float alpha_weight);

}  // namespace sf::train
