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
#include "core/limits.h"
#include "core/sh.h"
#include "io/byte_writer.h"
#include "io/gltf.h"

namespace sf {

namespace {

// ---- GLB writing -------------------------------------------------------------------------------------

constexpr uint32_t kGlbMagic = 0x46546C67;  // "glTF"
constexpr uint32_t kChunkJson = 0x4E4F534A;
constexpr uint32_t kChunkBin = 0x004E4942;
constexpr int kFloat = 5126, kUnsignedByte = 5121;
constexpr int kArrayBuffer = 34962;

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
  uint64_t total = 0;  // gaussians instanced so far: many nodes instancing one primitive multiply it
  int degree = 0;
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
      const GaussianCloud& source = mesh.primitives[p].splats.cloud;
      total += source.size();
      degree = std::max(degree, source.sh_degree);
      checkGaussianBudget(doc.path, total, degree,
                          cloudBytes(total, degree));  // the instances and their merged copy
      GltfSplatInstance inst;
      inst.node = static_cast<int>(k);
      inst.mesh = node.mesh;
      inst.primitive = static_cast<int>(p);
      inst.world = world[k];
      inst.cloud = mesh.primitives[p].splats.cloud;
      try {
        transformCloud(inst.cloud, inst.world);
      } catch (const Error& e) {
        throw Error(doc.path + ": nodes[" + std::to_string(k) + "] (meshes[" + std::to_string(node.mesh) +
                    "].primitives[" + std::to_string(p) + "]): " + e.what() +
                    "; KHR_gaussian_splatting leaves splat rendering undefined for it");
      }
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
  std::vector<const GaussianCloud*> parts;
  for (const GltfSplatInstance& inst : instances) {
    if (inst.cloud.color_space != instances[0].cloud.color_space)
      throw Error(doc.path + ": nodes[" + std::to_string(inst.node) +
                  "]: its splats' colorSpace differs from those of nodes[" +
                  std::to_string(instances[0].node) + "] (one cloud has one colour space)");
    parts.push_back(&inst.cloud);
  }
  return mergeClouds(parts);
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
  putLE<uint32_t>(out, kGlbMagic);
  putLE<uint32_t>(out, 2);
  putLE<uint32_t>(out, static_cast<uint32_t>(12 + 8 + text.size() + 8 + bin.size()));
  putLE<uint32_t>(out, static_cast<uint32_t>(text.size()));
  putLE<uint32_t>(out, kChunkJson);
  out.insert(out.end(), text.begin(), text.end());
  putLE<uint32_t>(out, static_cast<uint32_t>(bin.size()));
  putLE<uint32_t>(out, kChunkBin);
  out.insert(out.end(), bin.begin(), bin.end());
  return out;
}

}  // namespace sf
