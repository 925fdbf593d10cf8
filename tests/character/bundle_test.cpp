// Decoder characters: the UV lift against closed forms, bundles of both layouts, the demo bundle's analytic
// decoders against their formulas, the appearance threshold and latest-only coalescing, expression spaces.
#include "character/bundle.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "character/bundle_character.h"
#include "character/gnm_pack.h"
#include "character/rig.h"
#include "core/error.h"
#include "io/file.h"
#include "io/gltf.h"
#include "model/gltf_model.h"
#include "support/test_support.h"

namespace sf::character {
namespace {

const std::string kOrb = std::string(SPLATFORGE_SOURCE_DIR) + "/models/characters/orb_head";

// Every file of a bundle directory, for the in-memory resolver.
std::map<std::string, std::vector<uint8_t>> bundleFiles(const std::string& dir) {
  std::map<std::string, std::vector<uint8_t>> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      files[std::filesystem::relative(e.path(), dir).generic_string()] = readFile(e.path().string());
  return files;
}

std::vector<uint8_t> bytesOf(const std::string& s) {
  return {s.begin(), s.end()};
}

nlohmann::json sceneOf(const std::map<std::string, std::vector<uint8_t>>& files) {
  const std::vector<uint8_t>& b = files.at("scene.json");
  return nlohmann::json::parse(std::string(b.begin(), b.end()));
}

Camera frontCamera(float z = 0.6f) {
  return lookAtCamera({0, 1.6f, z}, {0, 1.6f, 0}, {0, 1, 0}, 40, 256, 256);
}

// ---- the lift's passes on a closed-form position map --------------------------------------------------

struct PlaneLift {
  int w = 8, h = 6;
  float a = 0.02f, b = 0.03f;  // texel steps along u and v
  std::vector<float> geometry;
  std::vector<uint32_t> texel_triangle;
  std::vector<Vec3> vertices;
  std::vector<uint32_t> indices{0, 1, 2, 0, 2, 3};
  std::vector<std::array<float, 9>> frame;
  std::vector<uint32_t> triim;
  std::vector<std::array<float, 2>> bounds;

