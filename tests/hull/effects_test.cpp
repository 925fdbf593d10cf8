// Live hulls (hull/effects.h, hull/hull_pass.h, hull/hull_script.h): the pass's CPU reference against
// closed-form answers per effect (identity when off, rigid part transforms, the ripple's front, scatter's
// fade, siphon's period, the black-body debris), the Vulkan pass against the CPU reference per slot with
// every effect on over a damaged hull, scripts (errors naming JSON paths, deterministic replay, seeds), holes
// that never show the backdrop, the sink's slot mapping unchanged by destruction, and `hull play` to PNG
// frames and MP4.
#include "hull/effects.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>

#include "core/covariance.h"
#include "core/error.h"
#include "gpu/gpu.h"
#include "hull/destruction.h"
#include "hull/hull_pass.h"
#include "hull/hull_script.h"
#include "hull/outline.h"
#include "io/file.h"
#include "io/image_io.h"
#include "io/json.h"
#include "io/spl2.h"
#include "render/cpu_renderer.h"
#include "render/gpu_shared.h"
#include "render/vulkan_renderer.h"
#include "scene/scene.h"
#include "support/gpu_support.h"
#include "support/test_support.h"

namespace sf::hull {
namespace {

using namespace hull_layout;
constexpr float kShC0 = 0.28209479177387814f;

// A sphere hull of n splats (Fibonacci points, outward normals, tangent axes), parts by octant, a chunk per
// 100 splats, baked-like channels.
Spl2Hull sphereHull(size_t n, float radius = 0.6f) {
  Spl2Hull h;
  const size_t n_core = n * 3 / 5;
  h.core.resize(n_core);
  h.shell.resize(n - n_core);
  std::vector<uint16_t> chunk(n);
  for (size_t i = 0; i < n; ++i) {
    const auto [nrm, t0, t1] = test::fibonacciSphereFrame(i, n);
    Spl2Block& b = i < n_core ? h.core : h.shell;
    const size_t k = i < n_core ? i : i - n_core;
    b.pos[k] = nrm * radius;
    b.normal[k] = nrm;
    b.ax0[k] = t0 * 0.06f;
    b.ax1[k] = t1 * 0.04f;
    b.color[k] = {0.3f + 0.5f * (nrm.x * 0.5f + 0.5f), 0.5f, 0.3f + 0.4f * (nrm.z * 0.5f + 0.5f)};
    b.opacity[k] = i < n_core ? 0.97f : 0.6f;
    const int part = (nrm.x > 0) + 2 * (nrm.y > 0) + 4 * (nrm.z > 0);
    b.attrs[k] = {static_cast<float>(80 + (i * 37) % 176),
                  static_cast<float>(part * 16 + (i % 5 == 0 ? 9 : 0)), 0.0f,
                  static_cast<float>((i * 131) % 256)};
    chunk[i] = static_cast<uint16_t>(i / 100);
  }
  h.orders = spl2ShellOrders(h.shell.pos, kSpl2Buckets, 41.0f);
  h.has_chunks = true;
  h.chunk_of = chunk;
  h.material_of.assign(n, 0);
  spl2ComputeChunkTable(h);
  return h;
}

std::shared_ptr<HullAsset> sphereAsset(const std::string& name, size_t n) {
  const std::string dir = test::tempDir(name);
  saveSpl2(sphereHull(n), dir + "/sphere.spl2");
  return HullAsset::load(dir + "/sphere.spl2");
}

HullEffects allEffects(Vec3 centre) {
  HullEffects e;
  e.scatter = 0.35f;
  e.scatter_mode = ScatterMode::kVortex;
  e.kill_direction = {0, 0, -1};
  e.kill_bias = 0.4f;
  e.implode = 0.2f;
  e.ripple = 0.04f;
  e.ripple_origin = centre + Vec3{0, 0, 0.6f};
  e.ripple_age = 0.2f;
  e.charge = 0.7f;
  e.link_decay = 0.8f;
  e.siphon = 0.9f;
  e.parts = {{centre, normalize(Quat{0.9f, 0.1f, 0.3f, 0.2f}), {0.01f, 0.02f, 0}},
             {},
             {Vec3{0.2f, 0, 0}, normalize(Quat{0.8f, 0, 0.6f, 0}), {}}};
  return e;
}

// Damage: hits of every kind, so the slots hold layers, debris and chunk bodies.
void damage(HullInstance& inst) {
  Destruction& d = inst.destruction();
  Hit h;
  h.direction = {0, 0, -1};
  h.damage = 60;
  h.weapon = Weapon::kCannon;
  d.hit(h, 0.1);
  d.hit(h, 0.15);
  h.weapon = Weapon::kNone;
  for (int k = 0; k < 5; ++k) d.hit(h, 0.16 + 0.005 * k);  // down to the core: hot points and sparks
  h.kind = HitKind::kBlast;
  h.direction = {1, 0, 0};
  d.hit(h, 0.2);
  h.kind = HitKind::kPierce;
  h.weapon = Weapon::kRailgun;
  h.direction = normalize(Vec3{0.3f, -0.2f, 1});
  d.hit(h, 0.25);
  d.update(0.3);
}

Vec3 vec3Of(const float* v) {
  return {v[0], v[1], v[2]};
}
Vec3 colorOfSh(const float* sh) {
  return {sh[0] * kShC0 + 0.5f, sh[1] * kShC0 + 0.5f, sh[2] * kShC0 + 0.5f};
}

TEST(HullEffects, OffIsTheRestGaussianUnlit) {
  auto asset = sphereAsset("HullEffects.Off", 600);
  HullInstance inst(asset);
  HullLight light;
  light.enabled = false;
  const HullParams p = packHullParams({}, light, Mat4{}, inst.centre(), 1.0,
                                      static_cast<uint32_t>(inst.destruction().slots().size()));
  EXPECT_EQ(p.effects, 0u);
  HullOutput out;
  evaluateHull(p, inst.destruction().rest(), inst.destruction().slots(), inst.destruction().bodies(), out);
  const GaussianCloud& rest = asset->rest;
  ASSERT_EQ(rest.size(), inst.destruction().hullSlots());
  for (size_t i = 0; i < rest.size(); ++i) {
    const Cov6 c = covarianceFromScaleRotation(rest.scales[i], rest.rotations[i]);
    for (int k = 0; k < 6; ++k)
      ASSERT_NEAR(out.covariances[i][static_cast<size_t>(k)], c[static_cast<size_t>(k)], 1e-7f) << i;
    ASSERT_EQ(out.positions[i].x, rest.positions[i].x);
    ASSERT_EQ(out.positions[i].z, rest.positions[i].z);
    ASSERT_FLOAT_EQ(out.opacities[i], rest.opacities[i]);
    const Vec3 col = colorOfSh(rest.shOf(i).data());
    ASSERT_NEAR(out.colors[i].x, col.x, 1e-5f);
    ASSERT_NEAR(out.colors[i].z, col.z, 1e-5f);
  }
  for (size_t i = rest.size(); i < out.opacities.size(); ++i)
    ASSERT_TRUE(std::isnan(out.opacities[i])) << "pool slot " << i;
}

TEST(HullEffects, PartXformIsRigidPerPart) {
  auto asset = sphereAsset("HullEffects.Part", 800);
  HullInstance inst(asset);
  HullLight light;
  light.enabled = false;
  HullEffects e;
  const Vec3 pivot{0.1f, 0.2f, -0.1f}, offset{0.0f, 0.05f, 0.02f};
  const Quat q = normalize(Quat{std::cos(0.4f), 0, std::sin(0.4f), 0});  // 0.8 rad about +y
  e.parts.resize(4);
  e.parts[3] = {pivot, q, offset};
  const auto& d = inst.destruction();
  HullOutput off, on;
  evaluateHull(packHullParams({}, light, Mat4{}, inst.centre(), 0, static_cast<uint32_t>(d.slots().size())),
               d.rest(), d.slots(), d.bodies(), off);
  evaluateHull(packHullParams(e, light, Mat4{}, inst.centre(), 0, static_cast<uint32_t>(d.slots().size())),
               d.rest(), d.slots(), d.bodies(), on);
  const Mat3 r = rotationMatrix(q);
  size_t moved = 0;
  for (size_t i = 0; i < d.hullSlots(); ++i) {
    const uint32_t part = d.rest()[i].channels & 0xffu;
    if (part != 3) {
      ASSERT_EQ(on.positions[i].x, off.positions[i].x) << i;
      continue;
    }
    ++moved;
    const Vec3 want = pivot + r * (off.positions[i] - pivot) + offset;
    ASSERT_NEAR(length(on.positions[i] - want), 0.0f, 1e-5f) << i;
    const Cov6 cw = covarianceUpper(r * covarianceMatrix(off.covariances[i]) * transpose(r));
    for (size_t k = 0; k < 6; ++k) ASSERT_NEAR(on.covariances[i][k], cw[k], 1e-6f) << i;
  }
  EXPECT_GT(moved, 50u);
}

TEST(HullEffects, RippleFrontAndScatterFade) {
  auto asset = sphereAsset("HullEffects.Ripple", 800);
  HullInstance inst(asset);
  HullLight light;
  light.enabled = false;
  const auto& d = inst.destruction();
  HullEffects e;
  e.ripple = 0.05f;
  e.ripple_origin = {0, 0.6f, 0};
  e.ripple_age = 0.3f;
  HullOutput out;
  evaluateHull(packHullParams(e, light, Mat4{}, inst.centre(), 0, static_cast<uint32_t>(d.slots().size())),
               d.rest(), d.slots(), d.bodies(), out);
  for (size_t i = 0; i < d.hullSlots(); ++i) {
    const HullRest& r = d.rest()[i];
    const Vec3 p{r.position[0], r.position[1], r.position[2]}, n{r.normal[0], r.normal[1], r.normal[2]};
    const float dist = length(p - e.ripple_origin),
                x = (dist - e.ripple_age * e.ripple_speed) / e.ripple_width;
    const float want = e.ripple * std::exp(-x * x) * std::exp(-e.ripple_age * e.ripple_decay);
    ASSERT_NEAR(dot(out.positions[i] - p, n), want, 1e-6f) << i;
    ASSERT_NEAR(length(out.positions[i] - p - n * want), 0.0f, 1e-6f) << i;
  }
  // Scatter: every splat leaves within [0.4, 1] x distance x ease and is gone at progress 1.
  for (float s : {0.5f, 1.0f}) {
    HullEffects sc;
    sc.scatter = s;
    evaluateHull(packHullParams(sc, light, Mat4{}, inst.centre(), 0, static_cast<uint32_t>(d.slots().size())),
                 d.rest(), d.slots(), d.bodies(), out);
    const float ease = 1 - (1 - s) * (1 - s);
    for (size_t i = 0; i < d.hullSlots(); ++i) {
      const float moved = length(out.positions[i] - asset->rest.positions[i]);
      ASSERT_GE(moved, 0.4f * sc.scatter_distance * ease - 1e-5f) << i;
      ASSERT_LE(moved, 1.0f * sc.scatter_distance * ease + 1e-5f) << i;
      if (s == 1.0f) {
        ASSERT_EQ(out.opacities[i], 0.0f) << i;
      }
    }
  }
}

TEST(HullEffects, SiphonReturnsEachPeriodAndTakesItsShare) {
  auto asset = sphereAsset("HullEffects.Siphon", 2000);
  HullInstance inst(asset);
  HullLight light;
  light.enabled = false;
  const auto& d = inst.destruction();
  HullEffects e;
  e.siphon = 1;
  e.siphon_share = 0.25f;
  e.siphon_period = 0.5f;
  HullOutput a, b;
  const uint32_t n = static_cast<uint32_t>(d.slots().size());
  evaluateHull(packHullParams(e, light, Mat4{}, inst.centre(), 0.3, n), d.rest(), d.slots(), d.bodies(), a);
  evaluateHull(packHullParams(e, light, Mat4{}, inst.centre(), 0.8, n), d.rest(), d.slots(), d.bodies(), b);
  size_t taken = 0;
  for (size_t i = 0; i < d.hullSlots(); ++i) {
    taken += length(a.positions[i] - asset->rest.positions[i]) > 1e-6f;
    ASSERT_NEAR(length(a.positions[i] - b.positions[i]), 0.0f, 2e-4f)
        << i;  // one period later: the same place
  }
  const double share = static_cast<double>(taken) / static_cast<double>(d.hullSlots());
  EXPECT_NEAR(share, 0.25, 0.04);
}

TEST(HullEffects, DebrisCoolsAlongTheBlackBody) {
  // Wien's law, independently: the channel ratios at 6500 K (near white: every channel within 21% of the
  // strongest); cooling reddens (r/g rises) while the strongest channel stays 1 down to 2000 K and then
  // dims monotonically to black at 600 K.
  auto wien = [](float l, float t) { return std::pow(l, -5.0f) * std::exp(-1.4388e7f / (l * t)); };
  const Vec3 hot = blackBody(6500);
  EXPECT_NEAR(hot.y / hot.z, wien(550, 6500) / wien(465, 6500), 1e-4f);
  EXPECT_NEAR(hot.x / hot.z, wien(610, 6500) / wien(465, 6500), 1e-4f);
  EXPECT_GT(std::min({hot.x, hot.y, hot.z}), 0.79f);
  float prev_rg = 0, prev_top = 2;
  for (float t = 6000; t >= 700; t -= 500) {
    const Vec3 c = blackBody(t);
    const float top = std::max({c.x, c.y, c.z});
    if (t >= 2000) {
      EXPECT_NEAR(top, 1.0f, 1e-6f) << t;
    }
    EXPECT_LE(top, prev_top) << t;
    EXPECT_GT(c.x / std::max(c.y, 1e-20f), prev_rg) << t;
    prev_rg = c.x / std::max(c.y, 1e-20f), prev_top = top;
  }
  EXPECT_EQ(blackBody(600).x, 0.0f);
}

struct GpuRun {
  HullOutput out;
  bool ok = false;
};

std::unique_ptr<gpu::Context> hullContext() {
  if (!gpu::vulkanAvailable()) return nullptr;
  gpu::ContextOptions o;
  o.validation = true;
  return std::make_unique<gpu::Context>(o);
}

HullOutput runGpu(gpu::Context& ctx, const std::shared_ptr<const HullPass>& pass, const HullInstance& inst,
                  const HullParams& params) {
  VulkanHullPath path(pass, inst.destruction(), inst.lodRanks());
  path.setFrame(params, inst.destruction(), inst.revision());
  const size_t n = inst.destruction().slots().size();
  gpu::Buffer pos = ctx.createBuffer(n * 12, true, "pos"), cov = ctx.createBuffer(n * 24, true, "cov"),
              op = ctx.createBuffer(n * 4, true, "op"), sh = ctx.createBuffer(n * 12, true, "sh"),
              shapes = ctx.createBuffer(n * 4, true, "shapes");
  std::memset(shapes.mapped, 0, n * 4);
  GpuSplatTargets t;
  t.positions = pos.address, t.covariances = cov.address, t.opacities = op.address, t.sh = sh.address,
  t.shapes = shapes.address;
  t.count = static_cast<uint32_t>(n), t.sh_stride = 3;
  VkCommandBuffer cmd = ctx.begin();
  test::recordContributed(cmd, path, t);
  ctx.submit(cmd);
  HullOutput out;
  out.positions.resize(n), out.covariances.resize(n), out.opacities.resize(n), out.colors.resize(n);
  const auto* words = static_cast<const uint32_t*>(shapes.mapped);
  out.shapes.assign(words, words + n);
  const float* p = static_cast<const float*>(pos.mapped);
  const float* c = static_cast<const float*>(cov.mapped);
  const float* o = static_cast<const float*>(op.mapped);
  const float* s = static_cast<const float*>(sh.mapped);
  for (size_t i = 0; i < n; ++i) {
    out.positions[i] = {p[3 * i], p[3 * i + 1], p[3 * i + 2]};
    for (size_t k = 0; k < 6; ++k) out.covariances[i][k] = c[6 * i + k];
    out.opacities[i] = o[i];
    out.colors[i] = colorOfSh(s + 3 * i);
  }
  return out;
}

TEST(HullEffects, VulkanPassMatchesTheCpuReferencePerSlot) {
  auto ctx = hullContext();
  if (!ctx) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  auto pass = std::make_shared<HullPass>(*ctx);
  auto asset = sphereAsset("HullEffects.Vulkan", 3000);
  HullInstance inst(asset);
  damage(inst);
  for (uint32_t k = 0; k < 6; ++k)  // an engine's ion droplets among the debris
    inst.destruction().emitIon(k * 7, {0.05f * static_cast<float>(k), -0.7f, 0}, {0, -0.9f, 0.1f},
                               0.3 + 0.01 * k);
  const auto& d = inst.destruction();
  size_t kinds[5] = {0, 0, 0, 0, 0};
  for (const HullSlot& s : d.slots())
    ++kinds[std::min<uint32_t>((s.flags & SF_HULL_KIND_MASK) >> SF_HULL_KIND_SHIFT, 4)];
  EXPECT_GT(kinds[SF_HULL_KIND_LAYER], 0u);
  EXPECT_GT(kinds[SF_HULL_KIND_DEBRIS], 0u);
  EXPECT_GT(kinds[SF_HULL_KIND_BODY], 0u);
  size_t hot = 0;
  for (const HullSlot& s : d.slots()) hot += (s.flags & (SF_HULL_FLAG_HOT | SF_HULL_FLAG_SPARK)) != 0;
  EXPECT_GT(hot, 0u);
  HullLight light;
  light.flash_strength = 0.8f;
  light.flash_position = {1, 1, 1};
  const Mat4 to_world = Mat4::fromLinearTranslation(Mat3::diagonal({1.5f, 1.5f, 1.5f}), {0.2f, 0, 0});
  std::vector<HullEffects> configs(4);
  configs[1] = allEffects(inst.centre());
  configs[2] = allEffects(inst.centre());
  configs[2].scatter_mode = ScatterMode::kRing;
  configs[2].scatter = 0.8f;
  // Barrel heat on three guns (one cold, one past saturation) over the damaged hull, with a muzzle flash.
  configs[3].barrel_heat = {
      {{0, 0, 0.6f}, 0.45f}, {{0.6f, 0, 0}, 1.7f}, {{0, 0.6f, 0}, 0.0f}, {{0, -0.6f, 0}, 0.05f}};
  configs[3].heat_radius = 0.25f;
  configs[3].muzzle_flash = 1.2f;
  configs[3].muzzle_point = {0, 0, 0.6f};
  configs[3].thrust = 0.8f;  // engine ignition on parts 1 and 4
  configs[3].engine_parts = 0x12u;
  for (size_t c = 0; c < configs.size(); ++c) {
    const HullLight lit =
        muzzleLight(light, configs[c], to_world);  // config 3's muzzle flash replaces the scene's
    HullParams p = packHullParams(configs[c], lit, to_world, inst.centre(), 0.37,
                                  static_cast<uint32_t>(d.slots().size()));
    if (c == 3) {
      EXPECT_EQ(p.gun_count, 3u);  // the cold gun is left out
    }
    if (c == 1) p.shape_small = inst.shapeSmall(), p.shape_large = inst.shapeLarge();  // wound shapes on
    HullOutput cpu;
    evaluateHull(p, d.rest(), d.slots(), d.bodies(), cpu);
    const HullOutput g = runGpu(*ctx, pass, inst, p);
    size_t live = 0;
    for (size_t i = 0; i < d.slots().size(); ++i) {
      ASSERT_EQ(std::isnan(g.opacities[i]), std::isnan(cpu.opacities[i])) << "config " << c << " slot " << i;
      if (std::isnan(cpu.opacities[i])) continue;
      ++live;
      ASSERT_NEAR(g.opacities[i], cpu.opacities[i], 1e-5f) << "config " << c << " slot " << i;
      ASSERT_NEAR(length(g.positions[i] - cpu.positions[i]), 0.0f, 2e-5f) << "config " << c << " slot " << i;
      for (size_t k = 0; k < 6; ++k)
        ASSERT_NEAR(g.covariances[i][k], cpu.covariances[i][k],
                    1e-7f + 1e-4f * std::abs(cpu.covariances[i][k]))
            << c << " " << i;
      ASSERT_NEAR(length(g.colors[i] - cpu.colors[i]), 0.0f, 2e-4f) << "config " << c << " slot " << i;
    }
    EXPECT_GT(live, d.hullSlots()) << "config " << c;  // the hull and some debris
    // Wound shapes: the same word per slot, on wounded skin and layer slots only, every class present.
    size_t classes[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < d.slots().size(); ++i) {
      if (std::isnan(cpu.opacities[i])) continue;
      if (c != 1) {  // no shape classes: no words, and the pass writes none (the buffer was zeroed)
        ASSERT_EQ(cpu.shapes[i], 0u) << "config " << c << " slot " << i;
        ASSERT_EQ(g.shapes[i], 0u) << "config " << c << " slot " << i;
        continue;
      }
      ASSERT_EQ(g.shapes[i], cpu.shapes[i]) << "slot " << i;
      const HullSlot& s = d.slots()[i];
      const uint32_t kind = (s.flags & SF_HULL_KIND_MASK) >> SF_HULL_KIND_SHIFT;
      const bool wound =
          (s.flags & SF_HULL_FLAG_WOUND) != 0 && (kind == SF_HULL_KIND_SKIN || kind == SF_HULL_KIND_LAYER);
      ASSERT_EQ(cpu.shapes[i] != 0, wound) << "slot " << i;
      ++classes[cpu.shapes[i] & 3u];
    }
    if (c == 1) {
      for (uint32_t k = SF_SHAPE_DISC; k <= SF_SHAPE_POLYGON; ++k)
        EXPECT_GT(classes[k], 0u) << "no wound slot of shape class " << k;
    }
  }
  EXPECT_EQ(ctx->validationErrors(), 0u) << ctx->validationReport();
}

// Runtime LOD on a live hull (hull/hull_lod.h): with K set the pass leaves out exactly the slots whose rest
// record ranks >= K (hull slots, their layers, debris and body copies; ion droplets stay) and every other
// slot is bit for bit what it is without LOD; the Vulkan pass makes the same cut per slot; K >= N is no cut.
TEST(HullEffects, LodLeavesOutTheSlotsOfSplatsPastK) {
  auto asset = sphereAsset("HullEffects.Lod", 3000);
  HullInstance inst(asset);
  damage(inst);
  for (uint32_t k = 0; k < 6; ++k)  // ion droplets taking the shape of splats of every rank
    inst.destruction().emitIon(k * 499, {0.05f * static_cast<float>(k), -0.7f, 0}, {0, -0.9f, 0.1f},
                               0.3 + 0.01 * k);
  const auto& d = inst.destruction();
  const std::vector<uint32_t>& rank = inst.lodRanks();
  ASSERT_EQ(rank, hullImportanceRanks(asset->hull));
  const uint32_t n = static_cast<uint32_t>(d.hullSlots()), k = 1234;
  const Mat4 to_world = Mat4::fromLinearTranslation(Mat3::diagonal({1.5f, 1.5f, 1.5f}), {0.2f, 0, 0});
  HullParams p = packHullParams(allEffects(inst.centre()), HullLight{}, to_world, inst.centre(), 0.37,
                                static_cast<uint32_t>(d.slots().size()));
  p.shape_small = inst.shapeSmall(), p.shape_large = inst.shapeLarge();
  HullOutput all, cut;
  evaluateHull(p, d.rest(), d.slots(), d.bodies(), all);
  HullParams q = p;
  q.effects |= SF_HULL_FX_LOD, q.lod_count = k;
  evaluateHull(q, d.rest(), d.slots(), d.bodies(), cut, rank);
  size_t kept_hull = 0, left_out = 0, ions = 0, pool_left_out = 0;
  for (size_t i = 0; i < d.slots().size(); ++i) {
    const HullSlot& s = d.slots()[i];
    const bool ion = (s.flags & SF_HULL_FLAG_ION) != 0;
    const bool keep = ion || rank[s.source] < k;
    if (std::isnan(all.opacities[i])) {
      ASSERT_TRUE(std::isnan(cut.opacities[i])) << i;
      continue;
    }
    if (!keep) {
      ASSERT_TRUE(std::isnan(cut.opacities[i])) << "slot " << i << " of rank " << rank[s.source];
      ++left_out, pool_left_out += i >= n;
      continue;
    }
    ions += ion && rank[s.source] >= k;
    kept_hull += i < n;
    ASSERT_EQ(std::memcmp(&cut.positions[i], &all.positions[i], sizeof(Vec3)), 0) << i;
    ASSERT_EQ(std::memcmp(&cut.covariances[i], &all.covariances[i], sizeof(Cov6)), 0) << i;
    ASSERT_EQ(std::memcmp(&cut.colors[i], &all.colors[i], sizeof(Vec3)), 0) << i;
    ASSERT_EQ(cut.opacities[i], all.opacities[i]) << i;
    ASSERT_EQ(cut.shapes[i], all.shapes[i]) << i;
  }
  EXPECT_GT(left_out, n - k - 10);  // the hull slots past K (a few may be off already)
  EXPECT_GT(pool_left_out, 0u) << "debris or body copies of splats past K";
  EXPECT_GT(ions, 0u) << "ion droplets shaped after splats past K stay";
  EXPECT_LE(kept_hull, k);
  // buildFrame: the object's LOD, a script's override over it, and K >= N as no LOD at all.
  HullLight light;
  HullFrame f_off, f_k, f_n, f_script;
  std::vector<RenderObject> objects;
  inst.buildFrame(to_world, 0.37, light, f_off, objects);
  inst.buildFrame(to_world, 0.37, light, f_k, objects, HullLod::fixed(k));
  inst.buildFrame(to_world, 0.37, light, f_n, objects, HullLod::fixed(n));
  EXPECT_EQ(f_off.lod_count, n);
  EXPECT_EQ(f_k.lod_count, k);
  EXPECT_EQ(f_n.lod_count, n);
  for (size_t i = 0; i < d.slots().size(); ++i) {
    ASSERT_EQ(std::memcmp(&f_n.live.positions[i], &f_off.live.positions[i], sizeof(Vec3)), 0);
    ASSERT_EQ(std::isnan(f_n.live.opacities[i]), std::isnan(f_off.live.opacities[i]));
    if (!std::isnan(f_off.live.opacities[i])) {
      ASSERT_EQ(f_n.live.opacities[i], f_off.live.opacities[i]);
    }
    const bool keep = (d.slots()[i].flags & SF_HULL_FLAG_ION) != 0 || rank[d.slots()[i].source] < k;
    if (!keep) {
      ASSERT_TRUE(std::isnan(f_k.live.opacities[i])) << i;
    }
  }
  inst.effects.lod = HullLod::fixed(10);  // a script's `lod` event replaces the object's
  inst.buildFrame(to_world, 0.37, light, f_script, objects, HullLod::fixed(k));
  EXPECT_EQ(f_script.lod_count, 10u);
  inst.effects.lod.reset();
  // The Vulkan pass: the same cut, slot for slot.
  auto ctx = hullContext();
  if (!ctx) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  auto pass = std::make_shared<HullPass>(*ctx);
  const HullOutput g = runGpu(*ctx, pass, inst, q);
  for (size_t i = 0; i < d.slots().size(); ++i) {
    ASSERT_EQ(std::isnan(g.opacities[i]), std::isnan(cut.opacities[i])) << "slot " << i;
    if (std::isnan(cut.opacities[i])) continue;
    ASSERT_NEAR(g.opacities[i], cut.opacities[i], 1e-5f) << i;
    ASSERT_NEAR(length(g.positions[i] - cut.positions[i]), 0.0f, 2e-5f) << i;
    ASSERT_NEAR(length(g.colors[i] - cut.colors[i]), 0.0f, 2e-4f) << i;
    ASSERT_EQ(g.shapes[i], cut.shapes[i]) << i;
  }
  // A path made without the ranks refuses a frame with LOD on.
  VulkanHullPath bare(pass, d);
  EXPECT_NE(test::errorOf([&] { bare.setFrame(q, d, inst.revision()); }).find("LOD"), std::string::npos);
  EXPECT_EQ(ctx->validationErrors(), 0u) << ctx->validationReport();
}

// A live hull at K drawn end to end: its GPU path in the Vulkan frame against its CPU path in the CPU
// renderer; and K = N on the GPU path is the image without LOD, bit for bit.
TEST(HullEffects, LodLiveHullDrawsAlikeOnBothPaths) {
  if (!hullContext())
    SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  gpu::ContextOptions co;
  co.validation = true;
  VulkanRenderer vk(co);
  auto asset = sphereAsset("HullEffects.LodFrame", 2000);
  HullInstance on_cpu(asset), on_gpu(asset);
  attachHullGpu(std::make_shared<HullPass>(vk.context()), on_gpu);
  Hit h;
  h.direction = normalize(Vec3{0.2f, -0.1f, -1});
  h.damage = 60;
  for (HullInstance* inst : {&on_cpu, &on_gpu}) {
    inst->destruction().hit(h, 0.1);
    inst->destruction().update(0.2);
  }
  const Camera cam = lookAtCamera({0.3f, 0.2f, 2.2f}, {0, 0, 0}, {0, 1, 0}, 40.0f, 128, 128);
  HullLight light;
  auto draw = [&](HullInstance& inst, HullLod lod, bool gpu) {
    HullFrame frame;
    std::vector<RenderObject> objects;
    inst.buildFrame(Mat4{}, 0.2, light, frame, objects, lod, &cam);
    return gpu ? vk.render(objects, cam, RenderSettings{}) : renderCpu(objects, cam, RenderSettings{});
  };
  const ImageRGBA cpu = draw(on_cpu, HullLod::fixed(700), false),
                  gpu = draw(on_gpu, HullLod::fixed(700), true);
  const ImageRGBA full = draw(on_cpu, HullLod::off(), false);
  const ImageDiff same = compareImages(cpu, gpu), shown = compareImages(cpu, full, 0.02);
  std::printf(
      "live hull at K 700 of 2000: GPU path against CPU path %.2f dB; against the full hull %.0f pixels "
      "differ by > 0.02\n",
      same.psnr, shown.fraction_over * 128 * 128);
  EXPECT_GE(same.psnr, 45.0);
  EXPECT_GT(shown.fraction_over * 128 * 128, 30.0) << "the cut changed nothing";
  EXPECT_EQ(draw(on_gpu, HullLod::fixed(2000), true).pixels, draw(on_gpu, HullLod::off(), true).pixels);
  EXPECT_EQ(vk.context().validationErrors(), 0u) << vk.context().validationReport();
}

// Contributed passes in the frame (render/frame_passes.h): three live hulls each add their upload and their
// effects; the frame interleaves them, so the three uploads share one stretch, the three effects (each
// writing its own part of the splat slots) the next, and preprocess follows one barrier later. The image is
// the CPU path's, and a frame whose destruction state did not change uploads nothing.
TEST(HullEffects, LiveHullsContributeInterleavedPassesToTheFrameGraph) {
  if (!hullContext())
    SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  gpu::ContextOptions co;
  co.validation = true;
  VulkanRenderer vk(co);
  auto asset = sphereAsset("HullEffects.Contributed", 600);
  auto pass = std::make_shared<HullPass>(vk.context());
  std::vector<std::unique_ptr<HullInstance>> on_cpu, on_gpu;
  for (int i = 0; i < 3; ++i) {
    on_cpu.push_back(std::make_unique<HullInstance>(asset));
    on_gpu.push_back(std::make_unique<HullInstance>(asset));
    attachHullGpu(pass, *on_gpu.back());
  }
  const Camera cam = lookAtCamera({0, 0.3f, 4.0f}, {0, 0, 0}, {0, 1, 0}, 50.0f, 96, 96);
  HullLight light;
  auto draw = [&](std::vector<std::unique_ptr<HullInstance>>& hulls, bool gpu) {
    std::vector<HullFrame> frames(hulls.size());
    std::vector<RenderObject> objects;
    for (size_t i = 0; i < hulls.size(); ++i)
      hulls[i]->buildFrame(Mat4::fromLinearTranslation(Mat3{}, {1.1f * (static_cast<float>(i) - 1), 0, 0}),
                           0.2, light, frames[i], objects, {}, &cam);
    return gpu ? vk.render(objects, cam, RenderSettings{}) : renderCpu(objects, cam, RenderSettings{});
  };
  const ImageDiff d = compareImages(draw(on_gpu, true), draw(on_cpu, false));
  const std::string graph = vk.lastFrameGraph();
  std::printf("three live hulls, Vulkan vs CPU %.2f dB; the frame:\n%s", d.psnr, graph.c_str());
  EXPECT_GE(d.psnr, 45.0);
  const std::string uploads = "live hull: upload: reads -; writes live hull ";
  const size_t first = graph.find(uploads);
  ASSERT_NE(first, std::string::npos) << graph;
  const size_t effects = graph.find("live hull: effects", first);
  ASSERT_NE(effects, std::string::npos) << graph;
  const std::string stretch = graph.substr(first, effects - first);
  size_t count = 0;
  for (size_t at = stretch.find(uploads); at != std::string::npos; at = stretch.find(uploads, at + 1))
    ++count;
  EXPECT_EQ(count, 3u) << graph;
  EXPECT_NE(stretch.rfind("| barrier"), std::string::npos) << graph;
  EXPECT_EQ(stretch.find("| barrier"), stretch.rfind("| barrier")) << "one barrier after the uploads\n"
                                                                   << graph;
  const std::string effect_lines = graph.substr(effects, graph.find("preprocess:") - effects);
  EXPECT_NE(effect_lines.find("writes splat slots of object 2"), std::string::npos) << graph;
  size_t barriers_in_effects = 0;
  for (size_t at = effect_lines.find("| barrier"); at != std::string::npos;
       at = effect_lines.find("| barrier", at + 1))
    ++barriers_in_effects;
  EXPECT_EQ(barriers_in_effects, 1u) << "the three effects share a stretch, then one barrier\n" << graph;
  draw(on_gpu, true);  // nothing changed: no upload
  EXPECT_EQ(vk.lastFrameGraph().find("live hull: upload"), std::string::npos) << vk.lastFrameGraph();
  EXPECT_EQ(vk.context().validationErrors(), 0u) << vk.context().validationReport();
}

// Wound shapes only while a wound is open: an undamaged hull's frame carries no shapes (CPU path) and its GPU
// path writes none; a hit opens them, on wounded slots only; a full heal closes them again.
TEST(HullEffects, ShapesOnlyWhileAWoundIsOpen) {
  HullInstance inst(sphereAsset("HullEffects.Shapes", 2000));
  ASSERT_GT(inst.shapeLarge(), inst.shapeSmall());
  HullLight light;
  HullFrame frame;
  auto shapesOf = [&](double t) {
    std::vector<RenderObject> objects;
    inst.buildFrame(Mat4{}, t, light, frame, objects);
    EXPECT_EQ(objects.size(), 1u);
    return std::vector<uint32_t>(objects[0].shapes.begin(), objects[0].shapes.end());
  };
  EXPECT_TRUE(shapesOf(0.0).empty()) << "idle: no shapes";
  Hit h;
  h.direction = {0, 0, -1};
  h.damage = 40;
  inst.destruction().hit(h, 0.1);
  inst.destruction().update(0.2);
  const std::vector<uint32_t> open = shapesOf(0.2);
  ASSERT_EQ(open.size(), inst.destruction().slots().size());
  size_t shaped = 0;
  for (size_t i = 0; i < open.size(); ++i) {
    const HullSlot& s = inst.destruction().slots()[i];
    if (std::isnan(frame.live.opacities[i])) continue;
    const uint32_t kind = (s.flags & SF_HULL_KIND_MASK) >> SF_HULL_KIND_SHIFT;
    EXPECT_EQ(open[i] != 0,
              (s.flags & SF_HULL_FLAG_WOUND) != 0 && kind != SF_HULL_KIND_DEBRIS && kind != SF_HULL_KIND_BODY)
        << i;
    shaped += open[i] != 0;
  }
  EXPECT_GT(shaped, 10u);
  inst.destruction().heal(1.0, 1.0f);
  inst.destruction().update(1.0);
  inst.destruction().update(30.0);
  EXPECT_TRUE(shapesOf(30.0).empty()) << "healed: no shapes";
  // The GPU path says the same to the frame.
  auto ctx = hullContext();
  if (!ctx) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  HullInstance live(sphereAsset("HullEffects.ShapesGpu", 800));
  attachHullGpu(std::make_shared<HullPass>(*ctx), live);
  auto writes = [&](double t) {
    std::vector<RenderObject> objects;
    live.buildFrame(Mat4{}, t, light, frame, objects);
    return objects.at(0).gpu_source->writesShapes();
  };
  EXPECT_FALSE(writes(0.0));
  live.destruction().hit(h, 0.1);
  EXPECT_TRUE(writes(0.1));
}

// A wounded hull drawn end to end: its GPU path in the Vulkan frame (the pass writes the shape words, the
// frame's shapes raster draws them) against its CPU path in the CPU renderer, and both against the same
// frame with the words taken away (the shapes must show).
TEST(HullEffects, WoundedHullDrawsAlikeOnBothPaths) {
  if (!hullContext())
    SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  gpu::ContextOptions co;
  co.validation = true;
  VulkanRenderer vk(co);
  auto asset = sphereAsset("HullEffects.WoundFrame", 2000);
  HullInstance on_cpu(asset), on_gpu(asset);
  attachHullGpu(std::make_shared<HullPass>(vk.context()), on_gpu);
  Hit h;
  h.direction = normalize(Vec3{0.2f, -0.1f, -1});
  h.damage = 80;
  for (HullInstance* inst : {&on_cpu, &on_gpu}) {
    inst->destruction().hit(h, 0.1);
    inst->destruction().hit(h, 0.15);
    inst->destruction().update(0.2);
  }
  const Camera cam = lookAtCamera({0.3f, 0.2f, 2.2f}, {0, 0, 0}, {0, 1, 0}, 40.0f, 128, 128);
  HullLight light;
  HullFrame cpu_frame, gpu_frame;
  std::vector<RenderObject> cpu_objects, gpu_objects;
  on_cpu.buildFrame(Mat4{}, 0.2, light, cpu_frame, cpu_objects);
  on_gpu.buildFrame(Mat4{}, 0.2, light, gpu_frame, gpu_objects);
  ASSERT_FALSE(cpu_objects.at(0).shapes.empty());
  ASSERT_TRUE(gpu_objects.at(0).gpu_source->writesShapes());
  const ImageRGBA cpu = renderCpu(cpu_objects, cam, RenderSettings{});
  const ImageRGBA gpu = vk.render(gpu_objects, cam, RenderSettings{});
  cpu_objects[0].shapes = {};
  const ImageRGBA unshaped = renderCpu(cpu_objects, cam, RenderSettings{});
  const ImageDiff same = compareImages(cpu, gpu), shown = compareImages(cpu, unshaped, 0.02);
  const double shown_pixels = shown.fraction_over * 128 * 128;
  std::printf(
      "wounded hull: GPU path against CPU path %.2f dB (max %.2g); against no shapes %.0f pixels differ by > "
      "0.02 (max %.2f)\n",
      same.psnr, same.max_abs, shown_pixels, shown.max_abs);
  EXPECT_GE(same.psnr, 45.0);
  EXPECT_GT(shown_pixels, 30.0) << "the wound's shapes changed nothing";
  EXPECT_EQ(vk.context().validationErrors(), 0u) << vk.context().validationReport();
}

TEST(HullScript, ParsesAndRefusesWithJsonPaths) {
  const std::string ok = R"({"seed": 3, "events": [
    {"time": 0, "effect": "assemble", "duration": 1, "mode": "firework"},
    {"time": 1.5, "hit": "shot", "direction": [0, 0, -1], "damage": 30, "weapon": "cannon"},
    {"time": 1.2, "heal": 0.5},
    {"time": 2, "effect": "part_xform", "part": 2, "axis": [0, 1, 0], "angle": 30, "hold": true}]})";
  const HullScript s = parseHullScript(ok, "s.json");
  ASSERT_EQ(s.events.size(), 4u);
  EXPECT_EQ(s.events[1].type, ScriptEvent::kHeal);  // sorted by time
  EXPECT_EQ(s.events[2].hit.weapon, Weapon::kCannon);
  EXPECT_EQ(*s.seed, 3u);
  EXPECT_DOUBLE_EQ(s.duration, 4.0);  // part_xform ends at 3, plus a second
  auto err = [](const std::string& text) { return test::errorOf([&] { parseHullScript(text, "s.json"); }); };
  EXPECT_NE(err(R"({"events": [{"time": 1, "hit": "shot", "direction": [0, 0]}]})")
                .find("s.json: events[0].direction: expected 3 numbers"),
            std::string::npos);
  EXPECT_NE(err(R"({"events": [{"time": 1, "hit": "kick"}]})").find("events[0].hit: unknown"),
            std::string::npos);
  EXPECT_NE(err(R"({"events": [{"time": 1, "effect": "charge", "colour": [1, 0, 0]}]})")
                .find("events[0].colour: unexpected key"),
            std::string::npos);
  EXPECT_NE(err(R"({"events": [{"time": 1, "heal": 1, "hit": "shot"}]})").find("exactly one of"),
            std::string::npos);
  EXPECT_NE(err(R"({"events": [{"time": -1, "heal": 1}]})").find("events[0].time"), std::string::npos);
  EXPECT_NE(err(R"({"events": [{"time": 1, "effect": "part_xform", "part": 9}]})").find("events[0].part"),
            std::string::npos);
  EXPECT_NE(err(R"({"events": [], "sed": 1})").find("sed: unexpected key"), std::string::npos);
}

