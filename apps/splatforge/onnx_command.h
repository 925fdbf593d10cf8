// `splatforge onnx info MODEL` and `splatforge onnx run MODEL`: inspect and run ONNX models with the
// neural layer's CPU executor (src/neural/, docs/neural.md). Declared here so that main.cpp registers the
// command in one line and dispatches it in another, as for `view`.
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace sf::cli {

class OnnxCommand {
 public:
  explicit OnnxCommand(CLI::App& app);
  ~OnnxCommand();
  OnnxCommand(const OnnxCommand&) = delete;
  OnnxCommand& operator=(const OnnxCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, or 1 with "splatforge onnx: error: ..." on stderr.
  int run() const;

  struct Options;

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
  CLI::App* info_ = nullptr;
  CLI::App* run_ = nullptr;
};

}  // namespace sf::cli
