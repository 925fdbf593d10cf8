// Rig backends and GNM packs (character/rig.h, character/gnm_pack.h): GnmRig's pose against a closed-form
// computation on a hand-made pack, the gaze's sign, the pack file (byte-exact round trip, every truncated
// prefix and unknown versions refused), expression spaces (dims, arkit52 without an arkit_map), the rig
// preview's eye call-out, and a pack built from the LAM skin posing exactly like the glTF skinned path.
#include "character/rig.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "character/character.h"
#include "character/expression.h"
#include "character/gnm_pack.h"
#include "core/error.h"
#include "io/file.h"
#include "io/gltf.h"
#include "support/test_support.h"

namespace sf::character {
namespace {

namespace fs = std::filesystem;

Mat4 translate(Vec3 t) {
  return Mat4::fromLinearTranslation(Mat3{}, t);
}

// Rotations about z and y by 90 degrees.
Mat3 rotZ90() {
  Mat3 r;
  r.m[0][0] = 0, r.m[0][1] = -1, r.m[1][0] = 1, r.m[1][1] = 0;
  return r;
}
Mat3 rotY90() {
  Mat3 r;
  r.m[0][0] = 0, r.m[0][2] = 1, r.m[2][0] = -1, r.m[2][2] = 0;
  return r;
}

const Vec3 kRoot{0, 0.01f, 0}, kPivotL{0.03f, 0.04f, 0.06f}, kPivotR{-0.03f, 0.04f, 0.06f};
const Vec3 kBindT{0.1f, 1.6f, -0.02f};

// Four vertices, three joints (a head root and two eyes whose rest orientation is turned 90 degrees about z,
// so the gaze must act in head-local axes, not the joint's), one basis vector, a bind transform that turns
// 90 degrees about y and lifts the head to 1.6 m.
//   v0: the root alone; v1: the left eye's forward point; v2: root and right eye, half each;
//   v3: left eye 1/4, right eye 3/4.
GnmPack tinyPack(bool with_map) {
  GnmPack p;
  p.source = "tiny.sfgnm";
  p.neutral = {{0, 0, 0.05f}, kPivotL + Vec3{0, 0, 0.012f}, {-0.02f, 0.03f, 0.07f}, {0.01f, 0.05f, 0.065f}};
  p.triangles = {0, 1, 2, 0, 2, 3};
  p.uvs = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};
  p.basis = {{0.001f, 0, 0}, {0, 0.002f, 0}, {0, 0, 0.003f}, {0.001f, 0.001f, 0.001f}};
  GnmJoint root{"head", -1, translate(kRoot), translate(-kRoot)};
  const Mat4 eye_l = Mat4::fromLinearTranslation(rotZ90(), kPivotL),
             eye_r = Mat4::fromLinearTranslation(rotZ90(), kPivotR);
  GnmJoint left{"eyeL", 0, translate(-kRoot) * eye_l, inverseAffine(eye_l)};
  GnmJoint right{"eyeR", 0, translate(-kRoot) * eye_r, inverseAffine(eye_r)};
  p.joints = {root, left, right};
  p.lbs_joints = {{0, 0, 0, 0}, {1, 0, 0, 0}, {0, 2, 0, 0}, {1, 2, 0, 0}};
  p.lbs_weights = {{1, 0, 0, 0}, {1, 0, 0, 0}, {0.5f, 0.5f, 0, 0}, {0.25f, 0.75f, 0, 0}};
  p.eye_joints = {1, 2};
  p.bind_transform = Mat4::fromLinearTranslation(rotY90(), kBindT);
  p.control_names = {"smile", "gazePitchLeft", "gazeYawLeft", "gazePitchRight", "gazeYawRight"};
  if (with_map) {
    p.arkit_map.assign(52, 0.0f);
    p.arkit_map[static_cast<size_t>(arkitIndex("jawOpen"))] = 0.5f;
    p.arkit_map[static_cast<size_t>(arkitIndex("mouthSmileLeft"))] = 1.0f;
  }
  return p;
}

// The closed form, in doubles, written out without the engine's matrices.
struct D3 {
  double x, y, z;
};
D3 d3(Vec3 v) {
  return {v.x, v.y, v.z};
}
D3 add(D3 a, D3 b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z};
}
D3 sub(D3 a, D3 b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z};
}
D3 scale(D3 a, double s) {
  return {a.x * s, a.y * s, a.z * s};
}
// Gaze: pitch about +x (positive takes +z towards -y), then yaw about +y, about the pivot c.
D3 gaze(D3 p, D3 c, double pitch, double yaw) {
  const D3 q = sub(p, c);
  const D3 a{q.x, q.y * std::cos(pitch) - q.z * std::sin(pitch),
             q.y * std::sin(pitch) + q.z * std::cos(pitch)};
  const D3 b{a.x * std::cos(yaw) + a.z * std::sin(yaw), a.y, -a.x * std::sin(yaw) + a.z * std::cos(yaw)};
  return add(c, b);
}
// The bind transform: 90 degrees about y ((x, y, z) -> (z, y, -x)), then the lift.
D3 bind(D3 p) {
  return add({p.z, p.y, -p.x}, d3(kBindT));
}

