#include "render_command.h"

#include <fmt/core.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <numbers>
#include <vector>

#include "core/error.h"
#include "frame/frame.h"
#include "hull/effects.h"
#include "hull/hull_render.h"
#include "hull/hull_script.h"
#include "io/file.h"
#include "io/image_io.h"
#include "scene/demo.h"
#include "scene/scene.h"

namespace sf::cli {

namespace {

std::string sceneSummary(const Scene& scene) {
  size_t splats = 0, models = 0, characters = 0, generators = 0;
  for (const SceneObject& o : scene.objects) {
    splats += o.cloud ? o.cloud->size() : 0;
    if (o.as<CharacterObject>())
      ++characters;
    else if (o.model())
      ++models;
    generators += o.as<GeneratorObject>() != nullptr;
  }
  return fmt::format("{} objects, {} gaussians{}{}{}", scene.objects.size(), splats,
                     models ? fmt::format(", {} glTF models", models) : "",
                     characters ? fmt::format(", {} characters", characters) : "",
                     generators ? fmt::format(", {} neural generators", generators) : "");
}

// The scene of a command's input: a scene JSON (warnings printed, its background unless --bg was given),
// or one splat file, glTF model or character package.
// Every input is drawn at the frame's scene time (render --time, animate --start), whatever its kind.
Scene loadInput(const char* command, const std::string& input, const std::string& clip, bool strict_objects,
                bool allow_outside_paths, std::optional<int> width, std::optional<int> height,
                bool background_given, RenderSettings& settings) {
  progress("loading " + input);
  if (classifyInput(input) != InputKind::kSceneJson) {
    Scene scene = sceneFromFile(input, clip);
    printWarnings(command, scene.warnings);
    progress("loaded " + sceneSummary(scene));
    return scene;
  }
  if (!clip.empty())
    throw UsageError("--clip applies to a glTF input; a scene JSON names each object's clip");
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

// --hull-mode, --light, --hull-lod and --live-core: every splat hull of the scene drawn in one mode; the cel
// light on or off; every hull's runtime LOD (a hull script's `lod` events still replace it from their times
// on); how every live hull draws its untouched chunks.
void applyHullOptions(Scene& scene, const std::string& mode, const std::string& light,
                      const std::string& lod = {}, const std::string& outline = {},
                      const std::string& live_core = {}) {
  if (!live_core.empty()) {
    hull::LiveCore c;
    try {
      c = hull::parseLiveCore(live_core);
    } catch (const Error& e) {
      throw UsageError(std::string("--live-core: ") + e.what());
    }
    for (SceneObject& o : scene.objects)
      if (HullObject* h = o.as<HullObject>()) h->live_core = c;
  }
  if (!outline.empty()) {  // --outline: all, or hull object names (each must name a hull of the scene)
    std::vector<std::string> names;
    for (size_t b = 0; b <= outline.size();) {
      const size_t e = std::min(outline.find(',', b), outline.size());
      names.push_back(outline.substr(b, e - b));
      b = e + 1;
    }
    for (const std::string& n : names) {
      bool found = n == "all";
      for (SceneObject& o : scene.objects)
        if (HullObject* h = o.as<HullObject>(); h && (n == "all" || o.name == n))
          h->outline.selected = found = true;
      if (!found) {
        std::string hulls;
        for (const SceneObject& o : scene.objects)
          if (o.as<HullObject>()) hulls += (hulls.empty() ? "" : ", ") + o.name;
        throw UsageError("--outline: no hull object named '" + n +
                         "' (the scene's hulls: " + (hulls.empty() ? "none" : hulls) + ")");
      }
    }
  }
  if (!mode.empty()) {
    const hull::HullMode m = hull::parseHullMode(mode);
    for (SceneObject& o : scene.objects)
      if (HullObject* h = o.as<HullObject>()) h->mode = m;
  }
  if (!lod.empty()) {
    hull::HullLod l;
    try {
      l = hull::parseHullLod(lod);
    } catch (const Error& e) {
      throw UsageError(std::string("--hull-lod: ") + e.what());
    }
    for (SceneObject& o : scene.objects)
      if (HullObject* h = o.as<HullObject>()) h->lod = l;
  }
  if (!light.empty()) scene.light.enabled = light == "on";
}

// --mesh-samples: every object's meshes drawn with that many samples per pixel (hull cores included).
void applyMeshSamples(Scene& scene, std::optional<uint32_t> samples) {
  if (!samples) return;
  for (SceneObject& o : scene.objects) o.mesh_samples = *samples;
}

// True when no splat of the scene's objects reaches the renderer's alpha threshold (kAlphaMin, 1/255).
bool allTransparent(const Scene& scene) {
  for (const SceneObject& o : scene.objects)
    if (o.as<GeneratorObject>())
      return false;  // its gaussians are made per frame
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
      if (fileExtension(path) != ".npy")
        throw Error(std::string(flag) + " " + path + ": expected a .npy path");
      checkWritableTarget(path, flag);
    }
  }
};

// Renders a scene and writes the outputs; shared by `render` and `demo`.
int renderAndWrite(const char* command, const Scene& scene, double time, const Camera& cam,
                   RenderSettings settings, const FrameDriverOptions& driver_options, const std::string& png,
                   const FloatOutputs& extra, Clock::time_point t_start, double load_s) {
  settings.depth = !extra.depth.empty();
  FrameDriver driver(driver_options);
  progress(fmt::format("rendering {}x{} on {} ({})", cam.width, cam.height, driver.describe(),
                       sceneSummary(scene)));
  const FrameResult f = driver.render(scene, {time, cam, settings, {}});
  if (f.visible == 0 && f.mesh_triangles == 0 && f.splats > 0 && allTransparent(scene))
    return fail(
        command,
        fmt::format(
            "nothing to draw: every one of the {} gaussians is fully transparent (opacity below 1/255)",
            f.splats));
  if (f.visible == 0 && f.mesh_triangles == 0)
    return fail(command,
                fmt::format("no gaussian is visible from this camera (all {} culled: behind the camera, "
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

// Expands a frame pattern with one printf-style integer field (%d or %0Nd); throws sf::Error otherwise.
struct FramePattern {
  std::string prefix, suffix;
  int width = 0;
  static FramePattern parse(const std::string& pattern) {
    FramePattern p;
    size_t at = pattern.find('%');
    if (at == std::string::npos || pattern.find('%', at + 1) != std::string::npos)
      throw UsageError("-o " + pattern +
                       ": expected one frame-number field such as %04d (frames/%04d.png) or a .mp4 path");
    size_t k = at + 1;
    while (k < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[k]))) ++k;
    if (k >= pattern.size() || pattern[k] != 'd')
      throw UsageError("-o " + pattern + ": the frame-number field must be %d or %0Nd, like %04d");
    if (k > at + 1) p.width = std::stoi(pattern.substr(at + 1, k - at - 1));
    if (p.width > 12) throw UsageError("-o " + pattern + ": frame-number width above 12 digits");
    p.prefix = pattern.substr(0, at), p.suffix = pattern.substr(k + 1);
    if (fileExtension(p.suffix) != ".png")
      throw UsageError("-o " + pattern + ": frames are written as PNG; end the pattern with .png");
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
    if (!dirs.substr(start, end - start).empty() && std::filesystem::is_regular_file(candidate, ec))
      return candidate.string();
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
    std::string line =
        fmt::format("  [{}{}] {}/{} frames  {:.2f} fps  eta {:.1f} s", std::string(filled, '#'),
                    std::string(30 - filled, '.'), done, total_, rate, eta);
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
extern "C" void onInterrupt(int) {
  g_interrupted = 1;
}

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

// `hull play`: every splat hull of the scene plays the script (a scene's own standing effects stay as its
// base). Returns the clip's duration: --duration when given, else the script's.
double playHullScript(Scene& scene, const AnimateOptions& o) {
  const hull::HullScript script = hull::loadHullScript(o.hull_script);
  hull::DestructionOptions dopt;
  dopt.seed = o.seed.value_or(script.seed.value_or(1));
  size_t hulls = 0;
  for (SceneObject& obj : scene.objects) {
    HullObject* h = obj.as<HullObject>();
    if (!h) continue;
    // A scene's own standing effects stay as the script's base; its own script and seed give way.
    const hull::HullEffects base = h->live ? h->live->effects : hull::HullEffects{};
    hull::checkHullScript(script, *h->asset);  // its `fire` guns against the hull's meta sidecar
    h->live = std::make_shared<hull::HullInstance>(h->asset, dopt);
    h->live->effects = base;
    h->script = std::make_shared<hull::HullScriptPlayer>(script, base);
    ++hulls;
  }
  if (hulls == 0) throw Error(o.input + ": holds no splat hull to play the script on");
  progress(fmt::format("playing {} ({} events, {:.2f} s, seed {}) on {} hull{}", o.hull_script,
                       script.events.size(), script.duration, dopt.seed, hulls, hulls == 1 ? "" : "s"));
  return o.duration_given ? o.duration : script.duration;
}

// animate's camera without --camera: the scene's, else framed over the clip (autoCameraOverClip).
Camera animationCamera(const Scene& scene, const AnimateOptions& o, double duration) {
  if (scene.camera) return *scene.camera;
  // A played hull moves (parts turn, panels lift, wounds open): framed on its box over the whole clip,
  // sampled every 0.1 s or so. The scripts replay from the start when the first frame goes back in time.
  std::vector<double> times{o.start};
  if (!o.hull_script.empty()) {
    const int n = static_cast<int>(std::clamp(std::ceil(duration / 0.1) + 1.0, 2.0, 121.0));
    for (int k = 1; k < n; ++k)
      times.push_back(o.start + duration * static_cast<double>(k) / static_cast<double>(n - 1));
  }
  return autoCameraOverClip(scene, o.width.value_or(kDefaultWidth), o.height.value_or(kDefaultHeight), times);
}

}  // namespace

RenderCommand::~RenderCommand() = default;

int RenderCommand::run() const {
  const Options& o = *options_;
  try {
    auto t0 = Clock::now();
    if (fileExtension(o.output) != ".png")
      throw UsageError("-o " + o.output + ": expected a .png path (this command writes a PNG)");
    checkWritableTarget(o.output, "output");
    const FloatOutputs extra{o.save_float, o.save_depth};
    extra.check();
    RenderSettings settings;
    if (!o.background.empty()) settings.background = parseColor(o.background);
    settings.antialiased = o.antialiased;
    if (o.raster_slice) settings.raster_slice = *o.raster_slice;
    settings.half_sh = o.sh_precision != "full";
    settings.half_raster = o.raster_precision == "half";

    if (!std::isfinite(o.time)) throw UsageError("--time must be a finite number of seconds");
    Camera cam;  // a camera file is checked before the scene loads (a typo should not wait for a large scene)
    if (!o.camera.empty()) cam = loadCameraJson(o.camera, o.width, o.height);
    Scene scene = loadInput("render", o.input, o.clip, !o.keep_going, o.allow_outside_paths, o.width,
                            o.height, !o.background.empty(), settings);
    settings.blend_space = o.blend_space.empty() ? scene.blend_space.value_or(BlendSpace::kDisplay)
                                                 : parseBlendSpace(o.blend_space);
    if (o.lod_budget) scene.lod_budget = *o.lod_budget;
    if (o.lod_pool) setLodPool(scene, *o.lod_pool);
    applyHullOptions(scene, o.hull_mode, o.light, o.hull_lod, o.outline, o.live_core);
    applyMeshSamples(scene, o.mesh_samples);
    double load_s = secondsSince(t0);
    if (o.camera.empty())
      cam = scene.camera ? *scene.camera
                         : autoCamera(scene, o.width.value_or(kDefaultWidth),
                                      o.height.value_or(kDefaultHeight), o.time);  // framed as drawn
    return renderAndWrite("render", scene, o.time, cam, settings,
                          driverOptions(o.backend, o.device, o.validation), o.output, extra, t0, load_s);
  } catch (const std::exception& e) {
    return reportFailure("render", e);
  }
}

namespace {

// The checks of animate's own options that need no file.
void checkAnimateOptions(const AnimateOptions& o) {
  if (!(o.fps > 0 && o.fps <= 1000)) throw UsageError("--fps must be in (0, 1000]");
  if (o.duration_given && !(o.duration > 0 && o.duration <= 3600))
    throw UsageError("--duration must be in (0, 3600] seconds");
  if (!std::isfinite(o.start)) throw UsageError("--start must be a finite number of seconds");
  if (!o.events_out.empty()) {
    if (fileExtension(o.events_out) != ".jsonl")
      throw UsageError("--events-out " + o.events_out + ": expected a .jsonl path (JSON lines)");
    checkWritableTarget(o.events_out, "--events-out");
  }
}

// Where the frames go: for an MP4, a fresh frames folder beside it (`frames_dir`) and the ffmpeg found on
// PATH (returned); else the output's own pattern, its folder made.
std::string prepareAnimateOutput(const AnimateOptions& o, bool mp4, std::filesystem::path& frames_dir,
                                 FramePattern& pattern) {
  if (!mp4) {
    pattern = FramePattern::parse(o.output);
    std::filesystem::path parent = std::filesystem::path(pattern(0)).parent_path();
    if (!parent.empty()) makeOutputFolder(parent.string());
    return {};
  }
  checkWritableTarget(o.output, "output");
  std::string ffmpeg = findOnPath("ffmpeg");
  if (ffmpeg.empty())
    throw Error("-o " + o.output +
                ": writing MP4 needs ffmpeg on PATH (apt-get install ffmpeg); or write PNG frames with "
                "-o frames/%04d.png");
  pattern = FramePattern::parse((std::filesystem::path(o.output + ".frames") / "%06d.png").string());
  std::error_code ec;
  std::filesystem::remove_all(o.output + ".frames", ec);
  makeOutputFolder(o.output + ".frames");
  frames_dir = o.output + ".frames";
  return ffmpeg;
}

// Animation events: a line each on stdout, or JSON lines gathered for --events-out (written at the end).
struct AnimateEvents {
  const AnimateOptions& o;
  std::string jsonl;
  size_t count = 0;

  void report(const FrameResult& f, size_t frame) {
    for (const FiredClipEvent& e : f.events) {
      if (o.events_out.empty())
        fmt::print("event t={:.4f} s: {} {} (clip time {} s, frame {})\n", e.scene_time, e.object, e.event,
                   e.clip_time, frame);
      else
        jsonl += fmt::format(
            "{{\"frame\": {}, \"scene_time\": {}, \"object\": \"{}\", \"event\": \"{}\", \"clip_time\": "
            "{}}}\n",
            frame, numberJson(e.scene_time), jsonEscape(e.object), jsonEscape(e.event), e.clip_time);
    }
    count += f.events.size();
    if (f.events_skipped > 0)
      printWarnings(
          o.command.c_str(),
          {fmt::format("frame {}: {} more animation events crossed in one frame (over {}); not reported",
                       frame, f.events_skipped, kMaxClipEventsPerStep)});
  }
  void write() const {
    if (o.events_out.empty()) return;
    writeFileAtomic(o.events_out,
                    std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(jsonl.data()), jsonl.size()));
    fmt::print("wrote {} ({} animation events)\n", o.events_out, count);
  }
};

// --orbit: frame i of `frames` sees the scene from camera-to-world' = T(c) Ry(a) T(-c) camera-to-world, a
// turning from 0 to -orbit_deg about the centre c of the scene's box (`pivot`).
Camera orbitCamera(const Camera& cam, const AnimateOptions& o, Vec3 pivot, size_t i, size_t frames) {
  if (o.orbit_deg == 0) return cam;
  const double a = -o.orbit_deg * std::numbers::pi / 180.0 *
                   (frames > 1 ? static_cast<double>(i) / static_cast<double>(frames - 1) : 0.0);
  const Mat3 ry =
      rotationMatrix(Quat{static_cast<float>(std::cos(a / 2)), 0, static_cast<float>(std::sin(a / 2)), 0});
  Camera c = cam;
  c.world_to_camera = cam.world_to_camera * Mat4::fromLinearTranslation(Mat3{}, pivot) *
                      Mat4::fromLinearTranslation(ry, Vec3{0, 0, 0}) *
                      Mat4::fromLinearTranslation(Mat3{}, -pivot);
  return c;
}

// Encodes the frames in `frames_dir` into o.output with ffmpeg (through a .partial.mp4 renamed at the end).
// Returns false when ffmpeg or this process was interrupted; throws when ffmpeg fails, clearing `frames_dir`
// so that the frames are kept for another encoder.
bool encodeMp4(const AnimateOptions& o, const std::string& ffmpeg, std::filesystem::path& frames_dir,
               size_t frames, const InterruptGuard& interrupt) {
  const std::string tmp = o.output + ".partial.mp4";
  const std::string cmd =
      fmt::format("{} -y -loglevel error -framerate {} -i {} -c:v libx264 -pix_fmt yuv420p -crf 18 {}",
                  shellQuote(ffmpeg), o.fps, shellQuote((frames_dir / "%06d.png").string()), shellQuote(tmp));
  progress("encoding " + o.output + " with " + ffmpeg);
  const int rc = std::system(cmd.c_str());
  // system() ignores SIGINT in this process while ffmpeg runs: ffmpeg ends by it, killed or (its own
  // handler) with exit status 255.
  const bool ffmpeg_interrupted =
      rc != -1 && ((WIFSIGNALED(rc) && (WTERMSIG(rc) == SIGINT || WTERMSIG(rc) == SIGTERM)) ||
                   (WIFEXITED(rc) && WEXITSTATUS(rc) == 255));
  if (interrupt.interrupted() || ffmpeg_interrupted) return false;
  if (rc != 0 || !std::filesystem::exists(tmp)) {
    std::filesystem::remove(tmp);
    const std::string kept = frames_dir.string();
    frames_dir.clear();  // the frames stay, for another encoder (removePartial leaves them)
    throw Error(fmt::format("ffmpeg failed (exit status {}); the frames are kept in {}", rc, kept));
  }
  std::filesystem::rename(tmp, o.output);
  std::filesystem::remove_all(frames_dir);
  fmt::print("wrote {} ({} frames at {} fps)\n", o.output, frames, o.fps);
  return true;
}

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
    checkAnimateOptions(o);
    const std::string ffmpeg = prepareAnimateOutput(o, mp4, frames_dir, pattern);

    RenderSettings settings;
    if (!o.default_background.empty()) settings.background = parseColor(o.default_background);
    if (!o.background.empty()) settings.background = parseColor(o.background);
    if (o.raster_slice) settings.raster_slice = *o.raster_slice;
    settings.half_sh = o.sh_precision != "full";
    settings.half_raster = o.raster_precision == "half";
    Camera cam;  // a camera file is checked before the scene loads
    if (!o.camera.empty()) cam = loadCameraJson(o.camera, o.width, o.height);
    Scene scene = loadInput(o.command.c_str(), o.input, o.clip, !o.keep_going, o.allow_outside_paths, o.width,
                            o.height, !o.background.empty(), settings);
    settings.blend_space = o.blend_space.empty() ? scene.blend_space.value_or(BlendSpace::kDisplay)
                                                 : parseBlendSpace(o.blend_space);
    if (o.lod_budget) scene.lod_budget = *o.lod_budget;
    if (o.lod_pool) setLodPool(scene, *o.lod_pool);
    applyHullOptions(scene, o.hull_mode, o.light, o.hull_lod, o.outline, o.live_core);
    applyMeshSamples(scene, o.mesh_samples);
    double duration = o.duration;
    if (!o.hull_script.empty()) duration = playHullScript(scene, o);
    if (o.camera.empty()) cam = animationCamera(scene, o, duration);
    const double load_s = secondsSince(t0);

    const size_t frames = std::max<size_t>(1, static_cast<size_t>(std::llround(duration * o.fps)));
    FrameDriver driver(driverOptions(o.backend, o.device, o.validation));
    progress(fmt::format("animating {} frames at {} fps ({:.3f} s from t = {}) at {}x{} on {} ({})", frames,
                         o.fps, duration, o.start, cam.width, cam.height, driver.describe(),
                         sceneSummary(scene)));
    ProgressBar bar(frames);
    std::vector<double> frame_ms;
    AnimateEvents events{o, {}, 0};
    Vec3 pivot{0, 0, 0};  // --orbit turns about the centre of the scene's box
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
      const FrameResult f = driver.render(
          scene,
          {o.start + static_cast<double>(i) / o.fps, orbitCamera(cam, o, pivot, i, frames), settings, {}});
      events.report(f, i);
      writePng(pattern(i), f.image);
      written = i + 1;
      frame_ms.push_back(secondsSince(tf) * 1e3);
      bar.update(i + 1);
    }
    if (interrupt.interrupted()) return stopped("during the last frame");
    if (mp4) {
      if (!encodeMp4(o, ffmpeg, frames_dir, frames, interrupt)) return stopped("while encoding");
    } else {
      fmt::print("wrote {} .. {} ({} frames at {} fps)\n", pattern(0), pattern(frames - 1), frames, o.fps);
    }
    events.write();
    std::vector<double> sorted = frame_ms;
    std::sort(sorted.begin(), sorted.end());
    fmt::print("time: {:.3f} s total (load {:.3f} s; median {:.1f} ms per frame including PNG writing)\n",
               secondsSince(t0), load_s, sorted[sorted.size() / 2]);
    return 0;
  } catch (const std::exception& e) {
    removePartial();
    return reportFailure(o.command, e);
  }
}

AnimateCommand::~AnimateCommand() = default;

int AnimateCommand::run() const {
  return runAnimate(*options_);
}

DemoCommand::~DemoCommand() = default;

int DemoCommand::run() const {
  const Options& o = *options_;
  try {
    auto t0 = Clock::now();
    if (fileExtension(o.output) != ".png")
      throw UsageError("-o " + o.output + ": expected a .png path (this command writes a PNG)");
    checkWritableTarget(o.output, "output");
    const FloatOutputs extra{o.save_float, o.save_depth};
    extra.check();
    Scene scene = makeDemoScene(o.width, o.height);
    RenderSettings settings;
    settings.background = *scene.background;
    return renderAndWrite("demo", scene, 0.0, *scene.camera, settings,
                          driverOptions(o.backend, o.device, o.validation), o.output, extra, t0,
                          secondsSince(t0));
  } catch (const std::exception& e) {
    return reportFailure("demo", e);
  }
}

}  // namespace sf::cli
