// The Vulkan executor's plan and its lowering (internal to src/neural/vulkan_*.cpp): what a plan holds (the
// kernels' dispatches, their parameter words, where every value lives in one arena of 32-bit words), the
// operator table, and Lowering, which writes one node's dispatches into a plan. The passes that decide which
// nodes run, in which wave, and where their values live are in vulkan_plan.h; recording and running a plan
// on a device is vulkan_executor.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "neural/graph.h"
#include "neural/shaders/nn_codes.h"
#include "neural/tensor.h"

namespace sf::nn::vulkan {

// The compute kernels (shaders/nn_*.comp), one pipeline each.
enum class Kernel {
  kEltwise,
  kFused,
  kMap,
  kGather,
  kReduce,
  kSoftmax,
  kGemm,
  kMatmulSmall,
  kConv,
  kWindow,
  kSample,
  kCount
};

// Invocations per workgroup of every kernel.
inline constexpr uint32_t kGroupSize = 256;

// ---- The plan ----

struct Dispatch {
  Kernel kernel;
  uint32_t base;   // first parameter word
  uint32_t count;  // invocations
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

// One plan per set of input shapes (and values of keyed inputs): everything a run records, computed once.
struct Plan {
  std::vector<Shape> key;
  std::set<std::string> keyed;  // graph inputs whose values are part of the key (shape arguments)
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
};

// ---- The operator table ----

struct UnaryOp {
  const char* op_type;
  uint32_t code;
};
inline constexpr UnaryOp kUnary[] = {
    {"Abs", NN_ABS},
    {"Ceil", NN_CEIL},
    {"Cos", NN_COS},
    {"Erf", NN_ERF},
    {"Exp", NN_EXP},
    {"Floor", NN_FLOOR},
    {"LeakyRelu", NN_LEAKY_RELU},
    {"Log", NN_LOG},
    {"Neg", NN_NEG},
    {"Not", NN_NOT},
    {"Reciprocal", NN_RECIPROCAL},
    {"Relu", NN_RELU},
    {"Sigmoid", NN_SIGMOID},
    {"Sin", NN_SIN},
    {"Sqrt", NN_SQRT},
    {"Tanh", NN_TANH},
    {"Cast", NN_IDENTITY},
};
inline constexpr UnaryOp kBinary[] = {
    {"Add", NN_ADD},   {"And", NN_AND}, {"Div", NN_DIV}, {"Equal", NN_EQUAL}, {"Greater", NN_GREATER},
    {"Less", NN_LESS}, {"Mul", NN_MUL}, {"Or", NN_OR},   {"Pow", NN_POW},     {"Sub", NN_SUB},
};
// The entry of `op` in `table`, or null.
const UnaryOp* findIn(std::span<const UnaryOp> table, const std::string& op);

// Operators whose output is a rearrangement of their inputs' elements: run through a gather map. The value
// is which inputs are data, one bit per input (the rest must be static): -1 for all of them. (ScatterND:
// data and updates; its indices static, reduction none.)
const std::map<std::string, int>& mapOps();
// Which inputs of a node lowered through a gather map are data (bit k: input k; -1: all); the rest must be
// static.
int mapDataInputs(const Node& n);
bool isDataInput(int inputs, size_t k);
// Operators whose output shares its input's storage (a new shape over the same elements).
const std::set<std::string>& aliasOps();
// The Reduce* family: the reduction kernel's code of each.
const std::map<std::string, uint32_t>& reduceOps();
// Operators that only ever compute constants here: folded when their inputs are static, else refused.
const std::set<std::string>& staticOnlyOps();
// Code and operand count of an operator a fused chain can hold (float arithmetic), or {0, 0}.
std::pair<uint32_t, int> fusableOp(const Node& n, int64_t opset);
// External inputs of a fused chain (shaders/nn_fused.comp reads each once into a named register).
inline constexpr size_t kFusedInputs = 8;

// Whether the GPU holds values of type `t` (float types as float32, the others as int32).
bool gpuType(DType t);
// Throws Error naming the graph, the node and its opset, then `why`.
[[noreturn]] void refuse(const Graph& g, const Node& n, const std::string& why);
// A tensor as the GPU holds it: float types as float32 bits, the others as int32 (refusing values outside).
std::vector<uint32_t> toWords(const Tensor& t, const std::string& what);
// Whether `from` broadcasts to `to` (numpy rules: aligned at the last axis, each axis equal or 1).
bool broadcastsTo(const Shape& from, const Shape& to);

// ---- Lowering ----

// Thrown while planning when a value that must be a constant (a shape, axes, a fold) is computed from small
// graph inputs: the plan is made again with those inputs' values as part of its key.
struct NeedsKey {
  std::set<std::string> inputs;
};

// Inputs of up to this many elements may become part of a plan's key.
inline constexpr int64_t kMaxKeyedElements = 1024;

// Every value's element type and shape (the planning dry run's).
using ValueTypes = std::map<std::string, std::pair<DType, Shape>>;

// First-fit allocator over words of the arena, in 256-byte units, merging neighbouring freed ranges.
struct Allocator {
  std::map<uint64_t, uint64_t> free;  // offset -> size
  uint64_t high = 0;                  // the arena's size so far
  // The lowest free range that fits, else fresh space at the end.
  uint64_t take(uint64_t n);
  // Fresh space at the end.
  uint64_t bump(uint64_t n);
  // Gives back a range `take` or `bump` returned.
  void give(uint64_t at, uint64_t n);
};

// Builds the dispatches of one plan; knows the slots of every value. The planning passes (vulkan_plan.h)
// fill in what it reads besides the slots: which products have an activation in their epilogue, which map
// nodes are composed into their readers, which are read as strided views, and the fused chains.
class Lowering {
 public:
  Lowering(const Graph& g, Plan& plan) : g_(g), plan_(plan) {}

