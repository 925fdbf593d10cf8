// Live splat hulls (docs/architecture.md "Splat hulls", "Hull effects and destruction"): a hull whose slots
// are edited by destruction (hull/destruction.h) and animated by effects, turned into gaussians each frame
// by one pass over its slot range: on the GPU (hull/hull_pass.h, shaders/hull_effects.comp, a pass the hull
// adds to the Vulkan frame before preprocess, writing straight into the object's sink range) or by its CPU
// reference here, with the same maths.
//
// Effects, each a uniform branch of the pass that costs nothing while off (the article's table in
// docs/architecture.md):
// - scatter / implode / assemble: one per-splat random direction played forwards (scatter: the death) or
//   backwards (assemble: the spawn is scatter at 1 - progress); implode pulls towards the centre. Scatter
//   modes radial, ring (in the arena plane), firework (a column), vortex; a kinetic bias along the killing
//   shot.
// - ripple: a narrow front running from a hit point over the hull, moving splats along their normals.
// - charge: panels (chunks, else parts) lift along their normals; light through the gaps masked by 1 - ao.
// - link_decay: time quantised into slots; in each slot a hashed part twitches discretely and fades to
//   cyan; scattered single "broken packets".
// - siphon: a share of the splats spirals into the centre, stretching into a thread; the phase is a fract,
//   so each splat returns to its place without the CPU.
// - part_xform: up to 8 rigid parts by the part channel (pivot, rotation, offset); normals and covariances
//   rotated.
// - the debris pool: knocked splats born white-hot, cooling along the black-body curve in flight; torn
//   chunks tumble as rigid bodies.
// - muzzle flash (script `fire`): the cel light's point flash at a gun's barrel tip for this hull.
// - barrel heat: hull splats within heat_radius of a gun's tip glow along the black body by its heat.
// - engine ignition (script `thrust`): blue emission on the engine parts; ion droplets from the debris pool,
//   blue and fading (SF_HULL_FLAG_ION) instead of cooling along the black body.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "core/math.h"
#include "hull/destruction.h"
#include "hull/hull_lod.h"
#include "hull/hull_render.h"
#include "hull/hull_shared.h"

namespace sf::hull {

using hull_layout::HullParams;

enum class ScatterMode { kRadial = 0, kRing = 1, kFirework = 2, kVortex = 3 };
ScatterMode parseScatterMode(
    const std::string& text);  // "radial", "ring", "firework", "vortex"; throws sf::Error
const char* scatterModeName(ScatterMode mode);

struct PartTransform {
  Vec3 pivot;     // object space
  Quat rotation;  // about the pivot
  Vec3 offset;    // after the rotation
};

// One hull's effect parameters for a frame. Every effect is off at its default.
struct HullEffects {
  float scatter = 0;  // progress 0..1 (0: off)
  ScatterMode scatter_mode = ScatterMode::kRadial;
  Vec3 kill_direction{0, 0, -1};  // direction of travel of the killing shot
  float kill_bias = 0;            // 0..1
  float scatter_distance = 1.2f;  // hull units at progress 1
  float implode = 0;              // 0..1

  float ripple = 0;  // amplitude, hull units (0: off)
  Vec3 ripple_origin;
  float ripple_age = 0;        // seconds since the hit
  float ripple_speed = 1.6f;   // units / s
  float ripple_width = 0.06f;  // units
  float ripple_decay = 1.5f;   // 1 / s

  float charge = 0;           // 0..1
  float charge_lift = 0.05f;  // units at charge 1
  Vec3 charge_color{1.0f, 0.45f, 0.12f};

  float link_decay = 0;  // 0..1
  float decay_slot_seconds = 0.12f;

  float siphon = 0;            // 0..1
  float siphon_share = 0.4f;   // share of the splats taken at siphon 1
  float siphon_period = 1.6f;  // seconds of one fall
  float siphon_turns = 1.5f;

  std::vector<PartTransform> parts;  // part_xform: parts[p] moves part p (at most 8)

  float debris_life = 1.4f;   // seconds (Destruction's debris_life)
  Vec3 gravity{0, -2.0f, 0};  // object space, units / s^2

  // Muzzle flash: while muzzle_flash > 0 this hull's cel light takes its point flash from here (muzzleLight),
  // in place of the scene light's.
  float muzzle_flash = 0;  // strength (0: off)
  Vec3 muzzle_point;       // object space: the firing gun's barrel tip
  Vec3 muzzle_color{1.0f, 0.8f, 0.45f};

  // Barrel heat: per gun (at most SF_HULL_GUNS), its tip (object space) and heat (>= 0; the glow saturates at
  // 1). Hull slots whose rest centre lies within heat_radius of a tip glow (barrelGlow).
  struct BarrelHeat {
    Vec3 tip;
    float heat = 0;
  };
  std::vector<BarrelHeat> barrel_heat;
  float heat_radius = 0.15f;  // hull units

