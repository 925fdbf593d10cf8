#include "hull/bake.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <map>
#include <numbers>
#include <random>

#include "core/covariance.h"
#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "core/parallel.h"
#include "core/sh.h"
#include "hull/chunks.h"
#include "hull/mesh_query.h"
#include "hull/source_mesh.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/json.h"
#include "model/gltf_model.h"
#include "render/mesh.h"

namespace sf::hull {
namespace {

using Clock = std::chrono::steady_clock;

constexpr float kCube = kSourceCube;
constexpr int kMaxParts = 8;

Vec3 faceNormal(const TriMesh& m, uint32_t f) {
  const auto& t = m.faces[f];
  return normalize(cross(m.positions[t[1]] - m.positions[t[0]], m.positions[t[2]] - m.positions[t[0]]));
}
float faceArea(const TriMesh& m, uint32_t f) {
  const auto& t = m.faces[f];
  return 0.5f * length(cross(m.positions[t[1]] - m.positions[t[0]], m.positions[t[2]] - m.positions[t[0]]));
}

// A splat while baking: centre, unit in-plane axes with their sigmas, normal, display colour, opacity.
struct Splat {
  Vec3 pos, t0, t1, normal, color;
  float s0 = 0, s1 = 0, opacity = 1;
  uint32_t face = 0;
  bool flipped = false;
};

// Cameras of the belt: 72 azimuths x 5 elevations at the dataset's orbit radius.
std::vector<float> beltElevations(const BakeOptions& o) {
  std::vector<float> e(5);
  for (int k = 0; k < 5; ++k)
    e[static_cast<size_t>(k)] = o.belt_min + (o.belt_max - o.belt_min) * static_cast<float>(k) / 4.0f;
  return e;
}
std::vector<Vec3> beltCameras(const BakeOptions& o) {
  std::vector<Vec3> cams;
  for (float e : beltElevations(o))
    for (int a = 0; a < 72; ++a) {
      const double az = a * 5.0 * std::numbers::pi / 180.0, el = e * std::numbers::pi / 180.0;
      cams.push_back(Vec3{static_cast<float>(std::sin(az) * std::cos(el)), static_cast<float>(std::sin(el)),
                          static_cast<float>(std::cos(az) * std::cos(el))} *
                     kSpl2CameraDistance);
    }
  return cams;
}

float percentile(std::vector<float> v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

template <class Keep>
size_t keepIf(std::vector<Splat>& splats, Keep keep) {
  std::vector<Splat> kept;
  kept.reserve(splats.size());
  for (size_t i = 0; i < splats.size(); ++i)
    if (keep(i)) kept.push_back(splats[i]);
  const size_t removed = splats.size() - kept.size();
  splats.swap(kept);
  return removed;
}

std::string jsonVec(Vec3 v) {
  nlohmann::json j = nlohmann::json::array({v.x, v.y, v.z});
  return j.dump();
}

std::vector<Vec3> positionsOf(const std::vector<Splat>& splats) {
  std::vector<Vec3> centres(splats.size());
  for (size_t i = 0; i < splats.size(); ++i) centres[i] = splats[i].pos;
  return centres;
}

// Whether a point with normal n faces at least one camera of the belt.
bool facesBelt(const std::vector<Vec3>& cams, Vec3 p, Vec3 n) {
  for (const Vec3& c : cams)
    if (dot(n, c - p) > 0) return true;
  return false;
}

// A splat's importance: opacity x area of its two main axes.
float importance(const Splat& s) {
  return s.opacity * s.s0 * s.s1;
}

void checkBakeOptions(const BakeOptions& opt) {
  if (opt.budget == 0) throw Error("hull bake: the budget must be at least 1 splat");
  if (!(opt.belt_min < opt.belt_max) || opt.belt_min < -90 || opt.belt_max > 90)
    throw Error("hull bake: the belt must be two elevations MIN < MAX within [-90, 90] degrees");
  if (opt.chunk_size < 1) throw Error("hull bake: the chunk size must be at least 1");
}

// The end of a stage: its seconds into the report and, when the options ask for progress, the line
// "NAME: LINE (S s)".
class StageClock {
 public:
  StageClock(BakeReport& rep, const BakeOptions& opt) : rep_(rep), opt_(opt) {}
  void operator()(const std::string& name, const std::string& line) {
    const double s = std::chrono::duration<double>(Clock::now() - t_stage_).count();
    rep_.stage_seconds.emplace_back(name, s);
    t_stage_ = Clock::now();
    if (opt_.progress) {
      char buf[32];
      std::snprintf(buf, sizeof buf, " (%.2f s)", s);
      opt_.progress(name + ": " + line + buf);
    }
  }

 private:
  BakeReport& rep_;
  const BakeOptions& opt_;
  Clock::time_point t_stage_ = Clock::now();
};

// The splats of the trained file (or of the cloud in memory), in the hull frame.
std::vector<Splat> cloudSplats(const BakeOptions& opt, float scale, Vec3 offset) {
  LoadedSplats loaded;
  if (!opt.cloud) {
    loaded = loadSplats(opt.splats);
    // Every splat file is in the engine's frame once loaded (the PLY convention, y down: `train` writes its
    // clouds so, glTF and SPL2 are turned on load); the hull frame has glTF's axes (y up), so turn it back
    // (the turn is its own inverse).
    changeAxes(loaded.cloud, gltfToPlyAxes());
    if (opt.progress)
      for (const std::string& w : loaded.warnings) opt.progress("warning: " + opt.splats + ": " + w);
  }
  const GaussianCloud& cloud = opt.cloud ? *opt.cloud : loaded.cloud;
  std::vector<Splat> splats(cloud.size());
  parallelFor(cloud.size(), [&](size_t i) {
    Splat& s = splats[i];
    const Mat3 r = rotationMatrix(cloud.rotations[i]);
    // The two largest axes, in axis order.
    int drop = 0;
    for (int k = 1; k < 3; ++k)
      if ((&cloud.scales[i].x)[k] < (&cloud.scales[i].x)[drop]) drop = k;
    int a = drop == 0 ? 1 : 0, b = drop == 2 ? 1 : 2;
    s.pos = cloud.positions[i];
    s.t0 = r.col(a), s.t1 = r.col(b);
    s.s0 = (&cloud.scales[i].x)[a], s.s1 = (&cloud.scales[i].x)[b];
    if (opt.splats_in_source_frame) {
      s.pos = s.pos * scale + offset;
      s.s0 *= scale, s.s1 *= scale;
    }
    s.normal = cloud.normals.empty() ? r.col(drop) : cloud.normals[i];
    const float* dc = cloud.shOf(i).data();
    s.color = Vec3{std::clamp(0.5f + kShC0 * dc[0], 0.0f, 1.0f), std::clamp(0.5f + kShC0 * dc[1], 0.0f, 1.0f),
                   std::clamp(0.5f + kShC0 * dc[2], 0.0f, 1.0f)};
    if (cloud.color_space == ColorSpace::kLinear)
      s.color = Vec3{linearToSrgb(s.color.x), linearToSrgb(s.color.y), linearToSrgb(s.color.z)};
    s.opacity = cloud.opacities[i];
  });
  return splats;
}

struct SurfaceSamples {
  std::vector<Splat> splats;
  float sigma = 0;  // every sample's in-plane standard deviation
};

// Area-weighted samples over the faces; enough that about `budget` remain after the belly cull.
SurfaceSamples sampleSurface(const SourceMesh& src, const std::vector<Vec3>& cams, const BakeOptions& opt,
                             const std::string& model_path) {
  std::mt19937 rng(opt.seed);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  const std::vector<double> cdf = faceAreaCdf(src.mesh);
  double visible_area = 0;
  for (uint32_t f = 0; f < src.mesh.faces.size(); ++f) {
    const auto& t = src.mesh.faces[f];
    if (facesBelt(cams,
                  (src.mesh.positions[t[0]] + src.mesh.positions[t[1]] + src.mesh.positions[t[2]]) / 3.0f,
                  faceNormal(src.mesh, f)))
      visible_area += faceArea(src.mesh, f);
  }
  const double total = cdf.back();
  if (!(total > 0)) throw Error(model_path + ": every triangle has zero area");
  const double share = std::clamp(visible_area / total, 0.05, 1.0);
  const size_t count = static_cast<size_t>(std::ceil(static_cast<double>(opt.budget) / share));
  SurfaceSamples out;
  out.sigma = static_cast<float>(std::sqrt(total / static_cast<double>(count)));
  out.splats.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const float u_area = uni(rng);
    const float u1 = uni(rng), u2 = uni(rng);
    const SurfacePoint sp = surfacePointAt(src.mesh, cdf, u_area, u1, u2);
    const uint32_t f = sp.face;
    const auto& t = src.mesh.faces[f];
    Splat& s = out.splats[i];
    s.pos = sp.position;
    s.normal = faceNormal(src.mesh, f);
    const Vec3 e = normalize(src.mesh.positions[t[1]] - src.mesh.positions[t[0]]);
    const float ang = uni(rng) * 2.0f * std::numbers::pi_v<float>;
    const Vec3 u = e, w = cross(s.normal, e);
    s.t0 = normalize(u * std::cos(ang) + w * std::sin(ang));
    s.t1 = cross(s.normal, s.t0);
    s.s0 = s.s1 = out.sigma;
    s.opacity = 0.99f;
    s.color = albedoAt(src, f, sp.b0, sp.b1, sp.b2);
    s.face = f;
  }
  return out;
}

// Refuses splats holding a non-finite or huge value, naming `source` (the splat file, else the model).
void checkSplatValues(const std::vector<Splat>& splats, const std::string& source) {
  for (size_t i = 0; i < splats.size(); ++i) {
    const Splat& s = splats[i];
    if (!std::isfinite(s.pos.x + s.pos.y + s.pos.z + s.s0 + s.s1 + s.opacity) ||
        std::abs(s.pos.x) + std::abs(s.pos.y) + std::abs(s.pos.z) > 1e6f)
      throw Error(source + ": splat " + std::to_string(i) + " holds a non-finite or huge value");
  }
}

struct NormalSnap {
  std::vector<float> distance;  // per splat: to the mesh
  size_t flipped = 0;           // splats snapped to a face whose winding was repaired
};

// Each splat's normal snapped to its nearest face, its in-plane axes turned to stay perpendicular to it.
NormalSnap snapNormals(std::vector<Splat>& splats, const TriMesh& mesh, const MeshBvh& bvh,
                       const WindingReport& wr) {
  NormalSnap out;
  std::vector<float>& dist = out.distance;
  dist.resize(splats.size());
  std::vector<uint8_t> flipped(splats.size(), 0);
  parallelFor(splats.size(), [&](size_t i) {
    const MeshBvh::Closest c = bvh.closest(splats[i].pos);
    dist[i] = c.distance;
    Splat& s = splats[i];
    const Vec3 n = faceNormal(mesh, c.face);
    flipped[i] = wr.face_flipped[c.face];  // the splat would have inherited a reversed face
    s.normal = n;
    s.face = c.face;
    // Keep the in-plane axes perpendicular to the snapped normal (trained axes need not be).
    Vec3 t0 = s.t0 - n * dot(s.t0, n);
    if (length(t0) < 1e-6f) t0 = std::abs(n.x) < 0.9f ? cross(n, Vec3{1, 0, 0}) : cross(n, Vec3{0, 1, 0});
    s.t0 = normalize(t0);
    s.t1 = cross(n, s.t0);
  });
  for (uint8_t f : flipped) out.flipped += f;
  return out;
}

// Removes the floaters, counting each kind into the report; returns the link radius of the connectivity
// test.
float removeFloaters(std::vector<Splat>& splats, const std::vector<float>& dist, const TriMesh& mesh,
                     const MeshBvh& bvh, const BakeOptions& opt, BakeReport& rep) {
  const std::vector<Vec3> centres = positionsOf(splats);
  std::vector<uint8_t> far(splats.size());
  for (size_t i = 0; i < splats.size(); ++i) far[i] = dist[i] > opt.floater_distance;
  const float nn = medianNearestNeighbour(centres);
  // 5x the median nearest-neighbour distance: random surface samples leave gaps that 3x would cut off. And at
  // least 3x the spacing N splats would have spread evenly over the mesh's area: a trained cloud clumps (its
  // median neighbour is close) and leaves wider gaps between clumps, which cut 4,550 of the 6,000 splats of a
  // cloud trained on cesium_man off as "detached" at 5x its median neighbour alone.
  double area = 0;
  for (size_t f = 0; f < mesh.faces.size(); ++f) area += triangleArea(mesh, f);
  const float spacing =
      splats.empty() ? 0.0f : static_cast<float>(std::sqrt(area / static_cast<double>(splats.size())));
  const float radius = std::max({5.0f * nn, 3.0f * spacing, 1e-4f});
  // Components of at least a tenth of the largest are parts, not floaters: keeping the largest alone dropped
  // whole pieces of models made of disjoint parts (6,346 of 7,161 splats of the interpolation sample).
  const std::vector<uint8_t> main = mainComponent(centres, radius, 0.1f);
  const std::vector<uint16_t> misses =
      silhouetteMisses(bvh, centres, beltElevations(opt), kSpl2CameraDistance, opt.silhouette_tolerance);
  // The fourth pass, over the training views: a disc on nothing but background in some view. Its radius is
  // where the splat's alpha falls to 1/255: sigma * sqrt(2 ln(255 opacity)) of its larger axis.
  std::vector<uint8_t> in_air(splats.size(), 0);
  rep.dataset_pass = !opt.views.empty();
  if (rep.dataset_pass) {
    std::vector<float> radii(splats.size());
    for (size_t i = 0; i < splats.size(); ++i)
      radii[i] = std::max(splats[i].s0, splats[i].s1) *
                 std::sqrt(std::max(2.0f * std::log(255.0f * splats[i].opacity), 0.0f));
    in_air = datasetFloaters(centres, radii, opt.views);
  }
  for (size_t i = 0; i < splats.size(); ++i) {
    if (far[i])
      ++rep.floaters_distance;
    else if (!main[i])
      ++rep.floaters_connectivity;
    else if (misses[i])
      ++rep.floaters_silhouette;
    else if (in_air[i])
      ++rep.floaters_dataset;
  }
  keepIf(splats, [&](size_t i) { return !far[i] && main[i] && misses[i] == 0 && !in_air[i]; });
  return radius;
}

// The budget by importance: keeps the `budget` most important splats in their order; returns how many went.
size_t keepMostImportant(std::vector<Splat>& splats, size_t budget) {
  if (splats.size() <= budget) return 0;
  std::vector<size_t> idx(splats.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(),
                   [&](size_t a, size_t b) { return importance(splats[a]) > importance(splats[b]); });
  std::vector<uint8_t> keep(splats.size(), 0);
  for (size_t k = 0; k < budget; ++k) keep[idx[k]] = 1;
  return keepIf(splats, [&](size_t i) { return keep[i] != 0; });
}

// The core / shell split: the core (opacity above `core_opacity`) first, in importance order so that LOD is
// one number, then the shell in its order. Returns the core's size.
size_t orderCoreFirst(std::vector<Splat>& splats, float core_opacity) {
  std::vector<size_t> core_idx, shell_idx;
  for (size_t i = 0; i < splats.size(); ++i)
    (splats[i].opacity > core_opacity ? core_idx : shell_idx).push_back(i);
  std::stable_sort(core_idx.begin(), core_idx.end(),
                   [&](size_t a, size_t b) { return importance(splats[a]) > importance(splats[b]); });
  std::vector<size_t> order = core_idx;
  order.insert(order.end(), shell_idx.begin(), shell_idx.end());
  std::vector<Splat> ordered(order.size());
  for (size_t k = 0; k < order.size(); ++k) ordered[k] = splats[order[k]];
  splats.swap(ordered);
  return core_idx.size();
}

// Emission by rarity: per splat 0..15, from its colour's distance to the median colour; `emissive` counts the
// splats above 0.
std::vector<int> emissionLevels(const std::vector<Vec3>& colors, float threshold, size_t& emissive) {
  Vec3 median_color;
  for (int c = 0; c < 3; ++c) {
    std::vector<float> ch(colors.size());
    for (size_t i = 0; i < colors.size(); ++i) ch[i] = (&colors[i].x)[c];
    (&median_color.x)[c] = percentile(ch, 0.5);
  }
  std::vector<int> emis(colors.size());
  for (size_t i = 0; i < colors.size(); ++i) {
    const float rarity = length(colors[i] - median_color);
    const float e = std::clamp((rarity - threshold) / 0.3f, 0.0f, 1.0f);
    emis[i] = static_cast<int>(std::lround(e * 15.0f));
    emissive += emis[i] > 0;
  }
  return emis;
}

struct PartTable {
  std::vector<int> draw_part;           // per draw of the source mesh
  std::vector<std::string> part_names;  // per part
};

// Parts: mesh nodes when there are at most 8, else materials, else the 7 largest by area plus the rest.
PartTable groupParts(const SourceMesh& src) {
  PartTable out;
  out.draw_part.assign(src.draw_name.size(), 0);
  auto group = [&](auto key_of) {
    std::map<std::string, double> area;
    std::vector<std::string> keys(src.draw_name.size());
    for (size_t d = 0; d < keys.size(); ++d) keys[d] = key_of(d);
    for (uint32_t f = 0; f < src.mesh.faces.size(); ++f)
      area[keys[src.face_draw[f]]] += faceArea(src.mesh, f);
    return std::make_pair(keys, area);
  };
  auto [keys, area] = group([&](size_t d) { return src.draw_name[d]; });
  if (area.size() > kMaxParts) {
    auto by_material = group([&](size_t d) {
      const int m = src.draw_material[d];
      return m < 0 ? std::string("no material") : "material " + std::to_string(m);
    });
    if (by_material.second.size() <= kMaxParts || by_material.second.size() < area.size())
      keys = by_material.first, area = by_material.second;
  }
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [k, a] : area) ranked.emplace_back(-a, k);
  std::sort(ranked.begin(), ranked.end());
  std::map<std::string, int> id;
  for (size_t r = 0; r < ranked.size(); ++r) {
    const int p = static_cast<int>(std::min<size_t>(r, kMaxParts - 1));
    id[ranked[r].second] = p;
    if (static_cast<size_t>(p) == out.part_names.size())
      out.part_names.push_back(ranked[r].second);
    else if (r >= kMaxParts)
      out.part_names.back() = "rest";
  }
  for (size_t d = 0; d < keys.size(); ++d) out.draw_part[d] = id[keys[d]];
  return out;
}

// The material recipe: a JSON file (by its ending), else a built-in name.
MaterialRecipe loadRecipe(const std::string& materials) {
  if (materials.size() > 5 && materials.compare(materials.size() - 5, 5, ".json") == 0) {
    const std::vector<uint8_t> text = readFile(materials);
    return parseRecipeJson(std::string(text.begin(), text.end()), materials);
  }
  return builtinRecipe(materials);
}

// The baked channels of each splat (docs/formats/spl2.md attrs).
struct Channels {
  std::vector<float> ao;       // ambient occlusion, 0..1
  std::vector<int> emission;   // 0..15
  std::vector<uint8_t> parts;  // part id
};

// The SPL2 blocks: core rows first, then shell rows, with the core's axes scaled to its visible disc.
void fillBlocks(Spl2Hull& h, const std::vector<Splat>& splats, size_t n_core, const Channels& ch,
                uint32_t seed) {
  h.core.resize(n_core);
  h.shell.resize(splats.size() - n_core);
  for (size_t i = 0; i < splats.size(); ++i) {
    const Splat& s = splats[i];
    const bool core = i < n_core;
    Spl2Block& b = core ? h.core : h.shell;
    const size_t k = core ? i : i - n_core;
    const float radius = core ? spl2CoreRadius(s.opacity) : 1.0f;
    b.pos[k] = s.pos;
    b.ax0[k] = s.t0 * (3.0f * s.s0 * radius);
    b.ax1[k] = s.t1 * (3.0f * s.s1 * radius);
    b.normal[k] = s.normal;
    b.color[k] = s.color;
    b.opacity[k] = s.opacity;
    b.attrs[k] = {static_cast<float>(std::lround(std::clamp(ch.ao[i], 0.0f, 1.0f) * 255.0f)),
                  static_cast<float>(ch.parts[i] * 16 + ch.emission[i]), 0.0f,
                  static_cast<float>(hash32(seed * 0x9e3779b9U + static_cast<uint32_t>(i)) & 255u)};
  }
}

// The meta sidecar's named points and their axes (each node's +z), in the hull frame.
void addNamedPoints(nlohmann::json& meta, const SourceMesh& src, const std::string& point_words) {
  nlohmann::json points = nlohmann::json::object(), axes = nlohmann::json::object();
  // Alternatives separated by '|', each matched as a case-insensitive substring of the node name.
  auto lower = [](std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  };
  std::vector<std::string> words;
  for (size_t at = 0; at <= point_words.size();) {
    const size_t bar = std::min(point_words.find('|', at), point_words.size());
    if (bar > at) words.push_back(lower(point_words.substr(at, bar - at)));
    at = bar + 1;
  }
  const GltfDocument& doc = src.model->document();
  for (size_t n = 0; n < doc.nodes.size(); ++n) {
    const std::string& name = doc.nodes[n].name;
    const std::string low = lower(name);
    if (name.empty() || std::none_of(words.begin(), words.end(),
                                     [&](const std::string& w) { return low.find(w) != std::string::npos; }))
      continue;
    const Mat4& world = src.node_to_model[n];
    const Vec3 p = transformPoint(world, Vec3{}) * src.scale + src.offset;
    const Vec3 z = normalize(world.linear() * Vec3{0, 0, 1});
    points[name] = nlohmann::json::parse(jsonVec(p));
    axes[name] = nlohmann::json::parse(jsonVec(z));
  }
  meta["points"] = points;
  meta["axes"] = axes;
}

// The meta sidecar's part boxes: each part's name, splat count and the box of its splats' centres.
nlohmann::json partBoxes(const std::vector<Splat>& splats, const std::vector<uint8_t>& parts,
                         const std::vector<std::string>& part_names) {
  nlohmann::json boxes = nlohmann::json::array();
  for (size_t p = 0; p < part_names.size(); ++p) {
    Vec3 bl{INFINITY, INFINITY, INFINITY}, bh = -bl;
    size_t count = 0;
    for (size_t i = 0; i < splats.size(); ++i)
      if (parts[i] == p) {
        const Vec3 q = splats[i].pos;
        bl = Vec3{std::min(bl.x, q.x), std::min(bl.y, q.y), std::min(bl.z, q.z)};
        bh = Vec3{std::max(bh.x, q.x), std::max(bh.y, q.y), std::max(bh.z, q.z)};
        ++count;
      }
    nlohmann::json box = {{"part", p}, {"name", part_names[p]}, {"splats", count}};
    if (count)
      box["min"] = nlohmann::json::parse(jsonVec(bl)), box["max"] = nlohmann::json::parse(jsonVec(bh));
    boxes.push_back(box);
  }
  return boxes;
}

// The report as the meta sidecar's "bake" object.
nlohmann::json reportJson(const BakeReport& rep) {
  nlohmann::json stats;
  stats["triangles"] = rep.triangles;
  stats["components"] = rep.components;
  stats["flipped_components"] = rep.flipped_components;
  stats["flipped_face_share"] = rep.flipped_face_share;
  stats["flipped_splat_share"] = rep.flipped_splat_share;
  stats["input_splats"] = rep.input_splats;
  stats["sampled"] = rep.sampled;
  stats["floaters"] = {
      {"distance", rep.floaters_distance},
      {"connectivity", rep.floaters_connectivity},
      {"silhouette", rep.floaters_silhouette},
      {"dataset", rep.dataset_pass ? nlohmann::json(rep.floaters_dataset) : nlohmann::json(nullptr)}};
  stats["distance_p50"] = rep.distance_p50;
  stats["distance_p99"] = rep.distance_p99;
  stats["belly_culled"] = rep.belly_culled;
  stats["over_budget"] = rep.over_budget;
  stats["core"] = rep.core;
  stats["shell"] = rep.shell;
  stats["emissive"] = rep.emissive;
  stats["parts"] = rep.parts;
  stats["chunks"] = rep.chunks;
  stats["bytes"] = rep.bytes;
  stats["seconds"] = rep.seconds;
  return stats;
}

// The meta sidecar but its report: normalisation, named points and axes, part boxes.
nlohmann::json bakeMeta(const std::string& model_path, const BakeOptions& opt, const SourceMesh& src,
                        const std::vector<Splat>& splats, const std::vector<uint8_t>& parts,
                        const std::vector<std::string>& part_names) {
  nlohmann::json meta;
  meta["format"] = "splatforge-hull-meta";
  meta["version"] = 1;
  meta["source"] = model_path;
  meta["cube"] = kCube;
  meta["normalization"] = {{"scale", src.scale},
                           {"offset", nlohmann::json::parse(jsonVec(src.offset))},
                           {"rule", "p_hull = p_source * scale + offset"}};
  meta["belt_deg"] = {opt.belt_min, opt.belt_max};
  meta["buckets"] = kSpl2Buckets;
  meta["camera_distance"] = kSpl2CameraDistance;
  addNamedPoints(meta, src, opt.points);
  meta["parts"] = partBoxes(splats, parts, part_names);
  return meta;
}

}  // namespace

