// Tensors of the neural layer: an ONNX element type, a static shape and the values. Float types (float32,
// float16, float64, bfloat16) are held as float32 (float16 values exactly; float64 rounded), integer and
// bool types as int64, so every kernel is written once per storage class. Row-major (C order).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sf::nn {

// ONNX TensorProto.DataType codes.
enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

// "float32", "int64", ...; "type <code>" for codes outside the enum.
std::string dtypeName(DType t);
// Float types are stored in Tensor::f, the others (integers, bool) in Tensor::i. Strings are not supported.
bool isFloatType(DType t);
bool isSupportedType(DType t);

using Shape = std::vector<int64_t>;

// A double truncated toward zero into int64: NaN gives 0, values beyond the range saturate (a plain cast
// would be undefined behaviour there).
int64_t saturateToInt64(double v);

// Element count of a shape (1 for a scalar, the empty shape). Throws sf::Error for a negative dimension or
// when the product of the non-zero dimensions exceeds kMaxTensorElements (also for zero-element shapes, so
// that no stride or block size of an accepted shape overflows).
constexpr int64_t kMaxTensorElements = int64_t{1} << 40;
int64_t elementCount(const Shape& s);
// "[2, 3, 4]".
std::string shapeString(const Shape& s);

struct Tensor {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::vector<float> f;    // float types
  std::vector<int64_t> i;  // integer and bool types

  Tensor() = default;
  // Zero-filled tensor of `type` and `shape`. Throws sf::Error for a type that is not supported (strings) and
  // for the shapes elementCount refuses.
  Tensor(DType type, Shape s);

  int64_t numel() const { return elementCount(shape); }
  bool isFloat() const { return isFloatType(dtype); }
  // Element k as double / int64 whatever the storage (bool and integers exact, uint64 read unsigned; floats
  // truncated toward zero and saturated for int).
  double asDouble(size_t k) const {
    if (isFloat()) return static_cast<double>(f[k]);
    return dtype == DType::kUInt64 ? static_cast<double>(static_cast<uint64_t>(i[k]))
                                   : static_cast<double>(i[k]);
  }
  int64_t asInt(size_t k) const { return isFloat() ? saturateToInt64(f[k]) : i[k]; }
  // Sets element k from a double, rounded to the type: floats by roundToFloatType, integers truncated toward
  // zero (saturating at the int64 range, NaN -> 0) then wrapped to their width, bool to 0/1 (NaN is true).
  void set(size_t k, double v);
};

// Rounds a value to what `type` can hold (float16/bfloat16 rounding, integer wrapping, bool 0/1).
// Float types round to nearest even, once, from the double (float16 and bfloat16 do not go through a float32
// rounding first); overflow gives +-infinity. Non-float types are treated as float32.
float roundToFloatType(double v, DType type);
// Keeps the low bits of `v` that `type` holds, read back with the type's signedness (int16: 200000 ->
// 3392, uint8: -1 -> 255); bool gives 0/1; int64 and uint64 (held as its two's complement bits) unchanged.
int64_t wrapToIntType(int64_t v, DType type);
// The smallest and largest value of an integer or bool type (uint64: the int64 range it is held in).
int64_t intTypeMin(DType type);
int64_t intTypeMax(DType type);

}  // namespace sf::nn
