// Rig backends: the rig stage of a character branch (controls in, posed vertices out) behind one interface,
// the expression spaces an animation layer sends and their mapping onto a rig's controls, and the rig
// preview (one small gaussian per posed vertex).
//
// Both backends hand their frame to the engine as one SkinSource (morph basis + LBS): SkinSource::run is the
// CPU reference and the Vulkan frame's skin pass (deform/shaders/skin.comp) the GPU path, so the skinning
// cannot differ between backends.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "character/gnm_pack.h"
#include "core/gaussian_cloud.h"
#include "deform/skin_source.h"
#include "model/gltf_model.h"

namespace sf::character {

class RigBackend {  // the rig stage of a character branch: controls in, posed vertices out
 public:
  virtual ~RigBackend() = default;
  // "gnm" or "skinned".
  virtual std::string kind() const = 0;
  // The raw control vector (setRig): one name per control, in order.
  virtual const std::vector<std::string>& controlNames() const = 0;
  // Sets this frame's controls. Throws sf::Error when the length differs from controlNames() or a value is
  // not finite (the previous controls are kept).
  virtual void setControls(std::span<const float> controls) = 0;
  virtual size_t vertexCount() const = 0;
  // Triangle list of the posed mesh (3 vertex indices per triangle).
  virtual std::span<const uint32_t> triangles() const = 0;
  // TEXCOORD per vertex (may be empty).
  virtual std::span<const std::array<float, 2>> uvs() const = 0;
  // This frame's deformation as the engine's one skin source (morph basis + LBS): SkinSource::run is the
  // CPU reference and the Vulkan frame's skin pass (deform/shaders/skin.comp) the GPU path. Positions only
  // (no normals). The spans point into this rig and stay valid until the next call of a non-const member.
  virtual const SkinSource& skinSource() = 0;
  // Palette indices of the left and right eye joints (the joints of skinSource().joints0), -1 where the rig
  // has none.
  virtual std::array<int, 2> eyeJoints() const { return {-1, -1}; }
  // CPU: posed vertices via skinSource().run; `out` is resized to vertexCount().
  void pose(std::vector<Vec3>& out);
};

// The glTF path: the model's first skinned triangle primitive (boundDrawOf), its morph targets as the
// controls, skinned by its skin's palette at the rest pose or at a clip's pose, with optional joint rotations
// (look-at). Vertices come out in the glTF's model space (the mesh node's world transform is folded into the
// palette), the space fromSkinnedGltf's pack targets.
class SkinnedRig final : public RigBackend {
 public:
  // Throws sf::Error when the model has no skinned triangle primitive.
  explicit SkinnedRig(std::shared_ptr<const GltfModel> model);

  std::string kind() const override { return "skinned"; }
  const std::vector<std::string>& controlNames() const override { return control_names_; }
  void setControls(std::span<const float> controls) override;
  size_t vertexCount() const override;
  std::span<const uint32_t> triangles() const override { return triangles_; }
  std::span<const std::array<float, 2>> uvs() const override;
  const SkinSource& skinSource() override;
  // The skin joints matching the eye-joint name rule (gnm_pack.h) once per side, else -1.
  std::array<int, 2> eyeJoints() const override { return eyes_; }

  // The body pose the palette is taken at: clip -1 is the rest pose; `time` in seconds, as GltfModel::sample.
  // Throws sf::Error for a clip the model lacks.
  void setPose(int clip, float time);
  // Extra local rotations post-multiplied onto skeleton joints after sampling (look-at), as
  // Character::Controls::joint_rotations; joints outside the skeleton are ignored.
  void setJointOverrides(std::vector<std::pair<int, Quat>> overrides) { overrides_ = std::move(overrides); }
  const GltfModel& model() const { return *model_; }
  int draw() const { return draw_; }

 private:
  std::shared_ptr<const GltfModel> model_;
  int draw_ = -1;
  std::vector<std::string> control_names_;
  std::vector<float> controls_;
  std::vector<uint32_t> triangles_;
  std::array<int, 2> eyes_{-1, -1};
  int clip_ = -1;
  float time_ = 0;
  std::vector<std::pair<int, Quat>> overrides_;
  GltfModel::Pose pose_;
  std::vector<Mat4> palette_;
  SkinSource source_;
};

// The GNM path: a baked parametric head (gnm_pack.h). Controls: the pack's expression coefficients (one per
// basis vector), then [pitchL, yawL, pitchR, yawR] in radians, pitch positive-down (GNM's sign: an animator's
// positive-up pitch is negated on the way in). The gaze turns each eye joint about its own pivot (its posed
// position) in head-local axes, R = Ry(yaw) Rx(pitch); the eye's children follow. The neutral and the basis
// stay head-local and the pack's bind transform is folded into the palette,
//   palette[j] = bindTransform x model[j] x inverseBind[j],
// so the vertices come out in the body's bind space: bounds, culling and sorting must be taken from the posed
// vertices, never from the head-local neutral (on a real head the two are a metre apart).
class GnmRig final : public RigBackend {
 public:
  // Throws sf::Error naming the pack's source when pack.validate() fails.
  explicit GnmRig(GnmPack pack);
  // The same over a pack shared by several rigs (each with its own controls); pack must not be null.
  explicit GnmRig(std::shared_ptr<const GnmPack> pack);

