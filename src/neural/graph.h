// An ONNX model as the neural layer holds it: the main graph's nodes in file order (ONNX requires
// topological order), initializers, declared inputs and outputs with their shapes, and the opset. Loaded
// from the protobuf bytes (onnx_model.cpp, the only unit that sees protobuf) into these plain structs.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "neural/tensor.h"

namespace sf::nn {

struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings, kGraph, kOther };
  Kind kind = Kind::kOther;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string name;  // may be empty in the file; the loader names it "<op_type>_<index>" then
  std::string op_type;
  std::string domain;               // "" or "ai.onnx" for the default domain
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;

  const Attribute* attr(const std::string& key) const {
    auto it = attributes.find(key);
    return it == attributes.end() ? nullptr : &it->second;
  }
  // Attribute values with defaults; a present attribute of another kind throws naming the node.
  int64_t attrInt(const std::string& key, int64_t fallback) const;
  float attrFloat(const std::string& key, float fallback) const;
  std::string attrString(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attrInts(const std::string& key, const std::vector<int64_t>& fallback = {}) const;
  std::vector<float> attrFloats(const std::string& key, const std::vector<float>& fallback = {}) const;
  // "node 'name' (OpType)", for messages.
  std::string describe() const;
};

// A declared graph input or output. Dimensions: a value >= 0, or -1 with the symbolic name in dim_names.
struct ValueInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;
  std::vector<std::string> dim_names;
  bool has_shape = false;
};

struct Graph {
  std::string path;  // the file it came from, for messages
  int64_t ir_version = 0;
  int64_t opset = 0;  // of the default domain
  std::string producer;
  std::map<std::string, std::string> metadata;  // metadata_props
  std::vector<ValueInfo> inputs;                // graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
  std::map<std::string, Tensor> initializers;
  std::vector<Node> nodes;
};

// Loads an ONNX model from its bytes. Throws FormatError naming `path` for bytes that are not a model,
// tensors whose data does not match their declared shape, external data, and totals over the load limits
// (core/limits.h) before allocating them.
Graph loadOnnx(std::span<const uint8_t> bytes, const std::string& path);
Graph loadOnnxFile(const std::string& path);

// A serialized TensorProto (the input_N.pb / output_N.pb files of ONNX's test data).
Tensor loadTensorProto(std::span<const uint8_t> bytes, const std::string& path);
Tensor loadTensorProtoFile(const std::string& path);

}  // namespace sf::nn
