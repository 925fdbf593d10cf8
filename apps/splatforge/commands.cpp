#include "commands.h"

#include <fmt/core.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <numbers>
#include <set>

#include <unistd.h>

#include "anim/clip.h"
#include "model/gltf_import.h"
#include "anim/local_to_model.h"
#include "anim/skinning.h"
#include "character/character.h"
#include "character/corrective.h"
#include "character/expression.h"
#include "character/gnm_pack.h"
#include "character/gpu_lift.h"
#include "character/rig.h"
#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "core/limits.h"
#include "core/parallel.h"
#include "deform/gpu_skinning.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/gltf.h"
#include "gpu/gpu.h"
#include "io/image_io.h"
#include "render/cpu_renderer.h"
#include "render/vulkan_renderer.h"
#include "frame/frame.h"
#include "scene/demo.h"
#include "model/gltf_model.h"
#include "scene/scene.h"
#include "scene/synthetic.h"
#include "train/trainer.h"
#include "train/views.h"
#include "train_command.h"

namespace sf::cli {

int reportUsage(const std::string& command, const std::string& message) {
  fmt::print(stderr, "splatforge {}: error: {} (see splatforge {} --help)\n", command, message, command);
  return 2;
}

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    else out += c;
  }
  return out;
}

int reportFailure(const std::string& command, const std::exception& e) {
  if (dynamic_cast<const UsageError*>(&e)) return reportUsage(command, e.what());
  fmt::print(stderr, "splatforge {}: error: {}\n", command, e.what());
  return 1;
}

namespace {

using Clock = std::chrono::steady_clock;
static_assert(kDefaultWidth == kDefaultCameraWidth && kDefaultHeight == kDefaultCameraHeight, "one default image size");

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int fail(const char* command, const std::string& message) {
  fmt::print(stderr, "splatforge {}: error: {}\n", command, message);
  return 1;
}

}  // namespace

void emitJson(const std::string& json, bool to_stdout, const std::string& file) {
  if (!file.empty()) {
    writeFileAtomic(file, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(json.data()), json.size()));
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

namespace {

// With --json, stdout carries the JSON document alone: while this lives, what the command prints for people
// goes to stderr (file descriptor 1 points at 2); release() points it back before the JSON is printed.
class JsonStdout {
 public:
  explicit JsonStdout(bool on) {
    if (!on) return;
    std::fflush(stdout);
    saved_ = dup(1);
    if (saved_ >= 0) dup2(2, 1);
  }
  ~JsonStdout() { release(); }
  JsonStdout(const JsonStdout&) = delete;
  JsonStdout& operator=(const JsonStdout&) = delete;
  void release() {
    if (saved_ < 0) return;
    std::fflush(stdout);
    dup2(saved_, 1);
    close(saved_);
    saved_ = -1;
  }

 private:
  int saved_ = -1;
};

void progress(const std::string& line) { fmt::print(stderr, "  {}\n", line); }

void printWarnings(const char* command, const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) fmt::print(stderr, "splatforge {}: warning: {}\n", command, w);
}

// JSON has no NaN or infinity: such a number is written as null, so the output always parses.
std::string numberJson(double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string("null"); }
std::string vecJson(Vec3 v) { return fmt::format("[{}, {}, {}]", numberJson(v.x), numberJson(v.y), numberJson(v.z)); }
std::string vecText(Vec3 v) { return fmt::format("{:.4f} {:.4f} {:.4f}", v.x, v.y, v.z); }

// `count` finite numbers separated by commas ("1,0.5,2"), for option `option`; a usage error otherwise.
std::vector<double> parseNumbers(const std::string& text, const char* option, size_t count, const char* example) {
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

}  // namespace

Vec3 parseColor(const std::string& text) {
  const std::vector<double> v = parseNumbers(text, "--bg", 3, "1,1,1");
  for (double x : v)
    if (x < 0 || x > 1) throw UsageError("--bg '" + text + "': expected three numbers in [0, 1] separated by commas, like 1,1,1");
  return Vec3{static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2])};
}

namespace {

Vec3 parseVec3(const std::string& text, const char* option) {
  const std::vector<double> v = parseNumbers(text, option, 3, "0,1.5,0");
  return Vec3{static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2])};
}

// convert's transforms and filters, in the order its --help states: --flip, --rotate, --scale, --translate
// (each a change of the whole cloud: positions, rotations, scales and SH together), then --box and
// --min-opacity, which keep the gaussians whose transformed centre lies in the box and whose opacity
// reaches the threshold. (Non-finite gaussians were dropped on load, or refused with --strict.) Returns a
// line describing what was done, empty when nothing was asked.
std::string applyConvertEdits(GaussianCloud& cloud, const ConvertOptions& o) {
  std::vector<std::string> done;
  for (const std::string& axis : o.flip) {
    Vec3 d{1, 1, 1};
    if (axis == "x") d.x = -1;
    else if (axis == "y") d.y = -1;
    else if (axis == "z") d.z = -1;
    else throw UsageError("--flip '" + axis + "': expected x, y or z");
    changeAxes(cloud, Mat3::diagonal(d));  // a mirror: exact, SH included
    done.push_back("flipped " + axis);
  }
  if (!o.rotate.empty()) {
    const Vec3 deg = parseVec3(o.rotate, "--rotate");
    // About x, then y, then z (extrinsic, degrees): R = Rz * Ry * Rx.
    auto about = [](Vec3 axis, float degrees) {
      const float h = 0.5f * degrees * 3.14159265358979f / 180.0f;
      return rotationMatrix(Quat{std::cos(h), axis.x * std::sin(h), axis.y * std::sin(h), axis.z * std::sin(h)});
    };
    const Mat3 r = about({0, 0, 1}, deg.z) * about({0, 1, 0}, deg.y) * about({1, 0, 0}, deg.x);
    transformCloud(cloud, Mat4::fromLinearTranslation(r, {0, 0, 0}));
    for (Vec3& n : cloud.normals) n = r * n;  // (transformCloud leaves normals as they were)
    done.push_back(fmt::format("rotated {:g},{:g},{:g} degrees", deg.x, deg.y, deg.z));
  }
  if (o.scale) {
    if (!(*o.scale > 0) || !std::isfinite(*o.scale)) throw UsageError(fmt::format("--scale {}: expected a positive number", *o.scale));
    transformCloud(cloud, Mat4::fromLinearTranslation(Mat3::diagonal({*o.scale, *o.scale, *o.scale}), {0, 0, 0}));
    done.push_back(fmt::format("scaled {:g}", *o.scale));
  }
  if (!o.translate.empty()) {
    const Vec3 t = parseVec3(o.translate, "--translate");
    transformCloud(cloud, Mat4::fromLinearTranslation(Mat3{}, t));
    done.push_back(fmt::format("translated {:g},{:g},{:g}", t.x, t.y, t.z));
  }
  std::vector<uint8_t> drop(cloud.size(), 0);
  size_t dropped = 0;
  if (!o.box.empty()) {
    const std::vector<double> b = parseNumbers(o.box, "--box", 6, "-1,-1,-1,1,1,1");
    if (!(b[0] <= b[3] && b[1] <= b[4] && b[2] <= b[5])) throw UsageError("--box '" + o.box + "': expected MINX,MINY,MINZ,MAXX,MAXY,MAXZ with each min <= max");
    for (size_t i = 0; i < cloud.size(); ++i) {
      const Vec3 p = cloud.positions[i];
      if (!(p.x >= b[0] && p.y >= b[1] && p.z >= b[2] && p.x <= b[3] && p.y <= b[4] && p.z <= b[5])) drop[i] = 1;
    }
  }
  if (o.min_opacity) {
    if (!(*o.min_opacity >= 0 && *o.min_opacity <= 1)) throw UsageError(fmt::format("--min-opacity {}: expected a number in [0, 1]", *o.min_opacity));
    for (size_t i = 0; i < cloud.size(); ++i)
      if (!(cloud.opacities[i] >= *o.min_opacity)) drop[i] = 1;
  }
  for (uint8_t d : drop) dropped += d;
  if (!o.box.empty() || o.min_opacity) {
    eraseRows(cloud, drop);
    done.push_back(fmt::format("filtered out {} gaussians ({} kept)", dropped, cloud.size()));
  }
  std::string line;
  for (const std::string& d : done) line += (line.empty() ? "" : "; ") + d;
  return line;
}

void checkWritableTarget(const std::string& path, const char* what) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    throw Error(std::string(what) + " " + path + ": directory " + parent.string() + " does not exist");
}

// Every validation message of a context, for the error that ends a command run with --validation.
std::string validationFailure(const gpu::Context& ctx) {
  return fmt::format("{} Vulkan validation error(s):\n{}", ctx.validationErrors(), ctx.validationReport());
}

struct BackendChoice {
  std::string backend;  // auto, vulkan or cpu
  std::string device;
  bool validation = false;

  FrameDriverOptions driver() const {
    FrameDriverOptions d;
    d.backend = parseBackend(backend);
    d.device = device;
    d.validation = validation;
    return d;
  }
};

std::string sceneSummary(const Scene& scene) {
  size_t splats = 0, models = 0, characters = 0, generators = 0;
  for (const SceneObject& o : scene.objects) {
    splats += o.cloud ? o.cloud->size() : 0;
    if (o.character) ++characters;
    else if (o.model) ++models;
    generators += o.generator != nullptr;
  }
  return fmt::format("{} objects, {} gaussians{}{}{}", scene.objects.size(), splats, models ? fmt::format(", {} glTF models", models) : "",
                     characters ? fmt::format(", {} characters", characters) : "",
                     generators ? fmt::format(", {} neural generators", generators) : "");
}

// The scene of a command's input: a scene JSON (warnings printed, its background unless --bg was given),
// or one splat file, glTF model or character package.
// Every input is drawn at the frame's scene time (render --time, animate --start), whatever its kind.
Scene loadInput(const char* command, const std::string& input, const std::string& clip, bool strict_objects, bool allow_outside_paths,
                std::optional<int> width, std::optional<int> height, bool background_given, RenderSettings& settings) {
  progress("loading " + input);
  if (classifyInput(input) != InputKind::kSceneJson) {
    Scene scene = sceneFromFile(input, clip);
    printWarnings(command, scene.warnings);
    progress("loaded " + sceneSummary(scene));
    return scene;
  }
  if (!clip.empty()) throw UsageError("--clip applies to a glTF input; a scene JSON names each object's clip");
  SceneLoadOptions lo;
  lo.strict = strict_objects;
  lo.confine_paths = !allow_outside_paths;
  lo.width = width;
  lo.height = height;
  lo.progress = progress;
  Scene scene = loadSceneJson(input, lo);
  printWarnings(command, scene.warnings);
  if (scene.background && !background_given) settings.background = *scene.background;
  return scene;
}

// --hull-mode and --light: every splat hull of the scene drawn in one mode; the cel light on or off.
void applyHullOptions(Scene& scene, const std::string& mode, const std::string& light) {
  if (!mode.empty()) {
    const hull::HullMode m = hull::parseHullMode(mode);
    for (SceneObject& o : scene.objects) o.hull_mode = m;
  }
  if (!light.empty()) scene.light.enabled = light == "on";
}

// True when no splat of the scene's objects reaches the renderer's alpha threshold (kAlphaMin, 1/255).
bool allTransparent(const Scene& scene) {
  for (const SceneObject& o : scene.objects)
    if (o.generator) return false;  // its gaussians are made per frame
    else if (o.cloud)
      for (float a : o.cloud->opacities)
        if (a >= kAlphaMin) return false;
  return true;
}

// The optional float outputs of `render` and `demo`, checked before any work is done.
struct FloatOutputs {
  std::string image;  // --save-float: (height, width, 4)
  std::string depth;  // --save-depth: (height, width, 2)

