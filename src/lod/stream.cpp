// Streaming a level-of-detail hierarchy from disk into a fixed pool (lod/stream.h).
#include "lod/stream.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <limits>
#include <numeric>

#include "core/clock.h"
#include "core/error.h"
#include "core/parallel.h"

namespace sf::lod {

namespace {

// Row `i` of `c` set to node `ref` of `h` as it is.
void putNode(GaussianCloud& c, size_t i, const Hierarchy& h, NodeRef ref) {
  const Node& node = nodeAt(h, ref);
  const size_t stride = static_cast<size_t>(c.shStride());
  c.positions[i] = node.position, c.scales[i] = node.scale;
  c.rotations[i] = node.rotation, c.opacities[i] = node.opacity;
  std::copy_n(shAt(h, ref), stride, c.sh.data() + i * stride);
}

}  // namespace

LodStream::LodStream(const std::string& dir, const StreamOptions& options) : options_(options) {
  h_.dir = dir;
  h_.index = loadIndex(dir);
  const size_t n = h_.index.chunks.size();
  h_.chunks.resize(n);
  resident_.assign(n, 0);
  last_drawn_.assign(n, 0);
  in_flight_.assign(n, 0);
  want_.assign(n, 0.0f);
  failed_.assign(n, 0);
  no_room_.assign(n, 0);
  install_stamp_.assign(n, 0);
  if (h_.index.has_top) {
    h_.top = loadChunk(dir, h_.index, kNone);
    checkChunkParents(h_);
    resident_nodes_ = h_.top.nodes.size();
  } else {  // one chunk: it is the root, read now
    h_.chunks[0] = loadChunk(dir, h_.index, 0);
    resident_[0] = 1;
    install_stamp_[0] = ++installs_;
    resident_nodes_ = h_.chunks[0].nodes.size();
  }
  if (resident_nodes_ > options_.pool_nodes)
    throw Error(dir + ": the pool of " + std::to_string(options_.pool_nodes) +
                " nodes cannot hold the hierarchy's " + (h_.index.has_top ? "top chunk" : "only chunk") +
                " of " + std::to_string(resident_nodes_) + " nodes");
  state_.init(h_);
  if (!h_.index.has_top) state_.installChunk(h_, 0);
  cloud_.resize(0, h_.index.sh_degree);
  cloud_.color_space = h_.index.color_space;
  cloud_.antialiased = h_.index.antialiased;
  cloud_.screen_filter = h_.index.screen_filter;
  loader_ = std::thread([this] { loaderMain(); });
}

void LodStream::setPoolNodes(uint64_t nodes) {
  if (frame_ != 0 || resident_nodes_ != (h_.index.has_top ? h_.top.nodes.size() : h_.chunks[0].nodes.size()))
    throw Error(h_.dir + ": the pool's size is set before the first frame");
  if (resident_nodes_ > nodes)
    throw Error(h_.dir + ": the pool of " + std::to_string(nodes) + " nodes cannot hold the hierarchy's " +
                (h_.index.has_top ? "top chunk" : "only chunk") + " of " + std::to_string(resident_nodes_) +
                " nodes");
  options_.pool_nodes = nodes;
}

LodStream::~LodStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  loader_.join();
}

void LodStream::loaderMain() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const uint32_t chunk = queue_.back().second;  // the most wanted
    queue_.pop_back();
    loading_ = true;
    lock.unlock();
    Chunk c;
    std::string error;
    try {
      c = loadChunk(h_.dir, h_.index, chunk);  // the index is never written after the constructor
    } catch (const std::exception& e) {
      error = e.what();
    }
    lock.lock();
    loading_ = false;
    if (error.empty()) {
      ++chunks_read_;
      bytes_read_ += h_.index.chunks[chunk].bytes;
      done_.emplace_back(chunk, std::move(c));
    } else {
      if (error_.empty()) error_ = error;
      failed_[chunk] = 1;
      in_flight_[chunk] = 0;
    }
    if (queue_.empty()) idle_.notify_all();
  }
}

bool LodStream::mayEvict(uint32_t c) const {
  return resident_[c] && h_.index.has_top && last_drawn_[c] <= frame_;
}

uint64_t LodStream::evictable(float worth) const {
  uint64_t n = 0;
  for (uint32_t c = 0; c < resident_.size(); ++c)
    if (mayEvict(c) && state_.chunk_value[c] < worth) n += h_.chunks[c].nodes.size();
  return n;
}

