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

std::vector<uint8_t> encodePng8(const RgbaImage8& image) {
  if (image.width < 1 || image.height < 1 || image.width > kMaxImageSide || image.height > kMaxImageSide ||
      image.rgba.size() != static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 4)
    throw Error("PNG encoding: " + std::to_string(image.width) + " x " + std::to_string(image.height) +
                " image with " + std::to_string(image.rgba.size()) + " bytes of RGBA");
  std::vector<uint8_t> png;
  if (!stbi_write_png_to_func(appendBytes, &png, image.width, image.height, 4, image.rgba.data(),
                              image.width * 4))
    throw Error("PNG encoding failed");
  return png;
}

void writeNpy(const std::string& path, const ImageRGBA& image) {
  writeNpy(path, image.pixels, image.height, image.width, 4);
}

void writeNpy(const std::string& path, std::span<const float> values, int height, int width, int channels) {
  const int64_t shape[3] = {height, width, channels};
  writeNpyArray(path, values, shape);
}

void writeNpyArray(const std::string& path, std::span<const float> values, std::span<const int64_t> shape) {
  size_t count = 1;
  std::string dims;  // "2, 3"; a 1-D shape keeps its comma: "5,"; a scalar is empty
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] < 0) throw Error(path + ": negative dimension in an array shape");
    count *= static_cast<size_t>(shape[k]);
    dims += (k ? ", " : "") + std::to_string(shape[k]);
  }
  if (shape.size() == 1) dims += ",";
  if (values.size() != count)
    throw Error(path + ": " + std::to_string(values.size()) + " values for an array of shape (" + dims + ")");
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
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
  out.resize(offset + values.size() * 4);
  std::memcpy(out.data() + offset, values.data(), values.size() * 4);
  writeFileAtomic(path, out);
}

NpyArray readNpyArray(const std::string& path) {
  std::vector<uint8_t> bytes = readFile(path);
  ByteReader r(bytes, path);
  auto magic = r.bytes(8, "npy magic");
  if (std::memcmp(magic.data(), "\x93NUMPY\x01\x00", 8) != 0) r.failAt(0, "not a version 1.0 .npy file");
  uint16_t len = r.readLE<uint16_t>("npy header length");
  auto hdr = r.bytes(len, "npy header");
  std::string dict(hdr.begin(), hdr.end());
  if (dict.find("'descr': '<f4'") == std::string::npos ||
      dict.find("'fortran_order': False") == std::string::npos)
    r.failAt(10, "expected a C-order little-endian float32 array");
  size_t s = dict.find("'shape': (");
  NpyArray a;
  if (s == std::string::npos ||
      std::sscanf(dict.c_str() + s, "'shape': (%d, %d, %d)", &a.height, &a.width, &a.channels) != 3 ||
      a.height <= 0 || a.width <= 0 || a.channels <= 0 || a.height > kMaxImageSide ||
      a.width > kMaxImageSide || a.channels > 64)
    r.failAt(10, "expected shape (height, width, channels) within 16384 x 16384 x 64");
  const size_t count =
      static_cast<size_t>(a.height) * static_cast<size_t>(a.width) * static_cast<size_t>(a.channels);
  auto data = r.bytes(count * 4, "npy data");  // the file must hold the data before any of it is allocated
  a.values.resize(count);
  std::memcpy(a.values.data(), data.data(), data.size());
  return a;
}

ImageRGBA readNpy(const std::string& path) {
  NpyArray a = readNpyArray(path);
  if (a.channels != 4)
    throw FormatError(path, 10,
                      "expected shape (height, width, 4), got " + std::to_string(a.channels) + " channels");
  ImageRGBA img(a.width, a.height);
  img.pixels = std::move(a.values);
  return img;
}

}  // namespace sf
