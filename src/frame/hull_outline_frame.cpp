#include "frame/hull_outline_frame.h"

#include <cstring>

#include "hull/outline_pass.h"
#include "render/vulkan_renderer.h"
#include "scene/kinds/hull.h"

namespace sf {
namespace {

// Collapses everything to one point 1000 units behind the camera: splats there are culled by the near
// plane, triangles have no area.
Mat4 hiddenTransform(const Camera& cam) {
  const Mat4 camera_to_world = inverseAffine(cam.world_to_camera);
  const Vec3 behind = transformPoint(camera_to_world, Vec3{0, 0, -1000});
  Mat4 m;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) m.m[r][c] = 0;
    m.m[r][3] = behind[r];
  }
  return m;
}

bool sameObject(const RenderObject& a, const RenderObject& b) {
  return a.cloud == b.cloud && a.gpu_source == b.gpu_source && a.positions.data() == b.positions.data() &&
         std::memcmp(&a.object_to_world, &b.object_to_world, sizeof(Mat4)) == 0;
}

bool sameMesh(const RenderMesh& a, const RenderMesh& b) {
  return a.positions.data() == b.positions.data() && a.indices.data() == b.indices.data() &&
         a.vertexCount() == b.vertexCount() &&
         std::memcmp(&a.object_to_world, &b.object_to_world, sizeof(Mat4)) == 0;
}

RenderSettings maskSettings(RenderSettings s) {
  s.background = {0, 0, 0};
  s.depth = false;
  return s;
}

}  // namespace

std::vector<HullOutlineGroup> hullOutlineGroups(const Scene& scene, const SceneFrame& posed, double t,
                                                std::span<const RenderObject> objects,
                                                std::span<const RenderMesh> meshes, const Camera& cam,
                                                bool keep_hidden) {
  std::vector<HullOutlineGroup> groups;
  std::vector<std::vector<size_t>> members;  // per group: the scene objects outlined in its style
  for (size_t i = 0; i < scene.objects.size() && i < posed.object_ranges.size(); ++i) {
    const HullObject* h = scene.objects[i].as<HullObject>();
    if (!h) continue;
    const std::optional<hull::OutlineStyle> style =
        hull::outlineAt(h->outline, h->script ? &h->script->script() : nullptr, t);
    if (!style) continue;
    size_t g = 0;
    while (g < groups.size() && !(groups[g].style == *style)) ++g;
    if (g == groups.size()) groups.push_back({*style, {}, {}}), members.emplace_back();
    members[g].push_back(i);
  }
  if (groups.empty()) return groups;
  const Mat4 hidden = hiddenTransform(cam);
  for (size_t g = 0; g < groups.size(); ++g) {
    auto outlinedObject = [&](const RenderObject& o) {
      for (size_t i : members[g])
        for (size_t k = posed.object_ranges[i][0]; k < posed.object_ranges[i][1]; ++k)
          if (sameObject(posed.objects[k], o)) return true;
      return false;
    };
    auto outlinedMesh = [&](const RenderMesh& m) {
      for (size_t i : members[g])
        for (size_t k = posed.mesh_ranges[i][0]; k < posed.mesh_ranges[i][1]; ++k)
          if (sameMesh(posed.meshes[k], m)) return true;
      return false;
    };
    for (const RenderObject& o : objects) {
      if (outlinedObject(o)) {
        groups[g].objects.push_back(o);
      } else if (keep_hidden) {
        groups[g].objects.push_back(o);
        groups[g].objects.back().object_to_world = hidden;
      }
    }
    for (const RenderMesh& m : meshes) {
      if (outlinedMesh(m)) {
        groups[g].meshes.push_back(m);
      } else if (keep_hidden) {
        groups[g].meshes.push_back(m);
        groups[g].meshes.back().object_to_world = hidden;
      }
    }
  }
  return groups;
}

void applyHullOutlinesCpu(ImageRGBA& image, std::span<const HullOutlineGroup> groups, const Camera& cam,
                          const RenderSettings& settings) {
  const RenderSettings mask_settings = maskSettings(settings);
  for (const HullOutlineGroup& g : groups) {
    std::vector<float> mask(static_cast<size_t>(image.width) * static_cast<size_t>(image.height), 0.0f);
    if (!g.objects.empty() || !g.meshes.empty())
      mask = hull::coverageMask(renderCpu(g.objects, cam, mask_settings, nullptr, g.meshes));
    hull::applyOutline(image, mask, g.style);
  }
}

std::vector<std::unique_ptr<ImagePass>> drawHullOutlineMasks(VulkanRenderer& renderer, hull::OutlineGpu& gpu,
                                                             std::span<const HullOutlineGroup> groups,
                                                             const Camera& cam,
                                                             const RenderSettings& settings) {
  std::vector<std::unique_ptr<ImagePass>> passes;
  gpu.reserve(groups.size(), static_cast<uint32_t>(cam.width), static_cast<uint32_t>(cam.height));
  const RenderSettings mask_settings = maskSettings(settings);
  for (size_t g = 0; g < groups.size(); ++g) {
    const hull::OutlineGpu::Capture capture(gpu, g);
    const ImagePass* capture_pass[] = {&capture};
    renderer.renderWithImagePasses(groups[g].objects, cam, mask_settings, capture_pass, nullptr,
                                   groups[g].meshes);
    passes.push_back(std::make_unique<hull::OutlineGpu::Composite>(gpu, g, groups[g].style));
  }
  return passes;
}

}  // namespace sf
