// The scene document (scene/scene_doc.h): scene JSON read without loading files. nlohmann::json is confined
// to this file and scene.cpp.
#include "scene/scene_doc.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/file.h"
#include "io/json.h"

namespace sf {

namespace fs = std::filesystem;

namespace {

Mat4 parseMatrix(const JsonNode& n) {
  auto v = n.numbers(16);
  Mat4 m;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) m.m[i][j] = v[static_cast<size_t>(i * 4 + j)];
  return m;
}

// Why a scene's file name names no file, by its text (io/file.h relativeNameByText): empty, or the scene's
// directory itself ("." , "./", "a/.."); empty when it names something (absolute or leading out included:
// confinement judges those).
std::string noFileName(const std::string& file) {
  switch (relativeNameByText(file)) {
    case RelativeName::kEmpty:
      return "expected a file name, got \"\"";
    case RelativeName::kDirectoryItself:
      return "\"" + file + "\" names the scene's directory, not a file in it";
    default:
      return {};
  }
}

// A whole number of at least `lo` (and at most 1e12).
uint64_t wholeCount(const JsonNode& n, uint64_t lo) {
  const double v = n.number();
  if (v != std::floor(v) || v < static_cast<double>(lo) || v > 1e12)
    n.fail("expected a whole number of at least " + std::to_string(lo));
  return static_cast<uint64_t>(v);
}

// "events": [{"name": string, "time": clip seconds >= 0}], in the order given.
std::vector<SceneDocEvent> readEvents(const JsonNode& list) {
  if (!list.value.is_array()) list.fail("expected an array of {\"name\", \"time\"}");
  std::vector<SceneDocEvent> out;
  for (size_t i = 0; i < list.value.size(); ++i) {
    const JsonNode e = list.at(i);
    e.onlyKeys({"name", "time"});
    SceneDocEvent ev{e["name"].string(), 0};
    if (ev.name.empty()) e["name"].fail("expected a non-empty event name");
    const double t = e["time"].number();
    if (t < 0) e["time"].fail("expected a clip time >= 0 seconds");
    ev.time = static_cast<float>(t);
    out.push_back(std::move(ev));
  }
  return out;
}

// How an object plays: "clip", "skinning" and "events" on glTF and character objects only (`animated`),
// "time", "speed" and "loop" on any.
void readPlayback(const JsonNode& o, bool animated, SceneDocObject& d) {
  if (o.has("clip")) {
    if (!animated) o["clip"].fail("\"clip\" applies to glTF and character objects only");
    d.clip = o["clip"].clipName();
  }
  if (o.has("skinning")) {
    if (!animated) o["skinning"].fail("\"skinning\" applies to glTF and character objects only");
    d.skinning = o["skinning"].string();
    if (d.skinning != "lbs" && d.skinning != "dqs")
      o["skinning"].fail("expected \"lbs\" (linear blend) or \"dqs\" (dual quaternion), got \"" + d.skinning +
                         "\"");
  }
  if (o.has("events")) {
    if (!animated) o["events"].fail("\"events\" applies to glTF and character objects only");
    d.events = readEvents(o["events"]);
  }
  if (o.has("time")) d.time = o["time"].number();
  if (o.has("speed")) d.speed = o["speed"].number();
  if (o.has("loop")) {
    if (!o["loop"].value.is_boolean()) o["loop"].fail("expected true or false");
    d.loop = o["loop"].value.get<bool>();
  }
}

// The scene's "light": true / false, or an object of its settings.
SceneDocLight readLight(const JsonNode& l) {
  SceneDocLight light;
  if (l.value.is_boolean()) {
    light.enabled = l.value.get<bool>();
    return light;
  }
  if (!l.value.is_object()) l.fail("expected an object or true / false");
  l.onlyKeys({"enabled", "direction", "brightness", "emission", "flash"});
  if (l.has("enabled")) {
    if (!l["enabled"].value.is_boolean()) l["enabled"].fail("expected true or false");
    light.enabled = l["enabled"].value.get<bool>();
  }
  if (l.has("direction")) {
    light.direction = l["direction"].vec3();
    if (!(length(*light.direction) > 0)) l["direction"].fail("expected a non-zero direction");
  }
  if (l.has("brightness")) light.brightness = static_cast<float>(l["brightness"].number());
  if (l.has("emission")) light.emission = static_cast<float>(l["emission"].number());
  if (l.has("flash")) {
    const JsonNode f = l["flash"];
    SceneDocLight::Flash flash;
    flash.position = f["position"].vec3();
    if (f.has("color")) flash.color = f["color"].vec3();
    if (f.has("strength")) flash.strength = static_cast<float>(f["strength"].number());
    light.flash = flash;
  }
  return light;
}

// An entry of "objects": its one file key (keys of other kinds refused), name, transform, how it plays and
// resolved path.
SceneDocObject readObject(const JsonNode& o, const fs::path& dir, const SceneDocOptions& options) {
  // On a hull object "lod" is the hull's runtime LOD, not a level-of-detail hierarchy.
  if (o.has("file") + o.has("gltf") + o.has("character") + o.has("generator") + o.has("hull") +
          (o.has("lod") && !o.has("hull")) !=
      1)
    o.fail(
        "an object has exactly one of \"file\" (splats), \"gltf\" (a model), \"character\" (a character "
        "package), \"generator\" (an ONNX model), \"hull\" (a splat hull) or \"lod\" (a level-of-detail "
        "hierarchy)");
  SceneDocObject d;
  d.where = o.path;
  d.key = o.has("gltf")        ? SceneObjectKey::kGltf
          : o.has("character") ? SceneObjectKey::kCharacter
          : o.has("generator") ? SceneObjectKey::kGenerator
          : o.has("hull")      ? SceneObjectKey::kHull
          : o.has("lod")       ? SceneObjectKey::kLod
                               : SceneObjectKey::kFile;
  d.file = o[sceneObjectKeyName(d.key)].string();
  if (std::string why = noFileName(d.file); !why.empty()) o[sceneObjectKeyName(d.key)].fail(why);
  const bool hull = d.key == SceneObjectKey::kHull;
  if (o.has("inputs") && d.key != SceneObjectKey::kGenerator)
    o["inputs"].fail("\"inputs\" applies to generator objects only");
  d.inputs = o.has("inputs");
  if (o.has("heading") && !hull) o["heading"].fail("\"heading\" applies to hull objects only");
  if (o.has("mode") && !hull) o["mode"].fail("\"mode\" applies to hull objects only");
  if (o.has("outline") && !hull) o["outline"].fail("\"outline\" applies to hull objects only");
  if (o.has("liveCore") && !hull) o["liveCore"].fail("\"liveCore\" applies to hull objects only");
  for (const char* key : {"effects", "script", "seed"})
    if (o.has(key) && !hull) o[key].fail(std::string("\"") + key + "\" applies to hull objects only");
  if (o.has("meshSamples")) {
    if (!hull && d.key != SceneObjectKey::kCharacter && !d.gltfByName())
      o["meshSamples"].fail("\"meshSamples\" applies to objects that draw meshes (glTF, character and hull)");
    const JsonNode n = o["meshSamples"];
    const double v = n.value.is_number() ? n.number() : 0.0;
    if (v != 1 && v != 2 && v != 4 && v != 8 && v != 16)
      n.fail("expected 1, 2, 4, 8 or 16 samples per pixel (1: aliased)");
    d.mesh_samples = static_cast<uint32_t>(v);
  }
  if (hull) {
    if (o.has("mode")) d.hull_mode = o["mode"].string();
    if (o.has("heading")) d.heading = o["heading"].number();
    for (const char* key : {"lod", "outline", "effects", "script", "seed"})
      if (o.has(key)) d.hull_keys.push_back(key);
  }
  d.name = o.has("name") ? o["name"].string() : fs::path(d.file).stem().string();
  d.object_to_world = o.has("transform") ? parseTransformJson(o["transform"]) : Mat4{};
  readPlayback(o, d.gltfByName() || d.key == SceneObjectKey::kCharacter, d);
  d.resolved = d.file;
  try {
    d.resolved = resolveScenePath(dir, d.file, options.confine_paths, options.on_file_system);
  } catch (const Error& e) {
    d.refusal = e.what();
  }
  return d;
}

}  // namespace

