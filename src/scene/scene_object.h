// Scene objects and their kinds (docs/architecture.md, "Scene objects"): what every object of a scene has
// (a name, a transform, its splats for bounds and counts, how its clip plays) and one interface, the object's
// kind, for what differs: how it poses at a scene time for a camera into the frame, the GPU work it attaches
// to the frame driver's device, what it says of itself. Posing a scene is a loop over the kinds. The kinds
// live in scene/kinds/ (splats, glTF model, character, decoder character, neural generator, splat hull, level
// of detail); each is registered once, where scene files are loaded (scene/kinds/registry.cpp).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "anim/clip.h"
#include "anim/skinning.h"
#include "core/gaussian_cloud.h"
#include "core/math.h"
#include "render/camera.h"
#include "render/cpu_renderer.h"

namespace sf {

namespace gpu {
class Context;
}
namespace lod {
class LodStream;
}
class GltfModel;
struct Scene;
struct SceneObject;

// Camera `cam` seen from the frame `object_to_world` (a camera at the origin looking along +z when null):
// what a generator or a decoder character is asked for.
Camera cameraSeenFrom(const Camera* cam, const Mat4& object_to_world);

// What posing one object for one frame sees.
struct PoseContext {
  const Scene& scene;
  double time = 0;                 // scene time, seconds (the same for every kind)
  const Camera* camera = nullptr;  // null: a camera at the origin looking along +z
  bool gpu = false;  // a Vulkan frame: skinning, deforms and generators left to the frame's GPU passes
  // Level-of-detail objects cut in the background (lod/cut_worker.h): the frame draws what their GPU pools
  // were last given; `lod_fresh`: their streams hold a cut finished since, to give the pools now;
  // `lod_busy`: a cut is being made (the streams are the worker's: a pool given nothing yet draws nothing).
  bool lod_background = false, lod_fresh = false, lod_busy = false;
  // The frame's camera seen from `object_to_world` (cameraSeenFrom).
  Camera cameraIn(const Mat4& object_to_world) const { return cameraSeenFrom(camera, object_to_world); }
};

// An object's storage in a posed frame (SceneFrame), made by its kind on the object's first pose and reused
// frame to frame: what its render objects and meshes point into.
struct PosedState {
  virtual ~PosedState() = default;
};

// Where an object's pose goes: the frame's render objects and meshes, and the object's own storage.
struct PoseSink {
  std::vector<RenderObject>& objects;
  std::vector<RenderMesh>& meshes;
  std::unique_ptr<PosedState>& state;
  // The object's storage as type S, made (value-initialised) when missing or of another type.
  template <typename S>
  S& stateAs() {
    S* s = dynamic_cast<S*>(state.get());
    if (!s) state = std::unique_ptr<PosedState>(s = new S());
    return *s;
  }
};

// What the frame driver gives a kind that attaches GPU work to its device. The driver takes the work back
// (detach, a replaced device, its own end) through what `given` records.
class GpuAttach {
 public:
  virtual ~GpuAttach() = default;
  virtual gpu::Context& context() = 0;
  // A line for people (a part falling back to the CPU).
  virtual void say(const std::string& line) = 0;
  // Records that `owner` was given GPU work; `take_back` is called while the owner lives.
  virtual void given(std::weak_ptr<const void> owner, std::function<void()> take_back) = 0;
  // Runs and forgets the take-back recorded for `owner` (the scene is detached); false when none was.
  virtual bool takeBack(const void* owner) = 0;
  // Whether `owner` was refused GPU work by this driver (said once: refuse records it).
  virtual bool refusedBefore(const void* owner) = 0;
  virtual void refuse(std::weak_ptr<const void> owner) = 0;
  // One object of the device that several objects share (a pass's pipelines), made by `make` on first use.
  virtual std::shared_ptr<void> shared(const std::string& key,
                                       const std::function<std::shared_ptr<void>()>& make) = 0;
};

// A kind of scene object. Kinds hold what is theirs (a model, a generator, a hull and its state): mutable
// state (a generator's controls, a hull's script) lives behind their pointers, so posing is const.
class SceneObjectKind {
 public:
  virtual ~SceneObjectKind() = default;
  // "splats", "gltf", "character", "decoder_character", "generator", "hull" or "lod".
  virtual std::string_view kindName() const = 0;
  // What the object holds, for the loading progress line (`object.cloud` is counted by the caller).
  virtual std::string describe(const SceneObject& object) const = 0;
  // Poses `object` at ctx.time for ctx.camera, appending its render objects and meshes.
  virtual void pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const = 0;
  // The glTF model whose clip the object plays (glTF objects and characters), else null.
  virtual const GltfModel* model() const { return nullptr; }
  // Attaches the object's GPU work to the driver's device (called before every frame: attach once).
  virtual void attachGpu(const SceneObject&, GpuAttach&) const {}
  // Takes that work back (the scene leaves the driver).
  virtual void detachGpu(GpuAttach&) const {}
  // A level-of-detail stream: cut with every other LOD object under the scene's budget before posing.
  virtual lod::LodStream* lodStream() const { return nullptr; }
  // What the object draws exists only once posed (characters, generators, hulls): bounds pose the scene.
  virtual bool posedContent() const { return false; }
  // Points to frame beside the posed frame's (a generator written on the GPU: a CPU run of it).
  virtual void extraBoundsPoints(const SceneObject&, double, std::vector<Vec3>&) const {}
  // Seen in the capture convention (+z forward, y down) by automatic framing, not the glTF one.
  virtual bool captureConvention(const SceneObject&) const { return false; }
  // Seconds of model time the object plays through besides its clip (a generator driven by time), 0 if none.
  virtual double modelTimeSpan() const { return 0; }
  // Whether the object draws its `cloud` as it is, wherever it is drawn (plain splats, a glTF model's
  // gaussians): Scene::renderObjects draws such clouds without posing.
  virtual bool drawsCloudAsIs() const { return false; }
};

struct SceneObject {
  std::string name;
  std::string source;                          // file it came from, or "builtin:..." / "placeholder"
  std::shared_ptr<const GaussianCloud> cloud;  // its splats (a hull's rest splats, an LOD proxy); may be null
  Mat4 object_to_world;
  std::shared_ptr<SceneObjectKind> kind;  // null: plain splats (`cloud`)
  // Objects with a clip (glTF models, characters): the clip played (-1: rest pose) and its timing. At scene
  // time t the clip is sampled at time + speed * t, wrapped into the clip when `loop`; a generator's model
  // time is time + speed * t.
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
  // Anti-aliasing of the meshes the object draws (scene JSON "meshSamples", the CLI's --mesh-samples): 0
  // keeps its kind's (a hull's core: hull::kHullCoreSamples; glTF and character meshes: 1), else 1, 2, 4, 8
  // or 16 samples per pixel for every one of them (RenderMesh::samples), set by poseScene.
  uint32_t mesh_samples = 0;

  // The object's kind (the plain splats kind when `kind` is null).
  const SceneObjectKind& kindOf() const;
  // The kind as K, or null when it is another.
  template <typename K>
  K* as() const {
    return dynamic_cast<K*>(kind.get());
  }
  // The glTF model whose clip plays (kind().model()).
  const GltfModel* model() const { return kindOf().model(); }
  // The clip time at scene time t (see above).
  float clipTime(double scene_time) const;
  // The events of the clip played, in time order: `events` for events_clip, else the clip's own (glTF
  // extras.events); none without a clip.
  std::span<const anim::ClipEvent> clipEvents() const;
};

}  // namespace sf
