// The web page (web/, docs/web.md) in a real browser: `splatforge export-web` writes the page with biker or
// with a scene JSON and its files, `splatforge serve` serves it on 127.0.0.1, headless Chromium draws it with
// WebGPU (SwiftShader's fallback adapter here) for a camera given in the URL, or the scene's, and prints the
// float image to its console (?readback=1); the image must match the CPU renderer's of the same camera (PSNR
// >= 40 dB). A truncated SPZ, a scene naming a missing file and a scene naming a glTF model must give the
// engine's own message in the page, and the page must stay up. With ?passes=1 the page prints what each WGSL
// pass of its first frame wrote (the projected splats, the touched counts and their scan, the emitted and the
// sorted keys, the tile ranges), compared element by element with the engine's CPU functions (projectSplat,
// splatReachesTile, the stable (tile, depth) order) as tests/render/vulkan_renderer_test.cpp checks the
// Vulkan passes. SOG files (a .sog bundle and an unpacked meta.json folder) must decode in the page, their
// WebP images by the browser, to exactly the native decoder's gaussians (?digest=1), and draw as the CPU
// renderer does; an image the browser cannot decode or the page cannot fetch gives the engine's message. The
// fly camera is driven by played key and mouse events (?input=): its camera after each step, read back, must
// move as its closed form says and draw as the CPU renderer does. A skinned glTF model (cesium_man) read,
// posed and skinned by the engine's C++ in the page's WebAssembly and rasterised with WebGPU must draw at t =
// 0.5 s as `splatforge render --backend cpu --time 0.5` does, alone and in a scene with a splat object
// cutting through it (one depth composite); a truncated GLB gives the engine's message. Without Chromium, a
// WebGPU adapter or the page's WebAssembly (scripts/build_web.sh) the tests skip with the reason, and fail
// under CI=true.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <numeric>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "character/character.h"
#include "core/covariance.h"
#include "core/image.h"
#include "core/sha256.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/gltf.h"
#include "io/image_io.h"
#include "io/spl2.h"
#include "model/gltf_model.h"
#include "neural/generator.h"
#include "render/camera.h"
#include "render/cpu_renderer.h"
#include "scene/demo.h"
#include "scene/scene.h"
#include "scene/scene_doc.h"
#include "scene/synthetic.h"
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
// (n). A message of several lines (a WebGPU error's) is kept whole, its lines joined by newlines.
std::vector<std::string> pageLines(const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  std::string line;
  const std::string open = "\"SFWEB ", close = "\", source: ";
  while (std::getline(in, line)) {
    const size_t a = line.find(open);
    if (a == std::string::npos) continue;
    std::string text = line.substr(a + open.size());
    for (std::string more; text.find(close) == std::string::npos && std::getline(in, more);)
      text += "\n" + more;
    const size_t b = text.rfind(close);
    if (b == std::string::npos) continue;
    lines.push_back(text.substr(0, b));
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

// The base64 of the CHUNK lines after lines[begin] up to the line `end`.
std::string chunksAfter(const std::vector<std::string>& lines, size_t begin, const std::string& end) {
  std::string b64;
  for (size_t i = begin + 1; i < lines.size() && lines[i] != end; ++i)
    if (lines[i].rfind("CHUNK ", 0) == 0) b64 += lines[i].substr(lines[i].find(' ', 6) + 1);
  return b64;
}

// The text of the first line starting with `prefix` (the prefix left off), or "".
std::string lineAfter(const std::vector<std::string>& lines, const std::string& prefix) {
  for (const std::string& l : lines)
    if (l.rfind(prefix, 0) == 0) return l.substr(prefix.size());
  return {};
}

// The image a readback run printed (IMAGE, CHUNK lines, IMAGE-END), or an empty image; `first_frame` gets its
// timing line.
ImageRGBA readbackImage(const std::vector<std::string>& lines, std::string* first_frame) {
  std::string b64;
  int width = 0, height = 0;
  *first_frame = lineAfter(lines, "FIRST-FRAME ");
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind("IMAGE ", 0) == 0) {
      std::sscanf(lines[i].c_str(), "IMAGE %d %d", &width, &height);
      b64 = chunksAfter(lines, i, "IMAGE-END");
    }
  const std::vector<uint8_t> bytes = test::decodeBase64(b64);
  if (width <= 0 || height <= 0 ||
      bytes.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * 16)
    return {};
  ImageRGBA image(width, height);
  std::memcpy(image.pixels.data(), bytes.data(), bytes.size());
  return image;
}

// The digest the page prints of a decoded file's gaussians (?digest=1, DECODED lines; web/main.js
// printDigest): SHA-256 of its positions, covariances, opacities and SH coefficients as the page uploads
// them.
std::string uploadDigest(const GaussianCloud& c) {
  std::vector<float> positions, covariances;
  for (size_t i = 0; i < c.size(); ++i) {
    for (int a = 0; a < 3; ++a) positions.push_back(c.positions[i][a]);
    const Cov6 cov = covarianceFromScaleRotation(c.scales[i], c.rotations[i]);
    covariances.insert(covariances.end(), cov.begin(), cov.end());
  }
  Sha256 h;
  for (const std::vector<float>* v :
       std::initializer_list<const std::vector<float>*>{&positions, &covariances, &c.opacities, &c.sh})
    h.update(std::span(reinterpret_cast<const uint8_t*>(v->data()), v->size() * sizeof(float)));
  return h.hexDigest();
}

// The DECODED lines of a page's console: file name -> "count digest".
std::map<std::string, std::string> decodedDigests(const std::vector<std::string>& lines) {
  std::map<std::string, std::string> out;
  for (const std::string& l : lines)
    if (l.rfind("DECODED ", 0) == 0) {
      const size_t name_end = l.find(' ', 8);
      if (name_end != std::string::npos) out[l.substr(8, name_end - 8)] = l.substr(name_end + 1);
    }
  return out;
}

// A camera line of ?input= (web/main.js playInput): the navigator's mode and fly speed after a step, and the
// camera the page draws then.
struct PageCamera {
  std::string mode;
  double speed = 0;
  Camera cam;
  double view[12] = {};
  double eye[3] = {};
};

std::vector<double> csvNumbers(const std::string& text) {
  std::vector<double> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::strtod(item.c_str(), nullptr));
  return out;
}

// The CAMERA lines, in step order; a line that does not parse leaves the camera's size 0.
std::vector<PageCamera> pageCameras(const std::vector<std::string>& lines) {
  std::vector<PageCamera> out;
  for (const std::string& l : lines) {
    if (l.rfind("CAMERA ", 0) != 0) continue;
    std::istringstream in(l);
    std::string word, step, view, intrinsics, size, eye;
    PageCamera c;
    in >> word >> step >> c.mode >> c.speed >> word >> view >> word >> intrinsics >> word >> size >> word >>
        eye;
    const std::vector<double> v = csvNumbers(view), k = csvNumbers(intrinsics), wh = csvNumbers(size),
                              e = csvNumbers(eye);
    if (v.size() == 12 && k.size() == 4 && wh.size() == 2 && e.size() == 3) {
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j)
          c.cam.world_to_camera.m[i][j] =
              static_cast<float>(c.view[i * 4 + j] = v[static_cast<size_t>(i * 4 + j)]);
      c.cam.world_to_camera.m[3][0] = c.cam.world_to_camera.m[3][1] = c.cam.world_to_camera.m[3][2] = 0;
      c.cam.world_to_camera.m[3][3] = 1;
      c.cam.fx = static_cast<float>(k[0]), c.cam.fy = static_cast<float>(k[1]);
      c.cam.cx = static_cast<float>(k[2]), c.cam.cy = static_cast<float>(k[3]);
      c.cam.width = static_cast<int>(wh[0]), c.cam.height = static_cast<int>(wh[1]);
      for (int a = 0; a < 3; ++a) c.eye[a] = e[static_cast<size_t>(a)];
    }
    out.push_back(c);
  }
  return out;
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

// What the WGSL passes of the page's first frame wrote (?passes=1; web/main.js printPasses): the frame's
// sizes and counters, and each buffer's bytes by name.
struct WebPasses {
  uint32_t slots = 0, tiles_x = 0, tiles_y = 0, keys_wanted = 0, keys = 0;
  std::map<std::string, std::vector<uint8_t>> buffers;

  template <class T>
  std::vector<T> as(const std::string& name) const {
    const auto it = buffers.find(name);
    if (it == buffers.end()) return {};
    std::vector<T> out(it->second.size() / sizeof(T));
    std::memcpy(out.data(), it->second.data(), out.size() * sizeof(T));
    return out;
  }
};

// One projected splat as preprocess.wgsl writes it (struct Proj of web/shaders/common.wgsl).
struct WebProj {
  float mean[2];
  uint32_t rect[2];  // x0 | y0 << 16, x1 | y1 << 16
  float conic_opacity[4];
  float color_depth[4];
};
static_assert(sizeof(WebProj) == 48);

// The PASSES block of a page's console lines; false (with `why`) when it is missing or a buffer is cut short.
bool readPasses(const std::vector<std::string>& lines, WebPasses* out, std::string* why) {
  bool header = false, end = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.rfind("PASSES ", 0) == 0)
      header = std::sscanf(l.c_str(), "PASSES slots %u tiles %u %u keys-wanted %u keys %u", &out->slots,
                           &out->tiles_x, &out->tiles_y, &out->keys_wanted, &out->keys) == 5;
    end |= l == "PASSES-END";
    char name[64];
    size_t bytes = 0;
    if (l.rfind("BUFFER ", 0) == 0 && std::sscanf(l.c_str(), "BUFFER %63s %zu", name, &bytes) == 2) {
      std::vector<uint8_t> data =
          test::decodeBase64(chunksAfter(lines, i, std::string("BUFFER-END ") + name));
      if (data.size() != bytes) {
        *why = std::string("buffer ") + name + ": " + std::to_string(data.size()) + " bytes of " +
               std::to_string(bytes);
        return false;
      }
      out->buffers[name] = std::move(data);
    }
  }
  if (!header || !end) *why = "no PASSES line or no PASSES-END";
  return header && end;
}

// The WGSL passes against the CPU functions, element by element: the largest differences seen and the counts
// of elements that differ (each should be 0).
struct PassesComparison {
  size_t visible = 0, keys = 0;
  size_t touched_diffs = 0, rect_diffs = 0, value_diffs = 0, offset_diffs = 0, emitted_diffs = 0,
         sort_diffs = 0, list_diffs = 0, range_diffs = 0;
  // The largest differences: the conic's relative to 1 + |c|, the depth's relative to the depth.
  double mean = 0, conic = 0, opacity = 0, color = 0, depth = 0;
  std::string first;  // the first difference, described
};

