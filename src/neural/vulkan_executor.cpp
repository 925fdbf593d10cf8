#include "neural/vulkan_executor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "core/error.h"
#include "gpu/gpu.h"
#include "neural/cpu_ops.h"
#include "neural/shaders/nn_codes.h"

namespace sf::nn {
namespace {

const uint32_t kEltwiseShader[] = {
#include "nn_eltwise.inc"
};
const uint32_t kMapShader[] = {
#include "nn_map.inc"
};
const uint32_t kGatherShader[] = {
#include "nn_gather.inc"
};
const uint32_t kReduceShader[] = {
#include "nn_reduce.inc"
};
const uint32_t kSoftmaxShader[] = {
#include "nn_softmax.inc"
};
const uint32_t kGemmShader[] = {
#include "nn_gemm.inc"
};
const uint32_t kConvShader[] = {
#include "nn_conv.inc"
};
const uint32_t kSampleShader[] = {
#include "nn_sample.inc"
};
const uint32_t kMatmulSmallShader[] = {
#include "nn_matmul_small.inc"
};
const uint32_t kFusedShader[] = {
#include "nn_fused.inc"
};

enum class Kernel { kEltwise, kFused, kMap, kGather, kReduce, kSoftmax, kGemm, kMatmulSmall, kConv, kSample, kCount };

struct KernelSource {
  std::span<const uint32_t> spirv;
  const char* name;
};
KernelSource kernelSource(Kernel k) {
  switch (k) {
    case Kernel::kEltwise: return {kEltwiseShader, "nn_eltwise"};
    case Kernel::kMap: return {kMapShader, "nn_map"};
    case Kernel::kGather: return {kGatherShader, "nn_gather"};
    case Kernel::kReduce: return {kReduceShader, "nn_reduce"};
    case Kernel::kSoftmax: return {kSoftmaxShader, "nn_softmax"};
    case Kernel::kGemm: return {kGemmShader, "nn_gemm"};
    case Kernel::kConv: return {kConvShader, "nn_conv"};
    case Kernel::kSample: return {kSampleShader, "nn_sample"};
    case Kernel::kMatmulSmall: return {kMatmulSmallShader, "nn_matmul_small"};
    case Kernel::kFused: return {kFusedShader, "nn_fused"};
    case Kernel::kCount: break;
  }
  return {{}, ""};
}

struct Push {
  VkDeviceAddress data;
  VkDeviceAddress params;
  uint32_t base;
  uint32_t count;
};

constexpr uint32_t kGroupSize = 256;

// ---- The operator table ----

struct UnaryOp {
  const char* op_type;
  uint32_t code;
};
constexpr UnaryOp kUnary[] = {
    {"Abs", NN_ABS},       {"Ceil", NN_CEIL},   {"Cos", NN_COS},        {"Erf", NN_ERF},
    {"Exp", NN_EXP},       {"Floor", NN_FLOOR}, {"LeakyRelu", NN_LEAKY_RELU}, {"Log", NN_LOG},
    {"Neg", NN_NEG},       {"Not", NN_NOT},     {"Reciprocal", NN_RECIPROCAL}, {"Relu", NN_RELU},
    {"Sigmoid", NN_SIGMOID}, {"Sin", NN_SIN},   {"Sqrt", NN_SQRT},      {"Tanh", NN_TANH},
    {"Cast", NN_IDENTITY},
};
constexpr UnaryOp kBinary[] = {
    {"Add", NN_ADD},     {"And", NN_AND},         {"Div", NN_DIV}, {"Equal", NN_EQUAL}, {"Greater", NN_GREATER},
    {"Less", NN_LESS},   {"Mul", NN_MUL},         {"Or", NN_OR},   {"Pow", NN_POW},     {"Sub", NN_SUB},
};
// Operators whose output is a rearrangement of their inputs' elements: run through a gather map. The value
// is which inputs are data, one bit per input (the rest must be static): -1 for all of them. (ScatterND:
// data and updates; its indices static, reduction none.)
const std::map<std::string, int>& mapOps() {
  static const std::map<std::string, int> ops{{"Concat", -1}, {"Expand", 1}, {"Pad", 1},  {"ScatterND", 5}, {"Slice", 1},
                                              {"Split", 1},   {"Tile", 1},   {"Transpose", 1}};
  return ops;
}
// Which inputs of a node lowered through a gather map are data (bit k: input k; -1: all); the rest must be
// static.
int mapDataInputs(const Node& n) {
  auto it = mapOps().find(n.op_type);
  return it != mapOps().end() ? it->second : 1;  // Gather (constant indices), nearest Resize: input 0
}
bool isDataInput(int inputs, size_t k) {
  return inputs < 0 || (k < 31 && ((inputs >> k) & 1) != 0);
}

const std::set<std::string>& aliasOps() {
  static const std::set<std::string> ops{"Flatten", "Identity", "Reshape", "Squeeze", "Unsqueeze"};
  return ops;
}
const std::map<std::string, uint32_t>& reduceOps() {
  static const std::map<std::string, uint32_t> ops{
      {"ReduceL1", NN_RED_L1},   {"ReduceL2", NN_RED_L2},     {"ReduceLogSum", NN_RED_LOG_SUM},
      {"ReduceLogSumExp", NN_RED_LOG_SUM_EXP}, {"ReduceMax", NN_RED_MAX}, {"ReduceMean", NN_RED_MEAN},
      {"ReduceMin", NN_RED_MIN}, {"ReduceProd", NN_RED_PROD}, {"ReduceSum", NN_RED_SUM},
      {"ReduceSumSquare", NN_RED_SUM_SQUARE}};
  return ops;
}
// Operators that only ever compute constants here: folded when their inputs are static, else refused.
const std::set<std::string>& staticOnlyOps() {
  static const std::set<std::string> ops{"Constant", "ConstantOfShape", "Range", "Shape"};
  return ops;
}

const UnaryOp* findIn(std::span<const UnaryOp> table, const std::string& op) {
  for (const UnaryOp& u : table)
    if (op == u.op_type) return &u;
  return nullptr;
}

bool gpuType(DType t) {
  switch (t) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat64:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kBool:
      return true;
    default:
      return false;
  }
}

[[noreturn]] void refuse(const Graph& g, const Node& n, const std::string& why) {
  throw Error(g.path + ": " + n.describe() + ", opset " + std::to_string(g.opset) + ": " + why +
              " (Vulkan executor)");
}

// Merges neighbouring axes that every operand walks contiguously (fewer divisions per element; ranks above
// the kernels' limit become runnable). Strides per operand over `dims`.
void collapseAxes(Shape& dims, std::vector<std::vector<int64_t>>& strides) {
  for (size_t d = dims.size(); d-- > 1;) {
    bool merge = true;
    for (const auto& st : strides)
      if (st[d - 1] != st[d] * dims[d]) merge = false;
    if (dims[d] == 1) merge = true;
    if (!merge) continue;
    if (dims[d] != 1)
      for (auto& st : strides) st[d - 1] = st[d];
    dims[d - 1] *= dims[d];
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(d));
    for (auto& st : strides) st.erase(st.begin() + static_cast<std::ptrdiff_t>(d));
  }
}

uint32_t floatBits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

// A tensor as the GPU holds it: float types as float32 bits, the others as int32 (refusing values outside).
std::vector<uint32_t> toWords(const Tensor& t, const std::string& what) {
  std::vector<uint32_t> w(static_cast<size_t>(t.numel()));
  if (t.isFloat()) {
    for (size_t k = 0; k < w.size(); ++k) w[k] = floatBits(t.f[k]);
  } else {
    for (size_t k = 0; k < w.size(); ++k) {
      const int64_t v = t.i[k];
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        throw Error(what + ": element " + std::to_string(k) + " (" + std::to_string(v) +
                    ") is outside the int32 range the Vulkan executor holds integers in");
      w[k] = static_cast<uint32_t>(static_cast<int32_t>(v));
    }
  }
  return w;
}

Tensor fromWords(const uint32_t* w, DType type, const Shape& shape) {
  Tensor t(type, shape);
  if (t.isFloat()) {
    for (size_t k = 0; k < t.f.size(); ++k) std::memcpy(&t.f[k], &w[k], 4);
  } else {
    for (size_t k = 0; k < t.i.size(); ++k) {
      const int64_t v = static_cast<int32_t>(w[k]);
      t.i[k] = type == DType::kBool ? (v != 0) : v;
    }
  }
  return t;
}

}  // namespace

std::vector<GpuOpInfo> vulkanOps() {
  std::vector<GpuOpInfo> ops;
  for (const UnaryOp& u : kUnary) ops.push_back({u.op_type, u.code == NN_IDENTITY ? "not from or to uint32/uint64" : ""});
  for (const UnaryOp& u : kBinary) ops.push_back({u.op_type, ""});
  for (const auto& [op, data] : mapOps()) {
    (void)data;
    ops.push_back({op.c_str(), op == "ScatterND" ? "reduction none, through a gather map; indices static"
                                                 : "through a gather map; shape inputs static"});
  }
  for (const std::string& op : aliasOps()) ops.push_back({op.c_str(), "aliases its input; shape inputs static"});
  for (const auto& [op, code] : reduceOps()) {
    (void)code;
    ops.push_back({op.c_str(), "up to 6 axes after merging; axes static"});
  }
  for (const std::string& op : staticOnlyOps()) ops.push_back({op.c_str(), "folded: inputs must be static"});
  ops.push_back({"BatchNormalization", "inference; statistics static (folded into a multiply-add)"});
  ops.push_back({"Clip", "bounds static or tensors"});
  ops.push_back({"Conv", "1-D and 2-D"});
  ops.push_back({"Einsum", "one operand (a strided sum) or two float operands (a strided GEMM: output labels batch, then one "
                           "operand's, then the other's)"});
  ops.push_back({"InstanceNormalization", "one invocation per (n, c) plane"});
  ops.push_back({"LayerNormalization", "one invocation per row"});
  ops.push_back({"Max", "float types: up to 8 inputs; integer types: up to 2"});
  ops.push_back({"Min", "float types: up to 8 inputs; integer types: up to 2"});
  ops.push_back({"Gather", "constant indices through a gather map"});
  ops.push_back({"Gemm", "float types"});
  ops.push_back({"GridSample", ""});
  ops.push_back({"MatMul", "float types; up to 4 batch axes after merging"});
  ops.push_back({"Resize", "scales/sizes static; nearest through a gather map"});
  ops.push_back({"Softmax", ""});
  ops.push_back({"Where", ""});
  std::sort(ops.begin(), ops.end(), [](const GpuOpInfo& a, const GpuOpInfo& b) { return std::strcmp(a.op_type, b.op_type) < 0; });
  return ops;
}

std::string vulkanUnsupportedReason(const Node& n, int64_t opset) {
  (void)opset;
  if (n.op_type == "ScatterND" && n.attrString("reduction", "none") != "none")
    return "no Vulkan kernel for ScatterND with reduction '" + n.attrString("reduction", "none") + "' (reduction none runs through a gather map)";
  if (n.op_type == "Einsum" && n.inputs.size() > 2)
    return "no Vulkan kernel for Einsum of " + std::to_string(n.inputs.size()) + " operands (one or two)";
  for (const GpuOpInfo& op : vulkanOps())
    if (n.op_type == op.op_type) return {};
  return "no Vulkan kernel for " + n.op_type;
}

// ---- The plan ----

struct Dispatch {
  Kernel kernel;
  uint32_t base;             // first parameter word
  uint32_t count;            // invocations
  std::array<uint32_t, 3> groups;
};

struct Slot {
  uint64_t offset = 0;  // words into the arena
  DType dtype = DType::kFloat32;
  Shape shape;
  bool is_static = false;
};

struct NodeSpan {
  std::string op_type, name;
  size_t first = 0, end = 0;  // dispatches
  size_t wave = 0;            // nodes of one wave are independent: a barrier only between waves
};

struct Plan {
  std::vector<Shape> key;
  std::set<std::string> keyed;         // graph inputs whose values are part of the key (shape arguments)
  std::map<std::string, Tensor> key_values;
  std::map<std::string, Slot> slots;
  std::map<std::string, Tensor> statics;  // static values (graph outputs among them are returned as they are)
  std::vector<uint32_t> params;
  std::vector<Dispatch> dispatches;
  std::vector<NodeSpan> nodes;  // in run order (by wave)
  size_t waves = 0;
  std::vector<std::pair<uint64_t, std::vector<uint32_t>>> constants;  // offset, words: uploaded once
  uint64_t arena_words = 0;
  uint64_t input_words = 0, output_words = 0;
  gpu::Buffer arena, param_buffer, staging;
  bool uploaded = false;
};

struct VulkanExecutor::Impl {
  gpu::Context& ctx;
  CpuExecutor cpu;
  std::array<std::unique_ptr<gpu::ComputePipeline>, static_cast<size_t>(Kernel::kCount)> pipelines;
  std::vector<std::unique_ptr<Plan>> plans;
  Plan* current = nullptr;
  VkQueryPool queries = VK_NULL_HANDLE;
  uint32_t query_capacity = 0;

  Impl(gpu::Context& c, Graph g) : ctx(c), cpu(std::move(g)) {}
  ~Impl() {
    if (queries) vkDestroyQueryPool(ctx.device(), queries, nullptr);
  }

  const gpu::ComputePipeline& pipeline(Kernel k) {
    auto& p = pipelines[static_cast<size_t>(k)];
    if (!p) {
      const KernelSource src = kernelSource(k);
      p = std::make_unique<gpu::ComputePipeline>(ctx, src.spirv, sizeof(Push), kGroupSize, src.name);
    }
    return *p;
  }

  Plan& planFor(const TensorMap& inputs);
  void upload(Plan& plan);
  void writeInputs(Plan& plan, const TensorMap& inputs);
  // Records the plan's dispatches; returns the command buffer to go on recording into (another one than
  // `cmd` with sync_nodes, which submits and waits after every node). Timestamps: none, the total (queries
  // 0 and 1), or one after every node (queries 0..n, nodes serialised by barriers: a profile).
  enum class Stamps { kNone, kTotal, kPerNode };
  // A timestamp pool of at least `needed` queries.
  void ensureQueries(uint32_t needed) {
    if (needed <= query_capacity) return;
    if (queries) vkDestroyQueryPool(ctx.device(), queries, nullptr);
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = needed;
    SF_VK_CHECK(vkCreateQueryPool(ctx.device(), &qi, nullptr, &queries));
    query_capacity = needed;
  }
  // Per-node stamps go to queries query_base .. query_base + nodes; query_base > 0 leaves the reset to the
  // caller (runs recorded back to back into one pool).
  VkCommandBuffer recordDispatches(Plan& plan, VkCommandBuffer cmd, Stamps stamps, bool sync_nodes = false, uint32_t query_base = 0);
  double last_gpu_ms = 0;
  std::set<std::string> device_inputs;  // written on the GPU before record(): not copied from staging

