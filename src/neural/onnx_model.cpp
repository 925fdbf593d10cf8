// ONNX protobuf -> the plain IR of graph.h. The only translation unit that includes protobuf headers, so
// their compile cost and types stay here. Every tensor's data is checked against its declared shape, and
// totals against the load limits, before anything is allocated from them.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/limits.h"
#include "io/file.h"
#include "neural/graph.h"

namespace sf::nn {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& where, const std::string& reason) {
  throw FormatError(path, 0, where + ": " + reason);
}

// Shape of a TensorProto, checked: non-negative dims whose product fits the load limits.
Shape tensorShape(const onnx::TensorProto& t, const std::string& path, const std::string& where) {
  Shape shape(t.dims().begin(), t.dims().end());
  int64_t n = 0;
  try {
    n = elementCount(shape);  // negative dimensions, more than 2^40 elements (zero-element shapes included)
  } catch (const Error& e) {
    fail(path, where, e.what());
  }
  checkByteBudget(path, static_cast<uint64_t>(n) * 8, where + " (" + shapeString(shape) + ")");
  return shape;
}

// Bytes per element of the raw_data encoding of `type`.
size_t rawElementBytes(DType type) {
  switch (type) {
    case DType::kFloat64:
    case DType::kInt64:
    case DType::kUInt64:
      return 8;
    case DType::kFloat32:
    case DType::kInt32:
    case DType::kUInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
    case DType::kUInt16:
      return 2;
    default:
      return 1;
  }
}

float halfBitsToFloat(uint16_t h, bool bfloat) {
  if (bfloat) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  // IEEE binary16.
  const uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

// Element k of little-endian raw data of `type`, into the tensor's storage.
void storeRaw(Tensor& out, size_t k, const uint8_t* p) {
  auto load = [p](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (out.dtype) {
    case DType::kFloat32:
      out.f[k] = load(float{});
      break;
    case DType::kFloat64:
      out.f[k] = static_cast<float>(load(double{}));
      break;
    case DType::kFloat16:
      out.f[k] = halfBitsToFloat(load(uint16_t{}), false);
      break;
    case DType::kBFloat16:
      out.f[k] = halfBitsToFloat(load(uint16_t{}), true);
      break;
    case DType::kInt8:
      out.i[k] = load(int8_t{});
      break;
    case DType::kUInt8:
      out.i[k] = load(uint8_t{});
      break;
    case DType::kInt16:
      out.i[k] = load(int16_t{});
      break;
    case DType::kUInt16:
      out.i[k] = load(uint16_t{});
      break;
    case DType::kInt32:
      out.i[k] = load(int32_t{});
      break;
    case DType::kUInt32:
      out.i[k] = load(uint32_t{});
      break;
    case DType::kInt64:
      out.i[k] = load(int64_t{});
      break;
    case DType::kUInt64:
      out.i[k] = static_cast<int64_t>(load(uint64_t{}));
      break;
    case DType::kBool:
      out.i[k] = load(uint8_t{}) != 0;
      break;
    default:
      break;
  }
}

Tensor convertTensor(const onnx::TensorProto& t, const std::string& path, const std::string& where) {
  const auto type = static_cast<DType>(t.data_type());
  if (!isSupportedType(type)) fail(path, where, "element type " + dtypeName(type) + " is not supported");
  if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
    fail(path, where, "external tensor data is not supported (save the model with its weights inside)");
  if (t.has_segment()) fail(path, where, "segmented tensors are not supported");
  Tensor out;
  out.dtype = type;
  out.shape = tensorShape(t, path, where);
  const auto n = static_cast<size_t>(elementCount(out.shape));
  auto count_mismatch = [&](size_t have, const char* field) {
    fail(path, where,
         std::string(field) + " holds " + std::to_string(have) + " values for shape " +
             shapeString(out.shape));
  };
  // The values the file holds are counted before anything is allocated for the declared shape, so a few
  // bytes declaring a large shape cannot make the loader allocate it.
  const size_t bytes = rawElementBytes(type);
  size_t held = 0;
  const char* field = "raw_data";
  if (t.has_raw_data())
    held = t.raw_data().size() / bytes;
  else if (type == DType::kFloat32)
    held = static_cast<size_t>(t.float_data_size()), field = "float_data";
  else if (type == DType::kFloat64)
    held = static_cast<size_t>(t.double_data_size()), field = "double_data";
  else if (type == DType::kInt64)
    held = static_cast<size_t>(t.int64_data_size()), field = "int64_data";
  else if (type == DType::kUInt32 || type == DType::kUInt64)
    held = static_cast<size_t>(t.uint64_data_size()), field = "uint64_data";
  else
    held = static_cast<size_t>(t.int32_data_size()), field = "int32_data";
  if (held != n || (t.has_raw_data() && t.raw_data().size() != n * bytes)) count_mismatch(held, field);
  if (isFloatType(type))
    out.f.resize(n);
  else
    out.i.resize(n);
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    const auto* p = reinterpret_cast<const uint8_t*>(raw.data());
    for (size_t k = 0; k < n; ++k) storeRaw(out, k, p + k * bytes);
    return out;
  }
  switch (type) {
    case DType::kFloat32:
      for (size_t k = 0; k < n; ++k) out.f[k] = t.float_data(static_cast<int>(k));
      break;
    case DType::kFloat64:
      for (size_t k = 0; k < n; ++k) out.f[k] = static_cast<float>(t.double_data(static_cast<int>(k)));
      break;
    case DType::kInt64:
      for (size_t k = 0; k < n; ++k) out.i[k] = t.int64_data(static_cast<int>(k));
      break;
    case DType::kUInt32:
    case DType::kUInt64:
      for (size_t k = 0; k < n; ++k) out.i[k] = static_cast<int64_t>(t.uint64_data(static_cast<int>(k)));
      break;
    default:  // int32_data holds every narrower type, float16/bfloat16 as their bit patterns
      for (size_t k = 0; k < n; ++k) {
        const int32_t v = t.int32_data(static_cast<int>(k));
        if (type == DType::kFloat16 || type == DType::kBFloat16)
          out.f[k] = halfBitsToFloat(static_cast<uint16_t>(v), type == DType::kBFloat16);
        else if (type == DType::kBool)
          out.i[k] = v != 0;
        else
          out.i[k] = wrapToIntType(v, type);
      }
  }
  return out;
}

ValueInfo convertValueInfo(const onnx::ValueInfoProto& v) {
  ValueInfo out;
  out.name = v.name();
  if (!v.type().has_tensor_type()) return out;
  const auto& tt = v.type().tensor_type();
  out.dtype = static_cast<DType>(tt.elem_type());
  if (!tt.has_shape()) return out;
  out.has_shape = true;
  for (const auto& d : tt.shape().dim()) {
    out.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    out.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
  }
  return out;
}

Attribute convertAttribute(const onnx::AttributeProto& a, const std::string& path, const std::string& where) {
  Attribute out;
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::FLOAT:
      out.kind = Attribute::Kind::kFloat, out.f = a.f();
      break;
    case A::INT:
      out.kind = Attribute::Kind::kInt, out.i = a.i();
      break;
    case A::STRING:
      out.kind = Attribute::Kind::kString, out.s = a.s();
      break;
    case A::TENSOR:
      out.kind = Attribute::Kind::kTensor, out.t = convertTensor(a.t(), path, where);
      break;
    case A::FLOATS:
      out.kind = Attribute::Kind::kFloats, out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case A::INTS:
      out.kind = Attribute::Kind::kInts, out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case A::STRINGS:
      out.kind = Attribute::Kind::kStrings, out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case A::GRAPH:
    case A::GRAPHS:
      out.kind = Attribute::Kind::kGraph;
      break;
    default:
      out.kind = Attribute::Kind::kOther;
  }
  return out;
}

}  // namespace