const char* kBattle = R"({"events": [
  {"time": 0, "effect": "assemble", "duration": 0.5, "mode": "radial"},
  {"time": 0.6, "hit": "shot", "direction": [0, 0, -1], "damage": 50, "weapon": "cannon"},
  {"time": 0.7, "hit": "shot", "direction": [0, 0, -1], "damage": 50, "weapon": "cannon"},
  {"time": 0.8, "hit": "blast", "direction": [1, -0.2, 0], "damage": 40},
  {"time": 0.9, "hit": "epicenter", "direction": [0, 1, 0], "damage": 40, "weapon": "mortar"},
  {"time": 1.0, "hit": "melee", "direction": [-1, 0, 0], "damage": 20},
  {"time": 1.1, "hit": "pierce", "direction": [0.2, 0, 1], "damage": 30, "weapon": "railgun"},
  {"time": 1.2, "effect": "charge", "duration": 0.4},
  {"time": 1.3, "effect": "link_decay", "duration": 0.4, "amount": 0.8},
  {"time": 1.4, "effect": "siphon", "duration": 0.4},
  {"time": 1.5, "effect": "part_xform", "duration": 0.3, "part": 1, "axis": [1, 0, 0], "angle": 25},
  {"time": 1.8, "heal": 1},
  {"time": 2.0, "effect": "implode", "duration": 0.2},
  {"time": 2.2, "effect": "scatter", "duration": 0.6, "mode": "vortex"}]})";

