// Max, Min, LayerNormalization, InstanceNormalization, Einsum, ScatterND, MaxPool, AveragePool and
// ConvTranspose on the Vulkan executor against the CPU executor per element, on shapes larger than ONNX's
// conformance cases (which also run on the GPU, onnx_conformance_vulkan_test.cpp): the variadic and fused
// forms of Max and Min, normalisation with and without its statistics outputs, Einsum's strided sums and
// products (attention-style, transposed output, broadcast ellipsis), ScatterND by constant indices, pooling
// and transposed convolution over batches of several channels with strides, dilations and asymmetric pads;
// and the forms the GPU refuses, named with the node.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "core/error.h"
#include "gpu/gpu.h"
#include "neural/vulkan_executor.h"
#include "op_test_helpers.h"
#include "support/test_support.h"
#include "vulkan_test_device.h"

namespace sf::nn {
namespace {

using optest::device;

Tensor ramp(DType type, Shape shape, double phase) {
  Tensor t(type, std::move(shape));
  for (size_t k = 0; k < t.f.size(); ++k)
    t.f[k] = roundToFloatType(std::sin(0.61 * static_cast<double>(k) + phase) * 1.5 + 0.2, type);
  for (size_t k = 0; k < t.i.size(); ++k) t.i[k] = static_cast<int64_t>(k * 7919 % 201) - 100;
  return t;
}

using optest::intAttr, optest::intsAttr, optest::stringAttr;

// A one-node graph: inputs (fed) and initializers (static), the node, its outputs.
struct OneNode {
  Graph g;
  TensorMap feeds;
  OneNode(const char* op, std::map<std::string, Attribute> attributes = {}) {
    g.path = std::string(op) + ".onnx";
    g.opset = 18;
    Node n;
    n.name = "n0", n.op_type = op, n.attributes = std::move(attributes);
    g.nodes.push_back(n);
  }
  OneNode& input(const std::string& name, Tensor t) {
    g.inputs.push_back({name, t.dtype, {}, {}, false});
    feeds[name] = std::move(t);
    g.nodes[0].inputs.push_back(name);
    return *this;
  }
  OneNode& constant(const std::string& name, Tensor t) {
    g.initializers[name] = std::move(t);
    g.nodes[0].inputs.push_back(name);
    return *this;
  }
  OneNode& output(const std::string& name, DType type) {
    g.outputs.push_back({name, type, {}, {}, false});
    g.nodes[0].outputs.push_back(name);
    return *this;
  }
};

// Runs the graph on both executors; every output must agree per element (integers exactly, floats within
// the GPU's float32 sums of the CPU's double ones).
void expectGpuMatchesCpu(const OneNode& m, double tol = 2e-5) {
  VulkanExecutor ex(*device(), m.g);
  const TensorMap gpu = ex.run(m.feeds), cpu = ex.cpu().run(m.feeds);
  for (const ValueInfo& v : m.g.outputs) {
    const Tensor &a = gpu.at(v.name), &b = cpu.at(v.name);
    ASSERT_EQ(a.dtype, b.dtype) << m.g.path << " " << v.name;
    ASSERT_EQ(a.shape, b.shape) << m.g.path << " " << v.name;
    EXPECT_EQ(a.i, b.i) << m.g.path << " " << v.name;
    size_t bad = 0;
    for (size_t k = 0; k < b.f.size(); ++k) {
      const bool same = std::isnan(b.f[k]) ? std::isnan(a.f[k])
                                           : a.f[k] == b.f[k] || std::fabs(a.f[k] - b.f[k]) <=
                                                                     tol * std::max(1.0f, std::fabs(b.f[k]));
      if (!same && bad++ < 3)
        ADD_FAILURE() << m.g.path << " " << v.name << " element " << k << ": GPU " << a.f[k] << ", CPU "
                      << b.f[k];
    }
  }
}

std::string planProblem(const OneNode& m) {
  return vulkanPlanProblem(CpuExecutor(m.g), m.feeds);
}

TEST(VulkanNewOps, MaxMinElementwiseFusedAndVariadic) {
  REQUIRE_DEVICE();
  for (const char* op : {"Max", "Min"}) {
    // Two inputs, broadcasting: one elementwise dispatch.
    OneNode two(op);
    two.input("a", ramp(DType::kFloat32, {64, 33}, 0.1))
        .input("b", ramp(DType::kFloat32, {33}, 0.7))
        .output("y", DType::kFloat32);
    expectGpuMatchesCpu(two);
    // Five inputs (a NaN among them, broadcast shapes, one read twice): one fused program.
    Tensor c = ramp(DType::kFloat32, {64, 1}, 1.3);
    c.f[5] = std::nanf("");
    OneNode five(op);
    five.input("a", ramp(DType::kFloat16, {64, 33}, 0.1)).input("b", ramp(DType::kFloat16, {33}, 0.7));
    Tensor c16(DType::kFloat16, {64, 1});
    for (size_t k = 0; k < c.f.size(); ++k) c16.f[k] = roundToFloatType(c.f[k], DType::kFloat16);
    five.input("c", c16).constant("d", ramp(DType::kFloat16, {}, 2.0)).output("y", DType::kFloat16);
    five.g.nodes[0].inputs.push_back("a");
    expectGpuMatchesCpu(five, 0);
    // Integers (two inputs) and one input.
    OneNode ints(op);
    ints.input("a", ramp(DType::kInt32, {7, 9}, 0))
        .input("b", ramp(DType::kInt32, {7, 1}, 0))
        .output("y", DType::kInt32);
    expectGpuMatchesCpu(ints);
    OneNode one(op);
    one.input("a", ramp(DType::kInt16, {11}, 0)).output("y", DType::kInt16);
    expectGpuMatchesCpu(one);
    // Three integer inputs: refused when planned, naming the node.
    OneNode three(op);
    three.input("a", ramp(DType::kInt32, {4}, 0))
        .input("b", ramp(DType::kInt32, {4}, 0))
        .input("c", ramp(DType::kInt32, {4}, 0))
        .output("y", DType::kInt32);
    const std::string e = planProblem(three);
    EXPECT_NE(e.find(std::string("node 'n0' (") + op + "), opset 18: 3 integer inputs (integer " + op +
                     " takes up to 2) (Vulkan executor)"),
              std::string::npos)
        << e;
  }
}

// A Max between two float operators joins their fused chain (ReLU6-like clamps in generator MLPs).
TEST(VulkanNewOps, MaxJoinsFusedChains) {
  REQUIRE_DEVICE();
  Graph g;
  g.path = "chain.onnx";
  g.opset = 18;
  g.inputs.push_back({"x", DType::kFloat32, {}, {}, false});
  g.outputs.push_back({"y", DType::kFloat32, {}, {}, false});
  Tensor lo(DType::kFloat32, {}), hi(DType::kFloat32, {});
  lo.f = {-0.5f};
  hi.f = {0.75f};
  g.initializers["lo"] = lo;
  g.initializers["hi"] = hi;
  using optest::node;
  g.nodes = {node("mul", "Mul", {"x", "x"}, "m"), node("max", "Max", {"m", "lo"}, "a"),
             node("min", "Min", {"hi", "a"}, "b"), node("tanh", "Tanh", {"b"}, "y")};
  VulkanExecutor ex(*device(), g);
  const TensorMap feeds{{"x", ramp(DType::kFloat32, {5, 40}, 0.3)}};
  std::vector<NodeTime> times;
  const Tensor got = ex.run(feeds, &times).at("y"), want = ex.cpu().run(feeds).at("y");
  ASSERT_EQ(got.shape, want.shape);
  for (size_t k = 0; k < want.f.size(); ++k) EXPECT_NEAR(got.f[k], want.f[k], 1e-6) << k;
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0].op_type, "Fused");
}

