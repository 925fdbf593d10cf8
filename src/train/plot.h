// What a training run shows besides its log (docs/training.md "Plots and validation images"): the plot of the
// training loss and the validation PSNR and SSIM over the steps, drawn from the JSON-lines log (so a plot
// drawn later from a log, `splatforge train --plot`, is the one the run wrote), and the sheets of validation
// renders beside their ground truth. Drawn by our own small raster code (core/chart.h: lines, a 5x7 bitmap
// font, ticks) into an ImageRGBA; io/image_io.h writes the PNG.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/chart.h"
#include "core/image.h"
#include "core/math.h"
#include "train/trainer.h"

namespace sf::train {

// The curves of a training log (trainLogJson's lines).
struct TrainCurves {
  struct Loss {
    int step = 0;
    double loss = 0;
  };
  struct Validation {
    int step = 0;  // 0: the initial score (the summary's val_*_initial)
    double psnr = 0;
    double ssim = -1;  // -1: not in the log (one written before SSIM was recorded)
  };
  std::vector<Loss> loss;              // one per log entry, steps increasing
  std::vector<Validation> validation;  // the entries that carry val_psnr, after the initial score
  int steps = 0;                       // the run's steps (the summary's), else the last entry's
};

// Reads a training log's text: every non-empty line a JSON object, either an entry (a whole "step" >= 1,
// increasing, and a finite "loss"; "val_psnr" and optionally "val_ssim" at validations) or the summary
// ("summary": true, at most one). Throws sf::Error "<name>: line N: <why>" for a line that is not one of
// these, and "<name>: no log entries" for a log without entries.
TrainCurves parseTrainLog(std::string_view text, const std::string& name);
// The same for a file (a missing or unreadable file is an sf::Error naming it).
TrainCurves readTrainLog(const std::string& path);

// A panel of the plot: its pixel rectangle and the data ranges it maps onto it.
struct PlotPanel {
  int left = 0, top = 0, right = 0, bottom = 0;  // pixels, inclusive
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  int px(double x) const;  // the pixel column of a step
  int py(double y) const;  // the pixel row of a value
};

inline constexpr int kPlotWidth = 900, kPlotHeight = 660;
// The series' colours (RGB in [0, 1]) on the white plot background.
inline constexpr Vec3 kPlotLossColor{0.12f, 0.38f, 0.80f};
inline constexpr Vec3 kPlotPsnrColor{0.88f, 0.40f, 0.05f};
inline constexpr Vec3 kPlotSsimColor{0.10f, 0.60f, 0.25f};

struct TrainPlot {
  ImageRGBA image;  // kPlotWidth x kPlotHeight, alpha 1
  PlotPanel loss;   // top: the training loss over the steps
  PlotPanel psnr;   // bottom: the validation PSNR (dB, left axis) ...
  PlotPanel ssim;   // ... and SSIM (right axis), in the same rectangle
  bool has_ssim = false;
};

// The plot: on top the training loss per log entry (a line, y from 0), below the validation PSNR and SSIM at
// the validation steps (lines with a marker per validation; each axis fitted to its values), both over the
// steps 0..steps, with tick labels, axis titles and a legend. A log without validations says so in the lower
// panel.
TrainPlot plotTraining(const TrainCurves& curves);

// One validation's sheet: a header (the step, the score), then per kept view a row with the render on the
// left and the ground truth on the right (the view's RGBA over `background`), views smaller than 128 pixels
// enlarged by whole pixels. Empty (0 x 0) when no render was kept.
ImageRGBA validationSheet(const ValidationImages& images, Vec3 background);

// The text the plots use (core/chart.h), here for tests: the width in pixels of `text` in the 5x7 font at
// `scale`, and drawing it with its top-left corner at (x, y) (pixels outside the image are dropped).
using chart::drawText;
using chart::textWidth;

}  // namespace sf::train
