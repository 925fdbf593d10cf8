#version 460
// One (tile, depth) key per tile each visible slot touches, at the slot's scanned offset, in slot order.
#include "common.glsl"
#include "tile_test.glsl"

layout(local_size_x = SF_WG_SIZE) in;

void main() {
  FrameRef fr = pc.frame;
  uint slot = gl_GlobalInvocationID.x;
  if (slot >= fr.f.slot_count) return;
  uvec2 r = fr.f.rects.v[slot];
  uint x0 = r.x & 0xffffu, y0 = r.x >> 16, x1 = r.y & 0xffffu, y1 = r.y >> 16;
  // touched[] now holds exclusive offsets; a slot's key count is the distance to the next offset (culled
  // slots have none; their rects are stale and never read).
  uint offset = fr.f.touched.v[slot];
  uint next = slot + 1u < fr.f.slot_count ? fr.f.touched.v[slot + 1u] : fr.f.counters.v[SF_COUNTER_KEYS];
  if (next == offset) return;
  uint depth_bits = floatBitsToUint(fr.f.color_depth.v[slot].w);
  uint cap = fr.f.key_capacity;
  vec2 mean = fr.f.means.v[slot];
  vec4 co = fr.f.conic_opacity.v[slot];
  bool test = (x1 - x0) * (y1 - y0) <= SF_MAX_TESTED_TILE_AREA;
  uint k = offset;
  for (uint y = y0; y < y1 && k < next; ++y)
    for (uint x = x0; x < x1 && k < next; ++x) {
      if (test && !splatReachesTile(mean, co, x, y)) continue;
      if (k < cap) {
        fr.f.keys_lo.v[k] = depth_bits;
        fr.f.keys_hi.v[k] = y * fr.f.tiles_x + x;
        fr.f.values.v[k] = slot;
      }
      ++k;
    }
  // Should this shader's tile test ever round differently from preprocess's, the slot's range is never
  // overrun, and unused entries get the tile count as tile: they sort last and belong to no tile.
  for (; k < next; ++k)
    if (k < cap) {
      fr.f.keys_lo.v[k] = depth_bits;
      fr.f.keys_hi.v[k] = fr.f.tiles_x * fr.f.tiles_y;
      fr.f.values.v[k] = slot;
    }
}
