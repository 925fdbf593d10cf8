#version 460
// Half-precision tile raster (RenderSettings::half_raster): the frame's own raster where nothing but the colour
// is read (no mesh layer, no shapes, no depth sum, no training, not a raster slice) on devices with 16-bit
// float arithmetic. The same walk as raster.comp (SF_TILE / SF_RASTER_ROWS workgroups a tile, front to back
// over the tile's sorted list in batches staged through shared memory, each subgroup culling a batch against
// the rectangle of its pixels still blending), but each thread blends two horizontally adjacent pixels with
// paired 16-bit arithmetic (f16vec2: one instruction for both), so a 16x8 half tile takes 64 threads and each
// run of 32 of them an 8x8 block.
//
// Per batch entry, in fp32: the offsets from the pixel pair, and (u, v) = L d, L the upper-triangular
// Cholesky factor of the conic (Q = L^T L), scaled so that u^2 + v^2 is the exponent in log2 units; in fp16:
// sigma = u^2 + v^2 - log2(opacity) for both pixels, alpha = min(0.99, 2^-sigma) where sigma < log2(255)
// (alpha >= 1/255), and the blend. The squares of the factor are summed, never the conic's terms: a needle's
// a dx^2 + c dy^2 + 2 b dx dy cancels to a small number from large ones, which 11 bits cannot hold. A batch's
// colour is summed in fp16 from zero and added to fp32 sums after the batch: a running fp16 sum of 0.5 or
// more would drop every contribution under 2.4e-4 (biker against the CPU: 73.2 dB that way, 82.6 dB this
// way). The transmittance stays fp16: under thousands of faint splats its rounding drifts (51 dB in the
// worst case of VulkanImage.HalfRasterStaysCloseToTheCpu). The stopping rule is blendPixel's: a pixel whose
// transmittance would fall below 1e-4 stops before that splat. The subgroup cull is raster.comp's exact one
// (raster_cull.glsl), and the entries that reach a subgroup are evaluated four at a time before they are
// blended (the blend is branchless: on an H100 the headline's half raster 1.351 -> 1.283 ms with both; the
// fp32 raster, whose blend branches, was slower unrolled). Off by default (RenderSettings::half_raster), so
// that the default frame stays equal to the CPU renderer's to within rounding.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"
#include "raster_cull.glsl"

layout(local_size_x = SF_TILE, local_size_y = SF_RASTER_ROWS / 2) in;
#if SF_TILE != 16 || SF_RASTER_ROWS != 8
#error "the pixel map below is written for 16x8 half tiles"
#endif
const uint kBatch = SF_TILE * SF_RASTER_ROWS / 2;  // one entry a thread
const uint kParts = SF_TILE / SF_RASTER_ROWS;      // workgroups per tile, stacked along y
const uint kWords = kBatch / 32u;                  // one bit per batch entry
#ifndef SF_RASTER_UNROLL
#define SF_RASTER_UNROLL 4
#endif
const uint kUnroll = SF_RASTER_UNROLL;  // batch entries a pixel pair evaluates before blending them
const float kCholScale = 0.84932180028;            // sqrt(log2(e) / 2): -(u^2 + v^2) is -0.5 d^T Q d in log2 units
const float kLog2Of255 = 7.99435344;               // sigma below it: alpha >= 1/255
shared vec2 s_mean[kBatch];
shared vec4 s_factor[kBatch];  // L's x, y, z (L = [x y; 0 z]), -log2(opacity)
shared f16vec4 s_color[kBatch];
shared uint s_done[2];

// The staged form of a splat's conic and opacity (conic_opacity: a, b, c, opacity with Q = [a b; b c]).
vec4 staged(vec4 co) {
  float x = sqrt(co.x), y = co.y / x, z = sqrt(max(co.z - y * y, 0.0));
  return vec4(vec3(x, y, z) * kCholScale, -log2(co.w));
}

