// libFuzzer target: a character package's bindings.bin (docs/formats/character.md) through
// sf::character::decodeBindings(bytes, "fuzz.bin"). Only sf::Error is caught.
#include "character/binding.h"
#include "fuzz_target.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sf::character::decodeBindings({data, size}, "fuzz.bin");
  } catch (const sf::Error&) {
  }
  return 0;
}
