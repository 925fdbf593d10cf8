#version 460
// The post model's way in and out of the Vulkan frame (neural/gpu_image_model.cpp): `to_tensor` 1 writes
// the frame's image (RGBA float32 pixels in rows) into the model's input as a [1, 3, H, W] tensor, each
// channel clamped to [0, 1] and rounded to the input's float type (ImageModel::apply's input, which
// Tensor::set rounds the same way: float16 and bfloat16 inputs hold only values of their type); 0 writes the model's output back as the
// image's RGB over the source image's alpha (apply's result). One thread per pixel.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_GOOGLE_include_directive : require
#include "nn_round.glsl"

layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Pixels { vec4 p[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };

layout(push_constant) uniform Push {
  Pixels source;
  Pixels target;
  Floats tensor;
  uint pixels;
  uint to_tensor;
  uint dtype;  // the input's ONNX type code
  uint pad;
} pc;

void main() {
  uint i = gl_GlobalInvocationID.y * 65535u * 256u + gl_GlobalInvocationID.x;
  if (i >= pc.pixels) return;
  vec4 px = pc.source.p[i];
  if (pc.to_tensor != 0u) {
    vec3 c = clamp(px.rgb, vec3(0.0), vec3(1.0));
    pc.tensor.v[i] = roundTo(c.r, pc.dtype);
    pc.tensor.v[pc.pixels + i] = roundTo(c.g, pc.dtype);
    pc.tensor.v[2u * pc.pixels + i] = roundTo(c.b, pc.dtype);
  } else {
    pc.target.p[i] = vec4(pc.tensor.v[i], pc.tensor.v[pc.pixels + i], pc.tensor.v[2u * pc.pixels + i], px.a);
  }
}
