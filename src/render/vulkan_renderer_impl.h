// The Vulkan renderer's state (internal to the renderer, not public API): VulkanRenderer::Impl owns every
// part of the frame (staging, the splats' residency, the GPU sort and scan, the mesh pass, the tile passes'
// pipelines and buffers) and records it. vulkan_renderer.cpp holds the frame itself (collect, build the frame
// graph, submit, retry) and vulkan_tile_passes.cpp the tile passes' recording and the raster slices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "deform/gpu_passes.h"
#include "gpu/gpu.h"
#include "render/frame_graph.h"
#include "render/frame_passes.h"
#include "render/gpu_shared.h"
#include "render/vulkan_mesh_pass.h"
#include "render/vulkan_renderer.h"
#include "render/vulkan_residency.h"
#include "render/vulkan_sort.h"

namespace sf {

struct VulkanRenderer::Impl {
  static constexpr uint32_t kTimestamps = 9;  // per recorded frame
  static constexpr uint32_t kMaxBackToBack = kMaxFramesPerSubmission;
  static constexpr size_t kCrumbsPerFrame = 1024;  // breadcrumb words per recorded frame
  // One GpuFrame record per frame of a submission.
  static constexpr VkDeviceSize kFrameStride = (sizeof(gpu_layout::GpuFrame) + 255) / 256 * 256;
  static constexpr VkDeviceSize kCounterBytes =
      SF_COUNTER_WORDS * 4;  // the counters read back, per recorded frame

