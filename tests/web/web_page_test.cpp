// The web page (web/, docs/web.md) in a real browser: `splatforge export-web` writes the page with biker or
// with a scene JSON and its files, `splatforge serve` serves it on 127.0.0.1, headless Chromium draws it with
// WebGPU (SwiftShader's fallback adapter here) for a camera given in the URL, or the scene's, and prints the
// float image to its console (?readback=1); the image must match the CPU renderer's of the same camera (PSNR
// >= 40 dB). A truncated SPZ, a scene naming a missing file and a scene naming a glTF model must give the
// engine's own message in the page, and the page must stay up. Without Chromium, a WebGPU adapter or the
// page's WebAssembly (scripts/build_web.sh) the tests skip with the reason, and fail under CI=true.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/image.h"
#include "io/file.h"
#include "io/formats.h"
#include "render/camera.h"
#include "render/cpu_renderer.h"
#include "scene/demo.h"
#include "scene/scene.h"
#include "scene/scene_doc.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string chromiumPath() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (access(p, X_OK) == 0) return p;
  return {};
}

// A child process in its own process group (Chromium starts many), stdout and stderr to files.
struct Child {
  pid_t pid = -1;
  ~Child() { stop(); }
  void start(const std::vector<std::string>& argv, const std::string& out, const std::string& err) {
    pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644),
                e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      for (int fd = 3; fd < 1024; ++fd)
        close(fd);  // no lock or pipe of the test's caller outlives it in a child
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    if (pid > 0) setpgid(pid, pid);
  }
  void stop() {
    if (pid <= 0) return;
    kill(-pid, SIGTERM);
    for (int i = 0; i < 50; ++i) {
      if (waitpid(pid, nullptr, WNOHANG) == pid) {
        kill(-pid, SIGKILL);  // what the leader left behind
        pid = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(-pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
};

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Waits until `path` holds `marker` (or `stop_marker`) or the time runs out; returns the text.
std::string waitFor(const std::string& path, const std::vector<std::string>& markers, double seconds) {
  const auto t0 = Clock::now();
  std::string text;
  while (std::chrono::duration<double>(Clock::now() - t0).count() < seconds) {
    text = readText(path);
    for (const std::string& m : markers)
      if (text.find(m) != std::string::npos) return text;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return text;
}

// The page's console lines ("SFWEB ..."), as Chromium logs them to stderr: [...] "SFWEB text", source: URL
// (n).
std::vector<std::string> pageLines(const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  std::string line;
  const std::string open = "\"SFWEB ", close = "\", source: ";
  while (std::getline(in, line)) {
    const size_t a = line.find(open);
    if (a == std::string::npos) continue;
    const size_t b = line.rfind(close);
    if (b == std::string::npos || b < a + open.size()) continue;
    lines.push_back(line.substr(a + open.size(), b - a - open.size()));
  }
  return lines;
}

std::string fmtFloat(float v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(v));
  return text;
}

// The camera as the page's URL parameters: view (rows of world_to_camera) and intrinsics.
std::string cameraQuery(const Camera& cam) {
  std::string view;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) view += (view.empty() ? "" : ",") + fmtFloat(cam.world_to_camera.m[i][j]);
  return "size=" + std::to_string(cam.width) + "," + std::to_string(cam.height) + "&view=" + view +
         "&intrinsics=" + fmtFloat(cam.fx) + "," + fmtFloat(cam.fy) + "," + fmtFloat(cam.cx) + "," +
         fmtFloat(cam.cy);
}

// The image a readback run printed (IMAGE, CHUNK lines), or an empty image; `first_frame` gets its timing
// line.
ImageRGBA readbackImage(const std::vector<std::string>& lines, std::string* first_frame) {
  std::string b64;
  int width = 0, height = 0;
  for (const std::string& l : lines) {
    if (l.rfind("FIRST-FRAME ", 0) == 0) *first_frame = l.substr(12);
    if (l.rfind("IMAGE ", 0) == 0) std::sscanf(l.c_str(), "IMAGE %d %d", &width, &height);
    if (l.rfind("CHUNK ", 0) == 0) b64 += l.substr(l.find(' ', 6) + 1);
  }
  const std::vector<uint8_t> bytes = test::decodeBase64(b64);
  if (width <= 0 || height <= 0 ||
      bytes.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * 16)
    return {};
  ImageRGBA image(width, height);
  std::memcpy(image.pixels.data(), bytes.data(), bytes.size());
  return image;
}

double alphaMaxDifference(const ImageRGBA& a, const ImageRGBA& b) {
  double m = 0;
  for (size_t i = 3; i < a.pixels.size(); i += 4)
    m = std::max(m, static_cast<double>(std::abs(a.pixels[i] - b.pixels[i])));
  return m;
}

void writeText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  writeFileAtomic(path, std::vector<uint8_t>(text.begin(), text.end()));
}

std::string jsonNumbers(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) out += (out.empty() ? "[" : ", ") + fmtFloat(v);
  return out + "]";
}

