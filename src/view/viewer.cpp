#include "view/viewer.h"

#include <volk.h>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <fmt/core.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "anim/clip.h"
#include "character/animator.h"
#include "character/world.h"
#include "core/error.h"
#include "frame/frame.h"
#include "gpu/gpu.h"
#include "io/file.h"
#include "io/image_io.h"
#include "render/vulkan_renderer.h"
#include "scene/scene.h"
#include "view/camera_control.h"
#include "view/ground_grid.h"
#include "view/presenter.h"
#include "view/render_scale.h"
#include "view/view_script.h"

namespace sf::view {

namespace {

using Clock = std::chrono::steady_clock;

// Under a script, time-driven motion (the turntable) advances this much per frame drawn and the camera's rest
// is counted in such frames, so that screenshots do not depend on how fast frames come.
constexpr double kScriptFrameSeconds = 1.0 / 30.0;

// The last GLFW error, for the one-line messages when the window system cannot be reached.
std::string g_glfw_error;
void onGlfwError(int code, const char* description) {
  g_glfw_error = fmt::format("{} (GLFW error 0x{:x})", description ? description : "unknown", code);
}

class GlfwSession {
 public:
  GlfwSession() {
    glfwSetErrorCallback(onGlfwError);
    if (!glfwInit())
      throw Error("cannot reach the display's window system: " +
                  (g_glfw_error.empty() ? std::string("glfwInit failed") : g_glfw_error));
    if (!glfwVulkanSupported()) {
      glfwTerminate();
      throw Error(
          "the window system offers no Vulkan surface support (GLFW found no Vulkan loader or surface "
          "extension)");
    }
  }
  ~GlfwSession() { glfwTerminate(); }
  GlfwSession(const GlfwSession&) = delete;
  GlfwSession& operator=(const GlfwSession&) = delete;
};

class Window {
 public:
  Window(int width, int height, const std::string& title) {
    glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
    glfwWindowHint(GLFW_RESIZABLE, GLFW_TRUE);
    window_ = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr);
    if (!window_)
      throw Error("cannot create a " + std::to_string(width) + "x" + std::to_string(height) +
                  " window: " + g_glfw_error);
  }
  ~Window() { glfwDestroyWindow(window_); }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;
  GLFWwindow* get() const { return window_; }

