// Shared by the neural layer's compute kernels (vulkan_executor.cpp). Every tensor lives in one arena of
// 32-bit words reached through a device address: float types as float32 (float16 and bfloat16 values rounded
// to their type after every operation), integer and bool types as int32. A dispatch reads its parameters
// (offsets in words, dimensions, strides, ONNX type codes) from a parameter buffer at word `base`.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint w[]; };

layout(push_constant) uniform Push {
  Words data;    // the arena
  Words params;  // the plan's parameter words
  uint base;     // this dispatch's first parameter word
  uint count;    // invocations that do work
} pc;

uint P(uint k) { return pc.params.w[pc.base + k]; }
float PF(uint k) { return uintBitsToFloat(P(k)); }
int PI(uint k) { return int(P(k)); }

// The flat index of this invocation over a grid of up to 65535 x N workgroups.
uint invocationIndex() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

// ONNX TensorProto.DataType codes.
const uint kUInt8 = 2u, kInt8 = 3u, kUInt16 = 4u, kInt16 = 5u, kBool = 9u, kFloat16 = 10u, kBFloat16 = 16u;
bool isFloatType(uint t) { return t == 1u || t == 10u || t == 11u || t == 16u; }

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
int wrapTo(int v, uint t) {
  if (t == kUInt8) return v & 255;
  if (t == kInt8) return bitfieldExtract(v, 0, 8);
  if (t == kUInt16) return v & 65535;
  if (t == kInt16) return bitfieldExtract(v, 0, 16);
  if (t == kBool) return v != 0 ? 1 : 0;
  return v;
}
// A float truncated toward zero into int32 (NaN: 0; saturating).
int truncToInt(float v) {
  if (isnan(v)) return 0;
  return int(clamp(trunc(v), -2147483648.0, 2147483520.0));
}

// A float truncated toward zero and clamped to an integer type's range (NaN: 0), as Cast does; int64 is
// held as int32 here, so it clamps to int32.
int saturateTo(float v, uint t) {
  if (isnan(v)) return 0;
  v = trunc(v);
  float lo = -2147483648.0, hi = 2147483647.0;
  if (t == kUInt8) lo = 0.0, hi = 255.0;
  else if (t == kInt8) lo = -128.0, hi = 127.0;
  else if (t == kUInt16) lo = 0.0, hi = 65535.0;
  else if (t == kInt16) lo = -32768.0, hi = 32767.0;
  if (v <= lo) return int(lo);
  if (v >= hi) return hi >= 2147483647.0 ? 2147483647 : int(hi);
  return int(v);
}

uint word(uint off) { return pc.data.w[off]; }
float loadF(uint off, uint t) { uint w = pc.data.w[off]; return isFloatType(t) ? uintBitsToFloat(w) : float(int(w)); }
int loadI(uint off, uint t) { uint w = pc.data.w[off]; return isFloatType(t) ? truncToInt(uintBitsToFloat(w)) : int(w); }
void storeF(uint off, float v, uint t) {
  if (isFloatType(t)) pc.data.w[off] = floatBitsToUint(roundTo(v, t));
  else if (t == kBool) pc.data.w[off] = (v != 0.0 || isnan(v)) ? 1u : 0u;
  else pc.data.w[off] = uint(wrapTo(truncToInt(v), t));
}
void storeI(uint off, int v, uint t) {
  if (isFloatType(t)) pc.data.w[off] = floatBitsToUint(roundTo(float(v), t));
  else pc.data.w[off] = uint(wrapTo(v, t));
}
