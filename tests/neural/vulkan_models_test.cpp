// The Vulkan executor on the project's demo models (models/, made by scripts/make_neural_models.py): every
// output per element against the CPU executor and against PyTorch's own outputs (the .pb files beside the
// models), plans reused across runs, refusals, per-node times, and the CLI paths that run generators and
// post models on the GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "core/error.h"
#include "gpu/gpu.h"
#include "io/formats.h"
#include "io/image_io.h"
#include "neural/generator.h"
#include "neural/gpu_generator.h"
#include "neural/vulkan_executor.h"
#include "op_test_helpers.h"
#include "render/cpu_renderer.h"
#include "render/vulkan_renderer.h"
#include "support/test_support.h"
#include "vulkan_test_device.h"

namespace sf::nn {
namespace {

std::string modelPath(const std::string& name) {
  return std::string(SPLATFORGE_SOURCE_DIR) + "/models/" + name;
}
Tensor pb(const std::string& stem) {
  return loadTensorProtoFile(modelPath(stem + ".pb"));
}

using optest::device;

// Largest |a - b| / (atol + rtol |b|) over the elements (at most 1 passes); integers must be equal.
double worstRatio(const Tensor& a, const Tensor& b, double atol, double rtol) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  if (!a.isFloat()) {
    EXPECT_EQ(a.i, b.i);
    return 0;
  }
  double worst = 0;
  for (size_t k = 0; k < std::min(a.f.size(), b.f.size()); ++k)
    worst = std::max(worst, std::abs(double(a.f[k]) - b.f[k]) / (atol + rtol * std::abs(double(b.f[k]))));
  return worst;
}

struct Case {
  const char* model;
  TensorMap inputs;
  std::map<std::string, std::string> torch;  // output -> .pb stem with PyTorch's values
};

std::vector<Case> demoCases() {
  Camera cam;
  cam.width = 160, cam.height = 120, cam.fx = cam.fy = 150, cam.cx = 80, cam.cy = 60;
  cam.world_to_camera = Mat4::fromLinearTranslation(Mat3{}, {0, 0, 3.2f});
  GaussianGenerator knot(modelPath("gaussians4d.onnx"));
  std::vector<Case> cases;
  for (const char* t : {"0", "0.35", "0.8"})
    cases.push_back({"gaussians4d.onnx",
                     knot.frameInputs(std::stod(t), cam),
                     {{"gaussian_f16", std::string("gaussians4d.t") + t + ".gaussian_f16"},
                      {"color_sh", std::string("gaussians4d.t") + t + ".color_sh"},
                      {"num_points", std::string("gaussians4d.t") + t + ".num_points"}}});
  for (const char* v : {"front", "side"}) {
    const std::string stem = std::string("anchors.") + v;
    cases.push_back(
        {"anchors.onnx",
         {{"camera_matrix", pb(stem + ".camera_matrix")}},
         {{"gaussians", stem + ".gaussians"}, {"rgb", stem + ".rgb"}, {"num_points", stem + ".num_points"}}});
  }
  for (const char* p : {"rest", "bent"}) {
    const std::string stem = std::string("avatar.") + p;
    cases.push_back(
        {"avatar.onnx",
         {{"pose", pb(stem + ".pose")}},
         {{"gaussians", stem + ".gaussians"}, {"rgb", stem + ".rgb"}, {"num_points", stem + ".num_points"}}});
  }
  cases.push_back({"unet.onnx", {{"image", pb("unet.sample.image")}}, {{"output", "unet.sample.output"}}});
  return cases;
}

// Each demo model, one executor per model run over all its cases (the plan is made once and reused; the
// time, camera or pose changes the result).
TEST(VulkanExecutor, DemoModelsMatchCpuAndTorchPerElement) {
  REQUIRE_DEVICE();
  std::map<std::string, std::unique_ptr<VulkanExecutor>> gpu;
  std::map<std::string, TensorMap> previous;
  for (const Case& c : demoCases()) {
    SCOPED_TRACE(c.model);
    auto& ex = gpu[c.model];
    if (!ex) ex = std::make_unique<VulkanExecutor>(*device(), loadOnnxFile(modelPath(c.model)));
    const TensorMap ours = ex->run(c.inputs);
    const TensorMap cpu = ex->cpu().run(c.inputs);
    ASSERT_EQ(ours.size(), cpu.size());
    for (const auto& [name, want] : cpu) {
      // Float16 outputs may land one half-precision step apart (float32 sums in another order).
      const double rtol = want.dtype == DType::kFloat16 ? 2.0 / 1024 : 1e-4;
      const double vs_cpu = worstRatio(ours.at(name), want, 1e-5, rtol);
      const double vs_torch = worstRatio(ours.at(name), pb(c.torch.at(name)), 2e-5,
                                         want.dtype == DType::kFloat16 ? 2.0 / 1024 : 2e-4);
      std::printf("%s %s: within %.3f of the tolerance vs CPU, %.3f vs PyTorch\n", c.model, name.c_str(),
                  vs_cpu, vs_torch);
      EXPECT_LE(vs_cpu, 1.0) << name;
      EXPECT_LE(vs_torch, 1.0) << name;
    }
    if (previous.count(c.model) && std::string(c.model) != "unet.onnx") {
      const std::string first = ours.begin()->first;
      EXPECT_NE(ours.at(first).f, previous[c.model].at(first).f) << "the input changed nothing";
    }
    previous[c.model] = ours;
  }
  EXPECT_GT(gpu["gaussians4d.onnx"]->gpuNodes(), 60u);  // 468 nodes: most fold, fuse or become views
}

// One timestamp interval per node run on the GPU; the unet at two sizes keeps two plans.
TEST(VulkanExecutor, TimesNodesAndPlansPerShape) {
  REQUIRE_DEVICE();
  VulkanExecutor ex(*device(), loadOnnxFile(modelPath("unet.onnx")));
  for (const auto& [h, w] : std::vector<std::pair<int64_t, int64_t>>{{24, 40}, {16, 16}, {24, 40}}) {
    Tensor img(DType::kFloat32, {1, 3, h, w});
    for (size_t k = 0; k < img.f.size(); ++k) img.f[k] = static_cast<float>((k * 37) % 101) / 100.0f;
    std::vector<NodeTime> times;
    const TensorMap out = ex.run({{"image", img}}, &times);
    EXPECT_EQ(times.size(), ex.gpuNodes());
    for (const NodeTime& t : times) EXPECT_GE(t.ms, 0.0) << t.op_type;
    EXPECT_EQ(out.at("output").shape, (Shape{1, 3, h, w}));
    EXPECT_LE(worstRatio(out.at("output"), ex.cpu().run({{"image", img}}).at("output"), 1e-5, 1e-4), 1.0);
  }
  // Back to back: one time per run, and the runs leave the plan as they found it (a plain run after them
  // still matches the CPU).
  Tensor img(DType::kFloat32, {1, 3, 16, 16});
  for (size_t k = 0; k < img.f.size(); ++k) img.f[k] = static_cast<float>((k * 13) % 29) / 28.0f;
  const std::vector<double> runs = ex.runBackToBack({{"image", img}}, 5);
  ASSERT_EQ(runs.size(), 5u);
  for (double ms : runs) EXPECT_GT(ms, 0.0);
  EXPECT_LE(worstRatio(ex.run({{"image", img}}).at("output"), ex.cpu().run({{"image", img}}).at("output"),
                       1e-5, 1e-4),
            1.0);
  EXPECT_NE(test::errorOf([&] {
              ex.runBackToBack({{"image", img}}, 0);
            }).find("back-to-back runs must be 1 to 4096"),
            std::string::npos);
}

// A graph the GPU cannot run is refused with the node, op type and opset; integers outside int32 too.
TEST(VulkanExecutor, RefusalsNameTheNode) {
  REQUIRE_DEVICE();
  Graph g;
  g.path = "product.onnx";
  g.opset = 17;
  g.inputs.push_back({"x", DType::kFloat32, {4}, {""}, true});
  g.outputs.push_back({"y", DType::kFloat32, {4}, {""}, true});
  Node n;
  n.name = "product", n.op_type = "Einsum", n.inputs = {"x", "x", "x"}, n.outputs = {"y"};
  Attribute eq;
  eq.kind = Attribute::Kind::kString, eq.s = "i,i,i->i";
  n.attributes["equation"] = eq;
  g.nodes = {n};
  const std::string e = test::errorOf([&] { VulkanExecutor ex(*device(), g); });
  EXPECT_NE(e.find("product.onnx: node(s) the Vulkan executor cannot run:"), std::string::npos) << e;
  EXPECT_NE(
      e.find("node 'product' (Einsum), opset 17: no Vulkan kernel for Einsum of 3 operands (one or two)"),
      std::string::npos)
      << e;

  Graph add;
  add.path = "add.onnx";
  add.opset = 17;
  add.inputs.push_back({"a", DType::kInt64, {2}, {""}, true});
  add.outputs.push_back({"b", DType::kInt64, {2}, {""}, true});
  Node a;
  a.name = "twice", a.op_type = "Add", a.inputs = {"a", "a"}, a.outputs = {"b"};
  add.nodes = {a};
  VulkanExecutor ex(*device(), add);
  Tensor small(DType::kInt64, {2}), big(DType::kInt64, {2});
  small.i = {3, -4};
  big.i = {1, int64_t{1} << 40};
  EXPECT_EQ(ex.run({{"a", small}}).at("b").i, (std::vector<int64_t>{6, -8}));
  const std::string e2 = test::errorOf([&] { ex.run({{"a", big}}); });
  EXPECT_NE(e2.find("add.onnx: input 'a': element 1 (1099511627776) is outside the int32 range"),
            std::string::npos)
      << e2;
}

Tensor int64s(Shape shape, std::vector<int64_t> v) {
  Tensor t(DType::kInt64, std::move(shape));
  t.i = std::move(v);
  return t;
}

// Long reductions to few outputs (a mesh's bounds) run one workgroup per output; every float kind matches
// the CPU's serial reduction, NaN propagation of max and min included.
TEST(VulkanExecutor, LongReductionsMatchCpu) {
  REQUIRE_DEVICE();
  const char* const kinds[] = {"ReduceSum",    "ReduceMean",     "ReduceMax", "ReduceMin",
                               "ReduceProd",   "ReduceL1",       "ReduceL2",  "ReduceSumSquare",
                               "ReduceLogSum", "ReduceLogSumExp"};
  for (const char* op : kinds) {
    for (const bool with_nan : {false, true}) {
      Graph g;
      g.path = std::string(op) + ".onnx";
      g.opset = 11;  // axes as an attribute for every reduction
      g.inputs.push_back({"x", DType::kFloat32, {1, 1225, 3}, {"", "", ""}, true});
      g.outputs.push_back({"y", DType::kFloat32, {1, 1, 3}, {"", "", ""}, true});
      Node n;
      n.name = "r", n.op_type = op, n.inputs = {"x"}, n.outputs = {"y"};
      Attribute axes;
      axes.kind = Attribute::Kind::kInts, axes.ints = {1};
      n.attributes["axes"] = axes;
      g.nodes = {n};
      VulkanExecutor ex(*device(), g);
      Tensor x(DType::kFloat32, {1, 1225, 3});
      for (size_t k = 0; k < x.f.size(); ++k)
        x.f[k] =
            0.5f + 0.5f * std::sin(0.37f * static_cast<float>(k));  // positive: logs and products stay finite
      if (std::string(op) == "ReduceProd")
        for (float& v : x.f) v = 1.0f + 0.0005f * (v - 0.5f);
      if (with_nan) x.f[3 * 700 + 1] = std::nanf("");
      const Tensor got = ex.run({{"x", x}}).at("y"), want = ex.cpu().run({{"x", x}}).at("y");
      ASSERT_EQ(got.shape, want.shape) << op;
      for (size_t k = 0; k < 3; ++k) {
        if (std::isnan(want.f[k])) {
          EXPECT_TRUE(std::isnan(got.f[k])) << op << " output " << k;
          continue;
        }
        EXPECT_NEAR(got.f[k], want.f[k], 2e-5 * std::max(1.0f, std::fabs(want.f[k])))
            << op << " output " << k << (with_nan ? " (NaN input)" : "");
      }
    }
  }
}

// A chain of data movement (Transpose -> Reshape -> Slice -> Concat -> Gather by constant indices) runs as
// one gather-map dispatch composed at plan time, and copies what the CPU kernels copy.
TEST(VulkanExecutor, ComposedMovesMatchCpu) {
  REQUIRE_DEVICE();
  Graph g;
  g.path = "moves.onnx";
  g.opset = 17;
  g.inputs.push_back({"x", DType::kFloat32, {2, 3, 4}, {"", "", ""}, true});
  g.inputs.push_back({"y", DType::kFloat32, {2, 6}, {"", ""}, true});
  g.outputs.push_back({"out", DType::kFloat32, {3, 6}, {"", ""}, true});
  g.initializers["shape"] = int64s({2}, {4, 6});
  g.initializers["starts"] = int64s({1}, {3});
  g.initializers["ends"] = int64s({1}, {0});
  g.initializers["axes"] = int64s({1}, {0});
  g.initializers["steps"] = int64s({1}, {-2});
  g.initializers["rows"] = int64s({3}, {3, 0, -1});
  auto node = [](const char* name, const char* op, std::vector<std::string> in,
                 std::vector<std::string> out) {
    Node n;
    n.name = name, n.op_type = op, n.inputs = std::move(in), n.outputs = std::move(out);
    return n;
  };
  Node t = node("t", "Transpose", {"x"}, {"xt"});
  Attribute perm;
  perm.kind = Attribute::Kind::kInts, perm.ints = {2, 0, 1};
  t.attributes["perm"] = perm;
  Node c = node("c", "Concat", {"sl", "y"}, {"cat"});
  Attribute axis;
  axis.kind = Attribute::Kind::kInt, axis.i = 0;
  c.attributes["axis"] = axis;
  g.nodes = {t, node("r", "Reshape", {"xt", "shape"}, {"xr"}),
             node("s", "Slice", {"xr", "starts", "ends", "axes", "steps"}, {"sl"}), c,
             node("gather", "Gather", {"cat", "rows"}, {"out"})};
  VulkanExecutor ex(*device(), g);
  Tensor x(DType::kFloat32, {2, 3, 4}), y(DType::kFloat32, {2, 6});
  for (size_t k = 0; k < x.f.size(); ++k) x.f[k] = static_cast<float>(k);
  for (size_t k = 0; k < y.f.size(); ++k) y.f[k] = 100.0f + static_cast<float>(k);
  const TensorMap ours = ex.run({{"x", x}, {"y", y}});
  const TensorMap want = ex.cpu().run({{"x", x}, {"y", y}});
  EXPECT_EQ(ours.at("out").shape, (Shape{3, 6}));
  EXPECT_EQ(ours.at("out").f, want.at("out").f);
  EXPECT_EQ(ex.gpuNodes(), 1u);  // four moves composed into the last
  EXPECT_EQ(ex.dispatches(), 1u);
}

// Moves that elementwise nodes read through strides are not run: a Transpose read by an Add, a Split's four
// outputs read by Muls, an Expand between a Clip and a Div (the chain continues through it, evaluating the
// Clip per element of the larger shape), and a Slice that takes a Concat's first part whole (an alias).
// A move read by several moves (a HexPlane's coordinates gathered column by column from one Concat) is
// composed into each of them and not run; a reader that is not a move (here an Add) keeps it stored.
TEST(VulkanExecutor, AMoveReadBySeveralMovesIsComposedIntoEach) {
  REQUIRE_DEVICE();
  for (bool other_reader : {false, true}) {
    Graph g;
    g.path = "gathers.onnx";
    g.opset = 17;
    g.inputs.push_back({"a", DType::kFloat32, {5, 3}, {"", ""}, true});
    g.inputs.push_back({"b", DType::kFloat32, {5, 1}, {"", ""}, true});
    g.initializers["xy"] = int64s({2}, {0, 1});
    g.initializers["zt"] = int64s({2}, {2, 3});
    g.initializers["xt"] = int64s({2}, {0, 3});
    auto node = [](const char* name, const char* op, std::vector<std::string> in,
                   std::vector<std::string> out) {
      Node n;
      n.name = name, n.op_type = op, n.inputs = std::move(in), n.outputs = std::move(out);
      return n;
    };
    Node c = node("c", "Concat", {"a", "b"}, {"cat"});
    Attribute axis;
    axis.kind = Attribute::Kind::kInt, axis.i = 1;
    c.attributes["axis"] = axis;
    g.nodes = {c};
    for (const char* cols : {"xy", "zt", "xt"}) {
      Node gather = node(cols, "Gather", {"cat", cols}, {std::string("g_") + cols});
      gather.attributes["axis"] = axis;
      g.nodes.push_back(gather);
      g.outputs.push_back({std::string("g_") + cols, DType::kFloat32, {5, 2}, {"", ""}, true});
    }
    if (other_reader) {
      g.nodes.push_back(node("twice", "Add", {"cat", "cat"}, {"twice"}));
      g.outputs.push_back({"twice", DType::kFloat32, {5, 4}, {"", ""}, true});
    }
    VulkanExecutor ex(*device(), g);
    Tensor a(DType::kFloat32, {5, 3}), b(DType::kFloat32, {5, 1});
    for (size_t k = 0; k < a.f.size(); ++k) a.f[k] = static_cast<float>(k);
    for (size_t k = 0; k < b.f.size(); ++k) b.f[k] = 100.0f + static_cast<float>(k);
    const TensorMap ours = ex.run({{"a", a}, {"b", b}});
    const TensorMap want = ex.cpu().run({{"a", a}, {"b", b}});
    for (const ValueInfo& out : g.outputs) EXPECT_EQ(ours.at(out.name).f, want.at(out.name).f) << out.name;
    EXPECT_EQ(ex.gpuNodes(), other_reader ? 5u : 3u);  // the Concat runs only for the Add
  }
}

TEST(VulkanExecutor, StridedViewsAliasesAndBroadcastChainsMatchCpu) {
  REQUIRE_DEVICE();
  Graph g;
  g.path = "views.onnx";
  g.opset = 17;
  g.inputs.push_back({"x", DType::kFloat32, {3, 4, 5}, {"", "", ""}, true});
  g.inputs.push_back({"q", DType::kFloat32, {6, 4}, {"", ""}, true});
  g.inputs.push_back({"extra", DType::kFloat32, {2, 4}, {"", ""}, true});
  g.outputs.push_back({"a", DType::kFloat32, {5, 3, 4}, {"", "", ""}, true});
  g.outputs.push_back({"s", DType::kFloat32, {6, 1}, {"", ""}, true});
  g.outputs.push_back({"norm", DType::kFloat32, {6, 4}, {"", ""}, true});
  Tensor bias(DType::kFloat32, {4}), lo(DType::kFloat32, {});
  bias.f = {0.5f, -1.0f, 2.0f, 0.25f};
  lo.f = {1e-3f};
  g.initializers["bias"] = bias;
  g.initializers["lo"] = lo;
  g.initializers["shape"] = int64s({2}, {6, 4});
  g.initializers["starts"] = int64s({1}, {0});
  g.initializers["ends"] = int64s({1}, {6});
  g.initializers["axes"] = int64s({1}, {0});
  auto node = [](const char* name, const char* op, std::vector<std::string> in,
                 std::vector<std::string> out) {
    Node n;
    n.name = name, n.op_type = op, n.inputs = std::move(in), n.outputs = std::move(out);
    return n;
  };
  auto ints = [](std::vector<int64_t> v) {
    Attribute a;
    a.kind = Attribute::Kind::kInts, a.ints = std::move(v);
    return a;
  };
  auto one = [](int64_t v) {
    Attribute a;
    a.kind = Attribute::Kind::kInt, a.i = v;
    return a;
  };
  Node t = node("t", "Transpose", {"x"}, {"xt"});
  t.attributes["perm"] = ints({2, 0, 1});
  Node split = node("split", "Split", {"q"}, {"w", "i", "j", "k"});
  split.attributes["axis"] = one(1);
  Node l2 = node("l2", "ReduceL2", {"q"}, {"len"});
  l2.attributes["axes"] = ints({1});
  l2.attributes["keepdims"] = one(1);
  Node cat = node("cat", "Concat", {"d", "extra"}, {"both"});
  cat.attributes["axis"] = one(0);
  g.nodes = {t,
             node("add", "Add", {"xt", "bias"}, {"a"}),
             split,
             node("wi", "Mul", {"w", "i"}, {"wi"}),
             node("jk", "Mul", {"j", "k"}, {"jk"}),
             node("sub", "Sub", {"wi", "jk"}, {"s"}),
             l2,
             node("clip", "Clip", {"len", "lo"}, {"c"}),
             node("expand", "Expand", {"c", "shape"}, {"e"}),
             node("div", "Div", {"q", "e"}, {"d"}),
             cat,
             node("slice", "Slice", {"both", "starts", "ends", "axes"}, {"norm"})};
  VulkanExecutor ex(*device(), g);
  Tensor x(DType::kFloat32, {3, 4, 5}), q(DType::kFloat32, {6, 4}), extra(DType::kFloat32, {2, 4});
  for (size_t e = 0; e < x.f.size(); ++e) x.f[e] = std::sin(0.7f * static_cast<float>(e));
  for (size_t e = 0; e < q.f.size(); ++e) q.f[e] = std::cos(1.3f * static_cast<float>(e)) * 2.0f;
  q.f[0] = q.f[1] = q.f[2] = q.f[3] = 0;  // a zero row: the clip's lower bound decides
  for (size_t e = 0; e < extra.f.size(); ++e) extra.f[e] = 50.0f + static_cast<float>(e);
  const TensorMap in{{"x", x}, {"q", q}, {"extra", extra}};
  std::vector<NodeTime> times;
  const TensorMap ours = ex.run(in, &times), want = ex.cpu().run(in);
  for (const char* name : {"a", "s", "norm"}) {
    ASSERT_EQ(ours.at(name).shape, want.at(name).shape) << name;
    for (size_t e = 0; e < want.at(name).f.size(); ++e)
      EXPECT_NEAR(ours.at(name).f[e], want.at(name).f[e],
                  1e-6f * std::max(1.0f, std::fabs(want.at(name).f[e])))
          << name << " " << e;
  }
  // Run: the Add, the Mul of j and k, the chain Mul+Sub, the ReduceL2 and the chain Clip+Div; the
  // Transpose, Split, Expand, Concat and Slice are not.
  std::string ops;
  for (const NodeTime& n : times) ops += n.op_type + (n.op_type == "Fused" ? "(" + n.node + ")" : "") + " ";
  EXPECT_EQ(ex.gpuNodes(), 5u) << ops;
  EXPECT_EQ(std::count_if(times.begin(), times.end(), [](const NodeTime& n) { return n.op_type == "Fused"; }),
            2)
      << ops;

  // An Expand read under two names (its output and an Identity of it) by two elementwise nodes: the Clip
  // before it stays stored (no chain takes it in), and both readers see it through the view.
  Graph h = g;
  h.path = "views2.onnx";
  h.inputs = {g.inputs[1]};  // q
  h.outputs = {{"d", DType::kFloat32, {6, 4}, {"", ""}, true},
               {"m", DType::kFloat32, {6, 4}, {"", ""}, true}};
  h.nodes = {l2,
             node("clip", "Clip", {"len", "lo"}, {"c"}),
             node("expand", "Expand", {"c", "shape"}, {"e"}),
             node("id", "Identity", {"e"}, {"e2"}),
             node("div", "Div", {"q", "e"}, {"d"}),
             node("mul", "Mul", {"q", "e2"}, {"m"})};
  VulkanExecutor ex2(*device(), h);
  const TensorMap in2{{"q", q}};
  const TensorMap ours2 = ex2.run(in2), want2 = ex2.cpu().run(in2);
  for (const char* name : {"d", "m"})
    for (size_t e = 0; e < want2.at(name).f.size(); ++e)
      EXPECT_NEAR(ours2.at(name).f[e], want2.at(name).f[e],
                  1e-6f * std::max(1.0f, std::fabs(want2.at(name).f[e])))
          << name << " " << e;
}

// An elementwise chain (float16 values between the steps, broadcast inputs, a value read twice) runs as
// one fused dispatch where it may, rounding each step as the unfused nodes do.
TEST(VulkanExecutor, FusedChainsMatchCpu) {
  REQUIRE_DEVICE();
  Graph g;
  g.path = "chain.onnx";
  g.opset = 17;
  g.inputs.push_back({"x", DType::kFloat16, {4, 5}, {"", ""}, true});
  g.outputs.push_back({"out", DType::kFloat16, {4, 5}, {"", ""}, true});
  g.outputs.push_back({"side", DType::kFloat16, {4, 5}, {"", ""}, true});
  Tensor w(DType::kFloat16, {5}), b(DType::kFloat16, {4, 1}), lo(DType::kFloat16, {}),
      hi(DType::kFloat16, {});
  for (size_t k = 0; k < 5; ++k)
    w.f[k] = roundToFloatType(0.3 * static_cast<double>(k) - 0.7, DType::kFloat16);
  for (size_t k = 0; k < 4; ++k) b.f[k] = roundToFloatType(0.1 * static_cast<double>(k), DType::kFloat16);
  lo.f = {-0.25f};
  hi.f = {0.5f};
  g.initializers["w"] = w;
  g.initializers["b"] = b;
  g.initializers["lo"] = lo;
  g.initializers["hi"] = hi;
  using optest::node;
  Node leaky = node("leaky", "LeakyRelu", {"s"}, "l");
  Attribute alpha;
  alpha.kind = Attribute::Kind::kFloat, alpha.f = 0.2f;
  leaky.attributes["alpha"] = alpha;
  // mul -> add -> sigmoid -> leaky -> clip -> out is one chain; "side" (x * x) is an output and read twice
  // by "sq": both run alone (a chain joins one chain of its inputs).
  g.nodes = {node("mul", "Mul", {"x", "w"}, "m"),          node("add", "Add", {"m", "b"}, "a"),
             node("sig", "Sigmoid", {"a"}, "s"),           leaky,
             node("clip", "Clip", {"l", "lo", "hi"}, "c"), node("side", "Mul", {"x", "x"}, "side"),
             node("sq", "Mul", {"side", "side"}, "q"),     node("out", "Sub", {"c", "q"}, "out")};
  VulkanExecutor ex(*device(), g);
  Tensor x(DType::kFloat16, {4, 5});
  for (size_t k = 0; k < x.f.size(); ++k)
    x.f[k] = roundToFloatType(std::sin(static_cast<double>(k)) * 3.0, DType::kFloat16);
  std::vector<NodeTime> times;
  const TensorMap ours = ex.run({{"x", x}}, &times);
  const TensorMap want = ex.cpu().run({{"x", x}});
  for (const char* name : {"out", "side"}) EXPECT_EQ(ours.at(name).f, want.at(name).f) << name;
  EXPECT_EQ(ex.gpuNodes(), 3u);
  ASSERT_EQ(times.size(), 3u);
  EXPECT_EQ(std::count_if(times.begin(), times.end(), [](const NodeTime& t) { return t.op_type == "Fused"; }),
            1);
}

// A chain reads up to 8 external inputs (broadcast ones among them): the product of 8 values is one fused
// dispatch, that of 9 two (the ninth factor's multiply runs alone), both equal to the CPU reference.
TEST(VulkanExecutor, FusedChainsReadEightInputs) {
  REQUIRE_DEVICE();
  auto named = [](char c, size_t k) {  // (appending, not operator+: GCC 12 warns falsely on the latter)
    std::string s(1, c);
    s += std::to_string(k);
    return s;
  };
  for (size_t factors : {8u, 9u}) {
    Graph g;
    g.path = "product.onnx";
    g.opset = 17;
    g.outputs.push_back({named('p', factors - 1), DType::kFloat32, {4, 5}, {"", ""}, true});
    TensorMap feeds;
    for (size_t k = 0; k < factors; ++k) {
      const Shape shape = k % 3 == 1 ? Shape{5} : k % 3 == 2 ? Shape{4, 1} : Shape{4, 5};
      const std::string name = named('x', k);
      g.inputs.push_back({name, DType::kFloat32, shape, std::vector<std::string>(shape.size()), true});
      Tensor t(DType::kFloat32, shape);
      for (size_t i = 0; i < t.f.size(); ++i)
        t.f[i] = static_cast<float>(0.9 + 0.05 * std::sin(static_cast<double>(7 * k + i)));
      feeds[name] = t;
      if (k == 0) continue;
      Node n;
      n.name = named('m', k), n.op_type = "Mul";
      n.inputs = {named(k == 1 ? 'x' : 'p', k - 1), name};
      n.outputs = {named('p', k)};
      g.nodes.push_back(n);
    }
    VulkanExecutor ex(*device(), g);
    std::vector<NodeTime> times;
    const TensorMap ours = ex.run(feeds, &times);
    const std::string out = named('p', factors - 1);
    EXPECT_EQ(ours.at(out).f, ex.cpu().run(feeds).at(out).f) << factors << " factors";
    EXPECT_EQ(ex.gpuNodes(), factors == 8 ? 1u : 2u) << factors << " factors";
  }
}

// Float to integer casts saturate to the target's range (NaN gives 0), as the CPU kernel; a narrow product
// with more than 256 outputs per row takes the per-output path (staging B would give a pass no rows).
TEST(VulkanExecutor, CastsSaturateAndWideNarrowProductsRun) {
  REQUIRE_DEVICE();
  for (DType to : {DType::kUInt8, DType::kInt8, DType::kInt16, DType::kInt32}) {
    Graph g;
    g.path = "cast.onnx";
    g.opset = 17;
    g.inputs.push_back({"x", DType::kFloat32, {7}, {""}, true});
    g.outputs.push_back({"y", to, {7}, {""}, true});
    Node n;
    n.name = "cast", n.op_type = "Cast", n.inputs = {"x"}, n.outputs = {"y"};
    Attribute a;
    a.kind = Attribute::Kind::kInt, a.i = static_cast<int64_t>(to);
    n.attributes["to"] = a;
    g.nodes = {n};
    VulkanExecutor ex(*device(), g);
    Tensor x(DType::kFloat32, {7});
    x.f = {300.0f, -1.0f, 2.9f, -130.0f, 3e9f, -3e9f, std::nanf("")};
    EXPECT_EQ(ex.run({{"x", x}}).at("y").i, ex.cpu().run({{"x", x}}).at("y").i) << dtypeName(to);
  }
  Graph g;
  g.path = "wide.onnx";
  g.opset = 17;
  g.inputs.push_back({"a", DType::kFloat32, {1, 8}, {"", ""}, true});
  g.outputs.push_back({"y", DType::kFloat32, {1, 512}, {"", ""}, true});
  Tensor b(DType::kFloat32, {8, 512});
  for (size_t k = 0; k < b.f.size(); ++k) b.f[k] = static_cast<float>(k % 13) * 0.25f - 1.0f;
  g.initializers["b"] = b;
  Node mm;
  mm.name = "mm", mm.op_type = "MatMul", mm.inputs = {"a", "b"}, mm.outputs = {"y"};
  g.nodes = {mm};
  VulkanExecutor ex(*device(), g);
  Tensor a(DType::kFloat32, {1, 8});
  a.f = {1, -2, 3, 0.5f, 0.25f, -1, 2, 4};
  EXPECT_EQ(ex.run({{"a", a}}).at("y").f, ex.cpu().run({{"a", a}}).at("y").f);
}

// Products of MLP layers' shapes (tiled, and one invocation per output for a side under 16) against the
// product summed in double here: widths that fill and that leave part of a column group, depths across and
// within 16-deep slices, a row count that leaves the last workgroup part full, transposed operands, a
// broadcast bias with alpha and beta, a fused activation's input, and a batched MatMul whose batches share B.
TEST(VulkanExecutor, NarrowProductsMatchDoubleSums) {
  REQUIRE_DEVICE();
  struct Shape3 {
    int64_t batch, m, k, n;
    bool gemm, trans_a, trans_b;
  };
  const std::vector<Shape3> shapes = {
      {1, 300, 32, 32, true, false, true},  {1, 1000, 20, 70, true, false, true},
      {1, 77, 17, 3, true, false, false},   {1, 129, 40, 1, true, true, false},
      {1, 64, 100, 40, true, false, true},  {1, 40, 1, 128, true, false, false},
      {3, 37, 20, 33, false, false, false}, {1, 513, 32, 48, false, false, false}};
  uint32_t seed = 7;
  auto next = [&] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<float>(seed >> 8) / 8388608.0f - 1.0f;
  };
  for (const Shape3& s : shapes) {
    const std::string what = (s.gemm ? "Gemm " : "MatMul ") + std::to_string(s.batch) + "x" +
                             std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
    Graph g;
    g.path = "rows.onnx";
    g.opset = 17;
    const Shape a_shape = s.gemm ? (s.trans_a ? Shape{s.k, s.m} : Shape{s.m, s.k}) : Shape{s.batch, s.m, s.k};
    const Shape b_shape = s.trans_b ? Shape{s.n, s.k} : Shape{s.k, s.n};
    const Shape y_shape = s.gemm ? Shape{s.m, s.n} : Shape{s.batch, s.m, s.n};
    g.inputs.push_back({"a", DType::kFloat32, a_shape, std::vector<std::string>(a_shape.size()), true});
    g.outputs.push_back({"y", DType::kFloat32, y_shape, std::vector<std::string>(y_shape.size()), true});
    Tensor b(DType::kFloat32, b_shape), c(DType::kFloat32, {s.n});
    for (float& v : b.f) v = next();
    for (float& v : c.f) v = next();
    g.initializers["b"] = b;
    Node mm;
    mm.name = "mm", mm.op_type = s.gemm ? "Gemm" : "MatMul", mm.inputs = {"a", "b"}, mm.outputs = {"p"};
    const float alpha = 0.75f, beta = 1.5f;
    if (s.gemm) {
      g.initializers["c"] = c;
      mm.inputs.push_back("c");
      Attribute f, t;
      f.kind = Attribute::Kind::kFloat, t.kind = Attribute::Kind::kInt;
      f.f = alpha, mm.attributes["alpha"] = f;
      f.f = beta, mm.attributes["beta"] = f;
      t.i = s.trans_a, mm.attributes["transA"] = t;
      t.i = s.trans_b, mm.attributes["transB"] = t;
    }
    Node relu;
    relu.name = "relu", relu.op_type = "Relu", relu.inputs = {"p"}, relu.outputs = {"y"};
    g.nodes = {mm, relu};
    Tensor a(DType::kFloat32, a_shape);
    for (float& v : a.f) v = next();
    Tensor want(DType::kFloat32, y_shape);
    for (int64_t q = 0; q < s.batch; ++q)
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < s.k; ++k) {
            const double av = s.trans_a ? a.f[k * s.m + i] : a.f[(q * s.m + i) * s.k + k];
            const double bv = s.trans_b ? b.f[j * s.k + k] : b.f[k * s.n + j];
            acc += av * bv;
          }
          const double v = s.gemm ? alpha * acc + beta * c.f[j] : acc;
          want.f[(q * s.m + i) * s.n + j] = static_cast<float>(std::max(v, 0.0));
        }
    VulkanExecutor ex(*device(), g);
    EXPECT_LE(worstRatio(ex.run({{"a", a}}).at("y"), want, 1e-5, 1e-5), 1.0) << what;
  }
}

