// libFuzzer target: glTF 2.0, binary (GLB, by its "glTF" magic) and JSON (.gltf), in two ways:
//  1. sf::decodeSplats(bytes, ".../fuzz.gltf"): the reader and the KHR_gaussian_splatting primitives
//     (the path's extension sends JSON content to the glTF reader; GLB goes there by its magic);
//  2. sf::parseGltf with no base directory, then sf::GltfModel (skeleton, skins, clips, morph targets)
//     posed at rest and at two times of each of its first clips: the animation runtime on the document.
// The path's directory does not exist and parseGltf gets none, so external buffers and images are never
// read from disk. Only sf::Error is caught.
#include "fuzz_target.h"
#include "io/formats.h"
#include "io/gltf.h"
#include "model/gltf_model.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  try {
    sf::decodeSplats(bytes, "/nonexistent-dir/fuzz.gltf");
  } catch (const sf::Error&) {
  }
  try {
    sf::GltfModel model(sf::parseGltf(bytes, "fuzz.gltf", ""));
    sf::GltfModel::Pose pose;
    model.pose(-1, 0.0f, pose);
    const size_t clips = std::min<size_t>(model.clips().size(), 4);
    for (size_t c = 0; c < clips; ++c) {
      model.pose(static_cast<int>(c), 0.37f, pose);
      model.pose(static_cast<int>(c), 1e6f, pose);
    }
  } catch (const sf::Error&) {
  }
  return 0;
}
