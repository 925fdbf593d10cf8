// Small builders the neural tests share: tensors from literal values and node attributes.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "neural/graph.h"
#include "neural/tensor.h"

namespace sf::nn::optest {

inline Tensor floats(Shape shape, std::vector<float> values, DType type = DType::kFloat32) {
  Tensor t(type, std::move(shape));
  EXPECT_EQ(t.f.size(), values.size());
  t.f = std::move(values);
  return t;
}

inline Tensor ints(Shape shape, std::vector<int64_t> values, DType type = DType::kInt64) {
  Tensor t(type, std::move(shape));
  EXPECT_EQ(t.i.size(), values.size());
  t.i = std::move(values);
  return t;
}

inline Attribute intAttr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}
inline Attribute floatAttr(float v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = v;
  return a;
}
inline Attribute stringAttr(const std::string& v) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = v;
  return a;
}
inline Attribute intsAttr(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

// A node of one output.
inline Node node(const char* name, const char* op, std::vector<std::string> inputs, const char* output) {
  Node n;
  n.name = name, n.op_type = op, n.inputs = std::move(inputs), n.outputs = {output};
  return n;
}

}  // namespace sf::nn::optest