PassesComparison comparePasses(const WebPasses& web, const GaussianCloud& c, const Camera& cam) {
  PassesComparison r;
  auto note = [&](size_t& count, const std::string& what) {
    if (count++ == 0 && r.first.empty()) r.first = what;
  };
  const std::vector<WebProj> proj = web.as<WebProj>("proj");
  const std::vector<uint32_t> touched = web.as<uint32_t>("touched"), offsets = web.as<uint32_t>("offsets");
  const int tiles_x = (cam.width + kTileSize - 1) / kTileSize,
            tiles_y = (cam.height + kTileSize - 1) / kTileSize;
  // Preprocess: every slot against projectSplat (culled: touched 0; drawn: its rect, count, mean, conic,
  // opacity, colour and depth), with the tolerances of the Vulkan test.
  std::vector<ProjectedSplat> ps(c.size());
  std::vector<uint32_t> cpu_touched(c.size(), 0);
  for (size_t i = 0; i < c.size(); ++i) {
    if (projectSplat(c.positions[i], covarianceFromScaleRotation(c.scales[i], c.rotations[i]), c.opacities[i],
                     c.sh_degree, c.shOf(i).data(), c.positions[i] - cam.position(), c.color_space, cam,
                     c.antialiased, &ps[i], BlendSpace::kDisplay, c.screen_filter))
      cpu_touched[i] = static_cast<uint32_t>(ps[i].touched);
    if (touched[i] != cpu_touched[i])
      note(r.touched_diffs, "slot " + std::to_string(i) + ": touched " + std::to_string(touched[i]) +
                                ", the CPU's " + std::to_string(cpu_touched[i]));
    if (!cpu_touched[i] || !touched[i]) continue;
    ++r.visible;
    const WebProj& w = proj[i];
    const TileRect& t = ps[i].tiles;
    if ((w.rect[0] & 0xffffu) != static_cast<uint32_t>(t.x0) ||
        (w.rect[0] >> 16) != static_cast<uint32_t>(t.y0) ||
        (w.rect[1] & 0xffffu) != static_cast<uint32_t>(t.x1) ||
        (w.rect[1] >> 16) != static_cast<uint32_t>(t.y1))
      note(r.rect_diffs, "slot " + std::to_string(i) + ": another tile rect");
    const double mean = std::max(std::abs(w.mean[0] - ps[i].mean_x), std::abs(w.mean[1] - ps[i].mean_y));
    double conic = 0, color = 0;
    for (int k = 0; k < 3; ++k) {
      conic = std::max(conic, std::abs(static_cast<double>(w.conic_opacity[k]) - ps[i].conic[k]) /
                                  (1.0 + std::abs(ps[i].conic[k])));
      color = std::max(color, std::abs(static_cast<double>(w.color_depth[k]) - ps[i].color[k]));
    }
    const double opacity = std::abs(static_cast<double>(w.conic_opacity[3]) - ps[i].opacity);
    const double depth = std::abs(static_cast<double>(w.color_depth[3]) - ps[i].depth) / ps[i].depth;
    if (!(mean <= 1e-3 && conic <= 1e-4 && opacity <= 1e-6 && color <= 1e-4 && depth <= 1e-5))
      note(r.value_diffs, "slot " + std::to_string(i) + ": mean, conic, opacity, colour or depth off");
    r.mean = std::max(r.mean, mean);
    r.conic = std::max(r.conic, conic);
    r.opacity = std::max(r.opacity, opacity);
    r.color = std::max(r.color, color);
    r.depth = std::max(r.depth, depth);
  }
  // The scan: the exclusive prefix sum of the counts the page found.
  uint32_t sum = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (offsets[i] != sum) note(r.offset_diffs, "slot " + std::to_string(i) + ": another key offset");
    sum += touched[i];
  }
  // The emit: per drawn slot from its offset, the tiles of its rect row by row (tested where the rect holds
  // at most kMaxTestedTileArea tiles), with the depth bits the page's preprocess wrote: as the CPU emits them
  // (buildTileLists).
  struct Key {
    uint32_t tile, depth, slot;
    bool operator==(const Key&) const = default;
  };
  std::vector<Key> cpu, emitted;
  for (size_t i = 0; i < c.size(); ++i) {
    if (!cpu_touched[i]) continue;
    const TileRect& t = ps[i].tiles;
    for (int y = t.y0; y < t.y1; ++y)
      for (int x = t.x0; x < t.x1; ++x)
        if (t.area() > kMaxTestedTileArea || splatReachesTile(ps[i], x, y))
          cpu.push_back({static_cast<uint32_t>(y * tiles_x + x), std::bit_cast<uint32_t>(ps[i].depth),
                         static_cast<uint32_t>(i)});
  }
  r.keys = cpu.size();
  const std::vector<uint32_t> et = web.as<uint32_t>("emitted_tiles"), ed = web.as<uint32_t>("emitted_depths"),
                              ev = web.as<uint32_t>("emitted_values"), st = web.as<uint32_t>("sorted_tiles"),
                              sd = web.as<uint32_t>("sorted_depths"), sv = web.as<uint32_t>("sorted_values");
  const size_t n = std::min({et.size(), ed.size(), ev.size(), st.size(), sd.size(), sv.size()});
  for (size_t k = 0; k < n; ++k) emitted.push_back({et[k], ed[k], ev[k]});
  for (size_t k = 0; k < std::min(n, cpu.size()); ++k) {
    const Key& e = emitted[k];
    if (e.tile != cpu[k].tile || e.slot != cpu[k].slot ||
        (e.slot < proj.size() && e.depth != std::bit_cast<uint32_t>(proj[e.slot].color_depth[3])))
      note(r.emitted_diffs, "emitted key " + std::to_string(k) + ": tile " + std::to_string(e.tile) +
                                " slot " + std::to_string(e.slot) + ", the CPU's tile " +
                                std::to_string(cpu[k].tile) + " slot " + std::to_string(cpu[k].slot));
  }
  // The sort: the stable sort of the emitted keys by (tile, depth), bit for bit; and the order of (tile,
  // slot) the CPU's depths give.
  auto byTileDepth = [](const Key& a, const Key& b) {
    return a.tile != b.tile ? a.tile < b.tile : a.depth < b.depth;
  };
  std::vector<Key> expected = emitted;
  std::stable_sort(expected.begin(), expected.end(), byTileDepth);
  std::stable_sort(cpu.begin(), cpu.end(), byTileDepth);
  for (size_t k = 0; k < n; ++k) {
    if (!(Key{st[k], sd[k], sv[k]} == expected[k]))
      note(r.sort_diffs, "sorted key " + std::to_string(k) + " is not the stable sort's");
    if (k < cpu.size() && (st[k] != cpu[k].tile || sv[k] != cpu[k].slot))
      note(r.list_diffs, "sorted key " + std::to_string(k) + ": tile " + std::to_string(st[k]) + " slot " +
                             std::to_string(sv[k]) + ", the CPU's tile " + std::to_string(cpu[k].tile) +
                             " slot " + std::to_string(cpu[k].slot));
  }
  // The ranges: per tile [begin, end) of its keys in the sorted order, (0, 0) for a tile without keys.
  const std::vector<uint32_t> ranges = web.as<uint32_t>("ranges");
  std::vector<uint32_t> begin(static_cast<size_t>(tiles_x * tiles_y), 0), end(begin.size(), 0);
  for (size_t k = 0; k < cpu.size(); ++k) {
    if (k == 0 || cpu[k - 1].tile != cpu[k].tile) begin[cpu[k].tile] = static_cast<uint32_t>(k);
    if (k + 1 == cpu.size() || cpu[k + 1].tile != cpu[k].tile)
      end[cpu[k].tile] = static_cast<uint32_t>(k + 1);
  }
  for (size_t t = 0; t < begin.size(); ++t)
    if (2 * t + 1 >= ranges.size() || ranges[2 * t] != begin[t] || ranges[2 * t + 1] != end[t])
      note(r.range_diffs, "tile " + std::to_string(t) + ": another range");
  return r;
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
    fs::remove(log);  // a page opened before in this test must not answer for this one
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

 public:
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

 protected:
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

// An engine message about files of the site, as the page words it (names relative to the site).
std::string siteRelative(std::string message, const std::string& site) {
  for (size_t at; (at = message.find(site + "/")) != std::string::npos;) message.erase(at, site.size() + 1);
  return message;
}

// The page's outcome at `lines` (its log `log`) is `expected` as its one error, after which its start still
// finished, with no image drawn.
void expectOnlyError(const std::vector<std::string>& lines, const std::string& log,
                     const std::string& expected) {
  SF_REQUIRE_ADAPTER(lines, log);
  const WebPage::Outcome o = WebPage::outcomeOf(lines);
  ASSERT_EQ(o.errors.size(), 1u) << log.substr(0, 4000);
  EXPECT_EQ(o.errors[0], expected);
  EXPECT_TRUE(o.ready) << "the page did not finish its start after the error";
  EXPECT_FALSE(o.image);
  std::printf("the page said: error: %s\n", o.errors[0].c_str());
}

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
  // Per-pass timings where the adapter offers timestamp-query (SwiftShader's does), else the page says why
  // not.
  const std::string adapter = lineAfter(lines, "ADAPTER "), timings = lineAfter(lines, "TIMINGS ");
  std::printf("adapter: %s\ntimings: %s\n", adapter.c_str(), timings.c_str());
  if (adapter.ends_with("; timestamp-query"))
    EXPECT_NE(timings.find("GPU passes (ms): preprocess "), std::string::npos) << timings;
  else
    EXPECT_NE(timings.find("no per-pass GPU timings (the adapter has no timestamp-query)"), std::string::npos)
        << adapter << "\n"
        << timings;
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

// The WGSL passes of one frame against the CPU functions, element by element, as the Vulkan passes are
// checked (checkProjectionAndTileLists): a real cloud (every 37th splat of biker, its SH raised to degree 3,
// some splats made 8 and 60 times larger) seen from inside its box at 544x496 (34 x 31 tiles, so that a rect
// can hold more than kMaxTestedTileArea tiles and be emitted untested), with splats behind the camera, beside
// the view and across many tiles. Per slot the touched count, the tile rect, the mean, conic, opacity, colour
// and depth of preprocess; the scan's offsets; the emitted keys in order; the sort against a stable sort of
// them and against the CPU's order; the tile ranges. The frame's image is compared too (the raster).
TEST_F(WebPage, WgslPassesMatchTheCpuPerElement) {
  bool ready = false;
  open("web_passes", &ready);
  if (!ready) return;
  const LoadedSplats biker = loadSplats(biker_);
  const size_t step = 37;
  GaussianCloud cloud;
  cloud.resize((biker.cloud.size() + step - 1) / step, biker.cloud.sh_degree);
  for (size_t j = 0; j < cloud.size(); ++j) {
    const size_t i = j * step;
    cloud.positions[j] = biker.cloud.positions[i];
    cloud.scales[j] = biker.cloud.scales[i] * (j % 701 == 0 ? 60.0f : j % 53 == 0 ? 8.0f : 1.0f);
    cloud.rotations[j] = biker.cloud.rotations[i];
    cloud.opacities[j] = biker.cloud.opacities[i];
    std::copy_n(biker.cloud.shOf(i).data(), biker.cloud.shStride(), cloud.shOf(j).data());
  }
  padShDegree(cloud, 3, 11);
  saveSplats(cloud, site_ + "/passes.ply");
  const LoadedSplats loaded = loadSplats(site_ + "/passes.ply");  // what the page reads, rounding included
  const GaussianCloud& c = loaded.cloud;
  ASSERT_EQ(c.sh_degree, 3);
  const CloudBounds b = computeBounds(c);
  const Vec3 centre = 0.5f * (b.p01 + b.p99);
  const float radius = 0.5f * length(b.p99 - b.p01);
  const Vec3 eye = centre + normalize(Vec3{0.3f, -0.2f, -1.0f}) * (0.45f * radius);
  Camera cam = lookAtCamera(eye, centre + Vec3{0.1f * radius, 0, 0}, Vec3{0, -1, 0}, 60.0f, 544, 496);
  cam.cx = 0.45f * 544, cam.cy = 0.52f * 496;
  std::string log;
  const auto t0 = Clock::now();
  const std::vector<std::string> lines =
      browse("scene=passes.ply&passes=1&readback=1&" + cameraQuery(cam), {"PASSES-END", "ERROR"}, &log);
  const double browser_s = std::chrono::duration<double>(Clock::now() - t0).count();
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  WebPasses web;
  std::string why;
  ASSERT_TRUE(readPasses(lines, &web, &why)) << why << "\n" << log.substr(0, 4000);
  const uint32_t tiles_x = 34, tiles_y = 31;
  ASSERT_EQ(web.slots, c.size());
  ASSERT_EQ(web.tiles_x, tiles_x);
  ASSERT_EQ(web.tiles_y, tiles_y);
  ASSERT_EQ(web.buffers["proj"].size(), c.size() * sizeof(WebProj));
  ASSERT_EQ(web.buffers["touched"].size(), c.size() * 4);
  ASSERT_EQ(web.buffers["offsets"].size(), c.size() * 4);
  for (const char* name : {"emitted_tiles", "emitted_depths", "emitted_values", "sorted_tiles",
                           "sorted_depths", "sorted_values"})
    ASSERT_EQ(web.buffers[name].size(), size_t{web.keys} * 4) << name;
  ASSERT_EQ(web.buffers["ranges"].size(), size_t{tiles_x} * tiles_y * 8);

  const PassesComparison r = comparePasses(web, c, cam);
  std::printf("WGSL passes vs CPU, %zu splats (SH 3) at 544x496: %zu drawn, %zu keys\n", c.size(), r.visible,
              r.keys);
  std::printf(
      "largest differences: mean %.2e px, conic %.2e (relative to 1 + |c|), opacity %.2e, colour %.2e, depth "
      "%.2e (relative)\n",
      r.mean, r.conic, r.opacity, r.color, r.depth);
  std::printf(
      "elements that differ: touched %zu, rect %zu, values %zu, offsets %zu, emitted keys %zu, sort %zu, "
      "lists %zu, ranges %zu%s%s\n",
      r.touched_diffs, r.rect_diffs, r.value_diffs, r.offset_diffs, r.emitted_diffs, r.sort_diffs,
      r.list_diffs, r.range_diffs, r.first.empty() ? "" : "; first: ", r.first.c_str());
  std::printf("browser %.1f s; %s\n", browser_s, lineAfter(lines, "TIMINGS ").c_str());
  EXPECT_EQ(web.keys_wanted, r.keys);
  EXPECT_EQ(web.keys, r.keys);
  EXPECT_EQ(r.touched_diffs, 0u);
  EXPECT_EQ(r.rect_diffs, 0u);
  EXPECT_EQ(r.value_diffs, 0u);
  EXPECT_LE(r.mean, 1e-3);
  EXPECT_LE(r.conic, 1e-4);
  EXPECT_LE(r.opacity, 1e-6);
  EXPECT_LE(r.color, 1e-4);
  EXPECT_LE(r.depth, 1e-5);
  EXPECT_EQ(r.offset_diffs, 0u);
  EXPECT_EQ(r.emitted_diffs, 0u);
  EXPECT_EQ(r.sort_diffs, 0u);
  EXPECT_EQ(r.list_diffs, 0u);
  EXPECT_EQ(r.range_diffs, 0u);

  // The frame holds what the test is for: splats behind the camera and beside the view (culled), tested rects
  // whose tile test drops tiles, rects past kMaxTestedTileArea, and splats across several tiles.
  size_t behind = 0, beside = 0, dropped = 0, untested = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    ProjectedSplat p;
    const bool drawn =
        projectSplat(c.positions[i], covarianceFromScaleRotation(c.scales[i], c.rotations[i]), c.opacities[i],
                     c.sh_degree, c.shOf(i).data(), c.positions[i] - cam.position(), c.color_space, cam,
                     c.antialiased, &p, BlendSpace::kDisplay, c.screen_filter);
    const float z = transformPoint(cam.world_to_camera, c.positions[i]).z;
    behind += z <= kNearPlane;
    beside += z > kNearPlane && !drawn;
    dropped += drawn && p.tiles.area() <= kMaxTestedTileArea && p.touched < p.tiles.area();
    untested += drawn && p.tiles.area() > kMaxTestedTileArea;
  }
  std::printf(
      "splats behind the camera %zu, culled in front %zu, drawn with tiles dropped by the test %zu, "
      "rects past %d tiles %zu\n",
      behind, beside, dropped, kMaxTestedTileArea, untested);
  EXPECT_GT(behind, 0u);
  EXPECT_GT(beside, 0u);
  EXPECT_GT(dropped, 0u);
  EXPECT_GT(untested, 0u);
  EXPECT_GT(r.keys, 2 * r.visible);

  // The raster: the image against renderCpu's.
  std::string first_frame;
  const ImageRGBA image = readbackImage(lines, &first_frame);
  ASSERT_EQ(image.width, 544);
  RenderObject object(&c);
  const ImageDiff diff = compareImages(image, renderCpu(std::span<const RenderObject>(&object, 1), cam, {}));
  std::printf("the frame's image vs CPU renderer: PSNR %.1f dB, max difference %.2e\n", diff.psnr,
              diff.max_abs);
  EXPECT_GE(diff.psnr, 40.0);
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
// background. The page is told not to ask for timestamp-query (timestamps=0), as on an adapter without it:
// the frame is the same and the timings line says why it has no per-pass figures.
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
  const std::vector<std::string> lines =
      browse("readback=1&timestamps=0&size=200,120", {"IMAGE-END", "ERROR"}, &log);
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
  EXPECT_NE(lineAfter(lines, "ADAPTER ").find("; no timestamp-query: not asked for (timestamps=0)"),
            std::string::npos);
  EXPECT_NE(lineAfter(lines, "TIMINGS ").find("; no per-pass GPU timings (not asked for (timestamps=0))"),
            std::string::npos)
      << lineAfter(lines, "TIMINGS ");
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
  const std::string expected =
      siteRelative(test::errorOf([&] { loadSceneJson(site_ + "/missing.json", strict); }), site_);
  ASSERT_EQ(expected, "missing.json: objects[1] (ghost): parts/ghost.ply: file is missing");
  std::string log;
  const std::vector<std::string> lines = browse("readback=1&size=64,48&scene=missing.json", {"READY"}, &log);
  expectOnlyError(lines, log, expected);
}

