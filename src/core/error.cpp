#include "core/error.h"

namespace sf {

FormatError::FormatError(const std::string& path, uint64_t offset, const std::string& reason)
    : Error(path + ": byte " + std::to_string(offset) + ": " + reason),
      path_(path),
      offset_(offset),
      reason_(reason) {}

}  // namespace sf
