// splatforge.render, splatforge.Scene and the process's one Vulkan renderer: what `splatforge render` and
// `splatforge animate` do (apps/splatforge/render_command.cpp), through the library's scene, CPU and Vulkan
// functions, returning numpy images.
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>

#include "character/world.h"
#include "core/error.h"
#include "frame/frame.h"
#include "gpu/gpu.h"
#include "io/file.h"
#include "io/image_io.h"
#include "module.h"
#include "render/cpu_renderer.h"
#include "scene/scene.h"

namespace sf::py {

namespace {

// Everything one render needs besides the scene, resolved from the Python arguments with the GIL held.
struct RenderJob {
  Camera camera;
  RenderSettings settings;
  Backend backend = Backend::kAuto;
  std::string device;
  bool validation = false;
  int sh_degree = -1;  // -1: as stored
  bool uint8 = false;
};

// A scene and what its renders keep between frames. The scene never changes after loading; the playback is
// touched only under the render mutex.
struct SceneState {
  Scene scene;
  std::string path;
  ScenePlayback playback;              // posed storage and the characters its script spawned
  std::vector<std::string> log;        // script log lines not yet taken
  std::vector<FiredClipEvent> events;  // animation events renders fired, not yet taken
  uint64_t events_skipped = 0;         // past the per-frame cap, since the last take_events
};

// The process's frame drivers, one per backend. The Vulkan one lives as long as the process (created on the
// first Vulkan render, released at interpreter exit or by release_vulkan) so that repeated renders skip
// device creation and reuse uploads.
struct Renderers {
  std::mutex
      mutex;  // one render at a time: the drivers, and the scene states they draw, are not shared safely
  std::unique_ptr<FrameDriver> vulkan, cpu;
  std::string device;
  bool validation = false;
  std::optional<bool> available, gpu_available;
  std::vector<std::string>* log = nullptr;  // where the current render's script lines go

