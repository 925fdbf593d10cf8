// Vulkan renderer host code: buffers, pipelines and the recording of one frame (see vulkan_renderer.h).
#include "render/vulkan_renderer.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <map>
#include <tuple>

#include "core/covariance.h"
#include "core/error.h"
#include "deform/gpu_passes.h"
#include "gpu/gpu.h"
#include "render/frame_graph.h"
#include "render/gpu_shared.h"
#include "render/mesh_shared.h"
#include "render/splat_sink.h"

namespace sf {

namespace {

using namespace gpu_layout;
using deform_layout::GpuDeformPush;
using deform_layout::SkinPush;
static_assert(static_cast<float>(SF_MIN_SORT_DEPTH) == kMinSortDepth, "one minimum sort depth on both backends");

// SPIR-V of every pass, compiled by glslc at build time (shaders/*.comp -> *.inc).
const uint32_t kPreprocess[] = {
#include "preprocess.inc"
};
const uint32_t kScanReduce[] = {
#include "scan_reduce.inc"
};
const uint32_t kScanBlocks[] = {
#include "scan_blocks.inc"
};
const uint32_t kScanApply[] = {
#include "scan_apply.inc"
};
const uint32_t kSortSetup[] = {
#include "sort_setup.inc"
};
const uint32_t kBinTiles[] = {
#include "bin_tiles.inc"
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
const uint32_t kRadixHistogram[] = {
#include "radix_histogram.inc"
};
const uint32_t kRadixScatter[] = {
#include "radix_scatter.inc"
};
const uint32_t kRadixSmall[] = {
#include "radix_small.inc"
};
const uint32_t kRaster[] = {
#include "raster.inc"
};
const uint32_t kRasterShapes[] = {
#include "raster_shapes.inc"
};
const uint32_t kMeshVert[] = {
#include "mesh_vert.inc"
};
const uint32_t kMeshFrag[] = {
#include "mesh_frag.inc"
};

constexpr uint32_t kTimestamps = 9;  // per recorded frame
constexpr uint32_t kMaxBackToBack = kMaxFramesPerSubmission;
constexpr VkDeviceSize kFrameStride = (sizeof(GpuFrame) + 255) / 256 * 256;  // one GpuFrame record per frame of a submission
constexpr int kDepthPasses = 4;  // sortPairs: 8-bit digits over the 32-bit low word

// Merge passes a tile list of `len` pairs takes (sfMergePasses in gpu_shared.h): its pairs end in the
// alternate buffers when the number is odd.
uint32_t mergePasses(uint64_t len) { return len <= SF_SEG_BLOCK ? 0u : static_cast<uint32_t>(std::bit_width((len - 1) / SF_SEG_BLOCK)); }

uint32_t ceilDiv(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

void copyRows(float dst[12], const Mat4& m) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) dst[r * 4 + c] = m.m[r][c];
}

// Appends `bytes` to a packing of mesh data, 16-byte aligned; returns the offset.
// `data` null reserves zeroed bytes.
size_t pack(std::vector<uint8_t>& out, const void* data, size_t bytes) {
  size_t at = (out.size() + 15) & ~size_t{15};
  out.resize(at + bytes);
  if (bytes && data) std::memcpy(out.data() + at, data, bytes);
  return at;
}

// Calls add(key, fill) for every static input array of a frame in a fixed order; fill(dst) writes the
// array's packed bytes. An array is keyed by its address and packed size; packed influences by the two
// arrays they come from (joints0 and joints1, weights0 and weights1).
using StaticKey = std::tuple<const void*, const void*, size_t>;

template <class Add>
void forEachStatic(std::span<const RenderObject> objects, std::span<const RenderMesh> meshes, Add&& add) {
  auto raw = [&](const void* data, size_t bytes) { add(StaticKey{data, nullptr, bytes}, [=](uint8_t* dst) { std::memcpy(dst, data, bytes); }); };
  auto skin = [&](const SkinSource& s) {
    raw(s.positions.data(), s.positions.size_bytes());
    raw(s.normals.data(), s.normals.size_bytes());
    raw(s.morph_positions.data(), s.morph_positions.size_bytes());
    raw(s.morph_normals.data(), s.morph_normals.size_bytes());
    if (!s.skinned()) return;
    const size_t bytes = s.vertexCount() * SF_SKIN_INFLUENCES * 4;
    auto influences = [s](bool joints, uint8_t* dst) {
      std::vector<uint32_t> j;
      std::vector<float> w;
      packSkinInfluences(s.joints0, s.weights0, s.joints1, s.weights1, j, w);
      if (joints) std::memcpy(dst, j.data(), j.size() * 4);
      else std::memcpy(dst, w.data(), w.size() * 4);
    };
    add(StaticKey{s.joints0.data(), s.joints1.data(), bytes}, [=](uint8_t* dst) { influences(true, dst); });
    add(StaticKey{s.weights0.data(), s.weights1.data(), bytes}, [=](uint8_t* dst) { influences(false, dst); });
  };
  for (const RenderObject& o : objects)
    if (o.deform) {
      raw(o.deform->bindings.data(), o.deform->bindings.size());
      raw(o.deform->indices.data(), o.deform->indices.size_bytes());
      if (!o.deform->skin.empty()) skin(o.deform->skin);
    }
  for (const RenderMesh& mesh : meshes)
    if (!mesh.skin.empty()) skin(mesh.skin);
}

constexpr VkFormat kMeshColorFormat = VK_FORMAT_R32G32B32A32_SFLOAT, kMeshDepthValueFormat = VK_FORMAT_R32_SFLOAT,
                   kMeshDepthFormat = VK_FORMAT_D32_SFLOAT;

}  // namespace

struct VulkanRenderer::Impl {
  gpu::Context ctx;
  gpu::ComputePipeline preprocess, scan_reduce, scan_blocks, scan_apply, sort_setup, bin_tiles, tile_setup, seg_setup, seg_sort, seg_sort_small, seg_merge,
      histogram, scatter, raster, raster_shapes;
  VkQueryPool queries = VK_NULL_HANDLE;

  // The splat sinks (render/splat_sink.h): slots, and SH floats (whose stride differs per object). Every
  // object of the last frame owns a range of each; the arrays below are sized to the capacities.
  SplatSink slot_sink{UINT32_MAX / 8}, sh_sink{UINT32_MAX};
  struct Resident {
    const GaussianCloud* cloud = nullptr;
    size_t size = 0, sh_floats = 0;
    SplatSink::Range slots, sh;
    uint32_t overwritten = 0;  // what this frame writes over the rest values: kOverwritesShape | kOverwritesLook
  };
  static constexpr uint32_t kOverwritesShape = 1, kOverwritesLook = 2;  // centres + covariances; opacities + SH
  std::vector<Resident> residents;  // per object of the last frame
  uint64_t slot_capacity = 0, sh_capacity = 0;
  uint32_t slots = 0;  // slot_sink.size(): the frame's slot count, free ranges included (left out by "clear")
  gpu::Buffer positions, covariances, opacities, sh;
  // Per-slot preprocess outputs.
  gpu::Buffer means, conic_opacity, color_depth, rects, touched;
  // Per-slot shape words, rewritten in every frame that reads them (so not kept when the slots grow).
  gpu::Buffer shapes;
  // Keys.
  uint32_t key_capacity = 0;
  gpu::Buffer keys[6], hist, hist_sums;
  // Per frame.
  uint32_t tiles = 0, width = 0, height = 0;
  gpu::Buffer tile_ranges, tile_bins, bin_sums, chunks, image, depth_out, counters, frame, objects_buf, readback, dynamic_staging;
  uint64_t chunk_capacity = 0;
  gpu::Buffer train_final_t, train_last;  // per pixel, for a frame with a tail (renderWithTail)
  bool write_train = false;
  // Raster slices (RenderSettings::raster_slice): this frame's slice size (0: the frame's raster walks every
  // list whole), the per-pixel state carried between slices (made by the first frame that needs it), and the
  // slices the last frame took (lastFrameGraph).
  uint32_t raster_slice = 0;
  gpu::Buffer raster_carry;
  uint32_t last_slices = 0;
  bool has_shapes = false;  // this frame: an object gives shape words (GpuFrame::shapes, the raster's shapes variant)
  // The last frame's graph, kept for lastFrameGraph() (described on request, not per frame). Its record
  // callbacks refer to that frame's locals and are never run again.
  FrameGraph last_graph;
  // Breadcrumbs (host-visible): before each pass the frame writes its serial number into the pass's own word
  // (one word per recorded frame and pass, so no two writes meet), so that when the device is lost the pass
  // that was running (the last one begun) can be named.
  gpu::Buffer breadcrumb;
  uint32_t frame_serial = 0;

  // The breadcrumbs read after a lost device: the last pass the submission's frames began, and which frame.
  std::string lostPassReport() const {
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
    return "the last pass whose start was recorded was '" + passes[last % passes.size()].name + "' of frame " + std::to_string(last / passes.size() + 1) +
           " in the submission (the frame's passes: " + all + ")";
  }
  uint32_t sort_subgroups = 1;  // subgroups per sort workgroup
  // The one-workgroup sort for sorts the host knows to be small (null where the device's workgroup or shared
  // memory limits are below what it needs), and the subgroups of its workgroup.
  std::unique_ptr<gpu::ComputePipeline> small_sort;
  uint32_t small_sort_subgroups = 0;
  // Mesh pass (created on the first frame with meshes): render targets, their copies the raster reads,
  // and one host-visible buffer with the frame's vertex data, textures and draw records.
  std::unique_ptr<gpu::GraphicsPipeline> mesh_pipeline;
  gpu::Image mesh_color_target, mesh_depth_target, mesh_zbuffer;
  gpu::Buffer mesh_color, mesh_depth, mesh_data, mesh_device;  // mesh_data: host staging of mesh_device
  size_t mesh_bytes = 0;
  // Static inputs of deformed objects and skinned meshes (splat bindings, triangle lists, bind poses, packed
  // influences, morph deltas): one device buffer, packed again only when the set of source arrays changes
  // (keyed by address and packed size; an array shared by several objects is packed once).
  std::vector<StaticKey> static_key;
  std::map<StaticKey, size_t> static_at;
  gpu::Buffer static_inputs;
  struct DeformBounds {  // per deformed object of the packed set: the largest index its static arrays hold
    int64_t vertex = -1, skin_joint = -1, binding_joint = -1;
  };
  std::vector<DeformBounds> deform_bounds;
  SkinPass skin_pass;  // the deform layer's passes (deform/gpu_passes.h)
  SplatDeformPass splat_deform_pass;
  gpu::Buffer skinned;  // posed vertices of GPU-skinned deformed objects, this frame
  gpu::Buffer deform_data;
  std::vector<SkinPush> mesh_skins;  // this frame's skinned meshes (outputs in mesh_device)
  struct MeshVertices {
    size_t positions, position_count, normals, normal_count;  // offsets in mesh_device
  };
  std::vector<MeshVertices> mesh_vertices;  // per mesh of the last frame (readDebug)
  bool has_mesh = false;  // this frame draws meshes
  bool blend_linear = false;  // this frame blends in linear light (RenderSettings::blend_space)

