#include "anim/raw_gltf.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "support/test_support.h"

namespace sf::test {

struct RawGltf::Impl {
  nlohmann::json doc;
  std::vector<uint8_t> bin;
};

namespace {

std::vector<uint8_t> readAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

RawGltf::RawGltf(const std::string& path) : impl_(std::make_unique<Impl>()) {
  std::vector<uint8_t> bytes = readAll(path);
  if (bytes.size() >= 20 && std::memcmp(bytes.data(), "glTF", 4) == 0) {
    uint32_t json_len, bin_len;
    std::memcpy(&json_len, &bytes[12], 4);
    impl_->doc = nlohmann::json::parse(bytes.begin() + 20, bytes.begin() + 20 + json_len);
    size_t bin_at = 20 + json_len;
    std::memcpy(&bin_len, &bytes[bin_at], 4);
    impl_->bin.assign(bytes.begin() + static_cast<long>(bin_at + 8),
                      bytes.begin() + static_cast<long>(bin_at + 8 + bin_len));
  } else {
    impl_->doc = nlohmann::json::parse(bytes.begin(), bytes.end());
    std::string uri = impl_->doc["buffers"][0]["uri"];
    const std::string prefix = "data:application/octet-stream;base64,";
    if (uri.rfind(prefix, 0) == 0)
      impl_->bin = decodeBase64(uri.substr(prefix.size()));
    else
      impl_->bin = readAll((std::filesystem::path(path).parent_path() / uri).string());
  }
}

RawGltf::~RawGltf() = default;

int RawGltf::integer(const std::string& pointer) const {
  return impl_->doc.at(nlohmann::json::json_pointer(pointer)).get<int>();
}

std::string RawGltf::string(const std::string& pointer, const std::string& fallback) const {
  nlohmann::json::json_pointer p(pointer);
  return impl_->doc.contains(p) ? impl_->doc.at(p).get<std::string>() : fallback;
}

size_t RawGltf::arraySize(const std::string& pointer) const {
  nlohmann::json::json_pointer p(pointer);
  return impl_->doc.contains(p) ? impl_->doc.at(p).size() : 0;
}

bool RawGltf::has(const std::string& pointer) const {
  return impl_->doc.contains(nlohmann::json::json_pointer(pointer));
}

std::vector<float> RawGltf::floats(int accessor) const {
  const nlohmann::json& a = impl_->doc["accessors"][static_cast<size_t>(accessor)];
  if (a["componentType"].get<int>() != 5126) throw std::runtime_error("not a FLOAT accessor");
  std::string type = a["type"];
  size_t comps = type == "SCALAR" ? 1 : type == "VEC2" ? 2 : type == "VEC3" ? 3 : type == "VEC4" ? 4 : 16;
  const nlohmann::json& v = impl_->doc["bufferViews"][a["bufferView"].get<size_t>()];
  size_t stride = v.value("byteStride", static_cast<size_t>(0));
  if (stride == 0) stride = comps * 4;
  size_t base = v.value("byteOffset", static_cast<size_t>(0)) + a.value("byteOffset", static_cast<size_t>(0));
  size_t count = a["count"];
  std::vector<float> out(count * comps);
  for (size_t e = 0; e < count; ++e)
    for (size_t c = 0; c < comps; ++c)
      std::memcpy(&out[e * comps + c], &impl_->bin.at(base + e * stride + c * 4 + 3) - 3, 4);
  return out;
}

}  // namespace sf::test