  PlaneLift() {
    const size_t n = static_cast<size_t>(w * h);
    geometry.assign(3 * n, 0);
    for (int i = 0; i < h; ++i)
      for (int j = 0; j < w; ++j) {
        const size_t k = static_cast<size_t>(i * w + j);
        geometry[k] = a * static_cast<float>(j);
        geometry[n + k] =
            b * static_cast<float>(i) + 0.25f * a * static_cast<float>(j);  // a shear: du = (a, a/4, 0)
        geometry[2 * n + k] = 0;
      }
    // A quad under the whole map; every texel's triangle from the layout.
    const float fw = static_cast<float>(w), fh = static_cast<float>(h);
    vertices = {{0, 0, 0}, {a * fw, 0, 0}, {a * fw, b * fh + a * fw, 0}, {0, b * fh, 0}};
    const std::vector<std::array<float, 2>> uvs{{0, 0}, {1, 0}, {1, 1}, {0, 1}};
    texel_triangle = rasterizeUvLayout(uvs, indices, w, h);
    frame.resize(n);
    triim.resize(n);
    bounds.resize(n);
  }
  LiftPass1Job pass1(const LiftTuning& t) {
    LiftPass1Job j;
    j.width = w;
    j.height = h;
    j.geometry = geometry;
    j.texel_triangle = texel_triangle;
    j.vertices = vertices;
    j.indices = indices;
    j.tuning = t;
    j.out_frame = frame;
    j.out_triim = triim;
    j.out_bounds = bounds;
    return j;
  }
};

TEST(Lift, UvLayoutCoversTheSquareAndSplitsAtTheDiagonal) {
  const std::vector<std::array<float, 2>> uvs{{0, 0}, {1, 0}, {1, 1}, {0, 1}};
  const std::vector<uint32_t> two{0, 1, 2, 0, 2, 3};
  const std::vector<uint32_t> layout = rasterizeUvLayout(uvs, two, 8, 8);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      // Triangle 0 is (0,0), (1,0), (1,1): texel centres with u >= v (the diagonal goes to the first
      // claimant).
      const uint32_t want = (j + 0.5) >= (i + 0.5) ? 1u : 2u;
      EXPECT_EQ(layout[static_cast<size_t>(i * 8 + j)], want) << i << "," << j;
    }
  const std::vector<uint32_t> one{0, 1, 2};
  const std::vector<uint32_t> half = rasterizeUvLayout(uvs, one, 8, 8);
  EXPECT_EQ(std::count(half.begin(), half.end(), 0u), 28);  // the 28 texels strictly below the diagonal
}

TEST(Lift, PassesOnAShearedPlaneMatchTheClosedForm) {
  PlaneLift p;
  LiftTuning t;
  t.scale_mult = 0.7f;
  t.thickness = 0.2f;
  t.min_scale = 1e-5f;
  t.max_scale = 1.0f;
  t.triangle_scale = 100.0f;
  t.max_triangle_distance = 100.0f;
  p.pass1(t).run();
  const size_t n = static_cast<size_t>(p.w * p.h);
  const std::vector<float> color(3 * n, 0.5f);
  std::vector<Vec3> pos(n);
  std::vector<Cov6> cov(n);
  std::vector<float> opacity(n);
  std::vector<std::array<float, 3>> rgb(n);
  LiftPass2Job j2;
  j2.width = p.w;
  j2.height = p.h;
  j2.geometry = p.geometry;
  j2.color = color;
  j2.frame = p.frame;
  j2.triim = p.triim;
  j2.bounds = p.bounds;
  j2.decoder_frame.center = {1, 2, 3};
  j2.decoder_frame.scale = 4;
  j2.default_opacity_logit = 0.5f;
  j2.out_positions = pos;
  j2.out_covariances = cov;
  j2.out_opacity = opacity;
  j2.out_rgb = rgb;
  j2.run();
  // du = k (a, a/4, 0), dv = k (0, b, 0), n = t min(|du|, |dv|) z; Sigma = ws^2 F F^T (no clamp binds).
  const double k = 0.7, a = p.a, b = p.b, ws = 0.25;
  const double du[3] = {k * a, k * a / 4, 0}, dv[3] = {0, k * b, 0};
  const double tn = 0.2 * std::min(std::sqrt(du[0] * du[0] + du[1] * du[1]), k * b);
  const double f[3][3] = {{du[0], dv[0], 0}, {du[1], dv[1], 0}, {0, 0, tn}};
  double want[6];
  const int pairs[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}};
  for (int e = 0; e < 6; ++e) {
    double s = 0;
    for (int c = 0; c < 3; ++c) s += f[pairs[e][0]][c] * f[pairs[e][1]][c];
    want[e] = ws * ws * s;
  }
  for (size_t q = 0; q < n; ++q) {
    ASSERT_NE(p.triim[q], 0u) << q;
    for (int e = 0; e < 6; ++e)
      EXPECT_NEAR(cov[q][static_cast<size_t>(e)], want[e], 1e-5 * want[0])
          << "texel " << q << " element " << e;
    const double x = p.geometry[q], y = p.geometry[n + q];
    EXPECT_NEAR(pos[q].x, x * ws + 1, 1e-6);
    EXPECT_NEAR(pos[q].y, y * ws + 2, 1e-6);
    EXPECT_NEAR(pos[q].z, 3, 1e-6);
    EXPECT_FLOAT_EQ(opacity[q], static_cast<float>(static_cast<int>(255.0 / (1 + std::exp(-0.5)))) / 255.0f);
    EXPECT_FLOAT_EQ(rgb[q][0], 128.0f / 255.0f);  // round(127.5)
  }
}

TEST(Lift, ScaleClampsBindAtTheTriangleAndTheTuning) {
  PlaneLift p;
  LiftTuning t;
  t.scale_mult = 1.0f;
  t.thickness = 0.01f;
  t.min_scale = 0.004f;  // above the normal sigma (0.01 x 0.02): raised to 0.004
  t.max_scale = 0.025f;  // below the v sigma (0.03): lowered to 0.025
  t.max_triangle_distance = 100.0f;
  p.pass1(t).run();
  const size_t n = static_cast<size_t>(p.w * p.h);
  for (size_t q = 0; q < n; ++q) {
    EXPECT_FLOAT_EQ(p.bounds[q][0], 0.004f);
    EXPECT_FLOAT_EQ(p.bounds[q][1], 0.025f);  // min(max_scale, 1.5 x the quad's longest edge)
  }
  t.triangle_scale = 0.05f;  // the triangle bound: 0.05 x the longest edge
  p.pass1(t).run();
  const double aw = static_cast<double>(p.a) * p.w, bh = static_cast<double>(p.b) * p.h;
  const double edge = std::max({std::hypot(aw, bh + aw), bh + aw, aw});
  for (size_t q = 0; q < n; ++q) EXPECT_NEAR(p.bounds[q][1], 0.05 * edge, 1e-7);
}

