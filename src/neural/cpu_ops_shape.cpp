// Shapes and data movement (cpu_ops_kernels.h): operators that only rearrange, repeat or select elements
// (Reshape and its kin keep the data and change the shape; Transpose, Expand, Slice walk it with other
// strides; Concat, Split, Gather, Tile copy blocks; Pad reads with edge, reflect or wrap indexing; ScatterND
// writes blocks of updates over a copy of its data).
#include <algorithm>
#include <cmath>
#include <limits>

#include "neural/cpu_ops_kernels.h"

namespace sf::nn::cpu {

Outputs opIdentity(const Ctx& c) {
  return one(c.in(0));
}

Outputs opShape(const Ctx& c) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  // start/end (opset 15) are clamped to [0, rank] after adding rank to negative values.
  auto clampAxis = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clampAxis(c.node.attrInt("start", 0));
  const int64_t end = clampAxis(c.node.attrInt("end", rank));
  Tensor y = c.output(DType::kInt64, {std::max<int64_t>(end - start, 0)});
  for (int64_t k = start; k < end; ++k) y.i[k - start] = x.shape[k];
  return one(std::move(y));
}

Outputs opReshape(const Ctx& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t>& spec = c.ints(c.in(1), "shape");
  const bool allowzero = c.opset >= 14 && c.node.attrInt("allowzero", 0) != 0;
  Shape out(spec.size());
  int64_t infer = -1;
  bool has_zero = false;
  for (size_t k = 0; k < spec.size(); ++k) {
    if (spec[k] == -1) {
      if (infer >= 0) c.fail("shape " + shapeString(spec) + " has more than one -1");
      infer = static_cast<int64_t>(k);
      out[k] = 1;
    } else if (spec[k] == 0 && !allowzero) {
      if (k >= x.shape.size())
        c.fail("shape " + shapeString(spec) + ": 0 copies a dimension the input " + shapeString(x.shape) +
               " lacks");
      out[k] = x.shape[k];
    } else if (spec[k] < 0) {
      c.fail("shape " + shapeString(spec) + " has a negative dimension");
    } else {
      has_zero = has_zero || spec[k] == 0;
      out[k] = spec[k];
    }
  }
  if (allowzero && has_zero && infer >= 0)
    c.fail("shape " + shapeString(spec) + " has both 0 and -1 with allowzero = 1");
  const int64_t total = x.numel();
  if (infer >= 0) {
    const int64_t known = c.count(out);
    if (known == 0 || total % known != 0)
      c.fail("cannot infer the -1 of shape " + shapeString(spec) + " for input " + shapeString(x.shape));
    out[infer] = total / known;
  }
  if (c.count(out) != total)
    c.fail("shape " + shapeString(spec) + " does not hold the " + std::to_string(total) + " elements of " +
           shapeString(x.shape));
  return one(reshaped(x, out));
}

Outputs opFlatten(const Ctx& c) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = c.node.attrInt("axis", 1);
  if (axis < -rank || axis > rank)
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  const auto a = static_cast<size_t>(axis);
  return one(reshaped(x, {dimsProduct(x.shape, 0, a), dimsProduct(x.shape, a, x.shape.size())}));
}

Outputs opUnsqueeze(const Ctx& c) {
  const Tensor& x = c.in(0);
  bool given = false;
  const std::vector<int64_t> axes = axesArgument(c, 13, 1, &given);
  if (!given) c.fail("axes are required");
  const auto rank = static_cast<int64_t>(x.shape.size() + axes.size());
  const std::vector<size_t> at = uniqueAxes(c, axes, rank);
  Shape out;
  size_t next = 0;
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d)
    out.push_back(std::find(at.begin(), at.end(), d) != at.end() ? 1 : x.shape[next++]);
  return one(reshaped(x, out));
}

Outputs opSqueeze(const Ctx& c) {
  const Tensor& x = c.in(0);
  bool given = false;
  const std::vector<int64_t> axes = axesArgument(c, 13, 1, &given);
  std::vector<size_t> drop;
  if (given) {
    drop = uniqueAxes(c, axes, static_cast<int64_t>(x.shape.size()));
    for (size_t d : drop)
      if (x.shape[d] != 1)
        c.fail("cannot squeeze axis " + std::to_string(d) + " of shape " + shapeString(x.shape) + " (not 1)");
  } else {
    for (size_t d = 0; d < x.shape.size(); ++d)
      if (x.shape[d] == 1) drop.push_back(d);
  }
  Shape out;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (std::find(drop.begin(), drop.end(), d) == drop.end()) out.push_back(x.shape[d]);
  return one(reshaped(x, out));
}

