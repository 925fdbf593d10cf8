#include "hull_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "core/chart.h"
#include "core/error.h"
#include "frame/frame.h"
#include "gpu/gpu.h"
#include "hull/bake.h"
#include "hull/effects.h"
#include "hull/hull_render.h"
#include "io/file.h"
#include "io/image_io.h"
#include "io/spl2.h"
#include "render/vulkan_renderer.h"
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
  if (std::filesystem::path(o.output).extension() != ".spl2")
    throw UsageError("-o must name a .spl2 file, got '" + o.output + "'");
  applyBelt(o.belt, o.bake);
  if (!o.json) o.bake.progress = [](const std::string& line) { fmt::print(stderr, "  {}\n", line); };
  GaussianCloud trained;
  std::vector<hull::CoverageView> coverage;
  if (o.train) {
    if (!o.bake.splats.empty()) throw UsageError("give --train or --splats, not both");
    if (o.bake.splats_in_source_frame)
      throw UsageError("--splats-source-frame is for a --splats file; a --train cloud is in the hull frame");
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
        if (step == steps || step % std::max(1, steps / 10) == 0)
          fmt::print(stderr, "  train: step {}/{} loss {:.5f} live {}\n", step, steps, loss, live);
      };
    if (!o.json)
      fmt::print(stderr, "training {} gaussians on {} views of {} ({} steps at {}x{})\n", to.budget,
                 vo.train_count, o.input, to.steps, vo.size, vo.size);
    std::unique_ptr<VulkanRenderer> renderer;
    train::MeshTrainResult r =
        train::trainFromMesh(o.input, vo, to, trainerFor(o.train_backend, o.play.device, renderer));
    if (!o.json)
      fmt::print(stderr,
                 "  trained in {:.2f} s; validation L1 {:.5f} -> {:.5f}, PSNR {:.2f} -> {:.2f} dB, "
                 "SSIM {:.4f} -> {:.4f}\n",
                 r.train.seconds, r.train.initial.l1, r.train.final.l1, r.train.initial.psnr,
                 r.train.final.psnr, r.train.initial.ssim, r.train.final.ssim);
    trained =
        train::toCloud(r.train.params);  // the dataset's frame is the hull frame (both hull/source_mesh.h)
    coverage = std::move(r.coverage);    // the floater pass over the training views
  }
  // What this run bakes with: the options and, for --train, the cloud and views this function holds (kept out
  // of `o`, which outlives them).
  hull::BakeOptions bake = o.bake;
  if (o.train) {
    bake.cloud = &trained;
    bake.views = coverage;
  }
  if (!o.json)
    fmt::print(stderr, "baking {} (budget {}{})\n", o.input, bake.budget,
               bake.cloud            ? ", trained"
               : bake.splats.empty() ? ", sampled"
                                     : ", splats " + bake.splats);
  hull::BakeResult r = hull::bakeHull(o.input, bake);
  const std::string meta = hull::hullMetaPath(o.output);
  saveSpl2(r.hull, o.output);
  writeFileAtomic(meta, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(r.meta_json.data()),
                                                 r.meta_json.size()));
  const hull::BakeReport& b = r.report;
  if (o.json) {
    fmt::print("{}", r.meta_json);
    return 0;
  }
  fmt::print("wrote {} ({:.1f} KB: {} core + {} shell, {} chunks, {} parts) and {}\n", o.output,
             static_cast<double>(b.bytes) / 1024.0, b.core, b.shell, b.chunks, b.parts, meta);
  fmt::print(
      "winding: {} of {} components flipped ({:.1f}% of faces); {:.1f}% of splats snapped to a repaired face "
      "(normal flipped)\n",
      b.flipped_components, b.components, 100.0 * b.flipped_face_share, 100.0 * b.flipped_splat_share);
  fmt::print(
      "floaters: {} by distance, {} detached, {} outside a silhouette, {} (distance p50 {:.4f}, p99 {:.4f}); "
      "{} belly-culled, {} over "
      "the budget\n",
      b.floaters_distance, b.floaters_connectivity, b.floaters_silhouette,
      b.dataset_pass ? fmt::format("{} on background in a training view", b.floaters_dataset)
                     : std::string("no training views"),
      b.distance_p50, b.distance_p99, b.belly_culled, b.over_budget);
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
    fmt::print(
        "{{\"file\": \"{}\", \"bytes\": {}, \"core\": {}, \"shell\": {}, \"buckets\": {}, \"chunks\": {}, "
        "\"emissive\": {}}}\n",
        jsonEscape(o.input), bytes.size(), h.core.size(), h.shell.size(), h.orders.size(),
        h.has_chunks ? h.chunks.size() : 0, emissive);
    return 0;
  }
  fmt::print("{}: SPL2 splat hull, {:.1f} KB\n", o.input, static_cast<double>(bytes.size()) / 1024.0);
  fmt::print("splats: {} core (opaque octagons), {} shell (sorted gaussians), {} shell orders\n",
             h.core.size(), h.shell.size(), h.orders.size());
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
      fmt::print(" {} {} [{:.3f}, {:.3f}, {:.3f}]", g, guns[g].name, guns[g].tip.x, guns[g].tip.y,
                 guns[g].tip.z);
    fmt::print("{}\n", guns.empty() ? " none" : "");
    const hull::HullEngines engines = hull::readHullMetaEngines(meta);
    fmt::print("engines (script thrust):");
    for (const hull::HullGun& e : engines.nozzles)
      fmt::print(" {} [{:.3f}, {:.3f}, {:.3f}]", e.name, e.tip.x, e.tip.y, e.tip.z);
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
  for (size_t i = 0; i + 1 < d.tile_ranges.size(); i += 2)
    depths.push_back(d.tile_ranges[i + 1] - d.tile_ranges[i]);
  if (depths.empty()) return;
  std::sort(depths.begin(), depths.end());
  uint64_t total = 0, occupied = 0, deep = 0;
  for (uint32_t n : depths) total += n, occupied += n > 0, deep += n >= 1024 ? n : 0;
  const auto at = [&](double q) {
    return depths[std::min(depths.size() - 1, static_cast<size_t>(q * static_cast<double>(depths.size())))];
  };
  const auto share = [&](uint64_t part) {
    return total > 0 ? static_cast<double>(part) / static_cast<double>(total) : 0.0;
  };
  fmt::print(
      "tile pairs: {} tiles, {} with pairs, {} pairs ({:.2f} per splat); per tile p50 {} p90 {} p99 {} max "
      "{}\n",
      depths.size(), occupied, total,
      splats > 0 ? static_cast<double>(total) / static_cast<double>(splats) : 0.0, at(0.5), at(0.9), at(0.99),
      depths.back());
  fmt::print("  pairs in tiles of >= 1024 pairs: {:.1f}%\n", 100.0 * share(deep));
}

