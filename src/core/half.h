// IEEE 754 binary16 ("half") packing, for compact GPU buffers and file formats.
#pragma once

#include <cstdint>

namespace sf {

// Rounds to nearest even; overflow becomes infinity, NaN stays NaN, tiny values become subnormals or 0.
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);

}  // namespace sf
