#version 460
// The frame's LOD rows gathered from the GPU pool (lod/gpu_pool.h): per row, its selection word is a pool
// slot, or (bit 31 set) the index of a row computed on the host; the row's centre, covariance and opacity are
// copied as 32-bit words (bit for bit) into the object's slots of the frame. A host row's SH comes from its
// record {from, to, t}: from with bit 31 set indexes SH uploaded with it; from == to copies that slot's;
// otherwise from + (to - from) * t per coefficient, without contraction (precise), as the host computes it.
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

layout(local_size_x = 256) in;

// Element `index` of an array of `words`-word elements at `base` (64-bit offsets: pools past 2^32 words).
Words at(Words base, uint index, uint words) {
  return Words(uint64_t(base) + uint64_t(index) * uint64_t(words) * 4ul);
}

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  if (i >= pc.rows) return;
  uint s = pc.selection.w[i];
  bool host = (s & 0x80000000u) != 0u;
  uint k = s & 0x7FFFFFFFu;
  Words p = at(host ? pc.host_positions : pc.pool_positions, k, 3u);
  Words c = at(host ? pc.host_covariances : pc.pool_covariances, k, 6u);
  Words o = at(host ? pc.host_opacities : pc.pool_opacities, k, 1u);
  Words tp = at(pc.positions, i, 3u), tc = at(pc.covariances, i, 6u), ts = at(pc.sh, i, pc.sh_stride);
  for (uint j = 0u; j < 3u; ++j) tp.w[j] = p.w[j];
  for (uint j = 0u; j < 6u; ++j) tc.w[j] = c.w[j];
  at(pc.opacities, i, 1u).w[0] = o.w[0];
  Words h = at(pc.pool_sh, k, pc.sh_stride);
  if (host) {
    Words mix = at(pc.host_mix, k, 3u);
    uint from = mix.w[0], to = mix.w[1];
    if ((from & 0x80000000u) != 0u) {
      h = at(pc.host_sh, from & 0x7FFFFFFFu, pc.sh_stride);
    } else if (from == to) {
      h = at(pc.pool_sh, from, pc.sh_stride);
    } else {
      Words a = at(pc.pool_sh, from, pc.sh_stride), b = at(pc.pool_sh, to, pc.sh_stride);
      float t = uintBitsToFloat(mix.w[2]);
      for (uint j = 0u; j < pc.sh_stride; ++j) {
        float x = uintBitsToFloat(a.w[j]), y = uintBitsToFloat(b.w[j]);
        precise float d = (y - x) * t;
        precise float v = x + d;
        ts.w[j] = floatBitsToUint(v);
      }
      return;
    }
  }
  for (uint j = 0u; j < pc.sh_stride; ++j) ts.w[j] = h.w[j];
}
