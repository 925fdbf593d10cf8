// Tile ranges, then the tile raster: one 16x16 workgroup per tile, one thread per pixel, front to back over the
// tile's sorted splats in batches of 256 staged through workgroup memory. Per pixel exactly blendPixel()
// (render/cpu_renderer.cpp): alpha = min(0.99, o exp(power)), skipped below 1/255, stop before the
// transmittance would fall below 1e-4, the background composited through what is left; alpha = 1 - T. With a
// mesh fragment at the pixel (mesh.wgsl's layer: colour, coverage, view depth; depth 0 where none), blending
// reaches the first splat not in front of it: an opaque fragment ends the pixel on its colour through what is
// left (alpha 1), a translucent one is composited there by its coverage and the splats behind it go on.

@group(0) @binding(0) var<uniform> frame: Frame;
@group(0) @binding(1) var<storage, read> control: array<u32>;
@group(0) @binding(2) var<storage, read> keys_hi: array<u32>;
@group(0) @binding(3) var<storage, read> values: array<u32>;
@group(0) @binding(4) var<storage, read_write> ranges: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read> proj: array<Proj>;
@group(0) @binding(6) var<storage, read_write> image: array<vec4<f32>>;
@group(0) @binding(7) var mesh_color: texture_2d<f32>;
@group(0) @binding(8) var mesh_depth: texture_2d<f32>;

@compute @workgroup_size(256)
fn tile_ranges(@builtin(global_invocation_id) gid: vec3<u32>) {
  let keys = control[1];
  let k = gid.x;
  if (k >= keys) { return; }
  let tile = keys_hi[k];
  if (tile >= frame.tile_count) { return; }  // an unused key (keys.wgsl)
  if (k == 0u || keys_hi[k - 1u] != tile) { ranges[tile].x = k; }
  if (k + 1u == keys || keys_hi[k + 1u] != tile) { ranges[tile].y = k + 1u; }
}

var<workgroup> s_mean: array<vec2<f32>, 256>;
var<workgroup> s_conic: array<vec4<f32>, 256>;
var<workgroup> s_color_depth: array<vec4<f32>, 256>;
var<workgroup> s_range: vec2<u32>;
var<workgroup> s_done: atomic<u32>;
var<workgroup> s_done_total: u32;

@compute @workgroup_size(16, 16)
fn raster(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
  let tile = wid.y * frame.tiles_x + wid.x;
  if (lid == 0u) { s_range = ranges[tile]; }
  let range = workgroupUniformLoad(&s_range);
  let px = wid.x * TILE + lid3.x;
  let py = wid.y * TILE + lid3.y;
  let inside = px < frame.width && py < frame.height;
  var done = !inside;
  let pixf = vec2<f32>(f32(px), f32(py));
  var T = 1.0;
  var C = vec3<f32>(0.0);
  let at = vec2<i32>(i32(min(px, frame.width - 1u)), i32(min(py, frame.height - 1u)));
  let mc = textureLoad(mesh_color, at, 0);
  let md = textureLoad(mesh_depth, at, 0).x;
  var pending = inside && md > 0.0;  // a mesh fragment not yet passed
  let opaque = pending && !(mc.w < 1.0);
  for (var start = range.x; start < range.y; start += 256u) {
    if (lid == 0u) { atomicStore(&s_done, 0u); }
    workgroupBarrier();
    if (done) { atomicAdd(&s_done, 1u); }
    workgroupBarrier();
    if (lid == 0u) { s_done_total = atomicLoad(&s_done); }
    if (workgroupUniformLoad(&s_done_total) == 256u) { break; }
    let k = start + lid;
    if (k < range.y) {
      let s = proj[values[k]];
      s_mean[lid] = s.mean;
      s_conic[lid] = s.conic_opacity;
      s_color_depth[lid] = s.color_depth;
    }
    workgroupBarrier();
    let count = min(256u, range.y - start);
    for (var j = 0u; j < count && !done; j++) {
      if (pending && !(s_color_depth[j].w < md)) {  // this splat and every later one lie behind the mesh
        if (opaque) {
          done = true;
          break;
        }
        C += mc.xyz * (mc.w * T);
        T *= 1.0 - mc.w;
        pending = false;
        if (T < 0.0001) {
          done = true;
          break;
        }
      }
      let d = s_mean[j] - pixf;
      let co = s_conic[j];
      let power = -0.5 * (co.x * d.x * d.x + co.z * d.y * d.y) - co.y * d.x * d.y;
      if (power > 0.0) { continue; }
      let alpha = min(0.99, co.w * exp(power));
      if (alpha < 1.0 / 255.0) { continue; }
      let test_t = T * (1.0 - alpha);
      if (test_t < 0.0001) {
        done = true;
        break;
      }
      C += s_color_depth[j].xyz * (alpha * T);
      T = test_t;
    }
    workgroupBarrier();  // every thread is done with this batch before the next is staged
  }
  if (!inside) { return; }
  if (opaque) {
    image[py * frame.width + px] = vec4<f32>(C + mc.xyz * T, 1.0);
    return;
  }
  if (pending) {  // a translucent mesh behind every splat blended
    C += mc.xyz * (mc.w * T);
    T *= 1.0 - mc.w;
  }
  image[py * frame.width + px] = vec4<f32>(C + T * frame.background.xyz, 1.0 - T);
}
