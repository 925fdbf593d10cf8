#include "train_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "core/error.h"
#include "gpu/gpu.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/image_io.h"
#include "render/vulkan_renderer.h"
#include "train/dataset.h"
#include "train/gpu_trainer.h"
#include "train/plot.h"
#include "train/trainer.h"
#include "train/views.h"

namespace sf::cli {

train::TrainFunction trainerFor(const std::string& backend, const std::string& device,
                                std::unique_ptr<VulkanRenderer>& holder) {
  if (backend != "auto" && backend != "cpu" && backend != "vulkan")
    throw Error("--backend must be auto, cpu or vulkan, got '" + backend + "'");
  if (backend == "cpu") return train::trainGaussians;
  if (backend == "auto" && !gpu::vulkanAvailable()) {
    fmt::print(stderr, "  training on the CPU (no Vulkan device)\n");
    return train::trainGaussians;
  }
  gpu::ContextOptions co;
  co.device = device;
  holder = std::make_unique<VulkanRenderer>(co);
  if (std::string why = train::gpuTrainingUnsupported(*holder); !why.empty()) {
    if (backend == "vulkan") throw Error(why);
    fmt::print(stderr, "  training on the CPU ({})\n", why);
    holder.reset();
    return train::trainGaussians;
  }
  fmt::print(stderr, "  training on {} (Vulkan)\n", holder->device().name);
  VulkanRenderer* r = holder.get();
  return [r](const train::Dataset& ds, train::GaussianParams init, const train::TrainOptions& o) {
    return train::trainGaussiansVulkan(*r, ds, std::move(init), o);
  };
}

namespace {

// A progress line: a bar on a terminal, a line per tenth of the run otherwise.
void printProgress(int step, int steps, double loss, size_t live, std::chrono::steady_clock::time_point t0) {
  static int last_decile = -1;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double eta = step > 0 ? s / step * (steps - step) : 0;
  const int filled = steps ? step * 30 / steps : 30;
  const std::string line = fmt::format(
      "  [{}{}] step {}/{}  loss {:.5f}  live {}  {:.1f} steps/s  eta {:.1f} s", std::string(filled, '#'),
      std::string(30 - filled, '.'), step, steps, loss, live, s > 0 ? step / s : 0.0, eta);
  if (isatty(2)) {
    fmt::print(stderr, "\r{}{}", line, step == steps ? "\n" : "");
  } else if (step == steps || step * 10 / steps != last_decile) {
    fmt::print(stderr, "{}\n", line);
    last_decile = step * 10 / steps;
  }
}

// The plot beside a log, of its name: `<name>.plot.png` for `<name>.log.jsonl`, else the log's extension
// replaced.
std::string plotPathFor(const std::string& log) {
  const std::string suffix = ".log.jsonl";
  if (log.size() > suffix.size() && log.compare(log.size() - suffix.size(), suffix.size(), suffix) == 0)
    return log.substr(0, log.size() - suffix.size()) + ".plot.png";
  return std::filesystem::path(log).replace_extension(".plot.png").string();
}

// `train --plot LOG`: the plot of an existing log, nothing trained. The log is read whole before anything is
// written, so a malformed one leaves no file.
int runPlot(const TrainCommand::Options& o) {
  if (!o.mesh.empty() || !o.dataset.empty() || !o.log.empty() || !o.val_images.empty())
    throw UsageError(
        "--plot draws an existing log and trains nothing: it takes no --mesh, --dataset, --log "
        "or --val-images");
  const std::string out = o.output.empty() ? plotPathFor(o.plot) : o.output;
  if (fileExtension(out) != ".png")
    throw UsageError("-o " + out + ": expected a .png path (--plot writes a PNG)");
  std::error_code ec;
  if (std::filesystem::equivalent(out, o.plot, ec))
    throw UsageError("-o " + out + ": is the log itself; write the plot elsewhere");
  const train::TrainCurves curves = train::readTrainLog(o.plot);
  const train::TrainPlot plot = train::plotTraining(curves);
  writePng(out, plot.image);
  if (o.json) {
    fmt::print(
        "{{\"plot\": \"{}\", \"log\": \"{}\", \"width\": {}, \"height\": {}, \"steps\": {}, \"entries\": {}, "
        "\"validations\": {}, \"ssim\": {}}}\n",
        jsonEscape(out), jsonEscape(o.plot), plot.image.width, plot.image.height, curves.steps,
        curves.loss.size(), curves.validation.size(), plot.has_ssim ? "true" : "false");
    return 0;
  }
  fmt::print("wrote {} ({}x{}: {} log entr{} and {} validation{} over {} steps{})\n", out, plot.image.width,
             plot.image.height, curves.loss.size(), curves.loss.size() == 1 ? "y" : "ies",
             curves.validation.size(), curves.validation.size() == 1 ? "" : "s", curves.steps,
             curves.validation.empty() || plot.has_ssim ? "" : "; the log has no SSIM");
  return 0;
}

int runTrain(const TrainCommand::Options& o) {
  if (!o.plot.empty()) return runPlot(o);
  if (o.mesh.empty() == o.dataset.empty())
    throw UsageError("give exactly one of --mesh M.glb and --dataset DIR");
  if (o.output.empty()) throw UsageError("-o/--output is required: the trained cloud's file");
  // A validation is recorded on its step's log entry: without --log-every, the log follows --val-every.
  int log_every = o.log_every;
  if (log_every == 0) {
    log_every = 100;
    if (o.val_every > 0)
      while (o.val_every % log_every != 0) --log_every;
  }
  if (o.val_every % log_every != 0)
    throw UsageError(
        fmt::format("--val-every {} must be a multiple of --log-every {} (a validation is recorded on "
                    "its step's log entry)",
                    o.val_every, log_every));
  if (!o.val_images.empty()) makeOutputFolder(o.val_images);
  const auto t0 = std::chrono::steady_clock::now();
  train::TrainOptions to;
  to.budget = o.budget;
  to.steps = o.steps;
  to.seed = o.seed;
  to.entropy = o.entropy;
  to.steps_per_submission = o.steps_per_submission;
  to.random_background = !o.black_background;
  to.log_every = log_every;
  to.validate_every = o.val_every;
  const auto t_train = std::chrono::steady_clock::now();
  to.progress = [&](int step, int steps, double loss, size_t live) {
    printProgress(step, steps, loss, live, t_train);
  };
  // Every validation: a line on stderr for those inside the run (the first and the last are printed at the
  // end), and with --val-images its sheet of renders beside the ground truth.
  to.validation_image_views = o.val_images.empty() ? 0 : 4;
  to.on_validation = [&](const train::ValidationImages& v) {
    if (v.step > 0 && v.step < o.steps)
      fmt::print(stderr, "{}  step {}: validation L1 {:.5f}, PSNR {:.2f} dB, SSIM {:.4f}\n",
                 isatty(2) ? "\r\033[K" : "", v.step, v.score.l1, v.score.psnr, v.score.ssim);
    if (o.val_images.empty()) return;
    const ImageRGBA sheet = train::validationSheet(v, to.validation_background);
    if (sheet.width > 0)
      writePng((std::filesystem::path(o.val_images) / fmt::format("step_{:06d}.png", v.step)).string(),
               sheet);
  };
  std::unique_ptr<VulkanRenderer> renderer;
  const train::TrainFunction trainer = trainerFor(o.backend, o.device, renderer);
  train::TrainResult r;
  bool gltf_axes = true;  // the dataset frame is glTF's (a mesh's views, or a folder `views` wrote)
  if (!o.mesh.empty()) {
    train::ViewsOptions vo;
    vo.train_count = o.views;
    vo.size = o.size;
    vo.lighting = train::parseLighting(o.lighting);
    vo.clip = o.clip;
    vo.time = o.time;
    vo.seed = o.seed;
    fmt::print(
        stderr,
        "rendering {} train views of {} at {}x{} ({}), then training {} gaussians for {} steps (seed {})\n",
        vo.train_count, o.mesh, vo.size, vo.size, o.lighting, o.budget, o.steps, o.seed);
    r = train::trainFromMesh(o.mesh, vo, to, trainer).train;
  } else {
    const train::Dataset ds = train::readNerfSynthetic(o.dataset, o.size);
    if (ds.train.empty()) throw Error(o.dataset + ": no train views");
    gltf_axes = ds.gltf_axes;
    fmt::print(stderr,
               "read {}: {} train, {} val, {} test views at {}x{}; {} gaussians from its visual hull, {} "
               "steps (seed {})\n",
               o.dataset, ds.train.size(), ds.val.size(), ds.test.size(), ds.train[0].camera.width,
               ds.train[0].camera.height, o.budget, o.steps, o.seed);
    r = trainer(ds, train::initialParams(train::visualHullPoints(ds, o.budget, o.seed), to), to);
  }
  // The cloud in the dataset's frame: INRIA PLY with the colour as the SH DC term. A glTF-axes frame (+y up)
  // is turned to the PLY frame (y down), so the file opens upright here and in other splat tools, as a
  // capture does; a foreign dataset's frame is written as it is.
  GaussianCloud cloud = train::toCloud(r.params);
  if (gltf_axes) changeAxes(cloud, gltfToPlyAxes());
  saveSplats(cloud, o.output);
  const std::string log_path =
      o.log.empty() ? std::filesystem::path(o.output).replace_extension(".log.jsonl").string() : o.log;
  const std::string log = train::trainLogJson(r, to);
  writeFileAtomic(log_path,
                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(log.data()), log.size()));
  // The plot is drawn from the log's text, so `train --plot` on the log draws the same picture.
  const std::string plot_path = std::filesystem::path(o.output).replace_extension(".plot.png").string();
  writePng(plot_path, train::plotTraining(train::parseTrainLog(log, log_path)).image);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.json) {
    fmt::print("{}", log.substr(log.rfind('\n', log.size() - 2) + 1));
    return 0;
  }
  fmt::print(
      "wrote {} ({} gaussians; {}), {} and {}\n", o.output, cloud.size(),
      gltf_axes ? "turned from the dataset's y-up frame to the PLY frame, y down" : "in the dataset's frame",
      log_path, plot_path);
  if (!o.val_images.empty() && r.final.views)
    fmt::print("validation images: {}/step_NNNNNN.png, {} of them\n", o.val_images,
               2 + (o.val_every > 0 ? (o.steps - 1) / o.val_every : 0));
  if (r.final.views)
    fmt::print(
        "validation ({} views, white background): L1 {:.5f} -> {:.5f}, PSNR {:.2f} -> {:.2f} dB, "
        "SSIM {:.4f} -> {:.4f}\n",
        r.final.views, r.initial.l1, r.final.l1, r.initial.psnr, r.final.psnr, r.initial.ssim, r.final.ssim);
  if (r.test_final.views)
    fmt::print(
        "test ({} views, white background): PSNR against the mesh renders {:.2f} dB for the sampled cloud "
        "-> {:.2f} dB trained, SSIM {:.4f} -> {:.4f}\n",
        r.test_final.views, r.test_initial.psnr, r.test_final.psnr, r.test_initial.ssim, r.test_final.ssim);
  if (renderer) {
    fmt::print(
        "time: {:.2f} s training (GPU per step: {:.3f} ms the frame, {:.3f} ms backward + noise + Adam; "
        "{:.2f} s of it validation), {:.2f} s in all; {} relocated\n",
        r.seconds, r.forward_ms, r.backward_ms, r.validation_seconds, total, r.relocated);
    std::string split;
    for (const auto& [name, ms] : r.gpu_pass_ms)
      split += fmt::format("{}{} {:.3f}", split.empty() ? "" : ", ", name, ms);
    fmt::print("GPU per step by pass (ms): {}\n", split);
    fmt::print(
        "host: {:.2f} s in the steps' submissions (GPU {:.2f} s of it), {:.2f} s validation, {:.2f} s the "
        "rest (relocation, logging)\n",
        r.step_seconds, (r.forward_ms + r.backward_ms) * (r.log.empty() ? 0 : r.log.back().step) / 1000.0,
        r.validation_seconds, r.seconds - r.step_seconds - r.validation_seconds);
  } else
    fmt::print(
        "time: {:.2f} s training ({:.2f} ms forward, {:.2f} ms backward, {:.2f} ms optimiser per step; "
        "{:.2f} s of it validation), {:.2f} s in all; {} relocated\n",
        r.seconds, r.forward_ms, r.backward_ms, r.optimizer_ms, r.validation_seconds, total, r.relocated);
  return 0;
}

}  // namespace

TrainCommand::~TrainCommand() = default;

int TrainCommand::run() const {
  try {
    return runTrain(*options_);
  } catch (const std::exception& e) {
    return reportFailure("train", e);
  }
}

}  // namespace sf::cli
