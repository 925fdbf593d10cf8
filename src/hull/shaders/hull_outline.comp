#version 460
// The hull outline in the Vulkan frame (hull/outline_pass.h; CPU reference hull/outline.h). `mode` 0 (the
// mask frame's capture) writes each pixel's alpha into `mask` and passes the image through; mode 1 composites
// the outline of `mask` over the image: band = max over pixels q within reach of mask(q) * clamp(width + 1
// - |q - p|, 0, 1), times 1 - mask(p); a = strength * band; rgb = rgb (1 - a) + colour a, alpha += (1 -
// alpha) a. One thread per pixel.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x = 16, local_size_y = 16) in;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Pixels {
  vec4 p[];
};
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats {
  float v[];
};

layout(push_constant) uniform Push {
  Pixels source;
  Pixels target;
  Floats mask;
  uint width;
  uint height;
  uint mode;
  int reach;
  float red, green, blue, strength;
  float band_width;
}
pc;

void main() {
  const uvec2 xy = gl_GlobalInvocationID.xy;
  if (xy.x >= pc.width || xy.y >= pc.height) return;
  const uint i = xy.y * pc.width + xy.x;
  vec4 px = pc.source.p[i];
  if (pc.mode == 0u) {
    pc.mask.v[i] = px.a;
    pc.target.p[i] = px;
    return;
  }
  const float own = pc.mask.v[i];
  float band = 0.0;
  if (own < 1.0) {
    float d = 0.0;
    const int x = int(xy.x), y = int(xy.y), w = int(pc.width), h = int(pc.height);
    for (int dy = -pc.reach; dy <= pc.reach; ++dy) {
      const int qy = y + dy;
      if (qy < 0 || qy >= h) continue;
      for (int dx = -pc.reach; dx <= pc.reach; ++dx) {
        const int qx = x + dx;
        if (qx < 0 || qx >= w) continue;
        const float k = clamp(pc.band_width + 1.0 - sqrt(float(dx * dx + dy * dy)), 0.0, 1.0);
        d = max(d, pc.mask.v[uint(qy * w + qx)] * k);
      }
    }
    band = d * (1.0 - own);
  }
  const float a = pc.strength * band;
  if (a > 0.0) {
    px.rgb = px.rgb * (1.0 - a) + vec3(pc.red, pc.green, pc.blue) * a;
    px.a = px.a + (1.0 - px.a) * a;
  }
  pc.target.p[i] = px;
}
