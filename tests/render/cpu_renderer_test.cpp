// CPU reference renderer: projection of one gaussian against the analytic EWA result, tile assignment,
// culling, per-pixel blending against a brute-force reference (no tiles, no radix sort), one global
// order across objects, object transforms, antialiased mode and thread-count determinism.
#include "render/cpu_renderer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>

#include "core/covariance.h"
#include "core/error.h"
#include "core/sh.h"
#include "render/radix_sort.h"
#include "render/splat_shape.h"
#include "support/test_support.h"

namespace sf {
namespace {

Camera identityCamera(int w = 64, int h = 48, float f = 50.0f) {
  Camera c;
  c.width = w;
  c.height = h;
  c.fx = c.fy = f;
  c.cx = 0.5f * static_cast<float>(w);
  c.cy = 0.5f * static_cast<float>(h);
  return c;
}

GaussianCloud oneGaussian(Vec3 p, float s, float opacity, Vec3 rgb) {
  GaussianCloud c;
  c.resize(1, 0);
  c.positions[0] = p;
  c.scales[0] = {s, s, s};
  c.opacities[0] = opacity;
  for (int k = 0; k < 3; ++k) c.sh[static_cast<size_t>(k)] = colorToShDc(rgb[k]);
  return c;
}

TEST(Projection, IsotropicGaussianOnAxisMatchesAnalyticEwa) {
  Camera cam = identityCamera();
  const float s = 0.1f, z = 4.0f, f = cam.fx;
  ProjectedSplat ps;
  float sh[3] = {0, 0, 0};
  ASSERT_TRUE(projectSplat({0, 0, z}, covarianceFromScaleRotation({s, s, s}, Quat{}), 0.8f, 0, sh, {0, 0, 1},
                           ColorSpace::kSrgb, cam, false, &ps));
  const float var = (f * s / z) * (f * s / z) + 0.3f;
  // The principal point (32, 24) in COLMAP pixels is pixel-index coordinate 31.5, 23.5.
  EXPECT_FLOAT_EQ(ps.mean_x, 31.5f);
  EXPECT_FLOAT_EQ(ps.mean_y, 23.5f);
  EXPECT_NEAR(ps.conic[0], 1.0f / var, 1e-6f);
  EXPECT_NEAR(ps.conic[1], 0.0f, 1e-7f);
  EXPECT_NEAR(ps.conic[2], 1.0f / var, 1e-6f);
  EXPECT_EQ(ps.radius, static_cast<int>(std::ceil(3.0f * std::sqrt(var))));
  EXPECT_FLOAT_EQ(ps.depth, z);
  EXPECT_FLOAT_EQ(ps.opacity, 0.8f);
  EXPECT_NEAR(ps.color.x, 0.5f, 1e-6f);
}

// Splat shapes against closed-form areas: one large splat, isotropic or stretched and turned, drawn as each
// shape. Its alpha is opacity * max(gaussian falloff, coverage), and coverage = 0.5 - sd / 0.2 reaches 0.9
// where the signed distance to the shape's edge is -0.08: the pixels at 0.9 of the opacity or more number
// the shape eroded by 0.08 (the gaussian reaches 0.9 only within 0.46 of the centre, inside every shape), in
// the whitened frame, times sqrt(det) of the splat's 2D covariance (the whitening's Jacobian). To 0.8%
// (measured within 0.3%); the rounded hex and a sharp one differ by 1.5%, the polygons by 5% or more.
TEST(SplatShapes, CoveredPixelsMatchEachShapesArea) {
  constexpr double kPi = 3.14159265358979323846;
  const double radius = 1.1774100225154747, d = 0.08;  // SF_SHAPE_RADIUS; the erosion at 0.9 coverage
  auto polygon = [&](int n) {                          // apothem R cos(pi / n) - d
    const double a = radius * std::cos(kPi / n) - d;
    return n * a * a * std::tan(kPi / n);
  };
  const double corner = 0.35 * radius, inner = radius * std::cos(kPi / 6) - corner, rc = corner - d;
  const double rounded_hex =
      2 * std::sqrt(3.0) * inner * inner + 4 * std::sqrt(3.0) * inner * rc + kPi * rc * rc;
  struct Case {
    uint32_t word;
    double area;
  };
  const Case cases[] = {{splatShapeWord(SplatShapeClass::kDisc), kPi * (radius - d) * (radius - d)},
                        {splatShapeWord(SplatShapeClass::kRoundedHex, 6, 40), rounded_hex},
                        {splatShapeWord(SplatShapeClass::kPolygon, 5, 17), polygon(5)},
                        {splatShapeWord(SplatShapeClass::kPolygon, 6, 99), polygon(6)},
                        {splatShapeWord(SplatShapeClass::kPolygon, 7, 200), polygon(7)}};
  Camera cam = identityCamera(256, 256, 200.0f);
  const float z = 4.0f, opacity = 0.9f;
  auto countAbove = [](const ImageRGBA& img, float level) {
    size_t n = 0;
    for (size_t p = 3; p < img.pixels.size(); p += 4) n += img.pixels[p] >= level;
    return n;
  };
  for (int stretched = 0; stretched < 2; ++stretched) {
    GaussianCloud c = oneGaussian({0, 0, z}, 0.5f, opacity, {1, 1, 1});
    if (stretched) {
      c.scales[0] = {0.6f, 0.3f, 0.01f};
      c.rotations[0] = normalize(Quat{std::cos(0.35f), 0, 0, std::sin(0.35f)});  // a turn about the view axis
    }
    ProjectedSplat ps;
    ASSERT_TRUE(projectSplat(c.positions[0], covarianceFromScaleRotation(c.scales[0], c.rotations[0]),
                             opacity, 0, c.shOf(0).data(), {0, 0, 1}, ColorSpace::kSrgb, cam, false, &ps));
    const double det_conic =
        static_cast<double>(ps.conic[0]) * ps.conic[2] - static_cast<double>(ps.conic[1]) * ps.conic[1];
    const double pixels_per_unit_area = 1.0 / std::sqrt(det_conic);  // sqrt(det Sigma_2D)
    RenderObject plain{&c, Mat4{}};
    const ImageRGBA gaussian = renderCpu({&plain, 1}, cam, RenderSettings{});
    for (const Case& k : cases) {
      std::vector<uint32_t> shapes{k.word};
      RenderObject o{&c, Mat4{}};
      o.shapes = shapes;
      const ImageRGBA img = renderCpu({&o, 1}, cam, RenderSettings{});
      const double expected = k.area * pixels_per_unit_area;
      EXPECT_NEAR(static_cast<double>(countAbove(img, 0.9f * opacity - 1e-6f)), expected, 0.008 * expected)
          << "word " << k.word << (stretched ? " stretched" : "");
      // Never below the gaussian: the shape only raises it.
      for (size_t p = 3; p < img.pixels.size(); p += 4)
        ASSERT_GE(img.pixels[p], gaussian.pixels[p]) << "word " << k.word << " pixel " << p / 4;
    }
  }
  // Orientation: a polygon turned by k / 256 of a turn has a vertex at angle 2 pi k / 256 in the whitened
  // frame (identity conic: u = d) and the middle of an edge half a sector further on. A point at 0.85 R
  // towards the vertex is well inside (0.14 from the edges: coverage 1); at 0.95 R towards the edge's middle
  // (apothem R cos 36 deg = 0.81 R) it is 0.17 outside (coverage 0).
  for (uint32_t k : {0u, 37u, 128u, 201u}) {
    const uint32_t word = splatShapeWord(SplatShapeClass::kPolygon, 5, k);
    const double vertex = 2 * kPi * k / 256.0, edge = vertex + kPi / 5;
    const float in = static_cast<float>(0.85 * radius), out = static_cast<float>(0.95 * radius);
    EXPECT_FLOAT_EQ(splatShapeCoverage(word, in * static_cast<float>(std::cos(vertex)),
                                       in * static_cast<float>(std::sin(vertex)), 1, 0, 1),
                    1.0f)
        << k;
    EXPECT_FLOAT_EQ(splatShapeCoverage(word, out * static_cast<float>(std::cos(edge)),
                                       out * static_cast<float>(std::sin(edge)), 1, 0, 1),
                    0.0f)
        << k;
  }
  EXPECT_FLOAT_EQ(splatShapeCoverage(splatShapeWord(SplatShapeClass::kPolygon, 7, 9), 0, 0, 1, 0, 1), 1.0f)
      << "the centre";
  // Shapes for another cloud size are refused, naming the sizes.
  GaussianCloud c = oneGaussian({0, 0, z}, 0.5f, opacity, {1, 1, 1});
  const std::vector<uint32_t> two{1, 1};
  RenderObject o{&c, Mat4{}};
  o.shapes = two;
  try {
    renderCpu({&o, 1}, cam, RenderSettings{});
    ADD_FAILURE() << "shapes of the wrong size were taken";
  } catch (const Error& e) {  // sf::Error, as the Vulkan renderer throws for the same object
    EXPECT_NE(std::string(e.what()).find("shapes hold 2 words for a cloud of 1"), std::string::npos)
        << e.what();
  }
}

TEST(Projection, OffAxisGaussianMatchesJacobianFormula) {
  // For Sigma = s^2 I: cov2D = s^2 J J^T with J = [[f/z, 0, -f x/z^2], [0, f/z, -f y/z^2]].
  Camera cam = identityCamera(640, 480, 400.0f);
  const float s = 0.05f, x = 0.3f, y = -0.2f, z = 2.0f, f = 400.0f;
  auto cov = projectCovariance({x, y, z}, covarianceFromScaleRotation({s, s, s}, Quat{}), Mat3{}, cam);
  const float k = s * s * f * f / (z * z);
  EXPECT_NEAR(cov[0], k * (1 + x * x / (z * z)), 1e-4f * k);
  EXPECT_NEAR(cov[1], k * x * y / (z * z), 1e-4f * k);
  EXPECT_NEAR(cov[2], k * (1 + y * y / (z * z)), 1e-4f * k);
  ProjectedSplat ps;
  float sh[3] = {0, 0, 0};
  ASSERT_TRUE(projectSplat({x, y, z}, covarianceFromScaleRotation({s, s, s}, Quat{}), 1, 0, sh, {0, 0, 1},
                           ColorSpace::kSrgb, cam, false, &ps));
  EXPECT_NEAR(ps.mean_x, f * x / z + 320.0f - 0.5f, 1e-4f);
  EXPECT_NEAR(ps.mean_y, f * y / z + 240.0f - 0.5f, 1e-4f);
}

TEST(Projection, CullsAtTheNearPlaneAndBehind) {
  Camera cam = identityCamera();
  ProjectedSplat ps;
  float sh[3] = {0, 0, 0};
  Cov6 cov = covarianceFromScaleRotation({0.1f, 0.1f, 0.1f}, Quat{});
  EXPECT_FALSE(projectSplat({0, 0, 0.2f}, cov, 1, 0, sh, {0, 0, 1}, ColorSpace::kSrgb, cam, false, &ps));
  EXPECT_FALSE(projectSplat({0, 0, -3}, cov, 1, 0, sh, {0, 0, 1}, ColorSpace::kSrgb, cam, false, &ps));
  EXPECT_TRUE(projectSplat({0, 0, 0.21f}, cov, 1, 0, sh, {0, 0, 1}, ColorSpace::kSrgb, cam, false, &ps));
  // Far outside the image: no tile touched.
  EXPECT_FALSE(projectSplat({100, 0, 1}, cov, 1, 0, sh, {0, 0, 1}, ColorSpace::kSrgb, cam, false, &ps));
}

TEST(Projection, AntialiasedModeScalesOpacityByDeterminantRatio) {
  Camera cam = identityCamera();
  const float s = 0.02f, z = 4.0f;
  ProjectedSplat ps;
  float sh[3] = {0, 0, 0};
  ASSERT_TRUE(projectSplat({0, 0, z}, covarianceFromScaleRotation({s, s, s}, Quat{}), 0.9f, 0, sh, {0, 0, 1},
                           ColorSpace::kSrgb, cam, true, &ps));
  const float v = (cam.fx * s / z) * (cam.fx * s / z);
  EXPECT_NEAR(ps.opacity, 0.9f * std::sqrt((v * v) / ((v + 0.3f) * (v + 0.3f))), 1e-5f);
}

TEST(Tiles, RectFollowsInriaGetRect) {
  // 4 x 3 tiles.
  TileRect a = tileRect(8, 8, 3, 4, 3);
  EXPECT_EQ(a.x0, 0);
  EXPECT_EQ(a.x1, 1);
  EXPECT_EQ(a.y0, 0);
  EXPECT_EQ(a.y1, 1);
  TileRect b = tileRect(16, 16, 1, 4, 3);  // straddles the corner of four tiles
  EXPECT_EQ(b.x0, 0);
  EXPECT_EQ(b.x1, 2);
  EXPECT_EQ(b.y0, 0);
  EXPECT_EQ(b.y1, 2);
  TileRect c = tileRect(-40, 20, 5, 4, 3);  // left of the image
  EXPECT_EQ(c.area(), 0);
  TileRect d = tileRect(30, 30, 100, 4, 3);  // covers everything, clamped to the grid
  EXPECT_EQ(d.x0, 0);
  EXPECT_EQ(d.x1, 4);
  EXPECT_EQ(d.y0, 0);
  EXPECT_EQ(d.y1, 3);
  TileRect e = tileRect(63.9f, 47.9f, 0, 4, 3);  // radius 0: upper bound rounds up to the next tile
  EXPECT_EQ(e.x0, 3);
  EXPECT_EQ(e.x1, 4);
}

TEST(Tiles, ReachTestNeverDropsATileWithAVisiblePixel) {
  // For random projected splats, every tile the test rejects has no pixel centre with alpha >= 1/255,
  // so dropping its key cannot change the image; and most faint splats lose tiles.
  GaussianCloud c = test::randomCloud(3000, 0, 77);
  for (Vec3& p : c.positions) p = p + Vec3{0, 0, 2.5f};
  for (size_t i = 0; i < c.size(); i += 3) c.opacities[i] = 0.02f;  // faint splats
  Camera cam = identityCamera(160, 128, 120.0f);
  size_t rect_tiles = 0, kept = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    ProjectedSplat s;
    float sh[3] = {0, 0, 0};
    Cov6 cov = covarianceFromScaleRotation(c.scales[i], c.rotations[i]);
    if (!projectSplat(c.positions[i], cov, c.opacities[i], 0, sh, {0, 0, 1}, ColorSpace::kSrgb, cam, false,
                      &s))
      continue;
    for (int ty = s.tiles.y0; ty < s.tiles.y1; ++ty)
      for (int tx = s.tiles.x0; tx < s.tiles.x1; ++tx) {
        ++rect_tiles;
        if (splatReachesTile(s, tx, ty)) {
          ++kept;
          continue;
        }
        for (int py = ty * kTileSize; py < (ty + 1) * kTileSize; ++py)
          for (int px = tx * kTileSize; px < (tx + 1) * kTileSize; ++px) {
            float dx = s.mean_x - static_cast<float>(px), dy = s.mean_y - static_cast<float>(py);
            float power = -0.5f * (s.conic[0] * dx * dx + s.conic[2] * dy * dy) - s.conic[1] * dx * dy;
            ASSERT_LT(std::min(kAlphaMax, s.opacity * std::exp(power)), kAlphaMin)
                << "splat " << i << " tile " << tx << "," << ty;
          }
      }
  }
  std::printf("tile reach test kept %zu of %zu rect tiles\n", kept, rect_tiles);
  EXPECT_LT(kept, rect_tiles);
}

TEST(RadixSort, StableAndMatchesStdStableSort) {
  std::vector<uint64_t> keys;
  uint64_t state = 42;
  for (int i = 0; i < 20000; ++i) {
    state = state * 6364136223846793005ull + 1;
    keys.push_back((state >> 20) & 0xfffffffffull);  // many duplicates in the top bits
  }
  for (auto& k : keys) k &= ~0xffull;  // force ties
  std::vector<uint32_t> values(keys.size());
  std::iota(values.begin(), values.end(), 0u);
  std::vector<std::pair<uint64_t, uint32_t>> ref;
  for (size_t i = 0; i < keys.size(); ++i) ref.emplace_back(keys[i], values[i]);
  std::stable_sort(ref.begin(), ref.end(), [](auto& a, auto& b) { return a.first < b.first; });
  radixSortPairs(keys, values, 36);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(keys[i], ref[i].first);
    ASSERT_EQ(values[i], ref[i].second);
  }
}

