// Decoder character objects (a character bundle directory, docs/formats/character-bundle.md): their decoders
// and UV lift run for each frame's camera (seen from the object's frame) when it or the face changed; on a
// Vulkan device they run inside the frame (character/gpu_lift.h).
#pragma once

#include <memory>
#include <string>

#include "character/bundle_character.h"
#include "scene/scene_object.h"

namespace sf {

class BundleObject final : public SceneObjectKind {
 public:
  explicit BundleObject(std::shared_ptr<character::BundleCharacter> bundle) : bundle_(std::move(bundle)) {}
  std::string_view kindName() const override { return "decoder_character"; }
  std::string describe(const SceneObject& object) const override;
  void pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const override;
  void attachGpu(const SceneObject& object, GpuAttach& gpu) const override;
  void detachGpu(GpuAttach& gpu) const override;
  bool posedContent() const override { return true; }
  // Mutable: the character keeps its state (expression, controls) between frames.
  character::BundleCharacter& bundle() const { return *bundle_; }

 private:
  std::shared_ptr<character::BundleCharacter> bundle_;
};

// Fills a scene object from a decoder character bundle directory. Throws sf::Error.
void loadBundleObject(SceneObject& obj, const std::string& dir);

// Gives `bundle` its GPU path on the driver's device (a refusal said once and kept by the character). Returns
// whether it was given one now; the caller records the take-back (GpuAttach::given) for an owner that keeps
// the character alive while the take-back may run.
bool attachBundleGpu(GpuAttach& gpu, character::BundleCharacter& bundle);

}  // namespace sf
