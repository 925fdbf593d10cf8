// KHR_gaussian_splatting, following the extension's Release Candidate text (KhronosGroup/glTF,
// extensions/2.0/Khronos/KHR_gaussian_splatting/README.md; version recorded in docs/formats/gltf.md).
// Reading the attributes is io/gltf.cpp's job; this file places the primitives in the scene and writes
// GLB files (JSON through nlohmann::json, kept to io .cpp files).
#include "io/gltf_splats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/covariance.h"
#include "core/error.h"
#include "core/sh.h"
#include "io/gltf.h"

namespace sf {

namespace {

// ---- SH rotation -----------------------------------------------------------------------------------

// Rotation of SH coefficients: coefficients c' such that the rotated splat seen along d has the colour
// the original had along R^T d. Each degree l is invariant under rotation, so c'_l = X_l c_l for a
// (2l+1)x(2l+1) matrix; X_l is fitted by least squares over 64 directions with the engine's own basis
// (core/sh.h), so it follows its (INRIA, Condon-Shortley) conventions by construction.
class ShRotation {
 public:
  explicit ShRotation(const Mat3& r) {
    constexpr int kDirs = 64;
    float basis[kDirs][16], rotated[kDirs][16];
    const Mat3 rt = transpose(r);
    for (int i = 0; i < kDirs; ++i) {  // Fibonacci sphere
      double z = 1.0 - (2.0 * i + 1.0) / kDirs, rad = std::sqrt(1.0 - z * z);
      double phi = 2.399963229728653 * i;
      Vec3 d{static_cast<float>(rad * std::cos(phi)), static_cast<float>(rad * std::sin(phi)),
             static_cast<float>(z)};
      shBasis(3, d, basis[i]);
      shBasis(3, normalize(rt * d), rotated[i]);
    }
    for (int l = 1; l <= 3; ++l) {
      const int n = 2 * l + 1, first = l * l;
      // Normal equations (A^T A) X^T = A^T B, with A = basis and B = rotated restricted to degree l.
      double ata[7][7] = {}, atb[7][7] = {};
      for (int i = 0; i < kDirs; ++i)
        for (int j = 0; j < n; ++j)
          for (int k = 0; k < n; ++k) {
            ata[j][k] += static_cast<double>(basis[i][first + j]) * basis[i][first + k];
            atb[j][k] += static_cast<double>(basis[i][first + j]) * rotated[i][first + k];
          }
      // Gauss-Jordan with partial pivoting (A^T A is symmetric positive definite).
      for (int col = 0; col < n; ++col) {
        int pivot = col;
        for (int row = col + 1; row < n; ++row)
          if (std::abs(ata[row][col]) > std::abs(ata[pivot][col])) pivot = row;
        std::swap(ata[col], ata[pivot]);
        std::swap(atb[col], atb[pivot]);
        for (int row = 0; row < n; ++row) {
          if (row == col) continue;
          double f = ata[row][col] / ata[col][col];
          for (int k = 0; k < n; ++k) {
            ata[row][k] -= f * ata[col][k];
            atb[row][k] -= f * atb[col][k];
          }
        }
      }
      // Row j of the solution is M^T's row j: c'_j = sum_k M^T[j][k] c_k.
      for (int j = 0; j < n; ++j)
        for (int k = 0; k < n; ++k) m_[first + j][first + k] = atb[j][k] / ata[j][j];
    }
  }

  // Rotates one splat's coefficients ([coeff][rgb], degree 1..3 in place; DC is invariant).
  void apply(float* sh, int degree) const {
    float out[16][3];
    for (int l = 1; l <= degree; ++l) {
      const int n = 2 * l + 1, first = l * l;
      for (int j = 0; j < n; ++j)
        for (int c = 0; c < 3; ++c) {
          double sum = 0;
          for (int k = 0; k < n; ++k) sum += m_[first + j][first + k] * sh[3 * (first + k) + c];
          out[first + j][c] = static_cast<float>(sum);
        }
    }
    for (int k = 1; k < (degree + 1) * (degree + 1); ++k)
      for (int c = 0; c < 3; ++c) sh[3 * k + c] = out[k][c];
  }

