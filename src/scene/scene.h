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

namespace sf {

struct SceneObject {
  std::string name;
  std::string source;  // file it came from, or "builtin:..." / "placeholder"
  std::shared_ptr<const GaussianCloud> cloud;
  Mat4 object_to_world;
};

struct Scene {
  std::vector<SceneObject> objects;
  std::optional<Camera> camera;
  std::optional<Vec3> background;
  std::vector<std::string> warnings;  // assets replaced by placeholders, with the reason

  std::vector<RenderObject> renderObjects() const;
};

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

// Loads a scene JSON file; object paths are relative to the scene file. Objects that fail to load are
// replaced by a visible placeholder and a warning (unless strict). Throws sf::Error for malformed JSON.
Scene loadSceneJson(const std::string& path, const SceneLoadOptions& options = {});

// Bounds over every object (world space, 1-99 percentiles of all splat centres).
CloudBounds sceneBounds(const Scene& scene);

// Automatic camera: looks along +z (the capture convention: y down, z forward) at the 1-99 percentile
// box of the scene, framing it.
Camera autoCamera(const Scene& scene, int width, int height);

// A magenta-and-black checkered cube of gaussians, 1 unit wide, marking an asset that failed to load.
GaussianCloud makePlaceholderCloud();

}  // namespace sf
