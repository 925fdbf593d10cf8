// Streaming a level-of-detail hierarchy from disk into a fixed pool (lod/stream.h).
#include "lod/stream.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unordered_set>

#include "core/error.h"

namespace sf::lod {

LodStream::LodStream(const std::string& dir, const StreamOptions& options) : options_(options) {
  h_.dir = dir;
  h_.index = loadIndex(dir);
  const size_t n = h_.index.chunks.size();
  h_.chunks.resize(n);
  resident_.assign(n, 0);
  last_drawn_.assign(n, 0);
  in_flight_.assign(n, 0);
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

void LodStream::evictFor(uint64_t nodes) {
  while (resident_nodes_ + nodes > options_.pool_nodes) {
    // The chunk drawn longest ago, never one installed for the frame being built (stamped frame_ + 1). Chunks
    // hang under the top only, so dropping one leaves no other chunk without its parent.
    uint32_t victim = kNone;
    for (uint32_t c = 0; c < resident_.size(); ++c)
      if (resident_[c] && h_.index.has_top && last_drawn_[c] <= frame_ &&
          (victim == kNone || last_drawn_[c] < last_drawn_[victim]))
        victim = c;
    if (victim == kNone) return;
    resident_nodes_ -= h_.chunks[victim].nodes.size();
    h_.chunks[victim] = Chunk{};
    resident_[victim] = 0;
    install_stamp_[victim] = 0;
    ++evictions_;
  }
}

void LodStream::install() {
  std::vector<std::pair<uint32_t, Chunk>> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done.swap(done_);
  }
  for (auto& [chunk, c] : done) {
    const uint64_t nodes = c.nodes.size();
    evictFor(nodes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      in_flight_[chunk] = 0;
    }
    if (resident_nodes_ + nodes >
        options_.pool_nodes) {  // no room this frame: asked for again by a later one
      no_room_[chunk] = frame_ + 1;
      continue;
    }
    h_.chunks[chunk] = std::move(c);
    resident_[chunk] = 1;
    install_stamp_[chunk] = ++installs_;
    resident_nodes_ += nodes;
    last_drawn_[chunk] = frame_ + 1;  // kept for the frame being built, which asked for it
  }
}

void LodStream::request(std::vector<std::pair<float, uint32_t>> wanted) {
  std::sort(wanted.begin(), wanted.end());  // ascending: the most wanted last, as the queue pops
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [p, c] : queue_) in_flight_[c] = 0;  // not started: dropped unless asked for again
  queue_.clear();
  for (const auto& [p, c] : wanted) {
    if (resident_[c] || in_flight_[c] || failed_[c] || no_room_[c] == frame_ + 1) continue;
    in_flight_[c] = 1;
    queue_.push_back({p, c});
  }
  if (!queue_.empty()) wake_.notify_one();
}

namespace {

uint64_t nodeKey(NodeRef r) {
  return (static_cast<uint64_t>(r.chunk == kNone ? 0u : r.chunk + 1u) << 32) | r.index;
}

// One gaussian's shape and colour, where a morph starts or ends.
struct GaussianView {
  Vec3 position, scale;
  Quat rotation;
  const float* sh;
};

GaussianView viewOf(const Node& n, const float* sh) {
  return {n.position, n.scale, n.rotation, sh};
}

// Gaussian i of `c` set to the blend at t in [0, 1] of a and b: position, scale in log space, rotation by
// normalised lerp (on b's side of the sphere), SH linearly. b may be gaussian i itself. Opacity is the
// caller's.
void morphGaussian(GaussianCloud& c, size_t i, const GaussianView& a, const GaussianView& b, float t) {
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
  const size_t stride = static_cast<size_t>(c.shStride());
  float* sh = c.sh.data() + i * stride;
  for (size_t j = 0; j < stride; ++j) sh[j] = mix(a.sh[j], shb[j]);
}

}  // namespace

