#include "commands.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "core/parallel.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/image_io.h"
#include "gpu/gpu.h"
#include "render/cpu_renderer.h"
#include "render/vulkan_renderer.h"
#include "scene/demo.h"
#include "scene/scene.h"

namespace sf::cli {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int fail(const char* command, const std::string& message) {
  fmt::print(stderr, "splatforge {}: error: {}\n", command, message);
  return 1;
}

void progress(const std::string& line) { fmt::print(stderr, "  {}\n", line); }

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    else out += c;
  }
  return out;
}

std::string vecJson(Vec3 v) { return fmt::format("[{}, {}, {}]", v.x, v.y, v.z); }
std::string vecText(Vec3 v) { return fmt::format("{:.4f} {:.4f} {:.4f}", v.x, v.y, v.z); }

Vec3 parseColor(const std::string& text) {
  Vec3 c;
  const char* p = text.c_str();
  for (int k = 0; k < 3; ++k) {
    char* end = nullptr;
    double v = std::strtod(p, &end);
    if (end == p || !std::isfinite(v) || v < 0 || v > 1)
      throw Error("--bg '" + text + "': expected three numbers in [0, 1] separated by commas, like 1,1,1");
    c[k] = static_cast<float>(v);
    p = end;
    if (k < 2) {
      if (*p != ',') throw Error("--bg '" + text + "': expected three numbers in [0, 1] separated by commas, like 1,1,1");
      ++p;
    }
  }
  if (*p != '\0') throw Error("--bg '" + text + "': unexpected text after the third number");
  return c;
}

void checkWritableTarget(const std::string& path, const char* what) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    throw Error(std::string(what) + " " + path + ": directory " + parent.string() + " does not exist");
}

struct BackendChoice {
  std::string backend;  // auto, vulkan or cpu
  std::string device;
  bool validation = false;
};

// Renders a scene and writes the outputs; shared by `render` and `demo`.
int renderAndWrite(const char* command, const Scene& scene, const Camera& cam, const RenderSettings& settings,
                   const BackendChoice& backend, const std::string& png, const std::string& npy, Clock::time_point t_start,
                   double load_s) {
  std::vector<RenderObject> objects = scene.renderObjects();
  size_t total = 0;
  for (const auto& o : objects) total += o.cloud->size();
  bool use_vulkan = backend.backend == "vulkan" || (backend.backend == "auto" && gpu::vulkanAvailable());
  ImageRGBA image;
  size_t visible = 0, splats = 0, keys = 0;
  std::string timing;
  if (use_vulkan) {
    gpu::ContextOptions co;
    co.device = backend.device;
    co.validation = backend.validation;
    VulkanRenderer renderer(co);
    progress(fmt::format("rendering {}x{} on Vulkan device {} ({}, subgroup {}; {} objects, {} gaussians)", cam.width, cam.height,
                         renderer.device().name, renderer.device().typeName(), renderer.device().subgroup_size, objects.size(), total));
    VulkanFrameStats st;
    image = renderer.render(objects, cam, settings, &st);
    if (renderer.context().validationErrors() > 0)
      throw Error(fmt::format("{} Vulkan validation error(s); last: {}", renderer.context().validationErrors(),
                              renderer.context().lastValidationError()));
    visible = st.visible, splats = st.splats, keys = st.tile_keys;
    const VulkanPassTimes& t = st.times;
    timing = fmt::format("gpu {:.2f} ms: preprocess {:.2f}, scan {:.2f}, keys {:.2f}, sort {:.2f}, ranges {:.2f}, raster {:.2f}, readback {:.2f}",
                         t.total, t.preprocess, t.scan, t.emit, t.sort, t.ranges, t.raster, t.readback);
  } else {
    progress(fmt::format("rendering {}x{} on the cpu backend ({} objects, {} gaussians)", cam.width, cam.height, objects.size(), total));
    RenderStats st;
    image = renderCpu(objects, cam, settings, &st);
    visible = st.visible, splats = st.splats, keys = st.tile_keys;
    timing = fmt::format("cpu: preprocess {:.1f} ms, sort {:.1f} ms, raster {:.1f} ms", st.preprocess_ms, st.sort_ms, st.raster_ms);
  }
  if (visible == 0)
    return fail(command, fmt::format("no gaussian is visible from this camera (all {} culled: behind the camera, "
                                     "closer than 0.2, or outside the image); check the camera",
                                     splats));
  writePng(png, image);
  if (!npy.empty()) writeNpy(npy, image);
  fmt::print(stderr, "  visible {} of {} gaussians, {} tile keys\n", visible, splats, keys);
  fmt::print("wrote {}{}{}\n", png, npy.empty() ? "" : " and ", npy);
  fmt::print("time: {:.3f} s total (load {:.3f} s; {})\n", secondsSince(t_start), load_s, timing);
  return 0;
}

}  // namespace