TEST(Render, SingleGaussianCentrePixelIsAlphaBlendedOverBackground) {
  Camera cam = identityCamera(32, 32, 40.0f);
  GaussianCloud c = oneGaussian({0, 0, 3}, 0.2f, 0.7f, {1.0f, 0.5f, 0.25f});
  RenderObject obj{&c, Mat4{}};
  RenderSettings rs;
  rs.background = {0, 0, 1};
  ImageRGBA img = renderCpu({&obj, 1}, cam, rs);
  // Pixel (15, 15)'s centre is 0.5 px from the mean in x and y.
  const float var = (40.0f * 0.2f / 3.0f) * (40.0f * 0.2f / 3.0f) + 0.3f;
  const float alpha = 0.7f * std::exp(-0.5f * (0.25f + 0.25f) / var);
  const float* p = img.at(15, 15);
  EXPECT_NEAR(p[0], alpha * 1.0f, 1e-5f);
  EXPECT_NEAR(p[1], alpha * 0.5f, 1e-5f);
  EXPECT_NEAR(p[2], alpha * 0.25f + (1 - alpha), 1e-5f);
  EXPECT_NEAR(p[3], alpha, 1e-5f);
  // A corner pixel far outside 3 sigma only sees the background.
  EXPECT_EQ(img.at(0, 0)[2], 1.0f);
  EXPECT_EQ(img.at(0, 0)[3], 0.0f);
}

