// The Vulkan executor's planning passes (vulkan_plan.h): from a graph and one set of inputs to the plan's
// dispatches and the places of its values in the arena.
#include "neural/vulkan_plan.h"

#include <algorithm>
#include <functional>

#include "core/error.h"
#include "neural/cpu_ops.h"

namespace sf::nn::vulkan {
namespace {

// Whether a map (1 + (source << 28 | index) per element, see Lowering::computeMaps) reads one source as a
// strided view over `shape`: index = base + sum_d coord_d stride_d with every stride >= 0.
bool affineView(const std::vector<int64_t>& map, const Shape& shape, int64_t& base,
                std::vector<int64_t>& strides) {
  const size_t count = static_cast<size_t>(elementCount(shape));
  if (count == 0 || map.size() != count) return false;
  constexpr int64_t kIndexMask = (int64_t{1} << 28) - 1;
  auto index = [&](size_t e) -> int64_t {
    const int64_t m = map[e];
    return m <= 0 || ((m - 1) >> 28) != 0 ? -1 : (m - 1) & kIndexMask;  // source 0 only
  };
  base = index(0);
  if (base < 0) return false;
  const std::vector<int64_t> rows = rowStrides(shape);
  strides.assign(shape.size(), 0);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] <= 1) continue;
    const int64_t at = index(static_cast<size_t>(rows[d]));
    if (at < base) return false;
    strides[d] = at - base;
  }
  std::vector<int64_t> coord(shape.size(), 0);
  int64_t expect = base;
  for (size_t e = 0; e < count; ++e) {
    if (index(e) != expect) return false;
    for (size_t d = shape.size(); d-- > 0;) {  // the next coordinate, last axis fastest
      if (++coord[d] < shape[d]) {
        expect += strides[d];
        break;
      }
      expect -= strides[d] * (shape[d] - 1);
      coord[d] = 0;
    }
  }
  return true;
}

// Whether `reader` (lowered through a gather map) reads `v` as one of its data inputs.
bool readsAsData(const Node& reader, const std::string& v) {
  const int data = mapDataInputs(reader);
  for (size_t k = 0; k < reader.inputs.size(); ++k)
    if (isDataInput(data, k) && reader.inputs[k] == v) return true;
  return false;
}

// The operators whose readers may read an input through a strided view (Lowering::operand).
bool elementwise(const Node& c) {
  return findIn(kUnary, c.op_type) || findIn(kBinary, c.op_type) || c.op_type == "Where" ||
         c.op_type == "Clip" || c.op_type == "Max" || c.op_type == "Min";
}

// A map that copies its one source whole and in order (a Slice of everything, a Concat with empty parts) is
// an alias of it: true when map node `p` is one, whose output (and the aliases of it) then share the source's
// storage.
bool aliasWholeCopy(PlanState& st, const Node& p) {
  if (p.outputs.size() != 1 || p.outputs[0].empty()) return false;
  const std::string& out = p.outputs[0];
  const auto* m = st.low.composedMap(p, 0, st.info);
  if (!m || m->sources.size() != 1 || st.info.at(m->sources[0]).first != st.info.at(out).first ||
      elementCount(st.info.at(m->sources[0]).second) != elementCount(st.info.at(out).second))
    return false;
  bool identity = !m->entries.empty();
  for (size_t e = 0; e < m->entries.size() && identity; ++e)
    identity = m->entries[e] == static_cast<int64_t>(e) + 1;
  if (!identity) return false;
  const std::string to = st.rootOf(m->sources[0]);
  for (auto& [alias, r] : st.root)  // aliases of it now share the source's storage too
    if (r == out) r = to;
  st.root[out] = to;
  return true;
}

