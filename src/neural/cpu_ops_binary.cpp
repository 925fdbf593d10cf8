// Elementwise binary operators with numpy's multidirectional broadcasting (cpu_ops_kernels.h): arithmetic,
// Pow, comparisons, logical operators, Where and the variadic Max and Min, all strided walks over the
// broadcast output.
#include <algorithm>
#include <cmath>

#include "neural/cpu_ops_kernels.h"

namespace sf::nn::cpu {

namespace {

template <class F>
void binaryWalk(const Shape& shape, const Tensor& a, const Tensor& b, F&& f) {
  walk<2>(shape, {broadcastStrides(a.shape, shape), broadcastStrides(b.shape, shape)},
          [&](int64_t k, const std::array<int64_t, 2>& o) { f(k, o[0], o[1]); });
}

// Arithmetic on two tensors of one numeric type: float math in float32, integer math wrapping.
template <class F, class I>
Outputs binaryNumeric(const Ctx& c, F ffn, I ifn) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  c.sameType(a, b, "inputs");
  if (a.dtype == DType::kBool) c.fail("inputs must be numeric, not bool");
  const Shape shape = broadcastShapes(c, a.shape, b.shape);
  Tensor y = c.output(a.dtype, shape);
  if (a.isFloat()) {
    binaryWalk(shape, a, b, [&](int64_t k, int64_t i, int64_t j) { y.f[k] = ffn(a.f[i], b.f[j]); });
  } else {
    binaryWalk(shape, a, b, [&](int64_t k, int64_t i, int64_t j) {
      y.i[k] = wrapToIntType(ifn(a.i[i], b.i[j]), a.dtype);
    });
  }
  return one(std::move(y));
}

// Integer power by squaring, wrapping; a negative exponent truncates 1 / a^-e toward zero.
int64_t intPow(const Ctx& c, int64_t base, int64_t e) {
  if (e < 0) {
    if (base == 0) c.fail("integer power: 0 to a negative exponent");
    if (base == 1) return 1;
    if (base == -1) return (e & 1) ? -1 : 1;
    return 0;
  }
  int64_t r = 1;
  while (e > 0) {
    if (e & 1) r = wrapMul(r, base);
    base = wrapMul(base, base);
    e >>= 1;
  }
  return r;
}

// Comparisons of two tensors of one type into bool. `cmp` is generic: it gets floats, int64 or uint64.
template <class Cmp>
Outputs compare(const Ctx& c, Cmp cmp) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  c.sameType(a, b, "inputs");
  const Shape shape = broadcastShapes(c, a.shape, b.shape);
  Tensor y = c.output(DType::kBool, shape);
  binaryWalk(shape, a, b, [&](int64_t k, int64_t i, int64_t j) {
    bool r;
    if (a.isFloat()) {
      r = cmp(a.f[i], b.f[j]);
    } else if (a.dtype == DType::kUInt64) {
      r = cmp(static_cast<uint64_t>(a.i[i]), static_cast<uint64_t>(b.i[j]));
    } else {
      r = cmp(a.i[i], b.i[j]);
    }
    y.i[k] = r ? 1 : 0;
  });
  return one(std::move(y));
}

template <class F>
Outputs logical(const Ctx& c, F fn) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  if (a.dtype != DType::kBool || b.dtype != DType::kBool) c.fail("inputs must be bool");
  const Shape shape = broadcastShapes(c, a.shape, b.shape);
  Tensor y = c.output(DType::kBool, shape);
  binaryWalk(shape, a, b,
             [&](int64_t k, int64_t i, int64_t j) { y.i[k] = fn(a.i[i] != 0, b.i[j] != 0) ? 1 : 0; });
  return one(std::move(y));
}

// Max and Min: one or more inputs of one numeric type broadcast together; a NaN wins (numpy's maximum and
// minimum); uint64 compares unsigned. The first input is copied to the output, then each other one folded in.
template <bool kMax>
Outputs extremum(const Ctx& c) {
  if (c.inputs.empty()) c.fail("needs at least one input");
  const Tensor& first = c.in(0);
  if (first.dtype == DType::kBool) c.fail("inputs must be numeric, not bool");
  Shape shape = first.shape;
  for (size_t k = 1; k < c.inputs.size(); ++k) {
    c.sameType(first, c.in(k), "inputs");
    shape = broadcastShapes(c, shape, c.in(k).shape);
  }
  Tensor y = c.output(first.dtype, shape);
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const Tensor& x = c.in(k);
    walk<1>(shape, {broadcastStrides(x.shape, shape)}, [&](int64_t e, const std::array<int64_t, 1>& o) {
      if (y.isFloat()) {
        const float a = y.f[e], b = x.f[o[0]];
        y.f[e] = k == 0 || std::isnan(b) ? b : std::isnan(a) ? a : kMax ? std::max(a, b) : std::min(a, b);
      } else {
        const int64_t a = y.i[e], b = x.i[o[0]];
        y.i[e] = k == 0 || (kMax ? intLess(a, b, x.dtype) : intLess(b, a, x.dtype)) ? b : a;
      }
    });
  }
  return one(std::move(y));
}

}  // namespace

