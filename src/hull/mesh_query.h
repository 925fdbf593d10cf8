// Exact geometric queries against a game model's triangle mesh for the splat-hull bake: a BVH (closest
// point, nearest ray hit, any hit), face components over welded vertices, winding repair for open shells,
// ambient occlusion and the three floater signs (distance to the surface, neighbour graph, silhouette).
// Every result is deterministic and independent of the thread count.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/geometry.h"
#include "core/math.h"

namespace sf::hull {

// A triangle soup in one space. Face indices must be < positions.size().
struct TriMesh {
  std::vector<Vec3> positions;
  std::vector<std::array<uint32_t, 3>> faces;
};

// Unnormalised normal of face f: cross(b - a, c - a), of length twice the face's area.
Vec3 triangleNormal(const TriMesh& mesh, size_t f);
// Area of face f.
float triangleArea(const TriMesh& mesh, size_t f);
// Centre (vertex average) of face f.
Vec3 triangleCentre(const TriMesh& mesh, size_t f);

// Barycentric tolerance of the ray-triangle test: a hit may lie this far (in barycentric units) outside the
// triangle, so that a ray through a shared edge or vertex hits at least one of the faces around it.
inline constexpr float kRayBarycentricTolerance = 1e-5f;

// Two-sided Moller-Trumbore test of the line origin + t dir against triangle (a, b, c), with
// kRayBarycentricTolerance: t of the crossing (any sign), or nothing when the line is parallel to the plane
// or passes outside the triangle. dir need not be unit; t is in units of dir.
std::optional<float> intersectTriangle(Vec3 origin, Vec3 dir, Vec3 a, Vec3 b, Vec3 c);

// Bounding volume hierarchy over a TriMesh (binned SAH, leaves of at most 4 triangles), built once; it
// keeps its own copy of the triangles. Queries are const and may run concurrently.
class MeshBvh {
 public:
  explicit MeshBvh(const TriMesh& mesh);

  size_t faceCount() const { return tris_.size(); }
  size_t nodeCount() const { return nodes_.size(); }

  struct Closest {
    uint32_t face = 0;
    Vec3 point;
    float distance = 0;
  };
  // Nearest point of the surface to p (exact: closestPointOnTriangle on every face not pruned by its box).
  // Of faces at the same distance the first found is kept. An empty mesh gives distance = +infinity.
  Closest closest(Vec3 p) const;

  struct Hit {
    uint32_t face = 0;
    float t = 0;
  };
  // Nearest hit of the ray origin + t dir with t in [t_min, t_max] (intersectTriangle: two-sided, with the
  // barycentric tolerance); t is in units of dir, which need not be unit. Nothing on a miss.
  std::optional<Hit> intersect(Vec3 origin, Vec3 dir, float t_min, float t_max) const;
  // Whether any face is hit with t in [t_min, t_max] (same test as intersect, stops at the first hit).
  bool occluded(Vec3 origin, Vec3 dir, float t_min, float t_max) const;

