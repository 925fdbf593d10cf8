#version 460
// Lift pass 2 (the twin of character::LiftPass2Job): per texel the frame's covariance F F^T
// eigen-decomposed (cyclic Jacobi) into R diag(s^2) R^T, s clamped to the texel's bounds, M = R diag(s *
// world_scale), Sigma = M M^T as its upper triangle; the centre back from the decoder frame; colour
// round(255 clamp(rgb)) / 255 as the SH DC term, opacity u8(255 sigmoid(logit)) / 255. A culled texel keeps
// its slot with opacity 0 (slots are never compacted).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require

#include "../lift_shared.h"
#include "../../render/shaders/sh_dc.glsl"

layout(push_constant, scalar) uniform PushBlock { LiftPass2Push pc; };
layout(local_size_x = SF_LIFT_WG) in;


bool finite3(vec3 v) { return !any(isnan(v)) && !any(isinf(v)); }

float colorByte(float x) { return x > 0.0 ? floor(0.5 + 255.0 * min(x, 1.0)) : 0.0; }
float opacityByte(float logit) {
  float s = 255.0 / (1.0 + exp(-logit));
  return s >= 0.0 ? floor(min(s, 255.0)) : 0.0;  // a NaN logit: invisible, as on the CPU
}

// One Jacobi rotation zeroing a(p, q) of the symmetric matrix `a` (math indices: a[col][row] in GLSL,
// symmetric so either), accumulated into the eigenvectors `v`.
void rotate(inout mat3 a, inout mat3 v, int p, int q) {
  float apq = a[q][p];
  if (abs(apq) < 1e-30) return;
  float theta = (a[q][q] - a[p][p]) / (2.0 * apq);
  float t = sign(theta) / (abs(theta) + sqrt(theta * theta + 1.0));
  if (theta == 0.0) t = 1.0;
  float c = inversesqrt(t * t + 1.0), s = t * c;
  mat3 j = mat3(1.0);
  j[p][p] = c;
  j[q][q] = c;
  j[q][p] = s;   // math (p, q)
  j[p][q] = -s;  // math (q, p)
  a = transpose(j) * a * j;
  v = v * j;
}

void main() {
  uint k = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * SF_LIFT_WG;
  uint n = pc.texels;
  if (k >= n) return;
  vec3 center = vec3(pc.center_x, pc.center_y, pc.center_z);
  vec3 p = vec3(pc.geometry.v[k], pc.geometry.v[n + k], pc.geometry.v[2u * n + k]);
  for (uint c = 0u; c < 3u; ++c) pc.sh.v[k * pc.sh_stride + c] = shDcFromColor(colorByte(pc.color.v[c * n + k]) / 255.0);
  for (uint c = 3u; c < pc.sh_stride; ++c) pc.sh.v[k * pc.sh_stride + c] = 0.0;
  if (pc.triim.w[k] == 0u) {
    vec3 at = finite3(p) ? p * pc.world_scale + center : center;
    pc.positions.v[3u * k] = at.x;
    pc.positions.v[3u * k + 1u] = at.y;
    pc.positions.v[3u * k + 2u] = at.z;
    pc.covariances.v[6u * k + 0u] = 1e-8;
    pc.covariances.v[6u * k + 1u] = 0.0;
    pc.covariances.v[6u * k + 2u] = 0.0;
    pc.covariances.v[6u * k + 3u] = 1e-8;
    pc.covariances.v[6u * k + 4u] = 0.0;
    pc.covariances.v[6u * k + 5u] = 1e-8;
    pc.opacities.v[k] = 0.0;
    return;
  }
  vec3 du = vec3(pc.frame.v[9u * k], pc.frame.v[9u * k + 1u], pc.frame.v[9u * k + 2u]);
  vec3 dv = vec3(pc.frame.v[9u * k + 3u], pc.frame.v[9u * k + 4u], pc.frame.v[9u * k + 5u]);
  vec3 nn = vec3(pc.frame.v[9u * k + 6u], pc.frame.v[9u * k + 7u], pc.frame.v[9u * k + 8u]);
  mat3 f = mat3(du, dv, nn);  // columns
  mat3 a = f * transpose(f);
  mat3 v = mat3(1.0);
  for (int sweep = 0; sweep < 8; ++sweep) {
    rotate(a, v, 0, 1);
    rotate(a, v, 0, 2);
    rotate(a, v, 1, 2);
  }
  float lo = pc.bounds.v[2u * k], hi = pc.bounds.v[2u * k + 1u];
  vec3 s = vec3(clamp(sqrt(max(a[0][0], 0.0)), lo, hi), clamp(sqrt(max(a[1][1], 0.0)), lo, hi), clamp(sqrt(max(a[2][2], 0.0)), lo, hi)) * pc.world_scale;
  // M = R diag(s): R(q) of the eigenvectors made a proper rotation is V up to column signs, which
  // M M^T does not see.
  mat3 m = v * mat3(s.x, 0.0, 0.0, 0.0, s.y, 0.0, 0.0, 0.0, s.z);
  mat3 sigma = m * transpose(m);
  pc.covariances.v[6u * k + 0u] = sigma[0][0];
  pc.covariances.v[6u * k + 1u] = sigma[1][0];
  pc.covariances.v[6u * k + 2u] = sigma[2][0];
  pc.covariances.v[6u * k + 3u] = sigma[1][1];
  pc.covariances.v[6u * k + 4u] = sigma[2][1];
  pc.covariances.v[6u * k + 5u] = sigma[2][2];
  vec3 at = p * pc.world_scale + center;
  pc.positions.v[3u * k] = at.x;
  pc.positions.v[3u * k + 1u] = at.y;
  pc.positions.v[3u * k + 2u] = at.z;
  float logit = pc.color_channels == 4u ? pc.color.v[3u * n + k] : pc.geometry_channels == 4u ? pc.geometry.v[3u * n + k] : pc.default_opacity_logit;
  pc.opacities.v[k] = opacityByte(logit) / 255.0;
}
