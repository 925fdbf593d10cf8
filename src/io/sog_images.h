// The seam between SOG's layout and quantisation (io/sog.cpp, one implementation in every build) and what
// differs per build: reading an unpacked SOG's image files and coding lossless WebP. Each build defines these
// once: the native build in io/sog_images.cpp (the file system, libwebp); the web build in
// web/wasm/decode_api.cpp (the files the page fetched and the pixels its browser decoded, handed in before
// decodeSplats runs; it writes no SOG).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sf::sog {

// The bytes of `path`, an image file of an unpacked SOG: `dir` (meta.json's directory) joined with `name`,
// which its text keeps inside `dir` (io/sog.cpp checks that). Throws naming `path`; a path that leaves `dir`
// another way (natively: through a symbolic link) is refused with `why` ("<meta.json>: <JSON path>: image
// path '<name>' ") before the reason.
std::vector<uint8_t> readImageFile(const std::string& dir, const std::string& name, const std::string& path,
                                   const std::string& why);

// Decodes the lossless WebP `webp`, whose header gives width x height texels, into `rgba` (4 bytes a texel,
// row by row, exactly as stored: no colour-space conversion, no premultiplied alpha). False when it does
// not decode.
bool decodeWebp(std::span<const uint8_t> webp, int width, int height, std::span<uint8_t> rgba);

// A lossless WebP of width x height RGBA texels, every channel kept exactly (RGB under alpha 0 too).
std::vector<uint8_t> encodeWebp(std::span<const uint8_t> rgba, int width, int height);

}  // namespace sf::sog
