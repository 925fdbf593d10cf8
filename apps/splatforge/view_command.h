// `splatforge view [FILE|SCENE]`: the interactive viewer (src/view/, docs/viewer.md). Its options are
// declared here; main.cpp, the one file that includes CLI11, registers them and dispatches the command.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace sf::cli {

class ViewCommand {
 public:
  // Adds the `view` subcommand and its options to `app`.
  explicit ViewCommand(CLI::App& app);
  ~ViewCommand();
  ViewCommand(const ViewCommand&) = delete;
  ViewCommand& operator=(const ViewCommand&) = delete;

  CLI::App* command() const { return command_; }
  // Whether the command line named `view`.
  bool parsed() const;
  // Runs the viewer; returns the exit code (1 with "splatforge view: error: ..." on stderr for a failure, no
  // display included, and for a build without the viewer).
  int run() const;

 private:
  // What the command line gave (filled by the parser in main.cpp).
  struct Options {
    std::string input, size = "1280x720", camera, script, device, background, clip;
    std::string blend_space;  // display or linear (empty: the scene's, else display)
    bool antialiased = false;
    std::optional<uint64_t> lod_budget, lod_pool;
    std::string lod_cut = "background";  // background or frame
    double time = 0, target_frame_ms = 50;
    bool validation = false, no_vsync = false, strict = false, allow_outside_paths = false, full_res = false;
  };
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
