// Scenes: several splat objects placed by transforms, plus an optional camera and background, loaded
// from a scene JSON file (docs/formats/scene-json.md); camera JSON files; automatic framing.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "character/character.h"
#include "character/world.h"
#include "core/gaussian_cloud.h"
#include "hull/hull_render.h"
#include "hull/hull_script.h"
#include "lod/stream.h"
#include "model/gltf_model.h"
#include "neural/generator.h"
#include "neural/image_model.h"
#include "render/camera.h"
#include "render/cpu_renderer.h"
#include "scene/scene_doc.h"

namespace sf {

struct SceneObject {
  std::string name;
  std::string source;                          // file it came from, or "builtin:..." / "placeholder"
  std::shared_ptr<const GaussianCloud> cloud;  // splats; null for a glTF model without splat primitives
  Mat4 object_to_world;
  // glTF objects: the model whose meshes are drawn, the clip played (-1: rest pose) and its timing. At
  // scene time t the clip is sampled at time + speed * t, wrapped into the clip when `loop`.
  std::shared_ptr<const GltfModel> model;
  // Splat characters: the character (its model is `model`), drawn as its deformed splats; the clip and
  // timing fields apply as for glTF objects.
  std::shared_ptr<const character::Character> character;
  // Decoder characters (a character bundle directory, docs/formats/character-bundle.md): their decoders and
  // UV lift run for each frame's camera (seen from the object's frame) when it or the face changed;
  // `cloud` is the character's slots. Mutable: the character keeps its state between frames.
  std::shared_ptr<character::BundleCharacter> bundle;
  // Neural gaussian generators (an ONNX model, docs/neural.md): run every frame with the model time
  // time + speed * t and the camera (seen from the object's frame); their gaussians join the frame's one
  // sort. Mutable: a generator keeps its last output and its control inputs.
  std::shared_ptr<nn::GaussianGenerator> generator;
  // Splat hulls (an SPL2 file, {"hull": ...}): drawn by poseScene in `hull_mode` with the scene's cel light;
  // `cloud` then holds the hull's rest gaussians (for bounds and counts). Heading is part of object_to_world.
  std::shared_ptr<const hull::HullAsset> hull;
  hull::HullMode hull_mode = hull::HullMode::kBaked;
  // Runtime LOD (scene JSON "lod" on a hull object, --hull-lod; hull/hull_lod.h): the first K splats in
  // importance order, or K by the distance rule, in every mode and for live hulls (a script's `lod` event
  // replaces it from its time on).
  hull::HullLod hull_lod;
  // A live hull (scene JSON "effects", "script", "seed"; `hull play`): effects and destruction, drawn through
  // its pass (hull/effects.h) in sorted mode whatever hull_mode says. Mutable: posing advances its script.
  std::shared_ptr<hull::HullInstance> hull_live;
  std::shared_ptr<hull::HullScriptPlayer> hull_script;
  // Level-of-detail hierarchies (a directory with index.sflod, {"lod": ...}; docs/lod.md): streamed from
  // disk, cut for each frame's camera under the scene's budget with the frame's other LOD objects; `cloud`
  // then holds a proxy of its top levels (for bounds and counts). Mutable: the stream keeps its pool between
  // frames.
  std::shared_ptr<lod::LodStream> lod;
  int clip = -1;
  double time = 0, speed = 1;
  bool loop = true;
  // glTF and character objects: how skinned meshes are skinned (scene JSON "skinning": "lbs" or "dqs"), on
  // the CPU and in the Vulkan frame's skin pass alike.
  anim::SkinningMethod skinning = anim::SkinningMethod::kLinearBlend;

  // Animation events (scene JSON "events" on glTF and character objects, given for clip `events_clip`): when
  // set they replace the events the clip's file carries. clipEvents() is what fires (scene/clip_events.h).
  std::optional<std::vector<anim::ClipEvent>> events;
  int events_clip = -1;

