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
const uint kUInt8 = 2u, kInt8 = 3u, kUInt16 = 4u, kInt16 = 5u, kBool = 9u;  // kFloat16, kBFloat16: nn_round.glsl
bool isFloatType(uint t) { return t == 1u || t == 10u || t == 11u || t == 16u; }

#include "nn_round.glsl"

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
