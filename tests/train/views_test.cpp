// Dataset views and NeRF-synthetic folders against independent oracles: closed-form camera poses and
// matrices, the folder's keys, write -> read round trips, a constant-colour model rendered flat, a sphere's
// silhouette against its projected area, occlusion in a crease, base colour never taken from a
// metallic-roughness or occlusion map, reader errors naming file and JSON path, and the CLI.
#include "train/views.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <set>

#include "io/file.h"
#include "io/image_io.h"
#include "io/json.h"
#include "render/mesh.h"
#include "support/test_support.h"
#include "train/dataset.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kPi = std::numbers::pi;

// ---- tiny glTF files written by hand ------------------------------------------------------------------

struct Prim {
  std::vector<Vec3> positions;
  std::vector<std::array<float, 2>> uvs;  // optional
  std::vector<uint32_t> indices;
  int material = -1;
};

// One node per primitive; `extra` is merged into the document (materials, textures, images, samplers).
void writeGltf(const std::string& path, const std::vector<Prim>& prims, const json& extra = json::object()) {
  std::vector<uint8_t> bin;
  json views = json::array(), accessors = json::array(), meshes = json::array(), nodes = json::array(),
       roots = json::array();
  auto add = [&](const void* data, size_t bytes, int component, size_t count, const char* type) {
    const size_t at = bin.size();
    bin.resize(at + bytes);
    std::memcpy(bin.data() + at, data, bytes);
    while (bin.size() % 4) bin.push_back(0);
    views.push_back({{"buffer", 0}, {"byteOffset", at}, {"byteLength", bytes}});
    accessors.push_back(
        {{"bufferView", views.size() - 1}, {"componentType", component}, {"count", count}, {"type", type}});
    return accessors.size() - 1;
  };
  for (size_t p = 0; p < prims.size(); ++p) {
    const Prim& pr = prims[p];
    Vec3 lo{1e9f, 1e9f, 1e9f}, hi{-1e9f, -1e9f, -1e9f};
    for (const Vec3& v : pr.positions) {
      lo = Vec3{std::min(lo.x, v.x), std::min(lo.y, v.y), std::min(lo.z, v.z)};
      hi = Vec3{std::max(hi.x, v.x), std::max(hi.y, v.y), std::max(hi.z, v.z)};
    }
    const size_t pos = add(pr.positions.data(), pr.positions.size() * 12, 5126, pr.positions.size(), "VEC3");
    accessors[pos]["min"] = {lo.x, lo.y, lo.z};
    accessors[pos]["max"] = {hi.x, hi.y, hi.z};
    json attributes = {{"POSITION", pos}};
    if (!pr.uvs.empty())
      attributes["TEXCOORD_0"] = add(pr.uvs.data(), pr.uvs.size() * 8, 5126, pr.uvs.size(), "VEC2");
    const size_t idx = add(pr.indices.data(), pr.indices.size() * 4, 5125, pr.indices.size(), "SCALAR");
    json prim = {{"attributes", attributes}, {"indices", idx}};
    if (pr.material >= 0) prim["material"] = pr.material;
    meshes.push_back({{"primitives", json::array({prim})}});
    nodes.push_back({{"name", "part" + std::to_string(p)}, {"mesh", p}});
    roots.push_back(p);
  }
  json doc = {{"asset", {{"version", "2.0"}}},
              {"scene", 0},
              {"scenes", json::array({{{"nodes", roots}}})},
              {"nodes", nodes},
              {"meshes", meshes},
              {"accessors", accessors},
              {"bufferViews", views},
              {"buffers",
               json::array({{{"byteLength", bin.size()},
                             {"uri", "data:application/octet-stream;base64," + test::encodeBase64(bin)}}})}};
  for (auto it = extra.begin(); it != extra.end(); ++it) doc[it.key()] = it.value();
  std::ofstream(path) << doc.dump();
}

// A UV sphere of radius r (segments a multiple of 4, so that its box is exactly [-r, r]^3), outward winding.
Prim spherePrim(float r, int seg) {
  Prim p;
  const int rings = seg / 2;
  for (int i = 0; i <= rings; ++i)
    for (int j = 0; j <= seg; ++j) {
      const double th = kPi * i / rings, ph = 2 * kPi * j / seg;
      p.positions.push_back(Vec3{static_cast<float>(r * std::sin(th) * std::cos(ph)),
                                 static_cast<float>(r * std::cos(th)),
                                 static_cast<float>(r * std::sin(th) * std::sin(ph))});
      p.uvs.push_back({static_cast<float>(j) / static_cast<float>(seg),
                       static_cast<float>(i) / static_cast<float>(rings)});
    }
  for (int i = 0; i < rings; ++i)
    for (int j = 0; j < seg; ++j) {
      const uint32_t a = static_cast<uint32_t>(i * (seg + 1) + j), b = a + 1,
                     c = a + static_cast<uint32_t>(seg + 1), d = c + 1;
      p.indices.insert(p.indices.end(), {a, b, c, b, d, c});
    }
  return p;
}

// An axis-aligned box [lo, hi] with every face split into n x n quads (vertices split per face), outward
// winding.
Prim boxPrim(Vec3 lo, Vec3 hi, int n) {
  Prim p;
  for (int axis = 0; axis < 3; ++axis)
    for (int side = 0; side < 2; ++side) {
      const int u_axis = (axis + 1) % 3, v_axis = (axis + 2) % 3;
      const uint32_t base = static_cast<uint32_t>(p.positions.size());
      for (int i = 0; i <= n; ++i)
        for (int j = 0; j <= n; ++j) {
          Vec3 q;
          q[axis] = side ? hi[axis] : lo[axis];
          q[u_axis] = lo[u_axis] + (hi[u_axis] - lo[u_axis]) * static_cast<float>(i) / static_cast<float>(n);
          q[v_axis] = lo[v_axis] + (hi[v_axis] - lo[v_axis]) * static_cast<float>(j) / static_cast<float>(n);
          p.positions.push_back(q);
          p.uvs.push_back(
              {static_cast<float>(i) / static_cast<float>(n), static_cast<float>(j) / static_cast<float>(n)});
        }
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          const uint32_t a = base + static_cast<uint32_t>(i * (n + 1) + j),
                         b = a + static_cast<uint32_t>(n + 1), c = a + 1, d = b + 1;
          // (u, v, axis) is right-handed, so u x v points along +axis: counter-clockwise seen from outside on
          // the + side.
          if (side)
            p.indices.insert(p.indices.end(), {a, b, d, a, d, c});
          else
            p.indices.insert(p.indices.end(), {a, d, b, a, c, d});
        }
    }
  return p;
}

