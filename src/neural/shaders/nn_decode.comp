#version 460
// A generator's outputs decoded into the renderer's slots (the GPU twin of decodeGenerated in
// generator.cpp): per row, centre, opacity (clamped to [0, 1]) and covariance from [N, 10]; SH degree 3
// copied from [N, 48] (channel-interleaved, as the renderer stores it) or RGB turned into the DC term
// ((c - 0.5) / C0) unless the colours are already SH; rows past num_points get a NaN opacity, which leaves
// them out of the frame. Outputs are float32 words in the executor's arena.
// Parameters (push constants): addresses of the gaussians, colours and count (0: every row is live), the
// targets (render/cpu_renderer.h GpuSplatTargets), N, colour channels, whether colours are SH, SH stride.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_GOOGLE_include_directive : require
#include "../../render/shaders/sh_dc.glsl"

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint w[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };

layout(push_constant) uniform Push {
  Floats gauss;
  Floats color;
  Words count;
  Floats positions;
  Floats covariances;
  Floats opacities;
  Floats sh;
  uint rows;
  uint channels;
  uint color_is_sh;
  uint sh_stride;
  uint live_static;  // the live count when `count` is 0
} pc;

layout(local_size_x = 256) in;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  if (i >= pc.rows) return;
  uint live = uint64_t(pc.count) != 0ul ? uint(max(int(pc.count.w[0]), 0)) : pc.live_static;
  for (uint k = 0u; k < 3u; ++k) pc.positions.v[i * 3u + k] = pc.gauss.v[i * 10u + k];
  for (uint k = 0u; k < 6u; ++k) pc.covariances.v[i * 6u + k] = pc.gauss.v[i * 10u + 4u + k];
  pc.opacities.v[i] = i < live ? clamp(pc.gauss.v[i * 10u + 3u], 0.0, 1.0) : uintBitsToFloat(0x7FC00000u);
  if (pc.channels == 48u) {
    for (uint k = 0u; k < min(48u, pc.sh_stride); ++k) pc.sh.v[i * pc.sh_stride + k] = pc.color.v[i * 48u + k];
  } else {
    for (uint k = 0u; k < 3u; ++k) {
      float c = pc.color.v[i * pc.channels + k];
      pc.sh.v[i * pc.sh_stride + k] = pc.color_is_sh != 0u ? c : shDcFromColor(c);
    }
  }
}
