#version 460
// Reductions over any set of axes: one invocation per output element walks the reduced axes, or (mode
// [31] = 1: few outputs, long reductions, float kinds but log-sum-exp) one workgroup per output whose 256
// invocations stride the reduced elements and combine their partial results in shared memory.
// Parameters: [0] kind, [1] output offset, [2] input offset, [3] type, [4] kept rank, [5..10] kept dims,
// [11..16] their input strides, [17] reduced rank, [18..23] reduced dims, [24..29] their input strides,
// [30] reduced element count, [31] mode.
#include "nn_codes.h"
#include "nn_common.glsl"

layout(local_size_x = 256) in;

uint reducedOffset(uint base, uint r) {
  uint off = base;
  for (int d = int(P(17)) - 1; d >= 0; --d) {
    uint dim = P(18u + uint(d));
    off += (r % dim) * P(24u + uint(d));
    r /= dim;
  }
  return off;
}

shared float partial[256];
shared uint partial_nan[256];

float combine(uint kind, float a, float b) {
  if (kind == NN_RED_MAX) return max(a, b);
  if (kind == NN_RED_MIN) return min(a, b);
  if (kind == NN_RED_PROD) return a * b;
  return a + b;  // sums, means, L1, L2 and sum-square partials, log-sum before its log
}

// Mode 1: the workgroup's output (uniform across it: the dispatch holds whole workgroups of one output).
void cooperative(uint i, uint lane) {
  uint kind = P(0), t = P(3), total = P(30);
  uint base = P(2), rest = i;
  for (int d = int(P(4)) - 1; d >= 0; --d) {
    uint dim = P(5u + uint(d));
    base += (rest % dim) * P(11u + uint(d));
    rest /= dim;
  }
  float acc = kind == NN_RED_PROD ? 1.0 : (kind == NN_RED_MAX ? -1.0 / 0.0 : (kind == NN_RED_MIN ? 1.0 / 0.0 : 0.0));
  bool nan_seen = false;
  for (uint r = lane; r < total; r += 256u) {
    float v = loadF(reducedOffset(base, r), t);
    nan_seen = nan_seen || isnan(v);
    if (kind == NN_RED_L1) v = abs(v);
    else if (kind == NN_RED_L2 || kind == NN_RED_SUM_SQUARE) v = v * v;
    acc = combine(kind, acc, v);
  }
  partial[lane] = acc;
  partial_nan[lane] = nan_seen ? 1u : 0u;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) {
    if (lane < s) {
      partial[lane] = combine(kind, partial[lane], partial[lane + s]);
      partial_nan[lane] |= partial_nan[lane + s];
    }
    barrier();
  }
  if (lane != 0u) return;
  acc = partial[0];
  if ((kind == NN_RED_MAX || kind == NN_RED_MIN) && partial_nan[0] != 0u) acc = uintBitsToFloat(0x7FC00000u);
  if (kind == NN_RED_MEAN) acc /= float(total);
  if (kind == NN_RED_L2) acc = sqrt(acc);
  if (kind == NN_RED_LOG_SUM) acc = log(acc);
  storeF(P(1) + i, acc, t);
}

void main() {
  uint i = invocationIndex();
  if (i >= pc.count) return;
  if (P(31) == 1u) {
    cooperative(i / 256u, i % 256u);
    return;
  }
  uint kind = P(0), t = P(3), total = P(30);
  uint base = P(2), rest = i;
  for (int d = int(P(4)) - 1; d >= 0; --d) {
    uint dim = P(5u + uint(d));
    base += (rest % dim) * P(11u + uint(d));
    rest /= dim;
  }
  uint out_off = P(1) + i;
  if (!isFloatType(t)) {
    int acc = kind == NN_RED_PROD ? 1 : (kind == NN_RED_MAX ? -2147483647 - 1 : (kind == NN_RED_MIN ? 2147483647 : 0));
    for (uint r = 0u; r < total; ++r) {
      int v = loadI(reducedOffset(base, r), t);
      if (kind == NN_RED_MAX) acc = max(acc, v);
      else if (kind == NN_RED_MIN) acc = min(acc, v);
      else if (kind == NN_RED_PROD) acc *= v;
      else if (kind == NN_RED_L1) acc += abs(v);
      else if (kind == NN_RED_SUM_SQUARE || kind == NN_RED_L2) acc += v * v;
      else acc += v;
    }
    if (kind == NN_RED_MEAN) acc = total == 0u ? 0 : acc / int(total);
    if (kind == NN_RED_L2) acc = int(sqrt(float(acc)));
    storeI(out_off, acc, t);
    return;
  }
  float shift = 0.0;
  if (kind == NN_RED_LOG_SUM_EXP) {
    shift = -1.0 / 0.0;
    for (uint r = 0u; r < total; ++r) shift = max(shift, loadF(reducedOffset(base, r), t));
    if (isinf(shift)) shift = 0.0;
  }
  float acc = kind == NN_RED_PROD ? 1.0 : (kind == NN_RED_MAX ? -1.0 / 0.0 : (kind == NN_RED_MIN ? 1.0 / 0.0 : 0.0));
  bool nan_seen = false;
  for (uint r = 0u; r < total; ++r) {
    float v = loadF(reducedOffset(base, r), t);
    nan_seen = nan_seen || isnan(v);
    switch (kind) {
      case NN_RED_MAX: acc = max(acc, v); break;
      case NN_RED_MIN: acc = min(acc, v); break;
      case NN_RED_PROD: acc *= v; break;
      case NN_RED_L1: acc += abs(v); break;
      case NN_RED_L2:
      case NN_RED_SUM_SQUARE: acc += v * v; break;
      case NN_RED_LOG_SUM_EXP: acc += exp(v - shift); break;
      default: acc += v;
    }
  }
  if ((kind == NN_RED_MAX || kind == NN_RED_MIN) && nan_seen) acc = uintBitsToFloat(0x7FC00000u);
  if (kind == NN_RED_MEAN) acc /= float(total);
  if (kind == NN_RED_L2) acc = sqrt(acc);
  if (kind == NN_RED_LOG_SUM) acc = log(acc);
  if (kind == NN_RED_LOG_SUM_EXP) acc = log(acc) + shift;
  storeF(out_off, acc, t);
}
