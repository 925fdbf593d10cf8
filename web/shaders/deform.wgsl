// Splat characters on the GPU: the bound mesh morphed and skinned (`skin`, as src/deform/shaders/skin.comp:
// morph targets, then linear-blend or dual-quaternion skinning with up to 8 influences, the same math in the same
// order as anim::MorphJob and anim::SkinningJob), then every bound splat's centre and covariance from the deformed
// triangle's frame or its blended joint matrix (`deform_splats`, as src/deform/shaders/deform_splats.comp and
// character::DeformJob), written into the character's splats in the frame's position and covariance arrays
// before preprocess. Positions only: the deform reads no normals.

const SKIN_INFLUENCES: u32 = 8u;  // SF_SKIN_INFLUENCES
const SKIN_DQ_FLOATS: u32 = 20u;  // SF_SKIN_DQ_FLOATS
const SKIN_METHOD_DQS: u32 = 1u;
const SKIN_FLAG_SKINNED: u32 = 2u;
const SKIN_FLAG_EIGHT: u32 = 8u;
const BINDING_WORDS: u32 = 17u;  // the bindings.bin record, 68 bytes
const ROW: u32 = 32768u * 256u;   // threads along x of a dispatch (renderer.js MAX_ROW workgroups of 256)

struct Deform {
  vertex_count: u32,
  target_count: u32,
  method: u32,
  flags: u32,
  splat_count: u32,
  first: u32,  // the character's first splat in the frame's arrays
  pad0: u32,
  pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Deform;
// skin
@group(0) @binding(1) var<storage, read> rest: array<f32>;           // 3 per vertex: bind-pose positions
@group(0) @binding(2) var<storage, read> joints: array<u32>;         // SKIN_INFLUENCES per vertex
@group(0) @binding(3) var<storage, read> weights: array<f32>;        // SKIN_INFLUENCES per vertex
@group(0) @binding(4) var<storage, read> morph_deltas: array<f32>;   // target-major position deltas
@group(0) @binding(5) var<storage, read> morph_weights: array<f32>;  // one per target
@group(0) @binding(6) var<storage, read> palette: array<f32>;        // LBS: 12 per joint (rows 0..2)
@group(0) @binding(7) var<storage, read> dq_palette: array<f32>;     // DQS: SKIN_DQ_FLOATS per joint
@group(0) @binding(8) var<storage, read_write> vertices: array<f32>; // 3 per vertex: the deformed mesh
// deform_splats
@group(0) @binding(9) var<storage, read> bindings: array<u32>;       // BINDING_WORDS per splat
@group(0) @binding(10) var<storage, read> indices: array<u32>;       // 3 per triangle
@group(0) @binding(11) var<storage, read_write> out_positions: array<f32>;
@group(0) @binding(12) var<storage, read_write> out_covariances: array<f32>;

fn restAt(i: u32) -> vec3<f32> { return vec3<f32>(rest[3u * i], rest[3u * i + 1u], rest[3u * i + 2u]); }
fn deltaAt(i: u32) -> vec3<f32> { return vec3<f32>(morph_deltas[3u * i], morph_deltas[3u * i + 1u], morph_deltas[3u * i + 2u]); }
fn paletteRow(i: u32) -> vec4<f32> { return vec4<f32>(palette[i], palette[i + 1u], palette[i + 2u], palette[i + 3u]); }
fn dq4(i: u32) -> vec4<f32> { return vec4<f32>(dq_palette[i], dq_palette[i + 1u], dq_palette[i + 2u], dq_palette[i + 3u]); }
fn storeVertex(i: u32, p: vec3<f32>) {
  vertices[3u * i] = p.x;
  vertices[3u * i + 1u] = p.y;
  vertices[3u * i + 2u] = p.z;
}

fn rotateByQuat(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {  // q = (w, x, y, z)
  let u = q.yzw;
  let t = 2.0 * cross(u, v);
  return v + q.x * t + cross(u, t);
}

fn isInf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }

@compute @workgroup_size(256)
fn skin(@builtin(global_invocation_id) gid: vec3<u32>) {
  let v = gid.x + gid.y * ROW;
  if (v >= params.vertex_count) { return; }
  var p = restAt(v);
  for (var t = 0u; t < params.target_count; t++) {
    let w = morph_weights[t];
    if (w == 0.0) { continue; }  // most of a face rig's targets are idle in a frame
    p += w * deltaAt(t * params.vertex_count + v);
  }
  var js: array<u32, 8>;
  var ws: array<f32, 8>;
  var count = 0u;
  var sum = 0.0;
  if ((params.flags & SKIN_FLAG_SKINNED) != 0u) {
    let slots = select(4u, SKIN_INFLUENCES, (params.flags & SKIN_FLAG_EIGHT) != 0u);
    for (var k = 0u; k < slots; k++) {
      let w = weights[SKIN_INFLUENCES * v + k];
      if (!(w > 0.0)) { continue; }
      js[count] = joints[SKIN_INFLUENCES * v + k];
      ws[count] = w;
      sum += w;
      count++;
    }
  }
  if (count == 0u || !(sum > 0.0) || isInf(sum)) {  // unskinned (or weightless) vertex: morph only
    storeVertex(v, p);
    return;
  }
  for (var i = 0u; i < count; i++) { ws[i] /= sum; }
  if (params.method != SKIN_METHOD_DQS) {
    var r0 = vec4<f32>(0.0);
    var r1 = vec4<f32>(0.0);
    var r2 = vec4<f32>(0.0);
    for (var i = 0u; i < count; i++) {
      let b = 12u * js[i];
      r0 += ws[i] * paletteRow(b);
      r1 += ws[i] * paletteRow(b + 4u);
      r2 += ws[i] * paletteRow(b + 8u);
    }
    let ph = vec4<f32>(p, 1.0);
    storeVertex(v, vec3<f32>(dot(r0, ph), dot(r1, ph), dot(r2, ph)));
    return;
  }
  // Dual quaternions: sign-aligned to the first influence, stretch blended linearly.
  let first = dq4(SKIN_DQ_FLOATS * js[0]);
  var real = vec4<f32>(0.0);
  var dual = vec4<f32>(0.0);
  var stretch = mat3x3<f32>(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
  for (var i = 0u; i < count; i++) {
    let b = SKIN_DQ_FLOATS * js[i];
    let qr = dq4(b);
    let qd = dq4(b + 4u);
    let w = select(ws[i], -ws[i], dot(qr, first) < 0.0);
    real += w * qr;
    dual += w * qd;
    // Rows 0..2 of the stretch, stored row-major: the matrix's columns are gathered from them.
    let s = transpose(mat3x3<f32>(vec3<f32>(dq_palette[b + 8u], dq_palette[b + 9u], dq_palette[b + 10u]),
                                  vec3<f32>(dq_palette[b + 11u], dq_palette[b + 12u], dq_palette[b + 13u]),
                                  vec3<f32>(dq_palette[b + 14u], dq_palette[b + 15u], dq_palette[b + 16u])));
    stretch += ws[i] * s;
  }
  var len = length(real);
  if (!(len > 1e-12)) {  // opposite rotations cancelled out: the strongest joint alone
    var best = 0u;
    for (var i = 1u; i < count; i++) {
      if (ws[i] > ws[best]) { best = i; }
    }
    let b = SKIN_DQ_FLOATS * js[best];
    real = dq4(b);
    dual = dq4(b + 4u);
    len = 1.0;
  }
  real /= len;
  dual /= len;
  let translation = 2.0 * (real.x * dual.yzw - dual.x * real.yzw + cross(real.yzw, dual.yzw));
  storeVertex(v, rotateByQuat(real, stretch * p) + translation);
}

fn vertexAt(i: u32) -> vec3<f32> { return vec3<f32>(vertices[3u * i], vertices[3u * i + 1u], vertices[3u * i + 2u]); }
fn bindingFloat(i: u32, k: u32) -> f32 { return bitcast<f32>(bindings[BINDING_WORDS * i + k]); }

@compute @workgroup_size(256)
fn deform_splats(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x + gid.y * ROW;
  if (i >= params.splat_count) { return; }
  let base = BINDING_WORDS * i;
  let kind = bindings[base];
  let c = vec3<f32>(bindingFloat(i, 8u), bindingFloat(i, 9u), bindingFloat(i, 10u));
  let l0 = bindingFloat(i, 11u);
  let l1 = bindingFloat(i, 12u);
  let l2 = bindingFloat(i, 13u);
  let l3 = bindingFloat(i, 14u);
  let l4 = bindingFloat(i, 15u);
  let l5 = bindingFloat(i, 16u);
  let l = mat3x3<f32>(vec3<f32>(l0, l1, l2), vec3<f32>(l1, l3, l4), vec3<f32>(l2, l4, l5));
  var pos: vec3<f32>;
  var a: mat3x3<f32>;
  if (kind == 0u) {
    let t = 3u * bindings[base + 1u];
    let v0 = vertexAt(indices[t]);
    let v1 = vertexAt(indices[t + 1u]);
    let v2 = vertexAt(indices[t + 2u]);
    let e1 = v1 - v0;
    let e2 = v2 - v0;
    let cr = cross(e1, e2);
    let len = length(cr);
    let n = select(vec3<f32>(0.0), cr / sqrt(len), len > 0.0);
    a = mat3x3<f32>(e1, e2, n);  // columns
    pos = v0 + a * c;
  } else {
    let j01 = bindings[base + 2u];
    let j23 = bindings[base + 3u];
    var js = array<u32, 4>(j01 & 0xffffu, j01 >> 16u, j23 & 0xffffu, j23 >> 16u);
    var w = array<f32, 4>(bindingFloat(i, 4u), bindingFloat(i, 5u), bindingFloat(i, 6u), bindingFloat(i, 7u));
    let wsum = w[0] + w[1] + w[2] + w[3];
    var r0 = vec4<f32>(1.0, 0.0, 0.0, 0.0);
    var r1 = vec4<f32>(0.0, 1.0, 0.0, 0.0);
    var r2 = vec4<f32>(0.0, 0.0, 1.0, 0.0);
    if (wsum > 0.0) {
      r0 = vec4<f32>(0.0);
      r1 = vec4<f32>(0.0);
      r2 = vec4<f32>(0.0);
      for (var k = 0u; k < 4u; k++) {
        if (w[k] == 0.0) { continue; }
        let wk = w[k] / wsum;
        let o = 12u * js[k];
        r0 += wk * paletteRow(o);
        r1 += wk * paletteRow(o + 4u);
        r2 += wk * paletteRow(o + 8u);
      }
    }
    pos = vec3<f32>(dot(r0.xyz, c) + r0.w, dot(r1.xyz, c) + r1.w, dot(r2.xyz, c) + r2.w);
    a = transpose(mat3x3<f32>(r0.xyz, r1.xyz, r2.xyz));  // rows r0..r2
  }
  let s = a * l * transpose(a);
  let o = params.first + i;
  out_positions[3u * o] = pos.x;
  out_positions[3u * o + 1u] = pos.y;
  out_positions[3u * o + 2u] = pos.z;
  out_covariances[6u * o] = s[0][0];
  out_covariances[6u * o + 1u] = s[1][0];
  out_covariances[6u * o + 2u] = s[2][0];
  out_covariances[6u * o + 3u] = s[1][1];
  out_covariances[6u * o + 4u] = s[2][1];
  out_covariances[6u * o + 5u] = s[2][2];
}