// The CPU image of a live hull's current state at scene time t (no script advance).
// A script's `lod` events: the hull's LOD from each event's time on (over the object's own), refused with the
// JSON path when bad, replayed when time goes back.
TEST(HullScript, LodEventsSetTheHullsLodFromTheirTime) {
  const HullScript script = parseHullScript(
      R"({"events": [{"time": 2, "lod": "auto"}, {"time": 1, "lod": 300}, {"time": 3, "lod": "off"}, {"time": 1.5, "hit": "shot"}]})",
      "lod.json");
  ASSERT_EQ(script.events.size(), 4u);
  EXPECT_EQ(script.events[0].type, ScriptEvent::kLod);
  EXPECT_EQ(script.events[0].lod, HullLod::fixed(300));
  HullInstance inst(sphereAsset("HullScript.Lod", 800));
  HullScriptPlayer player(script);
  player.advance(inst, 0.5);
  EXPECT_FALSE(inst.effects.lod.has_value());
  player.advance(inst, 1.2);
  EXPECT_EQ(inst.effects.lod, HullLod::fixed(300));
  player.advance(inst, 2.5);
  EXPECT_EQ(inst.effects.lod, HullLod::automatic());
  player.advance(inst, 3.5);
  EXPECT_EQ(inst.effects.lod, HullLod::off());
  player.advance(inst, 1.7);  // back in time: replayed
  EXPECT_EQ(inst.effects.lod, HullLod::fixed(300));
  HullFrame frame;
  std::vector<RenderObject> objects;
  inst.buildFrame(Mat4{}, 1.7, HullLight{}, frame, objects, HullLod::fixed(50));
  EXPECT_EQ(frame.lod_count, 300u);  // the script's over the object's
  for (const char* bad :
       {R"({"time": 1, "lod": 0})", R"({"time": 1, "lod": "most"})", R"({"time": 1, "lod": 2.5})"}) {
    const std::string e = test::errorOf([&] {
      parseHullScript(std::string(R"({"events": [{"time": 0, "heal": 1}, )") + bad + "]}", "bad.json");
    });
    EXPECT_NE(e.find("bad.json: events[1].lod: expected a whole number of splats K >= 1"), std::string::npos)
        << e;
  }
  EXPECT_NE(test::errorOf([&] {
              parseHullScript(R"({"events": [{"time": 1, "lod": 5, "amount": 1}]})", "bad.json");
            }).find("events[0].amount"),
            std::string::npos);
  EXPECT_NE(test::errorOf([&] {
              parseHullScript(R"({"events": [{"time": 1, "lod": 5, "heal": 1}]})", "bad.json");
            }).find("\"lod\""),
            std::string::npos);
}

