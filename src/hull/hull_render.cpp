#include "hull/hull_render.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "hull/meta.h"

namespace sf::hull {
namespace {

constexpr float kCoreLift = 0.004f;  // hull units (the cube is 1.6): the most important core octagon's lift

float smoothstep(float e0, float e1, float x) {
  const float t = std::clamp((x - e0) / (e1 - e0), 0.0f, 1.0f);
  return t * t * (3.0f - 2.0f * t);
}
float mix(float a, float b, float t) {
  return a + (b - a) * t;
}

}  // namespace

HullMode parseHullMode(const std::string& text) {
  if (text == "baked") return HullMode::kBaked;
  if (text == "sorted") return HullMode::kSorted;
  throw Error("unknown hull mode '" + text + "' (expected baked or sorted)");
}

const char* hullModeName(HullMode mode) {
  return mode == HullMode::kBaked ? "baked" : "sorted";
}

Vec3 celShade(Vec3 albedo, Vec3 normal, Vec3 position, float emis, double time, const HullLight& light) {
  if (!light.enabled) return albedo;
  const float ndl = std::clamp(dot(normal, -normalize(light.direction)), 0.0f, 1.0f);
  float band = mix(0.62f, 0.88f, smoothstep(0.22f, 0.28f, ndl));
  band = mix(band, 1.12f, smoothstep(0.52f, 0.58f, ndl));
  Vec3 col = albedo * (light.brightness * band);
  col = col + albedo * (emis * (0.78f + 0.22f * static_cast<float>(std::sin(time * 2.3))) * light.emission);
  if (light.flash_strength > 0) {
    const Vec3 fd = light.flash_position - position;
    const float fndl = std::clamp(dot(normal, normalize(fd)), 0.0f, 1.0f);
    const float fband = fndl > 0.5f ? 1.0f : (fndl > 0.2f ? 0.45f : 0.0f);
    col = col + light.flash_color * (light.flash_strength * fband / (1.0f + 0.15f * dot(fd, fd)));
  }
  return {std::clamp(col.x, 0.0f, 1.0f), std::clamp(col.y, 0.0f, 1.0f), std::clamp(col.z, 0.0f, 1.0f)};
}

std::shared_ptr<HullAsset> HullAsset::load(const std::string& path) {
  auto a = std::make_shared<HullAsset>();
  a->path = path;
  a->hull = loadSpl2(path);
  if (a->hull.size() == 0) throw Error(path + ": the hull holds no splats");
  a->rest = spl2ToCloud(a->hull);
  a->lod_rank = hullImportanceRanks(a->hull);
  a->lod_radius = hullLodRadius(a->hull);
  const std::string meta = hullMetaPath(path);
  std::error_code ec;
  if (std::filesystem::is_regular_file(meta, ec)) {
    a->bucket_elevation = readHullMetaBeltMiddle(meta);
    a->guns = readHullMetaGuns(meta);
    a->engines = readHullMetaEngines(meta);
  }
  return a;
}

int hullShellSortDepths(const HullAsset& asset, const Mat4& object_to_world, const Camera& cam,
                        std::vector<float>& depths) {
  const Spl2Hull& h = asset.hull;
  const int buckets = static_cast<int>(h.orders.size());
  depths.clear();
  if (buckets == 0) return -1;
  const Mat3 linear = object_to_world.linear();
  const Vec3 cam_obj = transformPoint(inverseAffine(object_to_world), cam.position());
  const int bucket = spl2Bucket(cam_obj, buckets);
  const Vec3 cb = spl2BucketCamera(bucket, buckets, asset.bucket_elevation);
  // View depth of each shell splat along the bucket camera's axis (the depth its stored order sorts by),
  // relative to the hull centre and placed around the centre's real view depth and pulled towards the camera
  // by its own reach (|ax0|, 3 sigma: a depth bias, as decals get, so that a shell splat lying on the core's
  // surface shows over it instead of fighting it per pixel), then made strictly decreasing along the stored
  // order so that the global sort reproduces it. Computed over the whole shell, so any subset of its rows
  // keeps the bucket's order (a subsequence of a strictly decreasing sequence).
  const Vec3 centre_view = transformPoint(cam.world_to_camera * object_to_world, Vec3{});
  const float s = length(linear.col(0));
  const Vec3 axis = -normalize(cb);
  depths.assign(h.shell.size(), 0.0f);
  float prev = std::numeric_limits<float>::infinity();
  for (int32_t i : h.orders[static_cast<size_t>(bucket)]) {
    const size_t k = static_cast<size_t>(i);
    float raw = centre_view.z + s * (dot(h.shell.pos[k], axis) - length(h.shell.ax0[k]));
    if (!std::isfinite(raw)) raw = centre_view.z;  // absurd axes from a file: keep the order, not the value
    const float v = std::min(raw, std::nextafter(prev, -std::numeric_limits<float>::infinity()));
    depths[k] = v;
    prev = v;
  }
  return bucket;
}

void appendHullCoreOctagon(const Spl2Block& core, size_t k, Vec3 color, HullFrame& out) {
  // Splats on one flat face give coplanar octagons whose depths would tie and fight per pixel (differently
  // on each backend); each octagon is lifted along its normal by kCoreLift * (1 - rank / n_core), so
  // overlaps resolve by importance (the core is stored most important first) everywhere.
  const size_t n_core = core.size();
  const uint32_t base = static_cast<uint32_t>(out.core_positions.size());
  const Vec3 centre =
      core.pos[k] +
      core.normal[k] * (kCoreLift * (1.0f - static_cast<float>(k) / static_cast<float>(n_core)));
  out.core_positions.push_back(centre);
  for (int v = 0; v < 8; ++v) {
    const float a = static_cast<float>(v) * 0.78539816339744831f;
    out.core_positions.push_back(centre + core.ax0[k] * std::cos(a) + core.ax1[k] * std::sin(a));
  }
  for (int v = 0; v < 9; ++v) out.core_colors.push_back({color.x, color.y, color.z, 1.0f});
  for (uint32_t v = 0; v < 8; ++v) {
    out.core_indices.push_back(base);
    out.core_indices.push_back(base + 1 + v);
    out.core_indices.push_back(base + 1 + (v + 1) % 8);
  }
}

RenderMesh hullCoreMesh(const HullFrame& out, const Mat4& object_to_world) {
  RenderMesh m;
  m.positions = out.core_positions;
  m.colors = out.core_colors;
  m.indices = out.core_indices;
  m.object_to_world = object_to_world;
  m.shading = MeshShading::kUnlit;
  m.samples = kHullCoreSamples;
  return m;
}

void buildHullFrame(const HullAsset& asset, HullMode mode, const Mat4& object_to_world, const Camera& cam,
                    double time, const HullLight& light, HullFrame& out, std::vector<RenderObject>& objects,
                    std::vector<RenderMesh>& meshes, const HullLod& lod) {
  const Spl2Hull& h = asset.hull;
  const size_t n_core = h.core.size(), n_shell = h.shell.size();
  // Runtime LOD: splat i (spl2ToCloud order) is drawn when its importance rank is below K.
  const uint32_t n_all = static_cast<uint32_t>(h.size());
  const uint32_t lod_k = resolveHullLod(
      lod, n_all, asset.lod_radius > 0 ? asset.lod_radius : hullLodRadius(h), object_to_world, &cam);
  out.lod_count = lod_k;
  const bool cut = lod_k < n_all;
  std::vector<uint32_t> own_rank;  // an asset not made by load() carries no ranks
  if (cut && asset.lod_rank.size() != n_all) own_rank = hullImportanceRanks(h);
  const std::vector<uint32_t>& rank = own_rank.empty() ? asset.lod_rank : own_rank;
  auto drawn = [&](size_t i) { return !cut || rank[i] < lod_k; };
  const Mat3 linear = object_to_world.linear();
  auto lit = [&](const Spl2Block& b, size_t k) {
    const Vec3 n = normalize(linear * b.normal[k]);
    const float emis = static_cast<float>(static_cast<int>(b.attrs[k][1]) % 16) / 15.0f;
    return celShade(b.color[k], n, transformPoint(object_to_world, b.pos[k]), emis, time, light);
  };
  auto setColor = [&](GaussianCloud& c, size_t i, Vec3 col) {
    float* dc = c.shOf(i).data();
    dc[0] = (col.x - 0.5f) / kShC0, dc[1] = (col.y - 0.5f) / kShC0, dc[2] = (col.z - 0.5f) / kShC0;
  };
  out.sort_depth.clear();
  out.core_positions.clear();
  out.core_colors.clear();
  out.core_indices.clear();
  out.bucket = -1;
  out.mesh_owner = nullptr;  // a live hull's kept rows (HullInstance::buildFrame) are not these

  if (mode == HullMode::kSorted) {
    out.cloud = asset.rest;  // core then shell, as spl2ToCloud lays them out
    for (size_t k = 0; k < n_core; ++k)
      if (drawn(k)) setColor(out.cloud, k, lit(h.core, k));
    for (size_t k = 0; k < n_shell; ++k)
      if (drawn(n_core + k)) setColor(out.cloud, n_core + k, lit(h.shell, k));
    if (cut) {  // only the first K in importance order, in the same (spl2ToCloud) order
      std::vector<uint8_t> drop(n_all);
      for (size_t i = 0; i < n_all; ++i) drop[i] = !drawn(i);
      eraseRows(out.cloud, drop);
    }
    RenderObject ro{&out.cloud, object_to_world};
    ro.dynamic = true;  // colours change every frame
    objects.push_back(ro);
    return;
  }

  // The shell: gaussians in the order of the camera's heading bucket. With LOD, only its rows of rank < K
  // (`rows`), each lit and placed as in the full shell.
  std::vector<uint32_t> rows;
  rows.reserve(n_shell);
  for (size_t k = 0; k < n_shell; ++k)
    if (drawn(n_core + k)) rows.push_back(static_cast<uint32_t>(k));
  if (!rows.empty()) {
    GaussianCloud& c = out.cloud;
    const GaussianCloud& r = asset.rest;
    c = GaussianCloud{};
    c.resize(rows.size(), 0);
    c.color_space = r.color_space;
    for (size_t w = 0; w < rows.size(); ++w) {
      const size_t k = rows[w];
      c.positions[w] = r.positions[n_core + k];
      c.scales[w] = r.scales[n_core + k];
      c.rotations[w] = r.rotations[n_core + k];
      c.opacities[w] = r.opacities[n_core + k];
      setColor(c, w, lit(h.shell, k));
    }
    RenderObject ro{&c, object_to_world};
    ro.dynamic = true;
    out.bucket = hullShellSortDepths(asset, object_to_world, cam, out.sort_depth);
    if (out.bucket >= 0) {
      if (rows.size() < n_shell) {
        for (size_t w = 0; w < rows.size(); ++w)
          out.sort_depth[w] = out.sort_depth[rows[w]];  // rows ascend: w <= rows[w]
        out.sort_depth.resize(rows.size());
      }
      ro.sort_depth = out.sort_depth;
    }
    objects.push_back(ro);
  } else {
    out.cloud = GaussianCloud{};
  }

  // The core: opaque octagons (centre + 8 rim vertices at ax0 cos + ax1 sin), flat-coloured, in the mesh
  // layer, anti-aliased with kHullCoreSamples samples per pixel, each lifted by its rank
  // (appendHullCoreOctagon). LOD keeps the octagons of rank < K (a prefix of the core), each lifted as in the
  // full hull.
  size_t core_drawn = 0;
  for (size_t k = 0; k < n_core; ++k) core_drawn += drawn(k);
  if (core_drawn > 0) {
    out.core_positions.reserve(core_drawn * 9);
    out.core_colors.reserve(core_drawn * 9);
    out.core_indices.reserve(core_drawn * 24);
    for (size_t k = 0; k < n_core; ++k)
      if (drawn(k)) appendHullCoreOctagon(h.core, k, lit(h.core, k), out);
    meshes.push_back(hullCoreMesh(out, object_to_world));
  }
}

}  // namespace sf::hull
