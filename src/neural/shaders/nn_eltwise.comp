#version 460
// Elementwise operators with multidirectional broadcasting: one invocation per output element; up to three
// inputs read through their own strides over the output's dimensions (0 on a broadcast axis).
// Parameters: [0] op, [1] rank, [2..7] output dims, [8] output offset, [9] output type, then per input k
// (k = 0..2) at 10 + 8k: offset, type, strides[6]; [34] alpha, [35] beta (float bits), [36] which inputs are
// present (bit k).
#include "nn_codes.h"
#include "nn_common.glsl"

layout(local_size_x = 256) in;

float erfApprox(float x) {
  // Abramowitz & Stegun 7.1.26 refined (max error 1.2e-7): erf(x) = 1 - t*exp(-x^2 + poly(t)).
  float z = abs(x);
  float t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
            t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}

float unaryF(uint op, float x, float alpha, float beta) {
  switch (op) {
    case NN_IDENTITY: return x;
    case NN_RELU: return x > 0.0 ? x : (isnan(x) ? x : 0.0);
    case NN_SIGMOID: return x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
    case NN_TANH: return tanh(clamp(x, -20.0, 20.0)) + (isnan(x) ? x : 0.0);
    case NN_EXP: return exp(x);
    case NN_LOG: return x < 0.0 ? uintBitsToFloat(0x7FC00000u) : (x == 0.0 ? -1.0 / 0.0 : log(x));
    case NN_SIN: return sin(x);
    case NN_COS: return cos(x);
    case NN_SQRT: return x < 0.0 ? uintBitsToFloat(0x7FC00000u) : sqrt(x);
    case NN_ABS: return abs(x);
    case NN_NEG: return -x;
    case NN_RECIPROCAL: return 1.0 / x;
    case NN_FLOOR: return floor(x);
    case NN_CEIL: return ceil(x);
    case NN_LEAKY_RELU: return x >= 0.0 ? x : alpha * x;
    case NN_ERF: return erfApprox(x);
    case NN_SIGN: return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : x);
    case NN_ROUND: return roundEven(x);
    case NN_SOFTPLUS: return x > 20.0 ? x : log(1.0 + exp(x));
    case NN_ELU: return x >= 0.0 ? x : alpha * (exp(x) - 1.0);
    case NN_HARD_SIGMOID: return clamp(alpha * x + beta, 0.0, 1.0);
    case NN_TAN: return tan(x);
  }
  return x;
}

int unaryI(uint op, int x) {
  switch (op) {
    case NN_RELU: return max(x, 0);
    case NN_ABS: return abs(x);
    case NN_NEG: return -x;
    case NN_NOT: return x != 0 ? 0 : 1;
    case NN_SIGN: return sign(x);
  }
  return x;
}

float binaryF(uint op, float a, float b) {
  switch (op) {
    case NN_ADD: return a + b;
    case NN_SUB: return a - b;
    case NN_MUL: return a * b;
    case NN_DIV: return a / b;
    case NN_POW: {
      if (b == 0.0) return 1.0;
      if (a < 0.0 && b == trunc(b)) {
        float m = pow(-a, b);
        return mod(b, 2.0) == 0.0 ? m : -m;
      }
      return pow(a, b);
    }
    case NN_MAX: return isnan(a) || isnan(b) ? a + b : max(a, b);
    case NN_MIN: return isnan(a) || isnan(b) ? a + b : min(a, b);
    case NN_PRELU: return a >= 0.0 ? a : a * b;
  }
  return a;
}

int binaryI(uint op, int a, int b) {
  switch (op) {
    case NN_ADD: return a + b;
    case NN_SUB: return a - b;
    case NN_MUL: return a * b;
    case NN_DIV: return b == 0 ? 0 : a / b;
    case NN_POW: {
      if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) != 0 ? -1 : 1) : 0);
      int r = 1, base = a;
      for (int e = b; e > 0; e >>= 1) {
        if ((e & 1) != 0) r *= base;
        base *= base;
      }
      return r;
    }
    case NN_MAX: return max(a, b);
    case NN_MIN: return min(a, b);
    case NN_AND: return (a != 0 && b != 0) ? 1 : 0;
    case NN_OR: return (a != 0 || b != 0) ? 1 : 0;
    case NN_XOR: return ((a != 0) != (b != 0)) ? 1 : 0;
    case NN_PRELU: return a >= 0 ? a : a * b;
  }
  return a;
}

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
      else storeI(out_off, loadI(off0, t0), ot);
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