  void check() const {
    for (auto [path, flag] : {std::pair{image, "--save-float"}, std::pair{depth, "--save-depth"}}) {
      if (path.empty()) continue;
      if (fileExtension(path) != ".npy") throw Error(std::string(flag) + " " + path + ": expected a .npy path");
      checkWritableTarget(path, flag);
    }
  }
};

// Renders a scene and writes the outputs; shared by `render` and `demo`.
int renderAndWrite(const char* command, const Scene& scene, double time, const Camera& cam, RenderSettings settings,
                   const BackendChoice& backend, const std::string& png, const FloatOutputs& extra, Clock::time_point t_start, double load_s) {
  settings.depth = !extra.depth.empty();
  FrameDriver driver(backend.driver());
  progress(fmt::format("rendering {}x{} on {} ({})", cam.width, cam.height, driver.describe(), sceneSummary(scene)));
  const FrameResult f = driver.render(scene, {time, cam, settings, {}});
  if (f.visible == 0 && f.mesh_triangles == 0 && f.splats > 0 && allTransparent(scene))
    return fail(command, fmt::format("nothing to draw: every one of the {} gaussians is fully transparent (opacity below 1/255)", f.splats));
  if (f.visible == 0 && f.mesh_triangles == 0)
    return fail(command, fmt::format("no gaussian is visible from this camera (all {} culled: behind the camera, "
                                     "closer than 0.2, or outside the image); check the camera",
                                     f.splats));
  writePng(png, f.image);
  if (!extra.image.empty()) writeNpy(extra.image, f.image);
  if (!extra.depth.empty()) writeNpy(extra.depth, f.image.depth, f.image.height, f.image.width, 2);
  fmt::print(stderr, "  visible {} of {} gaussians, {} tile keys{}\n", f.visible, f.splats, f.tile_keys,
             f.mesh_triangles ? fmt::format(", {} mesh triangles", f.mesh_triangles) : "");
  std::string written = png;
  for (const std::string& path : {extra.image, extra.depth})
    if (!path.empty()) written += ", " + path;
  fmt::print("wrote {}\n", written);
  fmt::print("time: {:.3f} s total (load {:.3f} s; {})\n", secondsSince(t_start), load_s, f.timing());
  return 0;
}

}  // namespace

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

int runInfo(const InfoOptions& o) {
  try {
    auto t0 = Clock::now();
    if (classifyInput(o.input) == InputKind::kOnnx)
      throw Error(o.input + ": an ONNX model, not a splat file (splatforge onnx info " + o.input + ")");
    LoadedSplats l = loadSplats(o.input);
    printWarnings("info", l.warnings);
    const GaussianCloud& c = l.cloud;
    std::string version = l.version ? fmt::format(" (version {})", l.version) : "";
    if (o.json) {
      fmt::print("{{\n  \"file\": \"{}\",\n  \"format\": \"{}\",\n  \"version\": {},\n  \"count\": {},\n  \"sh_degree\": {},\n",
                 jsonEscape(o.input), formatName(l.format), l.version, c.size(), c.sh_degree);
      if (!l.axes.empty()) fmt::print("  \"axes\": \"{}\",\n", jsonEscape(l.axes));
      fmt::print("  \"antialiased\": {},\n  \"file_bytes\": {},\n  \"memory_bytes\": {},\n  \"dropped_non_finite\": {},\n",
                 c.antialiased ? "true" : "false", l.file_bytes, c.memoryBytes(), l.dropped_non_finite);
      if (c.size() > 0) {
        CloudBounds b = computeBounds(c);
        fmt::print("  \"bounds\": {{\"min\": {}, \"max\": {}, \"p01\": {}, \"p99\": {}}},\n", vecJson(b.min), vecJson(b.max),
                   vecJson(b.p01), vecJson(b.p99));
      }
      std::string extras;
      for (const ExtraChannel& e : c.extras) extras += (extras.empty() ? "\"" : ", \"") + jsonEscape(e.name) + "\"";
      fmt::print("  \"normals\": {},\n  \"extra_channels\": [{}]\n}}\n", c.normals.empty() ? "false" : "true", extras);
      return 0;
    }
    fmt::print("file:        {}\n", o.input);
    fmt::print("format:      {}{}\n", formatName(l.format), version);
    fmt::print("gaussians:   {}{}\n", c.size(), l.dropped_non_finite ? fmt::format(" ({} with non-finite values dropped)", l.dropped_non_finite) : "");
    fmt::print("sh degree:   {}\n", c.sh_degree);
    fmt::print("antialiased: {}\n", c.antialiased ? "yes" : "no");
    if (!l.axes.empty()) fmt::print("axes:        {}\n", l.axes);
    if (c.size() > 0) {
      CloudBounds b = computeBounds(c);
      fmt::print("bounds min:  {}\nbounds max:  {}\n1st pct:     {}\n99th pct:    {}\n", vecText(b.min), vecText(b.max),
                 vecText(b.p01), vecText(b.p99));
    }
    fmt::print("normals:     {}\n", c.normals.empty() ? "no" : "yes");
    for (const ExtraChannel& e : c.extras) fmt::print("extra:       {}\n", e.name);
    fmt::print("memory:      {:.2f} MB in memory, {:.2f} MB on disk\n", static_cast<double>(c.memoryBytes()) / 1e6,
               static_cast<double>(l.file_bytes) / 1e6);
    fmt::print("time:        {:.3f} s\n", secondsSince(t0));
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("info", e);
  }
}

int runValidate(const ValidateOptions& o) {
  try {
    const auto t0 = Clock::now();
    if (classifyInput(o.input) == InputKind::kOnnx) throw Error(o.input + ": an ONNX model, not a splat file (splatforge onnx info " + o.input + ")");
    // Non-finite rows are counted and dropped by the loader (core/limits.h); --strict would refuse the file.
    LoadedSplats l = loadSplats(o.input);
    const GaussianCloud& c = l.cloud;
    const size_t n = c.size();
    // Scales: a gaussian thinner than 1e-7 of the cloud's extent (or with a zero or negative axis) is
    // degenerate (it covers no pixel and ill-conditions its covariance); one 10,000 times longer than wide is a needle.
    float extent = 1.0f;
    if (n) {
      const CloudBounds b = computeBounds(c);
      extent = std::max({b.max.x - b.min.x, b.max.y - b.min.y, b.max.z - b.min.z, 1e-30f});
    }
    size_t degenerate = 0, needles = 0, invisible = 0, saturated = 0, dc_outside = 0, rest_large = 0;
    float rest_max = 0;
    const int rest = shCoeffCount(c.sh_degree) - 1;
    for (size_t i = 0; i < n; ++i) {
      const Vec3 s = c.scales[i];
      const float smin = std::min({s.x, s.y, s.z}), smax = std::max({s.x, s.y, s.z});
      degenerate += !(smin > 1e-7f * extent);
      needles += smin > 0 && smax > 1e4f * smin;
      invisible += c.opacities[i] < 1.0f / 255.0f;
      saturated += c.opacities[i] >= 0.99f;
      const float* sh = c.shOf(i).data();
      bool outside = false;
      for (int k = 0; k < 3; ++k) {
        const float col = shDcToColor(sh[k]);
        outside = outside || col < -0.05f || col > 1.05f;
      }
      dc_outside += outside;
      bool large = false;
      for (int k = 0; k < 3 * rest; ++k) {
        rest_max = std::max(rest_max, std::abs(sh[3 + k]));
        large = large || std::abs(sh[3 + k]) > 4.0f;  // beyond compressed PLY's range, far beyond trained values
      }
      rest_large += large;
    }
    // Overdraw for the default camera (the framing `render` uses), at 640x360 on the CPU renderer: visible
    // gaussians and tile pairs, and splats per tile on average.
    size_t visible = 0, pairs = 0;
    double per_tile = 0;
    if (n > 0) {
      Scene scene;
      SceneObject obj;
      obj.cloud = std::make_shared<GaussianCloud>(c);
      scene.objects.push_back(obj);
      const Camera cam = autoCamera(scene, 640, 360);
      RenderStats st;
      const std::vector<RenderObject> objects = scene.renderObjects();
      renderCpu(objects, cam, RenderSettings{}, &st);
      visible = st.visible, pairs = st.tile_keys;
      per_tile = static_cast<double>(pairs) / (((640 + 15) / 16) * ((360 + 15) / 16));
    }
    std::vector<std::string> problems, notes;
    auto count = [&](size_t k, const std::string& what) { return fmt::format("{} of {} gaussians {}", k, n + l.dropped_non_finite, what); };
    if (l.dropped_non_finite) problems.push_back(count(l.dropped_non_finite, "hold NaN or infinite values (dropped when loaded; --strict refuses the file)"));
    if (n == 0) problems.push_back("no gaussian to draw");
    if (degenerate) problems.push_back(count(degenerate, fmt::format("have a scale axis of zero or below 1e-7 of the extent ({:.3g})", extent)));
    if (needles) notes.push_back(count(needles, "are needles (one axis 10,000 times another)"));
    if (invisible) notes.push_back(count(invisible, "have opacity below 1/255 (never drawn)"));
    if (dc_outside) notes.push_back(count(dc_outside, "have a base colour outside [0, 1] (clamped when drawn)"));
    if (rest_large) notes.push_back(count(rest_large, fmt::format("have SH coefficients beyond +-4 (largest {:.3g})", rest_max)));
    for (const std::string& w : l.warnings) notes.push_back(w);
    const std::string frame = l.axes.empty() ? "PLY convention (x right, y down, z forward), as stored" : l.axes;
    if (o.json) {
      auto list = [](const std::vector<std::string>& v) {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); ++i) s += (i ? ", \"" : "\"") + jsonEscape(v[i]) + "\"";
        return s + "]";
      };
      fmt::print("{{\n  \"file\": \"{}\",\n  \"format\": \"{}\",\n  \"count\": {},\n  \"sh_degree\": {},\n  \"frame\": \"{}\",\n"
                 "  \"non_finite\": {},\n  \"degenerate_scales\": {},\n  \"needles\": {},\n  \"invisible\": {},\n  \"opaque\": {},\n"
                 "  \"dc_outside_unit\": {},\n  \"sh_rest_large\": {},\n  \"sh_rest_max\": {},\n  \"default_camera\": {{\"width\": 640, "
                 "\"height\": 360, \"visible\": {}, \"tile_pairs\": {}, \"splats_per_tile\": {:.2f}}},\n  \"problems\": {},\n  \"notes\": {},\n"
                 "  \"valid\": {}\n}}\n",
                 jsonEscape(o.input), formatName(l.format), n, c.sh_degree, jsonEscape(frame), l.dropped_non_finite, degenerate, needles,
                 invisible, saturated, dc_outside, rest_large, rest_max, visible, pairs, per_tile, list(problems), list(notes),
                 problems.empty() ? "true" : "false");
    } else {
      fmt::print("file:        {}\nformat:      {}\ngaussians:   {}\nsh degree:   {}\nframe:       {}\n", o.input, formatName(l.format), n,
                 c.sh_degree, frame);
      fmt::print("opacity:     {} below 1/255, {} at 0.99 or more\n", invisible, saturated);
      fmt::print("overdraw:    {} of {} visible from the default camera at 640x360, {} tile pairs, {:.1f} splats per 16x16 tile\n", visible, n,
                 pairs, per_tile);
      for (const std::string& p : problems) fmt::print("problem:     {}\n", p);
      for (const std::string& s : notes) fmt::print("note:        {}\n", s);
      fmt::print("{} ({:.2f} s)\n", problems.empty() ? "valid" : fmt::format("{} problem{}", problems.size(), problems.size() == 1 ? "" : "s"),
                 secondsSince(t0));
    }
    return problems.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    return reportFailure("validate", e);
  }
}

