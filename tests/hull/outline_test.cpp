// The hull outline (hull/outline.h): the band against closed forms (a square core's pixels seen head-on: the
// band is clamp(width + 0.5 - distance to the square, 0, 1) at every pixel; a disc's annulus), the Vulkan
// passes against the CPU reference per pixel, a whole frame on both backends with a selected hull outlined
// and an unselected one untouched, the hit flash's timing, and bad script / scene JSON input.
#include "hull/outline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "frame/frame.h"
#include "gpu/gpu.h"
#include "hull/hull_script.h"
#include "hull/outline_pass.h"
#include "io/formats.h"
#include "io/spl2.h"
#include "scene/kinds/hull.h"
#include "scene/scene.h"
#include "support/gpu_support.h"
#include "support/test_support.h"

namespace sf {
namespace {

ImageRGBA flatImage(int w, int h, Vec3 c, float alpha) {
  ImageRGBA im(w, h);
  for (size_t i = 0; i < im.pixels.size(); i += 4)
    im.pixels[i] = c.x, im.pixels[i + 1] = c.y, im.pixels[i + 2] = c.z, im.pixels[i + 3] = alpha;
  return im;
}

TEST(HullOutline, SquareCoreBandIsTheClosedForm) {
  const int w = 64, h = 48;
  std::vector<float> mask(static_cast<size_t>(w * h), 0.0f);
  for (int y = 20; y < 30; ++y)
    for (int x = 18; x < 40; ++x) mask[static_cast<size_t>(y * w + x)] = 1;
  for (float width : {1.0f, 2.5f, 3.0f}) {
    const Vec3 grey{0.3f, 0.4f, 0.5f}, colour{1, 0, 0};
    ImageRGBA im = flatImage(w, h, grey, 0.25f);
    hull::applyOutline(im, mask, {colour, width, 1.0f});
    int full = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        // Distance from the pixel centre to the square of covered pixel centres [18, 39] x [20, 29].
        const float dx = static_cast<float>(std::max({18 - x, 0, x - 39}));
        const float dy = static_cast<float>(std::max({20 - y, 0, y - 29}));
        const float dist = std::sqrt(dx * dx + dy * dy);
        const float a = dist == 0 ? 0.0f : std::clamp(width + 1.0f - dist, 0.0f, 1.0f);
        const float* p = &im.pixels[static_cast<size_t>(y * w + x) * 4];
        for (int c = 0; c < 3; ++c)
          ASSERT_NEAR(p[c], grey[c] * (1 - a) + colour[c] * a, 1e-6f) << x << "," << y;
        ASSERT_NEAR(p[3], 0.25f + 0.75f * a, 1e-6f);
        full += a == 1.0f;
      }
    // Along each side, floor(width) full rows of band: the band is that many pixels wide.
    const int rows = static_cast<int>(std::floor(width));
    EXPECT_GE(full, 2 * rows * (22 + 10)) << width;
  }
}

TEST(HullOutline, DiscCoreBandIsTheAnnulus) {
  const int w = 64, h = 64;
  const float cx = 31.5f, cy = 32.0f, radius = 10.0f, width = 4.0f;
  std::vector<float> mask(static_cast<size_t>(w * h), 0.0f);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {  // coverage by 16 x 16 samples
      int in = 0;
      for (int sy = 0; sy < 16; ++sy)
        for (int sx = 0; sx < 16; ++sx) {
          const float px = static_cast<float>(x) - 0.5f + (static_cast<float>(sx) + 0.5f) / 16,
                      py = static_cast<float>(y) - 0.5f + (static_cast<float>(sy) + 0.5f) / 16;
          in += (px - cx) * (px - cx) + (py - cy) * (py - cy) <= radius * radius;
        }
      mask[static_cast<size_t>(y * w + x)] = static_cast<float>(in) / 256.0f;
    }
  const Vec3 black{0, 0, 0}, white{1, 1, 1};
  ImageRGBA im = flatImage(w, h, black, 0.0f);
  hull::applyOutline(im, mask, {white, width, 1.0f});
  double sum = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const float r = std::hypot(static_cast<float>(x) - cx, static_cast<float>(y) - cy);
      const float a = im.pixels[static_cast<size_t>(y * w + x) * 4];
      sum += a;
      // Fully covered pixels keep their colour; pixels past the band's reach are untouched; the band's
      // inner width - 1.5 pixels (a covered pixel centre within width) are the outline's colour exactly.
      if (r < radius - 0.75f || r > radius + width + 1.75f) {
        ASSERT_EQ(a, 0.0f) << x << "," << y;
      }
      if (r > radius + 0.75f && r < radius + width - 1.45f) {
        ASSERT_EQ(a, 1.0f) << x << "," << y;
      }
    }
  const double annulus = M_PI * ((radius + width) * (radius + width) - radius * radius);
  EXPECT_NEAR(sum, annulus, 0.06 * annulus);
}