  explicit Impl(const gpu::ContextOptions& o)
      : ctx(o),
        preprocess(ctx, kPreprocess, sizeof(GpuPush), SF_WG_SIZE, "preprocess"),
        scan_reduce(ctx, kScanReduce, sizeof(GpuPush), SF_WG_SIZE, "scan_reduce"),
        scan_blocks(ctx, kScanBlocks, sizeof(GpuPush), SF_WG_SIZE, "scan_blocks"),
        scan_apply(ctx, kScanApply, sizeof(GpuPush), SF_WG_SIZE, "scan_apply"),
        sort_setup(ctx, kSortSetup, sizeof(GpuPush), 1, "sort_setup"),
        bin_tiles(ctx, kBinTiles, sizeof(GpuPush), SF_WG_SIZE, "bin_tiles"),
        tile_setup(ctx, kTileSetup, sizeof(GpuPush), SF_WG_SIZE, "tile_setup"),
        seg_setup(ctx, kSegSetup, sizeof(GpuPush), 1, "seg_setup"),
        seg_sort(ctx, kSegSort, sizeof(GpuPush), SF_SEG_WG, "seg_sort"),
        seg_sort_small(ctx, kSegSortSmall, sizeof(GpuPush), SF_SEG_SMALL_WG, "seg_sort small"),
        seg_merge(ctx, kSegMerge, sizeof(GpuPush), SF_SEG_WG, "seg_merge"),
        histogram(ctx, kRadixHistogram, sizeof(GpuPush), SF_SORT_WG, "radix_histogram", true),
        scatter(ctx, kRadixScatter, sizeof(GpuPush), SF_SORT_WG, "radix_scatter", true),
        raster(ctx, kRaster, sizeof(GpuPush), SF_TILE, "raster"),
        raster_shapes(ctx, kRasterShapes, sizeof(GpuPush), SF_TILE, "raster with shapes"),
        skin_pass(ctx),
        splat_deform_pass(ctx) {
    const gpu::DeviceInfo& d = ctx.info();
    if (d.subgroup_size < 8 || d.subgroup_size > 128 || SF_SORT_WG % d.subgroup_size != 0)
      throw Error("Vulkan device " + d.name + ": subgroup size " + std::to_string(d.subgroup_size) + " unsupported (need 8..128)");
    if (ctx.maxSharedMemory() < SF_SEG_BLOCK * 8)
      throw Error("Vulkan device " + d.name + ": less than " + std::to_string(SF_SEG_BLOCK * 8 / 1024) + " KiB of shared memory");
    sort_subgroups = SF_SORT_WG / d.subgroup_size;
    const uint32_t small_sort_wg = std::min<uint32_t>(1024, SF_SMALL_SORT_SUB_BLOCKS * d.subgroup_size);
    if (ctx.maxWorkgroupInvocations() >= small_sort_wg && ctx.maxSharedMemory() >= SF_SMALL_SORT_SUB_BLOCKS * SF_RADIX * 4) {
      small_sort = std::make_unique<gpu::ComputePipeline>(ctx, kRadixSmall, sizeof(GpuPush), small_sort_wg, "radix_small", true);
      small_sort_subgroups = small_sort_wg / d.subgroup_size;
    }
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = kTimestamps * kMaxBackToBack;
    SF_VK_CHECK(vkCreateQueryPool(ctx.device(), &qi, nullptr, &queries));
    ctx.setName(VK_OBJECT_TYPE_QUERY_POOL, reinterpret_cast<uint64_t>(queries), "pass timestamps");
    counters = ctx.createBuffer(SF_COUNTER_WORDS * 4, false, "counters");
    frame = ctx.createBuffer(kFrameStride * kMaxBackToBack, true, "frame parameters");
  }

  ~Impl() { vkDestroyQueryPool(ctx.device(), queries, nullptr); }

  // After an allocation failed part way (a frame past the memory budget): every per-scene buffer released
  // and every capacity forgotten, so the next frame builds them again from nothing (a viewer or a notebook
  // goes on with a smaller scene) and no half-grown buffer is ever used.
  void dropResources() {
    residents.clear();
    slot_sink.clear(), sh_sink.clear();
    slot_capacity = sh_capacity = 0, slots = 0;
    for (gpu::Buffer* b : {&positions, &covariances, &opacities, &sh, &means, &conic_opacity, &color_depth, &rects, &touched, &shapes, &hist,
                           &hist_sums, &tile_ranges, &tile_bins, &bin_sums, &chunks, &image, &depth_out, &train_final_t, &train_last, &raster_carry})
      b->reset();
    for (gpu::Buffer& k : keys) k.reset();
    key_capacity = 0, chunk_capacity = 0, tiles = 0, width = height = 0;
    static_key.clear(), static_at.clear(), deform_bounds.clear();
    static_inputs.reset();
    mesh_vertices.clear();
    mesh_color_target.reset(), mesh_depth_target.reset(), mesh_zbuffer.reset();
    for (gpu::Buffer* b : {&mesh_color, &mesh_depth, &mesh_data, &mesh_device}) b->reset();
    mesh_bytes = 0;
  }

  // Packs and uploads the frame's static inputs when their set changed (see static_key), measuring then the
  // largest index each static array holds; every frame checks this frame's inputs against those bounds (the
  // vertex count, the palette, the morph weights change per frame), so nothing out of range reaches the GPU.
  void uploadStatic(std::span<const RenderObject> objects, std::span<const RenderMesh> meshes) {
    std::vector<StaticKey> key;
    forEachStatic(objects, meshes, [&](const StaticKey& k, auto&&) { key.push_back(k); });
    if (key != static_key || !static_inputs.size) {
      static_key.clear();  // (until the pack below succeeds)
      deform_bounds.clear();
      for (size_t i = 0; i < meshes.size(); ++i)
        if (!meshes[i].skin.empty())
          if (std::string why = meshes[i].validate(); !why.empty()) throw Error("mesh " + std::to_string(i) + ": " + why);
      for (size_t i = 0; i < objects.size(); ++i) {
        const SplatDeformSource* ds = objects[i].deform;
        if (!ds) continue;
        const std::string where = "render object " + std::to_string(i) + ": deform source: ";
        if (!ds->skin.empty())
          if (std::string why = ds->skin.validate(); !why.empty()) throw Error(where + why);
        DeformBounds b;
        for (uint32_t v : ds->indices) b.vertex = std::max<int64_t>(b.vertex, v);
        b.skin_joint = maxJoint(ds->skin);
        const size_t triangles = ds->indices.size() / 3;
        for (size_t r = 0; r < ds->bindings.size() / 68; ++r) {
          uint32_t w[4];  // kind, triangle, joints 0|1, joints 2|3 (GpuSplatBinding)
          float weights[4];
          std::memcpy(w, ds->bindings.data() + r * 68, 16);
          std::memcpy(weights, ds->bindings.data() + r * 68 + 16, 16);
          if (w[0] == 0 && w[1] >= triangles)
            throw Error(where + "binding " + std::to_string(r) + " names triangle " + std::to_string(w[1]) + " of " + std::to_string(triangles));
          if (w[0] == 1) {
            const uint32_t joints[4] = {w[2] & 0xffffu, w[2] >> 16, w[3] & 0xffffu, w[3] >> 16};
            for (int k = 0; k < 4; ++k)
              if (weights[k] != 0) b.binding_joint = std::max<int64_t>(b.binding_joint, joints[k]);
          }
        }
        deform_bounds.push_back(b);
      }
      std::vector<uint8_t> all;
      static_at.clear();
      forEachStatic(objects, meshes, [&](const StaticKey& k, auto&& fill) {
        const size_t bytes = std::get<2>(k);
        if (!static_at.emplace(k, (all.size() + 15) & ~size_t{15}).second) return;
        const size_t at = pack(all, nullptr, bytes);
        if (bytes) fill(all.data() + at);
      });
      all.resize(std::max<size_t>(all.size(), 16));
      if (static_inputs.size < all.size()) static_inputs = ctx.createBuffer(all.size() + all.size() / 4, false, "static deform inputs");
      upload(static_inputs, all.data(), all.size());
      static_key = std::move(key);
    }
    // This frame's inputs against the bounds of the static arrays they index.
    size_t d = 0;
    for (size_t i = 0; i < objects.size(); ++i) {
      const SplatDeformSource* ds = objects[i].deform;
      if (!ds) continue;
      const DeformBounds& b = deform_bounds[d++];
      const std::string where = "render object " + std::to_string(i) + ": deform source: ";
      const size_t n = ds->skin.empty() ? ds->vertices.size() : ds->skin.vertexCount();
      if (b.vertex >= static_cast<int64_t>(n))
        throw Error(where + "triangle index " + std::to_string(b.vertex) + " outside " + std::to_string(n) + " vertices");
      if (b.binding_joint >= static_cast<int64_t>(ds->palette.size()))
        throw Error(where + "a binding uses joint " + std::to_string(b.binding_joint) + " of a " + std::to_string(ds->palette.size()) + "-joint palette");
      if (ds->skin.empty()) continue;
      if (ds->skin.morph_weights.size() != ds->skin.targetCount())
        throw Error(where + std::to_string(ds->skin.morph_weights.size()) + " morph weights for " + std::to_string(ds->skin.targetCount()) + " targets");
      if (b.skin_joint >= static_cast<int64_t>(ds->skin.palette.size()))
        throw Error(where + "a vertex uses joint " + std::to_string(b.skin_joint) + " of a " + std::to_string(ds->skin.palette.size()) + "-joint palette");
    }
  }

  // The largest joint index a skin source's vertices use with a positive weight (-1 without any).
  static int64_t maxJoint(const SkinSource& s) {
    int64_t m = -1;
    auto scan = [&](std::span<const std::array<uint16_t, 4>> j, std::span<const std::array<float, 4>> w) {
      for (size_t v = 0; v < j.size(); ++v)
        for (size_t k = 0; k < 4; ++k)
          if (w[v][k] > 0) m = std::max<int64_t>(m, j[v][k]);
    };
    scan(s.joints0, s.weights0);
    scan(s.joints1, s.weights1);
    return m;
  }

  VkDeviceAddress staticAddress(const void* id, size_t bytes, const void* id2 = nullptr) const {
    if (!bytes) return static_inputs.address;  // never read
    return static_inputs.address + static_at.at({id, id2, bytes});
  }

  // The skin pass's push constants for a source, static addresses filled in; the frame's palette, morph
  // weights and outputs are patched by the caller (patchSkinFrame).
  SkinPush skinPush(const SkinSource& s, bool normals) const {
    SkinPush p{};
    const size_t influence_bytes = s.vertexCount() * SF_SKIN_INFLUENCES * 4;
    normals = normals && !s.normals.empty();
    p.positions = staticAddress(s.positions.data(), s.positions.size_bytes());
    p.normals = normals ? staticAddress(s.normals.data(), s.normals.size_bytes()) : static_inputs.address;
    p.joints = s.skinned() ? staticAddress(s.joints0.data(), influence_bytes, s.joints1.data()) : static_inputs.address;
    p.weights = s.skinned() ? staticAddress(s.weights0.data(), influence_bytes, s.weights1.data()) : static_inputs.address;
    p.morph_positions = staticAddress(s.morph_positions.data(), s.morph_positions.size_bytes());
    p.morph_normals = staticAddress(s.morph_normals.data(), s.morph_normals.size_bytes());
    p.vertex_count = static_cast<uint32_t>(s.vertexCount());
    p.target_count = static_cast<uint32_t>(s.morph_weights.size());
    p.method = s.dual_quaternion ? SF_SKIN_METHOD_DQS : SF_SKIN_METHOD_LBS;
    p.flags = (normals ? SF_SKIN_FLAG_NORMALS : 0u) | (s.skinned() ? SF_SKIN_FLAG_SKINNED : 0u) |
              (normals && !s.morph_normals.empty() ? SF_SKIN_FLAG_MORPH_NORMALS : 0u) | (s.joints1.empty() ? 0u : SF_SKIN_FLAG_EIGHT);
    return p;
  }

  // Appends a source's per-frame inputs to `packed`: its palette (LBS rows or dual quaternions; returns the
  // offset) and its morph weights (offset in *weights_at).
  static size_t packSkinFrame(const SkinSource& s, std::vector<uint8_t>& packed, size_t* weights_at) {
    std::vector<float> rows;
    if (s.dual_quaternion) packSkinDualQuats(s.palette, rows);
    else packSkinPalette(s.palette, rows);
    *weights_at = pack(packed, s.morph_weights.data(), s.morph_weights.size_bytes());
    return pack(packed, rows.data(), rows.size() * 4);
  }

