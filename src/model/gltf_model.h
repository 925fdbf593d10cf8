// A glTF model ready to pose and draw: the document, its skeleton (every node a joint), its clips, skins
// and base-colour textures, and its KHR_gaussian_splatting splats. pose() runs the animation sequence
// (sample clip -> local to model -> palettes -> morph targets -> skinning) on the CPU; renderMeshes()
// turns a pose into the renderers' RenderMesh list.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "anim/clip.h"
#include "anim/local_to_model.h"
#include "anim/retarget.h"
#include "anim/skeleton.h"
#include "anim/skinning.h"
#include "core/gaussian_cloud.h"
#include "io/gltf.h"
#include "render/mesh.h"

namespace sf {

class GltfModel {
 public:
  // Loads a .gltf / .glb; throws sf::Error naming the file and element on malformed content.
  explicit GltfModel(const std::string& path);
  explicit GltfModel(GltfDocument doc);

  const GltfDocument& document() const { return doc_; }
  const anim::Skeleton& skeleton() const { return skeleton_; }
  const std::vector<anim::Clip>& clips() const { return clips_; }
  // Clip by exact name, else by decimal index; -1 when neither matches. Clips are the document's
  // animations in file order, then any added by addRetargetedClips.
  int findClip(const std::string& name_or_index) const;
  // Appends every animation of `source` retargeted onto this model's skeleton by joint name (tracks of
  // joints this skeleton lacks are dropped and reported). Throws sf::Error when a clip does not fit.
  anim::RetargetReport addRetargetedClips(const GltfDocument& source);
  // "0 'Walk', 1 'Run'" (at most 20), for messages.
  std::string clipList() const;
  // The clip an object of this model (loaded from `path`, which messages name) plays, as a scene JSON's
  // "clip" or --clip names it (`clip`: a name or an index; empty: the first animation, -1 without any).
  // Throws sf::Error when the model draws nothing (no triangle mesh, no KHR_gaussian_splatting primitive) or
  // no clip matches. The scene loader and the web page's WebAssembly both take objects' clips through it.
  int objectClip(const std::string& path, const std::string& clip) const;

  // Triangle primitives drawn by the model's nodes (points, lines and splat primitives are not drawn).
  size_t drawnPrimitives() const { return draws_.size(); }
  struct DrawInfo {
    int node = -1, mesh = -1, primitive = -1;
    int skin = -1;  // index into Pose::palettes, -1 when the draw is not skinned
  };
  DrawInfo drawInfo(size_t draw) const;
  // Index of the draw of (mesh, primitive) by `node` (node -1: any node), or -1.
  int findDraw(int mesh, int primitive, int node = -1) const;
  // The glTF primitive a draw shows.
  const GltfPrimitive& primitiveOf(size_t draw) const;
  size_t vertexCount() const;
  // The model's KHR_gaussian_splatting splats in model space (empty cloud when it has none).
  const GaussianCloud& splats() const { return splats_; }

  // One drawn primitive after posing, in the space of its mesh node.
  struct PosedPrimitive {
    std::vector<Vec3> positions, normals;
  };
  struct Pose {
    std::vector<anim::Transform> local;
    std::vector<float> weights;               // morph weights (skeleton layout)
    std::vector<Mat4> models;                 // model-space matrix per joint (= per glTF node)
    std::vector<PosedPrimitive> primitives;   // per drawn primitive, same order as the model's draws
    std::vector<std::vector<Mat4>> palettes;  // per skinned draw node (DrawInfo::skin)
    // Inputs of evaluate(): how skinned draws are skinned, and whether draws that move (skinned or morphed)
    // are left to the renderer (empty primitives here; renderMeshes() gives them a SkinSource).
    anim::SkinningMethod skinning = anim::SkinningMethod::kLinearBlend;
    bool skin_in_renderer = false;
  };
  // Poses the model at `time` seconds of clip `clip` (-1: the rest pose). The time is used as given
  // (sampling clamps it to the keys); wrap it with anim::wrapTime for looping playback.
  void pose(int clip, float time, Pose& out) const;
  // The two halves of pose(): sample() fills out.local and out.weights (clip -1: rest); callers may then
  // change them (blending, expressions, look-at) before evaluate() computes models, palettes and the
  // morphed, skinned primitives.
  void sample(int clip, float time, Pose& out) const;
  // `skip_draw` (>= 0): that draw's primitive is left unposed (empty), for callers that skin it on the GPU.
  void evaluate(Pose& out, int skip_draw = -1) const;
  // A draw's morph and skin inputs in a pose (spans into this model and `pose`): what evaluate() runs on the
  // CPU and the renderers' skin pass runs on the GPU. Throws sf::Error when the mesh's weights and targets
  // differ in count.
  SkinSource skinSource(const Pose& pose, size_t draw) const;

  // The posed primitives as render meshes placed by `model_to_world`. The spans point into `pose` and into
  // this model (textures, uvs, colours, indices): both must outlive the frame.
  std::vector<RenderMesh> renderMeshes(const Pose& pose, const Mat4& model_to_world) const;
  // Model-space matrix of a draw's mesh node in a pose (its posed vertices live in that node's space).
  const Mat4& meshToModel(const Pose& pose, size_t draw) const;

 private:
  struct Draw {
    int node = -1, mesh = -1, primitive = -1;
    int skin = -1;                                     // index into skins_, -1 when the node has no skin
    int texture = -1;                                  // index into textures_
    std::vector<Vec3> morph_positions, morph_normals;  // the primitive's targets, target-major (SkinSource)
  };
  void build();

  GltfDocument doc_;
  anim::Skeleton skeleton_;
  std::vector<anim::Clip> clips_;
  std::vector<anim::SkinBinding> skins_;  // one per skinned drawn node
  std::vector<MeshTexture> textures_;
  std::vector<Draw> draws_;
  GaussianCloud splats_;
};

}  // namespace sf
