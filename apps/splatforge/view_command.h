// `splatforge view [FILE|SCENE]`: the interactive viewer (src/view/, docs/viewer.md). The command declares
// its own options here, so that main.cpp registers it in one line and dispatches it in another.
#pragma once

#include <memory>

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

  // Whether the command line named `view`.
  bool parsed() const;
  // Runs the viewer; returns the exit code (1 with "splatforge view: error: ..." on stderr for a failure, no
  // display included, and for a build without the viewer).
  int run() const;

 private:
  struct Options;
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
