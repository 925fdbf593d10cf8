// CPU triangle rasterizer for meshes in the splat frame (see render/mesh.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/parallel.h"
#include "render/mesh.h"
#include "render/mesh_shared.h"

namespace sf {

namespace {

// A vertex after the view transform: what the fragment stage interpolates.
struct ViewVertex {
  Vec3 pos;     // view space
  Vec3 normal;  // view space (unnormalised)
  float uv[2] = {0, 0};
  float color[4] = {1, 1, 1, 1};
};

ViewVertex lerp(const ViewVertex& a, const ViewVertex& b, float t) {
  ViewVertex r;
  r.pos = a.pos + (b.pos - a.pos) * t;
  r.normal = a.normal + (b.normal - a.normal) * t;
  for (int k = 0; k < 2; ++k) r.uv[k] = a.uv[k] + (b.uv[k] - a.uv[k]) * t;
  for (int k = 0; k < 4; ++k) r.color[k] = a.color[k] + (b.color[k] - a.color[k]) * t;
  return r;
}

// A clipped triangle ready for scan conversion.
struct ScreenTriangle {
  ViewVertex v[3];
  float sx[3], sy[3];  // pixel coordinates (pixel centres at +0.5)
  Vec3 face_normal;    // view space, for meshes without normals
  int mesh = 0;
  int y0 = 0, y1 = 0;    // rows touched [y0, y1)
  float jx = 0, jy = 0;  // a sample pass's offset from the pixel centre (meshes drawn at the samples)
};

// Texel index of the integer-valued texel coordinate x (any magnitude) under a wrap mode, by floored
// modulo in floating point, as the fragment shader computes it.
uint32_t wrapIndex(float x, int n, uint32_t mode) {
  const float fn = static_cast<float>(n);
  auto floorMod = [](float a, float b) { return a - b * std::floor(a / b); };
  if (mode == SF_WRAP_CLAMP) return static_cast<uint32_t>(std::clamp(x, 0.0f, fn - 1.0f));
  if (mode == SF_WRAP_MIRROR) {
    const float m = floorMod(x, 2.0f * fn);
    return static_cast<uint32_t>(std::min(m < fn ? m : 2.0f * fn - 1.0f - m, fn - 1.0f));
  }
  return static_cast<uint32_t>(std::min(floorMod(x, fn), fn - 1.0f));
}

// Edge function of (a -> b) at p: positive on the inside of a triangle with positive area.
float edge(float ax, float ay, float bx, float by, float px, float py) {
  return (bx - ax) * (py - ay) - (by - ay) * (px - ax);
}

// Top-left rule for a positive-area triangle in y-down coordinates: pixels exactly on an edge belong to
// the triangle when the edge is a "top" or "left" one, so shared edges are drawn once.
bool topLeft(float ax, float ay, float bx, float by) {
  float dy = by - ay, dx = bx - ax;
  return dy < 0 || (dy == 0 && dx > 0);
}

}  // namespace

float srgbToLinear(float c) {
  return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f);
}
float linearToSrgb(float c) {
  return c <= 0.0031308f ? c * 12.92f : 1.055f * std::pow(c, 1.0f / 2.4f) - 0.055f;
}

