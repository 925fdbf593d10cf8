// The Vulkan executor's operator table and its lowering of one node to dispatches (vulkan_lowering.h): the
// elementwise, fused, gather-map, reduction, softmax / normalisation, product, convolution, window and
// sampling kernels' parameter words, and the arena allocator the plan's values live in.
#include "neural/vulkan_lowering.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/half.h"
#include "neural/cpu_ops.h"

namespace sf::nn::vulkan {
namespace {

// Merges neighbouring axes that every operand walks contiguously (fewer divisions per element; ranks above
// the kernels' limit become runnable). Strides per operand over `dims`.
void collapseAxes(Shape& dims, std::vector<std::vector<int64_t>>& strides) {
  for (size_t d = dims.size(); d-- > 1;) {
    bool merge = true;
    for (const auto& st : strides)
      if (st[d - 1] != st[d] * dims[d]) merge = false;
    if (dims[d] == 1) merge = true;
    if (!merge) continue;
    if (dims[d] != 1)
      for (auto& st : strides) st[d - 1] = st[d];
    dims[d - 1] *= dims[d];
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(d));
    for (auto& st : strides) st.erase(st.begin() + static_cast<std::ptrdiff_t>(d));
  }
}

// The graph inputs `value` is computed from (through any nodes; initializers and Shape outputs end a path).
std::set<std::string> inputAncestors(const Graph& g, const std::string& value) {
  std::map<std::string, const Node*> producer;
  for (const Node& n : g.nodes)
    for (const std::string& o : n.outputs) producer[o] = &n;
  std::set<std::string> inputs, seen;
  std::vector<std::string> todo{value};
  while (!todo.empty()) {
    const std::string v = todo.back();
    todo.pop_back();
    if (v.empty() || !seen.insert(v).second) continue;
    for (const ValueInfo& in : g.inputs)
      if (in.name == v) inputs.insert(v);
    auto it = producer.find(v);
    if (it == producer.end() || it->second->op_type == "Shape") continue;
    todo.insert(todo.end(), it->second->inputs.begin(), it->second->inputs.end());
  }
  return inputs;
}

}  // namespace

const UnaryOp* findIn(std::span<const UnaryOp> table, const std::string& op) {
  for (const UnaryOp& u : table)
    if (op == u.op_type) return &u;
  return nullptr;
}

const std::map<std::string, int>& mapOps() {
  static const std::map<std::string, int> ops{{"Concat", -1}, {"Expand", 1}, {"Pad", 1},  {"ScatterND", 5},
                                              {"Slice", 1},   {"Split", 1},  {"Tile", 1}, {"Transpose", 1}};
  return ops;
}
int mapDataInputs(const Node& n) {
  auto it = mapOps().find(n.op_type);
  return it != mapOps().end() ? it->second : 1;  // Gather (constant indices), nearest Resize: input 0
}
bool isDataInput(int inputs, size_t k) {
  return inputs < 0 || (k < 31 && ((inputs >> k) & 1) != 0);
}

const std::set<std::string>& aliasOps() {
  static const std::set<std::string> ops{"Flatten", "Identity", "Reshape", "Squeeze", "Unsqueeze"};
  return ops;
}
const std::map<std::string, uint32_t>& reduceOps() {
  static const std::map<std::string, uint32_t> ops{
      {"ReduceL1", NN_RED_L1},          {"ReduceL2", NN_RED_L2},
      {"ReduceLogSum", NN_RED_LOG_SUM}, {"ReduceLogSumExp", NN_RED_LOG_SUM_EXP},
      {"ReduceMax", NN_RED_MAX},        {"ReduceMean", NN_RED_MEAN},
      {"ReduceMin", NN_RED_MIN},        {"ReduceProd", NN_RED_PROD},
      {"ReduceSum", NN_RED_SUM},        {"ReduceSumSquare", NN_RED_SUM_SQUARE}};
  return ops;
}
const std::set<std::string>& staticOnlyOps() {
  static const std::set<std::string> ops{"Constant", "ConstantOfShape", "Range", "Shape"};
  return ops;
}

bool gpuType(DType t) {
  switch (t) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat64:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kBool:
      return true;
    default:
      return false;
  }
}

[[noreturn]] void refuse(const Graph& g, const Node& n, const std::string& why) {
  throw Error(g.path + ": " + n.describe() + ", opset " + std::to_string(g.opset) + ": " + why +
              " (Vulkan executor)");
}

std::vector<uint32_t> toWords(const Tensor& t, const std::string& what) {
  std::vector<uint32_t> w(static_cast<size_t>(t.numel()));
  if (t.isFloat()) {
    for (size_t k = 0; k < w.size(); ++k) w[k] = floatBits(t.f[k]);
  } else {
    for (size_t k = 0; k < w.size(); ++k) {
      const int64_t v = t.i[k];
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        throw Error(what + ": element " + std::to_string(k) + " (" + std::to_string(v) +
                    ") is outside the int32 range the Vulkan executor holds integers in");
      w[k] = static_cast<uint32_t>(static_cast<int32_t>(v));
    }
  }
  return w;
}

bool broadcastsTo(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t k = 0; k < from.size(); ++k)
    if (from[k] != 1 && from[k] != to[lead + k]) return false;
  return true;
}

std::pair<uint32_t, int> fusableOp(const Node& n, int64_t opset) {
  if (n.op_type == "Cast") return {0, 0};  // changes the storage class
  if (const UnaryOp* u = findIn(kUnary, n.op_type); u && n.op_type != "Not") return {u->code, 1};
  if (const UnaryOp* b = findIn(kBinary, n.op_type); b && n.op_type != "And" && n.op_type != "Or" &&
                                                     n.op_type != "Equal" && n.op_type != "Less" &&
                                                     n.op_type != "Greater")
    return {b->code, 2};
  if (n.op_type == "Clip")
    return opset >= 11 ? std::pair<uint32_t, int>{NN_CLIP, 3}
                       : std::pair<uint32_t, int>{0, 0};  // bounds as attributes before 11
  if ((n.op_type == "Max" || n.op_type == "Min") && n.inputs.size() == 2)
    return {n.op_type == "Max" ? NN_MAX : NN_MIN, 2};
  return {0, 0};
}

// ---- The arena ----

uint64_t Allocator::take(uint64_t n) {
  n = (n + 63) & ~uint64_t{63};  // 256-byte alignment
  for (auto it = free.begin(); it != free.end(); ++it) {
    if (it->second < n) continue;
    const uint64_t at = it->first, left = it->second - n;
    free.erase(it);
    if (left) free[at + n] = left;
    return at;
  }
  return bump(n);
}

uint64_t Allocator::bump(uint64_t n) {
  n = (n + 63) & ~uint64_t{63};
  const uint64_t at = high;
  high += n;
  return at;
}

void Allocator::give(uint64_t at, uint64_t n) {
  n = (n + 63) & ~uint64_t{63};
  auto it = free.emplace(at, n).first;
  if (auto next = std::next(it); next != free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free.erase(next);
  }
  if (it != free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free.erase(it);
    }
  }
}

// ---- Lowering: what the planning passes use ----

std::set<std::string> Lowering::staticValues(const Graph& g, const std::set<std::string>& keyed) {
  std::set<std::string> s = keyed;
  for (const auto& [name, t] : g.initializers) {
    (void)t;
    s.insert(name);
  }
  for (const Node& n : g.nodes) {
    bool all = true;
    for (const std::string& in : n.inputs)
      if (!in.empty() && !s.count(in)) all = false;
    if (all || n.op_type == "Shape") s.insert(n.outputs.begin(), n.outputs.end());
  }
  return s;
}

void Lowering::keyOrRefuse(const Node& n, const std::vector<std::string>& values) {
  (void)n;
  std::set<std::string> inputs;
  for (const std::string& v : values) {
    const std::set<std::string> a = inputAncestors(g_, v);
    inputs.insert(a.begin(), a.end());
  }
  if (inputs.empty()) return;
  for (const std::string& in : inputs) {
    auto it = sizes_.find(in);
    if (it == sizes_.end() || it->second > kMaxKeyedElements || plan_.keyed.count(in)) return;
  }
  throw NeedsKey{inputs};
}

