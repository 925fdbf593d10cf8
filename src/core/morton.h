// Morton (Z-order) codes: the bits of one coordinate spread to every third bit, so that three spread
// coordinates OR-ed at shifts 0, 1 and 2 interleave into one key. The splat writers that store gaussians in
// Morton order (SOG, compressed PLY) and the level-of-detail build's sort key use this one function.
#pragma once

#include <cstdint>

namespace sf {

// The low 21 bits of v, each moved to bit 3i (bit i -> bit 3i): up to 63 bits.
constexpr uint64_t spreadBits3(uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffull;
  v = (v | v << 16) & 0x1f0000ff0000ffull;
  v = (v | v << 8) & 0x100f00f00f00f00full;
  v = (v | v << 4) & 0x10c30c30c30c30c3ull;
  v = (v | v << 2) & 0x1249249249249249ull;
  return v;
}

}  // namespace sf