 private:
  double m_[16][16] = {};
};

bool isIdentity(const Mat4& m) {
  const Mat4 identity;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      if (m.m[r][c] != identity.m[r][c]) return false;
  return true;
}

// Places a cloud given in a node's space into world space (see gltfSplatInstances).
void transformCloud(GaussianCloud& cloud, const Mat4& m, const std::string& where) {
  if (isIdentity(m)) return;
  const Mat3 l = m.linear();
  const float det = determinant(l);
  if (!(det > 0) || !std::isfinite(det))
    throw Error(where + ": world matrix " +
                (det < 0 ? "mirrors (negative determinant)" : "collapses an axis (zero scale)") +
                "; KHR_gaussian_splatting leaves splat rendering undefined for it");
  for (Vec3& p : cloud.positions) p = transformPoint(m, p);

  const Vec3 s{length(l.col(0)), length(l.col(1)), length(l.col(2))};
  Mat3 rot;  // the rotation of l: its columns normalised (exact when l = R * diagonal scale)
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) rot.m[i][j] = l.m[i][j] / s[j];
  const Quat q = quatFromRotationMatrix(rot);
  const float mean = (s.x + s.y + s.z) / 3.0f;
  const float tol = 1e-5f * mean;
  const bool similarity = std::abs(s.x - mean) <= tol && std::abs(s.y - mean) <= tol &&
                          std::abs(s.z - mean) <= tol && std::abs(dot(l.col(0), l.col(1))) <= tol * mean &&
                          std::abs(dot(l.col(0), l.col(2))) <= tol * mean &&
                          std::abs(dot(l.col(1), l.col(2))) <= tol * mean;
  for (size_t i = 0; i < cloud.size(); ++i) {
    if (similarity) {
      cloud.rotations[i] = normalize(q * cloud.rotations[i]);
      cloud.scales[i] = cloud.scales[i] * mean;
    } else {
      Mat3 sigma = covarianceMatrix(covarianceFromScaleRotation(cloud.scales[i], cloud.rotations[i]));
      ScaleRotation sr = decomposeCovariance(covarianceUpper(l * sigma * transpose(l)));
      cloud.scales[i] = sr.scale;
      cloud.rotations[i] = sr.rotation;
    }
  }
  if (cloud.sh_degree > 0) {
    const ShRotation sh_rotation(rotationMatrix(q));
    for (size_t i = 0; i < cloud.size(); ++i) sh_rotation.apply(cloud.shOf(i).data(), cloud.sh_degree);
  }
}

// ---- GLB writing -------------------------------------------------------------------------------------

constexpr uint32_t kGlbMagic = 0x46546C67;  // "glTF"
constexpr uint32_t kChunkJson = 0x4E4F534A;
constexpr uint32_t kChunkBin = 0x004E4942;
constexpr int kFloat = 5126, kUnsignedByte = 5121;
constexpr int kArrayBuffer = 34962;

void putU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}

float srgbToLinear(float c) {
  return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f);
}

uint8_t unorm8(float v) {
  return static_cast<uint8_t>(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f));
}

}  // namespace

std::vector<GltfSplatInstance> gltfSplatInstances(const GltfDocument& doc) {
  std::vector<int> roots;
  if (!doc.scenes.empty()) {
    roots = doc.scenes[static_cast<size_t>(std::max(doc.default_scene, 0))].roots;
  } else {
    for (size_t i = 0; i < doc.nodes.size(); ++i)
      if (doc.nodes[i].parent < 0) roots.push_back(static_cast<int>(i));
  }
  const std::vector<Mat4> world = doc.worldMatrices();
  std::vector<GltfSplatInstance> out;
  std::vector<int> stack(roots.rbegin(), roots.rend());
  while (!stack.empty()) {
    const size_t k = static_cast<size_t>(stack.back());
    stack.pop_back();
    const GltfNode& node = doc.nodes[k];
    for (auto c = node.children.rbegin(); c != node.children.rend(); ++c) stack.push_back(*c);
    if (node.mesh < 0) continue;
    const GltfMesh& mesh = doc.meshes[static_cast<size_t>(node.mesh)];
    for (size_t p = 0; p < mesh.primitives.size(); ++p) {
      if (!mesh.primitives[p].has_splats) continue;
      GltfSplatInstance inst;
      inst.node = static_cast<int>(k);
      inst.mesh = node.mesh;
      inst.primitive = static_cast<int>(p);
      inst.world = world[k];
      inst.cloud = mesh.primitives[p].splats.cloud;
      transformCloud(inst.cloud, inst.world,
                     doc.path + ": nodes[" + std::to_string(k) + "] (meshes[" + std::to_string(node.mesh) +
                         "].primitives[" + std::to_string(p) + "])");
      out.push_back(std::move(inst));
    }
  }
  return out;
}