// A scene naming a live splat hull ("effects", or "script": not in the web build yet; static hulls are
// drawn): the page names the object and the key, in the words export-web refuses it with (webSceneRefusal,
// run here natively), and finishes its start.
TEST_F(WebPage, SceneWithAHullIsRefusedByName) {
  bool ready = false;
  openDemoScene("web_scene_hull", 64, 48, &ready);
  if (!ready) return;
  const struct {
    const char* key;
    const char* value;
  } live[] = {{"effects", R"({"scatter": 1})"}, {"script", R"("ship_script.json")"}};
  for (const auto& x : live) {
    const std::string text = std::string(R"({"objects": [{"file": "parts/torus.ply"}, {"name": "ship", )") +
                             R"("hull": "ship.spl2", ")" + x.key + "\": " + x.value + "}]}";
    writeText(site_ + "/hull_scene.json", text);
    SceneDocOptions by_text;
    by_text.on_file_system = false;
    const std::string expected = webSceneRefusal(parseSceneDocument(text, "hull_scene.json", by_text));
    const std::string words = std::string("hull_scene.json: objects[1] (ship): ") + x.key +
                              ": live hulls (\"effects\", \"script\", \"seed\") are";
    ASSERT_EQ(expected.rfind(words + " not in the web build yet", 0), 0u) << expected;
    std::string log;
    const std::vector<std::string> lines =
        browse("readback=1&size=64,48&scene=hull_scene.json", {"READY"}, &log);
    expectOnlyError(lines, log, expected);
  }
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
  EXPECT_NE(r.out.find("demo_scene.json (scene JSON, 4 objects from 3 files, "), std::string::npos) << r.out;
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
      {"character.json",
       R"({"objects": [{"file": "parts/torus.ply"}, {"name": "hero", "character": "hero"}]})",
       "character.json: objects[1] (hero): " + src + "/hero/character.json: "},
      {"hull.json", R"({"objects": [{"hull": "ship.spl2", "effects": {"scatter": 1}}]})",
       "hull.json: objects[0] (ship): effects: live hulls (\"effects\", \"script\", \"seed\") are not in the "
       "web build yet"},
      {"inputs.json",
       R"({"objects": [{"name": "avatar", "generator": "avatar.onnx", "inputs": {"pose": [0]}}]})",
       "inputs.json: objects[0] (avatar): inputs: a generator's control inputs are not in the web build yet"},
      {"linear.json", R"({"objects": [{"file": "parts/torus.ply"}], "blend_space": "linear"})",
       "linear.json: blend_space: linear blending is not in the web build yet"},
      {"outside.json", R"({"objects": [{"name": "up", "file": "../outside.ply"}]})",
       "outside.json: objects[0] (up): '../outside.ply': leads outside the scene's directory"},
      // Inside the scene's folder on the disk, but its copy would land beside the export folder.
      {"around.json", R"({"objects": [{"name": "around", "file": "../source/parts/torus.ply"}]})",
       "around.json: objects[0] (around): '../source/parts/torus.ply': leads outside the scene's directory"},
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

// `splatforge convert` of biker into `out`: a .sog, or a meta.json with its images beside it.
void convertToSog(const std::string& biker, const std::string& out) {
  fs::create_directories(fs::path(out).parent_path());
  const test::CliRun r = test::cli("convert \"" + biker + "\" -o \"" + out + "\"");
  ASSERT_EQ(r.code, 0) << r.out;
}

// SOG in the page: biker as a .sog bundle and as an unpacked meta.json folder (written by `splatforge
// convert`), whose lossless WebP images the browser decodes and the engine's own SOG decoder the rest. The
// gaussians the page uploads must be bit for bit the native decoder's (the SHA-256 of all their floats, which
// any texel decoded off by one, premultiplied or colour-converted would change), and its frames the CPU
// renderer's: the bundle alone, and a scene placing both (export-web copies the folder's images beside its
// meta.json).
TEST_F(WebPage, SogFilesDecodeExactlyAndMatchTheCpuRenderer) {
  bool ready = false;
  prepare("web_sog", &ready);
  if (!ready) return;
  SF_REQUIRE_ASSET(biker, "splats/biker.spz");
  const std::string src = dir_ + "/source";
  convertToSog(biker, src + "/biker.sog");
  convertToSog(biker, src + "/folder/meta.json");
  if (HasFatalFailure()) return;
  const CloudBounds b = computeBounds(loadSplats(biker).cloud);
  const Vec3 centre = 0.5f * (b.p01 + b.p99);
  const float radius = 0.5f * length(b.p99 - b.p01);
  const float half = 20.0f * 3.14159265f / 180.0f;
  writeText(
      src + "/sog_scene.json",
      R"({"objects": [{"name": "bundle", "file": "biker.sog"}, {"name": "folder", "file": "folder/meta.json",
    "transform": {"translation": )" +
          jsonNumbers({0.6f * radius, 0, 0.3f * radius}) + R"(, "rotation": )" +
          jsonNumbers({std::cos(half), 0, std::sin(half), 0}) + "}}]}");
  exportAndServe(src + "/sog_scene.json", &ready);
  if (!ready) return;
  // What the page reads, natively: the exported files.
  std::map<std::string, LoadedSplats> native;
  std::map<std::string, std::string> expected;  // file -> "count digest"
  for (const char* f : {"biker.sog", "folder/meta.json"}) {
    native[f] = loadSplats(site_ + "/" + f);
    ASSERT_EQ(native[f].format, SplatFormat::kSog) << f;
    expected[f] = std::to_string(native[f].cloud.size()) + " " + uploadDigest(native[f].cloud);
  }
  EXPECT_EQ(expected["biker.sog"], expected["folder/meta.json"]);  // one cloud, bundled or not
  Camera cam = lookAtCamera(centre + normalize(Vec3{0.45f, -0.25f, -1.0f}) * (2.6f * radius),
                            centre + Vec3{0.3f * radius, 0, 0}, Vec3{0, -1, 0}, 50.0f, 240, 180);
  cam.cx = 0.47f * 240, cam.cy = 0.52f * 180;
  const RenderObject bundle(&native["biker.sog"].cloud);
  SceneLoadOptions strict;
  strict.strict = true;
  const Scene scene = loadSceneJson(site_ + "/sog_scene.json", strict);
  ASSERT_EQ(scene.objects.size(), 2u);
  struct Run {
    const char* what;
    std::string query;
    std::vector<const char*> files;
    ImageRGBA cpu;
  };
  const Run runs[] = {{"biker.sog",
                       "scene=biker.sog&",
                       {"biker.sog"},
                       renderCpu(std::span(&bundle, 1), cam, RenderSettings{})},
                      {"the scene of both",
                       "",
                       {"biker.sog", "folder/meta.json"},
                       renderCpu(scene.renderObjects(), cam, RenderSettings{})}};
  for (const Run& run : runs) {
    std::string log;
    const std::vector<std::string> lines =
        browse(run.query + "readback=1&digest=1&" + cameraQuery(cam), {"IMAGE-END", "ERROR"}, &log);
    SF_REQUIRE_ADAPTER(lines, log);
    for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
    const std::map<std::string, std::string> digests = decodedDigests(lines);
    EXPECT_EQ(digests.size(), run.files.size()) << run.what;
    for (const char* f : run.files) {
      const auto it = digests.find(f);
      ASSERT_NE(it, digests.end()) << run.what << ": no DECODED line for " << f << "\n"
                                   << log.substr(0, 4000);
      EXPECT_EQ(it->second, expected[f]) << run.what << ": " << f;
      std::printf("%s: %s decoded in the page: %s gaussians, SHA-256 %s the native decoder's\n", run.what, f,
                  it->second.substr(0, it->second.find(' ')).c_str(),
                  it->second == expected[f] ? "equal to" : "DIFFERENT from");
    }
    std::string first_frame;
    const ImageRGBA web = readbackImage(lines, &first_frame);
    ASSERT_EQ(web.width, 240) << log.substr(0, 4000);
    const ImageDiff diff = compareImages(web, run.cpu);
    std::printf("web page vs CPU renderer, %s 240x180: PSNR %.1f dB, max difference %.2e; %s\n", run.what,
                diff.psnr, diff.max_abs, first_frame.c_str());
    EXPECT_GE(diff.psnr, 40.0) << run.what;
  }
}

// A SOG folder with an image cut short (its header whole: the browser cannot decode it, and the engine says
// so in its words) and one with an image missing (the page cannot fetch it): the page gives exactly the
// message the native decoder gives, naming the image, and finishes its start.
TEST_F(WebPage, SogFolderWithABadImageGivesTheEngineMessage) {
  bool ready = false;
  prepare("web_sog_bad", &ready);
  if (!ready) return;
  SF_REQUIRE_ASSET(biker, "splats/biker.spz");
  convertToSog(biker, dir_ + "/source/meta.json");
  if (HasFatalFailure()) return;
  exportAndServe(dir_ + "/source/meta.json", &ready);  // the folder's files at the site's root
  if (!ready) return;
  struct Bad {
    const char* folder;
    const char* image;
    bool cut;  // else removed
    const char* words;
  };
  for (const Bad& bad : {Bad{"cut", "scales.webp", true, "cut/scales.webp: corrupt WebP data ("},
                         Bad{"missing", "quats.webp", false, "missing/quats.webp: file is missing"}}) {
    const std::string folder = site_ + "/" + bad.folder;
    fs::create_directories(folder);
    for (const fs::directory_entry& e : fs::directory_iterator(site_))
      if (e.path().extension() == ".webp" || e.path().filename() == "meta.json")
        fs::copy_file(e.path(), folder / e.path().filename());
    const std::string image = folder + "/" + bad.image;
    ASSERT_TRUE(fs::is_regular_file(image)) << "export-web did not copy " << bad.image;
    if (bad.cut) {
      std::vector<uint8_t> bytes = readFile(image);
      bytes.resize(bytes.size() / 2);
      writeFileAtomic(image, bytes);
    } else {
      fs::remove(image);
    }
    const std::string expected =
        siteRelative(test::errorOf([&] { loadSplats(folder + "/meta.json"); }), site_);
    ASSERT_EQ(expected.rfind(bad.words, 0), 0u) << expected;
    std::string log;
    const std::vector<std::string> lines =
        browse("readback=1&size=64,48&scene=" + std::string(bad.folder) + "/meta.json", {"READY"}, &log);
    expectOnlyError(lines, log, expected);
  }
}

