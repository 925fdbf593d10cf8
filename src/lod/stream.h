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
#include <utility>
#include <vector>

#include "core/gaussian_cloud.h"
#include "lod/cut.h"
#include "lod/cut_state.h"
#include "lod/format.h"
#include "render/camera.h"

namespace sf::lod {

// Level changes without a pop: the nodes that replace an ancestor (one refinement or several) start as the
// ancestor and morph into themselves over this many frames. At the start every one of them sits where the
// ancestor sits, with its scale, rotation and colour; the first with its opacity, the others transparent, so
// the first frame draws exactly what the last one did. Position, scale (in log space), rotation (normalised
// lerp), colour and opacity then go linearly to the node's own, reached kFadeFrames frames later. Zooming out
// is the same in reverse: the nodes a coarser node replaces stay drawn (after the cut's own nodes, counted
// against the budget: selectFrameCuts) as they were last drawn and morph into it over kFadeFrames frames, the
// first of them towards its opacity, the others towards transparent, while the coarser node itself is drawn
// transparent; then the coarser node alone is drawn, which is what they had become.
inline constexpr int kFadeFrames = 8;
// The most nodes one drawn node fades into or out of at once: past it (the cut jumping many levels, as when
// the first chunks land under the top of the tree) they pop instead. Every row of a fade starts (or ends) as
// the coarse node, so a fan-out of thousands under a node that covers the screen would put thousands of
// screen-sized gaussians in one frame (262,144 of them: more than 2^31 tile pairs).
inline constexpr size_t kMaxFadeFanOut = 256;

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
  // The GPU pool (lod/gpu_pool.h) of a Vulkan frame, its last frame: slots holding nodes, and the bytes it
  // uploaded (the selection, the gaussians computed on the host, the chunks newly placed in the pool); all 0
  // without a GPU pool (the CPU renderer, or the last frame was drawn without it).
  uint64_t gpu_slots_used = 0, gpu_slots_allocated = 0;
  // Host rows: rows of fading level changes (LodStream::rows()); of them, those uploaded with their SH
  // (ghosts; the others' SH is mixed on the GPU from two slots).
  uint64_t upload_selection_bytes = 0, upload_host_rows = 0, upload_host_sh_rows = 0, upload_host_bytes = 0,
           upload_chunk_nodes = 0, upload_chunk_bytes = 0;
  uint64_t uploadBytes() const { return upload_selection_bytes + upload_host_bytes + upload_chunk_bytes; }
  std::string error;  // the first chunk that failed to load (its path, offset and reason), else empty
  // The host's time in the last frame's steps, ms: the cut (installing chunks, the update of every LOD
  // object's cut together, the requests: the same figure for each object of a frame), this object's draw
  // (its cloud's rows, the fades) and its GPU pool's frame data (the selection, the host rows, the chunks
  // placed; 0 without a pool).
  double cut_ms = 0, draw_ms = 0, pool_ms = 0;
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
  // Frame thread. The frame's cut: stamps the chunks it draws from (the eviction order) and makes the cloud
  // of its nodes (cloud(), rows(), hostRows()), kept until the next call. With `fade`, a node that replaced
  // its parent since the last draw morphs from it over kFadeFrames draws, and nodes a coarser one replaced
  // morph into it (see kFadeFrames).
  void draw(const CutResult& cut, bool fade = false);
  // The same for the cut cutState() holds (selectFrameCuts' updates), with at most `max_fading_out` rows of
  // nodes fading into a coarser one: past that, the fades into the nodes whose rows have faded longest are
  // dropped (those nodes drawn as they are at once), so that the frame holds its budget.
  void drawCut(bool fade, uint64_t max_fading_out = UINT64_MAX);
  // The cut kept from frame to frame (lod/cut_state.h).
  CutState& cutState() { return state_; }
  const CutState& cutState() const { return state_; }
  // Rows of nodes fading into a coarser one that the next frame still draws if their nodes stay: they
  // hold their place in its budget.
  uint64_t fadingOut() const;
  // Rows of the last draw fading into a coarser node.
  uint64_t fadingOutDrawn() const { return ghosts_.size(); }
  // The last draw's cloud, every row. The rows of nodes drawn as they are (rows() names their node) are
  // copied from the nodes at the first call after a draw (in parallel), not by the draw itself: a frame
  // drawn through the GPU pool never reads them on the host.
  const GaussianCloud& cloud();
  // The last draw's cloud as the draw left it: its size and SH degree, and the rows computed on the host
  // (rows() == kNoNode); the other rows are not filled unless cloud() was called since (the GPU pool reads
  // them from its slots).
  const GaussianCloud& hostRows() const { return cloud_; }
  // Where each gaussian of cloud() comes from: the node it copies as it is, or kNoNode for one computed on
  // the host (a node morphing from or into another, a node drawn transparent while others fade into it, a
  // fading node no longer in the cut). The GPU pool (lod/gpu_pool.h) copies the first kind from its slots
  // and uploads only the second.
  const std::vector<NodeRef>& rows() const { return rows_; }
  // The SH of rows computed on the host, where it comes from nodes (ascending by row): a morphing node's is
  // from + (to - from) * t (its ancestor's and its own, as morphGaussian computes it, no fused multiply-add),
  // a node drawn transparent keeps its own (from == to: copied). Host rows not listed (ghosts) have SH of
  // their own, as cloud() holds it.
  struct ShMix {
    uint32_t row = 0;
    NodeRef from, to;
    float t = 0;
  };
  const std::vector<ShMix>& shMixes() const { return sh_mixes_; }
  // Per chunk: 0 when not in memory, else a stamp that changes every time the chunk is installed (a chunk
  // evicted and read again gets a new one). The top chunk (and a hierarchy of one chunk) is always in.
  const std::vector<uint64_t>& installStamps() const { return install_stamp_; }
  // The pool's capacity in nodes (StreamOptions::pool_nodes).
  uint64_t poolNodes() const { return options_.pool_nodes; }
  // Sets the pool's capacity before the first frame (the command line's --lod-pool over the scene's
  // "lod_pool"). sf::Error when a frame was drawn already, or when the top chunk does not fit.
  void setPoolNodes(uint64_t nodes);
  // The GPU pool's figures of its last frame, reported by stats() (the pool sets them).
  struct GpuFigures {
    uint64_t slots_used = 0, slots_allocated = 0, selection_bytes = 0, host_rows = 0, host_sh_rows = 0,
             host_bytes = 0, chunk_nodes = 0, chunk_bytes = 0;
    uint64_t rows = 0;  // gaussians the pool's frame gathers
    double ms = 0;      // the host's time making them
  };
  void setGpuFigures(const GpuFigures& f);
  // The host's time in the last frame's cut and draw (StreamStats::cut_ms, draw_ms; selectFrameCuts sets
  // them).
  void setFrameTimes(double cut_ms, double draw_ms) { cut_ms_ = cut_ms, draw_ms_ = draw_ms; }
  // Cut on another thread (lod/cut_worker.h): from now on stats() gives the figures of the last cut finished
  // (publishStats(), called at the end of each), with the loader's and the GPU pool's as they are, so that
  // the frame thread may read them while the next cut is made.
  void setBackground(bool background);
  // The figures of the cut just made, for stats() in the background (selectFrameCuts calls it).
  void publishStats();
  // Blocks until every chunk asked for is loaded or has failed (offline renders, tests). Does not install.
  void waitIdle();
  StreamStats stats() const;

