// Every spawn path of a script's spawn-character (character/world.h): a plain skinned glTF drawn as its
// meshes (posed by the animator, one per spawn, look-at at the joint found by name, clips by name), a GNM
// pack's rig preview (one gaussian per vertex, moved by set-controls and expressions), and a bundle on the
// orl rig backend refused with its reason. Oracles: the plain glTF scene object's path (poseScene,
// GltfModel::pose), its CPU image, closed-form rotations and the pack's own deltas.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "character/gltf_bytes.h"
#include "character/gnm_pack.h"
#include "character/rig.h"
#include "character/world.h"
#include "core/error.h"
#include "frame/frame.h"
#include "scene/scene.h"
#include "support/test_support.h"

namespace sf::character {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using test::GltfBytes;

constexpr float kPi = 3.14159265358979f;

SceneLoadOptions outside() {
  SceneLoadOptions o;
  o.confine_paths = false;  // the shared assets lie outside the test's directory
  return o;
}

// Every mesh's posed positions and placement equal, value for value.
void expectSameMeshes(const std::vector<RenderMesh>& a, const std::vector<RenderMesh>& b,
                      const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t m = 0; m < a.size(); ++m) {
    ASSERT_EQ(a[m].positions.size(), b[m].positions.size()) << what << " mesh " << m;
    ASSERT_GT(a[m].positions.size(), 0u) << what << " mesh " << m;
    size_t differ = 0;
    for (size_t v = 0; v < a[m].positions.size(); ++v)
      differ += a[m].positions[v].x != b[m].positions[v].x || a[m].positions[v].y != b[m].positions[v].y ||
                a[m].positions[v].z != b[m].positions[v].z;
    EXPECT_EQ(differ, 0u) << what << " mesh " << m << ": vertices that differ";
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        EXPECT_EQ(a[m].object_to_world.m[i][j], b[m].object_to_world.m[i][j]) << what;
  }
}

// The meshes of one glTF at clip `clip`, time `t`, placed by `to_world`: GltfModel::pose, the scene path's
// own.
struct Posed {
  GltfModel::Pose pose;
  std::vector<RenderMesh> meshes;
};
void poseModel(const GltfModel& model, int clip, float t, const Mat4& to_world, Posed& out) {
  model.pose(clip, clip >= 0 ? anim::wrapTime(t, model.clips()[static_cast<size_t>(clip)].duration) : t,
             out.pose);
  out.meshes = model.renderMeshes(out.pose, to_world);
}

std::string logText(CharacterWorld& w) {
  std::string s;
  for (const std::string& l : w.takeLog()) s += l + "\n";
  return s;
}

TEST(SpawnGltf, PosedVerticesEqualTheSceneObjectPath) {
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  const fs::path dir = test::tempDir("SpawnGltfVertices");
  // The same file as a plain glTF scene object (poseScene) and spawned by a script (the character world).
  const Scene object =
      parseSceneJson(Json{{"objects", {{{"gltf", man}}}}}.dump(), (dir / "object.json").string(), outside());
  const Scene spawned = parseSceneJson(
      Json{{"script", {{{"t", 0}, {"command", "spawn-character"}, {"id", "a"}, {"package", man}}}}}.dump(),
      (dir / "spawn.json").string(), outside());
  for (const double t : {0.0, 0.5, 1.3}) {
    SceneFrame frame;
    poseScene(object, t, frame);
    CharacterWorld world;
    world.advanceTo(t, spawned.script);
    EXPECT_EQ(world.kind("a"), "gltf");
    std::vector<RenderMesh> meshes;
    const std::vector<RenderObject> objects = world.renderObjects(false, &meshes);
    EXPECT_TRUE(objects.empty()) << "a plain glTF draws meshes, no splats";
    const std::string log = logText(world);
    EXPECT_EQ(log.find("placeholder"), std::string::npos) << log;
    expectSameMeshes(meshes, frame.meshes, "t = " + std::to_string(t));
  }
}

