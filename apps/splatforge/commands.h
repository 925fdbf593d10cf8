// What the splatforge commands share: how they report failures, the load policy every command takes, the
// image size and formats of their help texts, and small helpers (timing, progress lines, warnings, JSON
// output, output folders, colours). Each command family has its own header (render_command.h,
// formats_command.h, bench_command.h, character_command.h, ...) declaring its command classes and their
// options; main.cpp, the one file that includes CLI11, registers them and dispatches the command. Each
// command returns a process exit code and reports failures on stderr as "splatforge <command>: <message>".
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace sf {
struct Vec3;
struct FrameDriverOptions;
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
  std::string max_memory;      // "8G", "512M", bytes
  std::string max_gpu_memory;  // a budget of Vulkan memory ("512M"), as a smaller device would have
  bool strict = false;         // refuse files holding non-finite values (set by a command's --strict)
  std::string spz_axes = "auto", gltf_axes = "gltf";
  int spz_version = 4;
};

// The image size every command uses when neither a camera file nor --width/--height gives one.
inline constexpr int kDefaultWidth = 1280,
                     kDefaultHeight = 720;  // a look-at camera file's default too (commands.cpp checks)

// The formats the tool reads and writes, for help texts.
inline constexpr const char* kReadFormats =
    ".ply, .compressed.ply, .spz, .splat, .sog, meta.json (SOG), .ksplat, .glb, .gltf, .spl2";
inline constexpr const char* kWriteFormats =
    ".ply, .compressed.ply, .spz, .splat, .sog, meta.json (SOG folder), .glb, .spl2";
// Sets the process's load limits from the options; throws sf::Error for a malformed size.
void applyLoadPolicy(const LoadPolicyOptions& o);

// Assets directory: $SPLATFORGE_ASSETS if set, else ../shared/assets.
std::string defaultAssetsDir();

// ---- Helpers of several command families ----

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0);

// Prints "splatforge <command>: error: <message>" on stderr and returns 1.
int fail(const char* command, const std::string& message);

// One progress line on stderr, indented.
void progress(const std::string& line);

// Each warning as "splatforge <command>: warning: ..." on stderr.
void printWarnings(const char* command, const std::vector<std::string>& warnings);

// JSON has no NaN or infinity: such a number is written as null, so the output always parses.
std::string numberJson(double v);
std::string vecJson(Vec3 v);  // [x, y, z]
std::string vecText(Vec3 v);  // "x y z", 4 decimals

// `count` finite numbers separated by commas ("1,0.5,2"), for option `option`; a usage error otherwise.
std::vector<double> parseNumbers(const std::string& text, const char* option, size_t count,
                                 const char* example);

// An output file's folder must exist: sf::Error naming `what` (an option) otherwise.
void checkWritableTarget(const std::string& path, const char* what);

// The frame driver's options from a command's --backend (auto, vulkan or cpu), --device and --validation.
FrameDriverOptions driverOptions(const std::string& backend, const std::string& device, bool validation);

}  // namespace sf::cli
