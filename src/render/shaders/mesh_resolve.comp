#version 460
// Anti-aliased mesh layer, the resolve (render/mesh.h "Anti-aliased edges"): one dispatch after each sample
// pass folds that pass's fragment into every pixel's state, as accumulateMeshSample does on the CPU, in the
// same order and with the same operations (`precise`: no fused multiply-add); the dispatch after the last
// pass writes the resolved fragment over the centre pass's, unless every sample matched the centre.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require

#include "../gpu_shared.h"
#include "../mesh_shared.h"

layout(push_constant, scalar) uniform PushBlock {
  GpuMeshResolvePush pc;
};
layout(local_size_x = SF_MESH_RESOLVE_WG) in;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= pc.pixels) return;
  vec4 centre = pc.color.v[i];
  float centre_depth = pc.depth.v[i];
  precise vec4 sum = vec4(0.0);
  vec2 state = vec2(SF_NO_MESH_DEPTH, centre_depth < SF_NO_MESH_DEPTH ? 1.0 : 0.0);
  if (pc.sample_index != 0u) {
    sum = pc.sum.v[i];
    state = pc.state.v[i];
  }
  float depth = pc.sample_depth.v[i];
  if (depth < SF_NO_MESH_DEPTH) {
    vec4 s = pc.sample_color.v[i];
    precise vec3 weighted = s.xyz * s.w;
    sum = vec4(sum.xyz + weighted, sum.w + s.w);
    state.x = min(state.x, depth);
    if (!all(lessThanEqual(abs(s - centre), vec4(SF_MESH_MATCH_TOLERANCE)))) state.y = 0.0;
  } else {
    state.y = 0.0;
  }
  if (pc.sample_index + 1u < pc.samples) {
    pc.sum.v[i] = sum;
    pc.state.v[i] = state;
    return;
  }
  if (state.y != 0.0) return;  // every sample held the centre's colour and alpha: the centre's fragment stays
  if (sum.w > 0.0) {
    pc.color.v[i] = vec4(sum.xyz / sum.w, sum.w / float(pc.samples));
    pc.depth.v[i] = state.x;
  } else {
    pc.color.v[i] = vec4(0.0);
    pc.depth.v[i] = SF_NO_MESH_DEPTH;
  }
}