  // Which values are static, from the graph alone: initializers, Shape's output, and the outputs of nodes
  // whose inputs are all static.
  static std::set<std::string> staticValues(const Graph& g, const std::set<std::string>& keyed);

  // Throws NeedsKey when every graph input the values come from is small (and not keyed yet); returns
  // otherwise (the caller refuses).
  void keyOrRefuse(const Node& n, const std::vector<std::string>& values);
  std::map<std::string, int64_t> sizes_;  // element counts of the graph inputs
  std::map<std::string, uint32_t>
      acts_;  // matrix product output -> activation fused into it (1 relu, 2 sigmoid, 3 tanh)

  // A constant of the plan (uploaded once), returning its offset. Always fresh space: a range freed earlier
  // in the plan is written by the values that held it when the plan runs.
  uint64_t constant(std::vector<uint32_t> words);
  uint64_t allocate(uint64_t words) { return alloc_.take(std::max<uint64_t>(words, 1)); }
  void release(uint64_t at, uint64_t words) { alloc_.give(at, std::max<uint64_t>(words, 1)); }
  uint64_t high() const { return alloc_.high; }

  // Appends node `n`'s dispatches (its outputs' slots placed) to the plan.
  void lower(const Node& n, const ValueTypes& info);

  // Where each element of a value comes from: its sources, and per element 1 + (source << 28 | index) into
  // them, 0 for a fill value.
  struct Sources {
    std::vector<std::string> sources;
    std::vector<int64_t> entries;  // 1 + (source << 28 | index), 0: fill; empty when identity
    bool identity = false;         // the value's own elements, in order (one source)
  };
  std::map<std::string, const Node*>
      absorbed_;  // stored value -> the map node that would write it, composed into its reader
  std::map<const Node*, std::vector<const Node*>>
      chains_;  // last node of a fused elementwise chain -> the chain, in order
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
  std::string broadcastSource(const std::string& name) const;
  std::map<std::string, Shape> shapes_;  // values' shapes (the dry run's), for broadcastSource
  // The maps of a map node's outputs composed through the maps absorbed into it (computeMaps, then compose
  // with the sources of its inputs), made once per plan: the view pass, dead-node elimination, the waves and
  // the lowering all read them. Valid once absorbed_ is final.
  struct ComposedMaps {
    uint32_t fill = 0;             // Pad's (or Resize's) fill value, 0 when it writes none
    std::vector<Sources> outputs;  // per output: 1 + (source << 28 | index) into its sources per element
  };
  const ComposedMaps& composedMaps(const Node& n, const ValueTypes& info);
  // Output `output`'s composed map, or null when the node writes a fill value.
  const Sources* composedMap(const Node& n, size_t output, const ValueTypes& info);
  std::function<std::string(const std::string&)> root_;  // alias -> the value whose storage it shares

