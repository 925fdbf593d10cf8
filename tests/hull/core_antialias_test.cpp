// Anti-aliased mesh layer (render/mesh.h "Anti-aliased edges"), on a splat hull's core of octagons: the
// 8-sample core against an independent oracle (the same core drawn single-sample at 8x the resolution and
// box-filtered), CPU against Vulkan per pixel, the composite of a partly covered pixel between splats in
// front and behind (against its closed form: the blend of the opaque and the absent mesh), fully covered
// pixels equal to single-sample bit for bit, meshes that do not ask for samples unchanged, and the setting
// from scene JSON and the command line with its errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/image.h"
#include "hull/hull_render.h"
#include "io/formats.h"
#include "io/image_io.h"
#include "io/spl2.h"
#include "render/cpu_renderer.h"
#include "render/mesh.h"
#include "render/vulkan_renderer.h"
#include "scene/kinds/hull.h"
#include "scene/scene.h"
#include "support/gpu_support.h"
#include "support/test_support.h"

namespace sf {
namespace {

// A hull of n splats on a Fibonacci sphere of radius 0.7: every other one a core octagon (opaque, 0.04..0.1
// across, a random flat colour), the others, with `shell`, translucent shell splats in their bucket orders.
Spl2Hull fibonacciHull(size_t n, uint32_t seed, bool shell) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  Spl2Hull h;
  std::vector<size_t> core_rows, shell_rows;
  for (size_t i = 0; i < n; ++i) (i % 2 == 0 || !shell ? core_rows : shell_rows).push_back(i);
  h.core.resize(core_rows.size());
  h.shell.resize(shell_rows.size());
  auto put = [&](Spl2Block& b, size_t k, size_t i, bool is_core) {
    const auto [nrm, t0, t1] = test::fibonacciSphereFrame(i, n);
    const float op = is_core ? 0.95f : 0.3f + 0.4f * u(rng);
    const float radius = is_core ? spl2CoreRadius(op) : 1.0f;
    const float s0 = 0.02f + 0.03f * u(rng), s1 = 0.02f + 0.03f * u(rng);
    b.pos[k] = nrm * 0.7f, b.normal[k] = nrm, b.opacity[k] = op;
    b.color[k] = {0.15f + 0.8f * u(rng), 0.15f + 0.8f * u(rng), 0.15f + 0.8f * u(rng)};
    b.ax0[k] = t0 * (s0 * radius), b.ax1[k] = t1 * (s1 * radius);
    b.attrs[k] = {255.0f, 0.0f, 0.0f, static_cast<float>(k % 256)};
  };
  for (size_t k = 0; k < core_rows.size(); ++k) put(h.core, k, core_rows[k], true);
  for (size_t k = 0; k < shell_rows.size(); ++k) put(h.shell, k, shell_rows[k], false);
  if (shell) h.orders = spl2ShellOrders(h.shell.pos, kSpl2Buckets, 41.0f);
  return h;
}

std::shared_ptr<hull::HullAsset> hullAsset(const std::string& name, bool shell) {
  const std::string dir = test::tempDir(name);
  saveSpl2(fibonacciHull(900, 5, shell), dir + "/h.spl2");
  return hull::HullAsset::load(dir + "/h.spl2");
}

Camera viewCamera(int width, int height, float azimuth_deg) {
  const float el = 0.5f, az = azimuth_deg * 3.14159265f / 180.0f;
  const Vec3 eye = Vec3{std::sin(az) * std::cos(el), std::sin(el), std::cos(az) * std::cos(el)} * 2.6f;
  return lookAtCamera(eye, Vec3{}, Vec3{0, 1, 0}, 40.0f, width, height);
}

// The camera of the same view at `scale` times the resolution: pixel (x, y) of it samples the original's
// (x + 0.5) / scale, (y + 0.5) / scale, a regular scale x scale grid in each original pixel.
Camera scaled(Camera cam, int scale) {
  const float s = static_cast<float>(scale);
  cam.width *= scale, cam.height *= scale;
  cam.fx *= s, cam.fy *= s, cam.cx *= s, cam.cy *= s;
  return cam;
}

// The mean of each scale x scale block.
ImageRGBA boxDown(const ImageRGBA& big, int scale) {
  ImageRGBA out(big.width / scale, big.height / scale);
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x)
      for (int c = 0; c < 4; ++c) {
        double sum = 0;
        for (int j = 0; j < scale; ++j)
          for (int i = 0; i < scale; ++i) sum += big.at(x * scale + i, y * scale + j)[c];
        out.at(x, y)[c] = static_cast<float>(sum / (scale * scale));
      }
  return out;
}

