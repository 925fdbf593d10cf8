#include "hull/mesh_query.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "core/geometry.h"
#include "core/parallel.h"
#include "core/random.h"

namespace sf::hull {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

inline Vec3 vmin(Vec3 a, Vec3 b) {
  return {std::min(a.x, b.x), std::min(a.y, b.y), std::min(a.z, b.z)};
}
inline Vec3 vmax(Vec3 a, Vec3 b) {
  return {std::max(a.x, b.x), std::max(a.y, b.y), std::max(a.z, b.z)};
}

// Half the surface area of a box (the SAH only compares them).
inline float halfArea(Vec3 lo, Vec3 hi) {
  const Vec3 d = hi - lo;
  return d.x * d.y + d.y * d.z + d.z * d.x;
}

inline float distance2(Vec3 a, Vec3 b) {
  return dot(a - b, a - b);
}

// Moller-Trumbore, two-sided, with the barycentric tolerance. Writes t (any sign) on a crossing; a NaN t
// (from a near-zero determinant) fails every range test of the callers.
inline bool rayTriangle(Vec3 o, Vec3 d, Vec3 a, Vec3 b, Vec3 c, float* t) {
  constexpr float tol = kRayBarycentricTolerance;
  const Vec3 e1 = b - a, e2 = c - a;
  const Vec3 pv = cross(d, e2);
  const float det = dot(e1, pv);
  if (det == 0) return false;
  const float inv = 1.0f / det;
  const Vec3 s = o - a;
  const float u = dot(s, pv) * inv;
  if (!(u >= -tol && u <= 1 + tol)) return false;
  const Vec3 q = cross(s, e1);
  const float v = dot(d, q) * inv;
  if (!(v >= -tol && u + v <= 1 + tol)) return false;
  *t = dot(e2, q) * inv;
  return true;
}

// A ray prepared for slab tests. Zero (and denormal) direction components get a huge finite inverse, so that
// (bound - origin) * inverse is never 0 * inf.
struct RayPrep {
  Vec3 o, inv;
  RayPrep(Vec3 origin, Vec3 dir) : o(origin) {
    for (int k = 0; k < 3; ++k)
      inv[k] = std::abs(dir[k]) > 1e-30f ? 1.0f / dir[k] : std::copysign(1e30f, dir[k]);
  }
};

// Slab test against [t_min, t_max]; the far distance is widened by 1 + 2 gamma(3) (PBRT 6.8.2) so that
// rounding never rejects a box the ray touches. Writes the entry distance.
inline bool boxHit(Vec3 lo, Vec3 hi, const RayPrep& r, float t_min, float t_max, float* t_enter) {
  constexpr float kRobust = 1.0f + 2.0f * (3.0f * 0x1p-24f) / (1.0f - 3.0f * 0x1p-24f);
  float t0 = t_min, t1 = t_max;
  for (int k = 0; k < 3; ++k) {
    const float a = (lo[k] - r.o[k]) * r.inv[k], b = (hi[k] - r.o[k]) * r.inv[k];
    t0 = std::max(t0, std::min(a, b));
    t1 = std::min(t1, std::max(a, b) * kRobust);
  }
  *t_enter = t0;
  return t0 <= t1;
}

inline float boxDistance2(Vec3 lo, Vec3 hi, Vec3 p) {
  float d2 = 0;
  for (int k = 0; k < 3; ++k) {
    const float d = std::max({lo[k] - p[k], 0.0f, p[k] - hi[k]});
    d2 += d * d;
  }
  return d2;
}

// Traversal stacks: the build falls back to median splits below kMaxSahDepth, so no path is longer than
// kMaxSahDepth + 32 and a stack never holds more than that plus one entry.
constexpr uint32_t kMaxSahDepth = 64;
constexpr size_t kStackSize = 128;
constexpr int kBins = 16;
constexpr uint32_t kLeafSize = 4;

// SAH bin of a centre coordinate; a non-finite one (a NaN vertex) goes to bin 0 rather than into a cast.
inline int binIndex(float c, float lo, float scale) {
  const float x = (c - lo) * scale;
  if (!(x >= 0)) return 0;
  return x < kBins ? static_cast<int>(x) : kBins - 1;
}

// Union-find whose root is always the lowest index of its set, so every labelling derived from it is
// independent of the order of the unions.
class DisjointSets {
 public:
  explicit DisjointSets(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), uint32_t{0}); }
  uint32_t find(uint32_t i) {
    while (parent_[i] != i) {
      parent_[i] = parent_[parent_[i]];
      i = parent_[i];
    }
    return i;
  }
  void unite(uint32_t a, uint32_t b) {
    a = find(a);
    b = find(b);
    if (a < b) parent_[b] = a;
    if (b < a) parent_[a] = b;
  }

 private:
  std::vector<uint32_t> parent_;
};

