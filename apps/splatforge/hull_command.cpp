#include "hull_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "commands.h"
#include "core/error.h"
#include "gpu/gpu.h"
#include "hull/bake.h"
#include "hull/effects.h"
#include "frame/frame.h"
#include "render/vulkan_renderer.h"
#include "hull/hull_render.h"
#include "io/file.h"
#include "io/spl2.h"
#include "train/trainer.h"
#include "train/views.h"
#include "train_command.h"
#include "views_command.h"

namespace sf::cli {

namespace {


void applyBelt(const std::string& text, hull::BakeOptions& o) {
  if (!parseBelt(text, o.belt_min, o.belt_max))  // views_command.h: the one reading of a belt
    throw UsageError("--belt '" + text + "': expected MIN,MAX in degrees with -90 <= MIN < MAX <= 90");
}

int runBake(HullCommand::Options& o) {
  if (std::filesystem::path(o.output).extension() != ".spl2") throw UsageError("-o must name a .spl2 file, got '" + o.output + "'");
  applyBelt(o.belt, o.bake);
  if (!o.json) o.bake.progress = [](const std::string& line) { fmt::print(stderr, "  {}\n", line); };
  GaussianCloud trained;
  if (o.train) {
    if (!o.bake.splats.empty()) throw UsageError("give --train or --splats, not both");
    if (o.bake.splats_in_source_frame) throw UsageError("--splats-source-frame is for a --splats file; a --train cloud is in the hull frame");
    train::ViewsOptions vo;
    vo.train_count = o.train_views;
    vo.size = o.train_size;
    vo.clip = o.bake.clip;
    vo.time = o.bake.time;
    vo.seed = o.bake.seed;
    train::TrainOptions to;
    to.budget = o.bake.budget;
    to.steps = o.train_steps;
    to.seed = o.bake.seed;
    to.entropy = o.train_entropy;
    if (!o.json)
      to.progress = [](int step, int steps, double loss, size_t live) {
        if (step == steps || step % std::max(1, steps / 10) == 0) fmt::print(stderr, "  train: step {}/{} loss {:.5f} live {}\n", step, steps, loss, live);
      };
    if (!o.json) fmt::print(stderr, "training {} gaussians on {} views of {} ({} steps at {}x{})\n", to.budget, vo.train_count, o.input, to.steps, vo.size, vo.size);
    std::unique_ptr<VulkanRenderer> renderer;
    const train::MeshTrainResult r = train::trainFromMesh(o.input, vo, to, trainerFor(o.train_backend, o.play.device, renderer));
    if (!o.json)
      fmt::print(stderr,
                 "  trained in {:.2f} s; validation L1 {:.5f} -> {:.5f}, PSNR {:.2f} -> {:.2f} dB, "
                 "SSIM {:.4f} -> {:.4f}\n",
                 r.train.seconds, r.train.initial.l1, r.train.final.l1, r.train.initial.psnr,
                 r.train.final.psnr, r.train.initial.ssim, r.train.final.ssim);
    trained = train::toCloud(r.train.params);  // the dataset's frame is the hull frame (both hull/source_mesh.h)
    o.bake.cloud = &trained;
  }
  if (!o.json) fmt::print(stderr, "baking {} (budget {}{})\n", o.input, o.bake.budget, o.bake.cloud ? ", trained" : o.bake.splats.empty() ? ", sampled" : ", splats " + o.bake.splats);
  hull::BakeResult r = hull::bakeHull(o.input, o.bake);
  const std::string meta = hull::hullMetaPath(o.output);
  saveSpl2(r.hull, o.output);
  writeFileAtomic(meta, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(r.meta_json.data()), r.meta_json.size()));
  const hull::BakeReport& b = r.report;
  if (o.json) {
    fmt::print("{}", r.meta_json);
    return 0;
  }
  fmt::print("wrote {} ({:.1f} KB: {} core + {} shell, {} chunks, {} parts) and {}\n", o.output, static_cast<double>(b.bytes) / 1024.0, b.core,
             b.shell, b.chunks, b.parts, meta);
  fmt::print("winding: {} of {} components flipped ({:.1f}% of faces); {:.1f}% of splats snapped to a repaired face (normal flipped)\n", b.flipped_components,
             b.components, 100.0 * b.flipped_face_share, 100.0 * b.flipped_splat_share);
  fmt::print("floaters: {} by distance, {} detached, {} outside a silhouette (distance p50 {:.4f}, p99 {:.4f}); {} belly-culled, {} over "
             "the budget\n",
             b.floaters_distance, b.floaters_connectivity, b.floaters_silhouette, b.distance_p50, b.distance_p99, b.belly_culled, b.over_budget);
  fmt::print("time: {:.2f} s\n", b.seconds);
  return 0;
}

int runInfo(const HullCommand::Options& o) {
  const std::vector<uint8_t> bytes = readFile(o.input);
  const Spl2Hull h = decodeSpl2(bytes, o.input);
  size_t emissive = 0, parts[8] = {};
  auto count = [&](const Spl2Block& b) {
    for (const auto& a : b.attrs) {
      const int packed = static_cast<int>(a[1]);
      emissive += packed % 16 > 0;
      parts[packed / 16 % 8]++;
    }
  };
  count(h.core);
  count(h.shell);
  size_t materials[kSpl2Materials] = {};
  for (uint8_t m : h.material_of) materials[m < kSpl2Materials ? m : 0]++;
  if (o.json) {
    fmt::print("{{\"file\": \"{}\", \"bytes\": {}, \"core\": {}, \"shell\": {}, \"buckets\": {}, \"chunks\": {}, \"emissive\": {}}}\n", jsonEscape(o.input),
               bytes.size(), h.core.size(), h.shell.size(), h.orders.size(), h.has_chunks ? h.chunks.size() : 0, emissive);
    return 0;
  }
  fmt::print("{}: SPL2 splat hull, {:.1f} KB\n", o.input, static_cast<double>(bytes.size()) / 1024.0);
  fmt::print("splats: {} core (opaque octagons), {} shell (sorted gaussians), {} shell orders\n", h.core.size(), h.shell.size(), h.orders.size());
  fmt::print("emissive: {}; parts:", emissive);
  for (int p = 0; p < 8; ++p)
    if (parts[p]) fmt::print(" {}={}", p, parts[p]);
  fmt::print("\n");
  if (h.has_chunks) {
    fmt::print("CHNK: {} chunks; materials:", h.chunks.size());
    for (int m = 0; m < kSpl2Materials; ++m)
      if (materials[m]) fmt::print(" {}={}", spl2MaterialName(m), materials[m]);
    fmt::print("\n");
  } else {
    fmt::print("CHNK: none\n");
  }
  const std::string meta = hull::hullMetaPath(o.input);
  if (std::filesystem::exists(meta)) {
    fmt::print("meta: {}\n", meta);
    // The gameplay points hull scripts use (docs/formats/hull-script.md "Fire", "Thrust").
    const std::vector<hull::HullGun> guns = hull::readHullMetaGuns(meta);
    fmt::print("guns (script fire ids):");
    for (size_t g = 0; g < guns.size(); ++g)
      fmt::print(" {} {} [{:.3f}, {:.3f}, {:.3f}]", g, guns[g].name, guns[g].tip.x, guns[g].tip.y, guns[g].tip.z);
    fmt::print("{}\n", guns.empty() ? " none" : "");
    const hull::HullEngines engines = hull::readHullMetaEngines(meta);
    fmt::print("engines (script thrust):");
    for (const hull::HullGun& e : engines.nozzles) fmt::print(" {} [{:.3f}, {:.3f}, {:.3f}]", e.name, e.tip.x, e.tip.y, e.tip.z);
    if (engines.nozzles.empty()) fmt::print(" none");
    fmt::print("; engine parts:");
    for (int p = 0; p < 8; ++p)
      if ((engines.part_mask >> p) & 1u) fmt::print(" {}", p);
    fmt::print("{}\n", engines.part_mask == 0 ? " none" : "");
  }
  return 0;
}


double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The spread of the last frame's tile pairs over its tiles: each tile's list is walked in full by the raster
// workgroups of its rows, so the raster's time follows the deepest tiles as much as the total.
void printTileStats(const VulkanFrameDebug& d, size_t splats) {
  std::vector<uint32_t> depths;
  for (size_t i = 0; i + 1 < d.tile_ranges.size(); i += 2) depths.push_back(d.tile_ranges[i + 1] - d.tile_ranges[i]);
  if (depths.empty()) return;
  std::sort(depths.begin(), depths.end());
  uint64_t total = 0, occupied = 0, deep = 0;
  for (uint32_t n : depths) total += n, occupied += n > 0, deep += n >= 1024 ? n : 0;
  const auto at = [&](double q) { return depths[std::min(depths.size() - 1, static_cast<size_t>(q * static_cast<double>(depths.size())))]; };
  const auto share = [&](uint64_t part) { return total > 0 ? static_cast<double>(part) / static_cast<double>(total) : 0.0; };
  fmt::print("tile pairs: {} tiles, {} with pairs, {} pairs ({:.2f} per splat); per tile p50 {} p90 {} p99 {} max {}\n", depths.size(), occupied, total,
             splats > 0 ? static_cast<double>(total) / static_cast<double>(splats) : 0.0, at(0.5), at(0.9), at(0.99), depths.back());
  fmt::print("  pairs in tiles of >= 1024 pairs: {:.1f}%\n", 100.0 * share(deep));
}

// `hull bench`: N live hulls in a grid with every effect on and a hit per frame on the first, on the Vulkan
// frame; CPU time of the destruction and of building the frame inputs, GPU time of the frame.
int runBench(const HullCommand::Options& o) {
  if (o.hulls < 1 || o.hulls > 10000) throw UsageError("--hulls must be in 1..10000");
  if (o.frames < 1 || o.frames > 100000) throw UsageError("--frames must be in 1..100000");
  if (o.submissions > 1 && o.back_to_back == 0) throw UsageError("--submissions counts --back-to-back submissions: give --back-to-back N too");
  auto asset = hull::HullAsset::load(o.input);
  FrameDriverOptions fo;
  fo.backend = Backend::kVulkan;
  fo.device = o.play.device;
  FrameDriver driver(fo);
  VulkanRenderer& vk = *driver.vulkan();
  // The crowd: one live hull object per grid cell; the frame driver gives each its GPU pass.
  Scene scene;
  std::vector<std::shared_ptr<hull::HullInstance>> hulls;
  const int side = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(o.hulls))));
  const auto rest = std::make_shared<const GaussianCloud>(asset->rest);
  for (int i = 0; i < o.hulls; ++i) {
    hull::DestructionOptions d;
    d.seed = static_cast<uint32_t>(i + 1);
    hulls.push_back(std::make_shared<hull::HullInstance>(asset, d));
    const float x = (static_cast<float>(i % side) - 0.5f * static_cast<float>(side - 1)) * 1.8f;
    const float z = (static_cast<float>(i / side) - 0.5f * static_cast<float>(side - 1)) * 1.8f;
    SceneObject obj;
    obj.name = fmt::format("hull{}", i);
    obj.source = o.input;
    obj.hull = asset;
    obj.cloud = rest;
    obj.hull_live = hulls.back();
    obj.object_to_world = Mat4::fromLinearTranslation(Mat3{}, {x, 0, z});
    scene.objects.push_back(obj);
  }
  const float extent = 0.9f * static_cast<float>(side) + 0.8f;
  const Camera cam = lookAtCamera(Vec3{0, 1.1f, 1.2f} * (extent * 1.6f), {0, 0, 0}, {0, 1, 0}, 45.0f, o.width, o.height);
  std::vector<double> cpu_hit, cpu_build, gpu_before, gpu_total;
  std::vector<double> gpu_pre, gpu_bin, gpu_sort, gpu_raster;  // the frame's passes
  size_t splats = 0, pairs = 0;
  size_t events = 0;
  fmt::print(stderr, "  {}\n", fmt::format("hull bench: {} hulls of {} splats (+{} pool slots) at {}x{} on {}, {} frames, effects {}", o.hulls, asset->hull.size(),
                       hulls[0]->destruction().slots().size() - asset->hull.size(), o.width, o.height, vk.device().name, o.frames,
                       o.idle ? "off, no hits" : "all on, a hit per frame on the first hull"));
  double t = 0;
  for (int f = 0; f < o.frames; ++f) {
    t = static_cast<double>(f) / 60.0;
    const auto t0 = std::chrono::steady_clock::now();
    if (!o.idle) {  // a hit per frame, from a turning direction; healed every 30 frames
      hull::Hit h;
      const float a = static_cast<float>(f) * 0.7f;
      h.direction = normalize(Vec3{std::sin(a), -0.2f, std::cos(a)});
      h.kind = static_cast<hull::HitKind>(f % 5);
      h.weapon = f % 3 == 0 ? hull::Weapon::kCannon : hull::Weapon::kNone;
      h.damage = 30;
      events += hulls[0]->destruction().hit(h, t).size();
      if (f % 30 == 29) hulls[0]->destruction().heal(t, 1.0f);
      events += hulls[0]->destruction().update(t).size();
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (!o.idle)
      for (const auto& hull : hulls) {  // every effect on (their parameters are part of the frame inputs)
        hull::HullEffects& e = hull->effects;
        e.charge = 0.5f, e.link_decay = 0.5f, e.siphon = 0.3f, e.implode = 0.05f, e.scatter = 0.05f;
        e.ripple = 0.02f, e.ripple_age = static_cast<float>(std::fmod(t, 1.0)), e.ripple_origin = {0, 0, 0.8f};
        e.parts = {{{0, 0, 0}, Quat{std::cos(0.1f * static_cast<float>(t)), 0, std::sin(0.1f * static_cast<float>(t)), 0}, {}}};
      }
    const auto t2 = std::chrono::steady_clock::now();
    const FrameResult fr = driver.render(scene, {t, cam, {}, {}});  // posing builds every hull's frame inputs
    if (f == 0) continue;  // the first frame uploads and allocates
    const VulkanFrameStats& st = fr.gpu;
    cpu_hit.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    cpu_build.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count() + fr.pose_ms);
    gpu_before.push_back(st.times.mesh);
    gpu_total.push_back(st.times.total - st.times.readback);
    gpu_pre.push_back(st.times.preprocess), gpu_bin.push_back(st.times.bin + st.times.scan + st.times.emit);
    gpu_sort.push_back(st.times.sort), gpu_raster.push_back(st.times.raster);
    splats = st.splats, pairs = st.tile_keys;
  }
  fmt::print("hulls {}  splats per hull {}  frames {}  events {}\n", o.hulls, asset->hull.size(), o.frames, events);
  fmt::print("cpu destruction (hit + update, first hull)  median {:.4f} ms\n", median(cpu_hit));
  fmt::print("cpu frame inputs (all hulls' params)         median {:.4f} ms\n", median(cpu_build));
  fmt::print("gpu before preprocess (hull passes, uploads) median {:.4f} ms\n", median(gpu_before));
  fmt::print("gpu frame without readback                   median {:.4f} ms\n", median(gpu_total));
  fmt::print("  of it: preprocess {:.4f}, binning {:.4f}, tile sort {:.4f}, raster {:.4f} ms ({} splats, {} tile pairs)\n", median(gpu_pre),
             median(gpu_bin), median(gpu_sort), median(gpu_raster), splats, pairs);
  std::string json = fmt::format(
      "{{\n  \"hulls\": {},\n  \"splats_per_hull\": {},\n  \"frames\": {},\n  \"events\": {},\n  \"width\": {},\n  \"height\": {},\n"
      "  \"device\": \"{}\",\n  \"effects\": {},\n  \"splats\": {},\n  \"tile_pairs\": {},\n  \"median_ms\": {{\"cpu_hit\": {:.4f}, "
      "\"cpu_frame_inputs\": {:.4f}, \"gpu_before_preprocess\": {:.4f}, \"gpu_frame_without_readback\": {:.4f}, \"preprocess\": {:.4f}, "
      "\"binning\": {:.4f}, \"tile_sort\": {:.4f}, \"raster\": {:.4f}}}",
      o.hulls, asset->hull.size(), o.frames, events, o.width, o.height, jsonEscape(vk.device().name), o.idle ? "false" : "true", splats, pairs,
      median(cpu_hit), median(cpu_build), median(gpu_before), median(gpu_total), median(gpu_pre), median(gpu_bin), median(gpu_sort),
      median(gpu_raster));
  if (o.back_to_back > 0) {
    // Submissions one after another; the medians are over the frames of the later half (the earlier ones
    // are where a GPU that idled between the timed frames raises its clock), the spread over all of them.
    const int first_kept = o.submissions / 2;
    std::vector<VulkanPassTimes> later;
    std::vector<double> per_submission;
    for (int s = 0; s < o.submissions; ++s) {
      const std::vector<VulkanPassTimes> runs = driver.renderBackToBack(scene, {t, cam, {}, {}}, o.back_to_back);
      const VulkanPassTimes m = medianPassTimes(runs);
      per_submission.push_back(m.total - m.readback);
      if (s >= first_kept) later.insert(later.end(), runs.begin(), runs.end());
    }
    const VulkanPassTimes b = medianPassTimes(later);
    if (o.submissions > 1)
      fmt::print("back to back ({} frames in each of {} submissions; frame medians per submission {:.4f} .. {:.4f} ms; below: the last {}):\n",
                 o.back_to_back, o.submissions, *std::min_element(per_submission.begin(), per_submission.end()),
                 *std::max_element(per_submission.begin(), per_submission.end()), o.submissions - first_kept);
    else
      fmt::print("back to back ({} frames in one submission):\n", o.back_to_back);
    fmt::print("gpu before preprocess (hull passes, uploads) median {:.4f} ms\n", b.mesh);
    fmt::print("gpu frame without readback                   median {:.4f} ms\n", b.total - b.readback);
    fmt::print("  of it: preprocess {:.4f}, binning {:.4f}, tile sort {:.4f}, raster {:.4f} ms\n", b.preprocess, b.bin + b.scan + b.emit, b.sort,
               b.raster);
    json += fmt::format(",\n  \"back_to_back\": {{\"frames\": {}, \"submissions\": {}, \"gpu_before_preprocess\": {:.4f}, "
                        "\"gpu_frame_without_readback\": {:.4f}, \"preprocess\": {:.4f}, \"binning\": {:.4f}, \"tile_sort\": {:.4f}, \"raster\": {:.4f}}}",
                        o.back_to_back, o.submissions, b.mesh, b.total - b.readback, b.preprocess, b.bin + b.scan + b.emit, b.sort, b.raster);
  }
  json += "\n}\n";
  emitJson(json, false, o.json_out);
  if (o.tile_stats) printTileStats(vk.readDebug(), splats);
  if (vk.context().validationErrors() > 0) throw Error(vk.context().validationReport());
  return 0;
}

}  // namespace

HullCommand::~HullCommand() = default;

int HullCommand::run() const {
  static const char* kNames[] = {"hull bake", "hull info", "hull play", "hull bench"};
  const std::string command = options_->action == Options::Action::kInfo    ? kNames[1]
                              : options_->action == Options::Action::kPlay  ? kNames[2]
                              : options_->action == Options::Action::kBench ? kNames[3]
                                                                             : kNames[0];
  try {
    switch (options_->action) {
      case Options::Action::kInfo: return runInfo(*options_);
      case Options::Action::kBench: return runBench(*options_);
      case Options::Action::kPlay: {
        AnimateOptions a = options_->play;
        if (options_->seed_given) a.seed = options_->seed;
        if (a.duration_given) a.duration = options_->duration;
        a.default_background = kHullPlayBackground;
        a.command = command;
        return runAnimate(a);
      }
      case Options::Action::kBake: break;
    }
    return runBake(*options_);
  } catch (const std::exception& e) {
    return reportFailure(command, e);
  }
}

}  // namespace sf::cli
