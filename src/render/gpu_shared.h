// Layouts and limits shared by the C++ host code and the GLSL compute shaders of the Vulkan renderer.
// Included by both; every struct uses only 4- and 8-byte scalars in an order that is the same under
// C++ and GLSL scalar block layout (static_asserts on the C++ side check the sizes).
#ifndef SF_RENDER_GPU_SHARED_H
#define SF_RENDER_GPU_SHARED_H

#include "../gpu/interop.h"

#ifdef __cplusplus
namespace sf::gpu_layout {
using gpu_interop::uint;
#endif

// Threads per workgroup of the 1D passes (preprocess, scan, key emission, ranges): a multiple of every
// subgroup size (8 on lavapipe, 32 on NVIDIA, 64 on AMD).
#define SF_WG_SIZE 256
// Elements per workgroup of the scan passes (4 per thread).
#define SF_SCAN_BLOCK 1024
// Radix sort: threads per workgroup (128 keeps per-subgroup digit counters within 16 KiB of shared
// memory even with 8-wide subgroups) and steps per subgroup. Each subgroup owns a contiguous sub-block
// of subgroup_size * rounds keys, a workgroup's block is SF_SORT_WG * rounds keys; sort_setup.comp picks
// rounds (1 to SF_SORT_MAX_ROUNDS) per sort so that a small sort still has about SF_SORT_TARGET_SUB_BLOCKS
// subgroups walking in parallel instead of a few walking 64 steps each. SF_SORT_BLOCK is the largest block.
#define SF_SORT_WG 128
#define SF_SORT_MAX_ROUNDS 64
#define SF_SORT_BLOCK (SF_SORT_WG * SF_SORT_MAX_ROUNDS)
#define SF_SORT_TARGET_SUB_BLOCKS 1024
// The one-workgroup sort (radix_small.comp) for sorts of at most SF_SMALL_SORT_MAX keys: up to this many
// subgroups (its workgroup is min(1024, SF_SMALL_SORT_SUB_BLOCKS * subgroup size) invocations), 32 KiB of
// digit counts in shared memory.
#define SF_SMALL_SORT_SUB_BLOCKS 32
#define SF_SMALL_SORT_MAX 16384
#define SF_RADIX 256
#define SF_MAX_SUBGROUPS (SF_SORT_WG / 8)
// Raster tile edge (16x16 pixels, one thread each).
#define SF_TILE 16
// Rows of a tile one raster workgroup blends (SF_TILE x SF_RASTER_ROWS pixels, one thread each; a tile takes
// SF_TILE / SF_RASTER_ROWS workgroups, each walking the tile's whole list): a tile holding thousands of
// splats is shared among several SMs, and a part of a tile whose pixels are all saturated stops on its own.
#define SF_RASTER_ROWS 8
// Tile lists (bin_tiles.comp, seg_sort.comp, seg_merge.comp): each tile's (depth, slot) pairs are binned into
// its own range and sorted there: chunks of up to SF_SEG_BLOCK pairs sorted in shared memory (one workgroup
// of SF_SEG_WG threads each), then merged pairwise in passes of doubling width within tiles longer than one
// chunk. A tile of L > SF_SEG_BLOCK pairs takes sfMergePasses(L) passes, alternating between the pair
// buffers: it ends in the alternates when that number is odd. SF_MAX_MERGE_PASSES covers 2^31 pairs.
// Lists of at most SF_SEG_SMALL pairs (most lists of most frames) are sorted by a smaller workgroup
// (SF_SEG_SMALL_WG threads, SF_SEG_SMALL pairs of shared memory): no thread idles through a network sized
// for a long list. Chunks of 1,024 pairs (8 KiB of shared memory a workgroup, 4 pairs a thread): the more
// sort workgroups an SM holds the faster the sort; the headline scene's tile sort took 2.30 ms with chunks of
// 4,096 (H200), 1.11 with 2,048 and 0.75 with 1,024 (H100; 0.98 with 512, 0.78 with 512 and 128 threads),
// docs/benchmarks.md.
#define SF_SEG_BLOCK 1024
#define SF_SEG_WG 256
#define SF_SEG_SMALL 256
#define SF_SEG_SMALL_WG 64
#define SF_MAX_MERGE_PASSES 21
// Their indirect dispatches are rows of at most SF_DISPATCH_ROW workgroups (Vulkan guarantees 65,535 per
// dimension; an 8K frame lists more chunks than that): workgroup (x, y) takes chunk y * SF_DISPATCH_ROW + x.
#define SF_DISPATCH_ROW 32768

// Pass flags (GpuPush::flags), each pass its own. The radix sort's: read the sort's alternate buffers; sort
// on the high key word; carry the low / high word along (the key word and the value always move). Tile
// binning's: emit the pairs (else count them).
#define SF_FLAG_SOURCE_ALT 1u
#define SF_FLAG_KEY_HI 2u
#define SF_FLAG_CARRY_LO 4u
#define SF_FLAG_CARRY_HI 8u
#define SF_FLAG_EMIT 1u
// Object flags (GpuObject::flags): antialiased opacity compensation; colours are linear (encode to sRGB).
#define SF_OBJECT_ANTIALIASED 1u
#define SF_OBJECT_LINEAR_COLOR 2u
#define SF_OBJECT_SORT_DEPTH \
  4u  // GpuObject.sort_depth holds one sort depth per slot (RenderObject::sort_depth)
// The object's SH in the half layout (core/sh.h halfShWords; RenderSettings::half_sh): sh_stride words a
// slot, the DC as 3 floats, coefficients 3.. as half pairs.
#define SF_OBJECT_SH_HALF 8u
#define SF_MIN_SORT_DEPTH 0.2001  // sort depths are raised to this (kMinSortDepth, render/cpu_renderer.h)

// Splat shapes (render/splat_shape.h): a per-slot word, the gaussian where its class bits are 0. Bits 0..1
// the class, 2..3 the polygon's sides - 5 (5..7), 4..11 its rotation in 256ths of a turn. A shaped splat
// keeps the gaussian's support (alpha >= 1/255 of the gaussian, so the tile lists and the raster's cull
// hold) and its falloff, raised to its full opacity within the shape: a regular polygon or disc of the
// gaussian's half-maximum radius in the splat's own whitened frame, with an edge ramp of SF_SHAPE_EDGE.
#define SF_SHAPE_WORD(cls, sides, turn) ((cls) | ((sides)-5u) << 2 | (turn) << 4)  // sides 5..7, turn 0..255
#define SF_SHAPE_GAUSSIAN 0u
#define SF_SHAPE_DISC 1u
#define SF_SHAPE_ROUNDED_HEX 2u
#define SF_SHAPE_POLYGON 3u
#define SF_SHAPE_RADIUS 1.1774100  // sqrt(2 ln 2): where the gaussian falls to half its peak (whitened units)
#define SF_SHAPE_EDGE 0.2          // width of the edge's coverage ramp (whitened units)
#define SF_SHAPE_CORNER 0.35       // the rounded hex's corner radius, a share of SF_SHAPE_RADIUS

#ifndef __cplusplus
layout(buffer_reference, scalar) buffer Floats {
  float v[];
};
layout(buffer_reference, scalar) buffer Uints {
  uint v[];
};
layout(buffer_reference, scalar) buffer Vec2s {
  vec2 v[];
};
layout(buffer_reference, scalar) buffer Vec4s {
  vec4 v[];
};
layout(buffer_reference, scalar) buffer UVec2s {
  uvec2 v[];
};
#endif

// Per-object parameters (one entry per object of the frame), given to preprocess in its push constants.
struct GpuObject {
  float object_to_world[12];  // rows 0..2 of the affine matrix, row-major
  float cam_in_object[4];     // camera centre in object space (xyz), w unused
  uint first_slot;            // first slot of this object's fixed range
  uint count;                 // number of slots
  uint sh_degree;
  uint sh_base;    // slot 0's SH in the frame SH buffer: its 64-byte block (16 floats; 64-bit offsets)
  uint sh_stride;  // floats per slot (3 * (degree + 1)^2)
  uint flags;      // SF_OBJECT_* bits
  float
      screen_filter;  // variance (pixels^2) added to the projected covariance (GaussianCloud::screen_filter)
  uint pad0;
  SF_REF(Floats) sort_depth;  // with SF_OBJECT_SORT_DEPTH: per slot of the object, its sort depth
};

// Everything a frame's passes read: camera, sizes and buffer addresses.
struct GpuFrame {
  float world_to_camera[12];  // rows 0..2, row-major
  float fx, fy, cx, cy;
  float background[4];
  uint width, height, tiles_x, tiles_y;
  uint slot_count;    // total slots of the frame
  uint key_capacity;  // entries allocated for keys / values
  uint has_mesh;      // 1: mesh_color / mesh_depth hold this frame's mesh layer
  uint write_depth;   // 1: the raster also writes depth_out
  uint write_train;  // 1: the raster also writes train_final_t and train_last (training, train/gpu_trainer.h)
  uint chunk_capacity;  // entries of chunks[]: lists of at most SF_SEG_SMALL pairs from the front, the
                        // others' chunks from the back
  uint blend_linear;    // 1: colours blended in linear light (RenderSettings::blend_space), the pixel encoded
                        // after
  // Raster slices (RenderSettings::raster_slice): the most entries of a tile's list one raster workgroup
  // walks per dispatch (0: the whole list). The frame's raster leaves the tiles holding more to the slices,
  // which walk them in pieces of this many (raster.comp).
  uint raster_slice;
  // Splat sink (inputs).
  SF_REF(Floats) positions;    // 3 floats per slot
  SF_REF(Floats) covariances;  // 6 floats per slot (xx xy xz yy yz zz), object space
  SF_REF(Floats) opacities;    // 1 per slot
  SF_REF(Floats) sh;           // per object, see GpuObject.sh_base
  // Preprocess outputs.
  SF_REF(Vec2s) means;          // pixel-index coordinates
  SF_REF(Vec4s) conic_opacity;  // conic a, b, c, opacity
  SF_REF(Vec4s) color_depth;    // rgb, view depth
  SF_REF(UVec2s) rects;         // (x0 | y0 << 16, x1 | y1 << 16)
  SF_REF(Uints) touched;        // per slot: 1 when drawn (it reaches a tile), 0 when not
  SF_REF(Uints)
  tile_bins;  // per tile: its pair count, scanned in place to its first pair, then the emit cursor
  SF_REF(UVec2s)
  chunks;  // (tile, chunk index in the tile) per sort chunk of SF_SEG_BLOCK pairs, in no order (see
           // chunk_capacity)
  // Pairs (ping-pong): in the frame, keys_lo holds depth bits and values slots; keys_hi only serves
  // sortPairs (the radix sort of caller-given pairs).
  SF_REF(Uints) keys_lo;
  SF_REF(Uints) keys_hi;
  SF_REF(Uints) values;
  SF_REF(Uints) keys_lo_alt;
  SF_REF(Uints) keys_hi_alt;
  SF_REF(Uints) values_alt;
  SF_REF(UVec2s) tile_ranges;  // per tile [begin, end) of its pairs
  SF_REF(Vec4s) image;         // width * height RGBA
  SF_REF(Uints) counters;      // see SF_COUNTER_*
  // Mesh layer (render/mesh.h), when has_mesh: display colour and view depth per pixel, depth
  // SF_NO_MESH_DEPTH where no mesh covers the pixel.
  SF_REF(Vec4s) mesh_color;
  SF_REF(Floats) mesh_depth;
  // Depth plane, when write_depth: per pixel (sum of d * alpha * T, final transmittance), a mesh fragment
  // counted as one more layer (ImageRGBA::depth).
  SF_REF(Vec2s) depth_out;
  // Training, when write_train: per pixel the final transmittance and 1 + the position in its tile's list of
  // the last splat blended (0: none), what the backward pass walks back from.
  SF_REF(Floats) train_final_t;
  SF_REF(Uints) train_last;
  // Shape words per slot, in frames where an object gives them (the host then runs the raster's shapes
  // variant, the only reader): zeroed at the frame's start, then written by those objects (uploads, GPU
  // sources).
  SF_REF(Uints) shapes;
  // Raster slices: per pixel of a tile that another slice goes on with, what the image does not hold of its
  // state (the image holds the colour so far and the transmittance): the depth sum's bits and the
  // SF_CARRY_* flags. Allocated once a frame needs slices.
  SF_REF(UVec2s) raster_carry;
  // The rasters' order of tiles: SF_TILE_CLASSES lists of tiles_x * tiles_y entries, list c the tiles of
  // length class c (tile_setup.comp), SF_COUNTER_TILE_CLASSES + c of them.
  SF_REF(Uints) tile_order;
};
#define SF_NO_MESH_DEPTH 3.0e38
#define SF_CARRY_DONE 1u         // the pixel has stopped blending
#define SF_CARRY_MESH_PASSED 2u  // its translucent mesh fragment has been composited

// counters[]: totals and indirect dispatch arguments written on the GPU.
#define SF_COUNTER_KEYS 0             // total (tile, slot) keys this frame (may exceed capacity)
#define SF_COUNTER_OVERFLOW 1         // 1 when keys exceeded key_capacity
#define SF_COUNTER_VISIBLE 4          // slots touching at least one tile
#define SF_COUNTER_ERROR 5            // 1 when a sort workgroup ran with an unexpected subgroup count
#define SF_COUNTER_CHUNKS 6           // sort chunks of the lists longer than SF_SEG_SMALL
#define SF_COUNTER_LONGEST 7          // the longest tile list
#define SF_COUNTER_SEG_DISPATCH 8     // 3 uints: indirect args of their chunk sort (one workgroup per chunk)
#define SF_COUNTER_SMALL_CHUNKS 11    // lists of 2..SF_SEG_SMALL pairs (one chunk each)
#define SF_COUNTER_SMALL_DISPATCH 12  // 3 uints: indirect args of their sort
#define SF_COUNTER_SCAN_TOTAL 20      // scratch element count (GPU sort of caller-given pairs)
#define SF_COUNTER_SLOTS 21           // slot count of the frame
#define SF_COUNTER_TILES 22           // tile count of the frame (the tile scan's element count)
// What the counted raster did (raster.comp's SF_VARIANT_COUNTED), each 64 bits as two words (lo, hi): the
// batch entries its subgroups walked (after each subgroup's cull), the pixel-entries its threads evaluated,
// those they blended, the batches its workgroups staged (every workgroup of a tile walks the tile's list in
// batches of SF_TILE * SF_RASTER_ROWS entries until its pixels are done), and the most one workgroup staged
// (one word).
#define SF_COUNTER_RASTER_ENTRIES 24
#define SF_COUNTER_RASTER_EVALUATED 26
#define SF_COUNTER_RASTER_BLENDED 28
#define SF_COUNTER_RASTER_BATCHES 30
#define SF_COUNTER_RASTER_LONGEST_WALK 16
// The rasters' order of tiles (tile_setup.comp): per class of list length, the tiles listed in it.
#define SF_TILE_CLASSES 16
#define SF_COUNTER_TILE_CLASSES 32  // SF_TILE_CLASSES words
// Sort descriptors (16 words each) written by sort_setup.comp and read by the sort passes.
#define SF_SORT_DESC_N 0                // elements sorted (clamped to the key capacity)
#define SF_SORT_DESC_BLOCKS 1           // radix sort workgroups
#define SF_SORT_DESC_HIST_COUNT 2       // SF_RADIX * blocks * subgroups per workgroup
#define SF_SORT_DESC_ROUNDS 3           // steps per subgroup (keys per sub-block / subgroup size)
#define SF_SORT_DESC_DISPATCH_SORT 4    // 3 uints: indirect args of histogram and scatter
#define SF_SORT_DESC_DISPATCH_HSCAN 8   // 3 uints: indirect args of the histogram scan
#define SF_SORT_DESC_DISPATCH_ITEMS 12  // 3 uints: one thread per element (tile ranges)
#define SF_DESC_KEYS 48                 // sortPairs' radix sort
#define SF_COUNTER_MERGE_DISPATCH \
  64  // 3 uints per merge pass (SF_MAX_MERGE_PASSES): 0 workgroups when no list needs it
#define SF_COUNTER_WORDS 128

#ifndef __cplusplus
layout(buffer_reference, scalar) buffer FrameRef {
  GpuFrame f;
};
// Merge passes a tile list of `len` pairs takes (the C++ twin: mergePasses in vulkan_renderer.cpp).
uint sfMergePasses(uint len) {
  return len <= SF_SEG_BLOCK ? 0u : uint(findMSB((len - 1u) / SF_SEG_BLOCK)) + 1u;
}
#endif

// Push constants of every pass but preprocess (GpuPreprocessPush, below).
struct GpuPush {
  SF_REF(FrameRef) frame;    // the frame's GpuFrame
  SF_REF(Uints) scan_data;   // scan passes: array scanned in place
  SF_REF(Uints) scan_sums;   // scan passes: per-block sums
  SF_REF(Uints) scan_count;  // scan passes: where the element count is read; sort passes: the descriptor
  uint shift;      // radix pass: digit shift; raster: 0 the frame's raster, s + 1 slice s of the deep tiles
  uint flags;      // the pass's SF_FLAG_* bits (each pass reads its own)
  uint subgroups;  // sort passes: subgroups per workgroup the host configured
  uint pad0;
};

// Preprocess's push constants (one dispatch per object): the frame and the object's record itself, which the
// driver then keeps in its constant bank instead of every thread loading it into registers.
struct GpuPreprocessPush {
  SF_REF(FrameRef) frame;
  GpuObject object;
};

#ifdef __cplusplus
static_assert(sizeof(GpuObject) == 104, "GpuObject layout");
static_assert(sizeof(GpuPreprocessPush) == 112 && sizeof(GpuPreprocessPush) <= 128,
              "preprocess push constants: within the 128 bytes every Vulkan device has");
static_assert(sizeof(GpuFrame) == 128 + 28 * 8, "GpuFrame layout");
static_assert(sizeof(GpuPush) == 48, "GpuPush layout");
static_assert(SF_TILE % SF_RASTER_ROWS == 0 && SF_TILE * SF_RASTER_ROWS % 32 == 0,
              "raster workgroups: whole rows of a tile, 32-entry words");
}  // namespace sf::gpu_layout
#endif

#endif