int runConvert(const ConvertOptions& options) {
  ConvertOptions o = options;
  if (o.output.empty() == o.output_positional.empty())
    return reportUsage("convert", o.output.empty() ? "an output file is required (-o FILE)" : "give the output once (-o FILE)");
  if (o.output.empty()) o.output = o.output_positional;
  try {
    auto t0 = Clock::now();
    SplatFormat format;
    try {
      format = writeFormatForPath(o.output);  // refuse an unknown output extension before any work
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
    std::error_code ec;
    if (std::filesystem::exists(o.output, ec)) {
      if (std::filesystem::equivalent(o.input, o.output, ec))
        throw UsageError("-o " + o.output + ": is the input file; convert never overwrites its input (write elsewhere, then move it)");
      if (!o.overwrite) throw UsageError("-o " + o.output + ": exists; -w/--overwrite replaces it");
    }
    checkWritableTarget(o.output, "output");
    progress("loading " + o.input);
    if (classifyInput(o.input) == InputKind::kOnnx)
      throw Error(o.input + ": an ONNX model, not a splat file (splatforge onnx run " + o.input + " --save-splats OUT writes a generator's gaussians)");
    LoadedSplats l = loadSplats(o.input);
    printWarnings("convert", l.warnings);
    if (const std::string edits = applyConvertEdits(l.cloud, o); !edits.empty()) progress(edits);
    const std::vector<std::string> losses = exportLosses(l.cloud, format);
    if (!losses.empty() && o.strict) {
      std::string all;
      for (const std::string& loss : losses) all += "\n  " + loss;
      throw Error(o.output + ": the conversion would lose information (--strict refuses):" + all);
    }
    printWarnings("convert", losses);
    progress(fmt::format("loaded {} gaussians ({}), writing {}", l.cloud.size(), formatName(l.format), o.output));
    saveSplats(l.cloud, o.output);
    fmt::print("wrote {} ({} gaussians)\ntime: {:.3f} s\n", o.output, l.cloud.size(), secondsSince(t0));
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("convert", e);
  }
}

int runRender(const RenderOptions& o) {
  try {
    auto t0 = Clock::now();
    if (fileExtension(o.output) != ".png") throw UsageError("-o " + o.output + ": expected a .png path (this command writes a PNG)");
    checkWritableTarget(o.output, "output");
    const FloatOutputs extra{o.save_float, o.save_depth};
    extra.check();
    RenderSettings settings;
    if (!o.background.empty()) settings.background = parseColor(o.background);
    settings.antialiased = o.antialiased;

    if (!std::isfinite(o.time)) throw UsageError("--time must be a finite number of seconds");
    Camera cam;  // a camera file is checked before the scene loads (a typo should not wait for a large scene)
    if (!o.camera.empty()) cam = loadCameraJson(o.camera, o.width, o.height);
    Scene scene = loadInput("render", o.input, o.clip, !o.keep_going, o.allow_outside_paths, o.width, o.height, !o.background.empty(), settings);
    applyHullOptions(scene, o.hull_mode, o.light);
    double load_s = secondsSince(t0);
    if (o.camera.empty())
      cam = scene.camera ? *scene.camera : autoCamera(scene, o.width.value_or(kDefaultWidth), o.height.value_or(kDefaultHeight), o.time);  // framed as drawn
    return renderAndWrite("render", scene, o.time, cam, settings, {o.backend, o.device, o.validation}, o.output, extra, t0, load_s);
  } catch (const std::exception& e) {
    return reportFailure("render", e);
  }
}

namespace {

// Expands a frame pattern with one printf-style integer field (%d or %0Nd); throws sf::Error otherwise.
struct FramePattern {
  std::string prefix, suffix;
  int width = 0;
  static FramePattern parse(const std::string& pattern) {
    FramePattern p;
    size_t at = pattern.find('%');
    if (at == std::string::npos || pattern.find('%', at + 1) != std::string::npos)
      throw UsageError("-o " + pattern + ": expected one frame-number field such as %04d (frames/%04d.png) or a .mp4 path");
    size_t k = at + 1;
    while (k < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[k]))) ++k;
    if (k >= pattern.size() || pattern[k] != 'd')
      throw UsageError("-o " + pattern + ": the frame-number field must be %d or %0Nd, like %04d");
    if (k > at + 1) p.width = std::stoi(pattern.substr(at + 1, k - at - 1));
    if (p.width > 12) throw UsageError("-o " + pattern + ": frame-number width above 12 digits");
    p.prefix = pattern.substr(0, at), p.suffix = pattern.substr(k + 1);
    if (fileExtension(p.suffix) != ".png") throw UsageError("-o " + pattern + ": frames are written as PNG; end the pattern with .png");
    return p;
  }
  std::string operator()(size_t frame) const {
    std::string n = std::to_string(frame);
    if (static_cast<int>(n.size()) < width) n.insert(0, static_cast<size_t>(width) - n.size(), '0');
    return prefix + n + suffix;
  }
};

// ffmpeg on PATH, or empty.
std::string findOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return {};
  std::string dirs = path;
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / program;
    std::error_code ec;
    if (!dirs.substr(start, end - start).empty() && std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    start = end + 1;
  }
  return {};
}

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// One progress line: a bar when stderr is a terminal, otherwise a line every tenth of the work.
class ProgressBar {
 public:
  explicit ProgressBar(size_t total) : total_(total), tty_(isatty(2) != 0), t0_(Clock::now()) {}
  void update(size_t done) {
    const double elapsed = secondsSince(t0_);
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
    const size_t filled = total_ ? done * 30 / total_ : 30;
    std::string line = fmt::format("  [{}{}] {}/{} frames  {:.2f} fps  eta {:.1f} s", std::string(filled, '#'), std::string(30 - filled, '.'),
                                   done, total_, rate, eta);
    if (tty_) {
      fmt::print(stderr, "\r{}{}", line, done == total_ ? "\n" : "");
    } else if (done == total_ || done * 10 / total_ != last_decile_) {
      fmt::print(stderr, "{}\n", line);
      last_decile_ = done * 10 / total_;
    }
  }

 private:
  size_t total_;
  bool tty_;
  Clock::time_point t0_;
  size_t last_decile_ = 0;
};

// Ctrl-C (SIGINT) or SIGTERM while frames are written: the handler only raises a flag; the loop stops after
// the frame in hand and removes what this run wrote, so an interrupted run leaves no partial output.
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void onInterrupt(int) { g_interrupted = 1; }

class InterruptGuard {
 public:
  InterruptGuard() {
    g_interrupted = 0;
    previous_int_ = std::signal(SIGINT, onInterrupt);
    previous_term_ = std::signal(SIGTERM, onInterrupt);
    // A process started with the signal ignored (`animate ... &` from a script) keeps ignoring it.
    if (previous_int_ == SIG_IGN) std::signal(SIGINT, SIG_IGN);
    if (previous_term_ == SIG_IGN) std::signal(SIGTERM, SIG_IGN);
  }
  ~InterruptGuard() {
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  bool interrupted() const { return g_interrupted != 0; }

 private:
  void (*previous_int_)(int) = SIG_DFL;
  void (*previous_term_)(int) = SIG_DFL;
};

}  // namespace

int runAnimate(const AnimateOptions& o) {
  // What this run wrote, removed when it is interrupted or fails: no partial output is left behind.
  const bool mp4 = fileExtension(o.output) == ".mp4";
  std::filesystem::path frames_dir;
  FramePattern pattern;
  size_t written = 0;
  auto removePartial = [&] {
    std::error_code ec;
    if (mp4) {
      if (!frames_dir.empty()) std::filesystem::remove_all(frames_dir, ec);
      std::filesystem::remove(o.output + ".partial.mp4", ec);
    } else {
      for (size_t k = 0; k < written; ++k) std::filesystem::remove(pattern(k), ec);
    }
  };
  InterruptGuard interrupt;
  try {
    auto t0 = Clock::now();
    if (!(o.fps > 0 && o.fps <= 1000)) throw UsageError("--fps must be in (0, 1000]");
    if (o.duration_given && !(o.duration > 0 && o.duration <= 3600)) throw UsageError("--duration must be in (0, 3600] seconds");
    if (!std::isfinite(o.start)) throw UsageError("--start must be a finite number of seconds");
    std::string ffmpeg;
    if (mp4) {
      checkWritableTarget(o.output, "output");
      ffmpeg = findOnPath("ffmpeg");
      if (ffmpeg.empty())
        throw Error("-o " + o.output + ": writing MP4 needs ffmpeg on PATH (apt-get install ffmpeg); or write PNG frames with -o frames/%04d.png");
      pattern = FramePattern::parse((std::filesystem::path(o.output + ".frames") / "%06d.png").string());
      std::error_code ec;
      std::filesystem::remove_all(o.output + ".frames", ec);
      makeOutputFolder(o.output + ".frames");
      frames_dir = o.output + ".frames";
    } else {
      pattern = FramePattern::parse(o.output);
      std::filesystem::path parent = std::filesystem::path(pattern(0)).parent_path();
      if (!parent.empty()) makeOutputFolder(parent.string());
    }

    RenderSettings settings;
    if (!o.default_background.empty()) settings.background = parseColor(o.default_background);
    if (!o.background.empty()) settings.background = parseColor(o.background);
    Camera cam;  // a camera file is checked before the scene loads
    if (!o.camera.empty()) cam = loadCameraJson(o.camera, o.width, o.height);
    Scene scene = loadInput(o.command.c_str(), o.input, o.clip, !o.keep_going, o.allow_outside_paths, o.width, o.height, !o.background.empty(), settings);
    applyHullOptions(scene, o.hull_mode, o.light);
    double duration = o.duration;
    if (!o.hull_script.empty()) {  // every hull of the input plays the script
      const hull::HullScript script = hull::loadHullScript(o.hull_script);
      hull::DestructionOptions dopt;
      dopt.seed = o.seed.value_or(script.seed.value_or(1));
      size_t hulls = 0;
      for (SceneObject& obj : scene.objects) {
        if (!obj.hull) continue;
        // A scene's own standing effects stay as the script's base; its own script and seed give way.
        const hull::HullEffects base = obj.hull_live ? obj.hull_live->effects : hull::HullEffects{};
        obj.hull_live = std::make_shared<hull::HullInstance>(obj.hull, dopt);
        obj.hull_live->effects = base;
        obj.hull_script = std::make_shared<hull::HullScriptPlayer>(script, base);
        ++hulls;
      }
      if (hulls == 0) throw Error(o.input + ": holds no splat hull to play the script on");
      if (!o.duration_given) duration = script.duration;
      progress(fmt::format("playing {} ({} events, {:.2f} s, seed {}) on {} hull{}", o.hull_script, script.events.size(), script.duration,
                           dopt.seed, hulls, hulls == 1 ? "" : "s"));
    }
    if (o.camera.empty() && scene.camera) {
      cam = *scene.camera;
    } else if (o.camera.empty()) {
      // A played hull moves (parts turn, panels lift, wounds open): framed on its box over the whole clip,
      // sampled every 0.1 s or so. The scripts replay from the start when the first frame goes back in time.
      std::vector<double> times{o.start};
      if (!o.hull_script.empty()) {
        const int n = static_cast<int>(std::clamp(std::ceil(duration / 0.1) + 1.0, 2.0, 121.0));
        for (int k = 1; k < n; ++k) times.push_back(o.start + duration * static_cast<double>(k) / static_cast<double>(n - 1));
      }
      cam = autoCameraOverClip(scene, o.width.value_or(kDefaultWidth), o.height.value_or(kDefaultHeight), times);
    }
    const double load_s = secondsSince(t0);

    const size_t frames = std::max<size_t>(1, static_cast<size_t>(std::llround(duration * o.fps)));
    FrameDriver driver(BackendChoice{o.backend, o.device, o.validation}.driver());
    progress(fmt::format("animating {} frames at {} fps ({:.3f} s from t = {}) at {}x{} on {} ({})", frames, o.fps, duration, o.start,
                         cam.width, cam.height, driver.describe(), sceneSummary(scene)));
    ProgressBar bar(frames);
    std::vector<double> frame_ms;
    // --orbit: camera-to-world' = T(c) Ry(a) T(-c) camera-to-world about the centre c of the scene's box.
    Vec3 pivot{0, 0, 0};
    if (o.orbit_deg != 0) {
      const CloudBounds b = sceneBounds(scene);
      pivot = (b.p01 + b.p99) * 0.5f;
    }
    auto stopped = [&](const char* when) {
      removePartial();
      fmt::print(stderr, "splatforge {}: interrupted {}; the partial output was removed\n", o.command, when);
      return 130;  // 128 + SIGINT, as a shell reports it
    };
    for (size_t i = 0; i < frames; ++i) {
      if (interrupt.interrupted()) return stopped(fmt::format("after {} of {} frames", i, frames).c_str());
      auto tf = Clock::now();
      Camera frame_cam = cam;
      if (o.orbit_deg != 0) {
        const double a = -o.orbit_deg * std::numbers::pi / 180.0 * (frames > 1 ? static_cast<double>(i) / static_cast<double>(frames - 1) : 0.0);
        const Mat3 ry = rotationMatrix(Quat{static_cast<float>(std::cos(a / 2)), 0, static_cast<float>(std::sin(a / 2)), 0});
        frame_cam.world_to_camera = cam.world_to_camera * Mat4::fromLinearTranslation(Mat3{}, pivot) * Mat4::fromLinearTranslation(ry, Vec3{0, 0, 0}) *
                                    Mat4::fromLinearTranslation(Mat3{}, -pivot);
      }
      const FrameResult f = driver.render(scene, {o.start + static_cast<double>(i) / o.fps, frame_cam, settings, {}});
      writePng(pattern(i), f.image);
      written = i + 1;
      frame_ms.push_back(secondsSince(tf) * 1e3);
      bar.update(i + 1);
    }
    if (interrupt.interrupted()) return stopped("during the last frame");
    if (mp4) {
      const std::string tmp = o.output + ".partial.mp4";
      const std::string cmd = fmt::format("{} -y -loglevel error -framerate {} -i {} -c:v libx264 -pix_fmt yuv420p -crf 18 {}", shellQuote(ffmpeg),
                                          o.fps, shellQuote((frames_dir / "%06d.png").string()), shellQuote(tmp));
      progress("encoding " + o.output + " with " + ffmpeg);
      const int rc = std::system(cmd.c_str());
      // system() ignores SIGINT in this process while ffmpeg runs: ffmpeg ends by it, killed or (its own
      // handler) with exit status 255.
      const bool ffmpeg_interrupted =
          rc != -1 && ((WIFSIGNALED(rc) && (WTERMSIG(rc) == SIGINT || WTERMSIG(rc) == SIGTERM)) || (WIFEXITED(rc) && WEXITSTATUS(rc) == 255));
      if (interrupt.interrupted() || ffmpeg_interrupted) return stopped("while encoding");
      if (rc != 0 || !std::filesystem::exists(tmp)) {
        std::filesystem::remove(tmp);
        const std::string kept = frames_dir.string();
        frames_dir.clear();  // the frames stay, for another encoder (removePartial leaves them)
        throw Error(fmt::format("ffmpeg failed (exit status {}); the frames are kept in {}", rc, kept));
      }
      std::filesystem::rename(tmp, o.output);
      std::filesystem::remove_all(frames_dir);
      fmt::print("wrote {} ({} frames at {} fps)\n", o.output, frames, o.fps);
    } else {
      fmt::print("wrote {} .. {} ({} frames at {} fps)\n", pattern(0), pattern(frames - 1), frames, o.fps);
    }
    std::vector<double> sorted = frame_ms;
    std::sort(sorted.begin(), sorted.end());
    fmt::print("time: {:.3f} s total (load {:.3f} s; median {:.1f} ms per frame including PNG writing)\n", secondsSince(t0), load_s,
               sorted[sorted.size() / 2]);
    return 0;
  } catch (const std::exception& e) {
    removePartial();
    return reportFailure(o.command, e);
  }
}

