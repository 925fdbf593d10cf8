// SHA-256 (FIPS 180-4), for content hashes of package files.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace sf {

// Lower-case hex digest of `bytes`.
std::string sha256Hex(std::span<const uint8_t> bytes);

}  // namespace sf
