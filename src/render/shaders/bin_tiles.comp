#version 460
// Tile binning, run twice over the frame's slots (slot order). Counting (no SF_FLAG_EMIT): per tile each visible
// slot reaches, one added to the tile's count; preprocess.comp has already counted the slots of at most
// SF_COOP_TILES tiles, so this run counts only the wider ones. Emitting (SF_FLAG_EMIT, after the counts were
// scanned to each tile's first pair): one (depth bits, slot) pair written at the tile's cursor. Places within a tile come
// from atomics, in no order: seg_sort.comp and seg_merge.comp then order each tile's pairs by (depth, slot),
// the CPU's order (cpu_renderer.cpp: a stable sort by tile and depth of pairs made in slot order).
// Both runs test the same tiles with the same code (the mode only picks the action), and an emit never
// writes past its tile's end. Slots whose rect has more than SF_COOP_TILES tiles are walked by the whole
// workgroup at once, so a splat covering much of the screen does not keep one thread looping while the
// others wait. (That walk takes workgroup barriers, not subgroup operations: no reconvergence needed.)
//
// The aggregated emit (variants SF_VARIANT_PARTITIONED and SF_VARIANT_AGGREGATED, emitting runs only): the
// lanes of a subgroup walk their rects in lock step, one reached tile a lane per step, and the lanes on one tile
// at a step take their places with one atomic, made by the lowest of them; each lane's place is that base plus
// its rank among them. Neighbouring slots of a capture often reach the same tiles, where the per-pair atomics
// serialise at the tile's cursor. The partitioned variant groups the lanes by tile with one instruction
// (GL_NV_shader_subgroup_partitioned, where the device has it); the aggregated one, the portable path, with a
// ballot per distinct tile of the step (it tests the same walk on any device). Places within a tile are again
// in no order, and the tile sort makes the same lists of them.
#include "binning_variants.glsl"
#include "common.glsl"
#include "tile_test.glsl"

layout(local_size_x = SF_WG_SIZE) in;
shared uint coop_count;
shared uint coop_slot[SF_WG_SIZE];

void binPair(FrameRef fr, bool emit, uint tile, uint depth_bits, uint slot) {
  if (!emit) {
    atomicAdd(fr.f.tile_bins.v[tile], 1u);
    return;
  }
  uint at = atomicAdd(fr.f.tile_bins.v[tile], 1u);
  if (at < fr.f.tile_ranges.v[tile].y) {  // (ranges are [0, 0) after a key overflow: nothing is written)
    fr.f.keys_lo.v[at] = depth_bits;
    fr.f.values.v[at] = slot;
  }
}

uvec4 slotRect(FrameRef fr, uint slot) {
  uvec2 r = fr.f.rects.v[slot];
  return uvec4(r.x & 0xffffu, r.x >> 16, r.y & 0xffffu, r.y >> 16);
}

void main() {
  FrameRef fr = pc.frame;
  uint slot = gl_GlobalInvocationID.x, tid = gl_LocalInvocationIndex;
  bool emit = (pc.flags & SF_FLAG_EMIT) != 0u;
  bool live = slot < fr.f.slot_count && fr.f.touched.v[slot] != 0u;  // no early return before the cooperative walks
  uvec4 rect = live ? slotRect(fr, slot) : uvec4(0u);
  uint area = (rect.z - rect.x) * (rect.w - rect.y);
  bool coop = live && area > SF_COOP_TILES;
  if (tid == 0u) coop_count = 0u;
  barrier();
  if (coop) {
    coop_slot[atomicAdd(coop_count, 1u)] = slot;
  }
#ifdef SF_AGGREGATED_BINNING
  if (emit) {  // uniform: the lanes walk in lock step, each to its next reached tile per step
    bool walking = live && !coop;
    vec2 mean = vec2(0.0);
    vec4 co = vec4(0.0);
    uint depth_bits = 0u, x = rect.x, y = rect.y;
    bool test = area <= SF_MAX_TESTED_TILE_AREA;
    if (walking) {
      mean = fr.f.means.v[slot];
      co = fr.f.conic_opacity.v[slot];
      depth_bits = floatBitsToUint(fr.f.color_depth.v[slot].w);
    }
    while (subgroupAny(walking)) {
      uint tile = SF_NO_TILE;
      if (walking) {
        tile = nextReachedTile(mean, co, test, rect, x, y, fr.f.tiles_x);
        walking = tile != SF_NO_TILE;
      }
      uvec4 same = lanesOnTile(tile);
      uint leader = subgroupBallotFindLSB(same), at = 0u;
      if (tile != SF_NO_TILE && gl_SubgroupInvocationID == leader)
        at = atomicAdd(fr.f.tile_bins.v[tile], subgroupBallotBitCount(same));
      at = subgroupShuffle(at, leader) + subgroupBallotExclusiveBitCount(same);
      if (tile != SF_NO_TILE && at < fr.f.tile_ranges.v[tile].y) {  // (ranges are [0, 0) after a key overflow)
        fr.f.keys_lo.v[at] = depth_bits;
        fr.f.values.v[at] = slot;
      }
    }
  }
#else
  if (live && emit && !coop) {
    vec2 mean = fr.f.means.v[slot];
    vec4 co = fr.f.conic_opacity.v[slot];
    uint depth_bits = floatBitsToUint(fr.f.color_depth.v[slot].w);
    bool test = area <= SF_MAX_TESTED_TILE_AREA;
    for (uint y = rect.y; y < rect.w; ++y)
      for (uint x = rect.x; x < rect.z; ++x)
        if (!test || splatReachesTile(mean, co, x, y)) binPair(fr, emit, y * fr.f.tiles_x + x, depth_bits, slot);
  }
#endif
  barrier();
  uint coops = coop_count;
  for (uint c = 0u; c < coops; ++c) {
    uint s = coop_slot[c];
    uvec4 r = slotRect(fr, s);
    vec2 m = fr.f.means.v[s];
    vec4 co = fr.f.conic_opacity.v[s];
    uint depth_bits = floatBitsToUint(fr.f.color_depth.v[s].w);
    uint w = r.z - r.x, n = w * (r.w - r.y);
    bool test = n <= SF_MAX_TESTED_TILE_AREA;
    for (uint t = tid; t < n; t += SF_WG_SIZE) {
      uint x = r.x + t % w, y = r.y + t / w;
      if (!test || splatReachesTile(m, co, x, y)) binPair(fr, emit, y * fr.f.tiles_x + x, depth_bits, s);
    }
  }
}
