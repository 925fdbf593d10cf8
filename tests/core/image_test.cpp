// SSIM (core/image.h) against closed forms and against an SSIM written apart from ours in NumPy
// (tests/core/ssim_reference.py: the 2D window summed directly at every position, where the library filters
// separably): its values for formula images pasted here, and its values for random images computed at test
// time.
#include "core/image.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <random>
#include <string>

#include "io/image_io.h"
#include "support/test_support.h"

namespace sf {
namespace {

// The formula images of ssim_reference.py's fixture(): computed in double, stored as float.
ImageRGBA formulaImage(int width, int height, int which) {
  ImageRGBA im(width, height);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) {
        double v = 0.5 + 0.45 * std::sin(0.37 * x + 0.23 * y + c);
        if (which == 1) v += 0.2 * std::cos(0.9 * x - 0.55 * y + 2 * c) - 0.05 * c;
        im.at(x, y)[c] = static_cast<float>(v);
      }
  return im;
}

ImageRGBA randomImage(int width, int height, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  ImageRGBA im(width, height);
  for (float& v : im.pixels) v = u(rng);
  return im;
}

ImageRGBA constantImage(int width, int height, const float rgb[3]) {
  ImageRGBA im(width, height);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) im.at(x, y)[c] = rgb[c];
  return im;
}

TEST(Ssim, IdenticalImagesGiveExactlyOne) {
  for (auto [w, h] : {std::pair{40, 30}, std::pair{11, 11}, std::pair{3, 5}}) {
    const ImageRGBA a = randomImage(w, h, 7);
    EXPECT_EQ(ssim(a, a), 1.0) << w << "x" << h;
  }
}

// Constant images a = p and b = q (per channel): every window has the means p and q and no variance or
// covariance, so the structure term is C2 / C2 = 1 and SSIM = (2 p q + C1) / (p^2 + q^2 + C1), C1 = 1e-4.
TEST(Ssim, ConstantImagesHaveTheClosedForm) {
  const float p[3] = {0.2f, 0.5f, 1.0f}, q[3] = {0.7f, 0.5f, 0.0f};
  const ImageRGBA a = constantImage(20, 16, p), b = constantImage(20, 16, q);
  // By hand: red (2 * 0.2 * 0.7 + 1e-4) / (0.04 + 0.49 + 1e-4) = 0.2801 / 0.5301; green p = q: 1; blue
  // (0 + 1e-4) / (1 + 0 + 1e-4) = 1e-4 / 1.0001; SSIM is their mean.
  const double expected = (0.2801 / 0.5301 + 1.0 + 1e-4 / 1.0001) / 3.0;
  EXPECT_NEAR(ssim(a, b), expected, 1e-7);  // p and q are floats: 0.2f is 0.2 to 3e-9
  EXPECT_NEAR(ssim(a, b), 0.5094, 1e-4);
  // Values are clamped to [0, 1] first: 1.5 is 1 and -0.5 is 0.
  const float p_out[3] = {0.2f, 0.5f, 1.5f}, q_out[3] = {0.7f, 0.5f, -0.5f};
  EXPECT_EQ(ssim(constantImage(20, 16, p_out), constantImage(20, 16, q_out)), ssim(a, b));
  // A window larger than the image (7 x 5 pixels: a 5x5 window) keeps the closed form.
  EXPECT_NEAR(ssim(constantImage(7, 5, p), constantImage(7, 5, q)), expected, 1e-7);
}

// Values printed by `python3 tests/core/ssim_reference.py --fixtures` (NumPy, float64 on the float32 images).
TEST(Ssim, MatchesTheNumpyReferenceOnFormulaImages) {
  EXPECT_NEAR(ssim(formulaImage(24, 17, 0), formulaImage(24, 17, 1)), 0.766773452217,
              1e-9);  // 14 x 7 windows of 11x11
  EXPECT_NEAR(ssim(formulaImage(7, 9, 0), formulaImage(7, 9, 1)), 0.745872277019,
              1e-9);  // 1 x 3 windows of 7x7
}

// Channel layouts: a 4-channel image (alpha ignored) against the same RGB packed 3 floats a pixel.
TEST(Ssim, ReadsAnyChannelCount) {
  const ImageRGBA a = randomImage(30, 20, 1), b = randomImage(30, 20, 2);
  std::vector<float> b3(3 * 30 * 20);
  for (size_t i = 0; i < 30 * 20; ++i)
    for (size_t c = 0; c < 3; ++c) b3[3 * i + c] = b.pixels[4 * i + c];
  EXPECT_EQ(ssim(a.pixels.data(), 4, b3.data(), 3, 30, 20), ssim(a, b));
}

// Random images (unrelated, and one a noisy copy of the other; 31x23, and 6x13 where the window is 5x5)
// written as .npy and scored by ssim_reference.py under the interpreter the Python module is built for
// (NumPy).
TEST(Ssim, MatchesTheNumpyReferenceOnRandomImages) {
  const std::string python = SF_NUMPY_PYTHON;
  if (python.empty() || std::system(("\"" + python + "\" -c 'import numpy' 2>/dev/null").c_str()) != 0)
    SF_SKIP_OR_FAIL(
        "no Python 3 with NumPy (python3-numpy, scripts/setup.sh) for tests/core/ssim_reference.py");
  const std::string dir = test::tempDir("ssim_reference");
  int case_no = 0;
  for (auto [w, h] : {std::pair{31, 23}, std::pair{6, 13}}) {
    const ImageRGBA a = randomImage(w, h, 11);
    ImageRGBA noisy = a;
    std::mt19937 rng(5);
    std::normal_distribution<float> n(0.0f, 0.1f);
    for (float& v : noisy.pixels) v += n(rng);  // some past [0, 1]: both clamp
    for (const ImageRGBA* b : std::initializer_list<const ImageRGBA*>{&noisy, nullptr}) {
      const ImageRGBA other = b ? *b : randomImage(w, h, 12);
      const std::string pa = dir + "/a" + std::to_string(case_no) + ".npy",
                        pb = dir + "/b" + std::to_string(case_no) + ".npy";
      ++case_no;
      writeNpy(pa, a);
      writeNpy(pb, other);
      const std::string cmd =
          "\"" + python + "\" \"" + SF_SSIM_REFERENCE + "\" \"" + pa + "\" \"" + pb + "\"";
      FILE* pipe = popen(cmd.c_str(), "r");
      ASSERT_NE(pipe, nullptr) << cmd;
      char buf[256] = {};
      const size_t got = fread(buf, 1, sizeof buf - 1, pipe);
      const int status = pclose(pipe);
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0 && got > 0) << cmd << "\n" << buf;
      const double reference = std::stod(buf), ours = ssim(a, other);
      std::printf("%dx%d %s: ours %.12f, NumPy %.12f\n", w, h, b ? "noisy copy" : "unrelated", ours,
                  reference);
      EXPECT_NEAR(ours, reference, 1e-9) << w << "x" << h;
    }
  }
}

}  // namespace
}  // namespace sf
