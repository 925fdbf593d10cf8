// The native build's package files (character/package_files.h): the file system.
#include "character/package_files.h"

#include <filesystem>

#include "io/file.h"

namespace sf::character::package_files {

bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::symlink_status(path, ec));
}

std::vector<uint8_t> read(const std::string& path) {
  return readFile(path);
}

std::string partRefusal() {
  return {};
}

}  // namespace sf::character::package_files
