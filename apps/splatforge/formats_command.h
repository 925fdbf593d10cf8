// `splatforge info FILE`, `validate FILE` and `convert IN -o OUT`: describe, check and convert splat files
// (src/io/, docs/formats/). Their options are declared here; main.cpp, the one file that includes CLI11,
// registers them and dispatches the command.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"

namespace CLI {
class App;
}

namespace sf::cli {

// `info FILE`: a splat file's count, SH degree, format, bounds and memory.
class InfoCommand {
 public:
  // --strict sets the load policy's.
  InfoCommand(CLI::App& app, LoadPolicyOptions& policy);
  ~InfoCommand();
  InfoCommand(const InfoCommand&) = delete;
  InfoCommand& operator=(const InfoCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, or 1 with "splatforge info: error: ..." on stderr.
  int run() const;

  struct Options {
    std::string input;
    bool json = false;
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

// `validate FILE`: what is wrong or doubtful in a splat file (non-finite rows, degenerate scales, opacity and
// SH ranges, the frame it declares, the overdraw a default camera would see). Exit 0 when it holds no
// problem, 1 when it does (each one named), so a pipeline can gate on it.
class ValidateCommand {
 public:
  explicit ValidateCommand(CLI::App& app);
  ~ValidateCommand();
  ValidateCommand(const ValidateCommand&) = delete;
  ValidateCommand& operator=(const ValidateCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  int run() const;

  struct Options {
    std::string input;
    bool json = false;
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

// `convert IN -o OUT`: between splat formats (by extension), transformed and filtered on the way.
class ConvertCommand {
 public:
  // --strict and --spz-version set the load policy's; run() reads its strictness.
  ConvertCommand(CLI::App& app, LoadPolicyOptions& policy);
  ~ConvertCommand();
  ConvertCommand(const ConvertCommand&) = delete;
  ConvertCommand& operator=(const ConvertCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, 1 with "splatforge convert: error: ..." on stderr, or 2 for a usage error.
  int run() const;

  struct Options {
    std::string input, output;
    std::string output_positional;  // the older form: convert IN OUT
    bool strict = false;            // set from the load policy: refuse lossy conversions too
    bool overwrite = false;         // replace an existing output (the input never)
    // Transforms and filters, applied in this order (the help says so): flips, rotation, scale, translation,
    // then the box and opacity filters.
    std::vector<std::string> flip;  // x, y or z per --flip
    std::string rotate;             // "X,Y,Z" degrees about x, then y, then z
    std::optional<float> scale;
    std::string translate;  // "X,Y,Z"
    std::string box;        // "MINX,MINY,MINZ,MAXX,MAXY,MAXZ": keep centres inside
    std::optional<float> min_opacity;
  };

 private:
  std::unique_ptr<Options> options_;
  const LoadPolicyOptions* policy_ = nullptr;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
