// From local joint transforms to model-space matrices, and from those to a skin's joint palette.
//
// Palette (glTF 2.0, "Skins"): for joint j of a skin bound to a mesh node m,
//   palette[j] = inverse(world(m)) * world(joint j) * inverseBind[j]
// so that skinned vertices come out in the mesh node's local space; drawing them with world(m) places
// them at world(joint) * inverseBind * v, i.e. the mesh node's own transform has no effect, as the
// specification requires.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "anim/skeleton.h"

namespace sf::anim {

// Local-to-model: model[j] = root * model[parent(j)] * local[j] (root for roots).
struct LocalToModelJob {
  const Skeleton* skeleton = nullptr;
  std::span<const Transform> input;  // skeleton->size() local transforms
  Mat4 root;                         // transform applied above the roots (identity by default)
  std::span<Mat4> output;            // skeleton->size() model-space matrices

  std::string validate() const;  // empty when fine, otherwise why
  void run() const;              // validates, then computes; throws sf::Error with the reason when invalid
};

// A skin bound to a skeleton: its joints (skeleton indices), their inverse bind matrices and the joint
// that holds the skinned mesh (-1: the mesh sits at the model origin).
struct SkinBinding {
  std::string name;
  std::vector<int> joints;
  std::vector<Mat4> inverse_bind;
  int mesh_joint = -1;
};

// Joint palette of a skin from model-space matrices (see the formula above).
struct PaletteJob {
  const SkinBinding* skin = nullptr;
  std::span<const Mat4> models;  // LocalToModelJob output (one per skeleton joint)
  std::span<Mat4> output;        // skin->joints.size() matrices

  std::string validate() const;
  void run() const;
};

}  // namespace sf::anim
