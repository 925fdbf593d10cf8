// The scene document: what a scene JSON says (docs/formats/scene-json.md) read without loading any file: each
// object's kind (the key naming its file), its name, its file (resolved against the scene's directory, with
// the confinement rules applied), its object-to-world transform; the camera, the background, the blend space.
// parseSceneJson (scene/scene.h) reads every scene through it before loading the objects' files; the web
// page's WebAssembly (web/wasm/, docs/web.md) reads scenes with it alone, the files being fetched over HTTP.
// It needs core, io/json and render/camera only.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/math.h"
#include "render/camera.h"

namespace sf {

struct JsonNode;  // io/json.h

// Which key of a scene object names its file.
enum class SceneObjectKey { kFile, kGltf, kCharacter, kGenerator, kHull, kLod };
// "file", "gltf", "character", "generator", "hull", "lod"
const char* sceneObjectKeyName(SceneObjectKey key);

struct SceneDocObject {
  std::string where;  // its JSON path: "objects[1]"
  std::string name;   // "name", else the file's stem
  SceneObjectKey key = SceneObjectKey::kFile;
  std::string file;      // as the scene writes it
  std::string resolved;  // the file joined to the scene's directory (the file as written when refused)
  // Why its path is refused (confinement), empty when accepted: the object's load failure, not a parse error.
  std::string refusal;
  Mat4 object_to_world;  // "transform" (identity without it); a hull's "heading" is not applied here

  // A file key naming a glTF / GLB model by its extension ("gltf", or a "file" ending in .gltf or .glb).
  bool gltfByName() const;
};

struct SceneDocument {
  std::string path;  // the scene file, as messages name it
  std::vector<SceneDocObject> objects;
  std::optional<Camera> camera;
  std::optional<Vec3> background;
  std::optional<std::string> blend_space;  // "display" or "linear"
  bool script = false;                     // a top-level "script" (character commands)
  bool post = false;                       // a top-level "post" (an image-to-image model)

  // "scene.json: objects[1] (name)": how messages about object `i` begin (a load failure follows ": ").
  std::string objectContext(size_t i) const;
};

struct SceneDocOptions {
  // Object paths must stay inside the scene file's directory (SceneLoadOptions::confine_paths).
  bool confine_paths = true;
  // Where confinement is decided: on the file system (symbolic links followed, as every command loads
  // scenes), or on the path's text alone (the web page, whose files are URLs below the scene's: an absolute
  // path or a ".." leading out of the scene's directory is refused with the same words).
  bool on_file_system = true;
  std::optional<int> width, height;  // the camera's size, as parseCameraJson takes it
};

// Parses a scene JSON's text; `path` names it in messages and its directory resolves the objects' files.
// Throws sf::Error naming the file and the JSON path for malformed JSON and for everything the document
// states wrongly (objects, transforms, camera, background, blend space); a refused path is recorded in the
// object's `refusal`.
SceneDocument parseSceneDocument(const std::string& text, const std::string& path,
                                 const SceneDocOptions& options = {});
// The same over an already parsed document (its file is root.file).
SceneDocument readSceneDocument(const JsonNode& root, const SceneDocOptions& options = {});

// The readers the scene loader shares with the document (scene.cpp: a script's spawn transform, camera JSON).
// Both throw sf::Error naming the file and the JSON path.
// "transform": 16 numbers row-major (affine, invertible), or {"translation": [3], "rotation": [w,x,y,z],
// "scale": s | [3]} applied as T R S.
Mat4 parseTransformJson(const JsonNode& n);
// Camera JSON (scene/scene.h parseCameraJson); `width`/`height` override the size, intrinsics scaled to
// match. A look-at camera without a size is kDefaultCameraWidth x kDefaultCameraHeight.
inline constexpr int kDefaultCameraWidth = 1280, kDefaultCameraHeight = 720;
Camera parseCameraJsonNode(const JsonNode& n, std::optional<int> width, std::optional<int> height);

// An object's path resolved against the scene file's directory `dir`. Confined, the path must stay inside
// that directory (absolute paths, ".." leading out and, on the file system, symbolic links pointing out are
// refused): throws sf::Error naming the path and why.
std::string resolveScenePath(const std::filesystem::path& dir, const std::string& file, bool confine,
                             bool on_file_system = true);

// Why the web page cannot draw this scene, in the command line's words ("two.json: objects[1] (walker): a
// glTF model ...", naming the object and its kind, or the top-level key); empty when it can (splat files
// only, display blending, no script and no post-processing). `export-web` refuses such a scene with the same
// message.
std::string webSceneRefusal(const SceneDocument& doc);

}  // namespace sf
