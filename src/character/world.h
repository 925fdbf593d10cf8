// The character commands (docs/formats/scene-json.md, "script"): a world of spawned characters driven by
// spawn-character, despawn, set-character-state, set-clip-weights, set-expression, set-controls, look-at and
// say, as a C++ API and as timed script commands from a scene JSON. What a spawn draws follows from what it
// names (docs/formats/character.md, "Spawn paths"): a splat character package, a decoder character bundle, a
// plain glTF / GLB (its meshes, posed by the animator) or a GNM pack (its rig preview: one gaussian per
// vertex). A character whose files fail to load keeps a visible placeholder (a capsule of splats) and logs
// one warning naming the file and cause.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "character/animator.h"
#include "character/bundle_character.h"
#include "render/cpu_renderer.h"

namespace sf::character {

class GnmRig;       // character/rig.h
struct GnmPack;     // character/gnm_pack.h
struct GnmPreview;  // world.cpp: a GNM pack's rig preview per spawn

// One timed command of a scene script. Fields not used by a command are left empty.
struct ScriptCommand {
  double t = 0;         // scene time, seconds
  std::string where;    // "scene.json: script[3]", for messages
  std::string command;  // one of kCommands
  std::string id;       // the character's id
  std::string package;  // spawn-character: package directory, bundle, .gltf / .glb or .sfgnm (resolved)
  Mat4 transform;       // spawn-character: model to world
  std::string clip;     // spawn-character / set-character-state: name or index
  std::optional<Vec3> velocity;                               // set-character-state
  float fade = 0.25f;                                         // set-character-state
  std::vector<std::pair<std::string, float>> clip_weights;    // set-clip-weights
  Expression expression;                                      // set-expression
  std::vector<std::pair<std::string, float>> named;           // set-expression by ARKit name (space arkit52)
  std::vector<float> controls;                                // set-controls: the whole raw control vector
  std::vector<std::pair<std::string, float>> named_controls;  // set-controls by control name
  std::optional<Vec3> target;                                 // look-at (world space); empty: stop
  std::string text;                                           // say
};

// Poses a character's frame for a backend: `pose(pose_only)` fills `f` (pose_only: the pose alone, for the
// GPU deform pass; else posed and deformed on the CPU). With gpu_deform the frame is posed only, unless an
// optional part changes it (an enabled mouth part, which reads the posed lips, or a corrective active at
// this pose: Character::partsActive), which deforms it on the CPU for both backends. Returns whether the
// frame is left to the GPU deform pass (its opacities and parts then cleared).
bool poseCharacterFrame(const Character& ch, bool gpu_deform, Character::Frame& f,
                        const std::function<void(bool pose_only)>& pose);
// Appends a posed character frame to a frame's lists: the body (`to_world` places the bound mesh's space;
// `deform`, when not null, is its GPU deform source and f's splats were not deformed here), then each part
// (the teeth with their per-splat rim for `cam` when given) and the mouth's meshes. What is appended
// points into `f` and the character.
void appendCharacterFrame(const Character& ch, Character::Frame& f, const Mat4& to_world, const Camera* cam,
                          const SplatDeformSource* deform, std::vector<RenderObject>& objects,
                          std::vector<RenderMesh>& meshes);

extern const char* const kCommands[8];
bool isCommand(const std::string& name);

class CharacterWorld {
 public:
  // Commands. Each throws sf::Error naming the character id and the cause (unknown id, unknown clip,
  // refused expression space), except a spawn whose files fail to load: that one keeps a placeholder. A
  // bundle declaring the orl rig backend is refused (sf::Error with orlRefusal's message), not a placeholder.
  // `package`: a splat character package or a decoder character bundle (a directory), a plain glTF / GLB
  // (.gltf, .glb: drawn as its meshes, one animator per spawn) or a GNM pack (.sfgnm: its rig preview).
  void spawn(const std::string& id, const std::string& package, const Mat4& model_to_world,
             const std::string& clip = {});
  void despawn(const std::string& id);
  void setState(const std::string& id, const std::string& clip, std::optional<Vec3> velocity, float fade);
  void setClipWeights(const std::string& id, const std::vector<std::pair<std::string, float>>& weights);
  void setExpression(const std::string& id, const Expression& expression);
  // The character's raw controls: a GNM pack's coefficients then its four gaze angles, a decoder character's
  // rig controls, a splat or glTF character's morph weights (of its bound mesh). `values`: the whole vector
  // (its length must be the control count); `named`: the controls of those names, the others keep their
  // values. Throws sf::Error naming the character, the expected count or the unknown name and the known ones.
  void setControls(const std::string& id, const std::vector<float>& values,
                   const std::vector<std::pair<std::string, float>>& named = {});
  void lookAt(const std::string& id, std::optional<Vec3> target_world);
  void say(const std::string& id, const std::string& text);

