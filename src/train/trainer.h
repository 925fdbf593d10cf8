// Budgeted gaussian training (the destructible-hull article's trainer, docs/training.md): exactly N gaussians
// fitted to the views of a dataset with the MCMC strategy (Kheradmand et al. 2024, "3D Gaussian Splatting as
// Markov Chain Monte Carlo"): dead gaussians are relocated onto live ones instead of cloned, so the count
// never exceeds the budget. Forward and backward are the rasterizer of train/raster_grad.h.
//
// Per step: one random train view, a random grey background (the article's anti-floater: a splat off the
// silhouette costs RGB error in every view), loss = L1(rgb) + 0.3 L1(alpha) [+ the annealed entropy term
// o(1 - o) over the last 40% of the steps], Adam per parameter group, then the MCMC step (relocation every
// `refine_every` steps from `refine_start` to steps - 1000, and position noise on low-opacity gaussians).
// A run is reproducible for a seed (one backend, any thread count). Both backends draw the views, backgrounds
// and relocations from one generator, so they see the same steps; they differ in rounding and in the position
// noise's generator.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "hull/mesh_query.h"
#include "train/dataset.h"
#include "train/raster_grad.h"

namespace sf {
class GltfModel;
}

namespace sf::train {

// Where the gaussians start: points on the object's surface (or inside its visual hull) with a display
// colour and, optionally, a normal (the initial rotation puts the local z axis on it).
struct InitialPoints {
  std::vector<Vec3> positions, normals, colors;
};

struct ValidationImages;

// The most training steps one Vulkan submission records (the renderer's frames per submission).
inline constexpr int kMaxStepsPerSubmission = 64;

struct TrainOptions {
  size_t budget = 6000;  // the number of gaussians, never exceeded
  int steps = 6000;
  uint32_t seed = 1;
  float alpha_weight = 0.3f;      // weight of the alpha L1
  float entropy = 0.0f;           // weight of the opacity entropy term, annealed over the last 40% of steps
  bool random_background = true;  // false: black, for comparison
  // MCMC strategy (gsplat's MCMCStrategy defaults, the article's refine window).
  int refine_start = 500;
  int refine_stop = -1;  // -1: steps - 1000
  int refine_every = 100;
  float min_opacity = 0.005f;  // gaussians at or below this opacity are dead
  float noise_lr = 5e5f;       // position noise scale, times the current means learning rate
  // Adam learning rates per group (3DGS rates; the means' rates are in units of the scene extent and decay
  // exponentially to lr_means_final).
  float lr_means = 1.6e-4f, lr_means_final = 1.6e-6f;
  float scene_extent = 0;  // 0: 1.1 x the largest distance of a train camera from their centroid (3DGS)
  float lr_quats = 1e-3f, lr_scales = 5e-3f, lr_opacities = 5e-2f, lr_colors = 2.5e-3f;
  float init_log_scale = -3.50655789f;  // ln 0.03
  float quat_noise = 0.01f;
  int log_every = 100;  // a log entry (loss, live count, opacity histogram) every this many steps
  // Validation L1/PSNR/SSIM every this many steps (0: at the start and the end only); a multiple of
  // log_every, since a validation is recorded on its step's log entry.
  int validate_every = 0;
  Vec3 validation_background{1, 1, 1};
  // Called at every validation of the val views (step 0 before the first step, every validate_every steps,
  // the last step) with their score and the renders of their first `validation_image_views` views; unset, no
  // render is kept.
  std::function<void(const ValidationImages&)> on_validation;
  size_t validation_image_views = 4;
  // Vulkan: steps recorded in one submission (1..64; a batch also ends at a relocation or a log entry). The
  // result does not depend on it, unless a step's tile keys overflow the renderer's buffers: that step is
  // then taken again after its batch.
  int steps_per_submission = kMaxStepsPerSubmission;
  std::function<void(int step, int steps, double loss, size_t live)> progress;  // every log entry

