// The frame's cut kept from one frame to the next (lod/cut_state.h).
#include "lod/cut_state.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "core/parallel.h"
#include "core/parallel_sort.h"

namespace sf::lod {

namespace {

constexpr float kNear = 0.2f;  // the renderers' near cull (as lod/cut.cpp)
constexpr uint8_t kCutStateFlags = kCutIn | kCutRefined | kCutInside | kCutHeld;

// Whether a box lies wholly inside the view widened by margin_px - 1 and in front of z = 0.21: then every box
// inside it passes boxVisible, with a pixel (and 0.01 in depth) to spare for rounding.
bool boxInside(Vec3 lo, Vec3 hi, const Camera& cam, float margin_px) {
  const float m = margin_px - 1.0f;
  const float left = -m, right = static_cast<float>(cam.width) + m;
  const float top = -m, bottom = static_cast<float>(cam.height) + m;
  for (int i = 0; i < 8; ++i) {
    const Vec3 c = transformPoint(cam.world_to_camera,
                                  Vec3{i & 1 ? hi.x : lo.x, i & 2 ? hi.y : lo.y, i & 4 ? hi.z : lo.z});
    if (c.z < kNear + 0.01f || cam.fx * c.x + (cam.cx - left) * c.z < 0 ||
        cam.fx * c.x + (cam.cx - right) * c.z > 0 || cam.fy * c.y + (cam.cy - top) * c.z < 0 ||
        cam.fy * c.y + (cam.cy - bottom) * c.z > 0)
      return false;
  }
  return true;
}

// A node's place in the refinement order: larger error first, then the lower target, then the lower id.
using Key = CutKey;

bool higher(const Key& a, const Key& b) {
  if (a.e != b.e) return a.e > b.e;
  if (a.t != b.t) return a.t < b.t;
  return a.id < b.id;
}

// A queue of keys taken in the order First (First(a, b): a is taken before b): a heap of the keys pushed,
// beside a list sorted in that order (taken from `next`) whose keys next in line are known in advance. Its
// top is the first of the two tops: the order a heap of them all would give.
template <class First>
struct KeyQueue {
  struct Later {
    bool operator()(const Key& a, const Key& b) const { return First{}(b, a); }
  };
  std::vector<Key> heap, sorted;
  size_t next = 0;
  uint32_t list = 0;        // counts the lists sorted in (what Ahead measured belongs to one)
  bool top_sorted = false;  // whether top() was the list's

  const Key* top() {
    if (next < sorted.size() && (heap.empty() || First{}(sorted[next], heap.front()))) {
      top_sorted = true;
      return &sorted[next];
    }
    top_sorted = false;
    return heap.empty() ? nullptr : &heap.front();
  }
  void pop() {
    if (top_sorted) {
      ++next;
    } else {
      std::pop_heap(heap.begin(), heap.end(), Later{});
      heap.pop_back();
    }
  }
  void push(const Key& k) {
    heap.push_back(k);
    std::push_heap(heap.begin(), heap.end(), Later{});
  }
  // `more` and the keys of the list not yet taken, sorted into the list.
  void sortIn(std::vector<Key>& more, std::vector<Key>& scratch) {
    more.insert(more.end(), sorted.begin() + static_cast<std::ptrdiff_t>(next), sorted.end());
    parallelSort(more, First{}, scratch);
    sorted.swap(more);
    next = 0;
    ++list;
  }
};
struct Higher {
  bool operator()(const Key& a, const Key& b) const { return higher(a, b); }
};
struct Lower {
  bool operator()(const Key& a, const Key& b) const { return higher(b, a); }
};

// What is worked out ahead for the keys of a KeyQueue's list, in parallel blocks doubling from 4,096 to
// 65,536 keys (at most one block's work is spent past where the loop taking them stops).
template <class Record>
struct Ahead {
  std::vector<Record> records;  // for the keys [begin, end) of the queue's list number `list`
  size_t begin = 0, end = 0, block = 4096;
  uint32_t list = 0;

  // The record of the list's key i; measure(part, i, record, first) fills one, for parts of 1,024 keys
  // (first: the part's first).
  template <class First, class Measure>
  const Record& at(const KeyQueue<First>& q, size_t i, const Measure& measure) {
    if (q.list != list) list = q.list, begin = end = 0, block = 4096;
    if (i < begin || i >= end) {
      const size_t size = q.sorted.size();
      begin = i, end = std::min(size, i + block);
      block = std::min<size_t>(block * 2, 65536);
      constexpr size_t kPart = 1024;
      const size_t count = end - begin;
      records.assign(count, {});
      parallelFor((count + kPart - 1) / kPart, [&](size_t p) {
        for (size_t k = p * kPart; k < std::min(count, (p + 1) * kPart); ++k)
          measure(p, begin + k, records[k], k == p * kPart);
      });
    }
    return records[i - begin];
  }
};

class Updater {
 public:
  Updater(std::span<const CutUpdateTarget> targets, const CutOptions& o, bool fade,
          std::vector<std::vector<std::pair<float, uint32_t>>>* wanted)
      : t_(targets),
        o_(o),
        fade_(fade),
        wanted_(wanted),
        added_(targets.size()),
        f_all_(targets[0].state->buffers.frontier),
        m_all_(targets[0].state->buffers.refined) {
    f_all_.clear(), m_all_.clear();
  }