// raster.comp's reaches() on the staged form: whether splat j's alpha >= 1/255 ellipse can reach a pixel of
// [lo, hi], first its bounding box, half extents sqrt(r2 Q^-1_xx), sqrt(r2 Q^-1_yy) widened by 2% and half a
// pixel, then the exact test over the rectangle on the conic rebuilt from the factor (raster_cull.glsl). Q^-1 =
// (1 / det) [c -b; -b a] with a = x^2, c = y^2 + z^2 and det = (x z)^2, which the factor gives without
// the cancellation of a c - b^2; a factor with det below 1e-3 of a c always passes.
bool reaches(uint j, vec2 lo, vec2 hi) {
  vec4 f = s_factor[j];
  if (f.w > kLog2Of255) return false;  // alpha <= opacity < 1/255 everywhere
  vec3 l = f.xyz * (1.0 / kCholScale);
  float a = l.x * l.x, c = l.y * l.y + l.z * l.z, det = (l.x * l.z) * (l.x * l.z);
  if (!(det > 1e-3 * a * c)) return true;
  float r2 = max(2.0 * 0.69314718 * (kLog2Of255 - f.w), 0.0);  // 2 ln(255 opacity)
  vec2 half_extent = sqrt(vec2(c, a) * (r2 / det)) * 1.02 + 0.5;
  vec2 m = s_mean[j];
  if (any(lessThan(m + half_extent, lo)) || any(greaterThan(m - half_extent, hi))) return false;
  return ellipseReachesRect(vec3(a, l.x * l.y, c), r2, m, lo, hi);
}

