// The .ksplat format of the GaussianSplats3D viewer (docs/formats/ksplat.md): a 4096-byte header, one
// 1024-byte header per section, then per section its bucket data and splat records at compression level 0
// (float32), 1 (half floats, positions as 16-bit offsets from bucket centres) or 2 (as 1, with 8-bit SH).
// Read only. Values are stored in the INRIA PLY frame, so no axis conversion applies.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/gaussian_cloud.h"

namespace sf {

// Decodes a .ksplat file of version 0.1 with SH degree 0-3 per section (the cloud takes the highest; lower
// sections get zero coefficients). Every section's header, bucket table and records are checked against
// the file's size, and the declared counts against the load limits, before anything is allocated; bucket
// indices are checked against the section's bucket count. Throws FormatError naming the byte offset.
GaussianCloud readKsplat(std::span<const uint8_t> bytes, const std::string& path);

}  // namespace sf