TEST(HullOutline, HitFlashTiming) {
  const hull::HullScript script = hull::parseHullScript(
      R"({"events": [{"time": 1.0, "hit": "shot"}, {"time": 2.0, "select": true, "width": 3},
                     {"time": 3.0, "hit": "blast", "flash": 0.5}, {"time": 4.0, "select": false},
                     {"time": 5.0, "hit": "shot", "flash": 0}]})",
      "s.json");
  const hull::OutlineSpec none;
  EXPECT_FALSE(hull::outlineAt(none, &script, 0.99));
  auto at = [&](double t) { return hull::outlineAt(none, &script, t); };
  ASSERT_TRUE(at(1.0));
  EXPECT_FLOAT_EQ(at(1.0)->strength, 1.0f);
  EXPECT_NEAR(at(1.15)->strength, 0.5f, 1e-5f);  // 1 - 0.15 / 0.3
  EXPECT_EQ(at(1.15)->color.x, hull::kHitFlashColor.x);
  EXPECT_FALSE(at(1.0 + hull::kHitFlashSeconds));  // the flash is over
  EXPECT_FALSE(at(1.9));
  ASSERT_TRUE(at(2.5));  // selected, width 3, the default colour
  EXPECT_EQ(at(2.5)->width, 3.0f);
  EXPECT_EQ(at(2.5)->color.y, hull::kOutlineColor.y);
  // A hit on a selected hull: the colour moves to the flash's and back over 0.5 s, at full strength.
  const auto mid = at(3.25);
  ASSERT_TRUE(mid);
  EXPECT_FLOAT_EQ(mid->strength, 1.0f);
  EXPECT_NEAR(mid->color.y, 0.5f * hull::kOutlineColor.y + 0.5f * hull::kHitFlashColor.y, 1e-5f);
  EXPECT_EQ(at(3.6)->color.y, hull::kOutlineColor.y);
  EXPECT_FALSE(at(4.0));
  EXPECT_FALSE(at(5.0));  // "flash": 0
  // Selected from the scene at time 0 without a script.
  hull::OutlineSpec sel;
  sel.selected = true;
  ASSERT_TRUE(hull::outlineAt(sel, nullptr, 0.0));
  EXPECT_EQ(hull::outlineAt(sel, nullptr, 0.0)->width, hull::kOutlineWidth);
}

TEST(HullOutline, BadInputNamesTheJsonPath) {
  auto scriptError = [](const std::string& events) {
    return test::errorOf([&] { hull::parseHullScript(R"({"events": [)" + events + "]}", "s.json"); });
  };
  EXPECT_NE(scriptError(R"({"time": 1, "select": 1})").find("s.json: events[0].select: expected true"),
            std::string::npos);
  EXPECT_NE(scriptError(R"({"time": 1, "hit": "shot"}, {"time": 1, "select": true, "width": 40})")
                .find("events[1].width: expected a width in pixels in [0.5, 16]"),
            std::string::npos);
  EXPECT_NE(scriptError(R"({"time": 1, "select": true, "colour": [1, 0, 0]})").find("events[0].colour"),
            std::string::npos);
  EXPECT_NE(scriptError(R"({"time": 1, "hit": "shot", "flash": -1})").find("events[0].flash"),
            std::string::npos);
  const std::string dir = test::tempDir("HullOutline.Json");
  saveSplats(test::randomCloud(10, 0, 1), dir + "/s.ply");
  auto sceneError = [&](const std::string& text) {
    return test::errorOf([&] { parseSceneJson(text, dir + "/scene.json", {}); });
  };
  EXPECT_NE(sceneError(R"({"objects": [{"file": "s.ply", "outline": true}]})")
                .find("objects[0].outline: \"outline\" applies to hull objects only"),
            std::string::npos);
  EXPECT_NE(sceneError(R"({"objects": [{"hull": "h.spl2", "outline": {"color": [1, 2, 0]}}]})")
                .find("objects[0].outline.color: expected colour components in [0, 1]"),
            std::string::npos);
  EXPECT_NE(sceneError(R"({"objects": [{"hull": "h.spl2", "outline": "yes"}]})")
                .find("objects[0].outline: expected"),
            std::string::npos);
}