int runDemo(const DemoOptions& o) {
  try {
    auto t0 = Clock::now();
    if (fileExtension(o.output) != ".png") throw UsageError("-o " + o.output + ": expected a .png path (this command writes a PNG)");
    checkWritableTarget(o.output, "output");
    const FloatOutputs extra{o.save_float, o.save_depth};
    extra.check();
    Scene scene = makeDemoScene(o.width, o.height);
    RenderSettings settings;
    settings.background = *scene.background;
    return renderAndWrite("demo", scene, 0.0, *scene.camera, settings, {o.backend, o.device, o.validation}, o.output, extra, t0,
                          secondsSince(t0));
  } catch (const std::exception& e) {
    return reportFailure("demo", e);
  }
}

int runDevices(const DevicesOptions& o) {
  const uint32_t loader = gpu::loaderVersion();
  const std::vector<gpu::DeviceInfo> devices = gpu::listDevices();
  const std::vector<gpu::LayerInfo> layers = gpu::listLayers();
  if (o.json) {
    std::string out = fmt::format("{{\n  \"loader\": \"{}\",\n  \"devices\": [", loader ? gpu::versionString(loader) : "");
    for (const gpu::DeviceInfo& d : devices)
      out += fmt::format("{}\n    {{\"index\": {}, \"name\": \"{}\", \"type\": \"{}\", \"api\": \"{}\", \"subgroup_size\": {}, "
                         "\"device_local_bytes\": {}, \"driver\": \"{}\", \"driver_info\": \"{}\", \"driver_version\": {}}}",
                         &d == &devices.front() ? "" : ",", d.index, jsonEscape(d.name), d.typeName(), gpu::versionString(d.api_version),
                         d.subgroup_size, d.device_local_bytes, jsonEscape(d.driver_name), jsonEscape(d.driver_info), d.driver_version);
    out += devices.empty() ? "],\n  \"layers\": [" : "\n  ],\n  \"layers\": [";
    for (const gpu::LayerInfo& l : layers)
      out += fmt::format("{}\n    {{\"name\": \"{}\", \"spec\": \"{}\", \"implementation\": {}}}", &l == &layers.front() ? "" : ",",
                         jsonEscape(l.name), gpu::versionString(l.spec_version), l.implementation_version);
    out += layers.empty() ? "]\n}\n" : "\n  ]\n}\n";
    fmt::print("{}", out);
  } else {
    if (loader) fmt::print("Vulkan loader {}\n", gpu::versionString(loader));
    for (const gpu::DeviceInfo& d : devices)
      fmt::print("device {}: {} ({}, Vulkan {}, subgroup {}, {:.1f} GiB device-local); driver {}: {}\n", d.index, d.name, d.typeName(),
                 gpu::versionString(d.api_version), d.subgroup_size, static_cast<double>(d.device_local_bytes) / (1 << 30),
                 d.driver_name.empty() ? "(unnamed)" : d.driver_name, d.driver_info);
    for (const gpu::LayerInfo& l : layers)
      fmt::print("layer {} (Vulkan {}, implementation {})\n", l.name, gpu::versionString(l.spec_version), l.implementation_version);
  }
  if (!loader) return fail("devices", "Vulkan loader (libvulkan.so.1) not found; install libvulkan1 and a driver (Debian: mesa-vulkan-drivers)");
  if (devices.empty()) return fail("devices", "no Vulkan device found (for a CPU device install mesa-vulkan-drivers)");
  return 0;
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int runBench(const BenchOptions& o) {
  try {
    JsonStdout human(o.json);
    std::string dir = o.assets.empty() ? defaultAssetsDir() : o.assets;
    // The sample assets are needed for --loads and for the default scene: say where they were looked for.
    if ((o.loads || (o.synthetic == 0 && o.input.empty())) && !std::filesystem::is_directory(dir + "/splats"))
      throw Error("sample assets not found at " + dir + " (looked for " + dir + "/splats): give --assets DIR or set SPLATFORGE_ASSETS" +
                  (o.assets.empty() && !std::getenv("SPLATFORGE_ASSETS") ? " (the default, ../shared/assets, is relative to the current folder)" : ""));
    std::string json = "{\n";
    if (o.loads) {
      const std::string files[] = {dir + "/splats/biker.ply", dir + "/splats/biker.compressed.ply", dir + "/splats/biker.spz"};
      json += "  \"loads\": [";
      for (const std::string& f : files) {
        std::vector<uint8_t> bytes = readFile(f);
        std::vector<double> times;
        for (int r = 0; r < std::max(3, o.frames); ++r) {
          auto t0 = Clock::now();
          LoadedSplats l = decodeSplats(bytes, f);
          times.push_back(secondsSince(t0));
        }
        double t = median(times), mb = static_cast<double>(bytes.size()) / 1e6;
        fmt::print("load {:<24} {:8.1f} MB/s  ({:.2f} MB in {:.1f} ms, median of {})\n", std::filesystem::path(f).filename().string(),
                   mb / t, mb, t * 1e3, times.size());
        json += fmt::format("{}{{\"file\": \"{}\", \"mb\": {:.3f}, \"ms\": {:.3f}, \"mb_per_s\": {:.1f}}}",
                            &f == &files[0] ? "" : ", ", jsonEscape(std::filesystem::path(f).filename().string()), mb, t * 1e3, mb / t);
      }
      json += "],\n";
    }

    // The scene to render.
    std::shared_ptr<GaussianCloud> cloud;
    std::string what;
    Scene scene;
    if (o.synthetic > 0) {
      cloud = std::make_shared<GaussianCloud>(makeSyntheticCloud(o.synthetic, std::max(0, o.sh_degree)));
      what = fmt::format("synthetic {} gaussians", o.synthetic);
    } else {
      std::string input = o.input.empty() ? dir + "/splats/biker.spz" : o.input;
      if (classifyInput(input) == InputKind::kSceneJson) {
        SceneLoadOptions lo;
        lo.strict = true;  // a benchmark of a scene missing an object measures something else
        lo.confine_paths = !o.allow_outside_paths;
        scene = loadSceneJson(input, lo);
        printWarnings("bench", scene.warnings);
      } else if (classifyInput(input) == InputKind::kOnnx) {
        scene = sceneFromFile(input);  // a neural generator: one object
      } else {
        LoadedSplats loaded = loadSplats(input);
        printWarnings("bench", loaded.warnings);
        cloud = std::make_shared<GaussianCloud>(std::move(loaded.cloud));
        if (o.sh_degree > 0) padShDegree(*cloud, o.sh_degree);
      }
      what = std::filesystem::path(input).filename().string();
    }
    if (cloud) {
      if (o.copies > 1) {
        scene = tiledScene(cloud, o.copies);
        what += fmt::format(" x{} copies", o.copies);
      } else {
        SceneObject obj;
        obj.name = what;
        obj.cloud = cloud;
        scene.objects.push_back(obj);
      }
    }
    for (const SceneObject& obj : scene.objects)
      if (obj.model || obj.character)
        throw Error("bench measures splat rendering: " + obj.source + " is a glTF model or character; use bench-characters or animate");
    if (!scene.script.empty()) throw Error("bench measures splat rendering: the scene's script spawns characters; use bench-characters");
    // Neural generators run every frame (scene time advancing 1/30 s per frame): on the Vulkan backend in the
    // frame (their time is in the "generators" figure), on the CPU backend through the CPU executor.
    const bool generators = std::any_of(scene.objects.begin(), scene.objects.end(), [](const SceneObject& ob) { return ob.generator != nullptr; });
    if (generators && !o.save_scene.empty())
      throw Error("--save-scene: the scene's gaussians come from a neural generator each frame; save them with onnx run --save-splats");
    Camera cam = !o.camera.empty() ? loadCameraJson(o.camera, o.width_given ? std::optional<int>(o.width) : std::nullopt,
                                                    o.height_given ? std::optional<int>(o.height) : std::nullopt)
                 : scene.camera ? *scene.camera
                                : autoCamera(scene, o.width, o.height);
    if (!o.save_scene.empty()) {
      // One world-space cloud: each object's cloud placed by its transform, in object order.
      const std::vector<RenderObject> objects = scene.renderObjects();
      std::vector<GaussianCloud> placed;
      placed.reserve(objects.size());
      for (size_t k = 0; k < objects.size(); ++k) {
        const GaussianCloud& c = *objects[k].cloud;
        const std::string name = k < scene.objects.size() ? scene.objects[k].name : std::to_string(k);
        if (c.color_space != objects[0].cloud->color_space || c.antialiased != objects[0].cloud->antialiased)
          throw Error("--save-scene: object " + name + " differs from the first in colour space or antialiasing; one file holds one of each");
        placed.push_back(c);
        try {
          transformCloud(placed.back(), objects[k].object_to_world);
        } catch (const Error& e) {
          throw Error("--save-scene: object " + name + ": " + e.what());
        }
      }
      std::vector<const GaussianCloud*> parts;
      for (const GaussianCloud& c : placed) parts.push_back(&c);
      const GaussianCloud merged = mergeClouds(parts);
      placed.clear();
      saveSplats(merged, o.save_scene);
      fmt::print("wrote {} ({} gaussians in world space, SH degree {})\n", o.save_scene, merged.size(), merged.sh_degree);
    }
    FrameDriverOptions fo = BackendChoice{o.backend, o.device, o.validation}.driver();
    // bench times the Vulkan frame wherever a Vulkan device exists, a CPU one (lavapipe) included, where the
    // other commands' `auto` prefers the CPU renderer.
    if (fo.backend == Backend::kAuto && gpu::vulkanAvailable()) fo.backend = Backend::kVulkan;
    fo.message = [](const std::string& line) { fmt::print(stderr, "bench: {}\n", line); };
    if (o.back_to_back > 0 && fo.backend == Backend::kCpu) throw UsageError("--back-to-back times the Vulkan frame; this bench runs on the CPU renderer");
    FrameDriver driver(fo);
    if (o.back_to_back > 0 && !driver.usesVulkan()) throw Error("--back-to-back times the Vulkan frame; this bench runs on the CPU renderer");
    // Frame f at scene time f / 30 s: generators run every frame (on the Vulkan backend in the frame, their
    // time in the "generators" figure; on the CPU backend through the CPU executor, in the total).
    auto request = [&](int f) { return FrameRequest{f / 30.0, cam, {}, {}}; };
    // Warm-up: uploads, pipeline compilation, buffer growth, the generators' GPU plans.
    const FrameResult warm = driver.render(scene, request(0));
    const int degree = warm.sh_degree;
    fmt::print("scene: {} ({} objects, {} gaussians, SH degree {}), {}x{}, {} timed frames\n", what, scene.objects.size(), warm.splats, degree,
               cam.width, cam.height, o.frames);
    json += fmt::format("  \"scene\": \"{}\",\n  \"objects\": {},\n  \"gaussians\": {},\n  \"sh_degree\": {},\n  \"width\": {},\n  \"height\": {},\n  \"frames\": {},\n",
                        jsonEscape(what), scene.objects.size(), warm.splats, degree, cam.width, cam.height, o.frames);
    if (driver.usesVulkan()) {
      VulkanRenderer& renderer = *driver.vulkan();
      const gpu::DeviceInfo& dev = renderer.device();
      fmt::print("device: {} ({}, subgroup {}, {:.1f} GiB device-local)\n", dev.name, dev.typeName(), dev.subgroup_size,
                 static_cast<double>(dev.device_local_bytes) / (1 << 30));
      if (o.show_graph) fmt::print("frame graph:\n{}", renderer.lastFrameGraph());
      std::vector<double> gen, pre, bin, scan, emit, sort, raster, readback, all, wall;
      VulkanFrameStats st = warm.gpu;
      for (int f = 0; f < o.frames; ++f) {
        const auto t0 = Clock::now();
        st = driver.render(scene, request(f + 1)).gpu;
        wall.push_back(secondsSince(t0) * 1e3);
        const VulkanPassTimes& t = st.times;
        gen.push_back(t.mesh);
        pre.push_back(t.preprocess), bin.push_back(t.bin), scan.push_back(t.scan), emit.push_back(t.emit), sort.push_back(t.sort);
        raster.push_back(t.raster), readback.push_back(t.readback), all.push_back(t.total);
      }
      double frame_no_readback = median(all) - median(readback);
      fmt::print("visible {} gaussians, {} tile pairs, {} merge passes\n", st.visible, st.tile_keys, st.sort_passes);
      fmt::print("gpu median ms: {}preprocess {:.3f} | bin {:.3f} | tile ranges {:.3f} | emit {:.3f} | tile sort {:.3f} | "
                 "raster {:.3f} | readback {:.3f}\n",
                 generators ? fmt::format("generators {:.3f} | ", median(gen)) : "", median(pre), median(bin), median(scan), median(emit), median(sort),
                 median(raster), median(readback));
      fmt::print("gpu frame: {:.3f} ms total, {:.3f} ms without the image readback; binning and sorting {:.3f} ms for {} slots and {} pairs\n",
                 median(all), frame_no_readback, median(bin) + median(scan) + median(emit) + median(sort), st.splats, st.tile_keys);
      fmt::print("wall clock: {:.3f} ms per render call (recording, submission, wait, image copy to the host)\n", median(wall));
      json += fmt::format("  \"backend\": \"vulkan\",\n  \"device\": \"{}\",\n  \"visible\": {},\n  \"tile_pairs\": {},\n", jsonEscape(dev.name),
                          st.visible, st.tile_keys);
      if (o.back_to_back > 0) {
        const VulkanPassTimes b = medianPassTimes(driver.renderBackToBack(scene, request(o.frames), o.back_to_back, &st));
        fmt::print("back to back ({} frames in one submission), gpu median ms: {}preprocess {:.3f} | bin {:.3f} | tile ranges {:.3f} | emit {:.3f} | "
                   "tile sort {:.3f} | raster {:.3f} | frame without readback {:.3f}\n",
                   o.back_to_back, generators ? fmt::format("generators {:.3f} | ", b.mesh) : "", b.preprocess, b.bin, b.scan, b.emit, b.sort, b.raster,
                   b.total - b.readback);
        json += fmt::format("  \"back_to_back\": {{\"frames\": {}, \"generators\": {:.4f}, \"preprocess\": {:.4f}, \"bin\": {:.4f}, \"tile_ranges\": {:.4f}, "
                            "\"emit\": {:.4f}, \"tile_sort\": {:.4f}, \"raster\": {:.4f}, \"total_without_readback\": {:.4f}}},\n",
                            o.back_to_back, b.mesh, b.preprocess, b.bin, b.scan, b.emit, b.sort, b.raster, b.total - b.readback);
        if (renderer.context().validationErrors() > 0) throw Error(validationFailure(renderer.context()));
      }
      if (generators) json += fmt::format("  \"generators_ms\": {:.4f},\n", median(gen));
      json += fmt::format("  \"median_ms\": {{\"preprocess\": {:.4f}, \"bin\": {:.4f}, \"tile_ranges\": {:.4f}, \"emit\": {:.4f}, "
                          "\"tile_sort\": {:.4f}, \"raster\": {:.4f}, \"readback\": {:.4f}, \"total\": {:.4f}, "
                          "\"total_without_readback\": {:.4f}}},\n  \"wall_ms_per_call\": {:.4f}\n}}\n",
                          median(pre), median(bin), median(scan), median(emit), median(sort), median(raster), median(readback), median(all),
                          frame_no_readback, median(wall));
    } else {
      RenderStats st = warm.cpu;
      std::vector<double> pre, sort, raster, all;
      for (int f = 0; f < o.frames; ++f) {
        auto t0 = Clock::now();
        st = driver.render(scene, request(f + 1)).cpu;  // the CPU executor's time counts in the total
        all.push_back(secondsSince(t0) * 1e3);
        pre.push_back(st.preprocess_ms), sort.push_back(st.sort_ms), raster.push_back(st.raster_ms);
      }
      fmt::print("cpu ({} threads): visible {}, {} tile pairs\n", workerCount(), st.visible, st.tile_keys);
      fmt::print("cpu median ms: preprocess {:.1f} | sort {:.1f} | raster {:.1f} | total {:.1f}\n", median(pre), median(sort), median(raster),
                 median(all));
      json += fmt::format("  \"backend\": \"cpu\",\n  \"threads\": {},\n  \"visible\": {},\n  \"tile_pairs\": {},\n", workerCount(), st.visible,
                          st.tile_keys);
      json += fmt::format("  \"median_ms\": {{\"preprocess\": {:.3f}, \"sort\": {:.3f}, \"raster\": {:.3f}, \"total\": {:.3f}}}\n}}\n", median(pre),
                          median(sort), median(raster), median(all));
    }
    human.release();
    emitJson(json, o.json, o.json_out);
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("bench", e);
  }
}

namespace {

std::string matrixJson(const Mat4& m) {
  return fmt::format("[[{}, {}, {}, {}], [{}, {}, {}, {}], [{}, {}, {}, {}], [{}, {}, {}, {}]]", m.m[0][0], m.m[0][1], m.m[0][2], m.m[0][3],
                     m.m[1][0], m.m[1][1], m.m[1][2], m.m[1][3], m.m[2][0], m.m[2][1], m.m[2][2], m.m[2][3], m.m[3][0], m.m[3][1], m.m[3][2],
                     m.m[3][3]);
}

std::string matrixText(const Mat4& m) {
  return fmt::format("[{: .4f} {: .4f} {: .4f} {: .4f} | {: .4f} {: .4f} {: .4f} {: .4f} | {: .4f} {: .4f} {: .4f} {: .4f}]", m.m[0][0],
                     m.m[0][1], m.m[0][2], m.m[0][3], m.m[1][0], m.m[1][1], m.m[1][2], m.m[1][3], m.m[2][0], m.m[2][1], m.m[2][2], m.m[2][3]);
}

}  // namespace

int runPose(const PoseOptions& o) {
  try {
    auto t0 = Clock::now();
    if (!std::isfinite(o.time)) throw UsageError("--time must be a finite number of seconds");
    const GltfModel model(o.input);
    const GltfDocument& doc = model.document();
    const anim::Skeleton& skeleton = model.skeleton();

    // The clip: --clip by name or index; default the first; the rest pose when the file has none.
    int clip_index = -1;
    if (!o.clip.empty()) {
      clip_index = model.findClip(o.clip);
      if (clip_index < 0)
        throw Error(fmt::format("--clip '{}': {} has no animation of that name or index ({} animations{}{})", o.clip, o.input,
                                doc.animations.size(), doc.animations.empty() ? "" : ": ", model.clipList()));
    } else if (!doc.animations.empty()) {
      clip_index = 0;
    }
    const anim::Clip clip = clip_index >= 0 ? model.clips()[static_cast<size_t>(clip_index)] : anim::Clip{};
    GltfModel::Pose pose;
    model.pose(clip_index, static_cast<float>(o.time), pose);
    const std::vector<Mat4>& models = pose.models;

    // Every drawn primitive, morphed with its sampled weights and skinned when it has a skin, in world space.
    int shown_skin = -1, shown_mesh_node = -1;
    for (size_t n = 0; n < doc.nodes.size() && shown_skin < 0; ++n)
      if (doc.nodes[n].mesh >= 0 && doc.nodes[n].skin >= 0) shown_skin = doc.nodes[n].skin, shown_mesh_node = static_cast<int>(n);
    Vec3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
    size_t vertices = 0;
    for (const RenderMesh& m : model.renderMeshes(pose, Mat4{})) {
      for (const Vec3& p : m.positions) {
        Vec3 w = transformPoint(m.object_to_world, p);
        for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], w[k]), hi[k] = std::max(hi[k], w[k]);
      }
      vertices += m.positions.size();
    }

    // What to list: the first skin's joints, else every node.
    std::vector<int> listed;
    if (shown_skin >= 0) listed = doc.skins[static_cast<size_t>(shown_skin)].joints;
    else
      for (size_t n = 0; n < doc.nodes.size(); ++n) listed.push_back(static_cast<int>(n));
    const char* what = shown_skin >= 0 ? "joints" : "nodes";
    std::string clip_name = clip_index >= 0 ? doc.animations[static_cast<size_t>(clip_index)].name : "";
    if (o.json) {
      fmt::print("{{\n  \"file\": \"{}\",\n", jsonEscape(o.input));
      if (clip_index >= 0)
        fmt::print("  \"clip\": {{\"index\": {}, \"name\": \"{}\", \"duration\": {}}},\n", clip_index, jsonEscape(clip_name), clip.duration);
      else
        fmt::print("  \"clip\": null,\n");
      fmt::print("  \"time\": {},\n  \"skin\": {},\n  \"mesh_node\": {},\n  \"{}\": [\n", o.time, shown_skin, shown_mesh_node, what);
      for (size_t i = 0; i < listed.size(); ++i) {
        int node = listed[i];
        fmt::print("    {{\"node\": {}, \"name\": \"{}\", \"world\": {}}}{}\n", node, jsonEscape(doc.nodes[static_cast<size_t>(node)].name),
                   matrixJson(models[static_cast<size_t>(skeleton.findSource(node))]), i + 1 < listed.size() ? "," : "");
      }
      fmt::print("  ],\n  \"vertices\": {}", vertices);
      if (vertices > 0) fmt::print(",\n  \"bounds\": {{\"min\": {}, \"max\": {}}}", vecJson(lo), vecJson(hi));
      fmt::print("\n}}\n");
      fmt::print(stderr, "  time: {:.3f} s\n", secondsSince(t0));
      return 0;
    }
    fmt::print("file:     {}\n", o.input);
    if (clip_index >= 0) fmt::print("clip:     {} '{}' ({:.3f} s, {} tracks)\n", clip_index, clip_name, clip.duration, clip.tracks.size());
    else fmt::print("clip:     none (rest pose)\n");
    fmt::print("at:       {:.4f} s\n", o.time);
    if (shown_skin >= 0) fmt::print("skin:     {} ({} joints) on node {}\n", shown_skin, listed.size(), shown_mesh_node);
    fmt::print("{} world matrices (rows 0-2 of the 4x4):\n", what);
    for (int node : listed)
      fmt::print("  {:>4} {:<28} {}\n", node, doc.nodes[static_cast<size_t>(node)].name, matrixText(models[static_cast<size_t>(skeleton.findSource(node))]));
    if (vertices > 0) fmt::print("bounds:   min {}  max {}  ({} vertices)\n", vecText(lo), vecText(hi), vertices);
    else fmt::print("bounds:   no mesh\n");
    fmt::print("time:     {:.3f} s\n", secondsSince(t0));
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("pose", e);
  }
}

