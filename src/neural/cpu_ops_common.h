// What the CPU kernels share (internal to src/neural/cpu_ops*.cpp): a kernel's view of its node (Ctx), the
// errors that name the node, the wrapping integer arithmetic, numpy broadcasting and the one strided walk
// that broadcasting, transposes, slices and reductions all use. The kernels themselves are declared in
// cpu_ops_kernels.h, the operator table is in cpu_ops.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "neural/cpu_ops.h"

namespace sf::nn::cpu {

using Inputs = std::span<const Tensor* const>;
using Outputs = std::vector<Tensor>;

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Throws sf::Error: the node (name and op type), the opset, then `reason`.
[[noreturn]] void nodeError(const Node& node, int64_t opset, const std::string& reason);

// An attribute value the kernel does not implement: named with the node, op type and opset.
[[noreturn]] void refuseAttribute(const Node& node, int64_t opset, const std::string& attribute,
                                  const std::string& value, const std::string& supported);

// The position of a string attribute's value among those a kernel implements (`fallback` when absent);
// any other value is refused, naming them.
size_t pickValue(const Node& node, int64_t opset, const std::string& attribute, const std::string& fallback,
                 const std::vector<std::string>& values);

// A kernel's view of its node: inputs, attributes, outputs checked against the memory limit, and errors that
// name the node, the op type and the opset.
struct Ctx {
  const Node& node;
  Inputs inputs;
  int64_t opset;

  [[noreturn]] void fail(const std::string& reason) const { nodeError(node, opset, reason); }
  // Input k, or nullptr when it is omitted ("" in the model) or beyond the inputs given.
  const Tensor* opt(size_t k) const { return k < inputs.size() ? inputs[k] : nullptr; }
  const Tensor& in(size_t k) const {
    if (const Tensor* t = opt(k)) return *t;
    fail("input " + std::to_string(k) + " is required");
  }
  // Size arithmetic on values from the model (attributes, shape tensors): an overflow is an error, not
  // undefined behaviour.
  int64_t add(int64_t a, int64_t b) const {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) fail("sizes overflow 64 bits");
    return r;
  }
  int64_t mul(int64_t a, int64_t b) const {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) fail("sizes overflow 64 bits");
    return r;
  }
  int64_t count(const Shape& shape) const {
    try {
      return elementCount(shape);
    } catch (const Error& e) {
      fail(e.what());
    }
  }
  Tensor output(DType type, Shape shape) const {
    const int64_t n = count(shape);
    checkByteBudget(node.describe(), static_cast<uint64_t>(n) * (isFloatType(type) ? 4u : 8u),
                    "output " + shapeString(shape));
    return Tensor(type, std::move(shape));
  }
  // An axis in [-rank, rank) as a dimension index.
  size_t axis(int64_t a, int64_t rank, const std::string& what = "axis") const {
    if (a < -rank || a >= rank)
      fail(what + " " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    return static_cast<size_t>(a < 0 ? a + rank : a);
  }
  // The values of an integer tensor (shapes, axes, indices, pads).
  const std::vector<int64_t>& ints(const Tensor& t, const std::string& what) const {
    if (t.isFloat() || t.dtype == DType::kBool)
      fail(what + " must be an integer tensor, not " + dtypeName(t.dtype));
    return t.i;
  }
  // The one value of a scalar (or one-element) tensor.
  double scalar(const Tensor& t, const std::string& what) const {
    if (t.numel() != 1) fail(what + " must hold one value, it has shape " + shapeString(t.shape));
    return t.asDouble(0);
  }
  void sameType(const Tensor& a, const Tensor& b, const std::string& what) const {
    if (a.dtype != b.dtype)
      fail(what + ": element types differ (" + dtypeName(a.dtype) + " and " + dtypeName(b.dtype) + ")");
  }
  void requireFloat(const Tensor& t, const std::string& what) const {
    if (!t.isFloat()) fail(what + " must be a float tensor, not " + dtypeName(t.dtype));
  }
  void requireRank(const Tensor& t, size_t rank, const std::string& what) const {
    if (t.shape.size() != rank)
      fail(what + " must have rank " + std::to_string(rank) + ", it has shape " + shapeString(t.shape));
  }
};

inline Outputs one(Tensor t) {
  Outputs out;
  out.push_back(std::move(t));
  return out;
}

inline bool isUnsignedType(DType t) {
  return t == DType::kUInt8 || t == DType::kUInt16 || t == DType::kUInt32 || t == DType::kUInt64 ||
         t == DType::kBool;
}

// Two's complement arithmetic that wraps instead of overflowing (signed overflow is undefined behaviour);
// the result is then wrapped to the tensor's width by wrapToIntType.
inline int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// a < b for integer storage: uint64 values are held as their two's complement bits.
inline bool intLess(int64_t a, int64_t b, DType t) {
  return t == DType::kUInt64 ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
}

// Product of dims [begin, end) of a shape already validated by elementCount.
inline int64_t dimsProduct(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t k = begin; k < end; ++k) n *= s[k];
  return n;
}

// numpy's multidirectional broadcasting: align the shapes at the right; each pair of dims is equal or one
// of them is 1.
Shape broadcastShapes(const Ctx& c, const Shape& a, const Shape& b);

// Visits every element of `shape` in row-major order: f(k, offsets) with k the element's linear index and
// offsets[j] = base[j] + sum over d of index[d] * strides[j][d]. Broadcasting, transposes, slices, Expand and
// reductions are this one loop with different strides.
template <size_t N, class F>
void walk(const Shape& shape, const std::array<std::vector<int64_t>, N>& strides, F&& f,
          std::array<int64_t, N> base = {}) {
  const int64_t n = elementCount(shape);
  const size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  std::array<int64_t, N> off = base;
  for (int64_t k = 0; k < n; ++k) {
    f(k, off);
    for (size_t d = rank; d-- > 0;) {
      for (size_t j = 0; j < N; ++j) off[j] += strides[j][d];
      if (++index[d] < shape[d]) break;
      for (size_t j = 0; j < N; ++j) off[j] -= strides[j][d] * shape[d];
      index[d] = 0;
    }
  }
}

// Copies n elements between tensors of the same storage class.
void copyBlock(Tensor& dst, int64_t d, const Tensor& src, int64_t s, int64_t n);

// y[k] = x[base + sum over d of index[d] * strides[d]] for every element k of y (same storage class), index
// being k's position in y.shape: walk<1> with a copy, a row of the innermost dim at a time. Transposes,
// slices and Expand are this gather.
void gatherStrided(Tensor& y, const Tensor& x, const std::vector<int64_t>& strides, int64_t base = 0);

// `x` with another shape of as many elements.
Tensor reshaped(const Tensor& x, Shape shape);

// Axes from an input (from `input_opset` on) or from the attribute "axes" (before); `given` tells whether
// any were named.
std::vector<int64_t> axesArgument(const Ctx& c, int64_t input_opset, size_t input, bool* given);

// Normalised axes of a tensor of `rank`, each at most once.
std::vector<size_t> uniqueAxes(const Ctx& c, const std::vector<int64_t>& axes, int64_t rank);

}  // namespace sf::nn::cpu