TEST(Lift, TexelsFarFromTheirTriangleAndUncoveredTexelsAreCulledInPlace) {
  PlaneLift p;
  const size_t n = static_cast<size_t>(p.w * p.h);
  p.geometry[2 * n + 3] = 5.0f;  // texel 3 lifted 5 units off its triangle
  p.texel_triangle[10] = 0;      // texel 10 not in the layout
  LiftTuning t;
  p.pass1(t).run();
  EXPECT_EQ(p.triim[3], 0u);
  EXPECT_EQ(p.triim[10], 0u);
  EXPECT_NE(p.triim[11], 0u);  // its neighbour takes a one-sided derivative instead
  const std::vector<float> color(4 * n, 0.5f);
  std::vector<Vec3> pos(n);
  std::vector<Cov6> cov(n);
  std::vector<float> opacity(n, -1);
  std::vector<std::array<float, 3>> rgb(n);
  LiftPass2Job j2;
  j2.width = p.w;
  j2.height = p.h;
  j2.geometry = p.geometry;
  j2.color = color;
  j2.color_channels = 4;
  j2.frame = p.frame;
  j2.triim = p.triim;
  j2.bounds = p.bounds;
  j2.out_positions = pos;
  j2.out_covariances = cov;
  j2.out_opacity = opacity;
  j2.out_rgb = rgb;
  j2.run();
  EXPECT_EQ(opacity[3], 0.0f);
  EXPECT_EQ(opacity[10], 0.0f);
  EXPECT_GT(opacity[11], 0.0f);
  EXPECT_EQ(opacityByte(0.5f), 158);  // u8(255 sigmoid(0.5)) = u8(158.99)
  EXPECT_EQ(colorByte(-1), 0);
  EXPECT_EQ(colorByte(2), 255);
}

TEST(Lift, JobsRefuseBadSizes) {
  PlaneLift p;
  LiftPass1Job j = p.pass1({});
  j.geometry = std::span(p.geometry).first(10);
  EXPECT_NE(j.validate().find("position map"), std::string::npos);
  j = p.pass1({});
  std::vector<uint32_t> bad = p.texel_triangle;
  bad[0] = 9;
  j.texel_triangle = bad;
  EXPECT_NE(j.validate().find("triangle 8"), std::string::npos);
  LiftTuning t;
  t.min_scale = 2;
  EXPECT_NE(t.validate().find("min_scale"), std::string::npos);
}

// ---- bundles -------------------------------------------------------------------------------------------

TEST(Bundle, MultiRegionLoadsWithTheEngineBlocks) {
  const CharacterBundle b = loadCharacterBundle(directoryResolver(kOrb));
  EXPECT_EQ(b.layout, "multi_region");
  ASSERT_EQ(b.branches.size(), 2u);
  EXPECT_EQ(b.branches[0].name, "head");
  EXPECT_EQ(b.branches[0].mesh_glb, "head/head.glb");
  EXPECT_EQ(b.branches[0].uv_resolution, 96);
  EXPECT_FLOAT_EQ(b.branches[0].frame.scale, 10);
  EXPECT_EQ(b.branches[1].name, "eyes");
  EXPECT_TRUE(b.branches[1].static_geometry);
  EXPECT_TRUE(b.branches[1].gaze_conditioned);
  EXPECT_EQ(b.branches[1].mesh_json, "eyes/mesh.json");
  EXPECT_FLOAT_EQ(b.branches[1].lift.max_triangle_distance, 6);
  EXPECT_TRUE(b.rig.declared);
  EXPECT_EQ(b.rig.backend, "skinned");
  EXPECT_EQ(b.expression_space.kind, "arkit52");
  EXPECT_EQ(b.expression_space.dim, 52);
}

TEST(Bundle, DefaultsWithoutTheEngineBlocksAreOrlAndArkit) {
  auto files = bundleFiles(kOrb);
  nlohmann::json scene = sceneOf(files);
  scene.erase("rig");
  scene.erase("expression_space");
  files["scene.json"] = bytesOf(scene.dump());
  files["rig_names.json"] = bytesOf(R"(["jawOpen", "cheekPuff"])");
  const CharacterBundle b = loadCharacterBundle(memoryResolver(files, "mem"));
  EXPECT_FALSE(b.rig.declared);
  EXPECT_EQ(b.rig.backend, "orl");
  EXPECT_EQ(b.rig.control_names, (std::vector<std::string>{"jawOpen", "cheekPuff"}));
  EXPECT_FALSE(b.expression_space.declared);
  EXPECT_EQ(b.expression_space.kind, "arkit52");
  // This engine has no orl runtime: the character says so (and the world keeps a placeholder).
  const std::string e = test::errorOf([&] { BundleCharacter c(b); });
  EXPECT_NE(e.find("\"orl\""), std::string::npos) << e;
  EXPECT_NE(e.find("default"), std::string::npos) << e;
}

