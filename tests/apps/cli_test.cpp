// The splatforge command line, run as a process: help on every command, the happy paths, and every
// failure (bad arguments, missing files, malformed JSON, a camera that sees nothing) exiting non-zero
// with a message that names the problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "gpu/gpu.h"
#include "io/formats.h"
#include "io/image_io.h"
#include "io/json.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

using test::cli;
using test::CliRun;

void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// A small cloud in front of a camera at the origin looking down +z.
std::string smallCloud(const std::string& dir) {
  GaussianCloud c = test::randomCloud(200, 1, 21);
  for (Vec3& p : c.positions) p = p + Vec3{0, 0, 4};
  std::string path = dir + "/cloud.ply";
  saveSplats(c, path);
  return path;
}

// The JSON document a command wrote to `path` (parse errors name the file and where).
nlohmann::json readJsonFile(const std::string& path) {
  std::ifstream in(path);
  return parseJsonText(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()),
                       path);
}

TEST(Cli, HelpOnEveryCommand) {
  for (const char* cmd : {"", "info ", "convert ", "render ", "demo ", "bench ", "devices "}) {
    CliRun r = cli(std::string(cmd) + "--help");
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << cmd << r.out;
  }
}

TEST(Cli, NoCommandOrUnknownOptionFails) {
  EXPECT_NE(cli("").code, 0);
  CliRun r = cli("render --frobnicate x.ply -o y.png");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("frobnicate"), std::string::npos) << r.out;
  CliRun w = cli("render x.ply -o y.png --width -5");
  EXPECT_NE(w.code, 0);
  EXPECT_NE(w.out.find("width"), std::string::npos) << w.out;
}

TEST(Cli, MissingFileIsNamed) {
  CliRun r = cli("info /nonexistent/cloud.ply");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("/nonexistent/cloud.ply: file is missing"), std::string::npos) << r.out;
  CliRun s = cli("render /nonexistent/cloud.spz -o x.png");
  EXPECT_EQ(s.code, 1);
  EXPECT_NE(s.out.find("/nonexistent/cloud.spz"), std::string::npos) << s.out;
}

TEST(Cli, InfoAndJson) {
  std::string dir = test::tempDir("CliInfo");
  std::string ply = smallCloud(dir);
  CliRun r = cli("info " + ply);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("gaussians:   200"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sh degree:   1"), std::string::npos) << r.out;
  CliRun j = cli("info --json " + ply);
  EXPECT_EQ(j.code, 0) << j.out;
  EXPECT_NE(j.out.find("\"count\": 200"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"p99\""), std::string::npos) << j.out;
}

TEST(Cli, InfoOnRealCapture) {
  SF_REQUIRE_ASSET(spz, "splats/biker.spz");
  CliRun r = cli("info " + spz);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("gaussians:   152746"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("spz (version 4)"), std::string::npos) << r.out;
}

TEST(Cli, ConvertRoundTripAndAtomicFailure) {
  std::string dir = test::tempDir("CliConvert");
  std::string ply = smallCloud(dir);
  CliRun r = cli("convert " + ply + " " + dir + "/out.spz");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(loadSplats(dir + "/out.spz").cloud.size(), 200u);
  // Unknown output extension: a usage error, nothing written.
  CliRun bad = cli("convert " + ply + " " + dir + "/out.xyz");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find(".xyz"), std::string::npos) << bad.out;
  EXPECT_FALSE(fs::exists(dir + "/out.xyz"));
  // Corrupt input: refused, no output, no temporary left behind.
  writeText(dir + "/corrupt.ply",
            "ply\nformat binary_little_endian 1.0\nelement vertex 100\nproperty float x\nend_header\nabc");
  CliRun corrupt = cli("convert " + dir + "/corrupt.ply " + dir + "/never.ply");
  EXPECT_EQ(corrupt.code, 1);
  EXPECT_NE(corrupt.out.find("corrupt.ply: byte"), std::string::npos) << corrupt.out;
  EXPECT_FALSE(fs::exists(dir + "/never.ply"));
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos);
}

TEST(Cli, RenderWithCameraAndFloatOutput) {
  std::string dir = test::tempDir("CliRender");
  std::string ply = smallCloud(dir);
  writeText(dir + "/cam.json", R"({"width": 96, "height": 64, "fx": 80, "fy": 80, "cx": 48, "cy": 32,
      "world_to_camera": [1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1]})");
  CliRun r = cli("render " + ply + " -o " + dir + "/img.png --camera " + dir +
                 "/cam.json --bg 0.2,0.3,0.4 --save-float " + dir + "/img.npy");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("time:"), std::string::npos) << r.out;
  ImageRGBA png = readPng(dir + "/img.png"), npy = readNpy(dir + "/img.npy");
  EXPECT_EQ(png.width, 96);
  EXPECT_EQ(npy.height, 64);
  ImageDiff d = compareImages(png, npy);
  EXPECT_LE(d.max_abs, 0.5 / 255.0 + 1e-6);  // the PNG is the float image rounded to 8 bits
}

