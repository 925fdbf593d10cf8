// `splatforge view` run as a process on a virtual X server (Xvfb, started here): scripted screenshots
// compared with `splatforge render` of the same input and camera (they share the renderer, so at least
// 40 dB and in practice identical); an orbit compared with a render from the camera the documented orbit
// formula gives, computed here; opening a file by a (scripted) drop and setting a glTF clip's time, compared
// with `render --time`; the overlay drawn only over its panel; and the failures: no display, a display
// that cannot be reached, a malformed script. Needs Xvfb and a Vulkan device: skipped without them, failed
// under CI=true.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "gpu/gpu.h"
#include "io/formats.h"
#include "io/image_io.h"
#include "scene/scene.h"
#include "support/test_support.h"

extern char** environ;

namespace sf {
namespace {

namespace fs = std::filesystem;

// Sets or unsets an environment variable for a scope (the splatforge processes inherit it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// An Xvfb server on a display number it picks itself (-displayfd), stopped at the end of the scope.
class VirtualDisplay {
 public:
  VirtualDisplay() {
    int fds[2];
    if (pipe(fds) != 0) {
      error_ = "pipe failed";
      return;
    }
    const std::string fd = std::to_string(fds[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    const char* args[] = {"Xvfb",         "-displayfd", fd.c_str(), "-screen", "0",
                          "1280x1024x24", "-nolisten",  "tcp",      nullptr};
    const int rc = posix_spawnp(&pid_, "Xvfb", &actions, nullptr, const_cast<char* const*>(args), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (rc != 0) {
      pid_ = -1;
      close(fds[0]);
      error_ = std::string("Xvfb could not be started (") + std::strerror(rc) + "; Debian: xvfb)";
      return;
    }
    // The server writes its display number and a newline once it accepts connections.
    std::string number;
    pollfd p{fds[0], POLLIN, 0};
    while (number.find('\n') == std::string::npos && poll(&p, 1, 30000) > 0) {
      char buf[32];
      const ssize_t n = read(fds[0], buf, sizeof(buf));
      if (n <= 0) break;
      number.append(buf, static_cast<size_t>(n));
    }
    close(fds[0]);
    if (number.empty() || number.find('\n') == std::string::npos) {
      error_ = "Xvfb started but reported no display number within 30 s";
      return;
    }
    display_ = ":" + number.substr(0, number.find('\n'));
  }
  ~VirtualDisplay() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
  }
  const std::string& display() const { return display_; }
  const std::string& error() const { return error_; }

 private:
  pid_t pid_ = -1;
  std::string display_, error_;
};

void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string vec(Vec3 v) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "[%.9g, %.9g, %.9g]", v.x, v.y, v.z);
  return buf;
}

std::string lookAtJson(Vec3 eye, Vec3 target, Vec3 up, int w, int h) {
  return "{\"eye\": " + vec(eye) + ", \"target\": " + vec(target) + ", \"up\": " + vec(up) +
         ", \"fov_y_deg\": 50, \"width\": " + std::to_string(w) + ", \"height\": " + std::to_string(h) + "}";
}

// A camera as intrinsics + world_to_camera JSON, every float printed exactly.
std::string intrinsicsJson(const Camera& c) {
  std::string m;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.9g", c.world_to_camera.m[i][j]);
      m += (m.empty() ? "" : ", ") + std::string(buf);
    }
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"width\": %d, \"height\": %d, \"fx\": %.9g, \"fy\": %.9g, \"cx\": %.9g, \"cy\": %.9g, ", c.width,
                c.height, c.fx, c.fy, c.cx, c.cy);
  return std::string(buf) + "\"world_to_camera\": [" + m + "]}";
}

double litFraction(const ImageRGBA& img) {
  size_t lit = 0;
  for (size_t i = 0; i < img.pixels.size(); i += 4)
    lit += img.pixels[i] + img.pixels[i + 1] + img.pixels[i + 2] > 0.05f;
  return static_cast<double>(lit) / static_cast<double>(img.pixels.size() / 4);
}

// The display and device the window tests need; the reason when one is missing.
std::string windowPrerequisites(const VirtualDisplay& x) {
  if (!x.error().empty()) return x.error();
  if (!gpu::vulkanAvailable()) return "no Vulkan device (Debian: mesa-vulkan-drivers)";
  return {};
}

