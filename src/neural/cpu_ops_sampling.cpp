// Sampling (cpu_ops_kernels.h): GridSample after PyTorch's grid_sample (float32 coordinate arithmetic, as
// it does) and Resize after the ONNX reference (separable taps per axis, coordinates in double), whose tap
// tables the Vulkan executor reads through resizeTapTables (cpu_ops.h).
#include <algorithm>
#include <array>
#include <cmath>

#include "neural/cpu_ops_kernels.h"

namespace sf::nn::cpu {

namespace {

// In the order of the names pickValue is given (the same for Resize and GridSample).
enum class SampleMode { kNearest, kLinear, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

struct GridSampleParams {
  SampleMode mode;
  Padding padding;
  bool align_corners;
};

GridSampleParams gridSampleParams(const Node& node, int64_t opset) {
  // Opset 20 renamed bilinear / bicubic to linear / cubic.
  const bool renamed = opset >= 20;
  GridSampleParams p{};
  p.mode = static_cast<SampleMode>(
      pickValue(node, opset, "mode", renamed ? "linear" : "bilinear",
                {"nearest", renamed ? "linear" : "bilinear", renamed ? "cubic" : "bicubic"}));
  p.padding = static_cast<Padding>(
      pickValue(node, opset, "padding_mode", "zeros", {"zeros", "border", "reflection"}));
  p.align_corners = node.attrInt("align_corners", 0) != 0;
  return p;
}

// Reflects a coordinate into [low, high] (given doubled, as PyTorch's grid sampler does: the bounds are
// pixel centres with align_corners, pixel edges without).
float reflectCoordinate(float v, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0.0f;
  const float low = static_cast<float>(twice_low) / 2.0f,
              span = static_cast<float>(twice_high - twice_low) / 2.0f;
  v = std::fabs(v - low);
  const float extra = std::fmod(v, span);
  const bool even_flips = std::fmod(std::floor(v / span), 2.0f) == 0.0f;
  return even_flips ? extra + low : span - extra + low;
}

// A source coordinate under border or reflection padding (zeros padding leaves it as it is).
float padCoordinate(float v, int64_t size, Padding padding, bool align_corners) {
  if (padding == Padding::kReflection) {
    v = align_corners ? reflectCoordinate(v, 0, 2 * (size - 1)) : reflectCoordinate(v, -1, 2 * size - 1);
  }
  if (padding != Padding::kZeros) v = std::clamp(v, 0.0f, static_cast<float>(size - 1));
  return v;
}

// Keys' cubic convolution weights with a = -0.75 (PyTorch's bicubic) for the taps at -1, 0, 1, 2 of t.
std::array<double, 4> cubicWeights(double t, double a) {
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // |d| <= 1
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

}  // namespace

void checkGridSample(const Node& node, int64_t opset) {
  gridSampleParams(node, opset);
}

// GridSample (opset 16, 4-D): X (N, C, H, W) sampled at grid (N, Ho, Wo, 2) of normalised (x, y) in
// [-1, 1]; the coordinate arithmetic follows PyTorch's grid_sample, in float32 as it does.
Outputs opGridSample(const Ctx& c) {
  const GridSampleParams p = gridSampleParams(c.node, c.opset);
  const Tensor& x = c.in(0);
  const Tensor& grid = c.in(1);
  c.requireFloat(x, "X");
  c.requireFloat(grid, "grid");
  if (x.shape.size() != 4)
    c.fail("only 4-D X (N, C, H, W) is supported, it has shape " + shapeString(x.shape));
  if (grid.shape.size() != 4 || grid.shape[0] != x.shape[0] || grid.shape[3] != 2)
    c.fail("grid must be (N, H_out, W_out, 2) for X " + shapeString(x.shape) + ", it has shape " +
           shapeString(grid.shape));
  const int64_t batch = x.shape[0], channels = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t ho = grid.shape[1], wo = grid.shape[2];
  if (h == 0 || w == 0) c.fail("X " + shapeString(x.shape) + " has no pixels to sample");
  Tensor y = c.output(x.dtype, {batch, channels, ho, wo});
  auto unnormalize = [&](float v, int64_t size) {
    return p.align_corners ? (v + 1.0f) / 2.0f * static_cast<float>(size - 1)
                           : ((v + 1.0f) * static_cast<float>(size) - 1.0f) / 2.0f;
  };
  // A pixel coordinate as an index; anything far outside becomes an index just outside (reads 0).
  auto cell = [](float v, int64_t size) { return std::clamp<int64_t>(saturateToInt64(v), -4, size + 4); };
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t i = 0; i < ho * wo; ++i) {
      const float gx = grid.f[(n * ho * wo + i) * 2], gy = grid.f[(n * ho * wo + i) * 2 + 1];
      for (int64_t ch = 0; ch < channels; ++ch) {
        const int64_t plane = (n * channels + ch) * h * w;
        // A pixel, zero outside the image (after any padding of the coordinate).
        auto pixel = [&](int64_t yy, int64_t xx) -> double {
          return (yy < 0 || yy >= h || xx < 0 || xx >= w) ? 0.0
                                                          : static_cast<double>(x.f[plane + yy * w + xx]);
        };
        double v = 0;
        if (!std::isfinite(gx) || !std::isfinite(gy)) {
          v = 0;  // a NaN or infinite grid value samples nothing
        } else if (p.mode == SampleMode::kCubic) {
          // Bicubic pads each tap, not the coordinate (the 4x4 neighbourhood must stay contiguous).
          const float ix = unnormalize(gx, w), iy = unnormalize(gy, h);
          const float fx = std::floor(ix), fy = std::floor(iy);
          const std::array<double, 4> wx = cubicWeights(ix - fx, -0.75), wy = cubicWeights(iy - fy, -0.75);
          for (int64_t r = 0; r < 4; ++r) {
            double row = 0;
            for (int64_t q = 0; q < 4; ++q) {
              const float tx = padCoordinate(fx - 1 + static_cast<float>(q), w, p.padding, p.align_corners);
              const float ty = padCoordinate(fy - 1 + static_cast<float>(r), h, p.padding, p.align_corners);
              row += wx[q] * pixel(cell(ty, h), cell(tx, w));
            }
            v += wy[r] * row;
          }
        } else {
          const float ix = padCoordinate(unnormalize(gx, w), w, p.padding, p.align_corners);
          const float iy = padCoordinate(unnormalize(gy, h), h, p.padding, p.align_corners);
          if (p.mode == SampleMode::kNearest) {
            v = pixel(cell(std::nearbyint(iy), h), cell(std::nearbyint(ix), w));  // ties to even, as PyTorch
          } else {
            const float fx = std::floor(ix), fy = std::floor(iy);
            const double tx = ix - fx, ty = iy - fy;
            const int64_t x0 = cell(fx, w), y0 = cell(fy, h);
            v = (1 - ty) * ((1 - tx) * pixel(y0, x0) + tx * pixel(y0, x0 + 1)) +
                ty * ((1 - tx) * pixel(y0 + 1, x0) + tx * pixel(y0 + 1, x0 + 1));
          }
        }
        y.f[((n * channels + ch) * ho * wo) + i] = static_cast<float>(v);
      }
    }
  }
  return one(std::move(y));
}

namespace {

// In the order of the names pickValue is given.
enum class Transform {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
// In the order of the names pickValue is given.
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeParams {
  SampleMode mode;
  Transform transform;
  Nearest nearest;
  double cubic_a;
  bool exclude_outside;
  double extrapolation;
};

ResizeParams resizeParams(const Node& node, int64_t opset) {
  ResizeParams p{};
  p.mode = static_cast<SampleMode>(pickValue(node, opset, "mode", "nearest", {"nearest", "linear", "cubic"}));
  p.transform =
      static_cast<Transform>(pickValue(node, opset, "coordinate_transformation_mode", "half_pixel",
                                       {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                        "tf_half_pixel_for_nn", "tf_crop_and_resize"}));
  p.nearest = static_cast<Nearest>(pickValue(node, opset, "nearest_mode", "round_prefer_floor",
                                             {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}));
  if (node.attrInt("antialias", 0) != 0) refuseAttribute(node, opset, "antialias", "1", "0 only");
  if (node.attr("axes"))
    refuseAttribute(node, opset, "axes", shapeString(node.attrInts("axes")),
                    "resize every axis: leave it out");
  const std::string policy = node.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch")
    refuseAttribute(node, opset, "keep_aspect_ratio_policy", "'" + policy + "'", "stretch only");
  p.cubic_a = node.attrFloat("cubic_coeff_a", -0.75f);
  p.exclude_outside = node.attrInt("exclude_outside", 0) != 0;
  p.extrapolation = node.attrFloat("extrapolation_value", 0.0f);
  return p;
}

// One output coordinate's source taps along one dimension (index, weight), or none when it extrapolates.
struct Taps {
  std::vector<std::pair<int64_t, double>> taps;
  bool extrapolate = false;
};

// The taps of output coordinate `o` along a dimension of `in` source samples at `scale` (out / in when sizes
// are given), after the ONNX reference: the coordinate mapped back in double, neighbours clamped to the
// edge, cubic weights optionally renormalised over the inside taps (exclude_outside). The "resized length"
// of the formulas is in * scale, not rounded to the output size (they differ when scales give a fractional
// length: ONNX's reference and test data use the exact one).
Taps resizeTaps(const ResizeParams& p, int64_t o, int64_t in, double scale, double roi_start,
                double roi_end) {
  const double xo = static_cast<double>(o), n_in = static_cast<double>(in), n_out = n_in * scale;
  double x = 0;
  switch (p.transform) {
    case Transform::kHalfPixel:
      x = (xo + 0.5) / scale - 0.5;
      break;
    case Transform::kPytorchHalfPixel:
      x = n_out > 1 ? (xo + 0.5) / scale - 0.5 : 0.0;
      break;
    case Transform::kAlignCorners:
      x = n_out == 1 ? 0.0 : xo * (n_in - 1) / (n_out - 1);
      break;
    case Transform::kAsymmetric:
      x = xo / scale;
      break;
    case Transform::kTfHalfPixelForNn:
      x = (xo + 0.5) / scale;
      break;
    case Transform::kTfCropAndResize:
      x = n_out > 1 ? roi_start * (n_in - 1) + xo * (roi_end - roi_start) * (n_in - 1) / (n_out - 1)
                    : 0.5 * (roi_start + roi_end) * (n_in - 1);
      break;
  }
  Taps t;
  if (p.transform == Transform::kTfCropAndResize && (x < 0 || x > n_in - 1)) {
    t.extrapolate = true;
    return t;
  }
  auto clampIndex = [in](double v) { return std::clamp<int64_t>(saturateToInt64(v), 0, in - 1); };
  const double f = std::floor(x), frac = x - f;
  if (p.mode == SampleMode::kNearest) {
    double pick = f;
    if (frac != 0) {
      switch (p.nearest) {
        case Nearest::kRoundPreferFloor:
          pick = frac <= 0.5 ? f : f + 1;
          break;
        case Nearest::kRoundPreferCeil:
          pick = frac < 0.5 ? f : f + 1;
          break;
        case Nearest::kFloor:
          pick = f;
          break;
        case Nearest::kCeil:
          pick = f + 1;
          break;
      }
    }
    t.taps.push_back({clampIndex(pick), 1.0});
  } else if (p.mode == SampleMode::kLinear) {
    t.taps.push_back({clampIndex(f), 1 - frac});
    t.taps.push_back({clampIndex(f + 1), frac});
  } else {
    const std::array<double, 4> w = cubicWeights(frac, p.cubic_a);
    double sum = 0;
    for (int64_t k = 0; k < 4; ++k) {
      const double at = f - 1 + static_cast<double>(k);
      const bool outside = at < 0 || at > n_in - 1;
      const double weight = p.exclude_outside && outside ? 0.0 : w[k];
      t.taps.push_back({clampIndex(at), weight});
      sum += weight;
    }
    if (p.exclude_outside && sum != 0)
      for (auto& tap : t.taps) tap.second /= sum;
  }
  // Drop zero weights: a dimension at scale 1 then costs one tap, not two or four.
  std::erase_if(t.taps, [](const auto& tap) { return tap.second == 0.0; });
  return t;
}

// Resize (opset 11+): N-D, separable: per dimension a list of taps per output coordinate, the output the
// weighted sum over the product of every dimension's taps. Sizes or scales give the output shape.
struct ResizeSetup {
  ResizeParams p;
  Shape out;
  std::vector<std::vector<Taps>> taps;  // per dimension, per output coordinate
};

ResizeSetup resizeSetup(const Ctx& c) {
  const ResizeParams p = resizeParams(c.node, c.opset);
  const Tensor& x = c.in(0);
  const size_t rank = x.shape.size();
  if (!x.isFloat() && p.mode != SampleMode::kNearest) c.fail("linear and cubic modes need a float input");
  const Tensor* roi = c.opt(1);
  const Tensor* scales = c.opt(2);
  const Tensor* sizes = c.opt(3);
  if (scales && scales->numel() == 0) scales = nullptr;
  if (sizes && sizes->numel() == 0) sizes = nullptr;
  if ((scales != nullptr) == (sizes != nullptr)) c.fail("exactly one of scales and sizes must be given");
  Shape out(rank);
  std::vector<double> scale(rank);
  if (sizes) {
    const std::vector<int64_t>& s = c.ints(*sizes, "sizes");
    if (s.size() != rank) c.fail("sizes " + shapeString(s) + " do not match rank " + std::to_string(rank));
    for (size_t d = 0; d < rank; ++d) {
      if (s[d] < 0) c.fail("sizes " + shapeString(s) + " hold a negative size");
      out[d] = s[d];
      scale[d] = x.shape[d] > 0 ? static_cast<double>(s[d]) / static_cast<double>(x.shape[d]) : 1.0;
    }
  } else {
    c.requireFloat(*scales, "scales");
    if (static_cast<size_t>(scales->numel()) != rank)
      c.fail("scales must hold one value per dimension (" + std::to_string(rank) + ")");
    for (size_t d = 0; d < rank; ++d) {
      scale[d] = scales->f[d];
      if (!(scale[d] > 0)) c.fail("scales must be positive");
      const double size = std::floor(static_cast<double>(x.shape[d]) * scale[d]);
      if (!(size <= static_cast<double>(kMaxTensorElements))) c.fail("output of more than 2^40 elements");
      out[d] = static_cast<int64_t>(size);
    }
  }
  std::vector<double> roi_start(rank, 0.0), roi_end(rank, 1.0);
  if (p.transform == Transform::kTfCropAndResize) {
    if (!roi || static_cast<size_t>(roi->numel()) != 2 * rank)
      c.fail("tf_crop_and_resize needs roi with 2 values per dimension");
    c.requireFloat(*roi, "roi");
    for (size_t d = 0; d < rank; ++d) {
      roi_start[d] = roi->f[d];
      roi_end[d] = roi->f[d + rank];
    }
  }
  if (c.count(out) == 0) return {p, out, {}};
  if (x.numel() == 0) c.fail("cannot resize an empty input to a non-empty output");
  std::vector<std::vector<Taps>> taps(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t o = 0; o < out[d]; ++o)
      taps[d].push_back(resizeTaps(p, o, x.shape[d], scale[d], roi_start[d], roi_end[d]));
  return {p, out, std::move(taps)};
}

}  // namespace

void checkResize(const Node& node, int64_t opset) {
  resizeParams(node, opset);
}

Outputs opResize(const Ctx& c) {
  const Tensor& x = c.in(0);
  const size_t rank = x.shape.size();
  ResizeSetup setup = resizeSetup(c);
  const ResizeParams& p = setup.p;
  const Shape& out = setup.out;
  Tensor y = c.output(x.dtype, out);
  if (y.numel() == 0) return one(std::move(y));
  const std::vector<std::vector<Taps>>& taps = setup.taps;
  const std::vector<int64_t> in_strides = rowStrides(x.shape);
  std::vector<int64_t> pos(rank, 0);
  std::vector<size_t> pick(rank, 0);  // which tap of each dimension, in the product
  const int64_t total = y.numel();
  for (int64_t k = 0; k < total; ++k) {
    bool extrapolate = false;
    for (size_t d = 0; d < rank; ++d) extrapolate = extrapolate || taps[d][pos[d]].extrapolate;
    double v = p.extrapolation;
    if (!extrapolate) {
      v = 0;
      std::fill(pick.begin(), pick.end(), 0);
      while (true) {
        double weight = 1;
        int64_t src = 0;
        for (size_t d = 0; d < rank; ++d) {
          const auto& tap = taps[d][pos[d]].taps[pick[d]];
          weight *= tap.second;
          src += tap.first * in_strides[d];
        }
        v += weight * x.asDouble(static_cast<size_t>(src));
        size_t d = rank;
        while (d-- > 0) {
          if (++pick[d] < taps[d][pos[d]].taps.size()) break;
          pick[d] = 0;
        }
        if (d == static_cast<size_t>(-1)) break;
      }
    }
    y.set(static_cast<size_t>(k), v);
    for (size_t d = rank; d-- > 0;) {
      if (++pos[d] < out[d]) break;
      pos[d] = 0;
    }
  }
  return one(std::move(y));
}

}  // namespace sf::nn::cpu

namespace sf::nn {

ResizeTapTables resizeTapTables(const Node& node, std::span<const Tensor* const> inputs, int64_t opset) {
  const cpu::Ctx c{node, inputs, opset};
  cpu::ResizeSetup setup = cpu::resizeSetup(c);
  ResizeTapTables tables;
  tables.out = setup.out;
  tables.extrapolation = setup.p.extrapolation;
  for (const std::vector<cpu::Taps>& axis : setup.taps) {
    ResizeTapTables::Axis& a = tables.axes.emplace_back();
    for (const cpu::Taps& t : axis) {
      a.extrapolate.push_back(t.extrapolate);
      a.taps.push_back(t.taps);
    }
  }
  return tables;
}

}  // namespace sf::nn