std::string pngDataUri(uint8_t r, uint8_t g, uint8_t b) {
  RgbaImage8 img;
  img.width = img.height = 4;
  for (int i = 0; i < 16; ++i) img.rgba.insert(img.rgba.end(), {r, g, b, 255});
  return "data:image/png;base64," + test::encodeBase64(encodePng8(img));
}

json constantMaterial(float r, float g, float b) {
  return {{"materials", json::array({{{"pbrMetallicRoughness", {{"baseColorFactor", {r, g, b, 1.0}}}}}})}};
}

// Pixel (x, y) of a view.
const float* px(const train::View& v, int x, int y) {
  return &v.rgba[(static_cast<size_t>(y) * static_cast<size_t>(v.camera.width) + static_cast<size_t>(x)) * 4];
}

// Where a dataset-frame point lands in a view (pixel indices).
std::pair<int, int> project(const Camera& c, Vec3 p) {
  const Vec3 q = transformPoint(c.world_to_camera, p);
  return {static_cast<int>(std::floor(c.fx * q.x / q.z + c.cx)),
          static_cast<int>(std::floor(c.fy * q.y / q.z + c.cy))};
}

train::ViewsOptions smallOptions(int size, train::Lighting lighting) {
  train::ViewsOptions o;
  o.train_count = 4, o.val_count = 1, o.test_count = 2, o.size = size, o.lighting = lighting;
  return o;
}

// ---- camera poses ------------------------------------------------------------------------------------

TEST(Views, TrainPosesAreTheGoldenSpiralInTheBelt) {
  train::ViewsOptions o;
  o.train_count = 200;
  const train::SplitCameras cams = train::datasetCameras(o);
  ASSERT_EQ(cams.train.size(), 200u);
  const double s0 = std::sin(14 * kPi / 180), s1 = std::sin(50 * kPi / 180),
               golden = kPi * (3 - std::sqrt(5.0));
  for (size_t i = 0; i < cams.train.size(); ++i) {
    const Camera& c = cams.train[i];
    const Vec3 p = c.position();
    EXPECT_NEAR(length(p), 3.2f, 1e-5f) << i;
    // Elevation uniform in sin over the belt, at the middle of each of n equal steps.
    const double sin_el = p.y / 3.2;
    EXPECT_NEAR(sin_el, s0 + (s1 - s0) * (static_cast<double>(i) + 0.5) / 200.0, 1e-5) << i;
    EXPECT_GE(std::asin(sin_el), 14 * kPi / 180);
    EXPECT_LE(std::asin(sin_el), 50 * kPi / 180);
    // Azimuth from +z towards +x: i golden angles.
    const double az = std::atan2(p.x, p.z),
                 expected = std::remainder(static_cast<double>(i) * golden, 2 * kPi);
    EXPECT_NEAR(std::remainder(az - expected, 2 * kPi), 0.0, 1e-5) << i;
    // Looking at the origin (camera +z, the third row of world_to_camera, along -p), +y up on screen (the
    // camera's y axis points down, so its world direction has y < 0, and its x axis is horizontal).
    const Vec3 forward = c.world_to_camera.linear().row(2), down = c.world_to_camera.linear().row(1),
               right = c.world_to_camera.linear().row(0);
    EXPECT_NEAR(dot(forward, -p / length(p)), 1.0f, 1e-5f) << i;
    EXPECT_LT(down.y, 0.0f);
    EXPECT_NEAR(right.y, 0.0f, 1e-6f);
    EXPECT_EQ(c.width, 400);
    EXPECT_EQ(c.height, 400);
    EXPECT_NEAR(c.fx, 200.0 / std::tan(0.6911112070083618 / 2), 1e-3);
    EXPECT_EQ(c.fx, c.fy);
    EXPECT_EQ(c.cx, 200.0f);
    EXPECT_EQ(c.cy, 200.0f);
  }
}

TEST(Views, ValAndTestViewsAreRingsAtFixedElevations) {
  const train::ViewsOptions o;  // 8 val at 30 degrees; 16 test, 8 at 20 and 8 at 40
  const train::SplitCameras cams = train::datasetCameras(o);
  ASSERT_EQ(cams.val.size(), 8u);
  ASSERT_EQ(cams.test.size(), 16u);
  std::set<std::pair<long, long>> seen;  // (elevation, azimuth) in 0.01 degrees
  auto check = [&](const std::vector<Camera>& split, size_t first, size_t count, double el_deg,
                   double phase) {
    for (size_t j = 0; j < count; ++j) {
      const Vec3 p = split[first + j].position();
      EXPECT_NEAR(length(p), 3.2f, 1e-5f);
      EXPECT_NEAR(std::asin(p.y / length(p)) * 180 / kPi, el_deg, 1e-4);
      const double az = std::atan2(p.x, p.z),
                   expected = 2 * kPi * (static_cast<double>(j) + phase) / static_cast<double>(count);
      EXPECT_NEAR(std::remainder(az - expected, 2 * kPi), 0.0, 1e-5) << j;
      seen.insert({std::lround(el_deg * 100), std::lround(std::remainder(az, 2 * kPi) * 18000 / kPi)});
    }
  };
  check(cams.val, 0, 8, 30, 0.5);
  check(cams.test, 0, 8, 20, 0.25);
  check(cams.test, 8, 8, 40, 0.75);
  EXPECT_EQ(seen.size(), 24u);
}

