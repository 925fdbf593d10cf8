// `splatforge view` run as a process on a virtual X server (Xvfb, started here): scripted screenshots
// compared with `splatforge render` of the same input and camera (they share the renderer, so at least
// 40 dB and in practice identical); an orbit compared with a render from the camera the documented orbit
// formula gives, computed here; opening a file by a (scripted) drop and setting a glTF clip's time, compared
// with `render --time`; the overlay drawn only over its panel; and the failures: no display, a display
// that cannot be reached, a malformed script. The comparisons with `render` give the viewer render's black
// background (--bg 0,0,0; the viewer's own default is grey). The first-look features: the grey backdrop, the
// ground grid (off under a script until `grid on`), the upright flip (a vertical mirror of a flat scene, and
// `render` of the camera the viewer exports), the turntable (the exported cameras turned by the expected
// angle) and the adaptive resolution (reduced while it turns, `render`'s frame once the camera rests, every
// frame with --full-res). Needs Xvfb and a Vulkan device: skipped without them, failed under CI=true.
#include <fcntl.h>
#include <gtest/gtest.h>
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
                "{\"width\": %d, \"height\": %d, \"fx\": %.9g, \"fy\": %.9g, \"cx\": %.9g, \"cy\": %.9g, ",
                c.width, c.height, c.fx, c.fy, c.cx, c.cy);
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
  EXPECT_EQ(out,
            "splatforge view: error: no display: neither DISPLAY nor WAYLAND_DISPLAY is set (the viewer "
            "needs a window; "
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

  // The viewer's home frame for a capture: up (0, -1, 0), orbit target the bounds centre on the home view
  // ray.
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
                                "resize 200x150\ncamera a.json\nscreenshot view_small.png\n"
                                "antialiased on\nwait 1\nscreenshot view_small_aa.png\nquit\n");
  std::string out;
  ASSERT_EQ(test::runCli("view " + biker + " --camera " + dir + "/a.json --script " + dir +
                             "/s.txt --size 320x240 --bg 0,0,0",
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("wrote " + dir + "/view_b_ui.png"), std::string::npos) << out;
  const std::string size = " --width " + std::to_string(kW) + " --height " + std::to_string(kH);
  ASSERT_EQ(test::runCli(
                "render " + biker + " --camera " + dir + "/a.json -o " + dir + "/render_a.png" + size, &out),
            0)
      << out;
  ASSERT_EQ(test::runCli(
                "render " + biker + " --camera " + dir + "/b.json -o " + dir + "/render_b.png" + size, &out),
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
  // The antialiased switch (script, overlay checkbox, --antialiased) draws what render --antialiased draws.
  ASSERT_EQ(test::runCli("render " + biker + " --camera " + dir + "/a.json -o " + dir +
                             "/render_small_aa.png --width 200 --height 150 --antialiased",
                         &out),
            0)
      << out;
  const ImageRGBA vaa = readPng(dir + "/view_small_aa.png"), raa = readPng(dir + "/render_small_aa.png");
  EXPECT_GE(compareImages(vaa, raa).psnr, 40.0);
  EXPECT_LT(compareImages(raa, rs).psnr, compareImages(vaa, raa).psnr - 3.0)
      << "antialiased mode changed nothing";
  std::printf("[ view vs render: camera JSON %.2f dB, orbit %.2f dB, resized %.2f dB ]\n", da.psnr, db.psnr,
              ds.psnr);

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

// A device lost under the viewer (injected at the 8th submit of the first device, a frame's: the log names
// the pass) is replaced: the presenter is made again on the new device, the frame is drawn again, and the
// screenshots of the script still match `render` of the same camera.
TEST(ViewCli, LostDeviceIsReplacedAndTheViewGoesOn) {
  SF_REQUIRE_ASSET(biker, "splats/biker.spz");
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  VirtualDisplay x;
  if (std::string missing = windowPrerequisites(x); !missing.empty()) SF_SKIP_OR_FAIL(missing);
  ScopedEnv display("DISPLAY", x.display().c_str());
  const std::string dir = test::tempDir("ViewCliDeviceLost");
  writeText(dir + "/cam.json", intrinsicsJson(autoCamera(sceneFromFile(biker), 160, 120)));
  writeText(dir + "/s.txt", "camera cam.json\nwait 1\nscreenshot a.png\nwait 1\nscreenshot b.png\nquit\n");
  std::string out;
  {
    ScopedEnv fault("SPLATFORGE_FAULT_DEVICE_LOST", "8");
    ASSERT_EQ(test::runCli("view " + biker + " --script " + dir + "/s.txt --size 160x120 --bg 0,0,0", &out),
              0)
        << out;
  }
  EXPECT_NE(out.find("VK_ERROR_DEVICE_LOST"), std::string::npos) << out;
  EXPECT_NE(out.find("the device was lost and replaced"), std::string::npos) << out;
  ASSERT_EQ(test::runCli("render " + biker + " --camera " + dir + "/cam.json -o " + dir + "/r.png", &out), 0)
      << out;
  const ImageRGBA r = readPng(dir + "/r.png");
  for (const char* shot : {"a.png", "b.png"}) {
    ASSERT_TRUE(fs::exists(dir + "/" + shot)) << shot << " was not written:\n" << out;
    EXPECT_GE(compareImages(readPng(dir + "/" + shot), r).psnr, 40.0) << shot;
  }
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
  writeText(
      dir + "/s.txt",
      "drop " + model + "\ntime 0.5\ncamera cam.json\nscreenshot t05.png\ntime 0\nscreenshot t0.png\nquit\n");
  std::string out;
  ASSERT_EQ(test::runCli("view --script " + dir + "/s.txt --size 320x240 --bg 0,0,0", &out), 0) << out;
  ASSERT_EQ(test::runCli("render " + model + " --time 0.5 --camera " + dir + "/cam.json -o " + dir +
                             "/r05.png --width 320 --height 240",
                         &out),
            0)
      << out;
  const ImageRGBA v05 = readPng(dir + "/t05.png"), v0 = readPng(dir + "/t0.png"),
                  r05 = readPng(dir + "/r05.png");
  EXPECT_GT(litFraction(r05), 0.03);
  const ImageDiff d = compareImages(v05, r05);
  EXPECT_GE(d.psnr, 40.0) << "max diff " << d.max_abs;
  EXPECT_LT(compareImages(v0, v05).psnr, 30.0);  // the walk moved the limbs between the two times
  std::printf("[ view vs render of a dropped glTF at t = 0.5 s: %.2f dB ]\n", d.psnr);
}

// A scene script spawning a plain glTF (its meshes, posed by the animator) and a GNM pack (its rig preview)
// draws in the viewer as `render` draws it: the one frame driver, no placeholder, at a clip time.
TEST(ViewCli, ScriptSpawnedGltfAndGnmPackMatchRender) {
  SF_REQUIRE_ASSET(model, "gltf/cesium_man.gltf");
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  VirtualDisplay x;
  if (std::string missing = windowPrerequisites(x); !missing.empty()) SF_SKIP_OR_FAIL(missing);
  ScopedEnv display("DISPLAY", x.display().c_str());
  const std::string dir = test::tempDir("ViewCliSpawnPaths");
  std::string out;
  ASSERT_EQ(test::runCli("character gnm-pack " + std::string(SPLATFORGE_SOURCE_DIR) +
                             "/models/characters/orb_head/head/head.glb -o " + dir + "/head.sfgnm",
                         &out),
            0)
      << out;
  writeText(dir + "/scene.json", R"({"script": [
    {"t": 0, "command": "spawn-character", "id": "man", "package": ")" +
                                     model + R"(", "transform": {"translation": [-0.4, 0, 0]}},
    {"t": 0, "command": "spawn-character", "id": "head", "package": "head.sfgnm", "transform": {"translation": [0.5, -3.8, 0], "scale": 3}},
    {"t": 0.2, "command": "set-controls", "id": "head", "controls": {"jawOpen": 1}}]})");
  writeText(dir + "/cam.json",
            R"({"eye": [0, 1, 3], "target": [0, 0.8, 0], "fov_y_deg": 45, "width": 320, "height": 240})");
  writeText(dir + "/s.txt", "time 0.5\nscreenshot v.png\nquit\n");
  ASSERT_EQ(test::runCli("view " + dir + "/scene.json --allow-outside-paths --camera " + dir +
                             "/cam.json --script " + dir + "/s.txt --size 320x240 --bg 0,0,0",
                         &out),
            0)
      << out;
  EXPECT_EQ(out.find("placeholder"), std::string::npos) << out;
  ASSERT_EQ(test::runCli("render " + dir + "/scene.json --allow-outside-paths --time 0.5 --camera " + dir +
                             "/cam.json -o " + dir + "/r.png --width 320 --height 240 --backend vulkan",
                         &out),
            0)
      << out;
  EXPECT_EQ(out.find("placeholder"), std::string::npos) << out;
  const ImageRGBA v = readPng(dir + "/v.png"), r = readPng(dir + "/r.png");
  EXPECT_GT(litFraction(r), 0.03);
  const ImageDiff d = compareImages(v, r);
  EXPECT_GE(d.psnr, 40.0) << "max diff " << d.max_abs;
  std::printf("[ view vs render of a script's spawned glTF and GNM pack at t = 0.5 s: %.2f dB ]\n", d.psnr);
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
  ASSERT_EQ(test::runCli("view " + model + " --script " + dir + "/s.txt --size 320x240 --bg 0,0,0", &out), 0)
      << out;
  ASSERT_EQ(test::runCli("render " + model + " --time 0.35 --backend cpu --camera " + dir + "/cam.json -o " +
                             dir + "/r.png --width 320 --height 240",
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
  ASSERT_EQ(test::runCli("view " + dir + "/full.ply --camera " + dir + "/cam.json --script " + dir +
                             "/s.txt --size 320x240 --bg 0,0,0",
                         &out),
            0)
      << out;
  const std::string common =
      " --camera " + dir + "/cam.json --width 320 --height 240 --backend vulkan";  // the viewer's renderer
  ASSERT_EQ(test::runCli("render " + dir + "/full.ply -o " + dir + "/r3.png" + common, &out), 0) << out;
  ASSERT_EQ(test::runCli("render " + dir + "/dc.ply -o " + dir + "/r0.png" + common, &out), 0) << out;
  const ImageRGBA v3 = readPng(dir + "/sh3.png"), v0 = readPng(dir + "/sh0.png");
  const ImageRGBA r3 = readPng(dir + "/r3.png"), r0 = readPng(dir + "/r0.png");
  EXPECT_GT(litFraction(r3), 0.05);
  EXPECT_GE(compareImages(v3, r3).psnr, 40.0);
  EXPECT_GE(compareImages(v0, r0).psnr, 40.0);
  EXPECT_LT(compareImages(r0, r3).psnr, 35.0);  // the higher-order terms matter in this cloud
}

// The scene's post model runs in the viewer's frame and the overlay's toggle (script `post off`) turns it
// off: with it the screenshot is `render --backend cpu` of the scene (the CPU executor on the CPU frame),
// without it the render of the same scene without "post".
TEST(ViewCli, PostModelToggleMatchesRenderWithAndWithout) {
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  VirtualDisplay x;
  if (std::string missing = windowPrerequisites(x); !missing.empty()) SF_SKIP_OR_FAIL(missing);
  ScopedEnv display("DISPLAY", x.display().c_str());
  const std::string dir = test::tempDir("ViewCliPost");
  saveSplats(test::randomCloud(2000, 1, 11), dir + "/c.ply");
  std::filesystem::copy_file(std::string(SPLATFORGE_SOURCE_DIR) + "/models/unet.onnx", dir + "/unet.onnx",
                             std::filesystem::copy_options::overwrite_existing);
  writeText(dir + "/post.json", R"({"objects": [{"file": "c.ply"}], "post": "unet.onnx"})");
  writeText(dir + "/plain.json", R"({"objects": [{"file": "c.ply"}]})");
  writeText(dir + "/cam.json", lookAtJson(Vec3{1.5f, -1.0f, -3.5f}, Vec3{0, 0, 0}, Vec3{0, -1, 0}, 128, 96));
  writeText(dir + "/s.txt", "screenshot on.png\npost off\nscreenshot off.png\nquit\n");
  std::string out;
  ASSERT_EQ(test::runCli("view " + dir + "/post.json --camera " + dir + "/cam.json --script " + dir +
                             "/s.txt --size 128x96 --bg 0,0,0",
                         &out),
            0)
      << out;
  const std::string common = " --camera " + dir + "/cam.json --width 128 --height 96 --backend cpu";
  ASSERT_EQ(test::runCli("render " + dir + "/post.json -o " + dir + "/r_post.png" + common, &out), 0) << out;
  ASSERT_EQ(test::runCli("render " + dir + "/plain.json -o " + dir + "/r_plain.png" + common, &out), 0)
      << out;
  const ImageRGBA on = readPng(dir + "/on.png"), off = readPng(dir + "/off.png");
  const ImageRGBA r_post = readPng(dir + "/r_post.png"), r_plain = readPng(dir + "/r_plain.png");
  EXPECT_GT(litFraction(r_plain), 0.05);
  EXPECT_GE(compareImages(on, r_post).psnr, 40.0);
  EXPECT_GE(compareImages(off, r_plain).psnr, 40.0);
  EXPECT_LT(compareImages(r_post, r_plain).psnr, 35.0) << "the model changed nothing";
  std::printf("[ view with post vs render: %.1f dB; post off vs render without post: %.1f dB ]\n",
              compareImages(on, r_post).psnr, compareImages(off, r_plain).psnr);
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
  ASSERT_EQ(test::runCli("character bind --splats " + offset + " --skin " + skin +
                             " --per-vertex --rgb-colors -o " + dir + "/lam",
                         &out),
            0)
      << out;
  writeText(dir + "/cam.json", intrinsicsJson(autoCamera(sceneFromFile(dir + "/lam"), 320, 240)));
  // The viewer's controls (an animator per character) against the scene script's commands (a character
  // world): the same expression must give the same frame.
  writeText(
      dir + "/s.txt",
      "screenshot neutral.png\nexpression jawOpen 1\nexpression eyeBlinkLeft 1\nscreenshot expression.png\n"
      "look-at 300 40\nscreenshot look.png\nlook-at off\nexpression jawOpen 0\nexpression eyeBlinkLeft "
      "0\nscreenshot back.png\nquit\n");
  ASSERT_EQ(test::runCli("view " + dir + "/lam --camera " + dir + "/cam.json --script " + dir +
                             "/s.txt --size 320x240 --bg 0,0,0",
                         &out),
            0)
      << out;
  writeText(dir + "/scene.json", R"({"script": [
    {"t": 0, "command": "spawn-character", "id": "a", "package": "lam"},
    {"t": 0, "command": "set-expression", "id": "a", "weights": {"jawOpen": 1, "eyeBlinkLeft": 1}}]})");
  const std::string common =
      " --camera " + dir + "/cam.json --width 320 --height 240 --backend vulkan";  // the viewer's renderer
  ASSERT_EQ(test::runCli("render " + dir + "/lam -o " + dir + "/render_neutral.png" + common, &out), 0)
      << out;
  ASSERT_EQ(test::runCli("render " + dir + "/scene.json -o " + dir + "/render_expression.png" + common, &out),
            0)
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

// ---- The first look: backdrop, grid, upright flip, turntable, adaptive resolution ----

// A flat, vertically asymmetric card of splats in the plane z = 8.5 around (5, -1, 8.5) (between the grid's
// lines z = 8 and 9, so that none runs along the card's foot): a blue stem on the left and three bars to its
// right, red on top, green in the middle, a long yellow one at the bottom, with gaps between the colours
// (splats of different colours never overlap, so that the blending order of splats at one depth cannot
// matter). The world's origin lies behind any camera looking at it along +z.
GaussianCloud cardCloud() {
  GaussianCloud c;
  std::vector<std::pair<Vec3, Vec3>> splats;  // position, colour
  auto strip = [&](float x0, float x1, float y0, float y1, Vec3 colour) {
    for (float y = y0; y <= y1 + 1e-4f; y += 0.03f)
      for (float x = x0; x <= x1 + 1e-4f; x += 0.03f) splats.push_back({Vec3{5 + x, -1 + y, 8.5f}, colour});
  };
  strip(-0.45f, -0.36f, -0.5f, 0.5f, {0.1f, 0.2f, 0.9f});    // stem
  strip(-0.24f, 0.30f, -0.5f, -0.41f, {0.9f, 0.1f, 0.1f});   // top bar
  strip(-0.24f, 0.06f, -0.12f, -0.03f, {0.1f, 0.8f, 0.2f});  // middle bar
  strip(-0.24f, 0.45f, 0.41f, 0.5f, {0.95f, 0.85f, 0.1f});   // bottom bar, across the middle
  c.resize(splats.size(), 0);
  for (size_t i = 0; i < splats.size(); ++i) {
    c.positions[i] = splats[i].first;
    c.scales[i] = Vec3{0.02f, 0.02f, 0.002f};
    c.opacities[i] = 0.95f;
    for (size_t k = 0; k < 3; ++k) c.sh[i * 3 + k] = colorToShDc(splats[i].second[static_cast<int>(k)]);
  }
  return c;
}

// The card's scene centre as the viewer computes it (the bounds' 1-99 percentile box): the turntable's pivot
// and the upright flip's centre.
Vec3 sceneCentre(const std::string& path) {
  const CloudBounds b = sceneBounds(sceneFromFile(path));
  return 0.5f * (b.p01 + b.p99);
}

// Pixels whose RGB differ by more than `tol` between a and b within rows [y0, y1).
int changedPixels(const ImageRGBA& a, const ImageRGBA& b, int y0, int y1, float tol = 0.5f / 255.0f) {
  int n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = 0; x < a.width; ++x)
      for (int c = 0; c < 3; ++c)
        if (std::abs(a.at(x, y)[c] - b.at(x, y)[c]) > tol) {
          ++n;
          break;
        }
  return n;
}

