#include "view/view_script.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "io/file.h"

namespace sf::view {

const char* const kViewerKeys[] = {"f", "space", "r", "h",   "g",      "t",    "u",     "w",
                                   "a", "s",     "d", "q",   "e",      "left", "right", "0",
                                   "1", "2",     "3", "f12", "escape", nullptr};

bool isViewerKey(const std::string& name) {
  for (const char* const* k = kViewerKeys; *k; ++k)
    if (name == *k) return true;
  return false;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

double number(const std::string& word, const std::string& where, const char* what) {
  char* end = nullptr;
  const double v = std::strtod(word.c_str(), &end);
  if (word.empty() || *end != '\0') throw Error(where + ": " + what + " '" + word + "' is not a number");
  if (!std::isfinite(v)) throw Error(where + ": " + what + " must be finite, got '" + word + "'");
  return v;
}

}  // namespace

std::vector<ScriptCommand> parseViewerScript(const std::string& text, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(path).parent_path();
  auto resolve = [&](const std::string& p) {
    return fs::path(p).is_absolute() || dir.empty() ? p : (dir / p).string();
  };
  std::vector<ScriptCommand> out;
  std::istringstream lines(text);
  std::string line;
  int number_of_line = 0;
  while (std::getline(lines, line)) {
    ++number_of_line;
    const std::string where = path + ":" + std::to_string(number_of_line);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.empty() || w[0][0] == '#') continue;
    const std::string name = lower(w[0]);
    auto expect = [&](size_t args, const char* usage) {
      if (w.size() != args + 1)
        throw Error(where + ": '" + name + "' takes " + std::to_string(args) + " argument" +
                    (args == 1 ? "" : "s") + " (" + usage + "), got " + std::to_string(w.size() - 1));
    };
    ScriptCommand c;
    c.line = number_of_line;
    if (name == "camera") {
      expect(1, "camera <camera.json>");
      c.kind = ScriptCommand::Kind::kCamera;
      c.path = resolve(w[1]);
    } else if (name == "orbit") {
      expect(3, "orbit <yaw_deg> <pitch_deg> <distance>");
      c.kind = ScriptCommand::Kind::kOrbit;
      c.values[0] = number(w[1], where, "yaw");
      c.values[1] = number(w[2], where, "pitch");
      c.values[2] = number(w[3], where, "distance");
      if (!(c.values[2] > 0)) throw Error(where + ": orbit distance must be > 0, got " + w[3]);
      if (std::abs(c.values[1]) > 89)
        throw Error(where + ": orbit pitch must be within [-89, 89] degrees, got " + w[2]);
    } else if (name == "key") {
      expect(1, "key <name>");
      c.kind = ScriptCommand::Kind::kKey;
      c.key = lower(w[1]);
      if (!isViewerKey(c.key)) {
        std::string names;
        for (const char* const* k = kViewerKeys; *k; ++k)
          names += (names.empty() ? "" : ", ") + std::string(*k);
        throw Error(where + ": unknown key '" + w[1] + "' (known: " + names + ")");
      }
    } else if (name == "time") {
      expect(1, "time <seconds>");
      c.kind = ScriptCommand::Kind::kTime;
      c.values[0] = number(w[1], where, "time");
    } else if (name == "wait") {
      expect(1, "wait <frames>, or wait settled");
      c.kind = ScriptCommand::Kind::kWait;
      if (lower(w[1]) == "settled") {
        c.key = "settled";
      } else {
        char* end = nullptr;
        c.values[0] = std::strtod(w[1].c_str(), &end);
        if (*end != '\0' || !(c.values[0] >= 0 && c.values[0] <= 1e6) ||
            c.values[0] != std::floor(c.values[0]))
          throw Error(where + ": wait takes a whole number of frames in 0..1000000, or 'settled', got " +
                      w[1]);
      }
    } else if (name == "drop") {
      expect(1, "drop <file>");
      c.kind = ScriptCommand::Kind::kDrop;
      c.path = resolve(w[1]);
    } else if (name == "screenshot" || name == "screenshot-ui") {
      expect(1, "screenshot <file.png>");
      c.kind = ScriptCommand::Kind::kScreenshot;
      c.overlay = name == "screenshot-ui";
      c.path = resolve(w[1]);
      if (fileExtension(c.path) != ".png")
        throw Error(where + ": screenshot " + w[1] + ": expected a .png path");
    } else if (name == "clip") {
      expect(1, "clip <name|index>");
      c.kind = ScriptCommand::Kind::kClip;
      c.key = w[1];
    } else if (name == "expression") {
      // Morph target names may hold spaces ("Key 1"): every word between the command and the weight.
      if (w.size() < 3) expect(2, "expression <morph-target> <weight>");
      c.kind = ScriptCommand::Kind::kExpression;
      for (size_t k = 1; k + 1 < w.size(); ++k) c.key += (k > 1 ? " " : "") + w[k];
      c.values[0] = number(w.back(), where, "weight");
      if (c.values[0] < 0 || c.values[0] > 1)
        throw Error(where + ": expression weight must be in [0, 1], got " + w.back());
    } else if (name == "look-at") {
      c.kind = ScriptCommand::Kind::kLookAt;
      if (w.size() == 2 && lower(w[1]) == "off") {
        c.key = "off";
      } else {
        expect(2, "look-at <x_px> <y_px>, or look-at off");
        c.values[0] = number(w[1], where, "x");
        c.values[1] = number(w[2], where, "y");
      }
    } else if (name == "resize") {
      expect(1, "resize <width>x<height>");
      c.kind = ScriptCommand::Kind::kResize;
      const size_t x = w[1].find_first_of("xX");
      if (x == std::string::npos)
        throw Error(where + ": resize '" + w[1] + "': expected WIDTHxHEIGHT, like 640x480");
      c.values[0] = number(w[1].substr(0, x), where, "width");
      c.values[1] = number(w[1].substr(x + 1), where, "height");
      for (double v : {c.values[0], c.values[1]})
        if (v < 1 || v > 16384 || v != std::floor(v))
          throw Error(where + ": resize '" + w[1] + "': width and height must be whole numbers in 1..16384");
    } else if (name == "save-camera") {
      expect(1, "save-camera <file.json>");
      c.kind = ScriptCommand::Kind::kSaveCamera;
      c.path = resolve(w[1]);
      if (fileExtension(c.path) != ".json")
        throw Error(where + ": save-camera " + w[1] + ": expected a .json path");
    } else if (name == "grid" || name == "upright-flip" || name == "antialiased" || name == "post") {
      expect(1, (name + " on|off").c_str());
      c.kind = name == "grid"           ? ScriptCommand::Kind::kGrid
               : name == "upright-flip" ? ScriptCommand::Kind::kUprightFlip
               : name == "post"         ? ScriptCommand::Kind::kPost
                                        : ScriptCommand::Kind::kAntialiased;
      c.key = lower(w[1]);
      if (c.key != "on" && c.key != "off")
        throw Error(where + ": " + name + " takes on or off, got '" + w[1] + "'");
    } else if (name == "turntable") {
      expect(1, "turntable <degrees_per_second>, or turntable off");
      c.kind = ScriptCommand::Kind::kTurntable;
      if (lower(w[1]) == "off") {
        c.key = "off";
      } else {
        c.values[0] = number(w[1], where, "turntable speed");
        if (std::abs(c.values[0]) > 360)
          throw Error(where + ": turntable speed must be within [-360, 360] degrees per second, got " + w[1]);
      }
    } else if (name == "quit") {
      expect(0, "quit");
      c.kind = ScriptCommand::Kind::kQuit;
    } else {
      throw Error(
          where + ": unknown command '" + w[0] +
          "' (expected camera, orbit, key, time, wait, drop, screenshot, screenshot-ui, save-camera, "
          "resize, grid, turntable, upright-flip, antialiased, post, clip, expression, look-at or quit)");
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<ScriptCommand> loadViewerScript(const std::string& path) {
  const std::vector<uint8_t> bytes = readFile(path);
  return parseViewerScript(std::string(bytes.begin(), bytes.end()), path);
}

}  // namespace sf::view
