// Keyframe sampling after the glTF 2.0 specification, Appendix C (Animation sampler interpolation
// modes): STEP, LINEAR with shortest-arc slerp for rotations, and CUBICSPLINE Hermite splines with
// tangents scaled by the key interval.
#include "anim/clip.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace sf::anim {

const char* interpolationName(Interpolation i) {
  switch (i) {
    case Interpolation::kStep:
      return "STEP";
    case Interpolation::kLinear:
      return "LINEAR";
    case Interpolation::kCubicSpline:
      return "CUBICSPLINE";
  }
  return "?";
}

const char* targetName(TrackTarget t) {
  switch (t) {
    case TrackTarget::kTranslation:
      return "translation";
    case TrackTarget::kRotation:
      return "rotation";
    case TrackTarget::kScale:
      return "scale";
    case TrackTarget::kWeights:
      return "weights";
  }
  return "?";
}

namespace {

size_t expectedComponents(const Track& t, const Skeleton& s) {
  switch (t.target) {
    case TrackTarget::kTranslation:
    case TrackTarget::kScale:
      return 3;
    case TrackTarget::kRotation:
      return 4;
    case TrackTarget::kWeights:
      return s.weightCount(static_cast<size_t>(t.joint));
  }
  return 0;
}

std::string trackName(const Track& t, size_t index) {
  return "track " + std::to_string(index) + " (" + targetName(t.target) + " of joint " +
         std::to_string(t.joint) + (t.joint_name.empty() ? "" : " '" + t.joint_name + "'") + ")";
}

// Spherical linear interpolation on the shorter arc, normalised; (w, x, y, z) in a[0..3], b[0..3].
void slerp(const float* a, const float* b, float u, float* out) {
  float d = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
  float sign = d < 0 ? -1.0f : 1.0f;
  d = std::abs(d);
  float wa, wb;
  if (d > 0.9995f) {  // nearly parallel: normalised lerp is accurate and avoids dividing by sin(~0)
    wa = 1 - u;
    wb = u;
  } else {
    float theta = std::acos(d);
    float s = std::sin(theta);
    wa = std::sin((1 - u) * theta) / s;
    wb = std::sin(u * theta) / s;
  }
  wb *= sign;
  float len2 = 0;
  for (int c = 0; c < 4; ++c) {
    out[c] = wa * a[c] + wb * b[c];
    len2 += out[c] * out[c];
  }
  if (len2 > 0) {
    float inv = 1.0f / std::sqrt(len2);
    for (int c = 0; c < 4; ++c) out[c] *= inv;
  }
}

void normalize4(float* q) {
  float len2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
  if (len2 > 0) {
    float inv = 1.0f / std::sqrt(len2);
    for (int c = 0; c < 4; ++c) q[c] *= inv;
  }
}

}  // namespace

void sampleTrack(const Track& track, float t, std::span<float> out) {
  const size_t comps = static_cast<size_t>(track.components);
  const size_t n = track.times.size();
  const bool cubic = track.interpolation == Interpolation::kCubicSpline;
  // Value of key k (the middle group of a cubic key).
  auto value = [&](size_t k) { return track.values.data() + (cubic ? (3 * k + 1) * comps : k * comps); };
  auto copyKey = [&](size_t k) { std::copy_n(value(k), comps, out.data()); };

  // Segment [k, k + 1] holding t; times outside the keys clamp to the end keys.
  auto upper = std::upper_bound(track.times.begin(), track.times.end(), t);
  if (upper == track.times.begin()) return copyKey(0);
  if (upper == track.times.end()) return copyKey(n - 1);
  const size_t k = static_cast<size_t>(upper - track.times.begin()) - 1;
  const float t0 = track.times[k], t1 = track.times[k + 1];
  if (t == t0 || track.interpolation == Interpolation::kStep) return copyKey(k);
  const float dt = t1 - t0;
  const float u = (t - t0) / dt;

  if (track.interpolation == Interpolation::kLinear) {
    const float* a = value(k);
    const float* b = value(k + 1);
    if (track.target == TrackTarget::kRotation) return slerp(a, b, u, out.data());
    for (size_t c = 0; c < comps; ++c) out[c] = a[c] + (b[c] - a[c]) * u;
    return;
  }
  // Cubic Hermite: p(u) = h00 v_k + h10 dt b_k + h01 v_k+1 + h11 dt a_k+1 (b: out-tangent, a: in-tangent).
  const float u2 = u * u, u3 = u2 * u;
  const float h00 = 2 * u3 - 3 * u2 + 1, h10 = u3 - 2 * u2 + u, h01 = -2 * u3 + 3 * u2, h11 = u3 - u2;
  const float* v0 = value(k);
  const float* b0 = v0 + comps;  // out-tangent of key k
  const float* v1 = value(k + 1);
  const float* a1 = v1 - comps;  // in-tangent of key k + 1
  for (size_t c = 0; c < comps; ++c) out[c] = h00 * v0[c] + h10 * dt * b0[c] + h01 * v1[c] + h11 * dt * a1[c];
  if (track.target == TrackTarget::kRotation) normalize4(out.data());
}