float maxDistance(const std::vector<Vec3>& a, const std::vector<Vec3>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, length(a[i] - b[i]));
  return worst;
}

TEST(GnmRig, PoseMatchesAClosedFormOnAHandMadePack) {
  GnmRig rig(tinyPack(false));
  EXPECT_EQ(rig.kind(), "gnm");
  ASSERT_EQ(rig.controlNames().size(), 5u);
  const double c = 0.7, pitch_l = 0.3, yaw_l = -0.2, pitch_r = -0.1, yaw_r = 0.4;
  const std::vector<float> controls = {0.7f, 0.3f, -0.2f, -0.1f, 0.4f};
  rig.setControls(controls);
  std::vector<Vec3> posed;
  rig.pose(posed);
  ASSERT_EQ(posed.size(), 4u);
  const GnmPack p = tinyPack(false);
  const D3 cl = d3(kPivotL), cr = d3(kPivotR);
  D3 m[4];
  for (size_t v = 0; v < 4; ++v) m[v] = add(d3(p.neutral[v]), scale(d3(p.basis[v]), c));
  const D3 expected[4] = {
      bind(m[0]),
      bind(gaze(m[1], cl, pitch_l, yaw_l)),
      bind(add(scale(m[2], 0.5), scale(gaze(m[2], cr, pitch_r, yaw_r), 0.5))),
      bind(add(scale(gaze(m[3], cl, pitch_l, yaw_l), 0.25), scale(gaze(m[3], cr, pitch_r, yaw_r), 0.75))),
  };
  for (size_t v = 0; v < 4; ++v) {
    const double err =
        std::hypot(posed[v].x - expected[v].x, posed[v].y - expected[v].y, posed[v].z - expected[v].z);
    EXPECT_LT(err, 2e-6) << "vertex " << v << ": (" << posed[v].x << ", " << posed[v].y << ", " << posed[v].z
                         << ") vs (" << expected[v].x << ", " << expected[v].y << ", " << expected[v].z
                         << ")";
  }
  // At zero controls every palette entry is the bind transform: the neutral is head-local, the output body
  // space.
  rig.setControls(std::vector<float>(5, 0.0f));
  rig.pose(posed);
  for (size_t v = 0; v < 4; ++v) {
    const D3 e = bind(d3(p.neutral[v]));
    EXPECT_LT(std::hypot(posed[v].x - e.x, posed[v].y - e.y, posed[v].z - e.z), 1e-6) << v;
  }
}

