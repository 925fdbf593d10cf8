#version 460
// One (tile, slot) key per tile each visible slot reaches, written in depth order (slot order for equal
// depths): a stable sort by tile then yields every tile's splats front to back.
#include "common.glsl"
#include "tile_test.glsl"

layout(local_size_x = SF_WG_SIZE) in;

void main() {
  FrameRef fr = pc.frame;
  uint i = gl_GlobalInvocationID.x;
  if (i >= fr.f.slot_count) return;
  // sorted_counts[] now holds exclusive offsets; an entry's key count is the distance to the next one.
  uint offset = fr.f.sorted_counts.v[i];
  uint next = i + 1u < fr.f.slot_count ? fr.f.sorted_counts.v[i + 1u] : fr.f.counters.v[SF_COUNTER_KEYS];
  if (next == offset) return;
  uint slot = fr.f.order.v[i];
  uvec2 r = fr.f.rects.v[slot];
  uint x0 = r.x & 0xffffu, y0 = r.x >> 16, x1 = r.y & 0xffffu, y1 = r.y >> 16;
  uint cap = fr.f.key_capacity;
  vec2 mean = fr.f.means.v[slot];
  vec4 co = fr.f.conic_opacity.v[slot];
  bool test = (x1 - x0) * (y1 - y0) <= SF_MAX_TESTED_TILE_AREA;
  uint k = offset;
  for (uint y = y0; y < y1 && k < next; ++y)
    for (uint x = x0; x < x1 && k < next; ++x) {
      if (test && !splatReachesTile(mean, co, x, y)) continue;
      if (k < cap) {
        fr.f.keys_hi.v[k] = y * fr.f.tiles_x + x;
        fr.f.values.v[k] = slot;
      }
      ++k;
    }
  // Should this shader's tile test ever round differently from preprocess's, the entry's range is never
  // overrun, and unused keys get the tile count as tile: they sort last and belong to no tile.
  for (; k < next; ++k)
    if (k < cap) {
      fr.f.keys_hi.v[k] = fr.f.tiles_x * fr.f.tiles_y;
      fr.f.values.v[k] = slot;
    }
}
