#version 460
// The tile raster's backward pass: one workgroup per 16x16 tile, one thread per pixel, walking the tile's sorted
// list back to front from the last splat any of its pixels blended (rasterBackward's first stage,
// train/raster_grad.cpp, with the same math). All threads take the list's entries in the same order (staged
// through shared memory in batches), so a subgroup sums its pixels' terms for an entry and one lane adds them to
// the gaussian's 64-bit fixed-point sums (train_shared.h). As in the forward raster, each subgroup first culls
// a batch against the rectangle of its pixels (an entry whose alpha >= 1/255 ellipse misses it has no term at any
// of them) and walks only the entries that reach it: without the cull the pass was bound by every thread
// stepping through every entry of its tile.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_atomic_int64 : require
#include "train_common.glsl"

layout(local_size_x = SF_TILE, local_size_y = SF_TILE) in;
const uint kBatch = SF_TILE * SF_TILE;
shared vec2 s_mean[kBatch];
shared vec4 s_conic[kBatch];
shared vec3 s_color[kBatch];
shared uint s_slot[kBatch];
shared uint s_max_last;
const uint kWords = kBatch / 32u;  // one bit per batch entry

// Whether entry j of the batch can reach a pixel of [lo, hi] (raster.comp's test).
bool reaches(uint j, vec2 lo, vec2 hi) {
  vec4 co = s_conic[j];
  if (co.w < 1.0 / 255.0) return false;
  float det = co.x * co.z - co.y * co.y;
  if (!(det > 1e-3 * co.x * co.z)) return true;
  float r2 = max(2.0 * log(255.0 * co.w), 0.0);
  vec2 half_extent = sqrt(vec2(co.z, co.x) * (r2 / det)) * 1.02 + 0.5;
  vec2 m = s_mean[j];
  return !(any(lessThan(m + half_extent, lo)) || any(greaterThan(m - half_extent, hi)));
}

const float kFixed = float(1u << 16) * float(1u << (SF_TRAIN_FIXED_BITS - 16));

// The subgroup's sums of an entry's 9 terms into the gaussian's fixed-point sums. The conic terms go in as the
// gradient of the 2D covariance the conic inverts (dL/dSigma = -Q H Q, H the symmetric gradient of Q = the conic;
// linear, so it applies to the sums): the conic's own sums grow like sigma^4 and would wrap the fixed point for
// large splats, the covariance's stay O(1).
// Terms 0-7 are summed by a transposing butterfly: in each of three exchanges a lane keeps half of its values
// and trades the other half with its partner, so 4 + 2 + 1 shuffles leave each of 8 neighbouring lanes with one
// term summed over those 8, and one shuffle per further doubling of the subgroup finishes the sums (9 shuffles on
// 32 lanes, where nine subgroupAdds take 45); those 8 lanes and one more then add a term each, side by side.
void addEntry(uint slot, vec4 co, float v[SF_TRAIN_GRAD2D]) {
  uint lane = gl_SubgroupInvocationID;
  bool up = (lane & 1u) != 0u;
  float a0 = (up ? v[4] : v[0]) + subgroupShuffleXor(up ? v[0] : v[4], 1u);
  float a1 = (up ? v[5] : v[1]) + subgroupShuffleXor(up ? v[1] : v[5], 1u);
  float a2 = (up ? v[6] : v[2]) + subgroupShuffleXor(up ? v[2] : v[6], 1u);
  float a3 = (up ? v[7] : v[3]) + subgroupShuffleXor(up ? v[3] : v[7], 1u);
  up = (lane & 2u) != 0u;
  float b0 = (up ? a2 : a0) + subgroupShuffleXor(up ? a0 : a2, 2u);
  float b1 = (up ? a3 : a1) + subgroupShuffleXor(up ? a1 : a3, 2u);
  up = (lane & 4u) != 0u;
  float c = (up ? b1 : b0) + subgroupShuffleXor(up ? b0 : b1, 4u);
  for (uint m = 8u; m < gl_SubgroupSize; m <<= 1) c += subgroupShuffleXor(c, m);
  float last = subgroupAdd(v[8]);
  uint term = ((lane & 1u) << 2) | (lane & 2u) | ((lane >> 2) & 1u);  // which term lane (< 8) holds
  // The conic's sums (terms 2, 3, 4 on lanes 2, 6, 1) to the covariance's, on the lanes that add them.
  float h2 = subgroupShuffle(c, 2u), h3 = subgroupShuffle(c, 6u), h4 = subgroupShuffle(c, 1u);
  if (term >= 2u && term <= 4u) {
    mat2 q = mat2(co.x, co.y, co.y, co.z);
    mat2 g = -(q * mat2(h2, 0.5 * h3, 0.5 * h3, h4) * q);
    c = term == 2u ? g[0][0] : term == 3u ? 2.0 * g[0][1] : g[1][1];
  }
  if (lane < 8u && c != 0.0) atomicAdd(pc.grad2d.v[slot * SF_TRAIN_GRAD2D + term], int64_t(c * kFixed));
  if (lane == min(8u, gl_SubgroupSize - 1u) && last != 0.0) atomicAdd(pc.grad2d.v[slot * SF_TRAIN_GRAD2D + 8u], int64_t(last * kFixed));
}

void main() {
  if (frameOverflowed()) return;
  FrameRef fr = FrameRef(pc.frame);
  uint tile = gl_WorkGroupID.y * fr.f.tiles_x + gl_WorkGroupID.x;
  uvec2 range = fr.f.tile_ranges.v[tile];
  Uints values = (sfMergePasses(range.y - range.x) & 1u) != 0u ? fr.f.values_alt : fr.f.values;
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
    // This subgroup's pixels with entries of the batch to walk back through, and the entries that reach them.
    bool walking = inside && last > start;
    vec2 lo = vec2(subgroupMin(walking ? pixf.x : 1e30), subgroupMin(walking ? pixf.y : 1e30));
    vec2 hi = vec2(subgroupMax(walking ? pixf.x : -1e30), subgroupMax(walking ? pixf.y : -1e30));
    uvec4 lanes = subgroupBallot(true);
    uint lane = subgroupBallotExclusiveBitCount(lanes), lane_count = subgroupBallotBitCount(lanes);
    uint count = end - start;
    uint reach[kWords];
    for (uint w = 0u; w < kWords; ++w) {
      uint bits = 0u;
      for (uint e = lane; e < 32u; e += lane_count)
        if (w * 32u + e < count && reaches(w * 32u + e, lo, hi)) bits |= 1u << e;
      reach[w] = subgroupOr(bits);
    }
    for (uint w = kWords; w-- > 0u;) {
      for (uint bits = reach[w]; bits != 0u;) {
        uint bit = uint(findMSB(bits));
        bits &= ~(1u << bit);
        uint j = w * 32u + bit;
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
            float wt = alpha * t;
            vec3 c = s_color[j];
            v[6] = wt * g_c.x, v[7] = wt * g_c.y, v[8] = wt * g_c.z;
            float g_alpha = dot(g_c, c) * t - (dot(g_c, behind) + g_tn * t_final) / one_minus;
            behind += c * wt;
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
        if (subgroupAny(any_term)) addEntry(s_slot[j], s_conic[j], v);
      }
    }
    end = start;
  }
}