  // Engine ignition: hull slots of the parts in engine_parts (bit p: part p) glow thrust_color * thrust *
  // (0.85 + 0.15 sin(40 t + 2 pi rnd)), a flicker per splat; the ion trail is debris (Destruction::emitIon).
  float thrust = 0;  // 0..1 (0: off)
  uint32_t engine_parts = 0;
  Vec3 thrust_color{0.25f, 0.6f, 1.0f};

  // Runtime LOD set by a hull script's `lod` event (hull/hull_lod.h): while given, it replaces the object's
  // own (scene JSON "lod", --hull-lod). Not an effect: any() ignores it.
  std::optional<HullLod> lod;

  bool any() const;  // an effect is on
};

// The glow a hull splat whose rest centre lies `distance` from a gun's tip gets from the gun's `heat`:
// h = min(heat, 1), w = (1 - distance / radius)^2 inside the radius (0 outside), glow =
// blackBody(1000 + 5500 h) * 1.5 h w: dull red while warm, orange, then white-hot at heat 1. The pass sums it
// over the guns and adds it to the lit colour (as the charge glow), then clamps to [0, 1].
Vec3 barrelGlow(float heat, float distance, float radius);

// The cel light a live hull is drawn with: `light`, whose point flash is replaced, while the hull's muzzle
// flash is on (and the light is), by the muzzle flash at the barrel tip placed in world space
// (object_to_world applied to effects.muzzle_point) with its strength and colour.
HullLight muzzleLight(const HullLight& light, const HullEffects& effects, const Mat4& object_to_world);

// Packs the frame's parameters: effects, the cel light (its direction and flash brought into object space
// through `object_to_world`: rotation, uniform scale, translation), the scene time and the slot count.
HullParams packHullParams(const HullEffects& effects, const HullLight& light, const Mat4& object_to_world,
                          Vec3 centre, double time, uint32_t count);

// The CPU reference of the pass: every slot of `slots` (rest indexed by HullSlot::source). With
// SF_HULL_FX_LOD in params.effects, `lod_rank` (one per rest record, hull/hull_lod.h) leaves out the slots
// whose rest record ranks >= params.lod_count, ion droplets excepted (hull/hull_shared.h
// HullParams::lod_count).
void evaluateHull(const HullParams& params, std::span<const HullRest> rest, std::span<const HullSlot> slots,
                  std::span<const HullBody> bodies, HullOutput& out, std::span<const uint32_t> lod_rank = {});

// The black-body colour of the debris at temperature `kelvin` (Wien's law at 610, 550 and 465 nm,
// normalised to the strongest channel, dimmed below 2000 K towards black at 600 K).
Vec3 blackBody(float kelvin);

// How a live hull draws what no destruction and no effect has touched (scene JSON "liveCore", --live-core;
// docs/architecture.md "Live hulls"):
// - kSorted (the default): every slot through the pass and the global sort. On an H100, 200 live hulls of
//   3,000 splats at 1080p: 0.84 ms a frame, against 134.7 ms with kMesh (the supersampled core mesh of 200
//   hulls, and 21.5 ms of host lighting); docs/benchmarks.md.
// - kMesh: as the baked hull draws it (the article's depth-tested core). Per chunk (the bake's CHNK chunks,
//   the first SF_HULL_MESH_CHUNKS of them), when every hull slot of the chunk is as the undamaged hull has it
//   and no effect on this frame moves or fades any of them: its core rows as the depth-tested core mesh, its
//   shell rows as the baked shell (the bucket's sort depths), lit on the CPU with the pass's own shading; the
//   pass leaves those slots out (SF_HULL_FX_MESH_CORE). Everything else (damaged, cracked or torn chunks,
//   debris, bodies, rows an effect moves or fades) goes through the pass and the global sort.
enum class LiveCore { kMesh, kSorted };
LiveCore parseLiveCore(const std::string& text);  // "mesh" or "sorted"; throws sf::Error naming the choices
const char* liveCoreName(LiveCore mode);

// The ripple moves every slot by a gaussian of its distance from the front, never exactly nothing: a chunk
// whose slots it moves by at most this (hull units; the cube is 1.6) counts as untouched for kMesh.
constexpr float kHullStillDistance = 1e-5f;

// A hull's pass on the GPU (hull/hull_pass.h): buildFrame hands it the frame's parameters and the
// destruction state before the frame records it.
class HullGpuPath : public GpuSplatSource {
 public:
  // `revision` changes whenever the destruction's slots or bodies do (HullInstance::revision).
  virtual void setFrame(const HullParams& params, const Destruction& destruction, uint64_t revision) = 0;
};

// A hull in the frame with live state: its asset, its destruction, this frame's effects, and the object it
// gives the renderer (a cloud of hullSlots() + pool slots, SH degree 0).
class HullInstance {
 public:
  HullInstance(std::shared_ptr<const HullAsset> asset, const DestructionOptions& options = {});
  ~HullInstance();