TEST(GnmRig, PositivePitchMovesTheEyesForwardPointDown) {
  GnmPack p = tinyPack(false);
  p.bind_transform = translate({0, 1.6f, 0});  // no turn: head-local axes are the output's
  GnmRig rig(p);
  std::vector<Vec3> rest, down, up, right_only, yawed;
  rig.pose(rest);
  rig.setControls(std::vector<float>{0, 0.2f, 0, 0, 0});
  rig.pose(down);
  rig.setControls(std::vector<float>{0, -0.2f, 0, 0, 0});
  rig.pose(up);
  rig.setControls(std::vector<float>{0, 0, 0, 0.2f, 0});
  rig.pose(right_only);
  rig.setControls(std::vector<float>{0, 0, 0.2f, 0, 0});
  rig.pose(yawed);
  // v1 sits 12 mm in front of the left eye's pivot.
  EXPECT_NEAR(down[1].y - rest[1].y, -0.012f * std::sin(0.2f), 1e-6f)
      << "positive pitch (GNM's sign) looks down";
  EXPECT_LT(down[1].z, rest[1].z);
  EXPECT_NEAR(up[1].y - rest[1].y, 0.012f * std::sin(0.2f), 1e-6f);
  EXPECT_LT(length(right_only[1] - rest[1]), 1e-7f) << "the right eye's pitch leaves the left eye alone";
  EXPECT_GT(length(right_only[2] - rest[2]), 1e-4f) << "and moves the right eye's vertices";
  EXPECT_NEAR(yawed[1].x - rest[1].x, 0.012f * std::sin(0.2f), 1e-6f)
      << "positive yaw turns towards +x, the head's left";
  EXPECT_LT(length(yawed[0] - rest[0]), 1e-7f) << "the root's vertex does not follow the gaze";
}

TEST(GnmRig, ControlsAreCheckedAndTheSkinSourceIsValid) {
  GnmRig rig(tinyPack(false));
  EXPECT_NE(test::errorOf([&] {
              rig.setControls(std::vector<float>(4, 0.0f));
            }).find("4 controls given, the rig has 5"),
            std::string::npos);
  EXPECT_NE(test::errorOf([&] {
              rig.setControls(std::vector<float>{0, NAN, 0, 0, 0});
            }).find("control 1 is not finite"),
            std::string::npos);
  EXPECT_EQ(rig.controls()[1], 0.0f) << "a refused vector keeps the previous controls";
  const SkinSource& s = rig.skinSource();
  EXPECT_EQ(s.validate(), "");
  EXPECT_EQ(s.vertexCount(), 4u);
  EXPECT_EQ(s.targetCount(), 1u);
  EXPECT_EQ(s.palette.size(), 3u);
  EXPECT_EQ(rig.triangles().size(), 6u);
  EXPECT_EQ(rig.uvs().size(), 4u);
  GnmPack bad = tinyPack(false);
  bad.eye_joints = {1, 1};
  EXPECT_NE(test::errorOf([&] {
              GnmRig r(bad);
            }).find("tiny.sfgnm: the left and right eye joints are the same joint 1"),
            std::string::npos);
}

TEST(GnmPack, RoundTripIsByteExact) {
  for (bool with_map : {false, true}) {
    GnmPack p = tinyPack(with_map);
    if (!with_map) p.uvs.clear();
    const std::vector<uint8_t> bytes = encodeGnmPack(p);
    const GnmPack back = decodeGnmPack(bytes, "tiny.sfgnm");
    EXPECT_EQ(encodeGnmPack(back), bytes) << with_map;
    EXPECT_EQ(back.control_names, p.control_names);
    EXPECT_EQ(back.arkit_map, p.arkit_map);
    EXPECT_EQ(back.uvs.size(), p.uvs.size());
    ASSERT_EQ(back.joints.size(), 3u);
    EXPECT_EQ(back.joints[2].name, "eyeR");
    EXPECT_EQ(back.joints[2].parent, 0);
    EXPECT_EQ(back.neutral[3].z, p.neutral[3].z);
    EXPECT_EQ(back.bind_transform.m[2][3], p.bind_transform.m[2][3]);
    const fs::path file = fs::path(test::tempDir("GnmPackRoundTrip")) / "tiny.sfgnm";
    saveGnmPack(p, file.string());
    EXPECT_EQ(readFile(file.string()), bytes);
    EXPECT_EQ(encodeGnmPack(loadGnmPack(file.string())), bytes);
    EXPECT_EQ(loadGnmPack(file.string()).source, file.string());
  }
  GnmPack bad = tinyPack(false);
  bad.triangles.push_back(4);
  EXPECT_NE(test::errorOf([&] {
              encodeGnmPack(bad);
            }).find("not written: 7 triangle indices are not a multiple of 3"),
            std::string::npos);
}

