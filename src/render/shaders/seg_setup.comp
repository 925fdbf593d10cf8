#version 460
// One thread: the indirect dispatch arguments of the chunk sorts (one workgroup per chunk; small lists and the
// chunks of longer ones) and of each merge pass (every chunk of the longer lists when some list is longer than
// the pass's run width, none otherwise).
#include "common.glsl"

layout(local_size_x = 1) in;

void main() {
  FrameRef fr = pc.frame;
  uint chunks = fr.f.counters.v[SF_COUNTER_CHUNKS], longest = fr.f.counters.v[SF_COUNTER_LONGEST];
  fr.f.counters.v[SF_COUNTER_SEG_DISPATCH] = chunks;
  fr.f.counters.v[SF_COUNTER_SEG_DISPATCH + 1] = 1u;
  fr.f.counters.v[SF_COUNTER_SEG_DISPATCH + 2] = 1u;
  fr.f.counters.v[SF_COUNTER_SMALL_DISPATCH] = fr.f.counters.v[SF_COUNTER_SMALL_CHUNKS];
  fr.f.counters.v[SF_COUNTER_SMALL_DISPATCH + 1] = 1u;
  fr.f.counters.v[SF_COUNTER_SMALL_DISPATCH + 2] = 1u;
  for (uint p = 0u; p < SF_MAX_MERGE_PASSES; ++p) {
    uint at = SF_COUNTER_MERGE_DISPATCH + 3u * p;
    fr.f.counters.v[at] = (uint(SF_SEG_BLOCK) << p) < longest ? chunks : 0u;
    fr.f.counters.v[at + 1u] = 1u;
    fr.f.counters.v[at + 2u] = 1u;
  }
}