TEST(SpawnGltf, RendersLikeThePlainGltfObjectOnTheCpu) {
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  const fs::path dir = test::tempDir("SpawnGltfImage");
  const Json camera = {
      {"eye", {0, 1, 3}}, {"target", {0, 0.7, 0}}, {"fov_y_deg", 45}, {"width", 96}, {"height", 72}};
  const Scene object = parseSceneJson(Json{{"objects", {{{"gltf", man}}}}, {"camera", camera}}.dump(),
                                      (dir / "object.json").string(), outside());
  const Scene spawned = parseSceneJson(
      Json{{"script", {{{"t", 0}, {"command", "spawn-character"}, {"id", "a"}, {"package", man}}}},
           {"camera", camera}}
          .dump(),
      (dir / "spawn.json").string(), outside());
  std::string said;
  FrameDriverOptions options;
  options.backend = Backend::kCpu;
  options.message = [&](const std::string& line) { said += line + "\n"; };
  FrameDriver driver(options);
  FrameRequest request;
  request.time = 0.5;
  request.camera = *object.camera;
  const FrameResult a = driver.render(object, request);
  ScenePlayback playback;
  const FrameResult b = driver.render(spawned, playback, request);
  EXPECT_EQ(said.find("placeholder"), std::string::npos) << said;
  EXPECT_GT(b.mesh_triangles, 0u);
  EXPECT_EQ(a.mesh_triangles, b.mesh_triangles);
  size_t covered = 0;
  for (size_t i = 3; i < b.image.pixels.size(); i += 4) covered += b.image.pixels[i] > 0;
  EXPECT_GT(covered, 200u) << "the spawned glTF covers pixels";
  EXPECT_EQ(a.image.pixels, b.image.pixels)
      << "a spawned glTF at t = 0.5 is drawn as the same glTF declared as a scene object";
  // Framing (render without a camera, the viewer) sees the spawned meshes as it sees the object's.
  const CloudBounds bo = sceneBounds(object, 0.5), bs = sceneBounds(spawned, 0.5);
  EXPECT_EQ(bo.p01.x, bs.p01.x);
  EXPECT_EQ(bo.p01.y, bs.p01.y);
  EXPECT_EQ(bo.p99.z, bs.p99.z);
  EXPECT_LT(length(bs.p99 - bs.p01), 10.0f);
}

TEST(SpawnGltf, TwoSpawnsAnimateIndependentlyAndDespawnRemovesOne) {
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  const GltfModel model(man);
  const Mat4 right = Mat4::fromLinearTranslation(Mat3{}, {1.5f, 0, 0});
  std::vector<ScriptCommand> script(3);
  script[0].t = 0, script[0].command = "spawn-character", script[0].id = "a", script[0].package = man;
  script[1].t = 0.25, script[1].command = "spawn-character", script[1].id = "b", script[1].package = man,
  script[1].transform = right;
  script[2].t = 0.75, script[2].command = "despawn", script[2].id = "a";
  for (ScriptCommand& c : script) c.where = "test";
  CharacterWorld world;
  world.advanceTo(0.5, script);
  ASSERT_EQ(world.kind("a"), "gltf");
  ASSERT_EQ(world.kind("b"), "gltf");
  std::vector<RenderMesh> meshes;
  world.renderObjects(false, &meshes);
  const size_t per = model.drawnPrimitives();
  ASSERT_EQ(meshes.size(), 2 * per);
  // Each spawn plays the clip on its own clock: a from 0, b from its spawn at 0.25.
  Posed at_a, at_b;
  poseModel(model, 0, 0.5f, Mat4{}, at_a);
  poseModel(model, 0, 0.25f, right, at_b);
  expectSameMeshes({meshes.begin(), meshes.begin() + static_cast<std::ptrdiff_t>(per)}, at_a.meshes, "a");
  expectSameMeshes({meshes.begin() + static_cast<std::ptrdiff_t>(per), meshes.end()}, at_b.meshes, "b");
  // A look-at or a clip change on one does not reach the other.
  world.setState("a", "0", std::nullopt, 0.0f);
  world.renderObjects(false, &meshes);
  expectSameMeshes({meshes.begin() + static_cast<std::ptrdiff_t>(per), meshes.end()}, at_b.meshes,
                   "b after a's clip restarted");
  // Despawn: only b is left, and it goes on from where it was (times in quarters: exact in float).
  world.advanceTo(1.0, script);
  EXPECT_FALSE(world.has("a"));
  EXPECT_EQ(world.kind("a"), "");
  world.renderObjects(false, &meshes);
  ASSERT_EQ(meshes.size(), per);
  poseModel(model, 0, 0.75f, right, at_b);
  expectSameMeshes(meshes, at_b.meshes, "b after a's despawn");
}