 private:
  GLFWwindow* window_ = nullptr;
};

// A free "splatforge-view-NNNN.png" in the working directory, for screenshots taken with F12.
std::string nextScreenshotName() {
  for (int i = 1;; ++i) {
    std::string name = fmt::format("splatforge-view-{:04d}.png", i);
    std::error_code ec;
    if (!std::filesystem::exists(name, ec)) return name;
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Keyboard keys and the names scripts tap them by.
struct KeyName {
  int key;
  const char* name;
};
constexpr KeyName kKeys[] = {{GLFW_KEY_F, "f"}, {GLFW_KEY_SPACE, "space"}, {GLFW_KEY_R, "r"},
                             {GLFW_KEY_H, "h"}, {GLFW_KEY_G, "g"},         {GLFW_KEY_T, "t"},
                             {GLFW_KEY_U, "u"}, {GLFW_KEY_W, "w"},         {GLFW_KEY_A, "a"},
                             {GLFW_KEY_S, "s"}, {GLFW_KEY_D, "d"},         {GLFW_KEY_Q, "q"},
                             {GLFW_KEY_E, "e"}, {GLFW_KEY_LEFT, "left"},   {GLFW_KEY_RIGHT, "right"},
                             {GLFW_KEY_0, "0"}, {GLFW_KEY_1, "1"},         {GLFW_KEY_2, "2"},
                             {GLFW_KEY_3, "3"}, {GLFW_KEY_F12, "f12"},     {GLFW_KEY_ESCAPE, "escape"}};

// A camera as camera JSON (intrinsics and world_to_camera, every float printed exactly): `render --camera`.
std::string cameraJson(const Camera& c) {
  std::string m;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      m += fmt::format("{}{:.9g}", m.empty() ? "" : ", ", c.world_to_camera.m[i][j]);
  return fmt::format(
      "{{\"width\": {}, \"height\": {}, \"fx\": {:.9g}, \"fy\": {:.9g}, \"cx\": {:.9g}, \"cy\": {:.9g},\n"
      " \"world_to_camera\": [{}]}}\n",
      c.width, c.height, c.fx, c.fy, c.cx, c.cy, m);
}

// What a frame shows, as far as the viewer's own state goes: a window at rest draws its last frame again
// only when this changes (or input, a script or a live control asks for a new one).
struct FrameKey {
  Camera camera;
  double time = 0;
  Vec3 background;
  int sh_degree = 0;
  bool grid = false;
  float scale = 1;
  bool antialiased = false;
  bool post = true;
  bool half_sh = true;
  bool half_raster = false;
  bool operator==(const FrameKey& o) const {
    const Camera &a = camera, &b = o.camera;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        if (a.world_to_camera.m[i][j] != b.world_to_camera.m[i][j]) return false;
    return a.width == b.width && a.height == b.height && a.fx == b.fx && a.fy == b.fy && a.cx == b.cx &&
           a.cy == b.cy && time == o.time && background.x == o.background.x &&
           background.y == o.background.y && background.z == o.background.z && sh_degree == o.sh_degree &&
           grid == o.grid && scale == o.scale && antialiased == o.antialiased && post == o.post &&
           half_sh == o.half_sh && half_raster == o.half_raster;
  }
};

bool isMoveKey(const std::string& name) {
  return name.size() == 1 && std::string("wasdqe").find(name[0]) != std::string::npos;
}

class Viewer {
 public:
  explicit Viewer(const ViewerOptions& o) : opt_(o) {
    if (!o.script.empty()) script_ = loadViewerScript(o.script);
    // Playback starts paused under a script, so that its screenshots do not depend on how fast frames come;
    // the grid starts off under a script (`grid on` or `key g` shows it), so that screenshots show the frame
    // `render` draws.
    playing_ = script_.empty();
    grid_ = script_.empty();
    scale_options_.adaptive = !o.full_res;
    scale_options_.target_ms = o.target_frame_ms;
    background_given_ = o.background.has_value();
    if (o.background) settings_.background = *o.background;
    blend_space_option_ = o.blend_space;
    settings_.antialiased = o.antialiased;
    if (!o.input.empty()) {
      scene_ = loadScene(o.input, o.clip, o.time);
      has_scene_ = true;
      scene_name_ = o.input;
    }
    if (!o.camera.empty())
      loadCameraJson(o.camera, o.width, o.height);  // refuse a bad camera before the window opens

    glfw_ = std::make_unique<GlfwSession>();
    window_ = std::make_unique<Window>(
        o.width, o.height, "splatforge view" + (o.input.empty() ? std::string() : " - " + o.input));
    glfwSetWindowUserPointer(window_->get(), this);
    glfwSetDropCallback(window_->get(), [](GLFWwindow* w, int count, const char** paths) {
      auto* self = static_cast<Viewer*>(glfwGetWindowUserPointer(w));
      for (int i = 0; i < count; ++i) self->dropped_.emplace_back(paths[i]);
    });
    // Key taps are queued as they come (ImGui's GLFW backend, installed later, passes them on): a tap shorter
    // than a frame (a frame at rest on a CPU renderer takes the better part of a second) is never seen down
    // by ImGui's per-frame key state.
    glfwSetKeyCallback(window_->get(), [](GLFWwindow* w, int key, int, int action, int) {
      if (action == GLFW_PRESS || action == GLFW_REPEAT)
        static_cast<Viewer*>(glfwGetWindowUserPointer(w))->key_taps_.push_back({key, action == GLFW_REPEAT});
    });
    FrameDriverOptions fo;
    fo.backend = Backend::kVulkan;
    fo.device = o.device;
    fo.validation = o.validation;
    fo.configure = addPresentOptions;
    fo.message = [](const std::string& line) { fmt::print(stderr, "  view: {}\n", line); };
    fo.replace_lost_device =
        false;  // the presenter lives on the device: replaceLostDevice() lets go of it first
    driver_ = std::make_unique<FrameDriver>(fo);
    vsync_ = o.vsync;
    presenter_ = std::make_unique<Presenter>(renderer().context(), window_->get(), o.vsync);
    fmt::print(stderr, "  view: {}x{} on Vulkan device {} ({}), swapchain {} images, {}\n",
               presenter_->width(), presenter_->height(), renderer().device().name,
               renderer().device().typeName(),
               presenter_->format() == VK_FORMAT_B8G8R8A8_UNORM ? "BGRA8" : "RGBA8",
               presenter_->presentMode() == VK_PRESENT_MODE_FIFO_KHR ? "vsync" : "no vsync");
    startScene(o.camera);
  }

  int run() {
    auto last = Clock::now();
    const auto start = last;
    bool idle = false;  // the last iteration drew nothing new: wait for input instead of spinning
    double idle_timeout = 0.1;
    while (!glfwWindowShouldClose(window_->get()) && !quit_) {
      if (idle)
        glfwWaitEventsTimeout(idle_timeout);
      else
        glfwPollEvents();
      const auto now = Clock::now();
      const double dt = std::chrono::duration<double>(now - last).count();
      last = now;
      const bool dropped = !dropped_.empty();
      for (const std::string& path : std::exchange(dropped_, {})) openFile(path, false);
      presenter_->newFrame();
      capture_path_.clear();
      camera_path_.clear();
      capture_overlay_ = false;
      const bool scripted = scriptRunning();
      handleInput(static_cast<float>(dt));
      if (turntable_ && turntable_speed_ != 0) {  // before the frame's script commands, which see each turn
        control_.turn(turntable_speed_ * static_cast<float>(scripted ? kScriptFrameSeconds : dt), centre_);
        markMotion();
      }
      runScript();
      if (quit_) break;
      if (playing_ && duration_ > 0) {
        // A stall advances the clip by at most anim::kMaxFrameStep (1/15 s): no jump in the pose.
        setTime(std::fmod(time_ + std::min(dt, static_cast<double>(anim::kMaxFrameStep)), duration_), false);
        markMotion();
      }
      int fb_w = 0, fb_h = 0;
      glfwGetFramebufferSize(window_->get(), &fb_w, &fb_h);
      if (fb_w > 0 && fb_h > 0) camera_ = sceneCamera(control_.camera(fb_w, fb_h));
      double since_motion = 0;  // this frame moved
      if (!moved_ && (scripted || scriptRunning()))
        since_motion = static_cast<double>(frames_since_motion_) * kScriptFrameSeconds;
      else if (!moved_)
        since_motion = std::chrono::duration<double>(Clock::now() - last_motion_).count();
      render_scale_ = chooseRenderScale(samples_, since_motion, scale_options_);
      drawUi();
      ImGui::Render();
      if (fb_w <= 0 || fb_h <= 0) {  // minimised
        idle = true;
        continue;
      }

      // A new frame when what it shows changed; a window at rest shows its last frame again.
      const FrameKey key{camera_,
                         time_,
                         settings_.background,
                         sh_degree_,
                         grid_,
                         render_scale_,
                         settings_.antialiased,
                         post_,
                         settings_.half_sh,
                         settings_.half_raster};
      const bool input = userInput() || dropped;
      const bool render = scripted || scriptRunning() || !has_frame_ || !(key == frame_key_) || input ||
                          lodStreaming() || std::exchange(dirty_, false) || ImGui::IsAnyItemActive() ||
                          std::any_of(characters_.begin(), characters_.end(),
                                      [](const CharacterControls& c) { return c.active(); });
      if (render) {
        const auto t_render = Clock::now();
        const Camera cam =
            scaleCamera(camera_, scaledSize(fb_w, render_scale_), scaledSize(fb_h, render_scale_));
        try {
          frame_ = renderFrame(cam);
        } catch (const gpu::DeviceLost& e) {
          replaceLostDevice(e.what());
          presenter_->newFrame();  // the overlay of this frame again, on the new presenter
          drawUi();
          ImGui::Render();
          frame_ = renderFrame(cam);  // the same frame on the new device (a second loss ends the view)
        }
        if (grid_) drawGroundGrid(frame_, cam, settings_.background, groundGrid());
        render_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - t_render).count();
        frame_key_ = key;
        frame_scale_ = render_scale_;
        has_frame_ = true;
        // The last few of each scale: the cost model needs times at two scales, and the full-size frame at
        // rest is the one a drag starts from.
        samples_.push_back({render_ms_, render_scale_});
        if (std::count_if(samples_.begin(), samples_.end(), [&](const RenderSample& r) {
              return r.scale == render_scale_;
            }) > static_cast<std::ptrdiff_t>(kRenderScaleSamples))
          samples_.erase(std::find_if(samples_.begin(), samples_.end(),
                                      [&](const RenderSample& r) { return r.scale == render_scale_; }));
      }
      ImageRGBA shot;
      PresentOptions po;
      po.stretch = frame_scale_ < 1;
      po.same_frame = !render;
      po.capture = capture_path_.empty() ? nullptr : &shot;
      po.capture_overlay = capture_overlay_;
      const auto t_present = Clock::now();
      presenter_->present(frame_, settings_.background, po);
      present_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - t_present).count();
      const gpu::Context& ctx = renderer().context();
      if (ctx.validationErrors() > 0)
        throw Error(fmt::format("{} Vulkan validation error(s):\n{}", ctx.validationErrors(),
                                ctx.validationReport()));
      if (!capture_path_.empty()) {
        writePng(capture_path_, shot);
        fmt::print("wrote {}\n", capture_path_);
        status_ = "wrote " + capture_path_;
      }
      if (!camera_path_.empty()) {
        const std::string json = cameraJson(camera_);
        writeFileAtomic(camera_path_,
                        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(json.data()), json.size()));
        fmt::print("wrote {}\n", camera_path_);
      }
      if (render) {
        frame_ms_.push_back(std::chrono::duration<double, std::milli>(Clock::now() - now).count());
        render_times_.push_back(render_ms_);
        ++frames_since_motion_;
      }
      // The rest is counted from the end of the last frame that moved: a frame slower than the rest time is
      // not a rest.
      if (std::exchange(moved_, false)) last_motion_ = Clock::now();
      // Idle until input comes, or until the camera has rested long enough for the full-resolution frame.
      idle = !render && !input && !scriptRunning();
      idle_timeout = render_scale_ < 1 ? std::max(0.005, scale_options_.rest_seconds - since_motion) : 0.1;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const size_t frames = frame_ms_.size();
    fmt::print(
        "view: {} frames in {:.2f} s ({:.1f} fps); median frame {:.2f} ms, median render {:.2f} ms, at "
        "{}x{}\n",
        frames, seconds, seconds > 0 ? static_cast<double>(frames) / seconds : 0.0, median(frame_ms_),
        median(render_times_), presenter_->width(), presenter_->height());
    return 0;
  }

 private:
  // Per scene object with a character: the controls on top of its clip (an Animator drives them).
  struct CharacterControls {
    std::unique_ptr<character::Animator> animator;
    std::vector<float> morph;  // one per morph target ("morph" expression space)
    bool look_at = false;      // follow the mouse
    character::Character::Frame frame;
    SplatDeformSource deform;
    bool active() const {
      return look_at || std::any_of(morph.begin(), morph.end(), [](float w) { return w != 0; });
    }
  };

  Scene loadScene(const std::string& path, const std::string& clip, double time) {
    fmt::print(stderr, "  loading {}\n", path);
    Scene scene;
    if (classifyInput(path) != InputKind::kSceneJson) {
      scene = sceneFromFile(path, clip, time);
    } else {
      if (!clip.empty()) throw Error("--clip applies to a glTF input; a scene JSON names each object's clip");
      SceneLoadOptions lo;
      lo.strict = opt_.strict;
      lo.confine_paths = !opt_.allow_outside_paths;
      lo.progress = [](const std::string& line) { fmt::print(stderr, "  {}\n", line); };
      scene = loadSceneJson(path, lo);
    }
    for (const std::string& w : scene.warnings) fmt::print(stderr, "splatforge view: warning: {}\n", w);
    return scene;
  }

  // A new scene: camera home, timeline, controls and SH degree from it. `camera_json`: a camera file for
  // the first view.
  void startScene(const std::string& camera_json) {
    int fb_w = 0, fb_h = 0;
    glfwGetFramebufferSize(window_->get(), &fb_w, &fb_h);
    fb_w = std::max(fb_w, 1), fb_h = std::max(fb_h, 1);
    time_ = 0;
    samples_.clear();   // another scene, other costs
    playback_.reset();  // the script's characters start over (the driver keeps the old ones until a frame is
                        // drawn)
    recent_events_.clear();
    characters_.clear();
    characters_.resize(scene_.objects.size());
    startTimeline();
    max_sh_degree_ = 0;
    bool captures = false;
    for (const SceneObject& o : scene_.objects) {
      if (o.cloud) max_sh_degree_ = std::max(max_sh_degree_, o.cloud->sh_degree);
      captures |= o.cloud && !o.model() && o.source != "placeholder";
    }
    sh_degree_ = max_sh_degree_;
    if (!background_given_) settings_.background = scene_.background.value_or(kViewerBackdrop);
    settings_.blend_space =
        blend_space_option_ ? *blend_space_option_ : scene_.blend_space.value_or(BlendSpace::kDisplay);
    // Level-of-detail objects stream while frames go on: a frame never waits for the disk.
    scene_.lod_settle = false;
    // On the Vulkan backend they are cut in the background, so that the frame rate is the GPU's.
    if (opt_.lod_cut_background) scene_.lod_worker = std::make_shared<lod::CutWorker>();
    if (opt_.lod_budget) scene_.lod_budget = *opt_.lod_budget;
    if (opt_.lod_pool) setLodPool(scene_, *opt_.lod_pool);
    // The world's up axis, as automatic framing has it: captures are y-down, glTF models y-up.
    const Vec3 up = captures ? Vec3{0, -1, 0} : Vec3{0, 1, 0};
    Vec3 centre{0, 0, 0};
    float radius = 1;
    has_bounds_ = false;
    Camera home;
    if (has_scene_) {
      try {
        const CloudBounds b = sceneBounds(scene_);
        centre = 0.5f * (b.p01 + b.p99);
        radius = std::max(0.5f * length(b.p99 - b.p01), 1e-3f);
        bounds_lo_ = b.p01, bounds_hi_ = b.p99;
        has_bounds_ = true;
        home = autoCamera(scene_, fb_w, fb_h);
      } catch (const Error&) {  // nothing to frame: a camera at the origin
        home = lookAtCamera(Vec3{0, 0, 0} - 3.0f * Vec3{0, 0, 1}, centre, up, 50, fb_w, fb_h);
      }
      if (scene_.camera) home = resizeCamera(*scene_.camera, fb_w, fb_h);
    } else {
      // A little above the ground plane (y = 0 here), so that the empty window shows the grid.
      home = lookAtCamera(Vec3{0, 1, -3}, centre, up, 50, fb_w, fb_h);
    }
    if (!camera_json.empty()) home = loadCameraJson(camera_json, fb_w, fb_h);
    move_speed_ = radius;  // the scene's radius per second
    centre_ = centre, radius_ = radius;
    control_ = CameraControl(home, centre, up, 2 * radius);
  }

  // The upright flip: the scene turned 180 degrees about the x axis through its centre, (x, y, z) ->
  // (x, 2 c.y - y, 2 c.z - z): y down <-> y up, as between captures written in the OpenCV (y down, z forward)
  // and OpenGL (y up, z back) conventions. A rotation, not a mirror, so nothing is drawn reversed; it fixes
  // the centre, so the scene stays in view.
  Mat4 flipTransform() const {
    Mat4 f;
    f.m[1][1] = -1, f.m[2][2] = -1;
    f.m[1][3] = 2 * centre_.y, f.m[2][3] = 2 * centre_.z;
    return f;
  }

  // The camera the controls give (in the world as shown) as a camera of the scene itself: the upright flip is
  // a view transform, composed into the pose; the clouds are not touched. `render --camera` of it draws the
  // frame the window shows.
  Camera sceneCamera(const Camera& shown) const {
    if (!upright_flip_) return shown;
    Camera c = shown;
    c.world_to_camera = shown.world_to_camera * flipTransform();
    return c;
  }

  // The grid under the scene: on the plane normal to the world's up axis (as shown, so the upright flip moves
  // it to the other side of the scene's own coordinates) through the lowest point of the scene's 1-99
  // percentile box; y = 0 before a scene is open. Lines fade out at several times the scene's size or the
  // camera's distance, whichever is larger.
  // The overlay's level-of-detail line (scenes with LOD objects): what the frame drew of the budget, the
  // nodes in memory, the chunks on their way, and the last cut's time and where it is made.
  void lodOverlay() const {
    uint64_t drawn = 0, resident = 0, pending = 0, objects = 0;
    double cut_ms = 0;
    for (const SceneObject& o : scene_.objects)
      if (const LodObject* l = o.as<LodObject>()) {
        const lod::StreamStats st = l->stream().stats();
        drawn += st.drawn, resident += st.resident_nodes, pending += st.pending, cut_ms = st.cut_ms;
        ++objects;
      }
    if (objects == 0) return;
    const bool background = scene_.lod_worker && opt_.lod_cut_background;
    ImGui::Text("level of detail: %llu of %llu drawn, %llu nodes in memory, %llu chunks on their way",
                static_cast<unsigned long long>(drawn), static_cast<unsigned long long>(scene_.lod_budget),
                static_cast<unsigned long long>(resident), static_cast<unsigned long long>(pending));
    ImGui::Text("  cut %.1f ms %s", cut_ms,
                background ? "on its own thread (frames draw the last one finished)" : "before every frame");
  }

  // Level-of-detail objects still changing: a cut to draw when it is done, a chunk on its way, a level change
  // fading (its rows computed on the host: with the cut before every frame, frames advance the fades; in the
  // background a fading cut starts the next, so working() covers them).
  bool lodStreaming() const {
    if (scene_.lod_worker && scene_.lod_worker->working()) return true;
    for (const SceneObject& o : scene_.objects)
      if (const LodObject* l = o.as<LodObject>()) {
        const lod::StreamStats st = l->stream().stats();
        if (st.pending > 0 || st.upload_host_rows > 0) return true;
      }
    return false;
  }

  GroundGrid groundGrid() const {
    GroundGrid g;
    const Vec3 shown_up = control_.up();
    // Up in the scene's own axes.
    const Vec3 up = upright_flip_ ? Vec3{shown_up.x, -shown_up.y, -shown_up.z} : shown_up;
    if (has_bounds_) g.height = up.y > 0 ? bounds_lo_.y : bounds_hi_.y;
    g.fade_distance = std::max(20.0f, 6.0f * std::max(radius_, length(camera_.position() - centre_)));
    return g;
  }

  void markMotion() {
    moved_ = true;
    frames_since_motion_ = 0;
  }

  bool scriptRunning() const { return next_command_ < script_.size() || wait_frames_ > 0 || wait_settled_; }

  // Whether the user did anything this frame that may change what is drawn: buttons, the wheel, keys, text.
  static bool userInput() {
    const ImGuiIO& io = ImGui::GetIO();
    for (int i = 0; i < 5; ++i)
      if (io.MouseDown[i] || io.MouseReleased[i]) return true;
    if (io.MouseWheel != 0 || io.MouseWheelH != 0 || io.InputQueueCharacters.Size > 0) return true;
    return std::any_of(std::begin(io.KeysDown), std::end(io.KeysDown), [](bool down) { return down; });
  }

  // Opens a dropped file. A failure keeps the current scene and shows why; a script's drop must work, so
  // there the failure ends the run.
  void openFile(const std::string& path, bool from_script) {
    try {
      Scene next = loadScene(path, {}, 0);
      // The renderer recognises uploaded clouds by address and size: the old scene stays alive until a frame
      // of the new one has been rendered, so that no new cloud can take an old one's address. Its GPU work
      // (generators, characters, hulls, post) is taken back now.
      driver_->detach(scene_);
      driver_->retire(std::make_shared<const Scene>(std::move(scene_)));
      scene_ = std::move(next);
      has_scene_ = true;
      scene_name_ = path;
      glfwSetWindowTitle(window_->get(), ("splatforge view - " + path).c_str());
      startScene({});
      status_ = "opened " + path;
      dirty_ = true;
    } catch (const std::exception& e) {
      status_ = "cannot open " + path + ": " + e.what();
      fmt::print(stderr, "splatforge view: error: {}\n", status_);
      if (from_script) throw;
    }
  }

  void setTime(double t, bool pause) {
    time_ = duration_ > 0 ? std::clamp(t, 0.0, duration_) : std::max(t, 0.0);
    if (pause) playing_ = false;
  }

  void screenshot(const std::string& path) {
    if (fileExtension(path) != ".png") throw Error("screenshot " + path + ": expected a .png path");
    capture_path_ = path;
  }

  // F12 and the panel's button: a screenshot and its camera beside it (the same name, .json), so that
  // `render --camera` can draw it again, the upright flip included.
  void screenshotWithCamera() {
    const std::string png = nextScreenshotName();
    screenshot(png);
    camera_path_ = png.substr(0, png.size() - 4) + ".json";
  }

  // A key's action; the keyboard and scripts (`key <name>`) both come here. Movement keys tapped move a
  // tenth of a second's worth; held on the keyboard they move continuously (handleInput).
  void tapKey(const std::string& name) {
    if (name == "f") {
      control_.setMode(control_.mode() == CameraControl::Mode::kOrbit ? CameraControl::Mode::kFly
                                                                      : CameraControl::Mode::kOrbit);
    } else if (name == "space") {
      playing_ = !playing_;
    } else if (name == "r") {
      control_.reset();
    } else if (name == "h") {
      show_ui_ = !show_ui_;
    } else if (name == "g") {
      grid_ = !grid_;
    } else if (name == "t") {
      turntable_ = !turntable_;
    } else if (name == "u") {
      upright_flip_ = !upright_flip_;
    } else if (isMoveKey(name)) {
      moveBy(name, 0.1f);
    } else if (name == "left" || name == "right") {
      setTime(time_ + (name == "left" ? -1.0 : 1.0) / 30.0, true);
    } else if (name.size() == 1 && name[0] >= '0' && name[0] <= '3') {
      sh_degree_ = std::min(name[0] - '0', max_sh_degree_);
    } else if (name == "f12") {
      screenshotWithCamera();
    } else if (name == "escape") {
      quit_ = true;
    }
    dirty_ = true;
  }

  void moveBy(const std::string& key, float seconds) {
    const float s = move_speed_ * seconds;
    const char k = key[0];
    control_.move(k == 'd'   ? s
                  : k == 'a' ? -s
                             : 0,
                  k == 'e'   ? s
                  : k == 'q' ? -s
                             : 0,
                  k == 'w'   ? s
                  : k == 's' ? -s
                             : 0);
    markMotion();
  }

  void handleInput(float dt) {
    const ImGuiIO& io = ImGui::GetIO();
    int fb_h = 0;
    glfwGetFramebufferSize(window_->get(), nullptr, &fb_h);
    if (!io.WantCaptureMouse) {
      const float sx = io.DisplayFramebufferScale.x, sy = io.DisplayFramebufferScale.y;
      const bool moved = io.MouseDelta.x != 0 || io.MouseDelta.y != 0;
      if (io.MouseDown[0] && moved) control_.rotate(0.25f * io.MouseDelta.x, 0.25f * io.MouseDelta.y);
      if ((io.MouseDown[1] || io.MouseDown[2]) && moved)
        control_.pan(io.MouseDelta.x * sx, io.MouseDelta.y * sy, std::max(fb_h, 1));
      if (io.MouseWheel != 0) control_.zoom(io.MouseWheel);
      // A drag moves the camera until the button comes up, pauses included: a full-size frame in the middle
      // of one would hold the next movement back.
      if (io.MouseDown[0] || io.MouseDown[1] || io.MouseDown[2] || io.MouseWheel != 0) markMotion();
    }
    const std::vector<std::pair<int, bool>> taps = std::exchange(key_taps_, {});
    if (io.WantCaptureKeyboard) return;
    for (const KeyName& k : kKeys) {
      if (isMoveKey(k.name)) {
        const float speed = ImGui::IsKeyDown(GLFW_KEY_LEFT_SHIFT) ? 4.0f : 1.0f;
        if (ImGui::IsKeyDown(k.key)) moveBy(k.name, dt * speed);
      }
    }
    for (const auto& [key, repeat] : taps)  // repeated only where holding the key means to go on (time steps)
      for (const KeyName& k : kKeys)
        if (k.key == key && !isMoveKey(k.name) && (!repeat || key == GLFW_KEY_LEFT || key == GLFW_KEY_RIGHT))
          tapKey(k.name);
  }

  // Runs script commands until one that ends this frame's share (wait, screenshot, quit).
  void runScript() {
    if (wait_frames_ > 0 && --wait_frames_ > 0) return;
    if (wait_settled_) {
      // `wait settled`: until the level-of-detail objects have not changed for one frame more than a fade
      // takes (kFadeFrames + 1 quiet frames in a row).
      quiet_frames_ = lodStreaming() ? 0 : quiet_frames_ + 1;
      if (quiet_frames_ <= lod::kFadeFrames) {
        if (++settle_frames_ < kSettleFrames) return;
        throw Error(
            fmt::format("{}:{}: wait settled: the level-of-detail objects still change after {} frames",
                        opt_.script, settle_line_, kSettleFrames));
      }
      wait_settled_ = false;
    }
    while (next_command_ < script_.size()) {
      const ScriptCommand& c = script_[next_command_++];
      try {
        switch (c.kind) {
          case ScriptCommand::Kind::kCamera: {
            int fb_w = 0, fb_h = 0;
            glfwGetFramebufferSize(window_->get(), &fb_w, &fb_h);
            control_.setCamera(loadCameraJson(c.path, std::max(fb_w, 1), std::max(fb_h, 1)));
            break;
          }
          case ScriptCommand::Kind::kOrbit:
            control_.setOrbit(static_cast<float>(c.values[0]), static_cast<float>(c.values[1]),
                              static_cast<float>(c.values[2]));
            break;
          case ScriptCommand::Kind::kKey:
            tapKey(c.key);
            break;
          case ScriptCommand::Kind::kTime:
            setTime(c.values[0], true);
            break;
          case ScriptCommand::Kind::kDrop:
            openFile(c.path, true);
            break;
          case ScriptCommand::Kind::kWait:
            if (c.key == "settled") {
              wait_settled_ = true, settle_frames_ = quiet_frames_ = 0, settle_line_ = c.line;
              return;
            }
            wait_frames_ = static_cast<int>(c.values[0]);
            if (wait_frames_ > 0) return;
            break;
          case ScriptCommand::Kind::kScreenshot:
            screenshot(c.path);
            capture_overlay_ = c.overlay;
            return;
          case ScriptCommand::Kind::kClip:
            scriptClip(c.key);
            break;
          case ScriptCommand::Kind::kExpression:
            scriptExpression(c.key, static_cast<float>(c.values[0]));
            break;
          case ScriptCommand::Kind::kSaveCamera:
            camera_path_ = c.path;  // written with this frame's camera
            break;
          case ScriptCommand::Kind::kGrid:
            grid_ = c.key == "on";
            break;
          case ScriptCommand::Kind::kAntialiased:
            settings_.antialiased = c.key == "on";
            break;
          case ScriptCommand::Kind::kPost:
            if (!scene_.post) throw Error("post " + c.key + ": the scene has no post model");
            post_ = c.key == "on";
            break;
          case ScriptCommand::Kind::kTurntable:
            turntable_ = c.key != "off";
            if (turntable_) turntable_speed_ = static_cast<float>(c.values[0]);
            break;
          case ScriptCommand::Kind::kUprightFlip:
            upright_flip_ = c.key == "on";
            break;
          case ScriptCommand::Kind::kResize:
            // The next frame, after the window system has applied it, draws at the new size.
            glfwSetWindowSize(window_->get(), static_cast<int>(c.values[0]), static_cast<int>(c.values[1]));
            return;
          case ScriptCommand::Kind::kLookAt:
            scriptLookAt(c.key == "off", static_cast<float>(c.values[0]), static_cast<float>(c.values[1]));
            break;
          case ScriptCommand::Kind::kQuit:
            quit_ = true;
            return;
        }
      } catch (const std::exception& e) {
        throw Error(fmt::format("{}:{}: {}", opt_.script, c.line, e.what()));
      }
      if (!capture_path_.empty()) return;  // a tapped F12
    }
  }

  // Script character commands: each applies to every scene character it can (the UI's controls, by name).
  void scriptClip(const std::string& clip) {
    bool any = false;
    for (SceneObject& o : scene_.objects) {
      if (!o.as<CharacterObject>()) continue;
      const int index = o.model()->findClip(clip);
      if (index >= 0) o.clip = index, any = true;
    }
    if (!any) throw Error("no character of the scene has a clip named or numbered '" + clip + "'");
    startTimeline();
  }

  void scriptExpression(const std::string& target, float weight) {
    bool any = false;
    for (size_t i = 0; i < scene_.objects.size(); ++i) {
      const CharacterObject* co = scene_.objects[i].as<CharacterObject>();
      if (!co) continue;
      const character::Character& ch = co->character();
      if (ch.morphTargetCount() == 0) continue;
      const GltfModel::DrawInfo info = ch.model().drawInfo(static_cast<size_t>(ch.boundDraw()));
      const std::vector<std::string>& names =
          ch.model().document().meshes[static_cast<size_t>(info.mesh)].target_names;
      const auto it = std::find(names.begin(), names.end(), target);
      if (it == names.end() || static_cast<size_t>(it - names.begin()) >= ch.morphTargetCount()) continue;
      characters_[i].morph.resize(ch.morphTargetCount(), 0.0f);
      characters_[i].morph[static_cast<size_t>(it - names.begin())] = weight;
      any = true;
    }
    if (!any) throw Error("no character of the scene has a morph target named '" + target + "'");
  }

  void scriptLookAt(bool off, float x, float y) {
    bool any = false;
    for (size_t i = 0; i < scene_.objects.size(); ++i) {
      const CharacterObject* co = scene_.objects[i].as<CharacterObject>();
      if (!co) continue;
      CharacterControls& cc = characters_[i];
      if (!cc.animator) cc.animator = std::make_unique<character::Animator>(co->characterPtr());
      if (cc.animator->headJoint() < 0) continue;
      cc.look_at = !off;
      any = true;
    }
    if (!any) throw Error("no character of the scene has a head joint to aim");
    script_pointer_ = off ? std::nullopt : std::optional<std::pair<float, float>>({x, y});
  }

  // The world-space point under the mouse (or the script's look-at pixel) at the distance of `p` from the
  // camera: the look-at target.
  Vec3 mousePoint(Vec3 p) const {
    double mx = 0, my = 0;
    glfwGetCursorPos(window_->get(), &mx, &my);
    const ImGuiIO& io = ImGui::GetIO();
    float u = static_cast<float>(mx) * io.DisplayFramebufferScale.x,
          v = static_cast<float>(my) * io.DisplayFramebufferScale.y;
    if (script_pointer_) u = script_pointer_->first, v = script_pointer_->second;
    const Vec3 ray_camera = normalize(Vec3{(u - camera_.cx) / camera_.fx, (v - camera_.cy) / camera_.fy, 1});
    const Vec3 ray = transpose(camera_.world_to_camera.linear()) * ray_camera;
    const Vec3 eye = camera_.position();
    return eye + ray * length(p - eye);
  }

  // The frame at `cam` (camera_, or camera_ scaled down while the camera moves), with the depth plane the
  // grid is occluded by when the grid is on.
  ImageRGBA renderFrame(const Camera& cam) {
    // (Before a file is opened the scene is empty: the frame is the background.)
    FrameRequest request{time_, cam, settings_, {}};
    request.settings.depth = grid_;
    // The SH degree control: applied where the frame packs the objects (no copies of the clouds).
    request.settings.max_sh_degree = sh_degree_ < max_sh_degree_ ? sh_degree_ : -1;
    request.post = post_;  // the overlay's toggle (script `post on|off`)
    // Characters with controls: posed by their animator (clip at the same time, expression, look-at) in place
    // of the scene's posing.
    request.pose_object = [this](size_t i, const SceneObject& o, std::vector<RenderObject>& objects,
                                 std::vector<RenderMesh>& meshes) {
      const CharacterObject* co = o.as<CharacterObject>();
      CharacterControls* cc = co ? &characters_[i] : nullptr;
      if (!cc || !cc->active()) return false;
      const character::Character& ch = co->character();
      if (!cc->animator) cc->animator = std::make_unique<character::Animator>(co->characterPtr());
      cc->animator->play(o.clip, 0);
      cc->animator->update(o.clipTime(time_));
      cc->animator->setExpression(
          std::any_of(cc->morph.begin(), cc->morph.end(), [](float w) { return w != 0; })
              ? cc->morph
              : std::vector<float>{});
      std::optional<Vec3> target;
      if (cc->look_at)
        target =
            transformPoint(inverseAffine(o.object_to_world), mousePoint(o.object_to_world.translation()));
      cc->animator->lookAt(target);
      cc->frame.pose.skinning = o.skinning;  // the object's "skinning", as the scene's posing honours it
      const bool gpu = character::poseCharacterFrame(
          ch, true, cc->frame, [&](bool pose_only) { cc->animator->evaluate(cc->frame, pose_only); });
      if (gpu) cc->deform = ch.deformSource(cc->frame, ch.gpuSkinnable());
      const Mat4 to_world =
          o.object_to_world * ch.model().meshToModel(cc->frame.pose, static_cast<size_t>(ch.boundDraw()));
      character::appendCharacterFrame(ch, cc->frame, to_world, &camera_, gpu ? &cc->deform : nullptr, objects,
                                      meshes);
      return true;
    };
    FrameResult f = driver_->render(scene_, playback_, request);
    stats_ = f.gpu;
    // The animation events this frame crossed (the clock's rule: none when the timeline goes back), the
    // latest kept.
    for (const FiredClipEvent& e : f.events)
      recent_events_.push_back(
          fmt::format("t = {:.3f} s  {}: {} (clip {:.3f} s)", e.scene_time, e.object, e.event, e.clip_time));
    if (f.events_skipped > 0)
      recent_events_.push_back(fmt::format("({} more in one frame, not listed)", f.events_skipped));
    if (recent_events_.size() > kRecentEvents)
      recent_events_.erase(recent_events_.begin(),
                           recent_events_.end() - static_cast<std::ptrdiff_t>(kRecentEvents));
    return std::move(f.image);
  }

  // The device was lost under a frame: the swapchain and the overlay go first (they live on it), then the
  // driver makes a new device and takes back the scene's GPU work (attached again by the next frame), and a
  // new presenter is made on it. The view goes on where it was, saying what happened.
  void replaceLostDevice(const std::string& what) {
    fmt::print(stderr, "splatforge view: {}\n", what);
    presenter_.reset();
    driver_->replaceDevice();
    presenter_ = std::make_unique<Presenter>(renderer().context(), window_->get(), vsync_);
    status_ = "the Vulkan device was lost and replaced (" + what + ")";
    fmt::print(stderr, "  view: the device was lost and replaced; going on\n");
    has_frame_ = false;
    dirty_ = true;
  }

  void drawUi() {
    if (!show_ui_) return;
    ImGui::SetNextWindowPos(ImVec2(8, 8), ImGuiCond_FirstUseEver);
    // The panel starts collapsed to its title bar, whatever the window's size: the first thing seen is the
    // scene (a click on its title opens it; H hides it).
    ImGui::SetNextWindowCollapsed(true, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowBgAlpha(0.8f);
    ImGui::Begin("splatforge", nullptr, ImGuiWindowFlags_AlwaysAutoResize);
    if (!has_scene_)
      ImGui::TextUnformatted(
          "Drop a splat file, glTF model, character package\nor scene JSON onto the window.");
    else
      ImGui::Text("%s", scene_name_.c_str());
    if (!status_.empty()) ImGui::TextWrapped("%s", status_.c_str());

    if (ImGui::CollapsingHeader("Frame", ImGuiTreeNodeFlags_DefaultOpen)) {
      const size_t n = std::min<size_t>(frame_ms_.size(), 30);
      double mean = 0;
      for (size_t i = frame_ms_.size() - n; i < frame_ms_.size(); ++i)
        mean += frame_ms_[i] / static_cast<double>(n);
      ImGui::Text("%dx%d  %.1f fps  (frame %.2f ms: render %.2f, present %.2f)", camera_.width,
                  camera_.height, mean > 0 ? 1000.0 / mean : 0.0, mean, render_ms_, present_ms_);
      // Adaptive resolution: the scale the last frame was drawn at (the window shows it stretched).
      if (frame_scale_ < 1)
        ImGui::Text("render scale 1/%d (%dx%d) while moving",
                    static_cast<int>(std::lround(1.0f / frame_scale_)), frame_.width, frame_.height);
      else
        ImGui::TextUnformatted("render scale 1 (full resolution)");
      ImGui::Text("%s", renderer().device().name.c_str());
      ImGui::Text("splats %zu  visible %zu  tile pairs %zu  merge passes %d%s", stats_.splats, stats_.visible,
                  stats_.tile_keys, stats_.sort_passes, stats_.regrown ? "  (keys regrown)" : "");
      lodOverlay();
      const VulkanPassTimes& t = stats_.times;
      if (ImGui::TreeNode("GPU passes", "GPU passes: %.2f ms", t.total)) {
        if (ImGui::BeginTable("passes", 2, ImGuiTableFlags_SizingFixedFit)) {
          const std::pair<const char*, double> rows[] = {{"meshes + deform", t.mesh},
                                                         {"preprocess", t.preprocess},
                                                         {"bin", t.bin},
                                                         {"tile ranges", t.scan},
                                                         {"emit", t.emit},
                                                         {"tile sort", t.sort},
                                                         {"raster", t.raster},
                                                         {"readback", t.readback},
                                                         {"GPU total", t.total}};
          for (const auto& [name, ms] : rows) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(name);
            ImGui::TableNextColumn();
            ImGui::Text("%7.3f ms", ms);
          }
          ImGui::EndTable();
        }
        ImGui::TreePop();
      }
    }

    if (ImGui::CollapsingHeader("Camera", ImGuiTreeNodeFlags_DefaultOpen)) {
      int mode = control_.mode() == CameraControl::Mode::kOrbit ? 0 : 1;
      bool changed = ImGui::RadioButton("orbit", &mode, 0);
      ImGui::SameLine();
      changed |= ImGui::RadioButton("fly (F)", &mode, 1);
      if (changed) control_.setMode(mode == 0 ? CameraControl::Mode::kOrbit : CameraControl::Mode::kFly);
      ImGui::SameLine();
      if (ImGui::Button("reset (R)")) control_.reset();
      ImGui::Text("yaw %.1f  pitch %.1f  distance %.3f", control_.yawDeg(), control_.pitchDeg(),
                  control_.distance());
      ImGui::SliderFloat("move speed", &move_speed_, 0.001f, 100.0f, "%.3f /s", ImGuiSliderFlags_Logarithmic);
      ImGui::Checkbox("turntable (T)", &turntable_);
      ImGui::SameLine();
      ImGui::SetNextItemWidth(160);
      ImGui::SliderFloat("deg/s", &turntable_speed_, -180.0f, 180.0f, "%.0f");
      ImGui::Checkbox("upright flip (U): y down <-> y up", &upright_flip_);
    }

    if (ImGui::CollapsingHeader("Render", ImGuiTreeNodeFlags_DefaultOpen)) {
      float bg[3] = {settings_.background.x, settings_.background.y, settings_.background.z};
      if (ImGui::ColorEdit3("background", bg)) settings_.background = Vec3{bg[0], bg[1], bg[2]};
      if (max_sh_degree_ > 0) {
        ImGui::SliderInt("SH degree", &sh_degree_, 0, max_sh_degree_);
        ImGui::Checkbox("SH bands 1-3 at half precision", &settings_.half_sh);
      } else
        ImGui::TextUnformatted("SH degree 0 (the scene has no higher-order SH)");
      ImGui::Checkbox("blend at half precision (Vulkan)", &settings_.half_raster);
      ImGui::Checkbox("ground grid and axes (G)", &grid_);
      ImGui::Checkbox("antialiased: every object (mip filter)", &settings_.antialiased);
      if (scene_.post)
        ImGui::Checkbox(
            ("post-processing: " + std::filesystem::path(scene_.post->path()).filename().string()).c_str(),
            &post_);
      bool full_res = !scale_options_.adaptive;
      if (ImGui::Checkbox("full resolution while moving", &full_res)) scale_options_.adaptive = !full_res;
      if (ImGui::Button("screenshot (F12)")) screenshotWithCamera();
    }

    if (duration_ > 0 && ImGui::CollapsingHeader("Timeline", ImGuiTreeNodeFlags_DefaultOpen)) {
      if (ImGui::Button(playing_ ? "pause" : "play ")) playing_ = !playing_;
      ImGui::SameLine();
      float t = static_cast<float>(time_);
      if (ImGui::SliderFloat("time", &t, 0.0f, static_cast<float>(duration_), "%.3f s")) setTime(t, true);
    }
    if (!recent_events_.empty() &&
        ImGui::CollapsingHeader("Animation events", ImGuiTreeNodeFlags_DefaultOpen))
      for (const std::string& line : recent_events_) ImGui::TextUnformatted(line.c_str());

    bool any_character = false;
    for (const SceneObject& o : scene_.objects) any_character |= o.as<CharacterObject>() != nullptr;
    if (any_character && ImGui::CollapsingHeader("Characters")) characterUi();
    if (!scene_.script.empty())
      ImGui::Text("%zu characters spawned by the scene's script (not controllable here)",
                  playback_.spawned());
    ImGui::End();
  }

  void characterUi() {
    for (size_t i = 0; i < scene_.objects.size(); ++i) {
      SceneObject& o = scene_.objects[i];
      const CharacterObject* co = o.as<CharacterObject>();
      if (!co) continue;
      const character::Character& ch = co->character();
      CharacterControls& cc = characters_[i];
      ImGui::PushID(static_cast<int>(i));
      if (ImGui::TreeNode("character", "%s", o.name.empty() ? ch.source().c_str() : o.name.c_str())) {
        const auto& clips = ch.model().clips();
        const std::string current =
            o.clip < 0 ? std::string("rest pose") : clips[static_cast<size_t>(o.clip)].name;
        if (ImGui::BeginCombo("clip", current.c_str())) {
          const int before = o.clip;
          if (ImGui::Selectable("rest pose", o.clip < 0)) o.clip = -1;
          for (size_t c = 0; c < clips.size(); ++c) {
            ImGui::PushID(static_cast<int>(c));
            if (ImGui::Selectable(clips[c].name.empty() ? "(unnamed)" : clips[c].name.c_str(),
                                  o.clip == static_cast<int>(c)))
              o.clip = static_cast<int>(c);
            ImGui::PopID();
          }
          ImGui::EndCombo();
          if (o.clip != before) startTimeline();
        }
        if (!cc.animator) cc.animator = std::make_unique<character::Animator>(co->characterPtr());
        if (cc.animator->headJoint() >= 0)
          ImGui::Checkbox("look at the mouse", &cc.look_at);
        else
          ImGui::TextDisabled("look-at: no head joint in this skeleton");
        const size_t targets = ch.morphTargetCount();
        if (targets == 0) {
          ImGui::TextDisabled("expressions: no morph targets (space '%s')", ch.expressionSpace().c_str());
        } else {
          cc.morph.resize(targets, 0.0f);
          const GltfModel::DrawInfo info = ch.model().drawInfo(static_cast<size_t>(ch.boundDraw()));
          const std::vector<std::string>& names =
              ch.model().document().meshes[static_cast<size_t>(info.mesh)].target_names;
          ImGui::Text("expression (%zu morph targets, space '%s')", targets, ch.expressionSpace().c_str());
          ImGui::SameLine();
          if (ImGui::SmallButton("neutral")) std::fill(cc.morph.begin(), cc.morph.end(), 0.0f);
          ImGui::BeginChild("morphs", ImVec2(360, std::min(200.0f, 24.0f * static_cast<float>(targets))),
                            true);
          for (size_t t = 0; t < targets; ++t) {
            const std::string label =
                t < names.size() && !names[t].empty() ? names[t] : "target " + std::to_string(t);
            ImGui::SliderFloat(label.c_str(), &cc.morph[t], 0.0f, 1.0f, "%.2f");
          }
          ImGui::EndChild();
        }
        ImGui::TreePop();
      }
      ImGui::PopID();
    }
  }

  // The timeline's length: the longest clip played (at its speed), or past the scene script's last command.
  void startTimeline() {
    duration_ = 0;
    for (const SceneObject& o : scene_.objects)
      if (o.model() && o.clip >= 0) {
        const float d = o.model()->clips()[static_cast<size_t>(o.clip)].duration;
        if (d > 0 && o.speed != 0)
          duration_ = std::max(duration_, static_cast<double>(d) / std::abs(o.speed));
      }
    for (const SceneObject& o :
         scene_.objects)  // generators driven by time play one pass of their model time
      if (const double span = o.kindOf().modelTimeSpan(); span > 0 && o.speed != 0)
        duration_ = std::max(duration_, span / std::abs(o.speed));
    for (const character::ScriptCommand& c : scene_.script) duration_ = std::max(duration_, c.t + 1.0);
    setTime(time_, false);
  }

  ViewerOptions opt_;
  std::vector<ScriptCommand> script_;
  size_t next_command_ = 0;
  int wait_frames_ = 0;
  // `wait settled`: frames waited, frames in a row without a change, the command's line.
  static constexpr int kSettleFrames = 10000;
  bool wait_settled_ = false;
  int settle_frames_ = 0, quiet_frames_ = 0, settle_line_ = 0;
  bool quit_ = false;
  std::string capture_path_;      // write this frame here
  std::string camera_path_;       // write this frame's camera here
  bool capture_overlay_ = false;  // with the UI
  std::optional<std::pair<float, float>>
      script_pointer_;  // look-at pixel set by a script, instead of the mouse

  Scene scene_;
  bool has_scene_ = false;
  std::string scene_name_, status_;
  RenderSettings settings_;
  bool background_given_ = false;
  CameraControl control_;
  Camera camera_;
  float move_speed_ = 1;
  double time_ = 0, duration_ = 0;
  bool playing_ = true, show_ui_ = true;
  int sh_degree_ = 0, max_sh_degree_ = 0;
  ScenePlayback playback_;  // posed storage, the script's characters and the animation events' clock
  static constexpr size_t kRecentEvents = 8;
  std::vector<std::string> recent_events_;     // the latest animation events the frames fired, oldest first
  std::vector<CharacterControls> characters_;  // per scene object
  std::vector<std::string> dropped_;
  std::vector<std::pair<int, bool>> key_taps_;  // GLFW key, repeat: since the last frame
  VulkanFrameStats stats_;
  std::vector<double> frame_ms_, render_times_;
  double render_ms_ = 0, present_ms_ = 0;

  // The scene's 1-99 percentile box (the grid's plane), its centre (the turntable's pivot, the upright flip's
  // centre) and radius.
  Vec3 bounds_lo_{0, 0, 0}, bounds_hi_{0, 0, 0}, centre_{0, 0, 0};
  float radius_ = 1;
  bool has_bounds_ = false;
  bool grid_ = true, upright_flip_ = false, turntable_ = false;
  bool post_ = true;            // the scene's post model on (the overlay's toggle)
  float turntable_speed_ = 20;  // degrees per second, positive: the view turns right

  // Adaptive resolution (view/render_scale.h): the last frames' render times at their scales; motion marks.
  RenderScaleOptions scale_options_;
  std::vector<RenderSample> samples_;
  float render_scale_ = 1;
  Clock::time_point last_motion_{};    // the end of the last frame that moved
  bool moved_ = false;                 // this frame moved
  int frames_since_motion_ = 1000000;  // under a script, rest is counted in frames

  // The last frame drawn (grid included), shown again while nothing changes.
  ImageRGBA frame_;
  FrameKey frame_key_;
  float frame_scale_ = 1;
  bool has_frame_ = false, dirty_ = false;

  // Destroyed in reverse: the presenter (surface, swapchain, ImGui) before the renderer's Vulkan context,
  // the context before the window, the window before GLFW.
  std::unique_ptr<GlfwSession> glfw_;
  std::unique_ptr<Window> window_;
  // The frame (its Vulkan renderer, the GPU work it attached to scenes), before the presenter on its device.
  std::unique_ptr<FrameDriver> driver_;
  std::unique_ptr<Presenter> presenter_;
  bool vsync_ = true;
  std::optional<BlendSpace> blend_space_option_;  // --blend-space, over the scene's
  VulkanRenderer& renderer() { return *driver_->vulkan(); }
};

}  // namespace

int runViewer(const ViewerOptions& options) {
  // Inputs first (script, file, camera), so that their errors do not depend on a display; then the display.
  const char* display = std::getenv("DISPLAY");
  const char* wayland = std::getenv("WAYLAND_DISPLAY");
  const bool has_display = (display && *display) || (wayland && *wayland);
  if (!options.script.empty()) loadViewerScript(options.script);
  if (!has_display)
    throw Error(
        "no display: neither DISPLAY nor WAYLAND_DISPLAY is set (the viewer needs a window; `splatforge "
        "render` draws "
        "headless)");
  Viewer viewer(options);
  return viewer.run();
}

}  // namespace sf::view