// The core's mesh (and the shell's render object) as the frame draws a baked hull.
struct HullDraw {
  hull::HullFrame frame;
  std::vector<RenderObject> objects;
  std::vector<RenderMesh> meshes;
};
void drawHull(const hull::HullAsset& asset, const Camera& cam, HullDraw& d) {
  d.objects.clear(), d.meshes.clear();
  hull::buildHullFrame(asset, hull::HullMode::kBaked, Mat4{}, cam, 0.0, hull::HullLight{}, d.frame, d.objects,
                       d.meshes);
}

ImageRGBA render(VulkanRenderer* gpu, std::span<const RenderObject> objects, const Camera& cam,
                 std::span<const RenderMesh> meshes) {
  RenderSettings rs;
  rs.background = Vec3{0.1f, 0.15f, 0.3f};
  if (gpu) return gpu->render(objects, cam, rs, nullptr, meshes);
  return renderCpu(objects, cam, rs, nullptr, meshes);
}

size_t pixelsOver(const ImageRGBA& a, const ImageRGBA& b, float threshold) {
  size_t n = 0;
  for (size_t p = 0; p < a.pixels.size(); p += 4)
    n += std::max({std::abs(a.pixels[p] - b.pixels[p]), std::abs(a.pixels[p + 1] - b.pixels[p + 1]),
                   std::abs(a.pixels[p + 2] - b.pixels[p + 2])}) > threshold;
  return n;
}

TEST(MeshAntialias, SamplePatternsAndBadCountsAreRefused) {
  for (uint32_t n : {1u, 2u, 4u, 8u, 16u}) {
    const auto pattern = meshSamplePattern(n);
    ASSERT_EQ(pattern.size(), n);
    float mx = 0, my = 0;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_TRUE(pattern[i][0] >= 0 && pattern[i][0] < 1 && pattern[i][1] >= 0 && pattern[i][1] < 1);
      for (size_t j = 0; j < i; ++j)
        EXPECT_FALSE(pattern[i][0] == pattern[j][0] && pattern[i][1] == pattern[j][1]) << n << ": " << i;
      mx += pattern[i][0], my += pattern[i][1];
    }
    if (n < 16) {  // the patterns up to 8 are centred on the pixel; 16's is not quite
      EXPECT_FLOAT_EQ(mx / static_cast<float>(n), 0.5f) << n;
      EXPECT_FLOAT_EQ(my / static_cast<float>(n), 0.5f) << n;
    }
  }
  EXPECT_NE(test::errorOf([] { meshSamplePattern(3); }).find("not 1, 2, 4, 8 or 16"), std::string::npos);
  test::TestMesh quad = test::quadMesh({0, 0, 2}, 0.5f, 0.5f);
  RenderMesh m = quad.view();
  m.samples = 6;
  EXPECT_NE(m.validate().find("samples 6"), std::string::npos);
  Camera cam;
  cam.width = cam.height = 16, cam.fx = cam.fy = 16, cam.cx = cam.cy = 8;
  EXPECT_NE(test::errorOf([&] {
              rasterizeMeshes({&m, 1}, cam);
            }).find("mesh 0: samples 6"),
            std::string::npos);
  const RenderMesh list[2] = {quad.view(), m};
  m.samples = 4;
  const RenderMesh ok[2] = {quad.view(), m};
  EXPECT_EQ(meshLayerSamples(ok), 4u);
  EXPECT_EQ(meshLayerSamples({}), 1u);
  EXPECT_NE(test::errorOf([&] { rasterizeMeshes(list, cam); }).find("mesh 1"), std::string::npos);
}

