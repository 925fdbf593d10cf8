#include "hull/meta.h"

#include <algorithm>
#include <cctype>
#include <cmath>
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
  const nlohmann::json j =
      parseJsonText(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), meta_path);
  const auto it = j.find("belt_deg");
  if (!j.is_object() || it == j.end()) throw Error(meta_path + ": belt_deg: missing");
  if (!it->is_array() || it->size() != 2 || !(*it)[0].is_number() || !(*it)[1].is_number())
    throw Error(meta_path + ": belt_deg: expected two numbers [min, max]");
  const float lo = (*it)[0].get<float>(), hi = (*it)[1].get<float>();
  if (!(lo < hi) || lo < -90 || hi > 90)
    throw Error(meta_path + ": belt_deg: expected MIN < MAX within [-90, 90]");
  return 0.5f * (lo + hi);
}

namespace {

nlohmann::json readMeta(const std::string& meta_path) {
  const std::vector<uint8_t> bytes = readFile(meta_path);
  return parseJsonText(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                       meta_path);
}

std::string lowerCase(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// The named points whose name contains one of `words` (else, when `fallback` is non-empty, one of those), in
// name order, with their axes.
std::vector<HullGun> namedPoints(const nlohmann::json& j, const std::string& meta_path,
                                 std::initializer_list<const char*> words,
                                 std::initializer_list<const char*> fallback) {
  std::vector<HullGun> guns;
  if (!j.is_object() || !j.contains("points")) return guns;
  const nlohmann::json& points = j["points"];
  if (!points.is_object()) throw Error(meta_path + ": points: expected an object of named points");
  auto vec3 = [&](const nlohmann::json& v, const std::string& at) {
    if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() || !v[2].is_number())
      throw Error(meta_path + ": " + at + ": expected 3 numbers");
    const Vec3 p{v[0].get<float>(), v[1].get<float>(), v[2].get<float>()};
    if (!std::isfinite(p.x) || !std::isfinite(p.y) || !std::isfinite(p.z))
      throw Error(meta_path + ": " + at + ": not finite");
    return p;
  };
  auto named = [&](std::initializer_list<const char*> any) {
    std::vector<std::string> names;
    for (const auto& item : points.items()) {
      const std::string low = lowerCase(item.key());
      if (std::any_of(any.begin(), any.end(),
                      [&](const char* w) { return low.find(w) != std::string::npos; }))
        names.push_back(item.key());
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  std::vector<std::string> names = named(words);
  if (names.empty() && fallback.size() > 0) names = named(fallback);
  const nlohmann::json* axes = j.contains("axes") && j["axes"].is_object() ? &j["axes"] : nullptr;
  for (const std::string& name : names) {
    HullGun g;
    g.name = name;
    g.tip = vec3(points[name], "points." + name);
    if (axes && axes->contains(name)) {
      const Vec3 a = vec3((*axes)[name], "axes." + name);
      if (!(length(a) > 0)) throw Error(meta_path + ": axes." + name + ": expected a non-zero direction");
      g.axis = normalize(a);
    }
    guns.push_back(std::move(g));
  }
  return guns;
}

}  // namespace

std::vector<HullGun> readHullMetaGuns(const std::string& meta_path) {
  return namedPoints(readMeta(meta_path), meta_path, {"tip", "muzzle"}, {"barrel", "gun"});
}

HullEngines readHullMetaEngines(const std::string& meta_path) {
  const nlohmann::json j = readMeta(meta_path);
  HullEngines e;
  e.nozzles = namedPoints(j, meta_path, {"engine", "exhaust"}, {});
  if (j.is_object() && j.contains("parts")) {
    const nlohmann::json& parts = j["parts"];
    if (!parts.is_array()) throw Error(meta_path + ": parts: expected an array of part boxes");
    for (size_t k = 0; k < parts.size(); ++k) {
      const nlohmann::json& p = parts[k];
      const std::string at = meta_path + ": parts[" + std::to_string(k) + "]";
      if (!p.is_object() || !p.contains("name") || !p["name"].is_string()) continue;
      if (lowerCase(p["name"].get<std::string>()).find("engine") == std::string::npos) continue;
      if (!p.contains("part") || !p["part"].is_number_integer() || p["part"].get<int64_t>() < 0 ||
          p["part"].get<int64_t>() > 7)
        throw Error(at + ".part: expected a part 0..7");
      e.part_mask |= 1u << p["part"].get<int>();
    }
  }
  return e;
}

}  // namespace sf::hull