std::vector<float> imageOf(const HullInstance& inst, double t) {
  HullFrame frame;
  std::vector<RenderObject> objects;
  HullLight light;
  inst.buildFrame(Mat4{}, t, light, frame, objects);
  const Camera cam = lookAtCamera({0, 0.8f, 2.4f}, {0, 0, 0}, {0, 1, 0}, 40.0f, 64, 64);
  return renderCpu(objects, cam, {}, nullptr, {}).pixels;
}

TEST(HullScript, ReplayIsDeterministicPerSeed) {
  auto asset = sphereAsset("HullScript.Replay", 1500);
  const HullScript script = parseHullScript(kBattle, "battle.json");
  auto play = [&](uint32_t seed, std::initializer_list<double> times) {
    DestructionOptions o;
    o.seed = seed;
    auto inst = std::make_shared<HullInstance>(asset, o);
    HullScriptPlayer player(script);
    for (double t : times) player.advance(*inst, t);
    return inst;
  };
  const auto a = play(7, {0.2, 0.65, 0.95, 1.15}), b = play(7, {1.15}), c = play(8, {1.15}),
             back = play(7, {1.7, 0.3, 1.15});
  const auto& sa = a->destruction().slots();
  ASSERT_EQ(sa.size(), b->destruction().slots().size());
  EXPECT_EQ(std::memcmp(sa.data(), b->destruction().slots().data(), sa.size() * sizeof(HullSlot)), 0)
      << "stepped vs one jump";
  EXPECT_EQ(std::memcmp(sa.data(), back->destruction().slots().data(), sa.size() * sizeof(HullSlot)), 0)
      << "replayed after going back";
  EXPECT_NE(std::memcmp(sa.data(), c->destruction().slots().data(), sa.size() * sizeof(HullSlot)), 0)
      << "another seed";
  // The images: identical for one seed, different for another.
  const std::vector<float> ia = imageOf(*a, 1.15), ib = imageOf(*b, 1.15), ic = imageOf(*c, 1.15);
  EXPECT_TRUE(ia == ib) << "one seed, two images";
  EXPECT_FALSE(ia == ic) << "another seed, the same image";
  // After the heal, the implode and the scatter: stepped through every event and in one jump, the same.
  const auto late_stepped = play(7, {0.2, 0.65, 0.95, 1.15, 1.5, 1.85, 2.1, 2.5, 3.6}),
             late_jump = play(7, {3.6});
  EXPECT_EQ(std::memcmp(late_stepped->destruction().slots().data(), late_jump->destruction().slots().data(),
                        sa.size() * sizeof(HullSlot)),
            0);
  EXPECT_TRUE(imageOf(*late_stepped, 2.5) == imageOf(*late_jump, 2.5));
  // Healed by the end: every hull slot back at its skin.
  const auto healed = play(7, {3.5});
  size_t deep = 0;
  for (size_t i = 0; i < healed->destruction().hullSlots(); ++i)
    deep += (healed->destruction().slots()[i].flags & SF_HULL_LEVEL_MASK) != 0;
  EXPECT_EQ(deep, 0u);
}

// Renders one hull object (CPU) at `t` of the script over a backdrop; returns the image.
ImageRGBA renderHull(const std::shared_ptr<HullAsset>& asset, const std::shared_ptr<HullInstance>& inst,
                     const std::shared_ptr<HullScriptPlayer>& player, double t, Vec3 backdrop) {
  Scene scene;
  SceneObject o;
  o.cloud = std::make_shared<GaussianCloud>(asset->rest);
  auto h = std::make_shared<HullObject>(asset);
  h->live = inst;
  h->script = player;
  o.kind = h;
  scene.objects.push_back(o);
  scene.light.enabled = false;
  SceneFrame frame;
  const Camera cam = lookAtCamera({0, 0, 2.6f}, {0, 0, 0}, {0, 1, 0}, 40.0f, 96, 96);
  poseScene(scene, t, frame, false, &cam);
  RenderSettings rs;
  rs.background = backdrop;
  return renderCpu(frame.objects, cam, rs, nullptr, frame.meshes);
}

TEST(HullDestruction, HolesNeverShowTheBackdrop) {
  auto asset = sphereAsset("HullDestruction.Holes", 4000);
  const Vec3 magenta{1, 0, 1};
  const HullScript script = parseHullScript(R"({"events": [
    {"time": 0.1, "hit": "shot", "direction": [0, 0, -1], "damage": 80, "weapon": "cannon"},
    {"time": 0.2, "hit": "shot", "direction": [0, 0, -1], "damage": 80, "weapon": "cannon"},
    {"time": 0.3, "hit": "blast", "direction": [0, 0, -1], "damage": 80},
    {"time": 0.4, "hit": "pierce", "direction": [0, 0, -1], "damage": 60, "weapon": "railgun"}]})",
                                            "holes.json");
  auto inst0 = std::make_shared<HullInstance>(asset);
  const ImageRGBA before = renderHull(asset, inst0, nullptr, 0, magenta);
  auto inst = std::make_shared<HullInstance>(asset);
  auto player = std::make_shared<HullScriptPlayer>(script);
  // Late enough for the debris and bodies to be gone, so only the hull covers its silhouette.
  const ImageRGBA after = renderHull(asset, inst, player, 6.0, magenta);
  // Coverage is alpha = 1 - transmittance: a hole would let the backdrop through (alpha drops) and tint
  // the pixel towards magenta.
  size_t inside = 0, shows = 0, changed = 0;
  for (size_t p = 0; p < before.pixels.size(); p += 4) {
    if (before.pixels[p + 3] < 0.995f) continue;  // outside the silhouette (or on its soft rim)
    ++inside;
    shows += after.pixels[p + 3] < 0.95f;
    changed += std::abs(after.pixels[p] - before.pixels[p]) > 0.05f;
  }
  EXPECT_GT(inside, 1000u);
  EXPECT_GT(changed, 20u) << "the hits left no visible crater";
  EXPECT_EQ(shows, 0u) << "pixels of the silhouette show the backdrop through a hole";
}

