// Convolution, pooling and batch normalisation over N-D spatial dimensions (cpu_ops_kernels.h): one
// sliding-window geometry (strides, dilations, pads, auto_pad, ceil_mode) shared by Conv, MaxPool and
// AveragePool; ConvTranspose as a scatter; BatchNormalization in inference mode.
#include <algorithm>
#include <cmath>
#include <limits>

#include "neural/cpu_ops_kernels.h"

namespace sf::nn::cpu {

namespace {

// The sliding-window geometry shared by Conv, MaxPool and AveragePool over the spatial dimensions.
struct Window {
  Shape in, kernel, out;
  std::vector<int64_t> stride, dilation, pad_begin, pad_end;
};

// In the order of the names pickValue is given.
enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

AutoPad autoPad(const Node& node, int64_t opset) {
  return static_cast<AutoPad>(
      pickValue(node, opset, "auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}));
}

std::vector<int64_t> spatialAttr(const Ctx& c, const char* name, size_t count, int64_t fallback,
                                 int64_t min_value) {
  std::vector<int64_t> v = c.node.attrInts(name, std::vector<int64_t>(count, fallback));
  if (v.size() != count)
    c.fail(std::string("attribute ") + name + " " + shapeString(v) + " must hold " + std::to_string(count) +
           " values");
  for (int64_t x : v)
    if (x < min_value)
      c.fail(std::string("attribute ") + name + " " + shapeString(v) + " holds a value below " +
             std::to_string(min_value));
  return v;
}

Window slidingWindow(const Ctx& c, const Shape& in, const Shape& kernel, bool ceil_mode) {
  const size_t nd = in.size();
  Window w{in,
           kernel,
           Shape(nd),
           spatialAttr(c, "strides", nd, 1, 1),
           spatialAttr(c, "dilations", nd, 1, 1),
           std::vector<int64_t>(nd),
           std::vector<int64_t>(nd)};
  const std::vector<int64_t> pads = spatialAttr(c, "pads", 2 * nd, 0, 0);
  const AutoPad mode = autoPad(c.node, c.opset);
  for (size_t d = 0; d < nd; ++d) {
    const int64_t s = w.stride[d], extent = c.add(c.mul(kernel[d] - 1, w.dilation[d]), 1);
    if (mode == AutoPad::kSameUpper || mode == AutoPad::kSameLower) {
      // Output ceil(in / stride); the padding that needs, the odd one at the end (UPPER) or start (LOWER).
      w.out[d] = (in[d] + s - 1) / s;
      const int64_t total = std::max<int64_t>(c.add((w.out[d] - 1) * s, extent) - in[d], 0);
      w.pad_begin[d] = mode == AutoPad::kSameUpper ? total / 2 : total - total / 2;
      w.pad_end[d] = total - w.pad_begin[d];
      continue;
    }
    if (mode == AutoPad::kNotSet) {
      w.pad_begin[d] = pads[d];
      w.pad_end[d] = pads[d + nd];
    }
    const int64_t span = c.add(c.add(in[d], w.pad_begin[d]), w.pad_end[d]) - extent;
    if (span < 0)
      c.fail("kernel " + shapeString(kernel) + " (dilated) is larger than the padded input " +
             shapeString(in));
    w.out[d] = span / s + 1;
    // ceil_mode adds the partial window at the end, unless it would start in the end padding.
    if (ceil_mode && span % s != 0 && c.mul(w.out[d], s) < c.add(in[d], w.pad_begin[d])) ++w.out[d];
  }
  return w;
}

// Walks the output positions of a window: calls f(output index, first input coordinate per dimension).
template <class F>
void forEachWindow(const Window& w, F&& f) {
  const size_t nd = w.in.size();
  std::vector<int64_t> pos(nd, 0), start(nd);
  const int64_t n = elementCount(w.out);
  for (int64_t o = 0; o < n; ++o) {
    for (size_t d = 0; d < nd; ++d) start[d] = pos[d] * w.stride[d] - w.pad_begin[d];
    f(o, start);
    for (size_t d = nd; d-- > 0;) {
      if (++pos[d] < w.out[d]) break;
      pos[d] = 0;
    }
  }
}

// Per-dimension offsets (in input coordinates, dilation applied) of every kernel tap, tap-major.
std::vector<int64_t> kernelTaps(const Window& w) {
  const size_t nd = w.in.size();
  const int64_t n = elementCount(w.kernel);
  std::vector<int64_t> taps(static_cast<size_t>(n) * nd);
  std::vector<int64_t> k(nd, 0);
  for (int64_t t = 0; t < n; ++t) {
    for (size_t d = 0; d < nd; ++d) taps[t * nd + d] = k[d] * w.dilation[d];
    for (size_t d = nd; d-- > 0;) {
      if (++k[d] < w.kernel[d]) break;
      k[d] = 0;
    }
  }
  return taps;
}

// The row-major input index of window start + tap, or -1 when that lies outside the input (in padding).
int64_t tapIndex(const Window& w, const std::vector<int64_t>& start, const int64_t* tap) {
  int64_t idx = 0;
  for (size_t d = 0; d < w.in.size(); ++d) {
    const int64_t p = start[d] + tap[d];
    if (p < 0 || p >= w.in[d]) return -1;
    idx = idx * w.in[d] + p;
  }
  return idx;
}

// X (N, C, spatial...) and, for convolutions, W's spatial kernel: checks ranks, returns the spatial shape.
Shape spatialShape(const Ctx& c, const Tensor& x) {
  c.requireFloat(x, "X");
  if (x.shape.size() < 3) c.fail("X must be (N, C, spatial...), it has shape " + shapeString(x.shape));
  return Shape(x.shape.begin() + 2, x.shape.end());
}

}  // namespace

Outputs opConv(const Ctx& c) {
  const Tensor& x = c.in(0);
  const Tensor& wt = c.in(1);
  const Tensor* bias = c.opt(2);
  const Shape in = spatialShape(c, x);
  c.sameType(x, wt, "X and W");
  c.requireRank(wt, x.shape.size(), "W");
  const int64_t batch = x.shape[0], channels = x.shape[1], maps = wt.shape[0],
                group = c.node.attrInt("group", 1);
  if (group < 1 || channels % group != 0 || maps % group != 0 || wt.shape[1] != channels / group)
    c.fail("group " + std::to_string(group) + " does not fit X " + shapeString(x.shape) + " and W " +
           shapeString(wt.shape));
  const Shape kernel(wt.shape.begin() + 2, wt.shape.end());
  if (c.node.attr("kernel_shape") && c.node.attrInts("kernel_shape") != kernel)
    c.fail("kernel_shape " + shapeString(c.node.attrInts("kernel_shape")) + " differs from W " +
           shapeString(wt.shape));
  if (bias && (bias->shape != Shape{maps} || bias->dtype != x.dtype))
    c.fail("B must be a vector of " + std::to_string(maps) + " values of X's type");
  const Window w = slidingWindow(c, in, kernel, false);
  Shape out{batch, maps};
  out.insert(out.end(), w.out.begin(), w.out.end());
  Tensor y = c.output(x.dtype, out);
  const int64_t cg = channels / group, mg = maps / group;
  const int64_t in_size = elementCount(in), out_size = elementCount(w.out), k_size = elementCount(kernel);
  const std::vector<int64_t> taps = kernelTaps(w);
  const size_t nd = in.size();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t m = 0; m < maps; ++m) {
      const int64_t g = m / mg;
      forEachWindow(w, [&](int64_t o, const std::vector<int64_t>& start) {
        double acc = bias ? bias->f[m] : 0.0;
        for (int64_t t = 0; t < k_size; ++t) {
          const int64_t idx = tapIndex(w, start, &taps[t * nd]);
          if (idx < 0) continue;
          for (int64_t ci = 0; ci < cg; ++ci) {
            const float xv = x.f[(n * channels + g * cg + ci) * in_size + idx];
            acc += static_cast<double>(xv) * static_cast<double>(wt.f[(m * cg + ci) * k_size + t]);
          }
        }
        y.f[(n * maps + m) * out_size + o] = static_cast<float>(acc);
      });
    }
  }
  return one(std::move(y));
}

// ConvTranspose: every input element scatters kernel * value into the output at stride steps. The output
// size is output_shape when given (the padding follows from it), else stride (in - 1) + output_padding +
// dilated kernel - pads; auto_pad SAME makes it in * stride.
Outputs opConvTranspose(const Ctx& c) {
  const Tensor& x = c.in(0);
  const Tensor& wt = c.in(1);
  const Tensor* bias = c.opt(2);
  const Shape in = spatialShape(c, x);
  c.sameType(x, wt, "X and W");
  c.requireRank(wt, x.shape.size(), "W");
  const size_t nd = in.size();
  const int64_t batch = x.shape[0], channels = x.shape[1], group = c.node.attrInt("group", 1);
  if (group < 1 || channels % group != 0 || wt.shape[0] != channels)
    c.fail("group " + std::to_string(group) + " does not fit X " + shapeString(x.shape) + " and W " +
           shapeString(wt.shape));
  const int64_t mg = wt.shape[1], maps = mg * group, cg = channels / group;
  const Shape kernel(wt.shape.begin() + 2, wt.shape.end());
  if (c.node.attr("kernel_shape") && c.node.attrInts("kernel_shape") != kernel)
    c.fail("kernel_shape " + shapeString(c.node.attrInts("kernel_shape")) + " differs from W " +
           shapeString(wt.shape));
  if (bias && (bias->shape != Shape{maps} || bias->dtype != x.dtype))
    c.fail("B must be a vector of " + std::to_string(maps) + " values of X's type");
  const std::vector<int64_t> stride = spatialAttr(c, "strides", nd, 1, 1),
                             dilation = spatialAttr(c, "dilations", nd, 1, 1);
  const std::vector<int64_t> out_pad = spatialAttr(c, "output_padding", nd, 0, 0),
                             pads = spatialAttr(c, "pads", 2 * nd, 0, 0);
  std::vector<int64_t> output_shape = c.node.attrInts("output_shape");
  if (output_shape.size() == nd + 2)
    output_shape.erase(output_shape.begin(), output_shape.begin() + 2);  // (N, C, ...) form
  if (!output_shape.empty() && output_shape.size() != nd)
    c.fail("output_shape " + shapeString(output_shape) + " must hold " + std::to_string(nd) + " values");
  const AutoPad mode = autoPad(c.node, c.opset);
  Shape out_spatial(nd);
  std::vector<int64_t> pad_begin(nd);
  for (size_t d = 0; d < nd; ++d) {
    const int64_t full =
        c.add(c.add(c.mul(stride[d], in[d] - 1), out_pad[d]), c.add(c.mul(kernel[d] - 1, dilation[d]), 1));
    if (!output_shape.empty() || mode == AutoPad::kSameUpper || mode == AutoPad::kSameLower) {
      out_spatial[d] = output_shape.empty() ? c.mul(in[d], stride[d]) : output_shape[d];
      // A larger output than the input and kernel produce keeps the extra positions at the end (bias only).
      if (out_spatial[d] < 0) c.fail("output_shape " + shapeString(output_shape) + " holds a negative size");
      const int64_t total = std::max<int64_t>(full - out_spatial[d], 0);
      pad_begin[d] = mode == AutoPad::kSameUpper ? total / 2 : total - total / 2;
    } else {
      pad_begin[d] = mode == AutoPad::kValid ? 0 : pads[d];
      out_spatial[d] = full - pad_begin[d] - (mode == AutoPad::kValid ? 0 : pads[d + nd]);
      if (out_spatial[d] < 0) c.fail("pads " + shapeString(pads) + " remove more than the output holds");
    }
  }
  Shape out{batch, maps};
  out.insert(out.end(), out_spatial.begin(), out_spatial.end());
  Tensor y = c.output(x.dtype, out);
  const int64_t in_size = elementCount(in), out_size = elementCount(out_spatial),
                k_size = elementCount(kernel);
  std::vector<double> acc(y.f.size(), 0.0);
  std::vector<int64_t> pos(nd), k(nd);
  for (int64_t i = 0; i < in_size; ++i) {
    for (int64_t t = 0; t < k_size; ++t) {
      // Output coordinate of input i under tap t, or -1 outside.
      int64_t idx = 0;
      for (size_t d = 0; d < nd && idx >= 0; ++d) {
        const int64_t p = pos[d] * stride[d] + k[d] * dilation[d] - pad_begin[d];
        idx = (p < 0 || p >= out_spatial[d]) ? -1 : idx * out_spatial[d] + p;
      }
      if (idx >= 0) {
        for (int64_t n = 0; n < batch; ++n) {
          for (int64_t ch = 0; ch < channels; ++ch) {
            const double xv = x.f[(n * channels + ch) * in_size + i];
            const int64_t g = ch / cg;
            for (int64_t m = 0; m < mg; ++m)
              acc[(n * maps + g * mg + m) * out_size + idx] +=
                  xv * static_cast<double>(wt.f[(ch * mg + m) * k_size + t]);
          }
        }
      }
      for (size_t d = nd; d-- > 0;) {
        if (++k[d] < kernel[d]) break;
        k[d] = 0;
      }
    }
    for (size_t d = nd; d-- > 0;) {
      if (++pos[d] < in[d]) break;
      pos[d] = 0;
    }
  }
  for (size_t e = 0; e < acc.size(); ++e) {
    const double b =
        bias ? static_cast<double>(bias->f[(e / static_cast<size_t>(out_size)) % static_cast<size_t>(maps)])
             : 0.0;
    y.f[e] = static_cast<float>(acc[e] + b);
  }
  return one(std::move(y));
}

void checkPool(const Node& node, int64_t opset) {
  autoPad(node, opset);
  if (!node.attr("kernel_shape")) nodeError(node, opset, "attribute kernel_shape is required");
  const int64_t order = node.attrInt("storage_order", 0);
  if (order != 0 && order != 1)
    refuseAttribute(node, opset, "storage_order", std::to_string(order), "0 or 1");
}

void checkConv(const Node& node, int64_t opset) {
  autoPad(node, opset);
}

namespace {

// MaxPool (with the optional Indices output) and AveragePool over N-D windows.
Outputs pool(const Ctx& c, bool max) {
  checkPool(c.node, c.opset);
  const Tensor& x = c.in(0);
  if (x.shape.size() < 3) c.fail("X must be (N, C, spatial...), it has shape " + shapeString(x.shape));
  if (!max) c.requireFloat(x, "X");
  if (x.dtype == DType::kBool) c.fail("X must be numeric");
  const Shape in(x.shape.begin() + 2, x.shape.end());
  const size_t nd = in.size();
  const Shape kernel = spatialAttr(c, "kernel_shape", nd, 1, 1);
  const Window w = slidingWindow(c, in, kernel, c.node.attrInt("ceil_mode", 0) != 0);
  Shape out{x.shape[0], x.shape[1]};
  out.insert(out.end(), w.out.begin(), w.out.end());
  Tensor y = c.output(x.dtype, out);
  const bool want_indices = max && c.node.outputs.size() > 1 && !c.node.outputs[1].empty();
  Tensor indices = want_indices ? c.output(DType::kInt64, out) : Tensor();
  const bool include_pad = c.node.attrInt("count_include_pad", 0) != 0;
  const bool column_major = c.node.attrInt("storage_order", 0) == 1;
  const int64_t planes = x.shape[0] * x.shape[1], in_size = elementCount(in), out_size = elementCount(w.out);
  const int64_t k_size = elementCount(kernel);
  const std::vector<int64_t> taps = kernelTaps(w);
  for (int64_t p = 0; p < planes; ++p) {
    const int64_t base = p * in_size;
    forEachWindow(w, [&](int64_t o, const std::vector<int64_t>& start) {
      const int64_t at = p * out_size + o;
      if (max) {
        int64_t best = -1;
        for (int64_t t = 0; t < k_size; ++t) {
          const int64_t idx = tapIndex(w, start, &taps[t * nd]);
          if (idx < 0) continue;
          const bool better = best < 0 || (x.isFloat() ? x.f[base + idx] > x.f[base + best]
                                                       : intLess(x.i[base + best], x.i[base + idx], x.dtype));
          if (better) best = idx;
        }
        if (best < 0) {  // a window entirely in the padding
          y.set(static_cast<size_t>(at), -std::numeric_limits<double>::infinity());
          if (want_indices) indices.i[at] = -1;
          return;
        }
        if (x.isFloat()) {
          y.f[at] = x.f[base + best];
        } else {
          y.i[at] = x.i[base + best];
        }
        if (want_indices) {
          int64_t idx = best;
          if (column_major) {  // the spatial index read column-major (first dimension fastest)
            idx = 0;
            int64_t rest = best, scale = 1;
            std::vector<int64_t> coord(nd);
            for (size_t d = nd; d-- > 0;) {
              coord[d] = rest % in[d];
              rest /= in[d];
            }
            for (size_t d = 0; d < nd; ++d) {
              idx += coord[d] * scale;
              scale *= in[d];
            }
          }
          indices.i[at] = base + idx;
        }
      } else {
        double sum = 0;
        int64_t count = 0;
        for (int64_t t = 0; t < k_size; ++t) {
          const int64_t* tap = &taps[t * nd];
          const int64_t idx = tapIndex(w, start, tap);
          if (idx >= 0) {
            sum += x.f[base + idx];
            ++count;
          } else if (include_pad) {  // padding counts, but not what lies beyond it (a ceil_mode window)
            bool in_padded = true;
            for (size_t d = 0; d < nd; ++d) {
              const int64_t q = start[d] + tap[d];
              in_padded = in_padded && q >= -w.pad_begin[d] && q < in[d] + w.pad_end[d];
            }
            if (in_padded) ++count;
          }
        }
        y.f[at] = static_cast<float>(count ? sum / static_cast<double>(count) : kNaN);
      }
    });
  }
  Outputs result = one(std::move(y));
  if (want_indices) result.push_back(std::move(indices));
  return result;
}

}  // namespace

Outputs opMaxPool(const Ctx& c) {
  return pool(c, true);
}
Outputs opAveragePool(const Ctx& c) {
  return pool(c, false);
}

void checkBatchNormalization(const Node& node, int64_t opset) {
  if (node.attrInt("training_mode", 0) != 0)
    refuseAttribute(node, opset, "training_mode", std::to_string(node.attrInt("training_mode", 0)),
                    "inference mode only");
  for (size_t k = 1; k < node.outputs.size(); ++k)
    if (!node.outputs[k].empty())
      nodeError(node, opset,
                "output " + std::to_string(k) +
                    " (running statistics) is training mode, not supported by the CPU kernel");
}

// Inference: y = (x - mean) / sqrt(var + epsilon) * scale + B, per channel (dimension 1).
Outputs opBatchNormalization(const Ctx& c) {
  checkBatchNormalization(c.node, c.opset);
  const Tensor& x = c.in(0);
  c.requireFloat(x, "X");
  if (x.shape.size() < 2) c.fail("X must be (N, C, ...), it has shape " + shapeString(x.shape));
  const int64_t channels = x.shape[1];
  const Tensor* p[4] = {&c.in(1), &c.in(2), &c.in(3), &c.in(4)};
  for (const Tensor* t : p) {
    c.requireFloat(*t, "scale, B, mean and var");
    if (t->shape != Shape{channels})
      c.fail("scale, B, mean and var must be vectors of " + std::to_string(channels) + " values");
  }
  const float epsilon = c.node.attrFloat("epsilon", 1e-5f);
  Tensor y = c.output(x.dtype, x.shape);
  const int64_t inner = dimsProduct(x.shape, 2, x.shape.size());
  for (size_t k = 0; k < y.f.size(); ++k) {
    const auto ch = static_cast<size_t>((static_cast<int64_t>(k) / inner) % channels);
    y.f[k] = (x.f[k] - p[2]->f[ch]) / std::sqrt(p[3]->f[ch] + epsilon) * p[0]->f[ch] + p[1]->f[ch];
  }
  return one(std::move(y));
}

}  // namespace sf::nn::cpu
