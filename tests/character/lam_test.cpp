// The LAM avatar as a splat character (../shared/assets/characters/lam_avatar): per-vertex binding (row i
// of offset.ply belongs to vertex i of skin.glb, docs/formats/character.md), the rest pose against the
// static aligned cloud, ARKit expressions moving the right splats (measured displacements), look-at, and
// the expression-space, animator and character-command contracts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "anim/local_to_model.h"
#include "character/animator.h"
#include "character/character.h"
#include "character/world.h"
#include "core/error.h"
#include "io/formats.h"
#include "render/cpu_renderer.h"
#include "support/test_support.h"

namespace sf::character {
namespace {

std::shared_ptr<const Character> lamCharacter(const std::string& dir) {
  static std::shared_ptr<const Character> cached;
  if (!cached) {
    GaussianCloud ply = loadSplats(dir + "/offset.ply").cloud;
    cached = std::make_shared<Character>(
        Character::bindPerVertex(std::make_shared<GltfModel>(dir + "/skin.glb"), ply, 0.0f, true));
  }
  return cached;
}

#define SF_REQUIRE_LAM(var)                                       \
  SF_REQUIRE_ASSET(lam_ply_, "characters/lam_avatar/offset.ply"); \
  SF_REQUIRE_ASSET(lam_glb_, "characters/lam_avatar/skin.glb");   \
  std::shared_ptr<const Character> var = lamCharacter(test::assetsDir() + "/characters/lam_avatar")

Camera faceCamera(int size = 160) {
  return lookAtCamera({0, 1.65f, 0.55f}, {0, 1.62f, 0}, {0, 1, 0}, 40, size, size);
}

Expression arkit(std::initializer_list<std::pair<const char*, float>> named) {
  Expression e{"arkit52", std::vector<float>(52, 0.0f)};
  for (const auto& [n, w] : named) e.weights[static_cast<size_t>(arkitIndex(n))] = w;
  return e;
}

// World-space displacement of every splat centre between the rest pose and an expression (deformed
// centres live in the skinned mesh node's space; meshToModel places them).
std::vector<float> displacement(const Character& c, const Expression& e) {
  Character::Frame rest, moved;
  c.deform(-1, 0, rest);
  Character::Controls controls;
  controls.morph = c.mapExpression(e);
  c.deform(-1, 0, moved, &controls);
  const size_t draw = static_cast<size_t>(c.boundDraw());
  std::vector<float> d(rest.positions.size());
  for (size_t i = 0; i < d.size(); ++i)
    d[i] = length(transformPoint(c.model().meshToModel(moved.pose, draw), moved.positions[i]) -
                  transformPoint(c.model().meshToModel(rest.pose, draw), rest.positions[i]));
  return d;
}

TEST(LamAvatar, RestPoseRendersLikeTheAlignedStaticCloud) {
  SF_REQUIRE_LAM(lam);
  ASSERT_EQ(lam->splats().size(), 20018u);
  EXPECT_EQ(lam->expressionSpace(), "arkit52");
  Character::Frame rest;
  lam->deform(-1, 0, rest);
  // The documented alignment: splat i at skin vertex i (offset scale 0), in the skin's bind space, which
  // is world space here (every joint's world matrix times its inverse bind is the identity), so the rest
  // pose places each splat back on its vertex.
  const GltfPrimitive& prim = lam->model().primitiveOf(static_cast<size_t>(lam->boundDraw()));
  const Mat4 to_world = lam->model().meshToModel(rest.pose, static_cast<size_t>(lam->boundDraw()));
  float worst = 0;
  for (size_t i = 0; i < rest.positions.size(); ++i)
    worst = std::max(worst, length(transformPoint(to_world, rest.positions[i]) - prim.positions[i]));
  std::printf("LAM rest: max |centre - vertex| = %.2e m\n", worst);
  EXPECT_LT(worst, 1e-4f);
  RenderObject animated(&lam->splats(), to_world, rest.positions, rest.covariances);
  RenderObject still(&lam->splats(), Mat4{});
  const Camera cam = faceCamera();
  ImageDiff d = compareImages(renderCpu({&animated, 1}, cam, RenderSettings{}),
                              renderCpu({&still, 1}, cam, RenderSettings{}));
  std::printf("LAM rest pose vs the static aligned cloud: PSNR %.2f dB, %.3f%% pixels over 2/255\n", d.psnr,
              100 * d.fraction_over);
  EXPECT_GE(d.psnr, 50.0);
}

TEST(LamAvatar, JawOpenAndEyeBlinkMoveTheRightSplats) {
  SF_REQUIRE_LAM(lam);
  const GltfPrimitive& prim = lam->model().primitiveOf(static_cast<size_t>(lam->boundDraw()));
  const GltfMesh& mesh = lam->model().document().meshes[static_cast<size_t>(
      lam->model().drawInfo(static_cast<size_t>(lam->boundDraw())).mesh)];
  auto targetDelta = [&](const char* name, size_t v) {
    for (size_t t = 0; t < mesh.target_names.size(); ++t)
      if (mesh.target_names[t] == name) return length(prim.targets[t].positions[v]);
    return -1.0f;
  };
  for (const char* name : {"jawOpen", "eyeBlinkLeft"}) {
    std::vector<float> d = displacement(*lam, arkit({{name, 1.0f}}));
    float moved_max = 0, still_max = 0;
    double moved_x = 0;
    size_t moved = 0, still = 0;
    const std::vector<uint32_t>& tris = lam->triangles();
    for (size_t i = 0; i < d.size(); ++i) {
      // A splat whose triangle's vertices the target leaves in place must stay; the splat at a vertex the
      // target moves by more than 2 mm must move.
      const uint32_t t = lam->bindings()[i].triangle;
      float tri_delta = 0;
      for (size_t k = 0; k < 3; ++k) tri_delta = std::max(tri_delta, targetDelta(name, tris[t * 3 + k]));
      if (tri_delta == 0) still_max = std::max(still_max, d[i]), ++still;
      if (targetDelta(name, i) > 0.002f)
        moved_max = std::max(moved_max, d[i]), moved_x += prim.positions[i].x, ++moved;
    }
    std::printf(
        "%s: %zu splats at vertices moved > 2 mm by the target (max displacement %.1f mm, mean x %+.1f mm); "
        "%zu splats on "
        "unmoved triangles (max displacement %.2e m)\n",
        name, moved, moved_max * 1e3, moved ? moved_x / static_cast<double>(moved) * 1e3 : 0.0, still,
        still_max);
    ASSERT_GT(moved, 10u);
    EXPECT_GT(moved_max, 0.004f);
    EXPECT_GT(still, 10000u);  // most of the head is far from the mouth and the eyelid
    EXPECT_LT(still_max, 1e-5f);
    if (std::string(name) == "eyeBlinkLeft") {
      EXPECT_GT(moved_x / static_cast<double>(moved), 0.01);  // the character's left is +x
    }
  }
}

TEST(LamAvatar, LookAtAimsTheHeadWithinLimitsAndTheEyesTakeTheRest) {
  SF_REQUIRE_LAM(lam);
  Animator a(lam);
  ASSERT_GE(a.headJoint(), 0);
  ASSERT_GE(a.neckJoint(), 0);
  auto headForward = [&](const Character::Frame& f) {
    const Mat4& h = f.pose.models[static_cast<size_t>(a.headJoint())];
    return std::pair{h.translation(), normalize(h.linear() * Vec3{0, 0, 1})};
  };
  Character::Frame rest;
  a.evaluate(rest, true);
  const Vec3 head = headForward(rest).first;
  // Within the limits: the head's forward points at the target.
  const Vec3 target = head + Vec3{0.5f, 0.2f, 1.0f};
  a.lookAt(target);
  Character::Frame f;
  a.evaluate(f, true);
  const Vec3 fwd = headForward(f).second;
  const float err =
      std::acos(std::clamp(dot(fwd, normalize(target - headForward(f).first)), -1.0f, 1.0f)) * 57.2958f;
  std::printf(
      "look-at within limits: yaw %.1f, pitch %.1f deg applied; head forward off target by %.2f deg\n",
      a.lastAim().yaw, a.lastAim().pitch, err);
  EXPECT_LT(err, 2.0f);
  EXPECT_EQ(a.lastAim().eye_yaw, 0.0f);
  // Far to the side: the head stops at the yaw limit and the eyes take the residual through the gaze
  // morph targets (the avatar has no eye joints).
  a.lookAt(head + Vec3{3.0f, 0.0f, 0.2f});
  a.evaluate(f, true);
  EXPECT_NEAR(a.lastAim().yaw, 60.0f, 1e-3f);
  EXPECT_GT(a.lastAim().eye_yaw, 20.0f);
  EXPECT_TRUE(a.lastAim().eyes_by_morph);
}

TEST(LamAvatar, RetargetedClipsPlayOnTheSplats) {
  SF_REQUIRE_LAM(lam_base);
  SF_REQUIRE_ASSET(anim_glb, "characters/lam_avatar/animation.glb");
  Character c = *lam_base;
  const anim::RetargetReport r = c.attachClips(anim_glb);
  EXPECT_EQ(c.model().clips().size(), 12u);
  EXPECT_EQ(r.dropped, 0u);
  EXPECT_EQ(r.mapped, 6120u);
  const int hello = c.model().findClip("yumi_h5_a3_hello");
  ASSERT_GE(hello, 0);
  Character::Frame rest, f;
  c.deform(-1, 0, rest);
  const size_t draw = static_cast<size_t>(c.boundDraw());
  float moved = 0;
  for (float t : {0.5f, 1.5f}) {
    c.deform(hello, t, f);
    for (size_t i = 0; i < f.positions.size(); ++i)
      moved =
          std::max(moved, length(transformPoint(c.model().meshToModel(f.pose, draw), f.positions[i]) -
                                 transformPoint(c.model().meshToModel(rest.pose, draw), rest.positions[i])));
  }
  std::printf("LAM 'hello' clip: largest splat displacement from rest %.1f mm\n", moved * 1e3);
  EXPECT_GT(moved, 0.01f);
  // Locomotion at rest speed picks the idle clip by name (a retargeted clip: yumi_h5_a3_idle).
  Animator a(std::make_shared<Character>(c));
  a.setVelocity({0, 0, 0});
  const auto active = a.activeClips();
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].first, c.model().findClip("yumi_h5_a3_idle"));
  EXPECT_EQ(active[0].second, 1.0f);
}