// Brute-force reference: for each pixel, every visible splat whose tile rect contains the pixel's tile
// (and which can reach that tile, see splatReachesTile),
// in depth order (ties by slot), blended with blendPixel. No key generation, radix sort or ranges.
ImageRGBA bruteForce(const GaussianCloud& cloud, const Camera& cam, Vec3 bg) {
  std::vector<ProjectedSplat> ps;
  for (size_t i = 0; i < cloud.size(); ++i) {
    ProjectedSplat s;
    if (projectSplat(cloud.positions[i], covarianceFromScaleRotation(cloud.scales[i], cloud.rotations[i]),
                     cloud.opacities[i], cloud.sh_degree, cloud.shOf(i).data(),
                     cloud.positions[i] - cam.position(), cloud.color_space, cam, false, &s))
      ps.push_back(s);
  }
  std::vector<uint32_t> by_depth(ps.size());
  std::iota(by_depth.begin(), by_depth.end(), 0u);
  std::stable_sort(by_depth.begin(), by_depth.end(),
                   [&](uint32_t a, uint32_t b) { return ps[a].depth < ps[b].depth; });
  ImageRGBA img(cam.width, cam.height);
  for (int y = 0; y < cam.height; ++y)
    for (int x = 0; x < cam.width; ++x) {
      int tx = x / kTileSize, ty = y / kTileSize;
      std::vector<uint32_t> order;
      for (uint32_t i : by_depth)
        if (tx >= ps[i].tiles.x0 && tx < ps[i].tiles.x1 && ty >= ps[i].tiles.y0 && ty < ps[i].tiles.y1 &&
            (ps[i].tiles.area() > kMaxTestedTileArea || splatReachesTile(ps[i], tx, ty)))
          order.push_back(i);
      PixelResult r = blendPixel(ps, order, x, y, bg);
      float* o = img.at(x, y);
      o[0] = r.color.x, o[1] = r.color.y, o[2] = r.color.z, o[3] = 1 - r.transmittance;
    }
  return img;
}

