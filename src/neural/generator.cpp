#include "neural/generator.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/parallel.h"

namespace sf::nn {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool has(const std::string& name, const char* part) {
  return lower(name).find(part) != std::string::npos;
}

// Whether a name reads as a colour output: one of its words (split at non-letters-or-digits) is "sh",
// "rgb", "rgba" or "spherical", or starts with "color"/"colour" ("shape" or "mesh_uv" are not colours).
bool colourName(const std::string& name) {
  std::string word;
  const std::string n = lower(name) + " ";
  for (char c : n) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += c;
      continue;
    }
    if (word == "sh" || word == "rgb" || word == "rgba" || word == "spherical" ||
        word.rfind("color", 0) == 0 || word.rfind("colour", 0) == 0)
      return true;
    word.clear();
  }
  return false;
}

std::string listValues(const std::vector<ValueInfo>& values) {
  if (values.empty()) return "none";
  std::string s;
  for (const ValueInfo& v : values) {
    if (!s.empty()) s += ", ";
    s += "'" + v.name + "' " + dtypeName(v.dtype) + " " + (v.has_shape ? shapeString(v.shape) : "[?]");
  }
  return s;
}

// Rows and columns of a declared [N, C] output (-1 where symbolic or unknown).
std::pair<int64_t, int64_t> rowsCols(const ValueInfo& v) {
  if (!v.has_shape || v.shape.size() != 2) return {-1, -1};
  return {v.shape[0], v.shape[1]};
}

}  // namespace

std::string GeneratorContract::describe() const {
  auto orNone = [](const std::string& s) { return s.empty() ? std::string("none") : "'" + s + "'"; };
  std::string controls;
  for (const std::string& c : control_inputs) controls += (controls.empty() ? "'" : ", '") + c + "'";
  return "inputs: time " + orNone(time_input) + ", view " + orNone(view_input) + ", projection " +
         orNone(projection_input) + ", controls " + (controls.empty() ? "none" : controls) +
         "\noutputs: gaussians " + orNone(gauss_output) + " (" + dtypeName(gauss_type) + ", capacity " +
         (capacity >= 0 ? std::to_string(capacity) : std::string("symbolic")) + "), colour " +
         orNone(color_output) + " (" +
         (color_is_sh ? (color_channels == 48 ? "SH degree 3" : "SH DC") : "RGB") + "), count " +
         orNone(count_output) + (isStatic() ? "\nstatic: no inputs, runs once" : "");
}