bool LodStream::evictFor(uint64_t nodes, float worth) {
  const std::vector<float>& value = state_.chunk_value;
  if (resident_nodes_ + nodes <= options_.pool_nodes) return true;
  if (resident_nodes_ + nodes > options_.pool_nodes + evictable(worth)) return false;  // (evicting nothing)
  while (resident_nodes_ + nodes > options_.pool_nodes) {
    // The chunk worth least to the last cut (0: not drawn by it), then the one drawn longest ago; never one
    // installed for the frame being built (stamped frame_ + 1), nor one worth as much as the chunk it would
    // make room for (so that a view wanting more than the pool holds keeps what it has instead of trading
    // chunks from frame to frame). Chunks hang under the top only, so dropping one leaves no other chunk
    // without its parent.
    uint32_t victim = kNone;
    for (uint32_t c = 0; c < resident_.size(); ++c) {
      if (!mayEvict(c) || !(value[c] < worth)) continue;
      if (victim == kNone || value[c] < value[victim] ||
          (value[c] == value[victim] && last_drawn_[c] < last_drawn_[victim]))
        victim = c;
    }
    if (victim == kNone) return false;
    resident_nodes_ -= h_.chunks[victim].nodes.size();
    state_.evictChunk(h_, victim);
    evicted_.push_back(victim);  // (its nodes freed by install, once the last draw's rows are off them)
    resident_[victim] = 0;
    install_stamp_[victim] = 0;
    ++evictions_;
  }
  return true;
}

void LodStream::install() {
  std::vector<std::pair<uint32_t, Chunk>> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done.swap(done_);
  }
  for (auto& [chunk, c] : done) {
    const uint64_t nodes = c.nodes.size();
    float worth = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      in_flight_[chunk] = 0;
      worth = want_[chunk];
    }
    if (!evictFor(nodes, worth)) {  // no room this frame: asked for again by a later one
      no_room_[chunk] = frame_ + 1;
      continue;
    }
    h_.chunks[chunk] = std::move(c);
    state_.installChunk(h_, chunk);
    resident_[chunk] = 1;
    install_stamp_[chunk] = ++installs_;
    resident_nodes_ += nodes;
    last_drawn_[chunk] = frame_ + 1;  // kept for the frame being built, which asked for it
  }
  if (evicted_.empty()) return;
  fillMixSh();  // (before the chunks their SH comes from may go)
  // The last draw's rows of nodes of the chunks evicted become rows of their own (their values copied into
  // cloud_ where cloud() had not yet), so that cloud() and the next draw's fades never read a freed chunk.
  std::vector<uint8_t> gone(resident_.size(), 0);
  for (uint32_t c : evicted_) gone[c] = 1;
  parallelForRange(rows_.size(), 16384, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const NodeRef r = rows_[i];
      if (r == kNoNode || r.chunk == kNone || !gone[r.chunk]) continue;
      if (plain_pending_) putNode(cloud_, i, h_, r);
      rows_[i] = kNoNode;
    }
  });
  for (uint32_t c : evicted_) h_.chunks[c] = Chunk{};
  evicted_.clear();
}

void LodStream::request(std::vector<std::pair<float, uint32_t>> wanted) {
  std::sort(wanted.begin(), wanted.end());  // ascending: the most wanted last, as the queue pops
  // A chunk that could only be placed by evicting chunks worth as much (evictFor) is not read: the pool is
  // full of what this view wants more. The room for a chunk worth p: the free slots and every evictable
  // chunk worth less than p (those by worth, with their running sums).
  const std::vector<float>& value = state_.chunk_value;
  std::vector<std::pair<float, uint64_t>> by_worth;  // (worth, nodes up to and including it)
  for (uint32_t c = 0; c < resident_.size(); ++c)
    if (mayEvict(c)) by_worth.push_back({value[c], h_.chunks[c].nodes.size()});
  std::sort(by_worth.begin(), by_worth.end());
  for (size_t k = 1; k < by_worth.size(); ++k) by_worth[k].second += by_worth[k - 1].second;
  const uint64_t free = options_.pool_nodes - std::min(options_.pool_nodes, resident_nodes_);
  std::erase_if(wanted, [&](const std::pair<float, uint32_t>& w) {
    const auto less =
        std::lower_bound(by_worth.begin(), by_worth.end(), std::pair<float, uint64_t>{w.first, 0});
    const uint64_t room = free + (less == by_worth.begin() ? 0 : std::prev(less)->second);
    return h_.index.chunks[w.second].node_count > room;
  });
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [p, c] : queue_) in_flight_[c] = 0;  // not started: dropped unless asked for again
  queue_.clear();
  for (const auto& [p, c] : wanted) {
    if (resident_[c] || in_flight_[c] || failed_[c] || no_room_[c] == frame_ + 1) continue;
    in_flight_[c] = 1;
    want_[c] = p;
    queue_.push_back({p, c});
  }
  if (!queue_.empty()) wake_.notify_one();
}

