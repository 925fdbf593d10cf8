// The CPU kernels' shared helpers (cpu_ops_common.h) and the public stride helpers of cpu_ops.h.
#include "neural/cpu_ops_common.h"

#include <algorithm>

namespace sf::nn {

std::vector<int64_t> rowStrides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d > 1; --d) st[d - 2] = st[d - 1] * s[d - 1];
  return st;
}

std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const std::vector<int64_t> own = rowStrides(in);
  const size_t lead = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) st[lead + k] = in[k] == 1 ? 0 : own[k];
  return st;
}

}  // namespace sf::nn

namespace sf::nn::cpu {

[[noreturn]] void nodeError(const Node& node, int64_t opset, const std::string& reason) {
  throw Error(node.describe() + ", opset " + std::to_string(opset) + ": " + reason);
}

[[noreturn]] void refuseAttribute(const Node& node, int64_t opset, const std::string& attribute,
                                  const std::string& value, const std::string& supported) {
  nodeError(
      node, opset,
      "attribute " + attribute + " = " + value + " is not supported by the CPU kernel (" + supported + ")");
}

size_t pickValue(const Node& node, int64_t opset, const std::string& attribute, const std::string& fallback,
                 const std::vector<std::string>& values) {
  const std::string value = node.attrString(attribute, fallback);
  std::string list;
  for (size_t k = 0; k < values.size(); ++k) {
    if (value == values[k]) return k;
    list += (k == 0 ? "" : k + 1 == values.size() ? " or " : ", ") + values[k];
  }
  refuseAttribute(node, opset, attribute, "'" + value + "'", list);
}

Shape broadcastShapes(const Ctx& c, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k + a.size() < r ? 1 : a[k + a.size() - r];
    const int64_t db = k + b.size() < r ? 1 : b[k + b.size() - r];
    if (da != db && da != 1 && db != 1)
      c.fail("shapes " + shapeString(a) + " and " + shapeString(b) + " do not broadcast");
    out[k] = da == 1 ? db : da;
  }
  return out;
}

void copyBlock(Tensor& dst, int64_t d, const Tensor& src, int64_t s, int64_t n) {
  if (dst.isFloat()) {
    std::copy_n(src.f.begin() + s, n, dst.f.begin() + d);
  } else {
    std::copy_n(src.i.begin() + s, n, dst.i.begin() + d);
  }
}

void gatherStrided(Tensor& y, const Tensor& x, const std::vector<int64_t>& strides, int64_t base) {
  const int64_t n = y.numel();
  if (n == 0) return;
  // The same walk over fewer dims: dims of 1 dropped, a dim merged into the one before it where the two
  // step through x as one (so a transpose that moves only dims of 1 is one row).
  Shape shape;
  std::vector<int64_t> st;
  for (size_t d = 0; d < y.shape.size(); ++d) {
    if (y.shape[d] == 1) continue;
    if (!shape.empty() && st.back() == strides[d] * y.shape[d]) {
      shape.back() *= y.shape[d], st.back() = strides[d];
      continue;
    }
    shape.push_back(y.shape[d]), st.push_back(strides[d]);
  }
  if (shape.empty()) {
    copyBlock(y, 0, x, base, 1);
    return;
  }
  const size_t rank = shape.size();
  const int64_t inner = shape[rank - 1];
  const int64_t step = st[rank - 1];
  auto rows = [&](auto* dst, const auto* src) {
    std::vector<int64_t> index(rank - 1, 0);
    int64_t off = base;
    for (int64_t k = 0; k < n; k += inner) {
      if (step == 1) {
        std::copy_n(src + off, inner, dst + k);
      } else {
        for (int64_t j = 0; j < inner; ++j) dst[k + j] = src[off + j * step];
      }
      for (size_t d = rank - 1; d-- > 0;) {
        off += st[d];
        if (++index[d] < shape[d]) break;
        off -= st[d] * shape[d];
        index[d] = 0;
      }
    }
  };
  if (y.isFloat()) {
    rows(y.f.data(), x.f.data());
  } else {
    rows(y.i.data(), x.i.data());
  }
}

Tensor reshaped(const Tensor& x, Shape shape) {
  Tensor y = x;
  y.shape = std::move(shape);
  return y;
}

std::vector<int64_t> axesArgument(const Ctx& c, int64_t input_opset, size_t input, bool* given) {
  std::vector<int64_t> axes;
  if (c.opset >= input_opset) {
    const Tensor* t = c.opt(input);
    if (t) axes = c.ints(*t, "axes");
  } else {
    axes = c.node.attrInts("axes");
  }
  *given = !axes.empty();
  return axes;
}

std::vector<size_t> uniqueAxes(const Ctx& c, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<size_t> out;
  for (int64_t a : axes) {
    const size_t n = c.axis(a, rank);
    if (std::find(out.begin(), out.end(), n) != out.end())
      c.fail("axis " + std::to_string(a) + " is named twice");
    out.push_back(n);
  }
  return out;
}

}  // namespace sf::nn::cpu
