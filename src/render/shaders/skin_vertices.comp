#version 460
// Vertex skinning for GPU-deformed splat characters: morph targets, then linear blend skinning with 4
// influences, into the posed vertices the deform pass reads. Same math and order as anim::MorphJob and
// anim::SkinningJob (LBS) on the CPU.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require

#include "../gpu_shared.h"

layout(push_constant, scalar) uniform PushBlock { GpuSkinPush pc; };
layout(local_size_x = SF_WG_SIZE) in;

void main() {
  uint v = gl_GlobalInvocationID.x;
  if (v >= pc.vertex_count) return;
  vec3 p = vec3(pc.bind_positions.v[3u * v], pc.bind_positions.v[3u * v + 1u], pc.bind_positions.v[3u * v + 2u]);
  for (uint t = 0u; t < pc.target_count; ++t) {
    float w = pc.morph_weights.v[t];
    if (w == 0.0) continue;
    uint o = 3u * (t * pc.vertex_count + v);
    p += w * vec3(pc.morph_deltas.v[o], pc.morph_deltas.v[o + 1u], pc.morph_deltas.v[o + 2u]);
  }
  uint j01 = pc.joints.v[2u * v], j23 = pc.joints.v[2u * v + 1u];
  uint js[4] = uint[](j01 & 0xffffu, j01 >> 16, j23 & 0xffffu, j23 >> 16);
  // Only positive weights count, as on the CPU.
  float ws[4] = float[](max(pc.weights.v[4u * v], 0.0), max(pc.weights.v[4u * v + 1u], 0.0), max(pc.weights.v[4u * v + 2u], 0.0),
                        max(pc.weights.v[4u * v + 3u], 0.0));
  float wsum = ws[0] + ws[1] + ws[2] + ws[3];
  vec3 outp = p;
  if (wsum > 0.0) {
    vec4 r0 = vec4(0.0), r1 = vec4(0.0), r2 = vec4(0.0);
    for (int k = 0; k < 4; ++k) {
      float w = ws[k] / wsum;
      if (w == 0.0) continue;
      uint o = 12u * js[k];
      r0 += w * vec4(pc.palette.v[o], pc.palette.v[o + 1u], pc.palette.v[o + 2u], pc.palette.v[o + 3u]);
      r1 += w * vec4(pc.palette.v[o + 4u], pc.palette.v[o + 5u], pc.palette.v[o + 6u], pc.palette.v[o + 7u]);
      r2 += w * vec4(pc.palette.v[o + 8u], pc.palette.v[o + 9u], pc.palette.v[o + 10u], pc.palette.v[o + 11u]);
    }
    outp = vec3(dot(r0.xyz, p) + r0.w, dot(r1.xyz, p) + r1.w, dot(r2.xyz, p) + r2.w);
  }
  pc.out_positions.v[3u * v] = outp.x;
  pc.out_positions.v[3u * v + 1u] = outp.y;
  pc.out_positions.v[3u * v + 2u] = outp.z;
}
