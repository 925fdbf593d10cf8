// Helpers shared by the fuzz targets and the seed generator (fuzz_seeds): tiny deterministic sample
// data written by our own writers, a small skinned and animated glTF, a character package, and the SPZ
// containers the fuzz_spz_body target builds around a fuzzed body. Not instrumented for coverage: only
// the loaders are (see fuzz/CMakeLists.txt).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "character/bundle.h"
#include "character/gnm_pack.h"
#include "core/gaussian_cloud.h"

namespace sf::fuzz {

// A cloud of n gaussians of SH degree `sh_degree` (0..3) in [-1, 1]^3, deterministic for a seed.
GaussianCloud sampleCloud(size_t n, int sh_degree, uint32_t seed);

// gzip (zlib deflate with a gzip header) and its inverse. gunzip throws sf::Error on a broken stream.

// True when `body` starts with the SPZ magic "NGSP" followed by the u32 version 4.
bool isSpzV4Body(std::span<const uint8_t> body);

// An SPZ version-4 file built from a "body": the body's first 32 bytes are the v4 header, copied as they
// are; bytes [32, tocByteOffset) of the body are the extension records; the rest holds the attribute
// arrays back to back, uncompressed. They are cut into numStreams streams of the sizes the header's point
// count and SH degree call for (the last stream takes whatever is left), each stream is compressed into
// one zstd frame, and the table of contents is written with the real sizes. Fuzzed bodies therefore reach
// the decoder behind valid zstd frames, while header fields, stream counts and sizes stay the fuzzer's.
// A body shorter than 32 bytes is returned as it is.
std::vector<uint8_t> spzV4FromBody(std::span<const uint8_t> body);

// A skinned, morphing, animated, textured glTF: a strip of 4 triangles on 2 joints, one morph target
// ("jawOpen", sparse), a base-colour texture (PNG data URI), animations "Walk" (LINEAR rotation, STEP
// translation, LINEAR weights) and "Idle" (CUBICSPLINE rotation). As GLB, and as .gltf JSON with the
// buffer in a data URI.
std::vector<uint8_t> skinnedGlb();
std::string skinnedGltfJson();
// The JSON of a GLB with its BIN chunk moved into a base64 data URI for buffer 0 (a .gltf equivalent).
// Throws sf::Error when `glb` is not a GLB.
std::string glbToGltfJson(std::span<const uint8_t> glb);

// A small character package (character.json, splats.ply, bindings.bin, skin.glb, animations.glb) built
// from skinnedGlb() into `dir` (created if needed). Deterministic: the same files every time, so a
// character.json written once (a seed) keeps matching the files' sizes and SHA-256.
void writeSamplePackage(const std::string& dir);

// A small NeRF-synthetic folder (train/dataset.h writeNerfSynthetic): two 4x4 train views and one val view of
// orbit cameras, with a normalisation record. Deterministic, so its transforms_train.json (a seed) keeps
// matching its images.
void writeSampleDataset(const std::string& dir);

// A small GNM pack (docs/formats/gnm-pack.md) that validates: `vertices` (>= 3) vertices on a curved sheet,
// a fan of vertices - 2 triangles, `basis` expression vectors, two joints ("lEye", a root, and "rEye", its
// child: the two eye joints) with the vertices weighted to one or both, and uvs and a 52 x basis arkit_map
// when asked. Deterministic.
character::GnmPack sampleGnmPack(size_t vertices, size_t basis, bool uvs, bool arkit_map);

// A small branch mesh (character/bundle.h, mesh_json + mesh_bin): `vertices` (>= 3) vertices with uvs in
// [0, 1] and a fan of vertices - 2 triangles. encodeBranchMesh gives its files.
character::BranchMesh sampleBranchMesh(size_t vertices);

// The files of a small in-memory character bundle, under the demo bundle's names
// (models/characters/orb_head): head/geom.onnx, head/appr.onnx, head/trunk.onnx, eyes/geom.onnx and
// eyes/appr.onnx (placeholder bytes: loadCharacterBundle checks that named files exist, it does not read
// them), head/head.glb (skinnedGlb()), head/head.sfgnm (sampleGnmPack), eyes/mesh.json + eyes/mesh.bin
// (sampleBranchMesh(8)) and rig_names.json (a valid list of control names). No scene.json or
// export_manifest.json: the caller adds the one it loads.
std::map<std::string, std::vector<uint8_t>> sampleBundleFiles();

// RGBA 8-bit PNG of the given pixels (4 bytes per pixel, top row first).
std::vector<uint8_t> pngBytes(int width, int height, std::span<const uint8_t> rgba);

std::string base64(std::span<const uint8_t> bytes);

}  // namespace sf::fuzz