// The fly camera, started by camera=fly and driven by key and mouse events the page plays (?input=), its
// camera read back after each step. From the camera `splatforge render` frames: a drag looks about the eye,
// the wheel speeds it up, W held 0.4 s moves the eye along the view by speed x time, where the speed is a
// quarter of the scene's size (the 1-99 percentile box's diagonal) a second times e^(250 / 1000) for the
// wheel; D and E held together move it right and up; F hands the view to the orbit unchanged, whose drag
// turns it about the point the orbit's distance ahead, and F hands it back; S moves it back. The frame of the
// last camera must be the CPU renderer's.
TEST_F(WebPage, FlyCameraMovesAsItsClosedFormAndMatchesTheCpuRenderer) {
  bool ready = false;
  open("web_fly", &ready);
  if (!ready) return;
  const LoadedSplats loaded = loadSplats(biker_);
  const CloudBounds b = computeBounds(loaded.cloud);
  const std::vector<std::string> steps = {"drag:50:-30", "wheel:-250", "down:KeyW", "wait:0.4",
                                          "up:KeyW",     "down:KeyD",  "down:KeyE", "wait:0.3",
                                          "up:KeyD",     "up:KeyE",    "key:KeyF",  "drag:-40:10",
                                          "key:KeyF",    "down:KeyS",  "wait:0.2",  "up:KeyS"};
  std::string script;
  for (const std::string& step : steps) script += (script.empty() ? "" : ",") + step;
  std::string log;
  const std::vector<std::string> lines =
      browse("readback=1&size=200,150&camera=fly&input=" + script, {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  const std::vector<PageCamera> c = pageCameras(lines);
  ASSERT_EQ(c.size(), steps.size()) << log.substr(0, 4000);
  for (const PageCamera& p : c) ASSERT_EQ(p.cam.width, 200) << "a CAMERA line did not parse";

  const double size = length(b.p99 - b.p01), speed = 0.25 * size * std::exp(0.25), tol = 1e-9 * size;
  auto row = [&](size_t step, int r) {
    return std::array<double, 3>{c[step].view[4 * r], c[step].view[4 * r + 1], c[step].view[4 * r + 2]};
  };
  // Eye after step `to` minus eye after step `from` against sum of (view row r of `from`) x along.
  auto expectMoved = [&](size_t from, size_t to, std::vector<std::pair<int, double>> along,
                         const char* what) {
    for (int a = 0; a < 3; ++a) {
      double want = 0;
      for (const auto& [r, d] : along) want += row(from, r)[static_cast<size_t>(a)] * d;
      EXPECT_NEAR(c[to].eye[a] - c[from].eye[a], want, tol) << what << ", axis " << a;
    }
  };
  auto sameView = [&](size_t x, size_t y) {
    double d = 0;
    for (int k = 0; k < 12; ++k) d = std::max(d, std::abs(c[x].view[k] - c[y].view[k]));
    return d;
  };
  // The start: the camera `splatforge render` frames, looked about from its eye.
  const Camera start = frameBox(b.p01, b.p99, Vec3{0, 0, 1}, Vec3{0, -1, 0}, 200, 150);
  EXPECT_EQ(c[0].mode, "fly");
  EXPECT_NEAR(c[0].speed, 0.25 * size, 1e-6 * size);
  for (int a = 0; a < 3; ++a)
    EXPECT_NEAR(c[0].eye[a], start.position()[a], 1e-5 * size) << "the drag moved the eye";
  EXPECT_LT(row(0, 2)[2], 0.99) << "the drag did not turn the view";
  EXPECT_NEAR(c[1].speed, speed, 1e-6 * speed);
  EXPECT_LT(sameView(0, 1), 1e-12) << "the wheel moved the fly camera";
  // W for 0.4 s: forward (row 2); D and E together for 0.3 s: right (row 0) and up (minus row 1).
  expectMoved(1, 4, {{2, speed * 0.4}}, "W");
  expectMoved(4, 9, {{0, speed * 0.3}, {1, -speed * 0.3}}, "D and E");
  std::printf(
      "fly: speed %.6f (closed form %.6f); W for 0.4 s moved the eye %.6f along the view (closed form "
      "%.6f)\n",
      c[1].speed, speed,
      std::hypot(c[4].eye[0] - c[1].eye[0], c[4].eye[1] - c[1].eye[1], c[4].eye[2] - c[1].eye[2]),
      speed * 0.4);
  // F: the orbit takes the view as it is; its drag turns the eye about the point the starting distance ahead;
  // F again: the fly camera takes the view as it is; S for 0.2 s: back.
  EXPECT_EQ(c[10].mode, "orbit");
  EXPECT_LT(sameView(9, 10), tol);
  const double distance = length(start.position() - 0.5f * (b.p01 + b.p99));
  for (int a = 0; a < 3; ++a)
    EXPECT_NEAR(
        c[11].eye[a],
        c[10].eye[a] + (row(10, 2)[static_cast<size_t>(a)] - row(11, 2)[static_cast<size_t>(a)]) * distance,
        1e-5 * size)
        << "the orbit did not turn about its target";
  EXPECT_GT(sameView(10, 11), 1e-3);
  EXPECT_EQ(c[12].mode, "fly");
  EXPECT_LT(sameView(11, 12), tol);
  expectMoved(12, 15, {{2, -speed * 0.2}}, "S");

  // The frame of the last camera against the CPU renderer's.
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, 200) << log.substr(0, 4000);
  RenderObject object(&loaded.cloud);
  const ImageDiff diff = compareImages(
      web, renderCpu(std::span<const RenderObject>(&object, 1), c.back().cam, RenderSettings{}));
  std::printf(
      "web page vs CPU renderer, biker from the flown camera 200x150: PSNR %.1f dB, max difference %.2e\n",
      diff.psnr, diff.max_abs);
  EXPECT_GE(diff.psnr, 40.0);
}

}  // namespace
}  // namespace sf

