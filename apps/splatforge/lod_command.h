// `splatforge lod build IN.ply -o DIR`, `lod info DIR` and `lod cut DIR --budget N -o cut.ply`: the offline
// level-of-detail hierarchy (src/lod/, docs/lod.md, docs/formats/lod.md): built from any splat file (a
// binary PLY streamed out of core, other formats decoded whole),
// described, and cut for one camera under a budget of gaussians. Its options are declared here; main.cpp,
// the one file that includes CLI11, registers them and dispatches the command.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace sf::cli {

class LodCommand {
 public:
  explicit LodCommand(CLI::App& app);
  ~LodCommand();
  LodCommand(const LodCommand&) = delete;
  LodCommand& operator=(const LodCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, 1 with "splatforge lod <action>: error: ..." on stderr, or 2 for a usage error.
  int run() const;

  // What the command line gave (filled by the parser in main.cpp).
  struct Options {
    enum class Action { kBuild, kInfo, kCut } action = Action::kBuild;
    std::string input;   // build: the splat file; info, cut: the hierarchy's directory
    std::string output;  // build: the directory; cut: the splat file
    uint32_t fanout = 8;
    uint64_t chunk_size = 32768;
    uint64_t memory_mb = 1024;
    std::string scratch;
    bool json = false;
    bool verify = false;  // info: read and check every chunk
    uint64_t budget = 0;  // cut
    float threshold = 0;  // cut: screen-space error (pixels) below which nodes are not refined
    std::string camera, camera_out;
    std::optional<int> width, height;
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
