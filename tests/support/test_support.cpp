#include "support/test_support.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>

#include "io/image_io.h"

namespace sf::test {

namespace fs = std::filesystem;

std::string assetsDir() {
  if (const char* env = std::getenv("SPLATFORGE_ASSETS")) return env;
  return (fs::path(SPLATFORGE_SOURCE_DIR) / ".." / "shared" / "assets").lexically_normal().string();
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
  uint64_t state = 0x9e3779b97f4a7c15ull ^ seed;
  auto uniform = [&](float lo, float hi) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    float u = static_cast<float>(state >> 40) / 16777216.0f;
    return lo + (hi - lo) * u;
  };
  GaussianCloud c;
  c.resize(n, sh_degree);
  for (size_t i = 0; i < n; ++i) {
    c.positions[i] = {uniform(-1, 1), uniform(-1, 1), uniform(-1, 1)};
    c.scales[i] = {uniform(0.005f, 0.2f), uniform(0.005f, 0.2f), uniform(0.005f, 0.2f)};
    c.rotations[i] = normalize(Quat{uniform(-1, 1), uniform(-1, 1), uniform(-1, 1), uniform(-1, 1)});
    c.opacities[i] = uniform(0.05f, 0.95f);
    auto sh = c.shOf(i);
    for (size_t k = 0; k < sh.size(); ++k) sh[k] = k < 3 ? uniform(-1.5f, 1.5f) : uniform(-0.5f, 0.5f);
  }
  return c;
}

::testing::AssertionResult matchesGolden(const std::string& name, const ImageRGBA& image, GoldenTolerance tol) {
  fs::path golden = fs::path(SPLATFORGE_SOURCE_DIR) / "tests" / "golden" / (name + ".png");
  if (const char* update = std::getenv("SPLATFORGE_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    writePng(golden.string(), image);
    return ::testing::AssertionSuccess() << "golden " << golden << " rewritten";
  }
  if (!fs::exists(golden)) return ::testing::AssertionFailure() << "golden image " << golden << " is missing";
  ImageRGBA expected = readPng(golden.string());
  if (expected.width != image.width || expected.height != image.height)
    return ::testing::AssertionFailure() << "size " << image.width << "x" << image.height << " differs from golden "
                                         << expected.width << "x" << expected.height;
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
  return ::testing::AssertionFailure() << "golden " << name << ": PSNR " << d.psnr << " dB (need >= " << tol.min_psnr
                                       << "), max abs " << d.max_abs << ", fraction over 2/255 " << d.fraction_over
                                       << " (allowed " << tol.max_fraction_over << "); wrote " << (out_dir / name).string()
                                       << ".{actual,diff}.png";
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

}  // namespace sf::test