// The frame-time-against-K chart of `hull bench --lod-sweep` (core/chart.h): the GPU frame, what runs before
// preprocess (the hulls' passes and uploads, the mesh layer of baked hulls' core octagons), the raster, and
// the host's frame inputs, over K.
ImageRGBA plotLodSweep(const std::string& title, bool back_to_back, const std::vector<double>& ks,
                       const std::vector<double>& frame_ms, const std::vector<double>& before_ms,
                       const std::vector<double>& raster_ms, const std::vector<double>& inputs_ms) {
  return chart::plotPanels(
      title, "K: SPLATS DRAWN PER HULL", ks,
      {{back_to_back ? "GPU FRAME WITHOUT READBACK, BACK TO BACK, MS" : "GPU FRAME WITHOUT READBACK, MS",
        Vec3{0.12f, 0.38f, 0.80f}, frame_ms},
       {"OF IT BEFORE PREPROCESS: HULL PASSES, UPLOADS, MESH LAYER, MS", Vec3{0.55f, 0.25f, 0.70f},
        before_ms},
       {"OF IT THE SPLAT RASTER, MS", Vec3{0.88f, 0.40f, 0.05f}, raster_ms},
       {"CPU FRAME INPUTS, MS", Vec3{0.10f, 0.60f, 0.25f}, inputs_ms}});
}

