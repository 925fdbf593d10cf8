// Runs an ONNX graph on the CPU, node by node in file order through the reference kernels (cpu_ops.h):
// the neural layer's oracle, against which the GPU executor is checked per element. At construction every
// node is checked (supported op of the default domain at the model's opset, else an error naming the node,
// its op type and the opset) and nodes that depend only on constants are evaluated once (constant folding).
// Intermediate tensors are freed after their last use.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "neural/graph.h"

namespace sf::nn {

using TensorMap = std::map<std::string, Tensor>;

// Called with the name and value of every tensor a node produces during a run, in node order.
using ValueObserver = std::function<void(const std::string& name, const Tensor& value)>;

struct NodeTime {
  std::string op_type;
  double ms = 0;
  std::string node;  // the node's name (a fused chain: its last node and the chain's operators)
  size_t wave = 0;   // the Vulkan executor's wave (independent nodes share one); 0 on the CPU
};

// Something that runs a model's graph in place of its CPU executor (the Vulkan executor, attached by the
// layer that owns a device): inputs by name in, every output by name out, per-node times when asked.
using GraphRunner = std::function<TensorMap(const TensorMap& inputs, std::vector<NodeTime>* times)>;

class CpuExecutor {
 public:
  explicit CpuExecutor(Graph graph);

  const Graph& graph() const { return graph_; }
  // Nodes folded into constants at construction.
  size_t foldedNodes() const { return folded_; }

  // Runs the graph. Every graph input must be given, with its declared element type and a shape that
  // matches the declared one (symbolic dimensions match anything). Returns every graph output by name.
  // `times`, when given, receives one entry per node run; `observe`, when given, sees every value produced.
  TensorMap run(const TensorMap& inputs, std::vector<NodeTime>* times = nullptr,
                const ValueObserver* observe = nullptr) const;

 private:
  Graph graph_;
  size_t folded_ = 0;
};

// Why `graph` cannot run on the CPU executor: one line per unsupported node (name, op type, opset),
// empty when every node can.
std::vector<std::string> unsupportedNodes(const Graph& graph);

}  // namespace sf::nn
