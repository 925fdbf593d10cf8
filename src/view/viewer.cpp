#include "view/viewer.h"

#include <volk.h>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <imgui.h>

#include <fmt/core.h>

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

#include "character/animator.h"
#include "character/world.h"
#include "core/error.h"
#include "gpu/gpu.h"
#include "io/file.h"
#include "io/image_io.h"
#include "frame/frame.h"
#include "render/vulkan_renderer.h"
#include "scene/scene.h"
#include "view/camera_control.h"
#include "view/presenter.h"
#include "view/view_script.h"

namespace sf::view {

namespace {

using Clock = std::chrono::steady_clock;

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
          "the window system offers no Vulkan surface support (GLFW found no Vulkan loader or surface extension)");
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
                             {GLFW_KEY_H, "h"}, {GLFW_KEY_W, "w"},         {GLFW_KEY_A, "a"},
                             {GLFW_KEY_S, "s"}, {GLFW_KEY_D, "d"},         {GLFW_KEY_Q, "q"},
                             {GLFW_KEY_E, "e"}, {GLFW_KEY_LEFT, "left"},   {GLFW_KEY_RIGHT, "right"},
                             {GLFW_KEY_0, "0"}, {GLFW_KEY_1, "1"},         {GLFW_KEY_2, "2"},
                             {GLFW_KEY_3, "3"}, {GLFW_KEY_F12, "f12"},     {GLFW_KEY_ESCAPE, "escape"}};

bool isMoveKey(const std::string& name) {
  return name.size() == 1 && std::string("wasdqe").find(name[0]) != std::string::npos;
}

class Viewer {
 public:
  explicit Viewer(const ViewerOptions& o) : opt_(o) {
    if (!o.script.empty()) script_ = loadViewerScript(o.script);
    // Playback starts paused under a script, so that its screenshots do not depend on how fast frames come.
    playing_ = script_.empty();
    background_given_ = o.background.has_value();
    if (o.background) settings_.background = *o.background;
    if (!o.input.empty()) {
      scene_ = loadScene(o.input, o.clip, o.time);
      has_scene_ = true;
      scene_name_ = o.input;
    }
    if (!o.camera.empty()) loadCameraJson(o.camera, o.width, o.height);  // refuse a bad camera before the window opens

    glfw_ = std::make_unique<GlfwSession>();
    window_ = std::make_unique<Window>(o.width, o.height,
                                       "splatforge view" + (o.input.empty() ? std::string() : " - " + o.input));
    glfwSetWindowUserPointer(window_->get(), this);
    glfwSetDropCallback(window_->get(), [](GLFWwindow* w, int count, const char** paths) {
      auto* self = static_cast<Viewer*>(glfwGetWindowUserPointer(w));
      for (int i = 0; i < count; ++i) self->dropped_.emplace_back(paths[i]);
    });
    FrameDriverOptions fo;
    fo.backend = Backend::kVulkan;
    fo.device = o.device;
    fo.validation = o.validation;
    fo.configure = addPresentOptions;
    fo.message = [](const std::string& line) { fmt::print(stderr, "  view: {}\n", line); };
    driver_ = std::make_unique<FrameDriver>(fo);
    presenter_ = std::make_unique<Presenter>(renderer().context(), window_->get(), o.vsync);
    fmt::print(stderr, "  view: {}x{} on Vulkan device {} ({}), swapchain {} images, {}\n", presenter_->width(),
               presenter_->height(), renderer().device().name, renderer().device().typeName(),
               presenter_->format() == VK_FORMAT_B8G8R8A8_UNORM ? "BGRA8" : "RGBA8",
               presenter_->presentMode() == VK_PRESENT_MODE_FIFO_KHR ? "vsync" : "no vsync");
    startScene(o.camera);
  }

