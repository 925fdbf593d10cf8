// Hierarchy concatenation (parents first, one pass) and skin palettes.
#include "anim/local_to_model.h"

#include "core/error.h"

namespace sf::anim {

std::string LocalToModelJob::validate() const {
  if (!skeleton) return "no skeleton";
  if (input.size() != skeleton->size())
    return "input holds " + std::to_string(input.size()) + " transforms, the skeleton has " +
           std::to_string(skeleton->size()) + " joints";
  if (output.size() != skeleton->size())
    return "output holds " + std::to_string(output.size()) + " matrices, the skeleton has " +
           std::to_string(skeleton->size()) + " joints";
  return skeleton->validate();
}

void LocalToModelJob::run() const {
  if (std::string why = validate(); !why.empty()) throw Error("LocalToModelJob: " + why);
  const std::vector<int>& parents = skeleton->parents();
  for (size_t j = 0; j < input.size(); ++j) {
    int p = parents[j];
    output[j] = (p < 0 ? root : output[static_cast<size_t>(p)]) * toMatrix(input[j]);
  }
}

std::string PaletteJob::validate() const {
  if (!skin) return "no skin";
  if (skin->inverse_bind.size() != skin->joints.size())
    return std::to_string(skin->inverse_bind.size()) + " inverse bind matrices for " +
           std::to_string(skin->joints.size()) + " joints";
  if (output.size() != skin->joints.size())
    return "output holds " + std::to_string(output.size()) + " matrices, the skin has " +
           std::to_string(skin->joints.size()) + " joints";
  for (size_t j = 0; j < skin->joints.size(); ++j)
    if (skin->joints[j] < 0 || static_cast<size_t>(skin->joints[j]) >= models.size())
      return "skin joint " + std::to_string(j) + " is skeleton joint " + std::to_string(skin->joints[j]) +
             ", outside the " + std::to_string(models.size()) + " model matrices";
  if (skin->mesh_joint >= 0 && static_cast<size_t>(skin->mesh_joint) >= models.size())
    return "mesh joint " + std::to_string(skin->mesh_joint) + " outside the " +
           std::to_string(models.size()) + " model matrices";
  return {};
}

void PaletteJob::run() const {
  if (std::string why = validate(); !why.empty()) throw Error("PaletteJob: " + why);
  Mat4 mesh_inverse;
  if (skin->mesh_joint >= 0) {
    const Mat4& m = models[static_cast<size_t>(skin->mesh_joint)];
    // A singular mesh transform (zero scale) hides the mesh anyway; keep the palette finite.
    if (determinant(m.linear()) != 0) mesh_inverse = inverseAffine(m);
  }
  for (size_t j = 0; j < skin->joints.size(); ++j)
    output[j] = mesh_inverse * models[static_cast<size_t>(skin->joints[j])] * skin->inverse_bind[j];
}

}  // namespace sf::anim
