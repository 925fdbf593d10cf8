#version 460
// Scan, step 3 of 3: exclusive scan within each block plus the block's offset, in place.
#include "common.glsl"

layout(local_size_x = SF_WG_SIZE) in;
shared uint values[SF_WG_SIZE];

void main() {
  uint count = pc.scan_count.v[0];
  uint tid = gl_LocalInvocationID.x;
  uint base = gl_WorkGroupID.x * SF_SCAN_BLOCK + tid * 4u;
  uint v[4];
  uint sum = 0u;
  for (uint k = 0u; k < 4u; ++k) {
    v[k] = base + k < count ? pc.scan_data.v[base + k] : 0u;
    sum += v[k];
  }
  values[tid] = sum;
  barrier();
  for (uint offset = 1u; offset < SF_WG_SIZE; offset <<= 1) {
    uint add = tid >= offset ? values[tid - offset] : 0u;
    barrier();
    values[tid] += add;
    barrier();
  }
  uint running = pc.scan_sums.v[gl_WorkGroupID.x] + values[tid] - sum;
  for (uint k = 0u; k < 4u; ++k) {
    if (base + k < count) pc.scan_data.v[base + k] = running;
    running += v[k];
  }
}