  bool vulkanAvailable() {
    if (!available) available = gpu::vulkanAvailable();
    return *available;
  }
  // What backend="auto" checks: a Vulkan device that is a GPU (a CPU one, lavapipe, is slower than the CPU
  // renderer).
  bool autoPicksVulkan() {
    if (!gpu_available) gpu_available = gpu::gpuDeviceAvailable();
    return *gpu_available;
  }
  FrameDriverOptions options(Backend backend) {
    FrameDriverOptions o;
    o.backend = backend;
    o.message = [this](const std::string& line) {
      if (log) log->push_back(line.substr(line.find_first_not_of(' ')));
    };
    return o;
  }
  FrameDriver& ensureVulkan(const std::string& dev, bool val) {
    if (!vulkan || dev != device || val != validation) {
      vulkan.reset();
      FrameDriverOptions o = options(Backend::kVulkan);
      o.device = dev;
      o.validation = val;
      vulkan = std::make_unique<FrameDriver>(o);
      device = dev, validation = val;
    }
    return *vulkan;
  }
  FrameDriver& ensureCpu() {
    if (!cpu) cpu = std::make_unique<FrameDriver>(options(Backend::kCpu));
    return *cpu;
  }
  void release() { vulkan.reset(); }
};

Renderers& renderers() {
  static Renderers r;
  return r;
}

// Renders a scene at scene time t. Called without the GIL.
ImageRGBA renderState(const std::shared_ptr<SceneState>& st, double t, const RenderJob& job) {
  Renderers& r = renderers();
  std::lock_guard<std::mutex> lock(r.mutex);
  const bool use_vulkan =
      job.backend == Backend::kVulkan || (job.backend == Backend::kAuto && r.autoPicksVulkan());
  FrameDriver* driver = nullptr;
  if (use_vulkan) {
    driver = &r.ensureVulkan(job.device, job.validation);
  } else {
    if (r.vulkan)
      r.vulkan->detach(st->scene, &st->playback);  // its generators and characters back on the CPU
    driver = &r.ensureCpu();
  }
  r.log = &st->log;
  FrameRequest request{t, job.camera, job.settings, {}};
  request.settings.max_sh_degree = job.sh_degree;
  // Until the next frame is drawn the GPU may still hold this scene's clouds: the driver keeps it alive.
  driver->retire(st);
  FrameResult f;
  try {
    f = driver->render(st->scene, st->playback, request);
  } catch (...) {
    r.log = nullptr;
    throw;
  }
  r.log = nullptr;
  st->events.insert(st->events.end(), std::make_move_iterator(f.events.begin()),
                    std::make_move_iterator(f.events.end()));
  st->events_skipped += f.events_skipped;
  return std::move(f.image);
}

// Animation events as Python dicts: object, event, clip_time, scene_time.
pyb::list eventList(const std::vector<FiredClipEvent>& events) {
  pyb::list out;
  for (const FiredClipEvent& e : events) {
    pyb::dict d;
    d["object"] = e.object;
    d["event"] = e.event;
    d["clip_time"] = static_cast<double>(e.clip_time);
    d["scene_time"] = e.scene_time;
    out.append(d);
  }
  return out;
}

void warnSkipped(uint64_t skipped) {
  if (skipped > 0)
    warnAll({std::to_string(skipped) + " animation events crossed past the cap of " +
             std::to_string(kMaxClipEventsPerStep) +
             " a step were not reported (a step far beyond the clips' length)"});
}

// ---- arguments ----

Backend backendArg(const std::string& s) {
  if (s == "auto") return Backend::kAuto;
  if (s == "cpu") return Backend::kCpu;
  if (s == "vulkan") return Backend::kVulkan;
  valueError("backend: expected \"auto\", \"cpu\" or \"vulkan\", got \"" + s + "\"");
}

std::optional<int> sizeArg(const std::optional<int>& v, const char* name) {
  if (v && (*v <= 0 || *v > kMaxImageSide))
    valueError(std::string(name) + ": expected 1.." + std::to_string(kMaxImageSide) + " pixels, got " +
               std::to_string(*v));
  return v;
}

Vec3 backgroundArg(const pyb::handle& v) {
  std::vector<double> c;
  try {
    c = v.cast<std::vector<double>>();
  } catch (const pyb::cast_error&) {
    c.clear();
  }
  if (c.size() != 3 ||
      !std::all_of(c.begin(), c.end(), [](double x) { return std::isfinite(x) && x >= 0 && x <= 1; }))
    valueError("background: expected three numbers (r, g, b) in [0, 1], got " + std::string(pyb::repr(v)));
  return {static_cast<float>(c[0]), static_cast<float>(c[1]), static_cast<float>(c[2])};
}

bool dtypeArg(const pyb::handle& v) {
  pyb::dtype d = pyb::dtype::from_args(pyb::reinterpret_borrow<pyb::object>(v));
  if (d.kind() == 'f' && d.itemsize() == 4) return false;
  if (d.kind() == 'u' && d.itemsize() == 1) return true;
  valueError("dtype: expected numpy.float32 or numpy.uint8, got " + std::string(pyb::str(d)));
}

double finiteArg(double v, const char* name) {
  if (!std::isfinite(v)) valueError(std::string(name) + ": expected a finite number of seconds");
  return v;
}

Camera resized(Camera cam, std::optional<int> width, std::optional<int> height) {
  const int w = width.value_or(cam.width), h = height.value_or(cam.height);
  const float sx = static_cast<float>(w) / static_cast<float>(cam.width),
              sy = static_cast<float>(h) / static_cast<float>(cam.height);
  cam.fx *= sx, cam.cx *= sx, cam.fy *= sy, cam.cy *= sy;
  cam.width = w, cam.height = h;
  return cam;
}

bool hasContent(const Scene& scene) {
  for (const SceneObject& o : scene.objects)
    if ((o.cloud && o.cloud->size() > 0) || (o.model() && o.model()->drawnPrimitives() > 0) ||
        o.as<GeneratorObject>())
      return true;
  return !scene.script.empty();
}

// The camera of a render: a camera dict (the camera JSON schema), a camera JSON path, or None (the scene's
// camera, else the automatic framing). width/height override the size, scaling the intrinsics.
Camera cameraArg(const pyb::handle& camera, const Scene& scene, std::optional<int> width,
                 std::optional<int> height) {
  if (camera.is_none()) {
    if (scene.camera) return resized(*scene.camera, width, height);
    if (!hasContent(scene))
      valueError("camera: None asks for the automatic framing, but the source has no gaussian to frame");
    return autoCamera(scene, width.value_or(1280), height.value_or(720));
  }
  if (pyb::isinstance<pyb::dict>(camera)) {
    // Array or tensor values (a 4x4 world_to_camera, an eye) become flat lists of numbers first.
    pyb::dict plain;
    for (auto [key, value] : pyb::reinterpret_borrow<pyb::dict>(camera)) {
      const std::string field = "camera[" + std::string(pyb::repr(key)) + "]";
      pyb::object v = hostArrayArg(value, field.c_str());
      if (!pyb::hasattr(v, "tolist") || !pyb::hasattr(v, "ndim"))
        plain[key] = v;
      else
        plain[key] =
            v.attr("ndim").cast<int>() == 0 ? v.attr("tolist")() : v.attr("reshape")(-1).attr("tolist")();
    }
    const std::string text = pyb::module_::import("json").attr("dumps")(plain).cast<std::string>();
    return parseCameraJson(text, "camera", width, height);
  }
  if (pyb::isinstance<pyb::str>(camera) || pyb::hasattr(camera, "__fspath__"))
    return loadCameraJson(inputPathArg(camera, "camera"), width, height);
  throw pyb::type_error("camera: expected a dict (camera JSON schema), a camera JSON path or None, got " +
                        std::string(pyb::str(pyb::type::handle_of(camera).attr("__name__"))));
}

pyb::dict cameraDict(const Camera& c) {
  pyb::dict d;
  d["width"] = c.width, d["height"] = c.height;
  d["fx"] = c.fx, d["fy"] = c.fy, d["cx"] = c.cx, d["cy"] = c.cy;
  pyb::list m;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) m.append(c.world_to_camera.m[i][j]);
  d["world_to_camera"] = m;
  return d;
}

// The options every render takes, in one place (Scene.render, Scene.frames and render share them).
struct RenderArgs {
  pyb::object camera = pyb::none();
  std::optional<int> width, height;
  pyb::object background = pyb::none();
  std::string backend = "auto";
  std::optional<int> sh_degree;
  pyb::object dtype = pyb::none();
  bool antialiased = false;
  pyb::object device = pyb::none();
  bool validation = false;
  pyb::object blend_space = pyb::none();
  std::string sh_precision = "half";
  std::string raster_precision = "full";

