#version 460
// Radix sort pass, step 1: per sub-block (the contiguous keys one subgroup owns, see gpu_shared.h), the
// count of each 8-bit digit, stored digit-major (hist[digit * sub_blocks + sub_block]) so that one
// exclusive scan gives every sub-block's first output position per digit.
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require

layout(local_size_x = SF_SORT_WG) in;
shared uint counts[SF_MAX_SUBGROUPS][SF_RADIX];

void main() {
  FrameRef fr = pc.frame;
  uint n = pc.scan_count.v[SF_SORT_DESC_N];  // pc.scan_count: this sort's descriptor
  uint nsg = pc.subgroups;
  if (gl_NumSubgroups != nsg) {
    if (gl_LocalInvocationIndex == 0u) fr.f.counters.v[SF_COUNTER_ERROR] = 1u;
    return;
  }
  uint sub_blocks = pc.scan_count.v[SF_SORT_DESC_BLOCKS] * nsg;
  bool alt = (pc.flags & SF_FLAG_SOURCE_ALT) != 0u, hi = (pc.flags & SF_FLAG_KEY_HI) != 0u;
  Uints keys = hi ? (alt ? fr.f.keys_hi_alt : fr.f.keys_hi) : (alt ? fr.f.keys_lo_alt : fr.f.keys_lo);
  for (uint s = 0u; s < nsg; ++s)
    for (uint d = gl_LocalInvocationIndex; d < SF_RADIX; d += SF_SORT_WG) counts[s][d] = 0u;
  barrier();
  uint sg = gl_SubgroupID, width = gl_SubgroupSize;
  uint rounds = pc.scan_count.v[SF_SORT_DESC_ROUNDS];
  uint start = (gl_WorkGroupID.x * SF_SORT_WG + sg * width) * rounds;
  for (uint r = 0u; r < rounds; ++r) {
    uint e = start + r * width + gl_SubgroupInvocationID;
    if (e < n) atomicAdd(counts[sg][(keys.v[e] >> pc.shift) & 0xffu], 1u);
  }
  barrier();
  for (uint s = 0u; s < nsg; ++s)
    for (uint d = gl_LocalInvocationIndex; d < SF_RADIX; d += SF_SORT_WG)
      pc.scan_data.v[d * sub_blocks + gl_WorkGroupID.x * nsg + s] = counts[s][d];
}