// The strided views that map node `p`'s outputs become, keyed by the names its readers read (the output or
// its aliases), each read only by elementwise GPU nodes; empty unless every output (Split has several) can.
std::vector<std::pair<std::string, Lowering::View>> stridedViews(PlanState& st, const Node& p,
                                                                 const std::set<std::string>& outputs) {
  std::vector<std::pair<std::string, Lowering::View>> found;
  bool ok = true;
  for (size_t o = 0; o < p.outputs.size() && ok; ++o) {
    if (p.outputs[o].empty()) continue;
    std::vector<std::string> names;
    std::function<void(const std::string&)> visit = [&](const std::string& v) {
      if (outputs.count(v) || st.static_names.count(v)) ok = false;
      bool direct = false;
      for (const Node* c : st.consumers[v]) {
        if (!ok) return;
        if (st.on_gpu.count(c)) {
          if (!elementwise(*c)) ok = false;
          direct = true;
        } else if (st.root.count(c->outputs[0])) {
          visit(c->outputs[0]);  // an alias of it
        } else {
          ok = false;
        }
      }
      if (direct) names.push_back(v);
    };
    visit(p.outputs[o]);
    const auto* m = ok && !names.empty() ? st.low.composedMap(p, o, st.info) : nullptr;
    if (!m || m->sources.size() != 1 || st.info.at(m->sources[0]).first != st.info.at(p.outputs[o]).first) {
      ok = false;
      break;
    }
    for (const std::string& v : names) {
      Lowering::View view;
      view.source = m->sources[0];  // stored: the maps composed into p are not
      view.shape = st.info.at(v).second;
      if (!affineView(m->entries, view.shape, view.base, view.strides)) {
        ok = false;
        break;
      }
      found.emplace_back(v, std::move(view));
    }
  }
  if (!ok) found.clear();
  return found;
}

// The stored values a node input `in` stands for: a view's source, an alias's root, or the inputs of the
// composed move that would have written it (recursively).
void storedValues(const PlanState& st, const std::string& in, std::vector<std::string>& out) {
  if (in.empty()) return;
  if (auto v = st.low.views_.find(in); v != st.low.views_.end()) {  // a strided view of its source
    storedValues(st, v->second.source, out);
    return;
  }
  const std::string r = st.rootOf(in);
  auto a = st.low.absorbed_.find(r);
  if (a == st.low.absorbed_.end()) {
    out.push_back(r);
    return;
  }
  for (const std::string& x : a->second->inputs) storedValues(st, x, out);
}

void place(PlanState& st, const std::string& name, uint64_t at, bool is_static) {
  const auto& [dtype, shape] = st.info.at(name);
  st.plan.slots[name] = {at, dtype, shape, is_static};
}

// Aliases whose root has a slot by now take its place, with their own type and shape.
void placeAliases(PlanState& st) {
  for (const auto& [alias, r] : st.root) {
    auto it = st.plan.slots.find(r);
    if (it == st.plan.slots.end() || st.plan.slots.count(alias)) continue;
    Slot s = it->second;
    s.dtype = st.info.at(alias).first;
    s.shape = st.info.at(alias).second;
    st.plan.slots[alias] = s;
  }
}

// Node `n` of wave `wave`: its outputs placed, its dispatches lowered, its span in the plan.
void placeAndLower(PlanState& st, const Node& n, size_t wave) {
  Plan& plan = st.plan;
  for (const std::string& o : n.outputs)
    if (!o.empty())
      place(st, o, st.low.allocate(static_cast<uint64_t>(elementCount(st.info.at(o).second))), false);
  placeAliases(st);
  const size_t first = plan.dispatches.size();
  st.low.lower(n, st.info);
  if (auto chain = st.low.chains_.find(&n); chain != st.low.chains_.end()) {
    std::string ops;
    for (const Node* m : chain->second) ops += (ops.empty() ? "" : "+") + m->op_type;
    plan.nodes.push_back({"Fused", n.name + " (" + ops + ")", first, plan.dispatches.size(), wave});
  } else {
    plan.nodes.push_back({n.op_type, n.name, first, plan.dispatches.size(), wave});
  }
}