GaussianCloud gltfSplatCloud(const GltfDocument& doc) {
  std::vector<GltfSplatInstance> instances = gltfSplatInstances(doc);
  if (instances.empty()) {
    bool any = false;
    for (const GltfMesh& mesh : doc.meshes)
      for (const GltfPrimitive& prim : mesh.primitives) any = any || prim.has_splats;
    throw Error(doc.path + (any ? ": no node of the scene instances a KHR_gaussian_splatting primitive"
                                : ": contains no KHR_gaussian_splatting primitive"));
  }
  if (instances.size() == 1) return std::move(instances[0].cloud);
  size_t total = 0;
  int degree = 0;
  for (const GltfSplatInstance& inst : instances) {
    total += inst.cloud.size();
    degree = std::max(degree, inst.cloud.sh_degree);
    if (inst.cloud.color_space != instances[0].cloud.color_space)
      throw Error(doc.path + ": nodes[" + std::to_string(inst.node) +
                  "]: its splats' colorSpace differs from those of nodes[" +
                  std::to_string(instances[0].node) + "] (one cloud has one colour space)");
  }
  GaussianCloud out;
  out.resize(total, degree);
  out.color_space = instances[0].cloud.color_space;
  size_t at = 0;
  for (const GltfSplatInstance& inst : instances) {
    const GaussianCloud& c = inst.cloud;
    std::copy(c.positions.begin(), c.positions.end(),
              out.positions.begin() + static_cast<std::ptrdiff_t>(at));
    std::copy(c.scales.begin(), c.scales.end(), out.scales.begin() + static_cast<std::ptrdiff_t>(at));
    std::copy(c.rotations.begin(), c.rotations.end(),
              out.rotations.begin() + static_cast<std::ptrdiff_t>(at));
    std::copy(c.opacities.begin(), c.opacities.end(),
              out.opacities.begin() + static_cast<std::ptrdiff_t>(at));
    for (size_t i = 0; i < c.size(); ++i) {
      std::span<float> dst = out.shOf(at + i);
      std::fill(dst.begin(), dst.end(), 0.0f);
      std::span<const float> src = c.shOf(i);
      std::copy(src.begin(), src.end(), dst.begin());
    }
    at += c.size();
  }
  return out;
}

