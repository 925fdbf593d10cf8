// Image files: 8-bit PNG (what people look at) and float32 NumPy .npy (what exact comparisons use).
#pragma once

#include <string>

#include "core/image.h"

namespace sf {

// Writes RGB 8-bit PNG (colour clamped to [0, 1] and rounded), atomically. Throws sf::Error.
void writePng(const std::string& path, const ImageRGBA& image);
// Reads an 8-bit PNG (grey, RGB or RGBA) into [0, 1] floats with alpha 1 unless the file has alpha.
ImageRGBA readPng(const std::string& path);

// Writes a little-endian float32 .npy array of shape (height, width, 4), atomically.
void writeNpy(const std::string& path, const ImageRGBA& image);
// Reads a float32 (height, width, 4) .npy written by writeNpy; throws FormatError otherwise.
ImageRGBA readNpy(const std::string& path);

}  // namespace sf
