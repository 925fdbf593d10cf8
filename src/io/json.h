// JSON text from untrusted files parsed into nlohmann::json, with every failure an sf::Error naming the file
// and where: the byte offset of a syntax error, the JSON path ("objects[2].transform[5]") of a value the
// parser refuses (a number overflowing a double, such as 1e999). Include only where nlohmann::json is used.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace sf {

nlohmann::json parseJsonText(std::string_view text, const std::string& file);

}  // namespace sf
