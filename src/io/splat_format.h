// The ".splat" format: a headerless array of 32-byte records (docs/formats/splat.md).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"

namespace sf {

constexpr size_t kSplatRecordBytes = 32;

// Decodes a .splat file (SH degree 0; colour and opacity quantised to 8 bits). Throws FormatError when
// the size is not a multiple of 32 bytes.
GaussianCloud readSplat(std::span<const uint8_t> bytes, const std::string& path);
// Encodes the DC colour, opacity, linear scale and rotation of every splat; higher SH bands are dropped.
std::vector<uint8_t> writeSplat(const GaussianCloud& cloud);

}  // namespace sf
