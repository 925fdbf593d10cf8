#include "frame/frame.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "character/world.h"
#include "core/clock.h"
#include "core/error.h"
#include "frame/hull_outline_frame.h"
#include "gpu/gpu.h"
#include "hull/outline_pass.h"
#include "neural/gpu_image_model.h"
#include "neural/vulkan_executor.h"

namespace sf {

namespace {}  // namespace

Backend parseBackend(const std::string& name) {
  if (name == "auto") return Backend::kAuto;
  if (name == "cpu") return Backend::kCpu;
  if (name == "vulkan") return Backend::kVulkan;
  throw Error("backend '" + name + "': expected auto, cpu or vulkan");
}

size_t ScenePlayback::spawned() const {
  return world_ ? world_->size() : 0;
}

void ScenePlayback::reset() {
  world_.reset();
  world_time_ = 0;
  events_.reset();
}

std::string FrameResult::timing() const {
  std::string s;
  if (vulkan) {
    const VulkanPassTimes& pt = gpu.times;
    // Work before preprocess: generators and decoder characters written in the frame, skinned meshes.
    const bool meshes = mesh_triangles > 0;
    const std::string before = !meshes && !gpu_sources ? ""
                                                       : fmt::format("{} {:.2f}, ",
                                                                     !meshes       ? "generators"
                                                                     : gpu_sources ? "generators + meshes"
                                                                                   : "meshes",
                                                                     pt.mesh);
    s = fmt::format(
        "gpu {:.2f} ms: {}preprocess {:.2f}, bin {:.2f}, tile ranges {:.2f}, emit {:.2f}, tile sort {:.2f}, "
        "raster {:.2f}, "
        "readback {:.2f}",
        pt.total, before, pt.preprocess, pt.bin, pt.scan, pt.emit, pt.sort, pt.raster, pt.readback);
    if (gpu.raster_slices > 0)
      s += fmt::format(" (the raster's deep tiles in {} slices, the deepest {} pairs; {} submissions)",
                       gpu.raster_slices, gpu.longest_tile, gpu.submissions);
  } else {
    s = fmt::format("cpu: preprocess {:.1f} ms, sort {:.1f} ms, {}raster {:.1f} ms", cpu.preprocess_ms,
                    cpu.sort_ms, mesh_triangles ? fmt::format("meshes {:.1f} ms, ", cpu.mesh_ms) : "",
                    cpu.raster_ms);
  }
  const char* executor = vulkan ? "Vulkan executor" : "CPU executor";
  if (generators)
    s += fmt::format("; scene posed with generators ({}{}) in {:.1f} ms", executor,
                     vulkan ? ", in the frame" : "", pose_ms);
  if (post_in_frame)
    s += fmt::format("; post {} (Vulkan executor, in the frame)", post_name);
  else if (!post_name.empty())
    s += fmt::format("; post {} ({}) {:.1f} ms", post_name, executor, post_ms);
  return s;
}

// The GpuAttach of this driver: its device, its messages and its record of what it gave.
class FrameDriver::Attach final : public GpuAttach {
 public:
  explicit Attach(FrameDriver& d) : d_(d) {}
  gpu::Context& context() override { return d_.vulkan_->context(); }
  void say(const std::string& line) override { d_.say(line); }
  void given(std::weak_ptr<const void> owner, std::function<void()> take_back) override {
    forget();
    d_.given_.push_back({std::move(owner), std::move(take_back)});
  }
  bool takeBack(const void* owner) override {
    bool found = false;
    std::erase_if(d_.given_, [&](const Given& g) {
      std::shared_ptr<const void> o = g.owner.lock();
      if (!o || o.get() != owner) return false;
      g.take_back();
      return found = true;
    });
    return found;
  }
  // Whether a take-back is recorded for `owner`.
  bool takesBack(const void* owner) const {
    return std::any_of(d_.given_.begin(), d_.given_.end(),
                       [&](const Given& g) { return g.owner.lock().get() == owner; });
  }
  bool refusedBefore(const void* owner) override {
    std::erase_if(d_.refused_, [](const std::weak_ptr<const void>& w) { return w.expired(); });
    return std::any_of(d_.refused_.begin(), d_.refused_.end(),
                       [&](const std::weak_ptr<const void>& w) { return w.lock().get() == owner; });
  }
  void refuse(std::weak_ptr<const void> owner) override { d_.refused_.push_back(std::move(owner)); }
  std::shared_ptr<void> shared(const std::string& key,
                               const std::function<std::shared_ptr<void>()>& make) override {
    std::shared_ptr<void>& s = d_.shared_[key];
    if (!s) s = make();
    return s;
  }

