// Where a glTF file's external buffers and images come from: the one seam between the glTF reader
// (io/gltf.cpp) and the files beside it. The native build defines it in io/gltf_files.cpp (the file system:
// canonical paths, symbolic links followed, confined to the glTF file's directory tree); the web page's
// WebAssembly in web/wasm/gltf_api.cpp (the files the page fetched and handed in, confined by their text).
// Both builds read the same URIs with the same rules and report a missing file in the same words.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sf::gltf_files {

// The directory external files must lie under, given the directory the caller names (parseGltf's base_dir),
// in the form exists() compares paths with; empty: no external file is allowed.
std::string baseDir(const std::string& dir);

// Whether `path` (baseDir() + "/" + a URI) names a readable file inside `base_dir`.
bool exists(const std::string& base_dir, const std::string& path);

// The bytes of a file exists() accepted. Throws sf::Error naming the file and the reason.
std::vector<uint8_t> read(const std::string& path);

}  // namespace sf::gltf_files