 private:
  struct Morph;
  struct Ghost;
  void loaderMain();
  // Evicts chunks until `nodes` more fit, least worth first (CutState::chunk_value, then drawn longest ago),
  // only chunks worth less than `worth`; false when that frees too little.
  // Only when the chunks worth less than `worth` make the room: else evicts nothing.
  bool evictFor(uint64_t nodes, float worth);
  bool mayEvict(uint32_t chunk) const;    // resident under the top, not installed for the frame being built
  uint64_t evictable(float worth) const;  // the nodes of the chunks evictFor may take for `worth`
  std::vector<uint32_t> evicted_;         // chunks evicted by this install(), their nodes not freed yet
  // drawCut's parts (stream.cpp).
  uint32_t coarserDrawn(uint32_t id) const;
  NodeRef ancestorRef(uint32_t leaf_id, NodeRef leaf, uint32_t target) const;
  void fadeOut(const std::vector<std::pair<uint32_t, uint32_t>>& removed, uint64_t max_fading_out,
               std::vector<Ghost>& ghosts, GaussianCloud& starts);
  std::vector<Morph> morphIn(const std::vector<uint32_t>& fresh);
  void fillCloud(const std::vector<Morph>& morphs, const std::vector<Ghost>& ghosts,
                 const GaussianCloud& starts);