TEST(Views, OptionsAreValidated) {
  train::ViewsOptions o;
  EXPECT_EQ(o.validate(), "");
  o.belt_min = 60, o.belt_max = 50;
  EXPECT_NE(o.validate().find("belt"), std::string::npos);
  o = {};
  o.size = 0;
  EXPECT_NE(o.validate().find("size"), std::string::npos);
  o = {};
  o.supersample = 9;
  EXPECT_NE(o.validate().find("supersampl"), std::string::npos);
  o = {};
  o.test_elevations = {90};
  EXPECT_NE(o.validate().find("test elevations"), std::string::npos);
  o = {};
  o.train_count = 0;
  EXPECT_NE(o.validate().find("train"), std::string::npos);
  EXPECT_NE(test::errorOf([&] { train::renderViews("/nonexistent/m.glb", o); }).find("train"),
            std::string::npos);
  EXPECT_EQ(train::parseLighting("cel"), train::Lighting::kCel);
  EXPECT_NE(test::errorOf([] { train::parseLighting("pbr"); }).find("flat, ao or cel"), std::string::npos);
}

// ---- NeRF-synthetic folders -------------------------------------------------------------------------

// A dataset of the orbit cameras with deterministic premultiplied images (colour <= alpha).
train::Dataset syntheticDataset(int size) {
  train::ViewsOptions o = smallOptions(size, train::Lighting::kFlat);
  const train::SplitCameras cams = train::datasetCameras(o);
  train::Dataset d;
  d.scale = 0.37f, d.offset = {0.1f, -0.25f, 0.5f};
  uint32_t state = 12345;
  auto rnd = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f;
  };
  auto fill = [&](const std::vector<Camera>& c, std::vector<train::View>& split) {
    for (const Camera& cam : c) {
      train::View v;
      v.camera = cam;
      v.rgba.resize(static_cast<size_t>(size) * static_cast<size_t>(size) * 4);
      for (size_t p = 0; p < v.rgba.size(); p += 4) {
        const float a = p % 12 == 0 ? 0.0f : p % 12 == 4 ? 1.0f : rnd();
        for (size_t k = 0; k < 3; ++k) v.rgba[p + k] = a * rnd();
        v.rgba[p + 3] = a;
      }
      split.push_back(v);
    }
  };
  fill(cams.train, d.train);
  fill(cams.val, d.val);
  fill(cams.test, d.test);
  return d;
}

json readJson(const std::string& path) {
  const std::vector<uint8_t> bytes = readFile(path);
  return json::parse(bytes.begin(), bytes.end());
}

TEST(NerfSynthetic, WrittenFolderHasTheKeysAndClosedFormMatrices) {
  const std::string dir = test::tempDir("nerf_keys");
  const train::Dataset d = syntheticDataset(8);
  train::writeNerfSynthetic(d, dir);
  const train::ViewsOptions o = smallOptions(8, train::Lighting::kFlat);
  const std::vector<train::OrbitAngles> angles = train::trainAngles(o.train_count, o.belt_min, o.belt_max);
  for (const char* split : {"train", "val", "test"}) {
    const json j = readJson(dir + "/transforms_" + std::string(split) + ".json");
    ASSERT_TRUE(j.contains("camera_angle_x")) << split;
    EXPECT_EQ(j["camera_angle_x"].get<double>(), 0.6911112070083618);  // Blender's value, as a float32
    ASSERT_TRUE(j["frames"].is_array());
    const size_t n = std::string(split) == "train" ? 4 : std::string(split) == "val" ? 1 : 2;
    ASSERT_EQ(j["frames"].size(), n);
    for (size_t i = 0; i < n; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "./%s/r_%03zu", split, i);
      EXPECT_EQ(j["frames"][i]["file_path"], name);
      EXPECT_TRUE(fs::is_regular_file(dir + "/" + std::string(name + 2) + ".png"));
    }
  }
  // The train matrices against the closed form: OpenGL camera-to-world (x right, y up, z back), at the orbit.
  const json j = readJson(dir + "/transforms_train.json");
  for (size_t i = 0; i < angles.size(); ++i) {
    const double az = angles[i].azimuth, el = angles[i].elevation;
    const double back[3] = {std::sin(az) * std::cos(el), std::sin(el), std::cos(az) * std::cos(el)};
    const double right[3] = {std::cos(az), 0, -std::sin(az)};  // normalize(cross(+y, back))
    const double up[3] = {back[1] * right[2] - back[2] * right[1], back[2] * right[0] - back[0] * right[2],
                          back[0] * right[1] - back[1] * right[0]};
    const json& m = j["frames"][i]["transform_matrix"];
    ASSERT_EQ(m.size(), 4u);
    for (int r = 0; r < 3; ++r) {
      EXPECT_NEAR(m[r][0].get<double>(), right[r], 1e-5) << i;
      EXPECT_NEAR(m[r][1].get<double>(), up[r], 1e-5) << i;
      EXPECT_NEAR(m[r][2].get<double>(), back[r], 1e-5) << i;
      EXPECT_NEAR(m[r][3].get<double>(), 3.2 * back[r], 1e-5) << i;
    }
    for (int c = 0; c < 4; ++c) EXPECT_EQ(m[3][c].get<double>(), c == 3 ? 1.0 : 0.0);
  }
  ASSERT_TRUE(j.contains("splatforge"));
  EXPECT_FLOAT_EQ(j["splatforge"]["scale"].get<float>(), 0.37f);
  EXPECT_FLOAT_EQ(j["splatforge"]["offset"][1].get<float>(), -0.25f);
  // RGBA PNGs.
  const RgbaImage8 img = decodeImage8(readFile(dir + "/train/r_000.png"), "r_000.png");
  EXPECT_EQ(img.width, 8);
  EXPECT_EQ(img.rgba[3], 0);  // pixel 0 has alpha 0
  EXPECT_EQ(img.rgba[7], 255);
}

