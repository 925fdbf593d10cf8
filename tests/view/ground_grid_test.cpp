// The viewer's ground grid and axes (view/ground_grid.h): the compositing rule against the splats' depth
// plane (over the frame in front of the splats and meshes, through the splats' transmittance behind them,
// hidden behind an opaque mesh), the lines where the plane's integer coordinates project, nothing above the
// horizon or past the fade distance, the axes in their colours where the axes project, and a frame covered by
// near opaque splats left as it was.
#include "view/ground_grid.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/image.h"
#include "render/camera.h"

namespace sf {
namespace {

constexpr Vec3 kGrey{0.5f, 0.5f, 0.5f};

ImageRGBA filled(int w, int h, Vec3 c, bool depth) {
  ImageRGBA img(w, h);
  for (size_t i = 0; i < img.pixels.size(); i += 4)
    img.pixels[i] = c.x, img.pixels[i + 1] = c.y, img.pixels[i + 2] = c.z, img.pixels[i + 3] = 0;
  if (depth)
    for (size_t i = 0; i < img.pixels.size() / 4; ++i) img.depth.push_back(0), img.depth.push_back(1);
  return img;
}

std::pair<float, float> project(const Camera& c, Vec3 p) {
  const Vec3 q = transformPoint(c.world_to_camera, p);
  return {c.fx * q.x / q.z + c.cx, c.fy * q.y / q.z + c.cy};
}

TEST(GroundGrid, CompositesAgainstTheSplatsDepth) {
  const Vec3 line{1, 1, 1};
  // No depth plane: over the frame.
  ImageRGBA a = filled(1, 1, kGrey, false);
  view::compositeBehindSplats(a, 0, kGrey, line, 0.5f, 10);
  EXPECT_FLOAT_EQ(a.pixels[0], 0.75f);
  // An empty pixel of a frame with depth: over the frame.
  ImageRGBA b = filled(1, 1, kGrey, true);
  view::compositeBehindSplats(b, 0, kGrey, line, 0.5f, 10);
  EXPECT_FLOAT_EQ(b.pixels[0], 0.75f);
  // Opaque splats at depth 5 (a red surface): a line behind them is hidden, one in front drawn over them.
  ImageRGBA c = filled(1, 1, Vec3{1, 0, 0}, true);
  c.pixels[3] = 1, c.depth[0] = 5, c.depth[1] = 0;
  ImageRGBA front = c;
  view::compositeBehindSplats(c, 0, kGrey, line, 0.5f, 10);
  EXPECT_FLOAT_EQ(c.pixels[0], 1.0f);
  EXPECT_FLOAT_EQ(c.pixels[1], 0.0f);
  view::compositeBehindSplats(front, 0, kGrey, line, 0.5f, 2);
  EXPECT_FLOAT_EQ(front.pixels[1], 0.5f);
  // Half-transparent splats at depth 5 (T = 0.5, so D = 2.5): behind them the line shows at half strength
  // in place of the background.
  ImageRGBA d = filled(1, 1, Vec3{0.6f, 0.4f, 0.5f}, true);
  d.pixels[3] = 0.5f, d.depth[0] = 2.5f, d.depth[1] = 0.5f;
  view::compositeBehindSplats(d, 0, kGrey, line, 0.5f, 10);
  EXPECT_NEAR(d.pixels[0], 0.6f + 0.5f * 0.5f * 0.5f, 1e-6f);
  EXPECT_NEAR(d.pixels[1], 0.4f + 0.5f * 0.5f * 0.5f, 1e-6f);
  // An opaque mesh at depth 4 with no splats in front (the plane holds D = 4, T = 0): a line behind it is
  // hidden, one in front of it drawn over it.
  ImageRGBA m = filled(1, 1, Vec3{0.2f, 0.3f, 0.4f}, true);
  m.pixels[3] = 1, m.depth[0] = 4, m.depth[1] = 0;
  ImageRGBA m_front = m;
  view::compositeBehindSplats(m, 0, kGrey, line, 0.5f, 6);
  EXPECT_FLOAT_EQ(m.pixels[0], 0.2f);
  view::compositeBehindSplats(m_front, 0, kGrey, line, 0.5f, 2);
  EXPECT_FLOAT_EQ(m_front.pixels[0], 0.6f);
}

TEST(GroundGrid, LinesOnTheIntegerCoordinatesAxesInTheirColours) {
  // y up, the plane y = -1 below the origin, seen from above and in front.
  const Camera cam = lookAtCamera(Vec3{0.5f, 2.0f, -5.0f}, Vec3{0, -0.5f, 0}, Vec3{0, 1, 0}, 50, 320, 240);
  view::GroundGrid g;
  g.height = -1;
  ImageRGBA img = filled(320, 240, kGrey, true);
  view::drawGroundGrid(img, cam, kGrey, g);
  auto at = [&](const ImageRGBA& image, Vec3 p) {
    const auto [u, v] = project(cam, p);
    return image.at(static_cast<int>(std::floor(u)), static_cast<int>(std::floor(v)));
  };
  // The brightest red within a pixel of a point (a line's centre may fall between pixel centres).
  auto peak = [&](const ImageRGBA& image, Vec3 p) {
    const auto [u, v] = project(cam, p);
    float best = 0;
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx)
        best = std::max(
            best, image.at(static_cast<int>(std::floor(u)) + dx, static_cast<int>(std::floor(v)) + dy)[0]);
    return best;
  };
  // A major line (x = 0; every 10 units) and a minor one (x = 2), both lighter than the grey, the major one
  // more; between two lines the grey is untouched.
  const float major = peak(img, Vec3{0, -1, 3.5f}), minor = peak(img, Vec3{2, -1, 3.5f});
  EXPECT_GT(major, 0.6f);
  EXPECT_GT(minor, 0.54f);
  EXPECT_LT(minor, major - 0.03f);
  EXPECT_FLOAT_EQ(at(img, Vec3{1.5f, -1, 3.5f})[0], 0.5f);
  // The plane is below the camera: the top row (above the horizon at this pitch) is untouched.
  for (int x = 0; x < 320; ++x) EXPECT_FLOAT_EQ(img.at(x, 0)[0], 0.5f) << x;
  // The axes at the origin, 1 unit long: red along x, green along y, blue along z, at their midpoints.
  const float* xr = at(img, Vec3{0.5f, 0, 0});
  const float* yg = at(img, Vec3{0, 0.5f, 0});
  const float* zb = at(img, Vec3{0, 0, 0.5f});
  EXPECT_GT(xr[0], 0.8f);
  EXPECT_LT(xr[1], 0.3f);
  EXPECT_GT(yg[1], 0.7f);
  EXPECT_LT(yg[0], 0.3f);
  EXPECT_GT(zb[2], 0.9f);
  EXPECT_LT(zb[0], 0.3f);

  // Past the fade distance nothing is drawn.
  view::GroundGrid near = g;
  near.fade_distance = 1;  // the camera is more than 3 units above the plane
  ImageRGBA faded = filled(320, 240, kGrey, true);
  view::drawGroundGrid(faded, cam, kGrey, near);
  EXPECT_FLOAT_EQ(peak(faded, Vec3{0, -1, 3.5f}), 0.5f);

  // Opaque splats just in front of the camera everywhere: grid and axes are hidden.
  ImageRGBA covered = filled(320, 240, Vec3{0.1f, 0.2f, 0.3f}, true);
  for (size_t i = 0; i < covered.pixels.size() / 4; ++i)
    covered.pixels[i * 4 + 3] = 1, covered.depth[i * 2] = 0.5f, covered.depth[i * 2 + 1] = 0;
  const ImageRGBA before = covered;
  view::drawGroundGrid(covered, cam, kGrey, g);
  EXPECT_EQ(compareImages(covered, before).max_abs, 0.0);
}

}  // namespace
}  // namespace sf
