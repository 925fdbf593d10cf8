// Test-only glTF writing by hand (the character tests' small skinned meshes): one buffer's bytes with its
// buffer views and accessors, for the tests to place in a glTF document (as a base64 data URI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace sf::test {

struct GltfBytes {
  std::vector<uint8_t> bin;
  nlohmann::json views = nlohmann::json::array(), accessors = nlohmann::json::array();
  // Appends `bytes` (padded to 4) as a buffer view and an accessor of `count` elements; returns the accessor.
  int add(const void* data, size_t bytes, int component, size_t count, const char* type) {
    const size_t at = bin.size();
    bin.insert(bin.end(), static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
    while (bin.size() % 4) bin.push_back(0);
    views.push_back({{"buffer", 0}, {"byteOffset", at}, {"byteLength", bytes}});
    accessors.push_back(
        {{"bufferView", views.size() - 1}, {"componentType", component}, {"count", count}, {"type", type}});
    return static_cast<int>(accessors.size() - 1);
  }
};

}  // namespace sf::test