TEST(GnmPack, EveryTruncatedPrefixIsRefusedWithAMessage) {
  const std::vector<uint8_t> bytes = encodeGnmPack(tinyPack(true));
  size_t refused = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::span<const uint8_t> prefix(bytes.data(), n);
    try {
      decodeGnmPack(prefix, "tiny.sfgnm");
      ADD_FAILURE() << "a " << n << "-byte prefix of a " << bytes.size() << "-byte pack was accepted";
    } catch (const FormatError& e) {
      EXPECT_EQ(e.path(), "tiny.sfgnm");
      EXPECT_LE(e.offset(), n);
      EXPECT_FALSE(e.reason().empty());
      ++refused;
    }
  }
  EXPECT_EQ(refused, bytes.size());
  std::printf("GNM pack: all %zu truncated prefixes of a %zu-byte pack refused\n", refused, bytes.size());
}

TEST(GnmPack, UnknownVersionsAndCorruptFieldsAreRefused) {
  const std::vector<uint8_t> good = encodeGnmPack(tinyPack(true));
  auto refuse = [&](size_t offset, std::vector<uint8_t> patch, const std::string& expected) {
    std::vector<uint8_t> b = good;
    std::copy(patch.begin(), patch.end(), b.begin() + static_cast<std::ptrdiff_t>(offset));
    const std::string why = test::errorOf([&] { decodeGnmPack(b, "x.sfgnm"); });
    EXPECT_NE(why.find(expected), std::string::npos) << "patch at " << offset << ": " << why;
  };
  refuse(8, {2, 0, 0, 0}, "x.sfgnm: byte 8: GNM pack version 2 unsupported (this build reads version 1)");
  refuse(0, {'S', 'F', 'G', 'N', 'M', '0', '0', '2'}, "byte 0: not a GNM pack");
  refuse(12, {4, 0, 0, 0}, "byte 12: unknown flags 4");
  refuse(16, {0xff, 0xff, 0xff, 0xff}, "byte 16: vertex count 4294967295 exceeds the limit");
  refuse(16, {0, 0, 0, 1}, "need at least");  // 16M vertices claimed: refused before allocating
  refuse(28, {0, 0, 0, 0}, "byte 28: joint count is 0");
  refuse(36, {1, 0, 0, 0}, "byte 36: the left and right eye joints are the same joint 1");
  refuse(32, {3, 0, 0, 0}, "byte 32: left eye joint 3 is not one of the 3 joints");
  refuse(88 + 48 + 4, {9, 0, 0, 0},
         "byte 140: triangle 0 names vertex 9 of 4");  // neutral: 4 x 12 bytes from 88
  refuse(88, {0, 0, 0xc0, 0x7f}, "byte 88: neutral vertex 0 is not finite");
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  EXPECT_NE(
      test::errorOf([&] { decodeGnmPack(longer, "x.sfgnm"); }).find("1 bytes after the end of the pack"),
      std::string::npos);
}

TEST(RigExpression, Arkit52ToGnmNeedsTheArkitMap) {
  GnmRig plain(tinyPack(false));
  std::vector<float> arkit(52, 0.0f);
  arkit[static_cast<size_t>(arkitIndex("jawOpen"))] = 1.0f;
  arkit[static_cast<size_t>(arkitIndex("mouthSmileLeft"))] = 0.4f;
  const std::string why = test::errorOf([&] { mapToControls(arkit52Space(), arkit, plain); });
  EXPECT_NE(
      why.find("tiny.sfgnm: an expression in space 'arkit52' refused: the GNM pack carries no arkit_map"),
      std::string::npos)
      << why;
  GnmRig mapped(tinyPack(true));
  const std::vector<float> c = mapToControls(arkit52Space(), arkit, mapped);
  ASSERT_EQ(c.size(), 5u);
  EXPECT_FLOAT_EQ(c[0], 0.5f * 1.0f + 1.0f * 0.4f);
  for (size_t g = 1; g < 5; ++g) EXPECT_EQ(c[g], 0.0f) << "ARKit weights carry no gaze angles";
}

