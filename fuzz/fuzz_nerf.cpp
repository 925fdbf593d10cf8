// libFuzzer target: a NeRF-synthetic dataset folder's transforms_train.json (docs/formats/nerf-synthetic.md).
// At start the target writes a small valid folder (two 4x4 train views, one val view, written by
// sf::train::writeNerfSynthetic) into a private temporary directory; each input then overwrites that folder's
// transforms_train.json and the folder is read with sf::train::readNerfSynthetic(dir, 8) (the resampling path
// included). The seeds (fuzz_seeds) hold the folder's own transforms_train.json and variants, so mutations
// reach the frames, matrices, image paths, sizes and the normalisation record. The directory is removed at
// exit. Only sf::Error is caught.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz_support.h"
#include "fuzz_target.h"
#include "train/dataset.h"

namespace {

std::string& datasetDir() {
  static std::string dir;
  return dir;
}

void removeDatasetDir() {
  std::error_code ec;
  if (!datasetDir().empty()) std::filesystem::remove_all(datasetDir(), ec);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  sf::fuzz::setFuzzLoadLimits();
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/sf-fuzz-nerf-XXXXXX";
  if (!mkdtemp(pattern.data())) {
    std::perror("fuzz_nerf: mkdtemp");
    std::abort();
  }
  datasetDir() = pattern;
  std::atexit(removeDatasetDir);
  sf::fuzz::writeSampleDataset(datasetDir());  // an sf::Error here escapes: the target cannot run without it
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json = datasetDir() + "/transforms_train.json";
  std::FILE* f = std::fopen(json.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror("fuzz_nerf: writing transforms_train.json");
    std::abort();
  }
  try {
    sf::train::readNerfSynthetic(datasetDir(), 8);
  } catch (const sf::Error&) {
  }
  return 0;
}
