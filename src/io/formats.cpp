#include "io/formats.h"

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/limits.h"
#include "io/file.h"
#include "io/gltf.h"
#include "io/gltf_splats.h"
#include "io/ply.h"
#include "io/ply_parser.h"
#include "io/splat_format.h"
#include "io/spz.h"

namespace sf {

namespace {
bool spzDecodes(std::span<const uint8_t> bytes, const std::string& path) {
  try {
    readSpz(bytes, path);
    return true;
  } catch (const Error&) {
    return false;
  }
}
}  // namespace

const char* formatName(SplatFormat format) {
  switch (format) {
    case SplatFormat::kPly: return "ply";
    case SplatFormat::kCompressedPly: return "compressed-ply";
    case SplatFormat::kSpz: return "spz";
    case SplatFormat::kSplat: return "splat";
    case SplatFormat::kGltf:
      return "gltf";
  }
  return "?";
}

LoadedSplats decodeSplats(std::span<const uint8_t> bytes, const std::string& path) {
  LoadedSplats out;
  out.file_bytes = bytes.size();
  std::string ext = fileExtension(path);
  // A headerless .splat whose first float happens to spell "glTF" is still a .splat.
  const bool glb = bytes.size() >= 4 && std::memcmp(bytes.data(), "glTF", 4) == 0 && ext != ".splat";
  if (glb || (ext == ".gltf" && !ply::looksLikePly(bytes))) {
    out.format = SplatFormat::kGltf;
    std::string dir = std::filesystem::path(path).parent_path().string();
    GltfDocument doc = parseGltf(bytes, path, dir.empty() ? std::string(".") : dir);
    out.cloud = gltfSplatCloud(doc);
    out.warnings = std::move(doc.warnings);
  } else if (ply::looksLikePly(bytes)) {
    if (isCompressedPly(bytes)) {
      out.format = SplatFormat::kCompressedPly;
      out.cloud = readCompressedPly(bytes, path);
    } else {
      out.format = SplatFormat::kPly;
      out.cloud = readPly(bytes, path);
    }
  } else if (looksLikeSpz(bytes) &&
             !(ext == ".splat" && bytes.size() % kSplatRecordBytes == 0 && !spzDecodes(bytes, path))) {
    // A headerless .splat whose first float happens to start with the gzip magic is still a .splat.
    out.format = SplatFormat::kSpz;
    out.cloud = readSpz(bytes, path, &out.version);
  } else if (ext == ".splat") {
    out.format = SplatFormat::kSplat;
    out.cloud = readSplat(bytes, path);
  } else if (ext == ".ply" || ext == ".compressed.ply" || ext == ".spz" || ext == ".glb") {
    throw FormatError(path, 0, "not a " + ext.substr(1) + " file: its first bytes are not the format's magic");
  } else {
    throw FormatError(
        path, 0,
        "unknown splat format (expected .ply, .compressed.ply, .spz, .splat, .glb or .gltf content)");
  }
  std::string problem = out.cloud.validate();
  if (!problem.empty()) throw FormatError(path, 0, "decoded cloud is inconsistent: " + problem);
  NonFiniteReport bad = findNonFinite(out.cloud);
  if (bad.rows > 0) {
    const std::string what = bad.describe(out.cloud.size());
    if (loadLimits().reject_non_finite) throw Error(path + ": " + what + "; refused (--strict)");
    eraseRows(out.cloud, bad.bad);
    out.dropped_non_finite = bad.rows;
    out.warnings.push_back(path + ": " + what + "; dropped them (--strict refuses such files)");
  }
  return out;
}

LoadedSplats loadSplats(const std::string& path) {
  try {
    std::vector<uint8_t> bytes = readFile(path);
    return decodeSplats(bytes, path);
  } catch (const std::bad_alloc&) {
    throw Error(path + ": ran out of memory while loading (the load memory limit is " + formatBytes(loadLimits().max_bytes) +
                "; lower it with --max-memory to be refused before allocating)");
  }
}

SplatFormat writeFormatForPath(const std::string& path) {
  std::string ext = fileExtension(path);
  if (ext == ".compressed.ply") throw Error(path + ": writing compressed PLY is not supported (read-only format)");
  if (ext == ".ply") return SplatFormat::kPly;
  if (ext == ".spz") return SplatFormat::kSpz;
  if (ext == ".splat") return SplatFormat::kSplat;
  if (ext == ".glb") return SplatFormat::kGltf;
  if (ext == ".gltf") throw Error(path + ": glTF output is written as binary .glb only (use a .glb path)");
  throw Error(path + ": cannot choose an output format from extension '" + ext +
              "' (use .ply, .spz, .splat or .glb)");
}

std::vector<uint8_t> encodeSplats(const GaussianCloud& cloud, SplatFormat format) {
  NonFiniteReport bad = findNonFinite(cloud);
  if (bad.rows > 0)
    throw Error("cannot write " + std::string(formatName(format)) + ": " + bad.describe(cloud.size()) + "; files never carry NaN or infinity");
  switch (format) {
    case SplatFormat::kPly: return writePly(cloud);
    case SplatFormat::kSpz: return writeSpz(cloud);
    case SplatFormat::kSplat: return writeSplat(cloud);
    case SplatFormat::kGltf:
      return writeGltfSplats(cloud);
    case SplatFormat::kCompressedPly: break;
  }
  throw Error("writing compressed PLY is not supported");
}

void saveSplats(const GaussianCloud& cloud, const std::string& path) {
  SplatFormat format = writeFormatForPath(path);
  std::vector<uint8_t> bytes;
  try {
    bytes = encodeSplats(cloud, format);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  writeFileAtomic(path, bytes);
}

}  // namespace sf
