// Shared by the page's compute passes (web/renderer.js prepends it to each): the frame's uniform block, the
// objects' records, the projected splat record, and the helpers the Vulkan shaders share through common.glsl and
// tile_test.glsl. Layouts are declared once here and in renderer.js (FRAME_BYTES, OBJECT_BYTES, PROJ_BYTES), which
// writes them.

const TILE: u32 = 16u;
const MAX_TESTED_TILE_AREA: i32 = 1024;  // kMaxTestedTileArea (render/cpu_renderer.h)
const FLAG_ANTIALIASED: u32 = 1u;        // GaussianCloud::antialiased: opacity compensation
const FLAG_LINEAR: u32 = 2u;             // ColorSpace::kLinear: colours encoded to sRGB before blending
const FLAG_SORT_DEPTH: u32 = 4u;         // RenderObject::sort_depth: the slot's sort depth is in sort_depths[]
const MIN_SORT_DEPTH: f32 = 0.2001;      // kMinSortDepth (render/cpu_renderer.h)

struct Frame {
  w2c: array<vec4<f32>, 3>,   // rows 0..2 of world_to_camera
  intrinsics: vec4<f32>,      // fx, fy, cx, cy
  background: vec4<f32>,
  cam_pos: vec4<f32>,         // camera centre in world space
  width: u32, height: u32, tiles_x: u32, tiles_y: u32,
  count: u32, object_count: u32, key_capacity: u32, tile_count: u32,  // count: slots of every object
};

// One object of the frame (GpuObject of the Vulkan frame): its slots [first_slot, first_slot + count) of the
// frame's splats, read from its cloud's splats from cloud_first (objects of one file share them), placed by
// object_to_world. 128 bytes.
struct Object {
  to_world: array<vec4<f32>, 3>,   // rows 0..2 of object_to_world
  to_object: array<vec4<f32>, 3>,  // rows 0..2 of its inverse (the camera seen from the object, for SH)
  first_slot: u32, count: u32, cloud_first: u32, sh_base: u32,  // sh_base: floats
  sh_stride: u32, sh_degree: u32, flags: u32, screen_filter: f32,
};

// One splat after preprocess (ProjectedSplat): 48 bytes.
struct Proj {
  mean: vec2<f32>,            // pixel-index coordinates
  rect: vec2<u32>,            // x0 | y0 << 16, x1 | y1 << 16
  conic_opacity: vec4<f32>,
  color_depth: vec4<f32>,
};

fn notFinite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) == 0x7f800000u; }

fn srgbEncode1(l: f32) -> f32 { return select(1.055 * pow(l, 1.0 / 2.4) - 0.055, 12.92 * l, l <= 0.0031308); }
fn srgbEncode(l: vec3<f32>) -> vec3<f32> { return vec3<f32>(srgbEncode1(l.x), srgbEncode1(l.y), srgbEncode1(l.z)); }

fn conicQ(con: vec3<f32>, dx: f32, dy: f32) -> f32 { return con.x * dx * dx + 2.0 * con.y * dx * dy + con.z * dy * dy; }

// splatReachesTile (render/cpu_renderer.cpp): whether the splat reaches alpha >= 1/255 at a pixel centre of
// tile (tx, ty).
fn splatReachesTile(mean: vec2<f32>, co: vec4<f32>, tx: u32, ty: u32) -> bool {
  let limit = 2.0 * log(255.0 * co.w);
  let x0 = f32(tx * TILE) - mean.x;
  let x1 = x0 + f32(TILE - 1u);
  let y0 = f32(ty * TILE) - mean.y;
  let y1 = y0 + f32(TILE - 1u);
  if (x0 <= 0.0 && x1 >= 0.0 && y0 <= 0.0 && y1 >= 0.0) { return limit >= 0.0; }
  let con = co.xyz;
  var best = conicQ(con, x0, clamp(-con.y * x0 / con.z, y0, y1));
  best = min(best, conicQ(con, x1, clamp(-con.y * x1 / con.z, y0, y1)));
  best = min(best, conicQ(con, clamp(-con.y * y0 / con.x, x0, x1), y0));
  best = min(best, conicQ(con, clamp(-con.y * y1 / con.x, x0, x1), y1));
  return best <= limit * 1.001 + 0.01;
}