  // The inputs from the staging buffer (where writeInputs put them, in graph order) into their slots, then
  // a barrier.
  void recordInputCopy(Plan& plan, VkCommandBuffer cmd) {
    std::vector<VkBufferCopy> copies;
    uint64_t cursor = 0;
    for (const ValueInfo& v : cpu.graph().inputs) {
      if (plan.keyed.count(v.name)) continue;
      const Slot& s = plan.slots.at(v.name);
      const auto words = static_cast<uint64_t>(elementCount(s.shape));
      if (words && !device_inputs.count(v.name)) copies.push_back({cursor * 4, s.offset * 4, words * 4});
      cursor += words;
    }
    if (!copies.empty()) vkCmdCopyBuffer(cmd, plan.staging.buffer, plan.arena.buffer, static_cast<uint32_t>(copies.size()), copies.data());
    gpu::computeBarrier(cmd);
  }
};

namespace {

// Thrown while planning when a value that must be a constant (a shape, axes, a fold) is computed from small
// graph inputs: the plan is made again with those inputs' values as part of its key.
struct NeedsKey {
  std::set<std::string> inputs;
};

// Inputs of up to this many elements may become part of a plan's key.
constexpr int64_t kMaxKeyedElements = 1024;

// The graph inputs `value` is computed from (through any nodes; initializers and Shape outputs end a path).
std::set<std::string> inputAncestors(const Graph& g, const std::string& value) {
  std::map<std::string, const Node*> producer;
  for (const Node& n : g.nodes)
    for (const std::string& o : n.outputs) producer[o] = &n;
  std::set<std::string> inputs, seen;
  std::vector<std::string> todo{value};
  while (!todo.empty()) {
    const std::string v = todo.back();
    todo.pop_back();
    if (v.empty() || !seen.insert(v).second) continue;
    for (const ValueInfo& in : g.inputs)
      if (in.name == v) inputs.insert(v);
    auto it = producer.find(v);
    if (it == producer.end() || it->second->op_type == "Shape") continue;
    todo.insert(todo.end(), it->second->inputs.begin(), it->second->inputs.end());
  }
  return inputs;
}

// Builds the dispatches of one plan; knows the slots of every value.
// Whether `from` broadcasts to `to` (numpy rules: aligned at the last axis, each axis equal or 1).
bool broadcastsTo(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t k = 0; k < from.size(); ++k)
    if (from[k] != 1 && from[k] != to[lead + k]) return false;
  return true;
}

class Lowering {
 public:
  Lowering(const Graph& g, Plan& plan) : g_(g), plan_(plan) {}

  // Which values are static, from the graph alone: initializers, Shape's output, and the outputs of nodes
  // whose inputs are all static.
  static std::set<std::string> staticValues(const Graph& g, const std::set<std::string>& keyed) {
    std::set<std::string> s = keyed;
    for (const auto& [name, t] : g.initializers) {
      (void)t;
      s.insert(name);
    }
    for (const Node& n : g.nodes) {
      bool all = true;
      for (const std::string& in : n.inputs)
        if (!in.empty() && !s.count(in)) all = false;
      if (all || n.op_type == "Shape") s.insert(n.outputs.begin(), n.outputs.end());
    }
    return s;
  }

  // Throws NeedsKey when every graph input the values come from is small (and not keyed yet); returns
  // otherwise (the caller refuses).
  void keyOrRefuse(const Node& n, const std::vector<std::string>& values) {
    (void)n;
    std::set<std::string> inputs;
    for (const std::string& v : values) {
      const std::set<std::string> a = inputAncestors(g_, v);
      inputs.insert(a.begin(), a.end());
    }
    if (inputs.empty()) return;
    for (const std::string& in : inputs) {
      auto it = sizes_.find(in);
      if (it == sizes_.end() || it->second > kMaxKeyedElements || plan_.keyed.count(in)) return;
    }
    throw NeedsKey{inputs};
  }
  std::map<std::string, int64_t> sizes_;  // element counts of the graph inputs
  std::map<std::string, uint32_t> acts_;  // matrix product output -> activation fused into it (1 relu, 2 sigmoid, 3 tanh)

  uint32_t newParams(size_t words) {
    const auto base = static_cast<uint32_t>(plan_.params.size());
    plan_.params.resize(plan_.params.size() + words, 0);
    return base;
  }
  uint32_t& param(uint32_t base, size_t k) { return plan_.params[base + k]; }

  void dispatch(Kernel k, uint32_t base, uint64_t count, const Node& n) {
    if (count == 0) return;
    const uint64_t groups = (count + kGroupSize - 1) / kGroupSize;
    const uint64_t x = std::min<uint64_t>(groups, 65535), y = (groups + x - 1) / x;
    if (y > 65535 || count > 0xFFFFFFFFull) refuse(g_, n, std::to_string(count) + " invocations exceed one dispatch");
    plan_.dispatches.push_back({k, base, static_cast<uint32_t>(count), {static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1}});
  }

  // The slot of value `name` (which must exist).
  const Slot& slot(const Node& n, const std::string& name) {
    auto it = plan_.slots.find(name);
    if (it == plan_.slots.end()) refuse(g_, n, "value '" + name + "' has no place on the GPU");
    return it->second;
  }
  uint32_t off(const Node& n, const std::string& name) {
    const uint64_t o = slot(n, name).offset;
    if (o > 0xFFFFFFFFull) refuse(g_, n, "the tensor arena exceeds 2^32 words");
    return static_cast<uint32_t>(o);
  }
  const Tensor& staticValue(const Node& n, size_t k, const char* what) {
    if (k >= n.inputs.size() || n.inputs[k].empty()) refuse(g_, n, std::string(what) + " is required");
    auto it = plan_.statics.find(n.inputs[k]);
    if (it == plan_.statics.end()) {
      keyOrRefuse(n, {n.inputs[k]});
      refuse(g_, n, std::string(what) + " ('" + n.inputs[k] + "') must be a constant, not computed from the inputs");
    }
    return it->second;
  }
  // A constant of the plan (uploaded once), returning its offset. Always fresh space: a range freed earlier
  // in the plan is written by the values that held it when the plan runs.
  uint64_t constant(std::vector<uint32_t> words) {
    const uint64_t at = alloc_.bump(std::max<uint64_t>(words.size(), 1));
    plan_.constants.emplace_back(at, std::move(words));
    return at;
  }
  uint64_t allocate(uint64_t words) { return alloc_.take(std::max<uint64_t>(words, 1)); }
  void release(uint64_t at, uint64_t words) { alloc_.give(at, std::max<uint64_t>(words, 1)); }
  uint64_t high() const { return alloc_.high; }

  void lower(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info);

 private:
  void eltwise(const Node& n, uint32_t op, std::span<const std::string> ins, float alpha = 0, float beta = 0);
  void mapped(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info);
  std::vector<std::vector<int64_t>> computeMaps(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info,
                                                std::vector<std::string>& names, uint32_t& fill);
  struct Sources {
    std::vector<std::string> sources;
    std::vector<int64_t> entries;  // 1 + (source << 28 | index), 0: fill; empty when identity
    bool identity = false;         // the value's own elements, in order (one source)
  };
  Sources sourcesOf(const std::string& value, const std::map<std::string, std::pair<DType, Shape>>& info);
  Sources compose(const Node& n, const std::vector<int64_t>& map, const std::vector<Sources>& inputs);
  Sources composeAll(const Node& n, const std::vector<int64_t>& map, const std::vector<Sources>& inputs);

 public:
  std::map<std::string, const Node*> absorbed_;      // stored value -> the map node that would write it, composed into its reader
  std::map<const Node*, std::vector<const Node*>> chains_;  // last node of a fused elementwise chain -> the chain, in order
  void fusedChain(const Node& tip, const std::map<std::string, std::pair<DType, Shape>>& info);
  // A map node whose map is a strided view of its one source (Transpose, Slice, Expand, ...), read only by
  // elementwise nodes, is not run: they read the source through the view. Keyed by the name they read.
  struct View {
    std::string source;
    Shape shape;                   // the read name's shape
    int64_t base = 0;              // source element of index 0
    std::vector<int64_t> strides;  // source elements per step along each axis of `shape`
  };
  std::map<std::string, View> views_;
  // The source of `name` when it is a view that only broadcasts it (Expand: base 0, the source's own
  // strides, 0 along new or size-1 axes); else `name`.
  std::string broadcastSource(const std::string& name) const {
    auto v = views_.find(name);
    if (v == views_.end() || v->second.base != 0) return name;
    const View& w = v->second;
    auto s = shapes_.find(w.source);
    if (s == shapes_.end() || !broadcastsTo(s->second, w.shape)) return name;
    std::vector<int64_t> want = broadcastStrides(s->second, w.shape);
    for (size_t k = 0; k < w.shape.size(); ++k)
      if (w.shape[k] == 1) want[k] = w.strides[k];  // any stride along an axis of one element
    return want == w.strides ? w.source : name;
  }
  std::map<std::string, Shape> shapes_;  // values' shapes (the dry run's), for broadcastSource
  // How an elementwise kernel reads `name` for an output of `dims`: word offset, type, strides per axis.
  struct Operand {
    uint32_t offset = 0;
    DType dtype = DType::kFloat32;
    std::vector<int64_t> strides;
  };
  Operand operand(const Node& n, const std::string& name, const Shape& dims);
  // The maps of a map node's outputs composed through the maps absorbed into it (computeMaps, then compose
  // with the sources of its inputs), made once per plan: the view pass, dead-node elimination, the waves and
  // the lowering all read them. Valid once absorbed_ is final.
  struct ComposedMaps {
    uint32_t fill = 0;             // Pad's (or Resize's) fill value, 0 when it writes none
    std::vector<Sources> outputs;  // per output: 1 + (source << 28 | index) into its sources per element
  };
  const ComposedMaps& composedMaps(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info) {
    if (auto it = composed_.find(&n); it != composed_.end()) return it->second;
    ComposedMaps c;
    std::vector<std::string> names;
    const std::vector<std::vector<int64_t>> maps = computeMaps(n, info, names, c.fill);
    std::vector<Sources> inputs;
    for (const std::string& name : names) inputs.push_back(sourcesOf(name, info));
    for (const std::vector<int64_t>& map : maps) c.outputs.push_back(compose(n, map, inputs));
    return composed_.emplace(&n, std::move(c)).first->second;
  }
  std::map<const Node*, ComposedMaps> composed_;
  // Output `output`'s composed map, or null when the node writes a fill value.
  const Sources* composedMap(const Node& n, size_t output, const std::map<std::string, std::pair<DType, Shape>>& info) {
    const ComposedMaps& c = composedMaps(n, info);
    return c.fill != 0 || output >= c.outputs.size() ? nullptr : &c.outputs[output];
  }
  std::function<std::string(const std::string&)> root_;  // alias -> the value whose storage it shares

 private:
  void gemm(const Node& n, bool is_gemm);
  void conv(const Node& n);
  void reduce(const Node& n, uint32_t kind);
  void softmax(const Node& n);
  void gather(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info);
  void gridSample(const Node& n);
  void resize(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info);
  void batchNorm(const Node& n);
  void clip(const Node& n);
  void extremum(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info);
  void normalise(const Node& n);
  void einsum(const Node& n);
  // A reduction of `input` over `red` (its strides `rs`) for each element of `kept` (strides `ks`), written
  // in kept's row-major order: the Reduce* family and one-operand Einsum.
  void stridedReduce(const Node& n, uint32_t kind, const std::string& input, Shape kept, std::vector<int64_t> ks, Shape red,
                     std::vector<int64_t> rs);
  // A batched product out[batch][m][n] = sum_k A[.. m .. k] B[.. k .. n] with A and B read through strides:
  // MatMul, Gemm (alpha, beta, C from the node) and two-operand Einsum.
  struct Product {
    std::string a, b;
    int64_t M = 0, N = 0, K = 0;
    int64_t sam = 0, sak = 0, sbk = 0, sbn = 0;
    Shape batch;
    std::vector<int64_t> a_batch_st, b_batch_st;
  };
  void product(const Node& n, const Product& p, bool is_gemm);
  // A fused program (shaders/nn_fused.comp) over `inputs` writing the node's first output: operations
  // {op, a, b, c, value type, alpha bits} with operands 0..7 (inputs), 8 (the previous result), 255 (none).
  void fusedProgram(const Node& tip, const std::vector<std::string>& inputs, const std::vector<std::array<uint32_t, 6>>& program);

  // First-fit allocator over words with merging of freed ranges.
  struct Allocator {
    std::map<uint64_t, uint64_t> free;  // offset -> size
    uint64_t high = 0;
    uint64_t take(uint64_t n) {
      n = (n + 63) & ~uint64_t{63};  // 256-byte alignment
      for (auto it = free.begin(); it != free.end(); ++it) {
        if (it->second < n) continue;
        const uint64_t at = it->first, left = it->second - n;
        free.erase(it);
        if (left) free[at + n] = left;
        return at;
      }
      return bump(n);
    }
    uint64_t bump(uint64_t n) {
      n = (n + 63) & ~uint64_t{63};
      const uint64_t at = high;
      high += n;
      return at;
    }
    void give(uint64_t at, uint64_t n) {
      n = (n + 63) & ~uint64_t{63};
      auto it = free.emplace(at, n).first;
      if (auto next = std::next(it); next != free.end() && it->first + it->second == next->first) {
        it->second += next->second;
        free.erase(next);
      }
      if (it != free.begin()) {
        auto prev = std::prev(it);
        if (prev->first + prev->second == it->first) {
          prev->second += it->second;
          free.erase(it);
        }
      }
    }
  };

  const Graph& g_;
  Plan& plan_;
  Allocator alloc_;
};

Lowering::Operand Lowering::operand(const Node& n, const std::string& name, const Shape& dims) {
  Operand o;
  auto v = views_.find(name);
  if (v == views_.end()) {
    const Slot& s = slot(n, name);
    if (s.shape.size() > dims.size()) refuse(g_, n, "an input has a higher rank than the output");
    o.offset = off(n, name), o.dtype = s.dtype, o.strides = broadcastStrides(s.shape, dims);
    return o;
  }
  const View& w = v->second;
  if (w.shape.size() > dims.size()) refuse(g_, n, "an input has a higher rank than the output");
  const uint64_t at = uint64_t{off(n, w.source)} + static_cast<uint64_t>(w.base);
  if (at > 0xFFFFFFFFull) refuse(g_, n, "the tensor arena exceeds 2^32 words");
  o.offset = static_cast<uint32_t>(at), o.dtype = slot(n, w.source).dtype;
  o.strides.assign(dims.size(), 0);
  const size_t lead = dims.size() - w.shape.size();
  for (size_t k = 0; k < w.shape.size(); ++k) o.strides[lead + k] = w.shape[k] == 1 ? 0 : w.strides[k];
  return o;
}

