// Mesh queries for the splat hulls (hull/mesh_query.h) against closed-form oracles: closest points and ray
// hits against brute force over every triangle, rays through shared edges and vertices of closed meshes,
// face components over welded vertices, winding repair of closed and open parts, ambient occlusion against
// the form factor of a box's opening, and the floater signs (distance, main component, median nearest
// neighbour against brute force; silhouette misses around a sphere).
#include "hull/mesh_query.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

namespace sf::hull {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct ThreadCount {
  explicit ThreadCount(const char* n) { setenv("SPLATFORGE_THREADS", n, 1); }
  ~ThreadCount() { unsetenv("SPLATFORGE_THREADS"); }
};

void append(TriMesh& dst, const TriMesh& src, bool flip = false) {
  const auto base = static_cast<uint32_t>(dst.positions.size());
  dst.positions.insert(dst.positions.end(), src.positions.begin(), src.positions.end());
  for (auto f : src.faces) {
    if (flip) std::swap(f[1], f[2]);
    dst.faces.push_back({f[0] + base, f[1] + base, f[2] + base});
  }
}

// Icosphere (shared vertices, outward winding) of `subdivisions` levels.
TriMesh icosphere(Vec3 centre, float radius, int subdivisions) {
  const float t = (1.0f + std::sqrt(5.0f)) / 2.0f;
  std::vector<Vec3> v = {{-1, t, 0},  {1, t, 0},  {-1, -t, 0}, {1, -t, 0}, {0, -1, t},  {0, 1, t},
                         {0, -1, -t}, {0, 1, -t}, {t, 0, -1},  {t, 0, 1},  {-t, 0, -1}, {-t, 0, 1}};
  for (Vec3& p : v) p = normalize(p);
  std::vector<std::array<uint32_t, 3>> f = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11},
                                            {1, 5, 9},  {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
                                            {3, 9, 4},  {3, 4, 2},  {3, 2, 6},   {3, 6, 8},  {3, 8, 9},
                                            {4, 9, 5},  {2, 4, 11}, {6, 2, 10},  {8, 6, 7},  {9, 8, 1}};
  for (int s = 0; s < subdivisions; ++s) {
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> mid;
    const auto midpoint = [&](uint32_t a, uint32_t b) {
      const auto key = std::minmax(a, b);
      const auto it = mid.find(key);
      if (it != mid.end()) return it->second;
      v.push_back(normalize(v[a] + v[b]));
      return mid[key] = static_cast<uint32_t>(v.size() - 1);
    };
    std::vector<std::array<uint32_t, 3>> next;
    for (const auto& [a, b, c] : f) {
      const uint32_t ab = midpoint(a, b), bc = midpoint(b, c), ca = midpoint(c, a);
      next.push_back({a, ab, ca});
      next.push_back({b, bc, ab});
      next.push_back({c, ca, bc});
      next.push_back({ab, bc, ca});
    }
    f = std::move(next);
  }
  TriMesh mesh;
  for (const Vec3& p : v) mesh.positions.push_back(centre + p * radius);
  mesh.faces = f;
  return mesh;
}

// Axis-aligned box, outward winding; with split_vertices each side has four vertices of its own (as glTF
// splits them at UV seams), else the eight corners are shared. open_top leaves out the +y side.
TriMesh box(Vec3 lo, Vec3 hi, bool split_vertices, bool open_top = false) {
  const auto corner = [&](int i) {
    return Vec3{i & 1 ? hi.x : lo.x, i & 2 ? hi.y : lo.y, i & 4 ? hi.z : lo.z};
  };
  // Each side: four corners counter-clockwise seen from outside.
  const int sides[6][4] = {{0, 4, 6, 2}, {1, 3, 7, 5}, {0, 1, 5, 4},
                           {2, 6, 7, 3}, {0, 2, 3, 1}, {4, 5, 7, 6}};
  TriMesh mesh;
  if (!split_vertices)
    for (int i = 0; i < 8; ++i) mesh.positions.push_back(corner(i));
  for (int s = 0; s < 6; ++s) {
    if (open_top && s == 3) continue;
    uint32_t q[4];
    for (int k = 0; k < 4; ++k) {
      if (split_vertices) {
        mesh.positions.push_back(corner(sides[s][k]));
        q[k] = static_cast<uint32_t>(mesh.positions.size() - 1);
      } else {
        q[k] = static_cast<uint32_t>(sides[s][k]);
      }
    }
    mesh.faces.push_back({q[0], q[1], q[2]});
    mesh.faces.push_back({q[0], q[2], q[3]});
  }
  return mesh;
}

