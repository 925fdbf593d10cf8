#include "view/render_scale.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sf::view {

float chooseRenderScale(std::span<const RenderSample> recent, double seconds_since_motion,
                        const RenderScaleOptions& options) {
  if (!options.adaptive || seconds_since_motion >= options.rest_seconds || recent.empty()) return 1.0f;
  // Per scale measured: the median (the upper one of an even count: one fast frame does not pull the scale
  // up) of its last kRenderScaleSamples times, a point (scale^2, ms) of the cost model.
  std::vector<double> xs, ys;
  for (float scale : kRenderScales) {
    std::vector<double> ms;
    for (auto it = recent.rbegin(); it != recent.rend() && ms.size() < kRenderScaleSamples; ++it)
      if (it->scale == scale) ms.push_back(it->ms);
    if (ms.empty()) continue;
    std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
    xs.push_back(static_cast<double>(scale) * static_cast<double>(scale));
    ys.push_back(ms[ms.size() / 2]);
  }
  if (xs.empty()) return 1.0f;  // only scales off the ladder: measure one first
  // ms = a + b scale^2, least squares with a, b >= 0; from one scale, b alone.
  const double n = static_cast<double>(xs.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < xs.size(); ++i) sx += xs[i], sy += ys[i], sxx += xs[i] * xs[i], sxy += xs[i] * ys[i];
  const double var = sxx - sx * sx / n;
  double a = 0, b = sxy / sxx;
  if (xs.size() > 1 && var > 0) {
    b = (sxy - sx * sy / n) / var;
    a = (sy - b * sx) / n;
    if (b < 0) b = 0, a = sy / n;  // no cheaper with fewer pixels: the mean
    if (a < 0) a = 0, b = sxy / sxx;
  }
  auto predict = [&](float s) { return a + b * static_cast<double>(s) * static_cast<double>(s); };
  for (float scale : kRenderScales)
    if (predict(scale) <= options.target_ms) return scale;
  // Nothing keeps the target: the largest scale within kRenderScaleSlack of the smallest one's time.
  const float smallest = kRenderScales[std::size(kRenderScales) - 1];
  for (float scale : kRenderScales)
    if (predict(scale) <= (1.0 + kRenderScaleSlack) * predict(smallest)) return scale;
  return smallest;
}

int scaledSize(int size, float scale) {
  return std::max(1, static_cast<int>(std::lround(static_cast<double>(size) * static_cast<double>(scale))));
}

Camera scaleCamera(const Camera& cam, int width, int height) {
  if (cam.width == width && cam.height == height) return cam;
  const float sx = static_cast<float>(width) / static_cast<float>(cam.width);
  const float sy = static_cast<float>(height) / static_cast<float>(cam.height);
  Camera out = cam;
  out.width = width, out.height = height;
  out.fx = cam.fx * sx, out.cx = cam.cx * sx;
  out.fy = cam.fy * sy, out.cy = cam.cy * sy;
  return out;
}

}  // namespace sf::view
