#version 460
// Chunk sort: one workgroup per chunk of a tile list (tile_setup.comp lists them), its up to SF_SEG_BLOCK
// (depth bits, slot) pairs sorted in shared memory by a bitonic network over the next power of two (padding
// pairs sort last), then written back in place. Pairs compare by depth, then slot: a total order (a slot
// reaches a tile once), so the result is the one order whatever the network, and equal depths keep slot
// order as on the CPU.
#include "common.glsl"

layout(local_size_x = SF_SEG_WG) in;
shared uint s_key[SF_SEG_BLOCK], s_val[SF_SEG_BLOCK];

void main() {
  FrameRef fr = pc.frame;
  uvec2 chunk = fr.f.chunks.v[gl_WorkGroupID.x];
  uvec2 range = fr.f.tile_ranges.v[chunk.x];
  uint start = range.x + chunk.y * SF_SEG_BLOCK;
  uint len = min(uint(SF_SEG_BLOCK), range.y - start);
  if (len < 2u) return;  // uniform across the workgroup
  uint n = 1u << (findMSB(len - 1u) + 1);
  uint tid = gl_LocalInvocationIndex;
  for (uint i = tid; i < n; i += SF_SEG_WG) {
    bool real = i < len;
    s_key[i] = real ? fr.f.keys_lo.v[start + i] : 0xffffffffu;
    s_val[i] = real ? fr.f.values.v[start + i] : 0xffffffffu;
  }
  barrier();
  for (uint k = 2u; k <= n; k <<= 1)
    for (uint j = k >> 1; j > 0u; j >>= 1) {
      for (uint i = tid; i < n / 2u; i += SF_SEG_WG) {
        uint a = 2u * i - (i & (j - 1u)), b = a + j;  // the pair (a, b) at distance j
        uint ka = s_key[a], kb = s_key[b], va = s_val[a], vb = s_val[b];
        bool b_first = kb < ka || (kb == ka && vb < va);
        if (b_first == ((a & k) == 0u)) {  // ascending blocks want b first when smaller, descending ones when larger
          s_key[a] = kb, s_key[b] = ka;
          s_val[a] = vb, s_val[b] = va;
        }
      }
      barrier();
    }
  for (uint i = tid; i < len; i += SF_SEG_WG) {
    fr.f.keys_lo.v[start + i] = s_key[i];
    fr.f.values.v[start + i] = s_val[i];
  }
}
