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
  NodeRef ref;
  bool operator<(const Candidate& o) const {  // priority_queue: the largest error on top, then the lowest id
    if (error != o.error) return error < o.error;
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

float screenError(const Node& n, const Camera& cam) {
  const Vec3 p = cam.position();
  const Vec3 d{std::max({n.box_min.x - p.x, 0.0f, p.x - n.box_max.x}),
               std::max({n.box_min.y - p.y, 0.0f, p.y - n.box_max.y}),
               std::max({n.box_min.z - p.z, 0.0f, p.z - n.box_max.z})};
  return std::max(cam.fx, cam.fy) * n.size / std::max(length(d), kNear);
}

CutResult selectCut(const Hierarchy& h, const Camera& cam, const CutOptions& o) {
  assert(cam.validate() == nullptr);
  CutResult result;
  std::vector<NodeRef> chosen;
  std::priority_queue<Candidate> frontier;  // chosen nodes that have children
  const NodeRef root = rootOf(h);
  const Node& root_node = nodeAt(h, root);
  if (o.budget == 0 || !boxVisible(root_node.box_min, root_node.box_max, cam, o.margin_px)) {
    result.culled = o.budget == 0 ? 0 : 1;
    return result;
  }
  uint64_t count = 1;
  auto choose = [&](NodeRef r) {
    const Node& n = nodeAt(h, r);
    if (n.leaf())
      chosen.push_back(r);
    else
      frontier.push({screenError(n, cam), r});
  };
  choose(root);
  std::vector<NodeRef> children, visible;
  while (!frontier.empty()) {
    const Candidate c = frontier.top();
    if (c.error <= o.threshold_px) break;
    children.clear(), visible.clear();
    childrenOf(h, c.ref, children);
    for (NodeRef k : children) {
      const Node& n = nodeAt(h, k);
      if (boxVisible(n.box_min, n.box_max, cam, o.margin_px))
        visible.push_back(k);
      else
        ++result.culled;
    }
    if (count - 1 + visible.size() > o.budget) {
      result.culled -= children.size() - visible.size();  // not refined after all
      result.budget_limited = true;
      break;
    }
    frontier.pop();
    count = count - 1 + visible.size();
    ++result.refined;
    for (NodeRef k : visible) choose(k);
  }
  while (!frontier.empty()) {
    result.max_error_px = std::max(result.max_error_px, frontier.top().error);
    chosen.push_back(frontier.top().ref);
    frontier.pop();
  }
  assert(chosen.size() == count);
  std::sort(chosen.begin(), chosen.end(),
            [&](NodeRef a, NodeRef b) { return nodeAt(h, a).source_index < nodeAt(h, b).source_index; });
  for (NodeRef r : chosen) result.leaves += nodeAt(h, r).leaf();
  result.nodes = std::move(chosen);
  return result;
}

GaussianCloud cutCloud(const Hierarchy& h, const CutResult& cut) {
  GaussianCloud cloud;
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
  return cloud;
}

}  // namespace sf::lod
