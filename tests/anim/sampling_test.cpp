// Clip sampling against glTF 2.0 Appendix C, with expected values computed here from the raw accessor
// bytes (interpolation_test.gltf: STEP, LINEAR and CUBICSPLINE on translation, rotation and scale;
// morph-stress-test.glb: weight channels), plus playback helpers and job validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "anim/clip.h"
#include "anim/raw_gltf.h"
#include "core/error.h"
#include "model/gltf_import.h"
#include "support/test_support.h"

namespace sf::anim {
namespace {

// Expected sampler value at t, straight from the spec, in double. Rotations are (x, y, z, w) as stored.
std::vector<double> expectedValue(const std::string& interpolation, const std::vector<float>& times,
                                  const std::vector<float>& values, size_t comps, double t, bool rotation) {
  const size_t n = times.size();
  const bool cubic = interpolation == "CUBICSPLINE";
  auto key = [&](size_t k) {
    std::vector<double> v(comps);
    for (size_t c = 0; c < comps; ++c) v[c] = values[(cubic ? 3 * k + 1 : k) * comps + c];
    return v;
  };
  if (t <= times[0]) return key(0);
  if (t >= times[n - 1]) return key(n - 1);
  size_t k = 0;
  while (!(t >= times[k] && t < times[k + 1])) ++k;
  if (t == times[k] || interpolation == "STEP") return key(k);
  double dt = double(times[k + 1]) - times[k], u = (t - times[k]) / dt;
  std::vector<double> a = key(k), b = key(k + 1), out(comps);
  if (!cubic) {
    if (!rotation) {
      for (size_t c = 0; c < comps; ++c) out[c] = a[c] * (1 - u) + b[c] * u;
      return out;
    }
    double d = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
    if (d < 0) {
      for (double& x : b) x = -x;
      d = -d;
    }
    double wa = 1 - u, wb = u;
    if (d < 0.9999) {
      double th = std::acos(d);
      wa = std::sin((1 - u) * th) / std::sin(th);
      wb = std::sin(u * th) / std::sin(th);
    }
    double len = 0;
    for (size_t c = 0; c < 4; ++c) out[c] = wa * a[c] + wb * b[c], len += out[c] * out[c];
    for (double& x : out) x /= std::sqrt(len);
    return out;
  }
  double u2 = u * u, u3 = u2 * u;
  for (size_t c = 0; c < comps; ++c) {
    double out_tangent = values[(3 * k + 2) * comps + c], in_tangent = values[(3 * (k + 1)) * comps + c];
    out[c] = (2 * u3 - 3 * u2 + 1) * a[c] + (u3 - 2 * u2 + u) * dt * out_tangent + (-2 * u3 + 3 * u2) * b[c] +
             (u3 - u2) * dt * in_tangent;
  }
  if (rotation) {
    double len = 0;
    for (double x : out) len += x * x;
    for (double& x : out) x /= std::sqrt(len);
  }
  return out;
}

// Sample times: every key, points between keys, and outside the key range.
std::vector<float> probeTimes(const std::vector<float>& times) {
  std::vector<float> probes = {times.front() - 1.0f, times.back() + 1.0f};
  for (size_t k = 0; k < times.size(); ++k) {
    probes.push_back(times[k]);
    if (k + 1 < times.size())
      for (float f : {0.1f, 0.25f, 0.5f, 0.77f, 0.999f})
        probes.push_back(times[k] + f * (times[k + 1] - times[k]));
  }
  return probes;
}

TEST(Sampling, InterpolationTestAllClipsAgainstRawBytes) {
  SF_REQUIRE_ASSET(path, "gltf/interpolation_test.gltf");
  GltfDocument doc = loadGltf(path);
  test::RawGltf raw(path);
  Skeleton skeleton = skeletonFromGltf(doc);
  ASSERT_EQ(skeleton.size(), 12u);
  std::vector<Transform> pose(skeleton.size());
  size_t checks = 0, exact_keys = 0;
  std::set<std::string> seen;
  for (size_t a = 0; a < doc.animations.size(); ++a) {
    Clip clip = clipFromGltf(doc, a, skeleton);
    ASSERT_EQ(clip.validate(skeleton), "");
    std::string ap = "/animations/" + std::to_string(a);
    for (size_t c = 0; c < raw.arraySize(ap + "/channels"); ++c) {
      std::string cp = ap + "/channels/" + std::to_string(c);
      int node = raw.integer(cp + "/target/node");
      std::string path_name = raw.string(cp + "/target/path");
      std::string sp = ap + "/samplers/" + std::to_string(raw.integer(cp + "/sampler"));
      std::string interp = raw.string(sp + "/interpolation", "LINEAR");
      seen.insert(interp + " " + path_name);
      std::vector<float> times = raw.floats(raw.integer(sp + "/input"));
      std::vector<float> values = raw.floats(raw.integer(sp + "/output"));
      const bool rotation = path_name == "rotation";
      const size_t comps = rotation ? 4 : 3;
      int joint = skeleton.findSource(node);
      ASSERT_GE(joint, 0);
      for (float t : probeTimes(times)) {
        SamplingJob job;
        job.clip = &clip;
        job.skeleton = &skeleton;
        job.time = t;
        job.output = pose;
        job.run();
        const Transform& x = pose[static_cast<size_t>(joint)];
        std::vector<double> got;
        if (path_name == "translation")
          got = {x.translation.x, x.translation.y, x.translation.z};
        else if (path_name == "scale")
          got = {x.scale.x, x.scale.y, x.scale.z};
        else
          got = {x.rotation.x, x.rotation.y, x.rotation.z, x.rotation.w};
        std::vector<double> want = expectedValue(interp, times, values, comps, t, rotation);
        bool at_key =
            std::find(times.begin(), times.end(), t) != times.end() || t < times.front() || t > times.back();
        for (size_t k = 0; k < comps; ++k) {
          if (at_key) {
            EXPECT_EQ(static_cast<float>(got[k]), static_cast<float>(want[k]))
                << clip.name << " " << path_name << " t=" << t << " component " << k;
          } else {
            EXPECT_NEAR(got[k], want[k], 2e-5)
                << clip.name << " " << interp << " " << path_name << " t=" << t << " component " << k;
          }
        }
        exact_keys += at_key;
        ++checks;
      }
    }
  }
  // Every interpolation mode on every path is present in this asset.
  for (const char* combo :
       {"STEP translation", "STEP rotation", "STEP scale", "LINEAR translation", "LINEAR rotation",
        "CUBICSPLINE translation", "CUBICSPLINE rotation", "CUBICSPLINE scale"})
    EXPECT_TRUE(seen.count(combo)) << combo;
  EXPECT_GT(checks, 200u);
  EXPECT_GT(exact_keys, 40u);
}

TEST(Sampling, MorphWeightChannelsAgainstRawBytes) {
  SF_REQUIRE_ASSET(path, "gltf/morph-stress-test.glb");
  GltfDocument doc = loadGltf(path);
  test::RawGltf raw(path);
  Skeleton skeleton = skeletonFromGltf(doc);
  ASSERT_EQ(skeleton.weightTotal(), 8u);
  std::vector<Transform> pose(skeleton.size());
  std::vector<float> weights(skeleton.weightTotal());
  for (size_t a = 0; a < doc.animations.size(); ++a) {
    Clip clip = clipFromGltf(doc, a, skeleton);
    std::string sp = "/animations/" + std::to_string(a) + "/samplers/0";
    std::string interp = raw.string(sp + "/interpolation", "LINEAR");
    std::vector<float> times = raw.floats(raw.integer(sp + "/input"));
    std::vector<float> values = raw.floats(raw.integer(sp + "/output"));
    int joint =
        skeleton.findSource(raw.integer("/animations/" + std::to_string(a) + "/channels/0/target/node"));
    size_t off = skeleton.weightOffset(static_cast<size_t>(joint));
    for (float t : probeTimes(times)) {
      SamplingJob job{&clip, &skeleton, t, pose, weights};
      job.run();
      std::vector<double> want = expectedValue(interp, times, values, 8, t, false);
      for (size_t k = 0; k < 8; ++k)
        EXPECT_NEAR(weights[off + k], want[k], 1e-6) << clip.name << " t=" << t << " weight " << k;
    }
  }
}

// A single track built by hand: exact keys, clamping, shortest-arc slerp across the sign flip.
TEST(Sampling, HandBuiltRotationTrack) {
  JointDesc d;
  d.name = "j";
  Skeleton skeleton = Skeleton::build(std::span<const JointDesc>(&d, 1));
  Clip clip;
  Track t;
  t.joint = 0;
  t.target = TrackTarget::kRotation;
  t.interpolation = Interpolation::kLinear;
  t.components = 4;
  t.times = {1, 2};
  float h = std::sqrt(0.5f);
  // 0 and 90 degrees about z, the second stored with negative w (same rotation, far hemisphere).
  t.values = {1, 0, 0, 0, -h, 0, 0, -h};
  clip.tracks.push_back(t);
  clip.duration = 2;
  ASSERT_EQ(clip.validate(skeleton), "");
  std::vector<Transform> pose(1);
  SamplingJob job{&clip, &skeleton, 1.5f, pose, {}};
  job.run();
  Quat q = pose[0].rotation;  // 45 degrees about z
  float s = q.w < 0 ? -1.0f : 1.0f;
  EXPECT_NEAR(s * q.w, std::cos(0.3926991f), 1e-6f);
  EXPECT_NEAR(s * q.z, std::sin(0.3926991f), 1e-6f);
  job.time = 0;
  job.run();
  EXPECT_EQ(pose[0].rotation.w, 1.0f);
  job.time = 5;
  job.run();
  EXPECT_EQ(pose[0].rotation.w, -h);  // the stored key, exactly
}

TEST(Sampling, JobValidation) {
  JointDesc d[2];
  d[0].name = "a";
  d[1].name = "b";
  d[1].parent = 0;
  Skeleton skeleton = Skeleton::build(d);
  Clip clip;
  std::vector<Transform> pose(2), small(1);
  SamplingJob job;
  EXPECT_EQ(job.validate(), "no clip");
  job.clip = &clip;
  EXPECT_EQ(job.validate(), "no skeleton");
  job.skeleton = &skeleton;
  job.output = small;
  EXPECT_NE(job.validate().find("output holds 1 transforms"), std::string::npos);
  EXPECT_THROW(job.run(), Error);
  job.output = pose;
  EXPECT_EQ(job.validate(), "");
  job.time = std::nanf("");
  EXPECT_EQ(job.validate(), "time is not finite");
  job.time = 0;
  Track t;
  t.joint = 5;
  t.components = 3;
  t.times = {0};
  t.values = {1, 2, 3};
  clip.tracks.push_back(t);
  EXPECT_NE(job.validate().find("joint 5 out of range"), std::string::npos);
  EXPECT_NE(clip.validate(skeleton).find("joint 5 out of range"), std::string::npos);
  clip.tracks[0].joint = 1;
  clip.tracks[0].times = {0, 0};
  clip.tracks[0].values = {1, 2, 3, 4, 5, 6};
  EXPECT_NE(clip.validate(skeleton).find("not strictly increasing"), std::string::npos);
  clip.tracks[0].values.pop_back();
  EXPECT_NE(clip.validate(skeleton).find("5 values for 2 keys"), std::string::npos);
  EXPECT_NE(job.validate().find("malformed"), std::string::npos);
  // Joints without tracks get the rest pose.
  clip.tracks.clear();
  pose[1].translation = {9, 9, 9};
  job.run();
  EXPECT_EQ(pose[1].translation.x, 0.0f);
}

TEST(Sampling, PlaybackHelpers) {
  EXPECT_FLOAT_EQ(wrapTime(2.5f, 2.0f), 0.5f);
  EXPECT_FLOAT_EQ(wrapTime(-0.5f, 2.0f), 1.5f);
  EXPECT_FLOAT_EQ(wrapTime(2.0f, 2.0f), 0.0f);
  EXPECT_FLOAT_EQ(clampTime(3.0f, 2.0f), 2.0f);
  EXPECT_FLOAT_EQ(clampTime(-1.0f, 2.0f), 0.0f);
  EXPECT_EQ(wrapTime(1.0f, 0.0f), 0.0f);
  // By default a stall advances 1/15 s (the glTF skinning document's cap), whatever its length.
  Playback d;
  d.advance(5.0f, 2.0f);
  EXPECT_FLOAT_EQ(d.time, 1.0f / 15.0f);
  d.advance(0.05f, 2.0f);  // a normal frame is not touched
  EXPECT_FLOAT_EQ(d.time, 1.0f / 15.0f + 0.05f);
  Playback p;
  p.max_step = 0.1f;
  p.advance(5.0f, 2.0f);  // a 5 s hitch advances only 0.1 s
  EXPECT_FLOAT_EQ(p.time, 0.1f);
  for (int i = 0; i < 20; ++i) p.advance(0.1f, 2.0f);
  EXPECT_NEAR(p.time, 0.1f, 1e-4f);  // wrapped
  p.loop = false;
  for (int i = 0; i < 30; ++i) p.advance(0.1f, 2.0f);
  EXPECT_FLOAT_EQ(p.time, 2.0f);
  p.speed = -1;
  p.advance(0.05f, 2.0f);
  EXPECT_FLOAT_EQ(p.time, 1.95f);
  p.advance(-1.0f, 2.0f);  // negative and non-finite steps do nothing
  p.advance(std::nanf(""), 2.0f);
  EXPECT_FLOAT_EQ(p.time, 1.95f);
}

}  // namespace
}  // namespace sf::anim