  static void patchSkinFrame(SkinPush& p, VkDeviceAddress palette, VkDeviceAddress weights) {
    p.palette = p.dq_palette = palette;
    p.morph_weights = weights;
  }

  // Host-visible staging for uploads and readbacks, grown as needed.
  gpu::Buffer& staging(VkDeviceSize bytes) {
    if (readback.size < bytes) readback = ctx.createBuffer(std::max<VkDeviceSize>(bytes, 1 << 20), true, "staging");
    return readback;
  }

  // Uploads and downloads go through the staging buffer in pieces of at most kStagingChunk bytes, so that
  // a large scene does not hold a host-visible copy of its largest array for the renderer's life.
  static constexpr size_t kStagingChunk = size_t{64} << 20;

  void upload(gpu::Buffer& dst, const void* data, size_t bytes, size_t offset = 0) {
    for (size_t at = 0; at < bytes; at += kStagingChunk) {
      const size_t n = std::min(kStagingChunk, bytes - at);
      gpu::Buffer& st = staging(n);
      std::memcpy(st.mapped, static_cast<const uint8_t*>(data) + at, n);
      VkCommandBuffer cmd = ctx.begin();
      VkBufferCopy region{0, offset + at, n};
      vkCmdCopyBuffer(cmd, st.buffer, dst.buffer, 1, &region);
      ctx.submit(cmd, "uploading the scene's data");
    }
  }

  std::vector<uint8_t> download(const gpu::Buffer& src, size_t bytes) {
    std::vector<uint8_t> out(bytes);
    for (size_t at = 0; at < bytes; at += kStagingChunk) {
      const size_t n = std::min(kStagingChunk, bytes - at);
      gpu::Buffer& st = staging(n);
      VkCommandBuffer cmd = ctx.begin();
      VkBufferCopy region{at, 0, n};
      vkCmdCopyBuffer(cmd, src.buffer, st.buffer, 1, &region);
      ctx.submit(cmd, "reading a buffer back");
      std::memcpy(out.data() + at, st.mapped, n);
    }
    return out;
  }

  // Places this frame's objects in the sinks: an object seen last frame (same cloud, size and SH stride, matched
  // in order) keeps its ranges; objects gone free theirs; new ones get ranges. Uploads the rest values of new
  // objects, dynamic ones, and ones overwritten last frame (overrides, deform, GPU source) but not in this
  // one. Returns the slots uploaded.
  uint64_t placeObjects(std::span<const RenderObject> objects) {
    std::vector<Resident> placed(objects.size());
    std::vector<bool> kept(residents.size(), false);
    std::vector<bool> upload_rest(objects.size(), false);
    for (size_t o = 0; o < objects.size(); ++o) {
      const GaussianCloud& c = *objects[o].cloud;
      Resident& r = placed[o];
      r.cloud = &c, r.size = c.size(), r.sh_floats = c.sh.size();
      const RenderObject& ro = objects[o];
      r.overwritten = (!ro.positions.empty() || ro.deform || ro.gpu_source ? kOverwritesShape : 0u) | (ro.gpu_source ? kOverwritesLook : 0u);
      for (size_t k = 0; k < residents.size(); ++k)
        if (!kept[k] && residents[k].cloud == r.cloud && residents[k].size == r.size && residents[k].sh_floats == r.sh_floats) {
          kept[k] = true;
          r.slots = residents[k].slots, r.sh = residents[k].sh;
          upload_rest[o] = objects[o].dynamic || (residents[k].overwritten & ~r.overwritten) != 0;  // rest values back
          break;
        }
    }
    for (size_t k = 0; k < residents.size(); ++k)
      if (!kept[k]) slot_sink.free(residents[k].slots), sh_sink.free(residents[k].sh);
    try {
      for (size_t o = 0; o < objects.size(); ++o)
        if (placed[o].slots.count == 0 && placed[o].size > 0) {
          placed[o].slots = slot_sink.allocate(placed[o].size);
          placed[o].sh = sh_sink.allocate(placed[o].sh_floats);
          upload_rest[o] = true;
        }
    } catch (...) {  // too many splats: start the next frame from empty sinks (every object uploaded again)
      slot_sink.clear(), sh_sink.clear();
      residents.clear();
      throw;
    }
    residents = std::move(placed);
    slots = static_cast<uint32_t>(slot_sink.size());
    if (!means.size || slot_sink.size() > slot_capacity || sh_sink.size() > sh_capacity) {
      // Grow: new arrays, the old contents copied over on the GPU (kept objects are not uploaded again).
      slot_capacity = std::max<uint64_t>(slot_sink.size(), slot_capacity + slot_capacity / 2);
      sh_capacity = std::max<uint64_t>(sh_sink.size(), sh_capacity + sh_capacity / 2);
      const uint64_t n = std::max<uint64_t>(slot_capacity, 1);
      gpu::Buffer old[4] = {std::move(positions), std::move(covariances), std::move(opacities), std::move(sh)};
      positions = ctx.createBuffer(n * 12, false, "positions");
      covariances = ctx.createBuffer(n * 24, false, "covariances");
      opacities = ctx.createBuffer(n * 4, false, "opacities");
      sh = ctx.createBuffer(std::max<uint64_t>(sh_capacity, 1) * 4, false, "sh");
      if (old[0].size) {
        VkCommandBuffer cmd = ctx.begin();
        gpu::Buffer* grown[4] = {&positions, &covariances, &opacities, &sh};
        for (int k = 0; k < 4; ++k) {
          VkBufferCopy region{0, 0, old[k].size};
          vkCmdCopyBuffer(cmd, old[k].buffer, grown[k]->buffer, 1, &region);
        }
        ctx.submit(cmd, "growing the splat buffers");
      }
      means = ctx.createBuffer(n * 8, false, "means");
      conic_opacity = ctx.createBuffer(n * 16, false, "conic_opacity");
      color_depth = ctx.createBuffer(n * 16, false, "color_depth");
      rects = ctx.createBuffer(n * 8, false, "rects");
      touched = ctx.createBuffer(n * 4, false, "touched");
      shapes = ctx.createBuffer(n * 4, false, "shape words");
    }
    uint64_t uploaded = 0;
    for (size_t o = 0; o < objects.size(); ++o) {
      if (!upload_rest[o] || residents[o].size == 0) continue;
      const GaussianCloud& c = *objects[o].cloud;
      const uint64_t first = residents[o].slots.first;
      std::vector<Cov6> cov(c.size());
      for (size_t i = 0; i < c.size(); ++i) cov[i] = covarianceFromScaleRotation(c.scales[i], c.rotations[i]);
      upload(positions, c.positions.data(), c.size() * 12, first * 12);
      upload(covariances, cov.data(), c.size() * 24, first * 24);
      upload(opacities, c.opacities.data(), c.size() * 4, first * 4);
      upload(sh, c.sh.data(), c.sh.size() * 4, residents[o].sh.first * 4);
      uploaded += c.size();
    }
    return uploaded;
  }

  // The frame's pair buffers (keys_lo, values and their alternates) for `capacity` pairs; with `radix`, also
  // what only the radix sort of sortPairs uses (keys_hi and its alternate, the histograms). Every buffer is
  // made before any is replaced, and the capacity recorded last, so a failed allocation changes nothing.
  void ensureKeys(uint64_t capacity, bool radix = false) {
    const bool have_radix = keys[1].size != 0;
    if (capacity <= key_capacity && keys[0].size && (!radix || have_radix)) return;
    capacity = std::max<uint64_t>({capacity, key_capacity, 1024});
    if (capacity > (1ull << 31)) throw Error("frame needs more than 2^31 tile keys");
    const char* names[6] = {"keys_lo", "keys_hi", "values", "keys_lo_alt", "keys_hi_alt", "values_alt"};
    const bool with_radix = radix || have_radix;
    gpu::Buffer made[6], made_hist, made_sums;
    for (int k = 0; k < 6; ++k)
      if (with_radix || (k != 1 && k != 4)) made[k] = ctx.createBuffer(capacity * 4, false, names[k]);
    if (with_radix) {
      // sort_setup.comp's blocking: at most SF_SORT_TARGET_SUB_BLOCKS sub-blocks while it shortens them, and
      // blocks of SF_SORT_BLOCK keys beyond.
      const uint32_t blocks = std::max<uint32_t>(ceilDiv(capacity, SF_SORT_BLOCK), SF_SORT_TARGET_SUB_BLOCKS / sort_subgroups);
      const uint64_t hist_entries = static_cast<uint64_t>(blocks) * sort_subgroups * SF_RADIX;
      made_hist = ctx.createBuffer(hist_entries * 4, false, "radix histogram");
      made_sums = ctx.createBuffer((ceilDiv(hist_entries, SF_SCAN_BLOCK) + 1) * 4, false, "histogram block sums");
    }
    for (int k = 0; k < 6; ++k) keys[k] = std::move(made[k]);
    hist = std::move(made_hist), hist_sums = std::move(made_sums);
    key_capacity = static_cast<uint32_t>(capacity);
  }

  void ensureImage(uint32_t w, uint32_t h, uint32_t tile_count, bool want_depth) {
    if (w != width || h != height || !image.size) {
      image = ctx.createBuffer(static_cast<VkDeviceSize>(w) * h * 16, false, "image");
      depth_out = {};
      train_final_t = {};
      train_last = {};
      raster_carry = {};
      width = w, height = h;
    }
    if (want_depth && !depth_out.size) depth_out = ctx.createBuffer(static_cast<VkDeviceSize>(w) * h * 8, false, "depth plane");
    if (tile_count != tiles || !tile_ranges.size) {
      tile_ranges = ctx.createBuffer(static_cast<VkDeviceSize>(tile_count) * 8, false, "tile ranges");
      tile_bins = ctx.createBuffer(static_cast<VkDeviceSize>(tile_count) * 4, false, "tile bins");
      bin_sums = ctx.createBuffer((ceilDiv(tile_count, SF_SCAN_BLOCK) + 1) * 4, false, "tile bin block sums");
      tiles = tile_count;
    }
  }

  // The sort chunk table for the current tiles and key capacity: at most one partial chunk per tile beyond
  // the whole ones of the capacity (small lists from the front, the chunks of longer ones from the back).
  void ensureChunks() {
    const uint64_t need = static_cast<uint64_t>(tiles) + key_capacity / SF_SEG_BLOCK + 1;
    if (need <= chunk_capacity && chunks.size) return;
    chunks = ctx.createBuffer(need * 8, false, "sort chunks");
    chunk_capacity = need;
  }

  void ensureMeshTargets(uint32_t w, uint32_t h) {
    if (!mesh_pipeline) {
      VkFormatProperties fp;
      vkGetPhysicalDeviceFormatProperties(ctx.physicalDevice(), kMeshDepthFormat, &fp);
      if (!(fp.optimalTilingFeatures & VK_FORMAT_FEATURE_DEPTH_STENCIL_ATTACHMENT_BIT))
        throw Error("Vulkan device " + ctx.info().name + " cannot render to a D32_SFLOAT depth buffer; meshes cannot be drawn on it");
      const VkFormat colors[2] = {kMeshColorFormat, kMeshDepthValueFormat};
      mesh_pipeline = std::make_unique<gpu::GraphicsPipeline>(ctx, kMeshVert, kMeshFrag, static_cast<uint32_t>(sizeof(GpuMeshPush)), colors,
                                                              kMeshDepthFormat, VK_COMPARE_OP_GREATER, "mesh");
    }
    if (mesh_color_target.width == w && mesh_color_target.height == h) return;
    const VkImageUsageFlags color_usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
    mesh_color_target = ctx.createImage(w, h, kMeshColorFormat, color_usage, VK_IMAGE_ASPECT_COLOR_BIT, "mesh colour target");
    mesh_depth_target = ctx.createImage(w, h, kMeshDepthValueFormat, color_usage, VK_IMAGE_ASPECT_COLOR_BIT, "mesh view-depth target");
    mesh_zbuffer = ctx.createImage(w, h, kMeshDepthFormat, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, VK_IMAGE_ASPECT_DEPTH_BIT,
                                   "mesh depth buffer");
    mesh_color = ctx.createBuffer(static_cast<VkDeviceSize>(w) * h * 16, false, "mesh colour");
    mesh_depth = ctx.createBuffer(static_cast<VkDeviceSize>(w) * h * 4, false, "mesh depth");
  }

