// libFuzzer target: the DECOMPRESSED body of an SPZ file. Mutating a gzip or zstd stream mostly breaks
// its framing, so the decoder behind it is rarely reached; here the input is the body and the target
// compresses it itself:
//  - input starting with "NGSP" and the u32 version 4: an SPZ v4 container is built around it, every
//    stream compressed into one zstd frame with a table of contents of the real sizes (header fields, the
//    stream count and the stream sizes the input implies stay the fuzzer's; see fuzz_support.h);
//  - anything else: the legacy layout (16-byte header + planar arrays, versions 2 and 3), gzip-wrapped.
// Decoded through sf::decodeSplats(bytes, "fuzz.spz"). Only sf::Error is caught.
#include "fuzz_support.h"
#include "fuzz_target.h"
#include "io/formats.h"
#include "io/gzip.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> body(data, size);
  const std::vector<uint8_t> file =
      sf::fuzz::isSpzV4Body(body) ? sf::fuzz::spzV4FromBody(body) : sf::gzipBytes(body);
  try {
    sf::decodeSplats(file, "fuzz.spz");
  } catch (const sf::Error&) {
  }
  return 0;
}