Outputs opTranspose(const Ctx& c) {
  const Tensor& x = c.in(0);
  const size_t rank = x.shape.size();
  std::vector<int64_t> perm = c.node.attrInts("perm");
  if (perm.empty()) {
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  }
  if (perm.size() != rank)
    c.fail("perm " + shapeString(perm) + " does not match rank " + std::to_string(rank));
  const std::vector<size_t> p = uniqueAxes(c, perm, static_cast<int64_t>(rank));
  const std::vector<int64_t> in_strides = rowStrides(x.shape);
  Shape out(rank);
  std::vector<int64_t> st(rank);
  for (size_t d = 0; d < rank; ++d) {
    out[d] = x.shape[p[d]];
    st[d] = in_strides[p[d]];
  }
  Tensor y = c.output(x.dtype, out);
  gatherStrided(y, x, st);
  return one(std::move(y));
}

Outputs opExpand(const Ctx& c) {
  const Tensor& x = c.in(0);
  const Shape shape = broadcastShapes(c, x.shape, c.ints(c.in(1), "shape"));
  Tensor y = c.output(x.dtype, shape);
  gatherStrided(y, x, broadcastStrides(x.shape, shape));
  return one(std::move(y));
}

Outputs opConcat(const Ctx& c) {
  if (c.inputs.empty()) c.fail("needs at least one input");
  const Tensor& first = c.in(0);
  const auto rank = static_cast<int64_t>(first.shape.size());
  if (c.opset < 4 && !c.node.attr("axis")) c.fail("axis is required");
  const size_t axis = c.axis(c.node.attrInt("axis", 1), rank);
  Shape out = first.shape;
  out[axis] = 0;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const Tensor& t = c.in(k);
    c.sameType(first, t, "input " + std::to_string(k));
    bool fits = t.shape.size() == first.shape.size();
    for (size_t d = 0; fits && d < t.shape.size(); ++d) fits = d == axis || t.shape[d] == first.shape[d];
    if (!fits)
      c.fail("input " + std::to_string(k) + " of shape " + shapeString(t.shape) +
             " does not concatenate with " + shapeString(first.shape) + " on axis " + std::to_string(axis));
    out[axis] += t.shape[axis];
  }
  Tensor y = c.output(first.dtype, out);
  const int64_t outer = dimsProduct(out, 0, axis), inner = dimsProduct(out, axis + 1, out.size());
  int64_t offset = 0;  // along the axis
  for (const Tensor* t : c.inputs) {
    const int64_t block = t->shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) copyBlock(y, (o * out[axis] + offset) * inner, *t, o * block, block);
    offset += t->shape[axis];
  }
  return one(std::move(y));
}

Outputs opSplit(const Ctx& c) {
  const Tensor& x = c.in(0);
  const size_t axis = c.axis(c.node.attrInt("axis", 0), static_cast<int64_t>(x.shape.size()));
  const int64_t dim = x.shape[axis];
  const auto parts = static_cast<int64_t>(c.node.outputs.size());
  std::vector<int64_t> split;
  if (c.opset >= 13) {
    if (const Tensor* t = c.opt(1)) split = c.ints(*t, "split");
  } else {
    split = c.node.attrInts("split");
  }
  if (split.empty()) {
    if (c.opset >= 18 && c.node.attr("num_outputs") && c.node.attrInt("num_outputs", 0) != parts)
      c.fail("num_outputs does not match the node's " + std::to_string(parts) + " outputs");
    if (parts <= 0) c.fail("has no outputs");
    // Equal parts; from opset 18 the last may be smaller (ceil), before that the split must be exact.
    const int64_t size = (dim + parts - 1) / parts;
    if (dim % parts != 0 && c.opset < 18)
      c.fail("dimension " + std::to_string(dim) + " does not split into " + std::to_string(parts) +
             " equal parts");
    for (int64_t k = 0; k < parts; ++k) split.push_back(std::clamp<int64_t>(dim - k * size, 0, size));
  }
  if (static_cast<int64_t>(split.size()) != parts)
    c.fail("split has " + std::to_string(split.size()) + " sizes for " + std::to_string(parts) + " outputs");
  int64_t sum = 0;
  for (int64_t s : split) {
    if (s < 0) c.fail("split sizes must not be negative");
    sum = c.add(sum, s);
  }
  if (sum != dim)
    c.fail("split sizes " + shapeString(split) + " do not add up to dimension " + std::to_string(dim));
  const int64_t outer = dimsProduct(x.shape, 0, axis), inner = dimsProduct(x.shape, axis + 1, x.shape.size());
  Outputs out;
  int64_t offset = 0;
  for (int64_t s : split) {
    Shape shape = x.shape;
    shape[axis] = s;
    Tensor y = c.output(x.dtype, shape);
    for (int64_t o = 0; o < outer; ++o) copyBlock(y, o * s * inner, x, (o * dim + offset) * inner, s * inner);
    offset += s;
    out.push_back(std::move(y));
  }
  return out;
}

