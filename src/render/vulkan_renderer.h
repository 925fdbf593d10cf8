// Vulkan compute renderer: the frame of ARCHITECTURE.md steps 4-7 on the GPU, in one submission (a frame
// whose deepest tile holds more than RenderSettings::raster_slice pairs: its deep tiles' raster in slices
// after it, a submission each). preprocess (every object's slots, each with its own transform) -> depth sort
// of the slots -> scan of tile counts in depth order -> key emission in depth order -> one global stable
// radix sort by tile (equivalent to sorting (tile, depth) keys) -> tile ranges -> tile raster -> readback.
// Produces the same image as renderCpu() (tests compare them); runs on any Vulkan 1.2 device with
// buffer device addresses, subgroup ballots and subgroups of 8..128 lanes (lavapipe included).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/image.h"
#include "render/cpu_renderer.h"

namespace sf {

namespace gpu {
struct ContextOptions;
struct DeviceInfo;
class Context;
}  // namespace gpu

struct VulkanPassTimes {  // milliseconds, from GPU timestamps
  // mesh: everything before preprocess: per-frame uploads, the splat deform pass, GPU sources (neural
  // generators run in the frame) and the mesh pass. bin: each tile's pair count; scan: the tiles' ranges
  // and sort chunks; emit: the (depth, slot) pairs into their tiles' ranges; sort: each tile's pairs by
  // depth (chunk sorts in shared memory, then merges within the longer lists).
  double mesh = 0, preprocess = 0, bin = 0, scan = 0, emit = 0, sort = 0, raster = 0, readback = 0, total = 0;
};

struct VulkanFrameStats {
  size_t splats = 0, visible = 0,
         tile_keys = 0;  // splats: in the frame's objects (free sink slots not counted)
  int sort_passes = 0;   // merge passes of the longest tile list (0: every list fit one chunk sort)
  // The deepest tile's list (pairs), and the raster slices its frame took (RenderSettings::raster_slice): 0
  // when every tile was drawn by the frame's own raster, else the slices that walked the deeper tiles after
  // it, each a submission of its own. `submissions`: the frame's, 1 + raster_slices (a back-to-back batch
  // counts one).
  uint64_t longest_tile = 0;
  int raster_slices = 0, submissions = 1;
  bool regrown = false;  // the key buffers overflowed and the frame was rendered again after growing
  // The frame's own raster blended in half precision (RenderSettings::half_raster, on a device with 16-bit
  // float arithmetic, in a frame without meshes, shapes, the depth plane or training).
  bool half_raster = false;
  // The frame's own raster counted its work (RenderSettings::count_raster): the batch entries its subgroups
  // walked (each subgroup up to where its last pixel still blending stopped), the pixel-entries its threads
  // evaluated and those they blended (the CPU renderer's RenderStats::blended, where no tile is drawn in
  // raster slices); the batches its workgroups staged (each of a tile's SF_TILE / SF_RASTER_ROWS workgroups
  // walks the tile's list in batches of SF_TILE * SF_RASTER_ROWS entries until its pixels are done), and the
  // most one workgroup staged (its walk is serial: the raster lasts at least that many batches). All 0 when
  // it did not count.
  bool raster_counted = false;
  uint64_t raster_entries = 0, raster_evaluated = 0, raster_blended = 0, raster_batches = 0;
  uint32_t raster_longest_walk = 0;
  // Host-visible staging the renderer holds: uploads go through it in pieces of at most 64 MiB, so it
  // stays at max(64 MiB, the image readback) whatever the scene's size. (A staging buffer as large as the
  // largest array, 2.35 GB for 12.2M SH-3 gaussians, made every GPU pass 3x slower on the H200.)
  size_t host_staging_bytes = 0;
  // The splat sink: each object's first slot (its range stays put while the object stays in the frame), and
  // the slots whose rest values were uploaded for this frame (new, dynamic, or no longer overwritten
  // objects), and their bytes (centre, covariance, opacity and SH of each). Objects written on the GPU by a
  // source that writes every slot (GpuSplatSource::needsRestValues false: the LOD pool) upload nothing here;
  // their own uploads are theirs to count.
  std::vector<uint64_t> first_slots;
  uint64_t uploaded_slots = 0, uploaded_bytes = 0;
  VulkanPassTimes times;
};

// Intermediate results of the last frame, for tests that compare each pass with the CPU reference.
struct VulkanFrameDebug {
  std::vector<float> means;          // 2 per slot
  std::vector<float> conic_opacity;  // 4 per slot
  std::vector<float> color_depth;    // 4 per slot
  std::vector<uint32_t> sorted_tiles,
      sorted_values;  // per pair, after the sort (each tile's from the buffer its list ended in)
  std::vector<uint32_t> tile_ranges;  // 2 per tile
  // The tiles in the order the rasters draw them (tile_setup.comp): by the length class of their lists, the
  // longest class first (within a class, in the order of the atomics).
  std::vector<uint32_t> raster_order;
  std::vector<uint32_t> tile_classes;  // per length class (SF_TILE_CLASSES), the tiles listed in it
  // The splat slots after the frame's deform passes (object space): 3 floats of centre, 6 of covariance each.
  std::vector<float> slot_positions, slot_covariances;
  // Per mesh of the last frame, the vertices it was drawn with (a skinned mesh: the skin pass's output).
  std::vector<std::vector<Vec3>> mesh_positions, mesh_normals;
};

// The most frames one submission records (renderBatchWithTail, renderBackToBack).
inline constexpr int kMaxFramesPerSubmission = 64;

// Each pass's median over several frames (benchmarks).
VulkanPassTimes medianPassTimes(std::span<const VulkanPassTimes> runs);

// Passes after the tile raster (training's loss and backward passes, train/gpu_trainer.h), declared to the
// frame's graph as GpuSplatSource's are (render/frame_passes.h). `frame` is the device address of the frame's
// GpuFrame (render/gpu_shared.h), `run` the frame's index in its submission (renderBatchWithTail; 0 for
// renderWithTail); its raster has also written, per pixel, the final transmittance (train_final_t) and 1 +
// the position in the tile's list of the last splat blended (train_last), parts of the frame's "image"
// resource; a tile's list sits in values or values_alt as its length says (sfMergePasses,
// render/gpu_shared.h). The tail's passes must only read the frame's resources, and must do nothing when the
// frame's counters report a key overflow (the frame is then rendered again, its tail with it, after the key
// buffers grow).
class FrameTail {
 public:
  virtual ~FrameTail() = default;
  virtual void addPasses(FramePasses& frame, uint64_t frame_address, uint32_t run) const = 0;
};

// One frame of a batch (renderBatchWithTail): its camera and background. A batch's frames share one image
// size.
struct FrameView {
  Camera camera;
  Vec3 background{0, 0, 0};
};

// Threads: one renderer may be called from several threads. Its renders, readDebug, sortPairs and
// lastFrameGraph hold its context's lock (gpu::Context::lock) for the whole frame (uploads, recording,
// submit, wait, read back), so frames from two threads run one after the other, each the image it would be
// alone; other work on context() that holds the same lock waits for the frame, and the frame for it. The
// objects a render reads (clouds, spans) must not change while it runs.
class VulkanRenderer {
 public:
  explicit VulkanRenderer(const gpu::ContextOptions& options);
  ~VulkanRenderer();
  VulkanRenderer(const VulkanRenderer&) = delete;
  VulkanRenderer& operator=(const VulkanRenderer&) = delete;

