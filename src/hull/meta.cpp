#include "hull/meta.h"

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "io/file.h"
#include "io/json.h"

namespace sf::hull {

std::string hullMetaPath(const std::string& spl2_path) {
  std::string base = spl2_path;
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".spl2") == 0) base.resize(base.size() - 5);
  return base + ".meta.json";
}

float readHullMetaBeltMiddle(const std::string& meta_path) {
  const std::vector<uint8_t> bytes = readFile(meta_path);
  const nlohmann::json j = parseJsonText(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), meta_path);
  const auto it = j.find("belt_deg");
  if (!j.is_object() || it == j.end()) throw Error(meta_path + ": belt_deg: missing");
  if (!it->is_array() || it->size() != 2 || !(*it)[0].is_number() || !(*it)[1].is_number())
    throw Error(meta_path + ": belt_deg: expected two numbers [min, max]");
  const float lo = (*it)[0].get<float>(), hi = (*it)[1].get<float>();
  if (!(lo < hi) || lo < -90 || hi > 90) throw Error(meta_path + ": belt_deg: expected MIN < MAX within [-90, 90]");
  return 0.5f * (lo + hi);
}

}  // namespace sf::hull
