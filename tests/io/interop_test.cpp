// Interop with the peer tools from npm (tools/interop: @playcanvas/splat-transform 2.7 and 3.7, spz-js,
// Niantic's library as @adobe/spz, Spark 2.2 (@sparkjsdev/spark; its web-worker decoder and its writer run in
// node by tests/io/peers/spark_spz.mjs), Khronos gltf-validator; docs/formats/interop.md). For every format
// pair Splatforge and a peer both support: write with one, read with the other, and compare per gaussian with
// the source cloud, within the format's quantisation (and the peer's own, where it re-quantises), in the
// engine's (PLY, RDF) frame, so a file that arrives rotated fails. The peers' PLY files are read by our PLY
// reader, which other tests check against raw bytes. Two pairs are also rendered and compared by PSNR.
// Without node or the peer packages these tests skip; under CI=true they fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "core/covariance.h"
#include "core/gaussian_cloud.h"
#include "core/image.h"
#include "core/sh.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/ply.h"
#include "io/spz.h"
#include "render/camera.h"
#include "render/cpu_renderer.h"
#include "support/peer_tools.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
using test::runPeer;
using test::succeeded;

constexpr const char* kSplatTransform3 = "splat-transform-3/bin/cli.mjs";
constexpr const char* kSplatTransform2 = "splat-transform-2/bin/cli.mjs";
constexpr const char* kValidator = "gltf-validator/package.json";

// Largest differences between two clouds of the same order, per attribute.
// rotation: 1 - |<qa, qb>|; covariance: largest |Sigma_a - Sigma_b| over the largest variance of the splat
// (the shape itself: a quaternion and the same quaternion composed with a half-turn about one of the splat's
// axes give one covariance).
struct Errors {
  double position = 0, log_scale = 0, opacity = 0, dc = 0, sh = 0, rotation = 0, covariance = 0;
};

Errors compare(const GaussianCloud& want, const GaussianCloud& got, std::span<const uint32_t> order = {}) {
  Errors e;
  EXPECT_EQ(got.size(), want.size());
  const int rest = std::min(shCoeffCount(want.sh_degree), shCoeffCount(got.sh_degree)) * 3;
  for (size_t r = 0; r < std::min(want.size(), got.size()); ++r) {
    const size_t i = order.empty() ? r : order[r];  // row r of `got` is splat i of `want`
    for (int k = 0; k < 3; ++k) {
      e.position = std::max(e.position, double(std::abs(want.positions[i][k] - got.positions[r][k])));
      e.log_scale =
          std::max(e.log_scale, double(std::abs(std::log(want.scales[i][k]) - std::log(got.scales[r][k]))));
      e.dc = std::max(
          e.dc, double(std::abs(want.shOf(i)[static_cast<size_t>(k)] - got.shOf(r)[static_cast<size_t>(k)])));
    }
    for (int k = 3; k < rest; ++k)
      e.sh = std::max(
          e.sh, double(std::abs(want.shOf(i)[static_cast<size_t>(k)] - got.shOf(r)[static_cast<size_t>(k)])));
    e.opacity = std::max(e.opacity, double(std::abs(want.opacities[i] - got.opacities[r])));
    const Quat &a = want.rotations[i], &b = got.rotations[r];
    e.rotation = std::max(e.rotation, 1.0 - std::abs(double(a.w) * b.w + double(a.x) * b.x +
                                                     double(a.y) * b.y + double(a.z) * b.z));
    const Cov6 ca = covarianceFromScaleRotation(want.scales[i], a),
               cb = covarianceFromScaleRotation(got.scales[r], b);
    const double largest = std::max({want.scales[i].x, want.scales[i].y, want.scales[i].z});
    for (size_t k = 0; k < 6; ++k)
      e.covariance = std::max(e.covariance, std::abs(double(ca[k]) - cb[k]) / (largest * largest));
  }
  return e;
}

void expectWithin(const Errors& e, const Errors& limit, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_LE(e.position, limit.position);
  EXPECT_LE(e.log_scale, limit.log_scale);
  EXPECT_LE(e.opacity, limit.opacity);
  EXPECT_LE(e.dc, limit.dc);
  EXPECT_LE(e.sh, limit.sh);
  EXPECT_LE(e.rotation, limit.rotation);
  EXPECT_LE(e.covariance, limit.covariance);
  std::printf(
      "  %-44s position %.2e  log-scale %.2e  opacity %.2e  f_dc %.2e  SH %.2e  rotation %.2e  covariance "
      "%.2e\n",
      what.c_str(), e.position, e.log_scale, e.opacity, e.dc, e.sh, e.rotation, e.covariance);
}

