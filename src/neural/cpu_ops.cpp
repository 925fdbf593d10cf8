// The CPU executor's operator table (cpu_ops.h): every operator of the default ONNX domain it runs, with the
// oldest opset whose semantics its kernel implements, the attributes the kernel reads (by opset), what is
// not supported and the operator's own load-time check; and the load-time check of a node against it. The
// kernels live one file per family, declared in cpu_ops_kernels.h: elementwise unary (cpu_ops_unary.cpp)
// and binary (cpu_ops_binary.cpp), matrix products (cpu_ops_matmul.cpp), shapes and data movement
// (cpu_ops_shape.cpp), constants (cpu_ops_constant.cpp), reductions and Softmax (cpu_ops_reduce.cpp), Cast
// (cpu_ops_cast.cpp), convolution, pooling and batch normalisation (cpu_ops_conv.cpp), layer and instance
// normalisation (cpu_ops_norm.cpp), Einsum (cpu_ops_einsum.cpp), sampling (cpu_ops_sampling.cpp); what they
// share is in cpu_ops_common.h.
#include "neural/cpu_ops.h"

#include <algorithm>
#include <iterator>

#include "neural/cpu_ops_kernels.h"

namespace sf::nn::cpu {
namespace {

// Runs `kernel` and rounds float16 / bfloat16 outputs to their precision (kernels compute in float32).
Outputs runKernel(Outputs (*kernel)(const Ctx&), const Node& node, Inputs inputs, int64_t opset) {
  const Ctx c{node, inputs, opset};
  // Inputs come from files and callers: their shapes must be valid (elementCount) and match their storage
  // before any kernel indexes them.
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k]) continue;
    const Tensor& t = *inputs[k];
    if (!isSupportedType(t.dtype))
      c.fail("input " + std::to_string(k) + " is of unsupported type " + dtypeName(t.dtype));
    const auto n = static_cast<size_t>(c.count(t.shape));
    if ((t.isFloat() ? t.f.size() : t.i.size()) != n)
      c.fail("input " + std::to_string(k) + " holds " +
             std::to_string(t.isFloat() ? t.f.size() : t.i.size()) + " values for shape " +
             shapeString(t.shape));
  }
  Outputs out = kernel(c);
  for (Tensor& t : out)
    if (t.dtype == DType::kFloat16 || t.dtype == DType::kBFloat16)
      for (float& v : t.f) v = roundToFloatType(v, t.dtype);
  return out;
}

// Kernel K as a CpuKernel (the table's entries): one shared body, so the table costs little to compile.
template <Outputs (*K)(const Ctx&)>
Outputs run(const Node& node, Inputs inputs, int64_t opset) {
  return runKernel(K, node, inputs, opset);
}

