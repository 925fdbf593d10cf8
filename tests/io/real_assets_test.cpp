// Real-capture tests: the "biker" capture in three files under $SPLATFORGE_ASSETS (or ../shared/assets):
// splats/biker.ply, splats/biker.compressed.ply and splats/biker.spz. Each test skips with a message when
// its asset is absent.
//
// What is tested: each file decodes to exactly 152,746 gaussians of SH degree 0 and is detected as its
// format (the SPZ as version 4); the rows are in the same order in all three (biker.ply is a
// decompression of the compressed PLY, and the SPZ was made from the same rows), so every row is compared.
// The measured maxima are printed ("[ measured ]" lines) and recorded as test properties.
//
// Tolerances, compared on all rows (ln-scale is ln of the linear scale, opacity is activated):
//  compressed PLY vs PLY  the same quantised values, decoded by two programs in float: position 1e-5,
//                         ln-scale 1e-4, DC 1e-4, opacity 1e-5, 1-|dot| < 1e-5 (|dot| > 0.99999).
//                         (docs/formats/compressed-ply.md measured ~1e-7 for all of these.)
//  SPZ vs PLY             SPZ's own quantisation of the PLY values: position 2^-13 + 1e-6 (half a
//                         12-fractional-bit step), ln-scale 1/32 + 1e-5 (half of 1/16), DC
//                         0.5/(0.15*255) + 1e-5, opacity 0.5/255 + 1e-6, rotation 1-|dot| < 1e-4
//                         (smallest three with 9-bit magnitudes: < 5e-6 in theory).
//  SPZ re-encoded         writeSpz of the decoded SPZ cloud reads back to the same quantised values:
//                         positions exact, everything else within 1e-5 (float rounding), 1-|dot| < 1e-6.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/ply.h"
#include "io/spz.h"
#include "support/test_support.h"

