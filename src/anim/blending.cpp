// Weighted pose blending with masks, additive layers and cross-fades (the approach of ozz-animation's
// BlendingJob: normalised weighted sums, sign-corrected quaternion sums, rest pose below a threshold).
#include "anim/blending.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace sf::anim {

namespace {

float qdot(Quat a, Quat b) {
  return a.w * b.w + a.x * b.x + a.y * b.y + a.z * b.z;
}
Quat qconj(Quat q) {
  return {q.w, -q.x, -q.y, -q.z};
}

std::string checkLayer(const BlendLayer& l, const Skeleton& s, const char* kind, size_t i) {
  std::string name = std::string(kind) + " layer " + std::to_string(i);
  if (l.pose.size() != s.size())
    return name + ": pose holds " + std::to_string(l.pose.size()) + " transforms for " +
           std::to_string(s.size()) + " joints";
  if (!std::isfinite(l.weight) || l.weight < 0) return name + ": weight must be finite and >= 0";
  if (!l.joint_weights.empty() && l.joint_weights.size() != s.size())
    return name + ": mask holds " + std::to_string(l.joint_weights.size()) + " factors for " +
           std::to_string(s.size()) + " joints";
  if (!l.morph_weights.empty() && l.morph_weights.size() != s.weightTotal())
    return name + ": " + std::to_string(l.morph_weights.size()) + " morph weights, the skeleton has " +
           std::to_string(s.weightTotal());
  return {};
}

}  // namespace

std::string BlendingJob::validate() const {
  if (!skeleton) return "no skeleton";
  if (output.size() != skeleton->size())
    return "output holds " + std::to_string(output.size()) + " transforms for " +
           std::to_string(skeleton->size()) + " joints";
  if (output_weights.size() != skeleton->weightTotal())
    return "output_weights holds " + std::to_string(output_weights.size()) + " for " +
           std::to_string(skeleton->weightTotal()) + " morph weights";
  if (!std::isfinite(threshold) || threshold <= 0) return "threshold must be > 0";
  for (size_t i = 0; i < layers.size(); ++i)
    if (std::string why = checkLayer(layers[i], *skeleton, "normal", i); !why.empty()) return why;
  for (size_t i = 0; i < additive.size(); ++i)
    if (std::string why = checkLayer(additive[i], *skeleton, "additive", i); !why.empty()) return why;
  return {};
}

void BlendingJob::run() const {
  if (std::string why = validate(); !why.empty()) throw Error("BlendingJob: " + why);
  const std::vector<Transform>& rest = skeleton->rest();
  for (size_t j = 0; j < output.size(); ++j) {
    Vec3 t, s;
    Quat r{0, 0, 0, 0};
    float total = 0;
    bool have_first = false;
    Quat first;
    auto add = [&](const Transform& x, float w) {
      if (!(w > 0)) return;
      if (!have_first) first = x.rotation, have_first = true;
      float wr = qdot(x.rotation, first) < 0 ? -w : w;
      t = t + w * x.translation;
      s = s + w * x.scale;
      r = {r.w + wr * x.rotation.w, r.x + wr * x.rotation.x, r.y + wr * x.rotation.y,
           r.z + wr * x.rotation.z};
      total += w;
    };
    for (const BlendLayer& l : layers)
      add(l.pose[j], l.weight * (l.joint_weights.empty() ? 1.0f : l.joint_weights[j]));
    if (total < threshold) add(rest[j], threshold - total);
    output[j] = {t / total, normalize(r), s / total};
  }
  // Morph weights: per weight slot of each joint, the same normalised blend.
  for (size_t j = 0; j < skeleton->size(); ++j) {
    const size_t off = skeleton->weightOffset(j), cnt = skeleton->weightCount(j);
    if (cnt == 0) continue;
    float total = 0;
    for (size_t k = 0; k < cnt; ++k) output_weights[off + k] = 0;
    for (const BlendLayer& l : layers) {
      float w = l.weight * (l.joint_weights.empty() ? 1.0f : l.joint_weights[j]);
      if (!(w > 0) || l.morph_weights.empty()) continue;
      for (size_t k = 0; k < cnt; ++k) output_weights[off + k] += w * l.morph_weights[off + k];
      total += w;
    }
    if (total < threshold) {
      float w = threshold - total;
      for (size_t k = 0; k < cnt; ++k) output_weights[off + k] += w * skeleton->restWeights()[off + k];
      total += w;
    }
    for (size_t k = 0; k < cnt; ++k) output_weights[off + k] /= total;
  }
  // Additive layers.
  for (const BlendLayer& l : additive) {
    for (size_t j = 0; j < output.size(); ++j) {
      float w = l.weight * (l.joint_weights.empty() ? 1.0f : l.joint_weights[j]);
      if (!(w > 0)) continue;
      const Transform& d = l.pose[j];
      Transform& o = output[j];
      o.translation = o.translation + w * d.translation;
      Quat dr =
          d.rotation.w < 0 ? Quat{-d.rotation.w, -d.rotation.x, -d.rotation.y, -d.rotation.z} : d.rotation;
      Quat partial = normalize(Quat{1 - w + w * dr.w, w * dr.x, w * dr.y, w * dr.z});
      o.rotation = normalize(o.rotation * partial);
      o.scale = {o.scale.x * (1 - w + w * d.scale.x), o.scale.y * (1 - w + w * d.scale.y),
                 o.scale.z * (1 - w + w * d.scale.z)};
      const size_t off = skeleton->weightOffset(j), cnt = skeleton->weightCount(j);
      if (!l.morph_weights.empty())
        for (size_t k = 0; k < cnt; ++k) output_weights[off + k] += w * l.morph_weights[off + k];
    }
  }
}

void makeAdditive(std::span<const Transform> pose, std::span<const Transform> reference,
                  std::span<Transform> delta) {
  size_t n = std::min({pose.size(), reference.size(), delta.size()});
  for (size_t j = 0; j < n; ++j) {
    const Transform& p = pose[j];
    const Transform& r = reference[j];
    delta[j].translation = p.translation - r.translation;
    delta[j].rotation = normalize(qconj(r.rotation) * p.rotation);
    auto ratio = [](float a, float b) { return b != 0 ? a / b : 0.0f; };
    delta[j].scale = {ratio(p.scale.x, r.scale.x), ratio(p.scale.y, r.scale.y), ratio(p.scale.z, r.scale.z)};
  }
}

float CrossFade::weightOfTarget() const {
  if (!(duration > 0)) return 1;
  float x = std::clamp(elapsed / duration, 0.0f, 1.0f);
  return x * x * (3 - 2 * x);
}

}  // namespace sf::anim
