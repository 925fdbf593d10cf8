// Layouts shared by a splat hull's live state (hull/effects.h, hull/destruction.h), its GPU pass
// (hull/hull_pass.cpp) and the pass's shader (hull/shaders/hull_effects.comp): per-slot records, rigid chunk
// bodies, the frame's effect parameters and the push constants. Scalar layout on the GPU.
//
// A hull instance has n + pool slots: slots [0, n) are the hull's splats in spl2ToCloud order (core then
// shell) and never move in memory; slots [n, n + pool) are the debris pool (knocked splats in flight, chunk
// bodies' copies). Each slot takes its shape (covariance, normal, baked channels) from a rest record
// (`source`) and its state (where it sits, its colour, its kind) from its HullSlot, which the CPU destruction
// module edits; the effects pass turns both into the slot's gaussian each frame.
#ifndef SF_HULL_SHARED_H
#define SF_HULL_SHARED_H

#include "../gpu/interop.h"

#ifdef __cplusplus
namespace sf::hull_layout {
using gpu_interop::uint;
#endif

#define SF_HULL_WG 128            // threads per workgroup, one slot each
#define SF_HULL_PARTS 8           // part_xform: rigid parts by the part channel (attrs.y / 16)
#define SF_HULL_MAX_LEVEL 4       // onion layers below the skin: 1 dark backing, 2 ribs, 3 innards, 4 core
#define SF_HULL_GUNS 8            // barrel heat: guns whose tips glow (HullParams.gun_heat)
#define SF_HULL_MESH_CHUNKS 256u  // the live core: chunks the mesh mask holds (HullParams.mesh_chunks)

// HullSlot.flags
#define SF_HULL_LEVEL_MASK 0xFu  // bits 0..3: onion level, 0 = skin
#define SF_HULL_KIND_SHIFT 4u    // bits 4..7: the kind
#define SF_HULL_KIND_MASK 0xF0u
#define SF_HULL_KIND_SKIN 0u         // a hull slot at (or healing back to) its skin
#define SF_HULL_KIND_LAYER 1u        // a hull slot reborn one or more layers deeper (crater floor, onion)
#define SF_HULL_KIND_DEBRIS 2u       // a pool slot in flight: born white-hot, cooling along the black body
#define SF_HULL_KIND_BODY 3u         // a pool slot riding a torn-off chunk's rigid body
#define SF_HULL_KIND_OFF 4u          // a pool slot not in use: left out of the frame
#define SF_HULL_FLAG_HOT 0x100u      // smouldering hot point (pulses orange)
#define SF_HULL_FLAG_SPARK 0x200u    // rare cold spark (blinks blue-white)
#define SF_HULL_FLAG_CRACKED 0x400u  // on a crack line (kept dark; the chunk is weakened)
#define SF_HULL_FLAG_WOUND 0x800u    // on a wound's edge or a crater floor (charred)
#define SF_HULL_FLAG_ION 0x1000u  // a debris slot of an engine's ion trail (blue, fading; not the black body)

// Effects active this frame (HullParams.effects): each is a uniform branch, off by default.
#define SF_HULL_FX_SCATTER 1u
#define SF_HULL_FX_RIPPLE 2u
#define SF_HULL_FX_CHARGE 4u
#define SF_HULL_FX_LINK_DECAY 8u
#define SF_HULL_FX_SIPHON 16u
#define SF_HULL_FX_PART_XFORM 32u
#define SF_HULL_FX_LIGHT 64u        // the cel light (else raw colours)
#define SF_HULL_FX_FLASH 128u       // the point flash of the cel light
#define SF_HULL_FX_HEAT 256u        // barrel heat: hull splats near a hot gun's tip glow
#define SF_HULL_FX_THRUST 512u      // engine ignition: the engine parts' blue emission
#define SF_HULL_FX_LOD 1024u        // runtime LOD: slots whose rest record ranks >= lod_count are left out
#define SF_HULL_FX_MESH_CORE 2048u  // the live core: hull slots of the chunks in mesh_chunks are left out

// Scatter modes (HullParams.scatter_mode)
#define SF_HULL_SCATTER_RADIAL 0u
#define SF_HULL_SCATTER_RING 1u
#define SF_HULL_SCATTER_FIREWORK 2u
#define SF_HULL_SCATTER_VORTEX 3u

// What a slot takes from the hull file, fixed for the hull's life (one per hull splat; pool slots point at
// the hull splat they were knocked from). 64 bytes.
struct HullRest {
  float position[3];  // object space (the hull frame)
  float ao;           // attrs.x / 255: 1 = open, 0 = occluded
  float normal[3];    // unit, outward
  float emission;     // (attrs.y % 16) / 15
  float cov[6];       // xx xy xz yy yz zz, object space (spl2ToCloud's gaussian)
  uint channels;      // part (bits 0..7) | material (8..15) | chunk (16..31)
  uint seed;          // attrs.w: the per-splat random byte
};

// A slot's live state, written by the CPU (destruction, heal, debris). 64 bytes.
struct HullSlot {
  float position[3];  // object space: where the slot sits (skin, a deeper layer, or a debris / body origin)
  uint flags;         // level | kind << 4 | SF_HULL_FLAG_*
  float color[3];     // albedo, display-encoded (sRGB) RGB
  float opacity;      // the gaussian's opacity
  float velocity[3];  // debris: object-space velocity at birth (units / s)
  float birth;        // debris, body: scene time of birth (seconds)
  uint source;        // the rest record this slot takes its shape from
  uint body;          // kind body: the chunk body it rides
  float normal_sign;  // +1, or -1 for the inner copy of a torn chunk (its normal points inward)
  float size;         // covariance scale (1: the rest shape)
};

// A torn-off chunk flying as a rigid body. 48 bytes.
struct HullBody {
  float pivot[3];  // object space: the chunk's centroid at birth
  float birth;
  float velocity[3];
  float life;     // seconds until it is gone (fades over its last quarter)
  float spin[3];  // rotation axis * radians per second
  float pad0;
};

// The frame's parameters of one hull (effects, light), object space. Scalar layout.
struct HullParams {
  uint effects;     // SF_HULL_FX_* bits
  uint count;       // slots
  uint part_count;  // part_xform: parts used (<= SF_HULL_PARTS)
  uint scatter_mode;
  float time;           // scene time, seconds
  float scale;          // object-to-world uniform scale (flash falloff is in world units)
  float brightness;     // cel light: base brightness
  float emission_gain;  // cel light: gain of the breathing emission
  float to_light[3];    // unit, object space: towards the key light
  float flash_strength;
  float flash_position[3];
  float pad0;
  float flash_color[3];
  float pad1;
  float centre[3];          // the hull's centre (mean of the rest centres): scatter, implode, siphon
  float scatter;            // scatter progress 0..1 (assemble: 1 - progress; implode: its own amount below)
  float kill_direction[3];  // the killing shot's direction of travel (unit)
  float kill_bias;          // how much of it the scatter directions take (0..1)
  float scatter_distance;   // how far a splat flies at progress 1 (hull units)
  float implode;            // implode progress 0..1
  float ripple_amplitude;
  float ripple_age;  // seconds since the hit
  float ripple_origin[3];
  float ripple_speed;  // front speed, units / s
  float ripple_width;  // front half-width, units
  float ripple_decay;  // 1 / s
  float charge;        // 0..1
  float charge_lift;   // units at charge 1
  float charge_color[3];
  float link_decay;  // 0..1
  float decay_slot_seconds;
  float siphon;  // 0..1: share of splats taken = siphon * siphon_share
  float siphon_share;
  float siphon_period;  // seconds of one fall to the centre
  float siphon_turns;   // turns of the spiral over one fall
  float debris_life;    // seconds a debris splat flies and cools
  float gravity[3];     // object space, units / s^2
  float pad2;
  float part_pivot[SF_HULL_PARTS][4];   // xyz, w unused
  float part_quat[SF_HULL_PARTS][4];    // x y z w
  float part_offset[SF_HULL_PARTS][4];  // xyz, w unused
  // Wound shapes (render/splat_shape.h) by size class: a skin or layer slot flagged SF_HULL_FLAG_WOUND draws
  // as a disc where its rest covariance's trace is at most shape_small (the model's 40th percentile), a 5- to
  // 7-gon where at least shape_large (85th), a rounded hex between; shape_large 0: every slot a gaussian.
  float shape_small;
  float shape_large;
  // Barrel heat (script `fire`, hull/hull_script.h): hull slots whose rest centre lies within heat_radius of
  // a gun's tip glow along the black body by that gun's heat (hull/effects.h barrelGlow).
  uint gun_count;                   // guns in gun_heat (<= SF_HULL_GUNS)
  float heat_radius;                // object space (hull units)
  float gun_heat[SF_HULL_GUNS][4];  // the tip xyz (object space), w: the gun's heat (>= 0)
  // Engine ignition (script `thrust`): hull slots of the parts in engine_parts (bit p: part p) glow
  // thrust_color * thrust * (0.85 + 0.15 sin(40 t + 2 pi rnd)) (hull/effects.h).
  uint engine_parts;
  float thrust;  // 0..1
  float thrust_color[3];
  // Runtime LOD (hull/hull_lod.h; SF_HULL_FX_LOD, set only when K is below the hull's splats): a slot whose
  // rest record's importance rank (HullPush.lod_rank) is >= lod_count is left out (opacity NaN): the hull
  // splat, the layers it is reborn as, its debris and its chunk body's copies alike; ion droplets (which take
  // a splat's shape, not its place) stay.
  uint lod_count;
  // The live core (hull/effects.h HullInstance::buildFrame given a mesh list; SF_HULL_FX_MESH_CORE): a hull
  // slot (slot index < mesh_slots, the hull's n) whose rest record's chunk c has bit c of mesh_chunks set is
  // left out (opacity NaN): the frame draws it in the baked path instead (its core rows as the depth-tested
  // core mesh, its shell rows as the baked shell). Only chunks whose hull slots are all as the undamaged hull
  // has them and which no effect moves or fades this frame are set.
  uint mesh_slots;
  uint mesh_chunks[SF_HULL_MESH_CHUNKS / 32];
};

#ifndef __cplusplus
layout(buffer_reference, scalar) readonly buffer HullRestRef {
  HullRest r[];
};
layout(buffer_reference, scalar) readonly buffer HullSlotRef {
  HullSlot s[];
};
layout(buffer_reference, scalar) readonly buffer HullBodyRef {
  HullBody b[];
};
layout(buffer_reference, scalar) readonly buffer HullParamsRef {
  HullParams p;
};
layout(buffer_reference, scalar) writeonly buffer HullFloats {
  float v[];
};
layout(buffer_reference, scalar) writeonly buffer HullUints {
  uint v[];
};
layout(buffer_reference, scalar) readonly buffer HullRanks {
  uint v[];
};
#endif

struct HullPush {
  SF_REF(HullRestRef) rest;
  SF_REF(HullSlotRef) slots;
  SF_REF(HullBodyRef) bodies;
  SF_REF(HullParamsRef) params;
  SF_REF(HullFloats) out_positions;    // 3 per slot
  SF_REF(HullFloats) out_covariances;  // 6 per slot
  SF_REF(HullFloats) out_opacities;    // 1 per slot (NaN: left out)
  SF_REF(HullFloats) out_sh;           // sh_stride per slot, DC first
  SF_REF(HullUints) out_shapes;        // 1 shape word per slot (SF_SHAPE_*, render/gpu_shared.h)
  SF_REF(HullRanks) lod_rank;          // 1 per rest record: its place in the importance order (runtime LOD)
  uint count;
  uint sh_stride;
};

#ifdef __cplusplus
static_assert(sizeof(HullRest) == 64, "HullRest layout");
static_assert(sizeof(HullSlot) == 64, "HullSlot layout");
static_assert(sizeof(HullBody) == 48, "HullBody layout");
static_assert(sizeof(HullPush) == 10 * 8 + 8, "HullPush layout");
}  // namespace sf::hull_layout
#endif

#endif