// Nodes: 0 body (mesh, skin), 1 neck at (0, 1.5, 0), 2 head 0.1 m above it. Skin joints [neck, head]; a quad
// in front of the head (z = 0.1) weighted wholly to the head. Clips: "still" (the head at rest, 1 s) and
// "nod" (the head from rest to 90 degrees about +x over 1 s).
std::string writeHeadGltf(const fs::path& dir) {
  GltfBytes g;
  const Vec3 quad[4] = {
      {-0.05f, 1.55f, 0.1f}, {0.05f, 1.55f, 0.1f}, {0.05f, 1.65f, 0.1f}, {-0.05f, 1.65f, 0.1f}};
  const uint32_t idx[6] = {0, 1, 2, 0, 2, 3};
  uint8_t joints[16] = {};
  float weights[16] = {};
  for (int v = 0; v < 4; ++v) joints[v * 4] = 1, weights[v * 4] = 1;
  float ibm[2 * 16] = {};
  const float bind_y[2] = {1.5f, 1.6f};
  for (int j = 0; j < 2; ++j) {  // column-major inverse translations
    float* m = ibm + j * 16;
    m[0] = m[5] = m[10] = m[15] = 1;
    m[13] = -bind_y[j];
  }
  const float times[2] = {0, 1};
  const float still[8] = {0, 0, 0, 1, 0, 0, 0, 1};  // x, y, z, w
  const float s = std::sin(kPi / 4), c = std::cos(kPi / 4);
  const float nod[8] = {0, 0, 0, 1, s, 0, 0, c};
  const int pos = g.add(quad, sizeof quad, 5126, 4, "VEC3");
  const int jnt = g.add(joints, sizeof joints, 5121, 4, "VEC4");
  const int wgt = g.add(weights, sizeof weights, 5126, 4, "VEC4");
  const int ind = g.add(idx, sizeof idx, 5125, 6, "SCALAR");
  const int inv = g.add(ibm, sizeof ibm, 5126, 2, "MAT4");
  const int in = g.add(times, sizeof times, 5126, 2, "SCALAR");
  const int out_still = g.add(still, sizeof still, 5126, 2, "VEC4");
  const int out_nod = g.add(nod, sizeof nod, 5126, 2, "VEC4");
  g.accessors[static_cast<size_t>(in)]["min"] = {0};
  g.accessors[static_cast<size_t>(in)]["max"] = {1};
  auto clip = [&](const char* name, int output) {
    return Json{{"name", name},
                {"channels", {{{"sampler", 0}, {"target", {{"node", 2}, {"path", "rotation"}}}}}},
                {"samplers", {{{"input", in}, {"output", output}, {"interpolation", "LINEAR"}}}}};
  };
  Json doc = {{"asset", {{"version", "2.0"}}},
              {"scene", 0},
              {"scenes", {{{"nodes", {0, 1}}}}},
              {"nodes",
               {{{"name", "body"}, {"mesh", 0}, {"skin", 0}},
                {{"name", "neck"}, {"translation", {0, 1.5, 0}}, {"children", {2}}},
                {{"name", "head"}, {"translation", {0, 0.1, 0}}}}},
              {"meshes",
               {{{"primitives",
                  {{{"attributes", {{"POSITION", pos}, {"JOINTS_0", jnt}, {"WEIGHTS_0", wgt}}},
                    {"indices", ind}}}}}}},
              {"skins", {{{"joints", {1, 2}}, {"inverseBindMatrices", inv}}}},
              {"animations", {clip("still", out_still), clip("nod", out_nod)}},
              {"accessors", g.accessors},
              {"bufferViews", g.views},
              {"buffers",
               {{{"byteLength", g.bin.size()},
                 {"uri", "data:application/octet-stream;base64," + test::encodeBase64(g.bin)}}}}};
  const std::string path = (dir / "head.gltf").string();
  std::ofstream(path) << doc.dump();
  return path;
}

// Turns p about the vertical axis through the origin by `yaw` (positive takes +z towards +x).
Vec3 yawed(Vec3 p, float yaw) {
  return {p.x * std::cos(yaw) + p.z * std::sin(yaw), p.y, -p.x * std::sin(yaw) + p.z * std::cos(yaw)};
}