TEST(VulkanNewOps, NormalizationMatchesCpu) {
  REQUIRE_DEVICE();
  // LayerNormalization over the last axis with its statistics; over two axes in float16; one scale value.
  OneNode rows("LayerNormalization");
  rows.input("x", ramp(DType::kFloat32, {37, 96}, 0.2))
      .constant("w", ramp(DType::kFloat32, {96}, 1.0))
      .constant("b", ramp(DType::kFloat32, {96}, 2.0));
  rows.output("y", DType::kFloat32).output("mean", DType::kFloat32).output("inv", DType::kFloat32);
  expectGpuMatchesCpu(rows);
  OneNode half("LayerNormalization", {{"axis", intAttr(1)}});
  half.input("x", ramp(DType::kFloat16, {6, 3, 40}, 0.4))
      .input("w", ramp(DType::kFloat16, {3, 40}, 0.9))
      .input("b", ramp(DType::kFloat16, {3, 40}, 1.9));
  half.output("y", DType::kFloat16);
  half.g.nodes[0].outputs.push_back("");  // Mean not asked for
  half.g.nodes[0].outputs.push_back("inv");
  half.g.outputs.push_back({"inv", DType::kFloat32, {}, {}, false});
  expectGpuMatchesCpu(half, 3e-3);  // a float16 step may round the other way from a float32 statistic
  OneNode one_scale("LayerNormalization", {{"axis", intAttr(-2)}});
  one_scale.input("x", ramp(DType::kFloat32, {4, 5, 6}, 0.6))
      .constant("w", ramp(DType::kFloat32, {1}, 0.5))
      .output("y", DType::kFloat32);
  expectGpuMatchesCpu(one_scale);
  OneNode instance("InstanceNormalization");
  instance.input("x", ramp(DType::kFloat32, {2, 4, 9, 7}, 0.8))
      .input("s", ramp(DType::kFloat32, {4}, 0.1))
      .input("b", ramp(DType::kFloat32, {4}, 0.3));
  instance.output("y", DType::kFloat32);
  expectGpuMatchesCpu(instance);
}