TEST(RigExpression, DimsAndSpacesAreChecked) {
  GnmRig rig(tinyPack(true));
  const ExpressionSpace native = nativeSpace(rig);
  EXPECT_EQ(native.kind, "gnm");
  EXPECT_EQ(native.dim, 5);
  ASSERT_EQ(native.segments.size(), 2u);
  EXPECT_EQ(native.segments[1].name, "gaze");
  EXPECT_EQ(native.segments[1].start, 1);
  const std::vector<float> five = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
  EXPECT_EQ(mapToControls(native, five, rig), five);
  EXPECT_EQ(gnmSpace().dim, 387) << "a full GNM head: 383 coefficients + 4 gaze angles";
  EXPECT_EQ(gnm68Space().dim, 68);
  EXPECT_NE(test::errorOf([&] {
              mapToControls(gnmSpace(), std::vector<float>(387, 0.0f), rig);
            }).find("expected dim 5 (the pack's 1 coefficients + 4 gaze angles), the space declares 387"),
            std::string::npos);
  EXPECT_NE(test::errorOf([&] {
              mapToControls(gnmSpace(), five, rig);
            }).find("the space has dim 387, 5 values given"),
            std::string::npos);
  EXPECT_NE(test::errorOf([&] {
              mapToControls(arkit52Space(), std::vector<float>(51, 0.0f), rig);
            }).find("the space has dim 52, 51 values given"),
            std::string::npos);
  ExpressionSpace wrong = arkit52Space();
  wrong.dim = 51;
  EXPECT_NE(
      test::errorOf([&] { mapToControls(wrong, std::vector<float>(51, 0.0f), rig); }).find("expected dim 52"),
      std::string::npos);
  EXPECT_NE(test::errorOf([&] {
              mapToControls(gnm68Space(), std::vector<float>(68, 0.0f), rig);
            }).find("the pack has 1 coefficients; gnm68 drives the first 64"),
            std::string::npos);
  ExpressionSpace visemes{"visemes", 5, {}};
  EXPECT_NE(test::errorOf([&] { mapToControls(visemes, five, rig); }).find("unknown expression space"),
            std::string::npos);
}

TEST(RigPreview, GnmPackEyesAreCyanAndTheGaussiansSitOnThePosedVertices) {
  GnmRig rig(tinyPack(false));
  rig.setControls(std::vector<float>{0.5f, 0.1f, 0, 0, 0});
  const GaussianCloud cloud = rigPreviewCloud(rig, "joint", 0.003f);
  std::vector<Vec3> posed;
  rig.pose(posed);
  ASSERT_EQ(cloud.size(), 4u);
  EXPECT_EQ(maxDistance(cloud.positions, posed), 0.0f);
  EXPECT_EQ(cloud.scales[2].y, 0.003f);
  auto rgb = [&](size_t i) { return Vec3{cloud.sh[i * 3], cloud.sh[i * 3 + 1], cloud.sh[i * 3 + 2]}; };
  const Vec3 cyan{colorToShDc(0), colorToShDc(1), colorToShDc(1)};
  EXPECT_EQ(length(rgb(1) - cyan), 0.0f) << "v1 belongs to the left eye";
  EXPECT_EQ(length(rgb(3) - cyan), 0.0f) << "v3 mostly to the right eye";
  EXPECT_GT(length(rgb(0) - cyan), 0.1f) << "the head's own vertex is not cyan";
  EXPECT_NE(test::errorOf([&] { rigPreviewCloud(rig, "rainbow", 0.002f); }).find("tint 'rainbow' unknown"),
            std::string::npos);
  EXPECT_NE(
      test::errorOf([&] { rigPreviewCloud(rig, "joint", 0.0f); }).find("sigma must be a positive number"),
      std::string::npos);
  for (const char* tint : {"uv", "height", "normal"})
    EXPECT_EQ(rigPreviewCloud(rig, tint, 0.002f).size(), 4u) << tint;
}

