// Training plots and validation sheets (train/plot.h), drawn with the raster primitives, 5x7 font and ticks
// of core/chart.h: enough for axes, tick labels and legends without an image or plotting library.
#include "train/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "core/chart.h"
#include "core/error.h"
#include "io/file.h"
#include "io/json.h"

namespace sf::train {

namespace {

using chart::drawLine;
using chart::fillRect;
using chart::niceTicks;
using chart::setPixel;
using chart::tickLabel;
using chart::Ticks;

const Vec3 kWhite{1, 1, 1}, kBlack{0, 0, 0}, kGrid{0.88f, 0.88f, 0.88f}, kFrame{0.35f, 0.35f, 0.35f};
constexpr int kScale = 2;  // the plot's text: 10x14 pixel glyphs
constexpr int kGlyphH = 7 * kScale;

// The frame of a panel, its grid at the x ticks and the left axis's ticks, with their labels.
void drawPanel(ImageRGBA& im, const PlotPanel& p, const Ticks& xt, const Ticks& yt) {
  for (double y = yt.lo; y <= yt.hi + 0.5 * yt.step; y += yt.step) {
    const int row = p.py(y);
    drawLine(im, p.left, row, p.right, row, kGrid, 1);
    drawLine(im, p.left - 5, row, p.left, row, kBlack, 1);
    const std::string s = tickLabel(y, yt.decimals);
    drawText(im, p.left - 9 - textWidth(s, kScale), row - kGlyphH / 2, s, kBlack, kScale);
  }
  for (double x = xt.lo; x <= xt.hi + 0.5 * xt.step; x += xt.step) {
    const int col = p.px(x);
    drawLine(im, col, p.top, col, p.bottom, kGrid, 1);
    drawLine(im, col, p.bottom, col, p.bottom + 5, kBlack, 1);
    const std::string s = tickLabel(x, xt.decimals);
    drawText(im, col - textWidth(s, kScale) / 2, p.bottom + 9, s, kBlack, kScale);
  }
  drawLine(im, p.left, p.top, p.right, p.top, kFrame, 1);
  drawLine(im, p.right, p.top, p.right, p.bottom, kFrame, 1);
  drawLine(im, p.left, p.bottom, p.right, p.bottom, kBlack, 2);
  drawLine(im, p.left, p.top, p.left, p.bottom, kBlack, 2);
}

void drawMarker(ImageRGBA& im, int x, int y, Vec3 c) {
  fillRect(im, x - 3, y - 3, x + 3, y + 3, c);
}

// A legend, a line sample (with a marker when `markers`) and a label per entry, in the corner of the panel
// that hides the fewest pixels of the curves already drawn (the top right on a tie).
void drawLegend(ImageRGBA& im, const PlotPanel& p, const std::vector<std::pair<std::string, Vec3>>& entries,
                bool markers) {
  int width = 0;
  for (const auto& e : entries) width = std::max(width, textWidth(e.first, kScale));
  const int line_h = kGlyphH + 8, box_w = 8 + 30 + 8 + width + 8,
            box_h = 6 + line_h * static_cast<int>(entries.size());
  auto covered = [&](int x0, int y0) {
    int n = 0;
    for (int y = y0; y <= y0 + box_h; ++y)
      for (int x = x0; x <= x0 + box_w; ++x) {
        const float* q = im.at(x, y);
        const bool background = (q[0] == kWhite.x && q[1] == kWhite.y && q[2] == kWhite.z) ||
                                (q[0] == kGrid.x && q[1] == kGrid.y && q[2] == kGrid.z);
        n += !background;
      }
    return n;
  };
  const int xs[2] = {p.right - 10 - box_w, p.left + 10}, ys[2] = {p.top + 10, p.bottom - 10 - box_h};
  int x0 = xs[0], y0 = ys[0], best = covered(x0, y0);
  for (int yi = 0; yi < 2; ++yi)
    for (int xi = 0; xi < 2; ++xi)
      if (const int n = covered(xs[xi], ys[yi]); n < best) best = n, x0 = xs[xi], y0 = ys[yi];
  fillRect(im, x0, y0, x0 + box_w, y0 + box_h, kWhite);
  drawLine(im, x0, y0, x0 + box_w, y0, kFrame, 1);
  drawLine(im, x0, y0 + box_h, x0 + box_w, y0 + box_h, kFrame, 1);
  drawLine(im, x0, y0, x0, y0 + box_h, kFrame, 1);
  drawLine(im, x0 + box_w, y0, x0 + box_w, y0 + box_h, kFrame, 1);
  for (size_t i = 0; i < entries.size(); ++i) {
    const int y = y0 + 6 + line_h * static_cast<int>(i);
    drawLine(im, x0 + 8, y + kGlyphH / 2, x0 + 38, y + kGlyphH / 2, entries[i].second, 3);
    if (markers) drawMarker(im, x0 + 23, y + kGlyphH / 2, entries[i].second);
    drawText(im, x0 + 46, y, entries[i].first, kBlack, kScale);
  }
}

template <class Point, class X, class Y>
void drawSeries(ImageRGBA& im, const PlotPanel& p, const std::vector<Point>& points, X x, Y y, Vec3 c,
                bool markers) {
  for (size_t i = 0; i + 1 < points.size(); ++i)
    drawLine(im, p.px(x(points[i])), p.py(y(points[i])), p.px(x(points[i + 1])), p.py(y(points[i + 1])), c,
             3);
  if (markers || points.size() == 1)
    for (const Point& q : points) drawMarker(im, p.px(x(q)), p.py(y(q)), c);
}

}  // namespace

// ---- The log ----

TrainCurves parseTrainLog(std::string_view text, const std::string& name) {
  TrainCurves c;
  bool summary = false;
  TrainCurves::Validation initial;
  bool has_initial = false;
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = name + ": line " + std::to_string(line_no);
    const nlohmann::json j = parseJsonText(line, where);
    const JsonNode node{j, "", where};
    if (!j.is_object()) node.fail("expected a JSON object (a log entry or the summary)");
    auto wholeStep = [](const JsonNode& n) {
      const double d = n.number();
      if (d != std::floor(d) || d < 0 || d > 2e9) n.fail("expected a whole number of steps");
      return static_cast<int>(d);
    };
    if (node.has("summary")) {
      if (summary) throw Error(where + ": a second summary line");
      summary = true;
      if (node.has("steps")) c.steps = wholeStep(node["steps"]);
      if (node.has("val_views") && node["val_views"].number() > 0 && node.has("val_psnr_initial")) {
        has_initial = true;
        initial.psnr = node["val_psnr_initial"].number();
        if (node.has("val_ssim_initial")) initial.ssim = node["val_ssim_initial"].number();
      }
      continue;
    }
    if (summary) throw Error(where + ": a log entry after the summary line");
    const int step = wholeStep(node["step"]);
    if (step < 1) node["step"].fail("expected a step of 1 or more");
    if (!c.loss.empty() && step <= c.loss.back().step)
      node["step"].fail("step " + std::to_string(step) + " does not follow step " +
                        std::to_string(c.loss.back().step));
    c.loss.push_back({step, node["loss"].number()});
    if (node.has("val_psnr"))
      c.validation.push_back(
          {step, node["val_psnr"].number(), node.has("val_ssim") ? node["val_ssim"].number() : -1.0});
  }
  if (c.loss.empty())
    throw Error(name +
                ": no log entries (expected JSON lines with \"step\" and \"loss\", as `splatforge train` "
                "writes them)");
  if (has_initial) c.validation.insert(c.validation.begin(), initial);
  c.steps = std::max(c.steps, c.loss.back().step);
  return c;
}

