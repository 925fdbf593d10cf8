// Splat hulls end to end: the bake (floater signs on planted floaters, belly cull, channels, the file), the
// hull in the frame (cel light, sort depths, baked vs sorted, CPU vs Vulkan) and the CLI.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>
#include <random>

#include "core/image.h"
#include "gpu/gpu.h"
#include "hull/bake.h"
#include "hull/hull_render.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/spl2.h"
#include "render/cpu_renderer.h"
#include "render/vulkan_renderer.h"
#include "scene/scene.h"
#include "support/gpu_support.h"
#include "support/test_support.h"

namespace sf {
namespace {

// A glTF of one triangle mesh (one node per part), written by hand: positions and indices in a data URI.
struct Part {
  std::string name;
  std::vector<Vec3> positions;
  std::vector<uint32_t> indices;
};
void writeGltf(const std::string& path, const std::vector<Part>& parts) {
  std::vector<uint8_t> bin;
  std::string views, accessors, meshes, nodes, node_list;
  for (size_t p = 0; p < parts.size(); ++p) {
    const Part& part = parts[p];
    Vec3 lo{1e9f, 1e9f, 1e9f}, hi{-1e9f, -1e9f, -1e9f};
    for (const Vec3& v : part.positions) {
      lo = Vec3{std::min(lo.x, v.x), std::min(lo.y, v.y), std::min(lo.z, v.z)};
      hi = Vec3{std::max(hi.x, v.x), std::max(hi.y, v.y), std::max(hi.z, v.z)};
    }
    const size_t pos_at = bin.size();
    bin.resize(pos_at + part.positions.size() * 12);
    std::memcpy(bin.data() + pos_at, part.positions.data(), part.positions.size() * 12);
    const size_t idx_at = bin.size();
    bin.resize(idx_at + part.indices.size() * 4);
    std::memcpy(bin.data() + idx_at, part.indices.data(), part.indices.size() * 4);
    const std::string sep = p ? "," : "";
    views += sep + "{\"buffer\":0,\"byteOffset\":" + std::to_string(pos_at) +
             ",\"byteLength\":" + std::to_string(part.positions.size() * 12) + "}";
    views += ",{\"buffer\":0,\"byteOffset\":" + std::to_string(idx_at) +
             ",\"byteLength\":" + std::to_string(part.indices.size() * 4) + "}";
    char minmax[256];
    std::snprintf(minmax, sizeof minmax, "\"min\":[%.9g,%.9g,%.9g],\"max\":[%.9g,%.9g,%.9g]", lo.x, lo.y,
                  lo.z, hi.x, hi.y, hi.z);
    accessors += sep + "{\"bufferView\":" + std::to_string(2 * p) +
                 ",\"componentType\":5126,\"count\":" + std::to_string(part.positions.size()) +
                 ",\"type\":\"VEC3\"," + minmax + "}";
    accessors += ",{\"bufferView\":" + std::to_string(2 * p + 1) +
                 ",\"componentType\":5125,\"count\":" + std::to_string(part.indices.size()) +
                 ",\"type\":\"SCALAR\"}";
    meshes += sep + "{\"primitives\":[{\"attributes\":{\"POSITION\":" + std::to_string(2 * p) +
              "},\"indices\":" + std::to_string(2 * p + 1) + "}]}";
    nodes += sep + "{\"name\":\"" + part.name + "\",\"mesh\":" + std::to_string(p) + "}";
    node_list += sep + std::to_string(p);
  }
  const std::string json =
      "{\"asset\":{\"version\":\"2.0\"},\"scene\":0,\"scenes\":[{\"nodes\":[" + node_list +
      "]}],\"nodes\":[" + nodes + "],\"meshes\":[" + meshes + "],\"accessors\":[" + accessors +
      "],\"bufferViews\":[" + views + "],\"buffers\":[{\"byteLength\":" + std::to_string(bin.size()) +
      ",\"uri\":\"data:application/octet-stream;base64," + test::encodeBase64(bin) + "\"}]}";
  std::ofstream(path) << json;
}

// A UV sphere of radius r (segments a multiple of 4, so that its box is exactly [-r, r]^3).
Part sphere(float r, int seg) {
  Part p{"hull_body", {}, {}};
  const int rings = seg / 2;
  for (int i = 0; i <= rings; ++i)
    for (int j = 0; j <= seg; ++j) {
      const double th = std::numbers::pi * i / rings, ph = 2 * std::numbers::pi * j / seg;
      p.positions.push_back(Vec3{static_cast<float>(r * std::sin(th) * std::cos(ph)),
                                 static_cast<float>(r * std::cos(th)),
                                 static_cast<float>(r * std::sin(th) * std::sin(ph))});
    }
  for (int i = 0; i < rings; ++i)
    for (int j = 0; j < seg; ++j) {
      const uint32_t a = static_cast<uint32_t>(i * (seg + 1) + j), b = a + 1,
                     c = a + static_cast<uint32_t>(seg + 1), d = c + 1;
      p.indices.insert(p.indices.end(), {a, b, c, b, d, c});  // outward (counter-clockwise seen from outside)
    }
  return p;
}

// Points on the faces of a part (area-weighted), for "clean" splats that lie exactly on the surface.
std::vector<Vec3> surfacePoints(const Part& p, size_t n, uint32_t seed) {
  std::vector<double> cdf{0};
  for (size_t t = 0; t < p.indices.size(); t += 3) {
    const Vec3 a = p.positions[p.indices[t]], b = p.positions[p.indices[t + 1]],
               c = p.positions[p.indices[t + 2]];
    cdf.push_back(cdf.back() + 0.5 * length(cross(b - a, c - a)));
  }
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Vec3> out;
  for (size_t i = 0; i < n; ++i) {
    const size_t t =
        static_cast<size_t>(std::upper_bound(cdf.begin(), cdf.end(), u(rng) * cdf.back()) - cdf.begin()) - 1;
    const float r1 = static_cast<float>(std::sqrt(u(rng))), r2 = static_cast<float>(u(rng));
    const Vec3 a = p.positions[p.indices[3 * t]], b = p.positions[p.indices[3 * t + 1]],
               c = p.positions[p.indices[3 * t + 2]];
    out.push_back(a * (1 - r1) + b * (r1 * (1 - r2)) + c * (r1 * r2));
  }
  return out;
}

GaussianCloud cloudOf(const std::vector<Vec3>& centres, float sigma, float opacity) {
  GaussianCloud c;
  c.resize(centres.size(), 0);
  for (size_t i = 0; i < centres.size(); ++i) {
    c.positions[i] = centres[i];
    c.scales[i] = Vec3{sigma, sigma, sigma * 0.1f};
    c.rotations[i] = Quat{1, 0, 0, 0};
    c.opacities[i] = opacity;
    float* dc = c.shOf(i).data();
    dc[0] = 0.5f, dc[1] = 0.2f, dc[2] = -0.3f;
  }
  return c;
}

// A cloud made in the hull frame (glTF axes, y up) saved as splat files are: in the PLY frame (y down), as
// `train` writes them; hull bake turns it back.
void saveInPlyFrame(GaussianCloud c, const std::string& path) {
  changeAxes(c, gltfToPlyAxes());
  saveSplats(c, path);
}

// The planted-floater fixture: a sphere of radius 0.8 (its box is the 1.6 cube, so the hull frame is the
// file's) plus a small plate outside it; clean splats on the sphere; floaters of each sign.
struct FloaterFixture {
  std::string dir, gltf, ply;
  size_t clean = 3000, far = 10, detached = 12, sticking = 10;
};
FloaterFixture makeFloaterFixture(const std::string& name) {
  FloaterFixture f;
  f.dir = test::tempDir(name);
  f.gltf = f.dir + "/sphere.gltf";
  f.ply = f.dir + "/splats.ply";
  const Part body = sphere(0.8f, 48);
  Part plate{"plate",
             {{0.55f, 0.6f, 0.55f}, {0.65f, 0.6f, 0.55f}, {0.65f, 0.6f, 0.65f}, {0.55f, 0.6f, 0.65f}},
             {0, 2, 1, 0, 3, 2}};
  writeGltf(f.gltf, {body, plate});
  std::vector<Vec3> pts = surfacePoints(body, f.clean, 7);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t i = 0; i < f.far; ++i) {  // 0.15 off the surface, upper half
    const Vec3 d = normalize(Vec3{u(rng), std::abs(u(rng)) + 0.3f, u(rng)});
    pts.push_back(d * 0.95f);
  }
  for (const Vec3& p : surfacePoints(plate, f.detached, 3))
    pts.push_back(p);  // on the plate, far from the sphere's splats
  for (size_t i = 0; i < f.sticking;
       ++i) {  // 0.04 outside the equator: near the surface, outside side silhouettes
    const float a = static_cast<float>(i) * 0.6f;
    pts.push_back(Vec3{std::cos(a), 0.0f, std::sin(a)} * 0.84f);
  }
  saveInPlyFrame(cloudOf(pts, 0.012f, 0.97f), f.ply);
  return f;
}

TEST(HullBake, FindsEveryPlantedFloaterAndNoCleanSplat) {
  const FloaterFixture f = makeFloaterFixture("HullBake.Floaters");
  hull::BakeOptions o;
  o.splats = f.ply;
  o.budget = 100000;
  o.ao_rays = 8;
  const hull::BakeResult r = hull::bakeHull(f.gltf, o);
  EXPECT_EQ(r.report.input_splats, f.clean + f.far + f.detached + f.sticking);
  EXPECT_EQ(r.report.floaters_distance, f.far);
  EXPECT_EQ(r.report.floaters_connectivity, f.detached);
  EXPECT_EQ(r.report.floaters_silhouette, f.sticking);
  // Clean splats lie on the mesh: distance p50 ~0; the far floaters are 0.15 off (p99 over 3032 splats sees
  // them).
  EXPECT_LT(r.report.distance_p50, 0.002f);
  // What is left is the clean splats minus the belly (normals facing below the belt).
  EXPECT_EQ(r.report.core + r.report.shell + r.report.belly_culled, f.clean);
  EXPECT_GT(r.report.belly_culled, 0u);
  EXPECT_EQ(r.report.flipped_components, 0u);
  EXPECT_FALSE(r.report.dataset_pass);  // a --splats file has no training views
  EXPECT_NE(r.meta_json.find("\"dataset\": null"), std::string::npos);
}

// With training views the fourth pass runs after the other three: views that cover every pixel flag nothing,
// and the counts of the other signs do not move.
TEST(HullBake, TrainingViewsThatCoverEverythingFlagNoMore) {
  const FloaterFixture f = makeFloaterFixture("HullBake.DatasetPass");
  hull::CoverageView v;  // looking down -z from z = 3.2: the sphere fills the middle of a 64 x 64 image
  v.world_to_camera.m[1][1] = -1, v.world_to_camera.m[2][2] = -1, v.world_to_camera.m[2][3] = 3.2f;
  v.fx = v.fy = 40, v.cx = v.cy = 32, v.width = v.height = 64;
  v.covered.assign(64 * 64, 1);
  const std::vector<hull::CoverageView> views = {v};
  hull::BakeOptions o;
  o.splats = f.ply;
  o.budget = 100000;
  o.ao_rays = 8;
  o.views = views;
  const hull::BakeResult r = hull::bakeHull(f.gltf, o);
  EXPECT_TRUE(r.report.dataset_pass);
  EXPECT_EQ(r.report.floaters_dataset, 0u);
  EXPECT_EQ(r.report.floaters_distance, f.far);
  EXPECT_EQ(r.report.floaters_connectivity, f.detached);
  EXPECT_EQ(r.report.floaters_silhouette, f.sticking);
  EXPECT_NE(r.meta_json.find("\"dataset\": 0"), std::string::npos);
}

TEST(HullBake, BellyCullKeepsOnlySplatsFacingTheBelt) {
  const FloaterFixture f = makeFloaterFixture("HullBake.Belly");
  hull::BakeOptions o;
  o.splats = f.ply;
  o.ao_rays = 8;
  const hull::BakeResult r = hull::bakeHull(f.gltf, o);
  // Closed form for directions: a normal faces some belt camera when n_y sin(e) + |n_xz| cos(e) > 0 for some
  // e in [32, 50] degrees (the cameras are at distance 3.2, so this holds up to the perspective of 0.8
  // / 3.2).
  for (const Spl2Block* b : {&r.hull.core, &r.hull.shell})
    for (size_t i = 0; i < b->size(); ++i) {
      const Vec3 n = b->normal[i];
      const float h = std::sqrt(n.x * n.x + n.z * n.z);
      const float best = std::max(n.y * std::sin(32 * std::numbers::pi_v<float> / 180) +
                                      h * std::cos(32 * std::numbers::pi_v<float> / 180),
                                  n.y * std::sin(50 * std::numbers::pi_v<float> / 180) +
                                      h * std::cos(50 * std::numbers::pi_v<float> / 180));
      EXPECT_GT(best, -0.3f) << "splat " << i << " faces away from every belt camera";
      // Snapped normals are outward on the sphere.
      EXPECT_GT(dot(n, normalize(b->pos[i])), 0.95f);
    }
  // The bottom cap (normals pointing straight down) is gone.
  for (size_t i = 0; i < r.hull.core.size(); ++i) EXPECT_GT(r.hull.core.normal[i].y, -0.9f);
}

TEST(HullBake, SampledCesiumManWithinBudgetAndChannelsDecode) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  hull::BakeOptions o;
  o.budget = 6000;
  o.ao_rays = 16;
  const hull::BakeResult r = hull::bakeHull(path, o);
  const Spl2Hull& h = r.hull;
  EXPECT_TRUE(r.report.sampled);
  EXPECT_LE(h.size(), 6000u);
  EXPECT_GT(h.size(), 4000u);
  // Core: opacity > 0.9, axes = 3 sigma x the visible-disc radius; shell: the rest.
  for (float op : h.core.opacity) EXPECT_GT(op, 0.9f);
  for (float op : h.shell.opacity) EXPECT_LE(op, 0.9f);
  const float sigma_core = length(h.core.ax0[0]) / (3.0f * spl2CoreRadius(h.core.opacity[0]));
  EXPECT_GT(sigma_core, 0.0f);
  // Channels: integers in [0, 255]; part * 16 + emission * 15 decodes to a part < parts and emission <= 15.
  for (const Spl2Block* b : {&h.core, &h.shell})
    for (const auto& a : b->attrs)
      for (float v : a) {
        EXPECT_EQ(v, std::floor(v));
        EXPECT_GE(v, 0.0f);
        EXPECT_LE(v, 255.0f);
      }
  for (const auto& a : h.core.attrs) EXPECT_LT(static_cast<int>(a[1]) / 16, static_cast<int>(r.report.parts));
  // CHNK: the article's packing stays exact in half floats.
  ASSERT_TRUE(h.has_chunks);
  EXPECT_LE(h.chunks.size(), static_cast<size_t>(kSpl2MaxChunks));
  for (size_t i = 0; i < h.chunk_of.size(); ++i)
    EXPECT_LE(spl2PackChunk(h.chunk_of[i], h.material_of[i]), 2048u);
  // The hull fits the 1.6 cube and the sidecar's normalisation maps the model's box onto it.
  for (const Vec3& p : h.core.pos) EXPECT_LE(std::max({std::abs(p.x), std::abs(p.y), std::abs(p.z)}), 0.81f);
  EXPECT_NE(r.meta_json.find("\"normalization\""), std::string::npos);
  EXPECT_EQ(h.orders.size(), static_cast<size_t>(kSpl2Buckets));
}