void checkBenchOptions(const HullCommand::Options& o) {
  if (o.hulls < 1 || o.hulls > 10000) throw UsageError("--hulls must be in 1..10000");
  if (o.frames < 1 || o.frames > 100000) throw UsageError("--frames must be in 1..100000");
  if (o.bench_mode != "live" && o.live_core != "sorted")
    throw UsageError("--live-core " + o.live_core + " applies to live hulls (--hull-mode live)");
  if (o.bench_mode != "live" && o.bench_effects != "all")
    throw UsageError("--effects " + o.bench_effects + " applies to live hulls (--hull-mode live)");
  if (o.live_core == "both" && o.lod_sweep > 0)
    throw UsageError("--live-core both times two runs; give --lod-sweep with mesh or sorted");
  if (o.submissions > 1 && o.back_to_back == 0)
    throw UsageError("--submissions counts --back-to-back submissions: give --back-to-back N too");
  if (!o.plot.empty()) {
    if (o.lod_sweep == 0) throw UsageError("--plot draws the --lod-sweep curve: give --lod-sweep N too");
    if (fileExtension(o.plot) != ".png") throw UsageError("--plot " + o.plot + ": expected a .png path");
    checkWritableTarget(o.plot, "--plot");
  }
}

// The crowd: one hull object per grid cell; the frame driver gives each live one its GPU pass.
struct HullCrowd {
  Scene scene;
  std::vector<std::shared_ptr<hull::HullInstance>> hulls;  // the live hulls (none for static ones)
  int side = 0;                                            // cells per row of the grid
};

HullCrowd buildCrowd(const HullCommand::Options& o, const std::shared_ptr<hull::HullAsset>& asset,
                     const hull::HullLod& lod, bool live) {
  HullCrowd c;
  c.side = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(o.hulls))));
  const auto rest = std::make_shared<const GaussianCloud>(asset->rest);
  for (int i = 0; i < o.hulls; ++i) {
    const float x = (static_cast<float>(i % c.side) - 0.5f * static_cast<float>(c.side - 1)) * 1.8f;
    const float z = (static_cast<float>(i / c.side) - 0.5f * static_cast<float>(c.side - 1)) * 1.8f;
    SceneObject obj;
    obj.name = fmt::format("hull{}", i);
    obj.source = o.input;
    obj.cloud = rest;
    auto h = std::make_shared<HullObject>(asset);
    h->lod = lod;
    if (live) {
      hull::DestructionOptions d;
      d.seed = static_cast<uint32_t>(i + 1);
      c.hulls.push_back(std::make_shared<hull::HullInstance>(asset, d));
      h->live = c.hulls.back();
      h->live_core = o.live_core == "sorted" ? hull::LiveCore::kSorted : hull::LiveCore::kMesh;
    } else {
      h->mode = hull::parseHullMode(o.bench_mode);
    }
    obj.kind = std::move(h);
    obj.mesh_samples = o.mesh_samples.value_or(0);
    obj.object_to_world = Mat4::fromLinearTranslation(Mat3{}, {x, 0, z});
    c.scene.objects.push_back(obj);
  }
  return c;
}

// K per hull this camera gives (the distance rule differs per hull by its depth).
struct LodRange {
  uint32_t k_min = ~0u, k_max = 0;
  uint64_t k_sum = 0;
};

LodRange lodRange(const Scene& scene, const hull::HullLod& lod, const hull::HullAsset& asset,
                  const Camera& cam) {
  LodRange r;
  for (const SceneObject& obj : scene.objects) {
    const uint32_t k = hull::resolveHullLod(lod, static_cast<uint32_t>(asset.hull.size()), asset.lod_radius,
                                            obj.object_to_world, &cam);
    r.k_min = std::min(r.k_min, k), r.k_max = std::max(r.k_max, k), r.k_sum += k;
  }
  return r;
}

// `frames` frames from scene time 0 (the first left out: it uploads and allocates); medians.
struct BenchRun {
  std::vector<double> cpu_hit, cpu_build, gpu_before, gpu_total, gpu_pre, gpu_bin, gpu_sort, gpu_raster;
  size_t splats = 0, visible = 0, pairs = 0, events = 0;
  double t = 0;
};

// The timed frames of the crowd from one camera: live hulls take a hit per frame (the first hull) and every
// effect (all hulls) unless idle; with `effects` false the hits alone.
struct BenchFrames {
  FrameDriver& driver;
  const HullCrowd& crowd;
  const Camera& cam;
  bool idle;
  int back_to_back, submissions;
  bool effects = true;