  std::string kind() const override { return "gnm"; }
  const std::vector<std::string>& controlNames() const override { return pack_->control_names; }
  void setControls(std::span<const float> controls) override;
  size_t vertexCount() const override { return pack_->neutral.size(); }
  std::span<const uint32_t> triangles() const override { return pack_->triangles; }
  std::span<const std::array<float, 2>> uvs() const override { return pack_->uvs; }
  const SkinSource& skinSource() override;
  std::array<int, 2> eyeJoints() const override { return {pack_->eye_joints[0], pack_->eye_joints[1]}; }

  const GnmPack& pack() const { return *pack_; }
  std::span<const float> controls() const { return controls_; }
  // The joints' model matrices (head-local) of the last skinSource(), gaze applied.
  std::span<const Mat4> jointModels() const { return models_; }

 private:
  std::shared_ptr<const GnmPack> pack_;
  std::vector<float> controls_;
  std::vector<Mat4> models_, palette_;
  SkinSource source_;
};

// An expression space: what the animation layer sends (docs/formats/gnm-pack.md, "Expression spaces").
struct ExpressionSpace {
  struct Segment {
    std::string name;
    int start = 0;
    int count = 0;
  };
  std::string kind;  // "arkit52", "gnm" or "gnm68"
  int dim = 0;
  std::vector<Segment> segments;
};

// arkit52: the 52 ARKit blendshape weights in kArkit52 order (one segment "arkit").
ExpressionSpace arkit52Space();
// gnm: `coefficients` expression coefficients + [pitchL, yawL, pitchR, yawR] (segments "expression", "gaze");
// 383 + 4 = 387 for a full GNM head, a pack's basis count + 4 for ours.
ExpressionSpace gnmSpace(size_t coefficients = 383);
// gnm68: the first 64 coefficients + the same four gaze angles.
ExpressionSpace gnm68Space();
// The space a rig's controls are natively in: gnmSpace(basis count) for a GnmRig; arkit52 for a SkinnedRig
// whose morph targets carry ARKit names. Throws sf::Error when the rig offers none.
ExpressionSpace nativeSpace(const RigBackend& rig);

// Maps an expression vector in `space` onto `rig`'s controls:
//   arkit52 -> skinned: each ARKit name drives the morph target of the same name (arkitToMorphWeights);
//                       `missing` receives the names with a non-zero weight the mesh lacks;
//   arkit52 -> gnm:     coefficients = arkit x the pack's arkit_map, gaze 0; refused without an arkit_map;
//   gnm -> gnm:         as is (dim = the pack's basis count + 4);
//   gnm68 -> gnm:       the first 64 coefficients (the rest 0) and the gaze (the pack needs >= 64).
// Anything else is refused, never reinterpreted. Throws sf::Error naming the rig's source and the reason:
// an unknown kind, a dim the kind or rig does not have, or values.size() != space.dim (expected and given).
std::vector<float> mapToControls(const ExpressionSpace& space, std::span<const float> values,
                                 const RigBackend& rig, std::vector<std::string>* missing = nullptr);

// Rig preview colours, one RGB in [0, 1] per vertex. `tint`: "joint" (the dominant joint's hue; vertices
// whose dominant joint is an eye joint are cyan, and other joints' hues avoid cyan), "uv" (u, v as red and
// green), "height" (y from blue to red) or "normal" (a radial pseudo-normal from the bounds' centre).
// Throws sf::Error for an unknown tint, or when "joint" / "uv" lack their inputs.
// joints, weights: one per vertex for "joint"; uvs: one per vertex for "uv"; eye_joints: -1 for none.
std::vector<Vec3> rigPreviewColors(const std::string& tint, std::span<const Vec3> positions,
                                   std::span<const std::array<uint16_t, 4>> joints,
                                   std::span<const std::array<float, 4>> weights,
                                   std::span<const std::array<float, 2>> uvs, std::array<int, 2> eye_joints);
// The rig preview of a backend: one isotropic gaussian of standard deviation `sigma` (metres) per posed
// vertex at the rig's current controls, opacity 0.9, coloured by rigPreviewColors (joints and weights from
// the skin source). The cloud lives where the rig's vertices do (its output space). sigma must be positive.
GaussianCloud rigPreviewCloud(RigBackend& rig, const std::string& tint, float sigma);

}  // namespace sf::character
