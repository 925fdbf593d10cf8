// Matrix products (cpu_ops_kernels.h): MatMul with numpy's promotion of vectors and broadcast batch
// dimensions, Gemm with its transposes and C. Products summed in double.
#include "neural/cpu_ops_kernels.h"

namespace sf::nn::cpu {

// numpy matmul: 1-D operands are promoted to matrices (and the added dimension removed from the result),
// leading dimensions broadcast. Sums in double.
Outputs opMatMul(const Ctx& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  c.sameType(a, b, "inputs");
  if (a.dtype == DType::kBool) c.fail("inputs must be numeric, not bool");
  if (a.shape.empty() || b.shape.empty())
    c.fail("inputs must have rank 1 or more (scalars are not matrices)");
  Shape sa = a.shape, sb = b.shape;
  const bool a_vector = sa.size() == 1, b_vector = sb.size() == 1;
  if (a_vector) sa.insert(sa.begin(), 1);
  if (b_vector) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], kdim = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != kdim)
    c.fail("inner dimensions differ: " + shapeString(a.shape) + " x " + shapeString(b.shape));
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  const Shape batch = broadcastShapes(c, batch_a, batch_b);
  Shape out = batch;
  if (!a_vector) out.push_back(m);
  if (!b_vector) out.push_back(n);
  Tensor y = c.output(a.dtype, out);
  // Batch strides in whole matrices of each operand.
  std::vector<int64_t> st_a = broadcastStrides(batch_a, batch), st_b = broadcastStrides(batch_b, batch);
  for (int64_t& s : st_a) s *= m * kdim;
  for (int64_t& s : st_b) s *= kdim * n;
  walk<2>(batch, {st_a, st_b}, [&](int64_t bi, const std::array<int64_t, 2>& o) {
    const int64_t ybase = bi * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (y.isFloat()) {
          double acc = 0;
          for (int64_t k = 0; k < kdim; ++k)
            acc += static_cast<double>(a.f[o[0] + i * kdim + k]) * static_cast<double>(b.f[o[1] + k * n + j]);
          y.f[ybase + i * n + j] = static_cast<float>(acc);
        } else {
          int64_t acc = 0;
          for (int64_t k = 0; k < kdim; ++k)
            acc = wrapAdd(acc, wrapMul(a.i[o[0] + i * kdim + k], b.i[o[1] + k * n + j]));
          y.i[ybase + i * n + j] = wrapToIntType(acc, a.dtype);
        }
      }
    }
  });
  return one(std::move(y));
}

// Y = alpha * A' B' + beta * C, C broadcast to (M, N) (unidirectionally).
Outputs opGemm(const Ctx& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  const Tensor* cm = c.opt(2);
  c.requireFloat(a, "A");
  c.sameType(a, b, "A and B");
  c.requireRank(a, 2, "A");
  c.requireRank(b, 2, "B");
  const bool ta = c.node.attrInt("transA", 0) != 0, tb = c.node.attrInt("transB", 0) != 0;
  const double alpha = c.node.attrFloat("alpha", 1.0f), beta = c.node.attrFloat("beta", 1.0f);
  const int64_t m = ta ? a.shape[1] : a.shape[0], kdim = ta ? a.shape[0] : a.shape[1];
  const int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (kdim != kb)
    c.fail("inner dimensions differ: A " + shapeString(a.shape) + ", B " + shapeString(b.shape));
  const Shape out{m, n};
  std::vector<int64_t> st_c;
  if (cm) {
    c.sameType(a, *cm, "A and C");
    if (cm->shape.size() > 2 || broadcastShapes(c, cm->shape, out) != out)
      c.fail("C of shape " + shapeString(cm->shape) + " does not broadcast to " + shapeString(out));
    st_c = broadcastStrides(cm->shape, out);
  }
  Tensor y = c.output(a.dtype, out);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < kdim; ++k) {
        const float av = ta ? a.f[k * m + i] : a.f[i * kdim + k];
        const float bv = tb ? b.f[j * kdim + k] : b.f[k * n + j];
        acc += static_cast<double>(av) * static_cast<double>(bv);
      }
      double v = alpha * acc;
      if (cm) v += beta * static_cast<double>(cm->f[i * st_c[0] + j * st_c[1]]);
      y.f[i * n + j] = static_cast<float>(v);
    }
  }
  return one(std::move(y));
}

}  // namespace sf::nn::cpu