TEST(HullDestruction, SinkSlotsNeverMoveUnderDestruction) {
  auto ctx_probe = hullContext();
  if (!ctx_probe)
    SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  ctx_probe.reset();
  gpu::ContextOptions co;
  co.validation = true;
  VulkanRenderer vk(co);
  auto asset = sphereAsset("HullDestruction.Slots", 2000);
  auto inst = std::make_shared<HullInstance>(asset);
  attachHullGpu(std::make_shared<HullPass>(vk.context()), *inst);
  auto player = std::make_shared<HullScriptPlayer>(parseHullScript(kBattle, "battle.json"));
  const GaussianCloud other = test::randomCloud(300, 0, 4);  // a second object after the hull
  Scene scene;
  SceneObject o;
  o.cloud = std::make_shared<GaussianCloud>(asset->rest);
  auto h = std::make_shared<HullObject>(asset);
  h->live = inst;
  h->script = player;
  o.kind = h;
  scene.objects.push_back(o);
  const Camera cam = lookAtCamera({0, 0, 2.6f}, {0, 0, 0}, {0, 1, 0}, 40.0f, 64, 64);
  SceneFrame frame;
  // Every slot through the pass: nothing is uploaded after the first frame. The live core in the mesh: the
  // baked shell of the untouched chunks (a dynamic object after the hull's, one row per shell row, lit on the
  // host) is uploaded every frame, as baked mode's shell is; the ranges stay put either way.
  for (LiveCore core : {LiveCore::kSorted, LiveCore::kMesh}) {
    h->live_core = core;
    std::vector<uint64_t> first;
    for (double t : {0.0, 0.65, 1.15, 2.3}) {
      poseScene(scene, t, frame, true, &cam);
      std::vector<RenderObject> objects = frame.objects;
      objects.push_back({&other, Mat4{}});
      VulkanFrameStats st;
      vk.render(objects, cam, {}, &st, frame.meshes);
      if (first.empty()) first = st.first_slots;
      EXPECT_EQ(st.first_slots, first) << liveCoreName(core) << ", t = " << t;
      if (t > 0) {
        EXPECT_EQ(st.uploaded_slots, core == LiveCore::kSorted ? 0u : asset->hull.shell.size())
            << liveCoreName(core) << ", t = " << t << ": uploaded after the first frame";
      }
    }
  }
  EXPECT_EQ(vk.context().validationErrors(), 0u) << vk.context().validationReport();
}

TEST(HullScene, LiveHullKeysFromSceneJson) {
  const std::string dir = test::tempDir("HullScene.Live");
  saveSpl2(sphereHull(600), dir + "/h.spl2");
  {
    std::ofstream f(dir + "/s.json");
    f << R"({"seed": 9, "events": [{"time": 0.5, "hit": "shot"}]})";
  }
  const Scene a = parseSceneJson(
      R"({"objects": [{"hull": "h.spl2", "effects": {"charge": 0.5, "parts": [{"part": 1, "angle": 30}]}},
    {"hull": "h.spl2", "script": "s.json"}, {"hull": "h.spl2", "script": "s.json", "seed": 4}, {"hull": "h.spl2"}]})",
      dir + "/scene.json");
  ASSERT_EQ(a.objects.size(), 4u);
  const auto hullOf = [&](size_t i) { return a.objects[i].as<HullObject>(); };
  ASSERT_TRUE(hullOf(0) && hullOf(1) && hullOf(2) && hullOf(3));
  ASSERT_TRUE(hullOf(0)->live);
  EXPECT_FLOAT_EQ(hullOf(0)->live->effects.charge, 0.5f);
  EXPECT_EQ(hullOf(0)->live->effects.parts.size(), 2u);
  EXPECT_FALSE(hullOf(0)->script);
  ASSERT_TRUE(hullOf(1)->script);
  EXPECT_FALSE(hullOf(3)->live);
  // Seeds: the script's (9) unless the object gives one (4): the same hit lands differently.
  SceneFrame frame;
  const Camera cam = lookAtCamera({0, 0, 2.6f}, {0, 0, 0}, {0, 1, 0}, 40.0f, 32, 32);
  poseScene(a, 1.0, frame, false, &cam);
  const auto& s1 = hullOf(1)->live->destruction().slots();
  const auto& s2 = hullOf(2)->live->destruction().slots();
  EXPECT_NE(std::memcmp(s1.data(), s2.data(), s1.size() * sizeof(HullSlot)), 0);
  // Errors name the JSON path, even without strict loading.
  auto err = [&](const std::string& text) {
    return test::errorOf([&] { parseSceneJson(text, dir + "/scene.json"); });
  };
  EXPECT_NE(err(R"({"objects": [{"hull": "h.spl2", "effects": {"charj": 1}}]})")
                .find("objects[0].effects.charj: unexpected key"),
            std::string::npos);
  EXPECT_NE(err(R"({"objects": [{"hull": "h.spl2", "seed": -1}]})").find("objects[0].seed"),
            std::string::npos);
  EXPECT_NE(err(R"({"objects": [{"file": "h.spl2", "effects": {}}]})").find("applies to hull objects only"),
            std::string::npos);
  const Scene bad = parseSceneJson(R"({"objects": [{"hull": "h.spl2", "script": "../outside.json"}]})",
                                   dir + "/scene.json");
  ASSERT_FALSE(bad.warnings.empty());
  EXPECT_NE(bad.warnings[0].find("confined"), std::string::npos) << bad.warnings[0];
}

TEST(HullCli, PlayScriptToFramesAndMp4) {
  const std::string dir = test::tempDir("HullCli.Play");
  saveSpl2(sphereHull(1200), dir + "/h.spl2");
  {
    std::ofstream f(dir + "/battle.json");
    f << kBattle;
  }
  std::string out;
  ASSERT_EQ(test::runCli("hull play " + dir + "/h.spl2 --script " + dir +
                             "/battle.json --backend cpu --fps 4 --duration 1 --width 48 --height 40 -o " +
                             dir + "/f/%03d.png",
                         &out),
            0)
      << out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/f/000.png")) << out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/f/003.png")) << out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/f/004.png")) << out;
  EXPECT_NE(out.find("playing"), std::string::npos) << out;
  ASSERT_EQ(test::runCli("hull play " + dir + "/h.spl2 --script " + dir +
                             "/battle.json --seed 5 --fps 5 --width 48 --height 40 -o " + dir + "/b.mp4",
                         &out),
            0)
      << out;
  EXPECT_GT(std::filesystem::file_size(dir + "/b.mp4"), 0u);
  EXPECT_EQ(test::runCli(
                "hull play " + dir + "/h.spl2 --script " + dir + "/missing.json -o " + dir + "/x.mp4", &out),
            1);
  EXPECT_NE(out.find("missing.json"), std::string::npos) << out;
}

// `render scene.json --time T` plays a hull object's script to T (the frame's one scene time): the image is
// the one of a hull whose script player jumped to T, drawn directly (HullInstance::buildFrame, renderCpu),
// and differs from the hull before the hits (0.55 s: assembled, not yet shot).
TEST(HullCli, RenderSceneJsonAtTimePlaysTheScript) {
  const std::string dir = test::tempDir("HullCli.RenderTime");
  saveSpl2(sphereHull(1500), dir + "/h.spl2");
  std::ofstream(dir + "/battle.json") << kBattle;
  std::ofstream(dir + "/scene.json")
      << R"({"objects": [{"hull": "h.spl2", "script": "battle.json", "seed": 7}]})";
  const Camera cam = lookAtCamera({0, 0.8f, 2.4f}, {0, 0, 0}, {0, 1, 0}, 40.0f, 64, 64);
  std::ofstream(dir + "/cam.json")
      << R"({"eye": [0, 0.8, 2.4], "target": [0, 0, 0], "up": [0, 1, 0], "fov_y_deg": 40, "width": 64, "height": 64})";
  std::string out;
  const auto renderAt = [&](const char* time) {
    EXPECT_EQ(
        test::runCli("render " + dir + "/scene.json --backend cpu --camera " + dir + "/cam.json --time " +
                         time + " -o " + dir + "/h.png --save-float " + dir + "/h.npy",
                     &out),
        0)
        << out;
    return readNpy(dir + "/h.npy");
  };
  const ImageRGBA at = renderAt("1.15"), start = renderAt("0.55");
  auto asset = HullAsset::load(dir + "/h.spl2");
  DestructionOptions o;
  o.seed = 7;
  HullInstance inst(asset, o);
  HullScriptPlayer player(loadHullScript(dir + "/battle.json"));
  player.advance(inst, 1.15);
  HullFrame frame;
  std::vector<RenderObject> objects;
  inst.buildFrame(Mat4{}, 1.15, HullLight{}, frame, objects);  // every slot sorted, as the scene's default
  ImageRGBA ref = renderCpu(objects, cam, {}, nullptr, {});
  // A hit within its flash outlines the hull (hull/outline.h): the hull alone over black is its own mask.
  if (const auto style = outlineAt({}, &player.script(), 1.15)) applyOutline(ref, coverageMask(ref), *style);
  const double psnr = compareImages(at, ref).psnr, psnr0 = compareImages(start, ref).psnr;
  std::printf("render --time 1.15 vs the script played to 1.15: %.2f dB; at 0.55: %.2f dB\n", psnr, psnr0);
  EXPECT_GE(psnr, 90.0);
  EXPECT_LT(psnr0, psnr - 10.0);
}

// Hull-only scenes are framed tightly (scene/scene.h autoCameraOverClip), checked from the camera's own
// matrices: the box of the splats as drawn at every time of the clip, taken along the camera's heading
// (across the view, up, towards the camera), projects inside the image with kHullFrameMargin free on every
// side, centred and touching the margin on one axis; the splats fill at least 60% of the height; the view is
// 41 degrees down. The script moves the whole hull (every part offset and held): framed at the start alone,
// the moved hull would leave the margin.
TEST(HullFraming, AutoCameraFitsTheHullOverTheClip) {
  const std::string dir = test::tempDir("HullFraming.Fit");
  Spl2Hull h = sphereHull(1500);  // a figure's proportions: tall, thin along x, wide along z
  for (Spl2Block* b : {&h.core, &h.shell})
    for (Vec3& p : b->pos) p = {p.x * 0.3f, p.y * 1.3f, p.z};
  saveSpl2(h, dir + "/h.spl2");
  std::string events;
  for (int part = 0; part < 8; ++part)
    events += std::string(part ? ", " : "") +
              R"({"time": 0.5, "effect": "part_xform", "duration": 0.5, "part": )" + std::to_string(part) +
              R"(, "offset": [1.2, 0, 0], "hold": true})";
  std::ofstream(dir + "/s.json") << R"({"events": [)" + events + "]}";
  // Every slot through the pass ("liveCore": "sorted"), so that the frame's objects hold every splat drawn
  // (the framing itself, hullSceneBox, evaluates every slot whatever the live core).
  std::ofstream(dir + "/scene.json")
      << R"({"objects": [{"hull": "h.spl2", "script": "s.json", "heading": 20, "transform": {"translation": [2, 0.5, -1]}, "liveCore": "sorted"}]})";
  const Scene scene = loadSceneJson(dir + "/scene.json");
  ASSERT_TRUE(hullsOnly(scene));
  std::vector<double> times;
  for (int k = 0; k <= 10; ++k) times.push_back(0.15 * k);
  constexpr int kW = 320, kH = 180;
  const Camera cam = autoCameraOverClip(scene, kW, kH, times);
  const Camera start_only = autoCamera(scene, kW, kH, 0.0);
  // The splats as drawn (opacity above 0; off pool slots are NaN) at every time.
  std::vector<Vec3> points, moved;
  SceneFrame frame;
  for (double t : times) {
    poseScene(scene, t, frame, false, &cam);
    for (const RenderObject& o : frame.objects)
      for (size_t i = 0; i < o.positions.size(); ++i)
        if (o.cloud->opacities[i] > 0)
          (t == times.back() ? moved : points).push_back(transformPoint(o.object_to_world, o.positions[i]));
  }
  ASSERT_GT(moved.size(), 1000u);
  points.insert(points.end(), moved.begin(), moved.end());
  const Mat3 r = cam.world_to_camera.linear();
  const Vec3 forward = r.row(2), across = r.row(0), up{0, 1, 0};
  EXPECT_NEAR(forward.y, -std::sin(41.0f * std::numbers::pi_v<float> / 180.0f), 1e-4f);
  EXPECT_NEAR(across.y, 0.0f, 1e-5f);
  const Vec3 back = normalize(Vec3{-forward.x, 0, -forward.z});
  constexpr float kInf = std::numeric_limits<float>::infinity();
  Vec3 lo{kInf, kInf, kInf}, hi{-kInf, -kInf, -kInf};
  for (const Vec3& p : points) {
    const Vec3 c{dot(p, across), dot(p, up), dot(p, back)};
    for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], c[k]), hi[k] = std::max(hi[k], c[k]);
  }
  const auto project = [](const Camera& c, Vec3 p) {
    const Vec3 v = transformPoint(c.world_to_camera, p);
    EXPECT_GT(v.z, 0.2f);
    return std::array<float, 2>{c.fx * v.x / v.z + c.cx, c.fy * v.y / v.z + c.cy};
  };
  float u0 = kInf, u1 = -kInf, v0 = kInf, v1 = -kInf;
  for (int corner = 0; corner < 8; ++corner) {
    const Vec3 c{corner & 1 ? hi.x : lo.x, corner & 2 ? hi.y : lo.y, corner & 4 ? hi.z : lo.z};
    const auto uv = project(cam, across * c.x + up * c.y + back * c.z);
    u0 = std::min(u0, uv[0]), u1 = std::max(u1, uv[0]), v0 = std::min(v0, uv[1]), v1 = std::max(v1, uv[1]);
  }
  const float mu = kHullFrameMargin * kW, mv = kHullFrameMargin * kH;
  std::printf("hull box over the clip: u %.1f..%.1f of %d, v %.1f..%.1f of %d (margins %.1f, %.1f px)\n", u0,
              u1, kW, v0, v1, kH, mu, mv);
  EXPECT_GE(u0, mu - 0.05f);
  EXPECT_LE(u1, kW - mu + 0.05f);
  EXPECT_GE(v0, mv - 0.05f);
  EXPECT_LE(v1, kH - mv + 0.05f);
  EXPECT_NEAR(u0 - mu, kW - mu - u1, 0.1f) << "centred across";
  EXPECT_NEAR(v0 - mv, kH - mv - v1, 0.1f) << "centred up and down";
  EXPECT_TRUE(std::abs(u0 - mu) < 0.1f || std::abs(v0 - mv) < 0.1f) << "not as close as the margin allows";
  float top = kInf, bottom = -kInf;
  for (const Vec3& p : points) {
    const auto uv = project(cam, p);
    top = std::min(top, uv[1]), bottom = std::max(bottom, uv[1]);
  }
  std::printf("splat centres fill %.0f%% of the height\n", 100.0 * (bottom - top) / kH);
  EXPECT_GE((bottom - top) / kH, 0.6f);
  bool escapes = false;  // the moved hull, framed at the start alone
  for (const Vec3& p : moved) {
    const auto uv = project(start_only, p);
    escapes |= uv[0] < mu || uv[0] > kW - mu || uv[1] < mv || uv[1] > kH - mv;
  }
  EXPECT_TRUE(escapes) << "the script does not move the hull out of the start's framing";
}