int runBenchSkin(const BenchSkinOptions& o) {
  try {
    JsonStdout human(o.json);
    GltfDocument doc = loadGltf(o.input);
    if (doc.animations.empty()) throw Error(o.input + ": has no animation to play");
    int mesh_node = -1;
    for (size_t n = 0; n < doc.nodes.size() && mesh_node < 0; ++n)
      if (doc.nodes[n].skin >= 0 && doc.nodes[n].mesh >= 0) mesh_node = static_cast<int>(n);
    if (mesh_node < 0) throw Error(o.input + ": has no skinned mesh node");
    const GltfNode& node = doc.nodes[static_cast<size_t>(mesh_node)];
    const GltfPrimitive& prim = doc.meshes[static_cast<size_t>(node.mesh)].primitives[0];
    anim::Skeleton skeleton = anim::skeletonFromGltf(doc);
    anim::Clip clip = anim::clipFromGltf(doc, 0, skeleton);
    anim::SkinBinding skin = anim::skinFromGltf(doc, static_cast<size_t>(node.skin), skeleton, mesh_node);
    const size_t joints = skin.joints.size();
    const auto method = o.method == "dqs" ? anim::SkinningMethod::kDualQuaternion : anim::SkinningMethod::kLinearBlend;

    gpu::ContextOptions co;
    co.device = o.device;
    co.validation = o.validation;
    gpu::Context ctx(co);
    anim::SkinningJob mesh;
    mesh.positions = prim.positions;
    mesh.normals = prim.normals;
    mesh.joints0 = prim.joints0;
    mesh.weights0 = prim.weights0;
    mesh.joints1 = prim.joints1;
    mesh.weights1 = prim.weights1;
    GpuSkinnedCrowd crowd(ctx, mesh, joints, o.instances);
    fmt::print("crowd: {} instances of {} ({} vertices, {} joints), {} skinning on {} ({}), {} timed frames\n", o.instances, o.input,
               prim.positions.size(), joints, o.method, ctx.info().name, ctx.info().typeName(), o.frames);

    std::vector<Mat4> palettes(o.instances * joints);
    std::vector<double> cpu_ms, gpu_ms;
    // Instances pose in parallel, in runs of kGrain with their own scratch (sampling, hierarchy, palette).
    constexpr size_t kGrain = 16;
    const unsigned threads = static_cast<unsigned>(std::min<size_t>(workerCount(), (o.instances + kGrain - 1) / kGrain));
    for (int f = 0; f <= o.frames; ++f) {  // frame 0 is the warm-up
      auto t0 = Clock::now();
      parallelForRange(o.instances, kGrain, [&](size_t begin, size_t end) {
        std::vector<anim::Transform> local(skeleton.size());
        std::vector<float> morph(skeleton.weightTotal());
        std::vector<Mat4> models(skeleton.size());
        for (size_t i = begin; i < end; ++i) {
          float t = anim::wrapTime(static_cast<float>(f) / 60.0f + 0.137f * static_cast<float>(i), clip.duration);
          anim::SamplingJob{&clip, &skeleton, t, local, morph}.run();
          anim::LocalToModelJob ltm;
          ltm.skeleton = &skeleton;
          ltm.input = local;
          ltm.output = models;
          ltm.run();
          anim::PaletteJob{&skin, models, std::span<Mat4>(palettes).subspan(i * joints, joints)}.run();
        }
      });
      double cpu = secondsSince(t0) * 1e3;
      double gpu = crowd.skin(palettes, method);
      if (f > 0) cpu_ms.push_back(cpu), gpu_ms.push_back(gpu);
    }
    if (ctx.validationErrors() > 0) throw Error(validationFailure(ctx));
    const double vertices = static_cast<double>(o.instances) * static_cast<double>(prim.positions.size());
    fmt::print("median ms per frame: cpu poses {:.3f} (sampling, hierarchy, palettes; {} threads) | gpu skinning {:.3f} "
               "({:.2f} G vertices/s)\n",
               median(cpu_ms), threads, median(gpu_ms), vertices / (median(gpu_ms) * 1e-3) / 1e9);
    if (o.json || !o.json_out.empty()) {
      std::string json = fmt::format(
          "{{\n  \"file\": \"{}\",\n  \"instances\": {},\n  \"vertices_per_instance\": {},\n  \"joints\": {},\n  \"method\": \"{}\",\n"
          "  \"device\": \"{}\",\n  \"frames\": {},\n  \"cpu_threads\": {},\n  \"median_ms\": {{\"cpu_poses\": {:.4f}, \"gpu_skinning\": {:.4f}}}\n}}\n",
          jsonEscape(o.input), o.instances, prim.positions.size(), joints, o.method, jsonEscape(ctx.info().name), o.frames, threads,
          median(cpu_ms), median(gpu_ms));
      human.release();
      emitJson(json, o.json, o.json_out);
    }
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("bench-skin", e);
  }
}