// --save-depth: a (height, width, 2) array whose transmittance is the float image's 1 - alpha and whose
// normalised depth sum(d alpha T) / (1 - T) is a weighted mean of splat depths, so it lies within the
// cloud's depth range wherever anything was blended. On both backends when Vulkan exists.
TEST(Cli, RenderSavesTheDepthPlane) {
  std::string dir = test::tempDir("CliDepth");
  std::string ply = smallCloud(dir);
  const GaussianCloud cloud = loadSplats(ply).cloud;
  float z_min = INFINITY, z_max = -INFINITY;
  for (const Vec3& p : cloud.positions) z_min = std::min(z_min, p.z), z_max = std::max(z_max, p.z);
  writeText(dir + "/cam.json", R"({"width": 96, "height": 64, "fx": 80, "fy": 80, "cx": 48, "cy": 32,
      "world_to_camera": [1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1]})");
  std::vector<std::string> backends = {"cpu"};
  if (gpu::vulkanAvailable()) backends.push_back("vulkan");
  for (const std::string& backend : backends) {
    CliRun r = cli("render " + ply + " -o " + dir + "/img.png --camera " + dir + "/cam.json --backend " +
                   backend + " --save-float " + dir + "/img.npy --save-depth " + dir + "/depth.npy");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("depth.npy"), std::string::npos) << r.out;
    ImageRGBA img = readNpy(dir + "/img.npy");
    NpyArray depth = readNpyArray(dir + "/depth.npy");
    ASSERT_EQ(depth.height, 64);
    ASSERT_EQ(depth.width, 96);
    ASSERT_EQ(depth.channels, 2);
    size_t covered = 0;
    for (size_t p = 0; p < 96 * 64; ++p) {
      const float d = depth.values[p * 2], t = depth.values[p * 2 + 1];
      ASSERT_NEAR(t, 1 - img.pixels[p * 4 + 3], 1e-6f) << backend << " pixel " << p;
      if (t > 0.999f) continue;
      ++covered;
      ASSERT_GE(d / (1 - t), z_min * 0.999f) << backend << " pixel " << p;
      ASSERT_LE(d / (1 - t), z_max * 1.001f) << backend << " pixel " << p;
    }
    EXPECT_GT(covered, 500u) << backend;
  }
  CliRun bad = cli("render " + ply + " -o " + dir + "/b.png --save-depth " + dir + "/depth.exr");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("--save-depth " + dir + "/depth.exr: expected a .npy path"), std::string::npos)
      << bad.out;
  EXPECT_FALSE(fs::exists(dir + "/b.png"));
}

// bench --save-scene bakes each object's transform into one world-space file; rendering that file must give
// the image the renderer makes from the scene with its transforms (applied per object at render time). The
// second object is rotated and scaled, with SH degree 1, so covariances and SH coefficients are rotated.
TEST(Cli, BenchSavesTheSceneItTimesWithItsCamera) {
  std::string dir = test::tempDir("CliBenchScene");
  smallCloud(dir);
  writeText(dir + "/scene.json", R"({"objects": [{"file": "cloud.ply"},
      {"file": "cloud.ply", "transform": {"translation": [0.6, -0.2, 0.5], "rotation": [0.9238795, 0, 0.3826834, 0], "scale": 0.7}}]})");
  writeText(dir + "/cam.json", R"({"width": 80, "height": 56, "fx": 70, "fy": 70, "cx": 40, "cy": 28,
      "world_to_camera": [1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1]})");
  CliRun b = cli("bench " + dir + "/scene.json --backend cpu --frames 1 --camera " + dir +
                 "/cam.json --save-scene " + dir + "/merged.ply");
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_NE(b.out.find("80x56"), std::string::npos) << b.out;  // the camera's own size
  EXPECT_NE(b.out.find("400 gaussians in world space, SH degree 1"), std::string::npos) << b.out;
  CliRun s = cli("render " + dir + "/scene.json -o " + dir + "/s.png --backend cpu --camera " + dir +
                 "/cam.json --save-float " + dir + "/s.npy");
  CliRun m = cli("render " + dir + "/merged.ply -o " + dir + "/m.png --backend cpu --camera " + dir +
                 "/cam.json --save-float " + dir + "/m.npy");
  ASSERT_EQ(s.code, 0) << s.out;
  ASSERT_EQ(m.code, 0) << m.out;
  ImageDiff d = compareImages(readNpy(dir + "/s.npy"), readNpy(dir + "/m.npy"));
  EXPECT_GE(d.psnr, 60.0) << "max abs " << d.max_abs;
  CliRun w = cli("bench " + dir + "/scene.json --backend cpu --frames 1 --camera " + dir +
                 "/cam.json --width 40 --height 28");
  EXPECT_NE(w.out.find("40x28"), std::string::npos) << w.out;  // --width/--height scale the camera
  CliRun bad =
      cli("bench " + dir + "/scene.json --backend cpu --frames 1 --save-scene " + dir + "/merged.xyz");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("merged.xyz"), std::string::npos) << bad.out;
}

