// Level-of-detail objects (a directory with index.sflod, {"lod": ...}; docs/lod.md): streamed from disk, cut
// for each frame's camera under the scene's budget together with the frame's other LOD objects. The object's
// `cloud` holds a proxy of its top levels (for bounds and counts). In a Vulkan frame the object draws through
// its GPU pool (lod/gpu_pool.h: chunks uploaded once, the cut's selection gathered on the GPU); on the CPU
// renderer it draws the stream's cloud, gathered on the host.
#pragma once

#include <memory>
#include <string>

#include "lod/stream.h"
#include "scene/scene_object.h"

namespace sf {

namespace lod {
class GpuPool;
}

class LodObject final : public SceneObjectKind {
 public:
  explicit LodObject(std::shared_ptr<lod::LodStream> stream);
  std::string_view kindName() const override { return "lod"; }
  std::string describe(const SceneObject& object) const override;
  void pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const override;
  void attachGpu(const SceneObject& object, GpuAttach& gpu) const override;
  void detachGpu(GpuAttach& gpu) const override;
  lod::LodStream* lodStream() const override { return stream_.get(); }
  bool captureConvention(const SceneObject&) const override { return true; }
  // Mutable: the stream keeps its pool between frames.
  lod::LodStream& stream() const { return *stream_; }
  std::shared_ptr<lod::LodStream> sharedStream() const { return stream_; }
  // The GPU pool a Vulkan frame driver attached (null on the CPU backend, or before the first frame).
  lod::GpuPool* gpuPool() const;
  // Whether the attached GPU pool has been given no cut yet (false without a pool).
  bool gpuPoolUngiven() const;

 private:
  struct Gpu;  // the attached pool (owned through a shared pointer: the driver's take-back holds it weakly)
  std::shared_ptr<lod::LodStream> stream_;
  std::shared_ptr<Gpu> gpu_;
  GaussianCloud template_;  // no rows: the SH degree and colour space of a frame drawn through the pool
};

// A level-of-detail hierarchy: its stream (index and top chunk read now, the rest as frames want it) and, as
// `cloud`, a proxy for bounds (never drawn): the corners of the box between the 1st and 99th percentiles of
// its leaves' positions, which the index records, so that automatic framing sees what it sees of the capture.
void loadLodObject(SceneObject& obj, const std::string& dir, uint64_t pool_nodes);

}  // namespace sf
