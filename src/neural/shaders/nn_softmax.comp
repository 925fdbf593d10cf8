#version 460
// Softmax / LogSoftmax over one (flattened) axis: one invocation per (outer, inner) row.
// Parameters: [0] log, [1] output offset, [2] input offset, [3] type, [4] outer, [5] axis length, [6] inner.
#include "nn_common.glsl"

layout(local_size_x = 256) in;

void main() {
  uint i = invocationIndex();
  if (i >= pc.count) return;
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
