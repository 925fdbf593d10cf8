// libFuzzer target: PlayCanvas's streamed LOD index (docs/formats/lod-meta.md), the text of a lod-meta.json:
// parseLodMeta, then lodMetaLevels for every level and what `lod cut` chooses for a fixed camera looking at
// the origin (cutLodMeta, budget 1,000; a lod-meta naming an environment is cut as if it held 400 gaussians,
// so that the leaves share what remains). The SOG files it names, the environment's included, are not read
// (io/sog.h has its own target, fuzz_sog). Only sf::Error is caught.
#include <string>
#include <string_view>

#include "fuzz_target.h"
#include "io/lod_meta.h"
#include "lod/meta_cut.h"
#include "render/camera.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const sf::LodMeta meta =
        sf::parseLodMeta(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz/lod-meta.json");
    for (int level = 0; level < meta.level_count; ++level) (void)sf::lodMetaLevels(meta, level);
    const sf::Camera cam = sf::lookAtCamera({0, 0, -5}, {0, 0, 0}, {0, -1, 0}, 50, 64, 48);
    (void)sf::lod::cutLodMeta(meta, cam, 1000, meta.environment.empty() ? 0 : 400);
  } catch (const sf::Error&) {
  }
  return 0;
}
