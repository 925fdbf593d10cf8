// The budgeted trainer: the MCMC relocation against its closed form and a constructed case, the random
// background against a black one (constructed), determinism, and a tiny run on a Khronos sample rendered by
// the engine's own views.
#include "train/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <span>

#include "core/image.h"
#include "hull/source_mesh.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/image_io.h"
#include "support/test_support.h"
#include "train/plot.h"
#include "train/train_test_support.h"
#include "train/views.h"

namespace sf::train {
namespace {

TEST(Trainer, RelocationCorrectionIsThePapersClosedForm) {
  // One copy: unchanged.
  auto [o1, f1] = relocationCorrection(0.7f, 1);
  EXPECT_FLOAT_EQ(o1, 0.7f);
  EXPECT_FLOAT_EQ(f1, 1.0f);
  // Two copies: o' = 1 - sqrt(1 - o); the scale factor o / (2 o' - o'^2 / sqrt 2) (sum over i = 1, 2 of
  // sum_k C(i-1, k) (-1)^k o'^(k+1) / sqrt(k+1)).
  const double o = 0.6, op = 1.0 - std::sqrt(1.0 - o);
  auto [o2, f2] = relocationCorrection(static_cast<float>(o), 2);
  EXPECT_NEAR(o2, op, 1e-6);
  EXPECT_NEAR(f2, o / (2.0 * op - op * op / std::sqrt(2.0)), 1e-5);
  // Two copies composite to the source's opacity: 1 - (1 - o')^2 = o.
  EXPECT_NEAR(1.0 - (1.0 - o2) * (1.0 - o2), o, 1e-6);
}

GaussianParams fourGaussians() {
  GaussianParams p;
  p.resize(4);
  const float opacities[4] = {0.8f, 0.001f, 0.3f, 0.002f};
  for (size_t i = 0; i < 4; ++i) {
    p.means[3 * i] = static_cast<float>(i);
    p.quats[4 * i] = 1.0f;
    p.opacity_logits[i] = logit(opacities[i]);
    for (size_t k = 0; k < 3; ++k)
      p.log_scales[3 * i + k] = std::log(0.1f * static_cast<float>(i + 1)),
                           p.color_logits[3 * i + k] = static_cast<float>(i);
  }
  return p;
}

TEST(Trainer, RelocationMovesDeadGaussiansOntoLiveOnes) {
  GaussianParams p = fourGaussians();
  const GaussianParams before = p;
  uint64_t rng = 42;
  std::set<size_t> reset;
  const size_t moved = relocateDead(p, 0.005f, rng, [&](size_t i) { reset.insert(i); });
  ASSERT_EQ(moved, 2u);
  EXPECT_EQ(p.size(), 4u);
  std::vector<int> copies(4, 0);
  for (size_t dead : {1u, 3u}) {
    // A dead gaussian now sits exactly on a live source (x = 0 or 2) with its parameters.
    const float x = p.means[3 * dead];
    ASSERT_TRUE(x == 0.0f || x == 2.0f) << dead;
    const size_t src = static_cast<size_t>(x);
    ++copies[src];
    EXPECT_EQ(p.log_scales[3 * dead], p.log_scales[3 * src]);
    EXPECT_EQ(p.opacity_logits[dead], p.opacity_logits[src]);
    EXPECT_EQ(p.color_logits[3 * dead], before.color_logits[3 * src]);
    EXPECT_TRUE(reset.count(dead));
  }
  for (size_t src : {0u, 2u}) {
    if (!copies[src]) {
      EXPECT_EQ(p.opacity_logits[src], before.opacity_logits[src]);
      continue;
    }
    // The source shares its opacity with its copies: 1 - (1 - o)^(1/(k+1)), scales by the correction.
    const auto [o_new, factor] = relocationCorrection(opacityOf(before, src), copies[src] + 1);
    EXPECT_NEAR(opacityOf(p, src), o_new, 1e-5);
    EXPECT_NEAR(std::exp(p.log_scales[3 * src]), factor * std::exp(before.log_scales[3 * src]), 1e-5);
    EXPECT_TRUE(reset.count(src));
  }
  // Nothing dead: nothing moves.
  GaussianParams live = fourGaussians();
  live.opacity_logits = {1, 1, 1, 1};
  EXPECT_EQ(relocateDead(live, 0.005f, rng, [](size_t) {}), 0u);
}

// A dataset of one view looking down +z at a target image.
Dataset oneView(const std::vector<float>& rgba, int size) {
  Dataset ds;
  View v;
  v.camera.width = v.camera.height = size;
  v.camera.fx = v.camera.fy = static_cast<float>(size);
  v.camera.cx = v.camera.cy = 0.5f * static_cast<float>(size);
  v.rgba = rgba;
  v.name = "train/r_000";
  ds.train.push_back(v);
  return ds;
}

// The article's anti-floater: a black splat off the silhouette of an empty target costs nothing over black
// (colour black over black, alpha loss off to isolate the RGB term), so it stays; over a random grey
// background it costs RGB error every step and its opacity falls.
TEST(Trainer, RandomBackgroundRemovesAnOffSilhouetteSplatThatBlackKeeps) {
  const int size = 32;
  const Dataset ds = oneView(std::vector<float>(static_cast<size_t>(size * size * 4), 0.0f), size);
  GaussianParams p;
  p.resize(1);
  p.means = {0, 0, 3};
  p.quats = {1, 0, 0, 0};
  p.log_scales = {std::log(0.2f), std::log(0.2f), std::log(0.2f)};
  p.opacity_logits = {logit(0.6f)};
  p.color_logits = {-120, -120, -120};  // sigmoid(-120) is 0 in float: exactly black
  TrainOptions o;
  o.budget = 1;
  o.steps = 200;
  o.alpha_weight = 0.0f;
  o.refine_start = 1000000;  // no relocation: watch the one splat
  o.noise_lr = 0.0f;
  o.random_background = false;
  const TrainResult black = trainGaussians(ds, p, o);
  o.random_background = true;
  const TrainResult grey = trainGaussians(ds, p, o);
  const float kept = opacityOf(black.params, 0), removed = opacityOf(grey.params, 0);
  EXPECT_GT(kept, 0.55f) << "over black the splat costs nothing";
  EXPECT_LT(removed, 0.05f) << "over a random grey it is driven out";
}

// A teacher cloud rendered from a ring of cameras is the target; a student started from perturbed
// positions learns it back. Small enough for every build.
Dataset teacherDataset(const GaussianParams& teacher, int views, int size) {
  Dataset ds;
  for (int v = 0; v < views; ++v) {
    const float az = 6.2831853f * static_cast<float>(v) / static_cast<float>(views);
    View view;
    view.camera =
        lookAtCamera(Vec3{std::sin(az), 0.4f, std::cos(az)} * 3.0f, {0, 0, 0}, {0, -1, 0}, 40.0f, size, size);
    RasterState st;
    rasterForward(teacher, view.camera, {0, 0, 0}, st);
    view.rgba.resize(static_cast<size_t>(size * size * 4));
    for (size_t pix = 0; pix < st.alpha.size(); ++pix) {
      for (size_t k = 0; k < 3; ++k)
        view.rgba[4 * pix + k] = st.rgb[3 * pix + k];  // over black: premultiplied
      view.rgba[4 * pix + 3] = st.alpha[pix];
    }
    view.name = "train/r_" + std::to_string(v);
    (v % 4 == 3 ? ds.val : ds.train).push_back(std::move(view));
  }
  return ds;
}

GaussianParams teacherCloud(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  InitialPoints pts;
  for (size_t i = 0; i < n; ++i) {
    pts.positions.push_back(Vec3{u(rng), u(rng), u(rng)} * 0.5f);
    pts.colors.push_back(Vec3{0.5f + 0.4f * u(rng), 0.5f + 0.4f * u(rng), 0.5f + 0.4f * u(rng)});
  }
  TrainOptions o;
  o.budget = n;
  o.init_log_scale = std::log(0.08f);
  GaussianParams p = initialParams(pts, o);
  for (float& l : p.opacity_logits) l = 2.0f;
  return p;
}

TEST(Trainer, RunsAreReproducibleForASeedAndDifferForAnother) {
  const GaussianParams teacher = teacherCloud(40, 1);
  const Dataset ds = teacherDataset(teacher, 8, 24);
  InitialPoints pts;
  for (size_t i = 0; i < 30; ++i)
    pts.positions.push_back(meanOf(teacher, i) + Vec3{0.05f, -0.03f, 0.02f}),
        pts.colors.push_back({0.5f, 0.5f, 0.5f});
  TrainOptions o;
  o.budget = 30;
  o.steps = 60;
  o.refine_start = 20;
  o.refine_every = 20;
  o.refine_stop = 60;
  const TrainResult a = trainGaussians(ds, initialParams(pts, o), o);
  const TrainResult b = trainGaussians(ds, initialParams(pts, o), o);
  EXPECT_EQ(a.params.means, b.params.means);
  EXPECT_EQ(a.params.opacity_logits, b.params.opacity_logits);
  o.seed = 2;
  const TrainResult c = trainGaussians(ds, initialParams(pts, o), o);
  EXPECT_NE(a.params.means, c.params.means);
}

// Validation at step 0, every validate_every steps and the last: the score (SSIM too) on the log entry, the
// renders of the first validation_image_views val views handed to on_validation, which score as they should:
// the kept render against its view over the background gives the score's SSIM for a single view.
TEST(Trainer, ValidationsRecordSsimAndHandOverTheirRenders) {
  const GaussianParams teacher = teacherCloud(40, 1);
  const Dataset ds = teacherDataset(teacher, 12, 24);  // 9 train, 3 val views
  ASSERT_EQ(ds.val.size(), 3u);
  InitialPoints pts;
  for (size_t i = 0; i < 30; ++i) {
    pts.positions.push_back(meanOf(teacher, i) + Vec3{0.05f, -0.03f, 0.02f});
    pts.colors.push_back({0.5f, 0.5f, 0.5f});
  }
  TrainOptions o;
  o.budget = 30;
  o.steps = 50;
  o.log_every = 10;
  o.validate_every = 20;
  o.validation_image_views = 2;
  std::vector<int> steps;
  std::vector<ValidationImages> seen;
  o.on_validation = [&](const ValidationImages& v) {
    steps.push_back(v.step);
    seen.push_back(v);
  };
  const TrainResult r = trainGaussians(ds, initialParams(pts, o), o);
  EXPECT_EQ(steps, (std::vector<int>{0, 20, 40, 50}));
  for (const ValidationImages& v : seen) {
    EXPECT_EQ(v.views, &ds.val);
    ASSERT_EQ(v.rgb.size(), 2u);
    EXPECT_EQ(v.rgb[0].size(), 24u * 24u * 3u);
    EXPECT_GT(v.score.ssim, 0.0);
    EXPECT_LE(v.score.ssim, 1.0);
  }
  EXPECT_EQ(seen.front().score.ssim, r.initial.ssim);
  EXPECT_EQ(seen.back().score.ssim, r.final.ssim);
  for (const TrainLogEntry& e : r.log) {
    const bool validated = e.step == 20 || e.step == 40 || e.step == 50;
    EXPECT_EQ(e.val_ssim >= 0, validated) << "step " << e.step;
    EXPECT_EQ(e.val_psnr >= 0, validated) << "step " << e.step;
  }
  EXPECT_EQ(r.log.back().val_ssim, r.final.ssim);
  // One view scored alone: its SSIM is ssim(render, view over the background).
  const View& v0 = ds.val[0];
  std::vector<float> target(24 * 24 * 3);
  for (size_t p = 0; p < 24 * 24; ++p)
    for (size_t k = 0; k < 3; ++k)
      target[3 * p + k] =
          v0.rgba[4 * p + k] + (1 - v0.rgba[4 * p + 3]) * o.validation_background[static_cast<int>(k)];
  const ValidationScore one = validate(r.params, {v0}, o.validation_background);
  EXPECT_DOUBLE_EQ(one.ssim, ssim(seen.back().rgb[0].data(), 3, target.data(), 3, 24, 24));
  // validate_every must fall on log entries.
  o.validate_every = 25;
  EXPECT_NE(o.validate().find("multiple of log_every"), std::string::npos) << o.validate();
}

// The tiny run: 300 splats, 64x64 views, 300 steps on the Khronos box rendered by `views`:
// validation L1 falls at least 5x from the sampled cloud, and the count never exceeds the budget.
TEST(Trainer, TinyRunOnTheKhronosBoxCutsValidationL1FiveFold) {
  SF_REQUIRE_ASSET(model, "gltf/box_animated.gltf");
  const test_fixtures::TinyRun t = test_fixtures::tinyRun(model);
  const TrainOptions& o = t.options;
  const TrainResult r = trainGaussians(t.dataset, t.init, o);
  EXPECT_EQ(r.params.size(), o.budget);
  // Every log entry's opacity histogram counts exactly the budget: relocation moves gaussians, never adds
  // any.
  for (const TrainLogEntry& e : r.log) {
    size_t counted = 0;
    for (uint32_t h : e.opacity_histogram) counted += h;
    EXPECT_EQ(counted, o.budget) << "step " << e.step;
  }
  std::printf("  validation L1 %.5f -> %.5f, PSNR %.2f -> %.2f dB, %zu relocated\n", r.initial.l1, r.final.l1,
              r.initial.psnr, r.final.psnr, r.relocated);
  EXPECT_LE(r.final.l1 * 5.0, r.initial.l1);
}

}  // namespace
}  // namespace sf::train

