// The mesh layer of the frame (render/mesh.h, the CPU's rasterizeMeshes and the Vulkan mesh pass): glTF
// meshes rasterised with a depth test (nearest wins), one sample a pixel, no culling (two-sided), clipped at
// view depth SF_MESH_NEAR, each fragment shaded as mesh_raster.cpp shades a MeshShading::kLit one: albedo =
// baseColorFactor x vertex colour x the base-colour texel (sRGB-decoded before bilinear filtering, wrap per
// sampler: sampleTexture), lit by ambient + one view-space directional light (shadeMeshFragment, the constants
// of render/mesh_shared.h), sRGB-encoded. The pass writes the fragment's display colour and coverage and its
// view depth, which the tile raster (raster.wgsl) composites with the splats as blendPixel does.
// Positions come in view space through object_to_view; clip space is built so that the hardware's depth is
// SF_MESH_NEAR / z (reversed: greater is nearer, 1 at the near plane, which clips there) and its x, y are the
// camera's pixel coordinates.

const MESH_NEAR: f32 = 0.01;                                    // SF_MESH_NEAR
const MESH_LIGHT: vec3<f32> = vec3<f32>(-0.4, -0.6, -0.7);      // SF_MESH_LIGHT_X, _Y, _Z
const MESH_AMBIENT: f32 = 0.35;                                 // SF_MESH_AMBIENT
const MESH_DIFFUSE: f32 = 0.65;                                 // SF_MESH_DIFFUSE
const MESH_HAS_NORMALS: u32 = 1u;
const MESH_HAS_UVS: u32 = 2u;
const MESH_HAS_COLORS: u32 = 4u;
const MESH_HAS_TEXTURE: u32 = 8u;
const MESH_UNLIT: u32 = 16u;  // MeshShading::kUnlit (a splat hull's core): the albedo clamped, not lit or encoded
const WRAP_CLAMP: u32 = 33071u;
const WRAP_MIRROR: u32 = 33648u;

// One draw (renderer.js MESH_DRAW_BYTES): 176 bytes.
struct MeshDraw {
  to_view: array<vec4<f32>, 3>,      // rows 0..2 of world_to_camera x object_to_world
  normal_to_view: array<vec4<f32>, 3>,  // rows 0..2 of the inverse transpose of its linear part
  base_color: vec4<f32>,             // linear RGBA factor
  intrinsics: vec4<f32>,             // fx, fy, cx, cy
  size: vec4<f32>,                   // width, height, opacity, 0
  tex: vec4<u32>,                    // width, height, wrap_s, wrap_t
  flags: vec4<u32>,                  // MESH_HAS_*
};

@group(0) @binding(0) var<uniform> draw: MeshDraw;
@group(0) @binding(1) var<storage, read> positions: array<f32>;
@group(0) @binding(2) var<storage, read> normals: array<f32>;
@group(0) @binding(3) var<storage, read> uvs: array<f32>;
@group(0) @binding(4) var<storage, read> colors: array<f32>;
@group(0) @binding(5) var<storage, read> texels: array<u32>;

struct VertexOut {
  @builtin(position) clip: vec4<f32>,
  @location(0) view: vec3<f32>,
  @location(1) normal: vec3<f32>,
  @location(2) uv: vec2<f32>,
  @location(3) color: vec4<f32>,
};

@vertex
fn vs(@builtin(vertex_index) i: u32) -> VertexOut {
  var out: VertexOut;
  let p = vec4<f32>(positions[3u * i], positions[3u * i + 1u], positions[3u * i + 2u], 1.0);
  let v = vec3<f32>(dot(draw.to_view[0], p), dot(draw.to_view[1], p), dot(draw.to_view[2], p));
  out.view = v;
  out.normal = vec3<f32>(0.0);
  if ((draw.flags.x & MESH_HAS_NORMALS) != 0u) {
    let n = vec3<f32>(normals[3u * i], normals[3u * i + 1u], normals[3u * i + 2u]);
    out.normal = vec3<f32>(dot(draw.normal_to_view[0].xyz, n), dot(draw.normal_to_view[1].xyz, n),
                           dot(draw.normal_to_view[2].xyz, n));
  }
  out.uv = vec2<f32>(0.0);
  if ((draw.flags.x & MESH_HAS_UVS) != 0u) { out.uv = vec2<f32>(uvs[2u * i], uvs[2u * i + 1u]); }
  out.color = vec4<f32>(1.0);
  if ((draw.flags.x & MESH_HAS_COLORS) != 0u) {
    out.color = vec4<f32>(colors[4u * i], colors[4u * i + 1u], colors[4u * i + 2u], colors[4u * i + 3u]);
  }
  // Pixel coordinates x z: x = fx X + cx Z, y = fy Y + cy Z; NDC x = 2 x / (W Z) - 1, NDC y = 1 - 2 y / (H Z).
  let k = draw.intrinsics;
  let px = k.x * v.x + k.z * v.z;
  let py = k.y * v.y + k.w * v.z;
  out.clip = vec4<f32>(2.0 * px / draw.size.x - v.z, v.z - 2.0 * py / draw.size.y, MESH_NEAR, v.z);
  return out;
}