  // Runs a script command (errors are prefixed with its `where`).
  void execute(const ScriptCommand& c);
  // Runs every command of `script` with t <= time not run yet (in order), then advances animation to time.
  void advanceTo(double time, const std::vector<ScriptCommand>& script);
  void update(float dt);

  // The camera decoder characters (bundles) are seen from this frame (world space): their appearance pass
  // runs when it moved past the threshold (bundle_character.h). Set it before renderObjects.
  void setCamera(const Camera& camera) { camera_ = camera; }
  // The live decoder characters, for the layer that owns a device to give them a GPU path.
  std::vector<BundleCharacter*> bundles();

  // Render objects of every live character at this moment (deformed on the CPU, or with a GPU deform
  // source when gpu_deform), and in `meshes` (when given) the meshes they draw (the mouth's, and the glTF
  // meshes of plain glTF spawns: skinned and morphed ones left to the renderer's skin pass when gpu_deform).
  // Objects and meshes point into this world's frame storage until the next call. Objects and meshes come in
  // the order of the characters' ids.
  std::vector<RenderObject> renderObjects(bool gpu_deform, std::vector<RenderMesh>* meshes = nullptr);

  // Log lines (say, warnings, missing ARKit names) since the last call.
  std::vector<std::string> takeLog();
  size_t size() const { return entities_.size(); }
  bool has(const std::string& id) const { return entities_.count(id) != 0; }
  const Animator* animator(const std::string& id) const;
  // What a live character draws: "package" (a splat character), "bundle" (a decoder character), "gltf" (a
  // plain glTF's meshes), "gnm" (a GNM pack's rig preview) or "placeholder"; empty when there is no such id.
  std::string kind(const std::string& id) const;
  // The rig of a GNM pack's preview (its controls as last posed), or null.
  const GnmRig* gnmRig(const std::string& id) const;

 private:
  struct Entity {
    std::shared_ptr<const Character> character;  // null for a placeholder
    std::unique_ptr<Animator> animator;
    Mat4 transform;
    std::shared_ptr<const GaussianCloud> placeholder;
    std::shared_ptr<BundleCharacter> bundle;  // a decoder character (a bundle directory), else null
    bool meshes = false;                      // a plain glTF: `character` has no splats, its meshes are drawn
    std::shared_ptr<GnmPreview> gnm;          // a GNM pack's rig preview, else null
    bool missing_reported = false;
  };
  Entity& get(const std::string& id);

  std::map<std::string, Entity> entities_;
  std::map<std::string, std::shared_ptr<const Character>>
      loaded_;  // packages and glTFs by path: spawns share them
  std::map<std::string, std::shared_ptr<const GnmPack>> packs_;  // GNM packs by path
  std::vector<std::string> log_;
  size_t next_command_ = 0;
  double time_ = 0;
  std::vector<Character::Frame> frames_;
  std::vector<SplatDeformSource> deforms_;
  std::optional<Camera> camera_;
};

// A capsule of splats (radius 0.25, height 1.8, standing on y = 0), marking a character that failed to load.
GaussianCloud makeCapsuleCloud();

}  // namespace sf::character
