// The web page (web/, docs/web.md) in a real browser: `splatforge export-web` writes the page with biker,
// `splatforge serve` serves it on 127.0.0.1, headless Chromium draws it with WebGPU (SwiftShader's fallback
// adapter here) for a camera given in the URL and prints the float image to its console (?readback=1); the
// image must match the CPU renderer's of the same camera (PSNR >= 40 dB). A truncated SPZ must give the
// engine's own message in the page, and the page must stay up. Without Chromium, a WebGPU adapter or the
// page's WebAssembly (scripts/build_web.sh) the tests skip with the reason, and fail under CI=true.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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
      const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      for (int fd = 3; fd < 1024; ++fd) close(fd);  // no lock or pipe of the test's caller outlives it in a child
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

// The page's console lines ("SFWEB ..."), as Chromium logs them to stderr: [...] "SFWEB text", source: URL (n).
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
  return "size=" + std::to_string(cam.width) + "," + std::to_string(cam.height) + "&view=" + view + "&intrinsics=" + fmtFloat(cam.fx) + "," +
         fmtFloat(cam.fy) + "," + fmtFloat(cam.cx) + "," + fmtFloat(cam.cy);
}

// The image a readback run printed (IMAGE, CHUNK lines), or an empty image; `first_frame` gets its timing line.
ImageRGBA readbackImage(const std::vector<std::string>& lines, std::string* first_frame) {
  std::string b64;
  int width = 0, height = 0;
  for (const std::string& l : lines) {
    if (l.rfind("FIRST-FRAME ", 0) == 0) *first_frame = l.substr(12);
    if (l.rfind("IMAGE ", 0) == 0) std::sscanf(l.c_str(), "IMAGE %d %d", &width, &height);
    if (l.rfind("CHUNK ", 0) == 0) b64 += l.substr(l.find(' ', 6) + 1);
  }
  const std::vector<uint8_t> bytes = test::decodeBase64(b64);
  if (width <= 0 || height <= 0 || bytes.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * 16) return {};
  ImageRGBA image(width, height);
  std::memcpy(image.pixels.data(), bytes.data(), bytes.size());
  return image;
}

double alphaMaxDifference(const ImageRGBA& a, const ImageRGBA& b) {
  double m = 0;
  for (size_t i = 3; i < a.pixels.size(); i += 4) m = std::max(m, static_cast<double>(std::abs(a.pixels[i] - b.pixels[i])));
  return m;
}

class WebPage : public ::testing::Test {
 protected:
  // Exports biker (or skips), starts the server; `site` and `base_url` are set after.
  void open(const std::string& test_name, bool* ready) {
    *ready = false;
    chromium_ = chromiumPath();
    if (chromium_.empty()) SF_SKIP_OR_FAIL("Chromium is not installed (scripts/setup.sh installs Debian's chromium)");
    if (!fs::exists(std::string(SPLATFORGE_SOURCE_DIR) + "/build/web/sf_decode.wasm"))
      SF_SKIP_OR_FAIL("the page's WebAssembly is not built (scripts/build_web.sh; scripts/test.sh runs it)");
    SF_REQUIRE_ASSET(biker, "splats/biker.spz");
    biker_ = biker;
    dir_ = test::tempDir(test_name);
    site_ = dir_ + "/site";
    test::CliRun r = test::cli("export-web \"" + biker + "\" -o \"" + site_ + "\"");
    ASSERT_EQ(r.code, 0) << r.out;
    server_.start({SPLATFORGE_BINARY, "serve", site_, "--port", "0", "--quiet"}, dir_ + "/serve.out", dir_ + "/serve.err");
    const std::string line = waitFor(dir_ + "/serve.out", {"/ (Ctrl-C"}, 30);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, std::regex(R"(http://127\.0\.0\.1:(\d+)/)"))) << line << readText(dir_ + "/serve.err");
    base_url_ = "http://127.0.0.1:" + m[1].str() + "/index.html";
    *ready = true;
  }

  // Opens `query` in headless Chromium until the page prints one of `markers`; returns its console lines.
  std::vector<std::string> browse(const std::string& query, const std::vector<std::string>& markers, std::string* log_out = nullptr) {
    const std::string log = dir_ + "/chromium.log";
    Child browser;
    browser.start({chromium_, "--headless=new", "--no-sandbox", "--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-angle=vulkan",
                   "--use-vulkan=swiftshader", "--enable-logging=stderr", "--v=0", "--no-first-run", "--user-data-dir=" + dir_ + "/profile",
                   base_url_ + "?" + query},
                  dir_ + "/chromium.out", log);
    std::vector<std::string> wanted;
    for (const std::string& m : markers) wanted.push_back("SFWEB " + m);
    std::string text = waitFor(log, wanted, 300);
    browser.stop();
    text = readText(log);
    if (log_out) *log_out = text;
    return pageLines(text);
  }

  std::string chromium_, biker_, dir_, site_, base_url_;
  Child server_;
};

// No WebGPU adapter: skip (fail under CI) with the page's own words.
#define SF_REQUIRE_ADAPTER(lines, log)                                                                        \
  for (const std::string& l : lines)                                                                          \
    if (l.rfind("ERROR WebGPU", 0) == 0) SF_SKIP_OR_FAIL("no WebGPU adapter in headless Chromium: " << l.substr(6)); \
  if (lines.empty()) SF_SKIP_OR_FAIL("headless Chromium printed nothing from the page:\n" << log.substr(0, 4000))

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
  const std::vector<std::string> lines = browse("readback=1&" + cameraQuery(cam), {"IMAGE-END", "ERROR"}, &log);
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
  std::printf("web page vs CPU renderer, biker 320x240: PSNR %.1f dB, max difference %.2e, alpha max difference %.2e\n", diff.psnr,
              diff.max_abs, alpha_max);
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
  const LoadedSplats loaded = loadSplats(site_ + "/random_sh3.ply");  // what the page reads, rounding included
  ASSERT_TRUE(loaded.cloud.antialiased);
  Camera cam = lookAtCamera(Vec3{0.6f, -0.4f, -1.6f}, Vec3{0, 0, 0}, Vec3{0, -1, 0}, 60.0f, 200, 136);
  std::string log;
  const std::vector<std::string> lines = browse("scene=random_sh3.ply&readback=1&bg=0.2,0.3,0.4&" + cameraQuery(cam), {"IMAGE-END", "ERROR"}, &log);
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
  std::printf("web page vs CPU renderer, SH 3 antialiased cloud 200x136: PSNR %.1f dB, max difference %.2e, alpha max difference %.2e\n",
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

}  // namespace
}  // namespace sf
