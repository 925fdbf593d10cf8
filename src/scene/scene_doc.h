// The scene document: what a scene JSON says (docs/formats/scene-json.md) read without loading any file: each
// object's kind (the key naming its file), its name, its file (resolved against the scene's directory, with
// the confinement rules applied), its object-to-world transform, how it plays (clip, skinning, events, time,
// speed, loop); the camera, the background, the blend space, the level-of-detail pool and budget, the hulls'
// light. Every check of a key or a value that needs no file is made here, in the words of the scene loader:
// parseSceneJson (scene/scene.h) reads every scene through it before loading the objects' files and repeats
// none of them; the web page's WebAssembly (web/wasm/, docs/web.md) reads scenes with it alone, the files
// being fetched over HTTP, and so refuses what `render` refuses. Not read here: what a hull object's "lod",
// "mode", "effects" and "seed" say (hull/; the page draws no hull), "inputs" (checked against the generator's
// model), "script" (checked against the loaded objects) and "post".
// It needs core, io/file (file names by their text), io/json and render/camera only: the sources the
// WebAssembly build compiles.
#pragma once

#include <cstdint>
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

// An animation event of an object's "events": a non-empty name and a clip time >= 0 seconds (checked against
// the clip's duration once the object has loaded).
struct SceneDocEvent {
  std::string name;
  float time = 0;
};

struct SceneDocObject {
  std::string where;  // its JSON path: "objects[1]"
  std::string name;   // "name", else the file's stem
  SceneObjectKey key = SceneObjectKey::kFile;
  std::string file;      // as the scene writes it
  std::string resolved;  // the file joined to the scene's directory (the file as written when refused)
  // Why its path is refused (confinement), empty when accepted: the object's load failure, not a parse error.
  std::string refusal;
  Mat4 object_to_world;  // "transform" (identity without it); a hull's "heading" is not applied here
  // How it plays. "clip", "skinning" and "events" on glTF (by name: gltfByName) and character objects only.
  std::string clip;                                  // "clip": a name, or an index as text ("2"); empty: none
  std::string skinning;                              // "skinning": "lbs" or "dqs"; empty: not given
  std::optional<std::vector<SceneDocEvent>> events;  // "events", in the order given
  std::optional<double> time, speed;                 // finite numbers
  std::optional<bool> loop;
  // "meshSamples" on objects that draw meshes (glTF, character and hull objects): 1, 2, 4, 8 or 16 samples
  // per pixel for their meshes (SceneObject::mesh_samples); 0: not given.
  uint32_t mesh_samples = 0;
  // "inputs" given (generator objects only: the model's control inputs, checked against the model).
  bool inputs = false;
  // A hull object's "mode" as written (empty: not given, baked) and "heading" in degrees (0: not given),
  // and which of its keys beyond those it gives, of "lod", "outline", "effects", "script" and "seed".
  std::string hull_mode;
  double heading = 0;
  std::vector<std::string> hull_keys;

  // A file key naming a glTF / GLB model by its extension ("gltf", or a "file" ending in .gltf or .glb).
  bool gltfByName() const;
};

// The scene's "light", the cel light of splat hulls: true / false (enabled alone), or an object of its
// settings; what is not given keeps the light's default (hull/hull_render.h HullLight).
struct SceneDocLight {
  std::optional<bool> enabled;
  std::optional<Vec3> direction;  // non-zero
  std::optional<float> brightness, emission;
  struct Flash {
    Vec3 position;
    std::optional<Vec3> color;
    float strength = 1;
  };
  std::optional<Flash> flash;
};

struct SceneDocument {
  std::string path;  // the scene file, as messages name it
  std::vector<SceneDocObject> objects;
  std::optional<Camera> camera;
  std::optional<Vec3> background;
  std::optional<std::string> blend_space;  // "display" or "linear"
  // Level of detail (docs/lod.md): each LOD object's pool of nodes in memory ("lod_pool") and the frame's
  // budget of gaussians ("lod_budget"), whole numbers of at least 1 (and at most 1e12).
  std::optional<uint64_t> lod_pool, lod_budget;
  std::optional<SceneDocLight> light;  // "light"
  bool script = false;                 // a top-level "script" (character commands)
  bool post = false;                   // a top-level "post" (an image-to-image model)

  // "scene.json: objects[1] (name)": how messages about object `i` begin (a load failure follows ": ").
  std::string objectContext(size_t i) const;
};

struct SceneDocOptions {
  // Object paths must stay inside the scene file's directory (SceneLoadOptions::confine_paths).
  bool confine_paths = true;
  // Where confinement is decided: on the file system (symbolic links followed, as every command loads
  // scenes), or on the path's text alone (the web page, whose files are URLs below the scene's). Both refuse
  // an absolute path in the same words, and a ".." leading out of the scene's directory in the same words but
  // for the directory they name: by text the scene's directory as written, normalised ("site", "." for a
  // scene in the current directory); on the file system its canonical path ("/srv/site").
  bool on_file_system = true;
  std::optional<int> width, height;  // the camera's size, as parseCameraJson takes it
};

// Parses a scene JSON's text; `path` names it in messages and its directory resolves the objects' files.
// Throws sf::Error naming the file and the JSON path for malformed JSON and for everything the document
// states wrongly (objects and their keys, file names that name no file ("", ".", "a/.."), transforms, how
// objects play, camera, background, blend space, level of detail, light); a path refused by confinement is
// recorded in the object's `refusal`.
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

// An object's path resolved against the scene file's directory `dir`. A name that names no file ("", ".",
// "a/..") is refused, confined or not. Confined, the path must stay inside that directory (absolute paths,
// ".." leading out and, on the file system, symbolic links pointing out are refused; by text the message
// names `dir` normalised, on the file system its canonical path): throws sf::Error naming the path and why.
std::string resolveScenePath(const std::filesystem::path& dir, const std::string& file, bool confine,
                             bool on_file_system = true);

// Why the web page cannot draw this scene, in the command line's words ("two.json: objects[1] (ship):
// effects: live hulls ...", naming the object and its kind or key, or the top-level key); empty when it can
// (splat files, glTF models, splat characters, neural generators without "inputs" and static splat hulls (no
// "lod", "outline", "effects", "script" or "seed"), display blending, no script and no post-processing).
// `export-web` refuses such a scene with the same message.
std::string webSceneRefusal(const SceneDocument& doc);

}  // namespace sf
