// Dataset views: the destructible-hull article's dataset ("Dataset: headless Blender instead of photos"),
// rendered by the engine's CPU mesh rasterizer instead of Blender (see views.h).
#include "train/views.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <numbers>
#include <random>

#include "core/error.h"
#include "core/parallel.h"
#include "hull/mesh_query.h"
#include "render/mesh.h"

namespace sf::train {
namespace {

bool finiteElevation(float e) {
  return std::isfinite(e) && e > -90.0f && e < 90.0f;
}

double radians(double deg) {
  return deg * std::numbers::pi / 180.0;
}

std::string viewName(const char* split, size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s/r_%03zu", split, i);
  return buf;
}

// Per-vertex normals for the occlusion rays: the area-weighted sum of the (repaired) face normals around each
// vertex position, vertices welded by exact position (so the split vertices of a UV seam agree).
std::vector<Vec3> weldedVertexNormals(const hull::SourceMesh& s) {
  const size_t n = s.mesh.positions.size();
  std::vector<Vec3> face_sum(n, Vec3{0, 0, 0});
  for (size_t f = 0; f < s.mesh.faces.size(); ++f) {
    const Vec3 fn = hull::triangleNormal(s.mesh, f);  // length: twice the area
    for (uint32_t v : s.mesh.faces[f]) face_sum[v] = face_sum[v] + fn;
  }
  auto key = [&](size_t v) {
    const Vec3 p = s.mesh.positions[v];
    return std::array<float, 3>{p.x + 0.0f, p.y + 0.0f, p.z + 0.0f};  // -0 and +0 alike
  };
  std::vector<uint32_t> order(n);
  for (size_t v = 0; v < n; ++v) order[v] = static_cast<uint32_t>(v);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return key(a) < key(b) || (key(a) == key(b) && a < b); });
  std::vector<Vec3> out(n);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    Vec3 sum{0, 0, 0};
    while (j < n && key(order[j]) == key(order[i])) sum = sum + face_sum[order[j++]];
    for (size_t k = i; k < j; ++k) {
      const uint32_t v = order[k];
      Vec3 normal = sum;
      if (!(length(normal) > 0)) normal = face_sum[v];
      if (!(length(normal) > 0)) normal = s.normals[v];
      if (!(length(normal) > 0)) normal = Vec3{0, 1, 0};
      out[v] = normalize(normal);
    }
    i = j;
  }
  return out;
}

// The meshes to rasterize: one per draw, in the normalised frame, over arrays that `Draws` owns.
struct Draws {
  std::vector<std::array<float, 4>> colors;  // the source's, times the occlusion for kAo
  std::vector<std::vector<uint32_t>> indices;
  std::vector<RenderMesh> meshes;
};

void buildDraws(const hull::SourceMesh& s, const ViewsOptions& o, Draws& out) {
  out.colors = s.colors;
  if (o.lighting == Lighting::kAo) {
    const hull::MeshBvh bvh(s.mesh);
    const std::vector<Vec3> normals = weldedVertexNormals(s);
    const float reach = o.ao_distance > 0 ? o.ao_distance : INFINITY;
    const std::vector<float> ao =
        hull::ambientOcclusion(bvh, s.mesh.positions, normals, o.ao_rays, reach, o.seed);
    for (size_t v = 0; v < out.colors.size(); ++v)
      for (size_t k = 0; k < 3; ++k) out.colors[v][k] *= ao[v];
  }
  const size_t draws = s.draw_first_vertex.size();
  out.indices.assign(draws, {});
  for (size_t f = 0; f < s.mesh.faces.size(); ++f) {
    const uint32_t d = s.face_draw[f];
    for (uint32_t v : s.mesh.faces[f]) out.indices[d].push_back(v - s.draw_first_vertex[d]);
  }
  const std::span<const Vec3> positions = s.mesh.positions, normals = s.normals;
  const std::span<const std::array<float, 2>> uvs = s.uvs;
  const std::span<const std::array<float, 4>> colors = out.colors;
  for (size_t d = 0; d < draws; ++d) {
    if (out.indices[d].empty()) continue;
    const size_t first = s.draw_first_vertex[d];
    const size_t count = (d + 1 < draws ? s.draw_first_vertex[d + 1] : positions.size()) - first;
    RenderMesh m;
    m.positions = positions.subspan(first, count);
    const std::span<const Vec3> vn = normals.subspan(first, count);
    if (std::all_of(vn.begin(), vn.end(), [](Vec3 n) { return length(n) > 0; }))
      m.normals = vn;  // else face normals
    m.colors = colors.subspan(first, count);
    m.indices = out.indices[d];
    m.base_color = s.draw_factor[d];
    if (s.draw_texture[d]) {
      m.uvs = uvs.subspan(first, count);
      m.texture = s.draw_texture[d];
    }
    m.shading = o.lighting == Lighting::kCel ? MeshShading::kCel : MeshShading::kAlbedo;
    m.cel_light = kCelLight;
    out.meshes.push_back(m);
  }
}

