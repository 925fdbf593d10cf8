// SHA-256 (FIPS 180-4), for content hashes of package files.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace sf {

// Lower-case hex digest of `bytes`.
std::string sha256Hex(std::span<const uint8_t> bytes);

// The same digest over bytes given in pieces (a file read in blocks): update() any number of times, then
// hexDigest() once.
class Sha256 {
 public:
  void update(std::span<const uint8_t> bytes);
  std::string hexDigest();

 private:
  std::array<uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t block_[64] = {};
  size_t filled_ = 0;   // bytes of block_ in use
  uint64_t total_ = 0;  // bytes given
};

}  // namespace sf