  BenchRun run(int frames) const {
    BenchRun r;
    for (int f = 0; f < frames; ++f) {
      r.t = static_cast<double>(f) / 60.0;
      const double t = r.t;
      const auto t0 = std::chrono::steady_clock::now();
      if (!idle) {  // a hit per frame, from a turning direction; healed every 30 frames
        hull::Hit h;
        const float a = static_cast<float>(f) * 0.7f;
        h.direction = normalize(Vec3{std::sin(a), -0.2f, std::cos(a)});
        h.kind = static_cast<hull::HitKind>(f % 5);
        h.weapon = f % 3 == 0 ? hull::Weapon::kCannon : hull::Weapon::kNone;
        h.damage = 30;
        r.events += crowd.hulls[0]->destruction().hit(h, t).size();
        if (f % 30 == 29) crowd.hulls[0]->destruction().heal(t, 1.0f);
        r.events += crowd.hulls[0]->destruction().update(t).size();
      }
      const auto t1 = std::chrono::steady_clock::now();
      if (!idle && effects)
        for (const auto& hull :
             crowd.hulls) {  // every effect on (their parameters are part of the frame inputs)
          hull::HullEffects& e = hull->effects;
          e.charge = 0.5f, e.link_decay = 0.5f, e.siphon = 0.3f, e.implode = 0.05f, e.scatter = 0.05f;
          e.ripple = 0.02f, e.ripple_age = static_cast<float>(std::fmod(t, 1.0)),
          e.ripple_origin = {0, 0, 0.8f};
          e.parts = {
              {{0, 0, 0},
               Quat{std::cos(0.1f * static_cast<float>(t)), 0, std::sin(0.1f * static_cast<float>(t)), 0},
               {}}};
        }
      const auto t2 = std::chrono::steady_clock::now();
      const FrameResult fr =
          driver.render(crowd.scene, {t, cam, {}, {}});  // posing builds every hull's frame inputs
      if (f == 0) continue;                              // the first frame uploads and allocates
      const VulkanFrameStats& st = fr.gpu;
      r.cpu_hit.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      r.cpu_build.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count() + fr.pose_ms);
      r.gpu_before.push_back(st.times.mesh);
      r.gpu_total.push_back(st.times.total - st.times.readback);
      r.gpu_pre.push_back(st.times.preprocess),
          r.gpu_bin.push_back(st.times.bin + st.times.scan + st.times.emit);
      r.gpu_sort.push_back(st.times.sort), r.gpu_raster.push_back(st.times.raster);
      r.splats = st.splats, r.visible = st.visible, r.pairs = st.tile_keys;
    }
    return r;
  }

  // Back to back: submissions one after another; the medians are over the frames of the later half (the
  // earlier ones are where a GPU that idled between the timed frames raises its clock).
  VulkanPassTimes backToBack(double t, std::vector<double>* per_submission) const {
    const int first_kept = submissions / 2;
    std::vector<VulkanPassTimes> later;
    for (int s = 0; s < submissions; ++s) {
      const std::vector<VulkanPassTimes> runs =
          driver.renderBackToBack(crowd.scene, {t, cam, {}, {}}, back_to_back);
      const VulkanPassTimes m = medianPassTimes(runs);
      if (per_submission) per_submission->push_back(m.total - m.readback);
      if (s >= first_kept) later.insert(later.end(), runs.begin(), runs.end());
    }
    return medianPassTimes(later);
  }
};

// The back-to-back submissions at the last frame's time, printed; returns their JSON member.
std::string benchBackToBack(const HullCommand::Options& o, const BenchFrames& frames, double t,
                            const char* key = "back_to_back") {
  std::vector<double> per_submission;
  const VulkanPassTimes b = frames.backToBack(t, &per_submission);
  if (o.submissions > 1)
    fmt::print(
        "back to back ({} frames in each of {} submissions; frame medians per submission {:.4f} .. {:.4f} "
        "ms; below: the last {}):\n",
        o.back_to_back, o.submissions, *std::min_element(per_submission.begin(), per_submission.end()),
        *std::max_element(per_submission.begin(), per_submission.end()), o.submissions - o.submissions / 2);
  else
    fmt::print("back to back ({} frames in one submission):\n", o.back_to_back);
  fmt::print("gpu before preprocess (hull passes, uploads) median {:.4f} ms\n", b.mesh);
  fmt::print("gpu frame without readback                   median {:.4f} ms\n", b.total - b.readback);
  fmt::print("  of it: preprocess {:.4f}, binning {:.4f}, tile sort {:.4f}, raster {:.4f} ms\n", b.preprocess,
             b.bin + b.scan + b.emit, b.sort, b.raster);
  return fmt::format(
      ",\n  \"{}\": {{\"frames\": {}, \"submissions\": {}, \"gpu_before_preprocess\": {:.4f}, "
      "\"gpu_frame_without_readback\": {:.4f}, \"preprocess\": {:.4f}, \"binning\": {:.4f}, \"tile_sort\": "
      "{:.4f}, \"raster\": {:.4f}}}",
      key, o.back_to_back, o.submissions, b.mesh, b.total - b.readback, b.preprocess, b.bin + b.scan + b.emit,
      b.sort, b.raster);
}