  // The clip time at scene time t (see above).
  float clipTime(double scene_time) const;
  // The events of the clip played, in time order: `events` for events_clip, else the clip's own (glTF
  // extras.events); none without a clip.
  std::span<const anim::ClipEvent> clipEvents() const;
};

// A scene script command run when an object's animation event fires (scene JSON "script" entries with "on"
// instead of "t"; scene/clip_events.h runSceneScript).
struct ScriptTrigger {
  std::string object, event;         // the scene object's name and the event's name
  character::ScriptCommand command;  // its `t` unused
};

inline constexpr uint64_t kDefaultLodBudget = 4000000;  // gaussians of LOD objects a frame draws at most

struct Scene {
  std::vector<SceneObject> objects;
  std::optional<Camera> camera;
  std::optional<Vec3> background;
  std::optional<BlendSpace> blend_space;  // scene JSON "blend_space": where the frame blends (RenderSettings)
  // Post-processing (scene JSON "post"): an image-to-image model run on every finished frame.
  std::shared_ptr<nn::ImageModel> post;  // mutable: it may be given a GPU runner
  hull::HullLight light;                 // the cel light of splat hulls (scene JSON "light")
  // Level-of-detail objects: the most gaussians a frame draws of them all together (scene JSON "lod_budget";
  // the CLI's --lod-budget), and whether a frame waits for the chunks its cut wants (true: offline renders
  // get the image of a loaded scene; the viewer sets false, so that no frame waits for the disk).
  uint64_t lod_budget = kDefaultLodBudget;
  bool lod_settle = true;
  std::vector<std::string> warnings;  // assets replaced by placeholders, with the reason
  // Timed character commands (sorted by time), run by a character::CharacterWorld as scene time advances.
  std::vector<character::ScriptCommand> script;
  // Character commands run when an object's animation event fires (in script order for one event).
  std::vector<ScriptTrigger> triggers;

