#version 460
// One thread: from an element count (pc.scan_data[0]) derive a sort descriptor at pc.scan_sums: the
// clamped count, steps per subgroup, block count, histogram size and the indirect dispatch arguments of the sort passes.
#include "common.glsl"

layout(local_size_x = 1) in;

void main() {
  FrameRef fr = pc.frame;
  Uints d = pc.scan_sums;
  uint total = pc.scan_data.v[0];
  uint n = min(total, fr.f.key_capacity);
  // Enough sub-blocks to fill the device (about SF_SORT_TARGET_SUB_BLOCKS), each at most SF_SORT_MAX_ROUNDS
  // steps long: a subgroup's steps run one after another, so few long sub-blocks would leave a small sort
  // waiting on a handful of subgroups. Any blocking gives the same result (the sort is stable).
  uint width = SF_SORT_WG / pc.subgroups;
  uint per_round = SF_SORT_TARGET_SUB_BLOCKS * width;
  uint rounds = clamp((n + per_round - 1u) / per_round, 1u, uint(SF_SORT_MAX_ROUNDS));
  uint block = rounds * SF_SORT_WG;
  uint blocks = (n + block - 1u) / block;
  uint hist = blocks * pc.subgroups * SF_RADIX;
  d.v[SF_SORT_DESC_N] = n;
  d.v[SF_SORT_DESC_BLOCKS] = blocks;
  d.v[SF_SORT_DESC_HIST_COUNT] = hist;
  d.v[SF_SORT_DESC_ROUNDS] = rounds;
  d.v[SF_SORT_DESC_DISPATCH_SORT] = blocks;
  d.v[SF_SORT_DESC_DISPATCH_SORT + 1] = 1u;
  d.v[SF_SORT_DESC_DISPATCH_SORT + 2] = 1u;
  d.v[SF_SORT_DESC_DISPATCH_HSCAN] = (hist + SF_SCAN_BLOCK - 1u) / SF_SCAN_BLOCK;
  d.v[SF_SORT_DESC_DISPATCH_HSCAN + 1] = 1u;
  d.v[SF_SORT_DESC_DISPATCH_HSCAN + 2] = 1u;
  d.v[SF_SORT_DESC_DISPATCH_ITEMS] = (n + SF_WG_SIZE - 1u) / SF_WG_SIZE;
  d.v[SF_SORT_DESC_DISPATCH_ITEMS + 1] = 1u;
  d.v[SF_SORT_DESC_DISPATCH_ITEMS + 2] = 1u;
}