// bench --back-to-back: the last frame recorded N times in one submission, its medians in the text and the
// JSON; refused on the CPU backend and outside 1..64.
TEST(Cli, BenchBackToBackReportsTheFramesOfOneSubmission) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  std::string dir = test::tempDir("CliBenchBackToBack");
  const std::string ply = smallCloud(dir);
  CliRun b =
      cli("bench " + ply +
          " --backend vulkan --validation --frames 2 --width 64 --height 48 --back-to-back 3 --json-out " +
          dir + "/b.json");
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_NE(b.out.find("back to back (3 frames in one submission)"), std::string::npos) << b.out;
  const nlohmann::json j = readJsonFile(dir + "/b.json");
  const nlohmann::json& b2b = j.at("back_to_back");
  EXPECT_EQ(b2b.at("frames").get<int>(), 3);
  EXPECT_GT(b2b.at("raster").get<double>(), 0.0);
  EXPECT_GT(b2b.at("total_without_readback").get<double>(), b2b.at("raster").get<double>());
  CliRun cpu = cli("bench " + ply + " --backend cpu --frames 1 --back-to-back 3");
  EXPECT_EQ(cpu.code, 2);  // options that contradict: a usage error
  EXPECT_NE(cpu.out.find("--back-to-back times the Vulkan frame"), std::string::npos) << cpu.out;
  CliRun many = cli("bench " + ply + " --backend vulkan --frames 1 --back-to-back 65");
  EXPECT_NE(many.code, 0);
  EXPECT_NE(many.out.find("--back-to-back"), std::string::npos) << many.out;
}

// bench reports the device memory the renderer holds and its peak: per gaussian at least the stored arrays
// (centre 3, covariance 6, opacity 1 and, at full precision, 48 SH floats for degree 3: 232 bytes, a closed
// form), growing with the scene by at least that much per added gaussian, and a peak no lower than what is
// held.
TEST(Cli, BenchReportsDeviceMemoryPerGaussian) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  std::string dir = test::tempDir("CliBenchMemory");
  auto memory = [&](int n, const std::string& precision = "full") {
    const std::string out = dir + "/m" + std::to_string(n) + precision + ".json";
    CliRun b = cli("bench --synthetic " + std::to_string(n) + " --sh-precision " + precision +
                   " --sh-degree 3 --backend vulkan --frames 1 --width 64 --height 48 --json-out " + out);
    EXPECT_EQ(b.code, 0) << b.out;
    EXPECT_NE(b.out.find("gpu memory: "), std::string::npos) << b.out;
    return readJsonFile(out).at("gpu_memory");
  };
  const nlohmann::json small = memory(20000), large = memory(120000);
  std::printf("gpu memory: %s / %s\n", small.dump().c_str(), large.dump().c_str());
  EXPECT_EQ(large.at("gaussians").get<uint64_t>(), 120000u);
  EXPECT_GE(large.at("bytes_per_gaussian").get<double>(), 232.0);
  EXPECT_GE(large.at("peak_bytes").get<uint64_t>(), large.at("held_bytes").get<uint64_t>());
  const double grown = static_cast<double>(large.at("held_bytes").get<uint64_t>()) -
                       static_cast<double>(small.at("held_bytes").get<uint64_t>());
  EXPECT_GE(grown / 100000.0, 232.0) << "each added gaussian holds at least its stored arrays";
  EXPECT_LE(grown / 100000.0, 2048.0) << "nor more than a few of its records";
  // Half-precision SH bands (the default): 28 words a SH-3 gaussian instead of 48 floats, 80 bytes less each
  // (and a staging buffer no larger).
  const nlohmann::json half = memory(120000, "half");
  const double saved = static_cast<double>(large.at("held_bytes").get<uint64_t>()) -
                       static_cast<double>(half.at("held_bytes").get<uint64_t>());
  EXPECT_GE(saved / 120000.0, 80.0);
  EXPECT_LE(saved / 120000.0, 80.0 + 192.0);
}

// bench --tile-binning: the path the frame's binning takes, in the human lines and the JSON; every path bins
// the same pairs (the per-element checks against the CPU are
// VulkanPasses.EveryBinningPathMakesTheCpuTileLists).
TEST(Cli, BenchTileBinningPicksThePathAndSaysWhichRan) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const std::string dir = test::tempDir("CliBenchBinning");
  uint64_t pairs[2] = {0, 0};
  int k = 0;
  for (const char* path : {"per-pair", "aggregated"}) {
    const std::string out = dir + "/" + path + ".json";
    CliRun b =
        cli("bench --synthetic 5000 --backend vulkan --frames 1 --width 96 --height 64 --tile-binning " +
            std::string(path) + " --json-out " + out);
    ASSERT_EQ(b.code, 0) << b.out;
    const std::string said = std::string(path) == "per-pair" ? "per pair" : "aggregated";
    EXPECT_NE(b.out.find("tile binning: " + said), std::string::npos) << b.out;
    const nlohmann::json j = readJsonFile(out);
    EXPECT_EQ(j.at("tile_binning").get<std::string>(), said);
    pairs[k++] = j.at("tile_pairs").get<uint64_t>();
  }
  EXPECT_GT(pairs[0], 0u);
  EXPECT_EQ(pairs[0], pairs[1]);
  CliRun bad = cli("bench --synthetic 5000 --backend vulkan --frames 1 --tile-binning sideways");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("--tile-binning"), std::string::npos) << bad.out;
  // The partitioned path runs where the device has partitioned subgroups and is refused by name elsewhere.
  bool partitioned = false;
  for (const gpu::DeviceInfo& d : gpu::listDevices()) partitioned = partitioned || d.subgroup_partitioned;
  CliRun part = cli(
      "bench --synthetic 5000 --backend vulkan --frames 1 --width 96 --height 64 --tile-binning partitioned");
  if (partitioned) {
    EXPECT_EQ(part.code, 0) << part.out;
  } else {
    EXPECT_NE(part.code, 0);
    EXPECT_NE(part.out.find("VK_NV_shader_subgroup_partitioned"), std::string::npos) << part.out;
  }
}

