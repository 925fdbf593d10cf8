// Float RGBA images (the renderers' output) and the comparisons the tests and tools use: the one home of
// image metrics (PSNR, SSIM).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sf {

// Row-major, top row first, 4 floats per pixel (r, g, b, alpha). Colour values are in the renderer's
// working space; alpha is 1 - final transmittance.
struct ImageRGBA {
  int width = 0;
  int height = 0;
  std::vector<float> pixels;
  // Optional depth plane (empty unless the render asked for it, RenderSettings::depth): per pixel the
  // expected depth sum(d * alpha * T) over the layers blended there (d: view-space z) and the final
  // transmittance T, 2 floats per pixel in the layout of `pixels`. A mesh fragment counts as one more layer
  // (an opaque one ends the sum with d_mesh * T and T = 0), so T = 1 - alpha always. The normalised depth is
  // sum(d * alpha * T) / (1 - T).
  std::vector<float> depth;

  ImageRGBA() = default;
  ImageRGBA(int w, int h)
      : width(w), height(h), pixels(static_cast<size_t>(w) * static_cast<size_t>(h) * 4, 0.0f) {}

  float* at(int x, int y) {
    return pixels.data() + (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 4;
  }
  const float* at(int x, int y) const {
    return pixels.data() + (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 4;
  }
};

// 8-bit RGB with rounding and clamping to [0, 1]; 3 bytes per pixel, top row first.
std::vector<uint8_t> toRgb8(const ImageRGBA& image);

struct ImageDiff {
  double psnr = 0;     // over RGB in [0, 1] (clamped), infinity when identical
  double max_abs = 0;  // largest per-channel absolute difference
  double mean_abs = 0;
  double fraction_over = 0;  // fraction of pixels whose max channel difference exceeds `threshold`
};

// Compares the RGB channels of two images of the same size (values clamped to [0, 1] first).
ImageDiff compareImages(const ImageRGBA& a, const ImageRGBA& b, double threshold = 2.0 / 255.0);

// Structural similarity (Wang, Bovik, Sheikh and Simoncelli 2004, "Image quality assessment: from error
// visibility to structural similarity") of two images of one size: per channel of RGB (values clamped to
// [0, 1], data range 1), local means, variances and covariance under an 11x11 Gaussian window of sigma 1.5
// (normalised to sum 1), SSIM = (2 mu_a mu_b + C1)(2 cov + C2) / ((mu_a^2 + mu_b^2 + C1)(var_a + var_b + C2))
// with C1 = (0.01)^2, C2 = (0.03)^2 and population (co)variances (E[ab] - mu_a mu_b); the mean over the three
// channels and every window position. Convention: 'valid' windows only, those lying wholly inside the image
// (a W x H image has (W - 10) x (H - 10) positions, no padding), the Gaussian-window form 3DGS-style
// evaluations report; a 'same' form that zero-pads the border would average in windows whose means the
// padding pulls down. An image narrower or lower than 11 pixels gets the largest odd window that fits (the
// same Gaussian, cut and renormalised). Identical images give exactly 1. `a` and `b` hold `a_channels` /
// `b_channels` (>= 3) floats per pixel, RGB first, row-major.
double ssim(const float* a, int a_channels, const float* b, int b_channels, int width, int height);
double ssim(const ImageRGBA& a, const ImageRGBA& b);

// Per-pixel |a - b| * gain, for writing a visible diff image.
ImageRGBA diffImage(const ImageRGBA& a, const ImageRGBA& b, float gain = 4.0f);

}  // namespace sf