// One view: the supersampled render box-filtered to the camera's size, premultiplied colour and coverage.
std::vector<float> renderView(std::span<const RenderMesh> meshes, const Camera& cam, int k) {
  Camera big = cam;
  big.width = cam.width * k, big.height = cam.height * k;
  const float fk = static_cast<float>(k);
  big.fx *= fk, big.fy *= fk, big.cx *= fk, big.cy *= fk;
  const MeshLayer layer = rasterizeMeshes(meshes, big);
  std::vector<float> rgba(static_cast<size_t>(cam.width) * static_cast<size_t>(cam.height) * 4, 0.0f);
  const float inv = 1.0f / (fk * fk);
  for (int y = 0; y < cam.height; ++y)
    for (int x = 0; x < cam.width; ++x) {
      float sum[4] = {0, 0, 0, 0};
      for (int sy = 0; sy < k; ++sy)
        for (int sx = 0; sx < k; ++sx) {
          const size_t p = static_cast<size_t>(y * k + sy) * static_cast<size_t>(big.width) +
                           static_cast<size_t>(x * k + sx);
          if (!std::isfinite(layer.depth[p])) continue;
          sum[0] += layer.color[p].x, sum[1] += layer.color[p].y, sum[2] += layer.color[p].z, sum[3] += 1.0f;
        }
      float* out =
          &rgba[(static_cast<size_t>(y) * static_cast<size_t>(cam.width) + static_cast<size_t>(x)) * 4];
      for (int c = 0; c < 4; ++c) out[c] = sum[c] * inv;
    }
  return rgba;
}

}  // namespace

Lighting parseLighting(const std::string& text) {
  if (text == "flat") return Lighting::kFlat;
  if (text == "ao") return Lighting::kAo;
  if (text == "cel") return Lighting::kCel;
  throw Error("unknown lighting '" + text + "' (expected flat, ao or cel)");
}

const char* lightingName(Lighting lighting) {
  switch (lighting) {
    case Lighting::kFlat:
      return "flat";
    case Lighting::kAo:
      return "ao";
    case Lighting::kCel:
      return "cel";
  }
  return "unknown";
}

std::string ViewsOptions::validate() const {
  constexpr int kMaxViews = 100000;
  if (train_count < 1 || train_count > kMaxViews)
    return "the train view count must be in 1.." + std::to_string(kMaxViews);
  if (val_count < 0 || val_count > kMaxViews)
    return "the val view count must be in 0.." + std::to_string(kMaxViews);
  if (test_count < 0 || test_count > kMaxViews)
    return "the test view count must be in 0.." + std::to_string(kMaxViews);
  if (supersample < 1 || supersample > 8) return "the supersampling factor must be in 1..8";
  if (size < 1 || size > 16384 / supersample)
    return "the image size must be at least 1 and at most 16384 / supersample pixels";
  if (!(belt_min < belt_max) || belt_min < -90 || belt_max > 90)
    return "the belt must be two elevations MIN < MAX within [-90, 90] degrees";
  if (val_count > 0 && val_elevations.empty()) return "val views need at least one elevation";
  if (test_count > 0 && test_elevations.empty()) return "test views need at least one elevation";
  for (float e : val_elevations)
    if (!finiteElevation(e)) return "val elevations must lie strictly between -90 and 90 degrees";
  for (float e : test_elevations)
    if (!finiteElevation(e)) return "test elevations must lie strictly between -90 and 90 degrees";
  if (ao_rays < 1 || ao_rays > 4096) return "the ambient-occlusion ray count must be in 1..4096";
  if (!(ao_distance >= 0) || !std::isfinite(ao_distance))
    return "the ambient-occlusion distance must be finite and >= 0";
  if (!std::isfinite(time)) return "the clip time must be finite";
  return {};
}

std::vector<OrbitAngles> trainAngles(int count, float belt_min_deg, float belt_max_deg) {
  std::vector<OrbitAngles> out(static_cast<size_t>(std::max(count, 0)));
  const double golden = std::numbers::pi * (3.0 - std::sqrt(5.0));
  const double smin = std::sin(radians(belt_min_deg)), smax = std::sin(radians(belt_max_deg));
  for (size_t i = 0; i < out.size(); ++i) {
    const double t = (static_cast<double>(i) + 0.5) / static_cast<double>(count);
    out[i].elevation = std::asin(smin + (smax - smin) * t);
    out[i].azimuth = static_cast<double>(i) * golden;
  }
  return out;
}

