#include "commands.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>

#include "core/error.h"
#include "core/limits.h"
#include "core/math.h"
#include "frame/frame.h"
#include "gpu/gpu.h"
#include "io/file.h"
#include "io/formats.h"
#include "scene/scene.h"

namespace sf::cli {

int reportUsage(const std::string& command, const std::string& message) {
  fmt::print(stderr, "splatforge {}: error: {} (see splatforge {} --help)\n", command, message, command);
  return 2;
}

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20)
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    else
      out += c;
  }
  return out;
}

int reportFailure(const std::string& command, const std::exception& e) {
  if (dynamic_cast<const UsageError*>(&e)) return reportUsage(command, e.what());
  fmt::print(stderr, "splatforge {}: error: {}\n", command, e.what());
  return 1;
}

static_assert(kDefaultWidth == kDefaultCameraWidth && kDefaultHeight == kDefaultCameraHeight,
              "one default image size");

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int fail(const char* command, const std::string& message) {
  fmt::print(stderr, "splatforge {}: error: {}\n", command, message);
  return 1;
}

void emitJson(const std::string& json, bool to_stdout, const std::string& file) {
  if (!file.empty()) {
    writeFileAtomic(file,
                    std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(json.data()), json.size()));
    std::fprintf(stderr, "wrote %s\n", file.c_str());
  }
  if (to_stdout) {
    std::fflush(stderr);
    std::fwrite(json.data(), 1, json.size(), stdout);
    std::fflush(stdout);
  }
}

void makeOutputFolder(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    throw UsageError("-o: " + dir + " exists and is not a folder");
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create the folder: " + ec.message());
}

void progress(const std::string& line) {
  fmt::print(stderr, "  {}\n", line);
}

void printWarnings(const char* command, const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) fmt::print(stderr, "splatforge {}: warning: {}\n", command, w);
}

std::string numberJson(double v) {
  return std::isfinite(v) ? fmt::format("{}", v) : std::string("null");
}
std::string vecJson(Vec3 v) {
  return fmt::format("[{}, {}, {}]", numberJson(v.x), numberJson(v.y), numberJson(v.z));
}
std::string vecText(Vec3 v) {
  return fmt::format("{:.4f} {:.4f} {:.4f}", v.x, v.y, v.z);
}

std::vector<double> parseNumbers(const std::string& text, const char* option, size_t count,
                                 const char* example) {
  std::vector<double> out;
  const char* p = text.c_str();
  const std::string expected = std::string(option) + " '" + text + "': expected " + std::to_string(count) +
                               " numbers separated by commas, like " + example;
  for (size_t k = 0; k < count; ++k) {
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    if (end == p || !std::isfinite(v)) throw UsageError(expected);
    out.push_back(v);
    p = end;
    if (k + 1 < count) {
      if (*p != ',') throw UsageError(expected);
      ++p;
    }
  }
  if (*p != '\0') throw UsageError(expected);
  return out;
}

Vec3 parseColor(const std::string& text) {
  const std::vector<double> v = parseNumbers(text, "--bg", 3, "1,1,1");
  for (double x : v)
    if (x < 0 || x > 1)
      throw UsageError("--bg '" + text +
                       "': expected three numbers in [0, 1] separated by commas, like 1,1,1");
  return Vec3{static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2])};
}

void checkWritableTarget(const std::string& path, const char* what) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    throw Error(std::string(what) + " " + path + ": directory " + parent.string() + " does not exist");
}

FrameDriverOptions driverOptions(const std::string& backend, const std::string& device, bool validation) {
  FrameDriverOptions d;
  d.backend = parseBackend(backend);
  d.device = device;
  d.validation = validation;
  d.replace_lost_device = false;  // a command ends on a lost device: no new device to make, no "render again"
  return d;
}

void applyLoadPolicy(const LoadPolicyOptions& o) {
  LoadLimits l = loadLimits();
  if (o.max_gaussians) l.max_gaussians = *o.max_gaussians;
  if (!o.max_memory.empty()) {
    try {
      l.max_bytes = parseByteSize(o.max_memory);
    } catch (const Error& e) {
      throw Error(std::string("--max-memory: ") + e.what());
    }
  }
  l.reject_non_finite = o.strict;
  setLoadLimits(l);
  if (!o.max_gpu_memory.empty()) {
    try {
      gpu::setMemoryBudget(parseByteSize(o.max_gpu_memory));
    } catch (const Error& e) {
      throw Error(std::string("--max-gpu-memory: ") + e.what());
    }
  }
  FormatOptions f = formatOptions();
  f.spz_axes = parseSpzAxes(o.spz_axes);
  f.gltf_axes = parseGltfAxes(o.gltf_axes);
  f.spz_version = o.spz_version;
  setFormatOptions(f);
}

std::string defaultAssetsDir() {
  if (const char* env = std::getenv("SPLATFORGE_ASSETS")) return env;
  return "../shared/assets";
}

}  // namespace sf::cli