const GaussianCloud& LodStream::draw(const CutResult& cut, bool fade) {
  ++frame_;
  gpu_figures_ = {};  // until a GPU pool draws this frame
  for (NodeRef r : cut.nodes)
    if (r.chunk != kNone) last_drawn_[r.chunk] = frame_;
  std::unordered_set<uint64_t> drawn;
  drawn.reserve(cut.nodes.size());
  for (NodeRef r : cut.nodes) drawn.insert(nodeKey(r));
  // This cut's chain (fading only): each drawn or refined node's parent.
  std::unordered_map<uint64_t, NodeRef> up;
  if (fade) {
    up.reserve(cut.nodes.size() + cut.refined_from.size());
    for (const auto& [node, parent] : cut.refined_from) up[nodeKey(node)] = parent;
    for (size_t i = 0; i < cut.nodes.size(); ++i) up[nodeKey(cut.nodes[i])] = cut.parents[i];
  }

  // Zooming out: what the last draw showed of the nodes this cut replaced by a coarser one (snapshots of
  // cloud_ as it was drawn, morphs and ghosts included), before cloud_ is filled again.
  std::vector<Ghost> ghosts;
  if (fade && !drawn_.empty()) {
    // The nearest ancestor of a node of the last cut (along that cut's chain) that this cut draws and the
    // last one did not: the coarser node it went into, or none.
    auto coarser = [&](NodeRef r) -> NodeRef {
      for (auto it = up_.find(nodeKey(r)); it != up_.end() && !(it->second == kNoNode);
           it = up_.find(nodeKey(it->second))) {
        const uint64_t k = nodeKey(it->second);
        if (drawn.count(k)) return drawn_.count(k) ? kNoNode : it->second;
      }
      return kNoNode;
    };
    auto snapshot = [&](size_t index) {
      GaussianCloud g;
      g.resize(1, cloud_.sh_degree);
      g.positions[0] = cloud_.positions[index], g.scales[0] = cloud_.scales[index],
      g.rotations[0] = cloud_.rotations[index];
      g.opacities[0] = cloud_.opacities[index];
      const size_t stride = static_cast<size_t>(cloud_.shStride());
      std::copy_n(cloud_.sh.begin() + static_cast<std::ptrdiff_t>(index * stride), stride, g.sh.begin());
      return g;
    };
    const size_t last_count = last_nodes_.size();
    for (size_t i = 0; i < last_count; ++i) {
      if (drawn.count(nodeKey(last_nodes_[i]))) continue;
      const NodeRef into = coarser(last_nodes_[i]);
      if (!(into == kNoNode)) ghosts.push_back({snapshot(i), into, 0.0f, 0});
    }
    for (size_t g = 0; g < ghosts_.size(); ++g) {
      Ghost& gh = ghosts_[g];
      if (drawn.count(nodeKey(gh.into))) {  // still fading into the node it started towards
        if (gh.age + 1 < kFadeFrames) {
          ++gh.age;
          ghosts.push_back(std::move(gh));
        }
        continue;
      }
      // Its node was itself replaced by a coarser one: on from where it is now, into that one.
      const NodeRef into = coarser(gh.into);
      if (!(into == kNoNode)) ghosts.push_back({snapshot(last_count + g), into, 0.0f, 0});
    }
    // The first ghost into a node ends with the node's opacity (continuing ones keep theirs), the others
    // transparent: at the end they draw what the node alone draws.
    std::unordered_set<uint64_t> given;
    for (const Ghost& gh : ghosts)
      if (gh.age > 0 && gh.end_opacity > 0.0f) given.insert(nodeKey(gh.into));
    for (Ghost& gh : ghosts)
      if (gh.age == 0 && given.insert(nodeKey(gh.into)).second) gh.end_opacity = nodeAt(h_, gh.into).opacity;
  }

  fillCutCloud(h_, cut, cloud_);
  rows_ = cut.nodes;  // copies of their nodes, but for the rows computed below
  sh_mixes_.clear();
  std::unordered_map<uint64_t, Morph> morph;
  if (fade && !drawn_.empty()) {
    // Where each new node comes from: its nearest ancestor the last draw drew (the cut's refinements lead
    // there).
    std::vector<NodeRef> source(cut.nodes.size(), kNoNode);
    std::unordered_set<uint64_t> given;  // ancestors whose first new node has taken their opacity
    for (size_t i = 0; i < cut.nodes.size(); ++i) {
      const uint64_t key = nodeKey(cut.nodes[i]);
      if (drawn_.count(key)) {
        if (auto it = morph_.find(key); it != morph_.end() && it->second.age + 1 < kFadeFrames) {
          morph[key] = it->second;  // still on its way from the ancestor it replaced
          ++morph[key].age;
        }
        continue;
      }
      for (NodeRef a = cut.parents[i]; !(a == kNoNode);) {
        if (drawn_.count(nodeKey(a))) {
          source[i] = a;
          break;
        }
        const auto it = up.find(nodeKey(a));
        a = it == up.end() ? kNoNode : it->second;
      }
    }
    for (size_t i = 0; i < cut.nodes.size(); ++i) {
      if (source[i] == kNoNode) continue;
      // The new nodes from one ancestor start stacked on it: the first as the ancestor itself, the others
      // transparent, so the first draw shows exactly what the last one did.
      const bool first = given.insert(nodeKey(source[i])).second;
      morph[nodeKey(cut.nodes[i])] = {source[i], first ? nodeAt(h_, source[i]).opacity : 0.0f, 0};
    }
  }
  const size_t stride = static_cast<size_t>(cloud_.shStride());
  for (size_t i = 0; i < cut.nodes.size(); ++i) {
    const auto it = morph.find(nodeKey(cut.nodes[i]));
    if (it == morph.end()) continue;
    const Morph& m = it->second;
    const float t = static_cast<float>(m.age) / static_cast<float>(kFadeFrames);
    const GaussianView own{cloud_.positions[i], cloud_.scales[i], cloud_.rotations[i],
                           cloud_.sh.data() + i * stride};
    morphGaussian(cloud_, i, viewOf(nodeAt(h_, m.from), shAt(h_, m.from)), own, t);
    cloud_.opacities[i] = m.start_opacity + (cloud_.opacities[i] - m.start_opacity) * t;
    rows_[i] = kNoNode;
    sh_mixes_.push_back({static_cast<uint32_t>(i), m.from, cut.nodes[i], t});
  }
  if (!ghosts.empty()) {
    // The nodes ghosts fade into are drawn transparent meanwhile; the ghosts follow the cut's nodes.
    std::unordered_set<uint64_t> hidden;
    for (const Ghost& gh : ghosts) hidden.insert(nodeKey(gh.into));
    for (size_t i = 0; i < cut.nodes.size(); ++i)
      if (hidden.count(nodeKey(cut.nodes[i]))) {
        if (!(rows_[i] == kNoNode))  // (a morphing row keeps its mix)
          sh_mixes_.push_back({static_cast<uint32_t>(i), cut.nodes[i], cut.nodes[i], 0.0f});
        cloud_.opacities[i] = 0.0f, rows_[i] = kNoNode;
      }
    std::sort(sh_mixes_.begin(), sh_mixes_.end(),
              [](const ShMix& a, const ShMix& b) { return a.row < b.row; });
    const size_t n = cut.nodes.size();
    const size_t total = n + ghosts.size();  // (GaussianCloud::resize would clear the SH)
    cloud_.positions.resize(total), cloud_.scales.resize(total), cloud_.rotations.resize(total),
        cloud_.opacities.resize(total);
    cloud_.sh.resize(total * stride);
    rows_.resize(total, kNoNode);
    for (size_t g = 0; g < ghosts.size(); ++g) {
      const Ghost& gh = ghosts[g];
      const float t = static_cast<float>(gh.age) / static_cast<float>(kFadeFrames);
      const GaussianCloud& a = gh.start;
      morphGaussian(cloud_, n + g, {a.positions[0], a.scales[0], a.rotations[0], a.sh.data()},
                    viewOf(nodeAt(h_, gh.into), shAt(h_, gh.into)), t);
      cloud_.opacities[n + g] = a.opacities[0] + (gh.end_opacity - a.opacities[0]) * t;
    }
  }
  drawn_.swap(drawn);
  morph_.swap(morph);
  ghosts_.swap(ghosts);
  up_.swap(up);
  if (fade)
    last_nodes_ = cut.nodes;
  else
    last_nodes_.clear();
  return cloud_;
}

