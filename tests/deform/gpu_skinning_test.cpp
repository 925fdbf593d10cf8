// GPU skinning against the CPU reference jobs (anim::MorphJob + anim::SkinningJob): cesium_man.gltf posed
// at several times with LBS and DQS, and a synthetic morph target applied before skinning. Validation
// layers are on; any validation error fails the test.
#include "deform/gpu_skinning.h"

#include <gtest/gtest.h>

#include <cmath>

#include "anim/local_to_model.h"
#include "core/error.h"
#include "gpu/gpu.h"
#include "io/gltf.h"
#include "model/gltf_import.h"
#include "support/test_support.h"

namespace sf {
namespace {

using namespace anim;

struct Posed {
  GltfDocument doc;
  const GltfPrimitive* prim = nullptr;
  std::vector<Mat4> palette;
  std::vector<DualQuatJoint> dq;
};

Posed pose(const std::string& path, float t) {
  Posed r;
  r.doc = loadGltf(path);
  Skeleton skeleton = skeletonFromGltf(r.doc);
  Clip clip = clipFromGltf(r.doc, 0, skeleton);
  std::vector<Transform> local(skeleton.size());
  std::vector<float> weights(skeleton.weightTotal());
  SamplingJob{&clip, &skeleton, t, local, weights}.run();
  std::vector<Mat4> models(skeleton.size());
  LocalToModelJob ltm;
  ltm.skeleton = &skeleton;
  ltm.input = local;
  ltm.output = models;
  ltm.run();
  size_t node = 0;
  while (r.doc.nodes[node].skin < 0) ++node;
  SkinBinding skin = skinFromGltf(r.doc, static_cast<size_t>(r.doc.nodes[node].skin), skeleton);
  r.palette.resize(skin.joints.size());
  PaletteJob{&skin, models, r.palette}.run();
  r.dq.resize(r.palette.size());
  DualQuatPaletteJob{r.palette, r.dq}.run();
  r.prim = &r.doc.meshes[static_cast<size_t>(r.doc.nodes[node].mesh)].primitives[0];
  return r;
}

SkinningJob jobFor(const Posed& p, SkinningMethod method, std::span<const Vec3> positions,
                   std::vector<Vec3>& out, std::vector<Vec3>& out_n) {
  SkinningJob job;
  job.method = method;
  job.palette = p.palette;
  job.dq_palette = p.dq;
  job.positions = positions;
  job.normals = p.prim->normals;
  job.joints0 = p.prim->joints0;
  job.weights0 = p.prim->weights0;
  out.assign(positions.size(), Vec3{});
  out_n.assign(p.prim->normals.size(), Vec3{});
  job.out_positions = out;
  job.out_normals = out_n;
  return job;
}

std::unique_ptr<gpu::Context> validatedContext() {
  if (!gpu::vulkanAvailable()) return nullptr;
  gpu::ContextOptions o;
  o.validation = true;
  return std::make_unique<gpu::Context>(o);
}

TEST(GpuSkinning, MatchesCpuLbsAndDqsOnCesiumMan) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  auto ctx = validatedContext();
  if (!ctx) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  GpuSkinner skinner(*ctx);
  for (float t : {0.0f, 0.37f, 1.25f}) {
    Posed p = pose(path, t);
    for (SkinningMethod method : {SkinningMethod::kLinearBlend, SkinningMethod::kDualQuaternion}) {
      std::vector<Vec3> cpu, cpu_n, gpu_p, gpu_n;
      jobFor(p, method, p.prim->positions, cpu, cpu_n).run();
      skinner.run(jobFor(p, method, p.prim->positions, gpu_p, gpu_n));
      float max_p = 0, max_n = 0;
      for (size_t v = 0; v < cpu.size(); ++v) {
        max_p = std::max(max_p, length(cpu[v] - gpu_p[v]));
        max_n = std::max(max_n, length(cpu_n[v] - gpu_n[v]));
      }
      EXPECT_LT(max_p, 1e-4f) << "t " << t << (method == SkinningMethod::kLinearBlend ? " LBS" : " DQS");
      EXPECT_LT(max_n, 1e-4f) << "t " << t;
    }
  }
  EXPECT_EQ(ctx->validationErrors(), 0u) << ctx->validationReport();
}

TEST(GpuSkinning, MorphTargetsApplyBeforeSkinning) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  auto ctx = validatedContext();
  if (!ctx) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  Posed p = pose(path, 0.8f);
  const size_t n = p.prim->positions.size();
  // Two synthetic targets: inflate along the normals, and shift up.
  std::vector<Vec3> inflate(n), shift(n, Vec3{0, 0.02f, 0}), inflate_n(n, Vec3{0, 0, 0});
  for (size_t v = 0; v < n; ++v) inflate[v] = p.prim->normals[v] * 0.03f;
  MorphTargetView targets[2] = {{inflate, inflate_n}, {shift, {}}};
  float weights[2] = {0.7f, -0.4f};
  std::vector<Vec3> morphed(n), morphed_n(n);
  MorphJob morph;
  morph.positions = p.prim->positions;
  morph.normals = p.prim->normals;
  morph.targets = targets;
  morph.weights = weights;
  morph.out_positions = morphed;
  morph.out_normals = morphed_n;
  morph.run();
  std::vector<Vec3> cpu, cpu_n, gpu_p, gpu_n;
  SkinningJob cpu_job = jobFor(p, SkinningMethod::kLinearBlend, morphed, cpu, cpu_n);
  cpu_job.normals = morphed_n;
  cpu_job.run();
  GpuSkinner skinner(*ctx);
  skinner.run(jobFor(p, SkinningMethod::kLinearBlend, p.prim->positions, gpu_p, gpu_n), targets, weights);
  float max_p = 0, moved = 0;
  std::vector<Vec3> plain, plain_n;
  jobFor(p, SkinningMethod::kLinearBlend, p.prim->positions, plain, plain_n).run();
  for (size_t v = 0; v < n; ++v) {
    max_p = std::max(max_p, length(cpu[v] - gpu_p[v]));
    moved = std::max(moved, length(plain[v] - gpu_p[v]));
  }
  EXPECT_LT(max_p, 1e-4f);
  EXPECT_GT(moved, 0.01f);  // the targets really moved the skinned mesh
  EXPECT_EQ(ctx->validationErrors(), 0u) << ctx->validationReport();
}

