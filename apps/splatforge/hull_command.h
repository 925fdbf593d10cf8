// `splatforge hull bake MODEL`, `hull info FILE`, `hull play FILE --script S` and `hull bench FILE`: bake
// splat hulls from glTF models, inspect SPL2 files, play scripts of hits and effects on them, time live hulls
// (src/hull/, docs/formats/spl2.md). Its options are declared here; main.cpp, the one file that includes
// CLI11, registers them and dispatches the command.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "hull/bake.h"
#include "render_command.h"

namespace CLI {
class App;
}

namespace sf::cli {

// `hull play`'s default background: a dark slate blue-grey that the cel-lit hulls, their white-hot debris and
// sparks read against (pure black swallows the hulls' dark crater floors and cooling debris).
inline constexpr const char* kHullPlayBackground = "0.16,0.19,0.24";

class HullCommand {
 public:
  explicit HullCommand(CLI::App& app);
  ~HullCommand();
  HullCommand(const HullCommand&) = delete;
  HullCommand& operator=(const HullCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, 1 with "splatforge hull <action>: error: ..." on stderr, or 2 for a usage error.
  int run() const;

  // What the command line gave (filled by the parser in main.cpp).
  struct Options {
    std::string input;   // bake: the glTF model; info: the SPL2 file
    std::string output;  // bake: the SPL2 file (the meta sidecar beside it)
    std::string belt = "32,50";
    bool json = false;
    hull::BakeOptions bake;
    AnimateOptions play;                                         // hull play
    int hulls = 200, frames = 120, width = 1920, height = 1080;  // hull bench
    int back_to_back = 0;  // hull bench: also the last frame this many times in one submission
    int submissions =
        1;  // hull bench: that many such submissions in a row (the GPU clock ramps under steady work)
    bool idle = false;
    bool tile_stats = false;               // hull bench: print the spread of the last frame's tile pairs
    std::string json_out;                  // hull bench: also write the results as JSON to this file
    std::string lod = "off";               // hull bench: every hull's runtime LOD (K, auto or off)
    int lod_sweep = 0;                     // hull bench: time the frame at this many budgets K (0: no sweep)
    std::string plot;                      // hull bench --lod-sweep: the chart's PNG
    std::string bench_mode = "live";       // hull bench: live, or static hulls drawn baked / sorted
    std::string bench_effects = "all";     // hull bench: all (every effect on), or none (the hits alone)
    std::string live_core = "sorted";      // hull bench: live hulls' untouched chunks: sorted, mesh or both
    std::optional<uint32_t> mesh_samples;  // hull bench: core meshes' samples per pixel (empty: 8)
    uint32_t seed = 1;
    double duration = 0;  // hull play --duration (play.duration_given says whether it was given)
    // hull bake --train: train the splats in process first (train/trainer.h).
    bool train = false;
    int train_steps = 6000, train_size = 400, train_views = 200;
    float train_entropy = 0.02f;
    std::string train_backend = "auto";
    // Which subcommand ran and what it was given (set by the parser).
    enum class Action { kBake, kInfo, kPlay, kBench } action = Action::kBake;
    bool seed_given = false;
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
