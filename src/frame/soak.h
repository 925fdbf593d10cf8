// A long run of the frame with the scene changing under it (docs/benchmarks.md "Soak"): objects added and
// removed on their own periods (captures, glTF models, characters, hulls playing their scripts, generators),
// the camera orbiting, the image resized every so often, scene time advancing. Every `sample_every` frames it
// records the frame time, the GPU memory the renderer's buffers and images hold, the process's resident
// memory and the objects drawn; the report fits the drift of each over the run's second half. `splatforge
// soak` runs it on the CLI (a PNG of the curves, JSON); the frame tests run a short one on lavapipe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/image.h"
#include "frame/frame.h"
#include "scene/scene.h"

namespace sf {

// One input of the soak: a scene (of one file: sceneFromFile) whose objects are in the frame while
// (frame / period) is odd (and during the warm-up), always when period is 0; placed at `offset` in the world.
struct SoakInput {
  std::string name;
  Scene scene;
  int period = 0;
  Vec3 offset{0, 0, 0};
};

struct SoakOptions {
  int frames = 1000;
  int width = 640, height = 360;  // every `resize_every` frames the size alternates with 3/4 of it
  int resize_every = 250;
  int sample_every = 10;  // a sample every this many frames (and at the last frame)
  // The first frames draw every input at once (the heaviest configuration, which the periods alone may first
  // reach late in a run), so the memory's high-water mark is reached at the start and growth after it shows.
  int warmup = 30;
  double frame_seconds = 1.0 / 30.0;  // scene time per frame
  RenderSettings settings;
};

struct SoakSample {
  int frame = 0;
  double frame_ms = 0;     // wall time of driver.render, the image read back included
  uint64_t gpu_bytes = 0;  // the Vulkan context's buffers and images (0 on the CPU backend)
  uint64_t rss_bytes = 0;  // the process's resident memory (/proc/self/statm)
  size_t objects = 0;      // scene objects in the frame
  size_t splats = 0;       // gaussians drawn
  int width = 0, height = 0;
};

struct SoakReport {
  std::vector<SoakSample> samples;
  int frames = 0;
  // Least-squares slopes over the samples of the run's second half (every configuration has been seen by
  // then), per 1,000 frames.
  double gpu_slope_per_kframe = 0, rss_slope_per_kframe = 0, frame_ms_slope_per_kframe = 0;
  // Median frame time of the samples in the second tenth of the run and in its last tenth.
  double early_ms = 0, late_ms = 0;
  uint64_t gpu_peak_bytes = 0;    // the context's high-water mark at the end
  uint64_t gpu_peak_at_half = 0;  // ... and at the run's half-way frame
  uint64_t rss_at_half = 0, rss_end = 0;
  uint32_t validation_errors = 0;  // raised by the device during the run (with validation on)
  double seconds = 0;
};

// The resident memory of this process in bytes (0 where /proc is not there).
uint64_t residentBytes();

// Runs the soak on `driver`. `progress`, when given, is called with every sample. Throws what a frame throws
// (a validation error with validation on).
SoakReport runSoak(FrameDriver& driver, std::vector<SoakInput> inputs, const SoakOptions& options,
                   const std::function<void(const SoakSample&)>& progress = {});

// The curves: frame time, GPU memory and resident memory over the frames, one panel each, with the second
// half's fitted slope in each panel's title.
ImageRGBA plotSoak(const SoakReport& report);

}  // namespace sf