uint64_t Lowering::constant(std::vector<uint32_t> words) {
  const uint64_t at = alloc_.bump(std::max<uint64_t>(words.size(), 1));
  plan_.constants.emplace_back(at, std::move(words));
  return at;
}

std::string Lowering::broadcastSource(const std::string& name) const {
  auto v = views_.find(name);
  if (v == views_.end() || v->second.base != 0) return name;
  const View& w = v->second;
  auto s = shapes_.find(w.source);
  if (s == shapes_.end() || !broadcastsTo(s->second, w.shape)) return name;
  std::vector<int64_t> want = broadcastStrides(s->second, w.shape);
  for (size_t k = 0; k < w.shape.size(); ++k)
    if (w.shape[k] == 1) want[k] = w.strides[k];  // any stride along an axis of one element
  return want == w.strides ? w.source : name;
}

const Lowering::ComposedMaps& Lowering::composedMaps(const Node& n, const ValueTypes& info) {
  if (auto it = composed_.find(&n); it != composed_.end()) return it->second;
  ComposedMaps c;
  std::vector<std::string> names;
  const std::vector<std::vector<int64_t>> maps = computeMaps(n, info, names, c.fill);
  std::vector<Sources> inputs;
  for (const std::string& name : names) inputs.push_back(sourcesOf(name, info));
  for (const std::vector<int64_t>& map : maps) c.outputs.push_back(compose(n, map, inputs));
  return composed_.emplace(&n, std::move(c)).first->second;
}

const Lowering::Sources* Lowering::composedMap(const Node& n, size_t output, const ValueTypes& info) {
  const ComposedMaps& c = composedMaps(n, info);
  return c.fill != 0 || output >= c.outputs.size() ? nullptr : &c.outputs[output];
}

// ---- Lowering: the parameter block, dispatches and operands of a node ----

uint32_t Lowering::newParams(size_t words) {
  const auto base = static_cast<uint32_t>(plan_.params.size());
  plan_.params.resize(plan_.params.size() + words, 0);
  return base;
}

void Lowering::dispatch(Kernel k, uint32_t base, uint64_t count, const Node& n) {
  if (count == 0) return;
  const uint64_t groups = (count + kGroupSize - 1) / kGroupSize;
  const uint64_t x = std::min<uint64_t>(groups, 65535), y = (groups + x - 1) / x;
  if (y > 65535 || count > 0xFFFFFFFFull)
    refuse(g_, n, std::to_string(count) + " invocations exceed one dispatch");
  plan_.dispatches.push_back(
      {k, base, static_cast<uint32_t>(count), {static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1}});
}

const Slot& Lowering::slot(const Node& n, const std::string& name) {
  auto it = plan_.slots.find(name);
  if (it == plan_.slots.end()) refuse(g_, n, "value '" + name + "' has no place on the GPU");
  return it->second;
}

uint32_t Lowering::off(const Node& n, const std::string& name) {
  const uint64_t o = slot(n, name).offset;
  if (o > 0xFFFFFFFFull) refuse(g_, n, "the tensor arena exceeds 2^32 words");
  return static_cast<uint32_t>(o);
}

const Tensor& Lowering::staticValue(const Node& n, size_t k, const char* what) {
  if (k >= n.inputs.size() || n.inputs[k].empty()) refuse(g_, n, std::string(what) + " is required");
  auto it = plan_.statics.find(n.inputs[k]);
  if (it == plan_.statics.end()) {
    keyOrRefuse(n, {n.inputs[k]});
    refuse(g_, n,
           std::string(what) + " ('" + n.inputs[k] + "') must be a constant, not computed from the inputs");
  }
  return it->second;
}

Lowering::Operand Lowering::operand(const Node& n, const std::string& name, const Shape& dims) {
  Operand o;
  auto v = views_.find(name);
  if (v == views_.end()) {
    const Slot& s = slot(n, name);
    if (s.shape.size() > dims.size()) refuse(g_, n, "an input has a higher rank than the output");
    o.offset = off(n, name), o.dtype = s.dtype, o.strides = broadcastStrides(s.shape, dims);
    return o;
  }
  const View& w = v->second;
  if (w.shape.size() > dims.size()) refuse(g_, n, "an input has a higher rank than the output");
  const uint64_t at = uint64_t{off(n, w.source)} + static_cast<uint64_t>(w.base);
  if (at > 0xFFFFFFFFull) refuse(g_, n, "the tensor arena exceeds 2^32 words");
  o.offset = static_cast<uint32_t>(at), o.dtype = slot(n, w.source).dtype;
  o.strides.assign(dims.size(), 0);
  const size_t lead = dims.size() - w.shape.size();
  for (size_t k = 0; k < w.shape.size(); ++k) o.strides[lead + k] = w.shape[k] == 1 ? 0 : w.strides[k];
  return o;
}

void Lowering::eltwise(const Node& n, uint32_t op, std::span<const std::string> ins, float alpha,
                       float beta) {
  const Slot& out = slot(n, n.outputs[0]);
  Shape dims = out.shape;
  std::vector<std::vector<int64_t>> strides;
  strides.push_back(rowStrides(dims));
  uint32_t present = 0;
  std::vector<Operand> operands(ins.size());
  for (size_t k = 0; k < ins.size(); ++k) {
    if (ins[k].empty()) {
      strides.push_back(std::vector<int64_t>(dims.size(), 0));
      continue;
    }
    present |= 1u << k;
    operands[k] = operand(n, ins[k], dims);
    strides.push_back(operands[k].strides);
  }
  collapseAxes(dims, strides);
  if (dims.size() > NN_MAX_RANK) refuse(g_, n, "more than 6 axes after merging");
  const uint32_t b = newParams(37);
  param(b, 0) = op;
  param(b, 1) = static_cast<uint32_t>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) param(b, 2 + d) = static_cast<uint32_t>(dims[d]);
  param(b, 8) = off(n, n.outputs[0]);
  param(b, 9) = static_cast<uint32_t>(out.dtype);
  for (size_t k = 0; k < ins.size(); ++k) {
    if (ins[k].empty()) continue;
    param(b, 10 + 8 * k) = operands[k].offset;
    param(b, 11 + 8 * k) = static_cast<uint32_t>(operands[k].dtype);
    for (size_t d = 0; d < dims.size(); ++d)
      param(b, 12 + 8 * k + d) = static_cast<uint32_t>(strides[k + 1][d]);
  }
  param(b, 34) = floatBits(alpha);
  param(b, 35) = floatBits(beta);
  param(b, 36) = present;
  dispatch(Kernel::kEltwise, b, static_cast<uint64_t>(elementCount(out.shape)), n);
}

// Data movement: the operator's own CPU kernel run on index tensors gives, per output element, which input
// element it copies (1 + (input << 28 | index); 0 for Pad's fill value). One map per output; `names` gets
// the data inputs in index order.
std::vector<std::vector<int64_t>> Lowering::computeMaps(const Node& n, const ValueTypes& info,
                                                        std::vector<std::string>& names, uint32_t& fill) {
  const int data_inputs = mapDataInputs(n);
  std::vector<Tensor> owned(n.inputs.size());
  std::vector<const Tensor*> in(n.inputs.size(), nullptr);
  names.clear();
  Node run = n;
  fill = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    if (n.inputs[k].empty()) continue;
    const bool data = isDataInput(data_inputs, k);
    if (!data) {
      if (n.op_type == "Pad" && k == 2) {
        // The fill value: kept for the GPU, replaced by 0 (no element) for the map.
        const Tensor& v = staticValue(n, k, "constant_value");
        const DType out_type = info.at(n.outputs[0]).first;
        fill = isFloatType(out_type) ? floatBits(static_cast<float>(v.asDouble(0)))
                                     : static_cast<uint32_t>(static_cast<int32_t>(v.asInt(0)));
        owned[k] = Tensor(DType::kInt64, v.shape);
        in[k] = &owned[k];
        continue;
      }
      in[k] = &staticValue(n, k, ("input " + std::to_string(k)).c_str());
      continue;
    }
    const auto j = static_cast<int64_t>(names.size());
    if (j >= 16) refuse(g_, n, "more than 16 data inputs");
    names.push_back(n.inputs[k]);
    const Shape& shape = info.at(n.inputs[k]).second;
    Tensor t(DType::kInt64, shape);
    if (static_cast<int64_t>(t.i.size()) >= (int64_t{1} << 28))
      refuse(g_, n, "an input of 2^28 elements or more");
    for (size_t e = 0; e < t.i.size(); ++e) t.i[e] = ((j << 28) | static_cast<int64_t>(e)) + 1;
    owned[k] = std::move(t);
    in[k] = &owned[k];
  }
  if (n.op_type == "Pad" && g_.opset < 11) {
    if (const Attribute* v = n.attr("value")) {
      fill = floatBits(v->f);
      run.attributes["value"].f = 0;
    }
  }
  if (n.op_type == "Resize") {
    // tf_crop_and_resize writes the extrapolation value outside the region: the fill, 0 (no element) in the
    // map.
    if (const Attribute* v = n.attr("extrapolation_value")) {
      const DType out_type = info.at(n.outputs[0]).first;
      fill = isFloatType(out_type) ? floatBits(v->f) : static_cast<uint32_t>(static_cast<int32_t>(v->f));
      run.attributes["extrapolation_value"].f = 0;
    }
  }
  std::vector<Tensor> maps = findCpuOp(n.op_type)->cpu(run, in, g_.opset);
  std::vector<std::vector<int64_t>> out;
  for (Tensor& m : maps) out.push_back(std::move(m.i));
  return out;
}