  Hierarchy h_;
  StreamOptions options_;
  std::vector<uint8_t> resident_;
  std::vector<uint64_t> last_drawn_;  // per chunk: the frame that last drew from it
  std::vector<uint64_t> no_room_;  // per chunk: 1 + the frame during which it found no room (not asked again)
  uint64_t frame_ = 0, resident_nodes_ = 0, evictions_ = 0;
  GaussianCloud cloud_;
  bool plain_pending_ = false;  // cloud_'s rows of nodes drawn as they are not filled yet (cloud())
  // The SH of cloud_'s morphing rows not mixed yet: the GPU pool mixes it itself from the two slots
  // (shMixes), so the host mixes it only where its rows are read (cloud(), a fade out copying them, an
  // eviction of the nodes it comes from).
  bool mix_sh_pending_ = false;
  void fillMixSh();
  void mixShOf(const ShMix& m, float* out) const;   // m's SH into out, where it mixes two nodes
  void mixShOfRow(uint32_t row, float* out) const;  // the SH of row `row` where it morphs (sh_mixes_)
  // Per node id, 0 between uses: counts and indices of one step of a draw (nodeScratch()).
  std::vector<uint32_t> node_scratch_;
  std::vector<uint32_t>& nodeScratch();
  std::vector<uint32_t>
      row_scratch_;              // per row of cloud_, 0 between uses (fillCloud's order of the SH mixes)
  std::vector<NodeRef> rows_;    // per gaussian of cloud_: its node, or kNoNode (rows())
  std::vector<ShMix> sh_mixes_;  // shMixes()
  std::vector<uint64_t> install_stamp_;  // per chunk (installStamps())
  uint64_t installs_ = 0;
  GpuFigures gpu_figures_;  // (under mutex_: the frame thread sets them while a background cut runs)
  double cut_ms_ = 0, draw_ms_ = 0;
  StreamStats ownStats() const;     // the figures the cut and the draw own (not the loader's, the pool's)
  bool background_ = false;         // (under mutex_) stats() gives published_
  StreamStats published_;           // (under mutex_)
  CutState state_;                  // the cut kept from frame to frame, its per-node arrays
  std::vector<CutEntry> last_cut_;  // the cut the last draw drew (cloud_'s first rows)
  bool drew_ = false, last_fade_ = false;
  // A node morphing in from the ancestor it replaced (its row in cloud_ this frame).
  struct Morph {
    uint32_t id = 0, row = 0;
    NodeRef ref, from;
    float start_opacity = 0;  // its opacity at the start: its share of the ancestor's
    int age = 0;              // draws since it appeared
  };
  std::vector<Morph> morphs_;
  // Zooming out: a node the cut no longer draws, fading into the coarser node that replaced it. It starts as
  // it was last drawn (row g of ghost_start_) and goes linearly to `into` (to `end_opacity` in opacity).
  struct Ghost {
    uint32_t into_id = 0;
    NodeRef into;
    float end_opacity = 0;
    int age = 0;
  };
  std::vector<Ghost> ghosts_;  // drawn after the cut's nodes, in this order
  GaussianCloud ghost_start_;
  GaussianCloud ghost_spare_;  // the ghosts' rows of the draw before, their memory reused by the next draw

  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::vector<std::pair<float, uint32_t>> queue_;  // requests not started, most wanted last
  std::vector<std::pair<uint32_t, Chunk>> done_;   // loaded, not installed
  std::vector<uint8_t> in_flight_;                 // per chunk: queued, loading or loaded and not installed
  std::vector<float> want_;                        // per chunk: the priority it was last asked for with
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
