// Charts (core/chart.h): raster primitives, the 5x7 font and axis ticks.
#include "core/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace sf::chart {

// ---- Raster primitives ----

void setPixel(ImageRGBA& im, int x, int y, Vec3 c) {
  if (x < 0 || y < 0 || x >= im.width || y >= im.height) return;
  float* p = im.at(x, y);
  p[0] = c.x, p[1] = c.y, p[2] = c.z, p[3] = 1.0f;
}

void fillRect(ImageRGBA& im, int x0, int y0, int x1, int y1, Vec3 c) {
  for (int y = std::max(0, y0); y <= std::min(im.height - 1, y1); ++y)
    for (int x = std::max(0, x0); x <= std::min(im.width - 1, x1); ++x) setPixel(im, x, y, c);
}

void drawLine(ImageRGBA& im, int x0, int y0, int x1, int y1, Vec3 c, int thickness) {
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  const int lo = -(thickness - 1) / 2, hi = thickness / 2;
  for (int err = dx + dy;;) {
    fillRect(im, x0 + lo, y0 + lo, x0 + hi, y0 + hi, c);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) err += dy, x0 += sx;
    if (e2 <= dx) err += dx, y0 += sy;
  }
}

namespace {

// ---- The font: 5x7 glyphs, a row per byte (bit 4 the leftmost pixel); digits, capitals and a few signs.
// Lower case is drawn as capitals; a character without a glyph as a blank. ----

struct Glyph {
  char c;
  uint8_t rows[7];
};
constexpr Glyph kFont[] = {
    {'0', {0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110}},
    {'1', {0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110}},
    {'2', {0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111}},
    {'3', {0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110}},
    {'4', {0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010}},
    {'5', {0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110}},
    {'6', {0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110}},
    {'7', {0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000}},
    {'8', {0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110}},
    {'9', {0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100}},
    {'A', {0b01110, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001}},
    {'B', {0b11110, 0b10001, 0b10001, 0b11110, 0b10001, 0b10001, 0b11110}},
    {'C', {0b01110, 0b10001, 0b10000, 0b10000, 0b10000, 0b10001, 0b01110}},
    {'D', {0b11100, 0b10010, 0b10001, 0b10001, 0b10001, 0b10010, 0b11100}},
    {'E', {0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b11111}},
    {'F', {0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b10000}},
    {'G', {0b01110, 0b10001, 0b10000, 0b10111, 0b10001, 0b10001, 0b01111}},
    {'H', {0b10001, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001}},
    {'I', {0b01110, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110}},
    {'J', {0b00111, 0b00010, 0b00010, 0b00010, 0b00010, 0b10010, 0b01100}},
    {'K', {0b10001, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010, 0b10001}},
    {'L', {0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b11111}},
    {'M', {0b10001, 0b11011, 0b10101, 0b10101, 0b10001, 0b10001, 0b10001}},
    {'N', {0b10001, 0b10001, 0b11001, 0b10101, 0b10011, 0b10001, 0b10001}},
    {'O', {0b01110, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110}},
    {'P', {0b11110, 0b10001, 0b10001, 0b11110, 0b10000, 0b10000, 0b10000}},
    {'Q', {0b01110, 0b10001, 0b10001, 0b10001, 0b10101, 0b10010, 0b01101}},
    {'R', {0b11110, 0b10001, 0b10001, 0b11110, 0b10100, 0b10010, 0b10001}},
    {'S', {0b01111, 0b10000, 0b10000, 0b01110, 0b00001, 0b00001, 0b11110}},
    {'T', {0b11111, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100}},
    {'U', {0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110}},
    {'V', {0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100}},
    {'W', {0b10001, 0b10001, 0b10001, 0b10101, 0b10101, 0b10101, 0b01010}},
    {'X', {0b10001, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001, 0b10001}},
    {'Y', {0b10001, 0b10001, 0b10001, 0b01010, 0b00100, 0b00100, 0b00100}},
    {'Z', {0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b11111}},
    {'.', {0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b01100}},
    {',', {0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b00100, 0b01000}},
    {'-', {0b00000, 0b00000, 0b00000, 0b11111, 0b00000, 0b00000, 0b00000}},
    {'+', {0b00000, 0b00100, 0b00100, 0b11111, 0b00100, 0b00100, 0b00000}},
    {':', {0b00000, 0b01100, 0b01100, 0b00000, 0b01100, 0b01100, 0b00000}},
    {'/', {0b00000, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b00000}},
    {'(', {0b00010, 0b00100, 0b01000, 0b01000, 0b01000, 0b00100, 0b00010}},
    {')', {0b01000, 0b00100, 0b00010, 0b00010, 0b00010, 0b00100, 0b01000}},
    {'%', {0b11000, 0b11001, 0b00010, 0b00100, 0b01000, 0b10011, 0b00011}},
    {'=', {0b00000, 0b00000, 0b11111, 0b00000, 0b11111, 0b00000, 0b00000}},
    {'|', {0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100}},
    {'_', {0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b11111}},
};

const Glyph* glyphOf(char c) {
  if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  for (const Glyph& g : kFont)
    if (g.c == c) return &g;
  return nullptr;
}

}  // namespace