TEST(ViewCli, GreyBackdropGroundGridAndUprightFlip) {
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  VirtualDisplay x;
  if (std::string missing = windowPrerequisites(x); !missing.empty()) SF_SKIP_OR_FAIL(missing);
  ScopedEnv display("DISPLAY", x.display().c_str());
  const std::string dir = test::tempDir("ViewCliFirstLook");
  constexpr int kW = 320, kH = 240;
  saveSplats(cardCloud(), dir + "/card.ply");
  const Vec3 c = sceneCentre(dir + "/card.ply");
  // Level, straight at the card's centre: the principal point is the image centre, so the flip (a turn about
  // the x axis through the centre) of this flat card is the frame mirrored top to bottom.
  writeText(dir + "/cam.json", lookAtJson(c - Vec3{0, 0, 2.5f}, c, Vec3{0, -1, 0}, kW, kH));
  writeText(dir + "/s.txt",
            "screenshot plain.png\ngrid on\nscreenshot grid.png\nkey g\nscreenshot gridoff.png\n"
            "upright-flip on\nsave-camera flip.json\nscreenshot flip.png\nquit\n");
  std::string out;
  ASSERT_EQ(test::runCli("view " + dir + "/card.ply --camera " + dir + "/cam.json --script " + dir +
                             "/s.txt --size 320x240",
                         &out),
            0)
      << out;
  const std::string common = " --width 320 --height 240 --backend vulkan --bg 0.5,0.5,0.5";
  ASSERT_EQ(
      test::runCli("render " + dir + "/card.ply --camera " + dir + "/cam.json -o " + dir + "/r.png" + common,
                   &out),
      0)
      << out;
  ASSERT_EQ(test::runCli("render " + dir + "/card.ply --camera " + dir + "/flip.json -o " + dir +
                             "/rflip.png" + common,
                         &out),
            0)
      << out;
  const ImageRGBA plain = readPng(dir + "/plain.png"), grid = readPng(dir + "/grid.png");
  const ImageRGBA gridoff = readPng(dir + "/gridoff.png"), flip = readPng(dir + "/flip.png");
  ASSERT_EQ(plain.width, kW);
  ASSERT_EQ(plain.height, kH);

  // The backdrop: mid grey (0.5 -> 128) in the empty corners, and the frame `render --bg 0.5,0.5,0.5` draws.
  for (const auto& [px, py] :
       {std::pair{0, 0}, std::pair{kW - 1, 0}, std::pair{0, kH - 1}, std::pair{kW - 1, kH - 1}})
    for (int ch = 0; ch < 3; ++ch) EXPECT_EQ(plain.at(px, py)[ch], 128.0f / 255.0f) << px << "," << py;
  EXPECT_GT(litFraction(plain), 0.99);  // (no black anywhere)
  const ImageDiff dp = compareImages(plain, readPng(dir + "/r.png"));
  EXPECT_GE(dp.psnr, 40.0) << "max diff " << dp.max_abs;

  // The grid: on the plane under the card, below the eye, so only in the lower half (the axes at the origin
  // are behind the camera); lighter lines there; off again after `key g`.
  EXPECT_EQ(changedPixels(plain, grid, 0, kH / 2), 0);
  const int lines = changedPixels(plain, grid, kH / 2, kH);
  EXPECT_GT(lines, 1000) << "grid pixels in the lower half";
  EXPECT_EQ(compareImages(plain, gridoff).max_abs, 0.0);
  // The line x = c.x runs from the bottom of the image to the horizon through the middle column: drawn where
  // the floor is in front of the card (below it), hidden where the card's opaque bottom bar is in front of
  // it. A splat's interior stays as it was, down to the row of the lowest splats' centres (their tails reach
  // below the plane, where the floor is in front of them).
  const float fy = 0.5f * kH / std::tan(25.0f * 3.14159265f / 180.0f);
  const int foot = static_cast<int>(0.5f * kH + fy * (-0.5f - c.y) / 2.5f) - 1;
  auto brightest = [&](const ImageRGBA& img, int y) {
    float m = 0;
    for (int xx = kW / 2 - 12; xx <= kW / 2 + 12; ++xx) m = std::max(m, img.at(xx, y)[0]);
    return m;
  };
  EXPECT_GT(brightest(grid, kH - 10), brightest(plain, kH - 10) + 0.02f) << "the centre line below the card";
  auto coloured = [&](int xx, int y) {  // far from the grey: a splat's colour
    const float* p = plain.at(xx, y);
    return std::max({std::abs(p[0] - 0.5f), std::abs(p[1] - 0.5f), std::abs(p[2] - 0.5f)}) >= 0.3f;
  };
  int interior = 0, interior_changed = 0;
  for (int y = kH / 2; y < foot; ++y)
    for (int xx = 1; xx < kW - 1; ++xx) {
      bool inside = true;  // the pixel and its 8 neighbours coloured: inside a bar, not on its soft edge
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) inside = inside && coloured(xx + dx, y + dy);
      if (!inside) continue;
      ++interior;
      const float *p = plain.at(xx, y), *q = grid.at(xx, y);
      interior_changed +=
          std::max({std::abs(p[0] - q[0]), std::abs(p[1] - q[1]), std::abs(p[2] - q[2])}) > 2.5f / 255;
    }
  EXPECT_GT(interior, 300);
  EXPECT_EQ(interior_changed, 0) << "of " << interior << " splat pixels in the lower half";

  // The upright flip: the card turned over about the x axis through its centre, seen by the same camera, is
  // the frame mirrored top to bottom; and the camera the viewer exports draws it with `render` (the flip
  // composed into the camera's pose, the cloud untouched).
  ImageRGBA mirrored = plain;
  for (int y = 0; y < kH; ++y)
    for (int xx = 0; xx < kW; ++xx)
      for (int ch = 0; ch < 4; ++ch) mirrored.at(xx, y)[ch] = plain.at(xx, kH - 1 - y)[ch];
  const ImageDiff dm = compareImages(flip, mirrored), dr = compareImages(flip, readPng(dir + "/rflip.png"));
  EXPECT_GE(dm.psnr, 35.0) << "flip vs mirrored: max diff " << dm.max_abs;
  EXPECT_LT(compareImages(flip, plain).psnr, 25.0);  // the card is not symmetric
  EXPECT_GE(dr.psnr, 40.0) << "flip vs render of the exported camera: max diff " << dr.max_abs;
  std::printf(
      "[ backdrop vs render --bg: %.2f dB; flip vs mirrored %.2f dB, vs render %.2f dB; %d grid pixels ]\n",
      dp.psnr, dm.psnr, dr.psnr, lines);
}

