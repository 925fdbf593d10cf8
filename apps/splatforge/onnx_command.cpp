#include "onnx_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "core/error.h"
#include "gpu/gpu.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/image_io.h"
#include "neural/cpu_executor.h"
#include "neural/cpu_ops.h"
#include "neural/generator.h"
#include "neural/vulkan_executor.h"
#include "scene/scene.h"

namespace sf::cli {

namespace {

using nlohmann::json;
using namespace sf::nn;

std::string valueLine(const ValueInfo& v) {
  std::string shape = "[?]";
  if (v.has_shape) {
    shape = "[";
    for (size_t k = 0; k < v.shape.size(); ++k)
      shape += (k ? ", " : "") + (v.shape[k] >= 0 ? std::to_string(v.shape[k])
                                                  : (v.dim_names[k].empty() ? "?" : v.dim_names[k]));
    shape += "]";
  }
  return fmt::format("{} {} {}", v.name, dtypeName(v.dtype), shape);
}

json valueJson(const ValueInfo& v) {
  json dims = json::array();
  for (size_t k = 0; k < v.shape.size(); ++k)
    dims.push_back(v.shape[k] >= 0 ? json(v.shape[k]) : json(v.dim_names[k]));
  return {{"name", v.name}, {"type", dtypeName(v.dtype)}, {"shape", v.has_shape ? dims : json(nullptr)}};
}

int runInfo(const std::string& path, bool as_json) {
  Graph g = loadOnnxFile(path);
  std::map<std::string, int> ops;
  for (const Node& n : g.nodes) ops[n.op_type]++;
  uint64_t weights = 0;
  for (const auto& [name, t] : g.initializers) weights += static_cast<uint64_t>(t.numel());
  const std::vector<std::string> unsupported = unsupportedNodes(g);
  std::string contract, not_generator;
  try {
    contract = detectContract(g).describe();
  } catch (const Error& e) {
    not_generator = e.what();
  }
  if (as_json) {
    json j = {{"path", path},           {"ir_version", g.ir_version}, {"opset", g.opset},
              {"producer", g.producer}, {"nodes", g.nodes.size()},    {"initializer_values", weights},
              {"metadata", g.metadata}};
    j["inputs"] = json::array();
    for (const ValueInfo& v : g.inputs) j["inputs"].push_back(valueJson(v));
    j["outputs"] = json::array();
    for (const ValueInfo& v : g.outputs) j["outputs"].push_back(valueJson(v));
    j["ops"] = json::array();
    for (const auto& [op, count] : ops) {
      Node probe;
      probe.op_type = op;
      j["ops"].push_back({{"op", op},
                          {"count", count},
                          {"cpu", findCpuOp(op) != nullptr},
                          {"vulkan", vulkanUnsupportedReason(probe, g.opset).empty()}});
    }
    j["unsupported"] = unsupported;
    j["generator"] = contract.empty() ? json(nullptr) : json(contract);
    if (!not_generator.empty()) j["not_generator"] = not_generator;
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{}\n  IR version {}, opset {}, producer '{}', {} nodes, {} weight values\n", path, g.ir_version,
             g.opset, g.producer, g.nodes.size(), weights);
  fmt::print("inputs:\n");
  for (const ValueInfo& v : g.inputs) fmt::print("  {}\n", valueLine(v));
  fmt::print("outputs:\n");
  for (const ValueInfo& v : g.outputs) fmt::print("  {}\n", valueLine(v));
  fmt::print("operators (count, CPU executor, Vulkan executor):\n");
  for (const auto& [op, count] : ops) {
    Node probe;
    probe.op_type = op;
    fmt::print("  {:<22} {:>5}  {:<13}  {}\n", op, count, findCpuOp(op) ? "supported" : "NOT SUPPORTED",
               vulkanUnsupportedReason(probe, g.opset).empty() ? "supported" : "NOT SUPPORTED");
  }
  if (!unsupported.empty()) {
    fmt::print("cannot run: {} node(s)\n", unsupported.size());
    for (const std::string& u : unsupported) fmt::print("  {}\n", u);
  }
  std::string indented = contract;
  for (size_t at = indented.find('\n'); at != std::string::npos; at = indented.find('\n', at + 3))
    indented.replace(at, 1, "\n  ");
  if (!contract.empty())
    fmt::print("gaussian generator:\n  {}\n", indented);
  else
    fmt::print("gaussian generator: no ({})\n", not_generator);
  return 0;
}

// An input tensor from JSON: a number, a (nested) array of numbers, or {"type": "float32", "shape": [...],
// "data": [...]}. Nested arrays give their own shape.
Tensor tensorFromJson(const json& v, const ValueInfo* declared, const std::string& where) {
  DType type = declared && declared->dtype != DType::kUndefined ? declared->dtype : DType::kFloat32;
  Shape shape;
  std::vector<double> data;
  const json* values = &v;
  if (v.is_object()) {
    if (v.contains("type")) {
      const std::string t = v["type"].get<std::string>();
      bool found = false;
      for (DType d : {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt32, DType::kInt64,
                      DType::kInt8, DType::kUInt8, DType::kBool})
        if (dtypeName(d) == t) type = d, found = true;
      if (!found) throw Error(where + ".type: unknown element type '" + t + "'");
    }
    if (!v.contains("data")) throw Error(where + ": expected \"data\"");
    values = &v["data"];
    if (v.contains("shape")) shape = v["shape"].get<Shape>();
  }
  // Flatten, recording the nested shape.
  Shape nested;
  std::function<void(const json&, size_t)> walk = [&](const json& x, size_t depth) {
    if (x.is_array()) {
      if (nested.size() == depth)
        nested.push_back(static_cast<int64_t>(x.size()));
      else if (nested[depth] != static_cast<int64_t>(x.size()))
        throw Error(where + ": ragged nested arrays");
      for (const json& e : x) walk(e, depth + 1);
    } else if (x.is_number() || x.is_boolean()) {
      data.push_back(x.is_boolean() ? (x.get<bool>() ? 1.0 : 0.0) : x.get<double>());
    } else {
      throw Error(where + ": expected numbers");
    }
  };
  walk(*values, 0);
  if (shape.empty() && !v.is_object()) shape = nested;
  if (declared && declared->has_shape && elementCount(shape) != static_cast<int64_t>(data.size()))
    shape = declared->shape;
  if (declared && declared->has_shape) {
    bool fixed =
        std::all_of(declared->shape.begin(), declared->shape.end(), [](int64_t d) { return d >= 0; });
    if (fixed && elementCount(declared->shape) == static_cast<int64_t>(data.size())) shape = declared->shape;
  }
  if (elementCount(shape) != static_cast<int64_t>(data.size()))
    throw Error(where + ": " + std::to_string(data.size()) + " values for shape " + shapeString(shape));
  Tensor t(type, shape);
  for (size_t k = 0; k < data.size(); ++k) t.set(k, data[k]);
  return t;
}

json tensorSummary(const Tensor& t, bool values) {
  json j = {{"type", dtypeName(t.dtype)}, {"shape", t.shape}};
  const auto n = static_cast<size_t>(t.numel());
  if (n > 0) {
    double lo = t.asDouble(0), hi = lo, sum = 0;
    for (size_t k = 0; k < n; ++k) {
      const double x = t.asDouble(k);
      lo = std::min(lo, x), hi = std::max(hi, x), sum += x;
    }
    j["min"] = lo, j["max"] = hi, j["mean"] = sum / static_cast<double>(n);
  }
  if (values) {
    json a = json::array();
    for (size_t k = 0; k < n; ++k) a.push_back(t.isFloat() ? json(t.f[k]) : json(t.i[k]));
    j["values"] = a;
  }
  return j;
}

// The --inputs file: an object of input name -> value (empty without the option).
json readInputsJson(const std::string& path) {
  json inputs_json = json::object();
  if (!path.empty()) {
    try {
      const std::vector<uint8_t> bytes = readFile(path);
      inputs_json = json::parse(bytes.begin(), bytes.end());
    } catch (const json::parse_error& e) {
      throw Error(path + ": " + e.what());
    }
    if (!inputs_json.is_object()) throw Error(path + ": expected an object of input name -> value");
  }
  return inputs_json;
}

// The model's input tensors: from --inputs, or for a generator its time and camera inputs from --time and
// --camera; every input must be given, and --inputs may name no other.
TensorMap modelFeeds(const Graph& g, const json& inputs_json, const OnnxCommand::Options& o,
                     const std::optional<GeneratorContract>& contract) {
  Camera cam;
  if (!o.camera.empty())
    cam = loadCameraJson(o.camera);
  else
    cam.width = 1280, cam.height = 720, cam.fx = cam.fy = 1000, cam.cx = 640, cam.cy = 360;
  TensorMap feeds;
  for (const ValueInfo& v : g.inputs) {
    if (inputs_json.contains(v.name)) {
      feeds[v.name] = tensorFromJson(inputs_json[v.name], &v, o.inputs + ": " + v.name);
      continue;
    }
    if (contract && v.name == contract->time_input) {
      Tensor t(DType::kFloat32, v.has_shape ? v.shape : Shape{1});
      for (int64_t& d : t.shape) d = d < 0 ? 1 : d;
      t.f.assign(1, static_cast<float>(o.time));
      feeds[v.name] = t;
    } else if (contract && v.name == contract->view_input) {
      feeds[v.name] = matrixInput(cam.world_to_camera);
    } else if (contract && v.name == contract->projection_input) {
      feeds[v.name] = matrixInput(projectionMatrix(cam));
    } else {
      std::string list;
      for (const ValueInfo& x : g.inputs) list += "\n  " + valueLine(x);
      throw Error("input '" + v.name + "' is not given (--inputs FILE.json); the model's inputs:" + list);
    }
  }
  for (const auto& [name, value] : inputs_json.items()) {
    (void)value;
    if (!feeds.count(name)) throw Error(o.inputs + ": the model has no input '" + name + "'");
  }
  return feeds;
}

// One model run's outputs and timings (milliseconds).
struct ModelRun {
  TensorMap out;
  double plan_ms = 0;          // a Vulkan run's first call: the plan and the constants' upload
  double run_ms = 0;           // the median total
  double wall_ms = 0;          // the last run's wall time
  double back_to_back_ms = 0;  // the median run of --back-to-back
  double profile_ms = 0;       // the sum of the per-node profile (Vulkan)
  std::vector<NodeTime> median_times;
};

// Runs the model --repeat times on the Vulkan executor (gpu_exec) or the CPU one (cpu_exec) and times it.
ModelRun timeModel(const OnnxCommand::Options& o, VulkanExecutor* gpu_exec, CpuExecutor* cpu_exec,
                   const TensorMap& feeds) {
  const bool vulkan = gpu_exec != nullptr;
  // Every run is timed; the one whose total is the median gives the reported split. A Vulkan run's first
  // call plans (a CPU dry run) and uploads the constants: it is timed apart, as `plan`.
  ModelRun m;
  if (vulkan) {
    const auto tp = std::chrono::steady_clock::now();
    gpu_exec->prepare(feeds);
    m.plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tp).count();
  }
  // Plain runs give the total (GPU timestamps on Vulkan, wall time on the CPU); on Vulkan one more,
  // profiling run (a barrier after every node) gives the per-operator split.
  std::vector<double> totals;
  std::vector<std::pair<double, std::vector<NodeTime>>> cpu_runs;
  for (int r = 0; r < o.repeat; ++r) {
    std::vector<NodeTime> times;
    const auto t1 = std::chrono::steady_clock::now();
    m.out = vulkan ? gpu_exec->run(feeds) : cpu_exec->run(feeds, &times);
    m.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    totals.push_back(vulkan ? gpu_exec->lastGpuMs() : m.wall_ms);
    if (!vulkan) cpu_runs.emplace_back(m.wall_ms, std::move(times));
  }
  std::vector<double> sorted = totals;
  std::sort(sorted.begin(), sorted.end());
  m.run_ms = sorted[sorted.size() / 2];
  if (vulkan && o.back_to_back) {
    // The per-node split from profiled runs in the same submission: stable where a lone profiling run is not.
    std::vector<double> runs = gpu_exec->runBackToBack(feeds, o.repeat, &m.median_times);
    std::sort(runs.begin(), runs.end());
    m.back_to_back_ms = runs[runs.size() / 2];
  }
  if (vulkan) {
    if (!o.back_to_back) gpu_exec->run(feeds, &m.median_times);
    for (const NodeTime& t : m.median_times) m.profile_ms += t.ms;
  } else {
    std::sort(cpu_runs.begin(), cpu_runs.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    m.median_times = cpu_runs[cpu_runs.size() / 2].second;
  }
  return m;
}

// Each output as FOLDER/NAME.npy (float32; characters other than letters, digits, '_' and '-' as '_').
void writeNpyOutputs(const TensorMap& out, const std::string& dir) {
  for (const auto& [name, t] : out) {
    std::vector<float> values(static_cast<size_t>(t.numel()));
    for (size_t k = 0; k < values.size(); ++k) values[k] = static_cast<float>(t.asDouble(k));
    std::string file = name;
    std::replace_if(
        file.begin(), file.end(),
        [](char c) { return !(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'); }, '_');
    writeNpyArray((std::filesystem::path(dir) / (file + ".npy")).string(), values, t.shape);
  }
}

// The run as one JSON object: timings, the per-operator and per-node profile, and each output's summary and
// values.
void printModelJson(const OnnxCommand::Options& o, const ModelRun& m,
                    const std::map<std::string, double>& per_op, const CpuExecutor& exec,
                    const gpu::Context* ctx, const VulkanExecutor* gpu_exec) {
  const bool vulkan = gpu_exec != nullptr;
  json nodes = json::array();  // the profile, node by node, slowest first
  std::vector<NodeTime> by_time = m.median_times;
  std::sort(by_time.begin(), by_time.end(), [](const NodeTime& a, const NodeTime& b) { return a.ms > b.ms; });
  for (const NodeTime& t : by_time)
    nodes.push_back({{"node", t.node}, {"op", t.op_type}, {"ms", t.ms}, {"wave", t.wave}});
  json j = {{"model", o.model}, {"backend", vulkan ? "vulkan" : "cpu"}, {"run_ms", m.run_ms},
            {"runs", o.repeat}, {"folded_nodes", exec.foldedNodes()},   {"op_ms", per_op},
            {"node_ms", nodes}};
  if (vulkan)
    j["vulkan"] = {{"device", ctx->info().name},
                   {"plan_ms", m.plan_ms},
                   {"last_wall_ms", m.wall_ms},
                   {"dispatches", gpu_exec->dispatches()},
                   {"gpu_nodes", gpu_exec->gpuNodes()},
                   {"waves", gpu_exec->waves()},
                   {"arena_bytes", gpu_exec->arenaBytes()},
                   {"profile_ms", m.profile_ms}};
  if (vulkan && o.back_to_back) j["vulkan"]["back_to_back_ms"] = m.back_to_back_ms;
  j["outputs"] = json::object();
  for (const auto& [name, t] : m.out) j["outputs"][name] = tensorSummary(t, true);
  fmt::print("{}\n", j.dump());
}

// The run for people: each output's summary, the files written and the timings with the five slowest
// operators.
void printModelText(const OnnxCommand::Options& o, const ModelRun& m,
                    const std::map<std::string, double>& per_op, const CpuExecutor& exec,
                    const gpu::Context* ctx, const VulkanExecutor* gpu_exec, double load_s,
                    size_t gaussians) {
  const bool vulkan = gpu_exec != nullptr;
  for (const auto& [name, t] : m.out) {
    json s = tensorSummary(t, false);
    fmt::print("{}: {} {}{}\n", name, dtypeName(t.dtype), shapeString(t.shape),
               s.contains("min") ? fmt::format(" min {:.6g} max {:.6g} mean {:.6g}", s["min"].get<double>(),
                                               s["max"].get<double>(), s["mean"].get<double>())
                                 : std::string());
  }
  if (!o.output_dir.empty()) fmt::print("wrote {} .npy file(s) to {}\n", m.out.size(), o.output_dir);
  if (!o.save_splats.empty()) fmt::print("wrote {} ({} gaussians)\n", o.save_splats, gaussians);
  std::vector<std::pair<double, std::string>> slow;
  for (const auto& [op, ms] : per_op) slow.emplace_back(ms, op);
  std::sort(slow.rbegin(), slow.rend());
  std::string split;
  for (size_t k = 0; k < slow.size() && k < 5; ++k)
    split += fmt::format("{}{} {:.2f}", k ? ", " : "", slow[k].second, slow[k].first);
  if (vulkan)
    fmt::print(
        "time: load {:.3f} s, {} node(s) folded, plan {:.1f} ms; Vulkan ({}) GPU {:.3f} ms{} for {} node(s) "
        "in {} wave(s), "
        "{} dispatch(es), arena {:.1f} MiB; last run {:.2f} ms with upload and readback; per-node profile "
        "{:.3f} ms ({})\n",
        load_s, exec.foldedNodes(), m.plan_ms, ctx->info().name, m.run_ms,
        o.repeat > 1 ? fmt::format(" (median of {})", o.repeat) : "", gpu_exec->gpuNodes(), gpu_exec->waves(),
        gpu_exec->dispatches(), static_cast<double>(gpu_exec->arenaBytes()) / (1 << 20), m.wall_ms,
        m.profile_ms, split);
  if (vulkan && o.back_to_back)
    fmt::print("back to back: GPU {:.3f} ms per run (median of {} runs in one submission)\n",
               m.back_to_back_ms, o.repeat);
  if (!vulkan)
    fmt::print("time: load {:.3f} s, {} node(s) folded, CPU run {:.2f} ms{} ({})\n", load_s,
               exec.foldedNodes(), m.run_ms, o.repeat > 1 ? fmt::format(" (median of {})", o.repeat) : "",
               split);
}

int runModel(const OnnxCommand::Options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  Graph g = loadOnnxFile(o.model);
  if (!o.output_dir.empty())
    makeOutputFolder(o.output_dir);  // created when missing, as every command's output folder
  const json inputs_json = readInputsJson(o.inputs);
  // A generator gets its time and camera inputs from --time/--camera; anything else from --inputs.
  std::optional<GeneratorContract> contract;
  try {
    contract = detectContract(g);
  } catch (const Error&) {
  }
  const TensorMap feeds = modelFeeds(g, inputs_json, o, contract);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool vulkan = o.backend == "vulkan" || (o.backend == "auto" && gpu::vulkanAvailable());
  if (o.backend == "vulkan" && !gpu::vulkanAvailable())
    throw Error("--backend vulkan: no Vulkan device (install mesa-vulkan-drivers)");
  if (o.repeat < 1) throw UsageError("--repeat must be at least 1");
  if (o.back_to_back && !vulkan)
    throw UsageError("--back-to-back times the Vulkan executor: use --backend vulkan");
  if (o.back_to_back && o.repeat > 4096)
    throw UsageError("--back-to-back: --repeat must be at most 4096 (one submission), not " +
                     std::to_string(o.repeat));
  std::unique_ptr<gpu::Context> ctx;
  std::unique_ptr<VulkanExecutor> gpu_exec;
  std::unique_ptr<CpuExecutor> cpu_exec;
  if (vulkan) {
    gpu::ContextOptions co;
    co.device = o.device;
    ctx = std::make_unique<gpu::Context>(co);
    gpu_exec = std::make_unique<VulkanExecutor>(*ctx, std::move(g));
  } else {
    cpu_exec = std::make_unique<CpuExecutor>(std::move(g));
  }
  const CpuExecutor& exec = vulkan ? gpu_exec->cpu() : *cpu_exec;
  const ModelRun m = timeModel(o, gpu_exec.get(), cpu_exec.get(), feeds);
  std::map<std::string, double> per_op;
  for (const NodeTime& t : m.median_times) per_op[t.op_type] += t.ms;

  if (!o.output_dir.empty()) writeNpyOutputs(m.out, o.output_dir);
  size_t gaussians = 0;
  if (!o.save_splats.empty()) {
    if (!contract) throw Error("--save-splats: " + o.model + " is not a gaussian generator");
    GeneratedGaussians decoded =
        decodeGenerated(*contract, m.out, o.model);  // the run above, not a second load
    gaussians = decoded.cloud.size();
    saveSplats(bakeGenerated(decoded), o.save_splats);
  }
  if (o.json) {
    printModelJson(o, m, per_op, exec, ctx.get(), gpu_exec.get());
    return 0;
  }
  printModelText(o, m, per_op, exec, ctx.get(), gpu_exec.get(), load_s, gaussians);
  return 0;
}

}  // namespace

OnnxCommand::~OnnxCommand() = default;

int OnnxCommand::run() const {
  try {
    if (options_->info) return runInfo(options_->model, options_->json);
    return runModel(*options_);
  } catch (const std::exception& e) {
    return reportFailure(options_->info ? "onnx info" : "onnx run", e);
  }
}

}  // namespace sf::cli