Graph loadOnnx(std::span<const uint8_t> bytes, const std::string& path) {
  checkByteBudget(path, bytes.size() * 2, "ONNX model");
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw FormatError(path, 0,
                      "ONNX models over 2 GiB keep their weights as external data, which is not supported");
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw FormatError(path, 0, "not an ONNX model (the protobuf message does not parse)");
  if (!model.has_graph()) throw FormatError(path, 0, "not an ONNX model (no graph)");
  Graph g;
  g.path = path;
  g.ir_version = model.ir_version();
  g.producer =
      model.producer_name() + (model.producer_version().empty() ? "" : " " + model.producer_version());
  for (const auto& op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") g.opset = op.version();
  if (g.opset == 0 && model.opset_import_size() == 0)
    g.opset = 1;  // IR version 2 models carry no opset import
  for (const auto& kv : model.metadata_props()) g.metadata[kv.key()] = kv.value();
  const onnx::GraphProto& graph = model.graph();
  uint64_t total = 0;
  for (int k = 0; k < graph.initializer_size(); ++k) {
    const auto& t = graph.initializer(k);
    const std::string where = "graph.initializer[" + std::to_string(k) + "] '" + t.name() + "'";
    Tensor tensor = convertTensor(t, path, where);
    total += static_cast<uint64_t>(tensor.numel()) * (tensor.isFloat() ? 4 : 8);
    checkByteBudget(path, total, "initializers");
    g.initializers[t.name()] = std::move(tensor);
  }
  if (graph.sparse_initializer_size() > 0)
    throw FormatError(path, 0, "graph.sparse_initializer: sparse initializers are not supported");
  for (const auto& v : graph.input())
    if (!g.initializers.count(v.name())) g.inputs.push_back(convertValueInfo(v));
  for (const auto& v : graph.output()) g.outputs.push_back(convertValueInfo(v));
  std::set<std::string> names;
  for (int k = 0; k < graph.node_size(); ++k) {
    const auto& n = graph.node(k);
    Node node;
    node.op_type = n.op_type();
    node.domain = n.domain();
    node.name = n.name().empty() ? n.op_type() + "_" + std::to_string(k) : n.name();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    const std::string where =
        "graph.node[" + std::to_string(k) + "] '" + node.name + "' (" + node.op_type + ")";
    for (const auto& a : n.attribute())
      node.attributes[a.name()] = convertAttribute(a, path, where + " attribute '" + a.name() + "'");
    g.nodes.push_back(std::move(node));
  }
  return g;
}

Graph loadOnnxFile(const std::string& path) {
  return loadOnnx(readFile(path), path);
}

Tensor loadTensorProto(std::span<const uint8_t> bytes, const std::string& path) {
  checkByteBudget(path, bytes.size() * 2, "tensor");
  onnx::TensorProto t;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw FormatError(path, 0, "not a serialized ONNX TensorProto");
  return convertTensor(t, path, "tensor '" + t.name() + "'");
}

Tensor loadTensorProtoFile(const std::string& path) {
  return loadTensorProto(readFile(path), path);
}

}  // namespace sf::nn
