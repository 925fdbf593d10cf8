// A neural generator's raw outputs decoded into the frame's splat slots, before preprocess: the page's twin of
// decodeGenerated (neural/generator.cpp) and of the Vulkan frame's nn_decode.comp. The model's output tensors come
// as the runtime wrote them (little-endian words; float16 tensors as their 16-bit patterns, two to a word, decoded
// here exactly as core/half.cpp's halfToFloat decodes them); per row of the [N, 10] gaussians: the centre, the
// opacity clamped to [0, 1] as std::clamp does (a NaN stays NaN), the object-space covariance xx, xy, xz, yy, yz,
// zz; the colour from [N, 48] (SH degree 3, channel-interleaved, the layout the frame stores) copied, or from
// [N, 3] / [N, 4] (alpha dropped) turned into the DC term, (c - 0.5) / C0, unless the model's colours are SH
// already. Rows at and past the live count (num_points, read here from its int32 or int64 tensor; every row when
// the model has no count) get a NaN opacity, which preprocess culls: the CPU decode leaves them out.

struct Decode {
  rows: u32, channels: u32, colour_is_sh: u32, sh_stride: u32,  // N, colour channels (48, 3 or 4), SH floats a splat
  first: u32, sh_base: u32, gauss_f16: u32, colour_f16: u32,     // the cloud's first splat and SH float in the arrays
  count_kind: u32, live_static: u32, nan_bits: u32, pad: u32,     // count_kind 0: live_static; 1: int32; 2: int64
};

@group(0) @binding(0) var<uniform> dec: Decode;
@group(0) @binding(1) var<storage, read> gauss_raw: array<u32>;
@group(0) @binding(2) var<storage, read> colour_raw: array<u32>;
@group(0) @binding(3) var<storage, read> count_raw: array<u32>;
@group(0) @binding(4) var<storage, read_write> positions: array<f32>;
@group(0) @binding(5) var<storage, read_write> covariances: array<f32>;
@group(0) @binding(6) var<storage, read_write> opacities: array<f32>;
@group(0) @binding(7) var<storage, read_write> sh: array<f32>;

const SH_C0: f32 = 0.28209479177387814;  // kShC0 (core/gaussian_cloud.h)

// A float16 bit pattern as the float it is (exactly: subnormals scaled by 2^-24, infinities and NaNs kept).
fn halfToFloat(h: u32) -> f32 {
  let sign = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0u) { return bitcast<f32>(bitcast<u32>(f32(m) * 5.9604644775390625e-8) | sign); }
  if (e == 31u) { return bitcast<f32>(sign | 0x7f800000u | (m << 13u)); }
  return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}

fn halfAt(word: u32, index: u32) -> f32 { return halfToFloat((word >> (16u * (index & 1u))) & 0xffffu); }

fn gaussAt(i: u32) -> f32 {
  if (dec.gauss_f16 != 0u) { return halfAt(gauss_raw[i / 2u], i); }
  return bitcast<f32>(gauss_raw[i]);
}

fn colourAt(i: u32) -> f32 {
  if (dec.colour_f16 != 0u) { return halfAt(colour_raw[i / 2u], i); }
  return bitcast<f32>(colour_raw[i]);
}

fn isNan(x: f32) -> bool {
  let b = bitcast<u32>(x);
  return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu) != 0u;
}

// std::clamp(v, 0, 1): a NaN passes through (neither comparison holds), infinities clamp.
fn clampOpacity(v: f32) -> f32 {
  if (isNan(v)) { return v; }
  if (v < 0.0) { return 0.0; }
  if (1.0 < v) { return 1.0; }
  return v;
}

fn liveCount() -> u32 {
  if (dec.count_kind == 0u) { return dec.live_static; }
  // int32, or the low word of an int64 (the page checked 0 <= count <= N before the upload)
  return u32(max(bitcast<i32>(count_raw[0]), 0));
}

@compute @workgroup_size(256)
fn decode(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= dec.rows) { return; }
  let s = dec.first + i;
  let r = 10u * i;
  for (var k = 0u; k < 3u; k++) { positions[3u * s + k] = gaussAt(r + k); }
  for (var k = 0u; k < 6u; k++) { covariances[6u * s + k] = gaussAt(r + 4u + k); }
  // a quiet NaN's bits from the uniform block (0x7fc00000): a NaN constant is not a valid WGSL constant
  opacities[s] = select(bitcast<f32>(dec.nan_bits), clampOpacity(gaussAt(r + 3u)), i < liveCount());
  let out = dec.sh_base + i * dec.sh_stride;
  if (dec.channels == 48u) {
    for (var k = 0u; k < 48u; k++) { sh[out + k] = colourAt(48u * i + k); }
  } else {
    for (var k = 0u; k < 3u; k++) {
      let c = colourAt(dec.channels * i + k);
      sh[out + k] = select((c - 0.5) / SH_C0, c, dec.colour_is_sh != 0u);
    }
  }
}
