// What a trainer shows (train/plot.h): the log read back as trainLogJson writes it, and refused with the file
// and the line when it is malformed; the plot's size, its PNG, and its curves where their data puts them; the
// validation sheet's render beside the ground truth.
#include "train/plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/file.h"
#include "io/image_io.h"
#include "support/test_support.h"

namespace sf::train {
namespace {

// A run of 100 steps logged every 10, validated at 30, 60, 90 and the end: the loss falls, PSNR and SSIM
// rise.
struct LoggedRun {
  TrainResult result;
  TrainOptions options;
};
LoggedRun syntheticRun() {
  LoggedRun run;
  run.options.steps = 100;
  run.options.budget = 50;
  TrainResult& r = run.result;
  for (int step = 10; step <= 100; step += 10) {
    TrainLogEntry e;
    e.step = step;
    e.loss = 0.3 * std::exp(-step / 40.0) + 0.01;
    if (step % 30 == 0 || step == 100)
      e.val_l1 = 0.2 - step / 1000.0, e.val_psnr = 15 + step / 10.0, e.val_ssim = 0.5 + step / 400.0;
    r.log.push_back(e);
  }
  r.initial = {0.2, 14.0, 0.45, 4};
  r.final = {0.1, 25.0, 0.75, 4};
  return run;
}

bool isColor(const ImageRGBA& im, int x, int y, Vec3 c) {
  if (x < 0 || y < 0 || x >= im.width || y >= im.height) return false;
  const float* p = im.at(x, y);
  return std::abs(p[0] - c.x) < 0.02f && std::abs(p[1] - c.y) < 0.02f && std::abs(p[2] - c.z) < 0.02f;
}
// Whether the colour is within `r` pixels of (x, y).
bool colorNear(const ImageRGBA& im, int x, int y, Vec3 c, int r = 1) {
  for (int dy = -r; dy <= r; ++dy)
    for (int dx = -r; dx <= r; ++dx)
      if (isColor(im, x + dx, y + dy, c)) return true;
  return false;
}

TEST(TrainPlot, TheLogReadsBackAsWritten) {
  const LoggedRun run = syntheticRun();
  const TrainCurves c = parseTrainLog(trainLogJson(run.result, run.options), "run.log.jsonl");
  EXPECT_EQ(c.steps, 100);
  ASSERT_EQ(c.loss.size(), 10u);
  for (size_t i = 0; i < c.loss.size(); ++i) {
    EXPECT_EQ(c.loss[i].step, run.result.log[i].step);
    EXPECT_NEAR(c.loss[i].loss, run.result.log[i].loss,
                5e-6 * run.result.log[i].loss);  // %.6g: 6 significant digits
  }
  // The initial score (step 0, from the summary), then the entries that carry one.
  const int steps[] = {0, 30, 60, 90, 100};
  ASSERT_EQ(c.validation.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(c.validation[i].step, steps[i]);
    EXPECT_NEAR(c.validation[i].psnr, i == 0 ? 14.0 : 15 + steps[i] / 10.0, 1e-4);
    EXPECT_NEAR(c.validation[i].ssim, i == 0 ? 0.45 : 0.5 + steps[i] / 400.0, 1e-6);
  }
}

TEST(TrainPlot, AMalformedLogIsRefusedWithTheFileAndTheLine) {
  struct Case {
    const char* text;
    const char* says;
  };
  const Case cases[] = {
      {"{\"step\": 10, \"loss\": 0.5}\n{\"step\": 20, \"loss\": }\n",
       "bad.jsonl: line 2: byte 21: malformed JSON"},
      {"{\"step\": 10, \"loss\": 0.5}\n\n{\"step\": 20}\n",
       "bad.jsonl: line 3: (root): missing key \"loss\""},
      {"{\"step\": 20, \"loss\": 0.1}\n{\"step\": 10, \"loss\": 0.1}\n",
       "bad.jsonl: line 2: step: step 10 does not follow step 20"},
      {"[1, 2]\n", "bad.jsonl: line 1: (root): expected a JSON object"},
      {"{\"step\": 1.5, \"loss\": 0.1}\n", "bad.jsonl: line 1: step: expected a whole number of steps"},
      {"{\"step\": 1, \"loss\": \"low\"}\n", "bad.jsonl: line 1: loss: expected a number, got string"},
      {"{\"step\": 1, \"loss\": 0.1, \"val_psnr\": null}\n",
       "bad.jsonl: line 1: val_psnr: expected a number, got null"},
      {"{\"summary\": true}\n{\"step\": 1, \"loss\": 0.1}\n",
       "bad.jsonl: line 2: a log entry after the summary line"},
      {"", "bad.jsonl: no log entries"},
      {"{\"summary\": true, \"steps\": 5}\n", "bad.jsonl: no log entries"},
  };
  for (const Case& c : cases) {
    try {
      parseTrainLog(c.text, "bad.jsonl");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << c.text << "\n" << e.what();
    }
  }
  const std::string missing = test::tempDir("train_plot_missing") + "/none.log.jsonl";
  try {
    readTrainLog(missing);
    ADD_FAILURE() << "read a missing log";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
}

TEST(TrainPlot, CurvesAreDrawnWhereTheirDataIs) {
  const LoggedRun run = syntheticRun();
  const TrainCurves c = parseTrainLog(trainLogJson(run.result, run.options), "run.log.jsonl");
  const TrainPlot p = plotTraining(c);
  ASSERT_EQ(p.image.width, kPlotWidth);
  ASSERT_EQ(p.image.height, kPlotHeight);
  EXPECT_TRUE(p.has_ssim);
  EXPECT_TRUE(isColor(p.image, 2, 2, {1, 1, 1})) << "a white background";
  // The x axes span the run; the loss axis starts at 0 and holds the largest loss.
  EXPECT_EQ(p.loss.x_min, 0.0);
  EXPECT_GE(p.loss.x_max, 100.0);
  EXPECT_EQ(p.loss.y_min, 0.0);
  EXPECT_GE(p.loss.y_max, c.loss[0].loss);
  // Every log entry is on the loss line, and the line is unbroken from the first entry to the last.
  for (const auto& e : c.loss)
    EXPECT_TRUE(colorNear(p.image, p.loss.px(e.step), p.loss.py(e.loss), kPlotLossColor))
        << "step " << e.step;
  for (int x = p.loss.px(10); x <= p.loss.px(100); ++x) {
    bool found = false;
    for (int y = p.loss.top; y <= p.loss.bottom && !found; ++y)
      found = isColor(p.image, x, y, kPlotLossColor);
    EXPECT_TRUE(found) << "loss line missing at column " << x;
  }
  // Each validation has a PSNR and an SSIM marker where its values are, on their own axes.
  for (const auto& v : c.validation) {
    EXPECT_TRUE(colorNear(p.image, p.psnr.px(v.step), p.psnr.py(v.psnr), kPlotPsnrColor, 2))
        << "PSNR at step " << v.step;
    EXPECT_TRUE(colorNear(p.image, p.ssim.px(v.step), p.ssim.py(v.ssim), kPlotSsimColor, 2))
        << "SSIM at step " << v.step;
  }
  EXPECT_LE(p.psnr.y_min, 14.0);
  EXPECT_GE(p.psnr.y_max, 25.0);
  EXPECT_LE(p.ssim.y_min, 0.45);
  EXPECT_GE(p.ssim.y_max, 0.75);
  EXPECT_LE(p.ssim.y_max, 1.0);
  // Tick labels: dark pixels left of each panel's axis, and below it.
  auto darkIn = [&](int x0, int y0, int x1, int y1) {
    int n = 0;
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x) n += p.image.at(x, y)[0] < 0.2f && p.image.at(x, y)[1] < 0.2f;
    return n;
  };
  EXPECT_GT(darkIn(0, p.loss.top, p.loss.left - 8, p.loss.bottom), 50);
  EXPECT_GT(darkIn(p.loss.left, p.loss.bottom + 8, p.loss.right, p.loss.bottom + 24), 50);
  EXPECT_GT(darkIn(0, p.psnr.top, p.psnr.left - 8, p.psnr.bottom), 50);
  // The PNG decodes to the same picture (8 bits).
  const std::string png = test::tempDir("train_plot") + "/run.plot.png";
  writePng(png, p.image);
  const std::vector<uint8_t> bytes = readFile(png);
  const RgbaImage8 decoded = decodeImage8(bytes, png);
  EXPECT_EQ(decoded.width, kPlotWidth);
  EXPECT_EQ(decoded.height, kPlotHeight);
  const ImageRGBA back = readPng(png);
  EXPECT_GE(compareImages(back, p.image).psnr, 45.0);
}

// A log of a run without validation views, and one written before SSIM was logged (no val_ssim keys).
TEST(TrainPlot, LogsWithoutValidationOrWithoutSsimArePlotted) {
  const TrainCurves none =
      parseTrainLog("{\"step\": 5, \"loss\": 0.2}\n{\"step\": 10, \"loss\": 0.1}\n", "none.jsonl");
  EXPECT_TRUE(none.validation.empty());
  EXPECT_EQ(none.steps, 10);
  const TrainPlot a = plotTraining(none);
  EXPECT_FALSE(a.has_ssim);
  int psnr_pixels = 0;
  for (int y = 0; y < a.image.height; ++y)
    for (int x = 0; x < a.image.width; ++x) psnr_pixels += isColor(a.image, x, y, kPlotPsnrColor);
  EXPECT_EQ(psnr_pixels, 0);
  EXPECT_TRUE(colorNear(a.image, a.loss.px(10), a.loss.py(0.1), kPlotLossColor));

  const TrainCurves old = parseTrainLog(
      "{\"step\": 100, \"loss\": 0.2, \"val_l1\": 0.1, \"val_psnr\": 20.5}\n"
      "{\"summary\": true, \"steps\": 100, \"val_views\": 8, \"val_l1_initial\": 0.2, "
      "\"val_psnr_initial\": 12.0}\n",
      "old.jsonl");
  ASSERT_EQ(old.validation.size(), 2u);
  EXPECT_EQ(old.validation[0].ssim, -1.0);
  const TrainPlot b = plotTraining(old);
  EXPECT_FALSE(b.has_ssim);
  EXPECT_TRUE(colorNear(b.image, b.psnr.px(100), b.psnr.py(20.5), kPlotPsnrColor, 2));
  EXPECT_TRUE(colorNear(b.image, b.psnr.px(0), b.psnr.py(12.0), kPlotPsnrColor, 2));
}

// The sheet: per kept view the render on the left, the view over the background on the right, views under 128
// pixels enlarged by whole pixels (32x24 -> 4x).
TEST(TrainPlot, ValidationSheetPutsEachRenderBesideItsGroundTruth) {
  std::vector<View> views(3);
  for (size_t i = 0; i < views.size(); ++i) {
    View& v = views[i];
    v.camera.width = 32, v.camera.height = 24;
    v.rgba.assign(32 * 24 * 4, 0.0f);
    for (int p = 0; p < 32 * 24; ++p) {
      const bool left = p % 32 < 16;  // left half: opaque red; right half: half-covered blue (premultiplied)
      float* q = v.rgba.data() + 4 * p;
      if (left)
        q[0] = 1.0f, q[3] = 1.0f;
      else
        q[2] = 0.5f, q[3] = 0.5f;
    }
  }
  ValidationImages im;
  im.step = 300;
  im.views = &views;
  im.score = {0.05, 24.5, 0.9, 3};
  im.rgb.assign(2, std::vector<float>(32 * 24 * 3, 0.0f));  // two of the three kept: green renders
  for (std::vector<float>& rgb : im.rgb)
    for (size_t p = 0; p < 32 * 24; ++p) rgb[3 * p + 1] = 0.8f;
  const Vec3 white{1, 1, 1};
  const ImageRGBA sheet = validationSheet(im, white);
  constexpr int k = 4, pad = 8, row_h = 24 * k + pad;
  ASSERT_GE(sheet.width, 2 * 32 * k + 3 * pad);
  const int header = sheet.height - 2 * row_h;  // two rows below the header
  ASSERT_GT(header, 20);
  for (int row = 0; row < 2; ++row) {
    const int y = header + row * row_h + 10 * k;
    EXPECT_TRUE(isColor(sheet, pad + 3 * k, y, {0, 0.8f, 0})) << "render, row " << row;
    EXPECT_TRUE(isColor(sheet, 2 * pad + 32 * k + 3 * k, y, {1, 0, 0})) << "ground truth, opaque";
    EXPECT_TRUE(isColor(sheet, 2 * pad + 32 * k + 20 * k, y, {0.5f, 0.5f, 1.0f}))
        << "ground truth over white";
  }
  // Nothing kept: no sheet.
  im.rgb.clear();
  EXPECT_EQ(validationSheet(im, white).width, 0);
}

}  // namespace
}  // namespace sf::train