void main() {
  FrameRef fr = pc.frame;
  uvec2 wg = rasterWorkgroup(fr, kParts);  // (tile x, tile y * kParts + part)
  uint tile = (wg.y / kParts) * fr.f.tiles_x + wg.x;
  uvec2 range = fr.f.tile_ranges.v[tile];
  uint len = range.y - range.x;
  // Tiles deeper than a raster slice are left to the slices (raster.comp's full-precision variant that
  // carries the pixel's state); the host takes this variant for the frame's own raster only.
  if (fr.f.raster_slice != 0u && len > fr.f.raster_slice) return;
  Uints values = (sfMergePasses(len) & 1u) != 0u ? fr.f.values_alt : fr.f.values;
  uint begin = range.x, end = range.y;
  // Each run of 32 threads blends an 8x8 block of the workgroup's 16x8 pixels, four pixel pairs a row (any
  // subgroup size works: the map is a permutation of the pixel pairs).
  uint t = gl_LocalInvocationIndex;
  uint px = wg.x * SF_TILE + (t >> 5) * 8u + (t & 3u) * 2u;
  uint py = wg.y * SF_RASTER_ROWS + ((t >> 2) & 7u);
  bool inside0 = px < fr.f.width && py < fr.f.height, inside1 = px + 1u < fr.f.width && py < fr.f.height;
  vec2 pix = vec2(float(px), float(py));  // the pair's left pixel
  // Per pixel of the pair: 1 while it blends, 0 once stopped (or outside the image).
  f16vec2 live = f16vec2(inside0 ? 1.0 : 0.0, inside1 ? 1.0 : 0.0);
  f16vec2 T = f16vec2(1.0);
  vec2 sum_r = vec2(0.0), sum_g = vec2(0.0), sum_b = vec2(0.0);  // the colour so far, per pixel of the pair
  uint tid = gl_LocalInvocationIndex;
  if (tid == 0u) {
    s_done[0] = 0u;
    s_done[1] = 0u;
  }
  barrier();
  uint parity = 0u;
  // The next batch's entry of this thread, loaded while the current batch blends (raster.comp).
  vec2 next_mean = vec2(0.0);
  vec4 next_factor = vec4(0.0);
  f16vec4 next_color = f16vec4(0.0);
  if (begin + tid < end) {
    uint slot = values.v[begin + tid];
    next_mean = fr.f.means.v[slot];
    next_factor = staged(fr.f.conic_opacity.v[slot]);
    next_color = f16vec4(fr.f.color_depth.v[slot]);
  }
  for (uint start = begin; start < end; start += kBatch, parity ^= 1u) {
    bool done = all(equal(live, f16vec2(0.0)));
    if (done) atomicAdd(s_done[parity], 1u);
    barrier();  // counts complete; every thread has finished reading the previous batch
    if (s_done[parity] == kBatch) break;
    if (tid == 0u) s_done[parity ^ 1u] = 0u;
    if (start + tid < end) {
      s_mean[tid] = next_mean;
      s_factor[tid] = next_factor;
      s_color[tid] = next_color;
    }
    barrier();
    uint k = start + kBatch + tid;
    if (k < end) {
      uint slot = values.v[k];
      next_mean = fr.f.means.v[slot];
      next_factor = staged(fr.f.conic_opacity.v[slot]);
      next_color = f16vec4(fr.f.color_depth.v[slot]);
    }
    uint count = min(kBatch, end - start);
    // This subgroup's pixels still blending (an empty rectangle when all are done), and the batch entries
    // that reach them: one bit per entry, the same words in every lane.
    float lx = live.x != float16_t(0.0) ? pix.x : live.y != float16_t(0.0) ? pix.x + 1.0 : 1e30;
    float hx = live.y != float16_t(0.0) ? pix.x + 1.0 : live.x != float16_t(0.0) ? pix.x : -1e30;
    vec2 lo = vec2(subgroupMin(lx), subgroupMin(done ? 1e30 : pix.y));
    vec2 hi = vec2(subgroupMax(hx), subgroupMax(done ? -1e30 : pix.y));
    uvec4 lanes = subgroupBallot(true);
    uint lane = subgroupBallotExclusiveBitCount(lanes), lane_count = subgroupBallotBitCount(lanes);
    uint reach[kWords];
    for (uint w = 0u; w < kWords; ++w) {
      uint bits = 0u;
      for (uint e = lane; e < 32u; e += lane_count)
        if (w * 32u + e < count && reaches(w * 32u + e, lo, hi)) bits |= 1u << e;
      reach[w] = subgroupOr(bits);
    }
    f16vec2 R = f16vec2(0.0), G = f16vec2(0.0), B = f16vec2(0.0);  // this batch's colour
    // kUnroll entries at a time, their loads and exponentials issued before the blends (the fp32 raster, whose
    // blend branches, takes one at a time); a place past the word's last entry blends nothing (its alpha and
    // colour zero: the entry it read may not reach this subgroup, and an fp16 colour of any size times a zero
    // weight could be a NaN).
    for (uint w = 0u; w < kWords && !done; ++w) {
      for (uint bits = reach[w]; bits != 0u;) {
        uint js[kUnroll];
        bool listed[kUnroll];
        for (uint u = 0u; u < kUnroll; ++u) {
          listed[u] = bits != 0u;
          js[u] = w * 32u + (listed[u] ? uint(findLSB(bits)) : 0u);
          bits &= bits - 1u;
        }
        f16vec2 alphas[kUnroll];
        f16vec4 cols[kUnroll];
        for (uint u = 0u; u < kUnroll; ++u) {
          uint j = js[u];
          vec2 m = s_mean[j];
          vec4 f = s_factor[j];
          cols[u] = s_color[j];
          float dy = m.y - pix.y;
          float u0 = f.x * (m.x - pix.x) + f.y * dy;  // the right pixel's u is u0 - x
          f16vec2 uu = f16vec2(u0, u0 - f.x);
          float v = f.z * dy;
          f16vec2 sigma = uu * uu + float16_t(v * v + f.w);
          f16vec2 alpha = min(f16vec2(0.99), exp2(-sigma));
          alphas[u] = mix(f16vec2(0.0), alpha, lessThan(sigma, f16vec2(kLog2Of255)));
          if (!listed[u]) {
            alphas[u] = f16vec2(0.0);
            cols[u] = f16vec4(0.0);
          }
        }
        for (uint u = 0u; u < kUnroll; ++u) {
          f16vec2 weight = alphas[u] * T * live;
          f16vec2 next_t = T - weight;
          bvec2 stop = lessThan(next_t, f16vec2(0.0001));  // blendPixel: stop before this splat
          live = mix(live, f16vec2(0.0), stop);
          weight = mix(weight, f16vec2(0.0), stop);
          T = mix(next_t, T, stop);
          R += cols[u].x * weight;
          G += cols[u].y * weight;
          B += cols[u].z * weight;
        }
      }
      done = all(equal(live, f16vec2(0.0)));
    }
    sum_r += vec2(R);
    sum_g += vec2(G);
    sum_b += vec2(B);
  }
  vec3 behind = vec3(fr.f.background[0], fr.f.background[1], fr.f.background[2]);
  const bool linear = fr.f.blend_linear != 0u;  // the background decoded, the pixel encoded
  if (linear) behind = srgbDecode(behind);
  for (uint i = 0u; i < 2u; ++i) {
    if (!(i == 0u ? inside0 : inside1)) continue;
    float t_final = float(T[i]);
    vec3 color = vec3(sum_r[i], sum_g[i], sum_b[i]) + t_final * behind;
    if (linear) color = srgbEncode(color);
    fr.f.image.v[py * fr.f.width + px + i] = vec4(color, 1.0 - t_final);
  }
}
