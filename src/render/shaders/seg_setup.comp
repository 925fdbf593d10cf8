#version 460
// One thread: the indirect dispatch arguments of the chunk sorts (one workgroup per chunk; small lists and
// the chunks of longer ones) and of each merge pass (every chunk of the longer lists when some list is longer
// than the pass's run width, none otherwise), and of the raster's segments and composites.
#include "common.glsl"

layout(local_size_x = 1) in;

// `count` workgroups as rows of at most SF_DISPATCH_ROW (the shaders skip the indices past `count`).
void writeArgs(FrameRef fr, uint at, uint count) {
  fr.f.counters.v[at] = min(count, uint(SF_DISPATCH_ROW));
  fr.f.counters.v[at + 1u] = count == 0u ? 0u : (count + SF_DISPATCH_ROW - 1u) / SF_DISPATCH_ROW;
  fr.f.counters.v[at + 2u] = 1u;
}

void main() {
  FrameRef fr = pc.frame;
  uint chunks = fr.f.counters.v[SF_COUNTER_CHUNKS], longest = fr.f.counters.v[SF_COUNTER_LONGEST];
  writeArgs(fr, SF_COUNTER_SEG_DISPATCH, chunks);
  writeArgs(fr, SF_COUNTER_SMALL_DISPATCH, fr.f.counters.v[SF_COUNTER_SMALL_CHUNKS]);
  // The raster's segments and composites: SF_TILE / SF_RASTER_ROWS workgroups per segment and per tile.
  const uint parts = SF_TILE / SF_RASTER_ROWS;
  writeArgs(fr, SF_COUNTER_SEGMENT_DISPATCH, fr.f.counters.v[SF_COUNTER_RASTER_SEGS] * parts);
  writeArgs(fr, SF_COUNTER_COMPOSITE_DISPATCH, fr.f.counters.v[SF_COUNTER_DEEP_TILES] * parts);
  for (uint p = 0u; p < SF_MAX_MERGE_PASSES; ++p)
    writeArgs(fr, SF_COUNTER_MERGE_DISPATCH + 3u * p, (uint(SF_SEG_BLOCK) << p) < longest ? chunks : 0u);
}