namespace sf {
namespace {

// `splatforge render INPUT --backend cpu` at scene time `time` and `width` x `height` (its own camera, or the
// input's), as the float image it saves.
ImageRGBA renderCpuCli(const std::string& input, double time, int width, int height, const std::string& out) {
  const test::CliRun r =
      test::cli("render \"" + input + "\" --backend cpu --time " + fmtFloat(static_cast<float>(time)) +
                " --width " + std::to_string(width) + " --height " + std::to_string(height) + " -o \"" + out +
                ".png\" --save-float \"" + out + ".npy\"");
  EXPECT_EQ(r.code, 0) << r.out;
  return r.code == 0 ? readNpy(out + ".npy") : ImageRGBA{};
}

// Pixels of `a` whose colour differs from `b`'s by more than `by` in a channel.
size_t pixelsOff(const ImageRGBA& a, const ImageRGBA& b, float by) {
  size_t n = 0;
  for (size_t p = 0; p < a.pixels.size(); p += 4)
    n += std::abs(a.pixels[p] - b.pixels[p]) > by || std::abs(a.pixels[p + 1] - b.pixels[p + 1]) > by ||
         std::abs(a.pixels[p + 2] - b.pixels[p + 2]) > by;
  return n;
}

double coverage(const ImageRGBA& image) {
  double sum = 0;
  for (size_t i = 3; i < image.pixels.size(); i += 4) sum += image.pixels[i];
  return sum / (static_cast<double>(image.width) * static_cast<double>(image.height));
}

// A skinned glTF model (cesium_man: 19 joints, LINEAR clips, a base-colour texture) opened in the page at a
// fixed time (?t=0.5): read, sampled and skinned on the CPU by the engine's C++ in the WebAssembly,
// rasterised with WebGPU and shaded as the CPU mesh raster shades, from the camera the page frames as
// `render` does. Against `splatforge render --backend cpu --time 0.5` of the file at the same size (its
// camera, autoCamera at that time); the frame at t = 0 is far from it (the walk moves the legs).
TEST_F(WebPage, SkinnedGltfAtHalfASecondMatchesTheCpuRenderer) {
  bool ready = false;
  prepare("web_gltf_skinned", &ready);
  if (!ready) return;
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  exportAndServe(man, &ready);
  if (!ready) return;
  EXPECT_TRUE(fs::is_regular_file(site_ + "/cesium_man.gltf"));
  EXPECT_TRUE(fs::is_regular_file(site_ + "/shaders/mesh.wgsl"));
  const int w = 360, h = 480;
  std::string log;
  const std::vector<std::string> lines =
      browse("scene=cesium_man.gltf&readback=1&t=0.5&size=" + std::to_string(w) + "," + std::to_string(h),
             {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, w) << log.substr(0, 4000);
  ASSERT_EQ(web.height, h);
  const ImageRGBA cpu = renderCpuCli(site_ + "/cesium_man.gltf", 0.5, w, h, dir_ + "/cpu_t05");
  const ImageRGBA cpu0 = renderCpuCli(site_ + "/cesium_man.gltf", 0.0, w, h, dir_ + "/cpu_t0");
  ASSERT_EQ(cpu.width, w);
  ASSERT_EQ(cpu0.width, w);
  const ImageDiff diff = compareImages(web, cpu), at0 = compareImages(web, cpu0);
  std::printf(
      "web page vs CPU renderer, cesium_man at t = 0.5 s %dx%d: PSNR %.1f dB, max difference %.2e, alpha max "
      "difference %.2e, %zu pixels off by more than 0.1 (edges); the CPU frame at t = 0 is %.1f dB from it; "
      "mesh "
      "coverage %.3f\n",
      w, h, diff.psnr, diff.max_abs, alphaMaxDifference(web, cpu), pixelsOff(web, cpu, 0.1f), at0.psnr,
      coverage(cpu));
  std::printf("first frame: %s\n", first_frame.c_str());
  if (diff.psnr < 40.0) writePng(dir_ + "/web_t05.png", web);  // beside cpu_t05.png, to look at
  EXPECT_GE(diff.psnr, 40.0);
  EXPECT_GT(coverage(cpu), 0.05);         // the model fills part of the frame
  EXPECT_LT(at0.psnr, diff.psnr - 10.0);  // the time given is the time drawn
  EXPECT_NE(lineAfter(lines, "TIMINGS ").find("mesh"), std::string::npos) << lineAfter(lines, "TIMINGS ");
}

// A scene JSON mixing a glTF object (cesium_man, placed by a turn and a translation, its clip from a time
// offset) with a splat object (a random cloud stretched into a slab) cutting through it, from the scene's
// camera at t = 0.5: the mesh layer composited by depth with the splats in one frame (splats in front of the
// mesh blend over it, those behind it are hidden), as the CPU renderer draws it (`splatforge render --backend
// cpu`). The frame with every splat in front of the mesh would be far from it. export-web copies the model
// beside the scene.
TEST_F(WebPage, SceneMixingAGltfModelAndSplatsCompositesByDepth) {
  bool ready = false;
  prepare("web_gltf_scene", &ready);
  if (!ready) return;
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  const std::string src = dir_ + "/source";
  fs::create_directories(src + "/models");
  fs::copy_file(man, src + "/models/man.gltf");
  const Scene alone = sceneFromFile(src + "/models/man.gltf");
  const CloudBounds mb = sceneBounds(alone, 0.75);
  const Vec3 centre = 0.5f * (mb.min + mb.max), extent = mb.max - mb.min;
  GaussianCloud cloud = test::randomCloud(4000, 1, 4343);
  for (float& o : cloud.opacities) o = 0.9f;  // splats in front of the body hide it, those behind are hidden
  saveSplats(cloud, src + "/slab.ply");
  const CloudBounds cb = computeBounds(loadSplats(src + "/slab.ply").cloud);
  const Vec3 cc = 0.5f * (cb.p01 + cb.p99), ce = cb.p99 - cb.p01;
  const Vec3 scale{1.3f * extent.x / ce.x, 0.25f * extent.y / ce.y,
                   0.35f * std::max(extent.z, extent.x) / ce.z};
  const Vec3 move = centre - Vec3{scale.x * cc.x, scale.y * cc.y, scale.z * cc.z};
  const float radius = 0.5f * length(extent);
  const Vec3 eye = centre + normalize(Vec3{0.5f, 0.3f, 1.0f}) * (2.4f * radius);
  const int w = 256, h = 192;
  const std::string scene = R"({
  "objects": [
    {"name": "walker", "gltf": "models/man.gltf", "time": 0.25, "transform": {"rotation": [0.9659258, 0, 0.2588190, 0]}},
    {"name": "slab", "file": "slab.ply", "transform": {"translation": )" +
                            jsonNumbers({move.x, move.y, move.z}) + R"(, "scale": )" +
                            jsonNumbers({scale.x, scale.y, scale.z}) + R"(}}
  ],
  "camera": {"eye": )" + jsonNumbers({eye.x, eye.y, eye.z}) +
                            R"(, "target": )" + jsonNumbers({centre.x, centre.y, centre.z}) +
                            R"(, "up": [0, 1, 0], "fov_y_deg": 45, "width": )" + std::to_string(w) +
                            R"(, "height": )" + std::to_string(h) + R"(},
  "background": [0.1, 0.12, 0.15]
})";
  writeText(src + "/mixed.json", scene);
  exportAndServe(src + "/mixed.json", &ready);
  if (!ready) return;
  EXPECT_TRUE(fs::is_regular_file(site_ + "/models/man.gltf"));
  std::string log;
  const std::vector<std::string> lines = browse(
      "readback=1&t=0.5&size=" + std::to_string(w) + "," + std::to_string(h), {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, w) << log.substr(0, 4000);
  ASSERT_EQ(web.height, h);
  const ImageRGBA cpu = renderCpuCli(site_ + "/mixed.json", 0.5, w, h, dir_ + "/cpu_mixed");
  ASSERT_EQ(cpu.width, w);
  // The same scene drawn as two layers, every splat over the mesh: the slab alone over the model alone.
  writeText(site_ + "/slab_only.json",
            std::string(R"({"objects": [)") +
                scene.substr(scene.find("{\"name\": \"slab\""),
                             scene.find("\n  ],") - scene.find("{\"name\": \"slab\"")) +
                "], " + scene.substr(scene.find("\"camera\"")));
  writeText(site_ + "/man_only.json", scene.substr(0, scene.find(",\n    {\"name\": \"slab\"")) + "\n  ], " +
                                          scene.substr(scene.find("\"camera\"")));
  const ImageRGBA slab = renderCpuCli(site_ + "/slab_only.json", 0.5, w, h, dir_ + "/cpu_slab");
  const ImageRGBA body = renderCpuCli(site_ + "/man_only.json", 0.5, w, h, dir_ + "/cpu_man");
  ASSERT_EQ(slab.width, w);
  ASSERT_EQ(body.width, w);
  ImageRGBA over(w, h);
  for (size_t p = 0; p < over.pixels.size(); p += 4) {
    const float t = 1.0f - slab.pixels[p + 3];
    for (size_t c = 0; c < 3; ++c)  // the slab's own background taken out, the model's frame behind it
      over.pixels[p + c] = slab.pixels[p + c] -
                           t * (c == 0   ? 0.1f
                                : c == 1 ? 0.12f
                                         : 0.15f) +
                           t * body.pixels[p + c];
    over.pixels[p + 3] = 1.0f - t * (1.0f - body.pixels[p + 3]);
  }
  const ImageDiff diff = compareImages(web, cpu), layered = compareImages(over, cpu);
  const size_t web_off = pixelsOff(web, cpu, 0.1f), layered_off = pixelsOff(over, cpu, 0.1f);
  std::printf(
      "web page vs CPU renderer, cesium_man and a splat slab in one scene at t = 0.5 s %dx%d: PSNR %.1f dB, "
      "max "
      "difference %.2e, %zu pixels off by more than 0.1; every splat over the mesh the CPU frame would be "
      "%.1f "
      "dB from it, %zu pixels off; slab coverage %.3f, model coverage %.3f\n",
      w, h, diff.psnr, diff.max_abs, web_off, layered.psnr, layered_off, coverage(slab), coverage(body));
  EXPECT_GE(diff.psnr, 40.0);
  EXPECT_GT(coverage(slab), 0.05);
  EXPECT_GT(coverage(body), 0.05);
  // The depth composite matters in this frame: splats behind the body are hidden where the layers would show
  // them.
  EXPECT_GT(layered_off, static_cast<size_t>(w * h / 400));
  EXPECT_GT(layered_off, 5 * web_off);
}

// A truncated GLB: the page says what the engine's glTF reader says natively, naming the file, and finishes
// its start; export-web refuses it in the same words.
TEST_F(WebPage, TruncatedGlbGivesTheEngineMessage) {
  bool ready = false;
  open("web_gltf_truncated", &ready);
  if (!ready) return;
  SF_REQUIRE_ASSET(glb, "gltf/morph-stress-test.glb");
  std::vector<uint8_t> bytes = readFile(glb);
  bytes.resize(bytes.size() / 2);
  writeFileAtomic(site_ + "/cut.glb", bytes);
  const std::string expected = test::errorOf([&] { GltfModel model(parseGltf(bytes, "cut.glb", site_)); });
  ASSERT_NE(expected, "(no error)");
  ASSERT_EQ(expected.rfind("cut.glb: ", 0), 0u) << expected;
  std::string log;
  const std::vector<std::string> lines = browse("readback=1&size=64,48&scene=cut.glb", {"READY"}, &log);
  expectOnlyError(lines, log, expected);
  const test::CliRun r = test::cli("export-web \"" + site_ + "/cut.glb\" -o \"" + dir_ + "/refused\"");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("splatforge export-web: error: " + site_ + "/" + expected), std::string::npos)
      << r.out;
}

// The frame of `scene` at scene time `t` for `cam` by the engine's CPU path (poseScene: every object posed on
// the CPU, a character deformed on the CPU, a generator run by its CPU executor at its model time time +
// speed * t; renderCpu, one sort).
ImageRGBA sceneCpuFrame(const Scene& scene, double t, const Camera& cam) {
  SceneFrame frame;
  poseScene(scene, t, frame, false, &cam);
  return renderCpu(frame.objects, cam, RenderSettings{});
}

// The LAM avatar (../shared/assets/characters/lam_avatar) bound as a splat character package by the command
// line (per vertex, its clips retargeted), into `dir`.
void bindLamPackage(const std::string& dir, bool* ready) {
  *ready = false;
  SF_REQUIRE_ASSET(offset, "characters/lam_avatar/offset.ply");
  SF_REQUIRE_ASSET(skin, "characters/lam_avatar/skin.glb");
  SF_REQUIRE_ASSET(animation, "characters/lam_avatar/animation.glb");
  const test::CliRun r =
      test::cli("character bind --splats \"" + offset + "\" --skin \"" + skin +
                "\" --per-vertex --rgb-colors --clips \"" + animation + "\" -o \"" + dir + "\"");
  ASSERT_EQ(r.code, 0) << r.out;
  *ready = true;
}

// A camera as the command line's intrinsics + world_to_camera JSON, every float printed exactly.
std::string cameraJson(const Camera& c) {
  std::string m;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) m += (m.empty() ? "" : ", ") + fmtFloat(c.world_to_camera.m[i][j]);
  return "{\"width\": " + std::to_string(c.width) + ", \"height\": " + std::to_string(c.height) +
         ", \"fx\": " + fmtFloat(c.fx) + ", \"fy\": " + fmtFloat(c.fy) + ", \"cx\": " + fmtFloat(c.cx) +
         ", \"cy\": " + fmtFloat(c.cy) + ", \"world_to_camera\": [" + m + "]}";
}

// A splat character package (the LAM avatar: 20,018 splats bound to a skinned, morphing head mesh of 262
// joints and 51 ARKit-named morph targets, its 12 clips retargeted) opened in the page at a fixed time
// (?t=1.3, the package's default clip) with an expression (?expression=jawOpen:1,eyeBlinkLeft:1): read and
// posed by the engine's package loader and animator in the WebAssembly, the mesh morphed and skinned and
// every splat deformed in WGSL. Against the CPU renderer's image of the same camera and time (`splatforge
// render --backend cpu` of a scene whose script spawns the package and sets that expression: the character
// world's path, the splats deformed on the CPU); the neutral face at that time is far from it.
TEST_F(WebPage, SplatCharacterWithAnExpressionMatchesTheCpuRenderer) {
  bool ready = false;
  prepare("web_character", &ready);
  if (!ready) return;
  bindLamPackage(dir_ + "/source/lam", &ready);
  if (!ready) return;
  exportAndServe(dir_ + "/source/lam", &ready);
  if (!ready) return;
  for (const char* f : {"lam/character.json", "lam/splats.ply", "lam/bindings.bin", "lam/skin.glb",
                        "lam/animations.glb", "shaders/deform.wgsl"})
    EXPECT_TRUE(fs::is_regular_file(site_ + "/" + f)) << f;
  EXPECT_NE(readText(site_ + "/manifest.json").find("\"scene\": \"lam/character.json\""), std::string::npos);
  const int w = 320, h = 320;
  const float t = 1.3f;
  const Camera cam = lookAtCamera({0.05f, 1.66f, 0.42f}, {0, 1.62f, 0}, {0, 1, 0}, 40, w, h);
  std::string log;
  const std::vector<std::string> lines =
      browse("scene=lam/character.json&readback=1&timestamps=0&t=" + fmtFloat(t) +
                 "&expression=jawOpen:1,eyeBlinkLeft:1&" + cameraQuery(cam),
             {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, w) << log.substr(0, 4000);
  ASSERT_EQ(web.height, h);
  writeText(dir_ + "/camera.json", cameraJson(cam));
  const std::string spawn = R"({"t": 0, "command": "spawn-character", "id": "lam", "package": "lam"})";
  writeText(site_ + "/expression.json", R"({"script": [)" + spawn +
                                            R"(, {"t": 0, "command": "set-expression", "id": "lam", )"
                                            R"("weights": {"jawOpen": 1, "eyeBlinkLeft": 1}}]})");
  writeText(site_ + "/neutral.json", R"({"script": [)" + spawn + "]}");
  auto cpuRender = [&](const std::string& scene, const std::string& out) {
    const test::CliRun r = test::cli("render \"" + site_ + "/" + scene + "\" --backend cpu --time " +
                                     fmtFloat(t) + " --camera \"" + dir_ + "/camera.json\" -o \"" + dir_ +
                                     "/" + out + ".png\" --save-float \"" + dir_ + "/" + out + ".npy\"");
    EXPECT_EQ(r.code, 0) << r.out;
    return r.code == 0 ? readNpy(dir_ + "/" + out + ".npy") : ImageRGBA{};
  };
  const ImageRGBA cpu = cpuRender("expression.json", "cpu_expression");
  const ImageRGBA neutral = cpuRender("neutral.json", "cpu_neutral");
  ASSERT_EQ(cpu.width, w);
  ASSERT_EQ(neutral.width, w);
  const ImageDiff diff = compareImages(web, cpu), to_neutral = compareImages(web, neutral);
  std::printf(
      "web page vs CPU renderer, the LAM splat character at t = %.1f s with jawOpen 1 and eyeBlinkLeft 1, "
      "%dx%d: PSNR %.1f dB, max difference %.2e, alpha max difference %.2e, %zu pixels off by more than 0.1; "
      "the "
      "CPU frame of the neutral face is %.1f dB from it (%zu pixels off by more than 0.1); coverage %.3f\n",
      t, w, h, diff.psnr, diff.max_abs, alphaMaxDifference(web, cpu), pixelsOff(web, cpu, 0.1f),
      to_neutral.psnr, pixelsOff(web, neutral, 0.1f), coverage(cpu));
  std::printf("first frame: %s\n", first_frame.c_str());
  if (diff.psnr < 40.0) writePng(dir_ + "/web_expression.png", web);  // beside cpu_expression.png
  EXPECT_GE(diff.psnr, 40.0);
  EXPECT_GT(coverage(cpu), 0.2);                 // the head fills the frame
  EXPECT_LT(to_neutral.psnr, diff.psnr - 10.0);  // the expression asked for is the one drawn
  EXPECT_GT(pixelsOff(web, neutral, 0.1f), static_cast<size_t>(w * h / 200));
  EXPECT_NE(lineAfter(lines, "TIMINGS ").find("20018 splats"), std::string::npos)
      << lineAfter(lines, "TIMINGS ");
}

// A scene JSON with character objects: the LAM package twice (one package, two objects), the first turned
// about y and moved, playing its "yumi_h5_a3_hello" clip offset and sped up ("time": 0.5, "speed": 1.25), the
// second turned the other way and moved, playing the package's default clip at clip time t. Exported (the
// package once: character.json and the files it names) and opened at t = 1.3 for a fixed camera: the package
// read once by the engine's loader in the WebAssembly, each object posed at its clip time and its splats
// deformed on the GPU into slots of its own, placed by its transform; one sort. Against the engine's CPU
// frame of the same scene (loadSceneJson of the exported scene, poseScene: the characters deformed on the
// CPU, renderCpu); the CPU frames at t = 1.6 and of the scene without the first object's "time" and "speed"
// are far from it.
TEST_F(WebPage, SceneWithCharacterObjectsMatchesTheCpuRenderer) {
  bool ready = false;
  prepare("web_character_scene", &ready);
  if (!ready) return;
  const std::string src = dir_ + "/source";
  bindLamPackage(src + "/lam", &ready);
  if (!ready) return;
  const std::string scene = R"({
  "objects": [
    {"name": "first", "character": "lam", "clip": "yumi_h5_a3_hello", "time": 0.5, "speed": 1.25,
     "transform": {"rotation": [0.9848078, 0, 0.1736482, 0], "translation": [-0.1, 0.02, 0]}},
    {"name": "second", "character": "lam",
     "transform": {"rotation": [0.9659258, 0, -0.2588190, 0], "translation": [0.12, -0.03, -0.08]}}
  ]
})";
  writeText(src + "/heads.json", scene);
  exportAndServe(src + "/heads.json", &ready);
  if (!ready) return;
  for (const char* f : {"heads.json", "lam/character.json", "lam/splats.ply", "lam/bindings.bin",
                        "lam/skin.glb", "lam/animations.glb"})
    EXPECT_TRUE(fs::is_regular_file(site_ + "/" + f)) << f;
  SceneLoadOptions strict;
  strict.strict = true;
  Scene native = loadSceneJson(site_ + "/heads.json", strict);
  ASSERT_EQ(native.objects.size(), 2u);
  const int w = 320, h = 240;
  const float t = 1.3f;
  const Camera cam = lookAtCamera({0.08f, 1.70f, 0.62f}, {0.01f, 1.62f, 0}, {0, 1, 0}, 40, w, h);
  std::string log;
  const std::vector<std::string> lines = browse(
      "readback=1&timestamps=0&t=" + fmtFloat(t) + "&" + cameraQuery(cam), {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, w) << log.substr(0, 4000);
  ASSERT_EQ(web.height, h);
  const ImageRGBA cpu = sceneCpuFrame(native, t, cam);
  const ImageDiff diff = compareImages(web, cpu);
  const ImageRGBA cpu_later = sceneCpuFrame(native, t + 0.3, cam);
  native.objects[0].time = 0, native.objects[0].speed = 1;
  const ImageRGBA cpu_plain = sceneCpuFrame(native, t, cam);
  const ImageDiff later = compareImages(web, cpu_later), plain = compareImages(web, cpu_plain);
  std::printf(
      "web page vs CPU renderer, a scene of two LAM character objects (one package) at t = %.1f, %dx%d: PSNR "
      "%.1f dB, max difference %.2e, alpha max difference %.2e, %zu pixels off by more than 0.1; the CPU "
      "frame at t = %.1f is %.1f dB from it (%zu pixels off), without the first object's time and speed "
      "%.1f dB (%zu pixels off); coverage %.3f\n",
      t, w, h, diff.psnr, diff.max_abs, alphaMaxDifference(web, cpu), pixelsOff(web, cpu, 0.1f), t + 0.3,
      later.psnr, pixelsOff(web, cpu_later, 0.1f), plain.psnr, pixelsOff(web, cpu_plain, 0.1f),
      coverage(cpu));
  std::printf("first frame: %s\nstatus: %s\n", first_frame.c_str(), lineAfter(lines, "TIMINGS ").c_str());
  if (diff.psnr < 40.0) {
    writePng(dir_ + "/web_heads.png", web);
    writePng(dir_ + "/cpu_heads.png", cpu);
  }
  EXPECT_GE(diff.psnr, 40.0);
  EXPECT_GT(coverage(cpu), 0.1);
  EXPECT_LT(later.psnr, diff.psnr - 10.0);
  EXPECT_LT(plain.psnr, diff.psnr - 10.0);
  EXPECT_NE(lineAfter(lines, "TIMINGS ").find(std::to_string(2 * 20018) + " splats"), std::string::npos)
      << lineAfter(lines, "TIMINGS ");
}

// Bad character packages: a truncated splats.ply and a missing bindings.bin. The page says what the command
// line's package loader says natively (size and SHA-256 checked before anything is decoded, the file named),
// finishes its start without an image, and export-web refuses them in the same words.
TEST_F(WebPage, BadCharacterPackageGivesTheEngineMessage) {
  bool ready = false;
  prepare("web_character_bad", &ready);
  if (!ready) return;
  bindLamPackage(dir_ + "/source/lam", &ready);
  if (!ready) return;
  exportAndServe(dir_ + "/source/lam", &ready);
  if (!ready) return;
  fs::copy(site_ + "/lam", site_ + "/cut", fs::copy_options::recursive);
  std::vector<uint8_t> ply = readFile(site_ + "/cut/splats.ply");
  ply.resize(ply.size() / 2);
  writeFileAtomic(site_ + "/cut/splats.ply", ply);
  fs::copy(site_ + "/lam", site_ + "/gone", fs::copy_options::recursive);
  fs::remove(site_ + "/gone/bindings.bin");
  for (const char* name : {"cut", "gone"}) {
    const std::string native = test::errorOf([&] { character::Character::loadPackage(site_ + "/" + name); });
    const std::string expected = siteRelative(native, site_);
    ASSERT_EQ(expected.rfind(std::string(name) + "/character.json: ", 0), 0u) << expected;
    std::string log;
    const std::vector<std::string> lines =
        browse("readback=1&size=64,48&scene=" + std::string(name) + "/character.json", {"READY"}, &log);
    expectOnlyError(lines, log, expected);
    const test::CliRun r =
        test::cli("export-web \"" + site_ + "/" + name + "\" -o \"" + dir_ + "/refused_" + name + "\"");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("splatforge export-web: error: " + native), std::string::npos) << r.out;
  }
  EXPECT_NE(siteRelative(test::errorOf([&] { character::Character::loadPackage(site_ + "/gone"); }), site_),
            siteRelative(test::errorOf([&] { character::Character::loadPackage(site_ + "/cut"); }), site_));
}

