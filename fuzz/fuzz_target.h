// Shared by every fuzz target (fuzz/*.cpp): the libFuzzer entry points and the load limits each target
// sets at start. A target catches sf::Error only; any other exception escapes and is a finding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "core/limits.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace sf::fuzz {

// Small limits: a file that declares more than this is refused with an sf::Error by the loaders that
// honour core/limits.h, so the fuzzer's memory (-rss_limit_mb=2048) is never the first thing to break.
inline void setFuzzLoadLimits() {
  setLoadLimits({.max_gaussians = 1u << 20, .max_bytes = 64u << 20});
}

}  // namespace sf::fuzz

// LLVMFuzzerInitialize for targets that need nothing but the limits.
#define SF_FUZZ_INITIALIZE_LIMITS                      \
  extern "C" int LLVMFuzzerInitialize(int*, char***) { \
    sf::fuzz::setFuzzLoadLimits();                     \
    return 0;                                          \
  }
