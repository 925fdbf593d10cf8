#version 460
// The trainer's parameters activated into the frame's slots (a GpuSplatSource's pass, "training: activate",
// before preprocess): centre, covariance R S S^T R^T (S = exp(log-scales), R of the normalised quaternion), opacity sigmoid,
// colour sigmoid written as the SH DC term (rgb - 0.5) / C0. The same values as toCloud() (train/raster_grad.h).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "../train_shared.h"
#include "../../render/shaders/sh_dc.glsl"

layout(buffer_reference, scalar) buffer AFloats { float v[]; };
layout(push_constant, scalar) uniform PushBlock { GpuActivatePush pc; };
layout(local_size_x = SF_TRAIN_WG) in;


void main() {
  uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * SF_TRAIN_WG + gl_LocalInvocationID.x, n = pc.count;
  if (i >= n) return;
  TFloats p = pc.params;
  AFloats pos = AFloats(pc.positions), cov = AFloats(pc.covariances), op = AFloats(pc.opacities), sh = AFloats(pc.sh);
  uint qa = 3u * n + 4u * i, sa = 7u * n + 3u * i, ca = 11u * n + 3u * i;
  vec4 q = vec4(p.v[qa], p.v[qa + 1u], p.v[qa + 2u], p.v[qa + 3u]);
  float len = sqrt(dot(q, q));
  q = len > 0.0 ? q / len : vec4(1.0, 0.0, 0.0, 0.0);
  float w = q.x, x = q.y, y = q.z, z = q.w;
  vec3 r0 = vec3(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y));
  vec3 r1 = vec3(2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x));
  vec3 r2 = vec3(2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y));
  vec3 s = exp(vec3(p.v[sa], p.v[sa + 1u], p.v[sa + 2u]));
  vec3 m0 = r0 * s, m1 = r1 * s, m2 = r2 * s;  // rows of M = R diag(s)
  for (uint k = 0u; k < 3u; ++k) pos.v[3u * i + k] = p.v[3u * i + k];
  cov.v[6u * i] = dot(m0, m0);
  cov.v[6u * i + 1u] = dot(m0, m1);
  cov.v[6u * i + 2u] = dot(m0, m2);
  cov.v[6u * i + 3u] = dot(m1, m1);
  cov.v[6u * i + 4u] = dot(m1, m2);
  cov.v[6u * i + 5u] = dot(m2, m2);
  op.v[i] = 1.0 / (1.0 + exp(-p.v[10u * n + i]));
  for (uint k = 0u; k < 3u; ++k) sh.v[i * pc.sh_stride + k] = shDcFromColor(1.0 / (1.0 + exp(-p.v[ca + k])));
}
