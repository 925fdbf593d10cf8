// `splatforge train`: budgeted gaussian training from a mesh or a dataset (src/train/trainer.h), and the plot
// of a training log (src/train/plot.h). Its options are declared here; main.cpp, the one file that includes
// CLI11, registers them and dispatches the command.
#pragma once

#include <memory>
#include <string>

#include "train/trainer.h"

namespace CLI {
class App;
}

namespace sf {
class VulkanRenderer;
}

namespace sf::cli {

// The trainer for a --backend choice: "cpu", "vulkan" (an error when no device can train), or "auto" (Vulkan
// when a device can train, else the CPU, saying why on stderr). A Vulkan renderer it needs is kept in
// `holder`.
train::TrainFunction trainerFor(const std::string& backend, const std::string& device,
                                std::unique_ptr<VulkanRenderer>& holder);

class TrainCommand {
 public:
  explicit TrainCommand(CLI::App& app);
  ~TrainCommand();
  TrainCommand(const TrainCommand&) = delete;
  TrainCommand& operator=(const TrainCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, 1 with "splatforge train: error: ..." on stderr, or 2 for a usage error.
  int run() const;

  // What the command line gave (filled by the parser in main.cpp).
  struct Options {
    std::string mesh, dataset, output, log, lighting = "ao", clip;
    std::string plot;        // --plot LOG: draw the plot of an existing log instead of training
    std::string val_images;  // --val-images DIR: a sheet of renders beside the ground truth per validation
    float time = 0;
    size_t budget = 6000;
    int steps = 6000, size = 400, views = 200;
    int log_every = 0, val_every = 0;  // log_every 0: 100, or the largest divisor of val_every up to 100;
                                       // val_every 0: validation at the start and the end only
    uint32_t seed = 1;
    float entropy = 0;
    int steps_per_submission = train::kMaxStepsPerSubmission;  // Vulkan: steps recorded in one submission
    bool black_background = false, json = false;
    std::string backend = "auto", device;
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
