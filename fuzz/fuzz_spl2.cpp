// libFuzzer target: SPL2 splat-hull files (docs/formats/spl2.md) through sf::decodeSplats(bytes,
// "fuzz.spl2"), which decodes the hull (decodeSpl2: counts, blocks, orders, the CHNK tail) and converts it to
// gaussians (spl2ToCloud). A hull that decodes is also encoded again and decoded once more, which must give
// the same bytes. Only sf::Error is caught.
#include <cstring>
#include <vector>

#include "fuzz_target.h"
#include "io/formats.h"
#include "io/spl2.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sf::decodeSplats({data, size}, "fuzz.spl2");
  } catch (const sf::Error&) {
  }
  try {
    const sf::Spl2Hull hull = sf::decodeSpl2({data, size}, "fuzz.spl2");
    // What decodes encodes to the same bytes (the format has one encoding of a hull).
    const std::vector<uint8_t> again = sf::encodeSpl2(hull);
    if (again.size() != size || (size > 0 && std::memcmp(again.data(), data, size) != 0)) __builtin_trap();
  } catch (const sf::Error&) {
  }
  return 0;
}
