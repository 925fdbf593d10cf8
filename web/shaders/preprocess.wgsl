// Preprocess, one thread per slot of the frame (every object's splats, one after another): the object's transform,
// cull, EWA projection, conic, radius, SH colour, tile rect, depth, the count of tiles it reaches. Same math, in the
// same order, as projectSplat() in render/cpu_renderer.cpp and preprocess.comp (the centre and the covariance taken
// to world space by object_to_world, SH seen from the camera in the object's frame, INRIA's 1.3x field-of-view clamp
// generalised to an off-centre principal point, the object's screen filter and antialiased compensation, the near
// cull at z <= 0.2).

@group(0) @binding(0) var<uniform> frame: Frame;
@group(0) @binding(1) var<storage, read> positions: array<f32>;
@group(0) @binding(2) var<storage, read> covariances: array<f32>;
@group(0) @binding(3) var<storage, read> opacities: array<f32>;
@group(0) @binding(4) var<storage, read> sh: array<f32>;
@group(0) @binding(5) var<storage, read_write> proj: array<Proj>;
@group(0) @binding(6) var<storage, read_write> touched: array<u32>;
@group(0) @binding(7) var<storage, read> objects: array<Object>;
// Per slot of the frame, read for the slots of objects with FLAG_SORT_DEPTH (a baked hull's shell): the depth its
// keys sort by and the mesh layer composites by, raised to MIN_SORT_DEPTH, as preprocess.comp takes
// RenderObject::sort_depth; culling still uses the centre's depth.
@group(0) @binding(8) var<storage, read> sort_depths: array<f32>;

const C0: f32 = 0.28209479177387814;
const C1: f32 = 0.4886025119029199;
const C20: f32 = 1.0925484305920792;
const C21: f32 = -1.0925484305920792;
const C22: f32 = 0.31539156525252005;
const C23: f32 = -1.0925484305920792;
const C24: f32 = 0.5462742152960396;
const C30: f32 = -0.5900435899266435;
const C31: f32 = 2.890611442640554;
const C32: f32 = -0.4570457994644658;
const C33: f32 = 0.3731763325901154;
const C34: f32 = -0.4570457994644658;
const C35: f32 = 1.445305721320277;
const C36: f32 = -0.5900435899266435;

fn coeff(base: u32, k: u32) -> vec3<f32> { return vec3<f32>(sh[base + 3u * k], sh[base + 3u * k + 1u], sh[base + 3u * k + 2u]); }

// evalSh (core/sh.h): the SH sum for a unit direction, before + 0.5 and the clamp.
fn evalSh(degree: u32, base: u32, dir: vec3<f32>) -> vec3<f32> {
  var r = C0 * coeff(base, 0u);
  if (degree < 1u) { return r; }
  let x = dir.x;
  let y = dir.y;
  let z = dir.z;
  r = r - C1 * y * coeff(base, 1u) + C1 * z * coeff(base, 2u) - C1 * x * coeff(base, 3u);
  if (degree < 2u) { return r; }
  let xx = x * x;
  let yy = y * y;
  let zz = z * z;
  let xy = x * y;
  let yz = y * z;
  let xz = x * z;
  r = r + C20 * xy * coeff(base, 4u) + C21 * yz * coeff(base, 5u) + C22 * (2.0 * zz - xx - yy) * coeff(base, 6u) +
      C23 * xz * coeff(base, 7u) + C24 * (xx - yy) * coeff(base, 8u);
  if (degree < 3u) { return r; }
  r = r + C30 * y * (3.0 * xx - yy) * coeff(base, 9u) + C31 * xy * z * coeff(base, 10u) +
      C32 * y * (4.0 * zz - xx - yy) * coeff(base, 11u) + C33 * z * (2.0 * zz - 3.0 * xx - 3.0 * yy) * coeff(base, 12u) +
      C34 * x * (4.0 * zz - xx - yy) * coeff(base, 13u) + C35 * z * (xx - yy) * coeff(base, 14u) +
      C36 * x * (xx - 3.0 * yy) * coeff(base, 15u);
  return r;
}

// The object whose slots hold slot i: the last one starting at or before it.
fn objectOf(i: u32) -> u32 {
  var lo = 0u;
  var hi = frame.object_count - 1u;
  while (lo < hi) {
    let mid = (lo + hi + 1u) / 2u;
    if (objects[mid].first_slot <= i) { lo = mid; } else { hi = mid - 1u; }
  }
  return lo;
}

