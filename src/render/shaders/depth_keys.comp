#version 460
// Depth sort input: one (depth bits, slot) pair per slot. Culled slots get the largest key and sort last;
// the sort is stable, so equal depths keep slot order, exactly as the CPU's (tile, depth) key order.
#include "common.glsl"

layout(local_size_x = SF_WG_SIZE) in;

void main() {
  FrameRef fr = pc.frame;
  uint slot = gl_GlobalInvocationID.x;
  if (slot >= fr.f.slot_count) return;
  fr.f.keys_lo.v[slot] = fr.f.touched.v[slot] != 0u ? floatBitsToUint(fr.f.color_depth.v[slot].w) : 0xffffffffu;
  fr.f.values.v[slot] = slot;
}