// SPZ's quantisation (docs/formats/spz.md): half a step of each field, plus float slack. Rotations of
// smallest-three with 9-bit magnitudes: about 1e-5 in 1 - |<qa, qb>|; first-three 8-bit with w
// derived: 4.3e-3 measured (w's error grows where w is small). `peer`: the file was written by a peer that,
// like Niantic's library, snaps SH bytes to buckets of 8 (band 1) and 16 (bands 2-3) after rounding: half a
// bucket plus half a step.
Errors spzLimits(int version, bool peer = false) {
  // Covariance from log-scales within 1/32 (a factor e^(1/16) on variances) and the rotation's quantisation.
  return Errors{std::ldexp(1.0, -13) + 1e-6,
                1.0 / 32 + 1e-5,
                0.5 / 255 + 1e-6,
                0.5 / (0.15 * 255) + 1e-5,
                (peer ? 8.5 : 0.5) / 128 + 1e-6,
                version == 2 ? 5e-3 : 2e-5,
                version == 2 ? 0.15 : 0.1};
}

// A capture-like cloud in SPZ's ranges, SH degree 3 (so that every SH sign of an axis change shows).
GaussianCloud sourceCloud(size_t n = 1500, uint32_t seed = 4242) {
  GaussianCloud c = test::randomCloud(n, 3, seed);
  return c;
}

GaussianCloud readPlyFile(const std::string& path) {
  return readPly(readFile(path), path);
}

// PSNR of two small CPU renders of the clouds, seen from a camera off every axis (a flip in any axis moves
// the image).
double renderPsnr(const GaussianCloud& a, const GaussianCloud& b) {
  const Camera cam = lookAtCamera(Vec3{0.9f, -1.2f, -3.0f}, Vec3{0, 0, 0}, Vec3{0, -1, 0}, 50.0f, 160, 120);
  auto draw = [&](const GaussianCloud& c) {
    const RenderObject o(&c);
    return renderCpu(std::span<const RenderObject>(&o, 1), cam, RenderSettings{});
  };
  return compareImages(draw(a), draw(b)).psnr;
}

class Interop : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::tempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    source_ = sourceCloud();
    source_ply_ = path("source.ply");
    saveSplats(source_, source_ply_);
  }
  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  std::string dir_, source_ply_;
  GaussianCloud source_;
};

// ---- SPZ ----

TEST_F(Interop, SpzOursReadBySplatTransform3Upright) {
  SF_REQUIRE_PEER_TOOL(st3, kSplatTransform3);
  // Version 4 by default (PLY axes + a record it skips); versions 2-3 hold no record, so raw axes for it.
  for (auto [version, axes] :
       {std::pair{4, SpzAxes::kAuto}, std::pair{3, SpzAxes::kRaw}, std::pair{2, SpzAxes::kRaw}}) {
    const std::string label =
        "ours v" + std::to_string(version) + " (" + spzAxesName(axes) + ") -> splat-transform 3.7";
    const std::string spz = path("ours_v" + std::to_string(version) + ".spz"),
                      ply = path("st3_from_ours.ply");
    saveSplats(source_, spz, FormatOptions{axes, version});
    ASSERT_TRUE(succeeded(runPeer(kSplatTransform3, {"-w", spz, ply})));
    expectWithin(compare(source_, readPlyFile(ply)), spzLimits(version), label);
  }
}

TEST_F(Interop, SpzOfSplatTransform3ReadRawUpright) {
  SF_REQUIRE_PEER_TOOL(st3, kSplatTransform3);
  const std::string spz = path("st3.spz");
  ASSERT_TRUE(succeeded(runPeer(kSplatTransform3, {"-w", source_ply_, spz})));
  FormatOptions raw;
  raw.spz_axes = SpzAxes::kRaw;
  LoadedSplats l = loadSplats(spz, raw);
  EXPECT_EQ(l.version, 4);
  expectWithin(compare(source_, l.cloud), spzLimits(4, true), "splat-transform 3.7 -> ours (--spz-axes raw)");
  // With the default (no record: SPZ's RUB), such a file is read turned 180 degrees about x; info says so.
  LoadedSplats assumed = loadSplats(spz);
  EXPECT_NE(assumed.axes.find("--spz-axes raw"), std::string::npos) << assumed.axes;
  EXPECT_NEAR(assumed.cloud.positions[7].y, -source_.positions[7].y, 1e-3);
}