BakeResult bakeHull(const std::string& model_path, const BakeOptions& opt) {
  checkBakeOptions(opt);
  const auto t_start = Clock::now();
  BakeResult result;
  BakeReport& rep = result.report;
  rep.source = model_path;
  StageClock stage(rep, opt);

  // 1. The posed model, flattened and normalised into the 1.6 cube.
  SourceMesh src = loadSourceMesh(model_path, opt.clip, opt.time);
  const float scale = src.scale;
  const Vec3 offset = src.offset;  // p_hull = p_source * scale + offset
  rep.triangles = src.mesh.faces.size();
  stage("normalise", std::to_string(rep.triangles) + " triangles, scale " + std::to_string(scale));

  // 2. Winding repair per connected component.
  const WindingReport wr = repairWinding(src.mesh);
  rep.components = wr.components, rep.flipped_components = wr.flipped_components;
  rep.flipped_face_share =
      wr.faces ? static_cast<double>(wr.flipped_faces) / static_cast<double>(wr.faces) : 0.0;
  const MeshBvh bvh(src.mesh);
  stage("winding", std::to_string(wr.flipped_components) + " of " + std::to_string(wr.components) +
                       " components flipped (" + std::to_string(wr.flipped_faces) + " faces)");

  // 3. The splats: a trained file, or samples of the surface.
  std::vector<Splat> splats;
  const std::vector<Vec3> cams = beltCameras(opt);
  const std::string splat_source = opt.cloud ? opt.cloud_name : opt.splats;
  if (!opt.splats.empty() || opt.cloud) {
    splats = cloudSplats(opt, scale, offset);
    rep.input_splats = splats.size();
    stage("splats", std::to_string(splats.size()) + " from " + splat_source);
  } else {
    SurfaceSamples samples = sampleSurface(src, cams, opt, model_path);
    splats = std::move(samples.splats);
    rep.sampled = true;
    rep.input_splats = splats.size();
    stage("splats", std::to_string(splats.size()) + " sampled on the surface (sigma " +
                        std::to_string(samples.sigma) + ")");
  }
  checkSplatValues(splats, splat_source.empty() ? model_path : splat_source);

  // 4. Normal snap to the nearest face; distances for the floater sign.
  const NormalSnap snap = snapNormals(splats, src.mesh, bvh, wr);
  rep.flipped_splat_share =
      splats.empty() ? 0.0 : static_cast<double>(snap.flipped) / static_cast<double>(splats.size());
  rep.distance_p50 = percentile(snap.distance, 0.5), rep.distance_p99 = percentile(snap.distance, 0.99);
  stage("normals", std::to_string(snap.flipped) +
                       " splats snapped to a face whose winding was repaired; distance p50 " +
                       std::to_string(rep.distance_p50) + " p99 " + std::to_string(rep.distance_p99));

  // 5. Floaters: far from the mesh, detached from the main component, sticking out of a silhouette, on
  // background in a training view.
  const float link_radius = removeFloaters(splats, snap.distance, src.mesh, bvh, opt, rep);
  stage("floaters",
        std::to_string(rep.floaters_distance) + " by distance (> " + std::to_string(opt.floater_distance) +
            "), " + std::to_string(rep.floaters_connectivity) + " detached (link radius " +
            std::to_string(link_radius) + "), " + std::to_string(rep.floaters_silhouette) +
            " outside a silhouette" +
            (rep.dataset_pass
                 ? ", " + std::to_string(rep.floaters_dataset) + " on background in a training view"
                 : std::string(", no training views (the dataset pass did not run)")));

  // 6. Belly cull, then the budget by importance (opacity x area of the two main axes).
  rep.belly_culled =
      keepIf(splats, [&](size_t i) { return facesBelt(cams, splats[i].pos, splats[i].normal); });
  rep.over_budget = keepMostImportant(splats, opt.budget);
  if (splats.empty())
    throw Error(model_path + ": no splat left after the floater cleanup and the belly cull");
  stage("belly", std::to_string(rep.belly_culled) + " facing no camera of the belt " +
                     std::to_string(opt.belt_min) + "-" + std::to_string(opt.belt_max) + " deg; " +
                     std::to_string(rep.over_budget) + " over the budget");

  // 7. Core / shell split; the core in importance order so that LOD is one number.
  const size_t n_core = orderCoreFirst(splats, opt.core_opacity);
  rep.core = n_core, rep.shell = splats.size() - n_core;
  const std::vector<Vec3> centres = positionsOf(splats);
  stage("split", std::to_string(rep.core) + " core, " + std::to_string(rep.shell) + " shell (opacity > " +
                     std::to_string(opt.core_opacity) + ")");

  // 8. Channels: ambient occlusion, emission by rarity, part id.
  std::vector<Vec3> normals(splats.size()), colors(splats.size());
  for (size_t i = 0; i < splats.size(); ++i) normals[i] = splats[i].normal, colors[i] = splats[i].color;
  Channels ch;
  ch.ao = ambientOcclusion(bvh, centres, normals, opt.ao_rays, opt.ao_distance, opt.seed);
  ch.emission = emissionLevels(colors, opt.emission_threshold, rep.emissive);
  const PartTable parts = groupParts(src);
  rep.parts = parts.part_names.size();
  ch.parts.resize(splats.size());
  for (size_t i = 0; i < splats.size(); ++i)
    ch.parts[i] = static_cast<uint8_t>(parts.draw_part[src.face_draw[splats[i].face]]);
  stage("channels", "ao " + std::to_string(opt.ao_rays) + " rays within " + std::to_string(opt.ao_distance) +
                        "; " + std::to_string(rep.emissive) + " emissive; " + std::to_string(rep.parts) +
                        " parts");

  // 9. Materials and chunks.
  const MaterialRecipe recipe = loadRecipe(opt.materials);
  const float link = std::max(3.0f * medianNearestNeighbour(centres), 1e-4f);
  const std::vector<uint8_t> materials = classifyMaterials(colors, centres, recipe, link, 2);
  std::vector<float> areas(splats.size());
  for (size_t i = 0; i < splats.size(); ++i)
    areas[i] = std::numbers::pi_v<float> * splats[i].s0 * splats[i].s1;
  ChunkOptions copt;
  copt.target_size = opt.chunk_size;
  copt.seed = opt.seed;
  copt.max_chunks = kSpl2MaxChunks;
  const ChunkResult chunks = buildChunks(centres, areas, materials, ch.parts, link, copt);
  rep.chunks = static_cast<size_t>(chunks.chunk_count);
  stage("chunks", std::to_string(rep.chunks) + " chunks (about " + std::to_string(opt.chunk_size) +
                      " splats each), recipe '" + recipe.name + "'");

  // 10. The file: blocks, orders, CHNK.
  Spl2Hull& h = result.hull;
  fillBlocks(h, splats, n_core, ch, opt.seed);
  h.orders = spl2ShellOrders(h.shell.pos, kSpl2Buckets, 0.5f * (opt.belt_min + opt.belt_max));
  h.has_chunks = true;
  h.chunk_of = chunks.chunk_of;
  h.material_of = materials;
  spl2ComputeChunkTable(h);
  rep.bytes = encodeSpl2(h).size();
  stage("orders", std::to_string(kSpl2Buckets) + " shell orders");

  // 11. The meta sidecar: normalisation, named points and axes, part boxes, the report.
  nlohmann::json meta = bakeMeta(model_path, opt, src, splats, ch.parts, parts.part_names);
  rep.seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
  meta["bake"] = reportJson(rep);
  result.meta_json = meta.dump(2) + "\n";
  return result;
}

}  // namespace sf::hull
