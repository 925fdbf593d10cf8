// The Vulkan executor: plans (vulkan_plan.h) made per set of input shapes and uploaded once, recorded as
// one compute dispatch list per run, inputs in and outputs out through one staging buffer.
#include "neural/vulkan_executor.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <span>

#include "core/error.h"
#include "gpu/gpu.h"
#include "neural/cpu_ops.h"
#include "neural/shaders/nn_codes.h"
#include "neural/vulkan_plan.h"

namespace sf::nn {

using vulkan::Dispatch;
using vulkan::Kernel;
using vulkan::kGroupSize;
using vulkan::NodeSpan;
using vulkan::Slot;
using vulkan::toWords;
using vulkan::UnaryOp;

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
const uint32_t kWindowShader[] = {
#include "nn_window.inc"
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

struct KernelSource {
  std::span<const uint32_t> spirv;
  const char* name;
};
KernelSource kernelSource(Kernel k) {
  switch (k) {
    case Kernel::kEltwise:
      return {kEltwiseShader, "nn_eltwise"};
    case Kernel::kMap:
      return {kMapShader, "nn_map"};
    case Kernel::kGather:
      return {kGatherShader, "nn_gather"};
    case Kernel::kReduce:
      return {kReduceShader, "nn_reduce"};
    case Kernel::kSoftmax:
      return {kSoftmaxShader, "nn_softmax"};
    case Kernel::kGemm:
      return {kGemmShader, "nn_gemm"};
    case Kernel::kConv:
      return {kConvShader, "nn_conv"};
    case Kernel::kWindow:
      return {kWindowShader, "nn_window"};
    case Kernel::kSample:
      return {kSampleShader, "nn_sample"};
    case Kernel::kMatmulSmall:
      return {kMatmulSmallShader, "nn_matmul_small"};
    case Kernel::kFused:
      return {kFusedShader, "nn_fused"};
    case Kernel::kCount:
      break;
  }
  return {{}, ""};
}

struct Push {
  VkDeviceAddress data;
  VkDeviceAddress params;
  uint32_t base;
  uint32_t count;
};

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
  for (const UnaryOp& u : vulkan::kUnary)
    ops.push_back({u.op_type, u.code == NN_IDENTITY ? "not from or to uint32/uint64" : ""});
  for (const UnaryOp& u : vulkan::kBinary) ops.push_back({u.op_type, ""});
  for (const auto& [op, data] : vulkan::mapOps()) {
    (void)data;
    ops.push_back({op.c_str(), op == "ScatterND" ? "reduction none, through a gather map; indices static"
                                                 : "through a gather map; shape inputs static"});
  }
  for (const std::string& op : vulkan::aliasOps())
    ops.push_back({op.c_str(), "aliases its input; shape inputs static"});
  for (const auto& [op, code] : vulkan::reduceOps()) {
    (void)code;
    ops.push_back({op.c_str(), "up to 6 axes after merging; axes static"});
  }
  for (const std::string& op : vulkan::staticOnlyOps())
    ops.push_back({op.c_str(), "folded: inputs must be static"});
  ops.push_back({"BatchNormalization", "inference; statistics static (folded into a multiply-add)"});
  ops.push_back({"Clip", "bounds static or tensors"});
  ops.push_back({"AveragePool", "up to 4 spatial dimensions"});
  ops.push_back({"Conv", "1-D and 2-D"});
  ops.push_back({"ConvTranspose", "up to 4 spatial dimensions"});
  ops.push_back(
      {"Einsum",
       "one operand (a strided sum) or two float operands (a strided GEMM: output labels batch, then one "
       "operand's, then the other's)"});
  ops.push_back({"InstanceNormalization", "one invocation per (n, c) plane"});
  ops.push_back({"LayerNormalization", "one invocation per row"});
  ops.push_back({"Max", "float types: up to 8 inputs; integer types: up to 2"});
  ops.push_back({"Min", "float types: up to 8 inputs; integer types: up to 2"});
  ops.push_back({"Gather", "constant indices through a gather map"});
  ops.push_back({"Gemm", "float types"});
  ops.push_back({"GridSample", ""});
  ops.push_back({"MaxPool", "up to 4 spatial dimensions; the Indices output too"});
  ops.push_back({"MatMul", "float types; up to 4 batch axes after merging"});
  ops.push_back({"Resize", "scales/sizes static; nearest through a gather map"});
  ops.push_back({"Softmax", ""});
  ops.push_back({"Where", ""});
  std::sort(ops.begin(), ops.end(),
            [](const GpuOpInfo& a, const GpuOpInfo& b) { return std::strcmp(a.op_type, b.op_type) < 0; });
  return ops;
}

std::string vulkanUnsupportedReason(const Node& n, int64_t opset) {
  (void)opset;
  if (n.op_type == "ScatterND" && n.attrString("reduction", "none") != "none")
    return "no Vulkan kernel for ScatterND with reduction '" + n.attrString("reduction", "none") +
           "' (reduction none runs through a gather map)";
  if (n.op_type == "Einsum" && n.inputs.size() > 2)
    return "no Vulkan kernel for Einsum of " + std::to_string(n.inputs.size()) + " operands (one or two)";
  for (const GpuOpInfo& op : vulkanOps())
    if (n.op_type == op.op_type) return {};
  return "no Vulkan kernel for " + n.op_type;
}

// A plan with its buffers on the device: the arena, the parameter words, and the staging buffer the inputs go
// up through and the outputs come back through.
struct DevicePlan : vulkan::Plan {
  gpu::Buffer arena, param_buffer, staging;
  bool uploaded = false;
};

struct VulkanExecutor::Impl {
  gpu::Context& ctx;
  CpuExecutor cpu;
  std::array<std::unique_ptr<gpu::ComputePipeline>, static_cast<size_t>(Kernel::kCount)> pipelines;
  std::vector<std::unique_ptr<DevicePlan>> plans;
  DevicePlan* current = nullptr;
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

