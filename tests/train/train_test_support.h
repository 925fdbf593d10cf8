// Fixtures shared by the training suites (train_tests and train_gpu_tests).
#pragma once

#include <cmath>
#include <random>
#include <string>

#include "train/raster_grad.h"
#include "train/trainer.h"
#include "train/views.h"

namespace sf::train::test_fixtures {

// Random gaussians in [-0.6, 0.6]^3: scales 0.01-0.11, any rotation, opacity logits in [-3, 3], colour logits
// in
// [-2, 2]. Deterministic for a seed.
inline GaussianParams randomParams(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  GaussianParams p;
  p.resize(n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < 3; ++k) {
      p.means[3 * i + k] = 0.6f * u(rng);
      p.log_scales[3 * i + k] = std::log(0.01f + 0.05f * (u(rng) + 1.0f));
      p.color_logits[3 * i + k] = 2.0f * u(rng);
    }
    for (size_t k = 0; k < 4; ++k) p.quats[4 * i + k] = u(rng);
    p.opacity_logits[i] = 3.0f * u(rng);
  }
  return p;
}

// The tiny run: 300 gaussians sampled on the model, 40 train views and 4 val views at 64x64 rendered
// by the engine's views, 300 steps with the refine window [100, 250).
struct TinyRun {
  Dataset dataset;
  GaussianParams init;
  TrainOptions options;
};
inline TinyRun tinyRun(const std::string& model) {
  ViewsOptions vo;
  vo.train_count = 40;
  vo.val_count = 4;
  vo.test_count = 0;
  vo.size = 64;
  const hull::SourceMesh src = loadViewsModel(model, "", 0.0f);
  TinyRun t;
  t.dataset = renderViews(src, vo);
  t.options.budget = 300;
  t.options.steps = 300;
  t.options.refine_start = 100;
  t.options.refine_stop = 250;
  t.options.log_every = 50;
  const SurfaceSamples s = sampleSurface(src, t.options.budget, t.options.seed);
  t.init = initialParams(InitialPoints{s.positions, s.normals, s.colors}, t.options);
  return t;
}

}  // namespace sf::train::test_fixtures
