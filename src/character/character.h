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
#include "model/gltf_model.h"
#include "render/cpu_renderer.h"

namespace sf::character {

struct MouthHidden;  // character/mouth.h
struct Teeth;        // character/mouth.h
struct MouthMesh;    // character/mouth.h
struct Corrective;   // character/corrective.h

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
  static Character bindPerVertex(std::shared_ptr<const GltfModel> model, GaussianCloud splats,
                                 float offset_scale, bool rgb_colors);

  // Rig preview: one small isotropic gaussian (standard deviation `sigma`, bind-space metres) per vertex of
  // the bound primitive, bound to that vertex (the same slots and deform path as any character), tinted by
  // `tint` (character::rigPreviewColors, rig.h): "joint" (dominant skin joint, a colour per joint; the skin
  // joints the eye-joint name rule finds in cyan), "uv" (TEXCOORD_0 as red/green), "height" (bind-pose y
  // from blue to red) or "normal" (a radial pseudo-normal from the mesh centre, mapped to RGB). Throws for
  // an unknown tint or a sigma that is not positive.
  static Character rigPreview(std::shared_ptr<const GltfModel> model, const std::string& tint,
                              float sigma = 0.002f);

  // Builder (4): no splats, the skin alone: a plain glTF whose meshes are drawn posed (a script's spawn of a
  // .gltf / .glb). An Animator drives it as any character (clips, face layer on the bound primitive's morph
  // targets, look-at); Animator::evaluateMeshes poses it. Throws sf::Error when the model has no triangle
  // primitive.
  static Character skinOnly(std::shared_ptr<const GltfModel> model);

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
  // The clip a character object plays: `clip` (an animation name or index), else the package's default clip;
  // -1 (the rest pose) when both are empty. Throws sf::Error naming `where` (the package as the caller names
  // it) and the animations there are.
  int objectClip(const std::string& where, const std::string& clip) const;

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

  // An extra splat set drawn with the body in one frame (the teeth, a correction's new points), in the
  // body's space (mesh space of the bound draw).
  struct Part {
    std::string name;                      // "teeth", "corrective <name>"
    const GaussianCloud* cloud = nullptr;  // its splats (colours, rest values), owned by the character
    std::vector<Vec3> positions;           // this frame's centres and covariances, one per splat of cloud
    std::vector<Cov6> covariances;
    std::vector<float> opacities;  // this frame's opacities
    std::vector<Vec3> outline;     // teeth: the lip opening this frame (see applyTeethRim)
    GaussianCloud drawn;           // `cloud` with `opacities` (drawnCloud)
    // teeth: the mouth's meshes this frame (mouth.h mouthRenderMeshes) and their opacity (the teeth ramp).
    struct Mesh {
      const MouthMesh* source = nullptr;  // colour and triangles, owned by the character's Teeth
      std::vector<Vec3> positions, normals;
    };
    std::vector<Mesh> meshes;
    float mesh_opacity = 1;
  };
  // One deformed frame: the model's pose, and every splat's centre and covariance in model space.
  struct Frame {
    GltfModel::Pose pose;
    std::vector<Vec3> positions;
    std::vector<Cov6> covariances;
    // Set by deformFrame from the optional parts (docs/formats/character-extras.md): the body's opacities
    // when a part changed any this frame (else empty: the cloud's own) and the extra splat sets shown.
    std::vector<float> opacities;
    std::vector<Part> parts;
    GaussianCloud drawn;  // the body cloud with `opacities` (drawnCloud)
  };
  // Poses the model (clip -1: rest) and deforms the splats on the CPU (the reference path).
  void deform(int clip, float time, Frame& out, const Controls* controls = nullptr) const;
  // Poses the model only (for the GPU deform pass); out.positions / covariances are left empty.
  // `skip_bound_draw`: the bound mesh is left unposed too (the frame's skin pass skins it, deformSource(f,
  // true)).
  void pose(int clip, float time, Frame& out, const Controls* controls = nullptr,
            bool skip_bound_draw = false) const;
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
  // Whether the bound mesh can be skinned by the Vulkan frame's skin pass (a skinned draw, 4 or 8
  // influences).
  bool gpuSkinnable() const;
  // The GPU deform inputs for a frame: posed vertices from the frame, or (gpu_skin, with the bound draw
  // left unposed by Animator / GltfModel::evaluate) the bind-pose mesh, influences, morph deltas and this
  // frame's morph weights, skinned on the GPU. Spans point into this character and the frame.
  SplatDeformSource deformSource(const Frame& f, bool gpu_skin) const;

