#version 460
// Preprocess one object's slots: transform, cull, EWA projection, conic, radius, SH colour, tile rect,
// depth. Same math, in the same order, as projectSplat() in cpu_renderer.cpp.
#include "binning_variants.glsl"
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define SF_PREPROCESS_PUSH  // its push constants: GpuPreprocessPush
#include "common.glsl"
#include "sh_dc.glsl"
#include "tile_test.glsl"

layout(local_size_x = SF_WG_SIZE) in;

const float C1 = 0.4886025119029199;
const float C2[5] = float[](1.0925484305920792, -1.0925484305920792, 0.31539156525252005, -1.0925484305920792, 0.5462742152960396);
const float C3[7] = float[](-0.5900435899266435, 2.890611442640554, -0.4570457994644658, 0.3731763325901154,
                            -0.4570457994644658, 1.445305721320277, -0.5900435899266435);

// The slot's SH coefficients (rgb per basis function), loaded before they are summed. Where the object's SH
// stride is a multiple of 4 floats (its start always is; SH degree 1 and 3 data: 12 and 48 floats per slot), as 16-byte
// loads: a slot's coefficients are 192 contiguous bytes that neighbouring lanes read 192 bytes apart, and
// 4-byte loads would fetch each cache sector four times.
#define SF_SH_MAX 48
#define SF_SH_HALF_WORDS 28  // halfShWords(48)
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer AlignedVec4s { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer AlignedUvec4s { uvec4 v[]; };

// The slot's coefficients in the full layout (sh_stride floats a slot), f[k] for k < 3 (degree + 1)^2, read as
// 16-byte loads where the stride allows.
void loadSh(uint degree, Floats sh, bool aligned, out float f[SF_SH_MAX]) {
  uint used = 3u * (degree + 1u) * (degree + 1u);
  if (aligned) {
    AlignedVec4s q = AlignedVec4s(sh);
    for (uint k = 0u; k < SF_SH_MAX / 4u; ++k)
      if (4u * k < used) {
        vec4 v = q.v[k];
        f[4u * k] = v.x, f[4u * k + 1u] = v.y, f[4u * k + 2u] = v.z, f[4u * k + 3u] = v.w;
      }
  } else {
    for (uint k = 0u; k < SF_SH_MAX; ++k)
      if (k < used) f[k] = sh.v[k];
  }
}

// The half layout's words (SF_OBJECT_SH_HALF, core/sh.h: the DC as 3 floats, then coefficients 3.. as half
// pairs, the stride a multiple of 4 words), read as 16-byte loads. They stay packed until the sum takes each
// coefficient (halfShValue): unpacked all at once into 48 floats, and with every thread loading the object's
// record, preprocess held 80 registers on an H100; 64 with both gone (docs/benchmarks.md).
void loadHalfSh(uint degree, Floats sh, out uint w[SF_SH_HALF_WORDS]) {
  uint used = 3u * (degree + 1u) * (degree + 1u);
  uint words = 3u + (used - 2u) / 2u;  // 3 + ceil((used - 3) / 2)
  AlignedUvec4s q = AlignedUvec4s(sh);
  for (uint k = 0u; k < SF_SH_HALF_WORDS / 4u; ++k)
    if (4u * k < words) {
      uvec4 v = q.v[k];
      w[4u * k] = v.x, w[4u * k + 1u] = v.y, w[4u * k + 2u] = v.z, w[4u * k + 3u] = v.w;
    }
}

float halfShValue(uint w[SF_SH_HALF_WORDS], uint k) {
  if (k < 3u) return uintBitsToFloat(w[k]);
  vec2 h = unpackHalf2x16(w[3u + (k - 3u) / 2u]);
  return ((k - 3u) & 1u) == 0u ? h.x : h.y;
}

// The SH sum of basis functions 0 .. (degree + 1)^2 - 1 along dir, COEFF(k) giving coefficient k (rgb): the basis
// functions of evalSh() in core/sh.cpp, each band's terms summed and then added (the CPU adds term by term, so
// the two may differ in the last bits); both layouts take this one expression.
#define SF_SH_SUM(COEFF)                                                                                        \
  vec3 r = kShC0 * COEFF(0u);                                                                                   \
  if (degree < 1u) return r;                                                                                    \
  float x = dir.x, y = dir.y, z = dir.z;                                                                        \
  r += -C1 * y * COEFF(1u) + C1 * z * COEFF(2u) - C1 * x * COEFF(3u);                                           \
  if (degree < 2u) return r;                                                                                    \
  float xx = x * x, yy = y * y, zz = z * z, xy = x * y, yz = y * z, xz = x * z;                                 \
  r += C2[0] * xy * COEFF(4u) + C2[1] * yz * COEFF(5u) + C2[2] * (2.0 * zz - xx - yy) * COEFF(6u) +             \
       C2[3] * xz * COEFF(7u) + C2[4] * (xx - yy) * COEFF(8u);                                                  \
  if (degree < 3u) return r;                                                                                    \
  r += C3[0] * y * (3.0 * xx - yy) * COEFF(9u) + C3[1] * xy * z * COEFF(10u) +                                  \
       C3[2] * y * (4.0 * zz - xx - yy) * COEFF(11u) + C3[3] * z * (2.0 * zz - 3.0 * xx - 3.0 * yy) * COEFF(12u) + \
       C3[4] * x * (4.0 * zz - xx - yy) * COEFF(13u) + C3[5] * z * (xx - yy) * COEFF(14u) +                     \
       C3[6] * x * (xx - 3.0 * yy) * COEFF(15u);                                                                \
  return r;

vec3 evalShFull(uint degree, Floats sh, bool aligned, vec3 dir) {
  float f[SF_SH_MAX];
  loadSh(degree, sh, aligned, f);
#define SF_FULL_COEFF(k) vec3(f[3u * (k)], f[3u * (k) + 1u], f[3u * (k) + 2u])
  SF_SH_SUM(SF_FULL_COEFF)
}

vec3 evalShHalf(uint degree, Floats sh, vec3 dir) {
  uint w[SF_SH_HALF_WORDS];
  loadHalfSh(degree, sh, w);
#define SF_HALF_COEFF(k) vec3(halfShValue(w, 3u * (k)), halfShValue(w, 3u * (k) + 1u), halfShValue(w, 3u * (k) + 2u))
  SF_SH_SUM(SF_HALF_COEFF)
}

vec3 evalSh(uint degree, Floats sh, bool aligned, bool half_sh, vec3 dir) {
  return half_sh ? evalShHalf(degree, sh, dir) : evalShFull(degree, sh, aligned, dir);
}

mat3 rows3(float m[12]) {  // rows 0..2 of a row-major 3x4 matrix, as a GLSL (column-major) mat3 M with M * v
  return transpose(mat3(m[0], m[1], m[2], m[4], m[5], m[6], m[8], m[9], m[10]));
}

// Projects slot `slot` (the object's i-th) and writes its records; false where it is not drawn. Its mean, conic
// and opacity and tile rect (x0, y0, x1, y1) come back for the counting (left as they were where it returns
// false).
bool preprocessSlot(GpuObject obj, FrameRef fr, uint i, uint slot, inout vec2 mean, inout vec4 conic_opacity,
                    inout ivec4 rect) {
  fr.f.touched.v[slot] = 0u;

  Floats pos = fr.f.positions, cov = fr.f.covariances;
  vec3 p_obj = vec3(pos.v[3u * slot], pos.v[3u * slot + 1u], pos.v[3u * slot + 2u]);
  mat3 L = rows3(obj.object_to_world);
  vec3 p_world = L * p_obj + vec3(obj.object_to_world[3], obj.object_to_world[7], obj.object_to_world[11]);
  mat3 W = rows3(fr.f.world_to_camera);
  vec3 t = W * p_world + vec3(fr.f.world_to_camera[3], fr.f.world_to_camera[7], fr.f.world_to_camera[11]);
  if (!(t.z > 0.2)) return false;

  uint c = 6u * slot;
  mat3 S = mat3(cov.v[c], cov.v[c + 1u], cov.v[c + 2u], cov.v[c + 1u], cov.v[c + 3u], cov.v[c + 4u], cov.v[c + 2u],
                cov.v[c + 4u], cov.v[c + 5u]);
  mat3 Sw = L * S * transpose(L);

  float width = float(fr.f.width), height = float(fr.f.height);
  float fx = fr.f.fx, fy = fr.f.fy, cx = fr.f.cx, cy = fr.f.cy;
  float tan_fovx = 0.5 * width / fx, tan_fovy = 0.5 * height / fy;
  float lim_x_pos = (width - cx) / fx + 0.3 * tan_fovx, lim_x_neg = cx / fx + 0.3 * tan_fovx;
  float lim_y_pos = (height - cy) / fy + 0.3 * tan_fovy, lim_y_neg = cy / fy + 0.3 * tan_fovy;
  vec3 tc = t;
  tc.x = min(lim_x_pos, max(-lim_x_neg, t.x / t.z)) * t.z;
  tc.y = min(lim_y_pos, max(-lim_y_neg, t.y / t.z)) * t.z;
  float j00 = fx / tc.z, j02 = -(fx * tc.x) / (tc.z * tc.z);
  float j11 = fy / tc.z, j12 = -(fy * tc.y) / (tc.z * tc.z);
  // Rows of T = J W (W's rows are the camera axes).
  vec3 w0 = vec3(fr.f.world_to_camera[0], fr.f.world_to_camera[1], fr.f.world_to_camera[2]);
  vec3 w1 = vec3(fr.f.world_to_camera[4], fr.f.world_to_camera[5], fr.f.world_to_camera[6]);
  vec3 w2 = vec3(fr.f.world_to_camera[8], fr.f.world_to_camera[9], fr.f.world_to_camera[10]);
  vec3 t0 = j00 * w0 + j02 * w2, t1 = j11 * w1 + j12 * w2;
  vec3 vt0 = Sw * t0, vt1 = Sw * t1;
  float a = dot(t0, vt0), b = dot(t0, vt1), cc = dot(t1, vt1);
  float det_raw = a * cc - b * b;
  a += obj.screen_filter;
  cc += obj.screen_filter;
  float det = a * cc - b * b;
  if (det == 0.0 || isinf(det) || isnan(det)) return false;
  float opacity = fr.f.opacities.v[slot];
  if (isnan(opacity) || isinf(opacity)) return false;  // not drawn, as on the CPU (projectSplat)
  if ((obj.flags & SF_OBJECT_ANTIALIASED) != 0u) opacity *= sqrt(max(det_raw / det, 0.0));
  float det_inv = 1.0 / det;
  float mid = 0.5 * (a + cc);
  float lambda1 = mid + sqrt(max(0.1, mid * mid - det));
  float lambda2 = mid - sqrt(max(0.1, mid * mid - det));
  float radius = ceil(3.0 * sqrt(max(lambda1, lambda2)));
  if (!(radius < 1e6)) return false;
  float z_inv = 1.0 / t.z;
  mean = vec2(fx * t.x * z_inv + cx - 0.5, fy * t.y * z_inv + cy - 0.5);
  if (isinf(mean.x) || isnan(mean.x) || isinf(mean.y) || isnan(mean.y)) return false;

  int tiles_x = int(fr.f.tiles_x), tiles_y = int(fr.f.tiles_y);
  int x0 = min(tiles_x, max(0, int((mean.x - radius) / float(SF_TILE))));
  int y0 = min(tiles_y, max(0, int((mean.y - radius) / float(SF_TILE))));
  int x1 = min(tiles_x, max(0, int((mean.x + radius + float(SF_TILE - 1)) / float(SF_TILE))));
  int y1 = min(tiles_y, max(0, int((mean.y + radius + float(SF_TILE - 1)) / float(SF_TILE))));
  int area = (x1 - x0) * (y1 - y0);
  if (area == 0) return false;

  conic_opacity = vec4(cc * det_inv, -b * det_inv, a * det_inv, opacity);
  rect = ivec4(x0, y0, x1, y1);
  if (area <= SF_MAX_TESTED_TILE_AREA) {
    // Drawn when it reaches any tile of its rect (the counting below and the emit walk them all): the tile
    // under its centre first, which it nearly always reaches, then the others until one is reached.
    int mx = clamp(int(floor(mean.x / float(SF_TILE))), x0, x1 - 1);
    int my = clamp(int(floor(mean.y / float(SF_TILE))), y0, y1 - 1);
    bool drawn = splatReachesTile(mean, conic_opacity, uint(mx), uint(my));
    for (int ty = y0; ty < y1 && !drawn; ++ty)
      for (int tx = x0; tx < x1 && !drawn; ++tx) drawn = splatReachesTile(mean, conic_opacity, uint(tx), uint(ty));
    if (!drawn) return false;
  }

  vec3 dir = normalize(p_obj - vec3(obj.cam_in_object[0], obj.cam_in_object[1], obj.cam_in_object[2]));
  // The slot's SH: the object's 64-byte block, then sh_stride floats a slot (64-bit: past 2^32 floats).
  Floats sh = Floats(uint64_t(fr.f.sh) + uint64_t(obj.sh_base) * 64ul + uint64_t(i) * uint64_t(obj.sh_stride) * 4ul);
  bool aligned = (obj.sh_stride & 3u) == 0u;  // uniform across the dispatch
  // One shader for both layouts (a variant per layout was measured: its half path took 2% longer and the fp32
  // path gained nothing, on an H100).
  bool half_sh = (obj.flags & SF_OBJECT_SH_HALF) != 0u;
  vec3 sh_col = evalSh(obj.sh_degree, sh, aligned, half_sh, dir);
  if (any(isnan(sh_col)) || any(isinf(sh_col))) return false;  // not drawn, as on the CPU (projectSplat)
  vec3 col = max(sh_col + 0.5, vec3(0.0));
  // The colour in the space the frame blends in (projectSplat): a display-space cloud's decoded for a linear
  // blend, a linear cloud's encoded for a display blend.
  bool linear_cloud = (obj.flags & SF_OBJECT_LINEAR_COLOR) != 0u;
  if (fr.f.blend_linear != 0u && !linear_cloud) col = srgbDecode(col);
  if (fr.f.blend_linear == 0u && linear_cloud) col = srgbEncode(col);

  fr.f.means.v[slot] = mean;
  fr.f.conic_opacity.v[slot] = conic_opacity;
  float depth = (obj.flags & SF_OBJECT_SORT_DEPTH) != 0u ? max(obj.sort_depth.v[i], SF_MIN_SORT_DEPTH) : t.z;
  fr.f.color_depth.v[slot] = vec4(col, depth);
  fr.f.rects.v[slot] = uvec2(uint(x0) | (uint(y0) << 16), uint(x1) | (uint(y1) << 16));
  fr.f.touched.v[slot] = 1u;
  return true;
}

void main() {
  GpuObject obj = pc.object;
  FrameRef fr = pc.frame;
  uint i = gl_GlobalInvocationID.x, slot = obj.first_slot + i;
  vec2 mean = vec2(0.0);
  vec4 co = vec4(0.0);
  ivec4 rect = ivec4(0);
  bool drawn = i < obj.count && preprocessSlot(obj, fr, i, slot, mean, co, rect);
  // The tile counts of the binning (bin_tiles.comp counts only the rects wider than SF_COOP_TILES, which a
  // whole workgroup walks): the same test as the drawn test, once the slot is known to be drawn.
  bool counting = drawn && (rect.z - rect.x) * (rect.w - rect.y) <= SF_COOP_TILES;
#ifdef SF_AGGREGATED_BINNING
  // The lanes walk their rects in lock step, one reached tile a lane per step; the lowest lane on a tile adds
  // the count of the lanes on it (bin_tiles.comp, the aggregated emit).
  uint x = uint(rect.x), y = uint(rect.y);
  while (subgroupAny(counting)) {
    uint tile = SF_NO_TILE;
    if (counting) {
      tile = nextReachedTile(mean, co, true, uvec4(rect), x, y, fr.f.tiles_x);
      counting = tile != SF_NO_TILE;
    }
    uvec4 same = lanesOnTile(tile);
    if (tile != SF_NO_TILE && gl_SubgroupInvocationID == subgroupBallotFindLSB(same))
      atomicAdd(fr.f.tile_bins.v[tile], subgroupBallotBitCount(same));
  }
#else
  if (counting)
    for (int ty = rect.y; ty < rect.w; ++ty)
      for (int tx = rect.x; tx < rect.z; ++tx)
        if (splatReachesTile(mean, co, uint(tx), uint(ty))) atomicAdd(fr.f.tile_bins.v[uint(ty) * fr.f.tiles_x + uint(tx)], 1u);
#endif
  // One atomic per subgroup (a single counter takes every slot's add otherwise).
  uint here = subgroupBallotBitCount(subgroupBallot(drawn));
  if (subgroupElect() && here != 0u) atomicAdd(fr.f.counters.v[SF_COUNTER_VISIBLE], here);
}
