// Splat characters: the binding math against analytic motions (rigid, stretch, joints), the
// nearest-triangle search against brute force, bindings.bin round trip and errors, cesium_man as a splat
// character (every splat stays on the skinned surface at several clip times), and packages (round trip,
// hash mismatch, missing file, count mismatch).
#include "character/character.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "character/binding.h"
#include "core/error.h"
#include "core/sha256.h"
#include "io/file.h"
#include "support/test_support.h"

namespace sf::character {
namespace {

namespace fs = std::filesystem;

Mat3 toMat(const Cov6& c) {
  return covarianceMatrix(c);
}

void expectCovNear(const Cov6& a, const Mat3& b, float tol) {
  const Mat3 m = toMat(a);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(m.m[r][c], b.m[r][c], tol) << r << "," << c;
}

struct Deformed {
  Vec3 centre;
  Cov6 cov;
};

Deformed deformOne(const SplatBinding& b, const Vec3 tri[3], std::span<const Mat4> palette = {}) {
  const uint32_t idx[3] = {0, 1, 2};
  Vec3 pos;
  Cov6 cov;
  DeformJob job;
  job.bindings = {&b, 1};
  job.vertices = {tri, 3};
  job.indices = idx;
  job.palette = palette;
  job.out_positions = {&pos, 1};
  job.out_covariances = {&cov, 1};
  job.run();
  return {pos, cov};
}

TEST(Sha256, KnownVectors) {
  auto hex = [](const std::string& s) {
    return sha256Hex({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  };
  EXPECT_EQ(hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Binding, RigidMotionMovesSplatsRigidly) {
  const Vec3 tri[3] = {{0.1f, 0.2f, 0.3f}, {0.5f, 0.25f, 0.2f}, {0.2f, 0.7f, 0.35f}};
  const Vec3 centre{0.3f, 0.35f, 0.42f};  // off the surface
  const Cov6 cov =
      covarianceFromScaleRotation({0.05f, 0.02f, 0.01f}, normalize(Quat{0.9f, 0.2f, -0.3f, 0.1f}));
  const SplatBinding b = bindToTriangle(centre, cov, 0, tri[0], tri[1], tri[2]);
  // At rest the binding reproduces the splat.
  Deformed rest = deformOne(b, tri);
  EXPECT_NEAR(length(rest.centre - centre), 0.0f, 1e-6f);
  expectCovNear(rest.cov, toMat(cov), 1e-8f);
  const Mat3 r = rotationMatrix(normalize(Quat{0.3f, -0.5f, 0.7f, 0.2f}));
  const Vec3 t{1.5f, -0.4f, 2.0f};
  Vec3 moved[3];
  for (int k = 0; k < 3; ++k) moved[k] = r * tri[k] + t;
  Deformed d = deformOne(b, moved);
  const Vec3 expected = r * centre + t;
  EXPECT_NEAR(length(d.centre - expected), 0.0f, 2e-6f);
  expectCovNear(d.cov, r * toMat(cov) * transpose(r), 1e-7f);
}

TEST(Binding, StretchScalesTheCovarianceByTheTriangleDeformationGradient) {
  // Triangle in the z = 0 plane: stretching x by s gives F = diag(s, 1, sqrt(s)) (the normal column grows
  // with the square root of the area).
  const Vec3 tri[3] = {{0, 0, 0}, {0.4f, 0, 0}, {0.1f, 0.3f, 0}};
  const Vec3 centre{0.15f, 0.1f, 0.02f};
  const Cov6 cov =
      covarianceFromScaleRotation({0.03f, 0.02f, 0.005f}, normalize(Quat{0.8f, 0.1f, 0.4f, -0.2f}));
  const SplatBinding b = bindToTriangle(centre, cov, 0, tri[0], tri[1], tri[2]);
  for (float s : {0.5f, 1.7f, 3.0f}) {
    Vec3 stretched[3];
    for (int k = 0; k < 3; ++k) stretched[k] = {tri[k].x * s, tri[k].y, tri[k].z};
    Deformed d = deformOne(b, stretched);
    const Mat3 f = Mat3::diagonal({s, 1.0f, std::sqrt(s)});
    EXPECT_NEAR(length(d.centre - f * centre), 0.0f, 1e-6f) << "s = " << s;
    expectCovNear(d.cov, f * toMat(cov) * transpose(f), 1e-8f);
  }
}

TEST(Binding, JointBindingFollowsTheBlendedMatrix) {
  const Vec3 centre{0.2f, 1.0f, -0.3f};
  const Cov6 cov = covarianceFromScaleRotation({0.02f, 0.01f, 0.03f}, Quat{});
  const SplatBinding b = bindToJoints(centre, cov, {1, 0, 0, 0}, {2.0f, 0, 0, 0});  // weights renormalised
  const Mat3 r = rotationMatrix(normalize(Quat{0.7f, 0.0f, 0.7f, 0.0f}));
  const Mat4 palette[2] = {Mat4{}, Mat4::fromLinearTranslation(r, {0, 0.5f, 0})};
  const Vec3 tri[3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
  Deformed d = deformOne(b, tri, palette);
  EXPECT_NEAR(length(d.centre - (r * centre + Vec3{0, 0.5f, 0})), 0.0f, 1e-6f);
  expectCovNear(d.cov, r * toMat(cov) * transpose(r), 1e-8f);
  // A joint outside the palette is refused with the reason.
  const SplatBinding bad = bindToJoints(centre, cov, {7, 0, 0, 0}, {1, 0, 0, 0});
  EXPECT_THROW(deformOne(bad, tri, palette), Error);
}

TEST(Binding, NearestTriangleMatchesBruteForce) {
  test::TestMesh sphere = test::sphereMesh({0.1f, -0.2f, 0.3f}, 0.5f, 16, 3);
  GaussianCloud pts = test::randomCloud(500, 0, 9);
  std::vector<uint32_t> found = nearestTriangles(pts.positions, sphere.positions, sphere.indices);
  auto dist = [&](Vec3 p, uint32_t t) {
    // Distance to the triangle through a dense barycentric scan is too slow; use the binding's own
    // closest point via a tiny local search on the plane: compare squared distances of candidate closest
    // points computed by projecting onto each triangle with clamped barycentrics (brute force).
    const Vec3 a = sphere.positions[sphere.indices[t * 3]], b = sphere.positions[sphere.indices[t * 3 + 1]],
               c = sphere.positions[sphere.indices[t * 3 + 2]];
    float best = INFINITY;
    for (int i = 0; i <= 40; ++i)
      for (int j = 0; j <= 40 - i; ++j) {
        const float u = static_cast<float>(i) / 40, v = static_cast<float>(j) / 40;
        const Vec3 q = a + (b - a) * u + (c - a) * v;
        best = std::min(best, length(q - p));
      }
    return best;
  };
  const size_t tris = sphere.indices.size() / 3;
  int checked = 0;
  for (size_t i = 0; i < pts.size(); i += 10, ++checked) {
    float best = INFINITY;
    for (uint32_t t = 0; t < tris; ++t) best = std::min(best, dist(pts.positions[i], t));
    // The grid's answer is within the scan's resolution of the brute-force minimum.
    EXPECT_LE(dist(pts.positions[i], found[i]), best + 0.01f) << "point " << i;
  }
  EXPECT_EQ(checked, 50);
}

TEST(Binding, BindingsFileRoundTripAndErrors) {
  std::vector<SplatBinding> bs;
  bs.push_back(bindToTriangle({0.1f, 0.1f, 0.1f}, covarianceFromScaleRotation({0.1f, 0.2f, 0.3f}, Quat{}), 5,
                              {0, 0, 0}, {1, 0, 0}, {0, 1, 0}));
  bs.push_back(bindToJoints({1, 2, 3}, covarianceFromScaleRotation({0.1f, 0.1f, 0.1f}, Quat{}),
                            {3, 4, 65535, 0}, {0.5f, 0.25f, 0.25f, 0}));
  std::vector<uint8_t> bytes = encodeBindings(bs);
  ASSERT_EQ(bytes.size(), 16 + 2 * kBindingRecordBytes);
  std::vector<SplatBinding> back = decodeBindings(bytes, "b.bin");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].triangle, 5u);
  EXPECT_EQ(back[1].joints[2], 65535);
  EXPECT_EQ(back[1].weights[1], 0.25f);
  for (size_t k = 0; k < 6; ++k) EXPECT_EQ(back[0].covariance[k], bs[0].covariance[k]);
  std::vector<uint8_t> truncated(bytes.begin(), bytes.end() - 1);
  try {
    decodeBindings(truncated, "b.bin");
    FAIL() << "truncated file accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("b.bin: 2 records need"), std::string::npos) << e.what();
  }
  bytes[0] = 'X';
  EXPECT_THROW(decodeBindings(bytes, "b.bin"), Error);
}

TEST(Character, CesiumManSplatsStayOnTheSkinnedSurface) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  auto model = std::make_shared<GltfModel>(path);
  Character c = Character::fromGltf(model, 5000, 7);
  ASSERT_EQ(c.splats().size(), 5000u);
  const GltfPrimitive& prim = model->primitiveOf(static_cast<size_t>(c.boundDraw()));
  const std::vector<uint32_t> tris = triangleList(prim);
  for (float t : {0.0f, 0.4f, 1.1f, 1.9f}) {
    Character::Frame f;
    c.deform(0, t, f);
    const std::vector<Vec3>& posed = f.pose.primitives[static_cast<size_t>(c.boundDraw())].positions;
    float worst = 0;
    for (size_t i = 0; i < f.positions.size(); ++i) {
      // The point of the skinned triangle at the splat's sampling barycentrics, computed here from the
      // skinned vertices (not through the binding frame).
      const SplatBinding& bd = c.bindings()[i];
      const uint32_t bt = bd.triangle;
      const float b1 = bd.coords[0], b2 = bd.coords[1], b0 = 1 - b1 - b2;
      ASSERT_GE(std::min({b0, b1, b2}), -1e-4f) << "sampled inside its triangle";
      const Vec3 on_surface =
          posed[tris[bt * 3]] * b0 + posed[tris[bt * 3 + 1]] * b1 + posed[tris[bt * 3 + 2]] * b2;
      worst = std::max(worst, length(f.positions[i] - on_surface));
    }
    // Sampled splats lie on their triangle (height 0), so they stay on the skinned surface.
    EXPECT_LT(worst, 1e-4f) << "t = " << t;
    // And they moved with the walk: centres differ from the rest pose.
    if (t > 0) {
      Character::Frame rest;
      c.deform(-1, 0, rest);
      float moved = 0;
      for (size_t i = 0; i < f.positions.size(); ++i)
        moved = std::max(moved, length(f.positions[i] - rest.positions[i]));
      EXPECT_GT(moved, 0.05f);
    }
  }
}

TEST(Character, PackagesRefuseSkinsWithExternalFiles) {
  SF_REQUIRE_ASSET(path, "gltf/interpolation_test.gltf");  // a .gltf with an external .bin
  Character c = Character::fromGltf(std::make_shared<GltfModel>(path), 50, 1);
  const fs::path dir = test::tempDir("CharacterExternal");
  try {
    c.savePackage((dir / "p").string());
    FAIL() << "saved a package whose skin needs an external buffer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("buffers[0] refers to the external file"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "p")) << "nothing is written when an input is refused";
}

TEST(Character, RigPreviewPutsOneGaussianOnEveryVertexAndFollowsTheSkin) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  auto model = std::make_shared<GltfModel>(path);
  for (const char* tint : {"joint", "uv", "height", "normal"}) {
    Character c = Character::rigPreview(model, tint);
    const GltfPrimitive& prim = model->primitiveOf(static_cast<size_t>(c.boundDraw()));
    ASSERT_EQ(c.splats().size(), prim.positions.size()) << tint;
    Character::Frame f;
    c.deform(0, 0.5f, f);
    const std::vector<Vec3>& skinned = f.pose.primitives[static_cast<size_t>(c.boundDraw())].positions;
    float worst = 0;
    for (size_t i = 0; i < skinned.size(); ++i) worst = std::max(worst, length(f.positions[i] - skinned[i]));
    EXPECT_LT(worst, 1e-4f) << tint;  // each gaussian rides its own skinned vertex
  }
  // Joint tint: vertices dominated by different joints get different colours.
  Character joints = Character::rigPreview(model, "joint");
  const GltfPrimitive& prim = model->primitiveOf(static_cast<size_t>(joints.boundDraw()));
  std::map<uint32_t, std::array<float, 3>> colour_of_joint;
  for (size_t i = 0; i < prim.positions.size(); ++i) {
    size_t best = 0;
    for (size_t k = 1; k < 4; ++k)
      if (prim.weights0[i][k] > prim.weights0[i][best]) best = k;
    colour_of_joint[prim.joints0[i][best]] = {joints.splats().sh[i * 3], joints.splats().sh[i * 3 + 1],
                                              joints.splats().sh[i * 3 + 2]};
  }
  EXPECT_GT(colour_of_joint.size(), 10u);
  std::set<std::array<float, 3>> distinct;
  for (const auto& [j, c] : colour_of_joint) distinct.insert(c);
  EXPECT_EQ(distinct.size(), colour_of_joint.size());
  EXPECT_THROW(Character::rigPreview(model, "rainbow"), Error);
}

TEST(Character, PackageRoundTripAndVerification) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  const fs::path dir = test::tempDir("CharacterPackage");
  Character c = Character::fromGltf(std::make_shared<GltfModel>(path), 800, 3);
  c.savePackage((dir / "man").string());
  Character back = Character::loadPackage((dir / "man").string());
  ASSERT_EQ(back.splats().size(), 800u);
  EXPECT_EQ(back.defaultClip(), "0");
  for (size_t i = 0; i < 800; i += 37) {
    EXPECT_EQ(back.bindings()[i].triangle, c.bindings()[i].triangle);
    EXPECT_EQ(back.splats().positions[i].x, c.splats().positions[i].x);
  }
  Character::Frame a, b;
  c.deform(0, 0.7f, a);
  back.deform(0, 0.7f, b);
  for (size_t i = 0; i < 800; i += 41) EXPECT_NEAR(length(a.positions[i] - b.positions[i]), 0.0f, 1e-6f);

  auto expectError = [&](const std::string& what) {
    try {
      Character::loadPackage((dir / "man").string());
      ADD_FAILURE() << "loaded a broken package, expected: " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  // One flipped byte in the PLY: the hash check names the file.
  std::vector<uint8_t> ply = readFile((dir / "man/splats.ply").string());
  std::vector<uint8_t> broken = ply;
  broken[broken.size() - 5] ^= 0x40;
  writeFileAtomic((dir / "man/splats.ply").string(), broken);
  expectError("splats.ply: SHA-256");
  writeFileAtomic((dir / "man/splats.ply").string(), ply);
  // A missing file.
  fs::rename(dir / "man/bindings.bin", dir / "man/bindings.moved");
  expectError("bindings.bin: file is missing");
  fs::rename(dir / "man/bindings.moved", dir / "man/bindings.bin");
  // A count that disagrees with the files.
  std::ifstream in(dir / "man/character.json");
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = json.find("\"count\": 800");
  ASSERT_NE(at, std::string::npos) << json;
  json.replace(at, 12, "\"count\": 801");
  std::ofstream(dir / "man/character.json") << json;
  expectError("count 801");
  // A field of the wrong type names the key.
  json.replace(json.find("\"count\": 801"), 12, "\"count\": 800");
  const size_t v = json.find("\"version\": 1");
  ASSERT_NE(v, std::string::npos) << json;
  json.replace(v, 12, "\"version\": \"1\"");
  std::ofstream(dir / "man/character.json") << json;
  expectError("version: expected an integer");
  json.replace(json.find("\"version\": \"1\""), 14, "\"version\": 1");
  // An expression space the skin does not offer (cesium_man has no morph targets).
  const size_t space = json.find("\"expressionSpace\": \"none\"");
  ASSERT_NE(space, std::string::npos) << json;
  std::string arkit = json;
  arkit.replace(space, 25, "\"expressionSpace\": \"arkit52\"");
  std::ofstream(dir / "man/character.json") << arkit;
  expectError("expressionSpace: \"arkit52\" declared, but the bound mesh of");
  // A number that overflows a double names the file and the JSON path.
  std::string overflow = json;
  overflow.replace(overflow.find("\"version\": 1"), 12, "\"version\": 1e999");
  std::ofstream(dir / "man/character.json") << overflow;
  expectError("character.json: version: number overflow parsing '1e999'");
  // character.json as a FIFO is reported as one, not as missing, and does not block.
  fs::remove(dir / "man/character.json");
  ASSERT_EQ(::mkfifo((dir / "man/character.json").c_str(), 0600), 0);
  expectError("character.json: is a FIFO (named pipe), expected a regular file");
  fs::remove(dir / "man/character.json");
  std::ofstream(dir / "man/character.json") << json;
  EXPECT_NO_THROW(Character::loadPackage((dir / "man").string()));
  EXPECT_THROW(Character::loadPackage((dir / "nothing").string()), Error);
}

}  // namespace
}  // namespace sf::character
