#include "io/formats.h"

#include <cstring>

#include "core/error.h"
#include "io/file.h"
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
  }
  return "?";
}

LoadedSplats decodeSplats(std::span<const uint8_t> bytes, const std::string& path) {
  LoadedSplats out;
  out.file_bytes = bytes.size();
  std::string ext = fileExtension(path);
  if (ply::looksLikePly(bytes)) {
    if (isCompressedPly(bytes)) {
      out.format = SplatFormat::kCompressedPly;
      out.cloud = readCompressedPly(bytes, path);
    } else {
      out.format = SplatFormat::kPly;
      out.cloud = readPly(bytes, path);
    }
  } else if (looksLikeSpz(bytes) && !(ext == ".splat" && bytes.size() % kSplatRecordBytes == 0 && !spzDecodes(bytes, path))) {
    // A headerless .splat whose first float happens to start with the gzip magic is still a .splat.
    out.format = SplatFormat::kSpz;
    out.cloud = readSpz(bytes, path, &out.version);
  } else if (ext == ".splat") {
    out.format = SplatFormat::kSplat;
    out.cloud = readSplat(bytes, path);
  } else if (ext == ".ply" || ext == ".compressed.ply" || ext == ".spz") {
    throw FormatError(path, 0, "not a " + ext.substr(1) + " file: its first bytes are not the format's magic");
  } else {
    throw FormatError(path, 0, "unknown splat format (expected .ply, .compressed.ply, .spz or .splat content)");
  }
  std::string problem = out.cloud.validate();
  if (!problem.empty()) throw FormatError(path, 0, "decoded cloud is inconsistent: " + problem);
  return out;
}

LoadedSplats loadSplats(const std::string& path) {
  std::vector<uint8_t> bytes = readFile(path);
  return decodeSplats(bytes, path);
}

SplatFormat writeFormatForPath(const std::string& path) {
  std::string ext = fileExtension(path);
  if (ext == ".compressed.ply") throw Error(path + ": writing compressed PLY is not supported (read-only format)");
  if (ext == ".ply") return SplatFormat::kPly;
  if (ext == ".spz") return SplatFormat::kSpz;
  if (ext == ".splat") return SplatFormat::kSplat;
  throw Error(path + ": cannot choose an output format from extension '" + ext + "' (use .ply, .spz or .splat)");
}

std::vector<uint8_t> encodeSplats(const GaussianCloud& cloud, SplatFormat format) {
  switch (format) {
    case SplatFormat::kPly: return writePly(cloud);
    case SplatFormat::kSpz: return writeSpz(cloud);
    case SplatFormat::kSplat: return writeSplat(cloud);
    case SplatFormat::kCompressedPly: break;
  }
  throw Error("writing compressed PLY is not supported");
}

void saveSplats(const GaussianCloud& cloud, const std::string& path) {
  SplatFormat format = writeFormatForPath(path);
  writeFileAtomic(path, encodeSplats(cloud, format));
}

}  // namespace sf
