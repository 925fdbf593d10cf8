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

}  // namespace sf
