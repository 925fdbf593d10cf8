// The CPU reference kernels (cpu_ops.h): the ONNX operator semantics of the opsets named in the table at the
// end, as plain row-major loops. Shared pieces first (messages, input access, strides and the one strided
// walk that broadcasting, transposes, slices and reductions all use), then the operators by family, then the
// table and the load-time checks.
#include "neural/cpu_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/limits.h"

namespace sf::nn {
std::vector<int64_t> rowStrides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d > 1; --d) st[d - 2] = st[d - 1] * s[d - 1];
  return st;
}

std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const std::vector<int64_t> own = rowStrides(in);
  const size_t lead = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) st[lead + k] = in[k] == 1 ? 0 : own[k];
  return st;
}

namespace {

using Inputs = std::span<const Tensor* const>;
using Outputs = std::vector<Tensor>;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

[[noreturn]] void nodeError(const Node& node, int64_t opset, const std::string& reason) {
  throw Error(node.describe() + ", opset " + std::to_string(opset) + ": " + reason);
}

// An attribute value the kernel does not implement: named with the node, op type and opset.
[[noreturn]] void refuseAttribute(const Node& node, int64_t opset, const std::string& attribute,
                                  const std::string& value, const std::string& supported) {
  nodeError(
      node, opset,
      "attribute " + attribute + " = " + value + " is not supported by the CPU kernel (" + supported + ")");
}

// The position of a string attribute's value among those a kernel implements (`fallback` when absent);
// any other value is refused, naming them.
size_t pickValue(const Node& node, int64_t opset, const std::string& attribute, const std::string& fallback,
                 const std::vector<std::string>& values) {
  const std::string value = node.attrString(attribute, fallback);
  std::string list;
  for (size_t k = 0; k < values.size(); ++k) {
    if (value == values[k]) return k;
    list += (k == 0 ? "" : k + 1 == values.size() ? " or " : ", ") + values[k];
  }
  refuseAttribute(node, opset, attribute, "'" + value + "'", list);
}

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

Outputs one(Tensor t) {
  Outputs out;
  out.push_back(std::move(t));
  return out;
}

bool isUnsignedType(DType t) {
  return t == DType::kUInt8 || t == DType::kUInt16 || t == DType::kUInt32 || t == DType::kUInt64 ||
         t == DType::kBool;
}

// Two's complement arithmetic that wraps instead of overflowing (signed overflow is undefined behaviour);
// the result is then wrapped to the tensor's width by wrapToIntType.
int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// a < b for integer storage: uint64 values are held as their two's complement bits.
bool intLess(int64_t a, int64_t b, DType t) {
  return t == DType::kUInt64 ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
}

// Product of dims [begin, end) of a shape already validated by elementCount.
int64_t dimsProduct(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t k = begin; k < end; ++k) n *= s[k];
  return n;
}

// numpy's multidirectional broadcasting: align the shapes at the right; each pair of dims is equal or one
// of them is 1.
Shape broadcastShapes(const Ctx& c, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k + a.size() < r ? 1 : a[k + a.size() - r];
    const int64_t db = k + b.size() < r ? 1 : b[k + b.size() - r];
    if (da != db && da != 1 && db != 1)
      c.fail("shapes " + shapeString(a) + " and " + shapeString(b) + " do not broadcast");
    out[k] = da == 1 ? db : da;
  }
  return out;
}

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
void copyBlock(Tensor& dst, int64_t d, const Tensor& src, int64_t s, int64_t n) {
  if (dst.isFloat()) {
    std::copy_n(src.f.begin() + s, n, dst.f.begin() + d);
  } else {
    std::copy_n(src.i.begin() + s, n, dst.i.begin() + d);
  }
}

Tensor reshaped(const Tensor& x, Shape shape) {
  Tensor y = x;
  y.shape = std::move(shape);
  return y;
}

// ---- Elementwise: unary ----

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

// ---- Elementwise: binary, with numpy broadcasting ----

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

Outputs opEqual(const Ctx& c) {
  return compare(c, [](auto a, auto b) { return a == b; });
}
Outputs opLess(const Ctx& c) {
  return compare(c, [](auto a, auto b) { return a < b; });
}
Outputs opGreater(const Ctx& c) {
  return compare(c, [](auto a, auto b) { return a > b; });
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

// ---- Matrix products ----

// numpy matmul: 1-D operands are promoted to matrices (and the added dimension removed from the result),
// leading dimensions broadcast. Sums in double.
Outputs opMatMul(const Ctx& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  c.sameType(a, b, "inputs");
  if (a.dtype == DType::kBool) c.fail("inputs must be numeric, not bool");
  if (a.shape.empty() || b.shape.empty())
    c.fail("inputs must have rank 1 or more (scalars are not matrices)");
  Shape sa = a.shape, sb = b.shape;
  const bool a_vector = sa.size() == 1, b_vector = sb.size() == 1;
  if (a_vector) sa.insert(sa.begin(), 1);
  if (b_vector) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], kdim = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != kdim)
    c.fail("inner dimensions differ: " + shapeString(a.shape) + " x " + shapeString(b.shape));
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  const Shape batch = broadcastShapes(c, batch_a, batch_b);
  Shape out = batch;
  if (!a_vector) out.push_back(m);
  if (!b_vector) out.push_back(n);
  Tensor y = c.output(a.dtype, out);
  // Batch strides in whole matrices of each operand.
  std::vector<int64_t> st_a = broadcastStrides(batch_a, batch), st_b = broadcastStrides(batch_b, batch);
  for (int64_t& s : st_a) s *= m * kdim;
  for (int64_t& s : st_b) s *= kdim * n;
  walk<2>(batch, {st_a, st_b}, [&](int64_t bi, const std::array<int64_t, 2>& o) {
    const int64_t ybase = bi * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (y.isFloat()) {
          double acc = 0;
          for (int64_t k = 0; k < kdim; ++k)
            acc += static_cast<double>(a.f[o[0] + i * kdim + k]) * static_cast<double>(b.f[o[1] + k * n + j]);
          y.f[ybase + i * n + j] = static_cast<float>(acc);
        } else {
          int64_t acc = 0;
          for (int64_t k = 0; k < kdim; ++k)
            acc = wrapAdd(acc, wrapMul(a.i[o[0] + i * kdim + k], b.i[o[1] + k * n + j]));
          y.i[ybase + i * n + j] = wrapToIntType(acc, a.dtype);
        }
      }
    }
  });
  return one(std::move(y));
}

// Y = alpha * A' B' + beta * C, C broadcast to (M, N) (unidirectionally).
Outputs opGemm(const Ctx& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  const Tensor* cm = c.opt(2);
  c.requireFloat(a, "A");
  c.sameType(a, b, "A and B");
  c.requireRank(a, 2, "A");
  c.requireRank(b, 2, "B");
  const bool ta = c.node.attrInt("transA", 0) != 0, tb = c.node.attrInt("transB", 0) != 0;
  const double alpha = c.node.attrFloat("alpha", 1.0f), beta = c.node.attrFloat("beta", 1.0f);
  const int64_t m = ta ? a.shape[1] : a.shape[0], kdim = ta ? a.shape[0] : a.shape[1];
  const int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (kdim != kb)
    c.fail("inner dimensions differ: A " + shapeString(a.shape) + ", B " + shapeString(b.shape));
  const Shape out{m, n};
  std::vector<int64_t> st_c;
  if (cm) {
    c.sameType(a, *cm, "A and C");
    if (cm->shape.size() > 2 || broadcastShapes(c, cm->shape, out) != out)
      c.fail("C of shape " + shapeString(cm->shape) + " does not broadcast to " + shapeString(out));
    st_c = broadcastStrides(cm->shape, out);
  }
  Tensor y = c.output(a.dtype, out);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < kdim; ++k) {
        const float av = ta ? a.f[k * m + i] : a.f[i * kdim + k];
        const float bv = tb ? b.f[j * kdim + k] : b.f[k * n + j];
        acc += static_cast<double>(av) * static_cast<double>(bv);
      }
      double v = alpha * acc;
      if (cm) v += beta * static_cast<double>(cm->f[i * st_c[0] + j * st_c[1]]);
      y.f[i * n + j] = static_cast<float>(v);
    }
  }
  return one(std::move(y));
}

// ---- Shapes and data movement ----

Outputs opIdentity(const Ctx& c) {
  return one(c.in(0));
}