const char* sceneObjectKeyName(SceneObjectKey key) {
  switch (key) {
    case SceneObjectKey::kFile:
      return "file";
    case SceneObjectKey::kGltf:
      return "gltf";
    case SceneObjectKey::kCharacter:
      return "character";
    case SceneObjectKey::kGenerator:
      return "generator";
    case SceneObjectKey::kHull:
      return "hull";
    case SceneObjectKey::kLod:
      return "lod";
  }
  return "file";
}

bool SceneDocObject::gltfByName() const {
  if (key == SceneObjectKey::kGltf) return true;
  const std::string ext = fileExtension(file);
  return key == SceneObjectKey::kFile && (ext == ".gltf" || ext == ".glb");
}

std::string SceneDocument::objectContext(size_t i) const {
  return path + ": " + objects[i].where + " (" + objects[i].name + ")";
}

Mat4 parseTransformJson(const JsonNode& n) {
  if (n.value.is_array()) {
    Mat4 m = parseMatrix(n);
    if (m.m[3][0] != 0 || m.m[3][1] != 0 || m.m[3][2] != 0 || m.m[3][3] != 1)
      n.fail("last row must be 0 0 0 1 (affine)");
    if (std::abs(determinant(m.linear())) < 1e-12f) n.fail("linear part is singular");
    return m;
  }
  if (!n.value.is_object()) n.fail("expected 16 numbers or {translation, rotation, scale}");
  Vec3 t{0, 0, 0}, s{1, 1, 1};
  Quat q;
  if (n.has("translation")) t = n["translation"].vec3();
  if (n.has("rotation")) {
    auto r = n["rotation"].numbers(4);
    q = {r[0], r[1], r[2], r[3]};
    if (!(std::abs(q.w) + std::abs(q.x) + std::abs(q.y) + std::abs(q.z) > 0))
      n["rotation"].fail("zero quaternion");
  }
  if (n.has("scale")) {
    JsonNode sn = n["scale"];
    if (sn.value.is_number()) {
      float v = static_cast<float>(sn.number());
      s = {v, v, v};
    } else {
      s = sn.vec3();
    }
    if (s.x == 0 || s.y == 0 || s.z == 0) sn.fail("scale must be non-zero");
  }
  return Mat4::fromLinearTranslation(rotationMatrix(q) * Mat3::diagonal(s), t);
}