TEST(CharacterContracts, ExpressionSpacesAreNeverReinterpreted) {
  SF_REQUIRE_LAM(lam);
  EXPECT_NO_THROW(lam->mapExpression(arkit({{"jawOpen", 0.5f}})));
  EXPECT_NO_THROW(lam->mapExpression(Expression{"morph", std::vector<float>(lam->morphTargetCount(), 0.1f)}));
  auto expectRefused = [&](const Character& c, const Expression& e, const std::string& why) {
    try {
      c.mapExpression(e);
      ADD_FAILURE() << "accepted space " << e.space;
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find(why), std::string::npos) << err.what();
    }
  };
  expectRefused(*lam, Expression{"morph", {1.0f, 2.0f}}, "needs 51 values");
  expectRefused(*lam, Expression{"arkit52", std::vector<float>(51, 0.0f)}, "needs 52 values");
  expectRefused(*lam, Expression{"flame", std::vector<float>(100, 0.0f)}, "unknown expression space 'flame'");
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  Character cm = Character::fromGltf(std::make_shared<GltfModel>(man), 100, 1);
  expectRefused(cm, arkit({{"jawOpen", 1.0f}}), "expression space 'arkit52' refused");
  expectRefused(cm, Expression{"morph", {}}, "has no morph targets");
  // Names the character lacks are reported, not remapped.
  std::vector<std::string> missing;
  lam->mapExpression(arkit({{"tongueOut", 1.0f}, {"jawOpen", 1.0f}}), &missing);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0], "tongueOut");
}

