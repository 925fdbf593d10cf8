#version 460
// After the depth sort: the slots in depth order and their tile counts in that order (to be scanned).
#include "common.glsl"

layout(local_size_x = SF_WG_SIZE) in;

void main() {
  FrameRef fr = pc.frame;
  uint i = gl_GlobalInvocationID.x;
  if (i >= fr.f.slot_count) return;
  uint slot = fr.f.values.v[i];
  fr.f.order.v[i] = slot;
  fr.f.sorted_counts.v[i] = fr.f.touched.v[slot];
}
