#version 460
// Tile raster: one workgroup per 16x16 tile, one thread per pixel, front-to-back blending of the tile's
// sorted splats in batches staged through shared memory. Same per-pixel math as blendPixel(): with a mesh
// layer, blending stops at the first splat not in front of the mesh and ends on the mesh colour.
#include "common.glsl"

layout(local_size_x = SF_TILE, local_size_y = SF_TILE) in;
const uint kBatch = SF_TILE * SF_TILE;
shared vec2 s_mean[kBatch];
shared vec4 s_conic[kBatch];
shared vec4 s_color_depth[kBatch];
shared uint s_done[2];

void main() {
  FrameRef fr = pc.frame;
  uint tile = gl_WorkGroupID.y * fr.f.tiles_x + gl_WorkGroupID.x;
  uvec2 range = fr.f.tile_ranges.v[tile];
  Uints values = (pc.pad0 & SF_FLAG_SOURCE_ALT) != 0u ? fr.f.values_alt : fr.f.values;
  uint px = gl_GlobalInvocationID.x, py = gl_GlobalInvocationID.y;
  bool inside = px < fr.f.width && py < fr.f.height;
  bool done = !inside;
  vec2 pixf = vec2(float(px), float(py));
  float T = 1.0;
  vec3 C = vec3(0.0);
  vec3 behind = vec3(fr.f.background[0], fr.f.background[1], fr.f.background[2]);
  float stop_depth = SF_NO_MESH_DEPTH;
  bool mesh = false;
  if (inside && fr.f.has_mesh != 0u) {
    uint pix = py * fr.f.width + px;
    stop_depth = fr.f.mesh_depth.v[pix];
    mesh = stop_depth < SF_NO_MESH_DEPTH;
    if (mesh) behind = fr.f.mesh_color.v[pix].xyz;
  }
  uint tid = gl_LocalInvocationIndex;
  // Done-pixel counts alternate between two counters so that each batch needs two barriers (as
  // __syncthreads_count does in the INRIA rasterizer): one after counting, one after staging.
  if (tid == 0u) {
    s_done[0] = 0u;
    s_done[1] = 0u;
  }
  barrier();
  uint parity = 0u;
  for (uint start = range.x; start < range.y; start += kBatch, parity ^= 1u) {
    if (done) atomicAdd(s_done[parity], 1u);
    barrier();  // counts complete; every thread has finished reading the previous batch
    if (s_done[parity] == kBatch) break;
    if (tid == 0u) s_done[parity ^ 1u] = 0u;
    uint k = start + tid;
    if (k < range.y) {
      uint slot = values.v[k];
      s_mean[tid] = fr.f.means.v[slot];
      s_conic[tid] = fr.f.conic_opacity.v[slot];
      s_color_depth[tid] = fr.f.color_depth.v[slot];
    }
    barrier();
    uint count = min(kBatch, range.y - start);
    for (uint j = 0u; j < count && !done; ++j) {
      if (!(s_color_depth[j].w < stop_depth)) {  // this splat and every later one lie behind the mesh
        done = true;
        break;
      }
      vec2 d = s_mean[j] - pixf;
      vec4 co = s_conic[j];
      float power = -0.5 * (co.x * d.x * d.x + co.z * d.y * d.y) - co.y * d.x * d.y;
      if (power > 0.0) continue;
      float alpha = min(0.99, co.w * exp(power));
      if (alpha < 1.0 / 255.0) continue;
      float test_t = T * (1.0 - alpha);
      if (test_t < 0.0001) {
        done = true;
        break;
      }
      C += s_color_depth[j].xyz * (alpha * T);
      T = test_t;
    }
  }
  if (inside) fr.f.image.v[py * fr.f.width + px] = vec4(C + T * behind, mesh ? 1.0 : 1.0 - T);
}
