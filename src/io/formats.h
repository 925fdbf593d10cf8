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
  std::vector<std::string> warnings;  // things read approximately, skipped or dropped, for the user
  size_t dropped_non_finite = 0;      // rows dropped for holding NaN or +-inf (see decodeSplats)
};

// Decodes bytes; `path` names the source in messages and supplies the extension when the content has no
// magic (.splat, .gltf). A .gltf's external buffers are looked up in `path`'s directory tree. glTF content
// yields every KHR_gaussian_splatting primitive of the default scene, node transforms applied
// (io/gltf_splats.h). Throws FormatError / Error.
// Every format follows one policy for untrusted input (core/limits.h): the declared gaussian count and the
// memory it needs are checked against loadLimits() before anything is allocated; rows holding a non-finite
// value (NaN, +-inf, in any field) are dropped with a warning naming their count, the first row and its field,
// or refused when loadLimits().reject_non_finite. (PLY opacity logits of +-inf are the exact limits 1 and
// 0, not non-finite values.) Running out of memory anyway is reported as an sf::Error naming the file.
LoadedSplats decodeSplats(std::span<const uint8_t> bytes, const std::string& path);
LoadedSplats loadSplats(const std::string& path);

// Format a path's extension selects for writing: .ply, .spz (version 3, gzip), .splat or .glb (binary glTF
// with KHR_gaussian_splatting). Throws sf::Error for other extensions (compressed PLY is read-only; glTF
// is written as .glb only).
SplatFormat writeFormatForPath(const std::string& path);
// Writers never write non-finite values: a cloud holding one is refused (sf::Error naming the count, the
// first row and its field); values a format derives (log-scales of zero-size axes, logits of opacity 0 or 1)
// are clamped to finite numbers.
std::vector<uint8_t> encodeSplats(const GaussianCloud& cloud, SplatFormat format);
// Encodes by the path's extension and writes atomically: on failure the path is untouched.
void saveSplats(const GaussianCloud& cloud, const std::string& path);

}  // namespace sf