// Where each element of `value` comes from: itself, or (when the map node producing it was absorbed into
// its reader) the elements of that node's own sources, composed through its map.
Lowering::Sources Lowering::sourcesOf(const std::string& value, const ValueTypes& info) {
  const std::string r = root_ ? root_(value) : value;
  auto it = absorbed_.find(r);
  if (it == absorbed_.end()) return {{value}, {}, true};
  const Node& p = *it->second;
  std::vector<std::string> names;
  uint32_t fill = 0;
  const std::vector<std::vector<int64_t>> maps = computeMaps(p, info, names, fill);
  std::vector<Sources> inner;
  for (const std::string& name : names) inner.push_back(sourcesOf(name, info));
  return compose(p, maps.at(0), inner);
}

// Entries of `map` (1 + (j << 28 | index) into `inputs`) resolved through each input's own sources; only
// the sources some element reads are kept (a Slice of a Concat may read one of them).
Lowering::Sources Lowering::compose(const Node& n, const std::vector<int64_t>& map,
                                    const std::vector<Sources>& inputs) {
  Sources all = composeAll(n, map, inputs);
  Sources out;
  out.identity = false;
  std::vector<int64_t> renumber(all.sources.size(), -1);
  out.entries = std::move(all.entries);
  for (int64_t& e : out.entries) {
    if (e == 0) continue;
    const int64_t j = (e - 1) >> 28, idx = (e - 1) & 0x0FFFFFFF;
    if (renumber[static_cast<size_t>(j)] < 0) {
      renumber[static_cast<size_t>(j)] = static_cast<int64_t>(out.sources.size());
      out.sources.push_back(all.sources[static_cast<size_t>(j)]);
    }
    e = ((renumber[static_cast<size_t>(j)] << 28) | idx) + 1;
  }
  return out;
}

Lowering::Sources Lowering::composeAll(const Node& n, const std::vector<int64_t>& map,
                                       const std::vector<Sources>& inputs) {
  Sources out;
  out.identity = false;
  std::vector<std::vector<int64_t>> remap(inputs.size());  // input j's source k -> index in out.sources
  for (size_t j = 0; j < inputs.size(); ++j)
    for (const std::string& src : inputs[j].sources) {
      auto at = std::find(out.sources.begin(), out.sources.end(), src);
      if (at == out.sources.end()) {
        if (out.sources.size() >= 16) refuse(g_, n, "more than 16 data sources after composing moves");
        out.sources.push_back(src);
        at = out.sources.end() - 1;
      }
      remap[j].push_back(at - out.sources.begin());
    }
  out.entries.resize(map.size());
  for (size_t e = 0; e < map.size(); ++e) {
    if (map[e] == 0) continue;
    const int64_t m = map[e] - 1, j = m >> 28, idx = m & 0x0FFFFFFF;
    const Sources& in = inputs[static_cast<size_t>(j)];
    int64_t src_entry = in.identity ? idx + 1 : in.entries[static_cast<size_t>(idx)];
    if (src_entry == 0) continue;
    const int64_t sm = src_entry - 1, sj = sm >> 28, sidx = sm & 0x0FFFFFFF;
    out.entries[e] = ((remap[static_cast<size_t>(j)][static_cast<size_t>(sj)] << 28) | sidx) + 1;
  }
  return out;
}

void Lowering::mapped(const Node& n, const ValueTypes& info) {
  const ComposedMaps& maps = composedMaps(n, info);
  for (size_t o = 0; o < n.outputs.size() && o < maps.outputs.size(); ++o) {
    if (n.outputs[o].empty()) continue;
    const Sources& composed = maps.outputs[o];
    std::vector<uint32_t> words(composed.entries.size());
    for (size_t e = 0; e < words.size(); ++e) words[e] = static_cast<uint32_t>(composed.entries[e]);
    const uint64_t map_at = constant(std::move(words));
    const uint32_t b = newParams(4 + composed.sources.size());
    param(b, 0) = off(n, n.outputs[o]);
    param(b, 1) = static_cast<uint32_t>(map_at);
    param(b, 2) = maps.fill;
    param(b, 3) = static_cast<uint32_t>(composed.sources.size());
    for (size_t j = 0; j < composed.sources.size(); ++j) param(b, 4 + j) = off(n, composed.sources[j]);
    if (map_at > 0xFFFFFFFFull) refuse(g_, n, "the tensor arena exceeds 2^32 words");
    dispatch(Kernel::kMap, b, composed.entries.size(), n);
  }
}

void Lowering::gemm(const Node& n, bool is_gemm) {
  const Slot& a = slot(n, n.inputs.at(0));
  const Slot& bm = slot(n, n.inputs.at(1));
  if (!isFloatType(a.dtype) || !isFloatType(bm.dtype))
    refuse(g_, n, "integer matrix products are not supported");
  Product p;
  p.a = n.inputs[0];
  p.b = n.inputs[1];
  if (is_gemm) {
    const bool ta = n.attrInt("transA", 0) != 0, tb = n.attrInt("transB", 0) != 0;
    if (a.shape.size() != 2 || bm.shape.size() != 2) refuse(g_, n, "A and B must be matrices");
    p.M = ta ? a.shape[1] : a.shape[0];
    p.K = ta ? a.shape[0] : a.shape[1];
    p.N = tb ? bm.shape[0] : bm.shape[1];
    p.sam = ta ? 1 : a.shape[1];
    p.sak = ta ? a.shape[1] : 1;
    p.sbk = tb ? 1 : bm.shape[1];
    p.sbn = tb ? bm.shape[1] : 1;
  } else {
    Shape as = a.shape, bs = bm.shape;
    if (as.empty() || bs.empty()) refuse(g_, n, "scalar operands");
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    p.M = as[as.size() - 2];
    p.K = as.back();
    p.N = bs.back();
    p.sam = p.K;
    p.sak = 1;
    p.sbk = p.N;
    p.sbn = 1;
    const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
    const size_t rank = std::max(ab.size(), bb.size());
    p.batch.assign(rank, 1);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t x = d + ab.size() >= rank ? ab[d + ab.size() - rank] : 1;
      const int64_t y = d + bb.size() >= rank ? bb[d + bb.size() - rank] : 1;
      p.batch[d] = std::max(x, y);
    }
    const std::vector<int64_t> ast = broadcastStrides(ab, p.batch), bst = broadcastStrides(bb, p.batch);
    p.a_batch_st.resize(rank);
    p.b_batch_st.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
      p.a_batch_st[d] = ast[d] * p.M * p.K;
      p.b_batch_st[d] = bst[d] * p.K * p.N;
    }
  }
  product(n, p, is_gemm);
}

