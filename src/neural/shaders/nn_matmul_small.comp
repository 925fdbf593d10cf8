#version 460
// Matrix products too narrow for the 64 x 64 tiles of nn_gemm.comp (a side under 16, or many tiny batched
// matrices such as 3 x 3 covariance products): one invocation per output element, A's row and B's column
// read through the same parameters as nn_gemm.comp (see there).
#include "nn_common.glsl"

layout(local_size_x = 256) in;

void main() {
  uint i = invocationIndex();
  if (i >= pc.count) return;
  uint M = P(0), N = P(1), K = P(2);
  uint n = i % N, m = (i / N) % M, batch = i / (M * N);
  uint a_base = P(3), b_base = P(6), rest = batch;
  for (int d = int(P(10)) - 1; d >= 0; --d) {
    uint dim = P(11u + uint(d));
    uint c = rest % dim;
    rest /= dim;
    a_base += c * P(15u + uint(d));
    b_base += c * P(19u + uint(d));
  }
  uint ta = P(31), tb = P(32);
  uint a_row = a_base + m * P(4), sak = P(5), b_col = b_base + n * P(8), sbk = P(7);
  float acc = 0.0;
  for (uint k = 0u; k < K; ++k) acc = fma(loadF(a_row + k * sak, ta), loadF(b_col + k * sbk, tb), acc);
  float v = PF(27) * acc;
  if (P(24) != 0u) v += PF(28) * uintBitsToFloat(pc.data.w[P(23) + m * P(25) + n * P(26)]);
  uint act = P(29);
  if (act == 1u) v = max(v, 0.0);
  else if (act == 2u) v = 1.0 / (1.0 + exp(-v));
  else if (act == 3u) v = tanh(v);
  storeF(P(9) + batch * M * N + m * N + n, v, P(30));
}