// --raster-precision (render, animate, bench): bench says which raster blended the frame, in its lines and
// its JSON (half when asked and the device bench ran on has 16-bit floats; fp32, the default, otherwise),
// both draw the same pairs, and a precision not offered is refused by name. render writes an image with each.
TEST(Cli, RasterPrecisionPicksTheBlendAndBenchSaysWhichRan) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  SF_REQUIRE_ASSET(spz, "splats/biker.spz");
  const std::string dir = test::tempDir("CliRasterPrecision");
  uint64_t pairs[2] = {0, 0};
  int k = 0;
  for (const char* precision : {"half", "full"}) {
    const std::string out = dir + "/" + precision + ".json";
    CliRun b =
        cli("bench --synthetic 5000 --backend vulkan --frames 1 --width 96 --height 64 --raster-precision " +
            std::string(precision) + " --json-out " + out);
    ASSERT_EQ(b.code, 0) << b.out;
    const nlohmann::json j = readJsonFile(out);
    bool fp16 = false, found = false;  // the device bench ran on
    for (const gpu::DeviceInfo& d : gpu::listDevices())
      if (d.name == j.at("device").get<std::string>()) fp16 = d.shader_float16, found = true;
    ASSERT_TRUE(found) << j.at("device");
    const bool half = std::string(precision) == "half" && fp16;
    EXPECT_NE(b.out.find(half ? "raster blended in half precision" : "raster blended in fp32"),
              std::string::npos)
        << b.out;
    EXPECT_EQ(j.at("raster_precision").get<std::string>(), half ? "half" : "full");
    pairs[k++] = j.at("tile_pairs").get<uint64_t>();
    CliRun r = cli("render " + spz + " --backend vulkan --width 48 --height 32 --raster-precision " +
                   std::string(precision) + " -o " + dir + "/" + precision + ".png");
    EXPECT_EQ(r.code, 0) << r.out;
  }
  EXPECT_GT(pairs[0], 0u);
  EXPECT_EQ(pairs[0], pairs[1]);
  CliRun bad = cli("bench --synthetic 5000 --backend vulkan --frames 1 --raster-precision quarter");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("--raster-precision"), std::string::npos) << bad.out;
}

// --raster-counts (bench): the frame's raster counts its work, printed and in the JSON (blends within what it
// evaluated, evaluations within its subgroups' lanes, the batches staged within its workgroups' longest walk;
// incomplete where deep tiles are drawn in raster
// slices); where the frame draws the half raster, bench says it did not count and the JSON member is null.
TEST(Cli, BenchRasterCountsReportsWhatTheRasterDid) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const std::string dir = test::tempDir("CliRasterCounts");
  // bench --raster-counts with `extra` options: its printed output, and its JSON.
  auto bench = [&](const std::string& name, const std::string& extra) {
    const std::string out = dir + "/" + name + ".json";
    CliRun b =
        cli("bench --synthetic 5000 --backend vulkan --frames 1 --width 96 --height 64 --raster-counts " +
            extra + " --json-out " + out);
    EXPECT_EQ(b.code, 0) << b.out;
    return std::make_pair(b.out, b.code == 0 ? readJsonFile(out) : nlohmann::json());
  };
  const auto [text, j] = bench("counts", "");
  EXPECT_NE(text.find("raster counts: "), std::string::npos) << text;
  const nlohmann::json& c = j.at("raster_counts");
  ASSERT_TRUE(c.is_object()) << j.dump();
  const uint64_t entries = c.at("subgroup_entries").get<uint64_t>(),
                 evaluated = c.at("evaluated").get<uint64_t>(), blended = c.at("blended").get<uint64_t>();
  EXPECT_GT(blended, 0u);
  EXPECT_GE(evaluated, blended);
  EXPECT_GE(entries * 128u, evaluated);  // no subgroup has more than 128 lanes
  // Every workgroup (two a tile) stages at least one batch where its tile has splats; one stages the most.
  const uint64_t batches = c.at("batches").get<uint64_t>(), longest = c.at("longest_walk").get<uint64_t>();
  EXPECT_GE(longest, 1u);
  EXPECT_GE(batches, longest);
  EXPECT_LE(batches, 2u * 24u * longest);  // 96x64: 24 tiles
  EXPECT_NE(text.find(std::to_string(batches) + " batches staged by workgroups, at most " +
                      std::to_string(longest) + " by one"),
            std::string::npos)
      << text;
  EXPECT_TRUE(c.at("complete").get<bool>());
  // Tiles deeper than a raster slice are drawn by the slices, which do not count: bench says so.
  const auto [sliced_text, sj] = bench("sliced", "--raster-slice 4");
  ASSERT_GT(sj.at("raster_slices").get<int>(), 0) << sj.dump();
  EXPECT_FALSE(sj.at("raster_counts").at("complete").get<bool>()) << sj.dump();
  EXPECT_LT(sj.at("raster_counts").at("blended").get<uint64_t>(), blended);
  EXPECT_NE(sliced_text.find("raster slices not counted"), std::string::npos) << sliced_text;
  const auto [half_text, hj] = bench("half", "--raster-precision half");
  if (hj.at("raster_precision").get<std::string>() == "half") {
    EXPECT_TRUE(hj.at("raster_counts").is_null()) << hj.dump();
    EXPECT_NE(half_text.find("raster counts: not counted"), std::string::npos) << half_text;
  }
}

