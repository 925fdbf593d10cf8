// `splatforge render` of glTF models and `splatforge animate`, run as processes: a skinned, textured model
// drawn at two clip times, a scene JSON mixing a glTF model and a splat file animated to PNG frames, MP4
// output through ffmpeg (a stand-in ffmpeg on PATH checks the call when the real one is absent), and
// failures (frame pattern, missing ffmpeg, unknown clip, unloadable model) with messages naming the cause.
// Mesh frames use the CPU backend here; the Vulkan mesh pass is compared with it in gpu_tests.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>
#include <vector>

#include "io/formats.h"
#include "io/image_io.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

double litFraction(const ImageRGBA& img) {
  size_t lit = 0;
  for (size_t i = 0; i < img.pixels.size(); i += 4)
    lit += img.pixels[i] + img.pixels[i + 1] + img.pixels[i + 2] > 0.05f;
  return static_cast<double>(lit) / static_cast<double>(img.pixels.size() / 4);
}

void writeText(const fs::path& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

// Sets an environment variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value.c_str(), 1);
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

TEST(RenderGltfCli, SkinnedTexturedModelAtTwoClipTimes) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  const std::string dir = test::tempDir("RenderGltfCli");
  std::string out;
  const std::string common = " --backend cpu --width 160 --height 120";
  ASSERT_EQ(test::runCli("render " + path + " -o " + dir + "/t0.png --time 0" + common, &out), 0) << out;
  EXPECT_NE(out.find("mesh triangles"), std::string::npos) << out;
  ASSERT_EQ(test::runCli("render " + path + " -o " + dir + "/t1.png --time 0.5 --clip 0" + common, &out), 0)
      << out;
  ImageRGBA a = readPng(dir + "/t0.png"), b = readPng(dir + "/t1.png");
  EXPECT_GT(litFraction(a), 0.03);  // the figure fills a good part of the auto-framed image
  EXPECT_LT(litFraction(a), 0.6);
  EXPECT_LT(compareImages(a, b).psnr, 30.0);  // the walk moved the limbs
  // The base-colour texture is used: the figure is not one flat colour.
  double lo = 1, hi = 0;
  for (size_t i = 0; i < b.pixels.size(); i += 4)
    if (b.pixels[i] + b.pixels[i + 1] + b.pixels[i + 2] > 0.05f)
      lo = std::min<double>(lo, b.pixels[i + 2]), hi = std::max<double>(hi, b.pixels[i + 2]);
  EXPECT_GT(hi - lo, 0.3);
  EXPECT_EQ(test::runCli("render " + path + " -o " + dir + "/x.png --clip Dance" + common, &out), 1);
  EXPECT_NE(out.find("no animation named or numbered 'Dance'"), std::string::npos) << out;
}

// One scene time for every input kind: `render scene.json --time T` draws a glTF object's clip at T (the same
// as the object whose clip starts at T drawn at 0: clip time = time + speed * t) and moves it from T = 0; a
// single model file takes the same time.
TEST(RenderGltfCli, SceneJsonTakesTheFrameTime) {
  SF_REQUIRE_ASSET(model, "gltf/cesium_man.gltf");
  const fs::path dir = test::tempDir("RenderGltfCliTime");
  const std::string camera =
      R"("camera": {"eye": [0, 1, 4], "target": [0, 0.8, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 80, "height": 60})";
  writeText(dir / "at.json", R"({"objects": [{"gltf": ")" + model + R"(", "clip": 0}], )" + camera + "}");
  writeText(dir / "offset.json",
            R"({"objects": [{"gltf": ")" + model + R"(", "clip": 0, "time": 0.5}], )" + camera + "}");
  writeText(dir / "cam.json", "{" + camera.substr(camera.find('{') + 1));
  std::string out;
  const auto renderAt = [&](const std::string& input, const char* time, const char* npy) {
    EXPECT_EQ(test::runCli("render " + input + " --backend cpu --allow-outside-paths --camera " +
                               (dir / "cam.json").string() + " --time " + time + " -o " +
                               (dir / "x.png").string() + " --save-float " + (dir / npy).string(),
                           &out),
              0)
        << out;
    return readNpy((dir / npy).string());
  };
  const ImageRGBA at = renderAt((dir / "at.json").string(), "0.5", "at.npy"),
                  offset = renderAt((dir / "offset.json").string(), "0", "offset.npy"),
                  start = renderAt((dir / "at.json").string(), "0", "start.npy"),
                  file = renderAt(model, "0.5", "file.npy");
  EXPECT_EQ(at.pixels, offset.pixels) << "render scene.json --time 0.5 is not the clip at 0.5";
  EXPECT_EQ(at.pixels, file.pixels) << "the model file and the scene JSON take --time alike";
  EXPECT_LT(compareImages(at, start).psnr, 35.0) << "--time does not move the model";
}

