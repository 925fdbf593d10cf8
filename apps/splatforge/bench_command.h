// `splatforge bench [INPUT]`, `bench-skin FILE`, `bench-characters PACKAGE` and `devices`: time the frame
// (per-pass GPU times, the CPU renderer's stages, file loads), GPU skinning and character crowds, and list
// the Vulkan devices they run on. Their options are declared here; main.cpp, the one file that includes
// CLI11, registers them and dispatches the command.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"

namespace CLI {
class App;
}

namespace sf::cli {

// `bench`: a splat file, scene or neural generator rendered frame after frame; median pass times.
class BenchCommand {
 public:
  explicit BenchCommand(CLI::App& app);
  ~BenchCommand();
  BenchCommand(const BenchCommand&) = delete;
  BenchCommand& operator=(const BenchCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, 1 with "splatforge bench: error: ..." on stderr, or 2 for a usage error.
  int run() const;

  struct Options {
    std::string input;     // splat file or scene; empty: the biker capture from the assets directory
    std::string assets;    // directory holding splats/biker.*; default $SPLATFORGE_ASSETS or ../shared/assets
    size_t synthetic = 0;  // > 0: a synthetic capture-like cloud of this many gaussians instead of INPUT
    int copies = 1;        // tiled copies of the input, each its own object
    int sh_degree = -1;    // raise the SH degree to this (random small coefficients)
    std::string backend = "auto";
    std::string device;
    bool validation = false;
    int width = kDefaultWidth, height = kDefaultHeight;
    bool width_given = false,
         height_given = false;  // given on the command line: they override a --camera file's size
    std::string camera;         // camera JSON (as render --camera); default: framed automatically
    std::string save_scene;  // write the benchmarked scene as one world-space splat file (.ply/.spz/.splat)
    bool show_graph =
        false;             // print the frame's passes, their reads and writes, and the barriers between them
    int frames = 10;       // timed frames (median reported) after one warm-up frame
    int back_to_back = 0;  // Vulkan: also this many frames (1..64) in one submission, their medians reported
    std::optional<uint32_t> raster_slice;  // Vulkan: entries of a tile's list per raster slice (0: never
                                           // split; empty: the default)
    std::string sh_precision;              // "half" or "full" (empty: half): RenderSettings::half_sh
    std::string raster_precision;          // "half" or "full" (empty: full): RenderSettings::half_raster
    bool raster_counts = false;            // RenderSettings::count_raster
    bool shader_stats = false;             // gpu::ContextOptions::shader_statistics, printed
    std::string tile_binning;  // Vulkan: "partitioned", "per-pair" or "aggregated" (empty: the device's
                               // default; VulkanRenderer::setTileBinning)
    bool loads = false;        // also measure load throughput of the biker PLY, compressed PLY and SPZ
    bool json = false;         // print the results as JSON to stdout (the human-readable lines go to stderr)
    std::string json_out;      // write the results as JSON to this file
    bool allow_outside_paths = false;  // scene JSON input
    bool lod = false;  // a fly-through of the input's level-of-detail objects, per-frame figures
    std::optional<uint64_t> lod_budget;  // --lod: gaussians a frame draws (default: the scene's)
    std::optional<uint64_t> lod_pool;    // nodes each LOD object keeps in memory (default: the scene's)
    std::string plot;                    // --lod: the per-frame curves as a PNG
    std::string lod_cut = "background";  // --lod: background (lod/cut_worker.h) or frame
    // --lod: also draw every frame's camera with every visible leaf (the full-resolution reference) and
    // report each frame's PSNR against it and the change between consecutive frames with and without LOD.
    bool lod_reference = false;
    // --lod: every frame waits for the chunks its cut wants (the same cuts every run: the host's cut compared
    // between builds).
    bool lod_settle = false;
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

// `bench-skin FILE`: a crowd of GPU-skinned instances of an animated glTF mesh.
class BenchSkinCommand {
 public:
  explicit BenchSkinCommand(CLI::App& app);
  ~BenchSkinCommand();
  BenchSkinCommand(const BenchSkinCommand&) = delete;
  BenchSkinCommand& operator=(const BenchSkinCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  int run() const;

  struct Options {
    std::string input;           // glTF / GLB with a skin and an animation
    size_t instances = 1000;     // animated instances, each at its own phase of the clip
    int frames = 20;             // timed frames (median reported) after one warm-up frame
    std::string method = "lbs";  // lbs or dqs
    std::string device;
    bool validation = false;
    bool json = false;     // results as JSON on stdout
    std::string json_out;  // results as JSON in this file
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

// `bench-characters PACKAGE`: a crowd of one character package animated (clip, or expressions and look-at
// when it has no clip) and rendered on Vulkan with the GPU deform pass; median GPU frame time and CPU pose
// time. A decoder character bundle is timed per branch.
class BenchCharactersCommand {
 public:
  explicit BenchCharactersCommand(CLI::App& app);
  ~BenchCharactersCommand();
  BenchCharactersCommand(const BenchCharactersCommand&) = delete;
  BenchCharactersCommand& operator=(const BenchCharactersCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  int run() const;

  struct Options {
    std::string package;
    size_t count = 1;
    int width = kDefaultWidth, height = kDefaultHeight;
    int frames = 20;
    std::string device;
    bool validation = false;
    bool json = false;     // results as JSON on stdout
    std::string json_out;  // results as JSON in this file
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

// `devices`: the Vulkan loader, every device with its driver and version, and the instance layers. Exit code
// 1 when there is no loader or no device (the message says what to install).
class DevicesCommand {
 public:
  explicit DevicesCommand(CLI::App& app);
  ~DevicesCommand();
  DevicesCommand(const DevicesCommand&) = delete;
  DevicesCommand& operator=(const DevicesCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  int run() const;

  struct Options {
    bool json = false;
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