void Lowering::eltwise(const Node& n, uint32_t op, std::span<const std::string> ins, float alpha, float beta) {
  const Slot& out = slot(n, n.outputs[0]);
  Shape dims = out.shape;
  std::vector<std::vector<int64_t>> strides;
  strides.push_back(rowStrides(dims));
  uint32_t present = 0;
  std::vector<Operand> operands(ins.size());
  for (size_t k = 0; k < ins.size(); ++k) {
    if (ins[k].empty()) {
      strides.push_back(std::vector<int64_t>(dims.size(), 0));
      continue;
    }
    present |= 1u << k;
    operands[k] = operand(n, ins[k], dims);
    strides.push_back(operands[k].strides);
  }
  collapseAxes(dims, strides);
  if (dims.size() > NN_MAX_RANK) refuse(g_, n, "more than 6 axes after merging");
  const uint32_t b = newParams(37);
  param(b, 0) = op;
  param(b, 1) = static_cast<uint32_t>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) param(b, 2 + d) = static_cast<uint32_t>(dims[d]);
  param(b, 8) = off(n, n.outputs[0]);
  param(b, 9) = static_cast<uint32_t>(out.dtype);
  for (size_t k = 0; k < ins.size(); ++k) {
    if (ins[k].empty()) continue;
    param(b, 10 + 8 * k) = operands[k].offset;
    param(b, 11 + 8 * k) = static_cast<uint32_t>(operands[k].dtype);
    for (size_t d = 0; d < dims.size(); ++d) param(b, 12 + 8 * k + d) = static_cast<uint32_t>(strides[k + 1][d]);
  }
  param(b, 34) = floatBits(alpha);
  param(b, 35) = floatBits(beta);
  param(b, 36) = present;
  dispatch(Kernel::kEltwise, b, static_cast<uint64_t>(elementCount(out.shape)), n);
}

// Data movement: the operator's own CPU kernel run on index tensors gives, per output element, which input
// element it copies (1 + (input << 28 | index); 0 for Pad's fill value). One map per output; `names` gets
// the data inputs in index order.
std::vector<std::vector<int64_t>> Lowering::computeMaps(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info,
                                                        std::vector<std::string>& names, uint32_t& fill) {
  const int data_inputs = mapDataInputs(n);
  std::vector<Tensor> owned(n.inputs.size());
  std::vector<const Tensor*> in(n.inputs.size(), nullptr);
  names.clear();
  Node run = n;
  fill = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    if (n.inputs[k].empty()) continue;
    const bool data = isDataInput(data_inputs, k);
    if (!data) {
      if (n.op_type == "Pad" && k == 2) {
        // The fill value: kept for the GPU, replaced by 0 (no element) for the map.
        const Tensor& v = staticValue(n, k, "constant_value");
        const DType out_type = info.at(n.outputs[0]).first;
        fill = isFloatType(out_type) ? floatBits(static_cast<float>(v.asDouble(0)))
                                     : static_cast<uint32_t>(static_cast<int32_t>(v.asInt(0)));
        owned[k] = Tensor(DType::kInt64, v.shape);
        in[k] = &owned[k];
        continue;
      }
      in[k] = &staticValue(n, k, ("input " + std::to_string(k)).c_str());
      continue;
    }
    const auto j = static_cast<int64_t>(names.size());
    if (j >= 16) refuse(g_, n, "more than 16 data inputs");
    names.push_back(n.inputs[k]);
    const Shape& shape = info.at(n.inputs[k]).second;
    Tensor t(DType::kInt64, shape);
    if (static_cast<int64_t>(t.i.size()) >= (int64_t{1} << 28)) refuse(g_, n, "an input of 2^28 elements or more");
    for (size_t e = 0; e < t.i.size(); ++e) t.i[e] = ((j << 28) | static_cast<int64_t>(e)) + 1;
    owned[k] = std::move(t);
    in[k] = &owned[k];
  }
  if (n.op_type == "Pad" && g_.opset < 11) {
    if (const Attribute* v = n.attr("value")) {
      fill = floatBits(v->f);
      run.attributes["value"].f = 0;
    }
  }
  if (n.op_type == "Resize") {
    // tf_crop_and_resize writes the extrapolation value outside the region: the fill, 0 (no element) in the
    // map.
    if (const Attribute* v = n.attr("extrapolation_value")) {
      const DType out_type = info.at(n.outputs[0]).first;
      fill = isFloatType(out_type) ? floatBits(v->f) : static_cast<uint32_t>(static_cast<int32_t>(v->f));
      run.attributes["extrapolation_value"].f = 0;
    }
  }
  std::vector<Tensor> maps = findCpuOp(n.op_type)->cpu(run, in, g_.opset);
  std::vector<std::vector<int64_t>> out;
  for (Tensor& m : maps) out.push_back(std::move(m.i));
  return out;
}

// Where each element of `value` comes from: itself, or (when the map node producing it was absorbed into
// its reader) the elements of that node's own sources, composed through its map.
Lowering::Sources Lowering::sourcesOf(const std::string& value, const std::map<std::string, std::pair<DType, Shape>>& info) {
  const std::string r = root_ ? root_(value) : value;
  auto it = absorbed_.find(r);
  if (it == absorbed_.end()) return {{value}, {}, true};
  const Node& p = *it->second;
  std::vector<std::string> names;
  uint32_t fill = 0;
  const std::vector<std::vector<int64_t>> maps = computeMaps(p, info, names, fill);
  std::vector<Sources> inner;
  for (const std::string& name : names) inner.push_back(sourcesOf(name, info));
  return compose(p, maps.at(0), inner);
}

// Entries of `map` (1 + (j << 28 | index) into `inputs`) resolved through each input's own sources; only
// the sources some element reads are kept (a Slice of a Concat may read one of them).
Lowering::Sources Lowering::compose(const Node& n, const std::vector<int64_t>& map, const std::vector<Sources>& inputs) {
  Sources all = composeAll(n, map, inputs);
  Sources out;
  out.identity = false;
  std::vector<int64_t> renumber(all.sources.size(), -1);
  out.entries = std::move(all.entries);
  for (int64_t& e : out.entries) {
    if (e == 0) continue;
    const int64_t j = (e - 1) >> 28, idx = (e - 1) & 0x0FFFFFFF;
    if (renumber[static_cast<size_t>(j)] < 0) {
      renumber[static_cast<size_t>(j)] = static_cast<int64_t>(out.sources.size());
      out.sources.push_back(all.sources[static_cast<size_t>(j)]);
    }
    e = ((renumber[static_cast<size_t>(j)] << 28) | idx) + 1;
  }
  return out;
}

Lowering::Sources Lowering::composeAll(const Node& n, const std::vector<int64_t>& map, const std::vector<Sources>& inputs) {
  Sources out;
  out.identity = false;
  std::vector<std::vector<int64_t>> remap(inputs.size());  // input j's source k -> index in out.sources
  for (size_t j = 0; j < inputs.size(); ++j)
    for (const std::string& src : inputs[j].sources) {
      auto at = std::find(out.sources.begin(), out.sources.end(), src);
      if (at == out.sources.end()) {
        if (out.sources.size() >= 16) refuse(g_, n, "more than 16 data sources after composing moves");
        out.sources.push_back(src);
        at = out.sources.end() - 1;
      }
      remap[j].push_back(at - out.sources.begin());
    }
  out.entries.resize(map.size());
  for (size_t e = 0; e < map.size(); ++e) {
    if (map[e] == 0) continue;
    const int64_t m = map[e] - 1, j = m >> 28, idx = m & 0x0FFFFFFF;
    const Sources& in = inputs[static_cast<size_t>(j)];
    int64_t src_entry = in.identity ? idx + 1 : in.entries[static_cast<size_t>(idx)];
    if (src_entry == 0) continue;
    const int64_t sm = src_entry - 1, sj = sm >> 28, sidx = sm & 0x0FFFFFFF;
    out.entries[e] = ((remap[static_cast<size_t>(j)][static_cast<size_t>(sj)] << 28) | sidx) + 1;
  }
  return out;
}

void Lowering::mapped(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info) {
  const ComposedMaps& maps = composedMaps(n, info);
  for (size_t o = 0; o < n.outputs.size() && o < maps.outputs.size(); ++o) {
    if (n.outputs[o].empty()) continue;
    const Sources& composed = maps.outputs[o];
    std::vector<uint32_t> words(composed.entries.size());
    for (size_t e = 0; e < words.size(); ++e) words[e] = static_cast<uint32_t>(composed.entries[e]);
    const uint64_t map_at = constant(std::move(words));
    const uint32_t b = newParams(4 + composed.sources.size());
    param(b, 0) = off(n, n.outputs[o]);
    param(b, 1) = static_cast<uint32_t>(map_at);
    param(b, 2) = maps.fill;
    param(b, 3) = static_cast<uint32_t>(composed.sources.size());
    for (size_t j = 0; j < composed.sources.size(); ++j) param(b, 4 + j) = off(n, composed.sources[j]);
    if (map_at > 0xFFFFFFFFull) refuse(g_, n, "the tensor arena exceeds 2^32 words");
    dispatch(Kernel::kMap, b, composed.entries.size(), n);
  }
}

void Lowering::gemm(const Node& n, bool is_gemm) {
  const Slot& a = slot(n, n.inputs.at(0));
  const Slot& bm = slot(n, n.inputs.at(1));
  if (!isFloatType(a.dtype) || !isFloatType(bm.dtype)) refuse(g_, n, "integer matrix products are not supported");
  Product p;
  p.a = n.inputs[0];
  p.b = n.inputs[1];
  if (is_gemm) {
    const bool ta = n.attrInt("transA", 0) != 0, tb = n.attrInt("transB", 0) != 0;
    if (a.shape.size() != 2 || bm.shape.size() != 2) refuse(g_, n, "A and B must be matrices");
    p.M = ta ? a.shape[1] : a.shape[0];
    p.K = ta ? a.shape[0] : a.shape[1];
    p.N = tb ? bm.shape[0] : bm.shape[1];
    p.sam = ta ? 1 : a.shape[1];
    p.sak = ta ? a.shape[1] : 1;
    p.sbk = tb ? 1 : bm.shape[1];
    p.sbn = tb ? bm.shape[1] : 1;
  } else {
    Shape as = a.shape, bs = bm.shape;
    if (as.empty() || bs.empty()) refuse(g_, n, "scalar operands");
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    p.M = as[as.size() - 2];
    p.K = as.back();
    p.N = bs.back();
    p.sam = p.K;
    p.sak = 1;
    p.sbk = p.N;
    p.sbn = 1;
    const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
    const size_t rank = std::max(ab.size(), bb.size());
    p.batch.assign(rank, 1);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t x = d + ab.size() >= rank ? ab[d + ab.size() - rank] : 1;
      const int64_t y = d + bb.size() >= rank ? bb[d + bb.size() - rank] : 1;
      p.batch[d] = std::max(x, y);
    }
    const std::vector<int64_t> ast = broadcastStrides(ab, p.batch), bst = broadcastStrides(bb, p.batch);
    p.a_batch_st.resize(rank);
    p.b_batch_st.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
      p.a_batch_st[d] = ast[d] * p.M * p.K;
      p.b_batch_st[d] = bst[d] * p.K * p.N;
    }
  }
  product(n, p, is_gemm);
}

void Lowering::product(const Node& n, const Product& pr, bool is_gemm) {
  const Slot& a = slot(n, pr.a);
  const Slot& bm = slot(n, pr.b);
  const Slot& out = slot(n, n.outputs[0]);
  const int64_t M = pr.M, N = pr.N, K = pr.K;
  Shape batch = pr.batch;
  std::vector<std::vector<int64_t>> batch_st{pr.a_batch_st, pr.b_batch_st};
  collapseAxes(batch, batch_st);
  const std::vector<int64_t>& a_batch_st = batch_st[0];
  const std::vector<int64_t>& b_batch_st = batch_st[1];
  if (batch.size() > 4) refuse(g_, n, "more than 4 batch axes after merging");
  for (int64_t v : {pr.sam, pr.sak, pr.sbk, pr.sbn})
    if (v < 0 || v > 0xFFFFFFFFll) refuse(g_, n, "operand strides beyond 32 bits");
  const auto sam = static_cast<uint32_t>(pr.sam), sak = static_cast<uint32_t>(pr.sak), sbk = static_cast<uint32_t>(pr.sbk),
             sbn = static_cast<uint32_t>(pr.sbn);
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  // Narrow products (a side under 16, or many small batched matrices) waste most of a 64 x 64 tile: one
  // invocation per output element instead, or per matrix for 3 x 3 ones. (On the H200 the MLP layers of 32
  // outputs ran fastest tiled: a row-walking kernel with B staged in shared memory took 60 us per 60000 x 32
  // x 32 layer against the tiles' 26, and a staged-B one-output-per-invocation variant was slower still.)
  const bool per_matrix = batches > 1 && M <= 4 && N <= 4 && K <= 4;
  const bool small = M < 16 || N < 16 || (batches > 1 && M * N < 1024) || batches > 65535;
  const uint32_t b = newParams(36);
  param(b, 35) = per_matrix ? 1 : 0;
  param(b, 0) = static_cast<uint32_t>(M);
  param(b, 1) = static_cast<uint32_t>(N);
  param(b, 2) = static_cast<uint32_t>(K);
  param(b, 3) = off(n, pr.a);
  param(b, 4) = sam;
  param(b, 5) = sak;
  param(b, 6) = off(n, pr.b);
  param(b, 7) = sbk;
  param(b, 8) = sbn;
  param(b, 9) = off(n, n.outputs[0]);
  param(b, 10) = static_cast<uint32_t>(batch.size());
  for (size_t d = 0; d < batch.size(); ++d) {
    param(b, 11 + d) = static_cast<uint32_t>(batch[d]);
    param(b, 15 + d) = static_cast<uint32_t>(a_batch_st[d]);
    param(b, 19 + d) = static_cast<uint32_t>(b_batch_st[d]);
  }
  float alpha = 1, beta = 0;
  if (is_gemm) {
    alpha = n.attrFloat("alpha", 1.0f);
    beta = n.attrFloat("beta", 1.0f);
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const Slot& c = slot(n, n.inputs[2]);
      if (!isFloatType(c.dtype)) refuse(g_, n, "C must be a float tensor");
      const std::vector<int64_t> st = broadcastStrides(c.shape, {M, N});
      param(b, 23) = off(n, n.inputs[2]);
      param(b, 24) = 1;
      param(b, 25) = static_cast<uint32_t>(st[0]);
      param(b, 26) = static_cast<uint32_t>(st[1]);
    }
  }
  param(b, 27) = floatBits(alpha);
  param(b, 28) = floatBits(beta);
  param(b, 29) = acts_.count(n.outputs[0]) ? acts_.at(n.outputs[0]) : 0;
  param(b, 30) = static_cast<uint32_t>(out.dtype);
  param(b, 31) = static_cast<uint32_t>(a.dtype);
  param(b, 32) = static_cast<uint32_t>(bm.dtype);
  if (M == 0 || N == 0 || batches == 0) return;
  // K == 0: the sum over nothing is 0; the kernels write alpha * 0 + beta * C.
  if (per_matrix) {
    dispatch(Kernel::kMatmulSmall, b, static_cast<uint64_t>(batches), n);
    return;
  }
  if (small) {
    dispatch(Kernel::kMatmulSmall, b, static_cast<uint64_t>(batches * M * N), n);
    return;
  }
  plan_.dispatches.push_back({Kernel::kGemm, b, 0,
                              {static_cast<uint32_t>((N + 63) / 64), static_cast<uint32_t>((M + 63) / 64), static_cast<uint32_t>(batches)}});
  if ((M + 63) / 64 > 65535 || (N + 63) / 64 > 65535) refuse(g_, n, "matrices beyond 4 million rows or columns");
}

