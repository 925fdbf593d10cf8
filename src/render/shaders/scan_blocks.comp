#version 460
// Scan, step 2 of 3 (one workgroup): exclusive scan of the block sums in place; the grand total goes to
// scan_sums[number of blocks].
#include "common.glsl"

layout(local_size_x = SF_WG_SIZE) in;
shared uint values[SF_WG_SIZE];

void main() {
  uint count = pc.scan_count.v[0];
  uint blocks = (count + SF_SCAN_BLOCK - 1u) / SF_SCAN_BLOCK;
  uint tid = gl_LocalInvocationID.x;
  uint carry = 0u;
  for (uint start = 0u; start < blocks; start += SF_WG_SIZE) {
    uint v = start + tid < blocks ? pc.scan_sums.v[start + tid] : 0u;
    values[tid] = v;
    barrier();
    for (uint offset = 1u; offset < SF_WG_SIZE; offset <<= 1) {  // Hillis-Steele inclusive scan
      uint add = tid >= offset ? values[tid - offset] : 0u;
      barrier();
      values[tid] += add;
      barrier();
    }
    if (start + tid < blocks) pc.scan_sums.v[start + tid] = carry + values[tid] - v;
    carry += values[SF_WG_SIZE - 1];
    barrier();
  }
  if (tid == 0u) pc.scan_sums.v[blocks] = carry;
}
