// The frame as a library object (ARCHITECTURE.md, "Layers"): scene + time + camera + settings -> image and
// figures, on the CPU renderer or the Vulkan frame. Every front end (the CLI's render, animate, bench and
// hull commands, the viewer, the Python module) draws through a FrameDriver; none writes its own frame loop.
//
// One frame, in order:
//   1. the scene's GPU work is attached on first sight (Vulkan): neural generators run on the Vulkan executor
//      inside the frame, decoder characters' decoders and lift, live hulls' effect pass, the post model;
//      a part the device cannot run falls back to the CPU, said once through FrameDriverOptions::message;
//   2. every object is posed at the one scene time t for the camera (poseScene: clips, characters,
//   generators,
//      hull scripts), the scene script's characters advanced to t (going back in time replays the script);
//   3. the objects and meshes are drawn with one global sort (renderCpu or VulkanRenderer::render), the SH
//      degree limited where objects are packed (RenderSettings::max_sh_degree, no cloud copies);
//   4. the scene's post model runs on the finished image;
//   5. the scene's animation events crossed since the playback's last frame are reported
//   (FrameResult::events,
//      by ClipEventClock's rule: a first frame fires those at its time, a frame at an earlier time none).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "render/cpu_renderer.h"
#include "render/vulkan_renderer.h"
#include "scene/clip_events.h"
#include "scene/scene.h"

namespace sf {

namespace hull {
class OutlineGpu;
}
namespace gpu {
struct ContextOptions;
}

enum class Backend { kAuto, kCpu, kVulkan };
// "auto", "cpu" or "vulkan"; throws sf::Error otherwise.
Backend parseBackend(const std::string& name);

struct FrameDriverOptions {
  Backend backend = Backend::kAuto;  // auto: the Vulkan frame where a device exists, else the CPU renderer
  std::string device;                // Vulkan device: index or part of its name (empty: the first)
  bool validation = false;           // Vulkan validation layers; a frame that raises an error throws
  // Adds to the Vulkan context's options before the device is made (the viewer: presenting to a window).
  std::function<void(gpu::ContextOptions&)> configure;
  // Lines for people: a part of the scene that falls back to the CPU, the scene script's log. Default:
  // stderr.
  std::function<void(const std::string&)> message;
  // On a lost device, make a new one before throwing (render). A front end that holds objects of the device
  // itself (the viewer's swapchain) turns this off and calls replaceDevice() once it has let go of them.
  bool replace_lost_device = true;
};

// What one scene keeps between the frames of a driver: posed storage reused frame to frame, the world of
// characters its script spawned (advanced forward; a frame at an earlier time starts a new world) and the
// clock of its animation events. A front end that renders several scenes on one driver keeps one playback per
// scene (FrameDriver::playback).
class ScenePlayback {
 public:
  // Forget the script's world (the next frame replays it from scene time 0) and restart the event clock (the
  // next frame is a first one).
  void reset();
  // Characters the scene's script has spawned so far.
  size_t spawned() const;
  // Moves the event clock to `t` without drawing (Python's Scene.advance): the events a frame at `t` would
  // report, which that frame then does not report again.
  ClipEventStep advanceEvents(const Scene& scene, double t) { return events_.advance(scene, t); }

 private:
  friend class FrameDriver;
  SceneFrame frame_;
  std::shared_ptr<character::CharacterWorld> world_;
  double world_time_ = 0;
  ClipEventClock events_;
};

// One frame's request: the scene time (seconds, the same for every object kind: glTF clips, characters,
// generators, hull scripts, the character script), the camera and the render settings.
struct FrameRequest {
  double time = 0;
  Camera camera;
  RenderSettings settings;
  // Optional: poses scene object `index` itself, appending its render objects and meshes, instead of the
  // scene's posing (the viewer's live character controls); returns false to leave the object to the scene.
  // What it appends must stay valid until the frame has been drawn.
  std::function<bool(size_t index, const SceneObject& object, std::vector<RenderObject>& objects,
                     std::vector<RenderMesh>& meshes)>
      pose_object;
  // Whether the scene's post model runs on this frame (the viewer's toggle).
  bool post = true;
};

struct FrameResult {
  ImageRGBA image;
  size_t splats = 0, visible = 0, tile_keys = 0, mesh_triangles = 0;
  size_t objects = 0;  // render objects drawn (a character or hull may draw several)
  int sh_degree = 0;   // the highest SH degree drawn
  bool vulkan = false;
  VulkanFrameStats gpu;        // Vulkan frames: pass times, sort passes, slots
  RenderStats cpu;             // CPU frames: stage times
  double pose_ms = 0;          // CPU time posing the scene (generators on the CPU executor included)
  double post_ms = 0;          // the post model after readback (0 without one, or run in the Vulkan frame)
  bool post_in_frame = false;  // the post model ran in the Vulkan frame (its time is in the frame's)
  bool generators = false;     // the scene has neural generators
  bool gpu_sources =
      false;  // some objects were written on the GPU in the frame (generators, decoder characters)
  std::string post_name;  // the post model's file name
  size_t outlined = 0;    // hull outline styles drawn (hull/outline.h; each one mask frame)
  // Animation events this frame crossed (scene/clip_events.h), in scene-time order, and how many were past
  // the per-step cap (kMaxClipEventsPerStep) and not reported.
  std::vector<FiredClipEvent> events;
  uint64_t events_skipped = 0;