Vec3 randomUnit(std::mt19937& rng) {
  std::normal_distribution<float> n(0, 1);
  for (;;) {
    const Vec3 v{n(rng), n(rng), n(rng)};
    if (dot(v, v) > 1e-6f) return normalize(v);
  }
}

// A jittered icosphere (closed) plus random and degenerate triangles.
TriMesh randomMesh(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  TriMesh mesh = icosphere({0.1f, -0.2f, 0.05f}, 1.0f, 3);
  for (Vec3& p : mesh.positions) p = p + Vec3{u(rng), u(rng), u(rng)} * 0.03f;
  TriMesh extra;
  for (int i = 0; i < 300; ++i) {
    const Vec3 c = Vec3{u(rng), u(rng), u(rng)} * 1.5f;
    const auto base = static_cast<uint32_t>(extra.positions.size());
    for (int k = 0; k < 3; ++k) extra.positions.push_back(c + Vec3{u(rng), u(rng), u(rng)} * 0.3f);
    extra.faces.push_back({base, base + 1, base + 2});
  }
  // Degenerate: collinear, two equal vertices, a point.
  const auto base = static_cast<uint32_t>(extra.positions.size());
  extra.positions.insert(extra.positions.end(), {{1.6f, 0, 0},
                                                 {1.8f, 0.1f, 0},
                                                 {2.0f, 0.2f, 0},  // collinear
                                                 {0, 1.7f, 0.3f},
                                                 {0, 1.7f, 0.3f},
                                                 {0.2f, 1.9f, 0.3f},
                                                 {-1.8f, -1.0f, 0.5f}});
  extra.faces.push_back({base, base + 1, base + 2});
  extra.faces.push_back({base + 2, base, base + 1});
  extra.faces.push_back({base + 3, base + 4, base + 5});
  extra.faces.push_back({base + 6, base + 6, base + 6});
  append(mesh, extra);
  return mesh;
}

Vec3 vertex(const TriMesh& m, size_t f, int k) {
  return m.positions[m.faces[f][static_cast<size_t>(k)]];
}

float bruteClosest(const TriMesh& m, Vec3 p) {
  float best = kInf;
  for (size_t f = 0; f < m.faces.size(); ++f)
    best = std::min(best,
                    length(p - closestPointOnTriangle(p, vertex(m, f, 0), vertex(m, f, 1), vertex(m, f, 2))));
  return best;
}

// Nearest t in [t_min, t_max] over every face (inf without a hit).
float bruteRay(const TriMesh& m, Vec3 o, Vec3 d, float t_min, float t_max) {
  float best = kInf;
  for (size_t f = 0; f < m.faces.size(); ++f) {
    const auto t = intersectTriangle(o, d, vertex(m, f, 0), vertex(m, f, 1), vertex(m, f, 2));
    if (t && *t >= t_min && *t <= t_max) best = std::min(best, *t);
  }
  return best;
}

TEST(MeshQuery, ClosestPointOnTriangleIsOnItAndNearest) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int trial = 0; trial < 300; ++trial) {
    Vec3 a{u(rng), u(rng), u(rng)}, b{u(rng), u(rng), u(rng)}, c{u(rng), u(rng), u(rng)};
    if (trial % 10 == 0) c = a + (b - a) * 0.3f;  // collinear
    if (trial % 10 == 1) c = b;
    const Vec3 p = Vec3{u(rng), u(rng), u(rng)} * 2.0f;
    const Vec3 q = closestPointOnTriangle(p, a, b, c);
    const float dq = length(p - q);
    // q lies on the triangle: its distance to the triangle's samples' hull is checked through the plane and
    // barycentric coordinates (for a proper triangle).
    const Vec3 n = cross(b - a, c - a);
    if (length(n) > 1e-3f) {
      EXPECT_NEAR(dot(q - a, normalize(n)), 0.0f, 1e-5f);
      const float area = length(n);
      const float wa = dot(cross(b - q, c - q), n) / (area * area),
                  wb = dot(cross(c - q, a - q), n) / (area * area);
      EXPECT_GE(wa, -1e-4f);
      EXPECT_GE(wb, -1e-4f);
      EXPECT_GE(1 - wa - wb, -1e-4f);
    }
    // No sample of the triangle is nearer.
    constexpr int kSteps = 40;
    for (int i = 0; i <= kSteps; ++i)
      for (int j = 0; i + j <= kSteps; ++j) {
        const float s = static_cast<float>(i) / kSteps, t = static_cast<float>(j) / kSteps;
        const Vec3 x = a + (b - a) * s + (c - a) * t;
        ASSERT_LE(dq, length(p - x) + 1e-5f) << "trial " << trial;
      }
  }
}

