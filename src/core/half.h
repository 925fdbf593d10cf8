// IEEE 754 binary16 ("half") packing, for compact GPU buffers and file formats.
#pragma once

#include <cstdint>
#include <cstring>

namespace sf {

// A float's bits, and the float of some bits (memcpy rather than std::bit_cast: the WebAssembly build's
// libc++, LLVM 14, has no std::bit_cast).
inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds to nearest even; overflow becomes infinity, NaN stays NaN, tiny values become subnormals or 0.
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);

}  // namespace sf
