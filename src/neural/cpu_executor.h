// Runs an ONNX graph on the CPU, node by node in file order through the reference kernels (cpu_ops.h):
// the neural layer's oracle, against which the GPU executor is checked per element. At construction every
// node is checked (supported op of the default domain at the model's opset, else an error naming the node,
// its op type and the opset) and nodes that depend only on constants are evaluated once (constant folding).
// Intermediate tensors are freed after their last use.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "neural/graph.h"

namespace sf::nn {

using TensorMap = std::map<std::string, Tensor>;

struct NodeTime {
  std::string op_type;
  double ms = 0;
};

class CpuExecutor {
 public:
  explicit CpuExecutor(Graph graph);

  const Graph& graph() const { return graph_; }
  // Nodes folded into constants at construction.
  size_t foldedNodes() const { return folded_; }

  // Runs the graph. Every graph input must be given, with its declared element type and a shape that
  // matches the declared one (symbolic dimensions match anything). Returns every graph output by name.
  // `times`, when given, receives one entry per node run.
  TensorMap run(const TensorMap& inputs, std::vector<NodeTime>* times = nullptr) const;

 private:
  Graph graph_;
  size_t folded_ = 0;
};

// Why `graph` cannot run on the CPU executor: one line per unsupported node (name, op type, opset),
// empty when every node can.
std::vector<std::string> unsupportedNodes(const Graph& graph);

}  // namespace sf::nn
