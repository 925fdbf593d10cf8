// One entry point for every splat file format: detection by content (magic bytes) with the file
// extension as the fallback, loading, and atomic saving by extension.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"

namespace sf {

// kGltf: glTF 2.0 (.glb binary or .gltf JSON) with KHR_gaussian_splatting primitives (docs/formats/gltf.md).
enum class SplatFormat { kPly, kCompressedPly, kSpz, kSplat, kGltf };

const char* formatName(SplatFormat format);

struct LoadedSplats {
  GaussianCloud cloud;
  SplatFormat format = SplatFormat::kPly;
  int version = 0;        // format version where the format has one (SPZ), else 0
  uint64_t file_bytes = 0;
  std::vector<std::string> warnings;  // things read approximately or skipped (glTF), for the user
};

// Decodes bytes; `path` names the source in messages and supplies the extension when the content has no
// magic (.splat, .gltf). A .gltf's external buffers are looked up in `path`'s directory tree. glTF content
// yields every KHR_gaussian_splatting primitive of the default scene, node transforms applied
// (io/gltf_splats.h). Throws FormatError / Error.
LoadedSplats decodeSplats(std::span<const uint8_t> bytes, const std::string& path);
LoadedSplats loadSplats(const std::string& path);

// Format a path's extension selects for writing: .ply, .spz (version 3, gzip), .splat or .glb (binary glTF
// with KHR_gaussian_splatting). Throws sf::Error for other extensions (compressed PLY is read-only; glTF
// is written as .glb only).
SplatFormat writeFormatForPath(const std::string& path);
std::vector<uint8_t> encodeSplats(const GaussianCloud& cloud, SplatFormat format);
// Encodes by the path's extension and writes atomically: on failure the path is untouched.
void saveSplats(const GaussianCloud& cloud, const std::string& path);

}  // namespace sf
