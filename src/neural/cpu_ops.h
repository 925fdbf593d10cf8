// The CPU reference kernels of the neural layer, one per ONNX operator: straightforward loops over the
// row-major tensors of tensor.h, float math in float32 (float16 outputs rounded to half precision), the
// operator semantics of the ONNX specification for the opsets named in the table.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "neural/graph.h"
#include "neural/tensor.h"

namespace sf::nn {

// Runs `node` on its inputs (nullptr for an omitted optional input) and returns its outputs in order.
// Throws sf::Error naming the node for invalid inputs (shapes, types, attribute values).
using CpuKernel = std::vector<Tensor> (*)(const Node& node, std::span<const Tensor* const> inputs,
                                          int64_t opset);

// Checks, when a model is loaded, what can be checked of `node` before any input is known: its attribute
// values, its number of outputs. Throws sf::Error naming the node, the attribute and the opset for a form
// the kernel does not implement, so that such a model is refused at load rather than half-way through a run.
using CpuCheck = void (*)(const Node& node, int64_t opset);

struct OpInfo {
  const char* op_type;
  int64_t min_opset;  // the oldest opset version whose semantics the kernel implements
  CpuKernel cpu;
  const char* notes;  // what is not supported ("" when the whole operator is)
  // The attributes the kernel reads, space-separated; any other attribute on a node is refused at load
  // (an attribute the kernel ignored would silently change the result).
  const char* attributes = "";
  CpuCheck check = nullptr;  // the operator's own load-time checks, after the generic ones; may be nullptr
};

// Row-major strides of a shape, in elements.
std::vector<int64_t> rowStrides(const Shape& s);
// The strides that read a tensor of shape `in` as if broadcast (right-aligned) to `out`: 0 along broadcast
// dimensions. Shared by the kernels and the Vulkan executor's planning.
std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out);

// Every operator of the default domain the CPU executor runs, sorted by name.
std::span<const OpInfo> cpuOps();
// The entry for `op_type`, or nullptr.
const OpInfo* findCpuOp(const std::string& op_type);

// The load-time check of one node (the executor runs it on every node before the first run): the domain is
// the default one, the operator is in cpuOps(), `opset` is at least its min_opset, every attribute is one it
// reads, and its own check passes. Throws sf::Error naming the node, op type, attribute and opset otherwise.
void checkCpuNode(const Node& node, int64_t opset);

// Resize's separable taps as the CPU kernel computes them, for the GPU executor: the output shape and, per
// axis and output coordinate, the (input index, weight) pairs (at most 4) or whether it extrapolates
// (tf_crop_and_resize outside the region: the extrapolation value). Throws as the kernel would.
struct ResizeTapTables {
  struct Axis {
    std::vector<std::vector<std::pair<int64_t, double>>> taps;
    std::vector<bool> extrapolate;
  };
  Shape out;
  std::vector<Axis> axes;
  double extrapolation = 0;
};
ResizeTapTables resizeTapTables(const Node& node, std::span<const Tensor* const> inputs, int64_t opset);

// Einsum's equation resolved against its operands' shapes, as the CPU kernel reads it, for the GPU executor
// too: one label per distinct letter and per axis an ellipsis stands for (right-aligned over the operands,
// numpy-broadcast). Each label has its size and, per operand, whether the operand has it and its stride
// there (in elements; 0 where the operand broadcasts it; the sum of both strides where a letter repeats in
// one term: a diagonal). `output` lists the labels of the output's axes in order; the others are summed.
// Throws sf::Error naming the node and the equation for an equation the kernel does not implement or that
// does not fit the shapes.
struct EinsumSpec {
  struct Label {
    int64_t size = 1;
    std::vector<bool> present;     // per operand
    std::vector<int64_t> strides;  // per operand
  };
  std::vector<Label> labels;
  std::vector<size_t> output;  // label index per output axis
  Shape out;
};
EinsumSpec einsumSpec(const Node& node, std::span<const Shape> shapes, int64_t opset);

}  // namespace sf::nn