namespace {

// Bytes a character occupies on the GPU: its splat slots (inputs and per-slot preprocess outputs of the
// frame's sink) and its per-frame override staging.
size_t characterGpuBytes(const character::Character& c) {
  const size_t slot = 12 + 24 + 4 + static_cast<size_t>(c.splats().shStride()) * 4  // sink inputs
                      + 8 + 16 + 16 + 8 + 4 + 4 + 4;                                   // preprocess outputs
  return c.splats().size() * (slot + 12 + 24);
}

// `character info BUNDLE`: a decoder character's layout, rig, expression space and per-branch memory.
int bundleInfo(const CharacterOptions& o) {
  const character::BundleCharacter c(character::loadCharacterBundle(character::directoryResolver(o.input)));
  const character::CharacterBundle& b = c.bundle();
  const std::vector<character::BranchMemory> mem = c.memoryReport();
  uint64_t resident = 0, gpu = 0, decoders = 0;
  for (const character::BranchMemory& m : mem) resident += m.resident_bytes, gpu += m.gpu_bytes, decoders += m.decoder_bytes;
  if (o.json) {
    fmt::print("{{\n  \"bundle\": \"{}\",\n  \"layout\": \"{}\",\n  \"mode\": \"{}\",\n", jsonEscape(o.input), b.layout, b.mode);
    fmt::print("  \"rig\": {{\"backend\": \"{}\", \"declared\": {}, \"pack\": \"{}\", \"controls\": {}, \"vertices\": {}}},\n", b.rig.backend,
               b.rig.declared, jsonEscape(b.rig.pack), c.rig().controlNames().size(), c.rig().vertexCount());
    fmt::print("  \"expression_space\": {{\"kind\": \"{}\", \"dim\": {}, \"declared\": {}}},\n  \"branches\": [\n", b.expression_space.kind,
               b.expression_space.dim, b.expression_space.declared);
    for (size_t i = 0; i < b.branches.size(); ++i) {
      const character::BundleBranch& br = b.branches[i];
      const character::BranchMemory& m = mem[i];
      fmt::print("    {{\"name\": \"{}\", \"uv_resolution\": {}, \"trunk\": {}, \"static_geometry\": {}, \"gaze_conditioned\": {}, \"slots\": {}, "
                 "\"decoder_bytes\": {}, \"resident_bytes\": {}, \"gpu_bytes\": {}}}{}\n",
                 br.name, br.uv_resolution, !br.trunk.empty(), br.static_geometry, br.gaze_conditioned, m.slots, m.decoder_bytes, m.resident_bytes,
                 m.gpu_bytes, i + 1 < b.branches.size() ? "," : "");
    }
    fmt::print("  ],\n  \"memory\": {{\"resident_bytes\": {}, \"gpu_bytes\": {}, \"decoder_bytes\": {}, \"slots\": {}, \"bytes_per_gaussian\": {}}}\n}}\n",
               resident, gpu, decoders, c.size(), character::kSlotBytes);
    return 0;
  }
  fmt::print("bundle:      {} ({}, mode {})\n", o.input, b.layout, b.mode);
  fmt::print("rig:         {}{}: {} controls, {} vertices{}\n", b.rig.backend, b.rig.declared ? "" : " (default)", c.rig().controlNames().size(),
             c.rig().vertexCount(), b.rig.pack.empty() ? "" : " (" + b.rig.pack + ")");
  fmt::print("expressions: {} ({} values){}\n", b.expression_space.kind, b.expression_space.dim, b.expression_space.declared ? "" : " (default)");
  fmt::print("branches:    {}\n", b.branches.size());
  for (size_t i = 0; i < b.branches.size(); ++i) {
    const character::BundleBranch& br = b.branches[i];
    const character::BranchMemory& m = mem[i];
    fmt::print("  {:<10} {}x{} texels = {} slots; decoders {}{}{} ({:.2f} MB); mesh {}{}{}\n", br.name, br.uv_resolution, br.uv_resolution, m.slots, br.geom,
               br.trunk.empty() ? "" : " + " + br.trunk, " + " + br.appr, static_cast<double>(m.decoder_bytes) / 1e6,
               br.mesh_glb.empty() ? br.mesh_bin : br.mesh_glb, br.static_geometry ? ", static geometry" : "", br.gaze_conditioned ? ", gaze-conditioned" : "");
    fmt::print("  {:<10} memory: resident {:.2f} MB, GPU {:.2f} MB\n", "", static_cast<double>(m.resident_bytes) / 1e6, static_cast<double>(m.gpu_bytes) / 1e6);
  }
  fmt::print("memory:      resident {:.2f} MB (decoders {:.2f} MB), GPU {:.2f} MB, {} slots at {} bytes per gaussian "
             "(centre 12, covariance 24, opacity 4, colour 12: the document's 52)\n",
             static_cast<double>(resident) / 1e6, static_cast<double>(decoders) / 1e6, static_cast<double>(gpu) / 1e6, c.size(), character::kSlotBytes);
  return 0;
}

int characterInfo(const CharacterOptions& o) {
  if (character::isCharacterBundle(*character::directoryResolver(o.input))) return bundleInfo(o);
  const character::Character c = character::Character::loadPackage(o.input);
  character::Character::Frame f;
  c.pose(-1, 0.0f, f);  // for the skin's joint count
  size_t triangle_bound = 0, joint_bound = 0;
  for (const character::SplatBinding& b : c.bindings()) (b.kind == character::BindingKind::kTriangle ? triangle_bound : joint_bound)++;
  const GltfModel& m = c.model();
  const GltfModel::DrawInfo d = m.drawInfo(static_cast<size_t>(c.boundDraw()));
  const GltfPrimitive& prim = m.primitiveOf(static_cast<size_t>(c.boundDraw()));
  const size_t targets = prim.targets.size();
  if (o.json) {
    fmt::print("{{\n  \"package\": \"{}\",\n  \"splats\": {},\n  \"sh_degree\": {},\n  \"bindings\": {{\"triangle\": {}, \"joints\": {}}},\n",
               jsonEscape(o.input), c.splats().size(), c.splats().sh_degree, triangle_bound, joint_bound);
    fmt::print("  \"skin\": {{\"file\": \"{}\", \"node\": {}, \"mesh\": {}, \"primitive\": {}, \"vertices\": {}, \"morph_targets\": {}, "
               "\"joints\": {}}},\n",
               jsonEscape(m.document().path), d.node, d.mesh, d.primitive, prim.positions.size(), targets,
               d.skin >= 0 ? f.pose.palettes[static_cast<size_t>(d.skin)].size() : 0);
    fmt::print("  \"expression_space\": \"{}\",\n  \"default_clip\": \"{}\",\n  \"clips\": {},\n", c.expressionSpace(),
               jsonEscape(c.defaultClip()), m.clips().size());
    fmt::print("  {},\n", character::describeParts(c, true));
    fmt::print("  \"memory\": {{\"resident_bytes\": {}, \"gpu_bytes\": {}, \"slots\": {}}}\n}}\n", c.residentBytes(), characterGpuBytes(c),
               c.splats().size());
    return 0;
  }
  fmt::print("package:     {}\n", o.input);
  fmt::print("splats:      {} (SH degree {}), {} bound to triangles, {} to joints\n", c.splats().size(), c.splats().sh_degree,
             triangle_bound, joint_bound);
  fmt::print("skin:        {} node {} meshes[{}].primitives[{}]: {} vertices, {} morph targets\n", m.document().path, d.node, d.mesh,
             d.primitive, prim.positions.size(), targets);
  fmt::print("expressions: {}\n", c.expressionSpace());
  fmt::print("clips:       {}{}\n", m.clips().size(), m.clips().empty() ? "" : " (" + m.clipList() + ")");
  fmt::print("default:     {}\n", c.defaultClip().empty() ? "rest pose" : c.defaultClip());
  fmt::print("{}", character::describeParts(c, false));  // mouth, teeth, corrective: counts, drives at rest
  fmt::print("memory:      resident {:.2f} MB, GPU {:.2f} MB, {} slots (body part: all splats)\n", static_cast<double>(c.residentBytes()) / 1e6,
             static_cast<double>(characterGpuBytes(c)) / 1e6, c.splats().size());
  return 0;
}

// `character gnm-pack SKIN -o PACK [--eyes L,R]`: a GNM pack from a skinned glTF (character/gnm_pack.h).
int characterGnmPack(const CharacterOptions& o) {
  auto t0 = Clock::now();
  character::GnmFromGltfOptions go;
  if (!o.eyes.empty()) {
    const size_t comma = o.eyes.find(',');
    if (comma == std::string::npos || comma == 0 || comma + 1 == o.eyes.size() || o.eyes.find(',', comma + 1) != std::string::npos)
      return reportUsage("character gnm-pack", "--eyes takes two joint names, LEFT,RIGHT; got '" + o.eyes + "'");
    go.left_eye = o.eyes.substr(0, comma);
    go.right_eye = o.eyes.substr(comma + 1);
  }
  progress("baking a GNM pack from " + o.skin);
  const GltfModel model(o.skin);
  const character::GnmPack pack = character::fromSkinnedGltf(model, go);
  const std::vector<uint8_t> bytes = character::encodeGnmPack(pack);
  writeFileAtomic(o.output, bytes);
  size_t arkit_names = 0;
  for (size_t k = 0; k < pack.basisCount(); ++k) arkit_names += character::arkitIndex(pack.control_names[k]) >= 0;
  const Vec3 lift = pack.bind_transform.translation();
  fmt::print("wrote {} ({} bytes): {} vertices, {} triangles, {} basis vectors, {} joints, eyes '{}' / '{}', {}\n", o.output, bytes.size(),
             pack.vertexCount(), pack.triangles.size() / 3, pack.basisCount(), pack.joints.size(),
             pack.joints[static_cast<size_t>(pack.eye_joints[0])].name, pack.joints[static_cast<size_t>(pack.eye_joints[1])].name,
             pack.arkit_map.empty() ? std::string("no arkit_map") : fmt::format("arkit_map from {} ARKit-named targets", arkit_names));
  fmt::print("head-local neutral; the bind transform lifts it by ({:.4f}, {:.4f}, {:.4f}) m\n", lift.x, lift.y, lift.z);
  fmt::print("time: {:.3f} s\n", secondsSince(t0));
  return 0;
}

// `character preview --pack PACK -o FILE`: the GNM pack posed at zero controls, one gaussian per vertex.
int characterPackPreview(const CharacterOptions& o) {
  auto t0 = Clock::now();
  progress("rig preview of the GNM pack " + o.pack + " tinted by " + o.tint);
  character::GnmRig rig(character::loadGnmPack(o.pack));
  const GaussianCloud cloud = character::rigPreviewCloud(rig, o.tint, o.sigma);
  saveSplats(cloud, o.output);
  Vec3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
  for (const Vec3& p : cloud.positions)
    for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], p[k]), hi[k] = std::max(hi[k], p[k]);
  fmt::print("wrote {} ({} gaussians, one per vertex, sigma {} m; posed bounds ({:.3f}, {:.3f}, {:.3f}) .. ({:.3f}, {:.3f}, {:.3f}) m)\n", o.output,
             cloud.size(), o.sigma, lo.x, lo.y, lo.z, hi.x, hi.y, hi.z);
  fmt::print("time: {:.3f} s\n", secondsSince(t0));
  return 0;
}

}  // namespace

