// The GPU trainer against its CPU reference: the backward pass per gaussian and per parameter kind, the loss,
// a tiny run on the Khronos box, and reproducibility (fixed-point gradient sums).
#include "train/gpu_trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "gpu/gpu.h"
#include "render/vulkan_renderer.h"
#include "support/gpu_support.h"
#include "support/test_support.h"
#include "train/train_test_support.h"
#include "train/views.h"

namespace sf::train {
namespace {

using test_fixtures::randomParams;

double relativeError(const std::vector<float>& gpu, const std::vector<float>& cpu) {
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < cpu.size(); ++i) d2 += (gpu[i] - cpu[i]) * (gpu[i] - cpu[i]), r2 += cpu[i] * cpu[i];
  return std::sqrt(d2 / std::max(r2, 1e-30));
}

TEST(GpuTrainer, BackwardMatchesTheCpuBackwardPerGaussian) {
  SF_REQUIRE_VULKAN(gpu);
  if (std::string why = gpuTrainingUnsupported(*gpu); !why.empty()) SF_SKIP_OR_FAIL(why);
  for (uint32_t seed : {3u, 4u}) {
    SCOPED_TRACE(seed);
    const GaussianParams p = randomParams(500, seed);
    const Camera cam = lookAtCamera({0.4f, 0.9f, 2.6f}, {0, 0, 0}, {0, -1, 0}, 45.0f, 72, 56);
    // A target: another random cloud's render, premultiplied, with its alpha.
    RasterState other;
    rasterForward(randomParams(300, seed + 100), cam, {0, 0, 0}, other);
    std::vector<float> target(4 * other.alpha.size());
    for (size_t pix = 0; pix < other.alpha.size(); ++pix) {
      for (size_t k = 0; k < 3; ++k) target[4 * pix + k] = other.rgb[3 * pix + k];
      target[4 * pix + 3] = other.alpha[pix];
    }
    const float grey = 0.35f;
    RasterState st;
    rasterForward(p, cam, {grey, grey, grey}, st);
    std::vector<float> d_rgb, d_alpha;
    const double cpu_loss = photometricLoss(st, target, {grey, grey, grey}, 0.3f, d_rgb, d_alpha);
    ParamGrads cpu;
    cpu.resize(p.size());
    rasterBackward(p, cam, {grey, grey, grey}, st, d_rgb, d_alpha, cpu);

    const GpuGradients g = gpuGradients(*gpu, p, cam, grey, target, 0.3f);
    EXPECT_NEAR(g.loss, cpu_loss, 1e-5 * cpu_loss);
    struct Kind {
      const char* name;
      const std::vector<float>& gpu;
      const std::vector<float>& cpu;
    };
    const Kind kinds[] = {{"means", g.grads.means, cpu.means},
                          {"quats", g.grads.quats, cpu.quats},
                          {"log_scales", g.grads.log_scales, cpu.log_scales},
                          {"opacity_logits", g.grads.opacity_logits, cpu.opacity_logits},
                          {"color_logits", g.grads.color_logits, cpu.color_logits}};
    for (const Kind& k : kinds) {
      const double e = relativeError(k.gpu, k.cpu);
      std::printf("  %-15s GPU vs CPU relative error %.2e\n", k.name, e);
      EXPECT_LT(e, 2e-3) << k.name;
    }
    // Per gaussian and kind: no value is off by more than 1e-4 of the largest of its kind (a single wrong
    // gaussian could hide in the norm above).
    for (const Kind& k : kinds) {
      double largest = 0, worst = 0;
      for (float v : k.cpu) largest = std::max(largest, static_cast<double>(std::abs(v)));
      for (size_t i = 0; i < k.cpu.size(); ++i)
        worst = std::max(worst, static_cast<double>(std::abs(k.gpu[i] - k.cpu[i])));
      EXPECT_LT(worst, 1e-4 * largest) << k.name;
    }
  }
  SF_EXPECT_VALIDATION_CLEAN(gpu);
}

// Eight splats 100-250 pixels wide over a 512x512 image: the frame's first keys overflow the renderer's
// initial key buffers (the frame and its tail run again after they grow: the tail must have done nothing the
// first time, or the sums would count twice), and the gradient sums of splats this large must stay inside the
// fixed point.
TEST(GpuTrainer, LargeSplatsAndAKeyOverflowGiveTheCpuGradients) {
  SF_REQUIRE_VULKAN(gpu);
  if (std::string why = gpuTrainingUnsupported(*gpu); !why.empty()) SF_SKIP_OR_FAIL(why);
  GaussianParams p = randomParams(8, 11);
  for (size_t i = 0; i < 8; ++i)
    for (size_t k = 0; k < 3; ++k)
      p.log_scales[3 * i + k] =
          std::log(0.12f + 0.04f * static_cast<float>(i) + 0.1f * static_cast<float>(k)),
                           p.means[3 * i + k] *= 0.3f;
  for (size_t k = 0; k < 3; ++k)
    p.log_scales[21 + k] += std::log(2.5f);  // splat 7: 500-700 px, conic sums of ~1e10 (past 2^31)
  for (size_t i = 0; i < 8; ++i)
    p.opacity_logits[i] = -1.0f;  // opacity 0.27: every splat reaches deep into the stack
  const Camera cam = lookAtCamera({0.0f, 0.3f, 2.4f}, {0, 0, 0}, {0, -1, 0}, 50.0f, 512, 512);
  std::vector<float> target(4 * 512 * 512, 0.0f);
  for (size_t pix = 0; pix < 512 * 512; ++pix) target[4 * pix] = target[4 * pix + 3] = pix % 3 ? 0.8f : 0.1f;
  RasterState st;
  rasterForward(p, cam, {0.5f, 0.5f, 0.5f}, st);
  ASSERT_GT(st.tile_keys, 8u * 4u) << "the keys must overflow the initial buffers (4 per slot)";
  std::vector<float> d_rgb, d_alpha;
  photometricLoss(st, target, {0.5f, 0.5f, 0.5f}, 0.3f, d_rgb, d_alpha);
  ParamGrads cpu;
  cpu.resize(p.size());
  rasterBackward(p, cam, {0.5f, 0.5f, 0.5f}, st, d_rgb, d_alpha, cpu);
  const GpuGradients g = gpuGradients(*gpu, p, cam, 0.5f, target, 0.3f);
  for (auto [name, a, b] :
       {std::tuple{"means", &g.grads.means, &cpu.means}, std::tuple{"quats", &g.grads.quats, &cpu.quats},
        std::tuple{"log_scales", &g.grads.log_scales, &cpu.log_scales},
        std::tuple{"opacity_logits", &g.grads.opacity_logits, &cpu.opacity_logits},
        std::tuple{"color_logits", &g.grads.color_logits, &cpu.color_logits}}) {
    const double e = relativeError(*a, *b);
    std::printf("  %-15s large splats: GPU vs CPU relative error %.2e\n", name, e);
    EXPECT_LT(e, 1e-3) << name;
  }
  SF_EXPECT_VALIDATION_CLEAN(gpu);
}

TEST(GpuTrainer, TinyRunOnTheKhronosBoxCutsValidationL1FiveFoldAndRepeatsExactly) {
  SF_REQUIRE_VULKAN(gpu);
  if (std::string why = gpuTrainingUnsupported(*gpu); !why.empty()) SF_SKIP_OR_FAIL(why);
  SF_REQUIRE_ASSET(model, "gltf/box_animated.gltf");
  const test_fixtures::TinyRun t = test_fixtures::tinyRun(model);
  const Dataset& ds = t.dataset;
  const GaussianParams& init = t.init;
  TrainOptions o = t.options;
  const TrainResult r = trainGaussiansVulkan(*gpu, ds, init, o);
  EXPECT_EQ(r.params.size(), o.budget);
  std::printf("  GPU: validation L1 %.5f -> %.5f, PSNR %.2f -> %.2f dB, %zu relocated\n", r.initial.l1,
              r.final.l1, r.initial.psnr, r.final.psnr, r.relocated);
  EXPECT_LE(r.final.l1 * 5.0, r.initial.l1);
  // The trainer scores on the device (the frame's render of its parameters); the CPU forward gives the same.
  const ValidationScore cpu_final =
      validate(r.params, ds.val.empty() ? ds.test : ds.val, o.validation_background);
  std::printf("  validation L1 scored on the device %.7f, on the CPU %.7f\n", r.final.l1, cpu_final.l1);
  EXPECT_EQ(r.final.views, cpu_final.views);
  EXPECT_NEAR(r.final.l1, cpu_final.l1, 1e-4 * cpu_final.l1);
  EXPECT_NEAR(r.final.psnr, cpu_final.psnr, 0.01);
  std::printf("  validation SSIM scored on the device %.6f, on the CPU %.6f\n", r.final.ssim, cpu_final.ssim);
  EXPECT_NEAR(r.final.ssim, cpu_final.ssim, 1e-3);
  // The same seed again: the same parameters, bit for bit (integer gradient sums); another seed differs.
  o.steps = 40;
  const TrainResult a = trainGaussiansVulkan(*gpu, ds, init, o), b = trainGaussiansVulkan(*gpu, ds, init, o);
  EXPECT_EQ(a.params.means, b.params.means);
  EXPECT_EQ(a.params.opacity_logits, b.params.opacity_logits);
  // One step per submission gives what batches of steps give (each step's own camera, background, rates).
  TrainOptions single = o;
  single.steps_per_submission = 1;
  const TrainResult one = trainGaussiansVulkan(*gpu, ds, init, single);
  EXPECT_EQ(one.params.means, a.params.means);
  EXPECT_EQ(one.params.color_logits, a.params.color_logits);
  EXPECT_EQ(one.params.log_scales, a.params.log_scales);
  ASSERT_EQ(one.log.size(), a.log.size());
  EXPECT_EQ(one.log.back().loss, a.log.back().loss);
  o.seed = 2;
  const TrainResult c = trainGaussiansVulkan(*gpu, ds, init, o);
  EXPECT_NE(a.params.means, c.params.means);
  SF_EXPECT_VALIDATION_CLEAN(gpu);
}

}  // namespace
}  // namespace sf::train
