// The character commands (see world.h).
#include "character/world.h"

#include <algorithm>
#include <cmath>

#include "character/gnm_pack.h"
#include "character/mouth.h"
#include "character/rig.h"
#include "core/covariance.h"
#include "core/error.h"
#include "core/parallel.h"
#include "io/file.h"

namespace sf::character {

const char* const kCommands[8] = {
    "spawn-character", "despawn", "set-character-state", "set-clip-weights", "set-expression", "set-controls",
    "look-at",         "say"};

// A GNM pack's rig preview (docs/formats/gnm-pack.md, "Rig preview"): one small gaussian per vertex of the
// pack's mesh at the rig's posed vertices, one rig (and so one control vector) per spawn over a shared pack.
struct GnmPreview {
  explicit GnmPreview(std::shared_ptr<const GnmPack> pack) : rig(std::move(pack)) {}
  GnmRig rig;
  GaussianCloud cloud;            // colours (joint tint), opacity and size; positions at zero controls
  std::vector<Vec3> positions;    // the posed vertices (output space: the body's bind space)
  std::vector<Cov6> covariances;  // sigma^2 I for every vertex
  std::vector<float> controls;    // set-expression / set-controls: coefficients, then the four gaze angles
  std::array<float, 4> look{};    // look-at's gaze, added to the gaze controls
  bool posed = false;             // positions are those of the rig's controls
};

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
      if (y > kHeight - kRadius)
        radius =
            std::sqrt(std::max(0.0f, kRadius * kRadius - (y - kHeight + kRadius) * (y - kHeight + kRadius)));
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

std::string CharacterWorld::kind(const std::string& id) const {
  auto it = entities_.find(id);
  if (it == entities_.end()) return {};
  const Entity& e = it->second;
  return e.gnm ? "gnm" : e.bundle ? "bundle" : e.meshes ? "gltf" : e.character ? "package" : "placeholder";
}

const GnmRig* CharacterWorld::gnmRig(const std::string& id) const {
  auto it = entities_.find(id);
  return it == entities_.end() || !it->second.gnm ? nullptr : &it->second.gnm->rig;
}

namespace {

constexpr float kGnmPreviewSigma = 0.002f;  // metres: the document's rig preview size
constexpr float kGazeLimit = 0.6f;          // radians: eyes turn no further

// The rig's controls for a preview's state: the expression / raw controls with look-at's gaze added.
void applyGnmControls(GnmPreview& g) {
  std::vector<float> c = g.controls;
  const size_t k = g.rig.pack().basisCount();
  for (size_t i = 0; i < kGnmGazeControls; ++i) c[k + i] += g.look[i];
  g.rig.setControls(c);  // throws for a value that is not finite (the previous controls are kept)
  g.posed = false;
}

// "a, b, c" (at most 20 names, then how many more), for messages.
std::string nameList(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 20; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > 20) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s.empty() ? "none" : s;
}

}  // namespace

