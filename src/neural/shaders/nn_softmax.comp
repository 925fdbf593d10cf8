#version 460
// Per row: Softmax / LogSoftmax over one (flattened) axis, or (mode 2) LayerNormalization and
// InstanceNormalization: one invocation per (outer, inner) row.
// Parameters: [0] mode (0 softmax, 1 log-softmax, 2 normalise), [1] output offset, [2] input offset, [3] type,
// [4] outer, [5] axis length, [6] inner. Mode 2 (inner 1; mean and variance in two passes): [7] epsilon
// (float bits), [8] scale offset, [9] scale index (0: per element of the row, 1: one value, 2: per row modulo
// [10], the channels), [11] bias offset, [12] bias present, [13] Mean offset, [14] InvStdDev offset, [15]
// which of them are written (bit 0 Mean, bit 1 InvStdDev; float32), [16] 1: each step rounded to the type
// (LayerNormalization's function: normalised, scaled, biased), 0: one rounding at the end, [17] bias index
// (as [9]).
#include "nn_common.glsl"

layout(local_size_x = 256) in;

// Which scale or bias value element k of row `row` takes (modes as parameter [9]).
uint valueIndex(uint mode, uint k, uint row) {
  return mode == 0u ? k : (mode == 1u ? 0u : row % P(10));
}

void normalise(uint row) {
  uint len = P(5), t = P(3), first = P(2) + row * len, out_first = P(1) + row * len;
  float sum = 0.0;
  for (uint k = 0u; k < len; ++k) sum += loadF(first + k, t);
  float mean = sum / float(len);
  float squares = 0.0;
  for (uint k = 0u; k < len; ++k) {
    float d = loadF(first + k, t) - mean;
    squares += d * d;
  }
  float inv = 1.0 / sqrt(squares / float(len) + PF(7));
  uint written = P(15);
  if ((written & 1u) != 0u) pc.data.w[P(13) + row] = floatBitsToUint(mean);
  if ((written & 2u) != 0u) pc.data.w[P(14) + row] = floatBitsToUint(inv);
  uint scale_mode = P(9), bias_mode = P(17);
  bool stepwise = P(16) != 0u, has_bias = P(12) != 0u;
  for (uint k = 0u; k < len; ++k) {
    float scale = uintBitsToFloat(pc.data.w[P(8) + valueIndex(scale_mode, k, row)]);
    float bias = has_bias ? uintBitsToFloat(pc.data.w[P(11) + valueIndex(bias_mode, k, row)]) : 0.0;
    float n = (loadF(first + k, t) - mean) * inv;
    float v = stepwise ? roundTo(roundTo(n, t) * scale, t) + bias : n * scale + bias;
    storeF(out_first + k, v, t);
  }
}

void main() {
  uint i = invocationIndex();
  if (i >= pc.count) return;
  if (P(0) == 2u) {
    normalise(i);
    return;
  }
  uint len = P(5), inner = P(6), t = P(3);
  uint o = i / inner, r = i % inner;
  uint first = o * len * inner + r;
  float m = -1.0 / 0.0;
  for (uint k = 0u; k < len; ++k) m = max(m, loadF(P(2) + first + k * inner, t));
  float sum = 0.0;
  for (uint k = 0u; k < len; ++k) sum += exp(loadF(P(2) + first + k * inner, t) - m);
  bool logarithm = P(0) != 0u;
  for (uint k = 0u; k < len; ++k) {
    float v = loadF(P(2) + first + k * inner, t) - m;
    storeF(P(1) + first + k * inner, logarithm ? v - log(sum) : exp(v) / sum, t);
  }
}