TEST(VulkanNewOps, EinsumSumsAndProductsMatchCpu) {
  REQUIRE_DEVICE();
  struct Case {
    const char* equation;
    std::vector<Shape> shapes;
  };
  const Case cases[] = {
      {"bhid,bhjd->bhij", {{2, 3, 70, 32}, {2, 3, 65, 32}}},  // attention scores: tiled GEMM, B transposed
      {"bhij,bhjd->bhid", {{2, 3, 20, 65}, {2, 3, 65, 24}}},  // attention-weighted values
      {"bij,bkj->bki", {{3, 5, 7}, {3, 4, 7}}},               // the output's rows from the second operand
      {"ij,jk->ki", {{40, 9}, {9, 50}}},                      // a transposed product
      {"...ij,...jk->...ik", {{2, 1, 6, 5}, {3, 5, 4}}},      // broadcast batch axes (stride 0)
      {"i,j->ij", {{17}, {19}}},                              // an outer product (no summed label)
      {"ij,jk->ikj", {{6, 7}, {7, 5}}},       // every axis a batch axis (stride 0 where one lacks it)
      {"ij,ij->i", {{30, 12}, {30, 12}}},     // a row-wise dot product
      {"bn,bnd->bd", {{4, 50}, {4, 50, 8}}},  // a weighted sum
      {"ij->ji", {{13, 11}}},                 // one operand: a transpose
      {"bii->bi", {{3, 6, 6}}},               // a diagonal
      {"ii", {{9, 9}}},                       // a trace
      {"abc->ca", {{5, 300, 4}}},             // a long sum, transposed
  };
  for (const Case& c : cases) {
    OneNode m("Einsum", {{"equation", stringAttr(c.equation)}});
    for (size_t k = 0; k < c.shapes.size(); ++k)
      m.input(k == 0 ? "a" : "b", ramp(DType::kFloat32, c.shapes[k], 0.3 * static_cast<double>(k)));
    m.output("y", DType::kFloat32);
    SCOPED_TRACE(c.equation);
    expectGpuMatchesCpu(m, 1e-4);
  }
  // One integer operand: an integer sum.
  OneNode sum("Einsum", {{"equation", stringAttr("ij->j")}});
  sum.input("a", ramp(DType::kInt32, {20, 6}, 0)).output("y", DType::kInt32);
  expectGpuMatchesCpu(sum);
  // Forms the GPU's strided product cannot take are refused when planned, with the node and the equation.
  auto refused = [](const char* equation, std::vector<Shape> shapes, DType type = DType::kFloat32) {
    OneNode m("Einsum", {{"equation", stringAttr(equation)}});
    for (size_t k = 0; k < shapes.size(); ++k) m.input(k == 0 ? "a" : "b", ramp(type, shapes[k], 0));
    m.output("y", type);
    return planProblem(m);
  };
  std::string e = refused("ab,cd->acbd", {{2, 3}, {4, 5}});
  EXPECT_NE(e.find("node 'n0' (Einsum), opset 18: equation 'ab,cd->acbd': the output's axes are not batch "
                   "axes, then one operand's own "
                   "labels, then the other's (Vulkan executor)"),
            std::string::npos)
      << e;
  e = refused("ij,j->", {{2, 3}, {3}});
  EXPECT_NE(e.find("equation 'ij,j->': a label summed within one operand"), std::string::npos) << e;
  e = refused("ij,jk->ik", {{2, 3}, {3, 4}}, DType::kInt32);
  EXPECT_NE(e.find("an integer Einsum of two operands"), std::string::npos) << e;
  e = refused("ijk,ikj->i", {{2, 3, 4}, {2, 4, 3}});  // j and k summed, laid out in the opposite orders
  EXPECT_NE(e.find("the summed labels are not laid out alike in both operands"), std::string::npos) << e;
}

