#version 460
// Mesh pass, fragment stage: the shading of shadeMeshFragment() / sampleTexture() (render/mesh.h) and the
// fragment's view depth, which the splat raster compares against.
#include "mesh_common.glsl"

layout(location = 0) in vec3 in_view_pos;
layout(location = 1) in vec3 in_normal;
layout(location = 2) in vec2 in_uv;
layout(location = 3) in vec4 in_color;
layout(location = 0) out vec4 out_color;
layout(location = 1) out float out_depth;

float srgbToLinear(float c) {
  return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
}
float linearToSrgb(float c) {
  return c <= 0.0031308 ? c * 12.92 : 1.055 * pow(c, 1.0 / 2.4) - 0.055;
}

// Texel index of the integer-valued texel coordinate x (any magnitude) under a wrap mode; floored mod
// keeps it non-negative. Same as wrapIndex() in mesh_raster.cpp.
int wrapIndex(float x, int n, uint mode) {
  float fn = float(n);
  if (mode == SF_WRAP_CLAMP) return int(clamp(x, 0.0, fn - 1.0));
  if (mode == SF_WRAP_MIRROR) {
    float m = mod(x, 2.0 * fn);
    return int(m < fn ? m : 2.0 * fn - 1.0 - m);
  }
  return int(mod(x, fn));
}

vec4 sampleTexture(GpuMeshDraw d, vec2 uv) {
  int w = int(d.tex_width), h = int(d.tex_height);
  float x = uv.x * float(w) - 0.5, y = uv.y * float(h) - 0.5;
  float fx0 = floor(x), fy0 = floor(y);
  float ax = x - fx0, ay = y - fy0;
  vec4 acc = vec4(0.0);
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 2; ++i) {
      int tx = wrapIndex(fx0 + float(i), w, d.wrap_s), ty = wrapIndex(fy0 + float(j), h, d.wrap_t);
      vec4 t = unpackUnorm4x8(d.texels.v[ty * w + tx]);
      float wt = (i == 1 ? ax : 1.0 - ax) * (j == 1 ? ay : 1.0 - ay);
      acc += wt * vec4(srgbToLinear(t.r), srgbToLinear(t.g), srgbToLinear(t.b), t.a);
    }
  return acc;
}

// maskCoverage() of render/mesh.h for the pixel centre `q`: smoothstep(0, rim, distance to the nearest
// edge) inside the polygon (even-odd rule), 0 outside.
float maskCoverage(GpuMeshDraw d, vec2 q) {
  bool inside = false;
  float nearest = 1e30;
  uint n = d.mask_count;
  for (uint a = 0u, b = n - 1u; a < n; b = a++) {
    vec2 pa = vec2(d.mask.v[2u * a], d.mask.v[2u * a + 1u]),
         pb = vec2(d.mask.v[2u * b], d.mask.v[2u * b + 1u]);
    if ((pa.y > q.y) != (pb.y > q.y) && q.x < (pb.x - pa.x) * (q.y - pa.y) / (pb.y - pa.y) + pa.x)
      inside = !inside;
    vec2 e = pb - pa;
    float len2 = e.x * e.x + e.y * e.y;
    float s = len2 > 0.0 ? clamp(((q.x - pa.x) * e.x + (q.y - pa.y) * e.y) / len2, 0.0, 1.0) : 0.0;
    vec2 r = q - (pa + s * e);
    nearest = min(nearest, sqrt(r.x * r.x + r.y * r.y));
  }
  if (!inside) return 0.0;
  if (!(d.mask_rim > 0.0)) return 1.0;
  float t = clamp(nearest / d.mask_rim, 0.0, 1.0);
  return t * t * (3.0 - 2.0 * t);
}

void main() {
  GpuMeshDraw d = pc.draws.d[pc.draw_index];
  // The face normal's derivatives before any discard (they need the quad's neighbours, uniform control flow).
  vec3 face = cross(dFdx(in_view_pos), dFdy(in_view_pos));
  // Coverage: a fragment of alpha 0 is not drawn (it writes no depth).
  // (In a sample pass the fragment's pixel centre is the sample's position shifted by minus the jitter.)
  vec2 at = gl_FragCoord.xy + vec2(pc.jitter_x, pc.jitter_y);
  float coverage = d.mask_count >= 3u ? d.opacity * maskCoverage(d, at) : d.opacity;
  if (!(coverage > 0.0)) discard;
  vec4 albedo = vec4(d.base_color[0], d.base_color[1], d.base_color[2], d.base_color[3]) * in_color;
  if ((d.flags & SF_MESH_HAS_TEXTURE) != 0u) albedo *= sampleTexture(d, in_uv);
  out_depth = in_view_pos.z;
  if ((d.flags & SF_MESH_UNLIT) != 0u) {
    out_color = vec4(clamp(albedo.rgb, 0.0, 1.0), coverage);
    return;
  }
  vec3 n = (d.flags & SF_MESH_HAS_NORMALS) != 0u ? in_normal : face;
  n = normalize(n);
  if (dot(n, in_view_pos) > 0.0) n = -n;
  // A light from the camera's upper left, or (SF_MESH_CAMERA_LIT) at the eye.
  vec3 light = (d.flags & SF_MESH_CAMERA_LIT) != 0u
                   ? normalize(-in_view_pos)
                   : normalize(vec3(SF_MESH_LIGHT_X, SF_MESH_LIGHT_Y, SF_MESH_LIGHT_Z));
  float shade = SF_MESH_AMBIENT + SF_MESH_DIFFUSE * max(dot(n, light), 0.0);
  vec3 c = clamp(albedo.rgb * shade, 0.0, 1.0);
  out_color = vec4(linearToSrgb(c.r), linearToSrgb(c.g), linearToSrgb(c.b), coverage);
  out_depth = in_view_pos.z;
}