  gpu::Context ctx;
  // The renderer's parts (the files beside this one): staging, the splats' residency, the GPU sort and scan
  // with the pair buffers, the mesh pass.
  VulkanStaging staging{ctx};
  VulkanResidency residency{ctx, staging};
  VulkanSort sort{ctx};
  VulkanMeshPass mesh{ctx};
  gpu::ComputePipeline preprocess, bin_tiles, tile_setup, seg_setup, seg_sort, seg_sort_small, seg_merge,
      raster, raster_shapes, raster_no_mesh, raster_plain, raster_counted;
  // The half-precision raster (raster_half.comp), made where the device has 16-bit float arithmetic.
  std::unique_ptr<gpu::ComputePipeline> raster_half;
  // The binning's grouped variants (preprocess.comp's counts, bin_tiles.comp's emit), made when they are
  // first taken (setTileBinning: the partitioned ones at construction where the device has them).
  std::unique_ptr<gpu::ComputePipeline> preprocess_aggregated, bin_tiles_aggregated;
  std::unique_ptr<gpu::ComputePipeline> preprocess_partitioned, bin_tiles_partitioned;
  VulkanRenderer::TileBinning tile_binning = VulkanRenderer::TileBinning::kPerPair;
  // VulkanRenderer::setTileBinning with the context's lock held.
  void setTileBinning(VulkanRenderer::TileBinning binning);
  // The preprocess (count = true) or the emit this renderer's frames take (VulkanRenderer::TileBinning).
  gpu::ComputePipeline& binningPipeline(bool count) {
    switch (tile_binning) {
      case VulkanRenderer::TileBinning::kPerPair:
        break;
      case VulkanRenderer::TileBinning::kPartitioned:
        return count ? *preprocess_partitioned : *bin_tiles_partitioned;
      case VulkanRenderer::TileBinning::kAggregated:
        return count ? *preprocess_aggregated : *bin_tiles_aggregated;
    }
    return count ? preprocess : bin_tiles;
  }
  VkQueryPool queries = VK_NULL_HANDLE;
  // Per frame.
  uint32_t tiles = 0, width = 0, height = 0;
  gpu::Buffer tile_ranges, tile_bins, bin_sums, chunks, image, depth_out, counters, frame;
  gpu::Buffer tile_order;  // the rasters' order of tiles (GpuFrame::tile_order)
  gpu::Buffer
      passes_image;  // what the image passes write (renderWithImagePasses), read back in the image's place
  uint64_t chunk_capacity = 0;
  gpu::Buffer train_final_t, train_last;  // per pixel, for a frame with a tail (renderWithTail)
  bool write_train = false;
  bool write_depth = false;  // this frame fills the depth plane (RenderSettings::depth)
  // Raster slices (RenderSettings::raster_slice): this frame's slice size (0: the frame's raster walks every
  // list whole), the per-pixel state carried between slices (made by the first frame that needs it), and the
  // slices the last frame took (lastFrameGraph).
  uint32_t raster_slice = 0;
  gpu::Buffer raster_carry;
  uint32_t last_slices = 0;
  bool has_shapes =
      false;  // this frame: an object gives shape words (GpuFrame::shapes, the raster's shapes variant)
  // The last frame's graph, kept for lastFrameGraph() (described on request, not per frame). Its record
  // callbacks refer to that frame's locals and are never run again.
  FrameGraph last_graph;
  // Breadcrumbs (host-visible): before each pass the frame writes its serial number into the pass's own word
  // (one word per recorded frame and pass, so no two writes meet), so that when the device is lost the pass
  // that was running (the last one begun) can be named.
  gpu::Buffer breadcrumb;
  uint32_t frame_serial = 0;
  SkinPass skin_pass;  // the deform layer's passes (deform/gpu_passes.h)
  SplatDeformPass splat_deform_pass;
  bool has_mesh = false;  // this frame draws meshes
  // The raster variant this frame takes (raster.comp): shapes (whatever else), the mesh layer's, or
  // neither's; without them, the plain one for the frame's own raster where nothing reads the depth sum or
  // the last splat blended (raster slices carry the depth sum of the tiles they draw).
  // The half-precision one replaces the plain one where the settings ask for it and the device has it.
  gpu::ComputePipeline& rasterPipeline(bool slice) {
    if (has_shapes) return raster_shapes;
    if (has_mesh) return raster;
    if (slice || write_depth || write_train) return raster_no_mesh;
    return drawsHalfRaster() ? *raster_half : countsRaster() ? raster_counted : raster_plain;
  }
  // The frame's own raster is the counted one (RenderSettings::count_raster, where the plain one would be
  // drawn).
  bool countsRaster() const {
    return count_raster && !has_shapes && !has_mesh && !write_depth && !write_train && !drawsHalfRaster();
  }
  bool drawsHalfRaster() const {
    return half_raster && raster_half && !has_shapes && !has_mesh && !write_depth && !write_train;
  }
  bool half_raster = false;   // this frame's RenderSettings::half_raster
  bool count_raster = false;  // this frame's RenderSettings::count_raster
  bool blend_linear = false;  // this frame blends in linear light (RenderSettings::blend_space)
  // The frame being recorded (a submission's frames each have their GpuFrame and object records).
  uint32_t run_index = 0;
  uint32_t timestamp_base = 0;  // the first query of the frame being recorded (back-to-back frames)