TEST(AnimateCli, SceneWithModelAndSplatsToPngFrames) {
  SF_REQUIRE_ASSET(model, "gltf/cesium_man.gltf");
  const fs::path dir = test::tempDir("AnimateCliPng");
  GaussianCloud cloud = test::randomCloud(300, 0, 3);
  saveSplats(cloud, (dir / "cloud.ply").string());
  writeText(dir / "scene.json", R"({
  "objects": [
    {"gltf": ")" + model + R"(", "clip": 0, "time": 0.1, "speed": 1.5},
    {"file": "cloud.ply", "transform": {"translation": [0, 1, -1.5], "scale": 0.4}}
  ],
  "camera": {"eye": [0, 1, 4], "target": [0, 0.8, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 96, "height": 72},
  "background": [0.1, 0.1, 0.15]
})");
  std::string out;
  ASSERT_EQ(test::runCli("animate " + (dir / "scene.json").string() + " --fps 4 --duration 0.75 -o " +
                             (dir / "frames/f_%03d.png").string() + " --backend cpu --allow-outside-paths",
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("3/3 frames"), std::string::npos) << out;
  EXPECT_NE(out.find("clip '"), std::string::npos) << out;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(fs::exists(dir / "frames" / ("f_00" + std::to_string(i) + ".png"))) << out;
  EXPECT_FALSE(fs::exists(dir / "frames/f_003.png"));
  ImageRGBA f0 = readPng((dir / "frames/f_000.png").string()),
            f2 = readPng((dir / "frames/f_002.png").string());
  EXPECT_EQ(f0.width, 96);
  EXPECT_LT(compareImages(f0, f2).psnr, 40.0);  // the model moved between frames
}

TEST(AnimateCli, Mp4ThroughFfmpeg) {
  SF_REQUIRE_ASSET(model, "gltf/cesium_man.gltf");
  const fs::path dir = test::tempDir("AnimateCliMp4");
  std::string path_env = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  const bool real_ffmpeg = std::system("command -v ffmpeg >/dev/null 2>&1") == 0;
  if (!real_ffmpeg) {
    // A stand-in that checks the arguments our encoder call must carry and writes the output file.
    fs::create_directories(dir / "bin");
    writeText(dir / "bin/ffmpeg", R"SH(#!/bin/sh
for a in "$@"; do last="$a"; done
case "$*" in *"-framerate 5 -i "*"%06d.png"*"-pix_fmt yuv420p"*) ;; *) echo "unexpected ffmpeg call: $*" >&2; exit 3;; esac
frames=$(ls "$(dirname "$7")" | wc -l)
[ "$frames" -eq 3 ] || { echo "expected 3 frames, found $frames" >&2; exit 4; }
printf 'mp4' > "$last"
)SH");
    fs::permissions(dir / "bin/ffmpeg", fs::perms::owner_all);
    path_env = (dir / "bin").string() + ":" + path_env;
  }
  ScopedEnv env("PATH", path_env);
  std::string out;
  const std::string mp4 = (dir / "walk.mp4").string();
  ASSERT_EQ(test::runCli(
                "animate " + model + " --fps 5 --duration 0.6 --width 64 --height 48 --backend cpu -o " + mp4,
                &out),
            0)
      << out;
  EXPECT_TRUE(fs::exists(mp4)) << out;
  EXPECT_GT(fs::file_size(mp4), 0u);
  EXPECT_FALSE(fs::exists(mp4 + ".frames")) << "temporary frames left behind";
  EXPECT_FALSE(fs::exists(mp4 + ".partial.mp4"));
}

