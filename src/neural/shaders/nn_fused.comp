#version 460
// A fused chain of elementwise float operators: up to 8 inputs read once (broadcast through their strides
// over the output's dimensions), up to 16 operations, one output written: intermediates never reach memory.
// Each operation reads inputs and the previous operation's result (a chain: every intermediate has exactly
// one reader, the next operation), and its result is rounded to its own value's type, as the unfused nodes
// would. Operands are named, not indexed (an array indexed at run time would live in slow local memory).
// Parameters: [0] rank, [1..6] output dims, [7] output offset, [8] output type, [9] input count, per input k
// at 10 + 8k: offset, type, strides[6]; [74] operation count, per operation i at 75 + 6i: op (nn_codes.h),
// operands a, b, c (0..7: inputs, 8: the previous result, 255: absent), value type, alpha.
#include "nn_codes.h"
#include "nn_common.glsl"
#include "nn_ops.glsl"

layout(local_size_x = 256) in;

float in0, in1, in2, in3, in4, in5, in6, in7;

float operand(uint r, float acc) {
  switch (r) {
    case 0u: return in0;
    case 1u: return in1;
    case 2u: return in2;
    case 3u: return in3;
    case 4u: return in4;
    case 5u: return in5;
    case 6u: return in6;
    case 7u: return in7;
  }
  return acc;
}

void main() {
  uint i = invocationIndex();
  if (i >= pc.count) return;
  uint rank = P(0), inputs = P(9), ops = P(74);
  uint o0 = P(10), o1 = P(18), o2 = P(26), o3 = P(34), o4 = P(42), o5 = P(50), o6 = P(58), o7 = P(66);
  uint rest = i;
  for (int d = int(rank) - 1; d >= 0; --d) {
    uint dim = P(1u + uint(d));
    uint c = rest % dim;
    rest /= dim;
    uint s = 12u + uint(d);
    o0 += c * P(s);
    o1 += c * P(s + 8u);
    o2 += c * P(s + 16u);
    o3 += c * P(s + 24u);
    o4 += c * P(s + 32u);
    o5 += c * P(s + 40u);
    o6 += c * P(s + 48u);
    o7 += c * P(s + 56u);
  }
  in0 = loadF(o0, P(11));
  in1 = inputs > 1u ? loadF(o1, P(19)) : 0.0;
  in2 = inputs > 2u ? loadF(o2, P(27)) : 0.0;
  in3 = inputs > 3u ? loadF(o3, P(35)) : 0.0;
  in4 = inputs > 4u ? loadF(o4, P(43)) : 0.0;
  in5 = inputs > 5u ? loadF(o5, P(51)) : 0.0;
  in6 = inputs > 6u ? loadF(o6, P(59)) : 0.0;
  in7 = inputs > 7u ? loadF(o7, P(67)) : 0.0;
  float acc = 0.0;
  for (uint o = 0u; o < ops; ++o) {
    uint base = 75u + 6u * o;
    uint op = P(base), ra = P(base + 1u), rb = P(base + 2u), rc = P(base + 3u);
    float a = operand(ra, acc), r;
    if (op == NN_CLIP) {
      r = a;
      if (rb != 255u && !isnan(r)) r = max(r, operand(rb, acc));
      if (rc != 255u && !isnan(r)) r = min(r, operand(rc, acc));
    } else if (op < 40u) {
      r = unaryF(op, a, PF(base + 5u), 0.0);
    } else {
      r = binaryF(op, a, operand(rb, acc));
    }
    acc = roundTo(r, P(base + 4u));
  }
  storeF(P(7) + i, acc, P(8));
}