TEST(SpawnGltf, LookAtTurnsTheHeadJointFoundByNameTowardsTheTarget) {
  const fs::path dir = test::tempDir("SpawnGltfLookAt");
  const std::string file = writeHeadGltf(dir);
  CharacterWorld world;
  world.spawn("a", file, Mat4{});  // the first clip, "still": the head at rest faces +z
  ASSERT_EQ(world.kind("a"), "gltf");
  const Animator* animator = world.animator("a");
  ASSERT_NE(animator, nullptr);
  ASSERT_GE(animator->headJoint(), 0);
  EXPECT_EQ(animator->character().model().skeleton().names()[static_cast<size_t>(animator->headJoint())],
            "head");
  const Vec3 head{0, 1.6f, 0};
  // Yaw 30 degrees, level: neck and head turn together about the vertical through both pivots, so the quad
  // weighted to the head turns by exactly 30 degrees about the y axis.
  const float yaw = 30 * kPi / 180;
  world.lookAt("a", head + 2.0f * Vec3{std::sin(yaw), 0, std::cos(yaw)});
  std::vector<RenderMesh> meshes;
  world.renderObjects(false, &meshes);
  ASSERT_EQ(meshes.size(), 1u);
  const GltfPrimitive& rest = animator->character().model().primitiveOf(0);
  ASSERT_EQ(meshes[0].positions.size(), 4u);
  for (size_t v = 0; v < 4; ++v)
    EXPECT_LT(length(meshes[0].positions[v] - yawed(rest.positions[v], yaw)), 1e-5f) << "vertex " << v;
  EXPECT_NEAR(animator->lastAim().yaw, 30.0f, 1e-3f);
  // Yaw 20 and pitch 10 degrees: the head's forward (+z at rest) points at the target.
  const float y2 = 20 * kPi / 180, p2 = 10 * kPi / 180;
  const Vec3 dir2{std::cos(p2) * std::sin(y2), std::sin(p2), std::cos(p2) * std::cos(y2)};
  world.lookAt("a", head + 1.5f * dir2);
  GltfModel::Pose pose;
  animator->evaluateMeshes(pose);
  const Mat4& m = pose.models[static_cast<size_t>(animator->headJoint())];
  const Vec3 forward = normalize(m.linear() * Vec3{0, 0, 1});
  EXPECT_LT(length(forward - dir2), 1e-4f) << forward.x << " " << forward.y << " " << forward.z;
  // Stopping the look-at gives the clip's pose back.
  world.lookAt("a", std::nullopt);
  world.renderObjects(false, &meshes);
  for (size_t v = 0; v < 4; ++v) EXPECT_LT(length(meshes[0].positions[v] - rest.positions[v]), 1e-6f);
}

TEST(SpawnGltf, ClipsAreChosenByNameAsForSplatCharacters) {
  const fs::path dir = test::tempDir("SpawnGltfClips");
  const std::string file = writeHeadGltf(dir);
  const GltfModel model(file);
  std::vector<ScriptCommand> script(3);
  script[0].command = "spawn-character", script[0].id = "a", script[0].package = file, script[0].clip = "nod";
  script[1].command = "spawn-character", script[1].id = "b", script[1].package = file;
  script[2].t = 0.25, script[2].command = "set-character-state", script[2].id = "b", script[2].clip = "nod",
  script[2].fade = 0;
  for (ScriptCommand& c : script) c.where = "test";
  CharacterWorld world;
  world.advanceTo(0.5, script);
  std::vector<RenderMesh> meshes;
  world.renderObjects(false, &meshes);
  ASSERT_EQ(meshes.size(), 2u);
  Posed nod_a, nod_b;
  poseModel(model, 1, 0.5f, Mat4{}, nod_a);
  poseModel(model, 1, 0.25f, Mat4{}, nod_b);  // b plays "nod" from 0.25
  expectSameMeshes({meshes[0]}, nod_a.meshes, "a plays nod from its spawn");
  expectSameMeshes({meshes[1]}, nod_b.meshes, "b plays nod from set-character-state");
  // An unknown clip names the file's clips.
  const std::string why = test::errorOf([&] { world.spawn("c", file, Mat4{}, "dance"); });
  EXPECT_NE(why.find("no clip 'dance'"), std::string::npos) << why;
  EXPECT_NE(why.find("'nod'"), std::string::npos) << why;
  // A file that is not a glTF: the placeholder, with the file and the cause.
  std::ofstream(dir / "broken.glb") << "not a glb";
  world.spawn("d", (dir / "broken.glb").string(), Mat4{});
  EXPECT_EQ(world.kind("d"), "placeholder");
  const std::string log = logText(world);
  EXPECT_NE(log.find("broken.glb"), std::string::npos) << log;
  EXPECT_NE(log.find("placeholder"), std::string::npos) << log;
}

