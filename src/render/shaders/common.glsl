// Included by every compute shader of the Vulkan renderer: extensions, the shared layouts, push constants.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require

#include "../gpu_shared.h"

#ifdef SF_PREPROCESS_PUSH
layout(push_constant, scalar) uniform PushBlock { GpuPreprocessPush pc; };
#else
layout(push_constant, scalar) uniform PushBlock { GpuPush pc; };
#endif

// Pass flags (SF_FLAG_*) and object flags (SF_OBJECT_*) are defined in gpu_shared.h.

// sRGB transfer functions (IEC 61966-2-1), as render/mesh.h's linearToSrgb / srgbToLinear.
float srgbEncode(float l) { return l <= 0.0031308 ? 12.92 * l : 1.055 * pow(l, 1.0 / 2.4) - 0.055; }
float srgbDecode(float c) { return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4); }
vec3 srgbEncode(vec3 l) { return vec3(srgbEncode(l.x), srgbEncode(l.y), srgbEncode(l.z)); }
vec3 srgbDecode(vec3 c) { return vec3(srgbDecode(c.x), srgbDecode(c.y), srgbDecode(c.z)); }
