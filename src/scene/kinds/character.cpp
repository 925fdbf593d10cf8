#include "scene/kinds/character.h"

#include <filesystem>

#include "character/bundle.h"
#include "character/world.h"
#include "core/error.h"
#include "scene/kinds/bundle.h"
#include "scene/kinds/splats.h"

namespace sf {

std::string CharacterObject::describe(const SceneObject& object) const {
  return gaussianCount(object) + " bound to " + character_->model().document().path;
}

void CharacterObject::pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const {
  CharacterPosed& posed = out.stateAs<CharacterPosed>();
  character::Character::Frame& f = posed.frame;
  const character::Character& ch = *character_;
  f.pose.skinning = object.skinning;
  // On the GPU the bound mesh is skinned by the frame's skin pass (when its influences allow), else posed
  // here; a frame its optional parts change is deformed here for both (poseCharacterFrame).
  const bool gpu_skin = ctx.gpu && ch.gpuSkinnable();
  const bool gpu = character::poseCharacterFrame(ch, ctx.gpu, f, [&](bool pose_only) {
    if (pose_only)
      ch.pose(object.clip, object.clipTime(ctx.time), f, nullptr, gpu_skin);
    else
      ch.deform(object.clip, object.clipTime(ctx.time), f);
  });
  const Mat4 to_world =
      object.object_to_world * ch.model().meshToModel(f.pose, static_cast<size_t>(ch.boundDraw()));
  if (gpu) posed.deform = ch.deformSource(f, gpu_skin);
  character::appendCharacterFrame(ch, f, to_world, ctx.camera, gpu ? &posed.deform : nullptr, out.objects,
                                  out.meshes);
}

std::string orlRefusalOf(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return {};
  try {
    std::shared_ptr<character::BundleResolver> files = character::directoryResolver(dir);
    if (!character::isCharacterBundle(*files)) return {};
    return character::orlRefusal(character::loadCharacterBundle(files));
  } catch (const std::exception&) {
    return {};
  }
}

void loadCharacterObject(SceneObject& obj, const std::string& dir, const std::string& clip,
                         std::shared_ptr<const character::Character> shared) {
  if (character::isCharacterBundle(*character::directoryResolver(dir))) {  // a decoder character
    if (!clip.empty()) throw Error(dir + ": a decoder character has no body clips (remove \"clip\")");
    loadBundleObject(obj, dir);
    return;
  }
  std::shared_ptr<const character::Character> ch =
      shared ? std::move(shared)
             : std::make_shared<const character::Character>(character::Character::loadPackage(dir));
  obj.clip = ch->objectClip(dir, clip);
  obj.cloud = std::shared_ptr<const GaussianCloud>(ch, &ch->splats());
  obj.kind = std::make_shared<CharacterObject>(std::move(ch));
}

}  // namespace sf
