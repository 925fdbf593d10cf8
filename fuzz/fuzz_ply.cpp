// libFuzzer target: INRIA PLY (ascii, binary little- and big-endian) through the format dispatcher,
// sf::decodeSplats(bytes, "fuzz.ply"). Only sf::Error is caught: anything else escapes and is a finding.
#include "fuzz_target.h"
#include "io/formats.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sf::decodeSplats({data, size}, "fuzz.ply");
  } catch (const sf::Error&) {
  }
  return 0;
}
