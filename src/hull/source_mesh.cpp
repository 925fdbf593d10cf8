#include "hull/source_mesh.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "model/gltf_model.h"
#include "render/mesh.h"

namespace sf::hull {
namespace {

// The posed model's triangles in model space (the normalisation follows).
void flatten(const GltfModel& model, const GltfModel::Pose& pose, SourceMesh& out) {
  const std::vector<RenderMesh> meshes = model.renderMeshes(pose, Mat4{});
  const GltfDocument& doc = model.document();
  for (size_t d = 0; d < meshes.size(); ++d) {
    const RenderMesh& m = meshes[d];
    const GltfModel::DrawInfo info = model.drawInfo(d);
    std::string name = doc.nodes[static_cast<size_t>(info.node)].name;
    if (name.empty()) name = doc.meshes[static_cast<size_t>(info.mesh)].name;
    if (name.empty()) name = "node " + std::to_string(info.node);
    out.draw_name.push_back(name);
    out.draw_material.push_back(model.primitiveOf(d).material);
    out.draw_texture.push_back(m.uvs.empty() ? nullptr : m.texture);
    out.draw_factor.push_back(m.base_color);
    out.draw_to_model.push_back(m.object_to_world);
    const uint32_t base = static_cast<uint32_t>(out.mesh.positions.size());
    out.draw_first_vertex.push_back(base);
    const Mat3 normal_to_model = transpose(inverse(m.object_to_world.linear()));
    for (size_t v = 0; v < m.positions.size(); ++v) {
      out.mesh.positions.push_back(transformPoint(m.object_to_world, m.positions[v]));
      Vec3 n{0, 0, 0};
      if (m.normals.size() == m.positions.size()) {
        n = normal_to_model * m.normals[v];
        const float len = length(n);
        n = len > 0 && std::isfinite(len) ? n / len : Vec3{0, 0, 0};
      }
      out.normals.push_back(n);
      out.uvs.push_back(m.uvs.empty() ? std::array<float, 2>{0, 0} : m.uvs[v]);
      out.colors.push_back(m.colors.empty() ? std::array<float, 4>{1, 1, 1, 1} : m.colors[v]);
    }
    const size_t tris = m.triangleCount();
    for (size_t t = 0; t < tris; ++t) {
      std::array<uint32_t, 3> f;
      for (size_t k = 0; k < 3; ++k)
        f[k] = base + (m.indices.empty() ? static_cast<uint32_t>(3 * t + k) : m.indices[3 * t + k]);
      out.mesh.faces.push_back(f);
      out.face_draw.push_back(static_cast<uint32_t>(d));
    }
  }
}

}  // namespace

SourceMesh loadSourceMesh(const std::string& model_path, const std::string& clip_name, float time) {
  auto model = std::make_shared<GltfModel>(model_path);
  GltfModel::Pose pose;
  int clip = -1;
  if (!clip_name.empty()) {
    clip = model->findClip(clip_name);
    if (clip < 0)
      throw Error(model_path + ": no clip '" + clip_name + "' (clips: " + model->clipList() + ")");
  }
  model->pose(clip, time, pose);
  SourceMesh src;
  flatten(*model, pose, src);
  src.node_to_model = pose.models;
  src.model = model;
  if (src.mesh.faces.empty()) throw Error(model_path + ": no triangles");
  Vec3 lo{INFINITY, INFINITY, INFINITY}, hi = -lo;
  for (const Vec3& p : src.mesh.positions) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y) || !std::isfinite(p.z))
      throw Error(model_path + ": the posed model has a non-finite vertex");
    lo = Vec3{std::min(lo.x, p.x), std::min(lo.y, p.y), std::min(lo.z, p.z)};
    hi = Vec3{std::max(hi.x, p.x), std::max(hi.y, p.y), std::max(hi.z, p.z)};
  }
  const float extent = std::max({hi.x - lo.x, hi.y - lo.y, hi.z - lo.z});
  if (!(extent > 0) || !std::isfinite(extent)) throw Error(model_path + ": the model has no extent");
  src.scale = kSourceCube / extent;
  const Vec3 centre = (lo + hi) * 0.5f;
  src.offset = -centre * src.scale;
  for (Vec3& p : src.mesh.positions) p = p * src.scale + src.offset;
  return src;
}

Vec3 albedoAt(const SourceMesh& s, uint32_t f, float b0, float b1, float b2) {
  const auto& t = s.mesh.faces[f];
  const uint32_t d = s.face_draw[f];
  std::array<float, 4> c = s.draw_factor[d];
  for (size_t k = 0; k < 4; ++k)
    c[k] *= b0 * s.colors[t[0]][k] + b1 * s.colors[t[1]][k] + b2 * s.colors[t[2]][k];
  if (const MeshTexture* tex = s.draw_texture[d]) {
    const float u = b0 * s.uvs[t[0]][0] + b1 * s.uvs[t[1]][0] + b2 * s.uvs[t[2]][0];
    const float v = b0 * s.uvs[t[0]][1] + b1 * s.uvs[t[1]][1] + b2 * s.uvs[t[2]][1];
    const std::array<float, 4> texel = sampleTexture(*tex, u, v);
    for (size_t k = 0; k < 3; ++k) c[k] *= texel[k];
  }
  return {linearToSrgb(std::clamp(c[0], 0.0f, 1.0f)), linearToSrgb(std::clamp(c[1], 0.0f, 1.0f)),
          linearToSrgb(std::clamp(c[2], 0.0f, 1.0f))};
}

std::vector<double> faceAreaCdf(const TriMesh& mesh) {
  std::vector<double> cdf(mesh.faces.size() + 1, 0.0);
  for (size_t f = 0; f < mesh.faces.size(); ++f) cdf[f + 1] = cdf[f] + triangleArea(mesh, f);
  return cdf;
}

SurfacePoint surfacePointAt(const TriMesh& mesh, std::span<const double> cdf, float u_area, float u1,
                            float u2) {
  const double x = u_area * cdf.back();
  SurfacePoint p;
  p.face = static_cast<uint32_t>(
      std::min<size_t>(mesh.faces.size() - 1,
                       static_cast<size_t>(std::upper_bound(cdf.begin(), cdf.end(), x) - cdf.begin()) - 1));
  const float r1 = std::sqrt(u1);
  p.b0 = 1 - r1, p.b1 = r1 * (1 - u2), p.b2 = r1 * u2;
  const auto& t = mesh.faces[p.face];
  p.position = mesh.positions[t[0]] * p.b0 + mesh.positions[t[1]] * p.b1 + mesh.positions[t[2]] * p.b2;
  return p;
}

}  // namespace sf::hull