TEST(HullBake, ErrorsNameTheProblem) {
  EXPECT_NE(
      test::errorOf([] { hull::bakeHull("/nonexistent/model.glb", {}); }).find("/nonexistent/model.glb"),
      std::string::npos);
  hull::BakeOptions o;
  o.budget = 0;
  EXPECT_NE(test::errorOf([&] { hull::bakeHull("x.glb", o); }).find("budget"), std::string::npos);
  o.budget = 10;
  o.belt_min = 60, o.belt_max = 40;
  EXPECT_NE(test::errorOf([&] { hull::bakeHull("x.glb", o); }).find("belt"), std::string::npos);
}

TEST(HullLight, CelBandsEmissionAndFlashAreTheArticlesFormulas) {
  hull::HullLight l;
  l.direction = Vec3{0, -1, 0};  // from above
  l.emission = 1.25f;
  const Vec3 a{0.5f, 0.4f, 0.2f};
  auto shade = [&](Vec3 n, float emis, double t) {
    return hull::celShade(a, normalize(n), Vec3{}, emis, t, l);
  };
  // N.L = 1: the top band 1.12; N.L = 0.4: the middle band 0.88; N.L <= 0.22: 0.62 (time 0: sin = 0).
  EXPECT_NEAR(shade({0, 1, 0}, 0, 0).x, 0.5f * 1.12f, 1e-6f);
  EXPECT_NEAR(shade({0, 0.4f, std::sqrt(1 - 0.16f)}, 0, 0).x, 0.5f * 0.88f, 1e-5f);
  EXPECT_NEAR(shade({1, 0, 0}, 0, 0).x, 0.5f * 0.62f, 1e-6f);
  EXPECT_NEAR(shade({0, -1, 0}, 0, 0).x, 0.5f * 0.62f, 1e-6f);
  // Inside a ramp: N.L = 0.25 is halfway through smoothstep(0.22, 0.28): 0.62 + 0.26 * 0.5.
  EXPECT_NEAR(shade({0, 0.25f, std::sqrt(1 - 0.0625f)}, 0, 0).x, 0.5f * (0.62f + 0.26f * 0.5f), 1e-5f);
  // Breathing emission: albedo * emis * (0.78 + 0.22 sin(2.3 t)) * 1.25 on top of the band.
  const double t = 0.4;
  EXPECT_NEAR(shade({1, 0, 0}, 0.8f, t).y,
              0.4f * 0.62f + 0.4f * 0.8f * (0.78f + 0.22f * static_cast<float>(std::sin(2.3 * t))) * 1.25f,
              1e-5f);
  // Flash: hard bands 1 / 0.45 / 0 by N.L, falloff 1 / (1 + 0.15 d^2); clamped at 1.
  l.flash_position = Vec3{0, 0, 2};
  l.flash_color = Vec3{0.2f, 0.2f, 0.2f};
  l.flash_strength = 1;
  const float lit = hull::celShade(Vec3{0.1f, 0.1f, 0.1f}, Vec3{0, 0, 1}, Vec3{}, 0, 0, l).x;
  EXPECT_NEAR(lit, 0.1f * 0.62f + 0.2f * 1.0f / (1 + 0.15f * 4), 1e-5f);
  const float grazing =
      hull::celShade(Vec3{0.1f, 0.1f, 0.1f}, normalize(Vec3{0, 0.9f, 0.3f}), Vec3{}, 0, 0, l).x;
  EXPECT_NEAR(grazing, 0.1f * 1.12f + 0.2f * 0.45f / (1 + 0.15f * 4), 1e-5f);
  l.enabled = false;
  EXPECT_EQ(hull::celShade(a, Vec3{0, 1, 0}, Vec3{}, 1, 0, l).x, a.x);
}

