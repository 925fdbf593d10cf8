// The UV lift of a decoder character branch (docs/formats/character-bundle.md, "The lift"): the texels of
// a geometry decoder's UV position map and an appearance decoder's UV colour map become gaussians, one
// per texel, in two passes. These jobs are the CPU reference of the GPU passes (character/shaders/
// lift_pass1.comp, lift_pass2.comp), which follow them step for step.
//
// Pass 1, per texel: the jacobian of the position map by finite differences (central where both
// neighbours are covered by the UV layout, one-sided at an island's edge), a frame F = [k du, k dv, t n]
// with n the unit normal du x dv and t = thickness * min(|k du|, |k dv|); the texel bound against the
// triangle it came from (its position within max_triangle_distance x the triangle's longest edge of the
// triangle's centroid, in the posed mesh) and its scale clamp [min_scale, min(max_scale, triangle_scale x
// longest edge)]. Validity is folded into `triim`: triangle + 1, or 0 for a culled texel.
//
// Pass 2, per texel: the frame's covariance F F^T eigen-decomposed into R diag(s^2) R^T, s clamped, M =
// R(q) diag(s * world_scale), Sigma = M M^T written as its upper triangle; the centre taken back from the
// decoder frame; colour quantised to u8 (round(255 clamp(rgb))), opacity to u8(255 sigmoid(logit))
// (truncated). A culled texel is written with opacity 0 at its slot: slots are never compacted, so the
// sort's slot addresses stay fixed from frame to frame.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/covariance.h"
#include "core/math.h"

namespace sf::character {

// A branch's lift tuning (scene.json "lift"); every length in decoder-frame units.
struct LiftTuning {
  float scale_mult = 0.6f;             // k: a gaussian's tangent sigma in texel steps
  float thickness = 0.15f;             // t: normal sigma as a share of the smaller tangent sigma
  float min_scale = 1e-4f;             // lower clamp of every sigma
  float max_scale = 0.05f;             // upper clamp of every sigma
  float triangle_scale = 1.5f;         // upper clamp as a multiple of the source triangle's longest edge
  float max_triangle_distance = 3.0f;  // cull beyond this many longest edges from the triangle's centroid
  float default_opacity_logit = 4.0f;  // when neither decoder outputs an opacity channel
  std::string validate() const;        // empty when usable, else why (JSON path given by the caller)
};

// The decoder frame of a branch (scene.json "frame"): v_decoder = (v - center) * scale; back by
// world_scale = 1 / scale.
struct DecoderFrame {
  Vec3 center{0, 0, 0};
  float scale = 1.0f;
  Vec3 toDecoder(Vec3 v) const { return (v - center) * scale; }
  Vec3 fromDecoder(Vec3 v) const { return v * (1.0f / scale) + center; }
  float worldScale() const { return 1.0f / scale; }
};

// Which triangle each texel of a width x height UV layout comes from: texel (row i, column j) has its
// centre at uv ((j + 0.5) / width, (i + 0.5) / height) (v down the rows, as glTF textures); it takes the
// lowest-numbered triangle whose UV triangle contains that centre. Returns triangle + 1 per texel, 0 where
// no triangle covers it. `indices` holds 3 per triangle into `uvs`.
std::vector<uint32_t> rasterizeUvLayout(std::span<const std::array<float, 2>> uvs,
                                        std::span<const uint32_t> indices, int width, int height);

// Pass 1 (see the top of the file).
struct LiftPass1Job {
  int width = 0, height = 0;
  std::span<const float> geometry;           // the position map, channel-major [channels][height][width]
  int geometry_channels = 3;                 // 3 (xyz) or 4 (xyz + opacity logit)
  std::span<const uint32_t> texel_triangle;  // rasterizeUvLayout, width * height
  std::span<const Vec3> vertices;            // the posed mesh in the decoder frame
  std::span<const uint32_t> indices;         // its triangle list
  LiftTuning tuning;
  std::span<std::array<float, 9>> out_frame;   // F column by column (k du, k dv, t n), width * height
  std::span<uint32_t> out_triim;               // triangle + 1, 0 culled
  std::span<std::array<float, 2>> out_bounds;  // scale clamp (lo, hi)

  std::string validate() const;
  void run() const;  // validates, throws sf::Error with the reason
};

// Pass 2 (see the top of the file). Outputs are the frame's splat slots of the branch, in texel order.
struct LiftPass2Job {
  int width = 0, height = 0;
  std::span<const float> geometry;  // as pass 1
  int geometry_channels = 3;
  std::span<const float> color;  // the colour map [channels][height][width]: rgb in [0, 1] (+ opacity logit)
  int color_channels = 3;        // 3 or 4
  std::span<const std::array<float, 9>> frame;
  std::span<const uint32_t> triim;
  std::span<const std::array<float, 2>> bounds;
  DecoderFrame decoder_frame;
  float default_opacity_logit = 4.0f;
  std::span<Vec3> out_positions;  // character frame
  std::span<Cov6> out_covariances;
  std::span<float> out_opacity;             // u8 / 255
  std::span<std::array<float, 3>> out_rgb;  // u8 / 255

  std::string validate() const;
  void run() const;
};

// The opacity a logit is written with: u8(255 sigmoid(x)) (truncated), as a byte.
uint8_t opacityByte(float logit);
// A colour channel as a byte: round(255 clamp(x, 0, 1)).
uint8_t colorByte(float x);

// The appearance decoder's view input for a camera centre `eye` (decoder frame): per texel the Pluecker
// ray from the eye to the texel's position, (d, eye x d) with d the unit direction, channel-major
// [6][height][width]. Texels whose position is not finite (or at the eye) get a zero ray.
void plueckerRays(std::span<const float> geometry, int width, int height, Vec3 eye, std::span<float> out);

}  // namespace sf::character
