// Shared by the matrix-product kernels (nn_gemm.comp, nn_matmul_small.comp), whose
// parameter words are laid out as nn_gemm.comp describes.

// The first word of row `row` (batch * M + m) of A: the batch index walks the broadcast batch axes.
uint productRowOfA(uint row, uint M) {
  uint m = row % M, batch = row / M;
  uint a_base = P(3), rest = batch;
  for (int d = int(P(10)) - 1; d >= 0; --d) {
    uint dim = P(11u + uint(d));
    a_base += (rest % dim) * P(15u + uint(d));
    rest /= dim;
  }
  return a_base + m * P(4);
}

// The first word of B for batch `batch` (B's broadcast batch strides).
uint productBaseOfB(uint batch) {
  uint b_base = P(6), rest = batch;
  for (int d = int(P(10)) - 1; d >= 0; --d) {
    uint dim = P(11u + uint(d));
    b_base += (rest % dim) * P(19u + uint(d));
    rest /= dim;
  }
  return b_base;
}

// Output (m, n) from its sum: alpha * acc + beta * C[m][n] (when C is given), then the fused activation.
float productFinish(float acc, uint m, uint n) {
  float v = PF(27) * acc;
  if (P(24) != 0u) v += PF(28) * uintBitsToFloat(pc.data.w[P(23) + m * P(25) + n * P(26)]);
  uint act = P(29);
  if (act != 0u) v = unaryF(act, v, 0.0, 0.0);  // NN_RELU, NN_SIGMOID, NN_TANH: as the standalone nodes
  return v;
}
