#version 460
// Chunked tile binning (gpu_shared.h, SF_BIN_MAX_TILES): one workgroup per chunk of GpuFrame::bin_chunk
// slots, run twice. Counting (pad0 = 0): the chunk's pairs counted per tile in shared memory and the counts
// written to bin_meta. Filling (pad0 = 1, after bin_scan.comp and tile_setup.comp): the same walk again, each
// pair's place in its tile the chunk's first place there (bin_carry + bin_meta) plus its rank among the
// chunk's pairs on that tile, taken from a shared-memory counter. No pair takes a global atomic.
//
// Both runs test the same tiles with the same code as bin_tiles.comp (splatReachesTile), so a tile's count and
// its fill agree, and a fill never writes past its tile's end. Places within a tile come in no order (shared
// atomics): seg_sort.comp and seg_merge.comp order each tile's pairs by (depth, slot), as after bin_tiles.comp.
// A chunk's slots are walked SF_WG_SIZE at a time; slots whose rect has more than SF_COOP_TILES tiles are
// walked by the whole workgroup at once (as in bin_tiles.comp).
#include "common.glsl"
#include "tile_test.glsl"

layout(local_size_x = SF_WG_SIZE) in;
shared uint s_count[SF_BIN_MAX_TILES / 2];  // two 16-bit counters a word
shared uint coop_count;
shared uint coop_slot[SF_WG_SIZE];

uvec4 slotRect(FrameRef fr, uint slot) {
  uvec2 r = fr.f.rects.v[slot];
  return uvec4(r.x & 0xffffu, r.x >> 16, r.y & 0xffffu, r.y >> 16);
}

// One pair of `slot` on `tile`: counted, or written at its place.
void binPair(FrameRef fr, bool fill, uint chunk, uint group, uint tile, uint depth_bits, uint slot) {
  uint shift = (tile & 1u) * 16u;
  uint before = atomicAdd(s_count[tile >> 1], 1u << shift);
  if (!fill) return;
  uint tiles = fr.f.tiles_x * fr.f.tiles_y;
  uint words = (tiles + 1u) >> 1;
  uint chunk_first = (fr.f.bin_meta.v[chunk * words + (tile >> 1)] >> shift) & 0xffffu;
  uvec2 range = fr.f.tile_ranges.v[tile];
  uint at = range.x + fr.f.bin_carry.v[group * tiles + tile] + chunk_first + ((before >> shift) & 0xffffu);
  if (at < range.y) {  // (ranges are [0, 0) after a key overflow: nothing is written)
    fr.f.keys_lo.v[at] = depth_bits;
    fr.f.values.v[at] = slot;
  }
}

void main() {
  FrameRef fr = pc.frame;
  bool fill = pc.pad0 != 0u;
  uint chunk = gl_WorkGroupID.x, tid = gl_LocalInvocationIndex;
  uint group = chunk / fr.f.bin_group;
  uint tiles = fr.f.tiles_x * fr.f.tiles_y;
  uint words = (tiles + 1u) >> 1;
  for (uint w = tid; w < words; w += SF_WG_SIZE) s_count[w] = 0u;
  uint first = chunk * fr.f.bin_chunk;
  uint end = min(first + fr.f.bin_chunk, fr.f.slot_count);
  for (uint base = first; base < end; base += SF_WG_SIZE) {  // uniform across the workgroup
    uint slot = base + tid;
    bool live = slot < end && fr.f.touched.v[slot] != 0u;
    uvec4 rect = live ? slotRect(fr, slot) : uvec4(0u);
    uint area = (rect.z - rect.x) * (rect.w - rect.y);
    bool coop = live && area > SF_COOP_TILES;
    if (tid == 0u) coop_count = 0u;
    barrier();  // the counters cleared (first step) / the previous step's cooperative walks done
    if (coop) {
      coop_slot[atomicAdd(coop_count, 1u)] = slot;
    } else if (live) {
      vec2 mean = fr.f.means.v[slot];
      vec4 co = fr.f.conic_opacity.v[slot];
      uint depth_bits = floatBitsToUint(fr.f.color_depth.v[slot].w);
      for (uint y = rect.y; y < rect.w; ++y)
        for (uint x = rect.x; x < rect.z; ++x)
          if (splatReachesTile(mean, co, x, y)) binPair(fr, fill, chunk, group, y * fr.f.tiles_x + x, depth_bits, slot);
    }
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
        if (!test || splatReachesTile(m, co, x, y)) binPair(fr, fill, chunk, group, y * fr.f.tiles_x + x, depth_bits, s);
      }
    }
    barrier();  // coop_count and coop_slot are read before the next step resets them
  }
  if (fill) return;
  for (uint w = tid; w < words; w += SF_WG_SIZE) fr.f.bin_meta.v[chunk * words + w] = s_count[w];
}