TEST(MeshQuery, ClosestMatchesBruteForce) {
  const TriMesh mesh = randomMesh(1);
  const MeshBvh bvh(mesh);
  EXPECT_EQ(bvh.faceCount(), mesh.faces.size());
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-2.5f, 2.5f);
  for (int i = 0; i < 3000; ++i) {
    Vec3 p{u(rng), u(rng), u(rng)};
    if (i % 3 == 0)
      p = mesh.positions[static_cast<size_t>(i) % mesh.positions.size()] + randomUnit(rng) * 0.01f;
    const MeshBvh::Closest c = bvh.closest(p);
    const float expected = bruteClosest(mesh, p);
    ASSERT_NEAR(c.distance, expected, 1e-6f * (1 + expected)) << "point " << i;
    ASSERT_LT(c.face, mesh.faces.size());
    const Vec3 q =
        closestPointOnTriangle(p, vertex(mesh, c.face, 0), vertex(mesh, c.face, 1), vertex(mesh, c.face, 2));
    EXPECT_EQ(q.x, c.point.x);
    EXPECT_EQ(q.y, c.point.y);
    EXPECT_EQ(q.z, c.point.z);
    EXPECT_NEAR(length(p - c.point), c.distance, 1e-6f);
  }
  const MeshBvh empty(TriMesh{});
  EXPECT_EQ(empty.closest({1, 2, 3}).distance, kInf);
  EXPECT_FALSE(empty.intersect({0, 0, 0}, {1, 0, 0}, 0, kInf));
  EXPECT_FALSE(empty.occluded({0, 0, 0}, {1, 0, 0}, 0, kInf));
}

TEST(MeshQuery, IntersectAndOccludedMatchBruteForce) {
  const TriMesh mesh = randomMesh(3);
  const MeshBvh bvh(mesh);
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-2.5f, 2.5f), len(0.2f, 3.0f);
  const Vec3 axes[6] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
  int hits = 0;
  for (int i = 0; i < 4000; ++i) {
    const Vec3 o{u(rng), u(rng), u(rng)};
    // Axis-aligned (zero direction components), aimed at the mesh, or any direction.
    Vec3 d = i % 5 == 0 ? axes[i % 6]
                        : (i % 2 ? normalize(Vec3{u(rng), u(rng), u(rng)} * 0.4f - o) : randomUnit(rng));
    d = d * len(rng);  // t is in units of dir
    const float t_min = i % 4 == 0 ? 0.3f : 0.0f;
    const float t_max = i % 3 == 0 ? len(rng) : kInf;
    const float expected = bruteRay(mesh, o, d, t_min, t_max);
    const auto hit = bvh.intersect(o, d, t_min, t_max);
    ASSERT_EQ(hit.has_value(), expected < kInf) << "ray " << i;
    ASSERT_EQ(bvh.occluded(o, d, t_min, t_max), expected < kInf) << "ray " << i;
    if (!hit) continue;
    ++hits;
    EXPECT_NEAR(hit->t, expected, 1e-6f * (1 + expected)) << "ray " << i;
    const auto own = intersectTriangle(o, d, vertex(mesh, hit->face, 0), vertex(mesh, hit->face, 1),
                                       vertex(mesh, hit->face, 2));
    ASSERT_TRUE(own);
    EXPECT_NEAR(*own, hit->t, 1e-6f * (1 + expected));
  }
  EXPECT_GT(hits, 1200);
}