GeneratorContract detectContract(const Graph& g) {
  GeneratorContract c;
  const std::string where = g.path + ": not a gaussian generator: ";
  for (const ValueInfo& v : g.inputs) {
    const std::string n = lower(v.name);
    if ((has(n, "time") || n == "t") && c.time_input.empty())
      c.time_input = v.name;
    else if (has(n, "proj") && c.projection_input.empty())
      c.projection_input = v.name;
    else if ((has(n, "camera") || has(n, "view") || has(n, "matrix")) && c.view_input.empty())
      c.view_input = v.name;
    else
      c.control_inputs.push_back(v.name);
  }
  auto checkInput = [&](const std::string& name, const char* what, bool matrix) {
    if (name.empty()) return;
    const ValueInfo& v =
        *std::find_if(g.inputs.begin(), g.inputs.end(), [&](const ValueInfo& x) { return x.name == name; });
    if (v.dtype != DType::kFloat32)
      throw Error(where + std::string(what) + " input '" + name + "' is " + dtypeName(v.dtype) +
                  ", expected float32");
    if (!v.has_shape) return;
    // Matrices are [4, 4] (what the contract passes); the time is any shape of one element (it is given in
    // the declared shape). Symbolic dimensions match.
    bool ok = true;
    if (matrix)
      ok = v.shape.size() == 2 && (v.shape[0] == 4 || v.shape[0] < 0) && (v.shape[1] == 4 || v.shape[1] < 0);
    else
      for (int64_t d : v.shape) ok = ok && (d == 1 || d < 0);
    if (!ok)
      throw Error(where + std::string(what) + " input '" + name + "' has shape " + shapeString(v.shape) +
                  ", expected " + (matrix ? "[4, 4]" : "[1]"));
  };
  checkInput(c.time_input, "time", false);
  checkInput(c.view_input, "view", true);
  checkInput(c.projection_input, "projection", true);

  const ValueInfo* gauss = nullptr;
  for (const ValueInfo& v : g.outputs)
    if (has(v.name, "gauss")) {
      gauss = &v;
      break;
    }
  if (!gauss)
    throw Error(where + "no output named like 'gauss' or 'gaussian' (outputs: " + listValues(g.outputs) +
                ")");
  if (!isFloatType(gauss->dtype))
    throw Error(where + "output '" + gauss->name + "' is " + dtypeName(gauss->dtype) +
                ", expected float16 or float32");
  auto [n, fields] = rowsCols(*gauss);
  if (gauss->has_shape && (gauss->shape.size() != 2 || (fields >= 0 && fields != 10)))
    throw Error(where + "output '" + gauss->name + "' has shape " + shapeString(gauss->shape) +
                ", expected [N, 10]");
  c.gauss_output = gauss->name;
  c.gauss_type = gauss->dtype;
  c.capacity = n;

  const ValueInfo* color = nullptr;
  for (const ValueInfo& v : g.outputs)
    if (&v != gauss && isFloatType(v.dtype) && colourName(v.name)) {
      color = &v;
      break;
    }
  if (!color)
    for (const ValueInfo& v : g.outputs)
      if (&v != gauss && isFloatType(v.dtype)) {
        color = &v;
        break;
      }
  if (!color)
    throw Error(where + "no colour output ([N, 48] SH or [N, 3] RGB; outputs: " + listValues(g.outputs) +
                ")");
  c.color_output = color->name;
  auto [cn, channels] = rowsCols(*color);
  if (!color->has_shape || color->shape.size() != 2 || !(channels == 48 || channels == 3 || channels == 4))
    throw Error(where + "colour output '" + color->name + "' has shape " +
                (color->has_shape ? shapeString(color->shape) : "[?]") +
                ", expected [N, 48] (SH degree 3) or [N, 3] (RGB)");
  if (cn >= 0 && n >= 0 && cn != n)
    throw Error(where + "colour output '" + color->name + "' has " + std::to_string(cn) +
                " rows, gaussians '" + gauss->name + "' " + std::to_string(n));
  c.color_channels = channels == 48 ? 48 : 3;
  auto mode = g.metadata.find("color_mode");
  c.color_is_sh = channels == 48 || (mode != g.metadata.end() && lower(mode->second) == "sh");

  // The count: "num_points" when there is one, else the first integer output.
  for (const ValueInfo& v : g.outputs)
    if (&v != gauss && &v != color && !isFloatType(v.dtype) &&
        (lower(v.name) == "num_points" || c.count_output.empty()))
      c.count_output = v.name;
  return c;
}

Mat4 projectionMatrix(const Camera& cam, float near_plane, float far_plane) {
  const float w = static_cast<float>(cam.width), h = static_cast<float>(cam.height);
  Mat4 p;
  p.m[0][0] = 2 * cam.fx / w, p.m[0][1] = 0, p.m[0][2] = 2 * cam.cx / w - 1, p.m[0][3] = 0;
  p.m[1][0] = 0, p.m[1][1] = 2 * cam.fy / h, p.m[1][2] = 2 * cam.cy / h - 1, p.m[1][3] = 0;
  p.m[2][0] = 0, p.m[2][1] = 0, p.m[2][2] = far_plane / (far_plane - near_plane),
  p.m[2][3] = -far_plane * near_plane / (far_plane - near_plane);
  p.m[3][0] = 0, p.m[3][1] = 0, p.m[3][2] = 1, p.m[3][3] = 0;
  return p;
}

