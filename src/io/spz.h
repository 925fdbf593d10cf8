// SPZ ("splat zip") reading and writing, versions 2, 3 and 4 (docs/formats/spz.md).
// Versions 2-3 are gzip-wrapped; version 4 is an "NGSP" container with one zstd frame per attribute.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "core/math.h"

namespace sf {

// True for the v4 magic "NGSP" or a gzip stream (versions 1-3).
bool looksLikeSpz(std::span<const uint8_t> bytes);

// The axis systems an SPZ coordinate-system record (extension 0xADBE0003) names: each letter the direction
// of the x, y and z axis (Left/Right, Up/Down, Back/Front); values 9-16 have y along Back/Front and z along
// Up/Down. RDF is the INRIA PLY convention (the engine's splat frame), RUB the SPZ default, LUF glTF's.
// The numbering is the reference library's (its CoordinateSystem enum).
enum class AxisSystem : uint32_t {
  kUnspecified = 0,
  kLDB,
  kRDB,
  kLUB,
  kRUB,
  kLDF,
  kRDF,
  kLUF,
  kRUF,
  kLBD,
  kRBD,
  kLBU,
  kRBU,
  kLFD,
  kRFD,
  kLFU,
  kRFU,
};
const char* axisSystemName(AxisSystem axes);  // "RUB", ...; "unspecified"
// The signed permutation taking coordinates in `axes` to RDF coordinates (identity for RDF). Its transpose
// goes back. kUnspecified is treated as RUB (the SPZ default). Values 1-8 follow their letters; the rotated
// family 9-16 follows the reference library's conversion (docs/formats/spz.md), which swaps y and z with
// signs that do not read off the letters the same way.
Mat3 axesToRdf(AxisSystem axes);

// How SPZ axes are chosen (docs/formats/spz.md, "What Splatforge does"; docs/formats/interop.md):
//  Reading: kAuto (default, Niantic's library's rule): the axes the file's coordinate-system record
//           declares, else (versions 2-3) the axes its gzip header's comment declares (what Splatforge
//           writes there), RUB when it has neither; kRub: RUB whatever the file says; kRaw: no conversion
//           (the stored axes are taken to be the PLY's RDF, as splat-transform 3 and spz-js write them).
//  Writing: kAuto (default): version 4: the PLY's RDF axes stored unconverted (what splat-transform 3 reads
//           and writes) plus a record declaring RDF, so Niantic's library reads it upright too;
//           versions 2-3: RUB (their readers refuse bytes after the arrays, so no record).
//           kRub: converted to RUB, with a record declaring RUB in version 4 (for readers that ignore records
//           and assume RUB: splat-transform 2); kRaw: RDF without a record (splat-transform 3's and spz-js's
//           layout). Records are written into version 4 files only; versions 2-3 name their axes in the gzip
//           header's comment ("SPZ coordinate system: RUB"), which gzip readers skip, so our own raw files
//           read back upright without a flag.
enum class SpzAxes { kAuto, kRub, kRaw };
const char* spzAxesName(SpzAxes axes);          // "auto", "rub", "raw"
SpzAxes parseSpzAxes(const std::string& text);  // throws sf::Error naming the choices

struct SpzOptions {
  SpzAxes axes = SpzAxes::kAuto;
  int version = 4;  // writing: 2, 3 or 4
};

// What a read found: the version and the axes the data was stored in.
struct SpzInfo {
  int version = 0;
  AxisSystem stored = AxisSystem::kRUB;  // the axes converted from (RDF when read raw)
  bool has_record = false;               // the file holds a coordinate-system record
  AxisSystem record = AxisSystem::kUnspecified;
  AxisSystem gzip_comment = AxisSystem::kUnspecified;  // versions 2-3: the axes the gzip comment declares
};

// Decodes SPZ bytes into the engine's RDF frame (per `options.axes`). Refuses versions other than 2, 3 and
// 4, SH degree above 3, malformed extension records, and any size or stream inconsistency, with the byte
// offset.
GaussianCloud readSpz(std::span<const uint8_t> bytes, const std::string& path, SpzInfo* info = nullptr,
                      const SpzOptions& options = {});

// Encodes `options.version`: 2 and 3 gzip-wrapped (2 with first-three rotations), 4 as the NGSP container
// with one zstd frame per attribute; 12 fractional position bits (fewer when a coordinate's magnitude needs
// them). Throws sf::Error for another version.
std::vector<uint8_t> writeSpz(const GaussianCloud& cloud, const SpzOptions& options = {});

}  // namespace sf
