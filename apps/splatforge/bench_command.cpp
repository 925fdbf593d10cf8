#include "bench_command.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "anim/clip.h"
#include "anim/local_to_model.h"
#include "anim/skinning.h"
#include "character/bundle.h"
#include "character/bundle_character.h"
#include "character/character.h"
#include "character/expression.h"
#include "character/gpu_lift.h"
#include "character/world.h"
#include "core/chart.h"
#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "core/image.h"
#include "core/parallel.h"
#include "deform/gpu_skinning.h"
#include "frame/frame.h"
#include "gpu/gpu.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/gltf.h"
#include "io/image_io.h"
#include "lod/stream.h"
#include "model/gltf_import.h"
#include "render/vulkan_renderer.h"
#include "scene/scene.h"
#include "scene/synthetic.h"

namespace sf::cli {

namespace {

// A JSON number, or null for an infinite one (the PSNR of identical images).
std::string jsonNumber(double v) {
  return std::isfinite(v) ? fmt::format("{:.3f}", v) : "null";
}

// How much a frame's error against its reference changed since the previous frame: the mean over pixels and
// RGB of |(a - ref_a) - (b - ref_b)| (values clamped to [0, 1]). The camera's own motion moves both images
// alike and mostly cancels; level changes (pops, fades) do not.
double errorChange(const ImageRGBA& a, const ImageRGBA& ref_a, const ImageRGBA& b, const ImageRGBA& ref_b) {
  const size_t n = a.pixels.size();
  if (ref_a.pixels.size() != n || b.pixels.size() != n || ref_b.pixels.size() != n || n == 0) return 0;
  auto c = [](float v) { return std::clamp(v, 0.0f, 1.0f); };
  double sum = 0;
  for (size_t i = 0; i < n; i += 4)
    for (size_t k = 0; k < 3; ++k)
      sum += std::abs((c(a.pixels[i + k]) - c(ref_a.pixels[i + k])) -
                      (c(b.pixels[i + k]) - c(ref_b.pixels[i + k])));
  return sum / static_cast<double>(n / 4 * 3);
}

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

// Every validation message of a context, for the error that ends a command run with --validation.
std::string validationFailure(const gpu::Context& ctx) {
  return fmt::format("{} Vulkan validation error(s):\n{}", ctx.validationErrors(), ctx.validationReport());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// --loads: load throughput of the biker PLY, compressed PLY and SPZ of the assets directory, printed; returns
// the JSON's "loads" member.
std::string benchLoads(const std::string& dir, int frames) {
  const std::string files[] = {dir + "/splats/biker.ply", dir + "/splats/biker.compressed.ply",
                               dir + "/splats/biker.spz"};
  std::string json = "  \"loads\": [";
  for (const std::string& f : files) {
    std::vector<uint8_t> bytes = readFile(f);
    std::vector<double> times;
    for (int r = 0; r < std::max(3, frames); ++r) {
      auto t0 = Clock::now();
      LoadedSplats l = decodeSplats(bytes, f);
      times.push_back(secondsSince(t0));
    }
    double t = median(times), mb = static_cast<double>(bytes.size()) / 1e6;
    fmt::print("load {:<24} {:8.1f} MB/s  ({:.2f} MB in {:.1f} ms, median of {})\n",
               std::filesystem::path(f).filename().string(), mb / t, mb, t * 1e3, times.size());
    json += fmt::format("{}{{\"file\": \"{}\", \"mb\": {:.3f}, \"ms\": {:.3f}, \"mb_per_s\": {:.1f}}}",
                        &f == &files[0] ? "" : ", ", jsonEscape(std::filesystem::path(f).filename().string()),
                        mb, t * 1e3, mb / t);
  }
  json += "],\n";
  return json;
}

// The scene bench renders (INPUT: a splat file, scene JSON or neural generator; the biker capture of the
// assets directory; or a synthetic cloud; tiled by --copies) and its name. Refuses scenes holding glTF
// models, characters or a script: bench measures splat rendering. `warn`: print the input's warnings (false
// for a second opening of the same input: --lod-reference).
Scene benchScene(const BenchCommand::Options& o, const std::string& dir, std::string& what,
                 bool warn = true) {
  std::shared_ptr<GaussianCloud> cloud;
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
      if (warn) printWarnings("bench", scene.warnings);
    } else if (classifyInput(input) == InputKind::kOnnx || classifyInput(input) == InputKind::kLodHierarchy) {
      scene = sceneFromFile(input);  // a neural generator, or a level-of-detail hierarchy: one object
    } else {
      LoadedSplats loaded = loadSplats(input);
      if (warn) printWarnings("bench", loaded.warnings);
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
    if (obj.model())
      throw Error("bench measures splat rendering: " + obj.source +
                  " is a glTF model or character; use bench-characters or animate");
  if (!scene.script.empty())
    throw Error("bench measures splat rendering: the scene's script spawns characters; use bench-characters");
  return scene;
}

// --save-scene: one world-space cloud, each object's cloud placed by its transform, in object order.
void saveWorldScene(const Scene& scene, const std::string& path) {
  const std::vector<RenderObject> objects = scene.renderObjects();
  std::vector<GaussianCloud> placed;
  placed.reserve(objects.size());
  for (size_t k = 0; k < objects.size(); ++k) {
    const GaussianCloud& c = *objects[k].cloud;
    const std::string name = k < scene.objects.size() ? scene.objects[k].name : std::to_string(k);
    if (c.color_space != objects[0].cloud->color_space || c.antialiased != objects[0].cloud->antialiased)
      throw Error("--save-scene: object " + name +
                  " differs from the first in colour space or antialiasing; one file holds one of each");
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
  saveSplats(merged, path);
  fmt::print("wrote {} ({} gaussians in world space, SH degree {})\n", path, merged.size(), merged.sh_degree);
}

// Frame f at scene time f / 30 s: generators run every frame (on the Vulkan backend in the frame, their
// time in the "generators" figure; on the CPU backend through the CPU executor, in the total).
// Device memory: what the renderer's context holds after the frames (every buffer and image: the slots, the
// frame's records and tile lists, the image, the 64 MiB staging buffer, level-of-detail pools), the most it
// held at once, and the held bytes per gaussian of the frame; printed, and returned as the JSON member.
std::string gpuMemory(const gpu::Context& ctx, uint64_t gaussians) {
  const uint64_t held = ctx.allocatedBytes(), peak = ctx.peakAllocatedBytes();
  const double per_gaussian = gaussians ? static_cast<double>(held) / static_cast<double>(gaussians) : 0.0;
  fmt::print("gpu memory: {:.3f} GiB held ({:.1f} bytes a gaussian), peak {:.3f} GiB\n",
             static_cast<double>(held) / (1 << 30), per_gaussian, static_cast<double>(peak) / (1 << 30));
  return fmt::format(
      "  \"gpu_memory\": {{\"held_bytes\": {}, \"peak_bytes\": {}, \"gaussians\": {}, "
      "\"bytes_per_gaussian\": "
      "{:.2f}}},\n",
      held, peak, gaussians, per_gaussian);
}

// --raster-counts: what the last timed frame's raster did (VulkanFrameStats::raster_*), printed and as the
// JSON member "raster_counts" (null where the frame drew another raster than the counted one).
void printRasterCounts(const VulkanFrameStats& st, std::string& json) {
  if (!st.raster_counted) {
    fmt::print(
        "raster counts: not counted (the frame drew the {} raster; counts come from the plain fp32 one)\n",
        st.half_raster ? "half-precision" : "mesh, shape, depth-plane or training");
    json += "  \"raster_counts\": null,\n";
    return;
  }
  const double evaluated = static_cast<double>(st.raster_evaluated);
  // Tiles deeper than a raster slice are drawn by the slices, which do not count ("complete": false).
  const bool complete = st.raster_slices == 0;
  fmt::print(
      "raster counts: {} batch entries walked by subgroups, {} pixel-entries evaluated ({:.1f} a subgroup "
      "entry), {} blended ({:.1f}% of those evaluated); {} batches staged by workgroups, at most {} by "
      "one{}\n",
      st.raster_entries, st.raster_evaluated,
      st.raster_entries ? evaluated / static_cast<double>(st.raster_entries) : 0.0, st.raster_blended,
      evaluated > 0 ? 100.0 * static_cast<double>(st.raster_blended) / evaluated : 0.0, st.raster_batches,
      st.raster_longest_walk,
      complete ? "" : fmt::format("; the tiles drawn in the {} raster slices not counted", st.raster_slices));
  json += fmt::format(
      "  \"raster_counts\": {{\"subgroup_entries\": {}, \"evaluated\": {}, \"blended\": {}, "
      "\"batches\": {}, \"longest_walk\": {}, \"complete\": {}}},\n",
      st.raster_entries, st.raster_evaluated, st.raster_blended, st.raster_batches, st.raster_longest_walk,
      complete);
}

// --shader-stats: what the driver reported of each compute pipeline the context made (in the order they were
// made), printed one pipeline a line, and as the JSON member "shader_stats" (null where the device does not
// report them).
void printShaderStatistics(const gpu::Context& ctx, std::string& json) {
  if (!ctx.capturesShaderStatistics()) {
    fmt::print(
        "shader statistics: not reported by {} (it lacks VK_KHR_pipeline_executable_properties or its "
        "pipelineExecutableInfo feature)\n",
        ctx.info().name);
    json += "  \"shader_stats\": null,\n";
    return;
  }
  const std::vector<gpu::ShaderStatistics> all = ctx.shaderStatistics();
  fmt::print("shader statistics ({} pipelines, as the driver names them):\n", all.size());
  json += "  \"shader_stats\": [";
  for (size_t p = 0; p < all.size(); ++p) {
    std::string line;
    json +=
        fmt::format("{}{{\"pipeline\": \"{}\", \"values\": {{", p ? ", " : "", jsonEscape(all[p].pipeline));
    for (size_t k = 0; k < all[p].values.size(); ++k) {
      const gpu::ShaderStatistics::Value& v = all[p].values[k];
      // Whole numbers (counts, sizes) as integers, others as the driver gave them.
      const std::string value = !std::isfinite(v.value) ? std::string("null")
                                : v.value == std::floor(v.value) && std::fabs(v.value) < 9.0e15
                                    ? fmt::format("{}", static_cast<int64_t>(v.value))
                                    : fmt::format("{:.9g}", v.value);
      line += fmt::format("{}{} {}", k ? ", " : "", v.name,
                          std::isfinite(v.value) ? value : fmt::format("{}", v.value));
      json += fmt::format("{}\"{}\": {}", k ? ", " : "", jsonEscape(v.name), value);
    }
    json += "}}";
    fmt::print("  {}: {}\n", all[p].pipeline, line.empty() ? "(none)" : line);
  }
  json += "],\n";
}

FrameRequest benchFrame(int f, const Camera& cam, const BenchCommand::Options& o) {
  FrameRequest request{f / 30.0, cam, {}, {}};
  if (o.raster_slice) request.settings.raster_slice = *o.raster_slice;
  request.settings.half_sh = o.sh_precision != "full";
  request.settings.half_raster = o.raster_precision == "half";
  request.settings.count_raster = o.raster_counts;
  return request;
}

// The Vulkan frame timed over --frames (and --back-to-back): per-pass GPU medians printed, their JSON members
// appended to `json` (closing the document).
void benchVulkan(const BenchCommand::Options& o, FrameDriver& driver, const Scene& scene, const Camera& cam,
                 const FrameResult& warm, bool generators, std::string& json) {
  VulkanRenderer& renderer = *driver.vulkan();
  const gpu::DeviceInfo& dev = renderer.device();
  fmt::print("device: {} ({}, subgroup {}, {:.1f} GiB device-local); tile binning: {}\n", dev.name,
             dev.typeName(), dev.subgroup_size, static_cast<double>(dev.device_local_bytes) / (1 << 30),
             renderer.tileBinningName());
  if (o.show_graph) fmt::print("frame graph:\n{}", renderer.lastFrameGraph());
  // What runs before preprocess, named where a scene has it: the generators, or the level-of-detail pools'
  // gather of the drawn rows.
  const bool lod = std::any_of(scene.objects.begin(), scene.objects.end(),
                               [](const SceneObject& ob) { return ob.kindOf().lodStream() != nullptr; });
  const char* early = generators ? "generators" : lod ? "before preprocess (the gather)" : nullptr;
  std::vector<double> gen, pre, bin, scan, emit, sort, raster, readback, all, wall;
  VulkanFrameStats st = warm.gpu;
  for (int f = 0; f < o.frames; ++f) {
    const auto t0 = Clock::now();
    st = driver.render(scene, benchFrame(f + 1, cam, o)).gpu;
    wall.push_back(secondsSince(t0) * 1e3);
    const VulkanPassTimes& t = st.times;
    gen.push_back(t.mesh);
    pre.push_back(t.preprocess), bin.push_back(t.bin), scan.push_back(t.scan), emit.push_back(t.emit),
        sort.push_back(t.sort);
    raster.push_back(t.raster), readback.push_back(t.readback), all.push_back(t.total);
  }
  double frame_no_readback = median(all) - median(readback);
  fmt::print(
      "visible {} gaussians, {} tile pairs, {} merge passes, deepest tile {} pairs{}; raster blended in {}\n",
      st.visible, st.tile_keys, st.sort_passes, st.longest_tile,
      st.raster_slices ? fmt::format(" (its raster in {} slices, {} submissions a frame)", st.raster_slices,
                                     st.submissions)
                       : "",
      st.half_raster ? "half precision" : "fp32");
  fmt::print(
      "gpu median ms: {}preprocess {:.3f} | bin {:.3f} | tile ranges {:.3f} | emit {:.3f} | tile sort {:.3f} "
      "| "
      "raster {:.3f} | readback {:.3f}\n",
      early ? fmt::format("{} {:.3f} | ", early, median(gen)) : "", median(pre), median(bin), median(scan),
      median(emit), median(sort), median(raster), median(readback));
  fmt::print(
      "gpu frame: {:.3f} ms total, {:.3f} ms without the image readback; binning and sorting {:.3f} ms for "
      "{} slots and {} pairs\n",
      median(all), frame_no_readback, median(bin) + median(scan) + median(emit) + median(sort), st.splats,
      st.tile_keys);
  fmt::print("wall clock: {:.3f} ms per render call (recording, submission, wait, image copy to the host)\n",
             median(wall));
  if (o.raster_counts) printRasterCounts(st, json);
  if (o.shader_stats) printShaderStatistics(renderer.context(), json);
  json += fmt::format(
      "  \"backend\": \"vulkan\",\n  \"device\": \"{}\",\n  \"visible\": {},\n  \"tile_pairs\": {},\n",
      jsonEscape(dev.name), st.visible, st.tile_keys);
  json += gpuMemory(renderer.context(), st.splats);
  // The raster's slices (--raster-slice): the deepest tile, the slices after the frame's own raster and the
  // submissions of a frame (1 when no tile is deeper than a slice).
  json += fmt::format(
      "  \"longest_tile\": {},\n  \"raster_slice\": {},\n  \"raster_slices\": {},\n  \"submissions\": {},\n"
      "  \"sh_precision\": \"{}\",\n  \"raster_precision\": \"{}\",\n  \"tile_binning\": \"{}\",\n",
      st.longest_tile, o.raster_slice.value_or(kDefaultRasterSlice), st.raster_slices, st.submissions,
      o.sh_precision == "full" ? "full" : "half", st.half_raster ? "half" : "full",
      renderer.tileBinningName());
  if (o.back_to_back > 0) {
    const VulkanPassTimes b =
        medianPassTimes(driver.renderBackToBack(scene, benchFrame(o.frames, cam, o), o.back_to_back, &st));
    fmt::print(
        "back to back ({} frames in one submission), gpu median ms: {}preprocess {:.3f} | bin {:.3f} | tile "
        "ranges {:.3f} | emit {:.3f} | "
        "tile sort {:.3f} | raster {:.3f} | frame without readback {:.3f}\n",
        o.back_to_back, early ? fmt::format("{} {:.3f} | ", early, b.mesh) : "", b.preprocess, b.bin, b.scan,
        b.emit, b.sort, b.raster, b.total - b.readback);
    json += fmt::format(
        "  \"back_to_back\": {{\"frames\": {}, \"generators\": {:.4f}, \"preprocess\": {:.4f}, \"bin\": "
        "{:.4f}, \"tile_ranges\": {:.4f}, "
        "\"emit\": {:.4f}, \"tile_sort\": {:.4f}, \"raster\": {:.4f}, \"total_without_readback\": "
        "{:.4f}}},\n",
        o.back_to_back, b.mesh, b.preprocess, b.bin, b.scan, b.emit, b.sort, b.raster, b.total - b.readback);
    if (renderer.context().validationErrors() > 0) throw Error(validationFailure(renderer.context()));
  }
  if (generators) json += fmt::format("  \"generators_ms\": {:.4f},\n", median(gen));
  json += fmt::format(
      "  \"median_ms\": {{\"preprocess\": {:.4f}, \"bin\": {:.4f}, \"tile_ranges\": {:.4f}, \"emit\": "
      "{:.4f}, "
      "\"tile_sort\": {:.4f}, \"raster\": {:.4f}, \"readback\": {:.4f}, \"total\": {:.4f}, "
      "\"total_without_readback\": {:.4f}}},\n  \"wall_ms_per_call\": {:.4f}\n}}\n",
      median(pre), median(bin), median(scan), median(emit), median(sort), median(raster), median(readback),
      median(all), frame_no_readback, median(wall));
}

// The CPU renderer timed over --frames: stage medians printed, their JSON members appended to `json` (closing
// the document).
// `bench --lod`: a fly-through of the scene's level-of-detail objects as the viewer draws them (frames never
// wait for the disk): the camera closes from its start to 15% of the distance to the scene's centre while it
// turns 90 degrees about the world's up axis. Per frame: the frame's time, the gaussians drawn, the nodes in
// the pools, the chunks and bytes read so far, the chunks on their way, and the bytes the frame uploaded to
// the GPU (the renderer's slots, and each LOD object's GPU pool: its selection, the rows of level changes
// still fading and the chunks placed in the pool) with the pool's slots in use.
//
// With a reference (--lod-reference: the same input, every visible leaf drawn, frames waiting for the disk,
// on a driver of its own), each frame's camera is drawn by both: the frame's PSNR against the reference, the
// mean absolute change of each since its previous frame, and the change of the frame's error against the
// reference (errorChange: the popping, in which the camera's own motion mostly cancels).
void benchLod(const BenchCommand::Options& o, FrameDriver& driver, Scene& scene, const Camera& start,
              Scene* reference, FrameDriver* reference_driver, std::string& json) {
  std::vector<lod::LodStream*> streams;
  for (SceneObject& ob : scene.objects)
    if (lod::LodStream* stream = ob.kindOf().lodStream()) streams.push_back(stream);
  if (streams.empty())
    throw Error(o.input +
                ": --lod flies through level-of-detail objects, and this input has none (splatforge lod "
                "build makes one)");
  scene.lod_settle = o.lod_settle;
  if (o.lod_settle) scene.lod_fade = true;  // (the viewer's fades, in frames that wait for the disk)
  if (reference) {
    // Every node in memory and a budget of them all: the cut is every visible leaf (lod/cut.h), read before
    // it draws.
    reference->lod_settle = true;
    reference->lod_budget = 0;
    for (SceneObject& ob : reference->objects)
      if (lod::LodStream* stream = ob.kindOf().lodStream()) {
        const uint64_t nodes = stream->hierarchy().index.node_count;
        if (nodes >= (uint64_t{1} << 31))
          throw Error(stream->hierarchy().dir + ": --lod-reference holds every node in memory, and this " +
                      "hierarchy has " + std::to_string(nodes) + " (at most 2147483647)");
        stream->setPoolNodes(nodes);
        reference->lod_budget += nodes;
      }
  }
  const CloudBounds bounds = sceneBounds(scene);
  // As the viewer: on the Vulkan backend the cut is made on a thread of its own unless --lod-cut frame.
  const bool background = o.lod_cut == "background" && driver.usesVulkan();
  if (background && o.lod_settle)
    throw UsageError("--lod-settle waits for the disk in each frame's own cut: give --lod-cut frame");
  if (background) scene.lod_worker = std::make_shared<lod::CutWorker>();
  const Vec3 centre = 0.5f * (bounds.p01 + bounds.p99), eye0 = start.position();
  const Mat4& v = start.world_to_camera;
  const Vec3 up =
      normalize(Vec3{-v.m[1][0], -v.m[1][1], -v.m[1][2]});  // the camera's up (OpenCV: -y) in the world
  const float fov_y =
      2.0f * std::atan(0.5f * static_cast<float>(start.height) / start.fy) * 180.0f / 3.14159265f;
  struct Sample {
    double ms = 0, pose_ms = 0, cut_ms = 0, draw_ms = 0, pool_ms = 0;
    double gpu_ms = 0;                // the GPU's time in the frame less the image's readback (Vulkan)
    VulkanPassTimes passes;           // the GPU's passes (Vulkan): where gpu_ms goes
    uint64_t pairs = 0, deepest = 0;  // the frame's tile pairs and its deepest tile's list (Vulkan)
    uint64_t drawn = 0, resident = 0, pool = 0, chunks = 0, bytes = 0, pending = 0, evictions = 0;
    uint64_t uploaded = 0, selection = 0, host_rows = 0, host_sh_rows = 0, chunk_bytes = 0, slots_used = 0;
    uint64_t cuts = 0;  // cuts finished so far (every frame's own without the background worker)
    // Against the reference: PSNR (infinite where identical); the mean absolute change of the frame and of
    // the reference since their previous frames, and of the frame's error against the reference (errorChange:
    // the popping); 0 for the first frame.
    double psnr = 0, change = 0, change_reference = 0, popping = 0;
  };
  std::vector<Sample> samples;
  ImageRGBA last_image, last_reference;
  for (int f = 0; f < o.frames; ++f) {
    const float s = o.frames > 1 ? static_cast<float>(f) / static_cast<float>(o.frames - 1) : 0.0f;
    const float turn = 0.5f * 3.14159265f * s, k = 1.0f - 0.85f * s;
    const Vec3 d = eye0 - centre;  // turned about `up` (Rodrigues), then brought closer
    const Vec3 turned =
        d * std::cos(turn) + cross(up, d) * std::sin(turn) + up * (dot(up, d) * (1.0f - std::cos(turn)));
    const Camera cam = lookAtCamera(centre + turned * k, centre, up, fov_y, start.width, start.height);
    const auto t0 = Clock::now();
    const FrameResult r = driver.render(scene, benchFrame(0, cam, o));  // --raster-slice, --sh-precision
    Sample x;
    x.ms = secondsSince(t0) * 1e3;
    x.pose_ms = r.pose_ms;
    for (lod::LodStream* st : streams) {
      const lod::StreamStats ss = st->stats();
      x.drawn += ss.drawn, x.resident += ss.resident_nodes, x.pool += ss.pool_nodes,
          x.chunks += ss.chunks_read;
      x.bytes += ss.bytes_read, x.pending += ss.pending, x.evictions += ss.evictions;
      x.uploaded += ss.uploadBytes(), x.selection += ss.upload_selection_bytes,
          x.host_rows += ss.upload_host_rows;
      x.host_sh_rows += ss.upload_host_sh_rows;
      x.chunk_bytes += ss.upload_chunk_bytes, x.slots_used += ss.gpu_slots_used;
      x.cut_ms = ss.cut_ms;  // (one figure for every object: their cuts are made together)
      x.draw_ms += ss.draw_ms, x.pool_ms += ss.pool_ms;
    }
    x.uploaded += r.gpu.uploaded_bytes;  // the renderer's own uploads (0 on the CPU backend)
    x.gpu_ms = r.vulkan ? r.gpu.times.total - r.gpu.times.readback : 0.0;
    if (r.vulkan) x.passes = r.gpu.times, x.pairs = r.gpu.tile_keys, x.deepest = r.gpu.longest_tile;
    x.cuts = background ? scene.lod_worker->cutsFinished() : static_cast<uint64_t>(f) + 1;
    if (reference) {
      FrameResult full = reference_driver->render(*reference, benchFrame(0, cam, o));
      x.psnr = compareImages(r.image, full.image).psnr;
      if (f > 0) {
        x.change = compareImages(r.image, last_image).mean_abs;
        x.change_reference = compareImages(full.image, last_reference).mean_abs;
        x.popping = errorChange(r.image, full.image, last_image, last_reference);
      }
      last_image = r.image, last_reference = std::move(full.image);
      fmt::print(
          "lod frame {:4d}: against every visible leaf {:.2f} dB; change since the last frame {:.5f} "
          "(full resolution {:.5f}; of the error against it {:.5f})\n",
          f, x.psnr, x.change, x.change_reference, x.popping);
    }
    samples.push_back(x);
    fmt::print(
        "lod frame {:4d}: {:8.2f} ms (cut and pose {:6.2f} ms, {:4d} cuts), {:9d} gaussians drawn, {:9d} "
        "nodes "
        "resident ({:5.1f}% of the pools), "
        "{:5d} chunks read ({:.1f} MB), {:3d} on their way, {:.2f} MB uploaded ({:.2f} MB of chunks, {} "
        "fading rows)\n",
        f, x.ms, x.pose_ms, x.cuts, x.drawn, x.resident,
        100.0 * static_cast<double>(x.resident) / static_cast<double>(std::max<uint64_t>(x.pool, 1)),
        x.chunks, static_cast<double>(x.bytes) / 1e6, x.pending, static_cast<double>(x.uploaded) / 1e6,
        static_cast<double>(x.chunk_bytes) / 1e6, x.host_rows);
  }
  double worst = 0, sum = 0, worst_pose = 0, uploaded = 0;
  uint64_t most = 0;
  std::vector<double> poses, cuts, draws, pools;
  for (const Sample& x : samples) {
    worst = std::max(worst, x.ms), sum += x.ms, worst_pose = std::max(worst_pose, x.pose_ms),
    most = std::max(most, x.drawn), uploaded += static_cast<double>(x.uploaded), poses.push_back(x.pose_ms);
    cuts.push_back(x.cut_ms), draws.push_back(x.draw_ms), pools.push_back(x.pool_ms);
  }
  auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values.empty() ? 0.0 : values[values.size() / 2];
  };
  fmt::print(
      "lod: {} frames, mean {:.2f} ms, worst {:.2f} ms (cut and pose median {:.2f} ms, at most {:.2f} ms; "
      "medians of its steps: cut {:.2f}, draw {:.2f}, GPU pool {:.2f} ms; no "
      "frame waits for the disk), at most {} of the "
      "budget's {} gaussians drawn, {:.2f} MB uploaded a frame on average\n",
      samples.size(), sum / static_cast<double>(std::max<size_t>(samples.size(), 1)), worst, median(poses),
      worst_pose, median(cuts), median(draws), median(pools), most, scene.lod_budget,
      uploaded / 1e6 / static_cast<double>(std::max<size_t>(samples.size(), 1)));
  const uint64_t cuts_made = samples.empty() ? 0 : samples.back().cuts;
  if (driver.usesVulkan()) {
    std::vector<double> gpu;
    for (const Sample& x : samples) gpu.push_back(x.gpu_ms);
    fmt::print("lod: the GPU's frame without the image's readback: median {:.3f} ms\n", median(gpu));
    // Per pass (medians over the frames, each pass on its own): where the frame goes. Before preprocess
    // lies the pools' gather of the drawn rows.
    auto pass = [&](double VulkanPassTimes::*field) {
      std::vector<double> each;
      for (const Sample& x : samples) each.push_back(x.passes.*field);
      return median(each);
    };
    fmt::print(
        "lod: the GPU's passes, medians: before preprocess (the gather) {:.3f} | preprocess {:.3f} | bin "
        "{:.3f} | tile ranges {:.3f} | emit {:.3f} | tile sort {:.3f} | raster {:.3f} ms\n",
        pass(&VulkanPassTimes::mesh), pass(&VulkanPassTimes::preprocess), pass(&VulkanPassTimes::bin),
        pass(&VulkanPassTimes::scan), pass(&VulkanPassTimes::emit), pass(&VulkanPassTimes::sort),
        pass(&VulkanPassTimes::raster));
  }
  if (background)
    fmt::print("lod: cut in the background: {} cuts finished in {} frames (one every {:.1f} frames)\n",
               cuts_made, samples.size(),
               static_cast<double>(samples.size()) / static_cast<double>(std::max<uint64_t>(cuts_made, 1)));
  std::string reference_json;
  if (reference && !samples.empty()) {
    std::vector<double> psnrs;
    double lowest = std::numeric_limits<double>::infinity(), change = 0, change_reference = 0, popping = 0;
    size_t lowest_at = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      psnrs.push_back(samples[i].psnr);
      if (samples[i].psnr < lowest) lowest = samples[i].psnr, lowest_at = i;
      change += samples[i].change, change_reference += samples[i].change_reference,
          popping += samples[i].popping;
    }
    const double steps = static_cast<double>(std::max<size_t>(samples.size() - 1, 1));
    change /= steps, change_reference /= steps, popping /= steps;
    const double psnr_median = sf::cli::median(psnrs);
    fmt::print(
        "lod: against every visible leaf drawn: PSNR median {:.2f} dB, lowest {:.2f} dB (frame {}); "
        "consecutive frames differ by {:.5f} on average with level of detail and {:.5f} at full resolution; "
        "the error against it changes by {:.5f} a frame (popping)\n",
        psnr_median, lowest, lowest_at, change, change_reference, popping);
    reference_json = fmt::format(
        ", \"reference\": {{\"psnr_median\": {}, \"psnr_lowest\": {}, \"change_mean\": {:.6f}, "
        "\"change_reference_mean\": {:.6f}, \"popping_mean\": {:.6f}}}",
        jsonNumber(psnr_median), jsonNumber(lowest), change, change_reference, popping);
  }
  if (VulkanRenderer* vk = driver.vulkan()) {
    json += gpuMemory(vk->context(), most);  // the pools included
    if (o.shader_stats) printShaderStatistics(vk->context(), json);
  }
  json += fmt::format(
      "  \"backend\": \"{}\",\n  \"lod\": {{\"budget\": {}, \"objects\": {}, \"cut\": \"{}\", \"cuts\": "
      "{}{}, "
      "\"frames\": [",
      driver.usesVulkan() ? "vulkan" : "cpu", scene.lod_budget, streams.size(),
      background ? "background" : "frame", cuts_made, reference_json);
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& x = samples[i];
    json += fmt::format(
        "{}\n    {{\"ms\": {:.3f}, \"pose_ms\": {:.3f}, \"cut_ms\": {:.3f}, \"draw_ms\": {:.3f}, "
        "\"pool_ms\": {:.3f}, \"drawn\": {}, \"resident\": {}, \"pool\": {}, "
        "\"chunks_read\": {}, "
        "\"bytes_read\": {}, \"pending\": {}, \"evictions\": {}, \"uploaded_bytes\": {}, "
        "\"selection_bytes\": {}, \"fading_rows\": {}, \"fading_rows_with_sh\": {}, "
        "\"chunk_upload_bytes\": {}, \"gpu_slots_used\": {}, \"cuts\": {}, \"gpu_ms\": {:.3f}}}",
        i ? "," : "", x.ms, x.pose_ms, x.cut_ms, x.draw_ms, x.pool_ms, x.drawn, x.resident, x.pool, x.chunks,
        x.bytes, x.pending, x.evictions, x.uploaded, x.selection, x.host_rows, x.host_sh_rows, x.chunk_bytes,
        x.slots_used, x.cuts, x.gpu_ms);
    if (driver.usesVulkan()) {
      const VulkanPassTimes& t = x.passes;
      json.pop_back();  // the frame's closing brace
      json += fmt::format(
          ", \"pairs\": {}, \"deepest_tile\": {}, \"gpu_passes\": {{\"before_preprocess\": {:.4f}, "
          "\"preprocess\": {:.4f}, \"bin\": {:.4f}, \"tile_ranges\": {:.4f}, \"emit\": {:.4f}, "
          "\"tile_sort\": {:.4f}, \"raster\": {:.4f}}}}}",
          x.pairs, x.deepest, t.mesh, t.preprocess, t.bin, t.scan, t.emit, t.sort, t.raster);
    }
    if (reference) {
      json.pop_back();  // the frame's closing brace
      json += fmt::format(
          ", \"psnr\": {}, \"change\": {:.6f}, \"change_reference\": {:.6f}, \"popping\": {:.6f}}}",
          jsonNumber(x.psnr), x.change, x.change_reference, x.popping);
    }
  }
  json += "\n  ]}\n}\n";
  if (!o.plot.empty()) {
    std::vector<double> frames;
    chart::Panel ms{"FRAME MS", Vec3{0.12f, 0.38f, 0.80f}, {}},
        drawn{"GAUSSIANS DRAWN (THOUSANDS)", Vec3{0.88f, 0.40f, 0.05f}, {}};
    chart::Panel resident{"NODES RESIDENT (THOUSANDS)", Vec3{0.10f, 0.60f, 0.25f}, {}},
        read{"CHUNKS READ", Vec3{0.55f, 0.20f, 0.65f}, {}};
    for (size_t i = 0; i < samples.size(); ++i) {
      frames.push_back(static_cast<double>(i));
      ms.values.push_back(samples[i].ms);
      drawn.values.push_back(static_cast<double>(samples[i].drawn) / 1e3);
      resident.values.push_back(static_cast<double>(samples[i].resident) / 1e3);
      read.values.push_back(static_cast<double>(samples[i].chunks));
    }
    std::vector<chart::Panel> panels = {ms, drawn, resident, read};
    if (reference) {  // (identical frames drawn at 100 dB)
      chart::Panel psnr{"PSNR AGAINST EVERY LEAF (DB)", Vec3{0.80f, 0.15f, 0.20f}, {}};
      for (const Sample& x : samples) psnr.values.push_back(std::min(x.psnr, 100.0));
      panels.push_back(psnr);
    }
    writePng(o.plot,
             chart::plotPanels("LEVEL OF DETAIL FLY-THROUGH: BUDGET " + std::to_string(scene.lod_budget),
                               "FRAME", frames, panels));
    fmt::print("lod: wrote {}\n", o.plot);
  }
}

void benchCpu(const BenchCommand::Options& o, FrameDriver& driver, const Scene& scene, const Camera& cam,
              const FrameResult& warm, std::string& json) {
  RenderStats st = warm.cpu;
  std::vector<double> pre, sort, raster, all;
  for (int f = 0; f < o.frames; ++f) {
    auto t0 = Clock::now();
    st = driver.render(scene, benchFrame(f + 1, cam, o)).cpu;  // the CPU executor's time counts in the total
    all.push_back(secondsSince(t0) * 1e3);
    pre.push_back(st.preprocess_ms), sort.push_back(st.sort_ms), raster.push_back(st.raster_ms);
  }
  fmt::print("cpu ({} threads): visible {}, {} tile pairs\n", workerCount(), st.visible, st.tile_keys);
  fmt::print("cpu median ms: preprocess {:.1f} | sort {:.1f} | raster {:.1f} | total {:.1f}\n", median(pre),
             median(sort), median(raster), median(all));
  json +=
      fmt::format("  \"backend\": \"cpu\",\n  \"threads\": {},\n  \"visible\": {},\n  \"tile_pairs\": {},\n",
                  workerCount(), st.visible, st.tile_keys);
  json += fmt::format(
      "  \"median_ms\": {{\"preprocess\": {:.3f}, \"sort\": {:.3f}, \"raster\": {:.3f}, \"total\": "
      "{:.3f}}}\n}}\n",
      median(pre), median(sort), median(raster), median(all));
}

// bench-characters on a bundle: a crowd of decoder characters on the GPU path, over a scripted camera path
// (0.7 mm a frame: the 2 mm threshold runs appearance every third frame) with a new expression every 10th
// frame; per branch the GPU ms of its geometry and appearance parts, and the passes the threshold skipped.
int benchBundle(const BenchCharactersCommand::Options& o, JsonStdout& human) {
  FrameDriverOptions fo = driverOptions("vulkan", o.device, o.validation);
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
    obj.cloud = std::shared_ptr<const GaussianCloud>(crowd.back(), &crowd.back()->cloud());
    obj.kind = std::make_shared<BundleObject>(crowd.back());
    obj.object_to_world = Mat4::fromLinearTranslation(Mat3{}, Vec3{gx * kSpacing, gy * kSpacing, 0});
    scene.objects.push_back(obj);
  }
  const character::CharacterBundle& b = crowd[0]->bundle();
  const size_t branches = b.branches.size();
  const Vec3 head = b.branches.front().frame.center;
  const float dist = 0.5f + 1.2f * kSpacing * static_cast<float>(side);
  fmt::print(
      "decoder characters: {} x {} ({} branches, {} slots each) at {}x{} on {} ({}), {} timed frames\n",
      o.count, o.package, branches, crowd[0]->size(), o.width, o.height, renderer.device().name,
      renderer.device().typeName(), o.frames);
  std::vector<std::vector<double>> geo(branches), app(branches);
  std::vector<double> gpu_ms, cpu_ms;
  for (int f = 0; f <= o.frames; ++f) {
    const float x = 0.0007f * static_cast<float>(f);
    const Camera cam =
        lookAtCamera(head + Vec3{x, 0.02f, dist}, head + Vec3{x, 0, 0}, {0, 1, 0}, 40, o.width, o.height);
    if (f % 10 == 0)
      for (size_t i = 0; i < crowd.size(); ++i) {
        character::Expression e{b.expression_space.kind,
                                std::vector<float>(static_cast<size_t>(b.expression_space.dim), 0.0f)};
        e.weights[0] = 0.5f + 0.5f * std::sin(0.7f * static_cast<float>(f) + static_cast<float>(i));
        if (b.expression_space.kind == "arkit52")
          e.weights[static_cast<size_t>(character::arkitIndex("jawOpen"))] = e.weights[0];
        crowd[i]->setExpression(e);
      }
    const FrameResult fr = driver.render(scene, {static_cast<double>(f) / 60.0, cam, {}, {}});
    if (f == 0) {  // the first frame attached the decoders and built their plans
      for (const auto& c : crowd) {
        if (!c->gpuPath())
          throw Error(o.package + ": its decoders do not run on the Vulkan executor: " + c->gpuRefusal());
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
    fmt::print(
        "  branch {:<8} {}x{}: geometry (decoders + lift pass 1) {:.3f} ms, appearance (rays + decoder + "
        "lift pass 2) {:.3f} ms (GPU, median)\n",
        b.branches[k].name, b.branches[k].uv_resolution, b.branches[k].uv_resolution, med(geo[k]),
        med(app[k]));
  fmt::print(
      "passes per character over {} updates: {} geometry, {} appearance, {} skipped by the 2 mm threshold\n",
      pc.updates, pc.geometry_passes, pc.appearance_passes, pc.skipped);
  fmt::print(
      "median ms per frame: gpu {:.3f} (passes + sort + raster, without the image readback) | cpu {:.2f} "
      "(rig, requests)\n",
      med(gpu_ms), med(cpu_ms));
  if (o.json || !o.json_out.empty()) {
    std::string json = fmt::format(
        "{{\n  \"bundle\": \"{}\",\n  \"count\": {},\n  \"device\": \"{}\",\n  \"frames\": {},\n  "
        "\"branches\": [",
        jsonEscape(o.package), o.count, jsonEscape(renderer.device().name), o.frames);
    for (size_t k = 0; k < branches; ++k)
      json += fmt::format("{}{{\"name\": \"{}\", \"geometry_ms\": {:.4f}, \"appearance_ms\": {:.4f}}}",
                          k ? ", " : "", b.branches[k].name, med(geo[k]), med(app[k]));
    json += fmt::format(
        "],\n  \"passes\": {{\"updates\": {}, \"geometry\": {}, \"appearance\": {}, \"skipped\": {}}},\n  "
        "\"median_ms\": {{\"gpu\": {:.4f}, \"cpu\": {:.3f}}}\n}}\n",
        pc.updates, pc.geometry_passes, pc.appearance_passes, pc.skipped, med(gpu_ms), med(cpu_ms));
    human.release();
    emitJson(json, o.json, o.json_out);
  }
  return 0;
}

}  // namespace

BenchCommand::~BenchCommand() = default;

int BenchCommand::run() const {
  const Options& o = *options_;
  try {
    JsonStdout human(o.json);
    std::string dir = o.assets.empty() ? defaultAssetsDir() : o.assets;
    // The sample assets are needed for --loads and for the default scene: say where they were looked for.
    if ((o.loads || (o.synthetic == 0 && o.input.empty())) && !std::filesystem::is_directory(dir + "/splats"))
      throw Error("sample assets not found at " + dir + " (looked for " + dir +
                  "/splats): give --assets DIR or set SPLATFORGE_ASSETS" +
                  (o.assets.empty() && !std::getenv("SPLATFORGE_ASSETS")
                       ? " (the default, ../shared/assets, is relative to the current folder)"
                       : ""));
    std::string json = "{\n";
    if (o.loads) json += benchLoads(dir, o.frames);
    std::string what;
    if (!o.plot.empty() && !o.lod)
      throw UsageError("--plot draws the curves of the --lod fly-through: give --lod");
    if (o.lod_reference && !o.lod)
      throw UsageError("--lod-reference compares the --lod fly-through's frames: give --lod");
    if (o.lod_settle && !o.lod)
      throw UsageError("--lod-settle waits in the --lod fly-through's frames: give --lod");
    if (!o.plot.empty() && fileExtension(o.plot) != ".png")
      throw UsageError("--plot " + o.plot + ": expected a .png path");
    Scene scene = benchScene(o, dir, what);
    if (o.lod_budget) scene.lod_budget = *o.lod_budget;
    if (o.lod_pool) setLodPool(scene, *o.lod_pool);
    // Neural generators run every frame (scene time advancing 1/30 s per frame): on the Vulkan backend in the
    // frame (their time is in the "generators" figure), on the CPU backend through the CPU executor.
    const bool generators =
        std::any_of(scene.objects.begin(), scene.objects.end(),
                    [](const SceneObject& ob) { return ob.as<GeneratorObject>() != nullptr; });
    if (generators && !o.save_scene.empty())
      throw Error(
          "--save-scene: the scene's gaussians come from a neural generator each frame; save them with onnx "
          "run --save-splats");
    Camera cam = !o.camera.empty()
                     ? loadCameraJson(o.camera, o.width_given ? std::optional<int>(o.width) : std::nullopt,
                                      o.height_given ? std::optional<int>(o.height) : std::nullopt)
                 : scene.camera ? *scene.camera
                                : autoCamera(scene, o.width, o.height);
    if (!o.save_scene.empty()) saveWorldScene(scene, o.save_scene);
    FrameDriverOptions fo = driverOptions(o.backend, o.device, o.validation);
    // bench times the Vulkan frame wherever a Vulkan device exists, a CPU one (lavapipe) included, where the
    // other commands' `auto` prefers the CPU renderer.
    if (fo.backend == Backend::kAuto && gpu::vulkanAvailable()) fo.backend = Backend::kVulkan;
    fo.message = [](const std::string& line) { fmt::print(stderr, "bench: {}\n", line); };
    if (o.shader_stats) {
      if (fo.backend == Backend::kCpu)
        throw UsageError(
            "--shader-stats reports the Vulkan frame's pipelines; this bench runs on the CPU renderer");
      fo.configure = [](gpu::ContextOptions& co) { co.shader_statistics = true; };
    }
    if (o.back_to_back > 0 && fo.backend == Backend::kCpu)
      throw UsageError("--back-to-back times the Vulkan frame; this bench runs on the CPU renderer");
    FrameDriver driver(fo);
    if (o.shader_stats && !driver.usesVulkan())
      throw Error("--shader-stats reports the Vulkan frame's pipelines; this bench runs on the CPU renderer");
    if (o.back_to_back > 0 && !driver.usesVulkan())
      throw Error("--back-to-back times the Vulkan frame; this bench runs on the CPU renderer");
    if (!o.tile_binning.empty()) {
      if (!driver.usesVulkan())
        throw UsageError(
            "--tile-binning sets the Vulkan frame's binning; this bench runs on the CPU renderer");
      using Binning = VulkanRenderer::TileBinning;
      driver.vulkan()->setTileBinning(o.tile_binning == "partitioned"  ? Binning::kPartitioned
                                      : o.tile_binning == "aggregated" ? Binning::kAggregated
                                                                       : Binning::kPerPair);
    }
    if (o.lod) {  // a fly-through from a cold start: no warm-up frame
      fmt::print("scene: {} ({} objects), {}x{}, {} frames of a fly-through\n", what, scene.objects.size(),
                 cam.width, cam.height, o.frames);
      json += fmt::format("  \"scene\": \"{}\",\n  \"objects\": {},\n  \"width\": {},\n  \"height\": {},\n",
                          jsonEscape(what), scene.objects.size(), cam.width, cam.height);
      std::optional<Scene> reference;
      std::optional<FrameDriver> reference_driver;
      if (o.lod_reference) {
        std::string ignored;
        reference.emplace(benchScene(o, dir, ignored, false));  // (its warnings were printed)
        reference_driver.emplace(fo);
      }
      benchLod(o, driver, scene, cam, reference ? &*reference : nullptr,
               reference_driver ? &*reference_driver : nullptr, json);
      human.release();
      emitJson(json, o.json, o.json_out);
      return 0;
    }
    // Warm-up: uploads, pipeline compilation, buffer growth, the generators' GPU plans.
    const FrameResult warm = driver.render(scene, benchFrame(0, cam, o));
    const int degree = warm.sh_degree;
    fmt::print("scene: {} ({} objects, {} gaussians, SH degree {}), {}x{}, {} timed frames\n", what,
               scene.objects.size(), warm.splats, degree, cam.width, cam.height, o.frames);
    json += fmt::format(
        "  \"scene\": \"{}\",\n  \"objects\": {},\n  \"gaussians\": {},\n  \"sh_degree\": {},\n  \"width\": "
        "{},\n  \"height\": {},\n  \"frames\": {},\n",
        jsonEscape(what), scene.objects.size(), warm.splats, degree, cam.width, cam.height, o.frames);
    if (driver.usesVulkan())
      benchVulkan(o, driver, scene, cam, warm, generators, json);
    else
      benchCpu(o, driver, scene, cam, warm, json);
    human.release();
    emitJson(json, o.json, o.json_out);
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("bench", e);
  }
}

BenchSkinCommand::~BenchSkinCommand() = default;

int BenchSkinCommand::run() const {
  const Options& o = *options_;
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
    const auto method =
        o.method == "dqs" ? anim::SkinningMethod::kDualQuaternion : anim::SkinningMethod::kLinearBlend;

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
    fmt::print(
        "crowd: {} instances of {} ({} vertices, {} joints), {} skinning on {} ({}), {} timed frames\n",
        o.instances, o.input, prim.positions.size(), joints, o.method, ctx.info().name, ctx.info().typeName(),
        o.frames);

    std::vector<Mat4> palettes(o.instances * joints);
    std::vector<double> cpu_ms, gpu_ms;
    // Instances pose in parallel, in runs of kGrain with their own scratch (sampling, hierarchy, palette).
    constexpr size_t kGrain = 16;
    const unsigned threads =
        static_cast<unsigned>(std::min<size_t>(workerCount(), (o.instances + kGrain - 1) / kGrain));
    for (int f = 0; f <= o.frames; ++f) {  // frame 0 is the warm-up
      auto t0 = Clock::now();
      parallelForRange(o.instances, kGrain, [&](size_t begin, size_t end) {
        std::vector<anim::Transform> local(skeleton.size());
        std::vector<float> morph(skeleton.weightTotal());
        std::vector<Mat4> models(skeleton.size());
        for (size_t i = begin; i < end; ++i) {
          float t =
              anim::wrapTime(static_cast<float>(f) / 60.0f + 0.137f * static_cast<float>(i), clip.duration);
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
    fmt::print(
        "median ms per frame: cpu poses {:.3f} (sampling, hierarchy, palettes; {} threads) | gpu skinning "
        "{:.3f} "
        "({:.2f} G vertices/s)\n",
        median(cpu_ms), threads, median(gpu_ms), vertices / (median(gpu_ms) * 1e-3) / 1e9);
    if (o.json || !o.json_out.empty()) {
      std::string json = fmt::format(
          "{{\n  \"file\": \"{}\",\n  \"instances\": {},\n  \"vertices_per_instance\": {},\n  \"joints\": "
          "{},\n  \"method\": \"{}\",\n"
          "  \"device\": \"{}\",\n  \"frames\": {},\n  \"cpu_threads\": {},\n  \"median_ms\": "
          "{{\"cpu_poses\": {:.4f}, \"gpu_skinning\": {:.4f}}}\n}}\n",
          jsonEscape(o.input), o.instances, prim.positions.size(), joints, o.method,
          jsonEscape(ctx.info().name), o.frames, threads, median(cpu_ms), median(gpu_ms));
      human.release();
      emitJson(json, o.json, o.json_out);
    }
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("bench-skin", e);
  }
}

BenchCharactersCommand::~BenchCharactersCommand() = default;

int BenchCharactersCommand::run() const {
  const Options& o = *options_;
  try {
    JsonStdout human(o.json);
    if (o.count == 0) throw Error("--count must be at least 1");
    if (character::isCharacterBundle(*character::directoryResolver(o.package))) return benchBundle(o, human);
    FrameDriver driver(driverOptions("vulkan", o.device, o.validation));
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
    const Camera cam =
        lookAtCamera({0, 0, 1.2f * extent + size.z}, {0, 0, 0}, {0, 1, 0}, 50, o.width, o.height);
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
          c.command = "look-at",
          c.target = Vec3{static_cast<float>(std::sin(t + static_cast<double>(i))), 0, 2 * extent};
          scene.script.push_back(c);
        }
      }
    fmt::print(
        "characters: {} x {} ({} splats each, {} in all) at {}x{} on {} ({}), {} timed frames; animated by "
        "{}\n",
        o.count, o.package, probe->splats().size(), probe->splats().size() * o.count, o.width, o.height,
        renderer.device().name, renderer.device().typeName(), o.frames,
        clips ? "its default clip" : "expressions and look-at");
    std::vector<double> cpu_ms, gpu_ms, deform_ms;
    for (int f = 0; f <= o.frames; ++f) {
      const FrameResult fr = driver.render(scene, {static_cast<double>(f) / 60.0, cam, {}, {}});
      if (f > 0)
        cpu_ms.push_back(fr.pose_ms), gpu_ms.push_back(fr.gpu.times.total - fr.gpu.times.readback),
            deform_ms.push_back(fr.gpu.times.mesh);
    }
    fmt::print(
        "median ms per frame: gpu {:.3f} (deform + sort + raster, without the image readback; deform pass "
        "{:.3f}) | cpu poses {:.1f} "
        "(sampling, skinning of the bound meshes; {} threads)\n",
        median(gpu_ms), median(deform_ms), median(cpu_ms), workerCount());
    if (o.json || !o.json_out.empty()) {
      std::string json = fmt::format(
          "{{\n  \"package\": \"{}\",\n  \"count\": {},\n  \"splats\": {},\n  \"width\": {},\n  \"height\": "
          "{},\n  \"device\": \"{}\",\n"
          "  \"frames\": {},\n  \"median_ms\": {{\"gpu\": {:.4f}, \"gpu_deform\": {:.4f}, \"cpu_poses\": "
          "{:.3f}}}\n}}\n",
          jsonEscape(o.package), o.count, probe->splats().size() * o.count, o.width, o.height,
          jsonEscape(renderer.device().name), o.frames, median(gpu_ms), median(deform_ms), median(cpu_ms));
      human.release();
      emitJson(json, o.json, o.json_out);
    }
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("bench-characters", e);
  }
}

DevicesCommand::~DevicesCommand() = default;

int DevicesCommand::run() const {
  const Options& o = *options_;
  const uint32_t loader = gpu::loaderVersion();
  const std::vector<gpu::DeviceInfo> devices = gpu::listDevices();
  const std::vector<gpu::LayerInfo> layers = gpu::listLayers();
  if (o.json) {
    std::string out =
        fmt::format("{{\n  \"loader\": \"{}\",\n  \"devices\": [", loader ? gpu::versionString(loader) : "");
    for (const gpu::DeviceInfo& d : devices)
      out += fmt::format(
          "{}\n    {{\"index\": {}, \"name\": \"{}\", \"type\": \"{}\", \"api\": \"{}\", \"subgroup_size\": "
          "{}, "
          "\"subgroup_partitioned\": {}, \"shader_float16\": {}, \"device_local_bytes\": {}, \"driver\": "
          "\"{}\", "
          "\"driver_info\": "
          "\"{}\", "
          "\"driver_version\": {}}}",
          &d == &devices.front() ? "" : ",", d.index, jsonEscape(d.name), d.typeName(),
          gpu::versionString(d.api_version), d.subgroup_size, d.subgroup_partitioned, d.shader_float16,
          d.device_local_bytes, jsonEscape(d.driver_name), jsonEscape(d.driver_info), d.driver_version);
    out += devices.empty() ? "],\n  \"layers\": [" : "\n  ],\n  \"layers\": [";
    for (const gpu::LayerInfo& l : layers)
      out += fmt::format("{}\n    {{\"name\": \"{}\", \"spec\": \"{}\", \"implementation\": {}}}",
                         &l == &layers.front() ? "" : ",", jsonEscape(l.name),
                         gpu::versionString(l.spec_version), l.implementation_version);
    out += layers.empty() ? "]\n}\n" : "\n  ]\n}\n";
    fmt::print("{}", out);
  } else {
    if (loader) fmt::print("Vulkan loader {}\n", gpu::versionString(loader));
    for (const gpu::DeviceInfo& d : devices)
      fmt::print("device {}: {} ({}, Vulkan {}, subgroup {}{}{}, {:.1f} GiB device-local); driver {}: {}\n",
                 d.index, d.name, d.typeName(), gpu::versionString(d.api_version), d.subgroup_size,
                 d.subgroup_partitioned ? " partitioned" : "", d.shader_float16 ? ", fp16" : "",
                 static_cast<double>(d.device_local_bytes) / (1 << 30),
                 d.driver_name.empty() ? "(unnamed)" : d.driver_name, d.driver_info);
    for (const gpu::LayerInfo& l : layers)
      fmt::print("layer {} (Vulkan {}, implementation {})\n", l.name, gpu::versionString(l.spec_version),
                 l.implementation_version);
  }
  if (!loader)
    return fail("devices",
                "Vulkan loader (libvulkan.so.1) not found; install libvulkan1 and a driver (Debian: "
                "mesa-vulkan-drivers)");
  if (devices.empty())
    return fail("devices", "no Vulkan device found (for a CPU device install mesa-vulkan-drivers)");
  return 0;
}

}  // namespace sf::cli