Tensor matrixInput(const Mat4& m) {
  Tensor t(DType::kFloat32, {4, 4});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) t.f[static_cast<size_t>(i * 4 + j)] = m.m[j][i];
  return t;
}

GaussianCloud bakeGenerated(const GeneratedGaussians& g) {
  GaussianCloud c = g.cloud;
  parallelForRange(c.size(), 4096, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      ScaleRotation sr = decomposeCovariance(g.covariances[i]);
      c.scales[i] = sr.scale;
      c.rotations[i] = sr.rotation;
    }
  });
  return c;
}

GaussianGenerator::GaussianGenerator(const std::string& path) : GaussianGenerator(loadOnnxFile(path)) {}

namespace {
// The contract is checked before the operators, so a model that is not a generator is named as such first.
Graph contractChecked(Graph g) {
  detectContract(g);
  return g;
}
}  // namespace

GaussianGenerator::GaussianGenerator(Graph graph)
    : executor_(contractChecked(std::move(graph))), contract_(detectContract(executor_.graph())) {}

void GaussianGenerator::setControl(const std::string& name, const Tensor& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto& names = contract_.control_inputs;
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "'" : ", '") + n + "'";
    throw Error(path() + ": the model has no control input '" + name +
                "' (its controls: " + (list.empty() ? "none" : list) + ")");
  }
  const ValueInfo& v = *std::find_if(graph().inputs.begin(), graph().inputs.end(),
                                     [&](const ValueInfo& x) { return x.name == name; });
  Tensor t(v.dtype == DType::kUndefined ? value.dtype : v.dtype, value.shape);
  if (v.has_shape) {
    // A flat list fills a declared shape of the same element count.
    int64_t declared = 1;
    bool fixed = true;
    for (int64_t d : v.shape) fixed = fixed && d >= 0, declared *= d < 0 ? 1 : d;
    if (fixed && declared == value.numel())
      t.shape = v.shape;
    else if (fixed || value.shape.size() != v.shape.size())
      throw Error(path() + ": control '" + name + "' needs shape " + shapeString(v.shape) + " (" +
                  std::to_string(declared) + " values), got " + shapeString(value.shape));
  }
  if (t.isFloat())
    t.f.resize(static_cast<size_t>(value.numel()));
  else
    t.i.resize(static_cast<size_t>(value.numel()));
  for (size_t k = 0; k < static_cast<size_t>(value.numel()); ++k) t.set(k, value.asDouble(k));
  controls_[name] = std::move(t);
  ran_ = false;
}

TensorMap GaussianGenerator::frameInputs(double time, const Camera& cam) const {
  TensorMap in;
  if (!contract_.time_input.empty()) {
    const ValueInfo& v = *std::find_if(graph().inputs.begin(), graph().inputs.end(),
                                       [&](const ValueInfo& x) { return x.name == contract_.time_input; });
    Tensor t(DType::kFloat32, v.has_shape ? v.shape : Shape{1});
    for (int64_t& d : t.shape) d = d < 0 ? 1 : d;
    t.f.assign(1, static_cast<float>(time));
    in[contract_.time_input] = std::move(t);
  }
  if (!contract_.view_input.empty()) in[contract_.view_input] = matrixInput(cam.world_to_camera);
  if (!contract_.projection_input.empty())
    in[contract_.projection_input] = matrixInput(projectionMatrix(cam));
  for (const std::string& name : contract_.control_inputs) {
    auto it = controls_.find(name);
    if (it == controls_.end())
      throw Error(path() + ": control input '" + name + "' is not set (give it in the scene's \"inputs\")");
    in[name] = it->second;
  }
  return in;
}

GeneratedGaussians GaussianGenerator::generate(double time, const Camera& cam, std::vector<NodeTime>* times) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ran_ && contract_.isStatic()) return last_;
  const TensorMap inputs = frameInputs(time, cam);
  last_ = decode(runner_ ? runner_(inputs, times) : executor_.run(inputs, times));
  ran_ = true;
  return last_;
}

