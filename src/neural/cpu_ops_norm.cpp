// Normalisation over rows (cpu_ops_kernels.h): LayerNormalization (every axis from `axis` on is one row) and
// InstanceNormalization (each (n, c) plane is one row). A row's mean and variance in double, two passes
// (ONNX's reference: the mean of the squared deviations), then scale and bias.
#include <cmath>

#include "neural/cpu_ops_kernels.h"

namespace sf::nn::cpu {

namespace {

// The mean and 1 / sqrt(variance + epsilon) of `len` values of x from `first` on.
std::pair<double, double> rowStatistics(const Tensor& x, int64_t first, int64_t len, double epsilon) {
  double sum = 0;
  for (int64_t k = 0; k < len; ++k) sum += x.f[static_cast<size_t>(first + k)];
  const double mean = sum / static_cast<double>(len);
  double squares = 0;
  for (int64_t k = 0; k < len; ++k) {
    const double d = x.f[static_cast<size_t>(first + k)] - mean;
    squares += d * d;
  }
  return {mean, 1.0 / std::sqrt(squares / static_cast<double>(len) + epsilon)};
}

}  // namespace

void checkLayerNormalization(const Node& node, int64_t opset) {
  const int64_t stash = node.attrInt("stash_type", 1);
  if (stash != 1)
    refuseAttribute(node, opset, "stash_type", std::to_string(stash), "1: statistics in float32");
  if (node.outputs.size() > 3) nodeError(node, opset, "at most 3 outputs (Y, Mean, InvStdDev)");
}

// LayerNormalization (opset 17): X viewed as rows of every axis from `axis` on; Scale and B hold one value
// per element of a row (or one for all: ONNX's function flattens them). As ONNX's function: the normalised
// value is rounded to X's type, then scaled, then biased (each step rounded to it). Mean and InvStdDev are
// float32 (stash_type 1), of X's shape with the row's axes 1.
Outputs opLayerNormalization(const Ctx& c) {
  const Tensor& x = c.in(0);
  const Tensor& scale = c.in(1);
  const Tensor* bias = c.opt(2);
  c.requireFloat(x, "X");
  c.sameType(x, scale, "X and Scale");
  if (bias) c.sameType(x, *bias, "X and B");
  const auto rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) c.fail("X must have rank 1 or more, it is a scalar");
  const size_t axis = c.axis(c.node.attrInt("axis", -1), rank);
  const int64_t rows = dimsProduct(x.shape, 0, axis), cols = dimsProduct(x.shape, axis, x.shape.size());
  const Shape row_shape(x.shape.begin() + static_cast<std::ptrdiff_t>(axis), x.shape.end());
  for (const Tensor* t : {&scale, bias}) {
    if (!t) continue;
    if (t->numel() != cols && t->numel() != 1)
      c.fail(std::string(t == &scale ? "Scale" : "B") + " of shape " + shapeString(t->shape) +
             " does not match the normalised shape " + shapeString(row_shape) + " (axis " +
             std::to_string(axis) + " of X " + shapeString(x.shape) + ")");
  }
  const double epsilon = c.node.attrFloat("epsilon", 1e-5f);
  Shape reduced = x.shape;
  for (size_t d = axis; d < reduced.size(); ++d) reduced[d] = 1;
  const bool stats = c.node.outputs.size() > 1;
  Tensor y = c.output(x.dtype, x.shape);
  Tensor mean = stats ? c.output(DType::kFloat32, reduced) : Tensor();
  Tensor inv = stats ? c.output(DType::kFloat32, reduced) : Tensor();
  const DType t = x.dtype;
  for (int64_t r = 0; r < rows; ++r) {
    const auto [m, s] = rowStatistics(x, r * cols, cols, epsilon);
    if (stats) {
      mean.f[static_cast<size_t>(r)] = static_cast<float>(m);
      inv.f[static_cast<size_t>(r)] = static_cast<float>(s);
    }
    for (int64_t j = 0; j < cols; ++j) {
      const auto k = static_cast<size_t>(r * cols + j);
      const double normalised = roundToFloatType((x.f[k] - m) * s, t);
      const double scaled =
          roundToFloatType(normalised * scale.f[scale.f.size() == 1 ? 0 : static_cast<size_t>(j)], t);
      y.f[k] = bias ? roundToFloatType(scaled + bias->f[bias->f.size() == 1 ? 0 : static_cast<size_t>(j)], t)
                    : static_cast<float>(scaled);
    }
  }
  Outputs out;
  out.push_back(std::move(y));
  if (stats) {
    out.push_back(std::move(mean));
    out.push_back(std::move(inv));
  }
  return out;
}

// InstanceNormalization: X (N, C, D1, ...); each (n, c) plane normalised, then scale[c] and B[c].
Outputs opInstanceNormalization(const Ctx& c) {
  const Tensor& x = c.in(0);
  const Tensor& scale = c.in(1);
  const Tensor& bias = c.in(2);
  c.requireFloat(x, "input");
  c.sameType(x, scale, "input and scale");
  c.sameType(x, bias, "input and B");
  if (x.shape.size() < 2) c.fail("input must be (N, C, D1, ...), it has shape " + shapeString(x.shape));
  const int64_t channels = x.shape[1];
  if (scale.shape != Shape{channels} || bias.shape != Shape{channels})
    c.fail("scale and B must be vectors of " + std::to_string(channels) + " values (the channels of input " +
           shapeString(x.shape) + "), they have shapes " + shapeString(scale.shape) + " and " +
           shapeString(bias.shape));
  const double epsilon = c.node.attrFloat("epsilon", 1e-5f);
  const int64_t planes = dimsProduct(x.shape, 0, 2), len = dimsProduct(x.shape, 2, x.shape.size());
  Tensor y = c.output(x.dtype, x.shape);
  for (int64_t p = 0; p < planes; ++p) {
    const auto [m, s] = rowStatistics(x, p * len, len, epsilon);
    const auto ch = static_cast<size_t>(p % channels);
    for (int64_t k = p * len; k < (p + 1) * len; ++k)
      y.f[static_cast<size_t>(k)] =
          static_cast<float>((x.f[static_cast<size_t>(k)] - m) * s * scale.f[ch] + bias.f[ch]);
  }
  return one(std::move(y));
}

}  // namespace sf::nn::cpu