  DevicePlan& planFor(const TensorMap& inputs);
  void upload(DevicePlan& plan);
  void writeInputs(DevicePlan& plan, const TensorMap& inputs);
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
  VkCommandBuffer recordDispatches(DevicePlan& plan, VkCommandBuffer cmd, Stamps stamps,
                                   bool sync_nodes = false, uint32_t query_base = 0);
  double last_gpu_ms = 0;
  std::set<std::string> device_inputs;  // written on the GPU before record(): not copied from staging

  // The inputs from the staging buffer (where writeInputs put them, in graph order) into their slots, then
  // a barrier.
  void recordInputCopy(DevicePlan& plan, VkCommandBuffer cmd) {
    std::vector<VkBufferCopy> copies;
    uint64_t cursor = 0;
    for (const ValueInfo& v : cpu.graph().inputs) {
      if (plan.keyed.count(v.name)) continue;
      const Slot& s = plan.slots.at(v.name);
      const auto words = static_cast<uint64_t>(elementCount(s.shape));
      if (words && !device_inputs.count(v.name)) copies.push_back({cursor * 4, s.offset * 4, words * 4});
      cursor += words;
    }
    if (!copies.empty())
      vkCmdCopyBuffer(cmd, plan.staging.buffer, plan.arena.buffer, static_cast<uint32_t>(copies.size()),
                      copies.data());
    gpu::computeBarrier(cmd);
  }
};

namespace {

bool sameTensor(const Tensor& a, const Tensor& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.i == b.i &&
         std::equal(a.f.begin(), a.f.end(), b.f.begin(), b.f.end(),
                    [](float x, float y) { return std::memcmp(&x, &y, 4) == 0; });
}

}  // namespace

std::string vulkanPlanProblem(const CpuExecutor& cpu, const TensorMap& inputs) {
  const Graph& g = cpu.graph();
  for (const Node& n : g.nodes)
    if (std::string why = vulkanUnsupportedReason(n, g.opset); !why.empty())
      return g.path + ": " + n.describe() + ", opset " + std::to_string(g.opset) + ": " + why;
  try {
    vulkan::Plan plan;
    vulkan::buildPlan(cpu, plan, inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

void VulkanExecutor::Impl::upload(DevicePlan& plan) {
  plan.arena = ctx.createBuffer(plan.arena_words * 4, false, "nn arena");
  plan.param_buffer = ctx.createBuffer(std::max<size_t>(plan.params.size(), 1) * 4, false, "nn params");
  plan.staging =
      ctx.createBuffer(std::max<uint64_t>(plan.input_words + plan.output_words, 1) * 4, true, "nn staging");
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
  if (!to_arena.empty())
    vkCmdCopyBuffer(cmd, once.buffer, plan.arena.buffer, static_cast<uint32_t>(to_arena.size()),
                    to_arena.data());
  ctx.submit(cmd);
  plan.constants.clear();
  plan.constants.shrink_to_fit();
  plan.uploaded = true;
  // Every kernel the plan dispatches is compiled now, not while the first run records.
  for (const Dispatch& d : plan.dispatches) pipeline(d.kernel);
}

DevicePlan& VulkanExecutor::Impl::planFor(const TensorMap& inputs) {
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
  auto plan = std::make_unique<DevicePlan>();
  plan->key = key;
  vulkan::buildPlan(cpu, *plan, inputs);
  upload(*plan);
  // A few shape sets are kept (a window resized back and forth); the oldest goes first.
  if (plans.size() >= 4) plans.erase(plans.begin());
  plans.push_back(std::move(plan));
  return *(current = plans.back().get());
}

void VulkanExecutor::Impl::writeInputs(DevicePlan& plan, const TensorMap& inputs) {
  const Graph& g = cpu.graph();
  auto* dst = static_cast<uint32_t*>(plan.staging.mapped);
  uint64_t cursor = 0;
  for (const ValueInfo& v : g.inputs) {
    if (plan.keyed.count(v.name)) continue;
    const Tensor& t = inputs.at(v.name);
    if (t.dtype != v.dtype && v.dtype != DType::kUndefined)
      throw Error(g.path + ": input '" + v.name + "' is " + dtypeName(t.dtype) + ", the model declares " +
                  dtypeName(v.dtype));
    const std::vector<uint32_t> w = toWords(t, g.path + ": input '" + v.name + "'");
    if (!w.empty()) std::memcpy(dst + cursor, w.data(), w.size() * 4);
    cursor += w.size();
  }
}

VkCommandBuffer VulkanExecutor::Impl::recordDispatches(DevicePlan& plan, VkCommandBuffer cmd, Stamps stamps,
                                                       bool sync_nodes, uint32_t query_base) {
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
    if (last)
      gpu::computeBarrier(cmd);
    else if (wave_end || per_node || sync_nodes)
      gpu::shaderBarrier(cmd);
    if (sync_nodes) {  // SPLATFORGE_NN_SYNC: each node alone, named first (finds the node of a GPU fault)
      std::fprintf(stderr, "[nn] node %zu/%zu '%s' (%s): %zu dispatch(es)\n", k + 1, plan.nodes.size(),
                   span.name.c_str(), span.op_type.c_str(), span.end - span.first);
      ctx.submit(cmd);
      cmd = ctx.begin();
      bound = nullptr;
    }
    if (per_node)
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries,
                          query_base + static_cast<uint32_t>(k + 1));
  }
  if (stamps == Stamps::kTotal)
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries, query_base + 1);
  return cmd;
}

VulkanExecutor::VulkanExecutor(gpu::Context& ctx, Graph graph)
    : impl_(std::make_unique<Impl>(ctx, std::move(graph))) {
  const Graph& g = impl_->cpu.graph();
  std::string bad;
  for (const Node& n : g.nodes)
    if (std::string why = vulkanUnsupportedReason(n, g.opset); !why.empty())
      bad += "\n  " + n.describe() + ", opset " + std::to_string(g.opset) + ": " + why;
  if (!bad.empty()) throw Error(g.path + ": node(s) the Vulkan executor cannot run:" + bad);
}

VulkanExecutor::~VulkanExecutor() = default;

const Graph& VulkanExecutor::graph() const {
  return impl_->cpu.graph();
}
const CpuExecutor& VulkanExecutor::cpu() const {
  return impl_->cpu;
}

void VulkanExecutor::prepare(const TensorMap& inputs) {
  const auto lock = impl_->ctx.lock();  // a plan's first prepare uploads (gpu::Context::lock)
  DevicePlan& plan = impl_->planFor(inputs);
  impl_->writeInputs(plan, inputs);
}

void VulkanExecutor::record(VkCommandBuffer cmd) {
  if (!impl_->current) throw Error(graph().path + ": record() before prepare()");
  DevicePlan& plan = *impl_->current;
  impl_->recordInputCopy(plan, cmd);
  impl_->recordDispatches(plan, cmd, Impl::Stamps::kNone);
}

TensorMap VulkanExecutor::run(const TensorMap& inputs, std::vector<NodeTime>* times) {
  const auto lock = impl_->ctx.lock();  // held to the outputs' read-back (gpu::Context::lock)
  prepare(inputs);
  DevicePlan& plan = *impl_->current;
  const Graph& g = graph();
  gpu::Context& ctx = impl_->ctx;
  VkCommandBuffer cmd = ctx.begin();
  impl_->recordInputCopy(plan, cmd);
  static const bool sync_nodes = std::getenv("SPLATFORGE_NN_SYNC") != nullptr;
  const Impl::Stamps stamps = sync_nodes ? Impl::Stamps::kNone
                              : times    ? Impl::Stamps::kPerNode
                                         : Impl::Stamps::kTotal;
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
    if (!copies.empty())
      vkCmdCopyBuffer(cmd, plan.arena.buffer, plan.staging.buffer, static_cast<uint32_t>(copies.size()),
                      copies.data());
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                         nullptr, 0, nullptr);
  }
  ctx.submit(cmd);
  if (stamps != Impl::Stamps::kNone) {
    std::vector<uint64_t> ticks(stamps == Impl::Stamps::kPerNode ? plan.nodes.size() + 1 : 2);
    SF_VK_CHECK(vkGetQueryPoolResults(ctx.device(), impl_->queries, 0, static_cast<uint32_t>(ticks.size()),
                                      ticks.size() * 8, ticks.data(), 8,
                                      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    const double to_ms = ctx.timestampPeriodNs() * 1e-6;
    impl_->last_gpu_ms = static_cast<double>(ticks.back() - ticks.front()) * to_ms;
    if (times)
      for (size_t k = 0; k < plan.nodes.size(); ++k)
        times->push_back({plan.nodes[k].op_type, static_cast<double>(ticks[k + 1] - ticks[k]) * to_ms,
                          plan.nodes[k].name, plan.nodes[k].wave});
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
  if (impl_->current->keyed.count(name))
    throw Error(graph().path + ": input '" + name + "' is a shape argument of the plan, not a GPU value");
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
  if (auto it = impl_->current->slots.find(name); it != impl_->current->slots.end())
    return {&it->second.shape, it->second.dtype};
  auto st = impl_->current->statics.find(name);
  if (st == impl_->current->statics.end()) throw Error(graph().path + ": no output '" + name + "'");
  return {&st->second.shape, st->second.dtype};
}

const Shape& VulkanExecutor::outputShape(const std::string& name) const {
  return *outputInfo(name).first;
}
DType VulkanExecutor::outputType(const std::string& name) const {
  return outputInfo(name).second;
}

const Tensor* VulkanExecutor::staticOutput(const std::string& name) const {
  if (!impl_->current) return nullptr;
  auto st = impl_->current->statics.find(name);
  return st == impl_->current->statics.end() ? nullptr : &st->second;
}

size_t VulkanExecutor::dispatches() const {
  return impl_->current ? impl_->current->dispatches.size() : 0;
}
uint64_t VulkanExecutor::arenaBytes() const {
  return impl_->current ? impl_->current->arena_words * 4 : 0;
}
GraphRunner vulkanRunner(gpu::Context& ctx, const Graph& graph) {
  auto executor = std::make_shared<VulkanExecutor>(ctx, graph);
  return [executor](const TensorMap& inputs, std::vector<NodeTime>* times) {
    return executor->run(inputs, times);
  };
}

double VulkanExecutor::lastGpuMs() const {
  return impl_->last_gpu_ms;
}

std::vector<double> VulkanExecutor::runBackToBack(const TensorMap& inputs, int runs,
                                                  std::vector<NodeTime>* times) {
  if (runs < 1 || runs > 4096)
    throw Error(graph().path + ": back-to-back runs must be 1 to 4096, not " + std::to_string(runs));
  const auto lock = impl_->ctx.lock();  // (gpu::Context::lock)
  prepare(inputs);
  DevicePlan& plan = *impl_->current;
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
    cmd = impl_->recordDispatches(plan, cmd,
                                  Impl::Stamps::kNone);  // ends with a barrier: the next run may overwrite
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, impl_->queries,
                        static_cast<uint32_t>(r + 1));
  }
  for (uint32_t r = 0; r < profiled; ++r)
    cmd = impl_->recordDispatches(plan, cmd, Impl::Stamps::kPerNode, false, stamps + r * (nodes + 1));
  ctx.submit(cmd);
  std::vector<uint64_t> ticks(total_queries);
  SF_VK_CHECK(vkGetQueryPoolResults(ctx.device(), impl_->queries, 0, total_queries, ticks.size() * 8,
                                    ticks.data(), 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  const double to_ms = ctx.timestampPeriodNs() * 1e-6;
  std::vector<double> out;
  for (int r = 0; r < runs; ++r)
    out.push_back(static_cast<double>(ticks[static_cast<size_t>(r) + 1] - ticks[static_cast<size_t>(r)]) *
                  to_ms);
  if (times) {
    times->clear();
    for (uint32_t k = 0; k < nodes; ++k) {
      std::vector<double> node_ms;
      for (uint32_t r = 0; r < profiled; ++r) {
        const size_t at = stamps + r * (nodes + 1) + k;
        node_ms.push_back(static_cast<double>(ticks[at + 1] - ticks[at]) * to_ms);
      }
      std::nth_element(node_ms.begin(), node_ms.begin() + node_ms.size() / 2, node_ms.end());
      times->push_back(
          {plan.nodes[k].op_type, node_ms[node_ms.size() / 2], plan.nodes[k].name, plan.nodes[k].wave});
    }
  }
  impl_->last_gpu_ms = out.back();
  return out;
}
size_t VulkanExecutor::waves() const {
  return impl_->current ? impl_->current->waves : 0;
}
size_t VulkanExecutor::gpuNodes() const {
  return impl_->current ? impl_->current->nodes.size() : 0;
}

}  // namespace sf::nn