// The depth plane in closed form: two gaussians on the axis, the far one drawn as a second object. At
// pixel (15, 15) (0.5 px from both means in x and y) each has alpha o * exp(-0.5 * 0.5 / var) with var the
// analytic EWA variance; the expected depth is z1 a1 + z2 a2 (1 - a1) and the transmittance
// (1 - a1)(1 - a2). An opaque surface between them (stop depth 4) leaves only the front one.
// The blend spaces against the closed form of two translucent splats over a background: display blends the
// sRGB colours as they are; linear decodes every colour (splats, background) with the sRGB curve, blends, and
// encodes the pixel (the curve written out here, not the renderer's helpers). A linear-space cloud is taken
// as it is by the linear blend and encoded by the display one.
TEST(Render, BlendSpacesMatchTheClosedForm) {
  const float f = 40.0f;
  Camera cam = identityCamera(32, 32, f);
  const Vec3 c1{0.9f, 0.2f, 0.05f}, c2{0.1f, 0.6f, 0.95f}, bg{0.3f, 0.5f, 0.2f};
  GaussianCloud front = oneGaussian({0, 0, 3}, 0.2f, 0.7f, c1), back = oneGaussian({0, 0, 5}, 0.4f, 0.6f, c2);
  RenderObject objs[2] = {{&back, Mat4{}}, {&front, Mat4{}}};
  auto alphaAt = [&](float z, float sd, float o) {
    const float var = (f * sd / z) * (f * sd / z) + 0.3f;
    return o * std::exp(-0.5f * (0.25f + 0.25f) / var);
  };
  const double a1 = alphaAt(3, 0.2f, 0.7f), a2 = alphaAt(5, 0.4f, 0.6f);
  auto dec = [](double c) { return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); };
  auto enc = [](double l) { return l <= 0.0031308 ? 12.92 * l : 1.055 * std::pow(l, 1 / 2.4) - 0.055; };
  RenderSettings rs;
  rs.background = bg;
  for (BlendSpace space : {BlendSpace::kDisplay, BlendSpace::kLinear}) {
    SCOPED_TRACE(blendSpaceName(space));
    rs.blend_space = space;
    const ImageRGBA img = renderCpu(objs, cam, rs);
    for (int k = 0; k < 3; ++k) {
      const double expected =
          space == BlendSpace::kDisplay
              ? c1[k] * a1 + c2[k] * a2 * (1 - a1) + bg[k] * (1 - a1) * (1 - a2)
              : enc(dec(c1[k]) * a1 + dec(c2[k]) * a2 * (1 - a1) + dec(bg[k]) * (1 - a1) * (1 - a2));
      EXPECT_NEAR(img.at(15, 15)[k], expected, 2e-6) << "channel " << k;
      // Far from both splats: the background, display-encoded either way.
      EXPECT_NEAR(img.at(0, 0)[k], bg[k], 2e-6) << "channel " << k;
    }
    EXPECT_NEAR(img.at(15, 15)[3], 1 - (1 - a1) * (1 - a2), 1e-6);  // alpha does not depend on the space
  }
  // Linear-space clouds: their colours are linear already.
  front.color_space = back.color_space = ColorSpace::kLinear;
  rs.blend_space = BlendSpace::kLinear;
  const ImageRGBA lin = renderCpu(objs, cam, rs);
  rs.blend_space = BlendSpace::kDisplay;
  const ImageRGBA disp = renderCpu(objs, cam, rs);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(lin.at(15, 15)[k], enc(c1[k] * a1 + c2[k] * a2 * (1 - a1) + dec(bg[k]) * (1 - a1) * (1 - a2)),
                2e-6);
    EXPECT_NEAR(disp.at(15, 15)[k],
                enc(c1[k]) * a1 + enc(c2[k]) * a2 * (1 - a1) + bg[k] * (1 - a1) * (1 - a2), 2e-6);
  }
  EXPECT_EQ(parseBlendSpace("linear"), BlendSpace::kLinear);
  EXPECT_EQ(parseBlendSpace("srgb"), BlendSpace::kDisplay);
  EXPECT_NE(test::errorOf([] { parseBlendSpace("gamma"); }).find("expected display"), std::string::npos);
}

