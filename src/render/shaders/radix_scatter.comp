#version 460
// Radix sort pass, step 2: stable scatter of (lo, hi, value) triples. Each subgroup walks its own
// contiguous sub-block in steps of one key per lane, with its own 256 digit cursors in shared memory
// (initialised from the scanned histogram): a key's rank among equal digits in the step comes from
// subgroup ballots (any subgroup size up to 128), and the last lane of each digit group advances the
// cursor. No workgroup barrier inside the loop and no inter-workgroup progress assumption.
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_memory_scope_semantics : require

// Orders this subgroup's shared-memory accesses only: the scattered global stores need no ordering, and a
// full subgroupBarrier() would make each step wait for them.
#define SUBGROUP_SHARED_BARRIER() controlBarrier(gl_ScopeSubgroup, gl_ScopeSubgroup, gl_StorageSemanticsShared, gl_SemanticsAcquireRelease)

layout(local_size_x = SF_SORT_WG) in;
shared uint cursor[SF_MAX_SUBGROUPS][SF_RADIX];

void main() {
  FrameRef fr = pc.frame;
  uint n = pc.scan_count.v[SF_SORT_DESC_N];  // pc.scan_count: this sort's descriptor
  uint nsg = pc.subgroups;
  if (gl_NumSubgroups != nsg) return;  // reported by radix_histogram
  uint sub_blocks = pc.scan_count.v[SF_SORT_DESC_BLOCKS] * nsg;
  bool alt = (pc.flags & SF_FLAG_SOURCE_ALT) != 0u, hi = (pc.flags & SF_FLAG_KEY_HI) != 0u;
  // The key word always moves; the other word only when asked (the frame's sorts carry just the value).
  bool carry_lo = !hi || (pc.flags & SF_FLAG_CARRY_LO) != 0u, carry_hi = hi || (pc.flags & SF_FLAG_CARRY_HI) != 0u;
  Uints src_lo = alt ? fr.f.keys_lo_alt : fr.f.keys_lo, dst_lo = alt ? fr.f.keys_lo : fr.f.keys_lo_alt;
  Uints src_hi = alt ? fr.f.keys_hi_alt : fr.f.keys_hi, dst_hi = alt ? fr.f.keys_hi : fr.f.keys_hi_alt;
  Uints src_v = alt ? fr.f.values_alt : fr.f.values, dst_v = alt ? fr.f.values : fr.f.values_alt;
  uint sg = gl_SubgroupID, width = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
  uint sub_block = gl_WorkGroupID.x * nsg + sg;
  for (uint d = lane; d < SF_RADIX; d += width) cursor[sg][d] = pc.scan_data.v[d * sub_blocks + sub_block];
  SUBGROUP_SHARED_BARRIER();
  uint rounds = pc.scan_count.v[SF_SORT_DESC_ROUNDS];
  uint start = (gl_WorkGroupID.x * SF_SORT_WG + sg * width) * rounds;
  // Software pipelining: the next step's triple is loaded while this step is ranked and written.
  uint e = start + lane;
  uint lo = 0u, hi_word = 0u, value = 0u;
  if (e < n) {
    if (carry_lo) lo = src_lo.v[e];
    if (carry_hi) hi_word = src_hi.v[e];
    value = src_v.v[e];
  }
  for (uint r = 0u; r < rounds; ++r) {
    if (start + r * width >= n) break;  // uniform across the subgroup
    e = start + r * width + lane;
    bool valid = e < n;
    uint next_e = e + width, next_lo = 0u, next_hi = 0u, next_value = 0u;
    if (r + 1u < rounds && next_e < n) {
      if (carry_lo) next_lo = src_lo.v[next_e];
      if (carry_hi) next_hi = src_hi.v[next_e];
      next_value = src_v.v[next_e];
    }
    uint digit = valid ? ((hi ? hi_word : lo) >> pc.shift) & 0xffu : 0xffu;
    // Lanes with the same digit (invalid lanes, all at the end, carry 0xff and are dropped).
    uvec4 match = subgroupBallot(true);
    for (uint b = 0u; b < 8u; ++b) {
      bool bit = ((digit >> b) & 1u) != 0u;
      uvec4 vote = subgroupBallot(bit);
      match &= bit ? vote : ~vote;
    }
    uint rank = subgroupBallotExclusiveBitCount(match);
    uint same = subgroupBallotBitCount(match);
    uint base = cursor[sg][digit];
    if (valid) {
      uint dst = base + rank;
      if (carry_lo) dst_lo.v[dst] = lo;
      if (carry_hi) dst_hi.v[dst] = hi_word;
      dst_v.v[dst] = value;
    }
    SUBGROUP_SHARED_BARRIER();
    if (valid && rank == same - 1u) cursor[sg][digit] = base + same;
    SUBGROUP_SHARED_BARRIER();
    lo = next_lo;
    hi_word = next_hi;
    value = next_value;
  }
}
