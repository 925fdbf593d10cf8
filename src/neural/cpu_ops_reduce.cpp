// Reductions and Softmax (cpu_ops_kernels.h): the Reduce* family as one accumulation per output element
// (in double for floats, wrapping for integers), Softmax along an axis or over the coerced 2-D input.
#include <algorithm>
#include <cmath>
#include <limits>

#include "neural/cpu_ops_kernels.h"

namespace sf::nn::cpu {

namespace {

enum class Reduction { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// The Reduce* family: one accumulation per output element over the reduced axes.
Outputs reduce(const Ctx& c, Reduction kind) {
  const Tensor& x = c.in(0);
  if (x.dtype == DType::kBool) c.fail("input must be numeric, not bool");
  const bool logarithmic = kind == Reduction::kLogSum || kind == Reduction::kLogSumExp;
  if (logarithmic) c.requireFloat(x, "input");
  const auto rank = static_cast<int64_t>(x.shape.size());
  // The axes became an input in opset 13 for ReduceSum and in opset 18 for the others.
  const int64_t input_opset = kind == Reduction::kSum ? 13 : 18;
  bool given = false;
  const std::vector<int64_t> axes = axesArgument(c, input_opset, 1, &given);
  if (!given && c.opset >= input_opset && c.node.attrInt("noop_with_empty_axes", 0) != 0) return one(x);
  std::vector<bool> reduced(x.shape.size(), !given);
  for (size_t d : uniqueAxes(c, axes, rank)) reduced[d] = true;
  const bool keepdims = c.node.attrInt("keepdims", 1) != 0;
  // kept: the output shape with the reduced dims as 1 (its strides, zeroed on them, map input to output);
  // out: without them unless keepdims.
  Shape kept, out;
  int64_t count = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    kept.push_back(reduced[d] ? 1 : x.shape[d]);
    if (!reduced[d] || keepdims) out.push_back(reduced[d] ? 1 : x.shape[d]);
    if (reduced[d]) count *= x.shape[d];
  }
  std::vector<int64_t> st = rowStrides(kept);
  for (size_t d = 0; d < st.size(); ++d)
    if (reduced[d]) st[d] = 0;
  Tensor y = c.output(x.dtype, out);
  const auto n = static_cast<size_t>(y.numel());
  if (x.isFloat()) {
    // Accumulated in double. An empty reduction gives the identity (Max: -inf, Min: +inf, Mean: NaN, the
    // logarithms: -inf).
    const double init = kind == Reduction::kProd  ? 1.0
                        : kind == Reduction::kMax ? -std::numeric_limits<double>::infinity()
                        : kind == Reduction::kMin ? std::numeric_limits<double>::infinity()
                                                  : 0.0;
    std::vector<double> acc(n, init);
    walk<1>(x.shape, {st}, [&](int64_t k, const std::array<int64_t, 1>& o) {
      const double v = x.f[k];
      double& a = acc[o[0]];
      switch (kind) {
        case Reduction::kSum:
        case Reduction::kMean:
        case Reduction::kLogSum:
          a += v;
          break;
        case Reduction::kL1:
          a += std::fabs(v);
          break;
        case Reduction::kL2:
        case Reduction::kSumSquare:
          a += v * v;
          break;
        case Reduction::kLogSumExp:
          a += std::exp(v);
          break;
        case Reduction::kProd:
          a *= v;
          break;
        case Reduction::kMax:
          a = (std::isnan(v) || v > a) ? v : a;
          break;  // NaN wins, as in numpy
        case Reduction::kMin:
          a = (std::isnan(v) || v < a) ? v : a;
          break;
      }
    });
    for (size_t k = 0; k < n; ++k) {
      double v = acc[k];
      if (kind == Reduction::kMean) v = count ? v / static_cast<double>(count) : kNaN;
      if (kind == Reduction::kL2) v = std::sqrt(v);
      if (logarithmic) v = std::log(v);
      y.f[k] = static_cast<float>(v);
    }
  } else {
    if (kind == Reduction::kMean && count == 0) c.fail("mean of an empty integer reduction");
    const int64_t init = kind == Reduction::kProd  ? 1
                         : kind == Reduction::kMax ? intTypeMin(x.dtype)
                         : kind == Reduction::kMin ? intTypeMax(x.dtype)
                                                   : 0;
    std::vector<int64_t> acc(n, init);
    walk<1>(x.shape, {st}, [&](int64_t k, const std::array<int64_t, 1>& o) {
      const int64_t v = x.i[k];
      int64_t& a = acc[o[0]];
      switch (kind) {
        case Reduction::kSum:
        case Reduction::kMean:
          a = wrapAdd(a, v);
          break;
        case Reduction::kL1:
          a = wrapAdd(a, isUnsignedType(x.dtype) || v >= 0 ? v : wrapSub(0, v));
          break;
        case Reduction::kL2:
        case Reduction::kSumSquare:
          a = wrapAdd(a, wrapMul(v, v));
          break;
        case Reduction::kProd:
          a = wrapMul(a, v);
          break;
        case Reduction::kMax:
          a = intLess(a, v, x.dtype) ? v : a;
          break;
        case Reduction::kMin:
          a = intLess(v, a, x.dtype) ? v : a;
          break;
        case Reduction::kLogSum:
        case Reduction::kLogSumExp:
          break;  // refused above
      }
    });
    for (size_t k = 0; k < n; ++k) {
      int64_t v = acc[k];
      if (kind == Reduction::kMean) v /= count;
      if (kind == Reduction::kL2) v = saturateToInt64(std::sqrt(static_cast<double>(v)));  // truncated
      y.i[k] = wrapToIntType(v, x.dtype);
    }
  }
  return one(std::move(y));
}

}  // namespace

Outputs opReduceSum(const Ctx& c) {
  return reduce(c, Reduction::kSum);
}
Outputs opReduceMean(const Ctx& c) {
  return reduce(c, Reduction::kMean);
}
Outputs opReduceMax(const Ctx& c) {
  return reduce(c, Reduction::kMax);
}
Outputs opReduceMin(const Ctx& c) {
  return reduce(c, Reduction::kMin);
}
Outputs opReduceProd(const Ctx& c) {
  return reduce(c, Reduction::kProd);
}
Outputs opReduceL1(const Ctx& c) {
  return reduce(c, Reduction::kL1);
}
Outputs opReduceL2(const Ctx& c) {
  return reduce(c, Reduction::kL2);
}
Outputs opReduceSumSquare(const Ctx& c) {
  return reduce(c, Reduction::kSumSquare);
}
Outputs opReduceLogSum(const Ctx& c) {
  return reduce(c, Reduction::kLogSum);
}
Outputs opReduceLogSumExp(const Ctx& c) {
  return reduce(c, Reduction::kLogSumExp);
}

// Softmax: from opset 13 along one axis (default -1); before, over the input coerced to 2-D at `axis`
// (default 1): every dimension from the axis on forms one row.
Outputs opSoftmax(const Ctx& c) {
  const Tensor& x = c.in(0);
  c.requireFloat(x, "input");
  const auto rank = static_cast<int64_t>(x.shape.size());
  const bool per_axis = c.opset >= 13;
  const size_t axis = c.axis(c.node.attrInt("axis", per_axis ? -1 : 1), rank);
  const int64_t outer = dimsProduct(x.shape, 0, axis);
  const int64_t len = per_axis ? x.shape[axis] : dimsProduct(x.shape, axis, x.shape.size());
  const int64_t inner = per_axis ? dimsProduct(x.shape, axis + 1, x.shape.size()) : 1;
  Tensor y = c.output(x.dtype, x.shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      float m = -kInf;
      for (int64_t j = 0; j < len; ++j) m = std::max(m, x.f[base + j * inner]);
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) {
        const float e = std::exp(x.f[base + j * inner] - m);
        y.f[base + j * inner] = e;
        sum += e;
      }
      for (int64_t j = 0; j < len; ++j)
        y.f[base + j * inner] = static_cast<float>(y.f[base + j * inner] / sum);
    }
  }
  return one(std::move(y));
}

}  // namespace sf::nn::cpu