TEST(Render, DepthPlaneIsTheExpectedSplatDepth) {
  const float f = 40.0f;
  Camera cam = identityCamera(32, 32, f);
  GaussianCloud front = oneGaussian({0, 0, 3}, 0.2f, 0.7f, {1, 0, 0}),
                back = oneGaussian({0, 0, 5}, 0.4f, 0.6f, {0, 1, 0});
  RenderObject objs[2] = {{&back, Mat4{}}, {&front, Mat4{}}};
  RenderSettings rs;
  rs.depth = true;
  ImageRGBA img = renderCpu(objs, cam, rs);
  ASSERT_EQ(img.depth.size(), 32u * 32u * 2u);
  auto alphaAt = [&](float z, float s, float o) {
    const float var = (f * s / z) * (f * s / z) + 0.3f;
    return o * std::exp(-0.5f * (0.25f + 0.25f) / var);
  };
  const float a1 = alphaAt(3, 0.2f, 0.7f), a2 = alphaAt(5, 0.4f, 0.6f);
  const float* d = img.depth.data() + (15 * 32 + 15) * 2;
  EXPECT_NEAR(d[0], 3 * a1 + 5 * a2 * (1 - a1), 1e-5f);
  EXPECT_NEAR(d[1], (1 - a1) * (1 - a2), 1e-6f);
  EXPECT_NEAR(d[1], 1 - img.at(15, 15)[3], 1e-7f);  // the transmittance is the one behind the image's alpha
  // Far outside both: nothing blended.
  EXPECT_EQ(img.depth[0], 0.0f);
  EXPECT_EQ(img.depth[1], 1.0f);
  // Without the flag there is no depth plane.
  EXPECT_TRUE(renderCpu(objs, cam, {}).depth.empty());
  // A surface at depth 4 stops the pixel after the front splat.
  ProjectedSplat ps[2];
  float sh[3] = {0, 0, 0};
  ASSERT_TRUE(projectSplat({0, 0, 3}, covarianceFromScaleRotation({0.2f, 0.2f, 0.2f}, {}), 0.7f, 0, sh,
                           {0, 0, 1}, ColorSpace::kSrgb, cam, false, &ps[0]));
  ASSERT_TRUE(projectSplat({0, 0, 5}, covarianceFromScaleRotation({0.4f, 0.4f, 0.4f}, {}), 0.6f, 0, sh,
                           {0, 0, 1}, ColorSpace::kSrgb, cam, false, &ps[1]));
  const uint32_t order[2] = {0, 1};
  // The mesh is the last layer: it adds 4 * (1 - a1) to the expected depth and leaves nothing behind.
  PixelResult r = blendPixel(ps, order, 15, 15, {}, MeshPixel{{}, 4.0f, 1.0f});
  EXPECT_NEAR(r.depth, 3 * a1 + 4 * (1 - a1), 1e-5f);
  EXPECT_EQ(r.transmittance, 0.0f);
  EXPECT_EQ(r.alpha, 1.0f);
  // A translucent one (alpha 0.5) is a layer between the two splats: 3 a1 + 4 (0.5 (1 - a1)) + 5 a2 T'.
  r = blendPixel(ps, order, 15, 15, {}, MeshPixel{{}, 4.0f, 0.5f});
  const float t_mesh = (1 - a1) * 0.5f;
  EXPECT_NEAR(r.depth, 3 * a1 + 4 * 0.5f * (1 - a1) + 5 * a2 * t_mesh, 1e-5f);
  EXPECT_NEAR(r.transmittance, t_mesh * (1 - a2), 1e-6f);
  EXPECT_NEAR(r.alpha, 1 - r.transmittance, 1e-7f);
}

