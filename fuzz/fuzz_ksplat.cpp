// libFuzzer target: the GaussianSplats3D .ksplat format (docs/formats/ksplat.md) through
// sf::decodeSplats(bytes, "fuzz.ksplat"). Only sf::Error is caught.
#include "fuzz_target.h"
#include "io/formats.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sf::decodeSplats({data, size}, "fuzz.ksplat");
  } catch (const sf::Error&) {
  }
  return 0;
}