// Two overlapping splats: the sort depth decides which one is in front (CPU reference).
TEST(HullFrame, SortDepthOverridesTheBlendOrder) {
  GaussianCloud c;
  c.resize(2, 0);
  for (size_t i = 0; i < 2; ++i) {
    c.positions[i] = Vec3{0, 0, 3.0f + static_cast<float>(i)};
    c.scales[i] = Vec3{0.3f, 0.3f, 0.3f};
    c.rotations[i] = Quat{1, 0, 0, 0};
    c.opacities[i] = 0.9f;
  }
  c.shOf(0)[0] = 1.5f;  // red in front
  c.shOf(1)[2] = 1.5f;  // blue behind
  Camera cam;
  cam.width = cam.height = 32, cam.fx = cam.fy = 40, cam.cx = cam.cy = 16;
  RenderObject plain{&c, Mat4{}};
  const ImageRGBA a = renderCpu(std::span<const RenderObject>(&plain, 1), cam, {});
  const std::vector<float> swapped{5.0f, 4.0f};  // blue now sorts in front
  RenderObject over = plain;
  over.sort_depth = swapped;
  const ImageRGBA b = renderCpu(std::span<const RenderObject>(&over, 1), cam, {});
  const size_t centre = (16 * 32 + 16) * 4;
  EXPECT_GT(a.pixels[centre], a.pixels[centre + 2]);  // red wins
  EXPECT_LT(b.pixels[centre], b.pixels[centre + 2]);  // blue wins
  const std::vector<float> wrong_size{1.0f};
  over.sort_depth = wrong_size;
  EXPECT_NE(over.validate().find("sort depths"), std::string::npos);
}

// A baked hull of a sphere: the sampled, fully opaque surface.
std::shared_ptr<hull::HullAsset> sphereHull(const std::string& name, bool with_shell) {
  const std::string dir = test::tempDir(name);
  const Part body = sphere(0.8f, 48);
  writeGltf(dir + "/sphere.gltf", {body});
  hull::BakeOptions o;
  o.ao_rays = 8;
  o.budget = 4000;
  if (with_shell) {  // a trained-like cloud: opaque surface plus a translucent outer layer
    std::vector<Vec3> pts = surfacePoints(body, 4000, 5);
    GaussianCloud c = cloudOf(pts, 0.02f, 0.97f);
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> u(0, 1);
    for (size_t i = 0; i < c.size(); ++i) {
      if (i % 8 == 0) c.opacities[i] = 0.5f;
      float* dc = c.shOf(i).data();
      dc[0] = u(rng) - 0.5f, dc[1] = u(rng) - 0.5f, dc[2] = u(rng) - 0.5f;
    }
    saveInPlyFrame(c, dir + "/splats.ply");
    o.splats = dir + "/splats.ply";
  }
  hull::BakeResult r = hull::bakeHull(dir + "/sphere.gltf", o);
  saveSpl2(r.hull, dir + "/sphere.spl2");
  return hull::HullAsset::load(dir + "/sphere.spl2");
}

