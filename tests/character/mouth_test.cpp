// The inside of the mouth (character/mouth.h) on a tiny package built here: a static "head" triangle, a
// lip quad whose morph target parts the lips by exactly 1 mm per unit weight, and a "jaw" triangle the same
// target lowers by 1 mm, all skinned to one head joint. mouth_hidden's plug / inside / lip-band values and
// the teeth's placement and fade against hand-computed values at gaps 0, 1, 3, 4 and 5 mm; a head turn is
// not a parting; the rim mask per splat; enabled = false; the world's render objects; every truncated
// prefix of mouth_hidden.bin, teeth.bin and mouth_meshes.bin and bad records refused with file, offset and
// reason; teeth.json refused naming the JSON path; the mouth's meshes placed on their triangles, masked by
// the lip opening with the soft rim and drawn lit from the camera through the world.
#include "character/mouth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "character/character.h"
#include "character/corrective.h"
#include "character/gltf_bytes.h"
#include "character/world.h"
#include "core/error.h"
#include "io/file.h"
#include "io/image_io.h"
#include "support/test_support.h"

namespace sf::character {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr float kMm = 0.001f;

using test::GltfBytes;

// Vertices: 0-2 the head triangle (z = -10 mm), 3/4 the upper lip (left, right), 5/6 the lower lip,
// 7-9 the jaw triangle. Morph target 0 moves 3, 4 up by 0.5 mm, 5, 6 down by 0.5 mm and 7-9 down by 1 mm.
const Vec3 kVertices[10] = {{-0.05f, -0.05f, -0.01f}, {0.05f, -0.05f, -0.01f},
                            {0, 0.05f, -0.01f},       {-0.01f, 0.001f, 0.01f},
                            {0.01f, 0.001f, 0.01f},   {-0.01f, -0.001f, 0.01f},
                            {0.01f, -0.001f, 0.01f},  {-0.02f, -0.02f, 0},
                            {0.02f, -0.02f, 0},       {0, -0.03f, 0}};
const uint32_t kIndices[12] = {0, 1, 2, 3, 5, 4, 4, 5, 6, 7, 8, 9};

std::string writeFaceGltf(const fs::path& dir) {
  GltfBytes g;
  Vec3 deltas[10];
  deltas[3] = deltas[4] = {0, 0.5f * kMm, 0};
  deltas[5] = deltas[6] = {0, -0.5f * kMm, 0};
  deltas[7] = deltas[8] = deltas[9] = {0, -kMm, 0};
  uint8_t joints[10 * 4] = {};
  float weights[10 * 4] = {};
  for (int v = 0; v < 10; ++v) weights[v * 4] = 1;
  const float ibm[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  const int pos = g.add(kVertices, sizeof kVertices, 5126, 10, "VEC3");
  const int jnt = g.add(joints, sizeof joints, 5121, 10, "VEC4");
  const int wgt = g.add(weights, sizeof weights, 5126, 10, "VEC4");
  const int idx = g.add(kIndices, sizeof kIndices, 5125, 12, "SCALAR");
  const int dlt = g.add(deltas, sizeof deltas, 5126, 10, "VEC3");
  const int inv = g.add(ibm, sizeof ibm, 5126, 1, "MAT4");
  Json doc = {{"asset", {{"version", "2.0"}}},
              {"scene", 0},
              {"scenes", {{{"nodes", {0, 1}}}}},
              {"nodes", {{{"name", "face"}, {"mesh", 0}, {"skin", 0}}, {{"name", "head"}}}},
              {"meshes",
               {{{"primitives",
                  {{{"attributes", {{"POSITION", pos}, {"JOINTS_0", jnt}, {"WEIGHTS_0", wgt}}},
                    {"indices", idx},
                    {"targets", {{{"POSITION", dlt}}}}}}},
                 {"weights", {0}}}}},
              {"skins", {{{"joints", {1}}, {"inverseBindMatrices", inv}}}},
              {"accessors", g.accessors},
              {"bufferViews", g.views},
              {"buffers",
               {{{"byteLength", g.bin.size()},
                 {"uri", "data:application/octet-stream;base64," + test::encodeBase64(g.bin)}}}}};
  const std::string path = (dir / "face.gltf").string();
  std::ofstream(path) << doc.dump();
  return path;
}

// Body rows: 0 plug, 1 inside point, 2 lip band (sizes 4, 2, 1 mm), 3 an ordinary splat; all on the head
// triangle, opacity 0.8.
GaussianCloud bodySplats() {
  GaussianCloud c;
  c.resize(4, 0);
  const Vec3 at[4] = {{-0.01f, 0, -0.009f}, {0.01f, 0, -0.009f}, {0, -0.01f, -0.009f}, {0, 0.01f, -0.009f}};
  for (size_t i = 0; i < 4; ++i) {
    c.positions[i] = at[i];
    c.scales[i] = {3 * kMm, 3 * kMm, 0.5f * kMm};
    c.opacities[i] = 0.8f;
  }
  c.scales[2] = {4 * kMm, 2 * kMm, 1 * kMm};
  return c;
}

MouthHidden hiddenOf() {
  MouthHidden m;
  m.splats = {{0, HiddenKind::kPlug, 3, 5}, {1, HiddenKind::kInside, 4, 6}, {2, HiddenKind::kLipBand, 3, 5}};
  return m;
}

// The mouth bag: a 30 x 16 mm quad on the head triangle, 5 mm in front of it (z = -5 mm, between the head
// and the lips at z = +10 mm), corners (+-15, +-8) mm.
const Vec3 kBagCorners[4] = {{-0.015f, -0.008f, -0.005f},
                             {0.015f, -0.008f, -0.005f},
                             {0.015f, 0.008f, -0.005f},
                             {-0.015f, 0.008f, -0.005f}};

MouthMesh bagMesh() {
  MouthMesh m;
  m.color = {0.6f, 0.1f, 0.15f, 1.0f};
  for (const Vec3& c : kBagCorners) {
    // Barycentrics on the head triangle (-50, -50), (50, -50), (0, 50) mm at (x, y).
    const float b2 = (c.y + 0.05f) / 0.1f, b1 = 0.5f * (1 - b2 + 20 * c.x), b0 = 1 - b1 - b2;
    m.vertices.push_back({0, {b0, b1, b2}, 0.005f, 0});
  }
  m.indices = {0, 1, 2, 0, 2, 3};
  return m;
}

// Teeth: point 0 on the head triangle's centroid, 1 mm off it and 2 mm set back; point 1 on the jaw
// triangle (the lower teeth), 1 mm set back.
Teeth teethOf() {
  Teeth t;
  t.splats.resize(2, 0);
  for (size_t i = 0; i < 2; ++i) t.splats.scales[i] = {kMm, kMm, kMm}, t.splats.opacities[i] = 0.9f;
  const float third = 1.0f / 3.0f;
  t.points = {{0, {third, third, 1 - 2 * third}, kMm, 2 * kMm}, {3, {0.2f, 0.3f, 0.5f}, 0, kMm}};
  t.splats.positions[0] = (kVertices[0] + kVertices[1] + kVertices[2]) * third + Vec3{0, 0, -kMm};
  t.splats.positions[1] = kVertices[7] * 0.2f + kVertices[8] * 0.3f + kVertices[9] * 0.5f + Vec3{0, 0, -kMm};
  t.lips = {{3, 5}, {4, 6}};
  t.meshes = {bagMesh()};
  return t;
}

struct Package {
  fs::path dir;
  std::shared_ptr<GltfModel> model;
};

// The plain package (dir/plain) and the same with mouth_hidden.bin and the teeth (dir/mouth).
Package writePackages(const std::string& name) {
  Package p{test::tempDir(name), nullptr};
  p.model = std::make_shared<GltfModel>(writeFaceGltf(p.dir));
  Character c = Character::bindSplats(p.model, bodySplats());
  c.savePackage((p.dir / "plain").string());
  c.savePackage((p.dir / "mouth").string());
  writeMouthHidden((p.dir / "mouth").string(), hiddenOf());
  writeTeeth((p.dir / "mouth").string(), teethOf());
  return p;
}

// The frame at morph weight w (gap = w mm), head turned by `head` (local rotation of the head joint).
Character::Frame frameAt(const Character& c, float w, Quat head = {}) {
  Character::Controls controls;
  controls.morph = {w};
  controls.joint_rotations = {{c.model().skeleton().find("head"), head}};
  Character::Frame f;
  c.deform(-1, 0.0f, f, &controls);
  return f;
}

bool sameBits(const void* a, const void* b, size_t bytes) {
  return std::memcmp(a, b, bytes) == 0;
}

// The expression (the bound mesh's one morph target) that parts the lips by `mm` millimetres.
Expression lipsApart(float mm) {
  Expression e;
  e.space = "morph";
  e.weights = {mm};
  return e;
}

// `bytes` with the little-endian u32 at `at` replaced by `v`.
std::vector<uint8_t> patchedU32(std::vector<uint8_t> bytes, size_t at, uint32_t v) {
  std::memcpy(&bytes[at], &v, 4);
  return bytes;
}

float sizeOf(const Cov6& c, int k) {
  return decomposeCovariance(c).scale[k];
}

TEST(Mouth, SmoothstepAndTheHiddenRamp) {
  EXPECT_EQ(smoothstep(0.0005f, 0.002f, 0.0f), 0.0f);
  EXPECT_EQ(smoothstep(0.0005f, 0.002f, 0.0025f), 1.0f);
  // gap 1 mm: t = 0.5 / 1.5 = 1/3, ramp = (1/9)(3 - 2/3) = 7/27.
  EXPECT_NEAR(smoothstep(kHiddenRampStart, kHiddenRampEnd, kMm), 7.0f / 27.0f, 1e-6f);
  EXPECT_NEAR(smoothstep(kTeethGapStart, kTeethGapEnd, 4 * kMm), 0.5f, 1e-6f);
}

TEST(Mouth, HiddenPointsAgainstHandComputedValues) {
  const Package p = writePackages("MouthHidden");
  const Character plain = Character::loadPackage((p.dir / "plain").string());
  const Character mouth = Character::loadPackage((p.dir / "mouth").string());
  ASSERT_NE(mouth.mouthHidden(), nullptr);
  ASSERT_NE(mouth.teeth(), nullptr);
  EXPECT_EQ(plain.mouthHidden(), nullptr);

  // gap 0: the plug sits on the lips' midpoint (-10, 0, 10) mm, nothing fades, the lip band is untouched.
  Character::Frame base = frameAt(plain, 0), f = frameAt(mouth, 0);
  EXPECT_NEAR(lipGap(mouth, f, {0, 1, 0}, 3, 5), 0.0f, 1e-9f);
  EXPECT_TRUE(f.opacities.empty());
  EXPECT_TRUE(f.parts.empty()) << "no teeth with closed lips";
  EXPECT_NEAR(length(f.positions[0] - Vec3{-0.01f, 0, 0.01f}), 0.0f, 1e-7f);
  for (size_t i = 1; i < 4; ++i)
    EXPECT_TRUE(sameBits(&f.positions[i], &base.positions[i], sizeof(Vec3))) << i;
  EXPECT_TRUE(sameBits(f.covariances.data(), base.covariances.data(), 4 * sizeof(Cov6)));

  // gap 1 mm: ramp 7/27; the plug goes back 3 mm * smoothstep(0, 2, 1) + 1/4 mm = 1.75 mm.
  f = frameAt(mouth, 1);
  base = frameAt(plain, 1);
  EXPECT_NEAR(lipGap(mouth, f, {0, 1, 0}, 3, 5), kMm, 1e-7f);
  const float ramp1 = 7.0f / 27.0f;
  ASSERT_EQ(f.opacities.size(), 4u);
  EXPECT_NEAR(f.opacities[0], 0.8f * (1 - ramp1), 1e-6f);
  EXPECT_NEAR(f.opacities[1], 0.8f * (1 - ramp1), 1e-6f);
  EXPECT_EQ(f.opacities[2], 0.8f) << "the lip band never fades";
  EXPECT_EQ(f.opacities[3], 0.8f);
  EXPECT_NEAR(length(f.positions[0] - Vec3{-0.01f, 0, 0.01f - 1.75f * kMm}), 0.0f, 1e-7f);
  // The lip band's 4 mm size is capped toward 2.5 mm by the ramp: 4 - (7/27)(4 - 2.5) = 3.6111 mm.
  EXPECT_NEAR(sizeOf(f.covariances[2], 0), 4 * kMm - ramp1 * 1.5f * kMm, 1e-7f);
  EXPECT_NEAR(sizeOf(f.covariances[2], 1), 2 * kMm, 1e-7f);
  EXPECT_NEAR(sizeOf(f.covariances[2], 2), 1 * kMm, 1e-7f);
  EXPECT_TRUE(sameBits(&f.covariances[3], &base.covariances[3], sizeof(Cov6)));
  EXPECT_TRUE(f.parts.empty()) << "1 mm is below the teeth's ramp";

  // gap 3 mm: ramp 1, push 3 mm + 0.75 mm; sizes (2.5, 2, 1) mm.
  f = frameAt(mouth, 3);
  EXPECT_NEAR(f.opacities[0], 0.0f, 1e-7f);
  EXPECT_NEAR(f.opacities[1], 0.0f, 1e-7f);
  EXPECT_NEAR(length(f.positions[0] - Vec3{-0.01f, 0, 0.01f - 3.75f * kMm}), 0.0f, 1e-7f);
  EXPECT_NEAR(sizeOf(f.covariances[2], 0), 2.5f * kMm, 1e-7f);
  EXPECT_NEAR(sizeOf(f.covariances[2], 1), 2 * kMm, 1e-7f);
  EXPECT_TRUE(f.parts.empty() || f.parts[0].opacities[0] < 1e-6f) << "3 mm: the teeth ramp starts here";

  // A 90 degree turn of the head about x is not a parting: the gap is read along the turned up axis.
  const float h = 0.5f * 3.14159265f / 2;
  const Quat turn{std::cos(h), std::sin(h), 0, 0};  // (x, y, z) -> (x, -z, y)
  f = frameAt(mouth, 1, turn);
  EXPECT_NEAR(lipGap(mouth, f, {0, 1, 0}, 3, 5), kMm, 1e-6f);
  EXPECT_NEAR(f.opacities[0], 0.8f * (1 - ramp1), 1e-5f);
  EXPECT_NEAR(length(f.positions[0] - Vec3{-0.01f, -(0.01f - 1.75f * kMm), 0}), 0.0f, 1e-6f)
      << "pushed back along the turned forward";
}

TEST(Mouth, TeethFollowTheirTrianglesAndShowOnceTheLipsPart) {
  const Package p = writePackages("MouthTeeth");
  const Character mouth = Character::loadPackage((p.dir / "mouth").string());
  const Teeth& t = *mouth.teeth();
  ASSERT_EQ(t.splats.size(), 2u);
  // gap 4 mm: half the teeth opacity; point 0 at the centroid + 1 mm along +z - 2 mm along forward (+z).
  Character::Frame f = frameAt(mouth, 4);
  ASSERT_EQ(f.parts.size(), 1u);
  const Character::Part& teeth = f.parts[0];
  EXPECT_EQ(teeth.name, "teeth");
  ASSERT_EQ(teeth.positions.size(), 2u);
  EXPECT_NEAR(teeth.opacities[0], 0.45f, 1e-6f);
  const Vec3 centroid = (kVertices[0] + kVertices[1] + kVertices[2]) * (1.0f / 3.0f);
  EXPECT_NEAR(length(teeth.positions[0] - (centroid + Vec3{0, 0, -kMm})), 0.0f, 1e-7f);
  // Point 1 rides the jaw triangle, which the target lowered by 4 mm.
  const Vec3 jaw = kVertices[7] * 0.2f + kVertices[8] * 0.3f + kVertices[9] * 0.5f;
  EXPECT_NEAR(length(teeth.positions[1] - (jaw + Vec3{0, -4 * kMm, -kMm})), 0.0f, 1e-7f);
  // The teeth keep their rest covariance on a triangle that only translates.
  const Cov6 rest = covarianceFromScaleRotation(t.splats.scales[1], t.splats.rotations[1]);
  for (size_t k = 0; k < 6; ++k) EXPECT_NEAR(teeth.covariances[1][k], rest[k], 1e-12f);
  // The outline: upper lip left to right, then the lower lip back.
  ASSERT_EQ(teeth.outline.size(), 4u);
  EXPECT_NEAR(teeth.outline[0].y, 0.001f + 2 * kMm, 1e-7f);
  EXPECT_NEAR(teeth.outline[2].x, 0.01f, 1e-7f);
  EXPECT_NEAR(teeth.outline[2].y, -0.001f - 2 * kMm, 1e-7f);
  // gap 5 mm: full opacity; with the head turned the teeth turn with their triangle.
  f = frameAt(mouth, 5);
  EXPECT_NEAR(f.parts[0].opacities[1], 0.9f, 1e-6f);
  const float h = 0.5f * 3.14159265f / 2;
  Character::Frame turned = frameAt(mouth, 5, Quat{std::cos(h), std::sin(h), 0, 0});
  ASSERT_EQ(turned.parts.size(), 1u);
  for (size_t i = 0; i < 2; ++i) {
    const Vec3 a = f.parts[0].positions[i], b = turned.parts[0].positions[i];
    EXPECT_NEAR(length(b - Vec3{a.x, -a.z, a.y}), 0.0f, 1e-6f) << i;
  }
  // enabled = false: the character draws as the package without its mouth parts.
  Character off = mouth;
  off.enabledParts().teeth = false;
  off.enabledParts().mouth_hidden = false;
  const Character plain = Character::loadPackage((p.dir / "plain").string());
  const Character::Frame a = frameAt(off, 5), b = frameAt(plain, 5);
  EXPECT_TRUE(a.parts.empty());
  EXPECT_TRUE(a.opacities.empty());
  EXPECT_TRUE(sameBits(a.positions.data(), b.positions.data(), 4 * sizeof(Vec3)));
  EXPECT_TRUE(sameBits(a.covariances.data(), b.covariances.data(), 4 * sizeof(Cov6)));
}

TEST(Mouth, RimMaskPerSplatInPixels) {
  // A 200 x 200 px opening (x, y in [-0.1, 0.1] at z = 1, fx = 1000): a splat 5 px inside the left edge
  // keeps smoothstep(0, 10, 5) = 0.5 of its opacity at width 1024 and smoothstep(0, 20, 5) = 0.15625 at 2048.
  Character::Part teeth;
  teeth.outline = {{-0.1f, -0.1f, 1}, {0.1f, -0.1f, 1}, {0.1f, 0.1f, 1}, {-0.1f, 0.1f, 1}};
  teeth.positions = {{-0.095f, 0, 1}, {0, 0, 1}, {-0.2f, 0, 1}, {-0.0975f, 0.05f, 1}};
  for (int width : {1024, 2048}) {
    teeth.opacities = {1, 1, 1, 1};
    Camera cam;
    cam.width = width, cam.height = 1024, cam.fx = cam.fy = 1000, cam.cx = static_cast<float>(width) / 2,
    cam.cy = 512;
    applyTeethRim(teeth, cam, Mat4{});
    EXPECT_NEAR(teeth.opacities[0], width == 1024 ? 0.5f : 0.15625f, 1e-4f) << width;
    EXPECT_EQ(teeth.opacities[1], 1.0f) << "100 px inside";
    EXPECT_EQ(teeth.opacities[2], 0.0f) << "outside the opening";
    EXPECT_NEAR(teeth.opacities[3], width == 1024 ? 0.15625f : smoothstep(0, 20, 2.5f), 1e-4f)
        << "2.5 px inside";
  }
}

TEST(Mouth, WorldDrawsThePartsOnBothPaths) {
  const Package p = writePackages("MouthWorld");
  CharacterWorld world;
  world.spawn("a", (p.dir / "mouth").string(), Mat4{});
  world.setExpression("a", lipsApart(4));
  for (bool gpu : {false, true}) {
    std::vector<RenderObject> objs = world.renderObjects(gpu);
    ASSERT_EQ(objs.size(), 2u) << "body and teeth";
    EXPECT_TRUE(objs[0].dynamic);
    EXPECT_EQ(objs[0].positions.size(), 4u) << "CPU overrides on both paths";
    EXPECT_EQ(objs[0].deform, nullptr);
    EXPECT_NEAR(objs[0].cloud->opacities[0], 0.0f, 1e-6f) << "the plug has faded at 4 mm";
    EXPECT_EQ(objs[1].cloud->size(), 2u);
    EXPECT_NEAR(objs[1].cloud->opacities[0], 0.45f, 1e-6f);
    EXPECT_TRUE(objs[1].validate().empty()) << objs[1].validate();
  }
  // With the world's camera the rim applies: both teeth points project outside the 20 x 6 mm opening (the
  // head triangle's centroid 16.7 mm below the mouth, the jaw point 29 mm below), so both vanish.
  const Camera cam = lookAtCamera({0, 0, 0.3f}, {0, 0, 0}, {0, 1, 0}, 40, 48, 48);
  world.setCamera(cam);
  std::vector<RenderObject> seen = world.renderObjects(false);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].cloud->opacities[0], 0.0f);
  EXPECT_EQ(seen[1].cloud->opacities[1], 0.0f);
  const ImageRGBA img = renderCpu(seen, cam, RenderSettings{});
  EXPECT_EQ(img.width, 48);
}