Outputs opShape(const Ctx& c) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  // start/end (opset 15) are clamped to [0, rank] after adding rank to negative values.
  auto clampAxis = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clampAxis(c.node.attrInt("start", 0));
  const int64_t end = clampAxis(c.node.attrInt("end", rank));
  Tensor y = c.output(DType::kInt64, {std::max<int64_t>(end - start, 0)});
  for (int64_t k = start; k < end; ++k) y.i[k - start] = x.shape[k];
  return one(std::move(y));
}

Outputs opReshape(const Ctx& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t>& spec = c.ints(c.in(1), "shape");
  const bool allowzero = c.opset >= 14 && c.node.attrInt("allowzero", 0) != 0;
  Shape out(spec.size());
  int64_t infer = -1;
  bool has_zero = false;
  for (size_t k = 0; k < spec.size(); ++k) {
    if (spec[k] == -1) {
      if (infer >= 0) c.fail("shape " + shapeString(spec) + " has more than one -1");
      infer = static_cast<int64_t>(k);
      out[k] = 1;
    } else if (spec[k] == 0 && !allowzero) {
      if (k >= x.shape.size())
        c.fail("shape " + shapeString(spec) + ": 0 copies a dimension the input " + shapeString(x.shape) +
               " lacks");
      out[k] = x.shape[k];
    } else if (spec[k] < 0) {
      c.fail("shape " + shapeString(spec) + " has a negative dimension");
    } else {
      has_zero = has_zero || spec[k] == 0;
      out[k] = spec[k];
    }
  }
  if (allowzero && has_zero && infer >= 0)
    c.fail("shape " + shapeString(spec) + " has both 0 and -1 with allowzero = 1");
  const int64_t total = x.numel();
  if (infer >= 0) {
    const int64_t known = c.count(out);
    if (known == 0 || total % known != 0)
      c.fail("cannot infer the -1 of shape " + shapeString(spec) + " for input " + shapeString(x.shape));
    out[infer] = total / known;
  }
  if (c.count(out) != total)
    c.fail("shape " + shapeString(spec) + " does not hold the " + std::to_string(total) + " elements of " +
           shapeString(x.shape));
  return one(reshaped(x, out));
}

Outputs opFlatten(const Ctx& c) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = c.node.attrInt("axis", 1);
  if (axis < -rank || axis > rank)
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  const auto a = static_cast<size_t>(axis);
  return one(reshaped(x, {dimsProduct(x.shape, 0, a), dimsProduct(x.shape, a, x.shape.size())}));
}

// Axes from an input (from `input_opset` on) or from the attribute "axes" (before); `given` tells whether
// any were named.
std::vector<int64_t> axesArgument(const Ctx& c, int64_t input_opset, size_t input, bool* given) {
  std::vector<int64_t> axes;
  if (c.opset >= input_opset) {
    const Tensor* t = c.opt(input);
    if (t) axes = c.ints(*t, "axes");
  } else {
    axes = c.node.attrInts("axes");
  }
  *given = !axes.empty();
  return axes;
}

// Normalised axes of a tensor of `rank`, each at most once.
std::vector<size_t> uniqueAxes(const Ctx& c, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<size_t> out;
  for (int64_t a : axes) {
    const size_t n = c.axis(a, rank);
    if (std::find(out.begin(), out.end(), n) != out.end())
      c.fail("axis " + std::to_string(a) + " is named twice");
    out.push_back(n);
  }
  return out;
}

Outputs opUnsqueeze(const Ctx& c) {
  const Tensor& x = c.in(0);
  bool given = false;
  const std::vector<int64_t> axes = axesArgument(c, 13, 1, &given);
  if (!given) c.fail("axes are required");
  const auto rank = static_cast<int64_t>(x.shape.size() + axes.size());
  const std::vector<size_t> at = uniqueAxes(c, axes, rank);
  Shape out;
  size_t next = 0;
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d)
    out.push_back(std::find(at.begin(), at.end(), d) != at.end() ? 1 : x.shape[next++]);
  return one(reshaped(x, out));
}

Outputs opSqueeze(const Ctx& c) {
  const Tensor& x = c.in(0);
  bool given = false;
  const std::vector<int64_t> axes = axesArgument(c, 13, 1, &given);
  std::vector<size_t> drop;
  if (given) {
    drop = uniqueAxes(c, axes, static_cast<int64_t>(x.shape.size()));
    for (size_t d : drop)
      if (x.shape[d] != 1)
        c.fail("cannot squeeze axis " + std::to_string(d) + " of shape " + shapeString(x.shape) + " (not 1)");
  } else {
    for (size_t d = 0; d < x.shape.size(); ++d)
      if (x.shape[d] == 1) drop.push_back(d);
  }
  Shape out;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (std::find(drop.begin(), drop.end(), d) == drop.end()) out.push_back(x.shape[d]);
  return one(reshaped(x, out));
}

Outputs opTranspose(const Ctx& c) {
  const Tensor& x = c.in(0);
  const size_t rank = x.shape.size();
  std::vector<int64_t> perm = c.node.attrInts("perm");
  if (perm.empty()) {
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  }
  if (perm.size() != rank)
    c.fail("perm " + shapeString(perm) + " does not match rank " + std::to_string(rank));
  const std::vector<size_t> p = uniqueAxes(c, perm, static_cast<int64_t>(rank));
  const std::vector<int64_t> in_strides = rowStrides(x.shape);
  Shape out(rank);
  std::vector<int64_t> st(rank);
  for (size_t d = 0; d < rank; ++d) {
    out[d] = x.shape[p[d]];
    st[d] = in_strides[p[d]];
  }
  Tensor y = c.output(x.dtype, out);
  walk<1>(out, {st}, [&](int64_t k, const std::array<int64_t, 1>& o) { copyBlock(y, k, x, o[0], 1); });
  return one(std::move(y));
}

Outputs opExpand(const Ctx& c) {
  const Tensor& x = c.in(0);
  const Shape shape = broadcastShapes(c, x.shape, c.ints(c.in(1), "shape"));
  Tensor y = c.output(x.dtype, shape);
  walk<1>(shape, {broadcastStrides(x.shape, shape)},
          [&](int64_t k, const std::array<int64_t, 1>& o) { copyBlock(y, k, x, o[0], 1); });
  return one(std::move(y));
}

Outputs opConcat(const Ctx& c) {
  if (c.inputs.empty()) c.fail("needs at least one input");
  const Tensor& first = c.in(0);
  const auto rank = static_cast<int64_t>(first.shape.size());
  if (c.opset < 4 && !c.node.attr("axis")) c.fail("axis is required");
  const size_t axis = c.axis(c.node.attrInt("axis", 1), rank);
  Shape out = first.shape;
  out[axis] = 0;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const Tensor& t = c.in(k);
    c.sameType(first, t, "input " + std::to_string(k));
    bool fits = t.shape.size() == first.shape.size();
    for (size_t d = 0; fits && d < t.shape.size(); ++d) fits = d == axis || t.shape[d] == first.shape[d];
    if (!fits)
      c.fail("input " + std::to_string(k) + " of shape " + shapeString(t.shape) +
             " does not concatenate with " + shapeString(first.shape) + " on axis " + std::to_string(axis));
    out[axis] += t.shape[axis];
  }
  Tensor y = c.output(first.dtype, out);
  const int64_t outer = dimsProduct(out, 0, axis), inner = dimsProduct(out, axis + 1, out.size());
  int64_t offset = 0;  // along the axis
  for (const Tensor* t : c.inputs) {
    const int64_t block = t->shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) copyBlock(y, (o * out[axis] + offset) * inner, *t, o * block, block);
    offset += t->shape[axis];
  }
  return one(std::move(y));
}