  const HullAsset& asset() const { return *asset_; }
  Destruction& destruction() { return destruction_; }
  const Destruction& destruction() const { return destruction_; }
  HullEffects effects;
  Vec3 centre() const { return centre_; }
  // The wound shapes' size classes: HullParams::shape_small / shape_large while a wound is open.
  float shapeSmall() const { return shape_small_; }
  float shapeLarge() const { return shape_large_; }
  // Back to the undamaged hull (a fresh Destruction with the same options).
  void resetDestruction();
  // Changes whenever the destruction's slots or bodies do, across resets.
  uint64_t revision() const { return (generation_ << 40) ^ destruction_.revision(); }

  // Draws on the GPU from now on (its frames then carry a GpuSplatSource, Vulkan backend only).
  void setGpuPath(std::shared_ptr<HullGpuPath> path);
  HullGpuPath* gpuPath() const { return gpu_.get(); }

  // This frame's object for a hull placed by `object_to_world` at scene time `time`: with a GPU path the
  // params are handed to it and the object carries it as gpu_source; else the CPU reference fills `out`.
  // Wounded slots (wound edges, crater floors) draw with shapes by size class (HullParams::shape_small).
  // Runtime LOD: `effects.lod` when a script set one, else `lod` (the object's), resolved for `cam` (the
  // distance rule draws every splat without a camera) into out.lod_count; the slot range stays the same.
  // With `meshes` and a camera the untouched chunks are drawn in the baked path (LiveCore::kMesh): the core
  // mesh is appended to `meshes` and the baked shell (always, one row per shell row, those not drawn at
  // opacity NaN) after the hull's object; out.mesh_chunks / mesh_core_rows / mesh_shell_rows count them.
  // Without, every slot goes through the pass (LiveCore::kSorted).
  void buildFrame(const Mat4& object_to_world, double time, const HullLight& light, HullFrame& out,
                  std::vector<RenderObject>& objects, const HullLod& lod = {}, const Camera* cam = nullptr,
                  std::vector<RenderMesh>* meshes = nullptr) const;
  // The live core's split (LiveCore::kMesh), per chunk id (one byte each, chunkCount() of them): the chunks
  // whose hull slots are all as the undamaged hull has them (recomputed when the revision changes), and of
  // those the ones `params` neither moves nor fades (scatter, implode and charge touch every chunk;
  // part_xform, link_decay and siphon the chunks holding a slot they take; the ripple the chunks its front
  // moves by more than kHullStillDistance) and whose id is below SF_HULL_MESH_CHUNKS.
  const std::vector<uint8_t>& intactChunks() const;
  std::vector<uint8_t> meshChunks(const HullParams& params) const;
  uint32_t chunkCount() const { return chunk_count_; }
  uint32_t chunkOf(size_t hull_slot) const { return chunk_of_[hull_slot]; }
  // The importance rank of each rest record (the asset's, hull/hull_lod.h).
  const std::vector<uint32_t>& lodRanks() const { return lod_rank_; }

 private:
  std::shared_ptr<const HullAsset> asset_;
  DestructionOptions options_;
  Destruction destruction_;
  uint64_t generation_ = 0;
  Vec3 centre_;
  GaussianCloud slots_cloud_;  // sizes the object: slots, SH degree 0
  std::shared_ptr<HullGpuPath> gpu_;
  std::vector<uint32_t> lod_rank_;
  float lod_radius_ = 0;
  // The live core: each hull slot's chunk, each chunk's bounding sphere (rest centres), the baked core's
  // octagons, and which chunks are intact (their slots as Destruction::initialSlots) at the revision last
  // looked at.
  std::vector<uint32_t> chunk_of_;
  uint32_t chunk_count_ = 0;
  std::vector<Vec3> core_octagons_;  // 9 vertices per core row, as the baked core places them
  std::vector<Vec3> chunk_centre_;
  std::vector<float> chunk_radius_;
  mutable uint64_t intact_revision_ = ~uint64_t{0};
  mutable std::vector<uint8_t> intact_;
  void buildBakedPart(const HullParams& params, const std::vector<uint8_t>& mesh, const Mat4& object_to_world,
                      const Camera& cam, HullFrame& out) const;
  // Wound shapes: the size classes' thresholds on the rest covariance's trace (the hull splats' 40th and 85th
  // percentiles), and whether any slot is wounded at the revision last looked at (a hull with no wound
  // gives no shapes, so its frame costs what a plain one does).
  float shape_small_ = 0, shape_large_ = 0;
  mutable uint64_t wounds_revision_ = ~uint64_t{0};
  mutable bool wounded_ = false;
  bool wounded() const;
};

}  // namespace sf::hull
