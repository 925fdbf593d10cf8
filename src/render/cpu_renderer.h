// CPU reference renderer: the INRIA 3DGS forward pass (Kerbl et al. 2023, diff-gaussian-rasterization
// forward.cu) over every object of a frame with one global (tile, depth) sort. It is the test oracle for
// the GPU backend, so each step is exposed as a plain function with the exact math.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/covariance.h"
#include "core/gaussian_cloud.h"
#include "core/image.h"
#include "core/math.h"
#include "render/camera.h"
#include "render/frame_graph.h"
#include "render/mesh.h"

namespace sf {

class FramePasses;  // render/frame_passes.h

// Rendering constants (ARCHITECTURE.md, "Rendering math").
constexpr int kTileSize = 16;       // tiles are 16x16 pixels
constexpr float kNearPlane = 0.2f;  // splats at view z <= 0.2 are culled
constexpr float kDilation =
    kScreenFilterInria;                     // added to the 2D covariance diagonal (EWA low-pass) by default
constexpr float kAlphaMax = 0.99f;          // per-splat alpha clamp
constexpr float kAlphaMin = 1.0f / 255.0f;  // splats below this alpha at a pixel are skipped
constexpr float kTransmittanceMin = 1e-4f;  // a pixel stops when transmittance would fall below this

// Splats bound to a deforming mesh (character/binding.h), deformed on the GPU by the Vulkan backend into
// the object's slots each frame. Spans must stay valid while the frame renders.
struct SplatDeformSource {
  std::span<const uint8_t> bindings;  // one 68-byte record per splat (the bindings.bin record); static
  std::span<const Vec3> vertices;     // the bound mesh's deformed vertices this frame (object space)
  std::span<const uint32_t> indices;  // its triangle list
  std::span<const Mat4> palette;      // skin palette for joint-bound splats (may be empty without them)
  // Optional: skin the bound mesh on the GPU first (the frame's skin pass) instead of reading `vertices`.
  // Used when skin is not empty; only its positions are skinned (normals are not needed).
  SkinSource skin;
};

// Where a GPU-written object's values go this frame: device addresses of its first slot in the renderer's
// arrays (3 floats of centre, 6 of covariance xx xy xz yy yz zz in object space, 1 opacity per slot; SH
// coefficients [splat][coeff][rgb] at `sh`, sh_stride floats per splat) and its slot count; and its part of
// the frame's splat slots (render/frame_passes.h), which the passes that write them declare.
struct GpuSplatTargets {
  uint64_t positions = 0, covariances = 0, opacities = 0, sh = 0;
  uint32_t count = 0, sh_stride = 0;
  uint64_t shapes = 0;  // one uint32 shape word per slot, for sources that write them (writesShapes)
  FrameResource slots;
};
// An object whose gaussians are computed on the GPU each frame (a neural generator on the Vulkan executor,
// a live hull's effects, the trainer's parameters): the Vulkan renderer asks it for its passes
// (render/frame_passes.h), which run before preprocess and must write every slot of `targets` (an opacity
// that is NaN leaves a slot out of the frame), declaring targets.slots among their writes. Their callbacks
// run after addPasses returns (capture by value).
class GpuSplatSource {
 public:
  virtual ~GpuSplatSource() = default;
  virtual void addPasses(FramePasses& frame, const GpuSplatTargets& targets) const = 0;
  // Whether the passes also write a shape word per slot at targets.shapes (render/splat_shape.h).
  virtual bool writesShapes() const { return false; }
  // Whether the frame uploads the object's rest values (its cloud) when it places the object in new slots
  // (true: a source that leaves slots as they are until it has something to write). A source whose passes
  // write every slot in every frame says false, and the frame uploads nothing of the object.
  virtual bool needsRestValues() const { return true; }
};

// What an image pass reads and writes: images of width x height RGBA float32 pixels in rows (the frame's
// display-space colours and coverage) at device addresses, with their resources in the frame's graph. The
// first pass reads the frame's image, each later one the image the pass before it wrote; every pass writes
// the same second image (`target`), which the readback then copies.
struct ImagePassTargets {
  FrameResource source, target;
  uint64_t source_address = 0, target_address = 0;
  uint32_t width = 0, height = 0;
};
// Passes a module adds to the Vulkan frame between the raster and the readback (the scene's post model on
// the Vulkan executor, the hull outline): declared as GpuSplatSource's are (render/frame_passes.h), in the
// order the passes were given, one after the other. The frame's own image is never written, so a frame
// whose deep tiles are drawn in slices asks for them again over the finished image.
class ImagePass {
 public:
  virtual ~ImagePass() = default;
  virtual void addPasses(FramePasses& frame, const ImagePassTargets& targets) const = 0;
};

// One object of a frame: its gaussians in object space and the object-to-world transform (affine).
// The Vulkan renderer keeps an object's splats on the GPU from frame to frame, matched by the cloud's
// address, size and SH size (and static deform inputs by their arrays' addresses and sizes): a cloud whose
// contents change in place must be marked `dynamic`, and a freed cloud's address must not come back with
// other contents of the same size while the renderer lives.
struct RenderObject {
  RenderObject(const GaussianCloud* c = nullptr, const Mat4& to_world = {}, std::span<const Vec3> p = {},
               std::span<const Cov6> cv = {}, const SplatDeformSource* d = nullptr)
      : cloud(c), object_to_world(to_world), positions(p), covariances(cv), deform(d) {}