// bench --shader-stats: what the driver reports of the frame's compute pipelines, or, where the device does
// not report them (VK_KHR_pipeline_executable_properties), a line that says so and a null JSON member.
TEST(Cli, BenchShaderStatsReportsThePipelinesOrSaysWhyNot) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const std::string dir = test::tempDir("CliShaderStats"), out = dir + "/stats.json";
  CliRun b = cli(
      "bench --synthetic 5000 --backend vulkan --frames 1 --width 96 --height 64 --shader-stats --json-out " +
      out);
  ASSERT_EQ(b.code, 0) << b.out;
  const nlohmann::json j = readJsonFile(out);
  gpu::ContextOptions co;
  co.shader_statistics = true;
  const bool reports = gpu::Context(co).capturesShaderStatistics();
  if (!reports) {
    EXPECT_TRUE(j.at("shader_stats").is_null()) << j.dump();
    EXPECT_NE(b.out.find("shader statistics: not reported by"), std::string::npos) << b.out;
  } else {
    ASSERT_TRUE(j.at("shader_stats").is_array()) << j.dump();
    bool raster = false;
    for (const nlohmann::json& p : j.at("shader_stats"))
      if (p.at("pipeline") == "raster") raster = !p.at("values").empty();
    EXPECT_TRUE(raster) << j.dump();
    EXPECT_NE(b.out.find("  raster: "), std::string::npos) << b.out;
  }
  // Statistics never come from a bench without pipelines.
  CliRun cpu = cli("bench --synthetic 5000 --backend cpu --frames 1 --width 96 --height 64 --shader-stats");
  EXPECT_EQ(cpu.code, 2) << cpu.out;
  EXPECT_NE(cpu.out.find("--shader-stats reports the Vulkan frame's pipelines"), std::string::npos)
      << cpu.out;
}

// --raster-slice (render, animate, bench): a frame whose deepest tile holds more walks it in slices, a
// submission each, with the image of the unsplit frame; render's timing line and bench's JSON say how many.
// (Slices blend in fp32: the unsplit frame is asked for fp32 too, or its deep tiles would be blended in
// half.)
TEST(Cli, RasterSliceSplitsDeepTilesAndKeepsTheImage) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  std::string dir = test::tempDir("CliRasterSlice");
  const std::string ply = smallCloud(dir),
                    size = " --backend vulkan --validation --width 64 --height 48 --raster-precision full";
  CliRun whole = cli("render " + ply + " -o " + dir + "/whole.png --raster-slice 0 --save-float " + dir +
                     "/whole.npy" + size);
  CliRun sliced = cli("render " + ply + " -o " + dir + "/sliced.png --raster-slice 8 --save-float " + dir +
                      "/sliced.npy" + size);
  ASSERT_EQ(whole.code, 0) << whole.out;
  ASSERT_EQ(sliced.code, 0) << sliced.out;
  EXPECT_EQ(whole.out.find("slices"), std::string::npos) << whole.out;
  EXPECT_NE(sliced.out.find("the raster's deep tiles in "), std::string::npos) << sliced.out;
  EXPECT_EQ(readNpy(dir + "/whole.npy").pixels, readNpy(dir + "/sliced.npy").pixels);
  CliRun b = cli("bench " + ply + " --frames 1 --raster-slice 8 --json-out " + dir + "/b.json" + size);
  ASSERT_EQ(b.code, 0) << b.out;
  const nlohmann::json j = readJsonFile(dir + "/b.json");
  EXPECT_EQ(j.at("raster_slice").get<int>(), 8);
  const uint64_t longest = j.at("longest_tile").get<uint64_t>();
  EXPECT_GT(longest, 8u);
  EXPECT_EQ(j.at("raster_slices").get<uint64_t>(), (longest + 7) / 8);
  EXPECT_EQ(j.at("submissions").get<uint64_t>(), (longest + 7) / 8 + 1);
  EXPECT_EQ(cli("animate " + ply + " -o " + dir + "/f_%02d.png --raster-slice -3").code, 2);
}

