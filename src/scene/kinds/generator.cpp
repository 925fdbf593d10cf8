#include "scene/kinds/generator.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "neural/gpu_generator.h"

namespace sf {

std::string GeneratorObject::describe(const SceneObject&) const {
  return "generator, " + generator_->contract().describe();
}

void GeneratorObject::pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const {
  nn::GeneratedGaussians& g = out.stateAs<GeneratorPosed>().generated;
  const Camera cam = ctx.cameraIn(object.object_to_world);
  const double model_time = object.time + object.speed * ctx.time;
  if (nn::GeneratorGpuPath* gpu = generator_->gpuPath()) {
    // Run and decoded on the GPU in the frame: the cloud only sizes the object's slots (its values are
    // uploaded once and overwritten every frame).
    const GpuSplatSource& source = gpu->prepare(generator_->frameInputs(model_time, cam));
    if (g.cloud.size() != gpu->capacity() || g.cloud.sh_degree != gpu->shDegree()) {
      g = {};
      g.cloud.resize(gpu->capacity(), gpu->shDegree());
    }
    g.live = static_cast<int64_t>(gpu->capacity());
    if (g.cloud.size() == 0) return;
    RenderObject ro{&g.cloud, object.object_to_world};
    ro.gpu_source = &source;
    out.objects.push_back(ro);
    return;
  }
  g = generator_->generate(model_time, cam);
  if (g.cloud.size() == 0) return;
  RenderObject ro{&g.cloud, object.object_to_world, g.cloud.positions, g.covariances};
  ro.dynamic = true;
  out.objects.push_back(ro);
}

void GeneratorObject::attachGpu(const SceneObject& object, GpuAttach& gpu) const {
  if (generator_->gpuPath() || gpu.refusedBefore(generator_.get())) return;
  if (std::string why = nn::attachGpuPath(gpu.context(), *generator_, object.time); !why.empty()) {
    gpu.refuse(generator_);
    gpu.say(fmt::format("splatforge: warning: {} runs on the CPU executor: {}", generator_->path(), why));
    return;
  }
  gpu.given(generator_, [g = generator_.get()] { g->setGpuPath(nullptr); });
}

void GeneratorObject::detachGpu(GpuAttach& gpu) const {
  gpu.takeBack(generator_.get());
}

void GeneratorObject::extraBoundsPoints(const SceneObject& object, double time,
                                        std::vector<Vec3>& out) const {
  if (!generator_->gpuPath()) return;  // the posed frame holds its gaussians
  const nn::GeneratedGaussians g = generator_->generate(object.time + object.speed * time,
                                                        cameraSeenFrom(nullptr, object.object_to_world));
  for (const Vec3& p : g.cloud.positions) out.push_back(transformPoint(object.object_to_world, p));
}

double GeneratorObject::modelTimeSpan() const {
  return generator_->contract().time_input.empty() ? 0.0 : nn::kGeneratorTimeSpan;
}

void loadGeneratorObject(SceneObject& obj, const std::string& path, const nlohmann::json* inputs,
                         const std::string& where) {
  auto g = std::make_shared<nn::GaussianGenerator>(path);
  if (inputs) {
    if (!inputs->is_object()) throw Error(where + ": expected an object of control name -> number or array");
    for (const auto& [name, value] : inputs->items()) {
      std::vector<float> values;
      std::vector<const nlohmann::json*> stack{&value};
      while (!stack.empty()) {  // depth-first, in order
        const nlohmann::json* v = stack.back();
        stack.pop_back();
        if (v->is_number())
          values.push_back(v->get<float>());
        else if (v->is_array())
          for (auto it = v->rbegin(); it != v->rend(); ++it) stack.push_back(&*it);
        else
          throw Error(where + "." + name + ": expected a number or an array of numbers");
      }
      nn::Tensor t(nn::DType::kFloat32, {static_cast<int64_t>(values.size())});
      t.f = values;
      try {
        g->setControl(name, t);
      } catch (const Error& e) {
        throw Error(where + "." + name + ": " + e.what());
      }
    }
  }
  for (const std::string& c : g->contract().control_inputs)
    if (!inputs || !inputs->contains(c)) {
      std::string list;
      for (const std::string& n : g->contract().control_inputs)
        list += (list.empty() ? "'" : ", '") + n + "'";
      throw Error(where + ": control input '" + c + "' of " + path + " is not given (its controls: " + list +
                  ")");
    }
  obj.kind = std::make_shared<GeneratorObject>(std::move(g));
}

}  // namespace sf
