#version 460
// Scan, step 1 of 3: the sum of each SF_SCAN_BLOCK-element block of pc.scan_data into pc.scan_sums.
#include "common.glsl"

layout(local_size_x = SF_WG_SIZE) in;
shared uint partial[SF_WG_SIZE];

void main() {
  uint count = pc.scan_count.v[0];
  uint base = gl_WorkGroupID.x * SF_SCAN_BLOCK + gl_LocalInvocationID.x * 4u;
  uint sum = 0u;
  for (uint k = 0u; k < 4u; ++k)
    if (base + k < count) sum += pc.scan_data.v[base + k];
  partial[gl_LocalInvocationID.x] = sum;
  barrier();
  for (uint stride = SF_WG_SIZE / 2; stride > 0u; stride >>= 1) {
    if (gl_LocalInvocationID.x < stride) partial[gl_LocalInvocationID.x] += partial[gl_LocalInvocationID.x + stride];
    barrier();
  }
  if (gl_LocalInvocationID.x == 0u) pc.scan_sums.v[gl_WorkGroupID.x] = partial[0];
}
