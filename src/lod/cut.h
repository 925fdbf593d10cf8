// The per-camera budgeted cut through a level-of-detail hierarchy (docs/lod.md "The cut"): which nodes to
// draw for one camera so that at most `budget` gaussians are drawn, refining first where the screen-space
// error is largest.
//
// A node's screen-space error is the projected size of its box: f * size / distance, with f the larger focal
// length in pixels, size the box's longest edge and distance from the camera centre to the box (at least the
// renderer's near distance 0.2). Starting from the root, the visible node of largest error (ties: the lower
// node id) is replaced by its visible children while its error exceeds `threshold_px` and the count after
// the replacement stays within the budget; the first refinement that would exceed the budget ends the cut.
// Nodes whose box lies wholly outside the view frustum (widened by `margin_px` on every side, in front of
// z = 0.2) are dropped. So every leaf whose box is in view is covered by exactly one chosen node, its own
// or an ancestor's (no cracks, no double cover), and a budget at or above the visible leaves with a
// threshold of 0 selects exactly the visible leaves.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/gaussian_cloud.h"
#include "lod/format.h"
#include "render/camera.h"

namespace sf::lod {

// A node of a loaded hierarchy: its chunk (kNone for the top chunk) and its index there.
struct NodeRef {
  uint32_t chunk = kNone;
  uint32_t index = 0;
  friend bool operator==(NodeRef a, NodeRef b) { return a.chunk == b.chunk && a.index == b.index; }
};

struct CutOptions {
  uint64_t budget = 1000000;  // most gaussians drawn
  float threshold_px =
      0;  // nodes whose error is at or below this are not refined (0: the budget alone decides)
  float margin_px = 16;  // frustum widened by this many pixels on every side (splats reach past their box's
                         // projection by their 2D dilation)
};

// "No node": the parent of a root.
inline constexpr NodeRef kNoNode{kNone, kNone};

struct CutResult {
  std::vector<NodeRef>
      nodes;  // the chosen nodes, ordered by source_index (a full cut: the input's row order)
  std::vector<NodeRef> parents;  // per chosen node, the node it was refined from (kNoNode for a root)
  std::vector<std::pair<NodeRef, NodeRef>>
      refined_from;             // every node refined away, with its own parent (kNoNode for a root)
  uint64_t leaves = 0;          // how many of them are leaves
  uint64_t refined = 0;         // nodes replaced by their children
  uint64_t culled = 0;          // nodes dropped outside the frustum
  bool budget_limited = false;  // a refinement was refused for the budget
  float max_error_px = 0;       // the largest error among the chosen nodes that could still be refined
};

// The root of a hierarchy.
NodeRef rootOf(const Hierarchy& h);
const Node& nodeAt(const Hierarchy& h, NodeRef ref);
// SH coefficients of a node (shStride floats).
const float* shAt(const Hierarchy& h, NodeRef ref);
// The children of a node, appended to `out`.
void childrenOf(const Hierarchy& h, NodeRef ref, std::vector<NodeRef>& out);

// Whether a box may be seen by the camera (conservative: false only when the box lies wholly behind z = 0.2
// or wholly outside one side of the image widened by margin_px).
bool boxVisible(Vec3 box_min, Vec3 box_max, const Camera& cam, float margin_px);
// A node's screen-space error in pixels: boxScreenError of its box and longest edge.
float screenError(const Node& node, const Camera& cam);
// f * size / distance: f the larger focal length in pixels, distance from the camera centre to the box (at
// least the renderer's near distance 0.2).
float boxScreenError(Vec3 box_min, Vec3 box_max, float size, const Camera& cam);

// The cut for one camera. The camera must be valid (Camera::validate).
CutResult selectCut(const Hierarchy& h, const Camera& cam, const CutOptions& options);

// One hierarchy of a frame's joint cut: its camera in the hierarchy's own space, and which of its chunks are
// in memory (one byte per chunk, non-zero: resident; null: all of them, a loaded Hierarchy).
struct CutTarget {
  const Hierarchy* hierarchy = nullptr;
  Camera camera;
  const std::vector<uint8_t>* resident = nullptr;
};

// The joint cut of several hierarchies under one budget (a frame's LOD objects): the rule of selectCut over
// every target at once, the visible node of largest error refined first whichever hierarchy it is in (ties:
// the lower target, then the lower node id). A node whose children include the root of a chunk that is not
// resident is held (drawn itself, not refined) and its missing chunks are added to `wanted[target]` with the
// node's error as their priority; the cut goes on with the next node. Roots beyond the budget are left out.
// With one target whose chunks are all resident this is selectCut.
std::vector<CutResult> selectCuts(std::span<const CutTarget> targets, const CutOptions& options,
                                  std::vector<std::vector<std::pair<float, uint32_t>>>* wanted = nullptr);

// The chosen nodes as a cloud, in the cut's order, with the hierarchy's SH degree, colour space and
// antialiased flag.
GaussianCloud cutCloud(const Hierarchy& h, const CutResult& cut);
// The same into `cloud`, reusing its storage.
void fillCutCloud(const Hierarchy& h, const CutResult& cut, GaussianCloud& cloud);

}  // namespace sf::lod
