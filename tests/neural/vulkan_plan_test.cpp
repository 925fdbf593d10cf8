// The Vulkan executor's planning passes (src/neural/vulkan_plan.h), each on a graph of a few nodes, against
// what the pass's definition says it must find, worked out by hand. No device: planning runs on the CPU.
#include "neural/vulkan_plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "op_test_helpers.h"

namespace sf::nn::vulkan {
namespace {

using optest::floats;
using optest::ints;
using optest::node;

ValueInfo input(const char* name, Shape shape, DType type = DType::kFloat32) {
  ValueInfo v;
  v.name = name, v.dtype = type, v.shape = shape, v.has_shape = true;
  v.dim_names.assign(shape.size(), "");
  return v;
}

Graph graph(std::vector<ValueInfo> inputs, const std::vector<std::string>& outputs, std::vector<Node> nodes) {
  Graph g;
  g.path = "plan.onnx";
  g.opset = 17;
  g.inputs = std::move(inputs);
  for (const std::string& name : outputs) {
    ValueInfo v;
    v.name = name;
    g.outputs.push_back(v);
  }
  g.nodes = std::move(nodes);
  return g;
}

Node withInts(Node n, const char* attribute, std::vector<int64_t> values) {
  n.attributes[attribute] = optest::intsAttr(std::move(values));
  return n;
}

std::vector<std::string> names(const std::vector<const Node*>& nodes) {
  std::vector<std::string> out;
  for (const Node* n : nodes) out.push_back(n->name);
  return out;
}

uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

// The passes in buildPlanOnce's order.
enum class Pass {
  kFold,
  kLink,
  kEpilogues,
  kAliases,
  kCompose,
  kViews,
  kDead,
  kFuse,
  kReads,
  kWaves,
  kLastUses,
  kAllocate,
  kFinish
};

// A graph, its inputs and the plan in progress, the passes run one after another up to the one under test.
struct Passes {
  Passes(Graph g, TensorMap in) : cpu(std::move(g)), inputs(std::move(in)), st(cpu.graph(), plan) {}
  CpuExecutor cpu;
  TensorMap inputs;
  Plan plan;
  PlanState st;

