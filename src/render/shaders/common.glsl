// Included by every compute shader of the Vulkan renderer: extensions, the shared layouts, push constants.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require

#include "../gpu_shared.h"

layout(push_constant, scalar) uniform PushBlock { GpuPush pc; };

// Pass flags (pc.pad0): bit 0 reads the sort's alternate buffers, bit 1 sorts on the high key word,
// bits 2-3 carry the low / high word along (the key word and the value always move), bit 4 marks the
// frame's key sort for sort_setup (overflow check against the key capacity).
#define SF_FLAG_SOURCE_ALT 1u
#define SF_FLAG_KEY_HI 2u
#define SF_FLAG_CARRY_LO 4u
#define SF_FLAG_CARRY_HI 8u
#define SF_FLAG_KEY_SORT 16u