  const gpu::DeviceInfo& device() const;
  gpu::Context& context();
  // How the frame counts each tile's pairs (preprocess.comp) and takes each pair's place in its tile's list
  // (bin_tiles.comp); every path makes the same sorted lists and the same image. kPartitioned (the default
  // where the device has DeviceInfo::subgroup_partitioned): the lanes of a subgroup walk their rects in lock
  // step and the lanes on one tile count or take their places with one atomic, grouped in one instruction.
  // kPerPair (the default elsewhere): one atomic a pair. kAggregated: the lock-step walk grouped by a ballot
  // per distinct tile, the portable path that tests it on any device. Throws sf::Error where the device lacks
  // what a path needs (partitioned subgroups; subgroup ballots, votes and shuffles).
  enum class TileBinning { kPerPair, kPartitioned, kAggregated };
  void setTileBinning(TileBinning binning);
  // The binning path this renderer's frames take: "per pair", "partitioned" or "aggregated" (bench prints
  // it).
  const char* tileBinningName() const;
  // The last frame as a frame graph: one line per pass with what it reads and writes (passes off in
  // that frame marked), and the barriers the graph put between them (render/frame_graph.h).
  std::string lastFrameGraph() const;

  // Renders the objects. Clouds are uploaded when they change (pointer or size) and reused otherwise;
  // transforms are read every frame. Meshes (render/mesh.h) are uploaded every frame, drawn first by the
  // graphics pipeline with a depth buffer, and the splats composited against them in the tile raster
  // (needs a graphics queue with dynamic rendering; throws sf::Error naming the device otherwise). The
  // camera must be valid.
  ImageRGBA render(std::span<const RenderObject> objects, const Camera& cam, const RenderSettings& settings,
                   VulkanFrameStats* stats = nullptr, std::span<const RenderMesh> meshes = {});
  // Renders as render() does with `passes` recorded in order between the raster and the readback (the post
  // model in the frame: render/cpu_renderer.h ImagePass); the image read back is theirs.
  ImageRGBA renderWithImagePasses(std::span<const RenderObject> objects, const Camera& cam,
                                  const RenderSettings& settings, std::span<const ImagePass* const> passes,
                                  VulkanFrameStats* stats = nullptr, std::span<const RenderMesh> meshes = {});

