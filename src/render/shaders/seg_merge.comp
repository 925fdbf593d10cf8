#version 460
// Merge pass pc.shift of the tile lists longer than one chunk: within each such list, sorted runs of
// w = SF_SEG_BLOCK << pc.shift pairs are merged two by two into runs of 2w, from one pair buffer into the
// other (even passes read keys_lo / values, odd ones the alternates). One workgroup per SF_SEG_BLOCK places
// of the output (a chunk of the list): two merge-path searches in global memory find which pairs of the two
// runs fill those places (pairs are unique, see seg_sort.comp, so the split is exact), both slices are
// staged in shared memory with coalesced reads, each thread merges E places there, and the block is written
// back coalesced. Global traffic is one read and one write of each pair per pass.
// Lists of at most w pairs are done and not touched: a list's final buffer follows from its length
// (sfMergePasses in gpu_shared.h). A run without a partner is copied.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#include "common.glsl"

#define E (SF_SEG_BLOCK / SF_SEG_WG)  // output places per thread

// Shared-memory places are swizzled within each 32-word row (the XOR of the row's low 4 index bits):
// threads that own E consecutive places (E = 2..16) reach 32 different banks when they touch their k-th
// place together, where the plain layout would put all of a subgroup's accesses in E-fold bank conflicts.
#define SW(i) ((i) ^ (((i) >> 5) & 15u))
layout(local_size_x = SF_SEG_WG) in;
shared uint s_key[SF_SEG_BLOCK], s_val[SF_SEG_BLOCK];

bool pairLess(uint ka, uint va, uint kb, uint vb) { return ka < kb || (ka == kb && va < vb); }

// How many of the first d places of merge(A, B) come from A (A = src[a, a + na), B = src[b, b + nb)): the least
// m in [lo, hi] with A[m] not before B[d - m - 1] (the predicate holds for a prefix of the m). Searched by the
// subgroup's active lanes together: each step the k-th of n lanes tests m_k = lo + (k + 1) s - 1, s = the range
// over n + 1 rounded up, and the range shrinks to one gap between them, so a range of L takes about
// log(L) / log(n + 1) dependent global loads, not log2(L) (1,024 places: 2 steps on NVIDIA's 32 lanes, where one
// thread took 10; one lane searches by halves). Called in uniform control flow; every lane returns it.
uint splitGlobal(Uints src_k, Uints src_v, uint a, uint na, uint b, uint nb, uint d) {
  uint lo = d > nb ? d - nb : 0u, hi = min(d, na);
  uvec4 here = subgroupBallot(true);
  uint lanes = subgroupBallotBitCount(here), k = subgroupBallotExclusiveBitCount(here);
  while (lo < hi) {  // uniform: lo and hi are the same in every lane
    uint step = (hi - lo + lanes) / (lanes + 1u);
    uint m = lo + (k + 1u) * step - 1u;
    bool valid = m < hi;
    bool before = false;
    if (valid) {
      uint ai = a + m, bi = b + d - m - 1u;
      before = pairLess(src_k.v[ai], src_v.v[ai], src_k.v[bi], src_v.v[bi]);
    }
    uint tested = subgroupBallotBitCount(subgroupBallot(valid));
    uint t = subgroupBallotBitCount(subgroupBallot(before));  // the first t of the m tested hold
    uint new_lo = t == 0u ? lo : lo + t * step;               // m_(t-1) + 1
    hi = t < tested ? lo + (t + 1u) * step - 1u : hi;         // m_t
    lo = new_lo;
  }
  return lo;
}

