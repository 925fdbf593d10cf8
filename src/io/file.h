// Whole-file reads and atomic writes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sf {

// Reads a whole regular file; throws sf::Error naming the path and the reason: missing, a directory, a
// device, a FIFO or socket (refused without blocking), larger than the load memory limit (core/limits.h),
// or an OS error.
std::vector<uint8_t> readFile(const std::string& path);

// Writes `bytes` to a new temporary file beside `path` (created exclusively with a unique name,
// "<name>.sf-tmp-<pid>-XXXXXX"), syncs it, renames it over `path` and syncs the directory. Temporary files
// of this pattern left by processes that no longer run (a killed write) are removed first. On any failure
// the temporary file is removed and `path` is left as it was; throws sf::Error.
void writeFileAtomic(const std::string& path, std::span<const uint8_t> bytes);

// Lower-case extension of a path including the dot (".ply"), with ".compressed.ply" kept whole.
std::string fileExtension(const std::string& path);

// What a relative file name (one written in a document: a scene's object, a lod-meta.json's file) is, by its
// text alone (no file is touched; the web page's WebAssembly has no file system). In this order: kEmpty (""),
// kAbsolute (a root directory or name: "/a"), kDirectoryItself (its normal form is ".": ".", "./", "a/..":
// the document's own directory, no file in it), kLeaves (its normal form starts with "..": "../a",
// "a/../../b"), kInside (a name inside the document's directory). Callers phrase the refusal in their own
// words.
enum class RelativeName { kInside, kEmpty, kAbsolute, kDirectoryItself, kLeaves };
RelativeName relativeNameByText(const std::string& name);

// True for a path whose file name ends with "lod-meta.json" (any case): PlayCanvas's streamed LOD, a splat
// file (io/lod_meta.h).
bool isLodMetaPath(const std::string& path);

// What an input path names, decided here for every command and scene object: an existing directory is a
// character package, .gltf / .glb a glTF model, .onnx a neural generator, meta.json an unpacked SOG splat
// file, *lod-meta.json PlayCanvas's streamed LOD (a splat file), any other .json a scene, a file starting
// with the SPL2 magic a splat hull (but a .splat file), anything else a splat file (whose format decodeSplats
// then reads from its content). Never throws; a missing file is reported by its loader. kLodHierarchy: a
// directory holding a level-of-detail index (index.sflod, docs/formats/lod.md); any other directory is a
// character package or bundle.
enum class InputKind { kSplatFile, kGltf, kSceneJson, kCharacterPackage, kOnnx, kSplatHull, kLodHierarchy };
InputKind classifyInput(const std::string& path);
// The part of that decision the name alone makes, touching no file (the web page's WebAssembly has no file
// system): kGltf, kOnnx, kSceneJson, or kSplatFile for every other name.
InputKind classifyInputName(const std::string& path);

}  // namespace sf
