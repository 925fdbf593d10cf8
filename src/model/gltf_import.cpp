// Conversion from the glTF reader's plain structs to skeletons, skin bindings and clips.
#include "model/gltf_import.h"

#include <cctype>
#include <string>

#include "core/error.h"

namespace sf::anim {

Skeleton skeletonFromGltf(const GltfDocument& doc, int scene) {
  const size_t n = doc.nodes.size();
  if (scene < 0) scene = doc.default_scene >= 0 ? doc.default_scene : (doc.scenes.empty() ? -1 : 0);
  if (scene >= static_cast<int>(doc.scenes.size()))
    throw Error(doc.path + ": scene " + std::to_string(scene) + " does not exist");
  // Roots: the scene's first, then the other parentless nodes in index order.
  std::vector<int> roots;
  std::vector<char> is_listed(n, 0);
  if (scene >= 0)
    for (int r : doc.scenes[static_cast<size_t>(scene)].roots)
      if (!is_listed[static_cast<size_t>(r)]) roots.push_back(r), is_listed[static_cast<size_t>(r)] = 1;
  for (size_t i = 0; i < n; ++i)
    if (doc.nodes[i].parent < 0 && !is_listed[i]) roots.push_back(static_cast<int>(i));
  // Parent-first node order (depth-first, children in file order).
  std::vector<int> order, stack(roots.rbegin(), roots.rend());
  while (!stack.empty()) {
    int k = stack.back();
    stack.pop_back();
    order.push_back(k);
    const std::vector<int>& c = doc.nodes[static_cast<size_t>(k)].children;
    for (auto it = c.rbegin(); it != c.rend(); ++it) stack.push_back(*it);
  }
  std::vector<int> position(n, -1);
  for (size_t p = 0; p < order.size(); ++p) position[static_cast<size_t>(order[p])] = static_cast<int>(p);
  std::vector<JointDesc> descs(order.size());
  for (size_t p = 0; p < order.size(); ++p) {
    const GltfNode& node = doc.nodes[static_cast<size_t>(order[p])];
    JointDesc& d = descs[p];
    d.name = node.name;
    d.parent = node.parent < 0 ? -1 : position[static_cast<size_t>(node.parent)];
    d.rest = {node.translation, node.rotation, node.scale};
    d.source = order[p];
    if (node.mesh >= 0) {
      const GltfMesh& mesh = doc.meshes[static_cast<size_t>(node.mesh)];
      d.morph_weights = static_cast<int>(mesh.weights.size());
      d.rest_weights = node.weights.empty() ? mesh.weights : node.weights;
    }
  }
  return Skeleton::build(descs);
}

Clip clipFromGltf(const GltfDocument& doc, size_t animation, const Skeleton& skeleton) {
  if (animation >= doc.animations.size())
    throw Error(doc.path + ": animation " + std::to_string(animation) + " does not exist (" +
                std::to_string(doc.animations.size()) + " animations)");
  const GltfAnimation& a = doc.animations[animation];
  Clip clip;
  clip.name = a.name;
  clip.duration = a.duration;
  for (const GltfChannel& ch : a.channels) {
    const GltfSampler& s = a.samplers[static_cast<size_t>(ch.sampler)];
    Track t;
    t.joint = skeleton.findSource(ch.node);
    if (t.joint < 0)
      throw Error(doc.path + ": animations[" + std::to_string(animation) + "]: node " +
                  std::to_string(ch.node) + " is not in the skeleton");
    t.joint_name = skeleton.names()[static_cast<size_t>(t.joint)];
    switch (ch.path) {
      case GltfPath::kTranslation:
        t.target = TrackTarget::kTranslation;
        break;
      case GltfPath::kRotation:
        t.target = TrackTarget::kRotation;
        break;
      case GltfPath::kScale:
        t.target = TrackTarget::kScale;
        break;
      case GltfPath::kWeights:
        t.target = TrackTarget::kWeights;
        break;
    }
    switch (s.interpolation) {
      case GltfInterpolation::kStep:
        t.interpolation = Interpolation::kStep;
        break;
      case GltfInterpolation::kLinear:
        t.interpolation = Interpolation::kLinear;
        break;
      case GltfInterpolation::kCubicSpline:
        t.interpolation = Interpolation::kCubicSpline;
        break;
    }
    t.times = s.times;
    t.values = s.values;
    t.components = s.components;
    if (t.target == TrackTarget::kRotation)  // glTF (x, y, z, w) -> (w, x, y, z), tangents included
      for (size_t i = 0; i + 3 < t.values.size(); i += 4) {
        float w = t.values[i + 3];
        t.values[i + 3] = t.values[i + 2];
        t.values[i + 2] = t.values[i + 1];
        t.values[i + 1] = t.values[i];
        t.values[i] = w;
      }
    clip.tracks.push_back(std::move(t));
  }
  for (const GltfAnimationEvent& e : a.events)
    clip.events.push_back({e.name, e.time});  // extras.events, in time order
  if (std::string why = clip.validate(skeleton); !why.empty())
    throw Error(doc.path + ": animations[" + std::to_string(animation) + "] '" + a.name + "': " + why);
  return clip;
}

SkinBinding skinFromGltf(const GltfDocument& doc, size_t skin, const Skeleton& skeleton, int mesh_node) {
  if (skin >= doc.skins.size())
    throw Error(doc.path + ": skin " + std::to_string(skin) + " does not exist (" +
                std::to_string(doc.skins.size()) + " skins)");
  const GltfSkin& s = doc.skins[skin];
  if (mesh_node < 0)
    for (size_t i = 0; i < doc.nodes.size() && mesh_node < 0; ++i)
      if (doc.nodes[i].skin == static_cast<int>(skin)) mesh_node = static_cast<int>(i);
  SkinBinding b;
  b.name = s.name;
  b.inverse_bind = s.inverse_bind;
  for (int node : s.joints) {
    int j = skeleton.findSource(node);
    if (j < 0)
      throw Error(doc.path + ": skins[" + std::to_string(skin) + "]: joint node " + std::to_string(node) +
                  " is not in the skeleton");
    b.joints.push_back(j);
  }
  b.mesh_joint = mesh_node < 0 ? -1 : skeleton.findSource(mesh_node);
  return b;
}

int findAnimation(const GltfDocument& doc, const std::string& name_or_index) {
  for (size_t i = 0; i < doc.animations.size(); ++i)
    if (doc.animations[i].name == name_or_index) return static_cast<int>(i);
  if (name_or_index.empty() || name_or_index.size() > 9) return -1;
  for (char c : name_or_index)
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  size_t index = std::stoul(name_or_index);
  return index < doc.animations.size() ? static_cast<int>(index) : -1;
}

}  // namespace sf::anim
