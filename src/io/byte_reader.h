// Bounds-checked cursor over untrusted bytes. Every read names what it expected, so a truncated or
// corrupt file fails with "<path>: byte <offset>: <reason>" instead of reading out of bounds.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/error.h"

namespace sf {

class ByteReader {
 public:
  // `base_offset` is added to offsets in messages (for a reader over part of a file).
  ByteReader(std::span<const uint8_t> data, std::string path, uint64_t base_offset = 0)
      : data_(data), path_(std::move(path)), base_(base_offset) {}

  size_t offset() const { return pos_; }
  size_t size() const { return data_.size(); }
  size_t remaining() const { return data_.size() - pos_; }
  const std::string& path() const { return path_; }
  std::span<const uint8_t> data() const { return data_; }

  // Throws unless `n` more bytes are available; `what` names the field for the message.
  void need(uint64_t n, std::string_view what) const;

  std::span<const uint8_t> bytes(uint64_t n, std::string_view what) {
    need(n, what);
    auto s = data_.subspan(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  void skip(uint64_t n, std::string_view what) { bytes(n, what); }
  void seek(uint64_t offset, std::string_view what);

  template <typename T>
  T readLE(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    auto s = bytes(sizeof(T), what);
    T v;
    std::memcpy(&v, s.data(), sizeof(T));  // the engine only targets little-endian hosts
    return v;
  }

  // Failure at the cursor, or at an absolute offset within this reader.
  [[noreturn]] void fail(const std::string& reason) const { failAt(pos_, reason); }
  [[noreturn]] void failAt(uint64_t offset, const std::string& reason) const {
    throw FormatError(path_, base_ + offset, reason);
  }

 private:
  std::span<const uint8_t> data_;
  std::string path_;
  uint64_t base_;
  size_t pos_ = 0;
};

}  // namespace sf