TEST(MeshQuery, RayThroughSharedEdgeOrVertexIsNotLost) {
  // A cube: each side split along a diagonal; rays straight down onto the top side's diagonal and onto its
  // edges, and rays from the centre through every corner and edge midpoint.
  const TriMesh cube = box({-1, -1, -1}, {1, 1, 1}, false);
  const MeshBvh cube_bvh(cube);
  for (int i = -100; i <= 100; ++i) {
    const float s = static_cast<float>(i) / 100.0f;
    for (const Vec3 target : {Vec3{s, 1, s}, Vec3{s, 1, -s}, Vec3{s, 1, 1}, Vec3{1, 1, s}}) {
      const auto hit = cube_bvh.intersect(target + Vec3{0, 3, 0}, {0, -1, 0}, 0, kInf);
      ASSERT_TRUE(hit) << "x " << target.x << " z " << target.z;
      EXPECT_NEAR(hit->t, 3.0f, 1e-5f);
      // Oblique rays at the same point.
      const Vec3 from = target + Vec3{0.37f, 2.1f, -0.53f};
      ASSERT_TRUE(cube_bvh.occluded(from, target - from, 0, 1.001f)) << "x " << target.x << " z " << target.z;
    }
  }
  for (int c = 0; c < 8; ++c) {
    const Vec3 corner{c & 1 ? 1.0f : -1.0f, c & 2 ? 1.0f : -1.0f, c & 4 ? 1.0f : -1.0f};
    const auto hit = cube_bvh.intersect({0, 0, 0}, corner, 0, kInf);
    ASSERT_TRUE(hit) << "corner " << c;
    EXPECT_NEAR(hit->t, 1.0f, 1e-5f);
  }

  // An icosphere: rays from inside through every vertex and every edge midpoint, and from outside at them.
  const TriMesh sphere = icosphere({0, 0, 0}, 1.0f, 2);
  const MeshBvh sphere_bvh(sphere);
  std::mt19937 rng(5);
  std::vector<Vec3> targets = sphere.positions;
  for (const auto& f : sphere.faces)
    for (int k = 0; k < 3; ++k)
      targets.push_back((sphere.positions[f[static_cast<size_t>(k)]] +
                         sphere.positions[f[static_cast<size_t>((k + 1) % 3)]]) *
                        0.5f);
  for (size_t i = 0; i < targets.size(); ++i) {
    const Vec3 target = targets[i];
    ASSERT_TRUE(sphere_bvh.intersect({0, 0, 0}, target, 0, kInf)) << "target " << i;
    const Vec3 inside = randomUnit(rng) * 0.3f;
    ASSERT_TRUE(sphere_bvh.occluded(inside, target - inside, 0, kInf)) << "target " << i;
    const Vec3 outside = target + (normalize(target) + randomUnit(rng) * 0.5f) * 2.0f;
    const auto hit = sphere_bvh.intersect(outside, target - outside, 0, kInf);
    ASSERT_TRUE(hit) << "target " << i;
    EXPECT_LE(hit->t, 1.0f + 1e-5f);
  }
  // And any ray from inside a closed mesh hits it.
  for (int i = 0; i < 20000; ++i)
    ASSERT_TRUE(sphere_bvh.occluded(randomUnit(rng) * 0.5f, randomUnit(rng), 0, kInf)) << i;
}

TEST(MeshComponents, SeparateBoxesSplitVerticesAndVertexContacts) {
  TriMesh two;
  append(two, box({0, 0, 0}, {1, 1, 1}, false));
  append(two, box({2, 0, 0}, {3, 1, 1}, false));
  uint32_t count = 0;
  std::vector<uint32_t> ids = faceComponents(two, &count);
  EXPECT_EQ(count, 2u);
  for (size_t f = 0; f < two.faces.size(); ++f) EXPECT_EQ(ids[f], f < 12 ? 0u : 1u);

  // Every side its own four vertices (a UV-seamed box): welded by position, one component.
  const TriMesh split = box({0, 0, 0}, {1, 1, 1}, true);
  EXPECT_EQ(split.positions.size(), 24u);
  ids = faceComponents(split, &count);
  EXPECT_EQ(count, 1u);
  for (uint32_t id : ids) EXPECT_EQ(id, 0u);

  // -0 and +0 weld; two boxes touching along an edge are one component, touching at a corner two.
  TriMesh signed_zero = box({-1, -1, -1}, {0, 0, 0}, true);
  for (Vec3& p : signed_zero.positions)
    if (p.x == 0 && (&p - signed_zero.positions.data()) % 2 == 0) p.x = -0.0f;
  faceComponents(signed_zero, &count);
  EXPECT_EQ(count, 1u);
  TriMesh edge_contact = box({0, 0, 0}, {1, 1, 1}, true);
  append(edge_contact, box({1, 1, 0}, {2, 2, 1}, true));
  faceComponents(edge_contact, &count);
  EXPECT_EQ(count, 1u);
  TriMesh corner_contact = box({0, 0, 0}, {1, 1, 1}, true);
  append(corner_contact, box({1, 1, 1}, {2, 2, 2}, true));
  ids = faceComponents(corner_contact, &count);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(ids.back(), 1u);
  faceComponents(TriMesh{}, &count);
  EXPECT_EQ(count, 0u);
}

// Faces of an icosphere with centre y >= 0: an open dome shell over +y, outward winding.
TriMesh dome(float radius) {
  const TriMesh sphere = icosphere({0, 0, 0}, radius, 2);
  TriMesh shell;
  shell.positions = sphere.positions;
  for (size_t f = 0; f < sphere.faces.size(); ++f)
    if (triangleCentre(sphere, f).y >= 0) shell.faces.push_back(sphere.faces[f]);
  return shell;
}

