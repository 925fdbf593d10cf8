// `splatforge character build|bind|preview|gnm-pack|info` and `pose FILE`: splat characters
// (docs/formats/character.md, src/character/), GNM head packs (docs/formats/gnm-pack.md), and a glTF file's
// pose at one time of a clip. Their options are declared here; main.cpp, the one file that includes CLI11,
// registers them and dispatches the command.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace CLI {
class App;
}

namespace sf::cli {

class CharacterCommand {
 public:
  explicit CharacterCommand(CLI::App& app);
  ~CharacterCommand();
  CharacterCommand(const CharacterCommand&) = delete;
  CharacterCommand& operator=(const CharacterCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, 1 with "splatforge character <action>: error: ..." on stderr, or 2 for a usage error.
  int run() const;

  struct Options {
    std::string action;          // build, bind, preview, gnm-pack or info (set by the parser)
    std::string tint = "joint";  // preview: joint, uv, height or normal
    float sigma = 0.002f;        // preview: the gaussians' standard deviation, metres
    std::string pack;            // preview: a GNM pack (instead of --skin); -o is then a splat file
    std::string eyes;            // gnm-pack: "LEFT,RIGHT" eye joint names (empty: the eye-joint name rule)
    std::string from_gltf;       // build: the skinned glTF
    size_t splats = 20000;       // build: gaussians to sample
    uint32_t seed = 1;           // build: sampling seed
    bool train =
        false;  // build: train exactly `splats` gaussians on views of the glTF first (train/trainer.h)
    int train_steps = 6000, train_size = 400, train_views = 200;
    std::string train_backend = "auto";
    std::string splat_file;   // bind: the trained splat PLY (in the skin's bind-pose mesh space)
    std::string skin;         // bind, preview, gnm-pack: the skinned glTF / GLB
    bool per_vertex = false;  // bind: row i of the PLY belongs to vertex i of the skin (the LAM layout)
    float offset_scale = 0;   // bind --per-vertex: centre = vertex + offset_scale * xyz
    bool rgb_colors = false;  // bind: the PLY's f_dc are plain RGB, not SH coefficients
    std::string clips;   // build / bind: a glTF whose animations are retargeted onto the skin by joint name
    std::string output;  // build / bind / preview: package directory; preview --pack: splat file; gnm-pack:
                         // the pack file
    std::string input;   // info: package directory
    bool json = false;   // info
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

// `pose FILE`: a glTF file's pose at one time of one clip: every skin joint's world matrix (every node's when
// the file has no skin) and the bounds of its meshes, morphed and skinned.
class PoseCommand {
 public:
  explicit PoseCommand(CLI::App& app);
  ~PoseCommand();
  PoseCommand(const PoseCommand&) = delete;
  PoseCommand& operator=(const PoseCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  int run() const;

  struct Options {
    std::string input;  // .gltf or .glb
    std::string clip;   // animation name or index; empty: the first animation (rest pose when none)
    double time = 0;    // seconds; clamped to the clip's keys
    bool json = false;
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
