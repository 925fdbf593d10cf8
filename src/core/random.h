// Random numbers and hashes that give the same values on every standard library and machine: splitmix64
// (Steele, Lea and Flood 2014) as a stream and as a stateless hash, so a seed means the same samples, chunks,
// craters and training views everywhere, on both backends.
#pragma once

#include <cstdint>

namespace sf {

inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;  // splitmix64's increment

// splitmix64's finaliser: a bijective mix of 64 bits.
constexpr uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// splitmix64 of one value (a stateless hash).
constexpr uint64_t splitmix64(uint64_t x) {
  return mix64(x + kGoldenGamma);
}
// The next value of the splitmix64 stream whose state is `state`.
constexpr uint64_t splitmix64Next(uint64_t& state) {
  return mix64(state += kGoldenGamma);
}

// Uniform in [0, 1) from the top bits of a hash: 53 bits as a double, 24 as a float.
constexpr double unitDouble(uint64_t h) {
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}
constexpr float unitFloat(uint64_t h) {
  return static_cast<float>(h >> 40) * 0x1.0p-24f;
}

}  // namespace sf