TEST(Bundle, SchemaVersionOneIsOneFusedBranchThatLooksAlike) {
  auto files = bundleFiles(kOrb);
  nlohmann::json scene = sceneOf(files);
  nlohmann::json manifest = scene["branches"]["head"];
  manifest["schema_version"] = 1;
  manifest["rig"] = scene["rig"];
  files.erase("scene.json");
  files["export_manifest.json"] = bytesOf(manifest.dump());
  const CharacterBundle b = loadCharacterBundle(memoryResolver(files, "mem"));
  EXPECT_EQ(b.layout, "schema_version 1");
  ASSERT_EQ(b.branches.size(), 1u);
  EXPECT_EQ(b.branches[0].name, "fused");
  EXPECT_EQ(b.expression_space.kind, "arkit52");
  BundleCharacter fused(b);
  BundleCharacter multi(loadCharacterBundle(directoryResolver(kOrb)));
  fused.update(frontCamera());
  multi.update(frontCamera());
  // The fused branch draws what the multi_region head branch draws.
  const auto [first, count] = multi.branchSlots(0);
  ASSERT_EQ(fused.size(), count);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(fused.cloud().positions[i].x, multi.cloud().positions[first + i].x);
    ASSERT_EQ(fused.covariances()[i], multi.covariances()[first + i]);
  }
  manifest["schema_version"] = 2;
  files["export_manifest.json"] = bytesOf(manifest.dump());
  EXPECT_NE(test::errorOf([&] {
              loadCharacterBundle(memoryResolver(files, "mem"));
            }).find("schema_version 2 is not known"),
            std::string::npos);
}

TEST(Bundle, MalformedBundlesNameTheFileAndJsonPath) {
  auto base = bundleFiles(kOrb);
  auto refusal = [&](const std::function<void(nlohmann::json&)>& edit) {
    auto files = base;
    nlohmann::json scene = sceneOf(files);
    edit(scene);
    files["scene.json"] = bytesOf(scene.dump());
    return test::errorOf([&] { loadCharacterBundle(memoryResolver(files, "mem")); });
  };
  std::string e =
      refusal([](nlohmann::json& s) { s["branches"]["eyes"]["decoders"]["geom"] = "eyes/missing.onnx"; });
  EXPECT_NE(e.find("mem:scene.json: branches.eyes.decoders.geom: names mem:eyes/missing.onnx"),
            std::string::npos)
      << e;
  e = refusal([](nlohmann::json& s) { s["branches"]["head"]["mesh_glb"] = "../outside.glb"; });
  EXPECT_NE(e.find("branches.head.mesh_glb"), std::string::npos) << e;
  e = refusal([](nlohmann::json& s) { s["order"].push_back("hair"); });
  EXPECT_NE(e.find("order[2]: names branch \"hair\""), std::string::npos) << e;
  e = refusal([](nlohmann::json& s) { s["mode"] = "layered"; });
  EXPECT_NE(e.find("mode: unknown mode"), std::string::npos) << e;
  e = refusal([](nlohmann::json& s) { s["branches"]["head"]["lift"]["min_scale"] = -1; });
  EXPECT_NE(e.find("branches.head.lift: min_scale"), std::string::npos) << e;
  e = refusal([](nlohmann::json& s) { s["expression_space"] = {{"kind", "arkit52"}, {"dim", 51}}; });
  EXPECT_NE(e.find("expression_space.dim: arkit52 has 52 values"), std::string::npos) << e;
  e = refusal([](nlohmann::json& s) { s["rig"]["backend"] = "wasm"; });
  EXPECT_NE(e.find("rig.backend: unknown rig backend"), std::string::npos) << e;
  // The document's own rig block (a 17,821-vertex head) parses.
  {
    auto f = base;
    nlohmann::json scene = sceneOf(f);
    scene["rig"]["vertex_count"] = 17821;
    f["scene.json"] = bytesOf(scene.dump());
    EXPECT_EQ(loadCharacterBundle(memoryResolver(f, "mem")).rig.vertex_count, 17821);
    // A decoder whose declared map does not fit the branch's resolution is refused when the character is
    // made.
    scene["rig"].erase("vertex_count");
    scene["branches"]["head"]["uv_resolution"] = 64;
    f["scene.json"] = bytesOf(scene.dump());
    e = test::errorOf([&] { BundleCharacter c(loadCharacterBundle(memoryResolver(f, "mem"))); });
    EXPECT_NE(
        e.find(
            "output geom_uv is declared [1, 4, 96, 96]; mem:scene.json: branches.head.uv_resolution is 64"),
        std::string::npos)
        << e;
  }
  auto files = base;
  files["scene.json"] = bytesOf("{\"mode\": ");
  e = test::errorOf([&] { loadCharacterBundle(memoryResolver(files, "mem")); });
  EXPECT_NE(e.find("mem:scene.json"), std::string::npos) << e;
  EXPECT_TRUE(isCharacterBundle(*directoryResolver(kOrb)));
  EXPECT_FALSE(isCharacterBundle(*directoryResolver(std::string(SPLATFORGE_SOURCE_DIR) + "/docs")));
}

