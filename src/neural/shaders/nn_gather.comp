#version 460
// Gather along one axis with indices computed on the GPU (negative indices count from the end; an index
// out of range reads the nearest valid one, where the CPU reference refuses the run).
// Parameters: [0] output offset, [1] data offset, [2] indices offset, [3] indices type, [4] outer, [5] axis
// dim, [6] index count, [7] inner.
#include "nn_common.glsl"

layout(local_size_x = 256) in;

void main() {
  uint i = invocationIndex();
  if (i >= pc.count) return;
  uint inner = P(7), n = P(6), dim = P(5);
  uint r = i % inner, j = (i / inner) % n, o = i / (inner * n);
  int k = loadI(P(2) + j, P(3));
  if (k < 0) k += int(dim);
  k = clamp(k, 0, int(dim) - 1);
  pc.data.w[P(0) + i] = pc.data.w[P(1) + (o * dim + uint(k)) * inner + r];
}