namespace {

// One gaussian's shape and colour, where a morph starts or ends.
struct GaussianView {
  Vec3 position, scale;
  Quat rotation;
  const float* sh;
};

GaussianView viewOf(const Node& n, const float* sh) {
  return {n.position, n.scale, n.rotation, sh};
}

GaussianView rowOf(const GaussianCloud& c, size_t i) {
  return {c.positions[i], c.scales[i], c.rotations[i], c.sh.data() + i * static_cast<size_t>(c.shStride())};
}

// `out` = the blend at t of a and b, n coefficients (morphGaussian's SH; the rows whose SH waits, fillMixSh).
void mixSh(const float* a, const float* b, float t, size_t n, float* out) {
  for (size_t j = 0; j < n; ++j) out[j] = a[j] + (b[j] - a[j]) * t;
}

// Gaussian i of `c` set to the blend at t in [0, 1] of a and b: position, scale in log space, rotation by
// normalised lerp (on a's side of the sphere), and with `sh` SH linearly (mixSh). b may be gaussian i itself.
// Opacity is the caller's.
void morphGaussian(GaussianCloud& c, size_t i, const GaussianView& a, const GaussianView& b, float t,
                   bool sh = true) {
  auto mix = [t](float x, float y) { return x + (y - x) * t; };
  const Vec3 pb = b.position, sb = b.scale;
  const Quat q = b.rotation;
  const float* shb = b.sh;
  c.positions[i] = a.position + (pb - a.position) * t;
  c.scales[i] = {std::exp(mix(std::log(a.scale.x), std::log(sb.x))),
                 std::exp(mix(std::log(a.scale.y), std::log(sb.y))),
                 std::exp(mix(std::log(a.scale.z), std::log(sb.z)))};
  const Quat& p = a.rotation;
  const float sign = p.w * q.w + p.x * q.x + p.y * q.y + p.z * q.z < 0 ? -1.0f : 1.0f;
  c.rotations[i] =
      normalize(Quat{mix(p.w, sign * q.w), mix(p.x, sign * q.x), mix(p.y, sign * q.y), mix(p.z, sign * q.z)});
  if (sh) mixSh(a.sh, shb, t, static_cast<size_t>(c.shStride()), c.sh.data() + i * c.shStride());
}

// Row `si` of `src` copied to row `di` of `dst` (same SH degree).
void copyRow(GaussianCloud& dst, size_t di, const GaussianCloud& src, size_t si) {
  const size_t stride = static_cast<size_t>(src.shStride());
  dst.positions[di] = src.positions[si], dst.scales[di] = src.scales[si];
  dst.rotations[di] = src.rotations[si], dst.opacities[di] = src.opacities[si];
  std::copy_n(src.sh.data() + si * stride, stride, dst.sh.data() + di * stride);
}

void resizeRows(GaussianCloud& c, size_t n) {  // (GaussianCloud::resize would clear the SH)
  c.positions.resize(n), c.scales.resize(n), c.rotations.resize(n), c.opacities.resize(n);
  c.sh.resize(n * static_cast<size_t>(c.shStride()));
}

// The indices i < n for which pred(i) holds, ascending: found in parallel stretches, joined in order.
template <class Pred>
std::vector<uint32_t> indicesWhere(size_t n, const Pred& pred) {
  constexpr size_t kStretch = 65536;
  std::vector<std::vector<uint32_t>> found((n + kStretch - 1) / kStretch);
  parallelFor(found.size(), [&](size_t c) {
    for (size_t i = c * kStretch, end = std::min(n, i + kStretch); i < end; ++i)
      if (pred(i)) found[c].push_back(static_cast<uint32_t>(i));
  });
  size_t total = 0;
  for (const std::vector<uint32_t>& f : found) total += f.size();
  std::vector<uint32_t> out;
  out.reserve(total);
  for (const std::vector<uint32_t>& f : found) out.insert(out.end(), f.begin(), f.end());
  return out;
}

// `mixes` (each naming a different row below `rows`) in ascending row order. Where they are many, each one's
// index is put at its row in `at` (0 between uses, at least `rows` long) and the rows are read in order, in
// parallel stretches (linear in `rows`: a comparison sort of a fly-through's million mixes took about 100 ms
// on one core); a few are sorted as they are.
void sortByRow(std::vector<LodStream::ShMix>& mixes, size_t rows, std::vector<uint32_t>& at) {
  if (mixes.size() < 2) return;
  if (mixes.size() * 64 < rows) {
    std::sort(mixes.begin(), mixes.end(),
              [](const LodStream::ShMix& a, const LodStream::ShMix& b) { return a.row < b.row; });
    return;
  }
  parallelForRange(mixes.size(), 16384, [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) at[mixes[k].row] = static_cast<uint32_t>(k + 1);
  });
  try {
    const std::vector<uint32_t> order = indicesWhere(rows, [&](size_t i) { return at[i] != 0; });
    std::vector<LodStream::ShMix> sorted(order.size());
    parallelForRange(order.size(), 16384, [&](size_t begin, size_t end) {
      for (size_t k = begin; k < end; ++k) sorted[k] = mixes[at[order[k]] - 1], at[order[k]] = 0;
    });
    mixes.swap(sorted);
  } catch (...) {  // (out of memory: `at` left as it must be for the next use)
    for (const LodStream::ShMix& m : mixes) at[m.row] = 0;
    throw;
  }
}