TEST(Bundle, BranchMeshRoundTripsAndRefusesBadOffsets) {
  BranchMesh m;
  m.positions = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
  m.uvs = {{0, 0}, {1, 0}, {0, 1}};
  m.indices = {0, 1, 2};
  const auto [json, bin] = encodeBranchMesh(m);
  const std::vector<uint8_t> jb = bytesOf(json);
  const BranchMesh back = decodeBranchMesh(jb, bin, "m.json", "m.bin");
  EXPECT_EQ(back.indices, m.indices);
  EXPECT_EQ(back.positions[1].x, 1.0f);
  for (size_t cut = 0; cut < bin.size(); cut += 4)
    EXPECT_NE(test::errorOf([&] { decodeBranchMesh(jb, std::span(bin).first(cut), "m.json", "m.bin"); }), "")
        << cut;
  std::vector<uint8_t> wrong = bin;
  wrong[wrong.size() - 4] = 7;  // index 7 of 3 vertices
  EXPECT_NE(test::errorOf([&] {
              decodeBranchMesh(jb, wrong, "m.json", "m.bin");
            }).find("m.bin: triangle 0 indexes vertex 7"),
            std::string::npos);
}

// ---- the demo bundle's analytic decoders -------------------------------------------------------------

// The posed head's bounds in the decoder frame, from the glTF's own vertices and morph targets.
struct HeadBounds {
  double c[3], r[3];
};
HeadBounds headBounds(float jaw) {
  const GltfDocument doc = loadGltf(kOrb + "/head/head.glb");
  const GltfPrimitive& p = doc.meshes[0].primitives[0];
  double lo[3] = {1e9, 1e9, 1e9}, hi[3] = {-1e9, -1e9, -1e9};
  for (size_t v = 0; v < p.positions.size(); ++v)
    for (int a = 0; a < 3; ++a) {
      const double x = (static_cast<double>(p.positions[v][a]) +
                        jaw * static_cast<double>(p.targets[0].positions[v][a]) - (a == 1 ? 1.6 : 0.0)) *
                       10.0;
      lo[a] = std::min(lo[a], x);
      hi[a] = std::max(hi[a], x);
    }
  HeadBounds b;
  for (int a = 0; a < 3; ++a) {
    b.c[a] = (lo[a] + hi[a]) / 2;
    b.r[a] = (hi[a] - lo[a]) / 2;
  }
  return b;
}