Outputs opSplit(const Ctx& c) {
  const Tensor& x = c.in(0);
  const size_t axis = c.axis(c.node.attrInt("axis", 0), static_cast<int64_t>(x.shape.size()));
  const int64_t dim = x.shape[axis];
  const auto parts = static_cast<int64_t>(c.node.outputs.size());
  std::vector<int64_t> split;
  if (c.opset >= 13) {
    if (const Tensor* t = c.opt(1)) split = c.ints(*t, "split");
  } else {
    split = c.node.attrInts("split");
  }
  if (split.empty()) {
    if (c.opset >= 18 && c.node.attr("num_outputs") && c.node.attrInt("num_outputs", 0) != parts)
      c.fail("num_outputs does not match the node's " + std::to_string(parts) + " outputs");
    if (parts <= 0) c.fail("has no outputs");
    // Equal parts; from opset 18 the last may be smaller (ceil), before that the split must be exact.
    const int64_t size = (dim + parts - 1) / parts;
    if (dim % parts != 0 && c.opset < 18)
      c.fail("dimension " + std::to_string(dim) + " does not split into " + std::to_string(parts) +
             " equal parts");
    for (int64_t k = 0; k < parts; ++k) split.push_back(std::clamp<int64_t>(dim - k * size, 0, size));
  }
  if (static_cast<int64_t>(split.size()) != parts)
    c.fail("split has " + std::to_string(split.size()) + " sizes for " + std::to_string(parts) + " outputs");
  int64_t sum = 0;
  for (int64_t s : split) {
    if (s < 0) c.fail("split sizes must not be negative");
    sum = c.add(sum, s);
  }
  if (sum != dim)
    c.fail("split sizes " + shapeString(split) + " do not add up to dimension " + std::to_string(dim));
  const int64_t outer = dimsProduct(x.shape, 0, axis), inner = dimsProduct(x.shape, axis + 1, x.shape.size());
  Outputs out;
  int64_t offset = 0;
  for (int64_t s : split) {
    Shape shape = x.shape;
    shape[axis] = s;
    Tensor y = c.output(x.dtype, shape);
    for (int64_t o = 0; o < outer; ++o) copyBlock(y, o * s * inner, x, (o * dim + offset) * inner, s * inner);
    offset += s;
    out.push_back(std::move(y));
  }
  return out;
}

// Slice (opset 10+: starts, ends, axes, steps as inputs; before: attributes, step 1). Negative starts and
// ends count from the end; they are clamped to [0, dim] (step > 0) or [-1, dim - 1] (step < 0), which makes
// INT64_MAX / INT64_MIN mean "to the end".
Outputs opSlice(const Ctx& c) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset >= 10) {
    starts = c.ints(c.in(1), "starts");
    ends = c.ints(c.in(2), "ends");
    if (const Tensor* t = c.opt(3)) axes = c.ints(*t, "axes");
    if (const Tensor* t = c.opt(4)) steps = c.ints(*t, "steps");
  } else {
    starts = c.node.attrInts("starts");
    ends = c.node.attrInts("ends");
    axes = c.node.attrInts("axes");
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  const std::vector<size_t> dims = uniqueAxes(c, axes, rank);
  Shape out = x.shape;
  const std::vector<int64_t> in_strides = rowStrides(x.shape);
  std::vector<int64_t> st = in_strides;
  int64_t base = 0;
  for (size_t k = 0; k < dims.size(); ++k) {
    const size_t d = dims[k];
    const int64_t dim = x.shape[d], step = steps[k];
    if (step == 0) c.fail("step of axis " + std::to_string(d) + " is 0");
    int64_t start = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t end = ends[k] < 0 ? ends[k] + dim : ends[k];
    int64_t n = 0;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      if (end > start) n = (end - start - 1) / step + 1;
    } else if (dim > 0) {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      const int64_t magnitude =
          step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
      if (start > end) n = (start - end - 1) / magnitude + 1;
    }
    out[d] = n;
    if (n > 0) base += start * in_strides[d];
    st[d] = in_strides[d] * (n > 1 ? step : 1);  // unused when n <= 1: avoid overflowing with a huge step
  }
  Tensor y = c.output(x.dtype, out);
  walk<1>(out, {st}, [&](int64_t k, const std::array<int64_t, 1>& o) { copyBlock(y, k, x, o[0], 1); },
          {base});
  return one(std::move(y));
}

Outputs opGather(const Ctx& c) {
  const Tensor& x = c.in(0);
  const Tensor& idx = c.in(1);
  const std::vector<int64_t>& indices = c.ints(idx, "indices");
  const size_t axis = c.axis(c.node.attrInt("axis", 0), static_cast<int64_t>(x.shape.size()));
  const int64_t dim = x.shape[axis];
  Shape out(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.shape.end());
  Tensor y = c.output(x.dtype, out);
  const int64_t outer = dimsProduct(x.shape, 0, axis), inner = dimsProduct(x.shape, axis + 1, x.shape.size());
  const auto n = static_cast<int64_t>(indices.size());
  for (int64_t j = 0; j < n; ++j) {
    int64_t i = indices[j];
    if (i < -dim || i >= dim)
      c.fail("index " + std::to_string(i) + " is out of range for dimension " + std::to_string(dim));
    if (i < 0) i += dim;
    for (int64_t o = 0; o < outer; ++o) copyBlock(y, (o * n + j) * inner, x, (o * dim + i) * inner, inner);
  }
  return one(std::move(y));
}

Outputs opTile(const Ctx& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t>& repeats = c.ints(c.in(1), "repeats");
  if (repeats.size() != x.shape.size())
    c.fail("repeats " + shapeString(repeats) + " do not match rank " + std::to_string(x.shape.size()));
  Shape out(x.shape.size());
  for (size_t d = 0; d < out.size(); ++d) {
    if (repeats[d] < 0) c.fail("repeats must not be negative");
    if (x.shape[d] > 0 && repeats[d] > kMaxTensorElements / x.shape[d])
      c.fail("output of more than 2^40 elements");
    out[d] = x.shape[d] * repeats[d];
  }
  Tensor y = c.output(x.dtype, out);
  const std::vector<int64_t> in_strides = rowStrides(x.shape);
  const int64_t n = y.numel();
  std::vector<int64_t> index(out.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t src = 0;
    for (size_t d = 0; d < out.size(); ++d) src += (index[d] % x.shape[d]) * in_strides[d];
    copyBlock(y, k, x, src, 1);
    for (size_t d = out.size(); d-- > 0;) {
      if (++index[d] < out[d]) break;
      index[d] = 0;
    }
  }
  return one(std::move(y));
}

// In the order of the names pickValue is given.
enum class PadMode { kConstant, kReflect, kEdge, kWrap };

PadMode padMode(const Node& node, int64_t opset) {
  std::vector<std::string> modes{"constant", "reflect", "edge"};
  if (opset >= 19) modes.push_back("wrap");
  return static_cast<PadMode>(pickValue(node, opset, "mode", "constant", modes));
}

void checkPad(const Node& node, int64_t opset) {
  padMode(node, opset);
}

// Pad: constant, edge, reflect (and wrap, opset 19). Negative pads crop.
Outputs opPad(const Ctx& c) {
  const Tensor& x = c.in(0);
  const size_t rank = x.shape.size();
  const PadMode mode = padMode(c.node, c.opset);
  std::vector<int64_t> pads;
  double value = 0;
  std::vector<size_t> axes;
  if (c.opset < 11) {
    pads = c.node.attrInts("pads");
    value = c.node.attrFloat("value", 0.0f);
  } else {
    pads = c.ints(c.in(1), "pads");
    if (const Tensor* v = c.opt(2); v && v->numel() > 0) {
      c.sameType(x, *v, "constant_value");
      value = c.scalar(*v, "constant_value");
    }
    if (const Tensor* a = c.opt(3); a && c.opset >= 18)
      axes = uniqueAxes(c, c.ints(*a, "axes"), static_cast<int64_t>(rank));
  }
  if (axes.empty())
    for (size_t d = 0; d < rank; ++d) axes.push_back(d);
  if (pads.size() != 2 * axes.size())
    c.fail("pads " + shapeString(pads) + " must hold 2 values per padded axis");
  std::vector<int64_t> begin(rank, 0);
  Shape out = x.shape;
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t d = axes[k];
    begin[d] = pads[k];
    out[d] = c.add(c.add(x.shape[d], pads[k]), pads[k + axes.size()]);
    if (out[d] < 0)
      c.fail("pads " + shapeString(pads) + " crop more than dimension " + std::to_string(d) + " holds");
    if (mode != PadMode::kConstant && x.shape[d] == 0 && out[d] > 0)
      c.fail("cannot pad an empty dimension but with a constant");
  }
  Tensor y = c.output(x.dtype, out);
  const std::vector<int64_t> in_strides = rowStrides(x.shape);
  const int64_t total = y.numel();
  std::vector<int64_t> index(rank, 0);
  for (int64_t k = 0; k < total; ++k) {
    int64_t src = 0;
    bool inside = true;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t n = x.shape[d];
      int64_t i = index[d] - begin[d];
      if (i < 0 || i >= n) {
        if (mode == PadMode::kConstant) {
          inside = false;
          break;
        } else if (mode == PadMode::kEdge) {
          i = std::clamp<int64_t>(i, 0, n - 1);
        } else if (mode == PadMode::kWrap) {
          i = ((i % n) + n) % n;
        } else if (n == 1) {  // reflect of a single element
          i = 0;
        } else {  // reflect: the index folds with period 2 (n - 1), as numpy's pad does for wide pads
          const int64_t period = 2 * (n - 1);
          i = ((i % period) + period) % period;
          if (i >= n) i = period - i;
        }
      }
      src += i * in_strides[d];
    }
    if (inside) {
      copyBlock(y, k, x, src, 1);
    } else {
      y.set(static_cast<size_t>(k), value);
    }
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out[d]) break;
      index[d] = 0;
    }
  }
  return one(std::move(y));
}