TEST(CharacterContracts, AnimatorCrossFadesToTheTargetPose) {
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  auto cm = std::make_shared<Character>(Character::fromGltf(std::make_shared<GltfModel>(man), 500, 2));
  Animator a(cm);
  a.play(0, 0.0f);
  a.update(0.5f);
  Character::Frame walking, half, rest, done;
  a.evaluate(walking);
  a.play(-1, 0.4f);  // fade to the rest pose
  a.update(0.2f);
  a.evaluate(half);
  a.update(0.3f);
  a.evaluate(done);
  cm->deform(-1, 0, rest);
  float to_rest_half = 0, to_rest_done = 0, to_walk_half = 0;
  for (size_t i = 0; i < rest.positions.size(); ++i) {
    to_rest_half = std::max(to_rest_half, length(half.positions[i] - rest.positions[i]));
    to_walk_half = std::max(to_walk_half, length(half.positions[i] - walking.positions[i]));
    to_rest_done = std::max(to_rest_done, length(done.positions[i] - rest.positions[i]));
  }
  EXPECT_GT(to_rest_half, 0.01f);  // mid-fade is neither pose
  EXPECT_GT(to_walk_half, 0.01f);
  EXPECT_LT(to_rest_done, 1e-5f);  // after the fade: exactly the target
}