// The engine's CPU path of a generator's frame (what `splatforge render MODEL.onnx --time T --backend cpu`
// draws: GaussianGenerator::generate on the CPU executor, decodeGenerated, the CPU renderer) at model time
// `time` for `cam`.
ImageRGBA generatorCpuFrame(nn::GaussianGenerator& gen, double time, const Camera& cam) {
  const nn::GeneratedGaussians g = gen.generate(time, cam);
  RenderObject object(&g.cloud, Mat4{}, g.cloud.positions, g.covariances);
  return renderCpu(std::span<const RenderObject>(&object, 1), cam, RenderSettings{});
}

// The 4DGS demo generator (models/gaussians4d.onnx: 1,500 gaussians on a torus knot moved by a HexPlane field
// and an MLP, float16 outputs padded to 2,048 rows with num_points, SH degree 3) exported with
// onnxruntime-web, opened at t = 0.3 for a fixed off-axis camera: the model run by onnxruntime-web's
// WebAssembly in the page's worker, its raw float16 rows and num_points decoded into the frame's slots by the
// WGSL decode pass. Against the engine's CPU frame of the same model, camera and time (its CPU executor and
// decodeGenerated); the CPU frames at other times are far from it (the time given is the model time run).
TEST_F(WebPage, NeuralGeneratorAtATimeMatchesTheCpuRenderer) {
  bool ready = false;
  prepare("web_generator", &ready);
  if (!ready) return;
  const std::string model = std::string(SPLATFORGE_SOURCE_DIR) + "/models/gaussians4d.onnx";
  exportAndServe(model, &ready);
  if (!ready) return;
  for (const char* f : {"gaussians4d.onnx", "neural_worker.js", "shaders/neural.wgsl", "ort/ort.wasm.min.mjs",
                        "ort/ort-wasm-simd-threaded.mjs", "ort/ort-wasm-simd-threaded.wasm"})
    EXPECT_TRUE(fs::is_regular_file(site_ + "/" + f)) << f;
  EXPECT_NE(readText(site_ + "/manifest.json").find("\"scene\": \"gaussians4d.onnx\""), std::string::npos);
  nn::GaussianGenerator gen(model);
  const float t = 0.3f;
  // A camera off the model's axis (it looks along +z, y down, as the contract's camera), an off-centre
  // principal point.
  const int w = 320, h = 240;
  const nn::GeneratedGaussians at_t =
      gen.generate(t, lookAtCamera({0, 0, -3}, {0, 0, 0}, {0, -1, 0}, 50, w, h));
  const CloudBounds b = computeBounds(at_t.cloud);
  const Vec3 centre = 0.5f * (b.p01 + b.p99);
  const float radius = 0.5f * length(b.p99 - b.p01);
  const Vec3 eye = centre + normalize(Vec3{0.35f, -0.3f, -1.0f}) * (2.0f * radius);
  Camera cam = lookAtCamera(eye, centre, Vec3{0, -1, 0}, 50.0f, w, h);
  cam.cx = 0.48f * w, cam.cy = 0.52f * h;
  std::string log;
  const std::vector<std::string> lines = browse(
      "readback=1&timestamps=0&t=" + fmtFloat(t) + "&" + cameraQuery(cam), {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, w) << log.substr(0, 4000);
  ASSERT_EQ(web.height, h);
  const ImageRGBA cpu = generatorCpuFrame(gen, t, cam);
  const ImageDiff diff = compareImages(web, cpu);
  // The test can fail: the same page frame against the CPU frames of other model times.
  const ImageRGBA cpu_later = generatorCpuFrame(gen, t + 0.05, cam),
                  cpu_start = generatorCpuFrame(gen, 0.0, cam);
  const ImageDiff later = compareImages(web, cpu_later), start = compareImages(web, cpu_start);
  std::printf(
      "web page vs CPU renderer, the 4DGS generator (gaussians4d.onnx, onnxruntime-web) at t = %.2f, %dx%d: "
      "PSNR %.1f dB, max difference %.2e, alpha max difference %.2e, %zu pixels off by more than 0.1; the "
      "CPU "
      "frame at t = %.2f is %.1f dB from it (%zu pixels off), at t = 0 %.1f dB (%zu pixels off); coverage "
      "%.3f\n",
      t, w, h, diff.psnr, diff.max_abs, alphaMaxDifference(web, cpu), pixelsOff(web, cpu, 0.1f), t + 0.05,
      later.psnr, pixelsOff(web, cpu_later, 0.1f), start.psnr, pixelsOff(web, cpu_start, 0.1f),
      coverage(cpu));
  std::printf("first frame: %s\nstatus: %s\n", first_frame.c_str(), lineAfter(lines, "TIMINGS ").c_str());
  if (diff.psnr < 40.0) {
    writePng(dir_ + "/web_generator.png", web);
    writePng(dir_ + "/cpu_generator.png", cpu);
  }
  EXPECT_GE(diff.psnr, 40.0);
  EXPECT_GT(coverage(cpu), 0.02);  // the knot is in the frame
  EXPECT_LT(later.psnr, diff.psnr - 10.0);
  EXPECT_LT(start.psnr, diff.psnr - 10.0);
  // Every row of the model's capacity has a slot; the padding rows past num_points are culled.
  EXPECT_NE(lineAfter(lines, "TIMINGS ").find("2048 splats"), std::string::npos)
      << lineAfter(lines, "TIMINGS ");
}

// The Scaffold-style demo generator (models/anchors.onnx: a camera_matrix input, the contract's view matrix;
// float32 rows, RGB colours, num_points): the page gives the model the camera it draws (world_to_camera,
// column-major) and the decode pass turns RGB into the DC term. Against the engine's CPU frame of the same
// camera; the model run for another camera and drawn from this one is far from it (the camera input is the
// one drawn).
TEST_F(WebPage, NeuralGeneratorWithACameraInputMatchesTheCpuRenderer) {
  bool ready = false;
  prepare("web_generator_camera", &ready);
  if (!ready) return;
  const std::string model = std::string(SPLATFORGE_SOURCE_DIR) + "/models/anchors.onnx";
  exportAndServe(model, &ready);
  if (!ready) return;
  nn::GaussianGenerator gen(model);
  const int w = 256, h = 192;
  const nn::GeneratedGaussians first =
      gen.generate(0, lookAtCamera({0, 0, -3}, {0, 0, 0}, {0, -1, 0}, 50, w, h));
  const CloudBounds b = computeBounds(first.cloud);
  const Vec3 centre = 0.5f * (b.p01 + b.p99);
  const float radius = 0.5f * length(b.p99 - b.p01);
  Camera cam = lookAtCamera(centre + normalize(Vec3{-0.5f, -0.35f, -1.0f}) * (2.2f * radius), centre,
                            Vec3{0, -1, 0}, 50.0f, w, h);
  cam.cx = 0.53f * w;
  const Camera other = lookAtCamera(centre + normalize(Vec3{0.9f, 0.2f, -0.4f}) * (2.2f * radius), centre,
                                    Vec3{0, -1, 0}, 50.0f, w, h);
  std::string log;
  const std::vector<std::string> lines =
      browse("readback=1&timestamps=0&" + cameraQuery(cam), {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, w) << log.substr(0, 4000);
  const ImageRGBA cpu = generatorCpuFrame(gen, 0, cam);
  const nn::GeneratedGaussians for_other = gen.generate(0, other);
  RenderObject object(&for_other.cloud, Mat4{}, for_other.cloud.positions, for_other.covariances);
  const ImageRGBA cpu_other = renderCpu(std::span<const RenderObject>(&object, 1), cam, RenderSettings{});
  const ImageDiff diff = compareImages(web, cpu), wrong = compareImages(web, cpu_other);
  std::printf(
      "web page vs CPU renderer, the anchors generator (camera input, RGB) %dx%d: PSNR %.1f dB, max "
      "difference "
      "%.2e, %zu pixels off by more than 0.1; the model run for another camera and drawn from this one is "
      "%.1f dB "
      "from it (%zu pixels off); coverage %.3f\n",
      w, h, diff.psnr, diff.max_abs, pixelsOff(web, cpu, 0.1f), wrong.psnr, pixelsOff(web, cpu_other, 0.1f),
      coverage(cpu));
  EXPECT_GE(diff.psnr, 40.0);
  EXPECT_GT(coverage(cpu), 0.02);
  EXPECT_LT(wrong.psnr, diff.psnr - 10.0);
}

// A scene JSON with generator objects: the 4DGS demo (models/gaussians4d.onnx) twice, one object turned,
// scaled unevenly and moved, its model time offset and sped up ("time": 0.25, "speed": 1.5: model time 0.7 at
// t = 0.3), the other turned the other way and moved, at model time t; and a cloud of translucent splats
// stretched through the first knot. Exported (the model once, onnxruntime-web's files) and opened at t = 0.3
// for a fixed camera: one model loaded once in onnxruntime-web, run per object at its model time, each run
// decoded into the object's own slots, every object's splats in one sort. Against the engine's CPU frame of
// the same scene, camera and time (loadSceneJson of the exported scene, poseScene, renderCpu); the CPU frames
// at t = 0.35 and of the scene with the first knot's "time" and "speed" left out are far from it.
TEST_F(WebPage, SceneWithGeneratorObjectsMatchesTheCpuRenderer) {
  bool ready = false;
  prepare("web_generator_scene", &ready);
  if (!ready) return;
  const std::string src = dir_ + "/source";
  fs::create_directories(src + "/models");
  fs::copy_file(std::string(SPLATFORGE_SOURCE_DIR) + "/models/gaussians4d.onnx", src + "/models/knot.onnx");
  const double t = 0.3;
  // The first knot's place: turned 50 degrees about a slanted axis, scaled unevenly, moved.
  const float half = 25.0f * 3.14159265f / 180.0f;
  const Vec3 axis = normalize(Vec3{0.3f, 1.0f, 0.4f});
  const Quat q{std::cos(half), std::sin(half) * axis.x, std::sin(half) * axis.y, std::sin(half) * axis.z};
  const Vec3 scale{1.2f, 0.8f, 1.0f}, move{0.4f, -0.2f, 0.3f};
  const Mat4 knot_to_world = Mat4::fromLinearTranslation(rotationMatrix(q) * Mat3::diagonal(scale), move);
  nn::GaussianGenerator gen(src + "/models/knot.onnx");
  const nn::GeneratedGaussians at_t =
      gen.generate(0.25 + 1.5 * t, lookAtCamera({0, 0, -3}, {0, 0, 0}, {0, -1, 0}, 50, 320, 240));
  GaussianCloud world_knot;
  world_knot.resize(at_t.cloud.size(), 0);
  for (size_t i = 0; i < at_t.cloud.size(); ++i)
    world_knot.positions[i] = transformPoint(knot_to_world, at_t.cloud.positions[i]);
  const CloudBounds kb = computeBounds(world_knot);
  const Vec3 centre = 0.5f * (kb.p01 + kb.p99), extent = kb.p99 - kb.p01;
  const float radius = 0.5f * length(extent);
  // A slab of translucent splats through the first knot's middle.
  GaussianCloud cloud = test::randomCloud(3000, 1, 2727);
  for (float& o : cloud.opacities) o = 0.6f;
  saveSplats(cloud, src + "/slab.ply");
  const CloudBounds cb = computeBounds(loadSplats(src + "/slab.ply").cloud);
  const Vec3 cc = 0.5f * (cb.p01 + cb.p99), ce = cb.p99 - cb.p01;
  const Vec3 slab{1.1f * extent.x / ce.x, 1.1f * extent.y / ce.y, 0.2f * extent.z / ce.z};
  const Vec3 slab_move = centre - Vec3{slab.x * cc.x, slab.y * cc.y, slab.z * cc.z};
  std::string knot;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) knot += (knot.empty() ? "[" : ", ") + fmtFloat(knot_to_world.m[i][j]);
  knot += "]";
  const Vec3 second = centre + Vec3{1.2f * radius, 0.3f * radius, 0.5f * radius};
  const std::string scene = R"({
  "objects": [
    {"name": "knot", "generator": "models/knot.onnx", "time": 0.25, "speed": 1.5, "transform": )" +
                            knot + R"(},
    {"name": "slab", "file": "slab.ply", "transform": {"translation": )" +
                            jsonNumbers({slab_move.x, slab_move.y, slab_move.z}) + R"(, "scale": )" +
                            jsonNumbers({slab.x, slab.y, slab.z}) + R"(}},
    {"name": "other knot", "generator": "models/knot.onnx", "transform": {"translation": )" +
                            jsonNumbers({second.x, second.y, second.z}) +
                            R"(, "rotation": [0.9238795, 0, 0, -0.3826834], "scale": 0.7}}
  ]
})";
  writeText(src + "/knots.json", scene);
  exportAndServe(src + "/knots.json", &ready);
  if (!ready) return;
  for (const char* f :
       {"knots.json", "models/knot.onnx", "slab.ply", "neural_worker.js", "ort/ort.wasm.min.mjs",
        "ort/ort-wasm-simd-threaded.mjs", "ort/ort-wasm-simd-threaded.wasm"})
    EXPECT_TRUE(fs::is_regular_file(site_ + "/" + f)) << f;
  SceneLoadOptions strict;
  strict.strict = true;
  Scene native = loadSceneJson(site_ + "/knots.json", strict);  // the files the page reads
  ASSERT_EQ(native.objects.size(), 3u);
  const int w = 320, h = 240;
  const Vec3 look = centre + Vec3{0.6f * radius, 0.1f * radius, 0.2f * radius};
  Camera cam = lookAtCamera(look + normalize(Vec3{-0.45f, -0.35f, -1.0f}) * (3.2f * radius), look,
                            Vec3{0, -1, 0}, 50.0f, w, h);
  cam.cx = 0.47f * w, cam.cy = 0.53f * h;
  std::string log;
  const std::vector<std::string> lines =
      browse("readback=1&timestamps=0&t=" + fmtFloat(static_cast<float>(t)) + "&" + cameraQuery(cam),
             {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, w) << log.substr(0, 4000);
  ASSERT_EQ(web.height, h);
  const double t_page = static_cast<float>(t);  // the time the URL gives, as the page reads it
  const ImageRGBA cpu = sceneCpuFrame(native, t_page, cam);
  const ImageDiff diff = compareImages(web, cpu);
  // The slab cuts through the first knot: drawn object by object the frame would be far from the one sort.
  SceneFrame posed;
  poseScene(native, t_page, posed, false, &cam);
  ASSERT_EQ(posed.objects.size(), 3u);
  const ImageDiff apart = compareImages(objectByObject(posed.objects, cam, Vec3{0, 0, 0}), cpu);
  // The test can fail: the same page frame against the CPU frames of another scene time, and of the scene
  // without the first knot's model time offset and speed.
  const ImageRGBA cpu_later = sceneCpuFrame(native, t_page + 0.05, cam);
  native.objects[0].time = 0, native.objects[0].speed = 1;
  const ImageRGBA cpu_plain = sceneCpuFrame(native, t_page, cam);
  const ImageDiff later = compareImages(web, cpu_later), plain = compareImages(web, cpu_plain);
  std::printf(
      "web page vs CPU renderer, a scene of two 4DGS generator objects (one model) and a splat slab at t = "
      "%.2f, %dx%d: PSNR %.1f dB, max difference %.2e, alpha max difference %.2e, %zu pixels off by more "
      "than 0.1; the CPU frame at t = %.2f is %.1f dB from it (%zu pixels off), without the first knot's "
      "time and speed %.1f dB (%zu pixels off); coverage %.3f; object by object the CPU frame would be %.1f "
      "dB from the one sort\n",
      t, w, h, diff.psnr, diff.max_abs, alphaMaxDifference(web, cpu), pixelsOff(web, cpu, 0.1f), t + 0.05,
      later.psnr, pixelsOff(web, cpu_later, 0.1f), plain.psnr, pixelsOff(web, cpu_plain, 0.1f), coverage(cpu),
      apart.psnr);
  std::printf("first frame: %s\nstatus: %s\n", first_frame.c_str(), lineAfter(lines, "TIMINGS ").c_str());
  if (diff.psnr < 40.0) {
    writePng(dir_ + "/web_generator_scene.png", web);
    writePng(dir_ + "/cpu_generator_scene.png", cpu);
  }
  EXPECT_GE(diff.psnr, 40.0);
  EXPECT_GT(coverage(cpu), 0.05);
  EXPECT_LT(later.psnr, diff.psnr - 10.0);
  EXPECT_LT(plain.psnr, diff.psnr - 10.0);
  // Every generator object has the model's 2,048 slots, the slab its 3,000.
  EXPECT_NE(lineAfter(lines, "TIMINGS ").find(std::to_string(2 * 2048 + 3000) + " splats"), std::string::npos)
      << lineAfter(lines, "TIMINGS ");
}

// Models the page cannot run: an ONNX model that is not a generator (the demo U-Net, a post-processing model)
// and a generator cut in half. The page says what the engine says natively (the contract check compiled to
// WebAssembly, judging the model's inputs and outputs as onnxruntime-web lists them; the loader's words for
// bytes that are not a model), finishes its start without an image, and export-web refuses them in the same
// words; it also refuses a generator with a control input (the page has no "inputs" to give it).
TEST_F(WebPage, BadNeuralModelGivesTheEngineMessage) {
  bool ready = false;
  prepare("web_generator_bad", &ready);
  if (!ready) return;
  const std::string models = std::string(SPLATFORGE_SOURCE_DIR) + "/models";
  exportAndServe(models + "/gaussians4d.onnx", &ready);
  if (!ready) return;
  fs::copy_file(models + "/unet.onnx", site_ + "/unet.onnx");
  std::vector<uint8_t> bytes = readFile(models + "/gaussians4d.onnx");
  bytes.resize(bytes.size() / 2);
  writeFileAtomic(site_ + "/cut.onnx", bytes);
  for (const char* name : {"unet.onnx", "cut.onnx"}) {
    const std::string native = test::errorOf([&] { nn::GaussianGenerator g(site_ + "/" + name); });
    const std::string expected = siteRelative(native, site_);
    ASSERT_EQ(expected.rfind(std::string(name) + ": ", 0), 0u) << expected;
    std::string log;
    const std::vector<std::string> lines =
        browse("readback=1&size=64,48&scene=" + std::string(name), {"READY"}, &log);
    expectOnlyError(lines, log, expected);
    const test::CliRun r =
        test::cli("export-web \"" + site_ + "/" + name + "\" -o \"" + dir_ + "/refused_" + name + "\"");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("splatforge export-web: error: " + native), std::string::npos) << r.out;
  }
  const test::CliRun r =
      test::cli("export-web \"" + models + "/avatar.onnx\" -o \"" + dir_ + "/refused_avatar\"");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("control input 'pose'"), std::string::npos) << r.out;
  std::printf("export-web said: %s", r.out.c_str());
}

