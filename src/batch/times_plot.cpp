// The job-time chart (batch/times_plot.h).
#include "batch/times_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/chart.h"

namespace sf::batch {

namespace {

const Vec3 kWhite{1, 1, 1}, kBlack{0, 0, 0}, kGrid{0.88f, 0.88f, 0.88f};
const Vec3 kDoneColor{0.12f, 0.38f, 0.80f}, kFailedColor{0.85f, 0.15f, 0.12f},
    kOtherColor{0.55f, 0.55f, 0.55f};
constexpr int kWidth = 900, kRow = 16, kTop = 44, kBottomMargin = 40, kLeft = 260, kRight = kWidth - 90;

Vec3 colorOf(JobStatus s) {
  return s == JobStatus::kDone ? kDoneColor : s == JobStatus::kFailed ? kFailedColor : kOtherColor;
}

std::string fitted(const std::string& name, int max_chars) {
  if (static_cast<int>(name.size()) <= max_chars) return name;
  return ".." + name.substr(name.size() - static_cast<size_t>(max_chars - 2));
}

}  // namespace

ImageRGBA plotJobTimes(const std::vector<TimedJob>& all) {
  std::vector<TimedJob> jobs;
  for (const TimedJob& j : all)
    if (j.started > 0) jobs.push_back(j);
  size_t left_out = 0;
  if (jobs.size() > kPlotMaxRows) {  // keep the slowest
    std::sort(jobs.begin(), jobs.end(), [](const TimedJob& a, const TimedJob& b) {
      return a.finished - a.started > b.finished - b.started;
    });
    left_out = jobs.size() - kPlotMaxRows;
    jobs.resize(kPlotMaxRows);
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const TimedJob& a, const TimedJob& b) { return a.started < b.started; });
  const int rows = std::max<int>(1, static_cast<int>(jobs.size()));
  ImageRGBA im(kWidth, kTop + rows * kRow + kBottomMargin);
  chart::fillRect(im, 0, 0, im.width - 1, im.height - 1, kWhite);
  char title[128];
  std::snprintf(title, sizeof title, "JOB TIMES: %zu JOBS%s", jobs.size() + left_out,
                left_out ? (" (THE " + std::to_string(kPlotMaxRows) + " SLOWEST)").c_str() : "");
  chart::drawText(im, (kWidth - chart::textWidth(title, 2)) / 2, 12, title, kBlack, 2);
  const int bottom = kTop + rows * kRow;
  if (jobs.empty()) {
    chart::drawText(im, kLeft, kTop + 2, "NO JOB HAS RUN", kBlack, 1);
    return im;
  }
  double t0 = jobs.front().started, t1 = t0;
  for (const TimedJob& j : jobs)
    t0 = std::min(t0, j.started), t1 = std::max(t1, std::max(j.finished, j.started));
  const chart::Ticks ticks = chart::niceTicks(0, std::max(t1 - t0, 1e-3), 8);
  auto px = [&](double s) {
    return kLeft + static_cast<int>(std::lround((s - ticks.lo) / (ticks.hi - ticks.lo) * (kRight - kLeft)));
  };
  for (double x = ticks.lo; x <= ticks.hi + 0.5 * ticks.step; x += ticks.step) {
    const int col = px(x);
    chart::drawLine(im, col, kTop, col, bottom, kGrid, 1);
    chart::drawLine(im, col, bottom, col, bottom + 4, kBlack, 1);
    const std::string s = chart::tickLabel(x, ticks.decimals);
    chart::drawText(im, col - chart::textWidth(s, 1) / 2, bottom + 8, s, kBlack, 1);
  }
  const std::string axis = "SECONDS SINCE THE FIRST JOB STARTED";
  chart::drawText(im, (kLeft + kRight - chart::textWidth(axis, 1)) / 2, bottom + 22, axis, kBlack, 1);
  for (size_t r = 0; r < jobs.size(); ++r) {
    const TimedJob& j = jobs[r];
    const int y = kTop + static_cast<int>(r) * kRow;
    const std::string label = fitted(j.name, (kLeft - 12) / 6);
    chart::drawText(im, kLeft - 8 - chart::textWidth(label, 1), y + 4, label, kBlack, 1);
    const double end = j.finished > j.started ? j.finished : j.started;
    const int x0 = px(j.started - t0), x1 = std::max(x0 + 1, px(end - t0));
    chart::fillRect(im, x0, y + 3, x1, y + kRow - 4, colorOf(j.status));
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.2f", end - j.started);
    chart::drawText(im, x1 + 4, y + 4, j.status == JobStatus::kFailed ? std::string(secs) + " FAILED" : secs,
                    kBlack, 1);
  }
  chart::drawLine(im, kLeft, kTop, kLeft, bottom, kBlack, 1);
  chart::drawLine(im, kLeft, bottom, kRight, bottom, kBlack, 1);
  return im;
}

}  // namespace sf::batch