  void run();

 private:
  CutState& st(uint32_t t) const { return *t_[t].state; }
  const Hierarchy& hier(uint32_t t) const { return *t_[t].hierarchy; }
  const Camera& cam(uint32_t t) const { return t_[t].camera; }

  NodeRef parentRef(uint32_t t, NodeRef r, uint32_t pid) const { return st(t).parentRef(hier(t), r, pid); }
  void boxOf(uint32_t t, const Node& parent, NodeRef k, Vec3& lo, Vec3& hi) const {
    if (parent.flags & kChildrenAreChunks) {
      lo = hier(t).index.chunks[k.chunk].box_min, hi = hier(t).index.chunks[k.chunk].box_max;
    } else {
      const Node& n = nodeAt(hier(t), k);
      lo = n.box_min, hi = n.box_max;
    }
  }
  // Children of `ref` into kids, whether each is in view into in_view; true when one of them in view is a
  // chunk not in memory.
  bool viewChildren(uint32_t t, NodeRef ref, const Node& n, bool inside, std::vector<NodeRef>& kids,
                    std::vector<uint8_t>& in_view) const {
    kids.clear(), in_view.clear();
    childrenOf(hier(t), ref, kids);
    bool missing = false;
    for (NodeRef k : kids) {
      Vec3 lo, hi;
      boxOf(t, n, k, lo, hi);
      const bool v = inside || boxVisible(lo, hi, cam(t), o_.margin_px);
      in_view.push_back(v);
      if (v && (n.flags & kChildrenAreChunks) && t_[t].resident && !(*t_[t].resident)[k.chunk])
        missing = true;
    }
    return missing;
  }
  bool viewChildren(uint32_t t, NodeRef ref, const Node& n, bool inside) {
    return viewChildren(t, ref, n, inside, kids_, in_view_);
  }
  void recordWanted(uint32_t t, float e) {
    if (!wanted_) return;
    for (size_t i = 0; i < kids_.size(); ++i)
      if (in_view_[i] && !(*t_[t].resident)[kids_[i].chunk]) (*wanted_)[t].push_back({e, kids_[i].chunk});
  }

  void clearSubtree(uint32_t t, NodeRef ref) const;
  void pass(uint32_t t, bool include_root);
  // What measuring one stretch of a level of the kept cut found (pass: the stretches of a level run in
  // parallel, then are merged in order).
  using Item = CutItem;
  struct PassPart {
    std::vector<Item> next;  // the next level's nodes
    std::vector<Key> f, m;
    std::vector<CutEntry> added;
    uint64_t count = 0;
    int64_t zeros = 0;
    std::vector<NodeRef> kids;
    std::vector<uint8_t> in_view;
  };
  void measure(uint32_t t, const Item& it, PassPart& out) const;
  void addCut(uint32_t t, NodeRef ref, uint32_t id) {
    st(t).flags[id] |= kCutIn;
    added_[t].push_back({nodeAt(hier(t), ref).source_index, id, ref});
  }
  bool held(const Key& k);
  // The frontier's queue (its list while refining) with each listed node's children in view measured ahead
  // (into CutState::buffers.kids[part]), and the refined nodes' queue (its list while coarsening) with each
  // listed node's children and parent.
  struct KidsAhead {
    uint32_t part = 0, first = 0;
    uint16_t vis = 0;
    bool measured = false;  // else: its children are chunks, or it was not in the frontier then
  };
  struct NodeAhead {
    uint64_t source = 0;
    uint32_t first_kid = 0, kids = 0;  // its children's ids: first_kid + [0, kids)
    uint32_t parent = kNone;
    float parent_e = 0;
    NodeRef parent_ref;
    bool measured = false;  // else: its children are chunks
  };
  const Key* topF();
  const Key* topM();
  void sortF();
  void measureKids(const Key& k, KidsAhead& a, std::vector<CutKid>& out) const;
  // A child in view of a node being refined (`inside`: that node's box lies wholly inside the view): what
  // refine writes for it.
  CutKid kidOf(uint32_t t, NodeRef r, const Node& n, bool inside) const {
    return {n.source_index,
            r,
            st(t).idOf(r),
            screenError(n, cam(t)),
            inside || boxInside(n.box_min, n.box_max, cam(t), o_.margin_px),
            n.leaf()};
  }
  void measureNode(const Key& k, NodeAhead& a) const;
  const Key* maxF();
  const Key* minM();
  bool validF(const Key& k) const { return (st(k.t).flags[k.id] & (kCutIn | kCutHeld)) == kCutIn; }
  bool validM(const Key& k, const NodeAhead* a) {
    const CutState& s = st(k.t);
    if (!(s.flags[k.id] & kCutRefined)) return false;
    if (a) {
      for (uint32_t i = 0; i < a->kids; ++i)
        if (s.flags[a->first_kid + i] & kCutRefined) return false;
      return true;
    }
    kids_.clear();
    childrenOf(hier(k.t), k.ref, kids_);
    for (NodeRef c : kids_)
      if (s.flags[s.idOf(c)] & kCutRefined) return false;
    return true;
  }
  void coarsen(const Key& m, const NodeAhead* a);
  void refine(const Key& f, uint32_t vis, const KidsAhead* ahead);
  void greedyOrderCheck(uint64_t budget);
  void finish(uint32_t t);

