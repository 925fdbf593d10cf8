// `splatforge train`: budgeted gaussian training from a mesh or a dataset (src/train/trainer.h). Declared here so that
// main.cpp registers the command in one line and dispatches it in another, as for `hull`.
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
// when a device can train, else the CPU, saying why on stderr). A Vulkan renderer it needs is kept in `holder`.
train::TrainFunction trainerFor(const std::string& backend, const std::string& device, std::unique_ptr<VulkanRenderer>& holder);

class TrainCommand {
 public:
  explicit TrainCommand(CLI::App& app);
  ~TrainCommand();
  TrainCommand(const TrainCommand&) = delete;
  TrainCommand& operator=(const TrainCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, or 1 with "splatforge train: error: ..." on stderr.
  int run() const;

  struct Options;

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
