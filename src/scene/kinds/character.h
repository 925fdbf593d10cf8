// Splat character objects (a character package directory): the character's splats deformed by its skin
// at the object's clip time, with its optional parts (mouth, teeth, correctives); on the Vulkan frame the
// deform runs in the frame's deform pass.
#pragma once

#include <memory>
#include <string>

#include "character/character.h"
#include "scene/scene_object.h"

namespace sf {

class CharacterObject final : public SceneObjectKind {
 public:
  explicit CharacterObject(std::shared_ptr<const character::Character> character)
      : character_(std::move(character)) {}
  std::string_view kindName() const override { return "character"; }
  std::string describe(const SceneObject& object) const override;
  void pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const override;
  const GltfModel* model() const override { return &character_->model(); }
  bool posedContent() const override { return true; }
  const character::Character& character() const { return *character_; }
  const std::shared_ptr<const character::Character>& characterPtr() const { return character_; }

 private:
  std::shared_ptr<const character::Character> character_;
};

// A character's posed storage: its deformed frame and, on the GPU, its deform source.
struct CharacterPosed : PosedState {
  character::Character::Frame frame;
  SplatDeformSource deform;
};

// Fills a scene object from a character directory: a splat character package (its splats and model; the
// clip defaults to the package's; `shared`: the same package loaded by another object) or a decoder character
// bundle (scene/kinds/bundle.h). Throws sf::Error.
void loadCharacterObject(SceneObject& obj, const std::string& dir, const std::string& clip,
                         std::shared_ptr<const character::Character> shared = nullptr);

// Why a character directory is refused outright: a decoder character bundle that declares (or defaults to)
// the orl rig backend (character::orlRefusal). Empty otherwise, and for a bundle that does not parse (loading
// it then says why, as a placeholder's warning).
std::string orlRefusalOf(const std::string& dir);

}  // namespace sf