// Before opset 11 Clip's bounds are attributes: such a Clip is not fused into a chain (whose operands are
// tensors) and still clamps.
TEST(VulkanExecutor, AttributeClipStaysOutOfChains) {
  REQUIRE_DEVICE();
  Graph g;
  g.path = "clip10.onnx";
  g.opset = 10;
  g.inputs.push_back({"x", DType::kFloat32, {8}, {""}, true});
  g.outputs.push_back({"y", DType::kFloat32, {8}, {""}, true});
  Node neg;
  neg.name = "neg", neg.op_type = "Neg", neg.inputs = {"x"}, neg.outputs = {"n"};
  Node clip;
  clip.name = "clip", clip.op_type = "Clip", clip.inputs = {"n"}, clip.outputs = {"y"};
  Attribute lo, hi;
  lo.kind = hi.kind = Attribute::Kind::kFloat;
  lo.f = -0.5f, hi.f = 0.25f;
  clip.attributes["min"] = lo;
  clip.attributes["max"] = hi;
  g.nodes = {neg, clip};
  VulkanExecutor ex(*device(), g);
  Tensor x(DType::kFloat32, {8});
  x.f = {-2, -1, -0.3f, 0, 0.1f, 0.4f, 1, 3};
  const TensorMap ours = ex.run({{"x", x}});
  EXPECT_EQ(ours.at("y").f, ex.cpu().run({{"x", x}}).at("y").f);
  EXPECT_EQ(ours.at("y").f, (std::vector<float>{0.25f, 0.25f, 0.25f, 0, -0.1f, -0.4f, -0.5f, -0.5f}));
}

