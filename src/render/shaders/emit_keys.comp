#version 460
// One (tile, slot) key per tile each visible slot reaches, written in depth order (slot order for equal
// depths): a stable sort by tile then yields every tile's splats front to back. A slot owns the key range
// [offset, next) of the scanned counts; which place in its range a tile's key takes does not matter (the
// tile sort gives each tile at most one key per slot, and ranges keep depth order between slots). Slots
// whose rect has more than SF_COOP_TILES tiles are walked by the whole workgroup at once (one slot at a time,
// places handed out by a shared counter), so a splat covering much of the screen does not keep one thread
// looping while the others wait. (Workgroup barriers, not subgroup operations: no reconvergence needed.)
#include "common.glsl"
#include "tile_test.glsl"

#define SF_COOP_TILES 256

layout(local_size_x = SF_WG_SIZE) in;
shared uint coop_count, coop_at;
shared uint coop_slot[SF_WG_SIZE], coop_end[SF_WG_SIZE], coop_first[SF_WG_SIZE];

void main() {
  FrameRef fr = pc.frame;
  uint i = gl_GlobalInvocationID.x, tid = gl_LocalInvocationIndex;
  // sorted_counts[] now holds exclusive offsets; an entry's key count is the distance to the next one.
  bool live = i < fr.f.slot_count;  // no early return before the workgroup's cooperative walks
  uint offset = 0u, next = 0u, slot = 0u;
  if (live) {
    offset = fr.f.sorted_counts.v[i];
    next = i + 1u < fr.f.slot_count ? fr.f.sorted_counts.v[i + 1u] : fr.f.counters.v[SF_COUNTER_KEYS];
    live = next != offset;
  }
  uvec4 rect = uvec4(0u);
  if (live) {
    slot = fr.f.order.v[i];
    uvec2 r = fr.f.rects.v[slot];
    rect = uvec4(r.x & 0xffffu, r.x >> 16, r.y & 0xffffu, r.y >> 16);
  }
  uint cap = fr.f.key_capacity, pad_tile = fr.f.tiles_x * fr.f.tiles_y;
  uint area = (rect.z - rect.x) * (rect.w - rect.y);
  bool coop = live && area > SF_COOP_TILES;
  if (tid == 0u) coop_count = 0u;
  barrier();
  if (coop) {
    uint k = atomicAdd(coop_count, 1u);
    coop_slot[k] = slot, coop_first[k] = offset, coop_end[k] = next;
  } else if (live) {
    vec2 mean = fr.f.means.v[slot];
    vec4 co = fr.f.conic_opacity.v[slot];
    bool test = area <= SF_MAX_TESTED_TILE_AREA;
    uint k = offset;
    for (uint y = rect.y; y < rect.w && k < next; ++y)
      for (uint x = rect.x; x < rect.z && k < next; ++x) {
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
        fr.f.keys_hi.v[k] = pad_tile;
        fr.f.values.v[k] = slot;
      }
  }
  barrier();
  uint coops = coop_count;
  for (uint c = 0u; c < coops; ++c) {
    uint s = coop_slot[c], end = coop_end[c];
    if (tid == 0u) coop_at = coop_first[c];
    barrier();
    uvec2 rr = fr.f.rects.v[s];
    uvec4 r = uvec4(rr.x & 0xffffu, rr.x >> 16, rr.y & 0xffffu, rr.y >> 16);
    vec2 m = fr.f.means.v[s];
    vec4 co = fr.f.conic_opacity.v[s];
    uint w = r.z - r.x, n = w * (r.w - r.y);
    bool test = n <= SF_MAX_TESTED_TILE_AREA;
    for (uint t = tid; t < n; t += SF_WG_SIZE) {
      uint x = r.x + t % w, y = r.y + t / w;
      if (test && !splatReachesTile(m, co, x, y)) continue;
      uint at = atomicAdd(coop_at, 1u);
      if (at < end && at < cap) {
        fr.f.keys_hi.v[at] = y * fr.f.tiles_x + x;
        fr.f.values.v[at] = s;
      }
    }
    barrier();
    for (uint at = coop_at + tid; at < end; at += SF_WG_SIZE)
      if (at < cap) {
        fr.f.keys_hi.v[at] = pad_tile;
        fr.f.values.v[at] = s;
      }
    barrier();  // before the next walk resets the counter
  }
}