// The capture and composite passes on the device against applyOutline, per pixel, on a random soft mask.
TEST(HullOutline, VulkanPassesMatchTheCpuReference) {
  SF_REQUIRE_VULKAN(renderer);
  gpu::Context& ctx = renderer->context();
  const uint32_t w = 53, h = 37;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0, 1);
  ImageRGBA masked(static_cast<int>(w), static_cast<int>(h)), frame(static_cast<int>(w), static_cast<int>(h));
  for (size_t i = 0; i < masked.pixels.size(); ++i) frame.pixels[i] = u(rng);
  for (uint32_t y = 0; y < h; ++y)
    for (uint32_t x = 0; x < w; ++x) {  // blobs with soft edges, some pixels exactly 0 or 1
      const float d = std::hypot(static_cast<float>(x) - 20.0f, static_cast<float>(y) - 15.0f);
      const float e = std::hypot(static_cast<float>(x) - 44.0f, static_cast<float>(y) - 30.0f);
      masked.pixels[(y * w + x) * 4 + 3] =
          std::max(std::clamp(9.0f - d, 0.0f, 1.0f), e < 5 ? std::min(1.0f, u(rng) * 1.5f) : 0.0f);
    }
  const std::vector<float> mask = hull::coverageMask(masked);
  for (const hull::OutlineStyle style :
       {hull::OutlineStyle{{1, 0.5f, 0}, 2.0f, 1.0f}, hull::OutlineStyle{{0.2f, 0.9f, 1}, 3.7f, 0.6f},
        hull::OutlineStyle{{1, 1, 1}, 0.5f, 1.0f}}) {
    hull::OutlineGpu outline(ctx);
    outline.reserve(1, w, h);
    const VkDeviceSize bytes = static_cast<VkDeviceSize>(w) * h * 16;
    gpu::Buffer a = ctx.createBuffer(bytes, true, "a"), b = ctx.createBuffer(bytes, true, "b"),
                c = ctx.createBuffer(bytes, true, "c"), d = ctx.createBuffer(bytes, true, "d");
    std::memcpy(a.mapped, masked.pixels.data(), bytes);
    std::memcpy(c.mapped, frame.pixels.data(), bytes);
    {
      const auto lock = ctx.lock();
      VkCommandBuffer cmd = ctx.begin();
      test::recordContributed(cmd, hull::OutlineGpu::Capture(outline, 0), a.address, b.address, w, h);
      gpu::computeBarrier(cmd);
      test::recordContributed(cmd, hull::OutlineGpu::Composite(outline, 0, style), c.address, d.address, w,
                              h);
      ctx.submit(cmd);
    }
    ImageRGBA expected = frame;
    hull::applyOutline(expected, mask, style);
    const float* passed = static_cast<const float*>(b.mapped);
    const float* got = static_cast<const float*>(d.mapped);
    int outlined = 0;
    for (size_t i = 0; i < expected.pixels.size(); ++i) {
      ASSERT_EQ(passed[i], masked.pixels[i]) << i;  // the capture passes the image through
      ASSERT_NEAR(got[i], expected.pixels[i], 2e-6f) << "pixel " << i / 4 << " channel " << i % 4;
      outlined += expected.pixels[i] != frame.pixels[i];
    }
    EXPECT_GT(outlined, 100);
  }
  SF_EXPECT_VALIDATION_CLEAN(renderer);
}

// A hull of n splats on a Fibonacci sphere of radius 0.5, every one a core octagon or (odd ones) a shell
// splat.
Spl2Hull sphereHull(size_t n) {
  Spl2Hull hh;
  std::vector<size_t> core_rows, shell_rows;
  for (size_t i = 0; i < n; ++i) (i % 2 == 0 ? core_rows : shell_rows).push_back(i);
  hh.core.resize(core_rows.size());
  hh.shell.resize(shell_rows.size());
  auto put = [&](Spl2Block& b, size_t k, size_t i, bool is_core) {
    const auto [nrm, t0, t1] = test::fibonacciSphereFrame(i, n);
    const float op = is_core ? 0.95f : 0.5f;
    const float s = 0.07f * (is_core ? spl2CoreRadius(op) : 1.0f);
    b.pos[k] = nrm * 0.5f, b.normal[k] = nrm, b.opacity[k] = op;
    b.color[k] = {0.2f, 0.5f, 0.3f};
    b.ax0[k] = t0 * s, b.ax1[k] = t1 * s;
    b.attrs[k] = {255.0f, 0.0f, 0.0f, static_cast<float>(k % 256)};
  };
  for (size_t k = 0; k < core_rows.size(); ++k) put(hh.core, k, core_rows[k], true);
  for (size_t k = 0; k < shell_rows.size(); ++k) put(hh.shell, k, shell_rows[k], false);
  hh.orders = spl2ShellOrders(hh.shell.pos, kSpl2Buckets, 41.0f);
  return hh;
}