TEST(NerfSynthetic, WriteReadRoundTrip) {
  const std::string dir = test::tempDir("nerf_round_trip");
  const train::Dataset d = syntheticDataset(16);
  train::writeNerfSynthetic(d, dir);
  const train::Dataset r = train::readNerfSynthetic(dir);
  EXPECT_EQ(r.scale, d.scale);
  EXPECT_EQ(r.offset.x, d.offset.x);
  EXPECT_EQ(r.offset.y, d.offset.y);
  EXPECT_EQ(r.offset.z, d.offset.z);
  for (int s = 0; s < 3; ++s) {
    const auto& a = s == 0 ? d.train : s == 1 ? d.val : d.test;
    const auto& b = s == 0 ? r.train : s == 1 ? r.val : r.test;
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const Camera &ca = a[i].camera, &cb = b[i].camera;
      EXPECT_EQ(ca.width, cb.width);
      EXPECT_EQ(ca.height, cb.height);
      EXPECT_NEAR(ca.fx, cb.fx, 1e-4f);
      EXPECT_NEAR(ca.fy, cb.fy, 1e-4f);
      EXPECT_EQ(ca.cx, cb.cx);
      EXPECT_EQ(ca.cy, cb.cy);
      for (int row = 0; row < 4; ++row)
        for (int col = 0; col < 4; ++col)
          EXPECT_NEAR(ca.world_to_camera.m[row][col], cb.world_to_camera.m[row][col], 2e-6f);
      ASSERT_EQ(a[i].rgba.size(), b[i].rgba.size());
      float worst = 0;
      for (size_t k = 0; k < a[i].rgba.size(); ++k)
        worst = std::max(worst, std::abs(a[i].rgba[k] - b[i].rgba[k]));
      EXPECT_LE(worst, 1.0f / 255.0f + 1e-6f) << b[i].name;
      // Colour stays premultiplied: never above alpha.
      for (size_t k = 0; k < b[i].rgba.size(); k += 4)
        for (size_t c = 0; c < 3; ++c) ASSERT_LE(b[i].rgba[k + c], b[i].rgba[k + 3] + 1e-6f);
    }
  }
  EXPECT_EQ(r.train[2].name, "train/r_002");
  // Half the size: the cameras' intrinsics halve, each pixel is the mean of its 2 x 2 block.
  const train::Dataset h = train::readNerfSynthetic(dir, 8);
  ASSERT_EQ(h.train[0].camera.width, 8);
  EXPECT_NEAR(h.train[0].camera.fx, 0.5f * r.train[0].camera.fx, 1e-4f);
  EXPECT_EQ(h.train[0].camera.cx, 4.0f);
  for (int c = 0; c < 4; ++c) {
    const float mean = 0.25f * (px(r.train[0], 2, 4)[c] + px(r.train[0], 3, 4)[c] + px(r.train[0], 2, 5)[c] +
                                px(r.train[0], 3, 5)[c]);
    EXPECT_NEAR(px(h.train[0], 1, 2)[c], mean, 1e-6f);
  }
}

// A folder as Blender's NeRF-synthetic scripts write it: straight-alpha RGBA, "file_path" without an
// extension (and one with), camera_angle_x only, non-square images, no val split.
TEST(NerfSynthetic, ReadsOtherToolsFolders) {
  const std::string dir = test::tempDir("nerf_blender");
  fs::create_directories(dir + "/train");
  RgbaImage8 img;
  img.width = 6, img.height = 4;
  for (int i = 0; i < 24; ++i) img.rgba.insert(img.rgba.end(), {200, 100, 50, static_cast<uint8_t>(i * 10)});
  const std::vector<uint8_t> png = encodePng8(img);
  writeFileAtomic(dir + "/train/r_0.png", png);
  writeFileAtomic(dir + "/train/r_1.png", png);
  const double angle = 0.6911112070083618;
  const json mat = {{-0.9999, 0.0042, -0.0133, -0.0538},
                    {-0.0140, -0.3, 0.9539, 3.8455},
                    {0, 0.9539, 0.3, 1.2095},
                    {0, 0, 0, 1}};
  // (rows of a Blender matrix, rounded: re-orthonormalised below so the test's matrix is rigid)
  json rigid = mat;
  {
    Vec3 x{mat[0][0].get<float>(), mat[1][0].get<float>(), mat[2][0].get<float>()},
        y{mat[0][1].get<float>(), mat[1][1].get<float>(), mat[2][1].get<float>()};
    x = normalize(x);
    y = normalize(y - x * dot(x, y));
    const Vec3 z = cross(x, y);
    for (int r = 0; r < 3; ++r) rigid[r] = {x[r], y[r], z[r], mat[r][3]};
  }
  const json t = {
      {"camera_angle_x", angle},
      {"frames",
       json::array({{{"file_path", "./train/r_0"}, {"rotation", 0.012566}, {"transform_matrix", rigid}},
                    {{"file_path", "./train/r_1.png"}, {"transform_matrix", rigid}}})}};
  std::ofstream(dir + "/transforms_train.json") << t.dump();
  std::ofstream(dir + "/transforms_test.json") << t.dump();
  const train::Dataset d = train::readNerfSynthetic(dir);
  ASSERT_EQ(d.train.size(), 2u);
  EXPECT_TRUE(d.val.empty());
  EXPECT_EQ(d.test.size(), 2u);
  EXPECT_EQ(d.scale, 1.0f);
  EXPECT_EQ(d.offset.x, 0.0f);
  const Camera& c = d.train[0].camera;
  EXPECT_EQ(c.width, 6);
  EXPECT_EQ(c.height, 4);
  EXPECT_NEAR(c.fx, 3.0 / std::tan(angle / 2), 1e-4);
  EXPECT_EQ(c.fy, c.fx);
  EXPECT_EQ(c.cx, 3.0f);
  EXPECT_EQ(c.cy, 2.0f);
  EXPECT_EQ(c.validate(), nullptr);
  // OpenGL -> OpenCV: the camera's position is the matrix's translation and it looks along -z_gl.
  const Vec3 pos = c.position();
  EXPECT_NEAR(pos.x, -0.0538f, 1e-5f);
  EXPECT_NEAR(pos.y, 3.8455f, 1e-5f);
  EXPECT_NEAR(c.world_to_camera.m[2][1], -rigid[1][2].get<float>(), 1e-6f);
  EXPECT_EQ(d.train[0].name, "train/r_0");
  EXPECT_EQ(d.train[1].name, "train/r_1");
  // Premultiplied on reading.
  for (int i = 0; i < 24; ++i) {
    const float a = static_cast<float>(i * 10) / 255.0f;
    EXPECT_NEAR(d.train[0].rgba[static_cast<size_t>(i) * 4 + 0], 200.0f / 255.0f * a, 1e-6f);
    EXPECT_NEAR(d.train[0].rgba[static_cast<size_t>(i) * 4 + 3], a, 1e-6f);
  }
}