// Points binned in cubic cells of side `cell` from `origin`; cell coordinates are clamped to [0, kMaxCoord],
// which keeps every pair of points within one cell of each other within one cell coordinate of each other.
class PointGrid {
 public:
  static constexpr int64_t kMaxCoord = (int64_t{1} << 21) - 1;

  PointGrid(std::span<const Vec3> points, double cell, Vec3 origin) : cell_(cell), origin_(origin) {
    std::vector<std::pair<uint64_t, uint32_t>> keyed(points.size());
    for (size_t i = 0; i < points.size(); ++i) {
      const auto c = coords(points[i]);
      keyed[i] = {key(c[0], c[1], c[2]), static_cast<uint32_t>(i)};
    }
    std::sort(keyed.begin(), keyed.end());
    order_.resize(keyed.size());
    ranges_.reserve(keyed.size());
    for (size_t i = 0; i < keyed.size();) {
      size_t j = i;
      while (j < keyed.size() && keyed[j].first == keyed[i].first) {
        order_[j] = keyed[j].second;
        ++j;
      }
      ranges_.emplace(keyed[i].first, std::pair{static_cast<uint32_t>(i), static_cast<uint32_t>(j)});
      i = j;
    }
  }

  double cell() const { return cell_; }
  size_t occupiedCells() const { return ranges_.size(); }
  // Lower corner of cell coordinate c along axis k.
  double cellStart(int k, int64_t c) const { return double{origin_[k]} + static_cast<double>(c) * cell_; }

  std::array<int64_t, 3> coords(Vec3 p) const {
    std::array<int64_t, 3> c{};
    for (int k = 0; k < 3; ++k) {
      double v = std::floor((double{p[k]} - double{origin_[k]}) / cell_);
      if (!(v >= 0)) v = 0;  // NaN included
      if (v > static_cast<double>(kMaxCoord)) v = static_cast<double>(kMaxCoord);
      c[k] = static_cast<int64_t>(v);
    }
    return c;
  }

  // Indices of the points in cell (x, y, z), ascending.
  std::span<const uint32_t> cellPoints(int64_t x, int64_t y, int64_t z) const {
    if (x < 0 || y < 0 || z < 0 || x > kMaxCoord || y > kMaxCoord || z > kMaxCoord) return {};
    const auto it = ranges_.find(key(x, y, z));
    if (it == ranges_.end()) return {};
    return std::span<const uint32_t>(order_).subspan(it->second.first, it->second.second - it->second.first);
  }

 private:
  static uint64_t key(int64_t x, int64_t y, int64_t z) {
    return (static_cast<uint64_t>(x) << 42) | (static_cast<uint64_t>(y) << 21) | static_cast<uint64_t>(z);
  }

  double cell_;
  Vec3 origin_;
  std::vector<uint32_t> order_;
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> ranges_;
};

void pointBounds(std::span<const Vec3> points, Vec3* lo, Vec3* hi) {
  *lo = *hi = points[0];
  for (const Vec3& p : points) {
    *lo = vmin(*lo, p);
    *hi = vmax(*hi, p);
  }
}

}  // namespace

Vec3 triangleNormal(const TriMesh& mesh, size_t f) {
  const auto& face = mesh.faces[f];
  const Vec3 a = mesh.positions[face[0]];
  return cross(mesh.positions[face[1]] - a, mesh.positions[face[2]] - a);
}

float triangleArea(const TriMesh& mesh, size_t f) {
  return 0.5f * length(triangleNormal(mesh, f));
}

Vec3 triangleCentre(const TriMesh& mesh, size_t f) {
  const auto& face = mesh.faces[f];
  return (mesh.positions[face[0]] + mesh.positions[face[1]] + mesh.positions[face[2]]) / 3.0f;
}

std::optional<float> intersectTriangle(Vec3 origin, Vec3 dir, Vec3 a, Vec3 b, Vec3 c) {
  float t = 0;
  if (!rayTriangle(origin, dir, a, b, c, &t) || std::isnan(t)) return std::nullopt;
  return t;
}