// Slice (opset 10+: starts, ends, axes, steps as inputs; before: attributes, step 1). Negative starts and
// ends count from the end; they are clamped to [0, dim] (step > 0) or [-1, dim - 1] (step < 0), which makes
// INT64_MAX / INT64_MIN mean "to the end".
Outputs opSlice(const Ctx& c) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset >= 10) {
    starts = c.ints(c.in(1), "starts");
    ends = c.ints(c.in(2), "ends");
    if (const Tensor* t = c.opt(3)) axes = c.ints(*t, "axes");
    if (const Tensor* t = c.opt(4)) steps = c.ints(*t, "steps");
  } else {
    starts = c.node.attrInts("starts");
    ends = c.node.attrInts("ends");
    axes = c.node.attrInts("axes");
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  const std::vector<size_t> dims = uniqueAxes(c, axes, rank);
  Shape out = x.shape;
  const std::vector<int64_t> in_strides = rowStrides(x.shape);
  std::vector<int64_t> st = in_strides;
  int64_t base = 0;
  for (size_t k = 0; k < dims.size(); ++k) {
    const size_t d = dims[k];
    const int64_t dim = x.shape[d], step = steps[k];
    if (step == 0) c.fail("step of axis " + std::to_string(d) + " is 0");
    int64_t start = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t end = ends[k] < 0 ? ends[k] + dim : ends[k];
    int64_t n = 0;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      if (end > start) n = (end - start - 1) / step + 1;
    } else if (dim > 0) {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      const int64_t magnitude =
          step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
      if (start > end) n = (start - end - 1) / magnitude + 1;
    }
    out[d] = n;
    if (n > 0) base += start * in_strides[d];
    st[d] = in_strides[d] * (n > 1 ? step : 1);  // unused when n <= 1: avoid overflowing with a huge step
  }
  Tensor y = c.output(x.dtype, out);
  gatherStrided(y, x, st, base);
  return one(std::move(y));
}

Outputs opGather(const Ctx& c) {
  const Tensor& x = c.in(0);
  const Tensor& idx = c.in(1);
  const std::vector<int64_t>& indices = c.ints(idx, "indices");
  const size_t axis = c.axis(c.node.attrInt("axis", 0), static_cast<int64_t>(x.shape.size()));
  const int64_t dim = x.shape[axis];
  Shape out(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.shape.end());
  Tensor y = c.output(x.dtype, out);
  const int64_t outer = dimsProduct(x.shape, 0, axis), inner = dimsProduct(x.shape, axis + 1, x.shape.size());
  const auto n = static_cast<int64_t>(indices.size());
  for (int64_t j = 0; j < n; ++j) {
    int64_t i = indices[j];
    if (i < -dim || i >= dim)
      c.fail("index " + std::to_string(i) + " is out of range for dimension " + std::to_string(dim));
    if (i < 0) i += dim;
    for (int64_t o = 0; o < outer; ++o) copyBlock(y, (o * n + j) * inner, x, (o * dim + i) * inner, inner);
  }
  return one(std::move(y));
}

