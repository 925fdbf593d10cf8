#version 460
// The MCMC position noise (gsplat's inject_noise_to_position): mean += Sigma e * gate * scale, e standard normal
// (a hash of seed, step, gaussian and axis through Box-Muller), gate = sigmoid(100 ((1 - o) - 0.995)), so only
// nearly transparent gaussians wander. Runs before Adam's step, as on the CPU.
#include "train_common.glsl"

layout(local_size_x = SF_TRAIN_WG) in;

uint hash(uint x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
float uniform01(uint a, uint b) { return (float(hash(a ^ hash(b)) >> 8) + 0.5) * (1.0 / 16777216.0); }

void main() {
  if (frameOverflowed()) return;
  uint i = linearIndex(), n = pc.count;
  if (i >= n) return;
  TFloats p = pc.params;
  float o = sigmoid(p.v[opacityAt(i)]);
  float gate = 1.0 / (1.0 + exp(-100.0 * ((1.0 - o) - 0.995)));
  if (gate * pc.noise_scale < 1e-12) return;
  uint key = hash(pc.seed * 0x9e3779b9u + pc.step) ^ (i * 0x85ebca6bu);
  vec3 e;
  for (uint k = 0u; k < 3u; ++k) {
    float u1 = uniform01(key, 4u * k + 1u), u2 = uniform01(key, 4u * k + 2u);
    e[k] = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
  }
  vec4 q = unitQuat(p, i);
  vec3 r0, r1, r2;
  rotationRows(q, r0, r1, r2);
  vec3 s = exp(vec3(p.v[scaleAt(i)], p.v[scaleAt(i) + 1u], p.v[scaleAt(i) + 2u]));
  vec3 m0 = r0 * s, m1 = r1 * s, m2 = r2 * s;
  vec3 x = e * (gate * pc.noise_scale);
  vec3 noise = vec3(dot(m0, m0) * x.x + dot(m0, m1) * x.y + dot(m0, m2) * x.z, dot(m1, m0) * x.x + dot(m1, m1) * x.y + dot(m1, m2) * x.z,
                    dot(m2, m0) * x.x + dot(m2, m1) * x.y + dot(m2, m2) * x.z);
  for (uint k = 0u; k < 3u; ++k) p.v[meanAt(i) + k] += noise[k];
}
