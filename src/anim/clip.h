// Animation clips and the sampling job. A clip is a set of keyframe tracks, each animating one property
// (translation, rotation, scale or morph weights) of one joint. Sampling follows glTF 2.0, Appendix C
// ("Animation sampler interpolation modes"):
//   - STEP: the value of the last key at or before t.
//   - LINEAR: linear interpolation; rotations by shortest-arc spherical linear interpolation, normalised.
//   - CUBICSPLINE: cubic Hermite spline whose in/out tangents are scaled by the key interval
//     (t[k+1] - t[k]); rotations are normalised afterwards.
//   - A time equal to a key time returns that key's stored value exactly (no renormalisation).
//   - Times before the first key give the first key's value, times after the last key the last key's.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "anim/skeleton.h"

namespace sf::anim {

enum class Interpolation { kStep, kLinear, kCubicSpline };
enum class TrackTarget { kTranslation, kRotation, kScale, kWeights };

const char* interpolationName(Interpolation i);
const char* targetName(TrackTarget t);

struct Track {
  int joint = -1;          // joint index in the skeleton the clip was built for
  std::string joint_name;  // that joint's name (used by retargeting and in messages)
  TrackTarget target = TrackTarget::kTranslation;
  Interpolation interpolation = Interpolation::kLinear;
  std::vector<float> times;  // strictly increasing, finite
  // `components` floats per key: 3 (translation, scale), 4 (rotation, (w, x, y, z)) or the joint's morph
  // weight count. CUBICSPLINE stores three groups per key: in-tangent, value, out-tangent.
  std::vector<float> values;
  int components = 0;

  size_t keyCount() const { return times.size(); }
};

// A named time within a clip (an animation event: a foot down, a blow landing), in clip seconds. What fires
// them as playback crosses them: anim/clip_events.h.
struct ClipEvent {
  std::string name;
  float time = 0;  // finite, in [0, duration]
};

struct Clip {
  std::string name;
  float duration = 0;  // the last key time of any track
  std::vector<Track> tracks;
  std::vector<ClipEvent> events;  // in time order (ties keep their declared order)

  // Full check of the clip against a skeleton (once, after building it): joints in range, component counts,
  // value counts, strictly increasing finite times, finite values, events in time order within [0, duration].
  // Empty when fine, otherwise why.
  std::string validate(const Skeleton& skeleton) const;
};

// Samples one track at time t into `out` (track.components floats), by the rules above.
// The track must be valid (Clip::validate); out must hold track.components floats.
void sampleTrack(const Track& track, float t, std::span<float> out);

// Samples a clip into a local pose. Joints no track animates get the skeleton's rest transform, weights
// no track animates the skeleton's rest weights.
struct SamplingJob {
  const Clip* clip = nullptr;          // validated once with Clip::validate(*skeleton)
  const Skeleton* skeleton = nullptr;  // the skeleton the clip was built for
  float time = 0;                      // seconds, finite
  std::span<Transform> output;         // skeleton->size() transforms
  std::span<float> weights;            // skeleton->weightTotal() morph weights (may be empty when that is 0)

  // Cheap per-frame checks (pointers, sizes, joint ranges). Empty when fine, otherwise why.
  std::string validate() const;
  // Validates, then samples. Throws sf::Error with the reason when invalid.
  void run() const;
};

// Playback time helpers. wrapTime maps t into [0, duration) (a looping clip); clampTime into
// [0, duration]. A duration <= 0 gives 0.
float wrapTime(float t, float duration);
float clampTime(float t, float duration);
// The clip time an object plays at scene time `scene_time` (scene JSON "time", "speed", "loop"): time + speed
// x scene_time, wrapped into [0, duration) when it loops, else clamped to [0, duration].
float clipTimeAt(double scene_time, double time, double speed, bool loop, float duration);

// The longest step a frame advances an animation by: a stall longer than this (a hitch, a debugger, a window
// drag) advances only this much, so the pose never jumps (the glTF skinning document's 1/15 s).
inline constexpr float kMaxFrameStep = 1.0f / 15.0f;

// Playback state carried between frames (the sampling job itself is stateless).
struct Playback {
  float time = 0;
  float speed = 1;                 // negative plays backwards
  bool loop = true;                // wrap at the end, else clamp
  float max_step = kMaxFrameStep;  // a frame step longer than this (a hitch) advances only this much

  // Advances by `dt` seconds of wall time (capped at max_step), then wraps or clamps to the duration.
  void advance(float dt, float duration);
};

}  // namespace sf::anim