// `soak` with its default inputs (captures, the skinned model, a character made from it and a hull baked from
// it, hit and healed): the JSON report's samples follow the schedule (the first input always there, the
// size alternating), the GPU memory never passes its half-way high-water mark, the plot is written, and
// --max-drift decides the exit code from the slopes the report gives.
TEST(Cli, SoakReportsFlatMemoryWithItsCurves) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  const std::string dir = test::tempDir("CliSoak");
  // A short warm-up (every input at once: the frames that cost the most here) and then each input's period.
  const CliRun r = cli("soak --assets " + test::assetsDir() +
                       " --backend vulkan --frames 28 --warmup 6 --width 64 --height 48 --resize-every 12 "
                       "--sample-every 4 --json-out " +
                       dir + "/soak.json --plot " + dir + "/soak.png --max-drift 0.01");
  EXPECT_NE(r.out.find("a hull of"), std::string::npos) << r.out;
  ASSERT_TRUE(std::filesystem::exists(dir + "/soak.json")) << r.out;
  const nlohmann::json j = readJsonFile(dir + "/soak.json");
  // --max-drift fails the run (exit 1, the report still written) exactly when a slope passes it.
  const double worst = std::max(std::abs(j.at("gpu_slope_bytes_per_kframe").get<double>()),
                                std::abs(j.at("rss_slope_bytes_per_kframe").get<double>()));
  ASSERT_EQ(r.code, worst > 0.01e6 ? 1 : 0) << r.out;
  if (r.code == 1) {
    EXPECT_NE(r.out.find("more than --max-drift 0.01"), std::string::npos) << r.out;
  }
  EXPECT_EQ(j.at("frames").get<int>(), 28);
  EXPECT_EQ(j.at("inputs").size(), 5u);
  const nlohmann::json& samples = j.at("samples");
  ASSERT_EQ(samples.size(), 8u);  // frames 0, 4, ..., 24 and the last, 27
  size_t most = 0;
  for (const nlohmann::json& s : samples) {
    const int f = s.at("frame").get<int>();
    EXPECT_EQ(s.at("width").get<int>(), (f / 12) % 2 ? 48 : 64) << f;
    EXPECT_GE(s.at("objects").get<size_t>(), 1u);
    most = std::max(most, s.at("objects").get<size_t>());
  }
  EXPECT_GE(most, 3u);  // inputs came and went
  EXPECT_EQ(j.at("gpu_peak_bytes").get<uint64_t>(), j.at("gpu_peak_at_half_bytes").get<uint64_t>());
  EXPECT_EQ(j.at("validation_errors").get<int>(), 0);
  EXPECT_TRUE(std::filesystem::exists(dir + "/soak.png"));
  const CliRun bad = cli("soak --frames 1");
  EXPECT_EQ(bad.code, 2) << bad.out;
}

// A lost device in `render` (injected): exit 1, the message says what was lost and where, and no image is
// written.
TEST(Cli, RenderReportsALostDeviceAndWritesNothing) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const std::string dir = test::tempDir("CliDeviceLost");
  const std::string ply = smallCloud(dir);
  setenv("SPLATFORGE_FAULT_DEVICE_LOST", "1", 1);
  const CliRun r = cli("render " + ply + " --backend vulkan --width 64 --height 48 -o " + dir + "/out.png");
  unsetenv("SPLATFORGE_FAULT_DEVICE_LOST");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("splatforge render: error:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("VK_ERROR_DEVICE_LOST"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/out.png"));
}

// --blend-space: linear differs from display where splats overlap, the scene JSON's "blend_space" gives the
// same image as the flag, the flag overrides the scene, and a bad value is a usage error.
TEST(Cli, BlendSpaceFromTheFlagOrTheScene) {
  const std::string dir = test::tempDir("CliBlendSpace");
  const std::string ply = smallCloud(dir);
  writeText(dir + "/scene.json", R"({"objects": [{"file": ")" + fs::path(ply).filename().string() +
                                     R"("}], "blend_space": "linear"})");
  const std::string common = " --backend cpu --width 96 --height 64 --bg 0.2,0.4,0.6 -o " + dir;
  ASSERT_EQ(cli("render " + ply + common + "/display.png").code, 0);
  ASSERT_EQ(cli("render " + ply + " --blend-space linear" + common + "/linear.png").code, 0);
  ASSERT_EQ(cli("render " + dir + "/scene.json" + common + "/scene.png").code, 0);
  ASSERT_EQ(cli("render " + dir + "/scene.json --blend-space display" + common + "/scene_display.png").code,
            0);
  const ImageRGBA display = readPng(dir + "/display.png"), linear = readPng(dir + "/linear.png");
  EXPECT_LT(compareImages(display, linear).psnr, 50.0) << "the blend space changed nothing";
  EXPECT_EQ(readPng(dir + "/scene.png").pixels, linear.pixels);
  EXPECT_EQ(readPng(dir + "/scene_display.png").pixels, display.pixels);
  const CliRun bad = cli("render " + ply + " --blend-space gamma" + common + "/bad.png");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--blend-space"), std::string::npos) << bad.out;
}

