#include "io/formats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/limits.h"
#include "io/file.h"
#include "io/gltf.h"
#include "io/gltf_splats.h"
#include "io/ksplat.h"
#include "io/lod_meta.h"
#include "io/ply.h"
#include "io/ply_parser.h"
#include "io/sog.h"
#include "io/spl2.h"
#include "io/splat_format.h"
#include "io/spz.h"
#include "io/zip.h"

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

FormatOptions& mutableFormatOptions() {
  static FormatOptions options;
  return options;
}

const Mat3 kGltfToRdf = gltfToPlyAxes();

std::string spzAxesNote(const SpzInfo& info, SpzAxes policy) {
  std::string stored = axisSystemName(info.stored);
  if (policy == SpzAxes::kRaw) return "RDF (read raw: --spz-axes raw)";
  if (policy == SpzAxes::kRub) return "RUB (--spz-axes rub)";
  if (info.has_record && info.record != AxisSystem::kUnspecified)
    return stored + " (declared by the file's coordinate-system record)";
  if (info.gzip_comment != AxisSystem::kUnspecified)
    return stored + " (declared by the gzip header's comment)";
  return stored +
         (info.has_record
              ? " (coordinate-system record says unspecified: SPZ's default)"
              : " (no coordinate-system record: SPZ's default; files from splat-transform 3 and spz-js "
                "store PLY axes: read them with --spz-axes raw)");
}
}  // namespace

const FormatOptions& formatOptions() {
  return mutableFormatOptions();
}
void setFormatOptions(const FormatOptions& options) {
  mutableFormatOptions() = options;
}

GltfAxes parseGltfAxes(const std::string& text) {
  if (text == "gltf") return GltfAxes::kGltf;
  if (text == "raw") return GltfAxes::kRaw;
  throw Error("glTF axes '" + text + "': expected gltf or raw");
}

const char* formatName(SplatFormat format) {
  switch (format) {
    case SplatFormat::kPly:
      return "ply";
    case SplatFormat::kCompressedPly:
      return "compressed-ply";
    case SplatFormat::kSpz:
      return "spz";
    case SplatFormat::kSplat:
      return "splat";
    case SplatFormat::kGltf:
      return "gltf";
    case SplatFormat::kSog:
      return "sog";
    case SplatFormat::kKsplat:
      return "ksplat";
    case SplatFormat::kSpl2:
      return "spl2";
    case SplatFormat::kLodMeta:
      return "lod-meta";
  }
  return "?";
}