Camera parseCameraJsonNode(const JsonNode& n, std::optional<int> width, std::optional<int> height) {
  if (!n.value.is_object()) n.fail("expected a camera object");
  Camera cam;
  if (n.has("eye")) {
    n.onlyKeys({"eye", "target", "up", "fov_y_deg", "width", "height"});
    // A look-at camera's size defaults to kDefaultCameraWidth x kDefaultCameraHeight; the caller's wins.
    int w = width ? *width : n.has("width") ? n["width"].positiveInt() : kDefaultCameraWidth;
    int h = height ? *height : n.has("height") ? n["height"].positiveInt() : kDefaultCameraHeight;
    Vec3 eye = n["eye"].vec3(), target = n["target"].vec3();
    Vec3 up = n.has("up") ? n["up"].vec3() : Vec3{0, 1, 0};
    float fov = static_cast<float>(n["fov_y_deg"].number());
    if (!(fov > 0 && fov < 180)) n["fov_y_deg"].fail("expected a field of view in (0, 180) degrees");
    Vec3 forward = target - eye;
    if (length(forward) < 1e-9f) n["target"].fail("target coincides with eye");
    if (length(cross(normalize(forward), normalize(up))) < 1e-6f)
      n["up"].fail("up is parallel to the viewing direction");
    cam = lookAtCamera(eye, target, up, fov, w, h);
  } else if (n.has("world_to_camera")) {
    // The intrinsics are in pixels of this size.
    n.onlyKeys({"world_to_camera", "fx", "fy", "cx", "cy", "width", "height"});
    cam.width = n["width"].positiveInt();
    cam.height = n["height"].positiveInt();
    cam.fx = static_cast<float>(n["fx"].number());
    cam.fy = static_cast<float>(n["fy"].number());
    cam.cx = static_cast<float>(n["cx"].number());
    cam.cy = static_cast<float>(n["cy"].number());
    cam.world_to_camera = parseMatrix(n["world_to_camera"]);
    int w = width.value_or(cam.width), h = height.value_or(cam.height);
    float sx = static_cast<float>(w) / static_cast<float>(cam.width),
          sy = static_cast<float>(h) / static_cast<float>(cam.height);
    cam.fx *= sx, cam.cx *= sx, cam.fy *= sy, cam.cy *= sy;
    cam.width = w, cam.height = h;
  } else {
    n.fail("a camera needs either \"world_to_camera\" (with fx, fy, cx, cy) or \"eye\"/\"target\" (look-at)");
  }
  if (const char* problem = cam.validate()) n.fail(problem);
  return cam;
}

std::string resolveScenePath(const fs::path& dir, const std::string& file, bool confine,
                             bool on_file_system) {
  if (std::string why = noFileName(file); !why.empty()) throw Error(why);
  const fs::path p(file);
  if (!confine) return p.is_absolute() ? file : (dir / p).string();
  const char* why =
      " (scene paths are confined to the scene file's directory; render --allow-outside-paths lifts this "
      "for trusted scenes)";
  if (p.is_absolute()) throw Error("'" + file + "': absolute path refused" + why);
  if (!on_file_system) {  // the text alone: no step of the normal form may leave the directory
    if (relativeNameByText(file) == RelativeName::kLeaves)
      throw Error("'" + file + "': leads outside the scene's directory " +
                  (dir.empty() ? std::string(".") : dir.lexically_normal().string()) + why);
    return (dir / p).string();
  }
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(dir.empty() ? fs::path(".") : dir, ec);
  const fs::path full = fs::weakly_canonical((dir.empty() ? fs::path(".") : dir) / p, ec);
  if (ec) throw Error("'" + file + "': cannot resolve: " + ec.message());
  auto b = base.begin(), f = full.begin();
  for (; b != base.end() && f != full.end(); ++b, ++f)
    if (*b != *f) break;
  if (b != base.end() && !(b->empty() && std::next(b) == base.end()))
    throw Error("'" + file + "': leads outside the scene's directory " + base.string() + why);
  return (dir / p).string();
}

