#version 460
// Splat deform pass: each bound splat's centre and covariance from the deformed mesh (triangle frame
// F = [e1' e2' n'] applied to the binding's frame coordinates) or from its blended joint matrix, written
// into the object's slots of the frame's sink. Same math as character::DeformJob (the CPU reference).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require

#include "../deform_shared.h"

layout(push_constant, scalar) uniform PushBlock { GpuDeformPush pc; };
layout(local_size_x = SF_DEFORM_WG) in;

vec3 vertexAt(uint i) { return vec3(pc.vertices.v[3u * i], pc.vertices.v[3u * i + 1u], pc.vertices.v[3u * i + 2u]); }

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= pc.count) return;
  GpuSplatBinding b = pc.bindings.b[i];
  vec3 c = vec3(b.coords[0], b.coords[1], b.coords[2]);
  mat3 l = mat3(b.cov[0], b.cov[1], b.cov[2], b.cov[1], b.cov[3], b.cov[4], b.cov[2], b.cov[4], b.cov[5]);
  vec3 pos;
  mat3 a;
  if (b.kind == 0u) {
    uint t = 3u * b.triangle;
    vec3 v0 = vertexAt(pc.indices.v[t]), v1 = vertexAt(pc.indices.v[t + 1u]), v2 = vertexAt(pc.indices.v[t + 2u]);
    vec3 e1 = v1 - v0, e2 = v2 - v0, cr = cross(e1, e2);
    float len = length(cr);
    vec3 n = len > 0.0 ? cr / sqrt(len) : vec3(0.0);
    a = mat3(e1, e2, n);  // columns
    pos = v0 + a * c;
  } else {
    uint js[4] = uint[](b.joints01 & 0xffffu, b.joints01 >> 16, b.joints23 & 0xffffu, b.joints23 >> 16);
    float wsum = b.weights[0] + b.weights[1] + b.weights[2] + b.weights[3];
    vec4 r0 = vec4(1, 0, 0, 0), r1 = vec4(0, 1, 0, 0), r2 = vec4(0, 0, 1, 0);
    if (wsum > 0.0) {
      r0 = vec4(0.0), r1 = vec4(0.0), r2 = vec4(0.0);
      for (int k = 0; k < 4; ++k) {
        float w = b.weights[k];
        if (w == 0.0) continue;
        w /= wsum;
        uint o = 12u * js[k];
        r0 += w * vec4(pc.palette.v[o], pc.palette.v[o + 1u], pc.palette.v[o + 2u], pc.palette.v[o + 3u]);
        r1 += w * vec4(pc.palette.v[o + 4u], pc.palette.v[o + 5u], pc.palette.v[o + 6u], pc.palette.v[o + 7u]);
        r2 += w * vec4(pc.palette.v[o + 8u], pc.palette.v[o + 9u], pc.palette.v[o + 10u], pc.palette.v[o + 11u]);
      }
    }
    pos = vec3(dot(r0.xyz, c) + r0.w, dot(r1.xyz, c) + r1.w, dot(r2.xyz, c) + r2.w);
    a = transpose(mat3(r0.xyz, r1.xyz, r2.xyz));  // rows r0..r2
  }
  mat3 s = a * l * transpose(a);
  pc.out_positions.v[3u * i] = pos.x;
  pc.out_positions.v[3u * i + 1u] = pos.y;
  pc.out_positions.v[3u * i + 2u] = pos.z;
  pc.out_covariances.v[6u * i] = s[0][0];
  pc.out_covariances.v[6u * i + 1u] = s[1][0];
  pc.out_covariances.v[6u * i + 2u] = s[2][0];
  pc.out_covariances.v[6u * i + 3u] = s[1][1];
  pc.out_covariances.v[6u * i + 4u] = s[2][1];
  pc.out_covariances.v[6u * i + 5u] = s[2][2];
}
