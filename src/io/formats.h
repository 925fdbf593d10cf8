// One entry point for every splat file format: detection by content (magic bytes) with the file
// extension as the fallback, loading, and atomic saving by extension.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "core/math.h"
#include "io/spz.h"

namespace sf {

// glTF's frame (y up, LUF) <-> the engine's splat frame, the PLY convention (RDF, y down): a half turn about
// z, its own inverse. Loaders of glTF splats and SPL2 hulls turn them with it; a cloud trained in a glTF-axes
// dataset frame is written turned with it (changeAxes).
inline Mat3 gltfToPlyAxes() {
  return Mat3::diagonal({-1, -1, 1});
}

// kGltf: glTF 2.0 (.glb binary or .gltf JSON) with KHR_gaussian_splatting primitives (docs/formats/gltf.md).
// kSog: PlayCanvas SOG, a .sog archive or an unpacked meta.json (docs/formats/sog.md); kKsplat: the
// GaussianSplats3D .ksplat format, read only (docs/formats/ksplat.md); kSpl2: the SPL2 splat-hull file
// (io/spl2.h, docs/formats/spl2.md), read and written through spl2ToCloud / cloudToSpl2. kLodMeta:
// PlayCanvas's streamed LOD (a lod-meta.json over SOG files, io/lod_meta.h, docs/formats/lod-meta.md), read
// only, each leaf at its finest level.
enum class SplatFormat { kPly, kCompressedPly, kSpz, kSplat, kGltf, kSog, kKsplat, kSpl2, kLodMeta };

const char* formatName(SplatFormat format);

// The axes of KHR_gaussian_splatting data. kGltf (default): glTF's own frame (+y up, +z forward, x left:
// LUF), converted from and to the engine's splat frame (the INRIA PLY's RDF: +y down) by a 180-degree
// rotation about z (x and y negated), as splat-transform writes and y-up viewers expect; kRaw: values copied
// unchanged (what Splatforge wrote before; such files show upside down in y-up viewers).
// Only splat files go through this: glTF models in scenes keep glTF's frame for meshes and splats alike.
enum class GltfAxes { kGltf, kRaw };
GltfAxes parseGltfAxes(const std::string& text);  // "gltf" or "raw"; throws sf::Error naming the choices

// Choices for reading and writing that a file cannot make for itself (docs/formats/interop.md).
struct FormatOptions {
  SpzAxes spz_axes = SpzAxes::kAuto;     // SPZ, reading and writing (io/spz.h)
  int spz_version = 4;                   // SPZ, writing: 2, 3 or 4
  GltfAxes gltf_axes = GltfAxes::kGltf;  // glTF splat files, reading and writing
};
// The process's defaults, used where no options are passed (the CLI's --spz-axes / --gltf-axes set them).
const FormatOptions& formatOptions();
void setFormatOptions(const FormatOptions& options);

struct LoadedSplats {
  GaussianCloud cloud;
  SplatFormat format = SplatFormat::kPly;
  int version = 0;  // format version where the format has one (SPZ), else 0
  uint64_t file_bytes = 0;
  std::vector<std::string> warnings;  // things read approximately, skipped or dropped, for the user
  size_t dropped_non_finite = 0;      // rows dropped for holding NaN or +-inf (see decodeSplats)
  std::string
      axes;  // how the file's axes were read, e.g. "RUB (no coordinate-system record)"; empty for RDF formats
};

// Decodes bytes; `path` names the source in messages and supplies the extension when the content has no
// magic (.splat, .gltf). A .gltf's external buffers are looked up in `path`'s directory tree. glTF content
// yields every KHR_gaussian_splatting primitive of the default scene, node transforms applied
// (io/gltf_splats.h). SPL2 content (the "SPL2" magic) yields spl2ToCloud's gaussians, turned from the hull
// frame (glTF axes, +y up) to the engine's splat frame as glTF splat files are. Throws FormatError / Error.
// Every format follows one policy for untrusted input (core/limits.h): the declared gaussian count and the
// memory it needs are checked against loadLimits() before anything is allocated; rows holding a non-finite
// value (NaN, +-inf, in any field) are dropped with a warning naming their count, the first row and its
// field, or refused when loadLimits().reject_non_finite. (PLY opacity logits of +-inf are the exact limits 1
// and 0, not non-finite values. SPL2 refuses them: its shell orders index the rows, so none can be dropped.)
// Running out of memory anyway is reported as an sf::Error naming the file.
LoadedSplats decodeSplats(std::span<const uint8_t> bytes, const std::string& path,
                          const FormatOptions& options = formatOptions());
LoadedSplats loadSplats(const std::string& path, const FormatOptions& options = formatOptions());

// Format a path's extension selects for writing: .ply, .compressed.ply, .spz (FormatOptions::spz_version),
// .splat, .glb (binary glTF with KHR_gaussian_splatting), .sog (a SOG archive), a path named meta.json
// (unpacked SOG: saveSplats writes the images beside it) or .spl2 (an SPL2 hull: cloudToSpl2 of the cloud
// turned back to the hull frame, encodeSpl2). Throws sf::Error for other extensions (glTF is
// written as .glb only; .ksplat is read only).
SplatFormat writeFormatForPath(const std::string& path);
// Writers never write non-finite values: a cloud holding one is refused (sf::Error naming the count, the
// first row and its field); values a format derives (log-scales of zero-size axes, logits of opacity 0 or 1)
// are clamped to finite numbers.
std::vector<uint8_t> encodeSplats(const GaussianCloud& cloud, SplatFormat format,
                                  const FormatOptions& options = formatOptions());
// Encodes by the path's extension and writes atomically: on failure the path is untouched.
void saveSplats(const GaussianCloud& cloud, const std::string& path,
                const FormatOptions& options = formatOptions());

// What writing `cloud` as `format` loses beyond the format's documented quantisation, one line each, naming
// what and how many gaussians (SH bands a format cannot hold, values clamped to a format's range, optional
// channels it has no place for). Empty when nothing is lost. The CLI warns with these; --strict refuses.
std::vector<std::string> exportLosses(const GaussianCloud& cloud, SplatFormat format);

}  // namespace sf