Outputs opMax(const Ctx& c) {
  return extremum<true>(c);
}
Outputs opMin(const Ctx& c) {
  return extremum<false>(c);
}

Outputs opAdd(const Ctx& c) {
  return binaryNumeric(
      c, [](float a, float b) { return a + b; }, wrapAdd);
}
Outputs opSub(const Ctx& c) {
  return binaryNumeric(
      c, [](float a, float b) { return a - b; }, wrapSub);
}
Outputs opMul(const Ctx& c) {
  return binaryNumeric(
      c, [](float a, float b) { return a * b; }, wrapMul);
}
Outputs opDiv(const Ctx& c) {
  const DType t = c.in(0).dtype;
  // Integer division truncates toward zero, as C and the ONNX reference's cast of the quotient do.
  return binaryNumeric(
      c, [](float a, float b) { return a / b; },
      [&c, t](int64_t a, int64_t b) {
        if (b == 0) c.fail("integer division by zero");
        if (t == DType::kUInt64)
          return static_cast<int64_t>(static_cast<uint64_t>(a) / static_cast<uint64_t>(b));
        if (b == -1) return wrapSub(0, a);  // INT64_MIN / -1 overflows
        return a / b;
      });
}

// Pow: the exponent may have another type than the base (opset 12); the result has the base's type.
Outputs opPow(const Ctx& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  if (a.dtype == DType::kBool || b.dtype == DType::kBool) c.fail("inputs must be numeric, not bool");
  if (c.opset < 12) c.sameType(a, b, "inputs");
  const Shape shape = broadcastShapes(c, a.shape, b.shape);
  Tensor y = c.output(a.dtype, shape);
  binaryWalk(shape, a, b, [&](int64_t k, int64_t i, int64_t j) {
    if (a.isFloat()) {
      y.f[k] = std::pow(a.f[i], static_cast<float>(b.asDouble(j)));
    } else if (!b.isFloat()) {
      y.i[k] = wrapToIntType(intPow(c, a.i[i], b.i[j]), a.dtype);
    } else {
      // Integer base, float exponent: the power in double, truncated (the reference's astype).
      y.i[k] = wrapToIntType(saturateToInt64(std::pow(a.asDouble(i), b.asDouble(j))), a.dtype);
    }
  });
  return one(std::move(y));
}

Outputs opEqual(const Ctx& c) {
  return compare(c, [](auto a, auto b) { return a == b; });
}
Outputs opLess(const Ctx& c) {
  return compare(c, [](auto a, auto b) { return a < b; });
}
Outputs opGreater(const Ctx& c) {
  return compare(c, [](auto a, auto b) { return a > b; });
}

Outputs opAnd(const Ctx& c) {
  return logical(c, [](bool a, bool b) { return a && b; });
}
Outputs opOr(const Ctx& c) {
  return logical(c, [](bool a, bool b) { return a || b; });
}
Outputs opNot(const Ctx& c) {
  const Tensor& x = c.in(0);
  if (x.dtype != DType::kBool) c.fail("input must be bool");
  Tensor y = c.output(DType::kBool, x.shape);
  for (size_t k = 0; k < y.i.size(); ++k) y.i[k] = x.i[k] ? 0 : 1;
  return one(std::move(y));
}

Outputs opWhere(const Ctx& c) {
  const Tensor& cond = c.in(0);
  const Tensor& a = c.in(1);
  const Tensor& b = c.in(2);
  if (cond.dtype != DType::kBool) c.fail("condition must be bool");
  c.sameType(a, b, "X and Y");
  const Shape shape = broadcastShapes(c, broadcastShapes(c, cond.shape, a.shape), b.shape);
  Tensor y = c.output(a.dtype, shape);
  walk<3>(shape,
          {broadcastStrides(cond.shape, shape), broadcastStrides(a.shape, shape),
           broadcastStrides(b.shape, shape)},
          [&](int64_t k, const std::array<int64_t, 3>& o) {
            if (y.isFloat()) {
              y.f[k] = cond.i[o[0]] ? a.f[o[1]] : b.f[o[2]];
            } else {
              y.i[k] = cond.i[o[0]] ? a.i[o[1]] : b.i[o[2]];
            }
          });
  return one(std::move(y));
}

}  // namespace sf::nn::cpu
