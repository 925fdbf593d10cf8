// libFuzzer target: a character bundle's JSON files and its mesh_json + mesh_bin
// (docs/formats/character-bundle.md). At start the target builds the files of a small in-memory bundle under
// the demo bundle's names (fuzz_support.h, sampleBundleFiles: head/geom.onnx, head/appr.onnx,
// head/trunk.onnx, head/head.glb, head/head.sfgnm, eyes/geom.onnx, eyes/appr.onnx, eyes/mesh.json,
// eyes/mesh.bin and rig_names.json; the decoders are placeholder bytes, since loadCharacterBundle checks that
// the files a bundle names exist and does not read them). Each input is then, in turn:
//  - that bundle's scene.json (sf::character::memoryResolver, isCharacterBundle, loadCharacterBundle: mode,
//    order, branches, decoders, meshes, uv_resolution, frame, lift, flags, the rig and expression_space
//    blocks, rig_names.json when there is no rig block);
//  - its export_manifest.json, without a scene.json (the schema_version 1 layout);
//  - its rig_names.json, beside a fixed scene.json without a rig block (the default rig reads it);
//  - a mesh_json for sf::character::decodeBranchMesh, with a fixed valid mesh_bin (8 vertices, 6 triangles);
//  - split: the first byte is the length of a mesh_json that follows it (cut at the input's end), and the
//    bytes after that are its mesh_bin.
// Only sf::Error is caught.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "character/bundle.h"
#include "fuzz_support.h"
#include "fuzz_target.h"

namespace {

using Files = std::map<std::string, std::vector<uint8_t>>;

const Files& bundleFiles() {
  static const Files files = sf::fuzz::sampleBundleFiles();
  return files;
}

const std::vector<uint8_t>& meshBin() {
  static const std::vector<uint8_t> bin =
      sf::character::encodeBranchMesh(sf::fuzz::sampleBranchMesh(8)).second;
  return bin;
}

// A scene.json without a "rig" block, naming only files of bundleFiles().
constexpr const char* kSceneWithoutRig =
    R"({"mode": "multi_region", "order": ["eyes"], "branches": {"eyes": {"decoders": {"geom": "eyes/geom.onnx",
    "appr": "eyes/appr.onnx"}, "mesh_bin": "eyes/mesh.bin", "mesh_json": "eyes/mesh.json", "uv_resolution": 8}}})";

void load(const std::string& name, std::vector<uint8_t> bytes, const char* also = nullptr,
          const std::string& also_text = {}) {
  Files files = bundleFiles();
  files[name] = std::move(bytes);
  if (also) files[also] = std::vector<uint8_t>(also_text.begin(), also_text.end());
  try {
    const std::shared_ptr<sf::character::BundleResolver> resolver =
        sf::character::memoryResolver(std::move(files), "fuzz");
    sf::character::isCharacterBundle(*resolver);
    sf::character::loadCharacterBundle(resolver);
  } catch (const sf::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  sf::fuzz::setFuzzLoadLimits();
  bundleFiles();  // an sf::Error here escapes: the target cannot run without its bundle
  meshBin();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> input(data, data + size);
  load("scene.json", input);
  load("export_manifest.json", input);
  load("rig_names.json", input, "scene.json", kSceneWithoutRig);
  try {
    sf::character::decodeBranchMesh({data, size}, meshBin(), "fuzz_mesh.json", "mesh.bin");
  } catch (const sf::Error&) {
  }
  if (size > 0) {
    const size_t json = std::min<size_t>(data[0], size - 1);
    try {
      sf::character::decodeBranchMesh({data + 1, json}, {data + 1 + json, size - 1 - json}, "fuzz_mesh.json",
                                      "fuzz_mesh.bin");
    } catch (const sf::Error&) {
    }
  }
  return 0;
}