// `--lod-sweep`: every hull at K = ceil(n j / N), j = 1..N, each from the undamaged hulls at scene time 0
// (the same hits and effects at every K); printed as a table, drawn with --plot; returns its JSON member.
std::string benchLodSweep(const HullCommand::Options& o, const BenchFrames& frames, HullCrowd& crowd,
                          size_t n, bool idle) {
  std::vector<double> ks, frame_ms, before_ms, raster_ms, inputs_ms;
  fmt::print("lod sweep ({} budgets; every hull at K of {} splats; medians of {} frames{}):\n", o.lod_sweep,
             n, o.frames - 1, o.back_to_back > 0 ? ", then back to back" : "");
  fmt::print("  {:>8} {:>7} {:>10} {:>10} {:>12} {:>13} {:>10} {:>10} {:>10} {:>13}{}\n", "K", "share",
             "visible", "pairs", "gpu frame ms", "before preproc", "preproc", "sort", "raster",
             "cpu inputs ms", o.back_to_back > 0 ? "   back to back ms" : "");
  std::string json = ",\n  \"lod_sweep\": [";
  for (int j = 1; j <= o.lod_sweep; ++j) {
    const uint32_t k = static_cast<uint32_t>(
        (static_cast<uint64_t>(n) * static_cast<uint64_t>(j) + static_cast<uint64_t>(o.lod_sweep) - 1) /
        static_cast<uint64_t>(o.lod_sweep));
    for (SceneObject& obj : crowd.scene.objects) obj.as<HullObject>()->lod = hull::HullLod::fixed(k);
    for (const auto& h : crowd.hulls) h->resetDestruction();
    const BenchRun s = frames.run(o.frames);
    double b2b = 0;
    if (o.back_to_back > 0) {
      const VulkanPassTimes b = frames.backToBack(s.t, nullptr);
      b2b = b.total - b.readback;
    }
    const double share = n > 0 ? static_cast<double>(k) / static_cast<double>(n) : 0.0;
    fmt::print(
        "  {:>8} {:>7.3f} {:>10} {:>10} {:>12.4f} {:>13.4f} {:>10.4f} {:>10.4f} {:>10.4f} {:>13.4f}{}\n", k,
        share, s.visible, s.pairs, median(s.gpu_total), median(s.gpu_before), median(s.gpu_pre),
        median(s.gpu_sort), median(s.gpu_raster), median(s.cpu_build),
        o.back_to_back > 0 ? fmt::format("   {:>14.4f}", b2b) : "");
    json += fmt::format(
        "{}\n    {{\"k\": {}, \"share\": {:.4f}, \"splats\": {}, \"visible\": {}, \"tile_pairs\": {}, "
        "\"gpu_frame_without_readback\": {:.4f}, "
        "\"cpu_frame_inputs\": {:.4f}, \"gpu_before_preprocess\": {:.4f}, \"preprocess\": {:.4f}, "
        "\"binning\": {:.4f}, "
        "\"tile_sort\": {:.4f}, \"raster\": {:.4f}{}}}",
        j == 1 ? "" : ",", k, share, s.splats, s.visible, s.pairs, median(s.gpu_total), median(s.cpu_build),
        median(s.gpu_before), median(s.gpu_pre), median(s.gpu_bin), median(s.gpu_sort), median(s.gpu_raster),
        o.back_to_back > 0 ? fmt::format(", \"back_to_back_gpu_frame\": {:.4f}", b2b) : "");
    ks.push_back(k);
    frame_ms.push_back(o.back_to_back > 0 ? b2b : median(s.gpu_total));
    before_ms.push_back(median(s.gpu_before));
    raster_ms.push_back(median(s.gpu_raster));
    inputs_ms.push_back(median(s.cpu_build));
  }
  json += "\n  ]";
  if (!o.plot.empty()) {
    const std::string title =
        fmt::format("HULL LOD: {} {} HULLS OF {} SPLATS AT {}X{}, {}", o.hulls, o.bench_mode, n, o.width,
                    o.height, idle ? "IDLE" : "EFFECTS AND HITS");
    writePng(o.plot, plotLodSweep(title, o.back_to_back > 0, ks, frame_ms, before_ms, raster_ms, inputs_ms));
    fmt::print("wrote {}\n", o.plot);
  }
  return json;
}