TEST_F(Interop, SpzRubRoundTripsWithSplatTransform2) {
  SF_REQUIRE_PEER_TOOL(st2, kSplatTransform2);
  // splat-transform 2.7 converts PLY <-> RUB both ways and ignores records: --spz-axes rub matches it.
  const std::string ours = path("ours_rub.spz"), ply = path("st2_from_ours.ply");
  saveSplats(source_, ours, FormatOptions{SpzAxes::kRub, 4});
  ASSERT_TRUE(succeeded(runPeer(kSplatTransform2, {"-w", ours, ply})));
  expectWithin(compare(source_, readPlyFile(ply)), spzLimits(4), "ours (rub) -> splat-transform 2.7");
  const std::string theirs = path("st2.spz");
  ASSERT_TRUE(succeeded(runPeer(kSplatTransform2, {"-w", source_ply_, theirs})));
  LoadedSplats l = loadSplats(theirs);  // default: no record, RUB
  expectWithin(compare(source_, l.cloud), spzLimits(4, true), "splat-transform 2.7 -> ours (default)");
  EXPECT_GT(renderPsnr(source_, l.cloud), 35.0);  // measured 39.2 dB: SH bytes snapped to buckets
}

TEST_F(Interop, SpzVersion2RoundTripsWithSpzJs) {
  SF_REQUIRE_PEER_TOOL(spzjs, "spz-js/dist/index.js");
  // spz-js (versions 1-2, raw axes) through a small node script: SPZ -> PLY and PLY -> SPZ.
  const std::string script = path("spzjs.mjs");
  const std::string module = "file://" + spzjs;
  writeFileAtomic(script, [&] {
    std::string s = "import * as spz from '" + module +
                    "';\n"
                    "import fs from 'fs';\n"
                    "import { Readable } from 'stream';\n"
                    "const [mode, input, output] = process.argv.slice(2);\n"
                    "if (mode === 'to-ply') {\n"
                    "  const g = await spz.loadSpz(new Uint8Array(fs.readFileSync(input)));\n"
                    "  fs.writeFileSync(output, Buffer.from(spz.serializePly(g)));\n"
                    "} else {\n"
                    "  const g = await spz.loadPly(Readable.toWeb(fs.createReadStream(input)));\n"
                    "  fs.writeFileSync(output, Buffer.from(await spz.serializeSpz(g)));\n"
                    "}\n";
    return std::vector<uint8_t>(s.begin(), s.end());
  }());
  // spz-js takes raw axes and refuses bytes after the arrays: --spz-axes raw --spz-version 2 is its form.
  const std::string ours = path("ours_v2.spz"), ply = path("spzjs_from_ours.ply");
  saveSplats(source_, ours, FormatOptions{SpzAxes::kRaw, 2});
  ASSERT_TRUE(succeeded(test::runCommand({test::nodeExecutable(), script, "to-ply", ours, ply})));
  expectWithin(compare(source_, readPlyFile(ply)), spzLimits(2), "ours v2 (raw) -> spz-js");
  const std::string theirs = path("spzjs.spz");
  ASSERT_TRUE(succeeded(test::runCommand({test::nodeExecutable(), script, "to-spz", source_ply_, theirs})));
  FormatOptions raw;
  raw.spz_axes = SpzAxes::kRaw;
  LoadedSplats l = loadSplats(theirs, raw);
  EXPECT_EQ(l.version, 2);
  expectWithin(compare(source_, l.cloud), spzLimits(2, true), "spz-js -> ours (--spz-axes raw)");
}