// ---- Constants ----

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

// ---- Reductions, Softmax ----

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

// ---- Cast ----

// The target of Cast, checked at load: a supported type other than bfloat16. ONNX's own test data (1.12)
// truncates float32 to bfloat16 where this layer (roundToFloatType) and onnxruntime round to nearest even;
// the specification does not say which, so a bfloat16 target is refused rather than given a rounding one
// of them contradicts.
DType castTarget(const Node& node, int64_t opset) {
  const Attribute* a = node.attr("to");
  if (!a) nodeError(node, opset, "attribute to is required");
  const auto to = static_cast<DType>(node.attrInt("to", 0));
  if (to == DType::kBFloat16)
    refuseAttribute(node, opset, "to", "bfloat16",
                    "the rounding of casts to bfloat16 is unspecified: ONNX's test data truncates");
  if (!isSupportedType(to)) refuseAttribute(node, opset, "to", dtypeName(to), "numeric and bool types only");
  return to;
}

void checkCast(const Node& node, int64_t opset) {
  castTarget(node, opset);
}

// Float -> integer truncates toward zero and saturates to the target's range (ONNX leaves out-of-range
// values undefined; saturating keeps them defined), NaN -> 0. Integer -> integer keeps the low bits.
// Anything -> bool is "not zero" (NaN is true). Integer -> float rounds to nearest; float -> float rounds to
// nearest even, overflowing to +-infinity.
Outputs opCast(const Ctx& c) {
  const Tensor& x = c.in(0);
  const DType to = castTarget(c.node, c.opset);
  Tensor y = c.output(to, x.shape);
  const auto n = static_cast<size_t>(y.numel());
  for (size_t k = 0; k < n; ++k) {
    if (x.isFloat()) {
      const float v = x.f[k];
      if (y.isFloat()) {
        y.f[k] = roundToFloatType(v, to);
      } else if (to == DType::kBool) {
        y.i[k] = v != 0.0f ? 1 : 0;
      } else {
        const int64_t t = saturateToInt64(v);
        y.i[k] = to == DType::kUInt64 ? t : std::clamp(t, intTypeMin(to), intTypeMax(to));
      }
    } else {
      const int64_t v = x.i[k];
      if (y.isFloat()) {
        // float32 straight from the integer (one rounding); narrower types through the exact-or-nearest
        // double.
        if (to == DType::kFloat32 || to == DType::kFloat64) {
          y.f[k] = x.dtype == DType::kUInt64 ? static_cast<float>(static_cast<uint64_t>(v))
                                             : static_cast<float>(v);
        } else {
          y.f[k] = roundToFloatType(x.asDouble(k), to);
        }
      } else {
        y.i[k] = wrapToIntType(v, to);
      }
    }
  }
  return one(std::move(y));
}

// ---- Convolution and pooling ----

// The sliding-window geometry shared by Conv, MaxPool and AveragePool over the spatial dimensions.
struct Window {
  Shape in, kernel, out;
  std::vector<int64_t> stride, dilation, pad_begin, pad_end;
};

// In the order of the names pickValue is given.
enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

AutoPad autoPad(const Node& node, int64_t opset) {
  return static_cast<AutoPad>(
      pickValue(node, opset, "auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}));
}

std::vector<int64_t> spatialAttr(const Ctx& c, const char* name, size_t count, int64_t fallback,
                                 int64_t min_value) {
  std::vector<int64_t> v = c.node.attrInts(name, std::vector<int64_t>(count, fallback));
  if (v.size() != count)
    c.fail(std::string("attribute ") + name + " " + shapeString(v) + " must hold " + std::to_string(count) +
           " values");
  for (int64_t x : v)
    if (x < min_value)
      c.fail(std::string("attribute ") + name + " " + shapeString(v) + " holds a value below " +
             std::to_string(min_value));
  return v;
}

Window slidingWindow(const Ctx& c, const Shape& in, const Shape& kernel, bool ceil_mode) {
  const size_t nd = in.size();
  Window w{in,
           kernel,
           Shape(nd),
           spatialAttr(c, "strides", nd, 1, 1),
           spatialAttr(c, "dilations", nd, 1, 1),
           std::vector<int64_t>(nd),
           std::vector<int64_t>(nd)};
  const std::vector<int64_t> pads = spatialAttr(c, "pads", 2 * nd, 0, 0);
  const AutoPad mode = autoPad(c.node, c.opset);
  for (size_t d = 0; d < nd; ++d) {
    const int64_t s = w.stride[d], extent = c.add(c.mul(kernel[d] - 1, w.dilation[d]), 1);
    if (mode == AutoPad::kSameUpper || mode == AutoPad::kSameLower) {
      // Output ceil(in / stride); the padding that needs, the odd one at the end (UPPER) or start (LOWER).
      w.out[d] = (in[d] + s - 1) / s;
      const int64_t total = std::max<int64_t>(c.add((w.out[d] - 1) * s, extent) - in[d], 0);
      w.pad_begin[d] = mode == AutoPad::kSameUpper ? total / 2 : total - total / 2;
      w.pad_end[d] = total - w.pad_begin[d];
      continue;
    }
    if (mode == AutoPad::kNotSet) {
      w.pad_begin[d] = pads[d];
      w.pad_end[d] = pads[d + nd];
    }
    const int64_t span = c.add(c.add(in[d], w.pad_begin[d]), w.pad_end[d]) - extent;
    if (span < 0)
      c.fail("kernel " + shapeString(kernel) + " (dilated) is larger than the padded input " +
             shapeString(in));
    w.out[d] = span / s + 1;
    // ceil_mode adds the partial window at the end, unless it would start in the end padding.
    if (ceil_mode && span % s != 0 && c.mul(w.out[d], s) < c.add(in[d], w.pad_begin[d])) ++w.out[d];
  }
  return w;
}

// Walks the output positions of a window: calls f(output index, first input coordinate per dimension).
template <class F>
void forEachWindow(const Window& w, F&& f) {
  const size_t nd = w.in.size();
  std::vector<int64_t> pos(nd, 0), start(nd);
  const int64_t n = elementCount(w.out);
  for (int64_t o = 0; o < n; ++o) {
    for (size_t d = 0; d < nd; ++d) start[d] = pos[d] * w.stride[d] - w.pad_begin[d];
    f(o, start);
    for (size_t d = nd; d-- > 0;) {
      if (++pos[d] < w.out[d]) break;
      pos[d] = 0;
    }
  }
}

// Per-dimension offsets (in input coordinates, dilation applied) of every kernel tap, tap-major.
std::vector<int64_t> kernelTaps(const Window& w) {
  const size_t nd = w.in.size();
  const int64_t n = elementCount(w.kernel);
  std::vector<int64_t> taps(static_cast<size_t>(n) * nd);
  std::vector<int64_t> k(nd, 0);
  for (int64_t t = 0; t < n; ++t) {
    for (size_t d = 0; d < nd; ++d) taps[t * nd + d] = k[d] * w.dilation[d];
    for (size_t d = nd; d-- > 0;) {
      if (++k[d] < w.kernel[d]) break;
      k[d] = 0;
    }
  }
  return taps;
}

// The row-major input index of window start + tap, or -1 when that lies outside the input (in padding).
int64_t tapIndex(const Window& w, const std::vector<int64_t>& start, const int64_t* tap) {
  int64_t idx = 0;
  for (size_t d = 0; d < w.in.size(); ++d) {
    const int64_t p = start[d] + tap[d];
    if (p < 0 || p >= w.in[d]) return -1;
    idx = idx * w.in[d] + p;
  }
  return idx;
}

// X (N, C, spatial...) and, for convolutions, W's spatial kernel: checks ranks, returns the spatial shape.
Shape spatialShape(const Ctx& c, const Tensor& x) {
  c.requireFloat(x, "X");
  if (x.shape.size() < 3) c.fail("X must be (N, C, spatial...), it has shape " + shapeString(x.shape));
  return Shape(x.shape.begin() + 2, x.shape.end());
}

Outputs opConv(const Ctx& c) {
  const Tensor& x = c.in(0);
  const Tensor& wt = c.in(1);
  const Tensor* bias = c.opt(2);
  const Shape in = spatialShape(c, x);
  c.sameType(x, wt, "X and W");
  c.requireRank(wt, x.shape.size(), "W");
  const int64_t batch = x.shape[0], channels = x.shape[1], maps = wt.shape[0],
                group = c.node.attrInt("group", 1);
  if (group < 1 || channels % group != 0 || maps % group != 0 || wt.shape[1] != channels / group)
    c.fail("group " + std::to_string(group) + " does not fit X " + shapeString(x.shape) + " and W " +
           shapeString(wt.shape));
  const Shape kernel(wt.shape.begin() + 2, wt.shape.end());
  if (c.node.attr("kernel_shape") && c.node.attrInts("kernel_shape") != kernel)
    c.fail("kernel_shape " + shapeString(c.node.attrInts("kernel_shape")) + " differs from W " +
           shapeString(wt.shape));
  if (bias && (bias->shape != Shape{maps} || bias->dtype != x.dtype))
    c.fail("B must be a vector of " + std::to_string(maps) + " values of X's type");
  const Window w = slidingWindow(c, in, kernel, false);
  Shape out{batch, maps};
  out.insert(out.end(), w.out.begin(), w.out.end());
  Tensor y = c.output(x.dtype, out);
  const int64_t cg = channels / group, mg = maps / group;
  const int64_t in_size = elementCount(in), out_size = elementCount(w.out), k_size = elementCount(kernel);
  const std::vector<int64_t> taps = kernelTaps(w);
  const size_t nd = in.size();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t m = 0; m < maps; ++m) {
      const int64_t g = m / mg;
      forEachWindow(w, [&](int64_t o, const std::vector<int64_t>& start) {
        double acc = bias ? bias->f[m] : 0.0;
        for (int64_t t = 0; t < k_size; ++t) {
          const int64_t idx = tapIndex(w, start, &taps[t * nd]);
          if (idx < 0) continue;
          for (int64_t ci = 0; ci < cg; ++ci) {
            const float xv = x.f[(n * channels + g * cg + ci) * in_size + idx];
            acc += static_cast<double>(xv) * static_cast<double>(wt.f[(m * cg + ci) * k_size + t]);
          }
        }
        y.f[(n * maps + m) * out_size + o] = static_cast<float>(acc);
      });
    }
  }
  return one(std::move(y));
}

