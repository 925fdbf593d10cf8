// Plain splat objects: a capture (PLY, SPZ, SOG, ...) or a placeholder, drawn as its cloud.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "scene/scene_object.h"

namespace sf {

class SplatsObject final : public SceneObjectKind {
 public:
  std::string_view kindName() const override { return "splats"; }
  std::string describe(const SceneObject& object) const override;
  void pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const override;
  bool captureConvention(const SceneObject& object) const override;
  bool drawsCloudAsIs() const override { return true; }
};

// The kind of objects whose `kind` is null.
const SceneObjectKind& splatsKind();

// A splat file read as `info` reads it. Throws sf::Error when it holds no gaussian; its warnings are added.
std::shared_ptr<const GaussianCloud> loadCapture(const std::string& path, std::vector<std::string>& warnings);

// "N gaussians" (empty without a cloud).
std::string gaussianCount(const SceneObject& object);

}  // namespace sf
