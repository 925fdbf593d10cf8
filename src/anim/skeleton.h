// Skeletons: a joint hierarchy in parent-first order with names and a rest pose of local TRS transforms,
// plus the morph-weight layout of the joints that carry a morphable mesh. Every node of a glTF scene is a
// joint here (meshes, cameras and empty nodes included), so one pose drives the whole hierarchy.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/math.h"

namespace sf::anim {

// A local transform: the matrix is T * R * S (column vectors).
struct Transform {
  Vec3 translation;
  Quat rotation;  // unit quaternion (w, x, y, z)
  Vec3 scale{1, 1, 1};
};

// T * R * S as a 4x4 matrix.
Mat4 toMatrix(const Transform& t);

// Joint description used to build a skeleton; parents may come in any order.
struct JointDesc {
  std::string name;
  int parent = -1;  // index into the same description list, -1 for a root
  Transform rest;
  int morph_weights = 0;            // number of morph weights this joint carries (its mesh's targets)
  std::vector<float> rest_weights;  // morph_weights values (empty: zeros)
  int source = -1;                  // caller's id for the joint (the glTF node index), kept as is
};

class Skeleton {
 public:
  Skeleton() = default;

  // Builds a skeleton from joint descriptions in any order: joints are reordered parent-first (depth-first
  // from each root in list order, children in list order). Throws sf::Error naming the joint when a parent
  // index is out of range or the hierarchy has a cycle. Names need not be unique; find() returns the first.
  static Skeleton build(std::span<const JointDesc> joints);

  size_t size() const { return names_.size(); }
  const std::vector<std::string>& names() const { return names_; }
  // Parent of each joint (-1 for roots); parents[i] < i always.
  const std::vector<int>& parents() const { return parents_; }
  const std::vector<Transform>& rest() const { return rest_; }
  // Caller ids (JointDesc::source) per joint.
  const std::vector<int>& sources() const { return sources_; }

  // Joint index of a name, or -1.
  int find(std::string_view name) const;
  // Joint index of a caller id (JointDesc::source), or -1.
  int findSource(int source) const;

  // Morph weights: every joint with morph_weights > 0 owns the range [weightOffset(j), +weightCount(j))
  // of one flat weight array of weightTotal() floats, shared by all clips and poses of this skeleton.
  size_t weightTotal() const { return rest_weights_.size(); }
  size_t weightOffset(size_t joint) const { return weight_offsets_[joint]; }
  size_t weightCount(size_t joint) const { return weight_counts_[joint]; }
  const std::vector<float>& restWeights() const { return rest_weights_; }

  // Why the skeleton is unusable (empty when it is fine): parents must precede children.
  std::string validate() const;

 private:
  std::vector<std::string> names_;
  std::vector<int> parents_;
  std::vector<Transform> rest_;
  std::vector<int> sources_;
  std::vector<size_t> weight_offsets_, weight_counts_;
  std::vector<float> rest_weights_;
  std::unordered_map<std::string, int> by_name_;
  std::unordered_map<int, int> by_source_;
};

}  // namespace sf::anim