TEST(VulkanNewOps, ScatterNDByConstantIndicesMatchesCpu) {
  REQUIRE_DEVICE();
  // Rows of data overwritten by rows of updates; row 2 twice (the last write wins) and row 7 from the end.
  Tensor idx(DType::kInt64, {4, 1});
  idx.i = {2, 5, 2, -1};
  OneNode rows("ScatterND");
  rows.input("data", ramp(DType::kFloat32, {8, 16}, 0.2))
      .constant("idx", idx)
      .input("updates", ramp(DType::kFloat32, {4, 16}, 1.1));
  rows.output("y", DType::kFloat32);
  expectGpuMatchesCpu(rows, 0);
  // Single elements of an integer tensor.
  Tensor at(DType::kInt64, {3, 3});
  at.i = {0, 1, 2, 1, 0, 0, 1, 2, 3};
  OneNode elems("ScatterND");
  elems.input("data", ramp(DType::kInt32, {2, 3, 4}, 0))
      .constant("at", at)
      .input("updates", ramp(DType::kInt32, {3}, 0))
      .output("y", DType::kInt32);
  expectGpuMatchesCpu(elems, 0);
  // A reduction has no GPU kernel: refused when the executor is made.
  OneNode add("ScatterND", {{"reduction", stringAttr("add")}});
  add.input("data", ramp(DType::kFloat32, {8, 16}, 0.2))
      .constant("idx", idx)
      .input("updates", ramp(DType::kFloat32, {4, 16}, 1.1));
  add.output("y", DType::kFloat32);
  const std::string e = test::errorOf([&] { VulkanExecutor ex(*device(), add.g); });
  EXPECT_NE(e.find("node 'n0' (ScatterND), opset 18: no Vulkan kernel for ScatterND with reduction 'add'"),
            std::string::npos)
      << e;
}

