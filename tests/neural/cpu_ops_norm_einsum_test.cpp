// The CPU kernels of Max, Min, LayerNormalization, InstanceNormalization, Einsum and ScatterND on closed-form
// cases and direct loops written here: variadic broadcasting and NaN, normalisation statistics, Einsum's
// equation forms (explicit and implicit output, ellipsis broadcasting, diagonals, three operands),
// ScatterND's reductions, and the refusals, which name the node (and Einsum's equation). ONNX's own cases of
// these operators run in onnx_conformance_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "neural/cpu_ops.h"
#include "neural/tensor.h"
#include "op_test_helpers.h"
#include "support/test_support.h"

namespace sf::nn {
namespace {

using sf::test::errorOf;

Tensor ramp(Shape shape, double scale = 0.37, double offset = -1.1, DType type = DType::kFloat32) {
  Tensor t(type, std::move(shape));
  for (size_t k = 0; k < t.f.size(); ++k)
    t.f[k] = roundToFloatType(std::sin(scale * static_cast<double>(k) + offset) * 2.0, type);
  return t;
}

using optest::ints, optest::intAttr, optest::floatAttr, optest::stringAttr;

// Runs one node named "n0" as the executor does: the load-time check, then the kernel.
std::vector<Tensor> run(const std::string& op, std::vector<const Tensor*> inputs,
                        std::map<std::string, Attribute> attributes = {}, size_t outputs = 1,
                        int64_t opset = 18) {
  Node n;
  n.name = "n0";
  n.op_type = op;
  n.attributes = std::move(attributes);
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::string name = "x";
    name += std::to_string(k);
    n.inputs.push_back(name);
  }
  for (size_t k = 0; k < outputs; ++k) {
    std::string name = "y";
    name += std::to_string(k);
    n.outputs.push_back(name);
  }
  checkCpuNode(n, opset);
  return findCpuOp(op)->cpu(n, inputs, opset);
}

Tensor einsum(const char* equation, std::vector<const Tensor*> inputs) {
  return run("Einsum", std::move(inputs), {{"equation", stringAttr(equation)}}).at(0);
}

void expectNear(const Tensor& got, const std::vector<double>& want, const Shape& shape, double tol = 1e-5) {
  ASSERT_EQ(got.shape, shape);
  ASSERT_EQ(got.f.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k)
    EXPECT_NEAR(got.f[k], want[k], tol * std::max(1.0, std::fabs(want[k]))) << "element " << k;
}

TEST(CpuOpsMaxMin, VariadicBroadcastingNanAndIntegers) {
  Tensor a(DType::kFloat32, {2, 1}), b(DType::kFloat32, {3}), c(DType::kFloat32, {});
  a.f = {1, -5};
  b.f = {0, std::nanf(""), 3};
  c.f = {-1};
  const Tensor mx = run("Max", {&a, &b, &c}).at(0), mn = run("Min", {&a, &b, &c}).at(0);
  ASSERT_EQ(mx.shape, (Shape{2, 3}));
  EXPECT_EQ(mx.f[0], 1.0f);
  EXPECT_TRUE(std::isnan(mx.f[1]) && std::isnan(mn.f[1]) && std::isnan(mn.f[4]));  // a NaN wins, as numpy's
  EXPECT_EQ(mx.f[2], 3.0f);
  EXPECT_EQ(mx.f[3], 0.0f);
  EXPECT_EQ(mx.f[5], 3.0f);
  EXPECT_EQ(mn.f[0], -1.0f);
  EXPECT_EQ(mn.f[3], -5.0f);
  EXPECT_EQ(mn.f[5], -5.0f);
  EXPECT_EQ(run("Max", {&a}).at(0).f, a.f);  // one input: a copy
  // uint64 compares unsigned (held as its int64 bits); int8 signed.
  const Tensor u = ints({2}, {-1, 5}, DType::kUInt64), v = ints({2}, {3, 7}, DType::kUInt64);
  EXPECT_EQ(run("Max", {&u, &v}).at(0).i, (std::vector<int64_t>{-1, 7}));
  EXPECT_EQ(run("Min", {&u, &v}).at(0).i, (std::vector<int64_t>{3, 5}));
  const Tensor s = ints({2}, {-128, 4}, DType::kInt8), t = ints({1}, {-3}, DType::kInt8);
  EXPECT_EQ(run("Max", {&s, &t}).at(0).i, (std::vector<int64_t>{-3, 4}));
  // Refusals name the node.
  std::string e = errorOf([&] { run("Max", {&a, &u}); });
  EXPECT_NE(e.find("node 'n0' (Max), opset 18: inputs: element types differ (float32 and uint64)"),
            std::string::npos)
      << e;
  const Tensor wide(DType::kFloat32, {4});
  e = errorOf([&] { run("Min", {&b, &wide}); });
  EXPECT_NE(e.find("node 'n0' (Min), opset 18: shapes [3] and [4] do not broadcast"), std::string::npos) << e;
  const Tensor flag = ints({1}, {1}, DType::kBool);
  EXPECT_NE(errorOf([&] { run("Max", {&flag}); }).find("numeric, not bool"), std::string::npos);
  e = errorOf([&] { run("Max", {&a, &b}, {}, 1, 7); });
  EXPECT_NE(e.find("implements Max from opset 8 on"), std::string::npos) << e;
}

// Mean and 1 / sqrt(var + eps) of x[first .. first + len), in double.
std::pair<double, double> stats(const Tensor& x, size_t first, size_t len, double eps) {
  double mean = 0, var = 0;
  for (size_t k = 0; k < len; ++k) mean += x.f[first + k];
  mean /= static_cast<double>(len);
  for (size_t k = 0; k < len; ++k) var += (x.f[first + k] - mean) * (x.f[first + k] - mean);
  return {mean, 1.0 / std::sqrt(var / static_cast<double>(len) + eps)};
}

TEST(CpuOpsNormalization, LayerNormalizationRowsStatisticsAndRefusals) {
  const Tensor x = ramp({2, 3, 4}), scale = ramp({3, 4}, 0.5, 0.2), bias = ramp({3, 4}, 0.3, 1.0);
  const std::vector<Tensor> out = run("LayerNormalization", {&x, &scale, &bias},
                                      {{"axis", intAttr(1)}, {"epsilon", floatAttr(1e-3f)}}, 3);
  ASSERT_EQ(out.size(), 3u);
  std::vector<double> y, mean, inv;
  for (size_t r = 0; r < 2; ++r) {
    const auto [m, s] = stats(x, r * 12, 12, static_cast<double>(1e-3f));
    mean.push_back(m);
    inv.push_back(s);
    for (size_t j = 0; j < 12; ++j) y.push_back((x.f[r * 12 + j] - m) * s * scale.f[j] + bias.f[j]);
  }
  expectNear(out[0], y, {2, 3, 4});
  expectNear(out[1], mean, {2, 1, 1});
  expectNear(out[2], inv, {2, 1, 1});
  EXPECT_EQ(out[1].dtype, DType::kFloat32);
  // The default axis is the last; one scale value for all, no bias; Y alone.
  const Tensor one_scale = ramp({1}, 0, 0.7);
  const Tensor y2 = run("LayerNormalization", {&x, &one_scale}).at(0);
  std::vector<double> want2;
  for (size_t r = 0; r < 6; ++r) {
    const auto [m, s] = stats(x, r * 4, 4, 1e-5);
    for (size_t j = 0; j < 4; ++j) want2.push_back((x.f[r * 4 + j] - m) * s * one_scale.f[0]);
  }
  expectNear(y2, want2, {2, 3, 4});
  // Refusals.
  const Tensor bad_scale = ramp({4, 3});
  std::string e = errorOf([&] { run("LayerNormalization", {&x, &bad_scale}, {{"axis", intAttr(2)}}); });
  EXPECT_NE(e.find("node 'n0' (LayerNormalization), opset 18: Scale of shape [4, 3] does not match the "
                   "normalised shape [4]"),
            std::string::npos)
      << e;
  e = errorOf([&] { run("LayerNormalization", {&x, &scale}, {{"axis", intAttr(3)}}); });
  EXPECT_NE(e.find("(LayerNormalization), opset 18: axis 3 is out of range for rank 3"), std::string::npos)
      << e;
  e = errorOf([&] { run("LayerNormalization", {&x, &scale}, {{"stash_type", intAttr(11)}}); });
  EXPECT_NE(
      e.find("(LayerNormalization), opset 18: attribute stash_type = 11 is not supported by the CPU kernel"),
      std::string::npos)
      << e;
  e = errorOf([&] { run("LayerNormalization", {&x, &scale}, {}, 1, 16); });
  EXPECT_NE(e.find("implements LayerNormalization from opset 17 on"), std::string::npos) << e;
}

TEST(CpuOpsNormalization, InstanceNormalizationPerPlane) {
  const Tensor x = ramp({2, 3, 5, 2}), scale = ramp({3}, 0.9, 0.1), bias = ramp({3}, 0.4, 0.5);
  const Tensor y = run("InstanceNormalization", {&x, &scale, &bias}, {{"epsilon", floatAttr(0.01f)}}).at(0);
  std::vector<double> want;
  for (size_t p = 0; p < 6; ++p) {
    const auto [m, s] = stats(x, p * 10, 10, static_cast<double>(0.01f));
    for (size_t k = 0; k < 10; ++k)
      want.push_back((x.f[p * 10 + k] - m) * s * scale.f[p % 3] + bias.f[p % 3]);
  }
  expectNear(y, want, {2, 3, 5, 2});
  const Tensor short_scale = ramp({2});
  const std::string e = errorOf([&] { run("InstanceNormalization", {&x, &short_scale, &bias}); });
  EXPECT_NE(e.find("node 'n0' (InstanceNormalization), opset 18: scale and B must be vectors of 3 values"),
            std::string::npos)
      << e;
}

TEST(CpuOpsEinsum, ProductsTransposesDiagonalsAndSums) {
  const Tensor a = ramp({2, 3, 4}), b = ramp({2, 4, 5}, 0.21, 0.3);
  // Batched matmul.
  std::vector<double> want;
  for (size_t n = 0; n < 2; ++n)
    for (size_t i = 0; i < 3; ++i)
      for (size_t k = 0; k < 5; ++k) {
        double s = 0;
        for (size_t j = 0; j < 4; ++j) s += double(a.f[n * 12 + i * 4 + j]) * b.f[n * 20 + j * 5 + k];
        want.push_back(s);
      }
  expectNear(einsum("bij,bjk->bik", {&a, &b}), want, {2, 3, 5});
  // Implicit output: the labels used once, "ik" (b, used twice, is summed as numpy does); spaces ignored.
  std::vector<double> summed_b(15);
  for (size_t k = 0; k < 15; ++k) summed_b[k] = want[k] + want[15 + k];
  expectNear(einsum(" b i j , b j k ", {&a, &b}), summed_b, {3, 5});
  // Output transposed: the same values in (k, b, i) order.
  std::vector<double> kbi;
  for (size_t k = 0; k < 5; ++k)
    for (size_t n = 0; n < 2; ++n)
      for (size_t i = 0; i < 3; ++i) kbi.push_back(want[n * 15 + i * 5 + k]);
  expectNear(einsum("bij,bjk->kbi", {&a, &b}), kbi, {5, 2, 3});
  // One operand: transpose (implicit output in ASCII order: "ba" -> "ab"), sum, diagonal, trace.
  const Tensor m = ramp({3, 3});
  const Tensor t = einsum("ba", {&m});
  ASSERT_EQ(t.shape, (Shape{3, 3}));
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j) EXPECT_EQ(t.f[i * 3 + j], m.f[j * 3 + i]);
  expectNear(
      einsum("ij->j", {&m}),
      {double(m.f[0]) + m.f[3] + m.f[6], double(m.f[1]) + m.f[4] + m.f[7], double(m.f[2]) + m.f[5] + m.f[8]},
      {3});
  expectNear(einsum("ii->i", {&m}), {m.f[0], m.f[4], m.f[8]}, {3});
  expectNear(einsum("ii", {&m}), {double(m.f[0]) + m.f[4] + m.f[8]}, {});
  // Inner and outer products.
  const Tensor v = ramp({3}, 1.3), w = ramp({2}, 0.7);
  expectNear(einsum("i,i", {&v, &v}),
             {double(v.f[0]) * v.f[0] + double(v.f[1]) * v.f[1] + double(v.f[2]) * v.f[2]}, {});
  expectNear(einsum("i,j->ji", {&v, &w}),
             {double(w.f[0]) * v.f[0], double(w.f[0]) * v.f[1], double(w.f[0]) * v.f[2],
              double(w.f[1]) * v.f[0], double(w.f[1]) * v.f[1], double(w.f[1]) * v.f[2]},
             {2, 3});
  // Three operands: a chain of products.
  const Tensor p = ramp({2, 3}), q = ramp({3, 2}, 0.5), r = ramp({2, 2}, 0.8);
  std::vector<double> chain;
  for (size_t i = 0; i < 2; ++i)
    for (size_t l = 0; l < 2; ++l) {
      double s = 0;
      for (size_t j = 0; j < 3; ++j)
        for (size_t k = 0; k < 2; ++k) s += double(p.f[i * 3 + j]) * q.f[j * 2 + k] * r.f[k * 2 + l];
      chain.push_back(s);
    }
  expectNear(einsum("ij,jk,kl->il", {&p, &q, &r}), chain, {2, 2});
  // Integers wrap to their type.
  const Tensor big = ints({2}, {100, 100}, DType::kInt8);
  EXPECT_EQ(einsum("i,i->", {&big, &big}).i, (std::vector<int64_t>{32}));  // 20000 wrapped to int8
}

