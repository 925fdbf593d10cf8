// Scene and camera JSON (docs/formats/scene-json.md): the document (scene_doc.cpp) and the loading of its
// objects. nlohmann::json is confined to this file and scene_doc.cpp.
#include "scene/scene.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>

#include "anim/clip.h"
#include "core/error.h"
#include "hull/effects.h"
#include "hull/hull_shared.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/json.h"
#include "scene/clip_events.h"

namespace sf {

namespace {

using Json = nlohmann::json;

using Node = JsonNode;

Json parseJson(const std::string& text, const std::string& file) {
  return parseJsonText(text, file);
}

std::string readText(const std::string& path) {
  std::vector<uint8_t> bytes = readFile(path);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

std::vector<RenderObject> Scene::renderObjects() const {
  std::vector<RenderObject> out;
  for (const SceneObject& o : objects)
    if (o.cloud && o.cloud->size() > 0 && o.kindOf().drawsCloudAsIs())
      out.push_back({o.cloud.get(), o.object_to_world, {}, {}});
  return out;
}

bool Scene::hasMeshes() const {
  for (const SceneObject& o : objects)
    if (o.model() && o.model()->drawnPrimitives() > 0) return true;
  return false;
}

float SceneObject::clipTime(double scene_time) const {
  const GltfModel* model = this->model();
  if (!model || clip < 0) return 0;
  return anim::clipTimeAt(scene_time, time, speed, loop, model->clips()[static_cast<size_t>(clip)].duration);
}

Camera cameraSeenFrom(const Camera* cam, const Mat4& object_to_world) {
  Camera c;
  if (cam)
    c = *cam;
  else
    c.width = 1280, c.height = 720, c.fx = c.fy = 1000, c.cx = 640, c.cy = 360;
  c.world_to_camera = c.world_to_camera * object_to_world;
  return c;
}

void setLodPool(Scene& scene, uint64_t nodes) {
  for (SceneObject& o : scene.objects)
    if (lod::LodStream* stream = o.kindOf().lodStream()) stream->setPoolNodes(nodes);
}

void poseScene(const Scene& scene, double t, SceneFrame& out, bool gpu_deform, const Camera* cam) {
  out.states.resize(scene.objects.size());
  out.meshes.clear();
  out.objects.clear();
  out.object_ranges.clear();
  out.mesh_ranges.clear();
  // Level-of-detail objects: one cut of them all under the scene's budget, each seen from its own frame.
  std::vector<std::shared_ptr<lod::LodStream>> streams;
  std::vector<Camera> lod_cameras;
  bool pools = gpu_deform;  // every LOD object draws through a GPU pool
  bool new_pool = false;    // one of them has been given no cut yet (a device replaced while a cut ran)
  for (const SceneObject& o : scene.objects)
    if (const LodObject* l = o.as<LodObject>()) {
      streams.push_back(l->sharedStream()), lod_cameras.push_back(cameraSeenFrom(cam, o.object_to_world));
      pools &= l->gpuPool() != nullptr;
      new_pool |= l->gpuPoolUngiven();
    }
  PoseContext ctx{scene, t, cam, gpu_deform};
  lod::CutWorker* worker = scene.lod_worker.get();
  ctx.lod_background = worker && !streams.empty() && !scene.lod_settle && pools;
  if (ctx.lod_background) {
    // In the background: the frame draws the last cut finished (given to the pools now if it is new); the
    // first frame cuts here, so that it draws something. (Busy first: a cut that finishes after that is the
    // next frame's, so that this one never starts a cut over one it has not taken.)
    ctx.lod_busy = worker->busy();
    ctx.lod_fresh = !ctx.lod_busy && worker->takeFinished();
    if (!ctx.lod_busy && !ctx.lod_fresh && worker->cutsFinished() == 0) {
      worker->start(streams, lod_cameras, scene.lod_budget);
      worker->wait();
      ctx.lod_fresh = worker->takeFinished();
    }
    // A pool given no cut yet waits for the one being made rather than draw nothing.
    if (ctx.lod_busy && new_pool) {
      worker->wait();
      ctx.lod_fresh = worker->takeFinished() || ctx.lod_fresh;
      ctx.lod_busy = false;
    }
  } else if (!streams.empty()) {
    if (worker) worker->release();  // a frame cut here: the streams are this thread's again
    std::vector<lod::LodStream*> raw;
    for (const std::shared_ptr<lod::LodStream>& s : streams) raw.push_back(s.get());
    // Frames that never wait (the viewer) morph their refinements in; settled ones (offline) draw the cut as
    // it is.
    lod::selectFrameCuts(raw, lod_cameras, scene.lod_budget, scene.lod_settle,
                         scene.lod_fade.value_or(!scene.lod_settle));
  }
  for (size_t i = 0; i < scene.objects.size(); ++i) {
    const size_t objects_before = out.objects.size(), meshes_before = out.meshes.size();
    PoseSink sink{out.objects, out.meshes, out.states[i]};
    scene.objects[i].kindOf().pose(scene.objects[i], ctx, sink);
    if (const uint32_t samples = scene.objects[i].mesh_samples)
      for (size_t m = meshes_before; m < out.meshes.size(); ++m) out.meshes[m].samples = samples;
    out.object_ranges.push_back({objects_before, out.objects.size()});
    out.mesh_ranges.push_back({meshes_before, out.meshes.size()});
  }
  // The pools hold the finished cut: the next is made for this frame's camera while the frame draws, unless
  // the camera and the budget are the last cut's and that cut had settled (nothing on its way in, no fade
  // going on).
  if (ctx.lod_background && !ctx.lod_busy) {  // (a cut that finished during this pose waits for the next)
    bool more = !worker->sameRequest(lod_cameras, scene.lod_budget);
    for (const std::shared_ptr<lod::LodStream>& s : streams) {
      const lod::StreamStats st = s->stats();
      more |= st.pending > 0 || st.upload_host_rows > 0;
    }
    if (more) worker->start(std::move(streams), std::move(lod_cameras), scene.lod_budget);
  }
}

namespace {

std::string shortNumber(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return text;
}

// The events' times against the clip the object plays; then in time order (ties as declared).
void checkClipEvents(const Node& list, const SceneObject& obj, std::vector<anim::ClipEvent>& events) {
  if (obj.as<BundleObject>()) list.fail("a decoder character has no body clips (remove \"events\")");
  if (!obj.model() || obj.clip < 0)
    list.fail("the object plays no clip (its file has no animation), so it has no events");
  const anim::Clip& clip = obj.model()->clips()[static_cast<size_t>(obj.clip)];
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i].time > clip.duration)
      list.at(i)["time"].fail(shortNumber(events[i].time) + " s is outside the clip '" + clip.name +
                              "' [0, " + shortNumber(clip.duration) + "] s");
  std::stable_sort(events.begin(), events.end(),
                   [](const auto& a, const auto& b) { return a.time < b.time; });
}

// "script": [{"t": seconds, "command": name, "id": character id, ...command fields}], sorted by t. A command
// with "on": {"object", "event"} instead of "t" goes to `triggers`: run when that object's animation event
// fires.
std::vector<character::ScriptCommand> parseScript(const Node& list, const std::filesystem::path& dir,
                                                  bool confine, const std::vector<SceneObject>& objects,
                                                  std::vector<ScriptTrigger>& triggers) {
  if (!list.value.is_array()) list.fail("expected an array of commands");
  std::vector<character::ScriptCommand> out;
  for (size_t i = 0; i < list.value.size(); ++i) {
    Node n = list.at(i);
    if (!n.value.is_object()) n.fail("expected a command object");
    character::ScriptCommand c;
    c.where = n.file + ": " + n.path;
    c.command = n["command"].string();
    if (!character::isCommand(c.command)) {
      std::string known;
      for (const char* k : character::kCommands) known += (known.empty() ? "" : ", ") + std::string(k);
      n["command"].fail("unknown command '" + c.command + "' (known: " + known + ")");
    }
    c.id = n["id"].string();
    std::optional<ScriptTrigger> trigger;
    if (n.has("on")) {
      if (n.has("t")) n.fail("a command has \"t\" (a scene time) or \"on\" (an animation event), not both");
      Node on = n["on"];
      on.onlyKeys({"object", "event"});
      trigger = ScriptTrigger{on["object"].string(), on["event"].string(), {}};
      bool named = false, loaded = false, known = false;
      std::string names, events;
      for (const SceneObject& so : objects) {
        names += (names.empty() ? "'" : ", '") + so.name + "'";
        if (so.name != trigger->object) continue;
        named = true;
        loaded = loaded || so.source != "placeholder";  // a placeholder's events are unknown (it never fires)
        for (const anim::ClipEvent& e : so.clipEvents()) {
          known = known || e.name == trigger->event;
          events += (events.empty() ? "'" : ", '") + e.name + "'";
        }
      }
      if (!named)
        on["object"].fail("no scene object is named '" + trigger->object +
                          "' (objects: " + (names.empty() ? "none" : names) + ")");
      if (loaded && !known)
        on["event"].fail("object '" + trigger->object + "' has no animation event '" + trigger->event +
                         "' (its events: " + (events.empty() ? "none" : events) + ")");
    }
    if (n.has("t")) {
      c.t = n["t"].number();
      if (c.t < 0) n["t"].fail("expected a time >= 0");
    }
    if (c.command == "spawn-character") {
      std::string pkg = n["package"].string();
      try {
        c.package = resolveScenePath(dir, pkg, confine);
      } catch (const Error& e) {
        n["package"].fail(e.what());
      }
      if (std::string why = orlRefusalOf(c.package); !why.empty()) n["package"].fail(why);
      if (n.has("transform")) c.transform = parseTransformJson(n["transform"]);
      if (n.has("clip")) c.clip = n["clip"].clipName();
    } else if (c.command == "set-controls") {
      Node v = n["controls"];
      if (v.value.is_object() && !v.value.empty()) {
        for (auto it = v.value.begin(); it != v.value.end(); ++it)
          c.named_controls.push_back({it.key(), static_cast<float>(v[it.key().c_str()].number())});
      } else if (v.value.is_array() && !v.value.empty()) {
        c.controls = v.numbers(v.value.size());
      } else {
        v.fail("expected an array of control values or {control name: value}");
      }
    } else if (c.command == "set-character-state") {
      if (n.has("clip")) c.clip = n["clip"].clipName();
      if (n.has("velocity")) c.velocity = n["velocity"].vec3();
      if (n.has("fade")) c.fade = static_cast<float>(n["fade"].number());
      if (c.clip.empty() && !c.velocity) n.fail("set-character-state needs \"clip\" or \"velocity\"");
    } else if (c.command == "set-clip-weights") {
      Node w = n["weights"];
      if (!w.value.is_object() || w.value.empty()) w.fail("expected an object of clip name -> weight");
      for (auto it = w.value.begin(); it != w.value.end(); ++it)
        c.clip_weights.push_back({it.key(), static_cast<float>(w[it.key().c_str()].number())});
    } else if (c.command == "set-expression") {
      Node w = n["weights"];
      if (w.value.is_object()) {
        if (n.has("space") && n["space"].string() != "arkit52")
          n["space"].fail("named weights are ARKit names: the space must be arkit52");
        for (auto it = w.value.begin(); it != w.value.end(); ++it)
          c.named.push_back({it.key(), static_cast<float>(w[it.key().c_str()].number())});
      } else if (w.value.is_array()) {
        c.expression.space = n["space"].string();
        c.expression.weights = w.numbers(w.value.size());
      } else {
        w.fail("expected {ARKit name: weight} or an array of weights with \"space\"");
      }
    } else if (c.command == "look-at") {
      if (!n.has("target")) n.fail("missing key \"target\" (a point, or null to stop)");
      if (!n["target"].value.is_null()) c.target = n["target"].vec3();
    } else if (c.command == "say") {
      c.text = n["text"].string();
    }
    if (trigger) {
      trigger->command = std::move(c);
      triggers.push_back(std::move(*trigger));
      continue;
    }
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.t < b.t; });
  return out;
}

}  // namespace

