#include "views_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "train/dataset.h"
#include "train/views.h"

namespace sf::cli {

struct ViewsCommand::Options {
  std::string input;
  std::string output;
  std::string belt = fmt::format("{},{}", train::kBeltMin, train::kBeltMax);
  std::string lighting = "ao";
  bool json = false;
  train::ViewsOptions views;
};

namespace {

int fail(const std::string& message) {
  fmt::print(stderr, "splatforge views: error: {}\n", message);
  return 1;
}

// "MIN,MAX" in degrees with -90 <= MIN < MAX <= 90; false otherwise.
bool parseBelt(const std::string& text, float& lo, float& hi) {
  char extra = 0;
  return std::sscanf(text.c_str(), "%f,%f%c", &lo, &hi, &extra) == 2 && lo < hi && lo >= -90 && hi <= 90;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int runViews(ViewsCommand::Options& o) {
  train::ViewsOptions& v = o.views;
  parseBelt(o.belt, v.belt_min, v.belt_max);  // checked by the option's validator
  v.lighting = train::parseLighting(o.lighting);
  if (std::string why = v.validate(); !why.empty()) throw Error(why);
  const auto t0 = std::chrono::steady_clock::now();
  const hull::SourceMesh source = train::loadViewsModel(o.input, v.clip, v.time);
  if (!o.json)
    fmt::print(stderr, "{}: {} triangles, normalised into the {} cube (scale {:.6g}); rendering {} + {} + {} views of {}x{} ({} lighting, {}x{} "
                       "samples per pixel)\n",
               o.input, source.mesh.faces.size(), hull::kSourceCube, source.scale, v.train_count, v.val_count, v.test_count, v.size, v.size,
               train::lightingName(v.lighting), v.supersample, v.supersample);
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
  fmt::print("wrote {}: {} train, {} val, {} test views of {}x{} ({} lighting) in {:.1f} s\n", o.output, ds.train.size(), ds.val.size(),
             ds.test.size(), v.size, v.size, train::lightingName(v.lighting), seconds);
  return 0;
}

}  // namespace

ViewsCommand::ViewsCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  train::ViewsOptions& v = o.views;
  command_ = app.add_subcommand(
      "views",
      "Render a training dataset of a glTF/GLB model: the model posed and normalised into the 1.6 cube, orbit cameras at radius 3.2 (train "
      "views on a golden spiral within an elevation belt, val and test views on rings at fixed elevations), RGBA PNGs in a NeRF-synthetic "
      "folder (transforms_{train,val,test}.json, OpenGL camera-to-world matrices) that other trainers read too. Rendered on the CPU. "
      "See docs/training.md");
  command_->add_option("model", o.input, "glTF / GLB model (static or skinned)")->required();
  command_->add_option("-o,--output", o.output, "Output folder (created; its transforms files are replaced)")->required();
  command_->add_option("--count", v.train_count, "Train views (golden spiral in the belt)")->check(CLI::Range(1, 100000))->capture_default_str();
  command_->add_option("--val", v.val_count, "Validation views (a ring at 30 degrees)")->check(CLI::Range(0, 100000))->capture_default_str();
  command_->add_option("--test", v.test_count, "Test views (rings at 20 and 40 degrees, half each)")->check(CLI::Range(0, 100000))->capture_default_str();
  command_->add_option("--size", v.size, "Image width and height in pixels")->check(CLI::Range(1, 16384))->capture_default_str();
  command_->add_option("--lighting", o.lighting,
                       "flat: the albedo; ao: the albedo under a white dome (ambient occlusion, no sun); cel: the hull article's three cel "
                       "bands from a fixed key light")
      ->check(CLI::IsMember({"flat", "ao", "cel"}))
      ->capture_default_str();
  command_
      ->add_option("--belt", o.belt, "Elevation belt of the train views MIN,MAX in degrees above the horizon (uniform in sin between them)")
      ->check(CLI::Validator(
          [](std::string& text) {
            float lo = 0, hi = 0;
            return parseBelt(text, lo, hi) ? std::string() : "expected MIN,MAX in degrees with -90 <= MIN < MAX <= 90, got '" + text + "'";
          },
          "MIN,MAX"))
      ->capture_default_str();
  command_->add_option("--clip", v.clip, "Pose the model at this animation (name or index; default: the bind pose)");
  command_->add_option("--time", v.time, "Clip time in seconds")->capture_default_str();
  command_->add_option("--supersample", v.supersample, "Samples per pixel along each axis (antialiased colour and alpha)")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  command_->add_option("--ao-rays", v.ao_rays, "ao: occlusion rays per vertex")->check(CLI::Range(1, 4096))->capture_default_str();
  command_->add_option("--seed", v.seed, "Random seed (the occlusion rays)")->capture_default_str();
  command_->add_flag("--json", o.json, "Print a JSON summary to stdout (and no progress on stderr)");
}

ViewsCommand::~ViewsCommand() = default;

bool ViewsCommand::parsed() const { return command_->parsed(); }

int ViewsCommand::run() const {
  try {
    return runViews(*options_);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

}  // namespace sf::cli