Camera beltCamera(int width, int height, float azimuth_deg) {
  const float el = 41 * std::numbers::pi_v<float> / 180, az = azimuth_deg * std::numbers::pi_v<float> / 180;
  const Vec3 eye = Vec3{std::sin(az) * std::cos(el), std::sin(el), std::cos(az) * std::cos(el)} * 3.2f;
  return lookAtCamera(eye, Vec3{}, Vec3{0, 1, 0}, 40.0f, width, height);
}

TEST(HullFrame, BakedShellFollowsTheBucketOrder) {
  auto asset = sphereHull("HullFrame.Order", true);
  ASSERT_GT(asset->hull.shell.size(), 50u);
  const Camera cam = beltCamera(96, 96, 100.0f);
  hull::HullFrame f;
  std::vector<RenderObject> objects;
  std::vector<RenderMesh> meshes;
  hull::buildHullFrame(*asset, hull::HullMode::kBaked, Mat4{}, cam, 0.0, hull::HullLight{}, f, objects,
                       meshes);
  ASSERT_EQ(objects.size(), 1u);
  ASSERT_EQ(meshes.size(), 1u);
  EXPECT_EQ(f.bucket, spl2Bucket(cam.position(), kSpl2Buckets));
  EXPECT_EQ(f.bucket, static_cast<int>(100.0f / 5.625f));
  const std::vector<int32_t>& order = asset->hull.orders[static_cast<size_t>(f.bucket)];
  for (size_t k = 1; k < order.size(); ++k)
    EXPECT_LT(f.sort_depth[static_cast<size_t>(order[k])], f.sort_depth[static_cast<size_t>(order[k - 1])])
        << "order position " << k;
  EXPECT_EQ(meshes[0].triangleCount(), asset->hull.core.size() * 8);
  EXPECT_EQ(meshes[0].shading, MeshShading::kUnlit);
}

// `mesh_samples`: SceneObject::mesh_samples (0: the core's default, 8 samples a pixel).
Scene hullScene(std::shared_ptr<hull::HullAsset> asset, hull::HullMode mode, hull::HullLod lod = {},
                uint32_t mesh_samples = 0) {
  Scene s;
  SceneObject o;
  o.mesh_samples = mesh_samples;
  o.cloud = std::shared_ptr<const GaussianCloud>(asset, &asset->rest);
  auto h = std::make_shared<HullObject>(asset);
  h->mode = mode;
  h->lod = lod;
  o.kind = h;
  s.objects.push_back(o);
  return s;
}

ImageRGBA renderScene(const Scene& s, const Camera& cam, VulkanRenderer* gpu) {
  SceneFrame frame;
  poseScene(s, 0.3, frame, false, &cam);
  RenderSettings rs;
  rs.background = Vec3{0.5f, 0.5f, 0.5f};
  rs.half_raster = false;  // the sorted mode's slots are held to the CPU's image exactly (fp32 blending)
  if (gpu) return gpu->render(frame.objects, cam, rs, nullptr, frame.meshes);
  return renderCpu(frame.objects, cam, rs, nullptr, frame.meshes);
}

TEST(HullFrame, BakedAndSortedAgreeForAnOpaqueHull) {
  auto asset = sphereHull("HullFrame.Modes", false);
  EXPECT_EQ(asset->hull.shell.size(), 0u);
  const Camera cam = beltCamera(160, 160, 30.0f);
  const ImageRGBA baked = renderScene(hullScene(asset, hull::HullMode::kBaked), cam, nullptr);
  const ImageRGBA sorted = renderScene(hullScene(asset, hull::HullMode::kSorted), cam, nullptr);
  const double psnr = compareImages(baked, sorted).psnr;
  RecordProperty("psnr_db", std::to_string(psnr));
  std::fprintf(stderr, "baked vs sorted: %.2f dB\n", psnr);
  EXPECT_GT(psnr, 22.0) << "baked vs sorted, opaque hull (26.1 dB when written)";
}

// With a shell: the baked shell (its bucket's order, the depth bias against the core) against every splat in
// the global sort.
TEST(HullFrame, BakedAndSortedAgreeWithAShell) {
  auto asset = sphereHull("HullFrame.ModesShell", true);
  ASSERT_GT(asset->hull.shell.size(), 50u);
  for (float az : {30.0f, 250.0f}) {
    const Camera cam = beltCamera(160, 160, az);
    const double psnr = compareImages(renderScene(hullScene(asset, hull::HullMode::kBaked), cam, nullptr),
                                      renderScene(hullScene(asset, hull::HullMode::kSorted), cam, nullptr))
                            .psnr;
    std::fprintf(stderr, "baked vs sorted with a shell, azimuth %g: %.2f dB\n", az, psnr);
    EXPECT_GT(psnr, 20.0) << "azimuth " << az;
  }
}

using test::gpuRenderer;

TEST(HullFrame, VulkanMatchesCpuInBothModes) {
  VulkanRenderer* gpu = gpuRenderer();
  if (!gpu) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  const uint32_t validation_before = gpu->context().validationErrors();
  auto asset = sphereHull("HullFrame.Vulkan", true);
  for (float az : {10.0f, 200.0f})
    for (hull::HullMode mode : {hull::HullMode::kBaked, hull::HullMode::kSorted})
      for (uint32_t samples : {1u, 8u}) {  // the core aliased, and anti-aliased (the default)
        const Camera cam = beltCamera(128, 112, az);
        const Scene s = hullScene(asset, mode, {}, samples);
        const ImageRGBA g = renderScene(s, cam, gpu), c = renderScene(s, cam, nullptr);
        const double psnr = compareImages(g, c).psnr;
        size_t differ = 0;
        for (size_t p = 0; p < g.pixels.size(); p += 4)
          differ +=
              std::max({std::abs(g.pixels[p] - c.pixels[p]), std::abs(g.pixels[p + 1] - c.pixels[p + 1]),
                        std::abs(g.pixels[p + 2] - c.pixels[p + 2])}) > 2.0f / 255;
        std::fprintf(stderr, "%s, %u sample(s), azimuth %g: Vulkan vs CPU %.2f dB, %zu pixels over 2/255\n",
                     hull::hullModeName(mode), samples, az, psnr, differ);
        if (mode == hull::HullMode::kSorted) {
          EXPECT_GT(psnr, 100.0) << "sorted at azimuth " << az;
        } else if (samples == 1) {
          // The core's octagons are lifted by importance so that coplanar ones do not tie; octagons of nearly
          // equal rank on one flat face still differ by less than the backends' depth rounding in a few
          // pixels.
          EXPECT_GT(psnr, 45.0) << "baked at azimuth " << az;
          EXPECT_LT(differ, g.pixels.size() / 4 / 500) << "baked at azimuth " << az << ": pixels over 2/255";
        } else {
          // Anti-aliased, those near ties are met in each of the 8 sample passes, each moving its pixel by an
          // eighth of the octagons' colour difference: more pixels over 2/255 (42 and 45 when written), much
          // smaller differences (60.4 and 61.8 dB; 52.9 and 55.6 dB aliased).
          EXPECT_GT(psnr, 50.0) << "baked, anti-aliased, at azimuth " << az;
          EXPECT_LT(differ, g.pixels.size() / 4 / 200) << "baked, anti-aliased, at azimuth " << az;
        }
      }
  EXPECT_EQ(gpu->context().validationErrors(), validation_before)
      << gpu->context().validationReport(validation_before);
}

