// Charts drawn without an image or plotting library: a few raster primitives on ImageRGBA, a 5x7 bitmap font
// and "nice" axis ticks. The training plots (train/plot.h) and the batch runner's job-time chart
// (batch/times_plot.h) draw with these; io/image_io.h writes the PNG.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/image.h"
#include "core/math.h"

namespace sf::chart {

// Sets one pixel to an opaque colour; pixels outside the image are dropped.
void setPixel(ImageRGBA& image, int x, int y, Vec3 color);
// A filled rectangle between inclusive corners, clipped to the image.
void fillRect(ImageRGBA& image, int x0, int y0, int x1, int y1, Vec3 color);
// A line `thickness` pixels wide (Bresenham's walk, a square stamped at every pixel of it).
void drawLine(ImageRGBA& image, int x0, int y0, int x1, int y1, Vec3 color, int thickness);

// Text in the 5x7 font (digits, capitals and a few signs; lower case drawn as capitals, other characters
// as blanks): the width in pixels of `text` at `scale`, and drawing it with its top-left corner at (x, y).
int textWidth(std::string_view text, int scale);
void drawText(ImageRGBA& image, int x, int y, std::string_view text, Vec3 color, int scale);

// Ticks at multiples of 1, 2 or 5 times a power of ten, about `target` of them over [lo, hi]; the range is
// widened to whole ticks. `decimals` is what a label needs to tell the ticks apart.
struct Ticks {
  double lo = 0, hi = 1, step = 1;
  int decimals = 0;
};
Ticks niceTicks(double lo, double hi, int target);
// A tick's label with `decimals` decimals (never "-0").
std::string tickLabel(double value, int decimals);

// One curve of plotPanels: its title (drawn above its panel, in its colour) and a value per x.
struct Panel {
  std::string title;
  Vec3 color;
  std::vector<double> values;
};
// Panels stacked over one x axis: each its own y axis from 0 with tick labels, `title` across the top and
// `x_title` under the last axis. 900 pixels wide, 250 a panel.
ImageRGBA plotPanels(const std::string& title, const std::string& x_title, const std::vector<double>& x,
                     const std::vector<Panel>& panels);

}  // namespace sf::chart