MeshBvh::MeshBvh(const TriMesh& mesh) {
  const size_t n = mesh.faces.size();
  assert(n < (size_t{1} << 32));
  if (n == 0) return;
  // Triangle boxes, padded by the reach of the barycentric tolerance so that every hit the ray test accepts
  // lies inside its leaf's box; centres of the unpadded boxes.
  std::vector<Vec3> lo(n), hi(n), centre(n);
  for (size_t f = 0; f < n; ++f) {
    assert(std::all_of(mesh.faces[f].begin(), mesh.faces[f].end(),
                       [&](uint32_t v) { return v < mesh.positions.size(); }));
    const Vec3 a = mesh.positions[mesh.faces[f][0]], b = mesh.positions[mesh.faces[f][1]],
               c = mesh.positions[mesh.faces[f][2]];
    const Vec3 l = vmin(a, vmin(b, c)), h = vmax(a, vmax(b, c));
    const Vec3 ext = h - l;
    const float pad = 4 * kRayBarycentricTolerance * (ext.x + ext.y + ext.z);
    lo[f] = l - Vec3{pad, pad, pad};
    hi[f] = h + Vec3{pad, pad, pad};
    centre[f] = (l + h) * 0.5f;
  }
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), uint32_t{0});

  struct Task {
    uint32_t node, begin, end, depth;
  };
  std::vector<Task> tasks{{0, 0, static_cast<uint32_t>(n), 0}};
  nodes_.reserve(2 * (n / kLeafSize) + 2);
  nodes_.emplace_back();
  while (!tasks.empty()) {
    const Task task = tasks.back();
    tasks.pop_back();
    Vec3 blo = lo[order[task.begin]], bhi = hi[order[task.begin]];
    Vec3 clo = centre[order[task.begin]], chi = clo;
    for (uint32_t i = task.begin; i < task.end; ++i) {
      const uint32_t f = order[i];
      blo = vmin(blo, lo[f]);
      bhi = vmax(bhi, hi[f]);
      clo = vmin(clo, centre[f]);
      chi = vmax(chi, centre[f]);
    }
    nodes_[task.node].lo = blo;
    nodes_[task.node].hi = bhi;
    const uint32_t count = task.end - task.begin;
    if (count <= kLeafSize) {
      nodes_[task.node].first = task.begin;
      nodes_[task.node].count = count;
      continue;
    }

    // Binned SAH over the three axes; an axis whose centres all coincide has no split.
    int best_axis = -1, best_split = 0;
    float best_cost = kInf;
    const Vec3 cext = chi - clo;
    if (task.depth < kMaxSahDepth) {
      for (int axis = 0; axis < 3; ++axis) {
        const float scale = kBins / cext[axis];
        if (!(cext[axis] > 0) || !std::isfinite(scale)) continue;
        const auto binOf = [&](uint32_t f) { return binIndex(centre[f][axis], clo[axis], scale); };
        uint32_t bin_count[kBins] = {};
        Vec3 bin_lo[kBins], bin_hi[kBins];
        for (int b = 0; b < kBins; ++b)
          bin_lo[b] = Vec3{kInf, kInf, kInf}, bin_hi[b] = Vec3{-kInf, -kInf, -kInf};
        for (uint32_t i = task.begin; i < task.end; ++i) {
          const uint32_t f = order[i];
          const int b = binOf(f);
          ++bin_count[b];
          bin_lo[b] = vmin(bin_lo[b], lo[f]);
          bin_hi[b] = vmax(bin_hi[b], hi[f]);
        }
        // right_cost[s]: area * count of bins [s, kBins).
        float right_cost[kBins] = {};
        Vec3 rlo{kInf, kInf, kInf}, rhi{-kInf, -kInf, -kInf};
        uint32_t rcount = 0;
        for (int b = kBins - 1; b > 0; --b) {
          rlo = vmin(rlo, bin_lo[b]);
          rhi = vmax(rhi, bin_hi[b]);
          rcount += bin_count[b];
          right_cost[b] = rcount > 0 ? halfArea(rlo, rhi) * static_cast<float>(rcount) : 0;
        }
        Vec3 llo{kInf, kInf, kInf}, lhi{-kInf, -kInf, -kInf};
        uint32_t lcount = 0;
        for (int s = 1; s < kBins; ++s) {
          lcount += bin_count[s - 1];
          llo = vmin(llo, bin_lo[s - 1]);
          lhi = vmax(lhi, bin_hi[s - 1]);
          if (lcount == 0 || lcount == count) continue;
          const float cost = halfArea(llo, lhi) * static_cast<float>(lcount) + right_cost[s];
          if (cost < best_cost) best_cost = cost, best_axis = axis, best_split = s;
        }
      }
    }
    uint32_t mid = 0;
    if (best_axis >= 0) {
      const int axis = best_axis;
      const float scale = kBins / cext[axis];
      const auto it = std::partition(order.begin() + task.begin, order.begin() + task.end, [&](uint32_t f) {
        return binIndex(centre[f][axis], clo[axis], scale) < best_split;
      });
      mid = static_cast<uint32_t>(it - order.begin());
    } else {
      // Median split (coincident centres, or too deep): by centre along the widest axis, then by face index.
      const int axis = cext.x >= cext.y && cext.x >= cext.z ? 0 : (cext.y >= cext.z ? 1 : 2);
      mid = task.begin + count / 2;
      std::nth_element(order.begin() + task.begin, order.begin() + mid, order.begin() + task.end,
                       [&](uint32_t a, uint32_t b) {
                         return centre[a][axis] < centre[b][axis] ||
                                (centre[a][axis] == centre[b][axis] && a < b);
                       });
    }
    assert(mid > task.begin && mid < task.end);
    const auto left = static_cast<uint32_t>(nodes_.size());
    nodes_.emplace_back();
    nodes_.emplace_back();
    nodes_[task.node].first = left;
    nodes_[task.node].count = 0;
    tasks.push_back({left + 1, mid, task.end, task.depth + 1});
    tasks.push_back({left, task.begin, mid, task.depth + 1});
  }

  tris_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& face = mesh.faces[order[i]];
    tris_[i] = {mesh.positions[face[0]], mesh.positions[face[1]], mesh.positions[face[2]], order[i]};
  }
}

