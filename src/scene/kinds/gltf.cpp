#include "scene/kinds/gltf.h"

#include <filesystem>

#include "core/error.h"
#include "scene/kinds/splats.h"

namespace sf {

namespace {

struct GltfPosed : PosedState {
  GltfModel::Pose pose;
};

}  // namespace

std::string GltfObject::describe(const SceneObject& object) const {
  std::string what = gaussianCount(object);
  if (model_->drawnPrimitives() > 0)
    what +=
        (what.empty() ? "" : ", ") + std::to_string(model_->drawnPrimitives()) + " mesh primitives (" +
        std::to_string(model_->vertexCount()) + " vertices)" +
        (object.clip >= 0 ? ", clip '" + model_->clips()[static_cast<size_t>(object.clip)].name + "'" : "");
  return what;
}

void GltfObject::pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const {
  if (object.cloud && object.cloud->size() > 0)
    out.objects.push_back({object.cloud.get(), object.object_to_world, {}, {}});
  GltfModel::Pose& pose = out.stateAs<GltfPosed>().pose;
  pose.skinning = object.skinning;
  pose.skin_in_renderer = ctx.gpu;  // skinned and morphed meshes: the Vulkan frame's skin pass
  model_->pose(object.clip, object.clipTime(ctx.time), pose);
  std::vector<RenderMesh> meshes = model_->renderMeshes(pose, object.object_to_world);
  out.meshes.insert(out.meshes.end(), meshes.begin(), meshes.end());
}

std::string fileKey(const std::string& path) {
  std::error_code ec;
  std::string key = std::filesystem::weakly_canonical(path, ec).string();
  return ec ? path : key;
}

void loadGltfObject(SceneObject& obj, const std::string& path, const std::string& clip,
                    std::map<std::string, std::shared_ptr<const GltfModel>>* cache) {
  std::shared_ptr<const GltfModel> model;
  const std::string key = fileKey(path);
  if (cache && cache->count(key))
    model = cache->at(key);
  else
    model = std::make_shared<GltfModel>(path);
  if (cache) (*cache)[key] = model;
  obj.clip = model->objectClip(path, clip);
  if (model->splats().size() > 0) obj.cloud = std::shared_ptr<const GaussianCloud>(model, &model->splats());
  obj.kind = std::make_shared<GltfObject>(std::move(model));
}

bool gaussiansOnly(const SceneObject& obj, const std::string& clip) {
  const GltfModel* m = obj.model();
  return m && m->drawnPrimitives() == 0 && m->clips().empty() && clip.empty();
}

}  // namespace sf
