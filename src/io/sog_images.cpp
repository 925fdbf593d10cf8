// SOG's images in the native build (io/sog_images.h): image files read from the file system, WebP coded by
// libwebp.
#include "io/sog_images.h"

#include <webp/decode.h>
#include <webp/encode.h>

#include <filesystem>

#include "core/error.h"
#include "io/file.h"

namespace sf::sog {

namespace fs = std::filesystem;

// Past the text's checks, a symbolic link may still lead out of meta.json's directory (the scene files'
// rule, docs/untrusted-input.md): the canonical paths must share the directory's.
std::vector<uint8_t> readImageFile(const std::string& dir, const std::string& name, const std::string& path,
                                   const std::string& why) {
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(dir, ec);
  const fs::path full = fs::weakly_canonical(fs::path(dir) / name, ec);
  if (ec) throw Error(why + "cannot be resolved: " + ec.message());
  auto b = base.begin(), f = full.begin();
  for (; b != base.end() && f != full.end(); ++b, ++f)
    if (*b != *f) break;
  if (b != base.end() && !(b->empty() && std::next(b) == base.end()))
    throw Error(why + "leads outside meta.json's directory " + base.string() + " (through a link)");
  return readFile(path);
}

bool decodeWebp(std::span<const uint8_t> webp, int width, int /*height: rgba's size says it*/,
                std::span<uint8_t> rgba) {
  return WebPDecodeRGBAInto(webp.data(), webp.size(), rgba.data(), rgba.size(), width * 4) != nullptr;
}

std::vector<uint8_t> encodeWebp(std::span<const uint8_t> rgba, int width, int height) {
  WebPConfig config;
  if (!WebPConfigInit(&config) || !WebPConfigLosslessPreset(&config, 1))
    throw Error("libwebp: bad encoder configuration");
  config.exact = 1;  // keep RGB under transparent texels: every channel holds data
  WebPPicture pic;
  if (!WebPPictureInit(&pic)) throw Error("libwebp: version mismatch");
  pic.use_argb = 1;
  pic.width = width;
  pic.height = height;
  WebPMemoryWriter writer;
  WebPMemoryWriterInit(&writer);
  pic.writer = WebPMemoryWrite;
  pic.custom_ptr = &writer;
  bool ok = WebPPictureImportRGBA(&pic, rgba.data(), width * 4) && WebPEncode(&config, &pic);
  const int error = pic.error_code;
  WebPPictureFree(&pic);
  std::vector<uint8_t> out(writer.mem, writer.mem + writer.size);
  WebPMemoryWriterClear(&writer);
  if (!ok)
    throw Error("libwebp: lossless encoding of a " + std::to_string(width) + "x" + std::to_string(height) +
                " image failed (error " + std::to_string(error) + ")");
  return out;
}

}  // namespace sf::sog