TEST(BundleCharacter, HeadGaussiansMatchTheAnalyticSurface) {
  // The demo bundle with clamps that do not bind, so Sigma = ws^2 F F^T exactly.
  auto files = bundleFiles(kOrb);
  nlohmann::json scene = sceneOf(files);
  scene["branches"]["head"]["lift"] = {{"scale_mult", 0.6},
                                       {"thickness", 0.15},
                                       {"min_scale", 1e-7},
                                       {"max_scale", 10},
                                       {"triangle_scale", 1000}};
  files["scene.json"] = bytesOf(scene.dump());
  BundleCharacter ch(loadCharacterBundle(memoryResolver(files, "mem")));
  Expression e{"arkit52", std::vector<float>(52, 0.0f)};
  e.weights[static_cast<size_t>(arkitIndex("jawOpen"))] = 0.5f;
  ch.setExpression(e);
  const Camera cam = frontCamera();
  ch.update(cam);
  const HeadBounds hb = headBounds(0.5f);
  constexpr int R = 96;
  auto surface = [&](int i, int j, double out[3]) {
    const double u = (j + 0.5) / R, v = (i + 0.5) / R, th = M_PI * v, ph = 2 * M_PI * u - M_PI;
    const double s[3] = {std::sin(th) * std::sin(ph), std::cos(th), std::sin(th) * std::cos(ph)};
    for (int a = 0; a < 3; ++a) out[a] = hb.c[a] + hb.r[a] * s[a];
  };
  const double k = 0.6, ws = 0.1;
  size_t checked = 0;
  for (int i = 1; i < R - 1; i += 7)
    for (int j = 1; j < R - 1; j += 5) {
      double p[3], pu0[3], pu1[3], pv0[3], pv1[3];
      surface(i, j, p);
      surface(i, j - 1, pu0);
      surface(i, j + 1, pu1);
      surface(i - 1, j, pv0);
      surface(i + 1, j, pv1);
      double du[3], dv[3];
      for (int a = 0; a < 3; ++a) {
        du[a] = k * (pu1[a] - pu0[a]) / 2;
        dv[a] = k * (pv1[a] - pv0[a]) / 2;
      }
      const double nx = du[1] * dv[2] - du[2] * dv[1], ny = du[2] * dv[0] - du[0] * dv[2],
                   nz = du[0] * dv[1] - du[1] * dv[0];
      const double nl = std::sqrt(nx * nx + ny * ny + nz * nz);
      const double t = 0.15 *
                       std::min(std::sqrt(du[0] * du[0] + du[1] * du[1] + du[2] * du[2]),
                                std::sqrt(dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2])) /
                       nl;
      const double n[3] = {nx * t, ny * t, nz * t};
      const size_t slot = static_cast<size_t>(i * R + j);
      const Vec3 got = ch.cloud().positions[slot];
      EXPECT_NEAR(got.x, p[0] * ws, 2e-6) << i << "," << j;
      EXPECT_NEAR(got.y, p[1] * ws + 1.6, 2e-6) << i << "," << j;
      EXPECT_NEAR(got.z, p[2] * ws, 2e-6) << i << "," << j;
      const int pairs[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}};
      double scale = 0;
      double want[6];
      for (int q = 0; q < 6; ++q) {
        const int r = pairs[q][0], c = pairs[q][1];
        want[q] = ws * ws * (du[r] * du[c] + dv[r] * dv[c] + n[r] * n[c]);
        scale = std::max(scale, std::fabs(want[q]));
      }
      for (int q = 0; q < 6; ++q)
        EXPECT_NEAR(ch.covariances()[slot][static_cast<size_t>(q)], want[q], 2e-3 * scale)
            << i << "," << j << " element " << q;
      EXPECT_NEAR(ch.cloud().opacities[slot], opacityByte(4.0f) / 255.0f, 1e-7);
      // Appearance: base (0.85, 0.65, 0.55) x (0.45 + 0.55 relu(-d . S)), d from the camera to the texel.
      const Vec3 eye = cam.position();
      double d[3] = {p[0] - (eye.x) * 10, p[1] - (eye.y - 1.6) * 10, p[2] - eye.z * 10};
      const double dl = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
      double s[3];
      for (int a = 0; a < 3; ++a) s[a] = (p[a] - hb.c[a]) / hb.r[a];
      const double facing = std::max(0.0, -(d[0] * s[0] + d[1] * s[1] + d[2] * s[2]) / dl);
      const double base[3] = {0.85, 0.65, 0.55};
      for (size_t ch3 = 0; ch3 < 3; ++ch3) {
        const double want_rgb = base[ch3] * (0.45 + 0.55 * facing);
        EXPECT_NEAR(shDcToColor(ch.cloud().sh[3 * slot + ch3]), want_rgb, 0.6 / 255 + 1e-5) << i << "," << j;
      }
      ++checked;
    }
  EXPECT_GT(checked, 200u);
}

TEST(BundleCharacter, EyesFollowTheGazeWithPitchPositiveDown) {
  BundleCharacter ch(loadCharacterBundle(directoryResolver(kOrb)));
  const auto [first, count] = ch.branchSlots(1);
  ch.update(frontCamera());
  auto irisCentre = [&] {  // the mean centre of the eyes' dark texels
    Vec3 sum{0, 0, 0};
    size_t n = 0;
    for (size_t i = first; i < first + count; ++i)
      if (ch.cloud().opacities[i] > 0 && shDcToColor(ch.cloud().sh[3 * i]) < 0.3f) {
        sum = sum + ch.cloud().positions[i];
        ++n;
      }
    return n ? sum / static_cast<float>(n) : Vec3{0, 0, 0};
  };
  const Vec3 rest = irisCentre();
  ch.setGaze({0.3f, 0, 0.3f, 0});  // pitch 0.3 rad down, both eyes
  ch.update(frontCamera());
  const Vec3 down = irisCentre();
  EXPECT_LT(down.y, rest.y - 0.002f);
  ch.setGaze({0, 0.3f, 0, 0.3f});  // yaw: +z turns towards +x
  ch.update(frontCamera());
  EXPECT_GT(irisCentre().x, rest.x + 0.002f);
}

