// Included by the training passes that run in the frame's tail: extensions, the shared layouts, push constants.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

#include "../../render/gpu_shared.h"
#include "../train_shared.h"

layout(push_constant, scalar) uniform PushBlock { GpuTrainPush pc; };

// Offsets of the parameter groups in the flat arrays (train_shared.h).
uint meanAt(uint i) { return 3u * i; }
uint quatAt(uint i) { return 3u * pc.count + 4u * i; }
uint scaleAt(uint i) { return 7u * pc.count + 3u * i; }
uint opacityAt(uint i) { return 10u * pc.count + i; }
uint colorAt(uint i) { return 11u * pc.count + 3u * i; }

float sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }

// The element of a 1D pass of SF_TRAIN_WG-thread workgroups dispatched as rows of at most 65535 of them
// (gpu_trainer.cpp dispatch1d). (Not gl_WorkGroupSize: this file comes before the shader declares its size.)
uint linearIndex() { return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * SF_TRAIN_WG + gl_LocalInvocationID.x; }

// Rows of the rotation matrix of a unit quaternion (w, x, y, z), as core/math.cpp rotationMatrix.
void rotationRows(vec4 q, out vec3 r0, out vec3 r1, out vec3 r2) {
  float w = q.x, x = q.y, y = q.z, z = q.w;
  r0 = vec3(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y));
  r1 = vec3(2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x));
  r2 = vec3(2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y));
}

// The quaternion of gaussian i, normalised (identity when zero, as core/math.h normalize).
vec4 unitQuat(TFloats p, uint i) {
  uint a = quatAt(i);
  vec4 q = vec4(p.v[a], p.v[a + 1u], p.v[a + 2u], p.v[a + 3u]);
  float len = sqrt(dot(q, q));
  return len > 0.0 ? q / len : vec4(1.0, 0.0, 0.0, 0.0);
}

// The frame's keys overflowed their buffers: its raster is incomplete and it is rendered again after they grow,
// this tail with it; every pass of the tail then does nothing.
bool frameOverflowed() { return FrameRef(pc.frame).f.counters.v[SF_COUNTER_OVERFLOW] != 0u; }
