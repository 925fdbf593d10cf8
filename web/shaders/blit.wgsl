// Shows the frame's float image in the canvas: a triangle over the viewport, each fragment the image's pixel
// (the canvas is as large as the image; the values are display-encoded already, clamped to [0, 1]).

struct BlitInfo { width: u32, height: u32, pad0: u32, pad1: u32 };
@group(0) @binding(0) var<storage, read> image: array<vec4<f32>>;
@group(0) @binding(1) var<uniform> info: BlitInfo;

@vertex
fn vs(@builtin(vertex_index) v: u32) -> @builtin(position) vec4<f32> {
  let uv = vec2<f32>(f32((v << 1u) & 2u), f32(v & 2u));
  return vec4<f32>(uv * 2.0 - 1.0, 0.0, 1.0);
}

@fragment
fn fs(@builtin(position) pos: vec4<f32>) -> @location(0) vec4<f32> {
  let x = min(u32(pos.x), info.width - 1u);
  let y = min(u32(pos.y), info.height - 1u);
  let c = image[y * info.width + x];
  return vec4<f32>(clamp(c.xyz, vec3<f32>(0.0), vec3<f32>(1.0)), 1.0);
}