TEST(Cli, RenderFailuresNameTheProblem) {
  std::string dir = test::tempDir("CliRenderFailures");
  std::string ply = smallCloud(dir);
  writeText(dir + "/broken.json", "{\"width\": 64, ");
  CliRun a = cli("render " + ply + " -o " + dir + "/a.png --camera " + dir + "/broken.json");
  EXPECT_EQ(a.code, 1);
  EXPECT_NE(a.out.find("broken.json: byte"), std::string::npos) << a.out;
  // Camera looking away from every gaussian.
  writeText(dir + "/behind.json",
            R"({"eye": [0, 0, 0], "target": [0, 0, -1], "up": [0, -1, 0], "fov_y_deg": 50,
      "width": 64, "height": 48})");
  CliRun b = cli("render " + ply + " -o " + dir + "/b.png --camera " + dir + "/behind.json");
  EXPECT_EQ(b.code, 1);
  EXPECT_NE(b.out.find("no gaussian is visible"), std::string::npos) << b.out;
  EXPECT_FALSE(fs::exists(dir + "/b.png"));
  CliRun c = cli("render " + ply + " -o " + dir + "/c.png --bg 2,0,0");
  EXPECT_EQ(c.code, 2);  // a bad option value: a usage error
  EXPECT_NE(c.out.find("--bg"), std::string::npos) << c.out;
  CliRun d = cli("render " + ply + " -o " + dir + "/d.png --backend metal");
  EXPECT_NE(d.code, 0);
  EXPECT_NE(d.out.find("metal"), std::string::npos) << d.out;
  if (gpu::vulkanAvailable()) {
    CliRun dev = cli("render " + ply + " -o " + dir + "/d.png --backend vulkan --device no-such-gpu");
    EXPECT_EQ(dev.code, 1);
    EXPECT_NE(dev.out.find("Vulkan device 'no-such-gpu' not found"), std::string::npos) << dev.out;
  }
  CliRun e = cli("render " + ply + " -o " + dir + "/no/such/dir/e.png");
  EXPECT_EQ(e.code, 1);
  EXPECT_NE(e.out.find("does not exist"), std::string::npos) << e.out;
  writeText(dir + "/scene.json", R"({"objects": [{"file": "cloud.ply", "transform": [1, 2]}]})");
  CliRun f = cli("render " + dir + "/scene.json -o " + dir + "/f.png");
  EXPECT_EQ(f.code, 1);
  EXPECT_NE(f.out.find("objects[0].transform"), std::string::npos) << f.out;
}

TEST(Cli, VulkanAndCpuBackendsWriteTheSameImage) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  std::string dir = test::tempDir("CliBackends");
  std::string ply = smallCloud(dir);
  CliRun a = cli("render " + ply + " -o " + dir +
                 "/cpu.png --backend cpu --width 96 --height 64 --save-float " + dir + "/cpu.npy");
  CliRun b =
      cli("render " + ply + " -o " + dir +
          "/gpu.png --backend vulkan --validation --width 96 --height 64 --save-float " + dir + "/gpu.npy");
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_NE(b.out.find("Vulkan device"), std::string::npos) << b.out;
  ImageDiff d = compareImages(readNpy(dir + "/cpu.npy"), readNpy(dir + "/gpu.npy"));
  EXPECT_GE(d.psnr, 45.0) << "max abs " << d.max_abs;
}

// `splatforge devices` against vulkaninfo (vulkan-tools), an independent reader of the same driver stack.
// Its output is printed so that the test log says which driver and layers the suite ran with.
TEST(Cli, DevicesNamesTheDriverAsVulkaninfoDoes) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  CliRun r = cli("devices");
  ASSERT_EQ(r.code, 0) << r.out;
  std::printf("%s", r.out.c_str());
  std::string summary;
  FILE* p = popen("vulkaninfo --summary 2>/dev/null", "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) summary.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << "vulkaninfo --summary failed (Debian: vulkan-tools)";
  int drivers = 0;
  for (const char* key : {"driverName", "driverInfo", "deviceName"}) {
    for (size_t at = summary.find(key); at != std::string::npos; at = summary.find(key, at + 1)) {
      const size_t eq = summary.find("= ", at), eol = summary.find('\n', at);
      ASSERT_NE(eq, std::string::npos);
      const std::string value = summary.substr(eq + 2, eol - eq - 2);
      EXPECT_NE(r.out.find(value), std::string::npos) << key << " '" << value << "' missing from:\n" << r.out;
      drivers += std::string(key) == "driverName";
    }
  }
  EXPECT_GE(drivers, 1) << summary;
  EXPECT_NE(r.out.find("Vulkan loader 1."), std::string::npos) << r.out;
  CliRun j = cli("devices --json");
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_NE(j.out.find("\"driver_info\": \""), std::string::npos) << j.out;
}

// A scene object that cannot be loaded fails the command (a pipeline must notice), naming the object and
// the file; --keep-going draws the placeholder instead, with a warning.
TEST(Cli, SceneWithMissingObjectFailsUnlessKeepGoing) {
  std::string dir = test::tempDir("CliScenePlaceholder");
  smallCloud(dir);
  writeText(dir + "/scene.json", R"({"objects": [{"file": "cloud.ply"}, {"name": "lost", "file": "lost.spz",
      "transform": {"translation": [0, 0, 4]}}]})");
  CliRun fails = cli("render " + dir + "/scene.json -o " + dir + "/t.png --width 64 --height 48");
  EXPECT_EQ(fails.code, 1) << fails.out;
  EXPECT_NE(fails.out.find("lost.spz"), std::string::npos) << fails.out;
  EXPECT_FALSE(fs::exists(dir + "/t.png"));
  CliRun r = cli("render " + dir + "/scene.json -o " + dir + "/s.png --width 64 --height 48 --keep-going");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: objects[1] (lost)"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir + "/s.png"));
}