  // Resident bytes (CPU) of the splats, bindings and model data.
  size_t residentBytes() const;

  // Optional parts (docs/formats/character-extras.md): the closed mouth's hidden points, the teeth and the
  // pose correctives. loadPackage finds them; deformFrame applies those present and enabled; savePackage
  // writes them. Each must have been read for this character (its counts and indices).
  void setMouthHidden(std::shared_ptr<const MouthHidden> m) { mouth_hidden_ = std::move(m); }
  void setTeeth(std::shared_ptr<const Teeth> t) { teeth_ = std::move(t); }
  void setCorrective(std::shared_ptr<const Corrective> c) { corrective_ = std::move(c); }
  const MouthHidden* mouthHidden() const { return mouth_hidden_.get(); }
  const Teeth* teeth() const { return teeth_.get(); }
  const Corrective* corrective() const { return corrective_.get(); }
  // enabled = false: the part is ignored (its splats draw as any other; the frame is the package's without
  // it).
  struct PartSwitches {
    bool mouth_hidden = true, teeth = true, corrective = true;
  };
  PartSwitches& enabledParts() { return enabled_; }
  const PartSwitches& enabledParts() const { return enabled_; }
  // Whether deformFrame would change this frame through a part: an enabled mouth part (present), or an
  // enabled corrective whose weights in f.pose (evaluated; splats need not be deformed) are not all 0.
  // The GPU deform path deforms such frames on the CPU instead (CharacterWorld::renderObjects).
  bool partsActive(const Frame& f) const;
  // The cloud to draw for a frame: the body's own when f.opacities is empty, else f.drawn refreshed with
  // f.opacities (the copy is kept between frames and only its opacities rewritten while it matches).
  const GaussianCloud& drawnCloud(Frame& f) const;
  // A part's cloud with this frame's opacities (p.drawn, refreshed likewise).
  static const GaussianCloud& drawnCloud(Part& p);
  // f.opacities, filled from the cloud first when empty (for the parts that fade body splats).
  std::span<float> frameOpacities(Frame& f) const;

 private:
  // A character on `model` with no splats yet: the bound draw, its triangles, expression space, clip.
  static Character startFrom(std::shared_ptr<const GltfModel> model);

  std::shared_ptr<const GltfModel> model_;
  GaussianCloud splats_;
  std::vector<SplatBinding> bindings_;
  int draw_ = -1;  // the model draw whose triangles the bindings index
  std::vector<uint32_t> triangles_;
  std::string source_, skin_path_, expression_space_ = "none", default_clip_, animations_path_;
  std::shared_ptr<const MouthHidden> mouth_hidden_;
  std::shared_ptr<const Teeth> teeth_;
  std::shared_ptr<const Corrective> corrective_;
  PartSwitches enabled_;
};

// The bound mesh's triangle list: the primitive's indices, or 0..n-1 when it has none.
std::vector<uint32_t> triangleList(const GltfPrimitive& prim);

// The expression space a skin's draw offers: "arkit52" when its mesh's morph targets carry ARKit names,
// "morph" for other morph targets, "none" without morph targets.
std::string expressionSpaceOf(const GltfModel& model, int draw);

// The draw a character binds to and a skinned rig poses: the model's first skinned triangle primitive, else
// its first triangle primitive. Throws sf::Error when the model has no triangle primitive.
int boundDrawOf(const GltfModel& model);

// An arkit52 vector (52 values in kArkit52 order) as morph weights of a mesh whose targets are named
// `target_names`: each ARKit name drives the target of the same name; `missing` receives the names with a
// non-zero weight that no target carries. Returns `targets` weights.
// arkit must hold 52 values.
std::vector<float> arkitToMorphWeights(std::span<const float> arkit,
                                       const std::vector<std::string>& target_names, size_t targets,
                                       std::vector<std::string>* missing = nullptr);

}  // namespace sf::character
