// Rounding of float32 values to the float types the neural layer holds as float32 (float16, bfloat16), for
// every kernel that writes a tensor (nn_common.glsl, nn_image.comp). Type codes: ONNX TensorProto.DataType.
const uint kFloat16 = 10u, kBFloat16 = 16u;

// float32 -> float16 -> float32, rounding to nearest even (written out: the GLSL packing rounds as the
// implementation likes).
float roundHalf(float v) {
  uint x = floatBitsToUint(v);
  uint sign = x & 0x80000000u, a = x & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return v;                                         // inf, NaN
  if (a >= 0x477FF000u) return uintBitsToFloat(sign | 0x7F800000u);       // rounds past 65504
  if (a < 0x38800000u) {                                                  // half subnormal: steps of 2^-24
    float q = roundEven(uintBitsToFloat(a) * 16777216.0) / 16777216.0;
    return sign != 0u ? -q : q;
  }
  a = (a + 0xFFFu + ((a >> 13) & 1u)) & 0xFFFFE000u;
  return uintBitsToFloat(sign | a);
}
float roundBFloat(float v) {
  uint x = floatBitsToUint(v);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return v;
  return uintBitsToFloat((x + 0x7FFFu + ((x >> 16) & 1u)) & 0xFFFF0000u);
}
float roundTo(float v, uint t) {
  if (t == kFloat16) return roundHalf(v);
  if (t == kBFloat16) return roundBFloat(v);
  return v;
}