// Niantic's own library (the format's reference, as the WebAssembly build @adobe/spz that splat-transform 3
// depends on), built with extension support: it reads our default file upright, and for every value a
// coordinate-system record can hold it decodes the same cloud as our reader. The files carry our raw (PLY
// axes) arrays with a record inserted, so each value re-expresses the same bytes in other axes.
TEST_F(Interop, SpzCoordinateSystemRecordsMatchNianticsLibrary) {
  SF_REQUIRE_PEER_TOOL(lib, "@adobe/spz/dist/spz.js");
  const std::string script = path("niantic.mjs");
  const std::string s =
      "import create from 'file://" + lib +
      "';\n"
      "import fs from 'fs';\n"
      "const m = await create();\n"
      "if (!m.SpzHasExtensionSupport()) { console.error('built without extensions'); process.exit(3); }\n"
      "const g = m.loadSpzFromBuffer(new Uint8Array(fs.readFileSync(process.argv[2])), {to: "
      "m.CoordinateSystem.RDF});\n"
      "const parts = [g.positions, g.scales, g.rotations, g.sh].map(a => Buffer.from(new "
      "Float32Array(a).buffer));\n"
      "fs.writeFileSync(process.argv[3], Buffer.concat(parts));\n";
  writeFileAtomic(script, std::vector<uint8_t>(s.begin(), s.end()));
  const GaussianCloud& c = source_;
  const size_t n = c.size(), rest = 15;
  // What the library decoded: positions (3), log-scales (3), quaternions (x, y, z, w), SH ([coeff][rgb], no
  // DC).
  auto niantic = [&](const std::string& file) {
    const std::string out = file + ".f32";
    EXPECT_TRUE(succeeded(test::runCommand({test::nodeExecutable(), script, file, out})));
    std::vector<uint8_t> bytes = readFile(out);
    std::vector<float> f(bytes.size() / 4);
    std::memcpy(f.data(), bytes.data(), f.size() * 4);
    GaussianCloud g;
    g.resize(n, 3);
    if (f.size() != n * (3 + 3 + 4 + 3 * rest)) {
      ADD_FAILURE() << "library output holds " << f.size() << " floats";
      return g;
    }
    for (size_t i = 0; i < n; ++i) {
      g.positions[i] = {f[i * 3], f[i * 3 + 1], f[i * 3 + 2]};
      const float* sc = f.data() + 3 * n + i * 3;
      g.scales[i] = {std::exp(sc[0]), std::exp(sc[1]), std::exp(sc[2])};
      const float* q = f.data() + 6 * n + i * 4;
      g.rotations[i] = normalize(Quat{q[3], q[0], q[1], q[2]});
      for (size_t k = 0; k < 3 * rest; ++k) g.shOf(i)[3 + k] = f[10 * n + i * 3 * rest + k];
    }
    return g;
  };
  // Our default file: the library reads it in the PLY frame (the record says RDF).
  const std::string ours = path("ours.spz");
  saveSplats(c, ours);
  GaussianCloud lib_default = niantic(ours);
  for (size_t i = 0; i < n; ++i)
    lib_default.shOf(i)[0] = c.shOf(i)[0], lib_default.shOf(i)[1] = c.shOf(i)[1],
    lib_default.shOf(i)[2] = c.shOf(i)[2];
  lib_default.opacities = c.opacities;
  Errors e = compare(c, lib_default);
  e.log_scale = 0;  // log-scales compared through the covariance
  expectWithin(e, Errors{std::ldexp(1.0, -13) + 1e-6, 0, 0, 0, 0.5 / 128 + 1e-6, 2e-5, 0.1},
               "ours v4 (auto) -> Niantic's library");
  // Every record value: the library's decode equals ours.
  FormatOptions raw;
  raw.spz_axes = SpzAxes::kRaw;
  const std::vector<uint8_t> plain = encodeSplats(c, SplatFormat::kSpz, raw);  // no record, toc at 32
  for (uint32_t value = 1; value <= 16; ++value) {
    SCOPED_TRACE(axisSystemName(static_cast<AxisSystem>(value)));
    std::vector<uint8_t> file(plain.begin(), plain.begin() + 32);
    file[14] |= 0x02;
    const uint32_t toc = 44, type = 0xADBE0003, length = 4;
    std::memcpy(file.data() + 16, &toc, 4);
    for (uint32_t word : {type, length, value})
      file.insert(file.end(), reinterpret_cast<const uint8_t*>(&word),
                  reinterpret_cast<const uint8_t*>(&word) + 4);
    file.insert(file.end(), plain.begin() + 32, plain.end());
    const std::string name = path("record" + std::to_string(value) + ".spz");
    writeFileAtomic(name, file);
    const GaussianCloud mine = loadSplats(name).cloud;
    GaussianCloud theirs = niantic(name);
    for (size_t i = 0; i < n; ++i)
      for (int k = 0; k < 3; ++k)
        theirs.shOf(i)[static_cast<size_t>(k)] = mine.shOf(i)[static_cast<size_t>(k)];
    theirs.opacities = mine.opacities;
    // The library keeps the scales and turns the quaternion; we permute the scales (axes * R * axes^T): one
    // covariance, so log-scales and quaternions are compared through it.
    expectWithin(compare(mine, theirs), Errors{1e-6, 10.0, 0, 0, 2e-5, 1.0, 1e-5},
                 std::string("record ") + axisSystemName(static_cast<AxisSystem>(value)));
  }
}

// Spark (@sparkjsdev/spark 2.2, a three.js renderer), its WebAssembly decoder and writer run in node by
// tests/io/peers/spark_spz.mjs. Two decoded forms: "ext" (its float form) and "packed" (its 16-byte form,
// what a SplatMesh draws by default).
constexpr const char* kSpark = "@sparkjsdev/spark/dist/spark.module.js";