  // Empty when usable; otherwise the first bad option and why.
  std::string validate() const;
};

// One line of the training log.
struct TrainLogEntry {
  int step = 0;
  double loss =
      0;  // the photometric loss (the entropy term left out), mean over the steps since the previous entry
  size_t live = 0;                                   // gaussians above min_opacity
  size_t relocated = 0;                              // relocated since the previous entry
  std::array<uint32_t, 10> opacity_histogram{};      // opacities in tenths
  double val_l1 = -1, val_psnr = -1, val_ssim = -1;  // when validated at this step
};

struct ValidationScore {
  double l1 = 0;    // mean |rgb - target| over the views, composited over the validation background
  double psnr = 0;  // of rgb over the same (the mean squared error over every value of every view)
  // The mean over the views of each view's SSIM (core/image.h: 11x11 Gaussian window, 'valid' positions).
  double ssim = 0;
  size_t views = 0;
};

// What a validation of the val views hands to TrainOptions::on_validation.
struct ValidationImages {
  int step = 0;                              // 0: before the first step
  const std::vector<View>* views = nullptr;  // the val views (the test views when the dataset has none)
  // The renders of the first views (at most validation_image_views), in order: RGB over the validation
  // background, 3 floats per pixel; the ground truth is each view's RGBA composited over the same.
  std::vector<std::vector<float>> rgb;
  ValidationScore score;
};

struct TrainResult {
  GaussianParams params;
  std::vector<TrainLogEntry> log;
  ValidationScore initial, final;            // on the validation views (the test views when there are none)
  ValidationScore test_initial, test_final;  // on the test views (when the dataset has them)
  double seconds = 0;
  double forward_ms = 0, backward_ms = 0, optimizer_ms = 0;  // per step, mean
  // The GPU trainer's step split by pass (mean ms per step, from GPU timestamps, in order: the frame's
  // passes, then the tail's: loss, raster backward, the rest). Empty on the CPU.
  std::vector<std::pair<const char*, double>> gpu_pass_ms;
  double validation_seconds = 0;  // of `seconds`: scoring the validation and test views
  double step_seconds =
      0;  // of `seconds`, the GPU trainer: recording, running and waiting for the steps' submissions
  size_t relocated = 0;
};

// Builds the initial parameters: `budget` gaussians at the points (cycled when there are fewer; an error
// when there are none), log-scale init_log_scale, opacity logit 0, colour logit of the point's colour
// (clamped into [0.02, 0.98]), rotation from the normal plus noise, all deterministic for the seed.
GaussianParams initialParams(const InitialPoints& points, const TrainOptions& options);

// Points inside the visual hull of a dataset (for a dataset without its mesh): uniform samples of the 1.6
// cube kept when their projection lands on alpha >= 0.5 in every train view that sees them, coloured by
// the mean of those pixels. Throws sf::Error when none are found.
InitialPoints visualHullPoints(const Dataset& dataset, size_t count, uint32_t seed);

// Trains from `init` against `dataset.train`. Throws sf::Error on an empty dataset, a bad option or
// non-finite parameters (with the step).
TrainResult trainGaussians(const Dataset& dataset, GaussianParams init, const TrainOptions& options);

// 1.1 x the largest distance of a train camera from the cameras' centroid (3DGS's camera extent, the unit of
// the means' learning rate); 1 when that is zero.
float sceneExtent(const Dataset& dataset);
// The opacities in tenths (the log's histogram), and the gaussians above min_opacity.
std::array<uint32_t, 10> opacityHistogram(const GaussianParams& params);
size_t liveCount(const GaussianParams& params, float min_opacity);
// Throws sf::Error naming the step when a parameter is not finite.
void checkFiniteParams(const GaussianParams& params, int step);

// Validation score of parameters over views (rendered by the CPU forward).
ValidationScore validate(const GaussianParams& params, const std::vector<View>& views, Vec3 background);
// The score's sums, view by view, for any renderer: `rgb` holds `channels` floats per pixel (RGB first) of
// the view's render over `background`; the target is the view's RGBA composited over the same background. The
// renders of the first `keep_renders` views are kept (RGB, 3 floats per pixel) in `renders`.
struct ValidationSums {
  double l1 = 0, se = 0, ssim = 0;
  size_t values = 0, views = 0;
  size_t keep_renders = 0;
  std::vector<std::vector<float>> renders;
  void add(const View& view, const float* rgb, int channels, Vec3 background);
  ValidationScore score() const;
};
// A validation of the val views at `step`, for both trainers: `render` adds every view to the sums it is
// given (with the renders kept that options.on_validation wants), which is then called.
ValidationScore validationAt(int step, const std::vector<View>& views, const TrainOptions& options,
                             const std::function<void(ValidationSums&)>& render);

// The MCMC relocation step, exposed for tests: gaussians with opacity <= min_opacity take the parameters of
// live ones sampled in proportion to opacity; each sampled source and its copies share the source's
// opacity o as 1 - (1 - o)^(1/(k+1)) and scale its covariance by the paper's binomial correction (k copies).
// The Adam moments of every touched gaussian are reset through `reset` (called with the index). Returns
// the number relocated. Deterministic for the generator state.
size_t relocateDead(GaussianParams& params, float min_opacity, uint64_t& rng_state,
                    const std::function<void(size_t)>& reset);

// The paper's relocation correction for a gaussian of opacity o split into n copies (n >= 1): the new opacity
// 1 - (1 - o)^(1/n) and the factor on its scales.
std::pair<float, float> relocationCorrection(float opacity, int n);

struct ViewsOptions;  // train/views.h

// The whole path for a glTF model, in process (what `train --mesh`, `hull bake --train` and `character build
// --train` run): the views rendered in memory (renderViews), `options.budget` surface samples (sampleSurface,
// seeded by options.seed), initialParams, trainGaussians. The result is in the dataset's normalised frame;
// p_dataset = p_source * scale + offset takes the model's own frame there (toSourceFrame goes back).
struct MeshTrainResult {
  TrainResult train;
  float scale = 1;
  Vec3 offset{0, 0, 0};
  size_t train_views = 0, val_views = 0;
  // The training views' cameras and coverage (alpha above 1/255), for the bake's floater pass over them
  // (hull/mesh_query.h sign 4): one byte per pixel, a quarter of the views' alpha.
  std::vector<hull::CoverageView> coverage;
};

// The coverage of views (alpha above 1/255) with their pinholes, as the floater pass takes them.
std::vector<hull::CoverageView> coverageOf(std::span<const View> views);
// The trainer a caller runs (trainGaussians on the CPU, or trainGaussiansVulkan bound to a renderer).
using TrainFunction = std::function<TrainResult(const Dataset&, GaussianParams, const TrainOptions&)>;
MeshTrainResult trainFromMesh(const std::string& model_path, const ViewsOptions& views,
                              const TrainOptions& options, const TrainFunction& train = trainGaussians);

// A cloud of the dataset's normalised frame in the source model's frame: positions (p - offset) / scale,
// scales / scale.
GaussianCloud toSourceFrame(GaussianCloud cloud, float scale, Vec3 offset);

// A cloud in a glTF model's frame at its rest pose (toSourceFrame of a trainFromMesh result) in the bind
// space of one of its draws (the space of the primitive's own vertex positions, which character bindings
// index): the affine map taking the primitive's vertices to their rest-pose positions is fitted by least
// squares and inverted on centres and covariances. Throws sf::Error naming the model when the rest pose is
// not an affine image of the bind pose (residual over 1e-3 of the mesh's extent).
GaussianCloud restToBindSpace(const GltfModel& model, int draw, GaussianCloud cloud);

// The training log as JSON lines (one object per entry) and a summary object.
std::string trainLogJson(const TrainResult& result, const TrainOptions& options);

}  // namespace sf::train