void main() {
  FrameRef fr = pc.frame;
  const uint index = gl_WorkGroupID.y * SF_DISPATCH_ROW + gl_WorkGroupID.x;
  if (index >= fr.f.counters.v[SF_COUNTER_CHUNKS]) return;  // past the last row's chunks
  uvec2 chunk = fr.f.chunks.v[fr.f.chunk_capacity - 1u - index];  // chunks of lists longer than SF_SEG_SMALL
  uvec2 range = fr.f.tile_ranges.v[chunk.x];
  uint len = range.y - range.x, w = uint(SF_SEG_BLOCK) << pc.shift;
  if (len <= w) return;  // uniform across the workgroup, as every early return below
  uint out0 = chunk.y * SF_SEG_BLOCK;
  if (out0 >= len) return;
  uint out1 = min(out0 + SF_SEG_BLOCK, len), total = out1 - out0;
  bool odd = (pc.shift & 1u) != 0u;
  Uints src_k = odd ? fr.f.keys_lo_alt : fr.f.keys_lo, src_v = odd ? fr.f.values_alt : fr.f.values;
  Uints dst_k = odd ? fr.f.keys_lo : fr.f.keys_lo_alt, dst_v = odd ? fr.f.values : fr.f.values_alt;
  uint b = range.x, tid = gl_LocalInvocationIndex;
  // The pair of runs this block lies in (2w is a multiple of the block): A = [base, a_end), B = [a_end, b_end).
  uint base = out0 & ~(2u * w - 1u), a_end = min(base + w, len), b_end = min(base + 2u * w, len);
  if (a_end == b_end) {  // a run without a partner
    for (uint i = out0 + tid; i < out1; i += SF_SEG_WG) {
      dst_k.v[b + i] = src_k.v[b + i];
      dst_v.v[b + i] = src_v.v[b + i];
    }
    return;
  }
  uint na = a_end - base, nb = b_end - a_end;
  // The two splits, by the first two subgroups (by the first alone where the workgroup is one subgroup), pass
  // through s_key: 32 KiB of shared memory is all some devices have.
  for (uint k = gl_SubgroupID; k < 2u; k += gl_NumSubgroups) {
    uint split = splitGlobal(src_k, src_v, b + base, na, b + a_end, nb, (k == 0u ? out0 : out1) - base);
    if (subgroupElect()) s_key[SW(k)] = split;
  }
  barrier();
  uint i0 = s_key[SW(0u)], i1 = s_key[SW(1u)];
  barrier();  // read before the staging below overwrites them
  uint from_a = i1 - i0;  // this block's pairs from A come first in shared memory, then those from B
  uint j0 = (out0 - base) - i0;
  for (uint i = tid; i < total; i += SF_SEG_WG) {
    uint at = i < from_a ? b + base + i0 + i : b + a_end + j0 + (i - from_a);
    s_key[SW(i)] = src_k.v[at];
    s_val[SW(i)] = src_v.v[at];
  }
  barrier();
  // This thread's places [d, d + E) of the block: a merge-path search in shared memory, then a sequential merge.
  uint key[E], val[E];
  uint d = tid * E, from_b = total - from_a;
  if (d < total) {
    uint lo = d > from_b ? d - from_b : 0u, hi = min(d, from_a);
    while (lo < hi) {
      uint mid = (lo + hi) >> 1, bi = from_a + d - mid - 1u;
      if (pairLess(s_key[SW(mid)], s_val[SW(mid)], s_key[SW(bi)], s_val[SW(bi)])) lo = mid + 1u;
      else hi = mid;
    }
    uint i = lo, j = from_a + d - lo;
    for (uint k = 0u; k < E; ++k) {
      bool take_a = j >= total || (i < from_a && pairLess(s_key[SW(i)], s_val[SW(i)], s_key[SW(j)], s_val[SW(j)]));
      uint at = take_a ? i : j;
      key[k] = s_key[SW(at)], val[k] = s_val[SW(at)];
      if (take_a) ++i;
      else ++j;
    }
  }
  barrier();  // every staged pair read before any is overwritten
  if (d < total)
    for (uint k = 0u; k < E; ++k)
      if (d + k < total) s_key[SW(d + k)] = key[k], s_val[SW(d + k)] = val[k];
  barrier();
  for (uint i = tid; i < total; i += SF_SEG_WG) {
    dst_k.v[b + out0 + i] = s_key[SW(i)];
    dst_v.v[b + out0 + i] = s_val[SW(i)];
  }
}