// A run's medians, printed.
void printBenchRun(const BenchRun& r) {
  fmt::print("cpu destruction (hit + update, first hull)  median {:.4f} ms\n", median(r.cpu_hit));
  fmt::print("cpu frame inputs (params, host-lit splats)   median {:.4f} ms\n", median(r.cpu_build));
  fmt::print("gpu before preprocess (hull passes, uploads) median {:.4f} ms\n", median(r.gpu_before));
  fmt::print("gpu frame without readback                   median {:.4f} ms\n", median(r.gpu_total));
  fmt::print(
      "  of it: preprocess {:.4f}, binning {:.4f}, tile sort {:.4f}, raster {:.4f} ms ({} splats, {} "
      "visible, "
      "{} tile pairs)\n",
      median(r.gpu_pre), median(r.gpu_bin), median(r.gpu_sort), median(r.gpu_raster), r.splats, r.visible,
      r.pairs);
}

// A run's medians as a JSON object.
std::string benchRunJson(const BenchRun& r) {
  return fmt::format(
      "{{\"cpu_hit\": {:.4f}, \"cpu_frame_inputs\": {:.4f}, \"gpu_before_preprocess\": {:.4f}, "
      "\"gpu_frame_without_readback\": {:.4f}, \"preprocess\": {:.4f}, \"binning\": {:.4f}, \"tile_sort\": "
      "{:.4f}, \"raster\": {:.4f}}}",
      median(r.cpu_hit), median(r.cpu_build), median(r.gpu_before), median(r.gpu_total), median(r.gpu_pre),
      median(r.gpu_bin), median(r.gpu_sort), median(r.gpu_raster));
}