MeshBvh::Closest MeshBvh::closest(Vec3 p) const {
  Closest best;
  best.point = p;
  best.distance = kInf;
  if (nodes_.empty()) return best;
  float best_d2 = kInf;
  std::pair<uint32_t, float> stack[kStackSize];
  size_t top = 0;
  stack[top++] = {0, boxDistance2(nodes_[0].lo, nodes_[0].hi, p)};
  while (top > 0) {
    const auto [index, d2] = stack[--top];
    if (d2 > best_d2) continue;
    const Node& node = nodes_[index];
    if (node.count > 0) {
      for (uint32_t i = node.first; i < node.first + node.count; ++i) {
        const Tri& tri = tris_[i];
        const Vec3 q = closestPointOnTriangle(p, tri.a, tri.b, tri.c);
        const float q2 = distance2(p, q);
        if (q2 < best_d2) {
          best_d2 = q2;
          best.face = tri.face;
          best.point = q;
        }
      }
      continue;
    }
    const Node& l = nodes_[node.first];
    const Node& r = nodes_[node.first + 1];
    const float dl = boxDistance2(l.lo, l.hi, p), dr = boxDistance2(r.lo, r.hi, p);
    assert(top + 2 <= kStackSize);
    // The nearer child is popped first.
    if (dl <= dr) {
      if (dr <= best_d2) stack[top++] = {node.first + 1, dr};
      if (dl <= best_d2) stack[top++] = {node.first, dl};
    } else {
      if (dl <= best_d2) stack[top++] = {node.first, dl};
      if (dr <= best_d2) stack[top++] = {node.first + 1, dr};
    }
  }
  best.distance = std::sqrt(best_d2);
  return best;
}

std::optional<MeshBvh::Hit> MeshBvh::intersect(Vec3 origin, Vec3 dir, float t_min, float t_max) const {
  if (nodes_.empty() || !(t_min <= t_max)) return std::nullopt;
  const RayPrep ray(origin, dir);
  float best_t = t_max;
  bool found = false;
  uint32_t best_face = 0;
  std::pair<uint32_t, float> stack[kStackSize];
  size_t top = 0;
  float t_enter = 0;
  if (!boxHit(nodes_[0].lo, nodes_[0].hi, ray, t_min, t_max, &t_enter)) return std::nullopt;
  stack[top++] = {0, t_enter};
  while (top > 0) {
    const auto [index, t0] = stack[--top];
    if (t0 > best_t) continue;
    const Node& node = nodes_[index];
    if (node.count > 0) {
      for (uint32_t i = node.first; i < node.first + node.count; ++i) {
        const Tri& tri = tris_[i];
        float t = 0;
        if (rayTriangle(origin, dir, tri.a, tri.b, tri.c, &t) && t >= t_min && t <= best_t &&
            (!found || t < best_t)) {
          best_t = t;
          best_face = tri.face;
          found = true;
        }
      }
      continue;
    }
    const Node& l = nodes_[node.first];
    const Node& r = nodes_[node.first + 1];
    float tl = 0, tr = 0;
    const bool hl = boxHit(l.lo, l.hi, ray, t_min, best_t, &tl);
    const bool hr = boxHit(r.lo, r.hi, ray, t_min, best_t, &tr);
    assert(top + 2 <= kStackSize);
    if (hl && hr) {
      if (tl <= tr) {
        stack[top++] = {node.first + 1, tr};
        stack[top++] = {node.first, tl};
      } else {
        stack[top++] = {node.first, tl};
        stack[top++] = {node.first + 1, tr};
      }
    } else if (hl) {
      stack[top++] = {node.first, tl};
    } else if (hr) {
      stack[top++] = {node.first + 1, tr};
    }
  }
  if (!found) return std::nullopt;
  return Hit{best_face, best_t};
}

