// libFuzzer target: a character package's character.json. At start the target writes a small valid
// package (fuzz_support.h, writeSamplePackage: splats.ply, bindings.bin, skin.glb, animations.glb) into a
// private temporary directory; each input then overwrites that directory's character.json and the
// package is loaded with sf::character::Character::loadPackage(dir). The seeds (fuzz_seeds) hold the
// package's own character.json, whose sizes and SHA-256 match those files, so mutations get past the
// file checks into counts, the skin's node/mesh/primitive, clips, colour and expression spaces. The
// directory is removed at exit. Only sf::Error is caught.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "character/character.h"
#include "fuzz_support.h"
#include "fuzz_target.h"

namespace {

std::string& packageDir() {
  static std::string dir;
  return dir;
}

void removePackageDir() {
  std::error_code ec;
  if (!packageDir().empty()) std::filesystem::remove_all(packageDir(), ec);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  sf::fuzz::setFuzzLoadLimits();
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/sf-fuzz-character-XXXXXX";
  if (!mkdtemp(pattern.data())) {
    std::perror("fuzz_character: mkdtemp");
    std::abort();
  }
  packageDir() = pattern;
  std::atexit(removePackageDir);
  sf::fuzz::writeSamplePackage(packageDir());  // an sf::Error here escapes: the target cannot run without it
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json = packageDir() + "/character.json";
  std::FILE* f = std::fopen(json.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror("fuzz_character: writing character.json");
    std::abort();
  }
  try {
    sf::character::Character::loadPackage(packageDir());
  } catch (const sf::Error&) {
  }
  return 0;
}
