// A glTF model as one triangle soup for the offline tools (the hull bake, the training dataset views): posed
// at a clip time, flattened over its drawn primitives and normalised into the destructible-hull article's 1.6
// cube, with what each face came from (draw, material, base colour inputs), and area-weighted surface
// sampling with the albedo at the sampled point.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/math.h"
#include "hull/mesh_query.h"

namespace sf {
class GltfModel;
struct MeshTexture;
}  // namespace sf

namespace sf::hull {

// Edge of the cube the model is normalised into: its longest box side becomes this, its box centre the
// origin.
inline constexpr float kSourceCube = 1.6f;

// The posed model's triangles in the normalised frame (p = p_model * scale + offset), with what each face
// came from. A draw's vertices are contiguous, in its primitive's order, starting at draw_first_vertex[draw].
struct SourceMesh {
  std::shared_ptr<const GltfModel> model;  // keeps the textures draw_texture points into alive
  TriMesh mesh;
  std::vector<Vec3> normals;                 // per vertex: the model's posed normal (unit), or zero without
  std::vector<std::array<float, 2>> uvs;     // per vertex (0 without)
  std::vector<std::array<float, 4>> colors;  // per vertex, linear (1 without)
  std::vector<uint32_t> face_draw;           // draw index per face
  std::vector<uint32_t> draw_first_vertex;
  std::vector<const MeshTexture*> draw_texture;   // the base-colour texture (null without, or without uvs)
  std::vector<std::array<float, 4>> draw_factor;  // baseColorFactor, linear
  std::vector<std::string> draw_name;             // the draw's node name (else its mesh's, else "node N")
  std::vector<int> draw_material;                 // glTF material index, -1 without
  std::vector<Mat4> draw_to_model;  // the draw's mesh node in model space (before the normalisation)
  std::vector<Mat4> node_to_model;  // every glTF node's model-space matrix in the pose
  float scale = 1;                  // p_normalised = p_model * scale + offset
  Vec3 offset{0, 0, 0};
};

// Loads a .gltf / .glb, poses it at `time` seconds of `clip` (a name or an index; empty: the rest pose) and
// returns its drawn triangles normalised into the kSourceCube cube. Throws sf::Error naming the file: an
// unknown clip (listing the clips), no triangles, a non-finite posed vertex, no extent (every vertex at one
// point).
SourceMesh loadSourceMesh(const std::string& model_path, const std::string& clip, float time);

// Albedo at barycentric (b0, b1, b2) of face f, display-encoded (sRGB) and clamped to [0, 1]: baseColorFactor
// x interpolated vertex colour x the base-colour texel (render/mesh.h sampleTexture), encoded once.
Vec3 albedoAt(const SourceMesh& source, uint32_t f, float b0, float b1, float b2);

// Cumulative face areas for area-weighted sampling: cdf[0] = 0, cdf[f + 1] = cdf[f] + triangleArea(mesh, f).
std::vector<double> faceAreaCdf(const TriMesh& mesh);

struct SurfacePoint {
  uint32_t face = 0;
  float b0 = 1, b1 = 0, b2 = 0;  // barycentric weights of the face's vertices 0, 1, 2
  Vec3 position;
};
// The surface point three uniform variates in [0, 1) pick: the face f whose cdf interval holds u_area * total
// (area-weighted), and in it the uniform point b0 = 1 - sqrt(u1), b1 = sqrt(u1) (1 - u2), b2 = sqrt(u1) u2.
// cdf must be faceAreaCdf(mesh) with a positive total.
SurfacePoint surfacePointAt(const TriMesh& mesh, std::span<const double> cdf, float u_area, float u1,
                            float u2);

}  // namespace sf::hull
