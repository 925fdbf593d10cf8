// Meshes in the splat frame, CPU reference: coverage and fill rule of the triangle rasterizer, depth,
// the shading formula, texture sampling, near clipping, and the composition of splats with mesh depth
// (a mesh in front hides splats; splats in front blend over the mesh exactly as over a background), and
// translucent masked meshes: coverage against smoothstep of the distance inside the mask, the camera light
// against its closed form, and the translucent layer against the two opaque compositions it interpolates.
#include "render/mesh.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "render/cpu_renderer.h"
#include "render/mesh_shared.h"
#include "support/test_support.h"

namespace sf {
namespace {

using test::pinholeCamera;
using test::pixelQuad;

float expectedShade() {
  const Vec3 l = normalize(Vec3{static_cast<float>(SF_MESH_LIGHT_X), static_cast<float>(SF_MESH_LIGHT_Y),
                                static_cast<float>(SF_MESH_LIGHT_Z)});
  return static_cast<float>(SF_MESH_AMBIENT) +
         static_cast<float>(SF_MESH_DIFFUSE) * std::max(dot(Vec3{0, 0, -1}, l), 0.0f);
}

TEST(MeshRaster, QuadCoversExactlyItsPixelsWithTheShadedColourAndDepth) {
  const Camera cam = pinholeCamera();
  test::TestMesh quad = pixelQuad(cam, 10, 8, 30, 20, 2.0f);
  quad.base_color = {0.5f, 0.25f, 1.0f, 1.0f};
  RenderMesh view = quad.view();
  MeshLayer layer = rasterizeMeshes({&view, 1}, cam);
  const float shade = expectedShade();
  int covered = 0;
  for (int y = 0; y < cam.height; ++y)
    for (int x = 0; x < cam.width; ++x) {
      const size_t i = static_cast<size_t>(y * cam.width + x);
      const bool inside = x >= 10 && x < 30 && y >= 8 && y < 20;
      ASSERT_EQ(layer.depth[i] < INFINITY, inside) << x << "," << y;
      if (!inside) continue;
      ++covered;
      EXPECT_NEAR(layer.depth[i], 2.0f, 1e-5f);
      EXPECT_NEAR(layer.color[i].x, linearToSrgb(0.5f * shade), 1e-5f);
      EXPECT_NEAR(layer.color[i].y, linearToSrgb(0.25f * shade), 1e-5f);
      EXPECT_NEAR(layer.color[i].z, linearToSrgb(std::min(1.0f, shade)), 1e-5f);
    }
  EXPECT_EQ(covered, 20 * 12);
}

TEST(MeshRaster, SharedEdgesAreDrawnOnceAndPixelCentresOnEdgesFollowTheTopLeftRule) {
  // A fan of triangles around a centre at a pixel centre: with the top-left rule every pixel inside the
  // fan's outline is covered exactly once, which shows as full coverage with no pixel counted twice when
  // each triangle is rasterized alone.
  const Camera cam = pinholeCamera(32, 32, 32.0f);
  const float z = 1.0f;
  auto back = [&](float u, float v) { return Vec3{(u - cam.cx) * z / cam.fx, (v - cam.cy) * z / cam.fy, z}; };
  const Vec3 centre = back(16.5f, 16.5f);
  const Vec3 corners[4] = {back(4.5f, 4.5f), back(28.5f, 4.5f), back(28.5f, 28.5f), back(4.5f, 28.5f)};
  std::vector<int> count(32 * 32, 0);
  for (int k = 0; k < 4; ++k) {
    test::TestMesh tri;
    tri.positions = {centre, corners[k], corners[(k + 1) % 4]};
    RenderMesh v = tri.view();
    MeshLayer layer = rasterizeMeshes({&v, 1}, cam);
    for (size_t i = 0; i < count.size(); ++i) count[i] += layer.depth[i] < INFINITY;
  }
  int covered = 0;
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x) {
      const int c = count[static_cast<size_t>(y * 32 + x)];
      ASSERT_LE(c, 1) << "pixel " << x << "," << y << " drawn by two triangles";
      covered += c;
    }
  // The square [4.5, 28.5)^2 holds pixel centres 4.5 .. 27.5 on each axis (a 24 x 24 block): the left and
  // top edges through pixel centres are included, the right and bottom ones excluded.
  EXPECT_EQ(covered, 24 * 24);
}

TEST(MeshRaster, NearestSurfaceWinsAndTrianglesCrossingTheNearPlaneAreClipped) {
  const Camera cam = pinholeCamera();
  test::TestMesh far_quad = pixelQuad(cam, 0, 0, 64, 48, 5.0f),
                 near_quad = pixelQuad(cam, 20, 10, 40, 30, 3.0f);
  // A triangle from behind the camera to in front of it: only its visible part is drawn.
  test::TestMesh crossing;
  crossing.positions = {{-1.0f, 0.3f, -1.0f}, {1.0f, 0.3f, -1.0f}, {0.0f, 0.3f, 4.0f}};
  RenderMesh views[3] = {far_quad.view(), near_quad.view(), crossing.view()};
  MeshLayer layer = rasterizeMeshes(views, cam);
  EXPECT_NEAR(layer.depth[static_cast<size_t>(2 * 64 + 2)], 5.0f, 1e-4f);
  EXPECT_NEAR(layer.depth[static_cast<size_t>(20 * 64 + 30)], 3.0f, 1e-4f);
  // The crossing triangle is the plane y = 0.3, seen below the centre: rows below cy where y/z = 0.3/z.
  const int row = 40;  // v = cy + f * 0.3 / z  ->  z = f * 0.3 / (v + 0.5 - cy)
  const float z_expected = cam.fy * 0.3f / (static_cast<float>(row) + 0.5f - cam.cy);
  EXPECT_NEAR(layer.depth[static_cast<size_t>(row * 64 + 32)], std::min(5.0f, z_expected), 1e-3f);
  for (float d : layer.depth) EXPECT_TRUE(d >= static_cast<float>(SF_MESH_NEAR)) << d;
}

TEST(MeshRaster, TextureSamplingIsBilinearInLinearColourWithWrapModes) {
  MeshTexture t;
  t.width = 2, t.height = 1;
  t.rgba = {255, 0, 0, 255, 0, 0, 255, 255};
  auto red = sampleTexture(t, 0.25f, 0.5f);  // texel centre 0
  EXPECT_NEAR(red[0], 1.0f, 1e-6f);
  EXPECT_NEAR(red[2], 0.0f, 1e-6f);
  auto mid = sampleTexture(t, 0.5f, 0.5f);  // halfway between the texel centres
  EXPECT_NEAR(mid[0], 0.5f, 1e-6f);
  EXPECT_NEAR(mid[2], 0.5f, 1e-6f);
  auto wrapped = sampleTexture(t, 1.25f, 0.5f);  // REPEAT
  EXPECT_NEAR(wrapped[0], 1.0f, 1e-6f);
  auto edge = sampleTexture(t, 0.0f, 0.5f);  // REPEAT blends texel 1 and texel 0 at u = 0
  EXPECT_NEAR(edge[0], 0.5f, 1e-6f);
  t.wrap_s = SF_WRAP_CLAMP;
  auto clamped = sampleTexture(t, 0.0f, 0.5f);
  EXPECT_NEAR(clamped[0], 1.0f, 1e-6f);
  // sRGB decoding happens per texel, before filtering.
  t.rgba = {128, 128, 128, 255, 128, 128, 128, 255};
  EXPECT_NEAR(sampleTexture(t, 0.3f, 0.5f)[1], srgbToLinear(128.0f / 255.0f), 1e-6f);
}

TEST(MeshComposite, MeshInFrontHidesSplats) {
  const Camera cam = pinholeCamera();
  GaussianCloud splats = test::randomCloud(400, 1, 11);
  for (Vec3& p : splats.positions) p = p + Vec3{0, 0, 6.0f};  // depths 5..7
  test::TestMesh quad = pixelQuad(cam, 8, 8, 40, 36, 2.0f);
  RenderMesh view = quad.view();
  RenderObject obj{&splats, Mat4{}};
  RenderSettings settings;
  settings.background = {0.1f, 0.2f, 0.3f};
  ImageRGBA both = renderCpu({&obj, 1}, cam, settings, nullptr, {&view, 1});
  ImageRGBA mesh_only = renderCpu({}, cam, settings, nullptr, {&view, 1});
  ImageRGBA splats_only = renderCpu({&obj, 1}, cam, settings);
  for (int y = 0; y < cam.height; ++y)
    for (int x = 0; x < cam.width; ++x) {
      const bool inside = x >= 8 && x < 40 && y >= 8 && y < 36;
      const ImageRGBA& expected = inside ? mesh_only : splats_only;
      for (int c = 0; c < 4; ++c)
        ASSERT_EQ(both.at(x, y)[c], expected.at(x, y)[c]) << x << "," << y << " channel " << c;
    }
}

TEST(MeshComposite, SplatsInFrontBlendOverTheMeshAsOverABackground) {
  const Camera cam = pinholeCamera();
  GaussianCloud splats = test::randomCloud(400, 1, 12);
  for (Vec3& p : splats.positions) p = p * 0.5f + Vec3{0, 0, 3.0f};  // depths 2.5..3.5
  const float z_mesh = 6.0f;
  test::TestMesh quad = pixelQuad(cam, 0, 0, 64, 48, z_mesh);  // covers the whole image
  quad.base_color = {0.3f, 0.6f, 0.2f, 1.0f};
  RenderMesh view = quad.view();
  MeshLayer layer = rasterizeMeshes({&view, 1}, cam);
  const Vec3 mesh_colour = layer.color[0];
  RenderObject obj{&splats, Mat4{}};
  RenderSettings over_mesh;
  over_mesh.background = mesh_colour;  // the uniform mesh acts as a background behind every splat
  ImageRGBA both = renderCpu({&obj, 1}, cam, RenderSettings{}, nullptr, {&view, 1});
  ImageRGBA expected = renderCpu({&obj, 1}, cam, over_mesh);
  double max_diff = 0;
  for (int y = 0; y < cam.height; ++y)
    for (int x = 0; x < cam.width; ++x) {
      for (int c = 0; c < 3; ++c)
        max_diff = std::max(max_diff, static_cast<double>(std::abs(both.at(x, y)[c] - expected.at(x, y)[c])));
      EXPECT_EQ(both.at(x, y)[3], 1.0f);
    }
  EXPECT_LT(max_diff, 1e-6);
  // The splats are really there: the image is not the bare mesh.
  EXPECT_GT(compareImages(both, renderCpu({}, cam, RenderSettings{}, nullptr, {&view, 1})).max_abs, 0.1);
}

TEST(MeshComposite, SplatsBehindPartOfAMeshAreCutAtTheMeshDepth) {
  // One bright splat at depth 4 straddling a quad at depth 3 that covers the left half of the image:
  // left of the quad edge only the mesh shows, right of it the splat.
  const Camera cam = pinholeCamera();
  GaussianCloud splat;
  splat.resize(1, 0);
  splat.positions[0] = {0, 0, 4.0f};
  splat.scales[0] = {0.5f, 0.5f, 0.5f};
  splat.opacities[0] = 0.9f;
  for (size_t k = 0; k < 3; ++k) splat.sh[k] = colorToShDc(1.0f);
  test::TestMesh quad = pixelQuad(cam, 0, 0, 32, 48, 3.0f);
  quad.base_color = {0, 0, 0, 1};
  RenderMesh view = quad.view();
  RenderObject obj{&splat, Mat4{}};
  ImageRGBA img = renderCpu({&obj, 1}, cam, RenderSettings{}, nullptr, {&view, 1});
  EXPECT_EQ(img.at(31, 24)[0], 0.0f);
  EXPECT_GT(img.at(32, 24)[0], 0.5f);
}

// A mask polygon in object space whose projection is the pixel rectangle [x0, x1] x [y0, y1] at depth z.
std::vector<Vec3> pixelRectMask(const Camera& cam, float x0, float y0, float x1, float y1, float z) {
  auto back = [&](float u, float v) { return Vec3{(u - cam.cx) * z / cam.fx, (v - cam.cy) * z / cam.fy, z}; };
  return {back(x0, y0), back(x1, y0), back(x1, y1), back(x0, y1)};
}

float smooth01(float t) {
  t = std::clamp(t, 0.0f, 1.0f);
  return t * t * (3 - 2 * t);
}

TEST(MeshMask, CoverageIsOpacityTimesTheSoftEdgeInsideTheMaskAndNothingOutside) {
  const Camera cam = pinholeCamera();                        // 64 x 48
  test::TestMesh quad = pixelQuad(cam, 0, 0, 64, 48, 2.0f);  // the whole image
  const std::vector<Vec3> mask =
      pixelRectMask(cam, 20, 10, 44, 38, 3.0f);  // the mask's own depth does not matter
  RenderMesh view = quad.view();
  view.opacity = 0.5f;
  view.mask = mask;
  view.mask_rim = 8.0f / 64.0f;  // 8 px
  const MeshLayer layer = rasterizeMeshes({&view, 1}, cam);
  int drawn = 0;
  for (int y = 0; y < cam.height; ++y)
    for (int x = 0; x < cam.width; ++x) {
      const size_t i = static_cast<size_t>(y * cam.width + x);
      const float px = static_cast<float>(x) + 0.5f, py = static_cast<float>(y) + 0.5f;
      const bool inside = px > 20 && px < 44 && py > 10 && py < 38;
      ASSERT_EQ(layer.depth[i] < INFINITY, inside)
          << x << "," << y << ": only fragments inside the mask are drawn";
      if (!inside) continue;
      ++drawn;
      const float d = std::min({px - 20, 44 - px, py - 10, 38 - py});
      EXPECT_NEAR(layer.alpha[i], 0.5f * smooth01(d / 8.0f), 1e-5f) << x << "," << y;
    }
  EXPECT_EQ(drawn, 24 * 28);
  EXPECT_NEAR(layer.alpha[static_cast<size_t>(24 * 64 + 32)], 0.5f, 1e-6f)
      << "12 px from every edge: the full opacity";
  // A hard edge (no rim), and a mask with a point behind the camera (none: the opacity everywhere).
  view.mask_rim = 0;
  EXPECT_EQ(rasterizeMeshes({&view, 1}, cam).alpha[static_cast<size_t>(10 * 64 + 20)], 0.5f);
  std::vector<Vec3> behind = mask;
  behind[2].z = -1;
  view.mask = behind;
  const MeshLayer unmasked = rasterizeMeshes({&view, 1}, cam);
  for (size_t i = 0; i < unmasked.alpha.size(); ++i) ASSERT_EQ(unmasked.alpha[i], 0.5f);
  view.opacity = 0;
  EXPECT_EQ(rasterizeMeshes({&view, 1}, cam).depth[0], INFINITY) << "opacity 0 draws nothing";
  view.opacity = 1.5f;
  EXPECT_NE(view.validate().find("opacity"), std::string::npos);
}

TEST(MeshMask, CameraLightIsAmbientPlusDiffuseTowardsTheEye) {
  const Camera cam = pinholeCamera();
  test::TestMesh quad = pixelQuad(cam, 0, 0, 64, 48, 2.0f);  // normal along -z, facing the camera
  quad.base_color = {0.8f, 0.4f, 0.2f, 1.0f};
  RenderMesh view = quad.view();
  view.shading = MeshShading::kCamera;
  const MeshLayer layer = rasterizeMeshes({&view, 1}, cam);
  for (const auto& [x, y] : {std::pair{32, 24}, std::pair{0, 0}, std::pair{63, 20}}) {
    const Vec3 p{(static_cast<float>(x) + 0.5f - cam.cx) * 2.0f / cam.fx,
                 (static_cast<float>(y) + 0.5f - cam.cy) * 2.0f / cam.fy, 2.0f};
    const float shade = 0.35f + 0.65f * (p.z / length(p));  // n = -z, v = -p / |p|
    const Vec3 got = layer.color[static_cast<size_t>(y * cam.width + x)];
    EXPECT_NEAR(got.x, linearToSrgb(std::min(1.0f, 0.8f * shade)), 1e-5f) << x << "," << y;
    EXPECT_NEAR(got.y, linearToSrgb(0.4f * shade), 1e-5f) << x << "," << y;
    EXPECT_NEAR(got.z, linearToSrgb(0.2f * shade), 1e-5f) << x << "," << y;
  }
}

// A translucent mesh layer of coverage a is, per pixel, a x (the image with the mesh opaque) + (1 - a) x (the
// image without it): splats in front blend over both, the splats behind show through 1 - a.
TEST(MeshComposite, TranslucentMeshIsTheBlendOfTheOpaqueAndTheAbsentMesh) {
  const Camera cam = pinholeCamera();
  // Depths 3..5, in front of and behind the mesh; faint enough that no pixel reaches the raster's
  // early-out transmittance (where the identity would hold only up to what that leaves out).
  GaussianCloud splats = test::randomCloud(200, 1, 13);
  for (Vec3& p : splats.positions) p = p + Vec3{0, 0, 4.0f};
  for (float& o : splats.opacities) o *= 0.5f;
  test::TestMesh quad = pixelQuad(cam, 0, 0, 64, 48, 4.0f);
  quad.base_color = {0.9f, 0.2f, 0.4f, 1.0f};
  RenderMesh opaque = quad.view(), translucent = quad.view();
  translucent.opacity = 0.3f;
  RenderObject obj{&splats, Mat4{}};
  RenderSettings settings;
  settings.background = {0.1f, 0.2f, 0.3f};
  const ImageRGBA with_opaque = renderCpu({&obj, 1}, cam, settings, nullptr, {&opaque, 1});
  const ImageRGBA without = renderCpu({&obj, 1}, cam, settings);
  const ImageRGBA got = renderCpu({&obj, 1}, cam, settings, nullptr, {&translucent, 1});
  double max_diff = 0;
  for (int y = 0; y < cam.height; ++y)
    for (int x = 0; x < cam.width; ++x)
      for (int c = 0; c < 4; ++c) {
        const float want = 0.3f * with_opaque.at(x, y)[c] + 0.7f * without.at(x, y)[c];
        max_diff = std::max(max_diff, static_cast<double>(std::abs(got.at(x, y)[c] - want)));
      }
  EXPECT_LT(max_diff, 2e-6);
  EXPECT_GT(compareImages(with_opaque, without).max_abs, 0.2)
      << "the mesh and the splats behind it both matter";
}

}  // namespace
}  // namespace sf
