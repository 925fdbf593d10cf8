#include "scene/kinds/bundle.h"

#include "character/gpu_lift.h"
#include "scene/kinds/splats.h"

namespace sf {

std::string BundleObject::describe(const SceneObject& object) const {
  return gaussianCount(object) + " (decoder character, " + std::to_string(bundle_->bundle().branches.size()) +
         " branches, rig " + bundle_->bundle().rig.backend + ")";
}

void BundleObject::pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const {
  bundle_->update(ctx.cameraIn(object.object_to_world));  // its passes for this camera, seen from its frame
  RenderObject ro{&bundle_->cloud(), object.object_to_world};
  if (const character::BundleGpuPath* g = bundle_->gpuPath()) {
    ro.gpu_source = &g->source();
  } else {
    ro.positions = bundle_->cloud().positions;
    ro.covariances = bundle_->covariances();
    ro.dynamic = true;
  }
  out.objects.push_back(ro);
}

bool attachBundleGpu(GpuAttach& gpu, character::BundleCharacter& b) {
  if (b.gpuPath() || !b.gpuRefusal().empty()) return false;  // attached, or refused before (said once)
  if (std::string why = character::attachBundleGpuPath(gpu.context(), b); !why.empty()) {
    gpu.say("splatforge: warning: " + b.bundle().where + " runs on the CPU: " + why);
    b.setGpuRefusal(why);
    return false;
  }
  return true;
}

void BundleObject::attachGpu(const SceneObject&, GpuAttach& gpu) const {
  if (attachBundleGpu(gpu, *bundle_)) gpu.given(bundle_, [b = bundle_.get()] { b->setGpuPath(nullptr); });
}

void BundleObject::detachGpu(GpuAttach& gpu) const {
  gpu.takeBack(bundle_.get());
}

void loadBundleObject(SceneObject& obj, const std::string& dir) {
  std::shared_ptr<character::BundleCharacter> bundle = character::loadBundleCharacter(dir);
  obj.cloud = std::shared_ptr<const GaussianCloud>(bundle, &bundle->cloud());
  obj.kind = std::make_shared<BundleObject>(std::move(bundle));
}

}  // namespace sf