TEST(AnimateCli, FailuresNameTheCause) {
  const fs::path dir = test::tempDir("AnimateCliFail");
  std::string out;
  SF_REQUIRE_ASSET(model, "gltf/cesium_man.gltf");
  EXPECT_EQ(test::runCli("animate " + model + " -o " + (dir / "frames.png").string(), &out),
            2);  // usage errors
  EXPECT_NE(out.find("frame-number field"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("animate " + model + " -o " + (dir / "f_%04x.png").string(), &out), 2);
  EXPECT_NE(out.find("%d or %0Nd"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("animate " + model + " --fps 0", &out), 2);
  EXPECT_NE(out.find("--fps"), std::string::npos) << out;
  {
    ScopedEnv env("PATH", (dir / "empty").string());
    EXPECT_EQ(test::runCli("animate " + model + " -o " + (dir / "x.mp4").string(), &out), 1);
    EXPECT_NE(out.find("needs ffmpeg on PATH"), std::string::npos) << out;
  }
  // A scene whose model cannot be loaded fails, naming the file, or draws a placeholder with a warning
  // with --keep-going.
  writeText(dir / "broken.gltf",
            "{\"asset\": {\"version\": \"2.0\"}, \"meshes\": [{\"primitives\": [{\"attributes\": "
            "{\"POSITION\": 7}}]}]}");
  writeText(dir / "scene.json", R"({"objects": [{"gltf": "broken.gltf", "clip": "Walk"}],
    "camera": {"eye": [0, 0, -3], "target": [0, 0, 0], "up": [0, -1, 0], "fov_y_deg": 50, "width": 48, "height": 32}})");
  ASSERT_EQ(test::runCli("animate " + (dir / "scene.json").string() +
                             " --fps 2 --duration 0.5 --backend cpu --keep-going -o " +
                             (dir / "p_%02d.png").string(),
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("warning: objects[0] (broken)"), std::string::npos) << out;
  EXPECT_NE(out.find("drawing a placeholder"), std::string::npos) << out;
  EXPECT_GT(litFraction(readPng((dir / "p_00.png").string())), 0.05);
  EXPECT_EQ(test::runCli("animate " + (dir / "scene.json").string() + " --backend cpu -o " +
                             (dir / "q_%02d.png").string(),
                         &out),
            1);
  EXPECT_NE(out.find("broken.gltf"), std::string::npos) << out;
}

// A glTF quad sliding along x over a 1 s clip "walk" whose extras carry events foot_l (0.25 s) and foot_r
// (0.75 s).
void writeWalker(const fs::path& path) {
  const float data[] = {-0.25f, -0.25f, 0, 0.25f,  -0.25f, 0,
                        0.25f,  0.25f,  0, -0.25f, 0.25f,  0,   // positions (48 bytes)
                        0,      1,                              // key times (8)
                        -1,     0,      0, 1,      0,      0};  // translations (24)
  const uint16_t idx[] = {0, 1, 2, 0, 2, 3};                    // indices (12)
  std::vector<uint8_t> bin(reinterpret_cast<const uint8_t*>(data),
                           reinterpret_cast<const uint8_t*>(data) + sizeof(data));
  bin.insert(bin.end(), reinterpret_cast<const uint8_t*>(idx),
             reinterpret_cast<const uint8_t*>(idx) + sizeof(idx));
  writeText(path, R"({"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}],
  "nodes": [{"name": "walker", "mesh": 0}],
  "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 3}]}],
  "buffers": [{"byteLength": 92, "uri": "data:application/octet-stream;base64,)" +
                      test::encodeBase64(bin) + R"("}],
  "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 48}, {"buffer": 0, "byteOffset": 48, "byteLength": 8},
                  {"buffer": 0, "byteOffset": 56, "byteLength": 24}, {"buffer": 0, "byteOffset": 80, "byteLength": 12}],
  "accessors": [{"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3", "min": [-0.25, -0.25, 0], "max": [0.25, 0.25, 0]},
                {"bufferView": 1, "componentType": 5126, "count": 2, "type": "SCALAR", "min": [0], "max": [1]},
                {"bufferView": 2, "componentType": 5126, "count": 2, "type": "VEC3"},
                {"bufferView": 3, "componentType": 5123, "count": 6, "type": "SCALAR"}],
  "animations": [{"name": "walk", "samplers": [{"input": 1, "output": 2, "interpolation": "LINEAR"}],
                  "channels": [{"sampler": 0, "target": {"node": 0, "path": "translation"}}],
                  "extras": {"events": [{"name": "foot_l", "time": 0.25}, {"name": "foot_r", "time": 0.75}]}}]})");
}