// After wave `wave` (the nodes at run positions [begin, end)): the space of the values it read last, and of
// outputs nothing reads, is given back (not the graph's inputs and outputs, nor constants).
void releaseDead(PlanState& st, size_t begin, size_t end, size_t wave, const std::set<std::string>& keep,
                 const std::set<std::string>& graph_inputs) {
  std::set<std::string> dead;
  for (size_t k = begin; k < end; ++k) {
    const size_t node = st.waves.order[k];
    for (const std::string& r : st.node_reads[node]) {
      auto lu = st.last_use.find(r);
      if (lu != st.last_use.end() && lu->second == wave) dead.insert(r);
    }
    for (const std::string& o : st.gpu_nodes[node]->outputs)
      if (!o.empty() && !st.last_use.count(o)) dead.insert(o);  // read by nothing
  }
  for (const std::string& r : dead) {
    if (keep.count(r) || graph_inputs.count(r)) continue;
    const Slot& sl = st.plan.slots.at(r);
    if (sl.is_static) continue;
    st.low.release(sl.offset, static_cast<uint64_t>(elementCount(sl.shape)));
  }
}

}  // namespace

PlanState::PlanState(const Graph& graph, Plan& p) : g(graph), plan(p), low(graph, p) {
  low.root_ = [this](const std::string& name) { return rootOf(name); };
}

std::string PlanState::rootOf(const std::string& name) const {
  auto it = root.find(name);
  return it == root.end() ? name : it->second;
}

bool PlanState::isMapNode(const Node& n) const {
  return mapOps().count(n.op_type) ||
         (n.op_type == "Gather" && n.inputs.size() > 1 && static_names.count(n.inputs[1])) ||
         (n.op_type == "Resize" && n.attrString("mode", "nearest") == "nearest");
}

void foldStatics(const CpuExecutor& cpu, const TensorMap& inputs, PlanState& st) {
  const Graph& g = st.g;
  Plan& plan = st.plan;
  st.static_names = Lowering::staticValues(g, plan.keyed);
  for (const auto& [name, t] : inputs) {
    st.low.sizes_[name] = t.numel();
    if (plan.keyed.count(name)) plan.statics[name] = plan.key_values[name] = t;
  }
  // The dry run: every value's type and shape; the static ones are kept.
  for (const auto& [name, t] : g.initializers) st.info[name] = {t.dtype, t.shape};
  for (const auto& [name, t] : inputs) st.info[name] = {t.dtype, t.shape};
  for (const auto& [name, t] : g.initializers) plan.statics[name] = t;
  const ValueObserver observe = [&](const std::string& name, const Tensor& t) {
    st.info[name] = {t.dtype, t.shape};
    if (st.static_names.count(name)) plan.statics[name] = t;
  };
  cpu.run(inputs, nullptr, &observe);
  for (const auto& [name, v] : st.info) st.low.shapes_[name] = v.second;
}

void linkValues(PlanState& st) {
  for (const Node& n : st.g.nodes) {
    for (const std::string& in : n.inputs) ++st.readers[in];
    for (const std::string& o : n.outputs) st.producer[o] = &n;
  }
  for (const ValueInfo& v : st.g.outputs) ++st.readers[v.name];
  for (const Node& n : st.g.nodes)
    for (const std::string& in : n.inputs)
      if (!in.empty()) st.consumers[in].push_back(&n);
}

// An activation right after a matrix product (its only reader) is done in the product's epilogue: the
// activation node then aliases the product's output.
void fuseEpilogues(PlanState& st) {
  for (const Node& n : st.g.nodes) {
    const uint32_t act = n.op_type == "Relu" ? 1 : n.op_type == "Sigmoid" ? 2 : n.op_type == "Tanh" ? 3 : 0;
    if (!act || n.inputs.empty() || st.static_names.count(n.outputs[0])) continue;
    auto p = st.producer.find(n.inputs[0]);
    if (p == st.producer.end() || (p->second->op_type != "Gemm" && p->second->op_type != "MatMul") ||
        st.readers[n.inputs[0]] != 1)
      continue;
    const DType in_type = st.info.at(n.inputs[0]).first;
    if (!isFloatType(in_type) || st.info.at(n.outputs[0]).first != in_type) continue;
    st.low.acts_[n.inputs[0]] = act;
    st.epilogues.insert(&n);
  }
}

