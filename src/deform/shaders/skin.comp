#version 460
// GPU vertex deformation: morph targets, then linear-blend or dual-quaternion skinning with up to 8
// influences. Same math, in the same order, as MorphJob and SkinningJob in src/anim/skinning.cpp.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require

#include "../deform_shared.h"

layout(push_constant, scalar) uniform PushBlock { SkinPush pc; };
layout(local_size_x = SF_SKIN_WG) in;

vec3 load3(Floats b, uint i) { return vec3(b.v[3u * i], b.v[3u * i + 1u], b.v[3u * i + 2u]); }
void store3(Floats b, uint i, vec3 x) {
  b.v[3u * i] = x.x;
  b.v[3u * i + 1u] = x.y;
  b.v[3u * i + 2u] = x.z;
}
vec4 load4(Floats b, uint i) { return vec4(b.v[i], b.v[i + 1u], b.v[i + 2u], b.v[i + 3u]); }

// Inverse transpose up to scale (cofactor matrix, sign-corrected), as normalMatrix() on the CPU.
mat3 normalMatrix(mat3 m) {  // m is column-major: m[c][r]
  vec3 r0 = vec3(m[0][0], m[1][0], m[2][0]), r1 = vec3(m[0][1], m[1][1], m[2][1]), r2 = vec3(m[0][2], m[1][2], m[2][2]);
  vec3 c0 = cross(r1, r2), c1 = cross(r2, r0), c2 = cross(r0, r1);
  float s = dot(r0, c0) < 0.0 ? -1.0 : 1.0;
  // The result's rows are c0, c1, c2 (times s).
  return transpose(mat3(c0 * s, c1 * s, c2 * s));
}

// As sf::normalize on the CPU: a zero vector stays zero (GLSL normalize() would give NaN).
vec3 safeNormalize(vec3 v) {
  float len = length(v);
  return len > 0.0 ? v / len : vec3(0.0);
}

vec3 rotate(vec4 q, vec3 v) {  // q = (w, x, y, z)
  vec3 u = q.yzw;
  vec3 t = 2.0 * cross(u, v);
  return v + q.x * t + cross(u, t);
}

void main() {
  uint v = gl_GlobalInvocationID.x;
  if (v >= pc.vertex_count) return;
  // Instance (workgroup y): its own palette range and output range; inputs are shared.
  uint instance = gl_WorkGroupID.y;
  uint joint_base = instance * pc.joint_count;
  uint out_v = instance * pc.vertex_count + v;
  bool has_normals = (pc.flags & SF_SKIN_FLAG_NORMALS) != 0u;
  bool morph_normals = has_normals && (pc.flags & SF_SKIN_FLAG_MORPH_NORMALS) != 0u;
  vec3 p = load3(pc.positions, v);
  vec3 n = has_normals ? load3(pc.normals, v) : vec3(0.0);
  for (uint t = 0u; t < pc.target_count; ++t) {
    float w = pc.morph_weights.v[t];
    if (w == 0.0) continue;  // most of a face rig's targets are idle in a frame (adding 0 * delta changes nothing)
    p += w * load3(pc.morph_positions, t * pc.vertex_count + v);
    if (morph_normals) n += w * load3(pc.morph_normals, t * pc.vertex_count + v);
  }
  uint joints[SF_SKIN_INFLUENCES];
  float weights[SF_SKIN_INFLUENCES];
  uint count = 0u;
  float sum = 0.0;
  if ((pc.flags & SF_SKIN_FLAG_SKINNED) != 0u) {
    uint slots = (pc.flags & SF_SKIN_FLAG_EIGHT) != 0u ? SF_SKIN_INFLUENCES : 4u;  // slots 4..7 weigh 0 without a second set
    for (uint k = 0u; k < slots; ++k) {
      float w = pc.weights.v[SF_SKIN_INFLUENCES * v + k];
      if (!(w > 0.0)) continue;
      joints[count] = joint_base + pc.joints.v[SF_SKIN_INFLUENCES * v + k];
      weights[count] = w;
      sum += w;
      ++count;
    }
  }
  if (count == 0u || !(sum > 0.0) || isinf(sum)) {  // unskinned (or weightless) vertex: morph only
    store3(pc.out_positions, out_v, p);
    if (has_normals) store3(pc.out_normals, out_v, safeNormalize(n));
    return;
  }
  for (uint i = 0u; i < count; ++i) weights[i] /= sum;

  if (pc.method == SF_SKIN_METHOD_LBS) {
    vec4 r0 = vec4(0.0), r1 = vec4(0.0), r2 = vec4(0.0);
    for (uint i = 0u; i < count; ++i) {
      uint b = 12u * joints[i];
      r0 += weights[i] * load4(pc.palette, b);
      r1 += weights[i] * load4(pc.palette, b + 4u);
      r2 += weights[i] * load4(pc.palette, b + 8u);
    }
    vec4 ph = vec4(p, 1.0);
    store3(pc.out_positions, out_v, vec3(dot(r0, ph), dot(r1, ph), dot(r2, ph)));
    if (has_normals) {
      mat3 lin = transpose(mat3(r0.xyz, r1.xyz, r2.xyz));
      store3(pc.out_normals, out_v, safeNormalize(normalMatrix(lin) * n));
    }
    return;
  }

  // Dual quaternions: sign-aligned to the first influence, stretch blended linearly.
  uint f = SF_SKIN_DQ_FLOATS * joints[0];
  vec4 first = load4(pc.dq_palette, f);
  vec4 real = vec4(0.0), dual = vec4(0.0);
  mat3 stretch = mat3(0.0);
  for (uint i = 0u; i < count; ++i) {
    uint b = SF_SKIN_DQ_FLOATS * joints[i];
    vec4 qr = load4(pc.dq_palette, b), qd = load4(pc.dq_palette, b + 4u);
    float w = dot(qr, first) < 0.0 ? -weights[i] : weights[i];
    real += w * qr;
    dual += w * qd;
    mat3 s = transpose(mat3(pc.dq_palette.v[b + 8u], pc.dq_palette.v[b + 9u], pc.dq_palette.v[b + 10u], pc.dq_palette.v[b + 11u],
                            pc.dq_palette.v[b + 12u], pc.dq_palette.v[b + 13u], pc.dq_palette.v[b + 14u], pc.dq_palette.v[b + 15u],
                            pc.dq_palette.v[b + 16u]));
    stretch += weights[i] * s;
  }
  float len = length(real);
  if (!(len > 1e-12)) {  // opposite rotations cancelled out: the strongest joint alone
    uint best = 0u;
    for (uint i = 1u; i < count; ++i)
      if (weights[i] > weights[best]) best = i;
    uint b = SF_SKIN_DQ_FLOATS * joints[best];
    real = load4(pc.dq_palette, b);
    dual = load4(pc.dq_palette, b + 4u);
    len = 1.0;
  }
  real /= len;
  dual /= len;
  vec3 translation = 2.0 * (real.x * dual.yzw - dual.x * real.yzw + cross(real.yzw, dual.yzw));
  store3(pc.out_positions, out_v, rotate(real, stretch * p) + translation);
  if (has_normals) store3(pc.out_normals, out_v, safeNormalize(rotate(real, normalMatrix(stretch) * n)));
}