TriMesh transformed(TriMesh mesh, float sy, Vec3 offset) {
  for (Vec3& p : mesh.positions) p = Vec3{p.x, p.y * sy, p.z} + offset;
  if (sy < 0)  // a mirror reverses the winding: restore it
    for (auto& f : mesh.faces) std::swap(f[1], f[2]);
  return mesh;
}

TEST(Winding, RepairTurnsEveryPartOutward) {
  // Parts, some wound inward: closed boxes (shared and split vertices), open dome shells, a single quad.
  struct Part {
    TriMesh mesh;
    bool flipped;
  };
  TriMesh quad;
  quad.positions = {{5, -0.5f, -0.5f}, {5, 0.5f, -0.5f}, {5, 0.5f, 0.5f}, {5, -0.5f, 0.5f}};
  quad.faces = {{0, 1, 2}, {0, 2, 3}};  // normal +x: facing away from the model
  ASSERT_GT(triangleNormal(quad, 0).x, 0);
  const std::vector<Part> parts = {
      {box({-3, -0.5f, -0.5f}, {-2, 0.5f, 0.5f}, false), false},
      {box({2, -0.5f, -0.5f}, {3, 0.5f, 0.5f}, true), true},
      {transformed(dome(0.8f), 1, {0, 2, 0}), true},
      {transformed(dome(0.8f), -1, {0, -2, 0}), false},
      {quad, true},
      {box({-0.5f, -0.5f, 2}, {0.5f, 0.5f, 3}, true), false},
  };
  TriMesh mesh;
  std::vector<size_t> part_of_face;
  WindingReport expected;
  double flipped_area = 0, total_area = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    append(mesh, parts[i].mesh, parts[i].flipped);
    part_of_face.resize(mesh.faces.size(), i);
    double area = 0;
    for (size_t f = 0; f < parts[i].mesh.faces.size(); ++f) area += triangleArea(parts[i].mesh, f);
    total_area += area;
    if (parts[i].flipped) {
      ++expected.flipped_components;
      expected.flipped_faces += parts[i].mesh.faces.size();
      flipped_area += area;
    }
  }
  const WindingReport report = repairWinding(mesh);
  EXPECT_EQ(report.components, parts.size());
  EXPECT_EQ(report.faces, mesh.faces.size());
  EXPECT_EQ(report.flipped_components, expected.flipped_components);
  EXPECT_EQ(report.flipped_faces, expected.flipped_faces);
  EXPECT_NEAR(report.flipped_area_share, flipped_area / total_area, 1e-6);

  // Every face of a convex part faces away from its part's centre; the quad faces away from the model.
  std::vector<Vec3> centre(parts.size());
  std::vector<float> area(parts.size(), 0);
  for (size_t f = 0; f < mesh.faces.size(); ++f) {
    centre[part_of_face[f]] = centre[part_of_face[f]] + triangleCentre(mesh, f) * triangleArea(mesh, f);
    area[part_of_face[f]] += triangleArea(mesh, f);
  }
  for (size_t i = 0; i < parts.size(); ++i) centre[i] = centre[i] / area[i];
  for (size_t f = 0; f < mesh.faces.size(); ++f) {
    const size_t part = part_of_face[f];
    if (part == 4) {
      EXPECT_GT(triangleNormal(mesh, f).x, 0) << "quad face " << f;
    } else {
      EXPECT_GT(dot(triangleNormal(mesh, f), triangleCentre(mesh, f) - centre[part]), 0)
          << "part " << part << " face " << f;
    }
  }
  // Repaired: a second pass flips nothing.
  const WindingReport again = repairWinding(mesh);
  EXPECT_EQ(again.flipped_components, 0u);
  EXPECT_EQ(again.flipped_faces, 0u);
  EXPECT_EQ(again.flipped_area_share, 0.0);
}

// View factor from a differential area to a parallel rectangle of sides x, y at height h, the area under
// one of its corners (Howell's catalogue, B-3).
double cornerViewFactor(double x, double y, double h) {
  const double a = x / h, b = y / h;
  const double sa = std::sqrt(1 + a * a), sb = std::sqrt(1 + b * b);
  return (a / sa * std::atan(b / sa) + b / sb * std::atan(a / sb)) / (2 * std::numbers::pi);
}

TEST(AmbientOcclusion, OpenPlaneIsOne) {
  TriMesh plane;
  plane.positions = {{-10, 0, -10}, {10, 0, -10}, {10, 0, 10}, {-10, 0, 10}};
  plane.faces = {{0, 1, 2}, {0, 2, 3}};
  const MeshBvh bvh(plane);
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<Vec3> points, normals;
  for (int i = 0; i < 100; ++i) {
    points.push_back({u(rng), 0, u(rng)});
    normals.push_back(i % 2 ? Vec3{0, 1, 0} : Vec3{0, -2, 0});  // either side, any length
  }
  for (float ao : ambientOcclusion(bvh, points, normals, 64, 100, 1)) EXPECT_EQ(ao, 1.0f);
}

