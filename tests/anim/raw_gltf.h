// Test-only raw glTF access, independent of the engine's reader: JSON values by JSON pointer and FLOAT
// accessors decoded straight from the buffer bytes. Used to compute expected values by hand.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace sf::test {

class RawGltf {
 public:
  // Reads a .gltf (external .bin or base64 data URI for buffer 0) or a .glb file.
  explicit RawGltf(const std::string& path);
  ~RawGltf();

  // Value at a JSON pointer ("/animations/0/samplers/0/input"); integer and string forms.
  int integer(const std::string& pointer) const;
  std::string string(const std::string& pointer, const std::string& fallback = "") const;
  size_t arraySize(const std::string& pointer) const;  // 0 when absent
  bool has(const std::string& pointer) const;

  // All components of a FLOAT accessor (no sparse), honouring byteOffset and byteStride.
  std::vector<float> floats(int accessor) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sf::test
