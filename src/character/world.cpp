// The character commands (see world.h).
#include "character/world.h"

#include <algorithm>
#include <cmath>

#include "character/mouth.h"
#include "core/error.h"
#include "core/parallel.h"

namespace sf::character {

const char* const kCommands[7] = {"spawn-character", "despawn", "set-character-state", "set-clip-weights", "set-expression", "look-at", "say"};

bool isCommand(const std::string& name) {
  for (const char* c : kCommands)
    if (name == c) return true;
  return false;
}

GaussianCloud makeCapsuleCloud() {
  constexpr int kRings = 24, kSegments = 16;
  constexpr float kRadius = 0.25f, kHeight = 1.8f;
  GaussianCloud cloud;
  cloud.resize(static_cast<size_t>(kRings * kSegments), 0);
  size_t i = 0;
  for (int r = 0; r < kRings; ++r)
    for (int s = 0; s < kSegments; ++s, ++i) {
      // Rings spread over the capsule's profile: cylinder in the middle, hemispheres at the ends.
      const float u = (static_cast<float>(r) + 0.5f) / kRings;  // 0..1 along the height
      const float y = u * kHeight;
      float radius = kRadius;
      if (y < kRadius) radius = std::sqrt(std::max(0.0f, kRadius * kRadius - (kRadius - y) * (kRadius - y)));
      if (y > kHeight - kRadius) radius = std::sqrt(std::max(0.0f, kRadius * kRadius - (y - kHeight + kRadius) * (y - kHeight + kRadius)));
      const float a = 6.2831853f * static_cast<float>(s) / kSegments;
      cloud.positions[i] = {radius * std::cos(a), y, radius * std::sin(a)};
      cloud.scales[i] = {0.05f, 0.05f, 0.05f};
      cloud.opacities[i] = 0.8f;
      const bool stripe = (r / 3) % 2 == 0;
      const float rgb[3] = {stripe ? 1.0f : 0.2f, stripe ? 0.8f : 0.2f, 0.1f};  // amber and dark bands
      for (size_t k = 0; k < 3; ++k) cloud.sh[i * 3 + k] = colorToShDc(rgb[k]);
    }
  return cloud;
}

CharacterWorld::Entity& CharacterWorld::get(const std::string& id) {
  auto it = entities_.find(id);
  if (it == entities_.end()) throw Error("character '" + id + "' does not exist (spawn it first)");
  return it->second;
}

const Animator* CharacterWorld::animator(const std::string& id) const {
  auto it = entities_.find(id);
  return it == entities_.end() ? nullptr : it->second.animator.get();
}

void CharacterWorld::spawn(const std::string& id, const std::string& package_dir, const Mat4& model_to_world, const std::string& clip) {
  if (id.empty()) throw Error("spawn-character: empty id");
  if (entities_.count(id)) throw Error("character '" + id + "' already exists");
  Entity e;
  e.transform = model_to_world;
  if (isCharacterBundle(*directoryResolver(package_dir))) {  // a decoder character: its own state per spawn
    try {
      e.bundle = loadBundleCharacter(package_dir);
      if (!clip.empty()) log_.push_back("warning: character '" + id + "': a decoder character has no body clips; clip '" + clip + "' is ignored");
    } catch (const std::exception& err) {
      log_.push_back("warning: character '" + id + "': " + err.what() + "; showing a placeholder");
      e.placeholder = std::make_shared<GaussianCloud>(makeCapsuleCloud());
    }
    entities_.emplace(id, std::move(e));
    return;
  }
  std::shared_ptr<const Character>& cached = loaded_[package_dir];
  try {
    if (!cached) cached = std::make_shared<Character>(Character::loadPackage(package_dir));
  } catch (const std::exception& err) {  // any load failure keeps a placeholder
    loaded_.erase(package_dir);
    log_.push_back("warning: character '" + id + "': " + err.what() + "; showing a placeholder");
    e.placeholder = std::make_shared<GaussianCloud>(makeCapsuleCloud());
    entities_.emplace(id, std::move(e));
    return;
  }
  int c = -1;
  if (!clip.empty()) {
    c = cached->model().findClip(clip);
    if (c < 0) throw Error("character '" + id + "': no clip '" + clip + "' in " + package_dir + " (" + cached->model().clipList() + ")");
  }
  e.character = cached;
  e.animator = std::make_unique<Animator>(cached);
  if (c >= 0) e.animator->play(c, 0.0f);
  entities_.emplace(id, std::move(e));
}

void CharacterWorld::despawn(const std::string& id) {
  get(id);
  entities_.erase(id);
}

void CharacterWorld::setState(const std::string& id, const std::string& clip, std::optional<Vec3> velocity, float fade) {
  Entity& e = get(id);
  if (e.bundle && !e.missing_reported) {
    log_.push_back("character '" + id + "' is a decoder character: it has no body clips (set-character-state is recorded, nothing plays)");
    e.missing_reported = true;
  }
  if (!e.animator) return;  // a placeholder ignores animation
  if (!clip.empty()) {
    const int c = e.character->model().findClip(clip);
    if (c < 0) throw Error("character '" + id + "': no clip '" + clip + "' (" + e.character->model().clipList() + ")");
    e.animator->play(c, fade);
  }
  if (velocity) e.animator->setVelocity(*velocity);
}

void CharacterWorld::setClipWeights(const std::string& id, const std::vector<std::pair<std::string, float>>& weights) {
  Entity& e = get(id);
  if (!e.animator) return;
  std::vector<std::pair<int, float>> w;
  for (const auto& [name, weight] : weights) {
    const int c = e.character->model().findClip(name);
    if (c < 0) throw Error("character '" + id + "': no clip '" + name + "' (" + e.character->model().clipList() + ")");
    w.push_back({c, weight});
  }
  e.animator->setClipWeights(std::move(w));
}

void CharacterWorld::setExpression(const std::string& id, const Expression& expression) {
  Entity& e = get(id);
  if (e.bundle) {
    std::vector<std::string> missing;
    e.bundle->setExpression(expression, &missing);
    if (!missing.empty() && !e.missing_reported) {
      std::string names;
      for (const std::string& n : missing) names += (names.empty() ? "" : ", ") + n;
      log_.push_back("character '" + id + "' has no rig control for ARKit " + names + " (reported once; those weights are ignored)");
      e.missing_reported = true;
    }
    return;
  }
  if (!e.animator) return;
  std::vector<std::string> missing;
  std::vector<float> morph = e.character->mapExpression(expression, &missing);
  if (!missing.empty() && !e.missing_reported) {
    std::string names;
    for (const std::string& n : missing) names += (names.empty() ? "" : ", ") + n;
    log_.push_back("character '" + id + "' has no morph target for ARKit " + names + " (reported once; those weights are ignored)");
    e.missing_reported = true;
  }
  e.animator->setExpression(std::move(morph));
}

void CharacterWorld::lookAt(const std::string& id, std::optional<Vec3> target_world) {
  Entity& e = get(id);
  if (e.bundle) {  // the gaze of both eyes towards the target, from the first branch's frame centre
    if (!target_world) return e.bundle->setGaze({0, 0, 0, 0});
    const Vec3 d = transformPoint(inverseAffine(e.transform), *target_world) - e.bundle->bundle().branches.front().frame.center;
    constexpr float kLimit = 0.6f;  // radians: eyes turn no further
    const float yaw = std::clamp(std::atan2(d.x, d.z), -kLimit, kLimit);
    const float pitch = std::clamp(-std::atan2(d.y, std::hypot(d.x, d.z)), -kLimit, kLimit);  // positive-down
    return e.bundle->setGaze({pitch, yaw, pitch, yaw});
  }
  if (!e.animator) return;
  if (!target_world) return e.animator->lookAt(std::nullopt);
  e.animator->lookAt(transformPoint(inverseAffine(e.transform), *target_world));
}

void CharacterWorld::say(const std::string& id, const std::string& text) {
  get(id);
  log_.push_back(id + " says: " + text);
}

void CharacterWorld::execute(const ScriptCommand& c) {
  try {
    if (c.command == "spawn-character") spawn(c.id, c.package, c.transform, c.clip);
    else if (c.command == "despawn") despawn(c.id);
    else if (c.command == "set-character-state") setState(c.id, c.clip, c.velocity, c.fade);
    else if (c.command == "set-clip-weights") setClipWeights(c.id, c.clip_weights);
    else if (c.command == "set-expression") {
      Expression e = c.expression;
      if (!c.named.empty()) {  // {"jawOpen": 0.8, ...} -> the 52-vector
        e.space = "arkit52";
        e.weights.assign(kArkit52.size(), 0.0f);
        for (const auto& [name, w] : c.named) {
          const int a = arkitIndex(name);
          if (a < 0) throw Error("'" + name + "' is not one of the 52 ARKit names");
          e.weights[static_cast<size_t>(a)] = w;
        }
      }
      setExpression(c.id, e);
    } else if (c.command == "look-at") lookAt(c.id, c.target);
    else if (c.command == "say") say(c.id, c.text);
    else throw Error("unknown command '" + c.command + "'");
  } catch (const Error& e) {
    throw Error(c.where + " (" + c.command + "): " + e.what());
  }
}

void CharacterWorld::update(float dt) {
  for (auto& [id, e] : entities_)
    if (e.animator) e.animator->update(dt);
}

void CharacterWorld::advanceTo(double time, const std::vector<ScriptCommand>& script) {
  // Commands run at their own time: animation advances to each command's time first.
  while (next_command_ < script.size() && script[next_command_].t <= time) {
    const ScriptCommand& c = script[next_command_++];
    if (c.t > time_) update(static_cast<float>(c.t - time_)), time_ = c.t;
    execute(c);
  }
  if (time > time_) update(static_cast<float>(time - time_)), time_ = time;
}

bool poseCharacterFrame(const Character& ch, bool gpu_deform, Character::Frame& f, const std::function<void(bool pose_only)>& pose) {
  const Character::PartSwitches& on = ch.enabledParts();
  bool gpu = gpu_deform && !((ch.mouthHidden() && on.mouth_hidden) || (ch.teeth() && on.teeth));
  pose(gpu);
  if (gpu && ch.partsActive(f)) gpu = false, pose(false);
  if (gpu) f.opacities.clear(), f.parts.clear();
  return gpu;
}

void appendCharacterFrame(const Character& ch, Character::Frame& f, const Mat4& to_world, const Camera* cam, const SplatDeformSource* deform,
                          std::vector<RenderObject>& objects, std::vector<RenderMesh>& meshes) {
  RenderObject ro{&ch.drawnCloud(f), to_world, f.positions, f.covariances};
  ro.dynamic = !f.opacities.empty();  // this frame's opacities, in the frame's own copy of the cloud
  ro.deform = deform;
  objects.push_back(ro);
  for (Character::Part& p : f.parts) {  // teeth, corrective points: CPU-deformed, new values every frame
    if (p.name == "teeth") {
      if (cam) applyTeethRim(p, *cam, to_world);  // the soft rim needs the view
      for (RenderMesh& m : mouthRenderMeshes(p, to_world)) meshes.push_back(m);
    }
    RenderObject po{&Character::drawnCloud(p), to_world, p.positions, p.covariances};
    po.dynamic = true;
    objects.push_back(po);
  }
}

std::vector<RenderObject> CharacterWorld::renderObjects(bool gpu_deform, std::vector<RenderMesh>* meshes_out) {
  frames_.resize(entities_.size());
  deforms_.assign(entities_.size(), SplatDeformSource{});
  // Characters pose independently: one task each (sampling, blending, look-at, skinning, CPU deform).
  std::vector<Entity*> list;
  for (auto& [id, e] : entities_) list.push_back(&e);
  // A frame the optional parts change (Character::partsActive) is deformed on the CPU for both backends:
  // its overrides, opacities and extra parts are drawn as computed by deformFrame.
  parallelFor(list.size(), [&](size_t k) {
    const Animator* a = list[k]->animator.get();
    if (!a) return;
    Character::Frame& f = frames_[k];
    const Character& ch = a->character();
    poseCharacterFrame(ch, gpu_deform, f, [&](bool pose_only) { a->evaluate(f, pose_only); });
  });
  std::vector<RenderObject> out;
  std::vector<RenderMesh> meshes;
  size_t i = 0;
  for (auto& [id, e] : entities_) {
    if (e.bundle) {  // a decoder character: its passes for this camera (seen from its own frame)
      Camera local = camera_ ? *camera_ : lookAtCamera({0, 1.6f, 2.5f}, {0, 1.6f, 0}, {0, 1, 0}, 40, 640, 480);
      local.world_to_camera = local.world_to_camera * e.transform;
      try {
        e.bundle->update(local);
      } catch (const std::exception& err) {  // a pass that fails: the placeholder from now on, said once
        log_.push_back("warning: character '" + id + "': " + err.what() + "; showing a placeholder");
        e.bundle.reset();
        e.placeholder = std::make_shared<GaussianCloud>(makeCapsuleCloud());
        out.push_back({e.placeholder.get(), e.transform, {}, {}});
        ++i;
        continue;
      }
      RenderObject ro{&e.bundle->cloud(), e.transform};
      if (const BundleGpuPath* g = e.bundle->gpuPath()) {
        ro.gpu_source = &g->source();
      } else {
        ro.positions = e.bundle->cloud().positions;
        ro.covariances = e.bundle->covariances();
        ro.dynamic = true;
      }
      out.push_back(ro);
      ++i;
      continue;
    }
    if (!e.animator) {
      out.push_back({e.placeholder.get(), e.transform, {}, {}});
      ++i;
      continue;
    }
    Character::Frame& f = frames_[i];
    const Character& ch = *e.character;
    const Mat4 to_world = e.transform * ch.model().meshToModel(f.pose, static_cast<size_t>(ch.boundDraw()));
    const bool gpu = gpu_deform && f.positions.empty();
    if (gpu) deforms_[i] = ch.deformSource(f, ch.gpuSkinnable());
    appendCharacterFrame(ch, f, to_world, camera_ ? &*camera_ : nullptr, gpu ? &deforms_[i] : nullptr, out, meshes);
    ++i;
  }
  if (meshes_out) *meshes_out = std::move(meshes);
  return out;
}

std::vector<BundleCharacter*> CharacterWorld::bundles() {
  std::vector<BundleCharacter*> out;
  for (auto& [id, e] : entities_)
    if (e.bundle) out.push_back(e.bundle.get());
  return out;
}

std::vector<std::string> CharacterWorld::takeLog() {
  std::vector<std::string> out;
  out.swap(log_);
  return out;
}

}  // namespace sf::character
