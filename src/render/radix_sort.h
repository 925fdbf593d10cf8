// Stable least-significant-digit radix sort of 64-bit keys with 32-bit payloads: the CPU twin of the
// GPU's global sort. Equal keys keep their input order, so the result is fully determined by the input.
#pragma once

#include <cstdint>
#include <vector>

namespace sf {

// Sorts keys ascending, permuting values alongside. Only the low `key_bits` bits are examined (the rest
// must be zero). keys.size() must equal values.size().
void radixSortPairs(std::vector<uint64_t>& keys, std::vector<uint32_t>& values, int key_bits = 64);

}  // namespace sf