  // Packs the meshes' vertex data, textures and draw records into mesh_data; returns the draws'
  // triangle counts (the draw records sit at the returned offset).
  std::vector<uint32_t> uploadMeshes(std::span<const RenderMesh> meshes, const Camera& cam, size_t* draws_offset) {
    std::vector<uint8_t> bytes;
    std::vector<GpuMeshDraw> draws(meshes.size());
    std::vector<size_t> offs(meshes.size() * 7, 0);
    std::vector<uint32_t> triangles(meshes.size());
    std::vector<const MeshTexture*> textures;
    std::vector<size_t> texture_offsets;
    struct MeshSkin {
      size_t mesh;
      SkinPush push;
      size_t palette, weights;  // offsets of the frame's palette and morph weights
    };
    std::vector<MeshSkin> skins;
    for (size_t i = 0; i < meshes.size(); ++i) {
      const RenderMesh& m = meshes[i];
      if (std::string why = m.validate(); !why.empty()) throw Error("mesh " + std::to_string(i) + ": " + why);
      if (m.triangleCount() > UINT32_MAX / 3) throw Error("mesh " + std::to_string(i) + ": too many triangles");
      triangles[i] = m.opacity > 0 ? static_cast<uint32_t>(m.triangleCount()) : 0u;  // opacity 0: nothing drawn
      std::vector<uint32_t> seq;
      std::span<const uint32_t> idx = m.indices;
      if (idx.empty()) {
        seq.resize(m.vertexCount());
        for (size_t k = 0; k < seq.size(); ++k) seq[k] = static_cast<uint32_t>(k);
        idx = seq;
      }
      size_t* o = &offs[i * 7];
      if (!m.skin.empty()) {  // vertices written by the frame's skin pass
        o[0] = pack(bytes, nullptr, m.skin.positions.size_bytes());
        o[1] = pack(bytes, nullptr, m.skin.normals.size_bytes());
        skins.push_back({i, skinPush(m.skin, true), 0, 0});
        skins.back().palette = packSkinFrame(m.skin, bytes, &skins.back().weights);
      } else {
        o[0] = pack(bytes, m.positions.data(), m.positions.size_bytes());
        o[1] = pack(bytes, m.normals.data(), m.normals.size_bytes());
      }
      o[2] = pack(bytes, m.uvs.data(), m.uvs.size_bytes());
      o[3] = pack(bytes, m.colors.data(), m.colors.size_bytes());
      o[4] = pack(bytes, idx.data(), idx.size_bytes());
      if (m.texture && !m.uvs.empty()) {
        auto it = std::find(textures.begin(), textures.end(), m.texture);
        if (it == textures.end()) {
          textures.push_back(m.texture);
          texture_offsets.push_back(pack(bytes, m.texture->rgba.data(), m.texture->rgba.size()));
          it = textures.end() - 1;
        }
        o[5] = texture_offsets[static_cast<size_t>(it - textures.begin())];
      }
      const std::vector<std::array<float, 2>> mask = projectMeshMask(m, cam);  // in pixels, as the CPU's
      o[6] = pack(bytes, mask.data(), mask.size() * sizeof(mask[0]));
      GpuMeshDraw& d = draws[i];
      d.mask_count = static_cast<uint32_t>(mask.size());
      d.opacity = m.opacity;
      d.mask_rim = m.mask_rim * static_cast<float>(cam.width);
      const Mat4 to_view = cam.world_to_camera * m.object_to_world;
      copyRows(d.object_to_view, to_view);
      copyRows(d.normal_to_view, Mat4::fromLinearTranslation(transpose(inverse(to_view.linear())), Vec3{}));
      for (size_t c = 0; c < 4; ++c) d.base_color[c] = m.base_color[c];
      d.flags = (m.hasNormals() ? SF_MESH_HAS_NORMALS : 0u) | (m.uvs.empty() ? 0u : SF_MESH_HAS_UVS) |
                (m.colors.empty() ? 0u : SF_MESH_HAS_COLORS) | (m.texture && !m.uvs.empty() ? SF_MESH_HAS_TEXTURE : 0u) | (m.shading == MeshShading::kUnlit ? SF_MESH_UNLIT : 0u) |
                (m.shading == MeshShading::kCamera ? SF_MESH_CAMERA_LIT : 0u);
      if (d.flags & SF_MESH_HAS_TEXTURE) {
        d.tex_width = static_cast<uint32_t>(m.texture->width), d.tex_height = static_cast<uint32_t>(m.texture->height);
        d.wrap_s = m.texture->wrap_s, d.wrap_t = m.texture->wrap_t;
      }
    }
    *draws_offset = pack(bytes, draws.data(), draws.size() * sizeof(GpuMeshDraw));
    if (mesh_data.size < bytes.size()) {
      const VkDeviceSize size = std::max<VkDeviceSize>(bytes.size() + bytes.size() / 2, 1 << 16);
      mesh_data = ctx.createBuffer(size, true, "mesh data staging");
      mesh_device = ctx.createBuffer(size, false, "mesh data");
    }
    mesh_bytes = bytes.size();
    // Addresses are known only now: patch them into the packed draw records (they point into the
    // device-local copy the frame makes first).
    auto* packed = reinterpret_cast<GpuMeshDraw*>(bytes.data() + *draws_offset);
    for (size_t i = 0; i < meshes.size(); ++i) {
      GpuMeshDraw d = draws[i];
      const size_t* o = &offs[i * 7];
      const VkDeviceAddress base = mesh_device.address;
      d.positions = base + o[0], d.normals = base + o[1], d.uvs = base + o[2];
      d.colors = base + o[3], d.indices = base + o[4], d.texels = base + o[5], d.mask = base + o[6];
      std::memcpy(&packed[i], &d, sizeof(d));
    }
    mesh_vertices.clear();
    for (size_t i = 0; i < meshes.size(); ++i)
      mesh_vertices.push_back({offs[i * 7], meshes[i].vertexCount(), offs[i * 7 + 1], meshes[i].hasNormals() ? meshes[i].vertexCount() : 0});
    mesh_skins.clear();
    for (MeshSkin& k : skins) {
      patchSkinFrame(k.push, mesh_device.address + k.palette, mesh_device.address + k.weights);
      k.push.out_positions = mesh_device.address + offs[k.mesh * 7];
      k.push.out_normals = mesh_device.address + offs[k.mesh * 7 + 1];
      mesh_skins.push_back(k.push);
    }
    std::memcpy(mesh_data.mapped, bytes.data(), bytes.size());
    return triangles;
  }

  // Draws the meshes into the targets and copies colour and view depth to the buffers the raster reads.
  void recordMeshes(VkCommandBuffer cmd, std::span<const uint32_t> triangles, size_t draws_offset, const Camera& cam) {
    const VkPipelineStageFlags color_stage = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    const VkPipelineStageFlags depth_stage = VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT | VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT;
    // (The mesh data was copied to device-local memory and skinned by earlier passes of the frame graph.)
    // The transitions wait for the targets' last use by an earlier frame of the same submission (back-to-back
    // frames): the copies out of the colour targets, the depth tests on the z-buffer.
    for (gpu::Image* img : {&mesh_color_target, &mesh_depth_target})
      gpu::imageBarrier(cmd, *img, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                        VK_PIPELINE_STAGE_TRANSFER_BIT, 0, color_stage, VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT);
    gpu::imageBarrier(cmd, mesh_zbuffer, VK_IMAGE_ASPECT_DEPTH_BIT, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
                      depth_stage, 0, depth_stage, VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT);
    VkRenderingAttachmentInfo color[2] = {{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO}, {VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO}};
    color[0].imageView = mesh_color_target.view;
    color[1].imageView = mesh_depth_target.view;
    for (auto& a : color) {
      a.imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
      a.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
      a.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    }
    color[1].clearValue.color.float32[0] = static_cast<float>(SF_NO_MESH_DEPTH);
    VkRenderingAttachmentInfo depth{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
    depth.imageView = mesh_zbuffer.view;
    depth.imageLayout = VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
    depth.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
    depth.storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    depth.clearValue.depthStencil.depth = 0.0f;  // reversed depth: nearer is greater
    VkRenderingInfo ri{VK_STRUCTURE_TYPE_RENDERING_INFO};
    ri.renderArea = {{0, 0}, {width, height}};
    ri.layerCount = 1;
    ri.colorAttachmentCount = 2;
    ri.pColorAttachments = color;
    ri.pDepthAttachment = &depth;
    vkCmdBeginRendering(cmd, &ri);
    VkViewport vp{0, 0, static_cast<float>(width), static_cast<float>(height), 0, 1};
    VkRect2D sc{{0, 0}, {width, height}};
    vkCmdSetViewport(cmd, 0, 1, &vp);
    vkCmdSetScissor(cmd, 0, 1, &sc);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, mesh_pipeline->pipeline());
    for (size_t i = 0; i < triangles.size(); ++i) {
      if (!triangles[i]) continue;
      GpuMeshPush p{};
      p.draws = mesh_device.address + draws_offset;
      p.draw_index = static_cast<uint32_t>(i);
      p.fx = cam.fx, p.fy = cam.fy, p.cx = cam.cx, p.cy = cam.cy;
      p.width = static_cast<float>(width), p.height = static_cast<float>(height);
      vkCmdPushConstants(cmd, mesh_pipeline->layout(), VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof(p), &p);
      vkCmdDraw(cmd, triangles[i] * 3, 1, 0, 0);
    }
    vkCmdEndRendering(cmd);
    VkBufferImageCopy region{};
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {width, height, 1};
    for (auto [img, buf] : {std::pair{&mesh_color_target, &mesh_color}, std::pair{&mesh_depth_target, &mesh_depth}}) {
      gpu::imageBarrier(cmd, *img, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                        color_stage, VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
      vkCmdCopyImageToBuffer(cmd, img->image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, buf->buffer, 1, &region);
    }
    gpu::computeBarrier(cmd);
  }

  void writeFrame(const Camera* cam, Vec3 bg, uint32_t tiles_x, uint32_t tiles_y, bool depth = false, uint32_t run = 0) {
    GpuFrame f{};
    if (cam) {
      copyRows(f.world_to_camera, cam->world_to_camera);
      f.fx = cam->fx, f.fy = cam->fy, f.cx = cam->cx, f.cy = cam->cy;
      f.width = static_cast<uint32_t>(cam->width), f.height = static_cast<uint32_t>(cam->height);
    }
    f.background[0] = bg.x, f.background[1] = bg.y, f.background[2] = bg.z;
    f.tiles_x = tiles_x, f.tiles_y = tiles_y;
    f.slot_count = slots;
    f.key_capacity = key_capacity;
    f.positions = positions.address, f.covariances = covariances.address, f.opacities = opacities.address, f.sh = sh.address;
    f.means = means.address, f.conic_opacity = conic_opacity.address, f.color_depth = color_depth.address;
    f.rects = rects.address, f.touched = touched.address, f.tile_bins = tile_bins.address, f.chunks = chunks.address;
    f.chunk_capacity = static_cast<uint32_t>(chunk_capacity);
    f.keys_lo = keys[0].address, f.keys_hi = keys[1].address, f.values = keys[2].address;
    f.keys_lo_alt = keys[3].address, f.keys_hi_alt = keys[4].address, f.values_alt = keys[5].address;
    f.tile_ranges = tile_ranges.address, f.image = image.address, f.counters = counters.address;
    f.has_mesh = has_mesh ? 1u : 0u;
    f.blend_linear = blend_linear ? 1u : 0u;
    f.mesh_color = mesh_color.address, f.mesh_depth = mesh_depth.address;
    f.write_depth = depth ? 1u : 0u;
    f.depth_out = depth ? depth_out.address : 0;
    f.write_train = write_train ? 1u : 0u;
    f.train_final_t = write_train ? train_final_t.address : 0;
    f.train_last = write_train ? train_last.address : 0;
    f.shapes = shapes.address;
    f.raster_slice = raster_slice;
    f.raster_carry = raster_carry.address;
    std::memcpy(static_cast<uint8_t*>(frame.mapped) + run * kFrameStride, &f, sizeof(f));
  }

  // The frame being recorded (a submission's frames each have their GpuFrame and object records).
  uint32_t run_index = 0;
  size_t object_count = 0;
  VkDeviceAddress frameAddress() const { return frame.address + run_index * kFrameStride; }
  GpuPush push() const {
    GpuPush p{};
    p.frame = frameAddress();
    p.objects = objects_buf.address + run_index * object_count * sizeof(GpuObject);
    p.pad1 = sort_subgroups;
    return p;
  }

  void dispatch(VkCommandBuffer cmd, const gpu::ComputePipeline& pl, const GpuPush& p, uint32_t x, uint32_t y = 1) {
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl.pipeline());
    vkCmdPushConstants(cmd, pl.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(GpuPush), &p);
    if (x && y) vkCmdDispatch(cmd, x, y, 1);
  }