TEST(AmbientOcclusion, DeepBoxBottomSeesItsOpeningsFormFactor) {
  // Closed bottom, open top of half width 1 at height `depth`: the unoccluded share of the cosine-weighted
  // hemisphere of a bottom point facing up is the view factor to the opening, a sum of four corner terms
  // (from the ray origin, 1e-3 above the bottom).
  for (const float depth : {1.0f, 2.0f, 4.0f}) {
    const MeshBvh bvh(box({-1, 0, -1}, {1, depth, 1}, false, true));
    const std::vector<Vec3> points = {{0, 0, 0}, {0.5f, 0, 0}, {0.3f, 0, -0.6f}};
    const std::vector<Vec3> normals(points.size(), Vec3{0, 1, 0});
    for (const uint32_t seed : {1u, 2u}) {
      const std::vector<float> ao = ambientOcclusion(bvh, points, normals, 4096, 100, seed);
      for (size_t i = 0; i < points.size(); ++i) {
        const double x = points[i].x, z = points[i].z, h = depth - 1e-3;
        const double expected = cornerViewFactor(1 - x, 1 - z, h) + cornerViewFactor(1 + x, 1 - z, h) +
                                cornerViewFactor(1 - x, 1 + z, h) + cornerViewFactor(1 + x, 1 + z, h);
        EXPECT_NEAR(ao[i], expected, 0.006) << "depth " << depth << " point " << i << " seed " << seed;
      }
    }
    // A short max_dist sees past the walls' far parts: more open.
    const std::vector<float> near = ambientOcclusion(bvh, points, normals, 256, 0.5f, 1);
    EXPECT_GT(near[0], ambientOcclusion(bvh, points, normals, 256, 100, 1)[0] - 1e-6f);
  }
}

TEST(AmbientOcclusion, DeterministicForASeedAndAnyThreadCount) {
  const TriMesh mesh = randomMesh(9);
  const MeshBvh bvh(mesh);
  std::mt19937 rng(10);
  std::vector<Vec3> points, normals;
  for (int i = 0; i < 400; ++i) {
    const size_t f = static_cast<size_t>(i) * 7 % mesh.faces.size();
    points.push_back(triangleCentre(mesh, f));
    const Vec3 n = triangleNormal(mesh, f);
    normals.push_back(dot(n, n) > 0 ? n : Vec3{0, 1, 0});
  }
  std::vector<float> one, four;
  {
    ThreadCount tc("1");
    one = ambientOcclusion(bvh, points, normals, 32, 3, 42);
  }
  {
    ThreadCount tc("4");
    four = ambientOcclusion(bvh, points, normals, 32, 3, 42);
  }
  EXPECT_EQ(one, four);
  const std::vector<float> other = ambientOcclusion(bvh, points, normals, 32, 3, 43);
  EXPECT_NE(one, other);
  for (float v : one) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LE(v, 1.0f);
  }
}

TEST(Floater, DistanceMatchesBruteForce) {
  const TriMesh mesh = randomMesh(11);
  const MeshBvh bvh(mesh);
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> u(-3, 3);
  std::vector<Vec3> points;
  for (int i = 0; i < 1500; ++i) points.push_back({u(rng), u(rng), u(rng)});
  const std::vector<float> d = distanceToMesh(bvh, points);
  ASSERT_EQ(d.size(), points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    const float expected = bruteClosest(mesh, points[i]);
    ASSERT_NEAR(d[i], expected, 1e-6f * (1 + expected)) << i;
  }
}

// Components of the "closer than radius" graph by brute force: a label per point (the lowest index).
std::vector<size_t> bruteComponents(const std::vector<Vec3>& p, float radius) {
  std::vector<size_t> label(p.size());
  for (size_t i = 0; i < p.size(); ++i) label[i] = i;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < p.size(); ++i)
      for (size_t j = 0; j < p.size(); ++j)
        if (label[j] < label[i] && length(p[i] - p[j]) < radius) label[i] = label[j], changed = true;
  }
  return label;
}

