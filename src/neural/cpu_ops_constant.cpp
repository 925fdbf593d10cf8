// Operators that make tensors from attributes and scalars (cpu_ops_kernels.h): Constant, ConstantOfShape,
// Range.
#include <algorithm>
#include <cmath>

#include "neural/cpu_ops_kernels.h"

namespace sf::nn::cpu {

Outputs opConstant(const Ctx& c) {
  const Node& n = c.node;
  if (const Attribute* a = n.attr("value")) {
    if (a->kind != Attribute::Kind::kTensor) c.fail("attribute value is not a tensor");
    return one(a->t);
  }
  if (n.attr("value_float")) {
    Tensor y(DType::kFloat32, {});
    y.f[0] = n.attrFloat("value_float", 0);
    return one(std::move(y));
  }
  if (n.attr("value_int")) {
    Tensor y(DType::kInt64, {});
    y.i[0] = n.attrInt("value_int", 0);
    return one(std::move(y));
  }
  if (n.attr("value_floats")) {
    std::vector<float> v = n.attrFloats("value_floats");
    Tensor y(DType::kFloat32, {static_cast<int64_t>(v.size())});
    y.f = std::move(v);
    return one(std::move(y));
  }
  if (n.attr("value_ints")) {
    std::vector<int64_t> v = n.attrInts("value_ints");
    Tensor y(DType::kInt64, {static_cast<int64_t>(v.size())});
    y.i = std::move(v);
    return one(std::move(y));
  }
  c.fail("has no value attribute (value, value_float(s) or value_int(s))");
}

Outputs opConstantOfShape(const Ctx& c) {
  Shape shape = c.ints(c.in(0), "shape");
  for (int64_t d : shape)
    if (d < 0) c.fail("shape " + shapeString(shape) + " has a negative dimension");
  Tensor value(DType::kFloat32, {1});
  if (const Attribute* a = c.node.attr("value")) {
    if (a->kind != Attribute::Kind::kTensor || a->t.numel() != 1)
      c.fail("attribute value must be a one-element tensor");
    value = a->t;
  }
  Tensor y = c.output(value.dtype, shape);
  if (y.isFloat()) {
    std::fill(y.f.begin(), y.f.end(), value.f[0]);
  } else {
    std::fill(y.i.begin(), y.i.end(), value.i[0]);
  }
  return one(std::move(y));
}

Outputs opRange(const Ctx& c) {
  const Tensor& start = c.in(0);
  const Tensor& limit = c.in(1);
  const Tensor& delta = c.in(2);
  c.sameType(start, limit, "start and limit");
  c.sameType(start, delta, "start and delta");
  c.scalar(start, "start");
  c.scalar(limit, "limit");
  c.scalar(delta, "delta");
  if (start.isFloat()) {
    const double s = start.f[0], l = limit.f[0], d = delta.f[0];
    if (d == 0) c.fail("delta is 0");
    const double count = std::max(std::ceil((l - s) / d), 0.0);
    if (!(count <= static_cast<double>(kMaxTensorElements))) c.fail("more than 2^40 elements");
    Tensor y = c.output(start.dtype, {static_cast<int64_t>(count)});
    for (size_t k = 0; k < y.f.size(); ++k) y.f[k] = static_cast<float>(s + static_cast<double>(k) * d);
    return one(std::move(y));
  }
  if (start.dtype == DType::kBool || start.dtype == DType::kUInt64)
    c.fail("element type " + dtypeName(start.dtype) + " is not supported");
  const int64_t s = start.i[0], l = limit.i[0], d = delta.i[0];
  if (d == 0) c.fail("delta is 0");
  // ceil((l - s) / d) in unsigned arithmetic: the distance between two int64 values fits in uint64.
  uint64_t count = 0;
  if ((d > 0 && l > s) || (d < 0 && l < s)) {
    const uint64_t distance = d > 0 ? static_cast<uint64_t>(l) - static_cast<uint64_t>(s)
                                    : static_cast<uint64_t>(s) - static_cast<uint64_t>(l);
    const uint64_t step = d > 0 ? static_cast<uint64_t>(d) : uint64_t{0} - static_cast<uint64_t>(d);
    count = distance / step + (distance % step != 0 ? 1 : 0);
  }
  if (count > static_cast<uint64_t>(kMaxTensorElements)) c.fail("more than 2^40 elements");
  Tensor y = c.output(start.dtype, {static_cast<int64_t>(count)});
  for (size_t k = 0; k < y.i.size(); ++k)
    y.i[k] = wrapToIntType(wrapAdd(s, wrapMul(static_cast<int64_t>(k), d)), start.dtype);
  return one(std::move(y));
}

}  // namespace sf::nn::cpu
