// The live core (hull/effects.h LiveCore): a live hull draws its untouched chunks in the baked path (the core
// as the depth-tested octagon mesh, the shell with the bucket's sort depths) and the rest through its pass
// and the global sort. Checked against independent oracles: the undamaged still hull against the baked hull
// (identical frame inputs but for the colours' float rounding), the split after damage against the chunks
// whose slots differ from a fresh destruction's (counts from the file's CHNK table), the chunks an effect
// leaves in the mesh against the positions the sorted path gives their slots, the Vulkan frame against the
// CPU frame, and the scene JSON key and CLI options.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "gpu/gpu.h"
#include "hull/destruction.h"
#include "hull/effects.h"
#include "hull/hull_pass.h"
#include "hull/hull_render.h"
#include "io/file.h"
#include "io/json.h"
#include "io/spl2.h"
#include "render/cpu_renderer.h"
#include "render/vulkan_renderer.h"
#include "scene/kinds/hull.h"
#include "scene/scene.h"
#include "support/test_support.h"

namespace sf::hull {
namespace {

using namespace hull_layout;

// A sphere hull of n splats (Fibonacci points, outward normals, tangent axes): three in five in the core,
// the rest in the shell, interleaved over the sphere; a chunk per 100 consecutive points (latitude bands,
// each holding core and shell rows); parts by octant.
Spl2Hull bandHull(size_t n) {
  Spl2Hull h;
  std::vector<size_t> core_of, shell_of;
  for (size_t i = 0; i < n; ++i) (i % 5 < 3 ? core_of : shell_of).push_back(i);
  h.core.resize(core_of.size());
  h.shell.resize(shell_of.size());
  std::vector<uint16_t> chunk(n);
  auto fill = [&](Spl2Block& b, size_t k, size_t i, bool core) {
    const auto [nrm, t0, t1] = test::fibonacciSphereFrame(i, n);
    b.pos[k] = nrm * 0.6f;
    b.normal[k] = nrm;
    b.ax0[k] = t0 * 0.06f;
    b.ax1[k] = t1 * 0.04f;
    b.color[k] = {0.3f + 0.5f * (nrm.x * 0.5f + 0.5f), 0.5f, 0.3f + 0.4f * (nrm.z * 0.5f + 0.5f)};
    b.opacity[k] = core ? 0.97f : 0.6f;
    const int part = (nrm.x > 0) + 2 * (nrm.y > 0) + 4 * (nrm.z > 0);
    b.attrs[k] = {static_cast<float>(80 + (i * 37) % 176),
                  static_cast<float>(part * 16 + (i % 7 == 0 ? 9 : 0)), 0.0f,
                  static_cast<float>((i * 131) % 256)};
  };
  for (size_t k = 0; k < core_of.size(); ++k) {
    fill(h.core, k, core_of[k], true);
    chunk[k] = static_cast<uint16_t>(core_of[k] / 100);
  }
  for (size_t k = 0; k < shell_of.size(); ++k) {
    fill(h.shell, k, shell_of[k], false);
    chunk[core_of.size() + k] = static_cast<uint16_t>(shell_of[k] / 100);
  }
  h.orders = spl2ShellOrders(h.shell.pos, kSpl2Buckets, 41.0f);
  h.has_chunks = true;
  h.chunk_of = chunk;
  h.material_of.assign(n, 0);
  spl2ComputeChunkTable(h);
  return h;
}

std::shared_ptr<HullAsset> bandAsset(const std::string& name, size_t n) {
  const std::string dir = test::tempDir(name);
  saveSpl2(bandHull(n), dir + "/band.spl2");
  return HullAsset::load(dir + "/band.spl2");
}

// Rotated, scaled and moved: the live path lights in object space, the baked one in world space.
Mat4 placement() {
  Mat3 l = rotationMatrix(normalize(Quat{0.1f, 0.35f, -0.05f, 0.93f}));
  for (auto& row : l.m)
    for (float& v : row) v *= 1.3f;
  return Mat4::fromLinearTranslation(l, {0.2f, -0.1f, 0.15f});
}

Camera viewOf(int w, int h) {
  return lookAtCamera({0.9f, 0.6f, 3.4f}, {0.2f, -0.1f, 0.15f}, {0, 1, 0}, 38.0f, w, h);
}

HullLight flashLight() {
  HullLight l;
  l.flash_position = {1.2f, 0.8f, 1.4f};
  l.flash_strength = 0.7f;
  return l;
}

Vec3 colorOfSh(const float* sh) {
  constexpr float c0 = 0.28209479177387814f;
  return {sh[0] * c0 + 0.5f, sh[1] * c0 + 0.5f, sh[2] * c0 + 0.5f};
}
float maxDiff(Vec3 a, Vec3 b) {
  return std::max({std::abs(a.x - b.x), std::abs(a.y - b.y), std::abs(a.z - b.z)});
}
bool sameBits(const void* a, const void* b, size_t bytes) {
  return std::memcmp(a, b, bytes) == 0;
}

// One live frame: with the live core in the mesh (meshes given) or every slot sorted.
struct LiveFrame {
  HullFrame frame;
  std::vector<RenderObject> objects;
  std::vector<RenderMesh> meshes;
};
void buildLive(const HullInstance& inst, double t, const HullLight& light, const Camera& cam, bool mesh,
               LiveFrame& f, const HullLod& lod = {}) {
  f.objects.clear();
  f.meshes.clear();
  inst.buildFrame(placement(), t, light, f.frame, f.objects, lod, &cam, mesh ? &f.meshes : nullptr);
}

// The oracle of the split: per chunk (the file's CHNK chunk of each splat), whether any of its hull slots
// differs from the slots of a fresh destruction of the same hull.
std::vector<uint8_t> damagedChunks(const HullAsset& asset, const Destruction& d) {
  const Destruction fresh(asset.hull);
  const size_t n = asset.hull.size();
  std::vector<uint8_t> damaged(asset.hull.chunks.size(), 0);
  for (size_t i = 0; i < n; ++i)
    if (!sameBits(&d.slots()[i], &fresh.slots()[i], sizeof(HullSlot))) damaged[asset.hull.chunk_of[i]] = 1;
  return damaged;
}

size_t finiteCount(const std::vector<float>& v, size_t begin, size_t end) {
  size_t c = 0;
  for (size_t i = begin; i < end; ++i) c += std::isfinite(v[i]);
  return c;
}

}  // namespace

// An undamaged live hull with no effect that moves anything (a flash and the breathing emission only) gives
// the frame what the baked hull gives it: the same octagons bit for bit, the same shell rows, opacities and
// sort depths bit for bit, colours equal to the float rounding of object- against world-space lighting; its
// pass draws nothing.
TEST(LiveCore, UndamagedStillHullIsTheBakedHull) {
  auto asset = bandAsset("LiveCore.Still", 2000);
  const size_t n_core = asset->hull.core.size(), n_shell = asset->hull.shell.size();
  HullInstance inst(asset);
  const Camera cam = viewOf(160, 128);
  const HullLight light = flashLight();
  const double t = 0.37;
  HullFrame baked;
  std::vector<RenderObject> baked_objects;
  std::vector<RenderMesh> baked_meshes;
  buildHullFrame(*asset, HullMode::kBaked, placement(), cam, t, light, baked, baked_objects, baked_meshes);
  LiveFrame live;
  buildLive(inst, t, light, cam, true, live);

  // The split's counts, against the file's chunk table.
  EXPECT_EQ(inst.chunkCount(), asset->hull.chunks.size());
  EXPECT_EQ(live.frame.mesh_chunks, asset->hull.chunks.size());
  EXPECT_EQ(live.frame.mesh_core_rows, n_core);
  EXPECT_EQ(live.frame.mesh_shell_rows, n_shell);
  ASSERT_EQ(live.objects.size(), 2u);  // the hull's slots, then the baked shell
  ASSERT_EQ(live.meshes.size(), 1u);
  ASSERT_EQ(baked_meshes.size(), 1u);
  EXPECT_EQ(finiteCount(live.frame.cloud.opacities, 0, live.frame.cloud.size()), 0u)
      << "the pass draws nothing";

  // The core mesh: the same octagons.
  const RenderMesh &lm = live.meshes[0], &bm = baked_meshes[0];
  const std::vector<std::array<float, 4>> first_colors(lm.colors.begin(), lm.colors.end());
  ASSERT_EQ(lm.positions.size(), bm.positions.size());
  ASSERT_EQ(lm.indices.size(), bm.indices.size());
  EXPECT_TRUE(sameBits(lm.positions.data(), bm.positions.data(), lm.positions.size() * sizeof(Vec3)));
  EXPECT_TRUE(sameBits(lm.indices.data(), bm.indices.data(), lm.indices.size() * sizeof(uint32_t)));
  EXPECT_EQ(lm.samples, bm.samples);
  float core_diff = 0;
  for (size_t v = 0; v < lm.colors.size(); ++v)
    for (int c = 0; c < 4; ++c) core_diff = std::max(core_diff, std::abs(lm.colors[v][c] - bm.colors[v][c]));
  // The shell: the same rows and sort depths.
  const GaussianCloud &ls = live.frame.baked_shell, &bs = baked.cloud;
  ASSERT_EQ(ls.size(), n_shell);
  ASSERT_EQ(bs.size(), n_shell);
  EXPECT_TRUE(sameBits(ls.positions.data(), bs.positions.data(), n_shell * sizeof(Vec3)));
  EXPECT_TRUE(sameBits(ls.scales.data(), bs.scales.data(), n_shell * sizeof(Vec3)));
  EXPECT_TRUE(sameBits(ls.rotations.data(), bs.rotations.data(), n_shell * sizeof(Quat)));
  EXPECT_TRUE(sameBits(ls.opacities.data(), bs.opacities.data(), n_shell * sizeof(float)));
  ASSERT_EQ(live.objects[1].sort_depth.size(), n_shell);
  ASSERT_EQ(baked_objects[0].sort_depth.size(), n_shell);
  EXPECT_TRUE(sameBits(live.objects[1].sort_depth.data(), baked_objects[0].sort_depth.data(),
                       n_shell * sizeof(float)));
  float shell_diff = 0;
  for (size_t k = 0; k < n_shell; ++k)
    shell_diff = std::max(shell_diff, maxDiff(colorOfSh(ls.shOf(k).data()), colorOfSh(bs.shOf(k).data())));
  std::printf(
      "undamaged still live hull against baked: core colours within %.3g, shell colours within %.3g\n",
      core_diff, shell_diff);
  EXPECT_LT(core_diff, 1e-5f);
  EXPECT_LT(shell_diff, 1e-5f);

  // The image, and what goes through the sort.
  RenderStats live_stats, baked_stats, sorted_stats;
  const ImageRGBA li = renderCpu(live.objects, cam, RenderSettings{}, &live_stats, live.meshes);
  const ImageRGBA bi = renderCpu(baked_objects, cam, RenderSettings{}, &baked_stats, baked_meshes);
  LiveFrame sorted;
  buildLive(inst, t, light, cam, false, sorted);
  renderCpu(sorted.objects, cam, RenderSettings{}, &sorted_stats, sorted.meshes);
  const ImageDiff d = compareImages(li, bi);
  std::printf(
      "  image %.2f dB (max %.3g); splats through the sort: %zu live mesh, %zu baked, %zu live sorted\n",
      d.psnr, d.max_abs, live_stats.visible, baked_stats.visible, sorted_stats.visible);
  // Colours within 1e-5 of each other, everything else the same: a pixel moves by at most about that.
  EXPECT_GE(d.psnr, 90.0);
  EXPECT_EQ(live_stats.visible, baked_stats.visible);
  EXPECT_LT(live_stats.visible, sorted_stats.visible);

  // A later frame into the same storage (the kept rows reused, only relit) is the frame built afresh.
  buildLive(inst, 1.9, light, cam, true, live);
  LiveFrame fresh;
  buildLive(inst, 1.9, light, cam, true, fresh);
  ASSERT_EQ(live.meshes.size(), 1u);
  ASSERT_EQ(fresh.meshes.size(), 1u);
  const RenderMesh &a = live.meshes[0], &b = fresh.meshes[0];
  ASSERT_EQ(a.colors.size(), b.colors.size());
  EXPECT_TRUE(sameBits(a.positions.data(), b.positions.data(), a.positions.size() * sizeof(Vec3)));
  EXPECT_TRUE(sameBits(a.indices.data(), b.indices.data(), a.indices.size() * sizeof(uint32_t)));
  EXPECT_TRUE(sameBits(a.colors.data(), b.colors.data(), a.colors.size() * sizeof(a.colors[0])));
  EXPECT_FALSE(sameBits(a.colors.data(), first_colors.data(), a.colors.size() * sizeof(a.colors[0])))
      << "relit: the emission breathes";
  EXPECT_TRUE(sameBits(live.frame.baked_shell.sh.data(), fresh.frame.baked_shell.sh.data(),
                       fresh.frame.baked_shell.sh.size() * sizeof(float)));
}

// Runtime LOD cuts the kept part as baked mode cuts its hull: the same octagons (the core rows of rank < K)
// and the same shell rows (the baked shell's other rows at opacity NaN, where baked mode leaves them out).
TEST(LiveCore, LodCutsTheKeptPartAsBakedModeDoes) {
  auto asset = bandAsset("LiveCore.Lod", 2000);
  const size_t n_shell = asset->hull.shell.size();
  HullInstance inst(asset);
  const Camera cam = viewOf(128, 112);
  const HullLight light = flashLight();
  const HullLod lod = HullLod::fixed(1500);
  HullFrame baked;
  std::vector<RenderObject> baked_objects;
  std::vector<RenderMesh> baked_meshes;
  buildHullFrame(*asset, HullMode::kBaked, placement(), cam, 0.6, light, baked, baked_objects, baked_meshes,
                 lod);
  LiveFrame live;
  buildLive(inst, 0.6, light, cam, true, live, lod);
  ASSERT_EQ(live.meshes.size(), 1u);
  ASSERT_EQ(baked_meshes.size(), 1u);
  ASSERT_EQ(live.meshes[0].positions.size(), baked_meshes[0].positions.size());
  EXPECT_TRUE(sameBits(live.meshes[0].positions.data(), baked_meshes[0].positions.data(),
                       baked_meshes[0].positions.size() * sizeof(Vec3)));
  size_t w = 0, mismatched = 0;
  for (size_t k = 0; k < n_shell; ++k) {
    if (!std::isfinite(live.frame.baked_shell.opacities[k])) continue;
    ASSERT_LT(w, baked.cloud.size());
    mismatched += !sameBits(&live.frame.baked_shell.positions[k], &baked.cloud.positions[w], sizeof(Vec3)) ||
                  live.frame.baked_shell.opacities[k] != baked.cloud.opacities[w] ||
                  live.objects[1].sort_depth[k] != baked_objects[0].sort_depth[w];
    ++w;
  }
  EXPECT_EQ(w, baked.cloud.size());
  EXPECT_EQ(mismatched, 0u);
  EXPECT_EQ(live.frame.mesh_core_rows + live.frame.mesh_shell_rows, 1500u);
  EXPECT_GT(live.frame.mesh_shell_rows, 0u);
  EXPECT_LT(live.frame.mesh_core_rows + live.frame.mesh_shell_rows, asset->hull.size());
  RenderStats ls, bs;
  const ImageRGBA li = renderCpu(live.objects, cam, RenderSettings{}, &ls, live.meshes);
  const ImageRGBA bi = renderCpu(baked_objects, cam, RenderSettings{}, &bs, baked_meshes);
  const ImageDiff d = compareImages(li, bi);
  std::printf(
      "live hull at K 1500 of 2000 against baked at K 1500: %.2f dB, %zu and %zu splats through the sort\n",
      d.psnr, ls.visible, bs.visible);
  EXPECT_GE(d.psnr, 90.0);
  EXPECT_EQ(ls.visible, bs.visible);
}

// After damage: the chunks whose slots differ from the undamaged hull's (a cracked chunk, a torn one, the
// crater) go through the pass, every slot of them as the sorted path gives it, and the rest stays in the
// baked path; a full heal brings every chunk back.
TEST(LiveCore, DamagedChunksGoThroughTheSortTheRestStays) {
  auto asset = bandAsset("LiveCore.Damage", 2000);
  const size_t n = asset->hull.size(), n_core = asset->hull.core.size();
  HullInstance inst(asset);
  Hit h;
  h.direction = normalize(Vec3{0.2f, -0.1f, -1});
  h.damage = 60;
  h.weapon = Weapon::kCannon;
  std::vector<HullEvent> events = inst.destruction().hit(h, 0.1);
  for (const HullEvent& e : inst.destruction().hit(h, 0.15)) events.push_back(e);
  inst.destruction().update(0.2);
  int torn = -1;
  for (const HullEvent& e : events)
    if (e.type == HullEvent::kChunkTorn) torn = e.index;
  ASSERT_GE(torn, 0) << "the cannon's second shot tears the cracked chunk";

  const Camera cam = viewOf(128, 112);
  const HullLight light = flashLight();
  LiveFrame mesh, sorted;
  buildLive(inst, 0.2, light, cam, true, mesh);
  buildLive(inst, 0.2, light, cam, false, sorted);
  const std::vector<uint8_t> damaged = damagedChunks(*asset, inst.destruction());
  ASSERT_EQ(inst.intactChunks().size(), damaged.size());
  size_t intact = 0, core_rows = 0, shell_rows = 0;
  for (size_t c = 0; c < damaged.size(); ++c) {
    EXPECT_EQ(inst.intactChunks()[c], !damaged[c]) << "chunk " << c;
    intact += !damaged[c];
  }
  EXPECT_TRUE(damaged[static_cast<size_t>(torn)]);
  for (size_t i = 0; i < n; ++i)
    if (!damaged[asset->hull.chunk_of[i]]) (i < n_core ? core_rows : shell_rows) += 1;
  std::printf(
      "damaged hull: %zu of %zu chunks intact (chunk %d torn): %zu core octagons, %zu shell rows baked\n",
      intact, damaged.size(), torn, core_rows, shell_rows);
  EXPECT_GT(intact, 0u);
  EXPECT_LT(intact, damaged.size());
  EXPECT_EQ(mesh.frame.mesh_chunks, intact);
  EXPECT_EQ(mesh.frame.mesh_core_rows, core_rows);
  EXPECT_EQ(mesh.frame.mesh_shell_rows, shell_rows);
  ASSERT_EQ(mesh.meshes.size(), 1u);
  EXPECT_EQ(mesh.meshes[0].indices.size(), core_rows * 24);
  // Slot by slot: a slot of a damaged chunk, and every pool slot, as the sorted path draws it; a slot of an
  // intact chunk left out of the pass.
  const HullOutput &m = mesh.frame.live, &s = sorted.frame.live;
  ASSERT_EQ(m.opacities.size(), s.opacities.size());
  size_t mismatched = 0;
  for (size_t i = 0; i < m.opacities.size(); ++i) {
    const bool passed = i >= n || damaged[asset->hull.chunk_of[i]];
    if (passed)
      mismatched += !sameBits(&m.opacities[i], &s.opacities[i], sizeof(float)) ||
                    !sameBits(&m.positions[i], &s.positions[i], sizeof(Vec3)) ||
                    !sameBits(&m.colors[i], &s.colors[i], sizeof(Vec3));
    else
      mismatched += !std::isnan(m.opacities[i]);
  }
  EXPECT_EQ(mismatched, 0u);
  const size_t sorted_mesh = finiteCount(m.opacities, 0, m.opacities.size());
  const size_t sorted_all = finiteCount(s.opacities, 0, s.opacities.size());
  size_t drawn_baked = 0;  // the intact chunks' slots the sorted path draws
  for (size_t i = 0; i < n; ++i)
    drawn_baked += !damaged[asset->hull.chunk_of[i]] && std::isfinite(s.opacities[i]);
  std::printf("  slots through the pass: %zu with the live core in the mesh, %zu sorted\n", sorted_mesh,
              sorted_all);
  EXPECT_EQ(sorted_mesh, sorted_all - drawn_baked);

  // Healed back to the skin: every chunk in the baked path again.
  inst.destruction().heal(1.0, 1.0f);
  inst.destruction().update(1.0);
  inst.destruction().update(30.0);
  buildLive(inst, 30.0, light, cam, true, mesh);
  const std::vector<uint8_t> after = damagedChunks(*asset, inst.destruction());
  EXPECT_EQ(std::count(after.begin(), after.end(), uint8_t{1}), 0);
  EXPECT_EQ(mesh.frame.mesh_chunks, asset->hull.chunks.size());
  EXPECT_EQ(mesh.frame.mesh_core_rows, n_core);
}

// Effects: every slot of a chunk left in the baked path is where the sorted path puts it (within
// kHullStillDistance), as opaque and of the same colour; effects that move everything leave nothing there,
// colour-only effects everything.
TEST(LiveCore, ChunksLeftInTheMeshAreWhereTheSortedPathDrawsThem) {
  auto asset = bandAsset("LiveCore.Effects", 2000);
  const size_t n = asset->hull.size(), n_core = asset->hull.core.size();
  const Camera cam = viewOf(96, 96);
  const HullLight light = flashLight();
  struct Case {
    const char* name;
    HullEffects e;
    enum { kSome, kNone, kAll } expect;
  };
  std::vector<Case> cases;
  {
    Case c{"ripple", {}, Case::kSome};
    c.e.ripple = 0.04f, c.e.ripple_origin = {0, 0, 0.6f}, c.e.ripple_age = 0.2f;
    cases.push_back(c);
  }
  {
    Case c{"part_xform (part 0 of 8)", {}, Case::kSome};
    c.e.parts = {{{0, 0, 0}, normalize(Quat{0.1f, 0.2f, 0, 0.97f}), {0.01f, 0, 0}}};
    cases.push_back(c);
  }
  {
    Case c{"link_decay", {}, Case::kSome};
    c.e.link_decay = 0.8f;
    cases.push_back(c);
  }
  {
    Case c{"siphon (a share of 2%)", {}, Case::kSome};
    c.e.siphon = 0.05f, c.e.siphon_share = 0.4f;
    cases.push_back(c);
  }
  {
    Case c{"charge", {}, Case::kNone};
    c.e.charge = 0.5f;
    cases.push_back(c);
  }
  {
    Case c{"scatter", {}, Case::kNone};
    c.e.scatter = 0.1f;
    cases.push_back(c);
  }
  {
    Case c{"muzzle flash, barrel heat, thrust", {}, Case::kAll};
    c.e.muzzle_flash = 0.8f, c.e.muzzle_point = {0.5f, 0.3f, 0.4f};
    c.e.barrel_heat = {{{0.5f, 0.3f, 0.4f}, 0.9f}};
    c.e.heat_radius = 0.4f;
    c.e.thrust = 0.7f, c.e.engine_parts = 0x3u;
    cases.push_back(c);
  }
  for (const Case& c : cases) {
    HullInstance inst(asset);
    inst.effects = c.e;
    LiveFrame mesh, sorted;
    buildLive(inst, 0.45, light, cam, true, mesh);
    buildLive(inst, 0.45, light, cam, false, sorted);
    const auto& rest = inst.destruction().rest();
    const auto& slots = inst.destruction().slots();
    const HullOutput& s = sorted.frame.live;
    // Which hull slots went to the baked path: those the pass left out of the mesh frame.
    std::vector<uint8_t> baked(n, 0);
    for (size_t i = 0; i < n; ++i) baked[i] = std::isnan(mesh.frame.live.opacities[i]);
    float moved = 0, colour = 0;
    size_t octagon = 0, baked_rows = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!baked[i]) continue;
      ++baked_rows;
      moved = std::max(moved, length(s.positions[i] -
                                     Vec3{rest[i].position[0], rest[i].position[1], rest[i].position[2]}));
      EXPECT_EQ(s.opacities[i], slots[i].opacity) << c.name << ": slot " << i << " fades";
      Vec3 drawn;
      if (i < n_core) {
        const std::array<float, 4>& col = mesh.meshes.at(0).colors[9 * octagon++];
        drawn = Vec3{col[0], col[1], col[2]};
      } else {
        drawn = colorOfSh(mesh.frame.baked_shell.shOf(i - n_core).data());
      }
      colour = std::max(colour, maxDiff(drawn, s.colors[i]));
    }
    // Chunks whole: a chunk's slots are all baked or all passed.
    std::vector<int> state(inst.chunkCount(), -1);
    size_t split_chunks = 0;
    for (size_t i = 0; i < n; ++i) {
      int& st = state[inst.chunkOf(i)];
      if (st >= 0 && st != baked[i]) ++split_chunks;
      st = baked[i];
    }
    std::printf("%s: %u of %u chunks baked (%zu slots), moved at most %.3g, colours within %.3g\n", c.name,
                mesh.frame.mesh_chunks, inst.chunkCount(), baked_rows, moved, colour);
    EXPECT_EQ(split_chunks, 0u) << c.name;
    EXPECT_LE(moved, kHullStillDistance) << c.name;
    EXPECT_LT(colour, 1e-5f) << c.name;
    EXPECT_EQ(baked_rows, mesh.frame.mesh_core_rows + mesh.frame.mesh_shell_rows) << c.name;
    if (c.expect == Case::kNone) {
      EXPECT_EQ(mesh.frame.mesh_chunks, 0u) << c.name;
    }
    if (c.expect == Case::kAll) {
      EXPECT_EQ(mesh.frame.mesh_chunks, inst.chunkCount()) << c.name;
    }
    if (c.expect == Case::kSome) {
      EXPECT_GT(mesh.frame.mesh_chunks, 0u) << c.name;
      EXPECT_LT(mesh.frame.mesh_chunks, inst.chunkCount()) << c.name;
    }
  }
}