// The row of node `source` in a cut ordered by source_index.
uint32_t rowIn(const std::vector<CutEntry>& cut, uint64_t source) {
  const auto it = std::lower_bound(cut.begin(), cut.end(), source,
                                   [](const CutEntry& e, uint64_t s) { return e.source < s; });
  return static_cast<uint32_t>(it - cut.begin());
}

}  // namespace

void LodStream::draw(const CutResult& cut, bool fade) {
  state_.assign(h_, cut);
  drawCut(fade);
}

uint64_t LodStream::fadingOut() const {
  uint64_t n = 0;
  for (const Ghost& g : ghosts_) n += g.age + 1 < kFadeFrames;
  return n;
}

// The nearest ancestor of a node drawn last time that this cut draws and the last one did not: the coarser
// node it went into, or none (the node went finer, or out of view).
uint32_t LodStream::coarserDrawn(uint32_t id) const {
  const std::vector<uint8_t>& flags = state_.flags;
  for (uint32_t a = state_.parent[id]; a != kNone; a = state_.parent[a])
    if (flags[a] & kCutIn) return flags[a] & kCutDrawn ? kNone : a;
  return kNone;
}

// The ref of `target`, an ancestor of the node `leaf_id` (ref `leaf`), walking up.
NodeRef LodStream::ancestorRef(uint32_t leaf_id, NodeRef leaf, uint32_t target) const {
  NodeRef r = leaf;
  for (uint32_t id = leaf_id; id != target;) {
    const uint32_t p = state_.parent[id];
    r = state_.parentRef(h_, r, p);
    id = p;
  }
  return r;
}