TEST(CpuOpsEinsum, EllipsisBroadcastsAndSums) {
  // "...ij,...jk->...ik": the ellipsis axes broadcast as numpy's ([2, 1] with [3]).
  const Tensor a = ramp({2, 1, 2, 3}), b = ramp({3, 3, 2}, 0.6);
  const Tensor y = einsum("...ij,...jk->...ik", {&a, &b});
  ASSERT_EQ(y.shape, (Shape{2, 3, 2, 2}));
  for (size_t u = 0; u < 2; ++u)
    for (size_t v = 0; v < 3; ++v)
      for (size_t i = 0; i < 2; ++i)
        for (size_t k = 0; k < 2; ++k) {
          double s = 0;
          for (size_t j = 0; j < 3; ++j) s += double(a.f[u * 6 + i * 3 + j]) * b.f[v * 6 + j * 2 + k];
          EXPECT_NEAR(y.f[((u * 3 + v) * 2 + i) * 2 + k], s, 1e-5);
        }
  // Implicit output: the ellipsis axes first. An explicit output without '...' sums them.
  EXPECT_EQ(einsum("...ij", {&a}).shape, (Shape{2, 1, 2, 3}));
  const Tensor total = einsum("...i->i", {&a});
  ASSERT_EQ(total.shape, (Shape{3}));
  double s0 = 0;
  for (size_t k = 0; k < 12; k += 3) s0 += a.f[k];
  EXPECT_NEAR(total.f[0], s0, 1e-5);
}