// ConvTranspose: every input element scatters kernel * value into the output at stride steps. The output
// size is output_shape when given (the padding follows from it), else stride (in - 1) + output_padding +
// dilated kernel - pads; auto_pad SAME makes it in * stride.
Outputs opConvTranspose(const Ctx& c) {
  const Tensor& x = c.in(0);
  const Tensor& wt = c.in(1);
  const Tensor* bias = c.opt(2);
  const Shape in = spatialShape(c, x);
  c.sameType(x, wt, "X and W");
  c.requireRank(wt, x.shape.size(), "W");
  const size_t nd = in.size();
  const int64_t batch = x.shape[0], channels = x.shape[1], group = c.node.attrInt("group", 1);
  if (group < 1 || channels % group != 0 || wt.shape[0] != channels)
    c.fail("group " + std::to_string(group) + " does not fit X " + shapeString(x.shape) + " and W " +
           shapeString(wt.shape));
  const int64_t mg = wt.shape[1], maps = mg * group, cg = channels / group;
  const Shape kernel(wt.shape.begin() + 2, wt.shape.end());
  if (c.node.attr("kernel_shape") && c.node.attrInts("kernel_shape") != kernel)
    c.fail("kernel_shape " + shapeString(c.node.attrInts("kernel_shape")) + " differs from W " +
           shapeString(wt.shape));
  if (bias && (bias->shape != Shape{maps} || bias->dtype != x.dtype))
    c.fail("B must be a vector of " + std::to_string(maps) + " values of X's type");
  const std::vector<int64_t> stride = spatialAttr(c, "strides", nd, 1, 1),
                             dilation = spatialAttr(c, "dilations", nd, 1, 1);
  const std::vector<int64_t> out_pad = spatialAttr(c, "output_padding", nd, 0, 0),
                             pads = spatialAttr(c, "pads", 2 * nd, 0, 0);
  std::vector<int64_t> output_shape = c.node.attrInts("output_shape");
  if (output_shape.size() == nd + 2)
    output_shape.erase(output_shape.begin(), output_shape.begin() + 2);  // (N, C, ...) form
  if (!output_shape.empty() && output_shape.size() != nd)
    c.fail("output_shape " + shapeString(output_shape) + " must hold " + std::to_string(nd) + " values");
  const AutoPad mode = autoPad(c.node, c.opset);
  Shape out_spatial(nd);
  std::vector<int64_t> pad_begin(nd);
  for (size_t d = 0; d < nd; ++d) {
    const int64_t full =
        c.add(c.add(c.mul(stride[d], in[d] - 1), out_pad[d]), c.add(c.mul(kernel[d] - 1, dilation[d]), 1));
    if (!output_shape.empty() || mode == AutoPad::kSameUpper || mode == AutoPad::kSameLower) {
      out_spatial[d] = output_shape.empty() ? c.mul(in[d], stride[d]) : output_shape[d];
      // A larger output than the input and kernel produce keeps the extra positions at the end (bias only).
      if (out_spatial[d] < 0) c.fail("output_shape " + shapeString(output_shape) + " holds a negative size");
      const int64_t total = std::max<int64_t>(full - out_spatial[d], 0);
      pad_begin[d] = mode == AutoPad::kSameUpper ? total / 2 : total - total / 2;
    } else {
      pad_begin[d] = mode == AutoPad::kValid ? 0 : pads[d];
      out_spatial[d] = full - pad_begin[d] - (mode == AutoPad::kValid ? 0 : pads[d + nd]);
      if (out_spatial[d] < 0) c.fail("pads " + shapeString(pads) + " remove more than the output holds");
    }
  }
  Shape out{batch, maps};
  out.insert(out.end(), out_spatial.begin(), out_spatial.end());
  Tensor y = c.output(x.dtype, out);
  const int64_t in_size = elementCount(in), out_size = elementCount(out_spatial),
                k_size = elementCount(kernel);
  std::vector<double> acc(y.f.size(), 0.0);
  std::vector<int64_t> pos(nd), k(nd);
  for (int64_t i = 0; i < in_size; ++i) {
    for (int64_t t = 0; t < k_size; ++t) {
      // Output coordinate of input i under tap t, or -1 outside.
      int64_t idx = 0;
      for (size_t d = 0; d < nd && idx >= 0; ++d) {
        const int64_t p = pos[d] * stride[d] + k[d] * dilation[d] - pad_begin[d];
        idx = (p < 0 || p >= out_spatial[d]) ? -1 : idx * out_spatial[d] + p;
      }
      if (idx >= 0) {
        for (int64_t n = 0; n < batch; ++n) {
          for (int64_t ch = 0; ch < channels; ++ch) {
            const double xv = x.f[(n * channels + ch) * in_size + i];
            const int64_t g = ch / cg;
            for (int64_t m = 0; m < mg; ++m)
              acc[(n * maps + g * mg + m) * out_size + idx] +=
                  xv * static_cast<double>(wt.f[(ch * mg + m) * k_size + t]);
          }
        }
      }
      for (size_t d = nd; d-- > 0;) {
        if (++k[d] < kernel[d]) break;
        k[d] = 0;
      }
    }
    for (size_t d = nd; d-- > 0;) {
      if (++pos[d] < in[d]) break;
      pos[d] = 0;
    }
  }
  for (size_t e = 0; e < acc.size(); ++e) {
    const double b =
        bias ? static_cast<double>(bias->f[(e / static_cast<size_t>(out_size)) % static_cast<size_t>(maps)])
             : 0.0;
    y.f[e] = static_cast<float>(acc[e] + b);
  }
  return one(std::move(y));
}

void checkPool(const Node& node, int64_t opset) {
  autoPad(node, opset);
  if (!node.attr("kernel_shape")) nodeError(node, opset, "attribute kernel_shape is required");
  const int64_t order = node.attrInt("storage_order", 0);
  if (order != 0 && order != 1)
    refuseAttribute(node, opset, "storage_order", std::to_string(order), "0 or 1");
}

void checkConv(const Node& node, int64_t opset) {
  autoPad(node, opset);
}