namespace {

// In the order of the names pickValue is given.
enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

ScatterReduction scatterReduction(const Node& node, int64_t opset) {
  std::vector<std::string> names{"none"};
  if (opset >= 16) names.insert(names.end(), {"add", "mul"});
  if (opset >= 18) names.insert(names.end(), {"max", "min"});
  return static_cast<ScatterReduction>(pickValue(node, opset, "reduction", "none", names));
}

}  // namespace

void checkScatterND(const Node& node, int64_t opset) {
  scatterReduction(node, opset);
}

// ScatterND: a copy of data, then for each index tuple (the last axis of indices, negative values from the
// end) its block of updates written over (reduction none: the last write wins) or combined with the data in
// order (add, mul: integers wrap; max, min: a NaN wins).
Outputs opScatterND(const Ctx& c) {
  const Tensor& data = c.in(0);
  const Tensor& idx = c.in(1);
  const Tensor& updates = c.in(2);
  const ScatterReduction reduction = scatterReduction(c.node, c.opset);
  c.sameType(data, updates, "data and updates");
  const std::vector<int64_t>& indices = c.ints(idx, "indices");
  if (idx.shape.empty()) c.fail("indices must have rank 1 or more, it is a scalar");
  const auto k = static_cast<size_t>(idx.shape.back());
  if (k > data.shape.size())
    c.fail("index tuples of " + std::to_string(k) + " values for data of rank " +
           std::to_string(data.shape.size()));
  Shape want(idx.shape.begin(), idx.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + static_cast<std::ptrdiff_t>(k), data.shape.end());
  if (updates.shape != want)
    c.fail("updates of shape " + shapeString(updates.shape) + ", expected " + shapeString(want) +
           " (indices " + shapeString(idx.shape) + ", data " + shapeString(data.shape) + ")");
  if (reduction != ScatterReduction::kNone && data.dtype == DType::kBool)
    c.fail("a reduction over bool data");
  Tensor y = c.output(data.dtype, data.shape);
  copyBlock(y, 0, data, 0, data.numel());
  const std::vector<int64_t> st = rowStrides(data.shape);
  const int64_t block = dimsProduct(data.shape, k, data.shape.size());
  const int64_t tuples = dimsProduct(idx.shape, 0, idx.shape.size() - 1);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t at = 0;
    for (size_t d = 0; d < k; ++d) {
      int64_t i = indices[static_cast<size_t>(t) * k + d];
      const int64_t dim = data.shape[d];
      if (i < -dim || i >= dim)
        c.fail("index " + std::to_string(i) + " is out of range for dimension " + std::to_string(d) +
               " of size " + std::to_string(dim));
      at += (i < 0 ? i + dim : i) * st[d];
    }
    if (reduction == ScatterReduction::kNone) {
      copyBlock(y, at, updates, t * block, block);
      continue;
    }
    for (int64_t e = 0; e < block; ++e) {
      const auto o = static_cast<size_t>(at + e), u = static_cast<size_t>(t * block + e);
      if (y.isFloat()) {
        const double a = y.f[o], b = updates.f[u];
        double r = reduction == ScatterReduction::kAdd   ? a + b
                   : reduction == ScatterReduction::kMul ? a * b
                   : std::isnan(a) || std::isnan(b)      ? a + b
                   : reduction == ScatterReduction::kMax ? std::max(a, b)
                                                         : std::min(a, b);
        y.f[o] = roundToFloatType(r, y.dtype);
      } else {
        const int64_t a = y.i[o], b = updates.i[u];
        const int64_t r = reduction == ScatterReduction::kAdd   ? wrapAdd(a, b)
                          : reduction == ScatterReduction::kMul ? wrapMul(a, b)
                          : reduction == ScatterReduction::kMax ? (intLess(a, b, y.dtype) ? b : a)
                                                                : (intLess(b, a, y.dtype) ? b : a);
        y.i[o] = wrapToIntType(r, y.dtype);
      }
    }
  }
  return one(std::move(y));
}

