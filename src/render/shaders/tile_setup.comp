#version 460
// After the tile counts were scanned (tile_bins: each tile's first pair; the total at pc.scan_count[0]):
// per tile its [begin, end) range and its sort chunks (SF_SEG_BLOCK pairs each, listed in no order: lists of
// at most SF_SEG_SMALL pairs from the table's front, the chunks of longer ones from its back), the longest
// list, the frame's pair total and its overflow flag. A frame whose pairs overflow the key capacity
// gets empty ranges and no chunks (it is rendered again once the buffers have grown; a frame of 2^32 pairs
// or more is refused). And the rasters' order of tiles (raster_cull.glsl's rasterWorkgroup): each tile listed
// in the class of its list's length, ceil(length / batch) batches by powers of two (SF_TILE_CLASSES lists of
// tile count entries each in tile_order, their lengths in SF_COUNTER_TILE_CLASSES; the order within a class
// is the atomics', which changes no pixel).
#include "common.glsl"

layout(local_size_x = SF_WG_SIZE) in;

void main() {
  FrameRef fr = pc.frame;
  uint tiles = fr.f.tiles_x * fr.f.tiles_y, t = gl_GlobalInvocationID.x;
  if (t >= tiles) return;
  uint total = pc.scan_count.v[0];
  bool overflow = total > fr.f.key_capacity;
  uint begin = fr.f.tile_bins.v[t], end = t + 1u < tiles ? fr.f.tile_bins.v[t + 1u] : total;
  // A frame of 2^32 pairs or more wraps the 32-bit scan: the tile where it wraps ends before it begins, and
  // the total read above is the wrapped one. That tile flags it (2: beyond any capacity); every tile whose
  // range is not inside the buffers is left empty, so nothing is written or read out of bounds.
  const bool wrapped = end < begin;
  const bool empty = overflow || wrapped || end > fr.f.key_capacity;
  uint batches = empty ? 0u : (end - begin + SF_TILE * SF_RASTER_ROWS - 1u) / (SF_TILE * SF_RASTER_ROWS);
  uint cls = batches == 0u ? 0u : min(uint(findMSB(batches)) + 1u, uint(SF_TILE_CLASSES) - 1u);
  fr.f.tile_order.v[cls * tiles + atomicAdd(fr.f.counters.v[SF_COUNTER_TILE_CLASSES + cls], 1u)] = t;
  if (t == 0u) fr.f.counters.v[SF_COUNTER_KEYS] = total;
  if (overflow) atomicMax(fr.f.counters.v[SF_COUNTER_OVERFLOW], 1u);
  if (wrapped) atomicMax(fr.f.counters.v[SF_COUNTER_OVERFLOW], 2u);
  if (empty) {
    fr.f.tile_ranges.v[t] = uvec2(0u);
    return;
  }
  fr.f.tile_ranges.v[t] = uvec2(begin, end);
  uint len = end - begin;
  if (len < 2u) return;  // nothing to sort
  atomicMax(fr.f.counters.v[SF_COUNTER_LONGEST], len);
  if (len <= SF_SEG_SMALL) {
    fr.f.chunks.v[atomicAdd(fr.f.counters.v[SF_COUNTER_SMALL_CHUNKS], 1u)] = uvec2(t, 0u);
    return;
  }
  uint chunks = (len + SF_SEG_BLOCK - 1u) / SF_SEG_BLOCK;
  uint first = atomicAdd(fr.f.counters.v[SF_COUNTER_CHUNKS], chunks);
  for (uint k = 0u; k < chunks; ++k) fr.f.chunks.v[fr.f.chunk_capacity - 1u - (first + k)] = uvec2(t, k);
}
