#include "neural/cpu_executor.h"

#include <chrono>
#include <set>

#include "core/error.h"
#include "core/limits.h"
#include "neural/cpu_ops.h"

namespace sf::nn {
namespace {

// Empty when the CPU kernels run `n` at the model's opset; else why not (domain, operator, opset, an
// attribute or attribute value the kernel does not implement), naming the node.
std::string whyUnsupported(const Graph& g, const Node& n) {
  try {
    checkCpuNode(n, g.opset);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

std::vector<Tensor> runNode(const Graph& g, const Node& n,
                            const std::map<std::string, const Tensor*>& values) {
  std::vector<const Tensor*> in;
  for (const std::string& name : n.inputs) {
    if (name.empty()) {
      in.push_back(nullptr);
      continue;
    }
    auto it = values.find(name);
    if (it == values.end())
      throw Error(g.path + ": " + n.describe() + ": input '" + name +
                  "' is not produced by any earlier node");
    in.push_back(it->second);
  }
  std::vector<Tensor> out = findCpuOp(n.op_type)->cpu(n, in, g.opset);
  if (out.size() < n.outputs.size()) {
    // Optional trailing outputs a kernel does not produce must not be used by anything.
    for (size_t k = out.size(); k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty())
        throw Error(g.path + ": " + n.describe() + ": output " + std::to_string(k) + " ('" + n.outputs[k] +
                    "') is not produced");
  }
  return out;
}

bool shapeMatches(const ValueInfo& v, const Shape& s) {
  if (!v.has_shape) return true;
  if (v.shape.size() != s.size()) return false;
  for (size_t k = 0; k < s.size(); ++k)
    if (v.shape[k] >= 0 && v.shape[k] != s[k]) return false;
  return true;
}

}  // namespace

std::vector<std::string> unsupportedNodes(const Graph& graph) {
  std::vector<std::string> out;
  for (const Node& n : graph.nodes)
    if (std::string why = whyUnsupported(graph, n); !why.empty()) out.push_back(why);
  return out;
}

CpuExecutor::CpuExecutor(Graph graph) : graph_(std::move(graph)) {
  if (std::vector<std::string> bad = unsupportedNodes(graph_); !bad.empty()) {
    std::string msg = graph_.path + ": " + std::to_string(bad.size()) + " node(s) cannot run:";
    for (const std::string& b : bad) msg += "\n  " + b;
    throw Error(msg);
  }
  // Constant folding: a node whose inputs are all initializers (or omitted) is evaluated now and its outputs
  // become initializers. Nodes are in topological order, so one sweep folds whole constant chains.
  std::vector<Node> kept;
  auto bytesOf = [](const Tensor& t) { return static_cast<uint64_t>(t.numel()) * (t.isFloat() ? 4 : 8); };
  uint64_t total = 0;  // every constant's bytes, kept current as folding adds and replaces them
  for (const auto& [name, t] : graph_.initializers) total += bytesOf(t);
  for (Node& n : graph_.nodes) {
    bool constant = true;
    for (const std::string& name : n.inputs)
      if (!name.empty() && !graph_.initializers.count(name)) constant = false;
    if (!constant) {
      kept.push_back(std::move(n));
      continue;
    }
    std::map<std::string, const Tensor*> values;
    for (const std::string& name : n.inputs)
      if (!name.empty()) values[name] = &graph_.initializers.at(name);
    std::vector<Tensor> out = runNode(graph_, n, values);
    for (size_t k = 0; k < out.size() && k < n.outputs.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      if (auto it = graph_.initializers.find(n.outputs[k]); it != graph_.initializers.end())
        total -= bytesOf(it->second);
      total += bytesOf(out[k]);
      graph_.initializers[n.outputs[k]] = std::move(out[k]);
    }
    ++folded_;
    // Folded constants count against the load limit together, not only one by one.
    checkByteBudget(graph_.path, total, "the model's constants after folding");
  }
  graph_.nodes = std::move(kept);
  // Constants only the folded nodes read are dropped.
  std::set<std::string> used;
  for (const Node& n : graph_.nodes) used.insert(n.inputs.begin(), n.inputs.end());
  for (const ValueInfo& v : graph_.outputs) used.insert(v.name);
  std::erase_if(graph_.initializers, [&](const auto& kv) { return !used.count(kv.first); });
}

TensorMap CpuExecutor::run(const TensorMap& inputs, std::vector<NodeTime>* times,
                           const ValueObserver* observe) const {
  std::map<std::string, const Tensor*> values;
  for (const auto& [name, t] : graph_.initializers) values[name] = &t;
  for (const ValueInfo& v : graph_.inputs) {
    auto it = inputs.find(v.name);
    if (it == inputs.end()) throw Error(graph_.path + ": input '" + v.name + "' is not given");
    const Tensor& t = it->second;
    if (v.dtype != DType::kUndefined && t.dtype != v.dtype)
      throw Error(graph_.path + ": input '" + v.name + "' is " + dtypeName(t.dtype) +
                  ", the model declares " + dtypeName(v.dtype));
    if (!shapeMatches(v, t.shape))
      throw Error(graph_.path + ": input '" + v.name + "' has shape " + shapeString(t.shape) +
                  ", the model declares " + shapeString(v.shape));
    values[v.name] = &t;
  }
  for (const auto& [name, t] : inputs) {
    (void)t;
    if (!values.count(name)) throw Error(graph_.path + ": the model has no input '" + name + "'");
  }
  // Last node reading each value; graph outputs are kept to the end.
  std::map<std::string, size_t> last_use;
  for (size_t k = 0; k < graph_.nodes.size(); ++k)
    for (const std::string& name : graph_.nodes[k].inputs) last_use[name] = k;
  std::set<std::string> outputs;
  for (const ValueInfo& v : graph_.outputs) outputs.insert(v.name);
  std::map<std::string, Tensor> owned;
  for (size_t k = 0; k < graph_.nodes.size(); ++k) {
    const Node& n = graph_.nodes[k];
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> out = runNode(graph_, n, values);
    if (times)
      times->push_back(
          {n.op_type,
           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(), n.name});
    for (size_t o = 0; o < out.size() && o < n.outputs.size(); ++o) {
      if (n.outputs[o].empty()) continue;
      Tensor& slot = owned[n.outputs[o]] = std::move(out[o]);
      values[n.outputs[o]] = &slot;
      if (observe) (*observe)(n.outputs[o], slot);
    }
    for (const std::string& name : n.inputs) {
      auto it = last_use.find(name);
      if (it != last_use.end() && it->second == k && !outputs.count(name) && owned.count(name)) {
        values.erase(name);
        owned.erase(name);
      }
    }
  }
  TensorMap result;
  for (const ValueInfo& v : graph_.outputs) {
    auto it = values.find(v.name);
    if (it == values.end())
      throw Error(graph_.path + ": output '" + v.name + "' is not produced by the graph");
    // An output must be what the model declares: callers read it by its declared type and fixed dimensions.
    const Tensor& t = *it->second;
    if (v.dtype != DType::kUndefined && t.dtype != v.dtype)
      throw Error(graph_.path + ": output '" + v.name + "' is " + dtypeName(t.dtype) +
                  ", the model declares " + dtypeName(v.dtype));
    if (!shapeMatches(v, t.shape))
      throw Error(graph_.path + ": output '" + v.name + "' has shape " + shapeString(t.shape) +
                  ", the model declares " + shapeString(v.shape));
    result[v.name] = t;
  }
  return result;
}

}  // namespace sf::nn