  const GaussianCloud* cloud = nullptr;
  Mat4 object_to_world;
  // Optional per-frame overrides (deformed splat characters): object-space centres and covariances, one
  // per splat of `cloud` (both or neither); the cloud then supplies opacity and colour only.
  std::span<const Vec3> positions;
  std::span<const Cov6> covariances;
  // Or: deformed on the GPU from bindings (Vulkan backend only; the CPU backend takes the overrides above,
  // computed by the CPU reference character::DeformJob).
  const SplatDeformSource* deform = nullptr;
  // The cloud's contents change every frame at the same address (a neural generator's output): the Vulkan
  // backend uploads it every frame instead of caching it by pointer and size.
  bool dynamic = false;
  // Or: written on the GPU every frame (Vulkan backend only); `cloud` then gives the slot count, the SH
  // degree and the colour space, not the values.
  const GpuSplatSource* gpu_source = nullptr;
  // A GPU source's slot count, where `cloud` is only its template (the SH degree, the colour space and the
  // filter; no rows): a level-of-detail pool whose cut is made on another thread keeps no host cloud of the
  // frame's size. Unset (kSizedByCloud): the cloud's size.
  static constexpr size_t kSizedByCloud = SIZE_MAX;
  size_t source_slots = kSizedByCloud;
  // The splats the object draws: source_slots where set, else the cloud's size.
  size_t count() const { return source_slots != kSizedByCloud ? source_slots : cloud ? cloud->size() : 0; }
  // Optional, one per splat: the view depth used for the splat's sort key and its test against the mesh layer
  // instead of its centre's (a splat hull's baked shell order, hull/hull_render.h). Values are raised to
  // kMinSortDepth; culling still uses the centre's depth.
  std::span<const float> sort_depth;
  // Optional, one per splat: its shape word (render/splat_shape.h; class bits 0: the gaussian), honoured by
  // both renderers. A GPU source writes its own (GpuSplatSource::writesShapes) and gives none here.
  std::span<const uint32_t> shapes;