  void dispatchIndirect(VkCommandBuffer cmd, const gpu::ComputePipeline& pl, const GpuPush& p, uint32_t counter_word) {
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl.pipeline());
    vkCmdPushConstants(cmd, pl.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(GpuPush), &p);
    vkCmdDispatchIndirect(cmd, counters.buffer, counter_word * 4u);
  }

  // Exclusive scan in place of `data` (count read from `count_addr`), with `sums` as block sums; the
  // total lands at sums[blocks]. `blocks_word` >= 0 takes the block count from an indirect argument.
  // Barriers between its own dispatches only: the caller (the frame graph) orders it with the rest.
  void recordScan(VkCommandBuffer cmd, VkDeviceAddress data, VkDeviceAddress count_addr, VkDeviceAddress sums, uint32_t blocks,
                  int indirect_word) {
    GpuPush p = push();
    p.scan_data = data, p.scan_count = count_addr, p.scan_sums = sums;
    if (indirect_word >= 0) dispatchIndirect(cmd, scan_reduce, p, static_cast<uint32_t>(indirect_word));
    else dispatch(cmd, scan_reduce, p, blocks);
    gpu::computeBarrier(cmd);
    dispatch(cmd, scan_blocks, p, 1);
    gpu::computeBarrier(cmd);
    if (indirect_word >= 0) dispatchIndirect(cmd, scan_apply, p, static_cast<uint32_t>(indirect_word));
    else dispatch(cmd, scan_apply, p, blocks);
  }

  // Sort descriptor (counters[desc_word...]) for `count_addr`'s element count.
  void recordSortSetup(VkCommandBuffer cmd, VkDeviceAddress count_addr, uint32_t desc_word, uint32_t flags) {
    GpuPush p = push();
    p.scan_data = count_addr;
    p.scan_sums = counters.address + desc_word * 4u;
    p.pad0 = flags;
    dispatch(cmd, sort_setup, p, 1);
  }

  // LSD radix sort of keys[0..5] as described by the descriptor at counters[desc_word] (the caller puts a
  // barrier after the setup that wrote it): `lo_passes` 8-bit passes over the low word, then `hi_passes`
  // over the high word; `carry` (SF_FLAG_CARRY_*) moves the other word along. Returns the number of
  // passes; an odd number leaves the result in the alternates. `at_most`: what the host knows of the
  // count (UINT64_MAX: nothing); a sort of at most SF_SMALL_SORT_MAX keys runs in one workgroup.
  int recordSort(VkCommandBuffer cmd, uint32_t desc_word, int lo_passes, int hi_passes, uint32_t carry, uint64_t at_most = UINT64_MAX) {
    const VkDeviceAddress desc = counters.address + desc_word * 4u;
    const int passes = lo_passes + hi_passes;
    if (small_sort && at_most <= SF_SMALL_SORT_MAX) {
      GpuPush p = push();
      p.scan_count = desc;
      p.shift = static_cast<uint32_t>(lo_passes) | static_cast<uint32_t>(hi_passes) << 8;
      p.pad0 = carry;
      p.pad1 = small_sort_subgroups;
      dispatch(cmd, *small_sort, p, at_most > 0 ? 1u : 0u);
      return passes;
    }
    for (int pass = 0; pass < passes; ++pass) {
      if (pass > 0) gpu::computeBarrier(cmd);  // the previous pass's scatter
      GpuPush p = push();
      const bool hi = pass >= lo_passes;
      p.shift = static_cast<uint32_t>(8 * (hi ? pass - lo_passes : pass));
      p.pad0 = (pass % 2 ? SF_FLAG_SOURCE_ALT : 0u) | (hi ? SF_FLAG_KEY_HI : 0u) | carry;
      p.scan_data = hist.address;
      p.scan_count = desc;
      dispatchIndirect(cmd, histogram, p, desc_word + SF_SORT_DESC_DISPATCH_SORT);
      gpu::computeBarrier(cmd);
      recordScan(cmd, hist.address, desc + SF_SORT_DESC_HIST_COUNT * 4, hist_sums.address, 0,
                 static_cast<int>(desc_word + SF_SORT_DESC_DISPATCH_HSCAN));
      gpu::computeBarrier(cmd);
      dispatchIndirect(cmd, scatter, p, desc_word + SF_SORT_DESC_DISPATCH_SORT);
    }
    return passes;
  }

