// `splatforge view`: the options checked and the call into the viewer (main.cpp registers the options).
#include "view_command.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "commands.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/math.h"
#include "render/cpu_renderer.h"

#if SPLATFORGE_HAS_VIEWER
#include "view/viewer.h"
#endif

namespace sf::cli {

namespace {

// "WxH" -> width, height in 1..16384.
void parseSize(const std::string& text, int* width, int* height) {
  const size_t x = text.find_first_of("xX");
  char* end = nullptr;
  const long w = x == std::string::npos ? 0 : std::strtol(text.c_str(), &end, 10);
  const bool w_ok = x != std::string::npos && end == text.c_str() + x;
  const long h = w_ok ? std::strtol(text.c_str() + x + 1, &end, 10) : 0;
  if (!w_ok || *end != '\0' || x + 1 == text.size() || w < 1 || h < 1 || w > 16384 || h > 16384)
    throw UsageError("--size '" + text + "': expected WIDTHxHEIGHT with each in 1..16384, like 1280x720");
  *width = static_cast<int>(w), *height = static_cast<int>(h);
}

}  // namespace

ViewCommand::~ViewCommand() = default;

int ViewCommand::run() const {
  const Options& o = *options_;
  try {
    // The arguments are checked the same way with or without the viewer.
    int width = 0, height = 0;
    parseSize(o.size, &width, &height);
    std::optional<Vec3> background;
    if (!o.background.empty()) background = parseColor(o.background);
    if (!std::isfinite(o.time)) throw Error("--time must be a finite number of seconds");
    if (!(o.target_frame_ms > 0 && o.target_frame_ms <= 10000))
      throw UsageError(
          fmt::format("--target-frame-ms {}: expected milliseconds in (0, 10000]", o.target_frame_ms));
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
    if (!o.blend_space.empty()) v.blend_space = parseBlendSpace(o.blend_space);
    v.antialiased = o.antialiased;
    v.lod_budget = o.lod_budget;
    v.lod_pool = o.lod_pool;
    v.lod_cut_background = o.lod_cut == "background";
    v.clip = o.clip;
    v.time = o.time;
    v.strict = o.strict;
    v.allow_outside_paths = o.allow_outside_paths;
    v.full_res = o.full_res;
    v.target_frame_ms = o.target_frame_ms;
    if (o.strict) {
      LoadLimits limits = loadLimits();
      limits.reject_non_finite = true;
      setLoadLimits(limits);
    }
    return view::runViewer(v);
#else
    (void)width, (void)height, (void)background;
    throw Error(
        "this splatforge was built without the viewer: GLFW 3 and Dear ImGui were not found when it was "
        "configured "
        "(Debian: libglfw3-dev libimgui-dev; see docs/viewer.md)");
#endif
  } catch (const std::exception& e) {
    return reportFailure("view", e);
  }
}

}  // namespace sf::cli