  std::span<const CutUpdateTarget> t_;
  const CutOptions& o_;
  bool fade_;
  std::vector<std::vector<std::pair<float, uint32_t>>>* wanted_;
  std::vector<std::vector<CutEntry>> added_;
  uint64_t count_ = 0, ghosts_ = 0;
  int64_t zeros_ = 0;                // refined nodes with no child in view
  std::vector<Key>&f_all_, &m_all_;  // (the first target's CutState::buffers)
  std::vector<Key> refined_now_;     // nodes this update refined (greedyOrderCheck)
  KeyQueue<Higher> f_;
  Ahead<KidsAhead> f_ahead_;
  const KidsAhead* top_kids_ = nullptr;  // the top's, where topF found it measured
  KeyQueue<Lower> m_;
  Ahead<NodeAhead> m_ahead_;
  const NodeAhead* top_node_ = nullptr;  // the top's, where topM found it measured
  float lo_ = -std::numeric_limits<float>::infinity(), hi_ = std::numeric_limits<float>::infinity();
  int widened_lo_ = 0, widened_hi_ = 0;
  std::vector<NodeRef> kids_;
  std::vector<uint8_t> in_view_;
};

void Updater::clearSubtree(uint32_t t, NodeRef ref) const {
  CutState& s = st(t);
  std::vector<NodeRef> todo{ref}, kids;
  while (!todo.empty()) {
    const NodeRef r = todo.back();
    todo.pop_back();
    const uint32_t id = s.idOf(r);
    const uint8_t f = s.flags[id];
    s.flags[id] = static_cast<uint8_t>(f & ~kCutStateFlags);
    if (!(f & kCutRefined)) continue;
    const Node& n = nodeAt(hier(t), r);
    kids.clear();
    childrenOf(hier(t), r, kids);
    for (NodeRef k : kids)
      if (!(n.flags & kChildrenAreChunks) || !t_[t].resident || (*t_[t].resident)[k.chunk])
        todo.push_back(k);  // (an evicted chunk's flags were cleared when it left)
  }
}

// One node of the kept cut, or above it, measured for this target's camera: its error and view; a node of
// the cut joins the frontier, a refined node whose chunks left the pool is drawn itself again, any other
// refined node passes its children in view to the next level (those come into view joining the cut) and
// clears the subtrees of the others. Writes only the flags of `it` and of nodes below it.
void Updater::measure(uint32_t t, const Item& it, PassPart& out) const {
  CutState& s = st(t);
  const Hierarchy& h = hier(t);
  const uint32_t id = s.idOf(it.ref);
  const Node& n = nodeAt(h, it.ref);
  const bool inside = it.inside || boxInside(n.box_min, n.box_max, cam(t), o_.margin_px);
  const float e = screenError(n, cam(t));
  s.error[id] = e;
  s.flags[id] = static_cast<uint8_t>(inside ? s.flags[id] | kCutInside : s.flags[id] & ~kCutInside);
  if (s.flags[id] & kCutIn) {
    ++out.count;
    if (!n.leaf()) out.f.push_back({e, t, id, it.ref});
    return;
  }
  if (viewChildren(t, it.ref, n, inside, out.kids, out.in_view)) {  // its chunks left the pool: drawn itself
    for (NodeRef k : out.kids)
      if (!t_[t].resident || (*t_[t].resident)[k.chunk]) clearSubtree(t, k);
    s.flags[id] = static_cast<uint8_t>((s.flags[id] & ~kCutRefined) | kCutIn);
    out.added.push_back({n.source_index, id, it.ref});
    ++out.count;
    out.f.push_back({e, t, id, it.ref});
    return;
  }
  uint8_t vis = 0;
  for (size_t i = 0; i < out.kids.size(); ++i) {
    const NodeRef k = out.kids[i];
    const uint32_t kid = s.idOf(k);
    if (!out.in_view[i]) {
      clearSubtree(t, k);
      continue;
    }
    ++vis;
    const Node& kn = nodeAt(h, k);
    if (!(s.flags[kid] & (kCutIn | kCutRefined))) {  // came into view
      s.flags[kid] |= kCutIn;
      out.added.push_back({kn.source_index, kid, k});
    }
    // A leaf is in the cut (it cannot be refined) and is counted here: nothing reads a leaf's error or
    // view (only the frontier's and the refined nodes' are), so it is not measured.
    if (kn.leaf())
      ++out.count;
    else
      out.next.push_back({k, inside});
  }
  if (n.flags & kChildrenAreChunks)
    for (size_t i = 0; i < out.kids.size(); ++i)
      if (out.in_view[i]) s.chunk_value[out.kids[i].chunk] = e;  // (each chunk hangs under one node)
  s.visible[id] = vis;
  out.zeros += vis == 0;
  out.m.push_back({e, t, id, it.ref});
}

// Measures the kept cut for this target's camera: errors, view, chunks gone; collects the frontier (chosen
// nodes that have children) and the refined nodes. Level by level from the root, each level's nodes in
// parallel stretches (the subtrees below distinct nodes are disjoint); the order of what is collected does
// not matter (the queues' order is total, the added nodes are sorted by finish).
void Updater::pass(uint32_t t, bool include_root) {
  CutState& s = st(t);
  const Hierarchy& h = hier(t);
  const NodeRef root = rootOf(h);
  const uint32_t rid = s.idOf(root);
  if (!include_root) {
    clearSubtree(t, root);
    return;
  }
  if (!(s.flags[rid] & (kCutIn | kCutRefined))) addCut(t, root, rid);
  constexpr size_t kStretch = 4096;
  std::vector<Item>& level = s.buffers.level;
  level.assign(1, {root, false});
  std::vector<PassPart> parts;
  while (!level.empty()) {
    const size_t count = (level.size() + kStretch - 1) / kStretch;
    if (parts.size() < count) parts.resize(count);
    parallelFor(count, [&](size_t c) {
      PassPart& out = parts[c];
      out.next.clear(), out.f.clear(), out.m.clear(), out.added.clear();
      out.count = 0, out.zeros = 0;
      const size_t end = std::min(level.size(), (c + 1) * kStretch);
      for (size_t i = c * kStretch; i < end; ++i) measure(t, level[i], out);
    });
    level.clear();
    for (size_t c = 0; c < count; ++c) {
      PassPart& out = parts[c];
      level.insert(level.end(), out.next.begin(), out.next.end());
      f_all_.insert(f_all_.end(), out.f.begin(), out.f.end());
      m_all_.insert(m_all_.end(), out.m.begin(), out.m.end());
      added_[t].insert(added_[t].end(), out.added.begin(), out.added.end());
      count_ += out.count, zeros_ += out.zeros;
    }
  }
}

bool Updater::held(const Key& k) {
  const Node& n = nodeAt(hier(k.t), k.ref);
  if (!(n.flags & kChildrenAreChunks) || !t_[k.t].resident) return false;
  if (!viewChildren(k.t, k.ref, n, (st(k.t).flags[k.id] & kCutInside) != 0)) return false;
  recordWanted(k.t, k.e);
  for (size_t i = 0; i < kids_.size(); ++i)  // what came in already waits for the rest, worth as much
    if (in_view_[i]) st(k.t).chunk_value[kids_[i].chunk] = k.e;
  st(k.t).flags[k.id] |= kCutHeld;
  st(k.t).held.push_back(k.id);
  return true;
}

const Key* Updater::topF() {
  top_kids_ = nullptr;
  const Key* top = f_.top();
  if (top && f_.top_sorted) {
    std::vector<std::vector<CutKid>>& kids = st(0).buffers.kids;
    if (kids.size() < 64) kids.resize(64);  // (the parts of Ahead's largest block)
    const KidsAhead& a = f_ahead_.at(f_, f_.next, [&](size_t part, size_t i, KidsAhead& r, bool first) {
      if (first) kids[part].clear();
      r.part = static_cast<uint32_t>(part);
      measureKids(f_.sorted[i], r, kids[part]);
    });
    if (a.measured) top_kids_ = &a;
  }
  return top;
}

const Key* Updater::topM() {
  top_node_ = nullptr;
  const Key* top = m_.top();
  if (top && m_.top_sorted) {
    const NodeAhead& a =
        m_ahead_.at(m_, m_.next, [&](size_t, size_t i, NodeAhead& r, bool) { measureNode(m_.sorted[i], r); });
    if (a.measured) top_node_ = &a;
  }
  return top;
}

// The frontier's heap sorted into its list, so that the nodes next in line are known.
void Updater::sortF() {
  std::vector<Key> keys;
  keys.swap(f_.heap);
  f_.sortIn(keys, st(0).buffers.key_scratch);
}

// What refine and viewChildren work out for a node of the frontier, read-only: its children in view, with
// their errors, views and rows (kidOf, as refine's own path finds them).
void Updater::measureKids(const Key& k, KidsAhead& a, std::vector<CutKid>& out) const {
  if (!validF(k)) return;
  const Hierarchy& h = hier(k.t);
  const Node& n = nodeAt(h, k.ref);
  if (n.flags & kChildrenAreChunks) return;
  const CutState& s = st(k.t);
  const bool inside = (s.flags[k.id] & kCutInside) != 0;
  if (out.capacity() == 0) out.reserve(1024 * 8);
  a.first = static_cast<uint32_t>(out.size());
  for (uint32_t c = 0; c < n.child_count; ++c) {
    const NodeRef r{k.ref.chunk, n.first_child + c};
    const Node& kn = nodeAt(h, r);
    if (!inside && !boxVisible(kn.box_min, kn.box_max, cam(k.t), o_.margin_px)) continue;
    out.push_back(kidOf(k.t, r, kn, inside));
    ++a.vis;
  }
  a.measured = true;
}

// What validM and coarsen read of a refined node, read-only: its children's ids, its row, its parent with
// that parent's error (measured by the pass: no coarsening changes it).
void Updater::measureNode(const Key& k, NodeAhead& a) const {
  const Node& n = nodeAt(hier(k.t), k.ref);
  if (n.flags & kChildrenAreChunks) return;
  const CutState& s = st(k.t);
  a.source = n.source_index;
  a.first_kid = s.idOf({k.ref.chunk, n.first_child}), a.kids = n.child_count;
  a.parent = s.parent[k.id];
  if (a.parent != kNone) a.parent_e = s.error[a.parent], a.parent_ref = parentRef(k.t, k.ref, a.parent);
  a.measured = true;
}

const Key* Updater::maxF() {
  for (;;) {
    for (const Key* top = topF(); top; top = topF()) {
      // (a node measured ahead has no chunk children: it is not held)
      if (validF(*top) && (top_kids_ || !held(*top))) break;
      f_.pop();
    }
    // (nodes pushed during the update may lie below the window: the largest is known only above it)
    if (const Key* top = topF(); top && top->e >= lo_) return top;
    if (lo_ == -std::numeric_limits<float>::infinity()) return nullptr;
    const float was = lo_;  // widen the window: the frontier below it joins (then all of it)
    lo_ = ++widened_lo_ < 3 ? lo_ * 0.5f : -std::numeric_limits<float>::infinity();
    if (f_.sorted.empty()) {
      for (const Key& k : f_all_)
        if (k.e < was && k.e >= lo_) f_.push(k);
      continue;
    }
    std::vector<Key> keys;
    for (const Key& k : f_all_)
      if (k.e < was && k.e >= lo_) keys.push_back(k);
    f_.sortIn(keys, st(0).buffers.key_scratch);
  }
}

const Key* Updater::minM() {
  for (;;) {
    for (const Key* top = topM(); top; top = topM()) {
      if (validM(*top, top_node_)) break;
      m_.pop();
    }
    if (const Key* top = topM(); top && top->e <= hi_) return top;
    if (hi_ == std::numeric_limits<float>::infinity()) return nullptr;
    const float was = hi_;
    hi_ = ++widened_hi_ < 3 ? hi_ * 2.0f : std::numeric_limits<float>::infinity();
    std::vector<Key> keys;
    for (const Key& k : m_all_)
      if (k.e > was && k.e <= hi_) keys.push_back(k);
    m_.sortIn(keys, st(0).buffers.key_scratch);
  }
}

void Updater::coarsen(const Key& m, const NodeAhead* a) {
  CutState& s = st(m.t);
  auto drop = [&](uint32_t kid) {
    if (s.flags[kid] & kCutIn) --count_;
    if (fade_ && (s.flags[kid] & kCutDrawn)) ++ghosts_;  // stays drawn while it fades into m
    s.flags[kid] &= static_cast<uint8_t>(~kCutStateFlags);
  };
  uint64_t source = 0;
  Key up{0, m.t, kNone, {}};  // its parent's key
  if (a) {
    for (uint32_t i = 0; i < a->kids; ++i) drop(a->first_kid + i);
    source = a->source;
    up.id = a->parent, up.e = a->parent_e, up.ref = a->parent_ref;
  } else {
    kids_.clear();
    childrenOf(hier(m.t), m.ref, kids_);
    const Node& n = nodeAt(hier(m.t), m.ref);
    for (NodeRef k : kids_) {
      if (n.flags & kChildrenAreChunks) s.chunk_value[k.chunk] = 0.0f;  // no longer drawn
      drop(s.idOf(k));
    }
    source = n.source_index;
    up.id = s.parent[m.id];
    if (up.id != kNone) up.e = s.error[up.id], up.ref = parentRef(m.t, m.ref, up.id);
  }
  zeros_ -= s.visible[m.id] == 0;
  s.flags[m.id] = static_cast<uint8_t>((s.flags[m.id] & ~kCutRefined) | kCutIn);
  added_[m.t].push_back({source, m.id, m.ref});
  ++count_;
  f_.push(m);
  if (up.id != kNone) m_.push(up);
}

void Updater::refine(const Key& f, uint32_t vis, const KidsAhead* ahead) {
  CutState& s = st(f.t);
  const bool inside = (s.flags[f.id] & kCutInside) != 0;
  s.flags[f.id] = static_cast<uint8_t>((s.flags[f.id] & ~kCutIn) | kCutRefined);
  s.visible[f.id] = static_cast<uint8_t>(vis);
  zeros_ += vis == 0;
  count_ = count_ - 1 + vis;
  auto add = [&](const CutKid& k) {
    s.error[k.id] = k.e;
    s.flags[k.id] =
        static_cast<uint8_t>((s.flags[k.id] & ~kCutStateFlags) | (k.inside ? kCutInside : 0) | kCutIn);
    added_[f.t].push_back({k.source, k.id, k.ref});
    if (!k.leaf) f_.push({k.e, f.t, k.id, k.ref});
  };
  if (ahead) {
    const CutKid* kids = st(0).buffers.kids[ahead->part].data() + ahead->first;  // (topF's measureKids)
    for (uint32_t i = 0; i < ahead->vis; ++i) add(kids[i]);
  } else {
    const bool chunks = (nodeAt(hier(f.t), f.ref).flags & kChildrenAreChunks) != 0;
    for (size_t i = 0; i < kids_.size(); ++i) {  // (viewChildren's, for f)
      if (!in_view_[i]) continue;
      const NodeRef k = kids_[i];
      if (chunks) s.chunk_value[k.chunk] = f.e;
      add(kidOf(f.t, k, nodeAt(hier(f.t), k), inside));
    }
  }
  m_.push(f);
  refined_now_.push_back(f);
}

// The greedy takes refinements in order and ends at the first that passes the budget. A refinement whose
// children are all out of view lowers the count, so a set of refinements that fits as a whole may pass the
// budget part-way in that order: then the greedy ended there, and so does this cut.
void Updater::greedyOrderCheck(uint64_t budget) {
  if (zeros_ <= 0 || count_ > budget || static_cast<uint64_t>(zeros_) <= budget - count_) return;
  // Every refined node with (children in view - 1): those the pass found still refined and those this update
  // refined (each once: kCutScratch marks the ones taken).
  std::vector<std::pair<Key, int>> refined;
  auto take = [&](const Key& k) {
    uint8_t& f = st(k.t).flags[k.id];
    if ((f & (kCutRefined | kCutScratch)) != kCutRefined) return;
    f |= kCutScratch;
    refined.push_back({{st(k.t).error[k.id], k.t, k.id, k.ref}, static_cast<int>(st(k.t).visible[k.id]) - 1});
  };
  for (const Key& k : m_all_) take(k);
  for (const Key& k : refined_now_) take(k);
  int64_t zeros = 0;
  for (const auto& [k, d] : refined) {
    st(k.t).flags[k.id] &= static_cast<uint8_t>(~kCutScratch);
    zeros += d < 0;
  }
  // Count after refining node q in order = count - (sum over the refined nodes below q): taken lowest first
  // from a heap, until the refinements passed outweigh every refinement that lowers the count, past which
  // none can be over the budget.
  auto lower = [](const auto& a, const auto& b) { return higher(a.first, b.first); };  // heap: lowest on top
  std::make_heap(refined.begin(), refined.end(), lower);
  int64_t below = 0, grown = 0;
  std::optional<Key> stop;
  for (auto end = refined.end(); end != refined.begin(); --end) {
    if (static_cast<int64_t>(count_) - grown + zeros <= static_cast<int64_t>(budget)) break;
    std::pop_heap(refined.begin(), end, lower);
    const auto& [k, d] = *(end - 1);
    if (static_cast<int64_t>(count_) - below > static_cast<int64_t>(budget)) stop = k;
    below += d;
    grown += std::max(d, 0);
  }
  if (!stop) return;
  const Key r = *stop;
  ++st(0).fallbacks;
  hi_ = std::numeric_limits<float>::infinity();
  for (const Key& k : m_all_) m_.push(k);
  for (const Key* m = minM(); m && !higher(*m, r); m = minM()) {
    const Key mk = *m;
    const NodeAhead* a = top_node_;
    m_.pop();
    coarsen(mk, a);
  }
  for (uint32_t t = 0; t < t_.size(); ++t) st(t).stopped = true, st(t).stop_error = r.e;
}

// The new cut: the entries kept and the nodes added, by source_index. The cut is merged in stretches in
// parallel, each stretch with the added entries that fall between its first source and the next stretch's (a
// node and another of the same source are one above the other, so the cut never holds both and equal sources
// stay in one stretch, with the node's own entries: no two stretches touch one node's flags). An added node
// is listed once: not if it is still listed (kept), nor twice (its entries lie side by side once sorted).
void Updater::finish(uint32_t t) {
  CutState& s = st(t);
  std::vector<CutEntry>& added = added_[t];
  parallelSort(
      added,
      [](const CutEntry& a, const CutEntry& b) {
        return a.source != b.source ? a.source < b.source : a.id < b.id;
      },
      s.buffers.sort_scratch);
  const std::vector<CutEntry>& cut = s.cut;
  constexpr size_t kStretch = 65536;
  const size_t parts = std::max<size_t>(1, (cut.size() + kStretch - 1) / kStretch);
  auto cutBound = [&](size_t p) { return cut.size() * p / parts; };
  std::vector<size_t> added_bound(parts + 1, added.size());
  added_bound[0] = 0;
  for (size_t p = 1; p < parts; ++p)
    added_bound[p] =
        static_cast<size_t>(std::lower_bound(added.begin(), added.end(), cut[cutBound(p)].source,
                                             [](const CutEntry& a, uint64_t src) { return a.source < src; }) -
                            added.begin());
  auto taken = [&](size_t i) {
    if (i > 0 && added[i - 1].id == added[i].id) return false;
    return (s.flags[added[i].id] & (kCutIn | kCutListed)) == kCutIn;
  };
  // Counted first (flags only read), then written at each stretch's place (its own nodes' flags written).
  std::vector<size_t> at(parts + 1, 0);
  parallelFor(parts, [&](size_t p) {
    size_t count = 0;
    for (size_t i = cutBound(p); i < cutBound(p + 1); ++i) {
      assert(s.flags[cut[i].id] & kCutListed);  // (every entry of the cut is listed: `taken` relies on it)
      count += (s.flags[cut[i].id] & kCutIn) != 0;
    }
    for (size_t i = added_bound[p]; i < added_bound[p + 1]; ++i) count += taken(i);
    at[p + 1] = count;
  });
  for (size_t p = 0; p < parts; ++p) at[p + 1] += at[p];
  std::vector<CutEntry>& next = s.buffers.next_cut;
  next.resize(at[parts]);  // (its memory and most of its size kept from the update before last)
  parallelFor(parts, [&](size_t p) {
    size_t o = at[p], a = added_bound[p];
    auto takeAdded = [&](uint64_t until) {
      for (; a < added_bound[p + 1] && added[a].source < until; ++a)
        if (taken(a)) {
          s.flags[added[a].id] |= kCutListed;
          next[o++] = added[a];
        }
    };
    for (size_t i = cutBound(p); i < cutBound(p + 1); ++i) {
      const CutEntry& e = cut[i];
      takeAdded(e.source);
      if (s.flags[e.id] & kCutIn)
        next[o++] = e;
      else
        s.flags[e.id] &= static_cast<uint8_t>(~kCutListed);
    }
    takeAdded(std::numeric_limits<uint64_t>::max());
    assert(o == at[p + 1]);
  });
  s.cut.swap(next);
  s.active = true;
}

void Updater::run() {
  for (uint32_t t = 0; t < t_.size(); ++t) {
    CutState& s = st(t);
    for (uint32_t id : s.held) s.flags[id] &= static_cast<uint8_t>(~kCutHeld);
    s.held.clear();
    std::fill(s.chunk_value.begin(), s.chunk_value.end(), 0.0f);  // (set again by the pass)
    assert(cam(t).validate() == nullptr);
  }
  // The window of errors where the cut's edge was last time: the frontier and refined nodes inside it go
  // into the queues now, the others only if the updates reach past it (most of a cut lies well inside).
  const CutState& first = st(0);
  bool windowed = true;
  for (uint32_t t = 0; t < t_.size(); ++t) windowed &= st(t).active && st(t).stopped;
  if (windowed && first.stop_error > 0) lo_ = first.stop_error * 0.9f, hi_ = first.stop_error / 0.9f;
  uint64_t roots = 0;
  for (uint32_t t = 0; t < t_.size(); ++t) {
    const Node& r = nodeAt(hier(t), rootOf(hier(t)));
    const bool in = boxVisible(r.box_min, r.box_max, cam(t), o_.margin_px) && roots + 1 <= o_.budget;
    roots += in;
    pass(t, in);
  }
  for (const Key& k : f_all_)
    if (k.e >= lo_) f_.push(k);
  {  // (the refined nodes sorted, so that the nodes next in line are known and measured ahead)
    std::vector<Key> keys;
    for (const Key& k : m_all_)
      if (k.e <= hi_) keys.push_back(k);
    m_.sortIn(keys, st(0).buffers.key_scratch);
  }
  // Coarsen: while over the budget, or while the chosen node of smallest error ranks at or below the
  // frontier's largest (the camera moved: another node is worth more).
  for (const Key* m = minM(); m; m = minM()) {
    const Key mk = *m;
    const NodeAhead* a = top_node_;
    if (count_ <= o_.budget && mk.e > o_.threshold_px) {
      const Key* f = maxF();  // (leaves m_ as it is: mk is still on top)
      if (!f || higher(mk, *f)) break;
    }
    m_.pop();
    coarsen(mk, a);
  }
  // Refine while the budget allows, leaving room for the nodes fading out.
  const uint64_t budget = o_.budget > ghosts_ ? o_.budget - ghosts_ : 0;
  bool stopped = false;
  float stop_error = 0;
  sortF();  // (the nodes next in line known, their children measured ahead)
  for (const Key* f = maxF(); f; f = maxF()) {
    if (f->e <= o_.threshold_px) break;
    const Key fk = *f;
    const KidsAhead* ahead = top_kids_;
    uint32_t vis = 0;
    if (ahead) {
      vis = ahead->vis;
    } else {
      const CutState& s = st(fk.t);
      viewChildren(fk.t, fk.ref, nodeAt(hier(fk.t), fk.ref), (s.flags[fk.id] & kCutInside) != 0);
      for (uint8_t v : in_view_) vis += v;
    }
    if (count_ - 1 + vis > budget) {
      stopped = true, stop_error = fk.e;
      break;
    }
    f_.pop();
    refine(fk, vis, ahead);
  }
  for (uint32_t t = 0; t < t_.size(); ++t) st(t).stopped = stopped, st(t).stop_error = stop_error;
  greedyOrderCheck(budget);
  for (uint32_t t = 0; t < t_.size(); ++t) finish(t);
}

}  // namespace

void CutState::init(const Hierarchy& h) {
  const size_t chunks = h.index.chunks.size();
  base.assign(chunks, 0);
  uint64_t next = h.index.has_top ? h.top.nodes.size() : 0;
  for (size_t c = 0; c < chunks; ++c) {
    base[c] = static_cast<uint32_t>(next);
    next += h.index.chunks[c].node_count;
  }
  if (next >= kNone) throw std::length_error("a level-of-detail hierarchy of 2^32 nodes or more");
  parent.assign(next, kNone);
  error.assign(next, 0.0f);
  flags.assign(next, 0);
  visible.assign(next, 0);
  chunk_value.assign(chunks, 0.0f);
  cut.clear(), held.clear();
  active = stopped = false;
  if (h.index.has_top)
    for (uint32_t i = 0; i < h.top.nodes.size(); ++i) {
      const Node& n = h.top.nodes[i];
      for (uint32_t k = 0; k < n.child_count; ++k)
        if (n.flags & kChildrenAreChunks)
          parent[base[n.first_child + k]] = i;
        else
          parent[n.first_child + k] = i;
    }
}

void CutState::installChunk(const Hierarchy& h, uint32_t chunk) {
  const Chunk& c = h.chunks[chunk];
  const uint32_t b = base[chunk];
  for (uint32_t i = 0; i < c.nodes.size(); ++i) {
    const Node& n = c.nodes[i];
    for (uint32_t k = 0; k < n.child_count; ++k) parent[b + n.first_child + k] = b + i;
    flags[b + i] &= static_cast<uint8_t>(kCutListed);  // (a listed entry is dropped by the next update)
  }
}

void CutState::evictChunk(const Hierarchy& h, uint32_t chunk) {
  const uint32_t b = base[chunk], n = h.index.chunks[chunk].node_count;
  for (uint32_t i = 0; i < n; ++i) flags[b + i] &= static_cast<uint8_t>(kCutListed);
}

void CutState::assign(const Hierarchy& h, const CutResult& result) {
  // Clear the held cut (every node in it or refined), then take the result's nodes as added.
  std::vector<NodeRef> todo{rootOf(h)}, kids;
  while (!todo.empty()) {
    const NodeRef r = todo.back();
    todo.pop_back();
    const uint32_t id = idOf(r);
    const uint8_t f = flags[id];
    flags[id] = static_cast<uint8_t>(f & ~kCutStateFlags);
    if (!(f & kCutRefined)) continue;
    const Node& n = nodeAt(h, r);
    kids.clear();
    childrenOf(h, r, kids);
    for (NodeRef k : kids)
      if (!(n.flags & kChildrenAreChunks) || !h.chunks[k.chunk].nodes.empty()) todo.push_back(k);
  }
  for (const auto& [r, p] : result.refined_from) flags[idOf(r)] |= kCutRefined;
  std::vector<CutEntry> next;
  next.reserve(result.nodes.size());
  for (NodeRef r : result.nodes) {
    flags[idOf(r)] |= kCutIn;
    next.push_back({nodeAt(h, r).source_index, idOf(r), r});
  }
  for (const CutEntry& e : cut) flags[e.id] &= static_cast<uint8_t>(~kCutListed);
  for (const CutEntry& e : next) flags[e.id] |= kCutListed;
  cut.swap(next);
  active = true, stopped = false;
}

void updateCuts(std::span<const CutUpdateTarget> targets, const CutOptions& options, bool fade,
                std::vector<std::vector<std::pair<float, uint32_t>>>* wanted) {
  if (wanted) wanted->assign(targets.size(), {});
  if (targets.empty()) return;
  Updater(targets, options, fade, wanted).run();
}

}  // namespace sf::lod