void LodStream::waitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && !loading_; });
}

StreamStats LodStream::stats() const {
  StreamStats s;
  s.resident_nodes = resident_nodes_;
  s.pool_nodes = options_.pool_nodes;
  s.chunk_count = static_cast<uint32_t>(resident_.size());
  for (uint8_t r : resident_) s.resident_chunks += r;
  s.evictions = evictions_;
  s.drawn = cloud_.size();
  s.gpu_slots_used = gpu_figures_.slots_used, s.gpu_slots_allocated = gpu_figures_.slots_allocated;
  s.upload_selection_bytes = gpu_figures_.selection_bytes, s.upload_host_rows = gpu_figures_.host_rows;
  s.upload_host_sh_rows = gpu_figures_.host_sh_rows, s.upload_host_bytes = gpu_figures_.host_bytes;
  s.upload_chunk_nodes = gpu_figures_.chunk_nodes;
  s.upload_chunk_bytes = gpu_figures_.chunk_bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  s.chunks_read = chunks_read_;
  s.bytes_read = bytes_read_;
  for (uint8_t f : in_flight_) s.pending += f;
  s.error = error_;
  return s;
}

void selectFrameCuts(std::span<LodStream* const> streams, std::span<const Camera> cameras, uint64_t budget,
                     bool settle, bool fade) {
  CutOptions options;
  options.budget = budget;
  std::vector<CutTarget> targets(streams.size());
  std::vector<std::vector<std::pair<float, uint32_t>>> wanted;
  std::vector<CutResult> cuts;
  // Settling: each round installs what the last one asked for; a chunk that cannot fit the pool or fails is
  // not asked for again, so the rounds end (a hierarchy is at most a few chunk levels deep: the bound is
  // wide).
  for (int round = 0; round < 64; ++round) {
    for (size_t i = 0; i < streams.size(); ++i) {
      streams[i]->install();
      targets[i] = {&streams[i]->hierarchy(), cameras[i], &streams[i]->resident()};
    }
    cuts = selectCuts(targets, options, &wanted);
    bool missing = false;
    for (size_t i = 0; i < streams.size(); ++i) {
      streams[i]->request(wanted[i]);
      missing |= streams[i]->stats().pending > 0;
    }
    if (!settle || !missing) break;
    for (LodStream* s : streams) s->waitIdle();
  }
  for (size_t i = 0; i < streams.size(); ++i) streams[i]->draw(cuts[i], fade);
}

}  // namespace sf::lod