// ---- scheduling ----------------------------------------------------------------------------------------

TEST(BundleCharacter, TheTwoMillimetreThresholdSkipsPassesOverAScriptedCameraPath) {
  BundleCharacter ch(loadCharacterBundle(directoryResolver(kOrb)));
  // 0.5 mm steps: a pass each time the accumulated move since the last pass exceeds 2 mm (every 5th step).
  for (int s = 0; s <= 20; ++s)
    ch.update(lookAtCamera({0.0005f * static_cast<float>(s), 1.6f, 0.6f},
                           {0.0005f * static_cast<float>(s), 1.6f, 0}, {0, 1, 0}, 40, 256, 256));
  EXPECT_EQ(ch.counters().updates, 21u);
  EXPECT_EQ(ch.counters().geometry_passes, 1u);
  EXPECT_EQ(ch.counters().appearance_passes, 5u);  // steps 0, 5, 10, 15, 20
  EXPECT_EQ(ch.counters().skipped, 16u);
  // A turn of 3 mrad from a still centre runs appearance; one of 1 mrad does not.
  const Camera base = lookAtCamera({0.01f, 1.6f, 0.6f}, {0.01f, 1.6f, 0}, {0, 1, 0}, 40, 256, 256);
  ch.update(base);
  const uint64_t runs = ch.counters().appearance_passes;
  ch.update(lookAtCamera({0.01f, 1.6f, 0.6f}, {0.01f + 0.6f * 0.001f, 1.6f, 0}, {0, 1, 0}, 40, 256, 256));
  EXPECT_EQ(ch.counters().appearance_passes, runs);
  ch.update(lookAtCamera({0.01f, 1.6f, 0.6f}, {0.01f + 0.6f * 0.003f, 1.6f, 0}, {0, 1, 0}, 40, 256, 256));
  EXPECT_EQ(ch.counters().appearance_passes, runs + 1);
  // A new expression runs geometry from a still camera.
  Expression e{"arkit52", std::vector<float>(52, 0.0f)};
  e.weights[static_cast<size_t>(arkitIndex("cheekPuff"))] = 1;
  ch.setExpression(e);
  ch.update(lookAtCamera({0.01f, 1.6f, 0.6f}, {0.01f + 0.6f * 0.003f, 1.6f, 0}, {0, 1, 0}, 40, 256, 256));
  EXPECT_EQ(ch.counters().geometry_passes, 2u);
}

TEST(BundleCharacter, PassesInFlightCoalesceLatestOnly) {
  BundleCharacter ch(loadCharacterBundle(directoryResolver(kOrb)));
  // Hold every pass at its start until released, so what is in flight is known.
  std::mutex m;
  std::condition_variable cv;
  int allowed = 0, started = 0;
  ch.setPassHook([&](bool) {
    std::unique_lock lock(m);
    ++started;
    cv.notify_all();
    cv.wait(lock, [&] { return allowed >= started; });
  });
  auto release = [&] {
    std::lock_guard lock(m);
    ++allowed;
    cv.notify_all();
  };
  auto camAt = [](float x) { return lookAtCamera({x, 1.6f, 0.6f}, {x, 1.6f, 0}, {0, 1, 0}, 40, 256, 256); };
  ch.update(camAt(0), true);  // pass 1 starts and is held
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return started == 1; });
  }
  for (int s = 1; s <= 6; ++s)
    ch.update(camAt(0.01f * static_cast<float>(s)), true);  // 6 requests while in flight
  EXPECT_EQ(ch.counters().coalesced, 5u);  // each replaced the one before: only the newest waits
  release();                               // pass 1 completes; the next update starts the newest request
  {
    std::unique_lock lock(m);
    cv.wait_for(lock, std::chrono::seconds(30), [&] { return started == 1; });
  }
  ch.update(camAt(0.06f), true);  // the same state as the newest: collected, nothing new to ask for
  release();
  ch.finish();
  EXPECT_EQ(ch.counters().appearance_passes, 2u);  // 7 requests, 2 passes: the first and the latest
  EXPECT_EQ(ch.counters().geometry_passes, 1u);
  // The drawn gaussians are the latest request's: a view from x = 0.06.
  BundleCharacter sync(loadCharacterBundle(directoryResolver(kOrb)));
  sync.update(camAt(0.06f));
  EXPECT_EQ(sync.cloud().sh, ch.cloud().sh);
}

