// Splat PLY files: the INRIA 3DGS layout (read and write) and PlayCanvas compressed PLY (read).
// Layouts: docs/formats/ply.md and docs/formats/compressed-ply.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"

namespace sf {

// Decodes an INRIA-layout PLY (ascii, binary little- or big-endian; properties found by name in any
// order). Unknown vertex properties become cloud.extras. `path` names the source in error messages.
// Throws FormatError on malformed input.
GaussianCloud readPly(std::span<const uint8_t> bytes, const std::string& path);

// Encodes a cloud as binary little-endian INRIA PLY: x y z [nx ny nz] f_dc_0..2 f_rest_* opacity
// scale_0..2 rot_0..3 [id] then every extra channel with its original type.
std::vector<uint8_t> writePly(const GaussianCloud& cloud);

// True when a PLY header declares the PlayCanvas compressed layout (a "chunk" element and a vertex
// element with packed_position).
bool isCompressedPly(std::span<const uint8_t> bytes);

// Decodes a PlayCanvas compressed PLY. Throws FormatError on malformed input.
GaussianCloud readCompressedPly(std::span<const uint8_t> bytes, const std::string& path);

}  // namespace sf