// Aliases resolve to the value whose storage they share.
void findAliases(PlanState& st) {
  for (const Node& n : st.g.nodes) {
    bool is_static = true;
    for (const std::string& o : n.outputs)
      if (!o.empty() && !st.static_names.count(o)) is_static = false;
    if (is_static) continue;
    if (staticOnlyOps().count(n.op_type)) {
      st.low.keyOrRefuse(n, n.inputs);
      refuse(st.g, n, n.op_type + " computed from the model's inputs (only constant ones are folded)");
    }
    // (a Cast to the type its input already has changes nothing: an alias too)
    const bool same_cast = n.op_type == "Cast" && n.inputs.size() == 1 &&
                           st.info.at(n.inputs[0]).first == st.info.at(n.outputs[0]).first;
    if (aliasOps().count(n.op_type) || st.epilogues.count(&n) || same_cast) {
      st.root[n.outputs[0]] = st.rootOf(n.inputs.at(0));
      continue;
    }
    st.gpu_nodes.push_back(&n);
  }
  st.on_gpu = std::set<const Node*>(st.gpu_nodes.begin(), st.gpu_nodes.end());
}

// Chains of data movement compose: a map node whose output only one map node reads (directly or through
// aliases) is not run; its reader copies from its sources through the composed map.
void composeMoves(PlanState& st) {
  for (const Node* p : st.gpu_nodes) {
    if (!st.isMapNode(*p) || p->op_type == "Pad" || p->outputs.size() != 1) continue;
    std::string v = p->outputs[0];
    // Several direct readers, every one a map node reading it as data (and no graph output): each composes
    // it, reading its sources through the composed map, and it is not run (the six column gathers of a
    // HexPlane's coordinates from one Concat: a wave fewer).
    const std::vector<const Node*>& direct = st.consumers[v];
    if (direct.size() > 1 && st.readers[v] == static_cast<int>(direct.size()) &&
        std::all_of(direct.begin(), direct.end(), [&](const Node* c) {
          return st.on_gpu.count(c) && st.isMapNode(*c) && readsAsData(*c, v);
        })) {
      st.low.absorbed_[v] = p;
      continue;
    }
    // Follow the single reader through aliases.
    const Node* reader = nullptr;
    while (st.readers[v] == 1 && st.consumers[v].size() == 1) {
      const Node* c = st.consumers[v][0];
      if (st.on_gpu.count(c)) {
        reader = c;
        break;
      }
      if (st.root.count(c->outputs[0]) == 0) break;  // static or not an alias
      v = c->outputs[0];
    }
    if (!reader || !st.isMapNode(*reader) || !readsAsData(*reader, v)) continue;
    st.low.absorbed_[p->outputs[0]] = p;
  }
  const auto& absorbed = st.low.absorbed_;
  std::erase_if(st.gpu_nodes, [&](const Node* n) {
    return n->outputs.size() == 1 && absorbed.count(n->outputs[0]) && absorbed.at(n->outputs[0]) == n;
  });
}

// Strided views: a map node of one source whose map is affine in the output's coordinates (Transpose, Slice,
// Expand, Squeeze of a copy, ...) and whose every reader (through aliases) is an elementwise node is not run;
// the readers address its source with the view's strides (Lowering::operand).
void findViews(PlanState& st) {
  std::set<std::string> outputs;
  for (const ValueInfo& v : st.g.outputs) outputs.insert(v.name);
  std::set<const Node*> viewed;
  for (const Node* p : st.gpu_nodes) {
    if (!st.isMapNode(*p) || p->op_type == "Pad" || p->op_type == "Resize" || !st.on_gpu.count(p)) continue;
    if (aliasWholeCopy(st, *p)) {
      viewed.insert(p);
      continue;
    }
    std::vector<std::pair<std::string, Lowering::View>> found = stridedViews(st, *p, outputs);
    if (found.empty()) continue;
    for (auto& [v, view] : found) st.low.views_[v] = std::move(view);
    viewed.insert(p);
  }
  std::erase_if(st.gpu_nodes, [&](const Node* n) { return viewed.count(n) > 0; });
}

