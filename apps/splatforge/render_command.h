// `splatforge render INPUT -o OUT.png`, `animate INPUT -o frames/%04d.png|OUT.mp4` and `demo`: a scene (JSON,
// or one splat file, glTF model or character package) drawn by the frame driver (src/frame/) to a PNG, a
// PNG sequence or an MP4. Their options are declared here; main.cpp, the one file that includes CLI11,
// registers them and dispatches the command.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"

namespace CLI {
class App;
}

namespace sf::cli {

// `render INPUT -o OUT.png`: one frame at one scene time.
class RenderCommand {
 public:
  // --strict sets the load policy's.
  RenderCommand(CLI::App& app, LoadPolicyOptions& policy);
  ~RenderCommand();
  RenderCommand(const RenderCommand&) = delete;
  RenderCommand& operator=(const RenderCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, 1 with "splatforge render: error: ..." on stderr, or 2 for a usage error.
  int run() const;

  struct Options {
    std::string input;
    std::string output;  // .png
    std::optional<int> width, height;
    std::string camera;            // camera JSON path, optional
    std::string backend = "auto";  // auto (Vulkan on a GPU, else the CPU renderer), vulkan or cpu
    std::string device;            // Vulkan device index or name substring
    bool validation = false;       // Vulkan validation layers
    std::string background;        // "R,G,B"
    std::string blend_space;       // display or linear (empty: the scene's, else display)
    std::optional<uint64_t>
        lod_budget;  // level-of-detail objects: gaussians a frame draws (empty: the scene's)
    std::optional<uint64_t> lod_pool;  // level-of-detail objects: nodes in memory (empty: the scene's)
    std::string save_float;            // .npy
    std::string save_depth;            // .npy: expected depth (splats and meshes) and transmittance per pixel
    bool antialiased = false;
    bool keep_going =
        false;  // scene JSON: an object that cannot be loaded is a placeholder with a warning, not an error
    bool allow_outside_paths = false;  // scene JSON: object paths may leave the scene's directory
    std::string clip;                  // glTF input: animation name or index (default: the first)
    double time = 0;                   // scene time in seconds, the same for every input
    std::string hull_mode;  // splat hulls: baked or sorted for every hull (empty: each object's own)
    std::string light;      // splat hulls: on or off (empty: the scene's)
    std::string hull_lod;   // splat hulls: K, auto or off for every hull (empty: each object's own)
    std::string live_core;  // live splat hulls: mesh or sorted for every hull (empty: each object's own)
    std::string outline;    // splat hulls outlined from time 0: "all" or object names, comma-separated
    // Samples per pixel of every object's meshes (1, 2, 4, 8 or 16; empty: each object's own, a hull core's
    // 8 and other meshes' 1): SceneObject::mesh_samples.
    std::optional<uint32_t> mesh_samples;
    std::optional<uint32_t> raster_slice;  // Vulkan: entries of a tile's list per raster slice (0: never
                                           // split; empty: the default)
    std::string sh_precision;              // "half" or "full" (empty: half): RenderSettings::half_sh
    std::string raster_precision;          // "half" or "full" (empty: full): RenderSettings::half_raster
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

// `animate`: renders a scene (JSON, or one glTF / splat file) over time to a PNG sequence, or to an MP4
// through ffmpeg, with a progress bar. `hull play` fills these options too.
struct AnimateOptions {
  std::string input;
  std::string output = "frames/%04d.png";  // printf pattern with one integer field, or a .mp4 path
  double fps = 30, duration = 2, start = 0;
  double orbit_deg = 0;  // the camera turns this much about the vertical axis through the scene's centre
  std::optional<int> width, height;
  std::string camera;
  std::string clip;  // glTF input only
  // Animation events the frames cross (scene/clip_events.h): one line each on stdout, or with a path one JSON
  // object a line in that .jsonl file (written when the run succeeds).
  std::string events_out;
  std::string backend = "auto";
  std::string device;
  bool validation = false;
  std::string background;
  std::string blend_space;             // display or linear (empty: the scene's, else display)
  std::optional<uint64_t> lod_budget;  // as for render
  std::optional<uint64_t> lod_pool;    // as for render
  // The background when neither --bg nor the scene gives one, "R,G,B" (empty: the renderer's 0,0,0).
  std::string default_background;
  bool keep_going = false;  // as for render
  bool allow_outside_paths = false;
  std::string hull_mode, light, hull_lod;  // as for render
  std::string live_core;                   // as for render
  std::string outline;                     // as for render
  std::optional<uint32_t> mesh_samples;    // as for render
  std::optional<uint32_t> raster_slice;    // as for render
  std::string sh_precision;                // as for render
  std::string raster_precision;            // as for render
  // Play a hull script (docs/formats/hull-script.md) on every splat hull of the input (`hull play`);
  // `duration` then defaults to the script's when not given, and a hull-only input without a camera is
  // framed on its hulls over the whole clip (autoCameraOverClip).
  std::string hull_script;
  std::optional<uint32_t> seed;
  bool duration_given = true;
  std::string command = "animate";  // how errors name the command (`hull play` runs this one)
};
// Exit code: 0; 1 with "splatforge <o.command>: error: ..." on stderr; 2 for a usage error; 130 when
// interrupted (what it wrote is removed).
int runAnimate(const AnimateOptions& o);

class AnimateCommand {
 public:
  // --strict sets the load policy's.
  AnimateCommand(CLI::App& app, LoadPolicyOptions& policy);
  ~AnimateCommand();
  AnimateCommand(const AnimateCommand&) = delete;
  AnimateCommand& operator=(const AnimateCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  int run() const;

  using Options = AnimateOptions;

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

// `demo`: the built-in procedural demo scene (scene/demo.h) to a PNG.
class DemoCommand {
 public:
  explicit DemoCommand(CLI::App& app);
  ~DemoCommand();
  DemoCommand(const DemoCommand&) = delete;
  DemoCommand& operator=(const DemoCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  int run() const;

  struct Options {
    std::string output = "demo.png";
    int width = kDefaultWidth, height = kDefaultHeight;
    std::string save_float;
    std::string save_depth;
    std::string backend = "auto";
    std::string device;
    bool validation = false;
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