// Zooming out: what the last draw showed of the nodes this cut replaced by a coarser one (its rows of
// cloud_, morphs and fading rows included), before cloud_ is filled again: the ghosts (kept ones aged) and
// their starting rows, under the fading budget and the fan-out cap.
void LodStream::fadeOut(const std::vector<std::pair<uint32_t, uint32_t>>& removed, uint64_t max_fading_out,
                        std::vector<Ghost>& ghosts, GaussianCloud& starts) {
  std::vector<uint8_t>& flags = state_.flags;
  std::vector<std::pair<uint32_t, uint32_t>> from;  // (row of cloud_, into) of each new ghost
  for (const auto& [row, id] : removed)
    if (const uint32_t into = coarserDrawn(id); into != kNone) {
      ghosts.push_back({into, ancestorRef(id, last_cut_[row].ref, into), 0.0f, 0});
      from.push_back({row, into});
    }
  const size_t new_count = ghosts.size(), last_count = last_cut_.size();
  std::vector<std::pair<uint32_t, uint32_t>> kept;  // (source: 0 ghost_start_ / 1 cloud_, row)
  for (size_t g = 0; g < ghosts_.size(); ++g) {
    const Ghost& gh = ghosts_[g];
    if (flags[gh.into_id] & kCutIn) {  // still fading into the node it started towards
      if (gh.age + 1 < kFadeFrames) {
        ghosts.push_back(gh), ++ghosts.back().age;
        kept.push_back({0, static_cast<uint32_t>(g)});
      }
      continue;
    }
    // Its node was itself replaced by a coarser one: on from where it is now, into that one.
    if (const uint32_t into = coarserDrawn(gh.into_id); into != kNone) {
      ghosts.push_back({into, ancestorRef(gh.into_id, gh.into, into), 0.0f, 0});
      kept.push_back({1, static_cast<uint32_t>(last_count + g)});
    }
  }
  // The hard budget: past max_fading_out rows, the fades into the nodes whose rows have faded longest go.
  if (ghosts.size() > max_fading_out) {
    std::vector<std::pair<uint32_t, int>> by_node;  // (into, age) of every ghost, grouped by node
    for (const Ghost& gh : ghosts) by_node.push_back({gh.into_id, gh.age});
    std::sort(by_node.begin(), by_node.end());
    struct Group {
      int age;  // its oldest ghost's
      uint32_t into, rows;
    };
    std::vector<Group> groups;
    for (const auto& [into, age] : by_node)
      if (groups.empty() || groups.back().into != into)
        groups.push_back({age, into, 1});
      else
        groups.back().age = std::max(groups.back().age, age), ++groups.back().rows;
    std::sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
      return a.age != b.age ? a.age > b.age : a.into < b.into;
    });
    size_t left = ghosts.size();
    for (size_t k = 0; k < groups.size() && left > max_fading_out; ++k) {
      flags[groups[k].into] |= kCutScratch;  // dropped: the node drawn as it is
      left -= groups[k].rows;
    }
  }
  // Nodes that more than kMaxFadeFanOut rows fade into are drawn as they are (the rows pop out).
  std::vector<uint32_t>& fan_in = nodeScratch();
  for (const Ghost& gh : ghosts) ++fan_in[gh.into_id];
  for (const Ghost& gh : ghosts)
    if (fan_in[gh.into_id] > kMaxFadeFanOut) flags[gh.into_id] |= kCutScratch;
  for (const Ghost& gh : ghosts) fan_in[gh.into_id] = 0;
  std::vector<uint32_t> staying;  // the ghosts kept: their rows of `starts`, in order
  for (size_t g = 0; g < ghosts.size(); ++g)
    if (!(flags[ghosts[g].into_id] & kCutScratch)) staying.push_back(static_cast<uint32_t>(g));
  resizeRows(starts, staying.size());
  const size_t stride = static_cast<size_t>(cloud_.shStride());
  parallelForRange(staying.size(), 4096, [&](size_t begin, size_t end) {
    for (size_t at = begin; at < end; ++at) {
      const size_t g = staying[at];
      if (g < new_count && !(rows_[from[g].first] == kNoNode)) {  // (cloud_ may not hold it: cloud())
        putNode(starts, at, h_, rows_[from[g].first]);
      } else if (g < new_count) {
        copyRow(starts, at, cloud_, from[g].first);
        if (mix_sh_pending_) mixShOfRow(from[g].first, starts.sh.data() + at * stride);  // a morphing row's
      } else if (kept[g - new_count].first == 0) {
        copyRow(starts, at, ghost_start_, kept[g - new_count].second);
      } else {
        copyRow(starts, at, cloud_, kept[g - new_count].second);
      }
    }
  });
  // The marks cleared before the list is compacted (compacting in place overwrites dropped ghosts, whose
  // nodes' marks would stay set into later frames).
  for (const Ghost& gh : ghosts) flags[gh.into_id] &= static_cast<uint8_t>(~kCutScratch);
  for (size_t k = 0; k < staying.size(); ++k) ghosts[k] = ghosts[staying[k]];  // (staying[k] >= k)
  ghosts.resize(staying.size());
  // The first ghost into a node ends with the node's opacity (continuing ones keep theirs), the others
  // transparent: at the end they draw what the node alone draws.
  for (const Ghost& gh : ghosts)
    if (gh.age > 0 && gh.end_opacity > 0.0f) flags[gh.into_id] |= kCutScratch;
  for (Ghost& gh : ghosts)
    if (gh.age == 0 && !(flags[gh.into_id] & kCutScratch)) {
      gh.end_opacity = nodeAt(h_, gh.into).opacity;
      flags[gh.into_id] |= kCutScratch;
    }
  for (const Ghost& gh : ghosts) flags[gh.into_id] &= static_cast<uint8_t>(~kCutScratch);
}

