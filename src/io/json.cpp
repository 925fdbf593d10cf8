#include "io/json.h"

#include <vector>

#include "core/error.h"

namespace sf {

namespace {

// The parser's position as a JSON path, followed through the parse callback's events.
class PathTracker {
 public:
  bool event(nlohmann::json::parse_event_t e, const nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (e) {
      case E::object_start:
        stack_.push_back({false, 0, {}});
        break;
      case E::array_start:
        stack_.push_back({true, 0, {}});
        break;
      case E::key:
        if (!stack_.empty() && parsed.is_string()) stack_.back().key = parsed.get<std::string>();
        break;
      case E::object_end:
      case E::array_end:
        if (!stack_.empty()) stack_.pop_back();
        advance();
        break;
      case E::value:
        advance();
        break;
    }
    return true;
  }

  std::string path() const {
    std::string out;
    for (const Level& l : stack_) {
      if (l.array)
        out += "[" + std::to_string(l.index) + "]";
      else if (!l.key.empty())
        out += (out.empty() ? "" : ".") + l.key;
    }
    return out.empty() ? "(root)" : out;
  }

 private:
  struct Level {
    bool array;
    size_t index;
    std::string key;
  };
  void advance() {
    if (!stack_.empty() && stack_.back().array) ++stack_.back().index;
  }
  std::vector<Level> stack_;
};

}  // namespace

std::string withoutJsonPrefix(std::string s) {
  for (size_t at; (at = s.find("[json.exception.")) != std::string::npos;) {
    const size_t end = s.find("] ", at);
    if (end == std::string::npos) break;
    s.erase(at, end + 2 - at);
  }
  return s;
}

nlohmann::json parseJsonText(std::string_view text, const std::string& file) {
  PathTracker tracker;
  try {
    return nlohmann::json::parse(text.begin(), text.end(),
                                 [&tracker](int, nlohmann::json::parse_event_t e, nlohmann::json& parsed) {
                                   return tracker.event(e, parsed);
                                 });
  } catch (const nlohmann::json::parse_error& e) {
    throw FormatError(file, e.byte > 0 ? e.byte - 1 : 0,
                      "malformed JSON at " + tracker.path() + ": " + withoutJsonPrefix(e.what()));
  } catch (const nlohmann::json::exception& e) {
    throw Error(file + ": " + tracker.path() + ": " + withoutJsonPrefix(e.what()));
  }
}

}  // namespace sf
