// JSON text from untrusted files parsed into nlohmann::json, with every failure an sf::Error naming the file
// and where: the byte offset of a syntax error, the JSON path ("objects[2].transform[5]") of a value the
// parser refuses (a number overflowing a double, such as 1e999). Include only where nlohmann::json is used.
// JsonNode walks a parsed document keeping that path, so every refusal names the file and the JSON path.
#pragma once

#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/math.h"

namespace sf {

nlohmann::json parseJsonText(std::string_view text, const std::string& file);

// `s` without nlohmann's "[json.exception.<kind>.<id>] " markers (messages of libraries that use it).
std::string withoutJsonPrefix(std::string s);

// A JSON value together with its path ("objects[1].transform") and the file, for messages.
struct JsonNode {
  const nlohmann::json& value;
  std::string path;
  const std::string& file;

  [[noreturn]] void fail(const std::string& reason) const {
    throw Error(file + ": " + (path.empty() ? "(root)" : path) + ": " + reason);
  }
  bool has(const char* key) const { return value.is_object() && value.contains(key); }
  // Refuses a key of this object outside `known` (a typo such as "upp" is an error, not a default).
  void onlyKeys(std::initializer_list<const char*> known) const {
    if (!value.is_object()) fail("expected an object");
    for (auto it = value.begin(); it != value.end(); ++it) {
      bool found = false;
      for (const char* k : known) found = found || it.key() == k;
      if (found) continue;
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      throw Error(file + ": " + (path.empty() ? "(root)" : path) + ": unknown key \"" + it.key() +
                  "\" (expected " + list + ")");
    }
  }
  JsonNode operator[](const char* key) const {
    if (!value.is_object()) fail("expected an object");
    auto it = value.find(key);
    if (it == value.end()) fail(std::string("missing key \"") + key + "\"");
    return {*it, path.empty() ? key : path + "." + key, file};
  }
  JsonNode at(size_t i) const { return {value[i], path + "[" + std::to_string(i) + "]", file}; }
  double number() const {
    if (!value.is_number()) fail("expected a number, got " + std::string(value.type_name()));
    double d = value.get<double>();
    if (!std::isfinite(d)) fail("expected a finite number");
    return d;
  }
  int positiveInt() const {
    double d = number();
    if (d != std::floor(d) || d < 1 || d > 16384) fail("expected an integer in 1..16384");
    return static_cast<int>(d);
  }
  std::string string() const {
    if (!value.is_string()) fail("expected a string, got " + std::string(value.type_name()));
    return value.get<std::string>();
  }
  std::vector<float> numbers(size_t count) const {
    if (!value.is_array()) fail("expected an array of " + std::to_string(count) + " numbers");
    if (value.size() != count)
      fail("expected " + std::to_string(count) + " numbers, got " + std::to_string(value.size()));
    std::vector<float> out(count);
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(at(i).number());
    return out;
  }
  // A clip: its name, or its index as a whole number in 0..65535 (returned as text, as a name would be).
  std::string clipName() const {
    if (!value.is_number()) return string();
    const double d = number();
    if (d != std::floor(d) || d < 0 || d > 65535) fail("expected a clip name or an index in 0..65535");
    return std::to_string(static_cast<int>(d));
  }
  Vec3 vec3() const {
    auto v = numbers(3);
    return {v[0], v[1], v[2]};
  }
};

}  // namespace sf