// The independent oracle: the core drawn single-sample at 8x the resolution (a regular 8 x 8 grid of pixel
// centres in each pixel, not the rotated pattern of the layer) and box-filtered. The 8-sample core is close
// to it and much closer than the aliased one; so are 4 and 16 samples, in order.
TEST(MeshAntialias, HullCoreMatchesASupersampledReference) {
  auto asset = hullAsset("MeshAntialias.Oracle", false);
  for (float az : {20.0f, 145.0f}) {
    const Camera cam = viewCamera(96, 80, az);
    HullDraw d;
    drawHull(*asset, cam, d);
    ASSERT_EQ(d.meshes.size(), 1u);
    ASSERT_TRUE(d.objects.empty());  // no shell: the core alone over the background
    EXPECT_EQ(d.meshes[0].samples, hull::kHullCoreSamples);
    EXPECT_EQ(hull::kHullCoreSamples, 8u);
    RenderMesh core = d.meshes[0];
    core.samples = 1;
    const ImageRGBA reference = boxDown(render(nullptr, {}, scaled(cam, 8), {&core, 1}), 8);
    std::vector<double> psnr;
    for (uint32_t n : {1u, 4u, 8u, 16u}) {
      core.samples = n;
      psnr.push_back(compareImages(render(nullptr, {}, cam, {&core, 1}), reference).psnr);
      std::fprintf(stderr, "azimuth %g: %u sample(s) against the 8x8 supersampled core: %.2f dB\n", az, n,
                   psnr.back());
      RecordProperty("psnr_db_az" + std::to_string(static_cast<int>(az)) + "_" + std::to_string(n),
                     std::to_string(psnr.back()));
    }
    EXPECT_LT(psnr[0], 30.0) << "the aliased core (24.9 and 25.2 dB when written)";
    EXPECT_GT(psnr[2], 36.0) << "8 samples (37.6 and 38.0 dB when written)";
    EXPECT_GT(psnr[2] - psnr[0], 8.0) << "8 samples against the aliased core";
    EXPECT_GT(psnr[1], psnr[0] + 4.0) << "4 samples";
    EXPECT_GT(psnr[3], psnr[2]) << "16 samples";
  }
}

// CPU against Vulkan per pixel: the anti-aliased core with its translucent shell (edge pixels composite
// between shell splats), at 4, 8 and 16 samples; and the anti-aliased frame is not the aliased one.
TEST(MeshAntialias, VulkanMatchesCpu) {
  SF_REQUIRE_VULKAN(gpu);
  auto asset = hullAsset("MeshAntialias.Vulkan", true);
  for (float az : {30.0f, 220.0f}) {
    const Camera cam = viewCamera(112, 96, az);
    HullDraw d;
    drawHull(*asset, cam, d);
    ASSERT_EQ(d.meshes.size(), 1u);
    ASSERT_EQ(d.objects.size(), 1u);
    for (uint32_t n : {4u, 8u, 16u}) {
      d.meshes[0].samples = n;
      const ImageRGBA g = render(gpu, d.objects, cam, d.meshes),
                      c = render(nullptr, d.objects, cam, d.meshes);
      const double psnr = compareImages(g, c).psnr;
      std::fprintf(stderr, "azimuth %g, %u samples: Vulkan against CPU %.2f dB\n", az, n, psnr);
      // As the single-sample baked hull (hull_test VulkanMatchesCpuInBothModes): octagons of nearly equal
      // lift on one face differ by less than the backends' depth rounding in a few pixels.
      EXPECT_GT(psnr, 45.0) << "azimuth " << az << ", " << n << " samples";
      EXPECT_LT(pixelsOver(g, c, 2.0f / 255), g.pixels.size() / 4 / 500) << "azimuth " << az << ", " << n;
      if (n == 8) {
        d.meshes[0].samples = 1;
        const ImageRGBA aliased = render(gpu, d.objects, cam, d.meshes);
        EXPECT_GT(pixelsOver(g, aliased, 2.0f / 255), g.pixels.size() / 4 / 50)
            << "the anti-aliased core's edges differ from the aliased one's";
      }
    }
  }
  SF_EXPECT_VALIDATION_CLEAN(gpu);
}

