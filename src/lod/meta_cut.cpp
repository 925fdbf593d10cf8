// A camera's cut through PlayCanvas's streamed LOD (lod/meta_cut.h).
#include "lod/meta_cut.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <queue>

#include "lod/cut.h"

namespace sf::lod {

namespace {

struct Candidate {  // a leaf that can move to a finer level
  float error;
  size_t leaf;
  bool operator<(
      const Candidate& o) const {  // priority_queue: the largest error on top, then the lowest leaf
    return error != o.error ? error < o.error : leaf > o.leaf;
  }
};

}  // namespace

MetaCut cutLodMeta(const LodMeta& meta, const Camera& cam, uint64_t budget, uint64_t environment_count,
                   float margin_px) {
  MetaCut cut;
  // The environment is always drawn; the leaves are chosen under what remains of the budget, and cut.count
  // holds the leaves' gaussians until the environment's are added at the end.
  cut.environment = environment_count;
  const bool environment_passes = environment_count > budget;
  budget = environment_passes ? 0 : budget - environment_count;
  cut.leaf_level.assign(meta.leaves.size(), -1);
  std::vector<size_t> at(meta.leaves.size(), 0);  // index into the leaf's levels (ascending: finest first)
  std::vector<float> size_px(meta.leaves.size(), 0);
  std::vector<uint8_t> visible(meta.leaves.size(), 0);
  std::priority_queue<Candidate> frontier;
  auto error = [&](size_t i) {
    const LodMetaLeaf& leaf = meta.leaves[i];
    const double finest = static_cast<double>(std::max<uint64_t>(leaf.ranges.front().count, 1));
    const double here = static_cast<double>(std::max<uint64_t>(leaf.ranges[at[i]].count, 1));
    return static_cast<float>(size_px[i] * std::sqrt(finest / here));
  };
  for (size_t i = 0; i < meta.leaves.size(); ++i) {
    const LodMetaLeaf& leaf = meta.leaves[i];
    if (!boxVisible(leaf.box_min, leaf.box_max, cam, margin_px)) {
      ++cut.culled;
      continue;
    }
    visible[i] = 1;
    const Vec3 e = leaf.box_max - leaf.box_min;
    size_px[i] = boxScreenError(leaf.box_min, leaf.box_max, std::max({e.x, e.y, e.z}), cam);
    at[i] = leaf.levels.size() - 1;  // the coarsest
    cut.count += leaf.ranges[at[i]].count;
    if (at[i] > 0) frontier.push({error(i), i});
  }
  cut.budget_limited = cut.count > budget;
  while (!frontier.empty() && cut.count <= budget) {
    const size_t i = frontier.top().leaf;
    frontier.pop();
    const LodMetaLeaf& leaf = meta.leaves[i];
    const uint64_t now = leaf.ranges[at[i]].count, finer = leaf.ranges[at[i] - 1].count;
    if (cut.count - now + finer > budget) {
      cut.budget_limited = true;
      continue;
    }
    cut.count = cut.count - now + finer;
    --at[i];
    if (at[i] > 0) frontier.push({error(i), i});
  }
  for (size_t i = 0; i < meta.leaves.size(); ++i) {
    if (!visible[i]) continue;
    cut.leaf_level[i] = meta.leaves[i].levels[at[i]];
    cut.finest += at[i] == 0;
  }
  cut.count += cut.environment;
  cut.budget_limited = cut.budget_limited || environment_passes;
  return cut;
}

}  // namespace sf::lod
