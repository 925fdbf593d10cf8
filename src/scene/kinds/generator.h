// Neural gaussian generator objects (an ONNX model, docs/neural.md): run every frame with the model time
// time + speed * t and the camera (seen from the object's frame); their gaussians join the frame's one sort.
// On a Vulkan device the model runs and is decoded inside the frame (neural/gpu_generator.h).
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "neural/generator.h"
#include "scene/scene_object.h"

namespace sf {

class GeneratorObject final : public SceneObjectKind {
 public:
  explicit GeneratorObject(std::shared_ptr<nn::GaussianGenerator> generator)
      : generator_(std::move(generator)) {}
  std::string_view kindName() const override { return "generator"; }
  std::string describe(const SceneObject& object) const override;
  void pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const override;
  void attachGpu(const SceneObject& object, GpuAttach& gpu) const override;
  void detachGpu(GpuAttach& gpu) const override;
  bool posedContent() const override { return true; }
  void extraBoundsPoints(const SceneObject& object, double time, std::vector<Vec3>& out) const override;
  bool captureConvention(const SceneObject&) const override { return true; }
  double modelTimeSpan() const override;
  // Mutable: a generator keeps its last output and its control inputs.
  nn::GaussianGenerator& generator() const { return *generator_; }

 private:
  std::shared_ptr<nn::GaussianGenerator> generator_;
};

// A generator's posed storage: this frame's gaussians (on the GPU path, only the object's slot count).
struct GeneratorPosed : PosedState {
  nn::GeneratedGaussians generated;
};

// Fills a scene object from a generator model: loaded, its contract and operators checked, its control
// inputs from the scene's "inputs" object (name -> number or array of numbers, nested arrays flattened in
// order; null: none given). Every control the model declares must be given. Throws sf::Error naming `where`
// and the model's controls.
void loadGeneratorObject(SceneObject& obj, const std::string& path, const nlohmann::json* inputs,
                         const std::string& where);

}  // namespace sf
