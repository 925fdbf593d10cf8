// Streaming a level-of-detail hierarchy from disk into a fixed pool (lod/stream.h).
#include "lod/stream.h"

#include <algorithm>
#include <unordered_set>
#include <cmath>
#include <filesystem>

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
  if (h_.index.has_top) {
    h_.top = loadChunk(dir, h_.index, kNone);
    checkChunkParents(h_);
    resident_nodes_ = h_.top.nodes.size();
  } else {  // one chunk: it is the root, read now
    h_.chunks[0] = loadChunk(dir, h_.index, 0);
    resident_[0] = 1;
    resident_nodes_ = h_.chunks[0].nodes.size();
  }
  if (resident_nodes_ > options_.pool_nodes)
    throw Error(dir + ": the pool of " + std::to_string(options_.pool_nodes) + " nodes cannot hold the hierarchy's " +
                (h_.index.has_top ? "top chunk" : "only chunk") + " of " + std::to_string(resident_nodes_) + " nodes");
  cloud_.resize(0, h_.index.sh_degree);
  cloud_.color_space = h_.index.color_space;
  cloud_.antialiased = h_.index.antialiased;
  cloud_.screen_filter = h_.index.screen_filter;
  loader_ = std::thread([this] { loaderMain(); });
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
      if (resident_[c] && h_.index.has_top && last_drawn_[c] <= frame_ && (victim == kNone || last_drawn_[c] < last_drawn_[victim]))
        victim = c;
    if (victim == kNone) return;
    resident_nodes_ -= h_.chunks[victim].nodes.size();
    h_.chunks[victim] = Chunk{};
    resident_[victim] = 0;
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
    if (resident_nodes_ + nodes > options_.pool_nodes) {  // no room this frame: asked for again by a later one
      no_room_[chunk] = frame_ + 1;
      continue;
    }
    h_.chunks[chunk] = std::move(c);
    resident_[chunk] = 1;
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

uint64_t nodeKey(NodeRef r) { return (static_cast<uint64_t>(r.chunk == kNone ? 0u : r.chunk + 1u) << 32) | r.index; }

}  // namespace

const GaussianCloud& LodStream::draw(const CutResult& cut, bool fade) {
  ++frame_;
  for (NodeRef r : cut.nodes)
    if (r.chunk != kNone) last_drawn_[r.chunk] = frame_;
  fillCutCloud(h_, cut, cloud_);
  std::unordered_set<uint64_t> drawn;
  drawn.reserve(cut.nodes.size());
  for (NodeRef r : cut.nodes) drawn.insert(nodeKey(r));
  std::unordered_map<uint64_t, Morph> morph;
  if (fade && !drawn_.empty()) {
    // Where each new node comes from: its nearest ancestor the last draw drew (the cut's refinements lead there).
    std::unordered_map<uint64_t, NodeRef> up;
    up.reserve(cut.refined_from.size());
    for (const auto& [node, parent] : cut.refined_from) up[nodeKey(node)] = parent;
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
    auto mix = [t](float a, float b) { return a + (b - a) * t; };
    const Node& p = nodeAt(h_, m.from);
    Vec3& pos = cloud_.positions[i];
    pos = p.position + (pos - p.position) * t;
    Vec3& sc = cloud_.scales[i];
    sc = {std::exp(mix(std::log(p.scale.x), std::log(sc.x))), std::exp(mix(std::log(p.scale.y), std::log(sc.y))),
          std::exp(mix(std::log(p.scale.z), std::log(sc.z)))};
    const Quat q = cloud_.rotations[i];
    const float sign = p.rotation.w * q.w + p.rotation.x * q.x + p.rotation.y * q.y + p.rotation.z * q.z < 0 ? -1.0f : 1.0f;
    cloud_.rotations[i] = normalize(Quat{mix(p.rotation.w, sign * q.w), mix(p.rotation.x, sign * q.x), mix(p.rotation.y, sign * q.y),
                                         mix(p.rotation.z, sign * q.z)});
    cloud_.opacities[i] = mix(m.start_opacity, cloud_.opacities[i]);
    const float* psh = shAt(h_, m.from);
    float* sh = cloud_.sh.data() + i * stride;
    for (size_t j = 0; j < stride; ++j) sh[j] = mix(psh[j], sh[j]);
  }
  drawn_.swap(drawn);
  morph_.swap(morph);
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
  std::lock_guard<std::mutex> lock(mutex_);
  s.chunks_read = chunks_read_;
  s.bytes_read = bytes_read_;
  for (uint8_t f : in_flight_) s.pending += f;
  s.error = error_;
  return s;
}

void selectFrameCuts(std::span<LodStream* const> streams, std::span<const Camera> cameras, uint64_t budget, bool settle,
                     bool fade) {
  CutOptions options;
  options.budget = budget;
  std::vector<CutTarget> targets(streams.size());
  std::vector<std::vector<std::pair<float, uint32_t>>> wanted;
  std::vector<CutResult> cuts;
  // Settling: each round installs what the last one asked for; a chunk that cannot fit the pool or fails is
  // not asked for again, so the rounds end (a hierarchy is at most a few chunk levels deep: the bound is wide).
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
