#version 460
// Lift pass 1 (the twin of character::LiftPass1Job): per texel the jacobian of the position map by finite
// differences (central between covered neighbours, one-sided at an island's edge), the frame
// F = [k du, k dv, t n], the texel bound against its source triangle in the posed mesh, the scale clamp, and
// validity folded into triim (triangle + 1, 0 culled).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require

#include "../lift_shared.h"

layout(push_constant, scalar) uniform PushBlock { LiftPass1Push pc; };
layout(local_size_x = SF_LIFT_WG) in;

bool finite3(vec3 v) { return !any(isnan(v)) && !any(isinf(v)); }

vec3 position(uint k) {
  uint n = pc.width * pc.height;
  return vec3(pc.geometry.v[k], pc.geometry.v[n + k], pc.geometry.v[2u * n + k]);
}
bool covered(uint k) { return pc.texel_triangle.w[k] != 0u && finite3(position(k)); }
vec3 vertex(uint i) { return vec3(pc.vertices.v[3u * i], pc.vertices.v[3u * i + 1u], pc.vertices.v[3u * i + 2u]); }

// Derivative along u (columns) or v (rows); false when neither neighbour is covered.
bool derivative(uint i, uint j, bool along_u, out vec3 d) {
  uint w = pc.width;
  uint len = along_u ? pc.width : pc.height, at = along_u ? j : i;
  uint k = i * w + j;
  uint k_lo = along_u ? k - 1u : k - w, k_hi = along_u ? k + 1u : k + w;
  bool lo = at > 0u && covered(k_lo);
  bool hi = at + 1u < len && covered(k_hi);
  d = vec3(0.0);
  if (lo && hi) d = (position(k_hi) - position(k_lo)) * 0.5;
  else if (hi) d = position(k_hi) - position(k);
  else if (lo) d = position(k) - position(k_lo);
  else return false;
  return true;
}

void main() {
  uint k = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * SF_LIFT_WG;
  if (k >= pc.width * pc.height) return;
  uint i = k / pc.width, j = k % pc.width;
  for (uint c = 0u; c < 9u; ++c) pc.frame.v[9u * k + c] = 0.0;
  pc.bounds.v[2u * k] = pc.min_scale;
  pc.bounds.v[2u * k + 1u] = pc.min_scale;
  pc.triim.w[k] = 0u;
  if (!covered(k)) return;
  vec3 du, dv;
  if (!derivative(i, j, true, du) || !derivative(i, j, false, dv)) return;
  du *= pc.scale_mult;
  dv *= pc.scale_mult;
  vec3 c = cross(du, dv);
  float cl = length(c);
  if (!(cl > 0.0) || isinf(cl)) return;
  vec3 nrm = c * (pc.thickness * min(length(du), length(dv)) / cl);
  uint t = pc.texel_triangle.w[k] - 1u;
  vec3 a = vertex(pc.indices.w[3u * t]), b = vertex(pc.indices.w[3u * t + 1u]), cc = vertex(pc.indices.w[3u * t + 2u]);
  float edge = max(max(length(b - a), length(cc - b)), length(a - cc));
  vec3 mid = (a + b + cc) * (1.0 / 3.0);
  if (!(length(position(k) - mid) <= pc.max_triangle_distance * edge)) return;
  pc.frame.v[9u * k + 0u] = du.x;
  pc.frame.v[9u * k + 1u] = du.y;
  pc.frame.v[9u * k + 2u] = du.z;
  pc.frame.v[9u * k + 3u] = dv.x;
  pc.frame.v[9u * k + 4u] = dv.y;
  pc.frame.v[9u * k + 5u] = dv.z;
  pc.frame.v[9u * k + 6u] = nrm.x;
  pc.frame.v[9u * k + 7u] = nrm.y;
  pc.frame.v[9u * k + 8u] = nrm.z;
  pc.bounds.v[2u * k + 1u] = max(pc.min_scale, min(pc.max_scale, pc.triangle_scale * edge));
  pc.triim.w[k] = t + 1u;
}