  // One line: the GPU passes (or the CPU stages), then posing and post when they apply.
  std::string timing() const;
};

class FrameDriver {
 public:
  // Creates the Vulkan renderer when the backend asks for it (throws sf::Error when none can be made and
  // the backend is kVulkan; kAuto without a device runs on the CPU).
  explicit FrameDriver(const FrameDriverOptions& options = {});
  // Takes back the GPU paths it gave the scenes' generators, characters, hulls and post models.
  ~FrameDriver();
  FrameDriver(const FrameDriver&) = delete;
  FrameDriver& operator=(const FrameDriver&) = delete;

  bool usesVulkan() const { return vulkan_ != nullptr; }
  // How many lost devices this driver has replaced.
  int deviceResets() const { return device_resets_; }
  // Takes back every GPU path given out and makes a new device with the driver's options (after a lost one).
  void replaceDevice();
  VulkanRenderer* vulkan() { return vulkan_.get(); }  // null on the CPU backend
  // "the cpu backend" or "Vulkan device NAME (TYPE, subgroup N)".
  std::string describe() const;

  // Renders `scene` at request.time. The first form keeps the driver's own playback (one scene per driver);
  // the second a playback the caller keeps per scene. Throws sf::Error (a validation error of this frame
  // with --validation included). A lost device (gpu::DeviceLost, naming the pass that was running) is
  // replaced before the error is thrown: the GPU paths given out are taken back and a new device made, so
  // the caller may render again (the scene's GPU work is attached again on that frame).
  FrameResult render(const Scene& scene, const FrameRequest& request);
  FrameResult render(const Scene& scene, ScenePlayback& playback, const FrameRequest& request);

  // Benchmarking (Vulkan only): the frame of `request` posed once and its passes recorded `runs` times in
  // one submission (VulkanRenderer::renderBackToBack).
  std::vector<VulkanPassTimes> renderBackToBack(const Scene& scene, const FrameRequest& request, int runs,
                                                VulkanFrameStats* stats = nullptr);

  // Takes back the GPU paths this driver gave `scene`'s objects and, with `playback`, the characters its
  // script spawned (before the scene is drawn by another driver, e.g. on the CPU backend).
  void detach(const Scene& scene, ScenePlayback* playback = nullptr);
  // Keeps `owner` (a dropped scene, the scene being drawn) alive until the frame after the next one has been
  // drawn: the Vulkan renderer matches resident objects by the address of their clouds, which must not be
  // reused while they may still be resident.
  void retire(std::shared_ptr<const void> owner);

 private:
  class Attach;  // the GpuAttach the scene's kinds attach their GPU work through
  void attach(const Scene& scene);
  // Poses the scene into playback storage: objects and meshes of this frame.
  void pose(const Scene& scene, ScenePlayback& playback, const FrameRequest& request,
            std::vector<RenderObject>& objects, std::vector<RenderMesh>& meshes);
  void say(const std::string& line) const;
  hull::OutlineGpu& outlineGpu();  // the hull outline's passes on this device (made on first use)
  FrameResult renderFrame(const Scene& scene, ScenePlayback& playback, const FrameRequest& request);
  // Runs `frame`; on gpu::DeviceLost replaces the device and throws the error, saying so.
  template <typename Frame>
  auto recovering(Frame&& frame) -> decltype(frame());
  void takeBackGpuPaths();
  // After a frame: what the previous frame held may go, this frame's owners stay until the next one is drawn.
  // A frame that did not reach the renderer (`drawn` false) releases nothing: the renderer's resident objects
  // are still the last drawn frame's.
  void frameDone(bool drawn);
  // Throws the validation errors the device raised since `errors_before` (its first message:
  // `messages_before`).
  void throwNewValidationErrors(uint32_t errors_before, size_t messages_before) const;

  FrameDriverOptions options_;
  std::unique_ptr<VulkanRenderer> vulkan_;
  ScenePlayback own_;
  // GPU work given out (by the scene objects' kinds, to the script's spawned decoder characters, to post
  // models), taken back by detach(), a replaced device and the destructor. Held weakly: a scene dropped by
  // its front end (Python renders a file loaded for one call) takes its work with it; what is still alive
  // when the driver goes is taken back then.
  struct Given {
    std::weak_ptr<const void> owner;
    std::function<void()> take_back;
  };
  std::vector<Given> given_;
  std::vector<std::weak_ptr<const void>> refused_;       // refused GPU work (said once)
  std::map<std::string, std::shared_ptr<void>> shared_;  // objects of the device the kinds share
  std::unique_ptr<Attach> attach_;
  // What the coming frame draws from (keep_) and what the last one drew from (retired_, released once the
  // coming frame has been drawn).
  std::vector<std::shared_ptr<const void>> keep_, retired_;
  int device_resets_ = 0;
  bool device_missing_ = false;  // a lost device was dropped and making the new one failed
};

}  // namespace sf