// MaxPool (with the optional Indices output) and AveragePool over N-D windows.
Outputs pool(const Ctx& c, bool max) {
  checkPool(c.node, c.opset);
  const Tensor& x = c.in(0);
  if (x.shape.size() < 3) c.fail("X must be (N, C, spatial...), it has shape " + shapeString(x.shape));
  if (!max) c.requireFloat(x, "X");
  if (x.dtype == DType::kBool) c.fail("X must be numeric");
  const Shape in(x.shape.begin() + 2, x.shape.end());
  const size_t nd = in.size();
  const Shape kernel = spatialAttr(c, "kernel_shape", nd, 1, 1);
  const Window w = slidingWindow(c, in, kernel, c.node.attrInt("ceil_mode", 0) != 0);
  Shape out{x.shape[0], x.shape[1]};
  out.insert(out.end(), w.out.begin(), w.out.end());
  Tensor y = c.output(x.dtype, out);
  const bool want_indices = max && c.node.outputs.size() > 1 && !c.node.outputs[1].empty();
  Tensor indices = want_indices ? c.output(DType::kInt64, out) : Tensor();
  const bool include_pad = c.node.attrInt("count_include_pad", 0) != 0;
  const bool column_major = c.node.attrInt("storage_order", 0) == 1;
  const int64_t planes = x.shape[0] * x.shape[1], in_size = elementCount(in), out_size = elementCount(w.out);
  const int64_t k_size = elementCount(kernel);
  const std::vector<int64_t> taps = kernelTaps(w);
  for (int64_t p = 0; p < planes; ++p) {
    const int64_t base = p * in_size;
    forEachWindow(w, [&](int64_t o, const std::vector<int64_t>& start) {
      const int64_t at = p * out_size + o;
      if (max) {
        int64_t best = -1;
        for (int64_t t = 0; t < k_size; ++t) {
          const int64_t idx = tapIndex(w, start, &taps[t * nd]);
          if (idx < 0) continue;
          const bool better = best < 0 || (x.isFloat() ? x.f[base + idx] > x.f[base + best]
                                                       : intLess(x.i[base + best], x.i[base + idx], x.dtype));
          if (better) best = idx;
        }
        if (best < 0) {  // a window entirely in the padding
          y.set(static_cast<size_t>(at), -std::numeric_limits<double>::infinity());
          if (want_indices) indices.i[at] = -1;
          return;
        }
        if (x.isFloat()) {
          y.f[at] = x.f[base + best];
        } else {
          y.i[at] = x.i[base + best];
        }
        if (want_indices) {
          int64_t idx = best;
          if (column_major) {  // the spatial index read column-major (first dimension fastest)
            idx = 0;
            int64_t rest = best, scale = 1;
            std::vector<int64_t> coord(nd);
            for (size_t d = nd; d-- > 0;) {
              coord[d] = rest % in[d];
              rest /= in[d];
            }
            for (size_t d = 0; d < nd; ++d) {
              idx += coord[d] * scale;
              scale *= in[d];
            }
          }
          indices.i[at] = base + idx;
        }
      } else {
        double sum = 0;
        int64_t count = 0;
        for (int64_t t = 0; t < k_size; ++t) {
          const int64_t* tap = &taps[t * nd];
          const int64_t idx = tapIndex(w, start, tap);
          if (idx >= 0) {
            sum += x.f[base + idx];
            ++count;
          } else if (include_pad) {  // padding counts, but not what lies beyond it (a ceil_mode window)
            bool in_padded = true;
            for (size_t d = 0; d < nd; ++d) {
              const int64_t q = start[d] + tap[d];
              in_padded = in_padded && q >= -w.pad_begin[d] && q < in[d] + w.pad_end[d];
            }
            if (in_padded) ++count;
          }
        }
        y.f[at] = static_cast<float>(count ? sum / static_cast<double>(count) : kNaN);
      }
    });
  }
  Outputs result = one(std::move(y));
  if (want_indices) result.push_back(std::move(indices));
  return result;
}

Outputs opMaxPool(const Ctx& c) {
  return pool(c, true);
}
Outputs opAveragePool(const Ctx& c) {
  return pool(c, false);
}

void checkBatchNormalization(const Node& node, int64_t opset) {
  if (node.attrInt("training_mode", 0) != 0)
    refuseAttribute(node, opset, "training_mode", std::to_string(node.attrInt("training_mode", 0)),
                    "inference mode only");
  for (size_t k = 1; k < node.outputs.size(); ++k)
    if (!node.outputs[k].empty())
      nodeError(node, opset,
                "output " + std::to_string(k) +
                    " (running statistics) is training mode, not supported by the CPU kernel");
}

// Inference: y = (x - mean) / sqrt(var + epsilon) * scale + B, per channel (dimension 1).
Outputs opBatchNormalization(const Ctx& c) {
  checkBatchNormalization(c.node, c.opset);
  const Tensor& x = c.in(0);
  c.requireFloat(x, "X");
  if (x.shape.size() < 2) c.fail("X must be (N, C, ...), it has shape " + shapeString(x.shape));
  const int64_t channels = x.shape[1];
  const Tensor* p[4] = {&c.in(1), &c.in(2), &c.in(3), &c.in(4)};
  for (const Tensor* t : p) {
    c.requireFloat(*t, "scale, B, mean and var");
    if (t->shape != Shape{channels})
      c.fail("scale, B, mean and var must be vectors of " + std::to_string(channels) + " values");
  }
  const float epsilon = c.node.attrFloat("epsilon", 1e-5f);
  Tensor y = c.output(x.dtype, x.shape);
  const int64_t inner = dimsProduct(x.shape, 2, x.shape.size());
  for (size_t k = 0; k < y.f.size(); ++k) {
    const auto ch = static_cast<size_t>((static_cast<int64_t>(k) / inner) % channels);
    y.f[k] = (x.f[k] - p[2]->f[ch]) / std::sqrt(p[3]->f[ch] + epsilon) * p[0]->f[ch] + p[1]->f[ch];
  }
  return one(std::move(y));
}

// ---- Sampling: GridSample, Resize ----

