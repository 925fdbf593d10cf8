// Vulkan renderer host code (see vulkan_renderer.h): the renderer's state, VulkanRenderer::Impl (defined in
// vulkan_renderer_impl.h), and the frame: collect, build the frame graph, submit, retry. The frame's parts
// live beside it: the tile passes and raster slices (vulkan_tile_passes.cpp), the GPU sort and scan
// (vulkan_sort.h), the mesh pass (vulkan_mesh_pass.h), the splats' residency and staging
// (vulkan_residency.h).
#include "render/vulkan_renderer.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>

#include "core/error.h"
#include "core/sh.h"
#include "render/vulkan_renderer_impl.h"
#include "render/vulkan_util.h"

namespace sf {

namespace {

using namespace gpu_layout;
using deform_layout::SkinPush;
using namespace vulkan_util;
static_assert(static_cast<float>(SF_MIN_SORT_DEPTH) == kMinSortDepth,
              "one minimum sort depth on both backends");

// SPIR-V of the frame's tile passes, compiled by glslc at build time (shaders/*.comp -> *.inc); the sort and
// scan's are in vulkan_sort.cpp, the mesh pipeline's in vulkan_mesh_pass.cpp.
const uint32_t kPreprocess[] = {
#include "preprocess.inc"
};
const uint32_t kBinTiles[] = {
#include "bin_tiles.inc"
};
const uint32_t kPreprocessAggregated[] = {
#include "preprocess_aggregated.inc"
};
const uint32_t kPreprocessPartitioned[] = {
#include "preprocess_partitioned.inc"
};
const uint32_t kBinTilesAggregated[] = {
#include "bin_tiles_aggregated.inc"
};
const uint32_t kBinTilesPartitioned[] = {
#include "bin_tiles_partitioned.inc"
};
const uint32_t kTileSetup[] = {
#include "tile_setup.inc"
};
const uint32_t kSegSetup[] = {
#include "seg_setup.inc"
};
const uint32_t kSegSort[] = {
#include "seg_sort.inc"
};
const uint32_t kSegSortSmall[] = {
#include "seg_sort_small.inc"
};
const uint32_t kSegMerge[] = {
#include "seg_merge.inc"
};
const uint32_t kRaster[] = {
#include "raster.inc"
};
const uint32_t kRasterShapes[] = {
#include "raster_shapes.inc"
};
const uint32_t kRasterNoMesh[] = {
#include "raster_nomesh.inc"
};
const uint32_t kRasterPlain[] = {
#include "raster_plain.inc"
};
const uint32_t kRasterCounted[] = {
#include "raster_counted.inc"
};
const uint32_t kRasterHalf[] = {
#include "raster_half.inc"
};

constexpr int kDepthPasses = 4;  // sortPairs: 8-bit digits over the 32-bit low word

// Merge passes a tile list of `len` pairs takes (sfMergePasses in gpu_shared.h): its pairs end in the
// alternate buffers when the number is odd.
uint32_t mergePasses(uint64_t len) {
  return len <= SF_SEG_BLOCK ? 0u : static_cast<uint32_t>(std::bit_width((len - 1) / SF_SEG_BLOCK));
}

}  // namespace

// The binning's pipelines for `binning`, made the first time it is asked for (the caller holds the context's
// lock).
void VulkanRenderer::Impl::setTileBinning(VulkanRenderer::TileBinning binning) {
  using TileBinning = VulkanRenderer::TileBinning;
  Impl& m = *this;
  const gpu::DeviceInfo& d = m.ctx.info();
  // One variant's two pipelines (preprocess's count, the emit), made once where the device has what they
  // need.
  auto make = [&](std::unique_ptr<gpu::ComputePipeline>& count, std::unique_ptr<gpu::ComputePipeline>& emit,
                  std::span<const uint32_t> count_spirv, std::span<const uint32_t> emit_spirv, bool supported,
                  const std::string& variant, const std::string& needs) {
    if (emit) return;
    if (!supported)
      throw Error("Vulkan device " + d.name + ": the " + variant + " tile binning needs " + needs);
    count = std::make_unique<gpu::ComputePipeline>(m.ctx, count_spirv, sizeof(GpuPreprocessPush), SF_WG_SIZE,
                                                   "preprocess " + variant);
    emit = std::make_unique<gpu::ComputePipeline>(m.ctx, emit_spirv, sizeof(GpuPush), SF_WG_SIZE,
                                                  "bin_tiles " + variant);
  };
  if (binning == TileBinning::kPartitioned)
    make(m.preprocess_partitioned, m.bin_tiles_partitioned, kPreprocessPartitioned, kBinTilesPartitioned,
         d.subgroup_partitioned, "partitioned", "VK_NV_shader_subgroup_partitioned in compute shaders");
  if (binning == TileBinning::kAggregated)
    make(m.preprocess_aggregated, m.bin_tiles_aggregated, kPreprocessAggregated, kBinTilesAggregated,
         d.subgroup_voting_shuffles, "aggregated", "subgroup ballots, votes and shuffles in compute shaders");
  m.tile_binning = binning;
}

VulkanRenderer::Impl::Impl(const gpu::ContextOptions& o)
    : ctx(o),
      preprocess(ctx, kPreprocess, sizeof(GpuPreprocessPush), SF_WG_SIZE, "preprocess"),
      bin_tiles(ctx, kBinTiles, sizeof(GpuPush), SF_WG_SIZE, "bin_tiles"),
      tile_setup(ctx, kTileSetup, sizeof(GpuPush), SF_WG_SIZE, "tile_setup"),
      seg_setup(ctx, kSegSetup, sizeof(GpuPush), 1, "seg_setup"),
      seg_sort(ctx, kSegSort, sizeof(GpuPush), SF_SEG_WG, "seg_sort"),
      seg_sort_small(ctx, kSegSortSmall, sizeof(GpuPush), SF_SEG_SMALL_WG, "seg_sort small"),
      seg_merge(ctx, kSegMerge, sizeof(GpuPush), SF_SEG_WG, "seg_merge"),
      raster(ctx, kRaster, sizeof(GpuPush), SF_TILE, "raster"),
      raster_shapes(ctx, kRasterShapes, sizeof(GpuPush), SF_TILE, "raster with shapes"),
      raster_no_mesh(ctx, kRasterNoMesh, sizeof(GpuPush), SF_TILE, "raster without meshes"),
      raster_plain(ctx, kRasterPlain, sizeof(GpuPush), SF_TILE, "raster without meshes or depth"),
      raster_counted(ctx, kRasterCounted, sizeof(GpuPush), SF_TILE, "raster that counts its work"),
      skin_pass(ctx),
      splat_deform_pass(ctx) {
  const gpu::DeviceInfo& d = ctx.info();
  if (ctx.maxSharedMemory() < SF_SEG_BLOCK * 8)
    throw Error("Vulkan device " + d.name + ": less than " + std::to_string(SF_SEG_BLOCK * 8 / 1024) +
                " KiB of shared memory");
  // The binning groups a subgroup's lanes on one tile in one instruction where the device can (measured on an
  // H100: the headline frame's count and emit 1.75 -> 0.94 ms; docs/benchmarks.md).
  if (d.subgroup_partitioned) setTileBinning(VulkanRenderer::TileBinning::kPartitioned);
  if (d.shader_float16)
    raster_half = std::make_unique<gpu::ComputePipeline>(ctx, kRasterHalf, sizeof(GpuPush), SF_TILE,
                                                         "raster at half precision");
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = kTimestamps * kMaxBackToBack;
  SF_VK_CHECK(vkCreateQueryPool(ctx.device(), &qi, nullptr, &queries));
  ctx.setName(VK_OBJECT_TYPE_QUERY_POOL, reinterpret_cast<uint64_t>(queries), "pass timestamps");
  counters = ctx.createBuffer(SF_COUNTER_WORDS * 4, false, "counters");
  frame = ctx.createBuffer(kFrameStride * kMaxBackToBack, true, "frame parameters");
}

VulkanRenderer::Impl::~Impl() {
  vkDestroyQueryPool(ctx.device(), queries, nullptr);
}

// What a submission's frames must agree on, and what the Vulkan frame draws at all.
void VulkanRenderer::Impl::checkSubmission(std::span<const RenderObject> objects,
                                           std::span<const FrameView> views,
                                           std::span<const RenderMesh> meshes) {
  if (views.empty() || views.size() > kMaxBackToBack)
    throw Error("Vulkan renderer: " + std::to_string(views.size()) + " frames in one submission (1.." +
                std::to_string(kMaxBackToBack) + ")");
  const Camera& cam = views.front().camera;
  for (size_t r = 1; r < views.size(); ++r) {
    const Camera& c = views[r].camera;
    if (c.width != cam.width || c.height != cam.height)
      throw Error("Vulkan renderer: frame " + std::to_string(r) + " of the submission is " +
                  std::to_string(c.width) + "x" + std::to_string(c.height) + ", the first " +
                  std::to_string(cam.width) + "x" + std::to_string(cam.height) +
                  " (one image size per submission)");
    const bool same =
        c.fx == cam.fx && c.fy == cam.fy && c.cx == cam.cx && c.cy == cam.cy &&
        std::memcmp(c.world_to_camera.m, cam.world_to_camera.m, sizeof(cam.world_to_camera.m)) == 0;
    if (!meshes.empty() && !same)
      throw Error("Vulkan renderer: frames with meshes in one submission share one camera");
  }
  for (size_t o = 0; o < objects.size(); ++o)
    if (std::string why = objects[o].validate(); !why.empty())
      throw Error("render object " + std::to_string(o) + ": " + why);
  VulkanMeshPass::checkShading(meshes);
}

std::string VulkanRenderer::Impl::lostPassReport() const {
  const std::vector<FrameGraph::Pass>& passes = last_graph.passes();
  if (!breadcrumb.mapped || passes.empty()) return "no pass is known to have begun";
  const auto* words = static_cast<const uint32_t*>(breadcrumb.mapped);
  const size_t capacity = static_cast<size_t>(breadcrumb.size / 4);
  size_t last = capacity;
  for (size_t w = 0; w < capacity; ++w)
    if (words[w] == frame_serial) last = w;
  if (last == capacity) return "no pass of the frame had begun";
  std::string all;
  for (const FrameGraph::Pass& p : passes)
    if (p.enabled) all += (all.empty() ? "" : ", ") + p.name;
  // Breadcrumbs mark stretches (the passes between two barriers): name the stretch's passes.
  const size_t pass = last % kCrumbsPerFrame;
  std::string name = "pass " + std::to_string(pass + 1);
  if (pass < passes.size()) {
    name = "'" + passes[pass].name + "'";
    const std::vector<size_t> rest = last_graph.stretch(pass);
    if (rest.size() > 1) {
      name += " (its stretch, no barrier between them: ";
      for (size_t k = 0; k < rest.size() && k < 8; ++k) name += (k ? ", " : "") + passes[rest[k]].name;
      name += rest.size() > 8 ? ", ... " + std::to_string(rest.size()) + " passes)" : ")";
    }
  }
  return "the last pass whose start was recorded was " + name +
         (pass + 1 == kCrumbsPerFrame ? " or a later one" : "") + " of frame " +
         std::to_string(last / kCrumbsPerFrame + 1) + " in the submission (the last frame's passes: " + all +
         ")";
}

void VulkanRenderer::Impl::dropResources() {
  residency.drop();
  sort.dropKeys();
  for (gpu::Buffer* b : {&tile_ranges, &tile_bins, &tile_order, &bin_sums, &chunks, &image, &depth_out,
                         &train_final_t, &train_last, &raster_carry, &passes_image})
    b->reset();
  chunk_capacity = 0, tiles = 0, width = height = 0;
  mesh.drop();
}

void VulkanRenderer::Impl::ensureImage(uint32_t w, uint32_t h, uint32_t tile_count, bool want_depth) {
  if (w != width || h != height || !image.size) {
    image = ctx.createBuffer(static_cast<VkDeviceSize>(w) * h * 16, false, "image");
    passes_image = {};
    depth_out = {};
    train_final_t = {};
    train_last = {};
    raster_carry = {};
    width = w, height = h;
  }
  if (!image_passes.empty() && !passes_image.size)
    passes_image = ctx.createBuffer(static_cast<VkDeviceSize>(w) * h * 16, false, "image after image passes");
  if (want_depth && !depth_out.size)
    depth_out = ctx.createBuffer(static_cast<VkDeviceSize>(w) * h * 8, false, "depth plane");
  if (tile_count != tiles || !tile_ranges.size) {
    tile_ranges = ctx.createBuffer(static_cast<VkDeviceSize>(tile_count) * 8, false, "tile ranges");
    tile_bins = ctx.createBuffer(static_cast<VkDeviceSize>(tile_count) * 4, false, "tile bins");
    tile_order = ctx.createBuffer(static_cast<VkDeviceSize>(tile_count) * SF_TILE_CLASSES * 4, false,
                                  "raster tile order");
    bin_sums = ctx.createBuffer((ceilDiv(tile_count, SF_SCAN_BLOCK) + 1) * 4, false, "tile bin block sums");
    tiles = tile_count;
  }
}

void VulkanRenderer::Impl::ensureChunks() {
  const uint64_t need = static_cast<uint64_t>(tiles) + sort.key_capacity / SF_SEG_BLOCK + 1;
  if (need <= chunk_capacity && chunks.size) return;
  chunks = ctx.createBuffer(need * 8, false, "sort chunks");
  chunk_capacity = need;
}

void VulkanRenderer::Impl::writeFrame(const Camera* cam, Vec3 bg, uint32_t tiles_x, uint32_t tiles_y,
                                      bool depth, uint32_t run) {
  const VulkanResidency& s = residency;
  const gpu::Buffer* keys = sort.keys;
  GpuFrame f{};
  if (cam) {
    copyRows(f.world_to_camera, cam->world_to_camera);
    f.fx = cam->fx, f.fy = cam->fy, f.cx = cam->cx, f.cy = cam->cy;
    f.width = static_cast<uint32_t>(cam->width), f.height = static_cast<uint32_t>(cam->height);
  }
  f.background[0] = bg.x, f.background[1] = bg.y, f.background[2] = bg.z;
  f.tiles_x = tiles_x, f.tiles_y = tiles_y;
  f.slot_count = s.slots;
  f.key_capacity = sort.key_capacity;
  f.positions = s.positions.address, f.covariances = s.covariances.address, f.opacities = s.opacities.address,
  f.sh = s.sh.address;
  f.means = s.means.address, f.conic_opacity = s.conic_opacity.address, f.color_depth = s.color_depth.address;
  f.rects = s.rects.address, f.touched = s.touched.address, f.tile_bins = tile_bins.address,
  f.chunks = chunks.address;
  f.chunk_capacity = static_cast<uint32_t>(chunk_capacity);
  f.keys_lo = keys[0].address, f.keys_hi = keys[1].address, f.values = keys[2].address;
  f.keys_lo_alt = keys[3].address, f.keys_hi_alt = keys[4].address, f.values_alt = keys[5].address;
  f.tile_ranges = tile_ranges.address, f.tile_order = tile_order.address, f.image = image.address,
  f.counters = counters.address;
  f.has_mesh = has_mesh ? 1u : 0u;
  f.blend_linear = blend_linear ? 1u : 0u;
  f.mesh_color = mesh.color.address, f.mesh_depth = mesh.depth.address;
  f.write_depth = depth ? 1u : 0u;
  f.depth_out = depth ? depth_out.address : 0;
  f.write_train = write_train ? 1u : 0u;
  f.train_final_t = write_train ? train_final_t.address : 0;
  f.train_last = write_train ? train_last.address : 0;
  f.shapes = s.shapes.address;
  f.raster_slice = raster_slice;
  f.raster_carry = raster_carry.address;
  std::memcpy(static_cast<uint8_t*>(frame.mapped) + run * kFrameStride, &f, sizeof(f));
}

std::vector<double> VulkanRenderer::Impl::readTimestamps(uint32_t count, uint32_t first) {
  std::vector<uint64_t> ticks(count);
  SF_VK_CHECK(vkGetQueryPoolResults(ctx.device(), queries, first, count, count * 8, ticks.data(), 8,
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  std::vector<double> ms(count, 0.0);
  for (uint32_t i = 1; i < count; ++i)
    ms[i] = static_cast<double>(ticks[i] - ticks[i - 1]) * ctx.timestampPeriodNs() * 1e-6;
  ms[0] = static_cast<double>(ticks[count - 1] - ticks[0]) * ctx.timestampPeriodNs() * 1e-6;
  return ms;
}

void VulkanRenderer::Impl::barrier(VkCommandBuffer cmd) const {
  if (!has_mesh) return gpu::computeBarrier(cmd);
  // With meshes, what compute and transfer wrote is also read by the mesh pipeline's vertex and
  // fragment shaders (vertex pulling from the mesh data).
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT |
                           VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_VERTEX_SHADER_BIT |
                           VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT,
                       0, 1, &mb, 0, nullptr, 0, nullptr);
}

// Collects what the submission's frames draw (after checkSubmission): the objects placed in the sinks and
// their records written, the frame-sized buffers made, the frame's own splat inputs staged and the meshes
// packed.
VulkanRenderer::Impl::Frame VulkanRenderer::Impl::collect(std::span<const RenderObject> objects,
                                                          std::span<const FrameView> views,
                                                          const RenderSettings& settings,
                                                          std::span<const RenderMesh> meshes,
                                                          const FrameTail* tail) {
  Frame f{objects, views, settings, tail, views.front().camera};
  const Camera& cam = f.cam;
  f.uploaded_slots = residency.placeObjects(objects, settings, &f.uploaded_bytes);
  f.tiles_x = ceilDiv(static_cast<uint32_t>(cam.width), kTileSize);
  f.tiles_y = ceilDiv(static_cast<uint32_t>(cam.height), kTileSize);
  ensureImage(static_cast<uint32_t>(cam.width), static_cast<uint32_t>(cam.height), f.tiles_x * f.tiles_y,
              settings.depth);
  write_train = tail != nullptr;
  write_depth = settings.depth;
  half_raster = settings.half_raster;
  count_raster = settings.count_raster;
  // The backward passes of a tail (training) differentiate the display-space blend.
  if (tail && settings.blend_space == BlendSpace::kLinear)
    throw Error(
        "Vulkan renderer: a frame with a tail (training) blends in display space, and the settings ask for "
        "linear");
  blend_linear = settings.blend_space == BlendSpace::kLinear;
  if (tail && !train_last.size) {
    const VkDeviceSize pixels = static_cast<VkDeviceSize>(cam.width) * static_cast<VkDeviceSize>(cam.height);
    train_final_t = ctx.createBuffer(pixels * 4, false, "train final transmittance");
    train_last = ctx.createBuffer(pixels * 4, false, "train last splat");
  }
  sort.ensureKeys(std::max<uint64_t>(sort.key_capacity, static_cast<uint64_t>(residency.slots) * 4));
  // Raster slices need the frame alone in its submission and nothing after its raster but the readback: the
  // frames of a batch, and a tail's backward passes (which walk the lists themselves), take them whole.
  raster_slice = views.size() == 1 && !tail ? settings.raster_slice : 0;
  last_slices = 0;

  std::vector<GpuObject>& gobj = f.gobj;
  gobj.resize(objects.size());
  for (size_t o = 0; o < objects.size(); ++o) {
    GpuObject& g = gobj[o];
    copyRows(g.object_to_world, objects[o].object_to_world);
    const GaussianCloud& cloud = *objects[o].cloud;
    g.first_slot = static_cast<uint32_t>(residency.residents[o].slots.first);
    g.count = static_cast<uint32_t>(objects[o].count());
    g.sh_degree = static_cast<uint32_t>(drawnShDegree(cloud.sh_degree, settings));
    g.sh_base = static_cast<uint32_t>(residency.residents[o].sh.first);
    const bool half_sh = residency.residents[o].half_sh;
    g.sh_stride = static_cast<uint32_t>(half_sh ? halfShWords(cloud.shStride()) : cloud.shStride());
    g.flags = (settings.antialiased || cloud.antialiased ? SF_OBJECT_ANTIALIASED : 0u) |
              (cloud.color_space == ColorSpace::kLinear ? SF_OBJECT_LINEAR_COLOR : 0u) |
              (half_sh ? SF_OBJECT_SH_HALF : 0u);
    g.screen_filter = cloud.screen_filter;
  }
  has_shapes = std::any_of(objects.begin(), objects.end(), [](const RenderObject& o) {
    return !o.shapes.empty() || (o.gpu_source && o.gpu_source->writesShapes());
  });
  // The backward passes of a tail (training) differentiate the gaussian's alpha, not a shape's.
  if (has_shapes && tail)
    throw Error(
        "Vulkan renderer: a frame with a tail (training) draws gaussians only, and an object gives shape "
        "words");
  residency.uploadStatic(objects, meshes);
  f.staged = residency.stageFrame(objects, gobj);
  // The object records, once per frame of the submission (the camera in object space differs per frame).
  f.run_objects.resize(objects.size() * views.size());
  for (size_t r = 0; r < views.size(); ++r) {
    const Vec3 eye = views[r].camera.position();
    for (size_t o = 0; o < objects.size(); ++o) {
      const Vec3 c = transformPoint(inverseAffine(objects[o].object_to_world), eye);
      gobj[o].cam_in_object[0] = c.x, gobj[o].cam_in_object[1] = c.y, gobj[o].cam_in_object[2] = c.z;
    }
    std::copy(gobj.begin(), gobj.end(),
              f.run_objects.begin() + static_cast<std::ptrdiff_t>(r * objects.size()));
  }
  has_mesh = !meshes.empty();
  f.mesh_triangles = mesh.prepare(meshes, cam, residency, &f.mesh_draws_offset);
  f.tile_count = f.tiles_x * f.tiles_y, f.tile_blocks = ceilDiv(f.tile_count, SF_SCAN_BLOCK);
  return f;
}

// Records frame r.run of the submission: its passes as declared in a frame graph, with the graph's barriers
// and the breadcrumbs, after a barrier from the frame recorded before it.
void VulkanRenderer::Impl::recordFrame(const Frame& f, const Recording& r) {
  run_index = static_cast<uint32_t>(r.run);
  timestamp_base = static_cast<uint32_t>(r.at) * kTimestamps;
  if (r.at > 0) barrier(r.cmd);
  timestamp(r.cmd, 0);
  // The frame as declared passes; the graph puts a barrier wherever a pass touches what an earlier one
  // wrote (or overwrites what one read) since the last barrier. docs/architecture.md shows the result.
  FrameGraph g;
  const Resources res{g.resource("counters"),      g.resource("tile bins"),
                      g.resource("deform inputs"), g.resource("skinned vertices"),
                      g.resource("mesh data"),     g.resource("splat slots"),
                      g.resource("mesh layer"),    g.resource("projected splats"),
                      g.resource("tile ranges"),   g.resource("tile pairs"),
                      g.resource("image"),         g.resource("post image"),
                      g.resource("readback")};
  addInputPasses(g, res, f, r);
  addTilePasses(g, res, f, r);
  // One word per pass that begins a stretch (up to kCrumbsPerFrame; a later pass shares the last word) per
  // recorded frame: contributed passes make the count differ between frames of one submission, so the stride
  // is fixed. (A word per pass cost 200 live hulls' effects 3.5 ms on an H100: a fill between dispatches.)
  const VkDeviceSize crumbs = 4 * kCrumbsPerFrame * kMaxBackToBack;
  if (breadcrumb.size < crumbs) {
    breadcrumb = ctx.createBuffer(crumbs, true, "pass breadcrumbs");
    std::memset(breadcrumb.mapped, 0, static_cast<size_t>(breadcrumb.size));
  }
  const VkDeviceSize crumb_base = 4 * kCrumbsPerFrame * static_cast<VkDeviceSize>(r.at);
  g.run([&] { barrier(r.cmd); },
        [&](size_t pass) {
          vkCmdFillBuffer(r.cmd, breadcrumb.buffer,
                          crumb_base + 4 * std::min<size_t>(pass, kCrumbsPerFrame - 1), 4, frame_serial);
        });
  last_graph = std::move(g);
}

// The passes before preprocess: the clears, the uploads of the frame's own inputs, the skin and deform
// passes, the objects written on the GPU and the mesh pass.
void VulkanRenderer::Impl::addInputPasses(FrameGraph& g, const Resources& res, const Frame& f,
                                          const Recording& r) {
  g.add("clear", {}, {res.counters, res.bins, res.projected}, [&] {
    // One write per buffer: a fill followed by an update of the same bytes would be a write-after-write
    // hazard between two transfer commands with no barrier between them.
    uint32_t words[SF_COUNTER_WORDS] = {};
    words[SF_COUNTER_SLOTS] = residency.slots;
    words[SF_COUNTER_TILES] = f.tile_count;
    vkCmdUpdateBuffer(r.cmd, counters.buffer, 0, sizeof(words), words);
    vkCmdFillBuffer(r.cmd, tile_bins.buffer, 0, VK_WHOLE_SIZE, 0);
    // Free slots of the sink (objects gone, not yet reused) touch no tile: depth keys sort them last.
    for (const SplatSink::Range& s : residency.slot_sink.freeRanges())
      vkCmdFillBuffer(r.cmd, residency.touched.buffer, s.first * 4, s.count * 4, 0);
  });
  // Frames with shapes: every slot's word 0 (the gaussian) before shaped objects write theirs.
  g.add(
      "clear shapes", {}, {res.splats},
      [&] {
        vkCmdFillBuffer(r.cmd, residency.shapes.buffer, 0, static_cast<VkDeviceSize>(residency.slots) * 4, 0);
      },
      has_shapes && residency.slots > 0);
  const StagedSplats& staged = f.staged;
  g.add(
      "slot overrides", {}, {res.splats}, [&] { residency.recordOverrides(r.cmd, staged); },
      !staged.pos_copies.empty() || !staged.shape_copies.empty());
  // Vertex data, indices, textures and draw records to device-local memory (vertex pulling and texel
  // reads from host memory would cross the bus per fragment on a discrete GPU).
  g.add(
      "mesh data", {}, {res.mesh_data}, [&] { mesh.recordUpload(r.cmd); }, has_mesh);
  g.add(
      "deform inputs", {}, {res.deform_in}, [&] { residency.recordDeformInputs(r.cmd, staged); },
      staged.deform_bytes > 0);
  // The one skin pass (deform/gpu_passes.h): meshes under bound splats into the skinned-vertex buffer,
  // skinned drawn meshes into their vertex ranges of the mesh data. Then the bound splats: centres and
  // covariances from this frame's deformed meshes, into their slots.
  const bool skin_any = !mesh.skins.empty() || std::any_of(staged.deforms.begin(), staged.deforms.end(),
                                                           [](const DeformDispatch& dd) { return dd.skin; });
  g.add(
      "skin", {res.deform_in, res.mesh_data}, {res.skinned, res.mesh_data},
      [&] {
        for (const DeformDispatch& dd : staged.deforms)
          if (dd.skin) skin_pass.record(r.cmd, dd.skin_push);
        for (const SkinPush& p : mesh.skins) skin_pass.record(r.cmd, p);
      },
      skin_any);
  g.add(
      "deform splats", {res.deform_in, res.skinned}, {res.splats},
      [&] {
        for (const DeformDispatch& dd : staged.deforms) {
          splat_deform_pass.record(r.cmd, dd.push);
        }
      },
      !staged.deforms.empty());
  // Objects written on the GPU (neural generators, live hulls, the level-of-detail pool, decoder characters,
  // the trainer): the passes they contribute (render/frame_passes.h), each object's writing its own part of
  // the splat slots.
  FramePasses sources(g, res.contributed(), r.cmd);
  for (size_t o = 0; o < f.objects.size(); ++o) {
    if (!f.objects[o].gpu_source) continue;
    GpuSplatTargets targets = residency.targets(f.gobj[o]);
    targets.slots = g.part(res.splats, "splat slots of object " + std::to_string(o));
    sources.nextContributor();
    f.objects[o].gpu_source->addPasses(sources, targets);
  }
  if (sources.addToGraph(FramePasses::Order::kInterleaved) == 0)
    g.add("gpu sources", {}, {res.splats}, {}, false);  // (where they go, in describe())
  g.add(
      "meshes", {res.mesh_data}, {res.mesh},
      [&] { mesh.record(r.cmd, f.mesh_triangles, f.mesh_draws_offset, f.cam); }, has_mesh);
}

// The counters of the frames just submitted (`todo`, in the order recorded): each frame's figures into
// `stats`. Returns the frames whose keys overflowed (*most_keys: the most keys one of them asked for); on the
// last attempt an overflow throws.
std::vector<int> VulkanRenderer::Impl::readCounters(const Frame& f, const Recording& r,
                                                    std::span<const int> todo, bool last_attempt,
                                                    std::vector<VulkanFrameStats>& stats,
                                                    uint32_t* most_keys) {
  std::vector<int> overflowed;
  for (size_t at = 0; at < todo.size(); ++at) {
    uint32_t cnt[SF_COUNTER_WORDS];
    std::memcpy(cnt, static_cast<uint8_t*>(r.st_buf->mapped) + r.counters_at + kCounterBytes * at,
                sizeof(cnt));
    if (cnt[SF_COUNTER_ERROR])
      throw Error("Vulkan device " + ctx.info().name +
                  " ran the radix sort with an unexpected subgroup layout");
    VulkanFrameStats& st = stats[static_cast<size_t>(todo[at])];
    if (cnt[SF_COUNTER_OVERFLOW] == 2)
      throw Error(
          "Vulkan renderer: the frame needs 2^32 or more (tile, splat) pairs (splats covering the screen "
          "many times over); "
          "render it smaller or with fewer gaussians");
    if (cnt[SF_COUNTER_OVERFLOW]) {
      if (last_attempt) throw Error("Vulkan renderer: tile keys still overflow after growing the buffers");
      overflowed.push_back(todo[at]);
      *most_keys = std::max(*most_keys, cnt[SF_COUNTER_KEYS]);
      st.regrown = true;
      continue;
    }
    const std::vector<double> ms = readTimestamps(kTimestamps, static_cast<uint32_t>(at) * kTimestamps);
    st.splats = residency.slot_sink.live();
    st.visible = cnt[SF_COUNTER_VISIBLE];
    st.tile_keys = cnt[SF_COUNTER_KEYS];
    st.sort_passes = static_cast<int>(mergePasses(cnt[SF_COUNTER_LONGEST]));
    st.longest_tile = cnt[SF_COUNTER_LONGEST];
    st.half_raster = drawsHalfRaster();
    st.raster_counted = countsRaster();
    auto counter64 = [&](int word) { return uint64_t{cnt[word]} | uint64_t{cnt[word + 1]} << 32; };
    st.raster_entries = counter64(SF_COUNTER_RASTER_ENTRIES);
    st.raster_evaluated = counter64(SF_COUNTER_RASTER_EVALUATED);
    st.raster_blended = counter64(SF_COUNTER_RASTER_BLENDED);
    st.raster_batches = counter64(SF_COUNTER_RASTER_BATCHES);
    st.raster_longest_walk = cnt[SF_COUNTER_RASTER_LONGEST_WALK];
    st.host_staging_bytes = staging.size();
    st.uploaded_slots = f.uploaded_slots;
    st.uploaded_bytes = f.uploaded_bytes;
    st.first_slots.clear();
    for (const VulkanResidency::Resident& res : residency.residents)
      st.first_slots.push_back(res.slots.first);
    st.times = {ms[1], ms[2], ms[3], ms[4], ms[5], ms[6], ms[7], ms[8], ms[0]};
  }
  return overflowed;
}

VulkanPassTimes medianPassTimes(std::span<const VulkanPassTimes> runs) {
  VulkanPassTimes out;
  if (runs.empty()) return out;
  auto median = [&](double VulkanPassTimes::*field) {
    std::vector<double> v;
    for (const VulkanPassTimes& r : runs) v.push_back(r.*field);
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    out.*field = v[v.size() / 2];
  };
  for (double VulkanPassTimes::*f :
       {&VulkanPassTimes::mesh, &VulkanPassTimes::preprocess, &VulkanPassTimes::bin, &VulkanPassTimes::scan,
        &VulkanPassTimes::emit, &VulkanPassTimes::sort, &VulkanPassTimes::raster, &VulkanPassTimes::readback,
        &VulkanPassTimes::total})
    median(f);
  return out;
}

VulkanRenderer::VulkanRenderer(const gpu::ContextOptions& options) : impl_(std::make_unique<Impl>(options)) {}
VulkanRenderer::~VulkanRenderer() = default;
const gpu::DeviceInfo& VulkanRenderer::device() const {
  return impl_->ctx.info();
}
void VulkanRenderer::setTileBinning(TileBinning binning) {
  const auto lock = impl_->ctx.lock();
  impl_->setTileBinning(binning);
}
const char* VulkanRenderer::tileBinningName() const {
  const auto lock = impl_->ctx.lock();
  switch (impl_->tile_binning) {
    case TileBinning::kPerPair:
      break;
    case TileBinning::kPartitioned:
      return "partitioned";
    case TileBinning::kAggregated:
      return "aggregated";
  }
  return "per pair";
}
std::string VulkanRenderer::lastFrameGraph() const {
  const auto lock = impl_->ctx.lock();  // (a render on another thread replaces the graph)
  std::string graph = impl_->last_graph.describe();
  if (impl_->last_slices)
    graph += "then raster slices: " + std::to_string(impl_->last_slices) + " (tiles of more than " +
             std::to_string(impl_->raster_slice) +
             " pairs, which the frame's raster left), a submission each\n";
  return graph;
}

gpu::Context& VulkanRenderer::context() {
  return impl_->ctx;
}

ImageRGBA VulkanRenderer::render(std::span<const RenderObject> objects, const Camera& cam,
                                 const RenderSettings& settings, VulkanFrameStats* stats,
                                 std::span<const RenderMesh> meshes) {
  const FrameView view{cam, settings.background};
  std::vector<VulkanFrameStats> st;
  ImageRGBA img = renderFrame(objects, {&view, 1}, settings, meshes, nullptr, &st);
  if (stats) *stats = st.back();
  return img;
}

ImageRGBA VulkanRenderer::renderWithImagePasses(std::span<const RenderObject> objects, const Camera& cam,
                                                const RenderSettings& settings,
                                                std::span<const ImagePass* const> passes,
                                                VulkanFrameStats* stats, std::span<const RenderMesh> meshes) {
  const FrameView view{cam, settings.background};
  std::vector<VulkanFrameStats> st;
  const auto lock =
      impl_->ctx.lock();  // (recursive: renderFrame takes it too) no other frame sees the passes
  impl_->image_passes = passes;
  ImageRGBA img;
  try {
    img = renderFrame(objects, {&view, 1}, settings, meshes, nullptr, &st);
  } catch (...) {
    impl_->image_passes = {};
    throw;
  }
  impl_->image_passes = {};
  if (stats) *stats = st.back();
  return img;
}

std::vector<VulkanPassTimes> VulkanRenderer::renderBackToBack(
    std::span<const RenderObject> objects, const Camera& cam, const RenderSettings& settings, int runs,
    VulkanFrameStats* stats, std::span<const RenderMesh> meshes, ImageRGBA* image) {
  if (runs < 1 || runs > static_cast<int>(Impl::kMaxBackToBack))
    throw Error("back-to-back frames: " + std::to_string(runs) + " runs asked for, one submission holds 1.." +
                std::to_string(Impl::kMaxBackToBack));
  const std::vector<FrameView> views(static_cast<size_t>(runs), FrameView{cam, settings.background});
  std::vector<VulkanFrameStats> st;
  ImageRGBA last = renderFrame(objects, views, settings, meshes, nullptr, &st);
  if (image) *image = std::move(last);
  if (stats) *stats = st.back();
  std::vector<VulkanPassTimes> times;
  for (const VulkanFrameStats& s : st) times.push_back(s.times);
  return times;
}

VulkanFrameStats VulkanRenderer::renderWithTail(std::span<const RenderObject> objects, const Camera& cam,
                                                const RenderSettings& settings, const FrameTail& tail) {
  const FrameView view{cam, settings.background};
  std::vector<VulkanFrameStats> st;
  renderFrame(objects, {&view, 1}, settings, {}, &tail, &st);
  return st.back();
}

std::vector<VulkanFrameStats> VulkanRenderer::renderBatchWithTail(std::span<const RenderObject> objects,
                                                                  std::span<const FrameView> views,
                                                                  const RenderSettings& settings,
                                                                  const FrameTail& tail) {
  std::vector<VulkanFrameStats> st;
  renderFrame(objects, views, settings, {}, &tail, &st);
  return st;
}

ImageRGBA VulkanRenderer::renderFrame(std::span<const RenderObject> objects, std::span<const FrameView> views,
                                      const RenderSettings& settings, std::span<const RenderMesh> meshes,
                                      const FrameTail* tail, std::vector<VulkanFrameStats>* run_stats) {
  // Every render entry point comes here: the context's lock, held from the uploads to the image read back
  // from the staging buffer, serialises frames of one renderer (and any other work on its context) across
  // threads.
  const auto lock = impl_->ctx.lock();
  try {
    return renderFrameOnce(objects, views, settings, meshes, tail, run_stats);
  } catch (const gpu::MemoryBudgetError& e) {
    impl_->dropResources();
    size_t gaussians = 0;
    for (const RenderObject& o : objects) gaussians += o.count();
    const Camera& cam = views.front().camera;
    throw Error("Vulkan renderer: a frame of " + std::to_string(gaussians) + " gaussians in " +
                std::to_string(objects.size()) + " objects at " + std::to_string(cam.width) + "x" +
                std::to_string(cam.height) + " does not fit the GPU memory budget: " + e.what());
  }
}

// The frame: collect, then record (the frame graph of each frame of the submission), submit, read the
// counters back, and retry after growing the key buffers where a frame's keys overflowed.
ImageRGBA VulkanRenderer::renderFrameOnce(std::span<const RenderObject> objects,
                                          std::span<const FrameView> views, const RenderSettings& settings,
                                          std::span<const RenderMesh> meshes, const FrameTail* tail,
                                          std::vector<VulkanFrameStats>* run_stats) {
  Impl& m = *impl_;
  Impl::checkSubmission(objects, views, meshes);
  const Impl::Frame f = m.collect(objects, views, settings, meshes, tail);
  const Camera& cam = f.cam;
  const int runs = static_cast<int>(views.size());

  // The frames this attempt records: all of them, then after a key overflow (the buffers grown) all again,
  // or with a tail only those that overflowed (a tail does nothing in a frame whose keys overflowed, and the
  // others' tails have run: training steps are not repeated).
  std::vector<int> todo(static_cast<size_t>(runs));
  for (int r = 0; r < runs; ++r) todo[static_cast<size_t>(r)] = r;
  std::vector<VulkanFrameStats> stats(static_cast<size_t>(runs));
  ImageRGBA img;
  // A frame rendered again renders what it overflowed with, so one growth suffices; with a tail the frames
  // rendered again follow later frames whose tails changed the inputs, and may need a little more.
  const int attempts = tail && runs > 1 ? 4 : 2;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    m.ensureChunks();
    for (int r = 0; r < runs; ++r)
      m.writeFrame(&views[static_cast<size_t>(r)].camera, views[static_cast<size_t>(r)].background, f.tiles_x,
                   f.tiles_y, settings.depth, static_cast<uint32_t>(r));
    VkCommandBuffer cmd = m.ctx.begin();
    vkCmdResetQueryPool(cmd, m.queries, 0, Impl::kTimestamps * static_cast<uint32_t>(todo.size()));
    // With a tail the image stays on the GPU: only the counters come back.
    const VkDeviceSize image_bytes =
        tail ? 0 : static_cast<VkDeviceSize>(cam.width) * static_cast<VkDeviceSize>(cam.height) * 16;
    // Staging: the image, the depth plane when asked for, the counters.
    const VkDeviceSize depth_bytes = settings.depth ? image_bytes / 2 : 0,
                       counters_at = image_bytes + depth_bytes;
    gpu::Buffer& st_buf = m.staging.buffer(counters_at + Impl::kCounterBytes * todo.size());
    // Merge passes recorded: enough for the longest list possible (a slot reaches a tile once); those no
    // list of the frame needs are dispatched with no workgroups (seg_setup.comp).
    const uint32_t merge_passes = std::min<uint32_t>(
        mergePasses(std::min<uint64_t>(m.residency.slots, m.sort.key_capacity)), SF_MAX_MERGE_PASSES);
    Impl::Recording rec{cmd, &st_buf, image_bytes, depth_bytes, counters_at, merge_passes, todo.size()};
    m.frame_serial =
        m.frame_serial == UINT32_MAX ? 1 : m.frame_serial + 1;  // never 0, the words' initial value
    // The frames of one submission (renderBackToBack, renderBatchWithTail) are recorded one after the other,
    // a barrier between them, each with its own frame and object records: a GPU that never waits on the host.
    for (size_t at = 0; at < todo.size(); ++at) {
      rec.at = at, rec.run = todo[at];
      m.recordFrame(f, rec);
    }
    m.timestamp_base = 0;
    m.run_index = 0;
    try {
      m.ctx.submit(cmd, "running the frame");
    } catch (const gpu::DeviceLost& e) {
      throw gpu::DeviceLost(std::string(e.what()) + "; " + m.lostPassReport());
    }

    uint32_t most_keys = 0;
    const std::vector<int> overflowed =
        m.readCounters(f, rec, todo, attempt + 1 == attempts, stats, &most_keys);
    if (!overflowed.empty()) {
      m.sort.ensureKeys(static_cast<uint64_t>(most_keys) + most_keys / 4);
      if (tail) {
        todo = overflowed;
      } else {
        for (VulkanFrameStats& st : stats) st.regrown = true;
      }
      continue;
    }
    // Tiles deeper than the raster slice, which the frame's raster left: drawn in slices now (their own
    // submissions). The host knows the deepest tile from the counters it reads back anyway, so a frame within
    // the slice costs nothing more; only a deeper one waits for the host between its submissions.
    if (m.raster_slice != 0 && stats[0].longest_tile > m.raster_slice)
      m.rasterSlices(stats[0], f.tiles_x, f.tiles_y, st_buf, image_bytes, depth_bytes);
    // The image (the same in every frame of a back-to-back submission) is the last frame's.
    img = ImageRGBA(tail ? 0 : cam.width, tail ? 0 : cam.height);
    if (image_bytes) std::memcpy(img.pixels.data(), st_buf.mapped, image_bytes);
    if (depth_bytes) {
      img.depth.resize(static_cast<size_t>(depth_bytes / 4));
      std::memcpy(img.depth.data(), static_cast<uint8_t*>(st_buf.mapped) + image_bytes, depth_bytes);
    }
    if (run_stats) *run_stats = std::move(stats);
    return img;
  }
  throw Error("Vulkan renderer: unreachable");
}

VulkanFrameDebug VulkanRenderer::readDebug() {
  Impl& m = *impl_;
  const auto lock = m.ctx.lock();
  const VulkanResidency& s = m.residency;
  VulkanFrameDebug d;
  auto floats = [&](const gpu::Buffer& b, size_t count) {
    std::vector<uint8_t> raw = m.staging.download(b, count * 4);
    std::vector<float> out(count);
    if (count) std::memcpy(out.data(), raw.data(), raw.size());
    return out;
  };
  auto uints = [&](const gpu::Buffer& b, size_t count) {
    std::vector<uint8_t> raw = m.staging.download(b, count * 4);
    std::vector<uint32_t> out(count);
    if (count) std::memcpy(out.data(), raw.data(), raw.size());
    return out;
  };
  d.means = floats(s.means, s.slots * 2ull);
  d.conic_opacity = floats(s.conic_opacity, s.slots * 4ull);
  d.color_depth = floats(s.color_depth, s.slots * 4ull);
  std::vector<uint32_t> cnt = uints(m.counters, SF_COUNTER_WORDS);
  const size_t keys = cnt[SF_COUNTER_OVERFLOW] || !m.sort.keys[0].size
                          ? 0
                          : std::min<size_t>(cnt[SF_COUNTER_KEYS], m.sort.key_capacity);
  d.tile_ranges = uints(m.tile_ranges, m.tiles * 2ull);
  const std::vector<uint32_t> values = uints(m.sort.keys[2], keys), values_alt = uints(m.sort.keys[5], keys);
  d.sorted_tiles.assign(keys, 0);
  d.sorted_values.assign(keys, 0);
  for (uint32_t t = 0; t < m.tiles; ++t) {
    const uint32_t begin = d.tile_ranges[2 * t], end = d.tile_ranges[2 * t + 1];
    const std::vector<uint32_t>& from = mergePasses(end - begin) % 2 ? values_alt : values;
    for (uint32_t k = begin; k < end && k < keys; ++k) d.sorted_tiles[k] = t, d.sorted_values[k] = from[k];
  }
  const std::vector<uint32_t> order = uints(m.tile_order, m.tiles * uint64_t{SF_TILE_CLASSES});
  d.tile_classes.assign(cnt.begin() + SF_COUNTER_TILE_CLASSES,
                        cnt.begin() + SF_COUNTER_TILE_CLASSES + SF_TILE_CLASSES);
  for (uint32_t c = SF_TILE_CLASSES; c-- > 0;) {
    const auto list = order.begin() + static_cast<ptrdiff_t>(c) * m.tiles;
    d.raster_order.insert(d.raster_order.end(), list, list + std::min(d.tile_classes[c], m.tiles));
  }
  d.slot_positions = floats(s.positions, s.slots * 3ull);
  d.slot_covariances = floats(s.covariances, s.slots * 6ull);
  m.mesh.readDebug(m.staging, d);
  return d;
}

double VulkanRenderer::sortPairs(std::vector<uint32_t>& hi, std::vector<uint32_t>& lo,
                                 std::vector<uint32_t>& values, int hi_bits) {
  const auto lock = impl_->ctx.lock();
  Impl& m = *impl_;
  const size_t n = hi.size();
  if (lo.size() != n || values.size() != n) throw Error("sortPairs: arrays differ in size");
  if (n == 0) return 0;
  gpu::Buffer* keys = m.sort.keys;
  m.sort.ensureKeys(n, true);
  m.writeFrame(nullptr, {}, 0, 0);
  m.staging.upload(keys[0], lo.data(), n * 4);
  m.staging.upload(keys[1], hi.data(), n * 4);
  m.staging.upload(keys[2], values.data(), n * 4);
  uint32_t count = static_cast<uint32_t>(n);
  VkCommandBuffer cmd = m.ctx.begin();
  vkCmdResetQueryPool(cmd, m.queries, 0, Impl::kTimestamps);
  uint32_t counters[SF_COUNTER_WORDS] = {};  // one write: see the frame's "clear" pass
  counters[SF_COUNTER_SCAN_TOTAL] = count;
  vkCmdUpdateBuffer(cmd, m.counters.buffer, 0, sizeof(counters), counters);
  gpu::computeBarrier(cmd);
  m.sort.recordSortSetup(cmd, m.push(), m.counters, m.counters.address + SF_COUNTER_SCAN_TOTAL * 4,
                         SF_DESC_KEYS, 0);
  gpu::computeBarrier(cmd);
  m.timestamp(cmd, 0);
  int passes =
      m.sort.recordSort(cmd, m.push(), m.counters, SF_DESC_KEYS, kDepthPasses,
                        (std::clamp(hi_bits, 1, 32) + 7) / 8, SF_FLAG_CARRY_LO | SF_FLAG_CARRY_HI, n);
  gpu::computeBarrier(cmd);
  m.timestamp(cmd, 1);
  m.ctx.submit(cmd);
  bool alt = passes % 2 != 0;
  std::vector<uint8_t> cnt = m.staging.download(m.counters, SF_COUNTER_WORDS * 4);
  uint32_t error;
  std::memcpy(&error, cnt.data() + SF_COUNTER_ERROR * 4, 4);
  if (error)
    throw Error("Vulkan device " + m.ctx.info().name +
                " ran the radix sort with an unexpected subgroup layout");
  auto back = [&](const gpu::Buffer& b, std::vector<uint32_t>& v) {
    std::vector<uint8_t> raw = m.staging.download(b, n * 4);
    std::memcpy(v.data(), raw.data(), n * 4);
  };
  back(keys[alt ? 3 : 0], lo);
  back(keys[alt ? 4 : 1], hi);
  back(keys[alt ? 5 : 2], values);
  return m.readTimestamps(2)[1];
}

}  // namespace sf