bool MeshBvh::occluded(Vec3 origin, Vec3 dir, float t_min, float t_max) const {
  if (nodes_.empty() || !(t_min <= t_max)) return false;
  const RayPrep ray(origin, dir);
  std::pair<uint32_t, float> stack[kStackSize];
  size_t top = 0;
  float t_enter = 0;
  if (!boxHit(nodes_[0].lo, nodes_[0].hi, ray, t_min, t_max, &t_enter)) return false;
  stack[top++] = {0, t_enter};
  while (top > 0) {
    const uint32_t index = stack[--top].first;
    const Node& node = nodes_[index];
    if (node.count > 0) {
      for (uint32_t i = node.first; i < node.first + node.count; ++i) {
        const Tri& tri = tris_[i];
        float t = 0;
        if (rayTriangle(origin, dir, tri.a, tri.b, tri.c, &t) && t >= t_min && t <= t_max) return true;
      }
      continue;
    }
    const Node& l = nodes_[node.first];
    const Node& r = nodes_[node.first + 1];
    float tl = 0, tr = 0;
    const bool hl = boxHit(l.lo, l.hi, ray, t_min, t_max, &tl);
    const bool hr = boxHit(r.lo, r.hi, ray, t_min, t_max, &tr);
    assert(top + 2 <= kStackSize);
    if (hl && hr) {
      if (tl <= tr) {
        stack[top++] = {node.first + 1, tr};
        stack[top++] = {node.first, tl};
      } else {
        stack[top++] = {node.first, tl};
        stack[top++] = {node.first + 1, tr};
      }
    } else if (hl) {
      stack[top++] = {node.first, tl};
    } else if (hr) {
      stack[top++] = {node.first + 1, tr};
    }
  }
  return false;
}

