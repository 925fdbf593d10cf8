#include "render/radix_sort.h"

#include <cassert>
#include <cstddef>

namespace sf {

void radixSortPairs(std::vector<uint64_t>& keys, std::vector<uint32_t>& values, int key_bits) {
  assert(keys.size() == values.size());
  const size_t n = keys.size();
  std::vector<uint64_t> keys_tmp(n);
  std::vector<uint32_t> values_tmp(n);
  for (int shift = 0; shift < key_bits; shift += 8) {
    size_t count[257] = {};
    for (size_t i = 0; i < n; ++i) ++count[((keys[i] >> shift) & 0xffu) + 1];
    if (count[1] == n) continue;  // every key has a zero digit here: the pass would not move anything
    for (int d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (size_t i = 0; i < n; ++i) {
      size_t dst = count[(keys[i] >> shift) & 0xffu]++;
      keys_tmp[dst] = keys[i];
      values_tmp[dst] = values[i];
    }
    keys.swap(keys_tmp);
    values.swap(values_tmp);
  }
}

}  // namespace sf
