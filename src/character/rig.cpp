// Rig backends (skinned glTF and GNM packs), expression spaces and the rig preview (see rig.h).
#include "character/rig.h"

#include <algorithm>
#include <cmath>

#include "character/character.h"
#include "character/expression.h"
#include "core/error.h"

namespace sf::character {

namespace {

void checkControls(std::span<const float> controls, size_t expected, const std::string& who) {
  if (controls.size() != expected)
    throw Error(who + ": " + std::to_string(controls.size()) + " controls given, the rig has " +
                std::to_string(expected));
  for (size_t i = 0; i < controls.size(); ++i)
    if (!std::isfinite(controls[i])) throw Error(who + ": control " + std::to_string(i) + " is not finite");
}

std::string gnmName(const GnmPack& pack) {
  return pack.source.empty() ? std::string("GNM pack") : pack.source;
}

std::string rigName(const RigBackend& rig) {
  if (const auto* g = dynamic_cast<const GnmRig*>(&rig)) return gnmName(g->pack());
  if (const auto* s = dynamic_cast<const SkinnedRig*>(&rig)) return s->model().document().path;
  return rig.kind() + " rig";
}

// The gaze rotation in head-local axes: pitch about +x (positive moves +z towards -y), then yaw about +y.
Mat3 gazeRotation(float pitch, float yaw) {
  const float cp = std::cos(pitch), sp = std::sin(pitch), cy = std::cos(yaw), sy = std::sin(yaw);
  Mat3 rx, ry;
  rx.m[1][1] = cp, rx.m[1][2] = -sp, rx.m[2][1] = sp, rx.m[2][2] = cp;
  ry.m[0][0] = cy, ry.m[0][2] = sy, ry.m[2][0] = -sy, ry.m[2][2] = cy;
  return ry * rx;
}

}  // namespace

void RigBackend::pose(std::vector<Vec3>& out) {
  const SkinSource& s = skinSource();
  out.resize(s.vertexCount());
  s.run(out, {});
}

// ---- SkinnedRig ----

SkinnedRig::SkinnedRig(std::shared_ptr<const GltfModel> model) : model_(std::move(model)) {
  draw_ = boundDrawOf(*model_);
  const GltfModel::DrawInfo info = model_->drawInfo(static_cast<size_t>(draw_));
  const GltfPrimitive& prim = model_->primitiveOf(static_cast<size_t>(draw_));
  const GltfDocument& doc = model_->document();
  if (info.skin < 0 || prim.joints0.size() != prim.positions.size())
    throw Error(doc.path +
                ": has no skinned triangle primitive (JOINTS_0 / WEIGHTS_0 under a skin) for a skinned rig");
  triangles_ = triangleList(prim);
  const anim::Skeleton& sk = model_->skeleton();
  const size_t joint = static_cast<size_t>(sk.findSource(info.node));
  const size_t targets = prim.targets.size();
  if (targets > 0 && sk.weightCount(joint) == targets) {  // (GltfModel::skinSource refuses a mismatch)
    const GltfMesh& mesh = doc.meshes[static_cast<size_t>(info.mesh)];
    for (size_t t = 0; t < targets; ++t)
      control_names_.push_back(mesh.target_names.size() == targets ? mesh.target_names[t]
                                                                   : "target" + std::to_string(t));
    const std::vector<float>& rest = sk.restWeights();
    controls_.assign(rest.begin() + static_cast<std::ptrdiff_t>(sk.weightOffset(joint)),
                     rest.begin() + static_cast<std::ptrdiff_t>(sk.weightOffset(joint) + targets));
  }
  const GltfSkin& skin = doc.skins[static_cast<size_t>(doc.nodes[static_cast<size_t>(info.node)].skin)];
  std::vector<std::string> names;
  for (int n : skin.joints) names.push_back(doc.nodes[static_cast<size_t>(n)].name);
  for (int side = 0; side < 2; ++side)
    if (const std::vector<int> found = eyeJointCandidates(names, side); found.size() == 1)
      eyes_[static_cast<size_t>(side)] = found[0];
}

void SkinnedRig::setControls(std::span<const float> controls) {
  checkControls(controls, control_names_.size(), model_->document().path);
  controls_.assign(controls.begin(), controls.end());
}

size_t SkinnedRig::vertexCount() const {
  return model_->primitiveOf(static_cast<size_t>(draw_)).positions.size();
}

std::span<const std::array<float, 2>> SkinnedRig::uvs() const {
  const GltfPrimitive& prim = model_->primitiveOf(static_cast<size_t>(draw_));
  if (prim.texcoords0.size() != prim.positions.size()) return {};
  return prim.texcoords0;
}

void SkinnedRig::setPose(int clip, float time) {
  if (clip >= static_cast<int>(model_->clips().size()))
    throw Error(model_->document().path + ": clip " + std::to_string(clip) + " does not exist (" +
                std::to_string(model_->clips().size()) + " clips)");
  clip_ = clip, time_ = time;
}

const SkinSource& SkinnedRig::skinSource() {
  const GltfModel::DrawInfo info = model_->drawInfo(static_cast<size_t>(draw_));
  const anim::Skeleton& sk = model_->skeleton();
  model_->sample(clip_, time_, pose_);
  if (!controls_.empty()) {
    const size_t joint = static_cast<size_t>(sk.findSource(info.node));
    std::copy(controls_.begin(), controls_.end(),
              pose_.weights.begin() + static_cast<std::ptrdiff_t>(sk.weightOffset(joint)));
  }
  for (const auto& [joint, q] : overrides_)
    if (joint >= 0 && static_cast<size_t>(joint) < pose_.local.size()) {
      Quat& r = pose_.local[static_cast<size_t>(joint)].rotation;
      r = normalize(r * q);
    }
  model_->evaluate(pose_, draw_);  // the bound draw is left to the skin source
  source_ = model_->skinSource(pose_, static_cast<size_t>(draw_));
  source_.normals = {};
  source_.morph_normals = {};
  const Mat4& to_model = model_->meshToModel(pose_, static_cast<size_t>(draw_));
  palette_.assign(source_.palette.begin(), source_.palette.end());
  for (Mat4& m : palette_) m = to_model * m;
  source_.palette = palette_;
  return source_;
}

// ---- GnmRig ----

GnmRig::GnmRig(GnmPack pack) : GnmRig(std::make_shared<const GnmPack>(std::move(pack))) {}

GnmRig::GnmRig(std::shared_ptr<const GnmPack> pack) : pack_(std::move(pack)) {
  if (std::string why = pack_->validate(); !why.empty()) throw Error(gnmName(*pack_) + ": " + why);
  controls_.assign(pack_->controlCount(), 0.0f);
  models_.resize(pack_->joints.size());
  palette_.resize(pack_->joints.size());
}

void GnmRig::setControls(std::span<const float> controls) {
  checkControls(controls, pack_->controlCount(), gnmName(*pack_));
  controls_.assign(controls.begin(), controls.end());
}

const SkinSource& GnmRig::skinSource() {
  const size_t k = pack_->basisCount();
  for (size_t j = 0; j < pack_->joints.size(); ++j) {
    const GnmJoint& jt = pack_->joints[j];
    models_[j] = jt.parent < 0 ? jt.rest_local : models_[static_cast<size_t>(jt.parent)] * jt.rest_local;
    for (size_t side = 0; side < 2; ++side)
      if (static_cast<int32_t>(j) ==
          pack_->eye_joints[side]) {  // about the pivot: M' = T(c) R T(-c) M, c = M's origin
        const Mat3 r = gazeRotation(controls_[k + 2 * side], controls_[k + 2 * side + 1]);
        models_[j] = Mat4::fromLinearTranslation(r * models_[j].linear(), models_[j].translation());
      }
    palette_[j] = pack_->bind_transform * models_[j] * jt.inverse_bind;
  }
  source_ = SkinSource{};
  source_.positions = pack_->neutral;
  source_.joints0 = pack_->lbs_joints;
  source_.weights0 = pack_->lbs_weights;
  source_.morph_positions = pack_->basis;
  source_.morph_weights = std::span<const float>(controls_.data(), k);
  source_.palette = palette_;
  return source_;
}

// ---- Expression spaces ----

ExpressionSpace arkit52Space() {
  return {"arkit52", 52, {{"arkit", 0, 52}}};
}

ExpressionSpace gnmSpace(size_t coefficients) {
  const int k = static_cast<int>(coefficients);
  return {"gnm", k + 4, {{"expression", 0, k}, {"gaze", k, 4}}};
}

ExpressionSpace gnm68Space() {
  return {"gnm68", 68, {{"expression", 0, 64}, {"gaze", 64, 4}}};
}

ExpressionSpace nativeSpace(const RigBackend& rig) {
  if (const auto* g = dynamic_cast<const GnmRig*>(&rig)) return gnmSpace(g->pack().basisCount());
  if (const auto* s = dynamic_cast<const SkinnedRig*>(&rig)) {
    const std::string offered = expressionSpaceOf(s->model(), s->draw());
    if (offered == "arkit52") return arkit52Space();
    throw Error(s->model().document().path + ": offers no expression space (its morph targets: " + offered +
                "); drive its controls directly");
  }
  throw Error(rig.kind() + " rig: offers no expression space");
}

std::vector<float> mapToControls(const ExpressionSpace& space, std::span<const float> values,
                                 const RigBackend& rig, std::vector<std::string>* missing) {
  const std::string who = rigName(rig);
  const auto* gnm = dynamic_cast<const GnmRig*>(&rig);
  const auto* skinned = dynamic_cast<const SkinnedRig*>(&rig);
  const std::string refused = who + ": an expression in space '" + space.kind + "' refused: ";
  if (space.kind != "arkit52" && space.kind != "gnm" && space.kind != "gnm68")
    throw Error(refused + "unknown expression space (known: arkit52, gnm, gnm68)");
  if (values.size() != static_cast<size_t>(std::max(space.dim, 0)))
    throw Error(refused + "the space has dim " + std::to_string(space.dim) + ", " +
                std::to_string(values.size()) + " values given");
  auto needDim = [&](size_t expected, const std::string& why) {
    if (static_cast<size_t>(space.dim) != expected)
      throw Error(refused + "expected dim " + std::to_string(expected) + " (" + why +
                  "), the space declares " + std::to_string(space.dim));
  };
  if (space.kind == "arkit52") {
    needDim(52, "the 52 ARKit weights");
    if (skinned) {
      const std::string offered = expressionSpaceOf(skinned->model(), skinned->draw());
      if (offered != "arkit52")
        throw Error(refused + "its morph targets carry no ARKit names (it offers '" + offered +
                    "'); not reinterpreted");
      const GltfMesh& mesh = skinned->model().document().meshes[static_cast<size_t>(
          skinned->model().drawInfo(static_cast<size_t>(skinned->draw())).mesh)];
      return arkitToMorphWeights(values, mesh.target_names, rig.controlNames().size(), missing);
    }
    if (gnm) {
      const GnmPack& pack = gnm->pack();
      const size_t k = pack.basisCount();
      if (pack.arkit_map.empty())
        throw Error(refused + "the GNM pack carries no arkit_map (a trained 52 x " + std::to_string(k) +
                    " ARKit-to-coefficient matrix); ARKit weights and GNM coefficients are unrelated spaces, "
                    "never reinterpreted");
      std::vector<float> out(pack.controlCount(), 0.0f);
      for (size_t a = 0; a < 52; ++a)
        if (values[a] != 0)
          for (size_t c = 0; c < k; ++c) out[c] += values[a] * pack.arkit_map[a * k + c];
      return out;
    }
  } else if (gnm) {
    const GnmPack& pack = gnm->pack();
    const size_t k = pack.basisCount();
    if (space.kind == "gnm") {
      needDim(k + 4, "the pack's " + std::to_string(k) + " coefficients + 4 gaze angles");
      return {values.begin(), values.end()};
    }
    needDim(68, "64 coefficients + 4 gaze angles");
    if (k < 64)
      throw Error(refused + "the pack has " + std::to_string(k) + " coefficients; gnm68 drives the first 64");
    std::vector<float> out(pack.controlCount(), 0.0f);
    std::copy_n(values.begin(), 64, out.begin());
    std::copy_n(values.begin() + 64, 4, out.begin() + static_cast<std::ptrdiff_t>(k));
    return out;
  } else {
    throw Error(refused + "a " + rig.kind() +
                " rig's controls are its morph targets, not GNM coefficients; not reinterpreted");
  }
  throw Error(refused + "a " + rig.kind() + " rig takes no mapped expressions");
}

// ---- Rig preview ----

std::vector<Vec3> rigPreviewColors(const std::string& tint, std::span<const Vec3> positions,
                                   std::span<const std::array<uint16_t, 4>> joints,
                                   std::span<const std::array<float, 4>> weights,
                                   std::span<const std::array<float, 2>> uvs, std::array<int, 2> eye_joints) {
  if (tint != "joint" && tint != "uv" && tint != "height" && tint != "normal")
    throw Error("rig preview tint '" + tint + "' unknown (joint, uv, height or normal)");
  const size_t n = positions.size();
  if (tint == "joint" && (joints.size() != n || weights.size() != n))
    throw Error("rig preview: the joint tint needs joints and weights for every vertex");
  if (tint == "uv" && uvs.size() != n)
    throw Error("rig preview: the uv tint needs a TEXCOORD for every vertex");
  Vec3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
  for (const Vec3& p : positions)
    for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], p[k]), hi[k] = std::max(hi[k], p[k]);
  const Vec3 centre = (lo + hi) * 0.5f;
  std::vector<Vec3> rgb(n);
  for (size_t i = 0; i < n; ++i) {
    if (tint == "joint") {
      size_t best = 0;
      for (size_t k = 1; k < 4; ++k)
        if (weights[i][k] > weights[i][best]) best = k;
      const int j = joints[i][best];
      if (j == eye_joints[0] || j == eye_joints[1]) {
        rgb[i] = {0, 1, 1};  // the eyes, called out
        continue;
      }
      float hue = std::fmod(static_cast<float>(j) * 0.618034f, 1.0f) * 6.0f;  // golden-ratio hues
      if (std::abs(hue - 3.0f) < 0.5f) hue = std::fmod(hue + 3.0f, 6.0f);     // cyan is the eyes' alone
      const float x = 1 - std::abs(std::fmod(hue, 2.0f) - 1);
      const int sector = static_cast<int>(hue);
      const Vec3 table[6] = {{1, x, 0}, {x, 1, 0}, {0, 1, x}, {0, x, 1}, {x, 0, 1}, {1, 0, x}};
      rgb[i] = table[std::clamp(sector, 0, 5)];
    } else if (tint == "uv") {
      rgb[i] = {uvs[i][0] - std::floor(uvs[i][0]), uvs[i][1] - std::floor(uvs[i][1]), 0.2f};
    } else if (tint == "height") {
      const float t = hi.y > lo.y ? (positions[i].y - lo.y) / (hi.y - lo.y) : 0.5f;
      rgb[i] = {t, 0.2f, 1 - t};
    } else {
      const Vec3 d = normalize(positions[i] - centre);
      rgb[i] = {0.5f + 0.5f * d.x, 0.5f + 0.5f * d.y, 0.5f + 0.5f * d.z};
    }
  }
  return rgb;
}

GaussianCloud rigPreviewCloud(RigBackend& rig, const std::string& tint, float sigma) {
  if (!(sigma > 0) || !std::isfinite(sigma))
    throw Error("rig preview: sigma must be a positive number of metres, got " + std::to_string(sigma));
  if (tint == "uv" && rig.uvs().size() != rig.vertexCount())
    throw Error(rigName(rig) + ": has no TEXCOORD to tint by (rig preview tint uv)");
  const SkinSource& s = rig.skinSource();
  std::vector<Vec3> posed(s.vertexCount());
  s.run(posed, {});
  const std::vector<Vec3> rgb =
      rigPreviewColors(tint, posed, s.joints0, s.weights0, rig.uvs(), rig.eyeJoints());
  GaussianCloud cloud;
  cloud.resize(posed.size(), 0);
  for (size_t i = 0; i < posed.size(); ++i) {
    cloud.positions[i] = posed[i];
    cloud.scales[i] = {sigma, sigma, sigma};
    cloud.opacities[i] = 0.9f;
    for (int k = 0; k < 3; ++k) cloud.sh[i * 3 + static_cast<size_t>(k)] = colorToShDc(rgb[i][k]);
  }
  return cloud;
}

}  // namespace sf::character