// Refining: where each new node comes from (its nearest ancestor the last draw drew), and the morphs still on
// their way. The walks and the rows in parallel; only what depends on the order (which new node of an
// ancestor is its first) in one pass.
std::vector<LodStream::Morph> LodStream::morphIn(const std::vector<uint32_t>& fresh) {
  CutState& s = state_;
  std::vector<uint8_t>& flags = s.flags;
  const std::vector<CutEntry>& cut = s.cut;
  std::vector<uint32_t>& scratch = nodeScratch();
  const std::vector<uint32_t> going = indicesWhere(morphs_.size(), [&](size_t k) {
    return (flags[morphs_[k].id] & kCutIn) && morphs_[k].age + 1 < kFadeFrames;
  });
  std::vector<Morph> morphs(going.size());
  parallelForRange(going.size(), 16384, [&](size_t begin, size_t end) {  // (each node morphs once)
    for (size_t k = begin; k < end; ++k) {
      morphs[k] = morphs_[going[k]], ++morphs[k].age;
      scratch[morphs[k].id] = static_cast<uint32_t>(k + 1);
    }
  });
  if (!morphs.empty()) {  // their rows now: one scan of the cut
    parallelForRange(cut.size(), 65536, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i)
        if (const uint32_t k = scratch[cut[i].id]) morphs[k - 1].row = static_cast<uint32_t>(i);
    });
    parallelForRange(morphs.size(), 16384, [&](size_t begin, size_t end) {
      for (size_t k = begin; k < end; ++k) scratch[morphs[k].id] = 0;
    });
  }
  std::vector<uint32_t> ancestor(fresh.size(), kNone);
  parallelForRange(fresh.size(), 16384, [&](size_t begin, size_t end) {
    for (size_t f = begin; f < end; ++f) {
      uint32_t a = s.parent[cut[fresh[f]].id];
      while (a != kNone && !(flags[a] & kCutDrawn)) a = s.parent[a];
      ancestor[f] = a;
    }
  });
  std::vector<uint32_t>& fan_out = scratch;  // new nodes per ancestor (kMaxFadeFanOut)
  for (uint32_t a : ancestor)
    if (a != kNone) ++fan_out[a];
  // The new nodes from one ancestor start stacked on it: the first as the ancestor itself, the others
  // transparent, so the first draw shows exactly what the last one did. Each new node's morph: its place
  // (kNone: drawn as it is), the first of its ancestor's marked by the top bit.
  constexpr uint32_t kFirst = 0x80000000u;
  std::vector<uint32_t> place(fresh.size(), kNone);
  std::vector<uint32_t> given;  // ancestors whose first new node has taken their opacity
  uint32_t placed = 0;
  for (size_t f = 0; f < fresh.size(); ++f) {
    const uint32_t a = ancestor[f];
    if (a == kNone || fan_out[a] > kMaxFadeFanOut) continue;
    place[f] = placed++;
    if (!(flags[a] & kCutScratch)) flags[a] |= kCutScratch, given.push_back(a), place[f] |= kFirst;
  }
  for (uint32_t a : given) flags[a] &= static_cast<uint8_t>(~kCutScratch);
  for (uint32_t a : ancestor)
    if (a != kNone) fan_out[a] = 0;
  const size_t kept = morphs.size();
  morphs.resize(kept + placed);
  parallelForRange(fresh.size(), 16384, [&](size_t begin, size_t end) {
    for (size_t f = begin; f < end; ++f) {
      if (place[f] == kNone) continue;
      const uint32_t row = fresh[f];
      const CutEntry& e = cut[row];
      const NodeRef from = ancestorRef(e.id, e.ref, ancestor[f]);
      const bool first = (place[f] & kFirst) != 0;
      morphs[kept + (place[f] & ~kFirst)] = {e.id, row, e.ref, from, first ? nodeAt(h_, from).opacity : 0.0f,
                                             0};
    }
  });
  return morphs;
}

// The cloud: the rows computed on the host (morphs, the nodes ghosts fade into drawn transparent, the ghosts
// after the cut's nodes); every other row is a node of the cut as it is, named in rows_ and copied by
// cloud() when asked for.
void LodStream::fillCloud(const std::vector<Morph>& morphs, const std::vector<Ghost>& ghosts,
                          const GaussianCloud& starts) {
  const std::vector<CutEntry>& cut = state_.cut;
  const size_t n = cut.size();
  const size_t total = n + ghosts.size();
  resizeRows(cloud_, total);
  rows_.resize(total);
  parallelForRange(n, 65536, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) rows_[i] = cut[i].ref;
  });
  plain_pending_ = true;
  mix_sh_pending_ = true;
  sh_mixes_.resize(morphs.size());
  parallelForRange(morphs.size(), 4096, [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      const Morph& m = morphs[k];
      const float t = static_cast<float>(m.age) / static_cast<float>(kFadeFrames);
      const Node& to = nodeAt(h_, m.ref);
      morphGaussian(cloud_, m.row, viewOf(nodeAt(h_, m.from), shAt(h_, m.from)), viewOf(to, shAt(h_, m.ref)),
                    t,
                    false);  // (its SH waits: fillMixSh)
      cloud_.opacities[m.row] = m.start_opacity + (to.opacity - m.start_opacity) * t;
      rows_[m.row] = kNoNode;
      sh_mixes_[k] = {m.row, m.from, m.ref, t};
    }
  });
  // The nodes ghosts fade into are drawn transparent meanwhile; the ghosts follow the cut's nodes. Their rows
  // found in parallel; each such row not morphing (a morphing row keeps its mix) is filled once, however many
  // ghosts fade into it.
  std::vector<uint32_t> into_rows(ghosts.size());
  parallelForRange(ghosts.size(), 4096, [&](size_t begin, size_t end) {
    for (size_t g = begin; g < end; ++g) into_rows[g] = rowIn(cut, nodeAt(h_, ghosts[g].into).source_index);
  });
  const size_t first_into = sh_mixes_.size();
  for (size_t g = 0; g < ghosts.size(); ++g) {
    const uint32_t row = into_rows[g];
    if (!(rows_[row] == kNoNode)) {
      sh_mixes_.push_back({row, ghosts[g].into, ghosts[g].into, 0.0f});
      rows_[row] = kNoNode;
    } else {
      cloud_.opacities[row] = 0.0f;  // a morphing row (or one filled below, which zeroes it again)
    }
  }
  parallelForRange(sh_mixes_.size() - first_into, 4096, [&](size_t begin, size_t end) {  // (distinct rows)
    for (size_t k = first_into + begin; k < first_into + end; ++k) {
      putNode(cloud_, sh_mixes_[k].row, h_, sh_mixes_[k].to);
      cloud_.opacities[sh_mixes_[k].row] = 0.0f;
    }
  });
  if (row_scratch_.size() < total) row_scratch_.resize(total, 0);
  sortByRow(sh_mixes_, total, row_scratch_);
  parallelForRange(ghosts.size(), 4096, [&](size_t begin, size_t end) {
    for (size_t g = begin; g < end; ++g) {
      const Ghost& gh = ghosts[g];
      const float t = static_cast<float>(gh.age) / static_cast<float>(kFadeFrames);
      morphGaussian(cloud_, n + g, rowOf(starts, g), viewOf(nodeAt(h_, gh.into), shAt(h_, gh.into)), t);
      cloud_.opacities[n + g] = starts.opacities[g] + (gh.end_opacity - starts.opacities[g]) * t;
      rows_[n + g] = kNoNode;
    }
  });
}