Scene sceneFromFile(const std::string& path, const std::string& clip, double time) {
  Scene scene;
  SceneObject obj;
  obj.name = std::filesystem::path(path).stem().string();
  obj.source = path;
  const InputKind kind = classifyInput(path);
  if (kind == InputKind::kSceneJson)
    throw Error(path + ": a scene JSON is not one object (load it with loadSceneJson)");
  if (kind == InputKind::kOnnx) {
    if (!clip.empty()) throw Error(path + ": --clip applies to glTF files only");
    loadGeneratorObject(obj, path, nullptr, "inputs");
    obj.time = time;
    scene.objects.push_back(std::move(obj));
    return scene;
  }
  if (kind == InputKind::kLodHierarchy) {
    if (!clip.empty()) throw Error(path + ": --clip applies to glTF files only");
    loadLodObject(obj, path, lod::StreamOptions{}.pool_nodes);
    obj.name = std::filesystem::path(path).filename().string();
  } else if (kind == InputKind::kSplatHull) {
    if (!clip.empty()) throw Error(path + ": --clip applies to glTF files only");
    loadHullObject(obj, path);
  } else if (kind == InputKind::kCharacterPackage) {
    loadCharacterObject(obj, path, clip);
    obj.name = std::filesystem::path(path).filename().string();
    obj.time = time;
  } else if (kind == InputKind::kGltf) {
    loadGltfObject(obj, path, clip);
    obj.time = time;
    if (gaussiansOnly(obj, clip)) {  // a capture saved as glTF: a splat file like any other
      obj.kind.reset();
      obj.clip = -1;
      obj.cloud = loadCapture(path, scene.warnings);
    }
  } else {
    if (!clip.empty()) throw Error(path + ": --clip applies to glTF files only");
    obj.cloud = loadCapture(path, scene.warnings);
  }
  scene.objects.push_back(std::move(obj));
  return scene;
}