test::CommandResult runSparkScript(const std::vector<std::string>& args) {
  const fs::path script = fs::path(SPLATFORGE_SOURCE_DIR) / "tests" / "io" / "peers" / "spark_spz.mjs";
  std::vector<std::string> argv = {test::nodeExecutable(), script.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::runCommand(argv);
}

// Spark's decode of an SPZ file of `n` gaussians as a cloud in the axes Spark holds it (SH degree 3, f_dc
// from Spark's base colour).
GaussianCloud readBySpark(const std::string& spark, const std::string& spz, const std::string& form,
                          size_t n) {
  GaussianCloud g;
  g.resize(n, 3);
  const std::string out = spz + "." + form + ".f32";
  const ::testing::AssertionResult ran = succeeded(runSparkScript({"read", spark, spz, out, form}));
  if (!ran) {
    ADD_FAILURE() << ran.message();
    return g;
  }
  const std::vector<uint8_t> bytes = readFile(out);
  constexpr size_t kFloats = 59;  // centre, scales, quaternion (x, y, z, w), opacity, colour, 45 SH
  std::vector<float> f(bytes.size() / 4);
  std::memcpy(f.data(), bytes.data(), f.size() * 4);
  if (f.size() != n * kFloats) {
    ADD_FAILURE() << "Spark decoded " << f.size() / kFloats << " gaussians of " << spz << ", want " << n;
    return g;
  }
  for (size_t i = 0; i < n; ++i) {
    const float* s = f.data() + i * kFloats;
    g.positions[i] = {s[0], s[1], s[2]};
    g.scales[i] = {s[3], s[4], s[5]};
    g.rotations[i] = normalize(Quat{s[9], s[6], s[7], s[8]});
    g.opacities[i] = s[10];
    for (size_t k = 0; k < 3; ++k) g.shOf(i)[k] = colorToShDc(s[11 + k]);
    for (size_t k = 3; k < 48; ++k) g.shOf(i)[k] = s[11 + k];
  }
  return g;
}

// Spark holds opacity, colour, log-scales and SH as float16 (in its float form, and in the splat arrays its
// SPZ writer encodes from): half an ulp more, 2^-12 for values below 1, 2^-9 for |log-scale| below 8. Its
// float form holds rotations as axis-angle of 10/10/12 bits (1e-5 more, measured 8e-6 in all).
Errors plusSparkHalf(Errors e) {
  e.opacity += std::ldexp(1.0, -12);
  e.dc += std::ldexp(1.0, -12) / kShC0;
  e.log_scale += std::ldexp(1.0, -9);
  e.sh += std::ldexp(1.0, -12);
  e.rotation += 1e-5;
  return e;
}

// Spark's 16-byte form (PackedSplats): float16 centres (2^-12 below 1), log-scales of 8 bits over [-12, 9]
// (half a step: 21/508), colour of 8 bits over [0, 1], SH bands of 7, 8 and 6 bits over [-1, 1] (half a step
// of the coarsest: 1/62), axis-angle rotations of 8/8/8 bits (2.5e-4 more, measured 1.1e-4 in all; the
// covariance likewise, with the coarser log-scales); opacity keeps SPZ's 8-bit step.
Errors plusSparkPacked(Errors e) {
  e.position += std::ldexp(1.0, -12);
  e.log_scale += 21.0 / 508;
  e.dc += 0.5 / 255 / kShC0;
  e.sh += 1.0 / 62;
  e.rotation += 2.5e-4;
  e.covariance += 0.15;
  return e;
}

// Spark's float form stores each SH coefficient's rgb with one shared exponent and clips every component to
// the largest power of two not above the triple's largest magnitude, so components above it lose up to half
// their value. The largest difference from that clipping of `want`, within 8-bit mantissas.
double sparkExtShError(const GaussianCloud& want, const GaussianCloud& spark) {
  double e = 0;
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t k = 3; k < 48; k += 3) {
      const float* v = want.shOf(i).data() + k;
      const float largest = std::max({std::abs(v[0]), std::abs(v[1]), std::abs(v[2])});
      const float cap = largest > 0 ? std::exp2(std::floor(std::log2(largest))) : 0.0f;
      for (size_t c = 0; c < 3; ++c)
        e = std::max(
            e, std::abs(double(std::copysign(std::min(std::abs(v[c]), cap), v[c])) - spark.shOf(i)[k + c]));
    }
  return e;
}

