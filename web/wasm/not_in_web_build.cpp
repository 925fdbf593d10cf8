// The format the web build leaves out for now: PlayCanvas's streamed LOD (many SOG files). decodeSplats
// (io/formats.cpp) is compiled unchanged; these definitions take the place of io/lod_meta.cpp in the
// WebAssembly module and refuse such a file with the reason, naming it as every loader does. docs/web.md
// lists what the web build does not read yet.
#include "core/error.h"
#include "io/lod_meta.h"

namespace sf {

namespace {
const char* kHint =
    " (open it with the splatforge command line, or convert it there to .spz, .ply or .splat)";
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

}  // namespace sf
