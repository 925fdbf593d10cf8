#include "core/image.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace sf {

std::vector<uint8_t> toRgb8(const ImageRGBA& image) {
  std::vector<uint8_t> out(static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3);
  for (size_t i = 0, n = out.size() / 3; i < n; ++i)
    for (size_t c = 0; c < 3; ++c) {
      float v = std::clamp(image.pixels[i * 4 + c], 0.0f, 1.0f);
      out[i * 3 + c] = static_cast<uint8_t>(std::lround(v * 255.0f));
    }
  return out;
}

ImageDiff compareImages(const ImageRGBA& a, const ImageRGBA& b, double threshold) {
  assert(a.width == b.width && a.height == b.height);
  ImageDiff d;
  double sq = 0, sum = 0;
  size_t over = 0, n = static_cast<size_t>(a.width) * static_cast<size_t>(a.height);
  for (size_t i = 0; i < n; ++i) {
    double pixel_max = 0;
    for (size_t c = 0; c < 3; ++c) {
      double va = std::clamp(a.pixels[i * 4 + c], 0.0f, 1.0f), vb = std::clamp(b.pixels[i * 4 + c], 0.0f, 1.0f);
      double e = std::abs(va - vb);
      sq += e * e;
      sum += e;
      pixel_max = std::max(pixel_max, e);
    }
    d.max_abs = std::max(d.max_abs, pixel_max);
    if (pixel_max > threshold) ++over;
  }
  double count = static_cast<double>(std::max<size_t>(n, 1)) * 3.0;
  double mse = sq / count;
  d.psnr = mse > 0 ? 10.0 * std::log10(1.0 / mse) : std::numeric_limits<double>::infinity();
  d.mean_abs = sum / count;
  d.fraction_over = static_cast<double>(over) / static_cast<double>(std::max<size_t>(n, 1));
  return d;
}

ImageRGBA diffImage(const ImageRGBA& a, const ImageRGBA& b, float gain) {
  assert(a.width == b.width && a.height == b.height);
  ImageRGBA d(a.width, a.height);
  for (size_t i = 0; i < d.pixels.size(); i += 4) {
    for (size_t c = 0; c < 3; ++c) d.pixels[i + c] = std::min(1.0f, std::abs(a.pixels[i + c] - b.pixels[i + c]) * gain);
    d.pixels[i + 3] = 1.0f;
  }
  return d;
}

}  // namespace sf