// An assemble re-forms the whole hull: a held implode (and scatter) before it ends where it starts.
TEST(HullScript, AssembleEndsAHeldImplode) {
  auto asset = sphereAsset("HullScript.Assemble", 600);
  HullInstance inst(asset);
  HullScriptPlayer player(parseHullScript(R"({"events": [{"time": 0, "effect": "implode", "duration": 0.2},
    {"time": 0.3, "effect": "scatter", "duration": 0.2}, {"time": 1, "effect": "assemble", "duration": 0.5}]})",
                                          "s.json"));
  player.advance(inst, 0.8);
  EXPECT_FLOAT_EQ(inst.effects.implode, 1.0f);
  EXPECT_FLOAT_EQ(inst.effects.scatter, 1.0f);
  player.advance(inst, 1.25);
  EXPECT_FLOAT_EQ(inst.effects.implode, 0.0f);
  EXPECT_FLOAT_EQ(inst.effects.scatter, 0.5f);
  player.advance(inst, 2.0);
  EXPECT_FALSE(inst.effects.any());
}

// The README's hull demo (cesium_man baked at --budget 6000, scripts/hull_battle.json): the first frame shows
// the intact hull, 60% of the height or more, over the default slate backdrop (0.16, 0.19, 0.24 in every
// corner); `--bg 0,0,0` still gives black.
TEST(HullCli, PlayReadmeDemoShowsTheHullOnTheBackdrop) {
  SF_REQUIRE_ASSET(model, "gltf/cesium_man.gltf");
  const std::string dir = test::tempDir("HullCli.ReadmeDemo");
  const std::string script = std::string(SPLATFORGE_SOURCE_DIR) + "/scripts/hull_battle.json";
  std::string out;
  ASSERT_EQ(test::runCli("hull bake " + model + " --budget 6000 -o " + dir + "/man.spl2", &out), 0) << out;
  // --fps 0.1: one frame, at t = 0, of the whole clip's framing.
  const auto play = [&](const std::string& extra, const std::string& png) {
    EXPECT_EQ(test::runCli("hull play " + dir + "/man.spl2 --script " + script +
                               " --backend cpu --fps 0.1 --width 160 --height 90 " + extra + " -o " + dir +
                               "/" + png + "_%d.png",
                           &out),
              0)
        << out;
    return readPng(dir + "/" + png + "_0.png");
  };
  const ImageRGBA img = play("", "slate");
  const float slate[3] = {0.16f, 0.19f, 0.24f};
  for (const auto& [x, y] : {std::pair{0, 0}, std::pair{159, 0}, std::pair{0, 89}, std::pair{159, 89}})
    for (int k = 0; k < 3; ++k)
      EXPECT_NEAR(img.at(x, y)[k], slate[k], 0.6f / 255.0f) << "corner " << x << "," << y;
  size_t hull_pixels = 0;
  int top = img.height, bottom = -1;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      const float* p = img.at(x, y);
      if (std::abs(p[0] - slate[0]) + std::abs(p[1] - slate[1]) + std::abs(p[2] - slate[2]) > 0.05f) {
        ++hull_pixels;
        top = std::min(top, y), bottom = std::max(bottom, y);
      }
    }
  std::printf("frame 0: %zu hull pixels of %d, rows %d..%d of %d\n", hull_pixels, img.width * img.height, top,
              bottom, img.height);
  EXPECT_GT(hull_pixels, static_cast<size_t>(img.width * img.height / 20)) << "frame 0 shows no hull";
  EXPECT_GE(bottom - top + 1, img.height * 6 / 10);
  const ImageRGBA black = play("--bg 0,0,0", "black");
  for (int k = 0; k < 3; ++k) EXPECT_EQ(black.at(0, 0)[k], 0.0f);
}

// `hull bench` on the Vulkan frame: the passes, the back-to-back submissions, and the tile spread, whose
// pairs (the sum of the frame's tile ranges, read back) equal the frame's own key count.
TEST(HullCli, BenchReportsPassesSubmissionsAndTileSpread) {
  if (!gpu::vulkanAvailable())
    SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  const std::string dir = test::tempDir("HullCli.Bench");
  saveSpl2(sphereHull(800), dir + "/h.spl2");
  std::string out;
  ASSERT_EQ(test::runCli("hull bench " + dir +
                             "/h.spl2 --hulls 3 --frames 3 --width 96 --height 64 --back-to-back 2 "
                             "--submissions 3 --tile-stats --json-out " +
                             dir + "/bench.json",
                         &out),
            0)
      << out;
  // The JSON holds what the lines say (as every benchmark's --json-out).
  const std::vector<uint8_t> bytes = readFile(dir + "/bench.json");
  const nlohmann::json j = parseJsonText(std::string(bytes.begin(), bytes.end()), dir + "/bench.json");
  EXPECT_EQ(j.at("hulls").get<int>(), 3);
  EXPECT_GT(j.at("median_ms").at("gpu_frame_without_readback").get<double>(), 0.0);
  EXPECT_EQ(j.at("back_to_back").at("submissions").get<int>(), 3);
  EXPECT_NE(out.find("tile pairs)"), std::string::npos) << out;
  EXPECT_NE(out.find(std::to_string(j.at("tile_pairs").get<unsigned long long>()) + " tile pairs)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("hulls 3 "), std::string::npos) << out;
  EXPECT_NE(out.find("back to back (2 frames in each of 3 submissions"), std::string::npos) << out;
  EXPECT_NE(out.find("below: the last 2"), std::string::npos) << out;
  const size_t keys_at = out.find(" tile pairs)");
  const size_t stats_at = out.find("tile pairs: ");
  ASSERT_NE(keys_at, std::string::npos) << out;
  ASSERT_NE(stats_at, std::string::npos) << out;
  const size_t keys_from = out.rfind(", ", keys_at) + 2;
  const std::string keys = out.substr(keys_from, keys_at - keys_from);
  // "tile pairs: T tiles, O with pairs, P pairs (...)": 96x64 is 6x4 tiles.
  unsigned tiles = 0, occupied = 0;
  unsigned long long pairs = 0;
  ASSERT_EQ(std::sscanf(out.c_str() + stats_at, "tile pairs: %u tiles, %u with pairs, %llu pairs", &tiles,
                        &occupied, &pairs),
            3)
      << out;
  EXPECT_EQ(tiles, 24u);
  EXPECT_GT(occupied, 0u);
  EXPECT_EQ(std::to_string(pairs), keys) << out;
  EXPECT_EQ(
      test::runCli(
          "hull bench " + dir + "/h.spl2 --hulls 1 --frames 2 --width 32 --height 32 --submissions 2", &out),
      2);  // a usage error
  EXPECT_NE(out.find("--back-to-back"), std::string::npos) << out;
}

// `--hull-lod` on render and `hull play`, and `hull bench --lod-sweep`: the curve's K values, its JSON and
// its PNG; bad values are usage errors naming the option.
TEST(HullCli, HullLodOptionsAndBenchSweep) {
  const std::string dir = test::tempDir("HullCli.Lod");
  saveSpl2(sphereHull(800), dir + "/h.spl2");
  std::string out;
  ASSERT_EQ(test::runCli("render " + dir + "/h.spl2 --backend cpu --width 48 --height 48 --hull-lod 200 -o " +
                             dir + "/k.png",
                         &out),
            0)
      << out;
  ASSERT_EQ(
      test::runCli("render " + dir + "/h.spl2 --backend cpu --width 48 --height 48 --hull-lod auto -o " +
                       dir + "/auto.png",
                   &out),
      0)
      << out;
  EXPECT_EQ(test::runCli("render " + dir + "/h.spl2 --backend cpu --width 48 --height 48 --hull-lod 0 -o " +
                             dir + "/x.png",
                         &out),
            2);
  EXPECT_NE(out.find("--hull-lod"), std::string::npos) << out;
  std::ofstream(dir + "/s.json")
      << R"({"events": [{"time": 0.0, "lod": 100}, {"time": 0.05, "hit": "shot"}], "duration": 0.1})";
  ASSERT_EQ(test::runCli("hull play " + dir + "/h.spl2 --script " + dir +
                             "/s.json --backend cpu --fps 20 --width 48 --height 48 --hull-lod auto -o " +
                             dir + "/play/%02d.png",
                         &out),
            0)
      << out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/play/01.png"));
  ASSERT_EQ(test::runCli("render --help", &out), 0);
  EXPECT_NE(out.find("--hull-lod"), std::string::npos);
  ASSERT_EQ(test::runCli("hull bench --help", &out), 0);
  EXPECT_NE(out.find("--lod-sweep"), std::string::npos);
  EXPECT_EQ(test::runCli("hull bench " + dir + "/h.spl2 --plot " + dir + "/p.png", &out),
            2);  // --plot needs --lod-sweep
  EXPECT_NE(out.find("--lod-sweep"), std::string::npos) << out;
  if (!gpu::vulkanAvailable())
    SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  for (const char* mode : {"live", "baked"}) {
    ASSERT_EQ(test::runCli("hull bench " + dir +
                               "/h.spl2 --hulls 2 --frames 3 --width 64 --height 48 --hull-mode " +
                               std::string(mode) + " --lod-sweep 3 --plot " + dir + "/sweep.png --json-out " +
                               dir + "/sweep.json",
                           &out),
              0)
        << out;
    const std::vector<uint8_t> bytes = readFile(dir + "/sweep.json");
    const nlohmann::json j = parseJsonText(std::string(bytes.begin(), bytes.end()), dir + "/sweep.json");
    EXPECT_EQ(j.at("mode").get<std::string>(), mode);
    const nlohmann::json& sweep = j.at("lod_sweep");
    ASSERT_EQ(sweep.size(), 3u);
    const uint32_t want[3] = {267, 534, 800};  // ceil(800 j / 3)
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(sweep[i].at("k").get<uint32_t>(), want[i]);
      EXPECT_GT(sweep[i].at("gpu_frame_without_readback").get<double>(), 0.0);
    }
    EXPECT_LE(sweep[0].at("visible").get<size_t>(), sweep[2].at("visible").get<size_t>());
    const ImageRGBA plot = readPng(dir + "/sweep.png");
    EXPECT_EQ(plot.width, 900);
    EXPECT_NE(out.find("lod sweep (3 budgets"), std::string::npos) << out;
  }
}

// ---- Guns: script `fire`, muzzle flash, barrel heat, a gun silenced by damage to its part
// ------------------

// A sphere hull with a meta sidecar naming two barrel tips (gun 0 on the +x+y+z octant, part 7; gun 1 on +x,
// part 3 or 1) and an engine point, which is no gun.
std::shared_ptr<HullAsset> gunAsset(const std::string& name, size_t n) {
  const std::string dir = test::tempDir(name);
  saveSpl2(sphereHull(n), dir + "/sphere.spl2");
  std::ofstream(dir + "/sphere.meta.json") << R"({"belt_deg": [32, 50],
    "points": {"turret_b_tip": [0.62, 0.05, -0.05], "turret_a_tip": [0.05, 0.05, 0.62], "engine_l": [0, -0.6, -0.1]},
    "axes": {"turret_b_tip": [2, 0, 0], "turret_a_tip": [0, 0, 1], "engine_l": [0, 0, 1]},
    "parts": [{"part": 0, "name": "hull"}, {"part": 2, "name": "Engine_Pod"}]})";
  return HullAsset::load(dir + "/sphere.spl2");
}
const Vec3 kTipA{0.05f, 0.05f, 0.62f}, kTipB{0.62f, 0.05f, -0.05f};

