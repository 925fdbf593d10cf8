// glTF document -> animation runtime objects: the skeleton of a document's node hierarchy, its skins
// as palette bindings and its animations as clips. Lives in sf_anim_gltf, apart from the runtime
// (sf_anim depends on sf_core only), as importers should.
#pragma once

#include <string>

#include "anim/clip.h"
#include "anim/local_to_model.h"
#include "anim/skeleton.h"
#include "io/gltf.h"

namespace sf::anim {

// Skeleton with one joint per glTF node (JointDesc::source = node index), parent-first: the roots of
// `scene` (default: the document's default scene, else scene 0) come first, then every other root node,
// so skins and animations may reach any node. Joint names are node names; rest transforms are the nodes'
// TRS; joints whose node has a mesh with morph targets carry that many morph weights (node weights, or the
// mesh's defaults, as rest values).
Skeleton skeletonFromGltf(const GltfDocument& doc, int scene = -1);

// Clip of doc.animations[animation], aimed at `skeleton` (built by skeletonFromGltf from the same
// document). Rotations become (w, x, y, z). Throws sf::Error when the clip does not fit the skeleton.
Clip clipFromGltf(const GltfDocument& doc, size_t animation, const Skeleton& skeleton);

// Binding of doc.skins[skin] to `skeleton`; mesh_node is the node holding the skinned mesh (default: the
// first node that uses this skin), whose joint becomes SkinBinding::mesh_joint.
SkinBinding skinFromGltf(const GltfDocument& doc, size_t skin, const Skeleton& skeleton, int mesh_node = -1);

// Index of an animation by exact name, else by decimal index; -1 when neither matches.
int findAnimation(const GltfDocument& doc, const std::string& name_or_index);

}  // namespace sf::anim
