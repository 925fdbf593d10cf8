#version 460
// One thread: the indirect dispatch arguments of the chunk sorts (one workgroup per chunk; small lists and the
// chunks of longer ones) and of each merge pass (every chunk of the longer lists when some list is longer than
// the pass's run width, none otherwise).
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
  for (uint p = 0u; p < SF_MAX_MERGE_PASSES; ++p)
    writeArgs(fr, SF_COUNTER_MERGE_DISPATCH + 3u * p, (uint(SF_SEG_BLOCK) << p) < longest ? chunks : 0u);
}
