// SPZ ("splat zip") reading, versions 2, 3 and 4, and writing, version 3 (docs/formats/spz.md).
// Versions 2-3 are gzip-wrapped; version 4 is an "NGSP" container with one zstd frame per attribute.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"

namespace sf {

// True for the v4 magic "NGSP" or a gzip stream (versions 1-3).
bool looksLikeSpz(std::span<const uint8_t> bytes);

// SPZ stores RUB axes (x right, y up, z back); the INRIA PLY convention is RDF (y down, z forward).
// By default readers and writers convert (negate y and z of positions, rotations and SH), so an SPZ
// and a PLY of the same capture decode to the same cloud. `convert_axes = false` keeps the raw axes.
struct SpzOptions {
  bool convert_axes = true;
};

// Decodes SPZ bytes; writes the file's version to *version when non-null. Refuses versions other than
// 2, 3 and 4, SH degree above 3, and any size or stream inconsistency, with the byte offset.
GaussianCloud readSpz(std::span<const uint8_t> bytes, const std::string& path, int* version = nullptr,
                      const SpzOptions& options = {});

// Encodes version 3, gzip-wrapped, with 12 fractional position bits (fewer when a coordinate's
// magnitude needs them).
std::vector<uint8_t> writeSpz(const GaussianCloud& cloud, const SpzOptions& options = {});

}  // namespace sf