TEST(Mouth, PackageEntriesAndInfo) {
  const Package p = writePackages("MouthEntries");
  const fs::path json = p.dir / "mouth/character.json";
  std::ifstream in(json);
  Json root = Json::parse(in);
  in.close();
  root["mouthHidden"] = {{"file", "mouth_hidden.bin"}, {"enabled", false}};
  std::ofstream(json) << root.dump(2);
  Character c = Character::loadPackage((p.dir / "mouth").string());
  EXPECT_FALSE(c.enabledParts().mouth_hidden);
  EXPECT_TRUE(c.enabledParts().teeth);
  const std::string text = describeParts(c, false);
  EXPECT_NE(text.find("mouth:       3 hidden splats: 1 plugs, 1 inside points, 1 lip band (disabled)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("teeth:       2 splats, 2 lip pairs"), std::string::npos) << text;
  EXPECT_NE(describeParts(c, true).find("\"lip_pairs\":2"), std::string::npos) << describeParts(c, true);
  root["mouthHidden"] = {{"file", "mouth_hidden.bin"}, {"sha256", "00"}};
  std::ofstream(json) << root.dump(2);
  EXPECT_NE(test::errorOf([&] {
              Character::loadPackage((p.dir / "mouth").string());
            }).find("mouthHidden: " + (p.dir / "mouth/mouth_hidden.bin").string() + ": SHA-256"),
            std::string::npos);
}

TEST(Mouth, HiddenFileRefusesEveryTruncationAndBadRecords) {
  const std::vector<uint8_t> bytes = encodeMouthHidden(hiddenOf());
  ASSERT_EQ(bytes.size(), kMouthHiddenHeaderBytes + 3 * kMouthHiddenRecordBytes);
  const MouthHidden back = decodeMouthHidden(bytes, "m.bin", 4, 10);
  ASSERT_EQ(back.splats.size(), 3u);
  EXPECT_EQ(back.splats[2].kind, HiddenKind::kLipBand);
  EXPECT_EQ(back.splats[1].lower, 6u);
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string why =
        test::errorOf([&] { decodeMouthHidden(std::span(bytes).first(n), "m.bin", 4, 10); });
    EXPECT_EQ(why.rfind("m.bin: byte ", 0), 0u) << "prefix " << n << ": " << why;
  }
  auto withU32 = [&](size_t at, uint32_t v) { return patchedU32(bytes, at, v); };
  auto expectError = [](const std::vector<uint8_t>& b, const std::string& what) {
    const std::string why = test::errorOf([&] { decodeMouthHidden(b, "m.bin", 4, 10); });
    EXPECT_NE(why.find(what), std::string::npos) << why;
  };
  expectError(withU32(8, 0xffffffffu), "m.bin: byte 8: 4294967295 records need 68719476720 bytes");
  expectError(withU32(36 + 16 + 4, 7), "m.bin: byte 56: record 1: kind 7 unknown");
  expectError(withU32(36 + 32, 4), "m.bin: byte 68: record 2: row 4 but the package has 4 splats");
  expectError(withU32(36 + 32, 0), "record 2: row 0 listed twice");
  expectError(withU32(36 + 12, 10),
              "m.bin: byte 48: record 0: lower lip vertex 10 but the bound mesh has 10 vertices");
  expectError(withU32(36 + 12, 3), "record 0: the upper and lower lip vertex are the same");
  expectError(withU32(12, 0x7fc00000u), "m.bin: byte 12: head up must be a finite, non-zero vector");
  std::vector<uint8_t> wrong = bytes;
  wrong[3] = 'X';
  expectError(wrong, "m.bin: byte 0: not a mouth_hidden file (magic AOSMHD01 expected)");
}

TEST(Mouth, TeethFilesRefuseTruncationBadRecordsAndBadJson) {
  const Teeth t = teethOf();
  const std::vector<uint8_t> bytes = encodeTeethPoints(t.points);
  ASSERT_EQ(bytes.size(), kTeethHeaderBytes + 2 * kTeethRecordBytes);
  EXPECT_EQ(decodeTeethPoints(bytes, "t.bin", 4)[1].triangle, 3u);
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string why = test::errorOf([&] { decodeTeethPoints(std::span(bytes).first(n), "t.bin", 4); });
    EXPECT_EQ(why.rfind("t.bin: byte ", 0), 0u) << "prefix " << n << ": " << why;
  }
  EXPECT_NE(test::errorOf([&] {
              decodeTeethPoints(bytes, "t.bin", 3);
            }).find("t.bin: byte 36: record 1: triangle 3 but the bound mesh has 3"),
            std::string::npos);
  std::vector<uint8_t> bad = bytes;
  const float two = 2;
  std::memcpy(&bad[12 + 4], &two, 4);
  EXPECT_NE(test::errorOf([&] {
              decodeTeethPoints(bad, "t.bin", 4);
            }).find("t.bin: byte 16: record 0: barycentrics must be finite and sum to 1"),
            std::string::npos);

  const Package p = writePackages("MouthTeethJson");
  const fs::path json = p.dir / "mouth/teeth.json";
  std::ifstream in(json);
  const Json good = Json::parse(in);
  in.close();
  auto expectError = [&](const Json& doc, const std::string& what) {
    std::ofstream(json) << doc.dump();
    const std::string why = test::errorOf([&] { Character::loadPackage((p.dir / "mouth").string()); });
    EXPECT_NE(why.find(what), std::string::npos) << why;
  };
  const std::string file = json.string();
  Json j = good;
  j["lips"][1][0] = 10;
  expectError(j, file + ": lips[1][0]: expected a vertex index in 0..9, got 10");
  j = good;
  j["format"] = "teeth";
  expectError(j, file + ": format: expected \"aosrig-splat-teeth\"");
  j = good;
  j["lips"] = {{3, 5}};
  expectError(j, file + ": lips: expected an array of at least two");
  j = good;
  j["lips"] = Json::array();
  for (int k = 0; k < 129; ++k) j["lips"].push_back({3, 5});
  expectError(j, file + ": lips: 129 lip pairs, at most 128");
  j = good;
  j["up"] = {0, "1", 0};
  expectError(j, file + ": up[1]: expected a number, got string");
  j = good;
  j["splats"]["sha256"] = "ab";
  expectError(j, file + ": splats.sha256: " + (p.dir / "mouth/teeth.ply").string() + ": SHA-256");
  j = good;
  j.erase("bindings");
  expectError(j, file + ": (root): missing key \"bindings\"");
  std::ofstream(json) << good.dump();
  EXPECT_NO_THROW(Character::loadPackage((p.dir / "mouth").string()));
}

