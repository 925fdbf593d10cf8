// CPU reference renderer. Follows the forward pass of the INRIA 3DGS rasterizer step by step
// (preprocessCUDA, duplicateWithKeys, identifyTileRanges, renderCUDA); see ARCHITECTURE.md.
#include "render/cpu_renderer.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/clock.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/sh.h"
#include "render/mesh.h"
#include "render/radix_sort.h"
#include "render/splat_shape.h"

namespace sf {

namespace {

int bitWidth(uint32_t v) {
  return v == 0 ? 1 : 32 - std::countl_zero(v);
}

}  // namespace

std::array<float, 3> projectCovariance(Vec3 t, const Cov6& cov, const Mat3& w, const Camera& cam) {
  // Clamp the direction to 1.3x the half field of view on each side of the principal point (generalises
  // INRIA's symmetric 1.3 * tan_fov limit to an off-centre principal point).
  const float tan_fovx = 0.5f * static_cast<float>(cam.width) / cam.fx;
  const float tan_fovy = 0.5f * static_cast<float>(cam.height) / cam.fy;
  const float lim_x_pos = (static_cast<float>(cam.width) - cam.cx) / cam.fx + 0.3f * tan_fovx;
  const float lim_x_neg = cam.cx / cam.fx + 0.3f * tan_fovx;
  const float lim_y_pos = (static_cast<float>(cam.height) - cam.cy) / cam.fy + 0.3f * tan_fovy;
  const float lim_y_neg = cam.cy / cam.fy + 0.3f * tan_fovy;
  const float txtz = t.x / t.z, tytz = t.y / t.z;
  t.x = std::min(lim_x_pos, std::max(-lim_x_neg, txtz)) * t.z;
  t.y = std::min(lim_y_pos, std::max(-lim_y_neg, tytz)) * t.z;

  // J: Jacobian of the perspective projection at t (third row zero).
  const float j00 = cam.fx / t.z, j02 = -(cam.fx * t.x) / (t.z * t.z);
  const float j11 = cam.fy / t.z, j12 = -(cam.fy * t.y) / (t.z * t.z);
  // T = J W (2x3).
  Vec3 t0 = j00 * w.row(0) + j02 * w.row(2);
  Vec3 t1 = j11 * w.row(1) + j12 * w.row(2);
  Mat3 v = covarianceMatrix(cov);
  Vec3 vt0 = v * t0, vt1 = v * t1;
  return {dot(t0, vt0), dot(t0, vt1), dot(t1, vt1)};
}

TileRect tileRect(float x, float y, int radius, int tiles_x, int tiles_y) {
  // INRIA getRect: truncation toward zero, then clamp to [0, grid].
  auto lo = [](float v, int grid) { return std::min(grid, std::max(0, static_cast<int>(v / kTileSize))); };
  auto hi = [](float v, int grid) {
    return std::min(grid, std::max(0, static_cast<int>((v + kTileSize - 1) / kTileSize)));
  };
  float r = static_cast<float>(radius);
  TileRect t;
  t.x0 = lo(x - r, tiles_x);
  t.y0 = lo(y - r, tiles_y);
  t.x1 = hi(x + r, tiles_x);
  t.y1 = hi(y + r, tiles_y);
  return t;
}

bool splatReachesTile(const ProjectedSplat& s, int tx, int ty) {
  const float a = s.conic[0], b = s.conic[1], c = s.conic[2];
  const float limit = 2.0f * std::log(255.0f * s.opacity);
  // Box of pixel centres, relative to the mean.
  const float x0 = static_cast<float>(tx * kTileSize) - s.mean_x, x1 = x0 + static_cast<float>(kTileSize - 1);
  const float y0 = static_cast<float>(ty * kTileSize) - s.mean_y, y1 = y0 + static_cast<float>(kTileSize - 1);
  if (x0 <= 0.0f && x1 >= 0.0f && y0 <= 0.0f && y1 >= 0.0f) return limit >= 0.0f;
  auto q = [&](float dx, float dy) { return a * dx * dx + 2.0f * b * dx * dy + c * dy * dy; };
  // The minimum of a convex quadratic over a box not containing its centre lies on an edge.
  float best = q(x0, std::clamp(-b * x0 / c, y0, y1));
  best = std::min(best, q(x1, std::clamp(-b * x1 / c, y0, y1)));
  best = std::min(best, q(std::clamp(-b * y0 / a, x0, x1), y0));
  best = std::min(best, q(std::clamp(-b * y1 / a, x0, x1), y1));
  return best <= limit * 1.001f + 0.01f;
}

bool projectSplat(Vec3 p_world, const Cov6& cov_world, float opacity, int sh_degree, const float* sh,
                  Vec3 sh_dir, ColorSpace color_space, const Camera& cam, bool antialiased,
                  ProjectedSplat* out, BlendSpace blend_space, float screen_filter) {
  // A splat with a non-finite opacity or colour is not drawn (the loaders drop such rows; this keeps the
  // backends in agreement for clouds built in memory). The Vulkan preprocess does the same.
  if (!std::isfinite(opacity)) return false;
  const Mat4& view = cam.world_to_camera;
  Vec3 p_view = transformPoint(view, p_world);
  if (!(p_view.z > kNearPlane)) return false;  // also rejects NaN

  std::array<float, 3> cov2 = projectCovariance(p_view, cov_world, view.linear(), cam);
  const float det_raw = cov2[0] * cov2[2] - cov2[1] * cov2[1];
  cov2[0] += screen_filter;
  cov2[2] += screen_filter;
  const float det = cov2[0] * cov2[2] - cov2[1] * cov2[1];
  if (det == 0.0f || !std::isfinite(det)) return false;
  if (antialiased) opacity *= std::sqrt(std::max(det_raw / det, 0.0f));
  const float det_inv = 1.0f / det;

  const float mid = 0.5f * (cov2[0] + cov2[2]);
  const float lambda1 = mid + std::sqrt(std::max(0.1f, mid * mid - det));
  const float lambda2 = mid - std::sqrt(std::max(0.1f, mid * mid - det));
  const float radius = std::ceil(3.0f * std::sqrt(std::max(lambda1, lambda2)));
  if (!(radius < 1e6f)) return false;

  const float z_inv = 1.0f / p_view.z;
  out->mean_x = cam.fx * p_view.x * z_inv + cam.cx - 0.5f;
  out->mean_y = cam.fy * p_view.y * z_inv + cam.cy - 0.5f;
  if (!std::isfinite(out->mean_x) || !std::isfinite(out->mean_y)) return false;
  out->radius = static_cast<int>(radius);
  const int tiles_x = (cam.width + kTileSize - 1) / kTileSize,
            tiles_y = (cam.height + kTileSize - 1) / kTileSize;
  out->tiles = tileRect(out->mean_x, out->mean_y, out->radius, tiles_x, tiles_y);
  if (out->tiles.area() == 0) return false;

  out->conic[0] = cov2[2] * det_inv;
  out->conic[1] = -cov2[1] * det_inv;
  out->conic[2] = cov2[0] * det_inv;
  out->opacity = opacity;
  out->depth = p_view.z;
  if (out->tiles.area() > kMaxTestedTileArea) {
    out->touched = out->tiles.area();
  } else {
    out->touched = 0;
    for (int ty = out->tiles.y0; ty < out->tiles.y1; ++ty)
      for (int tx = out->tiles.x0; tx < out->tiles.x1; ++tx) out->touched += splatReachesTile(*out, tx, ty);
    if (out->touched == 0) return false;
  }
  const Vec3 raw = evalSh(sh_degree, sh, normalize(sh_dir));  // before the clamp, as the shader checks it
  if (!std::isfinite(raw.x) || !std::isfinite(raw.y) || !std::isfinite(raw.z)) return false;
  Vec3 c = shSumToColor(raw);
  // The colour in the space the frame blends in: a display-space cloud's decoded for a linear blend, a
  // linear cloud's encoded for a display blend.
  const bool linear_cloud = color_space == ColorSpace::kLinear;
  if (blend_space == BlendSpace::kLinear && !linear_cloud)
    c = {srgbToLinear(c.x), srgbToLinear(c.y), srgbToLinear(c.z)};
  if (blend_space == BlendSpace::kDisplay && linear_cloud)
    c = {linearToSrgb(c.x), linearToSrgb(c.y), linearToSrgb(c.z)};
  out->color = c;
  return true;
}

const char* blendSpaceName(BlendSpace space) {
  return space == BlendSpace::kLinear ? "linear" : "display";
}

BlendSpace parseBlendSpace(const std::string& text) {
  if (text == "display" || text == "srgb") return BlendSpace::kDisplay;
  if (text == "linear") return BlendSpace::kLinear;
  throw Error("blend space '" + text + "': expected display (or srgb) or linear");
}

PixelResult blendPixel(std::span<const ProjectedSplat> splats, std::span<const uint32_t> order, int px,
                       int py, Vec3 background, const MeshPixel& mesh) {
  float t = 1.0f, d = 0.0f;
  uint32_t blended = 0;
  Vec3 c{0, 0, 0};
  const float pixf_x = static_cast<float>(px), pixf_y = static_cast<float>(py);
  bool pending = mesh.depth < INFINITY;  // a mesh fragment not yet passed
  const bool opaque = pending && !(mesh.alpha < 1.0f);
  for (uint32_t idx : order) {
    const ProjectedSplat& s = splats[idx];
    if (pending && !(s.depth < mesh.depth)) {  // this splat and every later one lie behind the mesh
      if (opaque) break;
      c = c + mesh.color * (mesh.alpha * t);
      d += mesh.depth * (mesh.alpha * t);
      t *= 1.0f - mesh.alpha;
      pending = false;
      if (t < kTransmittanceMin) break;
    }
    const float dx = s.mean_x - pixf_x, dy = s.mean_y - pixf_y;
    const float power = -0.5f * (s.conic[0] * dx * dx + s.conic[2] * dy * dy) - s.conic[1] * dx * dy;
    if (power > 0.0f) continue;
    const float falloff = std::exp(power);
    float alpha = std::min(kAlphaMax, s.opacity * falloff);
    if (alpha < kAlphaMin) continue;
    if ((s.shape & 3u) != 0)  // the shape over the gaussian: never less than its falloff
      alpha =
          std::min(kAlphaMax, s.opacity * std::max(falloff, splatShapeCoverage(s.shape, dx, dy, s.conic[0],
                                                                               s.conic[1], s.conic[2])));
    const float test_t = t * (1.0f - alpha);
    if (test_t < kTransmittanceMin) break;
    c = c + s.color * (alpha * t);
    d += s.depth * (alpha * t);
    t = test_t;
    ++blended;
  }
  if (opaque) return {c + mesh.color * t, 0.0f, d + mesh.depth * t, 1.0f, blended};
  if (pending) {  // a translucent mesh behind every splat blended
    c = c + mesh.color * (mesh.alpha * t);
    d += mesh.depth * (mesh.alpha * t);
    t *= 1.0f - mesh.alpha;
  }
  return {c + background * t, t, d, 1.0f - t, blended};
}

std::string RenderObject::validate() const {
  if (!cloud) return "no cloud";
  if (positions.size() != covariances.size())
    return "position and covariance overrides differ in size (" + std::to_string(positions.size()) + " / " +
           std::to_string(covariances.size()) + ")";
  if (!positions.empty() && positions.size() != cloud->size())
    return "overrides hold " + std::to_string(positions.size()) + " splats for a cloud of " +
           std::to_string(cloud->size());
  if (gpu_source && (!positions.empty() || deform)) return "a GPU source with overrides or a deform source";
  if (source_slots != kSizedByCloud && (!gpu_source || cloud->size() != 0))
    return "a slot count given for an object that is not a GPU source with a template cloud";
  if (!shapes.empty() && shapes.size() != cloud->size())
    return "shapes hold " + std::to_string(shapes.size()) + " words for a cloud of " +
           std::to_string(cloud->size());
  if (gpu_source && !shapes.empty()) return "a GPU source with shapes given on the host";
  if (!sort_depth.empty() && sort_depth.size() != cloud->size())
    return "sort depths hold " + std::to_string(sort_depth.size()) + " values for a cloud of " +
           std::to_string(cloud->size());
  for (float d : sort_depth)
    if (!std::isfinite(d)) return "a sort depth is not finite";
  if (deform) {
    if (!positions.empty()) return "both overrides and a GPU deform source";
    if (deform->bindings.size() != cloud->size() * 68)
      return "deform source holds " + std::to_string(deform->bindings.size()) + " binding bytes for " +
             std::to_string(cloud->size()) + " splats";
    if (deform->indices.size() % 3) return "deform source: index count not a multiple of 3";
    // Index, joint and morph-weight ranges are checked by the Vulkan renderer against bounds it measures when
    // it packs these static inputs, every frame.
  }
  return {};
}

void buildTileLists(std::span<const ProjectedSplat> splats, std::span<const uint32_t> touched, int tiles_x,
                    int tiles_y, TileLists& out) {
  const size_t total = splats.size();
  const uint32_t tile_count = static_cast<uint32_t>(tiles_x * tiles_y);
  std::vector<size_t> offsets(total + 1, 0);
  for (size_t i = 0; i < total; ++i) offsets[i + 1] = offsets[i] + touched[i];
  const size_t key_count = offsets.back();
  // Depth > 0.2, so its float bits order like the value.
  std::vector<uint64_t> keys(key_count);
  out.order.resize(key_count);
  parallelForRange(total, 8192, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      if (!touched[i]) continue;
      const ProjectedSplat& s = splats[i];
      const uint64_t depth_bits = std::bit_cast<uint32_t>(s.depth);
      size_t k = offsets[i];
      const bool test = s.tiles.area() <= kMaxTestedTileArea;
      for (int y = s.tiles.y0; y < s.tiles.y1; ++y)
        for (int x = s.tiles.x0; x < s.tiles.x1; ++x) {
          if (test && !splatReachesTile(s, x, y)) continue;
          keys[k] = (static_cast<uint64_t>(y * tiles_x + x) << 32) | depth_bits;
          out.order[k++] = static_cast<uint32_t>(i);
        }
    }
  });
  radixSortPairs(keys, out.order, 32 + bitWidth(tile_count));
  out.begin.assign(tile_count, 0);
  out.end.assign(tile_count, 0);
  for (size_t k = 0; k < key_count; ++k) {
    const uint32_t tile = static_cast<uint32_t>(keys[k] >> 32);
    if (k == 0 || static_cast<uint32_t>(keys[k - 1] >> 32) != tile)
      out.begin[tile] = static_cast<uint32_t>(k);
    if (k + 1 == key_count || static_cast<uint32_t>(keys[k + 1] >> 32) != tile)
      out.end[tile] = static_cast<uint32_t>(k + 1);
  }
}