Camera parseCameraJson(const std::string& text, const std::string& path, std::optional<int> width,
                       std::optional<int> height) {
  Json j = parseJson(text, path);
  return parseCameraJsonNode(Node{j, "", path}, width, height);
}

Camera loadCameraJson(const std::string& path, std::optional<int> width, std::optional<int> height) {
  return parseCameraJson(readText(path), path, width, height);
}

GaussianCloud makePlaceholderCloud() {
  constexpr int kSide = 8;
  GaussianCloud cloud;
  cloud.resize(kSide * kSide * 6, 0);
  size_t i = 0;
  const float step = 1.0f / kSide;
  for (int face = 0; face < 6; ++face) {
    int axis = face / 2;
    float side = face % 2 ? 0.5f : -0.5f;
    for (int u = 0; u < kSide; ++u)
      for (int v = 0; v < kSide; ++v, ++i) {
        Vec3 p;
        p[axis] = side;
        p[(axis + 1) % 3] = -0.5f + (static_cast<float>(u) + 0.5f) * step;
        p[(axis + 2) % 3] = -0.5f + (static_cast<float>(v) + 0.5f) * step;
        cloud.positions[i] = p;
        Vec3 s{0.5f * step, 0.5f * step, 0.5f * step};
        s[axis] = 0.05f * step;
        cloud.scales[i] = s;
        bool magenta = (u + v) % 2 == 0;
        float rgb[3] = {magenta ? 1.0f : 0.05f, 0.05f, magenta ? 1.0f : 0.05f};
        for (size_t c = 0; c < 3; ++c) cloud.sh[i * 3 + c] = colorToShDc(rgb[c]);
        cloud.opacities[i] = 0.95f;
      }
  }
  return cloud;
}

