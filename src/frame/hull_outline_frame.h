// The hull outline in the frame (hull/outline.h; docs/architecture.md "Hull outline"): which hulls of a posed
// scene are outlined at the frame's time, grouped by style, each group's coverage mask drawn as a frame of
// its hulls alone, and the outline composited over the frame: on the CPU by the reference, on Vulkan by the
// outline's image passes (hull/outline_pass.h). A frame without an outlined hull does none of it.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "hull/outline.h"
#include "render/cpu_renderer.h"
#include "scene/scene.h"

namespace sf {

class VulkanRenderer;
namespace hull {
class OutlineGpu;
}

// The hulls of one outline style: the frame's objects and meshes with every one that is not theirs left out
// or, with keep_hidden (Vulkan: the renderer keeps its objects resident by their order), kept in place with
// a transform that collapses it to a point behind the camera, so that it draws nothing.
struct HullOutlineGroup {
  hull::OutlineStyle style;
  std::vector<RenderObject> objects;
  std::vector<RenderMesh> meshes;
};

// The outline groups of a frame posed into `posed` (SceneFrame of `scene` at time t) whose render objects
// and meshes are `objects` and `meshes`; empty when no hull is outlined.
std::vector<HullOutlineGroup> hullOutlineGroups(const Scene& scene, const SceneFrame& posed, double t,
                                                std::span<const RenderObject> objects,
                                                std::span<const RenderMesh> meshes, const Camera& cam,
                                                bool keep_hidden);

// CPU: each group's mask (its hulls drawn alone over black) and its outline over `image`, in order.
void applyHullOutlinesCpu(ImageRGBA& image, std::span<const HullOutlineGroup> groups, const Camera& cam,
                          const RenderSettings& settings);

// Vulkan: draws each group's mask frame into `gpu`'s masks and returns the composite passes the frame
// records after its own (in group order).
std::vector<std::unique_ptr<ImagePass>> drawHullOutlineMasks(VulkanRenderer& renderer, hull::OutlineGpu& gpu,
                                                             std::span<const HullOutlineGroup> groups,
                                                             const Camera& cam,
                                                             const RenderSettings& settings);

}  // namespace sf
