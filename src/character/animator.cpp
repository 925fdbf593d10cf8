// Character animator (see animator.h).
#include "character/animator.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "anim/local_to_model.h"
#include "core/error.h"

namespace sf::character {

namespace {

constexpr float kDeg = 3.14159265f / 180.0f;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Quat axisAngle(Vec3 axis, float angle) {
  const float h = 0.5f * angle, s = std::sin(h);
  return Quat{std::cos(h), axis.x * s, axis.y * s, axis.z * s};
}

Quat conj(Quat q) {
  return Quat{q.w, -q.x, -q.y, -q.z};
}

// Rotation of a model matrix with its scale removed.
Quat rotationOf(const Mat4& m) {
  Mat3 r = m.linear();
  for (int c = 0; c < 3; ++c) {
    const float len = std::sqrt(r.m[0][c] * r.m[0][c] + r.m[1][c] * r.m[1][c] + r.m[2][c] * r.m[2][c]);
    if (len > 0)
      for (int k = 0; k < 3; ++k) r.m[k][c] /= len;
  }
  return quatFromRotationMatrix(r);
}

float wrapAngle(float a) {
  while (a > 3.14159265f) a -= 6.2831853f;
  while (a < -3.14159265f) a += 6.2831853f;
  return a;
}

}  // namespace

Animator::Animator(std::shared_ptr<const Character> character) : character_(std::move(character)) {
  const anim::Skeleton& sk = character_->model().skeleton();
  const std::vector<std::string>& names = sk.names();
  for (size_t j = 0; j < names.size() && head_ < 0; ++j)
    if (lower(names[j]) == "head") head_ = static_cast<int>(j);
  for (size_t j = 0; j < names.size() && head_ < 0; ++j) {
    const std::string n = lower(names[j]);
    if (n.find("head") != std::string::npos && n.find("end") == std::string::npos &&
        n.find("top") == std::string::npos && n.find("final") == std::string::npos)
      head_ = static_cast<int>(j);
  }
  if (head_ >= 0)  // the nearest ancestor named like a neck
    for (int p = sk.parents()[static_cast<size_t>(head_)]; p >= 0 && neck_ < 0;
         p = sk.parents()[static_cast<size_t>(p)])
      if (lower(names[static_cast<size_t>(p)]).find("neck") != std::string::npos) neck_ = p;
  for (size_t j = 0; j < names.size(); ++j) {
    const std::string n = lower(names[j]);
    if (n.find("eye") == std::string::npos || n.find("lid") != std::string::npos ||
        n.find("brow") != std::string::npos)
      continue;
    const bool left =
        n.find("left") != std::string::npos || n.ends_with("_l") || n.ends_with(".l") || n.starts_with("l_");
    const bool right =
        n.find("right") != std::string::npos || n.ends_with("_r") || n.ends_with(".r") || n.starts_with("r_");
    if (left && eye_left_ < 0) eye_left_ = static_cast<int>(j);
    if (right && eye_right_ < 0) eye_right_ = static_cast<int>(j);
  }
  if (head_ >= 0) {  // the model faces +z (glTF), so the head's rest forward is +z in model space
    std::vector<Mat4> rest_models(sk.size());
    anim::LocalToModelJob ltm;
    ltm.skeleton = &sk;
    ltm.input = sk.rest();
    ltm.output = rest_models;
    ltm.run();
    head_forward_local_ =
        rotationMatrix(conj(rotationOf(rest_models[static_cast<size_t>(head_)]))) * Vec3{0, 0, 1};
  }
  const int clip =
      character_->defaultClip().empty() ? -1 : character_->model().findClip(character_->defaultClip());
  layers_ = {{clip, 0.0f, 1.0f}};
}

int Animator::findClipContaining(const std::string& word) const {
  const auto& clips = character_->model().clips();  // the skin's own and any retargeted ones
  for (size_t i = 0; i < clips.size(); ++i)
    if (lower(clips[i].name).find(word) != std::string::npos) return static_cast<int>(i);
  return -1;
}

std::vector<std::pair<int, float>> Animator::activeClips() const {
  std::vector<std::pair<int, float>> out;
  for (const Layer& l : layers_) out.push_back({l.clip, l.weight});
  return out;
}

void Animator::play(int clip, float fade) {
  if (clip >= static_cast<int>(character_->model().clips().size()))
    throw Error(character_->source() + ": clip " + std::to_string(clip) + " does not exist");
  fading_from_ = layers_;
  layers_ = {{clip, 0.0f, 1.0f}};
  fade_ = anim::CrossFade{std::max(fade, 0.0f), 0.0f};
  fading_ = fade > 0 && !fading_from_.empty();
  speed_ = -1;
  rate_ = 1;
}

void Animator::setClipWeights(std::vector<std::pair<int, float>> weights) {
  std::vector<Layer> next;
  for (const auto& [clip, w] : weights) {
    if (clip < 0 || clip >= static_cast<int>(character_->model().clips().size()))
      throw Error(character_->source() + ": clip " + std::to_string(clip) + " does not exist");
    if (!(w >= 0)) throw Error(character_->source() + ": clip weights must be >= 0");
    float time = 0;
    for (const Layer& l : layers_)
      if (l.clip == clip) time = l.time;
    next.push_back({clip, time, w});
  }
  layers_ = std::move(next);
  fading_ = false;
  fading_from_.clear();
  speed_ = -1;
  rate_ = 1;
}

void Animator::setVelocity(Vec3 velocity) {
  speed_ = length(velocity);
  const int idle = findClipContaining("idle"), walk = findClipContaining("walk"),
            run = findClipContaining("run");
  if (walk < 0 &&
      run < 0) {  // no locomotion clips: idle if there is one, else the playing clip runs faster or slower
    if (idle >= 0) {
      const float keep = speed_;
      setClipWeights({{idle, 1.0f}});
      speed_ = keep;
      return;
    }
    rate_ = speed_ / 1.4f;
    return;
  }
  rate_ = 1;
  std::vector<std::pair<int, float>> w;
  const float s = speed_;
  if (s <= 1.4f) {
    const float t = s / 1.4f;
    if (idle >= 0 && t < 1) w.push_back({idle, 1 - t});
    w.push_back({walk >= 0 ? walk : run, idle >= 0 ? t : 1.0f});
  } else if (run >= 0 && walk >= 0) {
    const float t = std::min((s - 1.4f) / (3.5f - 1.4f), 1.0f);
    if (t < 1) w.push_back({walk, 1 - t});
    w.push_back({run, t});
  } else {
    w.push_back({walk >= 0 ? walk : run, 1.0f});
  }
  const float keep_speed = speed_;
  setClipWeights(w);
  speed_ = keep_speed;
}

void Animator::setExpression(std::vector<float> morph) {
  if (!morph.empty() && morph.size() != character_->morphTargetCount())
    throw Error(character_->source() + ": face layer needs " +
                std::to_string(character_->morphTargetCount()) + " morph weights, got " +
                std::to_string(morph.size()));
  morph_ = std::move(morph);
}

void Animator::lookAt(std::optional<Vec3> target_model) {
  look_target_ = target_model;
}

void Animator::update(float dt) {
  dt = std::max(dt, 0.0f);
  for (Layer& l : layers_) l.time += dt * rate_;
  for (Layer& l : fading_from_) l.time += dt * rate_;
  if (fading_) {
    fade_.advance(dt);
    if (fade_.done()) fading_ = false, fading_from_.clear();
  }
}

void Animator::aim(GltfModel::Pose& pose, Character::Controls& controls) const {
  aim_ = {};
  if (!look_target_ || head_ < 0) return;
  const GltfModel& model = character_->model();
  const anim::Skeleton& sk = model.skeleton();
  std::vector<Mat4> models(sk.size());
  anim::LocalToModelJob ltm;
  ltm.skeleton = &sk;
  ltm.input = pose.local;
  ltm.output = models;
  ltm.run();
  const Quat mh = rotationOf(models[static_cast<size_t>(head_)]);
  const Vec3 f = normalize(rotationMatrix(mh) * head_forward_local_);
  const Vec3 p = models[static_cast<size_t>(head_)].translation();
  const Vec3 to = *look_target_ - p;
  if (!(length(to) > 1e-6f)) return;
  const Vec3 d = normalize(to);
  const float yaw = wrapAngle(std::atan2(d.x, d.z) - std::atan2(f.x, f.z));
  const float pitch = std::asin(std::clamp(d.y, -1.0f, 1.0f)) - std::asin(std::clamp(f.y, -1.0f, 1.0f));
  const float ay = std::clamp(yaw, -limits_.head_yaw_deg * kDeg, limits_.head_yaw_deg * kDeg);
  const float ap = std::clamp(pitch, -limits_.head_pitch_deg * kDeg, limits_.head_pitch_deg * kDeg);
  aim_.yaw = ay / kDeg, aim_.pitch = ap / kDeg;
  const Vec3 up{0, 1, 0};
  auto worldRotation = [&](float y, float pch) {
    const Quat qy = axisAngle(up, y);
    const Vec3 fy = rotationMatrix(qy) * f;
    const Vec3 axis = cross(fy, up);
    const Quat qp = length(axis) > 1e-6f ? axisAngle(normalize(axis), pch) : Quat{};
    return normalize(qp * qy);
  };
  // Neck and head share the aim; each joint's extra local rotation is conj(m) * R * m for its model rotation
  // m.
  Quat rn{};
  if (neck_ >= 0) {
    const float share = limits_.neck_share;
    rn = worldRotation(ay * share, ap * share);
    const Quat mn = rotationOf(models[static_cast<size_t>(neck_)]);
    controls.joint_rotations.push_back({neck_, normalize(conj(mn) * rn * mn)});
  }
  const Quat rh_total = worldRotation(ay, ap);
  const Quat rh = normalize(rh_total * conj(rn));  // what the head adds on top of the neck
  const Quat mh_after = normalize(rn * mh);
  controls.joint_rotations.push_back({head_, normalize(conj(mh_after) * rh * mh_after)});
  // Residual into the eyes.
  const float ey = std::clamp(yaw - ay, -limits_.eye_yaw_deg * kDeg, limits_.eye_yaw_deg * kDeg);
  const float ep = std::clamp(pitch - ap, -limits_.eye_pitch_deg * kDeg, limits_.eye_pitch_deg * kDeg);
  aim_.eye_yaw = ey / kDeg, aim_.eye_pitch = ep / kDeg;
  if (ey == 0 && ep == 0) return;
  if (eye_left_ >= 0 || eye_right_ >= 0) {
    const Quat re = worldRotation(ey, ep);
    for (int eye : {eye_left_, eye_right_}) {
      if (eye < 0) continue;
      const Quat me = normalize(rh_total * rotationOf(models[static_cast<size_t>(eye)]));
      controls.joint_rotations.push_back({eye, normalize(conj(me) * re * me)});
    }
    return;
  }
  // Gaze morph targets (ARKit names): looking to the character's left (+x when facing +z) turns the left
  // eye out and the right eye in.
  const GltfModel::DrawInfo info = model.drawInfo(static_cast<size_t>(character_->boundDraw()));
  const GltfMesh& mesh = model.document().meshes[static_cast<size_t>(info.mesh)];
  if (character_->morphTargetCount() == 0) return;
  if (controls.morph.empty()) {
    const size_t joint = static_cast<size_t>(sk.findSource(info.node));
    controls.morph.assign(
        pose.weights.begin() + static_cast<std::ptrdiff_t>(sk.weightOffset(joint)),
        pose.weights.begin() + static_cast<std::ptrdiff_t>(sk.weightOffset(joint) + sk.weightCount(joint)));
  }
  auto set = [&](const char* name, float w) {
    auto it = std::find(mesh.target_names.begin(), mesh.target_names.end(), name);
    if (it != mesh.target_names.end() &&
        static_cast<size_t>(it - mesh.target_names.begin()) < controls.morph.size())
      controls.morph[static_cast<size_t>(it - mesh.target_names.begin())] = std::clamp(w, 0.0f, 1.0f);
  };
  const float hy = std::abs(ey) / (limits_.eye_yaw_deg * kDeg),
              hp = std::abs(ep) / (limits_.eye_pitch_deg * kDeg);
  set(ey > 0 ? "eyeLookOutLeft" : "eyeLookInLeft", hy);
  set(ey > 0 ? "eyeLookInRight" : "eyeLookOutRight", hy);
  set(ep > 0 ? "eyeLookUpLeft" : "eyeLookDownLeft", hp);
  set(ep > 0 ? "eyeLookUpRight" : "eyeLookDownRight", hp);
  aim_.eyes_by_morph = true;
}

void Animator::sampleControlled(GltfModel::Pose& pose) const {
  const GltfModel& model = character_->model();
  const anim::Skeleton& sk = model.skeleton();
  const float target = fading_ ? fade_.weightOfTarget() : 1.0f;
  if (!fading_ && layers_.size() == 1 && layers_[0].weight == 1.0f) {
    // One clip at full weight: sampled as it is (a blend of one layer would only renormalise it), so the
    // pose equals the clip's own at that time, as a scene object's clip gives it.
    const Layer& l = layers_[0];
    const float duration = l.clip >= 0 ? model.clips()[static_cast<size_t>(l.clip)].duration : 0.0f;
    model.sample(l.clip, anim::wrapTime(l.time, duration), pose);
  } else {
    model.sample(-1, 0.0f, pose);  // sizes the pose and starts from rest
    std::vector<GltfModel::Pose> sampled;
    std::vector<anim::BlendLayer> blend;
    auto addLayers = [&](const std::vector<Layer>& layers, float scale) {
      for (const Layer& l : layers) {
        if (l.weight * scale <= 0) continue;
        sampled.emplace_back();
        const float duration = l.clip >= 0 ? model.clips()[static_cast<size_t>(l.clip)].duration : 0.0f;
        model.sample(l.clip, anim::wrapTime(l.time, duration), sampled.back());
      }
    };
    addLayers(layers_, target);
    addLayers(fading_from_, fading_ ? 1 - target : 0);
    size_t k = 0;
    auto addBlend = [&](const std::vector<Layer>& layers, float scale) {
      for (const Layer& l : layers) {
        if (l.weight * scale <= 0) continue;
        blend.push_back({sampled[k].local, l.weight * scale, {}, sampled[k].weights});
        ++k;
      }
    };
    addBlend(layers_, target);
    addBlend(fading_from_, fading_ ? 1 - target : 0);
    if (!blend.empty()) {
      anim::BlendingJob job;
      job.skeleton = &sk;
      job.layers = blend;
      job.output = pose.local;
      job.output_weights = pose.weights;
      job.run();
    }
  }
  Character::Controls controls;
  controls.morph = morph_;
  aim(pose, controls);
  character_->applyControls(controls, pose);
}

void Animator::evaluate(Character::Frame& out, bool pose_only) const {
  const GltfModel& model = character_->model();
  sampleControlled(out.pose);
  // Posing for the GPU: the bound mesh is skinned there (when it can be), so the CPU leaves it unposed.
  model.evaluate(out.pose, pose_only && character_->gpuSkinnable() ? character_->boundDraw() : -1);
  if (pose_only) {
    out.positions.clear();
    out.covariances.clear();
  } else {
    character_->deformFrame(out);
  }
}

void Animator::evaluateMeshes(GltfModel::Pose& pose) const {
  sampleControlled(pose);
  character_->model().evaluate(pose);
}

}  // namespace sf::character