std::string RenderMesh::validate() const {
  const size_t n = vertexCount();
  if (!skin.empty()) {
    if (!positions.empty() || !normals.empty())
      return "a skinned mesh takes its positions and normals from its skin source";
    if (std::string why = skin.validate(); !why.empty()) return why;
  }
  if (!normals.empty() && normals.size() != n)
    return "normals: " + std::to_string(normals.size()) + " for " + std::to_string(n) + " positions";
  if (!uvs.empty() && uvs.size() != n)
    return "uvs: " + std::to_string(uvs.size()) + " for " + std::to_string(n) + " positions";
  if (!colors.empty() && colors.size() != n)
    return "colors: " + std::to_string(colors.size()) + " for " + std::to_string(n) + " positions";
  if (indices.empty() && n % 3 != 0)
    return "non-indexed positions: " + std::to_string(n) + " is not a multiple of 3";
  if (indices.size() % 3 != 0)
    return "indices: " + std::to_string(indices.size()) + " is not a multiple of 3";
  for (size_t i = 0; i < indices.size(); ++i)
    if (indices[i] >= n)
      return "indices[" + std::to_string(i) + "] = " + std::to_string(indices[i]) + " >= vertex count " +
             std::to_string(n);
  if (texture && (texture->width <= 0 || texture->height <= 0 ||
                  texture->rgba.size() !=
                      static_cast<size_t>(texture->width) * static_cast<size_t>(texture->height) * 4))
    return "texture: size does not match its pixels";
  if (!(opacity >= 0 && opacity <= 1)) return "opacity " + std::to_string(opacity) + " is not in [0, 1]";
  if (!(mask_rim >= 0) || !std::isfinite(mask_rim))
    return "mask rim " + std::to_string(mask_rim) + " is not a finite width >= 0";
  if (samples != 1 && samples != 2 && samples != 4 && samples != 8 && samples != 16)
    return "samples " + std::to_string(samples) + " is not 1, 2, 4, 8 or 16";
  if (mask.size() > SF_MESH_MASK_MAX)
    return "mask: " + std::to_string(mask.size()) + " points, at most " + std::to_string(SF_MESH_MASK_MAX);
  for (size_t i = 0; i < mask.size(); ++i)
    if (!std::isfinite(mask[i].x) || !std::isfinite(mask[i].y) || !std::isfinite(mask[i].z))
      return "mask[" + std::to_string(i) + "] is not finite";
  return {};
}

uint32_t meshLayerSamples(std::span<const RenderMesh> meshes) {
  uint32_t n = 1;
  for (const RenderMesh& m : meshes) n = std::max(n, m.samples);
  return n;
}

std::span<const std::array<float, 2>> meshSamplePattern(uint32_t samples) {
  // Vulkan's standard sample locations (the specification's table of them), in pixel units.
  static constexpr std::array<float, 2> k1[] = {{0.5f, 0.5f}};
  static constexpr std::array<float, 2> k2[] = {{0.75f, 0.75f}, {0.25f, 0.25f}};
  static constexpr std::array<float, 2> k4[] = {
      {0.375f, 0.125f}, {0.875f, 0.375f}, {0.125f, 0.625f}, {0.625f, 0.875f}};
  static constexpr std::array<float, 2> k8[] = {{0.5625f, 0.3125f}, {0.4375f, 0.6875f}, {0.8125f, 0.5625f},
                                                {0.3125f, 0.1875f}, {0.1875f, 0.8125f}, {0.0625f, 0.4375f},
                                                {0.6875f, 0.9375f}, {0.9375f, 0.0625f}};
  static constexpr std::array<float, 2> k16[] = {
      {0.5625f, 0.5625f}, {0.4375f, 0.3125f}, {0.3125f, 0.625f},  {0.75f, 0.4375f},
      {0.1875f, 0.375f},  {0.625f, 0.8125f},  {0.8125f, 0.6875f}, {0.6875f, 0.1875f},
      {0.375f, 0.875f},   {0.5f, 0.0625f},    {0.25f, 0.125f},    {0.125f, 0.75f},
      {0.0f, 0.5f},       {0.9375f, 0.25f},   {0.875f, 0.9375f},  {0.0625f, 0.0f}};
  switch (samples) {
    case 1:
      return k1;
    case 2:
      return k2;
    case 4:
      return k4;
    case 8:
      return k8;
    case 16:
      return k16;
    default:
      throw Error("mesh samples: " + std::to_string(samples) + " is not 1, 2, 4, 8 or 16");
  }
}

void accumulateMeshSample(MeshSampleState& st, Vec3 centre_color, float centre_alpha, bool covered,
                          Vec3 color, float alpha, float depth) {
  if (!covered) {
    st.matched = false;
    return;
  }
  st.sum_color = st.sum_color + color * alpha;
  st.sum_alpha += alpha;
  st.nearest = std::min(st.nearest, depth);
  const float tolerance = static_cast<float>(SF_MESH_MATCH_TOLERANCE);
  st.matched = st.matched && std::abs(color.x - centre_color.x) <= tolerance &&
               std::abs(color.y - centre_color.y) <= tolerance &&
               std::abs(color.z - centre_color.z) <= tolerance && std::abs(alpha - centre_alpha) <= tolerance;
}