TEST(Floater, MainComponentKeepsTheLargestCluster) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> jitter(-0.01f, 0.01f);
  std::vector<Vec3> points;
  std::vector<int> cluster;
  // B (5^3 lattice, spacing 0.1) first, then A (8^3), then isolated points, in shuffled order.
  for (int n : {5, 8}) {
    const Vec3 base = n == 5 ? Vec3{5, 0, 0} : Vec3{-1, 0.5f, 0};
    for (int x = 0; x < n; ++x)
      for (int y = 0; y < n; ++y)
        for (int z = 0; z < n; ++z) {
          const Vec3 lattice =
              Vec3{static_cast<float>(x), static_cast<float>(y), static_cast<float>(z)} * 0.1f;
          points.push_back(base + lattice + Vec3{jitter(rng), jitter(rng), jitter(rng)});
          cluster.push_back(n);
        }
  }
  for (int i = 0; i < 10; ++i) {
    points.push_back({-5.0f + static_cast<float>(i), 3, 3});
    cluster.push_back(0);
  }
  std::vector<size_t> order(points.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<Vec3> shuffled;
  std::vector<int> shuffled_cluster;
  for (size_t i : order) shuffled.push_back(points[i]), shuffled_cluster.push_back(cluster[i]);

  const float radius = 0.15f;
  const std::vector<uint8_t> main = mainComponent(shuffled, radius);
  ASSERT_EQ(main.size(), shuffled.size());
  for (size_t i = 0; i < shuffled.size(); ++i) EXPECT_EQ(main[i], shuffled_cluster[i] == 8 ? 1 : 0) << i;
  // Against the brute-force graph.
  const std::vector<size_t> label = bruteComponents(shuffled, radius);
  std::map<size_t, size_t> size;
  for (size_t l : label) ++size[l];
  size_t best = label[0];
  for (const auto& [l, s] : size)
    if (s > size[best]) best = l;
  for (size_t i = 0; i < shuffled.size(); ++i) EXPECT_EQ(main[i], label[i] == best ? 1 : 0) << i;

  // Equal sizes: the component holding the lowest index. A tiny radius: every point alone, so point 0.
  const std::vector<Vec3> pair_of_pairs = {{5, 0, 0}, {0, 0, 0}, {0.05f, 0, 0}, {5.05f, 0, 0}};
  EXPECT_EQ(mainComponent(pair_of_pairs, 0.1f), (std::vector<uint8_t>{1, 0, 0, 1}));
  EXPECT_EQ(mainComponent(pair_of_pairs, 0.01f), (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_TRUE(mainComponent({}, 1).empty());
}

double bruteMedianNearest(const std::vector<Vec3>& p) {
  std::vector<double> nn(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < p.size(); ++j) {
      if (i == j) continue;
      const double dx = double{p[i].x} - p[j].x, dy = double{p[i].y} - p[j].y, dz = double{p[i].z} - p[j].z;
      best = std::min(best, dx * dx + dy * dy + dz * dz);
    }
    nn[i] = std::sqrt(best);
  }
  std::sort(nn.begin(), nn.end());
  const size_t n = nn.size();
  return n % 2 ? nn[n / 2] : 0.5 * (nn[n / 2 - 1] + nn[n / 2]);
}

TEST(Floater, MedianNearestNeighbourMatchesBruteForce) {
  std::mt19937 rng(14);
  std::uniform_real_distribution<float> u(-1, 1);
  // A volume, a surface (a sphere's shell: most cells empty), a curve, clusters with far outliers and
  // duplicates; odd and even counts.
  std::vector<std::vector<Vec3>> clouds(4);
  for (int i = 0; i < 2001; ++i) clouds[0].push_back({u(rng), u(rng), u(rng)});
  for (int i = 0; i < 3000; ++i) clouds[1].push_back(randomUnit(rng) * 2.0f);
  for (int i = 0; i < 1500; ++i) {
    const float t = u(rng) * 3;
    clouds[2].push_back({t, std::sin(3 * t), 0.1f * t * t});
  }
  for (int i = 0; i < 1000; ++i) clouds[3].push_back(Vec3{u(rng), u(rng), u(rng)} * 0.01f);
  for (int i = 0; i < 50; ++i) clouds[3].push_back(clouds[3][static_cast<size_t>(i)]);  // duplicates
  for (int i = 0; i < 600; ++i) clouds[3].push_back(randomUnit(rng) * 100.0f);          // sparse outliers
  for (size_t c = 0; c < clouds.size(); ++c) {
    const double expected = bruteMedianNearest(clouds[c]);
    EXPECT_FLOAT_EQ(medianNearestNeighbour(clouds[c]), static_cast<float>(expected)) << "cloud " << c;
  }
  EXPECT_EQ(medianNearestNeighbour(std::vector<Vec3>{}), 0.0f);
  EXPECT_EQ(medianNearestNeighbour(std::vector<Vec3>{{1, 2, 3}}), 0.0f);
  EXPECT_EQ(medianNearestNeighbour(std::vector<Vec3>(5, Vec3{1, 2, 3})), 0.0f);
  EXPECT_FLOAT_EQ(medianNearestNeighbour(std::vector<Vec3>{{0, 0, 0}, {0, 3, 4}}), 5.0f);
}

TEST(Silhouette, SurfaceAndInsidePointsAreInsideEverySilhouette) {
  const TriMesh sphere = icosphere({0, 0, 0}, 1.0f, 3);
  const MeshBvh bvh(sphere);
  const std::vector<float> elevations = {0, 15, 30, 45, 60};
  std::vector<Vec3> points;
  for (size_t f = 0; f < sphere.faces.size(); f += 5) points.push_back(triangleCentre(sphere, f));  // on it
  const size_t surface = points.size();
  points.push_back(sphere.positions[7] * 1.03f);  // 0.03 off the surface (the vertex): within the tolerance
  points.push_back({0, 0, 0});
  points.push_back({0.3f, 0.2f, -0.4f});
  points.push_back({0, -0.9f, 0});
  const size_t floating = points.size();
  points.push_back({0, 1.1f, 0});  // 0.1 above the top
  points.push_back({3, 0, 0});     // far out
  const std::vector<uint16_t> misses = silhouetteMisses(bvh, points, elevations, 10, 0.06f);
  ASSERT_EQ(misses.size(), points.size());
  for (size_t i = 0; i < floating; ++i)
    EXPECT_EQ(misses[i], 0) << (i < surface ? "surface point " : "inside point ") << i;
  EXPECT_GT(misses[floating], 0);
  EXPECT_LT(misses[floating], 360);
  // 3 along +x is hidden only from views whose line passes through the sphere: those looking along x.
  EXPECT_GT(misses[floating + 1], 300);
  // A zero tolerance flags the near-surface point; deterministic across thread counts.
  std::vector<uint16_t> one, four;
  {
    ThreadCount tc("1");
    one = silhouetteMisses(bvh, points, elevations, 10, 0);
  }
  {
    ThreadCount tc("4");
    four = silhouetteMisses(bvh, points, elevations, 10, 0);
  }
  EXPECT_EQ(one, four);
  EXPECT_GT(one[surface], 0);
}

// Floater sign 4 against its definition worked by hand: a 100 x 100 view looking down +z (f = 100, centre 50)
// covering only pixels 40-59 in x and y. At depth 10 a point at x = -3 lands on pixel 20 (background), at 0
// on pixel 50 (covered); a radius r spans 10 r pixels either side. A second view covers everything.
TEST(DatasetFloaters, ADiscOnBackgroundInSomeViewIsAFloater) {
  CoverageView partial;
  partial.fx = partial.fy = 100;
  partial.cx = partial.cy = 50;
  partial.width = partial.height = 100;
  partial.covered.assign(100 * 100, 0);
  for (int y = 40; y < 60; ++y)
    for (int x = 40; x < 60; ++x) partial.covered[static_cast<size_t>(y * 100 + x)] = 1;
  CoverageView full = partial;
  full.covered.assign(100 * 100, 1);
  full.world_to_camera.m[0][3] = 2.5f;  // shifted: the points land elsewhere, all on covered pixels
  const std::vector<Vec3> points = {
      {0, 0, 10},      // pixel 50: covered
      {-3, 0, 10},     // pixel 20: background
      {-3, 0, 10},     // the same, radius 2.5: its square (-5..45) leaves the image, no verdict
      {-1.2f, 0, 10},  // pixel 38, radius 0.15: pixels 36-39, all background
      {-1.2f, 0, 10},  // radius 0.25: pixels 35-40, pixel 40 covered
      {0, 0, -5},      // behind the camera
  };
  const std::vector<float> radii = {0.05f, 0.05f, 2.5f, 0.15f, 0.25f, 0.05f};
  const std::vector<CoverageView> one = {partial};
  EXPECT_EQ(datasetFloaters(points, radii, one), (std::vector<uint8_t>{0, 1, 0, 1, 0, 0}));
  const std::vector<CoverageView> covered_only = {full};
  EXPECT_EQ(datasetFloaters(points, radii, covered_only), (std::vector<uint8_t>{0, 0, 0, 0, 0, 0}));
  // Some view is enough, in either order.
  const std::vector<CoverageView> both = {full, partial};
  EXPECT_EQ(datasetFloaters(points, radii, both), (std::vector<uint8_t>{0, 1, 0, 1, 0, 0}));
}

}  // namespace
}  // namespace sf::hull