// The split on the GPU path: the Vulkan frame (the pass leaving out the baked chunks' slots) against the CPU
// frame, on a damaged hull with a ripple running; and fewer splats through the sort than with every slot
// sorted.
TEST(LiveCore, VulkanMatchesCpuOnADamagedHull) {
  if (!gpu::vulkanAvailable())
    SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  gpu::ContextOptions co;
  co.validation = true;
  VulkanRenderer vk(co);
  auto asset = bandAsset("LiveCore.Vulkan", 2000);
  HullInstance on_cpu(asset), on_gpu(asset);
  attachHullGpu(std::make_shared<HullPass>(vk.context()), on_gpu);
  Hit h;
  h.direction = normalize(Vec3{0.2f, -0.1f, -1});
  h.damage = 60;
  h.weapon = Weapon::kCannon;
  for (HullInstance* inst : {&on_cpu, &on_gpu}) {
    inst->destruction().hit(h, 0.1);
    inst->destruction().hit(h, 0.15);
    inst->destruction().update(0.2);
    inst->effects.ripple = 0.03f, inst->effects.ripple_origin = {0, 0.3f, 0.5f},
    inst->effects.ripple_age = 0.1f;
  }
  const Camera cam = viewOf(128, 112);
  const HullLight light = flashLight();
  LiveFrame cpu, gpu, gpu_sorted;
  RenderStats cpu_stats;
  VulkanFrameStats gpu_stats, sorted_stats;
  // Each frame rendered before the next is built: the GPU path holds one frame's parameters.
  buildLive(on_cpu, 0.2, light, cam, true, cpu);
  const ImageRGBA ci = renderCpu(cpu.objects, cam, RenderSettings{}, &cpu_stats, cpu.meshes);
  buildLive(on_gpu, 0.2, light, cam, true, gpu);
  ASSERT_NE(gpu.objects.at(0).gpu_source, nullptr);
  const ImageRGBA gi = vk.render(gpu.objects, cam, RenderSettings{}, &gpu_stats, gpu.meshes);
  buildLive(on_gpu, 0.2, light, cam, false, gpu_sorted);
  const ImageRGBA si = vk.render(gpu_sorted.objects, cam, RenderSettings{}, &sorted_stats, gpu_sorted.meshes);
  ASSERT_GT(cpu.frame.mesh_chunks, 0u);
  EXPECT_EQ(gpu.frame.mesh_chunks, cpu.frame.mesh_chunks);
  EXPECT_EQ(gpu.frame.mesh_core_rows, cpu.frame.mesh_core_rows);
  const ImageDiff same = compareImages(ci, gi), against_sorted = compareImages(gi, si);
  std::printf(
      "damaged live hull, core in the mesh (%u of %u chunks): Vulkan against CPU %.2f dB (max %.3g); splats "
      "through the sort %zu Vulkan, %zu CPU, %zu with every slot sorted; against the sorted frame %.2f dB\n",
      gpu.frame.mesh_chunks, on_gpu.chunkCount(), same.psnr, same.max_abs, gpu_stats.visible,
      cpu_stats.visible, sorted_stats.visible, against_sorted.psnr);
  // The existing bounds of the hull tests: live GPU against CPU paths >= 45 dB, the anti-aliased baked core
  // >= 50 dB (tests/hull/effects_test.cpp, hull_test.cpp).
  EXPECT_GE(same.psnr, 45.0);
  EXPECT_EQ(gpu_stats.visible, cpu_stats.visible);
  EXPECT_LT(gpu_stats.visible, sorted_stats.visible);
  EXPECT_EQ(vk.context().validationErrors(), 0u) << vk.context().validationReport();
}