// Spark reads SPZ versions 2-3 (gzip) only, in raw axes: the values as stored are its frame, as for a PLY.
// Our versions 2-3 written with --spz-axes raw arrive as the PLY does; our default RUB arrives turned 180
// degrees about x; our default version 4 it refuses.
TEST_F(Interop, SpzOursReadBySparkRaw) {
  SF_REQUIRE_PEER_TOOL(spark, kSpark);
  SF_REQUIRE_PEER_TOOL(three, "three/package.json");
  const size_t n = source_.size();
  const std::string v4 = path("ours_v4.spz");
  saveSplats(source_, v4);
  const test::CommandResult refused = runSparkScript({"read", spark, v4, v4 + ".f32", "ext"});
  EXPECT_NE(refused.exit_code, 0) << "Spark reads SPZ version 4 now: update docs/formats/interop.md";
  EXPECT_NE(refused.err.find("Invalid gzip header"), std::string::npos) << refused.err;
  for (int version : {3, 2}) {
    const std::string spz = path("ours_v" + std::to_string(version) + "_raw.spz");
    saveSplats(source_, spz, FormatOptions{SpzAxes::kRaw, version});
    const GaussianCloud ours = loadSplats(spz, FormatOptions{SpzAxes::kRaw, 4}).cloud;
    for (const std::string form : {"ext", "packed"}) {
      const std::string label = "ours v" + std::to_string(version) + " (raw) -> Spark " + form;
      const GaussianCloud got = readBySpark(spark, spz, form, n);
      Errors e = compare(source_, got);
      if (form == "ext") {
        const double clipped = sparkExtShError(ours, got);
        std::printf("  %-44s SH %.2e from the source, %.2e from its clipping of our decode\n", label.c_str(),
                    e.sh, clipped);
        EXPECT_LE(clipped, 0.5 / 255 + 1e-6) << label;
        e.sh = 0;
      }
      const Errors limit =
          form == "ext" ? plusSparkHalf(spzLimits(version)) : plusSparkPacked(spzLimits(version));
      expectWithin(e, limit, label);
    }
  }
  // Our default for versions 2-3 (RUB, SPZ's own convention) shows turned 180 degrees about x in Spark.
  const std::string rub = path("ours_v3.spz");
  saveSplats(source_, rub, FormatOptions{SpzAxes::kAuto, 3});
  const GaussianCloud turned = readBySpark(spark, rub, "ext", n);
  EXPECT_GT(compare(source_, turned).position, 0.5);
  for (size_t i : {size_t(3), size_t(700)}) {
    EXPECT_NEAR(turned.positions[i].x, source_.positions[i].x, 1e-3);
    EXPECT_NEAR(turned.positions[i].y, -source_.positions[i].y, 1e-3);
    EXPECT_NEAR(turned.positions[i].z, -source_.positions[i].z, 1e-3);
  }
}

// A coordinate-system record (0xADBE0003, after the SH as Niantic's library writes it into versions 1-3)
// changes nothing in Spark's decode, whatever it declares; our reader honours it.
TEST_F(Interop, SpzCoordinateSystemRecordIgnoredBySpark) {
  SF_REQUIRE_PEER_TOOL(spark, kSpark);
  SF_REQUIRE_PEER_TOOL(three, "three/package.json");
  const std::string plain = path("raw_v3.spz");
  saveSplats(source_, plain, FormatOptions{SpzAxes::kRaw, 3});
  ASSERT_TRUE(succeeded(runSparkScript({"read", spark, plain, plain + ".f32", "ext"})));
  const std::vector<uint8_t> without = readFile(plain + ".f32");
  // Gunzip, set the extensions flag, append the record, gzip again (node's zlib).
  const std::string append =
      "const z = require('zlib'), fs = require('fs'); const [input, output, value] = process.argv.slice(1);\n"
      "const b = z.gunzipSync(fs.readFileSync(input)); b[14] |= 2;\n"
      "const r = Buffer.alloc(12);\n"
      "r.writeUInt32LE(0xADBE0003, 0); r.writeUInt32LE(4, 4); r.writeUInt32LE(+value, 8);\n"
      "fs.writeFileSync(output, z.gzipSync(Buffer.concat([b, r])));\n";
  for (AxisSystem axes : {AxisSystem::kRDF, AxisSystem::kRUB}) {
    SCOPED_TRACE(axisSystemName(axes));
    const std::string spz = path(std::string("record_") + axisSystemName(axes) + ".spz");
    const std::string value = std::to_string(static_cast<uint32_t>(axes));
    ASSERT_TRUE(succeeded(test::runCommand({test::nodeExecutable(), "-e", append, plain, spz, value})));
    LoadedSplats l = loadSplats(spz);
    EXPECT_EQ(l.version, 3);
    EXPECT_EQ(l.axes,
              std::string(axisSystemName(axes)) + " (declared by the file's coordinate-system record)");
    if (axes == AxisSystem::kRDF)
      expectWithin(compare(source_, l.cloud), spzLimits(3), "ours v3 (raw) + RDF record -> ours");
    ASSERT_TRUE(succeeded(runSparkScript({"read", spark, spz, spz + ".f32", "ext"})));
    EXPECT_TRUE(readFile(spz + ".f32") == without)
        << "Spark's decode changed with a record declaring " << axisSystemName(axes);
  }
}