TEST(Cli, DemoWritesPng) {
  std::string dir = test::tempDir("CliDemo");
  CliRun r = cli("demo -o " + dir + "/demo.png --width 160 --height 90");
  EXPECT_EQ(r.code, 0) << r.out;
  ImageRGBA img = readPng(dir + "/demo.png");
  EXPECT_EQ(img.width, 160);
}

// Untrusted input on the command line: the load limits as flags, the non-finite policy with --strict,
// JSON output that always parses, and a cloud that cannot be seen for want of opacity blamed on that.
TEST(Cli, LoadLimitsAndTheNonFinitePolicy) {
  const std::string dir = test::tempDir("CliUntrusted");
  const std::string ply = smallCloud(dir);
  CliRun r = cli("info " + ply + " --max-gaussians 50");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(
      r.out.find(ply +
                 ": declares 200 gaussians, more than the load limit of 50 (raise it with --max-gaussians)"),
      std::string::npos)
      << r.out;
  r = cli("--max-memory 4k render " + ply + " -o " + dir + "/x.png --backend cpu");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("exceeds the load memory limit of 4.0 KiB (raise it with --max-memory)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(cli("info " + ply + " --max-memory lots").code, 2);

  // One NaN colour and one infinite position, in an ASCII PLY.
  std::string text = "ply\nformat ascii 1.0\nelement vertex 4\n";
  for (const char* p : {"x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity", "scale_0", "scale_1",
                        "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"})
    text += std::string("property float ") + p + "\n";
  text +=
      "end_header\n0 0 4 0.1 0.2 0.3 2 -3 -3 -3 1 0 0 0\n0 0 4 nan 0.2 0.3 2 -3 -3 -3 1 0 0 0\n"
      "inf 0 4 0.1 0.2 0.3 2 -3 -3 -3 1 0 0 0\n0.1 0 4 0.1 0.2 0.3 2 -3 -3 -3 1 0 0 0\n";
  writeText(dir + "/bad.ply", text);
  r = cli("info --json " + dir + "/bad.ply");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: " + dir +
                       "/bad.ply: 2 of 4 gaussians hold non-finite values (NaN or infinity; first: row 1, "
                       "sh[0] (colour 0)); dropped them"),
            std::string::npos)
      << r.out;
  const std::string json = r.out.substr(r.out.find('{'));
  nlohmann::json j;
  ASSERT_NO_THROW(j = parseJsonText(json, "info output")) << json;
  EXPECT_EQ(j["count"], 2);
  EXPECT_EQ(j["dropped_non_finite"], 2);
  r = cli("info --strict " + dir + "/bad.ply");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("refused (--strict)"), std::string::npos) << r.out;
  r = cli("convert " + dir + "/bad.ply " + dir + "/bad.spz");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(loadSplats(dir + "/bad.spz").cloud.size(), 2u);
  r = cli("convert --strict " + dir + "/bad.ply " + dir + "/strict.spz");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/strict.spz"));
  // A scene object holding non-finite values: a warning naming the object, or with --strict the scene and
  // object.
  writeText(dir + "/scene.json",
            R"({"objects": [{"file": "cloud.ply"}, {"name": "odd", "file": "bad.ply"}]})");
  r = cli("render " + dir + "/scene.json -o " + dir + "/s.png --backend cpu --width 32 --height 24");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(
      r.out.find("warning: objects[1] (odd): " + dir + "/bad.ply: 2 of 4 gaussians hold non-finite values"),
      std::string::npos)
      << r.out;
  r = cli("render " + dir + "/scene.json -o " + dir + "/s.png --backend cpu --width 32 --height 24 --strict");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(dir + "/scene.json: objects[1] (odd): " + dir + "/bad.ply: 2 of 4 gaussians"),
            std::string::npos)
      << r.out;

  // Every opacity logit -inf: transparent, not "check the camera".
  std::string clear =
      text.substr(0, text.find("end_header\n") + 11) + "0 0 4 0.1 0.2 0.3 -inf -3 -3 -3 1 0 0 0\n";
  clear.replace(clear.find("element vertex 4"), 16, "element vertex 1");
  writeText(dir + "/clear.ply", clear);
  r = cli("render " + dir + "/clear.ply -o " + dir + "/c.png --backend cpu --width 32 --height 24");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("every one of the 1 gaussians is fully transparent"), std::string::npos) << r.out;
}

TEST(Cli, ScenePathsOutsideTheSceneNeedTheFlag) {
  const std::string dir = test::tempDir("CliOutside");
  const std::string ply = smallCloud(dir);
  fs::create_directories(dir + "/scenes");
  writeText(dir + "/scenes/scene.json", R"({"objects": [{"file": "../cloud.ply"}]})");
  CliRun r =
      cli("render " + dir + "/scenes/scene.json -o " + dir + "/x.png --backend cpu --width 32 --height 24");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("leads outside the scene's directory"), std::string::npos) << r.out;
  r = cli("render " + dir + "/scenes/scene.json -o " + dir +
          "/x.png --backend cpu --width 32 --height 24 --allow-outside-paths");
  EXPECT_EQ(r.code, 0) << r.out;
}

}  // namespace
}  // namespace sf