void CharacterWorld::spawn(const std::string& id, const std::string& package, const Mat4& model_to_world,
                           const std::string& clip) {
  if (id.empty()) throw Error("spawn-character: empty id");
  if (entities_.count(id)) throw Error("character '" + id + "' already exists");
  Entity e;
  e.transform = model_to_world;
  // Files that fail to load: the placeholder capsule, with one warning naming the file and the cause.
  auto placeholder = [&](const std::string& why) {
    log_.push_back("warning: character '" + id + "': " + why + "; showing a placeholder");
    e.placeholder = std::make_shared<GaussianCloud>(makeCapsuleCloud());
    entities_.emplace(id, std::move(e));
  };
  const std::string ext = fileExtension(package);
  if (ext == ".sfgnm") {  // a GNM pack: its rig preview, driven by expressions, set-controls and look-at
    std::shared_ptr<const GnmPack>& pack = packs_[package];
    std::shared_ptr<GnmPreview> g;
    try {
      if (!pack) pack = std::make_shared<const GnmPack>(loadGnmPack(package));
      g = std::make_shared<GnmPreview>(pack);
      g->cloud = rigPreviewCloud(g->rig, "joint", kGnmPreviewSigma);
    } catch (const std::exception& err) {
      packs_.erase(package);
      return placeholder(err.what());
    }
    if (!clip.empty())
      log_.push_back("warning: character '" + id + "': a GNM pack's rig preview has no body clips; clip '" +
                     clip + "' is ignored");
    g->controls.assign(g->rig.controlNames().size(), 0.0f);
    g->covariances.assign(
        g->cloud.size(),
        covarianceFromScaleRotation({kGnmPreviewSigma, kGnmPreviewSigma, kGnmPreviewSigma}, Quat{}));
    e.gnm = std::move(g);
    entities_.emplace(id, std::move(e));
    return;
  }
  const bool gltf = ext == ".gltf" || ext == ".glb";
  if (!gltf) {
    std::shared_ptr<BundleResolver> files = directoryResolver(package);
    if (isCharacterBundle(*files)) {  // a decoder character: its own state per spawn
      std::string refused;            // an orl rig is refused with its reason, not drawn as a placeholder
      try {
        refused = orlRefusal(loadCharacterBundle(files));
      } catch (const std::exception&) {  // a bundle that does not parse: the placeholder below says why
      }
      if (!refused.empty()) throw Error("character '" + id + "': " + refused);
      try {
        e.bundle = loadBundleCharacter(package);
        if (!clip.empty())
          log_.push_back("warning: character '" + id + "': a decoder character has no body clips; clip '" +
                         clip + "' is ignored");
      } catch (const std::exception& err) {
        return placeholder(err.what());
      }
      entities_.emplace(id, std::move(e));
      return;
    }
  }
  // A splat character package, or a plain glTF drawn as its meshes: both share the model (and the package)
  // between spawns; each spawn has its own animator, so spawns of one file animate independently.
  std::shared_ptr<const Character>& cached = loaded_[package];
  try {
    if (!cached && gltf) {
      auto model = std::make_shared<const GltfModel>(package);
      if (model->drawnPrimitives() == 0)
        throw Error(package + ": has no triangle mesh to draw (a spawned glTF is drawn as its meshes)");
      cached = std::make_shared<Character>(Character::skinOnly(std::move(model)));
    }
    if (!cached) cached = std::make_shared<Character>(Character::loadPackage(package));
  } catch (const std::exception& err) {  // any load failure keeps a placeholder
    loaded_.erase(package);
    return placeholder(err.what());
  }
  int c = -1;
  if (!clip.empty()) {
    c = cached->model().findClip(clip);
    if (c < 0)
      throw Error("character '" + id + "': no clip '" + clip + "' in " + package + " (" +
                  cached->model().clipList() + ")");
  }
  e.character = cached;
  e.meshes = gltf;
  e.animator = std::make_unique<Animator>(cached);
  if (c >= 0) e.animator->play(c, 0.0f);
  entities_.emplace(id, std::move(e));
}

void CharacterWorld::despawn(const std::string& id) {
  get(id);
  entities_.erase(id);
}

void CharacterWorld::setState(const std::string& id, const std::string& clip, std::optional<Vec3> velocity,
                              float fade) {
  Entity& e = get(id);
  if ((e.bundle || e.gnm) && !e.missing_reported) {
    log_.push_back("character '" + id + "' is " +
                   (e.gnm ? "a GNM pack's rig preview" : "a decoder character") +
                   ": it has no body clips (set-character-state is recorded, nothing plays)");
    e.missing_reported = true;
  }
  if (!e.animator) return;  // a placeholder ignores animation
  if (!clip.empty()) {
    const int c = e.character->model().findClip(clip);
    if (c < 0)
      throw Error("character '" + id + "': no clip '" + clip + "' (" + e.character->model().clipList() + ")");
    e.animator->play(c, fade);
  }
  if (velocity) e.animator->setVelocity(*velocity);
}

void CharacterWorld::setClipWeights(const std::string& id,
                                    const std::vector<std::pair<std::string, float>>& weights) {
  Entity& e = get(id);
  if (!e.animator) return;
  std::vector<std::pair<int, float>> w;
  for (const auto& [name, weight] : weights) {
    const int c = e.character->model().findClip(name);
    if (c < 0)
      throw Error("character '" + id + "': no clip '" + name + "' (" + e.character->model().clipList() + ")");
    w.push_back({c, weight});
  }
  e.animator->setClipWeights(std::move(w));
}

