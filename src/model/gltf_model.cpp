// GltfModel: the animation sequence on the CPU and the conversion to render meshes (see gltf_model.h).
#include "model/gltf_model.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

#include "anim/retarget.h"
#include "core/error.h"
#include "io/gltf_splats.h"
#include "model/gltf_import.h"

namespace sf {

GltfModel::GltfModel(const std::string& path) : doc_(loadGltf(path)) {
  build();
}
GltfModel::GltfModel(GltfDocument doc) : doc_(std::move(doc)) {
  build();
}

void GltfModel::build() {
  skeleton_ = anim::skeletonFromGltf(doc_);
  for (size_t a = 0; a < doc_.animations.size(); ++a)
    clips_.push_back(anim::clipFromGltf(doc_, a, skeleton_));
  // Splat primitives, in model space (node transforms applied by the splat reader).
  bool has_splats = false;
  for (const GltfMesh& m : doc_.meshes)
    for (const GltfPrimitive& p : m.primitives) has_splats |= p.has_splats;
  if (has_splats) splats_ = gltfSplatCloud(doc_);

  // One texture per (image, wrap mode) pair in use.
  std::map<std::tuple<int, int, int>, int> texture_index;
  std::map<int, int> skin_of_node;
  for (size_t n = 0; n < doc_.nodes.size(); ++n) {
    const GltfNode& node = doc_.nodes[n];
    if (node.mesh < 0) continue;
    const GltfMesh& mesh = doc_.meshes[static_cast<size_t>(node.mesh)];
    for (size_t p = 0; p < mesh.primitives.size(); ++p) {
      const GltfPrimitive& prim = mesh.primitives[p];
      if (prim.has_splats || prim.mode != 4 || prim.positions.empty()) continue;
      const std::string where =
          doc_.path + ": meshes[" + std::to_string(node.mesh) + "].primitives[" + std::to_string(p) + "]";
      const size_t corners = prim.indices.empty() ? prim.positions.size() : prim.indices.size();
      if (corners % 3)
        throw Error(where + ": TRIANGLES with " + std::to_string(corners) + " corners, not a multiple of 3");
      for (uint32_t i : prim.indices)
        if (i >= prim.positions.size())
          throw Error(where + ": index " + std::to_string(i) + " outside its " +
                      std::to_string(prim.positions.size()) + " vertices");
      Draw d;
      d.node = static_cast<int>(n), d.mesh = node.mesh, d.primitive = static_cast<int>(p);
      if (node.skin >= 0) {
        auto it = skin_of_node.find(static_cast<int>(n));
        if (it == skin_of_node.end()) {
          skins_.push_back(
              anim::skinFromGltf(doc_, static_cast<size_t>(node.skin), skeleton_, static_cast<int>(n)));
          it = skin_of_node.emplace(static_cast<int>(n), static_cast<int>(skins_.size() - 1)).first;
        }
        d.skin = it->second;
      }
      if (prim.base_color_texture >= 0 && !prim.texcoords0.empty()) {
        const GltfImage& img = doc_.images[static_cast<size_t>(prim.base_color_texture)];
        if (img.width > 0 && img.height > 0) {
          auto key = std::make_tuple(prim.base_color_texture, prim.wrap_s, prim.wrap_t);
          auto it = texture_index.find(key);
          if (it == texture_index.end()) {
            MeshTexture t;
            t.width = img.width, t.height = img.height, t.rgba = img.rgba;
            t.wrap_s = static_cast<uint32_t>(prim.wrap_s), t.wrap_t = static_cast<uint32_t>(prim.wrap_t);
            textures_.push_back(std::move(t));
            it = texture_index.emplace(key, static_cast<int>(textures_.size() - 1)).first;
          }
          d.texture = it->second;
        }
      }
      // Morph targets as one target-major array each (the layout SkinSource takes).
      const size_t nv = prim.positions.size();
      bool target_normals = false;
      for (const GltfMorphTarget& t : prim.targets) target_normals |= t.normals.size() == nv;
      for (const GltfMorphTarget& t : prim.targets) {
        if (t.positions.size() == nv)
          d.morph_positions.insert(d.morph_positions.end(), t.positions.begin(), t.positions.end());
        else
          d.morph_positions.insert(d.morph_positions.end(), nv, Vec3{});
        if (!target_normals) continue;
        if (t.normals.size() == nv)
          d.morph_normals.insert(d.morph_normals.end(), t.normals.begin(), t.normals.end());
        else
          d.morph_normals.insert(d.morph_normals.end(), nv, Vec3{});
      }
      draws_.push_back(std::move(d));
    }
  }
}

SkinSource GltfModel::skinSource(const Pose& pose, size_t draw) const {
  const Draw& d = draws_.at(draw);
  const GltfPrimitive& prim = primitiveOf(draw);
  const size_t n = prim.positions.size();
  SkinSource s;
  s.positions = prim.positions;
  if (prim.normals.size() == n) s.normals = prim.normals;
  const size_t joint = static_cast<size_t>(skeleton_.findSource(d.node));
  const size_t wcount = skeleton_.weightCount(joint);
  if (wcount > 0 && !prim.targets.empty()) {  // morph targets move with the weights of the mesh's node
    if (wcount != prim.targets.size())
      throw Error(doc_.path + ": meshes[" + std::to_string(d.mesh) + "].primitives[" +
                  std::to_string(d.primitive) + "]: " + std::to_string(prim.targets.size()) +
                  " morph targets but the mesh has " + std::to_string(wcount) + " weights");
    s.morph_positions = d.morph_positions;
    if (!s.normals.empty()) s.morph_normals = d.morph_normals;
    s.morph_weights = std::span<const float>(pose.weights.data() + skeleton_.weightOffset(joint), wcount);
  }
  if (d.skin >= 0 && !prim.joints0.empty()) {
    s.joints0 = prim.joints0, s.weights0 = prim.weights0;
    s.joints1 = prim.joints1, s.weights1 = prim.weights1;
    s.palette = pose.palettes.at(static_cast<size_t>(d.skin));
  }
  s.dual_quaternion = pose.skinning == anim::SkinningMethod::kDualQuaternion;
  return s;
}

GltfModel::DrawInfo GltfModel::drawInfo(size_t draw) const {
  const Draw& d = draws_.at(draw);
  return {d.node, d.mesh, d.primitive, d.skin};
}

const Mat4& GltfModel::meshToModel(const Pose& pose, size_t draw) const {
  return pose.models.at(static_cast<size_t>(skeleton_.findSource(draws_.at(draw).node)));
}

int GltfModel::findDraw(int mesh, int primitive, int node) const {
  for (size_t i = 0; i < draws_.size(); ++i)
    if (draws_[i].mesh == mesh && draws_[i].primitive == primitive && (node < 0 || draws_[i].node == node))
      return static_cast<int>(i);
  return -1;
}

const GltfPrimitive& GltfModel::primitiveOf(size_t draw) const {
  const Draw& d = draws_.at(draw);
  return doc_.meshes[static_cast<size_t>(d.mesh)].primitives[static_cast<size_t>(d.primitive)];
}

int GltfModel::findClip(const std::string& name_or_index) const {
  for (size_t i = 0; i < clips_.size(); ++i)
    if (clips_[i].name == name_or_index) return static_cast<int>(i);
  if (name_or_index.empty() || name_or_index.size() > 9) return -1;
  for (char c : name_or_index)
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  const size_t index = std::stoul(name_or_index);
  return index < clips_.size() ? static_cast<int>(index) : -1;
}

std::string GltfModel::clipList() const {
  std::string out;
  for (size_t i = 0; i < clips_.size() && i < 20; ++i)
    out += (i ? ", " : "") + std::to_string(i) + " '" + clips_[i].name + "'";
  if (clips_.size() > 20) out += ", ...";
  return out;
}

int GltfModel::objectClip(const std::string& path, const std::string& clip) const {
  if (drawnPrimitives() == 0 && splats().size() == 0)
    throw Error(path + ": has no triangle mesh and no KHR_gaussian_splatting primitive to draw");
  if (clip.empty()) return clips_.empty() ? -1 : 0;
  const int index = findClip(clip);
  if (index < 0)
    throw Error(path + ": no animation named or numbered '" + clip + "' (" + std::to_string(clips_.size()) +
                " animations" + (clips_.empty() ? "" : ": " + clipList()) + ")");
  return index;
}

anim::RetargetReport GltfModel::addRetargetedClips(const GltfDocument& source) {
  const anim::Skeleton source_skeleton = anim::skeletonFromGltf(source);
  anim::RetargetReport total;
  for (size_t a = 0; a < source.animations.size(); ++a) {
    const anim::Clip clip = anim::clipFromGltf(source, a, source_skeleton);
    anim::Clip out;
    anim::RetargetReport report;
    anim::RetargetJob job;
    job.clip = &clip;
    job.target = &skeleton_;
    job.output = &out;
    job.report = &report;
    job.run();
    if (out.name.empty()) out.name = source.path + "#" + std::to_string(a);
    if (std::string why = out.validate(skeleton_); !why.empty())
      throw Error(source.path + ": animations[" + std::to_string(a) + "]: " + why);
    clips_.push_back(std::move(out));
    total.mapped += report.mapped;
    total.dropped += report.dropped;
    for (const std::string& m : report.missing_joints)
      if (std::find(total.missing_joints.begin(), total.missing_joints.end(), m) ==
          total.missing_joints.end())
        total.missing_joints.push_back(m);
    total.notes.insert(total.notes.end(), report.notes.begin(), report.notes.end());
  }
  return total;
}

size_t GltfModel::vertexCount() const {
  size_t n = 0;
  for (const Draw& d : draws_)
    n += doc_.meshes[static_cast<size_t>(d.mesh)]
             .primitives[static_cast<size_t>(d.primitive)]
             .positions.size();
  return n;
}

void GltfModel::pose(int clip, float time, Pose& out) const {
  sample(clip, time, out);
  evaluate(out);
}

void GltfModel::sample(int clip, float time, Pose& out) const {
  if (clip >= static_cast<int>(clips_.size()))
    throw Error(doc_.path + ": clip " + std::to_string(clip) + " does not exist");
  out.local = skeleton_.rest();
  out.weights = skeleton_.restWeights();
  if (clip >= 0)
    anim::SamplingJob{&clips_[static_cast<size_t>(clip)], &skeleton_, time, out.local, out.weights}.run();
}

void GltfModel::evaluate(Pose& out, int skip_draw) const {
  if (out.local.size() != skeleton_.size() || out.weights.size() != skeleton_.weightTotal())
    throw Error(doc_.path + ": pose does not belong to this model");
  out.models.resize(skeleton_.size());
  anim::LocalToModelJob ltm;
  ltm.skeleton = &skeleton_;
  ltm.input = out.local;
  ltm.output = out.models;
  ltm.run();

  std::vector<std::vector<Mat4>>& palettes = out.palettes;
  palettes.resize(skins_.size());
  for (size_t s = 0; s < skins_.size(); ++s) {
    palettes[s].resize(skins_[s].joints.size());
    anim::PaletteJob{&skins_[s], out.models, palettes[s]}.run();
  }
  out.primitives.resize(draws_.size());
  for (size_t i = 0; i < draws_.size(); ++i) {
    PosedPrimitive& pp = out.primitives[i];
    if (static_cast<int>(i) == skip_draw) {
      pp.positions.clear();
      pp.normals.clear();
      continue;
    }
    const SkinSource skin = skinSource(out, i);
    const bool moves = skin.skinned() || !skin.morph_weights.empty();
    if (moves && out.skin_in_renderer) {
      pp.positions.clear();
      pp.normals.clear();
      continue;
    }
    pp.positions.resize(skin.positions.size());
    pp.normals.resize(skin.normals.size());
    if (moves) {
      skin.run(pp.positions, pp.normals);
    } else {
      std::copy(skin.positions.begin(), skin.positions.end(), pp.positions.begin());
      std::copy(skin.normals.begin(), skin.normals.end(), pp.normals.begin());
    }
  }
}

std::vector<RenderMesh> GltfModel::renderMeshes(const Pose& pose, const Mat4& model_to_world) const {
  if (pose.primitives.size() != draws_.size() || pose.models.size() != skeleton_.size())
    throw Error(doc_.path + ": pose does not belong to this model");
  std::vector<RenderMesh> out;
  out.reserve(draws_.size());
  for (size_t i = 0; i < draws_.size(); ++i) {
    const Draw& d = draws_[i];
    const GltfPrimitive& prim =
        doc_.meshes[static_cast<size_t>(d.mesh)].primitives[static_cast<size_t>(d.primitive)];
    const PosedPrimitive& pp = pose.primitives[i];
    RenderMesh m;
    m.positions = pp.positions;
    m.normals = pp.normals;
    if (pose.skin_in_renderer && pp.positions.empty()) {  // left to the renderer's skin pass by evaluate()
      m.skin = skinSource(pose, i);
      if (!m.skin.skinned() && m.skin.morph_weights.empty()) {  // (a skipped static draw)
        m.positions = m.skin.positions, m.normals = m.skin.normals;
        m.skin = {};
      }
    }
    if (prim.texcoords0.size() == prim.positions.size()) m.uvs = prim.texcoords0;
    if (prim.colors0.size() == prim.positions.size()) m.colors = prim.colors0;
    m.indices = prim.indices;
    m.base_color = prim.base_color;
    m.texture = d.texture >= 0 ? &textures_[static_cast<size_t>(d.texture)] : nullptr;
    // Skinned vertices come out in the mesh node's space (see anim/local_to_model.h), as do static ones.
    m.object_to_world = model_to_world * meshToModel(pose, i);
    out.push_back(m);
  }
  return out;
}

}  // namespace sf
