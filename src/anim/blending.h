// Pose blending: weighted layers with optional per-joint masks, additive layers, and cross-fades.
//
// Normal layers: per joint, the layer weights (layer weight x mask) are normalised to sum to 1;
// translations and scales are averaged, rotations are summed after flipping each to the hemisphere of the
// first contributing one (q and -q are the same rotation), then normalised. Where the total weight of a
// joint is below `threshold`, the rest pose fills the missing weight, so a joint no layer drives eases to
// rest instead of snapping. Morph weights blend the same way, as plain numbers.
//
// Additive layers (applied after): each holds deltas from a reference pose (makeAdditive builds them);
// with weight w, translation += w * dt, rotation = rotation * nlerp(identity, dr, w),
// scale *= lerp(1, ds, w), morph weights += w * dw.
#pragma once

#include <span>
#include <string>

#include "anim/skeleton.h"

namespace sf::anim {

struct BlendLayer {
  std::span<const Transform> pose;       // skeleton->size() transforms
  float weight = 1;                      // >= 0
  std::span<const float> joint_weights;  // optional mask: one factor per joint in [0, 1] (empty: all 1)
  std::span<const float> morph_weights;  // optional: skeleton->weightTotal() weights (empty: not blended)
};

struct BlendingJob {
  const Skeleton* skeleton = nullptr;  // provides the rest pose and the weight layout
  std::span<const BlendLayer> layers;
  std::span<const BlendLayer> additive;
  float threshold = 0.1f;           // minimum total weight per joint; the rest pose makes up the difference
  std::span<Transform> output;      // skeleton->size()
  std::span<float> output_weights;  // skeleton->weightTotal() (may be empty when that is 0)

  std::string validate() const;
  void run() const;  // validates first; throws sf::Error with the reason when invalid
};

// Additive deltas of `pose` relative to `reference` (both skeleton-sized): dt = t - t_ref,
// dr = conj(r_ref) * r, ds = s / s_ref (0 where s_ref is 0). An additive layer's morph_weights are
// deltas too (w - w_ref), computed by the caller.
void makeAdditive(std::span<const Transform> pose, std::span<const Transform> reference,
                  std::span<Transform> delta);

// Cross-fade from one clip to another over `duration` seconds, as a context object: weightOfTarget()
// rises smoothly (smoothstep) from 0 to 1; use 1 - w and w as the two layers' weights.
struct CrossFade {
  float duration = 0.25f;
  float elapsed = 0;

  void advance(float dt) { elapsed += dt > 0 ? dt : 0; }
  bool done() const { return elapsed >= duration; }
  float weightOfTarget() const;
};

}  // namespace sf::anim