// In the order of the names pickValue is given (the same for Resize and GridSample).
enum class SampleMode { kNearest, kLinear, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

struct GridSampleParams {
  SampleMode mode;
  Padding padding;
  bool align_corners;
};

GridSampleParams gridSampleParams(const Node& node, int64_t opset) {
  // Opset 20 renamed bilinear / bicubic to linear / cubic.
  const bool renamed = opset >= 20;
  GridSampleParams p{};
  p.mode = static_cast<SampleMode>(
      pickValue(node, opset, "mode", renamed ? "linear" : "bilinear",
                {"nearest", renamed ? "linear" : "bilinear", renamed ? "cubic" : "bicubic"}));
  p.padding = static_cast<Padding>(
      pickValue(node, opset, "padding_mode", "zeros", {"zeros", "border", "reflection"}));
  p.align_corners = node.attrInt("align_corners", 0) != 0;
  return p;
}

void checkGridSample(const Node& node, int64_t opset) {
  gridSampleParams(node, opset);
}

// Reflects a coordinate into [low, high] (given doubled, as PyTorch's grid sampler does: the bounds are
// pixel centres with align_corners, pixel edges without).
float reflectCoordinate(float v, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0.0f;
  const float low = static_cast<float>(twice_low) / 2.0f,
              span = static_cast<float>(twice_high - twice_low) / 2.0f;
  v = std::fabs(v - low);
  const float extra = std::fmod(v, span);
  const bool even_flips = std::fmod(std::floor(v / span), 2.0f) == 0.0f;
  return even_flips ? extra + low : span - extra + low;
}

// A source coordinate under border or reflection padding (zeros padding leaves it as it is).
float padCoordinate(float v, int64_t size, Padding padding, bool align_corners) {
  if (padding == Padding::kReflection) {
    v = align_corners ? reflectCoordinate(v, 0, 2 * (size - 1)) : reflectCoordinate(v, -1, 2 * size - 1);
  }
  if (padding != Padding::kZeros) v = std::clamp(v, 0.0f, static_cast<float>(size - 1));
  return v;
}

// Keys' cubic convolution weights with a = -0.75 (PyTorch's bicubic) for the taps at -1, 0, 1, 2 of t.
std::array<double, 4> cubicWeights(double t, double a) {
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // |d| <= 1
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

// GridSample (opset 16, 4-D): X (N, C, H, W) sampled at grid (N, Ho, Wo, 2) of normalised (x, y) in
// [-1, 1]; the coordinate arithmetic follows PyTorch's grid_sample, in float32 as it does.
Outputs opGridSample(const Ctx& c) {
  const GridSampleParams p = gridSampleParams(c.node, c.opset);
  const Tensor& x = c.in(0);
  const Tensor& grid = c.in(1);
  c.requireFloat(x, "X");
  c.requireFloat(grid, "grid");
  if (x.shape.size() != 4)
    c.fail("only 4-D X (N, C, H, W) is supported, it has shape " + shapeString(x.shape));
  if (grid.shape.size() != 4 || grid.shape[0] != x.shape[0] || grid.shape[3] != 2)
    c.fail("grid must be (N, H_out, W_out, 2) for X " + shapeString(x.shape) + ", it has shape " +
           shapeString(grid.shape));
  const int64_t batch = x.shape[0], channels = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t ho = grid.shape[1], wo = grid.shape[2];
  if (h == 0 || w == 0) c.fail("X " + shapeString(x.shape) + " has no pixels to sample");
  Tensor y = c.output(x.dtype, {batch, channels, ho, wo});
  auto unnormalize = [&](float v, int64_t size) {
    return p.align_corners ? (v + 1.0f) / 2.0f * static_cast<float>(size - 1)
                           : ((v + 1.0f) * static_cast<float>(size) - 1.0f) / 2.0f;
  };
  // A pixel coordinate as an index; anything far outside becomes an index just outside (reads 0).
  auto cell = [](float v, int64_t size) { return std::clamp<int64_t>(saturateToInt64(v), -4, size + 4); };
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t i = 0; i < ho * wo; ++i) {
      const float gx = grid.f[(n * ho * wo + i) * 2], gy = grid.f[(n * ho * wo + i) * 2 + 1];
      for (int64_t ch = 0; ch < channels; ++ch) {
        const int64_t plane = (n * channels + ch) * h * w;
        // A pixel, zero outside the image (after any padding of the coordinate).
        auto pixel = [&](int64_t yy, int64_t xx) -> double {
          return (yy < 0 || yy >= h || xx < 0 || xx >= w) ? 0.0
                                                          : static_cast<double>(x.f[plane + yy * w + xx]);
        };
        double v = 0;
        if (!std::isfinite(gx) || !std::isfinite(gy)) {
          v = 0;  // a NaN or infinite grid value samples nothing
        } else if (p.mode == SampleMode::kCubic) {
          // Bicubic pads each tap, not the coordinate (the 4x4 neighbourhood must stay contiguous).
          const float ix = unnormalize(gx, w), iy = unnormalize(gy, h);
          const float fx = std::floor(ix), fy = std::floor(iy);
          const std::array<double, 4> wx = cubicWeights(ix - fx, -0.75), wy = cubicWeights(iy - fy, -0.75);
          for (int64_t r = 0; r < 4; ++r) {
            double row = 0;
            for (int64_t q = 0; q < 4; ++q) {
              const float tx = padCoordinate(fx - 1 + static_cast<float>(q), w, p.padding, p.align_corners);
              const float ty = padCoordinate(fy - 1 + static_cast<float>(r), h, p.padding, p.align_corners);
              row += wx[q] * pixel(cell(ty, h), cell(tx, w));
            }
            v += wy[r] * row;
          }
        } else {
          const float ix = padCoordinate(unnormalize(gx, w), w, p.padding, p.align_corners);
          const float iy = padCoordinate(unnormalize(gy, h), h, p.padding, p.align_corners);
          if (p.mode == SampleMode::kNearest) {
            v = pixel(cell(std::nearbyint(iy), h), cell(std::nearbyint(ix), w));  // ties to even, as PyTorch
          } else {
            const float fx = std::floor(ix), fy = std::floor(iy);
            const double tx = ix - fx, ty = iy - fy;
            const int64_t x0 = cell(fx, w), y0 = cell(fy, h);
            v = (1 - ty) * ((1 - tx) * pixel(y0, x0) + tx * pixel(y0, x0 + 1)) +
                ty * ((1 - tx) * pixel(y0 + 1, x0) + tx * pixel(y0 + 1, x0 + 1));
          }
        }
        y.f[((n * channels + ch) * ho * wo) + i] = static_cast<float>(v);
      }
    }
  }
  return one(std::move(y));
}

