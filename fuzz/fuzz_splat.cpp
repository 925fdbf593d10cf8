// libFuzzer target: the headerless .splat format (32-byte records) through
// sf::decodeSplats(bytes, "fuzz.splat"), including its magic-byte disambiguation. Only sf::Error is caught.
#include "fuzz_target.h"
#include "io/formats.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sf::decodeSplats({data, size}, "fuzz.splat");
  } catch (const sf::Error&) {
  }
  return 0;
}