// A pixel half covered by the mesh (its edge at x = 30.5: 4 of the 8 samples) between faint splats in front
// of it and behind it composites as a fragment of alpha 1/2 at the mesh's depth: the splats in front over it,
// those behind through the other half, i.e. exactly half the image with the pixel covered by the opaque mesh
// plus half the image without the mesh. Compositing the fragment anywhere else in the order (over every
// splat, or behind them all) breaks that. Both backends.
TEST(MeshAntialias, PartlyCoveredPixelCompositesBetweenTheSplatsInFrontAndBehind) {
  const Camera cam = test::pinholeCamera(64, 48, 40.0f);
  GaussianCloud splats = test::randomCloud(200, 1, 21);
  for (Vec3& p : splats.positions) p = p + Vec3{0, 0, 4.0f};  // depths 3..5 around the mesh's 4
  for (float& o : splats.opacities) o *= 0.5f;
  RenderObject obj{&splats, Mat4{}};
  test::TestMesh half = test::pixelQuad(cam, 10, 8, 30.5f, 40, 4.0f),
                 whole = test::pixelQuad(cam, 10, 8, 31, 40, 4.0f);
  half.base_color = whole.base_color = {0.9f, 0.3f, 0.2f, 1.0f};
  RenderMesh aa = half.view(), opaque = whole.view();
  aa.samples = 8;
  // The layer itself: alpha 1/2 and the mesh's depth at column 30, alpha 1 at 29, nothing at 31.
  const MeshLayer layer = rasterizeMeshes({&aa, 1}, cam);
  const size_t p30 = 20 * 64 + 30;
  EXPECT_EQ(layer.alpha[p30], 0.5f);
  EXPECT_NEAR(layer.depth[p30], 4.0f, 1e-5f);
  EXPECT_EQ(layer.alpha[p30 - 1], 1.0f);
  EXPECT_FALSE(layer.depth[p30 + 1] < INFINITY);
  const MeshLayer single = rasterizeMeshes({&opaque, 1}, cam);
  EXPECT_NEAR(layer.color[p30].x, single.color[p30].x, 1e-6f);
  SF_REQUIRE_VULKAN(gpu);
  for (VulkanRenderer* backend : {static_cast<VulkanRenderer*>(nullptr), gpu}) {
    const char* name = backend ? "Vulkan" : "CPU";
    const ImageRGBA got = render(backend, {&obj, 1}, cam, {&aa, 1});
    const ImageRGBA with_opaque = render(backend, {&obj, 1}, cam, {&opaque, 1});
    const ImageRGBA without = render(backend, {&obj, 1}, cam, {});
    double worst = 0, over_all = 0;
    for (int y = 9; y < 39; ++y)
      for (int c = 0; c < 3; ++c) {
        const float want = 0.5f * with_opaque.at(30, y)[c] + 0.5f * without.at(30, y)[c];
        worst = std::max(worst, static_cast<double>(std::abs(got.at(30, y)[c] - want)));
        // The fragment over every splat instead: half the mesh colour over the image without it.
        const float on_top =
            0.5f * single.color[static_cast<size_t>(y * 64 + 30)][c] + 0.5f * without.at(30, y)[c];
        over_all = std::max(over_all, static_cast<double>(std::abs(got.at(30, y)[c] - on_top)));
      }
    EXPECT_LT(worst, 2e-5) << name;
    EXPECT_GT(over_all, 0.02) << name << ": the splats in front matter";
    EXPECT_GT(compareImages(with_opaque, without).max_abs, 0.2) << name;
  }
  SF_EXPECT_VALIDATION_CLEAN(gpu);
}