TEST(Render, MatchesBruteForcePerPixelReference) {
  GaussianCloud c = test::randomCloud(600, 3, 5);
  for (Vec3& p : c.positions) p = p + Vec3{0, 0, 3.5f};
  Camera cam = identityCamera(80, 56, 60.0f);
  RenderObject obj{&c, Mat4{}};
  RenderSettings rs;
  rs.background = {0.1f, 0.2f, 0.3f};
  rs.half_sh = false;
  ImageRGBA fast = renderCpu({&obj, 1}, cam, rs);
  ImageRGBA ref = bruteForce(c, cam, rs.background);
  for (size_t i = 0; i < fast.pixels.size(); ++i) ASSERT_EQ(fast.pixels[i], ref.pixels[i]) << "float " << i;
  // Half-precision SH bands (the default) draw the cloud whose coefficients from the fourth on are shHalf'd.
  GaussianCloud rounded = c;
  for (size_t k = 0; k < rounded.sh.size(); ++k)
    if (k % static_cast<size_t>(c.shStride()) >= 3) rounded.sh[k] = shHalf(c.sh[k]);
  rs.half_sh = true;
  fast = renderCpu({&obj, 1}, cam, rs);
  ref = bruteForce(rounded, cam, rs.background);
  for (size_t i = 0; i < fast.pixels.size(); ++i)
    ASSERT_EQ(fast.pixels[i], ref.pixels[i]) << "half, float " << i;
}