// The demo's objects (makeDemoScene: a checkered floor, a glassy SH-3 torus and a translucent SH-1 shell
// cutting through it) as PLY files in `dir`/parts, and beside them a scene JSON `name` placing them as the
// demo does (the torus by 16 numbers, the shell by a translation) with a second torus (the same file, turned
// 70 degrees about a slanted axis, scaled unevenly and moved) cutting through the shell and the first torus,
// the demo's camera at `width` x `height` and its background.
void writeDemoScene(const std::string& dir, const std::string& name, int width, int height) {
  const Scene demo = makeDemoScene(width, height);
  ASSERT_EQ(demo.objects.size(), 3u);
  for (const SceneObject& o : demo.objects) {
    fs::create_directories(dir + "/parts");
    saveSplats(*o.cloud, dir + "/parts/" + o.name + ".ply");
  }
  std::string torus;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      torus += (torus.empty() ? "[" : ", ") + fmtFloat(demo.objects[1].object_to_world.m[i][j]);
  torus += "]";
  const float half = 35.0f * 3.14159265f / 180.0f;
  const Vec3 axis = normalize(Vec3{1, 1, 0.3f});
  const std::string scene = R"({
  "objects": [
    {"name": "floor", "file": "parts/floor.ply"},
    {"name": "torus", "file": "parts/torus.ply", "transform": )" +
                            torus + R"(},
    {"name": "shell", "file": "parts/shell.ply", "transform": {"translation": [0.55, 0.5, 0.15]}},
    {"name": "torus copy", "file": "parts/torus.ply",
     "transform": {"translation": [0.35, 0.6, 0.3], "rotation": )" +
                            jsonNumbers({std::cos(half), std::sin(half) * axis.x, std::sin(half) * axis.y,
                                         std::sin(half) * axis.z}) +
                            R"(, "scale": [0.7, 0.85, 0.7]}}
  ],
  "camera": {"eye": [0.4, 1.5, 2.6], "target": [0.1, 0.45, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": )" +
                            std::to_string(width) + R"(, "height": )" + std::to_string(height) + R"(},
  "background": [0.06, 0.07, 0.09]
})";
  writeText(dir + "/" + name, scene);
}

// The frame a renderer drawing each object by itself would give: each object over no background, composited
// front to back in the order of its splats' mean depth. One global sort of every object's splats avoids this.
ImageRGBA objectByObject(std::span<const RenderObject> objects, const Camera& cam, Vec3 background) {
  std::vector<std::pair<float, size_t>> order;
  for (size_t i = 0; i < objects.size(); ++i) {
    double depth = 0;
    for (const Vec3& p : objects[i].cloud->positions)
      depth += transformPoint(cam.world_to_camera, transformPoint(objects[i].object_to_world, p)).z;
    order.push_back({static_cast<float>(depth / static_cast<double>(objects[i].cloud->size())), i});
  }
  std::sort(order.begin(), order.end());
  ImageRGBA out(cam.width, cam.height);
  std::vector<float> t(static_cast<size_t>(cam.width) * static_cast<size_t>(cam.height), 1.0f);
  std::fill(out.pixels.begin(), out.pixels.end(), 0.0f);
  for (const auto& [depth, i] : order) {
    const ImageRGBA layer = renderCpu(objects.subspan(i, 1), cam, RenderSettings{});
    for (size_t p = 0; p < t.size(); ++p) {
      for (size_t c = 0; c < 3; ++c) out.pixels[4 * p + c] += t[p] * layer.pixels[4 * p + c];
      t[p] *= 1.0f - layer.pixels[4 * p + 3];
    }
  }
  for (size_t p = 0; p < t.size(); ++p) {
    for (size_t c = 0; c < 3; ++c) out.pixels[4 * p + c] += t[p] * background[static_cast<int>(c)];
    out.pixels[4 * p + 3] = 1.0f - t[p];
  }
  return out;
}

class WebPage : public ::testing::Test {
 protected:
  // Checks what the tests need (or skips): Chromium (unless no page is opened) and the page's WebAssembly;
  // `dir_` is set after.
  void prepare(const std::string& test_name, bool* ready, bool browser = true) {
    *ready = false;
    chromium_ = chromiumPath();
    if (browser && chromium_.empty())
      SF_SKIP_OR_FAIL("Chromium is not installed (scripts/setup.sh installs Debian's chromium)");
    if (!fs::exists(std::string(SPLATFORGE_SOURCE_DIR) + "/build/web/sf_decode.wasm"))
      SF_SKIP_OR_FAIL("the page's WebAssembly is not built (scripts/build_web.sh; scripts/test.sh runs it)");
    dir_ = test::tempDir(test_name);
    site_ = dir_ + "/site";
    *ready = true;
  }

  // Exports `input` (a splat file or a scene JSON) and starts the server; `base_url_` is set after.
  void exportAndServe(const std::string& input, bool* ready) {
    *ready = false;
    test::CliRun r = test::cli("export-web \"" + input + "\" -o \"" + site_ + "\"");
    ASSERT_EQ(r.code, 0) << r.out;
    server_.start({SPLATFORGE_BINARY, "serve", site_, "--port", "0", "--quiet"}, dir_ + "/serve.out",
                  dir_ + "/serve.err");
    const std::string line = waitFor(dir_ + "/serve.out", {"/ (Ctrl-C"}, 30);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, std::regex(R"(http://127\.0\.0\.1:(\d+)/)")))
        << line << readText(dir_ + "/serve.err");
    base_url_ = "http://127.0.0.1:" + m[1].str() + "/index.html";
    *ready = true;
  }

  // Exports biker (or skips), starts the server.
  void open(const std::string& test_name, bool* ready) {
    prepare(test_name, ready);
    if (!*ready) return;
    *ready = false;
    SF_REQUIRE_ASSET(biker, "splats/biker.spz");
    biker_ = biker;
    exportAndServe(biker, ready);
  }

  // Writes the demo scene (writeDemoScene) at `width` x `height`, exports it and starts the server.
  void openDemoScene(const std::string& test_name, int width, int height, bool* ready) {
    prepare(test_name, ready);
    if (!*ready) return;
    *ready = false;
    writeDemoScene(dir_ + "/source", "demo_scene.json", width, height);
    if (HasFatalFailure()) return;
    exportAndServe(dir_ + "/source/demo_scene.json", ready);
  }

  // Opens `query` in headless Chromium until the page prints one of `markers`; returns its console lines.
  std::vector<std::string> browse(const std::string& query, const std::vector<std::string>& markers,
                                  std::string* log_out = nullptr) {
    const std::string log = dir_ + "/chromium.log";
    Child browser;
    browser.start(
        {chromium_, "--headless=new", "--no-sandbox", "--enable-unsafe-webgpu", "--enable-features=Vulkan",
         "--use-angle=vulkan", "--use-vulkan=swiftshader", "--enable-logging=stderr", "--v=0",
         "--no-first-run", "--user-data-dir=" + dir_ + "/profile", base_url_ + "?" + query},
        dir_ + "/chromium.out", log);
    std::vector<std::string> wanted;
    for (const std::string& m : markers) wanted.push_back("SFWEB " + m);
    std::string text = waitFor(log, wanted, 300);
    browser.stop();
    text = readText(log);
    if (log_out) *log_out = text;
    return pageLines(text);
  }

  // The page's errors after its start, which must finish ("READY"), and whether it printed an image.
  struct Outcome {
    std::vector<std::string> errors;
    bool ready = false, image = false;
  };
  static Outcome outcomeOf(const std::vector<std::string>& lines) {
    Outcome o;
    for (const std::string& l : lines) {
      if (l.rfind("ERROR ", 0) == 0) o.errors.push_back(l.substr(6));
      o.ready |= l == "READY";
      o.image |= l.rfind("IMAGE ", 0) == 0;
    }
    return o;
  }

  std::string chromium_, biker_, dir_, site_, base_url_;
  Child server_;
};

