// The per-camera budgeted cut through a level-of-detail hierarchy (lod/cut.h).
#include "lod/cut.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <queue>

namespace sf::lod {

namespace {

constexpr float kNear = 0.2f;  // the renderers' near cull (view z <= 0.2)

// A total order of nodes for ties: the top chunk first, then by chunk, then index.
uint64_t nodeId(NodeRef r) {
  return (static_cast<uint64_t>(r.chunk == kNone ? 0 : r.chunk + 1u) << 32) | r.index;
}

struct Candidate {
  float error;
  uint32_t target;
  NodeRef ref;
  NodeRef parent;
  bool operator<(
      const Candidate& o) const {  // priority_queue: the largest error on top, then the lowest target and id
    if (error != o.error) return error < o.error;
    if (target != o.target) return target > o.target;
    return nodeId(ref) > nodeId(o.ref);
  }
};

}  // namespace

NodeRef rootOf(const Hierarchy& h) {
  return h.index.has_top ? NodeRef{kNone, 0} : NodeRef{0, 0};
}

const Node& nodeAt(const Hierarchy& h, NodeRef r) {
  return r.chunk == kNone ? h.top.nodes[r.index] : h.chunks[r.chunk].nodes[r.index];
}

const float* shAt(const Hierarchy& h, NodeRef r) {
  const size_t stride = static_cast<size_t>(shCoeffCount(h.index.sh_degree) * 3);
  const Chunk& c = r.chunk == kNone ? h.top : h.chunks[r.chunk];
  return c.sh.data() + r.index * stride;
}

void childrenOf(const Hierarchy& h, NodeRef r, std::vector<NodeRef>& out) {
  const Node& n = nodeAt(h, r);
  for (uint32_t k = 0; k < n.child_count; ++k)
    out.push_back(n.flags & kChildrenAreChunks ? NodeRef{n.first_child + k, 0}
                                               : NodeRef{r.chunk, n.first_child + k});
}

bool boxVisible(Vec3 lo, Vec3 hi, const Camera& cam, float margin_px) {
  // The box's corners in camera space, tested against each plane of the frustum: z >= near, and
  // -margin <= u <= W + margin (u = fx x / z + cx), likewise v, written without the division.
  Vec3 corners[8];
  for (int i = 0; i < 8; ++i)
    corners[i] = transformPoint(cam.world_to_camera,
                                Vec3{i & 1 ? hi.x : lo.x, i & 2 ? hi.y : lo.y, i & 4 ? hi.z : lo.z});
  auto allOutside = [&](auto&& outside) {
    for (const Vec3& c : corners)
      if (!outside(c)) return false;
    return true;
  };
  const float left = -margin_px, right = static_cast<float>(cam.width) + margin_px;
  const float top = -margin_px, bottom = static_cast<float>(cam.height) + margin_px;
  if (allOutside([&](Vec3 c) { return c.z < kNear; })) return false;
  if (allOutside([&](Vec3 c) { return cam.fx * c.x + (cam.cx - left) * c.z < 0; })) return false;
  if (allOutside([&](Vec3 c) { return cam.fx * c.x + (cam.cx - right) * c.z > 0; })) return false;
  if (allOutside([&](Vec3 c) { return cam.fy * c.y + (cam.cy - top) * c.z < 0; })) return false;
  if (allOutside([&](Vec3 c) { return cam.fy * c.y + (cam.cy - bottom) * c.z > 0; })) return false;
  return true;
}

float boxScreenError(Vec3 lo, Vec3 hi, float size, const Camera& cam) {
  const Vec3 p = cam.position();
  const Vec3 d{std::max({lo.x - p.x, 0.0f, p.x - hi.x}), std::max({lo.y - p.y, 0.0f, p.y - hi.y}),
               std::max({lo.z - p.z, 0.0f, p.z - hi.z})};
  return std::max(cam.fx, cam.fy) * size / std::max(length(d), kNear);
}

float screenError(const Node& n, const Camera& cam) {
  return boxScreenError(n.box_min, n.box_max, n.size, cam);
}

CutResult selectCut(const Hierarchy& h, const Camera& cam, const CutOptions& o) {
  const CutTarget target{&h, cam, nullptr};
  return std::move(selectCuts({&target, 1}, o)[0]);
}

std::vector<CutResult> selectCuts(std::span<const CutTarget> targets, const CutOptions& o,
                                  std::vector<std::vector<std::pair<float, uint32_t>>>* wanted) {
  std::vector<CutResult> results(targets.size());
  std::vector<std::vector<std::pair<NodeRef, NodeRef>>> chosen(targets.size());  // (node, parent)
  if (wanted) wanted->assign(targets.size(), {});
  std::priority_queue<Candidate> frontier;  // chosen nodes that have children
  std::vector<Candidate> held;              // chosen nodes whose children are not all resident
  uint64_t count = 0;
  auto choose = [&](uint32_t t, NodeRef r, NodeRef parent) {
    const Node& n = nodeAt(*targets[t].hierarchy, r);
    if (n.leaf())
      chosen[t].push_back({r, parent});
    else
      frontier.push({screenError(n, targets[t].camera), t, r, parent});
  };
  for (uint32_t t = 0; t < targets.size(); ++t) {
    assert(targets[t].camera.validate() == nullptr);
    const Hierarchy& h = *targets[t].hierarchy;
    const NodeRef root = rootOf(h);
    const Node& root_node = nodeAt(h, root);
    if (!boxVisible(root_node.box_min, root_node.box_max, targets[t].camera, o.margin_px)) {
      results[t].culled = 1;
    } else if (count + 1 > o.budget) {
      results[t].budget_limited = true;  // not even its root fits
    } else {
      ++count;
      choose(t, root, kNoNode);
    }
  }
  std::vector<NodeRef> children, visible;
  std::vector<uint32_t> missing;
  while (!frontier.empty()) {
    const Candidate c = frontier.top();
    if (c.error <= o.threshold_px) break;
    const CutTarget& target = targets[c.target];
    const Hierarchy& h = *target.hierarchy;
    CutResult& result = results[c.target];
    children.clear(), visible.clear(), missing.clear();
    childrenOf(h, c.ref, children);
    // Which children are in view: a chunk's root by its box in the index (its nodes may not be in memory).
    const bool chunk_roots = (nodeAt(h, c.ref).flags & kChildrenAreChunks) != 0;
    for (NodeRef k : children) {
      const Vec3 lo = chunk_roots ? h.index.chunks[k.chunk].box_min : nodeAt(h, k).box_min;
      const Vec3 hi = chunk_roots ? h.index.chunks[k.chunk].box_max : nodeAt(h, k).box_max;
      if (!boxVisible(lo, hi, target.camera, o.margin_px)) continue;
      visible.push_back(k);
      if (chunk_roots && target.resident && !(*target.resident)[k.chunk]) missing.push_back(k.chunk);
    }
    if (!missing.empty()) {  // drawn as it is until its chunks are in
      if (wanted)
        for (uint32_t chunk : missing) (*wanted)[c.target].push_back({c.error, chunk});
      frontier.pop();
      held.push_back(c);
      continue;
    }
    if (count - 1 + visible.size() > o.budget) {
      result.budget_limited = true;
      break;
    }
    result.culled += children.size() - visible.size();
    frontier.pop();
    count = count - 1 + visible.size();
    ++result.refined;
    result.refined_from.push_back({c.ref, c.parent});
    for (NodeRef k : visible) choose(c.target, k, c.ref);
  }
  for (; !frontier.empty(); frontier.pop()) held.push_back(frontier.top());
  for (const Candidate& c : held) {
    results[c.target].max_error_px = std::max(results[c.target].max_error_px, c.error);
    chosen[c.target].push_back({c.ref, c.parent});
  }
  for (uint32_t t = 0; t < targets.size(); ++t) {
    const Hierarchy& h = *targets[t].hierarchy;
    std::sort(chosen[t].begin(), chosen[t].end(), [&](const auto& a, const auto& b) {
      return nodeAt(h, a.first).source_index < nodeAt(h, b.first).source_index;
    });
    for (const auto& [r, parent] : chosen[t]) {
      results[t].nodes.push_back(r);
      results[t].parents.push_back(parent);
      results[t].leaves += nodeAt(h, r).leaf();
    }
  }
  return results;
}

GaussianCloud cutCloud(const Hierarchy& h, const CutResult& cut) {
  GaussianCloud cloud;
  fillCutCloud(h, cut, cloud);
  return cloud;
}

void fillCutCloud(const Hierarchy& h, const CutResult& cut, GaussianCloud& cloud) {
  cloud.resize(cut.nodes.size(), h.index.sh_degree);
  cloud.color_space = h.index.color_space;
  cloud.antialiased = h.index.antialiased;
  cloud.screen_filter = h.index.screen_filter;
  const size_t stride = static_cast<size_t>(cloud.shStride());
  for (size_t i = 0; i < cut.nodes.size(); ++i) {
    const Node& n = nodeAt(h, cut.nodes[i]);
    cloud.positions[i] = n.position;
    cloud.scales[i] = n.scale;
    cloud.rotations[i] = n.rotation;
    cloud.opacities[i] = n.opacity;
    std::copy_n(shAt(h, cut.nodes[i]), stride, cloud.sh.begin() + static_cast<std::ptrdiff_t>(i * stride));
  }
}

}  // namespace sf::lod