std::vector<std::array<float, 2>> projectMeshMask(const RenderMesh& m, const Camera& cam) {
  std::vector<std::array<float, 2>> poly;
  if (m.mask.size() < 3) return poly;
  const Mat4 to_view = cam.world_to_camera * m.object_to_world;
  for (const Vec3& p : m.mask) {
    const Vec3 c = transformPoint(to_view, p);
    if (!(c.z > static_cast<float>(SF_MESH_NEAR))) return {};
    poly.push_back({cam.fx * c.x / c.z + cam.cx, cam.fy * c.y / c.z + cam.cy});
  }
  return poly;
}

float maskCoverage(std::span<const std::array<float, 2>> poly, float x, float y, float rim) {
  bool inside = false;
  float nearest = INFINITY;
  for (size_t a = 0, b = poly.size() - 1; a < poly.size(); b = a++) {
    const float ax = poly[a][0], ay = poly[a][1], bx = poly[b][0], by = poly[b][1];
    if ((ay > y) != (by > y) && x < (bx - ax) * (y - ay) / (by - ay) + ax) inside = !inside;
    const float ex = bx - ax, ey = by - ay, len2 = ex * ex + ey * ey;
    const float s = len2 > 0 ? std::clamp(((x - ax) * ex + (y - ay) * ey) / len2, 0.0f, 1.0f) : 0.0f;
    const float dx = x - (ax + s * ex), dy = y - (ay + s * ey);
    nearest = std::min(nearest, std::sqrt(dx * dx + dy * dy));
  }
  if (!inside) return 0.0f;
  if (!(rim > 0)) return 1.0f;
  const float t = std::clamp(nearest / rim, 0.0f, 1.0f);
  return t * t * (3.0f - 2.0f * t);
}

std::array<float, 4> sampleTexture(const MeshTexture& t, float u, float v) {
  const float x = u * static_cast<float>(t.width) - 0.5f, y = v * static_cast<float>(t.height) - 0.5f;
  const float fx0 = std::floor(x), fy0 = std::floor(y);
  const float ax = x - fx0, ay = y - fy0;
  std::array<float, 4> out{0, 0, 0, 0};
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 2; ++i) {
      const uint32_t tx = wrapIndex(fx0 + static_cast<float>(i), t.width, t.wrap_s);
      const uint32_t ty = wrapIndex(fy0 + static_cast<float>(j), t.height, t.wrap_t);
      const uint8_t* p = &t.rgba[(static_cast<size_t>(ty) * static_cast<size_t>(t.width) + tx) * 4];
      const float w = (i ? ax : 1 - ax) * (j ? ay : 1 - ay);
      for (int k = 0; k < 3; ++k)
        out[static_cast<size_t>(k)] += w * srgbToLinear(static_cast<float>(p[k]) / 255.0f);
      out[3] += w * static_cast<float>(p[3]) / 255.0f;
    }
  return out;
}

Vec3 shadeMeshFragment(Vec3 normal_view, Vec3 view_pos, std::array<float, 4> albedo) {
  Vec3 n = normalize(normal_view);
  if (dot(n, view_pos) > 0) n = -n;  // two-sided: face the camera
  const Vec3 light = normalize(Vec3{static_cast<float>(SF_MESH_LIGHT_X), static_cast<float>(SF_MESH_LIGHT_Y),
                                    static_cast<float>(SF_MESH_LIGHT_Z)});
  const float shade = static_cast<float>(SF_MESH_AMBIENT) +
                      static_cast<float>(SF_MESH_DIFFUSE) * std::max(dot(n, light), 0.0f);
  auto encode = [&](float c) { return linearToSrgb(std::clamp(c * shade, 0.0f, 1.0f)); };
  return {encode(albedo[0]), encode(albedo[1]), encode(albedo[2])};
}