// Two hulls side by side, the left one selected: the frame differs from the unoutlined one only around the
// left hull (never within the right hull's reach), the band is there, and CPU and Vulkan agree.
TEST(HullOutline, FrameOutlinesOnlyTheSelectedHull) {
  const std::string dir = test::tempDir("HullOutline.Frame");
  saveSpl2(sphereHull(1200), dir + "/h.spl2");
  const std::string objects =
      R"({"hull": "h.spl2", "name": "left", "transform": [1,0,0,-0.8, 0,1,0,0, 0,0,1,0, 0,0,0,1]OUTLINE},
         {"hull": "h.spl2", "name": "right", "transform": [1,0,0,0.8, 0,1,0,0, 0,0,1,0, 0,0,0,1]})";
  auto scene = [&](const std::string& outline) {
    std::string o = objects;
    o.replace(o.find("OUTLINE"), 7, outline);
    return parseSceneJson(R"({"objects": [)" + o + "]}", dir + "/scene.json", {});
  };
  const Scene plain = scene(""), selected = scene(R"(, "outline": {"color": [1, 0, 1], "width": 3})");
  const Camera cam = lookAtCamera({0, 0, 4}, {0, 0, 0}, {0, 1, 0}, 40.0f, 96, 64);
  FrameRequest request{0, cam, {}, {}};
  request.settings.background = {0.1f, 0.1f, 0.1f};
  FrameDriverOptions cpu_options;
  cpu_options.backend = Backend::kCpu;
  FrameDriver cpu(cpu_options);
  const FrameResult before = cpu.render(plain, request);
  const FrameResult after = cpu.render(selected, request);
  EXPECT_EQ(before.outlined, 0u);
  EXPECT_EQ(after.outlined, 1u);
  // The hulls' own coverage: the right one alone, to keep its neighbourhood out of the band.
  const int w = cam.width, h = cam.height;
  int changed = 0, magenta = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const size_t i = static_cast<size_t>(y * w + x) * 4;
      const bool differs = std::memcmp(&before.image.pixels[i], &after.image.pixels[i], 16) != 0;
      changed += differs;
      if (x >= w / 2 + 2) {  // the right half: the unselected hull
        ASSERT_FALSE(differs) << x << "," << y;
      }
      magenta += after.image.pixels[i] > 0.9f && after.image.pixels[i + 1] < 0.05f &&
                 after.image.pixels[i + 2] > 0.9f;
    }
  EXPECT_GT(changed, 60);
  EXPECT_GT(magenta, 30);
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  FrameDriverOptions vk_options;
  vk_options.backend = Backend::kVulkan;
  vk_options.validation = true;
  FrameDriver vk(vk_options);
  const FrameResult g = vk.render(selected, request);
  const FrameResult g_plain = vk.render(plain, request);
  EXPECT_EQ(g.outlined, 1u);
  // Per pixel: the outline's share (after - before) on both backends, and the frames themselves.
  double worst = 0, worst_outline = 0;
  for (size_t i = 0; i < g.image.pixels.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(g.image.pixels[i] - after.image.pixels[i])));
    worst_outline =
        std::max(worst_outline, std::abs(static_cast<double>(g.image.pixels[i] - g_plain.image.pixels[i]) -
                                         (after.image.pixels[i] - before.image.pixels[i])));
  }
  double mean_outline = 0;
  for (size_t i = 0; i < g.image.pixels.size(); ++i)
    mean_outline += std::abs(static_cast<double>(g.image.pixels[i] - g_plain.image.pixels[i]) -
                             (after.image.pixels[i] - before.image.pixels[i]));
  mean_outline /= static_cast<double>(g.image.pixels.size());
  std::printf("CPU vs Vulkan: frame max %.4f, outline max %.4f mean %.2e\n", worst, worst_outline,
              mean_outline);
  // The masks are two renders of the same hull (the backends' own rounding): a partly covered edge pixel's
  // coverage may differ by a few hundredths, and the band's rim with it.
  EXPECT_LT(worst, 0.05) << "CPU vs Vulkan frame";
  EXPECT_LT(worst_outline, 0.05) << "CPU vs Vulkan outline";
  EXPECT_LT(mean_outline, 1e-3) << "CPU vs Vulkan outline";
}

}  // namespace
}  // namespace sf
