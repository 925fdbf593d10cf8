// A decoder character's GPU path (decoders on the Vulkan executor, the lift's shaders) against the CPU path
// per texel, pass by pass, and drawn in the renderer's frame against the CPU renderer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "character/bundle_character.h"
#include "character/expression.h"
#include "character/gnm_pack.h"
#include "character/gpu_lift.h"
#include "character/rig.h"
#include "deform/gpu_skinning.h"
#include "model/gltf_model.h"
#include "render/cpu_renderer.h"
#include "support/gpu_support.h"

namespace sf::character {
namespace {

const std::string kOrb = std::string(SPLATFORGE_SOURCE_DIR) + "/models/characters/orb_head";

Camera camAt(float x, float z = 0.5f) {
  return lookAtCamera({x, 1.62f, z}, {0, 1.6f, 0}, {0, 1, 0}, 35, 160, 160);
}

Expression jaw(float w) {
  Expression e{"arkit52", std::vector<float>(52, 0.0f)};
  e.weights[static_cast<size_t>(arkitIndex("jawOpen"))] = w;
  return e;
}

// The character's slots on the device, written by the path's record() in a command buffer of our own.
struct Slots {
  gpu::Buffer pos, cov, opa, sh;
  GpuSplatTargets targets;
  Slots(gpu::Context& ctx, size_t n) {
    pos = ctx.createBuffer(12 * n, true, "test positions");
    cov = ctx.createBuffer(24 * n, true, "test covariances");
    opa = ctx.createBuffer(4 * n, true, "test opacities");
    sh = ctx.createBuffer(12 * n, true, "test sh");
    targets.positions = pos.address, targets.covariances = cov.address, targets.opacities = opa.address;
    targets.sh = sh.address, targets.count = static_cast<uint32_t>(n), targets.sh_stride = 3;
  }
  const float* f(const gpu::Buffer& b) const { return static_cast<const float*>(b.mapped); }
};

void recordFrame(gpu::Context& ctx, const BundleCharacter& ch, const Slots& s) {
  VkCommandBuffer cmd = ctx.begin();
  test::recordContributed(cmd, ch.gpuPath()->source(), s.targets);
  ctx.submit(cmd);
}

// Every slot of the GPU path against the CPU path's (same state, same camera).
void expectSameGaussians(const BundleCharacter& cpu, const Slots& s) {
  const size_t n = cpu.size();
  size_t visible = 0;
  for (size_t i = 0; i < n; ++i) {
    const Vec3 p = cpu.cloud().positions[i];
    ASSERT_NEAR(s.f(s.pos)[3 * i], p.x, 2e-6) << "slot " << i;
    ASSERT_NEAR(s.f(s.pos)[3 * i + 1], p.y, 2e-6) << "slot " << i;
    ASSERT_NEAR(s.f(s.pos)[3 * i + 2], p.z, 2e-6) << "slot " << i;
    ASSERT_EQ(std::lround(255 * s.f(s.opa)[i]), std::lround(255 * cpu.cloud().opacities[i]))
        << "slot " << i;  // the same byte
    const Cov6& c = cpu.covariances()[i];
    const float scale = std::max({std::fabs(c[0]), std::fabs(c[3]), std::fabs(c[5])});
    for (size_t k = 0; k < 6; ++k)
      ASSERT_NEAR(s.f(s.cov)[6 * i + k], c[k], 2e-3f * scale + 1e-12f) << "slot " << i << " element " << k;
    // Colour bytes: equal, or one step apart where the decoded value sits on a rounding boundary.
    for (size_t k = 0; k < 3; ++k)
      ASSERT_NEAR(s.f(s.sh)[3 * i + k], cpu.cloud().sh[3 * i + k], 1.01f / 255.0f / 0.2820948f)
          << "slot " << i;
    visible += cpu.cloud().opacities[i] > 0;
  }
  EXPECT_GT(visible, n / 2);
}

TEST(BundleGpu, EveryPassMatchesTheCpuPerTexel) {
  SF_REQUIRE_VULKAN(renderer);
  gpu::Context& ctx = renderer->context();
  BundleCharacter cpu(loadCharacterBundle(directoryResolver(kOrb)));
  BundleCharacter gpu_ch(loadCharacterBundle(directoryResolver(kOrb)));
  ASSERT_EQ(attachBundleGpuPath(ctx, gpu_ch), "");
  const auto* path = dynamic_cast<const VulkanBundlePath*>(gpu_ch.gpuPath());
  ASSERT_NE(path, nullptr);
  Slots slots(ctx, cpu.size());
  for (BundleCharacter* c : {&cpu, &gpu_ch}) {
    c->setExpression(jaw(0.6f));
    c->setGaze({0.2f, -0.1f, 0.2f, -0.1f});
    c->update(camAt(0.05f));
  }
  recordFrame(ctx, gpu_ch, slots);
  EXPECT_TRUE(path->lastRecorded().geometry && path->lastRecorded().appearance);
  // Pass 1 per texel: triim exactly, the frame and bounds to float rounding.
  for (size_t b = 0; b < 2; ++b) {
    std::vector<float> frame, bounds;
    std::vector<uint32_t> triim;
    path->readPass1(b, frame, triim, bounds);
    const BundleCharacter::BranchMaps m = cpu.branchMaps(b);
    ASSERT_EQ(triim.size(), m.triim.size());
    for (size_t k = 0; k < triim.size(); ++k) {
      ASSERT_EQ(triim[k], m.triim[k]) << "branch " << b << " texel " << k;
      float scale = 0;
      for (float v : m.frame[k]) scale = std::max(scale, std::fabs(v));
      // The decoders' positions are O(1) in the decoder frame; a device's sin/cos and fused arithmetic move
      // them by ~1e-7, which a finite difference keeps as an absolute error.
      for (size_t c = 0; c < 9; ++c)
        ASSERT_NEAR(frame[9 * k + c], m.frame[k][c], 1e-5f * scale + 1e-6f)
            << "branch " << b << " texel " << k;
      ASSERT_NEAR(bounds[2 * k + 1], m.bounds[k][1], 1e-6f * m.bounds[k][1])
          << "branch " << b << " texel " << k;
    }
  }
  // Pass 2 (and the decoders before it) per slot.
  expectSameGaussians(cpu, slots);
  // A camera move alone: appearance only, and still the CPU's gaussians.
  for (BundleCharacter* c : {&cpu, &gpu_ch}) c->update(camAt(-0.08f, 0.45f));
  recordFrame(ctx, gpu_ch, slots);
  EXPECT_FALSE(path->lastRecorded().geometry);
  EXPECT_TRUE(path->lastRecorded().appearance);
  expectSameGaussians(cpu, slots);
  // Below the threshold: nothing recorded, the slots keep their gaussians.
  gpu_ch.update(camAt(-0.0805f, 0.45f));
  recordFrame(ctx, gpu_ch, slots);
  EXPECT_FALSE(path->lastRecorded().geometry || path->lastRecorded().appearance);
  expectSameGaussians(cpu, slots);
  // Other slots (the frame moved the object): the whole chain runs again.
  Slots other(ctx, cpu.size());
  gpu_ch.update(camAt(-0.0805f, 0.45f));
  recordFrame(ctx, gpu_ch, other);
  EXPECT_TRUE(path->lastRecorded().geometry && path->lastRecorded().appearance);
  expectSameGaussians(cpu, other);
  SF_EXPECT_VALIDATION_CLEAN(renderer);
}

TEST(BundleGpu, DrawnInTheFrameLikeTheCpuRenderer) {
  SF_REQUIRE_VULKAN(renderer);
  BundleCharacter cpu(loadCharacterBundle(directoryResolver(kOrb)));
  BundleCharacter gpu_ch(loadCharacterBundle(directoryResolver(kOrb)));
  ASSERT_EQ(attachBundleGpuPath(renderer->context(), gpu_ch), "");
  const Camera cam = camAt(0.1f);
  for (BundleCharacter* c : {&cpu, &gpu_ch}) {
    c->setExpression(jaw(0.3f));
    c->update(cam);
  }
  RenderObject ro_cpu{&cpu.cloud(), Mat4{}, cpu.cloud().positions, cpu.covariances()};
  ro_cpu.dynamic = true;
  RenderObject ro_gpu{&gpu_ch.cloud(), Mat4{}};
  ro_gpu.gpu_source = &gpu_ch.gpuPath()->source();
  RenderSettings settings;
  settings.background = {0.1f, 0.1f, 0.1f};
  settings.half_raster = false;  // the decoders' splats against the CPU's, blended alike (fp32)
  const ImageRGBA want = renderCpu(std::span(&ro_cpu, 1), cam, settings);
  const ImageRGBA got = renderer->render(std::span(&ro_gpu, 1), cam, settings);
  double err = 0, covered = 0;
  for (size_t i = 0; i < want.pixels.size(); ++i) {
    err = std::max(err, static_cast<double>(std::fabs(want.pixels[i] - got.pixels[i])));
    covered += want.pixels[i];
  }
  EXPECT_LT(err, 2e-3) << "max abs difference between the Vulkan frame and the CPU renderer";
  EXPECT_GT(covered, 0.05 * static_cast<double>(want.pixels.size()));  // the head covers the view
  SF_EXPECT_VALIDATION_CLEAN(renderer);
}

// Both rig backends hand the frame their pose as one skin source: the engine's one GPU skinner (the
// frame's skin pass) poses a gnm rig as its CPU reference does.
TEST(BundleGpu, GnmRigPosesOnTheGpuSkinnerAsOnTheCpu) {
  SF_REQUIRE_VULKAN(renderer);
  GnmRig rig(fromSkinnedGltf(GltfModel(kOrb + "/head/head.glb")));
  std::vector<float> c(rig.controlNames().size(), 0.0f);
  c[0] = 0.8f;              // jawOpen
  c[1] = 0.5f;              // cheekPuff
  c[c.size() - 4] = 0.3f;   // left eye pitch
  c[c.size() - 1] = -0.2f;  // right eye yaw
  rig.setControls(c);
  std::vector<Vec3> want;
  rig.pose(want);
  const SkinSource& s = rig.skinSource();
  std::vector<Vec3> got(s.vertexCount());
  anim::SkinningJob job;
  job.palette = s.palette;
  job.positions = s.positions;
  job.joints0 = s.joints0;
  job.weights0 = s.weights0;
  job.out_positions = got;
  std::vector<anim::MorphTargetView> targets;
  for (size_t t = 0; t < s.targetCount(); ++t)
    targets.push_back({s.morph_positions.subspan(t * s.vertexCount(), s.vertexCount()), {}});
  GpuSkinner skinner(renderer->context());
  skinner.run(job, targets, s.morph_weights);
  float err = 0;
  for (size_t i = 0; i < got.size(); ++i) err = std::max(err, length(got[i] - want[i]));
  EXPECT_LT(err, 2e-6f) << "max distance between the GPU skinner's and the CPU's posed vertices (m)";
  SF_EXPECT_VALIDATION_CLEAN(renderer);
}

}  // namespace
}  // namespace sf::character