namespace sf {
namespace {

constexpr size_t kBikerSplats = 152746;

// Each asset is decoded once per process.
const LoadedSplats& load(const std::string& path) {
  static std::map<std::string, LoadedSplats> cache;
  auto it = cache.find(path);
  if (it == cache.end()) it = cache.emplace(path, loadSplats(path)).first;
  return it->second;
}

struct Tolerance {
  double position, log_scale, opacity, dc, rotation;  // rotation: largest 1 - |<q_a, q_b>|
};

struct Maxima {
  double position = 0, log_scale = 0, opacity = 0, dc = 0, rotation = 0;
  size_t position_at = 0, log_scale_at = 0, opacity_at = 0, dc_at = 0, rotation_at = 0;
};

void raise(double err, size_t i, double* worst, size_t* at) {
  if (std::isnan(err)) err = std::numeric_limits<double>::infinity();
  if (err > *worst) *worst = err, *at = i;
}

// Row-by-row differences of two degree-0 clouds of the same size.
Maxima measure(const GaussianCloud& a, const GaussianCloud& b) {
  Maxima m;
  for (size_t i = 0; i < a.size(); ++i) {
    for (int k = 0; k < 3; ++k) {
      raise(std::abs(double(a.positions[i][k]) - double(b.positions[i][k])), i, &m.position, &m.position_at);
      raise(std::abs(std::log(double(a.scales[i][k])) - std::log(double(b.scales[i][k]))), i, &m.log_scale, &m.log_scale_at);
      raise(std::abs(double(a.sh[i * 3 + static_cast<size_t>(k)]) - double(b.sh[i * 3 + static_cast<size_t>(k)])), i, &m.dc, &m.dc_at);
    }
    raise(std::abs(double(a.opacities[i]) - double(b.opacities[i])), i, &m.opacity, &m.opacity_at);
    const Quat &p = a.rotations[i], &q = b.rotations[i];
    const double dot = double(p.w) * q.w + double(p.x) * q.x + double(p.y) * q.y + double(p.z) * q.z;
    raise(1.0 - std::abs(dot), i, &m.rotation, &m.rotation_at);
  }
  return m;
}

// Prints and records the maxima, then checks them against the tolerances.
void reportAndCheck(const std::string& what, const Maxima& m, const Tolerance& t) {
  std::ostringstream line;
  line << std::setprecision(4) << "[ measured ] " << what << " over all rows: position " << m.position << ", ln-scale "
       << m.log_scale << ", dc " << m.dc << ", opacity " << m.opacity << ", 1-|dot| " << m.rotation;
  std::printf("%s\n", line.str().c_str());
  auto record = [&](const char* key, double v) {
    std::ostringstream s;
    s << std::setprecision(6) << v;
    ::testing::Test::RecordProperty(std::string("max_") + key, s.str());
  };
  record("position", m.position);
  record("log_scale", m.log_scale);
  record("dc", m.dc);
  record("opacity", m.opacity);
  record("one_minus_abs_dot", m.rotation);
  EXPECT_LE(m.position, t.position) << "row " << m.position_at;
  EXPECT_LE(m.log_scale, t.log_scale) << "row " << m.log_scale_at;
  EXPECT_LE(m.dc, t.dc) << "row " << m.dc_at;
  EXPECT_LE(m.opacity, t.opacity) << "row " << m.opacity_at;
  EXPECT_LE(m.rotation, t.rotation) << "row " << m.rotation_at;
}

void expectBikerShape(const LoadedSplats& loaded, SplatFormat format, int version) {
  EXPECT_EQ(loaded.format, format) << formatName(loaded.format);
  EXPECT_EQ(loaded.version, version);
  EXPECT_EQ(loaded.cloud.size(), kBikerSplats);
  EXPECT_EQ(loaded.cloud.sh_degree, 0);
  EXPECT_EQ(loaded.cloud.validate(), "");
}

TEST(RealAssets, BikerPlyDecodes) {
  SF_REQUIRE_ASSET(path, "splats/biker.ply");
  const LoadedSplats& ply = load(path);
  expectBikerShape(ply, SplatFormat::kPly, 0);
  // x y z f_dc_0..2 opacity rot_0..3 scale_0..2: every property is understood; no normals.
  EXPECT_TRUE(ply.cloud.extras.empty());
  EXPECT_TRUE(ply.cloud.normals.empty());
  // 198 rows store opacity = +inf (see docs/formats/ply.md); they must come out as 1, not NaN.
  size_t opaque = 0;
  for (float o : ply.cloud.opacities) {
    ASSERT_TRUE(o >= 0.0f && o <= 1.0f) << o;
    opaque += o == 1.0f;
  }
  EXPECT_GE(opaque, 198u);
}

TEST(RealAssets, BikerCompressedPlyDecodes) {
  SF_REQUIRE_ASSET(path, "splats/biker.compressed.ply");
  expectBikerShape(load(path), SplatFormat::kCompressedPly, 0);
}

TEST(RealAssets, BikerSpzDecodesAsVersion4) {
  SF_REQUIRE_ASSET(path, "splats/biker.spz");
  expectBikerShape(load(path), SplatFormat::kSpz, 4);
}

TEST(RealAssets, CompressedPlyMatchesPlyRowByRow) {
  SF_REQUIRE_ASSET(ply_path, "splats/biker.ply");
  SF_REQUIRE_ASSET(compressed_path, "splats/biker.compressed.ply");
  const GaussianCloud& ply = load(ply_path).cloud;
  const GaussianCloud& compressed = load(compressed_path).cloud;
  ASSERT_EQ(ply.size(), compressed.size());
  reportAndCheck("compressed PLY vs PLY", measure(ply, compressed), Tolerance{1e-5, 1e-4, 1e-5, 1e-4, 1e-5});
}

TEST(RealAssets, SpzMatchesPlyRowByRow) {
  SF_REQUIRE_ASSET(ply_path, "splats/biker.ply");
  SF_REQUIRE_ASSET(spz_path, "splats/biker.spz");
  const GaussianCloud& ply = load(ply_path).cloud;
  const GaussianCloud& spz = load(spz_path).cloud;
  ASSERT_EQ(ply.size(), spz.size());
  reportAndCheck("SPZ vs PLY", measure(ply, spz),
                 Tolerance{std::ldexp(1.0, -13) + 1e-6, 1.0 / 32 + 1e-5, 0.5 / 255 + 1e-6, 0.5 / (0.15 * 255) + 1e-5, 1e-4});
}

TEST(RealAssets, SpzWithoutAxisConversionIsRub) {
  SF_REQUIRE_ASSET(ply_path, "splats/biker.ply");
  SF_REQUIRE_ASSET(spz_path, "splats/biker.spz");
  const GaussianCloud& ply = load(ply_path).cloud;
  std::vector<uint8_t> bytes = readFile(spz_path);
  GaussianCloud raw = readSpz(bytes, spz_path, nullptr, SpzOptions{false});
  ASSERT_EQ(raw.size(), ply.size());
  // Raw y and z are the PLY's negated (RUB); x is the same.
  double x_err = 0, yz_err = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    x_err = std::max(x_err, std::abs(double(raw.positions[i].x) - ply.positions[i].x));
    yz_err = std::max({yz_err, std::abs(double(raw.positions[i].y) + ply.positions[i].y),
                       std::abs(double(raw.positions[i].z) + ply.positions[i].z)});
  }
  EXPECT_LE(x_err, std::ldexp(1.0, -13) + 1e-6);
  EXPECT_LE(yz_err, std::ldexp(1.0, -13) + 1e-6);
}

TEST(RealAssets, SpzReencodesToTheSameQuantisedValues) {
  SF_REQUIRE_ASSET(spz_path, "splats/biker.spz");
  const GaussianCloud& spz = load(spz_path).cloud;
  int version = 0;
  GaussianCloud again = readSpz(writeSpz(spz), "reencoded.spz", &version);
  EXPECT_EQ(version, 3);
  ASSERT_EQ(again.size(), spz.size());
  reportAndCheck("SPZ v4 -> writeSpz v3 -> read", measure(spz, again), Tolerance{0, 1e-5, 1e-5, 1e-5, 1e-6});
}

}  // namespace
}  // namespace sf
