#version 460
// A fused chain of elementwise float operators: up to 6 inputs read once (broadcast through their strides
// over the output's dimensions), up to 16 operations on registers, one output written: intermediates never
// reach memory. Each operation's result is rounded to its own value's type, as the unfused nodes would.
// Parameters: [0] rank, [1..6] output dims, [7] output offset, [8] output type, [9] input count, per input k
// at 10 + 8k: offset, type, strides[6]; [58] operation count, per operation i at 59 + 6i: op (nn_codes.h),
// registers a, b, c (inputs are registers 0..5, operation i writes 6 + i; 255: absent), value type, alpha.
#include "nn_codes.h"
#include "nn_common.glsl"
#include "nn_ops.glsl"

layout(local_size_x = 256) in;

void main() {
  uint i = invocationIndex();
  if (i >= pc.count) return;
  uint rank = P(0), inputs = P(9), ops = P(58);
  float regs[22];
  uint offs[6];
  for (uint k = 0u; k < 6u; ++k) offs[k] = P(10u + 8u * k);
  uint rest = i;
  for (int d = int(rank) - 1; d >= 0; --d) {
    uint dim = P(1u + uint(d));
    uint c = rest % dim;
    rest /= dim;
    for (uint k = 0u; k < inputs; ++k) offs[k] += c * P(12u + 8u * k + uint(d));
  }
  for (uint k = 0u; k < inputs; ++k) regs[k] = loadF(offs[k], P(11u + 8u * k));
  for (uint o = 0u; o < ops; ++o) {
    uint base = 59u + 6u * o;
    uint op = P(base), ra = P(base + 1u), rb = P(base + 2u), rc = P(base + 3u), t = P(base + 4u);
    float alpha = PF(base + 5u);
    float a = regs[ra], r;
    if (op == NN_CLIP) {
      r = a;
      if (rb != 255u && !isnan(r)) r = max(r, regs[rb]);
      if (rc != 255u && !isnan(r)) r = min(r, regs[rc]);
    } else if (op < 40u) {
      r = unaryF(op, a, alpha, 0.0);
    } else {
      r = binaryF(op, a, regs[rb]);
    }
    regs[6u + o] = roundTo(r, t);
  }
  storeF(P(7) + i, regs[6u + ops - 1u], P(8));
}