  // Renders as render() does and records `tail` after the raster, in the same submission; only the frame's
  // counters are read back (the image stays on the GPU, for the tail). Returns the frame's figures.
  VulkanFrameStats renderWithTail(std::span<const RenderObject> objects, const Camera& cam,
                                  const RenderSettings& settings, const FrameTail& tail);

  // Renders 1..64 frames of the same objects in one submission, each with its own camera and background
  // and `tail` after it (its record gets the frame's index), one after the other on the GPU with a barrier
  // between them; the host waits once. Returns each frame's figures. A frame whose keys overflowed (its
  // tail did nothing, see FrameTail) is rendered again with its tail after the batch, once the key buffers
  // have grown: it then comes after the batch's later frames.
  std::vector<VulkanFrameStats> renderBatchWithTail(std::span<const RenderObject> objects,
                                                    std::span<const FrameView> views,
                                                    const RenderSettings& settings, const FrameTail& tail);

  // Benchmarking: renders as render() does with the frame's passes recorded `runs` times (1..64) in one
  // submission, each run after a barrier, over the same inputs; returns every run's pass times (`stats`
  // gets the last run's figures, `image` its image). Frames submitted one by one leave the GPU idle while
  // the host waits, and its clocks fall between them; back to back they show what the frame costs a busy GPU.
  std::vector<VulkanPassTimes> renderBackToBack(std::span<const RenderObject> objects, const Camera& cam,
                                                const RenderSettings& settings, int runs,
                                                VulkanFrameStats* stats = nullptr,
                                                std::span<const RenderMesh> meshes = {},
                                                ImageRGBA* image = nullptr);

  // Reads back the last frame's intermediate buffers (slow; for tests).
  VulkanFrameDebug readDebug();

  // Sorts (hi, lo) key pairs with values on the GPU with the frame's radix sort: stable, ascending by hi
  // then lo, examining the low `hi_bits` of hi (1..32) and all of lo. Returns the GPU time in ms.
  double sortPairs(std::vector<uint32_t>& hi, std::vector<uint32_t>& lo, std::vector<uint32_t>& values,
                   int hi_bits);

 private:
  // The frames of one submission (settings.background is replaced by each view's).
  ImageRGBA renderFrame(std::span<const RenderObject> objects, std::span<const FrameView> views,
                        const RenderSettings& settings, std::span<const RenderMesh> meshes,
                        const FrameTail* tail, std::vector<VulkanFrameStats>* run_stats);
  ImageRGBA renderFrameOnce(std::span<const RenderObject> objects, std::span<const FrameView> views,
                            const RenderSettings& settings, std::span<const RenderMesh> meshes,
                            const FrameTail* tail, std::vector<VulkanFrameStats>* run_stats);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sf
