#version 460
// Data movement through a gather map (Reshape-free copies: Transpose, Slice, Concat, Split, Expand, Tile,
// Gather with constant indices, Pad, nearest Resize, ...): out[i] = input j [k] where map[i] = 1 + (j << 28 | k),
// or the fill word where map[i] = 0. The map is made at plan time by the operator's own CPU kernel run on
// index tensors, so the GPU copies exactly what the reference computes.
// Parameters: [0] output offset, [1] map offset, [2] fill word, [3] input count, [4..] input offsets.
#include "nn_common.glsl"

layout(local_size_x = 256) in;

void main() {
  uint i = invocationIndex();
  if (i >= pc.count) return;
  uint m = pc.data.w[P(1) + i];
  uint value = P(2);
  if (m != 0u) {
    m -= 1u;
    value = pc.data.w[P(4u + (m >> 28)) + (m & 0x0FFFFFFFu)];
  }
  pc.data.w[P(0) + i] = value;
}
