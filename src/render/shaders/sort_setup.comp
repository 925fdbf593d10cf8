#version 460
// One thread: from the total key count (pc.scan_data[0]) derive the clamped count, the overflow flag,
// the radix sort block count and the indirect dispatch arguments of every later pass.
#include "common.glsl"

layout(local_size_x = 1) in;

void main() {
  FrameRef fr = pc.frame;
  Uints c = fr.f.counters;
  uint total = pc.scan_data.v[0];
  uint n = min(total, fr.f.key_capacity);
  uint blocks = (n + SF_SORT_BLOCK - 1u) / SF_SORT_BLOCK;
  c.v[SF_COUNTER_KEYS] = total;
  c.v[SF_COUNTER_OVERFLOW] = total > fr.f.key_capacity ? 1u : 0u;
  c.v[SF_COUNTER_SORT_BLOCKS] = blocks;
  c.v[SF_COUNTER_HIST_COUNT] = blocks * pc.pad1 * SF_RADIX;
  c.v[SF_COUNTER_DISPATCH_SORT] = blocks;
  c.v[SF_COUNTER_DISPATCH_SORT + 1] = 1u;
  c.v[SF_COUNTER_DISPATCH_SORT + 2] = 1u;
  c.v[SF_COUNTER_DISPATCH_HSCAN] = (blocks * pc.pad1 * SF_RADIX + SF_SCAN_BLOCK - 1u) / SF_SCAN_BLOCK;
  c.v[SF_COUNTER_DISPATCH_HSCAN + 1] = 1u;
  c.v[SF_COUNTER_DISPATCH_HSCAN + 2] = 1u;
  c.v[SF_COUNTER_DISPATCH_KEYS] = (n + SF_WG_SIZE - 1u) / SF_WG_SIZE;
  c.v[SF_COUNTER_DISPATCH_KEYS + 1] = 1u;
  c.v[SF_COUNTER_DISPATCH_KEYS + 2] = 1u;
}
