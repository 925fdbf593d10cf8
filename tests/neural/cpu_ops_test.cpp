// The CPU kernels of the neural layer on closed-form cases: the semantics that are easy to get subtly wrong
// (broadcasting, negative slice steps, negative gather indices, grid-sample corners, grouped convolution,
// float16 rounding, casts) against values worked out by hand or by a direct loop written here, and the
// refusal messages. The whole operator set is also run against ONNX's own test data
// (onnx_conformance_test.cpp).
#include "neural/cpu_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "core/error.h"
#include "neural/tensor.h"
#include "op_test_helpers.h"
#include "support/test_support.h"

namespace sf::nn {
namespace {

constexpr int64_t kOpset = 17;

using optest::floats, optest::ints, optest::intAttr, optest::floatAttr, optest::stringAttr, optest::intsAttr;

Node makeNode(const std::string& op, size_t outputs = 1, std::map<std::string, Attribute> attributes = {}) {
  Node n;
  n.name = "n0";
  n.op_type = op;
  for (size_t k = 0; k < outputs; ++k) {
    std::string name = "y";  // appended, not "y" + ...: GCC 12 at -O3 misreports -Wrestrict on the latter
    name += std::to_string(k);
    n.outputs.push_back(name);
  }
  n.attributes = std::move(attributes);
  return n;
}

// Runs one node as the executor does: the load-time check, then the kernel.
std::vector<Tensor> run(Node node, std::vector<const Tensor*> inputs, int64_t opset = kOpset) {
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::string name;
    if (inputs[k]) name = "x", name += std::to_string(k);
    node.inputs.push_back(name);
  }
  checkCpuNode(node, opset);
  const OpInfo* op = findCpuOp(node.op_type);
  EXPECT_NE(op, nullptr);
  return op->cpu(node, inputs, opset);
}

Tensor run1(Node node, std::vector<const Tensor*> inputs, int64_t opset = kOpset) {
  std::vector<Tensor> out = run(std::move(node), std::move(inputs), opset);
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? Tensor() : out[0];
}

using sf::test::errorOf;

TEST(CpuOps, TableIsSortedAndComplete) {
  const std::span<const OpInfo> ops = cpuOps();
  ASSERT_GE(ops.size(), 60u);
  for (size_t k = 0; k < ops.size(); ++k) {
    EXPECT_NE(ops[k].cpu, nullptr) << ops[k].op_type;
    EXPECT_GE(ops[k].min_opset, 1) << ops[k].op_type;
    if (k > 0) {
      EXPECT_LT(std::strcmp(ops[k - 1].op_type, ops[k].op_type), 0) << ops[k].op_type;
    }
    EXPECT_EQ(findCpuOp(ops[k].op_type), &ops[k]);
  }
  EXPECT_EQ(findCpuOp("LSTM"), nullptr);
}

TEST(Tensor, ElementCountRefusesNegativeAndHugeShapes) {
  EXPECT_EQ(elementCount({}), 1);
  EXPECT_EQ(elementCount({2, 0, -0}), 0);
  EXPECT_EQ(elementCount({3, 4, 5}), 60);
  EXPECT_THROW(elementCount({2, -1}), Error);
  EXPECT_THROW(elementCount({1 << 20, 1 << 20, 2}), Error);                 // 2^41
  EXPECT_THROW(elementCount({int64_t{1} << 62, int64_t{1} << 62}), Error);  // the product overflows int64
  EXPECT_EQ(elementCount({1 << 20, 1 << 20}), int64_t{1} << 40);
  // Zero elements, but strides of 2^62 and more: refused as well.
  EXPECT_THROW(elementCount({0, int64_t{1} << 31, int64_t{1} << 31}), Error);
  EXPECT_EQ(shapeString({2, 3}), "[2, 3]");
  EXPECT_EQ(dtypeName(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(dtypeName(static_cast<DType>(99)), "type 99");
  EXPECT_THROW(Tensor(DType::kString, {1}), Error);
}

TEST(Tensor, Float16RoundsOnceFromDouble) {
  const double ulp = std::ldexp(1.0, -10);                            // float16 spacing in [1, 2)
  EXPECT_EQ(roundToFloatType(1.0 + ulp / 2, DType::kFloat16), 1.0f);  // tie: to even
  EXPECT_EQ(roundToFloatType(1.0 + 3 * ulp / 2, DType::kFloat16), 1.0f + 2 * ulp);  // tie: to even
  // Just above the tie, by less than float32 can hold: rounding to float32 first would land on the tie
  // and then round down to 1; one correct rounding gives 1 + ulp.
  EXPECT_EQ(roundToFloatType(1.0 + ulp / 2 + std::ldexp(1.0, -40), DType::kFloat16),
            static_cast<float>(1.0 + ulp));
  EXPECT_EQ(roundToFloatType(65519.0, DType::kFloat16), 65504.0f);
  EXPECT_TRUE(std::isinf(roundToFloatType(65520.0, DType::kFloat16)));
  EXPECT_EQ(roundToFloatType(std::ldexp(1.0, -25) * 1.5, DType::kFloat16),
            std::ldexp(1.0f, -24));  // subnormal
  EXPECT_TRUE(std::isnan(roundToFloatType(std::nan(""), DType::kFloat16)));
  // bfloat16: 8 significant bits. 1 + 2^-8 is a tie (to even: 1), 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
  EXPECT_EQ(roundToFloatType(1.0 + std::ldexp(1.0, -8), DType::kBFloat16), 1.0f);
  EXPECT_EQ(roundToFloatType(1.0 + 3 * std::ldexp(1.0, -8), DType::kBFloat16), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(roundToFloatType(0.1, DType::kFloat32), 0.1f);
}

TEST(Tensor, IntegerWrapping) {
  EXPECT_EQ(wrapToIntType(200000, DType::kInt16), 3392);
  EXPECT_EQ(wrapToIntType(-1, DType::kUInt8), 255);
  EXPECT_EQ(wrapToIntType(200, DType::kInt8), -56);
  EXPECT_EQ(wrapToIntType(7, DType::kBool), 1);
  EXPECT_EQ(saturateToInt64(1e30), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(saturateToInt64(-2.9), -2);
  EXPECT_EQ(saturateToInt64(std::nan("")), 0);
  Tensor t(DType::kInt8, {1});
  t.set(0, 300.0);
  EXPECT_EQ(t.i[0], 44);  // 300 mod 256
}

TEST(CpuOps, BroadcastingFollowsNumpy) {
  // [2, 3, 1] + [4] -> [2, 3, 4]: a[i, j, 0] + b[k].
  Tensor a(DType::kFloat32, {2, 3, 1}), b(DType::kFloat32, {4});
  for (size_t k = 0; k < a.f.size(); ++k) a.f[k] = static_cast<float>(10 * k);
  for (size_t k = 0; k < b.f.size(); ++k) b.f[k] = static_cast<float>(k);
  const Tensor y = run1(makeNode("Add"), {&a, &b});
  ASSERT_EQ(y.shape, (Shape{2, 3, 4}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k)
        EXPECT_EQ(y.f[(i * 3 + j) * 4 + k], static_cast<float>(10 * (i * 3 + j) + k));
  // [3, 1] vs [1, 2]: both sides broadcast.
  const Tensor c = floats({3, 1}, {1, 2, 3}), d = floats({1, 2}, {10, 20});
  EXPECT_EQ(run1(makeNode("Mul"), {&c, &d}).f, (std::vector<float>{10, 20, 20, 40, 30, 60}));
  const Tensor e = floats({3}, {1, 2, 3}), f = floats({2}, {1, 2});
  EXPECT_NE(errorOf([&] { run1(makeNode("Sub"), {&e, &f}); }).find("do not broadcast"), std::string::npos);
  // Where broadcasts three ways.
  const Tensor cond = ints({2, 1}, {1, 0}, DType::kBool), x = floats({1, 3}, {1, 2, 3}), z = floats({}, {-1});
  EXPECT_EQ(run1(makeNode("Where"), {&cond, &x, &z}).f, (std::vector<float>{1, 2, 3, -1, -1, -1}));
}

TEST(CpuOps, IntegerArithmeticWrapsAndTruncates) {
  const Tensor a = ints({3}, {-128, 100, -7}, DType::kInt8), b = ints({3}, {1, 100, 2}, DType::kInt8);
  EXPECT_EQ(run1(makeNode("Sub"), {&a, &b}).i, (std::vector<int64_t>{127, 0, -9}));
  EXPECT_EQ(run1(makeNode("Add"), {&a, &b}).i, (std::vector<int64_t>{-127, -56, -5}));
  EXPECT_EQ(run1(makeNode("Div"), {&a, &b}).i, (std::vector<int64_t>{-128, 1, -3}));  // toward zero
  const Tensor zero = ints({1}, {0}, DType::kInt8);
  EXPECT_NE(errorOf([&] { run1(makeNode("Div"), {&a, &zero}); }).find("division by zero"), std::string::npos);
  const Tensor base = ints({3}, {3, -2, 2}), expo = ints({3}, {4, 3, 63});
  EXPECT_EQ(run1(makeNode("Pow"), {&base, &expo}).i,
            (std::vector<int64_t>{81, -8, std::numeric_limits<int64_t>::min()}));
}

TEST(CpuOps, SliceNegativeStepsAndClamping) {
  Tensor x(DType::kFloat32, {10});
  for (size_t k = 0; k < 10; ++k) x.f[k] = static_cast<float>(k);
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  auto slice = [&](std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> steps) {
    const Tensor s = ints({1}, std::move(starts)), e = ints({1}, std::move(ends)), ax = ints({1}, {0}),
                 st = ints({1}, std::move(steps));
    return run1(makeNode("Slice"), {&x, &s, &e, &ax, &st}).f;
  };
  EXPECT_EQ(slice({-1}, {lo}, {-3}), (std::vector<float>{9, 6, 3, 0}));  // from the end to before the start
  EXPECT_EQ(slice({20}, {-20}, {-4}), (std::vector<float>{9, 5, 1}));    // both clamped
  EXPECT_EQ(slice({-3}, {hi}, {1}), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(slice({8}, {2}, {-2}), (std::vector<float>{8, 6, 4}));
  EXPECT_TRUE(slice({2}, {8}, {-1}).empty());
  EXPECT_TRUE(slice({12}, {hi}, {1}).empty());
  // 2-D, axes given negative, the other axis whole: rows 2..0 backwards, columns 1.. every 2nd.
  Tensor m(DType::kFloat32, {3, 4});
  for (size_t k = 0; k < 12; ++k) m.f[k] = static_cast<float>(k);
  const Tensor s = ints({2}, {-1, 1}), e = ints({2}, {lo, hi}), ax = ints({2}, {-2, -1}),
               st = ints({2}, {-1, 2});
  const Tensor y = run1(makeNode("Slice"), {&m, &s, &e, &ax, &st});
  EXPECT_EQ(y.shape, (Shape{3, 2}));
  EXPECT_EQ(y.f, (std::vector<float>{9, 11, 5, 7, 1, 3}));
  // Opset 1: attributes.
  Node old =
      makeNode("Slice", 1, {{"starts", intsAttr({1})}, {"ends", intsAttr({-1})}, {"axes", intsAttr({1})}});
  EXPECT_EQ(run1(old, {&m}, 9).f, (std::vector<float>{1, 2, 5, 6, 9, 10}));
  const Tensor zero_step = ints({1}, {0});
  EXPECT_NE(errorOf([&] {
              run1(makeNode("Slice"), {&x, &zero_step, &zero_step, &zero_step, &zero_step});
            }).find("step"),
            std::string::npos);
}

TEST(CpuOps, GatherNegativeIndices) {
  const Tensor x = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor idx = ints({2, 2}, {-1, 0, 1, -3});
  const Tensor y = run1(makeNode("Gather", 1, {{"axis", intAttr(1)}}), {&x, &idx});
  EXPECT_EQ(y.shape, (Shape{2, 2, 2}));
  // y[i, j, k] = x[i, idx[j, k]]: columns 2, 0, 1, 0.
  EXPECT_EQ(y.f, (std::vector<float>{3, 1, 2, 1, 6, 4, 5, 4}));
  const Tensor idx32 = ints({1}, {-2}, DType::kInt32);
  EXPECT_EQ(run1(makeNode("Gather"), {&x, &idx32}).f, (std::vector<float>{1, 2, 3}));
  const Tensor bad = ints({1}, {3});
  EXPECT_NE(errorOf([&] {
              run1(makeNode("Gather", 1, {{"axis", intAttr(1)}}), {&x, &bad});
            }).find("out of range"),
            std::string::npos);
}

// X = [[1, 2, 3], [4, 5, 6]] (H 2, W 3) sampled at normalised (x, y) points.
std::vector<float> gridSample(std::vector<float> points, std::map<std::string, Attribute> attrs) {
  const Tensor x = floats({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  const auto n = static_cast<int64_t>(points.size() / 2);
  const Tensor grid = floats({1, 1, n, 2}, std::move(points));
  return run1(makeNode("GridSample", 1, std::move(attrs)), {&x, &grid}, 16).f;
}

TEST(CpuOps, GridSampleCorners) {
  // align_corners = 1: -1 and 1 are the centres of the corner pixels; (0, 0) is x 1, y 0.5.
  EXPECT_EQ(gridSample({-1, -1, 1, 1, 0, 0, 0.5f, -1, 1, -1}, {{"align_corners", intAttr(1)}}),
            (std::vector<float>{1, 6, 3.5f, 2.5f, 3}));
  // align_corners = 0: -1 and 1 are the outer edges, half a pixel beyond the corner centres: with zero
  // padding the corner reads a quarter of the corner pixel; (0, 0) is still the image centre.
  EXPECT_EQ(gridSample({-1, -1, 1, 1, 0, 0, 1, -1}, {{"align_corners", intAttr(0)}}),
            (std::vector<float>{0.25f, 1.5f, 3.5f, 0.75f}));
  // Border padding clamps the coordinate: the corner pixel itself. Reflection about the edge (x -0.5)
  // maps -0.5 to itself, then clamps: the same.
  EXPECT_EQ(gridSample({-1, -1, 1, 1}, {{"padding_mode", stringAttr("border")}}), (std::vector<float>{1, 6}));
  EXPECT_EQ(gridSample({-1, -1, 1, 1}, {{"padding_mode", stringAttr("reflection")}}),
            (std::vector<float>{1, 6}));
  // Reflection: x = -2 is pixel x -2, mirrored about the left edge (-0.5) to pixel 1; y = 0 is pixel y 0.5,
  // halfway between the rows: (2 + 5) / 2.
  EXPECT_EQ(gridSample({-2, 0}, {{"padding_mode", stringAttr("reflection")}}), (std::vector<float>{3.5f}));
  // Nearest: (0.2, 0.2) -> pixel (1.3, 0.7) -> (1, 1) = 5. Outside with zeros padding: 0.
  EXPECT_EQ(gridSample({0.2f, 0.2f, 3, 3}, {{"mode", stringAttr("nearest")}}), (std::vector<float>{5, 0}));
  // An unsupported mode is refused at load with the node, op, attribute and opset named.
  const std::string msg = errorOf([] { gridSample({0, 0}, {{"mode", stringAttr("area")}}); });
  EXPECT_NE(msg.find("node 'n0' (GridSample), opset 16: attribute mode = 'area' is not supported"),
            std::string::npos)
      << msg;
}

TEST(CpuOps, GroupedConvolutionMatchesDirectLoop) {
  // X (2, 4, 5, 6), W (6, 2, 3, 2): group 2, strides (2, 1), pads (1, 0, 0, 1), dilations (1, 2).
  const int64_t batch = 2, cin = 4, h = 5, w = 6, cout = 6, group = 2, kh = 3, kw = 2;
  const int64_t sh = 2, sw = 1, ph0 = 1, pw0 = 0, ph1 = 0, pw1 = 1, dh = 1, dw = 2;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uni(-1, 1);
  Tensor x(DType::kFloat32, {batch, cin, h, w}), wt(DType::kFloat32, {cout, cin / group, kh, kw}),
      b(DType::kFloat32, {cout});
  for (float& v : x.f) v = uni(rng);
  for (float& v : wt.f) v = uni(rng);
  for (float& v : b.f) v = uni(rng);
  Node node = makeNode("Conv", 1,
                       {{"group", intAttr(group)},
                        {"strides", intsAttr({sh, sw})},
                        {"pads", intsAttr({ph0, pw0, ph1, pw1})},
                        {"dilations", intsAttr({dh, dw})}});
  const Tensor y = run1(node, {&x, &wt, &b});
  const int64_t oh = (h + ph0 + ph1 - ((kh - 1) * dh + 1)) / sh + 1,
                ow = (w + pw0 + pw1 - ((kw - 1) * dw + 1)) / sw + 1;
  ASSERT_EQ(y.shape, (Shape{batch, cout, oh, ow}));
  const int64_t cg = cin / group, mg = cout / group;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < cout; ++m)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double want = b.f[m];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t iy = oy * sh - ph0 + ky * dh, ix = ox * sw - pw0 + kx * dw;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                const int64_t c = (m / mg) * cg + ci;
                want += static_cast<double>(x.f[((n * cin + c) * h + iy) * w + ix]) *
                        wt.f[((m * cg + ci) * kh + ky) * kw + kx];
              }
          EXPECT_NEAR(y.f[((n * cout + m) * oh + oy) * ow + ox], want, 1e-5)
              << n << " " << m << " " << oy << " " << ox;
        }
  // A group count that does not divide the channels is an error naming the node.
  Node bad = makeNode("Conv", 1, {{"group", intAttr(3)}});
  EXPECT_NE(errorOf([&] { run1(bad, {&x, &wt}); }).find("node 'n0' (Conv)"), std::string::npos);
}

TEST(CpuOps, ConvTransposeScattersTheKernel) {
  // Stride 2, 2x2 kernel of ones: every input value fills its own 2x2 block.
  const Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4}), wt = floats({1, 1, 2, 2}, {1, 1, 1, 1});
  const Tensor y = run1(makeNode("ConvTranspose", 1, {{"strides", intsAttr({2, 2})}}), {&x, &wt});
  EXPECT_EQ(y.shape, (Shape{1, 1, 4, 4}));
  EXPECT_EQ(y.f, (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST(CpuOps, CastRoundsAndSaturates) {
  const double ulp = std::ldexp(1.0, -10);
  const Tensor x = floats({6}, {1.0f + static_cast<float>(ulp / 2), 1.0f + static_cast<float>(3 * ulp / 2),
                                65519.0f, 70000.0f, -1e-8f, std::nanf("")});
  const Tensor h = run1(makeNode("Cast", 1, {{"to", intAttr(static_cast<int64_t>(DType::kFloat16))}}), {&x});
  EXPECT_EQ(h.dtype, DType::kFloat16);
  EXPECT_EQ(h.f[0], 1.0f);
  EXPECT_EQ(h.f[1], static_cast<float>(1 + 2 * ulp));
  EXPECT_EQ(h.f[2], 65504.0f);
  EXPECT_TRUE(std::isinf(h.f[3]));
  EXPECT_EQ(h.f[4], 0.0f);
  EXPECT_TRUE(std::signbit(h.f[4]));
  EXPECT_TRUE(std::isnan(h.f[5]));
  // Float -> int8 truncates and saturates, NaN -> 0; -> bool: NaN is true.
  const Tensor f = floats({5}, {300.7f, -1.9f, -1000.0f, std::nanf(""), 0.0f});
  EXPECT_EQ(run1(makeNode("Cast", 1, {{"to", intAttr(static_cast<int64_t>(DType::kInt8))}}), {&f}).i,
            (std::vector<int64_t>{127, -1, -128, 0, 0}));
  EXPECT_EQ(run1(makeNode("Cast", 1, {{"to", intAttr(static_cast<int64_t>(DType::kBool))}}), {&f}).i,
            (std::vector<int64_t>{1, 1, 1, 1, 0}));
  // Integer -> narrower integer keeps the low bits.
  const Tensor i = ints({3}, {200, -129, 65537}, DType::kInt32);
  EXPECT_EQ(run1(makeNode("Cast", 1, {{"to", intAttr(static_cast<int64_t>(DType::kInt8))}}), {&i}).i,
            (std::vector<int64_t>{-56, 127, 1}));
  // A float16 result of arithmetic is rounded too: 1 + 2^-11 is not a half.
  const Tensor a = floats({1}, {1.0f}, DType::kFloat16),
               b = floats({1}, {std::ldexp(1.0f, -11)}, DType::kFloat16);
  EXPECT_EQ(run1(makeNode("Add"), {&a, &b}).f[0], 1.0f);
  // bfloat16 targets are refused at load (checkCpuNode), naming the attribute.
  const std::string msg = errorOf([&] { run1(makeNode("Cast", 1, {{"to", intAttr(16)}}), {&x}); });
  EXPECT_NE(msg.find("node 'n0' (Cast), opset 17: attribute to = bfloat16 is not supported"),
            std::string::npos)
      << msg;
}

TEST(CpuOps, UnsupportedFormsAreRefusedAtLoad) {
  // An attribute the kernel does not read.
  std::string msg = errorOf([] { checkCpuNode(makeNode("Relu", 1, {{"alpha", floatAttr(1)}}), kOpset); });
  EXPECT_EQ(msg, "node 'n0' (Relu), opset 17: attribute alpha is not supported by the CPU kernel");
  // An attribute that became an input: valid before opset 13, refused from it.
  EXPECT_NO_THROW(checkCpuNode(makeNode("Squeeze", 1, {{"axes", intsAttr({0})}}), 11));
  msg = errorOf([] { checkCpuNode(makeNode("Squeeze", 1, {{"axes", intsAttr({0})}}), 13); });
  EXPECT_NE(msg.find("attribute axes is not supported by the CPU kernel at this opset"), std::string::npos)
      << msg;
  // Attribute values.
  msg = errorOf([] { checkCpuNode(makeNode("Resize", 1, {{"mode", stringAttr("area")}}), 13); });
  EXPECT_EQ(msg,
            "node 'n0' (Resize), opset 13: attribute mode = 'area' is not supported by the CPU kernel "
            "(nearest, linear or cubic)");
  msg = errorOf([] { checkCpuNode(makeNode("BatchNormalization", 1, {{"training_mode", intAttr(1)}}), 15); });
  EXPECT_NE(msg.find("attribute training_mode = 1 is not supported"), std::string::npos) << msg;
  msg = errorOf([] { checkCpuNode(makeNode("Pad", 1, {{"mode", stringAttr("wrap")}}), 18); });
  EXPECT_EQ(msg,
            "node 'n0' (Pad), opset 18: attribute mode = 'wrap' is not supported by the CPU kernel "
            "(constant, reflect or edge)");
  EXPECT_NO_THROW(checkCpuNode(makeNode("Pad", 1, {{"mode", stringAttr("wrap")}}), 19));
  msg = errorOf([] { checkCpuNode(makeNode("Conv", 1, {{"auto_pad", stringAttr("SAME")}}), 11); });
  EXPECT_NE(msg.find("(Conv), opset 11: attribute auto_pad = 'SAME'"), std::string::npos) << msg;
  // Operators, opsets and domains.
  msg = errorOf([] { checkCpuNode(makeNode("LSTM"), kOpset); });
  EXPECT_EQ(msg, "node 'n0' (LSTM), opset 17: operator LSTM is not supported by the CPU executor");
  msg = errorOf([] { checkCpuNode(makeNode("Resize"), 10); });
  EXPECT_NE(msg.find("implements Resize from opset 11 on"), std::string::npos) << msg;
  Node custom = makeNode("Relu");
  custom.domain = "com.microsoft";
  EXPECT_NE(errorOf([&] { checkCpuNode(custom, kOpset); }).find("domain 'com.microsoft'"), std::string::npos);
}

TEST(CpuOps, ReshapeZeroAndMinusOne) {
  const Tensor x(DType::kFloat32, {2, 3, 4});
  const Tensor s1 = ints({3}, {0, -1, 2});
  EXPECT_EQ(run1(makeNode("Reshape"), {&x, &s1}).shape, (Shape{2, 6, 2}));
  const Tensor empty(DType::kFloat32, {0, 3});
  const Tensor s2 = ints({2}, {3, 0});
  EXPECT_EQ(run1(makeNode("Reshape", 1, {{"allowzero", intAttr(1)}}), {&empty, &s2}).shape, (Shape{3, 0}));
  EXPECT_THROW(run1(makeNode("Reshape"), {&empty, &s2}),
               Error);  // 0 copies 3: [3, 3] does not hold 0 elements
  const Tensor s3 = ints({2}, {-1, -1});
  EXPECT_THROW(run1(makeNode("Reshape"), {&x, &s3}), Error);
}

TEST(CpuOps, ReductionsAndSoftmaxAxes) {
  const Tensor x = floats({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor axes = ints({1}, {-2});
  Tensor y = run1(makeNode("ReduceSum", 1, {{"keepdims", intAttr(0)}}), {&x, &axes}, 13);
  EXPECT_EQ(y.shape, (Shape{2, 2}));
  EXPECT_EQ(y.f, (std::vector<float>{4, 6, 12, 14}));
  // Opset 11: axes as an attribute.
  y = run1(makeNode("ReduceMax", 1, {{"axes", intsAttr({0, 2})}}), {&x}, 11);
  EXPECT_EQ(y.shape, (Shape{1, 2, 1}));
  EXPECT_EQ(y.f, (std::vector<float>{6, 8}));
  // No axes: everything, unless noop_with_empty_axes.
  EXPECT_EQ(run1(makeNode("ReduceProd"), {&x}).f, (std::vector<float>{40320}));
  EXPECT_EQ(run1(makeNode("ReduceSum", 1, {{"noop_with_empty_axes", intAttr(1)}}), {&x}).f, x.f);
  // Softmax: opset 13 along axis 1 only; opset 11 over dims 1.. flattened into rows of 4.
  const Tensor z = floats({1, 2, 2}, {0, 0, std::log(3.0f), 0});
  const Tensor s13 = run1(makeNode("Softmax", 1, {{"axis", intAttr(1)}}), {&z}, 13);
  const std::vector<float> want13{0.25f, 0.5f, 0.75f, 0.5f}, want11{1 / 6.0f, 1 / 6.0f, 0.5f, 1 / 6.0f};
  const Tensor s11 = run1(makeNode("Softmax", 1, {{"axis", intAttr(1)}}), {&z}, 11);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_NEAR(s13.f[k], want13[k], 1e-6) << k;
    EXPECT_NEAR(s11.f[k], want11[k], 1e-6) << k;
  }
}

TEST(CpuOps, MatMulPromotesVectorsAndBroadcastsBatches) {
  // (2, 1, 2, 3) x (3, 3, 1)... a (3,) vector on the right gives (2, 1, 2).
  Tensor a(DType::kFloat32, {2, 1, 2, 3});
  for (size_t k = 0; k < a.f.size(); ++k) a.f[k] = static_cast<float>(k);
  const Tensor v = floats({3}, {1, 0, -1});
  const Tensor y = run1(makeNode("MatMul"), {&a, &v});
  EXPECT_EQ(y.shape, (Shape{2, 1, 2}));
  EXPECT_EQ(y.f, (std::vector<float>{-2, -2, -2, -2}));
  // Batch broadcast: (2, 1, 2, 3) x (4, 3, 1) -> (2, 4, 2, 1); b[j] scales column sums.
  Tensor b(DType::kFloat32, {4, 3, 1});
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t k = 0; k < 3; ++k) b.f[j * 3 + k] = static_cast<float>(j);
  const Tensor z = run1(makeNode("MatMul"), {&a, &b});
  ASSERT_EQ(z.shape, (Shape{2, 4, 2, 1}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t r = 0; r < 2; ++r) {
        const float row_sum = a.f[(i * 2 + r) * 3] + a.f[(i * 2 + r) * 3 + 1] + a.f[(i * 2 + r) * 3 + 2];
        EXPECT_EQ(z.f[(i * 4 + j) * 2 + r], row_sum * static_cast<float>(j));
      }
}

TEST(CpuOps, PadModes) {
  const Tensor x = floats({3}, {1, 2, 3});
  const Tensor pads = ints({2}, {4, 2});
  EXPECT_EQ(run1(makeNode("Pad", 1, {{"mode", stringAttr("reflect")}}), {&x, &pads}).f,
            (std::vector<float>{1, 2, 3, 2, 1, 2, 3, 2, 1}));  // numpy.pad(..., "reflect")
  EXPECT_EQ(run1(makeNode("Pad", 1, {{"mode", stringAttr("edge")}}), {&x, &pads}).f,
            (std::vector<float>{1, 1, 1, 1, 1, 2, 3, 3, 3}));
  const Tensor value = floats({}, {9});
  EXPECT_EQ(run1(makeNode("Pad"), {&x, &pads, &value}).f, (std::vector<float>{9, 9, 9, 9, 1, 2, 3, 9, 9}));
  const Tensor crop = ints({2}, {-1, 0});
  EXPECT_EQ(run1(makeNode("Pad"), {&x, &crop}).f, (std::vector<float>{2, 3}));
}

TEST(CpuOps, ResizeLinearAlignCorners) {
  // 1-D in effect: [1, 1, 1, 3] -> width 5 with align_corners: samples at 0, 0.5, 1, 1.5, 2.
  const Tensor x = floats({1, 1, 1, 3}, {0, 10, 30});
  const Tensor roi(DType::kFloat32, {0}), scales(DType::kFloat32, {0});
  const Tensor sizes = ints({4}, {1, 1, 1, 5});
  const Tensor y = run1(makeNode("Resize", 1,
                                 {{"mode", stringAttr("linear")},
                                  {"coordinate_transformation_mode", stringAttr("align_corners")}}),
                        {&x, &roi, &scales, &sizes}, 13);
  EXPECT_EQ(y.f, (std::vector<float>{0, 5, 10, 20, 30}));
}

TEST(CpuOps, HostileSizesAreErrors) {
  // Sizes from a model are untrusted: overflowing arithmetic or huge outputs are errors naming the node,
  // never undefined behaviour or an allocation attempt.
  const Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4}), wt = floats({1, 1, 2, 2}, {1, 1, 1, 1});
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_NE(errorOf([&] {
              run1(makeNode("Conv", 1, {{"dilations", intsAttr({big, 1})}}), {&x, &wt});
            }).find("(Conv)"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              run1(makeNode("ConvTranspose", 1, {{"strides", intsAttr({big, big})}}), {&x, &wt});
            }).find("overflow"),
            std::string::npos);
  const Tensor pads = ints({8}, {0, 0, big, 0, 0, 0, big, 0});
  EXPECT_NE(errorOf([&] { run1(makeNode("Pad"), {&x, &pads}); }).find("(Pad)"), std::string::npos);
  const Tensor shape = ints({3}, {1 << 20, 1 << 20, 1 << 20});
  EXPECT_NE(errorOf([&] { run1(makeNode("ConstantOfShape"), {&shape}); }).find("2^40"), std::string::npos);
  const Tensor repeats = ints({4}, {1, 1, big, 1});
  EXPECT_NE(errorOf([&] { run1(makeNode("Tile"), {&x, &repeats}); }).find("(Tile)"), std::string::npos);
  // A tensor whose storage does not match its shape (a caller's mistake) is refused before any kernel reads
  // it.
  Tensor short_storage = floats({2}, {1, 2});
  short_storage.shape = {3};
  EXPECT_NE(errorOf([&] { run1(makeNode("Relu"), {&short_storage}); }).find("holds 2 values for shape [3]"),
            std::string::npos);
  const Tensor split = ints({2}, {big, 2});
  EXPECT_NE(errorOf([&] { run(makeNode("Split", 2), {&x, &split}); }).find("(Split)"), std::string::npos);
}

}  // namespace
}  // namespace sf::nn
