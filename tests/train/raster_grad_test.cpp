// The differentiable rasterizer: its forward image against the CPU reference renderer, and its backward pass
// against central finite differences of the forward pass, per parameter kind.
#include "train/raster_grad.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "render/camera.h"
#include "render/cpu_renderer.h"
#include "support/test_support.h"
#include "train/train_test_support.h"

namespace sf::train {
namespace {

// Gaussians in front of a camera at the origin looking down +z (OpenCV convention), centres near the
// optical axis, 2D sigmas of 10-25 pixels: every alpha >= 1/255 contour lies outside the 32x32 image, so the
// image is a smooth function of every parameter (no splat enters or leaves a pixel's list when a parameter
// moves a little) and finite differences are exact up to rounding.
struct SmoothScene {
  Camera cam;
  GaussianParams params;
};

SmoothScene smoothScene(size_t n, uint32_t seed, float off_axis = 0.0f) {
  SmoothScene s;
  s.cam.width = s.cam.height = 32;
  s.cam.fx = s.cam.fy = 40.0f;
  s.cam.cx = s.cam.cy = 16.0f;
  s.cam.world_to_camera = Mat4{};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  s.params.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const float z = 3.5f + 0.5f * u(rng);
    const float x = (0.08f * u(rng) + (i == 0 ? off_axis : 0.0f)) * z, y = 0.08f * u(rng) * z;
    const float m[3] = {x, y, z};
    for (size_t k = 0; k < 3; ++k) {
      s.params.means[3 * i + k] = m[k];
      s.params.log_scales[3 * i + k] = std::log(1.1f + 0.5f * u(rng));
      s.params.color_logits[3 * i + k] = 1.5f * u(rng);
    }
    for (size_t k = 0; k < 4; ++k) s.params.quats[4 * i + k] = u(rng) + (k == 0 ? 1.5f : 0.0f);
    s.params.opacity_logits[i] =
        -0.6f + 0.5f * u(rng);  // opacities 0.25-0.5: no 0.99 clamp, T stays above 1e-4
  }
  return s;
}

// A random linear functional of the image: L = sum w_rgb . rgb + sum w_a . alpha (double accumulation).
struct Weights {
  std::vector<float> rgb, alpha;
};
Weights randomWeights(size_t pixels, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Weights w;
  w.rgb.resize(3 * pixels);
  w.alpha.resize(pixels);
  for (float& v : w.rgb) v = u(rng);
  for (float& v : w.alpha) v = u(rng);
  return w;
}
double lossOf(const GaussianParams& p, const Camera& cam, Vec3 bg, const Weights& w) {
  RasterState st;
  rasterForward(p, cam, bg, st);
  double l = 0;
  for (size_t i = 0; i < st.rgb.size(); ++i) l += static_cast<double>(w.rgb[i]) * st.rgb[i];
  for (size_t i = 0; i < st.alpha.size(); ++i) l += static_cast<double>(w.alpha[i]) * st.alpha[i];
  return l;
}

struct KindError {
  double relative = 0;  // |analytic - numeric| / |numeric| over every scalar of the kind (2-norms)
  double norm = 0;      // |numeric|
};

// Relative error of one parameter group's gradient against central differences.
KindError checkGroup(SmoothScene& s, Vec3 bg, const Weights& w, std::vector<float> GaussianParams::*group,
                     std::vector<float> ParamGrads::*grad_group, float eps) {
  RasterState st;
  rasterForward(s.params, s.cam, bg, st);
  ParamGrads g;
  g.resize(s.params.size());
  rasterBackward(s.params, s.cam, bg, st, w.rgb, w.alpha, g);
  double diff2 = 0, ref2 = 0;
  std::vector<float>& values = s.params.*group;
  for (size_t j = 0; j < values.size(); ++j) {
    const float keep = values[j];
    values[j] = keep + eps;
    const double lp = lossOf(s.params, s.cam, bg, w);
    values[j] = keep - eps;
    const double lm = lossOf(s.params, s.cam, bg, w);
    values[j] = keep;
    const double numeric = (lp - lm) / (2.0 * static_cast<double>(eps));
    const double analytic = (g.*grad_group)[j];
    diff2 += (analytic - numeric) * (analytic - numeric);
    ref2 += numeric * numeric;
  }
  return {std::sqrt(diff2 / ref2), std::sqrt(ref2)};
}

void expectGradientsMatch(SmoothScene s, Vec3 bg, uint32_t seed) {
  const Weights w = randomWeights(static_cast<size_t>(s.cam.width * s.cam.height), seed);
  struct Kind {
    const char* name;
    std::vector<float> GaussianParams::*group;
    std::vector<float> ParamGrads::*grad;
    float eps;
  };
  const Kind kinds[] = {
      {"means", &GaussianParams::means, &ParamGrads::means, 1e-3f},
      {"quats", &GaussianParams::quats, &ParamGrads::quats, 1e-3f},
      {"log_scales", &GaussianParams::log_scales, &ParamGrads::log_scales, 1e-3f},
      {"opacity_logits", &GaussianParams::opacity_logits, &ParamGrads::opacity_logits, 1e-3f},
      {"color_logits", &GaussianParams::color_logits, &ParamGrads::color_logits, 1e-3f}};
  for (const Kind& k : kinds) {
    const KindError e = checkGroup(s, bg, w, k.group, k.grad, k.eps);
    EXPECT_GT(e.norm, 1e-3) << k.name << ": the test scene must exercise this kind";
    EXPECT_LT(e.relative, 1e-2) << k.name
                                << ": relative error of the backward pass against central differences";
    std::printf("  %-15s relative error %.2e (|grad| %.3g)\n", k.name, e.relative, e.norm);
  }
}

TEST(RasterGrad, ForwardImageIsTheCpuRenderersImage) {
  const GaussianParams p = test_fixtures::randomParams(400, 3);
  const Camera cam = lookAtCamera({0.4f, 0.9f, 2.6f}, {0, 0, 0}, {0, -1, 0}, 45.0f, 72, 56);
  const Vec3 bg{0.3f, 0.6f, 0.9f};
  RasterState st;
  rasterForward(p, cam, bg, st);
  const GaussianCloud cloud = toCloud(p);
  RenderSettings settings;
  settings.background = bg;
  const RenderObject object(&cloud);
  const ImageRGBA ref = renderCpu(std::span<const RenderObject>(&object, 1), cam, settings);
  double max_diff = 0;
  size_t covered = 0;
  for (size_t pix = 0; pix < st.alpha.size(); ++pix) {
    for (size_t k = 0; k < 3; ++k)
      max_diff =
          std::max(max_diff, static_cast<double>(std::abs(st.rgb[3 * pix + k] - ref.pixels[4 * pix + k])));
    max_diff = std::max(max_diff, static_cast<double>(std::abs(st.alpha[pix] - ref.pixels[4 * pix + 3])));
    covered += st.alpha[pix] > 0.5f;
  }
  EXPECT_GT(covered, st.alpha.size() / 10) << "the scene must cover the image";
  // The colour goes through the SH DC term in the renderer and directly here: rounding only.
  EXPECT_LT(max_diff, 2e-6);
}

TEST(RasterGrad, BackwardMatchesCentralDifferencesPerParameterKind) {
  for (uint32_t seed : {1u, 2u}) {
    SCOPED_TRACE(seed);
    expectGradientsMatch(smoothScene(5, seed), {0.2f, 0.5f, 0.7f}, seed + 10);
  }
}

TEST(RasterGrad, BackwardMatchesCentralDifferencesWithTheFieldOfViewClamp) {
  // Gaussian 0's centre lies at x/z = 0.6, beyond the Jacobian's clamp (0.52 here): its clamped coordinate
  // follows the view depth.
  SmoothScene s = smoothScene(1, 7, 0.6f);
  const float tx = s.params.means[0] / s.params.means[2];
  ASSERT_GT(tx, 0.52f);
  expectGradientsMatch(s, {0, 0, 0}, 21);
}

TEST(RasterGrad, ClampedAlphaHasNoOpacityGradient) {
  SmoothScene s = smoothScene(1, 4);
  s.params.log_scales.assign(3, std::log(0.5f));
  s.params.opacity_logits[0] = 8.0f;  // opacity 0.9997: alpha = 0.99 at the pixels near the centre
  s.params.means = {0, 0, 3.5f};
  const Weights w = randomWeights(32 * 32, 5);
  RasterState st;
  rasterForward(s.params, s.cam, {0, 0, 0}, st);
  // Only pixels where o G <= 0.99 carry opacity gradient; zero the weights elsewhere and the gradient is 0.
  Weights inner = w;
  for (size_t pix = 0; pix < st.alpha.size(); ++pix) {
    const bool clamped = st.alpha[pix] > 0.9899f;
    for (size_t k = 0; k < 3; ++k) inner.rgb[3 * pix + k] = clamped ? w.rgb[3 * pix + k] : 0.0f;
    inner.alpha[pix] = clamped ? w.alpha[pix] : 0.0f;
  }
  ParamGrads g;
  g.resize(1);
  rasterBackward(s.params, s.cam, {0, 0, 0}, st, inner.rgb, inner.alpha, g);
  EXPECT_EQ(g.opacity_logits[0], 0.0f);
  EXPECT_EQ(g.means[0], 0.0f);
  EXPECT_NE(g.color_logits[0], 0.0f);  // colour still flows: C = c * 0.99
}

TEST(RasterGrad, PhotometricLossIsTheArticlesL1) {
  RasterState st;
  st.rgb = {0.5f, 0.5f, 0.5f, 0.0f, 0.0f, 0.0f};
  st.alpha = {1.0f, 0.0f};
  // Pixel 0: target opaque red, premultiplied; pixel 1: transparent target over a background of 0.25.
  const std::vector<float> target = {1.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  std::vector<float> d_rgb, d_alpha;
  const double loss = photometricLoss(st, target, {0.25f, 0.25f, 0.25f}, 0.3f, d_rgb, d_alpha);
  // |0.5-1| + |0.5| + |0.5| + 3 |0 - 0.25| = 2.25 over 6 values; alpha: |1 - 1| + |0 - 0| = 0.
  EXPECT_NEAR(loss, 2.25 / 6.0, 1e-7);
  EXPECT_FLOAT_EQ(d_rgb[0], -1.0f / 6.0f);
  EXPECT_FLOAT_EQ(d_rgb[1], 1.0f / 6.0f);
  EXPECT_FLOAT_EQ(d_rgb[3], -1.0f / 6.0f);
  EXPECT_EQ(d_alpha[0], 0.0f);
}

TEST(RasterGrad, CloudRoundTrip) {
  const GaussianCloud cloud = sf::test::randomCloud(50, 0, 9);
  GaussianParams p = fromCloud(cloud);
  const GaussianCloud back = toCloud(p);
  for (size_t i = 0; i < cloud.size(); ++i) {
    EXPECT_NEAR(back.positions[i].x, cloud.positions[i].x, 1e-6);
    EXPECT_NEAR(back.scales[i].y, cloud.scales[i].y, 1e-6 * cloud.scales[i].y + 1e-9);
    EXPECT_NEAR(back.opacities[i], cloud.opacities[i], 1e-5);
    // Rotations as unit quaternions up to sign; the DC colour term (degree 0 keeps it exactly, up to
    // rounding).
    const Quat a = back.rotations[i], b = normalize(cloud.rotations[i]);
    EXPECT_NEAR(std::abs(a.w * b.w + a.x * b.x + a.y * b.y + a.z * b.z), 1.0, 1e-6);
    for (size_t k = 0; k < 3; ++k)
      EXPECT_NEAR(back.sh[3 * i + k], cloud.sh[i * static_cast<size_t>(cloud.shStride()) + k], 2e-5);
  }
}

}  // namespace
}  // namespace sf::train
