// The frame's tile rasterizer as a differentiable function, on the CPU: the forward pass is the CPU
// reference renderer's math (render/cpu_renderer.h: projectSplat, the global (tile, depth) sort, the
// per-pixel front-to-back blend) with the state the backward pass needs kept, and the backward pass is its
// exact gradient (the INRIA rasterizer's backward order: per tile back to front through each pixel's
// list, then per gaussian through the EWA projection and the covariance to the parameters).
//
// The parameters are those of the destructible-hull article's trainer: means, quaternions (any length;
// normalised inside), log-scales, opacity logits (opacity = sigmoid) and colour logits (direct RGB through a
// sigmoid, no spherical harmonics). The forward image of a parameter set equals renderCpu() of
// toCloud(params) over the same camera and background (tested), so a trained cloud renders identically
// everywhere.
//
// Gradients are exact where the function is smooth. It is piecewise smooth: a splat's tile rectangle, the
// 1/255 alpha cut, the 0.99 alpha clamp (gradient 0 above it), the 1e-4 transmittance stop and the field of
// view clamp of the EWA Jacobian (handled exactly: a clamped coordinate follows the view depth) change only
// at isolated parameter values.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/gaussian_cloud.h"
#include "core/math.h"
#include "render/camera.h"
#include "render/cpu_renderer.h"

namespace sf::train {

// Trainable parameters, one flat array per group (the optimiser's parameter groups), N gaussians:
// means 3N, quats 4N (w, x, y, z), log_scales 3N, opacity_logits N, color_logits 3N.
struct GaussianParams {
  std::vector<float> means, quats, log_scales, opacity_logits, color_logits;

  size_t size() const { return opacity_logits.size(); }
  void resize(size_t n);
  // Empty when the arrays agree in size; otherwise what is wrong.
  const char* validate() const;
};

// Activated values of gaussian i.
Vec3 meanOf(const GaussianParams& p, size_t i);
Quat rotationOf(const GaussianParams& p, size_t i);  // normalised
Vec3 scaleOf(const GaussianParams& p, size_t i);     // exp(log_scales)
float opacityOf(const GaussianParams& p, size_t i);  // sigmoid(logit)
Vec3 colorOf(const GaussianParams& p, size_t i);     // sigmoid(logits), display-encoded RGB

inline float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}
inline float logit(float p) {
  return std::log(p / (1.0f - p));
}

// The parameters as a renderable cloud: SH degree 0 with DC = (rgb - 0.5) / C0, sRGB colour space.
GaussianCloud toCloud(const GaussianParams& params);
// A cloud as parameters (inverse of toCloud; colours and opacities clamped into (1e-4, 1 - 1e-4) first; a
// cloud with SH degree > 0 keeps its DC term only).
GaussianParams fromCloud(const GaussianCloud& cloud);

// What the forward pass keeps for the backward pass.
struct RasterState {
  int width = 0, height = 0;
  std::vector<ProjectedSplat> projected;  // per gaussian (meaningless where !visible)
  std::vector<uint8_t> visible;
  TileLists lists;             // the frame's tile lists (buildTileLists, render/cpu_renderer.h)
  std::vector<float> final_t;  // per pixel: transmittance after the last blended splat
  std::vector<uint32_t>
      last;  // per pixel: 1 + position in its tile's list of the last splat blended (0: none)
  // The image: rgb (3 per pixel, composited over the background) and alpha = 1 - final_t, top row first.
  std::vector<float> rgb, alpha;
  size_t tile_keys = 0;
};

// Forward pass over one camera. The camera must be valid.
void rasterForward(const GaussianParams& params, const Camera& cam, Vec3 background, RasterState& state);

// Gradients, same layout as GaussianParams.
struct ParamGrads {
  std::vector<float> means, quats, log_scales, opacity_logits, color_logits;
  void resize(size_t n);  // and zero
  void zero();
};

// Backward pass: given dL/d(rgb) (3 per pixel) and dL/d(alpha) (1 per pixel) of the image the forward pass
// made, adds dL/d(parameters) to `grads` (sized to the parameters). `state` must come from rasterForward
// with the same parameters, camera and background.
void rasterBackward(const GaussianParams& params, const Camera& cam, Vec3 background,
                    const RasterState& state, std::span<const float> d_rgb, std::span<const float> d_alpha,
                    ParamGrads& grads);

// The article's photometric loss against a premultiplied RGBA target over background b:
// mean |rgb - (target_rgb + (1 - target_alpha) b)| + alpha_weight * mean |alpha - target_alpha|, with its
// gradients written to d_rgb / d_alpha (resized). target_rgba holds 4 floats per pixel.
double photometricLoss(const RasterState& state, std::span<const float> target_rgba, Vec3 background,
                       float alpha_weight, std::vector<float>& d_rgb, std::vector<float>& d_alpha);

}  // namespace sf::train