std::vector<OrbitAngles> ringAngles(int count, std::span<const float> elevations_deg, double phase) {
  std::vector<OrbitAngles> out;
  if (count <= 0 || elevations_deg.empty()) return out;
  const size_t rings = elevations_deg.size(), n = static_cast<size_t>(count);
  for (size_t e = 0; e < rings; ++e) {
    const size_t first = e * n / rings, last = (e + 1) * n / rings, m = last - first;
    const double ring_phase = phase + static_cast<double>(e) / static_cast<double>(rings);
    for (size_t j = 0; j < m; ++j)
      out.push_back({2.0 * std::numbers::pi * (static_cast<double>(j) + ring_phase) / static_cast<double>(m),
                     radians(elevations_deg[e])});
  }
  return out;
}

Camera orbitCamera(OrbitAngles a, int size) {
  const Vec3 eye = Vec3{static_cast<float>(std::sin(a.azimuth) * std::cos(a.elevation)),
                        static_cast<float>(std::sin(a.elevation)),
                        static_cast<float>(std::cos(a.azimuth) * std::cos(a.elevation))} *
                   kOrbitRadius;
  Camera cam = lookAtCamera(eye, Vec3{0, 0, 0}, Vec3{0, 1, 0}, 40.0f, size, size);
  cam.fx = cam.fy = static_cast<float>(0.5 * static_cast<double>(size) / std::tan(0.5 * kCameraAngleX));
  cam.cx = cam.cy = 0.5f * static_cast<float>(size);
  return cam;
}

SplitCameras datasetCameras(const ViewsOptions& o) {
  SplitCameras c;
  for (const OrbitAngles& a : trainAngles(o.train_count, o.belt_min, o.belt_max))
    c.train.push_back(orbitCamera(a, o.size));
  for (const OrbitAngles& a : ringAngles(o.val_count, o.val_elevations, 0.5))
    c.val.push_back(orbitCamera(a, o.size));
  for (const OrbitAngles& a : ringAngles(o.test_count, o.test_elevations, 0.25))
    c.test.push_back(orbitCamera(a, o.size));
  return c;
}

hull::SourceMesh loadViewsModel(const std::string& model_path, const std::string& clip, float time) {
  hull::SourceMesh s = hull::loadSourceMesh(model_path, clip, time);
  hull::repairWinding(s.mesh);
  return s;
}

Dataset renderViews(const hull::SourceMesh& source, const ViewsOptions& o) {
  if (std::string why = o.validate(); !why.empty()) throw Error("views: " + why);
  Draws draws;
  buildDraws(source, o, draws);
  const SplitCameras cams = datasetCameras(o);
  Dataset ds;
  ds.scale = source.scale, ds.offset = source.offset;
  ds.gltf_axes = true;
  struct Job {
    std::vector<View>* split;
    size_t index;
  };
  std::vector<Job> jobs;
  auto add = [&](const std::vector<Camera>& c, std::vector<View>& split, const char* name) {
    split.resize(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      split[i].camera = c[i];
      split[i].name = viewName(name, i);
      jobs.push_back({&split, i});
    }
  };
  add(cams.train, ds.train, "train");
  add(cams.val, ds.val, "val");
  add(cams.test, ds.test, "test");
  std::mutex progress_mutex;
  size_t done = 0;
  // One view per worker; the rasterizer inside runs serially on its thread (core/parallel.h).
  parallelFor(jobs.size(), [&](size_t j) {
    View& v = (*jobs[j].split)[jobs[j].index];
    v.rgba = renderView(draws.meshes, v.camera, o.supersample);
    std::lock_guard<std::mutex> lock(progress_mutex);
    ++done;
    if (o.progress) o.progress(done, jobs.size());
  });
  return ds;
}

Dataset renderViews(const std::string& model_path, const ViewsOptions& o) {
  if (std::string why = o.validate(); !why.empty()) throw Error("views: " + why);
  return renderViews(loadViewsModel(model_path, o.clip, o.time), o);
}

SurfaceSamples sampleSurface(const hull::SourceMesh& s, size_t count, uint32_t seed) {
  SurfaceSamples out;
  if (count == 0) return out;
  const std::vector<double> cdf = hull::faceAreaCdf(s.mesh);
  if (!(cdf.back() > 0)) throw Error("surface samples: every triangle has zero area");
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  out.positions.resize(count), out.normals.resize(count), out.colors.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const float u_area = uni(rng);
    const float u1 = uni(rng), u2 = uni(rng);
    const hull::SurfacePoint p = hull::surfacePointAt(s.mesh, cdf, u_area, u1, u2);
    out.positions[i] = p.position;
    out.normals[i] = normalize(hull::triangleNormal(s.mesh, p.face));
    out.colors[i] = hull::albedoAt(s, p.face, p.b0, p.b1, p.b2);
  }
  return out;
}

}  // namespace sf::train