Outputs opTile(const Ctx& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t>& repeats = c.ints(c.in(1), "repeats");
  if (repeats.size() != x.shape.size())
    c.fail("repeats " + shapeString(repeats) + " do not match rank " + std::to_string(x.shape.size()));
  Shape out(x.shape.size());
  for (size_t d = 0; d < out.size(); ++d) {
    if (repeats[d] < 0) c.fail("repeats must not be negative");
    if (x.shape[d] > 0 && repeats[d] > kMaxTensorElements / x.shape[d])
      c.fail("output of more than 2^40 elements");
    out[d] = x.shape[d] * repeats[d];
  }
  Tensor y = c.output(x.dtype, out);
  const std::vector<int64_t> in_strides = rowStrides(x.shape);
  const int64_t n = y.numel();
  std::vector<int64_t> index(out.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t src = 0;
    for (size_t d = 0; d < out.size(); ++d) src += (index[d] % x.shape[d]) * in_strides[d];
    copyBlock(y, k, x, src, 1);
    for (size_t d = out.size(); d-- > 0;) {
      if (++index[d] < out[d]) break;
      index[d] = 0;
    }
  }
  return one(std::move(y));
}

namespace {

// In the order of the names pickValue is given.
enum class PadMode { kConstant, kReflect, kEdge, kWrap };

PadMode padMode(const Node& node, int64_t opset) {
  std::vector<std::string> modes{"constant", "reflect", "edge"};
  if (opset >= 19) modes.push_back("wrap");
  return static_cast<PadMode>(pickValue(node, opset, "mode", "constant", modes));
}

}  // namespace

void checkPad(const Node& node, int64_t opset) {
  padMode(node, opset);
}

// Pad: constant, edge, reflect (and wrap, opset 19). Negative pads crop.
Outputs opPad(const Ctx& c) {
  const Tensor& x = c.in(0);
  const size_t rank = x.shape.size();
  const PadMode mode = padMode(c.node, c.opset);
  std::vector<int64_t> pads;
  double value = 0;
  std::vector<size_t> axes;
  if (c.opset < 11) {
    pads = c.node.attrInts("pads");
    value = c.node.attrFloat("value", 0.0f);
  } else {
    pads = c.ints(c.in(1), "pads");
    if (const Tensor* v = c.opt(2); v && v->numel() > 0) {
      c.sameType(x, *v, "constant_value");
      value = c.scalar(*v, "constant_value");
    }
    if (const Tensor* a = c.opt(3); a && c.opset >= 18)
      axes = uniqueAxes(c, c.ints(*a, "axes"), static_cast<int64_t>(rank));
  }
  if (axes.empty())
    for (size_t d = 0; d < rank; ++d) axes.push_back(d);
  if (pads.size() != 2 * axes.size())
    c.fail("pads " + shapeString(pads) + " must hold 2 values per padded axis");
  std::vector<int64_t> begin(rank, 0);
  Shape out = x.shape;
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t d = axes[k];
    begin[d] = pads[k];
    out[d] = c.add(c.add(x.shape[d], pads[k]), pads[k + axes.size()]);
    if (out[d] < 0)
      c.fail("pads " + shapeString(pads) + " crop more than dimension " + std::to_string(d) + " holds");
    if (mode != PadMode::kConstant && x.shape[d] == 0 && out[d] > 0)
      c.fail("cannot pad an empty dimension but with a constant");
  }
  Tensor y = c.output(x.dtype, out);
  const std::vector<int64_t> in_strides = rowStrides(x.shape);
  const int64_t total = y.numel();
  std::vector<int64_t> index(rank, 0);
  for (int64_t k = 0; k < total; ++k) {
    int64_t src = 0;
    bool inside = true;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t n = x.shape[d];
      int64_t i = index[d] - begin[d];
      if (i < 0 || i >= n) {
        if (mode == PadMode::kConstant) {
          inside = false;
          break;
        } else if (mode == PadMode::kEdge) {
          i = std::clamp<int64_t>(i, 0, n - 1);
        } else if (mode == PadMode::kWrap) {
          i = ((i % n) + n) % n;
        } else if (n == 1) {  // reflect of a single element
          i = 0;
        } else {  // reflect: the index folds with period 2 (n - 1), as numpy's pad does for wide pads
          const int64_t period = 2 * (n - 1);
          i = ((i % period) + period) % period;
          if (i >= n) i = period - i;
        }
      }
      src += i * in_strides[d];
    }
    if (inside) {
      copyBlock(y, k, x, src, 1);
    } else {
      y.set(static_cast<size_t>(k), value);
    }
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out[d]) break;
      index[d] = 0;
    }
  }
  return one(std::move(y));
}

}  // namespace sf::nn::cpu
