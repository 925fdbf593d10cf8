// Retargeting by joint name: the LAM avatar's animation.glb clips onto its skin.glb skeleton, and a
// hand-made case with missing joints and mismatched morph weights.
#include "anim/retarget.h"

#include <gtest/gtest.h>

#include "anim/clip.h"
#include "anim/local_to_model.h"
#include "core/error.h"
#include "model/gltf_import.h"
#include "support/test_support.h"

namespace sf::anim {
namespace {

TEST(Retarget, LamAnimationOntoSkin) {
  SF_REQUIRE_ASSET(skin_path, "characters/lam_avatar/skin.glb");
  SF_REQUIRE_ASSET(anim_path, "characters/lam_avatar/animation.glb");
  GltfDocument skin_doc = loadGltf(skin_path), anim_doc = loadGltf(anim_path);
  Skeleton target = skeletonFromGltf(skin_doc), source = skeletonFromGltf(anim_doc);
  EXPECT_EQ(target.size(), 264u);
  EXPECT_EQ(source.size(), 172u);
  SkinBinding skin = skinFromGltf(skin_doc, 0, target);
  ASSERT_EQ(skin.joints.size(), 262u);

  size_t total_tracks = 0, total_mapped = 0;
  for (size_t a = 0; a < anim_doc.animations.size(); ++a) {
    Clip clip = clipFromGltf(anim_doc, a, source);
    Clip mapped;
    RetargetReport report;
    RetargetJob job;
    job.clip = &clip;
    job.target = &target;
    job.output = &mapped;
    job.report = &report;
    job.run();
    total_tracks += clip.tracks.size();
    total_mapped += report.mapped;
    EXPECT_EQ(report.mapped + report.dropped, clip.tracks.size());
    EXPECT_EQ(mapped.validate(target), "");
    EXPECT_EQ(mapped.duration, clip.duration);
    if (a == 0) {
      RecordProperty("clip0_tracks", static_cast<int>(clip.tracks.size()));
      RecordProperty("clip0_mapped", static_cast<int>(report.mapped));
      std::printf("[ info ] %s: %zu of %zu tracks map onto skin.glb (%zu missing joint names)\n",
                  clip.name.c_str(), report.mapped, clip.tracks.size(), report.missing_joints.size());
    }
  }
  EXPECT_EQ(total_tracks, 12u * 510u);
  EXPECT_EQ(total_mapped, total_tracks);  // every animated joint name exists in skin.glb

  // Sampled joints move: the skin's joints in model space differ between two times of a clip.
  int hello = findAnimation(anim_doc, "yumi_h5_a3_hello");
  ASSERT_GE(hello, 0);
  Clip clip = clipFromGltf(anim_doc, static_cast<size_t>(hello), source), mapped;
  RetargetJob{&clip, &target, RetargetTranslations::kAll, &mapped, nullptr}.run();
  auto models = [&](float t) {
    std::vector<Transform> pose(target.size());
    std::vector<float> weights(target.weightTotal());
    SamplingJob{&mapped, &target, t, pose, weights}.run();
    std::vector<Mat4> m(target.size());
    LocalToModelJob ltm;
    ltm.skeleton = &target;
    ltm.input = pose;
    ltm.output = m;
    ltm.run();
    return m;
  };
  std::vector<Mat4> m0 = models(0), m1 = models(clip.duration * 0.5f);
  size_t moved = 0;
  for (int j : skin.joints)
    if (length(m0[static_cast<size_t>(j)].translation() - m1[static_cast<size_t>(j)].translation()) > 1e-3f)
      ++moved;
  std::printf("[ info ] %s: %zu of %zu skin joints move between t=0 and t=%.2f\n", clip.name.c_str(), moved,
              skin.joints.size(), clip.duration * 0.5);
  EXPECT_GT(moved, 20u);
}

TEST(Retarget, DropsAndReportsMissingJoints) {
  JointDesc src[3], dst[2];
  src[0].name = "hips";
  src[1].name = "spine";
  src[1].parent = 0;
  src[2].name = "tail";
  src[2].parent = 0;
  src[2].morph_weights = 2;
  dst[0].name = "hips";
  dst[1].name = "tail";
  dst[1].parent = 0;
  dst[1].morph_weights = 3;
  Skeleton source = Skeleton::build(src), target = Skeleton::build(dst);
  Clip clip;
  auto track = [&](const char* name, TrackTarget target_kind, int comps) {
    Track t;
    t.joint = source.find(name);
    t.joint_name = name;
    t.target = target_kind;
    t.components = comps;
    t.times = {0};
    t.values.assign(static_cast<size_t>(comps), 0.5f);
    if (target_kind == TrackTarget::kRotation) t.values = {1, 0, 0, 0};
    return t;
  };
  clip.tracks = {track("hips", TrackTarget::kTranslation, 3), track("hips", TrackTarget::kRotation, 4),
                 track("spine", TrackTarget::kRotation, 4), track("tail", TrackTarget::kWeights, 2),
                 track("tail", TrackTarget::kTranslation, 3)};
  ASSERT_EQ(clip.validate(source), "");
  Clip out;
  RetargetReport report;
  RetargetJob job{&clip, &target, RetargetTranslations::kRootOnly, &out, &report};
  job.run();
  EXPECT_EQ(report.mapped, 2u);  // hips translation (a root) and rotation
  EXPECT_EQ(report.dropped, 3u);
  EXPECT_EQ(report.missing_joints, std::vector<std::string>{"spine"});
  ASSERT_EQ(report.notes.size(), 2u);
  EXPECT_NE(report.notes[0].find("weights of 'tail': 2 in the clip, 3 on the target"), std::string::npos);
  EXPECT_EQ(out.validate(target), "");
  job.output = &clip;
  EXPECT_EQ(job.validate(), "output must not be the input clip");
  EXPECT_THROW(job.run(), Error);
}

}  // namespace
}  // namespace sf::anim