// Sum of squared differences between horizontal and vertical neighbours: a frame rendered smaller and
// stretched has softer edges, a step spread over k pixels counting 1/k of a sharp one.
double gradientEnergy(const ImageRGBA& img) {
  double e = 0;
  for (int y = 0; y + 1 < img.height; ++y)
    for (int x = 0; x + 1 < img.width; ++x)
      for (int c = 0; c < 3; ++c) {
        const double dx = img.at(x + 1, y)[c] - img.at(x, y)[c], dy = img.at(x, y + 1)[c] - img.at(x, y)[c];
        e += dx * dx + dy * dy;
      }
  return e;
}

// The view direction's bearing about the up axis (0, -1, 0), in degrees: from +z towards +x (the view's
// right).
double bearing(const Camera& cam) {
  const Vec3 f = cam.world_to_camera.linear().row(2);
  return std::atan2(static_cast<double>(f.x), static_cast<double>(f.z)) * 180.0 / 3.14159265358979;
}

TEST(ViewCli, TurntableTurnsAndARestingCameraRendersAtFullResolution) {
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  VirtualDisplay x;
  if (std::string missing = windowPrerequisites(x); !missing.empty()) SF_SKIP_OR_FAIL(missing);
  ScopedEnv display("DISPLAY", x.display().c_str());
  const std::string dir = test::tempDir("ViewCliTurntable");
  saveSplats(cardCloud(), dir + "/card.ply");
  const Vec3 c = sceneCentre(dir + "/card.ply");
  writeText(dir + "/cam.json", lookAtJson(c - Vec3{0.3f, 0.2f, 2.5f}, c, Vec3{0, -1, 0}, 320, 240));
  // 60 degrees a second: two degrees a frame under a script. The turntable turns at the start of each frame
  // before the frame's commands: t1 is 11 frames (22 degrees) after t0, t2 one more, then 10 frames of rest
  // (a third of a second at a script's 1/30 s a frame, past the 0.25 s the camera needs to rest).
  writeText(dir + "/s.txt",
            "turntable 60\nsave-camera t0.json\nscreenshot t0.png\nwait 10\nsave-camera t1.json\nscreenshot "
            "t1.png\n"
            "turntable off\nwait 10\nsave-camera t2.json\nscreenshot t2.png\nquit\n");
  std::string out;
  // A target no frame can keep: every frame while the camera moves is rendered at a reduced scale.
  ASSERT_EQ(test::runCli("view " + dir + "/card.ply --camera " + dir + "/cam.json --script " + dir +
                             "/s.txt --size 320x240 --target-frame-ms 0.001",
                         &out),
            0)
      << out;
  const Camera t0 = loadCameraJson(dir + "/t0.json"), t1 = loadCameraJson(dir + "/t1.json");
  const Camera t2 = loadCameraJson(dir + "/t2.json");
  EXPECT_NEAR(bearing(t1) - bearing(t0), 22.0, 0.02);
  EXPECT_NEAR(bearing(t2) - bearing(t0), 24.0, 0.02);
  // About the vertical axis through the scene's centre: the eye keeps its height and its distance from it.
  auto flat = [&](Vec3 p) {
    return std::hypot(static_cast<double>(p.x - c.x), static_cast<double>(p.z - c.z));
  };
  EXPECT_NEAR(flat(t1.position()), flat(t0.position()), 1e-4);
  EXPECT_NEAR(t1.position().y, t0.position().y, 1e-4);
  EXPECT_EQ(t1.fx, t0.fx);

  const std::string common = " --width 320 --height 240 --backend vulkan --bg 0.5,0.5,0.5";
  for (const char* name : {"t0", "t1", "t2"})
    ASSERT_EQ(test::runCli("render " + dir + "/card.ply --camera " + dir + "/" + name + ".json -o " + dir +
                               "/r" + name + ".png" + common,
                           &out),
              0)
        << out;
  const ImageRGBA v0 = readPng(dir + "/t0.png"), v1 = readPng(dir + "/t1.png"), v2 = readPng(dir + "/t2.png");
  EXPECT_LT(compareImages(v0, v1).psnr, 30.0);  // it turned
  // Before it turned and once it rested: full resolution, the frame `render` draws. While turning: a half or
  // a quarter of the size stretched over the window, the same view with soft edges.
  const ImageDiff d0 = compareImages(v0, readPng(dir + "/rt0.png"));
  const ImageDiff d1 = compareImages(v1, readPng(dir + "/rt1.png"));
  const ImageDiff d2 = compareImages(v2, readPng(dir + "/rt2.png"));
  EXPECT_GE(d0.psnr, 40.0) << "max diff " << d0.max_abs;
  const double sharp = gradientEnergy(readPng(dir + "/rt1.png")), soft = gradientEnergy(v1);
  EXPECT_LT(soft, 0.85 * sharp) << "turning: " << d1.psnr << " dB";
  EXPECT_LT(d1.psnr, 38.0) << "turning: max diff " << d1.max_abs;
  EXPECT_GT(d1.psnr, 18.0) << "turning: max diff " << d1.max_abs;
  EXPECT_GE(d2.psnr, 40.0) << "at rest: max diff " << d2.max_abs;

  // --full-res: every frame at the window's size, turning or not.
  writeText(dir + "/full.txt", "turntable 60\nwait 3\nsave-camera f.json\nscreenshot f.png\nquit\n");
  ASSERT_EQ(test::runCli("view " + dir + "/card.ply --camera " + dir + "/cam.json --script " + dir +
                             "/full.txt --size 320x240 --target-frame-ms 0.001 --full-res",
                         &out),
            0)
      << out;
  ASSERT_EQ(
      test::runCli("render " + dir + "/card.ply --camera " + dir + "/f.json -o " + dir + "/rf.png" + common,
                   &out),
      0)
      << out;
  const ImageDiff df = compareImages(readPng(dir + "/f.png"), readPng(dir + "/rf.png"));
  EXPECT_GE(df.psnr, 40.0) << "--full-res while turning: max diff " << df.max_abs;
  std::printf(
      "[ turntable: %.3f deg in 11 frames; vs render: before %.2f dB, turning %.2f dB (edge energy %.2f of "
      "render's), at rest %.2f dB, --full-res turning %.2f dB ]\n",
      bearing(t1) - bearing(t0), d0.psnr, d1.psnr, soft / sharp, d2.psnr, df.psnr);
}