// A pixel whose samples all hold the centre's colour and alpha keeps the single-sample fragment, its depth
// included, so that everything inside an anti-aliased mesh is the single-sample image bit for bit (here a
// slanted flat-coloured quad, its depth varying across the pixel, with splats crossing it); only pixels on
// its outline change. A mesh that asks for no samples is unchanged beside one that does. Both backends.
TEST(MeshAntialias, FullyCoveredPixelsAreTheSingleSampleImage) {
  const Camera cam = test::pinholeCamera(64, 48, 40.0f);
  GaussianCloud splats = test::randomCloud(300, 1, 22);
  for (Vec3& p : splats.positions) p = p + Vec3{0, 0, 4.0f};
  RenderObject obj{&splats, Mat4{}};
  test::TestMesh slanted;
  slanted.positions = {{-1.2f, -0.9f, 3.2f}, {0.9f, -1.0f, 4.6f}, {1.0f, 0.8f, 4.8f}, {-1.1f, 0.9f, 3.3f}};
  slanted.indices = {0, 1, 2, 0, 2, 3};
  slanted.colors.assign(4, {0.2f, 0.7f, 0.4f, 1.0f});
  test::TestMesh other = test::pixelQuad(cam, 44.3f, 2.6f, 61.7f, 12.4f, 3.5f);  // lit, no samples asked
  RenderMesh meshes[2] = {slanted.view(), other.view()};
  meshes[0].shading = MeshShading::kUnlit;
  SF_REQUIRE_VULKAN(gpu);
  for (VulkanRenderer* backend : {static_cast<VulkanRenderer*>(nullptr), gpu}) {
    const char* name = backend ? "Vulkan" : "CPU";
    meshes[0].samples = 1;
    const ImageRGBA single = render(backend, {&obj, 1}, cam, meshes);
    meshes[0].samples = 8;
    const ImageRGBA aa = render(backend, {&obj, 1}, cam, meshes);
    // The covered pixels of both meshes, and which of the slanted one's have all 8 samples covered (from the
    // layer itself: its alpha is 1 exactly there).
    const MeshLayer layer = rasterizeMeshes(meshes, cam);
    meshes[0].samples = 1;
    const MeshLayer centres = rasterizeMeshes(meshes, cam);
    size_t inner = 0, edge_changed = 0;
    for (int y = 0; y < cam.height; ++y)
      for (int x = 0; x < cam.width; ++x) {
        const size_t i = static_cast<size_t>(y * cam.width + x);
        const bool full = layer.alpha[i] == 1.0f && centres.depth[i] < INFINITY;
        if (full) {
          ++inner;
          for (int c = 0; c < 4; ++c)
            ASSERT_EQ(aa.at(x, y)[c], single.at(x, y)[c]) << name << " " << x << "," << y << " channel " << c;
          if (!backend) {
            ASSERT_EQ(layer.depth[i], centres.depth[i]) << x << "," << y;
          }
        } else if (layer.depth[i] < INFINITY || centres.depth[i] < INFINITY) {
          edge_changed += std::abs(aa.at(x, y)[0] - single.at(x, y)[0]) > 1e-3f;
        }
      }
    EXPECT_GT(inner, 300u) << name;
    EXPECT_GT(edge_changed, 40u) << name << ": the outline is anti-aliased";
    // The lit rectangle (no samples asked) away from the slanted quad: its own pixels unchanged, its edges
    // too.
    for (int y = 0; y < 16; ++y)
      for (int x = 42; x < 64; ++x)
        for (int c = 0; c < 4; ++c)
          ASSERT_EQ(aa.at(x, y)[c], single.at(x, y)[c]) << name << " " << x << "," << y;
  }
  SF_EXPECT_VALIDATION_CLEAN(gpu);
}

