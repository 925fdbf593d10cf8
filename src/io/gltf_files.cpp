// The native build's side of io/gltf_files.h: external glTF files on the file system, inside the glTF file's
// directory tree (links followed before the check).
#include "io/gltf_files.h"

#include <filesystem>

#include "io/file.h"

namespace sf::gltf_files {

namespace fs = std::filesystem;

std::string baseDir(const std::string& dir) {
  if (dir.empty()) return {};
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(fs::absolute(fs::path(dir), ec), ec);
  return ec ? std::string() : canonical.string();
}

bool exists(const std::string& base_dir, const std::string& path) {
  if (base_dir.empty()) return false;
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(fs::path(path), ec);
  if (ec) return false;
  std::string s = canonical.string();
  if (s.rfind(base_dir + "/", 0) != 0)
    return false;  // outside the file's directory tree (or tinygltf's "." fallback)
  return fs::is_regular_file(canonical, ec);
}

std::vector<uint8_t> read(const std::string& path) {
  return readFile(path);
}

}  // namespace sf::gltf_files