std::vector<uint32_t> faceComponents(const TriMesh& mesh, uint32_t* count) {
  // Weld: one id per distinct position (bit patterns, with -0 read as +0).
  const size_t nv = mesh.positions.size();
  std::vector<std::pair<std::array<uint32_t, 3>, uint32_t>> keyed(nv);
  for (size_t i = 0; i < nv; ++i) {
    std::array<uint32_t, 3> bits{};
    for (int k = 0; k < 3; ++k) {
      const float v = mesh.positions[i][k];
      bits[k] = std::bit_cast<uint32_t>(v == 0 ? 0.0f : v);
    }
    keyed[i] = {bits, static_cast<uint32_t>(i)};
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<uint32_t> weld(nv);
  for (size_t i = 0, id = 0; i < nv; ++i) {
    if (i > 0 && keyed[i].first != keyed[i - 1].first) ++id;
    weld[keyed[i].second] = static_cast<uint32_t>(id);
  }

  // Faces sharing a welded edge are linked.
  const size_t nf = mesh.faces.size();
  std::vector<std::pair<uint64_t, uint32_t>> edges;
  edges.reserve(3 * nf);
  for (size_t f = 0; f < nf; ++f) {
    for (int e = 0; e < 3; ++e) {
      assert(mesh.faces[f][e] < nv && mesh.faces[f][(e + 1) % 3] < nv);
      const uint32_t u = weld[mesh.faces[f][e]], v = weld[mesh.faces[f][(e + 1) % 3]];
      if (u == v) continue;
      edges.emplace_back((uint64_t{std::min(u, v)} << 32) | std::max(u, v), static_cast<uint32_t>(f));
    }
  }
  std::sort(edges.begin(), edges.end());
  DisjointSets sets(nf);
  for (size_t i = 1; i < edges.size(); ++i)
    if (edges[i].first == edges[i - 1].first) sets.unite(edges[i].second, edges[i - 1].second);

  // Roots are the lowest face of their component, so numbering the roots in face order numbers the
  // components by their first face.
  std::vector<uint32_t> component(nf);
  uint32_t components = 0;
  for (size_t f = 0; f < nf; ++f) {
    const uint32_t root = sets.find(static_cast<uint32_t>(f));
    component[f] = root == f ? components++ : component[root];
  }
  if (count) *count = components;
  return component;
}

WindingReport repairWinding(TriMesh& mesh) {
  WindingReport report;
  uint32_t count = 0;
  const std::vector<uint32_t> component = faceComponents(mesh, &count);
  const size_t nf = mesh.faces.size();
  report.components = count;
  report.faces = nf;

  struct DVec {
    double x, y, z;
  };
  const auto dvec = [](Vec3 v) { return DVec{v.x, v.y, v.z}; };
  const auto sub = [](DVec a, DVec b) { return DVec{a.x - b.x, a.y - b.y, a.z - b.z}; };
  const auto ddot = [](DVec a, DVec b) { return a.x * b.x + a.y * b.y + a.z * b.z; };
  const auto dcross = [](DVec a, DVec b) {
    return DVec{a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
  };
  // Twice-area normals and centres in double.
  std::vector<DVec> normal(nf), centre(nf);
  std::vector<double> area(nf);
  DVec weighted{0, 0, 0};
  double total_area = 0;
  for (size_t f = 0; f < nf; ++f) {
    const DVec a = dvec(mesh.positions[mesh.faces[f][0]]), b = dvec(mesh.positions[mesh.faces[f][1]]),
               c = dvec(mesh.positions[mesh.faces[f][2]]);
    normal[f] = dcross(sub(b, a), sub(c, a));
    area[f] = 0.5 * std::sqrt(ddot(normal[f], normal[f]));
    centre[f] = {(a.x + b.x + c.x) / 3, (a.y + b.y + c.y) / 3, (a.z + b.z + c.z) / 3};
    weighted = {weighted.x + area[f] * centre[f].x, weighted.y + area[f] * centre[f].y,
                weighted.z + area[f] * centre[f].z};
    total_area += area[f];
  }
  const DVec centroid = total_area > 0
                            ? DVec{weighted.x / total_area, weighted.y / total_area, weighted.z / total_area}
                            : DVec{0, 0, 0};

  // dot(unit normal, c - centroid) * area = dot(twice-area normal, c - centroid) / 2.
  std::vector<double> vote(count, 0.0);
  for (size_t f = 0; f < nf; ++f) vote[component[f]] += 0.5 * ddot(normal[f], sub(centre[f], centroid));
  double flipped_area = 0;
  report.face_flipped.assign(nf, 0);
  for (uint32_t c = 0; c < count; ++c) report.flipped_components += vote[c] < 0;
  for (size_t f = 0; f < nf; ++f) {
    if (!(vote[component[f]] < 0)) continue;
    std::swap(mesh.faces[f][1], mesh.faces[f][2]);
    report.face_flipped[f] = 1;
    ++report.flipped_faces;
    flipped_area += area[f];
  }
  report.flipped_area_share = total_area > 0 ? flipped_area / total_area : 0.0;
  return report;
}

std::vector<float> ambientOcclusion(const MeshBvh& bvh, std::span<const Vec3> points,
                                    std::span<const Vec3> normals, int rays, float max_dist, uint32_t seed) {
  assert(points.size() == normals.size());
  assert(rays >= 1);
  // Hammersley set: ((k + 0.5) / rays, radical inverse of k in base 2).
  std::vector<std::array<double, 2>> base(static_cast<size_t>(rays));
  for (uint32_t k = 0; k < base.size(); ++k) {
    uint32_t bits = k;
    bits = ((bits & 0x55555555u) << 1) | ((bits >> 1) & 0x55555555u);
    bits = ((bits & 0x33333333u) << 2) | ((bits >> 2) & 0x33333333u);
    bits = ((bits & 0x0f0f0f0fu) << 4) | ((bits >> 4) & 0x0f0f0f0fu);
    bits = ((bits & 0x00ff00ffu) << 8) | ((bits >> 8) & 0x00ff00ffu);
    bits = (bits << 16) | (bits >> 16);
    base[k] = {(k + 0.5) / rays, bits * 0x1p-32};
  }
  const uint64_t seed_hash = splitmix64(seed);
  std::vector<float> open(points.size());
  parallelForRange(points.size(), 16, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      assert(dot(normals[i], normals[i]) > 0);
      const Vec3 n = normalize(normals[i]);
      // Orthonormal frame around n (Duff et al. 2017).
      const float sign = std::copysign(1.0f, n.z);
      const float a = -1.0f / (sign + n.z), b = n.x * n.y * a;
      const Vec3 tx{1 + sign * n.x * n.x * a, sign * b, -sign * n.x};
      const Vec3 ty{b, sign + n.y * n.y * a, -n.y};
      // Cranley-Patterson rotation of the set for this point.
      const uint64_t h = splitmix64(seed_hash ^ i);
      const double ox = static_cast<double>(h >> 40) * 0x1p-24,
                   oy = static_cast<double>((h >> 16) & 0xffffff) * 0x1p-24;
      const Vec3 origin = points[i] + n * 1e-3f;
      int unoccluded = 0;
      for (const auto& [s0, s1] : base) {
        double u1 = s0 + ox, u2 = s1 + oy;
        if (u1 >= 1) u1 -= 1;
        if (u2 >= 1) u2 -= 1;
        const double r = std::sqrt(u1), phi = 2 * std::numbers::pi * u2;
        const Vec3 dir = tx * static_cast<float>(r * std::cos(phi)) +
                         ty * static_cast<float>(r * std::sin(phi)) +
                         n * static_cast<float>(std::sqrt(std::max(0.0, 1 - u1)));
        unoccluded += !bvh.occluded(origin, dir, 0, max_dist);
      }
      open[i] = static_cast<float>(unoccluded) / static_cast<float>(rays);
    }
  });
  return open;
}

