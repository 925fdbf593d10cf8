// The adaptive resolution's choice of scale (view/render_scale.h): full resolution at rest, when off and
// before any frame was measured; while the camera moves, the largest scale whose predicted time keeps the
// target (from one scale, in proportion to the pixels; from several, a fixed part plus a part in proportion);
// when none does, a larger scale that costs little more than the smallest; driven frame after frame by
// renderers whose cost does not shrink with the pixels, a scale that settles without oscillating. And the
// scaled camera: a smaller image stretched over the larger lands where the larger one's pixels would.
#include "view/render_scale.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "render/camera.h"

namespace sf {
namespace {

using view::RenderSample;

TEST(RenderScale, FullResolutionAtRestWhenOffAndBeforeAnyMeasure) {
  const view::RenderScaleOptions o;  // 50 ms, 0.25 s
  const std::vector<RenderSample> slow = {{400, 1}, {420, 1}, {410, 1}};
  EXPECT_EQ(view::chooseRenderScale(slow, 0.25, o), 1.0f);  // rested for exactly the rest time
  EXPECT_EQ(view::chooseRenderScale(slow, 10.0, o), 1.0f);
  EXPECT_EQ(view::chooseRenderScale({}, 0.0, o), 1.0f);  // moving, but nothing measured yet
  view::RenderScaleOptions off = o;
  off.adaptive = false;
  EXPECT_EQ(view::chooseRenderScale(slow, 0.0, off), 1.0f);
  // Moving: 410 ms at full size predicts 102 ms at 1/2 and 26 ms at 1/4.
  EXPECT_EQ(view::chooseRenderScale(slow, 0.0, o), 0.25f);
  EXPECT_EQ(view::chooseRenderScale(slow, 0.24, o), 0.25f);
}

TEST(RenderScale, LargestScaleWithinTheTarget) {
  view::RenderScaleOptions o;
  o.target_ms = 50;
  // Fast enough at full size: stays there while moving.
  EXPECT_EQ(view::chooseRenderScale(std::vector<RenderSample>{{12, 1}, {14, 1}}, 0, o), 1.0f);
  // 120 ms at full size: 30 ms at 1/2.
  EXPECT_EQ(view::chooseRenderScale(std::vector<RenderSample>{{120, 1}}, 0, o), 0.5f);
  // From half-size frames of 10 ms: 40 ms predicted at full size, within the target: back up.
  EXPECT_EQ(view::chooseRenderScale(std::vector<RenderSample>{{10, 0.5f}, {10, 0.5f}}, 0, o), 1.0f);
  // Nothing fits: the smallest scale.
  EXPECT_EQ(view::chooseRenderScale(std::vector<RenderSample>{{900, 0.25f}}, 0, o), 0.25f);
  // A tighter target picks a smaller scale from the same frames.
  o.target_ms = 20;
  EXPECT_EQ(view::chooseRenderScale(std::vector<RenderSample>{{120, 1}}, 0, o), 0.25f);
}

TEST(RenderScale, MedianOfTheLastFramesOnly) {
  const view::RenderScaleOptions o;
  // One slow frame (a scene upload) among fast ones does not move the scale; only the last 4 count.
  const std::vector<RenderSample> one_slow = {{30, 1}, {30, 1}, {800, 1}, {30, 1}};
  EXPECT_EQ(view::chooseRenderScale(one_slow, 0, o), 1.0f);
  const std::vector<RenderSample> old_slow = {{800, 1}, {800, 1}, {800, 1}, {30, 1},
                                              {30, 1},  {30, 1},  {30, 1}};
  EXPECT_EQ(view::chooseRenderScale(old_slow, 0, o), 1.0f);
  // Two of four slow: the upper median decides (a single fast frame does not pull the scale up).
  const std::vector<RenderSample> half_slow = {{30, 1}, {200, 1}, {30, 1}, {200, 1}};
  EXPECT_EQ(view::chooseRenderScale(half_slow, 0, o), 0.5f);
}

// Drives the choice frame after frame against a renderer costing `cost(scale)`, from one full-size frame at
// rest, keeping the last kRenderScaleSamples of each scale as the viewer does; returns the scales chosen.
std::vector<float> drive(const std::function<double(float)>& cost, int frames) {
  const view::RenderScaleOptions o;
  std::vector<RenderSample> samples = {{cost(1), 1}};
  std::vector<float> chosen;
  for (int i = 0; i < frames; ++i) {
    const float s = view::chooseRenderScale(samples, 0, o);
    chosen.push_back(s);
    samples.push_back({cost(s), s});
  }
  return chosen;
}

TEST(RenderScale, SettlesWithAFixedCostPart) {
  // 40 ms whatever the size plus 80 ms of pixels at full size: 120 ms full predicts 30 ms at 1/2; measured
  // 60 ms there, the fit finds 40 + 80 s^2 and 1/4 keeps the target (45 ms), where it stays.
  const std::vector<float> a = drive([](float s) { return 40.0 + 80.0 * static_cast<double>(s * s); }, 12);
  EXPECT_EQ(a[0], 0.5f);
  for (size_t i = 1; i < a.size(); ++i) EXPECT_EQ(a[i], 0.25f) << "frame " << i;
  // lavapipe with a capture of 150k splats at 800x450 (measured: 379 ms full, 283 ms at 1/2, 249 ms at 1/4):
  // nothing keeps 50 ms; 1/2 costs a seventh more than 1/4 for four times the pixels, so the scale settles
  // at 1/2 after one frame at 1/4 has shown how little it saves.
  const std::vector<float> b = drive([](float s) { return 240.0 + 139.0 * static_cast<double>(s * s); }, 12);
  EXPECT_EQ(b[0], 0.25f);
  for (size_t i = 1; i < b.size(); ++i) EXPECT_EQ(b[i], 0.5f) << "frame " << i;
  // A fast device: full size keeps the target and stays.
  for (float s : drive([](float s) { return 2.0 + 30.0 * static_cast<double>(s * s); }, 6))
    EXPECT_EQ(s, 1.0f);
}

TEST(RenderScale, FitsAFixedPartFromTwoScales) {
  const view::RenderScaleOptions o;
  // 100 ms at full size and 70 ms at 1/2: 60 + 40 s^2, so 62.5 ms at 1/4: nothing keeps 50 ms, and 1/2 is
  // within a quarter of 1/4's time.
  const std::vector<RenderSample> two = {{100, 1}, {70, 0.5f}};
  EXPECT_EQ(view::chooseRenderScale(two, 0, o), 0.5f);
  // Full size barely dearer than a quarter (a fixed cost): full size.
  const std::vector<RenderSample> flat = {{110, 1}, {100, 0.25f}};
  EXPECT_EQ(view::chooseRenderScale(flat, 0, o), 1.0f);
  // Cheaper at full size than at 1/2 (noise): no pixel part, the mean for every scale.
  const std::vector<RenderSample> odd = {{40, 1}, {46, 0.5f}};
  EXPECT_EQ(view::chooseRenderScale(odd, 0, o), 1.0f);
}

TEST(RenderScale, ScaledCameraLandsPixelsOnTheLargerImage) {
  EXPECT_EQ(view::scaledSize(1280, 0.25f), 320);
  EXPECT_EQ(view::scaledSize(801, 0.5f), 401);  // rounded
  EXPECT_EQ(view::scaledSize(3, 0.25f), 1);     // at least a pixel
  const Camera full = lookAtCamera(Vec3{0.3f, -0.2f, -4}, Vec3{0, 0, 0}, Vec3{0, -1, 0}, 50, 800, 450);
  const Camera small = view::scaleCamera(full, 200, 113);
  EXPECT_EQ(small.width, 200);
  EXPECT_EQ(small.height, 113);
  // A world point's continuous pixel coordinates scale with each axis' size ratio.
  for (const Vec3 p : {Vec3{0.5f, 0.25f, 1}, Vec3{-1, 0.7f, -0.5f}}) {
    const Vec3 q = transformPoint(full.world_to_camera, p);
    const float u = full.fx * q.x / q.z + full.cx, v = full.fy * q.y / q.z + full.cy;
    const float us = small.fx * q.x / q.z + small.cx, vs = small.fy * q.y / q.z + small.cy;
    EXPECT_NEAR(us, u * 200.0f / 800.0f, 1e-3f);
    EXPECT_NEAR(vs, v * 113.0f / 450.0f, 1e-3f);
  }
  EXPECT_EQ(view::scaleCamera(full, 800, 450).fx, full.fx);
}

}  // namespace
}  // namespace sf
