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

#include "character/world.h"
#include "core/gaussian_cloud.h"
#include "hull/hull_render.h"
#include "lod/cut_worker.h"
#include "neural/image_model.h"
#include "render/camera.h"
#include "render/cpu_renderer.h"
#include "scene/kinds/bundle.h"
#include "scene/kinds/character.h"
#include "scene/kinds/generator.h"
#include "scene/kinds/gltf.h"
#include "scene/kinds/hull.h"
#include "scene/kinds/lod.h"
#include "scene/kinds/splats.h"
#include "scene/scene_doc.h"
#include "scene/scene_object.h"

namespace sf {

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
  // Whether refinements morph in and coarsenings fade out (unset: in frames that do not settle; `bench --lod
  // --lod-settle` sets it, so that its settled frames do the viewer's host work).
  std::optional<bool> lod_fade;
  // Frames that do not settle, on the Vulkan backend: the cut made on this thread of its own while frames
  // draw the last one finished (lod/cut_worker.h; the viewer and `bench --lod` set it). Null: every frame
  // cuts before it draws.
  std::shared_ptr<lod::CutWorker> lod_worker;
  std::vector<std::string> warnings;  // assets replaced by placeholders, with the reason
  // Timed character commands (sorted by time), run by a character::CharacterWorld as scene time advances.
  std::vector<character::ScriptCommand> script;
  // Character commands run when an object's animation event fires (in script order for one event).
  std::vector<ScriptTrigger> triggers;

  // Render objects of the static splat objects (characters and glTF meshes need poseScene).
  std::vector<RenderObject> renderObjects() const;
  bool hasMeshes() const;
};

// A scene posed at one scene time: the render objects and meshes of every object, and each object's own
// storage (its kind's PosedState: a glTF pose, a deformed character, a generator's output, a hull frame),
// reused frame to frame. Owns everything the RenderObjects and RenderMeshes point to (with the scene).
struct SceneFrame {
  std::vector<std::unique_ptr<PosedState>> states;  // per scene object, in scene order
  std::vector<RenderObject> objects;
  std::vector<RenderMesh> meshes;
  // Per scene object, in scene order: the [begin, end) of what it put in `objects` and in `meshes`.
  std::vector<std::array<size_t, 2>> object_ranges, mesh_ranges;
  // Object `index`'s storage as S (null when it has none of that type).
  template <typename S>
  const S* state(size_t index) const {
    return index < states.size() ? dynamic_cast<const S*>(states[index].get()) : nullptr;
  }
};
// Poses every object at scene time `t` for camera `cam` into `out`, reusing its storage: a loop over the
// objects' kinds (SceneObjectKind::pose), after one level-of-detail cut of every LOD object under the scene's
// budget. With `gpu_deform` (a Vulkan frame) skinned and morphed meshes carry a SkinSource for the frame's
// skin pass, characters a SplatDeformSource for its deform pass, and generators with a GPU path a
// GpuSplatSource the frame records; otherwise everything is posed on the CPU (the reference). A null `cam` is
// a camera at the origin looking along +z.
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

// Sets the pool of every level-of-detail object of `scene` to `nodes` (the command line's --lod-pool over
// the scene JSON's "lod_pool"; docs/lod.md): the nodes each keeps in memory, and the slots of its GPU pool in
// a Vulkan frame. Before the scene's first frame; sf::Error naming the object when its top chunk does not
// fit.
void setLodPool(Scene& scene, uint64_t nodes);

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