Scene loadSceneJson(const std::string& path, const SceneLoadOptions& options) {
  return parseSceneJson(readText(path), path, options);
}

namespace {

// A hull object's runtime LOD and mode (applied once it is loaded), and its heading.
struct HullDrawing {
  hull::HullMode mode = hull::HullMode::kBaked;
  hull::HullLod lod;
  hull::OutlineSpec outline;
  hull::LiveCore live_core = hull::LiveCore::kSorted;
};

HullDrawing readHullDrawing(const Node& o, SceneObject& obj) {
  HullDrawing d;
  if (o.has("liveCore")) {
    try {
      d.live_core = hull::parseLiveCore(o["liveCore"].string());
    } catch (const Error& e) {
      o["liveCore"].fail(e.what());
    }
  }
  if (o.has("lod")) d.lod = hull::parseHullLodJson(o["lod"]);
  if (o.has("outline")) d.outline = hull::parseOutlineJson(o["outline"]);
  if (o.has("mode")) {
    try {
      d.mode = hull::parseHullMode(o["mode"].string());
    } catch (const Error& e) {
      o["mode"].fail(e.what());
    }
  }
  if (o.has("heading")) {  // a turn about the hull's up axis (+y), degrees, applied before the transform
    const float h = static_cast<float>(o["heading"].number() * std::numbers::pi / 180.0);
    Mat4 r;
    r.m[0][0] = std::cos(h), r.m[0][2] = std::sin(h), r.m[2][0] = -std::sin(h), r.m[2][2] = std::cos(h);
    obj.object_to_world = obj.object_to_world * r;
  }
  return d;
}

// How an object plays, as its document states it (checked there): its skinning, time, speed and loop; its
// events (checked against the clip once loaded) are taken by read().
void applyPlayback(const SceneDocObject& d, SceneObject& obj) {
  if (!d.skinning.empty())
    obj.skinning =
        d.skinning == "dqs" ? anim::SkinningMethod::kDualQuaternion : anim::SkinningMethod::kLinearBlend;
  if (d.time) obj.time = *d.time;
  if (d.speed) obj.speed = *d.speed;
  if (d.loop) obj.loop = *d.loop;
}

// A live hull's effects and seed, checked here, so that a typo is an error like a bad "mode" rather than a
// placeholder.
struct LiveHull {
  bool live = false;
  hull::HullEffects effects;
  std::optional<uint32_t> seed;
};

LiveHull readLiveHull(const Node& o, bool hull_key) {
  LiveHull h;
  h.live = hull_key && (o.has("effects") || o.has("script") || o.has("seed"));
  if (h.live) {
    if (o.has("effects")) h.effects = hull::parseHullEffects(o["effects"]);
    if (o.has("seed")) {
      const double v = o["seed"].number();
      if (v != std::floor(v) || v < 0 || v > 4294967295.0)
        o["seed"].fail("expected an integer in 0..4294967295");
      h.seed = static_cast<uint32_t>(v);
    }
  }
  return h;
}

// An object that failed to load becomes the placeholder cube (one cloud for every placeholder).
void makePlaceholder(SceneObject& obj) {
  static const auto placeholder = std::make_shared<const GaussianCloud>(makePlaceholderCloud());
  obj.cloud = placeholder;
  obj.kind.reset();
  obj.clip = -1;
  obj.source = "placeholder";
}

// The scene's "light" (the cel light of splat hulls), as its document states it (checked there).
void applyHullLight(const SceneDocLight& l, hull::HullLight& light) {
  if (l.enabled) light.enabled = *l.enabled;
  if (l.direction) light.direction = *l.direction;
  if (l.brightness) light.brightness = *l.brightness;
  if (l.emission) light.emission = *l.emission;
  if (l.flash) {
    light.flash_position = l.flash->position;
    if (l.flash->color) light.flash_color = *l.flash->color;
    light.flash_strength = l.flash->strength;
  }
}

// The objects of one scene file being loaded, with the loads they share.
struct SceneObjectLoader {
  Scene& scene;
  const std::filesystem::path dir;  // the scene file's
  const SceneLoadOptions& options;
  uint64_t lod_pool;  // each LOD object's pool of nodes in memory (docs/lod.md)
  // Objects naming the same file share one load (its splats, model or character are immutable once loaded).
  std::map<std::string, std::shared_ptr<const GltfModel>> models;
  std::map<std::string, std::shared_ptr<const GaussianCloud>> clouds;
  std::map<std::string, std::shared_ptr<const character::Character>> characters;