TrainCurves readTrainLog(const std::string& path) {
  const std::vector<uint8_t> bytes = readFile(path);
  return parseTrainLog(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
}

// ---- The plot ----

int PlotPanel::px(double x) const {
  const double t = x_max > x_min ? (x - x_min) / (x_max - x_min) : 0.5;
  return left + static_cast<int>(std::lround(std::clamp(t, 0.0, 1.0) * (right - left)));
}

int PlotPanel::py(double y) const {
  const double t = y_max > y_min ? (y - y_min) / (y_max - y_min) : 0.5;
  return bottom - static_cast<int>(std::lround(std::clamp(t, 0.0, 1.0) * (bottom - top)));
}

TrainPlot plotTraining(const TrainCurves& c) {
  TrainPlot plot;
  ImageRGBA& im = plot.image;
  im = ImageRGBA(kPlotWidth, kPlotHeight);
  fillRect(im, 0, 0, im.width - 1, im.height - 1, kWhite);
  const int left = 110, right = kPlotWidth - 100;
  const Ticks xt = niceTicks(0, std::max(1, c.steps), 6);

  // Top: the training loss, from 0.
  double loss_max = 0;
  for (const auto& e : c.loss) loss_max = std::max(loss_max, e.loss);
  const Ticks lt = niceTicks(0, loss_max > 0 ? loss_max : 1, 5);
  plot.loss = {left, 50, right, 290, xt.lo, xt.hi, lt.lo, lt.hi};
  drawText(im, (left + right - textWidth("TRAINING LOSS", kScale)) / 2, 18, "TRAINING LOSS", kBlack, kScale);
  drawPanel(im, plot.loss, xt, lt);
  drawText(im, 8, plot.loss.top - 22, "LOSS", kPlotLossColor, kScale);
  drawSeries(
      im, plot.loss, c.loss, [](const auto& e) { return static_cast<double>(e.step); },
      [](const auto& e) { return e.loss; }, kPlotLossColor, false);
  drawLegend(im, plot.loss, {{"TRAIN LOSS (MEAN PER LOG ENTRY)", kPlotLossColor}}, false);

  // Bottom: validation PSNR (left axis) and SSIM (right axis).
  constexpr int kTop = 370, kBottom = 610;
  drawText(im, (left + right - textWidth("VALIDATION", kScale)) / 2, kTop - 32, "VALIDATION", kBlack, kScale);
  if (c.validation.empty()) {
    plot.psnr = plot.ssim = {left, kTop, right, kBottom, xt.lo, xt.hi, 0, 1};
    drawPanel(im, plot.psnr, xt, niceTicks(0, 1, 5));
    const std::string s = "NO VALIDATION IN THIS LOG";
    drawText(im, (left + right - textWidth(s, kScale)) / 2, (kTop + kBottom) / 2 - kGlyphH / 2, s, kFrame,
             kScale);
  } else {
    double p_lo = 1e300, p_hi = -1e300, s_lo = 1e300, s_hi = -1e300;
    for (const auto& v : c.validation) {
      p_lo = std::min(p_lo, v.psnr), p_hi = std::max(p_hi, v.psnr);
      if (v.ssim >= 0) s_lo = std::min(s_lo, v.ssim), s_hi = std::max(s_hi, v.ssim), plot.has_ssim = true;
    }
    // A third of the height above the curves' highest values, where the legend goes.
    const Ticks pt = niceTicks(p_lo, p_hi + 0.5 * (p_hi - p_lo), 5);
    plot.psnr = {left, kTop, right, kBottom, xt.lo, xt.hi, pt.lo, pt.hi};
    drawPanel(im, plot.psnr, xt, pt);
    const std::string psnr_title = "PSNR (DB)";
    drawText(im, 8, kTop - 22, psnr_title, kPlotPsnrColor, kScale);
    std::vector<std::pair<std::string, Vec3>> legend = {{"VAL PSNR (DB, LEFT)", kPlotPsnrColor}};
    if (plot.has_ssim) {
      Ticks st = niceTicks(s_lo, s_hi + 0.5 * (s_hi - s_lo), 5);
      st.hi = std::min(st.hi, 1.0), st.lo = std::max(st.lo, 0.0);  // SSIM of images in [0, 1] is at most 1
      plot.ssim = {left, kTop, right, kBottom, xt.lo, xt.hi, st.lo, st.hi};
      for (double y = st.lo; y <= st.hi + 0.5 * st.step; y += st.step) {
        const int row = plot.ssim.py(y);
        drawLine(im, right, row, right + 5, row, kBlack, 1);
        drawText(im, right + 9, row - kGlyphH / 2, tickLabel(y, st.decimals), kPlotSsimColor, kScale);
      }
      drawLine(im, right, kTop, right, kBottom, kBlack, 2);
      drawText(im, kPlotWidth - 8 - textWidth("SSIM", kScale), kTop - 22, "SSIM", kPlotSsimColor, kScale);
      legend.push_back({"VAL SSIM (RIGHT)", kPlotSsimColor});
      std::vector<TrainCurves::Validation> with_ssim;
      for (const auto& v : c.validation)
        if (v.ssim >= 0) with_ssim.push_back(v);
      drawSeries(
          im, plot.ssim, with_ssim, [](const auto& v) { return static_cast<double>(v.step); },
          [](const auto& v) { return v.ssim; }, kPlotSsimColor, true);
    } else {
      plot.ssim = plot.psnr;
    }
    drawSeries(
        im, plot.psnr, c.validation, [](const auto& v) { return static_cast<double>(v.step); },
        [](const auto& v) { return v.psnr; }, kPlotPsnrColor, true);
    drawLegend(im, plot.psnr, legend, true);
  }
  const std::string x_title = "STEP";
  drawText(im, (left + right - textWidth(x_title, kScale)) / 2, kPlotHeight - 8 - kGlyphH, x_title, kBlack,
           kScale);
  return plot;
}

// ---- Validation sheets ----

ImageRGBA validationSheet(const ValidationImages& v, Vec3 bg) {
  const size_t n = v.views ? std::min(v.rgb.size(), v.views->size()) : 0;
  if (n == 0) return {};
  constexpr int kPad = 8;
  const Vec3 kSheet{0.16f, 0.16f, 0.16f}, kText{0.95f, 0.95f, 0.95f};
  auto enlarge = [](const View& view) {
    return std::max(1, 128 / std::max(view.camera.width, view.camera.height));
  };
  int rows_w = 0, rows_h = 0;
  for (size_t i = 0; i < n; ++i) {
    const View& view = (*v.views)[i];
    const int k = enlarge(view);
    rows_w = std::max(rows_w, 2 * view.camera.width * k + 3 * kPad);
    rows_h += view.camera.height * k + kPad;
  }
  const int ts = rows_w >= 400 ? 2 : 1, line = 7 * ts + 5;
  char score[160];
  std::snprintf(score, sizeof score, "PSNR %.2f DB  SSIM %.4f  L1 %.5f", v.score.psnr, v.score.ssim,
                v.score.l1);
  const std::string step =
      "STEP " + std::to_string(v.step) + "  (" + std::to_string(v.score.views) + " VIEWS SCORED)";
  const int width = std::max({rows_w, textWidth(score, ts) + 2 * kPad, textWidth(step, ts) + 2 * kPad});
  const int header = kPad + 3 * line + 2;
  ImageRGBA im(width, header + rows_h);
  fillRect(im, 0, 0, im.width - 1, im.height - 1, kSheet);
  drawText(im, kPad, kPad, step, kText, ts);
  drawText(im, kPad, kPad + line, score, kText, ts);
  const View& first = (*v.views)[0];
  drawText(im, kPad, kPad + 2 * line, "RENDER", kText, ts);
  drawText(im, 2 * kPad + first.camera.width * enlarge(first), kPad + 2 * line, "GROUND TRUTH", kText, ts);
  int y0 = header;
  for (size_t i = 0; i < n; ++i) {
    const View& view = (*v.views)[i];
    const int w = view.camera.width, h = view.camera.height, k = enlarge(view);
    const std::vector<float>& rgb = v.rgb[i];
    for (int y = 0; y < h * k; ++y)
      for (int x = 0; x < w * k; ++x) {
        const size_t p = static_cast<size_t>(y / k) * static_cast<size_t>(w) + static_cast<size_t>(x / k);
        const float a = view.rgba[4 * p + 3];
        setPixel(im, kPad + x, y0 + y, {rgb[3 * p], rgb[3 * p + 1], rgb[3 * p + 2]});
        setPixel(im, 2 * kPad + w * k + x, y0 + y,
                 {view.rgba[4 * p] + (1 - a) * bg.x, view.rgba[4 * p + 1] + (1 - a) * bg.y,
                  view.rgba[4 * p + 2] + (1 - a) * bg.z});
      }
    y0 += h * k + kPad;
  }
  return im;
}

}  // namespace sf::train
