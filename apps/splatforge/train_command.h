// `splatforge train`: budgeted gaussian training from a mesh or a dataset (src/train/trainer.h). Declared here so that
// main.cpp registers the command in one line and dispatches it in another, as for `hull`.
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace sf::cli {

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