  // The scene object of an entry `o` of "objects", whose document `d` (kind, name, transform, path, playback)
  // is read and checked: its hull settings read, its file loaded (a placeholder with a warning when it fails
  // to load and the load is not strict), its events checked against the clip, its progress line given.
  SceneObject read(const Node& o, const SceneDocument& doc, size_t index) {
    const SceneDocObject& d = doc.objects[index];
    using Key = SceneObjectKey;
    SceneObject obj;
    obj.name = d.name;
    obj.object_to_world = d.object_to_world;
    obj.mesh_samples = d.mesh_samples;
    HullDrawing drawing;
    if (d.key == Key::kHull) drawing = readHullDrawing(o, obj);
    const std::string& resolved = d.resolved;
    const std::string& confinement = d.refusal;  // why the path is refused, when it is
    obj.source = resolved;
    if (d.key == Key::kCharacter && confinement.empty())  // refused, strict or not: never a placeholder
      if (std::string why = orlRefusalOf(resolved); !why.empty()) o["character"].fail(why);
    const bool gltf =
        d.key == Key::kGltf || (d.key == Key::kFile && classifyInput(resolved) == InputKind::kGltf);
    applyPlayback(d, obj);
    const LiveHull live = readLiveHull(o, d.key == Key::kHull);
    std::string failure;
    try {
      if (!confinement.empty()) throw Error(confinement);
      load(o, d.key, resolved, gltf, d.clip, drawing, live, obj);
    } catch (const Error& e) {
      failure = e.what();
    } catch (const std::bad_alloc&) {
      failure = resolved + ": ran out of memory while loading";
    }
    if (!failure.empty()) {
      if (options.strict) throw Error(doc.objectContext(index) + ": " + failure);
      scene.warnings.push_back(o.path + " (" + obj.name + "): " + failure + "; drawing a placeholder");
      makePlaceholder(obj);
    } else if (d.events) {
      std::vector<anim::ClipEvent> events;
      for (const SceneDocEvent& e : *d.events) events.push_back({e.name, e.time});
      checkClipEvents(o["events"], obj, events);
      obj.events = std::move(events);
      obj.events_clip = obj.clip;
    }
    if (options.progress)
      options.progress("loaded " + obj.name + ": " + obj.kindOf().describe(obj) + " from " + obj.source);
    return obj;
  }

