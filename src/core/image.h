// Float RGBA images (the renderers' output) and the comparisons the tests and tools use.
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
  // expected splat depth sum(d * alpha * T) over the splats blended there (d: view-space z) and the
  // splats' final transmittance T, 2 floats per pixel in the layout of `pixels`. With a mesh layer both
  // cover only the splats in front of the mesh. The normalised depth is sum(d * alpha * T) / (1 - T).
  std::vector<float> depth;

  ImageRGBA() = default;
  ImageRGBA(int w, int h) : width(w), height(h), pixels(static_cast<size_t>(w) * static_cast<size_t>(h) * 4, 0.0f) {}

  float* at(int x, int y) { return pixels.data() + (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 4; }
  const float* at(int x, int y) const {
    return pixels.data() + (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 4;
  }
};

// 8-bit RGB with rounding and clamping to [0, 1]; 3 bytes per pixel, top row first.
std::vector<uint8_t> toRgb8(const ImageRGBA& image);

struct ImageDiff {
  double psnr = 0;         // over RGB in [0, 1] (clamped), infinity when identical
  double max_abs = 0;      // largest per-channel absolute difference
  double mean_abs = 0;
  double fraction_over = 0;  // fraction of pixels whose max channel difference exceeds `threshold`
};

// Compares the RGB channels of two images of the same size (values clamped to [0, 1] first).
ImageDiff compareImages(const ImageRGBA& a, const ImageRGBA& b, double threshold = 2.0 / 255.0);

// Per-pixel |a - b| * gain, for writing a visible diff image.
ImageRGBA diffImage(const ImageRGBA& a, const ImageRGBA& b, float gain = 4.0f);

}  // namespace sf
