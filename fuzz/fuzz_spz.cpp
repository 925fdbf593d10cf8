// libFuzzer target: SPZ files as they are (gzip-wrapped v2/v3, NGSP v4 containers) through
// sf::decodeSplats(bytes, "fuzz.spz"). Only sf::Error is caught. fuzz_spz_body reaches past the
// compression; this one fuzzes the containers themselves.
#include "fuzz_target.h"
#include "io/formats.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sf::decodeSplats({data, size}, "fuzz.spz");
  } catch (const sf::Error&) {
  }
  return 0;
}