// Nodes nothing reads any more (their readers read through a view past them) are not run either.
void dropDeadNodes(PlanState& st) {
  for (bool changed = true; changed;) {
    changed = false;
    std::set<std::string> read;
    for (const ValueInfo& v : st.g.outputs) read.insert(st.rootOf(v.name));
    std::function<void(const std::string&)> note = [&](const std::string& in) {
      if (in.empty()) return;
      if (auto v = st.low.views_.find(in); v != st.low.views_.end()) return note(v->second.source);
      const std::string r = st.rootOf(in);
      read.insert(r);
      if (auto a = st.low.absorbed_.find(r); a != st.low.absorbed_.end())
        for (const std::string& x : a->second->inputs) note(x);
    };
    for (const Node* n : st.gpu_nodes) {
      if (st.isMapNode(*n) && n->op_type != "Pad") {  // a map reads only the sources its elements come from
        for (size_t o = 0; o < n->outputs.size(); ++o) {
          if (n->outputs[o].empty()) continue;
          const auto* m = st.low.composedMap(*n, o, st.info);
          if (!m) {
            for (const std::string& in : n->inputs) note(in);
            break;
          }
          for (const std::string& src : m->sources) note(src);
        }
        for (size_t k = 0; k < n->inputs.size(); ++k)  // and its static operands (indices, shapes)
          if (st.static_names.count(n->inputs[k])) note(n->inputs[k]);
        continue;
      }
      for (const std::string& in : n->inputs) note(in);
    }
    const size_t before = st.gpu_nodes.size();
    std::erase_if(st.gpu_nodes, [&](const Node* n) {
      for (const std::string& o : n->outputs)
        if (!o.empty() && read.count(o)) return false;
      return true;
    });
    changed = st.gpu_nodes.size() != before;
  }
}

// Chains of elementwise float operators fuse: a node joins the chain that computes one of its inputs when
// that input has no other reader, is not an output, and has the node's own shape or one that broadcasts
// to it (the chain then evaluates it per element of the larger shape; every value is the same).
void fuseChains(PlanState& st) {
  std::map<std::string, size_t> view_names;  // source -> the names it is read through as a view
  for (const auto& [name, view] : st.low.views_) ++view_names[view.source];
  std::map<std::string, size_t> chain_of;  // value computed by a chain (its last node's output) -> chain
  std::vector<std::vector<const Node*>> chains;
  std::vector<std::set<std::string>> externals;
  for (const Node* n : st.gpu_nodes) {
    const auto [code, arity] = fusableOp(*n, st.g.opset);
    (void)code;
    bool is_float = true;
    for (const auto* list : {&n->inputs, &n->outputs})
      for (const std::string& v : *list)
        if (!v.empty() && !isFloatType(st.info.at(v).first)) is_float = false;
    if (arity == 0 || !is_float || n->outputs.size() != 1 || n->inputs.empty()) continue;
    const Shape& shape = st.info.at(n->outputs[0]).second;
    size_t joined = chains.size();
    for (const std::string& read : n->inputs) {
      // A broadcast view of a chain's value reads it, when the view is its only reader under any name.
      const std::string in = st.low.broadcastSource(read);
      if (in != read && (st.readers[read] != 1 || view_names[in] != 1)) continue;
      auto c = chain_of.find(in);
      // One reader (graph outputs count as readers): this node, which reads it once.
      // (an input of a smaller shape that broadcasts to this node's is recomputed per element of it)
      if (in.empty() || c == chain_of.end() || st.readers[in] != 1 ||
          !broadcastsTo(st.info.at(in).second, shape))
        continue;
      std::set<std::string> ext = externals[c->second];
      for (const std::string& other : n->inputs)
        if (!other.empty() && other != read) ext.insert(other);
      if (ext.size() > kFusedInputs || chains[c->second].size() >= 16) continue;
      joined = c->second;
      externals[joined] = ext;
      chain_of.erase(c);
      break;
    }
    if (joined == chains.size()) {
      chains.emplace_back();
      externals.emplace_back();
      for (const std::string& in : n->inputs)
        if (!in.empty()) externals.back().insert(in);
    }
    chains[joined].push_back(n);
    chain_of[n->outputs[0]] = joined;
  }
  std::set<const Node*> inside;
  for (const auto& chain : chains) {
    if (chain.size() < 2) continue;
    st.low.chains_[chain.back()] = chain;
    inside.insert(chain.begin(), chain.end() - 1);
  }
  std::erase_if(st.gpu_nodes, [&](const Node* n) { return inside.count(n) > 0; });
}

