#version 460
// Matrix products whose B is one matrix for every row of A (an MLP layer's weights) and narrow: N <= 128
// and K x N (N rounded up to 4) <= 4096. The rows of all batches are one list (batch * M + m); B is staged
// once per workgroup in shared memory as vec4 column groups, A in 16-deep slices of the workgroup's rows
// (loaded along the row, so a row-major A is read as one contiguous block). Each invocation computes 4 rows
// x 4 columns: per k one vec4 of B (shared by the invocations of a column group) and 4 values of A.
// Parameters as nn_gemm.comp (see there); count = the rows (batch * M), [36] column groups (ceil(N / 4)),
// [37] rows per workgroup (4 x min(32, floor(256 / column groups))). Shared memory: 24.5 KiB.
#include "nn_codes.h"
#include "nn_common.glsl"
#include "nn_ops.glsl"
#include "nn_product.glsl"

layout(local_size_x = 256) in;

const uint kSlice = 16u;
shared vec4 staged_b[1024];                // [k][column group]
shared float tile_a[128 * (kSlice + 1u)];  // [row][k] of the current slice (up to 128 rows), a row padded by one word

void main() {
  uint M = P(0), N = P(1), K = P(2), rows = pc.count;
  uint groups = P(36), rows_per_group = P(37), row_threads = rows_per_group / 4u;
  uint ta = P(31), tb = P(32), sak = P(5), sbk = P(7), sbn = P(8), b_base = P(6);
  uint lid = gl_LocalInvocationID.x;
  uint row0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * rows_per_group;
  uint padded = groups * 4u;
  for (uint e = lid; e < K * padded; e += 256u) {
    uint k = e / padded, n = e % padded;
    staged_b[k * groups + n / 4u][n % 4u] = n < N ? loadF(b_base + k * sbk + n * sbn, tb) : 0.0;
  }
  uint cg = lid % groups, rt = lid / groups;
  bool computes = rt < row_threads;
  vec4 acc[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
  for (uint k0 = 0u; k0 < K; k0 += kSlice) {
    uint depth = min(kSlice, K - k0);
    barrier();  // the previous slice is read (and, the first time, B is staged)
    for (uint e = lid; e < rows_per_group * kSlice; e += 256u) {
      uint r = e / kSlice, kk = e % kSlice, row = row0 + r;
      tile_a[r * (kSlice + 1u) + kk] = (row < rows && kk < depth) ? loadF(productRowOfA(row, M) + (k0 + kk) * sak, ta) : 0.0;
    }
    barrier();
    if (computes) {
      for (uint kk = 0u; kk < depth; ++kk) {
        vec4 b = staged_b[(k0 + kk) * groups + cg];
        for (uint i = 0u; i < 4u; ++i) acc[i] = fma(vec4(tile_a[(rt + row_threads * i) * (kSlice + 1u) + kk]), b, acc[i]);
      }
    }
  }
  if (!computes) return;
  uint out_base = P(9), ot = P(30);
  for (uint i = 0u; i < 4u; ++i) {
    uint row = row0 + rt + row_threads * i;
    if (row >= rows) break;
    uint m = row % M;
    for (uint c = 0u; c < 4u; ++c) {
      uint n = cg * 4u + c;
      if (n >= N) break;
      storeF(out_base + row * N + n, productFinish(acc[i][c], m, n), ot);
    }
  }
}
