#version 460
// Merge pass pc.shift of the tile lists longer than one chunk: within each such list, sorted runs of
// w = SF_SEG_BLOCK << pc.shift pairs are merged two by two into runs of 2w, from one pair buffer into the
// other (even passes read keys_lo / values, odd ones the alternates). One workgroup per chunk; each pair
// finds its place by its rank in the partner run (a binary search; pairs are unique, see seg_sort.comp).
// Lists of at most w pairs are done and not touched: a list's final buffer follows from its length
// (sfMergePasses in gpu_shared.h). A run without a partner is copied.
#include "common.glsl"

layout(local_size_x = SF_SEG_WG) in;

void main() {
  FrameRef fr = pc.frame;
  const uint index = gl_WorkGroupID.y * SF_DISPATCH_ROW + gl_WorkGroupID.x;
  if (index >= fr.f.counters.v[SF_COUNTER_CHUNKS]) return;  // past the last row's chunks
  uvec2 chunk = fr.f.chunks.v[fr.f.chunk_capacity - 1u - index];  // chunks of lists longer than SF_SEG_SMALL
  uvec2 range = fr.f.tile_ranges.v[chunk.x];
  uint len = range.y - range.x, w = uint(SF_SEG_BLOCK) << pc.shift;
  if (len <= w) return;
  bool odd = (pc.shift & 1u) != 0u;
  Uints src_k = odd ? fr.f.keys_lo_alt : fr.f.keys_lo, src_v = odd ? fr.f.values_alt : fr.f.values;
  Uints dst_k = odd ? fr.f.keys_lo : fr.f.keys_lo_alt, dst_v = odd ? fr.f.values : fr.f.values_alt;
  uint b = range.x;
  for (uint e = gl_LocalInvocationIndex; e < SF_SEG_BLOCK; e += SF_SEG_WG) {
    uint pos = chunk.y * SF_SEG_BLOCK + e;
    if (pos >= len) break;
    uint key = src_k.v[b + pos], val = src_v.v[b + pos];
    uint run = pos / w, base = (run & ~1u) * w;
    // The partner run [lo, hi) and where this pair's own run starts in the merged output.
    bool first = (run & 1u) == 0u;
    uint lo = first ? base + w : base, hi = first ? min(base + 2u * w, len) : base + w;
    uint out_pos = pos;
    if (lo < hi) {
      uint l = lo, h = hi;  // the partner's pairs before this one: lower bound
      while (l < h) {
        uint mid = (l + h) >> 1;
        uint km = src_k.v[b + mid];
        if (km < key || (km == key && src_v.v[b + mid] < val)) l = mid + 1u;
        else h = mid;
      }
      out_pos = first ? pos + (l - lo) : pos - w + (l - lo);
    }
    dst_k.v[b + out_pos] = key;
    dst_v.v[b + out_pos] = val;
  }
}
