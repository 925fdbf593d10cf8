// Push constants shared by the GPU lift (character/gpu_lift.cpp) and its shaders (character/shaders/
// lift_rays.comp, lift_pass1.comp, lift_pass2.comp); the CPU reference is character/lift.h. Buffers are
// reached through device addresses; every map is channel-major [channels][height][width] float32, as the
// decoders write it. Scalar layout.
#ifndef SF_LIFT_SHARED_H
#define SF_LIFT_SHARED_H

#include "../gpu/interop.h"

#ifdef __cplusplus
namespace sf::lift_layout {
using gpu_interop::uint;
#else
layout(buffer_reference, scalar) buffer LiftFloats {
  float v[];
};
layout(buffer_reference, scalar) buffer LiftWords {
  uint w[];
};
#endif

#define SF_LIFT_WG 128  // threads per workgroup, one texel each

// View rays for the appearance decoder (lift::plueckerRays), and the geometry pass's code copied into the
// appearance decoder's input.
struct LiftRaysPush {
  SF_REF(LiftFloats) geometry;  // [C][H][W], channels 0..2 read
  SF_REF(LiftFloats) view;      // out: [6][H][W]
  SF_REF(LiftWords) code_src;   // the code output (0: none)
  SF_REF(LiftWords) code_dst;   // the appearance decoder's code input
  float eye_x, eye_y, eye_z;    // camera centre, decoder frame
  uint texels;
  uint code_words;
};

// Pass 1 (LiftPass1Job).
struct LiftPass1Push {
  SF_REF(LiftFloats) geometry;
  SF_REF(LiftWords) texel_triangle;  // triangle + 1, 0 uncovered
  SF_REF(LiftFloats) vertices;       // posed, decoder frame, 3 per vertex
  SF_REF(LiftWords) indices;         // 3 per triangle
  SF_REF(LiftFloats) frame;          // out: 9 per texel (k du, k dv, t n)
  SF_REF(LiftWords) triim;           // out: triangle + 1, 0 culled
  SF_REF(LiftFloats) bounds;         // out: 2 per texel (lo, hi)
  uint width, height;
  float scale_mult, thickness, min_scale, max_scale, triangle_scale, max_triangle_distance;
};

// Pass 2 (LiftPass2Job): into the branch's slots of the frame's sink.
struct LiftPass2Push {
  SF_REF(LiftFloats) geometry;
  SF_REF(LiftFloats) color;
  SF_REF(LiftFloats) frame;
  SF_REF(LiftWords) triim;
  SF_REF(LiftFloats) bounds;
  SF_REF(LiftFloats) positions;    // out: 3 per slot
  SF_REF(LiftFloats) covariances;  // out: 6 per slot
  SF_REF(LiftFloats) opacities;    // out: 1 per slot
  SF_REF(LiftFloats) sh;           // out: sh_stride per slot, DC first
  uint texels;
  uint geometry_channels, color_channels, sh_stride;
  float center_x, center_y, center_z, world_scale, default_opacity_logit;
};

#ifdef __cplusplus
static_assert(sizeof(LiftRaysPush) == 4 * 8 + 5 * 4 + 4, "LiftRaysPush layout");
static_assert(sizeof(LiftPass1Push) == 7 * 8 + 8 * 4, "LiftPass1Push layout");
static_assert(sizeof(LiftPass2Push) == 9 * 8 + 9 * 4 + 4, "LiftPass2Push layout");
}  // namespace sf::lift_layout
#endif

#endif