// No WebGPU adapter: skip (fail under CI) with the page's own words.
#define SF_REQUIRE_ADAPTER(lines, log)                                            \
  for (const std::string& l : lines)                                              \
    if (l.rfind("ERROR WebGPU", 0) == 0)                                          \
      SF_SKIP_OR_FAIL("no WebGPU adapter in headless Chromium: " << l.substr(6)); \
  if (lines.empty())                                                              \
  SF_SKIP_OR_FAIL("headless Chromium printed nothing from the page:\n" << log.substr(0, 4000))

TEST_F(WebPage, BikerMatchesTheCpuRenderer) {
  bool ready = false;
  open("web_biker", &ready);
  if (!ready) return;
  const LoadedSplats loaded = loadSplats(biker_);
  // A camera off the capture's axis, with an off-centre principal point.
  const CloudBounds b = computeBounds(loaded.cloud);
  const Vec3 centre = 0.5f * (b.p01 + b.p99);
  const float radius = 0.5f * length(b.p99 - b.p01);
  const Vec3 eye = centre + normalize(Vec3{0.45f, -0.25f, -1.0f}) * (2.2f * radius);
  Camera cam = lookAtCamera(eye, centre, Vec3{0, -1, 0}, 50.0f, 320, 240);
  cam.cx = 0.47f * 320, cam.cy = 0.53f * 240;
  std::string log;
  const std::vector<std::string> lines =
      browse("readback=1&" + cameraQuery(cam), {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, 320) << log.substr(0, 4000);
  ASSERT_EQ(web.height, 240);
  RenderObject object(&loaded.cloud);
  const ImageRGBA cpu = renderCpu(std::span<const RenderObject>(&object, 1), cam, RenderSettings{});
  const ImageDiff diff = compareImages(web, cpu);
  const double alpha_max = alphaMaxDifference(web, cpu);
  std::printf(
      "web page vs CPU renderer, biker 320x240: PSNR %.1f dB, max difference %.2e, alpha max difference "
      "%.2e\n",
      diff.psnr, diff.max_abs, alpha_max);
  std::printf("first frame: %s\n", first_frame.c_str());
  EXPECT_GE(diff.psnr, 40.0);
  EXPECT_LT(alpha_max, 0.02);
  // Not an empty frame: biker covers part of the image.
  double coverage = 0;
  for (size_t i = 3; i < cpu.pixels.size(); i += 4) coverage += cpu.pixels[i];
  EXPECT_GT(coverage / (320.0 * 240.0), 0.02);
}

// SH degree 3 evaluated with the view direction, an antialiased cloud with Mip-Splatting's screen filter, a
// camera inside the cloud's box (splats behind it culled at z <= 0.2, large ones near it): a random cloud
// written as PLY into the exported folder.
TEST_F(WebPage, ShDegree3AntialiasedCloudMatchesTheCpuRenderer) {
  bool ready = false;
  open("web_sh3", &ready);
  if (!ready) return;
  GaussianCloud cloud = test::randomCloud(3000, 3, 43);
  cloud.antialiased = true;
  cloud.screen_filter = 0.1f;
  saveSplats(cloud, site_ + "/random_sh3.ply");
  const LoadedSplats loaded =
      loadSplats(site_ + "/random_sh3.ply");  // what the page reads, rounding included
  ASSERT_TRUE(loaded.cloud.antialiased);
  Camera cam = lookAtCamera(Vec3{0.6f, -0.4f, -1.6f}, Vec3{0, 0, 0}, Vec3{0, -1, 0}, 60.0f, 200, 136);
  std::string log;
  const std::vector<std::string> lines = browse(
      "scene=random_sh3.ply&readback=1&bg=0.2,0.3,0.4&" + cameraQuery(cam), {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, 200) << log.substr(0, 4000);
  RenderObject object(&loaded.cloud);
  RenderSettings settings;
  settings.background = Vec3{0.2f, 0.3f, 0.4f};
  const ImageRGBA cpu = renderCpu(std::span<const RenderObject>(&object, 1), cam, settings);
  const ImageDiff diff = compareImages(web, cpu);
  const double alpha_max = alphaMaxDifference(web, cpu);
  std::printf(
      "web page vs CPU renderer, SH 3 antialiased cloud 200x136: PSNR %.1f dB, max difference %.2e, alpha "
      "max difference %.2e\n",
      diff.psnr, diff.max_abs, alpha_max);
  EXPECT_GE(diff.psnr, 40.0);
  EXPECT_LT(alpha_max, 0.02);
}

TEST_F(WebPage, TruncatedSpzGivesTheEngineMessage) {
  bool ready = false;
  open("web_truncated", &ready);
  if (!ready) return;
  std::vector<uint8_t> bytes = readFile(biker_);
  bytes.resize(bytes.size() / 2);
  writeFileAtomic(site_ + "/truncated.spz", bytes);
  const std::string expected = test::errorOf([&] { decodeSplats(bytes, "truncated.spz"); });
  ASSERT_NE(expected, "(no error)");
  std::string log;
  const std::vector<std::string> lines = browse("readback=1&size=64,48&scene=truncated.spz", {"READY"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  std::vector<std::string> errors;
  bool ready_line = false, image = false;
  for (const std::string& l : lines) {
    if (l.rfind("ERROR ", 0) == 0) errors.push_back(l.substr(6));
    ready_line |= l == "READY";
    image |= l.rfind("IMAGE ", 0) == 0;
  }
  ASSERT_EQ(errors.size(), 1u) << log.substr(0, 4000);
  EXPECT_EQ(errors[0], expected);
  EXPECT_TRUE(ready_line) << "the page did not finish its start after the error";
  EXPECT_FALSE(image);
  std::printf("the page said: error: %s\n", errors[0].c_str());
}

// A scene of four objects from three files (the demo's floor, torus and shell, and a second torus turned,
// scaled unevenly and moved so that it cuts through the shell and the first torus): every object's splats in
// one global sort, as the CPU renderer draws the same scene (loaded by the engine's scene loader from the
// exported folder), for a camera the URL gives; the background is the scene's. Drawn object by object the
// frame would differ.
TEST_F(WebPage, SceneOfInterpenetratingObjectsMatchesTheCpuRenderer) {
  bool ready = false;
  openDemoScene("web_scene", 240, 160, &ready);
  if (!ready) return;
  SceneLoadOptions strict;
  strict.strict = true;
  const Scene scene = loadSceneJson(site_ + "/demo_scene.json", strict);  // the files the page reads
  ASSERT_EQ(scene.objects.size(), 4u);
  ASSERT_TRUE(scene.background.has_value());
  Camera cam = lookAtCamera(Vec3{-1.3f, 1.2f, 2.1f}, Vec3{0.35f, 0.5f, 0.1f}, Vec3{0, 1, 0}, 50.0f, 256, 176);
  cam.cx = 0.46f * 256, cam.cy = 0.54f * 176;
  std::string log;
  const std::vector<std::string> lines =
      browse("readback=1&" + cameraQuery(cam), {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, 256) << log.substr(0, 4000);
  ASSERT_EQ(web.height, 176);
  const std::vector<RenderObject> objects = scene.renderObjects();
  ASSERT_EQ(objects.size(), 4u);
  RenderSettings settings;
  settings.background = *scene.background;
  const ImageRGBA cpu = renderCpu(objects, cam, settings);
  const ImageDiff diff = compareImages(web, cpu);
  const double alpha_max = alphaMaxDifference(web, cpu);
  const ImageDiff apart = compareImages(objectByObject(objects, cam, *scene.background), cpu);
  std::printf(
      "web page vs CPU renderer, a scene of 4 objects (3 files) 256x176: PSNR %.1f dB, max difference %.2e, "
      "alpha max difference %.2e; object by object the CPU frame would be %.1f dB from the one sort\n",
      diff.psnr, diff.max_abs, alpha_max, apart.psnr);
  std::printf("first frame: %s\n", first_frame.c_str());
  EXPECT_GE(diff.psnr, 40.0);
  EXPECT_LT(alpha_max, 0.02);
  // The scene tells one global sort from a sort per object: its objects interpenetrate in the camera's view.
  EXPECT_LT(apart.psnr, 32.0);
}

// Without a camera in the URL the page takes the scene's (its size the URL's, as the scene gives it) and its
// background.
TEST_F(WebPage, SceneCameraAndBackgroundAreTheScenes) {
  bool ready = false;
  openDemoScene("web_scene_camera", 200, 120, &ready);
  if (!ready) return;
  SceneLoadOptions strict;
  strict.strict = true;
  const Scene scene = loadSceneJson(site_ + "/demo_scene.json", strict);
  ASSERT_TRUE(scene.camera.has_value());
  ASSERT_TRUE(scene.background.has_value());
  std::string log;
  const std::vector<std::string> lines = browse("readback=1&size=200,120", {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, 200) << log.substr(0, 4000);
  ASSERT_EQ(web.height, 120);
  RenderSettings settings;
  settings.background = *scene.background;
  const ImageRGBA cpu = renderCpu(scene.renderObjects(), *scene.camera, settings);
  const ImageDiff diff = compareImages(web, cpu);
  std::printf(
      "web page vs CPU renderer, the demo scene from its own camera 200x120: PSNR %.1f dB, max "
      "difference %.2e\n",
      diff.psnr, diff.max_abs);
  EXPECT_GE(diff.psnr, 40.0);
}

// A scene naming a missing file: the page says what the command line's scene loader says (strict), naming the
// scene, the object and the file, and finishes its start without an image.
TEST_F(WebPage, SceneWithAMissingFileGivesTheEngineMessage) {
  bool ready = false;
  openDemoScene("web_scene_missing", 64, 48, &ready);
  if (!ready) return;
  writeText(site_ + "/missing.json",
            R"({"objects": [{"file": "parts/torus.ply"}, {"name": "ghost", "file": "parts/ghost.ply",
    "transform": {"translation": [1, 0, 0]}}]})");
  SceneLoadOptions strict;
  strict.strict = true;
  std::string expected = test::errorOf([&] { loadSceneJson(site_ + "/missing.json", strict); });
  for (size_t at; (at = expected.find(site_ + "/")) != std::string::npos;)
    expected.erase(at, site_.size() + 1);  // the page's names are the site's
  ASSERT_EQ(expected, "missing.json: objects[1] (ghost): parts/ghost.ply: file is missing");
  std::string log;
  const std::vector<std::string> lines = browse("readback=1&size=64,48&scene=missing.json", {"READY"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  const Outcome o = outcomeOf(lines);
  ASSERT_EQ(o.errors.size(), 1u) << log.substr(0, 4000);
  EXPECT_EQ(o.errors[0], expected);
  EXPECT_TRUE(o.ready) << "the page did not finish its start after the error";
  EXPECT_FALSE(o.image);
  std::printf("the page said: error: %s\n", o.errors[0].c_str());
}

// A scene naming a glTF model: the page names the object and its kind, in the words export-web refuses it
// with (webSceneRefusal, run here natively), and finishes its start.
TEST_F(WebPage, SceneWithAGltfObjectIsRefusedByName) {
  bool ready = false;
  openDemoScene("web_scene_gltf", 64, 48, &ready);
  if (!ready) return;
  const std::string text =
      R"({"objects": [{"file": "parts/torus.ply"}, {"name": "walker", "gltf": "walker.glb"}]})";
  writeText(site_ + "/gltf_scene.json", text);
  SceneDocOptions by_text;
  by_text.on_file_system = false;
  const std::string expected = webSceneRefusal(parseSceneDocument(text, "gltf_scene.json", by_text));
  const std::string words = "gltf_scene.json: objects[1] (walker): a glTF model (\"gltf\": \"walker.glb\")";
  ASSERT_EQ(expected.rfind(words + " is not in the web build yet", 0), 0u) << expected;
  std::string log;
  const std::vector<std::string> lines =
      browse("readback=1&size=64,48&scene=gltf_scene.json", {"READY"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  const Outcome o = outcomeOf(lines);
  ASSERT_EQ(o.errors.size(), 1u) << log.substr(0, 4000);
  EXPECT_EQ(o.errors[0], expected);
  EXPECT_TRUE(o.ready);
  EXPECT_FALSE(o.image);
}

// export-web of a scene: the scene and each file it names once, at its path relative to the scene, and a
// manifest naming the scene; scenes the page cannot draw or reach are refused, naming the scene, the object
// and why.
TEST_F(WebPage, ExportWebCopiesASceneAndRefusesWhatThePageCannotDraw) {
  bool ready = false;
  prepare("web_export_scene", &ready, false);
  if (!ready) return;
  const std::string src = dir_ + "/source";
  writeDemoScene(src, "demo_scene.json", 64, 48);
  test::CliRun r = test::cli("export-web \"" + src + "/demo_scene.json\" -o \"" + site_ + "\"");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("demo_scene.json (scene JSON, 4 objects from 3 splat files, "), std::string::npos)
      << r.out;
  for (const char* f : {"demo_scene.json", "parts/floor.ply", "parts/torus.ply", "parts/shell.ply",
                        "index.html", "sf_decode.wasm"})
    EXPECT_TRUE(fs::is_regular_file(site_ + "/" + f)) << f;
  EXPECT_EQ(readFile(site_ + "/parts/torus.ply"), readFile(src + "/parts/torus.ply"));
  const std::string manifest = readText(site_ + "/manifest.json");
  EXPECT_NE(manifest.find("\"scene\": \"demo_scene.json\""), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("\"objects\": 4"), std::string::npos) << manifest;
  struct Refused {
    const char* name;
    std::string scene, message;
  };
  const Refused refused[] = {
      {"gltf.json", R"({"objects": [{"file": "parts/torus.ply"}, {"name": "walker", "file": "walker.glb"}]})",
       "gltf.json: objects[1] (walker): a glTF model (\"file\": \"walker.glb\") is not in the web build yet"},
      {"hull.json", R"({"objects": [{"hull": "ship.spl2"}]})",
       "hull.json: objects[0] (ship): a splat hull (\"hull\": \"ship.spl2\") is not in the web build yet"},
      {"linear.json", R"({"objects": [{"file": "parts/torus.ply"}], "blend_space": "linear"})",
       "linear.json: blend_space: linear blending is not in the web build yet"},
      {"outside.json", R"({"objects": [{"name": "up", "file": "../outside.ply"}]})",
       "outside.json: objects[0] (up): '../outside.ply': leads outside the scene's directory"},
      {"missing.json", R"({"objects": [{"name": "ghost", "file": "parts/ghost.ply"}]})",
       "missing.json: objects[0] (ghost): " + src + "/parts/ghost.ply: file is missing"},
  };
  saveSplats(test::randomCloud(20, 0, 3), dir_ + "/outside.ply");
  for (const Refused& x : refused) {
    writeText(src + "/" + x.name, x.scene);
    r = test::cli("export-web \"" + src + "/" + x.name + "\" -o \"" + dir_ + "/refused\"");
    EXPECT_EQ(r.code, 1) << x.name << "\n" << r.out;
    EXPECT_NE(r.out.find("splatforge export-web: error: " + src + "/" + x.message), std::string::npos)
        << x.name << "\n"
        << r.out;
  }
}

}  // namespace
}  // namespace sf