void Lowering::conv(const Node& n) {
  const Slot& x = slot(n, n.inputs.at(0));
  const Slot& w = slot(n, n.inputs.at(1));
  const Slot& out = slot(n, n.outputs[0]);
  if (!isFloatType(x.dtype)) refuse(g_, n, "integer convolution");
  const size_t spatial = x.shape.size() - 2;
  if (x.shape.size() < 3 || spatial > 2) refuse(g_, n, "only 1-D and 2-D convolutions");
  auto at = [&](const Shape& s, size_t d) { return spatial == 1 ? (d == 0 ? int64_t{1} : s[2]) : s[2 + d]; };
  const int64_t H = at(x.shape, 0), W = at(x.shape, 1), OH = at(out.shape, 0), OW = at(out.shape, 1);
  const int64_t KH = at(w.shape, 0), KW = at(w.shape, 1);
  std::vector<int64_t> strides = n.attrInts("strides", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> dil = n.attrInts("dilations", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
  const std::string auto_pad = n.attrString("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const int64_t in[2] = {H, W}, o[2] = {OH, OW}, k[2] = {KH, KW};
    for (size_t d = 0; d < spatial; ++d) {
      const size_t dd = spatial == 1 ? 1 : d;
      const int64_t total = std::max<int64_t>(0, (o[dd] - 1) * strides[d] + (k[dd] - 1) * dil[d] + 1 - in[dd]);
      pads[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    }
  } else if (auto_pad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  }
  const uint32_t b = newParams(22);
  param(b, 0) = static_cast<uint32_t>(x.shape[0]);
  param(b, 1) = static_cast<uint32_t>(x.shape[1]);
  param(b, 2) = static_cast<uint32_t>(H);
  param(b, 3) = static_cast<uint32_t>(W);
  param(b, 4) = static_cast<uint32_t>(out.shape[1]);
  param(b, 5) = static_cast<uint32_t>(OH);
  param(b, 6) = static_cast<uint32_t>(OW);
  param(b, 7) = static_cast<uint32_t>(KH);
  param(b, 8) = static_cast<uint32_t>(KW);
  param(b, 9) = static_cast<uint32_t>(spatial == 1 ? 1 : strides[0]);
  param(b, 10) = static_cast<uint32_t>(strides[spatial - 1]);
  param(b, 11) = static_cast<uint32_t>(spatial == 1 ? 0 : pads[0]);
  param(b, 12) = static_cast<uint32_t>(pads[spatial - 1]);
  param(b, 13) = static_cast<uint32_t>(spatial == 1 ? 1 : dil[0]);
  param(b, 14) = static_cast<uint32_t>(dil[spatial - 1]);
  param(b, 15) = static_cast<uint32_t>(n.attrInt("group", 1));
  param(b, 16) = off(n, n.inputs[0]);
  param(b, 17) = off(n, n.inputs[1]);
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    param(b, 18) = off(n, n.inputs[2]);
    param(b, 19) = 1;
  }
  param(b, 20) = off(n, n.outputs[0]);
  param(b, 21) = static_cast<uint32_t>(out.dtype);
  dispatch(Kernel::kConv, b, static_cast<uint64_t>(elementCount(out.shape)), n);
}

void Lowering::reduce(const Node& n, uint32_t kind) {
  const Slot& x = slot(n, n.inputs.at(0));
  const auto rank = static_cast<int64_t>(x.shape.size());
  const int64_t input_opset = n.op_type == "ReduceSum" ? 13 : 18;
  std::vector<int64_t> axes;
  bool given = false;
  if (g_.opset >= input_opset) {
    if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
      const Tensor& t = staticValue(n, 1, "axes");
      for (int64_t k = 0; k < t.numel(); ++k) axes.push_back(t.asInt(static_cast<size_t>(k)));
      given = !axes.empty();
    }
  } else if (n.attr("axes")) {
    axes = n.attrInts("axes");
    given = !axes.empty();
  }
  std::vector<bool> reduced(x.shape.size(), !given);
  for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  if (!given && g_.opset >= input_opset && n.attrInt("noop_with_empty_axes", 0) != 0)
    std::fill(reduced.begin(), reduced.end(), false);
  Shape kept, red;
  std::vector<int64_t> kept_st, red_st;
  const std::vector<int64_t> st = rowStrides(x.shape);
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (reduced[d]) {
      red.push_back(x.shape[d]);
      red_st.push_back(st[d]);
    } else {
      kept.push_back(x.shape[d]);
      kept_st.push_back(st[d]);
    }
  }
  stridedReduce(n, kind, n.inputs[0], std::move(kept), std::move(kept_st), std::move(red), std::move(red_st));
}

void Lowering::stridedReduce(const Node& n, uint32_t kind, const std::string& input, Shape kept, std::vector<int64_t> kept_st,
                             Shape red, std::vector<int64_t> red_st) {
  const Slot& x = slot(n, input);
  const Slot& out = slot(n, n.outputs[0]);
  int64_t total = 1;
  for (int64_t d : red) total *= d;
  std::vector<std::vector<int64_t>> ks{std::move(kept_st)}, rs{std::move(red_st)};
  collapseAxes(kept, ks);
  collapseAxes(red, rs);
  if (kept.size() > NN_MAX_RANK || red.size() > NN_MAX_RANK) refuse(g_, n, "more than 6 axes after merging");
  // Few outputs over a long reduction (a mesh's bounds: 3 outputs of 1,225 values): one workgroup per output,
  // its 256 invocations striding the reduced elements and combining through shared memory, instead of one
  // invocation walking them all. Float kinds whose partial results combine with the same operation.
  const uint64_t outputs = static_cast<uint64_t>(elementCount(out.shape));
  const bool cooperative = isFloatType(x.dtype) && kind != NN_RED_LOG_SUM_EXP && total >= 256 && outputs * 256 <= (uint64_t{1} << 31);
  const uint32_t b = newParams(32);
  param(b, 31) = cooperative ? 1 : 0;
  param(b, 0) = kind;
  param(b, 1) = off(n, n.outputs[0]);
  param(b, 2) = off(n, input);
  param(b, 3) = static_cast<uint32_t>(x.dtype);
  param(b, 4) = static_cast<uint32_t>(kept.size());
  for (size_t d = 0; d < kept.size(); ++d) {
    param(b, 5 + d) = static_cast<uint32_t>(kept[d]);
    param(b, 11 + d) = static_cast<uint32_t>(ks[0][d]);
  }
  param(b, 17) = static_cast<uint32_t>(red.size());
  for (size_t d = 0; d < red.size(); ++d) {
    param(b, 18 + d) = static_cast<uint32_t>(red[d]);
    param(b, 24 + d) = static_cast<uint32_t>(rs[0][d]);
  }
  param(b, 30) = static_cast<uint32_t>(total);
  dispatch(Kernel::kReduce, b, cooperative ? outputs * 256 : outputs, n);
}

void Lowering::softmax(const Node& n) {
  const Slot& x = slot(n, n.inputs.at(0));
  const auto rank = static_cast<int64_t>(x.shape.size());
  const bool per_axis = g_.opset >= 13;
  int64_t axis = n.attrInt("axis", per_axis ? -1 : 1);
  if (axis < 0) axis += rank;
  auto product = [&](int64_t from, int64_t to) {
    int64_t p = 1;
    for (int64_t d = from; d < to; ++d) p *= x.shape[static_cast<size_t>(d)];
    return p;
  };
  const int64_t outer = product(0, axis);
  const int64_t len = per_axis ? x.shape[static_cast<size_t>(axis)] : product(axis, rank);
  const int64_t inner = per_axis ? product(axis + 1, rank) : 1;
  const uint32_t b = newParams(7);
  param(b, 0) = 0;
  param(b, 1) = off(n, n.outputs[0]);
  param(b, 2) = off(n, n.inputs[0]);
  param(b, 3) = static_cast<uint32_t>(x.dtype);
  param(b, 4) = static_cast<uint32_t>(outer);
  param(b, 5) = static_cast<uint32_t>(len);
  param(b, 6) = static_cast<uint32_t>(inner);
  dispatch(Kernel::kSoftmax, b, static_cast<uint64_t>(outer * inner), n);
}

void Lowering::gather(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info) {
  if (plan_.statics.count(n.inputs.at(1))) {
    mapped(n, info);
    return;
  }
  const Slot& x = slot(n, n.inputs[0]);
  const Slot& idx = slot(n, n.inputs[1]);
  const auto rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = n.attrInt("axis", 0);
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[static_cast<size_t>(d)];
  const uint32_t b = newParams(8);
  param(b, 0) = off(n, n.outputs[0]);
  param(b, 1) = off(n, n.inputs[0]);
  param(b, 2) = off(n, n.inputs[1]);
  param(b, 3) = static_cast<uint32_t>(idx.dtype);
  param(b, 4) = static_cast<uint32_t>(outer);
  param(b, 5) = static_cast<uint32_t>(x.shape[static_cast<size_t>(axis)]);
  param(b, 6) = static_cast<uint32_t>(elementCount(idx.shape));
  param(b, 7) = static_cast<uint32_t>(inner);
  if (x.shape[static_cast<size_t>(axis)] == 0) refuse(g_, n, "gathering from an empty axis");
  dispatch(Kernel::kGather, b, static_cast<uint64_t>(elementCount(slot(n, n.outputs[0]).shape)), n);
}

void Lowering::gridSample(const Node& n) {
  const Slot& x = slot(n, n.inputs.at(0));
  const Slot& grid = slot(n, n.inputs.at(1));
  const Slot& out = slot(n, n.outputs[0]);
  const std::string mode = n.attrString("mode", g_.opset >= 20 ? "linear" : "bilinear");
  const std::string padding = n.attrString("padding_mode", "zeros");
  const uint32_t b = newParams(15);
  param(b, 0) = NN_SAMPLE_GRID;
  param(b, 1) = off(n, n.outputs[0]);
  param(b, 2) = off(n, n.inputs[0]);
  param(b, 3) = static_cast<uint32_t>(x.dtype);
  param(b, 4) = off(n, n.inputs[1]);
  param(b, 5) = static_cast<uint32_t>(grid.dtype);
  for (size_t d = 0; d < 4; ++d) param(b, 6 + d) = static_cast<uint32_t>(x.shape[d]);
  param(b, 10) = static_cast<uint32_t>(grid.shape[1]);
  param(b, 11) = static_cast<uint32_t>(grid.shape[2]);
  param(b, 12) = mode == "nearest" ? 0 : (mode == "bicubic" || mode == "cubic") ? 2 : 1;
  param(b, 13) = padding == "border" ? NN_PAD_BORDER : padding == "reflection" ? NN_PAD_REFLECTION : NN_PAD_ZEROS;
  param(b, 14) = n.attrInt("align_corners", 0) != 0 ? 1 : 0;
  dispatch(Kernel::kSample, b, static_cast<uint64_t>(elementCount(out.shape)), n);
}

void Lowering::resize(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info) {
  if (n.attrString("mode", "nearest") == "nearest") {
    mapped(n, info);
    return;
  }
  const Slot& x = slot(n, n.inputs.at(0));
  const Slot& out = slot(n, n.outputs[0]);
  if (x.shape.size() > NN_MAX_RANK) refuse(g_, n, "more than 6 axes");
  // The taps from the CPU kernel's own function; X only lends its type and shape.
  const Tensor x_like(x.dtype, x.shape);
  std::vector<const Tensor*> in{&x_like};
  for (size_t k = 1; k < n.inputs.size(); ++k)
    in.push_back(n.inputs[k].empty() ? nullptr : &staticValue(n, k, "roi, scales and sizes"));
  const ResizeTapTables tables = resizeTapTables(n, in, g_.opset);
  const uint32_t b = newParams(24);
  param(b, 0) = NN_SAMPLE_RESIZE;
  param(b, 1) = off(n, n.outputs[0]);
  param(b, 2) = off(n, n.inputs[0]);
  param(b, 3) = static_cast<uint32_t>(x.dtype);
  param(b, 4) = static_cast<uint32_t>(x.shape.size());
  const std::vector<int64_t> st = rowStrides(x.shape);
  for (size_t d = 0; d < x.shape.size(); ++d) {
    param(b, 5 + d) = static_cast<uint32_t>(out.shape[d]);
    param(b, 11 + d) = static_cast<uint32_t>(st[d]);
    const ResizeTapTables::Axis& axis = tables.axes.at(d);
    std::vector<uint32_t> words(axis.taps.size() * 9, 0);
    for (size_t o = 0; o < axis.taps.size(); ++o) {
      uint32_t* w = &words[o * 9];
      if (axis.extrapolate[o]) {
        w[0] = 0xFFFFFFFFu;
        continue;
      }
      if (axis.taps[o].size() > 4) refuse(g_, n, "more than 4 taps");
      w[0] = static_cast<uint32_t>(axis.taps[o].size());
      for (size_t k = 0; k < axis.taps[o].size(); ++k) {
        w[1 + k] = static_cast<uint32_t>(axis.taps[o][k].first);
        w[5 + k] = floatBits(static_cast<float>(axis.taps[o][k].second));
      }
    }
    param(b, 17 + d) = static_cast<uint32_t>(constant(std::move(words)));
  }
  param(b, 23) = floatBits(static_cast<float>(tables.extrapolation));
  dispatch(Kernel::kSample, b, static_cast<uint64_t>(elementCount(out.shape)), n);
}