TEST(SpawnGltf, ASplatCharacterBesideItIsDeformedAsAlone) {
  const fs::path dir = test::tempDir("SpawnGltfBeside");
  const std::string file = writeHeadGltf(dir);
  Character::fromGltf(std::make_shared<const GltfModel>(file), 64).savePackage((dir / "pkg").string());
  // "a" (a glTF) poses its meshes for the renderer's skin pass first; after its despawn "b" (a splat
  // character) takes its place in the world's frame storage and must be posed and deformed on the CPU.
  CharacterWorld world, alone;
  world.spawn("a", file, Mat4{}, "nod");
  world.spawn("b", (dir / "pkg").string(), Mat4{}, "nod");
  alone.spawn("b", (dir / "pkg").string(), Mat4{}, "nod");
  ASSERT_EQ(world.kind("b"), "package");
  std::vector<RenderMesh> meshes;
  world.renderObjects(true, &meshes);
  world.despawn("a");
  world.update(0.5f), alone.update(0.5f);
  const std::vector<RenderObject> got = world.renderObjects(false), want = alone.renderObjects(false);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(got[0].positions.size(), 64u);
  ASSERT_EQ(want[0].positions.size(), 64u);
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(length(got[0].positions[i] - want[0].positions[i]), 0.0f) << i;
}

// A pack whose rest pose is its bind pose: five vertices wholly on the root joint (identity rest and inverse
// bind), two eye joints, two basis vectors, a bind transform that lifts the head by (0.2, 1.6, -0.1). Posed
// at controls c, vertex v is therefore bind(neutral[v] + c0 basis0[v] + c1 basis1[v]).
const Vec3 kLift{0.2f, 1.6f, -0.1f};
GnmPack restPack() {
  GnmPack p;
  p.neutral = {
      {0, 0, 0.08f}, {0.03f, 0.02f, 0.07f}, {-0.03f, 0.02f, 0.07f}, {0, -0.05f, 0.06f}, {0, 0.06f, 0.05f}};
  p.triangles = {0, 1, 4, 0, 4, 2, 0, 3, 1, 0, 2, 3};
  p.basis = {
      {0, 0, 0.01f},       {0.002f, 0, 0}, {-0.002f, 0, 0}, {0, -0.02f, 0}, {0, 0, 0},             // "jaw"
      {0.001f, 0.001f, 0}, {0, 0.003f, 0}, {0, 0.003f, 0},  {0, 0, 0.001f}, {0, 0.002f, 0.002f}};  // "smile"
  const Mat4 eye_l = Mat4::fromLinearTranslation(Mat3{}, {0.03f, 0.03f, 0.05f}),
             eye_r = Mat4::fromLinearTranslation(Mat3{}, {-0.03f, 0.03f, 0.05f});
  p.joints = {GnmJoint{"head", -1, Mat4{}, Mat4{}}, GnmJoint{"eyeL", 0, eye_l, inverseAffine(eye_l)},
              GnmJoint{"eyeR", 0, eye_r, inverseAffine(eye_r)}};
  p.lbs_joints.assign(5, {0, 0, 0, 0});
  p.lbs_weights.assign(5, {1, 0, 0, 0});
  p.eye_joints = {1, 2};
  p.bind_transform = Mat4::fromLinearTranslation(Mat3{}, kLift);
  p.control_names = {"jaw", "smile", "gazePitchLeft", "gazeYawLeft", "gazePitchRight", "gazeYawRight"};
  return p;
}

// The preview's one render object of the world (its only character).
RenderObject previewOf(CharacterWorld& world) {
  const std::vector<RenderObject> objects = world.renderObjects(false);
  EXPECT_EQ(objects.size(), 1u);
  return objects.empty() ? RenderObject{} : objects[0];
}