// ---- expression spaces and rigs -----------------------------------------------------------------------

TEST(BundleCharacter, MismatchedExpressionSpacesAreRefused) {
  BundleCharacter ch(loadCharacterBundle(directoryResolver(kOrb)));
  std::string e = test::errorOf([&] { ch.setExpression({"gnm", std::vector<float>(387, 0.0f)}); });
  EXPECT_NE(e.find("expression space is arkit52"), std::string::npos) << e;
  e = test::errorOf([&] { ch.setExpression({"arkit52", std::vector<float>(51, 0.0f)}); });
  EXPECT_NE(e.find("52"), std::string::npos) << e;
  // A gnm rig (the head's morph targets as its basis) without an arkit map refuses an ARKit vector.
  auto files = bundleFiles(kOrb);
  GnmPack pack = fromSkinnedGltf(GltfModel(kOrb + "/head/head.glb"));
  pack.arkit_map.clear();
  files["head/head.sfgnm"] = encodeGnmPack(pack);
  nlohmann::json scene = sceneOf(files);
  scene["rig"] = {{"backend", "gnm"}, {"pack", "head/head.sfgnm"}};
  scene["expression_space"] = {{"kind", "gnm"}, {"dim", pack.basisCount() + 4}};
  files["scene.json"] = bytesOf(scene.dump());
  BundleCharacter g(loadCharacterBundle(memoryResolver(files, "mem")));
  e = test::errorOf([&] { g.setExpression({"arkit52", std::vector<float>(52, 0.0f)}); });
  EXPECT_NE(e.find("arkit"), std::string::npos) << e;
}

TEST(BundleCharacter, GnmAndSkinnedRigsLiftTheSameHead) {
  auto files = bundleFiles(kOrb);
  const GnmPack pack = fromSkinnedGltf(GltfModel(kOrb + "/head/head.glb"));
  files["head/head.sfgnm"] = encodeGnmPack(pack);
  nlohmann::json scene = sceneOf(files);
  scene["rig"] = {{"backend", "gnm"}, {"pack", "head/head.sfgnm"}};
  scene["expression_space"] = {{"kind", "gnm"}, {"dim", pack.basisCount() + 4}};
  files["scene.json"] = bytesOf(scene.dump());
  BundleCharacter gnm(loadCharacterBundle(memoryResolver(files, "mem")));
  BundleCharacter skinned(loadCharacterBundle(directoryResolver(kOrb)));
  Expression ak{"arkit52", std::vector<float>(52, 0.0f)};
  ak.weights[static_cast<size_t>(arkitIndex("jawOpen"))] = 0.7f;
  ak.weights[static_cast<size_t>(arkitIndex("cheekPuff"))] = 0.4f;
  skinned.setExpression(ak);
  std::vector<float> coeffs(pack.basisCount() + 4, 0.0f);
  coeffs[0] = 0.7f;  // the pack's basis keeps the glTF's target order: jawOpen, cheekPuff
  coeffs[1] = 0.4f;
  gnm.setExpression({"gnm", coeffs});
  gnm.update(frontCamera());
  skinned.update(frontCamera());
  const auto [first, count] = gnm.branchSlots(0);
  for (size_t i = first; i < first + count; i += 13) {
    EXPECT_NEAR(gnm.cloud().positions[i].x, skinned.cloud().positions[i].x, 1e-5);
    EXPECT_NEAR(gnm.cloud().positions[i].y, skinned.cloud().positions[i].y, 1e-5);
    EXPECT_NEAR(gnm.cloud().positions[i].z, skinned.cloud().positions[i].z, 1e-5);
  }
}

TEST(BundleCharacter, MemoryReportCountsEveryBranch) {
  BundleCharacter ch(loadCharacterBundle(directoryResolver(kOrb)));
  const std::vector<BranchMemory> m = ch.memoryReport();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].slots, 96u * 96u);
  EXPECT_EQ(m[1].slots, 48u * 48u);
  EXPECT_EQ(m[0].gpu_bytes, 52u * 96u * 96u);
  EXPECT_EQ(m[0].decoder_bytes, std::filesystem::file_size(kOrb + "/head/geom.onnx") +
                                    std::filesystem::file_size(kOrb + "/head/appr.onnx"));
  EXPECT_GT(m[0].resident_bytes, m[0].decoder_bytes);
}

}  // namespace
}  // namespace sf::character
