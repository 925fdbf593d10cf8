// PNG (and JPEG decoding) through stb (kept to this one translation unit), .npy by hand (format version 1.0).
#include "io/image_io.h"

#include <cstring>
#include <limits>

#include "core/error.h"
#include "io/byte_reader.h"
#include "io/file.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_image_write.h>
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

namespace sf {

namespace {
void appendBytes(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<uint8_t>*>(context);
  auto* p = static_cast<uint8_t*>(data);
  out->insert(out->end(), p, p + size);
}
}  // namespace

void writePng(const std::string& path, const ImageRGBA& image) {
  std::vector<uint8_t> rgb = toRgb8(image);
  std::vector<uint8_t> png;
  if (!stbi_write_png_to_func(appendBytes, &png, image.width, image.height, 3, rgb.data(), image.width * 3))
    throw Error(path + ": PNG encoding failed");
  writeFileAtomic(path, png);
}

ImageRGBA readPng(const std::string& path) {
  std::vector<uint8_t> bytes = readFile(path);
  int w = 0, h = 0, comp = 0;
  uint8_t* data = stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &comp, 4);
  if (!data) throw FormatError(path, 0, std::string("not a readable PNG: ") + stbi_failure_reason());
  ImageRGBA img(w, h);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<float>(data[i]) / 255.0f;
  stbi_image_free(data);
  return img;
}

RgbaImage8 decodeImage8(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw FormatError(name, 0, "image data larger than 2 GiB");
  const int size = static_cast<int>(bytes.size());
  int w = 0, h = 0, comp = 0;
  if (!stbi_info_from_memory(bytes.data(), size, &w, &h, &comp))
    throw FormatError(name, 0,
                      std::string("not a decodable PNG or JPEG image (") + stbi_failure_reason() + ")");
  if (w <= 0 || h <= 0 || w > kMaxImageSide || h > kMaxImageSide ||
      static_cast<int64_t>(w) * h > kMaxImagePixels)
    throw FormatError(name, 0,
                      "image of " + std::to_string(w) + " x " + std::to_string(h) +
                          " pixels exceeds the limit (" + std::to_string(kMaxImageSide) + " a side, " +
                          std::to_string(kMaxImagePixels) + " pixels)");
  uint8_t* data = stbi_load_from_memory(bytes.data(), size, &w, &h, &comp, 4);
  if (!data) throw FormatError(name, 0, std::string("image data is corrupt (") + stbi_failure_reason() + ")");
  RgbaImage8 image;
  image.width = w;
  image.height = h;
  image.rgba.assign(data, data + static_cast<size_t>(w) * static_cast<size_t>(h) * 4);
  stbi_image_free(data);
  return image;
}

void writeNpy(const std::string& path, const ImageRGBA& image) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(image.height) + ", " +
                     std::to_string(image.width) + ", 4), }";
  size_t total = 10 + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  uint16_t header_len = static_cast<uint16_t>(dict.size());
  out.push_back(static_cast<uint8_t>(header_len & 0xff));
  out.push_back(static_cast<uint8_t>(header_len >> 8));
  out.insert(out.end(), dict.begin(), dict.end());
  size_t offset = out.size();
  out.resize(offset + image.pixels.size() * 4);
  std::memcpy(out.data() + offset, image.pixels.data(), image.pixels.size() * 4);
  writeFileAtomic(path, out);
}

ImageRGBA readNpy(const std::string& path) {
  std::vector<uint8_t> bytes = readFile(path);
  ByteReader r(bytes, path);
  auto magic = r.bytes(8, "npy magic");
  if (std::memcmp(magic.data(), "\x93NUMPY\x01\x00", 8) != 0) r.failAt(0, "not a version 1.0 .npy file");
  uint16_t len = r.readLE<uint16_t>("npy header length");
  auto hdr = r.bytes(len, "npy header");
  std::string dict(hdr.begin(), hdr.end());
  if (dict.find("'descr': '<f4'") == std::string::npos || dict.find("'fortran_order': False") == std::string::npos)
    r.failAt(10, "expected a C-order little-endian float32 array");
  size_t s = dict.find("'shape': (");
  int h = 0, w = 0, c = 0;
  if (s == std::string::npos || std::sscanf(dict.c_str() + s, "'shape': (%d, %d, %d)", &h, &w, &c) != 3 || c != 4 || h <= 0 || w <= 0)
    r.failAt(10, "expected shape (height, width, 4)");
  ImageRGBA img(w, h);
  auto data = r.bytes(img.pixels.size() * 4, "npy data");
  std::memcpy(img.pixels.data(), data.data(), data.size());
  return img;
}

}  // namespace sf
