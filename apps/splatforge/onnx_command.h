// `splatforge onnx info MODEL` and `splatforge onnx run MODEL`: inspect and run ONNX models with the
// neural layer's CPU executor (src/neural/, docs/neural.md). Its options are declared here; main.cpp,
// the one file that includes CLI11, registers them and dispatches the command.
#pragma once

#include <memory>
#include <string>

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
  // Exit code: 0, 1 with "splatforge onnx <action>: error: ..." on stderr, or 2 for a usage error.
  int run() const;

  // What the command line gave (filled by the parser in main.cpp).
  struct Options {
    std::string model;
    bool info = false;  // `onnx info` (else `onnx run`)
    bool json = false;
    // run
    std::string inputs;           // JSON file: name -> number, array, or {"type", "shape", "data"}
    double time = 0;              // generators: the time input
    std::string camera;           // generators: camera JSON (default: at the origin looking along +z)
    std::string output_dir;       // one .npy per output
    std::string save_splats;      // generators: the decoded gaussians as a splat file
    std::string backend = "cpu";  // cpu, vulkan or auto
    std::string device;           // Vulkan device by index or name
    int repeat = 1;               // runs to time (the median is reported)
    bool back_to_back = false;    // Vulkan: the repeats in one submission
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
