#version 460
// Batched matrix product with broadcasting batch axes (MatMul) and Gemm's alpha, beta, transposes and bias:
// out[b][m][n] = act(alpha * sum_k A[b][m][k] * B[b][k][n] + beta * C[m][n]). A 64 x 64 output tile per
// workgroup of 256 invocations, each computing 4 x 4 outputs from 16-deep slices of A and B staged in
// shared memory. A and B are read through strides, so transposed operands need no copy.
// Parameters: [0] M, [1] N, [2] K, [3] A offset, [4] A stride m, [5] A stride k, [6] B offset, [7] B stride
// k, [8] B stride n, [9] output offset, [10] batch rank, [11..14] batch dims, [15..18] A batch strides,
// [19..22] B batch strides, [23] C offset, [24] C present, [25] C stride m, [26] C stride n, [27] alpha,
// [28] beta, [29] activation (0 none, 1 relu, 2 sigmoid, 3 tanh), [30] output type, [31] A type, [32] B type.
#include "nn_codes.h"
#include "nn_common.glsl"
#include "nn_ops.glsl"
#include "nn_product.glsl"

layout(local_size_x = 256) in;

shared float tile_a[16][64 + 1];
shared float tile_b[16][64 + 1];

void main() {
  uint M = P(0), N = P(1), K = P(2);
  uint tx = gl_LocalInvocationID.x % 16u, ty = gl_LocalInvocationID.x / 16u;
  uint row0 = gl_WorkGroupID.y * 64u, col0 = gl_WorkGroupID.x * 64u;
  uint batch = gl_WorkGroupID.z;
  uint a_base = productRowOfA(batch * M, M), b_base = productBaseOfB(batch);
  uint sam = P(4), sak = P(5), sbk = P(7), sbn = P(8);
  uint ta = P(31), tb = P(32);
  bool a_k_fast = sak == 1u && sam != 1u, b_k_fast = sbk == 1u && sbn != 1u;
  float acc[4][4];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) acc[r][c] = 0.0;
  uint lid = gl_LocalInvocationID.x;
  for (uint k0 = 0u; k0 < K; k0 += 16u) {
    // 16 x 64 values of each operand: 4 per invocation, neighbouring invocations along the operand's
    // contiguous axis (k for a row-major A or a transposed B) so that their loads coalesce.
    for (uint e = 0u; e < 4u; ++e) {
      uint e_flat = lid + e * 256u;
      uint kk = a_k_fast ? e_flat % 16u : e_flat / 64u, mm = a_k_fast ? e_flat / 16u : e_flat % 64u;
      uint gm = row0 + mm, gk = k0 + kk;
      tile_a[kk][mm] = (gm < M && gk < K) ? loadF(a_base + gm * sam + gk * sak, ta) : 0.0;
      kk = b_k_fast ? e_flat % 16u : e_flat / 64u;
      uint nn = b_k_fast ? e_flat / 16u : e_flat % 64u;
      uint gn = col0 + nn;
      gk = k0 + kk;
      tile_b[kk][nn] = (gn < N && gk < K) ? loadF(b_base + gk * sbk + gn * sbn, tb) : 0.0;
    }
    barrier();
    for (uint kk = 0u; kk < 16u; ++kk) {
      float a[4], b[4];
      for (uint r = 0u; r < 4u; ++r) a[r] = tile_a[kk][ty + 16u * r];
      for (uint c = 0u; c < 4u; ++c) b[c] = tile_b[kk][tx + 16u * c];
      for (uint r = 0u; r < 4u; ++r)
        for (uint c = 0u; c < 4u; ++c) acc[r][c] = fma(a[r], b[c], acc[r][c]);
    }
    barrier();
  }
  uint ot = P(30), out_base = P(9) + batch * M * N;
  for (uint r = 0u; r < 4u; ++r) {
    uint m = row0 + ty + 16u * r;
    if (m >= M) continue;
    for (uint c = 0u; c < 4u; ++c) {
      uint n = col0 + tx + 16u * c;
      if (n >= N) continue;
      storeF(out_base + m * N + n, productFinish(acc[r][c], m, n), ot);
    }
  }
}