TEST(Mouth, MouthMeshesRideTheirTrianglesAndAreMaskedByTheLipOpening) {
  const Package p = writePackages("MouthMeshes");
  const Character mouth = Character::loadPackage((p.dir / "mouth").string());
  ASSERT_EQ(mouth.teeth()->meshes.size(), 1u);
  EXPECT_TRUE(frameAt(mouth, 1).parts.empty()) << "1 mm: neither the teeth nor the meshes";
  Character::Frame f = frameAt(mouth, 4);
  ASSERT_EQ(f.parts.size(), 1u);
  const Character::Part& teeth = f.parts[0];
  ASSERT_EQ(teeth.meshes.size(), 1u);
  EXPECT_NEAR(teeth.mesh_opacity, 0.5f, 1e-6f) << "the teeth's ramp: half at 4 mm";
  const Character::Part::Mesh& bag = teeth.meshes[0];
  ASSERT_EQ(bag.positions.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {  // the head triangle does not move: the corners stay where they were bound
    EXPECT_NEAR(length(bag.positions[k] - kBagCorners[k]), 0.0f, 1e-7f) << k;
    EXPECT_NEAR(std::abs(bag.normals[k].z), 1.0f, 1e-6f) << k;
  }
  const std::vector<RenderMesh> meshes = mouthRenderMeshes(teeth, Mat4{});
  ASSERT_EQ(meshes.size(), 1u);
  const RenderMesh& m = meshes[0];
  EXPECT_EQ(m.shading, MeshShading::kCamera);
  EXPECT_NEAR(m.opacity, 0.5f, 1e-6f);
  EXPECT_EQ(m.mask.size(), 4u);
  EXPECT_FLOAT_EQ(m.mask_rim, 10.0f / 1024.0f);
  EXPECT_EQ(m.triangleCount(), 2u);
  EXPECT_TRUE(m.validate().empty()) << m.validate();
  // Seen from the front at 1024 px (fx = 512 / tan 20 deg = 1406.7 px): the opening, 20 x 6 mm at z = 10 mm,
  // is 97 x 29 px, so its centre is 14.5 px from the nearest lip (beyond the 10 px rim: coverage 1).
  // Pixels of the bag above the opening (25 px up: y = 5.4 mm on the bag, inside its 8 mm) are masked.
  const Camera cam = lookAtCamera({0, 0, 0.3f}, {0, 0, 0}, {0, 1, 0}, 40, 1024, 1024);
  const MeshLayer layer = rasterizeMeshes(meshes, cam);
  const size_t centre = 512 * 1024 + 512;
  EXPECT_NEAR(layer.depth[centre], 0.305f, 1e-4f);
  EXPECT_NEAR(layer.alpha[centre], 0.5f, 1e-6f);
  EXPECT_EQ(layer.depth[(512 - 25) * 1024 + 512], INFINITY) << "outside the lips: not drawn";
  EXPECT_EQ(layer.depth[(512 + 25) * 1024 + 512], INFINITY);
  // 5 px inside the upper lip (y = 14.5 - 5 px from the centre): smoothstep(0, 10, ~5) of the opacity.
  const float edge = layer.alpha[static_cast<size_t>(512 - 9) * 1024 + 512];
  EXPECT_GT(edge, 0.5f * 0.3f);
  EXPECT_LT(edge, 0.5f * 0.7f);
}

TEST(Mouth, WorldDrawsTheMouthMeshesLitFromTheCamera) {
  const Package p = writePackages("MouthMeshWorld");
  CharacterWorld world;
  world.spawn("a", (p.dir / "mouth").string(), Mat4{});
  world.setExpression("a", lipsApart(5));  // teeth and meshes at full opacity
  const Camera cam = lookAtCamera({0, 0, 0.3f}, {0, 0, 0}, {0, 1, 0}, 40, 1024, 1024);
  world.setCamera(cam);
  for (bool gpu : {false, true}) {
    std::vector<RenderMesh> meshes;
    const std::vector<RenderObject> objs = world.renderObjects(gpu, &meshes);
    ASSERT_EQ(objs.size(), 2u);
    ASSERT_EQ(meshes.size(), 1u);
    EXPECT_NEAR(meshes[0].opacity, 1.0f, 1e-6f);
    // At the opening's centre the bag faces the camera (shade 0.35 + 0.65 cos 0 = 1): its own colour,
    // sRGB-encoded, in front of the head's splats (z = -9 mm) and opaque there.
    const ImageRGBA img = renderCpu(objs, cam, RenderSettings{}, nullptr, meshes);
    const float* c = img.at(512, 512);
    EXPECT_NEAR(c[0], linearToSrgb(0.6f), 2e-3f);
    EXPECT_NEAR(c[1], linearToSrgb(0.1f), 2e-3f);
    EXPECT_NEAR(c[2], linearToSrgb(0.15f), 2e-3f);
    EXPECT_EQ(c[3], 1.0f);
  }
  // Closed lips: no meshes.
  world.setExpression("a", lipsApart(0));
  std::vector<RenderMesh> none;
  world.renderObjects(false, &none);
  EXPECT_TRUE(none.empty());
}

TEST(Mouth, MouthMeshFileRefusesTruncationAndBadRecords) {
  const MouthMesh bag = bagMesh();
  const std::vector<uint8_t> bytes = encodeMouthMeshes({&bag, 1});
  ASSERT_EQ(bytes.size(), 12u + 24 + 4 * 24 + 2 * 12);
  const std::vector<MouthMesh> back = decodeMouthMeshes(bytes, "mm.bin", 4);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].indices, bag.indices);
  EXPECT_EQ(back[0].color, bag.color);
  EXPECT_EQ(back[0].vertices[2].barycentrics, bag.vertices[2].barycentrics);
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string why = test::errorOf([&] { decodeMouthMeshes(std::span(bytes).first(n), "mm.bin", 4); });
    EXPECT_EQ(why.rfind("mm.bin: byte ", 0), 0u) << "prefix " << n << ": " << why;
  }
  auto with = [&](size_t at, uint32_t v) { return patchedU32(bytes, at, v); };
  auto expectError = [](const std::vector<uint8_t>& b, const std::string& what) {
    const std::string why = test::errorOf([&] { decodeMouthMeshes(b, "mm.bin", 4); });
    EXPECT_NE(why.find(what), std::string::npos) << why;
  };
  expectError(with(8, 0), "mm.bin: byte 8: 0 meshes (expected 1 to 16)");
  expectError(with(12, 0x40000000u), "mm.bin: byte 12: mesh 0: 1073741824 vertices (expected 3 to 1048576)");
  expectError(
      with(12, 1000),
      "mm.bin: byte 36: mesh 0: 1000 vertices and 2 triangles need 24024 bytes, 120 are left (truncated)");
  expectError(with(16, 0), "mm.bin: byte 16: mesh 0: no triangles");
  float two = 2;
  uint32_t two_bits;
  std::memcpy(&two_bits, &two, 4);
  expectError(with(20, two_bits), "mm.bin: byte 20: mesh 0: colour components must be in [0, 1]");
  expectError(with(28, two_bits), "mm.bin: byte 28: mesh 0: colour components must be in [0, 1]");
  expectError(with(36 + 24, 9), "mm.bin: byte 60: mesh 0: vertex 1: triangle 9 but the bound mesh has 4");
  expectError(with(36 + 96 + 20, 4), "mm.bin: byte 152: mesh 0: triangle 1: vertex 4 but the mesh has 4");
  std::vector<uint8_t> trailing = bytes;
  trailing.push_back(0);
  expectError(trailing, "mm.bin: byte 156: 1 trailing bytes after the last mesh");
  std::vector<uint8_t> wrong = bytes;
  wrong[4] = 'X';
  expectError(wrong, "mm.bin: byte 0: not a mouth meshes file (magic AOSMMS01 expected)");
  // teeth.json names it with its SHA-256: a changed file is refused naming the entry; info counts it.
  const Package p = writePackages("MouthMeshJson");
  const Character c = Character::loadPackage((p.dir / "mouth").string());
  EXPECT_NE(describeParts(c, false).find(
                "teeth:       2 splats, 2 lip pairs, 1 mouth meshes (4 vertices, 2 triangles)"),
            std::string::npos)
      << describeParts(c, false);
  EXPECT_NE(describeParts(c, true).find("\"meshes\":[{\"triangles\":2,\"vertices\":4}]"), std::string::npos)
      << describeParts(c, true);
  const std::vector<uint8_t> changed = with(20, 0);
  writeFileAtomic((p.dir / "mouth/mouth_meshes.bin").string(), changed);
  const std::string why = test::errorOf([&] { Character::loadPackage((p.dir / "mouth").string()); });
  EXPECT_NE(
      why.find("teeth.json: meshes.sha256: " + (p.dir / "mouth/mouth_meshes.bin").string() + ": SHA-256"),
      std::string::npos)
      << why;
}