Vec3 cameraLitMeshFragment(Vec3 normal_view, Vec3 view_pos, std::array<float, 4> albedo) {
  const Vec3 v = normalize(view_pos * -1.0f);  // towards the eye
  Vec3 n = normalize(normal_view);
  if (dot(n, v) < 0) n = n * -1.0f;  // two-sided: face the camera
  const float shade =
      static_cast<float>(SF_MESH_AMBIENT) + static_cast<float>(SF_MESH_DIFFUSE) * std::max(dot(n, v), 0.0f);
  auto encode = [&](float c) { return linearToSrgb(std::clamp(c * shade, 0.0f, 1.0f)); };
  return {encode(albedo[0]), encode(albedo[1]), encode(albedo[2])};
}

const char* meshShadingName(MeshShading shading) {
  switch (shading) {
    case MeshShading::kLit:
      return "lit";
    case MeshShading::kUnlit:
      return "unlit";
    case MeshShading::kCamera:
      return "camera";
    case MeshShading::kAlbedo:
      return "albedo";
    case MeshShading::kCel:
      return "cel";
  }
  return "unknown";
}

Vec3 celMeshFragment(Vec3 normal_view, Vec3 view_pos, Vec3 light_view, std::array<float, 4> albedo) {
  Vec3 n = normalize(normal_view);
  if (dot(n, view_pos) > 0) n = -n;  // two-sided: face the camera
  const float ndl = std::clamp(dot(n, -normalize(light_view)), 0.0f, 1.0f);
  // The hull article's three bands (hull/hull_render.cpp celShade), with its narrow ramps.
  auto smooth = [](float e0, float e1, float x) {
    const float t = std::clamp((x - e0) / (e1 - e0), 0.0f, 1.0f);
    return t * t * (3.0f - 2.0f * t);
  };
  float band = 0.62f + (0.88f - 0.62f) * smooth(0.22f, 0.28f, ndl);
  band = band + (1.12f - band) * smooth(0.52f, 0.58f, ndl);
  auto encode = [&](float c) {
    return std::clamp(linearToSrgb(std::clamp(c, 0.0f, 1.0f)) * band, 0.0f, 1.0f);
  };
  return {encode(albedo[0]), encode(albedo[1]), encode(albedo[2])};
}

