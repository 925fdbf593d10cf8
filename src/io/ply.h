// Splat PLY files: the INRIA 3DGS layout and PlayCanvas compressed PLY (read and write).
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
// Antialiasing: Mip-Splatting's per-gaussian `filter_3D` is baked into the scales and opacities (its 3D
// smoothing filter) and selects its 2D mip filter; header comments declare gsplat's antialiased mode
// (PlyAntialiasComments). Throws FormatError on malformed input.
GaussianCloud readPly(std::span<const uint8_t> bytes, const std::string& path);

// Encodes a cloud as binary little-endian INRIA PLY: x y z [nx ny nz] f_dc_0..2 f_rest_* opacity
// scale_0..2 rot_0..3 [id] then every extra channel with its original type.
std::vector<uint8_t> writePly(const GaussianCloud& cloud);

// The header comment lines (each ending in a newline) that record a cloud's antialiasing: "SplatRenderMode:
// mip" when antialiased, "splatforge screen_filter V" when its 2D filter is not INRIA's 0.3 pixels^2. Both PLY
// writers emit them; both readers honour them (and "SplatRenderMode: default", "train_flags antialiasing").
std::string plyAntialiasComments(const GaussianCloud& cloud);
// Mip-Splatting's 3D smoothing filter of standard deviation `filter_3d` baked into one gaussian as its renderer
// applies it: scale' = sqrt(scale^2 + f^2) per axis, opacity' = opacity * sqrt(prod scale^2 / prod scale'^2).
void bakeSmoothingFilter(Vec3& scale, float& opacity, float filter_3d);
void applyPlyAntialiasComments(const std::vector<std::string>& comments, GaussianCloud& cloud);

// True when a PLY header declares the PlayCanvas compressed layout (a "chunk" element and a vertex
// element with packed_position).
bool isCompressedPly(std::span<const uint8_t> bytes);

// Decodes a PlayCanvas compressed PLY. Throws FormatError on malformed input.
GaussianCloud readCompressedPly(std::span<const uint8_t> bytes, const std::string& path);

// Encodes a PlayCanvas compressed PLY (18 chunk bounds with colour, an "sh" element for degree >= 1), the
// splats in Morton order of their positions as the format's other writers do (so chunks are compact and the
// quantisation fine): row order is NOT kept. Opacity, colour and SH are clamped to the format's ranges
// (exportLosses in io/formats.h counts what is clamped). Normals, ids and extra channels are not written.
std::vector<uint8_t> writeCompressedPly(const GaussianCloud& cloud);
// The order writeCompressedPly writes the cloud's splats in: row r of the file is splat order[r].
std::vector<uint32_t> compressedPlyOrder(const GaussianCloud& cloud);

}  // namespace sf
