#version 460
// The frame's LOD rows gathered from the GPU pool (lod/gpu_pool.h): per row, its selection word is a pool
// slot, or (bit 31 set) the index of a row computed on the host; the row's centre, covariance and opacity are
// copied as 32-bit words (bit for bit) into the object's slots of the frame. A host row's SH comes from its
// record {from, to, t}: from with bit 31 set indexes SH uploaded with it; from == to copies that slot's;
// otherwise from + (to - from) * t per coefficient, without contraction (precise), as the host computes it.
//
// One workgroup per kRows consecutive rows, one word a thread per step: the rows' sources are read into
// shared memory first, then each array of the tile (positions, covariances, opacities, SH) is copied word by
// word, consecutive threads on consecutive words. The rows' targets are contiguous, so every store is
// coalesced, and each row's source words are read together (a thread per row copying its 58 words one by
// one touched 32 rows' sectors per instruction: about 26 ms of a 41 ms frame at 4M SH-3 rows on an H100;
// about 2.3 ms this way).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words {
  uint w[];
};

layout(push_constant) uniform Push {
  Words selection;
  Words pool_positions;
  Words pool_covariances;
  Words pool_opacities;
  Words pool_sh;
  Words host_positions;
  Words host_covariances;
  Words host_opacities;
  Words host_sh;
  Words host_mix;
  Words positions;
  Words covariances;
  Words opacities;
  Words sh;
  uint rows;
  uint sh_stride;
}
pc;

const uint kThreads = 256u;
const uint kRows = 256u;  // rows a workgroup
layout(local_size_x = kThreads) in;

// Per row of the tile: its source index (a pool slot, or a host row with bit 31 set), and for host rows the
// SH's source: from (bit 31: the host SH row), to, t.
shared uint s_source[kRows], s_from[kRows], s_to[kRows];
shared float s_t[kRows];

// Element `index` of an array of `words`-word elements at `base`, word j (64-bit offsets: pools past 2^32
// words).
uint wordAt(Words base, uint index, uint words, uint j) {
  return Words(uint64_t(base) + (uint64_t(index) * uint64_t(words) + uint64_t(j)) * 4ul).w[0];
}
void store(Words base, uint index, uint words, uint j, uint v) {
  Words(uint64_t(base) + (uint64_t(index) * uint64_t(words) + uint64_t(j)) * 4ul).w[0] = v;
}

void main() {
  const uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const uint first = group * kRows;
  if (first >= pc.rows) return;  // (uniform across the workgroup)
  const uint count = min(kRows, pc.rows - first), tid = gl_LocalInvocationIndex;
  for (uint r = tid; r < count; r += kThreads) {
    uint s = pc.selection.w[first + r];
    s_source[r] = s;
    if ((s & 0x80000000u) != 0u) {
      uint k = s & 0x7FFFFFFFu;
      s_from[r] = wordAt(pc.host_mix, k, 3u, 0u);
      s_to[r] = wordAt(pc.host_mix, k, 3u, 1u);
      s_t[r] = uintBitsToFloat(wordAt(pc.host_mix, k, 3u, 2u));
    } else {
      s_from[r] = s, s_to[r] = s, s_t[r] = 0.0;  // (a pool row: its own slot's SH)
    }
  }
  barrier();
  // Centre (3 words), covariance (6) and opacity (1): from the pool's slot or the host row.
  for (uint u = tid; u < count * 3u; u += kThreads) {
    uint r = u / 3u, j = u - 3u * r, s = s_source[r];
    Words src = (s & 0x80000000u) != 0u ? pc.host_positions : pc.pool_positions;
    store(pc.positions, first + r, 3u, j, wordAt(src, s & 0x7FFFFFFFu, 3u, j));
  }
  for (uint u = tid; u < count * 6u; u += kThreads) {
    uint r = u / 6u, j = u - 6u * r, s = s_source[r];
    Words src = (s & 0x80000000u) != 0u ? pc.host_covariances : pc.pool_covariances;
    store(pc.covariances, first + r, 6u, j, wordAt(src, s & 0x7FFFFFFFu, 6u, j));
  }
  for (uint r = tid; r < count; r += kThreads) {
    uint s = s_source[r];
    Words src = (s & 0x80000000u) != 0u ? pc.host_opacities : pc.pool_opacities;
    store(pc.opacities, first + r, 1u, 0u, wordAt(src, s & 0x7FFFFFFFu, 1u, 0u));
  }
  // SH: a copy of one slot's (a pool row, a host row whose from == to), the host row's own (from with bit 31),
  // or the mix of two slots.
  const uint stride = pc.sh_stride;
  for (uint u = tid; u < count * stride; u += kThreads) {
    uint r = u / stride, j = u - stride * r, from = s_from[r], to = s_to[r], v;
    if ((from & 0x80000000u) != 0u) {
      v = wordAt(pc.host_sh, from & 0x7FFFFFFFu, stride, j);
    } else if (from == to) {
      v = wordAt(pc.pool_sh, from, stride, j);
    } else {
      float x = uintBitsToFloat(wordAt(pc.pool_sh, from, stride, j));
      float y = uintBitsToFloat(wordAt(pc.pool_sh, to, stride, j));
      precise float d = (y - x) * s_t[r];
      precise float m = x + d;
      v = floatBitsToUint(m);
    }
    store(pc.sh, first + r, stride, j, v);
  }
}