TEST(HullScene, HullObjectsHeadingModeAndLightFromJson) {
  auto asset = sphereHull("HullScene.Json", true);
  const std::string dir = test::tempDir("HullScene.Json");
  saveSpl2(asset->hull, dir + "/h.spl2");
  const std::string text =
      R"({"objects": [{"hull": "h.spl2", "heading": 90, "mode": "sorted"}, {"hull": "h.spl2"}],
    "light": {"direction": [0, -1, 0], "brightness": 0.8, "emission": 2, "flash": {"position": [1, 2, 3], "strength": 0.5}}})";
  const Scene s = parseSceneJson(text, dir + "/scene.json", {});
  ASSERT_EQ(s.objects.size(), 2u);
  ASSERT_TRUE(s.objects[0].as<HullObject>() && s.objects[1].as<HullObject>());
  EXPECT_EQ(s.objects[0].as<HullObject>()->mode, hull::HullMode::kSorted);
  EXPECT_EQ(s.objects[1].as<HullObject>()->mode, hull::HullMode::kBaked);
  // A heading of 90 degrees turns the hull's +z (its front) towards +x, the way bucket azimuths grow.
  const Vec3 front = s.objects[0].object_to_world.linear() * Vec3{0, 0, 1};
  EXPECT_NEAR(front.x, 1.0f, 1e-6f);
  EXPECT_NEAR(front.z, 0.0f, 1e-6f);
  EXPECT_FLOAT_EQ(s.light.brightness, 0.8f);
  EXPECT_FLOAT_EQ(s.light.emission, 2.0f);
  EXPECT_FLOAT_EQ(s.light.flash_strength, 0.5f);
  EXPECT_FLOAT_EQ(s.light.flash_position.z, 3.0f);
  // A camera at azimuth 10 in the world sees a hull turned by 90 from its own azimuth 280 (bucket 49), an
  // unturned one from 10 (bucket 1).
  const Camera cam = beltCamera(64, 64, 10.0f);
  SceneFrame frame;
  poseScene(s, 0.0, frame, false, &cam);
  ASSERT_TRUE(frame.state<HullPosed>(0) && frame.state<HullPosed>(1));
  EXPECT_EQ(frame.state<HullPosed>(1)->frame.bucket, 1);
  EXPECT_EQ(frame.state<HullPosed>(0)->frame.bucket, -1);  // sorted: no bucket
  Scene turned = s;
  turned.objects[1].object_to_world = s.objects[0].object_to_world;
  poseScene(turned, 0.0, frame, false, &cam);
  EXPECT_EQ(frame.state<HullPosed>(1)->frame.bucket, 49);
  // Errors name the JSON path.
  SceneLoadOptions strict;
  strict.strict = true;
  EXPECT_NE(test::errorOf([&] {
              parseSceneJson(R"({"objects": [{"hull": "h.spl2", "mode": "fast"}]})", dir + "/s.json", strict);
            }).find("objects[0].mode"),
            std::string::npos);
  EXPECT_NE(test::errorOf([&] {
              parseSceneJson(R"({"objects": [{"file": "h.spl2", "heading": 3}]})", dir + "/s.json", strict);
            }).find("objects[0].heading"),
            std::string::npos);
  EXPECT_NE(test::errorOf([&] {
              parseSceneJson(R"({"objects": [{"hull": "h.spl2"}], "light": {"colour": 1}})", dir + "/s.json",
                             {});
            }).find("light"),
            std::string::npos);
}

// ---- Runtime LOD (hull/hull_lod.h) ------------------------------------------------------------------------

// opacity x sigma0 x sigma1, the importance key, recomputed here from the file's values (spl2ToCloud's
// sigmas).
float keyOf(const Spl2Block& b, size_t k, bool core) {
  const float r = core ? spl2CoreRadius(b.opacity[k]) : 1.0f;
  return b.opacity[k] * (length(b.ax0[k]) / 3.0f / r) * (length(b.ax1[k]) / 3.0f / r);
}

// A hull whose core and shell keys interleave: Fibonacci-sphere splats of random size and opacity, the core
// (opacity > 0.9) stored by importance as the bake stores it, the shell in its own (random) order; 64 orders.
Spl2Hull lodHull(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  struct S {
    Vec3 pos, nrm, t0, t1, col;
    float s0, s1, op;
  };
  std::vector<S> core, shell;
  for (size_t i = 0; i < n; ++i) {
    S sp;
    const test::SphereFrame f = test::fibonacciSphereFrame(i, n);
    sp.nrm = f.normal, sp.t0 = f.t0, sp.t1 = f.t1;
    sp.pos = sp.nrm * 0.7f;
    sp.s0 = 0.008f + 0.03f * u(rng), sp.s1 = 0.008f + 0.02f * u(rng);
    sp.col = {0.2f + 0.7f * u(rng), 0.2f + 0.7f * u(rng), 0.2f + 0.7f * u(rng)};
    const bool is_core = i % 3 != 0;
    sp.op = is_core ? 0.91f + 0.09f * u(rng) : 0.2f + 0.7f * u(rng);
    (is_core ? core : shell).push_back(sp);
  }
  std::stable_sort(core.begin(), core.end(),
                   [](const S& a, const S& b) { return a.op * a.s0 * a.s1 > b.op * b.s0 * b.s1; });
  Spl2Hull h;
  h.core.resize(core.size());
  h.shell.resize(shell.size());
  auto put = [](Spl2Block& b, size_t k, const S& sp, bool is_core) {
    const float radius = is_core ? spl2CoreRadius(sp.op) : 1.0f;
    b.pos[k] = sp.pos, b.normal[k] = sp.nrm, b.color[k] = sp.col, b.opacity[k] = sp.op;
    b.ax0[k] = sp.t0 * (3.0f * sp.s0 * radius), b.ax1[k] = sp.t1 * (3.0f * sp.s1 * radius);
    b.attrs[k] = {255.0f, static_cast<float>(k % 16), 0.0f, static_cast<float>(k % 256)};
  };
  for (size_t k = 0; k < core.size(); ++k) put(h.core, k, core[k], true);
  for (size_t k = 0; k < shell.size(); ++k) put(h.shell, k, shell[k], false);
  h.orders = spl2ShellOrders(h.shell.pos, kSpl2Buckets, 41.0f);
  return h;
}

std::shared_ptr<hull::HullAsset> lodAsset(const std::string& name, size_t n) {
  const std::string dir = test::tempDir(name);
  saveSpl2(lodHull(n, 3), dir + "/lod.spl2");
  return hull::HullAsset::load(dir + "/lod.spl2");
}

