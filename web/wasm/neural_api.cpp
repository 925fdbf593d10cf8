// Neural gaussian generators in the page (docs/web.md, "Neural generators"): the model runs in
// onnxruntime-web (web/neural_worker.js) and its outputs are decoded on the GPU (web/shaders/neural.wgsl);
// what the engine decides about a model is decided here by its own C++: the contract (neural/generator.cpp
// detectContract: which input is the time, the view and the projection, which outputs hold the gaussians, the
// colours and the count, and every message for a model that does not follow it), read from the model's inputs
// and outputs as the page's ONNX runtime lists them (names, element types, shapes) and its metadata; and the
// starting camera, framed as `splatforge render` frames a generator (autoCamera in the capture convention
// over the decoded centres).
#include <emscripten/emscripten.h>

#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "io/file.h"
#include "neural/generator.h"
#include "render/camera.h"
#include "web_api.h"

namespace {

using nlohmann::json;
namespace nn = sf::nn;

// The element type an ONNX runtime names ("float32", "int64", ...) as the engine's DType (the engine's own
// names, dtypeName); kUndefined for a name it does not know.
nn::DType dtypeOf(const std::string& name) {
  for (int code = 0; code <= 16; ++code) {
    const auto t = static_cast<nn::DType>(code);
    if (nn::dtypeName(t) == name) return t;
  }
  return nn::DType::kUndefined;
}

// A model input or output as the page lists it: {"name", "type", "shape": [numbers or names] or null}.
nn::ValueInfo valueInfo(const json& v) {
  nn::ValueInfo out;
  out.name = v.at("name").get<std::string>();
  out.dtype = dtypeOf(v.value("type", std::string()));
  const json& shape = v.contains("shape") ? v.at("shape") : json();
  if (shape.is_array()) {
    out.has_shape = true;
    for (const json& d : shape) {
      const bool fixed = d.is_number_integer() && d.get<int64_t>() >= 0;
      out.shape.push_back(fixed ? d.get<int64_t>() : -1);
      out.dim_names.push_back(d.is_string() ? d.get<std::string>() : "");
    }
  }
  return out;
}

std::string g_answer;  // the last answer (valid until the next call)

std::string quoted(const std::string& s) {
  return sf::web::jsonString(s);
}

}  // namespace

extern "C" {

// 1 when `name` names a neural generator (.onnx), as every command decides it by the name
// (classifyInputName), else 0.
EMSCRIPTEN_KEEPALIVE int sf_web_is_generator(const char* name) {
  return sf::classifyInputName(name) == sf::InputKind::kOnnx ? 1 : 0;
}

// The generator contract of a model described by `signature_json` ({"path", "inputs": [...], "outputs":
// [...], "metadata": {key: value}}), as JSON: {"ok": true, "time", "view", "projection", "controls": [...],
// "gaussians", "colour", "count", "capacity", "colour_channels", "colour_is_sh", "gaussians_type",
// "describe"}, or {"ok": false, "error"} with detectContract's message (the model's path, "not a gaussian
// generator: ...").
EMSCRIPTEN_KEEPALIVE const char* sf_web_generator_contract(const char* signature_json) {
  try {
    const json sig = json::parse(signature_json);
    nn::Graph g;
    g.path = sig.at("path").get<std::string>();
    for (const json& v : sig.at("inputs")) g.inputs.push_back(valueInfo(v));
    for (const json& v : sig.at("outputs")) g.outputs.push_back(valueInfo(v));
    if (sig.contains("metadata") && sig.at("metadata").is_object())
      for (const auto& [k, v] : sig.at("metadata").items())
        if (v.is_string()) g.metadata[k] = v.get<std::string>();
    const nn::GeneratorContract c = nn::detectContract(g);
    std::string controls;
    for (const std::string& n : c.control_inputs) controls += (controls.empty() ? "" : ",") + quoted(n);
    g_answer = "{\"ok\":true,\"time\":" + quoted(c.time_input) + ",\"view\":" + quoted(c.view_input) +
               ",\"projection\":" + quoted(c.projection_input) + ",\"controls\":[" + controls +
               "],\"gaussians\":" + quoted(c.gauss_output) + ",\"colour\":" + quoted(c.color_output) +
               ",\"count\":" + quoted(c.count_output) + ",\"capacity\":" + std::to_string(c.capacity) +
               ",\"colour_channels\":" + std::to_string(c.color_channels) +
               ",\"colour_is_sh\":" + (c.color_is_sh ? "true" : "false") +
               ",\"gaussians_type\":" + quoted(nn::dtypeName(c.gauss_type)) +
               ",\"describe\":" + quoted(c.describe()) + "}";
  } catch (const std::exception& e) {
    g_answer = sf::web::errorInfo(e.what());
  }
  return g_answer.c_str();
}

// The camera `splatforge render` takes for a generator's frame at width x height (autoCamera: the generator
// follows the capture convention; frameBox of the 1-99 percentile box of its `count` decoded centres,
// `positions` x, y, z each), into out[0..27) (writeCamera); 0 when there is nothing to frame.
EMSCRIPTEN_KEEPALIVE int sf_web_generator_camera(const float* positions, uint32_t count, int width,
                                                 int height, float* out) {
  if (count == 0) return 0;
  sf::GaussianCloud c;
  c.resize(count, 0);
  for (uint32_t i = 0; i < count; ++i)
    c.positions[i] = {positions[3 * i], positions[3 * i + 1], positions[3 * i + 2]};
  const sf::CloudBounds b = sf::computeBounds(c);
  const sf::Vec3 view{0, 0, 1}, up{0, -1, 0};
  const sf::Camera cam = sf::frameBox(b.p01, b.p99, view, up, width, height);
  sf::web::writeCamera(cam, 0.5f * (b.p01 + b.p99), up, 50.0f, b, out);
  return 1;
}

}  // extern "C"