void CharacterWorld::setExpression(const std::string& id, const Expression& expression) {
  Entity& e = get(id);
  if (e.gnm) {  // the pack's space (gnm: coefficients + gaze), gnm68, or arkit52 through the pack's arkit map
    const GnmRig& rig = e.gnm->rig;
    const ExpressionSpace space =
        expression.space == "arkit52" ? arkit52Space()
        : expression.space == "gnm"   ? gnmSpace(rig.pack().basisCount())
        : expression.space == "gnm68"
            ? gnm68Space()
            : ExpressionSpace{expression.space, static_cast<int>(expression.weights.size()), {}};
    std::vector<float> controls = mapToControls(space, expression.weights, rig);
    std::swap(controls, e.gnm->controls);
    try {
      applyGnmControls(*e.gnm);
    } catch (const Error&) {
      std::swap(controls, e.gnm->controls);
      throw;
    }
    return;
  }
  if (e.bundle) {
    std::vector<std::string> missing;
    e.bundle->setExpression(expression, &missing);
    if (!missing.empty() && !e.missing_reported) {
      std::string names;
      for (const std::string& n : missing) names += (names.empty() ? "" : ", ") + n;
      log_.push_back("character '" + id + "' has no rig control for ARKit " + names +
                     " (reported once; those weights are ignored)");
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
    log_.push_back("character '" + id + "' has no morph target for ARKit " + names +
                   " (reported once; those weights are ignored)");
    e.missing_reported = true;
  }
  e.animator->setExpression(std::move(morph));
}

void CharacterWorld::setControls(const std::string& id, const std::vector<float>& values,
                                 const std::vector<std::pair<std::string, float>>& named) {
  Entity& e = get(id);
  std::vector<std::string> names;
  std::vector<float> current;
  if (e.gnm) {
    names = e.gnm->rig.controlNames();
    current = e.gnm->controls;
  } else if (e.bundle) {
    names = e.bundle->rig().controlNames();
    current.assign(e.bundle->rigControls().begin(), e.bundle->rigControls().end());
  } else if (e.animator) {  // the bound mesh's morph targets
    const GltfModel& model = e.character->model();
    const GltfMesh& mesh =
        model.document()
            .meshes[static_cast<size_t>(model.drawInfo(static_cast<size_t>(e.character->boundDraw())).mesh)];
    const size_t n = e.character->morphTargetCount();
    for (size_t k = 0; k < n; ++k)
      names.push_back(k < mesh.target_names.size() ? mesh.target_names[k] : "target" + std::to_string(k));
    current = e.animator->expression();
    if (current.empty()) current.assign(n, 0.0f);
  } else {
    return;  // a placeholder ignores controls
  }
  if (names.empty())
    throw Error("character '" + id + "' has no controls (no morph targets, no rig controls)");
  if (!named.empty()) {
    for (const auto& [name, v] : named) {
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end())
        throw Error("character '" + id + "' has no control '" + name + "' (its controls: " + nameList(names) +
                    ")");
      current[static_cast<size_t>(it - names.begin())] = v;
    }
  } else {
    if (values.size() != names.size())
      throw Error("character '" + id + "': set-controls needs " + std::to_string(names.size()) +
                  " values (its controls: " + nameList(names) + "), got " + std::to_string(values.size()));
    current = values;
  }
  for (size_t k = 0; k < current.size(); ++k)
    if (!std::isfinite(current[k]))
      throw Error("character '" + id + "': control '" + names[k] + "' is not finite");
  if (e.gnm) {
    std::swap(current, e.gnm->controls);
    applyGnmControls(*e.gnm);
  } else if (e.bundle) {
    e.bundle->setRig(current);
  } else {
    e.animator->setExpression(std::move(current));
  }
}