// The importance order: the core's rows as stored (the bake's order: the core drawn is a prefix), the shell's
// by the key; and, the independent check, the first K splats hold the K largest keys (up to float rounding of
// the recomputed core keys), for every K.
TEST(HullLod, ImportanceOrderIsTheStoredCoreMergedWithTheShellByKey) {
  const Spl2Hull h = lodHull(1500, 9);
  const size_t nc = h.core.size(), n = h.size();
  ASSERT_GT(h.shell.size(), 400u);
  const std::vector<uint32_t> order = hull::hullImportanceOrder(h), rank = hull::hullImportanceRanks(h);
  ASSERT_EQ(order.size(), n);
  std::vector<uint8_t> seen(n, 0);
  for (size_t r = 0; r < n; ++r) {
    ASSERT_LT(order[r], n);
    ASSERT_FALSE(seen[order[r]]) << "splat " << order[r] << " twice";
    seen[order[r]] = 1;
    ASSERT_EQ(rank[order[r]], r);
  }
  for (size_t k = 1; k < nc; ++k) ASSERT_LT(rank[k - 1], rank[k]) << "core row " << k;
  std::vector<float> key(n);
  for (size_t i = 0; i < n; ++i) key[i] = i < nc ? keyOf(h.core, i, true) : keyOf(h.shell, i - nc, false);
  // The shell's rows in order of rank have non-increasing keys; and core and shell interleave.
  float prev = INFINITY;
  size_t switches = 0;
  for (size_t r = 0; r < n; ++r) {
    if (r > 0) switches += (order[r] < nc) != (order[r - 1] < nc);
    if (order[r] < nc) continue;
    ASSERT_LE(key[order[r]], prev) << "rank " << r;
    prev = key[order[r]];
  }
  EXPECT_GT(switches, 50u) << "core and shell keys should interleave in this fixture";
  // Prefix property: min over the first K >= max over the rest.
  std::vector<float> suffix_max(n + 1, 0.0f);
  for (size_t r = n; r-- > 0;) suffix_max[r] = std::max(suffix_max[r + 1], key[order[r]]);
  float prefix_min = INFINITY;
  for (size_t r = 0; r + 1 < n; ++r) {
    prefix_min = std::min(prefix_min, key[order[r]]);
    ASSERT_GE(prefix_min, suffix_max[r + 1] * (1.0f - 1e-5f)) << "K = " << r + 1;
  }
  // Parsing and naming.
  EXPECT_EQ(hull::parseHullLod("auto"), hull::HullLod::automatic());
  EXPECT_EQ(hull::parseHullLod("off"), hull::HullLod::off());
  EXPECT_EQ(hull::parseHullLod("1500"), hull::HullLod::fixed(1500));
  EXPECT_EQ(hull::hullLodName(hull::HullLod::fixed(42)), "42");
  for (const char* bad : {"0", "-3", "1.5", "fast", "", "99999999999"})
    EXPECT_NE(test::errorOf([&] { hull::parseHullLod(bad); }).find("expected a whole number"),
              std::string::npos)
        << bad;
}

// The distance rule against its closed form: K = clamp(ceil(2 pi r^2 / 4), ceil(N / 10), N), r = fy s R / z.
TEST(HullLod, DistanceRuleIsItsClosedForm) {
  Camera cam;
  cam.width = 800, cam.height = 600, cam.fx = cam.fy = 1000, cam.cx = 400, cam.cy = 300;
  auto at = [&](float z, float scale) {
    cam.world_to_camera =
        Mat4::fromLinearTranslation(Mat3{}, {0, 0, z});  // the hull's origin at view depth z
    return hull::hullLodAutoCount(
        6000, 1.0f, Mat4::fromLinearTranslation(Mat3::diagonal({scale, scale, scale}), {}), cam);
  };
  EXPECT_EQ(at(0.5f, 1), 6000u);  // the camera inside the bounding sphere
  EXPECT_EQ(at(10, 1), 6000u);    // r = 100 px: 2 pi 100^2 / 4 = 15,708 > N
  EXPECT_EQ(at(20, 1), 3927u);    // r = 50 px: ceil(3926.99)
  EXPECT_EQ(at(40, 2), 3927u);    // twice the size twice as far
  EXPECT_EQ(at(25, 1), 2514u);    // r = 40 px: ceil(2513.27)
  EXPECT_EQ(at(100, 1), 600u);    // r = 10 px: 158, raised to the floor ceil(6000 / 10)
  EXPECT_EQ(at(-5, 1), 6000u);    // behind the camera: never cut by the rule
  uint32_t last = 6000;
  for (float z = 1; z < 300; z *= 1.1f) {
    const uint32_t k = at(z, 1);
    EXPECT_LE(k, last) << "z " << z;
    EXPECT_GE(k, 600u);
    last = k;
  }
  // resolveHullLod: off, a count (clamped to N), auto (N without a camera).
  EXPECT_EQ(hull::resolveHullLod(hull::HullLod::off(), 6000, 1, Mat4{}, &cam), 6000u);
  EXPECT_EQ(hull::resolveHullLod(hull::HullLod::fixed(17), 6000, 1, Mat4{}, &cam), 17u);
  EXPECT_EQ(hull::resolveHullLod(hull::HullLod::fixed(9000), 6000, 1, Mat4{}, &cam), 6000u);
  EXPECT_EQ(hull::resolveHullLod(hull::HullLod::automatic(), 6000, 1, Mat4{}, nullptr), 6000u);
  // The asset's radius: the farthest splat centre (0.7 on this sphere).
  EXPECT_NEAR(hull::hullLodRadius(lodHull(300, 1)), 0.7f, 1e-5f);
  // In the frame: auto draws what the rule says for the frame's camera.
  auto asset = lodAsset("HullLod.Auto", 900);
  const Camera far = lookAtCamera({0, 0, 60}, {0, 0, 0}, {0, 1, 0}, 40.0f, 96, 96);
  hull::HullFrame f;
  std::vector<RenderObject> objects;
  std::vector<RenderMesh> meshes;
  hull::buildHullFrame(*asset, hull::HullMode::kSorted, Mat4{}, far, 0.0, hull::HullLight{}, f, objects,
                       meshes, hull::HullLod::automatic());
  const uint32_t want = hull::hullLodAutoCount(900, asset->lod_radius, Mat4{}, far);
  EXPECT_LT(want, 900u);
  EXPECT_EQ(f.lod_count, want);
  EXPECT_EQ(f.cloud.size(), want);
}

