// Splat characters: gaussians bound to a skinned, morphing glTF surface (character/binding.h), built from
// a glTF alone or from a trained splat and its skin, stored as a package (docs/formats/character.md) and
// deformed per frame.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "character/binding.h"
#include "character/expression.h"
#include "core/gaussian_cloud.h"
#include "render/cpu_renderer.h"
#include "model/gltf_model.h"

namespace sf::character {

class Character {
 public:
  // Builder (1): samples `count` gaussians on the surface of the model's first skinned triangle primitive
  // (the first triangle primitive when none is skinned), area-weighted and deterministic for a seed;
  // colour from the base-colour texture x factor x vertex colour at the sample; tangent sizes from the
  // sampling density (sqrt(area / count)), a tenth of that along the normal; each bound to the triangle it
  // was sampled on. Throws sf::Error when the model has no triangle primitive.
  static Character fromGltf(std::shared_ptr<const GltfModel> model, size_t count, uint32_t seed = 1);

  // Builder (2): binds every splat of `splats` (in the bind-pose space of the model's first skinned
  // primitive) to the nearest triangle of that primitive's bind-pose mesh.
  static Character bindSplats(std::shared_ptr<const GltfModel> model, GaussianCloud splats);

  // Builder (2), per-vertex form (the LAM avatar layout, docs/formats/character.md): row i of `splats`
  // belongs to vertex i of the bound primitive; its centre is vertex_i + offset_scale * xyz_i and it is
  // bound to the largest triangle around vertex i. `rgb_colors`: the file's f_dc are plain RGB in [0, 1]
  // (converted to SH DC) rather than SH coefficients. Throws when the counts differ.
  static Character bindPerVertex(std::shared_ptr<const GltfModel> model, GaussianCloud splats, float offset_scale, bool rgb_colors);

  // Rig preview: one small isotropic gaussian per vertex of the bound primitive, bound to that vertex (the
  // same slots and deform path as any character), tinted by `tint`: "joint" (dominant skin joint, a
  // colour per joint), "uv" (TEXCOORD_0 as red/green), "height" (bind-pose y from blue to red) or
  // "normal" (a radial pseudo-normal from the mesh centre, mapped to RGB). Throws for an unknown tint.
  static Character rigPreview(std::shared_ptr<const GltfModel> model, const std::string& tint);

  // Adds the animations of another glTF (e.g. the LAM avatar's animation.glb) retargeted onto the skin by
  // joint name; they are stored in the package and become the default clip source when the skin has none.
  // Returns the retargeting report (tracks mapped and dropped, joints missing).
  anim::RetargetReport attachClips(const std::string& animation_file);

  // Loads a package directory: character.json is read, then every file's size, SHA-256 and count are
  // verified before anything is built. Errors name the file and the cause.
  static Character loadPackage(const std::string& dir);
  // Writes a package directory (created if needed): character.json, splats.ply, bindings.bin and the skin
  // file (copied). Files are written atomically; character.json last.
  void savePackage(const std::string& dir) const;

  const GltfModel& model() const { return *model_; }
  std::shared_ptr<const GltfModel> modelPtr() const { return model_; }
  const GaussianCloud& splats() const { return splats_; }
  const std::vector<SplatBinding>& bindings() const { return bindings_; }
  int boundDraw() const { return draw_; }
  const std::string& source() const { return source_; }
  const std::string& expressionSpace() const { return expression_space_; }
  const std::string& defaultClip() const { return default_clip_; }

  // Per-frame controls on top of the clip: an expression (morph weights of the bound mesh) and joint
  // rotations applied after sampling (look-at), as local rotations post-multiplied per joint.
  struct Controls {
    std::vector<float> morph;  // one per morph target of the bound mesh, or empty (the clip's weights)
    std::vector<std::pair<int, Quat>> joint_rotations;  // (skeleton joint, extra local rotation)
  };
  // Maps an expression to the bound mesh's morph weights. Throws sf::Error when the character does not
  // declare the space or the vector has the wrong length; `missing` receives the ARKit names with non-zero
  // weight that the character lacks.
  std::vector<float> mapExpression(const Expression& e, std::vector<std::string>* missing = nullptr) const;
  size_t morphTargetCount() const;

  // One deformed frame: the model's pose, and every splat's centre and covariance in model space.
  struct Frame {
    GltfModel::Pose pose;
    std::vector<Vec3> positions;
    std::vector<Cov6> covariances;
  };
  // Poses the model (clip -1: rest) and deforms the splats on the CPU (the reference path).
  void deform(int clip, float time, Frame& out, const Controls* controls = nullptr) const;
  // Poses the model only (for the GPU deform pass); out.positions / covariances are left empty.
  // `skip_bound_draw`: the bound mesh is left unposed too (the frame's skin pass skins it, deformSource(f, true)).
  void pose(int clip, float time, Frame& out, const Controls* controls = nullptr, bool skip_bound_draw = false) const;
  // Applies controls to a sampled pose (out.pose.local / weights), before GltfModel::evaluate.
  void applyControls(const Controls& controls, GltfModel::Pose& pose) const;
  // Deforms the splats for an evaluated pose (out.pose) on the CPU.
  void deformFrame(Frame& out) const;
  // The bound primitive's triangle list, and its posed vertices / skin palette in a frame.
  const std::vector<uint32_t>& triangles() const { return triangles_; }
  std::span<const Vec3> posedVertices(const Frame& f) const;
  std::span<const Mat4> palette(const Frame& f) const;
  // The bindings as bindings.bin records (the GPU layout), for SplatDeformSource.
  std::span<const uint8_t> bindingRecords() const;
  // Whether the bound mesh can be skinned by the Vulkan frame's skin pass (a skinned draw, 4 or 8 influences).
  bool gpuSkinnable() const;
  // The GPU deform inputs for a frame: posed vertices from the frame, or (gpu_skin, with the bound draw
  // left unposed by Animator / GltfModel::evaluate) the bind-pose mesh, influences, morph deltas and this
  // frame's morph weights, skinned on the GPU. Spans point into this character and the frame.
  SplatDeformSource deformSource(const Frame& f, bool gpu_skin) const;

  // Resident bytes (CPU) of the splats, bindings and model data.
  size_t residentBytes() const;

 private:
  // A character on `model` with no splats yet: the bound draw, its triangles, expression space, clip.
  static Character startFrom(std::shared_ptr<const GltfModel> model);

  std::shared_ptr<const GltfModel> model_;
  GaussianCloud splats_;
  std::vector<SplatBinding> bindings_;
  int draw_ = -1;  // the model draw whose triangles the bindings index
  std::vector<uint32_t> triangles_;
  std::string source_, skin_path_, expression_space_ = "none", default_clip_, animations_path_;
};

// The bound mesh's triangle list: the primitive's indices, or 0..n-1 when it has none.
std::vector<uint32_t> triangleList(const GltfPrimitive& prim);

// The expression space a skin's draw offers: "arkit52" when its mesh's morph targets carry ARKit names,
// "morph" for other morph targets, "none" without morph targets.
std::string expressionSpaceOf(const GltfModel& model, int draw);

}  // namespace sf::character