TEST(NerfSynthetic, ReaderErrorsNameFileAndJsonPath) {
  const std::string dir = test::tempDir("nerf_errors");
  EXPECT_NE(test::errorOf([&] { train::readNerfSynthetic(dir + "/missing"); }).find("not a dataset folder"),
            std::string::npos);
  EXPECT_NE(test::errorOf([&] { train::readNerfSynthetic(dir); }).find("transforms_train.json"),
            std::string::npos);
  fs::create_directories(dir + "/train");
  RgbaImage8 img;
  img.width = 4, img.height = 4;
  img.rgba.assign(64, 128);
  writeFileAtomic(dir + "/train/a.png", encodePng8(img));
  img.width = 2, img.height = 8;
  writeFileAtomic(dir + "/train/b.png", encodePng8(img));
  const json id = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 4}, {0, 0, 0, 1}};
  struct Case {
    std::string text, expect;
  };
  const json good_frame = {{"file_path", "./train/a"}, {"transform_matrix", id}};
  const std::vector<Case> cases = {
      {"{\"frames\": [", "byte"},
      {"[]", "expected an object"},
      {json{{"frames", json::array({good_frame})}}.dump(), "(root): missing key \"camera_angle_x\""},
      {json{{"camera_angle_x", "wide"}, {"frames", json::array({good_frame})}}.dump(),
       "camera_angle_x: expected a number"},
      {json{{"camera_angle_x", 4.0}, {"frames", json::array({good_frame})}}.dump(),
       "camera_angle_x: expected a horizontal field of view"},
      {json{{"camera_angle_x", 0.7}}.dump(), "missing key \"frames\""},
      {json{{"camera_angle_x", 0.7}, {"frames", 3}}.dump(), "frames: expected an array"},
      {json{{"camera_angle_x", 0.7}, {"frames", json::array()}}.dump(),
       "frames: expected at least one frame"},
      {json{{"camera_angle_x", 0.7}, {"frames", json::array({good_frame, 5})}}.dump(),
       "frames[1]: expected an object"},
      {json{{"camera_angle_x", 0.7}, {"frames", json::array({{{"file_path", "./train/a"}}})}}.dump(),
       "frames[0]: missing key \"transform_matrix\""},
      {json{{"camera_angle_x", 0.7},
            {"frames", json::array({{{"file_path", "./train/a"}, {"transform_matrix", {{1, 0, 0}}}}})}}
           .dump(),
       "frames[0].transform_matrix: expected a 4x4 matrix"},
      {json{{"camera_angle_x", 0.7},
            {"frames",
             json::array({{{"file_path", "./train/a"},
                           {"transform_matrix", {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0}}}}})}}
           .dump(),
       "frames[0].transform_matrix[3]: expected 4 numbers, got 2"},
      {json{{"camera_angle_x", 0.7},
            {"frames",
             json::array({{{"file_path", "./train/a"},
                           {"transform_matrix", {{2, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}}}}})}}
           .dump(),
       "frames[0].transform_matrix: expected a rigid camera-to-world matrix"},
      {json{{"camera_angle_x", 0.7}, {"frames", json::array({{{"file_path", 7}, {"transform_matrix", id}}})}}
           .dump(),
       "frames[0].file_path: expected a string"},
      {json{{"camera_angle_x", 0.7},
            {"frames", json::array({{{"file_path", "/etc/passwd"}, {"transform_matrix", id}}})}}
           .dump(),
       "frames[0].file_path: expected a relative image path"},
      {json{{"camera_angle_x", 0.7},
            {"frames", json::array({{{"file_path", "./train/../../x"}, {"transform_matrix", id}}})}}
           .dump(),
       "frames[0].file_path: expected an image path inside the dataset folder"},
      {json{{"camera_angle_x", 0.7},
            {"frames", json::array({{{"file_path", "./train/missing"}, {"transform_matrix", id}}})}}
           .dump(),
       "frames[0].file_path: " + dir + "/train/missing.png"},
      {json{{"camera_angle_x", 0.7},
            {"frames", json::array({good_frame, {{"file_path", "./train/b.png"}, {"transform_matrix", id}}})}}
           .dump(),
       "frames[1].file_path: the image " + dir + "/train/b.png is 2 x 8, expected 4 x 4"},
      {json{{"camera_angle_x", 0.7},
            {"frames", json::array({good_frame})},
            {"splatforge", {{"scale", -1}, {"offset", {0, 0, 0}}}}}
           .dump(),
       "splatforge.scale: expected a positive number"},
      {json{{"camera_angle_x", 0.7},
            {"frames", json::array({good_frame})},
            {"splatforge", {{"scale", 1}, {"offset", {0, 0}}}}}
           .dump(),
       "splatforge.offset: expected 3 numbers, got 2"},
  };
  const std::string file = dir + "/transforms_train.json";
  for (const Case& c : cases) {
    std::ofstream(file) << c.text;
    const std::string msg = test::errorOf([&] { train::readNerfSynthetic(dir); });
    EXPECT_NE(msg.find(file), std::string::npos) << c.text << "\n" << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.text << "\n" << msg;
  }
  // A malformed optional split is an error too, naming its file.
  std::ofstream(file) << json{{"camera_angle_x", 0.7}, {"frames", json::array({good_frame})}}.dump();
  EXPECT_EQ(train::readNerfSynthetic(dir).train.size(), 1u);
  std::ofstream(dir + "/transforms_val.json")
      << "{\"camera_angle_x\": 0.7, \"frames\": [{\"file_path\": 1}]}";
  const std::string msg = test::errorOf([&] { train::readNerfSynthetic(dir); });
  EXPECT_NE(msg.find("transforms_val.json: frames[0]: missing key \"transform_matrix\""), std::string::npos)
      << msg;
}