namespace {

// The mesh's vertices after the view transform (normals by the inverse transpose), with their UVs and
// colours.
std::vector<ViewVertex> viewVertices(const RenderMesh& m, const Camera& cam) {
  const Mat4 to_view = cam.world_to_camera * m.object_to_world;
  const Mat3 normal_to_view = transpose(inverse(to_view.linear()));
  std::vector<ViewVertex> vv(m.positions.size());
  for (size_t i = 0; i < vv.size(); ++i) {
    vv[i].pos = transformPoint(to_view, m.positions[i]);
    if (!m.normals.empty()) vv[i].normal = normal_to_view * m.normals[i];
    if (!m.uvs.empty()) vv[i].uv[0] = m.uvs[i][0], vv[i].uv[1] = m.uvs[i][1];
    if (!m.colors.empty())
      for (size_t k = 0; k < 4; ++k) vv[i].color[k] = m.colors[i][k];
  }
  return vv;
}

// Clips a view-space triangle against z >= near and appends the (at most two) screen triangles of the result
// that cover a row of pixels, wound with positive area.
void appendScreenTriangles(const ViewVertex (&in)[3], int mesh, const Camera& cam, float jx, float jy,
                           std::vector<ScreenTriangle>& tris) {
  const float near = static_cast<float>(SF_MESH_NEAR);
  const Vec3 face = cross(in[1].pos - in[0].pos, in[2].pos - in[0].pos);
  // Sutherland-Hodgman against z >= near: a triangle becomes at most a quad.
  ViewVertex poly[4];
  int count = 0;
  for (int k = 0; k < 3; ++k) {
    const ViewVertex& a = in[k];
    const ViewVertex& b = in[(k + 1) % 3];
    const bool a_in = a.pos.z >= near, b_in = b.pos.z >= near;
    if (a_in) poly[count++] = a;
    if (a_in != b_in) poly[count++] = lerp(a, b, (near - a.pos.z) / (b.pos.z - a.pos.z));
  }
  for (int k = 1; k + 1 < count; ++k) {
    ScreenTriangle st;
    st.v[0] = poly[0], st.v[1] = poly[k], st.v[2] = poly[k + 1];
    st.face_normal = face;
    st.mesh = mesh;
    st.jx = jx, st.jy = jy;
    float ymin = INFINITY, ymax = -INFINITY;
    for (int j = 0; j < 3; ++j) {
      const Vec3 p = st.v[j].pos;
      st.sx[j] = cam.fx * p.x / p.z + cam.cx;
      st.sy[j] = cam.fy * p.y / p.z + cam.cy;
      ymin = std::min(ymin, st.sy[j]), ymax = std::max(ymax, st.sy[j]);
    }
    const float area = edge(st.sx[0], st.sy[0], st.sx[1], st.sy[1], st.sx[2], st.sy[2]);
    if (!(std::abs(area) > 0) || !std::isfinite(area)) continue;
    if (area < 0) {
      std::swap(st.v[1], st.v[2]);
      std::swap(st.sx[1], st.sx[2]);
      std::swap(st.sy[1], st.sy[2]);
    }
    st.y0 = static_cast<int>(std::clamp(std::ceil(ymin - 0.5f), 0.0f, static_cast<float>(cam.height)));
    st.y1 =
        static_cast<int>(std::clamp(std::floor(ymax - 0.5f) + 1.0f, 0.0f, static_cast<float>(cam.height)));
    if (st.y0 < st.y1) tris.push_back(st);
  }
}

// Shades a fragment of triangle t of mesh m at perspective-correct weights w (times z, the depth) into out:
// the interpolated attributes, the albedo (base colour x vertex colour x texture) and the mesh's shading.
void shadeFragment(const RenderMesh& m, const Camera& cam, const ScreenTriangle& t, const float (&w)[3],
                   float z, Vec3& out) {
  ViewVertex f;
  f.pos = Vec3{};
  f.normal = Vec3{};
  f.uv[0] = f.uv[1] = 0;
  for (float& c : f.color) c = 0;
  for (int k = 0; k < 3; ++k) {
    const float wk = w[k] * z;
    f.pos = f.pos + t.v[k].pos * wk;
    f.normal = f.normal + t.v[k].normal * wk;
    for (int c = 0; c < 2; ++c) f.uv[c] += t.v[k].uv[c] * wk;
    for (int c = 0; c < 4; ++c) f.color[c] += t.v[k].color[c] * wk;
  }
  std::array<float, 4> albedo = m.base_color;
  for (size_t c = 0; c < 4; ++c) albedo[c] *= f.color[c];
  if (m.texture && !m.uvs.empty()) {
    std::array<float, 4> tex = sampleTexture(*m.texture, f.uv[0], f.uv[1]);
    for (size_t c = 0; c < 4; ++c) albedo[c] *= tex[c];
  }
  const Vec3 normal = !m.hasNormals() ? t.face_normal : f.normal;
  switch (m.shading) {
    case MeshShading::kLit:
      out = shadeMeshFragment(normal, f.pos, albedo);
      break;
    case MeshShading::kCamera:
      out = cameraLitMeshFragment(normal, f.pos, albedo);
      break;
    case MeshShading::kUnlit:
      out = {std::clamp(albedo[0], 0.0f, 1.0f), std::clamp(albedo[1], 0.0f, 1.0f),
             std::clamp(albedo[2], 0.0f, 1.0f)};
      break;
    case MeshShading::kAlbedo:
      out = {linearToSrgb(std::clamp(albedo[0], 0.0f, 1.0f)), linearToSrgb(std::clamp(albedo[1], 0.0f, 1.0f)),
             linearToSrgb(std::clamp(albedo[2], 0.0f, 1.0f))};
      break;
    case MeshShading::kCel:
      out = celMeshFragment(normal, f.pos, cam.world_to_camera.linear() * m.cel_light, albedo);
      break;
  }
}

// Scan-converts triangle t of mesh m over rows [by0, by1): depth test, mask coverage, then the fragment.
void rasterizeTriangleRows(const ScreenTriangle& t, const RenderMesh& m,
                           const std::vector<std::array<float, 2>>& mask, const Camera& cam, int by0, int by1,
                           MeshLayer& layer) {
  const float rim = m.mask_rim * static_cast<float>(cam.width);
  float xmin = std::min({t.sx[0], t.sx[1], t.sx[2]}), xmax = std::max({t.sx[0], t.sx[1], t.sx[2]});
  const int x0 = static_cast<int>(std::clamp(std::ceil(xmin - 0.5f), 0.0f, static_cast<float>(cam.width)));
  const int x1 =
      static_cast<int>(std::clamp(std::floor(xmax - 0.5f) + 1.0f, 0.0f, static_cast<float>(cam.width)));
  const float area = edge(t.sx[0], t.sy[0], t.sx[1], t.sy[1], t.sx[2], t.sy[2]);
  bool tl[3];
  for (int k = 0; k < 3; ++k) tl[k] = topLeft(t.sx[k], t.sy[k], t.sx[(k + 1) % 3], t.sy[(k + 1) % 3]);
  for (int y = std::max(by0, t.y0); y < std::min(by1, t.y1); ++y) {
    const float py = static_cast<float>(y) + 0.5f;
    for (int x = x0; x < x1; ++x) {
      const float px = static_cast<float>(x) + 0.5f;
      float e[3];
      bool inside = true;
      for (int k = 0; k < 3 && inside; ++k) {
        // Edge k is opposite vertex (k + 2) % 3; its weight goes to that vertex.
        e[k] = edge(t.sx[k], t.sy[k], t.sx[(k + 1) % 3], t.sy[(k + 1) % 3], px, py);
        inside = e[k] > 0 || (e[k] == 0 && tl[k]);
      }
      if (!inside) continue;
      // Screen barycentrics, then perspective-correct weights b_i / z_i.
      const float b[3] = {e[1] / area, e[2] / area, e[0] / area};
      float w[3], wsum = 0;
      for (int k = 0; k < 3; ++k) w[k] = b[k] / t.v[k].pos.z, wsum += w[k];
      const float z = 1.0f / wsum;
      const size_t pix = static_cast<size_t>(y) * static_cast<size_t>(cam.width) + static_cast<size_t>(x);
      if (!(z < layer.depth[pix])) continue;
      const float alpha =
          mask.empty() ? m.opacity : m.opacity * maskCoverage(mask, px + t.jx, py + t.jy, rim);
      if (!(alpha > 0)) continue;  // not drawn: no colour, no depth
      layer.depth[pix] = z;
      layer.alpha[pix] = alpha;
      shadeFragment(m, cam, t, w, z, layer.color[pix]);
    }
  }
}

}  // namespace

