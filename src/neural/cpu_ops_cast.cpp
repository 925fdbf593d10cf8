// Cast (cpu_ops_kernels.h): conversions between every supported element type, with the rounding and
// saturation rules below.
#include <algorithm>

#include "neural/cpu_ops_kernels.h"

namespace sf::nn::cpu {

namespace {

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

}  // namespace

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

}  // namespace sf::nn::cpu
