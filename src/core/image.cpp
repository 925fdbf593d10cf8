#include "core/image.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "core/parallel.h"

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
      double va = std::clamp(a.pixels[i * 4 + c], 0.0f, 1.0f),
             vb = std::clamp(b.pixels[i * 4 + c], 0.0f, 1.0f);
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

double ssim(const float* a, int a_channels, const float* b, int b_channels, int width, int height) {
  assert(a_channels >= 3 && b_channels >= 3 && width > 0 && height > 0);
  constexpr double kC1 = 0.01 * 0.01, kC2 = 0.03 * 0.03, kSigma = 1.5;
  // The window: 11 taps, or the largest odd count that fits a small image.
  int taps = std::min({11, width, height});
  if (taps % 2 == 0) --taps;
  const int radius = taps / 2;
  std::vector<double> g(static_cast<size_t>(taps));
  double g_sum = 0;
  for (int i = 0; i < taps; ++i)
    g_sum += g[static_cast<size_t>(i)] = std::exp(-0.5 * (i - radius) * (i - radius) / (kSigma * kSigma));
  for (double& w : g) w /= g_sum;
  const size_t w = static_cast<size_t>(width), h = static_cast<size_t>(height), n = static_cast<size_t>(taps);
  const size_t vw = w - n + 1, vh = h - n + 1;  // valid window positions per row and column
  // Separable filtering: the horizontal pass of the five moments (a, b, a^2, b^2, ab) over every row, then
  // the vertical pass per valid position, each a sum over the taps of whole rows (contiguous, so it
  // vectorises). One row of the result per work item, its sum kept per row and added in row order, so the
  // value does not depend on the thread count.
  std::vector<double> row_sums(vh, 0.0);
  for (int c = 0; c < 3; ++c) {
    std::vector<double> hm(5 * h * vw, 0.0);  // [moment][row][valid column]
    parallelForRange(h, 8, [&](size_t y0, size_t y1) {
      std::vector<double> v[5];
      for (std::vector<double>& q : v) q.resize(w);
      for (size_t y = y0; y < y1; ++y) {
        for (size_t x = 0; x < w; ++x) {
          const double va = std::clamp(
              a[(y * w + x) * static_cast<size_t>(a_channels) + static_cast<size_t>(c)], 0.0f, 1.0f);
          const double vb = std::clamp(
              b[(y * w + x) * static_cast<size_t>(b_channels) + static_cast<size_t>(c)], 0.0f, 1.0f);
          v[0][x] = va, v[1][x] = vb, v[2][x] = va * va, v[3][x] = vb * vb, v[4][x] = va * vb;
        }
        for (size_t q = 0; q < 5; ++q) {
          double* out = hm.data() + (q * h + y) * vw;
          for (size_t k = 0; k < n; ++k) {
            const double gk = g[k];
            const double* in = v[q].data() + k;
            for (size_t x = 0; x < vw; ++x) out[x] += gk * in[x];
          }
        }
      }
    });
    parallelForRange(vh, 8, [&](size_t y0, size_t y1) {
      std::vector<double> m(5 * vw);
      for (size_t y = y0; y < y1; ++y) {
        std::fill(m.begin(), m.end(), 0.0);
        for (size_t q = 0; q < 5; ++q)
          for (size_t k = 0; k < n; ++k) {
            const double gk = g[k];
            const double* in = hm.data() + (q * h + y + k) * vw;
            double* out = m.data() + q * vw;
            for (size_t x = 0; x < vw; ++x) out[x] += gk * in[x];
          }
        double sum = 0;
        for (size_t x = 0; x < vw; ++x) {
          const double mu_a = m[x], mu_b = m[vw + x];
          const double var_a = m[2 * vw + x] - mu_a * mu_a, var_b = m[3 * vw + x] - mu_b * mu_b,
                       cov = m[4 * vw + x] - mu_a * mu_b;
          sum += (2 * mu_a * mu_b + kC1) * (2 * cov + kC2) /
                 ((mu_a * mu_a + mu_b * mu_b + kC1) * (var_a + var_b + kC2));
        }
        row_sums[y] += sum;
      }
    });
  }
  double total = 0;
  for (double s : row_sums) total += s;
  return total / (3.0 * static_cast<double>(vw) * static_cast<double>(vh));
}

double ssim(const ImageRGBA& a, const ImageRGBA& b) {
  assert(a.width == b.width && a.height == b.height);
  return ssim(a.pixels.data(), 4, b.pixels.data(), 4, a.width, a.height);
}

ImageRGBA diffImage(const ImageRGBA& a, const ImageRGBA& b, float gain) {
  assert(a.width == b.width && a.height == b.height);
  ImageRGBA d(a.width, a.height);
  for (size_t i = 0; i < d.pixels.size(); i += 4) {
    for (size_t c = 0; c < 3; ++c)
      d.pixels[i + c] = std::min(1.0f, std::abs(a.pixels[i + c] - b.pixels[i + c]) * gain);
    d.pixels[i + 3] = 1.0f;
  }
  return d;
}

}  // namespace sf