// Scene JSON "liveCore": sorted by default, mesh on request, errors naming the JSON path.
TEST(LiveCore, SceneJsonKey) {
  const std::string dir = test::tempDir("LiveCore.Json");
  saveSpl2(bandHull(600), dir + "/h.spl2");
  const Scene a = parseSceneJson(R"({"objects": [{"hull": "h.spl2", "seed": 3, "liveCore": "mesh"},
    {"hull": "h.spl2", "seed": 3}, {"hull": "h.spl2", "liveCore": "sorted"}]})",
                                 dir + "/scene.json");
  ASSERT_EQ(a.objects.size(), 3u);
  EXPECT_EQ(a.objects[0].as<HullObject>()->live_core, LiveCore::kMesh);
  EXPECT_EQ(a.objects[1].as<HullObject>()->live_core, LiveCore::kSorted);
  SceneFrame frame;
  const Camera cam = lookAtCamera({0, 0, 2.6f}, {0, 0, 0}, {0, 1, 0}, 40.0f, 32, 32);
  poseScene(a, 0.5, frame, false, &cam);
  ASSERT_EQ(frame.mesh_ranges.size(), 3u);
  EXPECT_EQ(frame.mesh_ranges[0][1] - frame.mesh_ranges[0][0], 1u) << "live, core in the mesh";
  EXPECT_EQ(frame.object_ranges[0][1] - frame.object_ranges[0][0], 2u) << "the slots and the baked shell";
  EXPECT_EQ(frame.mesh_ranges[1][1] - frame.mesh_ranges[1][0], 0u) << "live, every slot sorted";
  EXPECT_EQ(frame.object_ranges[1][1] - frame.object_ranges[1][0], 1u);
  EXPECT_EQ(frame.mesh_ranges[2][1] - frame.mesh_ranges[2][0], 1u) << "not live: baked";
  auto err = [&](const std::string& text) {
    return test::errorOf([&] { parseSceneJson(text, dir + "/scene.json"); });
  };
  const std::string bad = err(R"({"objects": [{"hull": "h.spl2", "liveCore": "mush"}]})");
  EXPECT_NE(bad.find("objects[0].liveCore"), std::string::npos) << bad;
  EXPECT_NE(bad.find("expected mesh or sorted"), std::string::npos) << bad;
  EXPECT_NE(
      err(R"({"objects": [{"file": "h.spl2", "liveCore": "mesh"}]})").find("applies to hull objects only"),
      std::string::npos);
  EXPECT_EQ(parseLiveCore("mesh"), LiveCore::kMesh);
  EXPECT_STREQ(liveCoreName(LiveCore::kSorted), "sorted");
}