// The in-frame path: the executor recorded into the renderer's frame and its outputs decoded on the GPU into
// the object's slots give the frame the CPU-decoded gaussians give (rows past num_points left out; SH and RGB
// colours; the object's transform applied by the frame as for any object).
TEST(VulkanGeneratorPath, DecodesIntoTheFrameLikeTheCpu) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  VulkanRenderer renderer(gpu::ContextOptions{});
  Camera cam;
  cam.width = 160, cam.height = 120, cam.fx = cam.fy = 150, cam.cx = 80, cam.cy = 60;
  cam.world_to_camera = Mat4::fromLinearTranslation(Mat3{}, {0, 0, 3.2f});
  const Mat4 to_world = Mat4::fromLinearTranslation(Mat3{}, {0.15f, -0.05f, 0});
  for (const char* model : {"gaussians4d.onnx", "anchors.onnx"}) {
    SCOPED_TRACE(model);
    GaussianGenerator gen(modelPath(model));
    VulkanGeneratorPath path(renderer.context(), gen);
    const GpuSplatSource& source = path.prepare(gen.frameInputs(0.35, cam));
    GaussianCloud slots;
    slots.resize(path.capacity(), path.shDegree());
    RenderObject ours{&slots, to_world};
    ours.gpu_source = &source;
    const ImageRGBA gpu_frame = renderer.render({&ours, 1}, cam, RenderSettings{});

    const GeneratedGaussians cpu = gen.generate(0.35, cam);
    EXPECT_LT(cpu.cloud.size(), path.capacity() + 1);
    RenderObject ref{&cpu.cloud, to_world, cpu.cloud.positions, cpu.covariances};
    ref.dynamic = true;
    const ImageRGBA cpu_frame = renderer.render({&ref, 1}, cam, RenderSettings{});
    const double psnr = compareImages(gpu_frame, cpu_frame).psnr;
    double coverage = 0;
    for (size_t p = 3; p < cpu_frame.pixels.size(); p += 4) coverage += cpu_frame.pixels[p];
    std::printf(
        "%s: in-frame GPU path vs CPU-decoded gaussians, %zu of %zu rows live: %.1f dB (mean alpha %.3f)\n",
        model, cpu.cloud.size(), path.capacity(), psnr,
        coverage / static_cast<double>(cpu_frame.pixels.size() / 4));
    EXPECT_GE(psnr, 60.0);
    EXPECT_GT(coverage, 0.0);
    const std::string e = test::errorOf([&] { renderCpu({&ours, 1}, cam, RenderSettings{}); });
    EXPECT_NE(e.find("written on the GPU; render it with the Vulkan backend"), std::string::npos) << e;
  }
}

