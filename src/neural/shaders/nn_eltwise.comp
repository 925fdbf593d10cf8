#version 460
// Elementwise operators with multidirectional broadcasting: one invocation per output element; up to three
// inputs read through their own strides over the output's dimensions (0 on a broadcast axis).
// Parameters: [0] op, [1] rank, [2..7] output dims, [8] output offset, [9] output type, then per input k
// (k = 0..2) at 10 + 8k: offset, type, strides[6]; [34] alpha, [35] beta (float bits), [36] which inputs are
// present (bit k).
#include "nn_codes.h"
#include "nn_common.glsl"

layout(local_size_x = 256) in;

#include "nn_ops.glsl"

bool compareF(uint op, float a, float b) {
  switch (op) {
    case NN_EQUAL: return a == b;
    case NN_LESS: return a < b;
    case NN_GREATER: return a > b;
    case NN_LESS_EQUAL: return a <= b;
  }
  return a >= b;
}
bool compareI(uint op, int a, int b) {
  switch (op) {
    case NN_EQUAL: return a == b;
    case NN_LESS: return a < b;
    case NN_GREATER: return a > b;
    case NN_LESS_EQUAL: return a <= b;
  }
  return a >= b;
}

void main() {
  uint i = invocationIndex();
  if (i >= pc.count) return;
  uint op = P(0), rank = P(1);
  uint off0 = P(10), off1 = P(18), off2 = P(26);
  uint rest = i;
  for (int d = int(rank) - 1; d >= 0; --d) {
    uint dim = P(2u + uint(d));
    uint c = rest % dim;
    rest /= dim;
    off0 += c * P(12u + uint(d));
    off1 += c * P(20u + uint(d));
    off2 += c * P(28u + uint(d));
  }
  uint out_off = P(8) + i, ot = P(9);
  uint t0 = P(11), t1 = P(19), t2 = P(27);
  float alpha = PF(34), beta = PF(35);
  uint present = P(36);
  if (op == NN_WHERE) {
    pc.data.w[out_off] = loadI(off0, t0) != 0 ? word(off1) : word(off2);
    return;
  }
  bool int_mode = !isFloatType(t0);
  if (op == NN_CLIP) {
    if (int_mode) {
      int x = loadI(off0, t0);
      if ((present & 2u) != 0u) x = max(x, loadI(off1, t1));
      if ((present & 4u) != 0u) x = min(x, loadI(off2, t2));
      storeI(out_off, x, ot);
    } else {
      float x = loadF(off0, t0);
      if ((present & 2u) != 0u && !isnan(x)) x = max(x, loadF(off1, t1));
      if ((present & 4u) != 0u && !isnan(x)) x = min(x, loadF(off2, t2));
      storeF(out_off, x, ot);
    }
    return;
  }
  if (op == NN_MUL_ADD) {
    storeF(out_off, loadF(off0, t0) * loadF(off1, t1) + loadF(off2, t2), ot);
    return;
  }
  if (op < 40u) {
    if (op == NN_IDENTITY) {
      // Cast: float -> float rounds; int -> float converts; float -> int truncates; int -> int wraps.
      if (isFloatType(ot)) storeF(out_off, loadF(off0, t0), ot);
      else if (ot == kBool) pc.data.w[out_off] = int_mode ? (loadI(off0, t0) != 0 ? 1u : 0u)
                                                         : ((loadF(off0, t0) != 0.0 || isnan(loadF(off0, t0))) ? 1u : 0u);
      else if (int_mode) storeI(out_off, loadI(off0, t0), ot);
      else storeI(out_off, saturateTo(loadF(off0, t0), ot), ot);
    } else if (int_mode) {
      storeI(out_off, unaryI(op, loadI(off0, t0)), ot);
    } else {
      storeF(out_off, unaryF(op, loadF(off0, t0), alpha, beta), ot);
    }
    return;
  }
  if (op >= NN_EQUAL && op <= NN_GREATER_EQUAL) {
    bool r = int_mode ? compareI(op, loadI(off0, t0), loadI(off1, t1)) : compareF(op, loadF(off0, t0), loadF(off1, t1));
    pc.data.w[out_off] = r ? 1u : 0u;
    return;
  }
  if (int_mode) storeI(out_off, binaryI(op, loadI(off0, t0), loadI(off1, t1)), ot);
  else storeF(out_off, binaryF(op, loadF(off0, t0), loadF(off1, t1)), ot);
}