void Lowering::product(const Node& n, const Product& pr, bool is_gemm) {
  const Slot& a = slot(n, pr.a);
  const Slot& bm = slot(n, pr.b);
  const Slot& out = slot(n, n.outputs[0]);
  const int64_t M = pr.M, N = pr.N, K = pr.K;
  Shape batch = pr.batch;
  std::vector<std::vector<int64_t>> batch_st{pr.a_batch_st, pr.b_batch_st};
  collapseAxes(batch, batch_st);
  const std::vector<int64_t>& a_batch_st = batch_st[0];
  const std::vector<int64_t>& b_batch_st = batch_st[1];
  if (batch.size() > 4) refuse(g_, n, "more than 4 batch axes after merging");
  for (int64_t v : {pr.sam, pr.sak, pr.sbk, pr.sbn})
    if (v < 0 || v > 0xFFFFFFFFll) refuse(g_, n, "operand strides beyond 32 bits");
  const auto sam = static_cast<uint32_t>(pr.sam), sak = static_cast<uint32_t>(pr.sak),
             sbk = static_cast<uint32_t>(pr.sbk), sbn = static_cast<uint32_t>(pr.sbn);
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  // Narrow products (a side under 16, or many small batched matrices) waste most of a 64 x 64 tile: one
  // invocation per output element instead, or per matrix for 3 x 3 ones. (On the H200 the MLP layers of 32
  // outputs ran fastest tiled: a row-walking kernel with B staged in shared memory took 60 us per 60000 x 32
  // x 32 layer against the tiles' 26, and a staged-B one-output-per-invocation variant was slower still.)
  const bool per_matrix = batches > 1 && M <= 4 && N <= 4 && K <= 4;
  const bool small = M < 16 || N < 16 || (batches > 1 && M * N < 1024) || batches > 65535;
  const uint32_t b = newParams(36);
  param(b, 35) = per_matrix ? 1 : 0;
  param(b, 0) = static_cast<uint32_t>(M);
  param(b, 1) = static_cast<uint32_t>(N);
  param(b, 2) = static_cast<uint32_t>(K);
  param(b, 3) = off(n, pr.a);
  param(b, 4) = sam;
  param(b, 5) = sak;
  param(b, 6) = off(n, pr.b);
  param(b, 7) = sbk;
  param(b, 8) = sbn;
  param(b, 9) = off(n, n.outputs[0]);
  param(b, 10) = static_cast<uint32_t>(batch.size());
  for (size_t d = 0; d < batch.size(); ++d) {
    param(b, 11 + d) = static_cast<uint32_t>(batch[d]);
    param(b, 15 + d) = static_cast<uint32_t>(a_batch_st[d]);
    param(b, 19 + d) = static_cast<uint32_t>(b_batch_st[d]);
  }
  float alpha = 1, beta = 0;
  if (is_gemm) {
    alpha = n.attrFloat("alpha", 1.0f);
    beta = n.attrFloat("beta", 1.0f);
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const Slot& c = slot(n, n.inputs[2]);
      if (!isFloatType(c.dtype)) refuse(g_, n, "C must be a float tensor");
      const std::vector<int64_t> st = broadcastStrides(c.shape, {M, N});
      param(b, 23) = off(n, n.inputs[2]);
      param(b, 24) = 1;
      param(b, 25) = static_cast<uint32_t>(st[0]);
      param(b, 26) = static_cast<uint32_t>(st[1]);
    }
  }
  param(b, 27) = floatBits(alpha);
  param(b, 28) = floatBits(beta);
  param(b, 29) = acts_.count(n.outputs[0]) ? acts_.at(n.outputs[0]) : 0;
  param(b, 30) = static_cast<uint32_t>(out.dtype);
  param(b, 31) = static_cast<uint32_t>(a.dtype);
  param(b, 32) = static_cast<uint32_t>(bm.dtype);
  if (M == 0 || N == 0 || batches == 0) return;
  // K == 0: the sum over nothing is 0; the kernels write alpha * 0 + beta * C.
  if (per_matrix) {
    dispatch(Kernel::kMatmulSmall, b, static_cast<uint64_t>(batches), n);
    return;
  }
  if (small) {
    dispatch(Kernel::kMatmulSmall, b, static_cast<uint64_t>(batches * M * N), n);
    return;
  }
  plan_.dispatches.push_back({Kernel::kGemm,
                              b,
                              0,
                              {static_cast<uint32_t>((N + 63) / 64), static_cast<uint32_t>((M + 63) / 64),
                               static_cast<uint32_t>(batches)}});
  if ((M + 63) / 64 > 65535 || (N + 63) / 64 > 65535)
    refuse(g_, n, "matrices beyond 4 million rows or columns");
}

