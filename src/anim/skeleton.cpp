// Skeleton construction: parent-first ordering of an arbitrary joint list (iterative depth-first walk,
// so deep chains cannot overflow the stack), name lookup and the morph-weight layout.
#include "anim/skeleton.h"

#include "core/error.h"

namespace sf::anim {

Mat4 toMatrix(const Transform& t) {
  return Mat4::fromLinearTranslation(rotationMatrix(t.rotation) * Mat3::diagonal(t.scale), t.translation);
}

Skeleton Skeleton::build(std::span<const JointDesc> joints) {
  const size_t n = joints.size();
  std::vector<std::vector<int>> children(n);
  std::vector<int> roots;
  for (size_t i = 0; i < n; ++i) {
    int p = joints[i].parent;
    if (p < -1 || p >= static_cast<int>(n))
      throw Error("skeleton: joint " + std::to_string(i) + " '" + joints[i].name + "': parent " +
                  std::to_string(p) + " out of range");
    if (p == static_cast<int>(i))
      throw Error("skeleton: joint " + std::to_string(i) + " '" + joints[i].name + "' is its own parent");
    if (p < 0)
      roots.push_back(static_cast<int>(i));
    else
      children[static_cast<size_t>(p)].push_back(static_cast<int>(i));
  }
  // Depth-first, parent-first order.
  std::vector<int> order;
  order.reserve(n);
  std::vector<int> stack;
  for (auto r = roots.rbegin(); r != roots.rend(); ++r) stack.push_back(*r);
  while (!stack.empty()) {
    int j = stack.back();
    stack.pop_back();
    order.push_back(j);
    const auto& c = children[static_cast<size_t>(j)];
    for (auto it = c.rbegin(); it != c.rend(); ++it) stack.push_back(*it);
  }
  if (order.size() != n) {
    std::vector<char> placed(n, 0);
    for (int j : order) placed[static_cast<size_t>(j)] = 1;
    for (size_t i = 0; i < n; ++i)
      if (!placed[i])
        throw Error("skeleton: joint " + std::to_string(i) + " '" + joints[i].name +
                    "' is in a parent cycle");
  }
  std::vector<int> new_index(n);
  for (size_t k = 0; k < n; ++k) new_index[static_cast<size_t>(order[k])] = static_cast<int>(k);

  Skeleton s;
  s.names_.resize(n);
  s.parents_.resize(n);
  s.rest_.resize(n);
  s.sources_.resize(n);
  s.weight_offsets_.resize(n);
  s.weight_counts_.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const JointDesc& d = joints[static_cast<size_t>(order[k])];
    s.names_[k] = d.name;
    s.parents_[k] = d.parent < 0 ? -1 : new_index[static_cast<size_t>(d.parent)];
    s.rest_[k] = d.rest;
    s.rest_[k].rotation = normalize(d.rest.rotation);
    s.sources_[k] = d.source;
    size_t count = d.morph_weights > 0 ? static_cast<size_t>(d.morph_weights) : 0;
    s.weight_offsets_[k] = s.rest_weights_.size();
    s.weight_counts_[k] = count;
    for (size_t w = 0; w < count; ++w)
      s.rest_weights_.push_back(w < d.rest_weights.size() ? d.rest_weights[w] : 0.0f);
    s.by_name_.emplace(d.name, static_cast<int>(k));  // keeps the first joint of a repeated name
    if (d.source >= 0) s.by_source_.emplace(d.source, static_cast<int>(k));
  }
  return s;
}

int Skeleton::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? -1 : it->second;
}

int Skeleton::findSource(int source) const {
  auto it = by_source_.find(source);
  return it == by_source_.end() ? -1 : it->second;
}

std::string Skeleton::validate() const {
  for (size_t j = 0; j < parents_.size(); ++j)
    if (parents_[j] >= static_cast<int>(j) || parents_[j] < -1)
      return "joint " + std::to_string(j) + " '" + names_[j] + "' has parent " + std::to_string(parents_[j]) +
             ", not an earlier joint";
  return {};
}

}  // namespace sf::anim