TEST(RigBackendSkinned, FollowsTheGltfPoseAndRefusesGnmSpaces) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  auto model = std::make_shared<GltfModel>(path);
  SkinnedRig rig(model);
  EXPECT_EQ(rig.kind(), "skinned");
  EXPECT_TRUE(rig.controlNames().empty());
  rig.setPose(0, 0.5f);
  std::vector<Vec3> posed;
  rig.pose(posed);
  GltfModel::Pose pose;
  model->pose(0, 0.5f, pose);
  const Mat4& to_model = model->meshToModel(pose, static_cast<size_t>(rig.draw()));
  std::vector<Vec3> expected;
  for (const Vec3& v : pose.primitives[static_cast<size_t>(rig.draw())].positions)
    expected.push_back(transformPoint(to_model, v));
  EXPECT_LT(maxDistance(posed, expected), 1e-5f)
      << "model space: the glTF pose with the mesh node's transform";
  EXPECT_NE(test::errorOf([&] {
              mapToControls(gnmSpace(1), std::vector<float>(5, 0.0f), rig);
            }).find("not GNM coefficients; not reinterpreted"),
            std::string::npos);
  EXPECT_NE(test::errorOf([&] {
              mapToControls(arkit52Space(), std::vector<float>(52, 0.0f), rig);
            }).find("carry no ARKit names"),
            std::string::npos);
  EXPECT_NE(test::errorOf([&] { rig.setPose(99, 0); }).find("clip 99 does not exist"), std::string::npos);
}

// Vertices whose dominant LBS joint is one of `eyes`.
size_t eyeDominated(std::span<const std::array<uint16_t, 4>> joints,
                    std::span<const std::array<float, 4>> weights, std::array<int, 2> eyes) {
  size_t n = 0;
  for (size_t v = 0; v < joints.size(); ++v) {
    size_t best = 0;
    for (size_t k = 1; k < 4; ++k)
      if (weights[v][k] > weights[v][best]) best = k;
    n += joints[v][best] == eyes[0] || joints[v][best] == eyes[1];
  }
  return n;
}
size_t cyanCount(const GaussianCloud& c) {
  size_t n = 0;
  const size_t stride = static_cast<size_t>(c.shStride());
  for (size_t i = 0; i < c.size(); ++i)
    n += c.sh[i * stride] == colorToShDc(0) && c.sh[i * stride + 1] == colorToShDc(1) &&
         c.sh[i * stride + 2] == colorToShDc(1);
  return n;
}

// ---- The LAM skin (../shared/assets/characters/lam_avatar/skin.glb) ----

std::shared_ptr<const GltfModel> lamModel(const std::string& path) {
  static std::shared_ptr<const GltfModel> cached;
  if (!cached) cached = std::make_shared<GltfModel>(path);
  return cached;
}
const GnmPack& lamPack(const GltfModel& model) {
  static const GnmPack pack = fromSkinnedGltf(model);
  return pack;
}

#define SF_REQUIRE_LAM_SKIN(var)                                 \
  SF_REQUIRE_ASSET(lam_skin_, "characters/lam_avatar/skin.glb"); \
  std::shared_ptr<const GltfModel> var = lamModel(lam_skin_)