void Lowering::conv(const Node& n) {
  const Slot& x = slot(n, n.inputs.at(0));
  const Slot& w = slot(n, n.inputs.at(1));
  const Slot& out = slot(n, n.outputs[0]);
  if (!isFloatType(x.dtype)) refuse(g_, n, "integer convolution");
  const size_t spatial = x.shape.size() - 2;
  if (x.shape.size() < 3 || spatial > 2) refuse(g_, n, "only 1-D and 2-D convolutions");
  auto at = [&](const Shape& s, size_t d) { return spatial == 1 ? (d == 0 ? int64_t{1} : s[2]) : s[2 + d]; };
  const int64_t H = at(x.shape, 0), W = at(x.shape, 1), OH = at(out.shape, 0), OW = at(out.shape, 1);
  const int64_t KH = at(w.shape, 0), KW = at(w.shape, 1);
  std::vector<int64_t> strides = n.attrInts("strides", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> dil = n.attrInts("dilations", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
  const std::string auto_pad = n.attrString("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const int64_t in[2] = {H, W}, o[2] = {OH, OW}, k[2] = {KH, KW};
    for (size_t d = 0; d < spatial; ++d) {
      const size_t dd = spatial == 1 ? 1 : d;
      const int64_t total =
          std::max<int64_t>(0, (o[dd] - 1) * strides[d] + (k[dd] - 1) * dil[d] + 1 - in[dd]);
      pads[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    }
  } else if (auto_pad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  }
  const uint32_t b = newParams(22);
  param(b, 0) = static_cast<uint32_t>(x.shape[0]);
  param(b, 1) = static_cast<uint32_t>(x.shape[1]);
  param(b, 2) = static_cast<uint32_t>(H);
  param(b, 3) = static_cast<uint32_t>(W);
  param(b, 4) = static_cast<uint32_t>(out.shape[1]);
  param(b, 5) = static_cast<uint32_t>(OH);
  param(b, 6) = static_cast<uint32_t>(OW);
  param(b, 7) = static_cast<uint32_t>(KH);
  param(b, 8) = static_cast<uint32_t>(KW);
  param(b, 9) = static_cast<uint32_t>(spatial == 1 ? 1 : strides[0]);
  param(b, 10) = static_cast<uint32_t>(strides[spatial - 1]);
  param(b, 11) = static_cast<uint32_t>(spatial == 1 ? 0 : pads[0]);
  param(b, 12) = static_cast<uint32_t>(pads[spatial - 1]);
  param(b, 13) = static_cast<uint32_t>(spatial == 1 ? 1 : dil[0]);
  param(b, 14) = static_cast<uint32_t>(dil[spatial - 1]);
  param(b, 15) = static_cast<uint32_t>(n.attrInt("group", 1));
  param(b, 16) = off(n, n.inputs[0]);
  param(b, 17) = off(n, n.inputs[1]);
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    param(b, 18) = off(n, n.inputs[2]);
    param(b, 19) = 1;
  }
  param(b, 20) = off(n, n.outputs[0]);
  param(b, 21) = static_cast<uint32_t>(out.dtype);
  dispatch(Kernel::kConv, b, static_cast<uint64_t>(elementCount(out.shape)), n);
}

void Lowering::window(const Node& n) {
  const Slot& x = slot(n, n.inputs.at(0));
  const Slot& y = slot(n, n.outputs[0]);
  const bool transpose = n.op_type == "ConvTranspose", max = n.op_type == "MaxPool";
  if (x.shape.size() < 3 || x.shape.size() - 2 > NN_WINDOW_DIMS)
    refuse(g_, n, "only 1 to " + std::to_string(NN_WINDOW_DIMS) + " spatial dimensions");
  if (!max && !isFloatType(x.dtype)) refuse(g_, n, "an integer input");
  const size_t nd = x.shape.size() - 2;
  const Shape in(x.shape.begin() + 2, x.shape.end()), out(y.shape.begin() + 2, y.shape.end());
  Shape kernel = n.attrInts("kernel_shape");
  if (transpose) {
    const Shape& w = slot(n, n.inputs.at(1)).shape;
    kernel.assign(w.begin() + 2, w.end());
  }
  const std::vector<int64_t> strides = n.attrInts("strides", std::vector<int64_t>(nd, 1)),
                             dil = n.attrInts("dilations", std::vector<int64_t>(nd, 1)),
                             pads = n.attrInts("pads", std::vector<int64_t>(2 * nd, 0));
  const std::string auto_pad = n.attrString("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  // Pads at the start and end of every dimension, as the CPU kernels compute them.
  std::vector<int64_t> pad_begin(nd, 0), pad_end(nd, 0);
  for (size_t d = 0; d < nd; ++d) {
    const int64_t extent = (kernel[d] - 1) * dil[d] + 1;
    if (transpose) {
      const std::vector<int64_t> out_pad = n.attrInts("output_padding", std::vector<int64_t>(nd, 0));
      if (!n.attrInts("output_shape").empty() || same) {
        const int64_t full = strides[d] * (in[d] - 1) + out_pad[d] + extent;
        const int64_t total = std::max<int64_t>(full - out[d], 0);
        pad_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      } else if (auto_pad != "VALID") {
        pad_begin[d] = pads[d];
      }
    } else if (same) {
      const int64_t total = std::max<int64_t>((out[d] - 1) * strides[d] + extent - in[d], 0);
      pad_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pad_end[d] = total - pad_begin[d];
    } else if (auto_pad != "VALID") {
      pad_begin[d] = pads[d];
      pad_end[d] = pads[d + nd];
    }
  }
  const int64_t in_size = elementCount(in), out_size = elementCount(out), k_size = elementCount(kernel);
  const bool indices = max && n.outputs.size() > 1 && !n.outputs[1].empty();
  if (indices && elementCount(x.shape) > std::numeric_limits<int32_t>::max())
    refuse(g_, n, "Indices beyond the int32 range the GPU holds integers in");
  if (max && x.dtype == DType::kInt64) {
    // A window entirely in the padding gives int64's minimum (the CPU's -inf): not held on the GPU.
    for (size_t d = 0; d < nd; ++d) {
      for (int64_t o = 0; o < out[d]; ++o) {
        bool any = false;
        for (int64_t k = 0; k < kernel[d] && !any; ++k) {
          const int64_t q = o * strides[d] - pad_begin[d] + k * dil[d];
          any = q >= 0 && q < in[d];
        }
        if (!any) refuse(g_, n, "an int64 window entirely in the padding");
      }
    }
  }
  const uint32_t b = newParams(24 + 8 * NN_WINDOW_DIMS);
  param(b, 0) = transpose                                ? NN_WIN_CONV_TRANSPOSE
                : max                                    ? NN_WIN_MAX
                : n.attrInt("count_include_pad", 0) != 0 ? NN_WIN_AVERAGE_PAD
                                                         : NN_WIN_AVERAGE;
  param(b, 1) = static_cast<uint32_t>(nd);
  param(b, 2) = static_cast<uint32_t>(x.shape[1]);
  param(b, 3) = static_cast<uint32_t>(y.shape[1]);
  param(b, 6) = off(n, n.inputs[0]);
  if (transpose) {
    const int64_t group = n.attrInt("group", 1);
    param(b, 4) = static_cast<uint32_t>(x.shape[1] / group);
    param(b, 5) = static_cast<uint32_t>(y.shape[1] / group);
    param(b, 7) = off(n, n.inputs[1]);
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      param(b, 8) = off(n, n.inputs[2]);
      param(b, 9) = 1;
    }
  }
  param(b, 10) = off(n, n.outputs[0]);
  param(b, 11) = static_cast<uint32_t>(y.dtype);
  param(b, 12) = static_cast<uint32_t>(x.dtype);
  if (indices) {
    param(b, 13) = off(n, n.outputs[1]);
    param(b, 14) = n.attrInt("storage_order", 0) == 1 ? 2 : 1;
  }
  param(b, 15) = static_cast<uint32_t>(in_size);
  param(b, 16) = static_cast<uint32_t>(out_size);
  param(b, 17) = static_cast<uint32_t>(k_size);
  for (size_t d = 0; d < nd; ++d) {
    const int64_t v[7] = {in[d], out[d], kernel[d], strides[d], dil[d], pad_begin[d], pad_end[d]};
    for (size_t k = 0; k < 7; ++k) {
      if (v[k] < std::numeric_limits<int32_t>::min() || v[k] > std::numeric_limits<int32_t>::max())
        refuse(g_, n, "a window size, stride, dilation or pad beyond 32 bits");
      param(b, 24 + 8 * d + k) = static_cast<uint32_t>(static_cast<int32_t>(v[k]));
    }
    // nn_window.comp sums these in 32-bit ints (an output position times its stride, a tap's offset, the
    // pads, the input's extent): each fits above, and their sum must too.
    const int64_t reach = out[d] * std::max<int64_t>(strides[d], 1) + (kernel[d] - 1) * dil[d] + in[d] +
                          std::abs(pad_begin[d]) + std::abs(pad_end[d]);
    if (reach > std::numeric_limits<int32_t>::max())
      refuse(g_, n, "a window's positions beyond 32 bits (strides, dilations, pads and sizes together)");
  }
  if (in_size > std::numeric_limits<int32_t>::max() || k_size > std::numeric_limits<int32_t>::max())
    refuse(g_, n, "a window or an input plane beyond 2^31 positions");
  if (out_size == 0) return;
  dispatch(Kernel::kWindow, b, static_cast<uint64_t>(elementCount(y.shape)), n);
}

void Lowering::reduce(const Node& n, uint32_t kind) {
  const Slot& x = slot(n, n.inputs.at(0));
  const auto rank = static_cast<int64_t>(x.shape.size());
  const int64_t input_opset = n.op_type == "ReduceSum" ? 13 : 18;
  std::vector<int64_t> axes;
  bool given = false;
  if (g_.opset >= input_opset) {
    if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
      const Tensor& t = staticValue(n, 1, "axes");
      for (int64_t k = 0; k < t.numel(); ++k) axes.push_back(t.asInt(static_cast<size_t>(k)));
      given = !axes.empty();
    }
  } else if (n.attr("axes")) {
    axes = n.attrInts("axes");
    given = !axes.empty();
  }
  std::vector<bool> reduced(x.shape.size(), !given);
  for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  if (!given && g_.opset >= input_opset && n.attrInt("noop_with_empty_axes", 0) != 0)
    std::fill(reduced.begin(), reduced.end(), false);
  Shape kept, red;
  std::vector<int64_t> kept_st, red_st;
  const std::vector<int64_t> st = rowStrides(x.shape);
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (reduced[d]) {
      red.push_back(x.shape[d]);
      red_st.push_back(st[d]);
    } else {
      kept.push_back(x.shape[d]);
      kept_st.push_back(st[d]);
    }
  }
  stridedReduce(n, kind, n.inputs[0], std::move(kept), std::move(kept_st), std::move(red), std::move(red_st));
}

void Lowering::stridedReduce(const Node& n, uint32_t kind, const std::string& input, Shape kept,
                             std::vector<int64_t> kept_st, Shape red, std::vector<int64_t> red_st) {
  const Slot& x = slot(n, input);
  const Slot& out = slot(n, n.outputs[0]);
  int64_t total = 1;
  for (int64_t d : red) total *= d;
  std::vector<std::vector<int64_t>> ks{std::move(kept_st)}, rs{std::move(red_st)};
  collapseAxes(kept, ks);
  collapseAxes(red, rs);
  if (kept.size() > NN_MAX_RANK || red.size() > NN_MAX_RANK) refuse(g_, n, "more than 6 axes after merging");
  // Few outputs over a long reduction (a mesh's bounds: 3 outputs of 1,225 values): one workgroup per output,
  // its 256 invocations striding the reduced elements and combining through shared memory, instead of one
  // invocation walking them all. Float kinds whose partial results combine with the same operation.
  const uint64_t outputs = static_cast<uint64_t>(elementCount(out.shape));
  const bool cooperative = isFloatType(x.dtype) && kind != NN_RED_LOG_SUM_EXP && total >= 256 &&
                           outputs * 256 <= (uint64_t{1} << 31);
  const uint32_t b = newParams(32);
  param(b, 31) = cooperative ? 1 : 0;
  param(b, 0) = kind;
  param(b, 1) = off(n, n.outputs[0]);
  param(b, 2) = off(n, input);
  param(b, 3) = static_cast<uint32_t>(x.dtype);
  param(b, 4) = static_cast<uint32_t>(kept.size());
  for (size_t d = 0; d < kept.size(); ++d) {
    param(b, 5 + d) = static_cast<uint32_t>(kept[d]);
    param(b, 11 + d) = static_cast<uint32_t>(ks[0][d]);
  }
  param(b, 17) = static_cast<uint32_t>(red.size());
  for (size_t d = 0; d < red.size(); ++d) {
    param(b, 18 + d) = static_cast<uint32_t>(red[d]);
    param(b, 24 + d) = static_cast<uint32_t>(rs[0][d]);
  }
  param(b, 30) = static_cast<uint32_t>(total);
  dispatch(Kernel::kReduce, b, cooperative ? outputs * 256 : outputs, n);
}

