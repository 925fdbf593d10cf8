// The formats whose libraries the web build leaves out for now: SOG (lossless WebP images, libwebp), glTF
// (tinygltf) and PlayCanvas's streamed LOD (SOG files). decodeSplats (io/formats.cpp) is compiled unchanged;
// these definitions take the place of io/sog.cpp, io/gltf.cpp, io/gltf_splats.cpp and io/lod_meta.cpp in the
// WebAssembly module and refuse such a file with the
// reason, naming it as every loader does. docs/web.md lists what the web build does not read yet.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/error.h"
#include "io/gltf.h"
#include "io/gltf_splats.h"
#include "io/lod_meta.h"
#include "io/sog.h"

namespace sf {

namespace {
const char* kHint =
    " (open it with the splatforge command line, or convert it there to .spz, .ply or .splat)";
}

// As io/sog.cpp decides it: the unpacked form of SOG is a file named meta.json, in any case.
bool isSogMetaPath(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name == "meta.json";
}

LodMeta parseLodMeta(std::string_view, const std::string& path) {
  throw FormatError(path, 0,
                    std::string("PlayCanvas's streamed LOD (SOG files) is not in the web build yet") + kHint);
}

std::vector<int> lodMetaLevels(const LodMeta&, int) {
  throw Error("lod-meta.json is not in the web build yet");
}

GaussianCloud readLodMetaLeaves(const LodMeta&, std::span<const int>) {
  throw Error("lod-meta.json is not in the web build yet");
}

GaussianCloud readSog(std::span<const uint8_t>, const std::string& path, int*, std::vector<std::string>*) {
  throw FormatError(path, 0, std::string("SOG is not in the web build yet") + kHint);
}

std::vector<uint8_t> writeSog(const GaussianCloud&, const SogWriteOptions&) {
  throw Error("writing SOG is not in the web build yet");
}

GltfDocument parseGltf(std::span<const uint8_t>, const std::string& name, const std::string&) {
  throw FormatError(name, 0, std::string("glTF is not in the web build yet") + kHint);
}

GaussianCloud gltfSplatCloud(const GltfDocument&) {
  throw Error("glTF is not in the web build yet");
}

std::vector<uint8_t> writeGltfSplats(const GaussianCloud&) {
  throw Error("writing glTF is not in the web build yet");
}

}  // namespace sf
