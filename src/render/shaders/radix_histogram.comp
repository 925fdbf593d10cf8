#version 460
// Radix sort pass, step 1: per block of SF_SORT_BLOCK keys, the count of each 8-bit digit, stored
// digit-major (hist[digit * blocks + block]) so that one exclusive scan gives every block's base offset.
#include "common.glsl"

layout(local_size_x = SF_SORT_WG) in;
shared uint counts[SF_RADIX];

void main() {
  FrameRef fr = pc.frame;
  uint n = min(fr.f.counters.v[SF_COUNTER_KEYS], fr.f.key_capacity);
  uint blocks = fr.f.counters.v[SF_COUNTER_SORT_BLOCKS];
  bool alt = (pc.pad0 & SF_FLAG_SOURCE_ALT) != 0u, hi = (pc.pad0 & SF_FLAG_KEY_HI) != 0u;
  Uints keys = hi ? (alt ? fr.f.keys_hi_alt : fr.f.keys_hi) : (alt ? fr.f.keys_lo_alt : fr.f.keys_lo);
  for (uint d = gl_LocalInvocationID.x; d < SF_RADIX; d += SF_SORT_WG) counts[d] = 0u;
  barrier();
  uint base = gl_WorkGroupID.x * SF_SORT_BLOCK;
  for (uint r = 0u; r < SF_SORT_ROUNDS; ++r) {
    uint e = base + r * SF_SORT_WG + gl_LocalInvocationID.x;
    if (e < n) atomicAdd(counts[(keys.v[e] >> pc.shift) & 0xffu], 1u);
  }
  barrier();
  for (uint d = gl_LocalInvocationID.x; d < SF_RADIX; d += SF_SORT_WG) pc.scan_data.v[d * blocks + gl_WorkGroupID.x] = counts[d];
}
