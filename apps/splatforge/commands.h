// The splatforge commands. main.cpp parses arguments into these option structs; each command returns a
// process exit code and reports failures on stderr as "splatforge <command>: <message>".
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace sf {
struct Vec3;
}  // namespace sf

namespace sf::cli {

// A command line that cannot run as given (an output of the wrong kind, options that contradict or a
// required one missing): reported as the argument parser's own errors are, exit code 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// Prints "splatforge <command>: error: <message>" on stderr and returns the exit code: 2 for a usage
// error (with a pointer to `splatforge <command> --help`), 1 for every other failure.
int reportFailure(const std::string& command, const std::exception& e);
int reportUsage(const std::string& command, const std::string& message);

// `s` escaped for a JSON string's contents.
std::string jsonEscape(const std::string& s);

// Results of a benchmark as JSON: to stdout with --json (the human-readable lines then went to stderr), to
// a file with --json-out (written atomically) when `file` is not empty.
void emitJson(const std::string& json, bool to_stdout, const std::string& file);

// An output folder, created with its parents when missing; one that exists as a file is a usage error.
void makeOutputFolder(const std::string& dir);

// A --bg / --background value "R,G,B" with each in [0, 1]; a UsageError otherwise.
Vec3 parseColor(const std::string& text);

// Options every command accepts (main.cpp applies them before the command runs): the load limits and
// the non-finite policy of core/limits.h.
struct LoadPolicyOptions {
  std::optional<uint64_t> max_gaussians;
  std::string max_memory;  // "8G", "512M", bytes
  std::string max_gpu_memory;  // a budget of Vulkan memory ("512M"), as a smaller device would have
  bool strict = false;     // refuse files holding non-finite values (set by a command's --strict)
  std::string spz_axes = "auto", gltf_axes = "gltf";
  int spz_version = 4;
};

// The image size every command uses when neither a camera file nor --width/--height gives one.
inline constexpr int kDefaultWidth = 1280, kDefaultHeight = 720;  // a look-at camera file's default too (commands.cpp checks)

// The formats the tool reads and writes, for help texts.
inline constexpr const char* kReadFormats = ".ply, .compressed.ply, .spz, .splat, .sog, meta.json (SOG), .ksplat, .glb, .gltf, .spl2";
inline constexpr const char* kWriteFormats = ".ply, .compressed.ply, .spz, .splat, .sog, meta.json (SOG folder), .glb, .spl2";
// Sets the process's load limits from the options; throws sf::Error for a malformed size.
void applyLoadPolicy(const LoadPolicyOptions& o);

struct InfoOptions {
  std::string input;
  bool json = false;
};
int runInfo(const InfoOptions& o);

// `validate FILE`: what is wrong or doubtful in a splat file (non-finite rows, degenerate scales, opacity and
// SH ranges, the frame it declares, the overdraw a default camera would see). Exit 0 when it holds no
// problem, 1 when it does (each one named), so a pipeline can gate on it.
struct ValidateOptions {
  std::string input;
  bool json = false;
};
int runValidate(const ValidateOptions& o);

struct ConvertOptions {
  std::string input, output;
  std::string output_positional;  // the older form: convert IN OUT
  bool strict = false;            // set from the load policy: refuse lossy conversions too
  bool overwrite = false;         // replace an existing output (the input never)
  // Transforms and filters, applied in this order (the help says so): flips, rotation, scale, translation,
  // then the box and opacity filters.
  std::vector<std::string> flip;  // x, y or z per --flip
  std::string rotate;             // "X,Y,Z" degrees about x, then y, then z
  std::optional<float> scale;
  std::string translate;          // "X,Y,Z"
  std::string box;                // "MINX,MINY,MINZ,MAXX,MAXY,MAXZ": keep centres inside
  std::optional<float> min_opacity;
};
int runConvert(const ConvertOptions& o);

struct RenderOptions {
  std::string input;
  std::string output;           // .png
  std::optional<int> width, height;
  std::string camera;           // camera JSON path, optional
  std::string backend = "auto";  // auto (Vulkan on a GPU, else the CPU renderer), vulkan or cpu
  std::string device;            // Vulkan device index or name substring
  bool validation = false;       // Vulkan validation layers
  std::string background;       // "R,G,B"
  std::string save_float;       // .npy
  std::string save_depth;       // .npy: expected depth (splats and meshes) and transmittance per pixel
  bool antialiased = false;
  bool strict = false;      // refuse files holding non-finite values
  bool keep_going = false;  // scene JSON: an object that cannot be loaded is a placeholder with a warning, not an error
  bool allow_outside_paths = false;  // scene JSON: object paths may leave the scene's directory
  std::string clip;  // glTF input: animation name or index (default: the first)
  double time = 0;   // glTF input: seconds into the clip
  std::string hull_mode;  // splat hulls: baked or sorted for every hull (empty: each object's own)
  std::string light;      // splat hulls: on or off (empty: the scene's)
};
int runRender(const RenderOptions& o);

// `animate`: renders a scene (JSON, or one glTF / splat file) over time to a PNG sequence, or to an MP4
// through ffmpeg, with a progress bar.
struct AnimateOptions {
  std::string input;
  std::string output = "frames/%04d.png";  // printf pattern with one integer field, or a .mp4 path
  double fps = 30, duration = 2, start = 0;
  double orbit_deg = 0;  // the camera turns this much about the vertical axis through the scene's centre
  std::optional<int> width, height;
  std::string camera;
  std::string clip;  // glTF input only
  std::string backend = "auto";
  std::string device;
  bool validation = false;
  std::string background;
  // The background when neither --bg nor the scene gives one, "R,G,B" (empty: the renderer's 0,0,0).
  std::string default_background;
  bool strict = false, keep_going = false;  // as for render
  bool allow_outside_paths = false;
  std::string hull_mode, light;  // as for render
  // Play a hull script (docs/formats/hull-script.md) on every splat hull of the input (`hull play`);
  // `duration` then defaults to the script's when not given, and a hull-only input without a camera is
  // framed on its hulls over the whole clip (autoCameraOverClip).
  std::string hull_script;
  std::optional<uint32_t> seed;
  bool duration_given = true;
  std::string command = "animate";  // how errors name the command (`hull play` runs this one)
};
int runAnimate(const AnimateOptions& o);

// `hull play`'s default background: a dark slate blue-grey that the cel-lit hulls, their white-hot debris and
// sparks read against (pure black swallows the hulls' dark crater floors and cooling debris).
inline constexpr const char* kHullPlayBackground = "0.16,0.19,0.24";

struct DemoOptions {
  std::string output = "demo.png";
  int width = kDefaultWidth, height = kDefaultHeight;
  std::string save_float;
  std::string save_depth;
  std::string backend = "auto";
  std::string device;
  bool validation = false;
};
int runDemo(const DemoOptions& o);

struct DevicesOptions {
  bool json = false;
};
// Lists the Vulkan loader, every device with its driver and version, and the instance layers. Exit code 1
// when there is no loader or no device (the message says what to install).
int runDevices(const DevicesOptions& o);

struct BenchOptions {
  std::string input;        // splat file or scene; empty: the biker capture from the assets directory
  std::string assets;       // directory holding splats/biker.*; default $SPLATFORGE_ASSETS or ../shared/assets
  size_t synthetic = 0;     // > 0: a synthetic capture-like cloud of this many gaussians instead of INPUT
  int copies = 1;           // tiled copies of the input, each its own object
  int sh_degree = -1;       // raise the SH degree to this (random small coefficients)
  std::string backend = "auto";
  std::string device;
  bool validation = false;
  int width = kDefaultWidth, height = kDefaultHeight;
  bool width_given = false, height_given = false;  // given on the command line: they override a --camera file's size
  std::string camera;       // camera JSON (as render --camera); default: framed automatically
  std::string save_scene;   // write the benchmarked scene as one world-space splat file (.ply/.spz/.splat)
  bool show_graph = false;  // print the frame's passes, their reads and writes, and the barriers between them
  int frames = 10;          // timed frames (median reported) after one warm-up frame
  int back_to_back = 0;     // Vulkan: also this many frames (1..64) in one submission, their medians reported
  bool loads = false;       // also measure load throughput of the biker PLY, compressed PLY and SPZ
  bool json = false;        // print the results as JSON to stdout (the human-readable lines go to stderr)
  std::string json_out;     // write the results as JSON to this file
  bool allow_outside_paths = false;  // scene JSON input
};
int runBench(const BenchOptions& o);

// `pose`: a glTF file's pose at one time of one clip: every skin joint's world matrix (every node's when
// the file has no skin) and the bounds of its meshes, morphed and skinned.
struct PoseOptions {
  std::string input;  // .gltf or .glb
  std::string clip;   // animation name or index; empty: the first animation (rest pose when none)
  double time = 0;    // seconds; clamped to the clip's keys
  bool json = false;
};
int runPose(const PoseOptions& o);

struct BenchSkinOptions {
  std::string input;          // glTF / GLB with a skin and an animation
  size_t instances = 1000;    // animated instances, each at its own phase of the clip
  int frames = 20;            // timed frames (median reported) after one warm-up frame
  std::string method = "lbs"; // lbs or dqs
  std::string device;
  bool validation = false;
  bool json = false;     // results as JSON on stdout
  std::string json_out;  // results as JSON in this file
};
int runBenchSkin(const BenchSkinOptions& o);

// Assets directory: $SPLATFORGE_ASSETS if set, else ../shared/assets.
std::string defaultAssetsDir();

// `character build|bind|info`: splat characters (docs/formats/character.md).
struct CharacterOptions {
  std::string action;     // build, bind, preview, gnm-pack or info
  std::string tint = "joint";  // preview: joint, uv, height or normal
  float sigma = 0.002f;   // preview: the gaussians' standard deviation, metres
  std::string pack;       // preview: a GNM pack (instead of --skin); -o is then a splat file
  std::string eyes;       // gnm-pack: "LEFT,RIGHT" eye joint names (empty: the eye-joint name rule)
  std::string from_gltf;  // build: the skinned glTF
  size_t splats = 20000;  // build: gaussians to sample
  uint32_t seed = 1;      // build: sampling seed
  bool train = false;     // build: train exactly `splats` gaussians on views of the glTF first (train/trainer.h)
  int train_steps = 6000, train_size = 400, train_views = 200;
  std::string train_backend = "auto";
  std::string splat_file; // bind: the trained splat PLY (in the skin's bind-pose mesh space)
  std::string skin;       // bind, preview, gnm-pack: the skinned glTF / GLB
  bool per_vertex = false;   // bind: row i of the PLY belongs to vertex i of the skin (the LAM layout)
  float offset_scale = 0;    // bind --per-vertex: centre = vertex + offset_scale * xyz
  bool rgb_colors = false;   // bind: the PLY's f_dc are plain RGB, not SH coefficients
  std::string clips;         // build / bind: a glTF whose animations are retargeted onto the skin by joint name
  std::string output;     // build / bind / preview: package directory; preview --pack: splat file; gnm-pack: the pack file
  std::string input;      // info: package directory
  bool json = false;      // info
};
int runCharacter(const CharacterOptions& o);

// `bench-characters`: a crowd of one character package animated (clip, or expressions and look-at when it
// has no clip) and rendered on Vulkan with the GPU deform pass; median GPU frame time and CPU pose time.
struct BenchCharactersOptions {
  std::string package;
  size_t count = 1;
  int width = kDefaultWidth, height = kDefaultHeight;
  int frames = 20;
  std::string device;
  bool validation = false;
  bool json = false;     // results as JSON on stdout
  std::string json_out;  // results as JSON in this file
};
int runBenchCharacters(const BenchCharactersOptions& o);

}  // namespace sf::cli