// End to end through the CLI: a script spawns the package and parts its lips by 5 mm; `render` draws the
// mouth bag in the opening, lit from the camera (the bag's own colour at the centre), and `character info`
// counts the meshes.
TEST(Mouth, RenderCliDrawsTheMouthMeshesOfAScriptedCharacter) {
  const Package p = writePackages("MouthCli");
  const fs::path scene = p.dir / "scene.json";
  std::ofstream(scene) << R"({"script": [
    {"t": 0, "command": "spawn-character", "id": "a", "package": "mouth"},
    {"t": 0, "command": "set-expression", "id": "a", "space": "morph", "weights": [5]}],
    "camera": {"eye": [0, 0, 0.3], "target": [0, 0, 0], "up": [0, 1, 0], "fov_y_deg": 40, "width": 256, "height": 256}})";
  std::string out;
  for (const char* backend : {"cpu", "vulkan"}) {
    const std::string png = (p.dir / (std::string(backend) + ".png")).string();
    ASSERT_EQ(test::runCli("render " + scene.string() + " --backend " + backend + " -o " + png, &out), 0)
        << out;
    const ImageRGBA img = readPng(png);
    ASSERT_EQ(img.width, 256);
    const float* c = img.at(128, 128);
    EXPECT_NEAR(c[0], linearToSrgb(0.6f), 3.0f / 255.0f) << backend;
    EXPECT_NEAR(c[1], linearToSrgb(0.1f), 3.0f / 255.0f) << backend;
    EXPECT_NEAR(c[2], linearToSrgb(0.15f), 3.0f / 255.0f) << backend;
  }
  ASSERT_EQ(test::runCli("character info " + (p.dir / "mouth").string(), &out), 0) << out;
  EXPECT_NE(out.find("1 mouth meshes (4 vertices, 2 triangles)"), std::string::npos) << out;
}

}  // namespace
}  // namespace sf::character