uint32_t Lowering::rowParams(const Node& n, size_t words, uint32_t mode, DType type, int64_t outer,
                             int64_t len, int64_t inner) {
  const uint32_t b = newParams(words);
  param(b, 0) = mode;
  param(b, 1) = off(n, n.outputs[0]);
  param(b, 2) = off(n, n.inputs[0]);
  param(b, 3) = static_cast<uint32_t>(type);
  param(b, 4) = static_cast<uint32_t>(outer);
  param(b, 5) = static_cast<uint32_t>(len);
  param(b, 6) = static_cast<uint32_t>(inner);
  return b;
}

void Lowering::softmax(const Node& n) {
  const Slot& x = slot(n, n.inputs.at(0));
  const auto rank = static_cast<int64_t>(x.shape.size());
  const bool per_axis = g_.opset >= 13;
  int64_t axis = n.attrInt("axis", per_axis ? -1 : 1);
  if (axis < 0) axis += rank;
  auto product = [&](int64_t from, int64_t to) {
    int64_t p = 1;
    for (int64_t d = from; d < to; ++d) p *= x.shape[static_cast<size_t>(d)];
    return p;
  };
  const int64_t outer = product(0, axis);
  const int64_t len = per_axis ? x.shape[static_cast<size_t>(axis)] : product(axis, rank);
  const int64_t inner = per_axis ? product(axis + 1, rank) : 1;
  const uint32_t b = rowParams(n, 7, 0, x.dtype, outer, len, inner);
  dispatch(Kernel::kSoftmax, b, static_cast<uint64_t>(outer * inner), n);
}

void Lowering::gather(const Node& n, const ValueTypes& info) {
  if (plan_.statics.count(n.inputs.at(1))) {
    mapped(n, info);
    return;
  }
  const Slot& x = slot(n, n.inputs[0]);
  const Slot& idx = slot(n, n.inputs[1]);
  const auto rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = n.attrInt("axis", 0);
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[static_cast<size_t>(d)];
  const uint32_t b = newParams(8);
  param(b, 0) = off(n, n.outputs[0]);
  param(b, 1) = off(n, n.inputs[0]);
  param(b, 2) = off(n, n.inputs[1]);
  param(b, 3) = static_cast<uint32_t>(idx.dtype);
  param(b, 4) = static_cast<uint32_t>(outer);
  param(b, 5) = static_cast<uint32_t>(x.shape[static_cast<size_t>(axis)]);
  param(b, 6) = static_cast<uint32_t>(elementCount(idx.shape));
  param(b, 7) = static_cast<uint32_t>(inner);
  if (x.shape[static_cast<size_t>(axis)] == 0) refuse(g_, n, "gathering from an empty axis");
  dispatch(Kernel::kGather, b, static_cast<uint64_t>(elementCount(slot(n, n.outputs[0]).shape)), n);
}

void Lowering::gridSample(const Node& n) {
  const Slot& x = slot(n, n.inputs.at(0));
  const Slot& grid = slot(n, n.inputs.at(1));
  const Slot& out = slot(n, n.outputs[0]);
  const std::string mode = n.attrString("mode", g_.opset >= 20 ? "linear" : "bilinear");
  const std::string padding = n.attrString("padding_mode", "zeros");
  const uint32_t b = newParams(15);
  param(b, 0) = NN_SAMPLE_GRID;
  param(b, 1) = off(n, n.outputs[0]);
  param(b, 2) = off(n, n.inputs[0]);
  param(b, 3) = static_cast<uint32_t>(x.dtype);
  param(b, 4) = off(n, n.inputs[1]);
  param(b, 5) = static_cast<uint32_t>(grid.dtype);
  for (size_t d = 0; d < 4; ++d) param(b, 6 + d) = static_cast<uint32_t>(x.shape[d]);
  param(b, 10) = static_cast<uint32_t>(grid.shape[1]);
  param(b, 11) = static_cast<uint32_t>(grid.shape[2]);
  param(b, 12) = mode == "nearest" ? 0 : (mode == "bicubic" || mode == "cubic") ? 2 : 1;
  param(b, 13) = padding == "border"       ? NN_PAD_BORDER
                 : padding == "reflection" ? NN_PAD_REFLECTION
                                           : NN_PAD_ZEROS;
  param(b, 14) = n.attrInt("align_corners", 0) != 0 ? 1 : 0;
  dispatch(Kernel::kSample, b, static_cast<uint64_t>(elementCount(out.shape)), n);
}

void Lowering::resize(const Node& n, const ValueTypes& info) {
  if (n.attrString("mode", "nearest") == "nearest") {
    mapped(n, info);
    return;
  }
  const Slot& x = slot(n, n.inputs.at(0));
  const Slot& out = slot(n, n.outputs[0]);
  if (x.shape.size() > NN_MAX_RANK) refuse(g_, n, "more than 6 axes");
  // The taps from the CPU kernel's own function; X only lends its type and shape.
  const Tensor x_like(x.dtype, x.shape);
  std::vector<const Tensor*> in{&x_like};
  for (size_t k = 1; k < n.inputs.size(); ++k)
    in.push_back(n.inputs[k].empty() ? nullptr : &staticValue(n, k, "roi, scales and sizes"));
  const ResizeTapTables tables = resizeTapTables(n, in, g_.opset);
  const uint32_t b = newParams(24);
  param(b, 0) = NN_SAMPLE_RESIZE;
  param(b, 1) = off(n, n.outputs[0]);
  param(b, 2) = off(n, n.inputs[0]);
  param(b, 3) = static_cast<uint32_t>(x.dtype);
  param(b, 4) = static_cast<uint32_t>(x.shape.size());
  const std::vector<int64_t> st = rowStrides(x.shape);
  for (size_t d = 0; d < x.shape.size(); ++d) {
    param(b, 5 + d) = static_cast<uint32_t>(out.shape[d]);
    param(b, 11 + d) = static_cast<uint32_t>(st[d]);
    const ResizeTapTables::Axis& axis = tables.axes.at(d);
    std::vector<uint32_t> words(axis.taps.size() * 9, 0);
    for (size_t o = 0; o < axis.taps.size(); ++o) {
      uint32_t* w = &words[o * 9];
      if (axis.extrapolate[o]) {
        w[0] = 0xFFFFFFFFu;
        continue;
      }
      if (axis.taps[o].size() > 4) refuse(g_, n, "more than 4 taps");
      w[0] = static_cast<uint32_t>(axis.taps[o].size());
      for (size_t k = 0; k < axis.taps[o].size(); ++k) {
        w[1 + k] = static_cast<uint32_t>(axis.taps[o][k].first);
        w[5 + k] = floatBits(static_cast<float>(axis.taps[o][k].second));
      }
    }
    param(b, 17 + d) = static_cast<uint32_t>(constant(std::move(words)));
  }
  param(b, 23) = floatBits(static_cast<float>(tables.extrapolation));
  dispatch(Kernel::kSample, b, static_cast<uint64_t>(elementCount(out.shape)), n);
}