// A level-of-detail hierarchy in the viewer: cut on a thread of its own (docs/lod.md "The cut in the
// background") while frames go on; once the chunks are in and the fades are over, the view held still is the
// settled cut `render` draws under the same budget. Also with --lod-cut frame (cut before every frame).
TEST(ViewCli, LodHierarchyCutInTheBackgroundSettlesToRender) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  VirtualDisplay x;
  if (std::string missing = windowPrerequisites(x); !missing.empty()) SF_SKIP_OR_FAIL(missing);
  ScopedEnv display("DISPLAY", x.display().c_str());
  const std::string dir = test::tempDir("ViewCliLod");
  std::string out;
  ASSERT_EQ(test::runCli("lod build " + biker + " -o " + dir + "/biker.lod", &out), 0) << out;
  const Scene scene = sceneFromFile(biker);
  const CloudBounds b = sceneBounds(scene);
  const Vec3 c = 0.5f * (b.p01 + b.p99);
  const float r = 0.5f * length(b.p99 - b.p01);
  writeText(dir + "/cam.json", lookAtJson(c + Vec3{0.3f * r, -0.2f * r, -1.6f * r}, c, {0, -1, 0}, 320, 240));
  // Still until the chunks have arrived, the refinements faded in (over 8 cuts) and the cuts stopped.
  // Then 30 frames more, which change nothing.
  writeText(dir + "/s.txt",
            "camera cam.json\nwait settled\nscreenshot v.png\nwait 30\nscreenshot w.png\nquit\n");
  const std::string common = " --lod-budget 30000 --bg 0,0,0";
  ASSERT_EQ(test::runCli("render " + dir + "/biker.lod --camera " + dir + "/cam.json -o " + dir +
                             "/r.png --width 320 --height 240 --backend vulkan" + common,
                         &out),
            0)
      << out;
  const ImageRGBA rendered = readPng(dir + "/r.png");
  EXPECT_GT(litFraction(rendered), 0.05);
  for (const char* cut : {"background", "frame"}) {
    ASSERT_EQ(test::runCli("view " + dir + "/biker.lod --camera " + dir + "/cam.json --script " + dir +
                               "/s.txt --size 320x240 --full-res --lod-cut " + cut + common,
                           &out),
              0)
        << out;
    const ImageDiff d = compareImages(readPng(dir + "/v.png"), rendered);
    EXPECT_GE(d.psnr, 40.0) << "--lod-cut " << cut << ": max diff " << d.max_abs;
    EXPECT_EQ(compareImages(readPng(dir + "/w.png"), readPng(dir + "/v.png")).max_abs, 0.0)
        << "--lod-cut " << cut << ": the view changed after 'wait settled'";
    std::printf("[ --lod-cut %s: %.2f dB against render ]\n", cut, d.psnr);
  }
  // A scene without level of detail is settled at once.
  writeText(dir + "/plain.txt", "wait settled\nscreenshot p.png\nquit\n");
  ASSERT_EQ(test::runCli("view " + biker + " --script " + dir + "/plain.txt --size 160x120", &out), 0) << out;
  EXPECT_TRUE(fs::exists(dir + "/p.png"));
}

TEST(ViewCli, TargetFrameTimeMustBePositive) {
  std::string why;
  if (!viewerBuilt(&why)) SF_SKIP_OR_FAIL("splatforge was built without the viewer: " << why);
  ScopedEnv no_x("DISPLAY", nullptr), no_wayland("WAYLAND_DISPLAY", nullptr);
  std::string out;
  EXPECT_EQ(test::runCli("view --target-frame-ms 0", &out), 2);
  EXPECT_NE(out.find("--target-frame-ms 0: expected milliseconds in (0, 10000]"), std::string::npos) << out;
}

}  // namespace
}  // namespace sf