// bench-characters on a bundle: a crowd of decoder characters on the GPU path, over a scripted camera path
// (0.7 mm a frame: the 2 mm threshold runs appearance every third frame) with a new expression every 10th
// frame; per branch the GPU ms of its geometry and appearance parts, and the passes the threshold skipped.
int benchBundle(const BenchCharactersOptions& o, JsonStdout& human) {
  FrameDriverOptions fo = BackendChoice{"vulkan", o.device, o.validation}.driver();
  FrameDriver driver(fo);
  const VulkanRenderer& renderer = *driver.vulkan();
  // The crowd: one scene object per decoder character, on a grid facing the camera.
  Scene scene;
  std::vector<std::shared_ptr<character::BundleCharacter>> crowd;
  const int side = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(o.count))));
  constexpr float kSpacing = 0.3f;  // metres between heads
  for (size_t i = 0; i < o.count; ++i) {
    crowd.push_back(character::loadBundleCharacter(o.package));
    const float gx = static_cast<float>(static_cast<int>(i) % side) - 0.5f * static_cast<float>(side - 1);
    const float gy = static_cast<float>(static_cast<int>(i) / side) - 0.5f * static_cast<float>(side - 1);
    SceneObject obj;
    obj.name = fmt::format("c{}", i);
    obj.source = o.package;
    obj.bundle = crowd.back();
    obj.object_to_world = Mat4::fromLinearTranslation(Mat3{}, Vec3{gx * kSpacing, gy * kSpacing, 0});
    scene.objects.push_back(obj);
  }
  const character::CharacterBundle& b = crowd[0]->bundle();
  const size_t branches = b.branches.size();
  const Vec3 head = b.branches.front().frame.center;
  const float dist = 0.5f + 1.2f * kSpacing * static_cast<float>(side);
  fmt::print("decoder characters: {} x {} ({} branches, {} slots each) at {}x{} on {} ({}), {} timed frames\n", o.count, o.package, branches,
             crowd[0]->size(), o.width, o.height, renderer.device().name, renderer.device().typeName(), o.frames);
  std::vector<std::vector<double>> geo(branches), app(branches);
  std::vector<double> gpu_ms, cpu_ms;
  for (int f = 0; f <= o.frames; ++f) {
    const float x = 0.0007f * static_cast<float>(f);
    const Camera cam = lookAtCamera(head + Vec3{x, 0.02f, dist}, head + Vec3{x, 0, 0}, {0, 1, 0}, 40, o.width, o.height);
    if (f % 10 == 0)
      for (size_t i = 0; i < crowd.size(); ++i) {
        character::Expression e{b.expression_space.kind, std::vector<float>(static_cast<size_t>(b.expression_space.dim), 0.0f)};
        e.weights[0] = 0.5f + 0.5f * std::sin(0.7f * static_cast<float>(f) + static_cast<float>(i));
        if (b.expression_space.kind == "arkit52") e.weights[static_cast<size_t>(character::arkitIndex("jawOpen"))] = e.weights[0];
        crowd[i]->setExpression(e);
      }
    const FrameResult fr = driver.render(scene, {static_cast<double>(f) / 60.0, cam, {}, {}});
    if (f == 0) {  // the first frame attached the decoders and built their plans
      for (const auto& c : crowd) {
        if (!c->gpuPath()) throw Error(o.package + ": its decoders do not run on the Vulkan executor: " + c->gpuRefusal());
        dynamic_cast<character::VulkanBundlePath&>(*c->gpuPath()).setTiming(true);
      }
      continue;
    }
    cpu_ms.push_back(fr.pose_ms);
    gpu_ms.push_back(fr.gpu.times.total - fr.gpu.times.readback);
    for (const auto& c : crowd) {
      const auto& path = dynamic_cast<const character::VulkanBundlePath&>(*c->gpuPath());
      const std::vector<character::VulkanBundlePath::BranchTimes> t = path.branchTimes();
      for (size_t k = 0; k < branches; ++k) {
        if (path.lastRecorded().geometry) geo[k].push_back(t[k].geometry_ms);
        if (path.lastRecorded().appearance) app[k].push_back(t[k].appearance_ms);
      }
    }
  }
  const character::PassCounters& pc = crowd[0]->counters();
  auto med = [](std::vector<double> v) { return v.empty() ? 0.0 : median(v); };
  for (size_t k = 0; k < branches; ++k)
    fmt::print("  branch {:<8} {}x{}: geometry (decoders + lift pass 1) {:.3f} ms, appearance (rays + decoder + lift pass 2) {:.3f} ms (GPU, median)\n",
               b.branches[k].name, b.branches[k].uv_resolution, b.branches[k].uv_resolution, med(geo[k]), med(app[k]));
  fmt::print("passes per character over {} updates: {} geometry, {} appearance, {} skipped by the 2 mm threshold\n", pc.updates, pc.geometry_passes,
             pc.appearance_passes, pc.skipped);
  fmt::print("median ms per frame: gpu {:.3f} (passes + sort + raster, without the image readback) | cpu {:.2f} (rig, requests)\n", med(gpu_ms), med(cpu_ms));
  if (o.json || !o.json_out.empty()) {
    std::string json = fmt::format("{{\n  \"bundle\": \"{}\",\n  \"count\": {},\n  \"device\": \"{}\",\n  \"frames\": {},\n  \"branches\": [", jsonEscape(o.package),
                                   o.count, jsonEscape(renderer.device().name), o.frames);
    for (size_t k = 0; k < branches; ++k)
      json += fmt::format("{}{{\"name\": \"{}\", \"geometry_ms\": {:.4f}, \"appearance_ms\": {:.4f}}}", k ? ", " : "", b.branches[k].name, med(geo[k]), med(app[k]));
    json += fmt::format("],\n  \"passes\": {{\"updates\": {}, \"geometry\": {}, \"appearance\": {}, \"skipped\": {}}},\n  \"median_ms\": {{\"gpu\": {:.4f}, \"cpu\": {:.3f}}}\n}}\n",
                        pc.updates, pc.geometry_passes, pc.appearance_passes, pc.skipped, med(gpu_ms), med(cpu_ms));
    human.release();
    emitJson(json, o.json, o.json_out);
  }
  return 0;
}