// In the order of the names pickValue is given.
enum class Transform {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
// In the order of the names pickValue is given.
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeParams {
  SampleMode mode;
  Transform transform;
  Nearest nearest;
  double cubic_a;
  bool exclude_outside;
  double extrapolation;
};

ResizeParams resizeParams(const Node& node, int64_t opset) {
  ResizeParams p{};
  p.mode = static_cast<SampleMode>(pickValue(node, opset, "mode", "nearest", {"nearest", "linear", "cubic"}));
  p.transform =
      static_cast<Transform>(pickValue(node, opset, "coordinate_transformation_mode", "half_pixel",
                                       {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                        "tf_half_pixel_for_nn", "tf_crop_and_resize"}));
  p.nearest = static_cast<Nearest>(pickValue(node, opset, "nearest_mode", "round_prefer_floor",
                                             {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}));
  if (node.attrInt("antialias", 0) != 0) refuseAttribute(node, opset, "antialias", "1", "0 only");
  if (node.attr("axes"))
    refuseAttribute(node, opset, "axes", shapeString(node.attrInts("axes")),
                    "resize every axis: leave it out");
  const std::string policy = node.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch")
    refuseAttribute(node, opset, "keep_aspect_ratio_policy", "'" + policy + "'", "stretch only");
  p.cubic_a = node.attrFloat("cubic_coeff_a", -0.75f);
  p.exclude_outside = node.attrInt("exclude_outside", 0) != 0;
  p.extrapolation = node.attrFloat("extrapolation_value", 0.0f);
  return p;
}

void checkResize(const Node& node, int64_t opset) {
  resizeParams(node, opset);
}

// One output coordinate's source taps along one dimension (index, weight), or none when it extrapolates.
struct Taps {
  std::vector<std::pair<int64_t, double>> taps;
  bool extrapolate = false;
};

// The taps of output coordinate `o` along a dimension of `in` source samples at `scale` (out / in when sizes
// are given), after the ONNX reference: the coordinate mapped back in double, neighbours clamped to the
// edge, cubic weights optionally renormalised over the inside taps (exclude_outside). The "resized length"
// of the formulas is in * scale, not rounded to the output size (they differ when scales give a fractional
// length: ONNX's reference and test data use the exact one).
Taps resizeTaps(const ResizeParams& p, int64_t o, int64_t in, double scale, double roi_start,
                double roi_end) {
  const double xo = static_cast<double>(o), n_in = static_cast<double>(in), n_out = n_in * scale;
  double x = 0;
  switch (p.transform) {
    case Transform::kHalfPixel:
      x = (xo + 0.5) / scale - 0.5;
      break;
    case Transform::kPytorchHalfPixel:
      x = n_out > 1 ? (xo + 0.5) / scale - 0.5 : 0.0;
      break;
    case Transform::kAlignCorners:
      x = n_out == 1 ? 0.0 : xo * (n_in - 1) / (n_out - 1);
      break;
    case Transform::kAsymmetric:
      x = xo / scale;
      break;
    case Transform::kTfHalfPixelForNn:
      x = (xo + 0.5) / scale;
      break;
    case Transform::kTfCropAndResize:
      x = n_out > 1 ? roi_start * (n_in - 1) + xo * (roi_end - roi_start) * (n_in - 1) / (n_out - 1)
                    : 0.5 * (roi_start + roi_end) * (n_in - 1);
      break;
  }
  Taps t;
  if (p.transform == Transform::kTfCropAndResize && (x < 0 || x > n_in - 1)) {
    t.extrapolate = true;
    return t;
  }
  auto clampIndex = [in](double v) { return std::clamp<int64_t>(saturateToInt64(v), 0, in - 1); };
  const double f = std::floor(x), frac = x - f;
  if (p.mode == SampleMode::kNearest) {
    double pick = f;
    if (frac != 0) {
      switch (p.nearest) {
        case Nearest::kRoundPreferFloor:
          pick = frac <= 0.5 ? f : f + 1;
          break;
        case Nearest::kRoundPreferCeil:
          pick = frac < 0.5 ? f : f + 1;
          break;
        case Nearest::kFloor:
          pick = f;
          break;
        case Nearest::kCeil:
          pick = f + 1;
          break;
      }
    }
    t.taps.push_back({clampIndex(pick), 1.0});
  } else if (p.mode == SampleMode::kLinear) {
    t.taps.push_back({clampIndex(f), 1 - frac});
    t.taps.push_back({clampIndex(f + 1), frac});
  } else {
    const std::array<double, 4> w = cubicWeights(frac, p.cubic_a);
    double sum = 0;
    for (int64_t k = 0; k < 4; ++k) {
      const double at = f - 1 + static_cast<double>(k);
      const bool outside = at < 0 || at > n_in - 1;
      const double weight = p.exclude_outside && outside ? 0.0 : w[k];
      t.taps.push_back({clampIndex(at), weight});
      sum += weight;
    }
    if (p.exclude_outside && sum != 0)
      for (auto& tap : t.taps) tap.second /= sum;
  }
  // Drop zero weights: a dimension at scale 1 then costs one tap, not two or four.
  std::erase_if(t.taps, [](const auto& tap) { return tap.second == 0.0; });
  return t;
}

// Resize (opset 11+): N-D, separable: per dimension a list of taps per output coordinate, the output the
// weighted sum over the product of every dimension's taps. Sizes or scales give the output shape.
struct ResizeSetup {
  ResizeParams p;
  Shape out;
  std::vector<std::vector<Taps>> taps;  // per dimension, per output coordinate
};

ResizeSetup resizeSetup(const Ctx& c) {
  const ResizeParams p = resizeParams(c.node, c.opset);
  const Tensor& x = c.in(0);
  const size_t rank = x.shape.size();
  if (!x.isFloat() && p.mode != SampleMode::kNearest) c.fail("linear and cubic modes need a float input");
  const Tensor* roi = c.opt(1);
  const Tensor* scales = c.opt(2);
  const Tensor* sizes = c.opt(3);
  if (scales && scales->numel() == 0) scales = nullptr;
  if (sizes && sizes->numel() == 0) sizes = nullptr;
  if ((scales != nullptr) == (sizes != nullptr)) c.fail("exactly one of scales and sizes must be given");
  Shape out(rank);
  std::vector<double> scale(rank);
  if (sizes) {
    const std::vector<int64_t>& s = c.ints(*sizes, "sizes");
    if (s.size() != rank) c.fail("sizes " + shapeString(s) + " do not match rank " + std::to_string(rank));
    for (size_t d = 0; d < rank; ++d) {
      if (s[d] < 0) c.fail("sizes " + shapeString(s) + " hold a negative size");
      out[d] = s[d];
      scale[d] = x.shape[d] > 0 ? static_cast<double>(s[d]) / static_cast<double>(x.shape[d]) : 1.0;
    }
  } else {
    c.requireFloat(*scales, "scales");
    if (static_cast<size_t>(scales->numel()) != rank)
      c.fail("scales must hold one value per dimension (" + std::to_string(rank) + ")");
    for (size_t d = 0; d < rank; ++d) {
      scale[d] = scales->f[d];
      if (!(scale[d] > 0)) c.fail("scales must be positive");
      const double size = std::floor(static_cast<double>(x.shape[d]) * scale[d]);
      if (!(size <= static_cast<double>(kMaxTensorElements))) c.fail("output of more than 2^40 elements");
      out[d] = static_cast<int64_t>(size);
    }
  }
  std::vector<double> roi_start(rank, 0.0), roi_end(rank, 1.0);
  if (p.transform == Transform::kTfCropAndResize) {
    if (!roi || static_cast<size_t>(roi->numel()) != 2 * rank)
      c.fail("tf_crop_and_resize needs roi with 2 values per dimension");
    c.requireFloat(*roi, "roi");
    for (size_t d = 0; d < rank; ++d) {
      roi_start[d] = roi->f[d];
      roi_end[d] = roi->f[d + rank];
    }
  }
  if (c.count(out) == 0) return {p, out, {}};
  if (x.numel() == 0) c.fail("cannot resize an empty input to a non-empty output");
  std::vector<std::vector<Taps>> taps(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t o = 0; o < out[d]; ++o)
      taps[d].push_back(resizeTaps(p, o, x.shape[d], scale[d], roi_start[d], roi_end[d]));
  return {p, out, std::move(taps)};
}

Outputs opResize(const Ctx& c) {
  const Tensor& x = c.in(0);
  const size_t rank = x.shape.size();
  ResizeSetup setup = resizeSetup(c);
  const ResizeParams& p = setup.p;
  const Shape& out = setup.out;
  Tensor y = c.output(x.dtype, out);
  if (y.numel() == 0) return one(std::move(y));
  const std::vector<std::vector<Taps>>& taps = setup.taps;
  const std::vector<int64_t> in_strides = rowStrides(x.shape);
  std::vector<int64_t> pos(rank, 0);
  std::vector<size_t> pick(rank, 0);  // which tap of each dimension, in the product
  const int64_t total = y.numel();
  for (int64_t k = 0; k < total; ++k) {
    bool extrapolate = false;
    for (size_t d = 0; d < rank; ++d) extrapolate = extrapolate || taps[d][pos[d]].extrapolate;
    double v = p.extrapolation;
    if (!extrapolate) {
      v = 0;
      std::fill(pick.begin(), pick.end(), 0);
      while (true) {
        double weight = 1;
        int64_t src = 0;
        for (size_t d = 0; d < rank; ++d) {
          const auto& tap = taps[d][pos[d]].taps[pick[d]];
          weight *= tap.second;
          src += tap.first * in_strides[d];
        }
        v += weight * x.asDouble(static_cast<size_t>(src));
        size_t d = rank;
        while (d-- > 0) {
          if (++pick[d] < taps[d][pos[d]].taps.size()) break;
          pick[d] = 0;
        }
        if (d == static_cast<size_t>(-1)) break;
      }
    }
    y.set(static_cast<size_t>(k), v);
    for (size_t d = rank; d-- > 0;) {
      if (++pos[d] < out[d]) break;
      pos[d] = 0;
    }
  }
  return one(std::move(y));
}

// ---- The table ----

// Runs kernel K and rounds float16 / bfloat16 outputs to their precision (kernels compute in float32).
template <Outputs (*K)(const Ctx&)>
Outputs run(const Node& node, Inputs inputs, int64_t opset) {
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
  Outputs out = K(c);
  for (Tensor& t : out)
    if (t.dtype == DType::kFloat16 || t.dtype == DType::kBFloat16)
      for (float& v : t.f) v = roundToFloatType(v, t.dtype);
  return out;
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
    {"LeakyRelu", 6, run<opLeakyRelu>, "", "alpha"},
    {"Less", 7, run<opLess>, "", ""},
    {"Log", 6, run<opLog>, "", ""},
    {"MatMul", 1, run<opMatMul>, "", ""},
    {"MaxPool", 1, run<opMaxPool>, "N-D windows, Indices output",
     "auto_pad ceil_mode>=10 dilations>=10 kernel_shape pads storage_order>=8 strides", checkPool},
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

std::span<const OpInfo> cpuOps() {
  return kOps;
}

ResizeTapTables resizeTapTables(const Node& node, std::span<const Tensor* const> inputs, int64_t opset) {
  const Ctx c{node, inputs, opset};
  ResizeSetup setup = resizeSetup(c);
  ResizeTapTables tables;
  tables.out = setup.out;
  tables.extrapolation = setup.p.extrapolation;
  for (const std::vector<Taps>& axis : setup.taps) {
    ResizeTapTables::Axis& a = tables.axes.emplace_back();
    for (const Taps& t : axis) {
      a.extrapolate.push_back(t.extrapolate);
      a.taps.push_back(t.taps);
    }
  }
  return tables;
}

const OpInfo* findCpuOp(const std::string& op_type) {
  auto it = std::lower_bound(std::begin(kOps), std::end(kOps), op_type,
                             [](const OpInfo& op, const std::string& name) { return op.op_type < name; });
  return it != std::end(kOps) && it->op_type == op_type ? &*it : nullptr;
}

void checkCpuNode(const Node& node, int64_t opset) {
  if (!node.domain.empty() && node.domain != "ai.onnx")
    nodeError(node, opset, "domain '" + node.domain + "' is not supported (only the default ONNX domain)");
  const OpInfo* op = findCpuOp(node.op_type);
  if (!op) nodeError(node, opset, "operator " + node.op_type + " is not supported by the CPU executor");
  if (opset < op->min_opset)
    nodeError(
        node, opset,
        "the CPU kernel implements " + node.op_type + " from opset " + std::to_string(op->min_opset) + " on");
  for (const auto& entry : node.attributes) {
    bool known = false;
    if (!attributeAllowed(op->attributes, entry.first, opset, &known))
      nodeError(node, opset,
                "attribute " + entry.first + " is not supported by the CPU kernel" +
                    (known ? " at this opset" : ""));
  }
  if (op->check) op->check(node, opset);
}

}  // namespace sf::nn
