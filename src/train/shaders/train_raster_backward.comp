#version 460
// The tile raster's backward pass: one workgroup per 16x16 tile, one thread per pixel, walking the tile's sorted
// list back to front from the last splat any of its pixels blended (rasterBackward's first stage,
// train/raster_grad.cpp, with the same math). All threads take the list's entries in the same order (staged
// through shared memory in batches), so a subgroup sums its pixels' terms for an entry and one lane adds them to
// the gaussian's 64-bit fixed-point sums (train_shared.h).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_shader_atomic_int64 : require
#include "train_common.glsl"

layout(local_size_x = SF_TILE, local_size_y = SF_TILE) in;
const uint kBatch = SF_TILE * SF_TILE;
shared vec2 s_mean[kBatch];
shared vec4 s_conic[kBatch];
shared vec3 s_color[kBatch];
shared uint s_slot[kBatch];
shared uint s_max_last;

const float kFixed = float(1u << 16) * float(1u << (SF_TRAIN_FIXED_BITS - 16));

void addFixed(uint slot, uint c, float v) {
  float sum = subgroupAdd(v);
  if (subgroupElect() && sum != 0.0) atomicAdd(pc.grad2d.v[slot * SF_TRAIN_GRAD2D + c], int64_t(sum * kFixed));
}

void main() {
  if (frameOverflowed()) return;
  FrameRef fr = FrameRef(pc.frame);
  uint tile = gl_WorkGroupID.y * fr.f.tiles_x + gl_WorkGroupID.x;
  uvec2 range = fr.f.tile_ranges.v[tile];
  Uints values = (pc.frame_flags & SF_FLAG_SOURCE_ALT) != 0u ? fr.f.values_alt : fr.f.values;
  uint px = gl_GlobalInvocationID.x, py = gl_GlobalInvocationID.y;
  bool inside = px < fr.f.width && py < fr.f.height;
  uint pix = py * fr.f.width + px;
  uint tid = gl_LocalInvocationIndex;
  float t_final = 1.0;
  uint last = 0u;
  vec3 g_c = vec3(0.0);
  float g_a = 0.0;
  if (inside) {
    t_final = fr.f.train_final_t.v[pix];
    last = fr.f.train_last.v[pix];
    vec4 g = pc.pixel_grads.v[pix];
    g_c = g.xyz;
    g_a = g.w;
  }
  if (tid == 0u) s_max_last = 0u;
  barrier();
  atomicMax(s_max_last, last);
  barrier();
  uint n = s_max_last;
  vec3 bg = vec3(fr.f.background[0], fr.f.background[1], fr.f.background[2]);
  // C = sum c_i a_i T_i + bg T_N, A = 1 - T_N; dL/dT_N, and `behind` = sum over later splats of c_j a_j T_j.
  float g_tn = dot(g_c, bg) - g_a;
  float t = t_final;
  vec3 behind = vec3(0.0);
  vec2 pixf = vec2(float(px), float(py));
  for (uint end = n; end > 0u;) {
    uint start = end > kBatch ? end - kBatch : 0u;
    barrier();  // the previous batch is no longer read
    if (start + tid < end) {
      uint slot = values.v[range.x + start + tid];
      s_slot[tid] = slot;
      s_mean[tid] = fr.f.means.v[slot];
      s_conic[tid] = fr.f.conic_opacity.v[slot];
      s_color[tid] = fr.f.color_depth.v[slot].xyz;
    }
    barrier();
    for (uint j = end - start; j-- > 0u;) {
      uint k = start + j;
      float v[SF_TRAIN_GRAD2D] = float[](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
      bool any_term = false;
      if (k < last) {
        vec2 d = s_mean[j] - pixf;
        vec4 co = s_conic[j];
        float power = -0.5 * (co.x * d.x * d.x + co.z * d.y * d.y) - co.y * d.x * d.y;
        float gauss = exp(power);
        float raw = co.w * gauss;
        float alpha = min(0.99, raw);
        if (power <= 0.0 && alpha >= 1.0 / 255.0) {
          any_term = true;
          float one_minus = 1.0 - alpha;
          t /= one_minus;
          float w = alpha * t;
          vec3 c = s_color[j];
          v[6] = w * g_c.x, v[7] = w * g_c.y, v[8] = w * g_c.z;
          float g_alpha = dot(g_c, c) * t - (dot(g_c, behind) + g_tn * t_final) / one_minus;
          behind += c * w;
          if (raw <= 0.99) {
            v[5] = g_alpha * gauss;
            float g_power = g_alpha * co.w * gauss;
            v[0] = g_power * -(co.x * d.x + co.y * d.y);
            v[1] = g_power * -(co.z * d.y + co.y * d.x);
            v[2] = g_power * -0.5 * d.x * d.x;
            v[3] = g_power * -d.x * d.y;
            v[4] = g_power * -0.5 * d.y * d.y;
          }
        }
      }
      if (subgroupAny(any_term)) {
        uint slot = s_slot[j];
        for (uint c = 0u; c < SF_TRAIN_GRAD2D; ++c) addFixed(slot, c, v[c]);
      }
    }
    end = start;
  }
}
