// libFuzzer target: SOG (docs/formats/sog.md) through sf::decodeSplats(bytes, "fuzz.sog"). Two inputs:
//  - a ZIP archive (starts with "PK\3\4"): decoded as it is, so the archive reader's checks are fuzzed;
//  - anything else: the archive's entries unpacked, as records of [u8 name length][name][u32 LE data
//    length][data] (a record cut short keeps what is there). The target zips them itself (stored entries,
//    valid CRCs), so mutations of meta.json and of the WebP images reach the SOG decoder instead of
//    failing the archive's CRC check.
// Only sf::Error is caught.
#include <algorithm>
#include <cstring>
#include <string>

#include "fuzz_target.h"
#include "io/formats.h"
#include "io/zip.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  std::vector<uint8_t> archive;
  if (sf::looksLikeZip(input)) {
    archive.assign(input.begin(), input.end());
  } else {
    sf::ZipWriter zip;
    size_t at = 0;
    while (at < size) {
      const size_t declared = data[at];
      ++at;
      const size_t name_len = std::min(declared, size - at);
      std::string name(reinterpret_cast<const char*>(data + at), name_len);
      at += name_len;
      uint32_t len = 0;
      if (size - at >= 4) std::memcpy(&len, data + at, 4), at += 4;
      const size_t take = std::min<size_t>(len, size - at);
      if (name.empty()) name = "unnamed";
      zip.add(name, input.subspan(at, take));
      at += take;
    }
    try {
      archive = zip.finish();
    } catch (const sf::Error&) {
      return 0;
    }
  }
  try {
    sf::decodeSplats(archive, "fuzz.sog");
  } catch (const sf::Error&) {
  }
  return 0;
}
