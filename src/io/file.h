// Whole-file reads and atomic writes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sf {

// Reads a whole file; throws sf::Error naming the path and the OS reason on failure.
std::vector<uint8_t> readFile(const std::string& path);

// Writes `bytes` to a temporary file beside `path`, flushes it, then renames it over `path`.
// On any failure the temporary file is removed and `path` is left as it was; throws sf::Error.
void writeFileAtomic(const std::string& path, std::span<const uint8_t> bytes);

// Lower-case extension of a path including the dot (".ply"), with ".compressed.ply" kept whole.
std::string fileExtension(const std::string& path);

// What an input path names, decided here for every command and scene object: an existing directory is a
// character package, .gltf / .glb a glTF model, .json a scene, anything else a splat file (whose format
// decodeSplats then reads from its content). Never throws; a missing file is reported by its loader.
enum class InputKind { kSplatFile, kGltf, kSceneJson, kCharacterPackage };
InputKind classifyInput(const std::string& path);

}  // namespace sf