TEST(CharacterContracts, CommandsPlaceholderAndErrors) {
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  const std::string dir = test::tempDir("CharacterCommands");
  Character::fromGltf(std::make_shared<GltfModel>(man), 300, 4).savePackage(dir + "/man");
  CharacterWorld w;
  w.spawn("hero", dir + "/man", Mat4{});
  w.spawn("ghost", dir + "/nowhere", Mat4{});  // keeps a placeholder, logs one warning
  std::vector<std::string> log = w.takeLog();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("nowhere/character.json: file is missing"), std::string::npos) << log[0];
  std::vector<RenderObject> objs = w.renderObjects(false);
  ASSERT_EQ(objs.size(), 2u);
  size_t placeholder_splats = 0;
  for (const RenderObject& o : objs)
    if (o.positions.empty()) placeholder_splats = o.cloud->size();
  EXPECT_GT(placeholder_splats, 100u);
  const Camera cam = lookAtCamera({0, 1, 4}, {0, 0.8f, 0}, {0, 1, 0}, 45, 80, 60);
  ImageRGBA img = renderCpu(objs, cam, RenderSettings{});
  double lit = 0;
  for (size_t i = 0; i < img.pixels.size(); i += 4) lit += img.pixels[i + 3] > 0.5f;
  EXPECT_GT(lit, 100);  // the placeholder path renders
  w.say("hero", "hello there");
  EXPECT_EQ(w.takeLog().at(0), "hero says: hello there");
  EXPECT_THROW(w.lookAt("nobody", Vec3{}), Error);
  ScriptCommand bad;
  bad.where = "scene.json: script[4]";
  bad.command = "set-expression";
  bad.id = "hero";
  bad.expression = arkit({{"jawOpen", 1.0f}});
  try {
    w.execute(bad);
    FAIL() << "wrong expression space accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scene.json: script[4] (set-expression)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("'arkit52' refused"), std::string::npos) << e.what();
  }
  bad.command = "dance";
  EXPECT_THROW(w.execute(bad), Error);
  w.despawn("ghost");
  EXPECT_EQ(w.size(), 1u);
}

}  // namespace
}  // namespace sf::character