TEST(NerfSynthetic, WriterRefusesWhatTheFolderCannotHoldAndFailsVisibly) {
  const std::string dir = test::tempDir("nerf_writer");
  train::Dataset d = syntheticDataset(8);
  train::Dataset off = d;
  off.train[1].camera.cx += 1;
  EXPECT_NE(test::errorOf([&] { train::writeNerfSynthetic(off, dir); }).find("train view 1"),
            std::string::npos);
  off = d;
  off.val[0].rgba.pop_back();
  EXPECT_NE(test::errorOf([&] { train::writeNerfSynthetic(off, dir); }).find("val view 0"),
            std::string::npos);
  off = d;
  off.test[1].camera.fx *= 1.1f, off.test[1].camera.fy *= 1.1f;
  EXPECT_NE(test::errorOf([&] { train::writeNerfSynthetic(off, dir); }).find("one camera_angle_x per split"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir + "/transforms_train.json"));  // refused before the folder was touched
  // A write that fails half-way leaves no transforms file that would make the folder read as a dataset.
  train::writeNerfSynthetic(d, dir);
  ASSERT_EQ(train::readNerfSynthetic(dir).train.size(), 4u);
  fs::remove(dir + "/val/r_000.png");
  fs::create_directories(dir + "/val/r_000.png/blocker");  // a directory where an image goes
  EXPECT_NE(test::errorOf([&] { train::writeNerfSynthetic(d, dir); }), "(no error)");
  EXPECT_FALSE(fs::exists(dir + "/transforms_train.json"));
  EXPECT_NE(test::errorOf([&] { train::readNerfSynthetic(dir); }).find("transforms_train.json"),
            std::string::npos);
}

// ---- rendering ---------------------------------------------------------------------------------------

TEST(Views, FlatConstantColourIsExactInsideAndTransparentOutside) {
  const std::string dir = test::tempDir("views_flat");
  const float c[3] = {0.2f, 0.5f, 0.8f};
  writeGltf(dir + "/sphere.gltf", {[] {
              Prim p = spherePrim(1.0f, 32);
              p.material = 0;
              return p;
            }()},
            constantMaterial(c[0], c[1], c[2]));
  for (int ss : {1, 2}) {
    train::ViewsOptions o = smallOptions(48, train::Lighting::kFlat);
    o.supersample = ss;
    const train::Dataset d = train::renderViews(dir + "/sphere.gltf", o);
    ASSERT_EQ(d.train.size(), 4u);
    ASSERT_EQ(d.val.size(), 1u);
    ASSERT_EQ(d.test.size(), 2u);
    size_t inside = 0, outside = 0;
    for (const auto* split : {&d.train, &d.val, &d.test})
      for (const train::View& v : *split) {
        ASSERT_EQ(v.rgba.size(), 48u * 48u * 4u);
        for (size_t p = 0; p < v.rgba.size(); p += 4) {
          const float a = v.rgba[p + 3];
          for (int k = 0; k < 3; ++k)
            ASSERT_NEAR(v.rgba[p + static_cast<size_t>(k)], a * linearToSrgb(c[k]), 1e-5f)
                << v.name << " pixel " << p / 4;
          inside += a == 1.0f, outside += a == 0.0f;
          if (ss == 1) {
            ASSERT_TRUE(a == 0.0f || a == 1.0f);
          }
        }
        EXPECT_EQ(px(v, 0, 0)[3], 0.0f);    // the corner is background
        EXPECT_EQ(px(v, 24, 24)[3], 1.0f);  // the centre is the sphere
      }
    EXPECT_GT(inside, 1000u);
    EXPECT_GT(outside, 1000u);
  }
}

TEST(Views, SilhouetteCoverageMatchesTheSphereProjectedArea) {
  const std::string dir = test::tempDir("views_silhouette");
  writeGltf(dir + "/sphere.gltf", {spherePrim(3.0f, 128)});  // normalised to radius 0.8
  train::ViewsOptions o = smallOptions(128, train::Lighting::kFlat);
  o.supersample = 4;
  const train::Dataset d = train::renderViews(dir + "/sphere.gltf", o);
  EXPECT_NEAR(d.scale, 0.8f / 3.0f, 1e-6f);
  for (const train::View& v : d.train) {
    double coverage = 0;
    for (size_t p = 3; p < v.rgba.size(); p += 4) coverage += v.rgba[p];
    // A sphere of radius R on the optical axis at distance D: a disc of radius f R / sqrt(D^2 - R^2) pixels.
    const double R = 0.8, D = 3.2, f = v.camera.fx;
    const double area = kPi * f * f * R * R / (D * D - R * R);
    EXPECT_NEAR(coverage / area, 1.0, 0.02) << v.name;
  }
}

