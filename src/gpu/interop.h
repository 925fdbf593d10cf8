// The preamble every layout header shared by C++ host code and GLSL shaders starts with (render/gpu_shared.h,
// render/mesh_shared.h, deform/deform_shared.h, character/lift_shared.h, hull/hull_shared.h,
// train/train_shared.h). Included by path relative to those headers ("../gpu/interop.h"), which glslc and the
// C++ compiler both resolve from the including file.
//   SF_REF(type): a buffer reference, as the GLSL buffer_reference type `type` and as a 64-bit device address
//                 (VkDeviceAddress) in C++, so that one struct declaration serves both.
//   uint:         GLSL's 32-bit unsigned type, in C++ sf::gpu_interop::uint (a layout namespace takes it with
//                 `using gpu_interop::uint;`).
// Structs use only 4- and 8-byte scalars, in an order that is the same under C++ and GLSL scalar block
// layout; each header's static_asserts check the sizes on the C++ side.
#ifndef SF_GPU_INTEROP_H
#define SF_GPU_INTEROP_H

#ifdef __cplusplus
#include <cstdint>
namespace sf::gpu_interop {
using uint = uint32_t;
}  // namespace sf::gpu_interop
#define SF_REF(type) uint64_t
#else
#define SF_REF(type) type
#endif

#endif