void GaussianGenerator::setRunner(GraphRunner runner) {
  std::lock_guard<std::mutex> lock(mutex_);
  runner_ = std::move(runner);
}

bool GaussianGenerator::hasRunner() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return runner_ != nullptr;
}

void GaussianGenerator::setGpuPath(std::shared_ptr<GeneratorGpuPath> path) {
  std::lock_guard<std::mutex> lock(mutex_);
  gpu_path_ = std::move(path);
}

GeneratorGpuPath* GaussianGenerator::gpuPath() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return gpu_path_.get();
}

size_t GaussianGenerator::lastCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_.cloud.size();
}

GeneratedGaussians decodeGenerated(const GeneratorContract& contract, const TensorMap& outputs,
                                   const std::string& model_path) {
  auto get = [&](const std::string& name) -> const Tensor& {
    auto it = outputs.find(name);
    if (it == outputs.end()) throw Error(model_path + ": output '" + name + "' missing from the results");
    return it->second;
  };
  const Tensor& gauss = get(contract.gauss_output);
  const Tensor& color = get(contract.color_output);
  // What the model computed, not what it declared, decides what is read: checked before any row is.
  if (!gauss.isFloat() || gauss.shape.size() != 2 || gauss.shape[1] != 10)
    throw Error(model_path + ": output '" + contract.gauss_output + "' is " + dtypeName(gauss.dtype) + " " +
                shapeString(gauss.shape) + ", expected float [N, 10]");
  const int64_t n = gauss.shape[0];
  const int64_t channels =
      contract.color_channels == 48 ? 48 : (color.shape.size() == 2 ? color.shape[1] : -1);
  if (!color.isFloat() || color.shape.size() != 2 || color.shape[0] != n || color.shape[1] != channels ||
      !(channels == 48 || channels == 3 || channels == 4))
    throw Error(model_path + ": output '" + contract.color_output + "' is " + dtypeName(color.dtype) + " " +
                shapeString(color.shape) + ", expected float [" + std::to_string(n) + ", " +
                std::to_string(contract.color_channels) + "]");
  int64_t live = n;
  if (!contract.count_output.empty()) {
    const Tensor& count = get(contract.count_output);
    if (count.numel() != 1)
      throw Error(model_path + ": output '" + contract.count_output + "' has shape " +
                  shapeString(count.shape) + ", expected [1]");
    live = count.asInt(0);
    if (live < 0 || live > n)
      throw Error(model_path + ": output '" + contract.count_output + "' says " + std::to_string(live) +
                  " gaussians, the outputs hold " + std::to_string(n));
  }
  GeneratedGaussians g;
  g.live = live;
  const int degree = contract.color_channels == 48 ? 3 : 0;
  const size_t rows = static_cast<size_t>(live);
  g.cloud.resize(rows, degree);
  g.covariances.resize(rows);
  const auto cc = static_cast<size_t>(channels);
  parallelForRange(rows, 8192, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const float* r = gauss.f.data() + i * 10;
      g.cloud.positions[i] = {r[0], r[1], r[2]};
      g.cloud.opacities[i] = std::clamp(r[3], 0.0f, 1.0f);
      g.covariances[i] = {r[4], r[5], r[6], r[7], r[8], r[9]};
      std::span<float> sh = g.cloud.shOf(i);
      const float* c = color.f.data() + i * cc;
      if (degree == 3)
        std::copy(c, c + 48, sh.begin());
      else
        for (size_t k = 0; k < 3; ++k) sh[k] = contract.color_is_sh ? c[k] : colorToShDc(c[k]);
    }
  });
  return g;
}

GeneratedGaussians GaussianGenerator::decode(const TensorMap& outputs) const {
  return decodeGenerated(contract_, outputs, path());
}

}  // namespace sf::nn
