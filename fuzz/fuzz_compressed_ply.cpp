// libFuzzer target: PlayCanvas compressed PLY (a PLY whose header has a "chunk" element and
// "packed_position") through sf::decodeSplats(bytes, "fuzz.compressed.ply"). Only sf::Error is caught.
#include "fuzz_target.h"
#include "io/formats.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sf::decodeSplats({data, size}, "fuzz.compressed.ply");
  } catch (const sf::Error&) {
  }
  return 0;
}