std::vector<uint32_t>& LodStream::nodeScratch() {
  if (node_scratch_.size() != state_.flags.size()) node_scratch_.assign(state_.flags.size(), 0);
  return node_scratch_;
}

void LodStream::mixShOf(const ShMix& m, float* out) const {
  if (!(m.from == m.to))  // (a node ghosts fade into holds its own SH: putNode)
    mixSh(shAt(h_, m.from), shAt(h_, m.to), m.t, static_cast<size_t>(cloud_.shStride()), out);
}

void LodStream::mixShOfRow(uint32_t row, float* out) const {
  const auto it = std::lower_bound(sh_mixes_.begin(), sh_mixes_.end(), row,
                                   [](const ShMix& x, uint32_t r) { return x.row < r; });
  if (it != sh_mixes_.end() && it->row == row) mixShOf(*it, out);
}

void LodStream::fillMixSh() {
  if (!mix_sh_pending_) return;
  const size_t stride = static_cast<size_t>(cloud_.shStride());
  parallelForRange(sh_mixes_.size(), 4096, [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k)
      mixShOf(sh_mixes_[k], cloud_.sh.data() + size_t{sh_mixes_[k].row} * stride);
  });
  mix_sh_pending_ = false;
}

const GaussianCloud& LodStream::cloud() {
  fillMixSh();
  if (!plain_pending_) return cloud_;
  parallelForRange(rows_.size(), 16384, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      if (!(rows_[i] == kNoNode)) putNode(cloud_, i, h_, rows_[i]);
  });
  plain_pending_ = false;
  return cloud_;
}

void LodStream::drawCut(bool fade, uint64_t max_fading_out) {
  ++frame_;
  if (!background_) setGpuFigures({});  // until a GPU pool draws this frame
  CutState& s = state_;
  std::vector<uint8_t>& flags = s.flags;
  const std::vector<CutEntry>& cut = s.cut;
  const size_t n = cut.size();
  // The chunks drawn from (each stretch of the cut names the chunks where its entries change chunk).
  for (uint32_t i :
       indicesWhere(n, [&](size_t i) { return i == 0 || cut[i].ref.chunk != cut[i - 1].ref.chunk; }))
    if (cut[i].ref.chunk != kNone) last_drawn_[cut[i].ref.chunk] = frame_;
  // What changed since the last draw: its nodes no longer in the cut (with their rows in cloud_), and the
  // rows of nodes it did not draw.
  std::vector<std::pair<uint32_t, uint32_t>> removed;  // (row in cloud_, node id)
  for (uint32_t i :
       indicesWhere(last_cut_.size(), [&](size_t i) { return !(flags[last_cut_[i].id] & kCutIn); }))
    removed.push_back({i, last_cut_[i].id});
  const std::vector<uint32_t> fresh =
      indicesWhere(n, [&](size_t i) { return !(flags[cut[i].id] & kCutDrawn); });
  std::vector<Ghost> ghosts;                       // zooming out (fadeOut)
  GaussianCloud starts = std::move(ghost_spare_);  // (its memory kept from frame to frame)
  if (starts.sh_degree != h_.index.sh_degree) starts.resize(0, h_.index.sh_degree);
  resizeRows(starts, 0);
  if (fade && last_fade_) fadeOut(removed, max_fading_out, ghosts, starts);
  std::vector<Morph> morphs;  // refining (morphIn)
  if (fade && drew_) morphs = morphIn(fresh);
  fillCloud(morphs, ghosts, starts);

  parallelForRange(removed.size(), 65536, [&](size_t begin, size_t end) {  // (distinct nodes)
    for (size_t i = begin; i < end; ++i) flags[removed[i].second] &= static_cast<uint8_t>(~kCutDrawn);
  });
  parallelForRange(fresh.size(), 65536, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) flags[cut[fresh[i]].id] |= kCutDrawn;
  });
  if (!removed.empty() || !fresh.empty() || last_cut_.size() != n) {
    last_cut_.resize(n);
    parallelForRange(n, 65536, [&](size_t begin, size_t end) {
      std::copy(cut.begin() + static_cast<std::ptrdiff_t>(begin),
                cut.begin() + static_cast<std::ptrdiff_t>(end),
                last_cut_.begin() + static_cast<std::ptrdiff_t>(begin));
    });
  }
  morphs_.swap(morphs);
  ghosts_.swap(ghosts);
  ghost_spare_ = std::move(ghost_start_);
  ghost_start_ = std::move(starts);
  drew_ = true, last_fade_ = fade;
}