TEST(SpawnGnm, OneGaussianPerVertexMovedByTheControlsAsThePacksDeltasSay) {
  const fs::path dir = test::tempDir("SpawnGnm");
  const GnmPack pack = restPack();
  saveGnmPack(pack, (dir / "head.sfgnm").string());
  const Mat4 place = Mat4::fromLinearTranslation(Mat3{}, {1, 0, 0});
  const Scene scene = parseSceneJson(
      Json{{"script",
            {{{"t", 0},
              {"command", "spawn-character"},
              {"id", "h"},
              {"package", "head.sfgnm"},
              {"transform", {{"translation", {1, 0, 0}}}}},
             {{"t", 1},
              {"command", "set-controls"},
              {"id", "h"},
              {"controls", {{"jaw", 0.5}, {"smile", -0.25}}}},
             {{"t", 2}, {"command", "set-controls"}, {"id", "h"}, {"controls", {1, 2, 0, 0, 0, 0}}},
             {{"t", 3},
              {"command", "set-expression"},
              {"id", "h"},
              {"space", "gnm"},
              {"weights", {0, 0.75, 0, 0, 0, 0}}}}}}
          .dump(),
      (dir / "scene.json").string());
  CharacterWorld world;
  const auto expectAt = [&](double t, float c0, float c1) {
    world.advanceTo(t, scene.script);
    ASSERT_EQ(world.kind("h"), "gnm");
    const RenderObject o = previewOf(world);
    ASSERT_NE(o.cloud, nullptr);
    ASSERT_EQ(o.cloud->size(), pack.vertexCount()) << "one gaussian per vertex";
    ASSERT_EQ(o.positions.size(), pack.vertexCount());
    ASSERT_EQ(o.covariances.size(), pack.vertexCount());
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_EQ(o.object_to_world.m[i][j], place.m[i][j]);
    const size_t v_count = pack.vertexCount();
    for (size_t v = 0; v < v_count; ++v) {
      const Vec3 expected = pack.neutral[v] + c0 * pack.basis[v] + c1 * pack.basis[v_count + v] + kLift;
      EXPECT_LT(length(o.positions[v] - expected), 1e-6f) << "t = " << t << ", vertex " << v;
      EXPECT_NEAR(o.covariances[v][0], 0.002f * 0.002f, 1e-9f);
      EXPECT_EQ(o.covariances[v][1], 0.0f);
    }
  };
  expectAt(0.5, 0, 0);          // the neutral mesh in the body's bind space
  expectAt(1.5, 0.5f, -0.25f);  // by name
  expectAt(2.5, 1, 2);          // the whole vector
  expectAt(3.5, 0, 0.75f);      // an expression in the pack's own space
  const std::string log = logText(world);
  EXPECT_EQ(log.find("placeholder"), std::string::npos) << log;
  // Bad controls name the character and what it takes.
  std::string why = test::errorOf([&] { world.setControls("h", {}, {{"frown", 1}}); });
  EXPECT_NE(why.find("character 'h' has no control 'frown' (its controls: jaw, smile, gazePitchLeft"),
            std::string::npos)
      << why;
  why = test::errorOf([&] { world.setControls("h", {1, 2}); });
  EXPECT_NE(why.find("set-controls needs 6 values"), std::string::npos) << why;
  why = test::errorOf([&] { world.setExpression("h", Expression{"arkit52", std::vector<float>(52, 0.0f)}); });
  EXPECT_NE(why.find("no arkit_map"), std::string::npos) << why;
}

TEST(SpawnGnm, LookAtTurnsTheGazeAndTwoSpawnsKeepTheirOwnControls) {
  const fs::path dir = test::tempDir("SpawnGnmLookAt");
  saveGnmPack(restPack(), (dir / "head.sfgnm").string());
  CharacterWorld world;
  world.spawn("a", (dir / "head.sfgnm").string(), Mat4{});
  world.spawn("b", (dir / "head.sfgnm").string(), Mat4{});
  // The eyes' midpoint at rest is (0, 0.03, 0.05) head-local, (0.2, 1.63, -0.05) in the body.
  const Vec3 eyes = Vec3{0, 0.03f, 0.05f} + kLift;
  const float yaw = 0.3f, pitch_up = 0.2f;
  world.lookAt("a", eyes + Vec3{std::cos(pitch_up) * std::sin(yaw), std::sin(pitch_up),
                                std::cos(pitch_up) * std::cos(yaw)});
  world.setControls("b", {}, {{"jaw", 1}});
  const GnmRig* a = world.gnmRig("a");
  const GnmRig* b = world.gnmRig("b");
  ASSERT_TRUE(a && b);
  // Pitch is positive-down (GNM's sign): a target above the eyes gives a negative pitch.
  const std::vector<float> expect_a{0, 0, -pitch_up, yaw, -pitch_up, yaw};
  for (size_t i = 0; i < expect_a.size(); ++i) EXPECT_NEAR(a->controls()[i], expect_a[i], 1e-5f) << i;
  const std::vector<float> expect_b{1, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < expect_b.size(); ++i) EXPECT_EQ(b->controls()[i], expect_b[i]) << i;
  // Despawn removes the preview.
  world.despawn("a");
  EXPECT_EQ(world.renderObjects(false).size(), 1u);
}