std::vector<uint8_t> writeGltfSplats(const GaussianCloud& cloud) {
  using nlohmann::json;
  const size_t n = cloud.size();
  if (n == 0) throw Error("glTF: cannot write an empty cloud (a glTF accessor needs at least one element)");
  const size_t coefs = static_cast<size_t>(shCoeffCount(cloud.sh_degree));
  // 12 + 16 + 12 + 4 + 12 per coefficient + 4 bytes per splat; the GLB length field is 32 bits.
  const size_t bytes_per_splat = 48 + 12 * coefs;
  if (n > (std::numeric_limits<uint32_t>::max() - (1u << 20)) / bytes_per_splat)
    throw Error("glTF: " + std::to_string(n) + " splats do not fit in a GLB file (4 GiB)");

  std::vector<uint8_t> bin;
  bin.reserve(n * bytes_per_splat);
  json accessors = json::array(), views = json::array(), attributes = json::object();
  // Appends one tightly packed attribute as its own bufferView and accessor.
  auto add = [&](const std::string& semantic, const char* type, int component_type, const void* data,
                 size_t bytes, json extra) {
    const size_t offset = bin.size();
    const auto* p = static_cast<const uint8_t*>(data);
    bin.insert(bin.end(), p, p + bytes);
    views.push_back({{"buffer", 0}, {"byteOffset", offset}, {"byteLength", bytes}, {"target", kArrayBuffer}});
    json accessor = {
        {"bufferView", views.size() - 1}, {"componentType", component_type}, {"count", n}, {"type", type}};
    accessor.update(extra);
    attributes[semantic] = accessors.size();
    accessors.push_back(std::move(accessor));
  };
  const std::string prefix = "KHR_gaussian_splatting:";
  std::vector<float> f;

  Vec3 lo = cloud.positions[0], hi = cloud.positions[0];
  for (const Vec3& p : cloud.positions)
    for (int k = 0; k < 3; ++k) {
      lo[k] = std::min(lo[k], p[k]);
      hi[k] = std::max(hi[k], p[k]);
    }
  add("POSITION", "VEC3", kFloat, cloud.positions.data(), n * 12,
      {{"min", {lo.x, lo.y, lo.z}}, {"max", {hi.x, hi.y, hi.z}}});
  f.resize(4 * n);
  for (size_t i = 0; i < n; ++i) {
    const Quat& q = cloud.rotations[i];
    f[4 * i] = q.x, f[4 * i + 1] = q.y, f[4 * i + 2] = q.z, f[4 * i + 3] = q.w;
  }
  add(prefix + "ROTATION", "VEC4", kFloat, f.data(), n * 16, json::object());
  add(prefix + "SCALE", "VEC3", kFloat, cloud.scales.data(), n * 12, json::object());
  add(prefix + "OPACITY", "SCALAR", kFloat, cloud.opacities.data(), n * 4, json::object());
  f.resize(3 * n);
  for (int l = 0; l <= cloud.sh_degree; ++l)
    for (int m = 0; m < 2 * l + 1; ++m) {
      const size_t k = static_cast<size_t>(l * l + m);
      for (size_t i = 0; i < n; ++i) std::memcpy(&f[3 * i], cloud.shOf(i).data() + 3 * k, 12);
      add(prefix + "SH_DEGREE_" + std::to_string(l) + "_COEF_" + std::to_string(m), "VEC3", kFloat, f.data(),
          n * 12, json::object());
    }
  // COLOR_0 fallback (the extension's "Fallback Behavior"): the diffuse colour 0.5 + C0 * DC clamped to
  // [0, 1], decoded from sRGB to linear for srgb_rec709_display (glTF colours are linear), alpha = opacity.
  std::vector<uint8_t> color(4 * n);
  for (size_t i = 0; i < n; ++i) {
    const float* dc = cloud.shOf(i).data();
    for (size_t c = 0; c < 3; ++c) {
      float v = std::clamp(shDcToColor(dc[c]), 0.0f, 1.0f);
      color[4 * i + c] = unorm8(cloud.color_space == ColorSpace::kSrgb ? srgbToLinear(v) : v);
    }
    color[4 * i + 3] = unorm8(cloud.opacities[i]);
  }
  add("COLOR_0", "VEC4", kUnsignedByte, color.data(), color.size(), {{"normalized", true}});

  json gltf = {
      {"asset", {{"version", "2.0"}, {"generator", "Splatforge"}}},
      {"extensionsUsed", {"KHR_gaussian_splatting"}},
      {"scene", 0},
      {"scenes", {{{"nodes", {0}}}}},
      {"nodes", {{{"mesh", 0}}}},
      {"meshes",
       {{{"primitives",
          {{{"mode", 0},
            {"attributes", attributes},
            {"extensions",
             {{"KHR_gaussian_splatting",
               {{"kernel", "ellipse"},
                {"colorSpace",
                 cloud.color_space == ColorSpace::kSrgb ? "srgb_rec709_display" : "lin_rec709_display"},
                {"projection", "perspective"},
                {"sortingMethod", "cameraDistance"}}}}}}}}}}},
      {"accessors", accessors},
      {"bufferViews", views},
      {"buffers", {{{"byteLength", bin.size()}}}},
  };
  std::string text = gltf.dump();
  while (text.size() % 4) text += ' ';
  while (bin.size() % 4) bin.push_back(0);
  std::vector<uint8_t> out;
  out.reserve(28 + text.size() + bin.size());
  putU32(out, kGlbMagic);
  putU32(out, 2);
  putU32(out, static_cast<uint32_t>(12 + 8 + text.size() + 8 + bin.size()));
  putU32(out, static_cast<uint32_t>(text.size()));
  putU32(out, kChunkJson);
  out.insert(out.end(), text.begin(), text.end());
  putU32(out, static_cast<uint32_t>(bin.size()));
  putU32(out, kChunkBin);
  out.insert(out.end(), bin.begin(), bin.end());
  return out;
}

}  // namespace sf
