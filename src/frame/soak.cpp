#include "frame/soak.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/chart.h"
#include "core/error.h"
#include "gpu/gpu.h"

namespace sf {

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Least-squares slope of y over x.
double slope(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  if (n < 2) return 0;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= static_cast<double>(n), my /= static_cast<double>(n);
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  return sxx > 0 ? sxy / sxx : 0;
}

// `scene`'s objects moved by `offset` (their own transforms kept, the translation put in front).
std::vector<SceneObject> placed(const Scene& scene, Vec3 offset) {
  std::vector<SceneObject> out = scene.objects;
  for (SceneObject& o : out)
    o.object_to_world = Mat4::fromLinearTranslation(Mat3{}, offset) * o.object_to_world;
  return out;
}

std::string perKframe(double v, const char* unit, double scale) {
  char text[64];
  std::snprintf(text, sizeof text, "%+.3f %s PER 1000 FRAMES", v / scale, unit);
  return text;
}

}  // namespace

ImageRGBA plotSoak(const SoakReport& r) {
  std::vector<double> frames;
  chart::Panel ms{
      "FRAME MS: " + perKframe(r.frame_ms_slope_per_kframe, "MS", 1), Vec3{0.12f, 0.38f, 0.80f}, {}};
  chart::Panel gpu{
      "GPU MEMORY MB: " + perKframe(r.gpu_slope_per_kframe, "MB", 1e6), Vec3{0.88f, 0.40f, 0.05f}, {}};
  chart::Panel rss{
      "RESIDENT MEMORY MB: " + perKframe(r.rss_slope_per_kframe, "MB", 1e6), Vec3{0.10f, 0.60f, 0.25f}, {}};
  for (const SoakSample& s : r.samples) {
    frames.push_back(s.frame);
    ms.values.push_back(s.frame_ms);
    gpu.values.push_back(static_cast<double>(s.gpu_bytes) / 1e6);
    rss.values.push_back(static_cast<double>(s.rss_bytes) / 1e6);
  }
  return chart::plotPanels("SOAK: " + std::to_string(r.frames) + " FRAMES, SLOPES OVER THE SECOND HALF",
                           "FRAME", frames, {ms, gpu, rss});
}

uint64_t residentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (got != 2) return 0;
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

SoakReport runSoak(FrameDriver& driver, std::vector<SoakInput> inputs, const SoakOptions& o,
                   const std::function<void(const SoakSample&)>& progress) {
  if (inputs.empty()) throw Error("soak: no inputs");
  if (o.frames < 2) throw Error("soak: at least 2 frames, got " + std::to_string(o.frames));
  if (o.width < 8 || o.height < 8)
    throw Error("soak: image size " + std::to_string(o.width) + "x" + std::to_string(o.height) +
                " is too small");
  if (o.sample_every < 1 || o.resize_every < 1)
    throw Error("soak: sample and resize intervals must be positive");

  // Each input's objects placed once; every input present: the box the camera orbits, and the scene the
  // camera is framed on.
  std::vector<std::vector<SceneObject>> objects_of;
  Scene all;
  for (const SoakInput& in : inputs) {
    objects_of.push_back(placed(in.scene, in.offset));
    all.objects.insert(all.objects.end(), objects_of.back().begin(), objects_of.back().end());
  }
  const CloudBounds box = sceneBounds(all);
  const Vec3 target = (box.p01 + box.p99) * 0.5f;
  const Camera framed = autoCamera(all, o.width, o.height);
  const Vec3 eye0 = framed.position();
  // The camera's up (OpenCV axes: its y row points down in the image) is the orbit's axis.
  const Mat3 r = framed.world_to_camera.linear();
  const Vec3 up = normalize(Vec3{-r.m[1][0], -r.m[1][1], -r.m[1][2]});
  const Vec3 from = eye0 - target;
  const Vec3 along = up * dot(from, up), across = from - along;
  const Vec3 side = cross(up, across);
  const float fov_y = 2.0f * std::atan(0.5f * static_cast<float>(o.height) / framed.fy) * 57.29577951f;

  gpu::Context* ctx = driver.vulkan() ? &driver.vulkan()->context() : nullptr;
  const uint32_t errors_before = ctx ? ctx->validationErrors() : 0;
  SoakReport report;
  report.frames = o.frames;
  ScenePlayback playback;
  const auto start = Clock::now();
  const int half = o.frames / 2;
  for (int f = 0; f < o.frames; ++f) {
    Scene scene;
    for (size_t k = 0; k < inputs.size(); ++k)
      if (inputs[k].period <= 0 || f < o.warmup || (f / inputs[k].period) % 2 == 1)
        scene.objects.insert(scene.objects.end(), objects_of[k].begin(), objects_of[k].end());
    const bool small = (f / o.resize_every) % 2 == 1;
    const int w = small ? std::max(8, o.width * 3 / 4) : o.width,
              h = small ? std::max(8, o.height * 3 / 4) : o.height;
    // A full turn every 600 frames.
    const float a = 6.2831853f * static_cast<float>(f) / 600.0f;
    const Vec3 eye = target + along + across * std::cos(a) + side * std::sin(a);
    FrameRequest request{
        static_cast<double>(f) * o.frame_seconds, lookAtCamera(eye, target, up, fov_y, w, h), o.settings, {}};
    const auto t0 = Clock::now();
    const FrameResult result = driver.render(scene, playback, request);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (f % o.sample_every == 0 || f == o.frames - 1) {
      SoakSample s;
      s.frame = f;
      s.frame_ms = ms;
      s.gpu_bytes = ctx ? ctx->allocatedBytes() : 0;
      s.rss_bytes = residentBytes();
      s.objects = scene.objects.size();
      s.splats = result.splats;
      s.width = w, s.height = h;
      report.samples.push_back(s);
      if (progress) progress(s);
    }
    if (f == half) {
      report.gpu_peak_at_half = ctx ? ctx->peakAllocatedBytes() : 0;
      report.rss_at_half = residentBytes();
    }
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report.gpu_peak_bytes = ctx ? ctx->peakAllocatedBytes() : 0;
  report.rss_end = residentBytes();
  report.validation_errors = ctx ? ctx->validationErrors() - errors_before : 0;

  std::vector<double> x, gpu, rss, ms, early, late;
  for (const SoakSample& s : report.samples) {
    if (s.frame >= half) {
      x.push_back(static_cast<double>(s.frame) / 1000.0);
      gpu.push_back(static_cast<double>(s.gpu_bytes));
      rss.push_back(static_cast<double>(s.rss_bytes));
      ms.push_back(s.frame_ms);
    }
    if (s.frame >= o.frames / 10 && s.frame < o.frames / 5) early.push_back(s.frame_ms);
    if (s.frame >= o.frames - o.frames / 10) late.push_back(s.frame_ms);
  }
  report.gpu_slope_per_kframe = slope(x, gpu);
  report.rss_slope_per_kframe = slope(x, rss);
  report.frame_ms_slope_per_kframe = slope(x, ms);
  report.early_ms = median(early);
  report.late_ms = median(late);
  return report;
}

}  // namespace sf