TEST(HullGuns, MetaSidecarNamesTheBarrelTips) {
  auto asset = gunAsset("HullGuns.Meta", 800);
  ASSERT_EQ(asset->guns.size(), 2u);  // the engine point is no gun; name order
  EXPECT_EQ(asset->guns[0].name, "turret_a_tip");
  EXPECT_EQ(asset->guns[1].name, "turret_b_tip");
  EXPECT_EQ(length(asset->guns[0].tip - kTipA), 0.0f);
  EXPECT_NEAR(length(asset->guns[1].axis - Vec3{1, 0, 0}), 0.0f, 1e-7f);
  ASSERT_EQ(asset->engines.nozzles.size(), 1u);  // the engine point, and the part named *engine*
  EXPECT_EQ(asset->engines.nozzles[0].name, "engine_l");
  EXPECT_EQ(asset->engines.part_mask, 4u);
  // Without "tip" / "muzzle" names, the "barrel" / "gun" points are the guns.
  const std::string dir = test::tempDir("HullGuns.MetaErrors");
  std::ofstream(dir + "/a.meta.json")
      << R"({"belt_deg": [32, 50], "points": {"gun_r": [0, 0, 1], "barrel_l": [0, 0, 2], "engine": [0, 0, 3]}})";
  const auto guns = readHullMetaGuns(dir + "/a.meta.json");
  ASSERT_EQ(guns.size(), 2u);
  EXPECT_EQ(guns[0].name, "barrel_l");
  std::ofstream(dir + "/b.meta.json") << R"({"belt_deg": [32, 50], "points": {"muzzle": [0, 0]}})";
  EXPECT_NE(test::errorOf([&] {
              readHullMetaGuns(dir + "/b.meta.json");
            }).find("b.meta.json: points.muzzle: expected 3 numbers"),
            std::string::npos);
  std::ofstream(dir + "/c.meta.json")
      << R"({"belt_deg": [32, 50], "points": {"muzzle": [0, 0, 1]}, "axes": {"muzzle": [0, 0, 0]}})";
  EXPECT_NE(test::errorOf([&] {
              readHullMetaGuns(dir + "/c.meta.json");
            }).find("c.meta.json: axes.muzzle: expected a non-zero direction"),
            std::string::npos);
}

// `fire`: the cel light's point flash at the gun's tip placed by the hull's object-to-world, strength
// s (1 - age / 0.1)^2 for 0.1 s, and on the frame's colours the flash's closed form.
TEST(HullScript, FireFlashesAtTheBarrelTip) {
  auto asset = gunAsset("HullScript.Fire", 1500);
  HullInstance inst(asset);
  HullScriptPlayer player(parseHullScript(R"({"events": [{"time": 1.0, "fire": 1, "strength": 2},
                                                          {"time": 2.0, "fire": "turret_a_tip"}]})",
                                          "s.json"));
  player.advance(inst, 0.99);
  EXPECT_EQ(inst.effects.muzzle_flash, 0.0f);
  player.advance(inst, 1.03);
  EXPECT_NEAR(inst.effects.muzzle_flash, 2.0 * 0.7 * 0.7, 1e-5);
  EXPECT_EQ(length(inst.effects.muzzle_point - kTipB), 0.0f);
  // Object to world: a quarter turn about y ((x, y, z) -> (z, y, -x)), scale 1.5, a translation.
  Mat3 lin;
  lin.m[0][0] = 0, lin.m[0][1] = 0, lin.m[0][2] = 1.5f;
  lin.m[1][0] = 0, lin.m[1][1] = 1.5f, lin.m[1][2] = 0;
  lin.m[2][0] = -1.5f, lin.m[2][1] = 0, lin.m[2][2] = 0;
  const Vec3 shift{0.2f, -0.1f, 3.0f};
  const Mat4 to_world = Mat4::fromLinearTranslation(lin, shift);
  HullLight scene_light;
  scene_light.flash_strength = 0.3f, scene_light.flash_position = {9, 9, 9};  // the scene's flash gives way
  const HullLight l = muzzleLight(scene_light, inst.effects, to_world);
  const Vec3 world_tip = Vec3{1.5f * kTipB.z, 1.5f * kTipB.y, -1.5f * kTipB.x} + shift;
  EXPECT_NEAR(length(l.flash_position - world_tip), 0.0f, 1e-6f);
  EXPECT_NEAR(l.flash_strength, 0.98f, 1e-5f);
  EXPECT_EQ(length(l.flash_color - inst.effects.muzzle_color), 0.0f);
  // The frame's colours: each lit hull slot gains flash_color * strength * band / (1 + 0.15 d^2) (d in world
  // units).
  const auto& d = inst.destruction();
  HullFrame frame;
  std::vector<RenderObject> objects;
  inst.buildFrame(to_world, 1.03, scene_light, frame, objects);
  HullEffects no_flash = inst.effects;
  no_flash.muzzle_flash = 0;
  HullLight dark = scene_light;
  dark.flash_strength = 0;
  HullOutput off;
  evaluateHull(
      packHullParams(no_flash, dark, to_world, inst.centre(), 1.03, static_cast<uint32_t>(d.slots().size())),
      d.rest(), d.slots(), d.bodies(), off);
  size_t checked = 0;  // slots the flash reaches, unclamped (the tip sits just off the surface: a small cap)
  for (size_t i = 0; i < d.hullSlots(); ++i) {
    const HullRest& r = d.rest()[i];
    const Vec3 pos = vec3Of(r.position), n = vec3Of(r.normal);
    const Vec3 fd = kTipB - pos;
    const float ndl = std::clamp(dot(n, normalize(fd)), 0.0f, 1.0f);
    const float band = ndl > 0.5f ? 1.0f : (ndl > 0.2f ? 0.45f : 0.0f);
    const Vec3 expect =
        off.colors[i] + inst.effects.muzzle_color * (0.98f * band / (1.0f + 0.15f * 2.25f * dot(fd, fd)));
    for (int k = 0; k < 3; ++k) {
      if (expect[k] >= 0.999f) continue;  // clamped
      ASSERT_NEAR(frame.live.colors[i][k], expect[k], 2e-4f) << "slot " << i;
      checked += band > 0;
    }
  }
  EXPECT_GE(checked, 10u);
  player.advance(inst, 1.1);  // over
  EXPECT_EQ(inst.effects.muzzle_flash, 0.0f);
  EXPECT_EQ(muzzleLight(scene_light, inst.effects, to_world).flash_strength, 0.3f);
  player.advance(inst, 2.05);  // by name, default strength 1.5
  EXPECT_NEAR(inst.effects.muzzle_flash, 1.5 * 0.5 * 0.5, 1e-5);
  EXPECT_EQ(length(inst.effects.muzzle_point - kTipA), 0.0f);

  // Refusals name the file, the JSON path and the reason.
  auto err = [](const std::string& text) { return test::errorOf([&] { parseHullScript(text, "s.json"); }); };
  EXPECT_NE(
      err(R"({"events": [{"time": 1, "fire": 8}]})").find("s.json: events[0].fire: expected a gun id 0..7"),
      std::string::npos);
  EXPECT_NE(err(R"({"events": [{"time": 1, "fire": 0.5}]})").find("events[0].fire: expected a gun id"),
            std::string::npos);
  EXPECT_NE(err(R"({"events": [{"time": 1, "fire": 0, "gun": 1}]})")
                .find("events[0].gun: unexpected key for a fire"),
            std::string::npos);
  EXPECT_NE(err(R"({"events": [{"time": 1, "fire": 0, "heat": -1}]})").find("events[0].heat"),
            std::string::npos);
  const HullScript missing =
      parseHullScript(R"({"events": [{"time": 0, "heal": 1}, {"time": 1, "fire": 2}]})", "s.json");
  EXPECT_NE(test::errorOf([&] {
              checkHullScript(missing, *asset);
            }).find("s.json: events[1].fire: no gun 2 (the hull's guns: 0 turret_a_tip, 1 turret_b_tip)"),
            std::string::npos);
  const HullScript named = parseHullScript(R"({"events": [{"time": 1, "fire": "turret_c_tip"}]})", "s.json");
  HullScriptPlayer bad(named);
  HullInstance fresh(asset);
  EXPECT_NE(test::errorOf([&] {
              bad.advance(fresh, 1.5);
            }).find("s.json: events[0].fire: no gun named 'turret_c_tip'"),
            std::string::npos);
  // A hull without guns takes a "point".
  auto plain = sphereAsset("HullScript.FirePoint", 800);
  EXPECT_NE(test::errorOf([&] { checkHullScript(missing, *plain); }).find("has no guns"), std::string::npos);
  HullInstance pi(plain);
  HullScriptPlayer pp(
      parseHullScript(R"({"events": [{"time": 0, "fire": 3, "point": [0, 0.7, 0]}]})", "p.json"));
  pp.advance(pi, 0.0);
  EXPECT_NEAR(pi.effects.muzzle_flash, 1.5f, 1e-6f);
  EXPECT_EQ(length(pi.effects.muzzle_point - Vec3{0, 0.7f, 0}), 0.0f);
}

// Barrel heat: heat_g(t) = sum over g's shots of heat_k exp(-(t - t_k) / 2 s); hull slots within the radius
// of a tip glow by blackBody(1000 + 5500 h) * 1.5 h (1 - d / radius)^2, h = min(heat, 1); farther ones
// unchanged.
TEST(HullScript, BarrelHeatIsTheSumOfCoolingShots) {
  auto asset = gunAsset("HullScript.Heat", 2000);
  HullInstance inst(asset);
  HullScriptPlayer player(parseHullScript(R"({"events": [
    {"time": 0.2, "fire": 0}, {"time": 0.5, "fire": 0}, {"time": 0.6, "fire": 0, "heat": 0.9}, {"time": 0.7, "fire": 1}]})",
                                          "h.json"));
  player.advance(inst, 1.5);
  const double heat0 = 0.2 * std::exp(-1.3 / 2.0) + 0.2 * std::exp(-1.0 / 2.0) + 0.9 * std::exp(-0.9 / 2.0);
  const double heat1 = 0.2 * std::exp(-0.8 / 2.0);
  ASSERT_EQ(inst.effects.barrel_heat.size(), 2u);
  EXPECT_NEAR(inst.effects.barrel_heat[0].heat, heat0, 1e-6);
  EXPECT_NEAR(inst.effects.barrel_heat[1].heat, heat1, 1e-6);
  EXPECT_EQ(length(inst.effects.barrel_heat[0].tip - kTipA), 0.0f);
  EXPECT_EQ(length(inst.effects.barrel_heat[1].tip - kTipB), 0.0f);
  // The glow, on raw colours (light off): per slot against the closed form.
  const auto& d = inst.destruction();
  HullLight off_light;
  off_light.enabled = false;
  HullEffects cold = inst.effects;
  cold.barrel_heat.clear();
  const uint32_t count = static_cast<uint32_t>(d.slots().size());
  HullOutput hot, plain;
  evaluateHull(packHullParams(inst.effects, off_light, Mat4{}, inst.centre(), 1.5, count), d.rest(),
               d.slots(), d.bodies(), hot);
  evaluateHull(packHullParams(cold, off_light, Mat4{}, inst.centre(), 1.5, count), d.rest(), d.slots(),
               d.bodies(), plain);
  const float radius = inst.effects.heat_radius;
  size_t glowing = 0;
  for (size_t i = 0; i < d.hullSlots(); ++i) {
    const Vec3 p = vec3Of(d.rest()[i].position);
    Vec3 glow{};
    const double heats[2] = {heat0, heat1};
    const Vec3 tips[2] = {kTipA, kTipB};
    for (int g = 0; g < 2; ++g) {
      const float dist = length(p - tips[g]);
      if (dist >= radius) continue;
      const float h = std::min(static_cast<float>(heats[g]), 1.0f),
                  w = (1 - dist / radius) * (1 - dist / radius);
      glow = glow + blackBody(1000.0f + 5500.0f * h) * (1.5f * h * w);
    }
    glowing += length(glow) > 1e-3f;
    for (int k = 0; k < 3; ++k)
      ASSERT_NEAR(hot.colors[i][k], std::min(plain.colors[i][k] + glow[k], 1.0f), 1e-5f) << "slot " << i;
    if (length(glow) == 0) {
      ASSERT_EQ(length(hot.colors[i] - plain.colors[i]), 0.0f) << "slot " << i;
    }
  }
  EXPECT_GT(glowing, 5u);
  // Cooled off: no heat is left after long enough (and no pass term).
  player.advance(inst, 30.0);
  EXPECT_TRUE(inst.effects.barrel_heat.empty());
  EXPECT_EQ(
      packHullParams(inst.effects, off_light, Mat4{}, inst.centre(), 30.0, count).effects & SF_HULL_FX_HEAT,
      0u);
}