 private:
  struct Node {
    Vec3 lo, hi;
    uint32_t first = 0;  // leaf: first triangle; interior: left child (the right one follows it)
    uint32_t count = 0;  // triangles of a leaf; 0 for an interior node
  };
  struct Tri {
    Vec3 a, b, c;
    uint32_t face = 0;
  };
  std::vector<Node> nodes_;  // nodes_[0] is the root
  std::vector<Tri> tris_;    // in leaf order
};

// Connected components of the face graph: two faces are linked when they share an edge, with vertices
// welded by exact position (-0 and +0 equal), so glTF's split vertices at UV seams do not cut a shell.
// Faces sharing only a vertex are not linked. Returns a component id per face, numbered in the order of
// each component's first face; *count (when not null) receives the number of components.
std::vector<uint32_t> faceComponents(const TriMesh& mesh, uint32_t* count);

struct WindingReport {
  size_t components = 0, flipped_components = 0, faces = 0, flipped_faces = 0;
  double flipped_area_share = 0;      // flipped area / total area (0 for a mesh without area)
  std::vector<uint8_t> face_flipped;  // per face: 1 when its winding was reversed
};
// Orients every face component outward, closed or open (trimesh's fix_normals fails on open shells): each
// component votes sum(dot(n_f, c_f - centroid) * area_f) over its faces (n_f the unit face normal, c_f the
// face centre, centroid the area-weighted centroid of the whole mesh); a component with a negative vote has
// the winding of each of its faces reversed (indices 1 and 2 swapped). For a closed shell the vote is three
// times its signed volume whatever the centroid. Positions are not changed.
WindingReport repairWinding(TriMesh& mesh);

// Ambient occlusion per point: the fraction (0..1, 1 = open) of `rays` cosine-weighted directions of the
// hemisphere around the normal whose ray from point + normal * 1e-3 hits nothing within max_dist. The
// directions are a Hammersley set rotated per point by a hash of (seed, point index): deterministic for a
// seed and independent of the thread count. Normals need not be unit but must not be zero; rays >= 1.
std::vector<float> ambientOcclusion(const MeshBvh& bvh, std::span<const Vec3> points,
                                    std::span<const Vec3> normals, int rays, float max_dist, uint32_t seed);

// Floater sign 1: the distance of each point to the surface (MeshBvh::closest).
std::vector<float> distanceToMesh(const MeshBvh& bvh, std::span<const Vec3> points);

// Floater sign 2: the graph linking points closer than `radius` (> 0; found through a grid hash of cell
// `radius`); 1 for the points of its largest component (of equal sizes, the one holding the lowest point
// index), 0 for every other point. With keep_fraction < 1, components holding at least keep_fraction times
// the largest one's points are kept too (models made of disjoint pieces). Points must be finite.
std::vector<uint8_t> mainComponent(std::span<const Vec3> points, float radius, float keep_fraction = 1.0f);
// Median over the points of the distance to their nearest other point (exact, grid hash with ring search;
// the mean of the two middle values for an even count). 0 for fewer than two points; duplicates give 0
// distances. Points must be finite.
float medianNearestNeighbour(std::span<const Vec3> points);

// Floater sign 3: silhouette misses. Views: azimuths 0, 5, ..., 355 degrees (72) about +y, measured from +z
// towards +x, at each of `elevations_deg` (degrees above the xz plane); each view's camera sits at distance
// camera_distance from the origin in that direction. For each point and view, the line from the camera
// through the point (t from 0 to infinity: hits in front of and behind the point both count) either hits
// the mesh or misses it. Returns per point the number of views whose line misses the mesh (0 = inside every
// silhouette); a point within surface_tolerance of the surface lies on it and gets 0.
std::vector<uint16_t> silhouetteMisses(const MeshBvh& bvh, std::span<const Vec3> points,
                                       std::span<const float> elevations_deg, float camera_distance,
                                       float surface_tolerance);

// A training view for floater sign 4: its pinhole (world to camera, +z forward, pixel = f * xy / z + c, as
// the renderers project) and which of its pixels the model covers (one byte per pixel, row-major, non-zero
// where the view's alpha is above 1/255).
struct CoverageView {
  Mat4 world_to_camera;
  float fx = 0, fy = 0, cx = 0, cy = 0;
  int width = 0, height = 0;
  std::vector<uint8_t> covered;
};

// Floater sign 4, the pass over the training views: 1 for a point whose disc (radius radii[i] in world units,
// drawn at the point's depth) lies, in some view, wholly inside the image and on pixels the model does not
// cover: a splat hanging in the air that the trainer left because it is too small to matter in the loss.
// The disc is tested by a square of pixels that holds its image (its radius projected at the disc's nearest
// depth, widened for the stretch away from the image centre; conservative: a square touching a covered pixel
// clears the point). Views where the disc reaches within 0.2 of the camera plane or its square leaves the
// image say nothing. Throws sf::Error when a view's coverage is not width x height bytes or the radii do not
// match the points. Deterministic; parallel over points.
std::vector<uint8_t> datasetFloaters(std::span<const Vec3> points, std::span<const float> radii,
                                     std::span<const CoverageView> views);

}  // namespace sf::hull