  // Loads the object's file by the key naming it: where each kind of scene object (scene/kinds/) is
  // registered. Throws sf::Error.
  void load(const Node& o, SceneObjectKey key, const std::string& resolved, bool gltf,
            const std::string& clip, const HullDrawing& drawing, const LiveHull& live, SceneObject& obj) {
    using Key = SceneObjectKey;
    if (key == Key::kLod || (key == Key::kFile && classifyInput(resolved) == InputKind::kLodHierarchy)) {
      if (key == Key::kLod && classifyInput(resolved) != InputKind::kLodHierarchy)
        throw Error(resolved +
                    ": not a level-of-detail hierarchy (no index.sflod in a directory; splatforge lod build "
                    "makes one)");
      loadLodObject(obj, resolved, lod_pool);
    } else if (key == Key::kHull) {
      HullObject& h = loadHullObject(obj, resolved);
      h.mode = drawing.mode;
      h.lod = drawing.lod;
      h.outline = drawing.outline;
      h.live_core = drawing.live_core;
      if (live.live) makeHullLive(o, live, h);
    } else if (key == Key::kGenerator) {
      loadGeneratorObject(obj, resolved, o.has("inputs") ? &o["inputs"].value : nullptr, o.path + ".inputs");
    } else if (key == Key::kCharacter) {
      const std::string file_key = fileKey(resolved);
      auto it = characters.find(file_key);
      loadCharacterObject(obj, resolved, clip, it != characters.end() ? it->second : nullptr);
      if (const CharacterObject* c = obj.as<CharacterObject>())
        characters.emplace(file_key, c->characterPtr());
    } else if (gltf) {
      loadGltfObject(obj, resolved, clip, &models);
      // A glTF "file" holding only gaussians is a splat file.
      if (key != Key::kGltf && gaussiansOnly(obj, clip)) {
        obj.kind.reset();
        obj.clip = -1;
        obj.cloud = capture(o, resolved, obj.name);
      }
    } else {
      obj.cloud = capture(o, resolved, obj.name);
    }
  }

  // A loaded hull made live: effects and seed were checked by readLiveHull; the script file loads here.
  void makeHullLive(const Node& o, const LiveHull& live, HullObject& h) {
    std::optional<hull::HullScript> script;
    if (o.has("script"))
      script = hull::loadHullScript(resolveScenePath(dir, o["script"].string(), options.confine_paths));
    if (script) hull::checkHullScript(*script, *h.asset);  // its `fire` guns against the hull's meta sidecar
    hull::DestructionOptions dopt;
    if (script && script->seed) dopt.seed = *script->seed;
    if (live.seed) dopt.seed = *live.seed;
    h.live = std::make_shared<hull::HullInstance>(h.asset, dopt);
    h.live->effects = live.effects;
    if (script) h.script = std::make_shared<hull::HullScriptPlayer>(std::move(*script), live.effects);
  }

  // A splat file (objects naming the same file share one load); its warnings go to the scene's, named by
  // the object.
  std::shared_ptr<const GaussianCloud> capture(const Node& o, const std::string& resolved,
                                               const std::string& name) {
    const std::string key = fileKey(resolved);
    if (auto it = clouds.find(key); it != clouds.end()) return it->second;
    std::vector<std::string> warnings;
    clouds[key] = loadCapture(resolved, warnings);
    for (const std::string& w : warnings) scene.warnings.push_back(o.path + " (" + name + "): " + w);
    return clouds[key];
  }
};

}  // namespace