std::vector<float> distanceToMesh(const MeshBvh& bvh, std::span<const Vec3> points) {
  std::vector<float> distance(points.size());
  parallelForRange(points.size(), 64, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) distance[i] = bvh.closest(points[i]).distance;
  });
  return distance;
}

std::vector<uint8_t> mainComponent(std::span<const Vec3> points, float radius, float keep_fraction) {
  assert(radius > 0);
  std::vector<uint8_t> main(points.size(), 0);
  if (points.empty()) return main;
  Vec3 lo, hi;
  pointBounds(points, &lo, &hi);
  const PointGrid grid(points, radius, lo);
  const float r2 = radius * radius;
  DisjointSets sets(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    const auto c = grid.coords(points[i]);
    for (int64_t dz = -1; dz <= 1; ++dz)
      for (int64_t dy = -1; dy <= 1; ++dy)
        for (int64_t dx = -1; dx <= 1; ++dx)
          for (uint32_t j : grid.cellPoints(c[0] + dx, c[1] + dy, c[2] + dz)) {
            if (j <= i || distance2(points[i], points[j]) >= r2) continue;
            sets.unite(static_cast<uint32_t>(i), j);
          }
  }
  // Roots are the lowest index of their component: the first root of the largest size wins ties.
  std::vector<uint32_t> size(points.size(), 0);
  for (size_t i = 0; i < points.size(); ++i) ++size[sets.find(static_cast<uint32_t>(i))];
  uint32_t best = 0;
  for (uint32_t i = 0; i < points.size(); ++i)
    if (size[i] > size[best]) best = i;
  for (size_t i = 0; i < points.size(); ++i) {
    const uint32_t root = sets.find(static_cast<uint32_t>(i));
    main[i] = root == best || (keep_fraction < 1 && static_cast<float>(size[root]) >=
                                                        keep_fraction * static_cast<float>(size[best]));
  }
  return main;
}

float medianNearestNeighbour(std::span<const Vec3> points) {
  const size_t n = points.size();
  if (n < 2) return 0;
  Vec3 lo, hi;
  pointBounds(points, &lo, &hi);
  const Vec3 ext = hi - lo;
  const double max_ext = std::max({ext.x, ext.y, ext.z});
  if (!(max_ext > 0)) return 0;
  // Cells of about one point each: start from the volume estimate and shrink while the occupied cells hold
  // many points (points on a surface or a curve). The floor keeps cell coordinates below the grid's clamp.
  const double min_cell = max_ext / double(1 << 20);
  double cell = std::max(min_cell, max_ext / std::cbrt(static_cast<double>(n)));
  std::optional<PointGrid> grid;
  for (int round = 0;; ++round) {
    grid.emplace(points, cell, lo);
    const double occupancy = static_cast<double>(n) / static_cast<double>(grid->occupiedCells());
    if (occupancy <= 8 || round == 3 || cell <= min_cell) break;
    cell = std::max(min_cell, cell * std::sqrt(2 / occupancy));
  }
  const size_t brute_force_cells = 8 * grid->occupiedCells() + 64;

  std::vector<double> nearest(n);
  parallelForRange(n, 64, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const Vec3 p = points[i];
      const auto c = grid->coords(p);
      double best = std::numeric_limits<double>::infinity();  // squared
      const auto consider = [&](uint32_t j) {
        if (j == i) return;
        const double dx = double{points[j].x} - p.x, dy = double{points[j].y} - p.y,
                     dz = double{points[j].z} - p.z;
        best = std::min(best, dx * dx + dy * dy + dz * dz);
      };
      for (int64_t r = 0;; ++r) {
        const auto side = static_cast<size_t>(2 * r + 1);
        if (side * side * side > brute_force_cells) {
          for (uint32_t j = 0; j < n; ++j) consider(j);
          break;
        }
        // Ring r: the cells at Chebyshev distance r from p's cell.
        for (int64_t dz = -r; dz <= r; ++dz)
          for (int64_t dy = -r; dy <= r; ++dy) {
            const bool full = dz == -r || dz == r || dy == -r || dy == r;
            for (int64_t dx = -r; dx <= r; dx += full || r == 0 ? 1 : 2 * r)
              for (uint32_t j : grid->cellPoints(c[0] + dx, c[1] + dy, c[2] + dz)) consider(j);
          }
        // Every point not yet seen lies outside the block of cells [c - r, c + r].
        double bound = std::numeric_limits<double>::infinity();
        for (int k = 0; k < 3; ++k) {
          bound = std::min(bound, double{p[k]} - grid->cellStart(k, c[k] - r));
          bound = std::min(bound, grid->cellStart(k, c[k] + r + 1) - double{p[k]});
        }
        if (bound > 0 && best <= bound * bound) break;
      }
      nearest[i] = std::sqrt(best);
    }
  });
  const size_t half = n / 2;
  std::nth_element(nearest.begin(), nearest.begin() + half, nearest.end());
  double median = nearest[half];
  if (n % 2 == 0) median = 0.5 * (median + *std::max_element(nearest.begin(), nearest.begin() + half));
  return static_cast<float>(median);
}