fn srgbDecode1(c: f32) -> f32 { return select(pow((c + 0.055) / 1.055, 2.4), c / 12.92, c <= 0.04045); }

// wrapIndex (mesh_raster.cpp): the texel index of the integer-valued coordinate x under a wrap mode.
fn wrapIndex(x: f32, n: u32, mode: u32) -> u32 {
  let fn_ = f32(n);
  if (mode == WRAP_CLAMP) { return u32(clamp(x, 0.0, fn_ - 1.0)); }
  if (mode == WRAP_MIRROR) {
    let m = x - 2.0 * fn_ * floor(x / (2.0 * fn_));
    return u32(min(select(2.0 * fn_ - 1.0 - m, m, m < fn_), fn_ - 1.0));
  }
  return u32(min(x - fn_ * floor(x / fn_), fn_ - 1.0));
}

// sampleTexture (mesh_raster.cpp): bilinear, each texel sRGB-decoded before filtering, alpha linear.
fn sampleTexture(u: f32, v: f32) -> vec4<f32> {
  let w = draw.tex.x;
  let h = draw.tex.y;
  let x = u * f32(w) - 0.5;
  let y = v * f32(h) - 0.5;
  let fx0 = floor(x);
  let fy0 = floor(y);
  let ax = x - fx0;
  let ay = y - fy0;
  var out = vec4<f32>(0.0);
  for (var j = 0u; j < 2u; j++) {
    for (var i = 0u; i < 2u; i++) {
      let tx = wrapIndex(fx0 + f32(i), w, draw.tex.z);
      let ty = wrapIndex(fy0 + f32(j), h, draw.tex.w);
      let t = unpack4x8unorm(texels[ty * w + tx]);
      let wt = select(1.0 - ax, ax, i == 1u) * select(1.0 - ay, ay, j == 1u);
      out += wt * vec4<f32>(srgbDecode1(t.x), srgbDecode1(t.y), srgbDecode1(t.z), t.w);
    }
  }
  return out;
}

struct FragmentOut {
  @location(0) color: vec4<f32>,  // display colour, coverage
  @location(1) depth: f32,        // view depth (0 where no mesh is drawn)
};

@fragment
fn fs(in: VertexOut) -> FragmentOut {
  // The face's normal for meshes without normals (its sign does not matter: the normal is turned to the
  // camera below).
  let face = cross(dpdx(in.view), dpdy(in.view));
  var albedo = draw.base_color * in.color;
  if ((draw.flags.x & MESH_HAS_TEXTURE) != 0u) { albedo *= sampleTexture(in.uv.x, in.uv.y); }
  var n = normalize(select(face, in.normal, (draw.flags.x & MESH_HAS_NORMALS) != 0u));
  if (dot(n, in.view) > 0.0) { n = -n; }  // two-sided: face the camera
  let shade = MESH_AMBIENT + MESH_DIFFUSE * max(dot(n, normalize(MESH_LIGHT)), 0.0);
  var out: FragmentOut;
  out.color = vec4<f32>(srgbEncode(clamp(albedo.xyz * shade, vec3<f32>(0.0), vec3<f32>(1.0))), draw.size.z);
  if ((draw.flags.x & MESH_UNLIT) != 0u) { out.color = vec4<f32>(clamp(albedo.xyz, vec3<f32>(0.0), vec3<f32>(1.0)), draw.size.z); }
  out.depth = in.view.z;
  return out;
}
