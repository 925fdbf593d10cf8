#include "scene/kinds/splats.h"

#include "core/error.h"
#include "io/formats.h"

namespace sf {

std::string gaussianCount(const SceneObject& object) {
  return object.cloud ? std::to_string(object.cloud->size()) + " gaussians" : std::string();
}

std::string SplatsObject::describe(const SceneObject& object) const {
  return gaussianCount(object);
}

void SplatsObject::pose(const SceneObject& object, const PoseContext&, PoseSink& out) const {
  if (object.cloud && object.cloud->size() > 0)
    out.objects.push_back({object.cloud.get(), object.object_to_world, {}, {}});
}

bool SplatsObject::captureConvention(const SceneObject& object) const {
  return object.cloud && object.source != "placeholder";
}

const SceneObjectKind& splatsKind() {
  static const SplatsObject kind;
  return kind;
}

const SceneObjectKind& SceneObject::kindOf() const {
  return kind ? *kind : splatsKind();
}

std::shared_ptr<const GaussianCloud> loadCapture(const std::string& path,
                                                 std::vector<std::string>& warnings) {
  LoadedSplats loaded = loadSplats(path);
  if (loaded.cloud.size() == 0)
    throw Error(path + (loaded.dropped_non_finite ? ": holds no gaussian with finite values"
                                                  : ": contains no gaussians"));
  for (std::string& w : loaded.warnings) warnings.push_back(std::move(w));
  return std::make_shared<GaussianCloud>(std::move(loaded.cloud));
}

}  // namespace sf