std::vector<uint16_t> silhouetteMisses(const MeshBvh& bvh, std::span<const Vec3> points,
                                       std::span<const float> elevations_deg, float camera_distance,
                                       float surface_tolerance) {
  constexpr int kAzimuths = 72;
  assert(elevations_deg.size() * kAzimuths <= 65535);
  std::vector<Vec3> cameras;
  cameras.reserve(elevations_deg.size() * kAzimuths);
  for (float elevation : elevations_deg) {
    const double el = elevation * std::numbers::pi / 180;
    for (int a = 0; a < kAzimuths; ++a) {
      const double az = a * 5 * std::numbers::pi / 180;
      cameras.push_back(Vec3{static_cast<float>(std::cos(el) * std::sin(az)),
                             static_cast<float>(std::sin(el)),
                             static_cast<float>(std::cos(el) * std::cos(az))} *
                        camera_distance);
    }
  }
  std::vector<uint16_t> misses(points.size(), 0);
  parallelForRange(points.size(), 8, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const Vec3 p = points[i];
      if (bvh.closest(p).distance <= surface_tolerance) continue;
      size_t count = 0;
      for (const Vec3& camera : cameras) count += !bvh.occluded(camera, p - camera, 0, kInf);
      misses[i] = static_cast<uint16_t>(count);
    }
  });
  return misses;
}

std::vector<uint8_t> datasetFloaters(std::span<const Vec3> points, std::span<const float> radii,
                                     std::span<const CoverageView> views) {
  if (points.size() != radii.size())
    throw Error("datasetFloaters: " + std::to_string(radii.size()) + " radii for " +
                std::to_string(points.size()) + " points");
  std::vector<uint8_t> flagged(points.size(), 0);
  std::vector<uint32_t> sat;  // summed-area table of covered pixels, (width + 1) x (height + 1)
  for (const CoverageView& v : views) {
    const size_t w = static_cast<size_t>(v.width), h = static_cast<size_t>(v.height);
    if (v.covered.size() != w * h)
      throw Error("datasetFloaters: a view's coverage holds " + std::to_string(v.covered.size()) +
                  " pixels, not " + std::to_string(w) + " x " + std::to_string(h));
    sat.assign((w + 1) * (h + 1), 0);
    for (size_t y = 0; y < h; ++y)
      for (size_t x = 0; x < w; ++x)
        sat[(y + 1) * (w + 1) + x + 1] = (v.covered[y * w + x] ? 1u : 0u) + sat[y * (w + 1) + x + 1] +
                                         sat[(y + 1) * (w + 1) + x] - sat[y * (w + 1) + x];
    parallelFor(points.size(), [&](size_t i) {
      if (flagged[i]) return;
      const Vec3 c = transformPoint(v.world_to_camera, points[i]);
      const float near = c.z - radii[i];  // the disc's nearest depth
      if (!(near > 0.2f)) return;
      const float u = v.fx * c.x / c.z + v.cx, t = v.fy * c.y / c.z + v.cy;
      // An upper bound of the disc's image: its radius at its nearest depth, widened by (|c| / z)^2 for the
      // stretch of a projection away from the image centre.
      const float off_axis = length(c) / c.z;
      const float r = std::max(v.fx, v.fy) * radii[i] / near * off_axis * off_axis;
      // Pixel p covers [p, p + 1): the square's first and last pixels.
      const float x0 = std::floor(u - r), x1 = std::floor(u + r), y0 = std::floor(t - r),
                  y1 = std::floor(t + r);
      if (!(x0 >= 0 && y0 >= 0 && x1 < static_cast<float>(w) && y1 < static_cast<float>(h))) return;
      const size_t a = static_cast<size_t>(x0), b = static_cast<size_t>(x1) + 1, d = static_cast<size_t>(y0),
                   e = static_cast<size_t>(y1) + 1;
      const uint32_t count =
          sat[e * (w + 1) + b] - sat[d * (w + 1) + b] - sat[e * (w + 1) + a] + sat[d * (w + 1) + a];
      if (count == 0) flagged[i] = 1;
    });
  }
  return flagged;
}

}  // namespace sf::hull
