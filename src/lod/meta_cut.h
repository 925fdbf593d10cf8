// A camera's cut through PlayCanvas's streamed LOD (io/lod_meta.h): a level per leaf, under a budget of
// gaussians (docs/lod.md "PlayCanvas's streamed LOD").
//
// Leaves whose box lies wholly outside the view frustum (widened by margin_px, in front of z = 0.2) are left
// out. Every other leaf starts at its coarsest level; then, while the budget allows, the leaf of largest
// error is moved to its next finer level. A leaf's error at a level is the projected size of its box
// (lod/cut.h boxScreenError, its longest edge) times sqrt(finest count / count at the level): the typical
// spacing of its gaussians on screen at that level, relative to the finest. A move that would pass the budget
// is skipped (smaller moves elsewhere may still fit). When even the coarsest levels pass the budget, they are
// the cut and budget_limited is set. Ties go to the lower leaf index; the result is deterministic.
#pragma once

#include <cstdint>
#include <vector>

#include "io/lod_meta.h"
#include "render/camera.h"

namespace sf::lod {

struct MetaCut {
  std::vector<int> leaf_level;  // per leaf of LodMeta::leaves: the level drawn, -1 when culled
  uint64_t count = 0;           // gaussians drawn
  size_t culled = 0;            // leaves outside the frustum
  size_t finest = 0;            // leaves drawn at their finest level
  bool budget_limited = false;  // a move to a finer level was refused for the budget
};

MetaCut cutLodMeta(const LodMeta& meta, const Camera& cam, uint64_t budget, float margin_px = 16);

}  // namespace sf::lod
