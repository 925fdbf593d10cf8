// libFuzzer target: GNM packs (.sfgnm, docs/formats/gnm-pack.md) through
// sf::character::decodeGnmPack(bytes, "fuzz.sfgnm"): the magic, version and flags, the counts against their
// limits and against the data before anything is allocated, every index (triangles, weighted LBS joints,
// parents, eye joints), every value and the names. A pack that decodes is encoded again (encodeGnmPack),
// which must give the input's bytes: the format has one encoding of a pack (values are stored bit for bit,
// sections in a fixed order without padding, no trailing bytes), with one exception the comparison
// allows: flag bit 1 (arkit_map) with 0 basis vectors declares a 52 x 0 map, which decodes to no map and is
// written with the bit clear. Only sf::Error is caught.
#include <cstring>
#include <vector>

#include "character/gnm_pack.h"
#include "fuzz_target.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const sf::character::GnmPack pack = sf::character::decodeGnmPack({data, size}, "fuzz.sfgnm");
    const std::vector<uint8_t> again = sf::character::encodeGnmPack(pack);
    std::vector<uint8_t> expected(data, data + size);
    if (pack.basisCount() == 0 && expected.size() > 12)
      expected[12] &= static_cast<uint8_t>(~2u);  // flags, bit 1
    if (again != expected) __builtin_trap();
  } catch (const sf::Error&) {
  }
  return 0;
}