  uint32_t timestamp_base = 0;  // the first query of the frame being recorded (back-to-back frames)
  void timestamp(VkCommandBuffer cmd, uint32_t index) {
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, timestamp_base + index);
  }

  std::vector<double> readTimestamps(uint32_t count, uint32_t first = 0) {
    std::vector<uint64_t> ticks(count);
    SF_VK_CHECK(vkGetQueryPoolResults(ctx.device(), queries, first, count, count * 8, ticks.data(), 8,
                                      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    std::vector<double> ms(count, 0.0);
    for (uint32_t i = 1; i < count; ++i) ms[i] = static_cast<double>(ticks[i] - ticks[i - 1]) * ctx.timestampPeriodNs() * 1e-6;
    ms[0] = static_cast<double>(ticks[count - 1] - ticks[0]) * ctx.timestampPeriodNs() * 1e-6;
    return ms;
  }

  // The tiles of the frame just submitted that hold more than raster_slice pairs, which its raster left
  // (raster.comp): slice s walks entries [s K, (s + 1) K) of each of them, K = raster_slice, in a submission
  // of its own, so that no submission walks more than K entries of any list however deep the tile; the pixels'
  // state waits in the image and raster_carry between them. The last slice copies the finished image (and
  // depth plane) to the staging buffer over the unfinished one the frame's readback copied. The slices' GPU
  // time is added to the raster's and the frame's. A watchdog applies to each submission, so one slice per
  // submission bounds each by K entries per workgroup (2 x tiles x K entries in all), whatever the frame.
  void rasterSlices(VulkanFrameStats& st, uint32_t tiles_x, uint32_t tiles_y, const gpu::Buffer& st_buf, VkDeviceSize image_bytes,
                    VkDeviceSize depth_bytes) {
    const VkDeviceSize carry_bytes = static_cast<VkDeviceSize>(width) * height * 8;
    if (raster_carry.size < carry_bytes) raster_carry = ctx.createBuffer(carry_bytes, false, "raster slice carry");
    const uint64_t carry_address = raster_carry.address;  // the frame record was written before the buffer existed
    std::memcpy(static_cast<uint8_t*>(frame.mapped) + offsetof(GpuFrame, raster_carry), &carry_address, sizeof(carry_address));
    const uint32_t slices = static_cast<uint32_t>((st.longest_tile - 1) / raster_slice + 1);
    for (uint32_t s = 0; s < slices; ++s) {
      VkCommandBuffer cmd = ctx.begin();
      timestamp_base = kTimestamps;  // the queries after the frame's (a sliced frame is alone in its submission)
      vkCmdResetQueryPool(cmd, queries, timestamp_base, 2);
      timestamp(cmd, 0);
      // The previous submission's raster (and the frame's readback, which read the image this one writes).
      gpu::computeBarrier(cmd);
      GpuPush p = push();
      p.shift = s + 1;
      dispatch(cmd, has_shapes ? raster_shapes : raster, p, tiles_x, tiles_y * (SF_TILE / SF_RASTER_ROWS));
      if (s + 1 == slices) {
        gpu::computeBarrier(cmd);
        VkBufferCopy img_copy{0, 0, image_bytes}, depth_copy{0, image_bytes, depth_bytes};
        vkCmdCopyBuffer(cmd, image.buffer, st_buf.buffer, 1, &img_copy);
        if (depth_bytes) vkCmdCopyBuffer(cmd, depth_out.buffer, st_buf.buffer, 1, &depth_copy);
      }
      timestamp(cmd, 1);
      timestamp_base = 0;
      try {
        ctx.submit(cmd, "running the frame's raster slices");
      } catch (const gpu::DeviceLost& e) {
        throw gpu::DeviceLost(std::string(e.what()) + "; the frame's passes had run, and raster slice " + std::to_string(s + 1) + " of " +
                              std::to_string(slices) + " (tiles of more than " + std::to_string(raster_slice) + " pairs) was running");
      }
      const double ms = readTimestamps(2, kTimestamps)[0];
      st.times.raster += ms;
      st.times.total += ms;
    }
    st.raster_slices = static_cast<int>(slices);
    st.submissions = 1 + static_cast<int>(slices);
    last_slices = slices;
  }
};

VulkanPassTimes medianPassTimes(std::span<const VulkanPassTimes> runs) {
  VulkanPassTimes out;
  if (runs.empty()) return out;
  auto median = [&](double VulkanPassTimes::*field) {
    std::vector<double> v;
    for (const VulkanPassTimes& r : runs) v.push_back(r.*field);
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    out.*field = v[v.size() / 2];
  };
  for (double VulkanPassTimes::*f : {&VulkanPassTimes::mesh, &VulkanPassTimes::preprocess, &VulkanPassTimes::bin, &VulkanPassTimes::scan,
                                     &VulkanPassTimes::emit, &VulkanPassTimes::sort, &VulkanPassTimes::raster,
                                     &VulkanPassTimes::readback, &VulkanPassTimes::total})
    median(f);
  return out;
}

VulkanRenderer::VulkanRenderer(const gpu::ContextOptions& options) : impl_(std::make_unique<Impl>(options)) {}
VulkanRenderer::~VulkanRenderer() = default;
const gpu::DeviceInfo& VulkanRenderer::device() const { return impl_->ctx.info(); }
std::string VulkanRenderer::lastFrameGraph() const {
  const auto lock = impl_->ctx.lock();  // (a render on another thread replaces the graph)
  std::string graph = impl_->last_graph.describe();
  if (impl_->last_slices)
    graph += "then raster slices: " + std::to_string(impl_->last_slices) + " (tiles of more than " + std::to_string(impl_->raster_slice) +
             " pairs, which the frame's raster left), a submission each\n";
  return graph;
}

gpu::Context& VulkanRenderer::context() { return impl_->ctx; }

ImageRGBA VulkanRenderer::render(std::span<const RenderObject> objects, const Camera& cam, const RenderSettings& settings,
                                 VulkanFrameStats* stats, std::span<const RenderMesh> meshes) {
  const FrameView view{cam, settings.background};
  std::vector<VulkanFrameStats> st;
  ImageRGBA img = renderFrame(objects, {&view, 1}, settings, meshes, nullptr, &st);
  if (stats) *stats = st.back();
  return img;
}

std::vector<VulkanPassTimes> VulkanRenderer::renderBackToBack(std::span<const RenderObject> objects, const Camera& cam, const RenderSettings& settings,
                                                              int runs, VulkanFrameStats* stats, std::span<const RenderMesh> meshes, ImageRGBA* image) {
  if (runs < 1 || runs > static_cast<int>(kMaxBackToBack))
    throw Error("back-to-back frames: " + std::to_string(runs) + " runs asked for, one submission holds 1.." + std::to_string(kMaxBackToBack));
  const std::vector<FrameView> views(static_cast<size_t>(runs), FrameView{cam, settings.background});
  std::vector<VulkanFrameStats> st;
  ImageRGBA last = renderFrame(objects, views, settings, meshes, nullptr, &st);
  if (image) *image = std::move(last);
  if (stats) *stats = st.back();
  std::vector<VulkanPassTimes> times;
  for (const VulkanFrameStats& s : st) times.push_back(s.times);
  return times;
}

VulkanFrameStats VulkanRenderer::renderWithTail(std::span<const RenderObject> objects, const Camera& cam, const RenderSettings& settings,
                                                const FrameTail& tail) {
  const FrameView view{cam, settings.background};
  std::vector<VulkanFrameStats> st;
  renderFrame(objects, {&view, 1}, settings, {}, &tail, &st);
  return st.back();
}

std::vector<VulkanFrameStats> VulkanRenderer::renderBatchWithTail(std::span<const RenderObject> objects, std::span<const FrameView> views,
                                                                  const RenderSettings& settings, const FrameTail& tail) {
  std::vector<VulkanFrameStats> st;
  renderFrame(objects, views, settings, {}, &tail, &st);
  return st;
}

ImageRGBA VulkanRenderer::renderFrame(std::span<const RenderObject> objects, std::span<const FrameView> views, const RenderSettings& settings,
                                      std::span<const RenderMesh> meshes, const FrameTail* tail, std::vector<VulkanFrameStats>* run_stats) {
  // Every render entry point comes here: the context's lock, held from the uploads to the image read back from
  // the staging buffer, serialises frames of one renderer (and any other work on its context) across threads.
  const auto lock = impl_->ctx.lock();
  try {
    return renderFrameOnce(objects, views, settings, meshes, tail, run_stats);
  } catch (const gpu::MemoryBudgetError& e) {
    impl_->dropResources();
    size_t gaussians = 0;
    for (const RenderObject& o : objects) gaussians += o.cloud ? o.cloud->size() : 0;
    const Camera& cam = views.front().camera;
    throw Error("Vulkan renderer: a frame of " + std::to_string(gaussians) + " gaussians in " + std::to_string(objects.size()) + " objects at " +
                std::to_string(cam.width) + "x" + std::to_string(cam.height) + " does not fit the GPU memory budget: " + e.what());
  }
}

ImageRGBA VulkanRenderer::renderFrameOnce(std::span<const RenderObject> objects, std::span<const FrameView> views, const RenderSettings& settings,
                                          std::span<const RenderMesh> meshes, const FrameTail* tail, std::vector<VulkanFrameStats>* run_stats) {
  Impl& m = *impl_;
  if (views.empty() || views.size() > kMaxBackToBack)
    throw Error("Vulkan renderer: " + std::to_string(views.size()) + " frames in one submission (1.." + std::to_string(kMaxBackToBack) + ")");
  const Camera& cam = views.front().camera;
  const int runs = static_cast<int>(views.size());
  for (size_t r = 1; r < views.size(); ++r) {
    const Camera& c = views[r].camera;
    if (c.width != cam.width || c.height != cam.height)
      throw Error("Vulkan renderer: frame " + std::to_string(r) + " of the submission is " + std::to_string(c.width) + "x" + std::to_string(c.height) +
                  ", the first " + std::to_string(cam.width) + "x" + std::to_string(cam.height) + " (one image size per submission)");
    const bool same = c.fx == cam.fx && c.fy == cam.fy && c.cx == cam.cx && c.cy == cam.cy && std::memcmp(c.world_to_camera.m, cam.world_to_camera.m, sizeof(cam.world_to_camera.m)) == 0;
    if (!meshes.empty() && !same) throw Error("Vulkan renderer: frames with meshes in one submission share one camera");
  }
  for (size_t o = 0; o < objects.size(); ++o)
    if (std::string why = objects[o].validate(); !why.empty()) throw Error("render object " + std::to_string(o) + ": " + why);
  // The mesh pass shades lit, camera-lit and unlit meshes; the other modes (dataset views) are the CPU
  // rasterizer's only.
  for (size_t i = 0; i < meshes.size(); ++i)
    if (meshes[i].shading != MeshShading::kLit && meshes[i].shading != MeshShading::kUnlit && meshes[i].shading != MeshShading::kCamera)
      throw Error("mesh " + std::to_string(i) + ": shading '" + meshShadingName(meshes[i].shading) +
                  "' is drawn by the CPU rasterizer only (rasterizeMeshes); the Vulkan mesh pass draws lit, camera and unlit meshes");
  const uint64_t uploaded_slots = m.placeObjects(objects);
  const uint32_t tiles_x = ceilDiv(static_cast<uint32_t>(cam.width), kTileSize);
  const uint32_t tiles_y = ceilDiv(static_cast<uint32_t>(cam.height), kTileSize);
  m.ensureImage(static_cast<uint32_t>(cam.width), static_cast<uint32_t>(cam.height), tiles_x * tiles_y, settings.depth);
  m.write_train = tail != nullptr;
  // The backward passes of a tail (training) differentiate the display-space blend.
  if (tail && settings.blend_space == BlendSpace::kLinear)
    throw Error("Vulkan renderer: a frame with a tail (training) blends in display space, and the settings ask for linear");
  m.blend_linear = settings.blend_space == BlendSpace::kLinear;
  if (tail && !m.train_last.size) {
    const VkDeviceSize pixels = static_cast<VkDeviceSize>(cam.width) * static_cast<VkDeviceSize>(cam.height);
    m.train_final_t = m.ctx.createBuffer(pixels * 4, false, "train final transmittance");
    m.train_last = m.ctx.createBuffer(pixels * 4, false, "train last splat");
  }
  m.ensureKeys(std::max<uint64_t>(m.key_capacity, static_cast<uint64_t>(m.slots) * 4));
  // Raster slices need the frame alone in its submission and nothing after its raster but the readback: the
  // frames of a batch, and a tail's backward passes (which walk the lists themselves), take them whole.
  m.raster_slice = runs == 1 && !tail ? settings.raster_slice : 0;
  m.last_slices = 0;

  std::vector<GpuObject> gobj(objects.size());
  for (size_t o = 0; o < objects.size(); ++o) {
    GpuObject& g = gobj[o];
    copyRows(g.object_to_world, objects[o].object_to_world);
    const GaussianCloud& cloud = *objects[o].cloud;
    g.first_slot = static_cast<uint32_t>(m.residents[o].slots.first);
    g.count = static_cast<uint32_t>(cloud.size());
    g.sh_degree = static_cast<uint32_t>(drawnShDegree(cloud.sh_degree, settings));
    g.sh_base = static_cast<uint32_t>(m.residents[o].sh.first);
    g.sh_stride = static_cast<uint32_t>(cloud.shStride());
    g.flags = (settings.antialiased || cloud.antialiased ? SF_OBJECT_ANTIALIASED : 0u) |
              (cloud.color_space == ColorSpace::kLinear ? SF_OBJECT_LINEAR_COLOR : 0u);
    g.screen_filter = cloud.screen_filter;
  }
  m.has_shapes = std::any_of(objects.begin(), objects.end(), [](const RenderObject& o) {
    return !o.shapes.empty() || (o.gpu_source && o.gpu_source->writesShapes());
  });
  // The backward passes of a tail (training) differentiate the gaussian's alpha, not a shape's.
  if (m.has_shapes && tail) throw Error("Vulkan renderer: a frame with a tail (training) draws gaussians only, and an object gives shape words");
  // Objects with per-frame centres and covariances: staged now, copied into their slot ranges at the
  // start of the frame's command buffer.
  std::vector<VkBufferCopy> pos_copies, cov_copies, shape_copies;
  struct DeformDispatch {
    GpuDeformPush push;
    size_t vertices, palette;  // offsets in the per-frame deform data
    bool skin = false;         // skin the bound mesh on the GPU first
    SkinPush skin_push{};
    size_t skin_palette = 0, morph_weights = 0, skinned_offset = 0;
  };
  std::vector<DeformDispatch> deforms;
  size_t deform_bytes = 0, override_bytes = 0;  // staged: overrides first, then the deform inputs
  m.uploadStatic(objects, meshes);
  {
    size_t bytes = 0;
    for (const RenderObject& o : objects) bytes += o.positions.size() * (12 + 24) + o.shapes.size_bytes();
    // Per-frame deform inputs, packed 16-byte aligned.
    std::vector<uint8_t> packed;
    size_t skinned_bytes = 0;
    for (size_t oi = 0; oi < objects.size(); ++oi) {
      const RenderObject& o = objects[oi];
      const uint64_t first = m.residents[oi].slots.first;
      if (o.deform) {
        DeformDispatch dd{};
        const SplatDeformSource& ds = *o.deform;
        if (!ds.skin.empty()) {
          dd.skin = true;
          dd.skin_push = m.skinPush(ds.skin, false);
          dd.skin_palette = m.packSkinFrame(ds.skin, packed, &dd.morph_weights);
          dd.skinned_offset = skinned_bytes;
          skinned_bytes += ds.skin.positions.size_bytes() + 16;
        } else {
          dd.vertices = pack(packed, ds.vertices.data(), ds.vertices.size_bytes());
        }
        std::vector<float> rows;
        packSkinPalette(ds.palette, rows);
        dd.palette = pack(packed, rows.data(), rows.size() * 4);
        dd.push.bindings = m.staticAddress(ds.bindings.data(), ds.bindings.size());
        dd.push.indices = m.staticAddress(ds.indices.data(), ds.indices.size_bytes());
        dd.push.out_positions = m.positions.address + first * 12;
        dd.push.out_covariances = m.covariances.address + first * 24;
        dd.push.count = static_cast<uint32_t>(o.cloud->size());
        deforms.push_back(dd);
      }
    }
    deform_bytes = packed.size();
    if (skinned_bytes && m.skinned.size < skinned_bytes) m.skinned = m.ctx.createBuffer(skinned_bytes + skinned_bytes / 2, false, "skinned vertices");
    if (deform_bytes) {
      if (m.deform_data.size < deform_bytes) m.deform_data = m.ctx.createBuffer(deform_bytes + deform_bytes / 2, false, "deform inputs");
      for (DeformDispatch& dd : deforms) {
        dd.push.palette = m.deform_data.address + dd.palette;
        if (dd.skin) {
          m.patchSkinFrame(dd.skin_push, m.deform_data.address + dd.skin_palette, m.deform_data.address + dd.morph_weights);
          dd.skin_push.out_positions = m.skinned.address + dd.skinned_offset;
          dd.push.vertices = dd.skin_push.out_positions;
        } else {
          dd.push.vertices = m.deform_data.address + dd.vertices;
        }
      }
    }
    override_bytes = bytes;
    bytes += deform_bytes;
    // Sort depths (baked hull shells): read by preprocess straight from the host-visible staging buffer.
    const size_t sort_depth_at = (bytes + 15) / 16 * 16;
    size_t sort_depth_bytes = 0;
    for (const RenderObject& o : objects) sort_depth_bytes += o.sort_depth.size_bytes();
    if (sort_depth_bytes) bytes = sort_depth_at + sort_depth_bytes;
    if (bytes) {
      if (m.dynamic_staging.size < bytes) m.dynamic_staging = m.ctx.createBuffer(bytes + bytes / 2, true, "per-frame splat overrides");
      auto* dst = static_cast<uint8_t*>(m.dynamic_staging.mapped);
      size_t at = 0;
      for (size_t oi = 0; oi < objects.size(); ++oi) {
        const RenderObject& o = objects[oi];
        const uint64_t slot = m.residents[oi].slots.first;
        if (!o.positions.empty()) {
          std::memcpy(dst + at, o.positions.data(), o.positions.size_bytes());
          pos_copies.push_back({at, slot * 12, o.positions.size_bytes()});
          at += o.positions.size_bytes();
          std::memcpy(dst + at, o.covariances.data(), o.covariances.size_bytes());
          cov_copies.push_back({at, slot * 24, o.covariances.size_bytes()});
          at += o.covariances.size_bytes();
        }
        if (!o.shapes.empty()) {
          std::memcpy(dst + at, o.shapes.data(), o.shapes.size_bytes());
          shape_copies.push_back({at, slot * 4, o.shapes.size_bytes()});
          at += o.shapes.size_bytes();
        }
      }
      if (deform_bytes) std::memcpy(dst + override_bytes, packed.data(), deform_bytes);
      at = sort_depth_at;
      for (size_t o = 0; o < objects.size(); ++o) {
        if (objects[o].sort_depth.empty()) continue;
        std::memcpy(dst + at, objects[o].sort_depth.data(), objects[o].sort_depth.size_bytes());
        gobj[o].sort_depth = m.dynamic_staging.address + at;
        gobj[o].flags |= SF_OBJECT_SORT_DEPTH;
        at += objects[o].sort_depth.size_bytes();
      }
    }
  }
  // The object records, once per frame of the submission (the camera in object space differs per frame).
  m.object_count = objects.size();
  if (m.objects_buf.size < std::max<size_t>(objects.size() * views.size(), 1) * sizeof(GpuObject))
    m.objects_buf = m.ctx.createBuffer(std::max<size_t>(objects.size() * views.size(), 4) * sizeof(GpuObject), true, "objects");
  for (size_t r = 0; r < views.size(); ++r) {
    const Vec3 eye = views[r].camera.position();
    for (size_t o = 0; o < objects.size(); ++o) {
      const Vec3 c = transformPoint(inverseAffine(objects[o].object_to_world), eye);
      gobj[o].cam_in_object[0] = c.x, gobj[o].cam_in_object[1] = c.y, gobj[o].cam_in_object[2] = c.z;
    }
    if (!gobj.empty()) std::memcpy(static_cast<uint8_t*>(m.objects_buf.mapped) + r * objects.size() * sizeof(GpuObject), gobj.data(), gobj.size() * sizeof(GpuObject));
  }
  m.has_mesh = !meshes.empty();
  m.mesh_skins.clear();
  m.mesh_vertices.clear();
  std::vector<uint32_t> mesh_triangles;
  size_t mesh_draws_offset = 0;
  if (m.has_mesh) {
    m.ensureMeshTargets(static_cast<uint32_t>(cam.width), static_cast<uint32_t>(cam.height));
    mesh_triangles = m.uploadMeshes(meshes, cam, &mesh_draws_offset);
  }
  const uint32_t tile_count = tiles_x * tiles_y, tile_blocks = ceilDiv(tile_count, SF_SCAN_BLOCK);

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
      m.writeFrame(&views[static_cast<size_t>(r)].camera, views[static_cast<size_t>(r)].background, tiles_x, tiles_y, settings.depth, static_cast<uint32_t>(r));
    VkCommandBuffer cmd = m.ctx.begin();
    vkCmdResetQueryPool(cmd, m.queries, 0, kTimestamps * static_cast<uint32_t>(todo.size()));
    // With a tail the image stays on the GPU: only the counters come back.
    const VkDeviceSize image_bytes = tail ? 0 : static_cast<VkDeviceSize>(cam.width) * static_cast<VkDeviceSize>(cam.height) * 16;
    // Staging: the image, the depth plane when asked for, the counters.
    const VkDeviceSize depth_bytes = settings.depth ? image_bytes / 2 : 0, counters_at = image_bytes + depth_bytes;
    constexpr VkDeviceSize counter_bytes = SF_COUNTER_WORDS * 4;  // per recorded frame
    gpu::Buffer& st_buf = m.staging(counters_at + counter_bytes * todo.size());
    // Merge passes recorded: enough for the longest list possible (a slot reaches a tile once); those no
    // list of the frame needs are dispatched with no workgroups (seg_setup.comp).
    const uint32_t merge_passes = std::min<uint32_t>(mergePasses(std::min<uint64_t>(m.slots, m.key_capacity)), SF_MAX_MERGE_PASSES);
    auto barrier = [&] {
      if (!m.has_mesh) return gpu::computeBarrier(cmd);
      // With meshes, what compute and transfer wrote is also read by the mesh pipeline's vertex and
      // fragment shaders (vertex pulling from the mesh data).
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
      vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                               VK_PIPELINE_STAGE_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT,
                           0, 1, &mb, 0, nullptr, 0, nullptr);
    };
    m.frame_serial = m.frame_serial == UINT32_MAX ? 1 : m.frame_serial + 1;  // never 0, the words' initial value
    // The frames of one submission (renderBackToBack, renderBatchWithTail) are recorded one after the other,
    // a barrier between them, each with its own frame and object records: a GPU that never waits on the host.
    for (size_t at = 0; at < todo.size(); ++at) {
      const int run = todo[at];
      m.run_index = static_cast<uint32_t>(run);
      m.timestamp_base = static_cast<uint32_t>(at) * kTimestamps;
      if (at > 0) barrier();
      m.timestamp(cmd, 0);
      // The frame as declared passes; the graph puts a barrier wherever a pass touches what an earlier one
      // wrote (or overwrites what one read) since the last barrier. docs/architecture.md shows the result.
      FrameGraph g;
      const uint32_t r_counters = g.resource("counters"), r_bins = g.resource("tile bins"), r_deform_in = g.resource("deform inputs"),
                     r_skinned = g.resource("skinned vertices"), r_mesh_data = g.resource("mesh data"), r_splats = g.resource("splat slots"), r_mesh = g.resource("mesh layer"),
                     r_projected = g.resource("projected splats"), r_ranges = g.resource("tile ranges"), r_pairs = g.resource("tile pairs"),
                     r_image = g.resource("image"), r_readback = g.resource("readback"), r_train = g.resource("training state");
      g.add("clear", {}, {r_counters, r_bins, r_projected}, [&] {
        // One write per buffer: a fill followed by an update of the same bytes would be a write-after-write
        // hazard between two transfer commands with no barrier between them.
        uint32_t counters[SF_COUNTER_WORDS] = {};
        counters[SF_COUNTER_SLOTS] = m.slots;
        counters[SF_COUNTER_TILES] = tile_count;
        vkCmdUpdateBuffer(cmd, m.counters.buffer, 0, sizeof(counters), counters);
        vkCmdFillBuffer(cmd, m.tile_bins.buffer, 0, VK_WHOLE_SIZE, 0);
        // Free slots of the sink (objects gone, not yet reused) touch no tile: depth keys sort them last.
        for (const SplatSink::Range& r : m.slot_sink.freeRanges()) vkCmdFillBuffer(cmd, m.touched.buffer, r.first * 4, r.count * 4, 0);
      });
      // Frames with shapes: every slot's word 0 (the gaussian) before shaped objects write theirs.
      g.add("clear shapes", {}, {r_splats}, [&] { vkCmdFillBuffer(cmd, m.shapes.buffer, 0, static_cast<VkDeviceSize>(m.slots) * 4, 0); },
            m.has_shapes && m.slots > 0);
      g.add("slot overrides", {}, {r_splats}, [&] {
        if (!pos_copies.empty()) {
          vkCmdCopyBuffer(cmd, m.dynamic_staging.buffer, m.positions.buffer, static_cast<uint32_t>(pos_copies.size()), pos_copies.data());
          vkCmdCopyBuffer(cmd, m.dynamic_staging.buffer, m.covariances.buffer, static_cast<uint32_t>(cov_copies.size()), cov_copies.data());
        }
        if (!shape_copies.empty())
          vkCmdCopyBuffer(cmd, m.dynamic_staging.buffer, m.shapes.buffer, static_cast<uint32_t>(shape_copies.size()), shape_copies.data());
      }, !pos_copies.empty() || !shape_copies.empty());
      g.add("mesh data", {}, {r_mesh_data}, [&] {
        // Vertex data, indices, textures and draw records to device-local memory (vertex pulling and texel
        // reads from host memory would cross the bus per fragment on a discrete GPU).
        VkBufferCopy copy{0, 0, m.mesh_bytes};
        vkCmdCopyBuffer(cmd, m.mesh_data.buffer, m.mesh_device.buffer, 1, &copy);
      }, m.has_mesh);
      g.add("deform inputs", {}, {r_deform_in}, [&] {
        VkBufferCopy region{override_bytes, 0, deform_bytes};
        vkCmdCopyBuffer(cmd, m.dynamic_staging.buffer, m.deform_data.buffer, 1, &region);
      }, deform_bytes > 0);
      // The one skin pass (deform/gpu_passes.h): meshes under bound splats into the skinned-vertex buffer,
      // skinned drawn meshes into their vertex ranges of the mesh data. Then the bound splats: centres and
      // covariances from this frame's deformed meshes, into their slots.
      const bool skin_any = !m.mesh_skins.empty() || std::any_of(deforms.begin(), deforms.end(), [](const DeformDispatch& dd) { return dd.skin; });
      g.add("skin", {r_deform_in, r_mesh_data}, {r_skinned, r_mesh_data}, [&] {
        for (const DeformDispatch& dd : deforms)
          if (dd.skin) m.skin_pass.record(cmd, dd.skin_push);
        for (const SkinPush& p : m.mesh_skins) m.skin_pass.record(cmd, p);
      }, skin_any);
      g.add("deform splats", {r_deform_in, r_skinned}, {r_splats}, [&] {
        for (const DeformDispatch& dd : deforms) {
          m.splat_deform_pass.record(cmd, dd.push);
        }
      }, !deforms.empty());
      // Objects written on the GPU (neural generators on the Vulkan executor): their passes write the
      // objects' slot ranges directly.
      const bool sources = std::any_of(objects.begin(), objects.end(), [](const RenderObject& o) { return o.gpu_source != nullptr; });
      g.add("gpu sources", {}, {r_splats}, [&] {
        for (size_t o = 0; o < objects.size(); ++o) {
          if (!objects[o].gpu_source) continue;
          const uint32_t first = gobj[o].first_slot;
          GpuSplatTargets t;
          t.positions = m.positions.address + static_cast<VkDeviceAddress>(first) * 12;
          t.covariances = m.covariances.address + static_cast<VkDeviceAddress>(first) * 24;
          t.opacities = m.opacities.address + static_cast<VkDeviceAddress>(first) * 4;
          t.sh = m.sh.address + static_cast<VkDeviceAddress>(gobj[o].sh_base) * 4;
          t.count = gobj[o].count;
          t.sh_stride = gobj[o].sh_stride;
          t.shapes = m.shapes.address + static_cast<VkDeviceAddress>(first) * 4;
          objects[o].gpu_source->record(cmd, t);
        }
      }, sources);
      g.add("meshes", {r_mesh_data}, {r_mesh}, [&] { m.recordMeshes(cmd, mesh_triangles, mesh_draws_offset, cam); }, m.has_mesh);
      g.add("preprocess", {r_splats, r_counters, r_bins}, {r_projected, r_counters, r_bins}, [&] {  // tile bins: the counts of most slots
        m.timestamp(cmd, 1);
        for (size_t o = 0; o < objects.size(); ++o) {
          GpuPush p = m.push();
          p.object_index = static_cast<uint32_t>(o);
          m.dispatch(cmd, m.preprocess, p, ceilDiv(gobj[o].count, SF_WG_SIZE));
        }
        m.timestamp(cmd, 2);
      });
      // Each tile's (depth, slot) pairs in its own range: counted per tile, the counts scanned to ranges,
      // the pairs binned at the tiles' cursors, then sorted within each tile (chunks, then merges).
      g.add("bin", {r_projected, r_bins}, {r_bins}, [&] {
        m.dispatch(cmd, m.bin_tiles, m.push(), ceilDiv(m.slots, SF_WG_SIZE));
        m.timestamp(cmd, 3);
      });
      g.add("tile ranges", {r_bins, r_counters}, {r_bins, r_ranges, r_counters}, [&] {
        m.recordScan(cmd, m.tile_bins.address, m.counters.address + SF_COUNTER_TILES * 4, m.bin_sums.address, tile_blocks, -1);
        gpu::computeBarrier(cmd);
        GpuPush p = m.push();
        p.scan_count = m.bin_sums.address + static_cast<VkDeviceAddress>(tile_blocks) * 4;  // the scan's total
        m.dispatch(cmd, m.tile_setup, p, ceilDiv(tile_count, SF_WG_SIZE));
        gpu::computeBarrier(cmd);
        m.dispatch(cmd, m.seg_setup, m.push(), 1);
        m.timestamp(cmd, 4);
      });
      g.add("emit", {r_projected, r_bins, r_ranges}, {r_bins, r_pairs}, [&] {
        GpuPush p = m.push();
        p.pad0 = 1;  // emitting
        m.dispatch(cmd, m.bin_tiles, p, ceilDiv(m.slots, SF_WG_SIZE));
        m.timestamp(cmd, 5);
      });
      g.add("tile sort", {r_pairs, r_ranges, r_counters}, {r_pairs}, [&] {
        m.dispatchIndirect(cmd, m.seg_sort_small, m.push(), SF_COUNTER_SMALL_DISPATCH);  // disjoint ranges: no barrier between
        m.dispatchIndirect(cmd, m.seg_sort, m.push(), SF_COUNTER_SEG_DISPATCH);
        for (uint32_t pass = 0; pass < merge_passes; ++pass) {
          gpu::computeBarrier(cmd);
          GpuPush p = m.push();
          p.shift = pass;
          m.dispatchIndirect(cmd, m.seg_merge, p, SF_COUNTER_MERGE_DISPATCH + 3 * pass);
        }
        m.timestamp(cmd, 6);
      });
      g.add("raster", {r_ranges, r_pairs, r_projected, r_mesh, r_splats}, {r_image}, [&] {  // splat slots: the shape words
        m.dispatch(cmd, m.has_shapes ? m.raster_shapes : m.raster, m.push(), tiles_x, tiles_y * (SF_TILE / SF_RASTER_ROWS));
        m.timestamp(cmd, 7);
      });
      g.add("tail", {r_image, r_ranges, r_pairs, r_projected, r_counters}, {r_train}, [&] { tail->record(cmd, m.frameAddress(), static_cast<uint32_t>(run)); }, tail != nullptr);
      g.add("readback", {r_image, r_counters}, {r_readback}, [&] {
        VkBufferCopy img_copy{0, 0, image_bytes}, depth_copy{0, image_bytes, depth_bytes}, cnt_copy{0, counters_at + counter_bytes * at, counter_bytes};
        if (image_bytes) vkCmdCopyBuffer(cmd, m.image.buffer, st_buf.buffer, 1, &img_copy);
        if (depth_bytes) vkCmdCopyBuffer(cmd, m.depth_out.buffer, st_buf.buffer, 1, &depth_copy);
        vkCmdCopyBuffer(cmd, m.counters.buffer, st_buf.buffer, 1, &cnt_copy);
        m.timestamp(cmd, 8);
      });
      const VkDeviceSize crumbs = 4 * g.passes().size() * todo.size();
      if (m.breadcrumb.size < crumbs) {
        m.breadcrumb = m.ctx.createBuffer(crumbs, true, "pass breadcrumbs");
        std::memset(m.breadcrumb.mapped, 0, static_cast<size_t>(m.breadcrumb.size));
      }
      const VkDeviceSize crumb_base = 4 * g.passes().size() * static_cast<VkDeviceSize>(at);
      g.run(barrier, [&](size_t pass) { vkCmdFillBuffer(cmd, m.breadcrumb.buffer, crumb_base + 4 * pass, 4, m.frame_serial); });
      m.last_graph = std::move(g);
    }
    m.timestamp_base = 0;
    m.run_index = 0;
    try {
      m.ctx.submit(cmd, "running the frame");
    } catch (const gpu::DeviceLost& e) {
      throw gpu::DeviceLost(std::string(e.what()) + "; " + m.lostPassReport());
    }

    std::vector<int> overflowed;
    uint32_t most_keys = 0;
    for (size_t at = 0; at < todo.size(); ++at) {
      uint32_t cnt[SF_COUNTER_WORDS];
      std::memcpy(cnt, static_cast<uint8_t*>(st_buf.mapped) + counters_at + counter_bytes * at, sizeof(cnt));
      if (cnt[SF_COUNTER_ERROR])
        throw Error("Vulkan device " + m.ctx.info().name + " ran the radix sort with an unexpected subgroup layout");
      VulkanFrameStats& st = stats[static_cast<size_t>(todo[at])];
      if (cnt[SF_COUNTER_OVERFLOW] == 2)
        throw Error("Vulkan renderer: the frame needs 2^32 or more (tile, splat) pairs (splats covering the screen many times over); "
                    "render it smaller or with fewer gaussians");
      if (cnt[SF_COUNTER_OVERFLOW]) {
        if (attempt + 1 == attempts) throw Error("Vulkan renderer: tile keys still overflow after growing the buffers");
        overflowed.push_back(todo[at]);
        most_keys = std::max(most_keys, cnt[SF_COUNTER_KEYS]);
        st.regrown = true;
        continue;
      }
      const std::vector<double> ms = m.readTimestamps(kTimestamps, static_cast<uint32_t>(at) * kTimestamps);
      st.splats = m.slot_sink.live();
      st.visible = cnt[SF_COUNTER_VISIBLE];
      st.tile_keys = cnt[SF_COUNTER_KEYS];
      st.sort_passes = static_cast<int>(mergePasses(cnt[SF_COUNTER_LONGEST]));
      st.longest_tile = cnt[SF_COUNTER_LONGEST];
      st.host_staging_bytes = m.readback.size;
      st.uploaded_slots = uploaded_slots;
      st.first_slots.clear();
      for (const Impl::Resident& r : m.residents) st.first_slots.push_back(r.slots.first);
      st.times = {ms[1], ms[2], ms[3], ms[4], ms[5], ms[6], ms[7], ms[8], ms[0]};
    }
    if (!overflowed.empty()) {
      m.ensureKeys(static_cast<uint64_t>(most_keys) + most_keys / 4);
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
    if (m.raster_slice != 0 && stats[0].longest_tile > m.raster_slice) m.rasterSlices(stats[0], tiles_x, tiles_y, st_buf, image_bytes, depth_bytes);
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
  VulkanFrameDebug d;
  auto floats = [&](const gpu::Buffer& b, size_t count) {
    std::vector<uint8_t> raw = m.download(b, count * 4);
    std::vector<float> out(count);
    if (count) std::memcpy(out.data(), raw.data(), raw.size());
    return out;
  };
  auto uints = [&](const gpu::Buffer& b, size_t count) {
    std::vector<uint8_t> raw = m.download(b, count * 4);
    std::vector<uint32_t> out(count);
    if (count) std::memcpy(out.data(), raw.data(), raw.size());
    return out;
  };
  d.means = floats(m.means, m.slots * 2ull);
  d.conic_opacity = floats(m.conic_opacity, m.slots * 4ull);
  d.color_depth = floats(m.color_depth, m.slots * 4ull);
  std::vector<uint32_t> cnt = uints(m.counters, SF_COUNTER_WORDS);
  const size_t keys = cnt[SF_COUNTER_OVERFLOW] || !m.keys[0].size ? 0 : std::min<size_t>(cnt[SF_COUNTER_KEYS], m.key_capacity);
  d.tile_ranges = uints(m.tile_ranges, m.tiles * 2ull);
  const std::vector<uint32_t> values = uints(m.keys[2], keys), values_alt = uints(m.keys[5], keys);
  d.sorted_tiles.assign(keys, 0);
  d.sorted_values.assign(keys, 0);
  for (uint32_t t = 0; t < m.tiles; ++t) {
    const uint32_t begin = d.tile_ranges[2 * t], end = d.tile_ranges[2 * t + 1];
    const std::vector<uint32_t>& from = mergePasses(end - begin) % 2 ? values_alt : values;
    for (uint32_t k = begin; k < end && k < keys; ++k) d.sorted_tiles[k] = t, d.sorted_values[k] = from[k];
  }
  d.slot_positions = floats(m.positions, m.slots * 3ull);
  d.slot_covariances = floats(m.covariances, m.slots * 6ull);
  for (const Impl::MeshVertices& mv : m.mesh_vertices) {
    auto vecs = [&](size_t at, size_t count) {
      std::vector<Vec3> out(count);
      if (!count) return out;
      // mesh_device's offsets are 16-byte aligned; download() copies whole pieces from offset 0, so read the prefix.
      std::vector<uint8_t> raw = m.download(m.mesh_device, at + count * 12);
      std::memcpy(out.data(), raw.data() + at, count * 12);
      return out;
    };
    d.mesh_positions.push_back(vecs(mv.positions, mv.position_count));
    d.mesh_normals.push_back(vecs(mv.normals, mv.normal_count));
  }
  return d;
}

double VulkanRenderer::sortPairs(std::vector<uint32_t>& hi, std::vector<uint32_t>& lo, std::vector<uint32_t>& values, int hi_bits) {
  const auto lock = impl_->ctx.lock();
  Impl& m = *impl_;
  const size_t n = hi.size();
  if (lo.size() != n || values.size() != n) throw Error("sortPairs: arrays differ in size");
  if (n == 0) return 0;
  m.ensureKeys(n, true);
  m.writeFrame(nullptr, {}, 0, 0);
  m.upload(m.keys[0], lo.data(), n * 4);
  m.upload(m.keys[1], hi.data(), n * 4);
  m.upload(m.keys[2], values.data(), n * 4);
  uint32_t count = static_cast<uint32_t>(n);
  VkCommandBuffer cmd = m.ctx.begin();
  vkCmdResetQueryPool(cmd, m.queries, 0, kTimestamps);
  uint32_t counters[SF_COUNTER_WORDS] = {};  // one write: see the frame's "clear" pass
  counters[SF_COUNTER_SCAN_TOTAL] = count;
  vkCmdUpdateBuffer(cmd, m.counters.buffer, 0, sizeof(counters), counters);
  gpu::computeBarrier(cmd);
  m.recordSortSetup(cmd, m.counters.address + SF_COUNTER_SCAN_TOTAL * 4, SF_DESC_KEYS, 0);
  gpu::computeBarrier(cmd);
  m.timestamp(cmd, 0);
  int passes = m.recordSort(cmd, SF_DESC_KEYS, kDepthPasses, (std::clamp(hi_bits, 1, 32) + 7) / 8, SF_FLAG_CARRY_LO | SF_FLAG_CARRY_HI, n);
  gpu::computeBarrier(cmd);
  m.timestamp(cmd, 1);
  m.ctx.submit(cmd);
  bool alt = passes % 2 != 0;
  std::vector<uint8_t> cnt = m.download(m.counters, SF_COUNTER_WORDS * 4);
  uint32_t error;
  std::memcpy(&error, cnt.data() + SF_COUNTER_ERROR * 4, 4);
  if (error) throw Error("Vulkan device " + m.ctx.info().name + " ran the radix sort with an unexpected subgroup layout");
  auto back = [&](const gpu::Buffer& b, std::vector<uint32_t>& v) {
    std::vector<uint8_t> raw = m.download(b, n * 4);
    std::memcpy(v.data(), raw.data(), n * 4);
  };
  back(m.keys[alt ? 3 : 0], lo);
  back(m.keys[alt ? 4 : 1], hi);
  back(m.keys[alt ? 5 : 2], values);
  return m.readTimestamps(2)[1];
}

}  // namespace sf