TEST(Render, ObjectsShareOneGlobalDepthOrder) {
  // Two interleaved layers split across two objects: rendering them as two objects (either order) must
  // equal rendering one merged cloud, which is only true with a single global sort.
  GaussianCloud a = test::randomCloud(300, 1, 1), b = test::randomCloud(300, 1, 2);
  for (Vec3& p : a.positions) p = p + Vec3{0, 0, 3};
  for (Vec3& p : b.positions) p = p + Vec3{0.1f, 0, 3};
  GaussianCloud merged = a;
  merged.positions.insert(merged.positions.end(), b.positions.begin(), b.positions.end());
  merged.scales.insert(merged.scales.end(), b.scales.begin(), b.scales.end());
  merged.rotations.insert(merged.rotations.end(), b.rotations.begin(), b.rotations.end());
  merged.opacities.insert(merged.opacities.end(), b.opacities.begin(), b.opacities.end());
  merged.sh.insert(merged.sh.end(), b.sh.begin(), b.sh.end());
  Camera cam = identityCamera(64, 64, 50.0f);
  RenderObject ab[2] = {{&a, Mat4{}}, {&b, Mat4{}}};
  RenderObject ba[2] = {{&b, Mat4{}}, {&a, Mat4{}}};
  RenderObject m{&merged, Mat4{}};
  ImageRGBA img_ab = renderCpu(ab, cam, {}), img_ba = renderCpu(ba, cam, {}),
            img_m = renderCpu({&m, 1}, cam, {});
  EXPECT_EQ(img_ab.pixels, img_m.pixels);
  // Swapping object order only changes tie-breaking between exactly equal depths (none here).
  ImageDiff d = compareImages(img_ab, img_ba);
  EXPECT_EQ(d.max_abs, 0.0);
}