TEST(CpuOpsEinsum, RefusalsNameTheNodeAndEquation) {
  const Tensor a = ramp({2, 3}), b = ramp({4, 5});
  auto check = [](const char* equation, size_t inputs) {
    Node n;
    n.name = "n0", n.op_type = "Einsum", n.attributes["equation"] = stringAttr(equation);
    n.inputs.assign(inputs, "x");
    n.outputs = {"y"};
    return errorOf([&] { checkCpuNode(n, 12); });
  };
  // At load: the syntax, the number of terms, the output's labels.
  EXPECT_EQ(check("ij,jk->ik", 1),
            "node 'n0' (Einsum), opset 12: equation 'ij,jk->ik': 2 term(s) for 1 input(s)");
  EXPECT_EQ(check("ij->i!", 1),
            "node 'n0' (Einsum), opset 12: equation 'ij->i!': '!' is not a label (letters a-z, A-Z and one "
            "'...' per term)");
  EXPECT_EQ(check("ij->k", 1),
            "node 'n0' (Einsum), opset 12: equation 'ij->k': output label 'k' is in no input term");
  EXPECT_EQ(check("ij->ii", 1),
            "node 'n0' (Einsum), opset 12: equation 'ij->ii': output label 'i' is repeated");
  EXPECT_EQ(check("...i...->i", 1),
            "node 'n0' (Einsum), opset 12: equation '...i...->i': a term has two ellipses ('...i...')");
  EXPECT_EQ(check("ij->i->j", 1), "node 'n0' (Einsum), opset 12: equation 'ij->i->j': more than one '->'");
  Node none;
  none.name = "n0", none.op_type = "Einsum", none.inputs = {"x"}, none.outputs = {"y"};
  EXPECT_EQ(errorOf([&] { checkCpuNode(none, 12); }),
            "node 'n0' (Einsum), opset 12: attribute equation is required");
  // With the shapes: sizes that disagree, ranks that do not fit.
  std::string e = errorOf([&] { einsum("ij,jk->ik", {&a, &b}); });
  EXPECT_NE(e.find("node 'n0' (Einsum), opset 18: equation 'ij,jk->ik': label 'j' has size 3 and 4"),
            std::string::npos)
      << e;
  e = errorOf([&] { einsum("ijk->k", {&a}); });
  EXPECT_NE(e.find("equation 'ijk->k': term 'ijk' does not fit operand 0 of shape [2, 3]"), std::string::npos)
      << e;
  const Tensor c = ramp({3, 2});
  e = errorOf([&] { einsum("...i,...i->...", {&a, &c}); });
  EXPECT_NE(e.find("the axes '...' stands for do not broadcast"), std::string::npos) << e;
}

