// Pose correctives (character/corrective.h) on a tiny package built here: a torso quad skinned to a spine
// joint with two arms (upper arm -> lower arm, hanging at rest) and a "raise" clip lifting the left arm
// 180 degrees over a second. The drive angle for known arm poses (hanging 0, horizontal 90, raised 180;
// a torso lean not counted), w at from / mid / to, fades and new points against hand-computed values,
// all-zero weights drawing bit-identically the package without corrective/, enabled = false, character.json's
// entry, every truncated prefix of the binary files refused, and index.json refused naming the JSON path.
#include "character/corrective.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "character/character.h"
#include "character/gltf_bytes.h"
#include "character/world.h"
#include "core/error.h"
#include "core/sha256.h"
#include "io/file.h"
#include "support/test_support.h"

namespace sf::character {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr float kPi = 3.14159265358979f;

using test::GltfBytes;

// Nodes: 0 body (mesh, skin), 1 spine at (0, 1, 0), 2 upperarm_l at (0.2, 1.4, 0), 3 lowerarm_l 0.3 m below
// it, 4 upperarm_r at (-0.2, 1.4, 0), 5 lowerarm_r. Skin joints [1, 2, 3, 4, 5]; the quad is weighted to the
// spine.
std::string writeBodyGltf(const fs::path& dir) {
  GltfBytes g;
  const Vec3 quad[4] = {{-0.15f, 0.9f, 0}, {0.15f, 0.9f, 0}, {0.15f, 1.5f, 0}, {-0.15f, 1.5f, 0}};
  const uint32_t idx[6] = {0, 1, 2, 0, 2, 3};
  uint8_t joints[16] = {};
  float weights[16] = {};
  for (int v = 0; v < 4; ++v) weights[v * 4] = 1;
  const Vec3 world[5] = {{0, 1, 0}, {0.2f, 1.4f, 0}, {0.2f, 1.1f, 0}, {-0.2f, 1.4f, 0}, {-0.2f, 1.1f, 0}};
  float ibm[5 * 16] = {};
  for (int j = 0; j < 5; ++j) {  // column-major inverse translations
    float* m = ibm + j * 16;
    m[0] = m[5] = m[10] = m[15] = 1;
    m[12] = -world[j].x, m[13] = -world[j].y, m[14] = -world[j].z;
  }
  const float times[2] = {0, 1};
  const float rotations[8] = {0, 0, 0, 1, 0, 0, 1, 0};  // identity, then 180 degrees about z (x, y, z, w)
  const int pos = g.add(quad, sizeof quad, 5126, 4, "VEC3");
  const int jnt = g.add(joints, sizeof joints, 5121, 4, "VEC4");
  const int wgt = g.add(weights, sizeof weights, 5126, 4, "VEC4");
  const int ind = g.add(idx, sizeof idx, 5125, 6, "SCALAR");
  const int inv = g.add(ibm, sizeof ibm, 5126, 5, "MAT4");
  const int in = g.add(times, sizeof times, 5126, 2, "SCALAR");
  const int out = g.add(rotations, sizeof rotations, 5126, 2, "VEC4");
  g.accessors[static_cast<size_t>(in)]["min"] = {0};
  g.accessors[static_cast<size_t>(in)]["max"] = {1};
  Json doc = {{"asset", {{"version", "2.0"}}},
              {"scene", 0},
              {"scenes", {{{"nodes", {0, 1}}}}},
              {"nodes",
               {{{"name", "body"}, {"mesh", 0}, {"skin", 0}},
                {{"name", "spine"}, {"translation", {0, 1, 0}}, {"children", {2, 4}}},
                {{"name", "upperarm_l"}, {"translation", {0.2, 0.4, 0}}, {"children", {3}}},
                {{"name", "lowerarm_l"}, {"translation", {0, -0.3, 0}}},
                {{"name", "upperarm_r"}, {"translation", {-0.2, 0.4, 0}}, {"children", {5}}},
                {{"name", "lowerarm_r"}, {"translation", {0, -0.3, 0}}}}},
              {"meshes",
               {{{"primitives",
                  {{{"attributes", {{"POSITION", pos}, {"JOINTS_0", jnt}, {"WEIGHTS_0", wgt}}},
                    {"indices", ind}}}}}}},
              {"skins", {{{"joints", {1, 2, 3, 4, 5}}, {"inverseBindMatrices", inv}}}},
              {"animations",
               {{{"name", "raise"},
                 {"channels", {{{"sampler", 0}, {"target", {{"node", 2}, {"path", "rotation"}}}}}},
                 {"samplers", {{{"input", in}, {"output", out}, {"interpolation", "LINEAR"}}}}}}},
              {"accessors", g.accessors},
              {"bufferViews", g.views},
              {"buffers",
               {{{"byteLength", g.bin.size()},
                 {"uri", "data:application/octet-stream;base64," + test::encodeBase64(g.bin)}}}}};
  const std::string path = (dir / "body.gltf").string();
  std::ofstream(path) << doc.dump();
  return path;
}

// Four splats on the torso, opacity 0.8.
GaussianCloud torsoSplats() {
  GaussianCloud c;
  c.resize(4, 0);
  const Vec3 at[4] = {
      {-0.05f, 1.0f, 0.001f}, {0.05f, 1.0f, 0.001f}, {-0.05f, 1.4f, 0.001f}, {0.05f, 1.4f, 0.001f}};
  for (size_t i = 0; i < 4; ++i)
    c.positions[i] = at[i], c.scales[i] = {0.02f, 0.02f, 0.002f}, c.opacities[i] = 0.8f;
  return c;
}

// One correction: the left drive by joint names, the right by skin joint indices (3, 4; frame 0 = spine),
// both from 90 to 150 degrees. fade (1, 0.25, 0.5, 0), sides (0, 0, 1, 1); two new points (opacity 0.6),
// one on each upper arm.
Corrective correctiveOf() {
  Corrective c;
  Correction& k = c.corrections.emplace_back();
  k.name = "arms_up";
  k.drives[0].side = 0;
  k.drives[0].bone = {JointRef{"upperarm_l", -1}, JointRef{"lowerarm_l", -1}};
  k.drives[0].frame = JointRef{"spine", -1};
  k.drives[1].side = 1;
  k.drives[1].bone = {JointRef{"", 3}, JointRef{"", 4}};
  k.drives[1].frame = JointRef{"", 0};
  for (CorrectiveDrive& d : k.drives) d.from_deg = 90, d.to_deg = 150, d.rest_deg = 0;
  k.fade = {1, 0.25f, 0.5f, 0};
  k.side = {0, 0, 1, 1};
  k.points.resize(2, 0);
  k.points.positions = {{0.2f, 1.3f, 0.02f}, {-0.2f, 1.3f, 0.02f}};
  for (size_t i = 0; i < 2; ++i) k.points.scales[i] = {0.01f, 0.01f, 0.01f}, k.points.opacities[i] = 0.6f;
  const Cov6 cov = covarianceFromScaleRotation({0.01f, 0.01f, 0.01f}, Quat{});
  k.point_bindings = {bindToJoints(k.points.positions[0], cov, {1, 0, 0, 0}, {1, 0, 0, 0}),
                      bindToJoints(k.points.positions[1], cov, {3, 0, 0, 0}, {1, 0, 0, 0})};
  k.point_side = {0, 1};
  return c;
}

struct Packages {
  fs::path dir;
  std::string plain, with;
};

Packages writePackages(const std::string& name) {
  Packages p{test::tempDir(name), "", ""};
  Character c = Character::bindSplats(std::make_shared<GltfModel>(writeBodyGltf(p.dir)), torsoSplats());
  p.plain = (p.dir / "plain").string();
  p.with = (p.dir / "with").string();
  c.savePackage(p.plain);
  c.savePackage(p.with);
  writeCorrective(p.with, correctiveOf());
  return p;
}

Quat aboutAxis(Vec3 axis, float deg) {
  const float h = 0.5f * deg * kPi / 180;
  return {std::cos(h), axis.x * std::sin(h), axis.y * std::sin(h), axis.z * std::sin(h)};
}

// The left arm raised by `left` degrees, the right by `right` (each out to its side), the torso leaning
// forward by `lean` degrees.
Character::Frame posed(const Character& c, float left, float right, float lean = 0) {
  const anim::Skeleton& sk = c.model().skeleton();
  Character::Controls controls;
  controls.joint_rotations = {{sk.find("upperarm_l"), aboutAxis({0, 0, 1}, left)},
                              {sk.find("upperarm_r"), aboutAxis({0, 0, 1}, -right)},
                              {sk.find("spine"), aboutAxis({1, 0, 0}, lean)}};
  Character::Frame f;
  c.deform(-1, 0.0f, f, &controls);
  return f;
}

bool sameBits(const void* a, const void* b, size_t bytes) {
  return std::memcmp(a, b, bytes) == 0;
}

TEST(Corrective, DriveAngleOfKnownArmPoses) {
  const Packages p = writePackages("CorrectiveAngle");
  const Character c = Character::loadPackage(p.with);
  ASSERT_NE(c.corrective(), nullptr);
  const Correction& k = c.corrective()->corrections[0];
  for (float lean : {0.0f, 30.0f, -45.0f})
    for (float a : {0.0f, 45.0f, 90.0f, 120.0f, 180.0f}) {
      const Character::Frame f = posed(c, a, a, lean);
      const float tol = a == 0 || a == 180 ? 0.05f : 1e-3f;  // acos is steep at +-1
      EXPECT_NEAR(driveAngle(k.drives[0], f.pose), a, tol) << "left, lean " << lean;
      EXPECT_NEAR(driveAngle(k.drives[1], f.pose), a, tol) << "right, lean " << lean;
    }
  // The lean would count without the frame joint: read in the world, a hanging arm under a 30 degree lean
  // is 30 degrees from hanging.
  const Character::Frame f = posed(c, 0, 0, 30);
  const anim::Skeleton& sk = c.model().skeleton();
  const Vec3 d = normalize(f.pose.models[static_cast<size_t>(sk.find("lowerarm_l"))].translation() -
                           f.pose.models[static_cast<size_t>(sk.find("upperarm_l"))].translation());
  EXPECT_NEAR(std::acos(-d.y) * 180 / kPi, 30.0f, 1e-3f);
  EXPECT_NEAR(driveAngle(k.drives[0], f.pose), 0.0f, 0.05f);
}

TEST(Corrective, WeightAtFromMidAndTo) {
  CorrectiveDrive d;
  d.from_deg = 90, d.to_deg = 150;
  EXPECT_EQ(driveWeight(d, 60), 0.0f);
  EXPECT_EQ(driveWeight(d, 90), 0.0f);
  EXPECT_EQ(driveWeight(d, 105), 0.15625f);  // t = 1/4: t^2 (3 - 2t) = 5/32
  EXPECT_EQ(driveWeight(d, 120), 0.5f);
  EXPECT_EQ(driveWeight(d, 150), 1.0f);
  EXPECT_EQ(driveWeight(d, 170), 1.0f);
  const Packages p = writePackages("CorrectiveWeight");
  const Character c = Character::loadPackage(p.with);
  const CorrectiveWeights w = correctiveWeights(*c.corrective(), posed(c, 120, 105).pose);
  EXPECT_NEAR(w.weight[0], 0.5f, 1e-4f);
  EXPECT_NEAR(w.weight[1], 0.15625f, 1e-4f);
  EXPECT_EQ(w.weight[2], 0.0f);
  EXPECT_EQ(w.weight[3], 0.0f);
}

TEST(Corrective, FadesAndNewPointsAgainstHandComputedValues) {
  const Packages p = writePackages("CorrectiveApply");
  const Character c = Character::loadPackage(p.with);
  // Left at 160 degrees (w = 1), right at 120 (w = 0.5).
  const Character::Frame f = posed(c, 160, 120);
  ASSERT_EQ(f.opacities.size(), 4u);
  EXPECT_NEAR(f.opacities[0], 0.8f, 1e-6f);                      // fade 1: 0.8 (1 - 1 * 0)
  EXPECT_NEAR(f.opacities[1], 0.8f * 0.25f, 1e-6f);              // 0.8 (1 - 1 * 0.75)
  EXPECT_NEAR(f.opacities[2], 0.8f * (1 - 0.5f * 0.5f), 1e-4f);  // side 1, w 0.5, fade 0.5
  EXPECT_NEAR(f.opacities[3], 0.8f * 0.5f, 1e-4f);               // fade 0
  ASSERT_EQ(f.parts.size(), 1u);
  const Character::Part& part = f.parts[0];
  EXPECT_EQ(part.name, "corrective arms_up");
  EXPECT_NEAR(part.opacities[0], 0.6f, 1e-6f);
  EXPECT_NEAR(part.opacities[1], 0.3f, 1e-4f);
  // Point 0 rides the left upper arm: (0, -0.1, 0.02) from its joint, turned 160 degrees about z.
  const float s = std::sin(160 * kPi / 180), co = std::cos(160 * kPi / 180);
  EXPECT_NEAR(length(part.positions[0] - Vec3{0.2f + 0.1f * s, 1.4f - 0.1f * co, 0.02f}), 0.0f, 1e-5f);
  // Existing splats do not move.
  const Character plain = Character::loadPackage(p.plain);
  const Character::Frame g = posed(plain, 160, 120);
  EXPECT_TRUE(sameBits(f.positions.data(), g.positions.data(), 4 * sizeof(Vec3)));
}

TEST(Corrective, AllZeroWeightsDrawTheFrameOfThePackageWithout) {
  const Packages p = writePackages("CorrectiveZero");
  const Character plain = Character::loadPackage(p.plain), with = Character::loadPackage(p.with);
  for (float a : {0.0f, 60.0f, 89.0f}) {
    const Character::Frame f = posed(with, a, a, 20), g = posed(plain, a, a, 20);
    EXPECT_TRUE(f.opacities.empty()) << a;
    EXPECT_TRUE(f.parts.empty()) << a;
    EXPECT_TRUE(sameBits(f.positions.data(), g.positions.data(), 4 * sizeof(Vec3))) << a;
    EXPECT_TRUE(sameBits(f.covariances.data(), g.covariances.data(), 4 * sizeof(Cov6))) << a;
    EXPECT_FALSE(with.partsActive(f));
  }
  // Through the world and the CPU renderer: same objects, same image bit for bit, at rest and at 0.2 s of
  // "raise" (36 degrees); at 0.8 s (144 degrees) the correction shows.
  const Camera cam = lookAtCamera({0, 1.2f, 2.0f}, {0, 1.2f, 0}, {0, 1, 0}, 50, 64, 64);
  CharacterWorld a, b;
  a.spawn("x", p.plain, Mat4{}, "raise");
  b.spawn("x", p.with, Mat4{}, "raise");
  for (float t : {0.0f, 0.2f}) {
    if (t > 0) a.update(t), b.update(t);
    const std::vector<RenderObject> oa = a.renderObjects(false), ob = b.renderObjects(false);
    ASSERT_EQ(ob.size(), 1u);
    EXPECT_FALSE(ob[0].dynamic);
    const ImageRGBA ia = renderCpu(oa, cam, RenderSettings{}), ib = renderCpu(ob, cam, RenderSettings{});
    ASSERT_EQ(ia.pixels.size(), ib.pixels.size());
    EXPECT_TRUE(sameBits(ia.pixels.data(), ib.pixels.data(), ia.pixels.size() * sizeof(float)))
        << "t = " << t;
    const std::vector<RenderObject> gpu = b.renderObjects(true);
    ASSERT_EQ(gpu.size(), 1u);
    EXPECT_NE(gpu[0].deform, nullptr) << "zero weights keep the GPU deform path";
  }
  a.update(0.6f), b.update(0.6f);
  const std::vector<RenderObject> active = b.renderObjects(true);
  ASSERT_EQ(active.size(), 2u) << "body and the new points";
  EXPECT_EQ(active[0].deform, nullptr) << "an active frame is deformed on the CPU";
  EXPECT_EQ(active[0].positions.size(), 4u);
  EXPECT_TRUE(active[0].dynamic);
  EXPECT_TRUE(active[1].dynamic);
  EXPECT_TRUE(active[1].validate().empty());
  EXPECT_LT(active[0].cloud->opacities[1], 0.8f);
  const ImageRGBA ia = renderCpu(a.renderObjects(false), cam, RenderSettings{}),
                  ib = renderCpu(b.renderObjects(false), cam, RenderSettings{});
  EXPECT_FALSE(sameBits(ia.pixels.data(), ib.pixels.data(), ia.pixels.size() * sizeof(float)));
  // enabled = false: the package without the folder, at 160 degrees too.
  Character off = Character::loadPackage(p.with);
  off.enabledParts().corrective = false;
  const Character::Frame f = posed(off, 160, 160), g = posed(Character::loadPackage(p.plain), 160, 160);
  EXPECT_TRUE(f.opacities.empty());
  EXPECT_TRUE(f.parts.empty());
  EXPECT_TRUE(sameBits(f.positions.data(), g.positions.data(), 4 * sizeof(Vec3)));
}

TEST(Corrective, CharacterJsonEntryAndInfo) {
  const Packages p = writePackages("CorrectiveEntry");
  const fs::path json = fs::path(p.with) / "character.json";
  std::ifstream in(json);
  Json root = Json::parse(in);
  in.close();
  // The folder is found without an entry; an entry is verified when it gives a hash.
  fs::rename(fs::path(p.with) / "corrective", fs::path(p.with) / "fix");
  const std::vector<uint8_t> index = readFile((fs::path(p.with) / "fix/index.json").string());
  root["corrective"] = {{"index", "fix/index.json"}, {"sha256", sha256Hex(index)}, {"enabled", false}};
  std::ofstream(json) << root.dump(2);
  Character c = Character::loadPackage(p.with);
  ASSERT_NE(c.corrective(), nullptr);
  EXPECT_FALSE(c.enabledParts().corrective);
  const std::string text = describeParts(c, false);
  EXPECT_NE(text.find("corrective:  arms_up: 2 new points (disabled); left 0.00 deg at rest (file 0.00), "
                      "weight 0.00 (90.00 to 150.00 deg); right 0.00"),
            std::string::npos)
      << text;
  EXPECT_NE(describeParts(c, true).find("\"weight_at_rest\":0.0"), std::string::npos)
      << describeParts(c, true);
  root["corrective"]["sha256"] = "00";
  std::ofstream(json) << root.dump(2);
  EXPECT_NE(
      test::errorOf([&] {
        Character::loadPackage(p.with);
      }).find("character.json: corrective: " + (fs::path(p.with) / "fix/index.json").string() + ": SHA-256"),
      std::string::npos);
  root["corrective"] = {{"index", "../elsewhere.json"}};
  std::ofstream(json) << root.dump(2);
  EXPECT_NE(test::errorOf([&] {
              Character::loadPackage(p.with);
            }).find("character.json: corrective.index: '../elsewhere.json' must be"),
            std::string::npos);
}

TEST(Corrective, EveryTruncatedPrefixOfTheBinaryFilesIsRefused) {
  const std::vector<float> fade = {1, 0.25f, 0.5f, 0};
  const std::vector<uint8_t> fb = encodeFade(fade), sides = {0, 1, 1, 0};
  ASSERT_EQ(fb.size(), 8u);
  EXPECT_EQ(decodeFade(fb, "fade.bin", 4), fade);
  for (size_t n = 0; n < fb.size(); ++n)
    EXPECT_EQ(
        test::errorOf([&] { decodeFade(std::span(fb).first(n), "fade.bin", 4); }).rfind("fade.bin: byte ", 0),
        0u)
        << n;
  for (size_t n = 0; n < sides.size(); ++n)
    EXPECT_EQ(test::errorOf([&] {
                decodeSides(std::span(sides).first(n), "side.bin", 4);
              }).rfind("side.bin: byte ", 0),
              0u)
        << n;
  EXPECT_NE(test::errorOf([&] {
              decodeFade(fb, "fade.bin", 3);
            }).find("fade.bin: byte 6: 3 values need 6 bytes, the file has 8 (trailing bytes)"),
            std::string::npos);
  std::vector<uint8_t> bad = fb;
  bad[5] = 0x7c;  // value 2 becomes infinity
  EXPECT_NE(test::errorOf([&] {
              decodeFade(bad, "fade.bin", 4);
            }).find("fade.bin: byte 4: splat 2: fade inf is not an opacity factor"),
            std::string::npos);
  EXPECT_NE(test::errorOf([&] {
              decodeSides(std::vector<uint8_t>{0, 2}, "side.bin", 2);
            }).find("side.bin: byte 1: splat 1: side 2"),
            std::string::npos);

  // Through the reader: every prefix of each of the five files (the index without hashes, so the decoders
  // see the short files), each refused naming the file.
  const Packages p = writePackages("CorrectiveTruncated");
  const Character plain = Character::loadPackage(p.plain);
  const fs::path dir = fs::path(p.with) / "corrective";
  std::ifstream in(dir / "index.json");
  Json index = Json::parse(in);
  in.close();
  for (auto& [key, entry] : index["corrections"][0]["files"].items()) entry.erase("sha256");
  std::ofstream(dir / "index.json") << index.dump(2);
  EXPECT_EQ(readCorrective((dir / "index.json").string(), plain).corrections[0].points.size(), 2u);
  for (const char* name : {"fade.bin", "side.bin", "points.ply", "points_bindings.bin", "points_side.bin"}) {
    const std::string path = (dir / "0" / name).string();
    const std::vector<uint8_t> whole = readFile(path);
    for (size_t n = 0; n < whole.size(); ++n) {
      writeFileAtomic(path, std::span(whole).first(n));
      const std::string why = test::errorOf([&] { readCorrective((dir / "index.json").string(), plain); });
      EXPECT_NE(why.find(path), std::string::npos) << name << " prefix " << n << ": " << why;
    }
    writeFileAtomic(path, whole);
  }
  EXPECT_NO_THROW(readCorrective((dir / "index.json").string(), plain));
}

TEST(Corrective, BadIndexJsonIsRefusedNamingTheJsonPath) {
  const Packages p = writePackages("CorrectiveJson");
  const Character plain = Character::loadPackage(p.plain);
  const fs::path path = fs::path(p.with) / "corrective/index.json";
  std::ifstream in(path);
  const Json good = Json::parse(in);
  in.close();
  const std::string file = path.string();
  auto expectError = [&](const Json& doc, const std::string& what) {
    std::ofstream(path) << doc.dump();
    const std::string why = test::errorOf([&] { readCorrective(file, plain); });
    EXPECT_NE(why.find(file + ": " + what), std::string::npos) << why;
  };
  Json j = good;
  j["format"] = "corrective";
  expectError(j, "format: expected \"aosrig-splat-corrective\"");
  j = good;
  j["version"] = 2;
  expectError(j, "version: 2 unsupported (expected 1)");
  j = good;
  j["corrections"][0]["drives"][1]["fromDeg"] = "ninety";
  expectError(j, "corrections[0].drives[1].fromDeg: expected a number, got string");
  j = good;
  j["corrections"][0]["drives"][0]["toDeg"] = 200;
  expectError(j, "corrections[0].drives[0].toDeg: expected degrees in 0..180, got 200");
  j = good;
  j["corrections"][0]["drives"][0]["curve"] = "linear";
  expectError(j, "corrections[0].drives[0].curve: \"linear\" unknown (expected \"smoothstep\")");
  j = good;
  j["corrections"][0]["drives"][0]["bone"][1] = "nope";
  expectError(j, "corrections[0].drives[0].bone[1]: joint 'nope' is not in the skeleton");
  j = good;
  j["corrections"][0]["drives"][1]["frame"] = 99;
  expectError(j, "corrections[0].drives[1].frame: skin joint index 99 but the skin has 5 joints");
  j = good;
  j["corrections"][0]["drives"][1]["side"] = 0;
  expectError(j, "corrections[0].drives[1].side: both drives take side 0");
  j = good;
  j["corrections"][0]["splatCount"] = 5;
  expectError(j, "corrections[0].splatCount: 5 but the package has 4 splats");
  j = good;
  j["corrections"][0]["points"] = 3;
  expectError(j, "corrections[0].points: 3 but");
  j = good;
  j["corrections"][0]["files"].erase("pointsSide");
  expectError(j, "corrections[0].files: missing key \"pointsSide\"");
  j = good;
  j["corrections"][0]["files"]["fade"]["file"] = "/etc/passwd";
  expectError(j, "corrections[0].files.fade.file: '/etc/passwd' must be a relative path");
  j = good;
  j["corrections"][0]["files"]["side"]["sha256"] = "ab";
  expectError(j, "corrections[0].files.side.sha256: ");
  j = good;
  j["corrections"] = {good["corrections"][0], good["corrections"][0], good["corrections"][0]};
  expectError(j, "corrections: 3 corrections; at most 2 play");
  std::ofstream(path) << "{\"format\": ";
  EXPECT_NE(test::errorOf([&] { readCorrective(file, plain); }).find(file), std::string::npos);
  std::ofstream(path) << good.dump();
  EXPECT_NO_THROW(readCorrective(file, plain));
}

}  // namespace
}  // namespace sf::character