Scene parseSceneJson(const std::string& text, const std::string& path, const SceneLoadOptions& options) {
  Json j = parseJson(text, path);
  Node root{j, "", path};
  // What the document states (objects' kinds, names, transforms, paths and playback; camera, background,
  // blend space, level of detail, light), every check that needs no file made there, before any file loads.
  SceneDocOptions doc_options;
  doc_options.confine_paths = options.confine_paths;
  doc_options.width = options.width, doc_options.height = options.height;
  const SceneDocument doc = readSceneDocument(root, doc_options);
  Scene scene;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  // Level of detail: each LOD object's pool of nodes in memory (docs/lod.md), and the frame's budget.
  const uint64_t lod_pool = doc.lod_pool.value_or(lod::StreamOptions{}.pool_nodes);
  if (doc.lod_budget) scene.lod_budget = *doc.lod_budget;
  SceneObjectLoader loader{scene, dir, options, lod_pool, {}, {}, {}};
  for (size_t i = 0; i < doc.objects.size(); ++i)
    scene.objects.push_back(loader.read(root["objects"].at(i), doc, i));
  if (root.has("script"))
    scene.script = parseScript(root["script"], dir, options.confine_paths, scene.objects, scene.triggers);
  scene.camera = doc.camera;
  scene.background = doc.background;
  if (doc.blend_space) scene.blend_space = parseBlendSpace(*doc.blend_space);
  if (doc.light) applyHullLight(*doc.light, scene.light);
  if (root.has("post")) {
    Node post = root["post"];
    try {
      scene.post =
          std::make_shared<nn::ImageModel>(resolveScenePath(dir, post.string(), options.confine_paths));
    } catch (const Error& e) {
      if (options.strict) throw Error(path + ": " + post.path + ": " + e.what());
      scene.warnings.push_back(post.path + ": " + e.what() + "; frames are not post-processed");
    }
  }
  return scene;
}

CloudBounds sceneBounds(const Scene& scene, double time) {
  GaussianCloud all;
  for (const SceneObject& o : scene.objects)
    if (o.cloud)
      for (const Vec3& p : o.cloud->positions) all.positions.push_back(transformPoint(o.object_to_world, p));
  bool posed_content = scene.hasMeshes();
  for (const SceneObject& o : scene.objects) posed_content |= o.kindOf().posedContent();
  if (posed_content) {
    all.positions.clear();
    SceneFrame frame;
    poseScene(scene, time, frame);
    for (const RenderObject& o : frame.objects) {
      if (o.gpu_source) continue;  // a generator on the GPU path: framed from a CPU run below
      std::span<const Vec3> ps =
          o.positions.empty() ? std::span<const Vec3>(o.cloud->positions) : o.positions;
      for (const Vec3& p : ps) all.positions.push_back(transformPoint(o.object_to_world, p));
    }
    for (const SceneObject& o : scene.objects) o.kindOf().extraBoundsPoints(o, time, all.positions);
    for (const RenderMesh& m : frame.meshes)
      for (const Vec3& p : m.positions) all.positions.push_back(transformPoint(m.object_to_world, p));
  }
  if (!scene.script.empty() || !scene.triggers.empty()) {  // characters the script has spawned by `time`
    character::CharacterWorld world;
    runSceneScript(scene, world, 0, time, true);
    std::vector<RenderMesh> meshes;  // spawned glTFs' meshes, the mouth's
    std::vector<RenderObject> objs = world.renderObjects(false, &meshes);
    for (const RenderObject& o : objs) {
      std::span<const Vec3> ps =
          o.positions.empty() ? std::span<const Vec3>(o.cloud->positions) : o.positions;
      for (const Vec3& p : ps) all.positions.push_back(transformPoint(o.object_to_world, p));
    }
    for (const RenderMesh& m : meshes)
      for (const Vec3& p : m.positions) all.positions.push_back(transformPoint(m.object_to_world, p));
  }
  if (all.positions.empty()) throw Error("the scene has nothing to frame (no splats, no mesh vertices)");
  return computeBounds(all);
}

bool hullsOnly(const Scene& scene) {
  bool hulls = !scene.objects.empty();
  for (const SceneObject& o : scene.objects) hulls &= o.as<HullObject>() != nullptr;
  return hulls;
}