// Attribute lists: a name alone is read at every opset, "name<N" only before opset N, "name>=N" from N on
// (where an attribute became an input, or was added).
const OpInfo kOps[] = {
    {"Abs", 6, run<opAbs>, "", ""},
    {"Add", 7, run<opAdd>, "", ""},
    {"And", 7, run<opAnd>, "", ""},
    {"AveragePool", 7, run<opAveragePool>, "N-D windows",
     "auto_pad ceil_mode>=10 count_include_pad kernel_shape pads strides dilations>=19", checkPool},
    {"BatchNormalization", 9, run<opBatchNormalization>,
     "inference only: training_mode = 1 and the running-statistics outputs are refused",
     "epsilon momentum training_mode>=14", checkBatchNormalization},
    {"Cast", 6, run<opCast>,
     "no bfloat16 target (its rounding is unspecified; ONNX's test data truncates); no string or float8 "
     "types",
     "to saturate>=19", checkCast},
    {"Ceil", 6, run<opCeil>, "", ""},
    {"Clip", 6, run<opClip>, "", "min<11 max<11"},
    {"Concat", 4, run<opConcat>, "", "axis"},
    {"Constant", 1, run<opConstant>, "value, value_float(s), value_int(s); no sparse or string values",
     "value value_float>=12 value_floats>=12 value_int>=12 value_ints>=12"},
    {"ConstantOfShape", 9, run<opConstantOfShape>, "", "value"},
    {"Conv", 1, run<opConv>, "N-D, any group", "auto_pad dilations group kernel_shape pads strides",
     checkConv},
    {"ConvTranspose", 1, run<opConvTranspose>, "N-D, any group",
     "auto_pad dilations group kernel_shape output_padding output_shape pads strides", checkConv},
    {"Cos", 7, run<opCos>, "", ""},
    {"Div", 7, run<opDiv>, "", ""},
    {"Einsum", 12, run<opEinsum>, "", "equation", checkEinsum},
    {"Equal", 7, run<opEqual>, "", ""},
    {"Erf", 9, run<opErf>, "", ""},
    {"Exp", 6, run<opExp>, "", ""},
    {"Expand", 8, run<opExpand>, "", ""},
    {"Flatten", 1, run<opFlatten>, "", "axis"},
    {"Floor", 6, run<opFloor>, "", ""},
    {"Gather", 1, run<opGather>, "", "axis"},
    {"Gemm", 7, run<opGemm>, "float types", "alpha beta transA transB"},
    {"Greater", 7, run<opGreater>, "", ""},
    {"GridSample", 16, run<opGridSample>, "4-D input", "align_corners mode padding_mode", checkGridSample},
    {"Identity", 1, run<opIdentity>, "tensors (no sequences or optionals)", ""},
    {"InstanceNormalization", 6, run<opInstanceNormalization>, "", "epsilon"},
    {"LayerNormalization", 17, run<opLayerNormalization>, "stash_type 1 (float32 statistics)",
     "axis epsilon stash_type", checkLayerNormalization},
    {"LeakyRelu", 6, run<opLeakyRelu>, "", "alpha"},
    {"Less", 7, run<opLess>, "", ""},
    {"Log", 6, run<opLog>, "", ""},
    {"MatMul", 1, run<opMatMul>, "", ""},
    {"Max", 8, run<opMax>, "", ""},
    {"MaxPool", 1, run<opMaxPool>, "N-D windows, Indices output",
     "auto_pad ceil_mode>=10 dilations>=10 kernel_shape pads storage_order>=8 strides", checkPool},
    {"Min", 8, run<opMin>, "", ""},
    {"Mul", 7, run<opMul>, "", ""},
    {"Neg", 6, run<opNeg>, "", ""},
    {"Not", 1, run<opNot>, "", ""},
    {"Or", 7, run<opOr>, "", ""},
    {"Pad", 2, run<opPad>, "constant, edge, reflect, wrap", "mode pads<11 value<11", checkPad},
    {"Pow", 7, run<opPow>, "", ""},
    {"Range", 11, run<opRange>, "", ""},
    {"Reciprocal", 6, run<opReciprocal>, "", ""},
    {"ReduceL1", 1, run<opReduceL1>, "", "axes<18 keepdims noop_with_empty_axes>=18"},
    {"ReduceL2", 1, run<opReduceL2>, "", "axes<18 keepdims noop_with_empty_axes>=18"},
    {"ReduceLogSum", 1, run<opReduceLogSum>, "float types", "axes<18 keepdims noop_with_empty_axes>=18"},
    {"ReduceLogSumExp", 1, run<opReduceLogSumExp>, "float types",
     "axes<18 keepdims noop_with_empty_axes>=18"},
    {"ReduceMax", 1, run<opReduceMax>, "", "axes<18 keepdims noop_with_empty_axes>=18"},
    {"ReduceMean", 1, run<opReduceMean>, "", "axes<18 keepdims noop_with_empty_axes>=18"},
    {"ReduceMin", 1, run<opReduceMin>, "", "axes<18 keepdims noop_with_empty_axes>=18"},
    {"ReduceProd", 1, run<opReduceProd>, "", "axes<18 keepdims noop_with_empty_axes>=18"},
    {"ReduceSum", 1, run<opReduceSum>, "", "axes<13 keepdims noop_with_empty_axes>=13"},
    {"ReduceSumSquare", 1, run<opReduceSumSquare>, "", "axes<18 keepdims noop_with_empty_axes>=18"},
    {"Relu", 6, run<opRelu>, "", ""},
    {"Reshape", 5, run<opReshape>, "", "allowzero>=14"},
    {"Resize", 11, run<opResize>,
     "nearest, linear, cubic (N-D); no antialias, axes or keep_aspect_ratio_policy",
     "antialias>=18 axes>=18 coordinate_transformation_mode cubic_coeff_a exclude_outside "
     "extrapolation_value "
     "keep_aspect_ratio_policy>=18 mode nearest_mode",
     checkResize},
    {"ScatterND", 11, run<opScatterND>, "", "reduction>=16", checkScatterND},
    {"Shape", 1, run<opShape>, "", "end>=15 start>=15"},
    {"Sigmoid", 6, run<opSigmoid>, "", ""},
    {"Sin", 7, run<opSin>, "", ""},
    {"Slice", 1, run<opSlice>, "", "axes<10 ends<10 starts<10"},
    {"Softmax", 1, run<opSoftmax>, "", "axis"},
    {"Split", 2, run<opSplit>, "", "axis num_outputs>=18 split<13"},
    {"Sqrt", 6, run<opSqrt>, "", ""},
    {"Squeeze", 1, run<opSqueeze>, "", "axes<13"},
    {"Sub", 7, run<opSub>, "", ""},
    {"Tanh", 6, run<opTanh>, "", ""},
    {"Tile", 6, run<opTile>, "", ""},
    {"Transpose", 1, run<opTranspose>, "", "perm"},
    {"Unsqueeze", 1, run<opUnsqueeze>, "", "axes<13"},
    {"Where", 9, run<opWhere>, "", ""},
};

