// Scenes: several splat objects placed by transforms, plus an optional camera and background, loaded
// from a scene JSON file (docs/formats/scene-json.md); camera JSON files; automatic framing.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "render/camera.h"
#include "render/cpu_renderer.h"
#include "scene/model.h"

namespace sf {

struct SceneObject {
  std::string name;
  std::string source;  // file it came from, or "builtin:..." / "placeholder"
  std::shared_ptr<const GaussianCloud> cloud;  // splats; null for a glTF model without splat primitives
  Mat4 object_to_world;
  // glTF objects: the model whose meshes are drawn, the clip played (-1: rest pose) and its timing. At
  // scene time t the clip is sampled at time + speed * t, wrapped into the clip when `loop`.
  std::shared_ptr<const GltfModel> model;
  int clip = -1;
  double time = 0, speed = 1;
  bool loop = true;

  // The clip time at scene time t (see above).
  float clipTime(double scene_time) const;
};

struct Scene {
  std::vector<SceneObject> objects;
  std::optional<Camera> camera;
  std::optional<Vec3> background;
  std::vector<std::string> warnings;  // assets replaced by placeholders, with the reason

  std::vector<RenderObject> renderObjects() const;
  bool hasMeshes() const;
};

// The meshes of a scene's glTF objects posed at one scene time; owns what the RenderMeshes point to.
struct SceneMeshes {
  std::vector<GltfModel::Pose> poses;  // one per glTF object
  std::vector<RenderMesh> meshes;
};
// Poses every glTF object at scene time `t` seconds (CPU skinning) into `out`, reusing its storage.
void poseSceneMeshes(const Scene& scene, double t, SceneMeshes& out);

// A scene of one file: a splat file (PLY, compressed PLY, SPZ, .splat) or a glTF / GLB model (its meshes,
// posed by `clip` at `time`, and its KHR_gaussian_splatting splats). `clip` empty: the first animation.
// Throws sf::Error when the file cannot be loaded or has nothing to draw.
Scene sceneFromFile(const std::string& path, const std::string& clip = {}, double time = 0);

// Camera JSON: either intrinsics {"width","height","fx","fy","cx","cy","world_to_camera": 16 numbers
// row-major, OpenCV axes} or look-at {"eye","target","up","fov_y_deg","width","height"}.
// `width`/`height` override the file's size when given (intrinsics are scaled to match).
// Throws sf::Error naming the file and the JSON path of the problem.
Camera parseCameraJson(const std::string& text, const std::string& path, std::optional<int> width = {},
                       std::optional<int> height = {});
Camera loadCameraJson(const std::string& path, std::optional<int> width = {}, std::optional<int> height = {});

// True when `bytes` look like a JSON document (first non-blank character is '{').
bool looksLikeSceneJson(const std::string& path);

struct SceneLoadOptions {
  bool strict = false;  // a failing object is an error instead of a placeholder with a warning
  std::optional<int> width, height;  // camera size override
  std::function<void(const std::string&)> progress;  // called with a line per object loaded
};

// Loads a scene JSON file; object paths are relative to the scene file. Objects are splat files
// ({"file": ...}) or glTF models ({"gltf": path, "clip": name or index, "time": t, "speed": s, "loop": b}),
// each with an optional "transform". Objects that fail to load are replaced by a visible placeholder and
// a warning (unless strict). Throws sf::Error for malformed JSON.
Scene loadSceneJson(const std::string& path, const SceneLoadOptions& options = {});

// Bounds over every object (world space, 1-99 percentiles of all splat centres and of the mesh vertices
// posed at scene time 0).
CloudBounds sceneBounds(const Scene& scene);

// Automatic camera framing the 1-99 percentile box of the scene. Scenes with splat captures are seen along
// +z with y down (the capture convention); scenes of glTF models only are seen from +z looking down -z
// with y up (the glTF convention: models face +z).
Camera autoCamera(const Scene& scene, int width, int height);

// A magenta-and-black checkered cube of gaussians, 1 unit wide, marking an asset that failed to load.
GaussianCloud makePlaceholderCloud();

}  // namespace sf
