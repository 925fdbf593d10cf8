// `splatforge hull bake MODEL`, `hull info FILE`, `hull play FILE --script S` and `hull bench FILE`: bake splat
// hulls from glTF models, inspect SPL2 files, play scripts of hits and effects on them, time live hulls (src/hull/, docs/formats/spl2.md). Declared here so that main.cpp registers the
// command in one line and dispatches it in another, as for `view`.
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace sf::cli {

class HullCommand {
 public:
  explicit HullCommand(CLI::App& app);
  ~HullCommand();
  HullCommand(const HullCommand&) = delete;
  HullCommand& operator=(const HullCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, or 1 with "splatforge hull: error: ..." on stderr.
  int run() const;

  struct Options;

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
  CLI::App* info_ = nullptr;
  CLI::App* bake_ = nullptr;
  CLI::App* play_ = nullptr;
  CLI::App* bench_ = nullptr;
};

}  // namespace sf::cli