// The first-K cut in both modes draws exactly the splats of rank < K, each as the full hull draws it: the
// core's octagons a prefix with the same vertices and colours, the shell's rows with the same gaussians and
// sort depths; sorted mode's cloud the same rows. And, an independent oracle, a hull file holding only those
// splats renders (sorted) to the same image bit for bit.
TEST(HullFrame, LodDrawsExactlyTheFirstKSplats) {
  auto asset = lodAsset("HullFrame.Lod", 1200);
  const Spl2Hull& h = asset->hull;
  const size_t nc = h.core.size(), ns = h.shell.size(), n = h.size();
  const std::vector<uint32_t>& rank = asset->lod_rank;
  ASSERT_EQ(rank, hull::hullImportanceRanks(h));
  const Camera cam = beltCamera(112, 96, 70.0f);
  const Mat4 place = Mat4::fromLinearTranslation(Mat3::diagonal({1.2f, 1.2f, 1.2f}), {0.1f, 0, 0});
  hull::HullFrame full_b, full_s;
  std::vector<RenderObject> objects;
  std::vector<RenderMesh> meshes;
  hull::buildHullFrame(*asset, hull::HullMode::kBaked, place, cam, 0.3, hull::HullLight{}, full_b, objects,
                       meshes);
  hull::buildHullFrame(*asset, hull::HullMode::kSorted, place, cam, 0.3, hull::HullLight{}, full_s, objects,
                       meshes);
  EXPECT_EQ(full_b.lod_count, n);
  for (uint32_t k :
       {1u, 37u, static_cast<uint32_t>(n / 3), static_cast<uint32_t>(n / 2), static_cast<uint32_t>(n - 1)}) {
    size_t kc = 0, ks = 0;
    for (size_t i = 0; i < nc; ++i) kc += rank[i] < k;
    for (size_t i = 0; i < ns; ++i) ks += rank[nc + i] < k;
    ASSERT_EQ(kc + ks, k);
    hull::HullFrame b, s;
    objects.clear(), meshes.clear();
    hull::buildHullFrame(*asset, hull::HullMode::kBaked, place, cam, 0.3, hull::HullLight{}, b, objects,
                         meshes, hull::HullLod::fixed(k));
    EXPECT_EQ(b.lod_count, k);
    EXPECT_EQ(meshes.size(), kc > 0 ? 1u : 0u) << "K " << k;
    EXPECT_EQ(objects.size(), ks > 0 ? 1u : 0u) << "K " << k;
    // The core: a prefix of its rows, vertex for vertex.
    ASSERT_EQ(b.core_positions.size(), 9 * kc);
    for (size_t v = 0; v < 9 * kc; ++v) {
      ASSERT_EQ(std::memcmp(&b.core_positions[v], &full_b.core_positions[v], sizeof(Vec3)), 0)
          << "K " << k << " vertex " << v;
      ASSERT_EQ(b.core_colors[v], full_b.core_colors[v]) << "K " << k << " vertex " << v;
    }
    ASSERT_TRUE(std::equal(b.core_indices.begin(), b.core_indices.end(), full_b.core_indices.begin()));
    // The shell: the rows of rank < K, with their full-hull gaussians and sort depths.
    ASSERT_EQ(b.cloud.size(), ks);
    ASSERT_EQ(b.sort_depth.size(), ks);
    size_t w = 0;
    for (size_t r = 0; r < ns; ++r) {
      if (rank[nc + r] >= k) continue;
      ASSERT_EQ(std::memcmp(&b.cloud.positions[w], &full_b.cloud.positions[r], sizeof(Vec3)), 0);
      ASSERT_EQ(b.cloud.opacities[w], full_b.cloud.opacities[r]);
      ASSERT_EQ(b.cloud.sh[3 * w], full_b.cloud.sh[3 * r]);
      ASSERT_EQ(b.sort_depth[w], full_b.sort_depth[r]) << "K " << k << " shell row " << r;
      ++w;
    }
    // Sorted: the rows of rank < K of the full cloud, in order.
    objects.clear(), meshes.clear();
    hull::buildHullFrame(*asset, hull::HullMode::kSorted, place, cam, 0.3, hull::HullLight{}, s, objects,
                         meshes, hull::HullLod::fixed(k));
    ASSERT_EQ(s.cloud.size(), k);
    w = 0;
    for (size_t i = 0; i < n; ++i) {
      if (rank[i] >= k) continue;
      ASSERT_EQ(std::memcmp(&s.cloud.positions[w], &full_s.cloud.positions[i], sizeof(Vec3)), 0);
      ASSERT_EQ(std::memcmp(&s.cloud.scales[w], &full_s.cloud.scales[i], sizeof(Vec3)), 0);
      ASSERT_EQ(s.cloud.opacities[w], full_s.cloud.opacities[i]);
      for (int c = 0; c < 3; ++c) ASSERT_EQ(s.cloud.sh[3 * w + c], full_s.cloud.sh[3 * i + c]);
      ++w;
    }
  }
  // The oracle: a hull file of the first K splats only (core and shell rows in order, the orders filtered),
  // rendered sorted without LOD, against the full hull at K.
  const uint32_t k = static_cast<uint32_t>(n / 2);
  Spl2Hull sub;
  std::vector<int32_t> new_row(ns, -1);
  auto copyRow = [](const Spl2Block& from, size_t r, Spl2Block& to) {
    to.pos.push_back(from.pos[r]), to.ax0.push_back(from.ax0[r]), to.ax1.push_back(from.ax1[r]),
        to.normal.push_back(from.normal[r]);
    to.color.push_back(from.color[r]), to.opacity.push_back(from.opacity[r]),
        to.attrs.push_back(from.attrs[r]);
  };
  for (size_t r = 0; r < nc; ++r)
    if (rank[r] < k) copyRow(h.core, r, sub.core);
  for (size_t r = 0; r < ns; ++r)
    if (rank[nc + r] < k) new_row[r] = static_cast<int32_t>(sub.shell.size()), copyRow(h.shell, r, sub.shell);
  for (const std::vector<int32_t>& ord : h.orders) {
    sub.orders.emplace_back();
    for (int32_t r : ord)
      if (new_row[static_cast<size_t>(r)] >= 0) sub.orders.back().push_back(new_row[static_cast<size_t>(r)]);
  }
  const std::string dir = test::tempDir("HullFrame.LodOracle");
  saveSpl2(sub, dir + "/first_k.spl2");
  auto sub_asset = hull::HullAsset::load(dir + "/first_k.spl2");
  const ImageRGBA cut =
      renderScene(hullScene(asset, hull::HullMode::kSorted, hull::HullLod::fixed(k)), cam, nullptr);
  const ImageRGBA oracle = renderScene(hullScene(sub_asset, hull::HullMode::kSorted), cam, nullptr);
  EXPECT_EQ(cut.pixels, oracle.pixels) << "the cut at K against a hull of the first K splats";
  const ImageRGBA all = renderScene(hullScene(asset, hull::HullMode::kSorted), cam, nullptr);
  EXPECT_GT(compareImages(cut, all).max_abs, 0.05) << "the cut should show";
  // K = N (and beyond) is the full hull, bit for bit, in both modes.
  for (hull::HullMode mode : {hull::HullMode::kBaked, hull::HullMode::kSorted}) {
    const ImageRGBA off = renderScene(hullScene(asset, mode), cam, nullptr);
    for (uint32_t kk : {static_cast<uint32_t>(n), static_cast<uint32_t>(n + 5)})
      EXPECT_EQ(renderScene(hullScene(asset, mode, hull::HullLod::fixed(kk)), cam, nullptr).pixels,
                off.pixels)
          << hull::hullModeName(mode) << " K " << kk;
  }
}