  int run() {
    auto last = Clock::now();
    const auto start = last;
    while (!glfwWindowShouldClose(window_->get()) && !quit_) {
      glfwPollEvents();
      const auto now = Clock::now();
      const double dt = std::chrono::duration<double>(now - last).count();
      last = now;
      for (const std::string& path : std::exchange(dropped_, {})) openFile(path, false);
      presenter_->newFrame();
      capture_path_.clear();
      capture_overlay_ = false;
      handleInput(static_cast<float>(dt));
      runScript();
      if (quit_) break;
      if (playing_ && duration_ > 0) setTime(std::fmod(time_ + dt, duration_), false);
      int fb_w = 0, fb_h = 0;
      glfwGetFramebufferSize(window_->get(), &fb_w, &fb_h);
      if (fb_w > 0 && fb_h > 0) camera_ = control_.camera(fb_w, fb_h);
      drawUi();
      ImGui::Render();
      if (fb_w <= 0 || fb_h <= 0) continue;

      const auto t_render = Clock::now();
      ImageRGBA image = renderFrame();
      const double render_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_render).count();
      ImageRGBA shot;
      const auto t_present = Clock::now();
      presenter_->present(image, settings_.background, capture_path_.empty() ? nullptr : &shot, capture_overlay_);
      present_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - t_present).count();
      render_ms_ = render_ms;
      const gpu::Context& ctx = renderer().context();
      if (ctx.validationErrors() > 0)
        throw Error(fmt::format("{} Vulkan validation error(s):\n{}", ctx.validationErrors(), ctx.validationReport()));
      if (!capture_path_.empty()) {
        writePng(capture_path_, shot);
        fmt::print("wrote {}\n", capture_path_);
        status_ = "wrote " + capture_path_;
      }
      frame_ms_.push_back(std::chrono::duration<double, std::milli>(Clock::now() - now).count());
      render_times_.push_back(render_ms);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const size_t frames = frame_ms_.size();
    fmt::print("view: {} frames in {:.2f} s ({:.1f} fps); median frame {:.2f} ms, median render {:.2f} ms, at {}x{}\n",
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
    playback_.reset();  // the script's characters start over (the driver keeps the old ones until a frame is drawn)
    characters_.clear();
    characters_.resize(scene_.objects.size());
    startTimeline();
    max_sh_degree_ = 0;
    bool captures = false;
    for (const SceneObject& o : scene_.objects) {
      if (o.cloud) max_sh_degree_ = std::max(max_sh_degree_, o.cloud->sh_degree);
      captures |= o.cloud && !o.model && !o.character && o.source != "placeholder";
    }
    sh_degree_ = max_sh_degree_;
    if (!background_given_) settings_.background = scene_.background.value_or(Vec3{0, 0, 0});
    // The world's up axis, as automatic framing has it: captures are y-down, glTF models y-up.
    const Vec3 up = captures ? Vec3{0, -1, 0} : Vec3{0, 1, 0};
    Vec3 centre{0, 0, 0};
    float radius = 1;
    Camera home;
    if (has_scene_) {
      try {
        const CloudBounds b = sceneBounds(scene_);
        centre = 0.5f * (b.p01 + b.p99);
        radius = std::max(0.5f * length(b.p99 - b.p01), 1e-3f);
        home = autoCamera(scene_, fb_w, fb_h);
      } catch (const Error&) {  // nothing to frame: a camera at the origin
        home = lookAtCamera(Vec3{0, 0, 0} - 3.0f * Vec3{0, 0, 1}, centre, up, 50, fb_w, fb_h);
      }
      if (scene_.camera) home = resizeCamera(*scene_.camera, fb_w, fb_h);
    } else {
      home = lookAtCamera(Vec3{0, 0, -3}, centre, up, 50, fb_w, fb_h);
    }
    if (!camera_json.empty()) home = loadCameraJson(camera_json, fb_w, fb_h);
    move_speed_ = radius;  // the scene's radius per second
    control_ = CameraControl(home, centre, up, 2 * radius);
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
    } else if (isMoveKey(name)) {
      moveBy(name, 0.1f);
    } else if (name == "left" || name == "right") {
      setTime(time_ + (name == "left" ? -1.0 : 1.0) / 30.0, true);
    } else if (name.size() == 1 && name[0] >= '0' && name[0] <= '3') {
      sh_degree_ = std::min(name[0] - '0', max_sh_degree_);
    } else if (name == "f12") {
      screenshot(nextScreenshotName());
    } else if (name == "escape") {
      quit_ = true;
    }
  }

  void moveBy(const std::string& key, float seconds) {
    const float s = move_speed_ * seconds;
    const char k = key[0];
    control_.move(k == 'd' ? s : k == 'a' ? -s : 0, k == 'e' ? s : k == 'q' ? -s : 0, k == 'w' ? s : k == 's' ? -s : 0);
  }

  void handleInput(float dt) {
    const ImGuiIO& io = ImGui::GetIO();
    int fb_h = 0;
    glfwGetFramebufferSize(window_->get(), nullptr, &fb_h);
    if (!io.WantCaptureMouse) {
      const float sx = io.DisplayFramebufferScale.x, sy = io.DisplayFramebufferScale.y;
      if (io.MouseDown[0] && (io.MouseDelta.x != 0 || io.MouseDelta.y != 0))
        control_.rotate(0.25f * io.MouseDelta.x, 0.25f * io.MouseDelta.y);
      if ((io.MouseDown[1] || io.MouseDown[2]) && (io.MouseDelta.x != 0 || io.MouseDelta.y != 0))
        control_.pan(io.MouseDelta.x * sx, io.MouseDelta.y * sy, std::max(fb_h, 1));
      if (io.MouseWheel != 0) control_.zoom(io.MouseWheel);
    }
    if (io.WantCaptureKeyboard) return;
    for (const KeyName& k : kKeys) {
      if (isMoveKey(k.name)) {
        const float speed = ImGui::IsKeyDown(GLFW_KEY_LEFT_SHIFT) ? 4.0f : 1.0f;
        if (ImGui::IsKeyDown(k.key)) moveBy(k.name, dt * speed);
      } else if (ImGui::IsKeyPressed(k.key, k.key == GLFW_KEY_LEFT || k.key == GLFW_KEY_RIGHT)) {
        tapKey(k.name);
      }
    }
  }

  // Runs script commands until one that ends this frame's share (wait, screenshot, quit).
  void runScript() {
    if (wait_frames_ > 0 && --wait_frames_ > 0) return;
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
      if (!o.character) continue;
      const int index = o.model->findClip(clip);
      if (index >= 0) o.clip = index, any = true;
    }
    if (!any) throw Error("no character of the scene has a clip named or numbered '" + clip + "'");
    startTimeline();
  }

  void scriptExpression(const std::string& target, float weight) {
    bool any = false;
    for (size_t i = 0; i < scene_.objects.size(); ++i) {
      if (!scene_.objects[i].character) continue;
      const character::Character& ch = *scene_.objects[i].character;
      if (ch.morphTargetCount() == 0) continue;
      const GltfModel::DrawInfo info = ch.model().drawInfo(static_cast<size_t>(ch.boundDraw()));
      const std::vector<std::string>& names = ch.model().document().meshes[static_cast<size_t>(info.mesh)].target_names;
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
      if (!scene_.objects[i].character) continue;
      CharacterControls& cc = characters_[i];
      if (!cc.animator) cc.animator = std::make_unique<character::Animator>(scene_.objects[i].character);
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

  ImageRGBA renderFrame() {
    // (Before a file is opened the scene is empty: the frame is the background.)
    FrameRequest request{time_, camera_, settings_, {}};
    // The SH degree control: applied where the frame packs the objects (no copies of the clouds).
    request.settings.max_sh_degree = sh_degree_ < max_sh_degree_ ? sh_degree_ : -1;
    // Characters with controls: posed by their animator (clip at the same time, expression, look-at) in place
    // of the scene's posing.
    request.pose_object = [this](size_t i, const SceneObject& o, std::vector<RenderObject>& objects, std::vector<RenderMesh>& meshes) {
      CharacterControls* cc = o.character ? &characters_[i] : nullptr;
      if (!cc || !cc->active()) return false;
      const character::Character& ch = *o.character;
      if (!cc->animator) cc->animator = std::make_unique<character::Animator>(o.character);
      cc->animator->play(o.clip, 0);
      cc->animator->update(o.clipTime(time_));
      cc->animator->setExpression(std::any_of(cc->morph.begin(), cc->morph.end(), [](float w) { return w != 0; })
                                      ? cc->morph
                                      : std::vector<float>{});
      std::optional<Vec3> target;
      if (cc->look_at) target = transformPoint(inverseAffine(o.object_to_world), mousePoint(o.object_to_world.translation()));
      cc->animator->lookAt(target);
      cc->frame.pose.skinning = o.skinning;  // the object's "skinning", as the scene's posing honours it
      const bool gpu = character::poseCharacterFrame(ch, true, cc->frame, [&](bool pose_only) { cc->animator->evaluate(cc->frame, pose_only); });
      if (gpu) cc->deform = ch.deformSource(cc->frame, ch.gpuSkinnable());
      const Mat4 to_world = o.object_to_world * ch.model().meshToModel(cc->frame.pose, static_cast<size_t>(ch.boundDraw()));
      character::appendCharacterFrame(ch, cc->frame, to_world, &camera_, gpu ? &cc->deform : nullptr, objects, meshes);
      return true;
    };
    FrameResult f = driver_->render(scene_, playback_, request);
    stats_ = f.gpu;
    return std::move(f.image);
  }

  void drawUi() {
    if (!show_ui_) return;
    ImGui::SetNextWindowPos(ImVec2(8, 8), ImGuiCond_FirstUseEver);
    // The panel starts collapsed to its title bar, whatever the window's size: the first thing seen is the scene
    // (a click on its title opens it; H hides it).
    ImGui::SetNextWindowCollapsed(true, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowBgAlpha(0.8f);
    ImGui::Begin("splatforge", nullptr, ImGuiWindowFlags_AlwaysAutoResize);
    if (!has_scene_)
      ImGui::TextUnformatted("Drop a splat file, glTF model, character package\nor scene JSON onto the window.");
    else
      ImGui::Text("%s", scene_name_.c_str());
    if (!status_.empty()) ImGui::TextWrapped("%s", status_.c_str());

    if (ImGui::CollapsingHeader("Frame", ImGuiTreeNodeFlags_DefaultOpen)) {
      const size_t n = std::min<size_t>(frame_ms_.size(), 30);
      double mean = 0;
      for (size_t i = frame_ms_.size() - n; i < frame_ms_.size(); ++i) mean += frame_ms_[i] / static_cast<double>(n);
      ImGui::Text("%dx%d  %.1f fps  (frame %.2f ms: render %.2f, present %.2f)", camera_.width, camera_.height,
                  mean > 0 ? 1000.0 / mean : 0.0, mean, render_ms_, present_ms_);
      ImGui::Text("%s", renderer().device().name.c_str());
      ImGui::Text("splats %zu  visible %zu  tile pairs %zu  merge passes %d%s", stats_.splats, stats_.visible,
                  stats_.tile_keys, stats_.sort_passes, stats_.regrown ? "  (keys regrown)" : "");
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
      ImGui::Text("yaw %.1f  pitch %.1f  distance %.3f", control_.yawDeg(), control_.pitchDeg(), control_.distance());
      ImGui::SliderFloat("move speed", &move_speed_, 0.001f, 100.0f, "%.3f /s", ImGuiSliderFlags_Logarithmic);
    }

    if (ImGui::CollapsingHeader("Render", ImGuiTreeNodeFlags_DefaultOpen)) {
      float bg[3] = {settings_.background.x, settings_.background.y, settings_.background.z};
      if (ImGui::ColorEdit3("background", bg)) settings_.background = Vec3{bg[0], bg[1], bg[2]};
      if (max_sh_degree_ > 0)
        ImGui::SliderInt("SH degree", &sh_degree_, 0, max_sh_degree_);
      else
        ImGui::TextUnformatted("SH degree 0 (the scene has no higher-order SH)");
      if (ImGui::Button("screenshot (F12)")) screenshot(nextScreenshotName());
    }

    if (duration_ > 0 && ImGui::CollapsingHeader("Timeline", ImGuiTreeNodeFlags_DefaultOpen)) {
      if (ImGui::Button(playing_ ? "pause" : "play ")) playing_ = !playing_;
      ImGui::SameLine();
      float t = static_cast<float>(time_);
      if (ImGui::SliderFloat("time", &t, 0.0f, static_cast<float>(duration_), "%.3f s")) setTime(t, true);
    }

    bool any_character = false;
    for (const SceneObject& o : scene_.objects) any_character |= o.character != nullptr;
    if (any_character && ImGui::CollapsingHeader("Characters")) characterUi();
    if (!scene_.script.empty())
      ImGui::Text("%zu characters spawned by the scene's script (not controllable here)", playback_.spawned());
    ImGui::End();
  }

  void characterUi() {
    for (size_t i = 0; i < scene_.objects.size(); ++i) {
      SceneObject& o = scene_.objects[i];
      if (!o.character) continue;
      const character::Character& ch = *o.character;
      CharacterControls& cc = characters_[i];
      ImGui::PushID(static_cast<int>(i));
      if (ImGui::TreeNode("character", "%s", o.name.empty() ? ch.source().c_str() : o.name.c_str())) {
        const auto& clips = ch.model().clips();
        const std::string current = o.clip < 0 ? std::string("rest pose") : clips[static_cast<size_t>(o.clip)].name;
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
        if (!cc.animator) cc.animator = std::make_unique<character::Animator>(o.character);
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
          ImGui::BeginChild("morphs", ImVec2(360, std::min(200.0f, 24.0f * static_cast<float>(targets))), true);
          for (size_t t = 0; t < targets; ++t) {
            const std::string label = t < names.size() && !names[t].empty() ? names[t] : "target " + std::to_string(t);
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
      if (o.model && o.clip >= 0) {
        const float d = o.model->clips()[static_cast<size_t>(o.clip)].duration;
        if (d > 0 && o.speed != 0) duration_ = std::max(duration_, static_cast<double>(d) / std::abs(o.speed));
      }
    for (const SceneObject& o : scene_.objects)  // generators driven by time play one pass of their model time
      if (o.generator && !o.generator->contract().time_input.empty() && o.speed != 0)
        duration_ = std::max(duration_, nn::kGeneratorTimeSpan / std::abs(o.speed));
    for (const character::ScriptCommand& c : scene_.script) duration_ = std::max(duration_, c.t + 1.0);
    setTime(time_, false);
  }

  ViewerOptions opt_;
  std::vector<ScriptCommand> script_;
  size_t next_command_ = 0;
  int wait_frames_ = 0;
  bool quit_ = false;
  std::string capture_path_;                               // write this frame here
  bool capture_overlay_ = false;                           // with the UI
  std::optional<std::pair<float, float>> script_pointer_;  // look-at pixel set by a script, instead of the mouse

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
  ScenePlayback playback_;  // posed storage and the script's characters
  std::vector<CharacterControls> characters_;  // per scene object
  std::vector<std::string> dropped_;
  VulkanFrameStats stats_;
  std::vector<double> frame_ms_, render_times_;
  double render_ms_ = 0, present_ms_ = 0;

  // Destroyed in reverse: the presenter (surface, swapchain, ImGui) before the renderer's Vulkan context,
  // the context before the window, the window before GLFW.
  std::unique_ptr<GlfwSession> glfw_;
  std::unique_ptr<Window> window_;
  // The frame (its Vulkan renderer, the GPU work it attached to scenes), before the presenter on its device.
  std::unique_ptr<FrameDriver> driver_;
  std::unique_ptr<Presenter> presenter_;
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
        "no display: neither DISPLAY nor WAYLAND_DISPLAY is set (the viewer needs a window; `splatforge render` draws "
        "headless)");
  Viewer viewer(options);
  return viewer.run();
}

}  // namespace sf::view