std::string Clip::validate(const Skeleton& skeleton) const {
  if (!std::isfinite(duration) || duration < 0)
    return "duration " + std::to_string(duration) + " is not a finite non-negative number";
  for (size_t i = 0; i < tracks.size(); ++i) {
    const Track& t = tracks[i];
    if (t.joint < 0 || static_cast<size_t>(t.joint) >= skeleton.size())
      return "track " + std::to_string(i) + ": joint " + std::to_string(t.joint) + " out of range (" +
             std::to_string(skeleton.size()) + " joints)";
    size_t comps = expectedComponents(t, skeleton);
    if (comps == 0 || static_cast<size_t>(t.components) != comps)
      return trackName(t, i) + ": " + std::to_string(t.components) + " components, expected " +
             std::to_string(comps);
    if (t.times.empty()) return trackName(t, i) + ": no keys";
    size_t per_key = comps * (t.interpolation == Interpolation::kCubicSpline ? 3 : 1);
    if (t.values.size() != t.times.size() * per_key)
      return trackName(t, i) + ": " + std::to_string(t.values.size()) + " values for " +
             std::to_string(t.times.size()) + " keys of " + std::to_string(per_key);
    for (size_t k = 0; k < t.times.size(); ++k) {
      if (!std::isfinite(t.times[k]))
        return trackName(t, i) + ": key time " + std::to_string(k) + " is not finite";
      if (k > 0 && !(t.times[k] > t.times[k - 1]))
        return trackName(t, i) + ": key times not strictly increasing at key " + std::to_string(k);
    }
    for (float v : t.values)
      if (!std::isfinite(v)) return trackName(t, i) + ": non-finite value";
  }
  for (size_t i = 0; i < events.size(); ++i) {
    const ClipEvent& e = events[i];
    if (!std::isfinite(e.time) || e.time < 0 || e.time > duration)
      return "event " + std::to_string(i) + " '" + e.name + "': time " + std::to_string(e.time) +
             " is outside the clip [0, " + std::to_string(duration) + "]";
    if (i > 0 && e.time < events[i - 1].time)
      return "event " + std::to_string(i) + " '" + e.name + "': events are not in time order";
  }
  return {};
}

std::string SamplingJob::validate() const {
  if (!clip) return "no clip";
  if (!skeleton) return "no skeleton";
  if (!std::isfinite(time)) return "time is not finite";
  if (output.size() != skeleton->size())
    return "output holds " + std::to_string(output.size()) + " transforms, the skeleton has " +
           std::to_string(skeleton->size()) + " joints";
  if (weights.size() != skeleton->weightTotal())
    return "weights holds " + std::to_string(weights.size()) + " floats, the skeleton has " +
           std::to_string(skeleton->weightTotal()) + " morph weights";
  for (size_t i = 0; i < clip->tracks.size(); ++i) {
    const Track& t = clip->tracks[i];
    if (t.joint < 0 || static_cast<size_t>(t.joint) >= skeleton->size())
      return "track " + std::to_string(i) + ": joint " + std::to_string(t.joint) + " out of range";
    size_t comps = expectedComponents(t, *skeleton);
    if (comps == 0 || static_cast<size_t>(t.components) != comps || t.times.empty() ||
        t.values.size() != t.times.size() * comps * (t.interpolation == Interpolation::kCubicSpline ? 3 : 1))
      return trackName(t, i) + ": malformed (run Clip::validate for details)";
  }
  return {};
}

void SamplingJob::run() const {
  if (std::string why = validate(); !why.empty()) throw Error("SamplingJob: " + why);
  std::copy(skeleton->rest().begin(), skeleton->rest().end(), output.begin());
  std::copy(skeleton->restWeights().begin(), skeleton->restWeights().end(), weights.begin());
  float v[4];
  for (const Track& t : clip->tracks) {
    Transform& out = output[static_cast<size_t>(t.joint)];
    switch (t.target) {
      case TrackTarget::kTranslation:
        sampleTrack(t, time, v);
        out.translation = {v[0], v[1], v[2]};
        break;
      case TrackTarget::kScale:
        sampleTrack(t, time, v);
        out.scale = {v[0], v[1], v[2]};
        break;
      case TrackTarget::kRotation:
        sampleTrack(t, time, v);
        out.rotation = {v[0], v[1], v[2], v[3]};
        break;
      case TrackTarget::kWeights:
        sampleTrack(t, time,
                    weights.subspan(skeleton->weightOffset(static_cast<size_t>(t.joint)),
                                    static_cast<size_t>(t.components)));
        break;
    }
  }
}

float wrapTime(float t, float duration) {
  if (!(duration > 0) || !std::isfinite(t)) return 0;
  float r = std::fmod(t, duration);
  if (r < 0) r += duration;
  return r >= duration ? 0 : r;
}

float clampTime(float t, float duration) {
  if (!(duration > 0) || !std::isfinite(t)) return 0;
  return std::clamp(t, 0.0f, duration);
}

float clipTimeAt(double scene_time, double time, double speed, bool loop, float duration) {
  const float t = static_cast<float>(time + speed * scene_time);
  return loop ? wrapTime(t, duration) : std::clamp(t, 0.0f, std::max(duration, 0.0f));
}

void Playback::advance(float dt, float duration) {
  if (!std::isfinite(dt) || dt < 0) dt = 0;
  if (max_step > 0) dt = std::min(dt, max_step);
  time += dt * speed;
  time = loop ? wrapTime(time, duration) : clampTime(time, duration);
}

}  // namespace sf::anim