void Lowering::batchNorm(const Node& n) {
  const Slot& x = slot(n, n.inputs.at(0));
  if (n.outputs.size() > 1) refuse(g_, n, "training outputs");
  const Tensor& scale = staticValue(n, 1, "scale");
  const Tensor& bias = staticValue(n, 2, "B");
  const Tensor& mean = staticValue(n, 3, "mean");
  const Tensor& var = staticValue(n, 4, "var");
  const double eps = n.attrFloat("epsilon", 1e-5f);
  const auto c = static_cast<size_t>(x.shape.at(1));
  Shape pshape(x.shape.size() - 1, 1);
  pshape[0] = static_cast<int64_t>(c);
  std::vector<uint32_t> a(c), bb(c);
  for (size_t k = 0; k < c; ++k) {
    const double s = scale.asDouble(k) / std::sqrt(var.asDouble(k) + eps);
    a[k] = floatBits(static_cast<float>(s));
    bb[k] = floatBits(static_cast<float>(bias.asDouble(k) - mean.asDouble(k) * s));
  }
  const std::string an = n.outputs[0] + "#scale", bn = n.outputs[0] + "#shift";
  plan_.slots[an] = {constant(std::move(a)), DType::kFloat32, pshape, true};
  plan_.slots[bn] = {constant(std::move(bb)), DType::kFloat32, pshape, true};
  const std::string ins[3] = {n.inputs[0], an, bn};
  eltwise(n, NN_MUL_ADD, ins);
}

void Lowering::clip(const Node& n) {
  std::string ins[3] = {n.inputs.at(0), "", ""};
  if (g_.opset < 11) {
    for (int k = 0; k < 2; ++k) {
      const float v = n.attrFloat(k == 0 ? "min" : "max", k == 0 ? -std::numeric_limits<float>::max() : std::numeric_limits<float>::max());
      const std::string name = n.outputs[0] + (k == 0 ? "#min" : "#max");
      plan_.slots[name] = {constant({floatBits(v)}), DType::kFloat32, {}, true};
      ins[1 + k] = name;
    }
  } else {
    for (size_t k = 1; k <= 2 && k < n.inputs.size(); ++k) ins[k] = n.inputs[k];
  }
  eltwise(n, NN_CLIP, ins);
}

// External inputs of a fused chain (shaders/nn_fused.comp reads each once into a named register).
constexpr size_t kFusedInputs = 8;

// Max and Min: one input is a copy, two an elementwise dispatch, three to eight float inputs one fused program
// folding them in order (integer values would lose bits in the fused kernel's float registers).
void Lowering::extremum(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info) {
  const uint32_t code = n.op_type == "Max" ? NN_MAX : NN_MIN;
  if (n.inputs.size() == 1) {
    const std::string ins[1] = {n.inputs[0]};
    eltwise(n, NN_IDENTITY, ins);
    return;
  }
  if (n.inputs.size() == 2) {
    const std::string ins[2] = {n.inputs[0], n.inputs[1]};
    eltwise(n, code, ins);
    return;
  }
  const DType type = info.at(n.outputs[0]).first;
  if (!isFloatType(type)) refuse(g_, n, std::to_string(n.inputs.size()) + " integer inputs (integer " + n.op_type + " takes up to 2)");
  std::vector<std::string> inputs;
  auto reg = [&](const std::string& v) {
    auto at = std::find(inputs.begin(), inputs.end(), v);
    if (at != inputs.end()) return static_cast<uint32_t>(at - inputs.begin());
    inputs.push_back(v);
    return static_cast<uint32_t>(inputs.size() - 1);
  };
  std::vector<std::array<uint32_t, 6>> program;
  for (size_t k = 1; k < n.inputs.size(); ++k)
    program.push_back({code, k == 1 ? reg(n.inputs[0]) : static_cast<uint32_t>(kFusedInputs), reg(n.inputs[k]), 255, static_cast<uint32_t>(type), 0});
  fusedProgram(n, inputs, program);
}

// LayerNormalization (rows: every axis from `axis` on) and InstanceNormalization (rows: the (n, c) planes):
// one invocation per row of nn_softmax.comp's normalising mode.
void Lowering::normalise(const Node& n) {
  const bool layer = n.op_type == "LayerNormalization";
  const Slot& x = slot(n, n.inputs.at(0));
  const Slot& scale = slot(n, n.inputs.at(1));
  const auto rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = layer ? n.attrInt("axis", -1) : 2;
  if (axis < 0) axis += rank;
  int64_t rows = 1, len = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? rows : len) *= x.shape[static_cast<size_t>(d)];
  // Which value of scale and B each element takes: per element of the row, one for all, or per channel.
  auto mode = [&](const Slot& s) -> uint32_t { return !layer ? 2 : elementCount(s.shape) == 1 && len != 1 ? 1 : 0; };
  const uint32_t b = newParams(18);
  param(b, 0) = 2;
  param(b, 1) = off(n, n.outputs[0]);
  param(b, 2) = off(n, n.inputs[0]);
  param(b, 3) = static_cast<uint32_t>(x.dtype);
  param(b, 4) = static_cast<uint32_t>(rows);
  param(b, 5) = static_cast<uint32_t>(len);
  param(b, 6) = 1;
  param(b, 7) = floatBits(n.attrFloat("epsilon", 1e-5f));
  param(b, 8) = off(n, n.inputs[1]);
  param(b, 9) = mode(scale);
  param(b, 10) = static_cast<uint32_t>(rank > 1 ? x.shape[1] : 1);
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    param(b, 11) = off(n, n.inputs[2]);
    param(b, 12) = 1;
    param(b, 17) = mode(slot(n, n.inputs[2]));
  }
  for (size_t k = 1; k <= 2; ++k) {
    if (k >= n.outputs.size() || n.outputs[k].empty()) continue;
    param(b, 12 + k) = off(n, n.outputs[k]);
    param(b, 15) |= 1u << (k - 1);
  }
  param(b, 16) = layer ? 1 : 0;
  dispatch(Kernel::kSoftmax, b, static_cast<uint64_t>(rows), n);
}

// Einsum through the strides of einsumSpec (the CPU kernel's own reading of the equation): one operand is a
// strided sum (transposes, diagonals, traces, sums); two float operands a strided batched product when the
// output's axes are the labels both have (batch), then the labels of one operand only (M), then the other's
// (N), each group contiguous in its operand, and the summed labels are laid out alike in both (K).
void Lowering::einsum(const Node& n) {
  std::vector<Shape> shapes;
  for (const std::string& in : n.inputs) shapes.push_back(slot(n, in).shape);
  const EinsumSpec spec = einsumSpec(n, shapes, g_.opset);
  std::vector<bool> in_output(spec.labels.size(), false);
  for (size_t l : spec.output) in_output[l] = true;
  if (n.inputs.size() == 1) {
    Shape kept, red;
    std::vector<int64_t> ks, rs;
    for (size_t l : spec.output) kept.push_back(spec.labels[l].size), ks.push_back(spec.labels[l].strides[0]);
    for (size_t l = 0; l < spec.labels.size(); ++l)
      if (!in_output[l]) red.push_back(spec.labels[l].size), rs.push_back(spec.labels[l].strides[0]);
    stridedReduce(n, NN_RED_SUM, n.inputs[0], std::move(kept), std::move(ks), std::move(red), std::move(rs));
    return;
  }
  if (n.inputs.size() != 2) refuse(g_, n, "Einsum of more than two operands");
  for (const std::string& in : n.inputs)
    if (!isFloatType(slot(n, in).dtype)) refuse(g_, n, "an integer Einsum of two operands (the GPU's products are float)");
  const std::string equation = "equation '" + n.attrString("equation", "") + "': ";
  // Labels of one element play no part in the layout. The output's axes up to the last label both operands
  // have are batch axes (one an operand lacks has stride 0 there); the rest must be one operand's own labels
  // (the product's rows), then the other's (its columns).
  std::vector<size_t> axes;  // output labels of more than one element
  std::string order;         // per such axis: 'b' both operands have it, '0' or '1' the operand that alone has it
  for (size_t l : spec.output) {
    const EinsumSpec::Label& label = spec.labels[l];
    if (label.size == 1) continue;
    axes.push_back(l);
    order += label.present[0] && label.present[1] ? 'b' : label.present[0] ? '0' : '1';
  }
  std::vector<size_t> summed;
  for (size_t l = 0; l < spec.labels.size(); ++l) {
    if (in_output[l] || spec.labels[l].size == 1) continue;
    if (!spec.labels[l].present[0] || !spec.labels[l].present[1])
      refuse(g_, n, equation + "a label summed within one operand (GPU products sum over labels both operands have)");
    summed.push_back(l);
  }
  const size_t lead = order.find_last_of('b') == std::string::npos ? 0 : order.find_last_of('b') + 1;
  const std::string rest = order.substr(lead);
  const size_t ia = rest.empty() ? 0 : static_cast<size_t>(rest[0] - '0'), ib = 1 - ia;
  const size_t switch_at = rest.find_first_not_of(static_cast<char>('0' + ia));
  if (switch_at != std::string::npos && rest.find(static_cast<char>('0' + ia), switch_at) != std::string::npos)
    refuse(g_, n, equation + "the output's axes are not batch axes, then one operand's own labels, then the other's");
  std::vector<size_t> batch(axes.begin(), axes.begin() + static_cast<std::ptrdiff_t>(lead)), own[2];
  for (size_t k = lead; k < axes.size(); ++k) own[order[k] == '1' ? 1 : 0].push_back(axes[k]);
  // A group of labels as one axis of an operand: its size and stride, when the labels are contiguous there.
  auto merge = [&](const std::vector<size_t>& labels, size_t op, int64_t& size, int64_t& stride) {
    size = 1, stride = 0;
    for (size_t l : labels) size *= spec.labels[l].size;
    if (labels.empty() || size == 0) return true;
    stride = spec.labels[labels.back()].strides[op];
    for (size_t k = 0; k + 1 < labels.size(); ++k)
      if (spec.labels[labels[k]].strides[op] != spec.labels[labels[k + 1]].strides[op] * spec.labels[labels[k + 1]].size) return false;
    return true;
  };
  Product p;
  p.a = n.inputs[ia];
  p.b = n.inputs[ib];
  if (!merge(own[ia], ia, p.M, p.sam) || !merge(own[ib], ib, p.N, p.sbn))
    refuse(g_, n, equation + "an operand's output labels are not contiguous in it");
  bool laid_out = false;
  for (size_t by : {ia, ib}) {
    std::stable_sort(summed.begin(), summed.end(), [&](size_t x, size_t y) { return spec.labels[x].strides[by] > spec.labels[y].strides[by]; });
    int64_t k_b = 0;
    if (merge(summed, ia, p.K, p.sak) && merge(summed, ib, k_b, p.sbk)) {
      laid_out = true;
      break;
    }
  }
  if (!laid_out) refuse(g_, n, equation + "the summed labels are not laid out alike in both operands");
  for (size_t l : batch) {
    p.batch.push_back(spec.labels[l].size);
    p.a_batch_st.push_back(spec.labels[l].strides[ia]);
    p.b_batch_st.push_back(spec.labels[l].strides[ib]);
  }
  product(n, p, false);
}


// Code and operand count of an operator a fused chain can hold (float arithmetic), or {0, 0}.
std::pair<uint32_t, int> fusableOp(const Node& n, int64_t opset) {
  if (n.op_type == "Cast") return {0, 0};  // changes the storage class
  if (const UnaryOp* u = findIn(kUnary, n.op_type); u && n.op_type != "Not") return {u->code, 1};
  if (const UnaryOp* b = findIn(kBinary, n.op_type); b && n.op_type != "And" && n.op_type != "Or" && n.op_type != "Equal" &&
                                                     n.op_type != "Less" && n.op_type != "Greater")
    return {b->code, 2};
  if (n.op_type == "Clip") return opset >= 11 ? std::pair<uint32_t, int>{NN_CLIP, 3} : std::pair<uint32_t, int>{0, 0};  // bounds as attributes before 11
  if ((n.op_type == "Max" || n.op_type == "Min") && n.inputs.size() == 2) return {n.op_type == "Max" ? NN_MAX : NN_MIN, 2};
  return {0, 0};
}

void Lowering::fusedChain(const Node& tip, const std::map<std::string, std::pair<DType, Shape>>& info) {
  const std::vector<const Node*>& chain = chains_.at(&tip);
  std::vector<std::string> inputs;               // external values, register = index
  std::map<std::string, uint32_t> internal;      // the previous operation's result -> operand kFusedInputs
  std::vector<std::array<uint32_t, 6>> program;  // op, a, b, c, type, alpha bits
  auto reg = [&](const std::string& v) -> uint32_t {
    if (v.empty()) return 255;
    if (auto it = internal.find(broadcastSource(v)); it != internal.end()) return it->second;
    auto at = std::find(inputs.begin(), inputs.end(), v);
    if (at != inputs.end()) return static_cast<uint32_t>(at - inputs.begin());
    inputs.push_back(v);
    return static_cast<uint32_t>(inputs.size() - 1);
  };
  for (const Node* m : chain) {
    const uint32_t code = fusableOp(*m, g_.opset).first;
    std::array<uint32_t, 6> ins{code, 255, 255, 255, static_cast<uint32_t>(info.at(m->outputs[0]).first), 0};
    for (size_t k = 0; k < m->inputs.size() && k < 3; ++k) ins[1 + k] = reg(m->inputs[k]);
    if (m->op_type == "LeakyRelu") ins[5] = floatBits(m->attrFloat("alpha", 0.01f));
    program.push_back(ins);
    internal.clear();  // a chain: only the next operation reads this one's result
    internal[m->outputs[0]] = static_cast<uint32_t>(kFusedInputs);
  }
  fusedProgram(tip, inputs, program);
}

