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

// Columns 4 cg .. 4 cg + 3 of output row `row` (those inside the matrix).
void storeRow(uint row, vec4 v, uint rows, uint M, uint N, uint cg) {
  if (row >= rows) return;
  uint m = row % M, n = cg * 4u, at = P(9) + row * N + n, ot = P(30);
  storeF(at, productFinish(v.x, m, n), ot);
  if (n + 1u < N) storeF(at + 1u, productFinish(v.y, m, n + 1u), ot);
  if (n + 2u < N) storeF(at + 2u, productFinish(v.z, m, n + 2u), ot);
  if (n + 3u < N) storeF(at + 3u, productFinish(v.w, m, n + 3u), ot);
}

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
  // Four named accumulators (indexed only by constants: a run-time-indexed array would live in local memory).
  vec4 acc0 = vec4(0.0), acc1 = vec4(0.0), acc2 = vec4(0.0), acc3 = vec4(0.0);
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
        uint at = rt * (kSlice + 1u) + kk, step = row_threads * (kSlice + 1u);
        acc0 = fma(vec4(tile_a[at]), b, acc0);
        acc1 = fma(vec4(tile_a[at + step]), b, acc1);
        acc2 = fma(vec4(tile_a[at + 2u * step]), b, acc2);
        acc3 = fma(vec4(tile_a[at + 3u * step]), b, acc3);
      }
    }
  }
  if (!computes) return;
  storeRow(row0 + rt, acc0, rows, M, N, cg);
  storeRow(row0 + rt + row_threads, acc1, rows, M, N, cg);
  storeRow(row0 + rt + 2u * row_threads, acc2, rows, M, N, cg);
  storeRow(row0 + rt + 3u * row_threads, acc3, rows, M, N, cg);
}
