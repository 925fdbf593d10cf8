// Included by every compute shader of the Vulkan renderer: extensions, the shared layouts, push constants.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require

#include "../gpu_shared.h"

layout(push_constant, scalar) uniform PushBlock { GpuPush pc; };

// Pass flags (SF_FLAG_*) and object flags (SF_OBJECT_*) are defined in gpu_shared.h.
