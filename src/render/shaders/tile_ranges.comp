#version 460
// Per tile, the [begin, end) range of its keys in the sorted list (tiles with no key keep [0, 0)).
#include "common.glsl"

layout(local_size_x = SF_WG_SIZE) in;

void main() {
  FrameRef fr = pc.frame;
  uint n = min(fr.f.counters.v[SF_COUNTER_KEYS], fr.f.key_capacity);  // keys of the frame
  uint i = gl_GlobalInvocationID.x;
  if (i >= n) return;
  Uints keys = (pc.pad0 & SF_FLAG_SOURCE_ALT) != 0u ? fr.f.keys_hi_alt : fr.f.keys_hi;
  uint tile = keys.v[i];
  if (tile >= fr.f.tiles_x * fr.f.tiles_y) return;  // padding keys (see emit_keys.comp)
  if (i == 0u || keys.v[i - 1u] != tile) fr.f.tile_ranges.v[tile].x = i;
  if (i + 1u == n || keys.v[i + 1u] != tile) fr.f.tile_ranges.v[tile].y = i + 1u;
}
