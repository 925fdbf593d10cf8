// Splat hulls in the frame (docs/architecture.md "Splat hulls"): a loaded SPL2 hull turned, per frame, into
// what both renderers draw, lit with the cel light of the hull article.
//
// - kBaked (the article's mobile path): the core as opaque octagons in the mesh layer (depth-tested, never
//   sorted), the shell as gaussians whose sort depths come from the precomputed order of the heading bucket
//   the camera is in, so the frame's global sort keeps them in exactly that order.
// - kSorted: every splat of the hull as a gaussian in the global sort like any object.
//
// Gamma: hull colours are raw display-encoded values; the cel light works on them as the article tuned it (in
// that space) and the frame's working space is that display space, so the image is encoded once, at the end
// (as for every splat).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "hull/hull_lod.h"
#include "hull/meta.h"
#include "io/spl2.h"
#include "render/camera.h"
#include "render/cpu_renderer.h"
#include "render/mesh.h"

namespace sf::hull {

enum class HullMode { kBaked, kSorted };

// kBaked cores are drawn anti-aliased with this many samples per pixel (RenderMesh::samples; the hull
// article's 8x MSAA, which smooths the seams between octagons and their edges against the shell). A scene
// object's "meshSamples" (SceneObject::mesh_samples, the CLI's --mesh-samples) replaces it; 1 is aliased.
constexpr uint32_t kHullCoreSamples = 8;
HullMode parseHullMode(const std::string& text);  // "baked" or "sorted"; throws sf::Error naming the choices
const char* hullModeName(HullMode mode);

// The cel light (scene JSON "light", docs/formats/scene-json.md). Directions and positions in world space.
struct HullLight {
  bool enabled = true;                  // false: hulls show their raw colours
  Vec3 direction{-0.4f, -1.0f, -0.3f};  // the way the key light travels
  float brightness = 1.0f;              // base_brightness
  float emission = 1.25f;               // gain of the breathing emission
  Vec3 flash_position;                  // a point flash (muzzle, explosion)
  Vec3 flash_color{1.0f, 0.85f, 0.6f};
  float flash_strength = 0;  // 0: no flash
};

// The article's cel shader for one splat, in display space: three bands by N.L with narrow ramps
// (0.62 -> 0.88 over N.L 0.22..0.28, -> 1.12 over 0.52..0.58), breathing emission
// albedo * emis * (0.78 + 0.22 sin(2.3 t)) * gain, and the flash with hard bands (1 above N.L 0.5, 0.45 above
// 0.2) and 1 / (1 + 0.15 d^2) falloff. `emis` in [0, 1]; `normal` unit, world space.
Vec3 celShade(Vec3 albedo, Vec3 normal, Vec3 position, float emis, double time, const HullLight& light);

// A hull as loaded for the frame.
struct HullAsset {
  std::string path;
  Spl2Hull hull;
  GaussianCloud rest;              // spl2ToCloud(hull): core then shell
  float bucket_elevation = 41.0f;  // the belt's middle (meta sidecar), where the bucket cameras sit
  std::vector<HullGun>
      guns;             // barrel tips (meta sidecar, hull/meta.h readHullMetaGuns): script `fire` gun ids
  HullEngines engines;  // engine nozzles and parts (meta sidecar): script `thrust`
  // Runtime LOD (hull/hull_lod.h): each splat's place in the importance order (spl2ToCloud order), and the
  // bounding radius of the distance rule.
  std::vector<uint32_t> lod_rank;
  float lod_radius = 0;

  // Loads a .spl2 and its meta sidecar when present (hull/meta.h hullMetaPath). Throws sf::Error /
  // FormatError.
  static std::shared_ptr<HullAsset> load(const std::string& path);
};

// What a live hull's pass writes per slot (hull/effects.h): object-space centre and covariance, opacity (NaN:
// left out of the frame) and display-space colour.
struct HullOutput {
  std::vector<Vec3> positions;
  std::vector<Cov6> covariances;
  std::vector<float> opacities;
  std::vector<Vec3> colors;
  std::vector<uint32_t> shapes;  // shape words (render/splat_shape.h): wound slots' by size class, else 0
};

// One hull's frame data; owns what its RenderObject and RenderMesh point to.
struct HullFrame {
  GaussianCloud cloud;               // kSorted: every splat; kBaked: the shell; a live hull: its slots (CPU)
  std::vector<float> sort_depth;     // kBaked, a live hull's baked part: the shell's sort depths
  std::vector<Vec3> core_positions;  // kBaked: 9 vertices per core splat (centre, then 8 rim)
  std::vector<std::array<float, 4>> core_colors;
  std::vector<uint32_t> core_indices;  // 8 triangles per core splat
  int bucket = 0;                      // the heading bucket used (kBaked)
  uint32_t lod_count = 0;              // K: the hull splats drawn this frame (hull/hull_lod.h)
  HullOutput live;                     // a live hull (hull/effects.h) on the CPU: its slots this frame
  // A live hull drawn with its core in the mesh (HullInstance::buildFrame given a mesh list): the shell rows
  // of its untouched chunks as the baked shell (one row per shell row, rows not drawn at opacity NaN, with
  // `sort_depth`), and what this frame drew that way: chunks, core octagons and shell rows.
  GaussianCloud baked_shell;
  uint32_t mesh_chunks = 0, mesh_core_rows = 0, mesh_shell_rows = 0;
  // The kept rows (core rows in mesh order, shell rows) and what they were kept for (the live hull, its kept
  // chunks, its LOD count): while those stay, a frame only relights them.
  std::vector<uint32_t> mesh_core_list, mesh_shell_list;
  const void* mesh_owner = nullptr;
  std::vector<uint8_t> mesh_key;
  uint32_t mesh_key_lod = 0;
};

// The baked shell's sort depths for `cam`, one per shell row (the whole shell), from the stored order of the
// heading bucket the camera is in (buildHullFrame's kBaked shell); returns that bucket, or -1 (and no
// depths) for a hull that stores no orders.
int hullShellSortDepths(const HullAsset& asset, const Mat4& object_to_world, const Camera& cam,
                        std::vector<float>& depths);
// Appends core row k of `core` to out's core mesh arrays as the baked core draws it: an octagon (centre + 8
// rim vertices at ax0 cos + ax1 sin) lifted along its normal by its rank, flat `color`.
void appendHullCoreOctagon(const Spl2Block& core, size_t k, Vec3 color, HullFrame& out);
// The mesh of out's core arrays (unlit, kHullCoreSamples samples per pixel) placed by `object_to_world`.
RenderMesh hullCoreMesh(const HullFrame& out, const Mat4& object_to_world);

// Builds the frame data of `asset` placed by `object_to_world` (rotation, uniform scale, translation), seen
// by `cam` at scene time `time`, and appends its render object and mesh. `out` must stay alive and unmoved
// while the frame renders. `lod` (hull/hull_lod.h) draws only the first K splats in importance order: the
// core's octagons of rank < K (a prefix of its rows, each placed exactly as in the full hull) and the shell
// splats of rank < K (kBaked: with the sort depths they have in the full hull's bucket order; kSorted: in
// spl2ToCloud order); K >= the hull's splats is the full hull, bit for bit.
void buildHullFrame(const HullAsset& asset, HullMode mode, const Mat4& object_to_world, const Camera& cam,
                    double time, const HullLight& light, HullFrame& out, std::vector<RenderObject>& objects,
                    std::vector<RenderMesh>& meshes, const HullLod& lod = {});

}  // namespace sf::hull