  // What a submission's frames draw, collected before they are recorded (collect).
  // The image passes of the frame being rendered (renderWithImagePasses; empty otherwise).
  std::span<const ImagePass* const> image_passes;
  // Adds the image passes to `g` (the frame's image, contributed.image, to passes_image, resource `post`) and
  // returns the resource the readback copies (`post`; `image` when there are none).
  FrameResource addImagePasses(FrameGraph& g, const FrameResources& contributed, FrameResource post,
                               VkCommandBuffer cmd);
  struct Frame {
    std::span<const RenderObject> objects;
    std::span<const FrameView> views;
    const RenderSettings& settings;
    const FrameTail* tail;
    const Camera& cam;  // the first view's (one image size per submission)
    uint64_t uploaded_slots = 0, uploaded_bytes = 0;
    uint32_t tiles_x = 0, tiles_y = 0, tile_count = 0, tile_blocks = 0;
    std::vector<gpu_layout::GpuObject>
        gobj;  // the object records (the camera in object space: the last view's)
    // The records of each frame of the submission, objects of run r from r * gobj.size() (the camera in
    // object space differs per frame): preprocess's push constants.
    std::vector<gpu_layout::GpuObject> run_objects;
    StagedSplats staged;  // overrides and deform inputs, for the copies at the start of the frame
    std::vector<uint32_t> mesh_triangles;
    size_t mesh_draws_offset = 0;
  };
  // One frame's recording into the submission's command buffer (recordFrame): the frame views[run], the
  // at-th recorded; the staging buffer takes the image, the depth plane and each recorded frame's counters.
  struct Recording {
    VkCommandBuffer cmd;
    const gpu::Buffer* st_buf;
    VkDeviceSize image_bytes, depth_bytes, counters_at;
    uint32_t merge_passes;
    size_t frames;  // recorded in the submission
    size_t at = 0;
    int run = 0;
  };
  // The frame graph's resources: what its passes read and write.
  struct Resources {
    FrameResource counters, bins, deform_in, skinned, mesh_data, splats, mesh, projected, ranges, pairs,
        image, post_image, readback;
    // The handles contributed passes declare (render/frame_passes.h).
    FrameResources contributed() const { return {splats, projected, ranges, pairs, counters, image}; }
  };

  explicit Impl(const gpu::ContextOptions& o);
  ~Impl();

  // The breadcrumbs read after a lost device: the last pass the submission's frames began, and which frame.
  std::string lostPassReport() const;
  // After an allocation failed part way (a frame past the memory budget): every per-scene buffer released
  // and every capacity forgotten, so the next frame builds them again from nothing (a viewer or a notebook
  // goes on with a smaller scene) and no half-grown buffer is ever used.
  void dropResources();
  void ensureImage(uint32_t w, uint32_t h, uint32_t tile_count, bool want_depth);
  // The sort chunk table for the current tiles and key capacity: at most one partial chunk per tile beyond
  // the whole ones of the capacity (small lists from the front, the chunks of longer ones from the back).
  void ensureChunks();
  void writeFrame(const Camera* cam, Vec3 bg, uint32_t tiles_x, uint32_t tiles_y, bool depth = false,
                  uint32_t run = 0);

  VkDeviceAddress frameAddress() const { return frame.address + run_index * kFrameStride; }
  gpu_layout::GpuPush push() const {
    gpu_layout::GpuPush p{};
    p.frame = frameAddress();
    p.subgroups = sort.subgroups();
    return p;
  }
  void timestamp(VkCommandBuffer cmd, uint32_t index) {
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, timestamp_base + index);
  }
  std::vector<double> readTimestamps(uint32_t count, uint32_t first = 0);
  // The barrier the frame graph puts between passes.
  void barrier(VkCommandBuffer cmd) const;

  // The frame (vulkan_renderer.cpp): the submission checked, collected, each frame's graph recorded, the
  // counters read back.
  static void checkSubmission(std::span<const RenderObject> objects, std::span<const FrameView> views,
                              std::span<const RenderMesh> meshes);
  Frame collect(std::span<const RenderObject> objects, std::span<const FrameView> views,
                const RenderSettings& settings, std::span<const RenderMesh> meshes, const FrameTail* tail);
  void recordFrame(const Frame& f, const Recording& r);
  void addInputPasses(FrameGraph& g, const Resources& res, const Frame& f, const Recording& r);
  std::vector<int> readCounters(const Frame& f, const Recording& r, std::span<const int> todo,
                                bool last_attempt, std::vector<VulkanFrameStats>& stats, uint32_t* most_keys);
  // The tile passes (vulkan_tile_passes.cpp).
  void addTilePasses(FrameGraph& g, const Resources& res, const Frame& f, const Recording& r);
  void rasterSlices(VulkanFrameStats& st, uint32_t tiles_x, uint32_t tiles_y, const gpu::Buffer& st_buf,
                    VkDeviceSize image_bytes, VkDeviceSize depth_bytes);
};

}  // namespace sf
