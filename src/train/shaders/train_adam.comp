#version 460
// Adam over every parameter (Kingma and Ba 2015; beta 0.9 / 0.999, eps 1e-15), the learning rate of each
// element's group; the trainer's CPU step (train/trainer.cpp Adam) with the same arithmetic.
#include "train_common.glsl"

layout(local_size_x = SF_TRAIN_WG) in;

void main() {
  if (frameOverflowed()) return;
  uint e = linearIndex(), n = pc.count;
  if (e >= SF_TRAIN_PARAMS * n) return;
  uint group = e < 3u * n ? 0u : e < 7u * n ? 1u : e < 10u * n ? 2u : e < 11u * n ? 3u : 4u;
  const float b1 = 0.9, b2 = 0.999, eps = 1e-15;
  float c1 = 1.0 - pow(b1, float(pc.step)), c2 = 1.0 - pow(b2, float(pc.step));
  float step_size = pc.lr[group] / c1, inv_c2 = 1.0 / sqrt(c2);
  float g = pc.grads.v[e];
  uint mi = e, vi = SF_TRAIN_PARAMS * n + e;
  float m = b1 * pc.moments.v[mi] + (1.0 - b1) * g;
  float v = b2 * pc.moments.v[vi] + (1.0 - b2) * g * g;
  pc.moments.v[mi] = m;
  pc.moments.v[vi] = v;
  pc.params.v[e] -= step_size * m / (sqrt(v) * inv_c2 + eps);
}