TEST(GnmPackLam, FromSkinnedGltfPosesLikeTheSkinnedPath) {
  SF_REQUIRE_LAM_SKIN(model);
  const GnmPack& pack = lamPack(*model);
  ASSERT_EQ(pack.vertexCount(), 20018u);
  ASSERT_EQ(pack.joints.size(), 262u);
  ASSERT_EQ(pack.basisCount(), 51u);
  EXPECT_EQ(pack.joints[static_cast<size_t>(pack.eye_joints[0])].name, "lEye");
  EXPECT_EQ(pack.joints[static_cast<size_t>(pack.eye_joints[1])].name, "rEye");
  ASSERT_EQ(pack.arkit_map.size(), 52u * 51u);
  EXPECT_EQ(pack.control_names.size(), 55u);
  GnmFromGltfOptions as_skinned;
  as_skinned.bind_eyeballs = false;
  const GnmPack plain = fromSkinnedGltf(*model, as_skinned);
  EXPECT_EQ(eyeDominated(plain.lbs_joints, plain.lbs_weights, {plain.eye_joints[0], plain.eye_joints[1]}), 0u)
      << "LAM weights its eyeballs to the head";
  // Head-local: the origin is the joint named head, (0, 1.6255, -0.0184) in the skin's bind (world) space.
  const Vec3 lift = pack.bind_transform.translation();
  std::printf("LAM pack: bind transform lifts the head-local neutral by (%.4f, %.4f, %.4f) m\n", lift.x,
              lift.y, lift.z);
  EXPECT_NEAR(lift.y, 1.6255f, 1e-3f);
  EXPECT_NEAR(lift.z, -0.0184f, 1e-3f);

  const std::vector<uint8_t> bytes = encodeGnmPack(pack);
  EXPECT_EQ(encodeGnmPack(decodeGnmPack(bytes, "lam.sfgnm")), bytes);
  std::printf("LAM pack: %zu bytes\n", bytes.size());

  std::vector<float> w(51);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 0.5f + 0.5f * std::sin(1.7f * static_cast<float>(k) + 0.3f);
  GnmRig gnm(pack);
  std::vector<float> controls = w;
  controls.resize(55, 0.0f);
  gnm.setControls(controls);
  std::vector<Vec3> from_pack, from_skin;
  gnm.pose(from_pack);
  SkinnedRig skinned(model);
  ASSERT_EQ(skinned.controlNames().size(), 51u);
  skinned.setControls(w);
  skinned.pose(from_skin);
  // The existing path: GltfModel's pose with the same morph weights, placed by the mesh node's transform.
  GltfModel::Pose pose;
  model->sample(-1, 0, pose);
  const GltfModel::DrawInfo info = model->drawInfo(static_cast<size_t>(skinned.draw()));
  const size_t offset =
      model->skeleton().weightOffset(static_cast<size_t>(model->skeleton().findSource(info.node)));
  std::copy(w.begin(), w.end(), pose.weights.begin() + static_cast<std::ptrdiff_t>(offset));
  model->evaluate(pose);
  const Mat4& to_model = model->meshToModel(pose, static_cast<size_t>(skinned.draw()));
  std::vector<Vec3> from_gltf;
  for (const Vec3& v : pose.primitives[static_cast<size_t>(skinned.draw())].positions)
    from_gltf.push_back(transformPoint(to_model, v));
  const float vs_skinned = maxDistance(from_pack, from_skin), vs_gltf = maxDistance(from_pack, from_gltf);
  std::printf("LAM: GnmRig vs SkinnedRig max %.2e m, vs GltfModel::evaluate max %.2e m (51 morph weights)\n",
              vs_skinned, vs_gltf);
  EXPECT_LT(vs_skinned, 1e-5f);
  EXPECT_LT(vs_gltf, 1e-5f);

  // The same ARKit vector through both rigs' mappings (the pack's arkit_map, the skin's target names).
  std::vector<float> arkit(52, 0.0f);
  for (size_t a = 0; a < 52; ++a) arkit[a] = 0.5f + 0.5f * std::cos(0.9f * static_cast<float>(a));
  std::vector<std::string> missing;
  skinned.setControls(mapToControls(arkit52Space(), arkit, skinned, &missing));
  gnm.setControls(mapToControls(arkit52Space(), arkit, gnm));
  skinned.pose(from_skin);
  gnm.pose(from_pack);
  EXPECT_LT(maxDistance(from_pack, from_skin), 1e-5f);
  EXPECT_EQ(missing, std::vector<std::string>{"tongueOut"});
}

TEST(GnmPackLam, GazeTurnsTheEyeballsAboutTheirPivots) {
  SF_REQUIRE_LAM_SKIN(model);
  GnmRig rig(lamPack(*model));
  const GnmPack& pack = rig.pack();
  std::vector<Vec3> rest, looked;
  rig.pose(rest);
  std::vector<float> c(pack.controlCount(), 0.0f);
  c[51] = 0.25f;  // pitchL: down
  rig.setControls(c);
  rig.pose(looked);
  const Vec3 pivot = transformPoint(pack.bind_transform,
                                    rig.jointModels()[static_cast<size_t>(pack.eye_joints[0])].translation());
  size_t eye = 0, front = SIZE_MAX, moved_right = 0;
  for (size_t v = 0; v < pack.vertexCount(); ++v) {
    bool left = false, right = false;  // weighted to one eye joint alone
    for (size_t k = 0; k < 4; ++k) {
      left |= pack.lbs_joints[v][k] == pack.eye_joints[0] && pack.lbs_weights[v][k] > 0.999f;
      right |= pack.lbs_joints[v][k] == pack.eye_joints[1] && pack.lbs_weights[v][k] > 0.999f;
    }
    if (right && length(looked[v] - rest[v]) > 1e-6f) ++moved_right;
    if (!left) continue;
    ++eye;
    EXPECT_NEAR(length(looked[v] - pivot), length(rest[v] - pivot), 1e-5f)
        << "vertex " << v << " keeps its distance from the pivot";
    if (front == SIZE_MAX || rest[v].z > rest[front].z) front = v;
  }
  ASSERT_GT(eye, 100u);
  std::printf(
      "LAM: %zu vertices on the left eye joint alone; its front point moves %.2f mm down at pitch 0.25\n",
      eye, 1e3 * static_cast<double>(rest[front].y - looked[front].y));
  EXPECT_LT(looked[front].y, rest[front].y - 1e-3f) << "positive pitch looks down";
  EXPECT_EQ(moved_right, 0u) << "the left pitch leaves the right eye alone";
}