int textWidth(std::string_view text, int scale) {
  return text.empty() ? 0 : static_cast<int>(text.size()) * 6 * scale - scale;
}

void drawText(ImageRGBA& im, int x, int y, std::string_view text, Vec3 color, int scale) {
  for (char ch : text) {
    if (const Glyph* g = glyphOf(ch))
      for (int r = 0; r < 7; ++r)
        for (int col = 0; col < 5; ++col)
          if (g->rows[r] & (0x10 >> col))
            fillRect(im, x + col * scale, y + r * scale, x + (col + 1) * scale - 1, y + (r + 1) * scale - 1,
                     color);
    x += 6 * scale;
  }
}

// ---- Axes ----

Ticks niceTicks(double lo, double hi, int target) {
  if (!(hi > lo)) {  // one value: a range around it
    const double pad = std::abs(lo) > 1e-12 ? 0.1 * std::abs(lo) : 1.0;
    lo -= pad, hi += pad;
  }
  const double raw = (hi - lo) / target, mag = std::pow(10.0, std::floor(std::log10(raw))), r = raw / mag;
  Ticks t;
  t.step = (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
  t.lo = std::floor(lo / t.step + 1e-9) * t.step;
  t.hi = std::ceil(hi / t.step - 1e-9) * t.step;
  t.decimals = std::max(0, static_cast<int>(-std::floor(std::log10(t.step) + 1e-9)));
  return t;
}

std::string tickLabel(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

namespace {

// One panel of plotPanels: `values` over `x` in the rectangle [left, right] x [top, bottom], its y axis from
// 0 with tick labels, the title above it.
void drawPanel(ImageRGBA& im, int left, int top, int right, int bottom, const Ticks& xt,
               const std::vector<double>& x, const Panel& panel) {
  const Vec3 black{0, 0, 0}, grid{0.88f, 0.88f, 0.88f};
  constexpr int kScale = 2, kGlyphH = 14;
  double hi = 0;
  for (double v : panel.values) hi = std::max(hi, v);
  const Ticks yt = niceTicks(0, hi > 0 ? hi * 1.1 : 1, 4);
  auto px = [&](double v) {
    return left + static_cast<int>(std::lround((v - xt.lo) / std::max(xt.hi - xt.lo, 1e-9) * (right - left)));
  };
  auto py = [&](double v) {
    return bottom -
           static_cast<int>(std::lround((v - yt.lo) / std::max(yt.hi - yt.lo, 1e-9) * (bottom - top)));
  };
  for (double y = yt.lo; y <= yt.hi + 0.5 * yt.step; y += yt.step) {
    drawLine(im, left, py(y), right, py(y), grid, 1);
    const std::string label = tickLabel(y, yt.decimals);
    drawText(im, left - 9 - textWidth(label, kScale), py(y) - kGlyphH / 2, label, black, kScale);
  }
  for (double v = xt.lo; v <= xt.hi + 0.5 * xt.step; v += xt.step) {
    drawLine(im, px(v), top, px(v), bottom, grid, 1);
    const std::string label = tickLabel(v, xt.decimals);
    drawText(im, px(v) - textWidth(label, kScale) / 2, bottom + 9, label, black, kScale);
  }
  drawLine(im, left, bottom, right, bottom, black, 2);
  drawLine(im, left, top, left, bottom, black, 2);
  drawText(im, left, top - kGlyphH - 8, panel.title, panel.color, kScale);
  for (size_t i = 0; i + 1 < panel.values.size() && i + 1 < x.size(); ++i)
    drawLine(im, px(x[i]), py(panel.values[i]), px(x[i + 1]), py(panel.values[i + 1]), panel.color, 2);
}

}  // namespace

ImageRGBA plotPanels(const std::string& title, const std::string& x_title, const std::vector<double>& x,
                     const std::vector<Panel>& panels) {
  constexpr int kWidth = 900, kPanelH = 170, kTop = 60, kGap = 80, kLeft = 110, kRight = 860;
  const int n = static_cast<int>(panels.size());
  ImageRGBA im(kWidth, kTop + 20 + n * kPanelH + std::max(n - 1, 0) * kGap + 70);
  fillRect(im, 0, 0, im.width - 1, im.height - 1, Vec3{1, 1, 1});
  const double lo = x.empty() ? 0 : x.front(), hi = x.empty() ? 1 : x.back();
  const Ticks xt = niceTicks(lo, std::max(hi, lo + 1), 8);
  drawText(im, (kWidth - textWidth(title, 2)) / 2, 12, title, Vec3{0, 0, 0}, 2);
  for (int p = 0; p < n; ++p) {
    const int top = kTop + 20 + p * (kPanelH + kGap);
    drawPanel(im, kLeft, top, kRight, top + kPanelH, xt, x, panels[static_cast<size_t>(p)]);
  }
  drawText(im, (kLeft + kRight - textWidth(x_title, 2)) / 2, im.height - 22, x_title, Vec3{0, 0, 0}, 2);
  return im;
}

}  // namespace sf::chart