void LodStream::waitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && !loading_; });
}

StreamStats LodStream::ownStats() const {
  StreamStats s;
  s.resident_nodes = resident_nodes_;
  s.pool_nodes = options_.pool_nodes;
  s.chunk_count = static_cast<uint32_t>(resident_.size());
  for (uint8_t r : resident_) s.resident_chunks += r;
  s.evictions = evictions_;
  s.drawn = cloud_.size();
  s.cut_ms = cut_ms_, s.draw_ms = draw_ms_;
  return s;
}

void LodStream::setGpuFigures(const GpuFigures& f) {
  std::lock_guard<std::mutex> lock(mutex_);
  gpu_figures_ = f;
}

void LodStream::setBackground(bool background) {
  StreamStats s = ownStats();
  std::lock_guard<std::mutex> lock(mutex_);
  background_ = background;
  published_ = std::move(s);
}

void LodStream::publishStats() {
  StreamStats s = ownStats();
  std::lock_guard<std::mutex> lock(mutex_);
  published_ = std::move(s);
}

StreamStats LodStream::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  // In the background the cut's figures are those of the last cut finished; the pool's are the frame
  // thread's (its last frame: what it drew and uploaded).
  StreamStats s = background_ ? published_ : ownStats();
  if (background_) s.drawn = gpu_figures_.rows;
  s.gpu_slots_used = gpu_figures_.slots_used, s.gpu_slots_allocated = gpu_figures_.slots_allocated;
  s.upload_selection_bytes = gpu_figures_.selection_bytes, s.upload_host_rows = gpu_figures_.host_rows;
  s.upload_host_sh_rows = gpu_figures_.host_sh_rows, s.upload_host_bytes = gpu_figures_.host_bytes;
  s.upload_chunk_nodes = gpu_figures_.chunk_nodes;
  s.upload_chunk_bytes = gpu_figures_.chunk_bytes;
  s.pool_ms = gpu_figures_.ms;
  s.chunks_read = chunks_read_;
  s.bytes_read = bytes_read_;
  for (uint8_t f : in_flight_) s.pending += f;
  s.error = error_;
  return s;
}

void selectFrameCuts(std::span<LodStream* const> streams, std::span<const Camera> cameras, uint64_t budget,
                     bool settle, bool fade) {
  const Clock::time_point t_cut = Clock::now();
  // Rows still fading out from earlier frames hold their place in the budget: the cut gets the rest.
  uint64_t fading_out = 0;
  if (fade)
    for (const LodStream* s : streams) fading_out += s->fadingOut();
  CutOptions options;
  options.budget = budget > fading_out ? budget - fading_out : 0;
  std::vector<CutUpdateTarget> targets(streams.size());
  std::vector<std::vector<std::pair<float, uint32_t>>> wanted;
  // Settling: each round installs what the last one asked for; a chunk that cannot fit the pool or fails is
  // not asked for again, so the rounds end (a hierarchy is at most a few chunk levels deep: the bound is
  // wide).
  for (int round = 0; round < 64; ++round) {
    for (size_t i = 0; i < streams.size(); ++i) {
      streams[i]->install();
      targets[i] = {&streams[i]->hierarchy(), cameras[i], &streams[i]->resident(), &streams[i]->cutState()};
    }
    updateCuts(targets, options, fade, &wanted);
    bool missing = false;
    for (size_t i = 0; i < streams.size(); ++i) {
      streams[i]->request(wanted[i]);
      missing |= streams[i]->stats().pending > 0;
    }
    if (!settle || !missing) break;
    for (LodStream* s : streams) s->waitIdle();
  }
  const double cut_ms = msSince(t_cut);
  // The fading rows take what the cuts leave of the budget, object by object.
  uint64_t room = budget;
  for (const LodStream* s : streams) room -= std::min<uint64_t>(room, s->cutState().cut.size());
  for (LodStream* s : streams) {
    const Clock::time_point t_draw = Clock::now();
    s->drawCut(fade, room);
    room -= std::min<uint64_t>(room, s->fadingOutDrawn());
    s->setFrameTimes(cut_ms, msSince(t_draw));
    s->publishStats();
  }
}

}  // namespace sf::lod