// Scene JSON "meshSamples" on a hull object (and its default), --mesh-samples of render, and their errors.
TEST(MeshAntialias, SceneJsonAndCli) {
  const std::string dir = test::tempDir("MeshAntialias.Json");
  saveSpl2(fibonacciHull(600, 9, false), dir + "/h.spl2");
  const Scene s = parseSceneJson(R"({"objects": [{"hull": "h.spl2"}, {"hull": "h.spl2", "meshSamples": 1},
      {"hull": "h.spl2", "meshSamples": 16}]})",
                                 dir + "/scene.json", {});
  ASSERT_EQ(s.objects.size(), 3u);
  EXPECT_EQ(s.objects[0].mesh_samples, 0u);
  EXPECT_EQ(s.objects[1].mesh_samples, 1u);
  EXPECT_EQ(s.objects[2].mesh_samples, 16u);
  const Camera cam = viewCamera(48, 48, 0.0f);
  SceneFrame frame;
  poseScene(s, 0.0, frame, false, &cam);
  ASSERT_EQ(frame.meshes.size(), 3u);
  EXPECT_EQ(frame.meshes[0].samples, 8u);
  EXPECT_EQ(frame.meshes[1].samples, 1u);
  EXPECT_EQ(frame.meshes[2].samples, 16u);
  for (const char* bad : {"3", "0", "8.5", "\"8\"", "true"}) {
    const std::string err = test::errorOf([&] {
      parseSceneJson(std::string(R"({"objects": [{"hull": "h.spl2", "meshSamples": )") + bad + "}]}",
                     dir + "/s.json", {});
    });
    EXPECT_NE(err.find("objects[0].meshSamples"), std::string::npos) << bad << ": " << err;
    EXPECT_NE(err.find("1, 2, 4, 8 or 16"), std::string::npos) << bad << ": " << err;
  }
  saveSplats(test::randomCloud(10, 0, 1), dir + "/s.ply");
  EXPECT_NE(test::errorOf([&] {
              parseSceneJson(R"({"objects": [{"file": "s.ply", "meshSamples": 8}]})", dir + "/s.json", {});
            }).find("applies to objects that draw meshes"),
            std::string::npos);

  // The command line: the default (8) against --mesh-samples 1 and 8; a bad count is a usage error.
  std::ofstream(dir + "/one.json") << R"({"objects": [{"hull": "h.spl2"}]})";
  std::string out;
  const std::string base = "render " + dir + "/one.json --backend cpu --width 64 --height 64 ";
  ASSERT_EQ(test::runCli(base + "-o " + dir + "/default.png", &out), 0) << out;
  ASSERT_EQ(test::runCli(base + "--mesh-samples 8 -o " + dir + "/eight.png", &out), 0) << out;
  ASSERT_EQ(test::runCli(base + "--mesh-samples 1 -o " + dir + "/one.png", &out), 0) << out;
  const ImageRGBA def = readPng(dir + "/default.png"), eight = readPng(dir + "/eight.png"),
                  one = readPng(dir + "/one.png");
  EXPECT_EQ(compareImages(def, eight).max_abs, 0.0);
  EXPECT_GT(compareImages(def, one).max_abs, 0.05);
  EXPECT_EQ(test::runCli(base + "--mesh-samples 3 -o " + dir + "/x.png", &out), 2);
  EXPECT_NE(out.find("--mesh-samples"), std::string::npos) << out;
  ASSERT_EQ(test::runCli("render --help", &out), 0);
  EXPECT_NE(out.find("--mesh-samples"), std::string::npos);
  ASSERT_EQ(test::runCli("animate --help", &out), 0);
  EXPECT_NE(out.find("--mesh-samples"), std::string::npos);
}

}  // namespace
}  // namespace sf
