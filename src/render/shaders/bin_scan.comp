#version 460
// The scans of the chunked binning (bin_chunks.comp). Groups (pad0 = 0), one thread per scan group and word
// of bin_meta: the group's chunks' counts on the word's two tiles scanned in place (each chunk's first place
// in the tile within the group; both 16-bit halves at once, a group's sums stay below 2^16), the group's
// totals written to bin_carry. Carries (pad0 = 1), one thread per tile: the groups' totals scanned in place
// (each group's first place in the tile), the tile's pair count written to tile_bins for the tile scan.
// Loads are taken eight at a time, so that a thread's walk waits on memory once per eight entries.
#include "common.glsl"

layout(local_size_x = SF_WG_SIZE) in;

void main() {
  FrameRef fr = pc.frame;
  uint tiles = fr.f.tiles_x * fr.f.tiles_y;
  uint words = (tiles + 1u) >> 1;
  uint id = gl_GlobalInvocationID.x;
  if (pc.pad0 == 0u) {
    if (id >= words * fr.f.bin_groups) return;
    uint w = id % words, group = id / words;
    uint c = group * fr.f.bin_group, end = min(c + fr.f.bin_group, fr.f.bin_chunks);
    uint sum = 0u;  // two 16-bit sums
    for (; c < end; c += 8u) {
      uint v[8];
      for (uint k = 0u; k < 8u; ++k) v[k] = c + k < end ? fr.f.bin_meta.v[(c + k) * words + w] : 0u;
      for (uint k = 0u; k < 8u; ++k)
        if (c + k < end) {
          fr.f.bin_meta.v[(c + k) * words + w] = sum;
          sum += v[k];
        }
    }
    fr.f.bin_carry.v[group * tiles + 2u * w] = sum & 0xffffu;
    if (2u * w + 1u < tiles) fr.f.bin_carry.v[group * tiles + 2u * w + 1u] = sum >> 16;
    return;
  }
  if (id >= tiles) return;
  uint sum = 0u, groups = fr.f.bin_groups;
  for (uint g = 0u; g < groups; g += 8u) {
    uint v[8];
    for (uint k = 0u; k < 8u; ++k) v[k] = g + k < groups ? fr.f.bin_carry.v[(g + k) * tiles + id] : 0u;
    for (uint k = 0u; k < 8u; ++k)
      if (g + k < groups) {
        fr.f.bin_carry.v[(g + k) * tiles + id] = sum;
        sum += v[k];
      }
  }
  fr.f.tile_bins.v[id] = sum;
}
