// Image files: 8-bit PNG (what people look at) and float32 NumPy .npy (what exact comparisons use), and
// decoding of PNG/JPEG bytes held in memory (glTF textures).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/image.h"

namespace sf {

// Writes RGB 8-bit PNG (colour clamped to [0, 1] and rounded), atomically. Throws sf::Error.
void writePng(const std::string& path, const ImageRGBA& image);
// Reads an 8-bit PNG (grey, RGB or RGBA) into [0, 1] floats with alpha 1 unless the file has alpha.
ImageRGBA readPng(const std::string& path);

// Writes a little-endian float32 .npy array of shape (height, width, 4), atomically.
void writeNpy(const std::string& path, const ImageRGBA& image);
// Writes `values` as a little-endian float32 .npy array of shape (height, width, channels), atomically.
void writeNpy(const std::string& path, std::span<const float> values, int height, int width, int channels);
// Writes `values` as a little-endian float32 .npy array of any shape (a scalar for an empty one), atomically.
void writeNpyArray(const std::string& path, std::span<const float> values, std::span<const int64_t> shape);
// Reads a float32 (height, width, 4) .npy written by writeNpy; throws FormatError otherwise.
ImageRGBA readNpy(const std::string& path);
// Reads any float32 (height, width, channels) .npy of that layout (the depth plane has 2 channels).
struct NpyArray {
  int height = 0, width = 0, channels = 0;
  std::vector<float> values;
};
NpyArray readNpyArray(const std::string& path);

// 8-bit RGBA pixels as a file stores them (no colour conversion), row-major, top row first.
struct RgbaImage8 {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgba;  // width * height * 4
};

// Largest image decodeImage8 accepts, to bound memory on untrusted input: 16384 pixels a side and
// 2^26 pixels (256 MiB of RGBA) in all.
constexpr int kMaxImageSide = 16384;
constexpr int64_t kMaxImagePixels = int64_t{1} << 26;

// Decodes PNG or JPEG bytes (chosen by content) to RGBA; grey and RGB get alpha 255, 16-bit PNG is
// reduced to 8 bits. `name` is used in messages. Throws FormatError for anything else, for truncated or
// corrupt data, and for images over the limits above.
RgbaImage8 decodeImage8(std::span<const uint8_t> bytes, const std::string& name);
// Encodes 8-bit pixels (any content, written as stored: 4 channels, RGBA) as PNG bytes. The image must hold
// width * height * 4 bytes with 1 <= width, height <= kMaxImageSide. Throws sf::Error when encoding fails.
std::vector<uint8_t> encodePng8(const RgbaImage8& image);

}  // namespace sf