  // Empty when usable; otherwise why not (override sizes).
  std::string validate() const;
};

// Sort depths below the near cull (0.2) are raised to this, so every key's float bits order like its value.
constexpr float kMinSortDepth = 0.2001f;

// The default of RenderSettings::raster_slice: above the deepest tile of any real frame measured (biker at
// 1280x720: 4,038 pairs; the 40 overlapping copies of the biker benchmark at 1920x1080: 45,685), and far
// below what one workgroup walks in a watchdog's time (on the H200 a workgroup walked a stack of faint splats
// at 0.16 us a pair: about 20 ms a slice).
constexpr uint32_t kDefaultRasterSlice = 1u << 17;

// Where the frame blends: in display space (sRGB-encoded colours blended as they are, as INRIA's rasterizer
// and the captures trained with it do; the default) or in linear light (every colour decoded to linear before
// blending, the pixel encoded to sRGB after: the character pipeline's convention, for linear-space packages).
// The image is display-encoded either way.
enum class BlendSpace { kDisplay, kLinear };
const char* blendSpaceName(BlendSpace space);         // "display", "linear"
BlendSpace parseBlendSpace(const std::string& text);  // throws sf::Error naming the choices

struct RenderSettings {
  Vec3 background{0, 0, 0};
  BlendSpace blend_space = BlendSpace::kDisplay;
  // Antialiased mode for every object: opacity scaled by sqrt(det(cov2D) / det(cov2D + f I)), f the object's
  // screen filter (GaussianCloud::screen_filter). Clouds flagged antialiased get it whatever this says.
  bool antialiased = false;
  // Also fill the image's depth plane (ImageRGBA::depth): expected depth and transmittance.
  bool depth = false;
  // Evaluate spherical harmonics up to this degree only (0..3; -1: each object's own). Applied where the
  // objects are packed: each object's degree is min(its own, this); its coefficients stay where they are.
  int max_sh_degree = -1;
  // Vulkan: the most entries of a tile's sorted list one raster dispatch walks (0: no limit). A driver kills
  // a submission that runs past its watchdog (about 2 s on Windows), and one raster workgroup walks a whole
  // tile's list, so a tile under a deep stack of splats would make one long dispatch; a frame whose deepest
  // tile holds more than this draws those tiles in slices of this many entries after its own raster, each
  // slice a submission of its own, with the same image bit for bit (docs/untrusted-input.md, "The GPU") as
  // the fp32 raster's (slices blend in fp32: under half_raster, the deep tiles are the ones drawn in fp32).
  // Frames within it run as before. Frames with a tail (training) and back-to-back batches are not split.
  uint32_t raster_slice = kDefaultRasterSlice;
  // Draw the higher SH bands (degree 1..3) of static objects at half precision (core/sh.h, halfShWords): the
  // Vulkan frame stores them as halves (SH 3: 112 bytes a splat instead of 192, read by every frame's
  // preprocess) and the CPU renderer rounds them the same way, so the backends agree. Objects written on the
  // GPU (RenderObject::gpu_source: generators, training, the LOD pool) and dynamic ones (new contents every
  // frame: posed characters, live hulls, generators on the CPU) keep full precision.
  // false: every coefficient at full precision (INRIA's fp32 colours bit for bit).
  bool half_sh = true;
  // Vulkan: blend the frame's own raster in 16-bit floats where the device has them (render/shaders/
  // raster_half.comp: two pixels a thread in paired half arithmetic), for frames that read only the colour
  // (no meshes, shapes, depth plane or training; raster slices stay fp32). The image stays within 45 dB of
  // the CPU renderer's (the CPU renderer itself always blends in fp32). Off by default, so that the default
  // frame stays equal to the CPU renderer's to within rounding: on an H100 it takes 5% off the headline
  // scene's raster (2.4% of its frame) and 8% off one biker's, and is about 6% slower on a synthetic scene
  // (docs/benchmarks.md); false: the fp32 raster, as the CPU.
  bool half_raster = false;
  // Vulkan: the frame's own raster counts its work (VulkanFrameStats::raster_counted and the raster_* counts:
  // the batch entries its subgroups walk, the pixel-entries evaluated and blended), where it draws the plain
  // fp32 raster (no meshes, shapes, depth plane or training; not the half raster; deep tiles drawn in raster
  // slices are not counted). A profile (the counting costs raster time); off by default.
  bool count_raster = false;
};

// Whether `object` is drawn with half-precision higher SH bands under `settings` (RenderSettings::half_sh).
inline bool drawsHalfSh(const RenderObject& object, const RenderSettings& settings) {
  return settings.half_sh && !object.gpu_source && !object.dynamic && object.cloud &&
         object.cloud->sh_degree >= 1 && object.cloud->sh_degree <= 3;
}

// The SH degree an object of degree `degree` is drawn with under `settings`.
inline int drawnShDegree(int degree, const RenderSettings& settings) {
  return settings.max_sh_degree >= 0 && settings.max_sh_degree < degree ? settings.max_sh_degree : degree;
}

// Per-frame figures, for progress lines and benchmarks.
struct RenderStats {
  size_t splats = 0;     // input splats over all objects
  size_t visible = 0;    // splats that survived culling and touch at least one tile
  size_t tile_keys = 0;  // (tile, depth) keys sorted
  uint64_t blended = 0;  // pixel-entries blended: the splats each pixel blended, summed over the pixels
  double preprocess_ms = 0, sort_ms = 0, mesh_ms = 0, raster_ms = 0;
};

// Inclusive-exclusive tile range [x0, x1) x [y0, y1).
struct TileRect {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int area() const { return (x1 - x0) * (y1 - y0); }
};

// A splat after preprocessing. `mean` is in pixel-index coordinates: pixel (i, j)'s centre is (i, j),
// i.e. the COLMAP coordinate minus 0.5, as the INRIA rasterizer evaluates it.
struct ProjectedSplat {
  float mean_x = 0, mean_y = 0;
  float conic[3] = {0, 0, 0};  // inverse 2D covariance: a, b, c of [[a, b], [b, c]]
  float opacity = 0;           // after the antialiasing compensation, if enabled
  float depth = 0;             // view-space z
  Vec3 color;                  // SH evaluated, +0.5, clamped at 0
  int radius = 0;              // pixels
  TileRect tiles;              // INRIA's 3-sigma tile rectangle
  int touched = 0;     // tiles of `tiles` the splat can reach with alpha >= 1/255 (see splatReachesTile)
  uint32_t shape = 0;  // shape word (render/splat_shape.h), class bits 0: the gaussian
};

// Rects larger than this many tiles skip the per-tile test (all their tiles count as touched): the test
// only ever removes tiles, so either choice gives the same image.
constexpr int kMaxTestedTileArea = 1024;

// Whether the splat can reach alpha >= 1/255 at some pixel centre of tile (tx, ty): the minimum over the
// tile of the conic's quadratic form q is at most 2 ln(255 opacity) (with a small margin). Tiles that
// fail the test would skip the splat at every pixel, so dropping their keys changes nothing in the image
// while removing most of the keys of faint or elongated splats.
bool splatReachesTile(const ProjectedSplat& s, int tx, int ty);

// 2D covariance (a, b, c of [[a, b], [b, c]]) of a gaussian with world covariance `cov` at view-space
// position `view_pos`, by the EWA Jacobian with the INRIA clamping of x/z and y/z to 1.3x the field of
// view, before dilation.
std::array<float, 3> projectCovariance(Vec3 view_pos, const Cov6& cov, const Mat3& view_rotation,
                                       const Camera& cam);

// Tiles covered by a splat at pixel-index position (x, y) with `radius` (INRIA getRect), clamped to the
// tile grid.
TileRect tileRect(float x, float y, int radius, int tiles_x, int tiles_y);

// Preprocesses one splat. Returns false when it is culled (behind the near plane, degenerate, or
// touching no tile). `cam_in_object` is the camera centre in the object's space (for SH directions).
// `screen_filter` is the variance (pixels^2) added to the projected covariance; with `antialiased` the
// opacity is scaled by sqrt(det(cov2D) / det(cov2D + screen_filter I)).
bool projectSplat(Vec3 position_world, const Cov6& cov_world, float opacity, int sh_degree, const float* sh,
                  Vec3 sh_direction, ColorSpace color_space, const Camera& cam, bool antialiased,
                  ProjectedSplat* out, BlendSpace blend_space = BlendSpace::kDisplay,
                  float screen_filter = kDilation);

// The frame's tile lists (steps 2 and 3 of the frame): one (tile << 32 | depth bits) key per tile each splat
// touches (splatReachesTile for rects of at most kMaxTestedTileArea tiles), one stable radix sort over them
// all. `touched[i]` is splat i's touched count, 0 for a culled splat. After the call `order` holds the splat
// of each key, grouped by tile and front to back within one, and tile t's keys are [begin[t], end[t]).
struct TileLists {
  std::vector<uint32_t> order, begin, end;
};
void buildTileLists(std::span<const ProjectedSplat> splats, std::span<const uint32_t> touched, int tiles_x,
                    int tiles_y, TileLists& out);

// Renders every object into a float RGBA image (colour composited over the background; alpha = 1 - T).
// Meshes, when given, are rasterized first (render/mesh.h) and the splats composited against their depth
// (alpha 1 where a mesh covers the pixel). Multithreaded over splat chunks and tiles. The camera must be
// valid (Camera::validate).
ImageRGBA renderCpu(std::span<const RenderObject> objects, const Camera& cam, const RenderSettings& settings,
                    RenderStats* stats = nullptr, std::span<const RenderMesh> meshes = {});

// A pixel of the mesh layer: its fragment's display colour, view depth (+infinity: none) and coverage.
struct MeshPixel {
  Vec3 color;
  float depth = INFINITY;
  float alpha = 1;
};

// Blends the sorted splats of one pixel exactly as the INRIA forward pass does; `order` lists indices
// into `splats` front to back. With an opaque mesh fragment (alpha 1) blending stops at the first splat
// whose depth is not below the mesh's and the mesh colour shows through the final transmittance; a
// translucent one (alpha < 1) is composited there, C += T alpha mesh, T *= 1 - alpha, and the splats
// behind it go on blending. `background` shows through what is left. Returns rgb, the final
// transmittance T, the expected depth sum(d * alpha * T) over every layer blended (the splats and the mesh
// fragment as one more layer: an opaque one adds d_mesh * T and leaves T = 0) and the pixel's alpha, 1 - T.
struct PixelResult {
  Vec3 color;
  float transmittance = 1;
  float depth = 0;
  float alpha = 0;
  uint32_t blended = 0;  // the splats blended (the mesh fragment not counted)
};
PixelResult blendPixel(std::span<const ProjectedSplat> splats, std::span<const uint32_t> order, int px,
                       int py, Vec3 background, const MeshPixel& mesh = {});

}  // namespace sf
