#version 460
// Radix sort pass, step 2: stable scatter of each block's (lo, hi, value) triples to their digit's place.
// Within a round of SF_SORT_WG keys, an element's rank among equal digits comes from subgroup ballots
// (portable to any subgroup size up to 128), and per-subgroup digit counts in shared memory order the
// subgroups; rounds run in sequence, so the sort is stable and needs no inter-workgroup progress.
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require

layout(local_size_x = SF_SORT_WG) in;
shared uint sg_counts[SF_MAX_SUBGROUPS][SF_RADIX];  // per subgroup digit counts, then exclusive prefixes
shared uint digit_base[SF_RADIX];                    // this block's next free position per digit
shared uint round_total[SF_RADIX];

void main() {
  FrameRef fr = pc.frame;
  uint n = min(fr.f.counters.v[SF_COUNTER_KEYS], fr.f.key_capacity);
  uint blocks = fr.f.counters.v[SF_COUNTER_SORT_BLOCKS];
  bool alt = (pc.pad0 & SF_FLAG_SOURCE_ALT) != 0u, hi = (pc.pad0 & SF_FLAG_KEY_HI) != 0u;
  Uints src_lo = alt ? fr.f.keys_lo_alt : fr.f.keys_lo, dst_lo = alt ? fr.f.keys_lo : fr.f.keys_lo_alt;
  Uints src_hi = alt ? fr.f.keys_hi_alt : fr.f.keys_hi, dst_hi = alt ? fr.f.keys_hi : fr.f.keys_hi_alt;
  Uints src_v = alt ? fr.f.values_alt : fr.f.values, dst_v = alt ? fr.f.values : fr.f.values_alt;
  uint tid = gl_LocalInvocationID.x;
  for (uint d = tid; d < SF_RADIX; d += SF_SORT_WG) digit_base[d] = pc.scan_data.v[d * blocks + gl_WorkGroupID.x];
  uint sg = gl_SubgroupID;
  uint lane_order = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;  // element order within a round
  uint base = gl_WorkGroupID.x * SF_SORT_BLOCK;
  for (uint r = 0u; r < SF_SORT_ROUNDS; ++r) {
    for (uint s = 0u; s < gl_NumSubgroups; ++s)
      for (uint d = tid; d < SF_RADIX; d += SF_SORT_WG) sg_counts[s][d] = 0u;
    barrier();
    uint e = base + r * SF_SORT_WG + lane_order;
    bool valid = e < n;
    uint lo = 0u, hi_word = 0u, value = 0u, digit = 0xffu;
    if (valid) {
      lo = src_lo.v[e];
      hi_word = src_hi.v[e];
      value = src_v.v[e];
      digit = ((hi ? hi_word : lo) >> pc.shift) & 0xffu;
    }
    // Lanes of this subgroup with the same digit (invalid lanes, all at the end, use 0xff and are dropped).
    uvec4 match = subgroupBallot(true);
    for (uint b = 0u; b < 8u; ++b) {
      bool bit = ((digit >> b) & 1u) != 0u;
      uvec4 vote = subgroupBallot(bit);
      match &= bit ? vote : ~vote;
    }
    uint rank = subgroupBallotExclusiveBitCount(match);
    uint same = subgroupBallotBitCount(match);
    if (valid && rank == same - 1u) sg_counts[sg][digit] = same;
    barrier();
    for (uint d = tid; d < SF_RADIX; d += SF_SORT_WG) {
      uint acc = 0u;
      for (uint s = 0u; s < gl_NumSubgroups; ++s) {
        uint c = sg_counts[s][d];
        sg_counts[s][d] = acc;
        acc += c;
      }
      round_total[d] = acc;
    }
    barrier();
    if (valid) {
      uint dst = digit_base[digit] + sg_counts[sg][digit] + rank;
      dst_lo.v[dst] = lo;
      dst_hi.v[dst] = hi_word;
      dst_v.v[dst] = value;
    }
    barrier();
    for (uint d = tid; d < SF_RADIX; d += SF_SORT_WG) digit_base[d] += round_total[d];
    barrier();
  }
}
