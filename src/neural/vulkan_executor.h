// Runs an ONNX graph with Vulkan compute: the neural layer's GPU backend (docs/neural.md). The graph is the
// CPU executor's (same load-time checks, same constant folding); the first run with a given set of input
// shapes plans the whole graph once:
//  - a dry run of the CPU executor gives every value's type and shape, and the values that do not depend
//    on the inputs' data ("static": initializers, Shape of anything, and what is computed from them only)
//    become constants, so shape arithmetic never reaches the GPU;
//  - every other node becomes dispatches of a few kernels (src/neural/shaders): elementwise with
//    broadcasting, tiled GEMM (MatMul, Gemm), direct convolution, reductions, softmax, GridSample, Resize,
//    Gather, and one gather-map kernel for all data movement (Transpose, Slice, Concat, Split, Expand,
//    Tile, Pad, Gather by constant indices, nearest Resize): the map is the operator's own CPU kernel run on
//    index tensors, so the GPU moves exactly what the reference moves;
//  - Reshape, Flatten, Squeeze, Unsqueeze and Identity alias their input (no dispatch);
//  - tensors live in one device buffer, intermediates reusing the space of values no later node reads.
// Later runs with the same shapes upload the inputs, record one command buffer and read the outputs back;
// prepare() + record() put the same work into a caller's command buffer (the frame), with the outputs left
// on the GPU at outputAddress().
// On the GPU float types are float32 (float16 and bfloat16 rounded after every operation) and integer and
// bool types int32: an integer input or constant outside the int32 range is refused, as are uint32 and
// uint64 values. A node that cannot run is refused with its name, op type and opset.
#pragma once

#include <volk.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "neural/cpu_executor.h"

namespace sf::gpu {
class Context;
}

namespace sf::nn {

// The operators the Vulkan executor runs, sorted, with a note on their limits ("" when none beyond the CPU
// kernel's): for the documentation table and `splatforge onnx info`.
struct GpuOpInfo {
  const char* op_type;
  const char* notes;
};
std::vector<GpuOpInfo> vulkanOps();
// Why node `n` cannot run on the Vulkan executor whatever the shapes (empty when it may; shape-dependent
// limits are checked when a run is planned).
std::string vulkanUnsupportedReason(const Node& n, int64_t opset);

// Why the Vulkan executor would refuse to run `cpu`'s graph on these inputs (an operator without a kernel,
// a shape beyond a kernel's limits, a shape input computed on the fly, a type the GPU does not hold); empty
// when it would run. Plans on the CPU only: needs no device.
std::string vulkanPlanProblem(const CpuExecutor& cpu, const TensorMap& inputs);

class VulkanExecutor {
 public:
  // Throws what the CPU executor's constructor throws, and for a node whose operator has no GPU kernel
  // (vulkanOps()), even one that planning would fold into a constant.
  VulkanExecutor(gpu::Context& ctx, Graph graph);
  ~VulkanExecutor();
  VulkanExecutor(const VulkanExecutor&) = delete;
  VulkanExecutor& operator=(const VulkanExecutor&) = delete;

  const Graph& graph() const;
  const CpuExecutor& cpu() const;

  // Runs the graph on the GPU: inputs as CpuExecutor::run takes them, every output by name. `times`, when
  // given, receives one entry per node run on the GPU (timestamps; nodes folded or aliased cost nothing);
  // such a profiling run serialises the nodes (a barrier after each), so its total exceeds a plain run's.
  TensorMap run(const TensorMap& inputs, std::vector<NodeTime>* times = nullptr);
  // GPU time of the last run() from its timestamps (ms): the dispatches alone, without upload and readback.
  double lastGpuMs() const;
  // A benchmark: the inputs uploaded once, then `runs` plain runs recorded back to back in one submission
  // (a barrier between them), so the GPU does not idle between runs; each run's GPU time (ms) from
  // timestamps around it. No outputs are read. runs in 1..4096. `times`, when given, receives each node's
  // median over min(runs, kBackToBackProfiledRuns) more runs in the same submission with a barrier and a
  // timestamp after every node (a stable per-node split: the GPU's clock stays up).
  static constexpr int kBackToBackProfiledRuns = 64;
  std::vector<double> runBackToBack(const TensorMap& inputs, int runs,
                                    std::vector<NodeTime>* times = nullptr);

  // In-frame use: plans for the inputs' shapes (if not yet) and uploads the inputs to the GPU now;
  // record() then records the graph's dispatches into `cmd` (ending with a compute barrier), after which
  // the outputs are on the GPU. An output's address points at its values as 32-bit words (float32 for float
  // types, int32 otherwise); static outputs (that do not depend on the inputs) are there too.
  void prepare(const TensorMap& inputs);
  void record(VkCommandBuffer cmd);
  VkDeviceAddress outputAddress(const std::string& name) const;
  // Inputs a GPU pass writes in the frame before record() (at inputAddress, 32-bit words as outputs):
  // record() leaves them out of its copy from the values prepare() uploaded. Throws for a name that is not an
  // input.
  void setDeviceWrittenInputs(std::set<std::string> names);
  // Where an input lives in the prepared plan; throws before prepare() or for an input the plan keys on.
  VkDeviceAddress inputAddress(const std::string& name) const;
  // The output's shape and type in the prepared plan; throws for an unknown name or before prepare().
  const Shape& outputShape(const std::string& name) const;
  DType outputType(const std::string& name) const;
  // A static output's value (one that does not depend on the inputs), or nullptr.
  const Tensor* staticOutput(const std::string& name) const;

  // Of the current plan: dispatches per run, bytes of the tensor arena, nodes run on the GPU, and the waves
  // they run in (nodes of a wave are independent: one barrier per wave).
  size_t waves() const;
  size_t dispatches() const;
  uint64_t arenaBytes() const;
  size_t gpuNodes() const;

 private:
  std::pair<const Shape*, DType> outputInfo(const std::string& name) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A GraphRunner (cpu_executor.h) on a Vulkan executor of `graph` on `ctx`: for ImageModel::setRunner and
// GaussianGenerator::setRunner. The executor lives as long as the runner.
GraphRunner vulkanRunner(gpu::Context& ctx, const Graph& graph);

}  // namespace sf::nn
