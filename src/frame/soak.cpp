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
  for (SceneObject& o : out) o.object_to_world = Mat4::fromLinearTranslation(Mat3{}, offset) * o.object_to_world;
  return out;
}

// One panel of the soak plot: `values` over the frames in the rectangle [left, right] x [top, bottom], its
// y axis from 0 with tick labels, the title above it.
void drawCurve(ImageRGBA& im, int left, int top, int right, int bottom, const chart::Ticks& xt,
               const std::vector<double>& frames, const std::vector<double>& values, const std::string& title, Vec3 color) {
  const Vec3 black{0, 0, 0}, grid{0.88f, 0.88f, 0.88f};
  constexpr int kScale = 2, kGlyphH = 14;
  double hi = 0;
  for (double v : values) hi = std::max(hi, v);
  const chart::Ticks yt = chart::niceTicks(0, hi > 0 ? hi * 1.1 : 1, 4);
  auto px = [&](double x) { return left + static_cast<int>(std::lround((x - xt.lo) / std::max(xt.hi - xt.lo, 1e-9) * (right - left))); };
  auto py = [&](double y) { return bottom - static_cast<int>(std::lround((y - yt.lo) / std::max(yt.hi - yt.lo, 1e-9) * (bottom - top))); };
  for (double y = yt.lo; y <= yt.hi + 0.5 * yt.step; y += yt.step) {
    chart::drawLine(im, left, py(y), right, py(y), grid, 1);
    const std::string label = chart::tickLabel(y, yt.decimals);
    chart::drawText(im, left - 9 - chart::textWidth(label, kScale), py(y) - kGlyphH / 2, label, black, kScale);
  }
  for (double x = xt.lo; x <= xt.hi + 0.5 * xt.step; x += xt.step) {
    chart::drawLine(im, px(x), top, px(x), bottom, grid, 1);
    const std::string label = chart::tickLabel(x, xt.decimals);
    chart::drawText(im, px(x) - chart::textWidth(label, kScale) / 2, bottom + 9, label, black, kScale);
  }
  chart::drawLine(im, left, bottom, right, bottom, black, 2);
  chart::drawLine(im, left, top, left, bottom, black, 2);
  chart::drawText(im, left, top - kGlyphH - 8, title, color, kScale);
  for (size_t i = 0; i + 1 < values.size(); ++i)
    chart::drawLine(im, px(frames[i]), py(values[i]), px(frames[i + 1]), py(values[i + 1]), color, 2);
}

std::string perKframe(double v, const char* unit, double scale) {
  char text[64];
  std::snprintf(text, sizeof text, "%+.3f %s PER 1000 FRAMES", v / scale, unit);
  return text;
}

}  // namespace

ImageRGBA plotSoak(const SoakReport& r) {
  constexpr int kWidth = 900, kPanelH = 170, kTop = 60, kGap = 80, kLeft = 110, kRight = 860;
  ImageRGBA im(kWidth, kTop + 20 + 3 * kPanelH + 2 * kGap + 70);
  chart::fillRect(im, 0, 0, im.width - 1, im.height - 1, Vec3{1, 1, 1});
  std::vector<double> frames, ms, gpu, rss;
  for (const SoakSample& s : r.samples) {
    frames.push_back(s.frame);
    ms.push_back(s.frame_ms);
    gpu.push_back(static_cast<double>(s.gpu_bytes) / 1e6);
    rss.push_back(static_cast<double>(s.rss_bytes) / 1e6);
  }
  const chart::Ticks xt = chart::niceTicks(0, std::max(1, r.frames - 1), 8);
  const std::string title = "SOAK: " + std::to_string(r.frames) + " FRAMES, SLOPES OVER THE SECOND HALF";
  chart::drawText(im, (kWidth - chart::textWidth(title, 2)) / 2, 12, title, Vec3{0, 0, 0}, 2);
  const int t1 = kTop + 20, t2 = t1 + kPanelH + kGap, t3 = t2 + kPanelH + kGap;
  drawCurve(im, kLeft, t1, kRight, t1 + kPanelH, xt, frames, ms, "FRAME MS: " + perKframe(r.frame_ms_slope_per_kframe, "MS", 1),
            Vec3{0.12f, 0.38f, 0.80f});
  drawCurve(im, kLeft, t2, kRight, t2 + kPanelH, xt, frames, gpu, "GPU MEMORY MB: " + perKframe(r.gpu_slope_per_kframe, "MB", 1e6),
            Vec3{0.88f, 0.40f, 0.05f});
  drawCurve(im, kLeft, t3, kRight, t3 + kPanelH, xt, frames, rss, "RESIDENT MEMORY MB: " + perKframe(r.rss_slope_per_kframe, "MB", 1e6),
            Vec3{0.10f, 0.60f, 0.25f});
  const std::string x_title = "FRAME";
  chart::drawText(im, (kLeft + kRight - chart::textWidth(x_title, 2)) / 2, im.height - 22, x_title, Vec3{0, 0, 0}, 2);
  return im;
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
  if (o.width < 8 || o.height < 8) throw Error("soak: image size " + std::to_string(o.width) + "x" + std::to_string(o.height) + " is too small");
  if (o.sample_every < 1 || o.resize_every < 1) throw Error("soak: sample and resize intervals must be positive");

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
    const int w = small ? std::max(8, o.width * 3 / 4) : o.width, h = small ? std::max(8, o.height * 3 / 4) : o.height;
    // A full turn every 600 frames.
    const float a = 6.2831853f * static_cast<float>(f) / 600.0f;
    const Vec3 eye = target + along + across * std::cos(a) + side * std::sin(a);
    FrameRequest request{static_cast<double>(f) * o.frame_seconds, lookAtCamera(eye, target, up, fov_y, w, h), o.settings, {}};
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
