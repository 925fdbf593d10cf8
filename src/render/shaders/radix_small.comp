#version 460
// A whole radix sort in one workgroup, for sorts small enough that the multi-workgroup passes
// (radix_histogram, the histogram scan, radix_scatter: five dispatches and barriers per 8-bit pass) cost
// more in their fixed latency than in work. The same passes as recordSort's, with the same stable result
// and the same ping-pong between the key buffers (an odd number of passes leaves the result in the
// alternates): each subgroup owns a contiguous sub-block, counts its digits into shared memory, one scan
// of the digit-major counts gives every sub-block's first position per digit, and each subgroup scatters
// its keys in order with ballot ranks, as radix_scatter does. Workgroup barriers stand in for the dispatch
// barriers between steps and passes.
//
// pc.scan_count: the sort's descriptor (SF_SORT_DESC_N); pc.shift: 8-bit passes over the low word in bits
// 0-7, over the high word in bits 8-15; pc.flags: SF_FLAG_CARRY_*; pc.subgroups: the subgroups the host expects.
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0) in;

// The key buffers through coherent references: a pass reads what other subgroups of the workgroup wrote
// in the pass before.
layout(buffer_reference, scalar) coherent buffer CoherentUints { uint v[]; };

// Digit-major counts, then first positions: cnt[digit * nsg + sub-block].
shared uint cnt[SF_SMALL_SORT_SUB_BLOCKS * SF_RADIX];

#define SUBGROUP_SHARED_BARRIER() controlBarrier(gl_ScopeSubgroup, gl_ScopeSubgroup, gl_StorageSemanticsShared, gl_SemanticsAcquireRelease)
#define WORKGROUP_BARRIER() \
  controlBarrier(gl_ScopeWorkgroup, gl_ScopeWorkgroup, gl_StorageSemanticsShared | gl_StorageSemanticsBuffer, gl_SemanticsAcquireRelease)

void main() {
  FrameRef fr = pc.frame;
  uint nsg = pc.subgroups;
  if (gl_NumSubgroups != nsg || nsg > SF_SMALL_SORT_SUB_BLOCKS) {
    if (gl_LocalInvocationIndex == 0u) fr.f.counters.v[SF_COUNTER_ERROR] = 1u;
    return;
  }
  uint n = pc.scan_count.v[SF_SORT_DESC_N];
  uint lo_passes = pc.shift & 0xffu, passes = lo_passes + ((pc.shift >> 8) & 0xffu);
  uint sg = gl_SubgroupID, width = gl_SubgroupSize, lane = gl_SubgroupInvocationID, tid = gl_LocalInvocationIndex;
  uint threads = gl_WorkGroupSize.x;
  uint entries = nsg * SF_RADIX, per_thread = entries / threads;  // threads = nsg * width, so 256 / width
  // This subgroup's sub-block: a multiple of the subgroup width, in order.
  uint per = ((n + nsg - 1u) / nsg + width - 1u) / width * width;
  uint start = min(n, sg * per), end = min(n, start + per);
  CoherentUints lo_a = CoherentUints(uint64_t(fr.f.keys_lo)), lo_b = CoherentUints(uint64_t(fr.f.keys_lo_alt));
  CoherentUints hi_a = CoherentUints(uint64_t(fr.f.keys_hi)), hi_b = CoherentUints(uint64_t(fr.f.keys_hi_alt));
  CoherentUints v_a = CoherentUints(uint64_t(fr.f.values)), v_b = CoherentUints(uint64_t(fr.f.values_alt));

  for (uint pass = 0u; pass < passes; ++pass) {
    bool alt = (pass & 1u) != 0u, hi = pass >= lo_passes;
    uint shift = 8u * (hi ? pass - lo_passes : pass);
    bool carry_lo = !hi || (pc.flags & SF_FLAG_CARRY_LO) != 0u, carry_hi = hi || (pc.flags & SF_FLAG_CARRY_HI) != 0u;
    CoherentUints src_lo = alt ? lo_b : lo_a, dst_lo = alt ? lo_a : lo_b;
    CoherentUints src_hi = alt ? hi_b : hi_a, dst_hi = alt ? hi_a : hi_b;
    CoherentUints src_v = alt ? v_b : v_a, dst_v = alt ? v_a : v_b;
    CoherentUints src_key = hi ? src_hi : src_lo;

    // Counts of this pass's digits, per sub-block (after the previous pass's scatter is done with cnt and
    // its key writes are visible).
    WORKGROUP_BARRIER();
    for (uint i = tid; i < entries; i += threads) cnt[i] = 0u;
    WORKGROUP_BARRIER();
    for (uint e = start + lane; e < end; e += width) atomicAdd(cnt[((src_key.v[e] >> shift) & 0xffu) * nsg + sg], 1u);
    WORKGROUP_BARRIER();

    // Exclusive scan of the digit-major counts: each thread a run of per_thread entries, the runs' sums
    // scanned across the workgroup (subgroup scans, then the subgroups' totals through cnt[0..nsg)).
    uint run[SF_RADIX / 8];  // per_thread <= 256 / 8
    uint sum = 0u;
    for (uint k = 0u; k < per_thread; ++k) {
      run[k] = cnt[tid * per_thread + k];
      sum += run[k];
    }
    uint inclusive = subgroupInclusiveAdd(sum);
    WORKGROUP_BARRIER();
    if (lane == width - 1u) cnt[sg] = inclusive;
    WORKGROUP_BARRIER();
    uint before = 0u;
    for (uint s = 0u; s < sg; ++s) before += cnt[s];
    WORKGROUP_BARRIER();
    uint running = before + inclusive - sum;
    for (uint k = 0u; k < per_thread; ++k) {
      cnt[tid * per_thread + k] = running;
      running += run[k];
    }
    WORKGROUP_BARRIER();

    // Stable scatter of this subgroup's keys, one step of `width` keys at a time (radix_scatter's ranking).
    for (uint base = start; base < end; base += width) {
      uint e = base + lane;
      bool valid = e < end;
      uint lo = 0u, hi_word = 0u, value = 0u;
      if (valid) {
        if (carry_lo) lo = src_lo.v[e];
        if (carry_hi) hi_word = src_hi.v[e];
        value = src_v.v[e];
      }
      uint digit = valid ? ((hi ? hi_word : lo) >> shift) & 0xffu : 0xffu;
      uvec4 match = subgroupBallot(true);
      for (uint b = 0u; b < 8u; ++b) {
        bool bit = ((digit >> b) & 1u) != 0u;
        uvec4 vote = subgroupBallot(bit);
        match &= bit ? vote : ~vote;
      }
      uint rank = subgroupBallotExclusiveBitCount(match);
      uint same = subgroupBallotBitCount(match);
      uint at = cnt[digit * nsg + sg];
      if (valid) {
        uint dst = at + rank;
        if (carry_lo) dst_lo.v[dst] = lo;
        if (carry_hi) dst_hi.v[dst] = hi_word;
        dst_v.v[dst] = value;
      }
      SUBGROUP_SHARED_BARRIER();
      if (valid && rank == same - 1u) cnt[digit * nsg + sg] = at + same;
      SUBGROUP_SHARED_BARRIER();
    }
  }
}