std::pair<Vec3, Vec3> hullSceneBox(const Scene& scene, double time, const Mat3& axes) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  Vec3 lo{kInf, kInf, kInf}, hi{-kInf, -kInf, -kInf};
  const auto add = [&](const Mat4& to_world, Vec3 p) {
    p = axes * transformPoint(to_world, p);
    lo = {std::min(lo.x, p.x), std::min(lo.y, p.y), std::min(lo.z, p.z)};
    hi = {std::max(hi.x, p.x), std::max(hi.y, p.y), std::max(hi.z, p.z)};
  };
  for (const SceneObject& o : scene.objects) {
    const HullObject* ho = o.as<HullObject>();
    if (!ho) throw Error("hullSceneBox: object '" + o.name + "' is not a splat hull");
    if (!ho->live) {
      if (o.cloud)
        for (const Vec3& p : o.cloud->positions) add(o.object_to_world, p);
      continue;
    }
    hull::HullInstance& h = *ho->live;
    if (ho->script) ho->script->advance(h, time);
    // The slots as the frame's pass places them, less the effects that send splats away from the hull.
    hull::HullEffects effects = h.effects;
    effects.scatter = 0, effects.implode = 0;
    const auto& slots = h.destruction().slots();
    const hull::HullParams params = hull::packHullParams(effects, scene.light, o.object_to_world, h.centre(),
                                                         time, static_cast<uint32_t>(slots.size()));
    hull::HullOutput out;
    hull::evaluateHull(params, h.destruction().rest(), slots, h.destruction().bodies(), out);
    size_t added = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
      const uint32_t kind = (slots[i].flags & SF_HULL_KIND_MASK) >> SF_HULL_KIND_SHIFT;
      if ((kind == SF_HULL_KIND_SKIN || kind == SF_HULL_KIND_LAYER) && out.opacities[i] > 0)
        add(o.object_to_world, out.positions[i]), ++added;
    }
    if (added == 0 && o.cloud)  // every slot faded out by its standing effects: where the hull rests
      for (const Vec3& p : o.cloud->positions) add(o.object_to_world, p);
  }
  if (!(lo.x <= hi.x)) throw Error("the scene has nothing to frame (no hull splat)");
  return {lo, hi};
}

Camera autoCameraOverClip(const Scene& scene, int width, int height, std::span<const double> times) {
  if (times.empty()) throw Error("autoCameraOverClip: no times");
  if (!hullsOnly(scene)) return autoCamera(scene, width, height, times.front());
  // The heading: a three-quarter view of the broad side (seen along one of its axes a hull may show only
  // its profile, and its box's depth then inflates the fit). The box is then taken along the heading, where
  // it is tightest around what the camera sees.
  const auto [lo0, hi0] = hullSceneBox(scene, times.front());
  const float a = hullViewAzimuth(lo0, hi0) * std::numbers::pi_v<float> / 180.0f;
  Mat3 axes;  // rows: across the view (horizontal), up, towards the camera (horizontal)
  axes.m[0][0] = std::cos(a), axes.m[0][1] = 0, axes.m[0][2] = -std::sin(a);
  axes.m[1][0] = 0, axes.m[1][1] = 1, axes.m[1][2] = 0;
  axes.m[2][0] = std::sin(a), axes.m[2][1] = 0, axes.m[2][2] = std::cos(a);
  auto [lo, hi] = hullSceneBox(scene, times.front(), axes);
  for (size_t k = 1; k < times.size(); ++k) {
    const auto [l, h] = hullSceneBox(scene, times[k], axes);
    lo = {std::min(lo.x, l.x), std::min(lo.y, l.y), std::min(lo.z, l.z)};
    hi = {std::max(hi.x, h.x), std::max(hi.y, h.y), std::max(hi.z, h.z)};
  }
  const float e = 41.0f * std::numbers::pi_v<float> / 180.0f;  // the middle of the default camera belt
  const Vec3 view{-std::sin(a) * std::cos(e), -std::sin(e), -std::cos(a) * std::cos(e)};
  return frameBoxTight(lo, hi, view, Vec3{0, 1, 0}, width, height, kHullFrameMargin, axes);
}

float hullViewAzimuth(Vec3 lo, Vec3 hi) {
  return hi.x - lo.x < hi.z - lo.z ? 60.0f : 30.0f;
}

Camera autoCamera(const Scene& scene, int width, int height, double time) {
  if (hullsOnly(scene)) return autoCameraOverClip(scene, width, height, std::span<const double>(&time, 1));
  CloudBounds b = sceneBounds(scene, time);
  bool captures = false;
  // Generators follow the capture convention too (the contract's camera looks along +z with y down).
  for (const SceneObject& o : scene.objects) captures |= o.kindOf().captureConvention(o);
  if (!captures) return frameBox(b.p01, b.p99, Vec3{0, 0, -1}, Vec3{0, 1, 0}, width, height);
  return frameBox(b.p01, b.p99, Vec3{0, 0, 1}, Vec3{0, -1, 0}, width, height);
}

}  // namespace sf