// `animate` reports the animation events each frame crosses: one line each on stdout, or JSON lines with
// --events-out. The walker plays at time 0.1 + 2 t, so over frames t = 0, 0.25, ..., 1.75 (4 fps, 2 s) its
// playhead runs 0.1 -> 3.6 and crosses e + k at t = (e + k - 0.1) / 2, in the frame ceil(4 t): the closed
// form below.
TEST(AnimateCli, PrintsTheAnimationEventsFramesCross) {
  const fs::path dir = test::tempDir("AnimateCliEvents");
  writeWalker(dir / "walker.gltf");
  writeText(dir / "scene.json", R"({"objects": [{"gltf": "walker.gltf", "time": 0.1, "speed": 2}],
    "camera": {"eye": [0, 0, 3], "target": [0, 0, 0], "up": [0, 1, 0], "fov_y_deg": 50, "width": 16, "height": 12}})");
  std::vector<std::string> expected;
  std::vector<std::tuple<int, double, std::string, double>> closed;  // frame, scene time, event, clip time
  for (int k = 0; k < 4; ++k)
    for (const auto& [name, e] : {std::pair<const char*, double>{"foot_l", 0.25}, {"foot_r", 0.75}}) {
      const double t = (e + k - 0.1) / 2;
      if (t > 1.75) continue;
      const int frame = static_cast<int>(std::ceil(t * 4 - 1e-9));
      closed.emplace_back(frame, t, name, e);
      char text[128];
      std::snprintf(text, sizeof(text), "event t=%.4f s: walker %s (clip time %g s, frame %d)", t, name, e,
                    frame);
      expected.push_back(text);
    }
  ASSERT_EQ(expected.size(), 7u);
  std::string out;
  const std::string args = "animate " + (dir / "scene.json").string() +
                           " --fps 4 --duration 2 --backend cpu -o " + (dir / "f_%02d.png").string();
  ASSERT_EQ(test::runCli(args, &out), 0) << out;
  std::vector<std::string> lines;
  for (size_t at = 0, end; (end = out.find('\n', at)) != std::string::npos; at = end + 1)
    if (out.compare(at, 6, "event ") == 0) lines.push_back(out.substr(at, end - at));
  EXPECT_EQ(lines, expected) << out;

  // --events-out: JSON lines, and no event lines on stdout.
  ASSERT_EQ(test::runCli(args + " --events-out " + (dir / "events.jsonl").string(), &out), 0) << out;
  EXPECT_EQ(out.find("event t="), std::string::npos) << out;
  EXPECT_NE(out.find("events.jsonl (7 animation events)"), std::string::npos) << out;
  std::ifstream in(dir / "events.jsonl");
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    ASSERT_LT(n, closed.size());
    const nlohmann::json j = nlohmann::json::parse(line);
    const auto& [frame, t, name, e] = closed[n++];
    EXPECT_EQ(j.size(), 5u) << line;
    EXPECT_EQ(j.at("frame").get<int>(), frame) << line;
    EXPECT_NEAR(j.at("scene_time").get<double>(), t, 1e-9) << line;
    EXPECT_EQ(j.at("object").get<std::string>(), "walker") << line;
    EXPECT_EQ(j.at("event").get<std::string>(), name) << line;
    EXPECT_EQ(j.at("clip_time").get<double>(), e) << line;
  }
  EXPECT_EQ(n, closed.size());
  // Only .jsonl is written; its folder must exist.
  EXPECT_EQ(test::runCli(args + " --events-out " + (dir / "events.txt").string(), &out), 2) << out;
  EXPECT_NE(out.find("--events-out " + (dir / "events.txt").string() + ": expected a .jsonl path"),
            std::string::npos)
      << out;
  EXPECT_EQ(test::runCli(args + " --events-out " + (dir / "no/such/e.jsonl").string(), &out), 1) << out;
}

