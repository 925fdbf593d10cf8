// A level-of-detail stream's pool on the GPU (docs/lod.md "The GPU pool"): every node of a chunk in memory is
// uploaded once, when the chunk is installed, into a slot of a fixed pool of `LodStream::poolNodes()` slots
// (centre, object-space covariance, opacity, SH: what the frame's slots hold), and its slots are freed when
// the stream evicts the chunk. Per frame only the cut's selection is uploaded, one 32-bit word per drawn
// gaussian (its slot, or the index of a gaussian computed on the host: the rows of a level change still
// fading, LodStream::rows()), with those host rows: 52 bytes each (centre, covariance, opacity, and where its
// SH comes from: two slots and a weight, LodStream::shMixes()), plus the SH of the few that have their own
// (ghosts), copied once into device memory (frames that draw the same cut again, while the next is made on
// another thread, read them there, not across the bus). A gather pass in the frame's command buffer (this
// GpuSplatSource) copies the selected slots into the object's slots of the frame, bit for bit what the host
// cloud (LodStream::cloud(), the CPU renderer's input) holds.
//
// The stream never holds more nodes than its pool (it evicts, or refines less), so every drawn node has a
// slot; the pool's buffers grow with the slots in use, up to the pool.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/gpu.h"
#include "lod/stream.h"
#include "render/cpu_renderer.h"

namespace sf::lod {

// The gather pass's pipeline (one per device, shared by the pools on it).
class GatherPass {
 public:
  explicit GatherPass(gpu::Context& ctx);
  ~GatherPass();
  const gpu::ComputePipeline& pipeline() const { return *pipeline_; }

 private:
  std::unique_ptr<gpu::ComputePipeline> pipeline_;
};

class GpuPool final : public GpuSplatSource {
 public:
  // A pool for `stream`'s hierarchy on `ctx`; nothing is uploaded until prepare(). Throws sf::Error when the
  // stream's pool has 2^31 slots or more (slots are 31-bit in the selection).
  GpuPool(gpu::Context& ctx, std::shared_ptr<const GatherPass> pass, const LodStream& stream);
  ~GpuPool() override;

  // Frame thread, after the stream drew this frame's cut (LodStream::draw): frees the slots of chunks the
  // stream evicted, uploads chunks it installed since the last call, and uploads the selection and the host
  // rows for the gather pass (addPasses). Sets the stream's GPU figures (LodStream::setGpuFigures).
  void prepare(LodStream& stream);
  // Frame thread, while another thread makes the stream's next cut (lod/cut_worker.h): the frame gathers the
  // selection prepare() made last again, uploading nothing; the stream's GPU figures say so.
  void drawAgain(LodStream& stream) const;
  // Gaussians the frame gathers: the rows of the cut prepare() was last given.
  uint32_t rows() const { return rows_; }
  // Whether prepare() has been given a cut since the pool was made.
  bool given() const { return given_; }
  // Gathers the selected gaussians into `targets` (rows() slots of the stream's SH stride).
  void addPasses(FramePasses& frame, const GpuSplatTargets& targets) const override;
  // Every slot is written every frame: the frame uploads none of the cloud.
  bool needsRestValues() const override { return false; }

  uint64_t slotsUsed() const { return used_; }
  uint64_t slotsAllocated() const { return allocated_; }  // slots the device buffers hold now

 private:
  void prepareFrame(LodStream& stream);
  void grow(uint64_t slots);
  uint32_t takeSlot();

  gpu::Context& ctx_;
  std::shared_ptr<const GatherPass> pass_;
  uint64_t capacity_ = 0;  // slots at most (the stream's pool)
  uint32_t stride_ = 0;    // SH floats per node
  // Slots: the high-water mark, the free ones below it (taken from the back), those in use.
  uint64_t next_ = 0, used_ = 0, allocated_ = 0;
  std::vector<uint32_t> free_;
  // Per chunk (the top chunk last): the install stamp its slots hold (0: none) and the slot of each node.
  std::vector<uint64_t> stamp_;
  std::vector<std::vector<uint32_t>> slots_;
  gpu::Buffer positions_, covariances_, opacities_, sh_;
  // The cut's selection and host rows: written by the host (frame_), copied to device memory (frame_device_)
  // where the gather pass of every frame that draws the cut reads them.
  gpu::Buffer frame_, frame_device_;
  gpu::Buffer staging_;  // chunk uploads, in pieces of at most kStagingBytes
  uint32_t rows_ = 0, host_rows_ = 0;
  bool given_ = false;
  size_t host_at_ = 0;  // offset of the host rows in frame_
};

}  // namespace sf::lod
