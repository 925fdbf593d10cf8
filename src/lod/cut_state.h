// The frame's cut kept from one frame to the next (docs/lod.md "In the frame"): per-node flat arrays (indexed
// by a node's id: the top chunk's nodes first, then each chunk's in order, as lod/cut.h orders ties) and the
// cut's nodes in input-row order. Each frame the cut is refined and coarsened from the last one instead of
// being cut again from the root: the nodes kept are measured again for the new camera (error, view; the
// cut's leaves are only counted, as nothing reads a leaf's error or view), then
// the chosen node of smallest error is coarsened while it ranks at or below the frontier's largest, and the
// frontier's largest is refined while the budget allows. For a given camera this reaches the cut selectCuts
// makes from the root (the same nodes; tested), at the cost of the nodes that changed plus one pass over the
// cut instead of a priority queue over every node of it.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "lod/cut.h"

namespace sf::lod {

// Node flags (CutState::flags).
inline constexpr uint8_t kCutIn = 1;        // in the cut
inline constexpr uint8_t kCutRefined = 2;   // replaced by its children in view
inline constexpr uint8_t kCutInside = 4;    // its box lies wholly inside the view (not kept for leaves)
inline constexpr uint8_t kCutHeld = 8;      // waits for chunks this frame (drawn itself)
inline constexpr uint8_t kCutListed = 16;   // in CutState::cut
inline constexpr uint8_t kCutDrawn = 32;    // drawn by the last frame (LodStream::draw)
inline constexpr uint8_t kCutScratch = 64;  // a scratch mark, clear between uses (draw, the update)

struct CutEntry {
  uint64_t source = 0;  // the node's source_index: the cut's order
  uint32_t id = 0;
  NodeRef ref;
};

// A node's place in an update's refinement order (updateCuts): its error, target and id.
struct CutKey {
  float e = 0;
  uint32_t t = 0;
  uint32_t id = 0;
  NodeRef ref;
};

// A child of a frontier node, measured ahead of its refinement (updateCuts): what refine writes for it.
struct CutKid {
  uint64_t source = 0;
  NodeRef ref;
  uint32_t id = 0;
  float e = 0;
  bool inside = false, leaf = false;
};

// A node the update's pass over the cut measures, and whether its box lies wholly inside the view.
struct CutItem {
  NodeRef ref;
  bool inside = false;
};

struct CutState {
  // Sets the ids of `index` (every chunk's nodes, whether in memory or not) and the top chunk's parents.
  void init(const Hierarchy& h);
  // A chunk installed: its nodes' parents. A chunk evicted: its nodes' flags cleared.
  void installChunk(const Hierarchy& h, uint32_t chunk);
  void evictChunk(const Hierarchy& h, uint32_t chunk);
  uint32_t idOf(NodeRef r) const { return r.chunk == kNone ? r.index : base[r.chunk] + r.index; }
  // The parent of node `r` (its id: parent[idOf(r)], not kNone).
  NodeRef parentRef(const Hierarchy& h, NodeRef r, uint32_t parent_id) const {
    if (r.chunk == kNone || (r.index == 0 && h.index.has_top)) return {kNone, parent_id};
    return {r.chunk, parent_id - base[r.chunk]};
  }
  // Replaces the cut by `cut` (selectCuts' result for this hierarchy).
  void assign(const Hierarchy& h, const CutResult& cut);

  std::vector<uint32_t> base;    // per chunk: the id of its first node (top nodes are 0 .. top count - 1)
  std::vector<uint32_t> parent;  // per node: its parent's id (kNone for the root)
  std::vector<float> error;      // per refined node and node of the cut with children: its error for the
                                 // last camera (a leaf's is not kept up to date)
  std::vector<uint8_t> flags;    // per node: kCut*
  std::vector<uint8_t> visible;  // per refined node: its children in view
  std::vector<CutEntry> cut;     // the cut's nodes by source_index
  // Per chunk: what it is worth to the last update's cut: the error of the node it hangs under where that
  // node is refined with the chunk in view, or is the refinement the update waited for (its chunks coming
  // in), else 0 (LodStream's eviction order).
  std::vector<float> chunk_value;
  bool active = false;         // a cut is held (else the next update starts from the root)
  bool stopped = false;        // the last update ended at a refinement the budget refused
  float stop_error = 0;        // its error
  uint64_t fallbacks = 0;      // updates that were corrected to the greedy order (vis-0 refinements)
  std::vector<uint32_t> held;  // nodes flagged kCutHeld
  // The update's working arrays, kept from frame to frame for their memory only (at a 4M budget they are
  // tens of MB each, and a block that size allocated afresh each frame is mapped, faulted in page by page
  // and zeroed again every frame): the frontier and refined nodes of the pass over the cut, the level it
  // measures next, the cut the update writes (swapped with `cut`), the sorts' scratch and the children
  // measured ahead of the refinements.
  struct Buffers {
    std::vector<CutKey> frontier, refined, key_scratch;
    std::vector<std::vector<CutKid>> kids;
    std::vector<CutItem> level;
    std::vector<CutEntry> next_cut, sort_scratch;
  } buffers;
};

struct CutUpdateTarget {
  const Hierarchy* hierarchy = nullptr;
  Camera camera;
  const std::vector<uint8_t>* resident = nullptr;
  CutState* state = nullptr;
};

// Updates every target's cut for its camera under `budget` gaussians together (selectCuts' rule: the node of
// largest error refined first, whichever target it is in, while options.budget allows), starting from the
// cuts the states hold. With `fade`, the nodes drawn by the last frame (kCutDrawn) that this update's
// coarsenings take out of the cut are counted against the budget of its refinements: they stay drawn while
// they fade out (LodStream::draw), so the refinements leave them room. Missing chunks the cut wants are
// appended to wanted[target] with their priority.
void updateCuts(std::span<const CutUpdateTarget> targets, const CutOptions& options, bool fade,
                std::vector<std::vector<std::pair<float, uint32_t>>>* wanted);

}  // namespace sf::lod