// The stored values a node reads: absorbed nodes' outputs stand for their own inputs, a fused chain's last
// node reads the chain's inputs.
void findStoredReads(PlanState& st) {
  st.node_reads.assign(st.gpu_nodes.size(), {});
  for (size_t k = 0; k < st.gpu_nodes.size(); ++k) {
    auto chain = st.low.chains_.find(st.gpu_nodes[k]);
    const Node& n = *st.gpu_nodes[k];
    std::vector<std::string>& reads = st.node_reads[k];
    if (chain == st.low.chains_.end() && st.isMapNode(n) &&
        n.op_type != "Pad") {  // the sources its elements come from
      bool composed = true;
      for (size_t o = 0; o < n.outputs.size() && composed; ++o) {
        if (n.outputs[o].empty()) continue;
        const auto* m = st.low.composedMap(n, o, st.info);
        composed = m != nullptr;
        if (m)
          for (const std::string& src : m->sources) storedValues(st, src, reads);
      }
      for (const std::string& in : n.inputs)
        if (!composed || st.static_names.count(in)) storedValues(st, in, reads);
      continue;
    }
    if (chain == st.low.chains_.end()) {
      for (const std::string& in : n.inputs) storedValues(st, in, reads);
      continue;
    }
    std::set<std::string> computed;
    for (const Node* m : chain->second) {
      for (const std::string& in : m->inputs)
        if (!in.empty() && !computed.count(st.low.broadcastSource(in))) storedValues(st, in, reads);
      computed.insert(m->outputs[0]);
    }
  }
}

// A node runs one wave after the latest wave that produced one of its inputs, so the nodes of a wave are
// independent and need no barrier between them (one barrier per wave, not per node).
Waves assignWaves(std::span<const Node* const> nodes, const std::vector<std::vector<std::string>>& reads) {
  Waves waves;
  std::map<std::string, size_t> produced_in;  // stored value -> wave
  waves.of.assign(nodes.size(), 0);
  for (size_t k = 0; k < nodes.size(); ++k) {
    size_t w = 0;
    for (const std::string& in : reads[k])
      if (auto it = produced_in.find(in); it != produced_in.end()) w = std::max(w, it->second + 1);
    waves.of[k] = w;
    waves.count = std::max(waves.count, w + 1);
    for (const std::string& o : nodes[k]->outputs)
      if (!o.empty()) produced_in[o] = w;
  }
  waves.order.resize(nodes.size());
  for (size_t k = 0; k < waves.order.size(); ++k) waves.order[k] = k;
  std::stable_sort(waves.order.begin(), waves.order.end(),
                   [&](size_t x, size_t y) { return waves.of[x] < waves.of[y]; });
  return waves;
}

// Liveness by wave: the last wave reading each stored value (through its aliases).
std::map<std::string, size_t> lastUses(const std::vector<std::vector<std::string>>& reads,
                                       const std::vector<size_t>& wave_of) {
  std::map<std::string, size_t> last_use;
  for (size_t k = 0; k < reads.size(); ++k)
    for (const std::string& in : reads[k]) last_use[in] = std::max(last_use[in], wave_of[k]);
  return last_use;
}