ImageRGBA renderCpu(std::span<const RenderObject> objects, const Camera& cam, const RenderSettings& settings,
                    RenderStats* stats, std::span<const RenderMesh> meshes) {
  assert(cam.validate() == nullptr);
  RenderStats local;
  RenderStats& st = stats ? *stats : local;
  st = {};

  // Slots: every object's splats occupy a fixed, contiguous range of one frame-wide array.
  std::vector<size_t> first_slot(objects.size() + 1, 0);
  for (size_t o = 0; o < objects.size(); ++o) {
    if (std::string why = objects[o].validate(); !why.empty())
      throw Error("object " + std::to_string(o) + ": " + why);
    if (objects[o].deform)
      throw Error("object " + std::to_string(o) +
                  ": the CPU backend deforms no splats; pass centre/covariance overrides");
    if (objects[o].gpu_source)
      throw Error("object " + std::to_string(o) +
                  ": its gaussians are written on the GPU; render it with the Vulkan backend");
    first_slot[o + 1] = first_slot[o] + objects[o].cloud->size();
  }
  const size_t total = first_slot.back();
  st.splats = total;
  if (total > UINT32_MAX) throw std::length_error("more than 2^32 splats in one frame");

  const int tiles_x = (cam.width + kTileSize - 1) / kTileSize,
            tiles_y = (cam.height + kTileSize - 1) / kTileSize;
  const uint32_t tile_count = static_cast<uint32_t>(tiles_x * tiles_y);

  // 1. Preprocess: transform, cull, project, SH to colour, tile range, depth.
  auto t0 = Clock::now();
  std::vector<ProjectedSplat> projected(total);
  std::vector<uint32_t> touched(total, 0);
  const Vec3 cam_world = cam.position();
  for (size_t o = 0; o < objects.size(); ++o) {
    const GaussianCloud& cloud = *objects[o].cloud;
    const Mat4& model = objects[o].object_to_world;
    const Mat3 linear = model.linear();
    const Vec3 cam_object = transformPoint(inverseAffine(model), cam_world);
    const size_t base = first_slot[o];
    const bool aa = settings.antialiased || cloud.antialiased;
    const int sh_degree = drawnShDegree(cloud.sh_degree, settings);
    const bool half_sh = drawsHalfSh(objects[o], settings);
    parallelForRange(cloud.size(), 4096, [&](size_t begin, size_t end) {
      float rounded[kMaxShFloats];  // the coefficients the Vulkan frame's half layout holds
      for (size_t i = begin; i < end; ++i) {
        const bool over = !objects[o].positions.empty();
        Cov6 local_cov = over ? objects[o].covariances[i]
                              : covarianceFromScaleRotation(cloud.scales[i], cloud.rotations[i]);
        Mat3 world_cov = linear * covarianceMatrix(local_cov) * transpose(linear);
        const Vec3 p_object = over ? objects[o].positions[i] : cloud.positions[i];
        Vec3 p_world = transformPoint(model, p_object);
        ProjectedSplat& ps = projected[base + i];
        const float* sh = cloud.shOf(i).data();
        if (half_sh) sh = (roundHalfSh(sh, cloud.shStride(), rounded), rounded);
        if (projectSplat(p_world, covarianceUpper(world_cov), cloud.opacities[i], sh_degree, sh,
                         p_object - cam_object, cloud.color_space, cam, aa, &ps, settings.blend_space,
                         cloud.screen_filter)) {
          touched[base + i] = static_cast<uint32_t>(ps.touched);
          if (!objects[o].sort_depth.empty()) ps.depth = std::max(objects[o].sort_depth[i], kMinSortDepth);
          if (!objects[o].shapes.empty()) ps.shape = objects[o].shapes[i];
        }
      }
    });
  }
  st.preprocess_ms = msSince(t0);

  // 2. Keys and 3. one global stable sort over every key of the frame (buildTileLists).
  t0 = Clock::now();
  for (size_t i = 0; i < total; ++i) st.visible += touched[i] != 0;
  TileLists lists;
  buildTileLists(projected, touched, tiles_x, tiles_y, lists);
  st.tile_keys = lists.order.size();
  const std::vector<uint32_t>& values = lists.order;
  const std::vector<uint32_t>& range_begin = lists.begin;
  const std::vector<uint32_t>& range_end = lists.end;
  st.sort_ms = msSince(t0);

  // 4. Meshes (depth-tested, one fragment per pixel), then the tile raster: front-to-back blending per
  // pixel, stopping at an opaque mesh fragment and ending on its colour, or compositing a translucent one.
  t0 = Clock::now();
  const MeshLayer mesh_layer = meshes.empty() ? MeshLayer{} : rasterizeMeshes(meshes, cam);
  st.mesh_ms = msSince(t0);
  t0 = Clock::now();
  ImageRGBA image(cam.width, cam.height);
  if (settings.depth)
    image.depth.assign(static_cast<size_t>(cam.width) * static_cast<size_t>(cam.height) * 2, 0.0f);
  // A linear blend: the background and the mesh colours (display-encoded) decoded, the pixel encoded after.
  const bool linear = settings.blend_space == BlendSpace::kLinear;
  auto decode = [](Vec3 c) { return Vec3{srgbToLinear(c.x), srgbToLinear(c.y), srgbToLinear(c.z)}; };
  auto encode = [](Vec3 c) { return Vec3{linearToSrgb(c.x), linearToSrgb(c.y), linearToSrgb(c.z)}; };
  const Vec3 background = linear ? decode(settings.background) : settings.background;
  std::vector<uint64_t> tile_blended(tile_count, 0);
  parallelFor(tile_count, [&](size_t tile) {
    const int tx = static_cast<int>(tile) % tiles_x, ty = static_cast<int>(tile) / tiles_x;
    std::span<const uint32_t> order(values.data() + range_begin[tile], range_end[tile] - range_begin[tile]);
    for (int py = ty * kTileSize; py < std::min(cam.height, (ty + 1) * kTileSize); ++py)
      for (int px = tx * kTileSize; px < std::min(cam.width, (tx + 1) * kTileSize); ++px) {
        const size_t pix = static_cast<size_t>(py) * static_cast<size_t>(cam.width) + static_cast<size_t>(px);
        MeshPixel mesh;
        if (!mesh_layer.empty()) mesh = {mesh_layer.color[pix], mesh_layer.depth[pix], mesh_layer.alpha[pix]};
        if (linear) mesh.color = decode(mesh.color);
        const PixelResult r = blendPixel(projected, order, px, py, background, mesh);
        tile_blended[tile] += r.blended;
        const Vec3 color = linear ? encode(r.color) : r.color;
        float* out = image.at(px, py);
        out[0] = color.x;
        out[1] = color.y;
        out[2] = color.z;
        out[3] = r.alpha;
        if (settings.depth) {
          image.depth[pix * 2] = r.depth;
          image.depth[pix * 2 + 1] = r.transmittance;
        }
      }
  });
  for (uint64_t n : tile_blended) st.blended += n;
  st.raster_ms = msSince(t0);
  return image;
}

}  // namespace sf