  RenderJob resolve(const Scene& scene) const {
    RenderJob job;
    job.backend = backendArg(backend);
    job.camera = cameraArg(camera, scene, sizeArg(width, "width"), sizeArg(height, "height"));
    if (!background.is_none())
      job.settings.background = backgroundArg(background);
    else if (scene.background)
      job.settings.background = *scene.background;
    job.settings.antialiased = antialiased;
    if (!blend_space.is_none()) {
      const std::string space = pyb::str(blend_space).cast<std::string>();
      if (space != "display" && space != "linear")
        valueError("blend_space: expected \"display\", \"linear\" or None, got \"" + space + "\"");
      job.settings.blend_space = parseBlendSpace(space);
    } else if (scene.blend_space) {
      job.settings.blend_space = *scene.blend_space;
    }
    if (sh_degree) {
      if (*sh_degree < 0 || *sh_degree > 3)
        valueError("sh_degree: expected 0..3 or None, got " + std::to_string(*sh_degree));
      job.sh_degree = *sh_degree;
    }
    if (sh_precision != "half" && sh_precision != "full")
      valueError("sh_precision: expected \"half\" or \"full\", got \"" + sh_precision + "\"");
    job.settings.half_sh = sh_precision == "half";
    if (raster_precision != "half" && raster_precision != "full")
      valueError("raster_precision: expected \"half\" or \"full\", got \"" + raster_precision + "\"");
    job.settings.half_raster = raster_precision == "half";
    job.uint8 = dtype.is_none() ? false : dtypeArg(dtype);
    if (!device.is_none()) job.device = pyb::str(device).cast<std::string>();
    job.validation = validation;
    return job;
  }
};

// The image as numpy: (H, W, 4) float32 owning the renderer's pixels (no copy), or uint8 RGBA rounded from
// [0, 1] as the PNG writer does.
pyb::array imageArray(ImageRGBA&& image, bool uint8) {
  const std::vector<pyb::ssize_t> shape{image.height, image.width, 4};
  if (uint8) {
    pyb::array_t<uint8_t> out(shape);
    uint8_t* o = out.mutable_data();
    for (size_t i = 0; i < image.pixels.size(); ++i)
      o[i] = static_cast<uint8_t>(std::lround(std::clamp(image.pixels[i], 0.0f, 1.0f) * 255.0f));
    return out;
  }
  auto* pixels = new std::vector<float>(std::move(image.pixels));
  pyb::capsule base(pixels, [](void* p) { delete static_cast<std::vector<float>*>(p); });
  return pyb::array(pyb::dtype::of<float>(), shape, pixels->data(), base);
}

pyb::array renderArray(const std::shared_ptr<SceneState>& st, double t, const RenderJob& job) {
  ImageRGBA image;
  {
    pyb::gil_scoped_release release;
    image = renderState(st, t, job);
  }
  return imageArray(std::move(image), job.uint8);
}

// Loads a scene JSON, or one splat file, glTF model or character package, as `splatforge render` does.
std::shared_ptr<SceneState> loadState(const pyb::handle& path_arg, const std::optional<std::string>& clip,
                                      double time, bool strict, bool allow_outside_paths,
                                      const pyb::object& max_gaussians, const pyb::object& max_memory) {
  auto st = std::make_shared<SceneState>();
  st->path = inputPathArg(path_arg, "path");
  finiteArg(time, "time");
  const LoadLimits limits = loadLimitsArg(max_gaussians, max_memory, strict);
  const bool scene_json = classifyInput(st->path) == InputKind::kSceneJson;
  if (clip && scene_json)
    valueError("clip: applies to a glTF model or character package; a scene JSON names each object's clip");
  {
    pyb::gil_scoped_release release;  // other Python threads run (and load, with their own limits)
    ThreadLoadLimits scope(limits);
    if (!scene_json) {
      st->scene = sceneFromFile(st->path, clip.value_or(""), time);
    } else {
      SceneLoadOptions lo;
      lo.strict = strict;
      lo.confine_paths = !allow_outside_paths;
      st->scene = loadSceneJson(st->path, lo);
    }
  }
  warnAll(st->scene.warnings);
  return st;
}

std::shared_ptr<SceneState> cloudState(Cloud& cloud) {
  auto st = std::make_shared<SceneState>();
  SceneObject o;
  o.name = "cloud";
  o.source = "python";
  o.cloud = cloud.data;  // render(sh_degree=) limits the degree where the frame packs it, no copy
  st->scene.objects.push_back(std::move(o));
  return st;
}

struct PyScene {
  std::shared_ptr<SceneState> state;
};

// A source argument: Cloud, Scene or a path.
std::shared_ptr<SceneState> sourceState(const pyb::handle& source, const std::optional<std::string>& clip,
                                        bool strict, bool allow_outside_paths,
                                        const pyb::object& max_gaussians, const pyb::object& max_memory) {
  if (pyb::isinstance<Cloud>(source)) return cloudState(source.cast<Cloud&>());
  if (pyb::isinstance<PyScene>(source)) return source.cast<PyScene&>().state;
  if (pyb::isinstance<pyb::str>(source) || pyb::isinstance<pyb::bytes>(source) ||
      pyb::hasattr(source, "__fspath__"))
    return loadState(source, clip, 0.0, strict, allow_outside_paths, max_gaussians, max_memory);
  throw pyb::type_error("source: expected a splatforge.Cloud, a splatforge.Scene or a path, got " +
                        std::string(pyb::str(pyb::type::handle_of(source).attr("__name__"))));
}

// Scene length: one loop of each animated object's clip (clip duration / |speed|), the time a non-looping
// clip reaches its end, and the time of the last script command; the longest of these, 0 for a still scene.
double sceneDuration(const Scene& scene) {
  double d = 0;
  for (const SceneObject& o : scene.objects) {
    if (!o.model() || o.clip < 0 || o.speed == 0) continue;
    const double clip = o.model()->clips()[static_cast<size_t>(o.clip)].duration;
    if (o.loop)
      d = std::max(d, clip / std::abs(o.speed));
    else
      d = std::max(d, o.speed > 0 ? (clip - o.time) / o.speed : o.time / -o.speed);
  }
  for (const SceneObject& o : scene.objects)  // generators driven by time: one pass of their model time
    if (const double span = o.kindOf().modelTimeSpan(); span > 0 && o.speed != 0)
      d = std::max(d, span / std::abs(o.speed));
  for (const character::ScriptCommand& c : scene.script) d = std::max(d, c.t);
  return d;
}

// Scene.frames(): renders start + i / fps for i < count, one frame per next().
struct FrameIterator {
  std::shared_ptr<SceneState> state;
  RenderJob job;
  double fps = 30, start = 0;
  size_t count = 0, next = 0;
};

const char* kRenderArgsDoc = R"doc(
camera: None (the scene's camera, else the automatic framing of the 1st-99th percentile box of the splat
  centres, as `splatforge render` does), a dict in the camera JSON schema (docs/formats/scene-json.md: either
  {"width", "height", "fx", "fy", "cx", "cy", "world_to_camera": 16 numbers row-major, OpenCV axes} or
  {"eye", "target", "up", "fov_y_deg", "width", "height"}; values may be numpy arrays or torch tensors, e.g.
  a (4, 4) world_to_camera: gsplat's viewmat), or the path of a camera JSON file.
width, height: image size; override the camera's (intrinsics scaled). Default 1280 x 720 for the automatic
  framing.
background: (r, g, b) in [0, 1]; default the scene's background, else black.
backend: "auto" (Vulkan when a device exists, else the CPU), "cpu" (the reference renderer) or "vulkan".
  One Vulkan renderer is created on first use and kept for the process.
sh_degree: render with SH coefficients up to this degree only (None: all the cloud has).
dtype: numpy.float32 (default) or numpy.uint8 (RGBA rounded from [0, 1] as PNG files are).
antialiased: apply the antialiasing opacity compensation to every cloud (clouds flagged antialiased get it
  anyway).
device: Vulkan device index or name substring; validation: Khronos validation layers on (a validation error
  raises splatforge.Error).
blend_space: "display" (colours blended as they are, sRGB-encoded: INRIA's rasterizer) or "linear" (decoded to
  linear light before blending, the pixel encoded after); None: the scene's "blend_space", else display.
sh_precision: "half" (SH bands 1-3 of static clouds drawn at half precision, as stored on the GPU; the
  default) or "full" (32-bit coefficients: INRIA's colours exactly).
raster_precision: "full" (32-bit blending, as the CPU renderer; the default) or "half" (Vulkan: the blend in
  16-bit floats where the device has them and the frame draws no meshes or shapes; within 45 dB of the CPU
  renderer).

Returns an (height, width, 4) array: RGB composited over the background, and alpha = 1 - transmittance.
)doc";

// Scene's constructor and read-only properties (path, duration, warnings, background, camera, objects,
// count).
void defSceneProperties(pyb::class_<PyScene>& scene) {
  scene
      .def(pyb::init([](const pyb::object& path, const std::optional<std::string>& clip, double time,
                        bool strict, bool allow_outside_paths, const pyb::object& max_gaussians,
                        const pyb::object& max_memory) {
             return PyScene{
                 loadState(path, clip, time, strict, allow_outside_paths, max_gaussians, max_memory)};
           }),
           pyb::arg("path"), pyb::kw_only(), pyb::arg("clip") = pyb::none(), pyb::arg("time") = 0.0,
           pyb::arg("strict") = false, pyb::arg("allow_outside_paths") = false,
           pyb::arg("max_gaussians") = pyb::none(), pyb::arg("max_memory") = pyb::none())
      .def_property_readonly(
          "path", [](const PyScene& s) { return s.state->path; }, "The file the scene was loaded from.")
      .def_property_readonly(
          "duration", [](const PyScene& s) { return sceneDuration(s.state->scene); },
          "Seconds of animation: the longest of one loop of each animated object's clip (clip "
          "duration / |speed|), the time a non-looping clip reaches its end and the time of the "
          "last script command; 0 for a still scene.")
      .def_property_readonly(
          "warnings", [](const PyScene& s) { return s.state->scene.warnings; },
          "Objects replaced by placeholders, with the reason (also issued as RuntimeWarning).")
      .def_property_readonly(
          "background",
          [](const PyScene& s) -> pyb::object {
            if (!s.state->scene.background) return pyb::none();
            const Vec3 b = *s.state->scene.background;
            return pyb::make_tuple(b.x, b.y, b.z);
          },
          "The scene's background (r, g, b), or None.")
      .def_property_readonly(
          "camera",
          [](const PyScene& s) -> pyb::object {
            if (!s.state->scene.camera) return pyb::none();
            return cameraDict(*s.state->scene.camera);
          },
          "The scene's camera as an intrinsics camera dict (usable as render's camera), or None.")
      .def_property_readonly(
          "objects",
          [](const PyScene& s) {
            pyb::list out;
            for (const SceneObject& o : s.state->scene.objects) {
              pyb::dict d;
              d["name"] = o.name;
              d["source"] = o.source;
              d["kind"] = std::string(o.kindOf().kindName());
              const GeneratorObject* g = o.as<GeneratorObject>();
              d["gaussians"] = o.cloud ? o.cloud->size()
                               : g     ? g->generator().lastCount()
                                       : 0;  // a generator's last output
              d["clip"] = pyb::none();
              if (o.model() && o.clip >= 0) {
                const std::string& name = o.model()->clips()[static_cast<size_t>(o.clip)].name;
                d["clip"] = name.empty() ? pyb::object(pyb::int_(o.clip)) : pyb::object(pyb::str(name));
              }
              pyb::list events;
              for (const anim::ClipEvent& e : o.clipEvents()) {
                pyb::dict ev;
                ev["name"] = e.name;
                ev["time"] = static_cast<double>(e.time);
                events.append(ev);
              }
              d["events"] = events;
              out.append(d);
            }
            return out;
          },
          "The objects: dicts with name, source (file), kind (\"splats\", \"gltf\", \"character\", "
          "\"decoder_character\", \"generator\", \"hull\" or \"lod\"), gaussians, "
          "clip (the animation's name, its index when unnamed, or None) and events (the clip's animation "
          "events: dicts "
          "with name and time, clip seconds, in time order).")
      .def_property_readonly(
          "count",
          [](const PyScene& s) {
            size_t n = 0;
            for (const SceneObject& o : s.state->scene.objects) n += o.cloud ? o.cloud->size() : 0;
            return n;
          },
          "Gaussians over every object (characters spawned by a script not included).");
}

// Scene's script log and animation-event methods (take_log, take_events, advance, events_between).
void defSceneEvents(pyb::class_<PyScene>& scene) {
  scene
      .def(
          "take_log",
          [](PyScene& s) {
            std::vector<std::string> out;
            {
              pyb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(renderers().mutex);
              out.swap(s.state->log);
            }
            return out;
          },
          "Lines the character script logged (say, warnings) in renders since the last call, each prefixed "
          "with its time.")
      .def(
          "take_events",
          [](PyScene& s) {
            std::vector<FiredClipEvent> events;
            uint64_t skipped = 0;
            {
              pyb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(renderers().mutex);
              events.swap(s.state->events);
              std::swap(skipped, s.state->events_skipped);
            }
            warnSkipped(skipped);
            return eventList(events);
          },
          "The animation events renders (render, frames) fired since the last call, in scene-time order: "
          "dicts with object, "
          "event, clip_time (the event's time in its clip) and scene_time (when the playhead reached it). A "
          "render fires the "
          "events crossed since the scene's last render or advance (the first one those exactly at its "
          "time); a render at "
          "an earlier time fires none.")
      .def(
          "advance",
          [](PyScene& s, double t) {
            finiteArg(t, "t");
            ClipEventStep step;
            {
              pyb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(renderers().mutex);
              step = s.state->playback.advanceEvents(s.state->scene, t);
            }
            warnSkipped(step.skipped);
            return eventList(step.events);
          },
          pyb::arg("t"),
          "Moves the scene's event clock to scene time t without rendering and returns the animation events "
          "that fired "
          "(as take_events lists them; not queued for take_events): those crossed since the last render or "
          "advance, the "
          "events exactly at t when it is the first, none when t is not later. A render at t afterwards "
          "fires none again.")
      .def(
          "events_between",
          [](const PyScene& s, double t0, double t1, bool include_start) {
            finiteArg(t0, "t0");
            finiteArg(t1, "t1");
            if (t1 < t0)
              valueError("t1: expected t1 >= t0, got " + std::to_string(t1) + " < " + std::to_string(t0));
            const ClipEventStep step = clipEventsBetween(s.state->scene, t0, t1, include_start);
            warnSkipped(step.skipped);
            return eventList(step.events);
          },
          pyb::arg("t0"), pyb::arg("t1"), pyb::kw_only(), pyb::arg("include_start") = false,
          "The animation events crossed as scene time goes from t0 to t1 (t0 excluded unless include_start), "
          "computed "
          "from the clips' timing alone: no render, and the scene's event clock is left as it is.");
}

// Scene's render and frames, and its repr.
void defSceneRendering(pyb::class_<PyScene>& scene) {
  scene
      .def(
          "render",
          [](PyScene& s, double t, const pyb::object& camera, std::optional<int> width,
             std::optional<int> height, const pyb::object& background, const std::string& backend,
             std::optional<int> sh_degree, const pyb::object& dtype, bool antialiased,
             const pyb::object& device, bool validation, const pyb::object& blend_space,
             const std::string& sh_precision, const std::string& raster_precision) {
            RenderArgs a{camera,      width,  height,     background,  backend,      sh_degree,       dtype,
                         antialiased, device, validation, blend_space, sh_precision, raster_precision};
            return renderArray(s.state, finiteArg(t, "t"), a.resolve(s.state->scene));
          },
          pyb::arg("t") = 0.0, pyb::arg("camera") = pyb::none(), pyb::kw_only(),
          pyb::arg("width") = pyb::none(), pyb::arg("height") = pyb::none(),
          pyb::arg("background") = pyb::none(), pyb::arg("backend") = "auto",
          pyb::arg("sh_degree") = pyb::none(), pyb::arg("dtype") = pyb::none(),
          pyb::arg("antialiased") = false, pyb::arg("device") = pyb::none(), pyb::arg("validation") = false,
          pyb::arg("blend_space") = pyb::none(), pyb::arg("sh_precision") = "half",
          pyb::arg("raster_precision") = "full",
          (std::string("Renders the scene at scene time t seconds: glTF clips are sampled at time + speed * "
                       "t (wrapped when "
                       "looping), characters deformed, script commands up to t run.\n") +
           kRenderArgsDoc)
              .c_str())
      .def(
          "frames",
          [](PyScene& s, double fps, std::optional<double> duration, double start, const pyb::object& camera,
             std::optional<int> width, std::optional<int> height, const pyb::object& background,
             const std::string& backend, std::optional<int> sh_degree, const pyb::object& dtype,
             bool antialiased, const pyb::object& device, bool validation, const pyb::object& blend_space,
             const std::string& sh_precision, const std::string& raster_precision) {
            if (!(fps > 0 && fps <= 1000))
              valueError("fps: expected (0, 1000] frames per second, got " + std::to_string(fps));
            const double d = duration ? *duration : sceneDuration(s.state->scene);
            if (!std::isfinite(d) || d < 0 || d > 3600)
              valueError("duration: expected [0, 3600] seconds, got " + std::to_string(d));
            RenderArgs a{camera,      width,  height,     background,  backend,      sh_degree,       dtype,
                         antialiased, device, validation, blend_space, sh_precision, raster_precision};
            FrameIterator it;
            it.state = s.state;
            it.job = a.resolve(s.state->scene);  // one camera for the whole sequence, as `splatforge animate`
            it.fps = fps;
            it.start = finiteArg(start, "start");
            it.count = std::max<size_t>(1, static_cast<size_t>(std::llround(d * fps)));
            return it;
          },
          pyb::arg("fps") = 30.0, pyb::arg("duration") = pyb::none(), pyb::kw_only(), pyb::arg("start") = 0.0,
          pyb::arg("camera") = pyb::none(), pyb::arg("width") = pyb::none(), pyb::arg("height") = pyb::none(),
          pyb::arg("background") = pyb::none(), pyb::arg("backend") = "auto",
          pyb::arg("sh_degree") = pyb::none(), pyb::arg("dtype") = pyb::none(),
          pyb::arg("antialiased") = false, pyb::arg("device") = pyb::none(), pyb::arg("validation") = false,
          pyb::arg("blend_space") = pyb::none(), pyb::arg("sh_precision") = "half",
          pyb::arg("raster_precision") = "full",
          (std::string(
               "An iterator of (t, image) over max(1, round(duration * fps)) frames at t = start + i / fps, "
               "as "
               "`splatforge animate` renders them (duration default: Scene.duration). The camera is resolved "
               "once, before the first frame. Options as render():\n") +
           kRenderArgsDoc)
              .c_str())
      .def("__repr__", [](const PyScene& s) {
        return "<splatforge.Scene " + s.state->path + ": " + std::to_string(s.state->scene.objects.size()) +
               " objects>";
      });
}

// FrameIterator, then Scene.
void registerScene(pyb::module_& m) {
  // Registered before Scene so that Scene.frames()'s signature names it.
  pyb::class_<FrameIterator>(
      m, "FrameIterator", "Frames of Scene.frames(): iterate for (t, image) pairs; len() is the frame count.")
      .def("__iter__", [](FrameIterator& it) -> FrameIterator& { return it; })
      .def("__len__", [](const FrameIterator& it) { return it.count; })
      .def("__next__", [](FrameIterator& it) {
        if (it.next >= it.count) throw pyb::stop_iteration();
        const double t = it.start + static_cast<double>(it.next++) / it.fps;
        return pyb::make_tuple(t, renderArray(it.state, t, it.job));
      });

  pyb::class_<PyScene> scene(m, "Scene", R"doc(
A scene to render over time: a scene JSON (docs/formats/scene-json.md: splat files, glTF models and splat
characters placed by transforms, a camera, a background, a character script), or one splat file, glTF/GLB
model or character package.

Scene(path, *, clip=None, time=0.0, strict=False, allow_outside_paths=False, max_gaussians=None,
max_memory=None). clip and time apply to one glTF model or character package (animation name or index, and
its start time). strict: an object that fails to load is an error (otherwise a magenta placeholder and a
RuntimeWarning), and files holding NaN or infinity are refused. Object paths of a scene JSON must stay inside
its directory unless allow_outside_paths (for scenes you trust). max_gaussians / max_memory: load limits, as
for load().

Raises splatforge.Error when the file is missing or malformed.
)doc");
  defSceneProperties(scene);
  defSceneEvents(scene);
  defSceneRendering(scene);
}

// The module's render, save_image and auto_camera.
void registerRenderFunctions(pyb::module_& m) {
  m.def(
      "render",
      [](const pyb::object& source, const pyb::object& camera, double time, std::optional<int> width,
         std::optional<int> height, const pyb::object& background, const std::string& backend,
         std::optional<int> sh_degree, const pyb::object& dtype, bool antialiased, const pyb::object& device,
         bool validation, const pyb::object& blend_space, const std::string& sh_precision,
         const std::string& raster_precision, const std::optional<std::string>& clip, bool strict,
         bool allow_outside_paths, const pyb::object& max_gaussians, const pyb::object& max_memory) {
        if (sh_degree && (*sh_degree < 0 || *sh_degree > 3))
          valueError("sh_degree: expected 0..3 or None, got " + std::to_string(*sh_degree));
        std::shared_ptr<SceneState> st =
            sourceState(source, clip, strict, allow_outside_paths, max_gaussians, max_memory);
        RenderArgs a{camera,      width,  height,     background,  backend,      sh_degree,       dtype,
                     antialiased, device, validation, blend_space, sh_precision, raster_precision};
        return renderArray(st, finiteArg(time, "time"), a.resolve(st->scene));
      },
      pyb::arg("source"), pyb::arg("camera") = pyb::none(), pyb::kw_only(), pyb::arg("time") = 0.0,
      pyb::arg("width") = pyb::none(), pyb::arg("height") = pyb::none(), pyb::arg("background") = pyb::none(),
      pyb::arg("backend") = "auto", pyb::arg("sh_degree") = pyb::none(), pyb::arg("dtype") = pyb::none(),
      pyb::arg("antialiased") = false, pyb::arg("device") = pyb::none(), pyb::arg("validation") = false,
      pyb::arg("blend_space") = pyb::none(), pyb::arg("sh_precision") = "half",
      pyb::arg("raster_precision") = "full", pyb::arg("clip") = pyb::none(), pyb::arg("strict") = false,
      pyb::arg("allow_outside_paths") = false, pyb::arg("max_gaussians") = pyb::none(),
      pyb::arg("max_memory") = pyb::none(),
      (std::string(
           "Renders a source, as `splatforge render` does, and returns the image as a numpy array.\n\n"
           "source: a Cloud, a Scene, or a path: a splat file, glTF/GLB model, character package or scene "
           "JSON, "
           "loaded for this call (clip, strict, allow_outside_paths, max_gaussians and max_memory as for "
           "Scene).\n"
           "time: scene time in seconds (glTF clips and characters move; a still cloud ignores it).\n") +
       kRenderArgsDoc)
          .c_str());

  m.def(
      "save_image",
      [](const pyb::handle& image, const pyb::object& path_arg) {
        const std::string path = pathArg(path_arg, "path");
        const std::string ext = fileExtension(path);
        if (ext != ".png" && ext != ".npy") valueError("path: expected a .png or .npy path, got " + path);
        pyb::array a = pyb::array::ensure(image);
        const bool u8 = a && a.dtype().kind() == 'u' && a.dtype().itemsize() == 1;
        if (!a || !(u8 || a.dtype().kind() == 'f') || a.ndim() != 3 || (a.shape(2) != 3 && a.shape(2) != 4) ||
            a.shape(0) < 1 || a.shape(1) < 1)
          valueError("image: expected an (H, W, 4) or (H, W, 3) float32 or uint8 array, got " +
                     (a ? std::string(pyb::str(a.dtype())) + " " + std::string(pyb::str(a.attr("shape")))
                        : std::string(pyb::repr(image))));
        ImageRGBA out(static_cast<int>(a.shape(1)), static_cast<int>(a.shape(0)));
        const size_t pixels = static_cast<size_t>(out.width) * static_cast<size_t>(out.height),
                     channels = static_cast<size_t>(a.shape(2));
        if (u8) {
          auto b = pyb::array_t<uint8_t, pyb::array::c_style | pyb::array::forcecast>::ensure(a);
          for (size_t i = 0; i < pixels; ++i)
            for (size_t c = 0; c < 4; ++c)
              out.pixels[i * 4 + c] = c < channels ? b.data()[i * channels + c] / 255.0f : 1.0f;
        } else {
          auto f = pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>::ensure(a);
          for (size_t i = 0; i < pixels; ++i)
            for (size_t c = 0; c < 4; ++c)
              out.pixels[i * 4 + c] = c < channels ? f.data()[i * channels + c] : 1.0f;
        }
        pyb::gil_scoped_release release;
        if (ext == ".png")
          writePng(path, out);
        else
          writeNpy(path, out);
      },
      pyb::arg("image"), pyb::arg("path"),
      "Writes a rendered image atomically: .png as 8-bit RGB (colour clamped to [0, 1] and rounded; alpha is "
      "not "
      "stored), .npy as float32 (H, W, 4) (alpha 1 for a 3-channel image). image: (H, W, 4) or (H, W, 3), "
      "float "
      "(values in [0, 1]) or uint8. Raises ValueError for another extension or array, splatforge.Error when "
      "the "
      "write fails.");

  m.def(
      "auto_camera",
      [](const pyb::object& source, int width, int height) {
        sizeArg(width, "width");
        sizeArg(height, "height");
        std::shared_ptr<SceneState> st =
            sourceState(source, std::nullopt, false, false, pyb::none(), pyb::none());
        if (!hasContent(st->scene)) valueError("source: has no gaussian to frame");
        return cameraDict(autoCamera(st->scene, width, height));
      },
      pyb::arg("source"), pyb::arg("width") = 1280, pyb::arg("height") = 720,
      "The automatic framing render() uses without a camera, as a camera dict (intrinsics form) to adjust "
      "and pass back.");
}

// The module's Vulkan device functions: vulkan_available, vulkan_device and release_vulkan.
void registerVulkanFunctions(pyb::module_& m) {
  m.def(
      "vulkan_available",
      [] {
        pyb::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(renderers().mutex);
        return renderers().vulkanAvailable();
      },
      "True when a Vulkan device the renderer can use exists (backend=\"vulkan\" works). backend=\"auto\" "
      "takes it only "
      "when it is a GPU: a CPU Vulkan device (lavapipe) renders slower than the CPU renderer. Never raises.");

  m.def(
      "vulkan_device",
      [](const pyb::object& device) -> pyb::object {
        const std::optional<std::string> wanted =
            device.is_none() ? std::nullopt
                             : std::optional<std::string>(pyb::str(device).cast<std::string>());
        std::optional<gpu::DeviceInfo> info;
        uint64_t allocated = 0, peak = 0;
        {
          pyb::gil_scoped_release release;
          Renderers& r = renderers();
          std::lock_guard<std::mutex> lock(r.mutex);
          if (r.vulkanAvailable()) {
            // No device named: the renderer there is, else the default device.
            FrameDriver& d = wanted || !r.vulkan
                                 ? r.ensureVulkan(wanted.value_or(""), r.vulkan && r.validation)
                                 : *r.vulkan;
            info = d.vulkan()->device();
            allocated = d.vulkan()->context().allocatedBytes();
            peak = d.vulkan()->context().peakAllocatedBytes();
          }
        }
        if (!info) return pyb::none();
        pyb::dict d;
        d["name"] = info->name;
        d["type"] = info->typeName();
        d["driver"] = info->driver_name + (info->driver_info.empty() ? "" : " " + info->driver_info);
        d["subgroup_size"] = info->subgroup_size;
        d["shader_float16"] = info->shader_float16;  // the half-precision raster can run
        d["device_local_bytes"] = info->device_local_bytes;
        d["allocated_bytes"] = allocated;  // GPU memory the renderer holds now, and its high-water mark
        d["peak_allocated_bytes"] = peak;
        return d;
      },
      pyb::arg("device") = pyb::none(),
      "The device of the process's Vulkan renderer (created if needed; `device` picks one by index or name "
      "substring) as a dict (name, type, driver, subgroup_size, shader_float16, device_local_bytes, and the "
      "GPU memory the "
      "renderer holds: allocated_bytes now, peak_allocated_bytes its high-water mark), or None without a "
      "Vulkan device.");

  m.def(
      "release_vulkan",
      [] {
        pyb::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(renderers().mutex);
        renderers().release();
      },
      "Destroys the process's Vulkan renderer and frees its GPU memory; the next Vulkan render creates a new "
      "one. "
      "Called at interpreter exit.");
}

}  // namespace

void registerRender(pyb::module_& m) {
  registerScene(m);
  registerRenderFunctions(m);
  registerVulkanFunctions(m);
}

}  // namespace sf::py