// Spark writes SPZ version 2 in raw axes (as it read the PLY), no record, antialiased flag set: read upright
// with --spz-axes raw. writeSpz writes what a PackedSplats holds (its quantisation, then SPZ's); transcodeSpz
// converts the file directly.
TEST_F(Interop, SpzOfSparkReadRawUpright) {
  SF_REQUIRE_PEER_TOOL(spark, kSpark);
  SF_REQUIRE_PEER_TOOL(three, "three/package.json");
  FormatOptions raw;
  raw.spz_axes = SpzAxes::kRaw;
  for (const std::string writer : {"transcode", "packed"}) {
    const std::string label = "Spark " +
                              std::string(writer == "packed" ? "writeSpz (PackedSplats)" : "transcodeSpz") +
                              " -> ours (raw)";
    const std::string spz = path("spark_" + writer + ".spz");
    ASSERT_TRUE(succeeded(runSparkScript({"write", spark, source_ply_, spz, writer})));
    LoadedSplats l = loadSplats(spz, raw);
    EXPECT_EQ(l.version, 2);
    EXPECT_TRUE(l.cloud.antialiased);
    // Encoded from float16 arrays, SH bytes snapped to buckets like Niantic's library; writeSpz from what a
    // PackedSplats holds, whose opacity is one more 8-bit step.
    Errors limit = plusSparkHalf(spzLimits(2, true));
    if (writer == "packed") limit = plusSparkPacked(limit), limit.opacity += 0.5 / 255;
    expectWithin(compare(source_, l.cloud), limit, label);
    const LoadedSplats assumed = loadSplats(spz);  // no record: SPZ's RUB, so turned
    EXPECT_NEAR(assumed.cloud.positions[7].y, -source_.positions[7].y, 2e-3);
  }
}

// ---- glTF (KHR_gaussian_splatting) ----

TEST_F(Interop, GlbOfSplatTransformReadUpright) {
  SF_REQUIRE_PEER_TOOL(st3, kSplatTransform3);
  SF_REQUIRE_PEER_TOOL(st2, kSplatTransform2);
  // Float accessors: positions, scales and SH exact up to float rounding. The peer turns a rotation q into
  // q_z * q (a half-turn about z composed), we into (w, -x, -y, z) (the half-turn conjugated): the same
  // covariance, other quaternions; so covariances are compared, not quaternions.
  const Errors exact{1e-6, 1e-5, 1e-6, 1e-5, 1e-5, 1.0, 1e-5};
  for (const char* tool : {kSplatTransform3, kSplatTransform2}) {
    const std::string glb = path("peer.glb");
    ASSERT_TRUE(succeeded(runPeer(tool, {"-w", source_ply_, glb})));
    LoadedSplats l = loadSplats(glb);
    EXPECT_EQ(l.format, SplatFormat::kGltf);
    expectWithin(compare(source_, l.cloud), exact, std::string(tool).substr(0, 17) + " .glb -> ours");
    EXPECT_GT(renderPsnr(source_, l.cloud), 60.0);
  }
}

TEST_F(Interop, GlbOfOursPassesTheKhronosValidator) {
  SF_REQUIRE_PEER_TOOL(validator, kValidator);
  const std::string glb = path("ours.glb"), script = path("validate.mjs");
  saveSplats(source_, glb);
  const std::string module = "file://" + fs::path(validator).parent_path().string() + "/index.js";
  std::string s = "import v from '" + module +
                  "';\nimport fs from 'fs';\n"
                  "const r = await v.validateBytes(new Uint8Array(fs.readFileSync(process.argv[2])));\n"
                  "for (const m of r.issues.messages) if (m.severity === 0) console.log(m.code + ' ' + "
                  "m.pointer + ' ' + m.message);\n"
                  "console.log('errors ' + r.issues.numErrors);\n";
  writeFileAtomic(script, std::vector<uint8_t>(s.begin(), s.end()));
  test::CommandResult r = test::runCommand({test::nodeExecutable(), script, glb});
  ASSERT_TRUE(succeeded(r));
  // The validator does not know KHR_gaussian_splatting: its only complaints may be about the extension's
  // attribute names, which it cannot validate. Every other error fails the test.
  std::istringstream lines(r.out);
  std::string line;
  int errors = -1, unexplained = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("errors ", 0) == 0)
      errors = std::stoi(line.substr(7));
    else if (line.find("KHR_gaussian_splatting") == std::string::npos)
      ADD_FAILURE() << "validator: " << line, ++unexplained;
  }
  EXPECT_GE(errors, 0) << r.out;
  EXPECT_EQ(unexplained, 0) << r.out;
}