void Lowering::batchNorm(const Node& n) {
  const Slot& x = slot(n, n.inputs.at(0));
  if (n.outputs.size() > 1) refuse(g_, n, "training outputs");
  const Tensor& scale = staticValue(n, 1, "scale");
  const Tensor& bias = staticValue(n, 2, "B");
  const Tensor& mean = staticValue(n, 3, "mean");
  const Tensor& var = staticValue(n, 4, "var");
  const double eps = n.attrFloat("epsilon", 1e-5f);
  const auto c = static_cast<size_t>(x.shape.at(1));
  Shape pshape(x.shape.size() - 1, 1);
  pshape[0] = static_cast<int64_t>(c);
  std::vector<uint32_t> a(c), bb(c);
  for (size_t k = 0; k < c; ++k) {
    const double s = scale.asDouble(k) / std::sqrt(var.asDouble(k) + eps);
    a[k] = floatBits(static_cast<float>(s));
    bb[k] = floatBits(static_cast<float>(bias.asDouble(k) - mean.asDouble(k) * s));
  }
  const std::string an = n.outputs[0] + "#scale", bn = n.outputs[0] + "#shift";
  plan_.slots[an] = {constant(std::move(a)), DType::kFloat32, pshape, true};
  plan_.slots[bn] = {constant(std::move(bb)), DType::kFloat32, pshape, true};
  const std::string ins[3] = {n.inputs[0], an, bn};
  eltwise(n, NN_MUL_ADD, ins);
}

void Lowering::clip(const Node& n) {
  std::string ins[3] = {n.inputs.at(0), "", ""};
  if (g_.opset < 11) {
    for (int k = 0; k < 2; ++k) {
      const float v = n.attrFloat(k == 0 ? "min" : "max", k == 0 ? -std::numeric_limits<float>::max()
                                                                 : std::numeric_limits<float>::max());
      const std::string name = n.outputs[0] + (k == 0 ? "#min" : "#max");
      plan_.slots[name] = {constant({floatBits(v)}), DType::kFloat32, {}, true};
      ins[1 + k] = name;
    }
  } else {
    for (size_t k = 1; k <= 2 && k < n.inputs.size(); ++k) ins[k] = n.inputs[k];
  }
  eltwise(n, NN_CLIP, ins);
}

// Max and Min: one input is a copy, two an elementwise dispatch, three to eight float inputs one fused
// program folding them in order (integer values would lose bits in the fused kernel's float registers).
void Lowering::extremum(const Node& n, const ValueTypes& info) {
  const uint32_t code = n.op_type == "Max" ? NN_MAX : NN_MIN;
  if (n.inputs.size() == 1) {
    const std::string ins[1] = {n.inputs[0]};
    eltwise(n, NN_IDENTITY, ins);
    return;
  }
  if (n.inputs.size() == 2) {
    const std::string ins[2] = {n.inputs[0], n.inputs[1]};
    eltwise(n, code, ins);
    return;
  }
  const DType type = info.at(n.outputs[0]).first;
  if (!isFloatType(type))
    refuse(g_, n,
           std::to_string(n.inputs.size()) + " integer inputs (integer " + n.op_type + " takes up to 2)");
  std::vector<std::string> inputs;
  auto reg = [&](const std::string& v) {
    auto at = std::find(inputs.begin(), inputs.end(), v);
    if (at != inputs.end()) return static_cast<uint32_t>(at - inputs.begin());
    inputs.push_back(v);
    return static_cast<uint32_t>(inputs.size() - 1);
  };
  std::vector<std::array<uint32_t, 6>> program;
  for (size_t k = 1; k < n.inputs.size(); ++k)
    program.push_back({code, k == 1 ? reg(n.inputs[0]) : static_cast<uint32_t>(kFusedInputs),
                       reg(n.inputs[k]), 255, static_cast<uint32_t>(type), 0});
  fusedProgram(n, inputs, program);
}

// LayerNormalization (rows: every axis from `axis` on) and InstanceNormalization (rows: the (n, c) planes):
// one invocation per row of nn_softmax.comp's normalising mode.
void Lowering::normalise(const Node& n) {
  const bool layer = n.op_type == "LayerNormalization";
  const Slot& x = slot(n, n.inputs.at(0));
  const Slot& scale = slot(n, n.inputs.at(1));
  const auto rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = layer ? n.attrInt("axis", -1) : 2;
  if (axis < 0) axis += rank;
  int64_t rows = 1, len = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? rows : len) *= x.shape[static_cast<size_t>(d)];
  // Which value of scale and B each element takes: per element of the row, one for all, or per channel.
  auto mode = [&](const Slot& s) -> uint32_t {
    return !layer ? 2 : elementCount(s.shape) == 1 && len != 1 ? 1 : 0;
  };
  const uint32_t b = rowParams(n, 18, 2, x.dtype, rows, len, 1);
  param(b, 7) = floatBits(n.attrFloat("epsilon", 1e-5f));
  param(b, 8) = off(n, n.inputs[1]);
  param(b, 9) = mode(scale);
  param(b, 10) = static_cast<uint32_t>(rank > 1 ? x.shape[1] : 1);
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    param(b, 11) = off(n, n.inputs[2]);
    param(b, 12) = 1;
    param(b, 17) = mode(slot(n, n.inputs[2]));
  }
  for (size_t k = 1; k <= 2; ++k) {
    if (k >= n.outputs.size() || n.outputs[k].empty()) continue;
    param(b, 12 + k) = off(n, n.outputs[k]);
    param(b, 15) |= 1u << (k - 1);
  }
  param(b, 16) = layer ? 1 : 0;
  dispatch(Kernel::kSoftmax, b, static_cast<uint64_t>(rows), n);
}

// Einsum through the strides of einsumSpec (the CPU kernel's own reading of the equation): one operand is a
// strided sum (transposes, diagonals, traces, sums); two float operands a strided batched product when the
// output's axes are the labels both have (batch), then the labels of one operand only (M), then the other's
// (N), each group contiguous in its operand, and the summed labels are laid out alike in both (K).
void Lowering::einsum(const Node& n) {
  std::vector<Shape> shapes;
  for (const std::string& in : n.inputs) shapes.push_back(slot(n, in).shape);
  const EinsumSpec spec = einsumSpec(n, shapes, g_.opset);
  std::vector<bool> in_output(spec.labels.size(), false);
  for (size_t l : spec.output) in_output[l] = true;
  if (n.inputs.size() == 1) {
    Shape kept, red;
    std::vector<int64_t> ks, rs;
    for (size_t l : spec.output) kept.push_back(spec.labels[l].size), ks.push_back(spec.labels[l].strides[0]);
    for (size_t l = 0; l < spec.labels.size(); ++l)
      if (!in_output[l]) red.push_back(spec.labels[l].size), rs.push_back(spec.labels[l].strides[0]);
    stridedReduce(n, NN_RED_SUM, n.inputs[0], std::move(kept), std::move(ks), std::move(red), std::move(rs));
    return;
  }
  if (n.inputs.size() != 2) refuse(g_, n, "Einsum of more than two operands");
  for (const std::string& in : n.inputs)
    if (!isFloatType(slot(n, in).dtype))
      refuse(g_, n, "an integer Einsum of two operands (the GPU's products are float)");
  const std::string equation = "equation '" + n.attrString("equation", "") + "': ";
  // Labels of one element play no part in the layout. The output's axes up to the last label both operands
  // have are batch axes (one an operand lacks has stride 0 there); the rest must be one operand's own labels
  // (the product's rows), then the other's (its columns).
  std::vector<size_t> axes;  // output labels of more than one element
  std::string order;  // per such axis: 'b' both operands have it, '0' or '1' the operand that alone has it
  for (size_t l : spec.output) {
    const EinsumSpec::Label& label = spec.labels[l];
    if (label.size == 1) continue;
    axes.push_back(l);
    order += label.present[0] && label.present[1] ? 'b' : label.present[0] ? '0' : '1';
  }
  std::vector<size_t> summed;
  for (size_t l = 0; l < spec.labels.size(); ++l) {
    if (in_output[l] || spec.labels[l].size == 1) continue;
    if (!spec.labels[l].present[0] || !spec.labels[l].present[1])
      refuse(
          g_, n,
          equation + "a label summed within one operand (GPU products sum over labels both operands have)");
    summed.push_back(l);
  }
  const size_t lead = order.find_last_of('b') == std::string::npos ? 0 : order.find_last_of('b') + 1;
  const std::string rest = order.substr(lead);
  const size_t ia = rest.empty() ? 0 : static_cast<size_t>(rest[0] - '0'), ib = 1 - ia;
  const size_t switch_at = rest.find_first_not_of(static_cast<char>('0' + ia));
  if (switch_at != std::string::npos &&
      rest.find(static_cast<char>('0' + ia), switch_at) != std::string::npos)
    refuse(
        g_, n,
        equation + "the output's axes are not batch axes, then one operand's own labels, then the other's");
  std::vector<size_t> batch(axes.begin(), axes.begin() + static_cast<std::ptrdiff_t>(lead)), own[2];
  for (size_t k = lead; k < axes.size(); ++k) own[order[k] == '1' ? 1 : 0].push_back(axes[k]);
  // A group of labels as one axis of an operand: its size and stride, when the labels are contiguous there.
  auto merge = [&](const std::vector<size_t>& labels, size_t op, int64_t& size, int64_t& stride) {
    size = 1, stride = 0;
    for (size_t l : labels) size *= spec.labels[l].size;
    if (labels.empty() || size == 0) return true;
    stride = spec.labels[labels.back()].strides[op];
    for (size_t k = 0; k + 1 < labels.size(); ++k)
      if (spec.labels[labels[k]].strides[op] !=
          spec.labels[labels[k + 1]].strides[op] * spec.labels[labels[k + 1]].size)
        return false;
    return true;
  };
  Product p;
  p.a = n.inputs[ia];
  p.b = n.inputs[ib];
  if (!merge(own[ia], ia, p.M, p.sam) || !merge(own[ib], ib, p.N, p.sbn))
    refuse(g_, n, equation + "an operand's output labels are not contiguous in it");
  bool laid_out = false;
  for (size_t by : {ia, ib}) {
    std::stable_sort(summed.begin(), summed.end(), [&](size_t x, size_t y) {
      return spec.labels[x].strides[by] > spec.labels[y].strides[by];
    });
    int64_t k_b = 0;
    if (merge(summed, ia, p.K, p.sak) && merge(summed, ib, k_b, p.sbk)) {
      laid_out = true;
      break;
    }
  }
  if (!laid_out) refuse(g_, n, equation + "the summed labels are not laid out alike in both operands");
  for (size_t l : batch) {
    p.batch.push_back(spec.labels[l].size);
    p.a_batch_st.push_back(spec.labels[l].strides[ia]);
    p.b_batch_st.push_back(spec.labels[l].strides[ib]);
  }
  product(n, p, false);
}

