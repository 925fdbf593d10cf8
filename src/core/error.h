// Errors. Bad data from outside (files, JSON, command-line values) is an sf::Error, whose message names the
// source, the position and the reason; so is a frame's input a renderer refuses (RenderObject::validate and
// the backend's own limits), with the same type on the CPU and Vulkan backends, since front ends pass such
// input through from data. A broken internal invariant is an assert.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace sf {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Error in a binary or text file: "<path>: byte <offset>: <reason>".
class FormatError : public Error {
 public:
  FormatError(const std::string& path, uint64_t offset, const std::string& reason);

  const std::string& path() const { return path_; }
  uint64_t offset() const { return offset_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string path_;
  uint64_t offset_;
  std::string reason_;
};

}  // namespace sf
