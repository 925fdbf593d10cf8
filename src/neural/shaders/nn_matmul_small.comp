#version 460
// Matrix products too narrow for the 64 x 64 tiles of nn_gemm.comp (a side under 16, or many tiny batched
// matrices such as 3 x 3 covariance products): one invocation per
// output element, neighbouring invocations along a row of the output. Parameters as nn_gemm.comp (see
// there), and [33] = 1 when B (at most 4096 values, the same for every batch) is staged in shared memory:
// then a subgroup reads one element of A for all its lanes and B without bank conflicts; [35] = 1 for many
// tiny matrices (M, N, K <= 4): one invocation per matrix.
#include "nn_codes.h"
#include "nn_common.glsl"
#include "nn_ops.glsl"

layout(local_size_x = 256) in;

shared float staged_b[4096];

float finish(float acc, uint m, uint n) {
  float v = PF(27) * acc;
  if (P(24) != 0u) v += PF(28) * uintBitsToFloat(pc.data.w[P(23) + m * P(25) + n * P(26)]);
  uint act = P(29);
  if (act != 0u) v = unaryF(act, v, 0.0, 0.0);  // NN_RELU, NN_SIGMOID, NN_TANH: as the standalone nodes
  return v;
}

// The row (batch * M + m) of A.
uint rowOf(uint row, uint M) {
  uint m = row % M, batch = row / M;
  uint a_base = P(3), rest = batch;
  for (int d = int(P(10)) - 1; d >= 0; --d) {
    uint dim = P(11u + uint(d));
    a_base += (rest % dim) * P(15u + uint(d));
    rest /= dim;
  }
  return a_base + m * P(4);
}

void main() {
  uint M = P(0), N = P(1), K = P(2);
  uint ta = P(31), tb = P(32), sak = P(5);
  if (P(33) != 0u) {
    // B staged once per workgroup, which then walks [34] passes of 256 / N rows: count = rows (batch * M).
    uint b_base = P(6), sbk = P(7), sbn = P(8);
    for (uint e = gl_LocalInvocationID.x; e < K * N; e += 256u) staged_b[e] = loadF(b_base + (e / N) * sbk + (e % N) * sbn, tb);
    barrier();
    uint rows_per_pass = 256u / N, lane_n = gl_LocalInvocationID.x % N, lane_r = gl_LocalInvocationID.x / N;
    if (lane_r >= rows_per_pass) return;
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint passes = P(34);
    for (uint pass = 0u; pass < passes; ++pass) {
      uint row = (group * passes + pass) * rows_per_pass + lane_r;
      if (row >= pc.count) return;
      uint a_row = rowOf(row, M);
      float acc = 0.0;
      for (uint k = 0u; k < K; ++k) acc = fma(loadF(a_row + k * sak, ta), staged_b[k * N + lane_n], acc);
      storeF(P(9) + row * N + lane_n, finish(acc, row % M, lane_n), P(30));
    }
    return;
  }
  if (P(35) != 0u) {
    // Many tiny matrices (M, N, K <= 4): one invocation per batch computes its whole M x N block.
    uint batch = invocationIndex();
    if (batch >= pc.count) return;
    uint b_base = P(6), rest = batch;
    for (int d = int(P(10)) - 1; d >= 0; --d) {
      uint dim = P(11u + uint(d));
      b_base += (rest % dim) * P(19u + uint(d));
      rest /= dim;
    }
    uint a_base = rowOf(batch * M, M), sam = P(4), sbk = P(7), sbn = P(8), dst = P(9) + batch * M * N, ot = P(30);
    float b[16];
    for (uint k = 0u; k < 4u; ++k)
      for (uint n = 0u; n < 4u; ++n) b[k * 4u + n] = (k < K && n < N) ? loadF(b_base + k * sbk + n * sbn, tb) : 0.0;
    for (uint m = 0u; m < 4u; ++m) {
      if (m >= M) break;
      float a0 = K > 0u ? loadF(a_base + m * sam, ta) : 0.0, a1 = K > 1u ? loadF(a_base + m * sam + sak, ta) : 0.0;
      float a2 = K > 2u ? loadF(a_base + m * sam + 2u * sak, ta) : 0.0, a3 = K > 3u ? loadF(a_base + m * sam + 3u * sak, ta) : 0.0;
      for (uint n = 0u; n < 4u; ++n) {
        if (n >= N) break;
        float acc = a0 * b[n] + a1 * b[4u + n] + a2 * b[8u + n] + a3 * b[12u + n];
        storeF(dst + m * N + n, finish(acc, m, n), ot);
      }
    }
    return;
  }
  uint i = invocationIndex();
  if (i >= pc.count) return;
  uint n = i % N, m = (i / N) % M, batch = i / (M * N);
  uint b_base = P(6), rest = batch;
  for (int d = int(P(10)) - 1; d >= 0; --d) {
    uint dim = P(11u + uint(d));
    b_base += (rest % dim) * P(19u + uint(d));
    rest /= dim;
  }
  uint a_row = rowOf(batch * M + m, M), b_col = b_base + n * P(8), sbk = P(7);
  float acc = 0.0;
  for (uint k = 0u; k < K; ++k) acc = fma(loadF(a_row + k * sak, ta), loadF(b_col + k * sbk, tb), acc);
  storeF(P(9) + batch * M * N + m * N + n, finish(acc, m, n), P(30));
}