// A minimal bundle directory whose scene.json has no "rig" block (so the orl default), or declares `rig`.
std::string writeBundle(const fs::path& dir, const Json& rig) {
  fs::create_directories(dir / "head");
  for (const char* f : {"head/geom.onnx", "head/appr.onnx"})
    std::ofstream(dir / f) << "not loaded by the layout check";
  std::ofstream(dir / "head/mesh.json")
      << R"({"vertex_count": 3, "triangle_count": 1, "positions": {"offset": 0}, "uvs": {"offset": 36}, "indices": {"offset": 60}})";
  {
    std::ofstream bin(dir / "head/mesh.bin", std::ios::binary);
    const float data[15] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1};
    const uint32_t idx[3] = {0, 1, 2};
    bin.write(reinterpret_cast<const char*>(data), sizeof data);
    bin.write(reinterpret_cast<const char*>(idx), sizeof idx);
  }
  Json scene = {{"mode", "multi_region"},
                {"order", {"head"}},
                {"branches",
                 {{"head",
                   {{"decoders", {{"geom", "head/geom.onnx"}, {"appr", "head/appr.onnx"}}},
                    {"mesh_bin", "head/mesh.bin"},
                    {"mesh_json", "head/mesh.json"},
                    {"uv_resolution", 8}}}}}};
  if (!rig.is_null()) scene["rig"] = rig;
  std::ofstream(dir / "scene.json") << scene.dump();
  return dir.string();
}

TEST(SpawnBundle, AnOrlRigIsRefusedWithItsReasonNotAPlaceholder) {
  const fs::path dir = test::tempDir("SpawnOrl");
  writeBundle(dir / "dna", Json{{"backend", "orl"}});
  writeBundle(dir / "plain", Json());  // no rig block: orl by default
  // The world refuses it (an error naming the bundle and why), keeping nothing.
  CharacterWorld world;
  std::string why = test::errorOf([&] { world.spawn("x", (dir / "dna").string(), Mat4{}); });
  EXPECT_NE(why.find("character 'x'"), std::string::npos) << why;
  EXPECT_NE(why.find("scene.json: rig backend \"orl\" is refused"), std::string::npos) << why;
  EXPECT_NE(why.find("OpenRigLogic DNA"), std::string::npos) << why;
  EXPECT_NE(why.find("no DNA reader or evaluator"), std::string::npos) << why;
  EXPECT_FALSE(world.has("x"));
  why = test::errorOf([&] { world.spawn("y", (dir / "plain").string(), Mat4{}); });
  EXPECT_NE(why.find("(the default of a bundle without a \"rig\" block)"), std::string::npos) << why;
  // The scene loader refuses it too, for an object (even when not strict) and for a script's spawn.
  SceneLoadOptions lenient;
  why = test::errorOf(
      [&] { parseSceneJson(R"({"objects": [{"character": "dna"}]})", (dir / "a.json").string(), lenient); });
  EXPECT_NE(why.find("objects[0].character"), std::string::npos) << why;
  EXPECT_NE(why.find("rig backend \"orl\" is refused"), std::string::npos) << why;
  why = test::errorOf([&] {
    parseSceneJson(R"({"script": [{"t": 0, "command": "spawn-character", "id": "x", "package": "plain"}]})",
                   (dir / "b.json").string(), lenient);
  });
  EXPECT_NE(why.find("script[0].package"), std::string::npos) << why;
  EXPECT_NE(why.find("rig backend \"orl\""), std::string::npos) << why;
  // The same bundle declaring another backend is no longer refused for its rig (it fails later, for its
  // decoders, as a placeholder with that reason).
  writeBundle(dir / "skinned", Json{{"backend", "skinned"}, {"pack", "head/mesh.json"}});
  world.spawn("z", (dir / "skinned").string(), Mat4{});
  EXPECT_EQ(world.kind("z"), "placeholder");
  const std::string log = logText(world);
  EXPECT_EQ(log.find("orl"), std::string::npos) << log;
}

}  // namespace
}  // namespace sf::character