void Lowering::fusedProgram(const Node& tip, const std::vector<std::string>& inputs, const std::vector<std::array<uint32_t, 6>>& program) {
  const Slot& out = slot(tip, tip.outputs[0]);
  if (inputs.size() > kFusedInputs || program.size() > 16) refuse(g_, tip, "a fused chain beyond 8 inputs or 16 operations");
  Shape dims = out.shape;
  std::vector<std::vector<int64_t>> strides{rowStrides(dims)};
  std::vector<Operand> operands;
  for (const std::string& v : inputs) {
    operands.push_back(operand(tip, v, dims));
    strides.push_back(operands.back().strides);
  }
  collapseAxes(dims, strides);
  if (dims.size() > NN_MAX_RANK) refuse(g_, tip, "more than 6 axes after merging");
  const uint32_t b = newParams(75 + 6 * 16);
  param(b, 0) = static_cast<uint32_t>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) param(b, 1 + d) = static_cast<uint32_t>(dims[d]);
  param(b, 7) = off(tip, tip.outputs[0]);
  param(b, 8) = static_cast<uint32_t>(out.dtype);
  param(b, 9) = static_cast<uint32_t>(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    param(b, 10 + 8 * k) = operands[k].offset;
    param(b, 11 + 8 * k) = static_cast<uint32_t>(operands[k].dtype);
    for (size_t d = 0; d < dims.size(); ++d) param(b, 12 + 8 * k + d) = static_cast<uint32_t>(strides[k + 1][d]);
  }
  param(b, 74) = static_cast<uint32_t>(program.size());
  for (size_t i = 0; i < program.size(); ++i)
    for (size_t w = 0; w < 6; ++w) param(b, 75 + 6 * i + w) = program[i][w];
  dispatch(Kernel::kFused, b, static_cast<uint64_t>(elementCount(out.shape)), tip);
}

void Lowering::lower(const Node& n, const std::map<std::string, std::pair<DType, Shape>>& info) {
  for (const auto* list : {&n.inputs, &n.outputs})
    for (const std::string& name : *list)
      if (!name.empty() && !gpuType(info.at(name).first))
        refuse(g_, n, "'" + name + "' is " + dtypeName(info.at(name).first) + ", not a type the GPU holds");
  const std::string& op = n.op_type;
  if (chains_.count(&n)) {
    fusedChain(n, info);
  } else if (const UnaryOp* u = findIn(kUnary, op)) {
    float alpha = 0;
    if (op == "LeakyRelu") alpha = n.attrFloat("alpha", 0.01f);
    const std::string ins[1] = {n.inputs.at(0)};
    eltwise(n, u->code, ins, alpha);
  } else if (const UnaryOp* b = findIn(kBinary, op)) {
    const std::string ins[2] = {n.inputs.at(0), n.inputs.at(1)};
    if (op == "Pow" && !isFloatType(info.at(ins[0]).first) && isFloatType(info.at(ins[1]).first))  // (an input may be a view)
      refuse(g_, n, "an integer base with a float exponent");
    eltwise(n, b->code, ins);
  } else if (op == "Where") {
    const std::string ins[3] = {n.inputs.at(0), n.inputs.at(1), n.inputs.at(2)};
    eltwise(n, NN_WHERE, ins);
  } else if (op == "Clip") {
    clip(n);
  } else if (mapOps().count(op)) {
    mapped(n, info);
  } else if (op == "Gather") {
    gather(n, info);
  } else if (auto r = reduceOps().find(op); r != reduceOps().end()) {
    reduce(n, r->second);
  } else if (op == "Softmax") {
    softmax(n);
  } else if (op == "MatMul" || op == "Gemm") {
    gemm(n, op == "Gemm");
  } else if (op == "Conv") {
    conv(n);
  } else if (op == "GridSample") {
    gridSample(n);
  } else if (op == "Resize") {
    resize(n, info);
  } else if (op == "BatchNormalization") {
    batchNorm(n);
  } else if (op == "Max" || op == "Min") {
    extremum(n, info);
  } else if (op == "LayerNormalization" || op == "InstanceNormalization") {
    normalise(n);
  } else if (op == "Einsum") {
    einsum(n);
  } else {
    refuse(g_, n, "no Vulkan kernel for " + op);
  }
}

}  // namespace

namespace {

// Whether a map (1 + (source << 28 | index) per element, see computeMaps) reads one source as a strided view
// over `shape`: index = base + sum_d coord_d stride_d with every stride >= 0.
bool affineView(const std::vector<int64_t>& map, const Shape& shape, int64_t& base, std::vector<int64_t>& strides) {
  const size_t count = static_cast<size_t>(elementCount(shape));
  if (count == 0 || map.size() != count) return false;
  constexpr int64_t kIndexMask = (int64_t{1} << 28) - 1;
  auto index = [&](size_t e) -> int64_t {
    const int64_t m = map[e];
    return m <= 0 || ((m - 1) >> 28) != 0 ? -1 : (m - 1) & kIndexMask;  // source 0 only
  };
  base = index(0);
  if (base < 0) return false;
  const std::vector<int64_t> rows = rowStrides(shape);
  strides.assign(shape.size(), 0);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] <= 1) continue;
    const int64_t at = index(static_cast<size_t>(rows[d]));
    if (at < base) return false;
    strides[d] = at - base;
  }
  std::vector<int64_t> coord(shape.size(), 0);
  int64_t expect = base;
  for (size_t e = 0; e < count; ++e) {
    if (index(e) != expect) return false;
    for (size_t d = shape.size(); d-- > 0;) {  // the next coordinate, last axis fastest
      if (++coord[d] < shape[d]) {
        expect += strides[d];
        break;
      }
      expect -= strides[d] * (shape[d] - 1);
      coord[d] = 0;
    }
  }
  return true;
}