// MaxPool (both outputs, both storage orders), AveragePool (padding counted or not, ceil_mode, dilations at
// opset 19) over batch 2 of several channels with strides, dilations and asymmetric pads, 1-D to 3-D; a
// window entirely in the padding (-inf, index -1); float16 and integer inputs.
TEST(VulkanNewOps, PoolingMatchesCpu) {
  REQUIRE_DEVICE();
  for (int64_t order : {0, 1}) {
    OneNode m("MaxPool", {{"kernel_shape", intsAttr({3, 2})},
                          {"strides", intsAttr({2, 3})},
                          {"dilations", intsAttr({2, 1})},
                          {"pads", intsAttr({1, 0, 2, 3})},
                          {"ceil_mode", intAttr(1)},
                          {"storage_order", intAttr(order)}});
    m.input("x", ramp(DType::kFloat32, {2, 5, 13, 11}, 0.3)).output("y", DType::kFloat32);
    m.output("i", DType::kInt64);
    expectGpuMatchesCpu(m, 0);
  }
  // Pads past the kernel: the first row of windows lies entirely in the padding.
  OneNode empty("MaxPool", {{"kernel_shape", intsAttr({2, 2})}, {"pads", intsAttr({3, 1, 0, 2})}});
  empty.input("x", ramp(DType::kFloat16, {2, 3, 6, 5}, 0.9)).output("y", DType::kFloat16);
  empty.output("i", DType::kInt64);
  expectGpuMatchesCpu(empty, 0);
  OneNode ints("MaxPool",
               {{"kernel_shape", intsAttr({3})}, {"strides", intsAttr({2})}, {"pads", intsAttr({0, 4})}});
  Tensor bytes = ramp(DType::kUInt8, {2, 4, 17}, 0);
  for (int64_t& v : bytes.i) v += 100;  // 0..200
  ints.input("x", bytes).output("y", DType::kUInt8);
  expectGpuMatchesCpu(ints, 0);
  OneNode cube("MaxPool", {{"kernel_shape", intsAttr({2, 3, 2})},
                           {"strides", intsAttr({1, 2, 2})},
                           {"auto_pad", stringAttr("SAME_LOWER")}});
  cube.input("x", ramp(DType::kFloat32, {2, 3, 5, 6, 7}, 0.1)).output("y", DType::kFloat32);
  expectGpuMatchesCpu(cube, 0);
  for (int64_t include : {0, 1}) {
    OneNode avg("AveragePool", {{"kernel_shape", intsAttr({3, 4})},
                                {"strides", intsAttr({2, 3})},
                                {"pads", intsAttr({1, 0, 2, 3})},
                                {"ceil_mode", intAttr(1)},
                                {"count_include_pad", intAttr(include)}});
    avg.input("x", ramp(DType::kFloat32, {2, 5, 13, 11}, 0.7)).output("y", DType::kFloat32);
    expectGpuMatchesCpu(avg);
    OneNode dilated("AveragePool", {{"kernel_shape", intsAttr({2, 3})},
                                    {"strides", intsAttr({3, 2})},
                                    {"dilations", intsAttr({3, 2})},
                                    {"pads", intsAttr({2, 1, 0, 2})},
                                    {"count_include_pad", intAttr(include)}});
    dilated.g.opset = 19;
    dilated.input("x", ramp(DType::kFloat16, {2, 4, 12, 9}, 1.7)).output("y", DType::kFloat16);
    expectGpuMatchesCpu(dilated, 1e-3);
  }
  OneNode same("AveragePool",
               {{"kernel_shape", intsAttr({3, 2, 2})}, {"auto_pad", stringAttr("SAME_UPPER")}});
  same.input("x", ramp(DType::kFloat32, {2, 3, 4, 5, 6}, 0.4)).output("y", DType::kFloat32);
  expectGpuMatchesCpu(same);
}