std::string defaultAssetsDir() {
  if (const char* env = std::getenv("SPLATFORGE_ASSETS")) return env;
  return "../shared/assets";
}

int runInfo(const InfoOptions& o) {
  try {
    auto t0 = Clock::now();
    LoadedSplats l = loadSplats(o.input);
    const GaussianCloud& c = l.cloud;
    std::string version = l.version ? fmt::format(" (version {})", l.version) : "";
    if (o.json) {
      fmt::print("{{\n  \"file\": \"{}\",\n  \"format\": \"{}\",\n  \"version\": {},\n  \"count\": {},\n  \"sh_degree\": {},\n",
                 jsonEscape(o.input), formatName(l.format), l.version, c.size(), c.sh_degree);
      fmt::print("  \"antialiased\": {},\n  \"file_bytes\": {},\n  \"memory_bytes\": {},\n", c.antialiased ? "true" : "false",
                 l.file_bytes, c.memoryBytes());
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
    fmt::print("gaussians:   {}\n", c.size());
    fmt::print("sh degree:   {}\n", c.sh_degree);
    fmt::print("antialiased: {}\n", c.antialiased ? "yes" : "no");
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
    return fail("info", e.what());
  }
}

int runConvert(const ConvertOptions& o) {
  try {
    auto t0 = Clock::now();
    writeFormatForPath(o.output);  // refuse an unknown output extension before any work
    checkWritableTarget(o.output, "output");
    progress("loading " + o.input);
    LoadedSplats l = loadSplats(o.input);
    progress(fmt::format("loaded {} gaussians ({}), writing {}", l.cloud.size(), formatName(l.format), o.output));
    saveSplats(l.cloud, o.output);
    fmt::print("wrote {} ({} gaussians)\ntime: {:.3f} s\n", o.output, l.cloud.size(), secondsSince(t0));
    return 0;
  } catch (const std::exception& e) {
    return fail("convert", e.what());
  }
}

int runRender(const RenderOptions& o) {
  try {
    auto t0 = Clock::now();
    if (fileExtension(o.output) != ".png") throw Error("output " + o.output + ": expected a .png path");
    checkWritableTarget(o.output, "output");
    if (!o.save_float.empty()) {
      if (fileExtension(o.save_float) != ".npy") throw Error("--save-float " + o.save_float + ": expected a .npy path");
      checkWritableTarget(o.save_float, "--save-float");
    }
    RenderSettings settings;
    if (!o.background.empty()) settings.background = parseColor(o.background);
    settings.antialiased = o.antialiased;

    Scene scene;
    progress("loading " + o.input);
    if (looksLikeSceneJson(o.input)) {
      SceneLoadOptions lo;
      lo.strict = o.strict;
      lo.width = o.width;
      lo.height = o.height;
      lo.progress = progress;
      scene = loadSceneJson(o.input, lo);
      for (const std::string& w : scene.warnings) fmt::print(stderr, "splatforge render: warning: {}\n", w);
      if (scene.background && o.background.empty()) settings.background = *scene.background;
    } else {
      LoadedSplats l = loadSplats(o.input);
      if (l.cloud.size() == 0) throw Error(o.input + ": contains no gaussians");
      progress(fmt::format("loaded {} gaussians ({}{})", l.cloud.size(), formatName(l.format),
                           l.version ? fmt::format(" v{}", l.version) : ""));
      SceneObject obj;
      obj.name = std::filesystem::path(o.input).stem().string();
      obj.source = o.input;
      obj.cloud = std::make_shared<GaussianCloud>(std::move(l.cloud));
      scene.objects.push_back(std::move(obj));
    }
    double load_s = secondsSince(t0);
    Camera cam;
    if (!o.camera.empty()) cam = loadCameraJson(o.camera, o.width, o.height);
    else if (scene.camera) cam = *scene.camera;
    else cam = autoCamera(scene, o.width.value_or(1280), o.height.value_or(720));
    return renderAndWrite("render", scene, cam, settings, {o.backend, o.device, o.validation}, o.output, o.save_float, t0, load_s);
  } catch (const std::exception& e) {
    return fail("render", e.what());
  }
}

int runDemo(const DemoOptions& o) {
  try {
    auto t0 = Clock::now();
    if (fileExtension(o.output) != ".png") throw Error("output " + o.output + ": expected a .png path");
    checkWritableTarget(o.output, "output");
    Scene scene = makeDemoScene(o.width, o.height);
    RenderSettings settings;
    settings.background = *scene.background;
    return renderAndWrite("demo", scene, *scene.camera, settings, {o.backend, o.device, o.validation}, o.output, o.save_float, t0,
                          secondsSince(t0));
  } catch (const std::exception& e) {
    return fail("demo", e.what());
  }
}

int runBench(const BenchOptions& o) {
  try {
    std::string dir = o.assets.empty() ? defaultAssetsDir() : o.assets;
    const std::string files[] = {dir + "/splats/biker.ply", dir + "/splats/biker.compressed.ply", dir + "/splats/biker.spz"};
    for (const std::string& f : files)
      if (!std::filesystem::exists(f)) throw Error(f + ": not found (set --assets or SPLATFORGE_ASSETS)");
    fmt::print("splatforge bench: {} worker threads, best of {}\n", workerCount(), o.repeat);
    GaussianCloud biker;
    for (const std::string& f : files) {
      std::vector<uint8_t> bytes = readFile(f);
      double best = std::numeric_limits<double>::infinity();
      for (int r = 0; r < o.repeat; ++r) {
        auto t0 = Clock::now();
        LoadedSplats l = decodeSplats(bytes, f);
        best = std::min(best, secondsSince(t0));
        if (f.ends_with(".spz")) biker = std::move(l.cloud);
      }
      fmt::print("load {:<40} {:8.1f} MB/s  ({:.2f} MB in {:.1f} ms)\n", std::filesystem::path(f).filename().string(),
                 static_cast<double>(bytes.size()) / 1e6 / best, static_cast<double>(bytes.size()) / 1e6, best * 1e3);
    }
    Scene scene;
    SceneObject obj;
    obj.cloud = std::make_shared<GaussianCloud>(std::move(biker));
    scene.objects.push_back(obj);
    Camera cam = autoCamera(scene, o.width, o.height);
    std::vector<RenderObject> objects = scene.renderObjects();
    RenderStats best;
    double best_total = std::numeric_limits<double>::infinity();
    for (int r = 0; r < o.repeat; ++r) {
      RenderStats st;
      auto t0 = Clock::now();
      renderCpu(objects, cam, RenderSettings{}, &st);
      double total = secondsSince(t0);
      if (total < best_total) best_total = total, best = st;
    }
    fmt::print("render biker {}x{} cpu: {:.1f} ms (preprocess {:.1f}, sort {:.1f}, raster {:.1f}; {} visible, {} keys)\n",
               o.width, o.height, best_total * 1e3, best.preprocess_ms, best.sort_ms, best.raster_ms, best.visible,
               best.tile_keys);
    return 0;
  } catch (const std::exception& e) {
    return fail("bench", e.what());
  }
}

}  // namespace sf::cli