 private:
  uint32_t newParams(size_t words);
  uint32_t& param(uint32_t base, size_t k) { return plan_.params[base + k]; }
  void dispatch(Kernel k, uint32_t base, uint64_t count, const Node& n);
  // The slot of value `name` (which must exist).
  const Slot& slot(const Node& n, const std::string& name);
  uint32_t off(const Node& n, const std::string& name);
  const Tensor& staticValue(const Node& n, size_t k, const char* what);

  void eltwise(const Node& n, uint32_t op, std::span<const std::string> ins, float alpha = 0, float beta = 0);
  void mapped(const Node& n, const ValueTypes& info);
  std::vector<std::vector<int64_t>> computeMaps(const Node& n, const ValueTypes& info,
                                                std::vector<std::string>& names, uint32_t& fill);
  Sources sourcesOf(const std::string& value, const ValueTypes& info);
  Sources compose(const Node& n, const std::vector<int64_t>& map, const std::vector<Sources>& inputs);
  Sources composeAll(const Node& n, const std::vector<int64_t>& map, const std::vector<Sources>& inputs);
  void fusedChain(const Node& tip, const ValueTypes& info);
  // How an elementwise kernel reads `name` for an output of `dims`: word offset, type, strides per axis.
  struct Operand {
    uint32_t offset = 0;
    DType dtype = DType::kFloat32;
    std::vector<int64_t> strides;
  };
  Operand operand(const Node& n, const std::string& name, const Shape& dims);
  void gemm(const Node& n, bool is_gemm);
  void conv(const Node& n);
  // MaxPool, AveragePool and ConvTranspose (shaders/nn_window.comp): the CPU kernels' window geometry.
  void window(const Node& n);
  void reduce(const Node& n, uint32_t kind);
  void softmax(const Node& n);
  // A parameter block of `words` for shaders/nn_softmax.comp, its first words filled: `mode`, the node's
  // first output and input, the input's type, then outer, axis length and inner (rows of outer x inner).
  uint32_t rowParams(const Node& n, size_t words, uint32_t mode, DType type, int64_t outer, int64_t len,
                     int64_t inner);
  void gather(const Node& n, const ValueTypes& info);
  void gridSample(const Node& n);
  void resize(const Node& n, const ValueTypes& info);
  void batchNorm(const Node& n);
  void clip(const Node& n);
  void extremum(const Node& n, const ValueTypes& info);
  void normalise(const Node& n);
  void einsum(const Node& n);
  // A reduction of `input` over `red` (its strides `rs`) for each element of `kept` (strides `ks`), written
  // in kept's row-major order: the Reduce* family and one-operand Einsum.
  void stridedReduce(const Node& n, uint32_t kind, const std::string& input, Shape kept,
                     std::vector<int64_t> ks, Shape red, std::vector<int64_t> rs);
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
  void fusedProgram(const Node& tip, const std::vector<std::string>& inputs,
                    const std::vector<std::array<uint32_t, 6>>& program);

  const Graph& g_;
  Plan& plan_;
  Allocator alloc_;
  std::map<const Node*, ComposedMaps> composed_;
};

}  // namespace sf::nn::vulkan