// The cut on both backends: the Vulkan frame against the CPU renderer per pixel at K (sorted: to float
// rounding; baked: the bounds this fixture's full hull itself meets, the last K), and K = N equal to no LOD
// on the GPU too.
TEST(HullFrame, LodVulkanMatchesCpu) {
  VulkanRenderer* gpu = gpuRenderer();
  if (!gpu) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  const uint32_t validation_before = gpu->context().validationErrors();
  auto asset = lodAsset("HullFrame.LodVulkan", 1500);
  const uint32_t n = static_cast<uint32_t>(asset->hull.size());
  for (float az : {10.0f, 200.0f})
    for (hull::HullMode mode : {hull::HullMode::kBaked, hull::HullMode::kSorted})
      for (uint32_t k : {n / 5, n * 3 / 5, n}) {
        const Camera cam = beltCamera(128, 112, az);
        // The core aliased (1 sample), as the limits below were set; anti-aliased further down.
        const Scene s = hullScene(asset, mode, hull::HullLod::fixed(k), 1);
        const ImageRGBA g = renderScene(s, cam, gpu), c = renderScene(s, cam, nullptr);
        const double psnr = compareImages(g, c).psnr;
        const size_t differ = static_cast<size_t>(compareImages(g, c).fraction_over * 128 * 112 + 0.5);
        std::fprintf(stderr, "LOD %u of %u, %s, azimuth %g: Vulkan vs CPU %.2f dB, %zu pixels over 2/255\n",
                     k, n, hull::hullModeName(mode), az, psnr, differ);
        if (mode == hull::HullMode::kSorted) {
          EXPECT_GT(psnr, 100.0) << "sorted at azimuth " << az << " K " << k;
        } else {
          const Scene aa = hullScene(asset, mode, hull::HullLod::fixed(k));  // the core's 8 samples
          const ImageRGBA ga = renderScene(aa, cam, gpu), ca = renderScene(aa, cam, nullptr);
          const ImageDiff da = compareImages(ga, ca);
          std::fprintf(stderr, "  anti-aliased: %.2f dB, %.0f pixels over 2/255\n", da.psnr,
                       da.fraction_over * 128 * 112);
          EXPECT_GT(da.psnr, 50.0) << "baked, anti-aliased, at azimuth " << az << " K " << k;
          EXPECT_LT(da.fraction_over, 1.0 / 200) << "baked, anti-aliased, at azimuth " << az << " K " << k;
          // Overlapping octagons of nearly equal rank (lifted 0.004 / n_core apart) resolve by the backends'
          // depth rounding in a few pixels: this fixture's full hull (K = N) gives 44.8 and 47.0 dB, 6 and 7
          // pixels.
          EXPECT_GT(psnr, 40.0) << "baked at azimuth " << az << " K " << k;
          EXPECT_LT(differ, 128u * 112u / 500u) << "baked at azimuth " << az << " K " << k;
        }
      }
  const Camera cam = beltCamera(96, 96, 120.0f);
  for (hull::HullMode mode : {hull::HullMode::kBaked, hull::HullMode::kSorted})
    EXPECT_EQ(renderScene(hullScene(asset, mode, hull::HullLod::fixed(n)), cam, gpu).pixels,
              renderScene(hullScene(asset, mode), cam, gpu).pixels)
        << hull::hullModeName(mode);
  EXPECT_EQ(gpu->context().validationErrors(), validation_before)
      << gpu->context().validationReport(validation_before);
}

// Scene JSON: "lod" on a hull object is its runtime LOD (K, "auto", "off"); bad values are refused with the
// JSON path; "lod" beside another kind of object is still one kind too many.
TEST(HullScene, LodFromJsonWithJsonPathErrors) {
  const std::string dir = test::tempDir("HullScene.Lod");
  saveSpl2(lodHull(400, 2), dir + "/h.spl2");
  const Scene s =
      parseSceneJson(R"({"objects": [{"hull": "h.spl2", "lod": 120}, {"hull": "h.spl2", "lod": "auto"},
    {"hull": "h.spl2", "lod": "off", "mode": "sorted"}, {"hull": "h.spl2"}, {"hull": "h.spl2", "lod": 50, "seed": 3}]})",
                     dir + "/scene.json", {});
  ASSERT_EQ(s.objects.size(), 5u);
  EXPECT_EQ(s.objects[0].as<HullObject>()->lod, hull::HullLod::fixed(120));
  EXPECT_EQ(s.objects[1].as<HullObject>()->lod, hull::HullLod::automatic());
  EXPECT_EQ(s.objects[2].as<HullObject>()->lod, hull::HullLod::off());
  EXPECT_EQ(s.objects[3].as<HullObject>()->lod, hull::HullLod::off());
  for (size_t i = 0; i < 5; ++i) ASSERT_TRUE(s.objects[i].as<HullObject>());
  ASSERT_TRUE(s.objects[4].as<HullObject>()->live);
  const Camera cam = beltCamera(64, 64, 30.0f);
  SceneFrame frame;
  poseScene(s, 0.0, frame, false, &cam);
  ASSERT_EQ(frame.states.size(), 5u);
  EXPECT_EQ(frame.state<HullPosed>(0)->frame.lod_count, 120u);
  EXPECT_EQ(frame.state<HullPosed>(1)->frame.lod_count,
            hull::hullLodAutoCount(400, s.objects[1].as<HullObject>()->asset->lod_radius, Mat4{}, cam));
  EXPECT_EQ(frame.state<HullPosed>(2)->frame.lod_count, 400u);
  EXPECT_EQ(frame.state<HullPosed>(3)->frame.lod_count, 400u);
  EXPECT_EQ(frame.state<HullPosed>(4)->frame.lod_count, 50u);  // a live hull too
  for (const char* bad : {"0", "-2", "1.5", "\"fast\"", "true", "[3]", "null", "1e12"}) {
    const std::string text = std::string(R"({"objects": [{"hull": "h.spl2", "lod": )") + bad + "}]}";
    const std::string e = test::errorOf([&] { parseSceneJson(text, dir + "/s.json", {}); });
    EXPECT_NE(e.find("s.json: objects[0].lod: expected a whole number of splats K >= 1, \"auto\""),
              std::string::npos)
        << bad << ": " << e;
  }
  EXPECT_NE(test::errorOf([&] {
              parseSceneJson(R"({"objects": [{"file": "h.spl2", "lod": 5}]})", dir + "/s.json", {});
            }).find("exactly one of"),
            std::string::npos);
}

TEST(HullCli, BakeInfoRenderConvert) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  const std::string dir = test::tempDir("HullCli.Bake");
  std::string out;
  ASSERT_EQ(test::runCli("hull bake " + path + " --budget 3000 --ao-rays 8 -o " + dir + "/man.spl2", &out), 0)
      << out;
  EXPECT_NE(out.find("winding:"), std::string::npos) << out;
  EXPECT_NE(out.find("floaters:"), std::string::npos) << out;
  EXPECT_TRUE(std::ifstream(dir + "/man.meta.json").good());
  ASSERT_EQ(test::runCli("hull info " + dir + "/man.spl2", &out), 0) << out;
  EXPECT_NE(out.find("CHNK:"), std::string::npos) << out;
  for (const char* mode : {"baked", "sorted"}) {
    ASSERT_EQ(test::runCli("render " + dir + "/man.spl2 --backend cpu --width 96 --height 96 --hull-mode " +
                               std::string(mode) + " -o " + dir + "/" + mode + ".png",
                           &out),
              0)
        << out;
  }
  ASSERT_EQ(test::runCli("render " + dir + "/man.spl2 --backend cpu --width 64 --height 64 --light off -o " +
                             dir + "/unlit.png",
                         &out),
            0)
      << out;
  ASSERT_EQ(test::runCli("convert " + dir + "/man.spl2 " + dir + "/man.ply", &out), 0) << out;
  ASSERT_EQ(test::runCli("convert " + dir + "/man.ply " + dir + "/back.spl2", &out), 0) << out;
  const Spl2Hull a = loadSpl2(dir + "/man.spl2"), b = loadSpl2(dir + "/back.spl2");
  EXPECT_EQ(a.core.size(), b.core.size());
  EXPECT_EQ(a.shell.size(), b.shell.size());
  EXPECT_EQ(a.chunk_of, b.chunk_of);
  EXPECT_EQ(a.material_of, b.material_of);
  for (size_t i = 0; i < a.core.size(); ++i) EXPECT_NEAR(length(a.core.pos[i] - b.core.pos[i]), 0.0f, 1e-6f);
  // Errors: one line naming the problem.
  EXPECT_EQ(test::runCli("hull bake " + path + " -o " + dir + "/x.ply", &out), 2);  // usage errors exit 2
  EXPECT_NE(out.find(".spl2"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("hull bake " + path + " --belt 50,30 -o " + dir + "/x.spl2", &out), 2);
  EXPECT_NE(out.find("--belt"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("hull info " + dir + "/man.ply", &out), 1);
  EXPECT_NE(out.find("man.ply"), std::string::npos) << out;
}

}  // namespace
}  // namespace sf