 private:
  void forget() {  // owners that are gone took their work with them
    std::erase_if(d_.given_, [](const Given& g) { return g.owner.expired(); });
  }
  FrameDriver& d_;
};

FrameDriver::FrameDriver(const FrameDriverOptions& options)
    : options_(options), attach_(std::make_unique<Attach>(*this)) {
  if (options_.backend == Backend::kVulkan ||
      (options_.backend == Backend::kAuto && gpu::gpuDeviceAvailable())) {
    gpu::ContextOptions co;
    co.device = options_.device;
    co.validation = options_.validation;
    if (options_.configure) options_.configure(co);
    vulkan_ = std::make_unique<VulkanRenderer>(co);
  }
}

FrameDriver::~FrameDriver() {
  takeBackGpuPaths();
}

void FrameDriver::takeBackGpuPaths() {
  // The paths hold this driver's device: taken back before it goes, whoever still holds their owners.
  for (const Given& g : given_)
    if (std::shared_ptr<const void> owner = g.owner.lock()) g.take_back();
  given_.clear();
  refused_.clear();
  shared_.clear();
}

void FrameDriver::replaceDevice() {
  takeBackGpuPaths();
  keep_.clear();
  retired_.clear();
  device_missing_ = true;  // until the new one is made: a failed try is tried again by the next frame
  vulkan_.reset();         // destroying objects of a lost device is allowed; nothing waits on it
  gpu::ContextOptions co;
  co.device = options_.device;
  co.validation = options_.validation;
  if (options_.configure) options_.configure(co);
  vulkan_ = std::make_unique<VulkanRenderer>(co);
  device_missing_ = false;
  ++device_resets_;
}

template <typename Frame>
auto FrameDriver::recovering(Frame&& frame) -> decltype(frame()) {
  try {
    return frame();
  } catch (const gpu::DeviceLost& e) {
    if (!options_.replace_lost_device) throw;
    std::string what = e.what();
    try {
      replaceDevice();
      what += "; the frame driver has made a new device: render again to go on";
    } catch (const std::exception& again) {
      vulkan_.reset();
      what += std::string("; making a new device failed too: ") + again.what();
    }
    throw gpu::DeviceLost(what);
  }
}

std::string FrameDriver::describe() const {
  if (!vulkan_) return "the cpu backend";
  const gpu::DeviceInfo& d = vulkan_->device();
  return fmt::format("Vulkan device {} ({}, subgroup {})", d.name, d.typeName(), d.subgroup_size);
}

void FrameDriver::say(const std::string& line) const {
  if (options_.message)
    options_.message(line);
  else
    fmt::print(stderr, "{}\n", line);
}

void FrameDriver::retire(std::shared_ptr<const void> owner) {
  if (owner) keep_.push_back(std::move(owner));
}

void FrameDriver::attach(const Scene& scene) {
  if (!vulkan_) return;
  for (const SceneObject& o : scene.objects) o.kindOf().attachGpu(o, *attach_);
  // The post model: in the frame (an image pass between the raster and the readback), else on the Vulkan
  // executor after readback.
  // A model the executor refuses stays on the CPU executor (said once); a frame with nothing posed (no
  // raster to run it after) runs it on the Vulkan executor after readback.
  if (scene.post && !scene.post->gpuPath() && !attach_->refusedBefore(scene.post.get())) {
    nn::ImageModel& post = *scene.post;
    if (std::string why = nn::attachImageGpuPath(vulkan_->context(), post); !why.empty()) {
      attach_->refuse(scene.post);
      say(fmt::format("splatforge: warning: {} runs on the CPU executor: {}", post.path(), why));
    } else {
      post.setRunner(nn::vulkanRunner(vulkan_->context(), post.graph()));
      attach_->given(scene.post, [p = &post] {
        p->setGpuPath(nullptr);
        p->setRunner(nullptr);
      });
    }
  }
}

void FrameDriver::detach(const Scene& scene, ScenePlayback* playback) {
  for (const SceneObject& o : scene.objects) o.kindOf().detachGpu(*attach_);
  if (scene.post) attach_->takeBack(scene.post.get());
  if (playback && playback->world_) {
    attach_->takeBack(playback->world_.get());
    for (character::BundleCharacter* b : playback->world_->bundles()) b->setGpuPath(nullptr);
  }
}

void FrameDriver::pose(const Scene& scene, ScenePlayback& pb, const FrameRequest& request,
                       std::vector<RenderObject>& objects, std::vector<RenderMesh>& meshes) {
  const double t = request.time;
  const Camera& cam = request.camera;
  const bool gpu = vulkan_ != nullptr;  // characters deform and meshes skin in the Vulkan frame
  poseScene(scene, t, pb.frame_, gpu, &cam);
  objects.clear();
  meshes.clear();
  if (!request.pose_object) {
    objects = pb.frame_.objects;
    meshes = pb.frame_.meshes;
  } else {
    for (size_t i = 0; i < scene.objects.size(); ++i) {
      if (request.pose_object(i, scene.objects[i], objects, meshes)) continue;
      const auto [ob, oe] = pb.frame_.object_ranges[i];
      const auto [mb, me] = pb.frame_.mesh_ranges[i];
      objects.insert(objects.end(), pb.frame_.objects.begin() + static_cast<std::ptrdiff_t>(ob),
                     pb.frame_.objects.begin() + static_cast<std::ptrdiff_t>(oe));
      meshes.insert(meshes.end(), pb.frame_.meshes.begin() + static_cast<std::ptrdiff_t>(mb),
                    pb.frame_.meshes.begin() + static_cast<std::ptrdiff_t>(me));
    }
  }
  if (scene.script.empty() && scene.triggers.empty()) return;
  // The scene's character commands up to t (timed ones, and those animation events trigger); an earlier time
  // replays them from scene time 0 in a new world.
  const bool fresh = !pb.world_ || t < pb.world_time_;
  if (fresh) {
    retire(pb.world_);
    pb.world_ = std::make_shared<character::CharacterWorld>();
  }
  runSceneScript(scene, *pb.world_, fresh ? 0.0 : pb.world_time_, t, fresh);
  pb.world_time_ = t;
  for (const std::string& line : pb.world_->takeLog()) say(fmt::format("  [t={:.2f}] {}", t, line));
  if (gpu) {
    // Spawned decoder characters: the world's take-back walks the characters it holds when it runs (one
    // spawned earlier may have been despawned since).
    bool attached = false;
    for (character::BundleCharacter* b : pb.world_->bundles()) attached |= attachBundleGpu(*attach_, *b);
    if (attached && !attach_->takesBack(pb.world_.get()))
      attach_->given(pb.world_, [w = pb.world_.get()] {
        for (character::BundleCharacter* b : w->bundles()) b->setGpuPath(nullptr);
      });
  }
  pb.world_->setCamera(cam);            // decoder characters run their appearance pass for the view
  std::vector<RenderMesh> char_meshes;  // the mouth's meshes
  std::vector<RenderObject> chars = pb.world_->renderObjects(gpu, &char_meshes);
  objects.insert(objects.end(), chars.begin(), chars.end());
  meshes.insert(meshes.end(), char_meshes.begin(), char_meshes.end());
  keep_.push_back(pb.world_);
}

hull::OutlineGpu& FrameDriver::outlineGpu() {
  return *std::static_pointer_cast<hull::OutlineGpu>(attach_->shared(
      "hull outline", [&] { return std::make_shared<hull::OutlineGpu>(vulkan_->context()); }));
}

FrameResult FrameDriver::render(const Scene& scene, const FrameRequest& request) {
  return render(scene, own_, request);
}

FrameResult FrameDriver::render(const Scene& scene, ScenePlayback& playback, const FrameRequest& request) {
  if (device_missing_)
    replaceDevice();  // the last try to replace a lost device failed: never the CPU instead
  return recovering([&] { return renderFrame(scene, playback, request); });
}

FrameResult FrameDriver::renderFrame(const Scene& scene, ScenePlayback& playback,
                                     const FrameRequest& request) {
  attach(scene);
  FrameResult f;
  f.vulkan = vulkan_ != nullptr;
  f.generators = std::any_of(scene.objects.begin(), scene.objects.end(),
                             [](const SceneObject& o) { return o.as<GeneratorObject>() != nullptr; });
  std::vector<RenderObject> objects;
  std::vector<RenderMesh> meshes;
  const auto t_pose = Clock::now();
  pose(scene, playback, request, objects, meshes);
  f.pose_ms = msSince(t_pose);
  f.objects = objects.size();
  for (const RenderObject& o : objects) {
    f.gpu_sources |= o.gpu_source != nullptr;
    if (o.cloud) f.sh_degree = std::max(f.sh_degree, drawnShDegree(o.cloud->sh_degree, request.settings));
  }
  for (const RenderMesh& m : meshes) f.mesh_triangles += m.triangleCount();
  const std::vector<HullOutlineGroup> outlines = hullOutlineGroups(
      scene, playback.frame_, request.time, objects, meshes, request.camera, vulkan_ != nullptr);
  // The outline goes over the finished image, after the post model, on every path: in the Vulkan frame as its
  // last image passes when the post model runs there too, otherwise on the host after the post model.
  bool outline_after_post = false;
  if (objects.empty() && meshes.empty()) {  // nothing posed (yet): the background, transmittance 1
    f.image = ImageRGBA(request.camera.width, request.camera.height);
    for (size_t i = 0; i < f.image.pixels.size(); i += 4)
      for (int c = 0; c < 3; ++c) f.image.pixels[i + static_cast<size_t>(c)] = request.settings.background[c];
    if (request.settings.depth)
      for (size_t i = 0; i < f.image.pixels.size() / 4; ++i)
        f.image.depth.push_back(0.0f), f.image.depth.push_back(1.0f);
  } else if (vulkan_) {
    const gpu::Context& ctx = vulkan_->context();
    const uint32_t errors_before = ctx.validationErrors();
    const size_t messages_before = ctx.validationMessages().size();
    nn::ImageGpuPath* post = scene.post && request.post ? scene.post->gpuPath() : nullptr;
    std::vector<const ImagePass*> passes;
    if (post) {
      post->prepare(static_cast<uint32_t>(request.camera.width),
                    static_cast<uint32_t>(request.camera.height));
      passes.push_back(post);
      f.post_in_frame = true;
    }
    // Hull outlines: each style's mask frame first, its composite after the frame (and its post model); with
    // a post model that runs after the readback, on the host after it.
    outline_after_post = !outlines.empty() && scene.post && request.post && !post;
    const std::vector<std::unique_ptr<ImagePass>> outline_passes =
        outlines.empty() || outline_after_post
            ? std::vector<std::unique_ptr<ImagePass>>{}
            : drawHullOutlineMasks(*vulkan_, outlineGpu(), outlines, request.camera, request.settings);
    for (const auto& p : outline_passes) passes.push_back(p.get());
    if (!passes.empty()) {
      f.image =
          vulkan_->renderWithImagePasses(objects, request.camera, request.settings, passes, &f.gpu, meshes);
    } else {
      f.image = vulkan_->render(objects, request.camera, request.settings, &f.gpu, meshes);
    }
    f.splats = f.gpu.splats, f.visible = f.gpu.visible, f.tile_keys = f.gpu.tile_keys;
    throwNewValidationErrors(errors_before, messages_before);
  } else {
    f.image = renderCpu(objects, request.camera, request.settings, &f.cpu, meshes);
    f.splats = f.cpu.splats, f.visible = f.cpu.visible, f.tile_keys = f.cpu.tile_keys;
    outline_after_post = !outlines.empty();
  }
  f.outlined = objects.empty() && meshes.empty() ? 0 : outlines.size();
  frameDone(!objects.empty() || !meshes.empty());
  if (scene.post && request.post) f.post_name = std::filesystem::path(scene.post->path()).filename().string();
  if (scene.post && request.post &&
      !f.post_in_frame) {  // after readback (on the Vulkan executor with Vulkan)
    const auto t_post = Clock::now();
    const uint32_t errors_before = vulkan_ ? vulkan_->context().validationErrors() : 0;
    const size_t messages_before = vulkan_ ? vulkan_->context().validationMessages().size() : 0;
    f.image = scene.post->apply(f.image);
    f.post_ms = msSince(t_post);
    if (vulkan_)
      throwNewValidationErrors(errors_before, messages_before);  // the post model ran on the same device
  }
  if (outline_after_post) applyHullOutlinesCpu(f.image, outlines, request.camera, request.settings);
  // Once the frame is done: a frame that failed leaves its events to the next one at its time.
  ClipEventStep step = playback.events_.advance(scene, request.time);
  f.events = std::move(step.events);
  f.events_skipped = step.skipped;
  return f;
}

std::vector<VulkanPassTimes> FrameDriver::renderBackToBack(const Scene& scene, const FrameRequest& request,
                                                           int runs, VulkanFrameStats* stats) {
  if (device_missing_) replaceDevice();
  if (!vulkan_)
    throw Error("back-to-back frames time the Vulkan frame; this driver runs on the CPU renderer");
  return recovering([&] {
    attach(scene);
    std::vector<RenderObject> objects;
    std::vector<RenderMesh> meshes;
    pose(scene, own_, request, objects, meshes);
    std::vector<VulkanPassTimes> times =
        vulkan_->renderBackToBack(objects, request.camera, request.settings, runs, stats, meshes);
    frameDone(true);
    return times;
  });
}

void FrameDriver::frameDone(bool drawn) {
  if (!drawn) {
    retired_.insert(retired_.end(), std::make_move_iterator(keep_.begin()),
                    std::make_move_iterator(keep_.end()));
    keep_.clear();
    return;
  }
  retired_.clear();
  retired_.swap(keep_);
}

void FrameDriver::throwNewValidationErrors(uint32_t errors_before, size_t messages_before) const {
  const gpu::Context& ctx = vulkan_->context();
  if (const uint32_t errors = ctx.validationErrors() - errors_before; errors > 0)
    throw Error(fmt::format("{} Vulkan validation error(s):\n{}", errors,
                            ctx.validationReport(static_cast<uint32_t>(messages_before))));
}

}  // namespace sf