// ConvTranspose over batch 2 with groups, strides, dilations, asymmetric pads, output_padding and a bias;
// output_shape and auto_pad; 1-D and 3-D.
TEST(VulkanNewOps, ConvTransposeMatchesCpu) {
  REQUIRE_DEVICE();
  OneNode m("ConvTranspose", {{"group", intAttr(2)},
                              {"strides", intsAttr({2, 3})},
                              {"dilations", intsAttr({2, 1})},
                              {"pads", intsAttr({1, 0, 2, 1})},
                              {"output_padding", intsAttr({1, 2})}});
  m.input("x", ramp(DType::kFloat32, {2, 4, 7, 6}, 0.2))
      .constant("w", ramp(DType::kFloat32, {4, 3, 3, 2}, 1.1))
      .constant("b", ramp(DType::kFloat32, {6}, 2.3))
      .output("y", DType::kFloat32);
  expectGpuMatchesCpu(m);
  // W computed on the GPU (an input), output_shape larger than the input and kernel give.
  OneNode shaped("ConvTranspose", {{"strides", intsAttr({3, 2})}, {"output_shape", intsAttr({16, 13})}});
  shaped.input("x", ramp(DType::kFloat32, {2, 3, 5, 6}, 0.6))
      .input("w", ramp(DType::kFloat32, {3, 5, 2, 3}, 0.8))
      .output("y", DType::kFloat32);
  expectGpuMatchesCpu(shaped);
  for (const char* pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    OneNode line("ConvTranspose", {{"strides", intsAttr({3})}, {"auto_pad", stringAttr(pad)}});
    line.input("x", ramp(DType::kFloat32, {2, 6, 9}, 0.5))
        .constant("w", ramp(DType::kFloat32, {6, 2, 4}, 1.9))
        .output("y", DType::kFloat32);
    expectGpuMatchesCpu(line);
  }
  OneNode cube("ConvTranspose", {{"strides", intsAttr({2, 1, 2})}, {"pads", intsAttr({0, 1, 1, 1, 0, 0})}});
  cube.input("x", ramp(DType::kFloat16, {2, 2, 3, 4, 3}, 0.1))
      .constant("w", ramp(DType::kFloat16, {2, 3, 2, 3, 2}, 0.4))
      .output("y", DType::kFloat16);
  expectGpuMatchesCpu(cube, 1e-3);
}

// Beyond the window kernel: more than 4 spatial dimensions, an int64 MaxPool with a window in the padding.
TEST(VulkanNewOps, WindowRefusalsNameTheNode) {
  REQUIRE_DEVICE();
  OneNode five("AveragePool", {{"kernel_shape", intsAttr({1, 1, 1, 1, 2})}});
  five.input("x", ramp(DType::kFloat32, {1, 2, 2, 2, 2, 2, 3}, 0)).output("y", DType::kFloat32);
  std::string e = planProblem(five);
  EXPECT_NE(e.find("node 'n0' (AveragePool), opset 18: only 1 to 4 spatial dimensions"), std::string::npos)
      << e;
  OneNode wide("MaxPool", {{"kernel_shape", intsAttr({2})}, {"pads", intsAttr({2, 0})}});
  wide.input("x", ramp(DType::kInt64, {1, 2, 5}, 0)).output("y", DType::kInt64);
  e = planProblem(wide);
  EXPECT_NE(e.find("node 'n0' (MaxPool), opset 18: an int64 window entirely in the padding"),
            std::string::npos)
      << e;
  // Within the padding but never all of a window: runs.
  OneNode fits("MaxPool", {{"kernel_shape", intsAttr({3})}, {"pads", intsAttr({2, 2})}});
  fits.input("x", ramp(DType::kInt64, {1, 2, 5}, 0)).output("y", DType::kInt64);
  expectGpuMatchesCpu(fits, 0);
  // Each value fits 32 bits but an output position times the stride, plus the pads, does not.
  OneNode far("MaxPool", {{"kernel_shape", intsAttr({1})},
                          {"strides", intsAttr({1 << 30})},
                          {"pads", intsAttr({1 << 30, 1 << 30})}});
  far.input("x", ramp(DType::kFloat32, {1, 1, 4}, 0)).output("y", DType::kFloat32);
  e = planProblem(far);
  EXPECT_NE(e.find("node 'n0' (MaxPool), opset 18: a window's positions beyond 32 bits"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace sf::nn
