#include "soak_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "character/character.h"
#include "commands.h"
#include "core/error.h"
#include "frame/soak.h"
#include "hull/bake.h"
#include "hull/meta.h"
#include "io/file.h"
#include "io/image_io.h"
#include "io/spl2.h"
#include "model/gltf_model.h"

namespace sf::cli {

namespace {

namespace fs = std::filesystem;

// Each input's period: present while (frame / period) is odd; the first input stays.
constexpr int kPeriods[] = {0, 10, 7, 13, 17, 23, 29, 31};

Scene loadInput(const std::string& path) {
  if (fs::path(path).extension() == ".json") {
    SceneLoadOptions options;
    options.strict = true;
    return loadSceneJson(path, options);
  }
  return sceneFromFile(path);
}

// A hull script of hits and heals every few seconds over `seconds` (the soak's scene time): the hull is hit
// from every side and heals, over and over.
std::string hitAndHealScript(double seconds) {
  nlohmann::json events = nlohmann::json::array();
  const char* kinds[] = {"shot", "blast", "melee", "pierce"};
  int k = 0;
  for (double t = 0.5; t < seconds; t += 3.0, ++k) {
    const double a = 2.399963 * k;  // the golden angle: directions all round the hull
    events.push_back({{"time", t},
                      {"hit", kinds[k % 4]},
                      {"direction", {std::cos(a), -0.2, std::sin(a)}},
                      {"damage", 40}});
    events.push_back({{"time", t + 1.5}, {"heal", 1}});
  }
  return nlohmann::json{{"events", events}, {"seed", 7}}.dump(1);
}

// The default set: captures (one always there, one coming and going), a skinned glTF model, a splat
// character made here from the model, and a hull baked here from it, playing a script of hits and heals (a
// scene JSON in `work`).
std::vector<std::pair<std::string, Scene>> defaultInputs(const std::string& assets, const std::string& work,
                                                         double seconds) {
  const std::string spz = assets + "/splats/biker.spz", ply = assets + "/splats/biker.ply",
                    man = assets + "/gltf/cesium_man.gltf";
  for (const std::string& p : {spz, ply, man})
    if (!fs::exists(p))
      throw Error(p +
                  ": the soak's default inputs are missing: give --assets DIR or set SPLATFORGE_ASSETS, or "
                  "name the inputs");
  hull::BakeOptions bake;
  hull::BakeResult baked = hull::bakeHull(man, bake);
  const std::string hull_path = work + "/man.spl2", script_path = work + "/hits.json",
                    scene_path = work + "/hull.json";
  saveSpl2(baked.hull, hull_path);
  writeFileAtomic(hull::hullMetaPath(hull_path),
                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(baked.meta_json.data()),
                                           baked.meta_json.size()));
  auto text = [](const std::string& s) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  writeFileAtomic(script_path, text(hitAndHealScript(seconds)));
  writeFileAtomic(
      scene_path,
      text(nlohmann::json{{"objects", {{{"hull", "man.spl2"}, {"script", "hits.json"}}}}}.dump()));
  const std::string character = work + "/man_character";
  character::Character::fromGltf(std::make_shared<GltfModel>(man), 20000).savePackage(character);
  return {{spz, loadInput(spz)},
          {ply, loadInput(ply)},
          {man, loadInput(man)},
          {"a splat character of " + man, loadInput(character)},
          {"a hull of " + man + " hit and healed", loadInput(scene_path)}};
}

nlohmann::json reportJson(const SoakReport& r, const std::string& device,
                          const std::vector<std::string>& inputs) {
  nlohmann::json samples = nlohmann::json::array();
  for (const SoakSample& s : r.samples)
    samples.push_back({{"frame", s.frame},
                       {"frame_ms", s.frame_ms},
                       {"gpu_bytes", s.gpu_bytes},
                       {"rss_bytes", s.rss_bytes},
                       {"objects", s.objects},
                       {"splats", s.splats},
                       {"width", s.width},
                       {"height", s.height}});
  return {{"device", device},
          {"inputs", inputs},
          {"frames", r.frames},
          {"seconds", r.seconds},
          {"gpu_slope_bytes_per_kframe", r.gpu_slope_per_kframe},
          {"rss_slope_bytes_per_kframe", r.rss_slope_per_kframe},
          {"frame_ms_slope_per_kframe", r.frame_ms_slope_per_kframe},
          {"early_frame_ms", r.early_ms},
          {"late_frame_ms", r.late_ms},
          {"gpu_peak_bytes", r.gpu_peak_bytes},
          {"gpu_peak_at_half_bytes", r.gpu_peak_at_half},
          {"rss_at_half_bytes", r.rss_at_half},
          {"rss_end_bytes", r.rss_end},
          {"validation_errors", r.validation_errors},
          {"samples", samples}};
}

int runSoakCommand(const SoakCommand::Options& o) {
  // The outputs are checked before the run: a typo must not throw away thousands of frames.
  if (!o.plot.empty()) {
    if (fileExtension(o.plot) != ".png") throw UsageError("--plot " + o.plot + ": expected a .png path");
    checkWritableTarget(o.plot, "--plot");
  }
  if (!o.json_out.empty()) checkWritableTarget(o.json_out, "--json-out");
  // A temporary folder for the default set's baked hull and its script, removed at the end.
  std::string work;
  struct Cleanup {
    std::string* dir;
    ~Cleanup() {
      std::error_code ec;
      if (!dir->empty()) fs::remove_all(*dir, ec);
    }
  } cleanup{&work};
  std::vector<std::pair<std::string, Scene>> loaded;
  const double seconds = o.frames / 30.0;
  if (o.inputs.empty()) {
    work =
        (fs::temp_directory_path() / fmt::format("splatforge-soak-{}-{}", getpid(), std::random_device{}()))
            .string();
    fs::create_directories(work);
    loaded = defaultInputs(o.assets.empty() ? defaultAssetsDir() : o.assets, work, seconds);
  } else {
    for (const std::string& path : o.inputs) loaded.push_back({path, loadInput(path)});
  }
  for (const auto& [name, scene] : loaded)
    if (!scene.script.empty() || scene.post)
      throw Error(name +
                  ": a scene with a character script or a post model is not a soak input (the soak draws "
                  "each input's "
                  "objects on their period; give the objects themselves)");
  // Side by side along x, each input's box after the last one's, with a fifth of the widest box between.
  std::vector<SoakInput> inputs;
  std::vector<std::string> names;
  std::vector<CloudBounds> bounds;  // each input's, posed once
  float x = 0, gap = 0;
  for (const auto& [name, scene] : loaded) {
    bounds.push_back(sceneBounds(scene));
    gap = std::max(gap, 0.2f * (bounds.back().p99.x - bounds.back().p01.x));
  }
  for (size_t k = 0; k < loaded.size(); ++k) {
    const CloudBounds& b = bounds[k];
    SoakInput in{loaded[k].first, loaded[k].second, kPeriods[k % std::size(kPeriods)], {x - b.p01.x, 0, 0}};
    x += (b.p99.x - b.p01.x) + gap;
    inputs.push_back(std::move(in));
    names.push_back(loaded[k].first);
  }
  FrameDriverOptions fo;
  fo.backend = parseBackend(o.backend);
  fo.device = o.device;
  fo.validation = o.validation;
  fo.replace_lost_device = false;  // a lost device ends the run with its error
  FrameDriver driver(fo);
  if (!o.json) {
    fmt::print(stderr, "soak: {} frames of {}x{} on {}; inputs:\n", o.frames, o.width, o.height,
               driver.describe());
    for (const SoakInput& in : inputs)
      fmt::print(
          stderr, "  {} ({})\n", in.name,
          in.period ? fmt::format("in the frame {} frames of every {}", in.period, 2 * in.period) : "always");
  }
  SoakOptions so;
  so.frames = o.frames;
  so.width = o.width, so.height = o.height;
  so.resize_every = o.resize_every, so.sample_every = o.sample_every;
  so.warmup = o.warmup;
  if (!o.background.empty()) so.settings.background = parseColor(o.background);
  const bool tty = isatty(2) != 0;
  int last_tenth = -1;
  auto progress = [&](const SoakSample& s) {
    if (o.json) return;
    const int tenth = s.frame * 10 / o.frames;
    const std::string line =
        fmt::format("  frame {}/{}: {:.2f} ms, GPU {:.1f} MB, resident {:.1f} MB, {} objects", s.frame + 1,
                    o.frames, s.frame_ms, static_cast<double>(s.gpu_bytes) / 1e6,
                    static_cast<double>(s.rss_bytes) / 1e6, s.objects);
    if (tty)
      fmt::print(stderr, "\r{}   ", line);
    else if (tenth != last_tenth)
      fmt::print(stderr, "{}\n", line);
    last_tenth = tenth;
  };
  const SoakReport r = runSoak(driver, std::move(inputs), so, progress);
  if (tty && !o.json) fmt::print(stderr, "\n");
  const nlohmann::json j = reportJson(r, driver.describe(), names);
  if (!o.json_out.empty()) {
    const std::string text = j.dump(1) + "\n";
    writeFileAtomic(o.json_out,
                    std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  }
  if (!o.plot.empty()) writePng(o.plot, plotSoak(r));
  if (o.json)
    fmt::print("{}\n", j.dump(1));
  else
    fmt::print(
        "soak: {} frames in {:.1f} s; frame {:.2f} -> {:.2f} ms (median, second and last tenth); over the "
        "second half GPU memory "
        "{:+.3f} MB and resident memory {:+.3f} MB per 1000 frames (GPU peak {:.1f} MB, {:.1f} at half-way); "
        "validation errors {}{}\n",
        r.frames, r.seconds, r.early_ms, r.late_ms, r.gpu_slope_per_kframe / 1e6,
        r.rss_slope_per_kframe / 1e6, static_cast<double>(r.gpu_peak_bytes) / 1e6,
        static_cast<double>(r.gpu_peak_at_half) / 1e6, r.validation_errors,
        o.plot.empty() ? "" : "; plot " + o.plot);
  if (o.max_drift_mb > 0) {
    const double worst = std::max(std::abs(r.gpu_slope_per_kframe), std::abs(r.rss_slope_per_kframe)) / 1e6;
    if (worst > o.max_drift_mb)
      throw Error(fmt::format("memory drifts {:.3f} MB per 1000 frames, more than --max-drift {}", worst,
                              o.max_drift_mb));
  }
  return 0;
}

}  // namespace

SoakCommand::~SoakCommand() = default;

int SoakCommand::run() const {
  try {
    return runSoakCommand(*options_);
  } catch (const std::exception& e) {
    return reportFailure("soak", e);
  }
}

}  // namespace sf::cli
