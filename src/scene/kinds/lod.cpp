#include "scene/kinds/lod.h"

#include "lod/gpu_pool.h"

namespace sf {

struct LodObject::Gpu {
  std::unique_ptr<lod::GpuPool> pool;
};

LodObject::LodObject(std::shared_ptr<lod::LodStream> stream)
    : stream_(std::move(stream)), gpu_(std::make_shared<Gpu>()) {
  const lod::Index& x = stream_->hierarchy().index;
  template_.resize(0, x.sh_degree);
  template_.color_space = x.color_space;
  template_.antialiased = x.antialiased;
  template_.screen_filter = x.screen_filter;
}

lod::GpuPool* LodObject::gpuPool() const {
  return gpu_->pool.get();
}

bool LodObject::gpuPoolUngiven() const {
  return gpu_->pool && !gpu_->pool->given();
}

void LodObject::attachGpu(const SceneObject&, GpuAttach& gpu) const {
  if (gpu_->pool) return;
  auto pass = std::static_pointer_cast<const lod::GatherPass>(
      gpu.shared("lod gather pass", [&] { return std::make_shared<lod::GatherPass>(gpu.context()); }));
  gpu_->pool = std::make_unique<lod::GpuPool>(gpu.context(), std::move(pass), *stream_);
  gpu.given(gpu_, [g = gpu_.get()] { g->pool.reset(); });
}

void LodObject::detachGpu(GpuAttach& gpu) const {
  gpu.takeBack(gpu_.get());
}

std::string LodObject::describe(const SceneObject&) const {
  return "level-of-detail hierarchy of " + std::to_string(stream_->hierarchy().index.leaf_count) +
         " gaussians";
}

void LodObject::pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const {
  RenderObject ro{&template_, object.object_to_world};
  if (ctx.gpu && gpu_->pool) {
    // The Vulkan frame gathers the cut from the pool; the template gives the SH degree and colour space, the
    // pool the count. In the background (lod/cut_worker.h) the pool is given the stream's cut when it is
    // fresh, or when the pool is new (a replaced device) and no cut is being made; else it gathers its last
    // selection again.
    if (!ctx.lod_background || ctx.lod_fresh || (!ctx.lod_busy && !gpu_->pool->given()))
      gpu_->pool->prepare(*stream_);
    else
      gpu_->pool->drawAgain(*stream_);
    if (gpu_->pool->rows() == 0) return;
    ro.gpu_source = gpu_->pool.get();
    ro.source_slots = gpu_->pool->rows();
  } else {
    if (stream_->rows().empty()) return;  // this frame's cut (poseScene cut every LOD object first)
    ro.cloud = &stream_->cloud();         // every row filled
    ro.dynamic = true;                    // new contents at the same address every frame: uploaded whole
  }
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
