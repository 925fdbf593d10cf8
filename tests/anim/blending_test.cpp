// Blending: normalised weighted layers, masks, the rest-pose threshold, sign-corrected rotation blending,
// additive layers and cross-fades; plus skeleton construction.
#include "anim/blending.h"

#include <gtest/gtest.h>

#include <cmath>

#include "anim/skeleton.h"
#include "core/error.h"

namespace sf::anim {
namespace {

Quat axisAngle(Vec3 axis, float angle) {
  axis = normalize(axis);
  float s = std::sin(angle / 2);
  return {std::cos(angle / 2), axis.x * s, axis.y * s, axis.z * s};
}

float angleBetween(Quat a, Quat b) {
  float d = std::abs(a.w * b.w + a.x * b.x + a.y * b.y + a.z * b.z);
  return 2 * std::acos(std::min(1.0f, d));
}

Skeleton twoJoints() {
  JointDesc d[2];
  d[0].name = "root";
  d[1].name = "child";
  d[1].parent = 0;
  d[1].rest.translation = {0, 1, 0};
  d[1].morph_weights = 2;
  d[1].rest_weights = {0.5f, 0.5f};
  return Skeleton::build(d);
}

TEST(Skeleton, BuildOrdersParentsFirstAndFindsNames) {
  JointDesc d[4];
  d[0].name = "hand";
  d[0].parent = 2;
  d[1].name = "hips";
  d[2].name = "arm";
  d[2].parent = 1;
  d[3].name = "head";
  d[3].parent = 1;
  for (int i = 0; i < 4; ++i) d[i].source = 10 + i;
  Skeleton s = Skeleton::build(d);
  EXPECT_EQ(s.validate(), "");
  EXPECT_EQ(s.names(), (std::vector<std::string>{"hips", "arm", "hand", "head"}));
  EXPECT_EQ(s.parents(), (std::vector<int>{-1, 0, 1, 0}));
  EXPECT_EQ(s.find("hand"), 2);
  EXPECT_EQ(s.find("tail"), -1);
  EXPECT_EQ(s.findSource(10), 2);
  d[1].parent = 0;  // hips -> hand -> arm -> hips: a cycle
  EXPECT_THROW(Skeleton::build(d), Error);
  d[1].parent = 7;
  EXPECT_THROW(Skeleton::build(d), Error);
}

TEST(Blending, CrossFadeNormalisesWeights) {
  Skeleton s = twoJoints();
  std::vector<Transform> a = s.rest(), b = s.rest(), out(2);
  a[0].translation = {0, 0, 0};
  b[0].translation = {4, 0, 0};
  a[0].rotation = Quat{};
  b[0].rotation = axisAngle({0, 0, 1}, 1.0f);
  b[0].scale = {3, 3, 3};
  std::vector<float> wa = {0, 0}, wb = {1, 1}, w_out(2);
  CrossFade fade;
  fade.duration = 1;
  for (float elapsed : {0.0f, 0.3f, 0.5f, 1.0f}) {
    fade.elapsed = elapsed;
    float x = fade.weightOfTarget();
    // Un-normalised layer weights (x 4): the result must not depend on the scale.
    BlendLayer layers[2] = {{a, 4 * (1 - x), {}, wa}, {b, 4 * x, {}, wb}};
    BlendingJob job;
    job.skeleton = &s;
    job.layers = layers;
    job.output = out;
    job.output_weights = w_out;
    job.run();
    EXPECT_NEAR(out[0].translation.x, 4 * x, 1e-5f);
    EXPECT_NEAR(out[0].scale.x, 1 + 2 * x, 1e-5f);
    EXPECT_NEAR(w_out[0], x, 1e-6f);
    EXPECT_NEAR(angleBetween(out[0].rotation, axisAngle({0, 0, 1}, x * 1.0f)), 0.0f, 0.02f);  // nlerp ~ slerp
    EXPECT_NEAR(out[1].translation.y, 1, 1e-6f);
  }
  fade.elapsed = 0.5f;
  EXPECT_FLOAT_EQ(fade.weightOfTarget(), 0.5f);
  fade.advance(1.0f);
  EXPECT_TRUE(fade.done());
}

TEST(Blending, RotationSignCorrection) {
  Skeleton s = twoJoints();
  std::vector<Transform> a = s.rest(), b = s.rest(), out(2);
  Quat q = axisAngle({1, 0, 0}, 0.5f);
  a[0].rotation = q;
  b[0].rotation = {-q.w, -q.x, -q.y, -q.z};  // the same rotation
  BlendLayer layers[2] = {{a, 1, {}, {}}, {b, 1, {}, {}}};
  std::vector<float> w(2);
  BlendingJob job{&s, layers, {}, 0.1f, out, w};
  job.run();
  EXPECT_NEAR(angleBetween(out[0].rotation, q), 0.0f, 1e-3f);
}

TEST(Blending, MasksThresholdAndAdditive) {
  Skeleton s = twoJoints();
  std::vector<Transform> a = s.rest(), out(2);
  a[0].translation = {2, 0, 0};
  a[1].translation = {0, 5, 0};
  std::vector<float> mask = {1, 0};  // layer drives the root only
  BlendLayer layer{a, 1, mask, {}};
  std::vector<float> w(2);
  BlendingJob job{&s, std::span<const BlendLayer>(&layer, 1), {}, 0.1f, out, w};
  job.run();
  EXPECT_FLOAT_EQ(out[0].translation.x, 2);
  EXPECT_FLOAT_EQ(out[1].translation.y, 1);  // masked out: rest pose
  EXPECT_FLOAT_EQ(w[0], 0.5f);               // no layer gives weights: rest weights
  // A weak layer (0.05 < threshold 0.1) is half the pose, half the rest.
  layer.weight = 0.05f;
  job.run();
  EXPECT_NEAR(out[0].translation.x, 1, 1e-5f);
  // Additive: deltas of `a` from rest, applied at full weight to rest, give `a` back.
  std::vector<Transform> delta(2), pose = s.rest();
  pose[0].rotation = axisAngle({0, 1, 0}, 0.7f);
  pose[0].scale = {2, 1, 1};
  pose[1].translation = {0, 3, 1};
  makeAdditive(pose, s.rest(), delta);
  BlendLayer add{delta, 1, {}, {}};
  layer.weight = 0;
  job.additive = std::span<const BlendLayer>(&add, 1);
  job.run();
  for (size_t j = 0; j < 2; ++j) {
    EXPECT_LT(length(out[j].translation - pose[j].translation), 1e-5f);
    EXPECT_LT(length(out[j].scale - pose[j].scale), 1e-5f);
    EXPECT_LT(angleBetween(out[j].rotation, pose[j].rotation), 1e-3f);
  }
  add.weight = 0.5f;
  job.run();
  EXPECT_NEAR(out[0].scale.x, 1.5f, 1e-5f);
  EXPECT_NEAR(angleBetween(out[0].rotation, Quat{}), 0.35f, 0.01f);
  // Validation names the layer.
  std::vector<Transform> short_pose(1);
  BlendLayer bad{short_pose, 1, {}, {}};
  job.layers = std::span<const BlendLayer>(&bad, 1);
  EXPECT_NE(job.validate().find("normal layer 0: pose holds 1 transforms"), std::string::npos)
      << job.validate();
  EXPECT_THROW(job.run(), Error);
  bad = {a, -1, {}, {}};
  EXPECT_NE(job.validate().find("weight"), std::string::npos);
  std::vector<float> short_mask = {1};
  bad = {a, 1, short_mask, {}};
  EXPECT_NE(job.validate().find("mask"), std::string::npos);
}

}  // namespace
}  // namespace sf::anim
