#include "scene/kinds/hull.h"

#include <cstdio>

#include "hull/hull_pass.h"
#include "scene/kinds/splats.h"
#include "scene/scene.h"

namespace sf {

std::string HullObject::describe(const SceneObject& object) const {
  return gaussianCount(object) + " in a splat hull (" + std::to_string(asset->hull.core.size()) + " core, " +
         std::to_string(asset->hull.shell.size()) + " shell, " +
         (live ? std::string("live, core ") + hull::liveCoreName(live_core) : hull::hullModeName(mode)) + ")";
}

void HullObject::pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const {
  hull::HullFrame& frame = out.stateAs<HullPosed>().frame;
  const Camera hull_cam = ctx.cameraIn(Mat4{});
  if (live) {
    if (script)
      for (const hull::HullEvent& ev : script->advance(*live, ctx.time))
        if (ev.type == hull::HullEvent::kGunSilenced)
          std::fprintf(stderr, "%s: %s\n", object.name.c_str(), ev.describe().c_str());
    live->buildFrame(object.object_to_world, ctx.time, ctx.scene.light, frame, out.objects, lod,
                     ctx.camera ? &hull_cam : nullptr,
                     live_core == hull::LiveCore::kMesh ? &out.meshes : nullptr);
  } else {
    hull::buildHullFrame(*asset, mode, object.object_to_world, hull_cam, ctx.time, ctx.scene.light, frame,
                         out.objects, out.meshes, lod);
  }
}

void HullObject::attachGpu(const SceneObject&, GpuAttach& gpu) const {
  if (!live || live->gpuPath()) return;  // live hulls: their effect pass runs in the frame
  auto pass = std::static_pointer_cast<const hull::HullPass>(
      gpu.shared("hull effect pass", [&] { return std::make_shared<hull::HullPass>(gpu.context()); }));
  hull::attachHullGpu(pass, *live);
  gpu.given(live, [h = live.get()] { h->setGpuPath(nullptr); });
}

void HullObject::detachGpu(GpuAttach& gpu) const {
  if (live) gpu.takeBack(live.get());
}

HullObject& loadHullObject(SceneObject& obj, const std::string& path) {
  std::shared_ptr<hull::HullAsset> asset = hull::HullAsset::load(path);
  obj.cloud = std::shared_ptr<const GaussianCloud>(asset, &asset->rest);
  auto kind = std::make_shared<HullObject>(std::move(asset));
  HullObject& h = *kind;
  obj.kind = std::move(kind);
  return h;
}

}  // namespace sf
