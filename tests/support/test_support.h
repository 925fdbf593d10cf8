// Helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/gaussian_cloud.h"
#include "core/image.h"
#include "render/camera.h"
#include "render/mesh.h"

namespace sf::test {

// Directory of the shared real-data assets: $SPLATFORGE_ASSETS, else <source>/../shared/assets.
std::string assetsDir();
// Full path of an asset (e.g. "splats/biker.spz"); empty when the file does not exist.
std::string assetPath(const std::string& relative);

// True when the tests run in CI (CI=true or CI=1): there, a missing asset, Vulkan device or binary is an
// error, not a skip, so that a test cannot pass by not running.
bool strictCi();

// Skips the current test with a message, or fails it under CI (see strictCi).
#define SF_SKIP_OR_FAIL(message)                                                                             \
  do {                                                                                                       \
    if (::sf::test::strictCi()) GTEST_FAIL() << message << " [CI=true: a test that cannot run is an error]"; \
    GTEST_SKIP() << message;                                                                                 \
  } while (0)

// Skips (fails under CI) the current test with a clear message when an asset is absent; returns its path.
#define SF_REQUIRE_ASSET(var, relative)                                                  \
  std::string var = ::sf::test::assetPath(relative);                                     \
  if (var.empty())                                                                       \
  SF_SKIP_OR_FAIL("asset " << relative << " not found under " << ::sf::test::assetsDir() \
                           << " (set SPLATFORGE_ASSETS to the shared assets directory)")

// A fresh empty directory under the build tree for one test's files.
std::string tempDir(const std::string& test_name);

// The message of the sf::Error `f` throws, or "(no error)"; other exceptions propagate.
std::string errorOf(const std::function<void()>& f);

// A random, valid cloud: positions in [-1, 1]^3, scales in [0.005, 0.2], unit rotations, opacities in
// [0.05, 0.95], SH coefficients in [-0.5, 0.5] (DC in [-1.5, 1.5]). Deterministic for a seed.
GaussianCloud randomCloud(size_t n, int sh_degree, uint32_t seed);

// A mesh that owns its arrays; view() gives the renderers' RenderMesh over them.
struct TestMesh {
  std::vector<Vec3> positions, normals;
  std::vector<std::array<float, 2>> uvs;
  std::vector<std::array<float, 4>> colors;
  std::vector<uint32_t> indices;
  MeshTexture texture;
  std::array<float, 4> base_color{1, 1, 1, 1};
  RenderMesh view(const Mat4& object_to_world = {}) const;
};
// Axis-aligned rectangle in the plane z = centre.z, facing -z, two triangles, with uvs over [0, 1]^2 and
// a normal of (0, 0, -1); no texture.
TestMesh quadMesh(Vec3 centre, float half_width, float half_height);
// UV sphere with normals, per-vertex colours and a checker texture (8x8 texels, REPEAT).
TestMesh sphereMesh(Vec3 centre, float radius, int segments, uint32_t seed);

// Camera at the origin looking down +z, principal point at the image centre.
Camera pinholeCamera(int w = 64, int h = 48, float f = 40.0f);
// The quad (quadMesh) whose corners project to pixel coordinates (x0, y0) and (x1, y1) of `cam`, in the plane
// at depth z facing the camera: edges on pixel boundaries for whole coordinates.
TestMesh pixelQuad(const Camera& cam, float x0, float y0, float x1, float y1, float z);

// Point i of n on the unit sphere's Fibonacci lattice (the hull tests' splat layouts): its outward normal and
// two tangents completing an orthonormal frame.
struct SphereFrame {
  Vec3 normal, t0, t1;
};
SphereFrame fibonacciSphereFrame(size_t i, size_t n);

// Golden image check: compares `image` with the PNG at tests/golden/<name>.png. On failure writes
// <name>.actual.png and <name>.diff.png into the build directory and reports PSNR, max difference and
// the fraction of pixels over 2/255. Set SPLATFORGE_UPDATE_GOLDEN=1 to (re)write the golden file.
struct GoldenTolerance {
  double min_psnr = 40.0;           // dB over RGB
  double max_fraction_over = 0.01;  // pixels whose max channel difference exceeds 2/255
};
::testing::AssertionResult matchesGolden(const std::string& name, const ImageRGBA& image,
                                         GoldenTolerance tolerance);

// Encodes bytes as base64 with '=' padding (data URIs of hand-written glTF files).
std::string encodeBase64(const std::vector<uint8_t>& bytes);
// Decodes base64 text (data URIs); characters outside the alphabet, padding included, are skipped.
std::vector<uint8_t> decodeBase64(const std::string& text);

// Runs the splatforge binary with arguments; returns the exit code and captures stdout+stderr.
int runCli(const std::string& args, std::string* output);
// The same as one value: the exit code and stdout and stderr together.
struct CliRun {
  int code = -1;
  std::string out;
};
CliRun cli(const std::string& args);

}  // namespace sf::test
