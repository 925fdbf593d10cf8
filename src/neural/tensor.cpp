#include "neural/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/half.h"
#include "core/limits.h"

namespace sf::nn {

std::string dtypeName(DType t) {
  switch (t) {
    case DType::kUndefined:
      return "undefined";
    case DType::kFloat32:
      return "float32";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt8:
      return "int8";
    case DType::kUInt16:
      return "uint16";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kString:
      return "string";
    case DType::kBool:
      return "bool";
    case DType::kFloat16:
      return "float16";
    case DType::kFloat64:
      return "float64";
    case DType::kUInt32:
      return "uint32";
    case DType::kUInt64:
      return "uint64";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "type " + std::to_string(static_cast<int32_t>(t));
}

bool isFloatType(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kFloat64 || t == DType::kBFloat16;
}

bool isSupportedType(DType t) {
  switch (t) {
    case DType::kFloat32:
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kUInt16:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kBool:
    case DType::kFloat16:
    case DType::kFloat64:
    case DType::kUInt32:
    case DType::kUInt64:
    case DType::kBFloat16:
      return true;
    case DType::kUndefined:
    case DType::kString:
      return false;
  }
  return false;
}

int64_t saturateToInt64(double v) {
  if (std::isnan(v)) return 0;
  // 2^63 is exact in double; every double below it (and at or above -2^63) truncates into int64.
  constexpr double kTwo63 = 9223372036854775808.0;
  if (v >= kTwo63) return std::numeric_limits<int64_t>::max();
  if (v < -kTwo63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

int64_t elementCount(const Shape& s) {
  // The product of the non-zero dimensions is bounded too, so that no partial product of an accepted shape
  // (strides, outer and inner block sizes) can overflow, even in a tensor of zero elements.
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : s) {
    if (d < 0) throw Error("tensor shape " + shapeString(s) + " has a negative dimension");
    if (d == 0) {
      empty = true;
    } else if (n > kMaxTensorElements / d) {
      throw Error("tensor shape " + shapeString(s) +
                  " has more than 2^40 elements (or non-zero dimensions whose product is)");
    } else {
      n *= d;
    }
  }
  return empty ? 0 : n;
}

std::string shapeString(const Shape& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) {
    if (k) out += ", ";
    out += std::to_string(s[k]);
  }
  return out + "]";
}

Tensor::Tensor(DType type, Shape s) : dtype(type), shape(std::move(s)) {
  if (!isSupportedType(type)) throw Error("tensors of type " + dtypeName(type) + " are not supported");
  size_t n = static_cast<size_t>(elementCount(shape));
  // Tensors a model asks for (outputs of its nodes, folded constants) count against the load memory limit,
  // so a small file cannot make the executor allocate more than the machine has.
  checkByteBudget("ONNX model", static_cast<uint64_t>(n) * (isFloatType(type) ? 4 : 8),
                  "a tensor of shape " + shapeString(shape));
  if (isFloatType(type)) {
    f.assign(n, 0.0f);
  } else {
    i.assign(n, 0);
  }
}

void Tensor::set(size_t k, double v) {
  if (isFloat()) {
    f[k] = roundToFloatType(v, dtype);
  } else if (dtype == DType::kBool) {
    i[k] = v != 0.0 ? 1 : 0;  // NaN is not zero: true, as a cast to bool gives
  } else {
    i[k] = wrapToIntType(saturateToInt64(v), dtype);
  }
}

namespace {

// The double rounded to float32 "to odd": truncated toward zero, with the last mantissa bit set when any
// discarded bit was. Rounding that float to a format with at least two fewer mantissa bits (float16: 11,
// bfloat16: 8, float32: 24) then rounds exactly as rounding the double directly would, which a plain
// double -> float -> half conversion does not (the first rounding can create a false tie).
float roundToOddFloat(double v) {
  float r = static_cast<float>(v);  // nearest; NaN and infinity stay what they are
  if (!std::isfinite(r) || static_cast<double>(r) == v) return r;
  if (std::fabs(static_cast<double>(r)) > std::fabs(v)) r = std::nextafter(r, 0.0f);  // truncate instead
  uint32_t bits;
  std::memcpy(&bits, &r, 4);
  bits |= 1u;
  std::memcpy(&r, &bits, 4);
  return r;
}

float roundToBFloat16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if (std::isnan(x)) {
    bits = (bits & 0x80000000u) | 0x7fc00000u;  // a quiet NaN: the mantissa bits kept must not be all zero
  } else {
    bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even; a carry into the exponent is correct
    bits &= 0xffff0000u;
  }
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

}  // namespace

float roundToFloatType(double v, DType type) {
  switch (type) {
    case DType::kFloat16:
      return halfToFloat(floatToHalf(roundToOddFloat(v)));
    case DType::kBFloat16:
      return roundToBFloat16(roundToOddFloat(v));
    default:
      return static_cast<float>(v);
  }
}

int64_t wrapToIntType(int64_t v, DType type) {
  switch (type) {
    case DType::kBool:
      return v != 0 ? 1 : 0;
    case DType::kUInt8:
      return static_cast<int64_t>(static_cast<uint8_t>(v));
    case DType::kInt8:
      return static_cast<int64_t>(static_cast<int8_t>(v));  // modular since C++20
    case DType::kUInt16:
      return static_cast<int64_t>(static_cast<uint16_t>(v));
    case DType::kInt16:
      return static_cast<int64_t>(static_cast<int16_t>(v));
    case DType::kUInt32:
      return static_cast<int64_t>(static_cast<uint32_t>(v));
    case DType::kInt32:
      return static_cast<int64_t>(static_cast<int32_t>(v));
    default:
      return v;
  }
}

int64_t intTypeMin(DType type) {
  switch (type) {
    case DType::kBool:
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32:
      return 0;
    case DType::kInt8:
      return std::numeric_limits<int8_t>::min();
    case DType::kInt16:
      return std::numeric_limits<int16_t>::min();
    case DType::kInt32:
      return std::numeric_limits<int32_t>::min();
    default:
      return std::numeric_limits<int64_t>::min();
  }
}

int64_t intTypeMax(DType type) {
  switch (type) {
    case DType::kBool:
      return 1;
    case DType::kUInt8:
      return std::numeric_limits<uint8_t>::max();
    case DType::kUInt16:
      return std::numeric_limits<uint16_t>::max();
    case DType::kUInt32:
      return std::numeric_limits<uint32_t>::max();
    case DType::kInt8:
      return std::numeric_limits<int8_t>::max();
    case DType::kInt16:
      return std::numeric_limits<int16_t>::max();
    case DType::kInt32:
      return std::numeric_limits<int32_t>::max();
    default:
      return std::numeric_limits<int64_t>::max();
  }
}

}  // namespace sf::nn