void allocate(PlanState& st) {
  const Graph& g = st.g;
  Plan& plan = st.plan;
  std::set<std::string> keep;  // outputs live to the end
  for (const ValueInfo& v : g.outputs) keep.insert(st.rootOf(v.name));
  // Static values read by GPU nodes (or returned as outputs) are constants of the plan.
  std::set<std::string> needed;
  for (const auto& list : st.node_reads) needed.insert(list.begin(), list.end());
  for (const std::string& name : keep) needed.insert(name);
  for (const std::string& name : needed) {
    auto it = plan.statics.find(name);
    if (it == plan.statics.end()) continue;
    if (!gpuType(it->second.dtype)) continue;  // refused by the node that reads it
    place(st, name, st.low.constant(toWords(it->second, g.path + ": constant '" + name + "'")), true);
  }
  // Inputs (those not keyed: a keyed input is a constant of the plan).
  for (const ValueInfo& v : g.inputs) {
    if (plan.keyed.count(v.name)) continue;
    const uint64_t words = static_cast<uint64_t>(elementCount(st.info.at(v.name).second));
    place(st, v.name, st.low.allocate(words), false);
    plan.input_words += words;
  }
  placeAliases(st);
  std::set<std::string> graph_inputs;
  for (const ValueInfo& v : g.inputs) graph_inputs.insert(v.name);
  // Space is given back at the end of the wave that last reads it, so a later wave may write there (after
  // the barrier) but no node of the same wave can.
  size_t at = 0;
  for (size_t w = 0; w < st.waves.count; ++w) {
    const size_t wave_begin = at;
    for (; at < st.waves.order.size() && st.waves.of[st.waves.order[at]] == w; ++at)
      placeAndLower(st, *st.gpu_nodes[st.waves.order[at]], w);
    releaseDead(st, wave_begin, at, w, keep, graph_inputs);
  }
  plan.waves = st.waves.count;
}

void finishPlan(PlanState& st) {
  const Graph& g = st.g;
  Plan& plan = st.plan;
  // Offsets are 32-bit words in the kernels: every value must end below 2^32 words (16 GiB).
  if (st.low.high() > 0xFFFFFFFFull)
    throw Error(g.path + ": the plan needs " + std::to_string(st.low.high() * 4 >> 20) +
                " MiB of tensors; the Vulkan executor addresses 16 GiB");
  for (const ValueInfo& v : g.outputs) {
    if (!plan.slots.count(v.name) && !plan.statics.count(v.name))
      throw Error(g.path + ": output '" + v.name + "' has no place on the GPU");
    if (plan.slots.count(v.name))
      plan.output_words += static_cast<uint64_t>(elementCount(plan.slots.at(v.name).shape));
  }
  plan.arena_words = std::max<uint64_t>(st.low.high(), 64);
}

void buildPlanOnce(const CpuExecutor& cpu, Plan& plan, const TensorMap& inputs) {
  PlanState st(cpu.graph(), plan);
  foldStatics(cpu, inputs, st);
  linkValues(st);
  fuseEpilogues(st);
  findAliases(st);
  composeMoves(st);
  findViews(st);
  dropDeadNodes(st);
  fuseChains(st);
  findStoredReads(st);
  st.waves = assignWaves(st.gpu_nodes, st.node_reads);
  st.last_use = lastUses(st.node_reads, st.waves.of);
  allocate(st);
  finishPlan(st);
}

void buildPlan(const CpuExecutor& cpu, Plan& plan, const TensorMap& inputs) {
  std::set<std::string> keyed;
  while (true) {
    Plan attempt;
    attempt.key = plan.key;
    attempt.keyed = keyed;
    try {
      buildPlanOnce(cpu, attempt, inputs);
    } catch (const NeedsKey& k) {
      keyed.insert(k.inputs.begin(), k.inputs.end());
      continue;
    }
    plan = std::move(attempt);
    return;
  }
}

}  // namespace sf::nn::vulkan