void buildPlanOnce(const CpuExecutor& cpu, Plan& plan, const TensorMap& inputs) {
  const Graph& g = cpu.graph();
  const std::set<std::string> static_names = Lowering::staticValues(g, plan.keyed);
  Lowering low(g, plan);
  for (const auto& [name, t] : inputs) {
    low.sizes_[name] = t.numel();
    if (plan.keyed.count(name)) plan.statics[name] = plan.key_values[name] = t;
  }
  // The dry run: every value's type and shape; the static ones are kept.
  std::map<std::string, std::pair<DType, Shape>> info;
  for (const auto& [name, t] : g.initializers) info[name] = {t.dtype, t.shape};
  for (const auto& [name, t] : inputs) info[name] = {t.dtype, t.shape};
  for (const auto& [name, t] : g.initializers) plan.statics[name] = t;
  const ValueObserver observe = [&](const std::string& name, const Tensor& t) {
    info[name] = {t.dtype, t.shape};
    if (static_names.count(name)) plan.statics[name] = t;
  };
  cpu.run(inputs, nullptr, &observe);
  for (const auto& [name, v] : info) low.shapes_[name] = v.second;

  // Aliases resolve to the value whose storage they share.
  std::map<std::string, std::string> root;
  auto rootOf = [&](const std::string& name) {
    auto it = root.find(name);
    return it == root.end() ? name : it->second;
  };
  // An activation right after a matrix product (its only reader) is done in the product's epilogue: the
  // activation node then aliases the product's output.
  std::map<std::string, int> readers;
  std::map<std::string, const Node*> producer;
  for (const Node& n : g.nodes) {
    for (const std::string& in : n.inputs) ++readers[in];
    for (const std::string& o : n.outputs) producer[o] = &n;
  }
  for (const ValueInfo& v : g.outputs) ++readers[v.name];
  std::set<const Node*> fused;
  for (const Node& n : g.nodes) {
    const uint32_t act = n.op_type == "Relu" ? 1 : n.op_type == "Sigmoid" ? 2 : n.op_type == "Tanh" ? 3 : 0;
    if (!act || n.inputs.empty() || static_names.count(n.outputs[0])) continue;
    auto p = producer.find(n.inputs[0]);
    if (p == producer.end() || (p->second->op_type != "Gemm" && p->second->op_type != "MatMul") || readers[n.inputs[0]] != 1) continue;
    const auto& [in_type, in_shape] = info.at(n.inputs[0]);
    if (!isFloatType(in_type) || info.at(n.outputs[0]).first != in_type) continue;
    low.acts_[n.inputs[0]] = act;
    fused.insert(&n);
  }
  std::vector<const Node*> gpu_nodes;
  for (const Node& n : g.nodes) {
    bool is_static = true;
    for (const std::string& o : n.outputs)
      if (!o.empty() && !static_names.count(o)) is_static = false;
    if (is_static) continue;
    if (staticOnlyOps().count(n.op_type)) {
      low.keyOrRefuse(n, n.inputs);
      refuse(g, n, n.op_type + " computed from the model's inputs (only constant ones are folded)");
    }
    // (a Cast to the type its input already has changes nothing: an alias too)
    const bool same_cast = n.op_type == "Cast" && n.inputs.size() == 1 && info.at(n.inputs[0]).first == info.at(n.outputs[0]).first;
    if (aliasOps().count(n.op_type) || fused.count(&n) || same_cast) {
      root[n.outputs[0]] = rootOf(n.inputs.at(0));
      continue;
    }
    gpu_nodes.push_back(&n);
  }
  // Chains of data movement compose: a map node whose output only one map node reads (directly or through
  // aliases) is not run; its reader copies from its sources through the composed map.
  low.root_ = rootOf;
  std::map<std::string, std::vector<const Node*>> consumers;
  for (const Node& n : g.nodes)
    for (const std::string& in : n.inputs)
      if (!in.empty()) consumers[in].push_back(&n);
  auto isMapNode = [&](const Node& n) {
    return mapOps().count(n.op_type) || (n.op_type == "Gather" && n.inputs.size() > 1 && static_names.count(n.inputs[1])) ||
           (n.op_type == "Resize" && n.attrString("mode", "nearest") == "nearest");
  };
  std::set<const Node*> on_gpu(gpu_nodes.begin(), gpu_nodes.end());
  auto readsAsData = [&](const Node& reader, const std::string& v) {
    const int data = mapDataInputs(reader);
    for (size_t k = 0; k < reader.inputs.size(); ++k)
      if (isDataInput(data, k) && reader.inputs[k] == v) return true;
    return false;
  };
  for (const Node* p : gpu_nodes) {
    if (!isMapNode(*p) || p->op_type == "Pad" || p->outputs.size() != 1) continue;
    std::string v = p->outputs[0];
    // Several direct readers, every one a map node reading it as data (and no graph output): each composes
    // it, reading its sources through the composed map, and it is not run (the six column gathers of a
    // HexPlane's coordinates from one Concat: a wave fewer).
    const std::vector<const Node*>& direct = consumers[v];
    if (direct.size() > 1 && readers[v] == static_cast<int>(direct.size()) &&
        std::all_of(direct.begin(), direct.end(), [&](const Node* c) { return on_gpu.count(c) && isMapNode(*c) && readsAsData(*c, v); })) {
      low.absorbed_[v] = p;
      continue;
    }
    // Follow the single reader through aliases.
    const Node* reader = nullptr;
    while (readers[v] == 1 && consumers[v].size() == 1) {
      const Node* c = consumers[v][0];
      if (on_gpu.count(c)) {
        reader = c;
        break;
      }
      if (root.count(c->outputs[0]) == 0) break;  // static or not an alias
      v = c->outputs[0];
    }
    if (!reader || !isMapNode(*reader) || !readsAsData(*reader, v)) continue;
    low.absorbed_[p->outputs[0]] = p;
  }
  std::erase_if(gpu_nodes, [&](const Node* n) { return n->outputs.size() == 1 && low.absorbed_.count(n->outputs[0]) && low.absorbed_.at(n->outputs[0]) == n; });
  // Strided views: a map node of one source whose map is affine in the output's coordinates (Transpose,
  // Slice, Expand, Squeeze of a copy, ...) and whose every reader (through aliases) is an elementwise node is
  // not run; the readers address its source with the view's strides (Lowering::operand).
  {
    std::set<std::string> outputs;
    for (const ValueInfo& v : g.outputs) outputs.insert(v.name);
    auto elementwise = [&](const Node& c) {
      return findIn(kUnary, c.op_type) || findIn(kBinary, c.op_type) || c.op_type == "Where" || c.op_type == "Clip" ||
             c.op_type == "Max" || c.op_type == "Min";
    };
    std::set<const Node*> viewed;
    for (const Node* p : gpu_nodes) {
      if (!isMapNode(*p) || p->op_type == "Pad" || p->op_type == "Resize" || !on_gpu.count(p)) continue;
      // A map that copies its one source whole and in order (a Slice of everything, a Concat with empty
      // parts) is an alias of it.
      if (p->outputs.size() == 1 && !p->outputs[0].empty()) {
        const std::string& out = p->outputs[0];
        const auto* m = low.composedMap(*p, 0, info);
        if (m && m->sources.size() == 1 && info.at(m->sources[0]).first == info.at(out).first &&
            elementCount(info.at(m->sources[0]).second) == elementCount(info.at(out).second)) {
          bool identity = !m->entries.empty();
          for (size_t e = 0; e < m->entries.size() && identity; ++e) identity = m->entries[e] == static_cast<int64_t>(e) + 1;
          if (identity) {
            const std::string to = rootOf(m->sources[0]);
            for (auto& [alias, r] : root)  // aliases of it now share the source's storage too
              if (r == out) r = to;
            root[out] = to;
            viewed.insert(p);
            continue;
          }
        }
      }
      // Every output (Split has several) must become views: the names its readers read (the output or
      // its aliases), each read only by elementwise GPU nodes.
      std::vector<std::pair<std::string, Lowering::View>> found;
      bool ok = true;
      for (size_t o = 0; o < p->outputs.size() && ok; ++o) {
        if (p->outputs[o].empty()) continue;
        std::vector<std::string> names;
        std::function<void(const std::string&)> visit = [&](const std::string& v) {
          if (outputs.count(v) || static_names.count(v)) ok = false;
          bool direct = false;
          for (const Node* c : consumers[v]) {
            if (!ok) return;
            if (on_gpu.count(c)) {
              if (!elementwise(*c)) ok = false;
              direct = true;
            } else if (root.count(c->outputs[0])) {
              visit(c->outputs[0]);  // an alias of it
            } else {
              ok = false;
            }
          }
          if (direct) names.push_back(v);
        };
        visit(p->outputs[o]);
        const auto* m = ok && !names.empty() ? low.composedMap(*p, o, info) : nullptr;
        if (!m || m->sources.size() != 1 || info.at(m->sources[0]).first != info.at(p->outputs[o]).first) {
          ok = false;
          break;
        }
        for (const std::string& v : names) {
          Lowering::View view;
          view.source = m->sources[0];  // stored: the maps composed into p are not
          view.shape = info.at(v).second;
          if (!affineView(m->entries, view.shape, view.base, view.strides)) {
            ok = false;
            break;
          }
          found.emplace_back(v, std::move(view));
        }
      }
      if (!ok || found.empty()) continue;
      for (auto& [v, view] : found) low.views_[v] = std::move(view);
      viewed.insert(p);
    }
    std::erase_if(gpu_nodes, [&](const Node* n) { return viewed.count(n) > 0; });
    // Nodes nothing reads any more (their readers read through a view past them) are not run either.
    for (bool changed = true; changed;) {
      changed = false;
      std::set<std::string> read;
      for (const ValueInfo& v : g.outputs) read.insert(rootOf(v.name));
      std::function<void(const std::string&)> note = [&](const std::string& in) {
        if (in.empty()) return;
        if (auto v = low.views_.find(in); v != low.views_.end()) return note(v->second.source);
        const std::string r = rootOf(in);
        read.insert(r);
        if (auto a = low.absorbed_.find(r); a != low.absorbed_.end())
          for (const std::string& x : a->second->inputs) note(x);
      };
      for (const Node* n : gpu_nodes) {
        if (isMapNode(*n) && n->op_type != "Pad") {  // a map reads only the sources its elements come from
          for (size_t o = 0; o < n->outputs.size(); ++o) {
            if (n->outputs[o].empty()) continue;
            const auto* m = low.composedMap(*n, o, info);
            if (!m) {
              for (const std::string& in : n->inputs) note(in);
              break;
            }
            for (const std::string& src : m->sources) note(src);
          }
          for (size_t k = 0; k < n->inputs.size(); ++k)  // and its static operands (indices, shapes)
            if (static_names.count(n->inputs[k])) note(n->inputs[k]);
          continue;
        }
        for (const std::string& in : n->inputs) note(in);
      }
      const size_t before = gpu_nodes.size();
      std::erase_if(gpu_nodes, [&](const Node* n) {
        for (const std::string& o : n->outputs)
          if (!o.empty() && read.count(o)) return false;
        return true;
      });
      changed = gpu_nodes.size() != before;
    }
  }
  // Chains of elementwise float operators fuse: a node joins the chain that computes one of its inputs when
  // that input has no other reader, is not an output, and has the node's own shape or one that broadcasts
  // to it (the chain then evaluates it per element of the larger shape; every value is the same).
  {
    std::map<std::string, size_t> view_names;  // source -> the names it is read through as a view
    for (const auto& [name, view] : low.views_) ++view_names[view.source];
    std::map<std::string, size_t> chain_of;  // value computed by a chain (its last node's output) -> chain
    std::vector<std::vector<const Node*>> chains;
    std::vector<std::set<std::string>> externals;
    for (const Node* n : gpu_nodes) {
      const auto [code, arity] = fusableOp(*n, g.opset);
      (void)code;
      bool is_float = true;
      for (const auto* list : {&n->inputs, &n->outputs})
        for (const std::string& v : *list)
          if (!v.empty() && !isFloatType(info.at(v).first)) is_float = false;
      if (arity == 0 || !is_float || n->outputs.size() != 1 || n->inputs.empty()) continue;
      const Shape& shape = info.at(n->outputs[0]).second;
      size_t joined = chains.size();
      for (const std::string& read : n->inputs) {
        // A broadcast view of a chain's value reads it, when the view is its only reader under any name.
        const std::string in = low.broadcastSource(read);
        if (in != read && (readers[read] != 1 || view_names[in] != 1)) continue;
        auto c = chain_of.find(in);
        // One reader (graph outputs count as readers): this node, which reads it once.
        // (an input of a smaller shape that broadcasts to this node's is recomputed per element of it)
        if (in.empty() || c == chain_of.end() || readers[in] != 1 || !broadcastsTo(info.at(in).second, shape)) continue;
        std::set<std::string> ext = externals[c->second];
        for (const std::string& other : n->inputs)
          if (!other.empty() && other != read) ext.insert(other);
        if (ext.size() > kFusedInputs || chains[c->second].size() >= 16) continue;
        joined = c->second;
        externals[joined] = ext;
        chain_of.erase(c);
        break;
      }
      if (joined == chains.size()) {
        chains.emplace_back();
        externals.emplace_back();
        for (const std::string& in : n->inputs)
          if (!in.empty()) externals.back().insert(in);
      }
      chains[joined].push_back(n);
      chain_of[n->outputs[0]] = joined;
    }
    std::set<const Node*> inside;
    for (const auto& chain : chains) {
      if (chain.size() < 2) continue;
      low.chains_[chain.back()] = chain;
      inside.insert(chain.begin(), chain.end() - 1);
    }
    std::erase_if(gpu_nodes, [&](const Node* n) { return inside.count(n) > 0; });
  }
  // The stored values a node reads: absorbed nodes' outputs stand for their own inputs, a fused chain's last
  // node reads the chain's inputs.
  std::function<void(const std::string&, std::vector<std::string>&)> reads = [&](const std::string& in, std::vector<std::string>& out) {
    if (in.empty()) return;
    if (auto v = low.views_.find(in); v != low.views_.end()) {  // a strided view of its source
      reads(v->second.source, out);
      return;
    }
    const std::string r = rootOf(in);
    auto a = low.absorbed_.find(r);
    if (a == low.absorbed_.end()) {
      out.push_back(r);
      return;
    }
    for (const std::string& x : a->second->inputs) reads(x, out);
  };
  std::vector<std::vector<std::string>> node_reads(gpu_nodes.size());
  for (size_t k = 0; k < gpu_nodes.size(); ++k) {
    auto chain = low.chains_.find(gpu_nodes[k]);
    const Node& n = *gpu_nodes[k];
    if (chain == low.chains_.end() && isMapNode(n) && n.op_type != "Pad") {  // the sources its elements come from
      bool composed = true;
      for (size_t o = 0; o < n.outputs.size() && composed; ++o) {
        if (n.outputs[o].empty()) continue;
        const auto* m = low.composedMap(n, o, info);
        composed = m != nullptr;
        if (m)
          for (const std::string& src : m->sources) reads(src, node_reads[k]);
      }
      for (const std::string& in : n.inputs)
        if (!composed || static_names.count(in)) reads(in, node_reads[k]);
      continue;
    }
    if (chain == low.chains_.end()) {
      for (const std::string& in : gpu_nodes[k]->inputs) reads(in, node_reads[k]);
      continue;
    }
    std::set<std::string> computed;
    for (const Node* m : chain->second) {
      for (const std::string& in : m->inputs)
        if (!in.empty() && !computed.count(low.broadcastSource(in))) reads(in, node_reads[k]);
      computed.insert(m->outputs[0]);
    }
  }

  // Waves: a node runs one wave after the latest wave that produced one of its inputs, so the nodes of a
  // wave are independent and need no barrier between them (one barrier per wave, not per node).
  std::map<std::string, size_t> produced_in;  // stored value -> wave
  std::vector<size_t> wave_of(gpu_nodes.size(), 0);
  size_t waves = 0;
  for (size_t k = 0; k < gpu_nodes.size(); ++k) {
    size_t w = 0;
    for (const std::string& in : node_reads[k])
      if (auto it = produced_in.find(in); it != produced_in.end()) w = std::max(w, it->second + 1);
    wave_of[k] = w;
    waves = std::max(waves, w + 1);
    for (const std::string& o : gpu_nodes[k]->outputs)
      if (!o.empty()) produced_in[o] = w;
  }
  std::vector<size_t> order(gpu_nodes.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return wave_of[x] < wave_of[y]; });
  // Liveness by wave: the last wave reading each stored value (through its aliases); outputs live to the end.
  std::map<std::string, size_t> last_use;
  for (size_t k = 0; k < gpu_nodes.size(); ++k)
    for (const std::string& in : node_reads[k]) last_use[in] = std::max(last_use[in], wave_of[k]);
  std::set<std::string> keep;
  for (const ValueInfo& v : g.outputs) keep.insert(rootOf(v.name));

  auto place = [&](const std::string& name, uint64_t at, bool is_static) {
    const auto& [dtype, shape] = info.at(name);
    plan.slots[name] = {at, dtype, shape, is_static};
  };
  // Static values read by GPU nodes (or returned as outputs) are constants of the plan.
  std::set<std::string> needed;
  for (const auto& list : node_reads) needed.insert(list.begin(), list.end());
  for (const std::string& name : keep) needed.insert(name);
  for (const std::string& name : needed) {
    auto it = plan.statics.find(name);
    if (it == plan.statics.end()) continue;
    if (!gpuType(it->second.dtype)) continue;  // refused by the node that reads it
    place(name, low.constant(toWords(it->second, g.path + ": constant '" + name + "'")), true);
  }
  // Inputs (those not keyed: a keyed input is a constant of the plan).
  for (const ValueInfo& v : g.inputs) {
    if (plan.keyed.count(v.name)) continue;
    const uint64_t words = static_cast<uint64_t>(elementCount(info.at(v.name).second));
    place(v.name, low.allocate(words), false);
    plan.input_words += words;
  }
  auto aliasSlots = [&]() {
    for (const auto& [alias, r] : root) {
      auto it = plan.slots.find(r);
      if (it == plan.slots.end() || plan.slots.count(alias)) continue;
      Slot s = it->second;
      s.dtype = info.at(alias).first;
      s.shape = info.at(alias).second;
      plan.slots[alias] = s;
    }
  };
  aliasSlots();
  std::set<std::string> graph_inputs;
  for (const ValueInfo& v : g.inputs) graph_inputs.insert(v.name);
  // Space is given back at the end of the wave that last reads it, so a later wave may write there (after
  // the barrier) but no node of the same wave can.
  size_t at = 0;
  for (size_t w = 0; w < waves; ++w) {
    const size_t wave_begin = at;
    for (; at < order.size() && wave_of[order[at]] == w; ++at) {
      const Node& n = *gpu_nodes[order[at]];
      for (const std::string& o : n.outputs)
        if (!o.empty()) place(o, low.allocate(static_cast<uint64_t>(elementCount(info.at(o).second))), false);
      aliasSlots();
      const size_t first = plan.dispatches.size();
      low.lower(n, info);
      if (auto chain = low.chains_.find(&n); chain != low.chains_.end()) {
        std::string ops;
        for (const Node* m : chain->second) ops += (ops.empty() ? "" : "+") + m->op_type;
        plan.nodes.push_back({"Fused", n.name + " (" + ops + ")", first, plan.dispatches.size(), w});
      } else {
        plan.nodes.push_back({n.op_type, n.name, first, plan.dispatches.size(), w});
      }
    }
    std::set<std::string> dead;
    for (size_t k = wave_begin; k < at; ++k) {
      const Node& n = *gpu_nodes[order[k]];
      for (const std::string& r : node_reads[order[k]]) {
        auto lu = last_use.find(r);
        if (lu != last_use.end() && lu->second == w) dead.insert(r);
      }
      for (const std::string& o : n.outputs)
        if (!o.empty() && !last_use.count(o)) dead.insert(o);  // read by nothing
    }
    for (const std::string& r : dead) {
      if (keep.count(r) || graph_inputs.count(r)) continue;
      const Slot& sl = plan.slots.at(r);
      if (sl.is_static) continue;
      low.release(sl.offset, static_cast<uint64_t>(elementCount(sl.shape)));
    }
  }
  plan.waves = waves;
  // Offsets are 32-bit words in the kernels: every value must end below 2^32 words (16 GiB).
  if (low.high() > 0xFFFFFFFFull)
    throw Error(g.path + ": the plan needs " + std::to_string(low.high() * 4 >> 20) + " MiB of tensors; the Vulkan executor addresses 16 GiB");
  for (const ValueInfo& v : g.outputs) {
    if (!plan.slots.count(v.name) && !plan.statics.count(v.name))
      throw Error(g.path + ": output '" + v.name + "' has no place on the GPU");
    if (plan.slots.count(v.name)) plan.output_words += static_cast<uint64_t>(elementCount(plan.slots.at(v.name).shape));
  }
  plan.arena_words = std::max<uint64_t>(low.high(), 64);
}

// Plans, keying the plan on the values of small inputs that shapes or folds turn out to need.
void buildPlan(const CpuExecutor& cpu, Plan& plan, const TensorMap& inputs) {
  std::set<std::string> keyed;
  while (true) {
    Plan attempt;
    attempt.key = plan.key;
    attempt.keyed = keyed;
    try {
      buildPlanOnce(cpu, attempt, inputs);
    } catch (const NeedsKey& k) {
      keyed.insert(k.inputs.begin(), k.inputs.end());
      continue;
    }
    plan = std::move(attempt);
    return;
  }
}

bool sameTensor(const Tensor& a, const Tensor& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.i == b.i &&
         std::equal(a.f.begin(), a.f.end(), b.f.begin(), b.f.end(), [](float x, float y) { return std::memcmp(&x, &y, 4) == 0; });
}

}  // namespace