int runBenchCharacters(const BenchCharactersOptions& o) {
  try {
    JsonStdout human(o.json);
    if (o.count == 0) throw Error("--count must be at least 1");
    if (character::isCharacterBundle(*character::directoryResolver(o.package))) return benchBundle(o, human);
    FrameDriver driver(BackendChoice{"vulkan", o.device, o.validation}.driver());
    const VulkanRenderer& renderer = *driver.vulkan();
    // The crowd is a scene script: a spawn per character at t = 0 (and, for packages without clips, an
    // expression and a look-at per character and frame), played by the frame's character world.
    Scene scene;
    const int side = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(o.count))));
    // Characters on a grid one spacing apart, seen from the front; spacing from the character's size.
    auto probe = std::make_shared<character::Character>(character::Character::loadPackage(o.package));
    character::Character::Frame f0;
    probe->deform(-1, 0, f0);
    Vec3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
    const Mat4 m0 = probe->model().meshToModel(f0.pose, static_cast<size_t>(probe->boundDraw()));
    for (const Vec3& p : f0.positions) {
      const Vec3 w = transformPoint(m0, p);
      for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], w[k]), hi[k] = std::max(hi[k], w[k]);
    }
    const Vec3 size = hi - lo, centre = (lo + hi) * 0.5f;
    const float spacing = 1.2f * std::max(size.x, size.y);
    for (size_t i = 0; i < o.count; ++i) {
      const float gx = static_cast<float>(static_cast<int>(i) % side) - 0.5f * static_cast<float>(side - 1);
      const float gy = static_cast<float>(static_cast<int>(i) / side) - 0.5f * static_cast<float>(side - 1);
      character::ScriptCommand c;
      c.where = fmt::format("bench-characters: c{}", i);
      c.command = "spawn-character";
      c.id = fmt::format("c{}", i);
      c.package = o.package;
      c.transform = Mat4::fromLinearTranslation(Mat3{}, Vec3{gx * spacing, gy * spacing, 0} - centre);
      scene.script.push_back(c);
    }
    const float extent = spacing * static_cast<float>(side);
    const Camera cam = lookAtCamera({0, 0, 1.2f * extent + size.z}, {0, 0, 0}, {0, 1, 0}, 50, o.width, o.height);
    const bool clips = !probe->model().clips().empty();
    if (!clips && probe->morphTargetCount() > 0)
      for (int f = 0; f <= o.frames; ++f) {
        const double t = static_cast<double>(f) / 60.0;
        for (size_t i = 0; i < o.count; ++i) {
          character::ScriptCommand c;
          c.t = t, c.id = fmt::format("c{}", i), c.where = "bench-characters";
          std::vector<float> w(probe->morphTargetCount(), 0.0f);
          w[i % w.size()] = 0.5f + 0.5f * static_cast<float>(std::sin(6.0 * t + static_cast<double>(i)));
          c.command = "set-expression", c.expression = {"morph", w};
          scene.script.push_back(c);
          c.command = "look-at", c.target = Vec3{static_cast<float>(std::sin(t + static_cast<double>(i))), 0, 2 * extent};
          scene.script.push_back(c);
        }
      }
    fmt::print("characters: {} x {} ({} splats each, {} in all) at {}x{} on {} ({}), {} timed frames; animated by {}\n", o.count, o.package,
               probe->splats().size(), probe->splats().size() * o.count, o.width, o.height, renderer.device().name,
               renderer.device().typeName(), o.frames, clips ? "its default clip" : "expressions and look-at");
    std::vector<double> cpu_ms, gpu_ms, deform_ms;
    for (int f = 0; f <= o.frames; ++f) {
      const FrameResult fr = driver.render(scene, {static_cast<double>(f) / 60.0, cam, {}, {}});
      if (f > 0) cpu_ms.push_back(fr.pose_ms), gpu_ms.push_back(fr.gpu.times.total - fr.gpu.times.readback), deform_ms.push_back(fr.gpu.times.mesh);
    }
    fmt::print("median ms per frame: gpu {:.3f} (deform + sort + raster, without the image readback; deform pass {:.3f}) | cpu poses {:.1f} "
               "(sampling, skinning of the bound meshes; {} threads)\n",
               median(gpu_ms), median(deform_ms), median(cpu_ms), workerCount());
    if (o.json || !o.json_out.empty()) {
      std::string json = fmt::format(
          "{{\n  \"package\": \"{}\",\n  \"count\": {},\n  \"splats\": {},\n  \"width\": {},\n  \"height\": {},\n  \"device\": \"{}\",\n"
          "  \"frames\": {},\n  \"median_ms\": {{\"gpu\": {:.4f}, \"gpu_deform\": {:.4f}, \"cpu_poses\": {:.3f}}}\n}}\n",
          jsonEscape(o.package), o.count, probe->splats().size() * o.count, o.width, o.height, jsonEscape(renderer.device().name), o.frames,
          median(gpu_ms), median(deform_ms), median(cpu_ms));
      human.release();
      emitJson(json, o.json, o.json_out);
    }
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("bench-characters", e);
  }
}

int runCharacter(const CharacterOptions& o) {
  try {
    auto t0 = Clock::now();
    if (o.action == "info") return characterInfo(o);
    if (o.action == "gnm-pack") return characterGnmPack(o);
    if (o.action == "preview" && !o.pack.empty()) return characterPackPreview(o);
    if (o.action == "preview" && o.skin.empty())
      return reportUsage("character preview", "give the rig: --skin FILE (a skinned glTF) or --pack FILE (a GNM pack)");
    character::Character c = [&] {
      if (o.action == "build" && o.train) {
        auto model = std::make_shared<GltfModel>(o.from_gltf);
        const int draw = character::Character::fromGltf(model, 1, o.seed).boundDraw();
        train::ViewsOptions vo;
        vo.train_count = o.train_views;
        vo.size = o.train_size;
        vo.seed = o.seed;
        train::TrainOptions to;
        to.budget = o.splats;
        to.steps = o.train_steps;
        to.seed = o.seed;
        to.progress = [](int step, int steps, double loss, size_t live) {
          if (step == steps || step % std::max(1, steps / 10) == 0) progress(fmt::format("train: step {}/{} loss {:.5f} live {}", step, steps, loss, live));
        };
        progress(fmt::format("training {} gaussians on {} views of {} ({} steps at {}x{})", o.splats, vo.train_count, o.from_gltf, to.steps, vo.size, vo.size));
        std::unique_ptr<VulkanRenderer> renderer;
        const train::MeshTrainResult r = train::trainFromMesh(o.from_gltf, vo, to, trainerFor(o.train_backend, "", renderer));
        progress(
            fmt::format("trained in {:.2f} s; validation L1 {:.5f} -> {:.5f}, PSNR {:.2f} -> {:.2f} dB, "
                        "SSIM {:.4f} -> {:.4f}",
                        r.train.seconds, r.train.initial.l1, r.train.final.l1, r.train.initial.psnr,
                        r.train.final.psnr, r.train.initial.ssim, r.train.final.ssim));
        GaussianCloud cloud = train::restToBindSpace(*model, draw, train::toSourceFrame(train::toCloud(r.train.params), r.scale, r.offset));
        return character::Character::bindSplats(model, std::move(cloud));
      }
      if (o.action == "build") {
        progress(fmt::format("sampling {} gaussians on {}", o.splats, o.from_gltf));
        return character::Character::fromGltf(std::make_shared<GltfModel>(o.from_gltf), o.splats, o.seed);
      }
      if (o.action == "preview") {
        progress("rig preview of " + o.skin + " tinted by " + o.tint);
        return character::Character::rigPreview(std::make_shared<GltfModel>(o.skin), o.tint, o.sigma);
      }
      progress("binding " + o.splat_file + " to " + o.skin + (o.per_vertex ? fmt::format(" (per vertex, offset scale {})", o.offset_scale) : ""));
      LoadedSplats l = loadSplats(o.splat_file);
      auto model = std::make_shared<GltfModel>(o.skin);
      if (o.per_vertex) return character::Character::bindPerVertex(model, std::move(l.cloud), o.offset_scale, o.rgb_colors);
      if (o.rgb_colors)
        for (size_t i = 0; i < l.cloud.size(); ++i)
          for (size_t k = 0; k < 3; ++k) {
            float& dc = l.cloud.sh[i * static_cast<size_t>(l.cloud.shStride()) + k];
            dc = colorToShDc(dc);
          }
      return character::Character::bindSplats(model, std::move(l.cloud));
    }();
    if (!o.clips.empty()) {
      const anim::RetargetReport r = c.attachClips(o.clips);
      progress(fmt::format("retargeted {} clips from {}: {} tracks kept, {} dropped ({} joints missing from the skin)", c.model().clips().size(),
                           o.clips, r.mapped, r.dropped, r.missing_joints.size()));
    }
    c.savePackage(o.output);
    fmt::print("wrote {} ({} splats bound to {}; expression space {})\n", o.output, c.splats().size(), c.model().document().path,
               c.expressionSpace());
    fmt::print("time: {:.3f} s\n", secondsSince(t0));
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("character " + o.action, e);
  }
}

}  // namespace sf::cli
