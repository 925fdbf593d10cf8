// Character animator: what the character commands drive. Clips play with cross-fades; a locomotion blend
// picks idle / walk / run clips from the velocity; explicit clip weights override both; a face layer
// holds the expression (morph weights of the bound mesh); look-at aims the head into the neck and head
// joints within yaw and pitch limits and puts the residual into the eyes (eye joints, else ARKit gaze
// morph targets).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "anim/blending.h"
#include "character/character.h"

namespace sf::character {

struct LookAtLimits {
  float head_yaw_deg = 60, head_pitch_deg = 35;  // neck + head together
  float neck_share = 0.4f;                       // of the head aim, the rest goes to the head joint
  float eye_yaw_deg = 30, eye_pitch_deg = 25;    // residual the eyes take
};

class Animator {
 public:
  explicit Animator(std::shared_ptr<const Character> character);

  const Character& character() const { return *character_; }

  // Cross-fades to `clip` (-1: rest pose) over `fade` seconds, from wherever playback is. Clears explicit
  // clip weights and locomotion.
  void play(int clip, float fade = 0.25f);
  // Explicit blend of clips (clip index, weight), each playing from its own time; replaces play() and
  // locomotion until play() or setVelocity() is called again.
  void setClipWeights(std::vector<std::pair<int, float>> weights);
  // Locomotion: speed (m/s) picks and blends the idle / walk / run clips (clip names containing "idle",
  // "walk", "run", case-insensitive; 0, 1.4 and 3.5 m/s). Without walk and run clips: the idle clip when
  // there is one, else the current clip plays on, faster or slower with the speed relative to 1.4 m/s.
  void setVelocity(Vec3 velocity);
  // Face layer: morph weights from Character::mapExpression (empty clears it).
  void setExpression(std::vector<float> morph);
  // The face layer's morph weights (empty: none set).
  const std::vector<float>& expression() const { return morph_; }
  // Aim at a point in the character's model space, or stop aiming.
  void lookAt(std::optional<Vec3> target_model);
  void setLookAtLimits(const LookAtLimits& limits) { limits_ = limits; }

  // Advances clip times and fades by dt seconds (dt < 0 is treated as 0).
  void update(float dt);

  // The pose of this moment into `out` (sampled, blended, face layer, look-at, evaluated), then the
  // splats deformed on the CPU unless `pose_only` (the GPU deform pass does it; the bound mesh is then also
  // left for the GPU to skin when Character::gpuSkinnable()).
  void evaluate(Character::Frame& out, bool pose_only = false) const;
  // The pose of this moment for a character drawn as its glTF meshes (Character::skinOnly): sampled,
  // blended, face layer, look-at, then GltfModel::evaluate (draws that move are left to the renderer's skin
  // pass when pose.skin_in_renderer). Nothing is deformed.
  void evaluateMeshes(GltfModel::Pose& pose) const;

  // The clips of the current blend (clip index, weight), without those fading out.
  std::vector<std::pair<int, float>> activeClips() const;

  // Joints look-at uses (-1 when absent), and the last look-at's applied and residual yaw/pitch, degrees.
  int headJoint() const { return head_; }
  int neckJoint() const { return neck_; }
  struct AimReport {
    float yaw = 0, pitch = 0;          // applied to neck + head
    float eye_yaw = 0, eye_pitch = 0;  // applied to the eyes
    bool eyes_by_morph = false;
  };
  const AimReport& lastAim() const { return aim_; }

 private:
  struct Layer {
    int clip = -1;
    float time = 0, weight = 1;
  };
  int findClipContaining(const std::string& word) const;
  // Sampled, blended, face layer and look-at into pose.local / pose.weights (before GltfModel::evaluate).
  void sampleControlled(GltfModel::Pose& pose) const;
  void aim(GltfModel::Pose& pose, Character::Controls& controls) const;

  std::shared_ptr<const Character> character_;
  std::vector<Layer> layers_;       // the blend being played (one layer after a finished fade)
  std::vector<Layer> fading_from_;  // layers fading out
  anim::CrossFade fade_;
  bool fading_ = false;
  float speed_ = -1;  // < 0: no locomotion
  float rate_ = 1;    // playback rate of a single clip under locomotion without idle/walk/run clips
  std::vector<float> morph_;
  std::optional<Vec3> look_target_;
  LookAtLimits limits_;
  int head_ = -1, neck_ = -1, eye_left_ = -1, eye_right_ = -1;
  Vec3 head_forward_local_{0, 0, 1};  // +z of the model at rest, in the head joint's frame
  mutable AimReport aim_;
};

}  // namespace sf::character
