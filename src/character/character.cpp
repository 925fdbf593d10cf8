// Splat characters: builders and the CPU deform path (see character.h).
#include "character/character.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "character/corrective.h"
#include "character/mouth.h"
#include "character/rig.h"
#include "core/error.h"
#include "core/random.h"
#include "render/mesh.h"

namespace sf::character {

namespace {

// The draw a character binds to: the first skinned triangle primitive, else the first triangle primitive.
int chooseDraw(const GltfModel& model) {
  for (size_t i = 0; i < model.drawnPrimitives(); ++i)
    if (model.drawInfo(i).skin >= 0) return static_cast<int>(i);
  if (model.drawnPrimitives() == 0)
    throw Error(model.document().path + ": has no triangle primitive to carry a splat character");
  return 0;
}

// The first animation by name, or "0" when it has none.
std::string defaultClipOf(const GltfModel& model) {
  const std::string& name = model.clips()[0].name;
  return name.empty() ? "0" : name;
}

struct Rng {
  uint64_t state;
  float uniform() { return unitFloat(splitmix64Next(state)); }
};

}  // namespace

// ARKit-named morph targets make the character's expression space arkit52; other targets its own space.
std::string expressionSpaceOf(const GltfModel& model, int draw) {
  const GltfMesh& mesh =
      model.document().meshes[static_cast<size_t>(model.drawInfo(static_cast<size_t>(draw)).mesh)];
  if (mesh.weights.empty()) return "none";
  static const char* kArkitProbe[] = {"jawOpen", "eyeBlinkLeft", "eyeBlinkRight", "mouthSmileLeft",
                                      "browInnerUp"};
  for (const std::string& n : mesh.target_names)
    for (const char* a : kArkitProbe)
      if (n == a) return "arkit52";
  return "morph";
}

int boundDrawOf(const GltfModel& model) {
  return chooseDraw(model);
}

std::vector<uint32_t> triangleList(const GltfPrimitive& prim) {
  if (!prim.indices.empty()) return prim.indices;
  std::vector<uint32_t> seq(prim.positions.size() - prim.positions.size() % 3);
  for (size_t i = 0; i < seq.size(); ++i) seq[i] = static_cast<uint32_t>(i);
  return seq;
}

Character Character::startFrom(std::shared_ptr<const GltfModel> model) {
  Character c;
  c.model_ = std::move(model);
  c.source_ = c.model_->document().path;
  c.skin_path_ = c.source_;
  c.draw_ = chooseDraw(*c.model_);
  c.expression_space_ = expressionSpaceOf(*c.model_, c.draw_);
  if (!c.model_->clips().empty()) c.default_clip_ = defaultClipOf(*c.model_);
  c.triangles_ = triangleList(c.model_->primitiveOf(static_cast<size_t>(c.draw_)));
  return c;
}

bool Character::gpuSkinnable() const {
  const GltfModel::DrawInfo info = model_->drawInfo(static_cast<size_t>(draw_));
  const GltfPrimitive& prim = model_->primitiveOf(static_cast<size_t>(draw_));
  const size_t n = prim.positions.size();
  return info.skin >= 0 && prim.joints0.size() == n && prim.weights0.size() == n &&
         (prim.joints1.empty() || (prim.joints1.size() == n && prim.weights1.size() == n));
}

SplatDeformSource Character::deformSource(const Frame& f, bool gpu_skin) const {
  SplatDeformSource s;
  s.bindings = bindingRecords();
  s.indices = triangles_;
  s.palette = palette(f);
  if (!gpu_skin) {
    s.vertices = posedVertices(f);
    return s;
  }
  s.skin = model_->skinSource(f.pose, static_cast<size_t>(draw_));
  s.skin.normals = {};  // the deform pass reads positions only
  s.skin.morph_normals = {};
  return s;
}

Character Character::skinOnly(std::shared_ptr<const GltfModel> model) {
  return startFrom(std::move(model));
}

Character Character::fromGltf(std::shared_ptr<const GltfModel> model, size_t count, uint32_t seed) {
  if (count == 0) throw Error("a splat character needs at least one splat");
  Character c = startFrom(std::move(model));
  const GltfPrimitive& prim = c.model_->primitiveOf(static_cast<size_t>(c.draw_));
  const std::vector<uint32_t>& tris = c.triangles_;
  const std::span<const Vec3> rest = prim.positions;

  // Texture, factor and vertex colours as the mesh renderer sees them.
  GltfModel::Pose pose;
  c.model_->pose(-1, 0.0f, pose);
  const RenderMesh look = c.model_->renderMeshes(pose, Mat4{})[static_cast<size_t>(c.draw_)];

  std::vector<double> cumulative(tris.size() / 3);
  double total = 0;
  for (size_t t = 0; t < cumulative.size(); ++t) {
    const Vec3 a = rest[tris[t * 3]], b = rest[tris[t * 3 + 1]], d = rest[tris[t * 3 + 2]];
    total += 0.5 * static_cast<double>(length(cross(b - a, d - a)));
    cumulative[t] = total;
  }
  if (!(total > 0)) throw Error(c.source_ + ": the bound primitive has zero surface area");
  const float spacing = static_cast<float>(std::sqrt(total / static_cast<double>(count)));
  const float tangent = 0.6f * spacing, normal = 0.1f * tangent;

  c.splats_.resize(count, 0);
  c.bindings_.resize(count);
  Rng rng{0x5eedull * 0x100000001b3ull ^ seed};
  for (size_t i = 0; i < count; ++i) {
    const double pick = static_cast<double>(rng.uniform()) * total;
    size_t t = static_cast<size_t>(std::lower_bound(cumulative.begin(), cumulative.end(), pick) -
                                   cumulative.begin());
    t = std::min(t, cumulative.size() - 1);
    while (t > 0 && cumulative[t] == cumulative[t - 1]) --t;  // never a zero-area triangle
    while (t + 1 < cumulative.size() && (t == 0 ? cumulative[0] : cumulative[t] - cumulative[t - 1]) <= 0)
      ++t;
    const uint32_t i0 = tris[t * 3], i1 = tris[t * 3 + 1], i2 = tris[t * 3 + 2];
    float r1 = std::sqrt(rng.uniform()), r2 = rng.uniform();
    const float b0 = 1 - r1, b1 = r1 * (1 - r2), b2 = r1 * r2;
    const Vec3 v0 = rest[i0], v1 = rest[i1], v2 = rest[i2];
    const Vec3 p = v0 * b0 + v1 * b1 + v2 * b2;
    // Orientation: local z along the face normal, x along the first edge.
    const Vec3 ex = normalize(v1 - v0), ez = normalize(cross(v1 - v0, v2 - v0)), ey = cross(ez, ex);
    Mat3 r;
    for (int k = 0; k < 3; ++k) r.m[k][0] = ex[k], r.m[k][1] = ey[k], r.m[k][2] = ez[k];
    c.splats_.positions[i] = p;
    c.splats_.scales[i] = {tangent, tangent, normal};
    c.splats_.rotations[i] = quatFromRotationMatrix(r);
    c.splats_.opacities[i] = 0.95f;
    std::array<float, 4> albedo = look.base_color;
    if (!look.colors.empty())
      for (size_t k = 0; k < 4; ++k)
        albedo[k] *= look.colors[i0][k] * b0 + look.colors[i1][k] * b1 + look.colors[i2][k] * b2;
    if (look.texture && !look.uvs.empty()) {
      const float u = look.uvs[i0][0] * b0 + look.uvs[i1][0] * b1 + look.uvs[i2][0] * b2;
      const float v = look.uvs[i0][1] * b0 + look.uvs[i1][1] * b1 + look.uvs[i2][1] * b2;
      const std::array<float, 4> tex = sampleTexture(*look.texture, u, v);
      for (size_t k = 0; k < 4; ++k) albedo[k] *= tex[k];
    }
    for (size_t k = 0; k < 3; ++k)
      c.splats_.sh[i * 3 + k] = colorToShDc(linearToSrgb(std::clamp(albedo[k], 0.0f, 1.0f)));
    c.bindings_[i] =
        bindToTriangle(p, covarianceFromScaleRotation(c.splats_.scales[i], c.splats_.rotations[i]),
                       static_cast<uint32_t>(t), v0, v1, v2);
  }
  return c;
}

Character Character::bindSplats(std::shared_ptr<const GltfModel> model, GaussianCloud splats) {
  if (splats.size() == 0) throw Error("no splats to bind");
  Character c = startFrom(std::move(model));
  const GltfPrimitive& prim = c.model_->primitiveOf(static_cast<size_t>(c.draw_));
  const std::vector<uint32_t>& tris = c.triangles_;
  const std::vector<uint32_t> nearest = nearestTriangles(splats.positions, prim.positions, tris);
  c.bindings_.resize(splats.size());
  for (size_t i = 0; i < splats.size(); ++i) {
    const uint32_t t = nearest[i];
    c.bindings_[i] = bindToTriangle(
        splats.positions[i], covarianceFromScaleRotation(splats.scales[i], splats.rotations[i]), t,
        prim.positions[tris[t * 3]], prim.positions[tris[t * 3 + 1]], prim.positions[tris[t * 3 + 2]]);
  }
  c.splats_ = std::move(splats);
  return c;
}

static_assert(sizeof(SplatBinding) == kBindingRecordBytes && offsetof(SplatBinding, joints) == 8 &&
                  offsetof(SplatBinding, weights) == 16 && offsetof(SplatBinding, coords) == 32 &&
                  offsetof(SplatBinding, covariance) == 44,
              "SplatBinding must match the bindings.bin record (the GPU layout)");

std::span<const uint8_t> Character::bindingRecords() const {
  return {reinterpret_cast<const uint8_t*>(bindings_.data()), bindings_.size() * sizeof(SplatBinding)};
}

std::span<const Vec3> Character::posedVertices(const Frame& f) const {
  return f.pose.primitives.at(static_cast<size_t>(draw_)).positions;
}

std::span<const Mat4> Character::palette(const Frame& f) const {
  const GltfModel::DrawInfo info = model_->drawInfo(static_cast<size_t>(draw_));
  if (info.skin < 0) return {};
  return f.pose.palettes.at(static_cast<size_t>(info.skin));
}

int Character::objectClip(const std::string& where, const std::string& clip) const {
  const std::string wanted = clip.empty() ? default_clip_ : clip;
  if (wanted.empty()) return -1;
  const int index = model_->findClip(wanted);
  if (index < 0)
    throw Error(where + ": no animation named or numbered '" + wanted + "' in its skin (" +
                std::to_string(model_->clips().size()) + " animations" +
                (model_->clips().empty() ? "" : ": " + model_->clipList()) + ")");
  return index;
}

size_t Character::morphTargetCount() const {
  return model_->primitiveOf(static_cast<size_t>(draw_)).targets.size();
}

std::vector<float> Character::mapExpression(const Expression& e, std::vector<std::string>* missing) const {
  const GltfModel::DrawInfo info = model_->drawInfo(static_cast<size_t>(draw_));
  const GltfMesh& mesh = model_->document().meshes[static_cast<size_t>(info.mesh)];
  const size_t targets = morphTargetCount();
  if (e.space == "morph") {
    if (targets == 0)
      throw Error(source_ +
                  ": expression space 'morph' refused: the character has no morph targets (declared space: " +
                  expression_space_ + ")");
    if (e.weights.size() != targets)
      throw Error(source_ + ": a 'morph' expression needs " + std::to_string(targets) +
                  " values (one per morph target), got " + std::to_string(e.weights.size()));
    return e.weights;
  }
  if (e.space == "arkit52") {
    if (expression_space_ != "arkit52")
      throw Error(source_ + ": expression space 'arkit52' refused: the character declares '" +
                  expression_space_ + "' (its morph targets carry no ARKit names); not reinterpreted");
    if (e.weights.size() != kArkit52.size())
      throw Error(source_ + ": an 'arkit52' expression needs 52 values in canonical order, got " +
                  std::to_string(e.weights.size()));
    return arkitToMorphWeights(e.weights, mesh.target_names, targets, missing);
  }
  throw Error(source_ + ": unknown expression space '" + e.space + "' (known: arkit52, morph); refused");
}

std::vector<float> arkitToMorphWeights(std::span<const float> arkit,
                                       const std::vector<std::string>& target_names, size_t targets,
                                       std::vector<std::string>* missing) {
  std::vector<float> out(targets, 0.0f);
  for (size_t a = 0; a < kArkit52.size(); ++a) {
    auto it = std::find(target_names.begin(), target_names.end(), kArkit52[a]);
    if (it == target_names.end()) {
      if (missing && arkit[a] != 0) missing->push_back(kArkit52[a]);
      continue;
    }
    const size_t t = static_cast<size_t>(it - target_names.begin());
    if (t < targets) out[t] = arkit[a];
  }
  return out;
}

void Character::applyControls(const Controls& controls, GltfModel::Pose& pose) const {
  const GltfModel::DrawInfo info = model_->drawInfo(static_cast<size_t>(draw_));
  const anim::Skeleton& sk = model_->skeleton();
  if (!controls.morph.empty()) {
    const size_t joint = static_cast<size_t>(sk.findSource(info.node));
    const size_t n = std::min(controls.morph.size(), sk.weightCount(joint));
    std::copy_n(controls.morph.begin(), n,
                pose.weights.begin() + static_cast<std::ptrdiff_t>(sk.weightOffset(joint)));
  }
  for (const auto& [joint, q] : controls.joint_rotations)
    if (joint >= 0 && static_cast<size_t>(joint) < pose.local.size()) {
      Quat& r = pose.local[static_cast<size_t>(joint)].rotation;
      r = normalize(r * q);
    }
}

void Character::pose(int clip, float time, Frame& out, const Controls* controls, bool skip_bound_draw) const {
  model_->sample(clip, time, out.pose);
  if (controls) applyControls(*controls, out.pose);
  model_->evaluate(out.pose, skip_bound_draw ? draw_ : -1);
  out.positions.clear();
  out.covariances.clear();
}

Character Character::bindPerVertex(std::shared_ptr<const GltfModel> model, GaussianCloud splats,
                                   float offset_scale, bool rgb_colors) {
  Character c = startFrom(std::move(model));
  const GltfPrimitive& prim = c.model_->primitiveOf(static_cast<size_t>(c.draw_));
  if (prim.positions.size() != splats.size())
    throw Error("per-vertex binding needs one splat per vertex: the splat file has " +
                std::to_string(splats.size()) + " rows, " + c.source_ + "'s bound primitive " +
                std::to_string(prim.positions.size()) + " vertices");
  const std::vector<uint32_t>& tris = c.triangles_;
  // The largest non-degenerate triangle around each vertex gives the most stable frame.
  std::vector<int64_t> best(prim.positions.size(), -1);
  std::vector<float> best_area(prim.positions.size(), 0.0f);
  for (size_t t = 0; t < tris.size() / 3; ++t) {
    const Vec3 a = prim.positions[tris[t * 3]], b = prim.positions[tris[t * 3 + 1]],
               d = prim.positions[tris[t * 3 + 2]];
    const float area = length(cross(b - a, d - a));
    for (size_t k = 0; k < 3; ++k)
      if (area > best_area[tris[t * 3 + k]])
        best_area[tris[t * 3 + k]] = area, best[tris[t * 3 + k]] = static_cast<int64_t>(t);
  }
  c.bindings_.resize(splats.size());
  for (size_t i = 0; i < splats.size(); ++i) {
    if (best[i] < 0)
      throw Error(c.source_ + ": vertex " + std::to_string(i) + " belongs to no triangle of non-zero area");
    splats.positions[i] = prim.positions[i] + splats.positions[i] * offset_scale;
    if (rgb_colors)
      for (size_t k = 0; k < 3; ++k)
        splats.sh[i * static_cast<size_t>(splats.shStride()) + k] =
            colorToShDc(splats.sh[i * static_cast<size_t>(splats.shStride()) + k]);
    const uint32_t t = static_cast<uint32_t>(best[i]);
    c.bindings_[i] = bindToTriangle(
        splats.positions[i], covarianceFromScaleRotation(splats.scales[i], splats.rotations[i]), t,
        prim.positions[tris[t * 3]], prim.positions[tris[t * 3 + 1]], prim.positions[tris[t * 3 + 2]]);
  }
  splats.normals.clear();
  c.splats_ = std::move(splats);
  return c;
}

Character Character::rigPreview(std::shared_ptr<const GltfModel> model, const std::string& tint,
                                float sigma) {
  if (!(sigma > 0) || !std::isfinite(sigma))
    throw Error("rig preview: sigma must be a positive number of metres, got " + std::to_string(sigma));
  const int draw = chooseDraw(*model);
  const GltfPrimitive& prim = model->primitiveOf(static_cast<size_t>(draw));
  const size_t n = prim.positions.size();
  if (tint == "joint" && prim.joints0.size() != n)
    throw Error(model->document().path + ": the bound primitive has no JOINTS_0 to tint by");
  if (tint == "uv" && prim.texcoords0.size() != n)
    throw Error(model->document().path + ": the bound primitive has no TEXCOORD_0 to tint by");
  std::array<int, 2> eyes{-1, -1};  // skin joints by the eye-joint name rule (gnm_pack.h), called out in cyan
  if (const GltfModel::DrawInfo info = model->drawInfo(static_cast<size_t>(draw)); info.skin >= 0) {
    const GltfDocument& doc = model->document();
    std::vector<std::string> names;
    for (int j : doc.skins[static_cast<size_t>(doc.nodes[static_cast<size_t>(info.node)].skin)].joints)
      names.push_back(doc.nodes[static_cast<size_t>(j)].name);
    for (int side = 0; side < 2; ++side)
      if (const std::vector<int> found = eyeJointCandidates(names, side); found.size() == 1)
        eyes[static_cast<size_t>(side)] = found[0];
  }
  const std::vector<Vec3> rgb =
      rigPreviewColors(tint, prim.positions, prim.joints0, prim.weights0, prim.texcoords0, eyes);
  GaussianCloud cloud;
  cloud.resize(n, 0);
  for (size_t i = 0; i < n; ++i) {
    cloud.positions[i] = Vec3{};  // offsets from the vertex (offset scale 1 below)
    cloud.scales[i] = {sigma, sigma, sigma};
    cloud.opacities[i] = 0.9f;
    for (int k = 0; k < 3; ++k) cloud.sh[i * 3 + static_cast<size_t>(k)] = colorToShDc(rgb[i][k]);
  }
  Character c = bindPerVertex(std::move(model), std::move(cloud), 1.0f, false);
  c.source_ += " (rig preview: " + tint + ")";
  return c;
}

anim::RetargetReport Character::attachClips(const std::string& animation_file) {
  auto model = std::make_shared<GltfModel>(*model_);
  const anim::RetargetReport report = model->addRetargetedClips(loadGltf(animation_file));
  if (default_clip_.empty() && !model->clips().empty())
    default_clip_ = model->clips()[0].name.empty() ? "0" : model->clips()[0].name;
  model_ = std::move(model);
  animations_path_ = animation_file;
  return report;
}

void Character::deform(int clip, float time, Frame& out, const Controls* controls) const {
  pose(clip, time, out, controls);
  deformFrame(out);
}

void Character::deformFrame(Frame& out) const {
  out.positions.resize(bindings_.size());
  out.covariances.resize(bindings_.size());
  DeformJob job;
  job.bindings = bindings_;
  job.vertices = posedVertices(out);
  job.indices = triangles_;
  job.palette = palette(out);
  job.out_positions = out.positions;
  job.out_covariances = out.covariances;
  job.run();
  // The optional parts (docs/formats/character-extras.md), each only while present and enabled.
  out.opacities.clear();
  out.parts.clear();
  if (mouth_hidden_ && enabled_.mouth_hidden) applyMouthHidden(*mouth_hidden_, *this, out);
  if (teeth_ && enabled_.teeth) applyTeeth(*teeth_, *this, out);
  if (corrective_ && enabled_.corrective) applyCorrective(*corrective_, *this, out);
}

bool Character::partsActive(const Frame& f) const {
  if ((mouth_hidden_ && enabled_.mouth_hidden) || (teeth_ && enabled_.teeth)) return true;
  return corrective_ && enabled_.corrective && correctiveWeights(*corrective_, f.pose).any();
}

std::span<float> Character::frameOpacities(Frame& f) const {
  if (f.opacities.empty()) f.opacities = splats_.opacities;
  return f.opacities;
}

const GaussianCloud& Character::drawnCloud(Frame& f) const {
  if (f.opacities.empty()) return splats_;
  // The copy is kept while it holds this cloud (sizes and rest centres match); only opacities are rewritten.
  if (f.drawn.size() != splats_.size() || f.drawn.sh.size() != splats_.sh.size() ||
      std::memcmp(f.drawn.positions.data(), splats_.positions.data(), splats_.size() * sizeof(Vec3)) != 0)
    f.drawn = splats_;
  std::copy(f.opacities.begin(), f.opacities.end(), f.drawn.opacities.begin());
  return f.drawn;
}

const GaussianCloud& Character::drawnCloud(Part& p) {
  p.drawn = *p.cloud;
  p.drawn.opacities = p.opacities;
  return p.drawn;
}

size_t Character::residentBytes() const {
  size_t model_bytes = 0;
  for (const GltfMesh& m : model_->document().meshes)
    for (const GltfPrimitive& p : m.primitives)
      model_bytes += p.positions.size() * (12 + 12 + 8 + 16 + 16 + 16) + p.indices.size() * 4 +
                     p.targets.size() * p.positions.size() * 24;
  for (const GltfImage& img : model_->document().images) model_bytes += img.rgba.size();
  size_t part_bytes = 0;
  if (mouth_hidden_) part_bytes += mouth_hidden_->splats.size() * sizeof(HiddenSplat);
  if (teeth_) {
    part_bytes += teeth_->splats.memoryBytes() + teeth_->points.size() * sizeof(TeethPoint);
    for (const MouthMesh& m : teeth_->meshes)
      part_bytes += m.vertices.size() * sizeof(TeethPoint) + m.indices.size() * 4;
  }
  if (corrective_)
    for (const Correction& k : corrective_->corrections)
      part_bytes += k.fade.size() * 5 + k.points.memoryBytes() +
                    k.point_bindings.size() * sizeof(SplatBinding) + k.point_side.size();
  return splats_.memoryBytes() + bindings_.size() * sizeof(SplatBinding) + model_bytes + part_bytes;
}

}  // namespace sf::character