// A splat hull (cesium_man baked by `splatforge hull bake --budget 3000`) opened directly in the page in
// baked and sorted modes (?hull=) at a fixed off-axis camera with an off-centre principal point: the frame
// inputs made by the engine's buildHullFrame in the WebAssembly (the baked core's octagons with their lit
// colours in the mesh layer, the shell's gaussians with the sort depths of the camera's heading bucket; every
// splat a gaussian in sorted mode; the cel light) drawn by the WGSL passes. Against the CPU renderer's image
// of a scene holding the exported hull in that mode with "meshSamples": 1 (loadSceneJson, poseScene,
// renderCpu); the other mode's CPU image is printed and must be clearly further from the page's frame.
// cesium_man baked by `splatforge hull bake --budget 3000` into `src`/man.spl2 with its meta sidecar, made a
// hull with a translucent shell: the bake of a sampled surface is all core (opaque splats), so every third
// splat is made a translucent shell splat (the hull_core channel cleared, opacity 0.7) and the hull written
// again with its shell orders for the bake's belt (cloudToSpl2), beside the bake's meta sidecar under its new
// name.
void writeLayeredHull(const std::string& man, const std::string& src) {
  fs::create_directories(src);
  const test::CliRun bake =
      test::cli("hull bake \"" + man + "\" --budget 3000 -o \"" + src + "/baked.spl2\"");
  ASSERT_EQ(bake.code, 0) << bake.out;
  GaussianCloud layers = spl2ToCloud(loadSpl2(src + "/baked.spl2"));
  for (ExtraChannel& ch : layers.extras)
    if (ch.name == "hull_core")
      for (size_t i = 1; i < ch.values.size(); i += 3) ch.values[i] = 0, layers.opacities[i] = 0.7f;
  const Spl2Hull layered = cloudToSpl2(layers, 41.0f);
  ASSERT_GT(layered.shell.size(), 500u);
  ASSERT_GT(layered.core.size(), 500u);
  saveSpl2(layered, src + "/man.spl2");
  fs::copy_file(src + "/baked.meta.json", src + "/man.meta.json");
}

