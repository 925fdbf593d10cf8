#version 460
// Matrix products too narrow for the 64 x 64 tiles of nn_gemm.comp (a side under 16, or many tiny batched
// matrices such as 3 x 3 covariance products): one invocation per output element, neighbouring invocations
// along a row of the output. Parameters as nn_gemm.comp (see there), and [35] = 1 for many tiny matrices
// (M, N, K <= 4): one invocation per matrix.
#include "nn_codes.h"
#include "nn_common.glsl"
#include "nn_ops.glsl"
#include "nn_product.glsl"

layout(local_size_x = 256) in;

void main() {
  uint M = P(0), N = P(1), K = P(2);
  uint ta = P(31), tb = P(32), sak = P(5);
  if (P(35) != 0u) {
    // Many tiny matrices (M, N, K <= 4): one invocation per batch computes its whole M x N block.
    uint batch = invocationIndex();
    if (batch >= pc.count) return;
    uint b_base = productBaseOfB(batch);
    uint a_base = productRowOfA(batch * M, M), sam = P(4), sbk = P(7), sbn = P(8), dst = P(9) + batch * M * N, ot = P(30);
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
        storeF(dst + m * N + n, productFinish(acc, m, n), ot);
      }
    }
    return;
  }
  uint i = invocationIndex();
  if (i >= pc.count) return;
  uint n = i % N, m = (i / N) % M, batch = i / (M * N);
  uint b_base = productBaseOfB(batch);
  uint a_row = productRowOfA(batch * M + m, M), b_col = b_base + n * P(8), sbk = P(7);
  float acc = 0.0;
  for (uint k = 0u; k < K; ++k) acc = fma(loadF(a_row + k * sak, ta), loadF(b_col + k * sbk, tb), acc);
  storeF(P(9) + batch * M * N + m * N + n, productFinish(acc, m, n), P(30));
}