namespace sf::train {
namespace {

namespace test = ::sf::test;

// `train` writes its cloud upright in the PLY frame (y down) as captures are, not in the dataset's y-up glTF
// frame: every trained splat lies on the model's normalised surface turned by the closed-form half turn about
// z (x, y) -> (-x, -y); in the dataset frame as it was, most would not (the man is not symmetric under it).
TEST(TrainCli, TrainedCloudIsWrittenUprightInThePlyFrame) {
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  const std::string dir = test::tempDir("train_upright");
  std::string out;
  ASSERT_EQ(test::runCli(
                "train --mesh " + man + " --budget 800 --steps 20 --size 32 --views 8 -o " + dir + "/man.ply",
                &out),
            0)
      << out;
  const GaussianCloud cloud = loadSplats(dir + "/man.ply").cloud;
  const hull::SourceMesh src = hull::loadSourceMesh(man, "", 0.0f);  // the dataset frame: normalised, y up
  std::vector<Vec3> surface;
  const std::vector<double> cdf = hull::faceAreaCdf(src.mesh);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0, 1);
  for (int i = 0; i < 4000; ++i)
    surface.push_back(hull::surfacePointAt(src.mesh, cdf, u(rng), u(rng), u(rng)).position);
  auto medianDistance = [&](Vec3 flip) {
    std::vector<float> d;
    for (const Vec3& p : cloud.positions) {
      const Vec3 q{p.x * flip.x, p.y * flip.y, p.z * flip.z};  // back to the dataset frame
      float best = 1e30f;
      for (const Vec3& s : surface) best = std::min(best, length(s - q));
      d.push_back(best);
    }
    std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
    return d[d.size() / 2];
  };
  const float turned = medianDistance({-1, -1, 1}), as_stored = medianDistance({1, 1, 1});
  std::printf("median distance to the surface: turned back %.4f, as stored %.4f\n", turned, as_stored);
  EXPECT_LT(turned, 0.03f);
  EXPECT_GT(as_stored, 4 * turned);
  // `hull bake --splats` takes such a file back into the hull frame: its splats lie on the mesh.
  ASSERT_EQ(test::runCli("hull bake " + man + " --splats " + dir + "/man.ply --budget 600 -o " + dir +
                             "/man.spl2 --json",
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("\"distance_p50\""), std::string::npos) << out;
  const size_t at = out.find("\"distance_p50\"");
  EXPECT_LT(std::stod(out.substr(out.find(':', at) + 1)), 0.03) << out;
}

// The CLI end to end: train from a mesh and from a folder `views` wrote, the log and the PLY it leaves, the
// in-process training of `hull bake --train` and `character build --train`, and the trained character
// animating through `animate`.
TEST(TrainCli, TrainsFromAMeshAndFromADatasetAndInProcessForHullsAndCharacters) {
  SF_REQUIRE_ASSET(box, "gltf/box_animated.gltf");
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  const std::string dir = test::tempDir("train_cli");
  std::string out;
  ASSERT_EQ(test::runCli("train --mesh " + box + " --budget 120 --steps 40 --size 32 --views 12 -o " + dir +
                             "/box.ply --json",
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("\"budget\": 120"), std::string::npos) << out;
  const LoadedSplats trained = loadSplats(dir + "/box.ply");
  EXPECT_EQ(trained.cloud.size(), 120u);
  const std::vector<uint8_t> log_bytes = readFile(dir + "/box.log.jsonl");
  const std::string log(log_bytes.begin(), log_bytes.end());
  EXPECT_NE(log.find("\"opacity_histogram\""), std::string::npos);
  EXPECT_NE(log.find("\"val_l1_final\""), std::string::npos);

  ASSERT_EQ(test::runCli("views " + box + " -o " + dir + "/ds --count 8 --val 2 --test 0 --size 24", &out), 0)
      << out;
  ASSERT_EQ(test::runCli("train --dataset " + dir + "/ds --budget 60 --steps 20 -o " + dir + "/ds.ply", &out),
            0)
      << out;
  EXPECT_NE(out.find("wrote " + dir +
                     "/ds.ply (60 gaussians; turned from the dataset's y-up frame to the PLY frame"),
            std::string::npos)
      << out;
  EXPECT_EQ(test::runCli("train --budget 10 --steps 5 -o " + dir + "/none.ply", &out), 2)
      << out;  // neither --mesh nor --dataset: a usage error
  EXPECT_NE(out.find("exactly one of --mesh"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("train --mesh " + box + " --steps 0 -o " + dir + "/x.ply", &out), 2) << out;

  ASSERT_EQ(test::runCli("hull bake --mesh " + box +
                             " --train --budget 150 --train-steps 30 --train-size 32 --train-views 12 -o " +
                             dir + "/box.spl2",
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("trained in"), std::string::npos) << out;
  // The floater pass over the training views ran (the sidecar counts it instead of null).
  EXPECT_NE(out.find("on background in a training view"), std::string::npos) << out;
  {
    std::ifstream meta_in(dir + "/box.meta.json");
    const std::string meta((std::istreambuf_iterator<char>(meta_in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(meta.find("\"dataset\": null"), std::string::npos) << meta;
    EXPECT_NE(meta.find("\"dataset\":"), std::string::npos) << meta;
  }
  EXPECT_EQ(
      test::runCli("hull bake " + box + " --train --splats " + dir + "/box.ply -o " + dir + "/y.spl2", &out),
      2)
      << out;

  ASSERT_EQ(test::runCli("character build --from-gltf " + man +
                             " --train --budget 300 --train-steps 30 --train-size 32 --train-views 12 -o " +
                             dir + "/man",
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("wrote " + dir + "/man (300 splats"), std::string::npos) << out;
  ASSERT_EQ(
      test::runCli("animate " + dir + "/man --fps 4 --duration 0.5 --width 48 --height 48 --backend cpu -o " +
                       dir + "/f%02d.png",
                   &out),
      0)
      << out;
  const ImageRGBA f0 = readPng(dir + "/f00.png"), f1 = readPng(dir + "/f01.png");
  double lit = 0, moved = 0;
  for (size_t i = 0; i < f0.pixels.size(); ++i)
    lit += f0.pixels[i], moved += std::abs(f0.pixels[i] - f1.pixels[i]);
  EXPECT_GT(lit, 10.0) << "the trained character is drawn";
  EXPECT_GT(moved, 1.0) << "and it walks";
}

// What `train` shows besides the cloud: val_ssim in the log, the plot beside the cloud (a PNG of the plot's
// size), a sheet of renders beside the ground truth per validation with --val-images; `--plot` draws the same
// picture from the log, and refuses a malformed or missing log with its name (and line), exit 1, writing
// nothing.
TEST(TrainCli, WritesThePlotAndValidationImagesAndPlotsALog) {
  SF_REQUIRE_ASSET(box, "gltf/box_animated.gltf");
  const std::string dir = test::tempDir("train_cli_plot");
  std::string out;
  ASSERT_EQ(test::runCli(
                "train --mesh " + box +
                    " --budget 60 --steps 20 --size 24 --views 6 --log-every 5 --val-every 10 --val-images " +
                    dir + "/val -o " + dir + "/box.ply",
                &out),
            0)
      << out;
  EXPECT_NE(out.find("box.log.jsonl and " + dir + "/box.plot.png"), std::string::npos) << out;
  EXPECT_NE(out.find(", SSIM "), std::string::npos) << out;
  EXPECT_NE(out.find("step 10: validation L1 "), std::string::npos) << out;
  const std::vector<uint8_t> log_bytes = readFile(dir + "/box.log.jsonl");
  const std::string log(log_bytes.begin(), log_bytes.end());
  EXPECT_NE(log.find("{\"step\": 10, "), std::string::npos) << log;
  EXPECT_NE(log.find("\"val_ssim\": "), std::string::npos) << log;
  EXPECT_NE(log.find("\"val_ssim_final\": "), std::string::npos) << log;
  const ImageRGBA plot = readPng(dir + "/box.plot.png");
  EXPECT_EQ(plot.width, kPlotWidth);
  EXPECT_EQ(plot.height, kPlotHeight);
  // Sheets at steps 0, 10 and 20: the first 4 val views, 24 px enlarged 5x, render beside ground truth.
  for (const char* step : {"000000", "000010", "000020"}) {
    const ImageRGBA sheet = readPng(dir + "/val/step_" + std::string(step) + ".png");
    EXPECT_GE(sheet.width, 2 * 24 * 5 + 24) << step;
    EXPECT_GE(sheet.height, 4 * (24 * 5 + 8)) << step;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/val/step_000005.png"));

  // --plot: the same picture from the log; by default beside the log, as <name>.plot.png.
  ASSERT_EQ(test::runCli("train --plot " + dir + "/box.log.jsonl -o " + dir + "/again.png", &out), 0) << out;
  EXPECT_EQ(readFile(dir + "/again.png"), readFile(dir + "/box.plot.png"));
  std::filesystem::copy_file(dir + "/box.log.jsonl", dir + "/copy.log.jsonl");
  ASSERT_EQ(test::runCli("train --plot " + dir + "/copy.log.jsonl --json", &out), 0) << out;
  EXPECT_NE(out.find("\"width\": 900, \"height\": 660, \"steps\": 20, \"entries\": 4, \"validations\": 3, "
                     "\"ssim\": true"),
            std::string::npos)
      << out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/copy.plot.png"));

  // A malformed line: exit 1, the file and the line named, nothing written; likewise a missing log.
  std::string bad =
      log.substr(0, log.find('\n', log.find('\n') + 1) + 1) + "{\"step\": 15, \"loss\": 0.1,}\n";
  writeFileAtomic(dir + "/bad.log.jsonl",
                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bad.data()), bad.size()));
  EXPECT_EQ(test::runCli("train --plot " + dir + "/bad.log.jsonl -o " + dir + "/bad.png", &out), 1) << out;
  EXPECT_NE(out.find("splatforge train: error: " + dir + "/bad.log.jsonl: line 3: "), std::string::npos)
      << out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/bad.png"));
  EXPECT_EQ(test::runCli("train --plot " + dir + "/none.log.jsonl", &out), 1) << out;
  EXPECT_NE(out.find(dir + "/none.log.jsonl"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/none.plot.png"));
  // Usage errors: --plot with training inputs, a plot that is not a PNG, --val-every off the log's steps.
  EXPECT_EQ(test::runCli("train --plot " + dir + "/box.log.jsonl --mesh " + box, &out), 2) << out;
  EXPECT_EQ(test::runCli("train --plot " + dir + "/box.log.jsonl -o " + dir + "/p.jpg", &out), 2) << out;
  // Without --log-every the log follows --val-every (the largest divisor up to 100: here every 2 steps).
  ASSERT_EQ(
      test::runCli("train --mesh " + box + " --budget 20 --steps 4 --size 16 --views 3 --val-every 2 -o " +
                       dir + "/auto.ply",
                   &out),
      0)
      << out;
  const std::vector<uint8_t> auto_bytes = readFile(dir + "/auto.log.jsonl");
  EXPECT_NE(std::string(auto_bytes.begin(), auto_bytes.end()).find("{\"step\": 2, "), std::string::npos);
  EXPECT_EQ(
      test::runCli("train --mesh " + box + " --val-every 150 --log-every 100 -o " + dir + "/x.ply", &out), 2)
      << out;
  EXPECT_NE(out.find("--val-every 150 must be a multiple of --log-every 100"), std::string::npos) << out;
}

}  // namespace
}  // namespace sf::train
