// Elementwise unary operators (cpu_ops_kernels.h): float math in float32; Abs, Neg and Relu also on
// integers, wrapping to the type; Clip with its bounds as attributes (before opset 11) or inputs.
#include <cmath>
#include <limits>

#include "neural/cpu_ops_kernels.h"

namespace sf::nn::cpu {

namespace {

template <class F>
Outputs unaryFloat(const Ctx& c, F fn) {
  const Tensor& x = c.in(0);
  c.requireFloat(x, "input");
  Tensor y = c.output(x.dtype, x.shape);
  for (size_t k = 0; k < y.f.size(); ++k) y.f[k] = fn(x.f[k]);
  return one(std::move(y));
}

// Float and integer inputs (integer results wrapped to the type); bool is refused.
template <class F, class I>
Outputs unaryNumeric(const Ctx& c, F ffn, I ifn) {
  const Tensor& x = c.in(0);
  if (x.dtype == DType::kBool) c.fail("input must be numeric, not bool");
  if (x.isFloat()) return unaryFloat(c, ffn);
  Tensor y = c.output(x.dtype, x.shape);
  for (size_t k = 0; k < y.i.size(); ++k) y.i[k] = wrapToIntType(ifn(x.i[k], x.dtype), x.dtype);
  return one(std::move(y));
}

}  // namespace

Outputs opAbs(const Ctx& c) {
  return unaryNumeric(
      c, [](float v) { return std::fabs(v); },
      [](int64_t v, DType t) { return isUnsignedType(t) || v >= 0 ? v : wrapSub(0, v); });
}
Outputs opNeg(const Ctx& c) {
  return unaryNumeric(
      c, [](float v) { return -v; }, [](int64_t v, DType) { return wrapSub(0, v); });
}
Outputs opRelu(const Ctx& c) {
  // v < 0 ? 0 : v lets NaN through, as numpy's maximum does.
  return unaryNumeric(
      c, [](float v) { return v < 0.0f ? 0.0f : v; },
      [](int64_t v, DType t) { return isUnsignedType(t) || v >= 0 ? v : int64_t{0}; });
}
Outputs opLeakyRelu(const Ctx& c) {
  const float alpha = c.node.attrFloat("alpha", 0.01f);
  return unaryFloat(c, [alpha](float v) { return v < 0.0f ? alpha * v : v; });
}
Outputs opSigmoid(const Ctx& c) {
  // Two forms so that exp never overflows into inf / inf.
  return unaryFloat(c, [](float v) {
    if (v >= 0.0f) return 1.0f / (1.0f + std::exp(-v));
    const float e = std::exp(v);
    return e / (1.0f + e);
  });
}
Outputs opTanh(const Ctx& c) {
  return unaryFloat(c, [](float v) { return std::tanh(v); });
}
Outputs opExp(const Ctx& c) {
  return unaryFloat(c, [](float v) { return std::exp(v); });
}
Outputs opLog(const Ctx& c) {
  return unaryFloat(c, [](float v) { return std::log(v); });
}
Outputs opSin(const Ctx& c) {
  return unaryFloat(c, [](float v) { return std::sin(v); });
}
Outputs opCos(const Ctx& c) {
  return unaryFloat(c, [](float v) { return std::cos(v); });
}
Outputs opSqrt(const Ctx& c) {
  return unaryFloat(c, [](float v) { return std::sqrt(v); });
}
Outputs opErf(const Ctx& c) {
  return unaryFloat(c, [](float v) { return std::erf(v); });
}
Outputs opFloor(const Ctx& c) {
  return unaryFloat(c, [](float v) { return std::floor(v); });
}
Outputs opCeil(const Ctx& c) {
  return unaryFloat(c, [](float v) { return std::ceil(v); });
}
Outputs opReciprocal(const Ctx& c) {
  return unaryFloat(c, [](float v) { return 1.0f / v; });
}

Outputs opClip(const Ctx& c) {
  const Tensor& x = c.in(0);
  if (x.dtype == DType::kBool) c.fail("input must be numeric, not bool");
  // Bounds: attributes before opset 11, optional inputs (of the input's type) from it on.
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  if (c.opset < 11) {
    lo = c.node.attrFloat("min", -std::numeric_limits<float>::max());
    hi = c.node.attrFloat("max", std::numeric_limits<float>::max());
  } else {
    for (size_t k = 1; k <= 2; ++k) {
      if (const Tensor* t = c.opt(k)) {
        c.sameType(x, *t, k == 1 ? "min" : "max");
        (k == 1 ? lo : hi) = c.scalar(*t, k == 1 ? "min" : "max");
      }
    }
  }
  Tensor y = c.output(x.dtype, x.shape);
  if (x.isFloat()) {
    const auto flo = static_cast<float>(lo), fhi = static_cast<float>(hi);
    for (size_t k = 0; k < y.f.size(); ++k) {
      float v = x.f[k];  // comparisons with NaN are false: NaN passes through
      if (v < flo) v = flo;
      if (v > fhi) v = fhi;
      y.f[k] = v;
    }
  } else {
    // Integer bounds are read exactly from their tensors (integer types from opset 12); absent ones are the
    // type's range.
    const int64_t ilo = c.opset >= 11 && c.opt(1) ? c.opt(1)->i[0] : intTypeMin(x.dtype);
    const int64_t ihi = c.opset >= 11 && c.opt(2) ? c.opt(2)->i[0] : intTypeMax(x.dtype);
    for (size_t k = 0; k < y.i.size(); ++k) {
      int64_t v = x.i[k];
      if (intLess(v, ilo, x.dtype)) v = ilo;
      if (intLess(ihi, v, x.dtype)) v = ihi;
      y.i[k] = v;
    }
  }
  return one(std::move(y));
}

}  // namespace sf::nn::cpu
