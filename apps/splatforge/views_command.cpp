#include "views_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/error.h"
#include "train/dataset.h"
#include "train/views.h"

namespace sf::cli {

namespace {}  // namespace

bool parseBelt(const std::string& text, float& lo, float& hi) {
  char extra = 0;
  return std::sscanf(text.c_str(), "%f,%f%c", &lo, &hi, &extra) == 2 && lo < hi && lo >= -90 && hi <= 90;
}

namespace {

int runViews(ViewsCommand::Options& o) {
  train::ViewsOptions& v = o.views;
  parseBelt(o.belt, v.belt_min, v.belt_max);  // checked by the option's validator
  v.lighting = train::parseLighting(o.lighting);
  if (std::string why = v.validate(); !why.empty()) throw Error(why);
  const auto t0 = std::chrono::steady_clock::now();
  const hull::SourceMesh source = train::loadViewsModel(o.input, v.clip, v.time);
  if (!o.json)
    fmt::print(stderr,
               "{}: {} triangles, normalised into the {} cube (scale {:.6g}); rendering {} + {} + {} views "
               "of {}x{} ({} lighting, {}x{} "
               "samples per pixel)\n",
               o.input, source.mesh.faces.size(), hull::kSourceCube, source.scale, v.train_count, v.val_count,
               v.test_count, v.size, v.size, train::lightingName(v.lighting), v.supersample, v.supersample);
  const bool tty = isatty(2) != 0;
  size_t last_decile = 0;
  if (!o.json)
    v.progress = [&](size_t done, size_t total) {
      const std::string line = fmt::format("  {}/{} views  {:.1f} s", done, total, secondsSince(t0));
      if (tty) {
        fmt::print(stderr, "\r{}{}", line, done == total ? "\n" : "");
      } else if (done == total || done * 10 / total != last_decile) {
        fmt::print(stderr, "{}\n", line);
        last_decile = done * 10 / total;
      }
    };
  const train::Dataset ds = train::renderViews(source, v);
  train::writeNerfSynthetic(ds, o.output);
  const double seconds = secondsSince(t0);
  if (o.json) {
    nlohmann::json j;
    j["model"] = o.input;
    j["output"] = o.output;
    j["train"] = ds.train.size();
    j["val"] = ds.val.size();
    j["test"] = ds.test.size();
    j["size"] = v.size;
    j["lighting"] = train::lightingName(v.lighting);
    j["belt_deg"] = {v.belt_min, v.belt_max};
    j["val_elevations_deg"] = v.val_elevations;
    j["test_elevations_deg"] = v.test_elevations;
    j["supersample"] = v.supersample;
    j["camera_angle_x"] = train::kCameraAngleX;
    j["orbit_radius"] = train::kOrbitRadius;
    j["triangles"] = source.mesh.faces.size();
    j["scale"] = ds.scale;
    j["offset"] = {ds.offset.x, ds.offset.y, ds.offset.z};
    j["seconds"] = seconds;
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("wrote {}: {} train, {} val, {} test views of {}x{} ({} lighting) in {:.1f} s\n", o.output,
             ds.train.size(), ds.val.size(), ds.test.size(), v.size, v.size, train::lightingName(v.lighting),
             seconds);
  return 0;
}

}  // namespace

ViewsCommand::~ViewsCommand() = default;

int ViewsCommand::run() const {
  try {
    return runViews(*options_);
  } catch (const std::exception& e) {
    return reportFailure("views", e);
  }
}

}  // namespace sf::cli