// Ctrl-C during a long `animate` (SIGINT, as a terminal sends it) stops after the frame in hand, removes the
// frames this run wrote (PNG sequence) or its frame folder (MP4), and exits 130: no partial output is left.
TEST(AnimateCli, InterruptLeavesNoPartialOutput) {
  const std::string dir = test::tempDir("AnimateInterrupt");
  GaussianCloud c = test::randomCloud(3000, 0, 15);
  for (Vec3& p : c.positions) p = p + Vec3{0, 0, 4};
  saveSplats(c, dir + "/c.ply");
  for (const std::string& out : {dir + "/f_%05d.png", dir + "/long.mp4"}) {
    const std::string first =
        out.ends_with(".mp4") ? dir + "/long.mp4.frames/000000.png" : dir + "/f_00000.png";
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string input = dir + "/c.ply";
      execl(SPLATFORGE_BINARY, SPLATFORGE_BINARY, "animate", input.c_str(), "--backend", "cpu", "--fps", "30",
            "--duration", "600", "--width", "64", "--height", "48", "-o", out.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    const auto t0 = std::chrono::steady_clock::now();
    while (!std::filesystem::exists(first) &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(std::filesystem::exists(first)) << "no frame written";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill(pid, SIGINT);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "ended by a signal, not by the interrupt handling";
    EXPECT_EQ(WEXITSTATUS(status), 130);
    std::vector<std::string> left;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().filename() != "c.ply") left.push_back(e.path().filename().string());
    EXPECT_TRUE(left.empty()) << out << ": left " << left.size() << " entries, the first "
                              << (left.empty() ? "" : left[0]);
  }
}

// The peak resident memory (KiB) of `splatforge animate SCENE` for `frames` frames at 30 fps (lavapipe
// allocates device memory in the process, so GPU memory counts too). AddressSanitizer's quarantine is
// switched off in the child so that freed memory is not held on its behalf.
long peakKibOfAnimate(const std::string& scene, int frames, const std::string& out) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    setenv("ASAN_OPTIONS", "detect_leaks=0:quarantine_size_mb=0", 1);
    const std::string duration = std::to_string(frames / 30.0);
    execl(SPLATFORGE_BINARY, SPLATFORGE_BINARY, "animate", scene.c_str(), "--fps", "30", "--duration",
          duration.c_str(), "-o", out.c_str(), "--allow-outside-paths", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return usage.ru_maxrss;
}

// A long clip (8 s at 30 fps: a walking glTF beside a cloud of splats, the clip looping four times) keeps the
// memory of a short one: a frame that left something behind would grow the peak with the frame count.
TEST(AnimateCli, LongClipKeepsTheMemoryOfAShortOne) {
  SF_REQUIRE_ASSET(model, "gltf/cesium_man.gltf");
  const fs::path dir = test::tempDir("AnimateLongClip");
  saveSplats(test::randomCloud(5000, 1, 9), (dir / "cloud.ply").string());
  writeText(dir / "scene.json", R"({
  "objects": [
    {"gltf": ")" + model + R"(", "clip": 0},
    {"file": "cloud.ply", "transform": {"translation": [0, 1, -1.5], "scale": 0.4}}
  ],
  "camera": {"eye": [0, 1, 4], "target": [0, 0.8, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 64, "height": 48}
})");
  const std::string scene = (dir / "scene.json").string();
  const long short_kib = peakKibOfAnimate(scene, 30, (dir / "short/f_%04d.png").string());
  const long long_kib = peakKibOfAnimate(scene, 240, (dir / "long/f_%04d.png").string());
  ASSERT_GT(short_kib, 0) << "animate of 30 frames failed";
  ASSERT_GT(long_kib, 0) << "animate of 240 frames failed";
  ASSERT_TRUE(fs::exists(dir / "long/f_0239.png"));
  std::printf("[ animate peak resident memory: 30 frames %.1f MiB, 240 frames %.1f MiB ]\n",
              static_cast<double>(short_kib) / 1024.0, static_cast<double>(long_kib) / 1024.0);
  EXPECT_LE(long_kib, short_kib + short_kib / 20 + 16 * 1024) << "the peak grew with the frame count";
}

}  // namespace
}  // namespace sf