// The viewer answers "no display" when built with it; a build without GLFW / Dear ImGui says so instead.
bool viewerBuilt(std::string* why) {
  ScopedEnv no_x("DISPLAY", nullptr), no_wayland("WAYLAND_DISPLAY", nullptr);
  std::string out;
  test::runCli("view", &out);
  *why = out;
  return out.find("built without the viewer") == std::string::npos;
}

TEST(ViewCli, WithoutADisplayFailsWithOneLine) {
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  ScopedEnv no_x("DISPLAY", nullptr), no_wayland("WAYLAND_DISPLAY", nullptr);
  std::string out;
  EXPECT_EQ(test::runCli("view", &out), 1);
  EXPECT_EQ(
      out,
      "splatforge view: error: no display: neither DISPLAY nor WAYLAND_DISPLAY is set (the viewer needs a window; "
      "`splatforge render` draws headless)\n");
  // A display that does not answer: the window system's own reason, still one line and exit code 1.
  ScopedEnv dead_x("DISPLAY", ":1999");
  EXPECT_EQ(test::runCli("view", &out), 1);
  EXPECT_EQ(out.rfind("splatforge view: error: cannot reach the display's window system: ", 0), 0u) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

TEST(ViewCli, MalformedScriptNamesItsLineBeforeAnyWindow) {
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  const std::string dir = test::tempDir("ViewCliScript");
  writeText(dir + "/s.txt", "wait 1\nzoom 2\n");
  ScopedEnv no_x("DISPLAY", nullptr), no_wayland("WAYLAND_DISPLAY", nullptr);
  std::string out;
  EXPECT_EQ(test::runCli("view --script " + dir + "/s.txt", &out), 1);
  EXPECT_NE(out.find(dir + "/s.txt:2: unknown command 'zoom'"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("view --size 320by240", &out), 2);  // a bad option value: a usage error
  EXPECT_NE(out.find("--size '320by240': expected WIDTHxHEIGHT"), std::string::npos) << out;
}

TEST(ViewCli, ScreenshotsMatchRenderAndTheOrbitFormula) {
  SF_REQUIRE_ASSET(biker, "splats/biker.spz");
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  VirtualDisplay x;
  if (std::string missing = windowPrerequisites(x); !missing.empty()) SF_SKIP_OR_FAIL(missing);
  ScopedEnv display("DISPLAY", x.display().c_str());
  const std::string dir = test::tempDir("ViewCliOrbit");
  constexpr int kW = 320, kH = 240;

  // The viewer's home frame for a capture: up (0, -1, 0), orbit target the bounds centre on the home view ray.
  const Scene scene = sceneFromFile(biker);
  const CloudBounds b = sceneBounds(scene);
  const Vec3 c = 0.5f * (b.p01 + b.p99), up{0, -1, 0};
  const float r = 0.5f * length(b.p99 - b.p01), d = 2.2f * r;
  const Vec3 eye_a = c + Vec3{0.4f * r, -0.3f * r, -2.0f * r};
  writeText(dir + "/a.json", lookAtJson(eye_a, c, up, kW, kH));
  // Orbit (60, 20, d) about c, from the formula in view/camera_control.h, with F0 the home view flattened.
  const Vec3 fwd = normalize(c - eye_a);
  const Vec3 f0 = normalize(fwd - up * dot(fwd, up)), r0 = cross(f0, up);
  const float yaw = 60 * 3.14159265f / 180, pitch = 20 * 3.14159265f / 180;
  const Vec3 dir_b = std::cos(pitch) * (std::cos(yaw) * f0 + std::sin(yaw) * r0) - std::sin(pitch) * up;
  writeText(dir + "/b.json", lookAtJson(c - dir_b * d, c, up, kW, kH));

  writeText(dir + "/s.txt", "camera a.json\nscreenshot view_a.png\norbit 60 20 " + std::to_string(d) +
                                "\nwait 2\nscreenshot view_b.png\nscreenshot-ui view_b_ui.png\n"
                                "resize 200x150\ncamera a.json\nscreenshot view_small.png\nquit\n");
  std::string out;
  ASSERT_EQ(
      test::runCli("view " + biker + " --camera " + dir + "/a.json --script " + dir + "/s.txt --size 320x240", &out), 0)
      << out;
  EXPECT_NE(out.find("wrote " + dir + "/view_b_ui.png"), std::string::npos) << out;
  const std::string size = " --width " + std::to_string(kW) + " --height " + std::to_string(kH);
  ASSERT_EQ(test::runCli("render " + biker + " --camera " + dir + "/a.json -o " + dir + "/render_a.png" + size, &out),
            0)
      << out;
  ASSERT_EQ(test::runCli("render " + biker + " --camera " + dir + "/b.json -o " + dir + "/render_b.png" + size, &out),
            0)
      << out;

  const ImageRGBA va = readPng(dir + "/view_a.png"), ra = readPng(dir + "/render_a.png");
  const ImageRGBA vb = readPng(dir + "/view_b.png"), rb = readPng(dir + "/render_b.png");
  ASSERT_EQ(va.width, kW);
  ASSERT_EQ(va.height, kH);
  EXPECT_GT(litFraction(ra), 0.05);  // the biker fills a good part of the frame
  const ImageDiff da = compareImages(va, ra), db = compareImages(vb, rb);
  EXPECT_GE(da.psnr, 40.0) << "camera JSON: max diff " << da.max_abs;
  EXPECT_GE(db.psnr, 40.0) << "orbit: max diff " << db.max_abs;
  EXPECT_LT(compareImages(va, vb).psnr, 25.0);  // the orbit moved the view
  // After a resize the swapchain is recreated and the camera JSON is scaled as render scales it.
  ASSERT_EQ(test::runCli("render " + biker + " --camera " + dir + "/a.json -o " + dir +
                             "/render_small.png --width 200 --height 150",
                         &out),
            0)
      << out;
  const ImageRGBA vs = readPng(dir + "/view_small.png"), rs = readPng(dir + "/render_small.png");
  ASSERT_EQ(vs.width, 200);
  ASSERT_EQ(vs.height, 150);
  const ImageDiff ds = compareImages(vs, rs);
  EXPECT_GE(ds.psnr, 40.0) << "after the resize: max diff " << ds.max_abs;
  std::printf("[ view vs render: camera JSON %.2f dB, orbit %.2f dB, resized %.2f dB ]\n", da.psnr, db.psnr, ds.psnr);

  // The overlay (in a window this small, the panel starts collapsed to its title bar at the top) changes only
  // its own pixels.
  const ImageRGBA ui = readPng(dir + "/view_b_ui.png");
  ASSERT_EQ(ui.width, kW);
  int changed = 0, y_max = 0;
  for (int y = 0; y < kH; ++y)
    for (int xx = 0; xx < kW; ++xx) {
      const float* p = ui.at(xx, y);
      const float* q = vb.at(xx, y);
      if (p[0] != q[0] || p[1] != q[1] || p[2] != q[2]) ++changed, y_max = std::max(y_max, y);
    }
  EXPECT_GT(changed, 500);
  EXPECT_LT(y_max, 40) << "the panel reaches row " << y_max;
}

TEST(ViewCli, DroppedGltfAtAClipTimeMatchesRender) {
  SF_REQUIRE_ASSET(model, "gltf/cesium_man.gltf");
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  VirtualDisplay x;
  if (std::string missing = windowPrerequisites(x); !missing.empty()) SF_SKIP_OR_FAIL(missing);
  ScopedEnv display("DISPLAY", x.display().c_str());
  const std::string dir = test::tempDir("ViewCliDrop");
  writeText(dir + "/cam.json", intrinsicsJson(autoCamera(sceneFromFile(model), 320, 240)));
  // No input: the window opens empty and the file arrives as a drop.
  writeText(dir + "/s.txt",
            "drop " + model + "\ntime 0.5\ncamera cam.json\nscreenshot t05.png\ntime 0\nscreenshot t0.png\nquit\n");
  std::string out;
  ASSERT_EQ(test::runCli("view --script " + dir + "/s.txt --size 320x240", &out), 0) << out;
  ASSERT_EQ(test::runCli("render " + model + " --time 0.5 --camera " + dir + "/cam.json -o " + dir +
                             "/r05.png --width 320 --height 240",
                         &out),
            0)
      << out;
  const ImageRGBA v05 = readPng(dir + "/t05.png"), v0 = readPng(dir + "/t0.png"), r05 = readPng(dir + "/r05.png");
  EXPECT_GT(litFraction(r05), 0.03);
  const ImageDiff d = compareImages(v05, r05);
  EXPECT_GE(d.psnr, 40.0) << "max diff " << d.max_abs;
  EXPECT_LT(compareImages(v0, v05).psnr, 30.0);  // the walk moved the limbs between the two times
  std::printf("[ view vs render of a dropped glTF at t = 0.5 s: %.2f dB ]\n", d.psnr);
}

// A neural generator in the viewer runs on the Vulkan executor inside the frame (decoded into its slots on
// the GPU); the home camera is framed from a CPU run; the screenshot matches `render --backend cpu`.
TEST(ViewCli, GeneratorRunsInTheFrameAndMatchesRender) {
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  VirtualDisplay x;
  if (std::string missing = windowPrerequisites(x); !missing.empty()) SF_SKIP_OR_FAIL(missing);
  ScopedEnv display("DISPLAY", x.display().c_str());
  const std::string dir = test::tempDir("ViewCliGenerator");
  const std::string model = std::string(SPLATFORGE_SOURCE_DIR) + "/models/gaussians4d.onnx";
  // The home camera frames the model's gaussians (from a CPU run: the GPU path's slots hold nothing until
  // the frame writes them); then a given camera, as render's.
  writeText(dir + "/cam.json", intrinsicsJson(autoCamera(sceneFromFile(model), 320, 240)));
  writeText(dir + "/s.txt", "time 0.35\nscreenshot home.png\ncamera cam.json\nscreenshot v.png\nquit\n");
  std::string out;
  ASSERT_EQ(test::runCli("view " + model + " --script " + dir + "/s.txt --size 320x240", &out), 0) << out;
  ASSERT_EQ(test::runCli("render " + model + " --time 0.35 --backend cpu --camera " + dir + "/cam.json -o " + dir +
                             "/r.png --width 320 --height 240",
                         &out),
            0)
      << out;
  EXPECT_GT(litFraction(readPng(dir + "/home.png")), 0.02);
  const ImageRGBA v = readPng(dir + "/v.png"), r = readPng(dir + "/r.png");
  EXPECT_GT(litFraction(r), 0.02);
  const ImageDiff d = compareImages(v, r);
  EXPECT_GE(d.psnr, 40.0) << "max diff " << d.max_abs;
  std::printf("[ view (generator in the frame) vs render --backend cpu: %.2f dB ]\n", d.psnr);
}

TEST(ViewCli, ShDegreeCapMatchesACloudTruncatedHere) {
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  VirtualDisplay x;
  if (std::string missing = windowPrerequisites(x); !missing.empty()) SF_SKIP_OR_FAIL(missing);
  ScopedEnv display("DISPLAY", x.display().c_str());
  const std::string dir = test::tempDir("ViewCliSh");
  // A degree-3 cloud, and the same cloud with its SH cut to degree 0 here (DC coefficients only).
  const GaussianCloud full = test::randomCloud(3000, 3, 7);
  GaussianCloud dc = full;
  dc.sh_degree = 0;
  dc.sh.resize(full.size() * 3);
  for (size_t i = 0; i < full.size(); ++i)
    for (size_t k = 0; k < 3; ++k) dc.sh[i * 3 + k] = full.sh[i * static_cast<size_t>(full.shStride()) + k];
  saveSplats(full, dir + "/full.ply");
  saveSplats(dc, dir + "/dc.ply");
  writeText(dir + "/cam.json", lookAtJson(Vec3{1.5f, -1.0f, -3.5f}, Vec3{0, 0, 0}, Vec3{0, -1, 0}, 320, 240));
  writeText(dir + "/s.txt", "screenshot sh3.png\nkey 0\nscreenshot sh0.png\nquit\n");
  std::string out;
  ASSERT_EQ(test::runCli("view " + dir + "/full.ply --camera " + dir + "/cam.json --script " + dir + "/s.txt --size 320x240", &out),
            0)
      << out;
  const std::string common = " --camera " + dir + "/cam.json --width 320 --height 240 --backend vulkan";  // the viewer's renderer
  ASSERT_EQ(test::runCli("render " + dir + "/full.ply -o " + dir + "/r3.png" + common, &out), 0) << out;
  ASSERT_EQ(test::runCli("render " + dir + "/dc.ply -o " + dir + "/r0.png" + common, &out), 0) << out;
  const ImageRGBA v3 = readPng(dir + "/sh3.png"), v0 = readPng(dir + "/sh0.png");
  const ImageRGBA r3 = readPng(dir + "/r3.png"), r0 = readPng(dir + "/r0.png");
  EXPECT_GT(litFraction(r3), 0.05);
  EXPECT_GE(compareImages(v3, r3).psnr, 40.0);
  EXPECT_GE(compareImages(v0, r0).psnr, 40.0);
  EXPECT_LT(compareImages(r0, r3).psnr, 35.0);  // the higher-order terms matter in this cloud
}

TEST(ViewCli, CharacterExpressionMatchesTheSceneScriptsAndLookAtTurnsTheHead) {
  SF_REQUIRE_ASSET(offset, "characters/lam_avatar/offset.ply");
  SF_REQUIRE_ASSET(skin, "characters/lam_avatar/skin.glb");
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  VirtualDisplay x;
  if (std::string missing = windowPrerequisites(x); !missing.empty()) SF_SKIP_OR_FAIL(missing);
  ScopedEnv display("DISPLAY", x.display().c_str());
  const std::string dir = test::tempDir("ViewCliCharacter");
  std::string out;
  ASSERT_EQ(test::runCli("character bind --splats " + offset + " --skin " + skin + " --per-vertex --rgb-colors -o " +
                             dir + "/lam",
                         &out),
            0)
      << out;
  writeText(dir + "/cam.json", intrinsicsJson(autoCamera(sceneFromFile(dir + "/lam"), 320, 240)));
  // The viewer's controls (an animator per character) against the scene script's commands (a character
  // world): the same expression must give the same frame.
  writeText(dir + "/s.txt",
            "screenshot neutral.png\nexpression jawOpen 1\nexpression eyeBlinkLeft 1\nscreenshot expression.png\n"
            "look-at 300 40\nscreenshot look.png\nlook-at off\nexpression jawOpen 0\nexpression eyeBlinkLeft "
            "0\nscreenshot back.png\nquit\n");
  ASSERT_EQ(test::runCli("view " + dir + "/lam --camera " + dir + "/cam.json --script " + dir + "/s.txt --size 320x240",
                         &out),
            0)
      << out;
  writeText(dir + "/scene.json", R"({"script": [
    {"t": 0, "command": "spawn-character", "id": "a", "package": "lam"},
    {"t": 0, "command": "set-expression", "id": "a", "weights": {"jawOpen": 1, "eyeBlinkLeft": 1}}]})");
  const std::string common = " --camera " + dir + "/cam.json --width 320 --height 240 --backend vulkan";  // the viewer's renderer
  ASSERT_EQ(test::runCli("render " + dir + "/lam -o " + dir + "/render_neutral.png" + common, &out), 0) << out;
  ASSERT_EQ(test::runCli("render " + dir + "/scene.json -o " + dir + "/render_expression.png" + common, &out), 0)
      << out;

  const ImageRGBA neutral = readPng(dir + "/neutral.png"), expression = readPng(dir + "/expression.png");
  const ImageRGBA look = readPng(dir + "/look.png"), back = readPng(dir + "/back.png");
  const ImageRGBA r_neutral = readPng(dir + "/render_neutral.png"),
                  r_expression = readPng(dir + "/render_expression.png");
  EXPECT_GT(litFraction(r_neutral), 0.05);
  const ImageDiff dn = compareImages(neutral, r_neutral), de = compareImages(expression, r_expression);
  EXPECT_GE(dn.psnr, 40.0) << "neutral: max diff " << dn.max_abs;
  EXPECT_GE(de.psnr, 40.0) << "expression: max diff " << de.max_abs;
  EXPECT_LT(compareImages(neutral, expression).psnr, 40.0);  // the mouth opened
  EXPECT_LT(compareImages(expression, look).psnr, 35.0);     // the head turned to the pointer
  EXPECT_EQ(compareImages(back, r_neutral).max_abs, 0.0);    // controls off: the plain pose again
  std::printf("[ view vs render of a character: neutral %.2f dB, expression %.2f dB ]\n", dn.psnr, de.psnr);
}

}  // namespace
}  // namespace sf