MeshLayer rasterizeMeshes(std::span<const RenderMesh> meshes, const Camera& cam) {
  const size_t pixels = static_cast<size_t>(cam.width) * static_cast<size_t>(cam.height);
  auto emptyLayer = [&] {
    MeshLayer layer;
    layer.width = cam.width, layer.height = cam.height;
    layer.color.assign(pixels, Vec3{});
    layer.depth.assign(pixels, std::numeric_limits<float>::infinity());
    layer.alpha.assign(pixels, 1.0f);
    return layer;
  };
  MeshLayer layer = emptyLayer();
  std::vector<std::vector<std::array<float, 2>>> masks(meshes.size());  // pixel polygons (empty: none)

  // Vertex stage, once for every pass: the meshes' view-space vertices (none for a mesh of opacity 0).
  std::vector<std::vector<ViewVertex>> views(meshes.size());
  std::vector<Vec3> skinned_p, skinned_n;
  for (size_t mi = 0; mi < meshes.size(); ++mi) {
    RenderMesh m = meshes[mi];
    if (std::string why = m.validate(); !why.empty()) throw Error("mesh " + std::to_string(mi) + ": " + why);
    if (!m.skin.empty()) {  // the CPU reference of the Vulkan frame's skin pass
      skinned_p.resize(m.skin.vertexCount());
      skinned_n.resize(m.skin.normals.size());
      m.skin.run(skinned_p, skinned_n);
      m.positions = skinned_p;
      m.normals = skinned_n;
      m.skin = {};
    }
    if (m.shading == MeshShading::kCel && !(length(m.cel_light) > 0))
      throw Error("mesh " + std::to_string(mi) + ": the cel key light direction is zero");
    if (!(m.opacity > 0)) continue;  // nothing of it is drawn
    masks[mi] = projectMeshMask(m, cam);
    views[mi] = viewVertices(m, cam);
  }

  // One pass: near clipping and projection (meshes of more than one sample shifted by (jx, jy) from the pixel
  // centre: the camera's principal point moved by minus that), then the fragment stage over bands of rows;
  // each band walks the triangles that reach it.
  std::vector<ScreenTriangle> tris;
  auto pass = [&](float jx, float jy, MeshLayer& out) {
    tris.clear();
    Camera shifted = cam;
    shifted.cx = cam.cx - jx, shifted.cy = cam.cy - jy;
    for (size_t mi = 0; mi < meshes.size(); ++mi) {
      const RenderMesh& m = meshes[mi];
      const std::vector<ViewVertex>& vv = views[mi];
      if (vv.empty()) continue;
      const bool at_samples = m.samples > 1;
      for (size_t t = 0; t < m.triangleCount(); ++t) {
        ViewVertex in[3];
        for (size_t k = 0; k < 3; ++k) in[k] = vv[m.indices.empty() ? t * 3 + k : m.indices[t * 3 + k]];
        appendScreenTriangles(in, static_cast<int>(mi), at_samples ? shifted : cam, at_samples ? jx : 0.0f,
                              at_samples ? jy : 0.0f, tris);
      }
    }
    if (tris.empty()) return;
    constexpr int kBand = 16;
    const int bands = (cam.height + kBand - 1) / kBand;
    parallelFor(static_cast<size_t>(bands), [&](size_t band) {
      const int by0 = static_cast<int>(band) * kBand, by1 = std::min(cam.height, by0 + kBand);
      for (const ScreenTriangle& t : tris) {
        if (t.y1 <= by0 || t.y0 >= by1) continue;
        rasterizeTriangleRows(t, meshes[static_cast<size_t>(t.mesh)], masks[static_cast<size_t>(t.mesh)], cam,
                              by0, by1, out);
      }
    });
  };
  pass(0.0f, 0.0f, layer);  // the pixel centres: the whole layer when it has one sample
  const uint32_t samples = meshLayerSamples(meshes);
  if (samples == 1) return layer;

  // The sample passes, folded pixel by pixel in sample order, then the resolve (mesh.h).
  std::vector<MeshSampleState> state(pixels);
  for (size_t i = 0; i < pixels; ++i) state[i].matched = layer.depth[i] < INFINITY;
  for (const std::array<float, 2>& at : meshSamplePattern(samples)) {
    MeshLayer sample = emptyLayer();
    pass(at[0] - 0.5f, at[1] - 0.5f, sample);
    for (size_t i = 0; i < pixels; ++i)
      accumulateMeshSample(state[i], layer.color[i], layer.alpha[i], sample.depth[i] < INFINITY,
                           sample.color[i], sample.alpha[i], sample.depth[i]);
  }
  const float n = static_cast<float>(samples);
  for (size_t i = 0; i < pixels; ++i) {
    const MeshSampleState& st = state[i];
    if (st.matched) continue;  // fully covered by the centre's colour and alpha: the centre's fragment
    if (st.sum_alpha > 0) {
      layer.color[i] = st.sum_color / st.sum_alpha;
      layer.alpha[i] = st.sum_alpha / n;
      layer.depth[i] = st.nearest;
    } else {
      layer.color[i] = Vec3{};
      layer.alpha[i] = 1.0f;
      layer.depth[i] = std::numeric_limits<float>::infinity();
    }
  }
  return layer;
}

}  // namespace sf