TEST(Views, AoIsDarkerInAConcaveCreaseThanOnAnOpenFace) {
  const std::string dir = test::tempDir("views_ao");
  // A slab with a block on its back half: the slab's top meets the block's front in a concave crease at z =
  // -0.4.
  writeGltf(dir + "/step.gltf",
            {boxPrim({-1, -0.2f, -1}, {1, 0, 1}, 10), boxPrim({-1, 0, -1}, {1, 1.4f, -0.4f}, 10)});
  train::ViewsOptions o = smallOptions(96, train::Lighting::kAo);
  o.train_count = 1;  // azimuth 0: from +z, at the belt's middle elevation
  o.val_count = o.test_count = 0;
  o.supersample = 1;
  const train::Dataset d = train::renderViews(dir + "/step.gltf", o);
  ASSERT_EQ(d.train.size(), 1u);
  const train::View& v = d.train[0];
  auto at = [&](Vec3 source) {
    const auto [x, y] = project(v.camera, source * d.scale + d.offset);
    EXPECT_EQ(px(v, x, y)[3], 1.0f);
    return px(v, x, y)[0];
  };
  const float crease = at({0, 0, -0.3f}), open = at({0, 0, 0.9f}), block_top = at({0, 1.4f, -0.7f});
  EXPECT_LT(crease, open - 0.1f) << "crease " << crease << ", open " << open;
  EXPECT_GT(block_top, 0.95f);  // nothing above the block: open to the whole dome
  // Flat lighting has no occlusion: the same points are equally white.
  o.lighting = train::Lighting::kFlat;
  const train::Dataset f = train::renderViews(dir + "/step.gltf", o);
  const auto [x, y] = project(f.train[0].camera, Vec3{0, 0, -0.3f} * f.scale + f.offset);
  EXPECT_FLOAT_EQ(px(f.train[0], x, y)[0], 1.0f);
}

TEST(Views, CelShowsTheThreeBands) {
  const std::string dir = test::tempDir("views_cel");
  writeGltf(dir + "/sphere.gltf", {[] {
              Prim p = spherePrim(1.0f, 64);
              p.material = 0;
              return p;
            }()},
            constantMaterial(0.3f, 0.3f, 0.3f));
  train::ViewsOptions o = smallOptions(64, train::Lighting::kCel);
  o.supersample = 1;
  const train::Dataset d = train::renderViews(dir + "/sphere.gltf", o);
  const float s = linearToSrgb(0.3f);
  std::set<int> bands;
  for (const train::View& v : d.train)
    for (size_t p = 0; p < v.rgba.size(); p += 4) {
      if (v.rgba[p + 3] != 1.0f) continue;
      const float b = v.rgba[p] / s;
      ASSERT_GE(b, 0.62f - 1e-4f);
      ASSERT_LE(b, 1.12f + 1e-4f);
      for (float band : {0.62f, 0.88f, 1.12f})
        if (std::abs(b - band) < 1e-4f) bands.insert(static_cast<int>(band * 100));
    }
  EXPECT_EQ(bands.size(), 3u);
}

// The base colour comes from baseColorTexture only: a metallic-roughness or occlusion map (often the first
// image of a material, and dark) is never read.
TEST(Views, BaseColourNeverComesFromAMetallicRoughnessMap) {
  const std::string dir = test::tempDir("views_orm");
  const json images = json::array({{{"uri", pngDataUri(10, 20, 10)}}, {{"uri", pngDataUri(200, 100, 50)}}});
  const json textures = json::array({{{"source", 0}}, {{"source", 1}}});
  auto sphere = [] {
    Prim p = spherePrim(1.0f, 32);
    p.material = 0;
    return p;
  };
  // (a) ORM first, base colour second.
  json extra = {
      {"images", images},
      {"textures", textures},
      {"materials",
       json::array({{{"pbrMetallicRoughness",
                      {{"metallicRoughnessTexture", {{"index", 0}}}, {"baseColorTexture", {{"index", 1}}}}},
                     {"occlusionTexture", {{"index", 0}}}}})}};
  writeGltf(dir + "/orm_and_base.gltf", {sphere()}, extra);
  // (b) an ORM map and no base-colour texture: the factor alone.
  extra["materials"] =
      json::array({{{"pbrMetallicRoughness",
                     {{"baseColorFactor", {0.5, 0.5, 0.5, 1}}, {"metallicRoughnessTexture", {{"index", 0}}}}},
                    {"occlusionTexture", {{"index", 0}}}}});
  writeGltf(dir + "/orm_only.gltf", {sphere()}, extra);
  train::ViewsOptions o = smallOptions(32, train::Lighting::kFlat);
  o.supersample = 1;
  const float base[3] = {200 / 255.0f, 100 / 255.0f, 50 / 255.0f};
  {
    const train::Dataset d = train::renderViews(dir + "/orm_and_base.gltf", o);
    const float* p = px(d.train[0], 16, 16);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(p[k], base[k], 2e-3f) << k;
    const hull::SourceMesh src = train::loadViewsModel(dir + "/orm_and_base.gltf", "", 0);
    const train::SurfaceSamples s = train::sampleSurface(src, 200, 3);
    for (const Vec3& col : s.colors) {
      EXPECT_NEAR(col.x, base[0], 2e-3f);
      EXPECT_NEAR(col.z, base[2], 2e-3f);
    }
  }
  {
    const train::Dataset d = train::renderViews(dir + "/orm_only.gltf", o);
    for (const train::View& v : d.train) {
      const float* p = px(v, 16, 16);
      for (int k = 0; k < 3; ++k) EXPECT_NEAR(p[k], linearToSrgb(0.5f), 1e-5f);
    }
  }
}

