// A level-of-detail hierarchy streamed from disk into a fixed pool (docs/lod.md "Streaming"): the index and
// the top chunk are read when it opens; every other chunk is read by a loader thread of its own when a cut
// asks for it, most wanted first (the screen-space error of the node waiting for it), and installed between
// frames. A frame never waits for the disk: a node whose chunks are not in yet is drawn itself (its parent
// stands in for them, lod/cut.h selectCuts). The pool holds at most `pool_nodes` nodes; installing past it
// evicts the chunks least recently drawn, never one installed for the frame being built (a chunk that finds
// no room is not asked for again until the next frame).
//
// Frames (scene/scene.cpp poseScene): selectFrameCuts cuts every LOD object of a frame under one budget of
// gaussians, asks each stream for the chunks its cut wants and builds each object's cloud.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/gaussian_cloud.h"
#include "lod/cut.h"
#include "lod/format.h"
#include "render/camera.h"

namespace sf::lod {

// Level changes without a pop: the nodes that replace an ancestor (one refinement or several) start as the
// ancestor and morph into themselves over this many frames. At the start every one of them sits where the
// ancestor sits, with its scale, rotation and colour; the first with its opacity, the others transparent, so
// the first frame draws exactly what the last one did. Position, scale (in log space), rotation (normalised
// lerp), colour and opacity then go linearly to the node's own, reached kFadeFrames frames later. Zooming out
// is the same in reverse: the nodes a coarser node replaces stay drawn (after the cut's own nodes, beyond
// the budget for those frames) as they were last drawn and morph into it over kFadeFrames frames, the first
// of them towards its opacity, the others towards transparent, while the coarser node itself is drawn
// transparent; then the coarser node alone is drawn, which is what they had become.
inline constexpr int kFadeFrames = 8;

struct StreamOptions {
  uint64_t pool_nodes = 16u << 20;  // nodes in memory at most (the top chunk counts; 16M by default)
};

struct StreamStats {
  uint64_t resident_nodes = 0;  // nodes in the pool now (the top chunk's included)
  uint64_t pool_nodes = 0;      // the pool's capacity
  uint32_t resident_chunks = 0, chunk_count = 0;
  uint64_t chunks_read = 0;  // chunks the loader read since the stream opened
  uint64_t bytes_read = 0;
  uint64_t evictions = 0;  // chunks dropped from the pool for others
  uint32_t pending = 0;    // chunks asked for and not installed yet
  uint64_t drawn = 0;      // gaussians of the last frame's cut
  std::string error;       // the first chunk that failed to load (its path, offset and reason), else empty
};

class LodStream {
 public:
  // Reads the index and the top chunk of `dir` (sf::Error / FormatError as lod/format.h) and starts the
  // loader.
  LodStream(const std::string& dir, const StreamOptions& options = {});
  ~LodStream();
  LodStream(const LodStream&) = delete;
  LodStream& operator=(const LodStream&) = delete;

  const Hierarchy& hierarchy() const { return h_; }
  const std::vector<uint8_t>& resident() const { return resident_; }
  const std::string& dir() const { return h_.dir; }

  // Frame thread. Installs the chunks the loader has finished, evicting as the pool needs.
  void install();
  // Frame thread. The chunks this frame's cut wants, with their priorities (larger first); replaces the
  // requests of earlier frames that were not started.
  void request(std::vector<std::pair<float, uint32_t>> wanted);
  // Frame thread. The frame's cut: stamps the chunks it draws from (the eviction order) and builds the cloud
  // of its nodes, kept until the next call. With `fade`, a node that replaced its parent since the last draw
  // morphs from it over kFadeFrames draws, and nodes a coarser one replaced morph into it (see kFadeFrames).
  const GaussianCloud& draw(const CutResult& cut, bool fade = false);
  const GaussianCloud& cloud() const { return cloud_; }
  // Blocks until every chunk asked for is loaded or has failed (offline renders, tests). Does not install.
  void waitIdle();
  StreamStats stats() const;

 private:
  void loaderMain();
  void evictFor(uint64_t nodes);

  Hierarchy h_;
  StreamOptions options_;
  std::vector<uint8_t> resident_;
  std::vector<uint64_t> last_drawn_;  // per chunk: the frame that last drew from it
  std::vector<uint64_t> no_room_;  // per chunk: 1 + the frame during which it found no room (not asked again)
  uint64_t frame_ = 0, resident_nodes_ = 0, evictions_ = 0;
  GaussianCloud cloud_;
  struct Morph {
    NodeRef from;             // the ancestor it replaced
    float start_opacity = 0;  // its opacity at the start: its share of the ancestor's
    int age = 0;              // draws since it appeared
  };
  std::unordered_set<uint64_t> drawn_;         // the nodes the last draw drew
  std::unordered_map<uint64_t, Morph> morph_;  // those still morphing in
  // Zooming out: a node the cut no longer draws, fading into the coarser node that replaced it. It starts as
  // it was last drawn (`start`: one gaussian) and goes linearly to `into` (to `end_opacity` in opacity).
  struct Ghost {
    GaussianCloud start;
    NodeRef into;
    float end_opacity = 0;
    int age = 0;
  };
  std::vector<Ghost> ghosts_;                 // drawn after the cut's nodes, in this order
  std::vector<NodeRef> last_nodes_;           // the last cut's nodes (cloud_'s first gaussians)
  std::unordered_map<uint64_t, NodeRef> up_;  // the last cut: each drawn or refined node's parent

  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::vector<std::pair<float, uint32_t>> queue_;  // requests not started, most wanted last
  std::vector<std::pair<uint32_t, Chunk>> done_;   // loaded, not installed
  std::vector<uint8_t> in_flight_;                 // per chunk: queued, loading or loaded and not installed
  bool loading_ = false, stop_ = false;
  uint64_t chunks_read_ = 0, bytes_read_ = 0;
  std::string error_;
  std::vector<uint8_t> failed_;  // per chunk: failed to load (not asked for again)
  std::thread loader_;
};

// One frame's LOD objects: their joint cut under `budget` gaussians (selectCuts, each camera in its object's
// own space), the chunks each cut wants asked for, each object's cloud built (LodStream::cloud()). With
// `settle` the frame waits for the chunks its cut wants and cuts again until none is missing (offline
// renders: the image of a fully loaded scene, as far as the pool allows); without, it never waits. `fade`:
// level changes morph over kFadeFrames frames, both ways (LodStream::draw).
void selectFrameCuts(std::span<LodStream* const> streams, std::span<const Camera> cameras, uint64_t budget,
                     bool settle, bool fade = false);

}  // namespace sf::lod
