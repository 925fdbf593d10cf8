#include "scene/kinds/lod.h"

namespace sf {

std::string LodObject::describe(const SceneObject&) const {
  return "level-of-detail hierarchy of " + std::to_string(stream_->hierarchy().index.leaf_count) +
         " gaussians";
}

void LodObject::pose(const SceneObject& object, const PoseContext&, PoseSink& out) const {
  if (stream_->cloud().size() == 0) return;  // this frame's cut (poseScene cut every LOD object first)
  RenderObject ro{&stream_->cloud(), object.object_to_world};
  ro.dynamic = true;  // new contents at the same address every frame
  out.objects.push_back(ro);
}

void loadLodObject(SceneObject& obj, const std::string& dir, uint64_t pool_nodes) {
  lod::StreamOptions options;
  options.pool_nodes = pool_nodes;
  auto stream = std::make_shared<lod::LodStream>(dir, options);
  const lod::Index& x = stream->hierarchy().index;
  GaussianCloud proxy;
  proxy.resize(8, x.sh_degree);
  proxy.color_space = x.color_space;
  proxy.antialiased = x.antialiased;
  proxy.screen_filter = x.screen_filter;
  for (int i = 0; i < 8; ++i) {
    proxy.positions[static_cast<size_t>(i)] = {i & 1 ? x.p99.x : x.p01.x, i & 2 ? x.p99.y : x.p01.y,
                                               i & 4 ? x.p99.z : x.p01.z};
    proxy.opacities[static_cast<size_t>(i)] = 0;
  }
  obj.cloud = std::make_shared<const GaussianCloud>(std::move(proxy));
  obj.kind = std::make_shared<LodObject>(std::move(stream));
}

}  // namespace sf
