// Included by the mesh pass's vertex and fragment shaders: extensions, shared layouts, push constants.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require

#include "../mesh_shared.h"

layout(push_constant, scalar) uniform PushBlock { GpuMeshPush pc; };
