// The trainers' random numbers: splitmix64 (Steele et al. 2014), the same stream on every standard library,
// so a seed means the same views, backgrounds and relocations on every machine and on both backends (the CPU
// trainer's position noise draws from a stream of its own).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "core/random.h"

namespace sf::train {

inline uint64_t nextU64(uint64_t& s) {
  return splitmix64Next(s);
}
// Uniform in [0, 1).
inline double uniform01(uint64_t& s) {
  return unitDouble(nextU64(s));
}
// Standard normal (Box-Muller, one value per call).
inline float normal01(uint64_t& s) {
  const double u1 = std::max(uniform01(s), 1e-300), u2 = uniform01(s);
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

}  // namespace sf::train