TEST_F(WebPage, SplatHullInBakedAndSortedModesMatchesTheCpuRenderer) {
  bool ready = false;
  prepare("web_hull", &ready);
  if (!ready) return;
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  const std::string src = dir_ + "/source";
  writeLayeredHull(man, src);
  if (HasFatalFailure()) return;
  exportAndServe(src + "/man.spl2", &ready);
  if (!ready) return;
  ASSERT_TRUE(fs::is_regular_file(site_ + "/man.spl2"));
  ASSERT_TRUE(fs::is_regular_file(site_ + "/man.meta.json"));  // export-web copies the sidecar
  const GaussianCloud rest = spl2ToCloud(loadSpl2(site_ + "/man.spl2"));
  const CloudBounds b = computeBounds(rest);
  const Vec3 centre = 0.5f * (b.p01 + b.p99);
  const float radius = 0.5f * length(b.p99 - b.p01);
  Camera cam = lookAtCamera(centre + normalize(Vec3{0.7f, 0.35f, 1.0f}) * (2.6f * radius), centre,
                            Vec3{0, 1, 0}, 45.0f, 320, 240);
  cam.cx += 13.0f, cam.cy -= 9.0f;  // an off-centre principal point
  std::map<std::string, ImageRGBA> cpu;
  for (const char* mode : {"baked", "sorted"}) {
    const std::string scene = site_ + "/ref_" + mode + ".json";
    writeText(scene, std::string(R"({"objects": [{"hull": "man.spl2", "mode": ")") + mode +
                         R"(", "meshSamples": 1}]})");
    SceneFrame frame;  // the objects and the mesh layer (the baked core), as the native frame draws them
    poseScene(loadSceneJson(scene), 0.0, frame, false, &cam);
    cpu[mode] = renderCpu(frame.objects, cam, RenderSettings{}, nullptr, frame.meshes);
  }
  const ImageDiff modes = compareImages(cpu["baked"], cpu["sorted"]);
  std::printf("CPU frames of the hull, baked vs sorted: PSNR %.1f dB\n", modes.psnr);
  for (const char* mode : {"baked", "sorted"}) {
    const char* other = std::string(mode) == "baked" ? "sorted" : "baked";
    std::string log;
    const std::vector<std::string> lines =
        browse("scene=man.spl2&readback=1&hull=" + std::string(mode) + "&" + cameraQuery(cam),
               {"IMAGE-END", "ERROR"}, &log);
    SF_REQUIRE_ADAPTER(lines, log);
    for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
    std::string first_frame;
    const ImageRGBA web = readbackImage(lines, &first_frame);
    ASSERT_EQ(web.width, cam.width) << log.substr(0, 4000);
    ASSERT_EQ(web.height, cam.height);
    const ImageDiff diff = compareImages(web, cpu[mode]), far = compareImages(web, cpu[other]);
    std::printf(
        "web page vs CPU renderer, the hull in %s mode %dx%d: PSNR %.1f dB, max difference %.2e, %zu pixels "
        "off by more than 0.1; the CPU frame in %s mode is %.1f dB from it (%zu pixels off); coverage "
        "%.3f\n",
        mode, cam.width, cam.height, diff.psnr, diff.max_abs, pixelsOff(web, cpu[mode], 0.1f), other,
        far.psnr, pixelsOff(web, cpu[other], 0.1f), coverage(cpu[mode]));
    std::printf("first frame: %s\n", first_frame.c_str());
    if (diff.psnr < 40.0) {
      writePng(dir_ + "/web_" + mode + ".png", web);
      writePng(dir_ + "/cpu_" + mode + ".png", cpu[mode]);
    }
    EXPECT_GE(diff.psnr, 40.0);
    EXPECT_LT(far.psnr, diff.psnr - 5.0);  // the mode asked for is the mode drawn
    EXPECT_GT(coverage(cpu[mode]), 0.05);
  }

  // The page's own camera turned by an orbit drag (?input=): the worker remakes the frame inputs for the
  // camera drawn (its heading bucket's shell order and the light). Against the CPU frame at the page's last
  // camera; the frame inputs made for the camera before the drag and drawn from the last one are printed and
  // must be clearly further.
  std::string log;
  const std::vector<std::string> lines = browse(
      "scene=man.spl2&readback=1&size=320,240&input=drag:1:0,drag:400:-20", {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  const std::vector<PageCamera> cams = pageCameras(lines);
  ASSERT_EQ(cams.size(), 2u) << log.substr(0, 4000);
  ASSERT_EQ(cams[1].cam.width, 320);
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, 320);
  const Scene baked = loadSceneJson(site_ + "/ref_baked.json");
  auto frameOf = [&](const Camera& made_for, const Camera& drawn) {
    SceneFrame frame;
    poseScene(baked, 0.0, frame, false, &made_for);
    return renderCpu(frame.objects, drawn, RenderSettings{}, nullptr, frame.meshes);
  };
  const ImageDiff moved = compareImages(web, frameOf(cams[1].cam, cams[1].cam));
  const ImageDiff stale = compareImages(web, frameOf(cams[0].cam, cams[1].cam));
  std::printf(
      "web page vs CPU renderer, the hull in baked mode after an orbit drag: PSNR %.1f dB, max difference "
      "%.2e; the frame inputs of the camera before the drag, drawn from the last one, are %.1f dB from it\n",
      moved.psnr, moved.max_abs, stale.psnr);
  EXPECT_GE(moved.psnr, 40.0);
  EXPECT_LT(stale.psnr, moved.psnr - 5.0);  // the frame inputs follow the camera
}

// A scene of two static hull objects (the translucent-shell hull above, one baked and one sorted, each with
// its own transform and heading) and a splat object standing inside the baked one, at a fixed off-axis
// camera: the worker's hullFrame with each object's transform times its heading, the shells and the splats in
// one sort, the baked core's octagons depth-composited with them in the mesh layer. Against the CPU
// renderer's frame of the exported scene with "meshSamples": 1 (loadSceneJson, poseScene, renderCpu); the
// frames of the scene with the headings swapped and with the sorted hull's transform dropped are printed and
// must be clearly further from the page's frame.
TEST_F(WebPage, SceneWithStaticHullObjectsMatchesTheCpuRenderer) {
  bool ready = false;
  prepare("web_scene_hulls", &ready);
  if (!ready) return;
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  const std::string src = dir_ + "/source";
  writeLayeredHull(man, src);
  if (HasFatalFailure()) return;
  const GaussianCloud rest = spl2ToCloud(loadSpl2(src + "/man.spl2"));
  const CloudBounds b = computeBounds(rest);
  const Vec3 centre = 0.5f * (b.p01 + b.p99);
  const float radius = 0.5f * length(b.p99 - b.p01);
  // The splats: a random cloud scaled to half the hull's radius, centred where the baked hull's centre lands
  // (its heading of 30 degrees turns it about +y; its transform is the identity).
  const GaussianCloud blob = test::randomCloud(400, 1, 7);
  const CloudBounds bb = computeBounds(blob);
  const float s = 0.5f * radius / std::max(1e-6f, 0.5f * length(bb.p99 - bb.p01));
  const float a = 30.0f * std::numbers::pi_v<float> / 180.0f;
  const Vec3 at{std::cos(a) * centre.x + std::sin(a) * centre.z, centre.y,
                -std::sin(a) * centre.x + std::cos(a) * centre.z};
  const Vec3 t = at - s * (0.5f * (bb.p01 + bb.p99));
  saveSplats(blob, src + "/blob.ply");
  const std::string splats = R"({"file": "blob.ply", "transform": {"translation": [)" + fmtFloat(t.x) + ", " +
                             fmtFloat(t.y) + ", " + fmtFloat(t.z) + R"(], "scale": )" + fmtFloat(s) + "}}";
  const std::string moved = fmtFloat(1.3f * radius) + ", 0, " + fmtFloat(-0.6f * radius);
  auto sceneText = [&](const char* heading_a, const char* heading_b, bool transform_b) {
    return std::string(R"({"objects": [{"name": "a", "hull": "man.spl2", "mode": "baked", "heading": )") +
           heading_a + R"(, "meshSamples": 1}, )" + splats +
           R"(, {"name": "b", "hull": "man.spl2", "mode": "sorted", "heading": )" + heading_b +
           (transform_b ? R"(, "transform": {"translation": [)" + moved + R"(], "scale": 0.8})" : "") +
           R"(, "meshSamples": 1}]})";
  };
  writeText(src + "/hulls.json", sceneText("30", "-70", true));
  exportAndServe(src + "/hulls.json", &ready);
  if (!ready) return;
  ASSERT_TRUE(fs::is_regular_file(site_ + "/man.spl2"));
  ASSERT_TRUE(fs::is_regular_file(site_ + "/man.meta.json"));  // export-web copies the sidecar, once
  ASSERT_TRUE(fs::is_regular_file(site_ + "/blob.ply"));
  const Vec3 middle = 0.5f * (at + Vec3{1.3f * radius, 0, -0.6f * radius} + 0.8f * centre);
  Camera cam = lookAtCamera(middle + normalize(Vec3{0.6f, 0.4f, 1.0f}) * (3.4f * radius), middle,
                            Vec3{0, 1, 0}, 45.0f, 320, 240);
  cam.cx += 11.0f, cam.cy -= 7.0f;  // an off-centre principal point
  auto cpuFrame = [&](const std::string& name, const std::string& text) {
    writeText(site_ + "/" + name, text);
    const Scene scene = loadSceneJson(site_ + "/" + name);  // holds the splat object's cloud the frame draws
    SceneFrame frame;
    poseScene(scene, 0.0, frame, false, &cam);
    return renderCpu(frame.objects, cam, RenderSettings{}, nullptr, frame.meshes);
  };
  const ImageRGBA cpu = cpuFrame("hulls.json", sceneText("30", "-70", true));
  const ImageRGBA swapped = cpuFrame("ref_swapped.json", sceneText("-70", "30", true));
  const ImageRGBA dropped = cpuFrame("ref_dropped.json", sceneText("30", "-70", false));
  std::string log;
  const std::vector<std::string> lines =
      browse("scene=hulls.json&readback=1&" + cameraQuery(cam), {"IMAGE-END", "ERROR"}, &log);
  SF_REQUIRE_ADAPTER(lines, log);
  for (const std::string& l : lines) ASSERT_NE(l.rfind("ERROR", 0), 0u) << l;
  std::string first_frame;
  const ImageRGBA web = readbackImage(lines, &first_frame);
  ASSERT_EQ(web.width, cam.width) << log.substr(0, 4000);
  ASSERT_EQ(web.height, cam.height);
  const ImageDiff diff = compareImages(web, cpu), far_swapped = compareImages(web, swapped),
                  far_dropped = compareImages(web, dropped);
  std::printf(
      "web page vs CPU renderer, two hull objects (baked, sorted) and a splat object %dx%d: PSNR %.1f dB, "
      "max "
      "difference %.2e, %zu pixels off by more than 0.1, coverage %.3f; the CPU frame with the headings "
      "swapped is %.1f dB from it, with the sorted hull's transform dropped %.1f dB\n",
      cam.width, cam.height, diff.psnr, diff.max_abs, pixelsOff(web, cpu, 0.1f), coverage(cpu),
      far_swapped.psnr, far_dropped.psnr);
  std::printf("first frame: %s\n", first_frame.c_str());
  if (diff.psnr < 40.0) {
    writePng(dir_ + "/web.png", web);
    writePng(dir_ + "/cpu.png", cpu);
  }
  EXPECT_GE(diff.psnr, 40.0);
  EXPECT_LT(far_swapped.psnr, diff.psnr - 5.0);  // each object's heading is its own
  EXPECT_LT(far_dropped.psnr, diff.psnr - 5.0);  // each object's transform places it
  EXPECT_GT(coverage(cpu), 0.05);

  // A hull object naming a file that is not a hull: the hull loader's words, as the scene loader gives them
  // (its path as the page names it), and the page finishes its start.
  writeText(site_ + "/bad_hull.json", R"({"objects": [{"name": "bad", "hull": "blob.ply"}]})");
  std::string native;
  SceneLoadOptions strict;  // the page is the strict loader
  strict.strict = true;
  try {
    loadSceneJson(site_ + "/bad_hull.json", strict);
  } catch (const std::exception& e) {
    native = e.what();
  }
  for (size_t k; (k = native.find(site_ + "/")) != std::string::npos;) native.erase(k, site_.size() + 1);
  ASSERT_EQ(native.rfind("bad_hull.json: objects[0] (bad): blob.ply: ", 0), 0u) << native;
  log.clear();
  expectOnlyError(browse("readback=1&size=64,48&scene=bad_hull.json", {"READY"}, &log), log, native);
}

}  // namespace
}  // namespace sf