  // Render objects of the static splat objects (characters and glTF meshes need poseScene).
  std::vector<RenderObject> renderObjects() const;
  bool hasMeshes() const;
};

// A scene posed at one scene time: the render objects (static splats, glTF splats, deformed characters)
// and the meshes of glTF objects. Owns everything the RenderObjects and RenderMeshes point to.
struct SceneFrame {
  std::vector<GltfModel::Pose> poses;                   // one per glTF object
  std::vector<character::Character::Frame> characters;  // one per character
  std::vector<SplatDeformSource> deforms;               // one per character, with gpu_deform
  std::vector<nn::GeneratedGaussians> generated;        // one per generator: this frame's gaussians
  std::vector<hull::HullFrame> hulls;  // one per splat hull: its lit splats and core octagons
  std::vector<RenderObject> objects;
  std::vector<RenderMesh> meshes;
  // Per scene object, in scene order: the [begin, end) of what it put in `objects` and in `meshes`.
  std::vector<std::array<size_t, 2>> object_ranges, mesh_ranges;
};
// Poses every glTF object and every character at scene time `t` seconds into `out`, reusing its storage.
// Skinned meshes are skinned and characters deformed on the CPU (the reference, as posed vertices and
// centre/covariance overrides) unless `gpu_deform`, where skinned and morphed meshes carry a SkinSource for
// the Vulkan frame's skin pass and characters a SplatDeformSource (with their bound mesh's SkinSource when
// Character::gpuSkinnable) for its deform pass instead.
// Generators run for time `t` and camera `cam` (a camera at the origin looking along +z when null): on their
// executor, their render objects pointing into `out.generated`, the frame's own copy of their output; or,
// with a GPU path attached (GaussianGenerator::setGpuPath), as a GpuSplatSource the Vulkan renderer records
// in its frame (out.generated then only sizes the object's slots).
void poseScene(const Scene& scene, double t, SceneFrame& out, bool gpu_deform = false,
               const Camera* cam = nullptr);

// A scene of one file: a splat file (PLY, compressed PLY, SPZ, .splat), a glTF / GLB model (its meshes,
// posed by `clip` at `time`, and its KHR_gaussian_splatting splats) or a character package directory.
// `clip` empty: the first animation (a character's default clip).
// Throws sf::Error when the file cannot be loaded or has nothing to draw.
Scene sceneFromFile(const std::string& path, const std::string& clip = {}, double time = 0);

// Camera JSON: either intrinsics {"width","height","fx","fy","cx","cy","world_to_camera": 16 numbers
// row-major, OpenCV axes} or look-at {"eye","target","up"?,"fov_y_deg","width"?,"height"?} (up defaults
// to +y, the size to kDefaultCameraWidth x kDefaultCameraHeight). Any other key is refused.
// `width`/`height` override the file's size when given (intrinsics are scaled to match).
// Throws sf::Error naming the file and the JSON path of the problem (kDefaultCameraWidth: scene_doc.h).
Camera parseCameraJson(const std::string& text, const std::string& path, std::optional<int> width = {},
                       std::optional<int> height = {});
Camera loadCameraJson(const std::string& path, std::optional<int> width = {}, std::optional<int> height = {});

struct SceneLoadOptions {
  bool strict = false;  // a failing object is an error instead of a placeholder with a warning
  // Object files, character packages and script packages must lie inside the scene file's directory
  // (no absolute paths, no ".." leaving it, no symbolic link leading out). On by default; turn it off only
  // for scenes you trust (render --allow-outside-paths).
  bool confine_paths = true;
  std::optional<int> width, height;                  // camera size override
  std::function<void(const std::string&)> progress;  // called with a line per object loaded
};

// Loads a scene JSON file; object paths are relative to the scene file. Objects are splat files
// ({"file": ...}), glTF models ({"gltf": path, "clip": name or index, "time": t, "speed": s, "loop": b}),
// splat characters ({"character": package directory, same clip keys}) or neural generators ({"generator":
// model.onnx, "inputs": {control name: number or array}}), each with an optional "transform". Objects that
// fail to load are replaced by a visible placeholder and a warning (unless strict). Throws sf::Error for
// malformed JSON.
Scene loadSceneJson(const std::string& path, const SceneLoadOptions& options = {});
// The same from the scene's text; `path` names it in messages and its directory resolves object paths.
Scene parseSceneJson(const std::string& text, const std::string& path, const SceneLoadOptions& options = {});

// Bounds over every object (world space, 1-99 percentiles of all splat centres and of the mesh vertices),
// the scene posed at scene time `time`.
CloudBounds sceneBounds(const Scene& scene, double time = 0);

// Automatic camera framing the 1-99 percentile box of the scene posed at scene time `time`. Scenes with splat
// captures are seen along +z with y down (the capture convention); scenes of glTF models only are seen from
// +z looking down -z with y up (the glTF convention: models face +z). Scenes of splat hulls only are framed
// tightly on hullSceneBox (autoCameraOverClip at the one time).
Camera autoCamera(const Scene& scene, int width, int height, double time = 0);

// True when the scene has objects and every one is a splat hull.
bool hullsOnly(const Scene& scene);

// The box a scene of splat hulls only is framed on at scene time `time` (world space): every hull's slots
// where its script and standing effects put them at `time` (part moves, charge, siphon, ripples, wounds),
// without the splats meant to leave the hull (flying debris, torn chunks, and the scatter, assemble and
// implode progress); a hull without live state by its rest splats. The box is along the rows of the rotation
// `axes` (the bounds of axes * p; identity: the world's axes). Advances the hulls' scripts to `time` (as
// posing does). Throws sf::Error when an object is not a hull or there is nothing to frame.
std::pair<Vec3, Vec3> hullSceneBox(const Scene& scene, double time = 0, const Mat3& axes = Mat3{});

// The margin autoCamera leaves free on every side of a hull-only scene's box (a fraction of the image's width
// and height).
inline constexpr float kHullFrameMargin = 0.08f;

// autoCamera over a clip. A scene of splat hulls only is seen from 41 degrees up (the middle of the default
// camera belt their shell orders were baked for) in a three-quarter view: 30 degrees off the broad side of
// its box at times.front() (the camera 60 degrees from +z towards +x when the box is narrower along x than
// along z, else 30 degrees; the side the default key light falls on). The union of hullSceneBox at `times`
// (visited in the order given), taken along the camera's heading (x across the view, y up), has its 8 corners
// fitted into the image with kHullFrameMargin free on every side (frameBoxTight). Any other scene: autoCamera
// at times.front(). `times` must not be empty.
Camera autoCameraOverClip(const Scene& scene, int width, int height, std::span<const double> times);

// The heading of autoCameraOverClip's camera for a hull-only scene whose box at its first time is [lo, hi]:
// the camera's azimuth in degrees from +z towards +x (60 or 30).
float hullViewAzimuth(Vec3 lo, Vec3 hi);

// A magenta-and-black checkered cube of gaussians, 1 unit wide, marking an asset that failed to load.
GaussianCloud makePlaceholderCloud();

}  // namespace sf