TEST(Render, ObjectTransformEqualsPretransformedCloud) {
  GaussianCloud c = test::randomCloud(400, 0, 9);
  const float angle = 0.7f;
  Quat q{std::cos(angle / 2), 0, std::sin(angle / 2), 0};
  Mat4 model = Mat4::fromLinearTranslation(rotationMatrix(q) * Mat3::diagonal({1.5f, 1.5f, 1.5f}),
                                           Vec3{0.2f, -0.1f, 4});
  GaussianCloud moved = c;
  for (size_t i = 0; i < c.size(); ++i) {
    moved.positions[i] = transformPoint(model, c.positions[i]);
    moved.rotations[i] = normalize(q * c.rotations[i]);
    moved.scales[i] = c.scales[i] * 1.5f;
  }
  Camera cam = identityCamera(64, 48, 45.0f);
  RenderObject a{&c, model}, b{&moved, Mat4{}};
  ImageDiff d = compareImages(renderCpu({&a, 1}, cam, {}), renderCpu({&b, 1}, cam, {}));
  EXPECT_GT(d.psnr, 70.0) << "max abs " << d.max_abs;
}

TEST(Render, SameImageForAnyThreadCount) {
  GaussianCloud c = test::randomCloud(2000, 2, 3);
  for (Vec3& p : c.positions) p = p + Vec3{0, 0, 3};
  Camera cam = identityCamera(96, 64, 60.0f);
  RenderObject obj{&c, Mat4{}};
  setenv("SPLATFORGE_THREADS", "1", 1);
  ImageRGBA one = renderCpu({&obj, 1}, cam, {});
  setenv("SPLATFORGE_THREADS", "4", 1);
  ImageRGBA four = renderCpu({&obj, 1}, cam, {});
  unsetenv("SPLATFORGE_THREADS");
  EXPECT_EQ(one.pixels, four.pixels);
}

TEST(Render, StopsAtTransmittanceFloor) {
  // Gaussians stacked on the axis, front to back: red (alpha clamped to 0.99, T -> 0.01), green (alpha
  // about 0.5, T -> about 0.005), then blue ones (alpha 0.99): the next T would be 5e-5 < 1e-4, so the
  // pixel stops there and blue never contributes.
  GaussianCloud c;
  c.resize(40, 0);
  for (size_t i = 0; i < 40; ++i) {
    c.positions[i] = {0, 0, 2.0f + 0.1f * static_cast<float>(i)};
    c.scales[i] = {0.5f, 0.5f, 0.5f};
    c.opacities[i] = i == 1 ? 0.5f : 1.0f;
    Vec3 col = i == 0 ? Vec3{1, 0, 0} : (i == 1 ? Vec3{0, 1, 0} : Vec3{0, 0, 1});
    for (int k = 0; k < 3; ++k) c.sh[i * 3 + static_cast<size_t>(k)] = colorToShDc(col[k]);
  }
  Camera cam = identityCamera(32, 32, 30.0f);
  RenderObject obj{&c, Mat4{}};
  ImageRGBA img = renderCpu({&obj, 1}, cam, {});
  const float* p = img.at(15, 15);
  EXPECT_NEAR(p[0], 0.99f, 1e-6f);
  EXPECT_NEAR(p[1], 0.005f, 2e-4f);
  EXPECT_EQ(p[2], 0.0f);
  EXPECT_NEAR(p[3], 0.995f, 2e-4f);
}

}  // namespace
}  // namespace sf