TEST(Views, SurfaceSamplesLieOnTheSurfaceWithOutwardNormalsAndTheAlbedo) {
  const std::string dir = test::tempDir("views_samples");
  // Wound inward on purpose: the samples' normals come out after the winding repair.
  Prim p = spherePrim(2.0f, 48);
  for (size_t t = 0; t < p.indices.size(); t += 3) std::swap(p.indices[t + 1], p.indices[t + 2]);
  p.material = 0;
  writeGltf(dir + "/sphere.gltf", {p}, constantMaterial(0.1f, 0.6f, 0.3f));
  const hull::SourceMesh src = train::loadViewsModel(dir + "/sphere.gltf", "", 0);
  const train::SurfaceSamples a = train::sampleSurface(src, 5000, 7), b = train::sampleSurface(src, 5000, 7),
                              c = train::sampleSurface(src, 5000, 8);
  ASSERT_EQ(a.positions.size(), 5000u);
  size_t upper = 0;
  for (size_t i = 0; i < a.positions.size(); ++i) {
    EXPECT_EQ(a.positions[i].x, b.positions[i].x);
    EXPECT_EQ(a.positions[i].z, b.positions[i].z);
    const float r = length(a.positions[i]);
    EXPECT_GT(r, 0.8f * std::cos(static_cast<float>(kPi) / 24) - 1e-4f);
    EXPECT_LE(r, 0.8f + 1e-4f);
    EXPECT_NEAR(length(a.normals[i]), 1.0f, 1e-5f);
    EXPECT_GT(dot(a.normals[i], a.positions[i]), 0.0f);
    EXPECT_NEAR(a.colors[i].y, linearToSrgb(0.6f), 1e-5f);
    upper += a.positions[i].y > 0;
  }
  EXPECT_NEAR(static_cast<double>(upper) / 5000.0, 0.5, 0.03);  // area-weighted: the hemispheres alike
  EXPECT_NE(a.positions[0].x, c.positions[0].x);
  EXPECT_TRUE(train::sampleSurface(src, 0, 1).positions.empty());
}

TEST(Views, SkinnedKhronosSamplePosedAtAClipTime) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  train::ViewsOptions o = smallOptions(32, train::Lighting::kAo);
  o.ao_rays = 8;
  const train::Dataset rest = train::renderViews(path, o);
  o.clip = "0", o.time = 0.5f;
  const train::Dataset posed = train::renderViews(path, o);
  double coverage = 0, diff = 0;
  for (size_t i = 0; i < rest.train[0].rgba.size(); i += 4) {
    coverage += rest.train[0].rgba[i + 3];
    diff += std::abs(rest.train[0].rgba[i + 3] - posed.train[0].rgba[i + 3]);
  }
  EXPECT_GT(coverage, 30.0);
  EXPECT_GT(diff, 1.0);  // the walk moved the silhouette
  o.clip = "no such clip";
  EXPECT_NE(test::errorOf([&] { train::renderViews(path, o); }).find("no clip"), std::string::npos);
}

// ---- the command line --------------------------------------------------------------------------------

TEST(Views, CliWritesAFolderTheReaderReads) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  const std::string dir = test::tempDir("views_cli");
  std::string out;
  ASSERT_EQ(test::runCli(
                "views " + path + " -o " + dir +
                    "/ds --count 3 --val 1 --test 2 --size 24 --lighting ao --ao-rays 8 --belt 20,40 --json",
                &out),
            0)
      << out;
  const json j = json::parse(out);
  EXPECT_EQ(j["train"], 3);
  EXPECT_EQ(j["val"], 1);
  EXPECT_EQ(j["test"], 2);
  EXPECT_EQ(j["lighting"], "ao");
  const train::Dataset d = train::readNerfSynthetic(dir + "/ds");
  ASSERT_EQ(d.train.size(), 3u);
  EXPECT_EQ(d.train[0].camera.width, 24);
  EXPECT_NEAR(d.scale, j["scale"].get<float>(), 1e-6f);
  double alpha = 0;
  for (size_t i = 3; i < d.train[0].rgba.size(); i += 4) alpha += d.train[0].rgba[i];
  EXPECT_GT(alpha, 10.0);
  // The camera elevations follow --belt.
  for (const train::View& v : d.train) {
    const double el = std::asin(v.camera.position().y / 3.2) * 180 / kPi;
    EXPECT_GT(el, 20.0);
    EXPECT_LT(el, 40.0);
  }

  ASSERT_EQ(test::runCli("views " + path + " -o " + dir +
                             "/flat --count 2 --val 0 --test 0 --size 16 --lighting flat --clip 0 --time 0.3",
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("wrote " + dir + "/flat: 2 train"), std::string::npos) << out;
  EXPECT_EQ(train::readNerfSynthetic(dir + "/flat").val.size(), 0u);

  EXPECT_EQ(test::runCli("views --help", &out), 0);
  EXPECT_NE(out.find("--lighting"), std::string::npos);
  EXPECT_NE(out.find("NeRF-synthetic"), std::string::npos);
  // Usage errors: exit 2, one line naming the option.
  EXPECT_EQ(test::runCli("views " + path + " -o " + dir + "/x --lighting pbr", &out), 2) << out;
  EXPECT_NE(out.find("--lighting"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("views " + path + " -o " + dir + "/x --belt 50,10", &out), 2) << out;
  EXPECT_NE(out.find("MIN,MAX"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("views " + path + " -o " + dir + "/x --size 0", &out), 2) << out;
  EXPECT_EQ(test::runCli("views " + path, &out), 2) << out;
  // Runtime errors: exit 1, "splatforge views: error: ...".
  EXPECT_EQ(test::runCli("views " + dir + "/missing.glb -o " + dir + "/x", &out), 1) << out;
  EXPECT_NE(out.find("splatforge views: error: "), std::string::npos) << out;
  EXPECT_NE(out.find("missing.glb"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("views " + path + " -o " + dir + "/x --clip nope --count 1", &out), 1) << out;
  EXPECT_NE(out.find("no clip 'nope'"), std::string::npos) << out;
}

}  // namespace
}  // namespace sf
