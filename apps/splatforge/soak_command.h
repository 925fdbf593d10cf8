// `splatforge soak`: the frame run for many frames with the scene changing under it (src/frame/soak.h), its
// frame time, GPU memory and resident memory over the run as a PNG, JSON and their fitted drift. Its options
// are declared here; main.cpp, the one file that includes CLI11, registers them and dispatches the command.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace sf::cli {

class SoakCommand {
 public:
  explicit SoakCommand(CLI::App& app);
  ~SoakCommand();
  SoakCommand(const SoakCommand&) = delete;
  SoakCommand& operator=(const SoakCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0; 1 with "splatforge soak: error: ..." on stderr (a frame failed, or --max-drift was passed).
  int run() const;

  // What the command line gave (filled by the parser in main.cpp).
  struct Options {
    std::vector<std::string> inputs;  // empty: the default set from the assets directory
    std::string assets;
    int frames = 1000;
    int width = 640, height = 360;
    int resize_every = 250, sample_every = 10;
    int warmup = 30;  // first frames with every input in the scene
    std::string backend = "auto", device;
    bool validation = false;
    std::string plot, json_out;
    std::string background;  // "R,G,B"
    bool json = false;
    double max_drift_mb = -1;  // > 0: fail when GPU or resident memory drifts more per 1,000 frames
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