SceneDocument readSceneDocument(const JsonNode& root, const SceneDocOptions& options) {
  SceneDocument doc;
  doc.path = root.file;
  static const nlohmann::json kNoObjects = nlohmann::json::array();
  const JsonNode objects = root.has("objects") ? root["objects"] : JsonNode{kNoObjects, "objects", root.file};
  if (!objects.value.is_array() || (objects.value.empty() && !root.has("script")))
    objects.fail("expected a non-empty array of objects (or a \"script\" that spawns characters)");
  const fs::path dir = fs::path(root.file).parent_path();
  for (size_t i = 0; i < objects.value.size(); ++i)
    doc.objects.push_back(readObject(objects.at(i), dir, options));
  if (root.has("camera")) doc.camera = parseCameraJsonNode(root["camera"], options.width, options.height);
  if (root.has("background")) doc.background = root["background"].vec3();
  if (root.has("blend_space")) {
    const JsonNode b = root["blend_space"];
    if (!b.value.is_string() ||
        (b.value.get<std::string>() != "display" && b.value.get<std::string>() != "linear"))
      b.fail("expected \"display\" or \"linear\"");
    doc.blend_space = b.value.get<std::string>();
  }
  if (root.has("lod_pool")) {  // the GPU pool's slots are 32-bit (--lod-pool's range)
    doc.lod_pool = wholeCount(root["lod_pool"], 1);
    if (doc.lod_pool >= (uint64_t{1} << 31))
      root["lod_pool"].fail("expected at most 2147483647 nodes (the GPU pool's slots are 32-bit indices)");
  }
  if (root.has("lod_budget")) doc.lod_budget = wholeCount(root["lod_budget"], 1);
  if (root.has("light")) doc.light = readLight(root["light"]);
  doc.script = root.has("script");
  doc.post = root.has("post");
  return doc;
}

SceneDocument parseSceneDocument(const std::string& text, const std::string& path,
                                 const SceneDocOptions& options) {
  const nlohmann::json j = parseJsonText(text, path);
  return readSceneDocument(JsonNode{j, "", path}, options);
}

std::string webSceneRefusal(const SceneDocument& doc) {
  const std::string hint =
      " (the web page draws splat files, glTF models, splat characters, neural generators and static splat "
      "hulls; render this scene with the splatforge command line)";
  for (size_t i = 0; i < doc.objects.size(); ++i) {
    const SceneDocObject& o = doc.objects[i];
    if (o.key == SceneObjectKey::kLod)
      return doc.objectContext(i) + ": a level-of-detail hierarchy (\"lod\": \"" + o.file +
             "\") is not in the web build yet" + hint;
    // The page draws a static hull (baked or sorted, its heading and transform); not what changes it.
    for (const std::string& key : o.hull_keys) {
      const std::string what = key == "lod"       ? "a hull's runtime level of detail is"
                               : key == "outline" ? "a hull's outline is"
                                                  : "live hulls (\"effects\", \"script\", \"seed\") are";
      return doc.objectContext(i) + ": " + key + ": " + what + " not in the web build yet" + hint;
    }
    // The page runs a generator with its time, view and projection inputs only.
    if (o.key == SceneObjectKey::kGenerator && o.inputs)
      return doc.objectContext(i) + ": inputs: a generator's control inputs are not in the web build yet" +
             hint;
  }
  // The page lights its hulls with the default cel light.
  const bool hulls = std::any_of(doc.objects.begin(), doc.objects.end(),
                                 [](const SceneDocObject& o) { return o.key == SceneObjectKey::kHull; });
  if (hulls && doc.light)
    return doc.path + ": light: a scene's cel light for its splat hulls is not in the web build yet" + hint;
  if (doc.script)
    return doc.path + ": script: scene scripts (character commands) are not in the web build yet" + hint;
  if (doc.post) return doc.path + ": post: post-processing models are not in the web build yet" + hint;
  if (doc.blend_space == "linear")
    return doc.path + ": blend_space: linear blending is not in the web build yet" + hint;
  return {};
}

}  // namespace sf
