// glTF model objects: the model's meshes posed by its clip at the object's clip time, and its
// KHR_gaussian_splatting gaussians (the object's cloud) drawn as they are.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "model/gltf_model.h"
#include "scene/scene_object.h"

namespace sf {

class GltfObject final : public SceneObjectKind {
 public:
  explicit GltfObject(std::shared_ptr<const GltfModel> model) : model_(std::move(model)) {}
  std::string_view kindName() const override { return "gltf"; }
  std::string describe(const SceneObject& object) const override;
  void pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const override;
  const GltfModel* model() const override { return model_.get(); }
  bool drawsCloudAsIs() const override { return true; }

 private:
  std::shared_ptr<const GltfModel> model_;
};

// Fills a scene object from a glTF file: the model, its splats, the clip (empty: the first animation).
// Throws sf::Error. Objects of one scene that name the same file share one model through `cache`.
void loadGltfObject(SceneObject& obj, const std::string& path, const std::string& clip,
                    std::map<std::string, std::shared_ptr<const GltfModel>>* cache = nullptr);

// A glTF object that is a splat file in disguise: gaussians only (KHR_gaussian_splatting), no mesh, no
// animation, no clip asked for. Such a file is read as `info` reads it (a splat object), so a capture saved
// as .glb renders as its .ply, alone or in a scene.
bool gaussiansOnly(const SceneObject& obj, const std::string& clip);

// Identity of a file for sharing loads: its canonical path (the path itself when it cannot be resolved).
std::string fileKey(const std::string& path);

}  // namespace sf