// Whether `name` is one of the space-separated entries of `list` that apply at `opset`; `known` tells
// whether it is listed at all (for a clearer message).
bool attributeAllowed(const char* list, const std::string& name, int64_t opset, bool* known) {
  const std::string s = list;
  size_t at = 0;
  while (at < s.size()) {
    size_t end = s.find(' ', at);
    if (end == std::string::npos) end = s.size();
    const std::string entry = s.substr(at, end - at);
    at = end + 1;
    const size_t cmp = entry.find_first_of("<>");
    if (entry.substr(0, cmp) != name) continue;
    *known = true;
    if (cmp == std::string::npos) return true;
    if (entry[cmp] == '<') return opset < std::stoll(entry.substr(cmp + 1));
    return opset >= std::stoll(entry.substr(cmp + 2));  // ">=N"
  }
  return false;
}

}  // namespace
}  // namespace sf::nn::cpu

namespace sf::nn {

std::span<const OpInfo> cpuOps() {
  return cpu::kOps;
}

const OpInfo* findCpuOp(const std::string& op_type) {
  auto it = std::lower_bound(std::begin(cpu::kOps), std::end(cpu::kOps), op_type,
                             [](const OpInfo& op, const std::string& name) { return op.op_type < name; });
  return it != std::end(cpu::kOps) && it->op_type == op_type ? &*it : nullptr;
}

void checkCpuNode(const Node& node, int64_t opset) {
  if (!node.domain.empty() && node.domain != "ai.onnx")
    cpu::nodeError(node, opset,
                   "domain '" + node.domain + "' is not supported (only the default ONNX domain)");
  const OpInfo* op = findCpuOp(node.op_type);
  if (!op) cpu::nodeError(node, opset, "operator " + node.op_type + " is not supported by the CPU executor");
  if (opset < op->min_opset)
    cpu::nodeError(
        node, opset,
        "the CPU kernel implements " + node.op_type + " from opset " + std::to_string(op->min_opset) + " on");
  for (const auto& entry : node.attributes) {
    bool known = false;
    if (!cpu::attributeAllowed(op->attributes, entry.first, opset, &known))
      cpu::nodeError(node, opset,
                     "attribute " + entry.first + " is not supported by the CPU kernel" +
                         (known ? " at this opset" : ""));
  }
  if (op->check) op->check(node, opset);
}

}  // namespace sf::nn
