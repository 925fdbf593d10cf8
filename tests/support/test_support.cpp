#include "support/test_support.h"

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "io/image_io.h"
#include "scene/synthetic.h"

namespace sf::test {

namespace fs = std::filesystem;

// Every Vulkan context of a test process, and of the splatforge processes the CLI tests start (they inherit
// the environment), runs with the validation layer and its synchronization validation
// (gpu::Context, SPLATFORGE_VALIDATION=1): a validation error fails the test. SPLATFORGE_VALIDATION=0 in the
// environment turns it off for a run.
[[maybe_unused]] const bool kValidationEverywhere = [] {
  return ::setenv("SPLATFORGE_VALIDATION", "1", 0) == 0;
}();

std::string assetsDir() {
  if (const char* env = std::getenv("SPLATFORGE_ASSETS")) return env;
  return (fs::path(SPLATFORGE_SOURCE_DIR) / ".." / "shared" / "assets").lexically_normal().string();
}

bool strictCi() {
  const char* ci = std::getenv("CI");
  return ci && (std::string(ci) == "true" || std::string(ci) == "1");
}

std::string assetPath(const std::string& relative) {
  fs::path p = fs::path(assetsDir()) / relative;
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? p.string() : std::string();
}

std::string tempDir(const std::string& test_name) {
  fs::path p = fs::current_path() / "test-output" / test_name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

GaussianCloud randomCloud(size_t n, int sh_degree, uint32_t seed) {
  return makeRandomCloud(n, sh_degree, seed);
}

RenderMesh TestMesh::view(const Mat4& object_to_world) const {
  RenderMesh m;
  m.positions = positions;
  m.normals = normals;
  m.uvs = uvs;
  m.colors = colors;
  m.indices = indices;
  m.base_color = base_color;
  m.texture = texture.rgba.empty() ? nullptr : &texture;
  m.object_to_world = object_to_world;
  return m;
}

Camera pinholeCamera(int w, int h, float f) {
  Camera c;
  c.width = w, c.height = h;
  c.fx = c.fy = f;
  c.cx = 0.5f * static_cast<float>(w), c.cy = 0.5f * static_cast<float>(h);
  return c;
}

TestMesh pixelQuad(const Camera& cam, float x0, float y0, float x1, float y1, float z) {
  auto back = [&](float u, float v) { return Vec3{(u - cam.cx) * z / cam.fx, (v - cam.cy) * z / cam.fy, z}; };
  const Vec3 a = back(x0, y0), b = back(x1, y1);
  return quadMesh((a + b) * 0.5f, 0.5f * (b.x - a.x), 0.5f * (b.y - a.y));
}

SphereFrame fibonacciSphereFrame(size_t i, size_t n) {
  const float z = 1.0f - 2.0f * (static_cast<float>(i) + 0.5f) / static_cast<float>(n);
  const float r = std::sqrt(1.0f - z * z), phi = static_cast<float>(i) * 2.39996323f;
  const Vec3 nrm{r * std::cos(phi), z, r * std::sin(phi)};
  const Vec3 t0 = normalize(cross(std::abs(nrm.y) < 0.9f ? Vec3{0, 1, 0} : Vec3{1, 0, 0}, nrm));
  return {nrm, t0, cross(nrm, t0)};
}

TestMesh quadMesh(Vec3 c, float hw, float hh) {
  TestMesh m;
  m.positions = {c + Vec3{-hw, -hh, 0}, c + Vec3{hw, -hh, 0}, c + Vec3{hw, hh, 0}, c + Vec3{-hw, hh, 0}};
  m.normals.assign(4, Vec3{0, 0, -1});
  m.uvs = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
  m.indices = {0, 1, 2, 0, 2, 3};
  return m;
}

TestMesh sphereMesh(Vec3 c, float r, int segments, uint32_t seed) {
  TestMesh m;
  const int rings = segments / 2;
  uint32_t state = seed * 2654435761u + 1u;
  auto next = [&]() {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f;
  };
  for (int i = 0; i <= rings; ++i)
    for (int j = 0; j <= segments; ++j) {
      const float theta = 3.14159265f * static_cast<float>(i) / static_cast<float>(rings);
      const float phi = 6.2831853f * static_cast<float>(j) / static_cast<float>(segments);
      const Vec3 n{std::sin(theta) * std::cos(phi), std::cos(theta), std::sin(theta) * std::sin(phi)};
      m.positions.push_back(c + n * r);
      m.normals.push_back(n);
      m.uvs.push_back({static_cast<float>(j) / static_cast<float>(segments) * 2.0f,
                       static_cast<float>(i) / static_cast<float>(rings)});
      m.colors.push_back({0.5f + 0.5f * next(), 0.5f + 0.5f * next(), 0.5f + 0.5f * next(), 1.0f});
    }
  for (int i = 0; i < rings; ++i)
    for (int j = 0; j < segments; ++j) {
      const uint32_t a = static_cast<uint32_t>(i * (segments + 1) + j),
                     b = a + static_cast<uint32_t>(segments + 1);
      m.indices.insert(m.indices.end(), {a, b, a + 1, a + 1, b, b + 1});
    }
  m.texture.width = m.texture.height = 8;
  m.texture.rgba.resize(8 * 8 * 4);
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x) {
      uint8_t* p = &m.texture.rgba[static_cast<size_t>((y * 8 + x) * 4)];
      const bool dark = (x + y) % 2 == 0;
      p[0] = dark ? 60 : 230, p[1] = dark ? 90 : 200, p[2] = dark ? 160 : 120, p[3] = 255;
    }
  m.base_color = {0.9f, 0.95f, 1.0f, 1.0f};
  return m;
}

std::string encodeBase64(const std::vector<uint8_t>& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint32_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint32_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= bytes[i + 2];
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? k[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? k[v & 63] : '=';
  }
  return out;
}

std::vector<uint8_t> decodeBase64(const std::string& text) {
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+'             ? 62
            : c == '/'             ? 63
                                   : -1;
    if (v < 0) continue;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  return out;
}

::testing::AssertionResult matchesGolden(const std::string& name, const ImageRGBA& image,
                                         GoldenTolerance tol) {
  fs::path golden = fs::path(SPLATFORGE_SOURCE_DIR) / "tests" / "golden" / (name + ".png");
  if (const char* update = std::getenv("SPLATFORGE_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    writePng(golden.string(), image);
    return ::testing::AssertionSuccess() << "golden " << golden << " rewritten";
  }
  if (!fs::exists(golden)) return ::testing::AssertionFailure() << "golden image " << golden << " is missing";
  ImageRGBA expected = readPng(golden.string());
  if (expected.width != image.width || expected.height != image.height)
    return ::testing::AssertionFailure()
           << "size " << image.width << "x" << image.height << " differs from golden " << expected.width
           << "x" << expected.height;
  // Compare the 8-bit quantised render with the 8-bit golden.
  ImageRGBA quantised(image.width, image.height);
  std::vector<uint8_t> rgb = toRgb8(image);
  for (size_t i = 0, n = rgb.size() / 3; i < n; ++i) {
    for (size_t c = 0; c < 3; ++c) quantised.pixels[i * 4 + c] = static_cast<float>(rgb[i * 3 + c]) / 255.0f;
    quantised.pixels[i * 4 + 3] = 1.0f;
  }
  ImageDiff d = compareImages(quantised, expected);
  if (d.psnr >= tol.min_psnr && d.fraction_over <= tol.max_fraction_over)
    return ::testing::AssertionSuccess() << "PSNR " << d.psnr << " dB";
  fs::path out_dir = fs::current_path() / "test-output" / "golden";
  fs::create_directories(out_dir);
  writePng((out_dir / (name + ".actual.png")).string(), image);
  writePng((out_dir / (name + ".diff.png")).string(), diffImage(quantised, expected));
  return ::testing::AssertionFailure()
         << "golden " << name << ": PSNR " << d.psnr << " dB (need >= " << tol.min_psnr << "), max abs "
         << d.max_abs << ", fraction over 2/255 " << d.fraction_over << " (allowed " << tol.max_fraction_over
         << "); wrote " << (out_dir / name).string() << ".{actual,diff}.png";
}

int runCli(const std::string& args, std::string* output) {
  std::string cmd = std::string("\"") + SPLATFORGE_BINARY + "\" " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int status = pclose(p);
  if (output) *output = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

CliRun cli(const std::string& args) {
  CliRun r;
  r.code = runCli(args, &r.out);
  return r;
}

}  // namespace sf::test