LoadedSplats decodeSplats(std::span<const uint8_t> bytes, const std::string& path,
                          const FormatOptions& options) {
  LoadedSplats out;
  out.file_bytes = bytes.size();
  std::string ext = fileExtension(path);
  // A headerless .splat whose first float happens to spell "glTF" is still a .splat.
  const bool glb = bytes.size() >= 4 && std::memcmp(bytes.data(), "glTF", 4) == 0 && ext != ".splat";
  // The same for "SPL2".
  const bool spl2 = bytes.size() >= 4 && std::memcmp(bytes.data(), "SPL2", 4) == 0 && ext != ".splat";
  if (spl2) {
    out.format = SplatFormat::kSpl2;
    out.cloud = spl2ToCloud(decodeSpl2(bytes, path));
    changeAxes(out.cloud, kGltfToRdf);  // the hull frame has glTF's axes
    out.axes = "SPL2 hull frame (glTF axes, y up), turned to the PLY frame (y down)";
  } else if (glb || (ext == ".gltf" && !ply::looksLikePly(bytes))) {
    out.format = SplatFormat::kGltf;
    std::string dir = std::filesystem::path(path).parent_path().string();
    GltfDocument doc = parseGltf(bytes, path, dir.empty() ? std::string(".") : dir);
    out.cloud = gltfSplatCloud(doc);
    out.warnings = std::move(doc.warnings);
    if (options.gltf_axes == GltfAxes::kGltf) {
      changeAxes(out.cloud, kGltfToRdf);
      out.axes = "glTF (y up), turned to the PLY frame (y down)";
    } else {
      out.axes = "raw (--gltf-axes raw: values as stored)";
    }
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
    SpzInfo info;
    out.cloud = readSpz(bytes, path, &info, SpzOptions{options.spz_axes, options.spz_version});
    out.version = info.version;
    out.axes = spzAxesNote(info, options.spz_axes);
  } else if (isLodMetaPath(path)) {
    // PlayCanvas's streamed LOD: the JSON names SOG files beside it; every leaf at its finest level.
    out.format = SplatFormat::kLodMeta;
    const LodMeta meta =
        parseLodMeta(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
    out.cloud = readLodMetaLeaves(meta, lodMetaLevels(meta, 0));  // the environment's gaussians follow
  } else if ((looksLikeZip(bytes) && ext != ".splat") || isSogMetaPath(path)) {
    // A ZIP archive (.sog), or the meta.json of an unpacked SOG whose images lie beside it.
    out.format = SplatFormat::kSog;
    out.cloud = readSog(bytes, path, &out.version, &out.warnings);
  } else if (ext == ".ksplat") {
    out.format = SplatFormat::kKsplat;
    out.cloud = readKsplat(bytes, path);
  } else if (ext == ".splat") {
    out.format = SplatFormat::kSplat;
    out.cloud = readSplat(bytes, path);
  } else if (ext == ".ply" || ext == ".compressed.ply" || ext == ".spz" || ext == ".glb" || ext == ".sog" ||
             ext == ".spl2") {
    throw FormatError(path, 0,
                      "not a " + ext.substr(1) + " file: its first bytes are not the format's magic");
  } else {
    throw FormatError(path, 0,
                      "unknown splat format (expected .ply, .compressed.ply, .spz, .splat, .glb, .gltf, "
                      ".sog, meta.json, lod-meta.json, .ksplat or .spl2 "
                      "content)");
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

LoadedSplats loadSplats(const std::string& path, const FormatOptions& options) {
  try {
    std::vector<uint8_t> bytes = readFile(path);
    return decodeSplats(bytes, path, options);
  } catch (const std::bad_alloc&) {
    throw Error(path + ": ran out of memory while loading (the load memory limit is " +
                formatBytes(loadLimits().max_bytes) +
                "; lower it with --max-memory to be refused before allocating)");
  }
}

SplatFormat writeFormatForPath(const std::string& path) {
  std::string ext = fileExtension(path);
  if (ext == ".compressed.ply") return SplatFormat::kCompressedPly;
  if (ext == ".ply") return SplatFormat::kPly;
  if (ext == ".spz") return SplatFormat::kSpz;
  if (ext == ".splat") return SplatFormat::kSplat;
  if (ext == ".glb") return SplatFormat::kGltf;
  if (ext == ".sog" || isSogMetaPath(path)) return SplatFormat::kSog;
  if (ext == ".spl2") return SplatFormat::kSpl2;
  if (ext == ".ksplat") throw Error(path + ": writing .ksplat is not supported (read-only format)");
  if (ext == ".gltf") throw Error(path + ": glTF output is written as binary .glb only (use a .glb path)");
  throw Error(path + ": cannot choose an output format from extension '" + ext +
              "' (use .ply, .compressed.ply, .spz, .splat, .glb, .sog, meta.json or .spl2)");
}

std::vector<uint8_t> encodeSplats(const GaussianCloud& cloud, SplatFormat format,
                                  const FormatOptions& options) {
  NonFiniteReport bad = findNonFinite(cloud);
  if (bad.rows > 0)
    throw Error("cannot write " + std::string(formatName(format)) + ": " + bad.describe(cloud.size()) +
                "; files never carry NaN or infinity");
  switch (format) {
    case SplatFormat::kPly:
      return writePly(cloud);
    case SplatFormat::kSpz:
      return writeSpz(cloud, SpzOptions{options.spz_axes, options.spz_version});
    case SplatFormat::kSplat:
      return writeSplat(cloud);
    case SplatFormat::kGltf: {
      if (options.gltf_axes == GltfAxes::kRaw) return writeGltfSplats(cloud);
      GaussianCloud turned = cloud;
      changeAxes(turned, kGltfToRdf);  // its own inverse: RDF -> glTF
      return writeGltfSplats(turned);
    }
    case SplatFormat::kCompressedPly:
      return writeCompressedPly(cloud);
    case SplatFormat::kSog:
      return writeSog(cloud);
    case SplatFormat::kKsplat:
      throw Error("writing .ksplat is not supported (read-only format)");
    case SplatFormat::kLodMeta:
      throw Error("writing lod-meta.json is not supported (read-only format)");
    case SplatFormat::kSpl2: {
      GaussianCloud turned = cloud;
      changeAxes(turned, kGltfToRdf);  // its own inverse: the engine's frame -> the hull frame (glTF axes)
      return encodeSpl2(cloudToSpl2(turned));
    }
  }
  throw Error("unknown output format");
}

void saveSplats(const GaussianCloud& cloud, const std::string& path, const FormatOptions& options) {
  SplatFormat format = writeFormatForPath(path);
  if (format == SplatFormat::kSog && isSogMetaPath(path)) {  // unpacked SOG: meta.json and images beside it
    try {
      saveSogUnpacked(cloud, path);
    } catch (const Error& e) {
      throw Error(path + ": " + e.what());
    }
    return;
  }
  std::vector<uint8_t> bytes;
  try {
    bytes = encodeSplats(cloud, format, options);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  writeFileAtomic(path, bytes);
}

namespace {

// Counts the gaussians for which any of `count` values produced by `value(i, k)` lies outside [lo, hi].
template <typename F>
size_t countOutside(size_t n, int count, float lo, float hi, F value) {
  size_t rows = 0;
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < count; ++k) {
      const float v = value(i, k);
      if (v < lo || v > hi) {
        rows++;
        break;
      }
    }
  return rows;
}

std::string gaussians(size_t rows, size_t n) {
  return std::to_string(rows) + " of " + std::to_string(n) + " gaussians";
}

const ExtraChannel* channel(const GaussianCloud& cloud, const std::string& name) {
  for (const ExtraChannel& e : cloud.extras)
    if (e.name == name) return &e;
  return nullptr;
}

// What cloudToSpl2 cannot keep (io/spl2.h): one colour, two axes, its own orders and its own channels only.
template <typename Note>
void spl2Losses(const GaussianCloud& cloud, Note note) {
  const size_t n = cloud.size();
  if (cloud.sh_degree > 0)
    note(n, "SH bands 1-" + std::to_string(cloud.sh_degree) + " are dropped (SPL2 holds one colour)");
  // The smallest axis is not stored: it comes back as a tenth of the smaller kept one (what spl2ToCloud
  // gives).
  size_t flat = 0;
  for (size_t i = 0; i < n; ++i) {
    std::array<float, 3> s = {cloud.scales[i].x, cloud.scales[i].y, cloud.scales[i].z};
    std::sort(s.begin(), s.end());
    const float expected = 0.1f * s[1];
    if (std::fabs(s[0] - expected) > 1e-5f * std::max(expected, 1e-30f)) ++flat;
  }
  note(flat,
       "the smallest axis is not stored (SPL2 splats are flat; it reads back as a tenth of the smaller other "
       "axis)");
  size_t shell = 0;
  const ExtraChannel* core = channel(cloud, "hull_core");
  for (size_t i = 0; i < n; ++i)
    shell += (core ? core->values[i] == 0.0 : !(cloud.opacities[i] > kSpl2CoreOpacity)) ? 1 : 0;
  note(shell,
       "shell orders are computed afresh for 64 heading buckets at 41 degrees of elevation (orders a source "
       "file had are not kept)");
  if (cloud.normals.empty()) note(n, "no normals: each splat's normal is taken along its smallest axis");
  if (!cloud.ids.empty()) note(n, "ids are not stored");
  if (cloud.color_space == ColorSpace::kLinear)
    note(n, "linear colours are encoded to sRGB and clamped to [0, 1] (SPL2 colours are display-encoded)");
  static const char* const kKept[] = {"hull_core", "hull_ao",    "hull_packed",  "hull_damage",
                                      "hull_seed", "hull_chunk", "hull_material"};
  for (const ExtraChannel& e : cloud.extras) {
    if (std::find(std::begin(kKept), std::end(kKept), e.name) == std::end(kKept)) {
      note(n, "extra channel '" + e.name + "' is not stored");
    } else if (e.name != "hull_core" && e.name != "hull_chunk" && e.name != "hull_material") {
      size_t off = 0;
      for (double v : e.values) off += (v >= 0 && v <= 255 && v == std::floor(v)) ? 0 : 1;
      note(off,
           "channel '" + e.name + "' holds values that are not integers in [0, 255]: rounded and clamped");
    }
  }
  const bool has_chunk = channel(cloud, "hull_chunk") != nullptr,
             has_material = channel(cloud, "hull_material") != nullptr;
  if (has_chunk != has_material)
    note(n, std::string(has_chunk ? "hull_chunk without hull_material" : "hull_material without hull_chunk") +
                ": no CHNK tail is written");
}

}  // namespace

std::vector<std::string> exportLosses(const GaussianCloud& cloud, SplatFormat format) {
  std::vector<std::string> out;
  const size_t n = cloud.size();
  const char* name = formatName(format);
  const int rest = shCoeffCount(cloud.sh_degree) - 1;
  auto note = [&](size_t rows, const std::string& what) {
    if (rows > 0) out.push_back(std::string(name) + ": " + what + " (" + gaussians(rows, n) + ")");
  };
  auto dc = [&](size_t i, int k) { return cloud.shOf(i)[static_cast<size_t>(k)]; };
  auto shRest = [&](size_t i, int k) { return cloud.shOf(i)[static_cast<size_t>(3 + k)]; };
  auto logScale = [&](size_t i, int k) { return std::log(std::max(cloud.scales[i][k], kMinStoredScale)); };
  if (format != SplatFormat::kPly && format != SplatFormat::kSpl2) {
    if (!cloud.normals.empty()) note(n, "normals are not stored");
    if (!cloud.ids.empty()) note(n, "ids are not stored");
    for (const ExtraChannel& e : cloud.extras) note(n, "extra channel '" + e.name + "' is not stored");
  }
  switch (format) {
    case SplatFormat::kPly:
      // Opacity 0 or 1 (an infinite logit, as captures hold) is written as the logit +-16.1, which reads back
      // within 1.2e-7 of it: no pixel changes (the blend clamps alpha at 0.99, and drops it below 1/255), so
      // it is no loss.
      break;
    case SplatFormat::kSplat:
      if (cloud.sh_degree > 0)
        note(n, "SH bands 1-" + std::to_string(cloud.sh_degree) + " are dropped (.splat holds one colour)");
      note(countOutside(n, 3, 0.0f, 1.0f, [&](size_t i, int k) { return shDcToColor(dc(i, k)); }),
           "base colour outside [0, 1] is clamped");
      break;
    case SplatFormat::kSpz: {
      note(countOutside(n, 3, -10.0f, 5.9375f, logScale), "log-scale outside SPZ's [-10, 5.94] is clamped");
      const float dc_limit = 0.5f / 0.15f;  // colour byte 0..255 covers f_dc in [-3.33, 3.33]
      note(countOutside(n, 3, -dc_limit, dc_limit, dc), "SH DC outside SPZ's [-3.33, 3.33] is clamped");
      // Stored bytes cover [-1, 127/128]; files in RUB store some coefficients negated, so the symmetric
      // range is what holds in every frame.
      note(countOutside(n, 3 * rest, -127.0f / 128.0f, 127.0f / 128.0f, shRest),
           "SH coefficients outside SPZ's [-0.99, 0.99] may be clamped");
      note(
          countOutside(n, 3, -8388607.0f, 8388607.0f, [&](size_t i, int k) { return cloud.positions[i][k]; }),
          "positions beyond SPZ's 24-bit range are clamped");
      break;
    }
    case SplatFormat::kCompressedPly:
      note(countOutside(n, 3 * rest, -4.0f, 4.0f, shRest), "SH coefficients outside [-4, 4] are clamped");
      note(countOutside(n, 3, -20.0f, 20.0f, logScale), "log-scale outside [-20, 20] is clamped");
      break;
    case SplatFormat::kGltf:
      break;
    case SplatFormat::kSog:
    case SplatFormat::kKsplat:
    case SplatFormat::kLodMeta:
      break;
    case SplatFormat::kSpl2:
      spl2Losses(cloud, note);
      break;
  }
  return out;
}

}  // namespace sf