// The article's rule: once 30% of the gun's part is knocked, its fires are consumed (a kGunSilenced event, no
// flash, no heat) until a heal restores the part. A script hits the part of gun 0 (part 7, the +x+y+z octant)
// until it falls silent, firing between the hits.
TEST(HullScript, GunFallsSilentOnceItsPartIsThirtyPercentKnocked) {
  auto asset = gunAsset("HullScript.Silenced", 3000);
  std::string events;
  const int kRounds = 14;
  for (int k = 0; k < kRounds; ++k) {
    const Vec3 p = normalize(Vec3{0.25f + 0.15f * static_cast<float>(k % 3),
                                  0.25f + 0.15f * static_cast<float>((k / 3) % 3), 0.5f}) *
                   0.6f;
    events += (k ? "," : "") + std::string(R"({"time": )") + std::to_string(0.2 * k + 0.05) +
              R"(, "hit": "blast", "damage": 25, "point": [)" + std::to_string(p.x) + "," +
              std::to_string(p.y) + "," + std::to_string(p.z) + R"(], "direction": [0, 0, -1]},)";
    events += R"({"time": )" + std::to_string(0.2 * k + 0.15) + R"(, "fire": 0})";
  }
  events += R"(, {"time": 3.0, "heal": 1}, {"time": 6.0, "fire": 0})";
  HullInstance inst(asset);
  HullScriptPlayer player(parseHullScript("{\"events\": [" + events + "]}", "silence.json"));
  int fired = 0, silenced = 0;
  double heat = 0;  // closed form over the shots that fired
  const double t_end = 0.2 * (kRounds - 1) + 0.16;
  for (int k = 0; k < kRounds; ++k) {
    const double t = 0.2 * k + 0.16;
    const std::vector<HullEvent> evs = player.advance(inst, t);
    const auto& d = inst.destruction();
    const bool disabled = d.partDisabled(7);
    const size_t n_silent = static_cast<size_t>(std::count_if(
        evs.begin(), evs.end(), [](const HullEvent& e) { return e.type == HullEvent::kGunSilenced; }));
    if (disabled) {
      ++silenced;
      EXPECT_GE(d.partDamage(7), 0.3f);
      EXPECT_EQ(inst.effects.muzzle_flash, 0.0f) << "round " << k;
      ASSERT_EQ(n_silent, 1u) << "round " << k;
      const HullEvent& e = *std::find_if(
          evs.begin(), evs.end(), [](const HullEvent& x) { return x.type == HullEvent::kGunSilenced; });
      EXPECT_EQ(e.index, 0);
      EXPECT_EQ(e.slots, 7);
      EXPECT_NE(e.describe().find("gun 0 silent: fire at"), std::string::npos) << e.describe();
    } else {
      EXPECT_EQ(silenced, 0) << "a silenced gun came back without a heal (round " << k << ")";
      ++fired;
      EXPECT_LT(d.partDamage(7), 0.3f);
      EXPECT_NEAR(inst.effects.muzzle_flash, 1.5 * 0.9 * 0.9, 1e-5) << "round " << k;
      EXPECT_EQ(n_silent, 0u);
      heat += 0.2 * std::exp(-(t_end - (0.2 * k + 0.15)) / 2.0);
    }
  }
  EXPECT_GT(fired, 0);
  EXPECT_GT(silenced, 0) << "the hits never knocked 30% of part 7 (" << inst.destruction().partDamage(7)
                         << ")";
  ASSERT_EQ(inst.effects.barrel_heat.size(), 1u);
  EXPECT_NEAR(inst.effects.barrel_heat[0].heat, heat, 1e-6);  // only the shots that fired heat the barrel
  // Healed: the part is restored and the gun fires again.
  player.advance(inst, 6.01);
  EXPECT_FALSE(inst.destruction().partDisabled(7));
  EXPECT_GT(inst.effects.muzzle_flash, 0.0f);
}

// `hull play` plays `fire` from a hull's meta sidecar; a gun the hull lacks is refused before rendering,
// naming the script and the event.
TEST(HullCli, PlayFireUsesTheMetaSidecar) {
  auto asset = gunAsset("HullCli.Fire", 1200);
  const std::string dir = std::filesystem::path(asset->path).parent_path().string();
  std::ofstream(dir + "/fire.json")
      << R"({"events": [{"time": 0.1, "fire": 0}, {"time": 0.2, "fire": "turret_b_tip", "heat": 0.5}]})";
  std::ofstream(dir + "/bad.json") << R"({"events": [{"time": 0.1, "fire": 0}, {"time": 0.2, "fire": 4}]})";
  std::string out;
  ASSERT_EQ(
      test::runCli("hull play " + asset->path + " --script " + dir +
                       "/fire.json --backend cpu --fps 10 --width 48 --height 40 -o " + dir + "/f/%03d.png",
                   &out),
      0)
      << out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/f/000.png")) << out;
  EXPECT_EQ(test::runCli("hull play " + asset->path + " --script " + dir + "/bad.json --backend cpu -o " +
                             dir + "/x.mp4",
                         &out),
            1);
  EXPECT_NE(out.find("bad.json: events[1].fire: no gun 4"), std::string::npos) << out;
  // `hull info` lists the guns and engines the sidecar gives.
  ASSERT_EQ(test::runCli("hull info " + asset->path, &out), 0) << out;
  EXPECT_NE(out.find("guns (script fire ids): 0 turret_a_tip [0.050, 0.050, 0.620] 1 turret_b_tip"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("engines (script thrust): engine_l [0.000, -0.600, -0.100]; engine parts: 2"),
            std::string::npos)
      << out;
  // Blasts on gun 0's part (7) until it is disabled, then a fire: the frame prints the silenced gun.
  std::ofstream(dir + "/silence.json") << R"({"events": [
    {"time": 0.1, "hit": "blast", "damage": 60, "point": [0.25, 0.3, 0.45]},
    {"time": 0.2, "hit": "blast", "damage": 60, "point": [0.4, 0.25, 0.35]},
    {"time": 0.3, "hit": "blast", "damage": 60, "point": [0.3, 0.4, 0.3]},
    {"time": 0.4, "hit": "blast", "damage": 60, "point": [0.2, 0.2, 0.5]},
    {"time": 0.45, "fire": 0}]})";
  ASSERT_EQ(test::runCli("hull play " + asset->path + " --script " + dir +
                             "/silence.json --backend cpu --fps 2 --duration 1.1 --width 32 --height 24 -o " +
                             dir + "/s/%03d.png",
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("gun 0 silent: fire at 0.45 s consumed (part 7 disabled"), std::string::npos) << out;
}

// `thrust`: the engine parts (named *engine* in the sidecar) glow thrust_color * thrust * (0.85 + 0.15 sin
// ..), eased in over 0.15 s; ion droplets leave the nozzle at `rate` from the ignition (droplet k at t_on + k
// / rate) and fly as debris, blue and fading: colour mix([0.55, 0.85, 1], [0.1, 0.25, 0.9], a), opacity 0.85
// (1 - a).
TEST(HullScript, ThrustLightsTheEnginePartAndTrailsIons) {
  auto asset = gunAsset("HullScript.Thrust", 2000);
  const HullScript script = parseHullScript(
      R"({"events": [{"time": 0.5, "thrust": true, "rate": 30}, {"time": 1.5, "thrust": false}]})", "t.json");
  HullInstance inst(asset);
  HullScriptPlayer player(script);
  player.advance(inst, 0.55);
  EXPECT_NEAR(inst.effects.thrust, 0.05f / 0.15f, 1e-5f);
  EXPECT_EQ(inst.effects.engine_parts, 4u);
  player.advance(inst, 1.0);
  EXPECT_EQ(inst.effects.thrust, 1.0f);
  const auto& d = inst.destruction();
  auto ions = [&](const HullInstance& h) {
    std::vector<size_t> out;
    for (size_t i = h.destruction().hullSlots(); i < h.destruction().slots().size(); ++i) {
      const HullSlot& s = h.destruction().slots()[i];
      if ((s.flags & SF_HULL_FLAG_ION) &&
          ((s.flags & SF_HULL_KIND_MASK) >> SF_HULL_KIND_SHIFT) == SF_HULL_KIND_DEBRIS)
        out.push_back(i);
    }
    return out;
  };
  EXPECT_EQ(ions(inst).size(), 16u);  // 0.5 + k / 30 <= 1.0: k = 0..15
  // The pass, light off: engine-part slots gain between 0.7 and 1 of thrust_color; the rest unchanged;
  // droplets by their closed form.
  HullLight off_light;
  off_light.enabled = false;
  HullEffects cold = inst.effects;
  cold.thrust = 0;
  const uint32_t count = static_cast<uint32_t>(d.slots().size());
  HullOutput on, plain;
  evaluateHull(packHullParams(inst.effects, off_light, Mat4{}, inst.centre(), 1.0, count), d.rest(),
               d.slots(), d.bodies(), on);
  evaluateHull(packHullParams(cold, off_light, Mat4{}, inst.centre(), 1.0, count), d.rest(), d.slots(),
               d.bodies(), plain);
  size_t engine = 0;
  for (size_t i = 0; i < d.hullSlots(); ++i) {
    if ((d.rest()[i].channels & 0xffu) != 2u) {
      ASSERT_EQ(length(on.colors[i] - plain.colors[i]), 0.0f) << "slot " << i;
      continue;
    }
    ++engine;
    for (int k = 0; k < 3; ++k) {
      const float c = inst.effects.thrust_color[k], delta = on.colors[i][k] - plain.colors[i][k];
      if (on.colors[i][k] >= 1.0f) continue;  // clamped
      ASSERT_GE(delta, 0.7f * c - 1e-5f) << "slot " << i;
      ASSERT_LE(delta, 1.0f * c + 1e-5f) << "slot " << i;
    }
  }
  EXPECT_GT(engine, 100u);
  const Vec3 tip{0, -0.6f, -0.1f}, trail{0, 0, -1};  // engine_l, its trail along -axis
  for (size_t i : ions(inst)) {
    const HullSlot& s = d.slots()[i];
    const float age = 1.0f - s.birth, a = age / inst.effects.debris_life;
    const Vec3 col = Vec3{0.55f, 0.85f, 1.0f} * (1 - a) + Vec3{0.1f, 0.25f, 0.9f} * a;
    ASSERT_NEAR(length(on.colors[i] - col), 0.0f, 1e-5f) << "slot " << i;
    ASSERT_NEAR(on.opacities[i], 0.85f * (1 - a), 1e-5f) << "slot " << i;
    const Vec3 centre = tip + trail * (kIonSpeed * age) + inst.effects.gravity * (0.5f * age * age);
    ASSERT_LE(length(on.positions[i] - centre),
              0.015f * std::sqrt(3.0f) + 0.15f * std::sqrt(3.0f) * age + 1e-5f)
        << "slot " << i;
  }
  // Cut off at 1.5: no droplet after it, no glow; by 1.5 + 1.4 s every droplet is gone.
  player.advance(inst, 2.0);
  EXPECT_EQ(inst.effects.thrust, 0.0f);
  for (size_t i : ions(inst)) EXPECT_LE(d.slots()[i].birth, 1.5f);
  EXPECT_EQ(ions(inst).size(),
            27u);  // k = 0..30 born by 1.5 (0.5 + k / 30); at 2.0 those born after 0.6 fly: k = 4..30
  player.advance(inst, 3.0);
  EXPECT_TRUE(ions(inst).empty());
  // Stepping the frames or jumping gives the same slots.
  HullInstance a(asset), b(asset);
  HullScriptPlayer pa(script), pb(script);
  for (double t = 0.0; t < 1.84; t += 0.1) pa.advance(a, t);
  pa.advance(a, 1.85);
  pb.advance(b, 1.85);
  ASSERT_EQ(a.destruction().slots().size(), b.destruction().slots().size());
  EXPECT_EQ(std::memcmp(a.destruction().slots().data(), b.destruction().slots().data(),
                        a.destruction().slots().size() * sizeof(HullSlot)),
            0);
  // Refusals: a hull without engines, a thrust that is no boolean.
  auto plain_asset = sphereAsset("HullScript.ThrustNone", 600);
  EXPECT_NE(test::errorOf([&] {
              checkHullScript(script, *plain_asset);
            }).find("t.json: events[0].thrust: the hull"),
            std::string::npos);
  EXPECT_NE(test::errorOf([&] {
              parseHullScript(R"({"events": [{"time": 0, "thrust": 1}]})", "t.json");
            }).find("t.json: events[0].thrust: expected true"),
            std::string::npos);
}

}  // namespace
}  // namespace sf::hull