// ---- compressed PLY, .splat, PLY ----

TEST_F(Interop, CompressedPlyBothWays) {
  SF_REQUIRE_PEER_TOOL(st3, kSplatTransform3);
  const GaussianCloud& c = source_;
  // Chunk-relative quantisation: position 11/10/11 bits of the chunk's extent, log-scale likewise, colour 8
  // bits of the chunk's colour range, opacity 8 bits, rotation 10 bits per component, SH 8 bits over [-4, 4].
  auto limits = [](const GaussianCloud& cloud) {
    (void)cloud;
    return Errors{2.0 / 1023 * 0.5 + 1e-5,
                  0.02,
                  0.5 / 255 + 1e-6,
                  0.5 / 255 / kShC0 * 3.0 + 1e-4,
                  8.0 / 256 + 1e-5,
                  2e-5,
                  0.05};
  };
  const std::string ours = path("ours.compressed.ply"), ply = path("st3_from_ours.ply");
  saveSplats(c, ours);
  ASSERT_TRUE(succeeded(runPeer(kSplatTransform3, {"-w", ours, ply})));
  const std::vector<uint32_t> order = compressedPlyOrder(c);  // the rows the writer put in the file
  expectWithin(compare(c, readPlyFile(ply), order), limits(c), "ours .compressed.ply -> splat-transform 3.7");
  // The peer's compressed PLY, read by us: matched to the source by nearest position (its own row order).
  const std::string theirs = path("st3.compressed.ply");
  ASSERT_TRUE(succeeded(runPeer(kSplatTransform3, {"-w", source_ply_, theirs})));
  LoadedSplats l = loadSplats(theirs);
  EXPECT_EQ(l.format, SplatFormat::kCompressedPly);
  ASSERT_EQ(l.cloud.size(), c.size());
  std::vector<uint32_t> match(c.size());
  for (size_t r = 0; r < l.cloud.size(); ++r) {
    float best = INFINITY;
    for (size_t i = 0; i < c.size(); ++i) {
      const Vec3 d = c.positions[i] - l.cloud.positions[r];
      if (dot(d, d) < best) best = dot(d, d), match[r] = static_cast<uint32_t>(i);
    }
  }
  std::vector<uint32_t> sorted = match;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_TRUE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end())
      << "nearest-position matching is not one to one";
  expectWithin(compare(c, l.cloud, match), limits(c), "splat-transform 3.7 .compressed.ply -> ours");
  EXPECT_GT(renderPsnr(c, l.cloud), 35.0);
}

TEST_F(Interop, SplatAndPlyReadBySplatTransform) {
  SF_REQUIRE_PEER_TOOL(st3, kSplatTransform3);
  // .splat: float position and scale, 8-bit colour, opacity and rotation; SH degree 0.
  GaussianCloud c = source_;
  c.sh.resize(c.size() * 3);
  for (size_t i = 0; i < c.size(); ++i)
    for (int k = 0; k < 3; ++k)
      c.sh[i * 3 + static_cast<size_t>(k)] = source_.shOf(i)[static_cast<size_t>(k)];
  c.sh_degree = 0;
  const std::string splat = path("ours.splat"), ply = path("st3_from_splat.ply");
  saveSplats(c, splat);
  ASSERT_TRUE(succeeded(runPeer(kSplatTransform3, {"-w", splat, ply})));
  expectWithin(compare(c, readPlyFile(ply)),
               Errors{1e-6, 1e-5, 0.5 / 255 + 1e-6, 0.5 / 255 / kShC0 + 1e-5, 0, 1e-4, 0.03},
               "ours .splat -> splat-transform 3.7");
  // PLY both ways: exact up to the logit/log round trip.
  const std::string back = path("st3_from_ply.ply");
  ASSERT_TRUE(succeeded(runPeer(kSplatTransform3, {"-w", source_ply_, back})));
  expectWithin(compare(source_, readPlyFile(back)), Errors{0, 1e-5, 1e-6, 0, 0, 1e-6, 1e-5},
               "ours .ply -> splat-transform 3.7 .ply");
}

}  // namespace
}  // namespace sf
