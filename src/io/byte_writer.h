// The writers' counterpart of ByteReader::readLE: appends a scalar's bytes in file (little-endian) order.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace sf {

static_assert(std::endian::native == std::endian::little, "the engine only targets little-endian hosts");

template <typename T>
void putLE(std::vector<uint8_t>& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}

}  // namespace sf