// `hull bench`: N hulls in a grid on the Vulkan frame; live (the default: every effect on and a hit per frame
// on the first, unless --idle) or static in baked / sorted mode. CPU time of the destruction and of building
// the frame inputs, GPU time of the frame; with --lod-sweep the same at N splat budgets K.
int runBench(const HullCommand::Options& o) {
  checkBenchOptions(o);
  const bool live = o.bench_mode == "live";
  const bool idle = o.idle || !live;  // static hulls take no hits and no effects
  const hull::HullLod lod = hull::parseHullLod(o.lod);
  auto asset = hull::HullAsset::load(o.input);
  FrameDriverOptions fo;
  fo.backend = Backend::kVulkan;
  fo.device = o.play.device;
  FrameDriver driver(fo);
  VulkanRenderer& vk = *driver.vulkan();
  HullCrowd crowd = buildCrowd(o, asset, lod, live);
  const float extent = 0.9f * static_cast<float>(crowd.side) + 0.8f;
  const Camera cam =
      lookAtCamera(Vec3{0, 1.1f, 1.2f} * (extent * 1.6f), {0, 0, 0}, {0, 1, 0}, 45.0f, o.width, o.height);
  const size_t pool = live ? crowd.hulls[0]->destruction().slots().size() - asset->hull.size() : 0;
  const LodRange k = lodRange(crowd.scene, lod, *asset, cam);
  fmt::print(
      stderr, "  {}\n",
      fmt::format("hull bench: {} hulls of {} splats (+{} pool slots) at {}x{} on {}, {} frames, {}, lod {}",
                  o.hulls, asset->hull.size(), pool, o.width, o.height, vk.device().name, o.frames,
                  !live                      ? "static " + o.bench_mode + " hulls"
                  : idle                     ? "effects off, no hits"
                  : o.bench_effects == "all" ? "effects all on, a hit per frame on the first hull"
                                             : "effects off, a hit per frame on the first hull",
                  hull::hullLodName(lod)) +
          (live ? fmt::format(", live core {}", o.live_core == "both" ? "mesh, then sorted" : o.live_core)
                : "") +
          (lod.mode == hull::HullLod::Mode::kAuto
               ? fmt::format(" (K per hull {}..{}, {} splats in all)", k.k_min, k.k_max, k.k_sum)
               : ""));

  const BenchFrames frames{driver, crowd, cam, idle, o.back_to_back, o.submissions, o.bench_effects == "all"};
  const BenchRun r = frames.run(o.frames);
  fmt::print("hulls {}  splats per hull {}  frames {}  events {}\n", o.hulls, asset->hull.size(), o.frames,
             r.events);
  if (live) fmt::print("live core: {}\n", o.live_core == "both" ? "mesh" : o.live_core);
  printBenchRun(r);
  std::string json = fmt::format(
      "{{\n  \"hulls\": {},\n  \"splats_per_hull\": {},\n  \"frames\": {},\n  \"events\": {},\n  \"width\": "
      "{},\n  \"height\": {},\n"
      "  \"device\": \"{}\",\n  \"mode\": \"{}\",\n  \"live_core\": \"{}\",\n  \"lod\": \"{}\",\n  "
      "\"lod_k\": "
      "{{\"min\": {}, \"max\": {}, \"total\": {}}},\n  \"effects\": {},\n  \"splats\": {},\n  \"visible\": "
      "{},\n  "
      "\"tile_pairs\": {},\n  \"median_ms\": {}",
      o.hulls, asset->hull.size(), o.frames, r.events, o.width, o.height, jsonEscape(vk.device().name),
      o.bench_mode, live ? (o.live_core == "both" ? "mesh" : o.live_core) : "none", hull::hullLodName(lod),
      k.k_min, k.k_max, k.k_sum, idle || o.bench_effects != "all" ? "false" : "true", r.splats, r.visible,
      r.pairs, benchRunJson(r));
  if (o.back_to_back > 0) json += benchBackToBack(o, frames, r.t);
  if (o.tile_stats) printTileStats(vk.readDebug(), r.splats);
  if (live && o.live_core == "both") {
    // The same frames from the undamaged hulls, every slot through the global sort.
    for (SceneObject& obj : crowd.scene.objects) obj.as<HullObject>()->live_core = hull::LiveCore::kSorted;
    for (const auto& h : crowd.hulls) h->resetDestruction();
    const BenchRun sorted = frames.run(o.frames);
    fmt::print("live core: sorted\n");
    printBenchRun(sorted);
    const std::string sorted_back_to_back =
        o.back_to_back > 0 ? benchBackToBack(o, frames, sorted.t, "live_core_sorted_back_to_back") : "";
    const double mesh_ms = median(r.gpu_total), sorted_ms = median(sorted.gpu_total);
    fmt::print(
        "live core mesh against sorted: gpu frame {:.4f} against {:.4f} ms ({:+.1f}%), visible splats {} "
        "against {} ({:+.1f}%), tile pairs {} against {}, cpu frame inputs {:.4f} against {:.4f} ms\n",
        mesh_ms, sorted_ms, sorted_ms > 0 ? 100.0 * (mesh_ms - sorted_ms) / sorted_ms : 0.0, r.visible,
        sorted.visible,
        sorted.visible > 0 ? 100.0 * (static_cast<double>(r.visible) - static_cast<double>(sorted.visible)) /
                                 static_cast<double>(sorted.visible)
                           : 0.0,
        r.pairs, sorted.pairs, median(r.cpu_build), median(sorted.cpu_build));
    json += fmt::format(
        ",\n  \"live_core_sorted\": {{\"events\": {}, \"splats\": {}, \"visible\": {}, \"tile_pairs\": {}, "
        "\"median_ms\": {}}}",
        sorted.events, sorted.splats, sorted.visible, sorted.pairs, benchRunJson(sorted));
    json += sorted_back_to_back;
  }
  if (o.lod_sweep > 0) json += benchLodSweep(o, frames, crowd, asset->hull.size(), idle);
  json += "\n}\n";
  emitJson(json, false, o.json_out);
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
      case Options::Action::kInfo:
        return runInfo(*options_);
      case Options::Action::kBench:
        return runBench(*options_);
      case Options::Action::kPlay: {
        AnimateOptions a = options_->play;
        if (options_->seed_given) a.seed = options_->seed;
        if (a.duration_given) a.duration = options_->duration;
        a.default_background = kHullPlayBackground;
        a.command = command;
        return runAnimate(a);
      }
      case Options::Action::kBake:
        break;
    }
    return runBake(*options_);
  } catch (const std::exception& e) {
    return reportFailure(command, e);
  }
}

}  // namespace sf::cli