TEST(GnmPackLam, EyeJointsByRuleOrByName) {
  SF_REQUIRE_ASSET(path, "characters/lam_avatar/skin.glb");
  GltfDocument doc = loadGltf(path);
  for (GltfNode& n : doc.nodes)
    if (n.name == "lEye") n.name = "eyeball_left";
  GltfModel renamed(std::move(doc));
  const std::string why = test::errorOf([&] { fromSkinnedGltf(renamed); });
  EXPECT_NE(why.find("no skin joint match the left eye name rule"), std::string::npos) << why;
  EXPECT_NE(why.find("--eyes LEFT,RIGHT"), std::string::npos) << why;
  const GnmPack named = fromSkinnedGltf(renamed, {"eyeball_left", "rEye"});
  EXPECT_EQ(named.joints[static_cast<size_t>(named.eye_joints[0])].name, "eyeball_left");
  EXPECT_NE(test::errorOf([&] {
              fromSkinnedGltf(renamed, {"noSuchJoint", "rEye"});
            }).find("the left eye joint 'noSuchJoint' is not a joint of the skin"),
            std::string::npos);
}

TEST(RigPreview, LamEyesAreCalledOutInCyanOnBothPaths) {
  SF_REQUIRE_LAM_SKIN(model);
  GnmRig rig(lamPack(*model));
  const GnmPack& pack = rig.pack();
  const size_t on_eyes =
      eyeDominated(pack.lbs_joints, pack.lbs_weights, {pack.eye_joints[0], pack.eye_joints[1]});
  EXPECT_EQ(on_eyes, 2u * 2178u) << "the two eyeball components, bound to the eye joints";
  EXPECT_EQ(cyanCount(rigPreviewCloud(rig, "joint", 0.002f)), on_eyes);
  // The glTF path shows the skin as it is: LAM weights its eyeballs to the head, so nothing is cyan ...
  const Character as_is = Character::rigPreview(model, "joint", 0.002f);
  EXPECT_EQ(cyanCount(as_is.splats()), 0u);
  EXPECT_EQ(as_is.splats().scales[0].x, 0.002f);
  // ... until the eyeballs are weighted to lEye / rEye (found by the name rule on the skin's joints).
  GltfDocument doc = model->document();
  GltfPrimitive& prim =
      doc.meshes[static_cast<size_t>(model->drawInfo(static_cast<size_t>(boundDrawOf(*model))).mesh)]
          .primitives[0];
  const GltfSkin& skin = doc.skins[0];
  std::array<uint16_t, 2> skin_eye{};
  for (size_t side = 0; side < 2; ++side)
    for (size_t j = 0; j < skin.joints.size(); ++j)
      if (doc.nodes[static_cast<size_t>(skin.joints[j])].name ==
          pack.joints[static_cast<size_t>(pack.eye_joints[side])].name)
        skin_eye[side] = static_cast<uint16_t>(j);
  for (size_t v = 0; v < pack.vertexCount(); ++v)
    for (size_t side = 0; side < 2; ++side)
      if (pack.lbs_joints[v][0] == pack.eye_joints[side] && pack.lbs_weights[v][0] == 1.0f) {
        prim.joints0[v] = {skin_eye[side], 0, 0, 0};
        prim.weights0[v] = {1, 0, 0, 0};
      }
  const Character rebound =
      Character::rigPreview(std::make_shared<GltfModel>(std::move(doc)), "joint", 0.002f);
  EXPECT_EQ(cyanCount(rebound.splats()), on_eyes);
  std::printf("LAM rig preview: %zu eye vertices in cyan\n", on_eyes);
}

}  // namespace
}  // namespace sf::character
