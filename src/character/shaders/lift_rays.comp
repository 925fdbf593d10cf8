#version 460
// The appearance decoder's inputs on the GPU (the twin of character::plueckerRays): per texel the Pluecker
// ray (d, eye x d) from the camera centre to the texel's position in the geometry map, a zero ray where the
// position is not finite or at the eye; and the geometry pass's code copied into the decoder's code input.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_GOOGLE_include_directive : require

#include "../lift_shared.h"

layout(push_constant, scalar) uniform PushBlock { LiftRaysPush pc; };
layout(local_size_x = SF_LIFT_WG) in;

bool finite3(vec3 v) { return !any(isnan(v)) && !any(isinf(v)); }

void main() {
  uint k = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * SF_LIFT_WG;
  if (k < pc.code_words && uint64_t(pc.code_src) != 0ul) pc.code_dst.w[k] = pc.code_src.w[k];
  if (k >= pc.texels) return;
  uint n = pc.texels;
  vec3 p = vec3(pc.geometry.v[k], pc.geometry.v[n + k], pc.geometry.v[2u * n + k]);
  vec3 eye = vec3(pc.eye_x, pc.eye_y, pc.eye_z);
  vec3 d = vec3(0.0), m = vec3(0.0);
  float len = length(p - eye);
  if (finite3(p) && len > 0.0 && !isinf(len)) {
    d = (p - eye) * (1.0 / len);
    m = cross(eye, d);
  }
  pc.view.v[k] = d.x;
  pc.view.v[n + k] = d.y;
  pc.view.v[2u * n + k] = d.z;
  pc.view.v[3u * n + k] = m.x;
  pc.view.v[4u * n + k] = m.y;
  pc.view.v[5u * n + k] = m.z;
}
