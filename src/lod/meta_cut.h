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
//
// The environment (LodMeta::environment, splat-transform's -l -1 gaussians) is drawn at every distance, so
// it is always in the cut, whatever the camera and the budget, and counted: the leaves share what the budget
// leaves after it (none when it alone reaches the budget: the leaves in view then take their coarsest levels,
// and budget_limited is set). Its count is that of its file (readLodMetaEnvironment), 0 when there is none.
#pragma once

#include <cstdint>
#include <vector>

#include "io/lod_meta.h"
#include "render/camera.h"

namespace sf::lod {

struct MetaCut {
  std::vector<int> leaf_level;  // per leaf of LodMeta::leaves: the level drawn, -1 when culled
  uint64_t count = 0;           // gaussians drawn: the leaves' and the environment's
  uint64_t environment = 0;     // of which the environment's
  size_t culled = 0;            // leaves outside the frustum
  size_t finest = 0;            // leaves drawn at their finest level
  bool budget_limited = false;  // a move to a finer level was refused for the budget, or the environment
                                // alone passes it
};

MetaCut cutLodMeta(const LodMeta& meta, const Camera& cam, uint64_t budget, uint64_t environment_count,
                   float margin_px = 16);

}  // namespace sf::lod
