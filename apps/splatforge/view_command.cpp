// `splatforge view`: options and the call into the viewer. CLI11 is included here as in main.cpp (this
// command declares its own options so that main.cpp only registers and dispatches it).
#include "view_command.h"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/limits.h"
#include "core/math.h"

#if SPLATFORGE_HAS_VIEWER
#include "view/viewer.h"
#endif

namespace sf::cli {

struct ViewCommand::Options {
  std::string input, size = "1280x720", camera, script, device, background, clip;
  double time = 0;
  bool validation = false, no_vsync = false, strict = false, allow_outside_paths = false;
};

namespace {

// "WxH" -> width, height in 1..16384.
void parseSize(const std::string& text, int* width, int* height) {
  const size_t x = text.find_first_of("xX");
  char* end = nullptr;
  const long w = x == std::string::npos ? 0 : std::strtol(text.c_str(), &end, 10);
  const bool w_ok = x != std::string::npos && end == text.c_str() + x;
  const long h = w_ok ? std::strtol(text.c_str() + x + 1, &end, 10) : 0;
  if (!w_ok || *end != '\0' || x + 1 == text.size() || w < 1 || h < 1 || w > 16384 || h > 16384)
    throw Error("--size '" + text + "': expected WIDTHxHEIGHT with each in 1..16384, like 1280x720");
  *width = static_cast<int>(w), *height = static_cast<int>(h);
}

Vec3 parseBackground(const std::string& text) {
  Vec3 c;
  const char* p = text.c_str();
  for (int k = 0; k < 3; ++k) {
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    if (end == p || !std::isfinite(v) || v < 0 || v > 1 || (k < 2 && *end != ',') || (k == 2 && *end != '\0'))
      throw Error("--bg '" + text + "': expected three numbers in [0, 1] separated by commas, like 1,1,1");
    c[k] = static_cast<float>(v);
    p = end + 1;
  }
  return c;
}

}  // namespace

ViewCommand::ViewCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand(
      "view",
      "Open a window on a splat file, glTF model, character package or scene JSON (orbit/fly camera, "
      "timeline, character controls, screenshots; docs/viewer.md)");
  command_->add_option("input", o.input,
                       "Splat file, glTF model, character package or scene .json (default: drop one on the window)");
  command_->add_option("--size", o.size, "Window size WIDTHxHEIGHT")->capture_default_str();
  command_->add_option("--camera", o.camera, "Camera JSON for the first view (as render --camera)");
  command_->add_option("--script", o.script,
                       "Run a script of viewer commands, one a line: camera, orbit, key, time, wait, drop, screenshot, "
                       "screenshot-ui, clip, "
                       "expression, look-at, quit (docs/viewer.md)");
  command_->add_option("--device", o.device, "Vulkan device: index or part of its name");
  command_->add_flag("--validation", o.validation, "Enable Vulkan validation layers");
  command_->add_flag("--no-vsync", o.no_vsync,
                     "Present without waiting for vertical blank (mailbox or immediate), to measure frame rates");
  command_->add_option("--bg", o.background, "Background colour R,G,B in [0, 1] (default: the scene's, else 0,0,0)");
  command_->add_option("--clip", o.clip, "glTF / character input: animation name or index (default: the first)");
  command_->add_option("--time", o.time, "glTF / character input: seconds into the clip")->capture_default_str();
  command_->add_flag("--strict", o.strict,
                     "Fail when a scene object cannot be loaded instead of drawing a placeholder, and refuse files "
                     "holding NaN or infinite "
                     "values instead of dropping those gaussians");
  command_->add_flag(
      "--allow-outside-paths", o.allow_outside_paths,
      "Scene JSON: let object paths be absolute or leave the scene's directory (only for scenes you trust)");
}

ViewCommand::~ViewCommand() = default;

bool ViewCommand::parsed() const {
  return command_->parsed();
}

int ViewCommand::run() const {
  const Options& o = *options_;
  try {
    // The arguments are checked the same way with or without the viewer.
    int width = 0, height = 0;
    parseSize(o.size, &width, &height);
    std::optional<Vec3> background;
    if (!o.background.empty()) background = parseBackground(o.background);
    if (!std::isfinite(o.time)) throw Error("--time must be a finite number of seconds");
#if SPLATFORGE_HAS_VIEWER
    view::ViewerOptions v;
    v.input = o.input;
    v.width = width, v.height = height;
    v.camera = o.camera;
    v.script = o.script;
    v.device = o.device;
    v.validation = o.validation;
    v.vsync = !o.no_vsync;
    v.background = background;
    v.clip = o.clip;
    v.time = o.time;
    v.strict = o.strict;
    v.allow_outside_paths = o.allow_outside_paths;
    if (o.strict) {
      LoadLimits limits = loadLimits();
      limits.reject_non_finite = true;
      setLoadLimits(limits);
    }
    return view::runViewer(v);
#else
    (void)width, (void)height, (void)background;
    throw Error(
        "this splatforge was built without the viewer: GLFW 3 and Dear ImGui were not found when it was configured "
        "(Debian: libglfw3-dev libimgui-dev; see docs/viewer.md)");
#endif
  } catch (const std::exception& e) {
    fmt::print(stderr, "splatforge view: error: {}\n", e.what());
    return 1;
  }
}

}  // namespace sf::cli
