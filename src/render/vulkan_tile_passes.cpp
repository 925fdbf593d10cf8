// The Vulkan frame's tile passes (see vulkan_renderer_impl.h): preprocess, the tile lists (bin, tile ranges,
// emit, the tile sort), the tile raster, the tail and the readback, as passes of the frame graph; and the
// raster slices, which continue the raster of tiles deeper than RenderSettings::raster_slice in submissions
// of their own after the frame.
#include <cstddef>
#include <cstring>
#include <string>

#include "render/vulkan_renderer_impl.h"
#include "render/vulkan_util.h"

namespace sf {

namespace {

using namespace gpu_layout;
using namespace vulkan_util;

}  // namespace

// Preprocess to readback, as declared passes of the frame's graph: the tile lists built and sorted, the tile
// raster, the tail, the readback.
void VulkanRenderer::Impl::addTilePasses(FrameGraph& g, const Resources& res, const Frame& f,
                                         const Recording& r) {
  g.add("preprocess", {res.splats, res.counters, res.bins}, {res.projected, res.counters, res.bins},
        [&] {  // tile bins: the counts of most slots
          timestamp(r.cmd, 1);
          // This run's object records (the camera in object space differs per run of a submission).
          const GpuObject* records = f.run_objects.data() + run_index * f.gobj.size();
          for (size_t o = 0; o < f.objects.size(); ++o) {
            GpuPreprocessPush p{frameAddress(), records[o]};
            dispatchWith(r.cmd, binningPipeline(true), p, ceilDiv(f.gobj[o].count, SF_WG_SIZE));
          }
          timestamp(r.cmd, 2);
        });
  // Each tile's (depth, slot) pairs in its own range: counted per tile, the counts scanned to ranges,
  // the pairs binned at the tiles' cursors, then sorted within each tile (chunks, then merges).
  g.add("bin", {res.projected, res.bins}, {res.bins}, [&] {
    dispatch(r.cmd, bin_tiles, push(), ceilDiv(residency.slots, SF_WG_SIZE));
    timestamp(r.cmd, 3);
  });
  g.add("tile ranges", {res.bins, res.counters}, {res.bins, res.ranges, res.counters}, [&] {
    sort.recordScan(r.cmd, push(), counters, tile_bins.address, counters.address + SF_COUNTER_TILES * 4,
                    bin_sums.address, f.tile_blocks, -1);
    gpu::computeBarrier(r.cmd);
    GpuPush p = push();
    p.scan_count = bin_sums.address + static_cast<VkDeviceAddress>(f.tile_blocks) * 4;  // the scan's total
    dispatch(r.cmd, tile_setup, p, ceilDiv(f.tile_count, SF_WG_SIZE));
    gpu::computeBarrier(r.cmd);
    dispatch(r.cmd, seg_setup, push(), 1);
    timestamp(r.cmd, 4);
  });
  g.add("emit", {res.projected, res.bins, res.ranges}, {res.bins, res.pairs}, [&] {
    GpuPush p = push();
    p.flags = SF_FLAG_EMIT;
    dispatch(r.cmd, binningPipeline(false), p, ceilDiv(residency.slots, SF_WG_SIZE));
    timestamp(r.cmd, 5);
  });
  g.add("tile sort", {res.pairs, res.ranges, res.counters}, {res.pairs}, [&] {
    dispatchIndirect(r.cmd, seg_sort_small, push(), counters,
                     SF_COUNTER_SMALL_DISPATCH);  // disjoint ranges: no barrier between
    dispatchIndirect(r.cmd, seg_sort, push(), counters, SF_COUNTER_SEG_DISPATCH);
    for (uint32_t pass = 0; pass < r.merge_passes; ++pass) {
      gpu::computeBarrier(r.cmd);
      GpuPush p = push();
      p.shift = pass;
      dispatchIndirect(r.cmd, seg_merge, p, counters, SF_COUNTER_MERGE_DISPATCH + 3 * pass);
    }
    timestamp(r.cmd, 6);
  });
  g.add("raster", {res.ranges, res.pairs, res.projected, res.mesh, res.splats}, {res.image, res.counters},
        [&] {  // splat slots: the shape words
          dispatch(r.cmd, rasterPipeline(false), push(), f.tiles_x, f.tiles_y * (SF_TILE / SF_RASTER_ROWS));
          timestamp(r.cmd, 7);
        });
  if (f.tail) {  // the trainer's loss and backward passes (render/frame_passes.h)
    FramePasses tail(g, res.contributed(), r.cmd);
    tail.nextContributor();
    f.tail->addPasses(tail, frameAddress(), static_cast<uint32_t>(r.run));
    tail.addToGraph(FramePasses::Order::kInSequence);
  } else {
    g.add("tail", {res.image}, {}, {}, false);
  }
  // Passes of other modules over the finished image (the post model, the hull outline), into passes_image,
  // which the readback copies; a frame whose deep tiles are drawn in slices runs them again after its last
  // slice (rasterSlices).
  const FrameResource shown_res =
      r.image_bytes > 0 ? addImagePasses(g, res.contributed(), res.post_image, r.cmd) : res.image;
  const bool passes = shown_res == res.post_image;
  if (!passes) g.add("image passes", {res.image}, {res.post_image}, {}, false);
  const VkBuffer shown = passes ? passes_image.buffer : image.buffer;
  g.add("readback", {shown_res, res.counters}, {res.readback}, [&, shown] {
    VkBufferCopy img_copy{0, 0, r.image_bytes}, depth_copy{0, r.image_bytes, r.depth_bytes},
        cnt_copy{0, r.counters_at + kCounterBytes * r.at, kCounterBytes};
    if (r.image_bytes) vkCmdCopyBuffer(r.cmd, shown, r.st_buf->buffer, 1, &img_copy);
    if (r.depth_bytes) vkCmdCopyBuffer(r.cmd, depth_out.buffer, r.st_buf->buffer, 1, &depth_copy);
    vkCmdCopyBuffer(r.cmd, counters.buffer, r.st_buf->buffer, 1, &cnt_copy);
    timestamp(r.cmd, 8);
  });
}

FrameResource VulkanRenderer::Impl::addImagePasses(FrameGraph& g, const FrameResources& contributed,
                                                   FrameResource post, VkCommandBuffer cmd) {
  if (image_passes.empty()) return contributed.image;
  FramePasses passes(g, contributed, cmd);
  for (size_t i = 0; i < image_passes.size(); ++i) {
    ImagePassTargets t;
    t.source = i == 0 ? contributed.image : post;
    t.source_address = i == 0 ? image.address : passes_image.address;
    t.target = post;
    t.target_address = passes_image.address;
    t.width = width, t.height = height;
    passes.nextContributor();
    image_passes[i]->addPasses(passes, t);
  }
  passes.addToGraph(FramePasses::Order::kInSequence);
  return post;
}

// The tiles of the frame just submitted that hold more than raster_slice pairs, which its raster left
// (raster.comp): slice s walks entries [s K, (s + 1) K) of each of them, K = raster_slice, in a submission
// of its own, so that no submission walks more than K entries of any list however deep the tile; the pixels'
// state waits in the image and raster_carry between them. The last slice copies the finished image (and
// depth plane) to the staging buffer over the unfinished one the frame's readback copied. The slices' GPU
// time is added to the raster's and the frame's. A watchdog applies to each submission, so one slice per
// submission bounds each by K entries per workgroup (2 x tiles x K entries in all), whatever the frame.
void VulkanRenderer::Impl::rasterSlices(VulkanFrameStats& st, uint32_t tiles_x, uint32_t tiles_y,
                                        const gpu::Buffer& st_buf, VkDeviceSize image_bytes,
                                        VkDeviceSize depth_bytes) {
  const VkDeviceSize carry_bytes = static_cast<VkDeviceSize>(width) * height * 8;
  if (raster_carry.size < carry_bytes)
    raster_carry = ctx.createBuffer(carry_bytes, false, "raster slice carry");
  const uint64_t carry_address =
      raster_carry.address;  // the frame record was written before the buffer existed
  std::memcpy(static_cast<uint8_t*>(frame.mapped) + offsetof(GpuFrame, raster_carry), &carry_address,
              sizeof(carry_address));
  const uint32_t slices = static_cast<uint32_t>((st.longest_tile - 1) / raster_slice + 1);
  for (uint32_t s = 0; s < slices; ++s) {
    VkCommandBuffer cmd = ctx.begin();
    timestamp_base =
        kTimestamps;  // the queries after the frame's (a sliced frame is alone in its submission)
    vkCmdResetQueryPool(cmd, queries, timestamp_base, 2);
    timestamp(cmd, 0);
    // The previous submission's raster (and the frame's readback, which read the image this one writes).
    gpu::computeBarrier(cmd);
    // The slice, then (after the last) the image passes again over the finished image and the copy out, as a
    // graph of their own.
    FrameGraph g;
    FrameResources frame_res;
    frame_res.image = g.resource("image");
    const FrameResource post = g.resource("post image"), out = g.resource("readback");
    g.add("raster slice", {}, {frame_res.image}, [&] {
      GpuPush p = push();
      p.shift = s + 1;
      dispatch(cmd, rasterPipeline(true), p, tiles_x, tiles_y * (SF_TILE / SF_RASTER_ROWS));
    });
    if (s + 1 == slices) {
      const FrameResource shown = addImagePasses(g, frame_res, post, cmd);
      g.add("readback", {shown}, {out},
            [&, shown_buffer = shown == post ? passes_image.buffer : image.buffer] {
              VkBufferCopy img_copy{0, 0, image_bytes}, depth_copy{0, image_bytes, depth_bytes};
              vkCmdCopyBuffer(cmd, shown_buffer, st_buf.buffer, 1, &img_copy);
              if (depth_bytes) vkCmdCopyBuffer(cmd, depth_out.buffer, st_buf.buffer, 1, &depth_copy);
            });
    }
    g.run([&] { barrier(cmd); });
    timestamp(cmd, 1);
    timestamp_base = 0;
    try {
      ctx.submit(cmd, "running the frame's raster slices");
    } catch (const gpu::DeviceLost& e) {
      throw gpu::DeviceLost(std::string(e.what()) + "; the frame's passes had run, and raster slice " +
                            std::to_string(s + 1) + " of " + std::to_string(slices) +
                            " (tiles of more than " + std::to_string(raster_slice) + " pairs) was running");
    }
    const double ms = readTimestamps(2, kTimestamps)[0];
    st.times.raster += ms;
    st.times.total += ms;
  }
  st.raster_slices = static_cast<int>(slices);
  st.submissions = 1 + static_cast<int>(slices);
  last_slices = slices;
}

}  // namespace sf