// `hull bench --live-core both`: both runs printed and in the JSON, fewer splats through the sort with the
// core in the mesh; `--live-core` on render / hull play checked as a usage error.
TEST(LiveCore, BenchComparesMeshAndSorted) {
  if (!gpu::vulkanAvailable())
    SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)");
  const std::string dir = test::tempDir("LiveCore.Bench");
  saveSpl2(bandHull(800), dir + "/h.spl2");
  std::string out;
  ASSERT_EQ(
      test::runCli("hull bench " + dir +
                       "/h.spl2 --hulls 2 --frames 3 --width 96 --height 64 --effects none --live-core both "
                       "--json-out " +
                       dir + "/bench.json",
                   &out),
      0)
      << out;
  const std::vector<uint8_t> bytes = readFile(dir + "/bench.json");
  const nlohmann::json j = parseJsonText(std::string(bytes.begin(), bytes.end()), dir + "/bench.json");
  EXPECT_EQ(j.at("live_core").get<std::string>(), "mesh");
  const auto mesh_visible = j.at("visible").get<unsigned long long>();
  const auto sorted_visible = j.at("live_core_sorted").at("visible").get<unsigned long long>();
  std::printf(
      "hull bench --live-core both: %llu splats through the sort with the core in the mesh, %llu sorted\n",
      mesh_visible, sorted_visible);
  EXPECT_LT(mesh_visible, sorted_visible);
  EXPECT_GT(j.at("live_core_sorted").at("median_ms").at("gpu_frame_without_readback").get<double>(), 0.0);
  EXPECT_NE(out.find("live core: mesh"), std::string::npos) << out;
  EXPECT_NE(out.find("live core: sorted"), std::string::npos) << out;
  EXPECT_NE(out.find("live core mesh against sorted"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("hull bench " + dir + "/h.spl2 --hull-mode baked --live-core mesh", &out), 2);
  EXPECT_NE(out.find("applies to live hulls"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("render " + dir + "/h.spl2 -o " + dir + "/x.png --live-core mush", &out), 2);
  EXPECT_NE(out.find("--live-core"), std::string::npos) << out;
}

}  // namespace sf::hull