std::string vulkanPlanProblem(const CpuExecutor& cpu, const TensorMap& inputs) {
  const Graph& g = cpu.graph();
  for (const Node& n : g.nodes)
    if (std::string why = vulkanUnsupportedReason(n, g.opset); !why.empty())
      return g.path + ": " + n.describe() + ", opset " + std::to_string(g.opset) + ": " + why;
  try {
    Plan plan;
    buildPlan(cpu, plan, inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

void VulkanExecutor::Impl::upload(Plan& plan) {
  plan.arena = ctx.createBuffer(plan.arena_words * 4, false, "nn arena");
  plan.param_buffer = ctx.createBuffer(std::max<size_t>(plan.params.size(), 1) * 4, false, "nn params");
  plan.staging = ctx.createBuffer(std::max<uint64_t>(plan.input_words + plan.output_words, 1) * 4, true, "nn staging");
  // Constants and parameters go up once, through a staging buffer of their size.
  uint64_t words = plan.params.size();
  for (const auto& [at, w] : plan.constants) words += w.size();
  gpu::Buffer once = ctx.createBuffer(std::max<uint64_t>(words, 1) * 4, true, "nn upload");
  auto* dst = static_cast<uint32_t*>(once.mapped);
  std::vector<VkBufferCopy> to_arena;
  uint64_t cursor = 0;
  if (!plan.params.empty()) std::memcpy(dst, plan.params.data(), plan.params.size() * 4);
  cursor += plan.params.size();
  for (const auto& [at, w] : plan.constants) {
    if (w.empty()) continue;  // (a zero-element constant; memcpy from a null pointer is undefined)
    std::memcpy(dst + cursor, w.data(), w.size() * 4);
    to_arena.push_back({cursor * 4, at * 4, w.size() * 4});
    cursor += w.size();
  }
  VkCommandBuffer cmd = ctx.begin();
  if (!plan.params.empty()) {
    const VkBufferCopy c{0, 0, plan.params.size() * 4};
    vkCmdCopyBuffer(cmd, once.buffer, plan.param_buffer.buffer, 1, &c);
  }
  if (!to_arena.empty()) vkCmdCopyBuffer(cmd, once.buffer, plan.arena.buffer, static_cast<uint32_t>(to_arena.size()), to_arena.data());
  ctx.submit(cmd);
  plan.constants.clear();
  plan.constants.shrink_to_fit();
  plan.uploaded = true;
  // Every kernel the plan dispatches is compiled now, not while the first run records.
  for (const Dispatch& d : plan.dispatches) pipeline(d.kernel);
}

Plan& VulkanExecutor::Impl::planFor(const TensorMap& inputs) {
  const Graph& g = cpu.graph();
  std::vector<Shape> key;
  for (const ValueInfo& v : g.inputs) {
    auto it = inputs.find(v.name);
    key.push_back(it == inputs.end() ? Shape{-1} : it->second.shape);
  }
  for (auto& p : plans) {
    if (p->key != key) continue;
    bool same = true;
    for (const auto& [name, value] : p->key_values) same = same && sameTensor(value, inputs.at(name));
    if (same) return *(current = p.get());
  }
  auto plan = std::make_unique<Plan>();
  plan->key = key;
  buildPlan(cpu, *plan, inputs);
  upload(*plan);
  // A few shape sets are kept (a window resized back and forth); the oldest goes first.
  if (plans.size() >= 4) plans.erase(plans.begin());
  plans.push_back(std::move(plan));
  return *(current = plans.back().get());
}

void VulkanExecutor::Impl::writeInputs(Plan& plan, const TensorMap& inputs) {
  const Graph& g = cpu.graph();
  auto* dst = static_cast<uint32_t*>(plan.staging.mapped);
  uint64_t cursor = 0;
  for (const ValueInfo& v : g.inputs) {
    if (plan.keyed.count(v.name)) continue;
    const Tensor& t = inputs.at(v.name);
    if (t.dtype != v.dtype && v.dtype != DType::kUndefined)
      throw Error(g.path + ": input '" + v.name + "' is " + dtypeName(t.dtype) + ", the model declares " + dtypeName(v.dtype));
    const std::vector<uint32_t> w = toWords(t, g.path + ": input '" + v.name + "'");
    if (!w.empty()) std::memcpy(dst + cursor, w.data(), w.size() * 4);
    cursor += w.size();
  }
}

VkCommandBuffer VulkanExecutor::Impl::recordDispatches(Plan& plan, VkCommandBuffer cmd, Stamps stamps, bool sync_nodes, uint32_t query_base) {
  const bool per_node = stamps == Stamps::kPerNode;
  if (stamps != Stamps::kNone) {
    if (query_base == 0) {
      const auto needed = static_cast<uint32_t>(plan.nodes.size() + 2);
      ensureQueries(needed);
      vkCmdResetQueryPool(cmd, queries, 0, needed);
    }
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries, query_base);
  }
  Push push{plan.arena.address, plan.param_buffer.address, 0, 0};
  const gpu::ComputePipeline* bound = nullptr;
  for (size_t k = 0; k < plan.nodes.size(); ++k) {
    const NodeSpan& span = plan.nodes[k];
    for (size_t d = span.first; d < span.end; ++d) {
      const Dispatch& dispatch = plan.dispatches[d];
      const gpu::ComputePipeline& p = pipeline(dispatch.kernel);
      if (&p != bound) {
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline());
        bound = &p;
      }
      push.base = dispatch.base;
      push.count = dispatch.count;
      vkCmdPushConstants(cmd, p.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Push), &push);
      vkCmdDispatch(cmd, dispatch.groups[0], dispatch.groups[1], dispatch.groups[2]);
    }
    // The next wave may read anything this one wrote (and reuse the space of what it read last): a barrier
    // between shaders, and after the last node one that the caller's copies and indirect reads wait on too.
    // Profiling runs and SPLATFORGE_NN_SYNC put a barrier after every node, to time or fault-find it alone.
    const bool last = k + 1 == plan.nodes.size();
    const bool wave_end = last || plan.nodes[k + 1].wave != span.wave;
    if (last) gpu::computeBarrier(cmd);
    else if (wave_end || per_node || sync_nodes) gpu::shaderBarrier(cmd);
    if (sync_nodes) {  // SPLATFORGE_NN_SYNC: each node alone, named first (finds the node of a GPU fault)
      std::fprintf(stderr, "[nn] node %zu/%zu '%s' (%s): %zu dispatch(es)\n", k + 1, plan.nodes.size(), span.name.c_str(), span.op_type.c_str(),
                   span.end - span.first);
      ctx.submit(cmd);
      cmd = ctx.begin();
      bound = nullptr;
    }
    if (per_node) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries, query_base + static_cast<uint32_t>(k + 1));
  }
  if (stamps == Stamps::kTotal) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries, query_base + 1);
  return cmd;
}

VulkanExecutor::VulkanExecutor(gpu::Context& ctx, Graph graph) : impl_(std::make_unique<Impl>(ctx, std::move(graph))) {
  const Graph& g = impl_->cpu.graph();
  std::string bad;
  for (const Node& n : g.nodes)
    if (std::string why = vulkanUnsupportedReason(n, g.opset); !why.empty())
      bad += "\n  " + n.describe() + ", opset " + std::to_string(g.opset) + ": " + why;
  if (!bad.empty()) throw Error(g.path + ": node(s) the Vulkan executor cannot run:" + bad);
}

VulkanExecutor::~VulkanExecutor() = default;

const Graph& VulkanExecutor::graph() const { return impl_->cpu.graph(); }
const CpuExecutor& VulkanExecutor::cpu() const { return impl_->cpu; }

void VulkanExecutor::prepare(const TensorMap& inputs) {
  Plan& plan = impl_->planFor(inputs);
  impl_->writeInputs(plan, inputs);
}

void VulkanExecutor::record(VkCommandBuffer cmd) {
  if (!impl_->current) throw Error(graph().path + ": record() before prepare()");
  Plan& plan = *impl_->current;
  impl_->recordInputCopy(plan, cmd);
  impl_->recordDispatches(plan, cmd, Impl::Stamps::kNone);
}

TensorMap VulkanExecutor::run(const TensorMap& inputs, std::vector<NodeTime>* times) {
  prepare(inputs);
  Plan& plan = *impl_->current;
  const Graph& g = graph();
  gpu::Context& ctx = impl_->ctx;
  VkCommandBuffer cmd = ctx.begin();
  impl_->recordInputCopy(plan, cmd);
  static const bool sync_nodes = std::getenv("SPLATFORGE_NN_SYNC") != nullptr;
  const Impl::Stamps stamps = sync_nodes ? Impl::Stamps::kNone : times ? Impl::Stamps::kPerNode : Impl::Stamps::kTotal;
  cmd = impl_->recordDispatches(plan, cmd, stamps, sync_nodes);
  std::vector<std::pair<const ValueInfo*, uint64_t>> read;  // output, staging word
  {
    std::vector<VkBufferCopy> copies;
    uint64_t cursor = plan.input_words;
    for (const ValueInfo& v : g.outputs) {
      auto it = plan.slots.find(v.name);
      if (it == plan.slots.end()) continue;
      const auto words = static_cast<uint64_t>(elementCount(it->second.shape));
      if (words) copies.push_back({it->second.offset * 4, cursor * 4, words * 4});
      read.emplace_back(&v, cursor);
      cursor += words;
    }
    if (!copies.empty()) vkCmdCopyBuffer(cmd, plan.arena.buffer, plan.staging.buffer, static_cast<uint32_t>(copies.size()), copies.data());
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  }
  ctx.submit(cmd);
  if (stamps != Impl::Stamps::kNone) {
    std::vector<uint64_t> ticks(stamps == Impl::Stamps::kPerNode ? plan.nodes.size() + 1 : 2);
    SF_VK_CHECK(vkGetQueryPoolResults(ctx.device(), impl_->queries, 0, static_cast<uint32_t>(ticks.size()), ticks.size() * 8,
                                      ticks.data(), 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    const double to_ms = ctx.timestampPeriodNs() * 1e-6;
    impl_->last_gpu_ms = static_cast<double>(ticks.back() - ticks.front()) * to_ms;
    if (times)
      for (size_t k = 0; k < plan.nodes.size(); ++k)
        times->push_back({plan.nodes[k].op_type, static_cast<double>(ticks[k + 1] - ticks[k]) * to_ms, plan.nodes[k].name, plan.nodes[k].wave});
  }
  TensorMap result;
  const auto* staged = static_cast<const uint32_t*>(plan.staging.mapped);
  for (const auto& [v, at] : read) {
    const Slot& s = plan.slots.at(v->name);
    result[v->name] = fromWords(staged + at, s.dtype, s.shape);
  }
  for (const ValueInfo& v : g.outputs)
    if (!result.count(v.name)) result[v.name] = plan.statics.at(v.name);
  return result;
}

void VulkanExecutor::setDeviceWrittenInputs(std::set<std::string> names) {
  for (const std::string& n : names) {
    bool found = false;
    for (const ValueInfo& v : graph().inputs) found |= v.name == n;
    if (!found) throw Error(graph().path + ": no input '" + n + "'");
  }
  impl_->device_inputs = std::move(names);
}

VkDeviceAddress VulkanExecutor::inputAddress(const std::string& name) const {
  if (!impl_->current) throw Error(graph().path + ": inputAddress() before prepare()");
  if (impl_->current->keyed.count(name)) throw Error(graph().path + ": input '" + name + "' is a shape argument of the plan, not a GPU value");
  auto it = impl_->current->slots.find(name);
  if (it == impl_->current->slots.end()) throw Error(graph().path + ": no input '" + name + "' on the GPU");
  return impl_->current->arena.address + it->second.offset * 4;
}

VkDeviceAddress VulkanExecutor::outputAddress(const std::string& name) const {
  if (!impl_->current) throw Error(graph().path + ": outputAddress() before prepare()");
  auto it = impl_->current->slots.find(name);
  if (it == impl_->current->slots.end()) throw Error(graph().path + ": no output '" + name + "' on the GPU");
  return impl_->current->arena.address + it->second.offset * 4;
}

// An output of the current plan: its slot, or its static value.
std::pair<const Shape*, DType> VulkanExecutor::outputInfo(const std::string& name) const {
  if (!impl_->current) throw Error(graph().path + ": output '" + name + "' asked for before prepare()");
  if (auto it = impl_->current->slots.find(name); it != impl_->current->slots.end()) return {&it->second.shape, it->second.dtype};
  auto st = impl_->current->statics.find(name);
  if (st == impl_->current->statics.end()) throw Error(graph().path + ": no output '" + name + "'");
  return {&st->second.shape, st->second.dtype};
}

const Shape& VulkanExecutor::outputShape(const std::string& name) const { return *outputInfo(name).first; }
DType VulkanExecutor::outputType(const std::string& name) const { return outputInfo(name).second; }

const Tensor* VulkanExecutor::staticOutput(const std::string& name) const {
  if (!impl_->current) return nullptr;
  auto st = impl_->current->statics.find(name);
  return st == impl_->current->statics.end() ? nullptr : &st->second;
}

size_t VulkanExecutor::dispatches() const { return impl_->current ? impl_->current->dispatches.size() : 0; }
uint64_t VulkanExecutor::arenaBytes() const { return impl_->current ? impl_->current->arena_words * 4 : 0; }
GraphRunner vulkanRunner(gpu::Context& ctx, const Graph& graph) {
  auto executor = std::make_shared<VulkanExecutor>(ctx, graph);
  return [executor](const TensorMap& inputs, std::vector<NodeTime>* times) { return executor->run(inputs, times); };
}

double VulkanExecutor::lastGpuMs() const { return impl_->last_gpu_ms; }

std::vector<double> VulkanExecutor::runBackToBack(const TensorMap& inputs, int runs, std::vector<NodeTime>* times) {
  if (runs < 1 || runs > 4096) throw Error(graph().path + ": back-to-back runs must be 1 to 4096, not " + std::to_string(runs));
  prepare(inputs);
  Plan& plan = *impl_->current;
  gpu::Context& ctx = impl_->ctx;
  const auto stamps = static_cast<uint32_t>(runs + 1);
  // The profiled runs follow the plain ones in the same submission (the GPU still busy, its clock up), each
  // with a stamp after every node (and a barrier: each node alone), so a node's median is stable.
  const auto nodes = static_cast<uint32_t>(plan.nodes.size());
  const uint32_t profiled = times ? static_cast<uint32_t>(std::min(runs, kBackToBackProfiledRuns)) : 0u;
  const uint32_t total_queries = stamps + profiled * (nodes + 1);
  impl_->ensureQueries(total_queries);
  VkCommandBuffer cmd = ctx.begin();
  impl_->recordInputCopy(plan, cmd);
  vkCmdResetQueryPool(cmd, impl_->queries, 0, total_queries);
  gpu::computeBarrier(cmd);
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, impl_->queries, 0);
  for (int r = 0; r < runs; ++r) {
    cmd = impl_->recordDispatches(plan, cmd, Impl::Stamps::kNone);  // ends with a barrier: the next run may overwrite
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, impl_->queries, static_cast<uint32_t>(r + 1));
  }
  for (uint32_t r = 0; r < profiled; ++r) cmd = impl_->recordDispatches(plan, cmd, Impl::Stamps::kPerNode, false, stamps + r * (nodes + 1));
  ctx.submit(cmd);
  std::vector<uint64_t> ticks(total_queries);
  SF_VK_CHECK(vkGetQueryPoolResults(ctx.device(), impl_->queries, 0, total_queries, ticks.size() * 8, ticks.data(), 8,
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  const double to_ms = ctx.timestampPeriodNs() * 1e-6;
  std::vector<double> out;
  for (int r = 0; r < runs; ++r) out.push_back(static_cast<double>(ticks[static_cast<size_t>(r) + 1] - ticks[static_cast<size_t>(r)]) * to_ms);
  if (times) {
    times->clear();
    for (uint32_t k = 0; k < nodes; ++k) {
      std::vector<double> node_ms;
      for (uint32_t r = 0; r < profiled; ++r) {
        const size_t at = stamps + r * (nodes + 1) + k;
        node_ms.push_back(static_cast<double>(ticks[at + 1] - ticks[at]) * to_ms);
      }
      std::nth_element(node_ms.begin(), node_ms.begin() + node_ms.size() / 2, node_ms.end());
      times->push_back({plan.nodes[k].op_type, node_ms[node_ms.size() / 2], plan.nodes[k].name, plan.nodes[k].wave});
    }
  }
  impl_->last_gpu_ms = out.back();
  return out;
}
size_t VulkanExecutor::waves() const { return impl_->current ? impl_->current->waves : 0; }
size_t VulkanExecutor::gpuNodes() const { return impl_->current ? impl_->current->nodes.size() : 0; }

}  // namespace sf::nn