TEST(GpuSkinning, CrowdInstancesMatchTheirOwnCpuPose) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  auto ctx = validatedContext();
  if (!ctx) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const float times[3] = {0.1f, 0.9f, 1.7f};
  std::vector<Posed> poses;
  for (float t : times) poses.push_back(pose(path, t));
  const size_t joints = poses[0].palette.size();
  std::vector<Mat4> palettes;
  for (const Posed& p : poses) palettes.insert(palettes.end(), p.palette.begin(), p.palette.end());
  std::vector<Vec3> unused, unused_n;
  GpuSkinnedCrowd crowd(
      *ctx, jobFor(poses[0], SkinningMethod::kLinearBlend, poses[0].prim->positions, unused, unused_n),
      joints, 3);
  for (SkinningMethod method : {SkinningMethod::kLinearBlend, SkinningMethod::kDualQuaternion}) {
    crowd.skin(palettes, method);
    for (size_t i = 0; i < 3; ++i) {
      std::vector<Vec3> cpu, cpu_n;
      jobFor(poses[i], method, poses[i].prim->positions, cpu, cpu_n).run();
      std::vector<Vec3> gpu_p = crowd.positions(i);
      float max_p = 0;
      for (size_t v = 0; v < cpu.size(); ++v) max_p = std::max(max_p, length(cpu[v] - gpu_p[v]));
      EXPECT_LT(max_p, 1e-4f) << "instance " << i;
    }
  }
  EXPECT_THROW(crowd.skin(std::span<const Mat4>(palettes).first(joints), SkinningMethod::kLinearBlend),
               Error);
  EXPECT_EQ(ctx->validationErrors(), 0u) << ctx->validationReport();
}

TEST(GpuSkinning, RefusesInvalidJobsWithTheReason) {
  auto ctx = validatedContext();
  if (!ctx) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  GpuSkinner skinner(*ctx);
  std::vector<Vec3> pos(3, Vec3{}), out(3);
  std::vector<JointIndices4> joints(3, JointIndices4{0, 0, 0, 5});
  std::vector<JointWeights4> w(3, JointWeights4{0.5f, 0.25f, 0.25f, 0.1f});
  std::vector<Mat4> palette(2);
  SkinningJob job;
  job.palette = palette;
  job.positions = pos;
  job.joints0 = joints;
  job.weights0 = w;
  job.out_positions = out;
  try {
    skinner.run(job);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GPU skinning"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sf
