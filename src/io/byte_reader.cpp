#include "io/byte_reader.h"

namespace sf {

void ByteReader::need(uint64_t n, std::string_view what) const {
  if (n > remaining())
    fail("truncated: " + std::string(what) + " needs " + std::to_string(n) + " bytes, " +
         std::to_string(remaining()) + " remain");
}

void ByteReader::seek(uint64_t offset, std::string_view what) {
  if (offset > data_.size())
    fail(std::string(what) + " at byte " + std::to_string(base_ + offset) + " lies past the end (size " +
         std::to_string(base_ + data_.size()) + ")");
  pos_ = static_cast<size_t>(offset);
}

}  // namespace sf