void CharacterWorld::lookAt(const std::string& id, std::optional<Vec3> target_world) {
  Entity& e = get(id);
  if (e.gnm) {  // the gaze of both eyes towards the target, from the midpoint of the eye joints at rest
    GnmPreview& g = *e.gnm;
    g.look = {};
    if (target_world) {
      const GnmPack& p = g.rig.pack();
      std::vector<Mat4> models(p.joints.size());
      for (size_t j = 0; j < p.joints.size(); ++j)
        models[j] = p.joints[j].parent < 0
                        ? p.joints[j].rest_local
                        : models[static_cast<size_t>(p.joints[j].parent)] * p.joints[j].rest_local;
      const Vec3 pivot = 0.5f * (models[static_cast<size_t>(p.eye_joints[0])].translation() +
                                 models[static_cast<size_t>(p.eye_joints[1])].translation());
      // The target in the head-local frame, where the gaze angles are defined.
      const Vec3 d = transformPoint(inverseAffine(e.transform * p.bind_transform), *target_world) - pivot;
      const float yaw = std::clamp(std::atan2(d.x, d.z), -kGazeLimit, kGazeLimit);
      const float pitch =
          std::clamp(-std::atan2(d.y, std::hypot(d.x, d.z)), -kGazeLimit, kGazeLimit);  // positive-down
      g.look = {pitch, yaw, pitch, yaw};
    }
    return applyGnmControls(g);
  }
  if (e.bundle) {  // the gaze of both eyes towards the target, from the first branch's frame centre
    if (!target_world) return e.bundle->setGaze({0, 0, 0, 0});
    const Vec3 d = transformPoint(inverseAffine(e.transform), *target_world) -
                   e.bundle->bundle().branches.front().frame.center;
    const float yaw = std::clamp(std::atan2(d.x, d.z), -kGazeLimit, kGazeLimit);
    const float pitch =
        std::clamp(-std::atan2(d.y, std::hypot(d.x, d.z)), -kGazeLimit, kGazeLimit);  // positive-down
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
    if (c.command == "spawn-character")
      spawn(c.id, c.package, c.transform, c.clip);
    else if (c.command == "despawn")
      despawn(c.id);
    else if (c.command == "set-character-state")
      setState(c.id, c.clip, c.velocity, c.fade);
    else if (c.command == "set-clip-weights")
      setClipWeights(c.id, c.clip_weights);
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
    } else if (c.command == "set-controls")
      setControls(c.id, c.controls, c.named_controls);
    else if (c.command == "look-at")
      lookAt(c.id, c.target);
    else if (c.command == "say")
      say(c.id, c.text);
    else
      throw Error("unknown command '" + c.command + "'");
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

bool poseCharacterFrame(const Character& ch, bool gpu_deform, Character::Frame& f,
                        const std::function<void(bool pose_only)>& pose) {
  const Character::PartSwitches& on = ch.enabledParts();
  bool gpu = gpu_deform && !((ch.mouthHidden() && on.mouth_hidden) || (ch.teeth() && on.teeth));
  pose(gpu);
  if (gpu && ch.partsActive(f)) gpu = false, pose(false);
  if (gpu) f.opacities.clear(), f.parts.clear();
  return gpu;
}

void appendCharacterFrame(const Character& ch, Character::Frame& f, const Mat4& to_world, const Camera* cam,
                          const SplatDeformSource* deform, std::vector<RenderObject>& objects,
                          std::vector<RenderMesh>& meshes) {
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

std::vector<RenderObject> CharacterWorld::renderObjects(bool gpu_deform,
                                                        std::vector<RenderMesh>* meshes_out) {
  frames_.resize(entities_.size());
  deforms_.assign(entities_.size(), SplatDeformSource{});
  // Characters pose independently: one task each (sampling, blending, look-at, skinning, CPU deform).
  std::vector<Entity*> list;
  for (auto& [id, e] : entities_) list.push_back(&e);
  // A frame the optional parts change (Character::partsActive) is deformed on the CPU for both backends:
  // its overrides, opacities and extra parts are drawn as computed by deformFrame.
  parallelFor(list.size(), [&](size_t k) {
    if (GnmPreview* g = list[k]->gnm.get()) {  // posed again only when its controls changed
      if (!g->posed) g->rig.pose(g->positions), g->posed = true;
      return;
    }
    const Animator* a = list[k]->animator.get();
    if (!a) return;
    Character::Frame& f = frames_[k];
    if (list[k]->meshes) {  // a plain glTF: its meshes posed, skinned here or by the renderer's skin pass
      f.pose.skin_in_renderer = gpu_deform;
      a->evaluateMeshes(f.pose);
      return;
    }
    f.pose.skin_in_renderer = false;  // the slot may have held a plain glTF's pose before a despawn
    const Character& ch = a->character();
    poseCharacterFrame(ch, gpu_deform, f, [&](bool pose_only) { a->evaluate(f, pose_only); });
  });
  std::vector<RenderObject> out;
  std::vector<RenderMesh> meshes;
  size_t i = 0;
  for (auto& [id, e] : entities_) {
    if (e.bundle) {  // a decoder character: its passes for this camera (seen from its own frame)
      Camera local =
          camera_ ? *camera_ : lookAtCamera({0, 1.6f, 2.5f}, {0, 1.6f, 0}, {0, 1, 0}, 40, 640, 480);
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
    if (e.gnm) {  // one gaussian per vertex at the posed vertices; the cloud's colours and sizes stay
      out.push_back({&e.gnm->cloud, e.transform, e.gnm->positions, e.gnm->covariances});
      ++i;
      continue;
    }
    if (!e.animator) {
      out.push_back({e.placeholder.get(), e.transform, {}, {}});
      ++i;
      continue;
    }
    if (e.meshes) {  // through the mesh layer, as a scene's glTF object
      for (const RenderMesh& m : e.character->model().renderMeshes(frames_[i].pose, e.transform))
        meshes.push_back(m);
      ++i;
      continue;
    }
    Character::Frame& f = frames_[i];
    const Character& ch = *e.character;
    const Mat4 to_world = e.transform * ch.model().meshToModel(f.pose, static_cast<size_t>(ch.boundDraw()));
    const bool gpu = gpu_deform && f.positions.empty();
    if (gpu) deforms_[i] = ch.deformSource(f, ch.gpuSkinnable());
    appendCharacterFrame(ch, f, to_world, camera_ ? &*camera_ : nullptr, gpu ? &deforms_[i] : nullptr, out,
                         meshes);
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