// The CLI: a generator scene and its post model rendered on the Vulkan backend run on the Vulkan executor
// (the generator inside the frame) and give the CPU backend's frame; `onnx run --backend vulkan` gives the
// CPU's outputs; `animate` moves.
TEST(VulkanExecutorCli, GeneratorScenesRunOnTheGpu) {
  REQUIRE_DEVICE();
  const std::string dir = test::tempDir("VulkanExecutorCli");
  for (const char* f : {"gaussians4d.onnx", "unet.onnx"})
    std::filesystem::copy_file(modelPath(f), dir + "/" + f,
                               std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir + "/post.json")
      << R"({"objects": [{"generator": "gaussians4d.onnx", "time": 0.35}], "post": "unet.onnx",
      "camera": {"eye": [0, 0, -3], "target": [0, 0, 0], "up": [0, -1, 0], "fov_y_deg": 45, "width": 64, "height": 48}})";
  std::string out;
  ASSERT_EQ(test::runCli("render " + dir + "/post.json -o " + dir +
                             "/gpu.png --backend vulkan --save-float " + dir + "/gpu.npy",
                         &out),
            0)
      << out;
  // The generator runs inside the frame (decoded into its slots on the GPU), the post model after it.
  EXPECT_NE(out.find("scene posed with generators (Vulkan executor, in the frame)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("generators "), std::string::npos) << out;
  EXPECT_NE(out.find("post unet.onnx (Vulkan executor, in the frame)"), std::string::npos) << out;
  ASSERT_EQ(test::runCli("render " + dir + "/post.json -o " + dir + "/cpu.png --backend cpu --save-float " +
                             dir + "/cpu.npy",
                         &out),
            0)
      << out;
  const double psnr = compareImages(readNpy(dir + "/gpu.npy"), readNpy(dir + "/cpu.npy")).psnr;
  std::printf("generator + post frame, Vulkan vs CPU backends: %.1f dB\n", psnr);
  EXPECT_GE(psnr, 45.0);

  ASSERT_EQ(
      test::runCli("onnx run " + dir + "/gaussians4d.onnx --time 0.35 --backend vulkan --repeat 2 -o " + dir,
                   &out),
      0)
      << out;
  EXPECT_NE(out.find("Vulkan ("), std::string::npos) << out;
  EXPECT_NE(out.find("(median of 2)"), std::string::npos) << out;
  ASSERT_EQ(test::runCli("onnx run " + dir +
                             "/gaussians4d.onnx --time 0.35 --backend vulkan --repeat 3 --back-to-back",
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("back to back: GPU "), std::string::npos) << out;
  EXPECT_NE(out.find("(median of 3 runs in one submission)"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("onnx run " + dir + "/gaussians4d.onnx --backend cpu --back-to-back", &out), 2)
      << out;  // contradicting options: a usage error
  EXPECT_NE(out.find("--back-to-back times the Vulkan executor"), std::string::npos) << out;
  ASSERT_EQ(test::runCli("onnx run " + dir + "/gaussians4d.onnx --time 0.35 --backend vulkan --json", &out),
            0)
      << out;
  EXPECT_NE(out.find("\"backend\":\"vulkan\""), std::string::npos) << out;
  ASSERT_EQ(test::runCli("onnx info " + dir + "/gaussians4d.onnx", &out), 0) << out;
  EXPECT_NE(out.find("CPU executor, Vulkan executor"), std::string::npos) << out;
  EXPECT_EQ(out.find("NOT SUPPORTED"), std::string::npos) << out;

  ASSERT_EQ(
      test::runCli("animate " + dir +
                       "/gaussians4d.onnx --fps 2 --duration 1 --width 64 --height 48 --backend vulkan -o " +
                       dir + "/f%02d.png",
                   &out),
      0)
      << out;
  EXPECT_LT(compareImages(readPng(dir + "/f00.png"), readPng(dir + "/f01.png")).psnr, 35.0);

  // bench runs the generator every frame, in the frame: its time reported apart; the 548 padding rows past
  // num_points are not drawn (1,500 visible of 2,048 slots).
  ASSERT_EQ(test::runCli("bench " + dir +
                             "/gaussians4d.onnx --backend vulkan --frames 2 --width 64 --height 48 --json",
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("\"generators_ms\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"gaussians\": 2048"), std::string::npos) << out;
  EXPECT_NE(out.find("\"visible\": 1500"), std::string::npos) << out;
}

// The 4DGS-style model animated to MP4 (ffmpeg encodes; ffprobe, decoding the file, is the oracle for what
// was written: H.264, the frame size, one frame per step of the timeline).
TEST(VulkanExecutorCli, AnimatesToMp4) {
  REQUIRE_DEVICE();
  if (std::system("ffprobe -version > /dev/null 2>&1") != 0)
    SF_SKIP_OR_FAIL("ffmpeg/ffprobe not installed (Debian: ffmpeg)");
  const std::string dir = test::tempDir("VulkanExecutorMp4");
  std::filesystem::copy_file(modelPath("gaussians4d.onnx"), dir + "/knot.onnx",
                             std::filesystem::copy_options::overwrite_existing);
  std::string out;
  ASSERT_EQ(test::runCli("animate " + dir +
                             "/knot.onnx --fps 8 --duration 1 --width 96 --height 64 --backend vulkan -o " +
                             dir + "/knot.mp4",
                         &out),
            0)
      << out;
  const std::string probe = dir + "/probe.txt";
  ASSERT_EQ(std::system(("ffprobe -v error -select_streams v:0 -count_frames -show_entries "
                         "stream=codec_name,width,height,nb_read_frames "
                         "-of default=noprint_wrappers=1 " +
                         dir + "/knot.mp4 > " + probe)
                            .c_str()),
            0);
  std::ifstream in(probe);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("codec_name=h264"), std::string::npos) << text;
  EXPECT_NE(text.find("width=96"), std::string::npos) << text;
  EXPECT_NE(text.find("height=64"), std::string::npos) << text;
  EXPECT_NE(text.find("nb_read_frames=8"), std::string::npos) << text;
}

}  // namespace
}  // namespace sf::nn