void Lowering::fusedChain(const Node& tip, const ValueTypes& info) {
  const std::vector<const Node*>& chain = chains_.at(&tip);
  std::vector<std::string> inputs;               // external values, register = index
  std::map<std::string, uint32_t> internal;      // the previous operation's result -> operand kFusedInputs
  std::vector<std::array<uint32_t, 6>> program;  // op, a, b, c, type, alpha bits
  auto reg = [&](const std::string& v) -> uint32_t {
    if (v.empty()) return 255;
    if (auto it = internal.find(broadcastSource(v)); it != internal.end()) return it->second;
    auto at = std::find(inputs.begin(), inputs.end(), v);
    if (at != inputs.end()) return static_cast<uint32_t>(at - inputs.begin());
    inputs.push_back(v);
    return static_cast<uint32_t>(inputs.size() - 1);
  };
  for (const Node* m : chain) {
    const uint32_t code = fusableOp(*m, g_.opset).first;
    std::array<uint32_t, 6> ins{code, 255, 255, 255, static_cast<uint32_t>(info.at(m->outputs[0]).first), 0};
    for (size_t k = 0; k < m->inputs.size() && k < 3; ++k) ins[1 + k] = reg(m->inputs[k]);
    if (m->op_type == "LeakyRelu") ins[5] = floatBits(m->attrFloat("alpha", 0.01f));
    program.push_back(ins);
    internal.clear();  // a chain: only the next operation reads this one's result
    internal[m->outputs[0]] = static_cast<uint32_t>(kFusedInputs);
  }
  fusedProgram(tip, inputs, program);
}

void Lowering::fusedProgram(const Node& tip, const std::vector<std::string>& inputs,
                            const std::vector<std::array<uint32_t, 6>>& program) {
  const Slot& out = slot(tip, tip.outputs[0]);
  if (inputs.size() > kFusedInputs || program.size() > 16)
    refuse(g_, tip, "a fused chain beyond 8 inputs or 16 operations");
  Shape dims = out.shape;
  std::vector<std::vector<int64_t>> strides{rowStrides(dims)};
  std::vector<Operand> operands;
  for (const std::string& v : inputs) {
    operands.push_back(operand(tip, v, dims));
    strides.push_back(operands.back().strides);
  }
  collapseAxes(dims, strides);
  if (dims.size() > NN_MAX_RANK) refuse(g_, tip, "more than 6 axes after merging");
  const uint32_t b = newParams(75 + 6 * 16);
  param(b, 0) = static_cast<uint32_t>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) param(b, 1 + d) = static_cast<uint32_t>(dims[d]);
  param(b, 7) = off(tip, tip.outputs[0]);
  param(b, 8) = static_cast<uint32_t>(out.dtype);
  param(b, 9) = static_cast<uint32_t>(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    param(b, 10 + 8 * k) = operands[k].offset;
    param(b, 11 + 8 * k) = static_cast<uint32_t>(operands[k].dtype);
    for (size_t d = 0; d < dims.size(); ++d)
      param(b, 12 + 8 * k + d) = static_cast<uint32_t>(strides[k + 1][d]);
  }
  param(b, 74) = static_cast<uint32_t>(program.size());
  for (size_t i = 0; i < program.size(); ++i)
    for (size_t w = 0; w < 6; ++w) param(b, 75 + 6 * i + w) = program[i][w];
  dispatch(Kernel::kFused, b, static_cast<uint64_t>(elementCount(out.shape)), tip);
}

void Lowering::lower(const Node& n, const ValueTypes& info) {
  for (const auto* list : {&n.inputs, &n.outputs})
    for (const std::string& name : *list)
      if (!name.empty() && !gpuType(info.at(name).first))
        refuse(g_, n, "'" + name + "' is " + dtypeName(info.at(name).first) + ", not a type the GPU holds");
  const std::string& op = n.op_type;
  if (chains_.count(&n)) {
    fusedChain(n, info);
  } else if (const UnaryOp* u = findIn(kUnary, op)) {
    float alpha = 0;
    if (op == "LeakyRelu") alpha = n.attrFloat("alpha", 0.01f);
    const std::string ins[1] = {n.inputs.at(0)};
    eltwise(n, u->code, ins, alpha);
  } else if (const UnaryOp* b = findIn(kBinary, op)) {
    const std::string ins[2] = {n.inputs.at(0), n.inputs.at(1)};
    if (op == "Pow" && !isFloatType(info.at(ins[0]).first) &&
        isFloatType(info.at(ins[1]).first))  // (an input may be a view)
      refuse(g_, n, "an integer base with a float exponent");
    eltwise(n, b->code, ins);
  } else if (op == "Where") {
    const std::string ins[3] = {n.inputs.at(0), n.inputs.at(1), n.inputs.at(2)};
    eltwise(n, NN_WHERE, ins);
  } else if (op == "Clip") {
    clip(n);
  } else if (mapOps().count(op)) {
    mapped(n, info);
  } else if (op == "Gather") {
    gather(n, info);
  } else if (auto r = reduceOps().find(op); r != reduceOps().end()) {
    reduce(n, r->second);
  } else if (op == "Softmax") {
    softmax(n);
  } else if (op == "MatMul" || op == "Gemm") {
    gemm(n, op == "Gemm");
  } else if (op == "Conv") {
    conv(n);
  } else if (op == "MaxPool" || op == "AveragePool" || op == "ConvTranspose") {
    window(n);
  } else if (op == "GridSample") {
    gridSample(n);
  } else if (op == "Resize") {
    resize(n, info);
  } else if (op == "BatchNormalization") {
    batchNorm(n);
  } else if (op == "Max" || op == "Min") {
    extremum(n, info);
  } else if (op == "LayerNormalization" || op == "InstanceNormalization") {
    normalise(n);
  } else if (op == "Einsum") {
    einsum(n);
  } else {
    refuse(g_, n, "no Vulkan kernel for " + op);
  }
}

}  // namespace sf::nn::vulkan