// Rows r0, r1, r2 as a matrix M with M * v = (dot(r0, v), dot(r1, v), dot(r2, v)).
fn fromRows(r0: vec3<f32>, r1: vec3<f32>, r2: vec3<f32>) -> mat3x3<f32> { return transpose(mat3x3<f32>(r0, r1, r2)); }

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= frame.count) { return; }
  touched[i] = 0u;
  let ob = objects[objectOf(i)];
  let k = i - ob.first_slot;    // the splat within its object
  let src = ob.cloud_first + k;  // and within the uploaded clouds
  let p_obj = vec3<f32>(positions[3u * src], positions[3u * src + 1u], positions[3u * src + 2u]);
  let L = fromRows(ob.to_world[0].xyz, ob.to_world[1].xyz, ob.to_world[2].xyz);
  let p = L * p_obj + vec3<f32>(ob.to_world[0].w, ob.to_world[1].w, ob.to_world[2].w);
  let w0 = frame.w2c[0].xyz;
  let w1 = frame.w2c[1].xyz;
  let w2 = frame.w2c[2].xyz;
  let t = vec3<f32>(dot(w0, p) + frame.w2c[0].w, dot(w1, p) + frame.w2c[1].w, dot(w2, p) + frame.w2c[2].w);
  if (!(t.z > 0.2)) { return; }

  let c = 6u * src;
  let S_obj = mat3x3<f32>(covariances[c], covariances[c + 1u], covariances[c + 2u], covariances[c + 1u], covariances[c + 3u],
                          covariances[c + 4u], covariances[c + 2u], covariances[c + 4u], covariances[c + 5u]);
  let S = L * S_obj * transpose(L);
  let width = f32(frame.width);
  let height = f32(frame.height);
  let fx = frame.intrinsics.x;
  let fy = frame.intrinsics.y;
  let cx = frame.intrinsics.z;
  let cy = frame.intrinsics.w;
  let tan_fovx = 0.5 * width / fx;
  let tan_fovy = 0.5 * height / fy;
  let lim_x_pos = (width - cx) / fx + 0.3 * tan_fovx;
  let lim_x_neg = cx / fx + 0.3 * tan_fovx;
  let lim_y_pos = (height - cy) / fy + 0.3 * tan_fovy;
  let lim_y_neg = cy / fy + 0.3 * tan_fovy;
  let tcx = min(lim_x_pos, max(-lim_x_neg, t.x / t.z)) * t.z;
  let tcy = min(lim_y_pos, max(-lim_y_neg, t.y / t.z)) * t.z;
  let j00 = fx / t.z;
  let j02 = -(fx * tcx) / (t.z * t.z);
  let j11 = fy / t.z;
  let j12 = -(fy * tcy) / (t.z * t.z);
  // Rows of T = J W (W's rows are the camera axes).
  let t0 = j00 * w0 + j02 * w2;
  let t1 = j11 * w1 + j12 * w2;
  let vt0 = S * t0;
  let vt1 = S * t1;
  var a = dot(t0, vt0);
  let b = dot(t0, vt1);
  var cc = dot(t1, vt1);
  let det_raw = a * cc - b * b;
  a = a + ob.screen_filter;
  cc = cc + ob.screen_filter;
  let det = a * cc - b * b;
  if (det == 0.0 || notFinite(det)) { return; }
  var opacity = opacities[src];
  if (notFinite(opacity)) { return; }
  if ((ob.flags & FLAG_ANTIALIASED) != 0u) { opacity = opacity * sqrt(max(det_raw / det, 0.0)); }
  let det_inv = 1.0 / det;
  let mid = 0.5 * (a + cc);
  let lambda1 = mid + sqrt(max(0.1, mid * mid - det));
  let lambda2 = mid - sqrt(max(0.1, mid * mid - det));
  let radius = ceil(3.0 * sqrt(max(lambda1, lambda2)));
  if (!(radius < 1e6)) { return; }
  let z_inv = 1.0 / t.z;
  let mean = vec2<f32>(fx * t.x * z_inv + cx - 0.5, fy * t.y * z_inv + cy - 0.5);
  if (notFinite(mean.x) || notFinite(mean.y)) { return; }

  let tiles_x = i32(frame.tiles_x);
  let tiles_y = i32(frame.tiles_y);
  let tile = f32(TILE);
  let x0 = min(tiles_x, max(0, i32((mean.x - radius) / tile)));
  let y0 = min(tiles_y, max(0, i32((mean.y - radius) / tile)));
  let x1 = min(tiles_x, max(0, i32((mean.x + radius + tile - 1.0) / tile)));
  let y1 = min(tiles_y, max(0, i32((mean.y + radius + tile - 1.0) / tile)));
  var area = (x1 - x0) * (y1 - y0);
  if (area == 0) { return; }

  let co = vec4<f32>(cc * det_inv, -b * det_inv, a * det_inv, opacity);
  if (area <= MAX_TESTED_TILE_AREA) {
    area = 0;
    for (var ty = y0; ty < y1; ty++) {
      for (var tx = x0; tx < x1; tx++) {
        if (splatReachesTile(mean, co, u32(tx), u32(ty))) { area++; }
      }
    }
    if (area == 0) { return; }
  }

  let cam = frame.cam_pos.xyz;
  let cam_obj = vec3<f32>(dot(ob.to_object[0].xyz, cam) + ob.to_object[0].w, dot(ob.to_object[1].xyz, cam) + ob.to_object[1].w,
                          dot(ob.to_object[2].xyz, cam) + ob.to_object[2].w);
  let dir = normalize(p_obj - cam_obj);
  let raw = evalSh(ob.sh_degree, ob.sh_base + k * ob.sh_stride, dir);
  if (notFinite(raw.x) || notFinite(raw.y) || notFinite(raw.z)) { return; }
  var col = max(raw + 0.5, vec3<f32>(0.0));
  if ((ob.flags & FLAG_LINEAR) != 0u) { col = srgbEncode(col); }

  let depth = select(t.z, max(sort_depths[i], MIN_SORT_DEPTH), (ob.flags & FLAG_SORT_DEPTH) != 0u);
  proj[i] = Proj(mean, vec2<u32>(u32(x0) | (u32(y0) << 16u), u32(x1) | (u32(y1) << 16u)), co, vec4<f32>(col, depth));
  touched[i] = u32(area);
}