TEST(CpuOpsScatterND, WritesAndReductions) {
  Tensor data(DType::kFloat32, {4, 2});
  data.f = {1, 2, 3, 4, 5, 6, 7, 8};
  const Tensor idx = ints({3, 1}, {1, -1, 1});  // row 1 twice, row 3 from the end
  Tensor upd(DType::kFloat32, {3, 2});
  upd.f = {10, 20, 30, std::nanf(""), 50, 60};
  const Tensor none = run("ScatterND", {&data, &idx, &upd}).at(0);
  EXPECT_EQ(none.f[2], 50.0f);  // the last write wins
  EXPECT_EQ(none.f[3], 60.0f);
  EXPECT_EQ(none.f[6], 30.0f);
  EXPECT_TRUE(std::isnan(none.f[7]));
  EXPECT_EQ(none.f[0], 1.0f);
  const Tensor add = run("ScatterND", {&data, &idx, &upd}, {{"reduction", stringAttr("add")}}).at(0);
  EXPECT_EQ(add.f[2], 63.0f);  // 3 + 10 + 50
  EXPECT_EQ(add.f[3], 84.0f);
  const Tensor mul = run("ScatterND", {&data, &idx, &upd}, {{"reduction", stringAttr("mul")}}).at(0);
  EXPECT_EQ(mul.f[2], 1500.0f);
  const Tensor mx = run("ScatterND", {&data, &idx, &upd}, {{"reduction", stringAttr("max")}}).at(0);
  EXPECT_EQ(mx.f[2], 50.0f);
  EXPECT_TRUE(std::isnan(mx.f[7]));  // a NaN wins
  const Tensor mn = run("ScatterND", {&data, &idx, &upd}, {{"reduction", stringAttr("min")}}).at(0);
  EXPECT_EQ(mn.f[2], 3.0f);
  EXPECT_EQ(mn.f[6], 7.0f);
  // Whole-element indices into integers, wrapping.
  const Tensor small = ints({2, 2}, {100, 2, 3, 4}, DType::kInt8), at = ints({1, 2}, {0, 0}),
               plus = ints({1}, {100}, DType::kInt8);
  EXPECT_EQ(run("ScatterND", {&small, &at, &plus}, {{"reduction", stringAttr("add")}}).at(0).i,
            (std::vector<int64_t>{-56, 2, 3, 4}));
  // Refusals.
  std::string e = errorOf([&] {
    run("ScatterND", {&data, &idx, &upd}, {{"reduction", stringAttr("max")}}, 1, 16);
  });
  EXPECT_EQ(e,
            "node 'n0' (ScatterND), opset 16: attribute reduction = 'max' is not supported by the CPU kernel "
            "(none, add or mul)");
  e = errorOf([&] { run("ScatterND", {&data, &idx, &upd}, {{"reduction", stringAttr("add")}}, 1, 13); });
  EXPECT_NE(e.find("attribute reduction is not supported by the CPU kernel at this opset"), std::string::npos)
      << e;
  const Tensor far = ints({1, 1}, {4});
  const Tensor row = ramp({1, 2});
  e = errorOf([&] { run("ScatterND", {&data, &far, &row}); });
  EXPECT_NE(e.find("node 'n0' (ScatterND), opset 18: index 4 is out of range for dimension 0 of size 4"),
            std::string::npos)
      << e;
  e = errorOf([&] { run("ScatterND", {&data, &idx, &row}); });
  EXPECT_NE(e.find("updates of shape [1, 2], expected [3, 2]"), std::string::npos) << e;
}

}  // namespace
}  // namespace sf::nn