  // Runs the passes not run yet, up to and including `last`.
  void through(Pass last) {
    for (; next <= last; next = static_cast<Pass>(static_cast<int>(next) + 1)) {
      switch (next) {
        case Pass::kFold:
          foldStatics(cpu, inputs, st);
          break;
        case Pass::kLink:
          linkValues(st);
          break;
        case Pass::kEpilogues:
          fuseEpilogues(st);
          break;
        case Pass::kAliases:
          findAliases(st);
          break;
        case Pass::kCompose:
          composeMoves(st);
          break;
        case Pass::kViews:
          findViews(st);
          break;
        case Pass::kDead:
          dropDeadNodes(st);
          break;
        case Pass::kFuse:
          fuseChains(st);
          break;
        case Pass::kReads:
          findStoredReads(st);
          break;
        case Pass::kWaves:
          st.waves = assignWaves(st.gpu_nodes, st.node_reads);
          break;
        case Pass::kLastUses:
          st.last_use = lastUses(st.node_reads, st.waves.of);
          break;
        case Pass::kAllocate:
          allocate(st);
          break;
        case Pass::kFinish:
          finishPlan(st);
          break;
      }
    }
  }
  Pass next = Pass::kFold;
};

// Folding: values computed from constants and shapes alone are static. The Constant is folded by the CPU
// executor already (an initializer); the Reshape of it by the Shape of the input is the plan's to fold, and
// the GPU reads it as a constant of the plan.
TEST(VulkanPlan, ConstantReshapedByAnInputsShapeIsFolded) {
  Node constant = node("const", "Constant", {}, "c");
  constant.attributes["value"].kind = Attribute::Kind::kTensor;
  constant.attributes["value"].t = floats({4}, {1, 2, 3, 4});
  Passes p(graph({input("x", {2, 2})}, {"y"},
                 {constant, node("shape", "Shape", {"x"}, "s"), node("reshape", "Reshape", {"c", "s"}, "cr"),
                  node("add", "Add", {"x", "cr"}, "y")}),
           {{"x", floats({2, 2}, {5, 6, 7, 8})}});
  p.through(Pass::kFold);
  EXPECT_EQ(p.st.static_names, (std::set<std::string>{"c", "cr", "s"}));
  ASSERT_TRUE(p.plan.statics.count("cr"));
  EXPECT_EQ(p.plan.statics.at("cr").shape, (Shape{2, 2}));
  EXPECT_EQ(p.plan.statics.at("cr").f, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(p.plan.statics.at("s").i, (std::vector<int64_t>{2, 2}));
  EXPECT_FALSE(p.plan.statics.count("y"));
  EXPECT_EQ(p.st.info.at("y").second, (Shape{2, 2}));

  p.through(Pass::kAliases);
  EXPECT_EQ(names(p.st.gpu_nodes), (std::vector<std::string>{"add"}));  // Shape and Reshape are static

  p.through(Pass::kFinish);
  ASSERT_TRUE(p.plan.slots.count("cr"));
  EXPECT_TRUE(p.plan.slots.at("cr").is_static);
  EXPECT_FALSE(p.plan.slots.count("s"));  // no GPU node reads it
  EXPECT_FALSE(p.plan.slots.count("c"));
  std::vector<uint32_t> words;
  for (const auto& [at, w] : p.plan.constants)
    if (at == p.plan.slots.at("cr").offset) words = w;
  EXPECT_EQ(words, (std::vector<uint32_t>{bits(1), bits(2), bits(3), bits(4)}));
}

// Aliases: an activation whose input is a matrix product read by nothing else goes into the product's
// epilogue and shares its storage, as does a Reshape of it; a product that is also an output keeps its
// activation.
TEST(VulkanPlan, EpilogueActivationsAndReshapesAliasTheProduct) {
  Graph g = graph({input("x", {2, 3})}, {"y", "p", "q"},
                  {node("mm", "MatMul", {"x", "w"}, "m"), node("relu", "Relu", {"m"}, "a"),
                   node("reshape", "Reshape", {"a", "shp"}, "b"), node("sigmoid", "Sigmoid", {"b"}, "y"),
                   node("mm2", "MatMul", {"x", "w"}, "p"), node("tanh", "Tanh", {"p"}, "q")});
  g.initializers["w"] = floats({3, 4}, std::vector<float>(12, 0.5f));
  g.initializers["shp"] = ints({2}, {4, 2});
  Passes p(g, {{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}});
  p.through(Pass::kEpilogues);
  EXPECT_EQ(p.st.low.acts_, (std::map<std::string, uint32_t>{{"m", 1}}));  // 1: relu
  ASSERT_EQ(p.st.epilogues.size(), 1u);
  EXPECT_EQ((*p.st.epilogues.begin())->name, "relu");

  p.through(Pass::kAliases);
  EXPECT_EQ(p.st.root, (std::map<std::string, std::string>{{"a", "m"}, {"b", "m"}}));
  EXPECT_EQ(names(p.st.gpu_nodes), (std::vector<std::string>{"mm", "sigmoid", "mm2", "tanh"}));

  p.through(Pass::kFinish);
  EXPECT_EQ(p.plan.slots.at("a").offset, p.plan.slots.at("m").offset);
  EXPECT_EQ(p.plan.slots.at("b").offset, p.plan.slots.at("m").offset);
  EXPECT_EQ(p.plan.slots.at("b").shape, (Shape{4, 2}));
}

// Composed moves: a Transpose read only by a Slice is not run; the Slice copies from the Transpose's input
// through the composed map. s[i][j] = t[i][j] = x[j][i] for i, j < 2; x's element (j, i) is j * 3 + i.
TEST(VulkanPlan, TransposeReadOnlyByASliceIsComposedIntoIt) {
  Graph g = graph({input("x", {2, 3})}, {"s"},
                  {withInts(node("transpose", "Transpose", {"x"}, "t"), "perm", {1, 0}),
                   node("slice", "Slice", {"t", "starts", "ends", "axes"}, "s")});
  g.initializers["starts"] = ints({1}, {0});
  g.initializers["ends"] = ints({1}, {2});
  g.initializers["axes"] = ints({1}, {0});
  Passes p(g, {{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}});
  p.through(Pass::kCompose);
  ASSERT_EQ(p.st.low.absorbed_.size(), 1u);
  EXPECT_EQ(p.st.low.absorbed_.at("t")->name, "transpose");
  EXPECT_EQ(names(p.st.gpu_nodes), (std::vector<std::string>{"slice"}));
  const Lowering::Sources* map = p.st.low.composedMap(*p.st.gpu_nodes[0], 0, p.st.info);
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(map->sources, (std::vector<std::string>{"x"}));
  EXPECT_EQ(map->entries, (std::vector<int64_t>{1 + 0, 1 + 3, 1 + 1, 1 + 4}));  // 1 + index into x

  p.through(Pass::kReads);
  EXPECT_EQ(names(p.st.gpu_nodes), (std::vector<std::string>{"slice"}));  // an output: no view
  EXPECT_EQ(p.st.node_reads, (std::vector<std::vector<std::string>>{{"x", "starts", "ends", "axes"}}));

  p.through(Pass::kFinish);
  ASSERT_EQ(p.plan.dispatches.size(), 1u);
  EXPECT_EQ(p.plan.dispatches[0].kernel, Kernel::kMap);
  EXPECT_EQ(p.plan.dispatches[0].count, 4u);
}

// Views: moves read only by elementwise nodes become strided views of their source (x is 2 x 3, row-major
// strides 3, 1): its transpose (3 x 2) steps 1 then 3 from element 0; its second row (1 x 3) starts at
// element 3 and steps 1. A slice of all of it is an alias of x.
TEST(VulkanPlan, MovesReadByElementwiseNodesBecomeViews) {
  Graph g = graph(
      {input("x", {2, 3}), input("b", {3, 2})}, {"y", "z", "w"},
      {withInts(node("transpose", "Transpose", {"x"}, "t"), "perm", {1, 0}),
       node("add", "Add", {"t", "b"}, "y"), node("row_slice", "Slice", {"x", "one", "two", "axes"}, "row"),
       node("neg", "Neg", {"row"}, "z"), node("whole_slice", "Slice", {"x", "zero", "two", "axes"}, "whole"),
       node("sqrt", "Sqrt", {"whole"}, "w")});
  g.initializers["zero"] = ints({1}, {0});
  g.initializers["one"] = ints({1}, {1});
  g.initializers["two"] = ints({1}, {2});
  g.initializers["axes"] = ints({1}, {0});
  Passes p(g, {{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", floats({3, 2}, {1, 1, 1, 1, 1, 1})}});
  p.through(Pass::kViews);
  ASSERT_EQ(p.st.low.views_.size(), 2u);
  const Lowering::View& t = p.st.low.views_.at("t");
  EXPECT_EQ(t.source, "x");
  EXPECT_EQ(t.shape, (Shape{3, 2}));
  EXPECT_EQ(t.base, 0);
  EXPECT_EQ(t.strides, (std::vector<int64_t>{1, 3}));
  const Lowering::View& row = p.st.low.views_.at("row");
  EXPECT_EQ(row.source, "x");
  EXPECT_EQ(row.shape, (Shape{1, 3}));
  EXPECT_EQ(row.base, 3);
  EXPECT_EQ(row.strides, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p.st.rootOf("whole"), "x");
  EXPECT_FALSE(p.st.low.views_.count("whole"));
  EXPECT_EQ(names(p.st.gpu_nodes), (std::vector<std::string>{"add", "neg", "sqrt"}));

  p.through(Pass::kReads);
  EXPECT_EQ(p.st.node_reads, (std::vector<std::vector<std::string>>{{"x", "b"}, {"x"}, {"x"}}));
}

// Dead nodes: a node whose output nothing reads is dropped, and then the node only it read.
TEST(VulkanPlan, NodesWhoseOutputsNobodyReadsAreDropped) {
  Passes p(graph({input("x", {4})}, {"y"},
                 {node("relu", "Relu", {"x"}, "y"), node("sigmoid", "Sigmoid", {"x"}, "unused"),
                  node("exp", "Exp", {"x"}, "e"), node("log", "Log", {"e"}, "l")}),
           {{"x", floats({4}, {1, 2, 3, 4})}});
  p.through(Pass::kViews);
  EXPECT_EQ(names(p.st.gpu_nodes), (std::vector<std::string>{"relu", "sigmoid", "exp", "log"}));
  p.through(Pass::kDead);
  EXPECT_EQ(names(p.st.gpu_nodes), (std::vector<std::string>{"relu"}));
}

// Fusion: a chain of elementwise float nodes, each input of the next read by it alone, becomes one node (the
// chain's last); a value with two readers ends a chain. The fused node reads the chain's external inputs.
TEST(VulkanPlan, ElementwiseChainsFuseUpToAValueReadTwice) {
  const Tensor ones = floats({2, 3}, std::vector<float>(6, 1.0f));
  Passes p(graph({input("x", {2, 3}), input("y", {2, 3}), input("z", {2, 3})}, {"s", "n1", "n2"},
                 {node("add", "Add", {"x", "y"}, "a"), node("mul", "Mul", {"a", "z"}, "m"),
                  node("sigmoid", "Sigmoid", {"m"}, "s"), node("exp", "Exp", {"x"}, "e"),
                  node("neg", "Neg", {"e"}, "n1"), node("abs", "Abs", {"e"}, "n2")}),
           {{"x", ones}, {"y", ones}, {"z", ones}});
  p.through(Pass::kFuse);
  ASSERT_EQ(p.st.low.chains_.size(), 1u);
  const auto& [tip, chain] = *p.st.low.chains_.begin();
  EXPECT_EQ(tip->name, "sigmoid");
  EXPECT_EQ(names(chain), (std::vector<std::string>{"add", "mul", "sigmoid"}));
  EXPECT_EQ(names(p.st.gpu_nodes), (std::vector<std::string>{"sigmoid", "exp", "neg", "abs"}));

  p.through(Pass::kReads);
  EXPECT_EQ(p.st.node_reads[0], (std::vector<std::string>{"x", "y", "z"}));

  p.through(Pass::kFinish);
  ASSERT_EQ(p.plan.nodes.size(), 4u);
  EXPECT_EQ(p.plan.nodes[0].op_type, "Fused");
  EXPECT_EQ(p.plan.nodes[0].name, "sigmoid (Add+Mul+Sigmoid)");
  EXPECT_EQ(p.plan.waves, 2u);  // the chain and exp, then neg and abs (they read exp's output)
}

// Waves: a node runs one wave after the latest producer of what it reads. Liveness: the last wave reading
// each value.
TEST(VulkanPlan, WavesFollowTheLatestProducerAndLivenessTheLastReader) {
  const std::vector<Node> nodes{node("a", "Relu", {"x"}, "a"), node("b", "Relu", {"x"}, "b"),
                                node("c", "Add", {"a", "b"}, "c"), node("d", "Neg", {"c"}, "d"),
                                node("e", "Exp", {"a"}, "e")};
  std::vector<const Node*> list;
  for (const Node& n : nodes) list.push_back(&n);
  const std::vector<std::vector<std::string>> reads{{"x"}, {"x"}, {"a", "b"}, {"c"}, {"a"}};
  const Waves waves = assignWaves(list, reads);
  EXPECT_EQ(waves.of, (std::vector<size_t>{0, 0, 1, 2, 1}));
  EXPECT_EQ(waves.count, 3u);
  EXPECT_EQ(waves.order, (std::vector<size_t>{0, 1, 2, 4, 3}));
  EXPECT_EQ(lastUses(reads, waves.of),
            (std::map<std::string, size_t>{{"x", 0}, {"a", 1}, {"b", 1}, {"c", 2}}));
}

// The allocator: first fit in 64-word (256-byte) units, fresh space at the end, freed neighbours merged.
TEST(VulkanPlan, AllocatorTakesTheFirstFitAndMergesFreedRanges) {
  Allocator a;
  EXPECT_EQ(a.take(10), 0u);
  EXPECT_EQ(a.take(64), 64u);
  EXPECT_EQ(a.take(100), 128u);
  EXPECT_EQ(a.high, 256u);
  a.give(0, 10);
  a.give(64, 64);
  EXPECT_EQ(a.free, (std::map<uint64_t, uint64_t>{{0, 128}}));
  EXPECT_EQ(a.take(128), 0u);
  EXPECT_EQ(a.take(1), 256u);  // nothing free
  EXPECT_EQ(a.high, 320u);
  a.give(128, 100);
  a.give(0, 128);  // merges with the range after it
  a.give(256, 1);  // and with the one before it
  EXPECT_EQ(a.free, (std::map<uint64_t, uint64_t>{{0, 320}}));
  EXPECT_EQ(a.bump(1), 320u);
}

// Allocation: four Softmaxes in a row (64 floats each, one wave each). A value lives from the wave that
// writes it to the last wave that reads it: s1 0-1, s2 1-2, s3 2-3, s4 to the end (an output). Values whose
// lifetimes do not overlap share memory (s3 takes s1's words, s4 s2's); overlapping ones do not; the input
// keeps its own.
TEST(VulkanPlan, ValuesShareMemoryOnlyWhenTheirLifetimesDoNotOverlap) {
  std::vector<float> x(64);
  for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(k);
  Passes p(graph({input("x", {64})}, {"s4"},
                 {node("soft1", "Softmax", {"x"}, "s1"), node("soft2", "Softmax", {"s1"}, "s2"),
                  node("soft3", "Softmax", {"s2"}, "s3"), node("soft4", "Softmax", {"s3"}, "s4")}),
           {{"x", floats({64}, x)}});
  p.through(Pass::kLastUses);
  EXPECT_EQ(p.st.waves.of, (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(p.st.last_use, (std::map<std::string, size_t>{{"x", 0}, {"s1", 1}, {"s2", 2}, {"s3", 3}}));

  p.through(Pass::kFinish);
  auto at = [&](const char* name) { return p.plan.slots.at(name).offset; };
  EXPECT_EQ(at("x"), 0u);
  EXPECT_EQ(at("s1"), 64u);
  EXPECT_EQ(at("s2"), 128u);
  EXPECT_EQ(at("s3"), at("s1"));
  EXPECT_EQ(at("s4"), at("s2"));
  EXPECT_EQ(p.plan.arena_words, 192u);
  // Every pair of values live in a common wave occupies disjoint words.
  const std::map<std::string, std::pair<size_t, size_t>> live{
      {"x", {0, 3}}, {"s1", {0, 1}}, {"s2", {1, 2}}, {"s3", {2, 3}}, {"s4", {3, 3}}};
  for (const auto& [u, lu] : live)
    for (const auto& [v, lv] : live) {
      if (u >= v || lu.second < lv.first || lv.second < lu.first) continue;
      const bool disjoint = at(u.c_str()) + 64 <= at(v.c_str()) || at(v.c_str()) + 64 <= at(u.c_str());
      EXPECT_TRUE(disjoint) << u << " and " << v << " are live together";
    }
}

// Keying: a value that must be static (ConstantOfShape's shape) computed from a small input asks for the
// plan to be keyed on that input's value; from a large one it is refused, naming the node.
TEST(VulkanPlan, SmallInputsAShapeComesFromKeyThePlanLargeOnesAreRefused) {
  const Graph small =
      graph({input("x", {2, 3}), input("shp", {2}, DType::kInt64)}, {"y"},
            {node("fill", "ConstantOfShape", {"shp"}, "z"), node("add", "Add", {"x", "z"}, "y")});
  const CpuExecutor cpu(small);
  const TensorMap inputs{{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}, {"shp", ints({2}, {2, 3})}};
  Plan once;
  try {
    buildPlanOnce(cpu, once, inputs);
    ADD_FAILURE() << "no NeedsKey";
  } catch (const NeedsKey& k) {
    EXPECT_EQ(k.inputs, (std::set<std::string>{"shp"}));
  }
  Plan plan;
  buildPlan(cpu, plan, inputs);
  EXPECT_EQ(plan.keyed, (std::set<std::string>{"shp"}));
  EXPECT_EQ(plan.key_values.at("shp").i, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(plan.statics.at("z").f, std::vector<float>(6, 0.0f));
  ASSERT_EQ(plan.nodes.size(), 1u);
  EXPECT_EQ(plan.nodes[0].name, "add");

  Graph large = graph(
      {input("big", {2000})}, {"r"},
      {node("max", "ReduceMax", {"big"}, "limit"), node("range", "Range", {"start", "limit", "delta"}, "r")});
  large.nodes[0].attributes["keepdims"] = optest::intAttr(0);  // a scalar
  large.initializers["start"] = floats({}, {0});
  large.initializers["delta"] = floats({}, {1});
  const CpuExecutor big(large);
  Plan refused;
  try {
    buildPlan(big, refused, {{"big", floats({2000}, std::vector<float>(2000, 3.0f))}});
    ADD_FAILURE() << "not refused";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "plan.onnx: node 'range' (Range), opset 17: Range computed from the model's inputs (only "
                 "constant ones are folded) "
                 "(Vulkan executor)");
  }
}

}  // namespace
}  // namespace sf::nn::vulkan
